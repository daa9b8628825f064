/* Partitions and placement chosen by the simulator
 * (scheduler/sim_choose.h). */
#include "config.h"

#include "scheduler/sim_choose.h"

#define MAX_PARTS 4096 /* parallel_for's limit per dimension */

/* One candidate: lp cut into parts (even blocks), placed dynamic or not. */
static int try_one(const orion_sim_loop *lp, const orion_sim_cluster *c,
                   int64_t total, int parts, int dynamic, double *seconds,
                   orion_error *err) {
  orion_sim_loop x = *lp;
  x.n0 = parts;
  x.n1 = lp->n1 == 1 ? 1 : parts;
  x.elems = NULL;
  x.elems_total = total;
  x.part_bytes = lp->part_bytes * (double)lp->n1 / (double)x.n1;
  x.dynamic = dynamic;
  return orion_sim_pass(&x, c, seconds, err);
}

int orion_sim_choose(const orion_sim_loop *lp, const orion_sim_cluster *c,
                     int64_t max_parts, double margin, int keep_placement,
                     orion_sim_setting *ran, orion_sim_setting *best,
                     orion_error *err) {
  int64_t total = 0, cand[5];
  int i, dyn, rc, nb = lp->n0 * lp->n1;
  if (lp->elems != NULL)
    for (i = 0; i < nb; i++)
      total += lp->elems[i];
  else
    total = lp->elems_total;
  if (max_parts > MAX_PARTS || max_parts < 1)
    max_parts = MAX_PARTS;
  ran->parts = lp->n0;
  ran->dynamic = lp->dynamic != 0;
  rc = try_one(lp, c, total, lp->n0, ran->dynamic, &ran->seconds, err);
  if (rc != 0)
    return rc;
  *best = *ran;
  if (lp->n1 != 1 && lp->n1 != lp->n0)
    return 0;
  cand[0] = lp->n0;
  for (i = 1; i < 5; i++)
    cand[i] = (int64_t)c->n << (i - 1); /* N, 2N, 4N, 8N */
  for (i = 0; i < 5; i++) {
    if (cand[i] > max_parts || (i > 0 && cand[i] == lp->n0))
      continue;
    for (dyn = 0; dyn < 2; dyn++) {
      double t;
      if (i == 0 && dyn == ran->dynamic)
        continue; /* the setting that ran, predicted above */
      if (keep_placement && dyn != ran->dynamic)
        continue;
      rc = try_one(lp, c, total, (int)cand[i], dyn, &t, err);
      if (rc != 0)
        return rc;
      if (t < best->seconds)
        *best = (orion_sim_setting){(int)cand[i], dyn, t};
    }
  }
  if (!(best->seconds < (1 - margin) * ran->seconds))
    *best = *ran;
  return 0;
}

int orion_sim_switch_pays(const orion_sim_setting *ran,
                          const orion_sim_setting *best,
                          double switch_seconds, double passes,
                          double margin) {
  if (best->parts == ran->parts && best->dynamic == ran->dynamic)
    return 0;
  return passes > 0 && best->seconds * passes + switch_seconds <
                           (1 - margin) * ran->seconds * passes;
}
