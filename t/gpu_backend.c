/* The GPU backend on a real device (make check-gpu; built only with CUDA,
 * not part of make check): gpu/gpu_cuda.cu's device 0 opened without and
 * with a memory cap, the accounting of allocations and the cap's message,
 * 64 MiB copied both ways (synchronous, then asynchronous on both streams
 * ordered by orion_gpu_order) and compared byte for byte, memset, and one
 * 256x256x256 cublasSgemm through the backend's handle compared with a
 * CPU product.  Prints the device, every value compared and the measured
 * host-to-device and device-to-host rates; exits 0 when every check
 * passed, 1 otherwise (2: no device). */
#include <cublas_v2.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu.h"

#define MiB (1024u * 1024u)
#define BYTES (64u * MiB)
#define N 256

static int failed;

static void check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  fflush(stdout);
  if (!ok)
    failed++;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The first position where a and b differ, or -1. */
static long first_diff(const unsigned char *a, const unsigned char *b,
                       size_t n) {
  size_t i;
  if (memcmp(a, b, n) == 0)
    return -1;
  for (i = 0; i < n && a[i] == b[i]; i++)
    ;
  return (long)i;
}

static void fill(unsigned char *p, size_t n, uint32_t seed) {
  size_t i;
  uint32_t x = seed;
  for (i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (unsigned char)(x >> 24);
  }
}

/* Accounting and the cap's message on a device opened with a 100 MiB cap. */
static void capped(void) {
  orion_gpu *g = NULL;
  orion_error err;
  void *a = NULL, *b = NULL;
  const orion_gpu_info *info;
  char desc[256];
  int rc;
  orion_error_clear(&err);
  rc = orion_gpu_open(0, 100u * MiB, &g, &err);
  check(rc == 0, "open GPU 0 with --gpu-memory 100M");
  if (rc != 0) {
    printf("     %s\n", err.msg);
    return;
  }
  info = orion_gpu_info_of(g);
  orion_gpu_describe(g, desc, sizeof desc);
  printf("     capped: %s\n", desc);
  check(info->cap_bytes == 100u * MiB, "cap_bytes is 100 MiB");
  check(strstr(desc, ", cap 100.0 MiB)") != NULL,
        "the description names the cap");
  rc = orion_gpu_alloc(g, 64u * MiB, "array 'W'", &a, &err);
  check(rc == 0 && a != NULL, "64 MiB under a 100 MiB cap");
  check(orion_gpu_in_use(g) == 64u * MiB, "in use: 64 MiB");
  rc = orion_gpu_alloc(g, 64u * MiB, "array 'W'", &b, &err);
  printf("     second 64 MiB: rc %d, \"%s\"\n", rc, err.msg);
  check(rc == ORION_ENOMEM && b == NULL, "a second 64 MiB is refused");
  check(strncmp(err.msg, "GPU 0 (", 7) == 0 &&
            strstr(err.msg, "): out of device memory allocating 64.0 MiB "
                            "for array 'W' (cap 100.0 MiB, 64.0 MiB in "
                            "use)") != NULL,
        "the cap's message names the device, size, array, cap and use");
  check(orion_gpu_in_use(g) == 64u * MiB, "in use unchanged by a refusal");
  orion_gpu_free(g, a);
  check(orion_gpu_in_use(g) == 0, "in use 0 after free");
  rc = orion_gpu_alloc(g, 64u * MiB, "array 'W'", &b, &err);
  check(rc == 0, "64 MiB again after the free");
  /* Left allocated: close frees it. */
  orion_gpu_close(g);
  /* A cap above the device's memory is the device's memory. */
  rc = orion_gpu_open(0, UINT64_MAX / 2, &g, &err);
  check(rc == 0 && orion_gpu_info_of(g)->cap_bytes ==
                       orion_gpu_info_of(g)->total_bytes,
        "a cap over the device's memory is the device's memory");
  if (rc == 0)
    orion_gpu_close(g);
}

/* 64 MiB both ways, synchronous and asynchronous; memset. */
static void copies(orion_gpu *g) {
  orion_error err;
  unsigned char *src = NULL, *dst = NULL;
  void *d1 = NULL, *d2 = NULL;
  double t, h2d = 1e30, d2h = 1e30;
  long at;
  int rep, rc;
  size_t i;
  orion_error_clear(&err);
  rc = orion_gpu_host_alloc(g, BYTES, (void **)&src, &err);
  rc = rc != 0 ? rc : orion_gpu_host_alloc(g, BYTES, (void **)&dst, &err);
  rc = rc != 0 ? rc : orion_gpu_alloc(g, BYTES, "copy source", &d1, &err);
  rc = rc != 0 ? rc : orion_gpu_alloc(g, BYTES, "copy target", &d2, &err);
  check(rc == 0, "2 x 64 MiB pinned host and 2 x 64 MiB device");
  if (rc != 0) {
    printf("     %s\n", err.msg);
    return;
  }
  check(orion_gpu_in_use(g) == 2ull * BYTES, "in use: 128 MiB");
  fill(src, BYTES, 12345);
  for (rep = 0; rep < 5; rep++) {
    memset(dst, 0, BYTES);
    t = now_s();
    rc = orion_gpu_h2d(g, d1, src, BYTES, &err);
    t = now_s() - t;
    if (t < h2d)
      h2d = t;
    if (rc == 0) {
      t = now_s();
      rc = orion_gpu_d2h(g, dst, d1, BYTES, &err);
      t = now_s() - t;
      if (t < d2h)
        d2h = t;
    }
    if (rc != 0)
      break;
  }
  check(rc == 0, "synchronous copies");
  if (rc != 0)
    printf("     %s\n", err.msg);
  at = first_diff(src, dst, BYTES);
  if (at >= 0)
    printf("     first difference at byte %ld: sent %u, got %u\n", at,
           src[at], dst[at]);
  check(at < 0, "64 MiB round trip (synchronous) is byte-identical");
  printf("     H2D %.2f GB/s, D2H %.2f GB/s (64 MiB pinned, best of 5)\n",
         BYTES / h2d / 1e9, BYTES / d2h / 1e9);

  /* Async: to the device on the copy stream, back on the work stream
   * after orion_gpu_order, then back again on the copy stream. */
  fill(src, BYTES, 777);
  memset(dst, 0, BYTES);
  rc = orion_gpu_h2d_async(g, d2, src, BYTES, 1, &err);
  rc = rc != 0 ? rc : orion_gpu_order(g, &err);
  rc = rc != 0 ? rc : orion_gpu_d2h_async(g, dst, d2, BYTES, 0, &err);
  rc = rc != 0 ? rc : orion_gpu_sync(g, 0, 30, &err);
  check(rc == 0, "async copy (copy stream), order, async copy back (work "
                 "stream), sync");
  if (rc != 0)
    printf("     %s\n", err.msg);
  at = first_diff(src, dst, BYTES);
  if (at >= 0)
    printf("     first difference at byte %ld: sent %u, got %u\n", at,
           src[at], dst[at]);
  check(at < 0, "64 MiB round trip (asynchronous, ordered) is identical");
  memset(dst, 0, BYTES);
  rc = orion_gpu_d2h_async(g, dst, d2, BYTES, 1, &err);
  rc = rc != 0 ? rc : orion_gpu_sync(g, 1, 30, &err);
  check(rc == 0 && first_diff(src, dst, BYTES) < 0,
        "async copy back on the copy stream, sync(copy)");

  rc = orion_gpu_memset(g, d1, 0x5a, BYTES, &err);
  rc = rc != 0 ? rc : orion_gpu_d2h(g, dst, d1, BYTES, &err);
  for (i = 0; rc == 0 && i < BYTES && dst[i] == 0x5a; i++)
    ;
  check(rc == 0 && i == BYTES, "memset 0x5a over 64 MiB");
  if (rc == 0 && i < BYTES)
    printf("     byte %zu is 0x%02x\n", i, dst[i]);
  orion_gpu_free(g, d1);
  orion_gpu_free(g, d2);
  check(orion_gpu_in_use(g) == 0, "in use 0 after the frees");
  orion_gpu_host_free(g, src);
  orion_gpu_host_free(g, dst);
}

/* One sgemm through the backend's handle against a CPU product. */
static void gemm(orion_gpu *g) {
  orion_error err;
  cublasHandle_t h;
  float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
        *c = malloc(sizeof(float) * N * N);
  void *da = NULL, *db = NULL, *dc = NULL;
  const float one = 1, zero = 0;
  double worst = 0, worst_abs = 0;
  uint32_t x = 99;
  int i, j, k, rc;
  cublasStatus_t s;
  orion_error_clear(&err);
  for (i = 0; i < N * N; i++) {
    x = x * 1664525u + 1013904223u;
    a[i] = (float)((x >> 8) / 16777216.0 - 0.5);
    x = x * 1664525u + 1013904223u;
    b[i] = (float)((x >> 8) / 16777216.0 - 0.5);
  }
  h = (cublasHandle_t)orion_gpu_cublas(g, &err);
  check(h != NULL, "cuBLAS handle");
  if (h == NULL) {
    printf("     %s\n", err.msg);
    goto out;
  }
  check(orion_gpu_cublas(g, &err) == (void *)h, "the same handle again");
  rc = orion_gpu_alloc(g, sizeof(float) * N * N, "A", &da, &err);
  rc = rc != 0 ? rc : orion_gpu_alloc(g, sizeof(float) * N * N, "B", &db, &err);
  rc = rc != 0 ? rc : orion_gpu_alloc(g, sizeof(float) * N * N, "C", &dc, &err);
  rc = rc != 0 ? rc : orion_gpu_h2d(g, da, a, sizeof(float) * N * N, &err);
  rc = rc != 0 ? rc : orion_gpu_h2d(g, db, b, sizeof(float) * N * N, &err);
  if (rc != 0) {
    check(0, "GEMM operands on the device");
    printf("     %s\n", err.msg);
    goto out;
  }
  s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
                  &zero, dc, N);
  check(s == CUBLAS_STATUS_SUCCESS, "cublasSgemm queued");
  if (s != CUBLAS_STATUS_SUCCESS)
    printf("     %s\n", cublasGetStatusString(s));
  rc = orion_gpu_sync(g, 0, 30, &err);
  rc = rc != 0 ? rc : orion_gpu_d2h(g, c, dc, sizeof(float) * N * N, &err);
  check(rc == 0, "sgemm finished and copied back");
  if (rc != 0) {
    printf("     %s\n", err.msg);
    goto out;
  }
  /* Column-major: C[i + j*N] = sum_k A[i + k*N] * B[k + j*N]. */
  for (j = 0; j < N; j++)
    for (i = 0; i < N; i++) {
      double ref = 0, mag = 0, d;
      for (k = 0; k < N; k++) {
        ref += (double)a[i + k * N] * b[k + j * N];
        mag += fabs((double)a[i + k * N] * b[k + j * N]);
      }
      d = fabs(c[i + j * N] - ref);
      if (d > worst_abs)
        worst_abs = d;
      if (d / (mag > 1e-6 ? mag : 1e-6) > worst)
        worst = d / (mag > 1e-6 ? mag : 1e-6);
    }
  printf("     sgemm 256^3: largest error %.3g (%.3g relative to sum |a*b|); "
         "C[0] %.6f, C[last] %.6f\n",
         worst_abs, worst, c[0], c[N * N - 1]);
  check(worst <= 1e-3, "sgemm matches the CPU product within 1e-3 relative");
out:
  orion_gpu_free(g, da);
  orion_gpu_free(g, db);
  orion_gpu_free(g, dc);
  free(a);
  free(b);
  free(c);
}

int main(void) {
  orion_gpu *g = NULL;
  orion_error err;
  const orion_gpu_info *info;
  const char *why = "";
  char desc[256];
  int n;
  setvbuf(stdout, NULL, _IOLBF, 0);
  n = orion_gpu_count(&why);
  printf("gpu_backend: %d device%s visible%s%s\n", n, n == 1 ? "" : "s",
         n == 0 ? ": " : "", n == 0 ? why : "");
  if (n == 0) {
    printf("SKIP: no GPU\n");
    return 77;
  }
  orion_error_clear(&err);
  if (orion_gpu_open(0, 0, &g, &err) != 0) {
    printf("FAIL: open GPU 0: %s\n", err.msg);
    return 1;
  }
  info = orion_gpu_info_of(g);
  orion_gpu_describe(g, desc, sizeof desc);
  printf("device: %s; %d SMs, peak %.0f GB/s\n", desc, info->sms,
         info->mem_gbps);
  check(info->index == 0 && info->name[0] != '\0', "info: index and name");
  check(info->cap_bytes == info->total_bytes && info->total_bytes > 0,
        "no cap: cap_bytes is the device's memory");
  check(strncmp(desc, "GPU 0 (", 7) == 0 && strstr(desc, ", cc ") != NULL,
        "description 'GPU 0 (NAME, SIZE, cc X.Y)'");
  check(info->mem_gbps > 0, "peak bandwidth known");
  check(orion_gpu_stream(g) != NULL && orion_gpu_copy_stream(g) != NULL &&
            orion_gpu_stream(g) != orion_gpu_copy_stream(g),
        "two distinct streams");
  check(orion_gpu_sync(g, 0, 5, &err) == 0 && orion_gpu_sync(g, 1, 5, &err) == 0,
        "sync of idle streams");
  copies(g);
  gemm(g);
  orion_gpu_close(g);
  capped();
  printf("gpu_backend: %s (%d check%s failed)\n", failed ? "FAIL" : "PASS",
         failed, failed == 1 ? "" : "s");
  return failed ? 1 : 0;
}
