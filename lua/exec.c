#include "lua/exec.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "lua/capture.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/rng.h"

#define ARRAY_MT "orion.exec.array"
#define SLICE_MT "orion.exec.slice"
#define ACC_MT "orion.exec.acc"

typedef struct binding {
  int64_t id;
  orion_array *a;
} binding;

typedef struct acc_slot {
  int64_t id;
  orion_acc_op op;
  orion_accval val;
} acc_slot;

struct orion_exec {
  lua_State *L;
  int id;
  binding *arrays;
  int narrays;
  acc_slot *accs;
  int naccs;
  int body_ref; /* registry ref of the loaded body, LUA_NOREF when none */
  int64_t loop_id;
};

/* An array as a body sees it (one per captured name), and slices of it.
 * A slice is a view: base element offset plus the depth of dims consumed. */
typedef struct exec_array {
  orion_array *a;
  char name[64];
} exec_array;

typedef struct exec_slice {
  exec_array *arr; /* kept alive by the uservalue */
  int64_t off;
  int depth;
} exec_slice;

/* ======================================================================
 * Element access from Lua.
 * ====================================================================== */

static void push_elem(lua_State *L, const orion_array *a, int64_t i) {
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
 * the array when the value does not fit its type. */
static void store_elem(lua_State *L, const orion_array *a, const char *name,
                       int64_t i, int vidx) {
  if (lua_type(L, vidx) != LUA_TNUMBER)
    luaL_error(L, "cannot store a %s in %s array '%s'", luaL_typename(L, vidx),
               orion_type_name(a->type), name);
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
      luaL_error(L, "cannot store %s in %s array '%s': not an integer",
                 lua_tostring(L, vidx), orion_type_name(a->type), name);
    if (a->type == ORION_I32) {
      if (v < INT32_MIN || v > INT32_MAX)
        luaL_error(L, "cannot store %I in i32 array '%s': out of range",
                   (LUAI_UACINT)v, name);
      ((int32_t *)a->values)[i] = (int32_t)v;
    } else {
      ((int64_t *)a->values)[i] = v;
    }
    return;
  }
  }
}

/* Checks subscript (Lua arg 2) against dimension d; returns it 0-based. */
static int64_t subscript(lua_State *L, const exec_array *ea, int d) {
  int isint;
  lua_Integer k = lua_tointegerx(L, 2, &isint);
  if (!isint) {
    if (lua_type(L, 2) == LUA_TNUMBER)
      luaL_error(L, "array '%s': subscript %s is not an integer", ea->name,
                 lua_tostring(L, 2));
    luaL_error(L, "array '%s': subscript must be an integer, got a %s",
               ea->name, luaL_typename(L, 2));
  }
  if (k < 1 || k > ea->a->dims[d])
    luaL_error(L, "array '%s': index %I out of range 1..%I in dimension %d",
               ea->name, (LUAI_UACINT)k, (LUAI_UACINT)ea->a->dims[d], d + 1);
  return (int64_t)k - 1;
}

/* Pushes A[...][k] given the base offset and depth already consumed. */
static int index_at(lua_State *L, exec_array *ea, int aidx, int64_t off,
                    int depth) {
  const orion_array *a = ea->a;
  int64_t k = subscript(L, ea, depth);
  int64_t pos = off + k * a->strides[depth];
  if (depth + 1 == a->ndims) {
    push_elem(L, a, pos);
  } else {
    exec_slice *s = lua_newuserdatauv(L, sizeof *s, 1);
    s->arr = ea;
    s->off = pos;
    s->depth = depth + 1;
    /* The slice metatable is an upvalue of every array and slice
     * metamethod: no registry lookup per slice. */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_setmetatable(L, -2);
    lua_pushvalue(L, aidx);
    lua_setiuservalue(L, -2, 1);
  }
  return 1;
}

static void require_dense(lua_State *L, const exec_array *ea) {
  if (ea->a->sparse)
    luaL_error(L,
               "array '%s' is sparse: inside a parallel_for body only dense "
               "arrays can be indexed (the iterated array's elements arrive "
               "as the body's arguments)",
               ea->name);
}

static int array_index(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  require_dense(L, ea);
  return index_at(L, ea, 1, 0, 0);
}

static int array_newindex(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  int64_t k;
  require_dense(L, ea);
  if (ea->a->ndims != 1)
    luaL_error(L,
               "array '%s' has %d dimensions: assign to an element "
               "(%s[i][j] = x), not to a slice",
               ea->name, ea->a->ndims, ea->name);
  k = subscript(L, ea, 0);
  store_elem(L, ea->a, ea->name, k, 3);
  return 0;
}

static int array_len(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  lua_pushinteger(L, ea->a->dims[0]);
  return 1;
}

static int slice_index(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  lua_getiuservalue(L, 1, 1);
  return index_at(L, s->arr, lua_gettop(L), s->off, s->depth);
}

static int slice_newindex(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  const orion_array *a = s->arr->a;
  int64_t k;
  if (s->depth + 1 != a->ndims)
    luaL_error(L, "array '%s': assign to an element, not to a slice",
               s->arr->name);
  k = subscript(L, s->arr, s->depth);
  store_elem(L, a, s->arr->name, s->off + k * a->strides[s->depth], 3);
  return 0;
}

static int slice_len(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  lua_pushinteger(L, s->arr->a->dims[s->depth]);
  return 1;
}

/* ======================================================================
 * Accumulators inside bodies.
 * ====================================================================== */

static acc_slot *find_acc(orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].id == id)
      return &ex->accs[i];
  return NULL;
}

typedef struct exec_acc {
  orion_exec *ex;
  int64_t id;
} exec_acc;

static acc_slot *check_acc(lua_State *L) {
  exec_acc *ea = luaL_checkudata(L, 1, ACC_MT);
  acc_slot *s = find_acc(ea->ex, ea->id);
  if (s == NULL)
    luaL_error(L, "accumulator %I is not bound", (LUAI_UACINT)ea->id);
  return s;
}

static int acc_add(lua_State *L) {
  acc_slot *s = check_acc(L);
  if (lua_type(L, 2) != LUA_TNUMBER)
    return luaL_error(L, "accumulator add: expected a number, got a %s",
                      luaL_typename(L, 2));
  if (lua_isinteger(L, 2))
    orion_accval_add_int(&s->val, s->op, lua_tointeger(L, 2));
  else
    orion_accval_add_num(&s->val, s->op, lua_tonumber(L, 2));
  return 0;
}

static int acc_get(lua_State *L) {
  acc_slot *s = check_acc(L);
  orion_accval_push(L, &s->val);
  return 1;
}

/* ======================================================================
 * Set-up.
 * ====================================================================== */

static void make_metatables(lua_State *L) {
  static const luaL_Reg array_m[] = {{"__index", array_index},
                                     {"__newindex", array_newindex},
                                     {"__len", array_len},
                                     {NULL, NULL}};
  static const luaL_Reg slice_m[] = {{"__index", slice_index},
                                     {"__newindex", slice_newindex},
                                     {"__len", slice_len},
                                     {NULL, NULL}};
  static const luaL_Reg acc_methods[] = {
      {"add", acc_add}, {"get", acc_get}, {NULL, NULL}};
  luaL_newmetatable(L, SLICE_MT);
  lua_pushvalue(L, -1);
  luaL_setfuncs(L, slice_m, 1);
  luaL_newmetatable(L, ARRAY_MT);
  lua_pushvalue(L, -2);
  luaL_setfuncs(L, array_m, 1);
  lua_pop(L, 2);
  luaL_newmetatable(L, ACC_MT);
  luaL_newlib(L, acc_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* The `orion` table bodies see on an executor: only what runs there. */
static int body_orion_clock(lua_State *L);

static void make_body_module(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, body_orion_clock);
  lua_setfield(L, -2, "clock");
  lua_setfield(L, LUA_REGISTRYINDEX, "orion.exec.module");
}

orion_exec *orion_exec_new(int executor_id) {
  orion_exec *ex = orion_calloc(1, sizeof *ex);
  if (ex == NULL)
    return NULL;
  ex->L = luaL_newstate();
  if (ex->L == NULL) {
    orion_free(ex);
    return NULL;
  }
  luaL_openlibs(ex->L);
  make_metatables(ex->L);
  make_body_module(ex->L);
  ex->id = executor_id;
  ex->body_ref = LUA_NOREF;
  return ex;
}

void orion_exec_free(orion_exec *ex) {
  int i;
  if (ex == NULL)
    return;
  lua_close(ex->L);
  for (i = 0; i < ex->narrays; i++)
    orion_array_release(ex->arrays[i].a);
  orion_free(ex->arrays);
  orion_free(ex->accs);
  orion_free(ex);
}

static binding *find_array(orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->narrays; i++)
    if (ex->arrays[i].id == id)
      return &ex->arrays[i];
  return NULL;
}

int orion_exec_bind_array(orion_exec *ex, int64_t id, orion_array *a) {
  binding *b = find_array(ex, id), *nb;
  orion_array_retain(a);
  if (b != NULL) {
    orion_array_release(b->a);
    b->a = a;
    return 0;
  }
  nb = orion_realloc(ex->arrays, sizeof *nb * (size_t)(ex->narrays + 1));
  if (nb == NULL) {
    orion_array_release(a);
    return ORION_ENOMEM;
  }
  ex->arrays = nb;
  nb[ex->narrays].id = id;
  nb[ex->narrays].a = a;
  ex->narrays++;
  return 0;
}

void orion_exec_unbind_array(orion_exec *ex, int64_t id) {
  binding *b = find_array(ex, id);
  if (b == NULL)
    return;
  orion_array_release(b->a);
  *b = ex->arrays[--ex->narrays];
}

int orion_exec_bind_acc(orion_exec *ex, int64_t id, orion_acc_op op) {
  acc_slot *s = find_acc(ex, id), *ns;
  if (s == NULL) {
    ns = orion_realloc(ex->accs, sizeof *ns * (size_t)(ex->naccs + 1));
    if (ns == NULL)
      return ORION_ENOMEM;
    ex->accs = ns;
    s = &ns[ex->naccs++];
    s->id = id;
  }
  s->op = op;
  memset(&s->val, 0, sizeof s->val);
  return 0;
}

int orion_exec_take_acc(orion_exec *ex, int64_t id, orion_accval *out) {
  acc_slot *s = find_acc(ex, id);
  if (s == NULL)
    return ORION_EINVAL;
  *out = s->val;
  memset(&s->val, 0, sizeof s->val);
  return 0;
}

static int body_orion_clock(lua_State *L) {
  lua_pushnumber(L, orion_now());
  return 1;
}

/* Pushes the executor-side object for a captured reference. */
static int resolve(lua_State *L, int kind, int64_t id, const char *name,
                   void *ud) {
  orion_exec *ex = ud;
  if (kind == 'M') {
    lua_getfield(L, LUA_REGISTRYINDEX, "orion.exec.module");
    return 0;
  }
  if (kind == ORION_CAPTURE_ARRAY) {
    binding *b = find_array(ex, id);
    exec_array *ea;
    if (b == NULL)
      return -1;
    ea = lua_newuserdatauv(L, sizeof *ea, 0);
    ea->a = b->a;
    snprintf(ea->name, sizeof ea->name, "%s", name);
    luaL_setmetatable(L, ARRAY_MT);
    return 0;
  }
  if (kind == ORION_CAPTURE_ACC) {
    exec_acc *acc;
    if (find_acc(ex, id) == NULL)
      return -1;
    acc = lua_newuserdatauv(L, sizeof *acc, 0);
    acc->ex = ex;
    acc->id = id;
    luaL_setmetatable(L, ACC_MT);
    return 0;
  }
  return -1;
}

int orion_exec_load(orion_exec *ex, int64_t loop_id, const char *blob,
                    size_t len, orion_error *err) {
  char msg[512];
  int rc;
  luaL_unref(ex->L, LUA_REGISTRYINDEX, ex->body_ref);
  ex->body_ref = LUA_NOREF;
  rc = orion_capture_decode(ex->L, blob, len, resolve, ex, msg, sizeof msg);
  if (rc != 0)
    return orion_error_set(err, rc, "executor %d: %s", ex->id, msg);
  ex->body_ref = luaL_ref(ex->L, LUA_REGISTRYINDEX);
  ex->loop_id = loop_id;
  return 0;
}

/* ======================================================================
 * Running a block.
 * ====================================================================== */

typedef struct run_ctx {
  orion_exec *ex;
  orion_array *a;
  int64_t lo, hi, cur;
} run_ctx;

static void push_keys(lua_State *L, const orion_array *a, int64_t e) {
  int d;
  if (a->sparse) {
    const int64_t *k = a->keys + e * a->ndims;
    for (d = 0; d < a->ndims; d++)
      lua_pushinteger(L, k[d] + 1);
  } else {
    for (d = 0; d < a->ndims; d++)
      lua_pushinteger(L, (e / a->strides[d]) % a->dims[d] + 1);
  }
}

/* Runs inside lua_pcall: the element loop in C, one lua_call per element. */
static int run_block(lua_State *L) {
  run_ctx *c = lua_touserdata(L, 1);
  orion_array *a = c->a;
  int nargs = a->ndims + 1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ex->body_ref);
  for (c->cur = c->lo; c->cur < c->hi; c->cur++) {
    lua_pushvalue(L, 2);
    push_keys(L, a, c->cur);
    push_elem(L, a, c->cur);
    lua_call(L, nargs, 1);
    if (!lua_isnil(L, -1))
      store_elem(L, a, "the iterated array (returned value)", c->cur, -1);
    lua_pop(L, 1);
  }
  return 0;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL)
    msg = lua_pushfstring(L, "(error object is a %s value)",
                          luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void key_string(const orion_array *a, int64_t e, char *buf, size_t n) {
  size_t len = 0;
  int d;
  len += (size_t)snprintf(buf, n, "(");
  for (d = 0; d < a->ndims && len < n; d++) {
    int64_t k = a->sparse ? a->keys[e * a->ndims + d]
                          : (e / a->strides[d]) % a->dims[d];
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "",
                            (long long)k + 1);
  }
  if (len < n)
    snprintf(buf + len, n - len, ")");
}

int orion_exec_run(orion_exec *ex, int64_t iter_id, int64_t lo, int64_t hi,
                   uint64_t seed, int64_t block, orion_error *err) {
  lua_State *L = ex->L;
  binding *b = find_array(ex, iter_id);
  run_ctx c;
  int rc;
  if (ex->body_ref == LUA_NOREF)
    return orion_error_set(err, ORION_EINVAL, "executor %d: no loop loaded",
                           ex->id);
  if (b == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: array %lld is not bound", ex->id,
                           (long long)iter_id);
  if (lo < 0 || hi > b->a->nnz || lo > hi)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: block range out of bounds", ex->id);
  /* math.random in the body: seeded from (script seed, loop, block). */
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, (lua_Integer)orion_seed_mix(seed, (uint64_t)ex->loop_id,
                                                 (uint64_t)block));
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  c.ex = ex;
  c.a = b->a;
  c.lo = lo;
  c.hi = hi;
  c.cur = lo;
  lua_pushcfunction(L, traceback);
  lua_pushcfunction(L, run_block);
  lua_pushlightuserdata(L, &c);
  rc = lua_pcall(L, 1, 0, -3);
  if (rc != LUA_OK) {
    char key[256];
    key_string(b->a, c.cur, key, sizeof key);
    orion_error_set(err, ORION_EBODY, "executor %d, element %s: %s", ex->id,
                    key, lua_tostring(L, -1));
    lua_pop(L, 2);
    return ORION_EBODY;
  }
  lua_pop(L, 1);
  return 0;
}
