/* The payload codec (dsm/msg.h), part one: the messages of a loop between
 * the driver and an executor (LOAD_BODY, RUN_BLOCK, BLOCK_DONE, LOOP_END,
 * LOOP_DONE, BODY_ERROR, FORGET), and the codec of any message by its frame
 * type.  dsm/msg_shard.c holds the shard and buffered-write messages,
 * dsm/msg_load.c parallel loading's, dsm/msg_field.c the fields. */
#include "dsm/msg.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "dsm/bodycache.h"
#include "dsm/msg_field.h"
#include "dsm/types.h"

/* ------------------------------------------------------------------------
 * LOAD_BODY.
 * ---------------------------------------------------------------------- */

#define ARRAY_MIN 40u /* id, type, sparse, ndims, one dim */
#define ACC_MIN 16u
#define BUF_MIN 48u
#define SLOT_MIN 40u
#define SHARD_MIN 24u
#define GUARD_MIN 16u /* array, placement's length */

int orion_msg_load_body_encode(orion_buf *b, const orion_msg_load_body *m) {
  orion__mw e;
  int64_t k;
  int d;
  orion__mw_begin(&e, b, ORION_WIRE_LOAD_BODY);
  orion__mw_i64(&e, m->loop);
  orion__mw_bytes(&e, m->blob, m->blob_len);
  orion__mw_i64(&e, m->iter);
  if (orion__mw_count(&e, m->arrays, m->narrays))
    for (k = 0; k < m->narrays; k++) {
      const orion_msg_array_desc *a = &m->arrays[k];
      orion__mw_need(&e, a->type >= 0 && a->type < ORION_NTYPES &&
                             a->ndims >= 1 && a->ndims <= ORION_MAX_DIMS &&
                             (!a->ragged || a->sparse));
      if (e.bad)
        break;
      orion__mw_i64(&e, a->id);
      orion__mw_u64(&e, (uint64_t)a->type);
      orion__mw_u64(&e, a->sparse ? (a->ragged ? 2u : 1u) : 0u);
      orion__mw_u64(&e, (uint64_t)a->ndims);
      for (d = 0; d < a->ndims; d++)
        orion__mw_i64(&e, a->dims[d]);
    }
  if (orion__mw_count(&e, m->accs, m->naccs))
    for (k = 0; k < m->naccs; k++) {
      orion__mw_i64(&e, m->accs[k].id);
      orion__mw_i64(&e, m->accs[k].op);
    }
  if (orion__mw_count(&e, m->bufs, m->nbufs))
    for (k = 0; k < m->nbufs; k++) {
      const orion_msg_buf_desc *f = &m->bufs[k];
      orion__mw_i64(&e, f->id);
      orion__mw_bytes(&e, f->name, f->name_len);
      orion__mw_i64(&e, f->target);
      orion__mw_i64(&e, f->op);
      orion__mw_bytes(&e, f->apply, f->apply_len);
      orion__mw_i64(&e, f->flush);
    }
  orion__mw_i64(&e, m->run);
  orion__mw_u64(&e, m->chash);
  orion__mw_bytes(&e, m->csrc, m->csrc_len);
  orion__mw_bytes(&e, m->cflags, m->cflags_len);
  orion__mw_flag(&e, m->required);
  if (orion__mw_count(&e, m->slots, m->nslots))
    for (k = 0; k < m->nslots; k++) {
      const orion_cslot *s = &m->slots[k];
      orion__mw_need(&e, (int)s->kind >= ORION_CSLOT_ARRAY &&
                             (int)s->kind <= ORION_CSLOT_CONST);
      orion__mw_u64(&e, (uint64_t)s->kind);
      orion__mw_i64(&e, s->id);
      orion__mw_flag(&e, s->isint);
      orion__mw_i64(&e, s->ival);
      orion__mw_f64(&e, s->fval);
    }
  if (orion__mw_count(&e, m->shards, m->nshards))
    for (k = 0; k < m->nshards; k++) {
      const orion_msg_shard *s = &m->shards[k];
      orion__mw_need(
          &e, (s->flags & ~(ORION_SHARD_FETCH | ORION_SHARD_WRITTEN |
                            ORION_SHARD_DIRECT | ORION_SHARD_CHAIN)) == 0);
      orion__mw_i64(&e, s->array);
      orion__mw_u64(&e, (uint64_t)s->flags);
      orion__mw_runs(&e, s->runs, s->nruns);
    }
  orion__mw_moves(&e, m->gets, m->ngets);
  orion__mw_need(&e, m->gpu >= 0 && m->gpu <= 2 && m->gkind >= 0 &&
                         m->gkind <= 4 && (m->gpu == 0 || m->chash != 0) &&
                         m->gb >= 0);
  orion__mw_u64(&e, (uint64_t)m->gpu);
  orion__mw_u64(&e, (uint64_t)m->gkind);
  orion__mw_i64(&e, m->gspace);
  orion__mw_i64(&e, m->gtime);
  orion__mw_i64(&e, m->gskew_dim);
  orion__mw_i64(&e, m->gskew);
  orion__mw_i64(&e, m->gb);
  orion__mw_need(&e, m->bandwidth_mbps >= 0);
  orion__mw_f64(&e, m->bandwidth_mbps);
  orion__mw_need(&e, m->timeout >= 0 && m->timeout <= ORION_MSG_TIMEOUT_MAX);
  orion__mw_f64(&e, m->timeout);
  orion__mw_need(&e, m->blob_chained >= 0 &&
                         m->blob_chained <= ORION_MSG_BODY_MAX &&
                         (m->blob_chained == 0 || m->blob_len == 0));
  orion__mw_i64(&e, m->blob_chained);
  if (orion__mw_count(&e, m->guards, m->nguards))
    for (k = 0; k < m->nguards; k++) {
      const orion_msg_guard *g = &m->guards[k];
      orion__mw_need(&e, g->placement_len >= 1 &&
                             g->placement_len <= ORION_MSG_GUARD_MAX);
      orion__mw_i64(&e, g->array);
      orion__mw_bytes(&e, g->placement, g->placement_len);
    }
  orion__mw_need(&e, m->verify >= 0 && m->verify <= ORION_MSG_VERIFY_ORDER);
  orion__mw_i64(&e, m->verify);
  orion__mw_need(&e, (m->bbase == NULL || (m->bdigest != NULL &&
                                           m->blob_chained == 0)) &&
                         (m->bbase != NULL ||
                          (m->bprefix == 0 && m->bsuffix == 0)));
  orion__mw_bytes(&e, (const char *)m->bdigest,
                  m->bdigest != NULL ? ORION_BODY_DIGEST : 0);
  orion__mw_bytes(&e, (const char *)m->bbase,
                  m->bbase != NULL ? ORION_BODY_DIGEST : 0);
  orion__mw_u64(&e, m->bprefix);
  orion__mw_u64(&e, m->bsuffix);
  return orion__mw_end(&e);
}

static void get_arrays(orion__mr *d, orion_msg_load_body *m) {
  orion_msg_array_desc *v =
      orion__mr_list(d, "array", ARRAY_MIN, sizeof *v, &m->narrays);
  int64_t k;
  int j;
  m->arrays = v;
  for (k = 0; k < m->narrays && d->rc == 0; k++) {
    v[k].id = orion__mr_i64(d, "array id");
    v[k].type = (int)orion__mr_in(d, "array's element type", 0,
                                  ORION_NTYPES - 1, ORION_ETYPE);
    v[k].sparse = (int)orion__mr_in(d, "array's kind (dense, sparse, ragged)",
                                    0, 2, ORION_EPARSE);
    v[k].ragged = v[k].sparse == 2;
    v[k].sparse = v[k].sparse != 0;
    v[k].ndims = (int)orion__mr_in(d, "array's number of dimensions", 1,
                                   ORION_MAX_DIMS, ORION_EDIMS);
    for (j = 0; j < v[k].ndims; j++)
      v[k].dims[j] = orion__mr_i64(d, "array's dimensions");
  }
}

static void get_bufs(orion__mr *d, orion_msg_load_body *m) {
  orion_msg_buf_desc *v =
      orion__mr_list(d, "buffer", BUF_MIN, sizeof *v, &m->nbufs);
  int64_t k;
  m->bufs = v;
  for (k = 0; k < m->nbufs && d->rc == 0; k++) {
    v[k].id = orion__mr_i64(d, "buffer id");
    v[k].name = orion__mr_bytes(d, "buffer's name", &v[k].name_len);
    v[k].target = orion__mr_i64(d, "buffer's target");
    v[k].op = orion__mr_i64(d, "buffer's operator");
    v[k].apply = orion__mr_bytes(d, "buffer's apply function", &v[k].apply_len);
    v[k].flush = orion__mr_i64(d, "buffer's flush policy");
  }
}

/* The runtime guard's arrays (wire version 14). */
static void get_guards(orion__mr *d, orion_msg_load_body *m) {
  orion_msg_guard *v =
      orion__mr_list(d, "guard", GUARD_MIN, sizeof *v, &m->nguards);
  int64_t k;
  m->guards = v;
  for (k = 0; k < m->nguards && d->rc == 0; k++) {
    v[k].array = orion__mr_i64(d, "guarded array");
    v[k].placement = orion__mr_bytes(d, "guarded array's placement",
                                     &v[k].placement_len);
    if (d->rc == 0 && (v[k].placement_len < 1 ||
                       v[k].placement_len > ORION_MSG_GUARD_MAX))
      orion__mr_fail(d, ORION_EPARSE,
                     "a guarded array's placement of %zu bytes",
                     v[k].placement_len);
  }
}

static void get_slots(orion__mr *d, orion_msg_load_body *m) {
  orion_cslot *v = orion__mr_list(d, "slot", SLOT_MIN, sizeof *v, &m->nslots);
  int64_t k;
  m->slots = v;
  for (k = 0; k < m->nslots && d->rc == 0; k++) {
    v[k].kind = (orion_cslot_kind)orion__mr_in(
        d, "slot's kind", ORION_CSLOT_ARRAY, ORION_CSLOT_CONST, ORION_EPARSE);
    v[k].id = orion__mr_i64(d, "slot's id");
    v[k].isint = orion__mr_flag(d, "slot's isint flag");
    v[k].ival = orion__mr_i64(d, "slot's integer");
    v[k].fval = orion__mr_f64(d, "slot's float");
  }
}

static void get_shards(orion__mr *d, orion_msg_load_body *m) {
  orion_msg_shard *v =
      orion__mr_list(d, "shard", SHARD_MIN, sizeof *v, &m->nshards);
  int64_t k;
  m->shards = v;
  for (k = 0; k < m->nshards && d->rc == 0; k++) {
    v[k].array = orion__mr_i64(d, "shard's array");
    v[k].flags = (int)orion__mr_in(d, "shard's flags", 0,
                                   ORION_SHARD_FETCH | ORION_SHARD_WRITTEN |
                                       ORION_SHARD_DIRECT | ORION_SHARD_CHAIN,
                                   ORION_EPARSE);
    v[k].runs = orion__mr_runs(d, &v[k].nruns);
  }
}

/* Wire version 22's body reference: a digest is empty or
 * ORION_BODY_DIGEST bytes. */
static const unsigned char *get_digest(orion__mr *d, const char *field) {
  size_t len;
  const char *p = orion__mr_bytes(d, field, &len);
  if (d->rc == 0 && len != 0 && len != ORION_BODY_DIGEST)
    orion__mr_fail(d, ORION_EPARSE, "a %s of %zu bytes", field, len);
  return d->rc == 0 && len != 0 ? (const unsigned char *)p : NULL;
}

static void get_body_ref(orion__mr *d, orion_msg_load_body *m) {
  m->bdigest = get_digest(d, "body digest");
  m->bbase = get_digest(d, "base body digest");
  m->bprefix = orion__mr_u64(d, "base body prefix");
  m->bsuffix = orion__mr_u64(d, "base body suffix");
  if (d->rc == 0 && m->bbase != NULL &&
      (m->bdigest == NULL || m->blob_chained != 0))
    orion__mr_fail(d, ORION_EPARSE, "a base body without a body digest "
                                    "or with a chained body");
  if (d->rc == 0 && m->bbase == NULL && (m->bprefix != 0 || m->bsuffix != 0))
    orion__mr_fail(d, ORION_EPARSE, "a base body's prefix or suffix "
                                    "without a base body");
}

int orion_msg_load_body_decode(const void *p, size_t n,
                               orion_msg_load_body *out, orion_error *err) {
  orion_msg_load_body m;
  orion_msg_acc_desc *accs;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "LOAD_BODY", err);
  m.loop = orion__mr_i64(&d, "loop id");
  m.blob = orion__mr_bytes(&d, "body", &m.blob_len);
  m.iter = orion__mr_i64(&d, "iterated array");
  get_arrays(&d, &m);
  accs = orion__mr_list(&d, "accumulator", ACC_MIN, sizeof *accs, &m.naccs);
  m.accs = accs;
  for (k = 0; k < m.naccs && d.rc == 0; k++) {
    accs[k].id = orion__mr_i64(&d, "accumulator id");
    accs[k].op = orion__mr_i64(&d, "accumulator's operator");
  }
  get_bufs(&d, &m);
  m.run = orion__mr_i64(&d, "run number");
  m.chash = orion__mr_u64(&d, "compiled body's hash");
  m.csrc = orion__mr_bytes(&d, "compiled body's source", &m.csrc_len);
  m.cflags = orion__mr_bytes(&d, "compiler flags", &m.cflags_len);
  m.required = orion__mr_flag(&d, "required flag");
  get_slots(&d, &m);
  get_shards(&d, &m);
  m.gets = orion__mr_moves(&d, "get", &m.ngets);
  m.gpu = (int)orion__mr_in(&d, "gpu flag", 0, 2, ORION_EPARSE);
  m.gkind = (int)orion__mr_in(&d, "device grid kind", 0, 4, ORION_EPARSE);
  m.gspace = orion__mr_in(&d, "device grid space", -1, ORION_MAX_DIMS - 1,
                          ORION_EPARSE);
  m.gtime = orion__mr_in(&d, "device grid time", -1, ORION_MAX_DIMS - 1,
                         ORION_EPARSE);
  m.gskew_dim = orion__mr_in(&d, "device grid skew dimension", -1,
                             ORION_MAX_DIMS - 1, ORION_EPARSE);
  m.gskew = orion__mr_i64(&d, "device grid skew");
  m.gb = orion__mr_in(&d, "device grid size", 0, INT64_MAX, ORION_EPARSE);
  m.bandwidth_mbps = orion__mr_f64(&d, "bandwidth budget");
  if (d.rc == 0 && !(m.bandwidth_mbps >= 0))
    orion__mr_fail(&d, ORION_EPARSE, "a negative bandwidth budget");
  m.timeout = orion__mr_f64(&d, "loop timeout");
  if (d.rc == 0 && !(m.timeout >= 0 && m.timeout <= ORION_MSG_TIMEOUT_MAX))
    orion__mr_fail(&d, ORION_EPARSE, "the loop timeout is %g s", m.timeout);
  m.blob_chained = orion__mr_in(&d, "chained body's length", 0,
                                ORION_MSG_BODY_MAX, ORION_EPARSE);
  if (d.rc == 0 && m.blob_chained > 0 && m.blob_len > 0)
    orion__mr_fail(&d, ORION_EPARSE, "a body both inline and chained");
  get_guards(&d, &m);
  m.verify = orion__mr_in(&d, "verify", 0, ORION_MSG_VERIFY_ORDER,
                          ORION_EPARSE);
  get_body_ref(&d, &m);
  if (d.rc == 0 && m.gpu != 0 && m.chash == 0)
    orion__mr_fail(&d, ORION_EPARSE, "a device body without a compiled "
                                     "body");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_load_body_free(out);
  return d.rc;
}

void orion_msg_load_body_free(orion_msg_load_body *m) {
  int64_t k;
  for (k = 0; k < m->nshards; k++)
    orion__msg_drop(m->shards[k].runs);
  orion__msg_drop(m->arrays);
  orion__msg_drop(m->accs);
  orion__msg_drop(m->bufs);
  orion__msg_drop(m->slots);
  orion__msg_drop(m->shards);
  orion__msg_drop(m->gets);
  orion__msg_drop(m->guards);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * RUN_BLOCK.
 * ---------------------------------------------------------------------- */

int orion_msg_run_block_encode(orion_buf *b, const orion_msg_run_block *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_RUN_BLOCK);
  orion__mw_i64(&e, m->block);
  orion__mw_u64(&e, m->seed);
  orion__mw_i64(&e, m->nblocks);
  if (orion__mw_count(&e, m->segs, m->nsegs))
    for (k = 0; k < m->nsegs; k++) {
      orion__mw_i64(&e, m->segs[k].lo);
      orion__mw_i64(&e, m->segs[k].hi);
    }
  orion__mw_flag(&e, m->has_elems);
  if (m->has_elems) {
    orion__mw_need(&e,
                   m->nelems >= 0 && (uint64_t)m->nelems <= m->keys_len / 8);
    orion__mw_i64(&e, m->nelems);
    orion__mw_bytes(&e, m->keys, m->keys_len);
    orion__mw_bytes(&e, m->values, m->values_len);
  }
  orion__mw_runs(&e, m->runs, m->nruns);
  orion__mw_ranges(&e, m->watch, m->nwatch);
  orion__mw_moves(&e, m->gets, m->ngets);
  orion__mw_moves(&e, m->puts, m->nputs);
  orion__mw_i64(&e, m->first);
  orion__mw_flag(&e, m->keep);
  orion__mw_i64(&e, m->space);
  orion__mw_i64(&e, m->time);
  orion__mw_flag(&e, m->late);
  return orion__mw_end(&e);
}

int orion_msg_run_block_decode(const void *p, size_t n,
                               orion_msg_run_block *out, orion_error *err) {
  orion_msg_run_block m;
  orion_msg_seg *segs;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "RUN_BLOCK", err);
  m.block = orion__mr_i64(&d, "block");
  m.seed = orion__mr_u64(&d, "seed");
  m.nblocks = orion__mr_i64(&d, "number of blocks");
  segs = orion__mr_list(&d, "segment", 16, sizeof *segs, &m.nsegs);
  m.segs = segs;
  for (k = 0; k < m.nsegs && d.rc == 0; k++) {
    segs[k].lo = orion__mr_i64(&d, "segment");
    segs[k].hi = orion__mr_i64(&d, "segment");
  }
  m.has_elems = orion__mr_flag(&d, "elements flag");
  if (m.has_elems) {
    m.nelems = orion__mr_i64(&d, "number of elements");
    m.keys = orion__mr_bytes(&d, "keys", &m.keys_len);
    m.values = orion__mr_bytes(&d, "values", &m.values_len);
    if (m.nelems < 0 || (uint64_t)m.nelems > m.keys_len / 8)
      orion__mr_fail(&d, ORION_EPARSE,
                     "%" PRId64 " elements with %zu bytes of keys", m.nelems,
                     m.keys_len);
  }
  m.runs = orion__mr_runs(&d, &m.nruns);
  m.watch = orion__mr_ranges(&d, "written range", &m.nwatch);
  m.gets = orion__mr_moves(&d, "get", &m.ngets);
  m.puts = orion__mr_moves(&d, "put", &m.nputs);
  m.first = orion__mr_i64(&d, "first element");
  m.keep = orion__mr_flag(&d, "keep flag");
  if (m.first < 0)
    orion__mr_fail(&d, ORION_EPARSE, "first element %" PRId64, m.first);
  m.space = orion__mr_i64(&d, "space part");
  m.time = orion__mr_i64(&d, "time part");
  m.late = orion__mr_flag(&d, "late flag");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_run_block_free(out);
  return d.rc;
}

void orion_msg_run_block_free(orion_msg_run_block *m) {
  orion__msg_drop(m->segs);
  orion__msg_drop(m->runs);
  orion__msg_drop(m->watch);
  orion__msg_drop(m->gets);
  orion__msg_drop(m->puts);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * BLOCK_DONE.
 * ---------------------------------------------------------------------- */

int orion_msg_block_done_encode(orion_buf *b, const orion_msg_block_done *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_BLOCK_DONE);
  orion__mw_i64(&e, m->block);
  orion__mw_f64(&e, m->seconds);
  orion__mw_f64(&e, m->wait_seconds);
  orion__mw_flag(&e, m->has_values);
  if (m->has_values)
    orion__mw_bytes(&e, m->values, m->values_len);
  orion__mw_runs(&e, m->runs, m->nruns);
  orion__mw_flag(&e, m->kept);
  return orion__mw_end(&e);
}

int orion_msg_block_done_decode(const void *p, size_t n,
                                orion_msg_block_done *out, orion_error *err) {
  orion_msg_block_done m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "BLOCK_DONE", err);
  m.block = orion__mr_i64(&d, "block");
  m.seconds = orion__mr_f64(&d, "seconds");
  m.wait_seconds = orion__mr_f64(&d, "wait seconds");
  m.has_values = orion__mr_flag(&d, "values flag");
  if (m.has_values)
    m.values = orion__mr_bytes(&d, "values", &m.values_len);
  m.runs = orion__mr_runs(&d, &m.nruns);
  m.kept = orion__mr_flag(&d, "kept flag");
  if (m.kept && m.has_values)
    orion__mr_fail(&d, ORION_EPARSE, "values both sent and kept");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_block_done_free(out);
  return d.rc;
}

void orion_msg_block_done_free(orion_msg_block_done *m) {
  orion__msg_drop(m->runs);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * LOOP_END and FORGET.
 * ---------------------------------------------------------------------- */

int orion_msg_loop_end_encode(orion_buf *b, const orion_msg_loop_end *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_LOOP_END);
  orion__mw_flag(&e, m->abort);
  return orion__mw_end(&e);
}

int orion_msg_loop_end_decode(const void *p, size_t n, orion_msg_loop_end *out,
                              orion_error *err) {
  orion__mr d;
  orion__mr_init(&d, p, n, "LOOP_END", err);
  out->abort = orion__mr_flag(&d, "abort flag");
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}

/* SHUTDOWN: a reason longer than the limit is refused, not cut. */
int orion_msg_shutdown_encode(orion_buf *b, const orion_msg_shutdown *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_SHUTDOWN);
  orion__mw_need(&e, m->len <= ORION_MSG_SHUTDOWN_REASON_MAX);
  orion__mw_bytes(&e, m->reason, m->len);
  return orion__mw_end(&e);
}

int orion_msg_shutdown_decode(const void *p, size_t n, orion_msg_shutdown *out,
                              orion_error *err) {
  orion__mr d;
  orion__mr_init(&d, p, n, "SHUTDOWN", err);
  out->reason = orion__mr_bytes(&d, "reason", &out->len);
  if (d.rc == 0 && out->len > ORION_MSG_SHUTDOWN_REASON_MAX)
    orion__mr_fail(&d, ORION_EPARSE, "the reason is %zu bytes, more than %d",
                   out->len, ORION_MSG_SHUTDOWN_REASON_MAX);
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}

int orion_msg_forget_encode(orion_buf *b, const orion_msg_forget *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_FORGET);
  if (orion__mw_count(&e, m->ids, m->n))
    for (k = 0; k < m->n; k++)
      orion__mw_i64(&e, m->ids[k]);
  return orion__mw_end(&e);
}

int orion_msg_forget_decode(const void *p, size_t n, orion_msg_forget *out,
                            orion_error *err) {
  orion_msg_forget m;
  int64_t *v, k;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "FORGET", err);
  v = orion__mr_list(&d, "array id", 8, sizeof *v, &m.n);
  m.ids = v;
  for (k = 0; k < m.n && d.rc == 0; k++)
    v[k] = orion__mr_i64(&d, "array id");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_forget_free(out);
  return d.rc;
}

void orion_msg_forget_free(orion_msg_forget *m) {
  orion__msg_drop(m->ids);
  memset(m, 0, sizeof *m);
}
/* ------------------------------------------------------------------------
 * LOOP_DONE.
 * ---------------------------------------------------------------------- */

int orion_msg_loop_done_encode(orion_buf *b, const orion_msg_loop_done *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_LOOP_DONE);
  if (orion__mw_count(&e, m->accs, m->naccs))
    for (k = 0; k < m->naccs; k++) {
      orion__mw_i64(&e, m->accs[k].block);
      orion__mw_i64(&e, m->accs[k].id);
      orion__mw_flag(&e, m->accs[k].has);
      orion__mw_flag(&e, m->accs[k].isint);
      orion__mw_i64(&e, m->accs[k].i);
      orion__mw_f64(&e, m->accs[k].d);
    }
  orion__mw_u64(&e, m->peer_bytes);
  orion__mw_u64(&e, m->shard_items);
  orion__mw_f64(&e, m->compute_seconds);
  orion__mw_f64(&e, m->wait_seconds);
  orion__mw_f64(&e, m->idle_seconds);
  orion__mw_u64(&e, m->gpu_blocks);
  orion__mw_u64(&e, m->managed_bytes);
  orion__mw_u64(&e, m->managed_items);
  orion__mw_f64(&e, m->managed_staleness);
  orion__mw_u64(&e, m->reordered);
  orion__mw_f64(&e, m->cpu_seconds);
  orion__mw_f64(&e, m->exch_cpu_seconds);
  orion__mw_f64(&e, m->net_cpu_seconds);
  orion__mw_f64(&e, m->body_cpu_seconds);
  orion__mw_f64(&e, m->body_seconds);
  return orion__mw_end(&e);
}

int orion_msg_loop_done_decode(const void *p, size_t n,
                               orion_msg_loop_done *out, orion_error *err) {
  orion_msg_loop_done m;
  orion_msg_acc_value *v;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "LOOP_DONE", err);
  v = orion__mr_list(&d, "accumulator", 48, sizeof *v, &m.naccs);
  m.accs = v;
  for (k = 0; k < m.naccs && d.rc == 0; k++) {
    v[k].block = orion__mr_i64(&d, "accumulator's block");
    v[k].id = orion__mr_i64(&d, "accumulator id");
    v[k].has = orion__mr_flag(&d, "accumulator's has flag");
    v[k].isint = orion__mr_flag(&d, "accumulator's isint flag");
    v[k].i = orion__mr_i64(&d, "accumulator's integer");
    v[k].d = orion__mr_f64(&d, "accumulator's float");
  }
  m.peer_bytes = orion__mr_u64(&d, "bytes sent to peers");
  m.shard_items = orion__mr_u64(&d, "shard writes applied");
  m.compute_seconds = orion__mr_f64(&d, "compute seconds");
  m.wait_seconds = orion__mr_f64(&d, "wait seconds");
  m.idle_seconds = orion__mr_f64(&d, "idle seconds");
  m.gpu_blocks = orion__mr_u64(&d, "blocks run on the device");
  m.managed_bytes = orion__mr_u64(&d, "managed bytes");
  m.managed_items = orion__mr_u64(&d, "managed items");
  m.managed_staleness = orion__mr_f64(&d, "managed staleness");
  m.reordered = orion__mr_u64(&d, "blocks run out of order");
  m.cpu_seconds = orion__mr_f64(&d, "CPU seconds");
  m.exch_cpu_seconds = orion__mr_f64(&d, "exchange CPU seconds");
  m.net_cpu_seconds = orion__mr_f64(&d, "loop thread CPU seconds");
  m.body_cpu_seconds = orion__mr_f64(&d, "body CPU seconds");
  m.body_seconds = orion__mr_f64(&d, "body seconds");
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_loop_done_free(out);
  return d.rc;
}

void orion_msg_loop_done_free(orion_msg_loop_done *m) {
  orion__msg_drop(m->accs);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------
 * BODY_ERROR.
 * ---------------------------------------------------------------------- */

int orion_msg_body_error_encode(orion_buf *b, const orion_msg_body_error *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_BODY_ERROR);
  orion__mw_i64(&e, m->executor);
  orion__mw_i64(&e, m->block);
  orion__mw_bytes(&e, m->msg, m->msg_len);
  return orion__mw_end(&e);
}

int orion_msg_body_error_decode(const void *p, size_t n,
                                orion_msg_body_error *out, orion_error *err) {
  orion_msg_body_error m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "BODY_ERROR", err);
  m.executor = orion__mr_i64(&d, "executor id");
  m.block = orion__mr_i64(&d, "block");
  m.msg = orion__mr_bytes(&d, "message", &m.msg_len);
  *out = m;
  if (orion__mr_end(&d) != 0)
    memset(out, 0, sizeof *out);
  return d.rc;
}

/* ------------------------------------------------------------------------
 * Applying a run.
 * ---------------------------------------------------------------------- */

int orion_msg_run_apply(orion_array *a, const orion_msg_run *run) {
  size_t esz = orion_type_size(a->type);
  if (a->sparse || run->first < 0 || run->count < 0 || run->first > a->nnz ||
      run->count > a->nnz - run->first ||
      run->len > (size_t)run->count * esz || run->len % esz != 0)
    return ORION_EPARSE;
  orion_msg_run_copy((char *)a->values + (size_t)run->first * esz, run,
                     esz);
  return 0;
}

void orion_msg_run_copy(void *dst, const orion_msg_run *run, size_t esz) {
  size_t full = (size_t)run->count * esz;
  if (run->len > 0) /* an empty run's data is NULL */
    memcpy(dst, run->data, run->len);
  if (full > run->len)
    memset((char *)dst + run->len, 0, full - run->len);
}
