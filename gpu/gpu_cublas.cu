/* cuBLAS opened with dlopen on first use (gpu/gpu_cublas.h says why).
 * Its own object, so that a test that fakes gpu/gpu.h (t/fake_gpu.c,
 * t/test_gbody.c) and links the nn kernels does not pull in the real
 * backend with it. */
#include <cublas_v2.h>
#include <cublas_api.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

extern "C" {
#include "gpu/gpu.h"
}
#include "gpu/gpu_cublas.h"

/* cuBLAS's table, filled once (cublas_v2.h maps the names to their _v2
 * symbols: XNAME gives the symbol the header would call).  pthread_once
 * makes every later call (one per GEMM) a check of a flag, not a lock. */
#define O_STR(x) #x
#define O_XNAME(x) O_STR(x)
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static orion_cublas_fns blas_fns;
static int blas_bad; /* set by blas_load when something is missing */
static char blas_why[512];

static void *blas_sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (p == NULL && !blas_bad) {
    snprintf(blas_why, sizeof blas_why, "%s has no %s", "libcublas", name);
    blas_bad = 1;
  }
  return p;
}

static void blas_load(void) {
  static const char so[] = "libcublas.so." O_XNAME(CUBLAS_VER_MAJOR);
  void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
#ifdef ORION_CUDA_LIBDIR
  if (lib == NULL) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ORION_CUDA_LIBDIR, so);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (lib == NULL) {
    const char *e = dlerror();
    snprintf(blas_why, sizeof blas_why, "cannot load %s: %s", so,
             e != NULL ? e : "not found");
    blas_bad = 1;
    return;
  }
  blas_fns.create =
      (cublasStatus_t(*)(cublasHandle_t *))blas_sym(lib, O_XNAME(cublasCreate));
  blas_fns.destroy =
      (cublasStatus_t(*)(cublasHandle_t))blas_sym(lib, O_XNAME(cublasDestroy));
  blas_fns.set_stream = (cublasStatus_t(*)(cublasHandle_t, cudaStream_t))
      blas_sym(lib, O_XNAME(cublasSetStream));
  blas_fns.sgemm = (cublasStatus_t(*)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
      const float *, const float *, int, const float *, int, const float *,
      float *, int))blas_sym(lib, O_XNAME(cublasSgemm));
  blas_fns.status_string = (const char *(*)(cublasStatus_t))blas_sym(
      lib, O_XNAME(cublasGetStatusString));
}

extern "C" const orion_cublas_fns *orion_gpu_cublas_fns(orion_error *err) {
  pthread_once(&blas_once, blas_load);
  if (blas_bad) {
    orion_error_set(err, -EIO, "cuBLAS: %s", blas_why);
    return NULL;
  }
  return &blas_fns;
}

extern "C" int orion_gpu_cublas_load(orion_error *err) {
  return orion_gpu_cublas_fns(err) != NULL ? 0 : -EIO;
}
