/* Integration: the MF app end to end through orion-driver. */
#include "t/testutil.h"

#include <math.h>

/* Parses the per-epoch lines "epoch seconds train test" of mf.lua. */
static int parse_epochs(const char *out, double *train, double *test,
                        int max) {
  int n = 0;
  const char *line = out;
  while (line != NULL && *line != '\0' && n < max) {
    int ep;
    double secs, tr, te;
    if (sscanf(line, "%d %lf %lf %lf", &ep, &secs, &tr, &te) == 4 &&
        ep == n + 1) {
      train[n] = tr;
      test[n] = te;
      n++;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  return n;
}

Test(mf, movielens_100k_reaches_rmse_below_0_96, .timeout = 300) {
  const char *data = tu_data_dir("movielens-100k/u.data");
  char path[1024];
  char *app = tu_src("apps/mf/mf.lua");
  double train[64], test[64];
  tu_run r;
  int n;
  snprintf(path, sizeof path, "%s/movielens-100k/u.data", data);
  {
    char *argv[] = {(char *)tu_driver(), app, "--train", path, "--format",
                    "movielens", "--test-split", "0.1", "--k", "16",
                    "--epochs", "15", NULL};
    r = tu_run_argv(argv, 280);
  }
  cr_assert_eq(r.status, 0, "mf.lua failed: %s", r.err);
  n = parse_epochs(r.out, train, test, 64);
  cr_assert_eq(n, 15, "expected 15 epoch lines, got %d:\n%s", n, r.out);
  cr_assert(test[n - 1] < 0.96, "test RMSE %.4f is not below 0.96",
            test[n - 1]);
  cr_assert(train[n - 1] < train[0], "train RMSE did not fall");
  cr_assert(test[n - 1] < test[0], "test RMSE did not fall");
  tu_run_free(&r);
  free(app);
}

Test(mf, embedded_default_trains_and_records_metrics, .timeout = 300) {
  char *app = tu_src("apps/mf/mf.lua");
  char *metrics = tu_temp_path(".jsonl");
  double train[16], test[16];
  tu_run r;
  FILE *f;
  char line[1024];
  int n, lines = 0;
  {
    char *argv[] = {(char *)tu_driver(), "--metrics", metrics, app, "--k",
                    "8", "--epochs", "3", NULL};
    r = tu_run_argv(argv, 280);
  }
  cr_assert_eq(r.status, 0, "mf.lua failed: %s", r.err);
  n = parse_epochs(r.out, train, test, 16);
  cr_assert_eq(n, 3, "output:\n%s", r.out);
  cr_assert(test[2] < test[0], "test RMSE did not fall: %f -> %f", test[0],
            test[2]);
  f = fopen(metrics, "r");
  cr_assert_not_null(f, "no metrics file");
  while (fgets(line, sizeof line, f) != NULL) {
    lines++;
    cr_assert(strstr(line, "\"epoch\":") && strstr(line, "\"seconds\":") &&
                  strstr(line, "\"train_rmse\":") &&
                  strstr(line, "\"test_rmse\":") &&
                  strstr(line, "\"train_seconds\":"),
              "metrics line lacks a key: %s", line);
  }
  fclose(f);
  cr_assert_eq(lines, 3);
  unlink(metrics);
  free(metrics);
  tu_run_free(&r);
  free(app);
}

Test(mf, bad_options_are_usage_errors) {
  char *app = tu_src("apps/mf/mf.lua");
  tu_run r;
  {
    char *argv[] = {(char *)tu_driver(), app, "--k", "many", NULL};
    r = tu_run_argv(argv, 60);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--k needs an integer") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    char *argv[] = {(char *)tu_driver(), app, "--epoch", "3", NULL};
    r = tu_run_argv(argv, 60);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "unknown option '--epoch'") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    char *argv[] = {(char *)tu_driver(), app, "--help", NULL};
    r = tu_run_argv(argv, 60);
  }
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "--train FILE") != NULL, "%s", r.out);
  tu_run_free(&r);
  free(app);
}

Test(mf, malformed_training_file_names_file_and_line) {
  char *app = tu_src("apps/mf/mf.lua");
  char *bad = tu_write_temp(".txt", "1 1 5\n2 2 4\n3 x 1\n");
  tu_run r;
  {
    char *argv[] = {(char *)tu_driver(), app, "--train", bad, NULL};
    r = tu_run_argv(argv, 60);
  }
  cr_assert_eq(r.status, 1);
  cr_assert(strstr(r.err, bad) != NULL, "%s", r.err);
  cr_assert(strstr(r.err, ":3:") != NULL, "%s", r.err);
  cr_assert(strstr(r.err, "mf.lua:") != NULL, "%s", r.err);
  tu_run_free(&r);
  unlink(bad);
  free(bad);
  free(app);
}
