/* The schedules as pure functions: which blocks a loop has, and which
 * block runs where at which clock.
 *
 * A loop's shape is what the analysis chose (or "serial"): the key
 * dimensions cut into space and time parts, an optional skew, and whether
 * the 2-D clocks rotate (2d, unordered) or follow the wavefront
 * (2d-ordered; 2d-skewed takes either).  orion_schedule_cut turns a shape
 * into the cut of the iteration space (dsm/blocks.h); once the cut
 * is made, orion_schedule_make lays its block grid out in time:
 *   - the order blocks are dispatched in, clock by clock;
 *   - the executor a block runs on: space part p of n0 runs on executor
 *     p * nexec / n0, so the blocks of one space part share an executor
 *     and each executor takes a contiguous range of space parts;
 *   - the blocks a block waits for: the one before it (in that order) of
 *     its space part and, in 2-D schedules, of its time part.
 * Nothing here does I/O or allocates beyond the schedule's own arrays.
 */
#ifndef ORION_SCHEDULER_SCHEDULE_H
#define ORION_SCHEDULER_SCHEDULE_H

#include <stdint.h>

#include "dsm/blocks.h"

/* A loop's shape. */
typedef struct orion_schedule_shape {
  int serial;     /* schedule = "serial": one block in key order */
  int space;      /* 0-based key dimension cut into space parts */
  int time;       /* 0-based key dimension cut into time parts; -1 for
                     the schedules without clocks (none, 1d) */
  int skew_dim;   /* -1, or the dimension whose coordinate is skewed */
  int64_t skew;   /* ... as key[skew_dim] + skew * key[other] */
  int wavefront;  /* 2-D: 1 wavefront clocks, 0 rotation */
  int ordered;    /* elements of a block in lexicographic key order */
  int histogram;  /* sparse: parts of equal element counts */
  int interleave; /* sparse, unordered: rows dealt out in rounds within a
                     block (dsm/blocks.h) */
  int nspace;     /* parts asked for along space */
  int ntime;      /* parts asked for along time */
} orion_schedule_shape;

/* The cut of the iteration space for a shape, and the clock order its
 * blocks run in.  A rotation gets at least as many time parts as space
 * parts (each space part needs its own time part at every clock). */
void orion_schedule_cut(const orion_schedule_shape *sh,
                        orion_block_spec *spec, orion_order_kind *kind);

/* A loop's timetable over its block grid.  Positions index the dispatch
 * order; arrays are owned by the schedule. */
typedef struct orion_schedule {
  int n0, n1;     /* block grid: space parts by time parts */
  int nblocks;    /* n0 * n1 */
  int nclocks;
  int has_time;   /* blocks of one time part run one after another too */
  int *order;     /* position -> block id, clock by clock */
  int *clock;     /* position -> its clock */
  int *pos_of;    /* block id -> position */
  int *after_p;   /* position -> the position it waits for along its space
                     part, or -1 */
  int *after_q;   /* position -> likewise along its time part, or -1 */
} orion_schedule;

/* Lays out the n0 x n1 grid of a cut made for `kind` (reverse: a clock's
 * blocks by descending space part, concurrent_order = "reverse").
 * Returns 0, or ORION_EINVAL / ORION_ENOMEM (s left empty).  Free with
 * orion_schedule_free. */
int orion_schedule_make(orion_schedule *s, orion_order_kind kind, int n0,
                        int n1, int reverse);
void orion_schedule_free(orion_schedule *s);

/* The executor (0..nexec-1) block runs on: space part p of n0 on
 * executor floor(p * nexec / n0), so that each executor takes a contiguous
 * range of space parts (as equal as they come). */
int orion_schedule_exec(const orion_schedule *s, int block, int nexec);

#endif
