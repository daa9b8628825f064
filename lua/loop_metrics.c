/* orion-driver --loop-metrics: one --metrics line per parallel_for call
 * (lua/loop_metrics.h). */
#include "lua/loop_metrics.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/predict.h"
#include "util/buf.h"

#define CALLS_KEY "orion.loop_metrics.calls" /* FILE:LINE -> calls so far */

/* Copies res[from] (a number; 0 where it has none) to the table on top as
 * key. */
static void copy_number(lua_State *L, int res, const char *from,
                        const char *key) {
  lua_getfield(L, res, from);
  if (lua_type(L, -1) != LUA_TNUMBER) {
    lua_pop(L, 1);
    lua_pushinteger(L, 0);
  }
  lua_setfield(L, -2, key);
}

/* res[from] (an array of numbers, one per executor) as "a b c", set on
 * the table on top as key. */
static void copy_list(lua_State *L, int res, const char *from,
                      const char *key) {
  orion_buf b;
  lua_Integer i, n;
  int oom;
  orion_buf_init(&b);
  lua_getfield(L, res, from);
  n = lua_istable(L, -1) ? (lua_Integer)lua_rawlen(L, -1) : 0;
  for (i = 1; i <= n; i++) {
    char num[40];
    int len;
    lua_rawgeti(L, -1, i);
    len = snprintf(num, sizeof num, "%s%.6f", i > 1 ? " " : "",
                   lua_tonumber(L, -1));
    lua_pop(L, 1);
    orion_buf_append(&b, num, (size_t)len);
  }
  lua_pop(L, 1);
  oom = b.oom;
  if (!oom)
    lua_pushlstring(L, b.len > 0 ? (const char *)b.data : "", b.len);
  orion_buf_free(&b);
  if (oom)
    luaL_error(L, "--loop-metrics: out of memory");
  lua_setfield(L, -2, key);
}

void orion__loop_metrics(lua_State *L, int res, double cpu0) {
  int top = lua_gettop(L), calls;
  double cpu = orion__cpu_seconds();
  const char *where;
  res = lua_absindex(L, res);
  where = orion__push_site(L);
  calls = orion__site_count(L, CALLS_KEY, where);
  if (orion__record_open(L, 12)) {
    lua_pushstring(L, where);
    lua_setfield(L, -2, "loop");
    lua_pushinteger(L, calls);
    lua_setfield(L, -2, "call");
    copy_number(L, res, "seconds", "loop_seconds");
    copy_number(L, res, "executors", "loop_executors");
    copy_number(L, res, "driver_bytes", "loop_driver_bytes");
    copy_number(L, res, "peer_bytes", "loop_peer_bytes");
    copy_list(L, res, "compute_seconds", "exec_compute_s");
    copy_list(L, res, "wait_seconds", "exec_wait_s");
    copy_list(L, res, "idle_seconds", "exec_idle_s");
    lua_pushnumber(L, cpu - cpu0 > 0 ? cpu - cpu0 : 0);
    lua_setfield(L, -2, "driver_cpu_s");
    lua_pushnumber(L, cpu);
    lua_setfield(L, -2, "driver_cpu_total_s");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}
