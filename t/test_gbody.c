/* Running a block "on the device" (executor/exec_gbody.c) without one: this
 * test defines every function of gpu/gpu.h itself (device memory is host
 * memory, copies are memcpy), so liborion.a's backend is not linked in,
 * and plays the device body with a C function that follows util/gbody.h:
 * steps in order, the groups of a step (checked for disjoint rows and
 * columns), each group's elements in order, partials per group.  Checks
 * the executor's side: what is uploaded, the grid, the partials folded in
 * group order, only the arrays the body writes downloaded, device copies
 * reused across blocks, and the CPU path's error message. */
#include "t/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/array.h"
#include "gpu/gpu.h"
#include "executor/exec.h"
#include "executor/exec_gbody.h"
#include "executor/exec_cbody.h"
#include "executor/exec_int.h" /* the CPU body, for its math.random state */

/* ---- a host "device" ---------------------------------------------------- */

struct orion_gpu {
  orion_gpu_info info;
  uint64_t in_use;
  int allocs;
};

static orion_gpu fake;

int orion_gpu_built(void) { return 1; }
int orion_gpu_count(const char **why) {
  (void)why;
  return 1;
}
int orion_gpu_open(int index, uint64_t cap, orion_gpu **out, orion_error *e) {
  (void)index, (void)cap, (void)e;
  *out = &fake;
  return 0;
}
void orion_gpu_close(orion_gpu *g) { (void)g; }
const orion_gpu_info *orion_gpu_info_of(const orion_gpu *g) {
  return &g->info;
}
void orion_gpu_describe(const orion_gpu *g, char *out, size_t n) {
  (void)g;
  snprintf(out, n, "host pretending");
}
/* Each allocation keeps its size before it, so that a free gives its
 * bytes back; past the cap an allocation fails as the real one does. */
int orion_gpu_alloc(orion_gpu *g, size_t bytes, const char *what, void **d,
                    orion_error *e) {
  size_t *p;
  if (g->info.cap_bytes > 0 && g->in_use + bytes > g->info.cap_bytes)
    return orion_error_set(e, ORION_ENOMEM, "over the cap allocating %s",
                           what);
  p = malloc(bytes + 16);
  if (p == NULL)
    return ORION_ENOMEM;
  p[0] = bytes;
  *d = (char *)p + 16;
  g->in_use += bytes;
  g->allocs++;
  return 0;
}
void orion_gpu_free(orion_gpu *g, void *d) {
  if (d == NULL)
    return;
  g->in_use -= *(size_t *)((char *)d - 16);
  free((char *)d - 16);
}
uint64_t orion_gpu_in_use(const orion_gpu *g) { return g->in_use; }
int orion_gpu_host_alloc(orion_gpu *g, size_t bytes, void **h, orion_error *e) {
  (void)g, (void)e;
  *h = malloc(bytes);
  return 0;
}
void orion_gpu_host_free(orion_gpu *g, void *h) {
  (void)g;
  free(h);
}
static size_t h2d_bytes; /* copied in, over the test */

int orion_gpu_h2d(orion_gpu *g, void *dst, const void *src, size_t n,
                  orion_error *e) {
  (void)g, (void)e;
  h2d_bytes += n;
  memcpy(dst, src, n);
  return 0;
}
int orion_gpu_d2h(orion_gpu *g, void *dst, const void *src, size_t n,
                  orion_error *e) {
  (void)g, (void)e;
  memcpy(dst, src, n);
  return 0;
}
int orion_gpu_h2d_async(orion_gpu *g, void *dst, const void *src, size_t n,
                        int copy, orion_error *e) {
  (void)copy;
  return orion_gpu_h2d(g, dst, src, n, e);
}
int orion_gpu_d2h_async(orion_gpu *g, void *dst, const void *src, size_t n,
                        int copy, orion_error *e) {
  (void)copy;
  return orion_gpu_d2h(g, dst, src, n, e);
}
int orion_gpu_memset(orion_gpu *g, void *dst, int byte, size_t n,
                     orion_error *e) {
  (void)g, (void)e;
  memset(dst, byte, n);
  return 0;
}
void *orion_gpu_stream(orion_gpu *g) {
  (void)g;
  return NULL;
}
void *orion_gpu_copy_stream(orion_gpu *g) {
  (void)g;
  return NULL;
}
int orion_gpu_sync(orion_gpu *g, int copy, double t, orion_error *e) {
  (void)g, (void)copy, (void)t, (void)e;
  return 0;
}
int orion_gpu_order(orion_gpu *g, orion_error *e) {
  (void)g, (void)e;
  return 0;
}
void *orion_gpu_cublas(orion_gpu *g, orion_error *e) {
  (void)g, (void)e;
  return NULL;
}

/* ---- the "device body" ---------------------------------------------------
 * for (i, j, v): W[i] += v; C[j] += 1 (integers); acc:add(v); reads H[j]
 * (poisoned on the device, never written: must not come back); v == 99
 * fails with "boom". */

static int64_t visits[64];
static int max_step_groups, calls, total_visits, claimed_calls;
static int device_fails; /* the "device" fails with no element to blame */

static int body_writes(int k) { return k == 0 || k == 2; } /* W and C */

static int fake_body(orion_gctx *g) {
  int64_t s, gi, e;
  const int64_t *keys = g->iter.keys;
  const double *vals = g->iter.values;
  double *W = g->arrays[0].values, *H = g->arrays[1].values;
  int64_t *C = g->arrays[2].values;
  cr_assert_eq(g->abi, ORION_GBODY_ABI);
  cr_assert_eq(g->naccs, 1);
  /* The groups' partials start empty but need their accumulator's op. */
  cr_assert(g->accs != NULL, "no accumulator descriptors");
  cr_assert_eq(g->accs[0].op, ORION_ACC_SUM);
  cr_assert_eq(g->arrays[1].type, 1); /* f64 */
  cr_assert(g->d_scratch != NULL);
  if (device_fails) {
    snprintf(g->err, sizeof g->err, "kernel timed out after 600 s");
    return 1; /* cur stays -1 */
  }
  H[0] = -12345; /* device-side change of a read-only array */
  calls++;
  if (g->claim_b > 0) {
    /* Claimed (a 2d rotation): the row lists the executor uploaded hold
     * every group once, rows in turn, each row's columns distinct. */
    static unsigned char seen[4096];
    int64_t rw, x;
    claimed_calls++;
    cr_assert_eq(g->d_row_off[0], 0);
    cr_assert_eq(g->d_row_off[g->claim_b], g->ngroups);
    cr_assert_leq(g->ngroups, (int64_t)sizeof seen);
    memset(seen, 0, sizeof seen);
    for (rw = 0; rw < g->claim_b; rw++)
      for (x = g->d_row_off[rw]; x < g->d_row_off[rw + 1]; x++) {
        int64_t y;
        gi = g->d_row_group[x];
        cr_assert(gi >= 0 && gi < g->ngroups && !seen[gi], "group %lld",
                  (long long)gi);
        seen[gi] = 1;
        for (y = g->d_row_off[rw]; y < x; y++)
          cr_assert_neq(g->d_row_col[y], g->d_row_col[x]);
      }
  }
  for (s = 0; s < g->nsteps; s++) {
    int64_t n = g->h_step_off[s + 1] - g->h_step_off[s];
    if (n > max_step_groups)
      max_step_groups = (int)n;
    for (gi = g->h_step_off[s]; gi < g->h_step_off[s + 1]; gi++) {
      orion_cacc *p = &g->h_partials[gi * g->naccs];
      memset(p, 0, sizeof *p);
      for (e = g->d_group_off[gi]; e < g->d_group_off[gi + 1]; e++) {
        int64_t pos = g->d_order[e], i = keys[2 * pos], j = keys[2 * pos + 1];
        if (vals[pos] == 99) {
          snprintf(g->err, sizeof g->err, "boom");
          g->cur = pos;
          return 1;
        }
        visits[pos]++;
        total_visits++;
        W[i] += vals[pos];
        C[j] += 1;
        p->has = 1;
        p->d += vals[pos];
      }
    }
  }
  return 0;
}

static int dummy_cbody(orion_cctx *c, int64_t lo, int64_t hi) {
  (void)c, (void)lo, (void)hi;
  return 0;
}

/* The device grid of the fixture's loop: a 2d rotation over (i, j). */
static orion_gpugrid_in rotation(void) {
  orion_gpugrid_in grid;
  memset(&grid, 0, sizeof grid);
  grid.kind = ORION_GPUGRID_2D;
  grid.space = 0;
  grid.time = 1;
  grid.skew_dim = -1;
  return grid;
}

typedef struct fixture {
  orion_exec *ex;
  orion_array *R, *W, *H, *C;
} fixture;

/* R: 40 ratings on a 6 x 5 grid (value = 1 + pos % 4, or 99 at bad). */
static void setup(fixture *f, int bad) {
  static const orion_cslot slots[4] = {
      {ORION_CSLOT_ARRAY, NULL, 2, 0, 0, 0, 0},
      {ORION_CSLOT_ARRAY, NULL, 3, 0, 0, 0, 0},
      {ORION_CSLOT_ARRAY, NULL, 4, 0, 0, 0, 0},
      {ORION_CSLOT_ACC, NULL, 7, 0, 0, 0, 0}};
  int64_t d6[1] = {6}, d5[1] = {5}, k[2], p;
  orion_error err;
  orion_gpugrid_in grid;
  orion_error_clear(&err);
  f->R = orion_array_new_sparse(2, ORION_F64, &err);
  for (p = 0; p < 40; p++) {
    double v = p == bad ? 99 : (double)(1 + p % 4);
    k[0] = (p * 7) % 6;
    k[1] = (p * 3) % 5;
    cr_assert_eq(orion_array_push(f->R, k, &v), 0);
  }
  f->W = orion_array_new_dense(1, d6, ORION_F64, &err);
  f->H = orion_array_new_dense(1, d5, ORION_F64, &err);
  f->C = orion_array_new_dense(1, d5, ORION_I64, &err);
  cr_assert(f->R && f->W && f->H && f->C, "%s", err.msg);
  f->ex = orion_exec_new(3);
  cr_assert_eq(orion_exec_bind_array(f->ex, 1, f->R), 0);
  cr_assert_eq(orion_exec_bind_array(f->ex, 2, f->W), 0);
  cr_assert_eq(orion_exec_bind_array(f->ex, 3, f->H), 0);
  cr_assert_eq(orion_exec_bind_array(f->ex, 4, f->C), 0);
  cr_assert_eq(orion_exec_bind_acc(f->ex, 7, ORION_ACC_SUM), 0);
  cr_assert_eq(orion_exec_set_compiled(f->ex, dummy_cbody, slots, 4), 0);
  cr_assert_eq(orion_exec_gpu_ready(f->ex), 0); /* no device yet */
  orion_exec_set_gpu(f->ex, &fake);
  grid = rotation();
  orion_exec_set_gbody(f->ex, fake_body, body_writes, &grid);
  orion_exec_set_gclaim(f->ex, 1); /* a fast body */
  setenv("ORION_GPU_CLAIM", "1", 1); /* claimed (2d rotations) */
  cr_assert_eq(orion_exec_gpu_ready(f->ex), 1);
  memset(visits, 0, sizeof visits);
  max_step_groups = calls = total_visits = claimed_calls = 0;
  device_fails = 0;
  fake.info.cap_bytes = (uint64_t)1 << 40;
}

static void teardown_f(fixture *f) {
  orion_exec_free(f->ex);
  orion_array_release(f->R);
  orion_array_release(f->W);
  orion_array_release(f->H);
  orion_array_release(f->C);
}

Test(gbody, block_runs_on_the_device_grid) {
  fixture f;
  orion_segment segs[2] = {{0, 25}, {25, 40}};
  orion_error err;
  orion_accval acc;
  double w[6] = {0};
  int64_t c[5] = {0}, p;
  int allocs;
  setup(&f, -1);
  for (p = 0; p < 40; p++) {
    w[(p * 7) % 6] += (double)(1 + p % 4);
    c[(p * 3) % 5] += 1;
  }
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, segs, 2, 7, 0, &err), 0, "%s", err.msg);
  for (p = 0; p < 40; p++)
    cr_assert_eq(visits[p], 1, "element %lld visited %lld times",
                 (long long)p, (long long)visits[p]);
  cr_assert_gt(max_step_groups, 1); /* some concurrency */
  cr_assert_eq(claimed_calls, 1, "a 2d rotation runs claimed");
  for (p = 0; p < 6; p++)
    cr_assert_eq(((double *)f.W->values)[p], w[p]);
  for (p = 0; p < 5; p++) {
    cr_assert_eq(((int64_t *)f.C->values)[p], c[p]);
    cr_assert_eq(((double *)f.H->values)[p], 0.0,
                 "H is read only: its device copy must not come back");
  }
  cr_assert_eq(orion_exec_take_acc(f.ex, 7, &acc), 0);
  cr_assert(acc.has && !acc.isint);
  cr_assert_eq(acc.d, 100.0); /* 10 x (1 + 2 + 3 + 4) */
  cr_assert_eq(orion_exec_gpu_blocks(f.ex), 1);
  /* A second block reuses the device copies (same sizes). */
  allocs = fake.allocs;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, segs, 1, 7, 0, &err), 0, "%s", err.msg);
  cr_assert_eq(fake.allocs, allocs, "device copies were allocated again");
  cr_assert_eq(orion_exec_gpu_blocks(f.ex), 2);
  cr_assert_eq(orion_exec_gpu_take_blocks(f.ex), 2); /* LOOP_DONE's count */
  cr_assert_eq(orion_exec_gpu_take_blocks(f.ex), 0);
  cr_assert_eq(claimed_calls, 2);
  /* Without ORION_GPU_CLAIM=1: the steps. */
  unsetenv("ORION_GPU_CLAIM");
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, segs, 1, 7, 0, &err), 0, "%s", err.msg);
  cr_assert_eq(claimed_calls, 2, "claimed without ORION_GPU_CLAIM=1");
  setenv("ORION_GPU_CLAIM", "1", 1);
  /* An exact body: the steps, whose order is the same every run. */
  orion_exec_set_gclaim(f.ex, 0);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, segs, 1, 7, 0, &err), 0, "%s", err.msg);
  cr_assert_eq(claimed_calls, 2, "an exact body's rotation was claimed");
  unsetenv("ORION_GPU_CLAIM");
  teardown_f(&f);
}

Test(gbody, body_error_names_executor_and_element) {
  fixture f;
  orion_segment seg = {0, 40};
  orion_error err;
  setup(&f, 17); /* element 17: keys (17*7 % 6, 17*3 % 5) = (5, 1) */
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), ORION_EBODY);
  cr_assert_str_eq(err.msg, "executor 3, element (6, 2): boom");
  device_fails = 1;
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), ORION_EBODY);
  cr_assert_str_eq(err.msg, "executor 3: the device body failed: kernel "
                            "timed out after 600 s");
  teardown_f(&f);
}

Test(gbody, out_of_range_segment_and_no_body) {
  fixture f;
  orion_segment seg = {0, 41};
  orion_error err;
  setup(&f, -1);
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), ORION_EINVAL);
  cr_assert(strstr(err.msg, "block range out of bounds") != NULL, "%s",
            err.msg);
  orion_exec_set_gbody(f.ex, NULL, NULL, NULL); /* a new loop without one */
  cr_assert_eq(orion_exec_gpu_ready(f.ex), 0);
  teardown_f(&f);
}

/* A block whose elements do not fit beside the arrays (a cap leaving room
 * for about 10 of its 40): it runs in several calls of the body over
 * chunks of whole groups, each element once, with the results of one
 * call; an error names the element by its key, as unstreamed. */
Test(gbody, block_larger_than_device_memory_streams) {
  fixture f;
  orion_segment seg = {0, 40};
  orion_error err;
  orion_accval acc;
  double w[6] = {0};
  int64_t c[5] = {0}, p;
  setup(&f, -1);
  for (p = 0; p < 40; p++) {
    w[(p * 7) % 6] += (double)(1 + p % 4);
    c[(p * 3) % 5] += 1;
  }
  /* W, H, C: 128 bytes; 4160 for the scratch's error record; 88 bytes
   * an element in a chunk. */
  fake.info.cap_bytes = fake.in_use + 128 + 4160 + 10 * 88;
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  cr_assert_geq(calls, 4, "%d calls of the body", calls);
  cr_assert_eq(total_visits, 40);
  for (p = 0; p < 6; p++)
    cr_assert_eq(((double *)f.W->values)[p], w[p]);
  for (p = 0; p < 5; p++) {
    cr_assert_eq(((int64_t *)f.C->values)[p], c[p]);
    cr_assert_eq(((double *)f.H->values)[p], 0.0);
  }
  cr_assert_eq(orion_exec_take_acc(f.ex, 7, &acc), 0);
  cr_assert_eq(acc.d, 100.0);
  cr_assert_leq(fake.in_use, fake.info.cap_bytes);
  teardown_f(&f);
  setup(&f, 17);
  fake.info.cap_bytes = fake.in_use + 128 + 4160 + 10 * 88;
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), ORION_EBODY);
  cr_assert_str_eq(err.msg, "executor 3, element (6, 2): boom");
  teardown_f(&f);
  /* No room for even one group: a message that says what to change. */
  setup(&f, -1);
  fake.info.cap_bytes = fake.in_use + 128 + 100;
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), ORION_ENOMEM);
  cr_assert(strstr(err.msg, "raise --gpu-memory or use more partitions") !=
                NULL,
            "%s", err.msg);
  teardown_f(&f);
}

/* With the body's orion_gbody_rowkey, a block copies in (and back) only
 * the rows of W, H and C its elements' keys reach, and gets the same
 * results; an array the body reaches otherwise moves whole. */
static int rowkey_all(int k) { return k == 0 ? 0 : 1; } /* W[i], H[j], C[j] */
static int rowkey_w_only(int k) { return k == 0 ? 0 : -1; }

Test(gbody, a_block_moves_only_the_rows_it_reaches) {
  fixture f;
  /* Elements 0 and 1: keys (0, 0) and (1, 3): W rows 0-1, H and C 0-3. */
  orion_segment seg = {0, 2};
  orion_error err;
  size_t whole, rows;
  int pass;
  for (pass = 0; pass < 3; pass++) {
    setup(&f, -1);
    ((double *)f.W->values)[5] = 7.0; /* outside the block's rows */
    if (pass == 1)
      orion_exec_set_growkey(f.ex, rowkey_all);
    if (pass == 2)
      orion_exec_set_growkey(f.ex, rowkey_w_only);
    h2d_bytes = 0;
    orion_error_clear(&err);
    cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(((double *)f.W->values)[0], 1.0); /* element 0: v = 1 */
    cr_assert_eq(((double *)f.W->values)[1], 2.0); /* element 1: v = 2 */
    cr_assert_eq(((double *)f.W->values)[5], 7.0);
    cr_assert_eq(((int64_t *)f.C->values)[0], 1);
    cr_assert_eq(((int64_t *)f.C->values)[3], 1);
    cr_assert_eq(((int64_t *)f.C->values)[4], 0);
    cr_assert_eq(total_visits, 2);
    if (pass == 0)
      whole = h2d_bytes;
    else if (pass == 1)
      rows = h2d_bytes;
    else /* W's 2 rows of 6, H and C whole (5 each) */
      cr_assert_eq(whole - h2d_bytes, 4 * sizeof(double));
    teardown_f(&f);
  }
  /* W: 2 rows of 6; H, C: 4 of 5: 4 + 1 + 1 rows of 8 bytes fewer. */
  cr_assert_eq(whole - rows, 6 * sizeof(double), "%zu vs %zu", whole, rows);
}

/* The iterated array read through its own upvalue, as in
 *   for (i, j, v) in A: if j > 1 then return (A[i][j - 1] * 3 + v) % 1000
 * with the read's row key i (orion_gbody_rowkey 0): the body must read the
 * elements the block has already replaced, so the upvalue's slot shares the
 * iterated array's device copy and never gets a rows-only window of its
 * own (it did: the chain read the host's old values, found on the H200). */
static int left_rowkey(int k) { return k == 0 ? 0 : -1; }
static int left_writes(int k) { return k == -1; }

static int left_body(orion_gctx *g) {
  int64_t s, gi, e;
  double *vals = g->iter.values; /* dense: no keys, pos = i * 5 + j */
  const double *A = g->arrays[0].values;
  for (s = 0; s < g->nsteps; s++)
    for (gi = g->h_step_off[s]; gi < g->h_step_off[s + 1]; gi++)
      for (e = g->d_group_off[gi]; e < g->d_group_off[gi + 1]; e++) {
        int64_t pos = g->d_order[e], i = pos / 5, j = pos % 5;
        if (j > 0)
          vals[pos] = fmod(A[i * 5 + j - 1] * 3 + vals[pos], 1000);
      }
  return 0;
}

Test(gbody, the_iterated_array_read_through_its_upvalue_sees_its_writes) {
  static const orion_cslot slots[1] = {{ORION_CSLOT_ARRAY, NULL, 1, 0, 0, 0, 0}};
  int64_t dims[2] = {4, 5}, p, i, j;
  double want[20];
  orion_segment seg = {5, 15}; /* rows 1 and 2: a window of the 4 rows */
  orion_gpugrid_in grid;
  orion_error err;
  orion_exec *ex;
  orion_array *A;
  int pass;
  for (pass = 0; pass < 2; pass++) {
    orion_error_clear(&err);
    A = orion_array_new_dense(2, dims, ORION_F64, &err);
    cr_assert(A != NULL, "%s", err.msg);
    for (p = 0; p < 20; p++)
      ((double *)A->values)[p] = want[p] = (double)(p * 7 % 11 + 1);
    for (i = 1; i <= 2; i++) /* the serial run */
      for (j = 1; j < 5; j++)
        want[i * 5 + j] = fmod(want[i * 5 + j - 1] * 3 + want[i * 5 + j], 1000);
    ex = orion_exec_new(0);
    cr_assert_eq(orion_exec_bind_array(ex, 1, A), 0);
    cr_assert_eq(orion_exec_set_compiled(ex, dummy_cbody, slots, 1), 0);
    orion_exec_set_gpu(ex, &fake);
    memset(&grid, 0, sizeof grid);
    grid.kind = ORION_GPUGRID_1D;
    grid.space = 0;
    grid.skew_dim = -1;
    orion_exec_set_gbody(ex, left_body, left_writes, &grid);
    if (pass == 1)
      orion_exec_set_growkey(ex, left_rowkey);
    fake.info.cap_bytes = (uint64_t)1 << 40;
    cr_assert_eq(orion_exec_run_gpu(ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
    for (p = 0; p < 20; p++)
      cr_assert_eq(((double *)A->values)[p], want[p],
                   "pass %d, element %lld: %g, the serial run %g", pass,
                   (long long)p, ((double *)A->values)[p], want[p]);
    orion_exec_free(ex);
    orion_array_release(A);
  }
}

/* A block run again finds its grid kept (executor/exec_gmemo.h): its keys and
 * grid are not copied in again; once its keys change it is built again
 * and gives the new keys' result; ORION_GPU_GRID_CACHE=0 keeps none. */
Test(gbody, a_block_run_again_reuses_its_grid_until_its_keys_change) {
  fixture f;
  orion_segment seg = {0, 40};
  orion_error err;
  size_t first, again, none;
  double w[6] = {0};
  int64_t p;
  setup(&f, -1);
  orion_error_clear(&err);
  h2d_bytes = 0;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  first = h2d_bytes;
  h2d_bytes = 0;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  again = h2d_bytes;
  /* Not again: 40 keys of 16 bytes, 40 positions of 8, the offsets. */
  cr_assert_geq(first - again, 40 * 16 + 40 * 8, "%zu then %zu", first,
                again);
  cr_assert_eq(total_visits, 80);
  /* Element 0 moves from (0, 0) to (5, 4): W[5] gets its value. */
  f.R->keys[0] = 5;
  f.R->keys[1] = 4;
  for (p = 0; p < 6; p++)
    ((double *)f.W->values)[p] = 0;
  for (p = 0; p < 40; p++)
    w[f.R->keys[2 * p]] += ((double *)f.R->values)[p];
  h2d_bytes = 0;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  cr_assert_eq(h2d_bytes, first, "changed keys were not copied in again");
  for (p = 0; p < 6; p++)
    cr_assert_eq(((double *)f.W->values)[p], w[p], "W[%lld]: %g, want %g",
                 (long long)p, ((double *)f.W->values)[p], w[p]);
  teardown_f(&f);
  setenv("ORION_GPU_GRID_CACHE", "0", 1);
  setup(&f, -1);
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  h2d_bytes = 0;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s", err.msg);
  none = h2d_bytes;
  unsetenv("ORION_GPU_GRID_CACHE");
  teardown_f(&f);
  cr_assert_eq(none, first, "ORION_GPU_GRID_CACHE=0 kept a grid");
}

/* ---- buffers and math.random on the "device" -----------------------------
 * A body that, for each rating (i, j, v), adds 1 to an i64 buffer at j and
 * v to an f64 one at i, through the device sums util/gbody.h lays out
 * (what o_gbadd does), and adds `big` to an i32 "replace" buffer at 1. */

static uint64_t dev_rng[4], cpu_rng[4];
static int64_t dev_group0;
static int64_t big;

static int buf_body(orion_gctx *g) {
  int64_t s, gi, e;
  const int64_t *keys = g->iter.keys;
  const double *vals = g->iter.values;
  cr_assert_eq(g->abi, ORION_GBODY_ABI);
  cr_assert_eq(g->nbufs, 3);
  cr_assert_eq(g->bufs[0].type, ORION_I64);
  cr_assert_eq(g->bufs[1].type, ORION_F64);
  cr_assert_eq(g->bufs[0].dims[0], 5);
  cr_assert_eq(g->bufs[1].dims[0], 6);
  memcpy(dev_rng, g->rng, sizeof dev_rng);
  dev_group0 = g->group0;
  for (s = 0; s < g->nsteps; s++)
    for (gi = g->h_step_off[s]; gi < g->h_step_off[s + 1]; gi++)
      for (e = g->d_group_off[gi]; e < g->d_group_off[gi + 1]; e++) {
        int64_t pos = g->d_order[e], i = keys[2 * pos], j = keys[2 * pos + 1];
        int64_t *ti = g->bufs[0].h;
        double *fd = g->bufs[1].h;
        int64_t *ri = g->bufs[2].h;
        ti[j] += 1;
        ((unsigned char *)g->bufs[0].h)[5 * 8 + j] = 1;
        fd[i] += vals[pos];
        ((unsigned char *)g->bufs[1].h)[6 * 8 + i] = 1;
        if (big != 0) {
          ri[0] += big;
          ((unsigned char *)g->bufs[2].h)[2 * 8] = 1;
        }
      }
  return 0;
}

/* The CPU's compiled body: what math.random starts from. */
static int rng_cbody(orion_cctx *c, int64_t lo, int64_t hi) {
  (void)lo, (void)hi;
  memcpy(cpu_rng, c->rng, sizeof cpu_rng);
  return 0;
}

static void buf_setup(fixture *f, int64_t flush) {
  static const orion_cslot slots[3] = {{ORION_CSLOT_BUFFER, NULL, 10, 0, 0, 0, 0},
                                       {ORION_CSLOT_BUFFER, NULL, 11, 0, 0, 0, 0},
                                       {ORION_CSLOT_BUFFER, NULL, 12, 0, 0, 0, 0}};
  int64_t d2[1] = {2};
  orion_error err;
  orion_gpugrid_in grid;
  setup(f, -1);
  orion_error_clear(&err);
  /* Targets: C (i64, 5), W (f64, 6), and a 2-element i32 one. */
  f->H = (orion_array_release(f->H), orion_array_new_dense(1, d2, ORION_I32,
                                                           &err));
  cr_assert_eq(orion_exec_bind_array(f->ex, 3, f->H), 0);
  cr_assert_eq(orion_exec_bind_buffer(f->ex, 10, "TB", 4, ORION_APPLY_ADD,
                                      NULL, 0, ORION_FLUSH_LOOP, &err),
               0, "%s", err.msg);
  cr_assert_eq(orion_exec_bind_buffer(f->ex, 11, "GB", 2, ORION_APPLY_ADD,
                                      NULL, 0, flush, &err),
               0, "%s", err.msg);
  cr_assert_eq(orion_exec_bind_buffer(f->ex, 12, "RB", 3,
                                      ORION_APPLY_REPLACE, NULL, 0,
                                      ORION_FLUSH_LOOP, &err),
               0, "%s", err.msg);
  cr_assert_eq(orion_exec_set_compiled(f->ex, rng_cbody, slots, 3), 0);
  grid = rotation();
  orion_exec_set_gbody(f->ex, buf_body, NULL, &grid);
  unsetenv("ORION_GPU_CLAIM");
  big = 0;
}

Test(gbody, buffer_sums_on_the_device_join_the_pending_writes) {
  fixture f;
  orion_segment seg = {0, 40};
  orion_error err;
  const double *W;
  const int64_t *C;
  double w[6] = {0};
  int64_t c[5] = {0}, p;
  buf_setup(&f, ORION_FLUSH_LOOP);
  cr_assert_eq(orion_exec_gpu_ready(f.ex), 1);
  for (p = 0; p < 40; p++) {
    w[(p * 7) % 6] += (double)(1 + p % 4);
    c[(p * 3) % 5] += 1;
  }
  orion_error_clear(&err);
  /* Two blocks' worth: the second adds to what the first left pending. */
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 0, &err), 0, "%s",
               err.msg);
  cr_assert_eq(orion_exec_buffer_pending(f.ex, 10), 5);
  cr_assert_eq(orion_exec_buffer_pending(f.ex, 11), 6);
  cr_assert_eq(orion_exec_buffer_pending(f.ex, 12), 0,
               "an element the body never added to is not pending");
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 1, &err), 0, "%s",
               err.msg);
  /* Nothing reached the targets before the flush. */
  C = f.C->values;
  W = f.W->values;
  for (p = 0; p < 5; p++)
    cr_assert_eq(C[p], 0);
  cr_assert_eq(orion_exec_flush(f.ex, 1, &err), 0, "%s", err.msg);
  for (p = 0; p < 5; p++)
    cr_assert_eq(C[p], 2 * c[p], "C[%lld] = %lld, want %lld", (long long)p,
                 (long long)C[p], (long long)(2 * c[p]));
  for (p = 0; p < 6; p++)
    cr_assert_eq(W[p], 2 * w[p], "W[%lld] = %g, want %g", (long long)p, W[p],
                 2 * w[p]);
  cr_assert_eq(orion_exec_buffer_pending(f.ex, 10), 0);
  /* An i32 "replace" buffer's sum must fit, as the CPU body checks. */
  big = 3000000000;
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 2, &err), ORION_EBODY);
  cr_assert(strstr(err.msg, "cannot store 120000000000 in i32 buffer 'RB': "
                            "out of range") != NULL,
            "%s", err.msg);
  teardown_f(&f);
}

Test(gbody, a_buffer_flushing_every_n_elements_keeps_its_blocks_on_the_cpu) {
  fixture f;
  buf_setup(&f, 5);
  cr_assert_eq(orion_exec_gpu_ready(f.ex), 0);
  orion_exec_unbind_buffer(f.ex, 11);
  cr_assert_eq(orion_exec_gpu_ready(f.ex), 1);
  teardown_f(&f);
}

Test(gbody, math_random_starts_from_the_cpu_bodys_state) {
  fixture f;
  orion_segment seg = {0, 40};
  orion_error err;
  uint64_t a[4], b[4], s0[4], s1[4], seen[64][4];
  int i, k;
  buf_setup(&f, ORION_FLUSH_LOOP);
  orion_error_clear(&err);
  /* The device's block state is the CPU body's for the same block. */
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 3, &err), 0, "%s",
               err.msg);
  cr_assert_eq(dev_group0, 0);
  memcpy(a, dev_rng, sizeof a);
  cr_assert_eq(orion__exec_run_compiled(f.ex, f.R, 0, 40, 7, 3, &err), 0,
               "%s", err.msg);
  cr_assert_eq(memcmp(a, cpu_rng, sizeof a), 0,
               "the device's block state is not the CPU body's");
  cr_assert_eq(orion_exec_run_gpu(f.ex, 1, &seg, 1, 7, 4, &err), 0, "%s",
               err.msg);
  memcpy(b, dev_rng, sizeof b);
  cr_assert_neq(memcmp(a, b, sizeof a), 0, "blocks 3 and 4 draw alike");
  /* Group 0 draws from the block's state; every other group from its own,
   * the same on every call. */
  orion_gbody_seed(a, 0, s0);
  cr_assert_eq(memcmp(s0, a, sizeof a), 0);
  for (i = 0; i < 64; i++) {
    orion_gbody_seed(a, i + 1, seen[i]);
    orion_gbody_seed(a, i + 1, s1);
    cr_assert_eq(memcmp(seen[i], s1, sizeof s1), 0);
    cr_assert_neq(memcmp(seen[i], a, sizeof a), 0);
    for (k = 0; k < i; k++)
      cr_assert_neq(memcmp(seen[i], seen[k], sizeof s1), 0,
                    "groups %d and %d share a state", i + 1, k + 1);
  }
  teardown_f(&f);
}
