/* The order in which the compute thread takes its queued jobs (issue 35).
 *
 * Jobs run in the order they came, but for one case: a RUN_BLOCK that the
 * driver marked with its space and time part (scheduler/dist.c does so
 * under dispatch ahead, scheduler/loop.h) may start before the blocks
 * queued ahead of it when
 *   - every job ahead of it is a marked RUN_BLOCK (a LOAD_BODY, LOOP_END,
 *     SEND_ROWS or any other job is a barrier, as is an unmarked block),
 *   - none of those shares its space part or its time part, and
 *   - the rows it gets from peers (its gets) are all in.
 * Such a block's predecessors in the schedule are then done: the block
 * before it of its space part runs here (static placement) and would be
 * queued ahead of it, and the one before it of its time part ran where
 * its rows came from (or here, and then it is not queued ahead of it
 * either).  The blocks it passes write other rows, so the results are the
 * same bits (docs/design-notes.md, "Running a later block first").
 *
 * When no job may go, the thread waits for rows (fcv: ROWS and new jobs
 * both signal it) with the time limit a block's own wait has
 * (orion__rows_get: 6 heartbeat timeouts): past it, or once the loop is
 * aborted, the head goes and fails or stops as before.  The wait counts
 * as the loop's wait for data.
 */
#include "config.h"

#include <stdint.h>

#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/clock.h"

/* Reads RUN_BLOCK j's parts and gets once (unmarked: space -1).  A frame
 * that does not decode stays unmarked, so that it fails in its turn. */
static void read_order(job *j) {
  orion_msg_run_block m;
  if (j->ordered)
    return;
  j->ordered = 1;
  j->space = j->time = -1;
  if (j->type != ORION_WIRE_RUN_BLOCK ||
      orion_msg_run_block_decode(j->payload, j->len, &m, NULL) != 0)
    return;
  if (m.space >= 0 && m.time >= 0 && m.ngets >= 0) {
    j->gets = orion_malloc(sizeof *j->gets * (size_t)(m.ngets + 1));
    if (j->gets != NULL) { /* out of memory: it stays in order */
      for (int64_t k = 0; k < m.ngets; k++)
        j->gets[k] = m.gets[k];
      j->ngets = m.ngets;
      j->space = m.space;
      j->time = m.time;
    }
  }
  orion_msg_run_block_free(&m);
}

static int marked(job *j) {
  read_order(j);
  return j->type == ORION_WIRE_RUN_BLOCK && j->space >= 0;
}

/* Whether block j may start now: no job from the head to it shares a
 * part with it, and its rows are in. */
static int may_start(const exec_state *x, const job *j) {
  const job *k;
  int64_t g;
  for (k = x->head; k != j; k = k->next)
    if (k->space == j->space || k->time == j->time)
      return 0;
  for (g = 0; g < j->ngets; g++)
    if (!orion__rows_there(x, &j->gets[g], x->run))
      return 0;
  return 1;
}

/* The job to take now, or NULL (*prev: the job before it, NULL at the
 * head). */
static job *pick(exec_state *x, job **prev) {
  job *j, *before = NULL;
  *prev = NULL;
  /* In order; and after a body error here the loop's blocks are skipped
   * (orion__run_block), so none need wait for rows. */
  if (x->failed || !marked(x->head))
    return x->head;
  for (j = x->head; j != NULL && marked(j); before = j, j = j->next)
    if (may_start(x, j)) {
      *prev = before;
      return j;
    }
  return NULL;
}

job *orion__order_take(exec_state *x) {
  double since = 0, t0 = 0;
  job *j = NULL, *prev;
  for (;;) {
    if (x->head == NULL || x->stop) /* held reports go before a wait */
      orion__late_flush_locked(x);
    while (x->head == NULL && !x->stop)
      pthread_cond_wait(&x->cv, &x->mu);
    if (x->stop) {
      j = NULL;
      break;
    }
    j = pick(x, &prev);
    if (j == NULL && since > 0 &&
        (orion_now() >= since + 6 * x->hb_timeout ||
         orion__rows_abort_queued(x)))
      j = x->head; /* it waits (or stops) in orion__rows_get */
    if (j != NULL) {
      if (j == x->head) {
        x->head = j->next;
        if (x->head == NULL)
          x->tail = NULL;
        x->rows_since = since;
      } else {
        prev->next = j->next;
        if (x->tail == j)
          x->tail = prev;
        x->reordered++;
        x->rows_since = 0;
      }
      j->next = NULL;
      if (j->type != ORION_WIRE_RUN_BLOCK) /* LOOP_END after the reports */
        orion__late_flush_locked(x);
      break;
    }
    /* Waiting for rows: held reports wait too, up to their time limit
     * (the driver needs none of them to send more, executor/exec_late.c). */
    if (x->late.len > 0 && orion_now() - x->late_since >= ORION_LATE_MOST)
      orion__late_flush_locked(x);
    if (since == 0)
      t0 = since = orion__wait_begin();
    orion__exec_nap(x);
  }
  if (since > 0)
    orion__wait_end(x, t0);
  return j;
}
