/* The sandbox of loop bodies (lua/exec.h): what a body may reach of Lua's
 * standard library in an executor's state.
 *
 * A body is code the driver ships; an executor runs it with the
 * executor's rights.  By default a body cannot run programs, touch files,
 * read the environment (where the job's secret lives), load modules or
 * binary chunks, or use the debug library: each such function is replaced
 * in the executor's state by one that raises
 *   "os.execute is not available in loop bodies (orion-driver --allow-io
 *    allows it)"
 * so that the body fails with its file and line, as any body error does.
 * `load` stays, for text chunks only.  Replacing the functions inside the
 * library tables (rather than removing the tables) keeps every name a body
 * may capture resolvable, so a captured `os.execute` also arrives as the
 * refusing function.  The originals are kept in the registry, and
 * orion__exec_unsandbox puts them back (--allow-io).
 */
#include "config.h"

#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/exec_int.h"

#define ORIGINALS "orion.sandbox.originals"

/* Functions of a library table, or globals (lib NULL), refused in bodies. */
static const struct {
  const char *lib;
  const char *const *names;
} refused[] = {
    {NULL, (const char *const[]){"require", "dofile", "loadfile", NULL}},
    {"os", (const char *const[]){"execute", "exit", "remove", "rename",
                                 "tmpname", "getenv", "setlocale", NULL}},
    {"io", (const char *const[]){"open", "popen", "lines", "input", "output",
                                 "tmpfile", "close", "read", NULL}},
    {"package", (const char *const[]){"loadlib", "searchpath", NULL}},
    {"debug", (const char *const[]){"debug", "gethook", "getinfo", "getlocal",
                                    "getmetatable", "getregistry",
                                    "getupvalue", "getuservalue", "sethook",
                                    "setlocal", "setmetatable", "setupvalue",
                                    "setuservalue", "traceback", "upvalueid",
                                    "upvaluejoin", "setcstacklimit", NULL}},
};

static int refuse(lua_State *L) {
  return luaL_error(L,
                    "%s is not available in loop bodies (orion-driver "
                    "--allow-io allows it)",
                    lua_tostring(L, lua_upvalueindex(1)));
}

/* load for text chunks only: a binary chunk could be crafted bytecode. */
static int load_text(lua_State *L) {
  int n = lua_gettop(L);
  if (n >= 3 && !lua_isnil(L, 3)) {
    const char *mode = luaL_checkstring(L, 3);
    if (strchr(mode, 'b') != NULL && strchr(mode, 't') == NULL)
      return luaL_error(L, "load: binary chunks are not available in loop "
                           "bodies (orion-driver --allow-io allows them)");
  }
  lua_settop(L, n < 4 ? 4 : n);
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* Replaces t[name] (t at the top of the stack) with a refusing function,
 * saving the original in the originals table at index orig under key. */
static void replace(lua_State *L, int orig, const char *name,
                    const char *full, lua_CFunction f, int with_original) {
  if (lua_getfield(L, -1, name) == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_setfield(L, orig, full);
  if (with_original) {
    lua_getfield(L, orig, full);
  } else {
    lua_pushstring(L, full);
  }
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
}

void orion__exec_sandbox(lua_State *L) {
  size_t i;
  int orig;
  lua_newtable(L);
  orig = lua_gettop(L);
  for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    const char *const *n;
    if (refused[i].lib == NULL)
      lua_pushglobaltable(L);
    else if (lua_getglobal(L, refused[i].lib) != LUA_TTABLE) {
      lua_pop(L, 1);
      continue;
    }
    for (n = refused[i].names; *n != NULL; n++) {
      char full[64];
      if (refused[i].lib != NULL)
        snprintf(full, sizeof full, "%s.%s", refused[i].lib, *n);
      else
        snprintf(full, sizeof full, "%s", *n);
      replace(L, orig, *n, full, refuse, 0);
    }
    lua_pop(L, 1);
  }
  lua_pushglobaltable(L);
  replace(L, orig, "load", "load", load_text, 1);
  lua_pop(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, ORIGINALS);
}

void orion__exec_unsandbox(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, ORIGINALS) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) { /* key "lib.name" or "name", the original */
    const char *full = lua_tostring(L, -2);
    const char *dot = strchr(full, '.');
    if (dot == NULL) {
      lua_pushvalue(L, -1);
      lua_setglobal(L, full);
    } else {
      char lib[32];
      snprintf(lib, sizeof lib, "%.*s", (int)(dot - full), full);
      if (lua_getglobal(L, lib) == LUA_TTABLE) {
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, dot + 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, ORIGINALS);
}
