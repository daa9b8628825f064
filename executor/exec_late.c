/* Block reports held back while more blocks are queued (wire version 24).
 *
 * When the driver sends every block of a loop at its start (scheduler/
 * dist.c: loop_run.late), it needs no report to send more, only every
 * block's by the loop's end, so a BLOCK_DONE sent the moment its block
 * ends costs the driver a wake-up, a read and its handling per block for
 * nothing.  An executor that ends a block flagged `late`, whose report
 * carries only the block's times, and has another RUN_BLOCK queued, holds
 * the report instead; the held reports go, in one frame, with the first
 * report that is not held: when the queue has no RUN_BLOCK left, when the
 * compute thread is about to wait for a job or to take a job other than a
 * block (LOOP_END: so the reports always precede the LOOP_DONE), before a
 * BODY_ERROR, and once the first held one is ORION_LATE_MOST seconds old,
 * which is looked at when a block ends and while the thread waits for a
 * queued block's rows (every 100 ms at most).  Not during a block: a
 * long block keeps the reports held before it until it ends, so the
 * driver's stall report and job page may see those blocks end late by
 * as much (the limit is not a timer).  Blocks of ORION_LATE_MOST / 2
 * seconds or more are reported at once: for them a report per block
 * costs nothing next to the block.  The reports are the same ones, in the
 * order the blocks ended; only when they travel changes, so no result
 * can.
 */
#include "executor/exec_state.h"

#include "dsm/wire.h"
#include "util/buf.h"
#include "util/clock.h"

/* Whether a RUN_BLOCK is queued for the compute thread.  Under x->mu. */
static int block_queued(const exec_state *x) {
  const job *j;
  for (j = x->head; j != NULL; j = j->next)
    if (j->type == ORION_WIRE_RUN_BLOCK)
      return 1;
  return 0;
}

void orion__late_flush_locked(exec_state *x) {
  if (x->late.len == 0)
    return;
  if (x->out.len == 0) {
    orion_buf t = x->out;
    x->out = x->late;
    x->late = t;
  } else {
    orion_buf_append(&x->out, x->late.data, x->late.len);
  }
  x->late.len = 0;
  if (x->out.oom)
    orion__exec_die(x, "out of memory building a reply");
  orion__exec_wake(x);
}

void orion__late_flush(exec_state *x) {
  pthread_mutex_lock(&x->mu);
  orion__late_flush_locked(x);
  pthread_mutex_unlock(&x->mu);
}

void orion__late_post(exec_state *x, orion_buf *b, double seconds, int late) {
  double now = orion_now();
  int hold = late && seconds < ORION_LATE_MOST / 2 &&
             (x->late.len == 0 || now - x->late_since < ORION_LATE_MOST);
  if (x->late.len == 0)
    x->late_since = now;
  orion_buf_append(&x->late, b->data, b->len);
  b->len = 0;
  if (x->late.oom)
    orion__exec_die(x, "out of memory holding a block's report");
  pthread_mutex_lock(&x->mu);
  if (!hold || !block_queued(x))
    orion__late_flush_locked(x);
  pthread_mutex_unlock(&x->mu);
}
