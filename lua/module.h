/* Internals of the driver-side `orion` module shared by its files:
 * lua/orion.c (arrays, loaders, accumulators, metrics) and lua/pfor.c
 * (parallel_for, explain, buffers).  Not a public interface. */
#ifndef ORION_LUA_MODULE_H
#define ORION_LUA_MODULE_H

#include <lua.h>
#include <stdio.h>
#include <stdint.h>

#include "dsm/array.h"
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
} mod_state;

/* A DistArray userdata. */
typedef struct darray {
  orion_array *a;
  int64_t id;
  /* The blocks the array was last cut into as an iteration space. */
  orion_blockset bs;
  int have_bs;
  int64_t bs_nnz;
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

/* Adds parallel_for, explain and buffer to the module table on top of the
 * stack and creates the Buffer metatable. */
void orion__open_pfor(lua_State *L);

#endif
