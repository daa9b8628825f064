/* The payload codec's fields and shared records (dsm/msg_field.h): the
 * writer and reader of 64-bit fields, runs and ranges, and the runs list
 * senders fill (dsm/msg.h). */
#include "dsm/msg_field.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dsm/wire.h"
#include "util/alloc.h"

/* ------------------------------------------------------------------------
 * Writing.  A message is written straight into the frame; a field out of
 * range marks the writer bad and the frame is taken back at the end.
 * ---------------------------------------------------------------------- */

void orion__mw_begin(orion__mw *e, orion_buf *b, int type) {
  e->b = b;
  e->bad = 0;
  e->sealed = 0;
  e->start = orion_wire_begin(b, type);
}

int orion__mw_end(orion__mw *e) {
  if (e->b->oom)
    return ORION_ENOMEM;
  if (e->bad) {
    e->b->len = e->start;
    return ORION_EINVAL;
  }
  return e->sealed ? orion_wire_end_sealed(e->b, e->start)
                   : orion_wire_end(e->b, e->start);
}

void orion__mw_need(orion__mw *e, int cond) {
  if (!cond)
    e->bad = 1;
}

void orion__mw_u64(orion__mw *e, uint64_t v) { orion_buf_u64(e->b, v); }
void orion__mw_i64(orion__mw *e, int64_t v) {
  orion_buf_u64(e->b, (uint64_t)v);
}
void orion__mw_flag(orion__mw *e, int v) { orion_buf_u64(e->b, v != 0); }

void orion__mw_f64(orion__mw *e, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  orion_buf_u64(e->b, u);
}

void orion__mw_bytes(orion__mw *e, const void *p, size_t n) {
  orion__mw_need(e, p != NULL || n == 0);
  orion_buf_u64(e->b, (uint64_t)n);
  if (p != NULL && n > 0)
    orion_buf_append(e->b, p, n);
}

/* A list's count; false (e bad) when it cannot be written. */
int orion__mw_count(orion__mw *e, const void *list, int64_t n) {
  orion__mw_need(e, n >= 0 && (list != NULL || n == 0));
  if (e->bad)
    return 0;
  orion__mw_u64(e, (uint64_t)n);
  return 1;
}

/* ------------------------------------------------------------------------
 * Reading.  The first failure sticks: later reads return zeros, and the
 * decoder checks d->rc before it allocates or returns.
 * ---------------------------------------------------------------------- */

void orion__mr_init(orion__mr *d, const void *p, size_t n, const char *msg,
                    orion_error *err) {
  orion_reader_init(&d->r, p, n);
  d->msg = msg;
  d->err = err;
  d->rc = 0;
}

void orion__mr_fail(orion__mr *d, int code, const char *fmt, ...) {
  char what[512];
  va_list ap;
  if (d->rc != 0)
    return;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  d->rc = orion_error_set(d->err, code, "%s payload: %s", d->msg, what);
  d->r.left = 0;
}

uint64_t orion__mr_u64(orion__mr *d, const char *field) {
  uint64_t v = 0;
  if (d->rc != 0)
    return 0;
  if (orion_reader_u64(&d->r, &v) != 0) {
    orion__mr_fail(d, ORION_ETRUNC, "too short: it ends inside the %s", field);
    return 0;
  }
  return v;
}

int64_t orion__mr_i64(orion__mr *d, const char *field) {
  return (int64_t)orion__mr_u64(d, field);
}

double orion__mr_f64(orion__mr *d, const char *field) {
  uint64_t u = orion__mr_u64(d, field);
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

int orion__mr_flag(orion__mr *d, const char *field) {
  uint64_t v = orion__mr_u64(d, field);
  if (v > 1)
    orion__mr_fail(d, ORION_EPARSE, "the %s is %" PRIu64 ", not 0 or 1", field,
                   v);
  return v == 1;
}

/* An integer that must lie in [lo, hi]. */
int64_t orion__mr_in(orion__mr *d, const char *field, int64_t lo, int64_t hi,
                     int code) {
  int64_t v = orion__mr_i64(d, field);
  if (v < lo || v > hi) {
    orion__mr_fail(d, code,
                   "the %s %" PRId64 " is outside %" PRId64 "..%" PRId64, field,
                   v, lo, hi);
    return 0;
  }
  return v;
}

/* Points *n bytes at the returned pointer (NULL when none or failed). */
const char *orion__mr_bytes(orion__mr *d, const char *field, size_t *n) {
  uint64_t len = orion__mr_u64(d, field);
  const char *p = NULL;
  *n = 0;
  if (d->rc != 0)
    return NULL;
  if (len > d->r.left) {
    orion__mr_fail(d, ORION_ETRUNC,
                   "the %s declares %" PRIu64 " bytes, %zu are left", field,
                   len, d->r.left);
    return NULL;
  }
  orion_reader_bytes(&d->r, (size_t)len, &p); /* in bounds: checked above */
  *n = (size_t)len;
  return len > 0 ? p : NULL;
}

/* A count of items taking at least `unit` bytes each. */
int64_t orion__mr_count(orion__mr *d, const char *field, size_t unit) {
  uint64_t n = orion__mr_u64(d, field);
  if (d->rc != 0)
    return 0;
  if (n > d->r.left / unit) {
    orion__mr_fail(d, ORION_ETRUNC,
                   "%" PRIu64 " %ss need at least %zu bytes each, %zu are left",
                   n, field, unit, d->r.left);
    return 0;
  }
  return (int64_t)n;
}

/* Reads a count (items of at least `unit` bytes) and allocates that many
 * zeroed records of `size` bytes (NULL for none or on failure). */
void *orion__mr_list(orion__mr *d, const char *field, size_t unit, size_t size,
                     int64_t *n) {
  void *v;
  *n = orion__mr_count(d, field, unit);
  if (d->rc != 0 || *n == 0) {
    *n = 0;
    return NULL;
  }
  v = orion_calloc((size_t)*n, size);
  if (v == NULL) {
    orion__mr_fail(d, ORION_ENOMEM, "out of memory for %" PRId64 " %ss", *n,
                   field);
    *n = 0;
  }
  return v;
}

int orion__mr_end(orion__mr *d) {
  if (d->rc == 0 && d->r.left != 0)
    orion__mr_fail(d, ORION_EPARSE, "%zu unexpected trailing bytes", d->r.left);
  return d->rc;
}

/* Releases a decoder's list (the structs hold them as const views). */
void orion__msg_drop(const void *p) { orion_free((void *)p); }

/* ------------------------------------------------------------------------
 * Runs and ranges.
 * ---------------------------------------------------------------------- */

#define RUN_MIN 32u   /* i64 array, i64 first, i64 count, u64 length */
#define RANGE_MIN 24u /* i64 array, i64 first, i64 count */

/* Whether the ORION_MSG_ZERO_GAP bytes at p are all zero. */
static int zero_gap(const unsigned char *p) {
  uint64_t w[ORION_MSG_ZERO_GAP / 8], any = 0;
  size_t i;
  memcpy(w, p, sizeof w);
  for (i = 0; i < ORION_MSG_ZERO_GAP / 8; i++)
    any |= w[i];
  return any == 0;
}

/* Writes run r as one or more runs: cut at every stretch of zero gaps
 * (ORION_MSG_ZERO_GAP bytes, aligned from the run's start), each piece
 * carrying the bytes up to its first zero gap (the receiver zeroes the
 * rest of its count).  Returns the number of runs written. */
static int64_t put_run(orion__mw *e, const orion_msg_run *r) {
  const unsigned char *p = (const unsigned char *)r->data;
  size_t esz = r->esz, n = r->len, gap = ORION_MSG_ZERO_GAP, at = 0, nwrit;
  int64_t pieces = 0;
  if (esz == 0 || r->count <= 0 || n != (size_t)r->count * esz ||
      gap % esz != 0 || n < 2 * gap || p == NULL) {
    orion__mw_i64(e, r->array);
    orion__mw_i64(e, r->first);
    orion__mw_i64(e, r->count);
    orion__mw_bytes(e, r->data, r->len);
    return 1;
  }
  while (at < n) {
    size_t end = at, next;
    /* [at, end): non-zero gaps (a last partial gap counts as one). */
    while (end < n && (end + gap > n || !zero_gap(p + end)))
      end = end + gap < n ? end + gap : n;
    /* [end, next): zero gaps, left out. */
    next = end;
    while (next + gap <= n && zero_gap(p + next))
      next += gap;
    if (next + gap > n && next < n) {
      size_t t = next; /* a zero tail shorter than a gap goes too */
      while (t < n && p[t] == 0)
        t++;
      if (t == n)
        next = n;
    }
    nwrit = end - at;
    orion__mw_i64(e, r->array);
    orion__mw_i64(e, r->first + (int64_t)(at / esz));
    orion__mw_i64(e, (int64_t)((next - at) / esz));
    orion__mw_bytes(e, p + at, nwrit);
    pieces++;
    at = next;
  }
  return pieces;
}

void orion__mw_runs(orion__mw *e, const orion_msg_run *runs, int64_t n) {
  int64_t k, written = 0;
  size_t at;
  if (!orion__mw_count(e, runs, n))
    return;
  at = e->b->len - 8; /* the count, rewritten below when runs were cut */
  for (k = 0; k < n; k++) {
    orion__mw_need(e, runs[k].first >= 0 && runs[k].count >= 0);
    written += put_run(e, &runs[k]);
  }
  if (written != n && !e->b->oom) {
    int i;
    for (i = 0; i < 8; i++)
      ((unsigned char *)e->b->data)[at + i] =
          (unsigned char)((uint64_t)written >> (8 * i));
  }
}

void orion__mw_ranges(orion__mw *e, const orion_msg_range *r, int64_t n) {
  int64_t k;
  if (!orion__mw_count(e, r, n))
    return;
  for (k = 0; k < n; k++) {
    orion__mw_need(e, r[k].first >= 0 && r[k].count >= 0);
    orion__mw_i64(e, r[k].array);
    orion__mw_i64(e, r[k].first);
    orion__mw_i64(e, r[k].count);
  }
}

void orion__mw_moves(orion__mw *e, const orion_msg_move *v, int64_t n) {
  int64_t k;
  if (!orion__mw_count(e, v, n))
    return;
  for (k = 0; k < n; k++) {
    orion__mw_need(e, v[k].first >= 0 && v[k].count >= 0 && v[k].peer >= 0);
    orion__mw_i64(e, v[k].array);
    orion__mw_i64(e, v[k].first);
    orion__mw_i64(e, v[k].count);
    orion__mw_i64(e, v[k].peer);
    orion__mw_i64(e, v[k].block);
  }
}

static void check_range(orion__mr *d, const char *what, int64_t first,
                        int64_t count) {
  if (first < 0 || count < 0)
    orion__mr_fail(d, ORION_EPARSE,
                   "a %s has first %" PRId64 " and count %" PRId64, what, first,
                   count);
}

orion_msg_run *orion__mr_runs(orion__mr *d, int64_t *n) {
  orion_msg_run *v = orion__mr_list(d, "run", RUN_MIN, sizeof *v, n);
  int64_t k;
  for (k = 0; k < *n && d->rc == 0; k++) {
    v[k].array = orion__mr_i64(d, "run's array");
    v[k].first = orion__mr_i64(d, "run's first element");
    v[k].count = orion__mr_i64(d, "run's count");
    check_range(d, "run", v[k].first, v[k].count);
    v[k].data = orion__mr_bytes(d, "run's data", &v[k].len);
    v[k].esz = 0; /* may be short: passed on as it is */
  }
  return v;
}

orion_msg_range *orion__mr_ranges(orion__mr *d, const char *field, int64_t *n) {
  orion_msg_range *v = orion__mr_list(d, field, RANGE_MIN, sizeof *v, n);
  int64_t k;
  for (k = 0; k < *n && d->rc == 0; k++) {
    v[k].array = orion__mr_i64(d, field);
    v[k].first = orion__mr_i64(d, field);
    v[k].count = orion__mr_i64(d, field);
    check_range(d, field, v[k].first, v[k].count);
  }
  return v;
}

orion_msg_move *orion__mr_moves(orion__mr *d, const char *field, int64_t *n) {
  orion_msg_move *v = orion__mr_list(d, field, 5 * 8, sizeof *v, n);
  int64_t k;
  for (k = 0; k < *n && d->rc == 0; k++) {
    v[k].array = orion__mr_i64(d, field);
    v[k].first = orion__mr_i64(d, field);
    v[k].count = orion__mr_i64(d, field);
    v[k].peer = orion__mr_i64(d, field);
    v[k].block = orion__mr_i64(d, field);
    check_range(d, field, v[k].first, v[k].count);
    if (v[k].peer < 0)
      orion__mr_fail(d, ORION_EPARSE, "a %s names executor %" PRId64, field,
                     v[k].peer);
  }
  return v;
}

int orion_msg_runvec_push(orion_msg_runvec *v, int64_t array, int64_t first,
                          int64_t count, const void *data, size_t len) {
  orion_msg_run *r;
  if (v->n == v->cap) {
    int64_t cap = v->cap > 0 ? 2 * v->cap : 16;
    orion_msg_run *nv = orion_realloc(v->v, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    v->v = nv;
    v->cap = cap;
  }
  r = &v->v[v->n++];
  r->array = array;
  r->first = first;
  r->count = count;
  r->data = data;
  r->len = len;
  /* Senders push runs of their arrays' memory, all count elements. */
  r->esz = count > 0 && len % (size_t)count == 0 ? len / (size_t)count : 0;
  return 0;
}

void orion_msg_runvec_free(orion_msg_runvec *v) {
  orion_free(v->v);
  memset(v, 0, sizeof *v);
}
