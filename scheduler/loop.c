#include "scheduler/loop.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

/* Moving a block's data elsewhere costs a fixed latency (seconds) and
 * the time the executors were seen waiting per byte moved (l->move_cost,
 * at first as if at 1 GB/s). */
#define MOVE_LATENCY 1e-3
#define MOVE_FIRST_RATE 1e9

void orion_loop_free(orion_loop *l) {
  orion_free(l->state);
  orion_free(l->ndeps);
  orion_free(l->next_p);
  orion_free(l->next_q);
  orion_free(l->ended);
  orion_free(l->pulled);
  orion_free(l->at);
  orion_free(l->held);
  orion_free(l->ran);
  orion_free(l->mean);
  orion_free(l->ready);
  orion_free(l->moved);
  orion_free(l->queued);
  orion_free(l->nclean);
  orion_free(l->owner);
  l->owner = NULL;
  l->nclean = NULL;
  l->moved = NULL;
  l->queued = NULL;
  l->at = l->held = l->ran = l->ready = NULL;
  l->mean = NULL;
  l->state = NULL;
  l->ndeps = l->next_p = l->next_q = NULL;
  l->ended = l->pulled = NULL;
}

int orion_loop_init(orion_loop *l, const orion_schedule *s, int nexec,
                    int pull, const orion_loop_io *io) {
  size_t nb = (size_t)s->nblocks + 1, ne = (size_t)nexec + 1;
  int i;
  memset(l, 0, sizeof *l);
  if (nexec < 1 || s->nblocks < 0)
    return ORION_EINVAL;
  l->s = s;
  l->nexec = nexec;
  l->pull = pull;
  l->io = *io;
  l->err_pos = -1;
  orion_error_clear(&l->err);
  l->state = orion_calloc(nb, 1);
  l->ndeps = orion_calloc(nb, sizeof(int));
  l->next_p = orion_malloc(sizeof(int) * nb);
  l->next_q = orion_malloc(sizeof(int) * nb);
  l->ended = orion_calloc(ne, 1);
  l->pulled = orion_calloc(ne, 1);
  l->at = orion_malloc(sizeof(int) * nb);
  l->held = orion_calloc(ne, sizeof(int));
  l->ran = orion_calloc(ne, sizeof(int));
  l->mean = orion_calloc(ne, sizeof(double));
  l->ready = orion_malloc(sizeof(int) * nb);
  l->moved = orion_calloc(nb, sizeof(int64_t));
  l->queued = orion_calloc(ne, sizeof(int));
  l->nclean = orion_calloc(ne, sizeof(int));
  l->depth = 2;
  l->move_cost = 1 / MOVE_FIRST_RATE;
  if (l->state == NULL || l->ndeps == NULL || l->next_p == NULL ||
      l->next_q == NULL || l->ended == NULL || l->pulled == NULL ||
      l->at == NULL || l->held == NULL || l->ran == NULL || l->mean == NULL ||
      l->ready == NULL || l->moved == NULL || l->queued == NULL ||
      l->nclean == NULL) {
    orion_loop_free(l);
    return ORION_ENOMEM;
  }
  for (i = 0; i < s->nblocks; i++)
    l->next_p[i] = l->next_q[i] = l->at[i] = -1;
  for (i = 0; i < s->nblocks; i++) {
    if (s->after_p[i] >= 0) {
      l->next_p[s->after_p[i]] = i;
      l->ndeps[i]++;
    }
    if (s->after_q[i] >= 0) {
      l->next_q[s->after_q[i]] = i;
      l->ndeps[i]++;
    }
  }
  return 0;
}

int orion_loop_set_owners(orion_loop *l, const int *owner) {
  int p;
  for (p = 0; p < l->s->n0; p++)
    if (owner[p] < 0 || owner[p] >= l->nexec)
      return ORION_EINVAL;
  if (l->owner == NULL)
    l->owner = orion_malloc(sizeof(int) * ((size_t)l->s->n0 + 1));
  if (l->owner == NULL)
    return ORION_ENOMEM;
  memcpy(l->owner, owner, sizeof(int) * (size_t)l->s->n0);
  return 0;
}

int orion_loop_home(const orion_loop *l, int block) {
  if (l->owner != NULL && l->s->n1 > 0)
    return l->owner[block / l->s->n1];
  return orion_schedule_exec(l->s, block, l->nexec);
}

static void pump(orion_loop *l);
static int64_t affinity(const orion_loop *l, int e, int pos);
static void became_ready(orion_loop *l, int pos);

/* Whether blocks go out ahead of their time part (loop.h). */
static int ahead_on(const orion_loop *l) {
  return l->ahead && l->early && !l->dynamic;
}

/* The position k blocks before (k < 0: after) pos along its time part,
 * or -1. */
static int along_q(const orion_loop *l, int pos, int k) {
  for (; pos >= 0 && k > 0; k--)
    pos = l->s->after_q[pos];
  for (; pos >= 0 && k < 0; k++)
    pos = l->next_q[pos];
  return pos;
}

int orion_loop_reorder_window(int n0, int nexec) {
  return nexec > 0 && n0 > nexec ? (n0 + nexec - 1) / nexec : 1;
}

int orion_loop_all_at_start(int nblocks, int nexec) {
  return nexec > 0 && nblocks <= (int64_t)ORION_LOOP_START_BLOCKS * nexec;
}

/* Blocks of a time part that may be out at once ahead of a block (loop.h). */
static int window(const orion_loop *l) {
  return l->window > 0 ? l->window : 1;
}

/* One of the block at pos's dependences is met (pos -1: none). */
static void release(orion_loop *l, int pos) {
  if (pos >= 0 && --l->ndeps[pos] == 0 &&
      l->state[pos] == ORION_BLOCK_WAITING && !l->failed)
    became_ready(l, pos);
}

static void send_pos(orion_loop *l, int pos, int e) {
  int b = l->s->order[pos], nx;
  l->state[pos] = ORION_BLOCK_SENT;
  l->at[pos] = e;
  if (l->dynamic) { /* the bytes of its data that e lacks */
    int64_t most = 0, k;
    for (k = 0; k < l->nexec; k++)
      most = affinity(l, (int)k, pos) > most ? affinity(l, (int)k, pos) : most;
    l->moved[pos] = most - affinity(l, e, pos);
  }
  l->held[e]++;
  if (ahead_on(l) && l->s->after_q[pos] >= 0 &&
      l->state[l->s->after_q[pos]] != ORION_BLOCK_DONE)
    l->nahead++;
  l->io.send_block(l->io.ud, e, b);
  /* Early dispatch: the next block of the space part may follow it into
   * the same executor's queue as soon as its other dependence is met. */
  nx = l->early ? l->next_p[pos] : -1;
  if (nx >= 0 && --l->ndeps[nx] == 0 && l->state[nx] == ORION_BLOCK_WAITING &&
      !l->failed)
    became_ready(l, nx);
  /* Ahead: the next block of the time part may go once this one is sent
   * and the one `window` blocks before it is done. */
  if (ahead_on(l)) {
    int w = along_q(l, pos, window(l));
    if (w < 0 || l->state[w] == ORION_BLOCK_DONE)
      release(l, l->next_q[pos]);
  }
}

/* Block at pos waits for nothing any more (but, with early dispatch, the
 * previous block of its space part may be only sent). */
static void became_ready(orion_loop *l, int pos) {
  int k;
  if (!l->dynamic) {
    send_pos(l, pos, orion_loop_home(l, l->s->order[pos]));
    return;
  }
  for (k = l->nready; k > 0 && l->ready[k - 1] > pos; k--)
    l->ready[k] = l->ready[k - 1];
  l->ready[k] = pos;
  l->nready++;
}

/* ---- dynamic assignment -------------------------------------------------- */

static int64_t affinity(const orion_loop *l, int e, int pos) {
  int pp = l->s->after_p[pos];
  if (l->io.affinity != NULL)
    return l->io.affinity(l->io.ud, e, l->s->order[pos]);
  return pp >= 0 && l->at[pp] == e;
}


/* The seconds until executor e would have finished the block at pos: its
 * queue and the block, at its mean so far (an executor not measured yet
 * counts as the fastest one measured, or 1 s), plus moving the data it
 * lacks that the best placed executor holds (most: its affinity).  A
 * move also costs one block of the fastest executor's: the data moved
 * stays where it went, so the part's later blocks (and the next pass's
 * same block) find it away from home and move again or follow it.
 * Without that margin, executors that differ by noise alone (a queue one
 * block shorter, a mean a little lower) swap blocks back and forth: on 4
 * executors sharing 2 cores, MF moved three times the bytes of the static
 * placement per epoch and took 1.7 times as long. */
static double finish(const orion_loop *l, int e, int pos, double fastest,
                     int64_t most) {
  double m = l->mean[e] > 0 ? l->mean[e] : fastest;
  int64_t a = affinity(l, e, pos);
  return (l->queued[e] + 1) * m +
         (a < most ? MOVE_LATENCY + fastest +
                         (double)(most - a) * l->move_cost
                   : 0);
}

/* Whether executor a is a better place than b for the block at pos. */
static int better(const orion_loop *l, int pos, int a, int b, double fastest,
                  int64_t most) {
  double fa = finish(l, a, pos, fastest, most);
  double fb = finish(l, b, pos, fastest, most);
  int home;
  if (fa != fb)
    return fa < fb;
  home = orion_loop_home(l, l->s->order[pos]);
  if ((a == home) != (b == home))
    return a == home;
  return a < b;
}

/* Where the ready block at pos goes now, or -1 (it waits). */
static int choose(const orion_loop *l, int pos) {
  int e, best = -1, pp = l->s->after_p[pos], only = -1;
  double fastest = 0;
  int64_t most = 0;
  for (e = 0; e < l->nexec; e++) {
    int64_t a = affinity(l, e, pos);
    if (l->mean[e] > 0 && (fastest == 0 || l->mean[e] < fastest))
      fastest = l->mean[e];
    most = a > most ? a : most;
  }
  if (fastest == 0)
    fastest = 1;
  if (pp >= 0 && l->state[pp] == ORION_BLOCK_SENT)
    only = l->at[pp]; /* early: behind it in its executor's queue */
  /* The best place, full or not: a block waits for an executor whose
   * queue is full when that still beats moving its data elsewhere. */
  for (e = 0; e < l->nexec; e++)
    if (best < 0 || better(l, pos, e, best, fastest, most))
      best = e;
  if (only >= 0 && best != only)
    return -1; /* it waits for its early queue's block to be done */
  return best;
}

/* Places the ready blocks in the schedule's order as a list schedule:
 * each goes where it would finish first, counting the blocks placed before
 * it (l->queued), and the first whose place has a free slot goes out.
 * Counting them keeps a fast executor from looking free for every ready
 * block at once: a slower one gets some when the fast one's queue would be
 * long.  Repeats until nothing more can go. */
static void pump(orion_loop *l) {
  int again = 1;
  while (again && !l->failed && l->dynamic) {
    int k;
    again = 0;
    memcpy(l->queued, l->held, sizeof(int) * (size_t)l->nexec);
    for (k = 0; k < l->nready; k++) {
      int pos = l->ready[k], e = choose(l, pos);
      if (e < 0)
        continue;
      if (l->held[e] >= l->depth) { /* it waits for a slot there */
        l->queued[e]++;
        continue;
      }
      memmove(&l->ready[k], &l->ready[k + 1],
              sizeof(int) * (size_t)(l->nready - k - 1));
      l->nready--;
      send_pos(l, pos, e); /* may make the next one ready: scan again */
      again = 1;
      break;
    }
  }
}

void orion_loop_note_seconds(orion_loop *l, int exec, int64_t block,
                             double seconds, double waited) {
  int64_t moved;
  if (exec < 0 || exec >= l->nexec || !(seconds >= 0) || block < 0 ||
      block >= l->s->nblocks)
    return;
  moved = l->moved[l->s->pos_of[block]];
  if (moved > 0 && waited >= 0 && l->nclean[exec] > 0) {
    /* What its moved data cost it, waiting for it and installing it (the
     * time beyond the executor's mean): a running mean per byte. */
    double extra = seconds > l->mean[exec] ? seconds - l->mean[exec] : 0;
    l->move_cost += ((waited + extra) / (double)moved - l->move_cost) / 4;
    return;
  }
  /* The executor's mean over the blocks whose data was there (or, until
   * there is one, over every block). */
  if (moved == 0 || l->nclean[exec] == 0) {
    int n = moved == 0 ? ++l->nclean[exec] : l->ran[exec] + 1;
    l->mean[exec] += (seconds - l->mean[exec]) / n;
  }
  if (l->mean[exec] <= 0)
    l->mean[exec] = 1e-9;
}

/* Tells every executor the loop is over, once. */
static void end_all(orion_loop *l) {
  int e;
  if (l->ending)
    return;
  l->ending = 1;
  l->phase = ORION_LOOP_ENDING;
  for (e = 0; e < l->nexec; e++)
    l->io.end_loop(l->io.ud, e, l->failed);
}

void orion_loop_start(orion_loop *l) {
  int pos;
  for (pos = 0; pos < l->s->nblocks && !l->failed; pos++)
    if (l->state[pos] == ORION_BLOCK_WAITING && l->ndeps[pos] == 0 &&
        l->at[pos] < 0)
      became_ready(l, pos);
  pump(l);
  if (l->s->nblocks == 0)
    end_all(l);
}

int orion_loop_check_done(const orion_loop *l, int exec, int64_t block) {
  if (block < 0 || block >= l->s->nblocks || exec < 0 || exec >= l->nexec)
    return ORION_EPARSE;
  if (l->state[l->s->pos_of[block]] != ORION_BLOCK_SENT ||
      l->at[l->s->pos_of[block]] != exec)
    return ORION_EPARSE;
  return 0;
}

int orion_loop_block_done(orion_loop *l, int exec, int64_t block) {
  int pos, k, rc;
  if (l->phase == ORION_LOOP_BROKEN)
    return 0;
  rc = orion_loop_check_done(l, exec, block);
  if (rc != 0)
    return rc;
  pos = l->s->pos_of[block];
  l->state[pos] = ORION_BLOCK_DONE;
  l->done++;
  l->held[exec]--;
  l->ran[exec]++;
  /* Only the blocks waiting for this one can have become ready (with
   * early dispatch, the next of its space part went at its send). */
  for (k = l->early ? 1 : 0; k < 2 && !ahead_on(l); k++)
    release(l, k == 0 ? l->next_p[pos] : l->next_q[pos]);
  /* Ahead, the blocks of its time part up to `window` after it went (or
   * go) at their predecessors' sends; the one after those may go once the
   * last of them is sent. */
  if (ahead_on(l)) {
    int last = along_q(l, pos, -window(l));
    if (last >= 0 && l->state[last] != ORION_BLOCK_WAITING)
      release(l, l->next_q[last]);
  }
  pump(l); /* a slot is free, and blocks may have become ready */
  if (l->done == l->s->nblocks)
    end_all(l);
  return 0;
}

void orion_loop_body_error(orion_loop *l, int exec, int64_t block,
                           const char *msg, size_t len) {
  int pos;
  (void)exec; /* the message names it */
  if (l->phase == ORION_LOOP_BROKEN)
    return;
  pos = block >= 0 && block < l->s->nblocks ? l->s->pos_of[block] : -1;
  if (!l->failed || (pos >= 0 && (l->err_pos < 0 || pos < l->err_pos))) {
    l->failed = 1;
    l->err_pos = pos;
    orion_error_set(&l->err, ORION_EBODY, "%.*s", (int)len, msg);
  }
  end_all(l);
}

void orion_loop_fail(orion_loop *l, const orion_error *err) {
  if (l->phase == ORION_LOOP_BROKEN)
    return;
  if (!l->failed) {
    l->failed = 1;
    l->err_pos = -1;
    l->err = *err;
  }
  end_all(l);
}

int orion_loop_exec_done(orion_loop *l, int exec) {
  int e;
  if (l->phase == ORION_LOOP_BROKEN)
    return 0;
  if (l->phase != ORION_LOOP_ENDING || exec < 0 || exec >= l->nexec ||
      l->ended[exec])
    return ORION_EPARSE;
  l->ended[exec] = 1;
  if (++l->nended < l->nexec)
    return 0;
  if (!l->pull || l->failed) {
    l->phase = ORION_LOOP_FINISHED;
    return 0;
  }
  l->phase = ORION_LOOP_PULLING;
  for (e = 0; e < l->nexec; e++)
    l->io.pull(l->io.ud, e);
  return 0;
}

int orion_loop_pulled(orion_loop *l, int exec) {
  if (l->phase == ORION_LOOP_BROKEN)
    return 0;
  if (l->phase != ORION_LOOP_PULLING || exec < 0 || exec >= l->nexec ||
      l->pulled[exec])
    return ORION_EPARSE;
  l->pulled[exec] = 1;
  if (++l->npulled == l->nexec)
    l->phase = ORION_LOOP_FINISHED;
  return 0;
}

int orion_loop_in_flight(const orion_loop *l, int exec) {
  int pos;
  for (pos = 0; pos < l->s->nblocks; pos++)
    if (l->state[pos] == ORION_BLOCK_SENT && l->at[pos] == exec)
      return l->s->order[pos];
  return -1;
}

/* Breaks the loop: records code and "executor E WHAT ..." as its error
 * and emits fail. */
static void break_loop(orion_loop *l, int exec, int code, const char *what) {
  int b;
  if (l->phase == ORION_LOOP_FINISHED || l->phase == ORION_LOOP_BROKEN ||
      exec < 0 || exec >= l->nexec)
    return;
  b = orion_loop_in_flight(l, exec);
  if (b >= 0)
    orion_error_set(&l->err, code, "%s while running block %d", what, b);
  else if (l->phase == ORION_LOOP_RUNNING)
    orion_error_set(&l->err, code, "%s with no block in flight", what);
  else
    orion_error_set(&l->err, code, "%s while the loop was ending", what);
  l->failed = 1;
  l->err_pos = -1;
  l->phase = ORION_LOOP_BROKEN;
  l->io.fail(l->io.ud, exec, b, l->err.msg);
}

void orion_loop_lost(orion_loop *l, int exec, const char *what) {
  break_loop(l, exec, -ECONNRESET, what);
}

void orion_loop_timeout(orion_loop *l, int exec, const char *what) {
  break_loop(l, exec, -ETIMEDOUT, what);
}

int orion_loop_finished(const orion_loop *l) {
  return l->phase == ORION_LOOP_FINISHED || l->phase == ORION_LOOP_BROKEN;
}

const orion_error *orion_loop_failed(const orion_loop *l) {
  return l->failed ? &l->err : NULL;
}

int orion_loop_exec_of(const orion_loop *l, int block) {
  return l->at[l->s->pos_of[block]];
}

orion_block_state orion_loop_block_state(const orion_loop *l, int block) {
  return (orion_block_state)l->state[l->s->pos_of[block]];
}

void orion_loop_count(const orion_loop *l, int exec, int *done, int *total) {
  int pos;
  *done = *total = 0;
  for (pos = 0; pos < l->s->nblocks; pos++)
    if (exec < 0 ||
        (l->at[pos] >= 0  ? l->at[pos]
         : !l->dynamic    ? orion_loop_home(l, l->s->order[pos])
                          : -2) == exec) {
      (*total)++;
      *done += l->state[pos] == ORION_BLOCK_DONE;
    }
}

const char *orion_loop_phase_name(const orion_loop *l) {
  switch (l->phase) {
  case ORION_LOOP_RUNNING:
    return "running";
  case ORION_LOOP_ENDING:
    return "ending";
  case ORION_LOOP_PULLING:
    return "pulling";
  case ORION_LOOP_FINISHED:
    return l->failed ? "failed" : "finished";
  case ORION_LOOP_BROKEN:
    return "broken";
  }
  return "?";
}
