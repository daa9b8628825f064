/* orion-executor's resident rows (scheduler/dist_resid.c says what they are):
 *   - ROWS from a peer: the loop thread keeps the frame for the compute
 *     thread (orion__rows_on_rows), whose block waits for it
 *     (orion__rows_get) and copies it into our array copy;
 *   - after a block, its puts go to the peers of the part's next block
 *     (orion__rows_put), before the BLOCK_DONE;
 *   - SEND_ROWS from the driver: the same, for the first blocks of a run;
 *   - MOVE_ROWS from the driver (dynamic assignment placed the part's next
 *     block on another executor): the same, at once, from the loop thread;
 *   - ROWS_PULL from the driver: the rows back to it (ROWS_DATA), or the
 *     values that blocks of a sparse iterated array kept here.
 * The rows sent are read from our copy on the compute thread, which is
 * the only thread that writes it, but for MOVE_ROWS: the loop thread reads
 * them while the compute thread may run another block.  That is safe
 * because the driver asks for a part's rows only once the part's block
 * here is done and before any later block of the part is placed, so no
 * block touches them meanwhile, and only after this executor took the
 * run's LOAD_BODY (x->loaded_run), so the array copies stay where they
 * are until the run's end.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/error.h"

void orion__rows_on_rows(exec_state *x, orion_conn *c, int from,
                         const orion_wire_frame *f) {
  job *j = orion__exec_job_take(x, c, f, from), **tail;
  pthread_mutex_lock(&x->mu);
  for (tail = &x->rows_in; *tail != NULL; tail = &(*tail)->next)
    ;
  *tail = j;
  pthread_cond_broadcast(&x->fcv);
  pthread_mutex_unlock(&x->mu);
}

/* Whether runs v[0..n) cover exactly the elements of move g, in order
 * (the sender's writer cuts a move's run where zeros are left out). */
static int covers(const orion_msg_run *v, int64_t n, const orion_msg_move *g) {
  int64_t k, at = g->first;
  for (k = 0; k < n; k++) {
    if (v[k].array != g->array || v[k].first != at)
      return 0;
    at += v[k].count;
  }
  return n > 0 && at == g->first + g->count;
}

/* Whether kept frame j holds move g of run `run`: decodes it into *m
 * (free it) when it does. */
static int holds(const job *j, const orion_msg_move *g, int64_t run,
                 orion_msg_rows *m) {
  if (j->from != g->peer ||
      orion_msg_rows_decode(j->payload, j->len, m, NULL) != 0)
    return 0;
  if (m->run == run && m->block == g->block && covers(m->runs, m->nruns, g))
    return 1;
  orion_msg_rows_free(m);
  return 0;
}

void orion__rows_drop_old(exec_state *x, int64_t run) {
  job **p;
  pthread_mutex_lock(&x->mu);
  for (p = &x->rows_in; *p != NULL;) {
    orion_msg_rows m;
    job *j = *p;
    int old = orion_msg_rows_decode(j->payload, j->len, &m, NULL) != 0 ||
              m.run < run;
    if (old) {
      *p = j->next;
      orion__exec_job_free(j);
    } else {
      p = &j->next;
    }
    orion_msg_rows_free(&m);
  }
  pthread_mutex_unlock(&x->mu);
}

/* Whether the driver aborted the loop: an aborting LOOP_END waits in the
 * compute queue (behind the block that waits).  A block sent ahead of its
 * time part (scheduler/loop.h) waits for rows that a failed block never
 * sends. */
int orion__rows_abort_queued(const exec_state *x) {
  const job *j;
  for (j = x->head; j != NULL; j = j->next) {
    orion_msg_loop_end m;
    if (j->type == ORION_WIRE_LOOP_END &&
        orion_msg_loop_end_decode(j->payload, j->len, &m, NULL) == 0 &&
        m.abort)
      return 1;
  }
  return 0;
}

int orion__rows_there(const exec_state *x, const orion_msg_move *g,
                      int64_t run) {
  const job *j;
  if (g->peer < 0 || g->peer >= x->npeers || g->peer == x->id)
    return 1; /* refused by orion__rows_get */
  for (j = x->rows_in; j != NULL; j = j->next) {
    orion_msg_rows m;
    if (holds(j, g, run, &m)) {
      orion_msg_rows_free(&m);
      return 1;
    }
  }
  return 0;
}

int orion__rows_get(exec_state *x, const orion_msg_move *g, int64_t run,
                    orion_error *err) {
  replica *rp = orion__replica_find(x, g->array);
  double limit = 6 * x->hb_timeout;
  /* From when the block began to wait before it was taken (exec_order.c). */
  double deadline = (x->rows_since > 0 ? x->rows_since : orion_now()) + limit;
  orion_msg_rows m;
  job **p, *found = NULL;
  int rc;
  if (rp == NULL || g->peer >= x->npeers || g->peer == x->id)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: a RUN_BLOCK asks for rows of array "
                           "%" PRId64 " it cannot take",
                           x->id, g->array);
  double t0 = orion__wait_begin();
  int aborted = 0;
  pthread_mutex_lock(&x->mu);
  x->rows_waiting++;
  for (;;) {
    for (p = &x->rows_in; *p != NULL; p = &(*p)->next)
      if (holds(*p, g, run, &m)) {
        found = *p;
        *p = found->next;
        break;
      }
    if (found == NULL)
      aborted = orion__rows_abort_queued(x);
    if (found != NULL || aborted || orion_now() >= deadline)
      break;
    orion__exec_nap(x);
  }
  x->rows_waiting--;
  pthread_mutex_unlock(&x->mu);
  orion__wait_end(x, t0);
  if (aborted)
    return orion_error_set(err, -ECANCELED,
                           "executor %d: the loop was aborted while block "
                           "%" PRId64 " waited for its rows",
                           x->id, g->block);
  if (found == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: elements %" PRId64 "..%" PRId64
                           " of array %" PRId64 " did not come from executor "
                           "%" PRId64 " within %.0f s",
                           x->id, g->first, g->first + g->count - 1, g->array,
                           g->peer, limit);
  rc = 0;
  for (int64_t k = 0; k < m.nruns && rc == 0; k++)
    rc = orion_msg_run_apply(rp->a, &m.runs[k]);
  orion_msg_rows_free(&m);
  orion__exec_job_free(found);
  if (rc != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: executor %" PRId64 " sent rows "
                           "that do not fit array %" PRId64,
                           x->id, g->peer, g->array);
  return 0;
}

/* The elements of move v of our copy as one run; 0 or ORION_EPARSE when
 * we do not hold them. */
static int run_of(exec_state *x, const orion_msg_move *v, orion_msg_run *out) {
  replica *rp = orion__replica_find(x, v->array);
  size_t esz;
  if (rp == NULL || v->first > rp->a->nnz || v->count > rp->a->nnz - v->first)
    return ORION_EPARSE;
  esz = orion_type_size(rp->a->type);
  out->array = v->array;
  out->first = v->first;
  out->count = v->count;
  out->data = (const char *)rp->a->values + (size_t)v->first * esz;
  out->len = (size_t)v->count * esz;
  out->esz = esz;
  return 0;
}

int orion__rows_put(exec_state *x, const orion_msg_move *v, int64_t run,
                    orion_error *err) {
  orion_msg_rows m;
  orion_msg_run one;
  orion_buf b;
  int rc;
  if (v->peer >= x->npeers || v->peer == x->id || run_of(x, v, &one) != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: asked to send elements of array "
                           "%" PRId64 " it does not hold",
                           x->id, v->array);
  m.run = run;
  m.block = v->block;
  m.runs = &one;
  m.nruns = 1;
  orion_buf_init(&b);
  rc = orion_msg_rows_encode_sealed(&b, &m); /* a peer link: MAC-covered */
  if (rc == 0)
    orion__peer_post(x, (int)v->peer, &b, 0);
  orion_buf_free(&b);
  return rc != 0 ? orion_error_set(err, rc, "executor %d: cannot send rows "
                                            "of array %" PRId64 ": %s",
                                   x->id, v->array, orion_strerror(rc))
                 : 0;
}

int orion__rows_send(exec_state *x, job *j) {
  orion_msg_send_rows m;
  orion_error err;
  int64_t k;
  orion_error_clear(&err);
  if (orion_msg_send_rows_decode(j->payload, j->len, &m, NULL) != 0)
    orion__exec_die(x, "the driver sent a malformed SEND_ROWS");
  for (k = 0; k < m.n; k++)
    if (orion__rows_put(x, &m.moves[k], m.run, &err) != 0)
      orion__exec_die(x, "%s", err.msg);
  orion_msg_send_rows_free(&m);
  return 0;
}

/* ROWS_PULL's range g of a sparse iterated array: the values of the
 * blocks here that it covers (they kept them, RUN_BLOCK's keep), one run
 * per block, into v; 0, ORION_ENOMEM, or ORION_EPARSE when a part of g
 * is in no block here. */
static int block_runs(exec_state *x, const orion_msg_range *g,
                      orion_msg_runvec *v) {
  int64_t at = g->first, end = g->first + g->count;
  while (at < end) {
    const blockcopy *bc = NULL;
    int64_t hi;
    size_t esz;
    int i;
    for (i = 0; i < x->nblocks && bc == NULL; i++)
      if (x->blocks[i].array == g->array && x->blocks[i].first <= at &&
          at < x->blocks[i].first + x->blocks[i].a->nnz)
        bc = &x->blocks[i];
    if (bc == NULL)
      return ORION_EPARSE;
    hi = bc->first + bc->a->nnz < end ? bc->first + bc->a->nnz : end;
    esz = orion_type_size(bc->a->type);
    if (orion_msg_runvec_push(v, g->array, at, hi - at,
                              (const char *)bc->a->values +
                                  (size_t)(at - bc->first) * esz,
                              (size_t)(hi - at) * esz) != 0)
      return ORION_ENOMEM;
    at = hi;
  }
  return 0;
}

int orion__rows_pull(exec_state *x, job *j) {
  orion_msg_rows_pull m;
  orion_msg_rows out;
  orion_msg_runvec runs;
  orion_buf b;
  int64_t k;
  int rc = 0;
  if (orion_msg_rows_pull_decode(j->payload, j->len, &m, NULL) != 0)
    orion__exec_die(x, "the driver sent a malformed ROWS_PULL");
  orion__exec_test_die(x, "ROWS_PULL");
  memset(&runs, 0, sizeof runs);
  for (k = 0; k < m.n && rc == 0; k++) {
    orion_msg_move v;
    orion_msg_run one;
    v.array = m.ranges[k].array;
    v.first = m.ranges[k].first;
    v.count = m.ranges[k].count;
    if (orion__replica_find(x, v.array) == NULL) /* a sparse block's */
      rc = block_runs(x, &m.ranges[k], &runs);
    else if ((rc = run_of(x, &v, &one)) == 0)
      rc = orion_msg_runvec_push(&runs, one.array, one.first, one.count,
                                 one.data, one.len);
    if (rc == ORION_ENOMEM)
      orion__exec_die(x, "out of memory answering a ROWS_PULL");
    if (rc != 0)
      orion__exec_die(x, "the driver asked for elements %" PRId64 "..+%" PRId64
                         " of array %" PRId64 " this executor does not hold",
                      v.first, v.count, v.array);
  }
  out.run = 0;
  out.block = -1;
  out.runs = runs.v;
  out.nruns = runs.n;
  orion_buf_init(&b);
  if (orion_msg_rows_data_encode(&b, &out) != 0)
    orion__exec_die(x, "the rows asked for exceed the largest frame");
  orion__exec_post(x, &b);
  orion_buf_free(&b);
  orion_msg_runvec_free(&runs);
  orion_msg_rows_pull_free(&m);
  return 0;
}

/* ---- MOVE_ROWS (loop thread) ------------------------------------------- */

/* Sends MOVE_ROWS p's rows, or returns 1 when its run has not started
 * here yet (it is kept and retried).  A MOVE_ROWS for a run already over
 * is dropped (the driver gave that run up). */
static int serve_move(exec_state *x, const char *p, size_t len) {
  orion_msg_move_rows m;
  orion_error err;
  int64_t loaded, k;
  if (orion_msg_move_rows_decode(p, len, &m, NULL) != 0)
    orion__exec_die(x, "the driver sent a malformed MOVE_ROWS");
  pthread_mutex_lock(&x->mu);
  loaded = x->loaded_run;
  pthread_mutex_unlock(&x->mu);
  if (m.run > loaded) {
    orion_msg_move_rows_free(&m);
    return 1;
  }
  orion_error_clear(&err);
  for (k = 0; k < m.n && m.run == loaded; k++)
    if (orion__rows_put(x, &m.moves[k], m.run, &err) != 0)
      orion__exec_die(x, "%s", err.msg);
  orion_msg_move_rows_free(&m);
  return 0;
}

void orion__rows_on_move(exec_state *x, orion_conn *c, int from,
                         const orion_wire_frame *f) {
  job *j, **tail;
  if (serve_move(x, (const char *)f->payload, f->len) == 0)
    return;
  j = orion__exec_job_take(x, c, f, from); /* kept for later, in order */
  for (tail = &x->moves; *tail != NULL; tail = &(*tail)->next)
    ;
  *tail = j;
}

void orion__rows_serve_moves(exec_state *x) {
  while (x->moves != NULL &&
         serve_move(x, x->moves->payload, x->moves->len) == 0) {
    job *j = x->moves;
    x->moves = j->next;
    orion__exec_job_free(j);
  }
}

void orion__rows_loaded(exec_state *x, int64_t run) {
  pthread_mutex_lock(&x->mu);
  x->loaded_run = run;
  pthread_mutex_unlock(&x->mu);
  orion__exec_wake(x); /* on_wake retries the kept MOVE_ROWS */
}

void orion__exec_test_slow(exec_state *x, double seconds) {
  double s = x->slow_ms / 1000 + (x->slow_factor > 1
                                      ? (x->slow_factor - 1) * seconds
                                      : 0);
  struct timespec ts;
  if (s <= 0)
    return;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0)
    ;
}
