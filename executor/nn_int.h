/* orion.nn's insides shared by the binding (executor/nn.c) and its device half
 * (executor/nn_dev.c): the matrix and sparse-matrix userdata, and how the two
 * copies of a matrix (host values in the userdata, a device copy on the
 * state's GPU) are kept coherent.  Internal to those two files.
 *
 * Coherence: each matrix says which of its copies hold its current values
 * (host_ok, dev_ok; at least one).  Every host access in nn.c goes through
 * orion__nn_host (which downloads a stale host copy first, and on a write
 * marks the device copy stale); every device kernel goes through
 * executor/nn_dev.c, which uploads a stale device copy first and marks the host
 * copy stale after writing.  So neither side ever reads a stale copy.
 * Array data (DistArrays, proxies) are always read on the host into a
 * matrix (nn.read, nn.rows, ...), so an array change is seen by the next
 * read, and a matrix read from an array goes to the device only when a
 * kernel there needs it.
 */
#ifndef ORION_LUA_NN_INT_H
#define ORION_LUA_NN_INT_H

#include <lua.h>
#include <stdint.h>

#include "gpu/gpu.h"

#define MAT_MT "orion.nn.Matrix"
#define CSR_MT "orion.nn.Csr"

/* A dense matrix; the host values follow the header inside the userdata. */
typedef struct nn_mat {
  int64_t rows, cols;
  float *v;          /* the host values: inl, or pinned */
  float *inl;        /* the values inside the userdata */
  float *d;          /* the device copy (orion_gpu_alloc'd on g), or NULL */
  orion_gpu *g;
  int host_ok, dev_ok;
  /* A matrix uploaded again and again (a minibatch) moves its host values
   * to page-locked memory, and its uploads stop waiting for the device:
   * ev marks the last one, waited for before the host writes v. */
  float *pinned;
  void *ev;
  int inflight; /* ev not yet waited for */
  int64_t uploads;
} nn_mat;

/* A compressed-row sparse matrix (orion_malloc'd arrays, freed by __gc).
 * col holds 0-based column ids.  The device copy (dptr, dcol, dval, room
 * for drows rows and dnnz entries) is current when dev_ok. */
typedef struct nn_csr {
  int64_t rows, cols, nnz, cap;
  int64_t *ptr; /* rows + 1 */
  int32_t *col;
  float *val;
  orion_gpu *g;
  int64_t *dptr;
  int32_t *dcol;
  float *dval;
  int64_t drows, dnnz;
  int dev_ok;
} nn_csr;

/* The host values of m made current: a stale host copy is downloaded
 * first (raising a Lua error when that fails).  mode 0 reads; 1 writes
 * (the device copy becomes stale); 2 overwrites every value (1 without
 * the download).  Returns m->v. */
float *orion__nn_hostv(lua_State *L, nn_mat *m, int mode);

/* __gc of matrices and sparse matrices: frees the device copies. */
void orion__nn_dev_free(nn_mat *m);
void orion__nn_csr_dev_free(nn_csr *s);

/* ---- the kernels on the state's GPU ------------------------------------
 * Each returns 1 when it ran on L's device, 0 when the caller must run the
 * CPU kernel (no device set, an element-wise kernel whose operands have no
 * current device copy, or device memory full); a device failure raises a
 * Lua error naming fn.  Shapes are checked by the caller. */
int orion__nn_dev_gemm(lua_State *L, nn_mat *c, nn_mat *a, nn_mat *b,
                       int ta, int tb, float alpha, float beta);
int orion__nn_dev_spmm(lua_State *L, const char *fn, nn_mat *c, nn_csr *s,
                       nn_mat *b, float alpha, float beta, int trans);
/* softmax_xent: sets *loss, *correct; returns -1 - bad (the first bad
 * row) for a bad label. */
int64_t orion__nn_dev_xent(lua_State *L, nn_mat *z, nn_mat *y, nn_mat *dz,
                           double *loss, int64_t *correct);

/* Element-wise and row kernels: op names the kernel; operands x, y, z as
 * each needs (unused NULL), scalars a, b, c. */
enum {
  NN_FILL,     /* x = a */
  NN_SCALE,    /* x = a x */
  NN_COPY,     /* x = y */
  NN_AXPY,     /* x += a y */
  NN_RELU,     /* x = max(x, 0) */
  NN_RELU_BW,  /* x = 0 where y <= 0 */
  NN_MOMENTUM, /* momentum(w x, v y, g z, lr a, mu b, decay c) */
  NN_ADD_BIAS, /* x += y per row */
  NN_COLSUM,   /* x = a colsum(y) + b x */
  NN_ADD_BIAS_RELU, /* x = max(x + y per row, 0) */
  NN_ADD_SCALE      /* x += y, then y = a y */
};
int orion__nn_dev_elem(lua_State *L, int op, nn_mat *x, nn_mat *y, nn_mat *z,
                       float a, float b, float c);

/* nn.device() -> "GPU 0 (NVIDIA H100 ...)" when this state's nn runs on a
 * device, else nil. */
int orion__nn_l_device(lua_State *L);

#endif
