/* The payloads of the runtime's frames between the driver and executors.
 * dsm/wire.h frames them; this header defines their layouts and the small
 * readers and writers both sides use.  Every field is a little-endian u64
 * (integers as two's complement, doubles as their IEEE bits); `str` is a
 * u64 length then that many bytes; `bytes` likewise.
 *
 * LOAD_BODY (driver -> executor), before a loop's blocks:
 *   i64 loop     the loop id math.random is seeded with
 *   str blob     the captured body (lua/capture.h)
 *   i64 iter     the iterated array's id
 *   u64 narrays, then per array:
 *     i64 id, u64 type, u64 sparse, u64 ndims, i64 dims[ndims]
 *   u64 naccs, then per accumulator: i64 id, u64 op
 *   u64 nbufs, then per buffer:
 *     i64 id, str name, i64 target, u64 op, str apply_blob, i64 flush
 *   i64 run      this loop run's number (peers' frames carry it)
 *   u64 chash    the compiled body's hash (0: interpret the body)
 *   str csrc     its C source, or empty when this executor was sent it
 *                before (it keeps the bodies it built by hash)
 *   str cflags   the mode flags to compile it with
 *   u64 required 1: tier "c", a failure to compile is the loop's error
 *   u64 nslots, then per slot (util/cbody.h): u64 kind, i64 id, u64 isint,
 *     i64 ival, f64 fval
 *   u64 nshards, then per array sharded in this run (dense, server-held,
 *     listed among the arrays above): i64 id, u64 flags
 *     (ORION_SHARD_*), u64 nruns, then runs as in RUN_BLOCK: the rows of
 *     the receiver's own chunks that its copy lacks
 * RUN_BLOCK (driver -> executor):
 *   i64 block, u64 seed, i64 nblocks
 *   u64 nsegs, then i64 lo, i64 hi per segment (element positions of the
 *     iterated array: of the block's own elements when it is sparse, of the
 *     whole array when it is dense)
 *   u64 has_elems; when 1: u64 n, bytes keys (n * ndims i64), bytes values
 *     (the sparse iterated block's elements; otherwise the executor keeps
 *     the copy it was sent before)
 *   u64 nruns, then per run: i64 array, i64 first, i64 count, bytes data
 *     (elements [first, first + count) of a dense array, row-major)
 *   u64 nwatch, then per range: i64 array, i64 first, i64 count (the
 *     elements the block may write directly: compared after the block)
 *   u64 nkeep, then per range: i64 array, i64 first, i64 count (rows of
 *     a deferred array sent with this block, which the executor keeps
 *     and returns with its LOOP_DONE)
 * BLOCK_DONE (executor -> driver):
 *   i64 block, f64 seconds
 *   u64 has_values; when 1: bytes values (the sparse block's values, which
 *     the body changed)
 *   u64 nruns, then runs as in RUN_BLOCK (the elements that changed)
 * BUFFER_FLUSH (executor -> driver, or executor -> the owning executor
 *   for a sharded target): i64 run, i64 buffer, u64 isint, then the items
 *   as lua/exec.h's orion_flush_items_put writes them: u64 n, u64 nruns,
 *   then (nruns 0) n times i64 key, u64 value bits, or nruns times i64
 *   first key, u64 count, then the n value bits
 * FLUSH_ACK (owner -> executor): i64 run; the BUFFER_FLUSH is applied.
 * FETCH (executor -> owner): i64 run, i64 array, i64 chunk_lo,
 *   i64 chunk_hi, then per chunk of [chunk_lo, chunk_hi) the u64 version
 *   the requester holds (0: none).
 * FETCH_REPLY (owner -> executor): i64 array, u64 n, then per chunk whose
 *   version differs: i64 chunk, u64 version, bytes rows.
 * PEERS (driver -> executor, once, before any loop): u64 n, then per
 *   executor str "host:port" where it listens for peers.
 * SHARD_PULL (driver -> executor, after LOOP_DONE): empty.
 * SHARD_DATA (executor -> driver): u64 nruns, then runs as in RUN_BLOCK:
 *   the elements of its shards that changed during the run.
 * LOOP_END (driver -> executor): u64 abort (1: drop pending writes)
 * LOOP_DONE (executor -> driver): u64 nacc, then per accumulator: i64 id,
 *   u64 has, u64 isint, i64 i, f64 d; then u64 bytes sent to peers and
 *   u64 buffered writes applied to own shards since the last LOOP_DONE;
 *   then u64 nruns, then runs as in RUN_BLOCK: the deferred arrays'
 *   kept ranges (RUN_BLOCK's ranges kept until LOOP_DONE), whole, as
 *   they are now
 * BODY_ERROR: dsm/wire.h's layout; its key is the failed block's id in
 *   decimal ("-1" for an error outside a block), and the message names the
 *   executor and the element and carries the traceback.
 * FORGET (driver -> executor): u64 n, then n array ids.
 * LOAD_FILE (driver -> executor): str path, i64 part, i64 nparts, then the
 *   orion_load_opts fields as i64: format, index_base, nkeys, have_dims,
 *   dims[ORION_MAX_DIMS], value_type, skip_errors, sep, header, ncols_key,
 *   key_cols[ORION_MAX_DIMS], value_col.  The executor reads the whole
 *   (decompressed) file and parses the lines starting in bytes
 *   [len * part / nparts, len * (part + 1) / nparts).
 * LOADED (executor -> driver): u64 ok; when 0: str message; when 1: the
 *   elements (array), u64 has_labels [, the labels (array)], i64 row_lo,
 *   i64 lines, i64 skipped, str first_skip, where an array is u64 type,
 *   u64 ndims, i64 dims[ndims], i64 nnz, bytes keys (nnz * ndims i64; none
 *   for a dense array), bytes values.
 */
#ifndef ORION_DSM_PROTO_H
#define ORION_DSM_PROTO_H

#include <stdint.h>
#include <string.h>

#include "util/buf.h"

/* Flags of a sharded array in LOAD_BODY. */
#define ORION_SHARD_FETCH 1   /* the body reads it: refresh at blocks */
#define ORION_SHARD_WRITTEN 2 /* buffers write it during the run */

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

static inline void orion_pw_i64(orion_buf *b, int64_t v) {
  orion_buf_u64(b, (uint64_t)v);
}

static inline void orion_pw_f64(orion_buf *b, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  orion_buf_u64(b, u);
}

static inline void orion_pw_bytes(orion_buf *b, const void *p, size_t n) {
  orion_buf_u64(b, (uint64_t)n);
  orion_buf_append(b, p, n);
}

static inline int64_t orion_pr_i64(orion_reader *r) {
  uint64_t v = 0;
  orion_reader_u64(r, &v);
  return (int64_t)v;
}

static inline double orion_pr_f64(orion_reader *r) {
  uint64_t v = 0;
  double d;
  orion_reader_u64(r, &v);
  memcpy(&d, &v, sizeof d);
  return d;
}

/* A count that must fit in what is left (each item at least `unit` bytes);
 * marks the reader bad and returns 0 when it cannot. */
static inline int64_t orion_pr_count(orion_reader *r, size_t unit) {
  int64_t n = orion_pr_i64(r);
  if (n < 0 || (unit > 0 && (uint64_t)n > r->left / unit)) {
    r->bad = 1;
    return 0;
  }
  return n;
}

/* Points *n bytes at the returned pointer (NULL with r bad on overrun). */
static inline const char *orion_pr_bytes(orion_reader *r, size_t *n) {
  const char *p = NULL;
  int64_t len = orion_pr_count(r, 1);
  *n = 0;
  if (r->bad || orion_reader_bytes(r, (size_t)len, &p) != 0)
    return NULL;
  *n = (size_t)len;
  return p;
}

#endif
