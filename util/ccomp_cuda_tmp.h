/* TEMPORARY STAND-IN (helper gpu-exec, issue 20): the declaration of
 * gpu-cgen's orion_cobj_build_cuda (util/ccomp.h on their branch), so that
 * h-gpu-exec builds alone.  At merge: drop this file and
 * util/ccomp_cuda_tmp.c, and include util/ccomp.h where this is included
 * (drivers/exec_gload.c). */
#ifndef ORION_UTIL_CCOMP_CUDA_TMP_H
#define ORION_UTIL_CCOMP_CUDA_TMP_H

#include <stddef.h>

#include "util/ccomp.h"
#include "util/error.h"

/* Builds src with nvcc as a device body (util/gbody.h), like
 * orion_cobj_build. */
int orion_cobj_build_cuda(const char *src, size_t len, const char *mode_flags,
                          double timeout_s, orion_cobj **out, int *cached,
                          orion_error *err);

#endif
