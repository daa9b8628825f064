/* What a user sees on stderr while a job runs: the progress line of
 * distributed loops (blocks done of total, ETA) and of loads (bytes), which
 * shows only on a terminal (ORION_PROGRESS=1 forces it here) and is erased
 * at the end; the stall report of --stall-seconds; the executors'
 * registration lines, printed only with -v.
 *
 * Scripts live in t/cluster/.  A slow block is made deterministic: the
 * body of stall.lua's element 1 waits until a flag file exists, and the
 * test creates the file once it has seen what it waits for. */
#include "t/testutil.h"

#include <signal.h>
#include <time.h>

/* t/cluster/NAME under the source tree (malloc'd). */
static char *script(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "t/cluster/%s", name);
  return tu_src(rel);
}

static void expect_has(const char *text, const char *want) {
  cr_expect(strstr(text, want) != NULL, "expected \"%s\" in:\n%s", want,
            text);
}

static void expect_lacks(const char *text, const char *bad) {
  cr_expect(strstr(text, bad) == NULL, "did not expect \"%s\" in:\n%s", bad,
            text);
}

/* A driver running in the background, its output going to files. */
typedef struct job {
  pid_t pid;
  char out[64], err[64];
} job;

/* Starts the driver with args (NULL-terminated, at most 14). */
static job job_start(const char *const *args) {
  job j;
  char *argv[16];
  int n = 0, ofd, efd;
  snprintf(j.out, sizeof j.out, "/tmp/orion-pout-XXXXXX");
  snprintf(j.err, sizeof j.err, "/tmp/orion-perr-XXXXXX");
  ofd = mkstemp(j.out);
  efd = mkstemp(j.err);
  cr_assert(ofd >= 0 && efd >= 0);
  argv[n++] = (char *)tu_driver();
  while (*args != NULL && n < 15)
    argv[n++] = (char *)*args++;
  argv[n] = NULL;
  j.pid = fork();
  cr_assert(j.pid >= 0);
  if (j.pid == 0) {
    dup2(ofd, 1);
    dup2(efd, 2);
    alarm(120);
    execv(argv[0], argv);
    _exit(127);
  }
  close(ofd);
  close(efd);
  return j;
}

static char *slurp(const char *path) {
  int fd = open(path, O_RDONLY);
  char *s;
  cr_assert(fd >= 0, "cannot open %s", path);
  s = tu_slurp_fd(fd);
  close(fd);
  return s;
}

/* Waits up to 60 s until the job's stderr satisfies ok; 1 when it did. */
static int job_wait_err(const job *j, int (*ok)(const char *)) {
  int k;
  for (k = 0; k < 600; k++) {
    char *e = slurp(j->err);
    int yes = ok(e);
    free(e);
    if (yes)
      return 1;
    if (waitpid(j->pid, NULL, WNOHANG) == j->pid)
      return 0;
    usleep(100000);
  }
  return 0;
}

/* Waits for the job (at most its 120 s alarm) and collects its output. */
static tu_run job_finish(job *j) {
  tu_run r;
  int st = 0;
  waitpid(j->pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(j->out);
  r.err = slurp(j->err);
  unlink(j->out);
  unlink(j->err);
  return r;
}

static void touch(const char *path) {
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL, "cannot create %s", path);
  fclose(f);
}

/* Whether text has a progress line "blocks D/T" with 0 < D < T: a loop
 * drawn while it runs, with its ETA from the blocks done. */
static int mid_loop_draw(const char *text) {
  const char *p = text;
  while ((p = strstr(p, "blocks ")) != NULL) {
    long d, t;
    if (sscanf(p, "blocks %ld/%ld", &d, &t) == 2 && d > 0 && d < t)
      return 1;
    p++;
  }
  return 0;
}

/* After the last progress draw (the last "\r" that starts one), the line
 * is erased: "\r\033[K" follows and nothing else is drawn. */
static void expect_erased(const char *err, const char *what) {
  const char *last = NULL, *p = err;
  while ((p = strchr(p, '\r')) != NULL) {
    if (p[1] != '\033')
      last = p;
    p++;
  }
  cr_assert(last != NULL, "%s: no progress line in:\n%s", what, err);
  cr_expect(strstr(last, "\033[K\r\033[K") != NULL,
            "%s: the last progress line is not erased:\n%s", what, last);
}

static void progress_env(void) {
  setenv("ORION_PROGRESS", "1", 1);
  setenv("ORION_PROGRESS_AFTER", "0", 1);
}

/* ------------------------------------------------------------------------
 * Registration lines.
 * ---------------------------------------------------------------------- */

Test(verbosity, registration_lines_only_with_v) {
  char *flag = tu_write_temp(".flag", ""); /* exists: no slow block */
  tu_run r = tu_drive("t/cluster",
                      (const char *const[]){"--allow-io", "--executors", "2", "@stall.lua",
                                            "8", flag, NULL},
                      120);
  cr_expect_eq(r.status, 0, "stderr:\n%s", r.err);
  expect_has(r.out, "sum 72");
  expect_lacks(r.err, "registered from");
  tu_run_free(&r);
  r = tu_drive("t/cluster",
               (const char *const[]){"-v", "--allow-io", "--executors", "2", "@stall.lua",
                                     "8", flag, NULL},
               120);
  cr_expect_eq(r.status, 0, "stderr:\n%s", r.err);
  expect_has(r.out, "sum 72");
  expect_has(r.err, "orion: executor 0 registered from 127.0.0.1:");
  expect_has(r.err, "orion: executor 1 registered from 127.0.0.1:");
  tu_run_free(&r);
  r = tu_drive("t/cluster",
               (const char *const[]){"--verbose", "--quiet", "--allow-io", "--executors",
                                     "2", "@stall.lua", "8", flag, NULL},
               120);
  cr_expect_eq(r.status, 0, "stderr:\n%s", r.err);
  expect_lacks(r.err, "registered from"); /* --quiet wins */
  tu_run_free(&r);
  unlink(flag);
  free(flag);
}

/* ------------------------------------------------------------------------
 * The progress line.
 * ---------------------------------------------------------------------- */

Test(progress, distributed_loop_shows_blocks_and_eta_then_erases) {
  char *flag = tu_temp_path(".flag"), *path = script("stall.lua");
  job j;
  tu_run r;
  progress_env();
  j = job_start((const char *const[]){"--allow-io", "--executors", "2", path, "64", flag,
                                      NULL});
  /* Executor 1's blocks finish while element 1's block waits. */
  cr_expect(job_wait_err(&j, mid_loop_draw), "no mid-loop progress line");
  touch(flag);
  r = job_finish(&j);
  cr_expect_eq(r.status, 0, "stderr:\n%s", r.err);
  expect_has(r.out, "sum 4160");
  expect_has(r.err, "\rparallel_for at ");
  expect_has(r.err, "stall.lua:11: blocks ");
  expect_has(r.err, "% ");
  expect_has(r.err, ", ETA ");
  cr_expect(strstr(r.err, ", ETA ?") == NULL || mid_loop_draw(r.err),
            "%s", r.err);
  expect_erased(r.err, "loop");
  expect_lacks(r.out, "\r"); /* stdout stays clean */
  tu_run_free(&r);
  unlink(flag);
  free(flag);
  free(path);
}

/* A coo file of n lines. */
static char *coo_file(int n) {
  char *path = tu_temp_path(".txt");
  FILE *f = fopen(path, "w");
  int i;
  cr_assert(f != NULL);
  for (i = 1; i <= n; i++)
    fprintf(f, "%d %d %d.5\n", i % 97 + 1, i % 89 + 1, i);
  fclose(f);
  return path;
}

Test(progress, loads_show_bytes_then_erase) {
  static const char *const nexec[] = {"1", "2"}; /* local, across executors */
  char *data = coo_file(40000), want[512];
  int k;
  progress_env();
  snprintf(want, sizeof want, "\rloading %s: ", data);
  for (k = 0; k < 2; k++) {
    tu_run r = tu_drive("t/cluster",
                        (const char *const[]){"--allow-io", "--executors", nexec[k],
                                              "@load_progress.lua", data,
                                              NULL},
                        120);
    cr_expect_eq(r.status, 0, "%s executors: %s", nexec[k], r.err);
    expect_has(r.out, "loaded 40000 elements");
    expect_has(r.err, want);
    expect_has(r.err, " KiB [");
    expect_has(r.err, "100%");
    expect_erased(r.err, nexec[k]);
    tu_run_free(&r);
  }
  unlink(data);
  free(data);
}

Test(progress, nothing_when_stderr_is_not_a_terminal_or_quiet) {
  char *flag = tu_write_temp(".flag", ""), *data = coo_file(1000);
  const char *const *runs[] = {
      (const char *const[]){"--allow-io", "--executors", "2", "@stall.lua", "64", flag,
                            NULL},
      (const char *const[]){"--allow-io", "--executors", "2", "@load_progress.lua", data,
                            NULL},
      (const char *const[]){"--allow-io", "--executors", "0", "@stall.lua", "64", flag,
                            NULL},
      (const char *const[]){"--quiet", "--allow-io", "--executors", "2", "@stall.lua",
                            "64", flag, NULL}};
  int k;
  unsetenv("ORION_PROGRESS");
  setenv("ORION_PROGRESS_AFTER", "0", 1); /* only the terminal test is left */
  for (k = 0; k < 4; k++) {
    tu_run r;
    if (k == 3)
      setenv("ORION_PROGRESS", "1", 1); /* forced on, but --quiet */
    r = tu_drive("t/cluster", runs[k], 120);
    cr_expect_eq(r.status, 0, "run %d: %s", k, r.err);
    expect_lacks(r.err, "\r");
    expect_lacks(r.err, "\033[K");
    expect_lacks(r.err, "blocks ");
    tu_run_free(&r);
  }
  unlink(flag);
  unlink(data);
  free(flag);
  free(data);
}

/* ------------------------------------------------------------------------
 * The job's progress (orion.progress): a line per epoch with the ETA of
 * the whole job, whatever stderr is.
 * ---------------------------------------------------------------------- */

/* A script that reports a baseline and three epochs of about 0.1 s. */
static const char progress_script[] =
    "local orion = require 'orion'\n"
    "orion.progress(0, 3)\n"
    "for e = 1, 3 do\n"
    "  local t = orion.clock()\n"
    "  while orion.clock() - t < 0.1 do end\n"
    "  orion.progress(e, 3)\n"
    "end\n"
    "print('trained')\n";

Test(progress, job_reports_epochs_with_an_eta) {
  char *path = tu_write_temp(".lua", progress_script);
  const char *args[] = {"--executors", "0", path, NULL};
  const char *quiet[] = {"--quiet", "--executors", "0", path, NULL};
  double so_far, eta;
  const char *p;
  tu_run r = tu_drive(".", args, 60);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_lacks(r.err, "epoch 0 / 3"); /* the baseline prints nothing */
  p = strstr(r.err, "orion: epoch 1 / 3, ");
  cr_assert_not_null(p, "%s", r.err);
  cr_assert_eq(sscanf(p, "orion: epoch 1 / 3, %lfs so far, ETA %lfs for the "
                         "whole job\n",
                      &so_far, &eta),
               2, "%s", r.err);
  cr_expect(so_far >= 0.1 && so_far < 5, "%s", r.err);
  cr_expect(eta >= 2 * 0.1 * 0.5 && eta < 10, "two more epochs: %s", r.err);
  expect_has(r.err, "orion: epoch 2 / 3, ");
  expect_has(r.err, "orion: epoch 3 / 3, done in ");
  expect_lacks(r.out, "epoch"); /* stdout is the script's */
  tu_run_free(&r);
  r = tu_drive(".", quiet, 60);
  cr_expect_eq(r.status, 0, "%s", r.err);
  expect_lacks(r.err, "epoch 1 / 3");
  tu_run_free(&r);
  unlink(path);
  free(path);
}

Test(progress, job_progress_refuses_bad_counts) {
  static const char *const bad[][2] = {
      {"orion.progress(4, 3)",
       "orion.progress: done must be between 0 and the total 3, got 4"},
      {"orion.progress(-1, 3)",
       "orion.progress: done must be between 0 and the total 3, got -1"},
      {"orion.progress(1, 3, '')",
       "orion.progress: the unit must be a word of 1 to 31 characters"},
      {"orion.progress(1.5, 3)", "number has no integer representation"}};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256], *path;
    tu_run r;
    snprintf(text, sizeof text, "local orion = require 'orion'\n%s\n",
             bad[i][0]);
    path = tu_write_temp(".lua", text);
    {
      const char *args[] = {"--executors", "0", path, NULL};
      r = tu_drive(".", args, 60);
    }
    cr_expect_eq(r.status, 1, "%s: %d\n%s", bad[i][0], r.status, r.err);
    expect_has(r.err, bad[i][1]);
    expect_has(r.err, ".lua:2:");
    tu_run_free(&r);
    unlink(path);
    free(path);
  }
}

/* ------------------------------------------------------------------------
 * The stall report.
 * ---------------------------------------------------------------------- */

static int has_stall(const char *text) {
  return strstr(text, "stall: executor") != NULL;
}

Test(stall, long_block_is_reported_and_the_job_completes) {
  char *flag = tu_temp_path(".flag"), *path = script("stall.lua");
  char line[1024] = "";
  const char *p, *e;
  job j;
  tu_run r;
  unsetenv("ORION_PROGRESS");
  j = job_start((const char *const[]){"--allow-io", "--executors", "2", "--stall-seconds",
                                      "1", path, "64", flag, NULL});
  cr_expect(job_wait_err(&j, has_stall), "no stall report");
  touch(flag);
  r = job_finish(&j);
  cr_expect_eq(r.status, 0, "stderr:\n%s", r.err);
  expect_has(r.out, "sum 4160"); /* the right result after the stall */
  p = strstr(r.err, "orion: warning: stall: ");
  cr_assert(p != NULL, "%s", r.err);
  e = strchr(p, '\n');
  snprintf(line, sizeof line, "%.*s", (int)(e != NULL ? e - p : 1000), p);
  /* Element 1 is in block 0 (keys 1..8 of 64 in 8 blocks), on executor
   * 0, which still sends heartbeats while its body runs. */
  expect_has(line, "executor 0 (127.0.0.1:");
  expect_has(line, "has been running block 0 of 8 (keys 1..8) for ");
  expect_has(line, " s in the parallel_for at ");
  expect_has(line, "stall.lua:11;");
  expect_has(line, "; last heartbeat ");
  expect_has(line, " s ago; still waiting");
  cr_expect_eq(tu_count_substr(r.err, "stall: "), 1, "once per stall:\n%s",
               r.err);
  tu_run_free(&r);
  unlink(flag);
  free(flag);
  free(path);
}

Test(stall, option_needs_seconds) {
  static const char *const bad[] = {"-1", "x", "", "1e9"};
  int k;
  for (k = 0; k < 4; k++) {
    tu_run r = tu_drive("t/cluster",
                        (const char *const[]){"--stall-seconds", bad[k],
                                              "@stall.lua", NULL},
                        30);
    cr_expect_eq(r.status, 2, "'%s': %s", bad[k], r.err);
    expect_has(r.err, "--stall-seconds needs a number of seconds");
    tu_run_free(&r);
  }
}
