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

/* The first chunk executor e of n owns of a sharded array of nchunks
 * chunks; e owns [orion_shard_first(e), orion_shard_first(e + 1)). */
static inline int64_t orion_shard_first(int e, int n, int64_t nchunks) {
  return ((int64_t)e * nchunks + n - 1) / n;
}

#endif
