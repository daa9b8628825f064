/* The driver-side `orion` module.  See lua/orion.h and docs/lua-api.md. */
#include "config.h"

#include "lua/orion.h"

#include <lauxlib.h>
#include <lualib.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/array.h"
#include "dsm/arrayfile.h"
#include "dsm/ckpt.h"
#include "dsm/loader.h"
#include "dsm/partition.h"
#include "dsm/status.h"
#include "dsm/synth.h"
#include "executor/accum.h"
#include "executor/capture.h"
#include "lua/checkpoint.h"
#include "executor/exec.h"
#include "scheduler/dist.h"
#include "scheduler/jobpage.h"
#include "scheduler/module.h"
#include "executor/nn.h"
#include "lua/pfor.h"
#include "lua/orion_ragged.h"
#include "lua/permute.h"
#include "lua/tfevents.h"
#include "lua/textimport.h"
#include "dsm/plan.h"
#include "util/alloc.h"
#include "util/atomic.h"
#include "util/ccomp.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"
#include "util/outpath.h"
#include "util/progress.h"
#include "util/rng.h"


/* ======================================================================
 * Module state, one per driver Lua state.
 * ====================================================================== */


static int state_gc(lua_State *L) {
  mod_state *s = lua_touserdata(L, 1);
  orion__dist_stop(s);
  orion_exec_free(s->ex);
  s->ex = NULL;
  if (s->metrics != NULL)
    fclose(s->metrics);
  s->metrics = NULL;
  orion_free(s->metrics_path);
  s->metrics_path = NULL;
  orion_free(s->predict);
  s->predict = NULL;
  return 0;
}

void orion_module_configure(lua_State *L, const orion_config *cfg) {
  mod_state *s;
  luaL_requiref(L, "orion", luaopen_orion, 0);
  lua_pop(L, 1);
  s = orion__state(L);
  s->seed = cfg->seed;
  orion_free(s->metrics_path);
  s->metrics_path = cfg->metrics_path ? orion_strdup(cfg->metrics_path) : NULL;
  orion_free(s->predict);
  s->predict = cfg->predict ? orion_strdup(cfg->predict) : NULL;
  s->loop_metrics = cfg->loop_metrics;
  orion_log_set_quiet(cfg->quiet);
  orion_log_set_verbose(cfg->verbose);
  s->stall_seconds = cfg->stall_seconds;
  s->loop_timeout = cfg->loop_timeout;
  s->bandwidth_mbps = cfg->bandwidth_mbps;
  s->explain = cfg->explain || cfg->explain_only > 0;
  s->explain_only = cfg->explain_only;
  s->verify = cfg->verify;
  s->fast = cfg->fast_math;
  s->nexec = cfg->executors;
  s->partitions =
      cfg->partitions > 0 ? cfg->partitions : ORION_DEFAULT_PARTITIONS;
  s->auto_partitions = cfg->partitions == ORION_PARTITIONS_AUTO;
  s->allow_io = cfg->allow_io;
  s->copts = cfg->cluster;
  orion__checkpoint_configure(L, cfg->checkpoint_dir, cfg->resume,
                              cfg->force);
}

int orion_module_stopped(lua_State *L, int idx, char *line, size_t n) {
  return orion__explain_stopped(L, idx, line, n);
}

/* ======================================================================
 * DistArray userdata.
 * ====================================================================== */


static int array_gc(lua_State *L) {
  darray *d = luaL_checkudata(L, 1, ARRAY_MT);
  orion__dist_forget(orion__state(L), d);
  if (d->have_bs)
    orion_blockset_free(&d->bs);
  d->have_bs = 0;
  orion_array_release(d->a);
  d->a = NULL;
  orion__perm_free(d);
  return 0;
}

/* Reads 1-based keys from Lua args first..first+n-1 into 0-based keys. */
static void read_keys(lua_State *L, const orion_array *a, int first,
                      int64_t *keys) {
  int d, nargs = lua_gettop(L) - first + 1;
  if (nargs < a->ndims)
    luaL_error(L, "expected %d keys for a %d-dimensional array, got %d",
               a->ndims, a->ndims, nargs < 0 ? 0 : nargs);
  for (d = 0; d < a->ndims; d++) {
    lua_Integer k = luaL_checkinteger(L, first + d);
    if (k < 1 || k > a->dims[d])
      luaL_error(L, "key %I out of range 1..%I in dimension %d",
                 (LUAI_UACINT)k, (LUAI_UACINT)a->dims[d], d + 1);
    keys[d] = k - 1;
  }
}

static void push_value(lua_State *L, const orion_array *a, int64_t i) {
  if (orion_type_is_int(a->type))
    lua_pushinteger(L, orion_value_get_i64(a->values, a->type, i));
  else
    lua_pushnumber(L, orion_value_get_f64(a->values, a->type, i));
}

/* Stores the number at vidx into element i, checking it fits the type. */
static void set_value(lua_State *L, orion_array *a, int64_t i, int vidx) {
  if (lua_type(L, vidx) != LUA_TNUMBER)
    luaL_error(L, "expected a number to store in a %s array, got a %s",
               orion_type_name(a->type), luaL_typename(L, vidx));
  if (orion_type_is_int(a->type)) {
    int isint;
    lua_Integer v = lua_tointegerx(L, vidx, &isint);
    if (!isint)
      luaL_error(L, "cannot store %s in a %s array: not an integer",
                 lua_tostring(L, vidx), orion_type_name(a->type));
    if (a->type == ORION_I32 && (v < INT32_MIN || v > INT32_MAX))
      luaL_error(L, "cannot store %I in an i32 array: out of range",
                 (LUAI_UACINT)v);
    orion_value_set_i64(a->values, a->type, i, v);
  } else {
    orion_value_set_f64(a->values, a->type, i, lua_tonumber(L, vidx));
  }
}

/* The original keys of element e of da's array (lua/permute.h). */
static void push_keys_of(lua_State *L, const darray *da, int64_t e) {
  const orion_array *a = da->a;
  int d;
  for (d = 0; d < a->ndims; d++) {
    int64_t k = a->sparse ? a->keys[e * a->ndims + d]
                          : (e / a->strides[d]) % a->dims[d];
    lua_pushinteger(L, orion__perm_key_out(da, d, k) + 1);
  }
}

static int m_dims(lua_State *L) {
  darray *d = orion__check_array_only(L, 1);
  int i;
  luaL_checkstack(L, d->a->ndims, NULL);
  for (i = 0; i < d->a->ndims; i++)
    lua_pushinteger(L, orion__perm_dim(d, i));
  return d->a->ndims;
}

static int m_nnz(lua_State *L) {
  lua_pushinteger(L, orion__check_array_only(L, 1)->a->nnz);
  return 1;
}

static int m_type(lua_State *L) {
  lua_pushstring(L, orion_type_name(orion__check_array_only(L, 1)->a->type));
  return 1;
}

static int m_is_sparse(lua_State *L) {
  lua_pushboolean(L, orion__check_array_only(L, 1)->a->sparse);
  return 1;
}

static int m_get(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  int64_t keys[ORION_MAX_DIMS], e;
  read_keys(L, d->a, 2, keys);
  orion__perm_keys_in(L, d, keys);
  e = orion_array_find(d->a, keys);
  if (e < 0)
    lua_pushnil(L);
  else
    push_value(L, d->a, e);
  return 1;
}

static int m_set(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  int64_t keys[ORION_MAX_DIMS], e;
  if (lua_gettop(L) != d->a->ndims + 2)
    return luaL_error(L, "set expects %d keys and a value", d->a->ndims);
  read_keys(L, d->a, 2, keys);
  orion__perm_keys_in(L, d, keys);
  e = orion_array_find(d->a, keys);
  if (e < 0)
    return luaL_error(L, "set: no stored element at that key (a sparse "
                         "array's elements are fixed when it is loaded)");
  set_value(L, d->a, e, d->a->ndims + 2);
  d->gen++;
  return 0;
}

/* A:assign(v) sets every element of a dense array to the number v;
 * A:assign(t) stores the list t, which holds exactly A:nnz() numbers in
 * the order of A:to_table() flattened (the last key fastest).  One call
 * instead of one A:set per element, for the vectors a script uploads
 * each pass (apps/lr/lr_newton.lua).  A permuted array is refused: its
 * storage order is not its key order. */
static int m_assign(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  orion_array *a = d->a;
  int64_t e, n;
  if (a->sparse)
    return luaL_error(L, "assign: the array is sparse (its elements are "
                         "fixed when it is loaded); use A:set");
  if (orion__permuted(d))
    return luaL_error(L, "assign: the array's keys are permuted; use A:set");
  if (lua_type(L, 2) == LUA_TNUMBER) {
    for (e = 0; e < a->nnz; e++)
      set_value(L, a, e, 2);
    d->gen++;
    return 0;
  }
  if (!lua_istable(L, 2))
    return luaL_error(L, "assign expects a number or a list of %I numbers, "
                         "got a %s",
                      (LUAI_UACINT)a->nnz, luaL_typename(L, 2));
  n = (int64_t)lua_rawlen(L, 2);
  if (n != a->nnz)
    return luaL_error(L, "assign: the list has %I values, the array %I "
                         "elements",
                      (LUAI_UACINT)n, (LUAI_UACINT)a->nnz);
  /* Every value is checked before any is stored: an error stores none. */
  for (e = 0; e < n; e++) {
    int isint = 1;
    lua_Integer v = 0;
    if (lua_rawgeti(L, 2, (lua_Integer)e + 1) != LUA_TNUMBER)
      return luaL_error(L, "assign: value %I is a %s, not a number",
                        (LUAI_UACINT)e + 1, luaL_typename(L, -1));
    if (orion_type_is_int(a->type))
      v = lua_tointegerx(L, -1, &isint);
    if (!isint || (a->type == ORION_I32 && (v < INT32_MIN || v > INT32_MAX)))
      return luaL_error(L, "assign: value %I (%s) cannot be stored in the %s array",
                        (LUAI_UACINT)e + 1, lua_tostring(L, -1),
                        orion_type_name(a->type));
    lua_pop(L, 1);
  }
  for (e = 0; e < n; e++) {
    lua_rawgeti(L, 2, (lua_Integer)e + 1);
    set_value(L, a, e, -1);
    lua_pop(L, 1);
  }
  d->gen++;
  return 0;
}

/* A.name: the methods (upvalue 1).  A[key] and A[key] = v are a body's
 * syntax; on the driver they would read a method slot (nil) or fail
 * with Lua's own "attempt to index" message, so both say what to write. */
static int array_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
  }
  orion__check_array(L, 1);
  return luaL_error(L, "A[%s]: an array's elements are read with "
                       "A:get(key...) outside a parallel_for body (A[k] "
                       "is the body's syntax)",
                    luaL_tolstring(L, 2, NULL));
}

static int array_newindex(lua_State *L) {
  orion__check_array(L, 1);
  return luaL_error(L, "A[%s] = ...: an array's elements are written with "
                       "A:set(key..., value) outside a parallel_for body "
                       "(A[k] = v is the body's syntax)",
                    luaL_tolstring(L, 2, NULL));
}

#define TO_TABLE_LIMIT 10000000

static void dense_to_table(lua_State *L, const orion_array *a, int depth,
                           int64_t off) {
  int64_t k;
  lua_createtable(L, (int)a->dims[depth], 0);
  for (k = 0; k < a->dims[depth]; k++) {
    int64_t pos = off + k * a->strides[depth];
    if (depth + 1 == a->ndims)
      push_value(L, a, pos);
    else
      dense_to_table(L, a, depth + 1, pos);
    lua_rawseti(L, -2, k + 1);
  }
}

static int m_to_table(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  const orion_array *a = d->a;
  int64_t e;
  if (a->nnz > TO_TABLE_LIMIT)
    return luaL_error(L,
                      "to_table: %I elements is too many (limit %d); use "
                      "save() for large arrays",
                      (LUAI_UACINT)a->nnz, TO_TABLE_LIMIT);
  luaL_checkstack(L, 2 * ORION_MAX_DIMS + 4, NULL);
  if (!a->sparse) {
    orion_array *u = orion__unpermuted(L, d, 0);
    dense_to_table(L, u, 0, 0);
    orion_array_release(u);
    return 1;
  }
  lua_createtable(L, (int)a->nnz, 0);
  for (e = 0; e < a->nnz; e++) {
    int dd;
    lua_createtable(L, a->ndims + 1, 0);
    for (dd = 0; dd < a->ndims; dd++) {
      int64_t k = a->keys[e * a->ndims + dd];
      lua_pushinteger(L, orion__perm_key_out(d, dd, k) + 1);
      lua_rawseti(L, -2, dd + 1);
    }
    push_value(L, a, e);
    lua_rawseti(L, -2, a->ndims + 1);
    lua_rawseti(L, -2, e + 1);
  }
  return 1;
}

/* A:map(f): a new array with the same keys, values f(k1, ..., kn, v). */
static int m_map(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  orion_error err;
  orion_array *c;
  darray *nd;
  int64_t e;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  orion_error_clear(&err);
  c = orion_array_copy(d->a, &err);
  if (c == NULL)
    orion__raise(L, &err);
  nd = orion__push_array(L, c);
  orion__perm_inherit(nd, d);
  luaL_checkstack(L, ORION_MAX_DIMS + 4, NULL);
  for (e = 0; e < c->nnz; e++) {
    lua_pushvalue(L, 2);
    push_keys_of(L, nd, e);
    push_value(L, c, e);
    lua_call(L, c->ndims + 1, 1);
    if (!lua_isnil(L, -1))
      set_value(L, nd->a, e, -1);
    lua_pop(L, 1);
  }
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int m_save(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  const char *path = luaL_checkstring(L, 2);
  const char *fmt = NULL;
  orion_array *u;
  orion_error err;
  int rc;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "format");
    fmt = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  if (fmt == NULL)
    fmt = ends_with(path, ".txt") ? "text" : "binary";
  if (strcmp(fmt, "text") != 0 && strcmp(fmt, "binary") != 0)
    return luaL_error(L, "save: format must be \"binary\" or \"text\", not "
                         "\"%s\"", fmt);
  orion_error_clear(&err);
  u = orion__unpermuted(L, d, 0); /* the file holds the original keys */
  if (strcmp(fmt, "text") == 0)
    rc = orion_array_save_text(u, path, &err);
  else
    rc = orion_array_save(u, path, &err);
  orion_array_release(u);
  if (rc != 0)
    orion__raise(L, &err);
  return 0;
}

static int m_histogram(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  lua_Integer dim = luaL_checkinteger(L, 2);
  lua_Integer bins = luaL_checkinteger(L, 3);
  int64_t *counts;
  orion_array *u;
  int b;
  if (dim < 1 || dim > d->a->ndims)
    return luaL_error(L, "histogram: dimension %I out of range 1..%d",
                      (LUAI_UACINT)dim, d->a->ndims);
  if (bins < 1 || bins > 10000000)
    return luaL_error(L, "histogram: bins must be in 1..10000000");
  u = orion__unpermuted(L, d, 0); /* bins of the original keys */
  counts = orion_malloc(sizeof *counts * (size_t)bins);
  if (counts == NULL) {
    orion_array_release(u);
    return luaL_error(L, "out of memory");
  }
  orion_array_histogram(u, (int)dim - 1, (int)bins, counts);
  orion_array_release(u);
  lua_createtable(L, (int)bins, 0);
  for (b = 0; b < bins; b++) {
    lua_pushinteger(L, counts[b]);
    lua_rawseti(L, -2, b + 1);
  }
  orion_free(counts);
  return 1;
}

static int m_split(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  double frac = luaL_checknumber(L, 2);
  lua_Integer seed = luaL_optinteger(L, 3, (lua_Integer)orion__state(L)->seed);
  orion_array *rest, *held;
  orion_error err;
  orion_error_clear(&err);
  if (orion_array_split(d->a, frac, (uint64_t)seed, &rest, &held, &err) != 0)
    orion__raise(L, &err);
  orion__perm_inherit(orion__push_array(L, rest), d);
  orion__perm_inherit(orion__push_array(L, held), d);
  return 2;
}

static int m_tostring(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  luaL_Buffer b;
  int i;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "DistArray(%s, %s, ", orion_type_name(d->a->type),
                  d->a->ragged   ? "ragged"
                  : d->a->sparse ? "sparse"
                                 : "dense");
  luaL_addvalue(&b);
  for (i = 0; i < d->a->ndims; i++) {
    lua_pushfstring(L, "%s%I", i ? "x" : "",
                    (LUAI_UACINT)orion__perm_dim(d, i));
    luaL_addvalue(&b);
  }
  lua_pushfstring(L, ", nnz=%I)", (LUAI_UACINT)d->a->nnz);
  luaL_addvalue(&b);
  luaL_pushresult(&b);
  return 1;
}

static orion_type opt_type(lua_State *L, int idx, const char *key,
                           orion_type def) {
  const char *s = orion__opt_string(L, idx, key, NULL);
  orion_type t;
  if (s == NULL)
    return def;
  if (orion_type_parse(s, &t) != 0)
    luaL_error(L, "option '%s': unknown type \"%s\" (use f32, f64, i32 or "
                  "i64)", key, s);
  return t;
}

/* ======================================================================
 * Creating arrays.
 * ====================================================================== */

static const char *const array_opts[] = {"#",    "type", "init",
                                         "scale", "seed", NULL};

static int make_array(lua_State *L, const char *fn, const char *init_def) {
  int64_t dims[ORION_MAX_DIMS];
  int n, i;
  orion_type t;
  const char *init = init_def;
  double scale, fill = 0;
  uint64_t seed;
  orion_error err;
  orion_array *a;
  darray *d;
  luaL_checktype(L, 1, LUA_TTABLE);
  orion__check_keys(L, 1, fn, array_opts);
  n = (int)lua_rawlen(L, 1);
  if (n < 1 || n > ORION_MAX_DIMS)
    return luaL_error(L, "%s: give 1 to %d dimensions, as {d1, d2, ...}", fn,
                      ORION_MAX_DIMS);
  for (i = 0; i < n; i++) {
    int isint;
    lua_rawgeti(L, 1, i + 1);
    dims[i] = lua_tointegerx(L, -1, &isint);
    if (!isint || dims[i] < 1)
      return luaL_error(L, "%s: dimension %d must be a positive integer", fn,
                        i + 1);
    lua_pop(L, 1);
  }
  t = opt_type(L, 1, "type", ORION_F64);
  lua_getfield(L, 1, "init");
  if (lua_type(L, -1) == LUA_TNUMBER) {
    init = "fill";
    fill = lua_tonumber(L, -1);
  } else if (!lua_isnil(L, -1)) {
    init = lua_tostring(L, -1);
    if (init == NULL)
      return luaL_error(L, "%s: init must be \"zeros\", \"randn\", \"rand\" "
                           "or a number", fn);
  }
  scale = orion__opt_num(L, 1, "scale", 1.0);
  orion_error_clear(&err);
  a = orion_array_new_dense(n, dims, t, &err);
  if (a == NULL)
    orion__raise(L, &err);
  d = orion__push_array(L, a);
  /* Reproducible: an explicit seed, else one derived from the script seed
   * and the array's id. */
  seed = (uint64_t)orion__opt_int(L, 1, "seed",
                           (lua_Integer)orion_seed_mix(orion__state(L)->seed,
                                                       0x6172726179ULL,
                                                       (uint64_t)d->id));
  if (strcmp(init, "zeros") == 0) {
    /* already zero */
  } else if (strcmp(init, "fill") == 0) {
    if (orion_type_is_int(t) &&
        (fill != floor(fill) || fill < -9.2e18 || fill > 9.2e18 ||
         (t == ORION_I32 && (fill < INT32_MIN || fill > INT32_MAX))))
      return luaL_error(L, "%s: init %f does not fit a %s array", fn, fill,
                        orion_type_name(t));
    for (int64_t e = 0; e < a->nnz; e++)
      orion_value_set_f64(a->values, t, e, fill);
  } else if (strcmp(init, "randn") == 0 || strcmp(init, "rand") == 0) {
    orion_rng rng;
    if (orion_type_is_int(t))
      return luaL_error(L, "%s: init \"%s\" needs a float type (f32 or "
                           "f64), not %s", fn, init, orion_type_name(t));
    int normal = init[4] == 'n';
    orion_rng_seed(&rng, seed);
    for (int64_t e = 0; e < a->nnz; e++) {
      double x = normal ? orion_rng_normal(&rng) : orion_rng_uniform(&rng);
      orion_value_set_f64(a->values, t, e, x * scale);
    }
  } else {
    return luaL_error(L, "%s: init must be \"zeros\", \"randn\", \"rand\" or "
                         "a number, not \"%s\"", fn, init);
  }
  return 1;
}

static int l_array(lua_State *L) { return make_array(L, "orion.array", "zeros"); }
static int l_zeros(lua_State *L) { return make_array(L, "orion.zeros", "zeros"); }
static int l_randn(lua_State *L) { return make_array(L, "orion.randn", "randn"); }

static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  orion_array *a;
  orion_error err;
  int rc;
  orion_error_clear(&err);
  /* A checkpoint's array written in parts is put together (dsm/ckpt.h). */
  rc = orion_ckpt_load_path(path, &a, &err);
  if (rc < 0 || (rc == 0 && orion_array_load(path, &a, &err) != 0))
    orion__raise(L, &err);
  orion__push_array(L, a);
  return 1;
}

/* ======================================================================
 * orion.text_file
 * ====================================================================== */

static const char *const text_opts[] = {
    "format", "index_base", "dims", "value_type", "on_error", "sep",
    "header", "key",        "value", "parse",     "nkeys",    "expand",
    "rows",   NULL};

/* The "lines" format: opts.parse(line) returns k1, ..., kn, v, or nil to
 * skip the line. */
static int load_lines(lua_State *L, const char *path, int oidx,
                      int index_base, orion_type vt, int skip) {
  char *data;
  size_t len;
  orion_error err;
  orion_array *a = NULL;
  int64_t lineno = 0, skipped = 0;
  char first_skip[800] = "", label[96];
  orion_progress prog;
  const char *p, *end;
  int ndims = 0, rc;
  lua_getfield(L, oidx, "parse");
  if (!lua_isfunction(L, -1))
    return luaL_error(L, "text_file: format \"lines\" needs opts.parse, a "
                         "function(line) returning keys and a value");
  orion_error_clear(&err);
  if (orion_read_file(path, &data, &len, &err) != 0)
    orion__raise(L, &err);
  snprintf(label, sizeof label, "loading %s", path);
  orion_progress_start(&prog, label, NULL, (int64_t)len);
  p = data;
  end = data + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    int top = lua_gettop(L), nret, d;
    int64_t keys[ORION_MAX_DIMS];
    char problem[256] = "";
    if ((++lineno & 4095) == 0)
      orion_progress_update(&prog, p - data);
    if (n > 0 && p[n - 1] == '\r')
      n--;
    lua_pushvalue(L, -1);
    lua_pushlstring(L, p, n);
    rc = lua_pcall(L, 1, LUA_MULTRET, 0);
    nret = lua_gettop(L) - top;
    if (rc != LUA_OK) {
      snprintf(problem, sizeof problem, "parse function failed: %s",
               lua_tostring(L, -1));
    } else if (nret == 0 || lua_isnil(L, top + 1)) {
      /* a skipped line (comment, header) */
    } else if (ndims != 0 && nret - 1 != ndims) {
      snprintf(problem, sizeof problem,
               "parse returned %d keys, earlier lines had %d", nret - 1,
               ndims);
    } else if (nret < 2 || nret - 1 > ORION_MAX_DIMS) {
      snprintf(problem, sizeof problem,
               "parse must return 1 to %d keys and a value, returned %d "
               "values", ORION_MAX_DIMS, nret);
    } else {
      for (d = 0; d < nret - 1 && problem[0] == '\0'; d++) {
        int isint;
        lua_Integer k = lua_tointegerx(L, top + 1 + d, &isint);
        if (!isint)
          snprintf(problem, sizeof problem, "key %d is not an integer", d + 1);
        else if (k < index_base)
          snprintf(problem, sizeof problem,
                   "key %lld in position %d is below the index base %d",
                   (long long)k, d + 1, index_base);
        else
          keys[d] = k - index_base;
      }
      if (problem[0] == '\0') {
        int64_t v = 0; /* room for any element */
        const char *bad;
        if (ndims == 0) {
          ndims = nret - 1;
          a = orion_array_new_sparse(ndims, vt, &err);
          if (a == NULL) {
            orion_free(data);
            orion__raise(L, &err);
          }
        }
        if ((bad = orion__to_elem(L, top + nret, vt, &v)) != NULL)
          snprintf(problem, sizeof problem, "%s", bad);
        else if (orion_array_push(a, keys, &v) != 0) {
          orion_free(data);
          orion_array_release(a);
          return luaL_error(L, "%s:%I: out of memory", path,
                            (LUAI_UACINT)lineno);
        }
      }
    }
    lua_settop(L, top);
    if (problem[0] != '\0') {
      char msg[768];
      snprintf(msg, sizeof msg, "%s:%lld: %s: \"%.*s\"", path,
               (long long)lineno, problem, (int)(n > 80 ? 80 : n), p);
      if (!skip) {
        orion_free(data);
        orion_array_release(a);
        return luaL_error(L, "%s", msg);
      }
      if (skipped++ == 0)
        snprintf(first_skip, sizeof first_skip, "%s", msg);
    }
    p = nl ? nl + 1 : end;
  }
  orion_progress_update(&prog, (int64_t)len);
  orion_progress_end(&prog);
  orion_free(data);
  lua_pop(L, 1);
  if (a == NULL)
    return luaL_error(L, "%s: no elements (the parse function skipped every "
                         "line)", path);
  if (skipped > 0)
    orion_log_info("%s: skipped %lld malformed lines (first: %s)", path,
                   (long long)skipped, first_skip);
  orion__push_array(L, a);
  return 1;
}

static int l_text_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const char *fmt, *on_error, *sep;
  orion_load_opts o;
  orion_load_result res;
  orion_error err;
  int64_t dims[ORION_MAX_DIMS], cols[ORION_MAX_DIMS];
  int ndims, ncols, oidx = 2, expand;
  orion_type vt;
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  orion__check_keys(L, oidx, "text_file", text_opts);
  orion_load_opts_init(&o);
  o.progress = 1;
  fmt = orion__opt_string(L, oidx, "format", "coo");
  o.index_base = (int)orion__opt_int(L, oidx, "index_base", 1);
  if (o.index_base != 0 && o.index_base != 1)
    return luaL_error(L, "text_file: index_base must be 0 or 1");
  o.value_type = opt_type(L, oidx, "value_type", ORION_F64);
  on_error = orion__opt_string(L, oidx, "on_error", "error");
  if (strcmp(on_error, "skip") == 0)
    o.skip_errors = 1;
  else if (strcmp(on_error, "error") != 0)
    return luaL_error(L, "text_file: on_error must be \"error\" or \"skip\"");
  ndims = orion__opt_int_list(L, oidx, "dims", dims, ORION_MAX_DIMS);
  if (strcmp(fmt, "lines") == 0) {
    lua_settop(L, 2);
    load_lines(L, path, oidx, o.index_base, o.value_type, o.skip_errors);
    if (ndims > 0) {
      darray *d = orion__check_array(L, -1);
      orion_error_clear(&err);
      if (d->a->ndims != ndims)
        return luaL_error(L, "%s: dims lists %d sizes but the data has %d "
                             "dimensions", path, ndims, d->a->ndims);
      if (orion_array_set_dims(d->a, dims, &err) != 0)
        return luaL_error(L, "%s: %s", path, err.msg);
    }
    return 1;
  }
  if (orion_format_parse(fmt, &o.format) != 0)
    return luaL_error(L, "text_file: unknown format \"%s\" (use coo, csv, "
                         "movielens, libsvm, uci-bow or lines)", fmt);
  if (ndims > 0) {
    o.have_dims = 1;
    memcpy(o.dims, dims, sizeof dims);
  }
  o.nkeys = (int)orion__opt_int(L, oidx, "nkeys", ndims);
  sep = orion__opt_string(L, oidx, "sep", ",");
  if (strlen(sep) != 1)
    return luaL_error(L, "text_file: sep must be one character");
  o.sep = sep[0];
  o.header = orion__opt_bool(L, oidx, "header", 0);
  ncols = orion__opt_int_list(L, oidx, "key", cols, ORION_MAX_DIMS);
  if (ncols > 0) {
    o.ncols_key = ncols;
    for (int i = 0; i < ncols; i++)
      o.key_cols[i] = (int)cols[i];
  }
  o.value_col = (int)orion__opt_int(L, oidx, "value", o.value_col);
  expand = orion__opt_bool(L, oidx, "expand", 0);
  if (expand && o.format != ORION_FMT_UCIBOW)
    return luaL_error(L, "text_file: expand applies to format \"uci-bow\" "
                         "only, not \"%s\"", fmt);
  vt = o.value_type;
  if (expand) /* counts parse as integers; orion_load_expand then */
    o.value_type = ORION_I64;
  orion_error_clear(&err);
  memset(&res, 0, sizeof res);
  if (orion__state(L)->nexec == 1)
    orion__dist_prestart(orion__state(L), path);
  if (orion__state(L)->nexec >= 2 ? orion__dist_load(orion__state(L), path,
                                                     &o, &res, &err) != 0
                                  : orion_load_file(path, &o, &res, &err) != 0)
    orion__raise(L, &err);
  if (expand && orion_load_expand(&res, vt, path, &err) != 0) {
    orion_array_release(res.array);
    orion__raise(L, &err);
  }
  if (res.skipped > 0)
    orion_log_info("%s: skipped %lld malformed lines (first: %s)", path,
                   (long long)res.skipped, res.first_skip);
  orion__push_array(L, res.array);
  if (orion__opt_bool(L, oidx, "rows", 0)) /* a ragged array (lua/orion_ragged.c) */
    orion__ragged_rows(L, res.array, path);
  if (res.labels != NULL) {
    orion__push_array(L, res.labels);
    return 2;
  }
  return 1;
}

/* orion.synthetic_ratings{users=, items=, ratings=, rank=, noise=, zipf=,
 * test_fraction=, seed=} -> train, test */
static const char *const synth_opts[] = {
    "users", "items", "ratings", "rank", "noise", "zipf", "test_fraction",
    "seed",  NULL};

static int l_synthetic_ratings(lua_State *L) {
  orion_synth_opts o;
  orion_array *train, *test;
  orion_error err;
  orion_synth_opts_init(&o);
  orion__check_keys(L, 1, "synthetic_ratings", synth_opts);
  o.users = orion__opt_int(L, 1, "users", o.users);
  o.items = orion__opt_int(L, 1, "items", o.items);
  o.ratings = orion__opt_int(L, 1, "ratings", o.ratings);
  o.rank = (int)orion__opt_int(L, 1, "rank", o.rank);
  o.noise = orion__opt_num(L, 1, "noise", o.noise);
  o.zipf = orion__opt_num(L, 1, "zipf", o.zipf);
  o.test_fraction = orion__opt_num(L, 1, "test_fraction", o.test_fraction);
  o.seed = (uint64_t)orion__opt_int(L, 1, "seed", (lua_Integer)o.seed);
  orion_error_clear(&err);
  if (orion_synth_ratings(&o, &train, &test, &err) != 0)
    orion__raise(L, &err);
  orion__push_array(L, train);
  orion__push_array(L, test);
  return 2;
}

/* ======================================================================
 * Accumulators.
 * ====================================================================== */


static void accval_from(lua_State *L, int idx, orion_acc_op op,
                        orion_accval *v) {
  memset(v, 0, sizeof *v);
  if (lua_isinteger(L, idx))
    orion_accval_add_int(v, op, lua_tointeger(L, idx));
  else
    orion_accval_add_num(v, op, luaL_checknumber(L, idx));
}

static int l_accumulator(lua_State *L) {
  const char *opname = luaL_checkstring(L, 1);
  mod_state *s = orion__state(L);
  orion_acc_op op;
  dacc *a;
  lua_settop(L, 2); /* the init is optional: the userdata goes at 3 */
  if (orion_acc_op_parse(opname, &op) != 0)
    return luaL_error(L, "accumulator: operator must be \"sum\", \"min\" or "
                         "\"max\", not \"%s\"", opname);
  a = lua_newuserdatauv(L, sizeof *a, 0);
  memset(a, 0, sizeof *a);
  luaL_setmetatable(L, ACC_MT);
  a->op = op;
  a->id = ++s->next_acc_id;
  /* Without an init, a sum starts at 0 and a min or max holds nothing (nil)
   * until the first value arrives. */
  if (lua_isnil(L, 2)) {
    if (op == ORION_ACC_SUM)
      orion_accval_add_int(&a->init, op, 0);
  } else {
    accval_from(L, 2, op, &a->init);
  }
  a->val = a->init;
  lua_getfield(L, LUA_REGISTRYINDEX, ACCS_KEY);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, a->id);
  lua_pop(L, 1);
  return 1;
}

static int acc_m_add(lua_State *L) {
  dacc *a = luaL_checkudata(L, 1, ACC_MT);
  orion_accval v;
  accval_from(L, 2, a->op, &v);
  orion_accval_combine(&a->val, a->op, &v);
  return 0;
}

static int acc_m_get(lua_State *L) {
  dacc *a = luaL_checkudata(L, 1, ACC_MT);
  orion_accval_push(L, &a->val);
  return 1;
}

static int acc_m_reset(lua_State *L) {
  dacc *a = luaL_checkudata(L, 1, ACC_MT);
  if (!lua_isnoneornil(L, 2))
    accval_from(L, 2, a->op, &a->init);
  a->val = a->init;
  return 0;
}

static int acc_m_tostring(lua_State *L) {
  dacc *a = luaL_checkudata(L, 1, ACC_MT);
  orion_accval_push(L, &a->val);
  lua_pushfstring(L, "Accumulator(%s, %s)", orion_acc_op_name(a->op),
                  luaL_tolstring(L, -1, NULL));
  return 1;
}

/* ======================================================================
 * Metrics and small utilities.
 * ====================================================================== */

/* s[0..n) as a JSON string (util/json.h: escaped, always valid UTF-8). */
static void json_string(luaL_Buffer *b, const char *s, size_t n) {
  orion_buf q;
  orion_buf_init(&q);
  orion_json_quote(&q, s, n);
  if (q.oom) {
    orion_buf_free(&q);
    luaL_error(b->L, "record: out of memory");
  }
  luaL_addlstring(b, q.data, q.len);
  orion_buf_free(&q);
}

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* orion.record{k = v, ...}: one JSON object per call, keys sorted, appended
 * to the --metrics file (a no-op without one) and kept for the job page
 * (--status, dsm/status.h). */
static int l_record(lua_State *L) {
  mod_state *s = orion__state(L);
  const char *keys[256];
  int n = 0, i;
  luaL_Buffer b;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "record: keys must be strings");
    if (n == 256)
      return luaL_error(L, "record: at most 256 keys");
    keys[n++] = lua_tostring(L, -1);
  }
  qsort(keys, (size_t)n, sizeof *keys, cmp_str);
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '{');
  for (i = 0; i < n; i++) {
    int t;
    if (i > 0)
      luaL_addchar(&b, ',');
    json_string(&b, keys[i], strlen(keys[i]));
    luaL_addchar(&b, ':');
    t = lua_getfield(L, 1, keys[i]);
    if (t == LUA_TNUMBER && lua_isinteger(L, -1)) {
      lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, -1));
      lua_remove(L, -2);
      luaL_addvalue(&b);
    } else if (t == LUA_TNUMBER) {
      double v = lua_tonumber(L, -1);
      char num[64];
      lua_pop(L, 1);
      if (isfinite(v))
        snprintf(num, sizeof num, "%.17g", v);
      else
        snprintf(num, sizeof num, "null");
      luaL_addstring(&b, num);
    } else if (t == LUA_TSTRING) {
      size_t len;
      const char *str = lua_tolstring(L, -1, &len);
      json_string(&b, str, len);
      lua_pop(L, 1);
    } else if (t == LUA_TBOOLEAN) {
      luaL_addstring(&b, lua_toboolean(L, -1) ? "true" : "false");
      lua_pop(L, 1);
    } else {
      return luaL_error(L, "record: value of '%s' is a %s (numbers, strings "
                           "and booleans only)", keys[i], luaL_typename(L, -1));
    }
  }
  luaL_addstring(&b, "}\n");
  luaL_pushresult(&b);
  {
    size_t len;
    const char *line = lua_tolstring(L, -1, &len);
    orion_status_record(line, len);
  }
  if (s->metrics_path == NULL)
    return 0;
  if (s->metrics == NULL) {
    s->metrics = fopen(s->metrics_path, "a");
    if (s->metrics == NULL)
      return luaL_error(L, "cannot open metrics file %s: %s", s->metrics_path,
                        strerror(errno));
  }
  {
    size_t len;
    const char *line = lua_tolstring(L, -1, &len);
    if (fwrite(line, 1, len, s->metrics) != len || fflush(s->metrics) != 0)
      return luaL_error(L, "cannot write metrics file %s: %s",
                        s->metrics_path, strerror(errno));
  }
  return 0;
}

static int l_seed(lua_State *L) {
  mod_state *s = orion__state(L);
  lua_Integer old = (lua_Integer)s->seed;
  if (!lua_isnoneornil(L, 1))
    s->seed = (uint64_t)luaL_checkinteger(L, 1);
  lua_pushinteger(L, old);
  return 1;
}

static int l_clock(lua_State *L) {
  lua_pushnumber(L, orion_now());
  return 1;
}

static int l_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)orion_alloc_used());
  return 1;
}

/* orion.write_file(path, text): path holds text whole or keeps what it
 * held, also after a crash (util/atomic.h): the last file of a set, its
 * manifest. */
static int l_write_file(lua_State *L) {
  size_t len;
  const char *path = luaL_checkstring(L, 1);
  const char *text = luaL_checklstring(L, 2, &len);
  orion_error err;
  orion_error_clear(&err);
  if (orion_atomic_write(path, text, len, &err) != 0)
    orion__raise(L, &err);
  return 0;
}

/* orion.check_output(path, option[, kind]): raises "OPTION PATH: why"
 * (no script position: the option is what to fix) when the output cannot
 * be written (util/outpath.h); kind is "file" (the default), "prefix"
 * (files PATH.SUFFIX) or "folder".  Apps call it for each output option
 * before they load or train, so that a bad path does not lose the work. */
static int l_check_output(lua_State *L) {
  static const char *const kinds[] = {"file", "prefix", "folder", NULL};
  static const orion_out_kind kv[] = {ORION_OUT_FILE, ORION_OUT_PREFIX,
                                      ORION_OUT_FOLDER};
  const char *path = luaL_checkstring(L, 1);
  const char *option = luaL_checkstring(L, 2);
  int k = luaL_checkoption(L, 3, "file", kinds);
  orion_error err;
  orion_error_clear(&err);
  if (orion_output_check(path, kv[k], &err) != 0) {
    if (path[0] == '\0')
      lua_pushfstring(L, "%s: %s", option, err.msg);
    else
      lua_pushfstring(L, "%s %s: %s", option, path, err.msg);
    return lua_error(L);
  }
  return 0;
}

static int l_quiet(lua_State *L) {
  lua_pushboolean(L, orion_log_quiet());
  return 1;
}

/* ======================================================================
 * Opening the module.
 * ====================================================================== */

static void weak_table(lua_State *L, const char *key) {
  lua_newtable(L);
  lua_newtable(L);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

int luaopen_orion(lua_State *L) {
  static const luaL_Reg funcs[] = {
      {"text_file", l_text_file},
      {"array", l_array},
      {"zeros", l_zeros},
      {"randn", l_randn},
      {"load", l_load},
      {"accumulator", l_accumulator},
      {"record", l_record},
      {"seed", l_seed},
      {"clock", l_clock},
      {"memory", l_memory},
      {"quiet", l_quiet},
      {"write_file", l_write_file},
      {"check_output", l_check_output},
      {"synthetic_ratings", l_synthetic_ratings},
      {NULL, NULL}};
  static const luaL_Reg array_methods[] = {
      {"dims", m_dims},         {"nnz", m_nnz},
      {"type", m_type},         {"is_sparse", m_is_sparse},
      {"get", m_get},           {"set", m_set},
      {"to_table", m_to_table}, {"map", m_map},
      {"save", m_save},         {"histogram", m_histogram},
      {"split", m_split},       {"assign", m_assign},
      {NULL, NULL}};
  static const luaL_Reg acc_methods[] = {
      {"add", acc_m_add}, {"get", acc_m_get}, {"reset", acc_m_reset},
      {NULL, NULL}};
  mod_state *s;

  lua_getfield(L, LUA_REGISTRYINDEX, STATE_KEY);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    s->partitions = ORION_DEFAULT_PARTITIONS;
    lua_newtable(L);
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, STATE_KEY);
    weak_table(L, ARRAYS_KEY);
    weak_table(L, ACCS_KEY);
    weak_table(L, BUFFERS_KEY);
    weak_table(L, PERMS_KEY); /* lua/permute.c */
  } else {
    lua_pop(L, 1);
  }

  luaL_newmetatable(L, ARRAY_MT);
  lua_pushcfunction(L, array_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  luaL_newlib(L, array_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods"); /* where lua/permute.c adds its own */
  lua_pushcclosure(L, array_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, array_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);

  luaL_newmetatable(L, ACC_MT);
  lua_pushcfunction(L, acc_m_tostring);
  lua_setfield(L, -2, "__tostring");
  luaL_newlib(L, acc_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  luaL_newlib(L, funcs);
  orion__open_pfor(L);
  orion__open_checkpoint(L); /* lua/checkpoint.c */
  orion_jobpage_open_progress(L); /* orion.progress */
  orion__open_ragged(L);
  orion__open_permute(L); /* lua/permute.c */
  orion_tfevents_open(L); /* orion.tfrecord, orion.tfevents_file */
  orion__open_textimport(L); /* lua/textimport.c */
  orion_nn_open(L); /* orion.nn: matrix math for the DNN app (executor/nn.c) */
  lua_setfield(L, -2, "nn");
  lua_pushliteral(L, PACKAGE_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "orion.module");
  return 1;
}
