/* The CUDA backend of gpu/gpu.h: one device opened by a process, its
 * memory counted against a cap, a work stream and a copy stream, pinned
 * host memory, copies, a timed wait, and a cuBLAS handle made on first use.
 *
 * Built with nvcc when configure finds CUDA (Makefile.am); the runtime is
 * the toolkit's shared library, so a GPU body that an executor loads with
 * dlopen shares this process's CUDA context.  cuBLAS is opened with
 * dlopen on first use (gpu/gpu_cublas.h says why).
 * Without a driver or a device every call fails with the reason, as
 * gpu/gpu_none.c does in a build without CUDA.
 *
 * Every CUDA call's status is checked; every wait polls with short sleeps
 * and gives up after its timeout, naming the device and the stream.
 */
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unordered_map>

extern "C" {
#include "gpu/gpu.h"
}
#include "gpu/gpu_cublas.h"

struct orion_gpu {
  orion_gpu_info info;
  char label[192]; /* "GPU 0 (NVIDIA H100 80GB HBM3)", for messages */
  cudaStream_t work, copy;
  cudaEvent_t copied; /* orion_gpu_order's */
  cublasHandle_t blas;
  int blas_made;
  uint64_t in_use;
  std::unordered_map<void *, size_t> *dev;  /* device allocations */
  std::unordered_map<void *, size_t> *host; /* pinned host allocations */
};

/* "512.0 MiB" into out (a static-size buffer of the caller's). */
static void human(uint64_t bytes, char *out, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(out, n, "%llu B", (unsigned long long)bytes);
  else
    snprintf(out, n, "%.1f %s", v, units[u]);
}

/* err = "LABEL: what: cudaGetErrorString(e)", returns -EIO. */
static int cuda_fail(const orion_gpu *g, orion_error *err, cudaError_t e,
                     const char *what) {
  return orion_error_set(err, -EIO, "%s: %s: %s", g->label, what,
                         cudaGetErrorString(e));
}

static int current(orion_gpu *g, orion_error *err) {
  cudaError_t e = cudaSetDevice(g->info.index);
  return e == cudaSuccess ? 0 : cuda_fail(g, err, e, "cudaSetDevice");
}

extern "C" int orion_gpu_built(void) { return 1; }

extern "C" int orion_gpu_count(const char **why) {
  static char reason[512];
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  char visible[160] = "";
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0)
    return n;
  if (why == NULL)
    return 0;
  if (vis != NULL)
    snprintf(visible, sizeof visible, " (CUDA_VISIBLE_DEVICES='%.100s')",
             vis);
  if (e == cudaSuccess || e == cudaErrorNoDevice)
    snprintf(reason, sizeof reason, "no device: %s%s",
             e == cudaSuccess ? "the CUDA driver sees no GPU"
                              : cudaGetErrorString(e),
             visible);
  else if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
           e == cudaErrorInitializationError)
    snprintf(reason, sizeof reason, "no CUDA driver: %s%s",
             cudaGetErrorString(e), visible);
  else
    snprintf(reason, sizeof reason, "CUDA cannot start: %s%s",
             cudaGetErrorString(e), visible);
  *why = reason;
  return 0;
}

/* Peak bandwidth from the memory clock (kHz) and bus width (bits); 0 when
 * the device does not say. */
static double peak_gbps(int dev) {
  int khz = 0, bits = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev) !=
          cudaSuccess)
    return 0;
  /* Two transfers per clock (DDR/HBM), bits / 8 bytes each. */
  return 2.0 * (double)khz * 1e3 * ((double)bits / 8.0) / 1e9;
}

static void destroy(orion_gpu *g) {
  if (g->dev != NULL) {
    for (auto &a : *g->dev)
      cudaFree(a.first);
    delete g->dev;
  }
  if (g->host != NULL) {
    for (auto &a : *g->host)
      cudaFreeHost(a.first);
    delete g->host;
  }
  if (g->blas_made)
    orion_gpu_cublas_fns(NULL)->destroy(g->blas);
  if (g->copied != NULL)
    cudaEventDestroy(g->copied);
  if (g->work != NULL)
    cudaStreamDestroy(g->work);
  if (g->copy != NULL)
    cudaStreamDestroy(g->copy);
  free(g);
}

extern "C" int orion_gpu_open(int index, uint64_t cap_bytes, orion_gpu **out,
                              orion_error *err) {
  const char *why = NULL;
  int n = orion_gpu_count(&why);
  orion_gpu *g;
  cudaDeviceProp p;
  cudaError_t e;
  size_t freeb = 0, totalb = 0;
  *out = NULL;
  if (n == 0)
    return orion_error_set(err, ORION_EUNSUPPORTED, "GPU %d: %s", index, why);
  if (index < 0 || index >= n)
    return orion_error_set(err, ORION_EINVAL,
                           "GPU %d: no such device (%d visible: 0..%d)",
                           index, n, n - 1);
  g = (orion_gpu *)calloc(1, sizeof *g);
  if (g == NULL)
    return orion_error_set(err, ORION_ENOMEM, "GPU %d: out of memory", index);
  g->info.index = index;
  snprintf(g->label, sizeof g->label, "GPU %d", index);
  if ((e = cudaSetDevice(index)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(&p, index)) != cudaSuccess) {
    cuda_fail(g, err, e, "cannot open it");
    destroy(g);
    return err != NULL ? err->code : -EIO;
  }
  snprintf(g->info.name, sizeof g->info.name, "%.127s", p.name);
  snprintf(g->label, sizeof g->label, "GPU %d (%s)", index, g->info.name);
  g->info.total_bytes = p.totalGlobalMem;
  g->info.cap_bytes = cap_bytes > 0 && cap_bytes < p.totalGlobalMem
                          ? cap_bytes
                          : (uint64_t)p.totalGlobalMem;
  g->info.cc_major = p.major;
  g->info.cc_minor = p.minor;
  g->info.sms = p.multiProcessorCount;
  g->info.mem_gbps = peak_gbps(index);
  /* The context is made here, so that a broken device fails at open. */
  if ((e = cudaMemGetInfo(&freeb, &totalb)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&g->work, cudaStreamNonBlocking)) !=
          cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking)) !=
          cudaSuccess ||
      (e = cudaEventCreateWithFlags(&g->copied, cudaEventDisableTiming)) !=
          cudaSuccess) {
    cuda_fail(g, err, e, "cannot start it");
    destroy(g);
    return err != NULL ? err->code : -EIO;
  }
  g->dev = new (std::nothrow) std::unordered_map<void *, size_t>();
  g->host = new (std::nothrow) std::unordered_map<void *, size_t>();
  if (g->dev == NULL || g->host == NULL) {
    orion_error_set(err, ORION_ENOMEM, "%s: out of memory", g->label);
    destroy(g);
    return ORION_ENOMEM;
  }
  *out = g;
  return 0;
}

extern "C" void orion_gpu_close(orion_gpu *g) {
  if (g == NULL)
    return;
  cudaSetDevice(g->info.index);
  /* Let queued work end before its memory goes (bounded). */
  orion_gpu_sync(g, 0, 10, NULL);
  orion_gpu_sync(g, 1, 10, NULL);
  destroy(g);
}

extern "C" const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g) {
  return &g->info;
}

extern "C" void orion_gpu_describe(const orion_gpu *g, char *out, size_t n) {
  char total[32], cap[32];
  const orion_gpu_info *i = &g->info;
  human(i->total_bytes, total, sizeof total);
  human(i->cap_bytes, cap, sizeof cap);
  snprintf(out, n, "GPU %d (%s, %s, cc %d.%d%s%s)", i->index, i->name, total,
           i->cc_major, i->cc_minor,
           i->cap_bytes < i->total_bytes ? ", cap " : "",
           i->cap_bytes < i->total_bytes ? cap : "");
}

extern "C" int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what,
                               void **dptr, orion_error *err) {
  char want[32], cap[32], used[32], whatq[160];
  void *p = NULL;
  cudaError_t e = cudaSuccess;
  *dptr = NULL;
  snprintf(whatq, sizeof whatq, " for %s", what != NULL ? what : "");
  if (what == NULL || what[0] == '\0')
    whatq[0] = '\0';
  if (bytes == 0)
    bytes = 1; /* a distinct pointer for an empty array */
  if (bytes > g->info.cap_bytes || g->in_use > g->info.cap_bytes - bytes ||
      (e = cudaSetDevice(g->info.index)) != cudaSuccess ||
      (e = cudaMalloc(&p, bytes)) != cudaSuccess) {
    human(bytes, want, sizeof want);
    human(g->info.cap_bytes, cap, sizeof cap);
    human(g->in_use, used, sizeof used);
    if (e != cudaSuccess)
      cudaGetLastError(); /* not sticky: clear it */
    return orion_error_set(
        err, ORION_ENOMEM,
        "%s: out of device memory allocating %s%s (cap %s, %s in use)%s%s",
        g->label, want, whatq, cap, used,
        e != cudaSuccess ? ": " : "",
        e != cudaSuccess ? cudaGetErrorString(e) : "");
  }
  try {
    (*g->dev)[p] = bytes;
  } catch (...) {
    cudaFree(p);
    return orion_error_set(err, ORION_ENOMEM, "%s: out of memory", g->label);
  }
  g->in_use += bytes;
  *dptr = p;
  return 0;
}

extern "C" void orion_gpu_free(orion_gpu *g, void *dptr) {
  auto it = dptr != NULL ? g->dev->find(dptr) : g->dev->end();
  if (it == g->dev->end())
    return;
  cudaSetDevice(g->info.index);
  cudaFree(dptr);
  g->in_use -= it->second;
  g->dev->erase(it);
}

extern "C" uint64_t orion_gpu_in_use(const orion_gpu *g) { return g->in_use; }

extern "C" int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **hptr,
                                    orion_error *err) {
  char want[32];
  void *p = NULL;
  cudaError_t e;
  *hptr = NULL;
  if (current(g, err) != 0)
    return err != NULL ? err->code : -EIO;
  if ((e = cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocPortable)) !=
      cudaSuccess) {
    cudaGetLastError();
    human(bytes, want, sizeof want);
    return orion_error_set(err, ORION_ENOMEM,
                           "%s: cannot allocate %s of pinned host memory: %s",
                           g->label, want, cudaGetErrorString(e));
  }
  try {
    (*g->host)[p] = bytes;
  } catch (...) {
    cudaFreeHost(p);
    return orion_error_set(err, ORION_ENOMEM, "%s: out of memory", g->label);
  }
  *hptr = p;
  return 0;
}

extern "C" void orion_gpu_host_free(orion_gpu *g, void *hptr) {
  auto it = hptr != NULL ? g->host->find(hptr) : g->host->end();
  if (it == g->host->end())
    return;
  cudaFreeHost(hptr);
  g->host->erase(it);
}

/* One copy queued on stream s; kind names it in messages. */
static int queue_copy(orion_gpu *g, void *dst, const void *src, size_t bytes,
                      cudaMemcpyKind kind, cudaStream_t s, orion_error *err) {
  char what[96], sz[32];
  cudaError_t e;
  if (bytes == 0)
    return 0;
  if (dst == NULL || src == NULL)
    return orion_error_set(err, ORION_EINVAL, "%s: a copy with a NULL pointer",
                           g->label);
  if (current(g, err) != 0)
    return err != NULL ? err->code : -EIO;
  e = cudaMemcpyAsync(dst, src, bytes, kind, s);
  if (e == cudaSuccess)
    return 0;
  human(bytes, sz, sizeof sz);
  snprintf(what, sizeof what, "copying %s %s", sz,
           kind == cudaMemcpyHostToDevice ? "to the device"
                                          : "from the device");
  return cuda_fail(g, err, e, what);
}

extern "C" int orion_gpu_h2d(orion_gpu *g, void *dst, const void *src,
                             size_t bytes, orion_error *err) {
  int rc = queue_copy(g, dst, src, bytes, cudaMemcpyHostToDevice, g->work,
                      err);
  return rc != 0 ? rc : orion_gpu_sync(g, 0, 0, err);
}

extern "C" int orion_gpu_d2h(orion_gpu *g, void *dst, const void *src,
                             size_t bytes, orion_error *err) {
  int rc = queue_copy(g, dst, src, bytes, cudaMemcpyDeviceToHost, g->work,
                      err);
  return rc != 0 ? rc : orion_gpu_sync(g, 0, 0, err);
}

extern "C" int orion_gpu_h2d_async(orion_gpu *g, void *dst, const void *src,
                                   size_t bytes, int copy, orion_error *err) {
  return queue_copy(g, dst, src, bytes, cudaMemcpyHostToDevice,
                    copy ? g->copy : g->work, err);
}

extern "C" int orion_gpu_d2h_async(orion_gpu *g, void *dst, const void *src,
                                   size_t bytes, int copy, orion_error *err) {
  return queue_copy(g, dst, src, bytes, cudaMemcpyDeviceToHost,
                    copy ? g->copy : g->work, err);
}

/* Queued on the work stream, in order with the kernels there. */
extern "C" int orion_gpu_memset(orion_gpu *g, void *dst, int byte,
                                size_t bytes, orion_error *err) {
  cudaError_t e;
  if (bytes == 0)
    return 0;
  if (current(g, err) != 0)
    return err != NULL ? err->code : -EIO;
  e = cudaMemsetAsync(dst, byte, bytes, g->work);
  return e == cudaSuccess ? 0 : cuda_fail(g, err, e, "cudaMemsetAsync");
}

extern "C" void *orion_gpu_stream(orion_gpu *g) { return (void *)g->work; }
extern "C" void *orion_gpu_copy_stream(orion_gpu *g) {
  return (void *)g->copy;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

extern "C" int orion_gpu_sync(orion_gpu *g, int copy, double timeout_s,
                              orion_error *err) {
  cudaStream_t s = copy ? g->copy : g->work;
  const char *name = copy ? "the copy stream" : "the work stream";
  double until;
  long nap_ns = 20000;
  cudaError_t e;
  if (timeout_s <= 0)
    timeout_s = 600;
  if (current(g, err) != 0)
    return err != NULL ? err->code : -EIO;
  until = now_s() + timeout_s;
  for (;;) {
    e = cudaStreamQuery(s);
    if (e != cudaErrorNotReady)
      break;
    if (now_s() > until)
      return orion_error_set(err, -ETIMEDOUT,
                             "%s: %s did not finish within %g s", g->label,
                             name, timeout_s);
    struct timespec ts = {0, nap_ns};
    nanosleep(&ts, NULL);
    if (nap_ns < 1000000)
      nap_ns *= 2;
  }
  if (e == cudaSuccess)
    e = cudaGetLastError(); /* a launch that failed since the last check */
  if (e != cudaSuccess) {
    char what[96];
    snprintf(what, sizeof what, "waiting for %s: a kernel or copy failed",
             name);
    return cuda_fail(g, err, e, what);
  }
  return 0;
}

extern "C" int orion_gpu_order(orion_gpu *g, orion_error *err) {
  cudaError_t e;
  if (current(g, err) != 0)
    return err != NULL ? err->code : -EIO;
  if ((e = cudaEventRecord(g->copied, g->copy)) != cudaSuccess ||
      (e = cudaStreamWaitEvent(g->work, g->copied, 0)) != cudaSuccess)
    return cuda_fail(g, err, e, "ordering the work stream after the copies");
  return 0;
}

extern "C" void *orion_gpu_cublas(orion_gpu *g, orion_error *err) {
  const orion_cublas_fns *f;
  cublasStatus_t s;
  if (g->blas_made)
    return (void *)g->blas;
  if (current(g, err) != 0)
    return NULL;
  if ((f = orion_gpu_cublas_fns(err)) == NULL)
    return NULL;
  s = f->create(&g->blas);
  if (s != CUBLAS_STATUS_SUCCESS) {
    orion_error_set(err, -EIO, "%s: cuBLAS cannot start: %s", g->label,
                    f->status_string(s));
    return NULL;
  }
  s = f->set_stream(g->blas, g->work);
  if (s != CUBLAS_STATUS_SUCCESS) {
    f->destroy(g->blas);
    orion_error_set(err, -EIO, "%s: cublasSetStream: %s", g->label,
                    f->status_string(s));
    return NULL;
  }
  g->blas_made = 1;
  return (void *)g->blas;
}
