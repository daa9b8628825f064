/* orion.nn on the driver: the functions that make DistArrays (the IDX and
 * newsgroups readers, bag-of-words features, row selection, a matrix as a
 * DistArray), and the host through which the binding (executor/nn.c) reads and
 * writes the driver's DistArrays.  Part of the driver's `orion` module, so
 * it uses scheduler/module.h; executors never run it (their nn tables have
 * stubs in its functions' places). */
#include "executor/nn.h"

#include <lauxlib.h>
#include <string.h>

#include "dsm/idx.h"
#include "scheduler/module.h"
#include "util/alloc.h"

/* ======================================================================
 * The binding's view of DistArrays.
 * ====================================================================== */

/* The DistArray at idx, whole (see orion__nn_host); a Buffer is an
 * error. */
static int data_of(lua_State *L, int idx, const char *fn, const char *what,
                   orion__nn_data *out) {
  darray *d = luaL_testudata(L, idx, ARRAY_MT);
  if (d != NULL) {
    if (d->a == NULL)
      luaL_error(L, "%s: DistArray has been freed", fn);
    d = orion__check_array(L, idx); /* its rows back from the executors */
    out->a = d->a;
    out->name = "DistArray";
    out->handle = d;
    return 1;
  }
  if (luaL_testudata(L, idx, BUFFER_MT) != NULL)
    luaL_error(L, "%s: %s is a Buffer: buffers are written inside "
                  "parallel_for bodies only", fn, what);
  return 0;
}

/* The executors' copies of the array are stale now (scheduler/dist.c). */
static void wrote(const orion__nn_data *d) { ((darray *)d->handle)->gen++; }

static const orion__nn_host host = {data_of, wrote, NULL, NULL, NULL};

/* ======================================================================
 * Readers that make DistArrays.
 * ====================================================================== */

/* nn.read_idx(path [, {type =, scale =, shift =, flatten =}]) -> DistArray */
static int l_read_idx(lua_State *L) {
  static const char *const keys[] = {"type", "scale", "shift", "flatten",
                                     NULL};
  const char *path;
  orion_idx_opts o;
  orion_array *a;
  orion_error err;
  path = luaL_checkstring(L, 1);
  orion_idx_opts_init(&o);
  if (!lua_isnoneornil(L, 2)) {
    const char *t;
    luaL_checktype(L, 2, LUA_TTABLE);
    orion__check_keys(L, 2, "nn.read_idx", keys);
    t = orion__opt_string(L, 2, "type", "f32");
    if (orion_type_parse(t, &o.type) != 0)
      return luaL_error(L, "option 'type': unknown type \"%s\" (use f32, "
                           "f64, i32 or i64)", t);
    o.scale = orion__opt_num(L, 2, "scale", 1.0);
    o.shift = orion__opt_num(L, 2, "shift", 0.0);
    o.flatten = orion__opt_bool(L, 2, "flatten", 0);
  }
  orion_error_clear(&err);
  if (orion_idx_read(path, &o, &a, &err) != 0)
    orion__raise(L, &err);
  orion__push_array(L, a);
  return 1;
}

/* nn.read_docs(path) -> labels (i32, 1-based group per document), test
 * (i32, 1 for "test" documents, 0 for "train"), groups (names, sorted). */
static int l_read_docs(lua_State *L) {
  const char *path;
  orion_docs docs;
  orion_error err;
  orion_array *lab, *tst;
  int64_t dims[1], i;
  path = luaL_checkstring(L, 1);
  orion_error_clear(&err);
  if (orion_docs_read(path, &docs, &err) != 0)
    orion__raise(L, &err);
  dims[0] = docs.n;
  lab = orion_array_new_dense(1, dims, ORION_I32, &err);
  tst = lab != NULL ? orion_array_new_dense(1, dims, ORION_I32, &err) : NULL;
  if (lab == NULL || tst == NULL) {
    orion_array_release(lab);
    orion_docs_free(&docs);
    orion__raise(L, &err);
  }
  for (i = 0; i < docs.n; i++) {
    ((int32_t *)lab->values)[i] = docs.label[i];
    ((int32_t *)tst->values)[i] = docs.test[i];
  }
  orion__push_array(L, lab);
  orion__push_array(L, tst);
  lua_createtable(L, docs.ngroups, 0);
  for (i = 0; i < docs.ngroups; i++) {
    lua_pushstring(L, docs.groups[i]);
    lua_rawseti(L, -2, i + 1);
  }
  orion_docs_free(&docs);
  return 3;
}

/* A Lua list of 1-based row numbers at idx as 0-based int64s (orion_malloc'd;
 * the caller frees), checked against 1..limit. */
static int64_t *row_list(lua_State *L, int idx, const char *fn,
                         int64_t limit, int64_t *n) {
  int64_t i, *rows;
  luaL_checktype(L, idx, LUA_TTABLE);
  *n = (int64_t)luaL_len(L, idx);
  rows = orion_malloc(sizeof *rows * (size_t)(*n > 0 ? *n : 1));
  if (rows == NULL)
    luaL_error(L, "%s: out of memory", fn);
  for (i = 0; i < *n; i++) {
    int isint;
    lua_Integer r;
    lua_geti(L, idx, i + 1);
    r = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint || r < 1 || r > limit) {
      orion_free(rows);
      luaL_error(L, "%s: row list entry %I is not a row in 1..%I", fn,
                 (LUAI_UACINT)i + 1, (LUAI_UACINT)limit);
    }
    rows[i] = r - 1;
  }
  return rows;
}

/* nn.bow_features(counts, rows [, {weight = "log1p"|"count", l2 = true}])
 * -> rowptr, cols, vals: the compressed-row features of the listed
 * documents (dsm/idx.h orion_bow_csr). */
static int l_bow_features(lua_State *L) {
  static const char *const keys[] = {"weight", "l2", NULL};
  const char *fn = "nn.bow_features";
  darray *d;
  int64_t n, *rows;
  orion_bow_weight w = ORION_BOW_LOG1P;
  int l2 = 1, rc;
  orion_array *rp, *cv, *vv;
  orion_error err;
  d = orion__check_array(L, 1);
  if (!lua_isnoneornil(L, 3)) {
    const char *ws;
    luaL_checktype(L, 3, LUA_TTABLE);
    orion__check_keys(L, 3, fn, keys);
    ws = orion__opt_string(L, 3, "weight", "log1p");
    if (strcmp(ws, "count") == 0)
      w = ORION_BOW_COUNT;
    else if (strcmp(ws, "log1p") != 0)
      return luaL_error(L, "%s: weight must be \"log1p\" or \"count\", not "
                           "\"%s\"", fn, ws);
    l2 = orion__opt_bool(L, 3, "l2", 1);
  }
  if (d->a->ndims != 2)
    return luaL_error(L, "%s: counts must be a 2-D (document x word) array",
                      fn);
  rows = row_list(L, 2, fn, d->a->dims[0], &n);
  orion_error_clear(&err);
  rc = orion_bow_csr(d->a, rows, n, w, l2, &rp, &cv, &vv, &err);
  orion_free(rows);
  if (rc != 0)
    orion__raise(L, &err);
  orion__push_array(L, rp);
  orion__push_array(L, cv);
  orion__push_array(L, vv);
  return 3;
}

/* nn.take(A, idx [, first = 1, count = #idx - first + 1]) -> a new dense
 * DistArray of A's rows idx[first], ... (same type and trailing dims). */
static int l_take(lua_State *L) {
  const char *fn = "nn.take";
  darray *d;
  int64_t n, *rows, dims[ORION_MAX_DIMS], rowlen = 1, i, first, count;
  size_t esz;
  orion_array *b;
  orion_error err;
  int k;
  d = orion__check_array(L, 1);
  if (d->a->sparse)
    return luaL_error(L, "%s: the array must be dense", fn);
  rows = row_list(L, 2, fn, d->a->dims[0], &n);
  first = luaL_optinteger(L, 3, 1);
  count = luaL_optinteger(L, 4, n - first + 1);
  if (first < 1 || count < 1 || first + count - 1 > n) {
    orion_free(rows);
    return luaL_error(L, "%s: entries %I..%I are not in the list of %I",
                      fn, (LUAI_UACINT)first,
                      (LUAI_UACINT)(first + count - 1), (LUAI_UACINT)n);
  }
  for (k = 0; k < d->a->ndims; k++)
    dims[k] = d->a->dims[k];
  for (k = 1; k < d->a->ndims; k++)
    rowlen *= dims[k];
  dims[0] = count;
  orion_error_clear(&err);
  b = orion_array_new_dense(d->a->ndims, dims, d->a->type, &err);
  if (b == NULL) {
    orion_free(rows);
    orion__raise(L, &err);
  }
  esz = orion_type_size(d->a->type);
  for (i = 0; i < count; i++)
    memcpy((char *)b->values + (size_t)(i * rowlen) * esz,
           (const char *)d->a->values +
               (size_t)(rows[first - 1 + i] * rowlen) * esz,
           esz * (size_t)rowlen);
  orion_free(rows);
  orion__push_array(L, b);
  return 1;
}

/* nn.to_array(M [, type = "f32"]) -> a new rows x cols dense DistArray. */
static int l_to_array(lua_State *L) {
  const float *v;
  int64_t rows, cols;
  orion_type t = ORION_F32;
  int64_t dims[2], i;
  orion_array *a;
  orion_error err;
  v = orion__nn_check_matrix(L, 1, "nn.to_array", "M", &rows, &cols);
  if (!lua_isnoneornil(L, 2) &&
      (orion_type_parse(luaL_checkstring(L, 2), &t) != 0 ||
       orion_type_is_int(t)))
    return luaL_error(L, "nn.to_array: type must be \"f32\" or \"f64\"");
  if (rows < 1 || cols < 1)
    return luaL_error(L, "nn.to_array: a %Ix%I matrix has no elements",
                      (LUAI_UACINT)rows, (LUAI_UACINT)cols);
  dims[0] = rows;
  dims[1] = cols;
  orion_error_clear(&err);
  a = orion_array_new_dense(2, dims, t, &err);
  if (a == NULL)
    orion__raise(L, &err);
  for (i = 0; i < rows * cols; i++)
    orion_value_set_f64(a->values, t, i, v[i]);
  orion__push_array(L, a);
  return 1;
}

static const luaL_Reg driver_funcs[] = {{"read_idx", l_read_idx},
                                        {"read_docs", l_read_docs},
                                        {"bow_features", l_bow_features},
                                        {"take", l_take},
                                        {"to_array", l_to_array},
                                        {NULL, NULL}};

/* The driver's nn table (see nn.h). */
int orion_nn_open(lua_State *L) {
  return orion__nn_open(L, &host, driver_funcs);
}
