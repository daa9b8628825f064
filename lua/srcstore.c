/* The driver's source text store: every chunk loaded from a file keeps the
 * text it was loaded with (see lua/srcstore.h).
 *
 * The analysis needs the body's text, and Lua keeps none for a chunk
 * loaded from a file: it keeps the file's name.  Reading the file again
 * when the loop starts reads whatever is there then: a script edited
 * during a long job, or a body file a script wrote, loaded and wrote
 * again, gave a plan and compiled code for one text while the interpreter
 * ran another.  So the driver loads files itself, through the functions
 * here, and keeps each text in the registry under its chunk name.
 *
 * Everything here runs on the driver's Lua thread.
 */
#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/srcstore.h"

/* ======================================================================
 * Reading and loading.
 * ====================================================================== */

/* Pushes the whole file at path as a string (LUA_OK), or a message the
 * way luaL_loadfilex words it (LUA_ERRFILE). */
static int read_whole(lua_State *L, const char *path) {
  luaL_Buffer b;
  FILE *f = fopen(path, "rb");
  size_t n;
  int failed;
  if (f == NULL) {
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(errno));
    return LUA_ERRFILE;
  }
  luaL_buffinit(L, &b);
  do {
    char *p = luaL_prepbuffer(&b);
    n = fread(p, 1, LUAL_BUFFERSIZE, f);
    luaL_addsize(&b, n);
  } while (n == LUAL_BUFFERSIZE);
  failed = ferror(f);
  luaL_pushresult(&b);
  if (failed) {
    int e = errno;
    fclose(f);
    lua_pop(L, 1);
    lua_pushfstring(L, "cannot read %s: %s", path, strerror(e));
    return LUA_ERRFILE;
  }
  fclose(f);
  return LUA_OK;
}

/* Keeps the text at index t under the chunk name at index name, in the
 * name's list of the distinct texts loaded under it (oldest first): a
 * second load with a text already there changes nothing.  A file loaded
 * again after an edit keeps both texts; lua/analyse.c tells which one a
 * body comes from by its compiled code (lua/bodyid.c). */
static void keep(lua_State *L, int t, int name) {
  lua_Integer i, n;
  lua_getfield(L, LUA_REGISTRYINDEX, SRCSTORE_KEY);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, SRCSTORE_KEY);
  }
  lua_pushvalue(L, name);
  lua_rawget(L, -2);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, name);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    int same;
    lua_rawgeti(L, -1, i);
    same = lua_rawequal(L, -1, t);
    lua_pop(L, 1);
    if (same) {
      lua_pop(L, 2);
      return;
    }
  }
  lua_pushvalue(L, t);
  lua_rawseti(L, -2, n + 1);
  lua_pop(L, 2);
}

int orion_srcstore_loadfile(lua_State *L, const char *path, const char *mode) {
  const char *text;
  size_t len, skip = 0;
  int rc, top = lua_gettop(L), binary;
  rc = read_whole(L, path);
  if (rc != LUA_OK)
    return rc;
  text = lua_tolstring(L, -1, &len);
  /* As luaL_loadfilex: a byte-order mark, then a first line starting with
   * '#' (its line break stays, so line numbers do not move). */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
    skip = 3;
  if (skip < len && text[skip] == '#')
    while (skip < len && text[skip] != '\n')
      skip++;
  binary = skip < len && text[skip] == LUA_SIGNATURE[0];
  lua_pushfstring(L, "@%s", path);
  rc = luaL_loadbufferx(L, text + skip, len - skip, lua_tostring(L, -1),
                        mode);
  /* A precompiled chunk carries no text to keep. */
  if (rc == LUA_OK && !binary)
    keep(L, top + 1, top + 2);
  lua_replace(L, top + 1); /* the function or the message */
  lua_settop(L, top + 1);
  return rc;
}

int orion_srcstore_text(lua_State *L, const char *source, int k,
                        const char **text, size_t *len) {
  int n = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, SRCSTORE_KEY);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, source);
    if (lua_istable(L, -1)) {
      n = (int)lua_rawlen(L, -1);
      if (k >= 1 && k <= n) {
        lua_rawgeti(L, -1, k);
        /* The store still holds the string after the pops. */
        *text = lua_tolstring(L, -1, len);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return n;
}

/* ======================================================================
 * The replaced functions.
 * ====================================================================== */

/* Calls the replaced function (upvalue 1) with this call's arguments. */
static int call_old(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* loadfile([filename [, mode [, env]]]) as the base library has it. */
static int l_loadfile(lua_State *L) {
  const char *fname = luaL_optstring(L, 1, NULL);
  const char *mode = luaL_optstring(L, 2, NULL);
  int env = !lua_isnone(L, 3) ? 3 : 0;
  if (fname == NULL)
    return call_old(L); /* standard input: nothing to keep a name for */
  if (orion_srcstore_loadfile(L, fname, mode) == LUA_OK) {
    if (env != 0) {
      lua_pushvalue(L, env);
      if (lua_setupvalue(L, -2, 1) == NULL)
        lua_pop(L, 1);
    }
    return 1;
  }
  luaL_pushfail(L);
  lua_insert(L, -2);
  return 2;
}

static int dofile_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  (void)k;
  return lua_gettop(L) - 1;
}

/* dofile([filename]) as the base library has it. */
static int l_dofile(lua_State *L) {
  const char *fname = luaL_optstring(L, 1, NULL);
  lua_settop(L, 1);
  if (fname == NULL)
    return call_old(L);
  if (orion_srcstore_loadfile(L, fname, NULL) != LUA_OK)
    return lua_error(L);
  lua_callk(L, 0, LUA_MULTRET, 0, dofile_done);
  return dofile_done(L, LUA_OK, 0);
}

/* require's searcher for Lua files (package.searchers[2]), as the package
 * library has it; upvalue 1 is the package table. */
static int l_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *filename;
  lua_getfield(L, lua_upvalueindex(1), "path");
  if (!lua_isstring(L, -1))
    return luaL_error(L, "'package.path' must be a string");
  lua_getfield(L, lua_upvalueindex(1), "searchpath");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -3);
  lua_call(L, 2, 2);
  if (lua_isnil(L, -2))
    return 1; /* the files it tried, for require's message */
  filename = lua_tostring(L, -2);
  if (orion_srcstore_loadfile(L, filename, NULL) == LUA_OK) {
    lua_pushstring(L, filename); /* the loader's second argument */
    return 2;
  }
  return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s",
                    name, filename, lua_tostring(L, -1));
}

void orion_srcstore_install(lua_State *L) {
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, SRCSTORE_KEY);
  lua_getglobal(L, "loadfile");
  lua_pushcclosure(L, l_loadfile, 1);
  lua_setglobal(L, "loadfile");
  lua_getglobal(L, "dofile");
  lua_pushcclosure(L, l_dofile, 1);
  lua_setglobal(L, "dofile");
  lua_getglobal(L, "package");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "searchers");
    if (lua_istable(L, -1)) {
      lua_pushvalue(L, -2);
      lua_pushcclosure(L, l_searcher, 1);
      lua_rawseti(L, -2, 2);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}
