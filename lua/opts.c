/* Option tables of the `orion` module's functions (scheduler/module.h): every
 * key is checked, so a typo is an error naming it, and every getter raises
 * an error naming a key of the wrong type.  Also the one check of a Lua
 * number stored as an element of a type (orion__to_elem). */
#include "scheduler/module.h"

#include <float.h>
#include <lauxlib.h>
#include <math.h>
#include <string.h>

const char *orion__to_elem(lua_State *L, int idx, orion_type vt, void *out) {
  lua_Number x = lua_tonumber(L, idx);
  int isint;
  lua_Integer ix = lua_tointegerx(L, idx, &isint);
  if (lua_type(L, idx) != LUA_TNUMBER)
    return "the value is not a number";
  if (orion_type_is_int(vt) && !isint)
    return "the value is not an integer";
  if (vt == ORION_I32 && (ix < INT32_MIN || ix > INT32_MAX))
    return "the value is out of range for i32";
  if (vt == ORION_F32 && isfinite(x) && fabs(x) > FLT_MAX)
    return "the value is out of range for f32";
  switch (vt) {
  case ORION_F32: *(float *)out = (float)x; break;
  case ORION_F64: *(double *)out = x; break;
  case ORION_I32: *(int32_t *)out = (int32_t)ix; break;
  default: *(int64_t *)out = (int64_t)ix; break;
  }
  return NULL;
}

void orion__check_keys(lua_State *L, int idx, const char *fn,
                       const char *const *allowed) {
  if (lua_isnoneornil(L, idx))
    return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int ok = 0, i;
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TNUMBER && lua_isinteger(L, -1) &&
        allowed[0] != NULL && strcmp(allowed[0], "#") == 0)
      ok = 1; /* positional entries allowed */
    if (lua_type(L, -1) == LUA_TSTRING)
      for (i = 0; allowed[i] != NULL; i++)
        if (strcmp(allowed[i], lua_tostring(L, -1)) == 0)
          ok = 1;
    if (!ok) {
      lua_pushvalue(L, -1);
      luaL_error(L, "%s: unknown option '%s'", fn, luaL_tolstring(L, -1, NULL));
    }
  }
}

const char *orion__opt_string(lua_State *L, int idx, const char *key,
                              const char *def) {
  const char *s = def;
  if (lua_isnoneornil(L, idx))
    return def;
  if (lua_getfield(L, idx, key) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "option '%s' must be a string", key);
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1); /* the string stays alive in the options table */
  return s;
}

lua_Integer orion__opt_int(lua_State *L, int idx, const char *key,
                           lua_Integer def) {
  lua_Integer v = def;
  int isint;
  if (lua_isnoneornil(L, idx))
    return def;
  if (lua_getfield(L, idx, key) != LUA_TNIL) {
    v = lua_tointegerx(L, -1, &isint);
    if (!isint)
      luaL_error(L, "option '%s' must be an integer", key);
  }
  lua_pop(L, 1);
  return v;
}

double orion__opt_num(lua_State *L, int idx, const char *key, double def) {
  double v = def;
  if (lua_isnoneornil(L, idx))
    return def;
  if (lua_getfield(L, idx, key) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "option '%s' must be a number", key);
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

int orion__opt_bool(lua_State *L, int idx, const char *key, int def) {
  int v = def;
  if (lua_isnoneornil(L, idx))
    return def;
  if (lua_getfield(L, idx, key) != LUA_TNIL) {
    if (!lua_isboolean(L, -1))
      luaL_error(L, "option '%s' must be a boolean", key);
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* Reads a list of positive integers opts[key] (or an explicit table at
 * idx); returns the count (0 when absent). */
int orion__opt_int_list(lua_State *L, int idx, const char *key, int64_t *out,
                        int max) {
  int n, i;
  if (lua_isnoneornil(L, idx))
    return 0;
  if (lua_getfield(L, idx, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1))
    luaL_error(L, "option '%s' must be a list of integers", key);
  n = (int)lua_rawlen(L, -1);
  if (n < 1 || n > max)
    luaL_error(L, "option '%s' must list 1 to %d integers", key, max);
  for (i = 0; i < n; i++) {
    int isint;
    lua_rawgeti(L, -1, i + 1);
    out[i] = lua_tointegerx(L, -1, &isint);
    if (!isint || out[i] < 1)
      luaL_error(L, "option '%s': entry %d must be a positive integer", key,
                 i + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return n;
}
