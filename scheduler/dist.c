/* The distributed engine's glue: parallel_for over orion-executor
 * processes.
 *
 * The driver holds the master copy of every DistArray and is the server of
 * the arrays the plan places on servers.  For a loop it sends every
 * executor the body (LOAD_BODY); then the loop's state machine
 * (scheduler/loop.h) decides which block goes out when: space part p runs
 * on executor p * N / n0 (a contiguous range of parts each), and a block
 * is sent as soon as the blocks before it that share its space or time
 * part are done (or, dispatching early, the one of its space part is
 * sent; dispatching ahead, also the one of its time part only sent, the
 * rows pushed between executors carrying that dependence), so an executor
 * receives its next block's data while it computes the current one.
 * This file carries
 * those decisions out over the cluster (dsm/cluster.h) and feeds the
 * executors' reports back to the state machine.  A RUN_BLOCK carries only
 * what the executor lacks (dsm/replica.h keeps what each one holds):
 *   - the block's elements of a sparse iterated array, unless the executor
 *     already holds that version of the block (blocks stay resident across
 *     loops);
 *   - for every dense array the body reads, the rows it may read (from the
 *     plan's subscripts and the block's key ranges: the local partition, the
 *     rotating partition, or the whole array for server-held ones), minus
 *     those the executor already holds at their current version.
 * The executor answers with the elements the block changed (it compares the
 * ranges the body may write before and after: dirty elements only) and
 * ships buffered writes at their flush points, which the driver applies
 * with the buffer's operator.  Resident arrays (scheduler/dist_resid.c) are the
 * exception: their rows go from executor to executor and stay there after
 * the loop, and sharded ones (dsm/shard.h) live with their owners during
 * it.
 *
 * Every payload is built and read with the typed codec (dsm/msg.h): row
 * data travels as views of the arrays' own memory until the encoder
 * appends it to the frame, and arrives as views into the frame.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "analysis/analyze.h"
#include "dsm/cluster.h"
#include "dsm/msg.h"
#include "dsm/pload.h"
#include "dsm/proto.h" /* orion_shard_first, ORION_BODY_CACHE */
#include "dsm/replica.h"
#include "scheduler/dist.h"
#include "scheduler/dist_held.h"
#include "scheduler/dist_int.h"
#include "scheduler/dist_check.h"
#include "scheduler/dist_keys.h"
#include "scheduler/dist_rows.h"
#include "scheduler/dist_start.h"
#include "scheduler/dist_watch.h"
#include "executor/exec.h"
#include "scheduler/jobpage.h"
#include "scheduler/module.h"
#include "scheduler/loop.h"
#include "util/alloc.h"
#include "util/hash.h"

static uint64_t dispatch_counter; /* numbers every block sent */
static int64_t run_counter;       /* numbers every loop run */

/* Compiled bodies each executor was sent (by hash), so a loop that runs
 * again ships only the hash: as many per executor as it keeps
 * (ORION_BODY_CACHE), oldest replaced. */
#define CSENT_WAYS ORION_BODY_CACHE
static uint64_t *csent;
static int csent_n;

static uint64_t body_hash(const orion_dist_job *j) {
  uint64_t h = orion_hash_bytes(ORION_HASH_INIT, j->csrc, j->clen);
  h = orion_hash_bytes(h, j->cflags, strlen(j->cflags));
  if (j->gpu != 0) /* a device body too: executors build it from the source */
    h = orion_hash_bytes(h, "gpu", 3);
  return h != 0 ? h : 1;
}

/* True when executor e already has the body with hash h; else records it
 * as sent. */
static int body_sent(int e, int n, uint64_t h) {
  int k;
  if (csent == NULL || csent_n != n) {
    orion_free(csent);
    csent = orion_calloc((size_t)n * CSENT_WAYS, sizeof *csent);
    csent_n = csent != NULL ? n : 0;
    if (csent == NULL)
      return 0;
  }
  for (k = 0; k < CSENT_WAYS; k++)
    if (csent[e * CSENT_WAYS + k] == h)
      return 1;
  memmove(&csent[e * CSENT_WAYS + 1], &csent[e * CSENT_WAYS],
          sizeof *csent * (CSENT_WAYS - 1));
  csent[e * CSENT_WAYS] = h;
  return 0;
}

void orion__dist_forget(mod_state *s, darray *d) {
  if (d->rep != NULL && s != NULL && s->cl != NULL) {
    int64_t *v = orion_realloc(s->forget,
                               sizeof *v * (size_t)(s->nforget + 1));
    if (v != NULL) {
      s->forget = v;
      s->forget[s->nforget++] = d->id;
    }
  }
  orion_replica_free(d->rep);
  d->rep = NULL;
}

void orion__dist_stop(mod_state *s) {
  orion_free(csent);
  csent = NULL;
  csent_n = 0;
  orion__body_forget();
  if (s->cl_starting != NULL) /* finished so that it stops cleanly */
    (void)orion__dist_cluster(s);
  if (s->cl != NULL)
    orion_cluster_stop(s->cl);
  s->cl = NULL;
  orion_free(s->forget);
  s->forget = NULL;
  s->nforget = 0;
}

void orion__dist_detach(lua_State *L, mod_state *s) {
  lua_getfield(L, LUA_REGISTRYINDEX, ARRAYS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    darray *d = luaL_testudata(L, -1, ARRAY_MT);
    if (d != NULL && d->a != NULL && d->rep != NULL) {
      orion__dist_reclaim(s, d);
      orion_replica_free(d->rep);
      d->rep = NULL;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  orion_free(csent);
  csent = NULL;
  csent_n = 0;
  orion__body_forget();
  orion_free(s->forget);
  s->forget = NULL;
  s->nforget = 0;
  s->cl = NULL;
}

/* The record of what n executors hold of d, made when missing; new
 * versions when the script wrote d since the last loop. */
static orion_replica *replica_of(darray *d, int n) {
  if (d->rep == NULL)
    d->rep = orion_replica_new(d->a, n, d->gen);
  if (d->rep != NULL)
    orion_replica_sync(d->rep, d->gen);
  return d->rep;
}

/* ---- a loop in flight: scheduler/dist_int.h ---------------------------------- */

/* Key ranges of every block of the iterated array, kept while its blocks
 * are. */
static int block_ranges(loop_run *r) {
  darray *it = r->j->it;
  orion_replica *c = r->itc;
  int nb = it->bs.n0 * it->bs.n1;
  if (c->krange != NULL && c->bs_gen == it->bs_gen && c->nb == nb)
    return 0;
  orion_free(c->krange);
  c->krange = orion_malloc(sizeof *c->krange * (size_t)nb);
  if (c->krange == NULL)
    return ORION_ENOMEM;
  orion_blockset_key_ranges(it->a, &it->bs, c->krange);
  return 0;
}

/* ---- payloads the driver sends (dsm/msg.h) ------------------------------ */

/* RUN_BLOCK's segments of block b: positions within the block's own copy
 * when the iterated array is sparse, in the whole array when dense. */
static void block_segs(loop_run *r, int b, orion_msg_run_block *m) {
  const darray *it = r->j->it;
  const orion_blockset *bs = &it->bs;
  int64_t sg, s0 = bs->first[b], s1 = bs->first[b + 1];
  int64_t base = it->a->sparse && s0 < s1 ? bs->segs[s0].lo : 0;
  for (sg = s0; sg < s1; sg++) {
    r->segs[sg - s0].lo = bs->segs[sg].lo - base;
    r->segs[sg - s0].hi = bs->segs[sg].hi - base;
  }
  m->segs = r->segs;
  m->nsegs = s1 - s0;
}

/* The element positions [*lo, *hi) block b covers ([0, 0) when empty). */
static void block_span(const orion_blockset *bs, int64_t b, int64_t *lo,
                       int64_t *hi) {
  int64_t s0 = bs->first[b], s1 = bs->first[b + 1];
  *lo = s0 < s1 ? bs->segs[s0].lo : 0;
  *hi = s0 < s1 ? bs->segs[s1 - 1].hi : 0;
}

/* RUN_BLOCK's sparse elements of block b, unless executor e holds them. */
static void block_elems(loop_run *r, int e, int b, orion_msg_run_block *m) {
  const orion_array *a = r->j->it->a;
  int64_t lo, hi;
  size_t esz = orion_type_size(a->type);
  if (!a->sparse)
    return;
  block_span(&r->j->it->bs, b, &lo, &hi);
  m->first = lo;
  m->keep = r->keep;
  if (r->itc->bhave[e * r->itc->nb + b] == r->itc->bver[b])
    return;
  /* The driver's copy is current: values kept elsewhere came back when
   * the run started (orion__resid_keep). */
  if (orion__resid_block_holder(r, b) != -1)
    orion_cluster_fail(r->cl, "block %d of %s: its values are on executor "
                              "%d, not at the driver or executor %d",
                       b, r->j->where, orion__resid_block_holder(r, b), e);
  m->has_elems = 1;
  m->nelems = hi - lo;
  m->keys = (const char *)(a->keys + lo * a->ndims);
  m->keys_len = (size_t)(hi - lo) * (size_t)a->ndims * 8;
  m->values = (const char *)a->values + (size_t)lo * esz;
  m->values_len = (size_t)(hi - lo) * esz;
  r->itc->bhave[e * r->itc->nb + b] = r->itc->bver[b];
}

/* RUN_BLOCK's rows of dense arrays that executor e lacks, but for the
 * resident ones (scheduler/dist_resid.c); 0 or ORION_ENOMEM. */
static int block_rows(loop_run *r, int e, int b) {
  int i, rc = 0;
  for (i = 0; i < r->nuse && rc == 0; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi, wlo, whi;
    if (u->d->a->sparse || u->sharded)
      continue; /* a shard comes from its owner */
    if (u->resident)
      continue; /* scheduler/dist_resid.c */
    /* What it reads, and what it may write: the executor compares the
     * written ranges with its copy afterwards, so that copy must be the
     * driver's current one. */
    orion__dist_row_range(r, u, b, ACC_READ, &lo, &hi);
    orion__dist_row_range(r, u, b, ACC_WRITE, &wlo, &whi);
    if (whi > wlo && hi <= lo) {
      lo = wlo;
      hi = whi;
    } else if (whi > wlo) {
      lo = wlo < lo ? wlo : lo;
      hi = whi > hi ? whi : hi;
    }
    rc = orion__dist_add_rows(&r->runs, u, e, lo, hi, r->seq[b]);
  }
  return rc;
}

/* RUN_BLOCK's ranges the block may write directly. */
static void block_watch(loop_run *r, int b) {
  const orion_blockset *bs = &r->j->it->bs;
  int i;
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi, sg;
    if (u->d->a->sparse || u->resident ||
        (u->sharded && !(u->shard_flags & ORION_SHARD_DIRECT)))
      continue;
    if (u->iterated) /* the block's own segments */
      for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++)
        range_add(&r->watch, u->d->id, bs->segs[sg].lo,
                  bs->segs[sg].hi - bs->segs[sg].lo);
    orion__dist_row_range(r, u, b, ACC_WRITE, &lo, &hi);
    if (hi > lo)
      range_add(&r->watch, u->d->id, lo * u->c->row_elems,
                (hi - lo) * u->c->row_elems);
  }
}

/* RUN_BLOCK of block b for executor e: the block's segments, its sparse
 * elements unless e holds them, the rows of dense arrays e lacks, the
 * ranges to watch and the resident rows that move.  Returns the encoder's
 * code (ORION_ENOMEM, -EMSGSIZE, ...). */
static int put_run_block(loop_run *r, orion_buf *buf, int e, int b) {
  orion_msg_run_block m;
  int rc;
  memset(&m, 0, sizeof m);
  m.block = b;
  m.seed = r->j->seed;
  m.nblocks = r->j->sched->nblocks;
  m.space = r->reorder ? b / r->j->sched->n1 : -1;
  m.time = r->reorder ? b % r->j->sched->n1 : -1;
  m.late = r->late;
  block_segs(r, b, &m);
  block_elems(r, e, b, &m);
  r->seq[b] = ++dispatch_counter;
  r->runs.n = r->watch.n = 0;
  rc = block_rows(r, e, b);
  if (rc == 0)
    rc = orion__resid_block(r, e, b);
  if (rc != 0)
    return rc;
  block_watch(r, b);
  m.runs = r->runs.v;
  m.nruns = r->runs.n;
  m.watch = r->watch.v;
  m.nwatch = r->watch.n;
  m.gets = r->gets;
  m.ngets = r->ngets;
  m.puts = r->puts;
  m.nputs = r->nputs;
  return orion_msg_run_block_encode(buf, &m);
}

/* ---- the transport of the loop's state machine -------------------------- */

static void io_send_block(void *ud, int e, int b) {
  loop_run *r = ud;
  orion_buf buf;
  int rc;
  orion_buf_init(&buf);
  rc = put_run_block(r, &buf, e, b);
  if (rc == ORION_ENOMEM || buf.oom)
    orion_cluster_fail(r->cl, "out of memory sending block %d", b);
  if (rc == -EMSGSIZE)
    orion_cluster_fail(r->cl, "block %d of %s is larger than the largest "
                              "frame (%u bytes)",
                       b, r->j->where, ORION_WIRE_MAX_FRAME);
  if (rc != 0)
    orion_cluster_fail(r->cl, "cannot encode block %d of %s: %s", b,
                       r->j->where, orion_strerror(rc));
  if (r->m.held[e] + r->m.ran[e] == 1) { /* its first of the pass */
    r->first_bytes += buf.len;
    r->nfirst++;
  } else {
    r->other_bytes += buf.len;
    r->nother++;
  }
  orion_cluster_send(r->cl, e, &buf);
  orion_buf_free(&buf);
}

static void io_end_loop(void *ud, int e, int abort) {
  loop_run *r = ud;
  orion_msg_loop_end m;
  orion_buf b;
  m.abort = abort;
  orion_buf_init(&b);
  orion_msg_loop_end_encode(&b, &m);
  orion_cluster_send(r->cl, e, &b);
  orion_buf_free(&b);
}

static void io_pull(void *ud, int e) {
  loop_run *r = ud;
  orion_msg_shard_pull m = {0};
  orion_buf b;
  if (r->pull_seq == 0) /* after every block and end of loop */
    r->pull_seq = ++dispatch_counter;
  m.keep = r->keep_shards;
  orion_buf_init(&b);
  orion_msg_shard_pull_encode(&b, &m);
  orion_cluster_send(r->cl, e, &b);
  orion_buf_free(&b);
}

static void io_fail(void *ud, int e, int b, const char *msg) {
  loop_run *r = ud;
  (void)b; /* msg names it */
  (void)e;
  orion_cluster_fail(r->cl, "%s", msg);
}

/* An executor lost while the loop runs: the loop's state machine adds the
 * block that was lost with it and ends the job through io_fail. */
static void on_lost(void *ud, int e, int silent, const char *what) {
  loop_run *r = ud;
  if (silent)
    orion_loop_timeout(&r->m, e, what);
  else
    orion_loop_lost(&r->m, e, what);
}

/* ---- payloads the executors send, and what the driver does with them ---- */

static void on_block_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_block_done m;
  int64_t b;
  orion_error err;
  orion_error_clear(&err);
  orion__dist_check_decoded(
      r, e, "BLOCK_DONE",
      orion_msg_block_done_decode(f->payload, f->len, &m, &err), &err);
  b = m.block;
  orion__dist_check_seconds(r, e, "BLOCK_DONE", "seconds", m.seconds);
  orion__dist_check_seconds(r, e, "BLOCK_DONE", "wait seconds", m.wait_seconds);
  if (orion_loop_check_done(&r->m, e, b) != 0)
    orion__dist_bad_frame(r, e, "BLOCK_DONE",
                          "block %lld is not one it was sent", (long long)b);
  r->secs[e] += m.seconds;
  if (m.kept && (!r->keep || !r->j->it->a->sparse))
    orion__dist_bad_frame(r, e, "BLOCK_DONE",
                          "it kept block %lld's values, which the driver "
                          "did not ask it to",
                          (long long)b);
  if (m.kept) /* the sparse block's new values, at e */
    orion__resid_block_values(r, e, (int)b, 1);
  if (m.has_values) { /* the sparse block's new values */
    darray *it = r->j->it;
    size_t esz = orion_type_size(it->a->type);
    int64_t lo, hi;
    block_span(&it->bs, b, &lo, &hi);
    if (!it->a->sparse || m.values_len != (size_t)(hi - lo) * esz)
      orion__dist_bad_frame(r, e, "BLOCK_DONE",
                            "its values are %zu bytes, block %lld "
                            "has %zu",
                            m.values_len, (long long)b,
                            it->a->sparse ? (size_t)(hi - lo) * esz : 0);
    if (m.values_len > 0) /* an empty view is NULL */
      memcpy((char *)it->a->values + (size_t)lo * esz, m.values,
             m.values_len);
    orion__resid_block_values(r, e, (int)b, 0);
  }
  orion__dist_take_runs(r, e, "BLOCK_DONE", m.runs, m.nruns, RUNS_ANY, r->seq[b]);
  orion__resid_done(r, e, (int)b);
  orion_loop_note_seconds(&r->m, e, b, m.seconds - m.wait_seconds,
                          m.wait_seconds);
  orion__assign_note_block(r, e, (int)b, m.seconds - m.wait_seconds);
  orion_msg_block_done_free(&m);
  orion_loop_block_done(&r->m, e, b);
}

/* The decoded items go to the buffer's apply as they are (dsm/wbuf.h's
 * orion_pend_item is dsm/msg.h's orion_msg_item). */
static void apply_flush(void *ud, int e, const char *p, size_t len) {
  loop_run *r = ud;
  orion_msg_buffer_flush m;
  const orion_pend_item *items;
  int64_t k, last;
  orion_error err;
  arr_use *u = NULL;
  int i;
  /* m.isint: the driver's buffer knows its type. */
  orion_error_clear(&err);
  orion__dist_check_decoded(r, e, "BUFFER_FLUSH",
                            orion_msg_buffer_flush_decode(p, len, &m, &err),
                            &err);
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].id == m.buffer)
      u = orion__dist_use_of(r, r->j->bufs[i].target);
  if (m.block < -1 || m.block >= r->j->sched->nblocks)
    orion__dist_bad_frame(r, e, "BUFFER_FLUSH",
                          "block %lld is not a block of the loop "
                          "(0..%d, or -1)",
                          (long long)m.block, r->j->sched->nblocks - 1);
  if (u == NULL)
    orion__dist_bad_frame(r, e, "BUFFER_FLUSH",
                          "buffer %lld is not a buffer of the loop",
                          (long long)m.buffer);
  if (m.run != r->run)
    orion__dist_bad_frame(r, e, "BUFFER_FLUSH",
                          "run %lld is not the loop's run %lld",
                          (long long)m.run, (long long)r->run);
  if (m.block >= 0 && !orion_loop_finished(&r->m)) {
    /* A flush = "loop" block's writes: held until every block's are in. */
    if (orion__held_add(&r->held, m.block, e, p, len) != 0)
      orion_cluster_fail(r->cl, "out of memory holding buffered writes");
    orion_msg_buffer_flush_free(&m);
    return;
  }
  items = m.items;
  orion_error_clear(&err);
  if (orion_exec_buffer_apply(r->s->ex, m.buffer, items, m.nitems, &err) != 0)
    orion_loop_fail(&r->m, &err);
  /* The target changed there: every executor's copy of those chunks is
   * stale.  Items come in ascending key order, so one mark per chunk. */
  for (k = 0, last = -1; k < m.nitems; k++) {
    int64_t chunk;
    if (items[k].key < 0 || items[k].key >= u->d->a->nnz)
      continue; /* refused by the apply above */
    chunk = items[k].key / u->c->row_elems / u->c->chunk;
    if (chunk != last)
      orion_replica_changed(u->c, -1, 0, items[k].key, 1);
    last = chunk;
  }
  orion_msg_buffer_flush_free(&m);
}

static void on_flush(loop_run *r, int e, const orion_wire_frame *f) {
  apply_flush(r, e, (const char *)f->payload, f->len);
}

static void on_loop_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_loop_done m;
  orion_error err;
  int64_t k;
  orion_error_clear(&err);
  orion__dist_check_decoded(
      r, e, "LOOP_DONE",
      orion_msg_loop_done_decode(f->payload, f->len, &m, &err), &err);
  orion__dist_check_seconds(r, e, "LOOP_DONE", "compute seconds",
                            m.compute_seconds);
  orion__dist_check_seconds(r, e, "LOOP_DONE", "wait seconds", m.wait_seconds);
  orion__dist_check_seconds(r, e, "LOOP_DONE", "idle seconds", m.idle_seconds);
  for (k = 0; k < m.naccs; k++) {
    const orion_msg_acc_value *a = &m.accs[k];
    int i;
    for (i = 0; i < r->j->naccs && r->j->accs[i] != a->id; i++)
      ;
    if (i == r->j->naccs)
      orion__dist_bad_frame(r, e, "LOOP_DONE",
                            "accumulator id %lld is not one of the loop's",
                            (long long)a->id);
    if (a->block < -1)
      orion__dist_bad_frame(r, e, "LOOP_DONE",
                            "accumulator %lld's block is %lld",
                            (long long)a->id, (long long)a->block);
    if (a->has) {
      dacc *acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, a->id);
      orion_accval v;
      v.has = a->has;
      v.isint = a->isint;
      v.i = (lua_Integer)a->i;
      v.d = (lua_Number)a->d;
      if (acc != NULL &&
          orion_acc_table_put(&r->accpart, i, a->block, e, acc->op, &v) != 0)
        orion__dist_bad_frame(r, e, "LOOP_DONE",
                              "accumulator %lld's block %lld is "
                              "not a block of the loop",
                              (long long)a->id, (long long)a->block);
    }
  }
  r->peer_bytes += m.peer_bytes;
  r->shard_items += m.shard_items;
  r->gpu_blocks += m.gpu_blocks;
  r->reordered += m.reordered;
  r->cpu += m.cpu_seconds;
  r->exch_cpu += m.exch_cpu_seconds;
  r->net_cpu += m.net_cpu_seconds;
  r->body_cpu += m.body_cpu_seconds;
  r->body_wall += m.body_seconds;
  r->managed.bytes += m.managed_bytes;
  r->managed.items += m.managed_items;
  r->managed.staleness_sum += m.managed_staleness;
  r->secs[r->n + e] += m.compute_seconds; /* orion_dist_stats's layout */
  r->secs[2 * r->n + e] += m.wait_seconds;
  r->secs[3 * r->n + e] += m.idle_seconds;
  orion_msg_loop_done_free(&m);
  if (orion_loop_exec_done(&r->m, e) != 0)
    orion__dist_bad_frame(r, e, "LOOP_DONE",
                          "the loop has not ended, or it sent one before");
}

/* An owner's changes to its shards during the run: they become the
 * driver's, and the owner holds them (nobody else does). */
static void on_shard_data(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_shard_data m;
  orion_error err;
  orion_error_clear(&err);
  orion__dist_check_decoded(
      r, e, "SHARD_DATA",
      orion_msg_shard_data_decode(f->payload, f->len, &m, &err), &err);
  orion__dist_take_runs(r, e, "SHARD_DATA", m.runs, m.nruns, RUNS_OWNED, r->pull_seq);
  if (m.nkept > 0 && !r->keep_shards)
    orion__dist_bad_frame(r, e, "SHARD_DATA", "it kept rows the driver "
                                              "asked for");
  orion__dist_take_kept(r, e, m.kept, m.nkept);
  orion_msg_shard_data_free(&m);
  if (orion_loop_pulled(&r->m, e) != 0)
    orion__dist_bad_frame(r, e, "SHARD_DATA", "the driver asked for none");
}

static void on_body_error(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_body_error be;
  orion_error err;
  orion_error_clear(&err);
  orion__dist_check_decoded(
      r, e, "BODY_ERROR",
      orion_msg_body_error_decode(f->payload, f->len, &be, &err), &err);
  if (be.executor != e)
    orion__dist_bad_frame(r, e, "BODY_ERROR", "its executor id is %lld",
                          (long long)be.executor);
  if (be.block < -1 || be.block >= r->j->sched->nblocks)
    orion__dist_bad_frame(r, e, "BODY_ERROR",
                          "block %lld is not a block of the loop "
                          "(0..%d, or -1)",
                          (long long)be.block, r->j->sched->nblocks - 1);
  orion_loop_body_error(&r->m, e, be.block, be.msg, be.msg_len);
}

static void on_frame(void *ud, int e, const orion_wire_frame *f) {
  loop_run *r = ud;
  switch (f->type) {
  case ORION_WIRE_SHARD_DATA:
    on_shard_data(r, e, f);
    break;
  case ORION_WIRE_BLOCK_DONE:
    on_block_done(r, e, f);
    break;
  case ORION_WIRE_BUFFER_FLUSH:
    on_flush(r, e, f);
    break;
  case ORION_WIRE_LOOP_DONE:
    on_loop_done(r, e, f);
    break;
  case ORION_WIRE_BODY_ERROR:
    on_body_error(r, e, f);
    break;
  case ORION_WIRE_BLOCK_KEYS:
    orion__dist_block_keys(r, e, f);
    break;
  default:
    orion_cluster_fail(r->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(r->cl, e),
                       orion_wire_type_name(f->type));
  }
}

/* Called after every event while the driver waits: the watch looks in. */
static int loop_finished(void *ud) {
  loop_run *r = ud;
  orion__dist_watch_poll(&r->eye);
  orion__chain_pump(r);
  return orion_loop_finished(&r->m);
}

/* Server-held arrays are sharded across the executors: each owns a
 * contiguous range of the array's chunks, applies the buffered and direct
 * writes to them and serves reads of them to the others. */
static void decide_shard(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  const orion_plan_array *pa;
  int i;
  if (p == NULL || u->plan_index < 0 || u->iterated || u->d->a->sparse ||
      u->c->nchunks == 0)
    return;
  pa = &p->arrays[u->plan_index];
  if (pa->place == PLACE_SERVER_RW && pa->writes > 0) {
    /* Written directly: each block sends its changes to the owners
     * (executor/exec_swrite.c), and refreshes its copy from them first, so
     * that it sees which elements it changed. */
    for (i = 0; i < r->j->nbufs; i++)
      if (r->j->bufs[i].target == u->d->id)
        return; /* and through a buffer: the driver stays its server */
    u->sharded = 1;
    u->shard_flags = ORION_SHARD_FETCH | ORION_SHARD_WRITTEN |
                     ORION_SHARD_DIRECT;
    r->pull = 1;
    return;
  }
  if ((pa->place != PLACE_SERVER_RO && pa->place != PLACE_SERVER_BUF) ||
      pa->writes > 0)
    return;
  u->sharded = 1;
  u->shard_flags = pa->reads > 0 ? ORION_SHARD_FETCH : 0;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].target == u->d->id)
      u->shard_flags |= ORION_SHARD_WRITTEN;
  if (u->shard_flags & ORION_SHARD_WRITTEN)
    r->pull = 1;
}

/* Whether the owners of written shards keep their rows after the loop
 * (the default): ORION_SHARD_PULL_DATA=1 has them send the changed rows to
 * the driver instead, the path before issue 36's peer-to-peer reduction,
 * to compare. */
static int shards_kept_wanted(void) {
  const char *v = getenv("ORION_SHARD_PULL_DATA");
  return v == NULL || v[0] == '\0' || strcmp(v, "0") == 0;
}

/* After a failed loop with sharded writes: the owners applied part of the
 * loop's writes, so nobody's copy can be trusted any more. */
static void drop_shards(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].sharded && (r->use[i].shard_flags & ORION_SHARD_WRITTEN))
      orion_replica_invalidate(r->use[i].c);
}

/* ---- starting a loop ---------------------------------------------------- */

static void send_forget(mod_state *s) {
  orion_msg_forget m;
  int e;
  if (s->nforget == 0)
    return;
  m.ids = s->forget;
  m.n = s->nforget;
  for (e = 0; e < orion_cluster_size(s->cl); e++) {
    orion_buf b;
    orion_buf_init(&b);
    orion_msg_forget_encode(&b, &m);
    orion_cluster_send(s->cl, e, &b);
    orion_buf_free(&b);
  }
  s->nforget = 0;
}

static int add_use(loop_run *r, darray *d, int iterated) {
  int i;
  if (d == NULL || d->a == NULL)
    return ORION_EINVAL;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].d == d)
      return 0;
  r->use[r->nuse].d = d;
  r->use[r->nuse].iterated = iterated;
  r->use[r->nuse].plan_index = -1;
  r->use[r->nuse].c = replica_of(d, r->n);
  if (r->use[r->nuse].c == NULL)
    return ORION_ENOMEM;
  if (r->j->plan != NULL)
    for (i = 0; i < r->j->plan->narrays; i++)
      if (r->j->plan->arrays[i].info.id == d->id)
        r->use[r->nuse].plan_index = i;
  decide_shard(r, &r->use[r->nuse]);
  r->nuse++;
  return 0;
}

/* A buffer's helpers (orion.buffer's with) stay with its target: with a
 * sharded target they are sharded alike (same dims and type: the same
 * chunks and owners), written by the owners' apply functions and pulled
 * after the loop; otherwise the driver applies, to its own copies (bound
 * in lua/pfor.c), and they are no uses of the loop. */
static int with_uses(loop_run *r, const orion_dist_buf *bf) {
  arr_use *t = orion__dist_use_of(r, bf->target), *u;
  int k, rc = 0;
  for (k = 0; t != NULL && t->sharded && k < bf->nwith && rc == 0; k++) {
    rc = add_use(r, orion__by_id(r->L, ARRAYS_KEY, ARRAY_MT, bf->with[k]), 0);
    if (rc == 0 && (u = orion__dist_use_of(r, bf->with[k])) != NULL) {
      u->sharded = 1;
      u->shard_flags = ORION_SHARD_WRITTEN;
      r->pull = 1;
    }
  }
  return rc;
}

/* After the loop: helpers the driver wrote are stale everywhere else. */
static void with_done(loop_run *r) {
  int i, k;
  for (i = 0; i < r->j->nbufs; i++) {
    const orion_dist_buf *bf = &r->j->bufs[i];
    arr_use *t = orion__dist_use_of(r, bf->target);
    for (k = 0; (t == NULL || !t->sharded) && k < bf->nwith; k++) {
      darray *h = orion__by_id(r->L, ARRAYS_KEY, ARRAY_MT, bf->with[k]);
      if (h != NULL)
        h->gen++;
    }
  }
}

/* LOAD_BODY's arrays, accumulators and buffers, the same for every
 * executor (r->adesc, r->accdesc and r->bufdesc, made with the loop). */
static void body_lists(loop_run *r) {
  const orion_dist_job *j = r->j;
  int i;
  for (i = 0; i < r->nuse; i++) {
    const orion_array *a = r->use[i].d->a;
    orion_msg_array_desc *ad = &r->adesc[i];
    ad->id = r->use[i].d->id;
    ad->type = (int)a->type;
    ad->sparse = a->sparse;
    ad->ragged = a->ragged;
    ad->ndims = a->ndims;
    memcpy(ad->dims, a->dims, sizeof *ad->dims * (size_t)a->ndims);
  }
  for (i = 0; i < j->naccs; i++) {
    dacc *acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, j->accs[i]);
    r->accdesc[i].id = j->accs[i];
    r->accdesc[i].op = acc != NULL ? (int64_t)acc->op : 0;
  }
  for (i = 0; i < j->nbufs; i++) {
    const orion_dist_buf *bf = &j->bufs[i];
    orion_msg_buf_desc *bd = &r->bufdesc[i];
    bd->id = bf->id;
    bd->name = bf->name;
    bd->name_len = strlen(bf->name);
    bd->target = bf->target;
    bd->op = (int64_t)bf->op;
    bd->apply = bf->blob;
    bd->apply_len = bf->blob != NULL ? bf->blen : 0;
    bd->flush = bf->flush;
  }
}

/* LOAD_BODY's shards for executor e: the rows of its own chunks that it
 * lacks, as runs in r->runs; 0 or ORION_ENOMEM. */
static int body_shards(loop_run *r, int e, orion_msg_load_body *m) {
  uint64_t seq = ++dispatch_counter;
  int i, nsh = 0, rc = 0;
  r->runs.n = 0;
  for (i = 0; i < r->nuse && rc == 0; i++) {
    arr_use *u = &r->use[i];
    int64_t k0, k1, lo, hi;
    if (!u->sharded)
      continue;
    k0 = orion_shard_first(e, r->n, u->c->nchunks);
    k1 = orion_shard_first(e + 1, r->n, u->c->nchunks);
    lo = k0 * u->c->chunk;
    hi = k1 * u->c->chunk < u->c->rows ? k1 * u->c->chunk : u->c->rows;
    r->shards[nsh].array = u->d->id;
    r->shards[nsh].flags = u->shard_flags;
    r->shards[nsh++].nruns = r->runs.n; /* its first run, for now */
    if (!u->chain) /* else its rows come by BCAST (scheduler/dist_chain.c) */
      rc = orion__resid_shard(r, u, e, lo, hi, seq);
  }
  for (i = 0; i < nsh && rc == 0; i++) { /* r->runs is complete: point */
    int64_t first = r->shards[i].nruns;
    int64_t end = i + 1 < nsh ? r->shards[i + 1].nruns : r->runs.n;
    r->shards[i].runs = r->runs.v + first;
    r->shards[i].nruns = end - first;
  }
  m->shards = r->shards;
  m->nshards = nsh;
  return rc;
}

/* Whether executor e runs the loop's blocks on its device. */
static int gpu_for(const loop_run *r, int e) {
  return r->j->gpu != 0 && r->chash != 0 &&
         orion_cluster_executor_gpu(r->cl, e, NULL, 0);
}

/* LOAD_BODY for executor e; returns the encoder's code. */
static int put_load_body(loop_run *r, orion_buf *b, int e) {
  const orion_dist_job *j = r->j;
  orion_msg_load_body m;
  int rc;
  memset(&m, 0, sizeof m);
  m.loop = j->load_loop;
  if (r->body_chain) { /* its bytes follow in BCAST frames */
    m.blob_chained = (int64_t)j->blen;
  } else {
    m.blob = j->blob;
    m.blob_len = j->blen;
  }
  orion__body_ref(r, e, &m); /* or one e holds (scheduler/dist_body.c) */
  m.iter = j->it->id;
  m.arrays = r->adesc;
  m.narrays = r->nuse;
  m.accs = r->accdesc;
  m.naccs = j->naccs;
  m.bufs = r->bufdesc;
  m.nbufs = j->nbufs;
  m.run = r->run;
  /* The compiled body: its hash (0: interpret), the source unless the
   * executor has it, flags, slots. */
  if (j->csrc != NULL) {
    m.chash = r->chash;
    if (!body_sent(e, r->n, r->chash)) {
      m.csrc = j->csrc;
      m.csrc_len = j->clen;
    }
    m.slots = j->cslots;
    m.nslots = j->ncslots;
  }
  m.cflags = j->cflags;
  m.cflags_len = j->cflags != NULL ? strlen(j->cflags) : 0;
  m.required = j->tier_c;
  if (gpu_for(r, e)) {
    m.gpu = j->gpu;
    m.gkind = j->gkind;
    m.gspace = j->gspace;
    m.gtime = j->gtime;
    m.gskew_dim = j->gskew_dim;
    m.gskew = j->gskew;
    m.gb = j->gb;
  }
  m.bandwidth_mbps = r->s->bandwidth_mbps;
  m.timeout = r->j->timeout;
  m.guards = j->guards;
  m.nguards = j->nguards;
  m.verify = j->verify_mode;
  rc = body_shards(r, e, &m);
  if (rc == 0)
    rc = orion__resid_load_gets(r, e);
  m.gets = r->gets;
  m.ngets = r->ngets;
  return rc != 0 ? rc : orion_msg_load_body_encode(b, &m);
}

/* Block versions of a sparse iterated array follow its blockset. */
static int setup_blocks(loop_run *r) {
  darray *it = r->j->it;
  int rc = orion_replica_set_blocks(r->itc, it->bs.n0 * it->bs.n1,
                                    it->bs_gen);
  return rc != 0 ? rc : block_ranges(r);
}

/* The lists of the loop's frames (see loop_run); LOAD_BODY's filled in.
 * Returns 0 or ORION_ENOMEM. */
static int frame_lists(loop_run *r) {
  const orion_blockset *bs = &r->j->it->bs;
  int64_t b, most = 1;
  for (b = 0; b < (int64_t)bs->n0 * bs->n1; b++)
    if (bs->first[b + 1] - bs->first[b] > most)
      most = bs->first[b + 1] - bs->first[b];
  r->segs = orion_malloc(sizeof *r->segs * (size_t)most);
  r->watch.v = orion_malloc(sizeof *r->watch.v * (size_t)(r->nuse + most));
  r->adesc = orion_calloc((size_t)r->nuse, sizeof *r->adesc);
  r->accdesc = orion_calloc((size_t)r->j->naccs + 1, sizeof *r->accdesc);
  r->bufdesc = orion_calloc((size_t)r->j->nbufs + 1, sizeof *r->bufdesc);
  r->shards = orion_calloc((size_t)r->nuse, sizeof *r->shards);
  if (r->segs == NULL || r->watch.v == NULL ||
      r->adesc == NULL || r->accdesc == NULL || r->bufdesc == NULL ||
      r->shards == NULL)
    return ORION_ENOMEM;
  body_lists(r);
  return 0;
}

static void run_free(loop_run *r) {
  orion__resid_free(r);
  orion__chain_free(r);
  orion_free(r->use);
  orion_free(r->seq);
  orion_free(r->segs);
  orion_msg_runvec_free(&r->runs);
  orion_free(r->watch.v);
  orion_free(r->adesc);
  orion_free(r->accdesc);
  orion_free(r->bufdesc);
  orion_free(r->shards);
  orion_acc_table_free(&r->accpart);
  orion__held_free(&r->held);
  orion_free(r->work);
  orion_loop_free(&r->m);
}

/* The blocks' partials into the accumulators, in the schedule's block
 * order (then the executors' partials from outside blocks, executor 0
 * first): the order the in-process run folds them in too. */
static void combine_accs(loop_run *r) {
  int i;
  for (i = 0; i < r->j->naccs; i++) {
    dacc *acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, r->j->accs[i]);
    if (acc != NULL)
      orion_acc_table_fold(&r->accpart, i, acc->op, r->j->sched->order,
                           &acc->val);
  }
}

/* orion_dist_stats.exec_bytes: a pass whose executors each got one
 * block has nothing to compare the first ones with, and gets the
 * LOAD_BODYs only. */
static double exec_bytes(const loop_run *r) {
  double extra = 0;
  if (r->nfirst > 0 && r->nother > 0)
    extra = (double)r->first_bytes / (double)r->nfirst -
            (double)r->other_bytes / (double)r->nother;
  return (extra > 0 ? extra : 0) +
         (r->n > 0 ? (double)r->body_bytes / r->n : 0);
}

int orion__dist_run(lua_State *L, mod_state *s, const orion_dist_job *j,
                    orion_dist_stats *st, orion_error *err) {
  static const orion_loop_io io = {NULL,    io_send_block, io_end_loop,
                                   io_pull, io_fail,       NULL};
  loop_run r;
  orion_loop_io rio = io;
  orion_cluster *cl = orion__dist_cluster(s);
  uint64_t bytes0, io0;
  const orion_error *failed;
  int i, e, rc = 0, bmode = orion__chain_mode(err);

  if (bmode < 0)
    return bmode;
  /* The executors write the bodies' print straight to our stdout: what the
   * script printed before the loop must be there first. */
  fflush(stdout);
  memset(&r, 0, sizeof r);
  r.L = L;
  r.s = s;
  r.cl = cl;
  r.j = j;
  r.n = orion_cluster_size(cl);
  r.n1 = j->it->bs.n1;
  r.run = ++run_counter;
  r.keep_shards = shards_kept_wanted();
  r.chash = j->csrc != NULL ? body_hash(j) : 0;
  r.secs = orion_calloc((size_t)r.n * 4, sizeof *r.secs);
  r.use = orion_calloc((size_t)(j->narrays +
                                 j->nbufs * (1 + ORION_BUFFER_MAX_WITH) + 1),
                       sizeof *r.use);
  r.seq = orion_calloc((size_t)j->sched->nblocks + 1, sizeof *r.seq);
  if (orion_acc_table_init(&r.accpart, j->naccs, j->sched->nblocks, r.n) !=
          0 ||
      r.secs == NULL || r.use == NULL || r.seq == NULL) {
    orion_acc_table_free(&r.accpart);
    orion_free(r.secs);
    orion_free(r.use);
    orion_free(r.seq);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  bytes0 = orion_cluster_bytes(cl);
  io0 = orion_cluster_io(cl);
  /* What the loop sends before it waits, one write to each executor. */
  orion_cluster_hold(cl, 1);
  send_forget(s);
  rc = add_use(&r, j->it, 1);
  for (i = 0; i < j->narrays && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->arrays[i]), 0);
  for (i = 0; i < j->nbufs && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->bufs[i].target),
                 0);
  for (i = 0; i < j->nbufs && rc == 0; i++)
    rc = with_uses(&r, &j->bufs[i]);
  if (rc == 0) {
    r.itc = r.use[0].c;
    rc = setup_blocks(&r);
  }
  for (i = 0; i < r.nuse && rc == 0; i++) {
    rc = orion__resid_decide(&r, &r.use[i]);
    orion__chain_decide(&r.use[i], bmode);
  }
  if (rc == 0)
    orion__resid_prepare(&r);
  if (rc == 0)
    rc = frame_lists(&r);
  rio.ud = &r;
  if (rc == 0)
    rc = orion_loop_init(&r.m, j->sched, r.n, r.pull, &rio);
  if (rc == 0) {
    int ngpu = 0;
    r.m.early = orion__resid_early(&r);
    r.m.ahead = orion__resid_ahead(&r);
    r.reorder = orion__resid_reorder(&r);
    r.m.window =
        r.reorder ? orion_loop_reorder_window(j->sched->n0, r.n) : 1;
    r.late = orion__resid_late(&r);
    if (r.late)
      r.m.window = j->sched->n0;
    for (e = 0; e < r.n; e++)
      ngpu += gpu_for(&r, e);
    orion__assign_start(&r, ngpu);
    orion__resid_keep(&r);
  }
  if (rc != 0) {
    orion_cluster_hold(cl, 0);
    run_free(&r);
    orion_free(r.secs);
    return orion_error_set(err, rc, "parallel_for: cannot set up the loop: "
                                    "%s",
                           orion_strerror(rc));
  }
  orion_cluster_set_handler(cl, on_frame, &r, j->where);
  orion_cluster_set_lost(cl, on_lost);
  if (orion__resid_start(&r) != 0)
    orion_cluster_fail(cl, "out of memory starting %s", j->where);
  r.body_chain = orion__chain_body(&r, bmode);
  orion__body_start(&r);
  for (e = 0; e < r.n; e++) {
    orion_buf b;
    orion_buf_init(&b);
    rc = put_load_body(&r, &b, e);
    if (rc == ORION_ENOMEM || b.oom)
      orion_cluster_fail(cl, "out of memory sending the body");
    if (rc != 0)
      orion_cluster_fail(cl, "cannot send the body of %s: %s", j->where,
                         rc == -EMSGSIZE ? "larger than the largest frame"
                                         : orion_strerror(rc));
    r.body_bytes += b.len;
    orion_cluster_send(cl, e, &b);
    orion_buf_free(&b);
    st->gpu_execs += gpu_for(&r, e);
  }
  orion__chain_send(&r, ++dispatch_counter);
  orion__dist_watch_start(&r.eye, &r.m, cl, j->where,
                          (const int64_t(*)[ORION_MAX_DIMS][2])r.itc->krange,
                          j->it->a->ndims, s->stall_seconds,
                          s->copts.heartbeat_timeout);
  r.eye.timeout = j->timeout;
  {
    orion_jobpage_loop v = {cl, &r.m, j->where,
                            j->plan != NULL ? orion_sched_name(j->plan->sched)
                                            : "serial",
                            j->it->a->nnz, r.secs, bytes0, &r.peer_bytes};
    orion_jobpage_loop_start(&v);
    orion_loop_start(&r.m);
    orion_cluster_hold(cl, 0);
    orion_cluster_wait(cl, loop_finished, &r);
    orion_cluster_wait(cl, orion__chain_pumped, &r);
    orion_jobpage_loop_end();
  }
  orion__dist_watch_end(&r.eye);
  /* The flush = "loop" writes, block by block (a failure among them fails
   * the loop). */
  if (orion_loop_failed(&r.m) == NULL)
    orion__held_run(&r.held, apply_flush, &r);
  with_done(&r);
  failed = orion_loop_failed(&r.m);
  if (failed == NULL)
    combine_accs(&r);
  if (failed != NULL && r.pull)
    drop_shards(&r);
  if (failed != NULL) {
    orion__chain_failed(&r);
    orion__body_forget();
  }
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  st->bytes = orion_cluster_bytes(cl) - bytes0;
  st->io = orion_cluster_io(cl) - io0;
  st->exec_bytes = exec_bytes(&r);
  st->peer_bytes = r.peer_bytes;
  st->shard_items = r.shard_items;
  st->gpu_blocks = r.gpu_blocks;
  st->managed = r.managed;
  st->exec_seconds = r.secs;
  st->nexec = r.n;
  st->early = r.m.early;
  st->ahead = r.m.ahead && !r.m.dynamic;
  st->blocks_ahead = (uint64_t)r.m.nahead;
  st->reorder = r.reorder;
  st->exec_cpu = r.cpu;
  st->exch_cpu = r.exch_cpu;
  st->net_cpu = r.net_cpu;
  st->body_cpu = r.body_cpu;
  st->body_wall = r.body_wall;
  st->ran_out_of_order = r.reordered;
  st->parts_pushed = r.parts_pushed;
  st->parts_pulled = r.parts_pulled;
  orion__assign_end(&r, st);
  if (failed != NULL) {
    *err = *failed;
    rc = err->code != 0 ? err->code : ORION_EBODY;
  }
  run_free(&r);
  return rc;
}

/* ---- parallel loading --------------------------------------------------- */

int orion__dist_load(mod_state *s, const char *path, const orion_load_opts *o,
                     orion_load_result *res, orion_error *err) {
  return orion_pload(orion__dist_cluster(s), path, o, res, err);
}
