/* The distributed engine's glue: parallel_for over orion-executor
 * processes.
 *
 * The driver holds the master copy of every DistArray and is the server of
 * the arrays the plan places on servers.  For a loop it sends every
 * executor the body (LOAD_BODY); then the loop's state machine
 * (scheduler/loop.h) decides which block goes out when: space part p runs
 * on executor p mod N, and a block is sent as soon as the blocks before it
 * that share its space or time part are done, so an executor receives its
 * next block's data while it computes the current one.  This file carries
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
 * with the buffer's operator.
 *
 * Payloads (dsm/proto.h) are built and read here, one small function per
 * message (put_..., get_...), until dsm/ has a typed codec for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "dsm/cluster.h"
#include "dsm/loader.h"
#include "dsm/msg.h"
#include "dsm/pload.h"
#include "dsm/proto.h"
#include "dsm/replica.h"
#include "dsm/types.h"
#include "lua/dist.h"
#include "lua/exec.h"
#include "lua/module.h"
#include "scheduler/loop.h"
#include "util/alloc.h"
#include "util/cbody.h"
#include "util/hash.h"

static uint64_t dispatch_counter; /* numbers every block sent */
static int64_t run_counter;       /* numbers every loop run */

/* Compiled bodies each executor was sent (by hash), so a loop that runs
 * again ships only the hash: CSENT_WAYS per executor, oldest replaced. */
#define CSENT_WAYS 64
static uint64_t *csent;
static int csent_n;

static uint64_t body_hash(const orion_dist_job *j) {
  uint64_t h = orion_hash_bytes(ORION_HASH_INIT, j->csrc, j->clen);
  h = orion_hash_bytes(h, j->cflags, strlen(j->cflags));
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
  if (s->cl != NULL)
    orion_cluster_stop(s->cl);
  s->cl = NULL;
  orion_free(s->forget);
  s->forget = NULL;
  s->nforget = 0;
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

/* ---- a loop in flight ------------------------------------------------- */

typedef struct arr_use {
  darray *d;
  orion_replica *c; /* what the executors hold of it */
  int plan_index; /* in plan->arrays, or -1 */
  int iterated;
  int shard_flags; /* sharded in this run: ORION_SHARD_*, else 0 */
  int sharded;
  /* Deferred write-back: every access subscripts dimension 1 by the space
   * key itself, so the rows of space part p are touched only by p's
   * blocks, all on one executor.  That executor gets them with p's first
   * block and returns them once, with its LOOP_DONE, instead of after
   * every block. */
  int deferred;
  unsigned char *dsent; /* per space part: its rows went out in this run */
  int64_t kfirst, kcount; /* the block being sent hands these elements
                             over to its executor (kcount 0: none) */
} arr_use;

typedef struct loop_run {
  lua_State *L;
  mod_state *s;
  orion_cluster *cl;
  const orion_dist_job *j;
  int n;          /* executors */
  int n1;         /* blocks per space part */
  arr_use *use;
  int nuse;
  orion_replica *itc; /* what they hold of the iterated array */
  orion_loop m;       /* what to send when (scheduler/loop.h) */
  uint64_t *seq;  /* per block: its dispatch number */
  int pull;       /* sharded arrays written: collect them after the loop */
  int64_t run;    /* this run's number */
  uint64_t pull_seq;
  uint64_t peer_bytes, shard_items;
  uint64_t chash; /* the compiled body's hash, 0 when interpreted */
  double *secs;
} loop_run;

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

/* The rows [*lo, *hi) of array u that block b may read (mode ACC_READ) or
 * write (ACC_WRITE); empty when none. */
static void row_range(const loop_run *r, const arr_use *u, int b, int mode,
                      int64_t *lo, int64_t *hi) {
  const orion_plan *p = r->j->plan;
  int64_t rows = u->d->a->dims[0], l = INT64_MAX, h = -1;
  int i;
  *lo = 0;
  *hi = 0;
  if (u->iterated) {
    /* Its own block's rows, read (the element) and written (a returned
     * value), plus whatever the body's subscripts reach below. */
    l = r->itc->krange[b][0][0];
    h = r->itc->krange[b][0][1];
  }
  if (p == NULL || u->plan_index < 0) {
    *lo = 0;
    *hi = rows;
    return;
  }
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    int64_t al, ah;
    if (ac->array != u->plan_index || ac->buffered || ac->mode != mode)
      continue;
    if (ac->nsub < 1 || ac->sub[0].kind == SUB_UNKNOWN) {
      *lo = 0;
      *hi = rows;
      return;
    }
    if (ac->sub[0].kind == SUB_CONST) {
      al = ah = ac->sub[0].c;
    } else {
      int d = ac->sub[0].dim;
      if (r->itc->krange[b][d][1] < 0)
        continue; /* an empty block */
      al = r->itc->krange[b][d][0] + ac->sub[0].c;
      ah = r->itc->krange[b][d][1] + ac->sub[0].c;
    }
    if (al < l)
      l = al;
    if (ah > h)
      h = ah;
  }
  if (l < 0)
    l = 0;
  if (h >= rows)
    h = rows - 1;
  if (h >= l) {
    *lo = l;
    *hi = h + 1;
  }
}

/* Appends the stale rows of [lo, hi) of u for executor e as runs; only
 * whole chunks are marked as held (a partly sent chunk stays stale there,
 * so that rows the executor did not ask for are never overwritten). */
static int64_t add_rows(orion_buf *b, const arr_use *u, int e, int64_t lo,
                        int64_t hi, uint64_t seq) {
  orion_replica *c = u->c;
  orion_array *a = u->d->a;
  size_t esz = orion_type_size(a->type);
  int64_t k, runs = 0, k0, k1;
  if (hi <= lo)
    return 0;
  k0 = lo / c->chunk;
  k1 = (hi - 1) / c->chunk;
  for (k = k0; k <= k1; k++) {
    uint64_t *have = &c->have[(int64_t)e * c->nchunks + k];
    int64_t rlo = k * c->chunk, rhi = rlo + c->chunk, first, count;
    if (*have == c->ver[k])
      continue;
    c->sent[(int64_t)e * c->nchunks + k] = seq;
    if (rhi > c->rows)
      rhi = c->rows;
    if (rlo >= lo && rhi <= hi)
      *have = c->ver[k];
    if (rlo < lo)
      rlo = lo;
    if (rhi > hi)
      rhi = hi;
    first = rlo * c->row_elems;
    count = (rhi - rlo) * c->row_elems;
    orion_pw_i64(b, u->d->id);
    orion_pw_i64(b, first);
    orion_pw_i64(b, count);
    orion_pw_bytes(b, (const char *)a->values + (size_t)first * esz,
                   (size_t)count * esz);
    runs++;
  }
  return runs;
}

static void put_count(orion_buf *b, size_t at, int64_t n) {
  int i;
  if (b->oom)
    return;
  for (i = 0; i < 8; i++)
    ((unsigned char *)b->data)[at + (size_t)i] =
        (unsigned char)((uint64_t)n >> (8 * i));
}

/* The rows every block of space part p may read or write, as one range. */
static void part_rows(const loop_run *r, const arr_use *u, int p,
                      int64_t *lo, int64_t *hi) {
  int q, m;
  *lo = INT64_MAX;
  *hi = -1;
  for (q = 0; q < r->n1; q++)
    for (m = ACC_READ; m <= ACC_WRITE; m++) {
      int64_t l, h;
      row_range(r, u, p * r->n1 + q, m, &l, &h);
      if (h > l) {
        if (l < *lo)
          *lo = l;
        if (h > *hi)
          *hi = h;
      }
    }
  if (*hi < 0)
    *lo = *hi = 0;
}

/* ---- payloads the driver sends (dsm/proto.h) ---------------------------- */

/* RUN_BLOCK of block b for executor e: the block's segments, its sparse
 * elements unless e holds them, the rows of dense arrays e lacks, the
 * ranges to watch and the deferred rows to keep. */
static void put_run_block(loop_run *r, orion_buf *buf, int e, int b) {
  const orion_dist_job *j = r->j;
  darray *it = j->it;
  const orion_blockset *bs = &it->bs;
  size_t at, cnt_at;
  int64_t sg, runs = 0, watches = 0, nkeep = 0;
  int i;

  at = orion_wire_begin(buf, ORION_WIRE_RUN_BLOCK);
  orion_pw_i64(buf, b);
  orion_buf_u64(buf, j->seed);
  orion_pw_i64(buf, j->sched->nblocks);
  orion_buf_u64(buf, (uint64_t)(bs->first[b + 1] - bs->first[b]));
  for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
    int64_t lo = bs->segs[sg].lo, hi = bs->segs[sg].hi;
    if (it->a->sparse) { /* positions within the block's own copy */
      lo -= bs->segs[bs->first[b]].lo;
      hi -= bs->segs[bs->first[b]].lo;
    }
    orion_pw_i64(buf, lo);
    orion_pw_i64(buf, hi);
  }
  if (it->a->sparse && r->itc->bhave[e * r->itc->nb + b] !=
                           r->itc->bver[b]) {
    int64_t lo = bs->first[b] < bs->first[b + 1] ? bs->segs[bs->first[b]].lo
                                                 : 0;
    int64_t hi = bs->first[b] < bs->first[b + 1]
                     ? bs->segs[bs->first[b + 1] - 1].hi
                     : 0;
    size_t esz = orion_type_size(it->a->type);
    orion_buf_u64(buf, 1);
    orion_pw_i64(buf, hi - lo);
    orion_pw_bytes(buf, it->a->keys + lo * it->a->ndims,
                   (size_t)(hi - lo) * (size_t)it->a->ndims * 8);
    orion_pw_bytes(buf, (const char *)it->a->values + (size_t)lo * esz,
                   (size_t)(hi - lo) * esz);
    r->itc->bhave[e * r->itc->nb + b] = r->itc->bver[b];
  } else {
    orion_buf_u64(buf, 0);
  }
  cnt_at = buf->len;
  orion_buf_u64(buf, 0);
  r->seq[b] = ++dispatch_counter;
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi, wlo, whi;
    if (u->d->a->sparse || u->sharded)
      continue; /* a shard comes from its owner */
    if (u->deferred) {
      int p = b / r->n1;
      u->kcount = 0;
      if (u->dsent[p])
        continue; /* the executor holds the part's current rows */
      part_rows(r, u, p, &lo, &hi);
      u->dsent[p] = 1;
      if (hi > lo) {
        runs += add_rows(buf, u, e, lo, hi, r->seq[b]);
        u->kfirst = lo * u->c->row_elems;
        u->kcount = (hi - lo) * u->c->row_elems;
        nkeep++;
      }
      continue;
    }
    /* What it reads, and what it may write: the executor compares the
     * written ranges with its copy afterwards, so that copy must be the
     * driver's current one. */
    row_range(r, u, b, ACC_READ, &lo, &hi);
    row_range(r, u, b, ACC_WRITE, &wlo, &whi);
    if (whi > wlo && hi <= lo) {
      lo = wlo;
      hi = whi;
    } else if (whi > wlo) {
      lo = wlo < lo ? wlo : lo;
      hi = whi > hi ? whi : hi;
    }
    runs += add_rows(buf, u, e, lo, hi, r->seq[b]);
  }
  put_count(buf, cnt_at, runs);
  cnt_at = buf->len;
  orion_buf_u64(buf, 0);
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi;
    if (u->d->a->sparse || u->sharded || u->deferred)
      continue;
    if (u->iterated) { /* the block's own segments */
      for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
        orion_pw_i64(buf, u->d->id);
        orion_pw_i64(buf, bs->segs[sg].lo);
        orion_pw_i64(buf, bs->segs[sg].hi - bs->segs[sg].lo);
        watches++;
      }
    }
    row_range(r, u, b, ACC_WRITE, &lo, &hi);
    if (hi > lo) {
      orion_pw_i64(buf, u->d->id);
      orion_pw_i64(buf, lo * u->c->row_elems);
      orion_pw_i64(buf, (hi - lo) * u->c->row_elems);
      watches++;
    }
  }
  put_count(buf, cnt_at, watches);
  /* Ranges the executor keeps and returns with its LOOP_DONE. */
  orion_buf_u64(buf, (uint64_t)nkeep);
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    if (u->deferred && u->kcount > 0) {
      orion_pw_i64(buf, u->d->id);
      orion_pw_i64(buf, u->kfirst);
      orion_pw_i64(buf, u->kcount);
    }
  }
  if (orion_wire_end(buf, at) != 0)
    orion_cluster_fail(r->cl, "block %d of %s is larger than the largest "
                              "frame (%u bytes)",
                       b, j->where, ORION_WIRE_MAX_FRAME);
}

/* LOOP_END: u64 abort. */
static void put_loop_end(orion_buf *b, int abort) {
  size_t at = orion_wire_begin(b, ORION_WIRE_LOOP_END);
  orion_buf_u64(b, (uint64_t)abort);
  orion_wire_end(b, at);
}

/* ---- the transport of the loop's state machine -------------------------- */

static void io_send_block(void *ud, int e, int b) {
  loop_run *r = ud;
  orion_buf buf;
  orion_buf_init(&buf);
  put_run_block(r, &buf, e, b);
  if (buf.oom)
    orion_cluster_fail(r->cl, "out of memory sending block %d", b);
  orion_cluster_send(r->cl, e, &buf);
  orion_buf_free(&buf);
}

static void io_end_loop(void *ud, int e, int abort) {
  loop_run *r = ud;
  orion_buf b;
  orion_buf_init(&b);
  put_loop_end(&b, abort);
  orion_cluster_send(r->cl, e, &b);
  orion_buf_free(&b);
}

static void io_pull(void *ud, int e) {
  loop_run *r = ud;
  orion_buf b;
  if (r->pull_seq == 0) /* after every block and end of loop */
    r->pull_seq = ++dispatch_counter;
  orion_buf_init(&b);
  orion_wire_encode(&b, ORION_WIRE_SHARD_PULL, NULL, 0); /* empty */
  orion_cluster_send(r->cl, e, &b);
  orion_buf_free(&b);
}

static void io_fail(void *ud, int e, int b, const char *msg) {
  loop_run *r = ud;
  (void)b; /* msg names it */
  (void)e;
  orion_cluster_fail(r->cl, "%s", msg);
}

/* ---- payloads the executors send, and what the driver does with them ---- */

static arr_use *use_of(loop_run *r, int64_t id) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].d->id == id)
      return &r->use[i];
  return NULL;
}

static void fail_frame(loop_run *r, int e, const char *what)
    __attribute__((noreturn));
static void fail_frame(loop_run *r, int e, const char *what) {
  orion_cluster_fail(r->cl, "executor %d (%s) sent a malformed %s frame", e,
                     orion_cluster_addr(r->cl, e), what);
}

/* A run of elements (dsm/proto.h: i64 array, i64 first, i64 count, bytes
 * data) as the executors send them back. */
typedef struct run_msg {
  int64_t id, first, count;
  const char *data;
  size_t len;
} run_msg;

static int get_run(orion_reader *rd, run_msg *m) {
  m->id = orion_pr_i64(rd);
  m->first = orion_pr_i64(rd);
  m->count = orion_pr_i64(rd);
  m->data = orion_pr_bytes(rd, &m->len);
  return m->data != NULL && !rd->bad ? 0 : ORION_EPARSE;
}

/* Copies a run into the driver's copy of u; ORION_EPARSE when it does not
 * fit u. */
static int apply_run(arr_use *u, const run_msg *m) {
  orion_array *a = u->d->a;
  size_t esz = orion_type_size(a->type);
  if (a->sparse || m->first < 0 || m->count <= 0 || m->first > a->nnz ||
      m->count > a->nnz - m->first || m->len != (size_t)m->count * esz)
    return ORION_EPARSE;
  memcpy((char *)a->values + (size_t)m->first * esz, m->data, m->len);
  return 0;
}

/* BLOCK_DONE's fields before its runs. */
typedef struct block_done_msg {
  int64_t block;
  double seconds;
  int has_values;
  const char *values; /* the sparse block's values when has_values */
  size_t vlen;
  int64_t nruns;
} block_done_msg;

static int get_block_done(orion_reader *rd, block_done_msg *m) {
  m->block = orion_pr_i64(rd);
  m->seconds = orion_pr_f64(rd);
  m->has_values = orion_pr_i64(rd) == 1;
  m->vlen = 0;
  m->values = m->has_values ? orion_pr_bytes(rd, &m->vlen) : NULL;
  m->nruns = orion_pr_count(rd, 32);
  return rd->bad || (m->has_values && m->values == NULL) ? ORION_EPARSE : 0;
}

static void on_block_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  block_done_msg m;
  int64_t k;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  if (get_block_done(&rd, &m) != 0 ||
      orion_loop_check_done(&r->m, e, m.block) != 0) {
    fail_frame(r, e, "BLOCK_DONE");
    return;
  }
  r->secs[e] += m.seconds;
  if (m.has_values) { /* the sparse block's new values */
    darray *it = r->j->it;
    const orion_blockset *bs = &it->bs;
    size_t esz = orion_type_size(it->a->type);
    int64_t b = m.block, lo = bs->segs[bs->first[b]].lo;
    int64_t hi = bs->segs[bs->first[b + 1] - 1].hi;
    if (!it->a->sparse || m.vlen != (size_t)(hi - lo) * esz) {
      fail_frame(r, e, "BLOCK_DONE");
      return;
    }
    memcpy((char *)it->a->values + (size_t)lo * esz, m.values, m.vlen);
    orion_replica_block_changed(r->itc, e, (int)b);
  }
  for (k = 0; k < m.nruns; k++) {
    run_msg run;
    arr_use *u;
    if (get_run(&rd, &run) != 0 || (u = use_of(r, run.id)) == NULL ||
        apply_run(u, &run) != 0) {
      fail_frame(r, e, "BLOCK_DONE");
      return;
    }
    orion_replica_changed(u->c, e, r->seq[m.block], run.first, run.count);
  }
  if (rd.bad || rd.left != 0) {
    fail_frame(r, e, "BLOCK_DONE");
    return;
  }
  orion_loop_block_done(&r->m, e, m.block);
}

/* BUFFER_FLUSH's fields before its items. */
typedef struct flush_msg {
  int64_t run, buffer, isint;
} flush_msg;

static int get_flush(orion_reader *rd, flush_msg *m) {
  m->run = orion_pr_i64(rd); /* only the current run can arrive here */
  m->buffer = orion_pr_i64(rd);
  m->isint = orion_pr_i64(rd); /* the driver's buffer knows its type */
  return rd->bad ? ORION_EPARSE : 0;
}

static void on_flush(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  flush_msg m;
  int64_t n, k, last;
  orion_pend_item *items;
  orion_error err;
  arr_use *u = NULL;
  int i;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  get_flush(&rd, &m);
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].id == m.buffer)
      u = use_of(r, r->j->bufs[i].target);
  if (u == NULL) {
    fail_frame(r, e, "BUFFER_FLUSH");
    return;
  }
  n = orion_flush_items_get(&rd, &items);
  if (rd.bad || rd.left != 0) {
    orion_free(items);
    fail_frame(r, e, "BUFFER_FLUSH");
    return;
  }
  if (n < 0)
    orion_cluster_fail(r->cl, "out of memory applying buffered writes");
  orion_error_clear(&err);
  if (orion_exec_buffer_apply(r->s->ex, m.buffer, items, n, &err) != 0)
    orion_loop_fail(&r->m, &err);
  /* The target changed there: every executor's copy of those chunks is
   * stale.  Items come in ascending key order, so one mark per chunk. */
  for (k = 0, last = -1; k < n; k++) {
    int64_t chunk;
    if (items[k].key < 0 || items[k].key >= u->d->a->nnz)
      continue; /* refused by the apply above */
    chunk = items[k].key / u->c->row_elems / u->c->chunk;
    if (chunk != last)
      orion_replica_changed(u->c, -1, 0, items[k].key, 1);
    last = chunk;
  }
  orion_free(items);
}

/* One accumulator's partial in LOOP_DONE. */
static void get_acc(orion_reader *rd, int64_t *id, orion_accval *v) {
  *id = orion_pr_i64(rd);
  v->has = (int)orion_pr_i64(rd);
  v->isint = (int)orion_pr_i64(rd);
  v->i = (lua_Integer)orion_pr_i64(rd);
  v->d = (lua_Number)orion_pr_f64(rd);
}

static void on_loop_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t n, k;
  uint64_t seq;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  n = orion_pr_count(&rd, 40);
  for (k = 0; k < n && !rd.bad; k++) {
    int64_t id;
    orion_accval v;
    dacc *acc;
    get_acc(&rd, &id, &v);
    acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, id);
    if (acc != NULL && v.has && orion_loop_failed(&r->m) == NULL)
      orion_accval_combine(&acc->val, acc->op, &v);
  }
  r->peer_bytes += (uint64_t)orion_pr_i64(&rd);
  r->shard_items += (uint64_t)orion_pr_i64(&rd);
  /* The rows of deferred arrays it kept during the run. */
  n = orion_pr_count(&rd, 32);
  seq = ++dispatch_counter; /* after every block e was sent */
  for (k = 0; k < n && !rd.bad; k++) {
    run_msg run;
    arr_use *u;
    if (get_run(&rd, &run) != 0 || (u = use_of(r, run.id)) == NULL ||
        !u->deferred || apply_run(u, &run) != 0) {
      fail_frame(r, e, "LOOP_DONE");
      return;
    }
    orion_replica_changed(u->c, e, seq, run.first, run.count);
  }
  if (rd.bad || rd.left != 0 || orion_loop_exec_done(&r->m, e) != 0)
    fail_frame(r, e, "LOOP_DONE");
}

/* An owner's changes to its shards during the run: they become the
 * driver's, and the owner holds them (nobody else does). */
static void on_shard_data(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t n, k;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  n = orion_pr_count(&rd, 32);
  for (k = 0; k < n && !rd.bad; k++) {
    run_msg run;
    arr_use *u = NULL;
    int64_t c0 = 0, c1 = -1;
    if (get_run(&rd, &run) == 0 && (u = use_of(r, run.id)) != NULL &&
        u->sharded && run.count > 0) {
      c0 = run.first / u->c->row_elems / u->c->chunk;
      c1 = (run.first + run.count - 1) / u->c->row_elems / u->c->chunk;
    }
    /* An owner sends only its own chunks. */
    if (c1 < c0 || c0 < orion_shard_first(e, r->n, u->c->nchunks) ||
        c1 >= orion_shard_first(e + 1, r->n, u->c->nchunks) ||
        apply_run(u, &run) != 0) {
      fail_frame(r, e, "SHARD_DATA");
      return;
    }
    orion_replica_changed(u->c, e, r->pull_seq, run.first, run.count);
  }
  if (rd.bad || rd.left != 0 || orion_loop_pulled(&r->m, e) != 0)
    fail_frame(r, e, "SHARD_DATA");
}

static void on_body_error(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_body_error be;
  if (orion_msg_body_error_decode(f->payload, f->len, &be, NULL) != 0) {
    fail_frame(r, e, "BODY_ERROR");
    return;
  }
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
  default:
    orion_cluster_fail(r->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(r->cl, e),
                       orion_wire_type_name(f->type));
  }
}

static int loop_finished(void *ud) {
  loop_run *r = ud;
  return orion_loop_finished(&r->m);
}

/* Server-held arrays that no body writes directly are sharded across the
 * executors: each owns a contiguous range of the array's chunks, applies
 * the buffered writes to them and serves reads of them to the others. */
static void decide_shard(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  const orion_plan_array *pa;
  int i;
  if (p == NULL || u->plan_index < 0 || u->iterated || u->d->a->sparse ||
      u->c->nchunks == 0)
    return;
  pa = &p->arrays[u->plan_index];
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

/* After a failed loop with sharded writes: the owners applied part of the
 * loop's writes, so nobody's copy can be trusted any more. */
static void drop_shards(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].sharded && (r->use[i].shard_flags & ORION_SHARD_WRITTEN))
      orion_replica_invalidate(r->use[i].c);
}

/* ---- starting a loop ---------------------------------------------------- */

static orion_cluster *ensure_cluster(mod_state *s) {
  orion_error err;
  orion_cluster_opts o = s->copts;
  if (s->cl != NULL)
    return s->cl;
  o.nexec = s->nexec;
  orion_error_clear(&err);
  s->cl = orion_cluster_start(&o, &err);
  if (s->cl == NULL) {
    fflush(stdout);
    fprintf(stderr, "orion-driver: cannot start the cluster: %s\n", err.msg);
    exit(ORION_EXIT_CLUSTER);
  }
  return s->cl;
}

/* FORGET: u64 n, then n array ids. */
static void put_forget(orion_buf *b, const int64_t *ids, int n) {
  size_t at = orion_wire_begin(b, ORION_WIRE_FORGET);
  int i;
  orion_buf_u64(b, (uint64_t)n);
  for (i = 0; i < n; i++)
    orion_pw_i64(b, ids[i]);
  orion_wire_end(b, at);
}

static void send_forget(mod_state *s) {
  int e;
  if (s->nforget == 0)
    return;
  for (e = 0; e < orion_cluster_size(s->cl); e++) {
    orion_buf b;
    orion_buf_init(&b);
    put_forget(&b, s->forget, s->nforget);
    orion_cluster_send(s->cl, e, &b);
    orion_buf_free(&b);
  }
  s->nforget = 0;
}

/* Whether u's write-back can wait for the end of the loop (see arr_use):
 * a dense, unsharded, non-iterated array whose every access is direct and
 * subscripts dimension 1 with the space key, in a schedule that cuts the
 * space key into plain ranges.  ORION_NO_DEFER=1 turns it off (to compare
 * in benchmarks). */
static void decide_deferred(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  int i, any = 0;
  u->deferred = 0;
  if (p == NULL || u->plan_index < 0 || u->iterated || u->sharded ||
      u->d->a->sparse || p->space < 0 || getenv("ORION_NO_DEFER") != NULL)
    return;
  if (p->sched != ORION_SCHED_1D && p->sched != ORION_SCHED_2D &&
      p->sched != ORION_SCHED_2D_ORDERED)
    return;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].target == u->d->id)
      return;
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    if (ac->array != u->plan_index)
      continue;
    if (ac->buffered || ac->nsub < 1 || ac->sub[0].kind != SUB_KEY ||
        ac->sub[0].dim != p->space || ac->sub[0].c != 0)
      return;
    any = 1;
  }
  u->deferred = any;
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
  decide_deferred(r, &r->use[r->nuse]);
  if (r->use[r->nuse].deferred) {
    r->use[r->nuse].dsent = orion_calloc((size_t)r->j->it->bs.n0 + 1, 1);
    if (r->use[r->nuse].dsent == NULL)
      return ORION_ENOMEM;
  }
  r->nuse++;
  return 0;
}

/* LOAD_BODY for executor e. */
static void put_load_body(loop_run *r, orion_buf *b, int e) {
  const orion_dist_job *j = r->j;
  size_t at = orion_wire_begin(b, ORION_WIRE_LOAD_BODY);
  int i, d;
  orion_pw_i64(b, j->load_loop);
  orion_pw_bytes(b, j->blob, j->blen);
  orion_pw_i64(b, j->it->id);
  orion_buf_u64(b, (uint64_t)r->nuse);
  for (i = 0; i < r->nuse; i++) {
    orion_array *a = r->use[i].d->a;
    orion_pw_i64(b, r->use[i].d->id);
    orion_buf_u64(b, (uint64_t)a->type);
    orion_buf_u64(b, (uint64_t)a->sparse);
    orion_buf_u64(b, (uint64_t)a->ndims);
    for (d = 0; d < a->ndims; d++)
      orion_pw_i64(b, a->dims[d]);
  }
  orion_buf_u64(b, (uint64_t)j->naccs);
  for (i = 0; i < j->naccs; i++) {
    dacc *acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, j->accs[i]);
    orion_pw_i64(b, j->accs[i]);
    orion_buf_u64(b, acc != NULL ? (uint64_t)acc->op : 0);
  }
  orion_buf_u64(b, (uint64_t)j->nbufs);
  for (i = 0; i < j->nbufs; i++) {
    const orion_dist_buf *bf = &j->bufs[i];
    orion_pw_i64(b, bf->id);
    orion_pw_bytes(b, bf->name, strlen(bf->name));
    orion_pw_i64(b, bf->target);
    orion_buf_u64(b, (uint64_t)bf->op);
    orion_pw_bytes(b, bf->blob, bf->blob != NULL ? bf->blen : 0);
    orion_pw_i64(b, bf->flush);
  }
  orion_pw_i64(b, r->run);
  /* The compiled body: its hash (0: interpret), the source unless the
   * executor has it, flags, slots. */
  if (j->csrc != NULL) {
    orion_buf_u64(b, r->chash);
    if (body_sent(e, r->n, r->chash))
      orion_pw_bytes(b, NULL, 0);
    else
      orion_pw_bytes(b, j->csrc, j->clen);
  } else {
    orion_buf_u64(b, 0);
    orion_pw_bytes(b, NULL, 0);
  }
  orion_pw_bytes(b, j->cflags, j->cflags != NULL ? strlen(j->cflags) : 0);
  orion_buf_u64(b, (uint64_t)j->tier_c);
  orion_buf_u64(b, (uint64_t)(j->csrc != NULL ? j->ncslots : 0));
  for (i = 0; j->csrc != NULL && i < j->ncslots; i++) {
    const orion_cslot *sl = &j->cslots[i];
    orion_buf_u64(b, (uint64_t)sl->kind);
    orion_pw_i64(b, sl->id);
    orion_buf_u64(b, (uint64_t)sl->isint);
    orion_pw_i64(b, sl->ival);
    orion_pw_f64(b, sl->fval);
  }
  {
    int nsh = 0;
    uint64_t seq = ++dispatch_counter;
    for (i = 0; i < r->nuse; i++)
      nsh += r->use[i].sharded;
    orion_buf_u64(b, (uint64_t)nsh);
    for (i = 0; i < r->nuse; i++) {
      arr_use *u = &r->use[i];
      int64_t k0, k1, lo, hi, runs;
      size_t cnt_at;
      if (!u->sharded)
        continue;
      orion_pw_i64(b, u->d->id);
      orion_buf_u64(b, (uint64_t)u->shard_flags);
      cnt_at = b->len;
      orion_buf_u64(b, 0);
      /* The rows of the receiver's own chunks that it lacks. */
      k0 = orion_shard_first(e, r->n, u->c->nchunks);
      k1 = orion_shard_first(e + 1, r->n, u->c->nchunks);
      lo = k0 * u->c->chunk;
      hi = k1 * u->c->chunk < u->c->rows ? k1 * u->c->chunk : u->c->rows;
      runs = add_rows(b, u, e, lo, hi, seq);
      put_count(b, cnt_at, runs);
    }
  }
  orion_wire_end(b, at);
}

/* Block versions of a sparse iterated array follow its blockset. */
static int setup_blocks(loop_run *r) {
  darray *it = r->j->it;
  int rc = orion_replica_set_blocks(r->itc, it->bs.n0 * it->bs.n1,
                                    it->bs_gen);
  return rc != 0 ? rc : block_ranges(r);
}

static void run_free(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    orion_free(r->use[i].dsent);
  orion_free(r->use);
  orion_free(r->seq);
  orion_loop_free(&r->m);
}

int orion__dist_run(lua_State *L, mod_state *s, const orion_dist_job *j,
                    orion_dist_stats *st, orion_error *err) {
  static const orion_loop_io io = {NULL, io_send_block, io_end_loop, io_pull,
                                   io_fail};
  loop_run r;
  orion_loop_io rio = io;
  orion_cluster *cl = ensure_cluster(s);
  uint64_t bytes0;
  const orion_error *failed;
  int i, e, rc = 0;

  memset(&r, 0, sizeof r);
  r.L = L;
  r.s = s;
  r.cl = cl;
  r.j = j;
  r.n = orion_cluster_size(cl);
  r.n1 = j->it->bs.n1;
  r.run = ++run_counter;
  r.chash = j->csrc != NULL ? body_hash(j) : 0;
  r.secs = orion_calloc((size_t)r.n, sizeof *r.secs);
  r.use = orion_calloc((size_t)(j->narrays + j->nbufs + 1), sizeof *r.use);
  r.seq = orion_calloc((size_t)j->sched->nblocks + 1, sizeof *r.seq);
  if (r.secs == NULL || r.use == NULL || r.seq == NULL) {
    orion_free(r.secs);
    orion_free(r.use);
    orion_free(r.seq);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  bytes0 = orion_cluster_bytes(cl);
  send_forget(s);
  rc = add_use(&r, j->it, 1);
  for (i = 0; i < j->narrays && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->arrays[i]), 0);
  for (i = 0; i < j->nbufs && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->bufs[i].target),
                 0);
  if (rc == 0) {
    r.itc = r.use[0].c;
    rc = setup_blocks(&r);
  }
  rio.ud = &r;
  if (rc == 0)
    rc = orion_loop_init(&r.m, j->sched, r.n, r.pull, &rio);
  if (rc != 0) {
    run_free(&r);
    orion_free(r.secs);
    return orion_error_set(err, rc, "parallel_for: cannot set up the loop: "
                                    "%s",
                           orion_strerror(rc));
  }
  orion_cluster_set_handler(cl, on_frame, &r, j->where);
  for (e = 0; e < r.n; e++) {
    orion_buf b;
    orion_buf_init(&b);
    put_load_body(&r, &b, e);
    if (b.oom)
      orion_cluster_fail(cl, "out of memory sending the body");
    orion_cluster_send(cl, e, &b);
    orion_buf_free(&b);
  }
  orion_loop_start(&r.m);
  orion_cluster_wait(cl, loop_finished, &r);
  failed = orion_loop_failed(&r.m);
  if (failed != NULL && r.pull)
    drop_shards(&r);
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  st->bytes = orion_cluster_bytes(cl) - bytes0;
  st->peer_bytes = r.peer_bytes;
  st->shard_items = r.shard_items;
  st->exec_seconds = r.secs;
  st->nexec = r.n;
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
  return orion_pload(ensure_cluster(s), path, o, res, err);
}
