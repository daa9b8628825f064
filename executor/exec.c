/* The executor's Lua host (executor/exec.h): the Lua state a shipped loop body
 * runs in on an executor (and in the driver's single-process engine).  It
 * keeps the bindings from ids to arrays, accumulators and buffers, gives
 * bodies their proxies (arrays, slices, buffers, accumulators, the body's
 * `orion` table), runs an interpreted body over a block in a protected
 * call, and flushes buffers: the pending writes are kept in dsm/wbuf.h
 * stores, applied there ("add", "replace") or here (an apply function),
 * or handed to the flush sink.  Compiled bodies run in executor/exec_cbody.c
 * against the same bindings (executor/exec_int.h).
 *
 * Includes no driver-only header: executors link it without the driver's
 * engine.  Compute thread only (one thread per orion_exec). */
#include "executor/exec.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/msg.h"
#include "dsm/ragged.h"
#include "dsm/wbuf.h"
#include "executor/capture.h"
#include "executor/exec_gbody.h"
#include "executor/exec_apply.h"
#include "executor/exec_cbody.h"
#include "executor/exec_deadline.h"
#include "executor/exec_elem.h"
#include "executor/exec_ragged.h"
#include "executor/exec_sandbox.h"
#include "executor/exec_int.h"
#include "executor/nn.h"
#include "executor/exec_keys.h"
#include "util/alloc.h"
#include "util/cbody.h"
#include "util/clock.h"
#include "util/rng.h"

#define ARRAY_MT "orion.exec.array"
#define SLICE_MT "orion.exec.slice"
#define ACC_MT "orion.exec.acc"
#define BUFFER_MT "orion.exec.buffer"
#define BUFFERS_KEY "orion.exec.buffers" /* registry: id -> buffer object */

/* An array as a body sees it (one per captured name), and slices of it.
 * A slice is a view: base element offset plus the depth of dims consumed.
 * A buffer is seen the same way over its target's shape: buf is set, a is
 * unused (the target is buf->target, NULL once the buffer is unbound) and
 * the buffer object is the proxy's uservalue, which keeps it alive. */
typedef struct exec_array {
  orion_array *a;
  exec_buffer *buf;
  char name[64];
  /* The runtime guard (orion_exec_guard_array): the plan's placement of an
   * array the body must not write directly, copied from the binding when
   * the body is loaded; "" when it may. */
  char guard[ORION_EXEC_GUARD_MAX];
  /* --verify: the id and the recorder (NULL when off, and for buffers). */
  int64_t id;
  orion_keyrec *rec;
} exec_array;

typedef struct exec_slice {
  exec_array *arr; /* kept alive by the uservalue */
  int64_t off;
  int depth;
} exec_slice;

/* Drops the buffer's pending storage and its target.  Idempotent. */
static void buffer_release(exec_buffer *b) {
  int h;
  orion_wbuf_free(&b->pend);
  orion__exec_managed_forget(b);
  orion_array_release(b->target);
  b->target = NULL;
  for (h = 0; h < b->nhelp; h++) {
    orion_array_release(b->help[h]);
    b->help[h] = NULL;
  }
}

static int buffer_gc(lua_State *L) {
  buffer_release(lua_touserdata(L, 1));
  return 0;
}

/* ======================================================================
 * Element access from Lua.
 * ====================================================================== */

static const char *ea_kind(const exec_array *ea) {
  return ea->buf != NULL ? "buffer" : "array";
}

/* The array a proxy indexes: its own, or a buffer's target (raising once
 * the buffer is unbound). */
static const orion_array *ea_array(lua_State *L, const exec_array *ea) {
  if (ea->buf == NULL)
    return ea->a;
  if (ea->buf->target == NULL)
    luaL_error(L, "buffer '%s' is no longer bound on this executor",
               ea->name);
  return ea->buf->target;
}

/* Pushes the pending value of element k of a buffer (0 when none). */
static void buffer_push(lua_State *L, const exec_buffer *b, int64_t k) {
  const orion_pend_value *v = orion_wbuf_lookup(&b->pend, k);
  if (orion_type_is_int(b->target->type))
    lua_pushinteger(L, v != NULL ? v->i : 0);
  else
    lua_pushnumber(L, v != NULL ? v->d : 0.0);
}

/* Sets the pending value of element k of a buffer to the value at vidx;
 * raises like store_elem when it does not fit the target's type.  An i32
 * range check applies to "replace" only: with "add" or a function the
 * pending value is a delta and only the applied result must fit. */
static void buffer_store(lua_State *L, const exec_array *ea, int64_t k,
                         int vidx) {
  exec_buffer *b = ea->buf;
  orion_type t = b->target->type;
  orion_pend_value v, *slot;
  if (lua_type(L, vidx) != LUA_TNUMBER)
    luaL_error(L, "cannot store a %s in %s buffer '%s'", luaL_typename(L, vidx),
               orion_type_name(t), ea->name);
  if (orion_type_is_int(t)) {
    int isint;
    v.i = (int64_t)lua_tointegerx(L, vidx, &isint);
    if (!isint)
      luaL_error(L, "cannot store %s in %s buffer '%s': not an integer",
                 lua_tostring(L, vidx), orion_type_name(t), ea->name);
    if (t == ORION_I32 && b->op == ORION_APPLY_REPLACE &&
        (v.i < INT32_MIN || v.i > INT32_MAX))
      luaL_error(L, "cannot store %I in i32 buffer '%s': out of range",
                 (LUAI_UACINT)v.i, ea->name);
  } else {
    v.d = lua_tonumber(L, vidx);
  }
  slot = orion_wbuf_slot(&b->pend, k);
  if (slot == NULL)
    luaL_error(L, "buffer '%s': out of memory for pending writes", ea->name);
  *slot = v;
}

/* The runtime guard's refusal: the body wrote an array the plan did not
 * expect it to write.  Such a write would be dropped on the executors
 * (nothing sends it back) or race with other blocks, so the loop fails,
 * naming the array, the body's line and the plan's placement.  The line is
 * that of the Lua function doing the store (level 1: the metamethod is
 * level 0). */
static void guard_refuse(lua_State *L, const char *name, const char *place) {
  lua_Debug ar;
  char where[128] = "an unknown line";
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) &&
      ar.currentline > 0)
    snprintf(where, sizeof where, "%s:%d", ar.short_src, ar.currentline);
  lua_pushfstring(L, ORION_EXEC_GUARD_FMT, name, where, place);
  lua_error(L);
}

/* Stores into element pos of whatever the proxy stands for. */
static void store_at(lua_State *L, const exec_array *ea, const orion_array *a,
                     int64_t pos, int vidx) {
  ORION_KEYS_NOTE(L, ea->rec, ea->id, pos, 1); /* NULL for a buffer */
  if (ea->buf != NULL)
    buffer_store(L, ea, pos, vidx);
  else if (ea->guard[0] != '\0')
    guard_refuse(L, ea->name, ea->guard);
  else
    orion__exec_store_elem(L, a, "array", ea->name, pos, vidx);
}

/* Checks subscript (Lua arg 2) against dimension d of a; returns it
 * 0-based. */
static int64_t subscript(lua_State *L, const exec_array *ea,
                         const orion_array *a, int d) {
  int isint;
  lua_Integer k = lua_tointegerx(L, 2, &isint);
  if (!isint) {
    if (lua_type(L, 2) == LUA_TNUMBER)
      luaL_error(L, "%s '%s': subscript %s is not an integer", ea_kind(ea),
                 ea->name, lua_tostring(L, 2));
    luaL_error(L, "%s '%s': subscript must be an integer, got a %s",
               ea_kind(ea), ea->name, luaL_typename(L, 2));
  }
  if (k < 1 || k > a->dims[d])
    luaL_error(L, "%s '%s': index %I out of range 1..%I in dimension %d",
               ea_kind(ea), ea->name, (LUAI_UACINT)k, (LUAI_UACINT)a->dims[d],
               d + 1);
  return (int64_t)k - 1;
}

/* Pushes A[...][k] given the base offset and depth already consumed. */
static int index_at(lua_State *L, exec_array *ea, int aidx, int64_t off,
                    int depth) {
  const orion_array *a = ea_array(L, ea);
  int64_t k = subscript(L, ea, a, depth);
  int64_t pos = off + k * a->strides[depth];
  if (depth + 1 == a->ndims) {
    ORION_KEYS_NOTE(L, ea->rec, ea->id, pos, 0); /* NULL for a buffer */
    if (ea->buf != NULL)
      buffer_push(L, ea->buf, pos);
    else
      orion__exec_push_elem(L, a, pos);
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

static void require_dense(lua_State *L, const exec_array *ea,
                          const orion_array *a) {
  if (a->sparse)
    luaL_error(L,
               "array '%s' is sparse: inside a parallel_for body only dense "
               "arrays can be indexed (the iterated array's elements arrive "
               "as the body's arguments)",
               ea->name);
}

static int array_index(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  require_dense(L, ea, ea_array(L, ea));
  return index_at(L, ea, 1, 0, 0);
}

static int array_newindex(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  const orion_array *a = ea_array(L, ea);
  int64_t k;
  require_dense(L, ea, a);
  if (a->ndims != 1)
    luaL_error(L,
               "%s '%s' has %d dimensions: assign to an element "
               "(%s[i][j] = x), not to a slice",
               ea_kind(ea), ea->name, a->ndims, ea->name);
  k = subscript(L, ea, a, 0);
  store_at(L, ea, a, k, 3);
  return 0;
}

static int array_len(lua_State *L) {
  exec_array *ea = lua_touserdata(L, 1);
  lua_pushinteger(L, ea_array(L, ea)->dims[0]);
  return 1;
}

static int slice_index(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  lua_getiuservalue(L, 1, 1);
  return index_at(L, s->arr, lua_gettop(L), s->off, s->depth);
}

static int slice_newindex(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  const orion_array *a = ea_array(L, s->arr);
  int64_t k;
  if (s->depth + 1 != a->ndims)
    luaL_error(L, "%s '%s': assign to an element, not to a slice",
               ea_kind(s->arr), s->arr->name);
  k = subscript(L, s->arr, a, s->depth);
  store_at(L, s->arr, a, s->off + k * a->strides[s->depth], 3);
  return 0;
}

static int slice_len(lua_State *L) {
  exec_slice *s = lua_touserdata(L, 1);
  lua_pushinteger(L, ea_array(L, s->arr)->dims[s->depth]);
  return 1;
}

/* ======================================================================
 * Accumulators inside bodies.
 * ====================================================================== */

typedef struct exec_acc {
  orion_exec *ex;
  int64_t id;
} exec_acc;

static acc_slot *check_acc(lua_State *L) {
  exec_acc *ea = luaL_checkudata(L, 1, ACC_MT);
  acc_slot *s = orion__exec_find_acc(ea->ex, ea->id);
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
  luaL_newmetatable(L, BUFFER_MT);
  lua_pushcfunction(L, buffer_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  orion__exec_row_open(L);
}

/* The `orion` table bodies see on an executor: only what runs there. */
static int body_orion_clock(lua_State *L);

static void make_body_module(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, body_orion_clock);
  lua_setfield(L, -2, "clock");
  /* orion.nn (executor/nn.c) runs in bodies too: opened here, it is also what
   * a captured `orion.nn` table or nn function decodes to (executor/capture.c
   * finds it in the registry). */
  orion_nn_open_body(L);
  lua_setfield(L, -2, "nn");
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
  /* The sandbox copies the allowed globals: a global that bodies should
   * see (such as a replaced print) must be set before it. */
  orion__exec_deadline_open(ex->L);
  orion__exec_sandbox(ex->L);
  make_metatables(ex->L);
  make_body_module(ex->L);
  ex->id = executor_id;
  ex->body_ref = LUA_NOREF;
  return ex;
}

void orion_exec_allow_io(orion_exec *ex) {
  orion__exec_unsandbox(ex->L);
}

void orion_exec_free(orion_exec *ex) {
  int i;
  if (ex == NULL)
    return;
  /* Closing the state finalizes the buffer objects too; releasing first
   * does not depend on that. */
  for (i = 0; i < ex->nbufs; i++)
    buffer_release(ex->bufs[i]);
  lua_close(ex->L);
  for (i = 0; i < ex->narrays; i++)
    orion_array_release(ex->arrays[i].a);
  orion_free(ex->arrays);
  orion_free(ex->accs);
  orion_free(ex->bufs);
  orion_free(ex->cslots);
  orion__exec_gpu_free(ex);
  orion__keys_free(ex->keys);
  orion__exec_block_reset(ex);
  orion_free(ex);
}

int orion_exec_bind_array(orion_exec *ex, int64_t id, orion_array *a) {
  binding *b = orion__exec_find_array(ex, id), *nb;
  orion_array_retain(a);
  if (b != NULL) {
    orion_array_release(b->a);
    b->a = a;
    b->guard[0] = '\0'; /* each loop sets its own guards after binding */
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
  nb[ex->narrays].guard[0] = '\0';
  ex->narrays++;
  return 0;
}

int orion_exec_guard_array(orion_exec *ex, int64_t id,
                           const char *placement) {
  binding *b = orion__exec_find_array(ex, id);
  if (b == NULL)
    return ORION_EINVAL;
  snprintf(b->guard, sizeof b->guard, "%s",
           placement != NULL ? placement : "");
  return 0;
}

void orion_exec_unbind_array(orion_exec *ex, int64_t id) {
  binding *b = orion__exec_find_array(ex, id);
  if (b == NULL)
    return;
  orion_array_release(b->a);
  *b = ex->arrays[--ex->narrays];
}

int orion_exec_bind_acc(orion_exec *ex, int64_t id, orion_acc_op op) {
  acc_slot *s = orion__exec_find_acc(ex, id), *ns;
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
  acc_slot *s = orion__exec_find_acc(ex, id);
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

static int resolve(lua_State *L, int kind, int64_t id, const char *name,
                   void *ud);

/* ======================================================================
 * Error reports shared by bodies and buffer flushes.
 * ====================================================================== */

/* ======================================================================
 * Buffers: binding and flushing.
 * ====================================================================== */

void orion_exec_unbind_buffer(orion_exec *ex, int64_t id) {
  lua_State *L = ex->L;
  int i = orion__exec_find_buffer_index(ex, id);
  exec_buffer *b;
  if (i < 0)
    return;
  b = ex->bufs[i];
  luaL_unref(L, LUA_REGISTRYINDEX, b->apply_ref);
  b->apply_ref = LUA_NOREF;
  if (b->flush > 0)
    ex->nflushn--;
  if (b->flush == ORION_FLUSH_MANAGED)
    ex->nmanaged--;
  buffer_release(b);
  memmove(&ex->bufs[i], &ex->bufs[i + 1],
          sizeof *ex->bufs * (size_t)(ex->nbufs - i - 1));
  ex->nbufs--;
  /* Proxies a loaded body still holds keep the object alive; it is
   * collected with the last of them. */
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_pushnil(L);
  lua_rawseti(L, -2, (lua_Integer)id);
  lua_pop(L, 1);
}

/* The decoded apply function on top of L: a closure from
 * lua/buffer_with.c's chunk "=orion.buffer.with" is replaced by the
 * function it returns, and its helpers' names and ids go into h.  Returns
 * 0 or ORION_EPARSE with msg set (the stack then as it was). */
static int unwrap_helpers(lua_State *L, exec_buffer *h, char *msg,
                          size_t n) {
  lua_Debug ar;
  lua_Integer k, nh;
  lua_pushvalue(L, -1);
  if (!lua_getinfo(L, ">S", &ar) ||
      strcmp(ar.source, "=orion.buffer.with") != 0)
    return 0;
  lua_call(L, 0, 2); /* the closure gives f, {n, name1, id1, ...} */
  nh = lua_istable(L, -1) ? (lua_rawgeti(L, -1, 1), lua_tointeger(L, -1))
                          : -1;
  if (lua_istable(L, -2))
    lua_pop(L, 1);
  if (!lua_isfunction(L, -2) || nh < 1 || nh > ORION_EXEC_MAX_HELPERS) {
    lua_pop(L, 2);
    snprintf(msg, n, "malformed helper list");
    return ORION_EPARSE;
  }
  for (k = 0; k < nh; k++) {
    int isint;
    lua_rawgeti(L, -1, 2 + 2 * k);
    lua_rawgeti(L, -2, 3 + 2 * k);
    h->help_id[k] = (int64_t)lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -2) != LUA_TSTRING || !isint) {
      lua_pop(L, 4);
      snprintf(msg, n, "malformed helper list");
      return ORION_EPARSE;
    }
    snprintf(h->help_name[k], sizeof h->help_name[k], "%s",
             lua_tostring(L, -2));
    lua_pop(L, 2);
  }
  h->nhelp = (int)nh;
  lua_pop(L, 1); /* the list: the function is left where the closure was */
  return 0;
}

const char *orion_exec_buffer_name(orion_exec *ex, int64_t id) {
  exec_buffer *b = orion__exec_find_buffer(ex, id);
  return b != NULL ? b->name : "(unbound)";
}

int orion_exec_buffer_helpers(orion_exec *ex, int64_t id,
                              const int64_t **ids) {
  exec_buffer *b = orion__exec_find_buffer(ex, id);
  *ids = b != NULL ? b->help_id : NULL;
  return b != NULL ? b->nhelp : 0;
}

int orion_exec_bind_buffer(orion_exec *ex, int64_t id, const char *name,
                           int64_t target_id, orion_apply_op op,
                           const char *apply_blob, size_t len, int64_t flush,
                           orion_error *err) {
  lua_State *L = ex->L;
  binding *t = orion__exec_find_array(ex, target_id);
  exec_buffer *b, **nb, help;
  int ref = LUA_NOREF;
  char msg[512];
  if (name == NULL)
    name = "buffer";
  if (t == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': target array %lld is "
                           "not bound",
                           ex->id, name, (long long)target_id);
  if (t->a->sparse)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': the target array is "
                           "sparse; a buffer writes into a dense array",
                           ex->id, name);
  if (flush < ORION_FLUSH_MANAGED && !ORION_FLUSH_IS_CLOCK(flush))
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': bad flush policy %lld "
                           "(\"block\", \"loop\", \"managed\", \"clock\" "
                           "or n > 0 elements)",
                           ex->id, name, (long long)flush);
  if (op != ORION_APPLY_ADD && op != ORION_APPLY_REPLACE &&
      op != ORION_APPLY_FUNC && op != ORION_APPLY_MEAN)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': bad apply operator %d",
                           ex->id, name, (int)op);
  /* (orion.buffer refuses "mean" with flush = "loop"; the driver binds
   * a managed buffer as "loop", lua/pfor.c.) */
  if (op == ORION_APPLY_MEAN && orion_type_is_int(t->a->type))
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': apply \"mean\" needs "
                           "a float target",
                           ex->id, name);
  if (op == ORION_APPLY_FUNC && apply_blob == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': no apply function",
                           ex->id, name);
  orion_exec_unbind_buffer(ex, id);
  nb = orion_realloc(ex->bufs, sizeof *nb * (size_t)(ex->nbufs + 1));
  if (nb == NULL)
    return orion_error_set(err, ORION_ENOMEM,
                           "executor %d: buffer '%s': out of memory", ex->id,
                           name);
  ex->bufs = nb;
  memset(&help, 0, sizeof help);
  if (op == ORION_APPLY_FUNC) {
    int rc = orion_capture_decode(L, apply_blob, len, resolve, ex, msg,
                                  sizeof msg);
    if (rc == 0)
      rc = unwrap_helpers(L, &help, msg, sizeof msg);
    if (rc != 0)
      return orion_error_set(err, rc,
                             "executor %d: buffer '%s': apply function: %s",
                             ex->id, name, msg);
    ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->nhelp = help.nhelp;
  memcpy(b->help_id, help.help_id, sizeof b->help_id);
  memcpy(b->help_name, help.help_name, sizeof b->help_name);
  b->id = id;
  snprintf(b->name, sizeof b->name, "%s", name);
  b->target = t->a;
  orion_array_retain(t->a);
  b->op = op == ORION_APPLY_MEAN ? ORION_APPLY_ADD : op;
  b->mean = op == ORION_APPLY_MEAN;
  b->apply_ref = ref;
  b->flush = flush;
  orion_wbuf_init(&b->pend, t->a->nnz);
  luaL_setmetatable(L, BUFFER_MT);
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)id);
  lua_pop(L, 2);
  ex->bufs[ex->nbufs++] = b;
  if (flush > 0)
    ex->nflushn++;
  if (flush == ORION_FLUSH_MANAGED)
    ex->nmanaged++;
  return 0;
}

int64_t orion_exec_buffer_pending(orion_exec *ex, int64_t id) {
  exec_buffer *b = orion__exec_find_buffer(ex, id);
  orion_error err;
  if (b != NULL && orion__exec_absorb(ex, b, &err) != 0)
    return -1;
  return b != NULL ? orion_wbuf_pending(&b->pend) : -1;
}

int orion_exec_flush(orion_exec *ex, int at_loop_end, orion_error *err) {
  int i;
  if (at_loop_end) {
    int rc = orion__exec_flush_kept(ex, err);
    if (rc != 0)
      return rc;
  }
  for (i = 0; i < ex->nbufs; i++) {
    exec_buffer *b = ex->bufs[i];
    /* A clock counts this block; it is over after its n-th. */
    int clock_over = ORION_FLUSH_IS_CLOCK(b->flush) && !at_loop_end &&
                     ++b->count >= ORION_FLUSH_CLOCK_BLOCKS(b->flush);
    if (at_loop_end || b->flush == ORION_FLUSH_BLOCK || clock_over) {
      int rc = orion__exec_flush_buffer(ex, b, err);
      if (rc != 0)
        return rc;
    }
  }
  return 0;
}

int orion_exec_mid_clock(const orion_exec *ex, const orion_array *a) {
  int i;
  for (i = 0; i < ex->nbufs; i++) {
    const exec_buffer *b = ex->bufs[i];
    if (b->target == a && ORION_FLUSH_IS_CLOCK(b->flush) && b->count > 0)
      return 1;
  }
  return 0;
}

/* Pushes the executor-side object for a captured reference, or returns
 * ORION_ECAPTURE when (kind, id) is not bound here. */
static int resolve(lua_State *L, int kind, int64_t id, const char *name,
                   void *ud) {
  orion_exec *ex = ud;
  if (kind == 'M') {
    lua_getfield(L, LUA_REGISTRYINDEX, "orion.exec.module");
    return 0;
  }
  if (kind == ORION_CAPTURE_ARRAY) {
    binding *b = orion__exec_find_array(ex, id);
    exec_array *ea;
    if (b == NULL)
      return ORION_ECAPTURE;
    ea = lua_newuserdatauv(L, sizeof *ea, 0);
    ea->a = b->a;
    ea->buf = NULL;
    snprintf(ea->name, sizeof ea->name, "%s", name);
    memcpy(ea->guard, b->guard, sizeof ea->guard);
    ea->id = id;
    ea->rec = orion__keys_live(ex->keys);
    luaL_setmetatable(L, ARRAY_MT);
    return 0;
  }
  if (kind == ORION_CAPTURE_BUFFER) {
    exec_buffer *b = orion__exec_find_buffer(ex, id);
    exec_array *ea;
    if (b == NULL)
      return ORION_ECAPTURE;
    ea = lua_newuserdatauv(L, sizeof *ea, 1);
    ea->a = NULL;
    ea->buf = b;
    snprintf(ea->name, sizeof ea->name, "%s", name);
    ea->guard[0] = '\0'; /* a buffer's writes are what the plan expects */
    ea->id = id;
    ea->rec = NULL;
    luaL_setmetatable(L, ARRAY_MT);
    lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
    lua_rawgeti(L, -1, (lua_Integer)id);
    lua_setiuservalue(L, -3, 1);
    lua_pop(L, 1);
    return 0;
  }
  if (kind == ORION_CAPTURE_ACC) {
    exec_acc *acc;
    if (orion__exec_find_acc(ex, id) == NULL)
      return ORION_ECAPTURE;
    acc = lua_newuserdatauv(L, sizeof *acc, 0);
    acc->ex = ex;
    acc->id = id;
    luaL_setmetatable(L, ACC_MT);
    return 0;
  }
  return ORION_ECAPTURE;
}

int orion_exec_load(orion_exec *ex, int64_t loop_id, const char *blob,
                    size_t len, orion_error *err) {
  char msg[512];
  int rc;
  orion_exec_set_compiled(ex, NULL, NULL, 0);
  orion_exec_set_gbody(ex, NULL, NULL, NULL);
  orion__exec_block_reset(ex); /* a failed loop's blocks */
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
  uint64_t seed; /* math.random's: orion_seed_mix(script seed, loop, block) */
  int seeded;    /* math.randomseed returned */
  orion_error *err;
  int flush_rc; /* an n-element flush failed (err is set) */
  int64_t iter_id;
  orion_keyrec *rec; /* orion-driver --verify's recorder, or NULL */
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

/* A ragged array's block: body(row key, row view) once per row (its run
 * of elements with the same row key, dsm/ragged.h). */
static int run_rows(lua_State *L, run_ctx *c) {
  orion_array *a = c->a;
  int64_t end;
  for (c->cur = c->lo; c->cur < c->hi; c->cur = end) {
    end = orion_ragged_row_end(a, c->cur, c->hi);
    ORION_KEYS_RANK(c->rec, a, c->cur);
    lua_pushvalue(L, 2);
    lua_pushinteger(L, a->keys[2 * c->cur] + 1);
    orion__exec_push_row(L, a, c->cur, end);
    lua_call(L, 2, 1);
    orion__exec_deadline_check(L, c->ex);
    if (!lua_isnil(L, -1))
      luaL_error(L, "a body over a ragged array returns nothing (its rows "
                    "are read-only), not a %s",
                 luaL_typename(L, -1));
    lua_pop(L, 1);
    if ((c->ex->nflushn > 0 || orion__exec_managed_ticks(c->ex)) &&
        (c->flush_rc = orion__exec_count_element(c->ex, c->err)) != 0)
      return 0;
  }
  return 0;
}

/* Runs inside lua_pcall: the element loop in C, one lua_call per element. */
static int run_block(lua_State *L) {
  run_ctx *c = lua_touserdata(L, 1);
  orion_array *a = c->a;
  int nargs = a->ndims + 1;
  /* math.random in the body: seeded inside the protected call, so that a
   * failing math.randomseed is the block's error, not a panic. */
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, (lua_Integer)c->seed);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  c->seeded = 1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ex->body_ref);
  if (c->rec != NULL)
    orion__keys_body(L, c->rec, 2);
  if (a->ragged)
    return run_rows(L, c);
  for (c->cur = c->lo; c->cur < c->hi; c->cur++) {
    ORION_KEYS_RANK(c->rec, a, c->cur);
    lua_pushvalue(L, 2);
    push_keys(L, a, c->cur);
    orion__exec_push_elem(L, a, c->cur);
    lua_call(L, nargs, 1);
    orion__exec_deadline_check(L, c->ex);
    if (!lua_isnil(L, -1)) {
      if (c->rec != NULL && !a->sparse)
        orion__keys_note(L, c->rec, c->iter_id, c->cur, 1, 1);
      orion__exec_store_elem(L, a, "array", "the iterated array (returned value)",
                 c->cur, -1);
    }
    lua_pop(L, 1);
    if ((c->ex->nflushn > 0 || orion__exec_managed_ticks(c->ex)) &&
        (c->flush_rc = orion__exec_count_element(c->ex, c->err)) != 0)
      return 0;
  }
  return 0;
}

int orion_exec_run(orion_exec *ex, int64_t iter_id, int64_t lo, int64_t hi,
                   uint64_t seed, int64_t block, orion_error *err) {
  lua_State *L = ex->L;
  binding *b = orion__exec_find_array(ex, iter_id);
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
  if (orion_exec_gpu_ready(ex)) { /* the device (executor/exec_gbody.c) */
    orion_segment seg;
    seg.lo = lo;
    seg.hi = hi;
    return orion_exec_run_gpu(ex, iter_id, &seg, 1, seed, block, err);
  }
  orion__exec_deadline_start(ex, block);
  if (ex->cfn != NULL)
    return orion__exec_run_compiled(ex, b->a, lo, hi, seed, block, err);
  c.ex = ex;
  c.a = b->a;
  c.lo = lo;
  c.hi = hi;
  c.cur = lo;
  c.seed = orion_seed_mix(seed, (uint64_t)ex->loop_id, (uint64_t)block);
  c.seeded = 0;
  c.err = err;
  c.flush_rc = 0;
  c.iter_id = iter_id;
  c.rec = orion__keys_live(ex->keys);
  lua_pushcfunction(L, orion__exec_traceback);
  lua_pushcfunction(L, run_block);
  lua_pushlightuserdata(L, &c);
  rc = lua_pcall(L, 1, 0, -3);
  orion__exec_deadline_stop(ex);
  if (rc != LUA_OK) {
    char key[256];
    if (!c.seeded) {
      orion_error_set(err, ORION_EBODY, "executor %d: math.randomseed: %s",
                      ex->id, lua_tostring(L, -1));
    } else {
      orion__exec_key_string(b->a, c.cur, key, sizeof key);
      orion_error_set(err, ORION_EBODY, "executor %d, element %s: %s",
                      ex->id, key, lua_tostring(L, -1));
    }
    lua_pop(L, 2);
    return ORION_EBODY;
  }
  lua_pop(L, 1);
  return c.flush_rc;
}

/* ======================================================================
 * Array data for native kernels (orion.nn, executor/nn.c).
 * ====================================================================== */

int orion_exec_view_of(lua_State *L, int idx, orion_exec_view *v) {
  exec_slice *s = luaL_testudata(L, idx, SLICE_MT);
  exec_array *ea;
  memset(v, 0, sizeof *v);
  if (s != NULL) {
    ea = s->arr;
    v->off = s->off;
    v->depth = s->depth;
  } else {
    ea = luaL_testudata(L, idx, ARRAY_MT);
    if (ea == NULL)
      return 0;
  }
  v->a = ea_array(L, ea);
  v->name = ea->name;
  v->buffer = ea->buf;
  v->guard = ea->guard[0] != '\0' ? ea->guard : NULL;
  v->id = ea->id;
  v->keys = ea->rec;
  return 1;
}

void orion_exec_guard_refuse(lua_State *L, const orion_exec_view *v) {
  guard_refuse(L, v->name, v->guard != NULL ? v->guard : "?");
}

int orion_exec_view_pend(const orion_exec_view *v, int64_t first,
                         const float *x, const float *x0, int64_t n,
                         double alpha, int set_mode) {
  exec_buffer *b = v->buffer;
  if (b == NULL || b->target == NULL || orion_type_is_int(b->target->type))
    return ORION_EINVAL;
  return orion_wbuf_add_scaled(&b->pend, v->off + first, x, x0, n, alpha,
                               set_mode);
}

/* ======================================================================
 * orion.nn in an executor's Lua state: the host through which the binding
 * (executor/nn.c) reads the array, slice and buffer proxies bodies see
 * (executor/exec.h), and writes buffers as pending values.  It belongs to the
 * executor host (executor/exec*), which includes executor/nn.h, never the reverse.
 * (Merged from exec_nn.c: it and this file called each other.)
 * ====================================================================== */

/* The proxy at idx (see orion__nn_host). */
static int data_of(lua_State *L, int idx, const char *fn, const char *what,
                   orion__nn_data *d) {
  orion_exec_view ev;
  if (!orion_exec_view_of(L, idx, &ev))
    return 0;
  d->a = ev.a;
  d->off = ev.off;
  d->depth = ev.depth;
  d->name = ev.name;
  d->buffer = ev.buffer;
  d->guard = ev.guard;
  d->id = ev.id;
  d->keys = ev.keys;
  return 1;
}

/* Pending values of a buffer proxy. */
static int pend(const orion__nn_data *d, int64_t first, const float *x,
                const float *x0, int64_t n, double alpha, int replace) {
  orion_exec_view ev;
  memset(&ev, 0, sizeof ev);
  ev.a = d->a;
  ev.off = d->off;
  ev.depth = d->depth;
  ev.name = d->name;
  ev.buffer = d->buffer;
  return orion_exec_view_pend(&ev, first, x, x0, n, alpha, replace);
}

/* The runtime guard: nn stores into an array the plan placed read-only. */
static void refuse(lua_State *L, const orion__nn_data *d) {
  orion_exec_view ev;
  memset(&ev, 0, sizeof ev);
  ev.a = d->a;
  ev.name = d->name;
  ev.guard = d->guard;
  orion_exec_guard_refuse(L, &ev);
}

/* orion-driver --verify: nn's reads and stores, key by key. */
static void touch(lua_State *L, const orion__nn_data *d, int64_t first,
                  int64_t n, int write) {
  int64_t k;
  for (k = 0; d->keys != NULL && k < n; k++)
    orion__keys_note(L, d->keys, d->id, d->off + first + k, write, 0);
}

static const orion__nn_host host = {data_of, NULL, pend, refuse,
                                    touch};

/* An executor's table: the proxies as array data, stubs for the driver's
 * functions. */
int orion_nn_open_body(lua_State *L) {
  return orion__nn_open(L, &host, NULL);
}

int orion_exec_nn_gpu(orion_exec *ex, struct orion_gpu *g, orion_error *err) {
  return orion_nn_set_gpu(ex->L, g, err);
}
