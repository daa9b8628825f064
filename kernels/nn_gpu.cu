/* The orion.nn kernels on a CUDA device (see kernels/nn_gpu.h): GEMM
 * through cuBLAS, the rest as small CUDA kernels on g's work stream.
 *
 * Element-wise kernels use grid-stride loops over 64-bit indices; column
 * sums and the transposed sparse product add partial sums with atomics;
 * softmax cross-entropy runs one warp per row and sums the loss, the
 * correct rows and the first bad label into a small device scratch that
 * is copied back.  Every launch is checked (cudaGetLastError), every
 * cuBLAS status too, and the message names the kernel and the device.
 */
#include "kernels/nn_gpu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "gpu/gpu_cublas.h"

#define THREADS 256
#define MAX_BLOCKS 8192

/* The blocks of THREADS threads for n items in a grid-stride loop. */
static unsigned blocks_for(int64_t n) {
  int64_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

static cudaStream_t stream_of(orion_gpu *g) {
  return (cudaStream_t)orion_gpu_stream(g);
}

/* Makes g's device current for this thread. */
static int prep(orion_gpu *g, const char *what, orion_error *err) {
  cudaError_t e = cudaSetDevice(orion_gpu_info_of(g)->index);
  if (e != cudaSuccess)
    return orion_error_set(err, ORION_EINVAL, "GPU %d: %s: cudaSetDevice: %s",
                           orion_gpu_info_of(g)->index, what,
                           cudaGetErrorString(e));
  return 0;
}

/* The status of the launch just made. */
static int launched(orion_gpu *g, const char *what, orion_error *err) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return orion_error_set(err, ORION_EINVAL, "GPU %d (%s): kernel %s: %s",
                           orion_gpu_info_of(g)->index,
                           orion_gpu_info_of(g)->name, what,
                           cudaGetErrorString(e));
  return 0;
}

extern "C" int orion_nn_gpu_built(void) { return 1; }

/* ======================================================================
 * Element-wise.
 * ====================================================================== */

#define GRID_LOOP(i, n)                                                      \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)

__global__ void k_fill(float *p, int64_t n, float x) {
  GRID_LOOP(i, n) p[i] = x;
}

__global__ void k_scale(float *p, int64_t n, float a) {
  GRID_LOOP(i, n) p[i] = a * p[i];
}

/* c = beta c, 0 when beta is 0 (whatever c holds). */
__global__ void k_scale_beta(float *c, int64_t n, float beta) {
  GRID_LOOP(i, n) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
}

__global__ void k_axpy(float *y, float alpha, const float *x, int64_t n) {
  GRID_LOOP(i, n) y[i] += alpha * x[i];
}

__global__ void k_relu(float *p, int64_t n) {
  GRID_LOOP(i, n) p[i] = p[i] > 0.0f ? p[i] : 0.0f;
}

__global__ void k_relu_backward(float *d, const float *h, int64_t n) {
  GRID_LOOP(i, n) d[i] = h[i] > 0.0f ? d[i] : 0.0f;
}

__global__ void k_momentum(float *w, float *v, const float *g, int64_t n,
                           float lr, float mu, float decay) {
  GRID_LOOP(i, n) {
    float vi = decay == 0.0f ? mu * v[i] - lr * g[i]
                             : mu * v[i] - lr * (g[i] + decay * w[i]);
    v[i] = vi;
    w[i] += vi;
  }
}

__global__ void k_add_bias(float *m, int64_t total, int64_t cols,
                           const float *b) {
  GRID_LOOP(i, total) m[i] += b[i % cols];
}

#define LAUNCH(name, n, ...)                                                 \
  do {                                                                       \
    int rc_ = prep(g, #name, err);                                           \
    if (rc_ != 0)                                                            \
      return rc_;                                                            \
    if ((n) <= 0)                                                            \
      return 0;                                                              \
    name<<<blocks_for(n), THREADS, 0, stream_of(g)>>>(__VA_ARGS__);          \
    return launched(g, #name, err);                                          \
  } while (0)

extern "C" int orion_nn_gpu_fill(orion_gpu *g, float *p, int64_t n, float x,
                                 orion_error *err) {
  LAUNCH(k_fill, n, p, n, x);
}

extern "C" int orion_nn_gpu_scale(orion_gpu *g, float *p, int64_t n, float a,
                                  orion_error *err) {
  LAUNCH(k_scale, n, p, n, a);
}

extern "C" int orion_nn_gpu_axpy(orion_gpu *g, float *y, float alpha,
                                 const float *x, int64_t n,
                                 orion_error *err) {
  LAUNCH(k_axpy, n, y, alpha, x, n);
}

extern "C" int orion_nn_gpu_relu(orion_gpu *g, float *p, int64_t n,
                                 orion_error *err) {
  LAUNCH(k_relu, n, p, n);
}

extern "C" int orion_nn_gpu_relu_backward(orion_gpu *g, float *d,
                                          const float *h, int64_t n,
                                          orion_error *err) {
  LAUNCH(k_relu_backward, n, d, h, n);
}

extern "C" int orion_nn_gpu_momentum(orion_gpu *g, float *w, float *v,
                                     const float *gr, int64_t n, float lr,
                                     float mu, float decay,
                                     orion_error *err) {
  LAUNCH(k_momentum, n, w, v, gr, n, lr, mu, decay);
}

extern "C" int orion_nn_gpu_add_bias(orion_gpu *g, float *m, int64_t rows,
                                     int64_t cols, const float *b,
                                     orion_error *err) {
  LAUNCH(k_add_bias, rows * cols, m, rows * cols, cols, b);
}

static int scale_beta(orion_gpu *g, float *c, int64_t n, float beta,
                      orion_error *err) {
  LAUNCH(k_scale_beta, n, c, n, beta);
}

extern "C" int orion_nn_gpu_copy(orion_gpu *g, float *dst, const float *src,
                                 int64_t n, orion_error *err) {
  cudaError_t e;
  int rc = prep(g, "copy", err);
  if (rc != 0 || n <= 0)
    return rc;
  e = cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n,
                      cudaMemcpyDeviceToDevice, stream_of(g));
  if (e != cudaSuccess)
    return orion_error_set(err, ORION_EINVAL,
                           "GPU %d: copying %lld floats on the device: %s",
                           orion_gpu_info_of(g)->index, (long long)n,
                           cudaGetErrorString(e));
  return 0;
}

/* ======================================================================
 * Column sums: a block is 32 columns x 32 row lanes over a chunk of rows;
 * the lanes' sums meet in shared memory and one atomic add per column
 * and block goes to d (already scaled by beta).
 * ====================================================================== */

#define CS_ROWS 512 /* rows per block */

__global__ void k_colsum(float *d, const float *m, int64_t rows, int64_t cols,
                         float alpha) {
  __shared__ float part[32][33];
  int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
  int64_t r0 = (int64_t)blockIdx.y * CS_ROWS;
  int64_t r1 = r0 + CS_ROWS < rows ? r0 + CS_ROWS : rows;
  float s = 0.0f;
  if (j < cols)
    for (int64_t i = r0 + threadIdx.y; i < r1; i += 32)
      s += m[i * cols + j];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    float t = 0.0f;
    for (int y = 0; y < 32; y++)
      t += part[y][threadIdx.x];
    atomicAdd(&d[j], alpha * t);
  }
}

extern "C" int orion_nn_gpu_colsum(orion_gpu *g, float *d, const float *m,
                                   int64_t rows, int64_t cols, float alpha,
                                   float beta, orion_error *err) {
  int rc = scale_beta(g, d, cols, beta, err);
  int64_t ychunks = (rows + CS_ROWS - 1) / CS_ROWS;
  if (rc != 0 || rows <= 0 || cols <= 0)
    return rc;
  if (ychunks > 65535)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "nn colsum on the GPU: %lld rows are too many",
                           (long long)rows);
  dim3 grid((unsigned)((cols + 31) / 32), (unsigned)ychunks);
  dim3 block(32, 32);
  k_colsum<<<grid, block, 0, stream_of(g)>>>(d, m, rows, cols, alpha);
  return launched(g, "k_colsum", err);
}

/* ======================================================================
 * GEMM.
 * ====================================================================== */

static const char *cublas_name(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
  default: return "unknown status";
  }
}

extern "C" int orion_nn_gpu_gemm(orion_gpu *g, int ta, int tb, int64_t m,
                                 int64_t n, int64_t k, float alpha,
                                 const float *a, int64_t lda, const float *b,
                                 int64_t ldb, float beta, float *c,
                                 int64_t ldc, orion_error *err) {
  cublasHandle_t h;
  const orion_cublas_fns *fns;
  cublasStatus_t s;
  int rc;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX ||
      ldb > INT32_MAX || ldc > INT32_MAX)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "nn gemm on the GPU: %lldx%lldx%lld is too large "
                           "for cuBLAS", (long long)m, (long long)n,
                           (long long)k);
  if (m == 0 || n == 0)
    return 0;
  if (k == 0) {
    if (ldc == n)
      return scale_beta(g, c, m * n, beta, err);
    return orion_error_set(err, ORION_EINVAL,
                           "nn gemm on the GPU: k == 0 with ldc %lld != n "
                           "%lld", (long long)ldc, (long long)n);
  }
  rc = prep(g, "gemm", err);
  if (rc != 0)
    return rc;
  h = (cublasHandle_t)orion_gpu_cublas(g, err);
  if (h == NULL || (fns = orion_gpu_cublas_fns(err)) == NULL)
    return err != NULL && err->code != 0 ? err->code : ORION_EINVAL;
  /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
   * row-major matrix read column-major is its transpose: swap A and B. */
  s = fns->sgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                  ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                  &alpha, b, (int)(ldb > 0 ? ldb : 1), a,
                  (int)(lda > 0 ? lda : 1), &beta, c,
                  (int)(ldc > 0 ? ldc : 1));
  if (s != CUBLAS_STATUS_SUCCESS)
    return orion_error_set(err, ORION_EINVAL,
                           "GPU %d: cublasSgemm(%s%s, m %lld, n %lld, k %lld):"
                           " %s", orion_gpu_info_of(g)->index,
                           ta ? "T" : "N", tb ? "T" : "N", (long long)m,
                           (long long)n, (long long)k, cublas_name(s));
  return 0;
}

/* ======================================================================
 * Softmax cross-entropy: one warp per row.
 * ====================================================================== */

typedef struct xent_sums {
  double loss;
  unsigned long long correct;
  long long bad; /* LLONG_MAX: none */
} xent_sums;

__global__ void k_xent_init(xent_sums *s) {
  s->loss = 0;
  s->correct = 0;
  s->bad = LLONG_MAX;
}

__global__ void k_xent(const float *z, int64_t rows, int64_t k,
                       const float *y, float *dz, xent_sums *sums) {
  int lane = threadIdx.x & 31;
  int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t i = warp; i < rows; i += nwarps) {
    const float *row = z + i * k;
    float f = y[i];
    int64_t c = -1;
    if (f >= 1.0f && f <= (float)k) {
      c = (int64_t)f;
      if ((float)c != f)
        c = -1;
    }
    if (c < 0) {
      if (lane == 0)
        atomicMin(&sums->bad, (long long)i);
      continue;
    }
    c -= 1;
    /* The largest logit, the first on ties. */
    int64_t best = -1;
    float bv = 0.0f;
    for (int64_t j = lane; j < k; j += 32)
      if (best < 0 || row[j] > bv) {
        best = j;
        bv = row[j];
      }
    for (int off = 16; off > 0; off >>= 1) {
      float ov = __shfl_down_sync(0xffffffffu, bv, off);
      long long ob = __shfl_down_sync(0xffffffffu, (long long)best, off);
      if (ob >= 0 && (best < 0 || ov > bv || (ov == bv && ob < best))) {
        best = ob;
        bv = ov;
      }
    }
    best = __shfl_sync(0xffffffffu, (long long)best, 0);
    double mx = (double)__shfl_sync(0xffffffffu, bv, 0);
    double s = 0;
    for (int64_t j = lane; j < k; j += 32)
      s += exp((double)row[j] - mx);
    for (int off = 16; off > 0; off >>= 1)
      s += __shfl_down_sync(0xffffffffu, s, off);
    s = __shfl_sync(0xffffffffu, s, 0);
    if (lane == 0) {
      atomicAdd(&sums->loss, log(s) + mx - (double)row[c]);
      if (best == c)
        atomicAdd(&sums->correct, 1ull);
    }
    if (dz != NULL) {
      float *d = dz + i * k;
      for (int64_t j = lane; j < k; j += 32)
        d[j] = (float)(exp((double)row[j] - mx) / s) - (j == c ? 1.0f : 0.0f);
    }
  }
}

extern "C" int orion_nn_gpu_softmax_xent(orion_gpu *g, const float *z,
                                         int64_t rows, int64_t k,
                                         const float *y, float *dz,
                                         double *loss, int64_t *correct,
                                         int64_t *bad, void *scratch,
                                         orion_error *err) {
  xent_sums *ds = (xent_sums *)scratch, hs;
  int rc;
  *loss = 0;
  *correct = 0;
  *bad = -1;
  if (rows == 0)
    return 0;
  if (k == 0)
    return ORION_EINVAL;
  rc = prep(g, "softmax_xent", err);
  if (rc != 0)
    return rc;
  k_xent_init<<<1, 1, 0, stream_of(g)>>>(ds);
  if ((rc = launched(g, "k_xent_init", err)) != 0)
    return rc;
  {
    int64_t threads = rows * 32;
    unsigned nb = blocks_for(threads);
    k_xent<<<nb, THREADS, 0, stream_of(g)>>>(z, rows, k, y, dz, ds);
  }
  if ((rc = launched(g, "k_xent", err)) != 0)
    return rc;
  rc = orion_gpu_d2h(g, &hs, ds, sizeof hs, err);
  if (rc != 0)
    return rc;
  *loss = hs.loss;
  *correct = (int64_t)hs.correct;
  if (hs.bad != LLONG_MAX) {
    *bad = hs.bad;
    return ORION_EINVAL;
  }
  return 0;
}

/* ======================================================================
 * Compressed-row products.
 * ====================================================================== */

/* C = alpha S B + beta C: a block per row of S (grid-stride), its threads
 * along the n columns; each element adds the row's entries in order. */
__global__ void k_spmm(float *c, int64_t rows, const int64_t *ptr,
                       const int32_t *col, const float *val, const float *b,
                       int64_t n, float alpha, float beta) {
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x)
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float acc = beta == 0.0f ? 0.0f : beta * c[i * n + j];
      for (int64_t e = ptr[i]; e < ptr[i + 1]; e++)
        acc += (alpha * val[e]) * b[(int64_t)col[e] * n + j];
      c[i * n + j] = acc;
    }
}

/* C += alpha S^T B: row i of B scattered into the rows col[e] of C. */
__global__ void k_spmm_t(float *c, int64_t rows, const int64_t *ptr,
                         const int32_t *col, const float *val,
                         const float *b, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x)
    for (int64_t e = ptr[i]; e < ptr[i + 1]; e++) {
      float x = alpha * val[e];
      float *crow = c + (int64_t)col[e] * n;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        atomicAdd(&crow[j], x * b[i * n + j]);
    }
}

extern "C" int orion_nn_gpu_spmm(orion_gpu *g, float *c, int64_t rows,
                                 int64_t cols, const int64_t *ptr,
                                 const int32_t *col, const float *val,
                                 const float *b, int64_t n, float alpha,
                                 float beta, int trans, orion_error *err) {
  int rc = prep(g, "spmm", err);
  unsigned nb = (unsigned)(rows < 1 ? 1 : rows > 65535 ? 65535 : rows);
  if (rc != 0 || n <= 0)
    return rc;
  if (!trans) {
    if (rows <= 0)
      return 0;
    k_spmm<<<nb, 128, 0, stream_of(g)>>>(c, rows, ptr, col, val, b, n, alpha,
                                         beta);
    return launched(g, "k_spmm", err);
  }
  rc = scale_beta(g, c, cols * n, beta, err);
  if (rc != 0 || rows <= 0)
    return rc;
  k_spmm_t<<<nb, 128, 0, stream_of(g)>>>(c, rows, ptr, col, val, b, n, alpha);
  return launched(g, "k_spmm_t", err);
}

/* ======================================================================
 * Tracked uploads.
 * ====================================================================== */

extern "C" int orion_nn_gpu_h2d_tracked(orion_gpu *g, void *dst,
                                        const void *src, size_t bytes,
                                        void **ev, orion_error *err) {
  cudaError_t e;
  int rc = prep(g, "upload", err);
  if (rc != 0)
    return rc;
  if (*ev == NULL) {
    cudaEvent_t ne;
    e = cudaEventCreateWithFlags(&ne, cudaEventDisableTiming);
    if (e != cudaSuccess)
      return orion_error_set(err, ORION_EINVAL, "GPU %d: cudaEventCreate: %s",
                             orion_gpu_info_of(g)->index,
                             cudaGetErrorString(e));
    *ev = (void *)ne;
  }
  e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(g));
  if (e == cudaSuccess)
    e = cudaEventRecord((cudaEvent_t)*ev, stream_of(g));
  if (e != cudaSuccess)
    return orion_error_set(err, ORION_EINVAL,
                           "GPU %d: copying %zu bytes to the device: %s",
                           orion_gpu_info_of(g)->index, bytes,
                           cudaGetErrorString(e));
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

extern "C" int orion_nn_gpu_wait(orion_gpu *g, void *ev, double timeout_s,
                                 orion_error *err) {
  double t0 = now_s(), limit = timeout_s > 0 ? timeout_s : 600;
  long spins = 0;
  int rc = prep(g, "wait", err);
  if (rc != 0 || ev == NULL)
    return rc;
  for (;;) {
    cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
    if (e == cudaSuccess)
      return 0;
    if (e != cudaErrorNotReady)
      return orion_error_set(err, ORION_EINVAL,
                             "GPU %d: waiting for an upload: %s",
                             orion_gpu_info_of(g)->index,
                             cudaGetErrorString(e));
    if (++spins > 1000) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
      if (now_s() - t0 > limit)
        return orion_error_set(err, -ETIMEDOUT,
                               "GPU %d: an upload did not finish in %.0f s",
                               orion_gpu_info_of(g)->index, limit);
    }
  }
}

extern "C" void orion_nn_gpu_event_free(void *ev) {
  if (ev != NULL)
    cudaEventDestroy((cudaEvent_t)ev);
}
