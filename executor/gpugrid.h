/* The device grid of a block: how the elements of one block are cut into
 * groups (each run by one device thread or warp, in order) and the groups into
 * steps (the groups of a step run concurrently; steps one after another),
 * as util/gbody.h's orion_gctx takes them (d_order, d_group_off,
 * h_step_off).  Pure C: no CUDA, no I/O; the executor (executor/exec_gbody.c)
 * builds the grid on the host and uploads it.
 *
 * The grid by schedule kind (b is the grid size; see orion_gpugrid_b):
 *   serial     one group holding every element in order (1 step);
 *   none       b groups of consecutive elements (1 step);
 *   1d         b contiguous ranges of the space coordinate (1 step);
 *   2d         a b x b sub-grid by contiguous ranges of the space and time
 *              coordinates over the block's extent, run as a rotation:
 *              step j is the groups (p, (p + j) mod b), p = 0..b-1;
 *   2d-ordered the same sub-grid run as a wavefront: step j is the groups
 *              (p, j - p) (2b - 1 steps);
 *   2d-skewed  2d or 2d-ordered on the skewed coordinates (the block's
 *              key[skew_dim] + skew * key[other], as dsm/blocks.h
 *              cuts it), rotation or wavefront as the plan's order says.
 * A coordinate's ranges hold about equal numbers of elements when there
 * are fewer ranges than coordinates (else equal widths: a coordinate
 * each); either way they are contiguous and monotone, all the argument
 * below uses.  Empty groups and empty steps are dropped.  Within a group the elements
 * keep the order they have in the block (ascending position).
 *
 * Why each is safe.  The analysis (analysis/choose.c) accepted the plan
 * from the dependence vectors alone, for ANY number of parts along the
 * same dimensions; the argument below uses the same vectors directly, so
 * it holds for the sub-cut of one block whatever its ranges are.
 * Concurrency on the device exists only between elements of different
 * groups of one step; elements of one group, and groups of different
 * steps, run one after another.
 *   - none: the plan has no dependence vectors, so no two elements
 *     conflict: any grouping is a serial order.
 *   - 1d: every vector is 0 in the space dimension: two elements that
 *     conflict have the same space key, so they fall into the same range,
 *     hence the same group, where they run in block order.  Groups touch
 *     disjoint sets of space keys.
 *   - 2d (rotation): every vector is 0 in space or in time.  The groups of
 *     one step have pairwise distinct space ranges p and distinct time
 *     ranges (p + j) mod b, so two concurrent elements differ in both
 *     coordinates and cannot conflict.  Running the steps in order, each
 *     step's groups one after another, is then a serial order of the
 *     block; the plan (a rotation) promises no more than a serial order.
 *   - 2d-ordered (wavefront): every vector is >= 0 in space and time, in
 *     lexicographic order of the block (the block's elements are sorted,
 *     spec.lex).  If element v depends on an earlier u, then s(v) >= s(u)
 *     and t(v) >= t(u); the cut is monotone, so p(v) >= p(u), q(v) >= q(u):
 *     the same group (block order keeps u first) or a strictly later step
 *     p(v) + q(v) > p(u) + q(u).  Groups of one step (p + q = j, distinct
 *     p) have one coordinate smaller and the other larger, so no vector
 *     links them.  The result is the one the serial run in key order gives
 *     (up to the order floating-point accumulators are folded in).
 *   - 2d-skewed: the same arguments on the skewed coordinates, which is
 *     where analysis/choose.c checks the transformed vectors (== 0 in one
 *     of them for a rotation, >= 0 in both for a wavefront).
 * Accumulators are folded per group, then in group order by the caller:
 * the same bits on every run and every device, not the CPU's bits for
 * floating-point sums.
 *
 * The grid depends only on the block's keys, the schedule and b, never on
 * the device, so every GPU gives the same result.
 */
#ifndef ORION_SCHEDULER_GPUGRID_H
#define ORION_SCHEDULER_GPUGRID_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef enum orion_gpugrid_kind {
  ORION_GPUGRID_SERIAL = 0,
  ORION_GPUGRID_NONE,
  ORION_GPUGRID_1D,
  ORION_GPUGRID_2D,        /* rotation */
  ORION_GPUGRID_2D_ORDERED /* wavefront */
} orion_gpugrid_kind;

/* The largest grid size; b x b groups at most. */
#define ORION_GPUGRID_MAX_B 2048

/* A block's elements and its loop's schedule. */
typedef struct orion_gpugrid_in {
  orion_gpugrid_kind kind;
  int ndims;          /* keys per element, 1..ORION_MAX_DIMS */
  int space, time;    /* 0-based key dims (1d: space; 2d: both) */
  int skew_dim;       /* -1, or space or time: that coordinate is skewed */
  int64_t skew;       /* ... as key[skew_dim] + skew * key[other] */
  int64_t nelems;
  const int64_t *keys; /* nelems * ndims, element-major, 0-based */
  int64_t b;          /* grid size; 0: orion_gpugrid_b's default */
  int rows;           /* 2d: also the rows for claiming (row_off...) */
} orion_gpugrid_in;

/* The grid.  order[] holds element indices 0..nelems-1 into the input
 * list, group by group; group g is order[group_off[g] .. group_off[g+1]);
 * step s is the groups [step_off[s], step_off[s+1]).  All owned by the
 * grid. */
typedef struct orion_gpugrid {
  int64_t nelems, ngroups, nsteps;
  int64_t b; /* the grid size used (after clamping to the extent) */
  int64_t *order;
  int64_t *group_off;
  int64_t *step_off;
  /* 2d (rotation) with in->rows only, else NULL: the groups by row, for a device that
   * claims groups instead of running steps (util/gclaim.h).  Row p's
   * groups are row_group[row_off[p] .. row_off[p+1]), in step order (the
   * rotation's columns p, p+1, ... mod b); row_col[i] is the column of
   * row_group[i].  b rows. */
  int64_t *row_off;
  int64_t *row_group;
  int64_t *row_col;
} orion_gpugrid;

/* The default grid size for a kind and a block of nelems elements: none,
 * 1 element per group (b = nelems); 1d, min(nelems, 65536); 2d, about
 * sqrt(nelems) (one element per group on average, b groups per step), at
 * most ORION_GPUGRID_MAX_B; serial 1.  Data only, never the device. */
int64_t orion_gpugrid_b(orion_gpugrid_kind kind, int64_t nelems);

/* Builds the grid.  Returns 0, ORION_EINVAL (a bad kind, dimension or b,
 * err says which) or ORION_ENOMEM; out is left empty on failure.  Free with
 * orion_gpugrid_free. */
int orion_gpugrid_build(const orion_gpugrid_in *in, orion_gpugrid *out,
                        orion_error *err);
void orion_gpugrid_free(orion_gpugrid *g);

/* Checks a grid against its input: every element exactly once, each group
 * in ascending element order, the steps' groups conflict-free for the kind
 * (1d: no space coordinate in two groups; 2d: no space or time coordinate
 * in two groups of one step; 2d's rows, when asked for: no space coordinate in two rows,
 * no time coordinate in two columns), serial: the original order.  Returns 0, or 1
 * with why filled (the first violation).  Linear in the elements; the
 * wavefront's order argument over pairs is t/test_gpugrid.c's. */
int orion_gpugrid_check(const orion_gpugrid_in *in, const orion_gpugrid *g,
                        char *why, size_t n);

/* The space (which = 0) or time (1) coordinate of element i as the grid
 * cuts it (skew applied). */
int64_t orion_gpugrid_coord(const orion_gpugrid_in *in, int64_t i, int which);

/* "2d rotation, 8 x 8 groups, 8 steps" into out. */
void orion_gpugrid_describe(const orion_gpugrid *g, orion_gpugrid_kind kind,
                            char *out, size_t n);

/* The kind for a plan's schedule: sched is analysis/analyze.h's
 * orion_sched (0 none, 1 1d, 2 2d, 3 2d-ordered, 4 2d-skewed), order the
 * plan's 2-D order (1 wavefront); serial for anything else. */
orion_gpugrid_kind orion_gpugrid_kind_of(int sched, int order);

#endif
