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
 * Each copy is shown to bodies as a read-only view (make_readonly), so
 * that no body changes the globals or a library for the blocks and loops
 * after it, whichever way it reached the table (issue 33).
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

/* Refuses a field the real library (upvalue 2) has and the allow-list
 * does not (a string such as package.cpath, a table such as
 * package.searchers), key at index 2; returns 0 for any other key. */
static int lib_refused(lua_State *L, const char *lib) {
  if (lua_type(L, lua_upvalueindex(2)) != LUA_TTABLE)
    return 0;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL ||
      (lua_type(L, 2) == LUA_TSTRING &&
       listed(lib_names(lib), lua_tostring(L, 2)))) {
    lua_pop(L, 1);
    return 0;
  }
  if (lua_type(L, 2) == LUA_TSTRING)
    lua_pushfstring(L, "%s.%s", lib, lua_tostring(L, 2));
  else
    lua_pushfstring(L, "a field of %s", lib);
  return refuse_name(L, lua_tostring(L, -1));
}

/* __index of a sandboxed library (upvalue 1: its name, upvalue 2: the
 * real library), for keys the copy does not hold: a refused field
 * (lib_refused) raises, another key reads as nil. */
static int lib_index(lua_State *L) {
  lib_refused(L, lua_tostring(L, lua_upvalueindex(1)));
  lua_pushnil(L);
  return 1;
}

/* __newindex of a read-only view (upvalue 1: the table's full name, ""
 * for the globals; upvalue 2: the real library, or nil).  A refused field
 * is refused as such (lib_refused). */
static int readonly_assign(lua_State *L) {
  const char *name = lua_tostring(L, lua_upvalueindex(1));
  lib_refused(L, name);
  if (lua_type(L, 2) == LUA_TSTRING)
    lua_pushfstring(L, "%s%s%s", name[0] != '\0' ? name : "_G", ".",
                    lua_tostring(L, 2));
  else
    lua_pushfstring(L, "a field of %s", name[0] != '\0' ? name : "_G");
  return luaL_error(L,
                    "assignment to %s in a loop body: the body's globals and "
                    "standard library are read only (every later block and "
                    "loop on this executor shares them); keep the value in a "
                    "local or a table created inside the body",
                    lua_tostring(L, -1));
}

/* The key that marks the metatable of a read-only view (its address). */
static const char view_mark = 'v';

/* When the value at idx is a read-only view, replaces it by the table it
 * shows. */
static void view_target(lua_State *L, int idx) {
  int top = lua_gettop(L);
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TTABLE && lua_getmetatable(L, idx) &&
      lua_rawgetp(L, -1, &view_mark) != LUA_TNIL &&
      lua_getfield(L, -2, "__index") == LUA_TTABLE)
    lua_replace(L, idx);
  lua_settop(L, top);
}

/* next and rawget of the sandbox: raw, through a read-only view to the
 * table it shows (`next(_G)`, `rawget(math, "pi")` as in a plain Lua). */
static int view_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  view_target(L, 1);
  if (lua_next(L, 1))
    return 2;
  lua_pushnil(L);
  return 1;
}

static int view_rawget(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  lua_settop(L, 2);
  view_target(L, 1);
  lua_rawget(L, 1);
  return 1;
}

/* __pairs of a read-only view (upvalue 1: the table it shows). */
static int readonly_pairs(lua_State *L) {
  lua_pushcfunction(L, view_next);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushnil(L);
  return 3;
}

/* Replaces the table at the top of the stack by a read-only view of it:
 * an empty table that reads it (__index) and refuses every assignment
 * (__newindex), so that no body can change what a later block or loop
 * sees, however it reached the table (`_G.math = nil`, `local m = math;
 * m.abs = nil`).  pairs, and the sandbox's next and rawget (view_next,
 * view_rawget), see through it to the table.  `name` is the table's full
 * name ("" for the globals), `real` the index of the real library (0:
 * none). */
static void make_readonly(lua_State *L, const char *name, int real) {
  if (real != 0)
    real = lua_absindex(L, real);
  lua_newtable(L);
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, name);
  if (real != 0)
    lua_pushvalue(L, real);
  else
    lua_pushnil(L);
  lua_pushcclosure(L, readonly_assign, 2);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, -3);
  lua_pushcclosure(L, readonly_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &view_mark);
  lua_setmetatable(L, -2);
  lua_remove(L, -2);
}

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
 * assignment to a global is (executor/capture.c). */
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
 * name is `name` ("" for the globals), allowing `names`, as a read-only
 * view (make_readonly).  A listed name is copied; a function that is not
 * becomes a refused one; anything else that is not is refused by the
 * copy's metatable.  The globals' copy holds the sandboxed libraries,
 * `load` and its own view as _G. */
static void push_copy(lua_State *L, int real, const char *name,
                      const char *const *names) {
  int top = name[0] == '\0', copy, view = 0;
  lua_newtable(L);
  copy = lua_gettop(L);
  if (top) {
    lua_pushvalue(L, copy);
    make_readonly(L, name, 0);
    view = lua_gettop(L);
  }
  lua_pushnil(L);
  while (lua_next(L, real) != 0) {
    const char *key;
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 1);
      continue;
    }
    key = lua_tostring(L, -2);
    if (top && strcmp(key, "_G") == 0) {
      lua_pushvalue(L, view);
    } else if (top && strcmp(key, "load") == 0) {
      lua_pushvalue(L, -1);
      lua_pushvalue(L, view);
      lua_pushcclosure(L, load_text, 2); /* the real load, the view */
    } else if (top && strcmp(key, "setmetatable") == 0) {
      lua_pushvalue(L, -1);
      lua_pushcclosure(L, setmetatable_no_gc, 1);
    } else if (top && strcmp(key, "next") == 0) {
      lua_pushcfunction(L, view_next);
    } else if (top && strcmp(key, "rawget") == 0) {
      lua_pushcfunction(L, view_rawget);
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
  }
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, copy);
  if (top)
    lua_remove(L, copy); /* the view stays */
  else
    make_readonly(L, name, real);
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
      make_readonly(L, "getmetatable('')", 0);
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
