/* Buffers' pending values applied to their targets (exec_int.h): by the
 * buffer's apply function in the Lua host (with its helper arrays), or
 * handed to the flush sink (the executor's owners of sharded arrays);
 * a flush when a buffer's count of elements is reached.  exec.c binds the
 * buffers and flushes them at a block's or a loop's end.
 */
#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dsm/types.h"
#include "dsm/wbuf.h"
#include "executor/exec.h"
#include "executor/exec_apply.h"
#include "executor/exec_elem.h"
#include "executor/exec_int.h"
#include "util/alloc.h"

typedef struct flush_ctx {
  orion_exec *ex;
  exec_buffer *b;
  const orion_pend_item *items;
  int64_t n, cur;
} flush_ctx;

/* Finds b's helper arrays among ex's bound arrays (raising an error that
 * names the one missing). */
static void find_helpers(lua_State *L, orion_exec *ex, exec_buffer *b) {
  int h;
  for (h = 0; h < b->nhelp; h++) {
    binding *hb;
    if (b->help[h] != NULL)
      continue;
    hb = orion__exec_find_array(ex, b->help_id[h]);
    if (hb == NULL || hb->a->nnz != b->target->nnz)
      luaL_error(L, "helper array '%s' is not on executor %d with the "
                    "target's elements",
                 b->help_name[h], ex->id);
    b->help[h] = hb->a;
    orion_array_retain(hb->a);
  }
}

/* Runs inside lua_pcall: applies the taken items to the target in order
 * with the buffer's apply function, f(old, delta, helpers..., keys...)
 * returning the new value and the helpers' (nil: unchanged); f->cur names
 * the item that failed. */
static int apply_items(lua_State *L) {
  flush_ctx *f = lua_touserdata(L, 1);
  exec_buffer *b = f->b;
  orion_array *a = b->target;
  int isint = orion_type_is_int(a->type), nh = b->nhelp, h, d;
  int nd = a->ragged ? 1 : a->ndims;
  find_helpers(L, f->ex, b);
  lua_rawgeti(L, LUA_REGISTRYINDEX, b->apply_ref); /* index 2 */
  luaL_checkstack(L, 3 + nh + nd, "apply function arguments");
  for (f->cur = 0; f->cur < f->n; f->cur++) {
    int64_t k = f->items[f->cur].key;
    orion_pend_value v = f->items[f->cur].val;
    lua_pushvalue(L, 2);
    orion__exec_push_elem(L, a, k);
    if (isint)
      lua_pushinteger(L, (lua_Integer)v.i);
    else
      lua_pushnumber(L, v.d);
    for (h = 0; h < nh; h++)
      orion__exec_push_elem(L, b->help[h], k);
    for (d = 0; d < nd; d++)
      lua_pushinteger(L, (lua_Integer)((k / a->strides[d]) % a->dims[d]) + 1);
    lua_call(L, 2 + nh + nd, 1 + nh);
    for (h = 0; h < nh; h++)
      if (!lua_isnil(L, -nh + h))
        orion__exec_store_elem(L, b->help[h], "helper array", b->help_name[h], k,
                   -nh + h);
    orion__exec_store_elem(L, a, "buffer", b->name, k, -1 - nh);
    lua_pop(L, 1 + nh);
  }
  return 0;
}

/* The report of a flush that failed at key: "executor E, buffer 'NAME',
 * key (k1, ..., kn): MESSAGE". */
static int apply_error(orion_exec *ex, exec_buffer *b, int64_t key,
                       const char *msg, orion_error *err) {
  char where[256];
  orion__exec_key_string(b->target, key, where, sizeof where);
  return orion_error_set(err, ORION_EBODY,
                         "executor %d, buffer '%s', key %s: %s", ex->id,
                         b->name, where, msg);
}

/* Applies items[0..n) to b's target with b's operator, in order: "add"
 * and "replace" in dsm/wbuf.c, an apply function here, in a protected
 * call with a traceback. */
int orion__exec_apply_taken(orion_exec *ex, exec_buffer *b,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err) {
  lua_State *L = ex->L;
  flush_ctx f;
  int rc = 0, top = lua_gettop(L);
  if (n == 0)
    return 0;
  if (b->op != ORION_APPLY_FUNC) {
    int64_t bad = 0, value = 0;
    char msg[256];
    if (orion_wbuf_apply(b->target, b->op, items, n, &bad, &value) == 0)
      return 0;
    snprintf(msg, sizeof msg,
             "cannot store %lld in i32 buffer '%s': out of range",
             (long long)value, b->name);
    return apply_error(ex, b, items[bad].key, msg, err);
  }
  f.n = n;
  f.ex = ex;
  f.b = b;
  f.items = items;
  f.cur = 0;
  lua_pushcfunction(L, orion__exec_traceback);
  lua_pushcfunction(L, apply_items);
  lua_pushlightuserdata(L, &f);
  if (lua_pcall(L, 1, 0, top + 1) != LUA_OK)
    rc = apply_error(ex, b, items[f.cur < f.n ? f.cur : f.n - 1].key,
                     lua_tostring(L, -1), err);
  lua_settop(L, top);
  return rc;
}

/* Takes b's pending elements and applies them to the target (or hands them
 * to the flush sink); restarts its count. */
int orion__exec_flush_buffer(orion_exec *ex, exec_buffer *b,
                             orion_error *err) {
  orion_pend_item *items;
  int64_t n;
  int rc;
  b->count = 0;
  orion__exec_managed_forget(b); /* everything pending goes now */
  if (b->target == NULL)
    return 0;
  if (b->unabsorbed) { /* a scan store: marked, taken and scaled at once */
    int isint = orion_type_is_int(b->target->type);
    rc = orion_wbuf_take_scan(&b->pend, isint, orion__exec_mean_factor(ex, b),
                              &items, &n);
    if (rc == 0)
      b->unabsorbed = 0;
  } else if (orion_wbuf_pending(&b->pend) == 0) {
    return 0;
  } else {
    rc = orion_wbuf_take(&b->pend, &items, &n);
    if (rc == 0)
      orion__exec_mean_scale(ex, b, items, n);
  }
  if (rc != 0)
    return orion_error_set(err, rc,
                           "executor %d: buffer '%s': out of memory flushing "
                           "its pending elements",
                           ex->id, b->name);
  if (n == 0)
    return 0;
  if (ex->sink != NULL)
    rc = ex->sink(ex->sink_ud, b->id, orion_type_is_int(b->target->type),
                  items, n, -1, err);
  else
    rc = orion__exec_apply_taken(ex, b, items, n, err);
  orion_free(items);
  return rc;
}

int orion__exec_absorb(orion_exec *ex, exec_buffer *b, orion_error *err) {
  if (!b->unabsorbed)
    return 0;
  b->unabsorbed = 0;
  if (orion_wbuf_absorb(&b->pend) != 0)
    return orion_error_set(err, ORION_ENOMEM,
                           "executor %d: buffer '%s': out of memory marking "
                           "pending writes",
                           ex->id, b->name);
  return 0;
}

void orion_exec_set_executors(orion_exec *ex, int n) {
  ex->nexec = n > 1 ? n : 1;
}

void orion_exec_set_flush_sink(orion_exec *ex, orion_flush_sink sink,
                               void *ud) {
  ex->sink = sink;
  ex->sink_ud = ud;
}

int orion_exec_buffer_apply(orion_exec *ex, int64_t id,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err) {
  exec_buffer *b = orion__exec_find_buffer(ex, id);
  int64_t i;
  if (b == NULL || b->target == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer %lld is not bound", ex->id,
                           (long long)id);
  for (i = 0; i < n; i++)
    if (items[i].key < 0 || items[i].key >= b->target->nnz)
      return orion_error_set(err, ORION_EKEYRANGE,
                             "executor %d: buffer '%s': flushed key %lld is "
                             "outside its target",
                             ex->id, b->name, (long long)items[i].key);
  return orion__exec_apply_taken(ex, b, items, n, err);
}

int orion_exec_buffer_apply_valid(orion_exec *ex, int64_t id,
                                  const orion_pend_item *items, int64_t n,
                                  orion_error *err) {
  exec_buffer *b = orion__exec_find_buffer(ex, id);
  if (b == NULL || b->target == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer %lld is not bound", ex->id,
                           (long long)id);
  return orion__exec_apply_taken(ex, b, items, n, err);
}

/* After each element of a block: counts it for the n-element buffers and
 * flushes those whose count is reached. */
int orion__exec_count_element(orion_exec *ex, orion_error *err) {
  int i;
  for (i = 0; i < ex->nbufs; i++) {
    exec_buffer *b = ex->bufs[i];
    if (b->flush > 0 && ++b->count >= b->flush) {
      int rc = orion__exec_flush_buffer(ex, b, err);
      if (rc != 0)
        return rc;
    }
  }
  return orion__exec_managed_count(ex, err);
}
