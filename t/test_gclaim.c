/* util/gclaim.h's claim logic, compiled as host C and run by threads in
 * place of warps (the device runs the same text): over 2d grids of random
 * blocks, no two cells that share a row or a column ever run at once,
 * every cell runs exactly once, and the result of an order-sensitive
 * update is the one a serial run of the cells in their claim order
 * gives. */
#include "t/testutil.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/gpugrid.h"
#include "util/alloc.h"
#include "util/gclaim.h"

typedef struct world {
  const orion_gpugrid *g;
  char *st;                /* the claim state */
  int *row_on, *col_on;    /* cells running now per row / column */
  int *runs;               /* per cell (row-list index) */
  int64_t *seq_of;         /* per cell: its claim order */
  int seq;                 /* the next claim order */
  int conflicts;
  uint64_t *W, *H;         /* an update that depends on its order */
} world;

static uint64_t mix(uint64_t a, uint64_t b) {
  a ^= b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2);
  return a * 0xBF58476D1CE4E5B9ull;
}

/* Runs cell i of row p: checks that its row and column are its own,
 * updates W[p] and H[q] from each other, lingers a little. */
static void run_cell(world *w, int64_t p, int64_t i) {
  int64_t q = w->g->row_col[i];
  int k;
  if (__atomic_fetch_add(&w->row_on[p], 1, __ATOMIC_ACQ_REL) != 0 ||
      __atomic_fetch_add(&w->col_on[q], 1, __ATOMIC_ACQ_REL) != 0)
    __atomic_fetch_add(&w->conflicts, 1, __ATOMIC_ACQ_REL);
  w->seq_of[i] = __atomic_fetch_add(&w->seq, 1, __ATOMIC_ACQ_REL);
  w->runs[i]++;
  for (k = 0; k < (int)(i % 7); k++) {
    uint64_t a = w->W[p], b = w->H[q];
    w->W[p] = mix(a, b);
    w->H[q] = mix(b, a + (uint64_t)i);
    if (k % 3 == 0)
      sched_yield();
  }
  __atomic_fetch_sub(&w->col_on[q], 1, __ATOMIC_ACQ_REL);
  __atomic_fetch_sub(&w->row_on[p], 1, __ATOMIC_ACQ_REL);
}

static void *worker(void *arg) {
  world *w = arg;
  const int64_t b = w->g->b;
  long long p;
  while ((p = o_claim_row(w->st, b)) >= 0) {
    long long first = w->g->row_off[p], hi = w->g->row_off[p + 1], i;
    while ((i = o_claim_cell(w->st, b, &first, hi, w->g->row_col)) != hi) {
      if (i < 0) {
        sched_yield();
        continue;
      }
      run_cell(w, p, i);
      o_claim_done(w->st, b, i, w->g->row_col);
    }
  }
  return NULL;
}

/* keys: n elements on a rows x cols block, denser on low keys. */
static int64_t *random_keys(uint64_t seed, int64_t n, int64_t rows,
                            int64_t cols) {
  int64_t *k = malloc(sizeof *k * (size_t)(2 * n));
  int64_t i;
  uint64_t x = seed * 0x2545F4914F6CDD1Dull + 1;
  for (i = 0; i < n; i++) {
    x = mix(x, (uint64_t)i);
    k[2 * i] = (int64_t)((x >> 7) % (uint64_t)rows);
    x = mix(x, 17);
    k[2 * i + 1] = (int64_t)((x >> 9) % (uint64_t)cols);
    if (i % 3 == 0) /* a heavy user and a popular item */
      k[2 * i] = k[2 * i] % 3, k[2 * i + 1] = k[2 * i + 1] % 5;
  }
  return k;
}

static void one_world(uint64_t seed, int64_t n, int64_t rows, int64_t cols,
                      int64_t b, int nthreads) {
  int64_t *keys = random_keys(seed, n, rows, cols), i, p, *by_seq;
  orion_gpugrid_in in;
  orion_gpugrid g;
  orion_error err;
  world w;
  pthread_t th[16];
  uint64_t *W2, *H2;
  int t;
  memset(&in, 0, sizeof in);
  in.kind = ORION_GPUGRID_2D;
  in.ndims = 2;
  in.space = 0;
  in.time = 1;
  in.skew_dim = -1;
  in.nelems = n;
  in.keys = keys;
  in.b = b;
  in.rows = 1;
  orion_error_clear(&err);
  cr_assert_eq(orion_gpugrid_build(&in, &g, &err), 0, "%s", err.msg);
  cr_assert(g.row_off != NULL);
  memset(&w, 0, sizeof w);
  w.g = &g;
  w.st = calloc(1, ORION_GCLAIM_SCRATCH(g.b, g.ngroups));
  w.row_on = calloc((size_t)g.b, sizeof *w.row_on);
  w.col_on = calloc((size_t)g.b, sizeof *w.col_on);
  w.runs = calloc((size_t)g.ngroups + 1, sizeof *w.runs);
  w.seq_of = calloc((size_t)g.ngroups + 1, sizeof *w.seq_of);
  w.W = calloc((size_t)g.b, sizeof *w.W);
  w.H = calloc((size_t)g.b, sizeof *w.H);
  W2 = calloc((size_t)g.b, sizeof *W2);
  H2 = calloc((size_t)g.b, sizeof *H2);
  by_seq = calloc((size_t)g.ngroups + 1, sizeof *by_seq);
  for (p = 0; p < g.b; p++)
    w.W[p] = W2[p] = (uint64_t)p + 1, w.H[p] = H2[p] = (uint64_t)p * 7 + 3;
  for (t = 0; t < nthreads; t++)
    cr_assert_eq(pthread_create(&th[t], NULL, worker, &w), 0);
  for (t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  cr_assert_eq(w.conflicts, 0,
               "seed %llu: %d cells ran beside one that shares a row or a "
               "column",
               (unsigned long long)seed, w.conflicts);
  for (i = 0; i < g.ngroups; i++)
    cr_assert_eq(w.runs[i], 1, "seed %llu: cell %lld ran %d times",
                 (unsigned long long)seed, (long long)i, w.runs[i]);
  /* The serial run in claim order gives the same W and H. */
  for (i = 0; i < g.ngroups; i++)
    by_seq[w.seq_of[i]] = i;
  for (i = 0; i < g.ngroups; i++) {
    int64_t c = by_seq[i], r = 0, q = g.row_col[c];
    int k;
    while (g.row_off[r + 1] <= c)
      r++;
    for (k = 0; k < (int)(c % 7); k++) {
      uint64_t a = W2[r], bb = H2[q];
      W2[r] = mix(a, bb);
      H2[q] = mix(bb, a + (uint64_t)c);
    }
  }
  for (p = 0; p < g.b; p++) {
    cr_assert_eq(w.W[p], W2[p], "seed %llu: row %lld differs from the "
                                "serial run in claim order",
                 (unsigned long long)seed, (long long)p);
    cr_assert_eq(w.H[p], H2[p], "seed %llu: column %lld differs",
                 (unsigned long long)seed, (long long)p);
  }
  free(w.st);
  free(w.row_on);
  free(w.col_on);
  free(w.runs);
  free(w.seq_of);
  free(w.W);
  free(w.H);
  free(W2);
  free(H2);
  free(by_seq);
  free(keys);
  orion_gpugrid_free(&g);
}

Test(gclaim, no_two_running_cells_share_a_row_or_a_column) {
  uint64_t seed;
  for (seed = 1; seed <= 12; seed++)
    one_world(seed, 3000 + (int64_t)seed * 250, 40 + (int64_t)seed * 7,
              30 + (int64_t)seed * 5, (int64_t)(seed % 4) * 8 + 4,
              (int)(seed % 3) * 4 + 4);
}

/* One worker: every cell once. */
Test(gclaim, one_worker_runs_every_cell_once) {
  one_world(99, 2000, 30, 30, 6, 1);
}

/* More workers than rows, and a grid of one cell. */
Test(gclaim, more_workers_than_rows) {
  one_world(5, 500, 10, 10, 3, 12);
  one_world(6, 50, 1, 1, 0, 4);
}
