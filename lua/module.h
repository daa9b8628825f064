/* Internals of the driver-side `orion` module shared by its files:
 * lua/orion.c (arrays, loaders, accumulators, metrics) and lua/pfor.c
 * (parallel_for, explain, buffers).  Not a public interface. */
#ifndef ORION_LUA_MODULE_H
#define ORION_LUA_MODULE_H

#include <lua.h>
#include <stdio.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/cluster.h"
#include "dsm/partition.h"
#include "lua/accum.h"
#include "lua/exec.h"
#include "scheduler/blocks.h"
#include "util/error.h"

#define ARRAY_MT "orion.DistArray"
#define ACC_MT "orion.Accumulator"
#define STATE_KEY "orion.state"
#define ARRAYS_KEY "orion.arrays" /* id -> DistArray, weak values */
#define ACCS_KEY "orion.accs"     /* id -> Accumulator, weak values */
#define BUFFER_MT "orion.Buffer"
#define BUFFERS_KEY "orion.buffers" /* id -> Buffer, weak values */

/* Module state, one per driver Lua state. */
typedef struct mod_state {
  orion_exec *ex; /* the in-process executor, created on first use */
  FILE *metrics;
  char *metrics_path;
  uint64_t seed;
  int64_t next_array_id;
  int64_t next_acc_id;
  int64_t next_loop_id;
  int64_t next_buffer_id;
  int explain; /* --explain: parallel_for prints its plan, runs nothing */
  int fast;    /* --fast-math: opts.fast defaults to true */
  struct orion_cobj *cobj; /* the running loop's compiled body, or NULL */
  /* The cluster: started on first use when nexec > 0 (0: loops run on
   * the in-process executor). */
  int nexec;
  orion_cluster_opts copts;
  orion_cluster *cl;
  int64_t *forget; /* ids of arrays collected since the last loop */
  int nforget;
} mod_state;

/* A DistArray userdata. */
typedef struct darray {
  orion_array *a;
  int64_t id;
  /* The blocks the array was last cut into as an iteration space. */
  orion_blockset bs;
  int have_bs;
  int64_t bs_nnz;
  uint64_t bs_gen;  /* changes whenever bs is rebuilt */
  uint64_t gen;     /* changes whenever the script writes the array */
  struct dcache *dc; /* what the executors hold of it (lua/dist.c) */
} darray;

/* An accumulator userdata. */
typedef struct dacc {
  int64_t id;
  orion_acc_op op;
  orion_accval init;
  orion_accval val;
} dacc;

mod_state *orion__state(lua_State *L);
darray *orion__check_array(lua_State *L, int idx);
/* Wraps a (taking over one reference) into a new DistArray pushed on L. */
darray *orion__push_array(lua_State *L, orion_array *a);
/* Raises err as a Lua error (never returns). */
void orion__raise(lua_State *L, const orion_error *err);

/* Option tables: orion__check_keys raises an error naming an unknown key;
 * the getters raise one naming a key of the wrong type. */
void orion__check_keys(lua_State *L, int idx, const char *fn,
                       const char *const *allowed);
const char *orion__opt_string(lua_State *L, int idx, const char *key,
                              const char *def);
lua_Integer orion__opt_int(lua_State *L, int idx, const char *key,
                           lua_Integer def);
double orion__opt_num(lua_State *L, int idx, const char *key, double def);
int orion__opt_bool(lua_State *L, int idx, const char *key, int def);
int orion__opt_int_list(lua_State *L, int idx, const char *key, int64_t *out,
                        int max);

/* The object with this id in the registry table `key` (ARRAYS_KEY, ...)
 * if it is still alive and has metatable mt, else NULL. */
void *orion__by_id(lua_State *L, const char *key, const char *mt, int64_t id);

/* ---- the distributed engine (lua/dist.c) ------------------------------ */

/* A buffer of the loop as executors bind it. */
typedef struct orion_dist_buf {
  int64_t id, target;
  int op;           /* orion_apply_op */
  int64_t flush;
  char name[64];
  const char *blob; /* capture of the apply function, or NULL */
  size_t blen;
} orion_dist_buf;

struct orion_plan;

typedef struct orion_dist_job {
  darray *it;
  const struct orion_plan *plan; /* NULL: serial (every array whole) */
  const int *order;              /* block ids in clock order */
  int nblocks;
  const char *blob;              /* the captured body */
  size_t blen;
  int64_t load_loop;             /* the loop id bodies are seeded with */
  uint64_t seed;
  const int64_t *arrays;         /* the other arrays it names */
  int narrays;
  const int64_t *accs;
  int naccs;
  const orion_dist_buf *bufs;
  int nbufs;
  const char *where;             /* "the parallel_for at x.lua:3" */
  /* The compiled body (analysis/cgen.h), when the loop runs compiled. */
  const char *csrc;              /* C source, or NULL: interpreted */
  size_t clen;
  const char *cflags;            /* the mode flags to compile it with */
  const struct orion_cslot *cslots;
  int ncslots;
  int tier_c;                    /* opts.tier = "c": no fallback */
} orion_dist_job;

typedef struct orion_dist_stats {
  uint64_t bytes;      /* through the driver's connections */
  uint64_t peer_bytes; /* between executors (sharded server arrays) */
  uint64_t shard_items; /* buffered writes applied by owning executors */
  double *exec_seconds; /* nexec entries, orion_malloc'd */
  int nexec;
} orion_dist_stats;

/* Runs a loop on the cluster (started on first use).  The driver's
 * in-process executor must have the loop's buffers bound (it applies the
 * executors' flushes to the arrays).  Returns 0, or ORION_EBODY with err
 * holding "executor E, element (...): MESSAGE\nTRACEBACK" when a body
 * failed.  Cluster failures end the process (exit 3). */
int orion__dist_run(lua_State *L, mod_state *s, const orion_dist_job *j,
                    orion_dist_stats *st, orion_error *err);

/* Loads a built-in text format split by byte range across the executors
 * (each parses the lines starting in its range; lua/dist.c) and merges the
 * parts as orion_load_file would return the whole.  Errors as
 * orion_load_file. */
struct orion_load_opts;
struct orion_load_result;
int orion__dist_load(mod_state *s, const char *path,
                     const struct orion_load_opts *o,
                     struct orion_load_result *res, orion_error *err);

/* Forgets what executors hold of d (called when d is collected). */
void orion__dist_forget(mod_state *s, darray *d);

/* Stops the cluster, if any. */
void orion__dist_stop(mod_state *s);

/* Adds parallel_for, explain and buffer to the module table on top of the
 * stack and creates the Buffer metatable. */
void orion__open_pfor(lua_State *L);

#endif
