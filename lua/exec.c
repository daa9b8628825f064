#include "lua/exec.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/proto.h"
#include "lua/capture.h"
#include "util/cbody.h"
#include "lua/nn.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/luarand.h"
#include "util/rng.h"

#define ARRAY_MT "orion.exec.array"
#define SLICE_MT "orion.exec.slice"
#define ACC_MT "orion.exec.acc"
#define BUFFER_MT "orion.exec.buffer"
#define BUFFERS_KEY "orion.exec.buffers" /* registry: id -> buffer object */

typedef struct binding {
  int64_t id;
  orion_array *a;
} binding;

typedef struct acc_slot {
  int64_t id;
  orion_acc_op op;
  orion_accval val;
} acc_slot;

typedef struct exec_buffer exec_buffer;

struct orion_exec {
  lua_State *L;
  int id;
  binding *arrays;
  int narrays;
  acc_slot *accs;
  int naccs;
  exec_buffer **bufs; /* bound buffers, in bind order */
  int nbufs;
  int nflushn; /* how many of them flush every n elements */
  int body_ref; /* registry ref of the loaded body, LUA_NOREF when none */
  int64_t loop_id;
  orion_flush_sink sink; /* flushes go here instead of the target, or NULL */
  void *sink_ud;
  orion_cbody_fn cfn;    /* the loop's compiled body, or NULL */
  orion_cslot *cslots;   /* its slots (copied, names not kept) */
  int ncslots;
};

/* An array as a body sees it (one per captured name), and slices of it.
 * A slice is a view: base element offset plus the depth of dims consumed.
 * A buffer is seen the same way over its target's shape: buf is set, a is
 * unused (the target is buf->target, NULL once the buffer is unbound) and
 * the buffer object is the proxy's uservalue, which keeps it alive. */
typedef struct exec_array {
  orion_array *a;
  exec_buffer *buf;
  char name[64];
} exec_array;

typedef struct exec_slice {
  exec_array *arr; /* kept alive by the uservalue */
  int64_t off;
  int depth;
} exec_slice;

/* ======================================================================
 * Pending writes of a buffer.
 *
 * Keys are linear element offsets into the target.  Small targets keep a
 * dense array of values (zero when nothing is pending) with a dirty bitmap
 * and a list of dirty keys, so a read is one load and a flush touches only
 * what was written.  Large targets start with an open-addressing hash table
 * (memory in proportion to the writes) and switch to the dense form once a
 * quarter of their elements are pending.  Storage is allocated at the first
 * write and kept, cleared, across flushes until the buffer is unbound.
 * ====================================================================== */

/* A pending value: the integer for i32/i64 targets, the float otherwise.
 * All-zero bits are 0 and 0.0 alike. */
typedef orion_pend_value pval;
typedef orion_pend_item pend_item;

#define DENSE_MAX_POSITIONS ((int64_t)1 << 20)
#define HASH_MIN_CAP 64

typedef struct pending {
  int64_t positions; /* elements of the target */
  pval *vals;        /* dense: positions values */
  uint64_t *bits;    /* dense: dirty bitmap */
  int64_t *hkeys;    /* hash: key per slot, -1 when empty */
  pval *hvals;       /* hash: value per slot */
  int64_t hcap;      /* hash: slots, a power of two */
  int64_t *dirty;    /* dense: dirty keys; hash: occupied slots */
  int64_t ndirty, capdirty;
} pending;

static void pend_free(pending *p) {
  orion_free(p->vals);
  orion_free(p->bits);
  orion_free(p->hkeys);
  orion_free(p->hvals);
  orion_free(p->dirty);
  p->vals = p->hvals = NULL;
  p->bits = NULL;
  p->hkeys = p->dirty = NULL;
  p->hcap = p->ndirty = p->capdirty = 0;
}

static int push_dirty(pending *p, int64_t x) {
  if (p->ndirty == p->capdirty) {
    int64_t cap = p->capdirty ? 2 * p->capdirty : 16;
    int64_t *nd = orion_realloc(p->dirty, sizeof *nd * (size_t)cap);
    if (nd == NULL)
      return ORION_ENOMEM;
    p->dirty = nd;
    p->capdirty = cap;
  }
  p->dirty[p->ndirty++] = x;
  return 0;
}

/* Dense form: marks key pending.  The key list is kept only while it is
 * short (pend_take sorts it then); from positions / 512 keys on, the
 * bitmap alone yields them, and only the count goes on. */
static int dense_mark(pending *p, int64_t key) {
  uint64_t bit = (uint64_t)1 << (key & 63);
  if (p->bits[key >> 6] & bit)
    return 0;
  p->bits[key >> 6] |= bit;
  if (p->ndirty >= p->positions / 512) {
    p->ndirty++;
    return 0;
  }
  if (push_dirty(p, key) != 0) {
    p->bits[key >> 6] &= ~bit;
    return ORION_ENOMEM;
  }
  return 0;
}

static int64_t hash_home(const pending *p, int64_t key) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
  return (int64_t)((h ^ (h >> 29)) & (uint64_t)(p->hcap - 1));
}

/* The slot holding key, or the empty slot where it would go. */
static int64_t hash_find(const pending *p, int64_t key) {
  int64_t s = hash_home(p, key);
  while (p->hkeys[s] != -1 && p->hkeys[s] != key)
    s = (s + 1) & (p->hcap - 1);
  return s;
}

/* Rehashes into cap slots; the dirty list follows the entries. */
static int hash_resize(pending *p, int64_t cap) {
  pending np = *p;
  int64_t i;
  np.hkeys = orion_malloc(sizeof *np.hkeys * (size_t)cap);
  np.hvals = orion_malloc(sizeof *np.hvals * (size_t)cap);
  if (np.hkeys == NULL || np.hvals == NULL) {
    orion_free(np.hkeys);
    orion_free(np.hvals);
    return ORION_ENOMEM;
  }
  memset(np.hkeys, 0xff, sizeof *np.hkeys * (size_t)cap); /* all -1 */
  np.hcap = cap;
  for (i = 0; i < p->ndirty; i++) {
    int64_t old = p->dirty[i], s = hash_find(&np, p->hkeys[old]);
    np.hkeys[s] = p->hkeys[old];
    np.hvals[s] = p->hvals[old];
    p->dirty[i] = s;
  }
  orion_free(p->hkeys);
  orion_free(p->hvals);
  p->hkeys = np.hkeys;
  p->hvals = np.hvals;
  p->hcap = cap;
  return 0;
}

static int dense_alloc(pending *p) {
  p->vals = orion_calloc((size_t)p->positions, sizeof *p->vals);
  p->bits = orion_calloc(((size_t)p->positions + 63) / 64, sizeof *p->bits);
  if (p->vals == NULL || p->bits == NULL) {
    orion_free(p->vals);
    orion_free(p->bits);
    p->vals = NULL;
    p->bits = NULL;
    return ORION_ENOMEM;
  }
  return 0;
}

/* Moves a hash table's entries into the dense form (keeps the hash on
 * failure: it still works). */
static void hash_to_dense(pending *p) {
  int64_t i;
  if (dense_alloc(p) != 0)
    return;
  for (i = 0; i < p->ndirty; i++) {
    int64_t s = p->dirty[i], k = p->hkeys[s];
    p->vals[k] = p->hvals[s];
    p->bits[k >> 6] |= (uint64_t)1 << (k & 63);
    p->dirty[i] = k;
  }
  orion_free(p->hkeys);
  orion_free(p->hvals);
  p->hkeys = NULL;
  p->hvals = NULL;
  p->hcap = 0;
}

/* The pending value of key, or NULL when none is pending. */
static const pval *pend_lookup(const pending *p, int64_t key) {
  if (p->vals != NULL)
    return &p->vals[key]; /* zero when clean */
  if (p->hkeys != NULL) {
    int64_t s = hash_find(p, key);
    return p->hkeys[s] == key ? &p->hvals[s] : NULL;
  }
  return NULL;
}

/* The pending value of key, made pending (zero) when it was not.  NULL on
 * out of memory. */
static pval *pend_slot(pending *p, int64_t key) {
  if (p->vals == NULL && p->hkeys == NULL) {
    if (p->positions <= DENSE_MAX_POSITIONS) {
      if (dense_alloc(p) != 0)
        return NULL;
    } else if (hash_resize(p, HASH_MIN_CAP) != 0) {
      return NULL;
    }
  }
  if (p->vals != NULL)
    return dense_mark(p, key) == 0 ? &p->vals[key] : NULL;
  {
    int64_t s = hash_find(p, key);
    if (p->hkeys[s] == key)
      return &p->hvals[s];
    if (2 * (p->ndirty + 1) > p->hcap) {
      if (4 * (p->ndirty + 1) >= p->positions) {
        hash_to_dense(p);
        if (p->vals != NULL)
          return pend_slot(p, key);
      }
      if (hash_resize(p, 2 * p->hcap) != 0)
        return NULL;
      s = hash_find(p, key);
    }
    if (push_dirty(p, s) != 0)
      return NULL;
    p->hkeys[s] = key;
    p->hvals[s].i = 0;
    return &p->hvals[s];
  }
}

static int cmp_key(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* Takes every pending element out, in ascending key order, into a new
 * array *items (orion_free it; NULL when *n is 0).  The pending set is
 * empty afterwards.  On out of memory nothing changes. */
static int pend_take(pending *p, pend_item **items, int64_t *n) {
  pend_item *it;
  int64_t i, j = 0;
  *items = NULL;
  *n = 0;
  if (p->ndirty == 0)
    return 0;
  it = orion_malloc(sizeof *it * (size_t)p->ndirty);
  if (it == NULL)
    return ORION_ENOMEM;
  if (p->vals != NULL && p->ndirty >= p->positions / 512) {
    /* Many dirty elements: the bitmap yields them in order. */
    int64_t w, nw = (p->positions + 63) / 64;
    for (w = 0; w < nw; w++) {
      uint64_t bits = p->bits[w];
      while (bits) {
        int64_t k = w * 64 + __builtin_ctzll(bits);
        it[j].key = k;
        it[j++].val = p->vals[k];
        p->vals[k].i = 0;
        bits &= bits - 1;
      }
      p->bits[w] = 0;
    }
  } else if (p->vals != NULL) { /* dense_mark kept every key */
    qsort(p->dirty, (size_t)p->ndirty, sizeof *p->dirty, cmp_key);
    for (i = 0; i < p->ndirty; i++) {
      int64_t k = p->dirty[i];
      it[j].key = k;
      it[j++].val = p->vals[k];
      p->vals[k].i = 0;
      p->bits[k >> 6] = 0;
    }
  } else {
    for (i = 0; i < p->ndirty; i++) {
      int64_t s = p->dirty[i];
      it[j].key = p->hkeys[s];
      it[j++].val = p->hvals[s];
      p->hkeys[s] = -1;
    }
    /* key is the first member: sorting by it sorts the items. */
    qsort(it, (size_t)j, sizeof *it, cmp_key);
  }
  p->ndirty = 0;
  *items = it;
  *n = j;
  return 0;
}

/* A buffer on this executor: a full userdata (BUFFER_MT) anchored in the
 * registry while bound; body proxies hold it as their uservalue. */
struct exec_buffer {
  int64_t id;
  char name[64];
  orion_array *target; /* retained while bound; NULL once unbound */
  orion_apply_op op;
  int apply_ref; /* registry ref of the apply function (ORION_APPLY_FUNC) */
  int64_t flush; /* ORION_FLUSH_BLOCK, ORION_FLUSH_LOOP or n > 0 */
  int64_t count; /* elements run since the last flush (n > 0) */
  pending pend;
};

/* Drops the buffer's pending storage and its target.  Idempotent. */
static void buffer_release(exec_buffer *b) {
  pend_free(&b->pend);
  orion_array_release(b->target);
  b->target = NULL;
}

static int buffer_gc(lua_State *L) {
  buffer_release(lua_touserdata(L, 1));
  return 0;
}

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
 * the array (`kind` "array" or "buffer" and its name) when the value does
 * not fit its type. */
static void store_elem(lua_State *L, const orion_array *a, const char *kind,
                       const char *name, int64_t i, int vidx) {
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
  const pval *v = pend_lookup(&b->pend, k);
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
  pval v, *slot;
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
  slot = pend_slot(&b->pend, k);
  if (slot == NULL)
    luaL_error(L, "buffer '%s': out of memory for pending writes", ea->name);
  *slot = v;
}

/* Stores into element pos of whatever the proxy stands for. */
static void store_at(lua_State *L, const exec_array *ea, const orion_array *a,
                     int64_t pos, int vidx) {
  if (ea->buf != NULL)
    buffer_store(L, ea, pos, vidx);
  else
    store_elem(L, a, "array", ea->name, pos, vidx);
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
    if (ea->buf != NULL)
      buffer_push(L, ea->buf, pos);
    else
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
  luaL_newmetatable(L, BUFFER_MT);
  lua_pushcfunction(L, buffer_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
}

/* The `orion` table bodies see on an executor: only what runs there. */
static int body_orion_clock(lua_State *L);

static void make_body_module(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, body_orion_clock);
  lua_setfield(L, -2, "clock");
  /* orion.nn (lua/nn.c) runs in bodies too: opened here, it is also what
   * a captured `orion.nn` table or nn function decodes to (lua/capture.c
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

static int resolve(lua_State *L, int kind, int64_t id, const char *name,
                   void *ud);

/* ======================================================================
 * Error reports shared by bodies and buffer flushes.
 * ====================================================================== */

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

/* ======================================================================
 * Buffers: binding and flushing.
 * ====================================================================== */

static int find_buffer_index(orion_exec *ex, int64_t id) {
  int i;
  for (i = 0; i < ex->nbufs; i++)
    if (ex->bufs[i]->id == id)
      return i;
  return -1;
}

static exec_buffer *find_buffer(orion_exec *ex, int64_t id) {
  int i = find_buffer_index(ex, id);
  return i >= 0 ? ex->bufs[i] : NULL;
}

void orion_exec_unbind_buffer(orion_exec *ex, int64_t id) {
  lua_State *L = ex->L;
  int i = find_buffer_index(ex, id);
  exec_buffer *b;
  if (i < 0)
    return;
  b = ex->bufs[i];
  luaL_unref(L, LUA_REGISTRYINDEX, b->apply_ref);
  b->apply_ref = LUA_NOREF;
  if (b->flush > 0)
    ex->nflushn--;
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

int orion_exec_bind_buffer(orion_exec *ex, int64_t id, const char *name,
                           int64_t target_id, orion_apply_op op,
                           const char *apply_blob, size_t len, int64_t flush,
                           orion_error *err) {
  lua_State *L = ex->L;
  binding *t = find_array(ex, target_id);
  exec_buffer *b, **nb;
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
  if (flush < ORION_FLUSH_LOOP)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': bad flush policy %lld "
                           "(\"block\", \"loop\" or n > 0 elements)",
                           ex->id, name, (long long)flush);
  if (op != ORION_APPLY_ADD && op != ORION_APPLY_REPLACE &&
      op != ORION_APPLY_FUNC)
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer '%s': bad apply operator %d",
                           ex->id, name, (int)op);
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
  if (op == ORION_APPLY_FUNC) {
    int rc = orion_capture_decode(L, apply_blob, len, resolve, ex, msg,
                                  sizeof msg);
    if (rc != 0)
      return orion_error_set(err, rc,
                             "executor %d: buffer '%s': apply function: %s",
                             ex->id, name, msg);
    ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->id = id;
  snprintf(b->name, sizeof b->name, "%s", name);
  b->target = t->a;
  orion_array_retain(t->a);
  b->op = op;
  b->apply_ref = ref;
  b->flush = flush;
  b->pend.positions = t->a->nnz;
  luaL_setmetatable(L, BUFFER_MT);
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)id);
  lua_pop(L, 2);
  ex->bufs[ex->nbufs++] = b;
  if (flush > 0)
    ex->nflushn++;
  return 0;
}

/* A little-endian u64 at p, stored or loaded. */
static void le64_put(unsigned char *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, 8);
#else
  int s;
  for (s = 0; s < 8; s++)
    p[s] = (unsigned char)(v >> (8 * s));
#endif
}

static uint64_t le64_get(const unsigned char *p) {
  uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&v, p, 8);
#else
  int s;
  for (s = 0; s < 8; s++)
    v |= (uint64_t)p[s] << (8 * s);
#endif
  return v;
}

/* The items' value bits as little-endian u64s, staged in blocks (one
 * append per block instead of one per value). */
static void put_values(orion_buf *b, const orion_pend_item *items,
                       int64_t n) {
  unsigned char stage[8 * 1024];
  int64_t i = 0;
  while (i < n) {
    int64_t m = n - i < 1024 ? n - i : 1024, k;
    for (k = 0; k < m; k++)
      le64_put(stage + 8 * k, (uint64_t)items[i + k].val.i);
    orion_buf_append(b, stage, (size_t)m * 8);
    i += m;
  }
}

void orion_flush_items_put(orion_buf *b, const orion_pend_item *items,
                           int64_t n) {
  int64_t i, nruns = 0;
  for (i = 0; i < n; i++)
    if (i == 0 || items[i].key != items[i - 1].key + 1)
      nruns++;
  orion_buf_u64(b, (uint64_t)n);
  if (nruns * 2 >= n) { /* scattered keys: key and value per item */
    orion_buf_u64(b, 0);
    for (i = 0; i < n; i++) {
      orion_pw_i64(b, items[i].key);
      orion_buf_u64(b, (uint64_t)items[i].val.i);
    }
    return;
  }
  orion_buf_u64(b, (uint64_t)nruns);
  for (i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && items[j].key == items[j - 1].key + 1)
      j++;
    orion_pw_i64(b, items[i].key);
    orion_buf_u64(b, (uint64_t)(j - i));
    i = j;
  }
  put_values(b, items, n);
}

int64_t orion_flush_items_get(orion_reader *r, orion_pend_item **out) {
  int64_t n = orion_pr_count(r, 8), nruns, i, k, at = 0;
  orion_pend_item *items;
  const char *runs;
  *out = NULL;
  nruns = orion_pr_i64(r);
  if (r->bad || nruns < 0 || nruns > n ||
      (nruns == 0 && (uint64_t)n > r->left / 16) ||
      (nruns > 0 && r->left != (size_t)(nruns * 16 + n * 8))) {
    r->bad = 1;
    return -1;
  }
  if (n == 0)
    return 0;
  items = orion_malloc(sizeof *items * (size_t)n);
  if (items == NULL)
    return -1;
  if (nruns == 0) {
    for (i = 0; i < n; i++) {
      items[i].key = orion_pr_i64(r);
      items[i].val.i = orion_pr_i64(r);
    }
  } else {
    runs = r->p;
    r->p += nruns * 16;
    r->left -= (size_t)nruns * 16;
    for (k = 0; k < nruns; k++) {
      int64_t first = (int64_t)le64_get((const unsigned char *)runs + k * 16);
      int64_t count =
          (int64_t)le64_get((const unsigned char *)runs + k * 16 + 8);
      if (first < 0 || count < 1 || count > n - at ||
          first > INT64_MAX - count) {
        orion_free(items);
        r->bad = 1;
        return -1;
      }
      for (i = 0; i < count; i++)
        items[at + i].key = first + i;
      at += count;
    }
    if (at != n) {
      orion_free(items);
      r->bad = 1;
      return -1;
    }
    for (i = 0; i < n; i++) /* left was checked above */
      items[i].val.i =
          (int64_t)le64_get((const unsigned char *)r->p + 8 * i);
    r->p += 8 * n;
    r->left -= (size_t)(8 * n);
  }
  if (r->bad) {
    orion_free(items);
    return -1;
  }
  *out = items;
  return n;
}

int64_t orion_exec_buffer_pending(orion_exec *ex, int64_t id) {
  exec_buffer *b = find_buffer(ex, id);
  return b != NULL ? b->pend.ndirty : -1;
}

typedef struct flush_ctx {
  exec_buffer *b;
  const pend_item *items;
  int64_t n, cur;
} flush_ctx;

/* Runs inside lua_pcall: applies the taken items to the target in order;
 * f->cur names the item that failed. */
static int apply_items(lua_State *L) {
  flush_ctx *f = lua_touserdata(L, 1);
  exec_buffer *b = f->b;
  orion_array *a = b->target;
  int isint = orion_type_is_int(a->type);
  if (b->op == ORION_APPLY_FUNC)
    lua_rawgeti(L, LUA_REGISTRYINDEX, b->apply_ref); /* index 2 */
  for (f->cur = 0; f->cur < f->n; f->cur++) {
    int64_t k = f->items[f->cur].key;
    pval v = f->items[f->cur].val;
    if (b->op == ORION_APPLY_FUNC) {
      lua_pushvalue(L, 2);
      push_elem(L, a, k);
      if (isint)
        lua_pushinteger(L, (lua_Integer)v.i);
      else
        lua_pushnumber(L, v.d);
      lua_call(L, 2, 1);
      store_elem(L, a, "buffer", b->name, k, -1);
      lua_pop(L, 1);
    } else { /* integer targets (apply_taken applies float ones) */
      int64_t x = v.i;
      if (b->op == ORION_APPLY_ADD) /* wraps like Lua integers */
        x = (int64_t)((uint64_t)orion_value_get_i64(a->values, a->type, k) +
                      (uint64_t)v.i);
      if (a->type == ORION_I32 && (x < INT32_MIN || x > INT32_MAX))
        luaL_error(L, "cannot store %I in i32 buffer '%s': out of range",
                   (LUAI_UACINT)x, b->name);
      orion_value_set_i64(a->values, a->type, k, x);
    }
  }
  return 0;
}

/* Applies and clears buffer b's pending elements; restarts its count. */
static int apply_taken(orion_exec *ex, exec_buffer *b, const pend_item *items,
                       int64_t n, orion_error *err);

/* Takes b's pending elements and applies them to the target (or hands them
 * to the flush sink); restarts its count. */
static int flush_buffer(orion_exec *ex, exec_buffer *b, orion_error *err) {
  pend_item *items;
  int64_t n;
  int rc;
  b->count = 0;
  if (b->target == NULL || b->pend.ndirty == 0)
    return 0;
  rc = pend_take(&b->pend, &items, &n);
  if (rc != 0)
    return orion_error_set(err, rc,
                           "executor %d: buffer '%s': out of memory flushing "
                           "%lld pending elements",
                           ex->id, b->name, (long long)b->pend.ndirty);
  if (ex->sink != NULL)
    rc = ex->sink(ex->sink_ud, b->id, orion_type_is_int(b->target->type),
                  items, n, err);
  else
    rc = apply_taken(ex, b, items, n, err);
  orion_free(items);
  return rc;
}

/* Applies items[0..n) to b's target with b's operator, in order. */
static int apply_taken(orion_exec *ex, exec_buffer *b, const pend_item *items,
                       int64_t n, orion_error *err) {
  lua_State *L = ex->L;
  flush_ctx f;
  int rc = 0, top = lua_gettop(L), msgh = 0;
  if (n == 0)
    return 0;
  if (b->op != ORION_APPLY_FUNC && (b->target->type == ORION_F32 ||
                                    b->target->type == ORION_F64)) {
    /* Float targets cannot fail: apply_items' arithmetic without the
     * protected call and the per-element type dispatch. */
    int64_t i;
    if (b->target->type == ORION_F64) {
      double *t = (double *)b->target->values;
      for (i = 0; i < n; i++)
        t[items[i].key] = b->op == ORION_APPLY_ADD
                              ? items[i].val.d + t[items[i].key]
                              : items[i].val.d;
    } else {
      float *t = (float *)b->target->values;
      for (i = 0; i < n; i++)
        t[items[i].key] =
            (float)(b->op == ORION_APPLY_ADD
                        ? items[i].val.d + (double)t[items[i].key]
                        : items[i].val.d);
    }
    return 0;
  }
  f.n = n;
  f.b = b;
  f.items = items;
  f.cur = 0;
  if (b->op == ORION_APPLY_FUNC) {
    lua_pushcfunction(L, traceback);
    msgh = top + 1;
  }
  lua_pushcfunction(L, apply_items);
  lua_pushlightuserdata(L, &f);
  if (lua_pcall(L, 1, 0, msgh) != LUA_OK) {
    char key[256];
    key_string(b->target, items[f.cur < f.n ? f.cur : f.n - 1].key, key,
               sizeof key);
    rc = orion_error_set(err, ORION_EBODY,
                         "executor %d, buffer '%s', key %s: %s", ex->id,
                         b->name, key, lua_tostring(L, -1));
  }
  lua_settop(L, top);
  return rc;
}

void orion_exec_set_flush_sink(orion_exec *ex, orion_flush_sink sink,
                               void *ud) {
  ex->sink = sink;
  ex->sink_ud = ud;
}

int orion_exec_buffer_apply(orion_exec *ex, int64_t id,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err) {
  exec_buffer *b = find_buffer(ex, id);
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
  return apply_taken(ex, b, items, n, err);
}

int orion_exec_flush(orion_exec *ex, int at_loop_end, orion_error *err) {
  int i;
  for (i = 0; i < ex->nbufs; i++) {
    exec_buffer *b = ex->bufs[i];
    if (at_loop_end || b->flush == ORION_FLUSH_BLOCK) {
      int rc = flush_buffer(ex, b, err);
      if (rc != 0)
        return rc;
    }
  }
  return 0;
}

/* After each element of a block: counts it for the n-element buffers and
 * flushes those whose count is reached. */
static int count_element(orion_exec *ex, orion_error *err) {
  int i;
  for (i = 0; i < ex->nbufs; i++) {
    exec_buffer *b = ex->bufs[i];
    if (b->flush > 0 && ++b->count >= b->flush) {
      int rc = flush_buffer(ex, b, err);
      if (rc != 0)
        return rc;
    }
  }
  return 0;
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
    ea->buf = NULL;
    snprintf(ea->name, sizeof ea->name, "%s", name);
    luaL_setmetatable(L, ARRAY_MT);
    return 0;
  }
  if (kind == ORION_CAPTURE_BUFFER) {
    exec_buffer *b = find_buffer(ex, id);
    exec_array *ea;
    if (b == NULL)
      return -1;
    ea = lua_newuserdatauv(L, sizeof *ea, 1);
    ea->a = NULL;
    ea->buf = b;
    snprintf(ea->name, sizeof ea->name, "%s", name);
    luaL_setmetatable(L, ARRAY_MT);
    lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
    lua_rawgeti(L, -1, (lua_Integer)id);
    lua_setiuservalue(L, -3, 1);
    lua_pop(L, 1);
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
  orion_exec_set_compiled(ex, NULL, NULL, 0);
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
  orion_error *err;
  int flush_rc; /* an n-element flush failed (err is set) */
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
      store_elem(L, a, "array", "the iterated array (returned value)",
                 c->cur, -1);
    lua_pop(L, 1);
    if (c->ex->nflushn > 0 &&
        (c->flush_rc = count_element(c->ex, c->err)) != 0)
      return 0;
  }
  return 0;
}

/* ======================================================================
 * Compiled bodies (util/cbody.h).
 * ====================================================================== */

int orion_exec_set_compiled(orion_exec *ex, orion_cbody_fn fn,
                            const orion_cslot *slots, int nslots) {
  orion_cslot *cp = NULL;
  if (fn != NULL && nslots > 0) {
    int i;
    cp = orion_malloc(sizeof *cp * (size_t)nslots);
    if (cp == NULL)
      return ORION_ENOMEM;
    for (i = 0; i < nslots; i++) {
      cp[i] = slots[i];
      cp[i].name = NULL;
    }
  }
  orion_free(ex->cslots);
  ex->cslots = cp;
  ex->ncslots = fn != NULL ? nslots : 0;
  ex->cfn = fn;
  return 0;
}

int orion_exec_compiled(const orion_exec *ex) { return ex->cfn != NULL; }

static void carray_of(orion_carray *ca, const orion_array *a) {
  int d;
  memset(ca, 0, sizeof *ca);
  ca->values = a->values;
  ca->keys = a->sparse ? a->keys : NULL;
  ca->type = (int32_t)a->type;
  ca->ndims = a->ndims;
  ca->nnz = a->nnz;
  for (d = 0; d < a->ndims; d++) {
    ca->dims[d] = a->dims[d];
    ca->strides[d] = a->sparse ? 0 : a->strides[d];
  }
}

static orion_cval cbuf_get(orion_cctx *c, void *h, int64_t key) {
  exec_buffer *b = h;
  const pval *v = pend_lookup(&b->pend, key);
  orion_cval out;
  (void)c;
  out.i = 0;
  if (v != NULL)
    out.i = v->i; /* the same bits either way */
  return out;
}

static int cbuf_set(orion_cctx *c, void *h, int64_t key, orion_cval v) {
  exec_buffer *b = h;
  pval *slot;
  if (b->target == NULL) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s' is no longer bound on this executor", b->name);
    return 1;
  }
  if (b->target->type == ORION_I32 && b->op == ORION_APPLY_REPLACE &&
      (v.i < INT32_MIN || v.i > INT32_MAX)) {
    snprintf(c->err, sizeof c->err,
             "cannot store %lld in i32 buffer '%s': out of range",
             (long long)v.i, b->name);
    return 1;
  }
  slot = pend_slot(&b->pend, key);
  if (slot == NULL) {
    snprintf(c->err, sizeof c->err,
             "buffer '%s': out of memory for pending writes", b->name);
    return 1;
  }
  slot->i = v.i;
  return 0;
}

static int celem_done(orion_cctx *c) {
  orion_exec *ex = c->ud;
  orion_error err;
  orion_error_clear(&err);
  if (count_element(ex, &err) != 0) {
    snprintf(c->err, sizeof c->err, "%s", err.msg);
    return 2; /* a flush failed: err is already the whole report */
  }
  return 0;
}

/* Runs the compiled body over [lo, hi) of a; errors as orion_exec_run. */
static int run_compiled(orion_exec *ex, orion_array *a, int64_t lo, int64_t hi,
                        uint64_t seed, int64_t block, orion_error *err) {
  orion_cctx *c;
  orion_carray *arrays;
  orion_cbuffer *bufs;
  orion_cacc *accs;
  orion_cval *consts;
  orion_luarand rng;
  acc_slot **acc_of;
  int i, na = 0, nb = 0, nc = 0, nk = 0, rc = 0;
  size_t n = (size_t)ex->ncslots + 1;
  c = orion_calloc(1, sizeof *c);
  arrays = orion_calloc(n, sizeof *arrays);
  bufs = orion_calloc(n, sizeof *bufs);
  accs = orion_calloc(n, sizeof *accs);
  consts = orion_calloc(n, sizeof *consts);
  acc_of = orion_calloc(n, sizeof *acc_of);
  if (c == NULL || arrays == NULL || bufs == NULL || accs == NULL ||
      consts == NULL || acc_of == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    goto done;
  }
  for (i = 0; i < ex->ncslots && rc == 0; i++) {
    const orion_cslot *sl = &ex->cslots[i];
    switch (sl->kind) {
    case ORION_CSLOT_ARRAY: {
      binding *bd = find_array(ex, sl->id);
      if (bd == NULL || bd->a->sparse)
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: array %lld of the compiled body "
                             "is not bound (or sparse)",
                             ex->id, (long long)sl->id);
      else
        carray_of(&arrays[na++], bd->a);
      break;
    }
    case ORION_CSLOT_BUFFER: {
      exec_buffer *bf = find_buffer(ex, sl->id);
      int d;
      if (bf == NULL || bf->target == NULL) {
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: buffer %lld of the compiled body "
                             "is not bound",
                             ex->id, (long long)sl->id);
        break;
      }
      bufs[nb].h = bf;
      bufs[nb].type = (int32_t)bf->target->type;
      bufs[nb].ndims = bf->target->ndims;
      bufs[nb].op = (int32_t)bf->op;
      for (d = 0; d < bf->target->ndims; d++) {
        bufs[nb].dims[d] = bf->target->dims[d];
        bufs[nb].strides[d] = bf->target->strides[d];
      }
      nb++;
      break;
    }
    case ORION_CSLOT_ACC: {
      acc_slot *as = find_acc(ex, sl->id);
      if (as == NULL) {
        rc = orion_error_set(err, ORION_EINVAL,
                             "executor %d: accumulator %lld of the compiled "
                             "body is not bound",
                             ex->id, (long long)sl->id);
        break;
      }
      acc_of[nk] = as;
      accs[nk].op = (int32_t)as->op;
      accs[nk].has = as->val.has;
      accs[nk].isint = as->val.isint;
      accs[nk].i = (int64_t)as->val.i;
      accs[nk].d = (double)as->val.d;
      nk++;
      break;
    }
    case ORION_CSLOT_CONST:
      if (sl->isint)
        consts[nc++].i = sl->ival;
      else
        consts[nc++].d = sl->fval;
      break;
    }
  }
  if (rc != 0)
    goto done;
  c->abi = ORION_CBODY_ABI;
  c->executor = ex->id;
  carray_of(&c->iter, a);
  c->arrays = arrays;
  c->bufs = bufs;
  c->accs = accs;
  c->consts = consts;
  /* math.random: the stream math.randomseed(n) starts in the interpreter. */
  orion_luarand_seed(&rng, (int64_t)orion_seed_mix(seed, (uint64_t)ex->loop_id,
                                                  (uint64_t)block),
                     0);
  memcpy(c->rng, rng.s, sizeof c->rng);
  c->buf_get = cbuf_get;
  c->buf_set = cbuf_set;
  c->elem_done = ex->nflushn > 0 ? celem_done : NULL;
  c->ud = ex;
  c->cur = lo;
  {
    int r = ex->cfn(c, lo, hi);
    for (i = 0; i < nk; i++) { /* partials come back also on error */
      acc_of[i]->val.has = accs[i].has;
      acc_of[i]->val.isint = accs[i].isint;
      acc_of[i]->val.i = (lua_Integer)accs[i].i;
      acc_of[i]->val.d = (lua_Number)accs[i].d;
    }
    if (r == 2) {
      rc = orion_error_set(err, ORION_EBODY, "%s", c->err);
    } else if (r != 0) {
      char key[256];
      key_string(a, c->cur >= lo && c->cur < hi ? c->cur : lo, key,
                 sizeof key);
      rc = orion_error_set(err, ORION_EBODY, "executor %d, element %s: %s",
                           ex->id, key, c->err);
    }
  }
done:
  orion_free(c);
  orion_free(arrays);
  orion_free(bufs);
  orion_free(accs);
  orion_free(consts);
  orion_free(acc_of);
  return rc;
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
  if (ex->cfn != NULL)
    return run_compiled(ex, b->a, lo, hi, seed, block, err);
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
  c.err = err;
  c.flush_rc = 0;
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
  return c.flush_rc;
}

/* ======================================================================
 * Array data for native kernels (orion.nn, lua/nn.c).
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
  return 1;
}

int orion_exec_view_pend(const orion_exec_view *v, int64_t first,
                         const float *x, const float *x0, int64_t n,
                         double alpha, int set_mode) {
  exec_buffer *b = v->buffer;
  int64_t i, k0 = v->off + first;
  if (b == NULL || b->target == NULL || orion_type_is_int(b->target->type))
    return ORION_EINVAL;
  if (n > 0 && b->pend.vals == NULL && b->pend.hkeys == NULL) {
    /* Large bulk writes go to the dense form at once. */
    if (n >= b->pend.positions / 4 && dense_alloc(&b->pend) != 0)
      return ORION_ENOMEM;
  }
  if (b->pend.vals != NULL) { /* dense: mark the bits, then the values */
    pending *p = &b->pend;
    for (i = 0; i < n; i++)
      if (dense_mark(p, k0 + i) != 0)
        return ORION_ENOMEM;
    for (i = 0; i < n; i++) {
      double xi = x0 != NULL ? (double)x[i] - (double)x0[i] : (double)x[i];
      pval *slot = &p->vals[k0 + i];
      slot->d = set_mode ? xi : slot->d + alpha * xi;
    }
    return 0;
  }
  for (i = 0; i < n; i++) {
    pval *slot = pend_slot(&b->pend, k0 + i);
    if (slot == NULL)
      return ORION_ENOMEM;
    double xi = x0 != NULL ? (double)x[i] - (double)x0[i] : (double)x[i];
    slot->d = set_mode ? xi : slot->d + alpha * xi;
  }
  return 0;
}
