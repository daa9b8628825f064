/* orion-executor running a loop, on the compute thread: LOAD_BODY binds
 * the loop's arrays, accumulators and buffers in the executor core
 * (lua/exec.h), loads the shipped body (and builds or finds its compiled
 * form) and sets the sharded arrays up; each RUN_BLOCK installs the data
 * the driver sent, runs the body over the block's segments and answers a
 * BLOCK_DONE with the elements the block changed; LOOP_END flushes the
 * buffers and answers LOOP_DONE with the accumulators and the kept rows.
 * Each payload is read or written by its own small function below.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "drivers/exec_state.h"
#include "dsm/array.h"
#include "dsm/proto.h"
#include "dsm/types.h"
#include "dsm/wire.h"
#include "lua/exec.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/cbody.h"
#include "util/ccomp.h"
#include "util/clock.h"
#include "util/error.h"

/* ---- LOAD_BODY ---------------------------------------------------------- */

static int push_id(int64_t **v, int *n, int64_t id) {
  int64_t *nv = orion_realloc(*v, sizeof *nv * (size_t)(*n + 1));
  if (nv == NULL)
    return ORION_ENOMEM;
  nv[(*n)++] = id;
  *v = nv;
  return 0;
}

static int push_buf(exec_state *x, int64_t id, int64_t target) {
  int64_t *nt =
      orion_realloc(x->buf_targets, sizeof *nt * (size_t)(x->nbufs + 1));
  if (nt == NULL)
    return ORION_ENOMEM;
  x->buf_targets = nt;
  nt[x->nbufs] = target;
  return push_id(&x->bufs, &x->nbufs, id);
}

static void unbind_loop(exec_state *x) {
  int i;
  for (i = 0; i < x->nbufs; i++)
    orion_exec_unbind_buffer(x->ex, x->bufs[i]);
  for (i = 0; i < x->nbound; i++)
    orion_exec_unbind_array(x->ex, x->bound[i]);
  x->nbufs = x->nbound = x->naccs = 0;
}

/* LOAD_BODY's array entry: i64 id, u64 type, u64 sparse, u64 ndims, i64
 * dims[ndims] (r marked bad when malformed). */
typedef struct array_decl {
  int64_t id, type, sparse, ndims, dims[ORION_MAX_DIMS];
} array_decl;

static void read_array_decl(orion_reader *r, array_decl *d) {
  int k;
  d->id = orion_pr_i64(r);
  d->type = orion_pr_i64(r);
  d->sparse = orion_pr_i64(r);
  d->ndims = orion_pr_i64(r);
  if (d->ndims < 1 || d->ndims > ORION_MAX_DIMS || d->type < 0 ||
      d->type > ORION_I64) {
    r->bad = 1;
    return;
  }
  for (k = 0; k < d->ndims; k++)
    d->dims[k] = orion_pr_i64(r);
}

/* Binds array d for the loop: a placeholder for the iterated sparse array
 * (its blocks come with RUN_BLOCK), our replica for a dense one.  Returns
 * 0, a bind error, or (*fatal set) the failure to make the array. */
static int bind_array_decl(exec_state *x, const array_decl *d, int *fatal,
                           orion_error *err) {
  orion_array *a;
  int rc;
  if (d->sparse) {
    /* A placeholder is bound in case the body names it. */
    x->iter_sparse = 1;
    x->iter_type = (orion_type)d->type;
    x->iter_ndims = (int)d->ndims;
    memcpy(x->iter_dims, d->dims, sizeof(int64_t) * (size_t)d->ndims);
    a = orion_array_new_sparse((int)d->ndims, (orion_type)d->type, err);
    if (a == NULL) {
      *fatal = 1;
      return err->code;
    }
    memcpy(a->dims, d->dims, sizeof(int64_t) * (size_t)d->ndims);
    rc = orion_exec_bind_array(x->ex, d->id, a);
    orion_array_release(a);
  } else {
    a = orion__replica_for(x, d->id, (orion_type)d->type, (int)d->ndims,
                           d->dims, err);
    if (a == NULL) {
      *fatal = 1;
      return err->code;
    }
    rc = orion_exec_bind_array(x->ex, d->id, a);
  }
  return rc == 0 ? push_id(&x->bound, &x->nbound, d->id) : rc;
}

/* LOAD_BODY's buffer entry: i64 id, str name, i64 target, u64 op, str
 * apply_blob, i64 flush. */
typedef struct buffer_decl {
  int64_t id, target, op, flush;
  const char *name, *apply;
  size_t nlen, alen;
} buffer_decl;

static void read_buffer_decl(orion_reader *r, buffer_decl *d) {
  d->id = orion_pr_i64(r);
  d->name = orion_pr_bytes(r, &d->nlen);
  d->target = orion_pr_i64(r);
  d->op = orion_pr_i64(r);
  d->apply = orion_pr_bytes(r, &d->alen);
  d->flush = orion_pr_i64(r);
}

/* LOAD_BODY's compiled body: u64 chash, str csrc, str cflags, u64
 * required, u64 nslots, then per slot u64 kind, i64 id, u64 isint, i64
 * ival, f64 fval.  slots is new (orion_free it). */
typedef struct compiled_decl {
  uint64_t hash;
  const char *src, *flags;
  size_t len, flen;
  int64_t required;
  orion_cslot *slots;
  int nslots;
} compiled_decl;

static int read_compiled_decl(orion_reader *r, compiled_decl *c,
                              orion_error *err) {
  int64_t k, cnt;
  memset(c, 0, sizeof *c);
  c->hash = (uint64_t)orion_pr_i64(r);
  c->src = orion_pr_bytes(r, &c->len);
  c->flags = orion_pr_bytes(r, &c->flen);
  c->required = orion_pr_i64(r);
  cnt = orion_pr_count(r, 40);
  if (!r->bad && cnt > 0) {
    c->slots = orion_calloc((size_t)cnt, sizeof *c->slots);
    if (c->slots == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (k = 0; k < cnt && !r->bad; k++) {
    c->slots[k].kind = (orion_cslot_kind)orion_pr_i64(r);
    c->slots[k].id = orion_pr_i64(r);
    c->slots[k].isint = (int)orion_pr_i64(r);
    c->slots[k].ival = orion_pr_i64(r);
    c->slots[k].fval = orion_pr_f64(r);
  }
  c->nslots = (int)cnt;
  return 0;
}

/* Builds (or finds in the cache) the compiled body the driver sent and
 * makes the executor run it.  A failure is an error for tier "c"; under
 * "auto" the loop runs interpreted, which gives the same results. */
static int load_compiled(exec_state *x, const compiled_decl *c,
                         orion_error *err) {
  char mode[512];
  orion_error cerr;
  const int *abi;
  int i;
  snprintf(mode, sizeof mode, "%.*s", (int)(c->flen < 511 ? c->flen : 511),
           c->flags != NULL ? c->flags : "");
  orion_error_clear(&cerr);
  for (i = 0; i < x->nbodies; i++)
    if (x->bodies[i].hash == c->hash) {
      x->cobj = x->bodies[i].obj; /* built for an earlier run */
      if (x->cobj == NULL)
        orion_error_set(&cerr, ORION_ECOMPILE, "it failed to build before");
      goto loaded;
    }
  if (c->len == 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: the driver sent no source for a "
                           "compiled body this executor never built",
                           x->id);
  if (orion_cobj_build(c->src, c->len, mode, 0, &x->cobj, NULL, &cerr) == 0 &&
      ((abi = orion_cobj_sym(x->cobj, ORION_CBODY_ABI_SYM)) == NULL ||
       *abi != ORION_CBODY_ABI ||
       orion_cobj_sym(x->cobj, ORION_CBODY_FN) == NULL)) {
    orion_error_set(&cerr, ORION_ECOMPILE,
                    "%s lacks the expected entry "
                    "points",
                    orion_cobj_path(x->cobj));
    orion_cobj_free(x->cobj);
    x->cobj = NULL;
  }
  if (x->nbodies == 64) { /* forget the oldest */
    orion_cobj_free(x->bodies[0].obj);
    memmove(&x->bodies[0], &x->bodies[1], sizeof x->bodies[0] * 63);
    x->nbodies--;
  }
  x->bodies[x->nbodies].hash = c->hash;
  x->bodies[x->nbodies].obj = x->cobj;
  x->nbodies++;
loaded:
  if (x->cobj == NULL) {
    if (c->required)
      return orion_error_set(err, ORION_ECOMPILE,
                             "executor %d: tier \"c\": compiling the body "
                             "failed: %s",
                             x->id, cerr.msg);
    fprintf(stderr,
            "orion-executor %d: note: compiling the body failed (%s); it "
            "runs in the Lua interpreter here\n",
            x->id, cerr.msg);
    return 0;
  }
  return orion_exec_set_compiled(
      x->ex, (orion_cbody_fn)orion_cobj_sym(x->cobj, ORION_CBODY_FN), c->slots,
      c->nslots);
}

/* LOAD_BODY (dsm/proto.h): i64 loop, str blob, i64 iter, the arrays, the
 * accumulators (i64 id, u64 op), the buffers, i64 run, the compiled body,
 * the shards. */
static int load_body(exec_state *x, const char *p, size_t n, orion_error *err) {
  orion_reader r;
  const char *blob;
  size_t blen;
  int64_t loop, k, cnt;
  compiled_decl cd;
  int rc = 0, fatal = 0;
  unbind_loop(x);
  x->failed = 0;
  x->nkept = 0;
  orion_reader_init(&r, p, n);
  loop = orion_pr_i64(&r);
  blob = orion_pr_bytes(&r, &blen);
  x->iter_id = orion_pr_i64(&r);
  x->iter_sparse = 0;
  cnt = orion_pr_count(&r, 32);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    array_decl ad;
    read_array_decl(&r, &ad);
    if (r.bad)
      break;
    rc = bind_array_decl(x, &ad, &fatal, err);
    if (fatal)
      return rc;
  }
  cnt = orion_pr_count(&r, 16);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    int64_t id = orion_pr_i64(&r), op = orion_pr_i64(&r);
    rc = orion_exec_bind_acc(x->ex, id, (orion_acc_op)op);
    if (rc == 0)
      rc = push_id(&x->accs, &x->naccs, id);
  }
  cnt = orion_pr_count(&r, 48);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    buffer_decl bd;
    char nm[64];
    read_buffer_decl(&r, &bd);
    if (r.bad)
      break;
    snprintf(nm, sizeof nm, "%.*s", (int)(bd.nlen < 63 ? bd.nlen : 63),
             bd.name != NULL ? bd.name : "");
    rc = orion_exec_bind_buffer(
        x->ex, bd.id, nm, bd.target, (orion_apply_op)bd.op,
        bd.alen > 0 ? bd.apply : NULL, bd.alen, bd.flush, err);
    if (rc == 0)
      rc = push_buf(x, bd.id, bd.target);
  }
  x->run = orion_pr_i64(&r);
  if (read_compiled_decl(&r, &cd, err) != 0)
    return err->code;
  cnt = orion_pr_count(&r, 24);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++)
    rc = orion__shard_setup(x, &r, x->run, err);
  if (rc == 0 && !r.bad)
    orion__shards_retire(x, x->run);
  if (r.bad || r.left != 0) {
    orion_free(cd.slots);
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: malformed LOAD_BODY frame", x->id);
  }
  if (rc != 0) {
    orion_free(cd.slots);
    if (err->msg[0] == '\0')
      orion_error_set(err, rc, "executor %d: cannot bind the loop: %s", x->id,
                      orion_strerror(rc));
    return rc;
  }
  rc = orion_exec_load(x->ex, loop, blob, blen, err);
  x->cobj = NULL;
  if (rc == 0 && cd.hash != 0)
    rc = load_compiled(x, &cd, err);
  orion_free(cd.slots);
  return rc;
}

int orion__run_load_body(exec_state *x, job *j) {
  orion_error err;
  orion_error_clear(&err);
  if (load_body(x, j->payload, j->len, &err) != 0) {
    x->failed = 1;
    orion__exec_post_error(x, -1, err.msg);
  }
  orion__shard_apply_early(x);
  return 0;
}

/* ---- RUN_BLOCK ---------------------------------------------------------- */

/* A range the block may write directly, with its contents before. */
typedef struct watch {
  orion_array *a;
  int64_t id, first, count;
  char *before;
} watch;

/* Whether two elements of esz bytes are the same bits. */
static int elem_same(const char *x, const char *y, size_t esz) {
  if (esz == 4) {
    uint32_t a, c;
    memcpy(&a, x, 4);
    memcpy(&c, y, 4);
    return a == c;
  }
  if (esz == 8) {
    uint64_t a, c;
    memcpy(&a, x, 8);
    memcpy(&c, y, 8);
    return a == c;
  }
  return memcmp(x, y, esz) == 0;
}

/* Appends runs of the elements of w that differ from the snapshot.  Only
 * changed elements are sent: an unchanged element between two changed
 * ones may be another executor's to write in this clock, so sending our
 * stale copy of it would undo that write. */
static int64_t emit_changes(orion_buf *b, const watch *w) {
  enum { STRIDE = 64 }; /* elements skipped at once while nothing differs */
  size_t esz = orion_type_size(w->a->type);
  const char *now = (const char *)w->a->values + (size_t)w->first * esz;
  int64_t i = 0, runs = 0;
  while (i < w->count) {
    int64_t j;
    if (i + STRIDE <= w->count &&
        memcmp(now + (size_t)i * esz, w->before + (size_t)i * esz,
               STRIDE * esz) == 0) {
      i += STRIDE;
      continue;
    }
    if (elem_same(now + (size_t)i * esz, w->before + (size_t)i * esz, esz)) {
      i++;
      continue;
    }
    j = i + 1;
    while (j < w->count &&
           !elem_same(now + (size_t)j * esz, w->before + (size_t)j * esz, esz))
      j++;
    orion__elems_put(b, w->id, w->first + i, j - i, now + (size_t)i * esz, esz);
    runs++;
    i = j;
  }
  return runs;
}

/* RUN_BLOCK's head: i64 block, u64 seed, i64 nblocks, the segments (u64
 * n, then i64 lo, i64 hi each), u64 has_elems and, when 1, the sparse
 * block's elements (u64 n, bytes keys, bytes values). */
typedef struct block_head {
  int64_t block, nblocks, nsegs, ne;
  uint64_t seed;
  const char *segs, *keys, *vals;
  size_t kl, vl;
  int has_elems;
} block_head;

static void read_block_head(orion_reader *r, block_head *h) {
  memset(h, 0, sizeof *h);
  h->block = orion_pr_i64(r);
  h->seed = (uint64_t)orion_pr_i64(r);
  h->nblocks = orion_pr_i64(r);
  h->nsegs = orion_pr_count(r, 16);
  if (orion_reader_bytes(r, (size_t)h->nsegs * 16, &h->segs) != 0)
    r->bad = 1;
  h->has_elems = orion_pr_i64(r) == 1 && !r->bad;
  if (h->has_elems) {
    h->ne = orion_pr_i64(r);
    h->keys = orion_pr_bytes(r, &h->kl);
    h->vals = orion_pr_bytes(r, &h->vl);
  }
}

/* A range of RUN_BLOCK's watch or keep list: i64 array, i64 first, i64
 * count.  Returns its replica, or NULL (r marked bad) when the range is
 * malformed or does not lie in the replica (or holds fewer than `least`
 * elements). */
static replica *read_range(exec_state *x, orion_reader *r, int64_t *id,
                           int64_t *first, int64_t *count, int64_t least) {
  replica *rp;
  *id = orion_pr_i64(r);
  *first = orion_pr_i64(r);
  *count = orion_pr_i64(r);
  rp = orion__replica_find(x, *id);
  if (r->bad || rp == NULL || *first < 0 || *count < least ||
      *first > rp->a->nnz || *count > rp->a->nnz - *first) {
    r->bad = 1;
    return NULL;
  }
  return rp;
}

/* Keeps a deferred array's range until LOOP_DONE. */
static int keep_range(exec_state *x, int64_t id, int64_t first, int64_t count) {
  if (x->nkept == x->capkept) {
    int cap = x->capkept > 0 ? 2 * x->capkept : 16;
    void *nk = orion_realloc(x->kept, sizeof *x->kept * (size_t)cap);
    if (nk == NULL)
      return ORION_ENOMEM;
    x->kept = nk;
    x->capkept = cap;
  }
  x->kept[x->nkept][0] = id;
  x->kept[x->nkept][1] = first;
  x->kept[x->nkept][2] = count;
  x->nkept++;
  return 0;
}

/* BLOCK_DONE: i64 block, f64 seconds, u64 has_values [, bytes values of
 * the sparse block when the body changed them], u64 nruns, the runs of
 * changed elements of the watched ranges.  Returns orion_wire_end's
 * code. */
static int write_block_done(orion_buf *b, int64_t block, double seconds,
                            const orion_array *it, const char *before_vals,
                            const watch *w, int64_t nwatch) {
  size_t at = orion_wire_begin(b, ORION_WIRE_BLOCK_DONE), nruns_at;
  int64_t k, nruns = 0;
  orion_pw_i64(b, block);
  orion_pw_f64(b, seconds);
  if (before_vals != NULL &&
      memcmp(before_vals, it->values,
             (size_t)it->nnz * orion_type_size(it->type)) != 0) {
    orion_buf_u64(b, 1);
    orion_pw_bytes(b, it->values, (size_t)it->nnz * orion_type_size(it->type));
  } else {
    orion_buf_u64(b, 0);
  }
  nruns_at = b->len;
  orion_buf_u64(b, 0);
  for (k = 0; k < nwatch; k++)
    nruns += emit_changes(b, &w[k]);
  orion__patch_u64(b, nruns_at, (uint64_t)nruns);
  return orion_wire_end(b, at);
}

static int run_block(exec_state *x, const char *p, size_t n, orion_error *err) {
  orion_reader r;
  block_head h;
  int64_t k, cnt, nwatch = 0;
  orion_array *it = NULL;
  char *before_vals = NULL;
  watch *w = NULL;
  int rc = 0;
  double t0 = orion_now();
  orion_buf b;

  orion_reader_init(&r, p, n);
  read_block_head(&r, &h);
  if (h.has_elems) { /* the sparse block's elements */
    if (r.bad || !x->iter_sparse || h.ne < 0 ||
        h.kl != (size_t)h.ne * (size_t)x->iter_ndims * 8 ||
        h.vl != (size_t)h.ne * orion_type_size(x->iter_type))
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed block elements", x->id);
    if (orion__block_store(x, h.block, h.ne, h.keys, h.vals, err) == NULL)
      return err->code;
  }
  cnt = orion_pr_count(&r, 32);
  for (k = 0; k < cnt && !r.bad; k++) { /* data for the array copies */
    elem_run er;
    replica *rp;
    orion__elems_get(&r, &er);
    rp = orion__replica_find(x, er.id);
    if (r.bad || rp == NULL)
      break;
    if (orion__elems_apply(rp->a, &er) != 0) {
      r.bad = 1;
      break;
    }
  }
  cnt = orion_pr_count(&r, 24);
  if (!r.bad && cnt > 0) {
    w = orion_calloc((size_t)cnt, sizeof *w);
    if (w == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (k = 0; k < cnt && !r.bad; k++) { /* ranges the block may write */
    watch *v = &w[nwatch];
    replica *rp = read_range(x, &r, &v->id, &v->first, &v->count, 0);
    size_t esz;
    if (rp == NULL)
      break;
    v->a = rp->a;
    esz = orion_type_size(rp->a->type);
    v->before = orion_malloc((size_t)v->count * esz + 1);
    if (v->before == NULL) {
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      break;
    }
    memcpy(v->before, (char *)rp->a->values + (size_t)v->first * esz,
           (size_t)v->count * esz);
    nwatch++;
  }
  cnt = r.bad || rc != 0 ? 0 : orion_pr_count(&r, 24);
  for (k = 0; k < cnt && !r.bad; k++) { /* ranges kept until LOOP_DONE */
    int64_t id, first, count;
    if (read_range(x, &r, &id, &first, &count, 1) == NULL)
      break;
    if (keep_range(x, id, first, count) != 0) {
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      break;
    }
  }
  if (rc == 0 && (r.bad || r.left != 0))
    rc = orion_error_set(err, ORION_EPARSE,
                         "executor %d: malformed RUN_BLOCK frame", x->id);
  if (rc == 0 && x->iter_sparse) {
    blockcopy *bc = orion__block_find(x, x->iter_id, h.block);
    if (bc == NULL)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: block %lld was never sent", x->id,
                           (long long)h.block);
    else
      it = bc->a;
  } else if (rc == 0) {
    replica *rp = orion__replica_find(x, x->iter_id);
    it = rp != NULL ? rp->a : NULL;
    if (it == NULL)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: the iterated array is not bound",
                           x->id);
  }
  if (rc == 0 && x->iter_sparse) {
    size_t vl = (size_t)it->nnz * orion_type_size(it->type);
    rc = orion_exec_bind_array(x->ex, x->iter_id, it);
    before_vals = orion_malloc(vl + 1);
    if (before_vals == NULL)
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    else
      memcpy(before_vals, it->values, vl);
  }
  if (rc == 0)
    orion__shard_fetch(x);
  for (k = 0; k < h.nsegs && rc == 0; k++) {
    int64_t lo, hi;
    memcpy(&lo, h.segs + k * 16, 8);
    memcpy(&hi, h.segs + k * 16 + 8, 8);
    rc = orion_exec_run(x->ex, x->iter_id, lo, hi, h.seed,
                        h.block + k * h.nblocks, err);
  }
  if (rc == 0)
    rc = orion_exec_flush(x->ex, 0, err);

  if (rc == 0) {
    orion_buf_init(&b);
    if (write_block_done(&b, h.block, orion_now() - t0, it, before_vals, w,
                         nwatch) != 0)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: block %lld changed more data than "
                           "the largest frame holds",
                           x->id, (long long)h.block);
    else
      orion__exec_post(x, &b);
    orion_buf_free(&b);
  }
  for (k = 0; k < nwatch; k++)
    orion_free(w[k].before);
  orion_free(w);
  orion_free(before_vals);
  return rc;
}

int orion__run_block(exec_state *x, job *j) {
  orion_error err;
  orion_error_clear(&err);
  if (!x->failed && run_block(x, j->payload, j->len, &err) != 0) {
    int64_t block = -1;
    if (j->len >= 8)
      memcpy(&block, j->payload, 8); /* its first field */
    x->failed = 1;
    orion__exec_post_error(x, block, err.msg);
  }
  return 0;
}

/* ---- LOOP_END ----------------------------------------------------------- */

/* LOOP_DONE: u64 nacc, then per accumulator i64 id, u64 has, u64 isint,
 * i64 i, f64 d; u64 bytes sent to peers, u64 buffered writes applied to
 * own shards; u64 nruns, then the kept ranges as they are now.  Takes the
 * partials and the counters; returns orion_wire_end's code. */
static int write_loop_done(exec_state *x, orion_buf *b) {
  size_t at = orion_wire_begin(b, ORION_WIRE_LOOP_DONE);
  int i;
  orion_buf_u64(b, (uint64_t)x->naccs);
  for (i = 0; i < x->naccs; i++) {
    orion_accval v;
    memset(&v, 0, sizeof v);
    orion_exec_take_acc(x->ex, x->accs[i], &v);
    orion_pw_i64(b, x->accs[i]);
    orion_buf_u64(b, (uint64_t)v.has);
    orion_buf_u64(b, (uint64_t)v.isint);
    orion_pw_i64(b, (int64_t)v.i);
    orion_pw_f64(b, (double)v.d);
  }
  pthread_mutex_lock(&x->mu);
  orion_buf_u64(b, x->peer_bytes);
  orion_buf_u64(b, x->shard_items);
  x->peer_bytes = x->shard_items = 0;
  pthread_mutex_unlock(&x->mu);
  /* The deferred arrays' rows, as they are now: only our blocks wrote them
   * during the run (sent even after a failure, so that the driver's copy
   * matches ours again). */
  orion_buf_u64(b, (uint64_t)x->nkept);
  for (i = 0; i < x->nkept; i++) {
    replica *rp = orion__replica_find(x, x->kept[i][0]);
    size_t esz = rp != NULL ? orion_type_size(rp->a->type) : 0;
    orion__elems_put(b, x->kept[i][0], x->kept[i][1], x->kept[i][2],
                     rp != NULL ? (const char *)rp->a->values +
                                      (size_t)x->kept[i][1] * esz
                                : "",
                     esz);
  }
  x->nkept = 0;
  return orion_wire_end(b, at);
}

/* LOOP_END: u64 abort (1: drop pending writes). */
int orion__run_loop_end(exec_state *x, job *j) {
  orion_reader r;
  orion_error err;
  orion_buf b;
  int abort_loop;
  orion_reader_init(&r, j->payload, j->len);
  abort_loop = orion_pr_i64(&r) != 0 || x->failed;
  orion_error_clear(&err);
  if (!abort_loop && orion_exec_flush(x->ex, 1, &err) != 0)
    orion__exec_post_error(x, -1, err.msg);
  orion_buf_init(&b);
  if (write_loop_done(x, &b) != 0)
    orion__exec_die(x,
                    "executor %d: the loop's kept rows exceed the "
                    "largest frame",
                    x->id);
  /* The loop stays bound until the next LOAD_BODY: peers may still send
   * buffered writes for our shards.  The driver may read the shards once
   * every executor is done, so LOOP_DONE waits until the owners applied
   * our buffered writes. */
  pthread_mutex_lock(&x->mu);
  if (x->outstanding > 0) {
    orion_buf_free(&x->done_frame);
    x->done_frame = b;
    x->done_held = 1;
    orion_buf_init(&b);
  }
  pthread_mutex_unlock(&x->mu);
  if (b.len > 0)
    orion__exec_post(x, &b);
  orion_buf_free(&b);
  return 0;
}
