/* A described workload on a cluster of any size (scheduler/sim_scale.h). */
#include "config.h"

#include "scheduler/sim_scale.h"
#include "util/alloc.h"

/* parallel_for's limit on partitions per dimension (lua/pfor.c) and the
 * runtime's default (lua/orion.h's ORION_DEFAULT_PARTITIONS, which this
 * layer cannot include). */
#define MAX_PARTS 4096
#define DEFAULT_PARTS 8

int orion_sim_parts(int hosts, int per_host, int64_t rows) {
  int64_t p = (int64_t)(hosts > 0 ? hosts : 1) * (per_host > 0 ? per_host : 1);
  if (p < DEFAULT_PARTS)
    p = DEFAULT_PARTS;
  if (p > MAX_PARTS)
    p = MAX_PARTS;
  if (p > rows)
    p = rows;
  return p < 1 ? 1 : (int)p;
}

int orion_sim_scale(const orion_sim_workload *w, int hosts, double cpus,
                    double bytes_per_s, int p0, int p1, orion_sim_result *r,
                    orion_error *err) {
  orion_sim_loop lp = {0};
  orion_sim_cluster c;
  orion_sim_host *h;
  int e, rc;
  if (hosts < 1 || !(cpus > 0) || !(bytes_per_s >= 0) || w->rows1 < 1)
    return orion_error_set(err, ORION_EINVAL,
                           "simulator: %d hosts of %g CPUs at %g bytes/s, "
                           "%lld rotating rows",
                           hosts, cpus, bytes_per_s, (long long)w->rows1);
  h = orion_malloc(sizeof *h * (size_t)hosts);
  if (h == NULL)
    return orion_error_set(err, ORION_ENOMEM, "simulator: out of memory");
  for (e = 0; e < hosts; e++)
    h[e] = (orion_sim_host){w->sec_per_elem / cpus, bytes_per_s,
                            ORION_SIM_HOST_LATENCY, 0};
  c.n = hosts;
  c.hosts = h;
  c.driver = (orion_sim_host){0, bytes_per_s, ORION_SIM_HOST_LATENCY, 0};
  lp.kind = w->kind;
  lp.n0 = p0;
  lp.n1 = p1;
  lp.elems_total = w->elements;
  lp.part_bytes = w->row_bytes * (double)w->rows1 / (double)p1;
  lp.drv_block_bytes = w->drv_block_bytes;
  lp.drv_elem_bytes = w->drv_elem_bytes;
  lp.drv_block_sec = w->drv_block_sec;
  lp.drv_exec_bytes = w->drv_exec_bytes;
  lp.early = w->early;
  lp.ahead = w->ahead;
  lp.reorder = w->reorder;
  lp.window = w->window;
  rc = orion_sim_predict(&lp, &c, r, err);
  orion_free(h);
  return rc;
}
