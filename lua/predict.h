/* orion-driver --predict SPEC (issue 35): after the first and the second
 * pass of each parallel_for call site (the second in the steady state:
 * the data loaded, the rows resident), the pass's measured costs (compute seconds per
 * element, bytes of a rotating time part, the driver's bytes and CPU
 * seconds per block, the exchange's CPU per byte)
 * drive the execution simulator (scheduler/sim.h) on the cluster SPEC
 * ("NxQc:RATE": N hosts of Q CPUs, links of RATE), and the predicted time
 * of a pass there is printed with its breakdown, and recorded under
 * --metrics as {"loop": FILE:LINE, "predicted_pass_seconds": ..., ...};
 * every pass of the call site, those two and the later ones, is also
 * recorded as {"loop": FILE:LINE, "pass": K, "measured_pass_seconds": ...}
 * (for bench/predict_check.sh).
 * docs/scale.md explains the model and its limits. */
#ifndef ORION_LUA_PREDICT_H
#define ORION_LUA_PREDICT_H

#include <lua.h>
#include <stdint.h>

#include "dsm/blocks.h"
#include "scheduler/sim_choose.h"
#include "util/error.h"

/* One pass as it ran here. */
typedef struct orion_predict_obs {
  orion_order_kind kind;
  const orion_blockset *bs; /* the blocks: their element counts */
  int64_t elements;
  double compute_seconds; /* every executor's block seconds together */
  uint64_t peer_bytes;    /* between executors */
  uint64_t driver_bytes;  /* through the driver */
  int nexec;              /* executors it ran on (0: in the driver) */
  int early, dynamic;     /* how its blocks went out (scheduler/loop.h) */
  double seconds;         /* the pass's wall time */
  double driver_cpu;      /* the driver's CPU seconds in the pass (its
                             process's, all threads) */
  double dist_seconds;    /* of seconds, those on the executors: from
                             sending the loop to its end (0 in the
                             driver) */
  int ahead;              /* dispatched ahead (scheduler/loop.h) */
  double exec_bytes;      /* of driver_bytes, those sent each executor
                             once (orion_dist_stats.exec_bytes) */
  double driver_loop;     /* the driver's CPU seconds from sending the
                             loop to its end, and the seconds it was
                             runnable but held (its quota, other work:
                             orion__run_delay_seconds), together; 0 in
                             the driver */
  int reorder;            /* executors could start a later queued block
                             (executor/exec_order.c) */
  double exec_cpu;        /* the executors' CPU seconds in the loop, all
                             together (0 in the driver) */
  double exch_cpu;        /* of those, the exchange's (dsm/msg.h's
                             LOOP_DONE) */
  double net_cpu;         /* of those, the executors' loop threads' */
  double body_cpu;        /* of those, the bodies' */
  double body_wall;       /* the bodies' wall seconds, all together */
} orion_predict_obs;

/* The driver process's CPU seconds so far (CLOCK_PROCESS_CPUTIME_ID). */
double orion__cpu_seconds(void);

/* The seconds the calling thread has so far waited to run while runnable
 * (/proc/thread-self/schedstat's second field: the run queue, and a CPU
 * quota's throttling); 0 where the kernel does not say. */
double orion__run_delay_seconds(void);

/* Pushes and returns the call site of parallel_for (the caller at level
 * 1) as "FILE:LINE". */
const char *orion__push_site(lua_State *L);

/* Adds 1 to where's count in the registry's table `key` (made when
 * missing) and returns it: the call site's passes so far. */
int orion__site_count(lua_State *L, const char *key, const char *where);

/* Pushes orion.record and a new table of about n fields for the caller to
 * fill and pass (lua_call(L, 1, 0)), and returns 1; 0 where the script has
 * no orion.record (the stack then holds what was looked at: the caller
 * restores its top either way). */
int orion__record_open(lua_State *L, int n);

/* With --predict: at the first two passes of each call site (the caller
 * of parallel_for, level 1), predicts a pass on the SPEC's cluster, prints it and records it.
 * Raises a Lua error when the simulator refuses the loop. */
void orion__predict_loop(lua_State *L, const char *spec,
                         const orion_predict_obs *o);

/* partitions = "auto" (docs/design-notes.md): a candidate replaces the
 * setting that ran only where predicted faster by more than this. */
#define ORION_AUTO_MARGIN 0.05

/* For partitions = "auto": the partitions per dimension and placement the
 * simulator predicts fastest for the loop o ran (on its executors, with
 * links of link_bps bytes/s each way, 0: not limited; the costs and the
 * hosts' speed taken from o as --predict takes them), among
 * orion_sim_choose's candidates, parts at most max_parts (placement kept
 * with keep_placement).  *ran and *best
 * as there, with the pass's fixed costs.  0, or an error (o ran in the
 * driver, out of memory). */
int orion__predict_choose(const orion_predict_obs *o, double link_bps,
                          int64_t max_parts, int keep_placement,
                          orion_sim_setting *ran,
                          orion_sim_setting *best, orion_error *err);

#endif
