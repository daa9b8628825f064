/* What the driver and the executors agree on besides the messages
 * themselves (dsm/msg.h: one struct per payload, with its layout): how a
 * dense array is cut into version chunks and which executor owns which
 * chunks of a sharded array.
 *
 * Transitional: the field readers and writers below are what the payloads
 * were built and read with by hand before dsm/msg.h; they go once
 * lua/dist.c, drivers/executor.c, drivers/exec_load.c, lua/exec.c and
 * dsm/cluster.c use the codec.  New code uses dsm/msg.h.
 */
#ifndef ORION_DSM_PROTO_H
#define ORION_DSM_PROTO_H

#include <stdint.h>
#include <string.h>

#include "dsm/msg.h"
#include "util/buf.h"

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

/* ---- transitional: hand-written payload fields ------------------------ */

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
