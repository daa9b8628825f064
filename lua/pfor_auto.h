/* parallel_for's partitions = "auto" (and orion-driver --partitions auto):
 * the partitions per dimension and the placement of a call site chosen by
 * the execution simulator from its own passes (issue 35; the choice
 * itself: scheduler/sim_choose.h).  The first two passes of a call site
 * run with the job's default (--partitions N, else 8) and the placement
 * asked for; after the second (the steady state: data loaded, rows
 * resident) its measured costs drive the simulator over the candidates on
 * the executors it ran on, and the later passes of the call site take the
 * fastest predicted setting.  Opt-in: the partitions decide the order of
 * the updates, so the results then depend on the executor count and on
 * the measured times (docs/design-notes.md, "Partitions chosen by the
 * simulator"). */
#ifndef ORION_LUA_PFOR_AUTO_H
#define ORION_LUA_PFOR_AUTO_H

#include <lua.h>
#include <stdint.h>

#include "lua/predict.h"

/* Before a pass of an "auto" call site (the caller of parallel_for, level
 * 1): the chosen setting where there is one (parts per dimension into
 * parts[0..1]; *assign made dynamic where it was the default and dynamic
 * was chosen). */
void orion__auto_parts_before(lua_State *L, int64_t parts[2], int *assign);

/* After a pass of an "auto" call site that ran on executors: at its
 * second pass, chooses and keeps the setting, prints it on stderr (unless
 * quiet) and records it under --metrics as {"loop": FILE:LINE,
 * "auto_partitions": P, "auto_assign": "static"|"dynamic",
 * "predicted_ran_seconds", "predicted_auto_seconds", "ran_partitions"}.
 * max_parts: the shortest key dimension's rows; assign_given: the script
 * or the environment chose the placement.  Raises a Lua error when the
 * simulator refuses the loop. */
void orion__auto_parts_after(lua_State *L, const orion_predict_obs *o,
                             int64_t max_parts, int assign_given);

#endif
