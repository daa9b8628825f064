/* orion.nn on an executor's GPU: the device copies of nn matrices and the
 * dispatch of the binding's kernels to kernels/nn_gpu.h.  See executor/nn_int.h
 * for how the host and device copies stay coherent, executor/nn.h for
 * orion_nn_set_gpu.
 *
 * Which kernels run on the device when a state has one: GEMM, the sparse
 * products and softmax cross-entropy always; element-wise and row kernels
 * (fill, scale, copy, axpy, ReLU, momentum, bias, column sums) when one of
 * their operands already has a current device copy, so that a chain of
 * kernels stays on the device and bookkeeping on small host matrices does
 * not travel.  When device memory is full (after one garbage collection),
 * a kernel runs on the CPU instead, once saying so on stderr.
 */
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "kernels/nn_gpu.h"
#include "executor/nn.h"
#include "executor/nn_int.h"

/* The registry slot of a state's device (an nn_devstate userdata). */
static const char dev_key = 'g';

typedef struct nn_devstate {
  orion_gpu *g;
  void *scratch; /* ORION_NN_GPU_XENT_SCRATCH bytes on g */
  int warned;    /* said once that device memory is full */
} nn_devstate;

static int devstate_gc(lua_State *L) {
  nn_devstate *s = lua_touserdata(L, 1);
  if (s->g != NULL && s->scratch != NULL)
    orion_gpu_free(s->g, s->scratch);
  s->scratch = NULL;
  s->g = NULL;
  return 0;
}

static nn_devstate *devstate(lua_State *L) {
  nn_devstate *s;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &dev_key);
  s = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return s != NULL && s->g != NULL ? s : NULL;
}

int orion_nn_set_gpu(lua_State *L, orion_gpu *g, orion_error *err) {
  nn_devstate *s;
  void *scratch = NULL;
  if (g != NULL &&
      orion_gpu_alloc(g, ORION_NN_GPU_XENT_SCRATCH, "orion.nn scratch",
                      &scratch, err) != 0)
    return err != NULL && err->code != 0 ? err->code : ORION_ENOMEM;
  s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  s->g = g;
  s->scratch = scratch;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, devstate_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &dev_key); /* the old one is collected */
  return 0;
}

int orion__nn_l_device(lua_State *L) {
  nn_devstate *s = devstate(L);
  char buf[256];
  if (s == NULL) {
    lua_pushnil(L);
    return 1;
  }
  orion_gpu_describe(s->g, buf, sizeof buf);
  lua_pushstring(L, buf);
  return 1;
}

/* ======================================================================
 * Copies.
 * ====================================================================== */

static size_t mat_bytes(const nn_mat *m) {
  return sizeof(float) * (size_t)(m->rows * m->cols);
}

float *orion__nn_hostv(lua_State *L, nn_mat *m, int mode) {
  if (mode != 0 && m->inflight) { /* an upload may still read v */
    orion_error err;
    orion_error_clear(&err);
    if (orion_nn_gpu_wait(m->g, m->ev, 0, &err) != 0)
      luaL_error(L, "nn: %s", err.msg);
    m->inflight = 0;
  }
  if (!m->host_ok && mode != 2) {
    orion_error err;
    orion_error_clear(&err);
    if (orion_gpu_d2h(m->g, m->v, m->d, mat_bytes(m), &err) != 0)
      luaL_error(L, "nn: copying a %Ix%I matrix from the GPU: %s",
                 (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, err.msg);
  }
  m->host_ok = 1;
  if (mode != 0)
    m->dev_ok = 0;
  return m->v;
}

void orion__nn_dev_free(nn_mat *m) {
  if (m->pinned != NULL) { /* back inside the userdata */
    memcpy(m->inl, m->pinned, mat_bytes(m));
    m->v = m->inl;
    orion_gpu_host_free(m->g, m->pinned);
    m->pinned = NULL;
  }
  orion_nn_gpu_event_free(m->ev);
  m->ev = NULL;
  m->inflight = 0;
  if (m->d != NULL)
    orion_gpu_free(m->g, m->d);
  m->d = NULL;
  m->dev_ok = 0;
}

void orion__nn_csr_dev_free(nn_csr *s) {
  if (s->g != NULL) {
    orion_gpu_free(s->g, s->dptr);
    orion_gpu_free(s->g, s->dcol);
    orion_gpu_free(s->g, s->dval);
  }
  s->dptr = NULL;
  s->dcol = NULL;
  s->dval = NULL;
  s->drows = s->dnnz = 0;
  s->dev_ok = 0;
}

/* bytes (at least 1) of device memory, after a full garbage collection
 * when the first try fails (until device memory has been found full once:
 * then the kernels that cannot get theirs run on the CPU without
 * collecting each time); NULL (said once on stderr) when it is full. */
static void *dev_alloc(lua_State *L, nn_devstate *ds, size_t bytes,
                       const char *what) {
  void *p = NULL;
  orion_error err;
  int tries;
  for (tries = 0; tries < (ds->warned ? 1 : 2); tries++) {
    orion_error_clear(&err);
    if (orion_gpu_alloc(ds->g, bytes ? bytes : 1, what, &p, &err) == 0)
      return p;
    if (!ds->warned)
      lua_gc(L, LUA_GCCOLLECT, 0); /* unreachable matrices free theirs */
  }
  if (!ds->warned) {
    fprintf(stderr, "orion.nn: %s; running nn kernels on the CPU while "
                    "device memory is full\n", err.msg);
    ds->warned = 1;
  }
  return NULL;
}

/* Raises fn's device error. */
static void dev_fail(lua_State *L, const char *fn, const orion_error *err) {
  luaL_error(L, "%s on the GPU: %s", fn, err->msg);
}

/* Matrices of at least this many bytes move to page-locked memory at
 * their second upload. */
#define PIN_MIN (64 << 10)

/* Copies m's host values to its device copy: waiting for the device, or,
 * from page-locked memory, queued behind the kernels before it. */
static void upload(lua_State *L, nn_devstate *ds, nn_mat *m) {
  size_t bytes = mat_bytes(m);
  void *p;
  int rc;
  orion_error err;
  orion_error_clear(&err);
  if (m->pinned == NULL && m->uploads > 0 && bytes >= PIN_MIN &&
      orion_gpu_host_alloc(ds->g, bytes, &p, &err) == 0) {
    memcpy(p, m->v, bytes);
    m->pinned = p;
    m->v = p;
  }
  m->uploads++;
  orion_error_clear(&err);
  rc = m->pinned != NULL
           ? orion_nn_gpu_h2d_tracked(ds->g, m->d, m->v, bytes, &m->ev, &err)
           : orion_gpu_h2d(ds->g, m->d, m->v, bytes, &err);
  if (rc != 0)
    luaL_error(L, "nn: copying a %Ix%I matrix to the GPU: %s",
               (LUAI_UACINT)m->rows, (LUAI_UACINT)m->cols, err.msg);
  m->inflight = m->pinned != NULL;
  m->dev_ok = 1;
}

/* m's device copy, made current for reading (out 0) or only allocated for
 * a kernel that overwrites every value (out 1); NULL when device memory
 * is full. */
static float *mat_dev(lua_State *L, nn_devstate *ds, nn_mat *m, int out) {
  if (m->d != NULL && m->g != ds->g) { /* another device: move it here */
    orion__nn_hostv(L, m, 1);
    orion__nn_dev_free(m);
  }
  if (m->d == NULL) {
    m->d = dev_alloc(L, ds, mat_bytes(m), "an nn matrix");
    if (m->d == NULL)
      return NULL;
    m->g = ds->g;
    m->dev_ok = 0;
  }
  if (!out && !m->dev_ok)
    upload(L, ds, m);
  return m->d;
}

/* m now holds its current values on the device only. */
static void dev_wrote(nn_mat *m) {
  m->dev_ok = 1;
  m->host_ok = 0;
}

/* ======================================================================
 * Kernels.
 * ====================================================================== */

int orion__nn_dev_gemm(lua_State *L, nn_mat *c, nn_mat *a, nn_mat *b,
                       int ta, int tb, float alpha, float beta) {
  nn_devstate *ds = devstate(L);
  float *da, *db, *dc;
  int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  int64_t n = tb ? b->rows : b->cols;
  orion_error err;
  if (ds == NULL)
    return 0;
  if ((da = mat_dev(L, ds, a, 0)) == NULL ||
      (db = mat_dev(L, ds, b, 0)) == NULL ||
      (dc = mat_dev(L, ds, c, beta == 0.0f)) == NULL)
    return 0;
  orion_error_clear(&err);
  if (orion_nn_gpu_gemm(ds->g, ta, tb, m, n, k, alpha, da, a->cols, db,
                        b->cols, beta, dc, c->cols, &err) != 0)
    dev_fail(L, "nn.gemm", &err);
  dev_wrote(c);
  return 1;
}

/* s's device copy made current; 0 when device memory is full. */
static int csr_dev(lua_State *L, nn_devstate *ds, nn_csr *s) {
  orion_error err;
  if (s->g != NULL && s->g != ds->g)
    orion__nn_csr_dev_free(s);
  s->g = ds->g;
  if (s->dev_ok)
    return 1;
  if (s->drows < s->rows + 1) {
    orion_gpu_free(ds->g, s->dptr);
    s->drows = 0;
    s->dptr = dev_alloc(L, ds, sizeof *s->dptr * (size_t)(s->rows + 1),
                        "an nn sparse matrix");
    if (s->dptr == NULL)
      return 0;
    s->drows = s->rows + 1;
  }
  if (s->dnnz < s->nnz || s->dcol == NULL) {
    orion_gpu_free(ds->g, s->dcol);
    orion_gpu_free(ds->g, s->dval);
    s->dnnz = 0;
    s->dval = NULL;
    s->dcol = dev_alloc(L, ds, sizeof *s->dcol * (size_t)s->nnz,
                        "an nn sparse matrix");
    if (s->dcol == NULL)
      return 0;
    s->dval = dev_alloc(L, ds, sizeof *s->dval * (size_t)s->nnz,
                        "an nn sparse matrix");
    if (s->dval == NULL)
      return 0;
    s->dnnz = s->nnz;
  }
  orion_error_clear(&err);
  if (orion_gpu_h2d(ds->g, s->dptr, s->ptr,
                    sizeof *s->ptr * (size_t)(s->rows + 1), &err) != 0 ||
      (s->nnz > 0 &&
       (orion_gpu_h2d(ds->g, s->dcol, s->col,
                      sizeof *s->col * (size_t)s->nnz, &err) != 0 ||
        orion_gpu_h2d(ds->g, s->dval, s->val,
                      sizeof *s->val * (size_t)s->nnz, &err) != 0)))
    luaL_error(L, "nn: copying a sparse matrix to the GPU: %s", err.msg);
  s->dev_ok = 1;
  return 1;
}

int orion__nn_dev_spmm(lua_State *L, const char *fn, nn_mat *c, nn_csr *s,
                       nn_mat *b, float alpha, float beta, int trans) {
  nn_devstate *ds = devstate(L);
  float *db, *dc;
  orion_error err;
  if (ds == NULL || s->ptr == NULL)
    return 0;
  if (!csr_dev(L, ds, s) || (db = mat_dev(L, ds, b, 0)) == NULL ||
      (dc = mat_dev(L, ds, c, beta == 0.0f)) == NULL)
    return 0;
  orion_error_clear(&err);
  if (orion_nn_gpu_spmm(ds->g, dc, s->rows, s->cols, s->dptr, s->dcol,
                        s->dval, db, b->cols, alpha, beta, trans, &err) != 0)
    dev_fail(L, fn, &err);
  dev_wrote(c);
  return 1;
}

int64_t orion__nn_dev_xent(lua_State *L, nn_mat *z, nn_mat *y, nn_mat *dz,
                           double *loss, int64_t *correct) {
  nn_devstate *ds = devstate(L);
  float *dzv, *dyv, *ddz = NULL;
  int64_t bad;
  int rc;
  orion_error err;
  if (ds == NULL)
    return 0;
  if ((dzv = mat_dev(L, ds, z, 0)) == NULL ||
      (dyv = mat_dev(L, ds, y, 0)) == NULL ||
      (dz != NULL && (ddz = mat_dev(L, ds, dz, 1)) == NULL))
    return 0;
  orion_error_clear(&err);
  rc = orion_nn_gpu_softmax_xent(ds->g, dzv, z->rows, z->cols, dyv, ddz, loss,
                                 correct, &bad, ds->scratch, &err);
  if (dz != NULL)
    dev_wrote(dz);
  if (rc == ORION_EINVAL && bad >= 0)
    return -1 - bad;
  if (rc != 0)
    dev_fail(L, "nn.softmax_xent", &err);
  return 1;
}

/* True when m has a current copy on this device. */
static int on_dev(const nn_devstate *ds, const nn_mat *m) {
  return m != NULL && m->d != NULL && m->g == ds->g && m->dev_ok;
}

int orion__nn_dev_elem(lua_State *L, int op, nn_mat *x, nn_mat *y, nn_mat *z,
                       float a, float b, float c) {
  static const char *const names[] = {
      "nn.fill", "nn.scale", "nn.copy", "nn.axpy", "nn.relu",
      "nn.relu_backward", "nn.momentum", "nn.add_bias", "nn.colsum",
      "nn.add_bias", "nn.add_scale"};
  nn_devstate *ds = devstate(L);
  float *dx, *dy = NULL, *dz = NULL;
  int64_t n = x->rows * x->cols;
  int rc = 0, overwrite = op == NN_FILL || op == NN_COPY ||
                          (op == NN_COLSUM && b == 0.0f);
  orion_error err;
  if (ds == NULL || !(on_dev(ds, x) || on_dev(ds, y) || on_dev(ds, z)))
    return 0;
  if ((y != NULL && (dy = mat_dev(L, ds, y, 0)) == NULL) ||
      (z != NULL && (dz = mat_dev(L, ds, z, 0)) == NULL) ||
      (dx = mat_dev(L, ds, x, overwrite)) == NULL)
    return 0;
  orion_error_clear(&err);
  switch (op) {
  case NN_FILL: rc = orion_nn_gpu_fill(ds->g, dx, n, a, &err); break;
  case NN_SCALE: rc = orion_nn_gpu_scale(ds->g, dx, n, a, &err); break;
  case NN_COPY: rc = orion_nn_gpu_copy(ds->g, dx, dy, n, &err); break;
  case NN_AXPY: rc = orion_nn_gpu_axpy(ds->g, dx, a, dy, n, &err); break;
  case NN_RELU: rc = orion_nn_gpu_relu(ds->g, dx, n, &err); break;
  case NN_RELU_BW:
    rc = orion_nn_gpu_relu_backward(ds->g, dx, dy, n, &err);
    break;
  case NN_MOMENTUM:
    rc = orion_nn_gpu_momentum(ds->g, dx, dy, dz, n, a, b, c, &err);
    dev_wrote(y);
    break;
  case NN_ADD_BIAS:
    rc = orion_nn_gpu_add_bias(ds->g, dx, x->rows, x->cols, dy, &err);
    break;
  case NN_COLSUM:
    rc = orion_nn_gpu_colsum(ds->g, dx, dy, y->rows, y->cols, a, b, &err);
    break;
  case NN_ADD_BIAS_RELU: /* the two kernels, one after the other */
    rc = orion_nn_gpu_add_bias(ds->g, dx, x->rows, x->cols, dy, &err);
    if (rc == 0)
      rc = orion_nn_gpu_relu(ds->g, dx, n, &err);
    break;
  case NN_ADD_SCALE:
    rc = orion_nn_gpu_axpy(ds->g, dx, 1.0f, dy, n, &err);
    if (rc == 0)
      rc = orion_nn_gpu_scale(ds->g, dy, n, a, &err);
    dev_wrote(y);
    break;
  }
  if (rc != 0)
    dev_fail(L, names[op], &err);
  dev_wrote(x);
  return 1;
}
