/* The Lua host's access to what is bound to it (exec_int.h): arrays,
 * buffers and accumulators by id, an element's value pushed to Lua and
 * stored from it, an element's key as text for messages, and the message
 * handler that adds a traceback to a body's or an apply function's error.
 * The rest of the host (exec.c, exec_apply.c, the body runners) calls
 * these; they call no other file of the host.
 */
#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>

#include "dsm/types.h"
#include "executor/exec_elem.h"
#include "executor/exec_int.h"

void orion__exec_push_elem(lua_State *L, const orion_array *a, int64_t i) {
  switch (a->type) {
  case ORION_F32:
    lua_pushnumber(L, ((const float *)a->values)[i]);
    break;
  case ORION_F64:
    lua_pushnumber(L, ((const double *)a->values)[i]);
    break;
  case ORION_I32:
    lua_pushinteger(L, ((const int32_t *)a->values)[i]);
    break;
  case ORION_I64:
    lua_pushinteger(L, ((const int64_t *)a->values)[i]);
    break;
  }
}

/* Stores the Lua value at vidx into element i; raises a Lua error naming
 * the array (`kind` "array" or "buffer" and its name) when the value does
 * not fit its type. */
void orion__exec_store_elem(lua_State *L, const orion_array *a,
                            const char *kind, const char *name, int64_t i,
                            int vidx) {
  if (lua_type(L, vidx) != LUA_TNUMBER)
    luaL_error(L, "cannot store a %s in %s %s '%s'", luaL_typename(L, vidx),
               orion_type_name(a->type), kind, name);
  switch (a->type) {
  case ORION_F32:
    ((float *)a->values)[i] = (float)lua_tonumber(L, vidx);
    return;
  case ORION_F64:
    ((double *)a->values)[i] = lua_tonumber(L, vidx);
    return;
  case ORION_I32:
  case ORION_I64: {
    int isint;
    lua_Integer v = lua_tointegerx(L, vidx, &isint);
    if (!isint)
      luaL_error(L, "cannot store %s in %s %s '%s': not an integer",
                 lua_tostring(L, vidx), orion_type_name(a->type), kind, name);
    if (a->type == ORION_I32) {
      if (v < INT32_MIN || v > INT32_MAX)
        luaL_error(L, "cannot store %I in i32 %s '%s': out of range",
                   (LUAI_UACINT)v, kind, name);
      ((int32_t *)a->values)[i] = (int32_t)v;
    } else {
      ((int64_t *)a->values)[i] = v;
    }
    return;
  }
  }
}

acc_slot *orion__exec_find_acc(struct orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].id == id)
      return &ex->accs[i];
  return NULL;
}

binding *orion__exec_find_array(struct orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->narrays; i++)
    if (ex->arrays[i].id == id)
      return &ex->arrays[i];
  return NULL;
}

int orion__exec_find_buffer_index(struct orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->nbufs; i++)
    if (ex->bufs[i]->id == id)
      return i;
  return -1;
}

exec_buffer *orion__exec_find_buffer(struct orion_exec *ex, int64_t id) {
  int i = orion__exec_find_buffer_index(ex, id);
  return i >= 0 ? ex->bufs[i] : NULL;
}

void orion__exec_key_string(const orion_array *a, int64_t e, char *buf,
                            size_t n) {
  size_t len = 0;
  int d;
  len += (size_t)snprintf(buf, n, "(");
  for (d = 0; d < (a->ragged ? 1 : a->ndims) && len < n; d++) {
    int64_t k = a->sparse ? a->keys[e * a->ndims + d]
                          : (e / a->strides[d]) % a->dims[d];
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "",
                            (long long)k + 1);
  }
  if (len < n)
    snprintf(buf + len, n - len, ")");
}

int orion__exec_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL)
    msg = lua_pushfstring(L, "(error object is a %s value)",
                          luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}
