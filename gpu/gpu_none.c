/* gpu/gpu.h in a build without CUDA: there is no device.  orion_gpu_count
 * is 0 with the reason, orion_gpu_open fails saying the build has no CUDA,
 * and the calls that need an open device (none can exist) fail or do
 * nothing the same way, so callers need no #ifdef. */
#include "gpu/gpu.h"

#define NO_CUDA "this build has no CUDA"

int orion_gpu_built(void) { return 0; }

int orion_gpu_count(const char **why) {
  if (why != NULL)
    *why = NO_CUDA " (configure found no nvcc; see --with-cuda)";
  return 0;
}

int orion_gpu_open(int index, uint64_t cap_bytes, orion_gpu **out,
                   orion_error *err) {
  (void)cap_bytes;
  *out = NULL;
  return orion_error_set(err, ORION_EUNSUPPORTED,
                         "GPU %d: " NO_CUDA " (configure found no nvcc; see "
                         "--with-cuda)",
                         index);
}

void orion_gpu_close(orion_gpu *g) { (void)g; }

const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g) {
  (void)g;
  return NULL;
}

void orion_gpu_describe(const orion_gpu *g, char *out, size_t n) {
  (void)g;
  if (n > 0)
    out[0] = '\0';
}

/* What every call on a device says here. */
static int none(orion_error *err) {
  return orion_error_set(err, ORION_EUNSUPPORTED, "no GPU: " NO_CUDA);
}

int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what, void **dptr,
                    orion_error *err) {
  (void)g, (void)bytes, (void)what;
  *dptr = NULL;
  return none(err);
}

void orion_gpu_free(orion_gpu *g, void *dptr) { (void)g, (void)dptr; }

uint64_t orion_gpu_in_use(const orion_gpu *g) {
  (void)g;
  return 0;
}

int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **hptr,
                         orion_error *err) {
  (void)g, (void)bytes;
  *hptr = NULL;
  return none(err);
}

void orion_gpu_host_free(orion_gpu *g, void *hptr) { (void)g, (void)hptr; }

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

int orion_gpu_sync(orion_gpu *g, int copy, double timeout_s,
                   orion_error *err) {
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

int orion_gpu_cublas_load(orion_error *err) { return none(err); }
