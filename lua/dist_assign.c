/* Dynamic block assignment on the cluster: which loops place their blocks
 * at run time (scheduler/loop.h says how a block's executor is chosen),
 * what each executor holds of a block's data, and the blocks each one
 * ran.
 *
 * A loop assigns dynamically when opts.assign = "dynamic", or when
 * ORION_ASSIGN=dynamic and opts.assign is not given and its blocks do not
 * run on devices (tier "gpu"/"auto" with a device: a block's results could
 * then depend on whether its executor has one).  Static placement stays
 * the default: dynamic placement depends on timing, so which executor
 * holds which blocks and rows after a loop (and names a failing block)
 * changes from run to run, and under load it can move the data that the
 * static placement keeps in place between loops.  Only the executor changes: the
 * blocks and the dependences between them are the schedule's, so the
 * results are the same bits either way (t/cluster/dynamic.lua).
 *
 * Each executor's mean block time, and what moving a byte cost, carry over
 * from one loop to the next (a loop starts weighing executors by what the
 * last one saw).
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/dist_int.h"
#include "util/alloc.h"

/* Per executor: the mean seconds per block of the last loop (0: none). */
static double *last_mean;
static int last_n;
static double last_move_cost; /* 0: none yet */

int orion__dist_assign_opt(lua_State *L, const char *v) {
  const char *env = getenv("ORION_ASSIGN");
  if (v == NULL && env != NULL && env[0] != '\0' &&
      strcmp(env, "static") != 0 && strcmp(env, "dynamic") != 0)
    return luaL_error(L, "ORION_ASSIGN must be \"static\" or \"dynamic\", "
                         "not \"%s\"",
                      env);
  if (v == NULL)
    return ORION_ASSIGN_DEFAULT;
  if (strcmp(v, "static") == 0)
    return ORION_ASSIGN_STATIC;
  if (strcmp(v, "dynamic") == 0)
    return ORION_ASSIGN_DYNAMIC;
  return luaL_error(L, "parallel_for: assign must be \"static\" or "
                       "\"dynamic\", not \"%s\"",
                    v);
}

static int dynamic_env(void) {
  const char *v = getenv("ORION_ASSIGN");
  return v != NULL && strcmp(v, "dynamic") == 0;
}

int orion__assign_dynamic(const loop_run *r, int gpu_execs) {
  if (r->j->assign == ORION_ASSIGN_DYNAMIC)
    return 1;
  if (r->j->assign == ORION_ASSIGN_STATIC)
    return 0;
  return dynamic_env() && gpu_execs == 0;
}

/* What executor e holds of block b's data, in bytes: its sparse elements
 * and the resident rows of its parts (lua/dist_resid.c). */
static int64_t affinity(void *ud, int e, int b) {
  loop_run *r = ud;
  const orion_replica *c = r->itc;
  const orion_array *a = r->j->it->a;
  const orion_blockset *bs = &r->j->it->bs;
  int64_t n = orion__resid_affinity(r, e, b), s0, s1;
  if (a->sparse && c->bhave != NULL && b < c->nb &&
      c->bhave[e * c->nb + b] == c->bver[b]) {
    s0 = bs->first[b];
    s1 = bs->first[b + 1];
    if (s1 > s0) /* its elements: keys and values */
      n += (bs->segs[s1 - 1].hi - bs->segs[s0].lo) *
           ((int64_t)orion_type_size(a->type) + 8 * a->ndims);
  }
  return n;
}

void orion__assign_start(loop_run *r, int gpu_execs) {
  int e;
  r->m.dynamic = orion__assign_dynamic(r, gpu_execs);
  if (!r->m.dynamic)
    return;
  r->m.io.affinity = affinity;
  if (last_n == r->n)
    for (e = 0; e < r->n; e++)
      r->m.mean[e] = last_mean[e];
  if (last_move_cost > 0)
    r->m.move_cost = last_move_cost;
}

void orion__assign_end(loop_run *r, orion_dist_stats *st) {
  int e;
  st->dynamic = r->m.dynamic;
  st->exec_blocks = orion_calloc((size_t)r->n + 1, sizeof *st->exec_blocks);
  for (e = 0; st->exec_blocks != NULL && e < r->n; e++)
    st->exec_blocks[e] = r->m.ran[e];
  if (!r->m.dynamic)
    return;
  if (last_n != r->n) {
    orion_free(last_mean);
    last_mean = orion_calloc((size_t)r->n, sizeof *last_mean);
    last_n = last_mean != NULL ? r->n : 0;
  }
  for (e = 0; e < last_n; e++)
    if (r->m.ran[e] > 0)
      last_mean[e] = r->m.mean[e];
  last_move_cost = r->m.move_cost;
}

void orion__dist_push_blocks(lua_State *L, orion_dist_stats *st,
                             int nblocks) {
  int e, n = st->exec_blocks != NULL ? st->nexec : 1;
  lua_createtable(L, n, 0);
  for (e = 0; e < n; e++) {
    lua_pushinteger(L, st->exec_blocks != NULL ? st->exec_blocks[e]
                                               : nblocks);
    lua_rawseti(L, -2, e + 1);
  }
  lua_setfield(L, -2, "executor_blocks");
  lua_pushstring(L, st->exec_blocks == NULL ? "driver"
                    : st->dynamic          ? "dynamic"
                                           : "static");
  lua_setfield(L, -2, "assign");
  orion_free(st->exec_blocks);
  st->exec_blocks = NULL;
}
