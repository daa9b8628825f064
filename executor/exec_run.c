/* orion-executor running a loop, on the compute thread: LOAD_BODY binds
 * the loop's arrays, accumulators and buffers in the executor core
 * (executor/exec.h), loads the shipped body (and builds or finds its compiled
 * form) and sets the sharded arrays up; each RUN_BLOCK installs the data
 * the driver sent and the resident rows from peers (executor/exec_rows.c),
 * runs the body over the block's segments, sends the resident rows on and
 * answers a BLOCK_DONE with the elements the block changed; LOOP_END
 * flushes the buffers and answers LOOP_DONE with the accumulators.
 * Every payload is decoded and encoded with dsm/msg.h; the bulk data
 * stays in place (views into the frame, runs pointing into our copies).
 */
#include "config.h"

#include <errno.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "executor/exec_state.h"
#include "dsm/array.h"
#include "dsm/key.h"
#include "dsm/msg.h"
#include "dsm/types.h"
#include "executor/exec.h"
#include "executor/exec_keys.h"
#include "executor/exec_gbody.h"
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

/* Binds array d for the loop: a placeholder for a sparse array (the
 * iterated one's blocks come with RUN_BLOCK), our replica for a dense one.
 * Returns 0, a bind error, or (*fatal set) the failure to make the array. */
static int bind_array_decl(exec_state *x, const orion_msg_array_desc *d,
                           int *fatal, orion_error *err) {
  orion_array *a;
  int rc;
  if (d->sparse) {
    /* A placeholder is bound in case the body names it; indexing it then
     * fails with the same message as with --executors 0 (executor/exec.c).
     * Only the iterated array's shape describes the blocks to come: a
     * sparse array the body merely names must not take its place, or the
     * dense iterated array's blocks are looked for among sparse ones. */
    if (d->id == x->iter_id) {
      x->iter_sparse = 1;
      x->iter_ragged = d->ragged;
      x->iter_type = (orion_type)d->type;
      x->iter_ndims = d->ndims;
      memcpy(x->iter_dims, d->dims, sizeof(int64_t) * (size_t)d->ndims);
    }
    a = orion_array_new_sparse(d->ndims, (orion_type)d->type, err);
    if (a == NULL) {
      *fatal = 1;
      return err->code;
    }
    memcpy(a->dims, d->dims, sizeof(int64_t) * (size_t)d->ndims);
    rc = orion_exec_bind_array(x->ex, d->id, a);
    orion_array_release(a);
  } else {
    a = orion__replica_for(x, d->id, (orion_type)d->type, d->ndims, d->dims,
                           err);
    if (a == NULL) {
      *fatal = 1;
      return err->code;
    }
    rc = orion_exec_bind_array(x->ex, d->id, a);
  }
  return rc == 0 ? push_id(&x->bound, &x->nbound, d->id) : rc;
}

/* Binds buffer d for the loop. */
static int bind_buffer_decl(exec_state *x, const orion_msg_buf_desc *d,
                            orion_error *err) {
  char nm[64];
  int rc;
  snprintf(nm, sizeof nm, "%.*s", (int)(d->name_len < 63 ? d->name_len : 63),
           d->name != NULL ? d->name : "");
  pthread_mutex_lock(&x->mu);
  orion_exec_set_executors(x->ex, x->npeers);
  pthread_mutex_unlock(&x->mu);
  rc = orion_exec_bind_buffer(x->ex, d->id, nm, d->target,
                              (orion_apply_op)d->op,
                              d->apply_len > 0 ? d->apply : NULL, d->apply_len,
                              d->flush, err);
  return rc == 0 ? push_buf(x, d->id, d->target) : rc;
}

/* Builds (or finds in the cache) the compiled body the driver sent (m's
 * chash, csrc, cflags, required and slots) and makes the executor run it.
 * A failure is an error for tier "c"; under "auto" the loop runs
 * interpreted, which gives the same results. */
static int load_compiled(exec_state *x, const orion_msg_load_body *m,
                         orion_error *err) {
  char mode[512];
  orion_error cerr;
  const int *abi;
  snprintf(mode, sizeof mode, "%.*s",
           (int)(m->cflags_len < 511 ? m->cflags_len : 511),
           m->cflags != NULL ? m->cflags : "");
  orion_error_clear(&cerr);
  if (orion__bodies_find(&x->bodies, m->chash, &x->cobj)) {
    /* built for an earlier run */
    if (x->cobj == NULL)
      orion_error_set(&cerr, ORION_ECOMPILE, "it failed to build before");
    goto loaded;
  }
  if (m->csrc_len == 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: the driver sent no source for a "
                           "compiled body this executor never built",
                           x->id);
  if (orion_cobj_build(m->csrc, m->csrc_len, mode, 0, &x->cobj, NULL, &cerr) ==
          0 &&
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
  orion__bodies_keep(&x->bodies, m->chash, x->cobj);
loaded:
  if (x->cobj == NULL) {
    if (m->required)
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
      x->ex, (orion_cbody_fn)orion_cobj_sym(x->cobj, ORION_CBODY_FN), m->slots,
      (int)m->nslots);
}

/* The loop's error for a payload the codec refused (rc): out of memory,
 * or "executor E: malformed WHAT frame[: the field the decoder named in
 * err]". */
static int refused(const exec_state *x, int rc, const char *what,
                   orion_error *err) {
  char why[sizeof err->msg];
  size_t n = strlen(what);
  if (rc == ORION_ENOMEM)
    return orion_error_set(err, rc, "out of memory");
  snprintf(why, sizeof why, "%s", err->msg);
  if (strncmp(why, what, n) == 0 && strncmp(why + n, " payload: ", 10) == 0)
    memmove(why, why + n + 10, strlen(why + n + 10) + 1);
  return orion_error_set(err, ORION_EPARSE, "executor %d: malformed %s frame%s%s",
                         x->id, what, why[0] != '\0' ? ": " : "", why);
}

/* Binds m's arrays, accumulators and buffers, and sets its shards up. */
static int bind_loop(exec_state *x, const orion_msg_load_body *m,
                     orion_error *err) {
  int64_t k;
  int rc = 0, fatal = 0;
  for (k = 0; k < m->narrays && rc == 0; k++) {
    rc = bind_array_decl(x, &m->arrays[k], &fatal, err);
    if (fatal)
      return rc;
  }
  for (k = 0; k < m->naccs && rc == 0; k++) {
    if (m->accs[k].op < ORION_ACC_SUM || m->accs[k].op > ORION_ACC_MAX)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed LOAD_BODY frame: "
                             "accumulator %lld's operator is %lld",
                             x->id, (long long)m->accs[k].id,
                             (long long)m->accs[k].op);
    rc = orion_exec_bind_acc(x->ex, m->accs[k].id,
                             (orion_acc_op)m->accs[k].op);
    if (rc == 0)
      rc = push_id(&x->accs, &x->naccs, m->accs[k].id);
  }
  {
    int clock = 0;
    for (k = 0; k < m->nbufs && rc == 0; k++) {
      rc = bind_buffer_decl(x, &m->bufs[k], err);
      clock |= ORION_FLUSH_IS_CLOCK(m->bufs[k].flush);
    }
    /* A run with a flush = "clock" buffer: peers' flushes go ahead of
     * queued blocks (executor/exec_dispatch.c). */
    atomic_store(&x->flush_ahead, clock);
  }
  for (k = 0; k < m->ngets && rc == 0; k++) /* resident rows from peers */
    rc = orion__rows_get(x, &m->gets[k], x->run, err);
  for (k = 0; k < m->nshards && rc == 0; k++)
    rc = orion__shard_setup(x, &m->shards[k], x->run, err);
  if (rc == 0)
    orion__shards_retire(x, x->run);
  if (rc != 0 && err->msg[0] == '\0')
    orion_error_set(err, rc, "executor %d: cannot bind the loop: %s", x->id,
                    orion_strerror(rc));
  return rc;
}

/* The runtime guard: marks the arrays the plan does not expect the body
 * to write directly (after binding, before loading the body, whose array
 * proxies copy the marks).  An id not bound here is skipped: the body
 * cannot reach it on this executor (a buffer helper the driver applies). */
static void guard_arrays(exec_state *x, const orion_msg_load_body *m) {
  int64_t k;
  for (k = 0; k < m->nguards; k++) {
    char place[ORION_MSG_GUARD_MAX + 1];
    const orion_msg_guard *g = &m->guards[k];
    snprintf(place, sizeof place, "%.*s", (int)g->placement_len,
             g->placement);
    orion_exec_guard_array(x->ex, g->array, place);
  }
}

/* LOAD_BODY (dsm/msg.h): binds the loop, loads its body and the compiled
 * form of it. */
static int load_body(exec_state *x, const char *p, size_t n, orion_error *err) {
  orion_msg_load_body m;
  int rc;
  unbind_loop(x);
  x->failed = 0;
  x->iter_sparse = 0;
  x->iter_ragged = 0;
  rc = orion_msg_load_body_decode(p, n, &m, err);
  if (rc != 0)
    return refused(x, rc, "LOAD_BODY", err);
  x->iter_id = m.iter;
  x->run = m.run;
  orion__budget_start(x, m.bandwidth_mbps);
  orion_exec_set_timeout(x->ex, m.timeout);
  orion__hold_drop(x); /* a failed run's */
  orion__ryw_drop(x);  /* the last run's flushes are all taken in */
  rc = bind_loop(x, &m, err);
  if (rc == 0)
    guard_arrays(x, &m);
  /* orion-driver --verify: record the keys (after the buffers' apply
   * functions are bound, before the body's proxies are made). */
  if (rc == 0 && orion_exec_record_keys(x->ex, (int)m.verify) != 0)
    rc = orion_error_set(err, ORION_ENOMEM, "executor %d: out of memory",
                         x->id);
  if (rc == 0 && m.blob_chained > 0) { /* its bytes come by BCAST */
    char *body = orion__chain_take_body(x, m.blob_chained, err);
    rc = body == NULL ? err->code : orion_exec_load(x->ex, m.loop, body,
                                                    (size_t)m.blob_chained,
                                                    err);
    orion_free(body);
    x->cobj = NULL;
  } else if (rc == 0) { /* inline, or held here (wire version 22) */
    const char *body;
    size_t len;
    char *owned;
    rc = orion__blobs_resolve(x, &m, &body, &len, &owned, err);
    if (rc == 0)
      rc = orion_exec_load(x->ex, m.loop, body, len, err);
    orion_free(owned);
    x->cobj = NULL;
  }
  if (rc == 0 && m.chash != 0)
    rc = load_compiled(x, &m, err);
  if (rc == 0) { /* the device body (executor/exec_gload.c) */
    char mode[512];
    snprintf(mode, sizeof mode, "%.*s",
             (int)(m.cflags_len < 511 ? m.cflags_len : 511),
             m.cflags != NULL ? m.cflags : "");
    rc = orion__load_gbody(x, &m, mode, err);
  }
  orion_msg_load_body_free(&m);
  return rc;
}

/* The loop thread's CPU seconds so far (0 without its clock). */
static double net_cpu(const exec_state *x) {
  struct timespec ts;
  if (!x->has_net_clock || clock_gettime(x->net_clock, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int orion__run_load_body(exec_state *x, job *j) {
  orion_error err;
  orion_error_clear(&err);
  x->loop_t0 = orion_now(); /* the loop's span here starts */
  x->compute_s = x->wait_s = 0;
  x->cpu_t0 = orion_cpu_now(0);
  x->net_t0 = net_cpu(x);
  x->xfer_cpu_s = x->body_cpu_s = x->body_s = 0;
  x->reordered = 0;
  if (load_body(x, j->payload, j->len, &err) != 0) {
    x->failed = 1;
    orion__exec_post_error(x, -1, err.msg);
  }
  orion__rows_drop_old(x, x->run);
  orion__shard_apply_early(x);
  orion__rows_loaded(x, x->run);
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

/* Adds runs of the elements of w that differ from the snapshot to v
 * (pointing into the array).  Only changed elements are sent: an
 * unchanged element between two changed ones may be another executor's to
 * write in this clock, so sending our stale copy of it would undo that
 * write.  0 or ORION_ENOMEM. */
static int emit_changes(orion_msg_runvec *v, const watch *w) {
  enum { STRIDE = 64 }; /* elements skipped at once while nothing differs */
  size_t esz = orion_type_size(w->a->type);
  const char *now = (const char *)w->a->values + (size_t)w->first * esz;
  int64_t i = 0;
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
    if (orion_msg_runvec_push(v, w->id, w->first + i, j - i,
                              now + (size_t)i * esz,
                              (size_t)(j - i) * esz) != 0)
      return ORION_ENOMEM;
    i = j;
  }
  return 0;
}

/* The replica holding range r of RUN_BLOCK's watch list, or NULL
 * when it is missing, the range does not lie in it, or the range holds
 * fewer than `least` elements. */
static replica *range_replica(exec_state *x, const orion_msg_range *r,
                              int64_t least) {
  replica *rp = orion__replica_find(x, r->array);
  if (rp == NULL || r->count < least || r->first > rp->a->nnz ||
      r->count > rp->a->nnz - r->first)
    return NULL;
  return rp;
}

/* Installs what RUN_BLOCK m sent before its block runs: the sparse
 * block's elements, the runs for our array copies; snapshots the ranges
 * the block may write (*w, *nwatch: free them however this ends). */
static int install_block(exec_state *x, const orion_msg_run_block *m,
                         watch **w, int64_t *nwatch, orion_error *err) {
  int64_t k;
  if (m->has_elems) { /* the sparse block's elements */
    int64_t e;
    int d;
    if (!x->iter_sparse ||
        m->keys_len != (size_t)m->nelems * (size_t)x->iter_ndims * 8 ||
        m->values_len != (size_t)m->nelems * orion_type_size(x->iter_type))
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed block elements", x->id);
    if (orion_key_check_all(x->iter_ndims, x->iter_dims, m->keys, m->nelems,
                            &e, &d) != 0)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed RUN_BLOCK frame: block "
                             "%lld's element %lld has a key outside "
                             "dimension %d (1..%lld)",
                             x->id, (long long)m->block, (long long)e + 1,
                             d + 1, (long long)x->iter_dims[d]);
    if (orion__block_store(x, m->block, m->first, m->nelems, m->keys,
                           m->values, err) == NULL)
      return err->code;
  }
  for (k = 0; k < m->nruns; k++) { /* data for the array copies */
    replica *rp = orion__replica_find(x, m->runs[k].array);
    if (rp == NULL || orion_msg_run_apply(rp->a, &m->runs[k]) != 0)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed RUN_BLOCK frame: run "
                             "%lld (array %lld, elements %lld..+%lld) does "
                             "not fit an array copy here",
                             x->id, (long long)k, (long long)m->runs[k].array,
                             (long long)m->runs[k].first,
                             (long long)m->runs[k].count);
  }
  if (m->nwatch > 0) {
    *w = orion_calloc((size_t)m->nwatch, sizeof **w);
    if (*w == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (k = 0; k < m->nwatch; k++) { /* ranges the block may write */
    watch *v = &(*w)[*nwatch];
    replica *rp = range_replica(x, &m->watch[k], 0);
    size_t esz;
    if (rp == NULL)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed RUN_BLOCK frame: watched "
                             "range %lld (array %lld, elements %lld..+%lld) "
                             "does not fit an array copy here",
                             x->id, (long long)k,
                             (long long)m->watch[k].array,
                             (long long)m->watch[k].first,
                             (long long)m->watch[k].count);
    v->a = rp->a;
    v->id = m->watch[k].array;
    v->first = m->watch[k].first;
    v->count = m->watch[k].count;
    esz = orion_type_size(rp->a->type);
    v->before = orion_malloc((size_t)v->count * esz + 1);
    if (v->before == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    memcpy(v->before, (char *)rp->a->values + (size_t)v->first * esz,
           (size_t)v->count * esz);
    (*nwatch)++;
  }
  return 0;
}

/* The array the block iterates: its sparse block, or our copy of the
 * dense array.  NULL with err set when it is missing. */
static orion_array *iterated(exec_state *x, int64_t block, orion_error *err) {
  if (x->iter_sparse) {
    blockcopy *bc = orion__block_find(x, x->iter_id, block);
    if (bc == NULL)
      orion_error_set(err, ORION_EINVAL,
                      "executor %d: block %lld was never sent", x->id,
                      (long long)block);
    return bc != NULL ? bc->a : NULL;
  } else {
    replica *rp = orion__replica_find(x, x->iter_id);
    if (rp == NULL)
      orion_error_set(err, ORION_EINVAL,
                      "executor %d: the iterated array is not bound", x->id);
    return rp != NULL ? rp->a : NULL;
  }
}

/* Whether the loaded body may store into the iterated array's elements
 * (a returned value): the sparse block's values are then kept before it
 * runs and sent back when they changed.  A compiled body on the CPU says
 * (ORION_CBODY_ITER_SYM); the interpreter's and the device's may. */
static int stores_iter(exec_state *x) {
  const int *st;
  if (x->cobj == NULL || !orion_exec_compiled(x->ex) ||
      orion_exec_gpu_ready(x->ex))
    return 1;
  st = orion_cobj_sym(x->cobj, ORION_CBODY_ITER_SYM);
  return st == NULL || *st != 0;
}

/* BLOCK_DONE (dsm/msg.h): the block's time, the sparse block's values
 * when the body changed them, and the runs of changed elements of the
 * watched ranges, all pointing into our copies, but those of directly
 * written sharded arrays, which go to their owners first
 * (executor/exec_swrite.c).  Returns the encoder's code, or ORION_ENOMEM. */
static int write_block_done(exec_state *x, orion_buf *b, int64_t block,
                            double seconds, double waited, int keep,
                            const orion_array *it,
                            const char *before_vals, const watch *w,
                            int64_t nwatch, orion_error *err) {
  orion_msg_block_done m;
  orion_msg_runvec runs, direct;
  size_t vl = (size_t)it->nnz * orion_type_size(it->type);
  int64_t k;
  int rc = 0;
  memset(&m, 0, sizeof m);
  memset(&runs, 0, sizeof runs);
  memset(&direct, 0, sizeof direct);
  m.block = block;
  m.seconds = seconds;
  m.wait_seconds = waited;
  if (before_vals != NULL && memcmp(before_vals, it->values, vl) != 0) {
    /* Kept: they stay in our copy of the block, the driver asks for them
     * when it needs them (ROWS_PULL). */
    m.kept = keep;
    m.has_values = !keep;
    m.values = keep ? NULL : it->values;
    m.values_len = keep ? 0 : vl;
  }
  /* A directly written sharded array's changes go to its owners. */
  for (k = 0; k < nwatch && rc == 0; k++)
    rc = emit_changes(orion__swrite_is_direct(x, w[k].id) ? &direct : &runs,
                      &w[k]);
  if (rc == 0 && direct.n > 0)
    rc = orion__swrite_send(x, direct.v, direct.n, err);
  orion_msg_runvec_free(&direct);
  m.runs = runs.v;
  m.nruns = runs.n;
  if (rc == 0)
    rc = orion_msg_block_done_encode(b, &m);
  orion_msg_runvec_free(&runs);
  return rc;
}

/* orion-driver --verify: the keys block read and wrote (executor/exec_keys.h),
 * posted before its BLOCK_DONE.  Nothing when not recording. */
static int post_block_keys(exec_state *x, int64_t block, orion_error *err) {
  orion_keyset ks;
  orion_msg_block_keys m;
  orion_buf b;
  int rc = orion_exec_take_keys(x->ex, &ks);
  if (rc != 0)
    return orion_error_set(err, rc, "executor %d: out of memory for block "
                                    "%lld's keys (--verify)",
                           x->id, (long long)block);
  if (ks.n == 0) /* not recording, or nothing touched */
    return 0;
  memset(&m, 0, sizeof m);
  m.block = block;
  m.srcs = ks.srcs;
  m.nsrcs = ks.nsrcs;
  m.ranges = ks.v;
  m.nranges = ks.n;
  orion_buf_init(&b);
  rc = orion_msg_block_keys_encode(&b, &m);
  if (rc == 0)
    orion__exec_post(x, &b);
  else
    rc = orion_error_set(err, rc, "executor %d: block %lld's keys (%lld "
                                  "ranges) do not fit one frame (--verify)",
                         x->id, (long long)block, (long long)ks.n);
  orion_buf_free(&b);
  return rc;
}

/* The whole block at once on the executor's device (executor/exec_gbody.h). */
static int run_on_device(exec_state *x, const orion_msg_run_block *m,
                         orion_error *err) {
  orion_segment *segs =
      orion_malloc(sizeof *segs * (size_t)(m->nsegs > 0 ? m->nsegs : 1));
  int64_t k;
  int rc;
  if (segs == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (k = 0; k < m->nsegs; k++) {
    segs[k].lo = m->segs[k].lo;
    segs[k].hi = m->segs[k].hi;
  }
  rc = orion_exec_run_gpu(x->ex, x->iter_id, segs, m->nsegs, m->seed,
                          m->block, err);
  orion_free(segs);
  return rc;
}

static int run_block(exec_state *x, const char *p, size_t n, int64_t *block,
                     orion_error *err) {
  orion_msg_run_block m;
  int64_t k, nwatch = 0;
  orion_array *it = NULL;
  char *before_vals = NULL;
  watch *w = NULL;
  int rc;
  double t0 = orion_now(), w0 = x->wait_s;
  orion_buf b;

  rc = orion_msg_run_block_decode(p, n, &m, err);
  if (rc != 0)
    return refused(x, rc, "RUN_BLOCK", err);
  *block = m.block;
  /* Sharded arrays first: a directly written one's watched ranges are
   * snapshot after its owners' current rows are in. */
  double xc0 = orion_cpu_now(1); /* the exchange's CPU here (LOOP_DONE) */
  orion__swrite_sync(x);
  orion__shard_fetch(x);
  x->xfer_cpu_s += orion_cpu_now(1) - xc0;
  rc = install_block(x, &m, &w, &nwatch, err);
  if (rc == 0)
    it = iterated(x, m.block, err);
  if (rc == 0 && it == NULL)
    rc = err->code;
  if (rc == 0 && x->iter_sparse)
    it->ragged = x->iter_ragged;
  if (rc == 0 && x->iter_sparse)
    rc = orion_exec_bind_array(x->ex, x->iter_id, it);
  if (rc == 0 && x->iter_sparse && stores_iter(x)) {
    size_t vl = (size_t)it->nnz * orion_type_size(it->type);
    before_vals = orion_malloc(vl + 1);
    if (before_vals == NULL)
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    else
      memcpy(before_vals, it->values, vl);
  }
  xc0 = orion_cpu_now(1);
  for (k = 0; k < m.ngets && rc == 0; k++) /* resident rows from peers */
    rc = orion__rows_get(x, &m.gets[k], x->run, err);
  x->xfer_cpu_s += orion_cpu_now(1) - xc0;
  /* The body's own CPU and wall seconds: the rest of the loop's CPU here
   * is the exchange's (LOOP_DONE). */
  double bc0 = orion_cpu_now(1), bt0 = orion_now();
  if (rc == 0 && orion_exec_gpu_ready(x->ex))
    rc = run_on_device(x, &m, err);
  else
    for (k = 0; k < m.nsegs && rc == 0; k++)
      rc = orion_exec_run(x->ex, x->iter_id, m.segs[k].lo, m.segs[k].hi,
                          m.seed, m.block + k * m.nblocks, err);
  x->body_cpu_s += orion_cpu_now(1) - bc0;
  x->body_s += orion_now() - bt0;
  /* Our stdout is the driver's (dsm/cluster.c).  print flushes each line
   * but io.write leaves its text in stdio's buffer: it reaches the
   * driver's stdout before the driver hears the block is done or failed,
   * not at exit, which an executor the job ends may never reach. */
  fflush(stdout);
  if (rc == 0)
    orion__exec_test_slow(x, orion_now() - t0);
  if (rc == 0) /* the block's accumulator partials, kept apart */
    rc = orion_exec_end_block(x->ex, m.block, err);
  if (rc == 0)
    rc = post_block_keys(x, m.block, err);
  xc0 = orion_cpu_now(1);
  if (rc == 0)
    rc = orion_exec_flush(x->ex, 0, err);
  if (rc == 0) /* managed buffers: what the budget affords goes now */
    rc = orion__budget_send(x, err);
  /* The part's rows go on to its next block's executor: they are on their
   * way before the driver hears the block is done. */
  for (k = 0; k < m.nputs && rc == 0; k++)
    rc = orion__rows_put(x, &m.puts[k], x->run, err);
  x->xfer_cpu_s += orion_cpu_now(1) - xc0;

  if (rc == 0) {
    orion_buf_init(&b);
    rc = write_block_done(x, &b, m.block, orion_now() - t0, x->wait_s - w0,
                          m.keep, it, before_vals, w, nwatch, err);
    if (rc == ORION_ENOMEM)
      orion_error_set(err, rc, "executor %d: out of memory for block %lld's "
                               "BLOCK_DONE",
                      x->id, (long long)m.block);
    else if (rc != 0)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: block %lld changed more data than "
                           "the largest frame holds",
                           x->id, (long long)m.block);
    else /* a report of the times only may wait (executor/exec_late.c) */
      orion__late_post(x, &b, orion_now() - t0,
                       m.late && nwatch == 0 && before_vals == NULL);
    orion_buf_free(&b);
  }
  /* The block's flush = "loop" writes to sharded targets leave now, after
   * its BLOCK_DONE (the driver places the next block meanwhile): their
   * owners hold them until the loop's end, so the transfer overlaps the
   * blocks still running instead of following the last one. */
  if (rc == 0)
    rc = orion_exec_send_block_writes(x->ex, m.block, orion__shard_flush_early,
                                      x, err);
  for (k = 0; k < nwatch; k++)
    orion_free(w[k].before);
  orion_free(w);
  orion_free(before_vals);
  orion_msg_run_block_free(&m);
  return rc;
}

int orion__run_block(exec_state *x, job *j) {
  orion_error err;
  int64_t block = -1; /* the block, once the frame is decoded */
  double t0 = orion_now(), w0 = x->wait_s;
  orion_error_clear(&err);
  if (!x->failed && run_block(x, j->payload, j->len, &block, &err) != 0) {
    x->failed = 1;
    orion__late_flush(x); /* the blocks done before it first */
    /* Aborted while it waited for rows (orion__rows_get): the loop failed
     * elsewhere, and that failure is the one to report. */
    if (err.code != -ECANCELED)
      orion__exec_post_error(x, block, err.msg);
  }
  /* Computing: the block's time less its waits for data. */
  x->compute_s += (orion_now() - t0) - (x->wait_s - w0);
  return 0;
}

/* ---- LOOP_END ----------------------------------------------------------- */

/* LOOP_DONE (dsm/msg.h): each block's accumulator partials (taken) and
 * the counters since the last LOOP_DONE (reset).  Returns the encoder's
 * code or ORION_ENOMEM. */
static int write_loop_done(exec_state *x, orion_buf *b) {
  orion_msg_loop_done m;
  orion_msg_acc_value *accs = NULL;
  orion_block_acc *bacc = NULL;
  int64_t nbacc = 0, k;
  int rc;
  memset(&m, 0, sizeof m);
  if (orion_exec_take_block_accs(x->ex, &bacc, &nbacc) != 0)
    return ORION_ENOMEM;
  if (nbacc > 0)
    accs = orion_calloc((size_t)nbacc, sizeof *accs);
  if (nbacc > 0 && accs == NULL) {
    orion_free(bacc);
    return ORION_ENOMEM;
  }
  for (k = 0; k < nbacc; k++) { /* each block's partials */
    accs[k].block = bacc[k].block;
    accs[k].id = bacc[k].id;
    accs[k].has = bacc[k].val.has;
    accs[k].isint = bacc[k].val.isint;
    accs[k].i = (int64_t)bacc[k].val.i;
    accs[k].d = (double)bacc[k].val.d;
  }
  orion_free(bacc);
  pthread_mutex_lock(&x->mu);
  m.peer_bytes = x->peer_bytes;
  m.shard_items = x->shard_items;
  x->peer_bytes = x->shard_items = 0;
  pthread_mutex_unlock(&x->mu);
  /* The loop's span here, LOAD_BODY to now: computing, waiting, idle. */
  m.compute_seconds = x->compute_s;
  m.wait_seconds = x->wait_s;
  m.idle_seconds = orion_now() - x->loop_t0 - x->compute_s - x->wait_s;
  if (m.idle_seconds < 0)
    m.idle_seconds = 0;
  m.cpu_seconds = orion_cpu_now(0) - x->cpu_t0;
  m.net_cpu_seconds = net_cpu(x) - x->net_t0;
  m.exch_cpu_seconds = m.net_cpu_seconds + x->xfer_cpu_s;
  m.body_cpu_seconds = x->body_cpu_s;
  m.body_seconds = x->body_s;
  m.gpu_blocks = (uint64_t)orion_exec_gpu_take_blocks(x->ex);
  m.reordered = x->reordered;
  {
    orion_managed_stats ms;
    orion_exec_managed_take_stats(x->ex, &ms);
    m.managed_bytes = ms.bytes;
    m.managed_items = ms.items;
    m.managed_staleness = ms.staleness_sum;
  }
  m.accs = accs;
  m.naccs = nbacc;
  rc = orion_msg_loop_done_encode(b, &m);
  orion_free(accs);
  return rc;
}

/* LOOP_END (dsm/msg.h): flushes the buffers unless the loop is aborted or
 * failed here, and answers LOOP_DONE.  A malformed LOOP_END is the loop's
 * error, and the loop is aborted. */
int orion__run_loop_end(exec_state *x, job *j) {
  orion_msg_loop_end m;
  orion_error err;
  orion_buf b;
  int abort_loop, rc;
  orion_error_clear(&err);
  rc = orion_msg_loop_end_decode(j->payload, j->len, &m, &err);
  if (rc != 0) {
    refused(x, rc, "LOOP_END", &err);
    orion__exec_post_error(x, -1, err.msg);
    orion_error_clear(&err);
    m.abort = 1;
  }
  abort_loop = m.abort || x->failed;
  orion__swrite_sync(x); /* owners' writes into our copies */
  if (!abort_loop && orion_exec_flush(x->ex, 1, &err) != 0)
    orion__exec_post_error(x, -1, err.msg);
  orion_buf_init(&b);
  rc = write_loop_done(x, &b);
  if (rc == ORION_ENOMEM)
    orion__exec_die(x, "out of memory building a LOOP_DONE");
  if (rc != 0)
    orion__exec_die(x, "executor %d: cannot encode a LOOP_DONE: %s", x->id,
                    orion_strerror(rc));
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
