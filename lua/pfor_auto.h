/* parallel_for's partitions = "auto" (and orion-driver --partitions auto):
 * the partitions per dimension and the placement of the job's "auto"
 * loops chosen by the execution simulator (issue 35; the choice itself:
 * scheduler/sim_choose.h).  Until the choice, "auto" loops run with the
 * job's default (--partitions N, else 8) and the placement asked for; the
 * first "auto" call site to end its second pass (the steady state: data
 * loaded, rows resident; usually the job's main loop) has its measured
 * costs drive the simulator over the candidates on the executors it ran
 * on.  The fastest predicted setting replaces the default only where the
 * switch pays: the pass after it cuts the data afresh and sends it again,
 * as the first pass did, so the switch costs the first pass's seconds
 * over this one's (at least its extra driver bytes at the links' rate),
 * once, for every "auto" call site (MF's training and test passes: each
 * as it last measured it); the gain is weighed over as many passes as the loop has run (its
 * passes to come are not known: a loop that ran k passes is taken to run
 * k more), and the switch taken where, over them, it is predicted faster
 * than the default by more than ORION_AUTO_MARGIN
 * (orion_sim_switch_pays).  Where it does not pay yet, the site weighs it
 * again after passes 4, 8, 16, ... on that pass's costs, but only where
 * the last weighing's predictions would pay by then (a weighing costs the
 * driver its simulations: 0.4-0.8 s on a 0.1-CPU driver, MF on 7
 * hosts).  From a switch
 * on, every "auto" loop takes the setting.  One setting for the job, not one a call site: loops that
 * share arrays (MF's training and test passes over H) keep the same cut,
 * as under a fixed --partitions, where a cut of their own would move the
 * shared rows between layouts each pass (measured: MF's training pass
 * 20-40% slower on 4 hosts when its test pass chose 32 parts of its
 * own).  Opt-in: the partitions decide the order of
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
 * passes 2, 4, 8, ..., where the job has no setting yet, weighs the
 * fastest candidate against the switch (above), prints the outcome on
 * stderr (unless quiet) and records the first weighing and a switch under
 * --metrics as {"loop": FILE:LINE, "pass": K, "auto_partitions": P,
 * "auto_assign": "static"|"dynamic" (the setting from the next pass: the
 * default's where it was kept), "ran_partitions", "predicted_ran_seconds",
 * "predicted_auto_seconds" (P's), "predicted_best_seconds" (the fastest
 * candidate's), "switch_seconds", "amortised_passes": K}.
 * max_parts: the shortest key dimension's rows; assign_given: the script
 * or the environment chose the placement.  Raises a Lua error when the
 * simulator refuses the loop. */
void orion__auto_parts_after(lua_State *L, const orion_predict_obs *o,
                             int64_t max_parts, int assign_given);

#endif
