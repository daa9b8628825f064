/* Ragged arrays on the driver (dsm/ragged.h): orion.ragged, which makes
 * one from a sparse 2-D DistArray or from Lua tables of (key, value)
 * pairs, and text_file's `rows = true` (lua/orion.c calls
 * orion__ragged_rows).  A body over one is called once per row with the
 * row key and a read-only row view (executor/exec_ragged.c).
 */
#include <lauxlib.h>
#include <string.h>

#include "dsm/ragged.h"
#include "scheduler/module.h"
#include "lua/orion_ragged.h"
#include "lua/permute.h"

void orion__ragged_rows(lua_State *L, orion_array *a, const char *what) {
  orion_error err;
  orion_error_clear(&err);
  if (orion_ragged_make(a, what, &err) != 0)
    orion__raise(L, &err);
}

/* Pair p (a table {key, value}) of row r at stack index idx into a. */
static void push_pair(lua_State *L, orion_array *a, int idx, lua_Integer r,
                      lua_Integer p) {
  int64_t keys[2], v = 0; /* v: room for any element */
  const char *bad;
  int isnum;
  lua_Integer k;
  if (lua_type(L, idx) != LUA_TTABLE)
    luaL_error(L, "orion.ragged: row %d, pair %d: expected a table {key, "
                  "value}, not %s",
               (int)r, (int)p, luaL_typename(L, idx));
  lua_geti(L, idx, 1);
  lua_geti(L, idx, 2);
  k = lua_tointegerx(L, -2, &isnum);
  if (!isnum || k < 1)
    luaL_error(L, "orion.ragged: row %d, pair %d: the key must be a "
                  "positive integer",
               (int)r, (int)p);
  if ((bad = orion__to_elem(L, -1, a->type, &v)) != NULL)
    luaL_error(L, "orion.ragged: row %d, pair %d: %s", (int)r, (int)p, bad);
  lua_pop(L, 2);
  keys[0] = r - 1;
  keys[1] = k - 1;
  if (orion_array_push(a, keys, &v) != 0)
    luaL_error(L, "orion.ragged: out of memory");
}

/* orion.ragged(rows, opts): rows[r] = {{key, value}, ...}. */
static orion_array *from_tables(lua_State *L, orion_type type) {
  orion_error err;
  orion_array *a;
  lua_Integer r, p, nrows = (lua_Integer)luaL_len(L, 1);
  int64_t dims[2] = {0, 0};
  orion_error_clear(&err);
  a = orion_array_new_sparse(2, type, &err);
  if (a == NULL)
    orion__raise(L, &err);
  /* The array is owned by a DistArray at once, so an error frees it. */
  orion__push_array(L, a);
  for (r = 1; r <= nrows; r++) {
    lua_geti(L, 1, r);
    if (lua_type(L, -1) != LUA_TTABLE)
      luaL_error(L, "orion.ragged: row %d: expected a table of {key, "
                    "value} pairs, not %s",
                 (int)r, luaL_typename(L, -1));
    for (p = 1; p <= (lua_Integer)luaL_len(L, -1); p++) {
      lua_geti(L, -1, p);
      push_pair(L, a, lua_gettop(L), r, p);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  /* Every row counts, the empty ones too. */
  dims[0] = nrows > a->dims[0] ? nrows : a->dims[0];
  dims[1] = a->dims[1];
  if (orion_array_set_dims(a, dims, &err) != 0)
    orion__raise(L, &err);
  return a;
}

static const char *const ragged_opts[] = {"type", "dims", NULL};

static int l_ragged(lua_State *L) {
  orion_array *a;
  int64_t dims[2];
  int n;
  orion_error err;
  orion_type type = ORION_F64;
  const char *t;
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  orion__check_keys(L, 2, "orion.ragged", ragged_opts);
  t = orion__opt_string(L, 2, "type", NULL);
  if (t != NULL && orion_type_parse(t, &type) != 0)
    return luaL_error(L, "orion.ragged: unknown type \"%s\" (use f32, f64, "
                         "i32 or i64)",
                      t);
  orion_error_clear(&err);
  if (lua_type(L, 1) == LUA_TTABLE) {
    a = from_tables(L, type);
  } else {
    darray *d = orion__check_array(L, 1);
    if (t != NULL)
      return luaL_error(L, "orion.ragged: type applies to rows given as "
                           "tables; a DistArray keeps its own");
    a = orion__unpermuted(L, d, 1); /* the original keys (lua/permute.h) */
    orion__push_array(L, a);
  }
  n = orion__opt_int_list(L, 2, "dims", dims, 2);
  if (n != 0 && n != 2)
    return luaL_error(L, "orion.ragged: dims lists the rows and the keys, "
                         "{rows, keys}");
  if (n == 2 && orion_array_set_dims(a, dims, &err) != 0)
    orion__raise(L, &err);
  orion__ragged_rows(L, a, "orion.ragged");
  return 1;
}

void orion__open_ragged(lua_State *L) {
  lua_pushcfunction(L, l_ragged);
  lua_setfield(L, -2, "ragged");
}
