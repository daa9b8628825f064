/* partitions = "auto": the setting of a call site chosen by the simulator
 * (lua/pfor_auto.h). */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>

#include "lua/pfor_auto.h"
#include "scheduler/dist.h"
#include "scheduler/module.h"
#include "util/log.h"

/* call site -> {pass = its passes so far}; the job's choice in
 * [JOB] = {parts =, dynamic =}. */
#define AUTO_KEY "orion.auto_parts"
#define JOB "*job*" /* no FILE:LINE */

/* Pushes the call site's table (made when missing) and its FILE:LINE. */
static const char *site(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, AUTO_KEY);
  orion__push_site(L);
  if (lua_getfield(L, -2, lua_tostring(L, -1)) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -4, lua_tostring(L, -3));
  }
  /* the registry's table, FILE:LINE, the site's table */
  return lua_tostring(L, -2);
}

static lua_Integer int_field(lua_State *L, const char *k) {
  lua_Integer v;
  lua_getfield(L, -1, k);
  v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Pushes the job's choice table (made when missing) over the registry's. */
static void job(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, AUTO_KEY);
  luaL_getsubtable(L, -1, JOB);
}

void orion__auto_parts_before(lua_State *L, int64_t parts[2], int *assign) {
  int top = lua_gettop(L);
  lua_Integer p;
  job(L);
  p = int_field(L, "parts");
  if (p > 0) {
    parts[0] = parts[1] = p;
    if (int_field(L, "dynamic") && *assign == ORION_ASSIGN_DEFAULT)
      *assign = ORION_ASSIGN_DYNAMIC;
  }
  lua_settop(L, top);
}

static void record(lua_State *L, const char *where, int ran_parts,
                   const orion_sim_setting *ran,
                   const orion_sim_setting *best) {
  int top = lua_gettop(L);
  if (orion__record_open(L, 6)) {
    lua_pushstring(L, where);
    lua_setfield(L, -2, "loop");
    lua_pushinteger(L, best->parts);
    lua_setfield(L, -2, "auto_partitions");
    lua_pushstring(L, best->dynamic ? "dynamic" : "static");
    lua_setfield(L, -2, "auto_assign");
    lua_pushinteger(L, ran_parts);
    lua_setfield(L, -2, "ran_partitions");
    lua_pushnumber(L, ran->seconds);
    lua_setfield(L, -2, "predicted_ran_seconds");
    lua_pushnumber(L, best->seconds);
    lua_setfield(L, -2, "predicted_auto_seconds");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}

void orion__auto_parts_after(lua_State *L, const orion_predict_obs *o,
                             int64_t max_parts, int assign_given) {
  int top = lua_gettop(L);
  lua_Integer pass;
  orion_sim_setting ran, best;
  orion_error err;
  const char *where;
  double bps = orion__state(L)->bandwidth_mbps * 1e6 / 8;
  if (o->nexec < 1)
    return;
  where = site(L);
  pass = int_field(L, "pass") + 1;
  lua_pushinteger(L, pass);
  lua_setfield(L, -2, "pass");
  job(L);
  if (pass != 2 || int_field(L, "parts") > 0) {
    lua_settop(L, top);
    return;
  }
  orion_error_clear(&err);
  if (orion__predict_choose(o, bps, max_parts, assign_given, &ran, &best,
                            &err) != 0)
    luaL_error(L, "parallel_for at %s: partitions \"auto\": %s", where,
               err.msg);
  lua_pushinteger(L, best.parts);
  lua_setfield(L, -2, "parts");
  lua_pushboolean(L, best.dynamic);
  lua_setfield(L, -2, "dynamic");
  if (!orion_log_quiet())
    fprintf(stderr,
            "orion: parallel_for at %s: partitions \"auto\" on %d "
            "executors: %d a dimension, %s placement for the job's \"auto\" "
            "loops from their next pass (predicted here %.4g s a pass; %d, "
            "%s: %.4g s)\n",
            where, o->nexec, best.parts, best.dynamic ? "dynamic" : "static",
            best.seconds, ran.parts, ran.dynamic ? "dynamic" : "static",
            ran.seconds);
  record(L, where, ran.parts, &ran, &best);
  lua_settop(L, top);
}
