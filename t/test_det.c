/* Results that do not depend on the machine: the same script, data and
 * seed give bit-identical numbers on 0 (in process), 1, 2, 3 and 4
 * executors.  A loop's blocks come from the data and the options only
 * (--partitions, opts.partitions; never the executor count), accumulator
 * partials are combined per block in the schedule's block order, and the
 * writes of flush = "loop" buffers are applied per block in that order,
 * by the driver and by the owners of sharded targets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/testutil.h"

static const char *const counts[5] = {"0", "1", "2", "3", "4"};

/* Runs args after "--executors N" on each count; expects exit 0 and the
 * same stdout from every run (what = the lines compared, for messages). */
static void same_on_0_to_4(const char *what, const char *const *args,
                           int timeout_s) {
  char *first = NULL;
  int i, k;
  for (i = 0; i < 5; i++) {
    const char *argv[16] = {"--quiet", "--executors", counts[i]};
    tu_run r;
    for (k = 0; args[k] != NULL && k < 12; k++)
      argv[3 + k] = args[k];
    argv[3 + k] = NULL;
    r = tu_drive("t/cluster", argv, timeout_s);
    cr_assert_eq(r.status, 0, "%s on %s executors: exit %d\n%s\n%s", what,
                 counts[i], r.status, r.out, r.err);
    cr_assert(r.out[0] != '\0', "%s on %s executors printed nothing", what,
              counts[i]);
    cr_log_info("%s on %s executors:\n%s", what, counts[i], r.out);
    if (first == NULL)
      first = strdup(r.out);
    else
      cr_expect_str_eq(r.out, first,
                       "%s differs on %s executors:\n%s\nfrom in-process:\n%s",
                       what, counts[i], r.out, first);
    tu_run_free(&r);
  }
  free(first);
}

/* A float sum over a 1-D loop, a 2-D SGD loop (RMSE and factors), an
 * ordered loop (equal to its serial run) and float "add" buffers flushed
 * at loop end (one applied by the driver, one sharded across the
 * executors): the same bits on every executor count. */
Test(det, loops_accumulators_and_buffers_on_0_to_4_executors) {
  same_on_0_to_4("det.lua", (const char *const[]){"@det.lua", NULL}, 120);
}

/* The guide's sgd example prints the same RMSE on every executor count. */
Test(det, slow_guide_sgd_example_on_0_to_4_executors) {
  char *sgd = tu_src("docs/examples/sgd.lua");
  char *path = tu_temp_path(".lua");
  /* The example without its timings (they vary from run to run). */
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "sed 's/, stats.blocks, stats.seconds))/, stats.blocks, 0))/' "
           "'%s' > '%s'",
           sgd, path);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  same_on_0_to_4("sgd.lua", (const char *const[]){path, NULL}, 120);
  unlink(path);
  free(path);
  free(sgd);
}

/* The MF app, on MovieLens-100k when the shared data has it, else on its
 * embedded synthetic data: identical epoch lines (train and test RMSE)
 * on every executor count.  The seconds column is cut. */
Test(det, mf_app_on_0_to_4_executors) {
  char *mf = tu_src("apps/mf/mf.lua");
  char train[1024];
  const char *dir = getenv("ORION_DATA");
  snprintf(train, sizeof train, "%s/movielens-100k/u.data",
           dir != NULL ? dir : "../shared/data");
  if (access(train, R_OK) != 0) {
    cr_log_info("%s not found: the embedded synthetic data", train);
    train[0] = '\0';
  }
  {
    char *first = NULL;
    int i;
    for (i = 0; i < 5; i++) {
      tu_run r;
      char *out, *p, *line;
      size_t len = 0;
      if (train[0] != '\0')
        r = tu_drive("t/cluster",
                     (const char *const[]){"--quiet", "--executors",
                                           counts[i], mf, "--train", train,
                                           "--format", "movielens",
                                           "--test-split", "0.1", "--k", "16",
                                           "--epochs", "3", NULL},
                     180);
      else
        r = tu_drive("t/cluster",
                     (const char *const[]){"--quiet", "--executors",
                                           counts[i], mf, "--k", "16",
                                           "--epochs", "3", NULL},
                     180);
      cr_assert_eq(r.status, 0, "mf on %s executors: exit %d\n%s\n%s",
                   counts[i], r.status, r.out, r.err);
      out = calloc(1, strlen(r.out) + 1);
      cr_assert_not_null(out);
      /* "  epoch  seconds  train  test": keep epoch and the RMSEs. */
      for (line = strtok_r(r.out, "\n", &p); line != NULL;
           line = strtok_r(NULL, "\n", &p)) {
        char c0[64], c1[64], c2[64], c3[64];
        int epoch;
        if (sscanf(line, "%63s %63s %63s %63s", c0, c1, c2, c3) == 4 &&
            sscanf(c0, "%d", &epoch) == 1)
          len += (size_t)sprintf(out + len, "%s %s %s\n", c0, c2, c3);
      }
      cr_assert(len > 0, "mf on %s executors: no epoch lines", counts[i]);
      cr_log_info("mf on %s executors:\n%s", counts[i], out);
      if (first == NULL)
        first = out;
      else {
        cr_expect_str_eq(out, first,
                         "mf on %s executors:\n%s\nin-process:\n%s",
                         counts[i], out, first);
        free(out);
      }
      tu_run_free(&r);
    }
    free(first);
  }
  free(mf);
}
