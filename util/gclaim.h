/* Claiming a 2d rotation's groups on the device, instead of running its
 * steps one kernel launch after another (util/gbody.h, claim_b > 0).
 *
 * The grid (executor/gpugrid.h) cuts a block into b x b cells: row p is
 * a range of space coordinates, column q a range of time coordinates,
 * and a cell's elements run in block order on one worker (a warp).  Two
 * cells conflict only when they share a row or a column (the plan's
 * vectors are 0 in space or in time).  The steps of the rotation keep
 * every cell's row and column to itself by running b cells at a time
 * with a barrier between steps; here instead
 *   - each worker takes whole rows, in ascending order, from a counter
 *     (o_claim_row): a row has one owner for its whole life, so no two
 *     running cells share a row;
 *   - the owner runs its row's cells in any order, each only while it
 *     holds the cell's column (a flag set by compare-and-swap and cleared
 *     after the cell's writes, o_claim_cell / o_claim_done), trying the
 *     row's pending cells in the rotation's order (columns p, p+1, ...),
 *     so rows started together want different columns;
 *   - the done flags of a row's cells belong to its owner alone.
 * Each cell runs holding its row and its column and gives them up only
 * after its writes are visible (the fence), so the cells' runs form a
 * conflict-serializable history (two-phase locking on rows and columns):
 * the result is that of running the cells one after another in the order
 * they took their last lock, one a serial run allows.  The claim state
 * lives in the device scratch after the partials (ORION_GCLAIM_SCRATCH).
 *
 * The same text compiles as host C (t/test_gclaim.c runs it with threads
 * and checks that no two cells that share a row or a column ever run at
 * once, and that every cell runs exactly once) and, copied into every
 * generated source by analysis/mkprelude.awk, as CUDA device code.
 */
#ifndef ORION_UTIL_GCLAIM_H
#define ORION_UTIL_GCLAIM_H

/* ORION_PRELUDE_BEGIN */
/* The claim state's bytes for b rows and n cells, 64-aligned: the row
 * counter, b column flags, n done flags. */
#define ORION_GCLAIM_SCRATCH(b, n)                                           \
  ((((size_t)64 + (size_t)(b) * 4 + (size_t)(n)) + 63) / 64 * 64)

#if defined(__CUDACC__)
#define O_CL static __device__ __attribute__((unused))
#define O_CL_CAS(p, o, n) atomicCAS((p), (o), (n))
#define O_CL_XCHG(p, v) atomicExch((p), (v))
#define O_CL_ADD(p, v) atomicAdd((p), (v))
#define O_CL_FENCE() __threadfence()
#else
#define O_CL static inline __attribute__((unused))
static inline __attribute__((unused)) int o_cl_cas(int *p, int o, int n) {
  __atomic_compare_exchange_n(p, &o, n, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  return o;
}
#define O_CL_CAS(p, o, n) o_cl_cas((p), (o), (n))
#define O_CL_XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define O_CL_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define O_CL_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* The claim state in the scratch at st: the row counter, the column
 * flags and the done flags. */
O_CL int *o_claim_next(char *st) { return (int *)st; }
O_CL int *o_claim_busy(char *st) { return (int *)(st + 64); }
O_CL unsigned char *o_claim_done_flags(char *st, long long b) {
  return (unsigned char *)(st + 64 + b * 4);
}

/* The next row for a worker, or -1 when every row is taken. */
O_CL long long o_claim_row(char *st, long long b) {
  const int r = O_CL_ADD(o_claim_next(st), 1);
  return r < b ? (long long)r : -1;
}

/* How many of a row's cells, from its first pending one, a worker looks
 * at for a free column before it waits: rows started together hold the
 * next columns of each other's rows, so a longer look mostly finds
 * columns that are busy, at a memory round trip each. */
#define O_CLAIM_WINDOW 8

/* For the owner of a row whose cells are [*first, hi) of the row lists
 * (col: each cell's column): the index of a pending cell whose column it
 * now holds, hi when the row is done, or -1 when the columns of the
 * first O_CLAIM_WINDOW cells are held by other workers (try again).
 * *first moves past the row's leading done cells.  A column is read
 * before it is swapped for, so that busy columns cost no atomics. */
O_CL long long o_claim_cell(char *st, long long b, long long *first,
                            long long hi, const int64_t *col) {
  unsigned char *done = o_claim_done_flags(st, b);
  int *busy = o_claim_busy(st);
  long long i, end;
  while (*first < hi && done[*first])
    (*first)++;
  if (*first == hi)
    return hi;
  end = *first + O_CLAIM_WINDOW < hi ? *first + O_CLAIM_WINDOW : hi;
  for (i = *first; i < end; i++)
    if (!done[i] && *(volatile int *)&busy[col[i]] == 0 &&
        O_CL_CAS(&busy[col[i]], 0, 1) == 0) {
      O_CL_FENCE(); /* the column's last writes before this cell's reads */
      return i;
    }
  return -1;
}

/* Cell i has run (its writes fenced by every thread that made them):
 * marks it done and gives its column back. */
O_CL void o_claim_done(char *st, long long b, long long i,
                       const int64_t *col) {
  o_claim_done_flags(st, b)[i] = 1;
  O_CL_FENCE();
  (void)O_CL_XCHG(&o_claim_busy(st)[col[i]], 0);
}
/* ORION_PRELUDE_END */

#endif
