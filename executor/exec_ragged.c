/* The row view a body over a ragged array receives (dsm/ragged.h): a
 * read-only window on one row's (key, value) pairs inside the block's
 * elements.  `#row` is the number of pairs, `row:key(j)` the j-th pair's
 * key (1-based, as every key a body sees) and `row:value(j)` its value,
 * for j in 1..#row.  The view holds a reference to the array, so a view a
 * body keeps stays valid (it still shows that block's elements).
 */
#include <lauxlib.h>
#include <stdio.h>

#include "dsm/ragged.h"
#include "executor/exec_ragged.h"
#include "executor/exec_int.h"

#define ROW_MT "orion.exec.row"

typedef struct exec_row {
  orion_array *a;
  int64_t lo, n; /* elements [lo, lo + n) */
} exec_row;

static exec_row *check_row(lua_State *L) {
  return luaL_checkudata(L, 1, ROW_MT);
}

/* The element of pair j (argument 2), with the error a body gets for a j
 * outside 1..#row. */
static int64_t pair_at(lua_State *L, const exec_row *r, const char *what) {
  lua_Integer j;
  if (!lua_isinteger(L, 2))
    luaL_error(L, "row:%s(j): j must be an integer, not %s", what,
               luaL_typename(L, 2));
  j = lua_tointeger(L, 2);
  if (j < 1 || j > r->n)
    luaL_error(L, "row:%s(%d): row %d has %d pairs", what,
               (int)j, (int)(r->a->keys[2 * r->lo] + 1), (int)r->n);
  return r->lo + j - 1;
}

static int row_key(lua_State *L) {
  exec_row *r = check_row(L);
  lua_pushinteger(L, r->a->keys[2 * pair_at(L, r, "key") + 1] + 1);
  return 1;
}

static int row_value(lua_State *L) {
  exec_row *r = check_row(L);
  const orion_array *a = r->a;
  int64_t e = pair_at(L, r, "value");
  switch (a->type) {
  case ORION_F32: lua_pushnumber(L, ((const float *)a->values)[e]); break;
  case ORION_F64: lua_pushnumber(L, ((const double *)a->values)[e]); break;
  case ORION_I32: lua_pushinteger(L, ((const int32_t *)a->values)[e]); break;
  default: lua_pushinteger(L, ((const int64_t *)a->values)[e]); break;
  }
  return 1;
}

static int row_len(lua_State *L) {
  lua_pushinteger(L, check_row(L)->n);
  return 1;
}

static int row_newindex(lua_State *L) {
  return luaL_error(L, "a ragged array's row is read-only (write through "
                       "another array or an orion.buffer)");
}

static int row_tostring(lua_State *L) {
  exec_row *r = check_row(L);
  lua_pushfstring(L, "row %d (%d pairs)", (int)(r->a->keys[2 * r->lo] + 1),
                  (int)r->n);
  return 1;
}

static int row_gc(lua_State *L) {
  exec_row *r = check_row(L);
  orion_array_release(r->a);
  r->a = NULL;
  return 0;
}

void orion__exec_row_open(lua_State *L) {
  static const luaL_Reg meta[] = {{"__len", row_len},
                                  {"__newindex", row_newindex},
                                  {"__tostring", row_tostring},
                                  {"__gc", row_gc},
                                  {NULL, NULL}};
  static const luaL_Reg methods[] = {
      {"key", row_key}, {"value", row_value}, {NULL, NULL}};
  luaL_newmetatable(L, ROW_MT);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

void orion__exec_push_row(lua_State *L, orion_array *a, int64_t lo,
                          int64_t hi) {
  exec_row *r = lua_newuserdatauv(L, sizeof *r, 0);
  r->a = NULL;
  luaL_setmetatable(L, ROW_MT);
  orion_array_retain(a);
  r->a = a;
  r->lo = lo;
  r->n = hi - lo;
}
