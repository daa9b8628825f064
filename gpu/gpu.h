/* The GPU backend: one CUDA device owned by an executor (or by a test),
 * device memory with a cap, copies, one stream, cuBLAS.
 *
 * Two implementations with this one interface: gpu/gpu_cuda.cu (built with
 * nvcc when configure finds CUDA; links cudart, cuBLAS, cuRAND from the
 * toolkit, all as shared libraries, so that a compiled GPU body loaded
 * with dlopen shares the executor's CUDA context) and gpu/gpu_none.c
 * (without CUDA: no device, every open fails with a message saying the
 * build has no CUDA).  Without a device (no driver, no GPU,
 * CUDA_VISIBLE_DEVICES empty) the CUDA build behaves as gpu_none does at
 * run time: orion_gpu_count() is 0 and orion_gpu_open() fails with a
 * message naming the reason (cudaGetErrorString of the failure).
 *
 * Threads: an orion_gpu is used by one thread at a time (an executor's
 * compute thread); functions make the device current for the calling
 * thread when needed.  Sizes are bytes.  Every function that can fail
 * returns 0 or an ORION_E... code with err filled (naming the device and
 * what was asked: "GPU 0 (NVIDIA H100): out of device memory allocating
 * 512.0 MiB for array 'W' (cap 256.0 MiB, 200.0 MiB in use)").
 *
 * This header is C (no CUDA types): a stream is an opaque void *.
 */
#ifndef ORION_GPU_GPU_H
#define ORION_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct orion_gpu orion_gpu;

/* What a device is, for registration and logs. */
typedef struct orion_gpu_info {
  int index;            /* the CUDA device number (after CUDA_VISIBLE_DEVICES) */
  char name[128];       /* "NVIDIA H100 80GB HBM3" */
  uint64_t total_bytes; /* device memory */
  uint64_t cap_bytes;   /* what this executor may use (--gpu-memory), <= total */
  int cc_major, cc_minor; /* compute capability */
  int sms;              /* multiprocessors */
  double mem_gbps;      /* peak memory bandwidth from the clock and bus width,
                           GB/s (0 when unknown) */
} orion_gpu_info;

/* 1 when this build has the CUDA backend (gpu_cuda.cu), else 0. */
int orion_gpu_built(void);

/* The number of usable devices; 0 without CUDA, driver or device.  When
 * 0 and why != NULL, *why is set to a static sentence saying why ("this
 * build has no CUDA", "no CUDA driver: ...", "no device: ..."). */
int orion_gpu_count(const char **why);

/* Opens device `index` for this process.  cap_bytes 0: no cap beyond the
 * device's free memory; otherwise allocations past cap_bytes fail with
 * ORION_ENOMEM (this is how tests run a model larger than "device
 * memory").  */
int orion_gpu_open(int index, uint64_t cap_bytes, orion_gpu **out,
                   orion_error *err);
void orion_gpu_close(orion_gpu *g); /* frees everything still allocated */
const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g);

/* "GPU 0 (NVIDIA H100 80GB HBM3, 79.1 GiB, cc 9.0)" into out. */
void orion_gpu_describe(const orion_gpu *g, char *out, size_t n);

/* Device memory, counted against the cap.  what names the use in the
 * error message ("array 'W'"). */
int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what, void **dptr,
                    orion_error *err);
void orion_gpu_free(orion_gpu *g, void *dptr);
uint64_t orion_gpu_in_use(const orion_gpu *g);

/* Page-locked host memory (for staging and for partitions kept on the
 * host); not counted against the cap.  orion_gpu_host_free(NULL) is
 * fine. */
int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **hptr,
                         orion_error *err);
void orion_gpu_host_free(orion_gpu *g, void *hptr);

/* Copies on the device's default work stream (orion_gpu_stream), or on
 * the copy stream (orion_gpu_copy_stream) for the _async ones with
 * copy = 1.  Synchronous copies return when the data is there. */
int orion_gpu_h2d(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err);
int orion_gpu_d2h(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err);
int orion_gpu_h2d_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err);
int orion_gpu_d2h_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err);
int orion_gpu_memset(orion_gpu *g, void *dst, int byte, size_t bytes,
                     orion_error *err);

/* The work stream (kernels run here) and the copy stream, as
 * cudaStream_t cast to void *; NULL from gpu_none. */
void *orion_gpu_stream(orion_gpu *g);
void *orion_gpu_copy_stream(orion_gpu *g);

/* Waits for the work stream (copy = 0) or the copy stream (copy = 1),
 * at most timeout_s seconds (0: 600 s); a kernel error or the timeout is
 * the error. */
int orion_gpu_sync(orion_gpu *g, int copy, double timeout_s, orion_error *err);

/* The work stream waits for what was queued on the copy stream so far
 * (an event), without blocking the host. */
int orion_gpu_order(orion_gpu *g, orion_error *err);

/* The cuBLAS handle bound to the work stream (cublasHandle_t as void *),
 * created on first use; NULL with err set when cuBLAS cannot start. */
void *orion_gpu_cublas(orion_gpu *g, orion_error *err);

/* Loads cuBLAS (once; no device needed): the CUDA build opens it with
 * dlopen when first used rather than linking it (gpu/gpu_cublas.h).  0,
 * or nonzero with err naming the library and the reason. */
int orion_gpu_cublas_load(orion_error *err);

#endif
