/* TEMPORARY STAND-IN (helper gpu-exec, issue 20): a no-device gpu/gpu.h so
 * that the h-gpu-exec branch builds and tests alone.  gpu-rt's
 * gpu/gpu_none.c and gpu/gpu_cuda.cu replace it: drop this file (and its
 * line in Makefile.am) at merge. */
#include "gpu/gpu.h"

#include <stdio.h>

int orion_gpu_built(void) { return 0; }

int orion_gpu_count(const char **why) {
  if (why != NULL)
    *why = "this build has no CUDA";
  return 0;
}

int orion_gpu_open(int index, uint64_t cap_bytes, orion_gpu **out,
                   orion_error *err) {
  (void)cap_bytes;
  *out = NULL;
  return orion_error_set(err, ORION_EUNSUPPORTED,
                         "GPU %d: this build has no CUDA", index);
}

void orion_gpu_close(orion_gpu *g) { (void)g; }
const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g) {
  (void)g;
  return NULL;
}
void orion_gpu_describe(const orion_gpu *g, char *out, size_t n) {
  (void)g;
  snprintf(out, n, "no GPU");
}
int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what, void **dptr,
                    orion_error *err) {
  (void)g;
  *dptr = NULL;
  return orion_error_set(err, ORION_EUNSUPPORTED,
                         "no GPU: cannot allocate %zu bytes for %s", bytes,
                         what);
}
void orion_gpu_free(orion_gpu *g, void *dptr) {
  (void)g;
  (void)dptr;
}
uint64_t orion_gpu_in_use(const orion_gpu *g) {
  (void)g;
  return 0;
}
int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **hptr,
                         orion_error *err) {
  (void)g;
  *hptr = NULL;
  return orion_error_set(err, ORION_EUNSUPPORTED, "no GPU (%zu bytes)", bytes);
}
void orion_gpu_host_free(orion_gpu *g, void *hptr) {
  (void)g;
  (void)hptr;
}
static int none(orion_error *err) {
  return orion_error_set(err, ORION_EUNSUPPORTED, "no GPU");
}
int orion_gpu_h2d(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err) {
  (void)g, (void)dst, (void)src, (void)bytes;
  return none(err);
}
int orion_gpu_d2h(orion_gpu *g, void *dst, const void *src, size_t bytes,
                  orion_error *err) {
  (void)g, (void)dst, (void)src, (void)bytes;
  return none(err);
}
int orion_gpu_h2d_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err) {
  (void)g, (void)dst, (void)src, (void)bytes, (void)copy;
  return none(err);
}
int orion_gpu_d2h_async(orion_gpu *g, void *dst, const void *src,
                        size_t bytes, int copy, orion_error *err) {
  (void)g, (void)dst, (void)src, (void)bytes, (void)copy;
  return none(err);
}
int orion_gpu_memset(orion_gpu *g, void *dst, int byte, size_t bytes,
                     orion_error *err) {
  (void)g, (void)dst, (void)byte, (void)bytes;
  return none(err);
}
void *orion_gpu_stream(orion_gpu *g) {
  (void)g;
  return NULL;
}
void *orion_gpu_copy_stream(orion_gpu *g) {
  (void)g;
  return NULL;
}
int orion_gpu_sync(orion_gpu *g, int copy, double timeout_s, orion_error *err) {
  (void)g, (void)copy, (void)timeout_s;
  return none(err);
}
int orion_gpu_order(orion_gpu *g, orion_error *err) {
  (void)g;
  return none(err);
}
void *orion_gpu_cublas(orion_gpu *g, orion_error *err) {
  (void)g;
  none(err);
  return NULL;
}
