/* Integration: the logistic-regression app (apps/lr/lr.lua) end to end
 * through orion-driver, against its serial reference (lr_serial.lua). */
#include "t/testutil.h"

/* The last "final accuracy A auc U" of lr_serial.lua. */
static int serial_final(const char *out, double *acc, double *auc) {
  const char *p = strstr(out, "final accuracy ");
  return p != NULL && sscanf(p, "final accuracy %lf auc %lf", acc, auc) == 2;
}

/* lr.lua's epoch lines "epoch seconds loss accuracy auc": the count, and
 * the last line's accuracy and AUC. */
static int lr_epochs(const char *out, double *acc, double *auc) {
  int n = 0;
  const char *line = out;
  while (line != NULL && *line != '\0') {
    int ep;
    double secs, loss, a, u;
    if (sscanf(line, "%d %lf %lf %lf %lf", &ep, &secs, &loss, &a, &u) == 5 &&
        ep == n + 1) {
      *acc = a;
      *auc = u;
      n++;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  return n;
}

/* 20 Newsgroups, comp.graphics against sci.space (make_20ng.sh): lr.lua
 * on 1, 2 and 4 executors reaches the serial reference's test accuracy
 * (within 1%: its updates are applied at flush points, so it is not the
 * same sequence of steps) and AUC (within 0.005), compiled (tier "c"
 * fails a loop that does not compile). */
Test(lr, slow_news20_reaches_the_serial_reference_on_1_2_4_executors,
     .timeout = 600) {
  const char *data = tu_data_dir("20newsgroups-bydate/docword.20news.txt.gz");
  char dir[] = "/tmp/orion-lr-XXXXXX", cmd[2048], train[1100], test[1100];
  char *gen = tu_src("apps/lr/make_20ng.sh"), *app = tu_src("apps/lr/lr.lua");
  char *ref = tu_src("apps/lr/lr_serial.lua");
  static const char *const execs[] = {"1", "2", "4"};
  double sacc, sauc, acc = 0, auc = 0;
  tu_run r;
  int i;
  cr_assert_not_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "ORION_20NG=%s/20newsgroups-bydate sh %s %s",
           data, gen, dir);
  cr_assert_eq(system(cmd), 0, "%s failed", cmd);
  snprintf(train, sizeof train, "%s/train.libsvm", dir);
  snprintf(test, sizeof test, "%s/test.libsvm", dir);
  {
    char *argv[] = {(char *)tu_driver(), ref, "--train", train, "--test",
                    test, "--epochs", "10", NULL};
    r = tu_run_argv(argv, 200);
  }
  cr_assert_eq(r.status, 0, "lr_serial.lua: %s", r.err);
  cr_assert(serial_final(r.out, &sacc, &sauc), "%s", r.out);
  cr_assert_gt(sacc, 0.9, "the reference's accuracy %.4f", sacc);
  tu_run_free(&r);
  for (i = 0; i < 3; i++) {
    char *argv[] = {(char *)tu_driver(), "--executors", (char *)execs[i],
                    app, "--train", train, "--test", test, "--epochs", "10",
                    "--tier", "c", NULL};
    r = tu_run_argv(argv, 200);
    cr_assert_eq(r.status, 0, "%s executors: %s", execs[i], r.err);
    cr_assert_eq(lr_epochs(r.out, &acc, &auc), 10, "%s", r.out);
    cr_expect_geq(acc, sacc - 0.01,
                  "%s executors: accuracy %.4f, the reference's %.4f",
                  execs[i], acc, sacc);
    cr_expect_geq(auc, sauc - 0.005,
                  "%s executors: AUC %.4f, the reference's %.4f", execs[i],
                  auc, sauc);
    tu_run_free(&r);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
  free(gen);
  free(app);
  free(ref);
}

/* Labels 0/1 in one file and -1/+1 in the other; --metrics records
 * test_accuracy per epoch; a row with no features is scored by the
 * intercept (negative: most training samples are).  Separable data, so
 * by the last epoch every test sample is right. */
Test(lr, metrics_record_test_accuracy_per_epoch, .timeout = 120) {
  char *train = tu_write_temp(".libsvm", "1 1:1 3:0.5\n0 2:1 3:0.5\n"
                                         "1 1:0.8\n0 2:0.9\n1 1:1 4:1\n"
                                         "0 2:1 4:1\n0 2:1 4:0.5\n"
                                         "0 2:0.7\n");
  char *test = tu_write_temp(".libsvm", "+1 1:1\n-1 2:1\n+1 1:0.5 3:1\n"
                                        "-1\n");
  char *metrics = tu_temp_path(".jsonl");
  char *app = tu_src("apps/lr/lr.lua");
  char *argv[] = {(char *)tu_driver(), "--metrics", metrics, app,
                  "--train", train, "--test", test, "--epochs", "3",
                  "--bias", "--lr", "1", NULL};
  tu_run r = tu_run_argv(argv, 100);
  double acc = 0, auc = 0;
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_eq(lr_epochs(r.out, &acc, &auc), 3, "%s", r.out);
  /* The job's progress after each epoch and the summary (orion.train). */
  cr_expect(strstr(r.err, "epoch 2/3  train_loss ") != NULL &&
                strstr(r.err, "epoch 3/3  train_loss ") != NULL &&
                strstr(r.err, "lr.lua: 3 epochs in ") != NULL,
            "%s", r.err);
  cr_expect_eq(acc, 1.0, "%s", r.out); /* the last epoch's */
  cr_expect_eq(auc, 1.0, "%s", r.out);
  cr_expect_eq(tu_count_line_prefix(metrics, "{\"epoch\":"), 3);
  {
    char *m = NULL;
    FILE *f = fopen(metrics, "r");
    size_t cap = 0;
    int n = 0;
    cr_assert_not_null(f);
    while (getline(&m, &cap, f) > 0)
      n += strstr(m, "\"test_accuracy\":") != NULL &&
           strstr(m, "\"test_auc\":") != NULL &&
           strstr(m, "\"samples_per_s\":") != NULL;
    free(m);
    fclose(f);
    cr_expect_eq(n, 3, "test_accuracy is not in every epoch's record");
  }
  tu_run_free(&r);
  unlink(train);
  unlink(test);
  unlink(metrics);
  free(train);
  free(test);
  free(metrics);
  free(app);
}

/* A label other than 0/1 or -1/+1 names the file and the row; missing
 * files are usage errors. */
Test(lr, bad_labels_and_options_are_named, .timeout = 60) {
  char *train = tu_write_temp(".libsvm", "1 1:1\n2 2:1\n");
  char *app = tu_src("apps/lr/lr.lua");
  char want[1200];
  tu_run r;
  {
    char *argv[] = {(char *)tu_driver(), "--executors", "0", app, "--train",
                    train, "--test", train, NULL};
    r = tu_run_argv(argv, 50);
  }
  cr_expect_neq(r.status, 0);
  snprintf(want, sizeof want,
           "%s: row 2: label 2.0 is neither 0/1 nor -1/+1", train);
  cr_expect(strstr(r.err, want) != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    char *argv[] = {(char *)tu_driver(), app, "--train", train, NULL};
    r = tu_run_argv(argv, 50);
  }
  cr_expect_eq(r.status, 2);
  cr_expect(strstr(r.err, "--train and --test are required") != NULL, "%s",
            r.err);
  tu_run_free(&r);
  unlink(train);
  free(train);
  free(app);
}

/* --weights naming a folder that does not exist, and a --train or
 * --test file that does not exist, are refused on the driver before the
 * samples are loaded (nothing on stdout), exit 2, naming the option and
 * the path.  Before, --weights failed after the last epoch and a missing
 * input was reported by an executor. */
Test(lr, output_and_input_paths_are_checked_before_any_work, .timeout = 60) {
  char *app = tu_src("apps/lr/lr.lua");
  char *data = tu_write_temp(".libsvm", "1 1:1\n0 2:1\n1 1:0.5 2:0.5\n");
  char miss[64], path[128], want[512];
  int k;
  snprintf(miss, sizeof miss, "/tmp/orion-lr-missing-%d", (int)getpid());
  snprintf(path, sizeof path, "%s/w.txt", miss);
  for (k = 0; k < 3; k++) {
    char *argv[] = {(char *)tu_driver(), "--executors", "2", app,
                    "--train", k == 1 ? path : data, "--test",
                    k == 2 ? path : data, "--epochs", "2", "--weights",
                    k == 0 ? path : (char *)"/dev/null", NULL};
    if (k == 0)
      snprintf(want, sizeof want,
               "lr.lua: --weights %s: the folder %s does not exist\n", path,
               miss);
    else
      snprintf(want, sizeof want,
               "lr.lua: %s %s: cannot read it: No such file or directory\n",
               k == 1 ? "--train" : "--test", path);
    tu_expect_path_refused(argv, want, miss);
  }
  unlink(data);
  free(data);
  free(app);
}

/* A deterministic libsvm file of n samples over nf features (each row 3 to
 * 10 features, values in (0, 1]; the class from a fixed hidden weight
 * vector, with some noise). */
static char *synthetic(int n, int nf, unsigned seed) {
  size_t cap = (size_t)n * 160 + 1, len = 0;
  char *text = malloc(cap), *path;
  int i, j;
  cr_assert_not_null(text);
  for (i = 0; i < n; i++) {
    int nz = 3 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 8;
    int f = 0;
    double score = 0;
    char row[160];
    size_t rl = 0;
    for (j = 0; j < nz && f < nf; j++) {
      double v;
      f += 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % (nf / nz);
      if (f > nf)
        break;
      v = (double)(((seed = seed * 1103515245u + 12345u) >> 16) % 1000 + 1) /
          1000.0;
      score += (f % 3 == 0 ? -1.0 : f % 3 == 1 ? 0.8 : 0.1) * v;
      rl += (size_t)snprintf(row + rl, sizeof row - rl, " %d:%.3f", f, v);
    }
    if (((seed = seed * 1103515245u + 12345u) >> 16) % 10 == 0)
      score = -score; /* noise */
    len += (size_t)snprintf(text + len, cap - len, "%d%s\n",
                            score > 0 ? 1 : 0, row);
  }
  path = tu_write_temp(".libsvm", text);
  free(text);
  return path;
}

static char *read_text(const char *path) {
  int fd = open(path, O_RDONLY);
  char *s;
  cr_assert_geq(fd, 0, "cannot open %s", path);
  s = tu_slurp_fd(fd);
  close(fd);
  return s;
}

/* Issue 21: AdaRevision written with one loop whose buffer's apply
 * function reads and writes the weights' state in helper arrays
 * (lr.lua --optimizer adarev) computes the same bits as the two-loop
 * version (t/cluster/lr_adarev_two.lua: the blocks' gradients summed into
 * an array, then every weight stepped through its blocks in order), on 0,
 * 1, 2 and 4 executors, and the same weights on every executor count. */
Test(lr, adarev_apply_function_matches_the_two_loop_version,
     .timeout = 600) {
  char *train = synthetic(600, 80, 7), *test = synthetic(100, 80, 99);
  char *app = tu_src("apps/lr/lr.lua");
  char *two = tu_src("t/cluster/lr_adarev_two.lua");
  static const char *const execs[] = {"0", "1", "2", "4"};
  char *first = NULL;
  int i;
  for (i = 0; i < 4; i++) {
    char *w1 = tu_temp_path(".txt"), *w2 = tu_temp_path(".txt");
    char *a, *b;
    double acc = 0, auc = 0;
    tu_run r;
    {
      char *argv[] = {(char *)tu_driver(), "--executors", (char *)execs[i],
                      app, "--train", train, "--test", test, "--epochs", "4",
                      "--optimizer", "adarev", "--lr", "0.7", "--bias",
                      "--reg", "0.01", "--weights", w1, NULL};
      r = tu_run_argv(argv, 200);
    }
    cr_assert_eq(r.status, 0, "%s executors: %s", execs[i], r.err);
    cr_expect_eq(lr_epochs(r.out, &acc, &auc), 4, "%s", r.out);
    cr_expect_gt(auc, 0.7, "%s executors: AUC %.4f\n%s", execs[i], auc,
                 r.out);
    tu_run_free(&r);
    {
      char *argv[] = {(char *)tu_driver(), "--executors", (char *)execs[i],
                      two, train, test, "4", "0.7", "1", "0.01", w2, NULL};
      r = tu_run_argv(argv, 200);
    }
    cr_assert_eq(r.status, 0, "two loops, %s executors: %s", execs[i], r.err);
    cr_expect(strstr(r.out, "two loops: 4 epochs, ") != NULL, "%s",
              r.out);
    tu_run_free(&r);
    a = read_text(w1);
    b = read_text(w2);
    cr_expect(tu_count_substr(a, "\n") > 40, "%s", a);
    cr_expect_str_eq(a, b,
                     "%s executors: the apply function's weights differ "
                     "from the two loops'",
                     execs[i]);
    if (first == NULL)
      first = a;
    else {
      cr_expect_str_eq(a, first, "%s executors: weights differ from 0's",
                       execs[i]);
      free(a);
    }
    free(b);
    unlink(w1);
    unlink(w2);
    free(w1);
    free(w2);
  }
  free(first);
  unlink(train);
  unlink(test);
  free(train);
  free(test);
  free(app);
  free(two);
}
