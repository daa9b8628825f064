/* Tier "gpu" on the driver (lua/pfor_gpu.h).  A loop asks for the device
 * with tier = "gpu" (a body outside the GPU subset, or no device, runs on
 * the CPU with a note) or gets it with tier = "auto" on executors that
 * registered one; the executors build the body with nvcc and run each
 * block as the device grid executor/gpugrid.h lays out. */
#include "lua/pfor_gpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dsm/cluster.h"
#include "gpu/gpu.h"
#include "lua/pfor.h"
#include "executor/gpugrid.h"
#include "util/log.h"

int orion__gpu_want(const char *tier) {
  return strcmp(tier, "gpu") == 0 ? 2 : strcmp(tier, "auto") == 0 ? 1 : 0;
}

const char *orion__gpu_why(const analysis *a) {
  if (!a->cg_ok)
    return a->note;
  if (!a->cg_gpu)
    return "the device form was not generated (no GPU in the cluster)";
  return a->cg.gpu_why;
}

int orion__gpu_form(const mod_state *s, const char *tier) {
  int want = orion__gpu_want(tier);
  if (want == 2)
    return 1;
  if (want == 0 || s->nexec == 0)
    return 0;
  /* "auto": with the cluster up, only when an executor has a device;
   * before it starts, when this host has one or --gpus asked for them. */
  if (s->cl != NULL)
    return orion__gpu_cluster_has(s);
  return orion_gpu_count(NULL) > 0;
}

int orion__gpu_cluster_has(const mod_state *s) {
  int e;
  if (s->cl == NULL)
    return 0;
  for (e = 0; e < orion_cluster_size(s->cl); e++)
    if (orion_cluster_executor_gpu(s->cl, e, NULL, 0))
      return 1;
  return 0;
}

void orion__gpu_grid_text(const orion_plan *p, int64_t b, char *out,
                          size_t n) {
  orion_gpugrid_kind k = orion_gpugrid_kind_of((int)p->sched, p->order);
  const char *name = orion_sched_name(p->sched);
  char bs[32];
  if (b > 0)
    snprintf(bs, sizeof bs, "%" PRId64, b);
  else
    snprintf(bs, sizeof bs, "b");
  switch (k) {
  case ORION_GPUGRID_2D:
  case ORION_GPUGRID_2D_ORDERED:
    snprintf(out, n, "%s, %s x %s %s%s", name, bs, bs,
             k == ORION_GPUGRID_2D ? "rotation" : "wavefront",
             b > 0 ? "" : ", b ~ sqrt(block elements)");
    break;
  case ORION_GPUGRID_1D:
    snprintf(out, n, "%s, %s groups%s", name, bs,
             b > 0 ? "" : ", b = a block's space keys, at most 65536");
    break;
  case ORION_GPUGRID_NONE:
    if (b > 0)
      snprintf(out, n, "%s, %s groups", name, bs);
    else
      snprintf(out, n, "%s, 1 element per group", name);
    break;
  default:
    snprintf(out, n, "serial");
  }
}

int orion__gpu_tier_text(const mod_state *s, const analysis *a, int want,
                         int64_t b, const char *ctext, char *out, size_t n) {
  const char *why = orion__gpu_why(a);
  char grid[160];
  if (want == 0 || (want == 1 && !orion__gpu_cluster_has(s)))
    return 0;
  if (want == 1 && why[0] != '\0')
    return 0; /* "auto": the CPU tier, as without a device */
  if (why[0] != '\0') {
    snprintf(out, n, "%s; tier \"gpu\": on the CPU, the body is outside the "
                     "GPU subset: %s",
             ctext, why);
    return 1;
  }
  if (s->nexec == 0) {
    snprintf(out, n, "%s; tier \"gpu\": on the CPU, the driver runs the loop "
                     "itself (--executors 0) and has no device",
             ctext);
    return 1;
  }
  orion__gpu_grid_text(&a->plan, b, grid, sizeof grid);
  /* "tier: c (compiled, exact; 3 slots)" -> "compiled, exact; 3 slots" */
  if (strncmp(ctext, "tier: c (", 9) == 0) {
    size_t l = strlen(ctext + 9);
    snprintf(out, n, "tier: gpu (device grid: %s; %.*s)", grid,
             (int)(l > 0 ? l - 1 : 0), ctext + 9);
  } else {
    snprintf(out, n, "tier: gpu (device grid: %s)", grid);
  }
  return 1;
}

void orion__gpu_job(const mod_state *s, const analysis *a, int want,
                    int64_t b, orion_dist_job *j) {
  if (want == 0 || s->nexec == 0 || a == NULL || !a->cg_ok ||
      orion__gpu_why(a)[0] != '\0')
    return;
  j->gpu = want;
  j->gkind = (int)orion_gpugrid_kind_of((int)a->plan.sched, a->plan.order);
  j->gspace = a->plan.space;
  j->gtime = a->plan.time;
  j->gskew_dim = a->plan.skew_dim;
  j->gskew = a->plan.skew;
  j->gb = b;
}

void orion__gpu_note(lua_State *L, const char *where, const char *why) {
  if (orion__first_at(L, "orion.gpu_noted", where))
    orion_log_info("note: the parallel_for at %s runs on the CPU: %s", where,
                   why);
}
