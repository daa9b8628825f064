/* Watching a distributed loop: progress and stall reports (see
 * dist_watch.h). */
#include "scheduler/dist_watch.h"

#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/log.h"

/* What an executor does when it runs no block: nothing, or it owes its
 * end of the loop (LOOP_DONE) or its shards' data (SHARD_DATA). */
enum { WAIT_NONE = -1, WAIT_END = -2, WAIT_PULL = -3 };

void orion__dist_watch_start(orion_dist_watch *w, const orion_loop *m,
                             orion_cluster *cl, const char *where,
                             const int64_t (*krange)[ORION_MAX_DIMS][2],
                             int ndims, double stall, double hb_timeout) {
  const char *label = where;
  int e;
  memset(w, 0, sizeof w[0]);
  w->m = m;
  w->cl = cl;
  w->where = where;
  w->krange = krange;
  w->ndims = ndims;
  w->stall = stall;
  w->hb_timeout = hb_timeout;
  w->n = m->nexec;
  w->last_done = -1;
  if (strncmp(label, "in the ", 7) == 0)
    label += 7;
  orion_progress_start(&w->prog, label, "blocks", m->s->nblocks);
  w->ex = orion_calloc((size_t)w->n, sizeof *w->ex);
  if (w->ex == NULL) {
    w->n = 0;
    return;
  }
  for (e = 0; e < w->n; e++) {
    w->ex[e].task = WAIT_NONE;
    w->ex[e].since = w->prog.start;
  }
}

/* What executor e is doing now: the block it holds without having
 * reported it (scheduler/loop.h), or what it owes at the end of the loop. */
static int task_of(const orion_dist_watch *w, int e) {
  const orion_loop *m = w->m;
  int b = orion_loop_in_flight(m, e);
  if (b >= 0)
    return b;
  if (m->phase == ORION_LOOP_ENDING && !m->ended[e])
    return WAIT_END;
  if (m->phase == ORION_LOOP_PULLING && !m->pulled[e])
    return WAIT_PULL;
  return WAIT_NONE;
}

/* "block 3 of 16 (keys 1..250)", "block 3 of 16 (keys 1..50, 1..100)",
 * or what it owes at the end of the loop. */
static void describe(const orion_dist_watch *w, int task, char *out,
                     size_t n) {
  size_t at;
  int d;
  if (task == WAIT_END) {
    snprintf(out, n, "finishing the loop (its accumulators and kept rows)");
    return;
  }
  if (task == WAIT_PULL) {
    snprintf(out, n, "sending its shards' changes");
    return;
  }
  at = (size_t)snprintf(out, n, "running block %d of %d", task,
                        w->m->s->nblocks);
  if (w->krange == NULL || w->krange[task][0][1] < 0 || at >= n)
    return;
  at += (size_t)snprintf(out + at, n - at, " (keys ");
  for (d = 0; d < w->ndims && at < n; d++)
    at += (size_t)snprintf(out + at, n - at, "%s%lld..%lld", d ? ", " : "",
                           (long long)w->krange[task][d][0] + 1,
                           (long long)w->krange[task][d][1] + 1);
  if (at < n)
    snprintf(out + at, n - at, ")");
}

/* The stall report of executor e, busy with task for `busy` seconds. */
static void report(const orion_dist_watch *w, int e, int task, double busy) {
  char what[256], heard[64];
  orion_cluster_peer_info pi;
  double quiet;
  orion_cluster_peer(w->cl, e, &pi);
  quiet = orion_now() - pi.last_heard;
  describe(w, task, what, sizeof what);
  if (!pi.connected)
    snprintf(heard, sizeof heard, "not connected");
  else if (quiet < 2)
    snprintf(heard, sizeof heard, "last heartbeat %.1f s ago", quiet);
  else
    snprintf(heard, sizeof heard, "no heartbeat for %.0f s", quiet);
  orion_log_warn("stall: executor %d (%s) has been %s for %.0f s %s; %s; "
                 "still waiting (an executor silent for %.0f s is lost)",
                 e, pi.addr, what, busy, w->where, heard,
                 w->hb_timeout);
}

void orion__dist_watch_poll(orion_dist_watch *w) {
  const orion_loop *m = w->m;
  double now = orion_now();
  int e;
  if (w->n == 0 || (now - w->last_poll < 0.1 && m->done == w->last_done))
    return;
  w->last_poll = now;
  w->last_done = m->done;
  orion_progress_update(&w->prog, m->done);
  if (w->stall <= 0 && w->timeout <= 0)
    return;
  for (e = 0; e < w->n; e++) {
    struct orion_exec_watch *x = &w->ex[e];
    int t = task_of(w, e);
    if (t != x->task) {
      x->task = t;
      x->since = now;
      x->told = 0;
    } else if (t >= 0 && w->timeout > 0 &&
               now - x->since > w->timeout + ORION_WATCH_TIMEOUT_GRACE) {
      char what[256];
      describe(w, t, what, sizeof what);
      orion_cluster_fail(w->cl, "executor %d (%s) has been %s for %.0f s, "
                                "past the loop's timeout of %g s, and did "
                                "not stop it %s",
                         e, orion_cluster_addr(w->cl, e), what, now - x->since,
                         w->timeout, w->where);
    } else if (w->stall > 0 && t != WAIT_NONE && !x->told &&
               now - x->since > w->stall) {
      x->told = 1;
      report(w, e, t, now - x->since);
    }
  }
}

void orion__dist_watch_end(orion_dist_watch *w) {
  orion_progress_end(&w->prog);
  orion_free(w->ex);
  w->ex = NULL;
}
