/* A fake GPU for t/test_nndev.c: gpu/gpu.h and kernels/nn_gpu.h over host
 * memory, so that orion.nn's device half (executor/nn_dev.c: which copy of a
 * matrix is current, uploads, downloads, the fallback when device memory
 * is full) runs in make check without a device.  Linked before liborion.a,
 * it replaces the real backend and kernels in that one test.
 *
 * "Device" memory is a separate malloc'd block filled with NaN when
 * allocated, so a kernel that reads a copy nobody uploaded sees NaN; the
 * kernels are the CPU's (kernels/nn_math.h) on those blocks, so results
 * equal the CPU state's bit for bit.  fake_gpu_calls counts kernel calls,
 * fake_gpu_cap limits the bytes allocated (0: none). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "kernels/nn_gpu.h"
#include "kernels/nn_math.h"

long fake_gpu_calls;
uint64_t fake_gpu_cap;

struct orion_gpu {
  orion_gpu_info info;
  uint64_t in_use;
};

/* Each block starts with its size. */
typedef struct blk {
  size_t bytes;
  double pad;
} blk;

int orion_gpu_built(void) { return 1; }
int orion_gpu_count(const char **why) { return 1; }

int orion_gpu_open(int index, uint64_t cap_bytes, orion_gpu **out,
                   orion_error *err) {
  orion_gpu *g = calloc(1, sizeof *g);
  g->info.index = index;
  snprintf(g->info.name, sizeof g->info.name, "fake GPU");
  g->info.cap_bytes = cap_bytes;
  *out = g;
  return 0;
}

void orion_gpu_close(orion_gpu *g) { free(g); }
const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g) {
  return &g->info;
}
void orion_gpu_describe(const orion_gpu *g, char *out, size_t n) {
  snprintf(out, n, "GPU %d (%s)", g->info.index, g->info.name);
}

int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what, void **dptr,
                    orion_error *err) {
  blk *b;
  size_t i;
  *dptr = NULL;
  if (fake_gpu_cap != 0 && g->in_use + bytes > fake_gpu_cap)
    return orion_error_set(err, ORION_ENOMEM,
                           "GPU 0 (fake GPU): out of device memory "
                           "allocating %zu bytes for %s", bytes, what);
  b = malloc(sizeof *b + bytes);
  b->bytes = bytes;
  for (i = 0; i + sizeof(float) <= bytes; i += sizeof(float))
    ((float *)(b + 1))[i / sizeof(float)] = NAN;
  g->in_use += bytes;
  *dptr = b + 1;
  return 0;
}

void orion_gpu_free(orion_gpu *g, void *dptr) {
  blk *b;
  if (dptr == NULL)
    return;
  b = (blk *)dptr - 1;
  g->in_use -= b->bytes;
  free(b);
}

uint64_t orion_gpu_in_use(const orion_gpu *g) { return g->in_use; }
int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **hptr,
                         orion_error *err) {
  *hptr = malloc(bytes ? bytes : 1);
  return 0;
}
void orion_gpu_host_free(orion_gpu *g, void *hptr) { free(hptr); }
int orion_gpu_h2d(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err) {
  memcpy(dst, src, bytes);
  return 0;
}
int orion_gpu_d2h(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err) {
  memcpy(dst, src, bytes);
  return 0;
}
int orion_gpu_h2d_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err) {
  memcpy(dst, src, bytes);
  return 0;
}
int orion_gpu_d2h_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err) {
  memcpy(dst, src, bytes);
  return 0;
}
int orion_gpu_memset(orion_gpu *g, void *dst, int byte, size_t bytes,
                     orion_error *err) {
  memset(dst, byte, bytes);
  return 0;
}
void *orion_gpu_stream(orion_gpu *g) { return NULL; }
void *orion_gpu_copy_stream(orion_gpu *g) { return NULL; }
int orion_gpu_sync(orion_gpu *g, int copy, double timeout_s,
                   orion_error *err) {
  return 0;
}
int orion_gpu_order(orion_gpu *g, orion_error *err) { return 0; }
void *orion_gpu_cublas(orion_gpu *g, orion_error *err) { return g; }

/* ---- kernels: the CPU's on the fake device memory ---------------------- */

int orion_nn_gpu_built(void) { return 1; }

int orion_nn_gpu_gemm(orion_gpu *g, int ta, int tb, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc, orion_error *err) {
  fake_gpu_calls++;
  return orion_nn_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define FAKE(call)                                                           \
  do {                                                                       \
    fake_gpu_calls++;                                                        \
    call;                                                                    \
    return 0;                                                                \
  } while (0)

int orion_nn_gpu_fill(orion_gpu *g, float *p, int64_t n, float x,
                      orion_error *err) {
  FAKE(orion_nn_fill(p, n, x));
}
int orion_nn_gpu_scale(orion_gpu *g, float *p, int64_t n, float a,
                       orion_error *err) {
  FAKE(orion_nn_scale(p, n, a));
}
int orion_nn_gpu_axpy(orion_gpu *g, float *y, float alpha, const float *x,
                      int64_t n, orion_error *err) {
  FAKE(orion_nn_axpy(y, alpha, x, n));
}
int orion_nn_gpu_relu(orion_gpu *g, float *p, int64_t n, orion_error *err) {
  FAKE(orion_nn_relu(p, n));
}
int orion_nn_gpu_relu_backward(orion_gpu *g, float *d, const float *h,
                               int64_t n, orion_error *err) {
  FAKE(orion_nn_relu_backward(d, h, n));
}
int orion_nn_gpu_momentum(orion_gpu *g, float *w, float *v, const float *gr,
                          int64_t n, float lr, float mu, float decay,
                          orion_error *err) {
  FAKE(orion_nn_momentum(w, v, gr, n, lr, mu, decay));
}
int orion_nn_gpu_copy(orion_gpu *g, float *dst, const float *src, int64_t n,
                      orion_error *err) {
  FAKE(memcpy(dst, src, sizeof(float) * (size_t)n));
}
int orion_nn_gpu_add_bias(orion_gpu *g, float *m, int64_t rows, int64_t cols,
                          const float *b, orion_error *err) {
  FAKE(orion_nn_add_bias(m, rows, cols, b));
}
int orion_nn_gpu_colsum(orion_gpu *g, float *d, const float *m, int64_t rows,
                        int64_t cols, float alpha, float beta,
                        orion_error *err) {
  FAKE(orion_nn_colsum(d, m, rows, cols, alpha, beta));
}

int orion_nn_gpu_softmax_xent(orion_gpu *g, const float *z, int64_t rows,
                              int64_t k, const float *y, float *dz,
                              double *loss, int64_t *correct, int64_t *bad,
                              void *scratch, orion_error *err) {
  fake_gpu_calls++;
  return orion_nn_softmax_xent(z, rows, k, y, dz, loss, correct, bad);
}

int orion_nn_gpu_spmm(orion_gpu *g, float *c, int64_t rows, int64_t cols,
                      const int64_t *ptr, const int32_t *col,
                      const float *val, const float *b, int64_t n,
                      float alpha, float beta, int trans, orion_error *err) {
  orion_nn_csr s = {rows, cols, ptr, col, val};
  FAKE(orion_nn_spmm(c, &s, b, n, alpha, beta, trans));
}

int orion_nn_gpu_h2d_tracked(orion_gpu *g, void *dst, const void *src,
                             size_t bytes, void **ev, orion_error *err) {
  *ev = g; /* any non-NULL event */
  memcpy(dst, src, bytes);
  return 0;
}
int orion_nn_gpu_wait(orion_gpu *g, void *ev, double timeout_s,
                      orion_error *err) {
  return 0;
}
void orion_nn_gpu_event_free(void *ev) {}
