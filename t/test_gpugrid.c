/* The device grid of a block (executor/gpugrid.h), on the host: for
 * random sparse blocks and every kind, every element once, groups in block
 * order, the steps' groups conflict-free, ordered kinds in an order that
 * keeps every dependence a wavefront allows; degenerate blocks; and a
 * broken grid the checker must refuse. */
#include "t/testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/gpugrid.h"

/* xorshift64*: the tests' own generator (fixed seeds). */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* n random keys in [0, rows) x [0, cols) (duplicates allowed), sorted
 * lexicographically as a `lex` block is. */
static int cmp_key2(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0])
    return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int64_t *random_block(uint64_t seed, int64_t n, int64_t rows,
                             int64_t cols, int sorted) {
  int64_t *k = malloc(sizeof *k * (size_t)(2 * n + 2)), i;
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (i = 0; i < n; i++) {
    k[2 * i] = (int64_t)(rnd(&s) % (uint64_t)rows) + 100; /* block offset */
    k[2 * i + 1] = (int64_t)(rnd(&s) % (uint64_t)cols) + 7;
  }
  if (sorted)
    qsort(k, (size_t)n, 2 * sizeof *k, cmp_key2);
  return k;
}

static orion_gpugrid_in in_of(orion_gpugrid_kind kind, const int64_t *keys,
                              int64_t n, int space, int64_t b) {
  orion_gpugrid_in in;
  memset(&in, 0, sizeof in);
  in.kind = kind;
  in.ndims = 2;
  in.space = space;
  in.time = 1 - space;
  in.skew_dim = -1;
  in.nelems = n;
  in.keys = keys;
  in.b = b;
  in.rows = 1; /* checked with the rest */
  return in;
}

/* The step of each element (n entries). */
static int64_t *steps_of(const orion_gpugrid *g) {
  int64_t *st = malloc(sizeof *st * (size_t)(g->nelems + 1)), s, gi, e;
  for (s = 0; s < g->nsteps; s++)
    for (gi = g->step_off[s]; gi < g->step_off[s + 1]; gi++)
      for (e = g->group_off[gi]; e < g->group_off[gi + 1]; e++)
        st[g->order[e]] = s;
  return st;
}

static int64_t *groups_of(const orion_gpugrid *g) {
  int64_t *gr = malloc(sizeof *gr * (size_t)(g->nelems + 1)), gi, e;
  for (gi = 0; gi < g->ngroups; gi++)
    for (e = g->group_off[gi]; e < g->group_off[gi + 1]; e++)
      gr[g->order[e]] = gi;
  return gr;
}

/* The wavefront's promise over pairs: u before v in the block with
 * s(u) <= s(v) and t(u) <= t(v) (a possible dependence) runs u first. */
static void assert_wavefront_order(const orion_gpugrid_in *in,
                                   const orion_gpugrid *g) {
  int64_t *st = steps_of(g), *gr = groups_of(g), u, v;
  for (u = 0; u < in->nelems; u++)
    for (v = u + 1; v < in->nelems; v++) {
      int64_t su = orion_gpugrid_coord(in, u, 0), sv = orion_gpugrid_coord(in, v, 0);
      int64_t tu = orion_gpugrid_coord(in, u, 1), tv = orion_gpugrid_coord(in, v, 1);
      if (su <= sv && tu <= tv && gr[u] != gr[v])
        cr_assert(st[u] < st[v],
                  "elements %lld (%lld,%lld) and %lld (%lld,%lld): steps "
                  "%lld and %lld",
                  (long long)u, (long long)su, (long long)tu, (long long)v,
                  (long long)sv, (long long)tv, (long long)st[u],
                  (long long)st[v]);
    }
  free(st);
  free(gr);
}

static void build_ok(const orion_gpugrid_in *in, orion_gpugrid *g) {
  orion_error err;
  char why[256];
  orion_error_clear(&err);
  cr_assert_eq(orion_gpugrid_build(in, g, &err), 0, "%s", err.msg);
  cr_assert_eq(orion_gpugrid_check(in, g, why, sizeof why), 0,
               "kind %d, %lld elements, b %lld: %s", (int)in->kind,
               (long long)in->nelems, (long long)g->b, why);
}

Test(gpugrid, random_blocks_every_kind) {
  static const orion_gpugrid_kind kinds[] = {
      ORION_GPUGRID_SERIAL, ORION_GPUGRID_NONE, ORION_GPUGRID_1D,
      ORION_GPUGRID_2D, ORION_GPUGRID_2D_ORDERED};
  static const int64_t bs[] = {0, 1, 2, 3, 7, 16, 5000};
  uint64_t seed;
  size_t k, j;
  for (seed = 1; seed <= 12; seed++) {
    int64_t n = (int64_t)(seed * 37 % 400) + 1;
    int64_t rows = (int64_t)(seed % 5 == 0 ? 1 : seed * 13 % 90 + 1);
    int64_t *keys = random_block(seed, n, rows, (int64_t)(seed * 7 % 60 + 1),
                                 1);
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
      for (j = 0; j < sizeof bs / sizeof bs[0]; j++) {
        orion_gpugrid_in in = in_of(kinds[k], keys, n, (int)(seed % 2), bs[j]);
        orion_gpugrid g;
        build_ok(&in, &g);
        if (kinds[k] == ORION_GPUGRID_2D_ORDERED)
          assert_wavefront_order(&in, &g);
        if (kinds[k] == ORION_GPUGRID_NONE || kinds[k] == ORION_GPUGRID_1D ||
            kinds[k] == ORION_GPUGRID_SERIAL)
          cr_assert_leq(g.nsteps, 1);
        orion_gpugrid_free(&g);
      }
    free(keys);
  }
}

/* 2-D grids have concurrency: more than one group in some step. */
Test(gpugrid, two_d_runs_groups_concurrently) {
  int64_t *keys = random_block(99, 4000, 500, 500, 1);
  orion_gpugrid_in in = in_of(ORION_GPUGRID_2D, keys, 4000, 0, 0);
  orion_gpugrid g;
  build_ok(&in, &g);
  cr_assert_eq(g.b, 64); /* ceil(sqrt(4000)) */
  cr_assert_eq(g.nsteps, 64);
  cr_assert_gt(g.ngroups, 1000);
  orion_gpugrid_free(&g);
  in.kind = ORION_GPUGRID_2D_ORDERED;
  build_ok(&in, &g);
  cr_assert(g.nsteps > 120 && g.nsteps <= 127, "%lld steps", (long long)g.nsteps);
  orion_gpugrid_free(&g);
  in.kind = ORION_GPUGRID_1D;
  build_ok(&in, &g);
  cr_assert_eq(g.ngroups, 500); /* one per space key: b = extent */
  orion_gpugrid_free(&g);
  free(keys);
}

/* Skewed coordinates: the checker works on what the grid cuts. */
Test(gpugrid, skewed) {
  int64_t *keys = random_block(5, 300, 40, 40, 1);
  int sd, kind;
  for (kind = ORION_GPUGRID_2D; kind <= ORION_GPUGRID_2D_ORDERED; kind++)
    for (sd = 0; sd < 2; sd++) {
      orion_gpugrid_in in = in_of((orion_gpugrid_kind)kind, keys, 300, 0, 9);
      orion_gpugrid g;
      in.skew_dim = sd;
      in.skew = sd == 0 ? -2 : 1;
      build_ok(&in, &g);
      if (kind == ORION_GPUGRID_2D_ORDERED)
        assert_wavefront_order(&in, &g);
      orion_gpugrid_free(&g);
    }
  free(keys);
}

Test(gpugrid, degenerate_blocks) {
  int64_t one[2] = {3, 4}, row[40];
  int i, k;
  for (i = 0; i < 20; i++) { /* all in one row */
    row[2 * i] = 5;
    row[2 * i + 1] = 100 - 3 * i; /* not sorted by time */
  }
  for (k = ORION_GPUGRID_SERIAL; k <= ORION_GPUGRID_2D_ORDERED; k++) {
    orion_gpugrid_in in = in_of((orion_gpugrid_kind)k, one, 0, 0, 0);
    orion_gpugrid g;
    build_ok(&in, &g); /* no elements */
    cr_assert_eq(g.ngroups, 0);
    cr_assert_eq(g.nsteps, 0);
    orion_gpugrid_free(&g);
    in.nelems = 1;
    in.b = 1000; /* b larger than the extent */
    build_ok(&in, &g);
    cr_assert_eq(g.ngroups, 1);
    cr_assert_eq(g.nsteps, 1);
    orion_gpugrid_free(&g);
    in = in_of((orion_gpugrid_kind)k, row, 20, 0, 8);
    build_ok(&in, &g);
    if (k == ORION_GPUGRID_1D || k == ORION_GPUGRID_SERIAL)
      cr_assert_eq(g.ngroups, 1); /* one space key: one group */
    if (k >= ORION_GPUGRID_2D) /* one row: the groups run one per step */
      for (i = 0; i < g.nsteps; i++)
        cr_assert_eq(g.step_off[i + 1] - g.step_off[i], 1);
    orion_gpugrid_free(&g);
  }
}

/* The checker itself: grids broken on purpose are refused, each with the
 * violation named. */
Test(gpugrid, checker_refuses_broken_grids) {
  int64_t *keys = random_block(7, 200, 30, 30, 1);
  orion_gpugrid_in in = in_of(ORION_GPUGRID_2D, keys, 200, 0, 6);
  orion_gpugrid g;
  char why[256];
  int64_t t;
  build_ok(&in, &g);
  /* Two groups of one step made to share a row: merge step 1 into step 0. */
  if (g.nsteps > 1) {
    int64_t s;
    for (s = 1; s < g.nsteps; s++)
      g.step_off[s] = g.step_off[s + 1];
    g.nsteps--;
    cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
    cr_assert(strstr(why, "of one step share") != NULL, "%s", why);
  }
  orion_gpugrid_free(&g);
  /* The claimed rotation's rows: a group given another column, a group
   * listed in two rows, a row out of step order. */
  build_ok(&in, &g);
  {
    int64_t i;
    for (i = 1; i < g.row_off[1] && g.row_col[i] == g.row_col[0]; i++)
      ;
    cr_assert_lt(i, g.row_off[1], "row 0 has one column");
    g.row_col[0] = g.row_col[i];
    cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
    cr_assert(strstr(why, "but lie in columns") != NULL, "%s", why);
    orion_gpugrid_free(&g);
    build_ok(&in, &g);
    g.row_group[g.row_off[1]] = g.row_group[0];
    cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
    cr_assert(strstr(why, "twice or out of range") != NULL, "%s", why);
    orion_gpugrid_free(&g);
    build_ok(&in, &g);
    t = g.row_group[0];
    g.row_group[0] = g.row_group[1];
    g.row_group[1] = t;
    cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
    cr_assert(strstr(why, "step order broken") != NULL, "%s", why);
    orion_gpugrid_free(&g);
    /* Not asked for (nothing claims): no rows. */
    in.rows = 0;
    build_ok(&in, &g);
    cr_assert(g.row_off == NULL && g.row_group == NULL && g.row_col == NULL);
    orion_gpugrid_free(&g);
    in.rows = 1;
  }
  build_ok(&in, &g);
  t = g.order[0]; /* an element twice, one missing */
  g.order[1] = t;
  cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
  cr_assert(strstr(why, "listed twice") != NULL, "%s", why);
  orion_gpugrid_free(&g);
  in.kind = ORION_GPUGRID_SERIAL; /* out of order */
  build_ok(&in, &g);
  t = g.order[0];
  g.order[0] = g.order[1];
  g.order[1] = t;
  cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
  cr_assert(strstr(why, "block order broken") != NULL, "%s", why);
  orion_gpugrid_free(&g);
  in.kind = ORION_GPUGRID_1D; /* a space key in two groups */
  build_ok(&in, &g);
  cr_assert_gt(g.ngroups, 1);
  {
    int64_t e0 = g.order[g.group_off[0]], e1 = g.order[g.group_off[1]];
    keys[2 * e1] = keys[2 * e0];
  }
  cr_assert_eq(orion_gpugrid_check(&in, &g, why, sizeof why), 1);
  cr_assert(strstr(why, "share space coordinate") != NULL, "%s", why);
  orion_gpugrid_free(&g);
  free(keys);
}

Test(gpugrid, bad_input_and_defaults) {
  int64_t k[2] = {0, 0};
  orion_gpugrid_in in = in_of(ORION_GPUGRID_2D, k, 1, 0, 0);
  orion_gpugrid g;
  orion_error err;
  orion_error_clear(&err);
  in.time = 0; /* == space */
  cr_assert_eq(orion_gpugrid_build(&in, &g, &err), ORION_EINVAL);
  cr_assert(strstr(err.msg, "space 0 / time 0") != NULL, "%s", err.msg);
  cr_assert_eq(orion_gpugrid_b(ORION_GPUGRID_2D, 1000000), 1000);
  cr_assert_eq(orion_gpugrid_b(ORION_GPUGRID_2D, 100000000),
               ORION_GPUGRID_MAX_B);
  cr_assert_eq(orion_gpugrid_b(ORION_GPUGRID_NONE, 77), 77);
  cr_assert_eq(orion_gpugrid_b(ORION_GPUGRID_SERIAL, 77), 1);
  cr_assert_eq(orion_gpugrid_kind_of(4, 1), ORION_GPUGRID_2D_ORDERED);
  cr_assert_eq(orion_gpugrid_kind_of(5, 0), ORION_GPUGRID_SERIAL);
}

/* Skewed keys (Zipf-like: key k holds about 1/(k+1) of the elements, as
 * the heaviest users of a ratings set do): the ranges are cut by element
 * count, so no range holds much more than n / b elements beyond its
 * heaviest key, where ten equal-width ranges' worth of the heaviest keys
 * would land in the first range. */
Test(gpugrid, skewed_keys_make_even_ranges) {
  enum { NKEYS = 1000, B = 100 };
  int64_t *keys, n = 0, i, k, heaviest = 0, first_width = 0, biggest = 0;
  double h = 0;
  for (k = 0; k < NKEYS; k++)
    h += 1.0 / (double)(k + 1);
  keys = malloc(sizeof *keys * 2 * 40000);
  cr_assert(keys != NULL);
  for (k = 0; k < NKEYS; k++) {
    int64_t c = (int64_t)(20000.0 / h / (double)(k + 1)) + 1;
    heaviest = c > heaviest ? c : heaviest;
    if (k < NKEYS / B)
      first_width += c;
    for (i = 0; i < c; i++, n++) {
      keys[2 * n] = k;
      keys[2 * n + 1] = i;
    }
  }
  {
    orion_gpugrid_in in = in_of(ORION_GPUGRID_1D, keys, n, 0, 0);
    orion_gpugrid g;
    in.b = B;
    build_ok(&in, &g);
    for (i = 0; i < g.ngroups; i++)
      if (g.group_off[i + 1] - g.group_off[i] > biggest)
        biggest = g.group_off[i + 1] - g.group_off[i];
    cr_assert_leq(biggest, n / B + heaviest + 1, "largest group %lld",
                  (long long)biggest);
    cr_assert_lt(biggest, first_width);
    orion_gpugrid_free(&g);
    in.kind = ORION_GPUGRID_2D;
    in.b = 0;
    build_ok(&in, &g);
    orion_gpugrid_free(&g);
  }
  free(keys);
}
