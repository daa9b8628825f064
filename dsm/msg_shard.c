/* The payload codec (dsm/msg.h), part two: the messages of sharded arrays
 * and buffered writes (BUFFER_FLUSH with its run-coded items, FLUSH_ACK,
 * FETCH, FETCH_REPLY, PEERS, SHARD_PULL, SHARD_DATA). */
#include "dsm/msg.h"

#include <inttypes.h>
#include <string.h>

#include "dsm/msg_field.h"
#include "util/alloc.h"

/* ------------------------------------------------------------------------
 * BUFFER_FLUSH and its run-coded items.
 * ---------------------------------------------------------------------- */

static void le64_put(unsigned char *p, uint64_t v) {
  int s;
  for (s = 0; s < 8; s++)
    p[s] = (unsigned char)(v >> (8 * s));
}

static uint64_t le64_get(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The next `bytes` bytes of d, whose size the caller checked. */
static const unsigned char *take(orion__mr *d, size_t bytes) {
  const char *p = NULL;
  orion_reader_bytes(&d->r, bytes, &p);
  return (const unsigned char *)p;
}

/* Whether key b continues a run ending at key a.  Only keys in
 * [0, INT64_MAX) may stand in a run, so that every run decodes. */
static int follows(int64_t a, int64_t b) {
  return a >= 0 && a < INT64_MAX - 1 && b == a + 1;
}

/* The nruns word's top bit: the values travel in 4 bytes each. */
#define NARROW_BIT ((uint64_t)1 << 63)

/* Whether value v survives 4 bytes unchanged: an integer (isint) that
 * fits an i32, a float whose double is exactly a float's (bit for bit, so
 * NaNs and doubles a float cannot hold stay 8 bytes). */
static int narrow_ok(orion_msg_value v, int isint) {
  float f;
  double back;
  if (isint)
    return v.i >= INT32_MIN && v.i <= INT32_MAX;
  f = (float)v.d;
  back = (double)f;
  return memcmp(&back, &v.d, sizeof back) == 0;
}

static uint32_t narrow_bits(orion_msg_value v, int isint) {
  float f;
  uint32_t u;
  if (isint)
    return (uint32_t)(int32_t)v.i;
  f = (float)v.d;
  memcpy(&u, &f, sizeof u);
  return u;
}

static orion_msg_value widen_bits(uint32_t u, int isint) {
  orion_msg_value v;
  float f;
  if (isint) {
    v.i = (int64_t)(int32_t)u;
    return v;
  }
  memcpy(&f, &u, sizeof f);
  v.d = (double)f;
  return v;
}

static void le32_put(unsigned char *p, uint32_t v) {
  int s;
  for (s = 0; s < 4; s++)
    p[s] = (unsigned char)(v >> (8 * s));
}

static uint32_t le32_get(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Appends items[0..n)'s values, vb (4 or 8) bytes each, staged in blocks
 * (one append per block, not per value). */
static void put_values(orion__mw *e, const orion_msg_item *items, int64_t n,
                       int vb, int isint) {
  unsigned char stage[8 * 1024];
  int64_t at, k;
  for (at = 0; at < n;) {
    int64_t m = n - at < 1024 ? n - at : 1024;
    for (k = 0; k < m; k++)
      if (vb == 4)
        le32_put(stage + 4 * k, narrow_bits(items[at + k].val, isint));
      else
        le64_put(stage + 8 * k, (uint64_t)items[at + k].val.i);
    orion_buf_append(e->b, stage, (size_t)(m * vb));
    at += m;
  }
}

static void put_items(orion__mw *e, const orion_msg_item *items, int64_t n,
                      int isint) {
  int64_t i, nruns = 0;
  int plain = 0, vb = n > 0 ? 4 : 8; /* an empty list: no flag */
  if (!orion__mw_count(e, items, n))
    return;
  for (i = 0; i < n; i++) {
    if (items[i].key < 0 || items[i].key == INT64_MAX)
      plain = 1;
    if (i == 0 || !follows(items[i - 1].key, items[i].key))
      nruns++;
    if (vb == 4 && !narrow_ok(items[i].val, isint))
      vb = 8;
  }
  if (plain || nruns * 2 >= n) { /* scattered keys: key and value each */
    orion__mw_u64(e, vb == 4 ? NARROW_BIT : 0);
    for (i = 0; i < n; i++) {
      orion__mw_i64(e, items[i].key);
      if (vb == 8)
        orion__mw_i64(e, items[i].val.i);
      else
        put_values(e, items + i, 1, 4, isint);
    }
    return;
  }
  orion__mw_u64(e, (uint64_t)nruns | (vb == 4 ? NARROW_BIT : 0));
  for (i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && follows(items[j - 1].key, items[j].key))
      j++;
    orion__mw_i64(e, items[i].key);
    orion__mw_u64(e, (uint64_t)(j - i));
    i = j;
  }
  put_values(e, items, n, vb, isint);
}

/* The items end the payload: the runs form must fill it exactly. */
static orion_msg_item *get_items(orion__mr *d, int64_t *nitems, int isint) {
  int64_t n = orion__mr_count(d, "item", 4), nruns, i, k, at = 0;
  uint64_t word;
  size_t vb = 8, plain_item;
  orion_msg_item *items;
  word = (uint64_t)orion__mr_i64(d, "number of key runs");
  *nitems = 0;
  if (d->rc != 0)
    return NULL;
  if (word & NARROW_BIT)
    vb = 4;
  nruns = (int64_t)(word & ~NARROW_BIT);
  plain_item = 8 + vb;
  if (nruns > n)
    orion__mr_fail(d, ORION_EPARSE,
                   "%" PRId64 " key runs for %" PRId64 " items", nruns, n);
  else if (nruns == 0 && (uint64_t)n > d->r.left / plain_item)
    orion__mr_fail(d, ORION_ETRUNC,
                   "%" PRId64 " items need %" PRId64 " bytes, %zu "
                   "are left",
                   n, (int64_t)plain_item * n, d->r.left);
  else if (nruns > 0 && d->r.left != (size_t)nruns * 16 + (size_t)n * vb)
    orion__mr_fail(d,
                   d->r.left < (size_t)nruns * 16 + (size_t)n * vb
                       ? ORION_ETRUNC
                       : ORION_EPARSE,
                   "%" PRId64 " items in %" PRId64 " runs need %" PRId64
                   " bytes, %zu are left",
                   n, nruns, nruns * 16 + n * (int64_t)vb, d->r.left);
  if (d->rc != 0 || n == 0)
    return NULL;
  items = orion_malloc(sizeof *items * (size_t)n);
  if (items == NULL) {
    orion__mr_fail(d, ORION_ENOMEM, "out of memory for %" PRId64 " items", n);
    return NULL;
  }
  if (nruns == 0) { /* n * plain_item bytes, checked above: one tight loop */
    const unsigned char *p = take(d, (size_t)n * plain_item);
    for (i = 0; i < n; i++) {
      const unsigned char *q = p + plain_item * (size_t)i;
      items[i].key = (int64_t)le64_get(q);
      if (vb == 8)
        items[i].val.i = (int64_t)le64_get(q + 8);
      else
        items[i].val = widen_bits(le32_get(q + 8), isint);
    }
  } else { /* the runs, then the values; their size was checked above */
    for (k = 0; k < nruns && d->rc == 0; k++) {
      int64_t first = orion__mr_i64(d, "key run");
      int64_t count = orion__mr_i64(d, "key run");
      if (first < 0 || count < 1 || count > n - at || first > INT64_MAX - count)
        orion__mr_fail(d, ORION_EPARSE,
                       "key run %" PRId64 " (first %" PRId64 ", count %" PRId64
                       ") is malformed",
                       k, first, count);
      for (i = 0; i < count && d->rc == 0; i++)
        items[at + i].key = first + i;
      at += count;
    }
    if (d->rc == 0 && at != n)
      orion__mr_fail(d, ORION_EPARSE,
                     "the key runs hold %" PRId64 " of %" PRId64 " items", at,
                     n);
    if (d->rc == 0) { /* n * vb bytes of values end the payload */
      const unsigned char *p = take(d, (size_t)n * vb);
      if (vb == 8)
        for (i = 0; i < n; i++)
          items[i].val.i = (int64_t)le64_get(p + 8 * i);
      else
        for (i = 0; i < n; i++)
          items[i].val = widen_bits(le32_get(p + 4 * i), isint);
    }
  }
  if (d->rc != 0) {
    orion_free(items);
    return NULL;
  }
  *nitems = n;
  return items;
}

int orion_msg_buffer_flush_encode(orion_buf *b,
                                  const orion_msg_buffer_flush *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_BUFFER_FLUSH);
  orion__mw_i64(&e, m->run);
  orion__mw_i64(&e, m->buffer);
  orion__mw_flag(&e, m->isint);
  orion__mw_i64(&e, m->block);
  put_items(&e, m->items, m->nitems, m->isint);
  return orion__mw_end(&e);
}

int orion_msg_buffer_flush_decode(const void *p, size_t n,
                                  orion_msg_buffer_flush *out,
                                  orion_error *err) {
  orion_msg_buffer_flush m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "BUFFER_FLUSH", err);
  m.run = orion__mr_i64(&d, "run number");
  m.buffer = orion__mr_i64(&d, "buffer id");
  m.isint = orion__mr_flag(&d, "isint flag");
  m.block = orion__mr_i64(&d, "block");
  m.items = get_items(&d, &m.nitems, m.isint);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_buffer_flush_free(out);
  return d.rc;
}

void orion_msg_buffer_flush_free(orion_msg_buffer_flush *m) {
  orion__msg_drop(m->items);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * FLUSH_ACK and SHARD_PULL.
 * ---------------------------------------------------------------------- */

int orion_msg_flush_ack_encode(orion_buf *b, const orion_msg_flush_ack *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_FLUSH_ACK);
  orion__mw_i64(&e, m->run);
  return orion__mw_end(&e);
}

int orion_msg_flush_ack_decode(const void *p, size_t n,
                               orion_msg_flush_ack *out, orion_error *err) {
  orion__mr d;
  orion__mr_init(&d, p, n, "FLUSH_ACK", err);
  out->run = orion__mr_i64(&d, "run number");
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}

int orion_msg_shard_pull_encode(orion_buf *b, const orion_msg_shard_pull *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_SHARD_PULL);
  orion__mw_flag(&e, m->keep);
  return orion__mw_end(&e);
}

int orion_msg_shard_pull_decode(const void *p, size_t n,
                                orion_msg_shard_pull *out, orion_error *err) {
  orion__mr d;
  orion__mr_init(&d, p, n, "SHARD_PULL", err);
  memset(out, 0, sizeof *out);
  out->keep = orion__mr_flag(&d, "keep");
  return orion__mr_end(&d);
}

/* ------------------------------------------------------------------------
 * FETCH and FETCH_REPLY.
 * ---------------------------------------------------------------------- */

int orion_msg_fetch_encode(orion_buf *b, const orion_msg_fetch *m) {
  orion__mw e;
  uint64_t k, nv;
  if (m->chunk_lo <= m->chunk_hi &&
      (uint64_t)m->chunk_hi - (uint64_t)m->chunk_lo > ORION_WIRE_MAX_FRAME / 8)
    return -EMSGSIZE;
  orion__mw_begin(&e, b, ORION_WIRE_FETCH);
  orion__mw_i64(&e, m->run);
  orion__mw_i64(&e, m->array);
  orion__mw_i64(&e, m->chunk_lo);
  orion__mw_i64(&e, m->chunk_hi);
  orion__mw_need(&e, m->chunk_lo <= m->chunk_hi &&
                         (m->versions != NULL || m->chunk_lo == m->chunk_hi));
  nv = e.bad ? 0 : (uint64_t)m->chunk_hi - (uint64_t)m->chunk_lo;
  for (k = 0; k < nv; k++)
    orion__mw_u64(&e, m->versions[k]);
  return orion__mw_end(&e);
}

int orion_msg_fetch_decode(const void *p, size_t n, orion_msg_fetch *out,
                           orion_error *err) {
  orion_msg_fetch m;
  uint64_t *v = NULL, nv = 0, k;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "FETCH", err);
  m.run = orion__mr_i64(&d, "run number");
  m.array = orion__mr_i64(&d, "array id");
  m.chunk_lo = orion__mr_i64(&d, "first chunk");
  m.chunk_hi = orion__mr_i64(&d, "end chunk");
  if (d.rc == 0 && m.chunk_lo > m.chunk_hi)
    orion__mr_fail(&d, ORION_EPARSE,
                   "chunks %" PRId64 "..%" PRId64 " are reversed", m.chunk_lo,
                   m.chunk_hi);
  if (d.rc == 0) {
    nv = (uint64_t)m.chunk_hi - (uint64_t)m.chunk_lo;
    if (nv > d.r.left / 8)
      orion__mr_fail(&d, ORION_ETRUNC,
                     "%" PRIu64 " chunk versions need %" PRIu64
                     " bytes, %zu are left",
                     nv, nv * 8, d.r.left);
  }
  if (d.rc == 0 && nv > 0) {
    v = orion_malloc(sizeof *v * (size_t)nv);
    if (v == NULL)
      orion__mr_fail(&d, ORION_ENOMEM, "out of memory for %" PRIu64 " versions",
                     nv);
  }
  for (k = 0; k < nv && d.rc == 0; k++)
    v[k] = orion__mr_u64(&d, "chunk version");
  m.versions = v;
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_fetch_free(out);
  return d.rc;
}

void orion_msg_fetch_free(orion_msg_fetch *m) {
  orion__msg_drop(m->versions);
  memset(m, 0, sizeof *m);
}

int orion_msg_fetch_reply_encode(orion_buf *b, const orion_msg_fetch_reply *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_FETCH_REPLY);
  orion__mw_i64(&e, m->array);
  if (orion__mw_count(&e, m->chunks, m->nchunks))
    for (k = 0; k < m->nchunks; k++) {
      orion__mw_i64(&e, m->chunks[k].chunk);
      orion__mw_u64(&e, m->chunks[k].version);
      orion__mw_i64(&e, m->chunks[k].row);
      orion__mw_bytes(&e, m->chunks[k].data, m->chunks[k].len);
    }
  orion__mw_u64(&e, m->applied);
  return orion__mw_end(&e);
}

int orion_msg_fetch_reply_decode(const void *p, size_t n,
                                 orion_msg_fetch_reply *out, orion_error *err) {
  orion_msg_fetch_reply m;
  orion_msg_chunk *v;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "FETCH_REPLY", err);
  m.array = orion__mr_i64(&d, "array id");
  v = orion__mr_list(&d, "chunk", 32, sizeof *v, &m.nchunks);
  m.chunks = v;
  for (k = 0; k < m.nchunks && d.rc == 0; k++) {
    v[k].chunk = orion__mr_i64(&d, "chunk");
    v[k].version = orion__mr_u64(&d, "chunk's version");
    v[k].row = orion__mr_i64(&d, "chunk's first row");
    v[k].data = orion__mr_bytes(&d, "chunk's rows", &v[k].len);
  }
  m.applied = orion__mr_u64(&d, "flushes applied");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_fetch_reply_free(out);
  return d.rc;
}

void orion_msg_fetch_reply_free(orion_msg_fetch_reply *m) {
  orion__msg_drop(m->chunks);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * PEERS and SHARD_DATA.
 * ---------------------------------------------------------------------- */

int orion_msg_peers_encode(orion_buf *b, const orion_msg_peers *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_PEERS);
  if (orion__mw_count(&e, m->addrs, m->n))
    for (k = 0; k < m->n; k++)
      orion__mw_bytes(&e, m->addrs[k].p, m->addrs[k].len);
  return orion__mw_end(&e);
}

int orion_msg_peers_decode(const void *p, size_t n, orion_msg_peers *out,
                           orion_error *err) {
  orion_msg_peers m;
  orion_msg_str *v;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "PEERS", err);
  v = orion__mr_list(&d, "address", 8, sizeof *v, &m.n);
  m.addrs = v;
  for (k = 0; k < m.n && d.rc == 0; k++)
    v[k].p = orion__mr_bytes(&d, "address", &v[k].len);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_peers_free(out);
  return d.rc;
}

void orion_msg_peers_free(orion_msg_peers *m) {
  orion__msg_drop(m->addrs);
  memset(m, 0, sizeof *m);
}

int orion_msg_shard_data_encode(orion_buf *b, const orion_msg_shard_data *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_SHARD_DATA);
  orion__mw_runs(&e, m->runs, m->nruns);
  orion__mw_ranges(&e, m->kept, m->nkept);
  return orion__mw_end(&e);
}

int orion_msg_shard_data_decode(const void *p, size_t n,
                                orion_msg_shard_data *out, orion_error *err) {
  orion_msg_shard_data m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "SHARD_DATA", err);
  m.runs = orion__mr_runs(&d, &m.nruns);
  m.kept = orion__mr_ranges(&d, "kept range", &m.nkept);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_shard_data_free(out);
  return d.rc;
}

void orion_msg_shard_data_free(orion_msg_shard_data *m) {
  orion__msg_drop(m->runs);
  orion__msg_drop(m->kept);
  memset(m, 0, sizeof *m);
}
