/* Tests of a sharded array's data (dsm/shard.c) without an executor:
 * which executor owns which chunks for several executor counts, chunk
 * element ranges at the array's end, publishing bumps the versions of
 * exactly the changed chunks, a requester's versions select exactly the
 * differing chunks (and installing them), the changed-element runs, and
 * init/clear releasing everything.  (t/test_cluster.c's sharded_* tests
 * cover the same data through executors.) */
#include "t/testutil.h"

#include <stdint.h>

#include "dsm/array.h"
#include "dsm/msg.h"
#include "dsm/proto.h"
#include "dsm/shard.h"
#include "util/error.h"

/* f64 rows of 64 elements (512 bytes): 8 rows per chunk; 37 rows make 5
 * chunks, the last of 5 rows. */
#define ROWS 37
#define COLS 64

static orion_array *make_array(int64_t rows, int64_t cols) {
  int64_t dims[2] = {rows, cols};
  orion_error err;
  orion_array *a;
  int64_t i;
  orion_error_clear(&err);
  a = orion_array_new_dense(2, dims, ORION_F64, &err);
  cr_assert_not_null(a, "%s", err.msg);
  for (i = 0; i < a->nnz; i++)
    ((double *)a->values)[i] = (double)i;
  return a;
}

static double *vals(orion_array *a) { return (double *)a->values; }

/* Executor e of n's shard of a rows x cols f64 array: its geometry. */
static void check_geometry(int64_t rows, int64_t cols, int e, int n,
                           int64_t chunk_rows, int64_t nchunks, int64_t clo,
                           int64_t chi) {
  orion_array *a = make_array(rows, cols);
  orion_shard sh = {0};
  cr_assert_eq(orion_shard_init(&sh, 7, a, e, n), 0);
  cr_assert_eq(sh.id, 7);
  cr_assert_eq(sh.row_elems, cols);
  cr_assert_eq(sh.esz, 8);
  cr_assert_eq(sh.chunk_rows, chunk_rows);
  cr_assert_eq(sh.nchunks, nchunks);
  cr_assert_eq(sh.clo, clo);
  cr_assert_eq(sh.chi, chi);
  orion_shard_clear(&sh);
  orion_array_release(a);
}

Test(shard, geometry) { check_geometry(ROWS, COLS, 0, 1, 8, 5, 0, 5); }

/* Rows of 4 KiB or more: one row per chunk. */
Test(shard, wide_rows) { check_geometry(3, 1024, 1, 2, 1, 3, 2, 3); }

/* Every executor count splits the chunks into contiguous, disjoint ranges
 * covering them all, which orion_shard_owner agrees with. */
Test(shard, ownership_ranges) {
  static const int counts[] = {1, 2, 3, 4, 5, 7, 8};
  orion_array *a = make_array(ROWS, COLS);
  size_t c;
  for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int n = counts[c], e;
    int64_t next = 0, k;
    for (e = 0; e < n; e++) {
      orion_shard sh = {0};
      cr_assert_eq(orion_shard_init(&sh, 1, a, e, n), 0);
      cr_assert_eq(sh.clo, next, "n %d e %d: starts at %lld, want %lld", n,
                   e, (long long)sh.clo, (long long)next);
      cr_assert_geq(sh.chi, sh.clo);
      for (k = sh.clo; k < sh.chi; k++)
        cr_assert_eq(orion_shard_owner(&sh, n, k), e,
                     "n %d: chunk %lld owned by %d, want %d", n, (long long)k,
                     orion_shard_owner(&sh, n, k), e);
      next = sh.chi;
      orion_shard_clear(&sh);
    }
    cr_assert_eq(next, 5, "n %d: the ranges end at %lld", n, (long long)next);
  }
  orion_array_release(a);
}

/* The ranges themselves, written out: 5 chunks over 3 executors are
 * [0,2) [2,4) [4,5); over 7, executors 3 and 7 hold none. */
Test(shard, ownership_values) {
  static const int64_t three[][2] = {{0, 2}, {2, 4}, {4, 5}};
  static const int64_t seven[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 3},
                                     {3, 4}, {4, 5}, {5, 5}};
  orion_array *a = make_array(ROWS, COLS);
  orion_shard sh = {0};
  int e;
  for (e = 0; e < 3; e++) {
    cr_assert_eq(orion_shard_init(&sh, 1, a, e, 3), 0);
    cr_assert_eq(sh.clo, three[e][0]);
    cr_assert_eq(sh.chi, three[e][1]);
    orion_shard_clear(&sh);
  }
  for (e = 0; e < 7; e++) {
    cr_assert_eq(orion_shard_init(&sh, 1, a, e, 7), 0);
    cr_assert_eq(sh.clo, seven[e][0], "e %d", e);
    cr_assert_eq(sh.chi, seven[e][1], "e %d", e);
    orion_shard_clear(&sh);
  }
  cr_assert_eq(orion_shard_init(&sh, 1, a, 0, 7), 0);
  cr_assert_eq(orion_shard_owner(&sh, 7, 3), 4, "chunk 3 is executor 4's");
  orion_shard_clear(&sh);
  orion_array_release(a);
}

Test(shard, chunk_elems_at_the_end) {
  orion_array *a = make_array(ROWS, COLS);
  orion_shard sh = {0};
  int64_t first, count;
  cr_assert_eq(orion_shard_init(&sh, 1, a, 0, 1), 0);
  orion_shard_chunk_elems(&sh, 0, 1, &first, &count);
  cr_assert(first == 0 && count == 8 * COLS);
  orion_shard_chunk_elems(&sh, 4, 5, &first, &count); /* rows 32..36 */
  cr_assert_eq(first, 32 * COLS);
  cr_assert_eq(count, 5 * COLS);
  orion_shard_chunk_elems(&sh, 3, 5, &first, &count);
  cr_assert_eq(first, 24 * COLS);
  cr_assert_eq(count, 13 * COLS);
  orion_shard_chunk_elems(&sh, 5, 6, &first, &count); /* past the end */
  cr_assert_eq(first, ROWS * COLS);
  cr_assert_eq(count, 0);
  orion_shard_chunk_elems(&sh, 2, 2, &first, &count); /* empty */
  cr_assert_eq(first, 16 * COLS);
  cr_assert_eq(count, 0);
  cr_assert_eq(orion_shard_chunk_of(&sh, ROWS * COLS - 1), 4);
  cr_assert_eq(orion_shard_chunk_of(&sh, 8 * COLS - 1), 0);
  cr_assert_eq(orion_shard_chunk_of(&sh, 8 * COLS), 1);
  cr_assert_eq(orion_shard_chunk_key(&sh, 5), 40 * COLS, "not cut");
  orion_shard_clear(&sh);
  orion_array_release(a);
}

/* Executor 1 of 2 owns chunks [3, 5): a forced publish versions both; a
 * publish after writes bumps exactly the chunks that changed, and only
 * ours. */
Test(shard, publish_bumps_changed_chunks) {
  orion_array *a = make_array(ROWS, COLS);
  orion_shard sh = {0};
  uint64_t counter = 100;
  int64_t first, count;
  cr_assert_eq(orion_shard_init(&sh, 1, a, 1, 2), 0);
  cr_assert(sh.clo == 3 && sh.chi == 5);
  cr_assert(sh.ver[0] == 0 && sh.ver[1] == 0);
  orion_shard_publish(&sh, 0, 5, 1, &counter);
  cr_assert_eq(counter, 102, "two own chunks versioned");
  cr_assert(sh.ver[0] == 101 && sh.ver[1] == 102);
  orion_shard_chunk_elems(&sh, 3, 5, &first, &count);
  cr_assert_eq(memcmp(sh.served, vals(a) + first, (size_t)count * 8), 0);

  orion_shard_publish(&sh, 0, 5, 0, &counter); /* nothing changed */
  cr_assert_eq(counter, 102);
  cr_assert(sh.ver[0] == 101 && sh.ver[1] == 102);

  vals(a)[0] = -1;                   /* chunk 0: not ours */
  vals(a)[ROWS * COLS - 1] = -2;     /* chunk 4: the array's last element */
  orion_shard_publish(&sh, 0, 5, 0, &counter);
  cr_assert_eq(counter, 103);
  cr_assert_eq(sh.ver[0], 101, "chunk 3 unchanged");
  cr_assert_eq(sh.ver[1], 103, "chunk 4 bumped");
  cr_assert_eq(((double *)sh.served)[count - 1], -2);

  vals(a)[24 * COLS] = -3; /* chunk 3, but published for chunk 4 only */
  orion_shard_publish(&sh, 4, 5, 0, &counter);
  cr_assert_eq(counter, 103);
  orion_shard_publish(&sh, 3, 4, 0, &counter);
  cr_assert_eq(counter, 104);
  cr_assert(sh.ver[0] == 104 && sh.ver[1] == 103);
  cr_assert_eq(((double *)sh.served)[0], -3);
  orion_shard_clear(&sh);
  orion_array_release(a);
}

/* The owner (executor 0 of 1) answers a requester with exactly the chunks
 * whose version differs; the requester installs them. */
Test(shard, changed_selects_differing_chunks) {
  orion_array *a = make_array(ROWS, COLS), *b = make_array(ROWS, COLS);
  orion_shard own = {0}, req = {0};
  orion_msg_chunk out[5], bad;
  uint64_t counter = 0, versions[5];
  int64_t n, k, first, count;
  cr_assert_eq(orion_shard_init(&own, 1, a, 0, 1), 0);
  cr_assert_eq(orion_shard_init(&req, 1, b, 0, 2), 0);
  orion_shard_publish(&own, 0, 5, 1, &counter);
  for (k = 0; k < 5; k++)
    versions[k] = own.ver[k];
  cr_assert_eq(orion_shard_changed(&own, versions, out), 0);

  versions[1] = 0;
  versions[4] = 99;
  n = orion_shard_changed(&own, versions, out);
  cr_assert_eq(n, 2);
  cr_assert(out[0].chunk == 1 && out[0].version == own.ver[1]);
  cr_assert(out[1].chunk == 4 && out[1].version == own.ver[4]);
  cr_assert_eq(out[0].len, 8 * COLS * 8);
  cr_assert_eq(out[1].len, 5 * COLS * 8, "the last chunk is cut");
  cr_assert_eq(out[1].data, own.served + 32 * COLS * 8);

  /* The requester's copy differs in those chunks; installing fixes them. */
  for (k = 0; k < b->nnz; k++)
    vals(b)[k] = 0;
  for (k = 0; k < n; k++)
    cr_assert_eq(orion_shard_install(&req, &out[k]), 0);
  cr_assert(req.have[1] == own.ver[1] && req.have[4] == own.ver[4]);
  cr_assert(req.have[0] == 0 && req.have[2] == 0 && req.have[3] == 0);
  orion_shard_chunk_elems(&req, 1, 2, &first, &count);
  cr_assert_eq(memcmp(vals(b) + first, vals(a) + first, (size_t)count * 8), 0);
  cr_assert_eq(vals(b)[ROWS * COLS - 1], ROWS * COLS - 1);
  cr_assert_eq(vals(b)[0], 0, "chunk 0 not sent");

  bad = out[0];
  bad.chunk = 5;
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  bad = out[0];
  bad.chunk = 4; /* a full chunk's rows do not fit the last one */
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  cr_assert_eq(req.have[4], own.ver[4], "nothing installed");

  orion_shard_forget(&req);
  cr_assert(req.have[1] == 0 && req.have[4] == 0);
  orion_shard_clear(&own);
  orion_shard_clear(&req);
  orion_array_release(a);
  orion_array_release(b);
}

/* The runs of changed elements since the base, then rebased. */
Test(shard, diff_runs) {
  orion_array *a = make_array(ROWS, COLS);
  orion_shard sh = {0};
  orion_msg_runvec runs = {0};
  uint64_t counter = 0;
  cr_assert_eq(orion_shard_init(&sh, 9, a, 1, 2), 0); /* chunks 3, 4 */
  orion_shard_publish(&sh, 0, 5, 1, &counter);
  orion_shard_rebase(&sh);
  cr_assert_eq(orion_shard_diff(&sh, &runs), 0);
  cr_assert_eq(runs.n, 0);
  vals(a)[24 * COLS + 2] = -1;
  vals(a)[24 * COLS + 3] = -1;
  vals(a)[ROWS * COLS - 1] = -1;
  orion_shard_publish(&sh, 0, 5, 0, &counter);
  cr_assert_eq(orion_shard_diff(&sh, &runs), 0);
  cr_assert_eq(runs.n, 2);
  cr_assert(runs.v[0].array == 9 && runs.v[0].first == 24 * COLS + 2 &&
            runs.v[0].count == 2 && runs.v[0].len == 16);
  cr_assert(runs.v[1].first == ROWS * COLS - 1 && runs.v[1].count == 1);
  cr_assert_eq(*(const double *)runs.v[1].data, -1);
  orion_msg_runvec_free(&runs);
  cr_assert_eq(orion_shard_diff(&sh, &runs), 0);
  cr_assert_eq(runs.n, 0, "rebased");
  orion_shard_clear(&sh);
  orion_array_release(a);
}

/* init holds one reference and the buffers; clear gives all back and
 * zeroes the shard (twice is fine). */
Test(shard, init_clear_release) {
  orion_array *a = make_array(ROWS, COLS);
  orion_shard sh = {0};
  cr_assert_eq(a->refs, 1);
  cr_assert_eq(orion_shard_init(&sh, 3, a, 0, 2), 0);
  cr_assert_eq(a->refs, 2);
  cr_assert(sh.a == a && sh.have != NULL && sh.ver != NULL &&
            sh.served != NULL && sh.base != NULL);
  orion_shard_clear(&sh);
  cr_assert_eq(a->refs, 1);
  cr_assert(sh.a == NULL && sh.have == NULL && sh.ver == NULL &&
            sh.served == NULL && sh.base == NULL && sh.id == 0 &&
            sh.nchunks == 0 && sh.clo == 0 && sh.chi == 0);
  orion_shard_clear(&sh);
  cr_assert_eq(a->refs, 1);
  orion_array_release(a);
}

/* A refresh sends only the rows changed since the version the requester
 * holds (a parameter server's delta), and installing them makes the
 * requester's copy the owner's again. */
Test(shard, changed_sends_only_the_changed_rows) {
  orion_array *a = make_array(ROWS, COLS), *b = make_array(ROWS, COLS);
  orion_shard own = {0}, req = {0};
  orion_msg_chunk out[8], bad;
  uint64_t counter = 0;
  int64_t n, k;
  size_t rb = COLS * 8, sent = 0;
  cr_assert_eq(orion_shard_init(&own, 1, a, 0, 1), 0);
  cr_assert_eq(orion_shard_init(&req, 1, b, 0, 2), 0);
  orion_shard_publish(&own, 0, 5, 1, &counter);
  n = orion_shard_changed(&own, req.have, out);
  cr_assert_eq(n, 5, "nothing held: every chunk whole");
  for (k = 0; k < n; k++)
    cr_assert_eq(orion_shard_install(&req, &out[k]), 0);
  cr_assert_eq(memcmp(vals(a), vals(b), ROWS * COLS * 8), 0);

  /* Rows 9, 11 and 12 (chunk 1's rows 1, 3, 4) and 36 (chunk 4's row 4). */
  vals(a)[9 * COLS + 5] = -1;
  vals(a)[11 * COLS] = -2;
  vals(a)[12 * COLS + 63] = -3;
  vals(a)[36 * COLS + 1] = -4;
  orion_shard_publish(&own, 0, 5, 0, &counter);
  n = orion_shard_changed(&own, req.have, NULL);
  cr_assert_eq(n, 3, "three runs of changed rows");
  cr_assert_eq(orion_shard_changed(&own, req.have, out), 3);
  cr_assert(out[0].chunk == 1 && out[0].row == 1 && out[0].len == rb);
  cr_assert(out[1].chunk == 1 && out[1].row == 3 && out[1].len == 2 * rb);
  cr_assert(out[2].chunk == 4 && out[2].row == 4 && out[2].len == rb);
  cr_assert_eq(out[1].version, own.ver[1]);
  for (k = 0; k < n; k++) {
    sent += out[k].len;
    cr_assert_eq(orion_shard_install(&req, &out[k]), 0);
  }
  cr_assert_eq(sent, 4 * rb, "4 rows, not the 13 of their chunks");
  cr_assert_eq(memcmp(vals(a), vals(b), ROWS * COLS * 8), 0);
  cr_assert(req.have[1] == own.ver[1] && req.have[4] == own.ver[4]);
  cr_assert_eq(orion_shard_changed(&own, req.have, out), 0, "up to date");

  /* Rows that do not fit their chunk are refused. */
  bad = out[2];
  bad.row = 5; /* the last chunk has rows 0..4 */
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  bad = out[0];
  bad.row = 7;
  bad.len = 2 * rb;
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  bad = out[0];
  bad.len = rb - 8; /* not whole rows */
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  bad.len = 0; /* no rows of a chunk that has some */
  cr_assert_eq(orion_shard_install(&req, &bad), ORION_EPARSE);
  orion_shard_clear(&own);
  orion_shard_clear(&req);
  orion_array_release(a);
  orion_array_release(b);
}

/* Rows of 8 bytes: changed rows 4 rows apart go in one entry (the rows
 * between cost what a second entry would), farther apart in two. */
Test(shard, changed_joins_runs_a_few_bytes_apart) {
  orion_array *a = make_array(2048, 1), *b = make_array(2048, 1);
  orion_shard own = {0}, req = {0};
  orion_msg_chunk out[4];
  uint64_t counter = 0;
  int64_t k, n;
  cr_assert_eq(orion_shard_init(&own, 1, a, 0, 1), 0);
  cr_assert_eq(orion_shard_init(&req, 1, b, 0, 2), 0);
  cr_assert_eq(own.chunk_rows, 512);
  orion_shard_publish(&own, 0, own.nchunks, 1, &counter);
  n = orion_shard_changed(&own, req.have, NULL);
  cr_assert_eq(n, own.nchunks);
  cr_assert_leq(n, 4);
  orion_shard_changed(&own, req.have, out);
  for (k = 0; k < n; k++)
    cr_assert_eq(orion_shard_install(&req, &out[k]), 0);
  vals(a)[0] = -1;
  vals(a)[4] = -2;  /* 3 rows between: joined */
  vals(a)[20] = -3; /* 15 rows between: apart */
  orion_shard_publish(&own, 0, own.nchunks, 0, &counter);
  cr_assert_eq(orion_shard_changed(&own, req.have, out), 2);
  cr_assert(out[0].row == 0 && out[0].len == 5 * 8);
  cr_assert(out[1].row == 20 && out[1].len == 8);
  for (k = 0; k < 2; k++)
    cr_assert_eq(orion_shard_install(&req, &out[k]), 0);
  cr_assert_eq(memcmp(vals(a), vals(b), 2048 * 8), 0);
  orion_shard_clear(&own);
  orion_shard_clear(&req);
  orion_array_release(a);
  orion_array_release(b);
}
