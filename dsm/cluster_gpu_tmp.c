/* TEMPORARY STAND-IN (helper gpu-exec, issue 20): no executor has a device
 * until gpu-rt's registration lands.  Drop at merge (see
 * dsm/cluster_gpu_tmp.h). */
#include "dsm/cluster_gpu_tmp.h"

const char *orion_cluster_executor_gpu(const orion_cluster *c, int exec) {
  (void)c;
  (void)exec;
  return NULL;
}
