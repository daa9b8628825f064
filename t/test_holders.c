/* dsm/holders.c: which executor holds the newest copy of which elements
 * (resident rows, scheduler/dist_resid.c); and dsm/replica.c's count of the
 * rows an executor holds, which dynamic placement weighs. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "dsm/array.h"
#include "dsm/holders.h"
#include "dsm/replica.h"
#include "util/error.h"

typedef struct seen {
  int64_t v[16][3];
  int n;
} seen;

static int note(void *ud, int64_t lo, int64_t hi, int e) {
  seen *s = ud;
  s->v[s->n][0] = lo;
  s->v[s->n][1] = hi;
  s->v[s->n][2] = e;
  s->n++;
  return 0;
}

/* The pieces of [lo, hi) as "lo-hi:e ..." */
static void pieces(const orion_holders *h, int64_t lo, int64_t hi, char *out,
                   size_t n) {
  seen s = {.n = 0};
  int i;
  size_t at = 0;
  cr_assert_eq(orion_holders_each(h, lo, hi, note, &s), 0);
  out[0] = '\0';
  for (i = 0; i < s.n; i++)
    at += (size_t)snprintf(out + at, n - at, "%s%lld-%lld:%d", i ? " " : "",
                           (long long)s.v[i][0], (long long)s.v[i][1],
                           (int)s.v[i][2]);
}

Test(holders, pieces_cover_the_range_in_order) {
  orion_holders h = {0};
  char buf[256];
  pieces(&h, 0, 100, buf, sizeof buf);
  cr_assert_str_eq(buf, "0-100:-1", "the driver holds everything at first");
  cr_assert_eq(orion_holders_set(&h, 10, 20, 1), 0);
  cr_assert_eq(orion_holders_set(&h, 30, 50, 2), 0);
  pieces(&h, 0, 100, buf, sizeof buf);
  cr_assert_str_eq(buf, "0-10:-1 10-20:1 20-30:-1 30-50:2 50-100:-1");
  pieces(&h, 15, 35, buf, sizeof buf);
  cr_assert_str_eq(buf, "15-20:1 20-30:-1 30-35:2");
  cr_assert(orion_holders_any(&h, 2));
  cr_assert(!orion_holders_any(&h, 0));
  orion_holders_free(&h);
}

Test(holders, overwrites_split_and_merge) {
  orion_holders h = {0};
  char buf[256];
  cr_assert_eq(orion_holders_set(&h, 0, 100, 1), 0);
  cr_assert_eq(orion_holders_set(&h, 40, 60, 2), 0); /* splits 1's range */
  pieces(&h, 0, 100, buf, sizeof buf);
  cr_assert_str_eq(buf, "0-40:1 40-60:2 60-100:1");
  cr_assert_eq(orion_holders_set(&h, 40, 60, 1), 0); /* merges again */
  cr_assert_eq(h.n, 1);
  cr_assert_eq(orion_holders_set(&h, 20, 30, -1), 0); /* back to the driver */
  pieces(&h, 0, 100, buf, sizeof buf);
  cr_assert_str_eq(buf, "0-20:1 20-30:-1 30-100:1");
  cr_assert_eq(orion_holders_set(&h, 10, 90, 3), 0); /* spans several */
  pieces(&h, 0, 100, buf, sizeof buf);
  cr_assert_str_eq(buf, "0-10:1 10-90:3 90-100:1");
  cr_assert_eq(orion_holders_set(&h, 0, 100, -1), 0);
  cr_assert_eq(h.n, 0);
  cr_assert(!orion_holders_any(&h, -1));
  orion_holders_free(&h);
}

static int stop_at_second(void *ud, int64_t lo, int64_t hi, int e) {
  int *n = ud;
  (void)lo;
  (void)hi;
  (void)e;
  return ++*n == 2 ? 7 : 0;
}

Test(holders, each_stops_at_the_first_nonzero) {
  orion_holders h = {0};
  int n = 0;
  cr_assert_eq(orion_holders_set(&h, 10, 20, 1), 0);
  cr_assert_eq(orion_holders_each(&h, 0, 30, stop_at_second, &n), 7);
  cr_assert_eq(n, 2);
  orion_holders_free(&h);
}

/* A part of rows whose first and last chunk it shares with the parts
 * beside it (MF's W: 755 of 6040 rows of 128 floats, chunks of 8 rows)
 * counts the rows of the chunks its executor holds whole: counted all or
 * nothing, as before, it was 0 for every executor, and dynamic placement
 * dragged W and H after the ratings. */
Test(holders, an_executor_holds_the_rows_of_its_current_chunks) {
  int64_t dims[2] = {6040, 128}, k;
  orion_error err;
  orion_array *a;
  orion_replica *c;
  orion_error_clear(&err);
  a = orion_array_new_dense(2, dims, ORION_F32, &err);
  cr_assert_not_null(a, "%s", err.msg);
  c = orion_replica_new(a, 3, 1);
  cr_assert_not_null(c);
  cr_assert_eq(c->chunk, 8);
  /* Executor 1 ran part 1, rows [755, 1510): it holds the chunks wholly
   * inside, 95..187: rows 760..1503 (the first and last are shared). */
  for (k = 755 / 8 + 1; k < 1510 / 8; k++)
    c->have[1 * c->nchunks + k] = c->ver[k];
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 755, 1510), 1504 - 760);
  cr_assert_eq(orion_replica_fresh_rows(c, 0, 755, 1510), 0);
  cr_assert_eq(orion_replica_fresh_rows(c, 2, 755, 1510), 0);
  /* Part of a range, and a chunk changed since: it no longer counts. */
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 800, 810), 10);
  c->ver[800 / 8]++;
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 800, 810), 10 - 8 + 800 % 8);
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 755, 1510), 1504 - 760 - 8);
  /* Out of range or empty: nothing. */
  cr_assert_eq(orion_replica_fresh_rows(c, 3, 0, 10), 0);
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 900, 900), 0);
  cr_assert_eq(orion_replica_fresh_rows(c, 1, 0, 7000), 0);
  orion_replica_free(c);
  orion_array_release(a);
}
