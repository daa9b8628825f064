/* Watching a distributed loop while the driver waits for it (scheduler/dist.c):
 * the progress line (blocks done of total and an ETA, util/progress.h)
 * and the stall report.  An executor that has been running one block, or
 * owes its end of the loop, for more than --stall-seconds is named once
 * per stall with its address, the block (index and keys) and how recently
 * it was heard from; the driver then keeps waiting, until the heartbeat
 * timeout ends the job if the executor has gone silent.
 *
 * The loop deadline's backstop: executors stop a block that runs past the
 * loop's timeout themselves (executor/exec_deadline.c) and report it as the
 * block's error; one that still runs a block ORION_WATCH_TIMEOUT_GRACE
 * seconds after that ends the job (exit 3) naming the executor and the
 * block.
 *
 * Read-only but for that: it looks at the loop's state machine
 * (scheduler/loop.h) and the cluster's connections (dsm/cluster.h), and
 * changes neither. */
#ifndef ORION_LUA_DIST_WATCH_H
#define ORION_LUA_DIST_WATCH_H

#include <stdint.h>

#include "dsm/cluster.h"
#include "scheduler/loop.h"
#include "util/limits.h"
#include "util/progress.h"

#define ORION_WATCH_TIMEOUT_GRACE 10.0

typedef struct orion_dist_watch {
  const orion_loop *m;
  orion_cluster *cl;
  const char *where; /* "in the parallel_for at x.lua:3" */
  const int64_t (*krange)[ORION_MAX_DIMS][2]; /* per block (blocks.h) */
  int ndims;
  double stall;      /* seconds; 0: no report */
  double hb_timeout; /* the cluster's heartbeat timeout, for the report */
  double timeout;    /* the loop's timeout (0: none), set after _start */
  orion_progress prog;
  int n;             /* executors */
  struct orion_exec_watch {
    int task;        /* the block it runs, or what it owes (dist_watch.c) */
    double since;    /* when task began */
    int told;        /* this stall was reported */
  } *ex;             /* per executor */
  double last_poll;
  int last_done;
} orion_dist_watch;

/* Starts watching loop m (its blocks cut with key ranges krange, ndims
 * dimensions) of the job `where`.  Without memory it watches nothing. */
void orion__dist_watch_start(orion_dist_watch *w, const orion_loop *m,
                             orion_cluster *cl, const char *where,
                             const int64_t (*krange)[ORION_MAX_DIMS][2],
                             int ndims, double stall, double hb_timeout);

/* Redraws the progress line and reports stalls; cheap to call after every
 * event (it looks at the loop at most ten times a second). */
void orion__dist_watch_poll(orion_dist_watch *w);

/* Erases the progress line and frees what the watch holds. */
void orion__dist_watch_end(orion_dist_watch *w);

#endif
