/* The `orion` Lua module as scripts see it on the driver: DistArrays,
 * loaders, accumulators, parallel_for and metrics.  The driver hosts one
 * in-process executor (lua/exec.h) that runs loop bodies. */
#ifndef ORION_LUA_ORION_H
#define ORION_LUA_ORION_H

#include <lua.h>
#include <stdint.h>

#include "dsm/cluster.h"

typedef struct orion_config {
  const char *metrics_path; /* NULL: orion.record is a no-op */
  uint64_t seed;            /* script seed */
  int quiet;
  int verbose;              /* -v: details such as executors registering */
  double stall_seconds;     /* report a block running this long; 0: never */
  int explain;              /* parallel_for prints its plan, runs nothing */
  int fast_math;            /* opts.fast defaults to true */
  int executors;            /* 0: loops run in the driver's process; else
                               the number of executor processes */
  orion_cluster_opts cluster; /* how to start them */
} orion_config;

/* Opens the module (for package.preload / luaL_requiref). */
int luaopen_orion(lua_State *L);

/* Sets the job configuration; call before the script runs.  Copies cfg. */
void orion_module_configure(lua_State *L, const orion_config *cfg);

#endif
