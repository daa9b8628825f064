/* Running a block on the executor's GPU (executor/exec_gbody.h): the device
 * half of the executor core, beside executor/exec_cbody.c (the CPU's compiled
 * bodies).  The slots are the compiled body's, resolved against the same
 * bindings; every bound array gets a device copy (cached per array id),
 * the block's elements become a device grid (executor/gpugrid.h), the
 * body runs (util/gbody.h), the arrays it writes come back and the groups'
 * accumulator partials are folded in group order.
 *
 * v1 moves whole arrays: each block uploads every bound array and the
 * iterated one, and downloads the ones the body writes.  That is correct
 * whatever ran on the host in between (buffered flushes, rows from peers,
 * the driver's writes between loops) but pays the copies every block; the
 * next step is residency: keep a dirty range per array (host writes mark
 * it, device writes mark the host copy stale) and move only what changed,
 * one block ahead on the copy stream (orion_gpu_h2d_async).
 *
 * Compute thread only. */
#include "executor/exec_gbody.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/types.h"
#include "dsm/wbuf.h"
#include "executor/exec_gmemo.h"
#include "executor/exec_cbody.h"
#include "executor/exec_elem.h"
#include "executor/exec_int.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/gclaim.h"
#include "util/luarand.h"
#include "util/rng.h"

/* A device copy of a host array. */
typedef struct dev_copy {
  int64_t id;    /* the array id */
  int keys;      /* 1: a sparse array's keys, 0: its values */
  void *d;       /* device memory */
  size_t bytes;  /* its size */
} dev_copy;

/* Device memory reused across blocks: grown, never shrunk, until the
 * device is taken away. */
typedef struct dev_buf {
  void *d;
  size_t bytes;
} dev_buf;

struct exec_gpu {
  orion_gpu *g;
  orion_gbody_fn fn;
  orion_gbody_writes_fn writes;
  orion_gbody_rowkey_fn rowkey; /* NULL: every array moves whole */
  int claims; /* orion_exec_set_gclaim */
  orion_gpugrid_in grid; /* kind, dims, skew, b */
  dev_copy *copies;
  int ncopies;
  dev_buf order, goff, scratch;
  dev_buf rows; /* a claimed grid's row lists (util/gclaim.h) */
  dev_buf *bufd; /* per buffer slot: its sums and marks (ORION_GBUF_BYTES) */
  int nbufd;
  orion_gmemo *memo; /* the blocks' grids, kept across passes */
  uint64_t dev_grid, dev_rows; /* the serial of the grid whose order and
                                  offsets (rows) the device buffers hold */
  int64_t blocks, taken; /* blocks run; how many of them were taken */
};

static struct exec_gpu *state(orion_exec *ex) {
  if (ex->gpu == NULL)
    ex->gpu = orion_calloc(1, sizeof *ex->gpu);
  return ex->gpu;
}

static void free_copies(struct exec_gpu *s) {
  int i;
  for (i = 0; i < s->ncopies; i++) {
    orion_gmemo_dev_lost(s->memo, s->copies[i].id);
    if (s->g != NULL)
      orion_gpu_free(s->g, s->copies[i].d);
  }
  s->dev_grid = s->dev_rows = 0;
  orion_free(s->copies);
  s->copies = NULL;
  s->ncopies = 0;
  if (s->g != NULL) {
    orion_gpu_free(s->g, s->order.d);
    orion_gpu_free(s->g, s->goff.d);
    orion_gpu_free(s->g, s->scratch.d);
    orion_gpu_free(s->g, s->rows.d);
    for (i = 0; i < s->nbufd; i++)
      orion_gpu_free(s->g, s->bufd[i].d);
  }
  orion_free(s->bufd);
  s->bufd = NULL;
  s->nbufd = 0;
  memset(&s->rows, 0, sizeof s->rows);
  memset(&s->order, 0, sizeof s->order);
  memset(&s->goff, 0, sizeof s->goff);
  memset(&s->scratch, 0, sizeof s->scratch);
}

void orion_exec_set_gpu(orion_exec *ex, orion_gpu *g) {
  struct exec_gpu *s = state(ex);
  if (s == NULL)
    return; /* out of memory: no device, blocks run on the CPU */
  free_copies(s);
  s->g = g;
}

orion_gpu *orion_exec_gpu(const orion_exec *ex) {
  return ex->gpu != NULL ? ex->gpu->g : NULL;
}

void orion_exec_set_gbody(orion_exec *ex, orion_gbody_fn fn,
                          orion_gbody_writes_fn writes,
                          const orion_gpugrid_in *grid) {
  struct exec_gpu *s = fn != NULL || ex->gpu != NULL ? state(ex) : NULL;
  if (s == NULL)
    return;
  s->fn = fn;
  s->writes = writes;
  s->rowkey = NULL;
  s->claims = 0;
  memset(&s->grid, 0, sizeof s->grid);
  if (grid != NULL)
    s->grid = *grid;
  s->grid.keys = NULL;
  s->grid.nelems = 0;
}

void orion_exec_set_growkey(orion_exec *ex, orion_gbody_rowkey_fn rowkey) {
  if (ex->gpu != NULL)
    ex->gpu->rowkey = rowkey;
}

void orion_exec_set_gclaim(orion_exec *ex, int claims) {
  if (ex->gpu != NULL)
    ex->gpu->claims = claims;
}

/* Not while a buffer flushes every n elements: the device flushes only
 * after a block, so such a loop's blocks run on the CPU, as asked. */
int orion_exec_gpu_ready(const orion_exec *ex) {
  return ex->gpu != NULL && ex->gpu->g != NULL && ex->gpu->fn != NULL &&
         ex->cfn != NULL && ex->nflushn == 0;
}

int64_t orion_exec_gpu_blocks(const orion_exec *ex) {
  return ex->gpu != NULL ? ex->gpu->blocks : 0;
}

int64_t orion_exec_gpu_take_blocks(orion_exec *ex) {
  int64_t n;
  if (ex->gpu == NULL)
    return 0;
  n = ex->gpu->blocks - ex->gpu->taken;
  ex->gpu->taken = ex->gpu->blocks;
  return n;
}

void orion__exec_gpu_free(orion_exec *ex) {
  if (ex->gpu == NULL)
    return;
  free_copies(ex->gpu);
  orion_gmemo_free(ex->gpu->memo);
  orion_free(ex->gpu);
  ex->gpu = NULL;
}

/* What a device copy holds. */
enum { COPY_VALUES = 0, COPY_KEYS = 1, COPY_ROWS = 2 };

/* The device copy of array id, of `bytes` bytes (allocated on first use,
 * again when the size changed; a window of rows, COPY_ROWS, is only
 * reallocated to grow). */
static int copy_of(struct exec_gpu *s, int64_t id, int keys, size_t bytes,
                   const char *what, void **d, orion_error *err) {
  int i, rc;
  dev_copy *v;
  for (i = 0; i < s->ncopies; i++)
    if (s->copies[i].id == id && s->copies[i].keys == keys)
      break;
  if (i == s->ncopies) {
    v = orion_realloc(s->copies, sizeof *v * (size_t)(s->ncopies + 1));
    if (v == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    s->copies = v;
    memset(&v[i], 0, sizeof v[i]);
    v[i].id = id;
    v[i].keys = keys;
    s->ncopies++;
  }
  if (s->copies[i].d != NULL &&
      (s->copies[i].bytes == bytes ||
       (keys == COPY_ROWS && s->copies[i].bytes >= bytes))) {
    *d = s->copies[i].d;
    return 0;
  }
  orion_gpu_free(s->g, s->copies[i].d);
  s->copies[i].d = NULL;
  s->copies[i].bytes = 0;
  if (keys == COPY_KEYS)
    orion_gmemo_dev_lost(s->memo, id);
  rc = orion_gpu_alloc(s->g, bytes > 0 ? bytes : 1, what, &s->copies[i].d,
                       err);
  if (rc != 0)
    return rc;
  s->copies[i].bytes = bytes;
  *d = s->copies[i].d;
  return 0;
}

/* A reusable device buffer of at least `bytes`. */
static int grow(struct exec_gpu *s, dev_buf *b, size_t bytes, const char *what,
                orion_error *err) {
  if (b->d != NULL && b->bytes >= bytes)
    return 0;
  orion_gpu_free(s->g, b->d);
  b->d = NULL;
  b->bytes = 0;
  if (orion_gpu_alloc(s->g, bytes > 0 ? bytes : 1, what, &b->d, err) != 0)
    return err->code != 0 ? err->code : ORION_ENOMEM;
  b->bytes = bytes;
  return 0;
}

/* ca: a's shape with the device copies dv (values) and dk (keys). */
static int as_device(orion_carray *ca, const orion_array *a, void *dv,
                     void *dk) {
  orion__exec_carray_of(ca, a);
  ca->values = dv;
  ca->keys = a->sparse ? dk : NULL;
  return 0;
}

/* The host array a as the device sees it: values (and a sparse array's
 * keys) uploaded into its device copies. */
static int upload(struct exec_gpu *s, int64_t id, const orion_array *a,
                  const char *what, orion_carray *ca, orion_error *err) {
  size_t vb = (size_t)a->nnz * orion_type_size(a->type);
  void *dv = NULL, *dk = NULL;
  int rc = copy_of(s, id, 0, vb, what, &dv, err);
  if (rc == 0 && vb > 0)
    rc = orion_gpu_h2d(s->g, dv, a->values, vb, err);
  if (rc == 0 && a->sparse) {
    size_t kb = (size_t)a->nnz * (size_t)a->ndims * sizeof(int64_t);
    rc = copy_of(s, id, 1, kb, what, &dk, err);
    if (rc == 0 && kb > 0)
      rc = orion_gpu_h2d(s->g, dk, a->keys, kb, err);
  }
  return rc != 0 ? rc : as_device(ca, a, dv, dk);
}

/* Rows [lo, lo + n) of the dense array a as the device sees them: only
 * those rows are copied in, into a window whose pointer is offset so that
 * the body's row subscripts land in it (the body reaches no other row:
 * orion_gbody_rowkey). */
static int upload_rows(struct exec_gpu *s, int64_t id, const orion_array *a,
                       int64_t lo, int64_t n, const char *what,
                       orion_carray *ca, orion_error *err) {
  size_t rb = (size_t)a->strides[0] * orion_type_size(a->type);
  void *dv = NULL;
  int rc = copy_of(s, id, COPY_ROWS, (size_t)n * rb, what, &dv, err);
  if (rc == 0 && n > 0)
    rc = orion_gpu_h2d(s->g, dv, (const char *)a->values + (size_t)lo * rb,
                       (size_t)n * rb, err);
  return rc != 0 ? rc : as_device(ca, a, (char *)dv - (size_t)lo * rb, NULL);
}

/* The iterated array as the device sees it: device copies of its whole
 * size, into which only the block's segments are copied (a body reads and
 * writes only its own elements), so a block moves its own elements, not
 * the executor's whole copy of the array. */
static int upload_block(struct exec_gpu *s, int64_t id, const orion_array *a,
                        const orion_segment *segs, int64_t nsegs,
                        orion_gmemo_grid *mg, orion_carray *ca,
                        orion_error *err) {
  size_t es = orion_type_size(a->type);
  size_t ks = (size_t)a->ndims * sizeof(int64_t);
  size_t vb = (size_t)a->nnz * es;
  void *dv = NULL, *dk = NULL;
  int64_t k;
  int keys, rc = copy_of(s, id, 0, vb, "the iterated array", &dv, err);
  if (rc == 0 && a->sparse)
    rc = copy_of(s, id, 1, (size_t)a->nnz * ks, "the iterated array's keys",
                 &dk, err);
  /* The keys are there already when the block's grid was kept and no
   * other block wrote over them since. */
  keys = a->sparse && !mg->dev_keys;
  for (k = 0; rc == 0 && k < nsegs; k++) {
    size_t lo = (size_t)segs[k].lo, n = (size_t)(segs[k].hi - segs[k].lo);
    if (n == 0)
      continue;
    rc = orion_gpu_h2d(s->g, (char *)dv + lo * es,
                       (const char *)a->values + lo * es, n * es, err);
    if (rc == 0 && keys)
      rc = orion_gpu_h2d(s->g, (char *)dk + lo * ks,
                         (const char *)a->keys + lo * ks, n * ks, err);
  }
  if (rc == 0 && keys)
    orion_gmemo_dev_wrote(s->memo, id, mg);
  return rc != 0 ? rc : as_device(ca, a, dv, dk);
}

/* The block's segments of the iterated array back (a body that returns a
 * value writes its own elements only). */
static int download_block(struct exec_gpu *s, int64_t id, orion_array *a,
                          const orion_segment *segs, int64_t nsegs,
                          orion_error *err) {
  size_t es = orion_type_size(a->type);
  void *dv = NULL;
  int64_t k;
  int i, rc = 0;
  for (i = 0; i < s->ncopies; i++)
    if (s->copies[i].id == id && !s->copies[i].keys)
      dv = s->copies[i].d;
  for (k = 0; dv != NULL && rc == 0 && k < nsegs; k++) {
    size_t lo = (size_t)segs[k].lo, n = (size_t)(segs[k].hi - segs[k].lo);
    if (n > 0)
      rc = orion_gpu_d2h(s->g, (char *)a->values + lo * es,
                         (const char *)dv + lo * es, n * es, err);
  }
  return rc;
}

/* A written array back: whole, or rows [lo, lo + n) of its window when
 * n >= 0. */
static int download(struct exec_gpu *s, int64_t id, orion_array *a,
                    int64_t lo, int64_t n, orion_error *err) {
  size_t es = orion_type_size(a->type), vb = (size_t)a->nnz * es;
  size_t rb = n >= 0 ? (size_t)a->strides[0] * es : 0;
  void *dv = NULL;
  int i;
  for (i = 0; i < s->ncopies; i++)
    if (s->copies[i].id == id &&
        s->copies[i].keys == (n >= 0 ? COPY_ROWS : COPY_VALUES))
      dv = s->copies[i].d;
  if (n >= 0)
    return dv == NULL || n == 0
               ? 0
               : orion_gpu_d2h(s->g, (char *)a->values + (size_t)lo * rb, dv,
                               (size_t)n * rb, err);
  if (dv == NULL || vb == 0)
    return 0;
  return orion_gpu_d2h(s->g, a->values, dv, vb, err);
}

/* Everything a run allocates on the host. */
typedef struct run_host {
  orion_gctx *c;
  orion_carray *arrays;
  orion_cval *consts;
  orion_cacc *partials;
  orion_cacc *accs; /* each accumulator's op, for the groups' partials */
  orion_cbuffer *bufs; /* per buffer slot: h its device sums */
  exec_buffer **buf_of;
  acc_slot **acc_of;
  binding **arr_of;
  int64_t *rlo, *rn; /* per array slot: its rows on the device (rn -1: all) */
  const int64_t *klo, *khi; /* the block's range of each key */
  const int64_t *order;      /* the grid's element positions */
  const orion_gpugrid *grid; /* both kept in s->memo */
} run_host;

static void run_host_free(run_host *h) {
  orion_free(h->c);
  orion_free(h->arrays);
  orion_free(h->consts);
  orion_free(h->partials);
  orion_free(h->accs);
  orion_free(h->bufs);
  orion_free(h->buf_of);
  orion_free(h->acc_of);
  orion_free(h->arr_of);
  orion_free(h->rlo);
  orion_free(h->rn);
}

/* Buffer slot k's device sums for target t, zeroed: h->bufs[k]. */
static int bind_buffer(struct exec_gpu *s, run_host *h, int k,
                       exec_buffer *bf, orion_error *err) {
  const orion_array *t = bf->target;
  orion_cbuffer *cb = &h->bufs[k];
  size_t bytes = ORION_GBUF_BYTES(t->nnz > 0 ? t->nnz : 1);
  char what[96];
  int d, rc;
  if (k >= s->nbufd) {
    dev_buf *nv = orion_realloc(s->bufd, sizeof *nv * (size_t)(k + 1));
    if (nv == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    memset(nv + s->nbufd, 0, sizeof *nv * (size_t)(k + 1 - s->nbufd));
    s->bufd = nv;
    s->nbufd = k + 1;
  }
  snprintf(what, sizeof what, "buffer '%s'", bf->name);
  rc = grow(s, &s->bufd[k], bytes, what, err);
  if (rc == 0)
    rc = orion_gpu_memset(s->g, s->bufd[k].d, 0, bytes, err);
  if (rc != 0)
    return rc;
  h->buf_of[k] = bf;
  cb->h = s->bufd[k].d;
  cb->type = (int32_t)t->type;
  cb->ndims = t->ndims;
  cb->op = (int32_t)bf->op;
  for (d = 0; d < t->ndims; d++) {
    cb->dims[d] = t->dims[d];
    cb->strides[d] = t->strides[d];
  }
  return 0;
}

/* The device's sums of buffer slots [0, nb) join their buffers' pending
 * writes: each marked element's sum is added to its pending value (a
 * body on the device only adds).  An i32 "replace" buffer's value must
 * fit, as the CPU body checks at each store. */
static int merge_buffers(struct exec_gpu *s, run_host *h, int nb,
                         int executor, orion_error *err) {
  int k, rc = 0;
  for (k = 0; k < nb && rc == 0; k++) {
    exec_buffer *bf = h->buf_of[k];
    const orion_array *t = bf->target;
    int64_t n = t->nnz > 0 ? t->nnz : 1, j;
    int isint = t->type == ORION_I32 || t->type == ORION_I64;
    char *hb = orion_malloc(ORION_GBUF_BYTES(n));
    const unsigned char *mark;
    if (hb == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    rc = orion_gpu_d2h(s->g, hb, h->bufs[k].h, ORION_GBUF_BYTES(n), err);
    mark = (const unsigned char *)hb + (size_t)n * sizeof(int64_t);
    for (j = 0; rc == 0 && j < t->nnz; j++) {
      orion_pend_value add, *pv;
      if (!mark[j])
        continue;
      memcpy(&add, hb + (size_t)j * sizeof add, sizeof add);
      pv = orion_wbuf_slot(&bf->pend, j);
      if (pv == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM,
                             "executor %d: buffer '%s': out of memory for "
                             "pending writes",
                             executor, bf->name);
        break;
      }
      if (isint)
        pv->i = (int64_t)((uint64_t)pv->i + (uint64_t)add.i);
      else
        pv->d += add.d;
      if (isint && t->type == ORION_I32 && bf->op == ORION_APPLY_REPLACE &&
          (pv->i < INT32_MIN || pv->i > INT32_MAX))
        rc = orion_error_set(err, ORION_EBODY,
                             "executor %d: cannot store %lld in i32 buffer "
                             "'%s': out of range",
                             executor, (long long)pv->i, bf->name);
    }
    orion_free(hb);
  }
  return rc;
}

/* Binds the slots: arrays uploaded, buffers' sums zeroed, constants,
 * accumulators (their slots in acc_of).  Counts into *na, *nb, *nk. */
static int bind_slots(orion_exec *ex, struct exec_gpu *s, run_host *h,
                      int64_t iter_id, int ndims, int *na, int *nb, int *nk,
                      orion_error *err) {
  int i, nc = 0, rc = 0;
  char what[96];
  *na = *nb = *nk = 0;
  for (i = 0; i < ex->ncslots && rc == 0; i++) {
    const orion_cslot *sl = &ex->cslots[i];
    if (sl->kind == ORION_CSLOT_ARRAY) {
      binding *bd = orion__exec_find_array(ex, sl->id);
      if (bd == NULL || bd->a->sparse)
        return orion_error_set(err, ORION_EINVAL,
                               "executor %d: array %lld of the device body "
                               "is not bound (or sparse)",
                               ex->id, (long long)sl->id);
      int d = s->rowkey != NULL ? s->rowkey(*na) : -1;
      snprintf(what, sizeof what, "array %lld", (long long)sl->id);
      h->arr_of[*na] = bd;
      h->rn[*na] = -1;
      if (d >= 0 && d < ndims && sl->id != iter_id && bd->a->ndims >= 1 &&
          bd->a->dims[0] > 0) {
        /* Only the rows of the block's key range.  Never the iterated
         * array's: read through its upvalue it shares the block's copy
         * (copy_of's slot 0), where the body's returned values land, so
         * that a read sees what the block has replaced. */
        int64_t lo = h->klo[d] > 0 ? h->klo[d] : 0;
        int64_t hi = h->khi[d] < bd->a->dims[0] ? h->khi[d]
                                                : bd->a->dims[0] - 1;
        if (lo > 0 || hi < bd->a->dims[0] - 1) {
          h->rlo[*na] = lo;
          h->rn[*na] = hi >= lo ? hi - lo + 1 : 0;
        }
      }
      rc = h->rn[*na] >= 0 ? upload_rows(s, sl->id, bd->a, h->rlo[*na],
                                         h->rn[*na], what, &h->arrays[*na],
                                         err)
                           : upload(s, sl->id, bd->a, what, &h->arrays[*na],
                                    err);
      (*na)++;
    } else if (sl->kind == ORION_CSLOT_ACC) {
      acc_slot *as = orion__exec_find_acc(ex, sl->id);
      if (as == NULL)
        return orion_error_set(err, ORION_EINVAL,
                               "executor %d: accumulator %lld of the device "
                               "body is not bound",
                               ex->id, (long long)sl->id);
      h->acc_of[(*nk)++] = as;
    } else if (sl->kind == ORION_CSLOT_CONST) {
      if (sl->isint)
        h->consts[nc++].i = sl->ival;
      else
        h->consts[nc++].d = sl->fval;
    } else if (sl->kind == ORION_CSLOT_BUFFER) {
      exec_buffer *bf = orion__exec_find_buffer(ex, sl->id);
      if (bf == NULL || bf->target == NULL)
        return orion_error_set(err, ORION_EINVAL,
                               "executor %d: buffer %lld of the device body "
                               "is not bound",
                               ex->id, (long long)sl->id);
      rc = bind_buffer(s, h, *nb, bf, err);
      (*nb)++;
    }
  }
  if (rc != 0 && err->msg[0] == '\0')
    orion_error_set(err, rc, "executor %d: %s", ex->id, orion_strerror(rc));
  return rc;
}

/* The groups' partials into the accumulators' slots, in group order. */
static void fold_partials(run_host *h, int nk, int64_t ngroups) {
  int64_t g;
  int k;
  for (g = 0; g < ngroups; g++)
    for (k = 0; k < nk; k++) {
      const orion_cacc *p = &h->partials[g * nk + k];
      orion_accval v;
      v.has = p->has;
      v.isint = p->isint;
      v.i = (lua_Integer)p->i;
      v.d = (lua_Number)p->d;
      orion_accval_combine(&h->acc_of[k]->val, h->acc_of[k]->op, &v);
    }
}

/* The bytes of device copy (id, keys) now allocated, or 0. */
static size_t copy_bytes(const struct exec_gpu *s, int64_t id, int keys) {
  int i;
  for (i = 0; i < s->ncopies; i++)
    if (s->copies[i].id == id && s->copies[i].keys == keys &&
        s->copies[i].d != NULL)
      return s->copies[i].bytes;
  return 0;
}

/* A claimed grid's row lists' bytes. */
static size_t rows_bytes(const orion_gpugrid *gr) {
  return sizeof(int64_t) * (size_t)(gr->b + 1 + 2 * gr->ngroups);
}

/* A grid buffer about to be grown to `bytes`: the grid it holds (*tag)
 * is gone when grow() must reallocate it. */
static void forget_if_regrown(const dev_buf *b, size_t bytes, uint64_t *tag) {
  if (b->d == NULL || b->bytes < bytes)
    *tag = 0;
}

/* A claimed grid's row lists into s->rows: row_off, row_group, row_col
 * one after another. */
static int upload_rows_lists(struct exec_gpu *s, const orion_gpugrid *gr,
                             orion_error *err) {
  size_t a = sizeof(int64_t) * (size_t)(gr->b + 1),
         n = sizeof(int64_t) * (size_t)gr->ngroups;
  int rc = grow(s, &s->rows, rows_bytes(gr), "the device grid's rows", err);
  if (rc == 0)
    rc = orion_gpu_h2d(s->g, s->rows.d, gr->row_off, a, err);
  if (rc == 0)
    rc = orion_gpu_h2d(s->g, (char *)s->rows.d + a, gr->row_group, n, err);
  if (rc == 0)
    rc = orion_gpu_h2d(s->g, (char *)s->rows.d + a + n, gr->row_col, n, err);
  return rc;
}

/* Are the loaded body's 2d rotations claimed (util/gclaim.h): a fast
 * body's (orion_exec_set_gclaim), when ORION_GPU_CLAIM=1 asks for it?
 * Not by default: on the H200 the claiming kernel was no faster than the
 * steps (docs/gpu.md). */
static int claims(const struct exec_gpu *s) {
  const char *env = getenv("ORION_GPU_CLAIM");
  return s->claims && s->grid.kind == ORION_GPUGRID_2D && env != NULL &&
         strcmp(env, "1") == 0;
}

/* Does the block's grid run claimed: a claimed rotation of more than one
 * row? */
static int claimed(const struct exec_gpu *s, const orion_gpugrid *gr) {
  return claims(s) && gr->row_off != NULL && gr->b > 1 && gr->ngroups > 1;
}

/* The extra scratch and row-list bytes a claimed grid needs. */
static size_t claim_bytes(const orion_gpugrid *gr) {
  return ORION_GCLAIM_SCRATCH(gr->b, gr->ngroups) + rows_bytes(gr);
}

/* Does the block fit device memory whole: the iterated array's copies,
 * the grid and the partials, beside what is allocated now (a copy of
 * another size and a buffer that grows free their old bytes first)? */
static int fits_whole(const struct exec_gpu *s, int64_t id,
                      const orion_array *a, int64_t nel, int64_t ngroups,
                      int nk, size_t claim) {
  const orion_gpu_info *gi = orion_gpu_info_of(s->g);
  uint64_t used = orion_gpu_in_use(s->g), need = 0, freed = 0;
  size_t want[5], have[5];
  int k;
  want[0] = (size_t)a->nnz * orion_type_size(a->type);
  want[1] = a->sparse ? (size_t)a->nnz * (size_t)a->ndims * sizeof(int64_t)
                      : 0;
  want[2] = sizeof(int64_t) * (size_t)nel;
  want[3] = sizeof(int64_t) * (size_t)(ngroups + 1);
  want[4] = ORION_GBODY_SCRATCH(ngroups, nk) + claim;
  have[0] = copy_bytes(s, id, 0);
  have[1] = copy_bytes(s, id, 1);
  have[2] = s->order.bytes;
  have[3] = s->goff.bytes;
  have[4] = s->scratch.bytes;
  for (k = 0; k < 5; k++) {
    int same = k < 2 ? have[k] == want[k] : have[k] >= want[k];
    if (!same) {
      need += want[k];
      freed += have[k];
    }
  }
  if (gi == NULL)
    return 0;
  used = used > freed ? used - freed : 0;
  return used <= gi->cap_bytes && need <= gi->cap_bytes - used;
}

/* The device copies of array id, freed (a streamed block does not use
 * them). */
static void drop_copies(struct exec_gpu *s, int64_t id) {
  int i;
  orion_gmemo_dev_lost(s->memo, id);
  for (i = 0; i < s->ncopies; i++)
    if (s->copies[i].id == id && s->copies[i].d != NULL) {
      orion_gpu_free(s->g, s->copies[i].d);
      s->copies[i].d = NULL;
      s->copies[i].bytes = 0;
    }
}

static void drop_buf(struct exec_gpu *s, dev_buf *b) {
  orion_gpu_free(s->g, b->d);
  b->d = NULL;
  b->bytes = 0;
}

/* A block whose elements do not fit device memory beside the arrays the
 * body binds (a sparse iterated array only): its groups run in chunks,
 * in group order, each chunk's elements gathered on the host into
 * compact keys and values that are copied in (and back, when the body
 * returns a value), with their own grid (positions 0..m-1).  A chunk
 * ends at a group's end, so each group still runs whole on one warp, in
 * order; a step split over two chunks runs its groups in two launches,
 * one after the other, which a serial order allows.  Sets *r and h->c
 * (cur: a position in the iterated array) as one call of the body
 * would. */
static int run_streamed(struct exec_gpu *s, run_host *h, int64_t iter_id,
                        orion_array *a, int nk, int writes_iter, int *r,
                        orion_error *err) {
  const orion_gpu_info *gi = orion_gpu_info_of(s->g);
  size_t es = orion_type_size(a->type);
  size_t ks = (size_t)a->ndims * sizeof(int64_t);
  size_t pe = ks + es + 2 * sizeof(int64_t) +
              sizeof(orion_cacc) * (size_t)(nk > 0 ? nk : 1);
  const orion_gpugrid *gr = h->grid;
  uint64_t used, avail;
  int64_t m_cap, g0, g1, st = 0, j, biggest = 0, *iota = NULL, *goff = NULL,
                         *soff = NULL;
  char *hk = NULL, *hv = NULL;
  void *dk = NULL, *dv = NULL;
  orion_carray base = h->c->iter;
  int rc = 0;
  *r = 0;
  drop_copies(s, iter_id);
  drop_buf(s, &s->order);
  drop_buf(s, &s->goff);
  drop_buf(s, &s->scratch);
  s->dev_grid = 0;
  used = orion_gpu_in_use(s->g);
  /* The scratch's error record (4096 bytes) beside the per-element
   * bytes, and a little for rounding. */
  avail = gi != NULL && used + 4160 < gi->cap_bytes
              ? gi->cap_bytes - used - 4160
              : 0;
  m_cap = (int64_t)(avail / (uint64_t)(pe + 16));
  for (j = 0; j < gr->ngroups; j++)
    if (gr->group_off[j + 1] - gr->group_off[j] > biggest)
      biggest = gr->group_off[j + 1] - gr->group_off[j];
  if (m_cap > gr->nelems)
    m_cap = gr->nelems;
  if (m_cap < biggest || m_cap < 1)
    return orion_error_set(err, ORION_ENOMEM,
                           "device memory: %llu bytes left beside the "
                           "body's arrays hold %lld elements of the "
                           "iterated array, and a group of this block has "
                           "%lld (raise --gpu-memory or use more "
                           "partitions)",
                           (unsigned long long)avail, (long long)m_cap,
                           (long long)biggest);
  iota = orion_malloc(sizeof *iota * (size_t)m_cap);
  goff = orion_malloc(sizeof *goff * (size_t)(m_cap + 1));
  soff = orion_malloc(sizeof *soff * (size_t)(m_cap + 2));
  hk = orion_malloc(ks * (size_t)m_cap + 1);
  hv = orion_malloc(es * (size_t)m_cap + 1);
  if (iota == NULL || goff == NULL || soff == NULL || hk == NULL ||
      hv == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    goto done;
  }
  for (j = 0; j < m_cap; j++)
    iota[j] = j;
  rc = grow(s, &s->order, sizeof(int64_t) * (size_t)m_cap,
            "the device grid", err);
  if (rc == 0)
    rc = grow(s, &s->goff, sizeof(int64_t) * (size_t)(m_cap + 1),
              "the device grid", err);
  if (rc == 0)
    rc = grow(s, &s->scratch, ORION_GBODY_SCRATCH(m_cap, nk),
              "the device body's scratch", err);
  if (rc == 0)
    rc = orion_gpu_alloc(s->g, ks * (size_t)m_cap + 1,
                         "the iterated array's keys (streamed)", &dk, err);
  if (rc == 0)
    rc = orion_gpu_alloc(s->g, es * (size_t)m_cap + 1,
                         "the iterated array (streamed)", &dv, err);
  if (rc == 0)
    rc = orion_gpu_h2d(s->g, s->order.d, iota,
                       sizeof(int64_t) * (size_t)m_cap, err);
  for (g0 = 0; rc == 0 && *r == 0 && g0 < gr->ngroups; g0 = g1) {
    int64_t e0 = gr->group_off[g0], m, ns = 0;
    for (g1 = g0 + 1; g1 < gr->ngroups &&
                      gr->group_off[g1 + 1] - e0 <= m_cap;
         g1++)
      ;
    m = gr->group_off[g1] - e0;
    for (j = 0; j < m; j++) {
      int64_t p = h->order[e0 + j];
      memcpy(hk + (size_t)j * ks, a->keys + p * a->ndims, ks);
      memcpy(hv + (size_t)j * es, (const char *)a->values + (size_t)p * es,
             es);
    }
    for (j = g0; j <= g1; j++)
      goff[j - g0] = gr->group_off[j] - e0;
    /* The steps that meet [g0, g1), cut to it. */
    while (gr->step_off[st + 1] <= g0)
      st++;
    soff[0] = 0;
    for (; st < gr->nsteps && gr->step_off[st] < g1; st++) {
      int64_t end = gr->step_off[st + 1] < g1 ? gr->step_off[st + 1] : g1;
      soff[++ns] = end - g0;
      if (gr->step_off[st + 1] > g1)
        break; /* the step goes on in the next chunk */
    }
    rc = orion_gpu_h2d(s->g, dk, hk, ks * (size_t)m, err);
    if (rc == 0)
      rc = orion_gpu_h2d(s->g, dv, hv, es * (size_t)m, err);
    if (rc == 0)
      rc = orion_gpu_h2d(s->g, s->goff.d, goff,
                         sizeof(int64_t) * (size_t)(g1 - g0 + 1), err);
    if (rc != 0)
      break;
    h->c->iter = base;
    h->c->iter.values = dv;
    h->c->iter.keys = dk;
    h->c->iter.nnz = m;
    h->c->d_order = s->order.d;
    h->c->d_group_off = s->goff.d;
    h->c->h_step_off = soff;
    h->c->ngroups = g1 - g0;
    h->c->group0 = g0;
    h->c->nsteps = ns;
    h->c->h_partials = h->partials + g0 * (nk > 0 ? nk : 1);
    h->c->d_scratch = s->scratch.d;
    h->c->cur = -1;
    *r = s->fn(h->c);
    if (*r != 0 && h->c->cur >= 0 && h->c->cur < m)
      h->c->cur = h->order[e0 + h->c->cur];
    else if (*r != 0)
      h->c->cur = -1;
    /* What the body returned, back into the block's elements (also
     * after an error: the elements before it ran, as on the CPU). */
    if (writes_iter) {
      orion_error derr;
      orion_error_clear(&derr);
      if (orion_gpu_d2h(s->g, hv, dv, es * (size_t)m, &derr) != 0) {
        rc = orion_error_set(err, derr.code, "%s", derr.msg);
        break;
      }
      for (j = 0; j < m; j++)
        memcpy((char *)a->values + (size_t)h->order[e0 + j] * es,
               hv + (size_t)j * es, es);
    }
  }
done:
  orion_gpu_free(s->g, dk);
  orion_gpu_free(s->g, dv);
  orion_free(iota);
  orion_free(goff);
  orion_free(soff);
  orion_free(hk);
  orion_free(hv);
  return rc;
}

int orion_exec_run_gpu(orion_exec *ex, int64_t iter_id,
                       const orion_segment *segs, int64_t nsegs,
                       uint64_t seed, int64_t block, orion_error *err) {
  struct exec_gpu *s = ex->gpu;
  binding *it = orion__exec_find_array(ex, iter_id);
  run_host h;
  orion_gpugrid_in in;
  size_t n = (size_t)ex->ncslots + 1;
  int64_t i, nel = 0;
  orion_gmemo_grid *mg = NULL;
  int na = 0, nb = 0, nk = 0, rc, r = 0, streamed = 0, claim = 0, hit = 0;
  orion_luarand rng;
  double t[4] = {0, 0, 0, 0};
  if (!orion_exec_gpu_ready(ex))
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: no device body loaded", ex->id);
  if (it == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: array %lld is not bound", ex->id,
                           (long long)iter_id);
  for (i = 0; i < nsegs; i++)
    if (segs[i].lo < 0 || segs[i].hi > it->a->nnz || segs[i].lo > segs[i].hi)
      return orion_error_set(err, ORION_EINVAL,
                             "executor %d: block range out of bounds",
                             ex->id);
  memset(&h, 0, sizeof h);
  h.c = orion_calloc(1, sizeof *h.c);
  h.arrays = orion_calloc(n, sizeof *h.arrays);
  h.consts = orion_calloc(n, sizeof *h.consts);
  h.acc_of = orion_calloc(n, sizeof *h.acc_of);
  h.bufs = orion_calloc(n, sizeof *h.bufs);
  h.buf_of = orion_calloc(n, sizeof *h.buf_of);
  h.arr_of = orion_calloc(n, sizeof *h.arr_of);
  h.rlo = orion_calloc(n, sizeof *h.rlo);
  h.rn = orion_calloc(n, sizeof *h.rn);
  if (h.c == NULL || h.arrays == NULL || h.consts == NULL ||
      h.acc_of == NULL || h.bufs == NULL || h.buf_of == NULL ||
      h.arr_of == NULL || h.rlo == NULL || h.rn == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    goto done;
  }
  /* The grid over the block's elements (positions in the iterated
   * array, group-major): kept from an earlier pass over the same block,
   * or built now (executor/exec_gmemo.h). */
  t[0] = orion_now();
  in = s->grid;
  in.ndims = it->a->ndims;
  in.rows = claims(s);
  if (in.rows && in.b == 0)
    /* Claimed, a worker runs a row: as many rows as the grid allows, for
     * as many workers (the steps' default, about sqrt(elements), bounds
     * the launches). */
    in.b = ORION_GPUGRID_MAX_B;
  rc = orion_gmemo_get(&s->memo, iter_id, it->a, segs, nsegs, &in, &mg,
                       &hit, err);
  if (rc != 0 || mg->nel == 0)
    goto done;
  nel = mg->nel;
  h.grid = &mg->grid;
  h.order = mg->order;
  h.klo = mg->klo;
  h.khi = mg->khi;
  t[1] = orion_now();
  rc = bind_slots(ex, s, &h, iter_id, it->a->ndims, &na, &nb, &nk, err);
  /* Elements that do not fit beside the arrays stream through in chunks
   * (a sparse iterated array; a dense one needs its whole copy). */
  claim = claimed(s, h.grid);
  streamed = rc == 0 && it->a->sparse &&
             !fits_whole(s, iter_id, it->a, nel, h.grid->ngroups, nk,
                         claim ? claim_bytes(h.grid) : 0);
  claim = claim && !streamed;
  if (streamed)
    orion__exec_carray_of(&h.c->iter, it->a);
  else if (rc == 0)
    rc = upload_block(s, iter_id, it->a, segs, nsegs, mg, &h.c->iter, err);
  h.partials = orion_calloc((size_t)h.grid->ngroups * (size_t)(nk > 0 ? nk : 1),
                            sizeof *h.partials);
  h.accs = orion_calloc((size_t)(nk > 0 ? nk : 1), sizeof *h.accs);
  if (rc == 0 && (h.partials == NULL || h.accs == NULL))
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (i = 0; rc == 0 && i < nk; i++)
    h.accs[i].op = (int32_t)h.acc_of[i]->op;
  /* The grid's order and offsets (and a claimed grid's rows): copied in
   * unless the device buffers hold this grid's from the last block. */
  if (rc == 0 && !streamed)
    forget_if_regrown(&s->order, sizeof(int64_t) * (size_t)nel, &s->dev_grid);
  if (rc == 0 && !streamed)
    forget_if_regrown(&s->goff,
                      sizeof(int64_t) * (size_t)(h.grid->ngroups + 1),
                      &s->dev_grid);
  if (rc == 0 && claim)
    forget_if_regrown(&s->rows, rows_bytes(h.grid), &s->dev_rows);
  if (rc == 0 && !streamed)
    rc = grow(s, &s->order, sizeof(int64_t) * (size_t)nel, "the device grid",
              err);
  if (rc == 0 && !streamed)
    rc = grow(s, &s->goff, sizeof(int64_t) * (size_t)(h.grid->ngroups + 1),
              "the device grid", err);
  if (rc == 0 && !streamed)
    rc = grow(s, &s->scratch,
              ORION_GBODY_SCRATCH(h.grid->ngroups, nk) +
                  (claim ? ORION_GCLAIM_SCRATCH(h.grid->b, h.grid->ngroups) : 0),
              "the device body's scratch", err);
  if (rc == 0 && claim && s->dev_rows != mg->serial) {
    s->dev_rows = 0;
    rc = upload_rows_lists(s, h.grid, err);
    if (rc == 0)
      s->dev_rows = mg->serial;
  }
  if (rc == 0 && !streamed && s->dev_grid != mg->serial) {
    s->dev_grid = 0;
    rc = orion_gpu_h2d(s->g, s->order.d, h.order,
                       sizeof(int64_t) * (size_t)nel, err);
    if (rc == 0)
      rc = orion_gpu_h2d(s->g, s->goff.d, h.grid->group_off,
                         sizeof(int64_t) * (size_t)(h.grid->ngroups + 1), err);
    if (rc == 0)
      s->dev_grid = mg->serial;
  }
  if (rc != 0)
    goto done;
  h.c->abi = ORION_GBODY_ABI;
  h.c->executor = ex->id;
  h.c->arrays = h.arrays;
  h.c->consts = h.consts;
  h.c->naccs = nk;
  h.c->accs = h.accs;
  h.c->bufs = h.bufs;
  h.c->nbufs = nb;
  /* math.random: the stream math.randomseed(n) starts in the interpreter,
   * as the CPU body's (executor/exec_cbody.c); the groups' from it. */
  orion_luarand_seed(
      &rng,
      (int64_t)orion_seed_mix(seed, (uint64_t)ex->loop_id, (uint64_t)block), 0);
  memcpy(h.c->rng, rng.s, sizeof h.c->rng);
  h.c->group0 = 0;
  h.c->d_order = s->order.d;
  h.c->d_group_off = s->goff.d;
  h.c->h_step_off = h.grid->step_off;
  h.c->ngroups = h.grid->ngroups;
  h.c->nsteps = h.grid->nsteps;
  h.c->h_partials = h.partials;
  h.c->d_scratch = s->scratch.d;
  h.c->stream = orion_gpu_stream(s->g);
  h.c->timeout_s = 0;
  h.c->cur = -1;
  if (claim) {
    const int64_t *rl = s->rows.d;
    h.c->claim_b = h.grid->b;
    h.c->d_row_off = rl;
    h.c->d_row_group = rl + h.grid->b + 1;
    h.c->d_row_col = rl + h.grid->b + 1 + h.grid->ngroups;
  }
  t[2] = orion_now();
  if (streamed) {
    rc = run_streamed(s, &h, iter_id, it->a, nk,
                      s->writes == NULL || s->writes(-1), &r, err);
    if (rc != 0) {
      orion_error ign;
      orion_error_clear(&ign);
      fold_partials(&h, nk, h.grid->ngroups);
      (void)merge_buffers(s, &h, nb, ex->id, &ign);
      goto done;
    }
  } else {
    r = s->fn(h.c);
  }
  t[3] = orion_now();
  /* Partials come back also on error, as from the CPU body. */
  fold_partials(&h, nk, h.grid->ngroups);
  if (r != 0 && (h.c->cur < 0 || h.c->cur >= it->a->nnz)) {
    /* No element to blame: the device itself (a launch, a copy, the
     * timeout). */
    rc = orion_error_set(err, ORION_EBODY,
                         "executor %d: the device body failed: %s", ex->id,
                         h.c->err);
  } else if (r != 0) {
    char key[256];
    orion__exec_key_string(it->a, h.c->cur, key, sizeof key);
    rc = orion_error_set(err, ORION_EBODY, "executor %d, element %s: %s",
                         ex->id, key, h.c->err);
  }
  /* What the body wrote comes back (also after an error: the elements
   * before it ran, as on the CPU), the buffers' sums too. */
  {
    orion_error derr;
    orion_error_clear(&derr);
    if (merge_buffers(s, &h, nb, ex->id, &derr) != 0 && rc == 0)
      rc = orion_error_set(err, derr.code, "%s", derr.msg);
  }
  for (i = 0; i < na; i++)
    if (s->writes == NULL || s->writes((int)i)) {
      orion_error derr;
      orion_error_clear(&derr);
      if (download(s, h.arr_of[i]->id, h.arr_of[i]->a, h.rlo[i], h.rn[i],
                   &derr) != 0 &&
          rc == 0)
        rc = orion_error_set(err, derr.code, "%s", derr.msg);
    }
  if (!streamed && (s->writes == NULL || s->writes(-1))) {
    orion_error derr;
    orion_error_clear(&derr);
    if (download_block(s, iter_id, it->a, segs, nsegs, &derr) != 0 &&
        rc == 0)
      rc = orion_error_set(err, derr.code, "%s", derr.msg);
  }
  if (rc == 0)
    s->blocks++;
  if (getenv("ORION_GPU_PROFILE") != NULL) {
    /* Where a block's time goes, for bench/gpu.sh's breakdown. */
    char gd[160];
    orion_gpugrid_describe(h.grid, s->grid.kind, gd, sizeof gd);
    fprintf(stderr,
            "orion: executor %d: GPU block of %lld elements (%s%s%s): grid "
            "%.2f ms, copies in %.2f ms, body %.2f ms, copies out %.2f ms\n",
            ex->id, (long long)nel, gd,
            streamed ? ", streamed" : claim ? ", claimed" : "",
            hit ? ", kept" : "",
            (t[1] - t[0]) * 1e3, (t[2] - t[1]) * 1e3, (t[3] - t[2]) * 1e3,
            (orion_now() - t[3]) * 1e3);
  }
done:
  run_host_free(&h);
  return rc;
}
