/* A described workload on a cluster of any size (issue 35, the simulator
 * "used"): per-element costs measured on a small local run, scaled to a
 * data set of another size and to N hosts, with the partitions per
 * dimension following the host count.  The pass itself is
 * orion_sim_predict's (scheduler/sim.h); this file only lays the
 * workload out as the runtime would cut it. */
#ifndef ORION_SCHEDULER_SIM_SCALE_H
#define ORION_SCHEDULER_SIM_SCALE_H

#include <stdint.h>

#include "scheduler/sim.h"

typedef struct orion_sim_workload {
  orion_order_kind kind;  /* the loop's schedule (a rotation for MF, LDA) */
  int64_t rows0, rows1;   /* rows of the space dimension (kept by its
                             executor) and of the time dimension (rotating) */
  int64_t elements;       /* the loop's elements (ratings, tokens) */
  double sec_per_elem;    /* one CPU's seconds per element, measured */
  double row_bytes;       /* bytes of one rotating row, measured */
  double drv_block_bytes; /* the driver's bytes per block, measured */
  double drv_elem_bytes;  /* and per element (those grow with the data) */
  double drv_block_sec;   /* the driver's CPU seconds per block */
  int early;              /* orion_loop.early, as the loop ran */
  int ahead;              /* orion_loop.ahead, as the loop ran */
  double drv_exec_bytes;  /* the driver's bytes once a pass per executor
                             (scheduler/sim.h), measured */
  int reorder;            /* orion_sim_loop.reorder */
  int window;             /* orion_sim_loop.window (0: 1) */
} orion_sim_workload;

/* Partitions of a dimension of `rows` rows on `hosts` hosts: per_host x
 * hosts (every host a space part of its own at 1), never fewer than the
 * runtime's default of 8, nor more than 4096 (parallel_for's limit) or
 * the rows.  At least 1. */
int orion_sim_parts(int hosts, int per_host, int64_t rows);

/* One pass of w on `hosts` hosts of `cpus` CPUs with links of
 * `bytes_per_s` each way (the driver's too), one-way latency
 * ORION_SIM_HOST_LATENCY, cut into p0 x p1 blocks of even elements:
 * the time part's rows are row_bytes x rows1 / p1.  0, or an error of
 * orion_sim_predict's. */
int orion_sim_scale(const orion_sim_workload *w, int hosts, double cpus,
                    double bytes_per_s, int p0, int p1, orion_sim_result *r,
                    orion_error *err);

#endif
