/* The `orion` module's shared state (scheduler/module.h): the record kept per
 * driver Lua state, DistArray userdata (checking, wrapping, lookup by id),
 * the classification of the module's userdata for the capture codec, and
 * raising an orion_error as a Lua error.  Everything here talks to the
 * driver's Lua state; the one call into the module's other files brings an
 * array's rows back from the executors before the script uses it
 * (scheduler/dist_resid.c). */
#include "scheduler/module.h"

#include <lauxlib.h>
#include <string.h>

#include "dsm/replica.h"
#include "executor/capture.h"
#include "scheduler/dist.h"

mod_state *orion__state(lua_State *L) {
  mod_state *s;
  lua_getfield(L, LUA_REGISTRYINDEX, STATE_KEY);
  s = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (s == NULL)
    luaL_error(L, "the orion module is not loaded");
  return s;
}

darray *orion__check_array_only(lua_State *L, int idx) {
  darray *d = luaL_checkudata(L, idx, ARRAY_MT);
  if (d->a == NULL)
    luaL_error(L, "DistArray has been freed");
  return d;
}

darray *orion__check_array(lua_State *L, int idx) {
  darray *d = orion__check_array_only(L, idx);
  if (d->rep != NULL && d->rep->held.n > 0) /* rows left on executors */
    orion__dist_reclaim(orion__state(L), d);
  return d;
}

darray *orion__push_array(lua_State *L, orion_array *a) {
  mod_state *s = orion__state(L);
  darray *d = lua_newuserdatauv(L, sizeof *d, 0);
  memset(d, 0, sizeof *d);
  luaL_setmetatable(L, ARRAY_MT);
  d->a = a;
  d->id = ++s->next_array_id;
  lua_getfield(L, LUA_REGISTRYINDEX, ARRAYS_KEY);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, d->id);
  lua_pop(L, 1);
  return d;
}

void orion__raise(lua_State *L, const orion_error *err) {
  luaL_error(L, "%s", err->msg[0] ? err->msg : orion_strerror(err->code));
}

void *orion__by_id(lua_State *L, const char *key, const char *mt,
                   int64_t id) {
  void *p;
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  lua_rawgeti(L, -1, id);
  p = luaL_testudata(L, -1, mt);
  lua_pop(L, 2);
  return p;
}

int orion__classify(lua_State *L, int idx, int64_t *id, void *ud) {
  darray *d;
  dacc *a;
  dbuffer *b;
  (void)ud;
  if ((d = luaL_testudata(L, idx, ARRAY_MT)) != NULL && d->a != NULL) {
    *id = d->id;
    return ORION_CAPTURE_ARRAY;
  }
  if ((a = luaL_testudata(L, idx, ACC_MT)) != NULL) {
    *id = a->id;
    return ORION_CAPTURE_ACC;
  }
  if ((b = luaL_testudata(L, idx, BUFFER_MT)) != NULL) {
    *id = b->id;
    return ORION_CAPTURE_BUFFER;
  }
  return 0;
}
