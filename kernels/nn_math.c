/* Neural-network kernels on raw f32 arrays (see kernels/nn_math.h): OpenBLAS
 * for GEMM and axpy, plain loops for the rest. */
#include "kernels/nn_math.h"

/* The element-wise loops below are written to vectorise (restrict
 * pointers, branch-free selects); GCC's -O2 does not vectorise loops of
 * unknown trip count, so ask for it here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* ======================================================================
 * OpenBLAS threads.
 * ====================================================================== */

static int blas_threads = 1;

/* Process-wide: OpenBLAS has one thread pool. */
void orion_nn_threads_set(int n) {
  if (n < 1)
    n = 1;
  openblas_set_num_threads(n);
  blas_threads = n;
}

int orion_nn_threads(void) { return blas_threads; }

/* Once per process; reads the environment. */
void orion_nn_threads_init(void) {
  static int done;
  const char *e = getenv("ORION_BLAS_THREADS");
  if (done)
    return;
  done = 1;
  orion_nn_threads_set(e != NULL && atoi(e) > 0 ? atoi(e) : 1);
}

/* ======================================================================
 * Element-wise.
 * ====================================================================== */

void orion_nn_fill(float *p, int64_t n, float x) {
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] = x;
}

void orion_nn_scale(float *restrict p, int64_t n, float a) {
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] *= a;
}

void orion_nn_scale_beta(float *c, int64_t n, float beta) {
  int64_t i;
  if (beta == 0)
    memset(c, 0, sizeof(float) * (size_t)n);
  else if (beta != 1)
    for (i = 0; i < n; i++)
      c[i] *= beta;
}

double orion_nn_sum(const float *p, int64_t n) {
  double s = 0;
  int64_t i;
  for (i = 0; i < n; i++)
    s += p[i];
  return s;
}

double orion_nn_dot(const float *a, const float *b, int64_t n) {
  double s = 0;
  int64_t i;
  for (i = 0; i < n; i++)
    s += (double)a[i] * b[i];
  return s;
}

double orion_nn_max_abs_diff(const float *a, const float *b, int64_t n) {
  double mx = 0;
  int64_t i;
  for (i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (d > mx || d != d)
      mx = d;
  }
  return mx;
}

void orion_nn_axpy(float *y, float alpha, const float *x, int64_t n) {
  int64_t i;
  if (y == x || n > INT32_MAX) {
    for (i = 0; i < n; i++)
      y[i] += alpha * x[i];
  } else {
    cblas_saxpy((blasint)n, alpha, x, 1, y, 1);
  }
}

void orion_nn_relu(float *restrict p, int64_t n) {
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] = p[i] > 0.0f ? p[i] : 0.0f;
}

void orion_nn_relu_backward(float *restrict d, const float *restrict h,
                            int64_t n) {
  int64_t i;
  for (i = 0; i < n; i++)
    d[i] = h[i] > 0.0f ? d[i] : 0.0f;
}

void orion_nn_add_scale(float *restrict w, float *restrict v, int64_t n,
                        float mu) {
  int64_t i;
  for (i = 0; i < n; i++) {
    w[i] += v[i];
    v[i] *= mu;
  }
}

void orion_nn_momentum(float *restrict w, float *restrict v,
                       const float *restrict g, int64_t n, float lr, float mu,
                       float decay) {
  int64_t i;
  if (decay == 0) {
    for (i = 0; i < n; i++) {
      float vi = mu * v[i] - lr * g[i];
      v[i] = vi;
      w[i] += vi;
    }
  } else {
    for (i = 0; i < n; i++) {
      float vi = mu * v[i] - lr * (g[i] + decay * w[i]);
      v[i] = vi;
      w[i] += vi;
    }
  }
}

/* ======================================================================
 * Conversions.
 * ====================================================================== */

/* One element-wise cast per pair of element types. */
#define CONVERT(name, to, from)                                              \
  void name(to *dst, const from *src, int64_t n) {                           \
    int64_t i;                                                               \
    for (i = 0; i < n; i++)                                                  \
      dst[i] = (to)src[i];                                                   \
  }

CONVERT(orion_nn_f32_from_f64, float, double)
CONVERT(orion_nn_f32_from_i32, float, int32_t)
CONVERT(orion_nn_f32_from_i64, float, int64_t)
CONVERT(orion_nn_f64_from_f32, double, float)

void orion_nn_add_diff_f32(float *p, const float *x, const float *x0,
                           int64_t n, double alpha) {
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] = (float)(p[i] + alpha * ((double)x[i] - (x0 ? x0[i] : 0.0)));
}

void orion_nn_add_diff_f64(double *p, const float *x, const float *x0,
                           int64_t n, double alpha) {
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] = p[i] + alpha * ((double)x[i] - (x0 ? x0[i] : 0.0));
}

/* ======================================================================
 * Dense matrices.
 * ====================================================================== */

int orion_nn_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return ORION_EOVERFLOW;
  if (m == 0 || n == 0)
    return 0;
  if (k == 0) {
    orion_nn_scale_beta(c, m * n, beta);
    return 0;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
              a, (int)(lda > 0 ? lda : 1), b, (int)(ldb > 0 ? ldb : 1), beta,
              c, (int)(ldc > 0 ? ldc : 1));
  return 0;
}

void orion_nn_add_bias(float *m, int64_t rows, int64_t cols, const float *b) {
  int64_t i, j;
  for (i = 0; i < rows; i++) {
    float *restrict row = m + i * cols;
    const float *restrict bv = b;
    for (j = 0; j < cols; j++)
      row[j] += bv[j];
  }
}

void orion_nn_add_bias_relu(float *m, int64_t rows, int64_t cols,
                            const float *b) {
  int64_t i, j;
  for (i = 0; i < rows; i++) {
    float *restrict row = m + i * cols;
    const float *restrict bv = b;
    for (j = 0; j < cols; j++) {
      float x = row[j] + bv[j];
      row[j] = x > 0.0f ? x : 0.0f;
    }
  }
}

void orion_nn_colsum(float *restrict d, const float *m, int64_t rows,
                     int64_t cols, float alpha, float beta) {
  int64_t i, j;
  orion_nn_scale_beta(d, cols, beta);
  for (i = 0; i < rows; i++) {
    const float *restrict row = m + i * cols;
    for (j = 0; j < cols; j++)
      d[j] += alpha * row[j];
  }
}

void orion_nn_argmax(const float *z, int64_t rows, int64_t cols, float *out) {
  int64_t i, j;
  for (i = 0; i < rows; i++) {
    const float *row = z + i * cols;
    int64_t best = 0;
    for (j = 1; j < cols; j++)
      if (row[j] > row[best])
        best = j;
    out[i] = (float)(best + 1);
  }
}

/* The 0-based class of label f, or ORION_EINVAL when f is not an integer
 * in 1..classes. */
static int64_t class_of(float f, int64_t classes) {
  int64_t c = (int64_t)f;
  if ((float)c != f || c < 1 || c > classes)
    return ORION_EINVAL;
  return c - 1;
}

#define XENT_KEEP 64

int orion_nn_softmax_xent(const float *z, int64_t rows, int64_t k,
                          const float *y, float *dz, double *loss,
                          int64_t *correct, int64_t *bad) {
  int64_t i, j;
  double ex[XENT_KEEP];
  *loss = 0;
  *correct = 0;
  *bad = -1;
  if (k == 0 && rows > 0)
    return ORION_EINVAL;
  for (i = 0; i < rows; i++) {
    const float *row = z + i * k;
    int64_t c = class_of(y[i], k), best = 0;
    double mx, s = 0;
    if (c < 0) {
      *bad = i;
      return ORION_EINVAL;
    }
    for (j = 1; j < k; j++)
      if (row[j] > row[best])
        best = j;
    mx = row[best];
    /* Up to XENT_KEEP classes, each exp is taken once and kept for the
     * gradient (the same values as taking it again). */
    for (j = 0; j < k; j++) {
      double x = exp((double)row[j] - mx);
      if (j < XENT_KEEP)
        ex[j] = x;
      s += x;
    }
    *loss += log(s) + mx - row[c];
    *correct += best == c;
    if (dz != NULL) {
      float *d = dz + i * k;
      for (j = 0; j < k; j++)
        d[j] = (float)((j < XENT_KEEP ? ex[j] : exp((double)row[j] - mx)) / s);
      d[c] -= 1.0f;
    }
  }
  return 0;
}

/* ======================================================================
 * Sparse matrices.
 * ====================================================================== */

void orion_nn_spmm(float *c, const orion_nn_csr *s, const float *b, int64_t n,
                   float alpha, float beta, int trans) {
  int64_t i, e, j;
  orion_nn_scale_beta(c, (trans ? s->cols : s->rows) * n, beta);
  for (i = 0; i < s->rows; i++) {
    /* S B gathers rows of B into row i of C; S^T B scatters row i of B
     * into rows of C. */
    float *crow = trans ? NULL : c + i * n;
    const float *brow = trans ? b + i * n : NULL;
    for (e = s->ptr[i]; e < s->ptr[i + 1]; e++) {
      float x = alpha * s->val[e];
      if (trans)
        crow = c + (int64_t)s->col[e] * n;
      else
        brow = b + (int64_t)s->col[e] * n;
      for (j = 0; j < n; j++)
        crow[j] += x * brow[j];
    }
  }
}
