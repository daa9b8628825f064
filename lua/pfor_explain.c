/* orion-driver --explain and --explain-only on the driver: printing the
 * plan of each parallel_for call site once, the first time the script
 * reaches it, and stopping the script before a loop runs.
 *
 * --explain prints and then lets the loop run for real, so the script's
 * results are real.  --explain-only N stops the script when the Nth call
 * site has been explained, before that loop runs: parallel_for raises an
 * error whose value is a sentinel (orion__explain_stopped tells the driver,
 * which prints what happened and exits 0).  No path returns a made-up
 * result to the script.  A script that catches the error and goes on gets
 * it again from its next parallel_for.
 */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/pfor.h"

#include "scheduler/module.h"

#define EXPLAINED_KEY "orion.explained" /* call sites already explained */
#define STOP_KEY "orion.explain_stop"   /* the sentinel error value */

/* The line the driver prints when --explain-only stopped the script. */
static void stop_line(const mod_state *s, char *out, size_t n) {
  snprintf(out, n,
           "orion: --explain-only: stopped after explaining %d loop%s; no "
           "results computed",
           s->nexplained, s->nexplained == 1 ? "" : "s");
}

static int stop_tostring(lua_State *L) {
  char line[160];
  stop_line(orion__state(L), line, sizeof line);
  lua_pushstring(L, line);
  return 1;
}

/* Raises the sentinel: the script stops before the loop runs. */
static int raise_stop(lua_State *L, mod_state *s) {
  s->explain_stopped = 1;
  lua_getfield(L, LUA_REGISTRYINDEX, STOP_KEY);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, stop_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, STOP_KEY);
  }
  return lua_error(L);
}

int orion__first_at(lua_State *L, const char *regkey, const char *where) {
  int seen;
  lua_getfield(L, LUA_REGISTRYINDEX, regkey);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, regkey);
  }
  lua_getfield(L, -1, where);
  seen = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!seen) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, where);
  }
  lua_pop(L, 1);
  return !seen;
}

void orion__explain_site(lua_State *L, const char *where, const char *text) {
  mod_state *s = orion__state(L);
  if (s->explain_stopped)
    raise_stop(L, s);
  if (!s->explain || !orion__first_at(L, EXPLAINED_KEY, where))
    return;
  fputs(text, stdout);
  fflush(stdout);
  s->nexplained++;
}

void orion__explain_check_stop(lua_State *L) {
  mod_state *s = orion__state(L);
  if (s->explain_stopped ||
      (s->explain_only > 0 && s->nexplained >= s->explain_only))
    raise_stop(L, s);
}

int orion__explain_stopped(lua_State *L, int idx, char *line, size_t n) {
  mod_state *s = orion__state(L);
  int hit;
  if (!s->explain_stopped)
    return 0;
  if (idx != 0) {
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, STOP_KEY);
    hit = lua_rawequal(L, idx, -1);
    lua_pop(L, 1);
    if (!hit)
      return 0;
  }
  if (line != NULL)
    stop_line(s, line, n);
  return 1;
}
