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

/* Field k of the table on top, as a number (0 when missing). */
static double num_field(lua_State *L, const char *k) {
  double v;
  lua_getfield(L, -1, k);
  v = lua_tonumber(L, -1);
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
  p = (lua_Integer)num_field(L, "parts");
  if (p > 0) {
    parts[0] = parts[1] = p;
    if (num_field(L, "dynamic") != 0 && *assign == ORION_ASSIGN_DEFAULT)
      *assign = ORION_ASSIGN_DYNAMIC;
  }
  lua_settop(L, top);
}

static void record(lua_State *L, const char *where, int pass,
                   const orion_sim_setting *ran,
                   const orion_sim_setting *chosen, double best_seconds,
                   double switch_s) {
  int top = lua_gettop(L);
  if (orion__record_open(L, 10)) {
    lua_pushstring(L, where);
    lua_setfield(L, -2, "loop");
    lua_pushinteger(L, pass);
    lua_setfield(L, -2, "pass");
    lua_pushinteger(L, chosen->parts);
    lua_setfield(L, -2, "auto_partitions");
    lua_pushstring(L, chosen->dynamic ? "dynamic" : "static");
    lua_setfield(L, -2, "auto_assign");
    lua_pushinteger(L, ran->parts);
    lua_setfield(L, -2, "ran_partitions");
    lua_pushnumber(L, ran->seconds);
    lua_setfield(L, -2, "predicted_ran_seconds");
    lua_pushnumber(L, chosen->seconds);
    lua_setfield(L, -2, "predicted_auto_seconds");
    lua_pushnumber(L, best_seconds);
    lua_setfield(L, -2, "predicted_best_seconds");
    lua_pushnumber(L, switch_s);
    lua_setfield(L, -2, "switch_seconds");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}

/* The switch for the job: every "auto" call site's (each cuts and sends
 * its data again), as each last measured it. */
static double switch_all(lua_State *L) {
  double sum = 0;
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, AUTO_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    if (lua_istable(L, -1))
      sum += num_field(L, "switch");
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return sum;
}

void orion__auto_parts_after(lua_State *L, const orion_predict_obs *o,
                             int64_t max_parts, int assign_given) {
  int top = lua_gettop(L), pays, sidx;
  lua_Integer pass;
  orion_sim_setting ran, best;
  orion_error err;
  const char *where;
  double bps = orion__state(L)->bandwidth_mbps * 1e6 / 8, sw, swb;
  if (o->nexec < 1)
    return;
  where = site(L);
  sidx = lua_gettop(L); /* the site's table */
  pass = (int)num_field(L, "pass") + 1;
  lua_pushinteger(L, pass);
  lua_setfield(L, -2, "pass");
  if (pass == 1) { /* what the switch will cost: the first pass's extra */
    lua_pushnumber(L, o->seconds);
    lua_setfield(L, -2, "first_seconds");
    lua_pushnumber(L, (double)o->driver_bytes);
    lua_setfield(L, -2, "first_bytes");
  }
  /* The switch: the first pass's seconds over this one's (cutting the
   * data, sending it and the rows the first time), at least its driver
   * bytes over this one's at the links' rate. */
  sw = num_field(L, "first_seconds") - o->seconds;
  swb = bps > 0 ? (num_field(L, "first_bytes") - (double)o->driver_bytes) / bps
                : 0;
  if (swb > sw)
    sw = swb;
  if (sw < 0)
    sw = 0;
  lua_pushnumber(L, sw);
  lua_setfield(L, -2, "switch");
  sw = switch_all(L);
  job(L);
  /* Weighed at passes 2, 4, 8, ... until a switch pays, each time over
   * as many passes again as ran so far (the loop's passes to come are
   * not known: a loop that ran k passes is taken to run k more). */
  if (pass < 2 || (pass & (pass - 1)) != 0 || num_field(L, "parts") > 0) {
    lua_settop(L, top);
    return;
  }
  /* The weighing itself costs the driver (the candidates' simulations:
   * 0.4-0.8 s a time on a 0.1-CPU driver, MF on 7 hosts): after the
   * first, only where the last one's gain could pay by now. */
  lua_pushvalue(L, sidx);
  if (pass > 2 && !orion_sim_switch_pays(
                      &(orion_sim_setting){0, 0, num_field(L, "ran_s")},
                      &(orion_sim_setting){1, 0, num_field(L, "best_s")}, sw,
                      (double)pass, ORION_AUTO_MARGIN)) {
    lua_settop(L, top);
    return;
  }
  lua_pop(L, 1);
  orion_error_clear(&err);
  if (orion__predict_choose(o, bps, max_parts, assign_given, &ran, &best,
                            &err) != 0)
    luaL_error(L, "parallel_for at %s: partitions \"auto\": %s", where,
               err.msg);
  pays = orion_sim_switch_pays(&ran, &best, sw, (double)pass,
                               ORION_AUTO_MARGIN);
  lua_pushvalue(L, sidx); /* this weighing's predictions */
  lua_pushnumber(L, ran.seconds);
  lua_setfield(L, -2, "ran_s");
  lua_pushnumber(L, best.seconds);
  lua_setfield(L, -2, "best_s");
  lua_pop(L, 1);
  if (pays) {
    lua_pushinteger(L, best.parts);
    lua_setfield(L, -2, "parts");
    lua_pushboolean(L, best.dynamic);
    lua_setfield(L, -2, "dynamic");
  }
  if (!orion_log_quiet())
    fprintf(stderr,
            "orion: parallel_for at %s: partitions \"auto\" on %d "
            "executors after pass %d: %s %d a dimension, %s placement "
            "(predicted %.4g s a pass against %.4g s with %d, %s; the "
            "switch %.4g s once, weighed over %d passes)\n",
            where, o->nexec, (int)pass, pays ? "switching to" : "keeping",
            pays ? best.parts : ran.parts,
            (pays ? best.dynamic : ran.dynamic) ? "dynamic" : "static",
            best.seconds, ran.seconds, ran.parts,
            ran.dynamic ? "dynamic" : "static", sw, (int)pass);
  if (pays || pass == 2)
    record(L, where, (int)pass, &ran, pays ? &best : &ran, best.seconds, sw);
  lua_settop(L, top);
}
