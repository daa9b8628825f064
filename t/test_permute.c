/* Permuted keys (dsm/perm.c, lua/permute.c, apps/mf/mf.lua --permute): the
 * permutation is a bijection made from (n, seed) alone; remapping moves
 * elements and inverts exactly; scripts see the original keys on 0, 1, 2
 * and 4 executors (t/scripts/permute.lua); errors name the arrays
 * (t/scripts/permute_errors.lua); MF trains as well with --permute and
 * saves a model at the original ids. */
#include "t/testutil.h"

#include "dsm/perm.h"
#include "dsm/ragged.h"

#include <math.h>

/* Every key appears once, inv undoes fwd, the same (n, seed) gives the
 * same permutation, another seed or size another one, and small n work. */
Test(permute, perm_is_a_deterministic_bijection) {
  static const int64_t sizes[] = {1, 2, 3, 10, 1000, 6040};
  orion_error err;
  size_t s;
  int64_t k;
  orion_error_clear(&err);
  for (s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int64_t n = sizes[s];
    orion_perm *p = orion_perm_new(n, 7, &err), *q = orion_perm_new(n, 7, &err);
    orion_perm *r = orion_perm_new(n, 8, &err);
    char *seen = calloc((size_t)n, 1);
    int64_t moved = 0, differ = 0;
    cr_assert(p != NULL && q != NULL && r != NULL, "%s", err.msg);
    for (k = 0; k < n; k++) {
      cr_assert(p->fwd[k] >= 0 && p->fwd[k] < n);
      cr_assert_eq(seen[p->fwd[k]], 0, "n=%ld: %ld appears twice", (long)n,
                   (long)p->fwd[k]);
      seen[p->fwd[k]] = 1;
      cr_assert_eq(p->inv[p->fwd[k]], k);
      cr_assert_eq(q->fwd[k], p->fwd[k], "n=%ld: not deterministic", (long)n);
      moved += p->fwd[k] != k;
      differ += r->fwd[k] != p->fwd[k];
    }
    if (n >= 1000) { /* a random permutation moves almost every key */
      cr_expect_gt(moved, n * 9 / 10, "n=%ld: only %ld keys moved", (long)n,
                   (long)moved);
      cr_expect_gt(differ, n * 9 / 10, "n=%ld: seeds 7 and 8 agree on %ld",
                   (long)n, (long)(n - differ));
    }
    cr_expect(orion_perm_same(p, q));
    cr_expect_not(orion_perm_same(p, r));
    cr_expect_not(orion_perm_same(p, NULL));
    cr_expect(orion_perm_same(NULL, NULL));
    free(seen);
    orion_perm_release(p);
    orion_perm_release(q);
    orion_perm_release(r);
  }
  cr_expect_null(orion_perm_new(0, 1, &err));
  cr_expect_str_eq(err.msg, "a permutation needs at least one key, not 0");
}

/* The values of the permutation of 10 keys with seed 1, fixed here so that
 * a change of generator (which would change every permuted job's blocks)
 * is seen; t/scripts/permute.lua prints the same, 1-based. */
Test(permute, perm_values_are_fixed) {
  static const int64_t want[] = {1, 7, 5, 0, 2, 4, 9, 3, 6, 8};
  orion_error err;
  orion_perm *p = orion_perm_new(10, 1, &err);
  int k;
  cr_assert_not_null(p);
  for (k = 0; k < 10; k++)
    cr_expect_eq(p->fwd[k], want[k], "key %d -> %ld", k, (long)p->fwd[k]);
  orion_perm_release(p);
}

/* A dense 4x3 array's rows move to fwd[row] and back exactly; along
 * dimension 2 its columns do. */
Test(permute, remap_dense_moves_slices_and_inverts) {
  int64_t dims[2] = {4, 3}, i, j;
  orion_error err;
  orion_array *a = orion_array_new_dense(2, dims, ORION_F64, &err);
  orion_perm *p = orion_perm_new(4, 3, &err), *q = orion_perm_new(3, 3, &err);
  double *v;
  cr_assert(a != NULL && p != NULL && q != NULL);
  for (i = 0; i < 12; i++)
    ((double *)a->values)[i] = (double)i;
  cr_assert_eq(orion_array_remap(a, 0, p->fwd, &err), 0);
  v = a->values;
  for (i = 0; i < 4; i++)
    for (j = 0; j < 3; j++)
      cr_expect_eq(v[p->fwd[i] * 3 + j], (double)(i * 3 + j));
  cr_assert_eq(orion_array_remap(a, 1, q->fwd, &err), 0);
  v = a->values;
  for (i = 0; i < 4; i++)
    for (j = 0; j < 3; j++)
      cr_expect_eq(v[p->fwd[i] * 3 + q->fwd[j]], (double)(i * 3 + j));
  cr_assert_eq(orion_array_remap(a, 1, q->inv, &err), 0);
  cr_assert_eq(orion_array_remap(a, 0, p->inv, &err), 0);
  for (i = 0; i < 12; i++)
    cr_expect_eq(((double *)a->values)[i], (double)i);
  orion_perm_release(p);
  orion_perm_release(q);
  orion_array_release(a);
}

/* A sparse array's keys are rewritten in storage order; a ragged array's
 * rows are sorted again after its rows are permuted, and the inverse
 * gives the original elements back. */
Test(permute, remap_sparse_and_ragged) {
  static const int64_t keys[] = {0, 1, 0, 2, 1, 0, 2, 2};
  static const double vals[] = {1, 2, 3, 4};
  orion_error err;
  orion_array *a = orion_array_new_sparse(2, ORION_F64, &err);
  orion_perm *p = orion_perm_new(3, 5, &err);
  int i;
  cr_assert(a != NULL && p != NULL);
  for (i = 0; i < 4; i++)
    cr_assert_eq(orion_array_push(a, keys + 2 * i, vals + i), 0);
  cr_assert_eq(orion_array_remap(a, 0, p->fwd, &err), 0);
  for (i = 0; i < 4; i++) {
    cr_expect_eq(a->keys[2 * i], p->fwd[keys[2 * i]]);
    cr_expect_eq(a->keys[2 * i + 1], keys[2 * i + 1]);
    cr_expect_eq(((double *)a->values)[i], vals[i]);
  }
  cr_assert_eq(orion_array_remap(a, 0, p->inv, &err), 0);
  cr_assert_eq(orion_ragged_make(a, "t", &err), 0);
  cr_assert_eq(orion_array_remap(a, 0, p->fwd, &err), 0, "%s", err.msg);
  cr_expect_eq(a->ragged, 1);
  for (i = 1; i < 4; i++) /* rows ascend again */
    cr_expect_leq(a->keys[2 * (i - 1)], a->keys[2 * i]);
  cr_assert_eq(orion_array_remap(a, 0, p->inv, &err), 0);
  for (i = 0; i < 4; i++) { /* rows 0, 0, 1, 2 in the pushed order */
    cr_expect_eq(a->keys[2 * i], keys[2 * i]);
    cr_expect_eq(a->keys[2 * i + 1], keys[2 * i + 1]);
    cr_expect_eq(((double *)a->values)[i], vals[i]);
  }
  orion_perm_release(p);
  orion_array_release(a);
}

static const char permute_out[] =
    "Permutation(10 keys, seed 1)\t2 8 6 1 3 5 10 4 7 9\n"
    "same object\ttrue\n"
    "DistArray(f64, sparse, 12x12, nnz=78)\tDistArray(f64, sparse, 10x9, "
    "nnz=10)\tDistArray(f64, dense, 12x3, nnz=36)\n"
    "dims\t12x12\t10x9\n"
    "ratings keys kept\ttrue\n"
    "W rows kept\ttrue\n"
    "get/set at original keys\t3.0\t1.0\tnil\n"
    "histogram of original keys\t33 24 15 6\t33 24 15 6\n"
    "map sees original keys\ttrue\n"
    "split keeps them\ttrue\ttrue\ttrue\n"
    "read loop\ttrue\n"
    "counts per user\t12:36 11:33 10:30 9:27 8:24 7:21 6:18 5:15 4:12 3:9 "
    "2:6 1:3\n"
    "sums per item\t38 31 30 25 26 23 16 15 10 11 8 1\n"
    "test loop sees permuted keys\ttrue\n"
    "bin\tDistArray(f64, sparse, 12x12, nnz=78)\tDistArray(f64, sparse, "
    "10x9, nnz=10)\ttrue\ttrue\ttrue\tnil\n"
    "txt\tDistArray(f64, sparse, 12x12, nnz=78)\tDistArray(f64, sparse, "
    "10x9, nnz=10)\ttrue\ttrue\ttrue\tnil\n"
    "# orion-c array f64 sparse dims 10 9\t5 6 1\n";

/* The same output, the original keys everywhere, on every executor count;
 * tier "lua" and the compiled tier agree. */
Test(permute, script_sees_original_keys_on_any_executor_count,
     .timeout = 300) {
  static const char *const execs[] = {"0", "1", "2", "4"};
  size_t i;
  for (i = 0; i < sizeof execs / sizeof *execs; i++) {
    char dir[] = "/tmp/orion-permute-XXXXXX", cmd[64];
    const char *args[] = {"--quiet", "--executors", execs[i],
                          "@permute.lua", dir, NULL};
    tu_run r;
    cr_assert_not_null(mkdtemp(dir));
    r = tu_drive("t/scripts", args, 120);
    cr_assert_eq(r.status, 0, "%s executors: %s", execs[i], r.err);
    cr_expect_str_eq(r.out, permute_out, "%s executors", execs[i]);
    tu_run_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
  }
}

static const char errors_out[] =
    "dimension out of range\tpermute_keys: W: dimension 3 out of range "
    "1..2\n"
    "dimension not an integer\tpermute_keys: W: the dimension must be an "
    "integer, not a string\n"
    "seed not an integer\tpermute_keys: W: the seed (or an "
    "orion.permutation) must be an integer, not 2.5\n"
    "seed a string\tpermute_keys: ratings: the seed (or an "
    "orion.permutation) must be an integer, not a string\n"
    "sizes differ\tpermute_keys: H has 25 keys in dimension 1, the "
    "permutation has 30\n"
    "sparse dim larger\tpermute_keys: ratings has 20 keys in dimension 2, "
    "the permutation has 10 (a sparse array's dimension may be smaller, "
    "not larger)\n"
    "n not positive\torion.permutation: the number of keys must be "
    "positive, not 0\n"
    "n not an integer\torion.permutation: the number of keys must be an "
    "integer, not 1.5\n"
    "twice\tpermute_keys: W: dimension 1 is already permuted by "
    "orion.permutation(30, 9)\n"
    "loop with W not ratings\tparallel_for: W[u][1] (line 23) subscripts "
    "dimension 1 of W (permuted by orion.permutation(30, 9)) with u, "
    "dimension 1 of ratings (not permuted); permute both with the same "
    "permutation (A:permute_keys)\n"
    "loop with H20 unpermuted\tparallel_for: H20[i][1] (line 27) subscripts "
    "dimension 1 of H20 (not permuted) with i, dimension 2 of ratings "
    "(permuted by orion.permutation(20, 3)); permute both with the same "
    "permutation (A:permute_keys)\n"
    "constant subscript\tparallel_for: W[3][1] (line 31) subscripts "
    "dimension 1 of W, whose keys are permuted, with a constant; loop "
    "bodies see permuted keys, so a constant names another element than "
    "on the driver\n"
    "offset subscript\tparallel_for: W[u - 1][1] (line 34) subscripts "
    "dimension 1 of W, whose keys are permuted, with an offset from u; "
    "permuted neighbours are not neighbours\n"
    "a consistent loop\taccepted\n"
    "after a loop\tpermute_keys: ratings has been used by a parallel_for; "
    "permute an array's keys before its first loop\n"
    "W after a loop\tpermute_keys: W has been used by a parallel_for; "
    "permute an array's keys before its first loop\n"
    "ragged\tDistArray(f64, ragged, 2x3, nnz=3)\t2.0\t1.0\tnil\n";

/* Every refusal names the array as the script does, on 0 and 2
 * executors. */
Test(permute, errors_name_the_arrays, .timeout = 120) {
  static const char *const execs[] = {"0", "2"};
  size_t i;
  for (i = 0; i < sizeof execs / sizeof *execs; i++) {
    const char *args[] = {"--quiet", "--executors", execs[i],
                          "@permute_errors.lua", NULL};
    tu_run r = tu_drive("t/scripts", args, 100);
    cr_assert_eq(r.status, 0, "%s executors: %s", execs[i], r.err);
    cr_expect_str_eq(r.out, errors_out, "%s executors", execs[i]);
    tu_run_free(&r);
  }
}

/* ---- MF ---------------------------------------------------------------- */

/* Ratings whose users are sorted by activity: user u (1..300) rates about
 * 120 / sqrt(u) items, r = a smooth function of (u, i) plus a wobble. */
static char *write_skewed_ratings(void) {
  size_t cap = 4 << 20, len = 0;
  char *text = malloc(cap), *path;
  int u, i;
  for (u = 1; u <= 300; u++) {
    int n = (int)(120.0 / sqrt((double)u)) + 2;
    for (i = 1; i <= n && i <= 200; i++) {
      int item = 1 + (i * 37 + u * 11) % 200;
      double r = 3.0 + 1.5 * sin(u * 0.37) * cos(item * 0.21) +
                 0.3 * ((u * 7 + item * 13) % 5 - 2) / 2.0;
      len += (size_t)snprintf(text + len, cap - len, "%d %d %.3f\n", u, item,
                              r);
    }
  }
  path = tu_write_temp(".txt", text);
  free(text);
  return path;
}

/* The last test RMSE printed by mf.lua ("epoch seconds train test"). */
static double last_test_rmse(const char *out) {
  const char *line = out;
  double last = -1, tr, te, sec;
  int ep;
  while (line != NULL && *line != '\0') {
    if (sscanf(line, "%d %lf %lf %lf", &ep, &sec, &tr, &te) == 4)
      last = te;
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  return last;
}

/* The "rmse X" that predict.lua prints at its end. */
static double predict_rmse(const char *out) {
  const char *p = strstr(out, "rmse ");
  return p != NULL ? atof(p + 5) : -1;
}

/* mf.lua with --permute trains to a test RMSE within 3% of the one
 * without (not the same: the SGD order differs), and its saved model is
 * at the original ids: predict.lua scores the training file as well with
 * it as with the unpermuted model (with the rows left permuted it would
 * pair each user with another's factors). */
Test(permute, mf_trains_alike_and_saves_original_ids, .timeout = 300) {
  char *app = tu_src("apps/mf/mf.lua"), *pred = tu_src("apps/mf/predict.lua");
  char *train = write_skewed_ratings();
  char *model[2] = {tu_temp_path(""), tu_temp_path("")};
  char *scores = tu_temp_path(".txt");
  double test[2], scored[2];
  int v;
  for (v = 0; v < 2; v++) {
    char *argv[] = {(char *)tu_driver(), "--quiet", "--executors", "2", app,
                    "--train", train, "--test-split", "0.1", "--k", "8",
                    "--epochs", "12", "--save", model[v],
                    v ? "--permute" : NULL, "3", NULL};
    char *pargv[] = {(char *)tu_driver(), "--quiet", pred, "--model",
                     model[v], "--pairs", train, "--out", scores, NULL};
    tu_run r = tu_run_argv(argv, 140);
    cr_assert_eq(r.status, 0, "mf.lua (permute %d) failed: %s", v, r.err);
    test[v] = last_test_rmse(r.out);
    cr_assert_gt(test[v], 0, "no epoch lines:\n%s", r.out);
    tu_run_free(&r);
    r = tu_run_argv(pargv, 60);
    cr_assert_eq(r.status, 0, "predict.lua failed: %s", r.err);
    scored[v] = predict_rmse(r.err); /* its summary, on stderr */
    cr_assert_gt(scored[v], 0, "no rmse: %s", r.err);
    tu_run_free(&r);
  }
  cr_expect(test[0] != test[1], "--permute changed nothing (%.6f)", test[0]);
  cr_expect_lt(fabs(test[1] - test[0]), 0.03 * test[0],
               "test RMSE %.4f with --permute, %.4f without", test[1],
               test[0]);
  cr_expect_lt(fabs(scored[1] - scored[0]), 0.03 * scored[0],
               "predict.lua RMSE %.4f with the permuted model, %.4f without",
               scored[1], scored[0]);
  for (v = 0; v < 2; v++) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -f %s.W %s.H %s.users %s.items %s.meta",
             model[v], model[v], model[v], model[v], model[v]);
    cr_expect_eq(system(cmd), 0);
    free(model[v]);
  }
  unlink(scores);
  free(scores);
  unlink(train);
  free(train);
  free(app);
  free(pred);
}

/* The last two epoch lines of mf.lua's output, without the seconds. */
static void last_epochs(const char *out, char *buf, size_t n) {
  const char *line = out, *l1 = NULL, *l2 = NULL;
  int ep;
  double a, b, c;
  while (line != NULL && *line != '\0') {
    if (sscanf(line, "%d %lf %lf %lf", &ep, &a, &b, &c) == 4) {
      l1 = l2;
      l2 = line;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  buf[0] = '\0';
  for (line = l1; line != NULL; line = line == l1 ? l2 : NULL)
    if (sscanf(line, "%d %lf %lf %lf", &ep, &a, &b, &c) == 4)
      snprintf(buf + strlen(buf), n - strlen(buf), "%d %.4f %.4f\n", ep, b, c);
}

/* Checkpoints hold the permuted layout and mf.lua permutes before
 * orion.restore(): a run resumed at epoch 2 of 4 ends as the run that was
 * not stopped, to the printed digit. */
Test(permute, mf_resumes_a_permuted_run, .timeout = 200) {
  char *app = tu_src("apps/mf/mf.lua");
  char dir[2][32] = {"/tmp/orion-pck-XXXXXX", "/tmp/orion-pck-XXXXXX"};
  char got[2][256], cmd[128];
  int v;
  for (v = 0; v < 2; v++) {
    cr_assert_not_null(mkdtemp(dir[v]));
    /* v = 1: two epochs, then a resumed run to four. */
    for (int leg = v ? 0 : 1; leg < 2; leg++) {
      const char *resume = leg && v ? "--resume" : "--quiet";
      char *argv[] = {(char *)tu_driver(), "--quiet", "--executors", "2",
                      "--checkpoint-dir", dir[v], (char *)resume,
                      "--force", app, "--synthetic", "600,400,20000",
                      "--k", "8", "--solver", "adagrad", "--permute", "5",
                      "--checkpoint-every", "2", "--epochs", leg ? "4" : "2",
                      NULL};
      tu_run r = tu_run_argv(argv, 90);
      cr_assert_eq(r.status, 0, "run %d leg %d: %s", v, leg, r.err);
      if (leg == 1)
        last_epochs(r.out, got[v], sizeof got[v]);
      tu_run_free(&r);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir[v]);
    cr_expect_eq(system(cmd), 0);
  }
  cr_expect_neq(got[0][0], '\0', "no epoch lines");
  cr_expect_str_eq(got[1], got[0]);
  cr_expect(strncmp(got[0], "3 ", 2) == 0, "%s", got[0]);
  free(app);
}
