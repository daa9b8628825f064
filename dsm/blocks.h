/* Blocks of an iteration space and the order a schedule runs them in.
 *
 * A schedule cuts the keys of the iterated array along a space dimension
 * and (for 2-D schedules) a time dimension, possibly skewed: the time (or
 * space) coordinate of an element is then key[skew_dim] + skew *
 * key[other].  Block (p, q) holds the elements whose space coordinate falls
 * in part p and time coordinate in part q; block id = p * n1 + q.
 *
 * A sparse array is reordered so that each block is one contiguous range
 * of elements; a dense array keeps its row-major layout and a block is a
 * list of contiguous segments.  Within a block, elements run in ascending
 * order of their position, which is lexicographic key order for dense
 * arrays and for sparse arrays built with `lex` (they are sorted first).
 * With `interleave` a sparse array's blocks are dealt out in rounds
 * instead: the array is sorted first, and each block then runs the first
 * element of every run of equal first keys (a row), then the second of
 * every row, and so on, rows in key order within a round.  Consecutive
 * elements then touch different rows, so that a body updating its row
 * need not wait for the previous element's stores; the order depends on
 * the block's elements alone, never on where they came from.
 */
#ifndef ORION_SCHEDULER_BLOCKS_H
#define ORION_SCHEDULER_BLOCKS_H

#include <stdint.h>

#include "dsm/array.h"
#include "util/error.h"

typedef struct orion_block_spec {
  int space;      /* 0-based key dimension */
  int time;       /* 0-based key dimension, or -1 for 1-D blocks */
  int nspace;     /* parts along space (>= 1) */
  int ntime;      /* parts along time (>= 1; ignored when time < 0) */
  int skew_dim;   /* -1, or space or time: that coordinate is skewed */
  int64_t skew;   /* coordinate = key[skew_dim] + skew * key[other] */
  int histogram;  /* sparse: parts hold equal element counts */
  int lex;        /* sparse: sort lexicographically first */
  int interleave; /* sparse: sorted, then rows dealt out in rounds */
} orion_block_spec;

typedef struct orion_segment {
  int64_t lo, hi; /* element positions [lo, hi) */
} orion_segment;

typedef struct orion_blockset {
  orion_block_spec spec;
  int n0, n1;          /* grid shape (n1 = 1 for 1-D) */
  int64_t *first;      /* n0*n1+1 entries: block b has segments
                          [first[b], first[b+1]) */
  orion_segment *segs;
  int64_t nsegs;
} orion_blockset;

/* Cuts a into blocks per spec (reordering a sparse array in place).  out is
 * owned by the caller; free with orion_blockset_free.  Fails with err set
 * on a bad spec or out of memory, leaving a unchanged. */
int orion_blockset_build(orion_array *a, const orion_block_spec *spec,
                         orion_blockset *out, orion_error *err);
void orion_blockset_free(orion_blockset *b);
int orion_block_spec_equal(const orion_block_spec *x,
                           const orion_block_spec *y);

/* For every block b of bs (cut from a), out[b][d] = {lo, hi} bounds the
 * keys of dimension d among its elements ({INT64_MAX, -1}: an empty
 * block).  Sparse blocks get their exact ranges.  A dense segment spans
 * its first key's to its last key's coordinate in each dimension up to the
 * first where the two differ, and the whole range of every dimension
 * after that.  out holds n0*n1 entries. */
void orion_blockset_key_ranges(const orion_array *a, const orion_blockset *bs,
                               int64_t (*out)[ORION_MAX_DIMS][2]);

typedef enum orion_order_kind {
  ORION_ORDER_ALL = 0,  /* every block in one clock (none, 1-D) */
  ORION_ORDER_ROTATION, /* clock c runs (p, (p + c) mod n1) */
  ORION_ORDER_WAVEFRONT /* clock c runs (p, c - p) */
} orion_order_kind;

/* Fills order[0..n0*n1) with block ids clock by clock and, when clock is
 * not NULL, clock[i] with the clock of order[i]; blocks of one clock are
 * listed by ascending p (or descending when reverse).  A rotation with
 * fewer time parts than space parts runs as a wavefront.  Returns the
 * number of clocks. */
int orion_block_clocks(orion_order_kind kind, int n0, int n1, int reverse,
                       int *order, int *clock);

#endif
