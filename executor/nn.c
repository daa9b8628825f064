/* orion.nn's Lua binding: nn matrices and sparse matrices as userdata,
 * reading and writing array data, and one Lua function per kernel of
 * kernels/nn_math.h.  See executor/nn.h; the user reference is the orion.nn section
 * of docs/lua-api.md.
 *
 * This file runs in the driver's Lua state and in executors' (bodies use
 * orion.nn), so it includes neither side's headers: the array data of a
 * state comes from the orion__nn_host its owner opened orion.nn with
 * (lua/nn_driver.c, executor/exec.c).
 *
 * Every function checks its arguments' shapes and raises a Lua error that
 * names the function and the shapes ("nn.gemm: inner dimensions differ:
 * op(A) is 100x784, op(B) is 256x10").  Matrices are row-major; keys and
 * class labels are 1-based, as everywhere in Lua.
 */
#include "executor/nn.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nn_math.h"
#include "executor/nn_int.h"
#include "util/alloc.h"

/* The current host values of a matrix, for reading (HR), for changing
 * some (HW) or for overwriting all (HO): see executor/nn_int.h. */
#define HR(m) orion__nn_hostv(L, (m), 0)
#define HW(m) orion__nn_hostv(L, (m), 1)
#define HO(m) orion__nn_hostv(L, (m), 2)

/* The registry slot of a state's orion__nn_host (a light userdata). */
static const char host_key = 'h';

/* ======================================================================
 * Matrices.
 * ====================================================================== */

static nn_mat *new_mat(lua_State *L, int64_t rows, int64_t cols) {
  nn_mat *m;
  size_t n, bytes;
  if (rows < 0 || cols < 0 ||
      orion_mul_overflow((size_t)rows, (size_t)cols, &n) ||
      orion_mul_overflow(n, sizeof(float), &bytes) ||
      bytes > ((size_t)1 << 40))
    luaL_error(L, "nn: a %I x %I matrix is too large", (LUAI_UACINT)rows,
               (LUAI_UACINT)cols);
  m = lua_newuserdatauv(L, sizeof *m + bytes + 64, 0);
  memset(m, 0, sizeof *m);
  m->host_ok = 1;
  m->rows = rows;
  m->cols = cols;
  /* Align the values to 64 bytes for the kernels. */
  m->v = (float *)(((uintptr_t)(m + 1) + 63) & ~(uintptr_t)63);
  m->inl = m->v;
  memset(m->v, 0, bytes);
  luaL_setmetatable(L, MAT_MT);
  return m;
}

static nn_mat *check_mat(lua_State *L, int idx, const char *fn,
                         const char *what) {
  nn_mat *m = luaL_testudata(L, idx, MAT_MT);
  if (m == NULL)
    luaL_error(L, "%s: %s must be an nn matrix, got a %s", fn, what,
               luaL_typename(L, idx));
  return m;
}

static int64_t numel(const nn_mat *m) { return m->rows * m->cols; }

static void need_shape(lua_State *L, const char *fn, const char *what,
                       const nn_mat *m, int64_t rows, int64_t cols) {
  if (m->rows != rows || m->cols != cols)
    luaL_error(L, "%s: %s is %Ix%I, expected %Ix%I", fn, what,
               (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, (LUAI_UACINT)rows,
               (LUAI_UACINT)cols);
}

static void same_shape(lua_State *L, const char *fn, const char *wa,
                       const nn_mat *a, const char *wb, const nn_mat *b) {
  if (a->rows != b->rows || a->cols != b->cols)
    luaL_error(L, "%s: shapes differ: %s is %Ix%I, %s is %Ix%I", fn, wa,
               (LUAI_UACINT)a->rows, (LUAI_UACINT)a->cols, wb,
               (LUAI_UACINT)b->rows, (LUAI_UACINT)b->cols);
}

/* The output matrix at idx (reused, its shape checked), or a new one pushed
 * in its place.  Leaves the result on top of the stack. */
static nn_mat *out_mat(lua_State *L, int idx, const char *fn, int64_t rows,
                       int64_t cols) {
  if (lua_isnoneornil(L, idx))
    return new_mat(L, rows, cols);
  {
    nn_mat *m = check_mat(L, idx, fn, "the output");
    need_shape(L, fn, "the output", m, rows, cols);
    lua_pushvalue(L, idx);
    return m;
  }
}

static lua_Integer check_size(lua_State *L, int idx, const char *fn,
                              const char *what) {
  int isint;
  lua_Integer n = lua_tointegerx(L, idx, &isint);
  if (!isint || n < 0)
    luaL_error(L, "%s: %s must be a non-negative integer", fn, what);
  return n;
}

static int l_matrix(lua_State *L) {
  lua_Integer r = check_size(L, 1, "nn.matrix", "rows");
  lua_Integer c = check_size(L, 2, "nn.matrix", "cols");
  int fill = !lua_isnoneornil(L, 3);
  float x = fill ? (float)luaL_checknumber(L, 3) : 0.0f;
  nn_mat *m = new_mat(L, r, c);
  if (fill)
    orion_nn_fill(m->v, numel(m), x);
  return 1;
}

/* Builds a matrix from a table of rows ({{1, 2}, {3, 4}}) or a flat list

 * with a shape: nn.from_table(t [, rows, cols]). */
static int l_from_table(lua_State *L) {
  int64_t r, c, i, j;
  nn_mat *m;
  luaL_checktype(L, 1, LUA_TTABLE);
  if (!lua_isnoneornil(L, 2)) {
    r = check_size(L, 2, "nn.from_table", "rows");
    c = check_size(L, 3, "nn.from_table", "cols");
    if ((int64_t)luaL_len(L, 1) != r * c)
      return luaL_error(L, "nn.from_table: %I values for a %Ix%I matrix",
                        (LUAI_UACINT)luaL_len(L, 1), (LUAI_UACINT)r,
                        (LUAI_UACINT)c);
    m = new_mat(L, r, c);
    for (i = 0; i < r * c; i++) {
      lua_geti(L, 1, i + 1);
      HW(m)[i] = (float)luaL_checknumber(L, -1);
      lua_pop(L, 1);
    }
    return 1;
  }
  r = luaL_len(L, 1);
  c = 0;
  if (r > 0) {
    lua_geti(L, 1, 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    c = luaL_len(L, -1);
    lua_pop(L, 1);
  }
  m = new_mat(L, r, c);
  for (i = 0; i < r; i++) {
    lua_geti(L, 1, i + 1);
    if (lua_type(L, -1) != LUA_TTABLE || (int64_t)luaL_len(L, -1) != c)
      return luaL_error(L, "nn.from_table: row %I does not have %I numbers",
                        (LUAI_UACINT)i + 1, (LUAI_UACINT)c);
    for (j = 0; j < c; j++) {
      lua_geti(L, -1, j + 1);
      HW(m)[i * c + j] = (float)luaL_checknumber(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return 1;
}

static int m_rows(lua_State *L) {
  lua_pushinteger(L, check_mat(L, 1, "rows", "self")->rows);
  return 1;
}

static int m_cols(lua_State *L) {
  lua_pushinteger(L, check_mat(L, 1, "cols", "self")->cols);
  return 1;
}

static int m_shape(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "shape", "self");
  lua_pushinteger(L, m->rows);
  lua_pushinteger(L, m->cols);
  return 2;
}

static int64_t elem_index(lua_State *L, const nn_mat *m, const char *fn) {
  lua_Integer i = luaL_checkinteger(L, 2), j = luaL_checkinteger(L, 3);
  if (i < 1 || i > m->rows || j < 1 || j > m->cols)
    luaL_error(L, "%s: (%I, %I) is outside a %Ix%I matrix", fn,
               (LUAI_UACINT)i, (LUAI_UACINT)j, (LUAI_UACINT)m->rows,
               (LUAI_UACINT)m->cols);
  return (int64_t)(i - 1) * m->cols + (j - 1);
}

static int m_get(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "get", "self");
  int64_t k = elem_index(L, m, "get");
  lua_pushnumber(L, HR(m)[k]);
  return 1;
}

static int m_set(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "set", "self");
  int64_t k = elem_index(L, m, "set");
  float x = (float)luaL_checknumber(L, 4);
  HW(m)[k] = x;
  return 0;
}

static int m_copy(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "copy", "self");
  nn_mat *c = new_mat(L, m->rows, m->cols);
  memcpy(c->v, HR(m), sizeof(float) * (size_t)numel(m));
  return 1;
}

static int m_sum(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "sum", "self");
  lua_pushnumber(L, orion_nn_sum(HR(m), numel(m)));
  return 1;
}

static int m_to_table(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "to_table", "self");
  int64_t i, j;
  if (numel(m) > 10000000)
    return luaL_error(L, "to_table: a %Ix%I matrix is too large",
                      (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols);
  HR(m);
  lua_createtable(L, (int)m->rows, 0);
  for (i = 0; i < m->rows; i++) {
    lua_createtable(L, (int)m->cols, 0);
    for (j = 0; j < m->cols; j++) {
      lua_pushnumber(L, m->v[i * m->cols + j]);
      lua_rawseti(L, -2, j + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* __gc: the device copy, if any. */
static int mat_gc(lua_State *L) {
  orion__nn_dev_free(lua_touserdata(L, 1));
  return 0;
}

static int m_tostring(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "tostring", "self");
  lua_pushfstring(L, "nn.Matrix(%Ix%I)", (LUAI_UACINT)m->rows,
                  (LUAI_UACINT)m->cols);
  return 1;
}

/* ======================================================================
 * Array data: DistArrays on the driver, array/slice/buffer proxies in
 * bodies.  A view is the elements below `depth` fixed subscripts: its rows
 * are along dimension `depth` and a row is everything after it.
 * ====================================================================== */

typedef struct nn_view {
  const orion_array *a;
  int64_t off;     /* first element */
  int depth;       /* fixed leading dims */
  int64_t rows;    /* dims[depth] (1 when every dim is fixed) */
  int64_t rowlen;  /* elements per row */
  const char *name;
  void *buffer;    /* a write buffer: writes go to pending values */
  const orion__nn_host *host; /* where it came from */
  orion__nn_data data;        /* what the host said */
} nn_view;

static void view_shape(nn_view *v) {
  int d;
  const orion_array *a = v->a;
  if (v->depth >= a->ndims) {
    v->rows = 1;
    v->rowlen = 1;
    return;
  }
  v->rows = a->dims[v->depth];
  v->rowlen = 1;
  for (d = v->depth + 1; d < a->ndims; d++)
    v->rowlen *= a->dims[d];
}

/* The host L's owner opened orion.nn with, or NULL. */
static const orion__nn_host *host_of(lua_State *L) {
  const orion__nn_host *h;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &host_key);
  h = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return h;
}

/* Fills v from the array data at idx, or raises an error naming fn. */
static void check_view(lua_State *L, int idx, const char *fn,
                       const char *what, nn_view *v) {
  memset(v, 0, sizeof *v);
  v->host = host_of(L);
  if (v->host == NULL || !v->host->data_of(L, idx, fn, what, &v->data))
    luaL_error(L, "%s: %s must be a DistArray, a slice of one or a buffer, "
                  "got a %s", fn, what, luaL_typename(L, idx));
  v->a = v->data.a;
  v->off = v->data.off;
  v->depth = v->data.depth;
  v->name = v->data.name;
  v->buffer = v->data.buffer;
  if (v->a->sparse)
    luaL_error(L, "%s: array '%s' is sparse (orion.nn reads dense arrays)",
               fn, v->name);
  view_shape(v);
}

/* The matrix shape of a whole view: rows x rowlen, a 1-D view (a vector or
 * a slice down to its last dimension) as 1 x n. */
static void view_matrix(const nn_view *v, int64_t *r, int64_t *c) {
  if (v->depth + 1 >= v->a->ndims) {
    *r = 1;
    *c = v->rows * v->rowlen;
  } else {
    *r = v->rows;
    *c = v->rowlen;
  }
}

/* Fills v as check_view does, for a function that reads it: buffers are
 * written only. */
static void check_readable(lua_State *L, int idx, const char *fn,
                           nn_view *v) {
  check_view(L, idx, fn, "the source", v);
  if (v->buffer != NULL)
    luaL_error(L, "%s: '%s' is a buffer, which nn can only write (nn.add_to, "
                  "nn.write)", fn, v->name);
}

/* Copies n elements of a (from element `at`) into f32 dst. */
static void load_f32(const orion_array *a, int64_t at, float *dst,
                     int64_t n) {
  switch (a->type) {
  case ORION_F32:
    memcpy(dst, (const float *)a->values + at, sizeof(float) * (size_t)n);
    break;
  case ORION_F64:
    orion_nn_f32_from_f64(dst, (const double *)a->values + at, n);
    break;
  case ORION_I32:
    orion_nn_f32_from_i32(dst, (const int32_t *)a->values + at, n);
    break;
  case ORION_I64:
    orion_nn_f32_from_i64(dst, (const int64_t *)a->values + at, n);
    break;
  }
}

/* Tells the host that nn reads (write 0) or writes n elements of v from
 * its element first (orion-driver --verify records them). */
static void touch(lua_State *L, const nn_view *v, int64_t first, int64_t n,
                  int write) {
  if (v->host != NULL && v->host->touch != NULL && n > 0)
    v->host->touch(L, &v->data, first, n, write);
}

/* The 0-based row of a view named by the Lua value at stack index ridx
 * (idx table, else a position); raises when out of range. */
static int64_t row_at(lua_State *L, const char *fn, const nn_view *v,
                      int tidx, int64_t pos) {
  lua_Integer r;
  if (tidx != 0) {
    int isint;
    lua_geti(L, tidx, pos);
    r = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint)
      luaL_error(L, "%s: index list entry %I is not an integer", fn,
                 (LUAI_UACINT)pos);
  } else {
    r = pos;
  }
  if (r < 1 || r > v->rows)
    luaL_error(L, "%s: row %I of '%s' is out of range 1..%I", fn,
               (LUAI_UACINT)r, v->name, (LUAI_UACINT)v->rows);
  return (int64_t)r - 1;
}

/* nn.read(src [, M]): the whole view as a matrix: rows x rowlen, a 1-D
 * view (a vector or a slice down to its last dimension) as 1 x n. */
static int l_read(lua_State *L) {
  nn_view v;
  int64_t r, c;
  nn_mat *m;
  check_readable(L, 1, "nn.read", &v);
  view_matrix(&v, &r, &c);
  m = out_mat(L, 2, "nn.read", r, c);
  touch(L, &v, 0, r * c, 0);
  load_f32(v.a, v.off, HO(m), r * c);
  return 1;
}

/* The elements first..first+n-1 (1-based, in the view's row-major order)
 * of a view, checked; returns the 0-based start. */
static int64_t range_at(lua_State *L, const char *fn, const nn_view *v,
                        lua_Integer first, int64_t n) {
  int64_t total = v->rows * v->rowlen;
  if (first < 1 || n < 0 || first - 1 > total - n)
    luaL_error(L, "%s: elements %I..%I are outside '%s' (%I elements)", fn,
               (LUAI_UACINT)first, (LUAI_UACINT)(first + n - 1), v->name,
               (LUAI_UACINT)total);
  return (int64_t)first - 1;
}

/* nn.read_range(src, first, rows, cols [, M]): elements first, ...,
 * first + rows * cols - 1 of the view (row-major) as a rows x cols matrix:
 * a block of parameters kept in one flat array. */
static int l_read_range(lua_State *L) {
  nn_view v;
  lua_Integer first = luaL_checkinteger(L, 2);
  lua_Integer r = check_size(L, 3, "nn.read_range", "rows");
  lua_Integer c = check_size(L, 4, "nn.read_range", "cols");
  int64_t at;
  nn_mat *m;
  check_readable(L, 1, "nn.read_range", &v);
  at = range_at(L, "nn.read_range", &v, first, r * c);
  m = out_mat(L, 5, "nn.read_range", r, c);
  touch(L, &v, at, r * c, 0);
  load_f32(v.a, v.off + at, HO(m), r * c);
  return 1;
}

/* nn.rows(src, idx, first, count [, M]): rows idx[first], ...,
 * idx[first + count - 1] of the view (idx nil: rows first, ...,
 * first + count - 1) as a count x rowlen matrix. */
static int l_rows(lua_State *L) {
  nn_view v;
  lua_Integer first, count, i;
  int tidx = 0;
  nn_mat *m;
  check_readable(L, 1, "nn.rows", &v);
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    tidx = 2;
  }
  first = luaL_checkinteger(L, 3);
  count = check_size(L, 4, "nn.rows", "count");
  m = out_mat(L, 5, "nn.rows", count, v.rowlen);
  HO(m);
  for (i = 0; i < count; i++) {
    int64_t r = row_at(L, "nn.rows", &v, tidx, first + i);
    touch(L, &v, r * v.rowlen, v.rowlen, 0);
    load_f32(v.a, v.off + r * v.rowlen, m->v + i * v.rowlen, v.rowlen);
  }
  return 1;
}

/* Stores (add 0) or adds alpha times (add 1) n values into the view from
 * its element `first`. */
static void store_view(lua_State *L, const char *fn, nn_view *v,
                       int64_t first, const float *x, const float *x0,
                       int64_t n, int add, double alpha) {
  const orion_array *a = v->a;
  int64_t at = v->off + first;
  if (v->buffer != NULL) {
    int rc = v->host->pend != NULL
                 ? v->host->pend(&v->data, first, x, x0, n, alpha, !add)
                 : ORION_EINVAL;
    if (rc == ORION_EINVAL)
      luaL_error(L, "%s: buffer '%s' has an integer target; nn writes "
                    "float arrays only", fn, v->name);
    if (rc != 0)
      luaL_error(L, "%s: buffer '%s': out of memory for pending writes", fn,
                 v->name);
    return;
  }
  if (v->data.guard != NULL && v->host->refuse != NULL)
    v->host->refuse(L, &v->data); /* the runtime guard: does not return */
  touch(L, v, first, n, 1);
  switch (a->type) {
  case ORION_F32:
    if (!add)
      memcpy((float *)a->values + at, x, sizeof(float) * (size_t)n);
    else
      orion_nn_add_diff_f32((float *)a->values + at, x, x0, n, alpha);
    break;
  case ORION_F64:
    if (!add)
      orion_nn_f64_from_f32((double *)a->values + at, x, n);
    else
      orion_nn_add_diff_f64((double *)a->values + at, x, x0, n, alpha);
    break;
  default:
    luaL_error(L, "%s: array '%s' is %s; nn writes f32 and f64 arrays only",
               fn, v->name, orion_type_name(a->type));
  }
  if (v->host->wrote != NULL)
    v->host->wrote(&v->data); /* e.g. the executors' copies are stale */
}

/* nn.write(dst, M [, first]) and nn.add_to(dst, M [, alpha [, first
 * [, M0]]]): without first, M must have the shape nn.read(dst) has; with
 * it, M's values go to elements first, first + 1, ... of dst (as
 * nn.read_range reads them).  With M0 (M's shape), add_to adds
 * alpha * (M - M0), the difference taken in double precision, so that
 * adding back a change made to a copy reproduces the copy exactly. */
static int write_or_add(lua_State *L, const char *fn, int add) {
  nn_view v;
  nn_mat *m, *m0 = NULL;
  double alpha = add ? luaL_optnumber(L, 3, 1.0) : 1.0;
  int fidx = add ? 4 : 3;
  int64_t r, c;
  check_view(L, 1, fn, "the destination", &v);
  m = check_mat(L, 2, fn, "the matrix");
  if (add && !lua_isnoneornil(L, 5)) {
    m0 = check_mat(L, 5, fn, "M0");
    same_shape(L, fn, "M", m, "M0", m0);
  }
  if (!lua_isnoneornil(L, fidx)) {
    int64_t at = range_at(L, fn, &v, luaL_checkinteger(L, fidx), numel(m));
    store_view(L, fn, &v, at, HR(m), m0 ? HR(m0) : NULL, numel(m), add,
               alpha);
    return 0;
  }
  if (m0 != NULL)
    return luaL_error(L, "%s: M0 needs the position argument", fn);
  view_matrix(&v, &r, &c);
  if (m->rows != r || m->cols != c) {
    /* A column or row vector for a 1-D view is fine too. */
    if (!(numel(m) == r * c && (m->rows == 1 || m->cols == 1) && r == 1))
      return luaL_error(L, "%s: the matrix is %Ix%I, '%s' is %Ix%I", fn,
                        (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, v.name,
                        (LUAI_UACINT)r, (LUAI_UACINT)c);
  }
  store_view(L, fn, &v, 0, HR(m), NULL, numel(m), add, alpha);
  return 0;
}

static int l_write(lua_State *L) { return write_or_add(L, "nn.write", 0); }
static int l_add_to(lua_State *L) { return write_or_add(L, "nn.add_to", 1); }


/* ======================================================================
 * Dense kernels.
 * ====================================================================== */

static int opt_trans(lua_State *L, int idx, const char *fn) {
  if (lua_isnoneornil(L, idx))
    return 0;
  if (lua_type(L, idx) == LUA_TBOOLEAN)
    return lua_toboolean(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    if (strcmp(s, "T") == 0 || strcmp(s, "t") == 0)
      return 1;
    if (strcmp(s, "N") == 0 || strcmp(s, "n") == 0)
      return 0;
  }
  return luaL_error(L, "%s: a transpose flag must be true/false or \"T\"/"
                       "\"N\"", fn);
}

/* nn.gemm(C, A, B [, alpha = 1, beta = 0, transA, transB]):
 * C = alpha * op(A) op(B) + beta * C. */
static int l_gemm(lua_State *L) {
  nn_mat *c = check_mat(L, 1, "nn.gemm", "C");
  nn_mat *a = check_mat(L, 2, "nn.gemm", "A");
  nn_mat *b = check_mat(L, 3, "nn.gemm", "B");
  float alpha = (float)luaL_optnumber(L, 4, 1.0);
  float beta = (float)luaL_optnumber(L, 5, 0.0);
  int ta = opt_trans(L, 6, "nn.gemm"), tb = opt_trans(L, 7, "nn.gemm");
  int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  int64_t kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
  if (k != kb)
    return luaL_error(L, "nn.gemm: inner dimensions differ: op(A) is %Ix%I, "
                         "op(B) is %Ix%I",
                      (LUAI_UACINT)m, (LUAI_UACINT)k, (LUAI_UACINT)kb,
                      (LUAI_UACINT)n);
  if (c->rows != m || c->cols != n)
    return luaL_error(L, "nn.gemm: C is %Ix%I, op(A) op(B) is %Ix%I",
                      (LUAI_UACINT)c->rows, (LUAI_UACINT)c->cols,
                      (LUAI_UACINT)m, (LUAI_UACINT)n);
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return luaL_error(L, "nn.gemm: matrices too large for BLAS");
  if (orion__nn_dev_gemm(L, c, a, b, ta, tb, alpha, beta))
    return 0;
  if (orion_nn_gemm(ta, tb, m, n, k, alpha, HR(a), a->cols, HR(b), b->cols,
                    beta, HW(c), c->cols) != 0)
    return luaL_error(L, "nn.gemm: matrices too large for BLAS");
  return 0;
}

/* A 1 x cols or cols x 1 vector argument v for the rows of m, else an
 * error "FN: M is RxC, WHAT is RxC (expected 1xC)". */
static void need_row_vector(lua_State *L, const char *fn, const nn_mat *m,
                            const char *what, const nn_mat *v) {
  if (numel(v) != m->cols || (v->rows != 1 && v->cols != 1))
    luaL_error(L, "%s: M is %Ix%I, %s is %Ix%I (expected 1x%I)", fn,
               (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, what,
               (LUAI_UACINT)v->rows, (LUAI_UACINT)v->cols,
               (LUAI_UACINT)m->cols);
}

/* nn.add_bias(M, b [, "relu"]): adds the 1 x cols (or cols x 1) b to
 * every row; with "relu", then M = max(M, 0) in the same pass. */
static int l_add_bias(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.add_bias", "M");
  nn_mat *b = check_mat(L, 2, "nn.add_bias", "b");
  int relu = 0;
  if (!lua_isnoneornil(L, 3)) {
    const char *act = lua_tostring(L, 3);
    if (lua_type(L, 3) != LUA_TSTRING || strcmp(act, "relu") != 0)
      return luaL_error(L, "nn.add_bias: the activation must be \"relu\", "
                           "not %s",
                        luaL_tolstring(L, 3, NULL));
    relu = 1;
  }
  need_row_vector(L, "nn.add_bias", m, "b", b);
  if (orion__nn_dev_elem(L, relu ? NN_ADD_BIAS_RELU : NN_ADD_BIAS, m, b, NULL,
                         0, 0, 0))
    return 0;
  if (relu)
    orion_nn_add_bias_relu(HW(m), m->rows, m->cols, HR(b));
  else
    orion_nn_add_bias(HW(m), m->rows, m->cols, HR(b));
  return 0;
}

/* nn.colsum(db, M [, alpha = 1, beta = 0]): db = alpha * (column sums of
 * M) + beta * db, db 1 x cols. */
static int l_colsum(lua_State *L) {
  nn_mat *db = check_mat(L, 1, "nn.colsum", "db");
  nn_mat *m = check_mat(L, 2, "nn.colsum", "M");
  float alpha = (float)luaL_optnumber(L, 3, 1.0);
  float beta = (float)luaL_optnumber(L, 4, 0.0);
  need_row_vector(L, "nn.colsum", m, "db", db);
  if (!orion__nn_dev_elem(L, NN_COLSUM, db, m, NULL, alpha, beta, 0))
    orion_nn_colsum(HW(db), HR(m), m->rows, m->cols, alpha, beta);
  return 0;
}

/* nn.relu(M): M = max(M, 0) in place. */
static int l_relu(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.relu", "M");
  if (!orion__nn_dev_elem(L, NN_RELU, m, NULL, NULL, 0, 0, 0))
    orion_nn_relu(HW(m), numel(m));
  return 0;
}

/* nn.relu_backward(dH, H): dH = 0 where H <= 0 (H the ReLU's output). */
static int l_relu_backward(lua_State *L) {
  nn_mat *dh = check_mat(L, 1, "nn.relu_backward", "dH");
  nn_mat *h = check_mat(L, 2, "nn.relu_backward", "H");
  same_shape(L, "nn.relu_backward", "dH", dh, "H", h);
  if (!orion__nn_dev_elem(L, NN_RELU_BW, dh, h, NULL, 0, 0, 0))
    orion_nn_relu_backward(HW(dh), HR(h), numel(h));
  return 0;
}

static void check_labels(lua_State *L, const char *fn, const nn_mat *z,
                         const nn_mat *y) {
  if (numel(y) != z->rows || (y->rows != 1 && y->cols != 1))
    luaL_error(L, "%s: %I labels (a %Ix%I matrix) for %I rows of Z", fn,
               (LUAI_UACINT)numel(y), (LUAI_UACINT)y->rows,
               (LUAI_UACINT)y->cols, (LUAI_UACINT)z->rows);
}

/* nn.softmax_xent(Z, Y [, dZ]) -> loss, correct: the summed cross-entropy
 * of softmax(Z) against the 1-based class labels Y (one per row of Z) and
 * the number of rows whose largest logit is the label's (ties: the first).
 * With dZ, also dZ = softmax(Z) - onehot(Y) (not divided by the rows). */
static int l_softmax_xent(lua_State *L) {
  const char *fn = "nn.softmax_xent";
  nn_mat *z = check_mat(L, 1, fn, "Z");
  nn_mat *y = check_mat(L, 2, fn, "Y");
  nn_mat *dz = lua_isnoneornil(L, 3) ? NULL : check_mat(L, 3, fn, "dZ");
  int64_t correct, bad, ran;
  double loss;
  check_labels(L, fn, z, y);
  if (dz != NULL)
    same_shape(L, fn, "dZ", dz, "Z", z);
  if (z->cols == 0 && z->rows > 0)
    return luaL_error(L, "%s: Z has no columns", fn);
  /* 1: ran on the device, 0: run it here, -1 - row: a bad label. */
  ran = orion__nn_dev_xent(L, z, y, dz, &loss, &correct);
  if (ran == 0 &&
      orion_nn_softmax_xent(HR(z), z->rows, z->cols, HR(y),
                            dz != NULL ? HW(dz) : NULL, &loss, &correct,
                            &bad) != 0)
    ran = -1 - bad;
  if (ran < 0)
    return luaL_error(L, "%s: label %f of row %I is not a class in 1..%I", fn,
                      (double)HR(y)[-1 - ran], (LUAI_UACINT)-ran,
                      (LUAI_UACINT)z->cols);
  lua_pushnumber(L, loss);
  lua_pushinteger(L, correct);
  return 2;
}

/* nn.argmax(Z [, out]) -> rows x 1 matrix of 1-based classes. */
static int l_argmax(lua_State *L) {
  nn_mat *z = check_mat(L, 1, "nn.argmax", "Z");
  nn_mat *o = out_mat(L, 2, "nn.argmax", z->rows, 1);
  orion_nn_argmax(HR(z), z->rows, z->cols, HW(o));
  return 1;
}

/* nn.axpy(Y, alpha, X): Y = Y + alpha * X. */
static int l_axpy(lua_State *L) {
  nn_mat *y = check_mat(L, 1, "nn.axpy", "Y");
  float alpha = (float)luaL_checknumber(L, 2);
  nn_mat *x = check_mat(L, 3, "nn.axpy", "X");
  same_shape(L, "nn.axpy", "Y", y, "X", x);
  if (!orion__nn_dev_elem(L, NN_AXPY, y, x, NULL, alpha, 0, 0))
    orion_nn_axpy(HW(y), alpha, HR(x), numel(y));
  return 0;
}

/* nn.add_scale(W, V, mu): W = W + V, then V = mu * V, in one pass. */
static int l_add_scale(lua_State *L) {
  nn_mat *w = check_mat(L, 1, "nn.add_scale", "W");
  nn_mat *v = check_mat(L, 2, "nn.add_scale", "V");
  float mu = (float)luaL_checknumber(L, 3);
  same_shape(L, "nn.add_scale", "W", w, "V", v);
  if (w == v)
    return luaL_error(L, "nn.add_scale: W and V must be different matrices");
  if (!orion__nn_dev_elem(L, NN_ADD_SCALE, w, v, NULL, mu, 0, 0))
    orion_nn_add_scale(HW(w), HW(v), numel(w), mu);
  return 0;
}

/* nn.scale(M, a): M = a * M. */
static int l_scale(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.scale", "M");
  float a = (float)luaL_checknumber(L, 2);
  if (!orion__nn_dev_elem(L, NN_SCALE, m, NULL, NULL, a, 0, 0))
    orion_nn_scale(HW(m), numel(m), a);
  return 0;
}

/* nn.fill(M, x). */
static int l_fill(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.fill", "M");
  float x = (float)luaL_checknumber(L, 2);
  if (!orion__nn_dev_elem(L, NN_FILL, m, NULL, NULL, x, 0, 0))
    orion_nn_fill(HO(m), numel(m), x);
  return 0;
}

/* nn.copy(dst, src): same shapes. */
static int l_copy(lua_State *L) {
  nn_mat *d = check_mat(L, 1, "nn.copy", "dst");
  nn_mat *s = check_mat(L, 2, "nn.copy", "src");
  same_shape(L, "nn.copy", "dst", d, "src", s);
  if (d != s && !orion__nn_dev_elem(L, NN_COPY, d, s, NULL, 0, 0, 0))
    memcpy(HO(d), HR(s), sizeof(float) * (size_t)numel(s));
  return 0;
}

/* nn.momentum(W, V, G, lr, mu [, decay = 0]): SGD with momentum,
 * V = mu * V - lr * (G + decay * W); W = W + V. */
static int l_momentum(lua_State *L) {
  const char *fn = "nn.momentum";
  nn_mat *w = check_mat(L, 1, fn, "W");
  nn_mat *v = check_mat(L, 2, fn, "V");
  nn_mat *g = check_mat(L, 3, fn, "G");
  float lr = (float)luaL_checknumber(L, 4);
  float mu = (float)luaL_checknumber(L, 5);
  float decay = (float)luaL_optnumber(L, 6, 0.0);
  same_shape(L, fn, "W", w, "V", v);
  same_shape(L, fn, "W", w, "G", g);
  if (w == v || w == g || v == g)
    return luaL_error(L, "%s: W, V and G must be different matrices", fn);
  if (!orion__nn_dev_elem(L, NN_MOMENTUM, w, v, g, lr, mu, decay))
    orion_nn_momentum(HW(w), HW(v), HR(g), numel(w), lr, mu, decay);
  return 0;
}

/* The two matrices of nn.dot and nn.max_abs_diff, of one shape. */
static void two_same(lua_State *L, const char *fn, nn_mat **a, nn_mat **b) {
  *a = check_mat(L, 1, fn, "A");
  *b = check_mat(L, 2, fn, "B");
  same_shape(L, fn, "A", *a, "B", *b);
}

/* nn.dot(A, B) -> the sum of A .* B (in double). */
static int l_dot(lua_State *L) {
  nn_mat *a, *b;
  two_same(L, "nn.dot", &a, &b);
  lua_pushnumber(L, orion_nn_dot(HR(a), HR(b), numel(a)));
  return 1;
}

/* nn.max_abs_diff(A, B) -> max |A - B| (for tests). */
static int l_max_abs_diff(lua_State *L) {
  nn_mat *a, *b;
  two_same(L, "nn.max_abs_diff", &a, &b);
  lua_pushnumber(L, orion_nn_max_abs_diff(HR(a), HR(b), numel(a)));
  return 1;
}

/* ======================================================================
 * Sparse (compressed-row) matrices.
 * ====================================================================== */

static int csr_gc(lua_State *L) {
  nn_csr *s = lua_touserdata(L, 1);
  orion__nn_csr_dev_free(s);
  orion_free(s->ptr);
  orion_free(s->col);
  orion_free(s->val);
  s->ptr = NULL;
  s->col = NULL;
  s->val = NULL;
  s->rows = s->nnz = s->cap = 0;
  return 0;
}

static nn_csr *check_csr(lua_State *L, int idx, const char *fn,
                         const char *what) {
  nn_csr *s = luaL_testudata(L, idx, CSR_MT);
  if (s == NULL)
    luaL_error(L, "%s: %s must be an nn sparse matrix (nn.csr_rows), got a "
                  "%s", fn, what, luaL_typename(L, idx));
  return s;
}

static int csr_tostring(lua_State *L) {
  nn_csr *s = check_csr(L, 1, "tostring", "self");
  lua_pushfstring(L, "nn.Csr(%Ix%I, nnz=%I)", (LUAI_UACINT)s->rows,
                  (LUAI_UACINT)s->cols, (LUAI_UACINT)s->nnz);
  return 1;
}

static int csr_shape(lua_State *L) {
  nn_csr *s = check_csr(L, 1, "shape", "self");
  lua_pushinteger(L, s->rows);
  lua_pushinteger(L, s->cols);
  lua_pushinteger(L, s->nnz);
  return 3;
}

/* Element i of a 1-D view as an integer. */
static int64_t view_int(const nn_view *v, int64_t i) {
  return orion_value_get_i64(v->a->values, v->a->type, v->off + i);
}

/* nn.csr_rows(rowptr, cols, vals, ncols, idx, first, count [, S]): rows
 * idx[first..first+count-1] (idx nil: rows first..) of the compressed-row
 * matrix held in three 1-D arrays (rowptr: offsets starting at 0, one more
 * than the rows; cols: 1-based column ids; vals: values) as an nn sparse
 * matrix of count x ncols. */
static int l_csr_rows(lua_State *L) {
  const char *fn = "nn.csr_rows";
  nn_view rp, cv, vv;
  lua_Integer ncols, first, count, i;
  int tidx = 0;
  nn_csr *s;
  int64_t total = 0, nrows;
  check_view(L, 1, fn, "rowptr", &rp);
  check_view(L, 2, fn, "cols", &cv);
  check_view(L, 3, fn, "vals", &vv);
  ncols = check_size(L, 4, fn, "ncols");
  if (!lua_isnil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    tidx = 5;
  }
  first = luaL_checkinteger(L, 6);
  count = check_size(L, 7, fn, "count");
  if (rp.rowlen != 1 || cv.rowlen != 1 || vv.rowlen != 1)
    return luaL_error(L, "%s: rowptr, cols and vals must be 1-D", fn);
  if (cv.rows != vv.rows)
    return luaL_error(L, "%s: cols has %I elements, vals %I", fn,
                      (LUAI_UACINT)cv.rows, (LUAI_UACINT)vv.rows);
  nrows = rp.rows - 1;
  {
    /* Rows are checked against the matrix, not against rowptr's length. */
    nn_view rows_v = rp;
    rows_v.rows = nrows;
    for (i = 0; i < count; i++) {
      int64_t r = row_at(L, fn, &rows_v, tidx, first + i);
      int64_t lo = view_int(&rp, r), hi = view_int(&rp, r + 1);
      if (lo < 0 || hi < lo || hi > cv.rows)
        return luaL_error(L, "%s: rowptr[%I..%I] = %I..%I is not a range "
                             "of 0..%I", fn, (LUAI_UACINT)r + 1,
                          (LUAI_UACINT)r + 2, (LUAI_UACINT)lo,
                          (LUAI_UACINT)hi, (LUAI_UACINT)cv.rows);
      total += hi - lo;
    }
  }
  if (!lua_isnoneornil(L, 8)) {
    s = check_csr(L, 8, fn, "the output");
    lua_pushvalue(L, 8);
  } else {
    s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, CSR_MT);
  }
  {
    int64_t *np = orion_realloc(s->ptr, sizeof *np * (size_t)(count + 1));
    if (np == NULL)
      return luaL_error(L, "%s: out of memory", fn);
    s->ptr = np;
  }
  if (total > s->cap) {
    int32_t *nc = orion_realloc(s->col, sizeof *nc * (size_t)total);
    float *nv;
    if (nc == NULL)
      return luaL_error(L, "%s: out of memory", fn);
    s->col = nc;
    nv = orion_realloc(s->val, sizeof *nv * (size_t)total);
    if (nv == NULL)
      return luaL_error(L, "%s: out of memory", fn);
    s->val = nv;
    s->cap = total;
  }
  s->rows = count;
  s->cols = ncols;
  s->nnz = total;
  s->dev_ok = 0; /* changed on the host */
  s->ptr[0] = 0;
  {
    nn_view rows_v = rp;
    int64_t at = 0;
    rows_v.rows = nrows;
    for (i = 0; i < count; i++) {
      int64_t r = row_at(L, fn, &rows_v, tidx, first + i), e;
      int64_t lo = view_int(&rp, r), hi = view_int(&rp, r + 1);
      touch(L, &rp, r, 2, 0);
      touch(L, &cv, lo, hi - lo, 0);
      touch(L, &vv, lo, hi - lo, 0);
      for (e = lo; e < hi; e++) {
        int64_t c = view_int(&cv, e);
        if (c < 1 || c > ncols)
          return luaL_error(L, "%s: column %I (element %I) is out of range "
                               "1..%I", fn, (LUAI_UACINT)c,
                            (LUAI_UACINT)e + 1, (LUAI_UACINT)ncols);
        s->col[at] = (int32_t)(c - 1);
        s->val[at] = (float)orion_value_get_f64(vv.a->values, vv.a->type,
                                                vv.off + e);
        at++;
      }
      s->ptr[i + 1] = at;
    }
  }
  return 1;
}


/* nn.spmm(C, S, B [, alpha = 1, beta = 0]): C = alpha * S B + beta * C;
 * nn.spmm_t(C, S, B [, alpha = 1, beta = 0]): C = alpha * S^T B + beta * C
 * (C is cols(S) x cols(B)). */
static int spmm(lua_State *L, const char *fn, int trans) {
  nn_mat *c = check_mat(L, 1, fn, "C");
  nn_csr *s = check_csr(L, 2, fn, "S");
  nn_mat *b = check_mat(L, 3, fn, "B");
  float alpha = (float)luaL_optnumber(L, 4, 1.0);
  float beta = (float)luaL_optnumber(L, 5, 0.0);
  orion_nn_csr k;
  if (!trans && b->rows != s->cols)
    return luaL_error(L, "%s: inner dimensions differ: S is %Ix%I, B is "
                         "%Ix%I", fn, (LUAI_UACINT)s->rows,
                      (LUAI_UACINT)s->cols, (LUAI_UACINT)b->rows,
                      (LUAI_UACINT)b->cols);
  if (trans && b->rows != s->rows)
    return luaL_error(L, "%s: S is %Ix%I, B is %Ix%I: S^T B needs B with "
                         "%I rows", fn, (LUAI_UACINT)s->rows,
                      (LUAI_UACINT)s->cols, (LUAI_UACINT)b->rows,
                      (LUAI_UACINT)b->cols, (LUAI_UACINT)s->rows);
  need_shape(L, fn, "C", c, trans ? s->cols : s->rows, b->cols);
  k.rows = s->rows;
  k.cols = s->cols;
  k.ptr = s->ptr;
  k.col = s->col;
  k.val = s->val;
  if (orion__nn_dev_spmm(L, fn, c, s, b, alpha, beta, trans))
    return 0;
  orion_nn_spmm(HW(c), &k, HR(b), b->cols, alpha, beta, trans);
  return 0;
}

static int l_spmm(lua_State *L) { return spmm(L, "nn.spmm", 0); }
static int l_spmm_t(lua_State *L) { return spmm(L, "nn.spmm_t", 1); }

/* ======================================================================
 * Threads.
 * ====================================================================== */

/* nn.threads([n]) -> the OpenBLAS thread count of this process (before
 * the change, when n is given). */
static int l_threads(lua_State *L) {
  int old = orion_nn_threads();
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 1 || n > 1024)
      return luaL_error(L, "nn.threads: %I is not in 1..1024",
                        (LUAI_UACINT)n);
    orion_nn_threads_set((int)n);
  }
  lua_pushinteger(L, old);
  return 1;
}

/* ======================================================================
 * Opening.
 * ====================================================================== */

static const luaL_Reg nn_funcs[] = {
    {"matrix", l_matrix},
    {"from_table", l_from_table},
    {"read", l_read},
    {"read_range", l_read_range},
    {"rows", l_rows},
    {"write", l_write},
    {"add_to", l_add_to},
    {"gemm", l_gemm},
    {"add_bias", l_add_bias},
    {"colsum", l_colsum},
    {"relu", l_relu},
    {"relu_backward", l_relu_backward},
    {"softmax_xent", l_softmax_xent},
    {"argmax", l_argmax},
    {"axpy", l_axpy},
    {"add_scale", l_add_scale},
    {"scale", l_scale},
    {"fill", l_fill},
    {"copy", l_copy},
    {"momentum", l_momentum},
    {"dot", l_dot},
    {"max_abs_diff", l_max_abs_diff},
    {"csr_rows", l_csr_rows},
    {"spmm", l_spmm},
    {"spmm_t", l_spmm_t},
    {"threads", l_threads},
    {"device", orion__nn_l_device},
    {NULL, NULL}};

/* The functions lua/nn_driver.c gives the driver's table.  In an
 * executor's table each is a stub that says it runs on the driver only
 * (so that a body naming one gets that message, and a captured nn table
 * decodes with the same names). */
static const char *const driver_names[] = {
    "read_idx", "read_docs", "bow_features", "take", "to_array", NULL};

static int driver_only(lua_State *L) {
  return luaL_error(L, "nn.%s runs on the driver only, not inside a "
                       "parallel_for body",
                    lua_tostring(L, lua_upvalueindex(1)));
}

/* Makes metatable mt (once per state) with __tostring, __gc when given,
 * and the methods as __index. */
static void new_class(lua_State *L, const char *mt, lua_CFunction tostring,
                      lua_CFunction gc, const luaL_Reg *methods) {
  int n;
  if (luaL_newmetatable(L, mt)) {
    if (gc != NULL) {
      lua_pushcfunction(L, gc);
      lua_setfield(L, -2, "__gc");
    }
    lua_pushcfunction(L, tostring);
    lua_setfield(L, -2, "__tostring");
    for (n = 0; methods[n].name != NULL; n++)
      ;
    lua_createtable(L, 0, n); /* as luaL_newlib sizes it */
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
}

/* Made once per state; see nn.h.  host and driver_funcs are static data
 * of the driver's half. */
int orion__nn_open(lua_State *L, const orion__nn_host *host,
                   const luaL_Reg *driver_funcs) {
  static const luaL_Reg mat_methods[] = {
      {"rows", m_rows}, {"cols", m_cols},  {"shape", m_shape},
      {"get", m_get},   {"set", m_set},    {"copy", m_copy},
      {"sum", m_sum},   {"fill", l_fill},  {"to_table", m_to_table},
      {NULL, NULL}};
  static const luaL_Reg csr_methods[] = {{"shape", csr_shape},
                                         {NULL, NULL}};
  int i;
  lua_getfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  if (lua_istable(L, -1))
    return 1;
  lua_pop(L, 1);
  orion_nn_threads_init();
  new_class(L, MAT_MT, m_tostring, mat_gc, mat_methods);
  new_class(L, CSR_MT, csr_tostring, csr_gc, csr_methods);
  lua_pushlightuserdata(L, (void *)host);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &host_key);
  luaL_newlib(L, nn_funcs);
  if (driver_funcs != NULL) {
    luaL_setfuncs(L, driver_funcs, 0);
  } else {
    for (i = 0; driver_names[i] != NULL; i++) {
      lua_pushstring(L, driver_names[i]);
      lua_pushcclosure(L, driver_only, 1);
      lua_setfield(L, -2, driver_names[i]);
    }
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  return 1;
}


/* The values of the matrix at idx (L's userdata: valid while it lives). */
float *orion__nn_check_matrix(lua_State *L, int idx, const char *fn,
                              const char *what, int64_t *rows,
                              int64_t *cols) {
  nn_mat *m = check_mat(L, idx, fn, what);
  *rows = m->rows;
  *cols = m->cols;
  return HW(m);
}
