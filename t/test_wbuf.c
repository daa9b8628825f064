/* Tests of the buffered-write store (dsm/wbuf.c) without Lua or an
 * executor: pending reads and writes, taking the writes out in ascending
 * key order from each storage form (dense with a key list, dense with the
 * bitmap alone, hashed, hashed turned dense), reuse after a take, the bulk
 * float writes native kernels make, and the write-back of "add" and
 * "replace" on every element type, with the i32 range failure; and the
 * split of flush = "managed" (the largest writes go, the rest stay).
 * (t/test_buffer.c covers the same store through bodies.) */
#include "t/testutil.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/wbuf.h"
#include "util/alloc.h"
#include "util/error.h"

/* Writes keys (nw - j) * stride for j = 1..nw (descending), each with the
 * integer j, then takes them and checks count, order and values. */
/* hashed: whether the writes must have stayed in the hashed form (else
 * they must be in the dense form). */
static void check_take_order(int64_t positions, int64_t nw, int64_t stride,
                             int hashed) {
  orion_wbuf w;
  orion_pend_item *items;
  int64_t n, j;
  orion_wbuf_init(&w, positions);
  for (j = 1; j <= nw; j++) {
    orion_pend_value *v = orion_wbuf_slot(&w, (nw - j) * stride);
    cr_assert_not_null(v);
    cr_assert_eq(v->i, 0, "a fresh slot is zero");
    v->i = j;
  }
  cr_assert_eq(orion_wbuf_pending(&w), nw);
  if (hashed)
    cr_assert(w.hkeys != NULL && w.vals == NULL, "not in the hashed form");
  else
    cr_assert(w.vals != NULL && w.bits != NULL, "not in the dense form");
  cr_assert_eq(orion_wbuf_take(&w, &items, &n), 0);
  cr_assert_eq(n, nw);
  cr_assert_eq(orion_wbuf_pending(&w), 0);
  for (j = 0; j < n; j++) {
    if (items[j].key != j * stride || items[j].val.i != nw - j)
      cr_assert_fail("positions %lld: item %lld is (%lld, %lld), want "
                     "(%lld, %lld)",
                     (long long)positions, (long long)j,
                     (long long)items[j].key, (long long)items[j].val.i,
                     (long long)(j * stride), (long long)(nw - j));
  }
  orion_free(items);
  /* Cleared storage is reused: nothing of the last round is pending. */
  cr_assert_not_null(orion_wbuf_slot(&w, stride));
  cr_assert_eq(orion_wbuf_pending(&w), 1);
  cr_assert_eq(orion_wbuf_lookup(&w, stride)->i, 0);
  orion_wbuf_free(&w);
  orion_wbuf_free(&w); /* idempotent */
  cr_assert_eq(orion_wbuf_pending(&w), 0);
}

Test(wbuf, take_dense_bitmap) { check_take_order(50, 20, 2, 0); }

Test(wbuf, take_dense_key_list) { check_take_order(100000, 30, 997, 0); }

Test(wbuf, take_hashed_for_large_targets) {
  check_take_order((int64_t)3 << 23, 5000, 613, 1);
}

Test(wbuf, hash_turns_dense_when_crowded) {
  check_take_order(((int64_t)1 << 23) + 4, 2100000, 3, 0);
}

Test(wbuf, lookup_sees_pending_values_only) {
  orion_wbuf w;
  orion_pend_item *items;
  int64_t n;
  /* Hashed: a clean key has no value at all. */
  orion_wbuf_init(&w, (int64_t)4 << 23);
  cr_assert_null(orion_wbuf_lookup(&w, 7));
  orion_wbuf_slot(&w, 7)->d = 2.5;
  orion_wbuf_slot(&w, 7)->d += 1.0; /* the same slot again */
  cr_assert_eq(orion_wbuf_pending(&w), 1);
  cr_assert_float_eq(orion_wbuf_lookup(&w, 7)->d, 3.5, 0);
  cr_assert_null(orion_wbuf_lookup(&w, 8));
  orion_wbuf_free(&w);
  /* Dense: a clean key reads zero. */
  orion_wbuf_init(&w, 10);
  cr_assert_null(orion_wbuf_lookup(&w, 3), "no storage before a write");
  orion_wbuf_slot(&w, 9)->i = -4;
  cr_assert_eq(orion_wbuf_lookup(&w, 3)->i, 0);
  cr_assert_eq(orion_wbuf_lookup(&w, 9)->i, -4);
  cr_assert_eq(orion_wbuf_take(&w, &items, &n), 0);
  cr_assert_eq(n, 1);
  cr_assert_eq(items[0].key, 9);
  orion_free(items);
  cr_assert_eq(orion_wbuf_take(&w, &items, &n), 0);
  cr_assert_eq(n, 0);
  cr_assert_null(items);
  orion_wbuf_free(&w);
}

Test(wbuf, add_scaled_sets_and_adds_deltas) {
  static const float x[4] = {1, 2, 3, 4}, x0[4] = {0.5f, 0.5f, 0.5f, 0.5f};
  int64_t sizes[2] = {8, (int64_t)2 << 23}; /* dense; hashed (few writes) */
  int s, i;
  for (s = 0; s < 2; s++) {
    orion_wbuf w;
    orion_wbuf_init(&w, sizes[s]);
    cr_assert_eq(orion_wbuf_add_scaled(&w, 2, x, NULL, 4, 1.0, 1), 0);
    cr_assert_eq(orion_wbuf_add_scaled(&w, 2, x, x0, 4, 2.0, 0), 0);
    cr_assert_eq(orion_wbuf_pending(&w), 4);
    for (i = 0; i < 4; i++)
      cr_expect_float_eq(orion_wbuf_lookup(&w, 2 + i)->d,
                         x[i] + 2.0 * (x[i] - 0.5), 1e-12, "size %lld key %d",
                         (long long)sizes[s], 2 + i);
    orion_wbuf_free(&w);
  }
}

Test(wbuf, add_scaled_bulk_goes_dense_at_once) {
  /* A quarter of a large target in one write: dense storage, where a clean
   * key reads zero instead of nothing. */
  int64_t positions = ((int64_t)1 << 23) + 64, n = positions / 4 + 1, i;
  float *x = orion_calloc((size_t)n, sizeof *x);
  orion_wbuf w;
  cr_assert_not_null(x);
  for (i = 0; i < n; i++)
    x[i] = (float)i;
  orion_wbuf_init(&w, positions);
  cr_assert_eq(orion_wbuf_add_scaled(&w, 0, x, NULL, n, 1.0, 0), 0);
  cr_assert_eq(orion_wbuf_pending(&w), n);
  cr_assert_not_null(orion_wbuf_lookup(&w, positions - 1));
  cr_assert_float_eq(orion_wbuf_lookup(&w, n - 1)->d, (double)(n - 1), 0);
  orion_wbuf_free(&w);
  orion_free(x);
}

static orion_array *dense1(int64_t n, orion_type t) {
  orion_error err;
  orion_array *a = orion_array_new_dense(1, &n, t, &err);
  cr_assert_not_null(a, "%s", err.msg);
  return a;
}

Test(wbuf, apply_add_and_replace_on_floats) {
  orion_pend_item it[2] = {{1, {0}}, {3, {0}}};
  orion_array *d = dense1(4, ORION_F64), *f = dense1(4, ORION_F32);
  int64_t bad = -1, value = 0;
  it[0].val.d = 1.5;
  it[1].val.d = -2.0;
  ((double *)d->values)[1] = 1.0;
  ((float *)f->values)[3] = 0.5f;
  cr_assert_eq(orion_wbuf_apply(d, ORION_APPLY_ADD, it, 2, &bad, &value), 0);
  cr_assert_eq(orion_wbuf_apply(f, ORION_APPLY_ADD, it, 2, &bad, &value), 0);
  cr_expect_float_eq(((double *)d->values)[1], 2.5, 0);
  cr_expect_float_eq(((double *)d->values)[3], -2.0, 0);
  cr_expect_float_eq(((float *)f->values)[1], 1.5f, 0);
  cr_expect_float_eq(((float *)f->values)[3], -1.5f, 0);
  cr_assert_eq(orion_wbuf_apply(d, ORION_APPLY_REPLACE, it, 2, &bad, &value),
               0);
  cr_expect_float_eq(((double *)d->values)[1], 1.5, 0);
  cr_assert_eq(orion_wbuf_apply(d, ORION_APPLY_FUNC, it, 2, &bad, &value),
               ORION_EINVAL, "apply functions are the caller's");
  cr_expect_eq(bad, -1);
  orion_array_release(d);
  orion_array_release(f);
}

Test(wbuf, apply_on_integers_wraps_and_checks_i32) {
  orion_pend_item it[3] = {{0, {0}}, {1, {0}}, {2, {0}}};
  orion_array *l = dense1(3, ORION_I64), *s = dense1(3, ORION_I32);
  int64_t bad = -1, value = 0;
  ((int64_t *)l->values)[0] = INT64_MAX;
  it[0].val.i = 1; /* INT64_MAX + 1 wraps */
  it[1].val.i = 5;
  it[2].val.i = -7;
  cr_assert_eq(orion_wbuf_apply(l, ORION_APPLY_ADD, it, 3, &bad, &value), 0);
  cr_expect_eq(((int64_t *)l->values)[0], INT64_MIN);
  cr_expect_eq(((int64_t *)l->values)[2], -7);
  /* i32: the second item overflows; the first is applied, the third not. */
  ((int32_t *)s->values)[1] = INT32_MAX;
  cr_assert_eq(orion_wbuf_apply(s, ORION_APPLY_ADD, it, 3, &bad, &value),
               -ERANGE);
  cr_expect_eq(bad, 1);
  cr_expect_eq(value, (int64_t)INT32_MAX + 5);
  cr_expect_eq(((int32_t *)s->values)[0], 1);
  cr_expect_eq(((int32_t *)s->values)[1], INT32_MAX);
  cr_expect_eq(((int32_t *)s->values)[2], 0);
  it[1].val.i = (int64_t)INT32_MIN - 1;
  cr_assert_eq(orion_wbuf_apply(s, ORION_APPLY_REPLACE, it, 3, &bad, &value),
               -ERANGE);
  cr_expect_eq(value, (int64_t)INT32_MIN - 1);
  orion_array_release(l);
  orion_array_release(s);
}

/* flush = "managed": the max writes of largest magnitude go, in key order;
 * the rest stay pending with their values (a read sees them), and a take
 * of everything afterwards gives exactly what was written, nothing twice.
 * Keys k * stride (k = 0..39) get distinct magnitudes, alternating signs;
 * positions decide the storage form. */
static void check_take_largest(int64_t positions, int64_t stride, int hashed) {
  enum { NW = 40, MAX = 9 };
  orion_wbuf w;
  orion_pend_item *s, *r, *all;
  int64_t ns, nr, n, k, total = 0;
  int64_t val[NW];
  orion_wbuf_init(&w, positions);
  for (k = 0; k < NW; k++) {
    /* Distinct magnitudes 1..NW in a scrambled order, signs alternating. */
    int64_t m = (k * 7) % NW + 1;
    val[k] = (k % 2 != 0) ? -m : m;
    orion_wbuf_slot(&w, k * stride)->i = val[k];
  }
  cr_assert_eq(hashed, w.hkeys != NULL && w.vals == NULL);
  cr_assert_eq(orion_wbuf_take_largest(&w, 1, MAX, &s, &ns, &r, &nr), 0);
  cr_assert_eq(ns, MAX);
  cr_assert_eq(nr, NW - MAX);
  cr_assert_eq(orion_wbuf_pending(&w), NW - MAX);
  for (k = 0; k < ns; k++) {
    int64_t m = s[k].val.i < 0 ? -s[k].val.i : s[k].val.i;
    cr_assert_geq(m, NW - MAX + 1, "item %lld of magnitude %lld went",
                  (long long)k, (long long)m);
    cr_assert_eq(s[k].val.i, val[s[k].key / stride]);
    if (k > 0)
      cr_assert_lt(s[k - 1].key, s[k].key, "sent items in key order");
    total += s[k].val.i;
  }
  for (k = 0; k < nr; k++) {
    const orion_pend_value *v = orion_wbuf_lookup(&w, r[k].key);
    cr_assert_not_null(v);
    cr_assert_eq(v->i, r[k].val.i, "the rest read back as written");
    if (k > 0)
      cr_assert_lt(r[k - 1].key, r[k].key, "kept items in key order");
  }
  /* Everything else, once. */
  cr_assert_eq(orion_wbuf_take(&w, &all, &n), 0);
  cr_assert_eq(n, NW - MAX);
  for (k = 0; k < n; k++)
    total += all[k].val.i;
  {
    int64_t want = 0;
    for (k = 0; k < NW; k++)
      want += val[k];
    cr_assert_eq(total, want, "sent + kept = written");
  }
  orion_free(s);
  orion_free(r);
  orion_free(all);
  /* max >= pending: everything goes; nothing pending: nothing. */
  orion_wbuf_slot(&w, stride)->i = 5;
  cr_assert_eq(orion_wbuf_take_largest(&w, 1, 100, &s, &ns, &r, &nr), 0);
  cr_assert(ns == 1 && nr == 0 && r == NULL && s[0].val.i == 5);
  orion_free(s);
  cr_assert_eq(orion_wbuf_take_largest(&w, 1, 100, &s, &ns, &r, &nr), 0);
  cr_assert(ns == 0 && s == NULL && nr == 0);
  orion_wbuf_free(&w);
}

Test(wbuf, take_largest_dense) { check_take_largest(1000, 3, 0); }

Test(wbuf, take_largest_hashed) {
  check_take_largest((int64_t)1 << 24, 1009, 1);
}

/* Floats by |value|; ties go to the lower key. */
Test(wbuf, take_largest_floats_ties_to_lower_key) {
  orion_wbuf w;
  orion_pend_item *s, *r;
  int64_t ns, nr;
  orion_wbuf_init(&w, 10);
  orion_wbuf_slot(&w, 1)->d = 0.5;
  orion_wbuf_slot(&w, 3)->d = -2.0;
  orion_wbuf_slot(&w, 5)->d = 2.0;
  orion_wbuf_slot(&w, 7)->d = 1.0;
  cr_assert_eq(orion_wbuf_take_largest(&w, 0, 1, &s, &ns, &r, &nr), 0);
  cr_assert(ns == 1 && s[0].key == 3 && s[0].val.d == -2.0,
            "|-2.0| ties with 2.0: the lower key goes");
  cr_assert(nr == 3 && r[0].key == 1 && r[1].key == 5 && r[2].key == 7);
  orion_free(s);
  orion_free(r);
  cr_assert_eq(orion_wbuf_take_largest(&w, 0, 2, &s, &ns, &r, &nr), 0);
  cr_assert(ns == 2 && s[0].key == 5 && s[1].key == 7, "2.0 and 1.0 go");
  cr_assert(nr == 1 && r[0].key == 1 && r[0].val.d == 0.5);
  orion_free(s);
  orion_free(r);
  orion_wbuf_free(&w);
}

/* A compiled body's inline writes (util/cbody.h): key k marked through the
 * dense view as the generated code does it. */
static orion_pend_value *view_slot(orion_pend_value *vals, uint64_t *bits,
                                   int64_t *dirty, int64_t *ndirty,
                                   int64_t dirty_max, int64_t k) {
  if (!(bits[k >> 6] & ((uint64_t)1 << (k & 63)))) {
    bits[k >> 6] |= (uint64_t)1 << (k & 63);
    if (*ndirty < dirty_max)
      dirty[*ndirty] = k;
    ++*ndirty;
  }
  return &vals[k];
}

/* nw writes (with repeats) through orion_wbuf_slot into one store and
 * through the dense view into another, twice each (a take between):
 * the same items come out. */
static void check_view_matches_slot(int64_t positions, int64_t nw) {
  orion_wbuf a, b;
  orion_pend_value *vals;
  uint64_t *bits;
  int64_t *dirty, *ndirty, dmax, round, j;
  orion_wbuf_init(&a, positions);
  orion_wbuf_init(&b, positions);
  cr_assert_eq(orion_wbuf_dense_view(&b, &vals, &bits, &dirty, &ndirty, &dmax),
               0);
  cr_assert_not_null(vals, "a small target's store is dense");
  cr_assert_eq(dmax, positions / 512);
  for (round = 0; round < 2; round++) {
    orion_pend_item *ia, *ib;
    int64_t na, nb;
    for (j = 0; j < nw; j++) {
      int64_t k = (j * 7919 + round * 13) % positions;
      orion_pend_value *x = orion_wbuf_slot(&a, k);
      orion_pend_value *y = view_slot(vals, bits, dirty, ndirty, dmax, k);
      cr_assert_not_null(x);
      x->d += 0.5 * (double)j;
      y->d += 0.5 * (double)j;
    }
    cr_assert_eq(orion_wbuf_pending(&b), orion_wbuf_pending(&a));
    cr_assert_eq(orion_wbuf_take(&a, &ia, &na), 0);
    cr_assert_eq(orion_wbuf_take(&b, &ib, &nb), 0);
    cr_assert_eq(nb, na);
    cr_assert(na == 0 || memcmp(ia, ib, sizeof *ia * (size_t)na) == 0,
              "the view's writes take out differently");
    orion_free(ia);
    orion_free(ib);
    cr_assert_eq(orion_wbuf_pending(&b), 0);
  }
  orion_wbuf_free(&a);
  orion_wbuf_free(&b);
}

/* Few writes: the key list; many: the bitmap alone. */
Test(wbuf, dense_view_key_list) { check_view_matches_slot(100000, 40); }
Test(wbuf, dense_view_bitmap) { check_view_matches_slot(5000, 3000); }

Test(wbuf, dense_view_of_a_large_target_is_none) {
  orion_wbuf w;
  orion_pend_value *vals;
  uint64_t *bits;
  int64_t *dirty, *ndirty, dmax;
  orion_wbuf_init(&w, ((int64_t)1 << 23) + 1);
  cr_assert_eq(orion_wbuf_dense_view(&w, &vals, &bits, &dirty, &ndirty, &dmax),
               0);
  cr_assert_null(vals, "a large target stays hashed (the calls)");
  orion_wbuf_free(&w);
}

/* A scan store (util/cbody.h, bits NULL for the body): values stored
 * through the dense view without marks, then orion_wbuf_absorb.  It
 * marks exactly the elements whose value is not all-zero bits, beside
 * those marked before (a slot written through the calls, kept even at
 * 0), counts them once however often it runs, and the take gives the
 * same items as a store written through orion_wbuf_slot, in key order;
 * a value stored as exactly 0.0 stays clean, -0.0 does not. */
static void check_absorb(int64_t positions, int64_t nw) {
  orion_wbuf a, b;
  orion_pend_value *vals;
  uint64_t *bits;
  int64_t *dirty, *ndirty, dmax, j;
  orion_pend_item *ia, *ib;
  int64_t na, nb;
  orion_wbuf_init(&a, positions);
  orion_wbuf_init(&b, positions);
  cr_assert_eq(orion_wbuf_dense_view(&b, &vals, &bits, &dirty, &ndirty, &dmax),
               0);
  cr_assert_not_null(vals);
  orion_wbuf_slot(&b, 3)->d = 0.0; /* marked by the call, stays pending */
  orion_wbuf_slot(&a, 3)->d = 0.0;
  for (j = 0; j < nw; j++) {
    int64_t k = (j * 7919 + 5) % positions;
    if (k == 3)
      continue;
    orion_wbuf_slot(&a, k)->d += 0.25 * (double)(j + 1);
    vals[k].d += 0.25 * (double)(j + 1);
    cr_assert_eq(orion_wbuf_absorb(&b), 0);
  }
  vals[positions - 1].d = 0.0; /* stored as 0: clean */
  vals[positions - 2].d = -0.0; /* -0.0: pending */
  orion_wbuf_slot(&a, positions - 2)->d = -0.0;
  cr_assert_eq(orion_wbuf_absorb(&b), 0);
  cr_assert_eq(orion_wbuf_absorb(&b), 0);
  cr_assert_eq(orion_wbuf_pending(&b), orion_wbuf_pending(&a));
  cr_assert_eq(orion_wbuf_take(&a, &ia, &na), 0);
  cr_assert_eq(orion_wbuf_take(&b, &ib, &nb), 0);
  cr_assert_eq(nb, na);
  for (j = 0; j < na; j++) {
    cr_assert_eq(ib[j].key, ia[j].key, "item %lld", (long long)j);
    cr_assert_eq(ib[j].val.i, ia[j].val.i, "key %lld", (long long)ia[j].key);
  }
  orion_free(ia);
  orion_free(ib);
  cr_assert_eq(orion_wbuf_pending(&b), 0);
  cr_assert_eq(orion_wbuf_absorb(&b), 0); /* the take cleared the values */
  cr_assert_eq(orion_wbuf_pending(&b), 0);
  orion_wbuf_free(&a);
  orion_wbuf_free(&b);
}

Test(wbuf, absorb_marks_what_a_scan_store_holds_few) { check_absorb(100000, 40); }
Test(wbuf, absorb_marks_what_a_scan_store_holds_many) { check_absorb(5000, 3000); }

/* orion_wbuf_take_scan: the same items as orion_wbuf_absorb then
 * orion_wbuf_take on a scan store (a slot marked through the calls and
 * kept at 0, values stored without marks, 0.0 clean, -0.0 pending), in
 * key order, each float value times the scale (exactly: 0.25), and the
 * store empty after; integer values are not scaled. */
static void check_take_scan(int64_t positions, int64_t nw) {
  orion_wbuf a, b;
  orion_pend_value *va, *vb;
  uint64_t *bits;
  int64_t *dirty, *ndirty, dmax, j, na, nb;
  orion_pend_item *ia, *ib;
  orion_wbuf_init(&a, positions);
  orion_wbuf_init(&b, positions);
  cr_assert_eq(orion_wbuf_dense_view(&a, &va, &bits, &dirty, &ndirty, &dmax),
               0);
  cr_assert_eq(orion_wbuf_dense_view(&b, &vb, &bits, &dirty, &ndirty, &dmax),
               0);
  orion_wbuf_slot(&a, 3)->d = 0.0;
  orion_wbuf_slot(&b, 3)->d = 0.0;
  for (j = 0; j < nw; j++) {
    int64_t k = (j * 7919 + 5) % positions;
    if (k == 3)
      continue;
    va[k].d += 0.5 * (double)(j + 1);
    vb[k].d += 0.5 * (double)(j + 1);
  }
  va[positions - 2].d = vb[positions - 2].d = -0.0;
  cr_assert_eq(orion_wbuf_absorb(&a), 0);
  cr_assert_eq(orion_wbuf_take(&a, &ia, &na), 0);
  cr_assert_eq(orion_wbuf_take_scan(&b, 0, 0.25, &ib, &nb), 0);
  cr_assert_eq(nb, na);
  for (j = 0; j < na; j++) {
    cr_assert_eq(ib[j].key, ia[j].key, "item %lld", (long long)j);
    cr_assert_eq(ib[j].val.d, ia[j].val.d * 0.25, "key %lld",
                 (long long)ia[j].key);
  }
  orion_free(ia);
  orion_free(ib);
  cr_assert_eq(orion_wbuf_pending(&b), 0);
  cr_assert_eq(orion_wbuf_take_scan(&b, 0, 0.25, &ib, &nb), 0);
  cr_assert_eq(nb, 0, "the take cleared the values");
  vb[7].i = 12; /* an integer store: never scaled */
  cr_assert_eq(orion_wbuf_take_scan(&b, 1, 0.25, &ib, &nb), 0);
  cr_assert_eq(nb, 1);
  cr_assert_eq(ib[0].key, 7);
  cr_assert_eq(ib[0].val.i, 12);
  orion_free(ib);
  orion_wbuf_free(&a);
  orion_wbuf_free(&b);
}

Test(wbuf, take_scan_few) { check_take_scan(100000, 40); }
Test(wbuf, take_scan_many) { check_take_scan(5000, 3000); }

/* The f32 form (orion_wbuf_f32_view): pending values a scan store held as
 * doubles move to the floats, rounded (1 + 2^-30 reads 1 after), a marked
 * 0 among them; values stored in the floats without marks and taken by
 * orion_wbuf_take_scan give the items (key order, scaled) that the same
 * values as doubles give, -0.0 pending, 0.0 clean, and the store stays in
 * the form with the floats zero; a lookup folds the
 * floats back and leaves the form (orion_wbuf_f32_dense NULL), a second
 * view finds its floats where the first left them; a hashed store has no
 * f32 form. */
static void check_f32(int64_t positions, int64_t nw) {
  orion_wbuf a, b, h;
  orion_pend_value *va, *vb;
  uint64_t *bits;
  int64_t *dirty, *ndirty, dmax, j, na, nb;
  orion_pend_item *ia, *ib;
  float *f, *f2;
  orion_wbuf_init(&a, positions);
  orion_wbuf_init(&b, positions);
  cr_assert_eq(orion_wbuf_dense_view(&a, &va, &bits, &dirty, &ndirty, &dmax),
               0);
  cr_assert_eq(orion_wbuf_dense_view(&b, &vb, &bits, &dirty, &ndirty, &dmax),
               0);
  orion_wbuf_slot(&b, 5)->d = 1.0 + 0x1p-30; /* marked, before the view */
  vb[9].d = 3.0;                             /* unmarked */
  cr_assert_null(orion_wbuf_f32_dense(&b));
  cr_assert_eq(orion_wbuf_f32_view(&b, &f), 0);
  cr_assert_not_null(f);
  cr_assert_eq(orion_wbuf_f32_dense(&b), vb, "in the form: vals, zero");
  cr_assert_eq(vb[5].i, 0);
  cr_assert_eq(orion_wbuf_pending(&b), 0, "the floats hold them, unmarked");
  cr_assert_eq(f[5], 1.0f, "rounded to float");
  cr_assert_eq(f[9], 3.0f);
  cr_assert_eq(orion_wbuf_lookup(&b, 5)->d, 1.0, "a lookup folds them back");
  cr_assert_null(orion_wbuf_f32_dense(&b), "and leaves the form");
  cr_assert_eq(orion_wbuf_f32_view(&b, &f2), 0);
  cr_assert_eq(f2, f, "the floats are kept across views");
  cr_assert_eq(f[5], 1.0f);
  cr_assert_eq(f[9], 3.0f);
  va[5].d = 1.0;
  va[9].d = 3.0;
  for (j = 0; j < nw; j++) {
    int64_t k = (j * 7919 + 11) % positions;
    if (k == 5 || k == 9)
      continue;
    va[k].d += 0.5 * (double)(j + 1); /* exact in float too */
    f[k] += 0.5f * (float)(j + 1);
  }
  va[positions - 2].d = -0.0;
  f[positions - 2] = -0.0f;
  cr_assert_eq(orion_wbuf_take_scan(&a, 0, 0.25, &ia, &na), 0);
  cr_assert_eq(orion_wbuf_take_scan(&b, 0, 0.25, &ib, &nb), 0);
  cr_assert_eq(nb, na);
  for (j = 0; j < na; j++) {
    cr_assert_eq(ib[j].key, ia[j].key, "item %lld", (long long)j);
    cr_assert_eq(ib[j].val.d, ia[j].val.d, "key %lld", (long long)ia[j].key);
  }
  for (j = 0; j < nb && ib[j].key != positions - 2; j++) {
  }
  cr_assert(j < nb && signbit(ib[j].val.d), "-0.0 is pending");
  orion_free(ia);
  orion_free(ib);
  cr_assert_not_null(orion_wbuf_f32_dense(&b), "the take keeps the form");
  cr_assert_eq(orion_wbuf_f32_view(&b, &f), 0);
  for (j = 0; j < positions; j++)
    cr_assert_eq(f[j], 0.0f, "the take cleared the floats (key %lld)",
                 (long long)j);
  orion_wbuf_free(&a);
  orion_wbuf_free(&b);
  orion_wbuf_init(&h, ((int64_t)1 << 23) + 1); /* past the dense limit */
  orion_wbuf_slot(&h, 7)->d = 1.0;
  cr_assert_eq(orion_wbuf_f32_view(&h, &f), 0);
  cr_assert_null(f, "hashed: no f32 form");
  cr_assert_eq(orion_wbuf_lookup(&h, 7)->d, 1.0);
  orion_wbuf_free(&h);
}

Test(wbuf, f32_form_few) { check_f32(100000, 40); }
Test(wbuf, f32_form_many) { check_f32(5000, 3000); }
