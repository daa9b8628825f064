/* TEMPORARY STAND-IN (helper gpu-exec, issue 20) for gpu-rt's accessor in
 * dsm/cluster.h: which executor registered a device.  At merge drop this
 * file and dsm/cluster_gpu_tmp.c, and include dsm/cluster.h where this is
 * included (lua/dist.c, lua/pfor_gpu.c), adapting the call to gpu-rt's
 * signature. */
#ifndef ORION_DSM_CLUSTER_GPU_TMP_H
#define ORION_DSM_CLUSTER_GPU_TMP_H

#include "dsm/cluster.h"

/* The device executor exec registered ("GPU 0 (NVIDIA H100 ...)"), or NULL
 * when it has none. */
const char *orion_cluster_executor_gpu(const orion_cluster *c, int exec);

#endif
