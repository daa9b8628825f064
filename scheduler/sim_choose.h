/* The plan's partitions per dimension and placement chosen by the
 * execution simulator (issue 35, "used for the plan"): from one pass's
 * measured costs, the candidate settings are simulated on the cluster the
 * loop runs on and the fastest is taken where it beats the setting that
 * ran by more than a margin.
 *
 * A loop's partitions decide the order in which its elements are updated
 * (MF's SGD gives other bits with other blocks), so a choice that follows
 * the executors or measured times gives up the runtime's contract of the
 * same bits on any executor count: parallel_for takes it only where the
 * script or the driver asks for it (partitions = "auto", --partitions
 * auto; docs/design-notes.md). */
#ifndef ORION_SCHEDULER_SIM_CHOOSE_H
#define ORION_SCHEDULER_SIM_CHOOSE_H

#include <stdint.h>

#include "scheduler/sim.h"

typedef struct orion_sim_setting {
  int parts;      /* per key dimension (the loop's first; its second the
                     same, or 1 for a 1-D loop) */
  int dynamic;    /* placement: 0 static, 1 dynamic */
  double seconds; /* the predicted pass */
} orion_sim_setting;

/* The candidates: the setting that ran (lp's n0 parts, lp->dynamic)
 * first, then parts in {N, 2N, 4N, 8N} (N: c->n hosts) and the setting's
 * own, each with static and dynamic placement, parts at most max_parts
 * (the shortest key dimension's rows, and 4096).  Each is lp with its
 * parts: elements spread evenly over the blocks (lp's elems, or
 * elems_total), a time part's bytes lp->part_bytes x lp->n1 / parts, the
 * driver's costs per block as in lp.  A loop whose dimensions are cut
 * differently (n1 neither n0 nor 1) keeps its setting; keep_placement
 * keeps its placement (the script chose it).
 *
 * *ran gets the setting that ran, as predicted; *best the chosen one: the
 * fastest candidate where it is faster than *ran by more than margin (a
 * fraction: 0.05 is 5%), else *ran.  0, or an error of the simulator's. */
int orion_sim_choose(const orion_sim_loop *lp, const orion_sim_cluster *c,
                     int64_t max_parts, double margin, int keep_placement,
                     orion_sim_setting *ran, orion_sim_setting *best,
                     orion_error *err);

/* Whether switching from the setting that ran to best pays, the switch
 * costing switch_seconds once (cutting the data afresh and sending it
 * again) and the new setting running `passes` passes: 1 where
 * best->seconds x passes + switch_seconds < (1 - margin) x ran->seconds x
 * passes, i.e. over those passes the switch is predicted faster than
 * keeping the setting by more than the margin; else 0 (keep it). */
int orion_sim_switch_pays(const orion_sim_setting *ran,
                          const orion_sim_setting *best,
                          double switch_seconds, double passes,
                          double margin);

#endif
