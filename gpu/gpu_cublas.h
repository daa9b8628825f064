/* cuBLAS, loaded when a process first asks for it (gpu/gpu_cuda.cu).
 *
 * Linking libcublas costs every process that links it about 0.4 s at
 * start (its static constructors run at load: measured on CUDA 13 with a
 * program that does nothing), whether or not it ever multiplies a
 * matrix, and whether or not the machine has a GPU.  So the build does
 * not link it: the backend opens it with dlopen on the first
 * orion_gpu_cublas and calls it through this table.  Included only by
 * CUDA sources (kernels/nn_gpu.cu, gpu/gpu_cuda.cu). */
#ifndef ORION_GPU_GPU_CUBLAS_H
#define ORION_GPU_GPU_CUBLAS_H

#include <cublas_v2.h>

extern "C" {
#include "util/error.h"
}

typedef struct orion_cublas_fns {
  cublasStatus_t (*create)(cublasHandle_t *h);
  cublasStatus_t (*destroy)(cublasHandle_t h);
  cublasStatus_t (*set_stream)(cublasHandle_t h, cudaStream_t s);
  cublasStatus_t (*sgemm)(cublasHandle_t h, cublasOperation_t ta,
                          cublasOperation_t tb, int m, int n, int k,
                          const float *alpha, const float *a, int lda,
                          const float *b, int ldb, const float *beta,
                          float *c, int ldc);
  const char *(*status_string)(cublasStatus_t s);
} orion_cublas_fns;

/* The table, cuBLAS loaded on the first call (thread-safe); NULL with err
 * naming the library and dlerror's reason when it cannot be loaded. */
extern "C" const orion_cublas_fns *orion_gpu_cublas_fns(orion_error *err);

#endif
