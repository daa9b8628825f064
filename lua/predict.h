/* orion-driver --predict SPEC (issue 35): after the first and the second
 * pass of each parallel_for call site (the second in the steady state:
 * the data loaded, the rows resident), the pass's measured costs (compute seconds per
 * element, bytes of a rotating time part, the driver's bytes per block)
 * drive the execution simulator (scheduler/sim.h) on the cluster SPEC
 * ("NxQc:RATE": N hosts of Q CPUs, links of RATE), and the predicted time
 * of a pass there is printed with its breakdown, and recorded under
 * --metrics as {"loop": FILE:LINE, "predicted_pass_seconds": ..., ...}.
 * docs/scale.md explains the model and its limits. */
#ifndef ORION_LUA_PREDICT_H
#define ORION_LUA_PREDICT_H

#include <lua.h>
#include <stdint.h>

#include "dsm/blocks.h"

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
  int ahead;              /* dispatched ahead (scheduler/loop.h) */
} orion_predict_obs;

/* With --predict: at the first two passes of each call site (the caller
 * of parallel_for, level 1), predicts a pass on the SPEC's cluster, prints it and records it.
 * Raises a Lua error when the simulator refuses the loop. */
void orion__predict_loop(lua_State *L, const char *spec,
                         const orion_predict_obs *o);

#endif
