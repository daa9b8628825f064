/* The sandbox of loop bodies (executor/exec.h): the globals a body sees in an
 * executor's state, and in the driver's own executor with --executors 0.
 *
 * A body is code the driver ships; an executor runs it with the
 * executor's rights.  The body's globals are therefore not the state's
 * globals but a separate table built from an allow-list: each name below
 * is one a body may use, checked for what it can reach.  Everything else
 * of Lua's standard library is refused: a function becomes one that
 * raises
 *   "os.execute is not available in loop bodies (orion-driver --allow-io
 *    allows it)"
 * so that the body fails with its file and line, as any body error does;
 * a library a body may not use at all (package, debug) becomes a table of
 * such functions whose other fields raise the same error when read or
 * written (package.searchers, package.cpath).  A refusal rather than nil
 * keeps every standard name a body may capture resolvable and the message
 * clear.
 *
 * The real libraries stay untouched in the state's own globals (the
 * registry's _LOADED reaches them), and nothing a body can call returns
 * the registry, the real globals or a real library: debug and package are
 * refused, `load` gives its chunks the sandboxed globals (read only),
 * and the strings' metatable, which every string reaches, indexes the
 * sandboxed `string` (without string.dump) and is protected by a decoy.
 * The copies' metatables are protected, so getmetatable returns false and
 * setmetatable fails on them; getmetatable refuses userdata, whose
 * metatables the state's later bodies share.  Two more
 * refusals keep the executor itself in hand: collectgarbage (a body could
 * stop the collector) and setmetatable with a __gc field (a finalizer
 * runs with hooks off, out of the loop deadline's reach).
 *
 * executor/capture.c decodes a body's global environment and its captured
 * standard names (a saved `package.loadlib`) against the registry's
 * ORION_CAPTURE_GLOBALS table; orion__exec_unsandbox (--allow-io) points
 * it at the real globals.
 */
#include "config.h"

#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "executor/capture.h"
#include "executor/exec_sandbox.h"
#include "executor/exec_int.h"

/* What a body may use: each library's names, then the base functions. */
static const char *const base_names[] = {
    "assert",   "error",        "getmetatable", "ipairs",  "next",
    "pairs",    "pcall",        "print",        "rawequal", "rawget",
    "rawlen",   "rawset",       "select",       "setmetatable",
    "tonumber", "tostring",     "type",         "xpcall",  "_VERSION",
    NULL};
static const char *const math_names[] = {
    "abs",  "acos",       "asin",      "atan",       "ceil",  "cos",
    "deg",  "exp",        "floor",     "fmod",       "huge",  "log",
    "max",  "maxinteger", "min",       "mininteger", "modf",  "pi",
    "rad",  "random",     "randomseed", "sin",       "sqrt",  "tan",
    "tointeger", "type",  "ult",       NULL};
/* Not string.dump: a body has no use for bytecode, and load refuses it. */
static const char *const string_names[] = {
    "byte",  "char",  "find",    "format", "gmatch", "gsub",
    "len",   "lower", "match",   "pack",   "packsize", "rep",
    "reverse", "sub", "unpack",  "upper",  NULL};
static const char *const table_names[] = {
    "concat", "insert", "move", "pack", "remove", "sort", "unpack", NULL};
static const char *const utf8_names[] = {
    "char", "charpattern", "codepoint", "codes", "len", "offset", NULL};
static const char *const coroutine_names[] = {
    "close",  "create", "isyieldable", "resume", "running",
    "status", "wrap",   "yield",       NULL};
/* Clocks and dates; not execute, exit, getenv (the job's token is in the
 * environment), remove, rename, setlocale or tmpname. */
static const char *const os_names[] = {"clock", "date", "difftime", "time",
                                       NULL};
/* Output to the process's own streams; no way to open a file or a pipe
 * (open, popen, lines, input, output, tmpfile, read, close, stdin). */
static const char *const io_names[] = {"write", "stdout", "stderr", "type",
                                       NULL};
static const char *const no_names[] = {NULL};

static const struct {
  const char *lib;
  const char *const *names;
} libs[] = {
    {"math", math_names},   {"string", string_names},
    {"table", table_names}, {"utf8", utf8_names},
    {"coroutine", coroutine_names}, {"os", os_names},
    {"io", io_names},       {"package", no_names},
    {"debug", no_names},
};

static int listed(const char *const *names, const char *name) {
  for (; *names != NULL; names++)
    if (strcmp(*names, name) == 0)
      return 1;
  return 0;
}

/* The allow-list of library `lib` (no names for an unknown table, so that
 * a library added to the state later is refused until listed here). */
static const char *const *lib_names(const char *lib) {
  size_t i;
  for (i = 0; i < sizeof libs / sizeof libs[0]; i++)
    if (strcmp(libs[i].lib, lib) == 0)
      return libs[i].names;
  return no_names;
}

static int refuse_name(lua_State *L, const char *name) {
  return luaL_error(L,
                    "%s is not available in loop bodies (orion-driver "
                    "--allow-io allows it)",
                    name);
}

/* A refused function: upvalue 1 is its full name. */
static int refuse(lua_State *L) {
  return refuse_name(L, lua_tostring(L, lua_upvalueindex(1)));
}

/* __index and __newindex of a sandboxed library (upvalue 1: its name,
 * upvalue 2: the real library), for keys the copy does not hold.  A field
 * the real library has and the allow-list does not (a string such as
 * package.cpath, a table such as package.searchers) is refused; another
 * key (an allowed name a body set to nil) reads as nil and is set in the
 * copy, as in a plain table. */
static int lib_field(lua_State *L, int set) {
  const char *lib = lua_tostring(L, lua_upvalueindex(1));
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL &&
      !(lua_type(L, 2) == LUA_TSTRING &&
        listed(lib_names(lib), lua_tostring(L, 2)))) {
    if (lua_type(L, 2) == LUA_TSTRING)
      lua_pushfstring(L, "%s.%s", lib, lua_tostring(L, 2));
    else
      lua_pushfstring(L, "a field of %s", lib);
    return refuse_name(L, lua_tostring(L, -1));
  }
  if (!set)
    return 1; /* the nil */
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 0;
}

static int lib_index(lua_State *L) { return lib_field(L, 0); }
static int lib_newindex(lua_State *L) { return lib_field(L, 1); }

/* Calls the original function (upvalue 1) with the wrapper's arguments,
 * for its one result. */
static int call_original(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* setmetatable without finalizers (upvalue 1: the real setmetatable).
 * Lua runs a __gc metamethod with hooks off, whenever the collector
 * gets to it: a finalizer could run for ever past the loop's deadline
 * (executor/exec_deadline.c), or after the loop in another one. */
static int setmetatable_no_gc(lua_State *L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL)
      return refuse_name(L, "setmetatable with a __gc field");
    lua_pop(L, 1);
  }
  return call_original(L);
}

/* getmetatable but for userdata (upvalue 1: the real getmetatable).  The
 * metatables of arrays, buffers, accumulators and file handles are the
 * state's, shared by every later body: a __gc put there would mark every
 * later proxy for a finalizer (see setmetatable_no_gc), a changed
 * __index would change how later bodies read their arrays. */
static int getmetatable_no_udata(lua_State *L) {
  if (lua_type(L, 1) == LUA_TUSERDATA)
    return refuse_name(L, "getmetatable of a userdata");
  return call_original(L);
}

/* __newindex of a loaded chunk's globals: refused, as a body's own
 * assignment to a global is (lua/capture.c). */
static int chunk_assign(lua_State *L) {
  return luaL_error(L,
                    "assignment to global '%s' in a chunk loaded inside a "
                    "parallel_for body (a loaded chunk sees the body's "
                    "standard library and cannot change it: declare it "
                    "local)",
                    luaL_tolstring(L, 2, NULL));
}

/* Pushes the globals of one chunk loaded without an environment: an
 * empty table that reads the sandboxed globals (at index `copy`) and
 * refuses assignments, so that a chunk can neither change what later
 * bodies of this state see (`load("math = nil")()`) nor keep a value
 * between blocks and loops. */
static void push_chunk_env(lua_State *L, int copy) {
  lua_newtable(L);
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, copy);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, chunk_assign);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
}

/* load for text chunks only: upvalue 1 is the real load, upvalue 2 the
 * sandboxed globals.  A chunk loaded without an environment reads the
 * body's standard library (not the script's globals, which the body
 * receives only by name) and cannot assign globals (push_chunk_env); an
 * environment the body passes is used as given (nil: no globals, as in
 * Lua).  A binary chunk could be crafted bytecode, which the virtual
 * machine does not check; the state's own globals would give the chunk
 * every library. */
static int load_text(lua_State *L) {
  int n = lua_gettop(L);
  lua_settop(L, n < 4 ? 4 : n);
  if (n < 4) {
    push_chunk_env(L, lua_upvalueindex(2));
    lua_replace(L, 4);
  }
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 2);
  if (lua_isnil(L, -2) && lua_type(L, -1) == LUA_TSTRING &&
      strstr(lua_tostring(L, -1), "attempt to load a binary chunk") != NULL)
    return luaL_error(L, "load: binary chunks are not available in loop "
                         "bodies (orion-driver --allow-io allows them)");
  if (lua_isnil(L, -2))
    return 2; /* nil and the message */
  lua_pop(L, 1);
  return 1;
}

/* Pushes the sandboxed copy of the real table at index `real`, whose full
 * name is `name` ("" for the globals), allowing `names`.  A listed name is
 * copied; a function that is not becomes a refused one; anything else
 * that is not is refused by the copy's metatable.  The globals' copy holds
 * the sandboxed libraries, `load` and itself as _G; its metatable only
 * protects it, so that one body cannot give the next ones other globals. */
static void push_copy(lua_State *L, int real, const char *name,
                      const char *const *names) {
  int top = name[0] == '\0', copy;
  lua_newtable(L);
  copy = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, real) != 0) {
    const char *key;
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 1);
      continue;
    }
    key = lua_tostring(L, -2);
    if (top && strcmp(key, "_G") == 0) {
      lua_pushvalue(L, copy);
    } else if (top && strcmp(key, "load") == 0) {
      lua_pushvalue(L, -1);
      lua_pushvalue(L, copy);
      lua_pushcclosure(L, load_text, 2); /* the real load, the copy */
    } else if (top && strcmp(key, "setmetatable") == 0) {
      lua_pushvalue(L, -1);
      lua_pushcclosure(L, setmetatable_no_gc, 1);
    } else if (top && strcmp(key, "getmetatable") == 0) {
      lua_pushvalue(L, -1);
      lua_pushcclosure(L, getmetatable_no_udata, 1);
    } else if (top && lua_type(L, -1) == LUA_TTABLE) {
      push_copy(L, lua_gettop(L), key, lib_names(key));
    } else if (listed(names, key)) {
      lua_pushvalue(L, -1);
    } else if (lua_type(L, -1) == LUA_TFUNCTION) {
      if (top)
        lua_pushstring(L, key);
      else
        lua_pushfstring(L, "%s.%s", name, key);
      lua_pushcclosure(L, refuse, 1);
    } else {
      lua_pop(L, 1);
      continue;
    }
    lua_remove(L, -2);
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, copy);
  }
  lua_newtable(L);
  if (!top) {
    lua_pushstring(L, name);
    lua_pushvalue(L, real);
    lua_pushcclosure(L, lib_index, 2);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushvalue(L, real);
    lua_pushcclosure(L, lib_newindex, 2);
    lua_setfield(L, -2, "__newindex");
  }
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, copy);
}

/* Makes strings index the `string` table at the top of the stack (popped).
 * Sandboxed (protect), getmetatable("") then gives a decoy whose __index is
 * that table too, so that a body can neither reach nor change the real
 * metatable, which every later body's strings share. */
static void set_string_index(lua_State *L, int protect) {
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    if (protect) {
      lua_createtable(L, 0, 1);
      lua_pushvalue(L, -4);
      lua_setfield(L, -2, "__index");
    } else {
      lua_pushnil(L);
    }
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

void orion__exec_sandbox(lua_State *L) {
  lua_pushglobaltable(L);
  push_copy(L, lua_gettop(L), "", base_names);
  lua_getfield(L, -1, "string");
  set_string_index(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, ORION_CAPTURE_GLOBALS);
  lua_pop(L, 1);
}

void orion__exec_unsandbox(lua_State *L) {
  lua_pushglobaltable(L);
  lua_getfield(L, -1, "string");
  set_string_index(L, 0);
  lua_setfield(L, LUA_REGISTRYINDEX, ORION_CAPTURE_GLOBALS);
}
