/* orion.nn: f32 matrix math for neural networks over OpenBLAS.  See
 * lua/nn.h; the user reference is the orion.nn section of docs/lua-api.md.
 *
 * Every function checks its arguments' shapes and raises a Lua error that
 * names the function and the shapes ("nn.gemm: inner dimensions differ:
 * op(A) is 100x784, op(B) is 256x10").  Matrices are row-major; keys and
 * class labels are 1-based, as everywhere in Lua.
 */
#include "lua/nn.h"

/* The elementwise kernels below are written to vectorise (restrict
 * pointers, branch-free selects); GCC's -O2 does not vectorise loops of
 * unknown trip count, so ask for it here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <cblas.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/idx.h"
#include "lua/exec.h"
#include "lua/module.h"
#include "util/alloc.h"

#define MAT_MT "orion.nn.Matrix"
#define CSR_MT "orion.nn.Csr"

/* ======================================================================
 * Matrices.
 * ====================================================================== */

/* A dense matrix; the values follow the header inside the userdata. */
typedef struct nn_mat {
  int64_t rows, cols;
  float *v;
} nn_mat;

/* A compressed-row sparse matrix (orion_malloc'd arrays, freed by __gc).
 * col holds 0-based column ids. */
typedef struct nn_csr {
  int64_t rows, cols, nnz, cap;
  int64_t *ptr; /* rows + 1 */
  int32_t *col;
  float *val;
} nn_csr;

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
  m->rows = rows;
  m->cols = cols;
  /* Align the values to 64 bytes for the kernels. */
  m->v = (float *)(((uintptr_t)(m + 1) + 63) & ~(uintptr_t)63);
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
  if (fill) {
    int64_t i, n = numel(m);
    for (i = 0; i < n; i++)
      m->v[i] = x;
  }
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
      m->v[i] = (float)luaL_checknumber(L, -1);
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
      m->v[i * c + j] = (float)luaL_checknumber(L, -1);
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
  lua_pushnumber(L, m->v[elem_index(L, m, "get")]);
  return 1;
}

static int m_set(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "set", "self");
  int64_t k = elem_index(L, m, "set");
  m->v[k] = (float)luaL_checknumber(L, 4);
  return 0;
}

static int m_copy(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "copy", "self");
  nn_mat *c = new_mat(L, m->rows, m->cols);
  memcpy(c->v, m->v, sizeof(float) * (size_t)numel(m));
  return 1;
}

static int m_sum(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "sum", "self");
  double s = 0;
  int64_t i, n = numel(m);
  for (i = 0; i < n; i++)
    s += m->v[i];
  lua_pushnumber(L, s);
  return 1;
}

static int m_to_table(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "to_table", "self");
  int64_t i, j;
  if (numel(m) > 10000000)
    return luaL_error(L, "to_table: a %Ix%I matrix is too large",
                      (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols);
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
  void *buffer;    /* an executor buffer: writes go to pending values */
  darray *d;       /* a driver DistArray (its gen is bumped on writes) */
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

/* Fills v from the array data at idx, or raises an error naming fn. */
static void check_view(lua_State *L, int idx, const char *fn,
                       const char *what, nn_view *v) {
  orion_exec_view ev;
  darray *d;
  memset(v, 0, sizeof *v);
  if (orion_exec_view_of(L, idx, &ev)) {
    v->a = ev.a;
    v->off = ev.off;
    v->depth = ev.depth;
    v->name = ev.name;
    v->buffer = ev.buffer;
  } else if ((d = luaL_testudata(L, idx, ARRAY_MT)) != NULL) {
    if (d->a == NULL)
      luaL_error(L, "%s: DistArray has been freed", fn);
    v->a = d->a;
    v->d = d;
    v->name = "DistArray";
  } else if (luaL_testudata(L, idx, BUFFER_MT) != NULL) {
    luaL_error(L, "%s: %s is a Buffer: buffers are written inside "
                  "parallel_for bodies only", fn, what);
  } else {
    luaL_error(L, "%s: %s must be a DistArray, a slice of one or a buffer, "
                  "got a %s", fn, what, luaL_typename(L, idx));
  }
  if (v->a->sparse)
    luaL_error(L, "%s: array '%s' is sparse (orion.nn reads dense arrays)",
               fn, v->name);
  view_shape(v);
}

/* Copies n elements of a (from element `at`) into f32 dst. */
static void load_f32(const orion_array *a, int64_t at, float *dst,
                     int64_t n) {
  int64_t i;
  switch (a->type) {
  case ORION_F32:
    memcpy(dst, (const float *)a->values + at, sizeof(float) * (size_t)n);
    break;
  case ORION_F64:
    for (i = 0; i < n; i++)
      dst[i] = (float)((const double *)a->values)[at + i];
    break;
  case ORION_I32:
    for (i = 0; i < n; i++)
      dst[i] = (float)((const int32_t *)a->values)[at + i];
    break;
  case ORION_I64:
    for (i = 0; i < n; i++)
      dst[i] = (float)((const int64_t *)a->values)[at + i];
    break;
  }
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
  check_view(L, 1, "nn.read", "the source", &v);
  if (v.buffer != NULL)
    return luaL_error(L, "nn.read: '%s' is a buffer, which nn can only "
                         "write (nn.add_to, nn.write)", v.name);
  if (v.depth + 1 >= v.a->ndims) {
    r = 1;
    c = v.rows * v.rowlen;
  } else {
    r = v.rows;
    c = v.rowlen;
  }
  m = out_mat(L, 2, "nn.read", r, c);
  load_f32(v.a, v.off, m->v, r * c);
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
  check_view(L, 1, "nn.read_range", "the source", &v);
  if (v.buffer != NULL)
    return luaL_error(L, "nn.read_range: '%s' is a buffer, which nn can "
                         "only write (nn.add_to, nn.write)", v.name);
  at = range_at(L, "nn.read_range", &v, first, r * c);
  m = out_mat(L, 5, "nn.read_range", r, c);
  load_f32(v.a, v.off + at, m->v, r * c);
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
  check_view(L, 1, "nn.rows", "the source", &v);
  if (v.buffer != NULL)
    return luaL_error(L, "nn.rows: '%s' is a buffer, which nn can only "
                         "write (nn.add_to, nn.write)", v.name);
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    tidx = 2;
  }
  first = luaL_checkinteger(L, 3);
  count = check_size(L, 4, "nn.rows", "count");
  m = out_mat(L, 5, "nn.rows", count, v.rowlen);
  for (i = 0; i < count; i++) {
    int64_t r = row_at(L, "nn.rows", &v, tidx, first + i);
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
  int64_t i, at = v->off + first;
  if (v->buffer != NULL) {
    orion_exec_view ev;
    int rc;
    memset(&ev, 0, sizeof ev);
    ev.a = a;
    ev.off = v->off;
    ev.depth = v->depth;
    ev.name = v->name;
    ev.buffer = v->buffer;
    rc = orion_exec_view_pend(&ev, first, x, x0, n, alpha, !add);
    if (rc == ORION_EINVAL)
      luaL_error(L, "%s: buffer '%s' has an integer target; nn writes "
                    "float arrays only", fn, v->name);
    if (rc != 0)
      luaL_error(L, "%s: buffer '%s': out of memory for pending writes", fn,
                 v->name);
    return;
  }
  switch (a->type) {
  case ORION_F32: {
    float *p = (float *)a->values + at;
    if (!add)
      memcpy(p, x, sizeof(float) * (size_t)n);
    else
      for (i = 0; i < n; i++)
        p[i] = (float)(p[i] + alpha * ((double)x[i] - (x0 ? x0[i] : 0.0)));
    break;
  }
  case ORION_F64: {
    double *p = (double *)a->values + at;
    for (i = 0; i < n; i++)
      p[i] = add ? p[i] + alpha * ((double)x[i] - (x0 ? x0[i] : 0.0))
                 : (double)x[i];
    break;
  }
  default:
    luaL_error(L, "%s: array '%s' is %s; nn writes f32 and f64 arrays only",
               fn, v->name, orion_type_name(a->type));
  }
  if (v->d != NULL)
    v->d->gen++; /* the executors' copies are stale now (lua/dist.c) */
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
    store_view(L, fn, &v, at, m->v, m0 ? m0->v : NULL, numel(m), add, alpha);
    return 0;
  }
  if (m0 != NULL)
    return luaL_error(L, "%s: M0 needs the position argument", fn);
  if (v.depth + 1 >= v.a->ndims) {
    r = 1;
    c = v.rows * v.rowlen;
  } else {
    r = v.rows;
    c = v.rowlen;
  }
  if (m->rows != r || m->cols != c) {
    /* A column or row vector for a 1-D view is fine too. */
    if (!(numel(m) == r * c && (m->rows == 1 || m->cols == 1) && r == 1))
      return luaL_error(L, "%s: the matrix is %Ix%I, '%s' is %Ix%I", fn,
                        (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, v.name,
                        (LUAI_UACINT)r, (LUAI_UACINT)c);
  }
  store_view(L, fn, &v, 0, m->v, NULL, numel(m), add, alpha);
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
  if (m == 0 || n == 0)
    return 0;
  if (k == 0) {
    int64_t i;
    for (i = 0; i < m * n; i++)
      c->v[i] = beta == 0 ? 0 : beta * c->v[i];
    return 0;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
              a->v, (int)(a->cols > 0 ? a->cols : 1), b->v,
              (int)(b->cols > 0 ? b->cols : 1), beta, c->v,
              (int)(c->cols > 0 ? c->cols : 1));
  return 0;
}

/* nn.add_bias(M, b): adds the 1 x cols (or cols x 1) b to every row. */
static int l_add_bias(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.add_bias", "M");
  nn_mat *b = check_mat(L, 2, "nn.add_bias", "b");
  int64_t i, j;
  if (numel(b) != m->cols || (b->rows != 1 && b->cols != 1))
    return luaL_error(L, "nn.add_bias: M is %Ix%I, b is %Ix%I (expected "
                         "1x%I)",
                      (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols,
                      (LUAI_UACINT)b->rows, (LUAI_UACINT)b->cols,
                      (LUAI_UACINT)m->cols);
  for (i = 0; i < m->rows; i++) {
    float *restrict row = m->v + i * m->cols;
    const float *restrict bv = b->v;
    for (j = 0; j < m->cols; j++)
      row[j] += bv[j];
  }
  return 0;
}

/* nn.colsum(db, M [, alpha = 1, beta = 0]): db = alpha * (column sums of
 * M) + beta * db, db 1 x cols. */
static int l_colsum(lua_State *L) {
  nn_mat *db = check_mat(L, 1, "nn.colsum", "db");
  nn_mat *m = check_mat(L, 2, "nn.colsum", "M");
  float alpha = (float)luaL_optnumber(L, 3, 1.0);
  float beta = (float)luaL_optnumber(L, 4, 0.0);
  int64_t i, j;
  if (numel(db) != m->cols || (db->rows != 1 && db->cols != 1))
    return luaL_error(L, "nn.colsum: M is %Ix%I, db is %Ix%I (expected "
                         "1x%I)",
                      (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols,
                      (LUAI_UACINT)db->rows, (LUAI_UACINT)db->cols,
                      (LUAI_UACINT)m->cols);
  {
    float *restrict d = db->v;
    for (j = 0; j < m->cols; j++)
      d[j] = beta == 0 ? 0 : beta * d[j];
    for (i = 0; i < m->rows; i++) {
      const float *restrict row = m->v + i * m->cols;
      for (j = 0; j < m->cols; j++)
        d[j] += alpha * row[j];
    }
  }
  return 0;
}

/* nn.relu(M): M = max(M, 0) in place. */
static int l_relu(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.relu", "M");
  int64_t i, n = numel(m);
  float *restrict p = m->v;
  for (i = 0; i < n; i++)
    p[i] = p[i] > 0.0f ? p[i] : 0.0f;
  return 0;
}

/* nn.relu_backward(dH, H): dH = 0 where H <= 0 (H the ReLU's output). */
static int l_relu_backward(lua_State *L) {
  nn_mat *dh = check_mat(L, 1, "nn.relu_backward", "dH");
  nn_mat *h = check_mat(L, 2, "nn.relu_backward", "H");
  int64_t i, n = numel(h);
  same_shape(L, "nn.relu_backward", "dH", dh, "H", h);
  {
    float *restrict d = dh->v;
    const float *restrict hv = h->v;
    for (i = 0; i < n; i++)
      d[i] = hv[i] > 0.0f ? d[i] : 0.0f;
  }
  return 0;
}

/* The 0-based class of row i from the labels matrix y (1-based values). */
static int64_t label_of(lua_State *L, const char *fn, const nn_mat *y,
                        int64_t i, int64_t classes) {
  float f = y->v[i];
  int64_t c = (int64_t)f;
  if ((float)c != f || c < 1 || c > classes)
    luaL_error(L, "%s: label %f of row %I is not a class in 1..%I", fn,
               (double)f, (LUAI_UACINT)i + 1, (LUAI_UACINT)classes);
  return c - 1;
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
  int64_t i, j, k = z->cols, correct = 0;
  double loss = 0;
  check_labels(L, fn, z, y);
  if (dz != NULL)
    same_shape(L, fn, "dZ", dz, "Z", z);
  if (k == 0 && z->rows > 0)
    return luaL_error(L, "%s: Z has no columns", fn);
  for (i = 0; i < z->rows; i++) {
    const float *row = z->v + i * k;
    int64_t c = label_of(L, fn, y, i, k), best = 0;
    double mx = row[0], s = 0;
    for (j = 1; j < k; j++)
      if (row[j] > row[best])
        best = j;
    mx = row[best];
    for (j = 0; j < k; j++)
      s += exp((double)row[j] - mx);
    loss += log(s) + mx - row[c];
    correct += best == c;
    if (dz != NULL) {
      float *d = dz->v + i * k;
      for (j = 0; j < k; j++)
        d[j] = (float)(exp((double)row[j] - mx) / s);
      d[c] -= 1.0f;
    }
  }
  lua_pushnumber(L, loss);
  lua_pushinteger(L, correct);
  return 2;
}

/* nn.argmax(Z [, out]) -> rows x 1 matrix of 1-based classes. */
static int l_argmax(lua_State *L) {
  nn_mat *z = check_mat(L, 1, "nn.argmax", "Z");
  nn_mat *o = out_mat(L, 2, "nn.argmax", z->rows, 1);
  int64_t i, j;
  for (i = 0; i < z->rows; i++) {
    const float *row = z->v + i * z->cols;
    int64_t best = 0;
    for (j = 1; j < z->cols; j++)
      if (row[j] > row[best])
        best = j;
    o->v[i] = (float)(best + 1);
  }
  return 1;
}

/* nn.axpy(Y, alpha, X): Y = Y + alpha * X. */
static int l_axpy(lua_State *L) {
  nn_mat *y = check_mat(L, 1, "nn.axpy", "Y");
  float alpha = (float)luaL_checknumber(L, 2);
  nn_mat *x = check_mat(L, 3, "nn.axpy", "X");
  int64_t i, n = numel(y);
  same_shape(L, "nn.axpy", "Y", y, "X", x);
  if (y == x || n > INT32_MAX) {
    for (i = 0; i < n; i++)
      y->v[i] += alpha * x->v[i];
  } else {
    cblas_saxpy((blasint)n, alpha, x->v, 1, y->v, 1);
  }
  return 0;
}

/* nn.scale(M, a): M = a * M. */
static int l_scale(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.scale", "M");
  float a = (float)luaL_checknumber(L, 2);
  int64_t i, n = numel(m);
  float *restrict p = m->v;
  for (i = 0; i < n; i++)
    p[i] *= a;
  return 0;
}

/* nn.fill(M, x). */
static int l_fill(lua_State *L) {
  nn_mat *m = check_mat(L, 1, "nn.fill", "M");
  float x = (float)luaL_checknumber(L, 2);
  int64_t i, n = numel(m);
  for (i = 0; i < n; i++)
    m->v[i] = x;
  return 0;
}

/* nn.copy(dst, src): same shapes. */
static int l_copy(lua_State *L) {
  nn_mat *d = check_mat(L, 1, "nn.copy", "dst");
  nn_mat *s = check_mat(L, 2, "nn.copy", "src");
  same_shape(L, "nn.copy", "dst", d, "src", s);
  memcpy(d->v, s->v, sizeof(float) * (size_t)numel(s));
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
  int64_t i, n = numel(w);
  same_shape(L, fn, "W", w, "V", v);
  same_shape(L, fn, "W", w, "G", g);
  if (w == v || w == g || v == g)
    return luaL_error(L, "%s: W, V and G must be different matrices", fn);
  {
    float *restrict wv = w->v, *restrict vv = v->v;
    const float *restrict gv = g->v;
    if (decay == 0) {
      for (i = 0; i < n; i++) {
        float vi = mu * vv[i] - lr * gv[i];
        vv[i] = vi;
        wv[i] += vi;
      }
    } else {
      for (i = 0; i < n; i++) {
        float vi = mu * vv[i] - lr * (gv[i] + decay * wv[i]);
        vv[i] = vi;
        wv[i] += vi;
      }
    }
  }
  return 0;
}

/* nn.dot(A, B) -> the sum of A .* B (in double). */
static int l_dot(lua_State *L) {
  nn_mat *a = check_mat(L, 1, "nn.dot", "A");
  nn_mat *b = check_mat(L, 2, "nn.dot", "B");
  int64_t i, n = numel(a);
  double s = 0;
  same_shape(L, "nn.dot", "A", a, "B", b);
  for (i = 0; i < n; i++)
    s += (double)a->v[i] * b->v[i];
  lua_pushnumber(L, s);
  return 1;
}

/* nn.max_abs_diff(A, B) -> max |A - B| (for tests). */
static int l_max_abs_diff(lua_State *L) {
  nn_mat *a = check_mat(L, 1, "nn.max_abs_diff", "A");
  nn_mat *b = check_mat(L, 2, "nn.max_abs_diff", "B");
  int64_t i, n = numel(a);
  double mx = 0;
  same_shape(L, "nn.max_abs_diff", "A", a, "B", b);
  for (i = 0; i < n; i++) {
    double d = fabs((double)a->v[i] - b->v[i]);
    if (d > mx || d != d)
      mx = d;
  }
  lua_pushnumber(L, mx);
  return 1;
}

/* ======================================================================
 * Sparse (compressed-row) matrices.
 * ====================================================================== */

static int csr_gc(lua_State *L) {
  nn_csr *s = lua_touserdata(L, 1);
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
  s->ptr[0] = 0;
  {
    nn_view rows_v = rp;
    int64_t at = 0;
    rows_v.rows = nrows;
    for (i = 0; i < count; i++) {
      int64_t r = row_at(L, fn, &rows_v, tidx, first + i), e;
      int64_t lo = view_int(&rp, r), hi = view_int(&rp, r + 1);
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

static void scale_rows(float *c, int64_t n, float beta) {
  int64_t i;
  if (beta == 0)
    memset(c, 0, sizeof(float) * (size_t)n);
  else if (beta != 1)
    for (i = 0; i < n; i++)
      c[i] *= beta;
}

/* nn.spmm(C, S, B [, alpha = 1, beta = 0]): C = alpha * S B + beta * C. */
static int l_spmm(lua_State *L) {
  const char *fn = "nn.spmm";
  nn_mat *c = check_mat(L, 1, fn, "C");
  nn_csr *s = check_csr(L, 2, fn, "S");
  nn_mat *b = check_mat(L, 3, fn, "B");
  float alpha = (float)luaL_optnumber(L, 4, 1.0);
  float beta = (float)luaL_optnumber(L, 5, 0.0);
  int64_t i, e, j, n = b->cols;
  if (b->rows != s->cols)
    return luaL_error(L, "%s: inner dimensions differ: S is %Ix%I, B is "
                         "%Ix%I", fn, (LUAI_UACINT)s->rows,
                      (LUAI_UACINT)s->cols, (LUAI_UACINT)b->rows,
                      (LUAI_UACINT)b->cols);
  need_shape(L, fn, "C", c, s->rows, n);
  scale_rows(c->v, numel(c), beta);
  for (i = 0; i < s->rows; i++) {
    float *crow = c->v + i * n;
    for (e = s->ptr[i]; e < s->ptr[i + 1]; e++) {
      float x = alpha * s->val[e];
      const float *brow = b->v + (int64_t)s->col[e] * n;
      for (j = 0; j < n; j++)
        crow[j] += x * brow[j];
    }
  }
  return 0;
}

/* nn.spmm_t(C, S, B [, alpha = 1, beta = 0]): C = alpha * S^T B + beta * C
 * (C is cols(S) x cols(B)). */
static int l_spmm_t(lua_State *L) {
  const char *fn = "nn.spmm_t";
  nn_mat *c = check_mat(L, 1, fn, "C");
  nn_csr *s = check_csr(L, 2, fn, "S");
  nn_mat *b = check_mat(L, 3, fn, "B");
  float alpha = (float)luaL_optnumber(L, 4, 1.0);
  float beta = (float)luaL_optnumber(L, 5, 0.0);
  int64_t i, e, j, n = b->cols;
  if (b->rows != s->rows)
    return luaL_error(L, "%s: S is %Ix%I, B is %Ix%I: S^T B needs B with "
                         "%I rows", fn, (LUAI_UACINT)s->rows,
                      (LUAI_UACINT)s->cols, (LUAI_UACINT)b->rows,
                      (LUAI_UACINT)b->cols, (LUAI_UACINT)s->rows);
  need_shape(L, fn, "C", c, s->cols, n);
  scale_rows(c->v, numel(c), beta);
  for (i = 0; i < s->rows; i++) {
    const float *brow = b->v + i * n;
    for (e = s->ptr[i]; e < s->ptr[i + 1]; e++) {
      float x = alpha * s->val[e];
      float *crow = c->v + (int64_t)s->col[e] * n;
      for (j = 0; j < n; j++)
        crow[j] += x * brow[j];
    }
  }
  return 0;
}

/* ======================================================================
 * Threads.
 * ====================================================================== */

static int blas_threads = 1;

static void set_threads(int n) {
  if (n < 1)
    n = 1;
  openblas_set_num_threads(n);
  blas_threads = n;
}

/* nn.threads([n]) -> the OpenBLAS thread count of this process (before
 * the change, when n is given). */
static int l_threads(lua_State *L) {
  int old = blas_threads;
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 1 || n > 1024)
      return luaL_error(L, "nn.threads: %I is not in 1..1024",
                        (LUAI_UACINT)n);
    set_threads((int)n);
  }
  lua_pushinteger(L, old);
  return 1;
}

static void default_threads(void) {
  static int done;
  const char *e = getenv("ORION_BLAS_THREADS");
  if (done)
    return;
  done = 1;
  set_threads(e != NULL && atoi(e) > 0 ? atoi(e) : 1);
}

/* ======================================================================
 * Driver-only: readers that make DistArrays.
 * ====================================================================== */

static void driver_only(lua_State *L, const char *fn) {
  lua_getfield(L, LUA_REGISTRYINDEX, STATE_KEY);
  if (lua_isnil(L, -1))
    luaL_error(L, "%s runs on the driver only, not inside a parallel_for "
                  "body", fn);
  lua_pop(L, 1);
}

static void raise_err(lua_State *L, const orion_error *err) {
  luaL_error(L, "%s", err->msg[0] ? err->msg : orion_strerror(err->code));
}

/* nn.read_idx(path [, {type =, scale =, shift =, flatten =}]) -> DistArray */
static int l_read_idx(lua_State *L) {
  static const char *const keys[] = {"type", "scale", "shift", "flatten",
                                     NULL};
  const char *path;
  orion_idx_opts o;
  orion_array *a;
  orion_error err;
  driver_only(L, "nn.read_idx");
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
    raise_err(L, &err);
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
  driver_only(L, "nn.read_docs");
  path = luaL_checkstring(L, 1);
  orion_error_clear(&err);
  if (orion_docs_read(path, &docs, &err) != 0)
    raise_err(L, &err);
  dims[0] = docs.n;
  lab = orion_array_new_dense(1, dims, ORION_I32, &err);
  tst = lab != NULL ? orion_array_new_dense(1, dims, ORION_I32, &err) : NULL;
  if (lab == NULL || tst == NULL) {
    orion_array_release(lab);
    orion_docs_free(&docs);
    raise_err(L, &err);
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
  driver_only(L, fn);
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
    raise_err(L, &err);
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
  driver_only(L, fn);
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
    raise_err(L, &err);
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
  nn_mat *m;
  orion_type t = ORION_F32;
  int64_t dims[2], i;
  orion_array *a;
  orion_error err;
  driver_only(L, "nn.to_array");
  m = check_mat(L, 1, "nn.to_array", "M");
  if (!lua_isnoneornil(L, 2) &&
      (orion_type_parse(luaL_checkstring(L, 2), &t) != 0 ||
       orion_type_is_int(t)))
    return luaL_error(L, "nn.to_array: type must be \"f32\" or \"f64\"");
  if (m->rows < 1 || m->cols < 1)
    return luaL_error(L, "nn.to_array: a %Ix%I matrix has no elements",
                      (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols);
  dims[0] = m->rows;
  dims[1] = m->cols;
  orion_error_clear(&err);
  a = orion_array_new_dense(2, dims, t, &err);
  if (a == NULL)
    raise_err(L, &err);
  for (i = 0; i < numel(m); i++)
    orion_value_set_f64(a->values, t, i, m->v[i]);
  orion__push_array(L, a);
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
    {"read_idx", l_read_idx},
    {"read_docs", l_read_docs},
    {"bow_features", l_bow_features},
    {"take", l_take},
    {"to_array", l_to_array},
    {NULL, NULL}};

static int open_common(lua_State *L) {
  static const luaL_Reg mat_methods[] = {
      {"rows", m_rows}, {"cols", m_cols},  {"shape", m_shape},
      {"get", m_get},   {"set", m_set},    {"copy", m_copy},
      {"sum", m_sum},   {"fill", l_fill},  {"to_table", m_to_table},
      {NULL, NULL}};
  static const luaL_Reg csr_methods[] = {{"shape", csr_shape},
                                         {NULL, NULL}};
  lua_getfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  if (lua_istable(L, -1))
    return 1;
  lua_pop(L, 1);
  default_threads();
  if (luaL_newmetatable(L, MAT_MT)) {
    lua_pushcfunction(L, m_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, mat_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, CSR_MT)) {
    lua_pushcfunction(L, csr_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, csr_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, csr_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_newlib(L, nn_funcs);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  return 1;
}

int orion_nn_open(lua_State *L) { return open_common(L); }

int orion_nn_open_body(lua_State *L) { return open_common(L); }
