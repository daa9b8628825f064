/* What the driver and the executors agree on besides the messages
 * themselves (dsm/msg.h: one struct per payload, with its layout): how a
 * dense array is cut into version chunks and which executor owns which
 * chunks of a sharded array.
 */
#ifndef ORION_DSM_PROTO_H
#define ORION_DSM_PROTO_H

#include <stdint.h>

/* Rows per version chunk of a dense array whose rows hold row_bytes: about
 * 4 KiB, at least one row.  Driver and executors must agree on it. */
static inline int64_t orion_chunk_rows(int64_t row_bytes) {
  return row_bytes > 0 && row_bytes < 4096 ? 4096 / row_bytes : 1;
}

/* A dense array of `rows` rows and `nnz` elements of esz bytes in version
 * chunks: its elements per row, rows per chunk and number of chunks. */
static inline void orion_chunk_layout(int64_t rows, int64_t nnz, size_t esz,
                                      int64_t *row_elems, int64_t *chunk_rows,
                                      int64_t *nchunks) {
  *row_elems = rows > 0 ? nnz / rows : 0;
  *chunk_rows = orion_chunk_rows(*row_elems * (int64_t)esz);
  *nchunks = rows > 0 ? (rows + *chunk_rows - 1) / *chunk_rows : 0;
}

/* Compiled bodies an executor keeps by hash (oldest dropped first); the
 * driver sends only the hash of a body it sent an executor among its last
 * ORION_BODY_CACHE, so both must agree. */
#define ORION_BODY_CACHE 64

/* The first chunk executor e of n owns of a sharded array of nchunks
 * chunks; e owns [orion_shard_first(e), orion_shard_first(e + 1)). */
static inline int64_t orion_shard_first(int e, int n, int64_t nchunks) {
  return ((int64_t)e * nchunks + n - 1) / n;
}

#endif
