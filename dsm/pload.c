/* Parallel loading (dsm/pload.h): LOAD_FILE to every executor, their
 * LOADED parts back, merged as one load of the whole file would return
 * them. */
#include "dsm/pload.h"

#include <stdio.h>
#include <string.h>

#include "dsm/proto.h"
#include "dsm/types.h"
#include "util/alloc.h"

typedef struct load_run {
  orion_cluster *cl;
  int n, got;
  orion_load_result *parts;
  char **errs; /* per executor: its error, or NULL */
} load_run;

/* An array from a LOADED frame (NULL with r bad on a malformed one). */
static orion_array *get_array(orion_reader *r) {
  orion_error err;
  orion_array *a;
  int64_t type = orion_pr_i64(r), nd = orion_pr_i64(r), dims[ORION_MAX_DIMS];
  int64_t nnz;
  size_t kl, vl;
  const char *keys, *vals;
  int d;
  if (type < 0 || type > ORION_I64 || nd < 1 || nd > ORION_MAX_DIMS) {
    r->bad = 1;
    return NULL;
  }
  for (d = 0; d < nd; d++)
    dims[d] = orion_pr_i64(r);
  nnz = orion_pr_i64(r);
  keys = orion_pr_bytes(r, &kl);
  vals = orion_pr_bytes(r, &vl);
  if (r->bad || nnz < 0 || vl != (size_t)nnz * orion_type_size((orion_type)type)) {
    r->bad = 1;
    return NULL;
  }
  orion_error_clear(&err);
  if (kl == 0 && nnz > 0) { /* dense */
    a = orion_array_new_dense((int)nd, dims, (orion_type)type, &err);
    if (a == NULL || a->nnz != nnz) {
      orion_array_release(a);
      r->bad = 1;
      return NULL;
    }
  } else {
    if (kl != (size_t)nnz * (size_t)nd * 8) {
      r->bad = 1;
      return NULL;
    }
    a = orion_array_new_sparse((int)nd, (orion_type)type, &err);
    if (a == NULL || orion_array_reserve(a, nnz > 0 ? nnz : 1) != 0) {
      orion_array_release(a);
      r->bad = 1;
      return NULL;
    }
    memcpy(a->keys, keys, kl);
    a->nnz = nnz;
    memcpy(a->dims, dims, sizeof(int64_t) * (size_t)nd);
  }
  memcpy(a->values, vals, vl);
  return a;
}

/* LOAD_FILE for range `part` of nparts (dsm/proto.h). */
static void put_load_file(orion_buf *b, const char *path, int part,
                          int nparts, const orion_load_opts *o) {
  size_t at = orion_wire_begin(b, ORION_WIRE_LOAD_FILE);
  int d;
  orion_pw_bytes(b, path, strlen(path));
  orion_pw_i64(b, part);
  orion_pw_i64(b, nparts);
  orion_pw_i64(b, o->format);
  orion_pw_i64(b, o->index_base);
  orion_pw_i64(b, o->nkeys);
  orion_pw_i64(b, o->have_dims);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    orion_pw_i64(b, o->dims[d]);
  orion_pw_i64(b, o->value_type);
  orion_pw_i64(b, o->skip_errors);
  orion_pw_i64(b, o->sep);
  orion_pw_i64(b, o->header);
  orion_pw_i64(b, o->ncols_key);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    orion_pw_i64(b, o->key_cols[d]);
  orion_pw_i64(b, o->value_col);
  orion_wire_end(b, at);
}

static void on_loaded(void *ud, int e, const orion_wire_frame *f) {
  load_run *lr = ud;
  orion_reader r;
  orion_load_result *res = &lr->parts[e];
  if (f->type != ORION_WIRE_LOADED)
    orion_cluster_fail(lr->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(lr->cl, e),
                       orion_wire_type_name(f->type));
  orion_reader_init(&r, (const char *)f->payload, f->len);
  if (orion_pr_i64(&r) == 0) {
    size_t n;
    const char *msg = orion_pr_bytes(&r, &n);
    lr->errs[e] = orion_strndup(msg != NULL ? msg : "?", msg != NULL ? n : 1);
  } else {
    size_t n;
    const char *fs;
    res->array = get_array(&r);
    if (orion_pr_i64(&r) == 1)
      res->labels = get_array(&r);
    res->row_lo = orion_pr_i64(&r);
    res->lines = orion_pr_i64(&r);
    res->skipped = orion_pr_i64(&r);
    fs = orion_pr_bytes(&r, &n);
    if (r.bad || r.left != 0 || res->array == NULL)
      orion_cluster_fail(lr->cl, "executor %d (%s) sent a malformed LOADED "
                                 "frame",
                         e, orion_cluster_addr(lr->cl, e));
    snprintf(res->first_skip, sizeof res->first_skip, "%.*s", (int)n, fs);
  }
  lr->got++;
}

static int all_loaded(void *ud) {
  load_run *lr = ud;
  return lr->got == lr->n;
}

int orion_pload(orion_cluster *cl, const char *path,
                const orion_load_opts *o, orion_load_result *res,
                orion_error *err) {
  load_run lr;
  char doing[512];
  int e, rc = 0;
  memset(&lr, 0, sizeof lr);
  lr.cl = cl;
  lr.n = orion_cluster_size(cl);
  lr.parts = orion_calloc((size_t)lr.n, sizeof *lr.parts);
  lr.errs = orion_calloc((size_t)lr.n, sizeof *lr.errs);
  if (lr.parts == NULL || lr.errs == NULL) {
    orion_free(lr.parts);
    orion_free(lr.errs);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  snprintf(doing, sizeof doing, "while loading %s", path);
  orion_cluster_set_handler(cl, on_loaded, &lr, doing);
  for (e = 0; e < lr.n; e++) {
    orion_buf b;
    orion_buf_init(&b);
    put_load_file(&b, path, e, lr.n, o);
    orion_cluster_send(cl, e, &b);
    orion_buf_free(&b);
  }
  orion_cluster_wait(cl, all_loaded, &lr);
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  /* The first range's error is the one a whole load reports first. */
  for (e = 0; e < lr.n && rc == 0; e++)
    if (lr.errs[e] != NULL)
      rc = orion_error_set(err, ORION_EPARSE, "%s", lr.errs[e]);
  if (rc == 0)
    rc = orion_load_merge(lr.parts, lr.n, o, res, err);
  for (e = 0; e < lr.n; e++) {
    orion_array_release(lr.parts[e].array);
    orion_array_release(lr.parts[e].labels);
    orion_free(lr.errs[e]);
  }
  orion_free(lr.parts);
  orion_free(lr.errs);
  return rc;
}
