/* Partition plans (dsm/plan.h) and partitions (dsm/partition.h). */
#include "t/testutil.h"

#include "dsm/partition.h"
#include "dsm/blocks.h"
#include "dsm/plan.h"
#include "util/rng.h"

static orion_array *random_sparse(int64_t n0, int64_t n1, int64_t nnz,
                                  uint64_t seed) {
  orion_array *a = orion_array_new_sparse(2, ORION_F64, NULL);
  orion_rng r;
  orion_rng_seed(&r, seed);
  for (int64_t e = 0; e < nnz; e++) {
    int64_t k[2] = {(int64_t)orion_rng_below(&r, (uint64_t)n0),
                    (int64_t)orion_rng_below(&r, (uint64_t)n1)};
    double v = (double)e; /* the original position, to check stability */
    orion_array_push(a, k, &v);
  }
  a->dims[0] = n0;
  a->dims[1] = n1;
  return a;
}

Test(partition, plan_equal_split_covers_range) {
  orion_split s;
  cr_assert_eq(orion_split_equal(10, 0, 3, &s), 0);
  cr_assert_eq(s.nparts, 3);
  cr_assert_eq(s.bounds[0], 0);
  cr_assert_eq(s.bounds[1], 3);
  cr_assert_eq(s.bounds[2], 6);
  cr_assert_eq(s.bounds[3], 10);
  cr_assert_eq(orion_split_find(&s, 0), 0);
  cr_assert_eq(orion_split_find(&s, 5), 1);
  cr_assert_eq(orion_split_find(&s, 9), 2);
  orion_split_free(&s);
  /* More parts than keys: one key per part. */
  cr_assert_eq(orion_split_equal(2, 0, 5, &s), 0);
  cr_assert_eq(s.nparts, 2);
  orion_split_free(&s);
}

Test(partition, plan_histogram_split_balances_skewed_keys) {
  /* Row r holds r+1 elements: equal widths would be badly unbalanced. */
  orion_array *a = orion_array_new_sparse(2, ORION_F64, NULL);
  orion_split s;
  int64_t per[4] = {0};
  double v = 0;
  for (int64_t r = 0; r < 100; r++)
    for (int64_t c = 0; c <= r; c++) {
      int64_t k[2] = {r, c};
      orion_array_push(a, k, &v);
    }
  cr_assert_eq(orion_split_histogram(a, 0, 4, &s), 0);
  for (int64_t e = 0; e < a->nnz; e++)
    per[orion_split_find(&s, a->keys[e * 2])]++;
  for (int p = 0; p < 4; p++)
    cr_assert(per[p] > 5050 / 4 - 120 && per[p] < 5050 / 4 + 120,
              "part %d has %lld of 5050", p, (long long)per[p]);
  orion_split_free(&s);
  orion_array_release(a);
}

Test(partition, plan_rotation_clocks_visit_each_block_once_one_per_row_and_column) {
  int order[12], clock[12], seen[12] = {0}, n;
  n = orion_block_clocks(ORION_ORDER_ROTATION, 3, 4, 0, order, clock);
  cr_assert_eq(n, 4);
  for (int i = 0; i < 12; i++)
    seen[order[i]]++;
  for (int b = 0; b < 12; b++)
    cr_assert_eq(seen[b], 1);
  /* Clock 0 runs the diagonal (p, p); clock 1 runs (p, p+1). */
  cr_assert_eq(order[0], 0 * 4 + 0);
  cr_assert_eq(order[1], 1 * 4 + 1);
  cr_assert_eq(order[3], 0 * 4 + 1);
  /* Blocks of one clock never share a space or a time part. */
  for (int i = 0; i < 12; i++)
    for (int j = i + 1; j < 12; j++)
      if (clock[i] == clock[j]) {
        cr_assert_neq(order[i] / 4, order[j] / 4);
        cr_assert_neq(order[i] % 4, order[j] % 4);
      }
}

Test(partition, plan_wavefront_clocks_follow_both_predecessors) {
  int order[6], clock[6], at[6];
  int n = orion_block_clocks(ORION_ORDER_WAVEFRONT, 2, 3, 1, order, clock);
  cr_assert_eq(n, 4);
  for (int i = 0; i < 6; i++)
    at[order[i]] = clock[i];
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++) {
      cr_assert_eq(at[p * 3 + q], p + q);
      if (p > 0)
        cr_assert_lt(at[(p - 1) * 3 + q], at[p * 3 + q]);
    }
  /* reverse lists a clock's blocks by descending space part. */
  cr_assert_eq(order[1], 1 * 3 + 0);
  cr_assert_eq(order[2], 0 * 3 + 1);
}

Test(partition, plan_rotation_with_fewer_time_parts_runs_as_a_wavefront) {
  int order[6], clock[6], seen[6] = {0};
  int n = orion_block_clocks(ORION_ORDER_ROTATION, 3, 2, 0, order, clock);
  cr_assert_eq(n, 4);
  for (int i = 0; i < 6; i++)
    seen[order[i]]++;
  for (int b = 0; b < 6; b++)
    cr_assert_eq(seen[b], 1);
  for (int i = 0; i < 6; i++)
    for (int j = i + 1; j < 6; j++)
      if (clock[i] == clock[j])
        cr_assert_neq(order[i] % 2, order[j] % 2);
}

Test(partition, blocks_dense_blocks_are_row_segments_in_key_order) {
  int64_t dims[2] = {4, 6};
  orion_array *a = orion_array_new_dense(2, dims, ORION_F64, NULL);
  orion_block_spec s = {0, 1, 2, 3, -1, 0, 0, 0, 0};
  orion_blockset b;
  cr_assert_eq(orion_blockset_build(a, &s, &b, NULL), 0);
  cr_assert_eq(b.n0 * b.n1, 6);
  /* Block (1, 2): rows 2..3, columns 4..5: two segments of two. */
  cr_assert_eq(b.first[6] - b.first[5], 2);
  cr_assert_eq(b.segs[b.first[5]].lo, 2 * 6 + 4);
  cr_assert_eq(b.segs[b.first[5]].hi, 2 * 6 + 6);
  cr_assert_eq(b.segs[b.first[5] + 1].lo, 3 * 6 + 4);
  orion_blockset_free(&b);
  orion_array_release(a);
}

Test(partition, blocks_skewed_sparse_blocks_cut_along_the_diagonal) {
  orion_array *a = random_sparse(20, 20, 300, 9);
  /* time' = key2 + key1: an element lands in time part
   * (k1 + k2) * 3 / 39 (the skewed range is 0..38). */
  orion_block_spec s = {0, 1, 2, 3, 1, 1, 0, 1, 0};
  orion_blockset b;
  int64_t e, blk;
  cr_assert_eq(orion_blockset_build(a, &s, &b, NULL), 0);
  cr_assert_eq(b.nsegs, 6);
  for (blk = 0; blk < 6; blk++) {
    const orion_segment *g = &b.segs[b.first[blk]];
    for (e = g->lo; e < g->hi; e++) {
      const int64_t *k = a->keys + e * 2;
      cr_assert_eq(k[0] * 2 / 20, blk / 3);
      cr_assert_eq((k[0] + k[1]) * 3 / 39, blk % 3);
      if (e > g->lo) /* lex: sorted within the block */
        cr_assert(k[-2] < k[0] || (k[-2] == k[0] && k[-1] <= k[1]));
    }
  }
  orion_blockset_free(&b);
  orion_array_release(a);
}

/* interleave: each block holds its elements dealt out in rounds over its
 * rows (first keys): round r holds the r-th element (in key order) of
 * every row with more than r, rows ascending; the same order whatever
 * order the array had, and the same elements as the plain cut. */
Test(partition, blocks_interleaved_deal_each_blocks_rows_in_rounds) {
  orion_array *a = random_sparse(30, 40, 2000, 5);
  orion_array *b2 = random_sparse(30, 40, 2000, 5);
  orion_block_spec s = {0, 1, 2, 3, -1, 0, 0, 0, 1};
  orion_block_spec plain = {0, 1, 2, 3, -1, 0, 0, 1, 0};
  orion_blockset b, bp, bs;
  int64_t blk, e, n;
  /* b2: the same elements in reverse order. */
  for (e = 0, n = b2->nnz; e < n / 2; e++) {
    int64_t t[2];
    double v;
    memcpy(t, b2->keys + e * 2, sizeof t);
    memcpy(b2->keys + e * 2, b2->keys + (n - 1 - e) * 2, sizeof t);
    memcpy(b2->keys + (n - 1 - e) * 2, t, sizeof t);
    v = ((double *)b2->values)[e];
    ((double *)b2->values)[e] = ((double *)b2->values)[n - 1 - e];
    ((double *)b2->values)[n - 1 - e] = v;
  }
  cr_assert_eq(orion_blockset_build(a, &s, &b, NULL), 0);
  cr_assert_eq(orion_blockset_build(b2, &s, &bs, NULL), 0);
  cr_assert_eq(b.nsegs, 6);
  cr_assert_eq(memcmp(a->keys, b2->keys, sizeof *a->keys * 2 * (size_t)a->nnz),
               0, "the order depends on the array's order before");
  for (blk = 0; blk < 6; blk++) {
    const orion_segment *g = &b.segs[b.first[blk]];
    int64_t round = 0, rows = 0, seen[30] = {0};
    for (e = g->lo; e < g->hi; e++) {
      const int64_t *k = a->keys + e * 2;
      cr_assert_eq(k[0] * 2 / 30, blk / 3);
      cr_assert_eq((k[1] >= 13) + (k[1] >= 26), blk % 3); /* 0, 13, 26, 40 */
      /* A new round starts where the row does not ascend. */
      if (e > g->lo && k[0] <= k[-2])
        round++;
      cr_assert_eq(seen[k[0]], round, "element %lld: row %lld's %lld-th "
                                      "element in round %lld",
                   (long long)e, (long long)k[0], (long long)seen[k[0]],
                   (long long)round);
      if (seen[k[0]] == 0)
        rows++;
      seen[k[0]]++;
    }
    /* Every row of the block is in round 0. */
    if (g->hi > g->lo)
      for (e = g->lo; e < g->lo + rows; e++)
        cr_assert(e == g->lo || a->keys[e * 2] > a->keys[e * 2 - 2]);
  }
  /* The same elements per block as the lexicographic cut. */
  {
    orion_array *c = random_sparse(30, 40, 2000, 5);
    cr_assert_eq(orion_blockset_build(c, &plain, &bp, NULL), 0);
    for (blk = 0; blk < 6; blk++) {
      const orion_segment *g = &b.segs[b.first[blk]],
                          *h = &bp.segs[bp.first[blk]];
      double sa = 0, sc = 0;
      cr_assert_eq(g->hi - g->lo, h->hi - h->lo);
      for (e = 0; e < g->hi - g->lo; e++) {
        sa += ((double *)a->values)[g->lo + e] *
              (double)(a->keys[(g->lo + e) * 2] * 40 +
                       a->keys[(g->lo + e) * 2 + 1]);
        sc += ((double *)c->values)[h->lo + e] *
              (double)(c->keys[(h->lo + e) * 2] * 40 +
                       c->keys[(h->lo + e) * 2 + 1]);
      }
      cr_assert_eq(sa, sc, "block %lld holds other elements", (long long)blk);
    }
    orion_blockset_free(&bp);
    orion_array_release(c);
  }
  orion_blockset_free(&b);
  orion_blockset_free(&bs);
  orion_array_release(a);
  orion_array_release(b2);
}

Test(partition, sparse_grid_groups_blocks_stably) {
  orion_array *a = random_sparse(50, 40, 5000, 3);
  orion_split s0, s1;
  orion_blocks b;
  cr_assert_eq(orion_split_equal(50, 0, 3, &s0), 0);
  cr_assert_eq(orion_split_equal(40, 1, 2, &s1), 0);
  cr_assert_eq(orion_partition(a, 0, 3, s0.bounds, 1, 2, s1.bounds, &b, NULL),
               0);
  cr_assert_eq(b.start[0], 0);
  cr_assert_eq(b.start[6], 5000);
  for (int blk = 0; blk < 6; blk++) {
    int p = blk / 2, q = blk % 2;
    for (int64_t e = b.start[blk]; e < b.start[blk + 1]; e++) {
      int64_t u = a->keys[e * 2], i = a->keys[e * 2 + 1];
      cr_assert(u >= s0.bounds[p] && u < s0.bounds[p + 1]);
      cr_assert(i >= s1.bounds[q] && i < s1.bounds[q + 1]);
      /* Stable: original positions increase within a block. */
      if (e > b.start[blk])
        cr_assert(((double *)a->values)[e] > ((double *)a->values)[e - 1]);
    }
  }
  orion_blocks_free(&b);
  orion_split_free(&s0);
  orion_split_free(&s1);
  orion_array_release(a);
}

Test(partition, sparse_keeps_every_element) {
  orion_array *a = random_sparse(30, 30, 2000, 9);
  orion_split s0;
  orion_blocks b;
  double sum_before = 0, sum_after = 0;
  for (int64_t e = 0; e < a->nnz; e++)
    sum_before += ((double *)a->values)[e] * (double)(a->keys[e * 2] + 1);
  orion_split_equal(30, 0, 4, &s0);
  cr_assert_eq(orion_partition(a, 0, 4, s0.bounds, -1, 1, NULL, &b, NULL), 0);
  for (int64_t e = 0; e < a->nnz; e++)
    sum_after += ((double *)a->values)[e] * (double)(a->keys[e * 2] + 1);
  cr_assert_eq(a->nnz, 2000);
  cr_assert_float_eq(sum_before, sum_after, 1e-6);
  orion_blocks_free(&b);
  orion_split_free(&s0);
  orion_array_release(a);
}

Test(partition, dense_rows_are_contiguous_ranges) {
  int64_t dims[2] = {10, 3};
  orion_array *a = orion_array_new_dense(2, dims, ORION_F32, NULL);
  orion_split s;
  orion_blocks b;
  orion_error err;
  orion_split_equal(10, 0, 3, &s);
  cr_assert_eq(orion_partition(a, 0, 3, s.bounds, -1, 1, NULL, &b, NULL), 0);
  cr_assert_eq(b.start[0], 0);
  cr_assert_eq(b.start[1], 3 * 3);
  cr_assert_eq(b.start[2], 6 * 3);
  cr_assert_eq(b.start[3], 30);
  orion_blocks_free(&b);
  /* A dense array cannot be cut along its second dimension. */
  orion_error_clear(&err);
  {
    int64_t cols[3] = {0, 1, 3};
    cr_assert_neq(orion_partition(a, 1, 2, cols, -1, 1, NULL, &b, &err), 0);
  }
  cr_assert(strstr(err.msg, "first dimension") != NULL);
  orion_split_free(&s);
  orion_array_release(a);
}

Test(partition, bad_bounds_rejected) {
  orion_array *a = random_sparse(10, 10, 100, 1);
  int64_t short_bounds[3] = {0, 5, 8}; /* does not reach dims[0] = 10 */
  orion_blocks b;
  orion_error err;
  orion_error_clear(&err);
  cr_assert_eq(orion_partition(a, 0, 2, short_bounds, -1, 1, NULL, &b, &err),
               ORION_EINVAL);
  cr_assert(strstr(err.msg, "cover") != NULL, "%s", err.msg);
  orion_array_release(a);
}

/* Block ids already grouped (non-decreasing, some blocks empty): the
 * elements keep their places and the same buffers, and the block starts
 * are right; ids out of order: a stable reorder, as before. */
Test(partition, by_id_grouped_and_ungrouped) {
  static const int grouped[] = {0, 0, 2, 2, 2, 3};
  static const int mixed[] = {2, 0, 3, 0, 2, 2}; /* the same counts */
  static const int64_t want_start[] = {0, 2, 2, 5, 6};
  static const double want_order[] = {1, 3, 0, 4, 5, 2};
  orion_array *a = orion_array_new_sparse(2, ORION_F64, NULL);
  orion_blocks blk;
  orion_error err;
  int64_t *keys;
  int64_t e;
  for (e = 0; e < 6; e++) {
    int64_t k[2] = {e, 10 - e};
    double v = (double)e;
    orion_array_push(a, k, &v);
  }
  keys = a->keys;
  cr_assert_eq(orion_partition_by_id(a, 4, grouped, &blk, &err), 0);
  cr_assert(a->keys == keys, "grouped ids: the keys were copied");
  for (e = 0; e < 5; e++)
    cr_assert_eq(blk.start[e], want_start[e], "start %d", (int)e);
  for (e = 0; e < 6; e++) {
    cr_assert_eq(((double *)a->values)[e], (double)e);
    cr_assert_eq(a->keys[2 * e], e);
    cr_assert_eq(a->keys[2 * e + 1], 10 - e);
  }
  orion_blocks_free(&blk);

  cr_assert_eq(orion_partition_by_id(a, 4, mixed, &blk, &err), 0);
  for (e = 0; e < 5; e++)
    cr_assert_eq(blk.start[e], want_start[e], "start %d", (int)e);
  for (e = 0; e < 6; e++) {
    int64_t from = (int64_t)want_order[e];
    cr_assert_eq(((double *)a->values)[e], want_order[e], "element %d",
                 (int)e);
    cr_assert_eq(a->keys[2 * e], from);
    cr_assert_eq(a->keys[2 * e + 1], 10 - from);
  }
  orion_blocks_free(&blk);
  orion_array_release(a);
}
