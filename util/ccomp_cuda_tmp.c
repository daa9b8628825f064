/* TEMPORARY STAND-IN (helper gpu-exec, issue 20) for gpu-cgen's
 * orion_cobj_build_cuda: always fails, as a build without nvcc would.
 * Drop at merge (see util/ccomp_cuda_tmp.h). */
#include "util/ccomp_cuda_tmp.h"

int orion_cobj_build_cuda(const char *src, size_t len, const char *mode_flags,
                          double timeout_s, orion_cobj **out, int *cached,
                          orion_error *err) {
  (void)src, (void)len, (void)mode_flags, (void)timeout_s;
  *out = NULL;
  if (cached != NULL)
    *cached = 0;
  return orion_error_set(err, ORION_ECOMPILE,
                         "this build cannot compile device bodies (no nvcc)");
}
