/* orion-driver --loop-metrics (issue 35): with --metrics, every
 * parallel_for call also records one JSON line with what the pass cost
 * each host, so that bench/scale.sh can split a host's time into
 * computing, waiting for rows and idle, and weigh the driver's share:
 *   {"loop": "FILE:LINE", "call": N (the call site's Nth pass),
 *    "loop_seconds", "loop_executors", "loop_driver_bytes",
 *    "loop_peer_bytes",
 *    "exec_compute_s", "exec_wait_s", "exec_idle_s" (one number per
 *    executor, space-separated: the executors' own LOOP_DONE counts),
 *    "driver_cpu_s" (the driver process's user + system CPU seconds
 *    during the call), "driver_cpu_total_s" (since it started)}
 * The keys differ from the apps' own epoch records' (no "epoch", no
 * "seconds"), so readers of those are not disturbed. */
#ifndef ORION_LUA_LOOP_METRICS_H
#define ORION_LUA_LOOP_METRICS_H

#include <lua.h>

/* Records the pass whose result table (parallel_for's return value) is at
 * index res; cpu0: orion__cpu_seconds() (lua/predict.h) when the call began.  The
 * call site is the caller of parallel_for (level 1).  Raises a Lua error
 * when the metrics file cannot be written. */
void orion__loop_metrics(lua_State *L, int res, double cpu0);

#endif
