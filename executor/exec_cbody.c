/* Running a compiled loop body (util/cbody.h) on an executor: the
 * compiled-body half of the executor core.  The body's slots are resolved
 * against the bindings executor/exec.c keeps (arrays, buffers, accumulators,
 * constants), the body runs over a range of elements with buffer writes
 * going to the buffers' stores (dsm/wbuf.h), and accumulator partials come
 * back.  No Lua runs here; math.random's stream is the one the interpreter
 * would start from the same seed, so results are the interpreted body's.
 *
 * Compute thread only. */
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "dsm/types.h"
#include "dsm/wbuf.h"
#include "executor/exec.h"
#include "executor/exec_cbody.h"
#include "executor/exec_apply.h"
#include "executor/exec_deadline.h"
#include "executor/exec_elem.h"
#include "executor/exec_int.h"
#include "util/alloc.h"
#include "util/cbody.h"
#include "util/luarand.h"
#include "util/rng.h"

int orion_exec_set_compiled(orion_exec *ex, orion_cbody_fn fn,
                            const orion_cslot *slots, int nslots) {
  orion_cslot *cp = NULL;
  if (fn != NULL && nslots > 0) {
    int i;
    cp = orion_malloc(sizeof *cp * (size_t)nslots);
    if (cp == NULL)
      return ORION_ENOMEM;
    for (i = 0; i < nslots; i++) {
      cp[i] = slots[i];
      cp[i].name = NULL;
    }
  }
  /* A new body (its object may load where an unloaded one was) takes
   * no f32 form as its own: the first block folds it back. */
  for (int i = 0; i < ex->nbufs; i++)
    ex->bufs[i]->f32fn = NULL;
  orion_free(ex->cslots);
  ex->cslots = cp;
  ex->ncslots = fn != NULL ? nslots : 0;
  ex->cfn = fn;
  return 0;
}

int orion_exec_compiled(const orion_exec *ex) { return ex->cfn != NULL; }

void orion__exec_carray_of(orion_carray *ca, const orion_array *a) {
  int d;
  memset(ca, 0, sizeof *ca);
  ca->values = a->values;
  ca->keys = a->sparse ? a->keys : NULL;
  ca->type = (int32_t)a->type;
  ca->ndims = a->ndims;
  ca->nnz = a->nnz;
  for (d = 0; d < a->ndims; d++) {
    ca->dims[d] = a->dims[d];
    ca->strides[d] = a->sparse ? 0 : a->strides[d];
  }
}

static orion_cval cbuf_get(orion_cctx *c, void *h, int64_t key) {
  exec_buffer *b = h;
  const orion_pend_value *v = orion_wbuf_lookup(&b->pend, key);
  orion_cval out;
  (void)c;
  out.i = 0;
  if (v != NULL)
    out.i = v->i; /* the same bits either way */
  return out;
}

static int cbuf_set(orion_cctx *c, void *h, int64_t key, orion_cval v) {
  exec_buffer *b = h;
  orion_pend_value *slot;
  if (b->target == NULL) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s' is no longer bound on this executor", b->name);
    return 1;
  }
  if (b->target->type == ORION_I32 && b->op == ORION_APPLY_REPLACE &&
      (v.i < INT32_MIN || v.i > INT32_MAX)) {
    snprintf(c->err, sizeof c->err,
             "cannot store %lld in i32 buffer '%s': out of range",
             (long long)v.i, b->name);
    return 1;
  }
  slot = orion_wbuf_slot(&b->pend, key);
  if (slot == NULL) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s': out of memory for pending writes", b->name);
    return 1;
  }
  slot->i = v.i;
  return 0;
}

/* The f32 form of a scan store over an f32 target (util/cbody.h); only a
 * fast-mode body asks, so exact mode keeps its doubles. */
static float *cbuf_f32(orion_cctx *c, void *h) {
  exec_buffer *b = h;
  orion_exec *ex = c->ud;
  float *f = NULL;
  if (b->target == NULL || b->target->type != ORION_F32 ||
      b->op != ORION_APPLY_ADD ||
      !(b->flush == ORION_FLUSH_BLOCK || ORION_FLUSH_IS_CLOCK(b->flush))) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s': no f32 pending store (not an \"add\" buffer over "
             "an f32 array flushed per block or clock)",
             b->name);
    return NULL;
  }
  if (orion_wbuf_f32_view(&b->pend, &f) != 0 || f == NULL) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s': out of memory for f32 pending writes", b->name);
    return NULL;
  }
  b->f32fn = (void (*)(void))ex->cfn;
  return f;
}

static int celem_done(orion_cctx *c) {
  orion_exec *ex = c->ud;
  orion_error err;
  orion_error_clear(&err);
  if (orion__exec_count_element(ex, &err) != 0) {
    snprintf(c->err, sizeof c->err, "%s", err.msg);
    return 2; /* a flush failed: err is already the whole report */
  }
  return 0;
}

int orion__exec_run_compiled(orion_exec *ex, orion_array *a, int64_t lo,
                             int64_t hi, uint64_t seed, int64_t block,
                             orion_error *err) {
  orion_cctx *c;
  orion_carray *arrays;
  orion_cbuffer *bufs;
  orion_cacc *accs;
  orion_cval *consts;
  orion_luarand rng;
  acc_slot **acc_of;
  exec_buffer **scan;
  int i, na = 0, nb = 0, nc = 0, nk = 0, nscan = 0, rc = 0;
  size_t n = (size_t)ex->ncslots + 1;
  c = orion_calloc(1, sizeof *c);
  arrays = orion_calloc(n, sizeof *arrays);
  bufs = orion_calloc(n, sizeof *bufs);
  accs = orion_calloc(n, sizeof *accs);
  consts = orion_calloc(n, sizeof *consts);
  acc_of = orion_calloc(n, sizeof *acc_of);
  scan = orion_calloc(n, sizeof *scan);
  if (c == NULL || arrays == NULL || bufs == NULL || accs == NULL ||
      consts == NULL || acc_of == NULL || scan == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    goto done;
  }
  for (i = 0; i < ex->ncslots && rc == 0; i++) {
    const orion_cslot *sl = &ex->cslots[i];
    switch (sl->kind) {
    case ORION_CSLOT_ARRAY: {
      binding *bd = orion__exec_find_array(ex, sl->id);
      if (bd == NULL || bd->a->sparse)
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: array %lld of the compiled body "
                             "is not bound (or sparse)",
                             ex->id, (long long)sl->id);
      else
        orion__exec_carray_of(&arrays[na++], bd->a);
      break;
    }
    case ORION_CSLOT_BUFFER: {
      exec_buffer *bf = orion__exec_find_buffer(ex, sl->id);
      int d;
      if (bf == NULL || bf->target == NULL) {
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: buffer %lld of the compiled body "
                             "is not bound",
                             ex->id, (long long)sl->id);
        break;
      }
      bufs[nb].h = bf;
      bufs[nb].type = (int32_t)bf->target->type;
      bufs[nb].ndims = bf->target->ndims;
      bufs[nb].op = (int32_t)bf->op;
      for (d = 0; d < bf->target->ndims; d++) {
        bufs[nb].dims[d] = bf->target->dims[d];
        bufs[nb].strides[d] = bf->target->strides[d];
      }
      { /* the store's dense values, for the body's inline reads/writes */
        orion_pend_value *vals = orion_wbuf_f32_dense(&bf->pend);
        if (vals != NULL && bf->f32fn == (void (*)(void))ex->cfn) {
          /* The body that took the f32 form runs again: its floats stay
           * (a scan store: no marks), not folded back every block. */
          bufs[nb].bits = NULL;
        } else if (orion_wbuf_dense_view(&bf->pend, &vals, &bufs[nb].bits,
                                         &bufs[nb].dirty, &bufs[nb].ndirty,
                                         &bufs[nb].dirty_max) != 0) {
          rc = orion_error_set(err, ORION_ENOMEM,
                               "executor %d: buffer '%s': out of memory "
                               "for pending writes",
                               ex->id, bf->name);
          break;
        }
        bufs[nb].vals = (orion_cval *)vals; /* the same union */
        /* An "add" buffer flushed per block or clock: a scan store, the
         * body stores values only and they are marked after the call. */
        if (vals != NULL && bf->op == ORION_APPLY_ADD &&
            (bf->flush == ORION_FLUSH_BLOCK ||
             ORION_FLUSH_IS_CLOCK(bf->flush))) {
          bufs[nb].bits = NULL;
          scan[nscan++] = bf;
        }
      }
      nb++;
      break;
    }
    case ORION_CSLOT_ACC: {
      acc_slot *as = orion__exec_find_acc(ex, sl->id);
      if (as == NULL) {
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: accumulator %lld of the compiled "
                             "body is not bound",
                             ex->id, (long long)sl->id);
        break;
      }
      acc_of[nk] = as;
      accs[nk].op = (int32_t)as->op;
      accs[nk].has = as->val.has;
      accs[nk].isint = as->val.isint;
      accs[nk].i = (int64_t)as->val.i;
      accs[nk].d = (double)as->val.d;
      nk++;
      break;
    }
    case ORION_CSLOT_CONST:
      if (sl->isint)
        consts[nc++].i = sl->ival;
      else
        consts[nc++].d = sl->fval;
      break;
    }
  }
  if (rc != 0)
    goto done;
  c->abi = ORION_CBODY_ABI;
  c->executor = ex->id;
  orion__exec_carray_of(&c->iter, a);
  c->arrays = arrays;
  c->bufs = bufs;
  c->accs = accs;
  c->consts = consts;
  /* math.random: the stream math.randomseed(n) starts in the interpreter. */
  orion_luarand_seed(
      &rng,
      (int64_t)orion_seed_mix(seed, (uint64_t)ex->loop_id, (uint64_t)block), 0);
  memcpy(c->rng, rng.s, sizeof c->rng);
  c->buf_get = cbuf_get;
  c->buf_set = cbuf_set;
  c->buf_f32 = cbuf_f32;
  c->elem_done =
      ex->nflushn > 0 || orion__exec_managed_ticks(ex) ? celem_done : NULL;
  c->ud = ex;
  c->cur = lo;
  c->poll = ex->timeout > 0 ? orion__exec_cpoll : NULL;
  c->poll_left = c->poll != NULL ? 0 : INT64_MAX;
  {
    int r = ex->cfn(c, lo, hi);
    /* What was stored is marked when the buffer flushes, after the block
     * or the clock; after an error now, for the error's path (and if that
     * runs out of memory, still at the flush, which marks what is left). */
    for (i = 0; i < nscan; i++)
      if (r == 0 || orion_wbuf_absorb(&scan[i]->pend) != 0)
        scan[i]->unabsorbed = 1;
    for (i = 0; i < nk; i++) { /* partials come back also on error */
      acc_of[i]->val.has = accs[i].has;
      acc_of[i]->val.isint = accs[i].isint;
      acc_of[i]->val.i = (lua_Integer)accs[i].i;
      acc_of[i]->val.d = (lua_Number)accs[i].d;
    }
    if (r == 2) {
      rc = orion_error_set(err, ORION_EBODY, "%s", c->err);
    } else if (r != 0) {
      char key[256];
      orion__exec_key_string(a, c->cur >= lo && c->cur < hi ? c->cur : lo, key,
                             sizeof key);
      rc = orion_error_set(err, ORION_EBODY, "executor %d, element %s: %s",
                           ex->id, key, c->err);
    }
  }
done:
  orion_free(c);
  orion_free(arrays);
  orion_free(bufs);
  orion_free(accs);
  orion_free(consts);
  orion_free(acc_of);
  orion_free(scan);
  return rc;
}
