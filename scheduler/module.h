/* Internals of the driver-side `orion` module shared by its files
 * (lua/orion.c, lua/pfor.c, scheduler/dist.c, executor/nn.c): the module's state, the
 * DistArray and Accumulator userdata, and the helpers every binding uses
 * (scheduler/state.c: state, arrays, objects by id, errors; lua/opts.c: option
 * tables).  Not a public interface; it names no other lua/ file. */
#ifndef ORION_LUA_MODULE_H
#define ORION_LUA_MODULE_H

#include <lua.h>
#include <stdio.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/cluster.h"
#include "executor/accum.h"
#include "dsm/blocks.h"
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
  struct orion_exec *ex; /* the in-process executor (executor/exec.h), created
                            on first use */
  FILE *metrics;
  char *metrics_path;
  uint64_t seed;
  int64_t next_array_id;
  int64_t next_acc_id;
  int64_t next_loop_id;
  int64_t next_buffer_id;
  int explain; /* --explain: parallel_for prints its plan (once per call
                  site) before it runs (lua/pfor_explain.c) */
  int explain_only;    /* --explain-only N: stop the script when the Nth
                          call site has been explained, before it runs */
  int nexplained;      /* call sites explained so far */
  int explain_stopped; /* the script was stopped by --explain-only */
  int verify; /* --verify: blocks' keys are recorded and checked against
                 the schedule (lua/pfor_verify.c) */
  int fast;    /* --fast-math: opts.fast defaults to true */
  /* The cluster: started on first use when nexec > 0 (0: loops run on
   * the in-process executor). */
  int nexec;
  int partitions; /* parts per key dimension by default (--partitions) */
  int auto_partitions; /* --partitions auto: every loop's partitions are
                          "auto" unless it says (lua/pfor_auto.h) */
  int allow_io;   /* --allow-io: the in-process executor's bodies too */
  orion_cluster_opts copts;
  double stall_seconds; /* --stall-seconds (scheduler/dist_watch.c); 0: never */
  double loop_timeout;  /* --loop-timeout: opts.timeout's default; 0: none */
  double bandwidth_mbps; /* --bandwidth-mbps (managed buffers); 0: measured */
  orion_cluster *cl;
  orion_cluster *cl_starting; /* begun (orion__dist_prestart), not finished */
  int64_t *forget; /* ids of arrays collected since the last loop */
  int nforget;
  char *predict;   /* --predict SPEC (lua/predict.h), or NULL */
  int loop_metrics; /* --loop-metrics: a --metrics line per parallel_for
                       call (lua/loop_metrics.h) */
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
  struct orion_replica *rep; /* what the executors hold of it
                                (dsm/replica.h, scheduler/dist.c) */
  /* Permuted keys (lua/permute.h): per dimension, the permutation its
   * stored keys went through (NULL: none) and the size the script sees;
   * looped: a parallel_for has used the array. */
  struct orion_perm *perm[ORION_MAX_DIMS];
  int64_t odim[ORION_MAX_DIMS];
  int looped;
} darray;

/* An accumulator userdata. */
typedef struct dacc {
  int64_t id;
  orion_acc_op op;
  orion_accval init;
  orion_accval val;
} dacc;

/* The most helper arrays one buffer's apply function may take (`with`). */
#define ORION_BUFFER_MAX_WITH 8

/* A Buffer userdata (orion.buffer): uservalue 1 is the target DistArray,
 * 2 the apply function (or nil), 3 the list of its helper DistArrays
 * (`with`, lua/buffer_with.c; or nil). */
typedef struct dbuffer {
  int64_t id;
  int64_t target_id;
  int op;           /* orion_apply_op (executor/exec.h) */
  int64_t flush;
  char name[64];    /* the script's name for it ("G"), or "buffer on W" */
  char target_name[64];
  int nwith;        /* helper arrays, in `with` order */
  int64_t with[ORION_BUFFER_MAX_WITH];
  char with_names[ORION_BUFFER_MAX_WITH][64];
} dbuffer;

mod_state *orion__state(lua_State *L);
/* The DistArray at idx, with its rows back from the executors where a
 * loop left them (scheduler/dist_resid.c): for everything that reads or writes
 * its elements on the driver. */
darray *orion__check_array(lua_State *L, int idx);
/* The same without bringing rows back: for parallel_for and others that
 * only name the array. */
darray *orion__check_array_only(lua_State *L, int idx);
/* Wraps a (taking over one reference) into a new DistArray pushed onto L
 * (also used by orion.nn's readers). */
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
/* Stores the number at idx as one element of type vt into out (8 bytes of
 * room); NULL, or what is wrong ("the value is not an integer", "... out
 * of range for i32", "... not a number"). */
const char *orion__to_elem(lua_State *L, int idx, orion_type vt, void *out);

/* The capture codec's classifier (executor/capture.h) for the module's
 * userdata: DistArrays, Accumulators and Buffers by id. */
int orion__classify(lua_State *L, int idx, int64_t *id, void *ud);

/* The object with this id in the registry table `key` (ARRAYS_KEY, ...)
 * if it is still alive and has metatable mt, else NULL. */
void *orion__by_id(lua_State *L, const char *key, const char *mt, int64_t id);

#endif
