/* The orion.nn device kernels in a build without CUDA (see
 * kernels/nn_gpu.h): orion_nn_gpu_built() is 0 and every kernel fails
 * with ORION_EUNSUPPORTED.  Nothing calls them then, since no device can
 * be opened (gpu/gpu.h); they exist so that the same code links in both
 * builds. */
#include "kernels/nn_gpu.h"

int orion_nn_gpu_built(void) { return 0; }

/* The failure of every kernel. */
static int none(const char *kernel, orion_error *err) {
  return orion_error_set(err, ORION_EUNSUPPORTED,
                         "nn %s on the GPU: this build has no CUDA", kernel);
}

/* One failing kernel per signature (parameters unused). */
#define NONE1(fn, name, ...)                                                 \
  int fn(orion_gpu *g, __VA_ARGS__, orion_error *err) {                      \
    return none(name, err);                                                  \
  }

NONE1(orion_nn_gpu_gemm, "gemm", int ta, int tb, int64_t m, int64_t n,
      int64_t k, float alpha, const float *a, int64_t lda, const float *b,
      int64_t ldb, float beta, float *c, int64_t ldc)
NONE1(orion_nn_gpu_fill, "fill", float *p, int64_t n, float x)
NONE1(orion_nn_gpu_scale, "scale", float *p, int64_t n, float a)
NONE1(orion_nn_gpu_axpy, "axpy", float *y, float alpha, const float *x,
      int64_t n)
NONE1(orion_nn_gpu_relu, "relu", float *p, int64_t n)
NONE1(orion_nn_gpu_relu_backward, "relu_backward", float *d, const float *h,
      int64_t n)
NONE1(orion_nn_gpu_momentum, "momentum", float *w, float *v, const float *gr,
      int64_t n, float lr, float mu, float decay)
NONE1(orion_nn_gpu_copy, "copy", float *dst, const float *src, int64_t n)
NONE1(orion_nn_gpu_add_bias, "add_bias", float *m, int64_t rows,
      int64_t cols, const float *b)
NONE1(orion_nn_gpu_colsum, "colsum", float *d, const float *m, int64_t rows,
      int64_t cols, float alpha, float beta)
NONE1(orion_nn_gpu_softmax_xent, "softmax_xent", const float *z,
      int64_t rows, int64_t k, const float *y, float *dz, double *loss,
      int64_t *correct, int64_t *bad, void *scratch)
NONE1(orion_nn_gpu_spmm, "spmm", float *c, int64_t rows, int64_t cols,
      const int64_t *ptr, const int32_t *col, const float *val,
      const float *b, int64_t n, float alpha, float beta, int trans)
NONE1(orion_nn_gpu_h2d_tracked, "upload", void *dst, const void *src,
      size_t bytes, void **ev)
NONE1(orion_nn_gpu_wait, "wait", void *ev, double timeout_s)

void orion_nn_gpu_event_free(void *ev) {}
