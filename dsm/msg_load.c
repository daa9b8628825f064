/* The payload codec (dsm/msg.h), part three: parallel loading's messages
 * (LOAD_FILE, LOADED). */
#include "dsm/msg.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "dsm/msg_field.h"
#include "dsm/types.h"

/* ------------------------------------------------------------------------
 * LOAD_FILE.
 * ---------------------------------------------------------------------- */

int orion_msg_load_file_encode(orion_buf *b, const orion_msg_load_file *m) {
  const orion_load_opts *o = &m->opts;
  orion__mw e;
  int d;
  orion__mw_begin(&e, b, ORION_WIRE_LOAD_FILE);
  orion__mw_bytes(&e, m->path, m->path_len);
  orion__mw_i64(&e, m->part);
  orion__mw_i64(&e, m->nparts);
  orion__mw_i64(&e, o->format);
  orion__mw_i64(&e, o->index_base);
  orion__mw_i64(&e, o->nkeys);
  orion__mw_i64(&e, o->have_dims);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    orion__mw_i64(&e, o->dims[d]);
  orion__mw_i64(&e, o->value_type);
  orion__mw_i64(&e, o->skip_errors);
  orion__mw_i64(&e, o->sep);
  orion__mw_i64(&e, o->header);
  orion__mw_i64(&e, o->ncols_key);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    orion__mw_i64(&e, o->key_cols[d]);
  orion__mw_i64(&e, o->value_col);
  orion__mw_need(&e, m->digest_len == 0 ||
                         m->digest_len == ORION_MSG_LOAD_DIGEST);
  orion__mw_bytes(&e, m->digest, m->digest_len);
  orion__mw_flag(&e, m->held_only);
  return orion__mw_end(&e);
}

static int get_int(orion__mr *d, const char *field) {
  return (int)orion__mr_in(d, field, INT_MIN, INT_MAX, ORION_EPARSE);
}

int orion_msg_load_file_decode(const void *p, size_t n,
                               orion_msg_load_file *out, orion_error *err) {
  orion_msg_load_file m;
  orion_load_opts *o = &m.opts;
  orion__mr d;
  int j;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "LOAD_FILE", err);
  m.path = orion__mr_bytes(&d, "path", &m.path_len);
  m.part = orion__mr_i64(&d, "part");
  m.nparts = orion__mr_i64(&d, "number of parts");
  o->format =
      (orion_format)orion__mr_in(&d, "format", 0, INT_MAX, ORION_EPARSE);
  o->index_base = get_int(&d, "index base");
  o->nkeys = get_int(&d, "number of keys");
  o->have_dims = get_int(&d, "have_dims flag");
  for (j = 0; j < ORION_MAX_DIMS; j++)
    o->dims[j] = orion__mr_i64(&d, "dimensions");
  o->value_type =
      (orion_type)orion__mr_in(&d, "value type", 0, INT_MAX, ORION_EPARSE);
  o->skip_errors = get_int(&d, "skip_errors flag");
  o->sep =
      (char)orion__mr_in(&d, "separator", CHAR_MIN, CHAR_MAX, ORION_EPARSE);
  o->header = get_int(&d, "header flag");
  o->ncols_key = get_int(&d, "number of key columns");
  for (j = 0; j < ORION_MAX_DIMS; j++)
    o->key_cols[j] = get_int(&d, "key columns");
  o->value_col = get_int(&d, "value column");
  m.digest = orion__mr_bytes(&d, "digest", &m.digest_len);
  if (d.rc == 0 && m.digest_len != 0 && m.digest_len != ORION_MSG_LOAD_DIGEST)
    orion__mr_fail(&d, ORION_EPARSE, "a digest of %zu bytes", m.digest_len);
  m.held_only = orion__mr_flag(&d, "held_only flag");
  *out = m;
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}

/* ------------------------------------------------------------------------
 * LOADED.
 * ---------------------------------------------------------------------- */

/* Element bytes of a valid orion_type. */
static size_t type_size(int type) {
  return type == ORION_F32 || type == ORION_I32 ? 4 : 8;
}

/* Whether len bytes are exactly n records of `size` bytes. */
static int holds(size_t len, int64_t n, size_t size) {
  return n >= 0 && len % size == 0 && len / size == (uint64_t)n;
}

/* The keys are nnz * ndims i64 or none, the values nnz elements. */
static int array_sizes_ok(const orion_msg_loaded_array *a) {
  return holds(a->values_len, a->nnz, type_size(a->type)) &&
         (a->keys_len == 0 ||
          holds(a->keys_len, a->nnz, 8u * (size_t)a->ndims));
}

static void put_loaded_array(orion__mw *e, const orion_msg_loaded_array *a) {
  int d;
  orion__mw_need(e, a->type >= 0 && a->type < ORION_NTYPES && a->ndims >= 1 &&
                        a->ndims <= ORION_MAX_DIMS);
  if (e->bad)
    return;
  orion__mw_need(e, array_sizes_ok(a));
  orion__mw_u64(e, (uint64_t)a->type);
  orion__mw_u64(e, (uint64_t)a->ndims);
  for (d = 0; d < a->ndims; d++)
    orion__mw_i64(e, a->dims[d]);
  orion__mw_i64(e, a->nnz);
  orion__mw_bytes(e, a->keys, a->keys_len);
  orion__mw_bytes(e, a->values, a->values_len);
}

static void get_loaded_array(orion__mr *d, orion_msg_loaded_array *a) {
  int j;
  a->type =
      (int)orion__mr_in(d, "element type", 0, ORION_NTYPES - 1, ORION_ETYPE);
  a->ndims = (int)orion__mr_in(d, "number of dimensions", 1, ORION_MAX_DIMS,
                               ORION_EDIMS);
  for (j = 0; j < a->ndims; j++)
    a->dims[j] = orion__mr_i64(d, "dimensions");
  a->nnz = orion__mr_i64(d, "number of elements");
  a->keys = orion__mr_bytes(d, "keys", &a->keys_len);
  a->values = orion__mr_bytes(d, "values", &a->values_len);
  if (d->rc == 0 && !array_sizes_ok(a))
    orion__mr_fail(d, ORION_EPARSE,
                   "%" PRId64 " elements with %zu bytes of keys and "
                   "%zu of values",
                   a->nnz, a->keys_len, a->values_len);
}

int orion_msg_loaded_encode(orion_buf *b, const orion_msg_loaded *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_LOADED);
  orion__mw_flag(&e, m->ok);
  if (!m->ok) {
    orion__mw_bytes(&e, m->msg, m->msg_len);
  } else {
    put_loaded_array(&e, &m->array);
    orion__mw_flag(&e, m->has_labels);
    if (m->has_labels)
      put_loaded_array(&e, &m->labels);
    orion__mw_i64(&e, m->row_lo);
    orion__mw_i64(&e, m->lines);
    orion__mw_i64(&e, m->skipped);
    orion__mw_bytes(&e, m->first_skip, m->first_skip_len);
  }
  orion__mw_need(&e, m->digest_len == 0 ||
                         m->digest_len == ORION_MSG_LOAD_DIGEST);
  orion__mw_need(&e, !m->not_held || !m->ok);
  orion__mw_i64(&e, m->part);
  orion__mw_bytes(&e, m->digest, m->digest_len);
  orion__mw_flag(&e, m->not_held);
  return orion__mw_end(&e);
}

int orion_msg_loaded_decode(const void *p, size_t n, orion_msg_loaded *out,
                            orion_error *err) {
  orion_msg_loaded m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "LOADED", err);
  m.ok = orion__mr_flag(&d, "ok flag");
  if (d.rc == 0 && !m.ok) {
    m.msg = orion__mr_bytes(&d, "message", &m.msg_len);
  } else if (d.rc == 0) {
    get_loaded_array(&d, &m.array);
    m.has_labels = orion__mr_flag(&d, "labels flag");
    if (m.has_labels)
      get_loaded_array(&d, &m.labels);
    m.row_lo = orion__mr_i64(&d, "first row");
    m.lines = orion__mr_i64(&d, "lines");
    m.skipped = orion__mr_i64(&d, "skipped lines");
    m.first_skip = orion__mr_bytes(&d, "first skipped line", &m.first_skip_len);
  }
  m.part = orion__mr_i64(&d, "part");
  m.digest = orion__mr_bytes(&d, "digest", &m.digest_len);
  if (d.rc == 0 && m.digest_len != 0 && m.digest_len != ORION_MSG_LOAD_DIGEST)
    orion__mr_fail(&d, ORION_EPARSE, "a digest of %zu bytes", m.digest_len);
  m.not_held = orion__mr_flag(&d, "not_held flag");
  if (d.rc == 0 && m.not_held && m.ok)
    orion__mr_fail(&d, ORION_EPARSE, "elements of a part it does not hold");
  *out = m;
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}
