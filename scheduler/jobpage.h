/* The job page's view of the driver (orion-driver --status; the page and
 * its server are dsm/status.h): fills the executors' table from the
 * cluster and the current loop from its state machine (at the cluster's
 * ticks and at each loop's start and end), and keeps the script's printed
 * lines in the log the page shows.  Driver's thread only; every function
 * does nothing when the page is off. */
#ifndef ORION_LUA_JOBPAGE_H
#define ORION_LUA_JOBPAGE_H

#include <lua.h>
#include <stdint.h>

#include "dsm/cluster.h"
#include "scheduler/loop.h"

/* A distributed loop as scheduler/dist.c runs it (borrowed from loop start to
 * loop end). */
typedef struct orion_jobpage_loop {
  orion_cluster *cl;
  const orion_loop *m;
  const char *where;     /* "the parallel_for at x.lua:3" */
  const char *schedule;  /* "2d", "serial", ... */
  int64_t elements;
  const double *secs;    /* per executor: seconds computing blocks */
  uint64_t bytes0;       /* orion_cluster_bytes when it started */
  const uint64_t *peer_bytes; /* between executors (LOOP_DONEs so far) */
} orion_jobpage_loop;

/* The cluster started: publish its executors at every tick. */
void orion_jobpage_cluster(orion_cluster *cl);

/* A loop starts (v is borrowed until orion_jobpage_loop_end) and ends. */
void orion_jobpage_loop_start(const orion_jobpage_loop *v);
void orion_jobpage_loop_end(void);

/* Wraps the global print of L so that what the script prints is also kept
 * in the page's log (util/log_ring.h). */
void orion_jobpage_print(lua_State *L);

/* Adds orion.progress (the job's epochs done of all, with an ETA, on
 * stderr and the page) to the module table at the top of L. */
void orion_jobpage_open_progress(lua_State *L);

#endif
