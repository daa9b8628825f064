/* Integration: the logistic-regression app (apps/lr/lr.lua) end to end
 * through orion-driver, against its serial reference (lr_serial.lua). */
#include "t/testutil.h"
#include <math.h>

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
 * with its relaxed --flush 8 on 1, 2 and 4 executors reaches the serial
 * reference's test accuracy (within 1%: its updates are applied at flush
 * points, so it is not the same sequence of steps) and AUC (within
 * 0.005), compiled (tier "c" fails a loop that does not compile). */
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
                    "--flush", "8", "--tier", "c", NULL};
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

/* A label that is not an integer names the file and the row; missing
 * files are usage errors. */
Test(lr, bad_labels_and_options_are_named, .timeout = 60) {
  char *train = tu_write_temp(".libsvm", "1 1:1\n2.5 2:1\n");
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
           "%s: row 2: label 2.5 is not a class (an integer)", train);
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

/* ---- solvers, regularisation, classes (issues 36 and 37) ---------------- */

/* Removes the temporary file at path and frees the path. */
static void drop(char *path) {
  unlink(path);
  free(path);
}

/* Runs lr.lua with the arguments after the script (NULL-terminated, at
 * most 24) on `execs` executors and asserts that it exited 0. */
static tu_run run_lr(const char *execs, const char *const *args) {
  char *app = tu_src("apps/lr/lr.lua");
  char *argv[32];
  int n = 0, i;
  tu_run r;
  argv[n++] = (char *)tu_driver();
  argv[n++] = "--executors";
  argv[n++] = (char *)execs;
  argv[n++] = app;
  for (i = 0; args[i] != NULL && n < 31; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  r = tu_run_argv(argv, 200);
  free(app);
  return r;
}

/* The "test accuracy A" of lr.lua's report. */
static double report_accuracy(const char *out) {
  const char *p = strstr(out, "test accuracy ");
  double a = -1;
  cr_assert(p != NULL && sscanf(p, "test accuracy %lf", &a) == 1, "%s", out);
  return a;
}

/* --solver newton (trust-region Newton over the distributed rows) writes
 * the same bits on 1 and 2 executors (and in the driver), as does sgd
 * with its default --flush (loop), and both classify the synthetic set
 * well. */
Test(lr, newton_and_sgd_by_default_are_the_same_bits_on_1_and_2_executors,
     .timeout = 300) {
  char *train = synthetic(600, 80, 7), *test = synthetic(200, 80, 99);
  static const char *const execs[] = {"0", "1", "2"};
  int s, i;
  for (s = 0; s < 2; s++) {
    char *first = NULL;
    for (i = 0; i < 3; i++) {
      char *w = tu_temp_path(".txt"), *text;
      const char *newton[] = {"--train", train, "--test", test, "--solver",
                              "newton", "--C", "4", "--bias", "--weights", w,
                              NULL};
      const char *sgd[] = {"--train", train, "--test", test, "--epochs", "5",
                           "--C", "10", "--weights", w, NULL};
      tu_run r = run_lr(execs[i], s == 0 ? newton : sgd);
      cr_assert_eq(r.status, 0, "%s executors: %s", execs[i], r.err);
      cr_expect_geq(report_accuracy(r.out), s == 0 ? 0.75 : 0.7,
                    "%s executors:\n%s", execs[i], r.out);
      text = read_text(w);
      cr_expect_gt(tu_count_substr(text, "\n"), 70, "%s", text);
      if (first == NULL)
        first = text;
      else {
        cr_expect_str_eq(text, first, "%s, %s executors: weights differ "
                         "from the driver's", s == 0 ? "newton" : "sgd",
                         execs[i]);
        free(text);
      }
      tu_run_free(&r);
      drop(w);
    }
    free(first);
  }
  drop(train);
  drop(test);
}

/* How many of the weights file's lines are exactly 0. */
static int zero_weights(const char *path) {
  char *text = read_text(path), *line = text;
  int zeros = 0;
  while (*line != '\0') {
    zeros += strncmp(line, "0\n", 2) == 0;
    line = strchr(line, '\n');
    line = line != NULL ? line + 1 : text + strlen(text);
  }
  free(text);
  return zeros;
}

/* --penalty l1 soft-thresholds: most weights end exactly at 0, while L2
 * with the same --C leaves none at 0 (every feature occurs in some row),
 * and the sparse model still classifies. */
Test(lr, l1_penalty_gives_sparse_weights, .timeout = 200) {
  char *train = synthetic(600, 80, 7), *test = synthetic(200, 80, 99);
  char *w = tu_temp_path(".txt");
  int pen, zeros[2];
  for (pen = 0; pen < 2; pen++) {
    /* --flush 8: steps every 8 samples (on one executor that is the same
     * every run), and --lr 0.5 (the default before issue 36), as the
     * thresholds below were set for. */
    const char *args[] = {"--train", train, "--test", test, "--epochs", "8",
                          "--flush", "8", "--lr", "0.5", "--C", "0.5",
                          "--penalty", pen == 0 ? "l2" : "l1", "--weights",
                          w, NULL};
    tu_run r = run_lr("1", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    if (pen == 1)
      cr_expect_geq(report_accuracy(r.out), 0.7, "%s", r.out);
    zeros[pen] = zero_weights(w);
    tu_run_free(&r);
  }
  /* L2 leaves at 0 only the intercept and the features no training row
   * has; L1 zeroes many more. */
  cr_expect_leq(zeros[0], 6, "L2: %d weights at 0", zeros[0]);
  cr_expect_geq(zeros[1], zeros[0] + 25, "L1: %d weights at 0, L2: %d",
                zeros[1], zeros[0]);
  drop(w);
  drop(train);
  drop(test);
}

/* --weight 0=W makes class 0's losses count W times: more test rows are
 * predicted 0 (the --predict file's first column). */
Test(lr, class_weights_shift_predictions, .timeout = 200) {
  char *train = synthetic(600, 80, 7), *test = synthetic(200, 80, 99);
  char *p = tu_temp_path(".txt");
  int k, zeros[3];
  static const char *const weights[] = {NULL, "0=8", "1=8"};
  for (k = 0; k < 3; k++) {
    const char *args[] = {"--train", train, "--test", test, "--solver",
                          "newton", "--C", "1", "--bias", "--predict", p,
                          weights[k] ? "--weight" : NULL, weights[k], NULL};
    tu_run r = run_lr("1", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    zeros[k] = tu_count_line_prefix(p, "0 ");
    tu_run_free(&r);
  }
  cr_expect_gt(zeros[1], zeros[0] + 10, "predicted 0: %d without weights, "
               "%d with 0=8", zeros[0], zeros[1]);
  cr_expect_lt(zeros[2], zeros[0] - 10, "predicted 0: %d without weights, "
               "%d with 1=8", zeros[0], zeros[2]);
  drop(p);
  drop(train);
  drop(test);
}

/* Three classes labelled 3, 7 and 5 (their order of first appearance),
 * each with its own two features.  The test rows are the classes' own
 * but the last, which has class 7's features and label 3: one-vs-rest
 * (newton and sgd) and softmax all predict every row by its features,
 * so the confusion matrix, precision, recall and F1 are known. */
static const char multi_train[] =
    "3 1:1 2:0.5\n7 3:1 4:0.5\n5 5:1 6:0.5\n3 1:0.6 2:1\n7 3:0.5 4:1\n"
    "5 5:0.7 6:1\n3 1:1\n7 4:1\n5 6:0.9\n3 2:0.8\n7 3:0.9\n5 5:0.8\n";
static const char multi_test[] = "3 1:1 2:1\n3 2:0.5\n7 3:1\n7 4:0.7 3:0.2\n"
                                 "5 5:1\n5 6:1\n3 3:0.9 4:0.6\n";

Test(lr, multiclass_report_and_predict_file, .timeout = 300) {
  char *train = tu_write_temp(".libsvm", multi_train);
  char *test = tu_write_temp(".libsvm", multi_test);
  char *p = tu_temp_path(".txt");
  int k;
  for (k = 0; k < 3; k++) {
    const char *newton[] = {"--train", train, "--test", test, "--solver",
                            "newton", "--C", "10", "--predict", p, NULL};
    const char *ovr[] = {"--train", train, "--test", test, "--epochs", "20",
                         "--lr", "1", "--predict", p, NULL};
    const char *soft[] = {"--train", train, "--test", test, "--epochs", "20",
                          "--lr", "1", "--multi", "softmax", "--predict", p,
                          NULL};
    tu_run r = run_lr("2", k == 0 ? newton : k == 1 ? ovr : soft);
    char *text;
    const char *line;
    int rows = 0;
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "test accuracy 0.8571 (7 rows)\n") != NULL, "%s",
              r.out);
    cr_expect(strstr(r.out,
                     "label    precision    recall        f1  support\n"
                     "3           1.0000    0.6667    0.8000        3\n"
                     "7           0.6667    1.0000    0.8000        2\n"
                     "5           1.0000    1.0000    1.0000        2\n"
                     "confusion matrix (rows: true label, columns: "
                     "predicted label)\n"
                     "             3     7     5\n"
                     "3            2     1     0\n"
                     "7            0     2     0\n"
                     "5            0     0     2\n") != NULL,
              "solver %d:\n%s", k, r.out);
    /* liblinear's predict -b 1 layout: labels, then label and the
     * probabilities (summing to 1, the predicted one the largest). */
    text = read_text(p);
    cr_expect(strncmp(text, "labels 3 7 5\n", 13) == 0, "%s", text);
    line = strchr(text, '\n');
    while (line != NULL && line[1] != '\0') {
      int label;
      double q[3];
      cr_assert_eq(sscanf(line + 1, "%d %lf %lf %lf", &label, &q[0], &q[1],
                          &q[2]), 4, "%s", line + 1);
      cr_expect(fabs(q[0] + q[1] + q[2] - 1) < 1e-5, "%s", line + 1);
      {
        int best = q[0] >= q[1] && q[0] >= q[2] ? 3 : q[1] >= q[2] ? 7 : 5;
        cr_expect_eq(label, best, "%s", line + 1);
      }
      rows++;
      line = strchr(line + 1, '\n');
    }
    cr_expect_eq(rows, 7, "%s", text);
    free(text);
    tu_run_free(&r);
  }
  drop(p);
  drop(train);
  drop(test);
}

/* Bad labels name the file and the row; bad options are usage errors
 * (exit 2) naming the option. */
Test(lr, bad_multiclass_labels_and_solver_options_are_named,
     .timeout = 120) {
  char *train = tu_write_temp(".libsvm", multi_train);
  char *test = tu_write_temp(".libsvm", "3 1:1\n9 2:1\n");
  char want[1200];
  static const struct {
    const char *opt[4];
    const char *msg;
  } bad[] = {
      {{"--solver", "lbfgs", NULL, NULL},
       "lr.lua: --solver must be sgd, adarev or newton, not 'lbfgs'"},
      {{"--penalty", "l1", NULL, NULL}, "lr.lua: --penalty l1 needs --C"},
      {{"--penalty", "l1", "--solver", "newton"},
       "lr.lua: --penalty l1 needs --solver sgd"},
      {{"--multi", "softmax", "--solver", "newton"},
       "lr.lua: --multi softmax needs --solver sgd"},
      {{"--weight", "3=x", NULL, NULL},
       "lr.lua: --weight: '3=x' is not LABEL=W"},
      {{"--weight", "4=2", NULL, NULL},
       "lr.lua: --weight: label 4 is not a label of "},
      {{"--C", "-1", NULL, NULL}, "lr.lua: --C must be positive"},
      {{"--solver", "adarev", NULL, NULL},
       "lr.lua: --solver adarev trains two classes; "},
  };
  size_t i;
  tu_run r;
  {
    const char *args[] = {"--train", train, "--test", test, NULL};
    r = run_lr("0", args);
  }
  cr_expect_neq(r.status, 0);
  snprintf(want, sizeof want,
           "%s: row 2: label 9 is not one of the training labels (3 7 5)",
           test);
  cr_expect(strstr(r.err, want) != NULL, "%s", r.err);
  tu_run_free(&r);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[] = {"--train",      train,        "--test",
                          train,          bad[i].opt[0], bad[i].opt[1],
                          bad[i].opt[2], bad[i].opt[3], NULL};
    r = run_lr("0", args);
    cr_expect_eq(r.status, 2, "%s: exit %d\n%s", bad[i].msg, r.status,
                 r.err);
    cr_expect(strstr(r.err, bad[i].msg) != NULL, "want '%s' in:\n%s",
              bad[i].msg, r.err);
    tu_run_free(&r);
  }
  drop(train);
  drop(test);
}
