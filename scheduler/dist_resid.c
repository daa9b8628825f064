/* Resident rows: arrays whose rows a loop touches part by part stay on the
 * executors, and move between them peer to peer.
 *
 * An array is resident in a run (RES_SPACE, RES_TIME) when every access
 * of the body subscripts its dimension 1 with the space key, or every one
 * with the time key of a 2-D schedule, directly (no offset, no buffer),
 * and it is dense and not sharded; or when it is the dense iterated array,
 * the space key is its dimension 1 and the body's subscripts of it (if
 * any) follow it so (its returned values write only the block's own
 * elements, in the block's space part).  Then the rows of one
 * part (the union of what its blocks touch) are touched only by that
 * part's blocks, one at a time in the schedule's order, so they need to be
 * in one place only: with the block that runs.
 *
 *   - The first block of a part in a run gets the part's rows from where
 *     they are: the driver (in its RUN_BLOCK, only the chunks the executor
 *     lacks), or the executors that hold them since an earlier run, which
 *     the driver tells to send them (SEND_ROWS) before any block starts,
 *     so that no executor waits for a peer that waits for it.
 *   - Every later block gets them from the executor of the part's previous
 *     block, which sends them (a put in its RUN_BLOCK) as soon as that
 *     block is done, while it computes its next one.  A block whose
 *     executor is the previous one's gets nothing.
 *   - After the run the rows stay where the part's last block ran
 *     (dsm/holders.h).  The driver takes them back (ROWS_PULL) only when
 *     the script reads the array (orion__dist_reclaim) or a later run uses
 *     it otherwise (orion__resid_prepare).
 *
 *   - With dynamic assignment (scheduler/loop.h) the executor of a part's
 *     next block is not known when a block goes out, so nothing goes on
 *     ahead: a block placed where its parts' rows are not gets them from
 *     where they are (the executor of the part's previous block, or the
 *     holders), which the driver tells to send them (MOVE_ROWS, answered
 *     at once by the holder's loop thread).
 *
 * So a rotating partition goes from executor to executor, and the driver
 * sends only control messages.  ORION_NO_RESIDENT=1 turns this off (rows
 * then travel through the driver after every block), to compare.
 *
 * The iterated array is the other case (orion__resid_keep).  A sparse
 * one's block is one run of element positions, and a body writes only
 * the block's own elements (a returned value), so its new values need be
 * only where the block ran, which keeps the block's elements anyway.
 * When the loop places blocks statically, RUN_BLOCK asks the executor to
 * keep them (BLOCK_DONE then says only that they changed) and the
 * driver's holders record that executor for the block's positions; the
 * driver takes them back (ROWS_PULL, answered from the block copies)
 * when the script reads the array, before a new cut reorders it
 * (lua/pfor.c), before a checkpoint writes it, and at the start of a run
 * that places a block away from the executor that holds its values.
 * ORION_NO_RESIDENT=1 turns this off too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/holders.h"
#include "dsm/proto.h"
#include "executor/exec.h"
#include "scheduler/dist_int.h"
#include "scheduler/dist_rows.h"
#include "util/alloc.h"

/* ---- which arrays, which rows ------------------------------------------ */

/* Whether every access of u subscripts dimension 1 with loop key `key`
 * itself, directly. */
static int follows(const orion_plan *p, const arr_use *u, int key) {
  int i, any = 0;
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    if (ac->array != u->plan_index)
      continue;
    if (ac->buffered || ac->nsub < 1 || ac->sub[0].kind != SUB_KEY ||
        ac->sub[0].dim != key || ac->sub[0].c != 0)
      return 0;
    any = 1;
  }
  return any;
}

/* Whether the switch `name` is set, and neither empty nor "0". */
static int switched(const char *name) {
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

static int part_of(const loop_run *r, const arr_use *u, int b) {
  int n1 = r->j->sched->n1;
  return u->resident == RES_SPACE ? b / n1 : b % n1;
}

/* The rows [*lo, *hi) of block b's part of resident u. */
static void part_rows(const loop_run *r, const arr_use *u, int b,
                      int64_t *lo, int64_t *hi) {
  int k = part_of(r, u, b);
  *lo = u->prange[k][0];
  *hi = u->prange[k][1];
}

/* Whether the body's accesses of the iterated array u (if any: a body
 * need not subscript it, its element comes as an argument and its
 * returned value writes it) all subscript dimension 1 with the space
 * key, which is dimension 1 itself: then a block reads and writes only
 * its own space part's rows. */
static int iterated_space(const orion_plan *p, const arr_use *u) {
  int i;
  if (p->space != 0)
    return 0;
  for (i = 0; u->plan_index >= 0 && i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    if (ac->array == u->plan_index &&
        (ac->buffered || ac->nsub < 1 || ac->sub[0].kind != SUB_KEY ||
         ac->sub[0].dim != 0 || ac->sub[0].c != 0))
      return 0;
  }
  return 1;
}

/* The rows [*lo, *hi) block b of resident u may touch: the iterated
 * array's, its block's keys of dimension 1. */
static void touched_rows(const loop_run *r, const arr_use *u, int b,
                         int mode, int64_t *lo, int64_t *hi) {
  if (!u->iterated) {
    orion__dist_row_range(r, u, b, mode, lo, hi);
    return;
  }
  *lo = r->itc->krange[b][0][0];
  *hi = r->itc->krange[b][0][1] + 1; /* empty block: [0, 0) or less */
  if (*lo < 0 || *hi <= *lo)
    *lo = *hi = 0;
}

int orion__resid_decide(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  const orion_schedule *s = r->j->sched;
  int i, b, k, kind = RES_NONE;
  /* A dense iterated array is resident along its space parts (its blocks
   * write only their own elements); a sparse one's blocks stay on their
   * executors anyway (orion__resid_keep). */
  int dense_it = u->iterated && !u->d->a->sparse;
  u->resident = RES_NONE;
  if (p == NULL || (u->plan_index < 0 && !dense_it) ||
      (u->iterated && !dense_it) || u->sharded || u->d->a->sparse ||
      u->c->nchunks == 0 || switched("ORION_NO_RESIDENT"))
    return 0;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].target == u->d->id)
      return 0;
  if (p->space >= 0 &&
      (p->sched == ORION_SCHED_NONE || p->sched == ORION_SCHED_1D ||
       p->sched == ORION_SCHED_2D || p->sched == ORION_SCHED_2D_ORDERED) &&
      (dense_it ? iterated_space(p, u) : follows(p, u, p->space)))
    kind = RES_SPACE;
  else if (dense_it)
    return 0;
  else if (p->time >= 0 && s->has_time &&
           (p->sched == ORION_SCHED_2D || p->sched == ORION_SCHED_2D_ORDERED) &&
           follows(p, u, p->time))
    kind = RES_TIME;
  if (kind == RES_NONE)
    return 0;
  u->nparts = kind == RES_SPACE ? s->n0 : s->n1;
  u->prange = orion_malloc(sizeof *u->prange * ((size_t)u->nparts + 1));
  if (u->prange == NULL)
    return ORION_ENOMEM;
  for (k = 0; k < u->nparts; k++) {
    u->prange[k][0] = INT64_MAX;
    u->prange[k][1] = -1;
  }
  u->resident = kind;
  for (b = 0; b < s->nblocks; b++) {
    int m;
    k = part_of(r, u, b);
    for (m = ACC_READ; m <= ACC_WRITE; m++) {
      int64_t lo, hi;
      touched_rows(r, u, b, m, &lo, &hi);
      if (hi > lo) {
        if (lo < u->prange[k][0])
          u->prange[k][0] = lo;
        if (hi > u->prange[k][1])
          u->prange[k][1] = hi;
      }
    }
  }
  for (k = 0; k < u->nparts; k++)
    if (u->prange[k][1] < 0)
      u->prange[k][0] = u->prange[k][1] = 0;
  /* The iterated array: a returned value writes it. */
  u->writes = dense_it || p->arrays[u->plan_index].writes > 0;
  return 0;
}

/* The position of the part's block before / after the one at pos (-1:
 * none). */
static int prev_pos(const loop_run *r, const arr_use *u, int pos) {
  const orion_schedule *s = r->j->sched;
  return u->resident == RES_SPACE ? s->after_p[pos] : s->after_q[pos];
}

static int next_pos(const loop_run *r, const arr_use *u, int pos) {
  return u->resident == RES_SPACE ? r->m.next_p[pos] : r->m.next_q[pos];
}

/* The executor the block at pos went to, or, not sent yet, its static
 * one. */
static int exec_at(const loop_run *r, int pos) {
  const orion_schedule *s = r->j->sched;
  return r->m.at[pos] >= 0 ? r->m.at[pos]
                           : orion_loop_home(&r->m, s->order[pos]);
}

/* Whether executor e holds the newest copy of every chunk rows [lo, hi)
 * touch. */
static int fresh(const orion_replica *c, int e, int64_t lo, int64_t hi) {
  int64_t k;
  for (k = lo / c->chunk; k <= (hi - 1) / c->chunk; k++)
    if (c->have[(int64_t)e * c->nchunks + k] != c->ver[k])
      return 0;
  return 1;
}

/* Executor e will hold rows [lo, hi) at their current versions: the
 * chunks that lie wholly inside are marked held. */
static void mark_have(orion_replica *c, int e, int64_t lo, int64_t hi) {
  /* The chunks from the first that starts at or after lo to the last that
   * ends at or before hi (the last chunk ends at the rows' end). */
  int64_t k0 = (lo + c->chunk - 1) / c->chunk, k1 = hi / c->chunk, k;
  uint64_t *have = &c->have[(int64_t)e * c->nchunks];
  if (hi >= c->rows)
    k1 = c->nchunks;
  for (k = k0; k < k1; k++)
    have[k] = c->ver[k];
}

static int push_move(orion_msg_move **v, int64_t *n, int64_t *cap,
                     const orion_msg_move *m) {
  if (*n == *cap) {
    int64_t nc = *cap > 0 ? 2 * *cap : 16;
    orion_msg_move *nv = orion_realloc(*v, sizeof *nv * (size_t)nc);
    if (nv == NULL)
      return ORION_ENOMEM;
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = *m;
  return 0;
}

/* ---- the start of a run -------------------------------------------------- */

/* A sharded array no body writes, with rows on executors: its owners take
 * them from there. */
static int ro_shard(const arr_use *u) {
  return u->sharded && !(u->shard_flags & ORION_SHARD_WRITTEN) &&
         u->c->held.n > 0;
}

/* The rows [*lo, *hi) of executor e's shard of u. */
static void shard_rows(const loop_run *r, const arr_use *u, int e,
                       int64_t *lo, int64_t *hi) {
  int64_t k0 = orion_shard_first(e, r->n, u->c->nchunks);
  int64_t k1 = orion_shard_first(e + 1, r->n, u->c->nchunks);
  *lo = k0 * u->c->chunk;
  *hi = k1 * u->c->chunk < u->c->rows ? k1 * u->c->chunk : u->c->rows;
}

typedef struct first_ctx {
  loop_run *r;
  const arr_use *u;
  int e, b; /* the executor the rows are for, and its block (-1: shard) */
} first_ctx;

/* A piece of rows held by executor h (-1: the driver): a piece on another
 * executor is fetched from it (r->fgets). */
static int first_piece(void *ud, int64_t lo, int64_t hi, int h) {
  first_ctx *x = ud;
  loop_run *r = x->r;
  resid_get *g;
  if (h < 0 || h == x->e)
    return 0;
  if (r->nfgets == r->capfgets) {
    int64_t cap = r->capfgets > 0 ? 2 * r->capfgets : 16;
    resid_get *nv = orion_realloc(r->fgets, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    r->fgets = nv;
    r->capfgets = cap;
  }
  g = &r->fgets[r->nfgets++];
  g->m.array = x->u->d->id;
  g->m.first = lo;
  g->m.count = hi - lo;
  g->m.peer = h;
  g->m.block = x->b;
  g->dest = x->e;
  return 0;
}

/* SEND_ROWS to executor h: the gets it is the source of, each to its
 * destination. */
static void send_rows(loop_run *r, int h) {
  orion_msg_move *mv = orion_malloc(sizeof *mv * (size_t)r->nfgets + 1);
  orion_msg_send_rows m;
  orion_buf b;
  int64_t k;
  if (mv == NULL)
    orion_cluster_fail(r->cl, "out of memory starting %s", r->j->where);
  m.run = r->run;
  m.moves = mv;
  m.n = 0;
  for (k = 0; k < r->nfgets; k++)
    if (r->fgets[k].m.peer == h) {
      mv[m.n] = r->fgets[k].m;
      mv[m.n++].peer = r->fgets[k].dest;
    }
  if (m.n > 0) {
    orion_buf_init(&b);
    if (orion_msg_send_rows_encode(&b, &m) != 0 || b.oom)
      orion_cluster_fail(r->cl, "cannot encode SEND_ROWS for %s",
                         r->j->where);
    orion_cluster_send(r->cl, h, &b);
    orion_buf_free(&b);
  }
  orion_free(mv);
}

int orion__resid_start(loop_run *r) {
  const orion_schedule *s = r->j->sched;
  first_ctx x;
  int i, pos, rc = 0;
  memset(&x, 0, sizeof x);
  x.r = r;
  r->nfgets = 0;
  /* Placed at run time, a part's first block asks the holders itself
   * (move_from). */
  for (i = 0; i < r->nuse && rc == 0 && !r->m.dynamic; i++) {
    arr_use *u = &r->use[i];
    int64_t re = u->c->row_elems;
    if (u->resident == RES_NONE || u->c->held.n == 0)
      continue;
    x.u = u;
    for (pos = 0; pos < s->nblocks && rc == 0; pos++) {
      int b = s->order[pos], k = part_of(r, u, b);
      int64_t lo = u->prange[k][0], hi = u->prange[k][1];
      if (prev_pos(r, u, pos) >= 0 || hi <= lo)
        continue; /* not the part's first block, or no rows */
      x.e = exec_at(r, pos);
      x.b = b;
      if (fresh(u->c, x.e, lo, hi))
        continue;
      rc = orion_holders_each(&u->c->held, lo * re, hi * re, first_piece, &x);
    }
  }
  for (i = 0; i < r->nuse && rc == 0; i++) {
    arr_use *u = &r->use[i];
    int e;
    if (!ro_shard(u))
      continue;
    x.u = u;
    x.b = -1;
    for (e = 0; e < r->n && rc == 0; e++) {
      int64_t lo, hi;
      shard_rows(r, u, e, &lo, &hi);
      x.e = e;
      if (hi > lo && !fresh(u->c, e, lo, hi))
        rc = orion_holders_each(&u->c->held, lo * u->c->row_elems,
                                hi * u->c->row_elems, first_piece, &x);
    }
  }
  for (i = 0; i < r->n && rc == 0 && r->nfgets > 0; i++)
    send_rows(r, i);
  return rc;
}

/* ---- each block ---------------------------------------------------------- */

typedef struct drv_ctx {
  loop_run *r;
  const arr_use *u;
  int e, b;
  uint64_t seq; /* the dispatch number they go with */
} drv_ctx;

/* The pieces the driver holds go in the RUN_BLOCK (the chunks e lacks). */
static int driver_piece(void *ud, int64_t lo, int64_t hi, int h) {
  drv_ctx *x = ud;
  int64_t re = x->u->c->row_elems;
  if (h >= 0)
    return 0;
  return orion__dist_add_rows(&x->r->runs, x->u, x->e, lo / re, hi / re,
                              x->seq);
}

/* ---- dynamic assignment: rows fetched when a block is placed ----------- */

/* MOVE_ROWS to executor h: send move m (m->peer: the destination). */
static void move_rows(loop_run *r, int h, const orion_msg_move *m) {
  orion_msg_move_rows mr;
  orion_buf b;
  mr.run = r->run;
  mr.moves = m;
  mr.n = 1;
  orion_buf_init(&b);
  if (orion_msg_move_rows_encode(&b, &mr) != 0 || b.oom)
    orion_cluster_fail(r->cl, "cannot encode MOVE_ROWS for %s", r->j->where);
  orion_cluster_send(r->cl, h, &b);
  orion_buf_free(&b);
}

/* Block b on e gets elements [lo, hi) of u from executor h: a get in its
 * RUN_BLOCK, and h is told to send them. */
static int move_from(loop_run *r, const arr_use *u, int h, int e, int b,
                     int64_t lo, int64_t hi) {
  orion_msg_move m;
  m.array = u->d->id;
  m.first = lo;
  m.count = hi - lo;
  m.block = b;
  m.peer = e;
  move_rows(r, h, &m);
  r->parts_pulled++;
  m.peer = h;
  return push_move(&r->gets, &r->ngets, &r->capgets, &m);
}

/* A piece of a part's rows held by executor h (-1: the driver) for a
 * part's first block placed at run time. */
static int placed_piece(void *ud, int64_t lo, int64_t hi, int h) {
  drv_ctx *x = ud;
  if (h < 0)
    return driver_piece(ud, lo, hi, h);
  return h == x->e ? 0 : move_from(x->r, x->u, h, x->e, x->b, lo, hi);
}

/* Dynamic assignment: block b's part of u, rows [lo, hi), comes to e from
 * where it is (the executor of the part's block before, or for the part's
 * first block the holders); nothing goes on after the block (the next
 * block is placed when it is ready, and fetches them). */
static int placed_block(loop_run *r, arr_use *u, int e, int b, int64_t lo,
                        int64_t hi) {
  int pp = prev_pos(r, u, r->j->sched->pos_of[b]);
  int64_t re = u->c->row_elems;
  int rc = 0;
  if (pp >= 0 && exec_at(r, pp) != e) {
    rc = move_from(r, u, exec_at(r, pp), e, b, lo * re, hi * re);
  } else if (pp < 0 && !fresh(u->c, e, lo, hi)) {
    drv_ctx x = {r, u, e, b, r->seq[b]};
    rc = orion_holders_each(&u->c->held, lo * re, hi * re, placed_piece, &x);
  }
  mark_have(u->c, e, lo, hi);
  return rc;
}

int64_t orion__resid_affinity(const loop_run *r, int e, int b) {
  int64_t n = 0;
  int i;
  for (i = 0; i < r->nuse; i++) {
    const arr_use *u = &r->use[i];
    int64_t lo, hi;
    if (u->resident == RES_NONE)
      continue;
    part_rows(r, u, b, &lo, &hi);
    if (hi > lo)
      n += orion_replica_fresh_rows(u->c, e, lo, hi) * u->c->row_elems *
           (int64_t)orion_type_size(u->d->a->type);
  }
  return n;
}

int orion__resid_block(loop_run *r, int e, int b) {
  const orion_schedule *s = r->j->sched;
  int i, pos = s->pos_of[b], rc = 0;
  r->ngets = r->nputs = 0;
  for (i = 0; i < r->nuse && rc == 0; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi, re = u->c->row_elems;
    int pp, np;
    orion_msg_move m;
    if (u->resident == RES_NONE)
      continue;
    part_rows(r, u, b, &lo, &hi);
    if (hi <= lo)
      continue;
    if (r->m.dynamic) {
      rc = placed_block(r, u, e, b, lo, hi);
      continue;
    }
    m.array = u->d->id;
    m.first = lo * re;
    m.count = (hi - lo) * re;
    pp = prev_pos(r, u, pos);
    if (pp < 0) { /* the part's first block of the run */
      drv_ctx x = {r, u, e, b, r->seq[b]};
      int64_t g;
      rc = orion_holders_each(&u->c->held, lo * re, hi * re, driver_piece,
                              &x);
      for (g = 0; g < r->nfgets && rc == 0; g++)
        if (r->fgets[g].m.block == b && r->fgets[g].m.array == u->d->id)
          rc = push_move(&r->gets, &r->ngets, &r->capgets, &r->fgets[g].m);
    } else if (exec_at(r, pp) != e) {
      m.peer = exec_at(r, pp);
      m.block = b;
      rc = push_move(&r->gets, &r->ngets, &r->capgets, &m);
    }
    mark_have(u->c, e, lo, hi);
    np = next_pos(r, u, pos);
    if (rc == 0 && np >= 0 && exec_at(r, np) != e) {
      m.peer = exec_at(r, np);
      m.block = s->order[np];
      rc = push_move(&r->puts, &r->nputs, &r->capputs, &m);
      r->parts_pushed++;
    }
  }
  return rc;
}

int orion__resid_shard(loop_run *r, arr_use *u, int e, int64_t lo,
                       int64_t hi, uint64_t seq) {
  drv_ctx x = {r, u, e, 0, seq};
  int rc;
  if (!ro_shard(u))
    return orion__dist_add_rows(&r->runs, u, e, lo, hi, seq);
  if (hi <= lo)
    return 0;
  rc = orion_holders_each(&u->c->held, lo * u->c->row_elems,
                          hi * u->c->row_elems, driver_piece, &x);
  mark_have(u->c, e, lo, hi);
  return rc;
}

int orion__resid_load_gets(loop_run *r, int e) {
  int64_t g;
  int rc = 0;
  r->ngets = 0;
  for (g = 0; g < r->nfgets && rc == 0; g++)
    if (r->fgets[g].m.block == -1 && r->fgets[g].dest == e)
      rc = push_move(&r->gets, &r->ngets, &r->capgets, &r->fgets[g].m);
  return rc;
}

/* Whether a later block of b's part of u reported first: sent ahead
 * (scheduler/loop.h), the next block of a time part may report before
 * this one, and the rows are then where that one ran. */
static int later_done(const loop_run *r, const arr_use *u, int b) {
  int np = next_pos(r, u, r->j->sched->pos_of[b]);
  for (; np >= 0 && r->m.state[np] != ORION_BLOCK_WAITING;
       np = next_pos(r, u, np))
    if (r->m.state[np] == ORION_BLOCK_DONE)
      return 1;
  return 0;
}

void orion__resid_done(loop_run *r, int e, int b) {
  int i;
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t re = u->c->row_elems, lo, hi;
    int k;
    /* A loop that only reads the rows leaves them where they were: the
     * holder's copy is as new as ours (so an evaluation pass between two
     * training passes does not move them back and forth). */
    if (u->resident == RES_NONE || !u->writes || later_done(r, u, b))
      continue;
    k = part_of(r, u, b);
    lo = u->prange[k][0];
    hi = u->prange[k][1];
    if (hi <= lo)
      continue;
    if (orion_holders_set(&u->c->held, lo * re, hi * re, e) != 0)
      orion_cluster_fail(r->cl, "out of memory in %s", r->j->where);
    orion_replica_changed(u->c, e, r->seq[b], lo * re, (hi - lo) * re);
  }
}

int orion__resid_early(const loop_run *r) {
  const orion_plan *p = r->j->plan;
  int i;
  if (p == NULL || switched("ORION_NO_EARLY"))
    return 0;
  for (i = 0; i < r->nuse; i++) {
    const arr_use *u = &r->use[i];
    int k;
    if (u->d->a->sparse || u->resident != RES_NONE)
      continue;
    if (u->plan_index < 0 || p->arrays[u->plan_index].writes > 0)
      return 0;
    /* The iterated array: each block writes its own elements only (a
     * returned value), but a body that subscripts it may read its
     * neighbours' (a wavefront's A[i - 1][j]). */
    for (k = 0; u->iterated && k < p->nacc; k++)
      if (p->acc[k].array == u->plan_index && p->acc[k].nsub > 0)
        return 0;
  }
  return 1;
}

int orion__resid_ahead(const loop_run *r) {
  /* A buffer's flushes reach the driver or the owners, not the executor
   * of the time part's next block: that block waits for the driver.  Not
   * a flush = "loop" buffer's: no block of the loop reads them (they are
   * held by block, at the driver or the owners, and applied in block
   * order once every block ran), so they order nothing within it. */
  int i, time_rows = 0;
  if (!r->m.early || switched("ORION_NO_AHEAD"))
    return 0;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].flush != ORION_FLUSH_LOOP)
      return 0;
  for (i = 0; i < r->nuse; i++)
    time_rows |= r->use[i].resident == RES_TIME;
  return time_rows;
}

int orion__resid_reorder(const loop_run *r) {
  return r->m.ahead && r->m.early && !r->m.dynamic && r->j->sched->has_time &&
         !switched("ORION_NO_REORDER");
}

int orion__resid_late(const loop_run *r) {
  return r->reorder && r->j->timeout <= 0 && !r->s->verify &&
         orion_loop_all_at_start(r->j->sched->nblocks, r->n) &&
         !switched("ORION_NO_LATE");
}

void orion__resid_free(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    orion_free(r->use[i].prange);
  orion_free(r->gets);
  orion_free(r->puts);
  orion_free(r->fgets);
}

/* ---- the iterated array's values ---------------------------------------- */

/* The element positions [*lo, *hi) of block b of the sparse iterated
 * array (a block is one run of positions, dsm/blocks.h). */
static void it_span(const loop_run *r, int b, int64_t *lo, int64_t *hi) {
  const orion_blockset *bs = &r->j->it->bs;
  int64_t s0 = bs->first[b], s1 = bs->first[b + 1];
  *lo = s0 < s1 ? bs->segs[s0].lo : 0;
  *hi = s0 < s1 ? bs->segs[s1 - 1].hi : 0;
}

/* orion_holders_each's callback: the one holder of every piece, -2 once
 * two differ. */
static int one_holder(void *ud, int64_t lo, int64_t hi, int e) {
  int *h = ud;
  (void)lo;
  (void)hi;
  if (*h == -3)
    *h = e;
  else if (*h != e)
    *h = -2;
  return 0;
}

int orion__resid_block_holder(const loop_run *r, int b) {
  int64_t lo, hi;
  int h = -3;
  if (r->itc->held.n == 0)
    return -1;
  it_span(r, b, &lo, &hi);
  if (hi <= lo)
    return -1;
  (void)orion_holders_each(&r->itc->held, lo, hi, one_holder, &h);
  return h == -3 ? -1 : h;
}

void orion__resid_keep(loop_run *r) {
  darray *it = r->j->it;
  int b, stay = 1;
  r->keep = it->a->sparse && !r->m.dynamic && !switched("ORION_NO_RESIDENT");
  if (!it->a->sparse || r->itc->held.n == 0)
    return; /* a dense one's rows: orion__resid_decide, _start */
  /* A block whose values an executor kept runs there again, or they come
   * back: RUN_BLOCK sends another executor the driver's copy. */
  for (b = 0; b < r->j->sched->nblocks && stay && r->keep; b++) {
    int h = orion__resid_block_holder(r, b);
    stay = h == -1 || h == orion_loop_home(&r->m, b);
  }
  if (!stay || !r->keep)
    orion__dist_reclaim(r->s, it);
}

void orion__resid_block_values(loop_run *r, int e, int b, int kept) {
  int64_t lo, hi;
  it_span(r, b, &lo, &hi);
  orion_replica_block_changed(r->itc, e, b);
  if (hi > lo && orion_holders_set(&r->itc->held, lo, hi, kept ? e : -1) != 0)
    orion_cluster_fail(r->cl, "out of memory in %s", r->j->where);
}

/* ---- taking rows back ---------------------------------------------------- */

typedef struct pull_ctx {
  orion_cluster *cl;
  darray *d;
  int pending;
} pull_ctx;

/* Whether elements [first, first + count) are held by executor e. */
static int held_by(const orion_holders *h, int e, int64_t first,
                   int64_t count) {
  int64_t i;
  for (i = 0; i < h->n; i++)
    if (h->v[i][2] == e && h->v[i][0] <= first &&
        first + count <= h->v[i][1])
      return 1;
  return 0;
}

/* A run taken back into the driver's copy: rows of a dense array, or
 * values of a sparse one by position (the blocks' values kept on the
 * executors).  0 or ORION_EPARSE. */
static int apply_pulled(orion_array *a, const orion_msg_run *run) {
  size_t esz = orion_type_size(a->type);
  if (!a->sparse)
    return orion_msg_run_apply(a, run);
  if (run->first < 0 || run->count < 0 || run->first > a->nnz ||
      run->count > a->nnz - run->first ||
      run->len > (size_t)run->count * esz || run->len % esz != 0)
    return ORION_EPARSE;
  orion_msg_run_copy((char *)a->values + (size_t)run->first * esz, run, esz);
  return 0;
}

static void on_rows_data(void *ud, int e, const orion_wire_frame *f) {
  pull_ctx *x = ud;
  orion_msg_rows m;
  int64_t k;
  if (f->type != ORION_WIRE_ROWS_DATA ||
      orion_msg_rows_data_decode(f->payload, f->len, &m, NULL) != 0)
    orion_cluster_fail(x->cl, "executor %d (%s) sent a malformed %s frame",
                       e, orion_cluster_addr(x->cl, e),
                       orion_wire_type_name(f->type));
  for (k = 0; k < m.nruns; k++)
    if (m.runs[k].array != x->d->id ||
        !held_by(&x->d->rep->held, e, m.runs[k].first, m.runs[k].count) ||
        apply_pulled(x->d->a, &m.runs[k]) != 0)
      orion_cluster_fail(x->cl, "executor %d (%s) sent rows it does not "
                                "hold",
                         e, orion_cluster_addr(x->cl, e));
  orion_msg_rows_data_free(&m);
  x->pending--;
}

static int pulled(void *ud) { return ((pull_ctx *)ud)->pending == 0; }

void orion__dist_reclaim(mod_state *s, darray *d) {
  orion_holders *h = d->rep != NULL ? &d->rep->held : NULL;
  orion_msg_range *rg;
  pull_ctx x;
  char doing[96];
  int e;
  if (h == NULL || h->n == 0)
    return;
  if (s->cl == NULL) { /* the cluster is gone, and the rows with it */
    orion_holders_free(h);
    return;
  }
  rg = orion_malloc(sizeof *rg * (size_t)h->n);
  if (rg == NULL)
    orion_cluster_fail(s->cl, "out of memory reading array %lld back",
                       (long long)d->id);
  x.cl = s->cl;
  x.d = d;
  x.pending = 0;
  for (e = 0; e < orion_cluster_size(s->cl); e++) {
    orion_msg_rows_pull m;
    orion_buf b;
    int64_t i;
    m.ranges = rg;
    m.n = 0;
    for (i = 0; i < h->n; i++)
      if (h->v[i][2] == e) {
        rg[m.n].array = d->id;
        rg[m.n].first = h->v[i][0];
        rg[m.n].count = h->v[i][1] - h->v[i][0];
        m.n++;
      }
    if (m.n == 0)
      continue;
    orion_buf_init(&b);
    if (orion_msg_rows_pull_encode(&b, &m) != 0 || b.oom)
      orion_cluster_fail(s->cl, "cannot encode a ROWS_PULL");
    orion_cluster_send(s->cl, e, &b);
    orion_buf_free(&b);
    x.pending++;
  }
  orion_free(rg);
  snprintf(doing, sizeof doing, "reading array %lld back from the executors",
           (long long)d->id);
  orion_cluster_set_handler(s->cl, on_rows_data, &x, doing);
  orion_cluster_wait(s->cl, pulled, &x);
  orion_cluster_set_handler(s->cl, NULL, NULL, NULL);
  orion_holders_free(h);
}

/* Whether every held piece of sharded u lies in its holder's own shard
 * of this run: the rows an owner kept after an earlier loop that sharded
 * the array alike (SHARD_PULL with keep, scheduler/dist.c).  The owner's
 * copy is then the newest, and the run goes on from it. */
static int held_by_owners(const loop_run *r, const arr_use *u) {
  const orion_holders *h = &u->c->held;
  int64_t i, lo, hi;
  if (!u->sharded || h->n == 0)
    return 0;
  for (i = 0; i < h->n; i++) {
    int e = (int)h->v[i][2];
    if (e < 0 || e >= r->n)
      return 0;
    shard_rows(r, u, e, &lo, &hi);
    if (h->v[i][0] < lo * u->c->row_elems || h->v[i][1] > hi * u->c->row_elems)
      return 0;
  }
  return 1;
}

void orion__resid_prepare(loop_run *r) {
  int i;
  /* A sparse iterated array's kept values: orion__resid_keep, once the
   * blocks' executors are known. */
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].resident == RES_NONE && !ro_shard(&r->use[i]) &&
        !(r->use[i].iterated && r->use[i].d->a->sparse) &&
        !held_by_owners(r, &r->use[i]))
      orion__dist_reclaim(r->s, r->use[i].d);
}
