/* The `orion` Lua module as scripts see it on the driver: DistArrays,
 * loaders, accumulators, parallel_for and metrics.  The driver hosts one
 * in-process executor (executor/exec.h) that runs loop bodies. */
#ifndef ORION_LUA_ORION_H
#define ORION_LUA_ORION_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "dsm/cluster.h"

/* The parts per key dimension a loop is cut into by default: a constant,
 * never the number of executors, so that a loop's blocks (and with them
 * its results) depend on the data and the options only.  8 gives every
 * executor of 1, 2, 4 or 8 an equal share of space parts, and keeps the
 * per-block costs (one RUN_BLOCK, one answer) small beside the work of a
 * block on data of any real size. */
#define ORION_DEFAULT_PARTITIONS 8

/* orion_config.partitions for --partitions auto (lua/pfor_auto.h). */
#define ORION_PARTITIONS_AUTO (-1)

typedef struct orion_config {
  const char *metrics_path; /* NULL: orion.record is a no-op */
  uint64_t seed;            /* script seed */
  int quiet;
  int verbose;              /* -v: details such as executors registering */
  double stall_seconds;     /* report a block running this long; 0: never */
  double loop_timeout;      /* --loop-timeout: a block running longer ends
                               its loop (opts.timeout's default; 0: never) */
  int explain;              /* parallel_for prints its plan once per call
                               site, then runs */
  int explain_only;         /* > 0: stop the script before the loop of the
                               Nth call site explained runs (with explain) */
  int verify;               /* --verify: check each loop's plan against
                               the keys its blocks touch */
  int fast_math;            /* opts.fast defaults to true */
  int allow_io;             /* --allow-io: bodies are not sandboxed */
  int partitions;           /* parts per key dimension when a loop's
                               opts.partitions does not say (0: the
                               default, ORION_DEFAULT_PARTITIONS;
                               ORION_PARTITIONS_AUTO: chosen by the
                               simulator, lua/pfor_auto.h) */
  double bandwidth_mbps;    /* managed buffers' budget per executor
                               (--bandwidth-mbps); 0: measured link rate */
  int executors;            /* 0: loops run in the driver's process; else
                               the number of executor processes */
  orion_cluster_opts cluster; /* how to start them */
  const char *checkpoint_dir; /* --checkpoint-dir (lua/checkpoint.h); NULL */
  int resume;               /* --resume: orion.restore() loads the newest */
  int force;                /* --force: even one of another script */
  const char *predict;      /* --predict SPEC (lua/predict.h); NULL */
  int loop_metrics;         /* --loop-metrics (lua/loop_metrics.h) */
} orion_config;

/* Opens the module (for package.preload / luaL_requiref). */
int luaopen_orion(lua_State *L);

/* Sets the job configuration; call before the script runs.  Copies cfg. */
void orion_module_configure(lua_State *L, const orion_config *cfg);

/* Whether --explain-only stopped the script (lua/pfor_explain.c): with idx
 * non-zero, whether the value at idx is the error it stopped it with.
 * Fills line (n bytes) with what to print ("orion: --explain-only: stopped
 * after explaining 2 loops; no results computed"). */
int orion_module_stopped(lua_State *L, int idx, char *line, size_t n);

#endif
