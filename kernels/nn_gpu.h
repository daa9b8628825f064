/* Neural-network kernels on a CUDA device: the device forms of the
 * kernels of kernels/nn_math.h that orion.nn runs on an executor's GPU
 * (GEMM through cuBLAS, the compressed-row product, bias, column sums,
 * ReLU, softmax cross-entropy, momentum SGD, axpy, scale, fill, copy).
 *
 * Every pointer named d... or a matrix argument is device memory of g
 * (orion_gpu_alloc); sizes are element counts, matrices row-major, as in
 * nn_math.h, and each function means what its nn_math.h namesake means.
 * Work is queued on g's work stream (orion_gpu_stream) and not waited
 * for, except by orion_nn_gpu_softmax_xent, which returns the loss.
 * Results match the CPU kernels within fp32 rounding: GEMM, column sums
 * and the sparse products add in another order (relative error about
 * k * 2^-24 of the sum of the magnitudes); element-wise kernels are
 * exact; softmax's loss is summed in double like the CPU's.
 *
 * kernels/nn_gpu.cu implements these with CUDA (built when configure finds
 * nvcc); kernels/nn_gpu_none.c, built otherwise, fails every call with
 * ORION_EUNSUPPORTED ("this build has no CUDA").  Functions return 0 or an
 * ORION_E... code with err naming the kernel and the CUDA or cuBLAS error;
 * n == 0 is fine everywhere.  No CUDA types here.
 */
#ifndef ORION_KERNELS_NN_GPU_H
#define ORION_KERNELS_NN_GPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gpu/gpu.h"
#include "util/error.h"

/* 1 when the CUDA kernels are built, else 0. */
int orion_nn_gpu_built(void);

/* C = alpha op(A) op(B) + beta C (cublasSgemm, fp32 math, row-major
 * through the column-major swap); ld* as in orion_nn_gemm (0 taken as 1).
 * k == 0 scales C by beta (beta == 0 gives 0).  ORION_EOVERFLOW when a
 * size passes INT32_MAX. */
int orion_nn_gpu_gemm(orion_gpu *g, int ta, int tb, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc, orion_error *err);

/* Element-wise, as orion_nn_fill, _scale, _axpy, _relu, _relu_backward,
 * _momentum; copy: dst[i] = src[i] (not overlapping). */
int orion_nn_gpu_fill(orion_gpu *g, float *p, int64_t n, float x,
                      orion_error *err);
int orion_nn_gpu_scale(orion_gpu *g, float *p, int64_t n, float a,
                       orion_error *err);
int orion_nn_gpu_axpy(orion_gpu *g, float *y, float alpha, const float *x,
                      int64_t n, orion_error *err);
int orion_nn_gpu_relu(orion_gpu *g, float *p, int64_t n, orion_error *err);
int orion_nn_gpu_relu_backward(orion_gpu *g, float *d, const float *h,
                               int64_t n, orion_error *err);
int orion_nn_gpu_momentum(orion_gpu *g, float *w, float *v, const float *gr,
                          int64_t n, float lr, float mu, float decay,
                          orion_error *err);
int orion_nn_gpu_copy(orion_gpu *g, float *dst, const float *src, int64_t n,
                      orion_error *err);

/* As orion_nn_add_bias and orion_nn_colsum. */
int orion_nn_gpu_add_bias(orion_gpu *g, float *m, int64_t rows, int64_t cols,
                          const float *b, orion_error *err);
int orion_nn_gpu_colsum(orion_gpu *g, float *d, const float *m, int64_t rows,
                        int64_t cols, float alpha, float beta,
                        orion_error *err);

/* The device scratch orion_nn_gpu_softmax_xent needs (bytes; fixed). */
#define ORION_NN_GPU_XENT_SCRATCH 64

/* As orion_nn_softmax_xent, with the sums made on the device in scratch
 * (ORION_NN_GPU_XENT_SCRATCH bytes of device memory) and copied back: waits
 * for the work stream.  A bad label: ORION_EINVAL with *bad the first such
 * row and *loss, *correct over the other rows (the CPU's stop at the bad
 * row; either way the caller reports the error), dz unspecified. */
int orion_nn_gpu_softmax_xent(orion_gpu *g, const float *z, int64_t rows,
                              int64_t k, const float *y, float *dz,
                              double *loss, int64_t *correct, int64_t *bad,
                              void *scratch, orion_error *err);

/* As orion_nn_spmm, with the compressed rows in device memory: ptr (rows
 * + 1 offsets), col, val.  trans 1 adds rows of B into C with atomic
 * adds (the order of the additions varies from run to run). */
int orion_nn_gpu_spmm(orion_gpu *g, float *c, int64_t rows, int64_t cols,
                      const int64_t *ptr, const int32_t *col,
                      const float *val, const float *b, int64_t n,
                      float alpha, float beta, int trans, orion_error *err);

/* Uploads for matrices that are rewritten on the host again and again
 * (a minibatch): bytes from page-locked src (orion_gpu_host_alloc) to dst,
 * queued on the work stream without waiting, and an event recorded after
 * it in *ev (made on first use; free with orion_nn_gpu_event_free).
 * orion_nn_gpu_wait returns when the copy before the event is done (so
 * src may be written again), at most timeout_s seconds (0: 600). */
int orion_nn_gpu_h2d_tracked(orion_gpu *g, void *dst, const void *src,
                             size_t bytes, void **ev, orion_error *err);
int orion_nn_gpu_wait(orion_gpu *g, void *ev, double timeout_s,
                      orion_error *err);
void orion_nn_gpu_event_free(void *ev);

#ifdef __cplusplus
}
#endif

#endif
