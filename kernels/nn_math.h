/* Neural-network kernels: f32 math on raw row-major arrays (dense GEMM
 * through OpenBLAS, products of a compressed-row sparse matrix with a
 * dense one, bias, ReLU, softmax cross-entropy, momentum SGD, axpy and
 * friends, and the conversions between f32 and the other element types).
 *
 * Plain C on pointers and sizes: no Lua, no arrays of dsm/, no errors
 * raised.  The Lua binding (executor/nn.c) checks shapes and arguments and
 * calls these; a GPU backend can offer the same functions.  A kernel never
 * allocates and owns none of its arguments; every one may be called from
 * any thread on distinct outputs (OpenBLAS threads are process-wide, see
 * orion_nn_threads_set).  Sizes are element counts; n == 0 is fine
 * everywhere.
 */
#ifndef ORION_KERNELS_NN_MATH_H
#define ORION_KERNELS_NN_MATH_H

#include <stdint.h>

/* ---- OpenBLAS threads ------------------------------------------------- */

/* Sets the OpenBLAS thread count of the process once, from
 * $ORION_BLAS_THREADS when it is a positive number, else 1 (executors
 * share the cores).  Later calls do nothing.  Not thread-safe: call it
 * when a Lua state opens orion.nn. */
void orion_nn_threads_init(void);

/* The OpenBLAS thread count last set here. */
int orion_nn_threads(void);

/* Sets the OpenBLAS thread count (n below 1 means 1). */
void orion_nn_threads_set(int n);

/* ---- element-wise ----------------------------------------------------- */

/* p[i] = x. */
void orion_nn_fill(float *p, int64_t n, float x);

/* p[i] = a * p[i]. */
void orion_nn_scale(float *p, int64_t n, float a);

/* c[i] = beta * c[i], with beta == 0 giving 0 whatever c holds (NaN
 * included), as BLAS does for its C operand. */
void orion_nn_scale_beta(float *c, int64_t n, float beta);

/* The sum of p[0..n), accumulated in double. */
double orion_nn_sum(const float *p, int64_t n);

/* The sum of a[i] * b[i], accumulated in double. */
double orion_nn_dot(const float *a, const float *b, int64_t n);

/* max |a[i] - b[i]| in double; NaN when a difference is NaN. */
double orion_nn_max_abs_diff(const float *a, const float *b, int64_t n);

/* y = y + alpha * x (saxpy; x may be y). */
void orion_nn_axpy(float *y, float alpha, const float *x, int64_t n);

/* p = max(p, 0). */
void orion_nn_relu(float *p, int64_t n);

/* d[i] = 0 where h[i] <= 0 (h the ReLU's output, d its gradient). */
void orion_nn_relu_backward(float *d, const float *h, int64_t n);

/* w = w + v, then v = mu * v, in one pass (the momentum step split
 * around the gradient product: after it, a GEMM with beta = 1 adds
 * -lr * g to the scaled v, as a GEMM with beta = mu would, bit for bit).
 * w and v must not overlap. */
void orion_nn_add_scale(float *w, float *v, int64_t n, float mu);

/* SGD with momentum: v = mu * v - lr * (g + decay * w); w = w + v.  w, v
 * and g must not overlap. */
void orion_nn_momentum(float *w, float *v, const float *g, int64_t n,
                       float lr, float mu, float decay);

/* ---- conversions ------------------------------------------------------ */

/* dst[i] = (float)src[i]. */
void orion_nn_f32_from_f64(float *dst, const double *src, int64_t n);
void orion_nn_f32_from_i32(float *dst, const int32_t *src, int64_t n);
void orion_nn_f32_from_i64(float *dst, const int64_t *src, int64_t n);

/* dst[i] = (double)src[i]. */
void orion_nn_f64_from_f32(double *dst, const float *src, int64_t n);

/* p[i] += alpha * (x[i] - x0[i]), the difference and the product in
 * double precision (x0 NULL: zeros), so that adding back a change made to
 * a copy reproduces the copy exactly. */
void orion_nn_add_diff_f32(float *p, const float *x, const float *x0,
                           int64_t n, double alpha);
void orion_nn_add_diff_f64(double *p, const float *x, const float *x0,
                           int64_t n, double alpha);

/* ---- dense matrices (row-major) --------------------------------------- */

/* C = alpha * op(A) op(B) + beta * C with op(A) m x k, op(B) k x n, C
 * m x n; ta / tb transpose A / B.  lda, ldb and ldc are the row lengths
 * of A, B and C as stored (0 is taken as 1, for empty matrices).  k == 0
 * scales C by beta.  Returns 0, or ORION_EOVERFLOW (C untouched) when m,
 * n or k exceeds what BLAS takes (INT32_MAX). */
int orion_nn_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc);

/* Adds b[0..cols) to each of the rows of m; with relu, then m = max(m, 0)
 * in the same pass (the same values as orion_nn_add_bias then
 * orion_nn_relu). */
void orion_nn_add_bias(float *m, int64_t rows, int64_t cols, const float *b);
void orion_nn_add_bias_relu(float *m, int64_t rows, int64_t cols,
                            const float *b);

/* d = alpha * (the column sums of m, rows x cols) + beta * d, d of cols. */
void orion_nn_colsum(float *d, const float *m, int64_t rows, int64_t cols,
                     float alpha, float beta);

/* out[i] = 1 + the column of row i's largest value (the first on ties),
 * as a float; out has rows entries (1 everywhere when cols is 0). */
void orion_nn_argmax(const float *z, int64_t rows, int64_t cols, float *out);

/* Softmax cross-entropy of the logits z (rows x k) against the classes y
 * (rows entries, 1-based class numbers stored as floats): *loss is the
 * summed -log softmax(z)[class] (in double), *correct the rows whose
 * largest logit (the first on ties) is the class.  With dz (rows x k, not
 * overlapping z), also dz = softmax(z) - onehot(y), not divided by rows.
 * Returns 0, or ORION_EINVAL with *bad the first row whose label is not an
 * integer in 1..k (rows before it are done, *loss and *correct hold
 * theirs), or when k == 0 and rows > 0 (*bad = -1). */
int orion_nn_softmax_xent(const float *z, int64_t rows, int64_t k,
                          const float *y, float *dz, double *loss,
                          int64_t *correct, int64_t *bad);

/* ---- sparse matrices -------------------------------------------------- */

/* A compressed-row sparse matrix: row i holds the entries ptr[i] ..
 * ptr[i+1]-1 of col (0-based column ids) and val. */
typedef struct orion_nn_csr {
  int64_t rows, cols;
  const int64_t *ptr; /* rows + 1 offsets, ptr[0] == 0 */
  const int32_t *col;
  const float *val;
} orion_nn_csr;

/* C = alpha * S B + beta * C (trans 0: B is cols(S) x n, C rows(S) x n) or
 * C = alpha * S^T B + beta * C (trans 1: B is rows(S) x n, C cols(S) x n);
 * B and C row-major with n columns, not overlapping. */
void orion_nn_spmm(float *c, const orion_nn_csr *s, const float *b, int64_t n,
                   float alpha, float beta, int trans);

#endif
