/* Integration tests of the distributed runtime: real jobs of orion-driver
 * with orion-executor processes on 127.0.0.1 (and, as root, in network
 * namespaces).  The golden corpus and MF on MovieLens at several executor
 * counts, buffers and their flush points, server-held arrays, loop
 * statistics and resident blocks, body errors, an executor killed with
 * SIGKILL, hostile connections to the driver's port while a job runs, the
 * launcher's messages, executors in other network namespaces, and
 * malformed frames from an executor the test plays.
 *
 * Scripts live in t/cluster/.  Every test runs with the worker as a child
 * subreaper, so executors orphaned by a driver become its children and a
 * test can check that none outlives its job.  The tests run one at a time
 * (see main): several of them time a job, and parallel jobs would compete
 * for the cores and for the executors' heartbeats. */
#include "t/testutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include "dsm/msg.h"
#include "dsm/wire.h"
#include "t/secsock.h"
#include "util/buf.h"

/* ------------------------------------------------------------------------
 * Helpers: clocks, text, running the driver.
 * ---------------------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  const char *p = text;
  while ((p = strstr(p, needle)) != NULL) {
    n++;
    p += strlen(needle);
  }
  return n;
}

/* The line of text holding needle, copied into out (empty when none). */
static void line_with(const char *text, const char *needle, char *out,
                      size_t n) {
  const char *hit = strstr(text, needle), *b, *e;
  out[0] = '\0';
  if (hit == NULL)
    return;
  for (b = hit; b > text && b[-1] != '\n'; b--)
    ;
  e = strchr(hit, '\n');
  if (e == NULL)
    e = hit + strlen(hit);
  snprintf(out, n, "%.*s", (int)(e - b), b);
}

static void expect_has(const char *text, const char *want) {
  cr_expect(strstr(text, want) != NULL, "expected \"%s\" in:\n%s", want,
            text);
}

/* t/cluster/NAME under the source tree (malloc'd). */
static char *script(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "t/cluster/%s", name);
  return tu_src(rel);
}

/* "NAME:LINE:" for the line of t/cluster/NAME marked "-- @marker". */
static const char *at(const char *name, const char *marker) {
  static char buf[4][256];
  static int k;
  char *b = buf[k++ % 4], tag[64], line[1024];
  char *path = script(name);
  FILE *f = fopen(path, "r");
  int n = 0;
  cr_assert_not_null(f, "cannot open %s", path);
  free(path);
  snprintf(tag, sizeof tag, "-- @%s", marker);
  while (fgets(line, sizeof line, f) != NULL) {
    char *hit;
    n++;
    hit = strstr(line, tag);
    if (hit != NULL && !isalnum((unsigned char)hit[strlen(tag)])) {
      fclose(f);
      snprintf(b, sizeof buf[0], "%s:%d:", name, n);
      return b;
    }
  }
  fclose(f);
  cr_assert_fail("no marker %s in %s", tag, name);
  return NULL;
}

/* Runs orion-driver with the given arguments (NULL-terminated, at most
 * 14); an "@name" argument names t/cluster/name. */
static tu_run drive_t(const char *const *args, int timeout_s) {
  return tu_drive("t/cluster", args, timeout_s);
}

#define DRIVE(...) drive_t((const char *const[]){__VA_ARGS__, NULL}, 120)

static void expect_ok(const tu_run *r, const char *what) {
  cr_expect_eq(r->status, 0, "%s: exit status %d\nstdout:\n%s\nstderr:\n%s",
               what, r->status, r->out, r->err);
}

/* ------------------------------------------------------------------------
 * Processes: a driver run with pipes, /proc scans, leftovers.
 * ---------------------------------------------------------------------- */

typedef struct child {
  pid_t pid;
  int fd[2]; /* stdout, stderr read ends; -1 at end of file */
  char *buf[2];
  size_t len[2], cap[2];
  int status; /* exit code or 128+signal; -1 while running */
} child;

/* Starts argv[0] (a path) in its own process group with stdout and stderr
 * on pipes; env_extra is NULL or a NULL-terminated list of NAME=VALUE
 * added to the environment. */
static void child_start(child *c, char *const argv[], char *const *env_extra) {
  int po[2], pe[2], i;
  memset(c, 0, sizeof *c);
  c->status = -1;
  cr_assert(pipe(po) == 0 && pipe(pe) == 0);
  c->pid = fork();
  cr_assert(c->pid >= 0);
  if (c->pid == 0) {
    setpgid(0, 0);
    dup2(po[1], 1);
    dup2(pe[1], 2);
    close(po[0]);
    close(po[1]);
    close(pe[0]);
    close(pe[1]);
    for (i = 0; env_extra != NULL && env_extra[i] != NULL; i++)
      putenv(env_extra[i]);
    execv(argv[0], argv);
    _exit(127);
  }
  setpgid(c->pid, c->pid);
  close(po[1]);
  close(pe[1]);
  c->fd[0] = po[0];
  c->fd[1] = pe[0];
  for (i = 0; i < 2; i++) {
    c->cap[i] = 4096;
    c->buf[i] = malloc(c->cap[i]);
    cr_assert_not_null(c->buf[i]);
    c->buf[i][0] = '\0';
  }
}

/* Reads what the pipes hold, waiting up to ms for something to come. */
static void child_pump(child *c, int ms) {
  struct pollfd p[2];
  int i, n = 0, map[2];
  for (i = 0; i < 2; i++)
    if (c->fd[i] >= 0) {
      p[n].fd = c->fd[i];
      p[n].events = POLLIN;
      map[n++] = i;
    }
  if (n == 0) {
    if (ms > 0)
      sleep_s(ms / 1000.0);
    return;
  }
  if (poll(p, (nfds_t)n, ms) <= 0)
    return;
  for (i = 0; i < n; i++) {
    int k = map[i];
    ssize_t got;
    if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    if (c->cap[k] - c->len[k] < 2048) {
      c->cap[k] *= 2;
      c->buf[k] = realloc(c->buf[k], c->cap[k]);
      cr_assert_not_null(c->buf[k]);
    }
    got = read(c->fd[k], c->buf[k] + c->len[k], c->cap[k] - c->len[k] - 1);
    if (got > 0) {
      c->len[k] += (size_t)got;
      c->buf[k][c->len[k]] = '\0';
    } else if (got == 0 || errno != EINTR) {
      close(c->fd[k]);
      c->fd[k] = -1;
    }
  }
}

static int child_exited(child *c) {
  int st;
  if (c->status >= 0)
    return 1;
  if (waitpid(c->pid, &st, WNOHANG) != c->pid)
    return 0;
  c->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 1;
}

/* Waits up to timeout_s for needle on stdout (which 0) or stderr (1);
 * returns whether it came. */
static int child_wait_text(child *c, int which, const char *needle,
                           double timeout_s) {
  double end = now_s() + timeout_s;
  while (strstr(c->buf[which], needle) == NULL) {
    if (now_s() > end || (c->fd[which] < 0 && child_exited(c)))
      return 0;
    child_pump(c, 50);
  }
  return 1;
}

/* Waits up to timeout_s for the process to exit, then reads its pipes to
 * their end (for at most 2 s more: executors that outlive it hold them).
 * Returns whether it exited in time. */
static int child_wait(child *c, double timeout_s) {
  double end = now_s() + timeout_s;
  while (!child_exited(c)) {
    if (now_s() > end)
      return 0;
    child_pump(c, 20);
  }
  end = now_s() + 2;
  while ((c->fd[0] >= 0 || c->fd[1] >= 0) && now_s() < end)
    child_pump(c, 20);
  return 1;
}

/* Kills what is left of the child's process group and frees it. */
static void child_free(child *c) {
  int i;
  if (c->pid > 0) {
    kill(-c->pid, SIGKILL);
    if (!child_exited(c))
      waitpid(c->pid, NULL, 0);
  }
  for (i = 0; i < 2; i++) {
    if (c->fd[i] >= 0)
      close(c->fd[i]);
    free(c->buf[i]);
  }
  memset(c, 0, sizeof *c);
}

/* Fields of /proc/PID/stat: comm, state and parent.  Returns 0, or -1 when
 * the process is gone. */
static int proc_stat(pid_t pid, char *comm, size_t n, char *state,
                     pid_t *ppid) {
  char path[64], text[1024], *open, *close_;
  FILE *f;
  size_t got;
  int pp = 0;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (f == NULL)
    return -1;
  got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  open = strchr(text, '(');
  close_ = strrchr(text, ')');
  if (open == NULL || close_ == NULL || close_ < open)
    return -1;
  snprintf(comm, n, "%.*s", (int)(close_ - open - 1), open + 1);
  if (sscanf(close_ + 1, " %c %d", state, &pp) != 2)
    return -1;
  *ppid = (pid_t)pp;
  return 0;
}

/* The live (not zombie) processes named comm whose parent is parent, at
 * most max of them into pids; returns how many. */
static int children_named(pid_t parent, const char *comm, pid_t *pids,
                          int max) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  cr_assert_not_null(d);
  while ((e = readdir(d)) != NULL) {
    char name[64], state;
    pid_t pid, pp;
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    pid = (pid_t)atoi(e->d_name);
    if (proc_stat(pid, name, sizeof name, &state, &pp) != 0)
      continue;
    if (pp == parent && strcmp(name, comm) == 0 && state != 'Z' &&
        n < max)
      pids[n++] = pid;
  }
  closedir(d);
  return n;
}

/* Whether pid is a live process (not a zombie) named comm. */
static int alive_as(pid_t pid, const char *comm) {
  char name[64], state;
  pid_t pp;
  return proc_stat(pid, name, sizeof name, &state, &pp) == 0 &&
         state != 'Z' && strcmp(name, comm) == 0;
}

/* The --id an orion-executor was started with, from its command line, or
 * -1. */
static int executor_id(pid_t pid) {
  char path[64], text[4096];
  FILE *f;
  size_t got, i;
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  f = fopen(path, "r");
  if (f == NULL)
    return -1;
  got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  for (i = 0; i < got; i += strlen(text + i) + 1)
    if (strcmp(text + i, "--id") == 0 && i + 5 < got)
      return atoi(text + i + 5);
  return -1;
}

/* Reaps the zombie children of this process named orion-executor. */
static void reap_executors(void) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  if (d == NULL)
    return;
  while ((e = readdir(d)) != NULL) {
    char name[64], state;
    pid_t pid, pp;
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    pid = (pid_t)atoi(e->d_name);
    if (proc_stat(pid, name, sizeof name, &state, &pp) == 0 &&
        pp == getpid() && state == 'Z' &&
        strcmp(name, "orion-executor") == 0)
      waitpid(pid, NULL, WNOHANG);
  }
  closedir(d);
}

/* After a job's driver has exited: every executor it left behind became a
 * child of this subreaper.  Expects none alive after grace_s, then kills
 * and reaps any that are. */
static void expect_no_executors_left(const char *what, double grace_s) {
  pid_t left[16];
  int n, i;
  double end = now_s() + grace_s;
  for (;;) {
    reap_executors();
    n = children_named(getpid(), "orion-executor", left, 16);
    if (n == 0 || now_s() > end)
      break;
    sleep_s(0.05);
  }
  cr_expect_eq(n, 0, "%s: %d orion-executor process(es) outlived the "
                     "driver by %.1f s (first pid %d)",
               what, n, grace_s, n > 0 ? (int)left[0] : 0);
  for (i = 0; i < n; i++) {
    kill(left[i], SIGKILL);
    waitpid(left[i], NULL, 0);
  }
}

/* The jobs a test runs with pipes, killed (with their executors) by the
 * suite's fini when a failed assertion ends the test early. */
static child jobs[3];

static void free_jobs(void) {
  size_t i;
  for (i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
    if (jobs[i].pid > 0)
      child_free(&jobs[i]);
}

static void become_subreaper(void) {
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0,
               "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
}

/* One timeout for the whole suite (per-test .timeout options make
 * criterion 2.4.1 leak under LeakSanitizer, see t/test_wire.c). */
TestSuite(cluster, .init = become_subreaper, .fini = free_jobs,
          .timeout = 300);

/* A TCP port on which nothing listens now (bind test, any address),
 * starting from 20000 + pid % 20000. */
static int free_port(void) {
  static int next;
  int tries;
  if (next == 0)
    next = 20000 + (int)(getpid() % 20000);
  for (tries = 0; tries < 500; tries++) {
    struct sockaddr_in a;
    int s = socket(AF_INET, SOCK_STREAM, 0), ok, port = next++;
    if (next >= 60000)
      next = 20000;
    cr_assert(s >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
    if (ok)
      return port;
  }
  cr_assert_fail("no free TCP port found");
  return 0;
}

/* ------------------------------------------------------------------------
 * 1. The golden corpus at 1, 2 and 4 executors.
 * ---------------------------------------------------------------------- */

static int count_checks(const char *path) {
  int n = tu_count_line_prefix(path, "G.check");
  cr_assert(n >= 0, "cannot open %s", path);
  return n;
}

/* Runs every .lua file of t/analysis (but golden.lua and pending_*) on nexec
 * executors: each compares its loops with serial runs and raises on any
 * difference.  Returns the number of checks passed. */
static int goldens_on(int nexec) {
  char *dir = tu_src("t/analysis");
  DIR *d = opendir(dir);
  struct dirent *e;
  char n[16], reg[64];
  int checks = 0, files = 0, clustered = 0, tiers = 0;
  cr_assert(d != NULL, "cannot open %s", dir);
  snprintf(n, sizeof n, "%d", nexec);
  snprintf(reg, sizeof reg, "executor %d registered from ", nexec - 1);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    char path[2048];
    tu_run r;
    int want, got;
    if (len < 5 || strcmp(e->d_name + len - 4, ".lua") != 0 ||
        strcmp(e->d_name, "golden.lua") == 0 ||
        strncmp(e->d_name, "pending_", 8) == 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    want = count_checks(path);
    r = DRIVE("-v", "--executors", n, path); /* -v: registration lines */
    cr_expect_eq(r.status, 0, "%s on %d executors failed (exit %d):\n%s\n%s",
                 e->d_name, nexec, r.status, r.out, r.err);
    got = count_of(r.out, "golden ok: ");
    cr_expect_geq(got, want, "%s on %d executors: %d checks passed of %d:\n%s",
                  e->d_name, nexec, got, want, r.out);
    checks += got;
    /* Every accepted golden body in the compiled subset also ran in both
     * tiers with identical results (golden.lua's G.tiers). */
    tiers += count_of(r.out, "golden tiers ok: ");
    files++;
    clustered += strstr(r.err, reg) != NULL;
    tu_run_free(&r);
    expect_no_executors_left(e->d_name, 2);
  }
  closedir(d);
  free(dir);
  cr_log_info("golden corpus on %d executors: %d checks in %d files, %d of "
              "them ran loops on the cluster",
              nexec, checks, files, clustered);
  cr_expect_geq(checks, 40, "only %d golden checks", checks);
  cr_log_info("golden corpus on %d executors: %d bodies bit-identical in the "
              "compiled and interpreted tiers",
              nexec, tiers);
  cr_expect_geq(tiers, 55, "only %d golden bodies compared between tiers",
                tiers);
  /* The soundness_* files only check rejections; the others run loops. */
  cr_expect_geq(clustered, 10, "only %d files started %d executors",
                clustered, nexec);
  return checks;
}

Test(cluster, slow_goldens_on_1_2_4_executors) {
  int c1 = goldens_on(1), c2 = goldens_on(2), c4 = goldens_on(4);
  /* A check inside a loop may run more than once, but the same number of
   * times whatever the executor count. */
  cr_expect_eq(c1, c2, "%d checks on 1 executor, %d on 2", c1, c2);
  cr_expect_eq(c1, c4, "%d checks on 1 executor, %d on 4", c1, c4);
}

/* ------------------------------------------------------------------------
 * 2. Matrix factorization on MovieLens-100k.
 * ---------------------------------------------------------------------- */

/* The 4th column of the last epoch line ("   15  0.388  0.8275  0.9169"),
 * as text, into out. */
static int last_test_rmse(const char *out, char *text, size_t n) {
  const char *p = out;
  int found = 0;
  while (*p != '\0') {
    const char *e = strchr(p, '\n');
    size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
    char line[256], col[4][64];
    int epoch;
    if (len < sizeof line) {
      memcpy(line, p, len);
      line[len] = '\0';
      if (sscanf(line, "%63s %63s %63s %63s", col[0], col[1], col[2],
                 col[3]) == 4 &&
          sscanf(col[0], "%d", &epoch) == 1 &&
          isdigit((unsigned char)col[3][0])) {
        snprintf(text, n, "%s", col[3]);
        found = 1;
      }
    }
    p += len + (e != NULL);
  }
  return found;
}

Test(cluster, mf_movielens_100k_1_2_4_executors) {
  const char *data = tu_data_dir("movielens-100k/u.data");
  char train[1024], rmse[4][64];
  static const char *const counts[4] = {"0", "1", "2", "4"};
  double v[4], lo = 1e9, hi = 0;
  int i;
  snprintf(train, sizeof train, "%s/movielens-100k/u.data", data);
  for (i = 0; i < 4; i++) {
    char *mf = tu_src("apps/mf/mf.lua");
    double t0 = now_s();
    tu_run r = DRIVE("--executors", counts[i], mf, "--train", train,
                     "--format", "movielens", "--test-split", "0.1", "--k",
                     "16", "--epochs", "15");
    free(mf);
    cr_assert_eq(r.status, 0, "mf on %s executors: exit %d\n%s\n%s",
                 counts[i], r.status, r.out, r.err);
    cr_assert(last_test_rmse(r.out, rmse[i], sizeof rmse[i]),
              "no epoch line in:\n%s", r.out);
    v[i] = atof(rmse[i]);
    cr_log_info("mf on %s executors: final test RMSE %s (%.1f s)", counts[i],
                rmse[i], now_s() - t0);
    tu_run_free(&r);
    expect_no_executors_left("mf", 2);
    if (i == 0)
      continue;
    cr_expect_lt(v[i], 0.96, "%s executors: test RMSE %s", counts[i],
                 rmse[i]);
    if (v[i] < lo)
      lo = v[i];
    if (v[i] > hi)
      hi = v[i];
  }
  cr_expect_lt(hi / lo - 1, 0.005,
               "test RMSE spread: %s (1), %s (2), %s (4) executors", rmse[1],
               rmse[2], rmse[3]);
  /* One executor runs the same blocks in the same order as the driver
   * does in process. */
  cr_expect_str_eq(rmse[1], rmse[0],
                   "1 executor gave test RMSE %s, in-process %s", rmse[1],
                   rmse[0]);
}

/* ------------------------------------------------------------------------
 * 3. Buffers: exact totals, flush variants, flush points.
 * ---------------------------------------------------------------------- */

static void buffer_variant(const char *variant, const char *apply) {
  char want[128];
  tu_run r = DRIVE("-v", "--executors", "2", "@buffer_totals.lua", variant);
  expect_ok(&r, variant);
  snprintf(want, sizeof want, "variant %s, 2 executors", variant);
  expect_has(r.out, "totals ok: 1445 tokens, 7 topics");
  expect_has(r.out, want);
  expect_has(r.err, "executor 1 registered from 127.0.0.1:");
  cr_log_info("buffer %s: %s", apply, r.out);
  tu_run_free(&r);
  expect_no_executors_left(variant, 2);
}

Test(cluster, buffer_totals_flush_block) {
  buffer_variant("block", "add, flush block");
}

Test(cluster, buffer_totals_flush_loop) {
  buffer_variant("loop", "add, flush loop");
}

Test(cluster, buffer_totals_flush_every_3) {
  buffer_variant("3", "add, flush 3");
}

Test(cluster, buffer_totals_apply_function) {
  buffer_variant("fn", "function(old, d) return old + 2*d end");
}

Test(cluster, buffer_flush_points) {
  tu_run r = DRIVE("--executors", "2", "@flush_points.lua");
  expect_ok(&r, "flush_points.lua");
  expect_has(r.out, "flush block ok: 8 applications per topic, 8 blocks, 2 "
                    "executors");
  expect_has(r.out, "flush loop ok: 8 applications per topic, 8 blocks");
  expect_has(r.out, "flush 40 ok: 40 applications per topic");
  tu_run_free(&r);
  expect_no_executors_left("flush_points", 2);
}

/* Apply functions with helper arrays (orion.buffer's with, issue 21):
 * values on a sharded target (the owners apply), the driver-applied one,
 * helpers visible to later loops, and refusals and errors that name the
 * script's arrays and buffers, never internal ids (before, a captured
 * array failed at the first flush with "array 2 is not bound on this
 * executor" in "buffer 'buffer #1'"). */
static void apply_with_on(const char *n, const char *flush) {
  tu_run r = DRIVE("--executors", n, "@apply_with.lua", flush);
  expect_ok(&r, "apply_with.lua");
  expect_has(r.out, "sharded target: ok, 15000 applications");
  expect_has(r.out, "driver-applied target: ok");
  expect_has(r.out, "refused: orion.buffer Bad (into T): the apply function "
                    "captures array 'Other', which is not one of its "
                    "helpers; an apply function reaches other arrays only "
                    "through with: orion.buffer(T, {apply = function(old, "
                    "delta, Other, ...) ... end, with = {Other}})");
  expect_has(r.out, "refused: orion.buffer Bad (into T): the apply function "
                    "captures 'M', one of its helpers (with); it gets M's "
                    "value at the key as argument 3 instead");
  expect_has(r.out, "refused: orion.buffer Bad (into T): the apply function "
                    "captures its target 'T'");
  expect_has(r.out, "refused: orion.buffer Bad (into T): helper 'U' is {12} "
                    "f64, the target {2000} f64; a helper must be a dense "
                    "array of the target's dims");
  expect_has(r.out, "refused: orion.buffer Bad (into T): with gives helper "
                    "arrays to an apply function; apply is not a function");
  expect_has(r.out, "refused: parallel_for: the body uses array 'C', a "
                    "helper of buffer B (with)");
  expect_has(r.out, "apply error: buffer 'Bx', key (1): cannot store a "
                    "string in f64 helper array 'M'");
  cr_expect(strstr(r.out, "#") == NULL && strstr(r.err, "#") == NULL &&
                strstr(r.out, "not bound") == NULL,
            "an internal id in:\n%s\n%s", r.out, r.err);
  tu_run_free(&r);
  if (strcmp(n, "0") != 0)
    expect_no_executors_left("apply_with", 2);
}

Test(cluster, apply_with_helpers_in_the_driver) { apply_with_on("0", "loop"); }
Test(cluster, apply_with_helpers_on_1_executor) { apply_with_on("1", "loop"); }
Test(cluster, apply_with_helpers_on_2_executors_flush_block) {
  apply_with_on("2", "block");
}
Test(cluster, apply_with_helpers_on_4_executors) { apply_with_on("4", "loop"); }

/* flush = "managed" (issue 17): at the loop's end an additive i64 buffer
 * holds exactly the totals of flush = "loop" and of a serial count (a lost
 * or twice-sent update changes a count or a sum), and with executors
 * updates went early (the default budget: the measured link rate, or no
 * limit before one is measured; each block takes far longer than 16
 * bytes at any link's rate).  In the driver (0 executors) managed flushes
 * as "loop": nothing goes early. */
static void managed_on(const char *n, const char *mbps) {
  char want[64];
  tu_run r = mbps != NULL ? DRIVE("--executors", n, "--bandwidth-mbps", mbps,
                                  "@managed.lua")
                          : DRIVE("--executors", n, "@managed.lua");
  expect_ok(&r, "managed.lua");
  snprintf(want, sizeof want, "\"loop\"'s, %s executors",
           strcmp(n, "0") == 0 ? "1" : n);
  expect_has(r.out, "managed ok: 7200 tokens, 7 topics, 60 words: totals "
                    "of flush = \"managed\" equal flush = \"loop\"'s");
  expect_has(r.out, want);
  expect_has(r.out, "refused: orion.buffer: flush must be \"block\", "
                    "\"loop\", \"managed\", \"clock\" or a positive "
                    "integer, not \"often\"");
  if (mbps == NULL)
    expect_has(r.out, strcmp(n, "0") == 0 ? "early sends: none"
                                          : "early sends: yes");
  cr_log_info("managed on %s executors: %s", n, r.out);
  tu_run_free(&r);
  if (strcmp(n, "0") != 0)
    expect_no_executors_left("managed", 2);
}

Test(cluster, managed_totals_in_the_driver) { managed_on("0", NULL); }
Test(cluster, managed_totals_on_1_executor) { managed_on("1", NULL); }
Test(cluster, managed_totals_on_2_executors) { managed_on("2", NULL); }
Test(cluster, managed_totals_on_4_executors) { managed_on("4", NULL); }

/* A budget that sends some updates early and keeps the others pending
 * (how many depends on the time: only the totals are checked). */
Test(cluster, managed_totals_with_a_small_budget) {
  managed_on("2", "2");
}

/* Buffered writes applied while the loop runs (flush = "block") are
 * visible to the next block of the executor that wrote them, even when
 * the target's owner is busy computing (it failed before: the owner served
 * FETCHes from a copy without the requester's flush). */
Test(cluster, buffer_block_flush_reads_its_own_writes) {
  static const char *const ns[] = {"2", "4"};
  int i;
  for (i = 0; i < 2; i++) {
    tu_run r = DRIVE("--executors", ns[i], "@ryw.lua");
    char want[128];
    expect_ok(&r, "ryw.lua");
    snprintf(want, sizeof want,
             "ryw: %s executors, 8 blocks, every block saw its executor's "
             "earlier writes", ns[i]);
    expect_has(r.out, want);
    tu_run_free(&r);
    expect_no_executors_left("ryw", atoi(ns[i]));
  }
}

/* flush = "clock" (issue 36): buffers flushed every n blocks an executor
 * runs, a sharded target refreshed once a clock.  On 0, 1, 2 and 4
 * executors, compiled (the scan store) and interpreted: the options'
 * errors, exact totals, every block reads its executor's earlier writes
 * (inside a clock too), and on executors a clock of 4 blocks moves under
 * half the bytes of flush = "block"; apply = "mean" divides each
 * executor's flushes by the executor count; fast mode's f32 pending
 * values read and flush the same sums and means. */
static void clock_on(const char *n, const char *tier) {
  char want[128];
  tu_run r = DRIVE("--executors", n, "@clock.lua", tier);
  expect_ok(&r, "clock.lua");
  expect_has(r.out, "refused: orion.buffer: clock (blocks per clock) goes "
                    "with flush = \"clock\"");
  expect_has(r.out, "refused: orion.buffer: clock must be a whole number of "
                    "blocks from 1 to 2147483647");
  expect_has(r.out, "totals block: exact, every block saw its executor's "
                    "earlier writes");
  expect_has(r.out, "totals clock 3: exact, every block saw its executor's "
                    "earlier writes");
  if (strcmp(n, "0") != 0 && strcmp(n, "1") != 0)
    expect_has(r.out, "traffic: a clock of 4 blocks moves under half of "
                      "flush = \"block\"'s bytes");
  expect_has(r.out, "refused: orion.buffer: apply = \"mean\" needs a float "
                    "target (this one is i64)");
  expect_has(r.out, "refused: orion.buffer: apply = \"mean\" goes with a "
                    "flush while the loop runs");
  snprintf(want, sizeof want, "mean: exact, 12 / %s executors",
           strcmp(n, "0") == 0 ? "1" : n);
  expect_has(r.out, want);
  snprintf(want, sizeof want, "f32 pending: exact, %s executors",
           strcmp(n, "0") == 0 ? "1" : n);
  expect_has(r.out, want);
  snprintf(want, sizeof want, "clock ok: %s executors, tier %s",
           strcmp(n, "0") == 0 ? "1" : n, tier);
  expect_has(r.out, want);
  tu_run_free(&r);
  if (strcmp(n, "0") != 0)
    expect_no_executors_left("clock", atoi(n));
}

Test(cluster, clock_flush_in_the_driver) { clock_on("0", "c"); }
Test(cluster, clock_flush_on_1_executor_interpreted) { clock_on("1", "lua"); }
Test(cluster, clock_flush_on_2_executors) { clock_on("2", "c"); }
Test(cluster, clock_flush_on_4_executors) { clock_on("4", "c"); }
Test(cluster, clock_flush_on_4_executors_interpreted) {
  clock_on("4", "lua");
}

/* Bodies are sandboxed unless --allow-io, inside the driver and on
 * executors alike: each refused call fails with its name and the option
 * that allows it; with --allow-io the same calls run. */
Test(cluster, bodies_are_sandboxed_unless_allow_io) {
  static const char *const ns[] = {"0", "2"};
  static const char *const names[] = {
      "os.execute", "io.open", "io.popen", "os.getenv", "os.remove",
      "require", "debug.getinfo", "load binary"};
  int i, k;
  for (i = 0; i < 2; i++) {
    tu_run r = DRIVE("--executors", ns[i], "@sandbox.lua");
    tu_run a = DRIVE("--executors", ns[i], "--allow-io", "@sandbox.lua",
                     "allow");
    char want[96];
    expect_ok(&r, "sandbox.lua");
    expect_ok(&a, "sandbox.lua allow");
    for (k = 0; k < 8; k++) {
      snprintf(want, sizeof want, "%s: refused\n", names[k]);
      expect_has(r.out, want);
      snprintf(want, sizeof want, "%s: allowed\n", names[k]);
      expect_has(a.out, want);
    }
    expect_has(r.out, "load text, os.clock: ok 42.0");
    cr_expect(strstr(r.out, "NOT REFUSED") == NULL, "%s", r.out);
    tu_run_free(&r);
    tu_run_free(&a);
    expect_no_executors_left("sandbox", atoi(ns[i]));
  }
}

/* The side doors out of the sandbox (issue 32), inside the driver and on
 * executors: package.searchers 1 to 4 with package.path or cpath pointed
 * at a file or the shared Lua library, a saved package.loadlib, package
 * through _G, rawget and load's globals, bytecode from string.dump and
 * from the driver, string.dump through the strings' metatable,
 * collectgarbage, a finalizer (which would run beyond the loop's deadline)
 * set directly or through the shared metatables of arrays and files, the
 * debug registry, and refused functions run through coroutines and
 * pcall.  Each fails with "not available in loop bodies";
 * none writes its marker file or shows the secret file's text.  Before,
 * package.searchers[3] ran os.execute and [2] read the file. */
Test(cluster, sandbox_escapes_are_refused) {
  static const char *const ns[] = {"0", "2"};
  static const char *const names[] = {
      "package.searchers[1]",  "package.searchers[2]",
      "package.searchers[3]",  "package.searchers[4]",
      "package.cpath",         "package.loadlib (saved)",
      "_G.package",            "rawget(_G, 'package')",
      "load('return package')", "string.dump",
      "load(bytecode)",        "load(bytecode, 'b')",
      "getmetatable('').__index.dump", "('').dump",
      "collectgarbage",        "setmetatable(__gc)",
      "getmetatable(array).__gc", "getmetatable(io.stdout).__gc",
      "debug.getregistry",
      "coroutine.wrap(os.execute)", "coroutine.resume(require)",
      "coroutine.wrap(load package)", "pcall(os.getenv)",
      "io.stdin"};
  size_t i, k, n = sizeof names / sizeof names[0];
  for (i = 0; i < 2; i++) {
    tu_run r = DRIVE("--executors", ns[i], "@escape.lua");
    char want[96];
    expect_ok(&r, "escape.lua");
    for (k = 0; k < n; k++) {
      snprintf(want, sizeof want, "%s: refused\n", names[k]);
      expect_has(r.out, want);
    }
    snprintf(want, sizeof want, "escapes refused: %zu of %zu\n", n, n);
    expect_has(r.out, want);
    cr_expect(strstr(r.out, "ESCAPED") == NULL &&
                  strstr(r.err, "SECRET-8f3e") == NULL,
              "%s executors:\n%s\n%s", ns[i], r.out, r.err);
    tu_run_free(&r);
    expect_no_executors_left("escape", atoi(ns[i]));
  }
}

/* Writes to tables a body did not create (issue 33): a field of a captured
 * upvalue or global table (directly, through a local alias or a pairs
 * loop's variable, or with table.insert, table.sort, rawset), of _G or
 * _ENV, of a library table
 * (math.abs = nil, also through `local m = math`) refuse the loop naming
 * the table, the field and file:line, on 0 and 2 executors; the script's
 * tables keep their values.  What the analysis cannot see through
 * (select(1, math).abs = nil, a helper's result, a serial schedule) the
 * sandbox refuses as it runs, and the next loop still sees math.abs and
 * string.rep.  Before, the first loop ran and printed 0 0 8.0 (0
 * executors) or 0 0 4.0 (2) where a serial run gives 8 8 8, and
 * `_G.math = nil` broke every later loop. */
Test(cluster, writes_to_captured_tables_are_refused) {
  static const char *const ns[] = {"0", "2"};
  static const char *const want[] = {
      "S.n and T.n: refused: parallel_for: the loop cannot run in parallel:"
      "   S.n at ",
      "captab.lua:22: the body writes field 'n' of 'S', a table captured "
      "from outside the body; each executor, and the driver with "
      "--executors 0, runs the body on a copy of it, so the write would be "
      "lost: add into an orion.accumulator (acc:add(x)), write through an "
      "orion.buffer, or use a table created inside the body (local t = {})",
      "captab.lua:23: the body writes field 'n' of 'T', a table captured",
      "S[k] = v: refused: parallel_for: the loop cannot run in parallel:   "
      "S[i] at ",
      "captab.lua:26: the body writes a field of 'S', a table captured",
      "captab.lua:27: the body changes 'S' with table.insert, a table",
      "captab.lua:28: the body changes 'S' with table.sort, a table",
      "captab.lua:29: the body changes 'S' with rawset, a table",
      "local alias: refused: parallel_for: the loop cannot run in parallel:"
      "   r[1] at ",
      "captab.lua:32: the body writes a field of 'S', a table captured",
      "captab.lua:34: the body writes field 'x' of '_G', the body's global "
      "environment, which every later block and loop on the executor shares "
      "(read only in loop bodies)",
      "captab.lua:35: the body writes field 'x' of '_ENV', the body's",
      "captab.lua:36: the body writes field 'abs' of 'math', a standard "
      "library table",
      "captab.lua:37: the body writes field 'math' of '_G', the body's",
      "captab.lua:40: the body writes field 'abs' of 'math', a standard",
      "after the refusals: S.n 0, T.n 0, A[8] 0.0\n",
      "select(1, math).abs = nil: refused: parallel_for body failed on "
      "executor 0, element (1): ",
      "captab.lua:47: assignment to math.abs in a loop body: the body's "
      "globals and standard library are read only (every later block and "
      "loop on this executor shares them); keep the value in a local or a "
      "table created inside the body",
      "captab.lua:50: assignment to string.rep in a loop body",
      "captab.lua:51: assignment to _G.math in a loop body",
      "captab.lua:53: assignment to string.rep in a loop body",
      "next loop: ran\nnext loop: A[8] 16.0\n",
      "body's own table: ran\nbody's own table: A[8] 109.0\n",
      "captab.lua:76: the body writes field 'n' of 'R', a table captured",
      "captab.lua:79: the body writes field 'n' of 'T', a table captured"};
  size_t i, k;
  for (i = 0; i < 2; i++) {
    tu_run r = DRIVE("--executors", ns[i], "@captab.lua");
    expect_ok(&r, "captab.lua");
    for (k = 0; k < sizeof want / sizeof want[0]; k++)
      expect_has(r.out, want[k]);
    tu_run_free(&r);
    expect_no_executors_left("captab", atoi(ns[i]));
  }
}

/* A sum accumulator's partials are combined in executor order, not in the
 * order the executors finish: the same loop gives the same floating-point
 * sum every run (here 0, where another order gives 1). */
Test(cluster, sum_accumulator_is_the_same_every_run) {
  tu_run r = DRIVE("--executors", "4", "@acc_order.lua", "12");
  expect_ok(&r, "acc_order.lua");
  expect_has(r.out, "distinct sums over 12 runs: 1 (0)");
  tu_run_free(&r);
  expect_no_executors_left("acc_order", 4);
}

/* A script that keeps the driver busy between loops for longer than both
 * heartbeat timeouts (the driver's 2 s, the executors' 2 s) loses nothing:
 * the executors wait while they have no work, and the driver does not count
 * the time it was away as their silence. */
Test(cluster, slow_driver_busy_between_loops_past_the_heartbeat_timeout) {
  tu_run r;
  setenv("ORION_HEARTBEAT_TIMEOUT", "2", 1);
  r = DRIVE("--executors", "2", "--heartbeat-timeout", "2",
            "@busy_driver.lua", "3");
  unsetenv("ORION_HEARTBEAT_TIMEOUT");
  expect_ok(&r, "busy_driver.lua");
  expect_has(r.out, "before\t64.0\nafter\t64.0\n");
  tu_run_free(&r);
  expect_no_executors_left("busy_driver", 2);
}

/* ------------------------------------------------------------------------
 * 4. A server-held read-only array.
 * ---------------------------------------------------------------------- */

Test(cluster, server_read_only_array) {
  tu_run r = DRIVE("--executors", "2", "@server_ro.lua");
  expect_ok(&r, "server_ro.lua");
  expect_has(r.out, "array scale: server (read-only)");
  expect_has(r.out, "array Y: local");
  expect_has(r.out, "server_ro ok: 5000 elements, schedule none, 2 "
                    "executors");
  tu_run_free(&r);
  expect_no_executors_left("server_ro", 2);
}

/* Server-held arrays sharded across executors: the owners apply the
 * buffered writes and serve the reads; the driver only collects the
 * owners' changes at the end of a loop. */
static void sharded_run(const char *n, const char *variant) {
  char line[512];
  long long moved, peer, writes;
  tu_run r = DRIVE("--executors", n, "@sharded.lua", variant);
  expect_ok(&r, "sharded.lua");
  expect_has(r.out, "sharded ok");
  line_with(r.out, "loop 1: ", line, sizeof line);
  cr_assert(sscanf(line, "loop 1: executors %*d bytes_moved %lld peer_bytes "
                         "%lld shard_writes %lld",
                   &moved, &peer, &writes) == 3, "%s", line);
  cr_expect_gt(writes, 0, "the owners applied no buffered writes: %s", line);
  cr_expect_gt(peer, 0, "no bytes between executors: %s", line);
  line_with(r.out, "loop 2: ", line, sizeof line);
  cr_assert(sscanf(line, "loop 2: executors %*d bytes_moved %lld peer_bytes "
                         "%lld",
                   &moved, &peer) == 2, "%s", line);
  /* Each executor reads the part of the 48 KB totals that the others
   * own, from them.  The driver sends the body (and its compiled code)
   * but not the totals: a driver serving them would send 48 KB to each. */
  cr_expect_geq(peer, (atoi(n) - 1) * 48000 * 9 / 10,
                "reads did not come from the owners: %s", line);
  cr_expect_lt(moved, atoi(n) * 48000 / 2, "the driver sent the totals: %s",
               line);
  /* Loop 6 reads what loop 4 read, after a loop that does not bind the
   * totals: the executors kept the rows, so only version lists travel
   * (the script itself checks that every read sum is right, after direct
   * writes and driver-side changes too). */
  line_with(r.out, "loop 6: ", line, sizeof line);
  cr_assert(sscanf(line, "loop 6: executors %*d bytes_moved %lld peer_bytes "
                         "%lld",
                   &moved, &peer) == 2, "%s", line);
  cr_expect_lt(peer, atoi(n) * 1000, "unchanged rows fetched again: %s",
               line);
  cr_log_info("sharded %s %s:\n%s", n, variant, r.out);
  tu_run_free(&r);
  expect_no_executors_left("sharded", 2);
}

Test(cluster, sharded_server_arrays_3_executors) {
  sharded_run("3", "add");
}

Test(cluster, sharded_server_arrays_apply_function_4_executors) {
  sharded_run("4", "fn");
}

/* ------------------------------------------------------------------------
 * 5. Loop statistics and resident blocks.
 * ---------------------------------------------------------------------- */

static long long stat_of(const char *out, int loop, const char *key) {
  char head[32], line[512];
  const char *p;
  snprintf(head, sizeof head, "loop %d: ", loop);
  line_with(out, head, line, sizeof line);
  p = strstr(line, key);
  cr_assert(p != NULL, "no %s for loop %d in:\n%s", key, loop, out);
  return atoll(p + strlen(key) + 1);
}

Test(cluster, stats_and_resident_blocks) {
  static const int counts[2] = {2, 4};
  int k;
  for (k = 0; k < 2; k++) {
    char n[8];
    long long b1, b2;
    tu_run r;
    snprintf(n, sizeof n, "%d", counts[k]);
    r = DRIVE("--executors", n, "@stats.lua");
    expect_ok(&r, "stats.lua");
    cr_expect_eq(stat_of(r.out, 1, "executors"), counts[k], "%s", r.out);
    cr_expect_eq(stat_of(r.out, 1, "executor_seconds"), counts[k], "%s",
                 r.out);
    cr_expect_eq(stat_of(r.out, 2, "executors"), counts[k], "%s", r.out);
    b1 = stat_of(r.out, 1, "bytes_moved");
    b2 = stat_of(r.out, 2, "bytes_moved");
    cr_expect_gt(b1, 0, "%s", r.out);
    /* The blocks stay on the executors: the second pass sends little
     * more than the body and the block orders. */
    cr_expect_lt(b2, b1 / 10, "second loop moved %lld bytes, first %lld",
                 b2, b1);
    cr_log_info("stats on %d executors: bytes_moved %lld then %lld",
                counts[k], b1, b2);
    tu_run_free(&r);
    expect_no_executors_left("stats", 2);
  }
}

/* The driver_bytes of pass p in t/cluster/bodycache.lua's output. */
static long long pass_bytes(const char *out, int p) {
  char head[32], line[256];
  snprintf(head, sizeof head, "pass %d driver_bytes ", p);
  line_with(out, head, line, sizeof line);
  return atoll(line + strlen(head));
}

/* Bodies kept by the executors (wire version 22; t/cluster/bodycache.lua,
 * whose body captures about 150 KB): the script checks each pass's sum;
 * here, on 2 and 3 executors, the second pass (the same body) and the
 * third (a captured number changed) move under a tenth of the first's
 * driver bytes, the fifth (another captured table) about as much as the
 * first, and the sixth (the first body again) little. */
Test(cluster, bodies_kept_by_digest) {
  static const char *const counts[2] = {"2", "3"};
  int k;
  for (k = 0; k < 2; k++) {
    tu_run r = DRIVE("--executors", counts[k], "@bodycache.lua");
    long long b[7];
    int p;
    expect_ok(&r, "bodycache.lua");
    expect_has(r.out, "bodycache ok");
    for (p = 1; p <= 6; p++)
      b[p] = pass_bytes(r.out, p);
    cr_expect_gt(b[1], 100000LL * atoi(counts[k]), "%s", r.out);
    cr_expect_lt(b[2], b[1] / 10, "the same body again:\n%s", r.out);
    cr_expect_lt(b[3], b[1] / 10, "one captured number changed:\n%s",
                 r.out);
    cr_expect_gt(b[5], b[1] / 2, "another captured table:\n%s", r.out);
    cr_expect_lt(b[6], b[1] / 10, "the first body again:\n%s", r.out);
    cr_log_info("bodycache on %s executors: driver bytes %lld %lld %lld "
                "%lld %lld %lld",
                counts[k], b[1], b[2], b[3], b[4], b[5], b[6]);
    tu_run_free(&r);
    expect_no_executors_left("bodycache", 2);
  }
}

/* Per-loop metrics on 2 executors (t/cluster/loop_metrics.lua): bytes
 * through the driver (bytes_moved is their old name), bytes between the
 * executors only for the loops that exchange data, and per executor the
 * seconds computing, waiting and idle (the script checks that they fit in
 * the loop's wall time). */
Test(cluster, loop_metrics_bytes_and_seconds) {
  tu_run r = DRIVE("--executors", "2", "@loop_metrics.lua");
  int loop;
  expect_ok(&r, "loop_metrics.lua");
  expect_has(r.out, "loop_metrics ok");
  for (loop = 1; loop <= 3; loop++) {
    long long driver = stat_of(r.out, loop, "driver_bytes");
    long long peer = stat_of(r.out, loop, "peer_bytes");
    cr_expect_eq(stat_of(r.out, loop, "executors"), 2, "%s", r.out);
    cr_expect_gt(driver, 0, "loop %d: %s", loop, r.out);
    cr_expect_eq(stat_of(r.out, loop, "bytes_moved"), driver, "loop %d: %s",
                 loop, r.out);
    /* Loop 1 sends buffered writes to the owners, loop 3 fetches from
     * them; loop 2 binds nothing sharded, and no byte of loop 1 (its
     * FLUSH_ACKs) may be counted in it. */
    if (loop == 2)
      cr_expect_eq(peer, 0, "loop 2 moved bytes between executors: %s",
                   r.out);
    else
      cr_expect_gt(peer, 0, "loop %d moved no bytes between executors: %s",
                   loop, r.out);
  }
  tu_run_free(&r);
  expect_no_executors_left("loop_metrics", 2);
}

/* ------------------------------------------------------------------------
 * 6. A body error on an executor.
 * ---------------------------------------------------------------------- */

Test(cluster, body_error_names_executor_element_and_line) {
  char line[512];
  tu_run r = DRIVE("-v", "--executors", "2", "@body_error.lua");
  cr_expect_eq(r.status, 1, "exit %d\n%s", r.status, r.err);
  line_with(r.err, "parallel_for body failed on executor ", line,
            sizeof line);
  cr_expect(line[0] != '\0', "no body failure message in:\n%s", r.err);
  expect_has(line, at("body_error.lua", "pfor"));
  expect_has(line, "parallel_for body failed on executor ");
  cr_expect(strstr(line, "executor 0, element (33, 4)") != NULL ||
                strstr(line, "executor 1, element (33, 4)") != NULL,
            "no \"executor K, element (33, 4)\" in: %s", line);
  expect_has(line, at("body_error.lua", "error"));
  expect_has(line, "boom at 33, 4");
  expect_has(r.err, "stack traceback:");
  cr_expect(strstr(r.out, "not reached") == NULL, "%s", r.out);
  expect_has(r.err, "executor 1 registered from 127.0.0.1:");
  tu_run_free(&r);
  expect_no_executors_left("body error", 2);
}

/* ------------------------------------------------------------------------
 * 7. An executor killed with SIGKILL in the middle of a loop.
 * ---------------------------------------------------------------------- */

/* Starts a long loop on 2 executors with --heartbeat-timeout 3, sends sig
 * to one executor once the loop runs, and checks the end of the job: exit
 * code 3 within 10 s, one message naming the executor, its address and the
 * loop (and `also`, when not NULL), and no executor left 2 s later.
 * Returns the seconds from the signal to the driver's exit. */
static double lose_an_executor(int sig, const char *also) {
  child *c = &jobs[0];
  char *path = script("long_loop.lua");
  char *argv[] = {(char *)tu_driver(), "-v", "--executors", "2",
                  "--heartbeat-timeout", "3", path, "400", "20000000",
                  NULL};
  pid_t ex[4];
  int n = 0, id, i;
  char reg[64], addr[128], line[1024], want[256];
  const char *p;
  double t_sig, waited;
  child_start(c, argv, NULL);
  free(path);
  cr_assert(child_wait_text(c, 0, "loop started\n", 60),
            "the loop never started:\n%s\n%s", c->buf[0], c->buf[1]);
  for (i = 0; i < 100 && n < 2; i++) {
    n = children_named(c->pid, "orion-executor", ex, 4);
    if (n < 2)
      sleep_s(0.05);
  }
  cr_assert_eq(n, 2, "found %d executors of driver %d", n, (int)c->pid);
  id = executor_id(ex[0]);
  cr_assert(id == 0 || id == 1, "executor %d has --id %d", (int)ex[0], id);
  snprintf(reg, sizeof reg, "executor %d registered from ", id);
  cr_assert(child_wait_text(c, 1, reg, 10), "%s", c->buf[1]);
  p = strstr(c->buf[1], reg) + strlen(reg);
  snprintf(addr, sizeof addr, "%.*s", (int)strcspn(p, " \n"), p);
  sleep_s(0.3); /* the long loop's blocks are running */
  cr_assert(!child_exited(c), "the driver ended early:\n%s\n%s", c->buf[0],
            c->buf[1]);
  cr_assert_eq(kill(ex[0], sig), 0);
  t_sig = now_s();
  cr_expect(child_wait(c, 10), "the driver still runs 10 s after "
                               "executor %d got signal %d:\n%s",
            id, sig, c->buf[1]);
  waited = now_s() - t_sig;
  cr_log_info("signal %d to executor %d (%s): the driver exited with %d "
              "after %.2f s",
              sig, id, addr, c->status, waited);
  cr_expect_eq(c->status, 3, "exit status %d (want 3):\n%s", c->status,
               c->buf[1]);
  line_with(c->buf[1], "cluster failure: ", line, sizeof line);
  cr_expect(line[0] != '\0', "no cluster failure message in:\n%s",
            c->buf[1]);
  cr_expect_eq(count_of(c->buf[1], "cluster failure: "), 1, "%s", c->buf[1]);
  snprintf(want, sizeof want, "executor %d (%s", id, addr);
  expect_has(line, want);
  if (also != NULL)
    expect_has(line, also);
  /* "in the parallel_for at DIR/long_loop.lua:16" */
  snprintf(want, sizeof want, "%s", at("long_loop.lua", "pfor"));
  want[strlen(want) - 1] = '\0';
  expect_has(line, "in the parallel_for at ");
  expect_has(line, want);
  cr_log_info("%s", line);
  /* The executor still there says why it stops (SHUTDOWN's reason). */
  snprintf(want, sizeof want,
           "orion-executor %d: stopping: the driver ended the job (executor "
           "%d (%s",
           1 - id, id, addr);
  expect_has(c->buf[1], want);
  cr_expect(strstr(c->buf[0], "checksum") == NULL, "%s", c->buf[0]);
  /* Neither the lost executor nor its partner outlives the job. */
  for (i = 0; i < 200; i++) {
    reap_executors();
    if (!alive_as(ex[0], "orion-executor") &&
        !alive_as(ex[1], "orion-executor"))
      break;
    sleep_s(0.01);
  }
  cr_expect(!alive_as(ex[0], "orion-executor"),
            "the lost executor (pid %d) is still there 2 s after the driver",
            (int)ex[0]);
  cr_expect(!alive_as(ex[1], "orion-executor"),
            "the other executor (pid %d) is still alive 2 s after the "
            "driver",
            (int)ex[1]);
  expect_no_executors_left("lost executor", 0);
  child_free(c);
  return waited;
}

/* The loop deadline (issue 18): a body that never returns, on 2
 * executors, interpreted and compiled, with opts.timeout and with
 * --loop-timeout: the loop ends with an error naming the executor, the
 * block and the element each was on (the first of its block), and no
 * executor is left.  Before, the driver waited for ever. */
static void loop_timeout_on(const char *tier, const char *how) {
  char line[512], what[64];
  double t0 = now_s();
  tu_run r = strcmp(how, "opts") == 0
                 ? DRIVE("--executors", "2", "@loop_timeout.lua", tier, "1")
                 : DRIVE("--executors", "2", "--loop-timeout", "1",
                         "@loop_timeout.lua", tier);
  snprintf(what, sizeof what, "tier %s, %s", tier, how);
  cr_log_info("%s: the driver ended after %.1f s", what, now_s() - t0);
  cr_expect_eq(r.status, 1, "%s: exit %d\n%s", what, r.status, r.err);
  line_with(r.err, "parallel_for body failed on executor ", line,
            sizeof line);
  cr_expect(line[0] != '\0', "%s: no body failure in:\n%s", what, r.err);
  cr_log_info("%s: %s", what, line);
  expect_has(line, at("loop_timeout.lua", "pfor"));
  cr_expect(strstr(line, "executor 0, element (1): block 0 ran past the "
                         "loop's timeout of 1 s") != NULL ||
                strstr(line, "executor 1, element (") != NULL,
            "%s: no executor, element and block in: %s", what, line);
  expect_has(line, "ran past the loop's timeout of 1 s (opts.timeout or "
                   "--loop-timeout)");
  cr_expect(strstr(r.out, "not reached") == NULL, "%s", r.out);
  tu_run_free(&r);
  expect_no_executors_left(what, 2);
}

Test(cluster, loop_timeout_ends_a_body_that_never_returns) {
  loop_timeout_on("lua", "opts");
  loop_timeout_on("c", "opts");
  loop_timeout_on("lua", "--loop-timeout");
  loop_timeout_on("c", "--loop-timeout");
}

/* The loop deadline holds whatever the body catches (issue 32): a body
 * spinning inside pcall, coroutine.wrap, coroutine.resume, xpcall (also
 * with a handler that spins) or a loop of pcalls ends its loop with the
 * deadline's error within 5 s, inside the driver and on executors.
 * Before, all but the last ended "successfully" after the timeout, and
 * the last two ran for ever.  A body that catches its own error in time
 * still runs afterwards. */
Test(cluster, loop_timeout_holds_when_the_body_catches_it) {
  static const char *const ns[] = {"0", "2"};
  static const char *const names[] = {
      "pcall", "coroutine.wrap", "coroutine.resume", "xpcall",
      "xpcall with a spinning handler", "pcall in a loop"};
  size_t i, k;
  for (i = 0; i < 2; i++) {
    tu_run r = DRIVE("--executors", ns[i], "@deadline_catch.lua");
    char want[96];
    expect_ok(&r, "deadline_catch.lua");
    for (k = 0; k < sizeof names / sizeof names[0]; k++) {
      snprintf(want, sizeof want, "%s: stopped\n", names[k]);
      expect_has(r.out, want);
    }
    expect_has(r.out, "element (1): block 0 ran past the loop's timeout of "
                      "0.5 s (opts.timeout or --loop-timeout)\n");
    expect_has(r.out, "in time: 1 2 3 4\n");
    tu_run_free(&r);
    expect_no_executors_left("deadline_catch", atoi(ns[i]));
  }
}

Test(cluster, kill_9_ends_the_job_with_code_3) {
  double waited = lose_an_executor(SIGKILL, "was killed by signal 9");
  /* A dead process is seen at once, not at the heartbeat timeout. */
  cr_expect_lt(waited, 2.5, "%.2f s", waited);
}

Test(cluster, stopped_executor_hits_the_heartbeat_timeout) {
  /* The loop's state machine names the block lost with the executor. */
  double waited = lose_an_executor(SIGSTOP, " while running block ");
  /* Silent, not dead: only the 3 s heartbeat timeout can tell. */
  cr_expect_geq(waited, 2, "%.2f s", waited);
}

/* ------------------------------------------------------------------------
 * 8. Hostile connections to the driver's port while a job runs.
 * ---------------------------------------------------------------------- */

#define LOOP_N "400"
#define LOOP_WORK "1500000"

static int connect_to(int port) {
  struct sockaddr_in a;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert(s >= 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(connect(s, (struct sockaddr *)&a, sizeof a), 0,
               "connect to 127.0.0.1:%d: %s", port, strerror(errno));
  return s;
}

/* Sends bytes, then expects the driver to close the connection (end of
 * file or a reset) within 5 s, reading and dropping what it sends.
 * Returns the seconds it took. */
static double expect_closed_on(int s, const void *bytes, size_t n,
                               const char *what) {
  int closed = 0;
  double t0 = now_s(), end = t0 + 5;
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(s, (const char *)bytes + off, n - off, MSG_NOSIGNAL);
    if (w <= 0)
      break; /* closed already, while we were still sending */
    off += (size_t)w;
  }
  while (!closed && now_s() < end) {
    struct pollfd p = {s, POLLIN, 0};
    char buf[512];
    ssize_t got;
    if (poll(&p, 1, 100) <= 0)
      continue;
    got = recv(s, buf, sizeof buf, 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET))
      closed = 1;
  }
  close(s);
  cr_expect(closed, "%s: the driver kept the connection open for 5 s",
            what);
  return now_s() - t0;
}

static double expect_closed(int port, const void *bytes, size_t n,
                            const char *what) {
  return expect_closed_on(connect_to(port), bytes, n, what);
}

/* A client that follows the handshake with a token of its own: the
 * driver's ANSWER comes (it proves nothing to us), our PROOF is wrong. */
static double expect_wrong_token_closed(int port) {
  static const char wrong[] = "0123456789abcdef0123456789abcdef";
  int s = connect_to(port);
  orion_sec sec;
  orion_buf out;
  unsigned char answer[ORION_SEC_ANSWER_LEN], proof[ORION_SEC_PROOF_LEN];
  cr_assert_eq(orion_sec_init(&sec, ORION_SEC_CONNECT, wrong, strlen(wrong),
                              ORION_SEC_AUTO), 0);
  orion_buf_init(&out);
  orion_sec_start(&sec, &out);
  cr_assert_eq(tu_raw_send(s, out.data, out.len), 0);
  cr_assert_eq(recv(s, answer, sizeof answer, MSG_WAITALL),
               (ssize_t)sizeof answer, "no ANSWER from the driver");
  tu_sec_forge_proof(wrong, sec.challenge, answer, proof);
  orion_buf_free(&out);
  orion_sec_free(&sec);
  return expect_closed_on(s, proof, sizeof proof, "wrong token");
}

static void checksum_of(const char *out, char *text, size_t n) {
  line_with(out, "checksum ", text, n);
  cr_assert(text[0] != '\0', "no checksum in:\n%s", out);
}

Test(cluster, bad_clients_are_refused_and_the_job_goes_on) {
  char *path = script("long_loop.lua");
  char ref[128], got[128], port_s[32], listen[64];
  char *argv[] = {(char *)tu_driver(), "--executors", "2", "--listen", listen,
                  path, LOOP_N, LOOP_WORK, NULL};
  tu_run r;
  child *c = &jobs[0];
  unsigned char noise[4096], huge[9 + 64];
  int port = 0, attempt, i;
  unsigned seed = (unsigned)getpid();
  double t[3];

  /* The checksum of an undisturbed run. */
  r = DRIVE("--executors", "2", path, LOOP_N, LOOP_WORK);
  expect_ok(&r, "long_loop.lua");
  checksum_of(r.out, ref, sizeof ref);
  cr_log_info("undisturbed: %s", r.out);
  tu_run_free(&r);
  expect_no_executors_left("long loop", 2);

  for (attempt = 0; attempt < 5; attempt++) {
    port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    child_start(c, argv, NULL);
    if (child_wait_text(c, 0, "loop started\n", 60))
      break;
    child_wait(c, 10);
    cr_assert(strstr(c->buf[1], "in use") != NULL,
              "the job did not start (exit %d):\n%s\n%s", c->status, c->buf[0],
              c->buf[1]);
    child_free(c); /* the port was taken meanwhile: another one */
  }
  cr_assert_lt(attempt, 5, "no port could be used");
  snprintf(port_s, sizeof port_s, "%d", port);

  /* (a) The handshake with the wrong token. */
  t[0] = expect_wrong_token_closed(port);
  /* (b) 4 KiB of random bytes. */
  for (i = 0; i < (int)sizeof noise; i++)
    noise[i] = (unsigned char)(rand_r(&seed) >> 7);
  t[1] = expect_closed(port, noise, sizeof noise, "random bytes");
  /* (c) A HELLO header declaring a 4 GiB payload, and a little of it. */
  memset(huge, 'x', sizeof huge);
  huge[0] = ORION_WIRE_MAGIC0;
  huge[1] = ORION_WIRE_MAGIC1;
  huge[2] = ORION_WIRE_VERSION;
  huge[3] = ORION_WIRE_HELLO;
  huge[4] = 0;
  huge[5] = 0xf0;
  huge[6] = huge[7] = huge[8] = 0xff;
  t[2] = expect_closed(port, huge, sizeof huge, "huge HELLO");
  cr_log_info("bad clients closed after %.3f, %.3f, %.3f s", t[0], t[1],
              t[2]);
  /* The connections came while the job ran. */
  cr_expect(!child_exited(c), "the loop ended before the last bad client "
                               "(make LOOP_WORK larger)");

  cr_assert(child_wait(c, 120), "the job did not end");
  cr_expect_eq(c->status, 0, "exit %d:\n%s", c->status, c->buf[1]);
  checksum_of(c->buf[0], got, sizeof got);
  cr_expect_str_eq(got, ref, "with bad clients: %s; undisturbed: %s", got,
                   ref);
  cr_expect_eq(count_of(c->buf[1], "refused a connection from 127.0.0.1:"), 3,
               "want 3 refusals in:\n%s", c->buf[1]);
  expect_has(c->buf[1], "refused a connection");
  expect_has(c->buf[1], "authentication failed: the peer does not hold the "
                        "job's token");
  cr_expect(strstr(c->buf[1], "cluster failure") == NULL, "%s", c->buf[1]);
  cr_log_info("driver stderr:\n%s", c->buf[1]);
  child_free(c);
  expect_no_executors_left("bad clients", 2);
  free(path);
}

/* ------------------------------------------------------------------------
 * 9. The launchers' messages.
 * ---------------------------------------------------------------------- */

Test(cluster, hosts_file_with_a_bad_line) {
  char *hosts = tu_write_temp(".hosts", "# two hosts\nnode-a 2\nnode-b x\n");
  char want[512];
  tu_run r = DRIVE("--hosts", hosts, "@stats.lua");
  cr_expect(r.status == 2 || r.status == 3, "exit %d\n%s", r.status, r.err);
  snprintf(want, sizeof want, "%s:3:", hosts);
  expect_has(r.err, want);
  expect_has(r.err, "bad slots 'x'");
  cr_log_info("bad hosts file: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  unlink(hosts);
  free(hosts);
}

Test(cluster, manual_launcher_prints_commands_and_times_out) {
  double t0 = now_s();
  tu_run r = DRIVE("--launcher", "manual", "--executors", "2",
                   "--register-timeout", "1", "@stats.lua");
  double took = now_s() - t0;
  char line[1024];
  int cmds = 0;
  const char *p = r.err;
  cr_expect_eq(r.status, 3, "exit %d\n%s", r.status, r.err);
  cr_expect_lt(took, 10, "took %.1f s", took);
  while (*p != '\0') {
    const char *e = strchr(p, '\n');
    size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
    snprintf(line, sizeof line, "%.*s", (int)len, p);
    if (strstr(line, "orion-executor") != NULL &&
        strstr(line, "--driver") != NULL) {
      char id[32];
      snprintf(id, sizeof id, "'--id' '%d'", cmds);
      cr_expect(strstr(line, id) != NULL, "no %s in: %s", id, line);
      expect_has(line, "ORION_TOKEN='");
      cr_expect(strstr(line, "--token") == NULL,
                "the token is an argument (ps shows it): %s", line);
      cmds++;
    }
    p += len + (e != NULL);
  }
  cr_expect_eq(cmds, 2, "%d command lines in:\n%s", cmds, r.err);
  line_with(r.err, "never registered", line, sizeof line);
  cr_expect(line[0] != '\0', "no \"never registered\" in:\n%s", r.err);
  expect_has(line, "2 of 2 executors never registered within 1 s");
  expect_has(line, "executor 0 ");
  /* The message lists the ids after one "executor": "executor 0
   * (manual), 1 (manual)". */
  cr_expect(strstr(line, "executor 1 ") != NULL ||
                strstr(line, ", 1 (manual)") != NULL,
            "executor 1 not named in: %s", line);
  tu_run_free(&r);
}

/* ------------------------------------------------------------------------
 * 10. Executors in other network namespaces (root only).
 * ---------------------------------------------------------------------- */

static struct {
  int up; /* something was created: clean up */
  char br[16], ns[2][32], veth[2][16];
  int net; /* the third byte of 10.77.N.0/24 */
  child exec[2];
  int nexec;
} NS;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...) {
  char cmd[1024];
  va_list ap;
  int st;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void netns_cleanup(void) {
  int k;
  for (k = 0; k < NS.nexec; k++)
    child_free(&NS.exec[k]);
  NS.nexec = 0;
  if (!NS.up)
    return;
  for (k = 0; k < 2; k++) {
    sh("ip netns del %s >/dev/null 2>&1", NS.ns[k]);
    sh("ip link del %s >/dev/null 2>&1", NS.veth[k]);
  }
  sh("ip link del %s >/dev/null 2>&1", NS.br);
  NS.up = 0;
}

static void netns_fini(void) {
  free_jobs();
  netns_cleanup();
}

/* Makes a bridge with 10.77.N.1/24 and two namespaces, executor k's at
 * 10.77.N.(2+k), each on a veth pair to the bridge.  Returns 0, or -1
 * (cleaned up) when this system cannot. */
static int netns_setup(void) {
  int k, p = (int)(getpid() % 100000);
  NS.net = (int)(getpid() % 250) + 1; /* runs side by side stay apart */
  snprintf(NS.br, sizeof NS.br, "orbr%d", p);
  NS.up = 1;
  if (sh("ip link add %s type bridge 2>&1 && ip addr add 10.77.%d.1/24 dev "
         "%s 2>&1 && ip link set %s up 2>&1",
         NS.br, NS.net, NS.br, NS.br) != 0)
    return -1;
  for (k = 0; k < 2; k++) {
    snprintf(NS.ns[k], sizeof NS.ns[k], "orion-test-%d-%d", p, k);
    snprintf(NS.veth[k], sizeof NS.veth[k], "orv%d%c", p, 'a' + k);
    if (sh("ip netns add %s 2>&1", NS.ns[k]) != 0 ||
        sh("ip link add %s type veth peer name %sx 2>&1", NS.veth[k],
           NS.veth[k]) != 0 ||
        sh("ip link set %s master %s 2>&1 && ip link set %s up 2>&1",
           NS.veth[k], NS.br, NS.veth[k]) != 0 ||
        sh("ip link set %sx netns %s 2>&1", NS.veth[k], NS.ns[k]) != 0 ||
        sh("ip netns exec %s ip addr add 10.77.%d.%d/24 dev %sx 2>&1 && "
           "ip netns exec %s ip link set %sx up 2>&1 && "
           "ip netns exec %s ip link set lo up 2>&1",
           NS.ns[k], NS.net, 2 + k, NS.veth[k], NS.ns[k], NS.veth[k],
           NS.ns[k]) != 0)
      return -1;
  }
  return 0;
}

Test(cluster, slow_executors_in_network_namespaces, .fini = netns_fini) {
  char *path = script("buffer_totals.lua");
  char listen[64], driver_at[64], token[128], tokenv[160];
  char *argv[] = {(char *)tu_driver(), "-v", "--launcher", "manual",
                  "--executors", "2", "--register-timeout", "30",
                  "--listen", listen, path, "block", NULL};
  const char *exe = getenv("ORION_EXECUTOR");
  const char *p;
  child *c = &jobs[0];
  int k, port;
  if (geteuid() != 0) {
    free(path);
    cr_skip_test("network namespaces need root; skipping");
  }
  if (sh("ip netns list >/dev/null 2>&1") != 0) {
    free(path);
    cr_skip_test("`ip netns` does not work here; skipping");
  }
  if (netns_setup() != 0) {
    netns_cleanup();
    free(path);
    cr_skip_test("cannot set up network namespaces with a bridge and veth "
                 "pairs here; skipping");
  }
  if (exe == NULL || exe[0] != '/') {
    /* The executor beside the driver under test. */
    static char beside[4096];
    char *slash;
    cr_assert_not_null(realpath(tu_driver(), beside), "%s", tu_driver());
    slash = strrchr(beside, '/');
    snprintf(slash + 1, sizeof beside - (size_t)(slash + 1 - beside),
             "orion-executor");
    exe = beside;
  }
  cr_assert_eq(access(exe, X_OK), 0, "cannot run %s", exe);
  port = free_port();
  snprintf(listen, sizeof listen, "10.77.%d.1:%d", NS.net, port);
  snprintf(driver_at, sizeof driver_at, "10.77.%d.1:%d", NS.net, port);
  child_start(c, argv, NULL);
  cr_assert(child_wait_text(c, 1, "'--id' '1'", 30),
            "no manual command lines:\n%s", c->buf[1]);
  /* The token, from "ORION_TOKEN='HEX'" on the printed command lines. */
  p = strstr(c->buf[1], "ORION_TOKEN='");
  cr_assert_not_null(p, "%s", c->buf[1]);
  p += strlen("ORION_TOKEN='");
  snprintf(token, sizeof token, "%.*s", (int)strcspn(p, "'"), p);
  cr_assert(strlen(token) >= 16, "token '%s'", token);
  expect_has(c->buf[1], driver_at);
  snprintf(tokenv, sizeof tokenv, "ORION_TOKEN=%s", token);
  for (k = 0; k < 2; k++) {
    char id[8];
    char *env[] = {tokenv, NULL};
    char *xargv[] = {"/usr/sbin/ip", "netns", "exec", NS.ns[k], (char *)exe,
                     "--driver", driver_at, "--id", id, NULL};
    if (access(xargv[0], X_OK) != 0)
      xargv[0] = "/sbin/ip";
    snprintf(id, sizeof id, "%d", k);
    child_start(&NS.exec[k], xargv, env);
    NS.nexec++;
  }
  cr_expect(child_wait(c, 60), "the job did not end:\n%s", c->buf[1]);
  cr_expect_eq(c->status, 0, "exit %d:\n%s\n%s", c->status, c->buf[0],
               c->buf[1]);
  expect_has(c->buf[0], "totals ok: 1445 tokens, 7 topics, variant block, 2 "
                       "executors");
  for (k = 0; k < 2; k++) {
    char want[96];
    snprintf(want, sizeof want, "executor %d registered from 10.77.%d.%d:",
             k, NS.net, 2 + k);
    expect_has(c->buf[1], want);
  }
  /* Executors leave by themselves once the driver's connection drops. */
  for (k = 0; k < 2; k++) {
    cr_expect(child_wait(&NS.exec[k], 10),
              "executor %d still runs 10 s after the job", k);
    cr_expect_eq(NS.exec[k].status, 0, "executor %d: exit %d\n%s", k,
                 NS.exec[k].status, NS.exec[k].buf[1]);
  }
  cr_log_info("namespaces: %s", c->buf[1]);
  child_free(c);
  free(path);
}

/* ------------------------------------------------------------------------
 * The tests run one at a time unless CRITERION_JOBS or --jobs says
 * otherwise.
 * ---------------------------------------------------------------------- */

int main(int argc, char *argv[]);

int main(int argc, char *argv[]) {
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  criterion_options.jobs = 1;
  if (criterion_handle_args(argc, argv, true))
    result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  return result;
}

/* ------------------------------------------------------------------------
 * Compiled bodies (issue 5): the tiers agree bit for bit, in process and
 * on 1 and 2 executors; a failing compiler falls back with a note.
 * ---------------------------------------------------------------------- */

static void tiers_on(const char *n) {
  tu_run r = DRIVE("--executors", n, "@tiers.lua");
  expect_ok(&r, "tiers.lua");
  expect_has(r.out, "tiers agree: control\n");
  expect_has(r.out, "tiers agree: floats\n");
  expect_has(r.out, "tiers agree: ints\n");
  expect_has(r.out, "tiers agree: random\n");
  expect_has(r.out, "tiers agree: sgd\n");
  expect_has(r.out, "tier c refused: tier \"c\": ");
  expect_has(r.out, "a call to 'print' is outside the compiled subset");
  expect_has(r.out, "fast within tolerance: sgd (max relative difference ");
  tu_run_free(&r);
}

/* 37 snippets of integer, float, NaN, conversion, loop and math.random
 * semantics (t/cluster/snippets.lua), bit-identical in both tiers. */
static void snippets_on(const char *n) {
  tu_run r = DRIVE("--executors", n, "@snippets.lua");
  expect_ok(&r, "snippets.lua");
  expect_has(r.out, "snippets: 37 of 37 agree\n");
  expect_has(r.out, "snippet agrees: int_floordiv_mininteger\n");
  expect_has(r.out, "snippet agrees: random_full_width\n");
  tu_run_free(&r);
}

Test(cluster, snippets_agree_on_1_executor) { snippets_on("1"); }
Test(cluster, snippets_agree_on_2_executors) { snippets_on("2"); }
Test(cluster, tiers_agree_in_process) { tiers_on("0"); }
Test(cluster, tiers_agree_on_1_executor) { tiers_on("1"); }
Test(cluster, tiers_agree_on_2_executors) { tiers_on("2"); }

/* Tier "gpu" where no executor has a device (t/cluster/gpu_tier.lua):
 * the loops run on the CPU, bit-identical to tier "c", with the note once
 * per call site naming why. */
static void gpu_tier_on_cpu(const char *n, const char *why) {
  tu_run r = DRIVE("--executors", n, "@gpu_tier.lua", "cpu");
  const char *p;
  expect_ok(&r, "gpu_tier.lua");
  expect_has(r.out, "gpu tier agrees: ints (ran c)\n");
  expect_has(r.out, "gpu tier agrees: mf (ran c)\n");
  expect_has(r.out, "gpu tier agrees: mf_grid1 (ran c)\n");
  expect_has(r.out, "gpu tier agrees: mf_ordered (ran c)\n");
  expect_has(r.out, "gpu tier agrees: scale (ran c)\n");
  expect_has(r.out, "mf: array W: max relative difference 0 (tolerance 0)");
  expect_has(r.err, why);
  p = strstr(r.err, "runs on the CPU: tier \"gpu\"");
  cr_assert(p != NULL && strstr(p + 1, "runs on the CPU: tier") == NULL,
            "the note is printed once per call site:\n%s", r.err);
  tu_run_free(&r);
}

Test(cluster, gpu_tier_without_devices_runs_on_the_cpu) {
  gpu_tier_on_cpu("2", "runs on the CPU: tier \"gpu\": no executor "
                       "registered a GPU (orion-driver --gpus, "
                       "orion-executor --gpu N)");
}

Test(cluster, gpu_tier_in_process_runs_on_the_cpu) {
  gpu_tier_on_cpu("0", "runs on the CPU: tier \"gpu\": the driver runs the "
                       "loop itself (--executors 0) and has no device");
}

Test(cluster, failing_compiler_falls_back_to_the_interpreter) {
  tu_run r;
  setenv("ORION_CC", "false", 1);
  r = DRIVE("--executors", "2", "@buffer_totals.lua", "block");
  unsetenv("ORION_CC");
  expect_ok(&r, "buffer_totals.lua with ORION_CC=false");
  expect_has(r.out, "totals ok: 1445 tokens, 7 topics");
  expect_has(r.err, "runs in the Lua interpreter: compiling the body "
                    "failed: C compiler 'false' failed (exit 1)");
  tu_run_free(&r);
}

/* ------------------------------------------------------------------------
 * Malformed frames from an executor: the driver ends the job naming the
 * executor and the frame.  The test plays the executors of a job started
 * with the manual launcher: it answers the driver's frames as an executor
 * would (every block done, nothing changed), and sends one bad frame after
 * the driver's frame of a chosen type.
 * ---------------------------------------------------------------------- */

/* Reads n bytes from s within 20 s; 0, or -1 at end of file or error. */
static int recv_all(int s, void *p, size_t n) {
  double end = now_s() + 20;
  size_t off = 0;
  if (s >= 0 && s < TU_SEC_FDS && tu_sec_of[s] != NULL)
    return tu_sec_recv_all(s, tu_sec_of[s], p, n);
  while (off < n) {
    struct pollfd pf = {s, POLLIN, 0};
    ssize_t got;
    cr_assert_lt(now_s(), end, "the driver sent nothing for 20 s");
    if (poll(&pf, 1, 100) <= 0)
      continue;
    got = recv(s, (char *)p + off, n - off, 0);
    if (got <= 0)
      return -1;
    off += (size_t)got;
  }
  return 0;
}

/* A frame from the driver: its type and payload. */
typedef struct frame_in {
  int type; /* -1 once the driver closed the connection */
  char *p;  /* malloc'd */
  size_t len;
} frame_in;

static frame_in recv_frame(int s) {
  unsigned char h[ORION_WIRE_HEADER_LEN], t[ORION_WIRE_TRAILER_LEN];
  frame_in f = {-1, NULL, 0};
  if (recv_all(s, h, sizeof h) != 0)
    return f;
  f.len = (size_t)h[5] | (size_t)h[6] << 8 | (size_t)h[7] << 16 |
          (size_t)h[8] << 24;
  f.p = malloc(f.len + 1);
  cr_assert_not_null(f.p);
  if (recv_all(s, f.p, f.len) == 0 && recv_all(s, t, sizeof t) == 0)
    f.type = h[3];
  return f;
}

static void send_buf(int s, orion_buf *b) {
  size_t off = 0;
  cr_assert(!b->oom);
  if (s >= 0 && s < TU_SEC_FDS && tu_sec_of[s] != NULL) {
    tu_sec_send(s, tu_sec_of[s], b->data, b->len);
    b->len = 0;
    return;
  }
  while (off < b->len) {
    ssize_t w = send(s, b->data + off, b->len - off, MSG_NOSIGNAL);
    if (w <= 0)
      break; /* the driver is gone: its exit status tells */
    off += (size_t)w;
  }
  b->len = 0;
}

/* What a well-behaved executor answers to frame `type` (nothing when it
 * needs no answer). */
static void answer(int s, const frame_in *in, orion_buf *out) {
  if (in->type == ORION_WIRE_RUN_BLOCK) {
    orion_msg_run_block rb;
    orion_msg_block_done bd;
    cr_assert_eq(orion_msg_run_block_decode(in->p, in->len, &rb, NULL), 0);
    memset(&bd, 0, sizeof bd);
    bd.block = rb.block;
    orion_msg_run_block_free(&rb);
    cr_assert_eq(orion_msg_block_done_encode(out, &bd), 0);
  } else if (in->type == ORION_WIRE_LOOP_END) {
    orion_msg_loop_done ld;
    memset(&ld, 0, sizeof ld);
    cr_assert_eq(orion_msg_loop_done_encode(out, &ld), 0);
  } else if (in->type == ORION_WIRE_SHARD_PULL) {
    orion_msg_shard_data sd;
    memset(&sd, 0, sizeof sd);
    cr_assert_eq(orion_msg_shard_data_encode(out, &sd), 0);
  }
  send_buf(s, out);
}

typedef struct bad_frame {
  const char *what; /* for messages */
  int nexec;        /* executors the job has (the test plays them all) */
  int after;        /* the driver's frame type that the bad frame follows */
  int type;         /* the bad frame's type, and its payload */
  const char *payload;
  size_t len;
  const char *name;  /* what the driver calls it (NULL: see field) */
  const char *field; /* what the driver says of the field that is wrong */
} bad_frame;

/* Little-endian u64 fields, 8 bytes each; NEG(v) a small negative i64,
 * NEG1_0 the double -1.0, NAN_ a quiet NaN. */
#define U64(v) (char)(v), 0, 0, 0, 0, 0, 0, 0
#define NEG(v) (char)(v), -1, -1, -1, -1, -1, -1, -1
#define NEG1_0 0, 0, 0, 0, 0, 0, (char)0xf0, (char)0xbf
#define NAN_ 0, 0, 0, 0, 0, 0, (char)0xf8, 0x7f
static const char block_done_short[] = {U64(0), U64(0), U64(0)};
static const char block_done_flag_2[] = {U64(0), U64(0), U64(0), U64(2),
                                         U64(0)};
static const char block_done_unsent[] = {U64(99), U64(0), U64(0), U64(0),
                                         U64(0), U64(0)};
static const char block_done_stranger[] = {U64(0),  U64(0), U64(0),
                                           U64(0),  U64(1), U64(77),
                                           U64(0),  U64(1), U64(8),
                                           U64(0),  U64(0)};
static const char block_done_negative[] = {U64(0), NEG1_0, U64(0), U64(0),
                                           U64(0), U64(0)};
static const char block_done_nan_wait[] = {U64(0), U64(0), NAN_, U64(0),
                                           U64(0), U64(0)};
/* Values both sent (none) and kept (wire version 19). */
static const char block_done_kept[] = {U64(0), U64(0), U64(0), U64(1),
                                       U64(0), U64(0), U64(1)};
static const char flush_stranger[] = {U64(1), U64(77), U64(1),
                                      U64(0), U64(0), U64(0)};
static const char flush_block_minus_5[] = {U64(1), U64(77), U64(1),
                                           NEG(-5), U64(0), U64(0)};
static const char loop_done_trailing[] = {
    U64(0), U64(0), U64(0), U64(0), U64(0), U64(0), U64(0), U64(0),
    U64(0), U64(0), U64(0), U64(0), U64(0), U64(0), U64(0), U64(0),
    U64(0)};
/* One partial of accumulator 77, which the loop does not have. */
static const char loop_done_stranger[] = {
    U64(1), NEG(-1), U64(77), U64(1), U64(1), U64(5), U64(0), U64(0),
    U64(0), U64(0),  U64(0),  U64(0), U64(0), U64(0), U64(0), U64(0),
    U64(0), U64(0),  U64(0),  U64(0), U64(0), U64(0)};
static const char shard_data_short[] = {U64(1), U64(0)};
static const char body_error_short[] = {U64(0)};
static const char body_error_block_99[] = {U64(0), U64(99), U64(1), 'x'};
static const char body_error_impostor[] = {U64(5), U64(0), U64(1), 'x'};
static const char loaded_short[] = {U64(1), U64(3)};
/* One element of an i64 array 90 x 50 at key (1, 121), part 0 (executor
 * 0's), no digest (wire version 20's part, digest and not_held). */
static const char loaded_key_out_of_range[] = {
    U64(1),   U64(ORION_I64), U64(2), U64(90), U64(50), U64(1),
    U64(16),  U64(0),         U64(120), U64(8), U64(4), U64(0),
    U64(0),   U64(1),         U64(0), U64(0), U64(0), U64(0), U64(0)};
#undef U64
#undef NEG
#undef NEG1_0
#undef NAN_
#define BAD(what, n, after, type, bytes, name, field)                          \
  {what, n, ORION_WIRE_##after, ORION_WIRE_##type, bytes, sizeof bytes, name, \
   field}

static const bad_frame bad_frames[] = {
    BAD("a truncated BLOCK_DONE", 1, RUN_BLOCK, BLOCK_DONE, block_done_short,
        "BLOCK_DONE", "too short: it ends inside the values flag"),
    BAD("a BLOCK_DONE with a values flag of 2", 1, RUN_BLOCK, BLOCK_DONE,
        block_done_flag_2, "BLOCK_DONE", "the values flag is 2, not 0 or 1"),
    BAD("a BLOCK_DONE of a block never sent", 1, RUN_BLOCK, BLOCK_DONE,
        block_done_unsent, "BLOCK_DONE", "block 99 is not one it was sent"),
    BAD("a BLOCK_DONE with a run of an unknown array", 1, RUN_BLOCK,
        BLOCK_DONE, block_done_stranger, "BLOCK_DONE",
        "run 0's array 77 is not an array of the loop"),
    BAD("a BLOCK_DONE with negative seconds", 1, RUN_BLOCK, BLOCK_DONE,
        block_done_negative, "BLOCK_DONE", "its seconds is -1"),
    BAD("a BLOCK_DONE with NaN wait seconds", 1, RUN_BLOCK, BLOCK_DONE,
        block_done_nan_wait, "BLOCK_DONE", "its wait seconds is nan"),
    BAD("a BLOCK_DONE whose values are sent and kept", 1, RUN_BLOCK,
        BLOCK_DONE, block_done_kept, "BLOCK_DONE",
        "values both sent and kept"),
    BAD("a BUFFER_FLUSH of an unknown buffer", 1, RUN_BLOCK, BUFFER_FLUSH,
        flush_stranger, "BUFFER_FLUSH",
        "buffer 77 is not a buffer of the loop"),
    BAD("a BUFFER_FLUSH for block -5", 1, RUN_BLOCK, BUFFER_FLUSH,
        flush_block_minus_5, "BUFFER_FLUSH",
        "block -5 is not a block of the loop"),
    BAD("a LOOP_DONE with trailing bytes", 1, LOOP_END, LOOP_DONE,
        loop_done_trailing, "LOOP_DONE", "8 unexpected trailing bytes"),
    BAD("a LOOP_DONE with an unknown accumulator", 1, LOOP_END, LOOP_DONE,
        loop_done_stranger, "LOOP_DONE",
        "accumulator id 77 is not one of the loop's"),
    BAD("a truncated SHARD_DATA", 1, SHARD_PULL, SHARD_DATA, shard_data_short,
        "SHARD_DATA", "1 runs need at least 32 bytes each, 8 are left"),
    BAD("a truncated BODY_ERROR", 1, RUN_BLOCK, BODY_ERROR, body_error_short,
        "BODY_ERROR", "too short: it ends inside the block"),
    BAD("a BODY_ERROR of block 99", 1, RUN_BLOCK, BODY_ERROR,
        body_error_block_99, "BODY_ERROR",
        "block 99 is not a block of the loop"),
    BAD("a BODY_ERROR in another executor's name", 1, RUN_BLOCK, BODY_ERROR,
        body_error_impostor, "BODY_ERROR", "its executor id is 5"),
    BAD("a truncated LOADED", 2, LOAD_FILE, LOADED, loaded_short, "LOADED",
        "too short"),
    /* issue 18: the key was merged unchecked, and the driver wrote out of
     * bounds (ASan: heap-buffer-overflow in orion_array_histogram). */
    BAD("a LOADED with a key outside the array", 2, LOAD_FILE, LOADED,
        loaded_key_out_of_range, NULL,
        "sent a LOADED frame for [..] whose element 1 has key 121 in "
        "dimension 2, outside 1..50"),
};
#undef BAD

/* Runs buffer_totals.lua with the test as its executors; executor 0 sends
 * bf's frame after the driver's first frame of type bf->after. */
static void play_bad_executor(const bad_frame *bf) {
  char *path = script("buffer_totals.lua");
  char listen[64], nexec[8], want[512];
  char *argv[] = {(char *)tu_driver(), "--launcher", "manual",
                  "--executors", nexec, "--register-timeout", "20",
                  "--listen", listen, path, "block", NULL};
  child *c = &jobs[0];
  orion_buf out;
  orion_wire_hello h;
  frame_in in;
  const char *tok;
  char token[128], idarg[32];
  int s[2], k, port, attempt, sent = 0;
  snprintf(nexec, sizeof nexec, "%d", bf->nexec);
  snprintf(idarg, sizeof idarg, "'--id' '%d'", bf->nexec - 1);
  for (attempt = 0; attempt < 5; attempt++) {
    port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    child_start(c, argv, NULL);
    if (child_wait_text(c, 1, idarg, 30))
      break;
    child_wait(c, 10);
    cr_assert(strstr(c->buf[1], "in use") != NULL, "%s: no command lines:\n%s",
              bf->what, c->buf[1]);
    child_free(c); /* the port was taken meanwhile: another one */
  }
  cr_assert_lt(attempt, 5, "no port could be used");
  tok = strstr(c->buf[1], "ORION_TOKEN='");
  cr_assert_not_null(tok, "%s", c->buf[1]);
  tok += strlen("ORION_TOKEN='");
  snprintf(token, sizeof token, "%.*s", (int)strcspn(tok, "'"), tok);
  orion_buf_init(&out);
  for (k = 0; k < bf->nexec; k++) {
    static tu_sec secs[2];
    struct timeval tv = {20, 0};
    memset(&h, 0, sizeof h);
    h.executor = (uint32_t)k;
    h.addr = "127.0.0.1:9";
    h.addr_len = strlen(h.addr);
    s[k] = connect_to(port);
    setsockopt(s[k], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    cr_assert_eq(tu_sec_connect(s[k], &secs[k], token, ORION_SEC_AUTO), 0,
                 "%s: handshake: %s", bf->what, secs[k].s.why);
    cr_assert_eq(orion_wire_hello_encode(&out, &h), 0);
    send_buf(s[k], &out);
  }
  /* Executor 0 answers until the bad frame has gone and the driver hung
   * up; executor 1 (when there is one) never reads. */
  while ((in = recv_frame(s[0])).type >= 0) {
    if (!sent && in.type == bf->after) {
      cr_assert_eq(orion_wire_encode(&out, bf->type, bf->payload, bf->len),
                   0);
      send_buf(s[0], &out);
      sent = 1;
    } else if (!sent) {
      answer(s[0], &in, &out);
    }
    free(in.p);
  }
  free(in.p);
  cr_expect(sent, "%s: the driver sent no %s frame:\n%s", bf->what,
            orion_wire_type_name(bf->after), c->buf[1]);
  cr_assert(child_wait(c, 30), "%s: the driver did not end", bf->what);
  cr_expect_eq(c->status, 3, "%s: exit %d:\n%s", bf->what, c->status,
               c->buf[1]);
  expect_has(c->buf[1], "cluster failure: executor 0 (127.0.0.1:");
  line_with(c->buf[1], "cluster failure", want, sizeof want);
  cr_log_info("%s: %s", bf->what, want);
  if (bf->name != NULL) { /* "...: FIELD" on the failure's line */
    char head[64];
    snprintf(head, sizeof head, "sent a malformed %s frame: ", bf->name);
    expect_has(want, head);
    expect_has(want, bf->field);
  } else { /* "[..]" stands for the file's path */
    const char *cut = strstr(bf->field, "[..]");
    char before[128];
    cr_assert_not_null(cut);
    snprintf(before, sizeof before, "%.*s", (int)(cut - bf->field),
             bf->field);
    expect_has(want, before);
    expect_has(want, cut + 4);
  }
  for (k = 0; k < bf->nexec; k++) {
    orion_sec_free(&tu_sec_of[s[k]]->s);
    tu_sec_of[s[k]] = NULL;
    close(s[k]);
  }
  orion_buf_free(&out);
  child_free(c);
  free(path);
}

Test(cluster, malformed_executor_frames_end_the_job) {
  size_t i;
  for (i = 0; i < sizeof bad_frames / sizeof bad_frames[0]; i++)
    play_bad_executor(&bad_frames[i]);
}

/* Resident rows (scheduler/dist_resid.c): after a 2-D SGD loop W and H stay on
 * the executors and H's parts go executor to executor; reading them in
 * the script, writing one element, a loop that reads H sharded and one
 * that iterates H itself all see what a run inside the driver sees, bit
 * for bit, as does the run that sends every row through the driver
 * (ORION_NO_RESIDENT=1).  Once the data is out, an epoch sends the driver
 * only control messages (a fraction of the model) and moves the rotating
 * rows between executors. */
Test(cluster, resident_rows_stay_on_the_executors_and_come_back) {
  tu_run in = DRIVE("--executors", "0", "@resident.lua");
  tu_run r = DRIVE("--executors", "3", "@resident.lua");
  tu_run nr;
  const char *epochs[] = {"epoch 2", "epoch 5"};
  int i;
  expect_ok(&in, "resident.lua inside the driver");
  expect_ok(&r, "resident.lua on 3 executors");
  cr_expect_str_eq(r.out, in.out, "3 executors differ from in-process");
  expect_has(r.out, "set H[7][3]\t0x1.8p+0");
  for (i = 0; i < 2; i++) {
    char line[256], want[64];
    long long drv, peer, model;
    snprintf(want, sizeof want, "bytes %s driver", epochs[i]);
    line_with(r.err, want, line, sizeof line);
    cr_assert_eq(sscanf(line + strlen(want), "%lld peer %lld model %lld",
                        &drv, &peer, &model),
                 3, "%s", line);
    cr_expect_lt(drv, model / 4, "%s: the driver moved rows", line);
    cr_expect_gt(peer, model / 4, "%s: no rows between executors", line);
  }
  setenv("ORION_NO_RESIDENT", "1", 1);
  nr = DRIVE("--executors", "3", "@resident.lua");
  unsetenv("ORION_NO_RESIDENT");
  expect_ok(&nr, "resident.lua with ORION_NO_RESIDENT=1");
  cr_expect_str_eq(nr.out, in.out, "rows through the driver differ");
  tu_run_free(&in);
  tu_run_free(&r);
  tu_run_free(&nr);
  expect_no_executors_left("resident", 3);
}

/* The "dispatch EPOCH ..." line of t/cluster/ahead.lua: whether the
 * loop went ahead, the blocks sent ahead, the parts pushed and pulled. */
static void dispatch_of(const char *err, int epoch, char *ahead,
                        long long v[3]) {
  char line[256], want[32];
  snprintf(want, sizeof want, "dispatch %d ahead ", epoch);
  line_with(err, want, line, sizeof line);
  cr_assert_eq(sscanf(line + strlen(want), "%7s blocks_ahead %lld pushed "
                                           "%lld pulled %lld",
                      ahead, &v[0], &v[1], &v[2]),
               4, "no \"%s\" line in:\n%s", want, err);
}

/* t/cluster/ahead.lua on 4 executors with $name=value, which turns
 * dispatch ahead off: the bits of want, nothing sent ahead; its epoch 2's
 * counts in v. */
static void ahead_on_4_with(const char *name, const char *value,
                            const char *want, long long v[3]) {
  char ahead[8];
  tu_run r;
  setenv(name, value, 1);
  r = DRIVE("--executors", "4", "@ahead.lua");
  unsetenv(name);
  expect_ok(&r, name);
  cr_expect_str_eq(r.out, want, "%s=%s changed the results", name, value);
  dispatch_of(r.err, 2, ahead, v);
  cr_expect_str_eq(ahead, "false", "%s=%s", name, value);
  cr_expect_eq(v[0], 0, "%s=%s: blocks went ahead", name, value);
  tu_run_free(&r);
}

/* Dispatch ahead (scheduler/loop.h): on 1 to 4 executors a 2-D SGD loop
 * gives the bits of a run inside the driver, with blocks sent before their
 * time part's previous block was done and the parts' rows pushed from
 * executor to executor, none pulled: each of the 8 time parts passes
 * each of the ring's N edges once a pass, of which the move before its
 * first block of the pass (from where the last pass left it) is a
 * SEND_ROWS, so 7 x N pushes a pass on N > 1 executors; ORION_NO_AHEAD=1
 * and dynamic placement (which pulls the rows instead) give the same bits.
 * A body error in a block whose time part's next block waits ahead on
 * another executor ends the loop with that error at once: with a 30 s
 * heartbeat timeout, the waiting executor's own limit (6 of them) would
 * outlast the test's 120 s. */
Test(cluster, ahead_dispatch_pushes_rows_and_keeps_the_bits) {
  tu_run in = DRIVE("--executors", "0", "@ahead.lua"), r, fail;
  static const char *const counts[] = {"1", "2", "3", "4"};
  char ahead[8];
  long long v[3];
  int n, ep;
  expect_ok(&in, "ahead.lua inside the driver");
  expect_has(in.out, "final W\t0x");
  for (n = 1; n <= 4; n++) {
    r = DRIVE("--executors", counts[n - 1], "@ahead.lua");
    expect_ok(&r, counts[n - 1]);
    cr_expect_str_eq(r.out, in.out, "%d executors differ from in-process", n);
    for (ep = 1; ep <= 3; ep++) {
      dispatch_of(r.err, ep, ahead, v);
      cr_expect_str_eq(ahead, "true", "%d executors, epoch %d", n, ep);
      cr_expect_gt(v[0], 0, "%d executors, epoch %d: no block went ahead", n,
                   ep);
      cr_expect_eq(v[1], n > 1 ? 7 * n : 0,
                   "%d executors, epoch %d: pushed %lld", n, ep, v[1]);
      cr_expect_eq(v[2], 0, "%d executors, epoch %d: pulled %lld", n, ep,
                   v[2]);
    }
    tu_run_free(&r);
  }
  ahead_on_4_with("ORION_NO_AHEAD", "1", in.out, v);
  cr_expect_eq(v[1], 28, "the rows are pushed anyway: %lld", v[1]);
  ahead_on_4_with("ORION_ASSIGN", "dynamic", in.out, v);
  cr_expect_eq(v[1], 0);
  cr_expect_gt(v[2], 0, "dynamic placement pulled no rows");
  fail = DRIVE("--executors", "4", "--heartbeat-timeout", "30", "@ahead.lua",
               "fail");
  cr_expect_eq(fail.status, 1, "exit %d\n%s", fail.status, fail.err);
  expect_has(fail.err, "parallel_for body failed on executor 3, element "
                       "(3");
  expect_has(fail.err, "boom in epoch 2");
  cr_expect(strstr(fail.err, "did not come") == NULL, "%s", fail.err);
  tu_run_free(&fail);
  tu_run_free(&in);
  expect_no_executors_left("ahead", 4);
}

/* The "ahead PASS ..." line of t/cluster/ahead_buffer.lua: whether the
 * loop went ahead (1) and how many blocks went. */
static int buffer_ahead_of(const char *err, int pass, long long *blocks) {
  char line[256], want[32], ahead[8];
  snprintf(want, sizeof want, "ahead %d ", pass);
  line_with(err, want, line, sizeof line);
  cr_assert_eq(sscanf(line + strlen(want), "%7s blocks_ahead %lld", ahead,
                      blocks),
               2, "no \"%s\" line in:\n%s", want, err);
  return strcmp(ahead, "true") == 0;
}

/* A flush = "loop" buffer in a 2-D loop (t/cluster/ahead_buffer.lua
 * loop): its writes are held by block and applied in block order after
 * the loop, so no block reads another's and the loop still goes ahead on
 * 1 to 4 executors, with the bits of a run inside the driver (the
 * buffer's sums too); ORION_NO_AHEAD=1 gives them as well.  A flush =
 * "block" buffer (ahead_buffer.lua block: later blocks see its writes)
 * keeps the loop from going ahead. */
Test(cluster, ahead_dispatch_with_a_loop_buffer) {
  tu_run in = DRIVE("--executors", "0", "@ahead_buffer.lua", "loop"), r;
  static const char *const counts[] = {"1", "2", "3", "4"};
  long long blocks;
  int n, pass;
  expect_ok(&in, "ahead_buffer.lua inside the driver");
  expect_has(in.out, "3\t0x");
  for (n = 1; n <= 4; n++) {
    r = DRIVE("--executors", counts[n - 1], "@ahead_buffer.lua", "loop");
    expect_ok(&r, counts[n - 1]);
    cr_expect_str_eq(r.out, in.out, "%d executors differ from in-process", n);
    for (pass = 1; pass <= 3; pass++) {
      cr_expect(buffer_ahead_of(r.err, pass, &blocks),
                "%d executors, pass %d: not ahead", n, pass);
      cr_expect_gt(blocks, 0, "%d executors, pass %d: no block went ahead",
                   n, pass);
    }
    tu_run_free(&r);
  }
  setenv("ORION_NO_AHEAD", "1", 1);
  r = DRIVE("--executors", "4", "@ahead_buffer.lua", "loop");
  unsetenv("ORION_NO_AHEAD");
  expect_ok(&r, "ORION_NO_AHEAD=1");
  cr_expect_str_eq(r.out, in.out, "ORION_NO_AHEAD=1 changed the results");
  cr_expect(!buffer_ahead_of(r.err, 2, &blocks), "ORION_NO_AHEAD=1: ahead");
  tu_run_free(&r);
  r = DRIVE("--executors", "3", "@ahead_buffer.lua", "block");
  expect_ok(&r, "ahead_buffer.lua block on 3");
  cr_expect(!buffer_ahead_of(r.err, 2, &blocks),
            "a flush = \"block\" buffer went ahead");
  cr_expect_eq(blocks, 0);
  tu_run_free(&r);
  tu_run_free(&in);
  expect_no_executors_left("ahead_buffer", 4);
}

/* The "order EPOCH ..." line of t/cluster/ahead.lua: whether the
 * executors could start a later queued block first, and how many they so
 * started. */
static long long order_of(const char *err, int epoch, char *reorder) {
  char line[256], want[32];
  long long n = -1;
  snprintf(want, sizeof want, "order %d reorder ", epoch);
  line_with(err, want, line, sizeof line);
  cr_assert_eq(sscanf(line + strlen(want), "%7s ran_out_of_order %lld",
                      reorder, &n),
               2, "no \"%s\" line in:\n%s", want, err);
  return n;
}

/* An executor starts any queued block whose rows are in and that shares
 * no part with a block queued before it (executor/exec_order.c).  With
 * executor 1 sleeping 20 ms after each block (ORION_TEST_SLOW), the
 * blocks whose time part comes from it wait for their rows, and the
 * executor before it in the ring runs its other space parts' blocks
 * meanwhile: on 2, 3 and 4 executors t/cluster/ahead.lua starts blocks
 * out of order and gives the bits of a run inside the driver, and so does
 * ORION_NO_REORDER=1, with none out of order. */
Test(cluster, ahead_reorder_starts_ready_blocks_first_and_keeps_the_bits) {
  tu_run in = DRIVE("--executors", "0", "@ahead.lua"), r;
  static const char *const counts[] = {"2", "3", "4"};
  char reorder[8];
  long long total;
  int n, ep;
  expect_ok(&in, "ahead.lua inside the driver");
  setenv("ORION_TEST_SLOW", "1:20", 1);
  for (n = 0; n < 3; n++) {
    r = DRIVE("--executors", counts[n], "@ahead.lua");
    expect_ok(&r, counts[n]);
    cr_expect_str_eq(r.out, in.out, "%s executors, one slow, differ from "
                                    "in-process", counts[n]);
    for (ep = 1, total = 0; ep <= 3; ep++) {
      total += order_of(r.err, ep, reorder);
      cr_expect_str_eq(reorder, "true", "%s executors, epoch %d", counts[n],
                       ep);
    }
    cr_expect_gt(total, 0, "%s executors, one slow: no block started out of "
                           "order\n%s", counts[n], r.err);
    tu_run_free(&r);
  }
  setenv("ORION_NO_REORDER", "1", 1);
  r = DRIVE("--executors", "2", "@ahead.lua");
  unsetenv("ORION_NO_REORDER");
  unsetenv("ORION_TEST_SLOW");
  expect_ok(&r, "ORION_NO_REORDER=1");
  cr_expect_str_eq(r.out, in.out, "ORION_NO_REORDER=1 changed the results");
  for (ep = 1; ep <= 3; ep++) {
    cr_expect_eq(order_of(r.err, ep, reorder), 0, "ORION_NO_REORDER=1, "
                                                  "epoch %d", ep);
    cr_expect_str_eq(reorder, "false");
  }
  tu_run_free(&r);
  tu_run_free(&in);
  expect_no_executors_left("reorder", 4);
}

/* The blocks each executor ran in one loop of t/cluster/dynamic.lua
 * ("blocks WHAT ASSIGN n0 n1 n2 n3" on stderr) into n; their sum. */
static int blocks_of(const char *err, const char *what, const char *assign,
                     int n[4]) {
  char line[256], want[64];
  snprintf(want, sizeof want, "blocks %s %s ", what, assign);
  line_with(err, want, line, sizeof line);
  cr_assert_eq(sscanf(line + strlen(want), "%d %d %d %d", &n[0], &n[1], &n[2],
                      &n[3]),
               4, "no \"%s\" line in:\n%s", want, err);
  return n[0] + n[1] + n[2] + n[3];
}

/* Dynamic block assignment (scheduler/loop.h, ORION_ASSIGN=dynamic) with
 * executor 3 sleeping 20 ms after each block (ORION_TEST_SLOW): it runs
 * fewer blocks than any other executor, and the results (a 2-D loop with
 * resident rows, an accumulator, a flush = "loop" buffer) are the bits of
 * a run inside the driver and of the static placement (the default),
 * which gives every executor its 16 blocks of the 8 x 8. */
Test(cluster, dynamic_assignment_works_around_a_slow_executor) {
  static const char *const epochs[3] = {"epoch1", "epoch2", "epoch3"};
  tu_run in = DRIVE("--executors", "0", "@dynamic.lua"), d, st, bal;
  int sum[4] = {0, 0, 0, 0}, n[4], i, e;
  /* 60 ms a block: well above what a loaded machine adds to the others
   * (at 20 ms the slow executor sometimes tied with one under load). */
  setenv("ORION_TEST_SLOW", "3:60", 1);
  setenv("ORION_ASSIGN", "dynamic", 1);
  d = DRIVE("--executors", "4", "@dynamic.lua");
  setenv("ORION_ASSIGN", "balanced", 1);
  bal = DRIVE("--executors", "4", "@dynamic.lua");
  unsetenv("ORION_ASSIGN");
  st = DRIVE("--executors", "4", "@dynamic.lua");
  unsetenv("ORION_TEST_SLOW");
  expect_ok(&in, "dynamic.lua inside the driver");
  expect_ok(&d, "dynamic.lua, dynamic, executor 3 slow");
  expect_ok(&st, "dynamic.lua, static, executor 3 slow");
  expect_ok(&bal, "dynamic.lua, balanced, executor 3 slow");
  expect_has(in.out, "final W\t0x");
  cr_expect_str_eq(d.out, in.out, "dynamic assignment changed the results");
  cr_expect_str_eq(bal.out, in.out, "balanced placement changed the results");
  /* Balanced: the first epoch is placed statically and measures every
   * executor; then executor 3, at 60 ms a block, gets no space part (one
   * part of 8 blocks would take it longer than three parts take the
   * others). */
  cr_expect_eq(blocks_of(bal.err, "epoch1", "balanced", n), 64);
  for (e = 0; e < 4; e++)
    cr_expect_eq(n[e], 16, "balanced, epoch 1: executor %d ran %d blocks", e,
                 n[e]);
  for (i = 1; i < 3; i++) {
    cr_expect_eq(blocks_of(bal.err, epochs[i], "balanced", n), 64);
    cr_expect_eq(n[3], 0, "balanced, %s: the slow executor ran %d blocks",
                 epochs[i], n[3]);
  }
  cr_expect_str_eq(st.out, in.out, "static assignment changed the results");
  for (i = 0; i < 3; i++) {
    cr_expect_eq(blocks_of(d.err, epochs[i], "dynamic", n), 64);
    for (e = 0; e < 4; e++)
      sum[e] += n[e];
    cr_expect_eq(blocks_of(st.err, epochs[i], "static", n), 64);
    for (e = 0; e < 4; e++)
      cr_expect_eq(n[e], 16, "static: executor %d ran %d blocks", e, n[e]);
  }
  /* Fewer blocks than its static share (16 a clock), and than the others
   * on average. */
  cr_expect_lt(sum[3], 3 * 16, "the slow executor ran %d blocks", sum[3]);
  cr_expect_lt(3 * sum[3], sum[0] + sum[1] + sum[2],
               "the slow executor ran %d blocks, the others %d %d %d", sum[3],
               sum[0], sum[1], sum[2]);
  cr_log_info("dynamic, executor 3 slow: blocks %d %d %d %d over 3 epochs",
              sum[0], sum[1], sum[2], sum[3]);
  expect_has(in.err, "blocks buffer driver 8");
  expect_has(st.err, "blocks buffer dynamic "); /* opts.assign */
  expect_has(in.out, "assign = \"sometimes\":\tfalse\tparallel_for: assign "
                     "must be \"static\", \"dynamic\" or \"balanced\", not "
                     "\"sometimes\"");
  tu_run_free(&in);
  tu_run_free(&d);
  tu_run_free(&bal);
  tu_run_free(&st);
  expect_no_executors_left("dynamic", 4);
}

/* A directly written server array (B[i + 2]) is sharded: every block sends
 * the elements it changed to their owners, peer to peer, and the results
 * (through a script read and write between loops) are the bits of a run
 * inside the driver. */
Test(cluster, server_read_write_array_is_sharded) {
  tu_run in = DRIVE("--executors", "0", "@server_rw.lua");
  tu_run r = DRIVE("--executors", "3", "@server_rw.lua");
  int pass;
  expect_ok(&in, "server_rw.lua inside the driver");
  expect_ok(&r, "server_rw.lua on 3 executors");
  cr_expect_str_eq(r.out, in.out, "3 executors differ from in-process");
  for (pass = 1; pass <= 3; pass++) {
    char line[256], want[64];
    long long drv, peer, size;
    snprintf(want, sizeof want, "bytes pass %d driver", pass);
    line_with(r.err, want, line, sizeof line);
    cr_assert_eq(sscanf(line + strlen(want), "%lld peer %lld array %lld",
                        &drv, &peer, &size),
                 3, "%s", line);
    cr_expect_gt(peer, size / 4, "%s: the writes did not go to the owners",
                 line);
  }
  tu_run_free(&in);
  tu_run_free(&r);
  expect_no_executors_left("server_rw", 3);
}

/* ------------------------------------------------------------------------
 * Broadcasts of read-only server arrays (scheduler/dist_chain.c): along a chain
 * of executors, by a star from the driver, or to the owners and then
 * fetched.
 * ---------------------------------------------------------------------- */

/* Runs bcast.lua on n executors with ORION_BCAST=mode and
 * ORION_BCAST_CHUNK=chunk (NULL: unset); its output must be in-process's.
 * *drv and *peer: loop `loop`'s bytes from the driver, between
 * executors. */
/* Runs script on n executors with ORION_BCAST=mode and
 * ORION_BCAST_CHUNK=chunk (NULL: unset); its output must be want. */
static tu_run chain_script(const char *script, const char *n,
                           const char *mode, const char *chunk,
                           const char *want) {
  tu_run r;
  setenv("ORION_BCAST", mode, 1);
  if (chunk != NULL)
    setenv("ORION_BCAST_CHUNK", chunk, 1);
  r = DRIVE("--executors", n, script);
  unsetenv("ORION_BCAST");
  unsetenv("ORION_BCAST_CHUNK");
  expect_ok(&r, script);
  cr_expect_str_eq(r.out, want, "%s, %s executors, ORION_BCAST=%s, chunk %s "
                                "differ from in-process",
                   script, n, mode, chunk != NULL ? chunk : "default");
  return r;
}

static void bcast_run(const char *n, const char *mode, const char *chunk,
                      const char *want, int loop, long long *drv,
                      long long *peer) {
  char line[256], head[64];
  long long size;
  tu_run r = chain_script("@bcast.lua", n, mode, chunk, want);
  snprintf(head, sizeof head, "bytes loop %d driver", loop);
  line_with(r.err, head, line, sizeof line);
  cr_assert_eq(sscanf(line + strlen(head), "%lld peer %lld array %lld", drv,
                      peer, &size),
               3, "%s", r.err);
  tu_run_free(&r);
  expect_no_executors_left("bcast", 0);
}

/* The same bits arrive by every path, on 1 to 4 executors, in frames of
 * 1000 bytes (which divide neither the array nor its chunks of rows) and
 * of the default size; the chain's driver sends the array once, the
 * star's once per executor, and an unchanged array moves no more. */
Test(cluster, broadcast_chain_star_and_shards_agree) {
  static const char *const ns[] = {"1", "2", "3", "4"};
  const long long size = 301 * 37 * 8;
  long long drv, peer, sdrv, speer;
  tu_run in = DRIVE("--executors", "0", "@bcast.lua");
  int i;
  expect_ok(&in, "bcast.lua inside the driver");
  expect_has(in.out, "array A: server (read-only)");
  for (i = 0; i < 4; i++) {
    bcast_run(ns[i], "chain", "1000", in.out, 1, &drv, &peer);
    cr_expect_geq(peer, i * size, "%s executors: chain forwarded %lld bytes",
                  ns[i], peer);
  }
  bcast_run("3", "chain", NULL, in.out, 3, &drv, &peer);
  cr_expect_lt(peer, 3000, "an unchanged array moved again: %lld", peer);
  bcast_run("3", "shard", NULL, in.out, 1, &drv, &peer);
  cr_expect_geq(peer, 2 * size * 9 / 10, "shards were not fetched: %lld",
                peer);
  /* 4 executors: the star's driver sends 3 arrays more than the chain's,
   * and nothing goes between executors. */
  bcast_run("4", "chain", "4096", in.out, 1, &drv, &peer);
  bcast_run("4", "star", "4096", in.out, 1, &sdrv, &speer);
  cr_expect_geq(sdrv - drv, 3 * size, "star %lld, chain %lld", sdrv, drv);
  cr_expect_lt(speer, 1000, "the star's executors sent %lld bytes", speer);
  cr_expect_geq(peer, 3 * size, "the chain forwarded %lld bytes", peer);
  tu_run_free(&in);
}

/* Runs bigbody.lua on n executors with ORION_BCAST=mode and
 * ORION_BCAST_CHUNK=chunk (NULL: unset); its output must be want.  *drv
 * and *peer: its first loop's bytes from the driver, between executors. */
static void bigbody_run(const char *n, const char *mode, const char *chunk,
                        const char *want, long long *drv, long long *peer) {
  char line[256];
  tu_run r = chain_script("@bigbody.lua", n, mode, chunk, want);
  line_with(r.err, "bytes loop 1 driver", line, sizeof line);
  cr_assert_eq(sscanf(line + strlen("bytes loop 1 driver"), "%lld peer %lld",
                      drv, peer),
               2, "%s", r.err);
  tu_run_free(&r);
  expect_no_executors_left("bigbody", 0);
}

/* A body of half a megabyte (it captures a large table) reaches 1 to 4
 * executors along the chain, in pieces of 1000 bytes or the default size,
 * with the results of a run inside the driver; on 4 executors the chain's
 * driver sends it about once and the executors pass it on three times,
 * where the star's driver sends it to each. */
Test(cluster, a_large_body_goes_along_the_chain) {
  static const char *const ns[] = {"1", "2", "3", "4"};
  long long drv, peer, sdrv, speer;
  tu_run in = DRIVE("--executors", "0", "@bigbody.lua");
  int i;
  expect_ok(&in, "bigbody.lua inside the driver");
  expect_has(in.out, "loop 2\t0x");
  for (i = 0; i < 4; i++) {
    bigbody_run(ns[i], "chain", "1000", in.out, &drv, &peer);
    if (i == 0)
      cr_expect_lt(peer, 1000, "1 executor: %lld bytes between executors",
                   peer);
    else
      cr_expect_geq(peer, (long long)i * 256 * 1024,
                    "%s executors: the chain passed on %lld bytes", ns[i],
                    peer);
  }
  bigbody_run("4", "chain", NULL, in.out, &drv, &peer);
  bigbody_run("4", "star", NULL, in.out, &sdrv, &speer);
  cr_expect_geq(sdrv, 3 * drv, "star's driver %lld bytes, chain's %lld", sdrv,
                drv);
  cr_expect_geq(peer, 2 * drv, "the chain passed on %lld bytes, its driver "
                               "sent %lld",
                peer, drv);
  cr_expect_lt(speer, 1000, "the star's executors sent %lld bytes", speer);
  tu_run_free(&in);
}

Test(cluster, broadcast_switch_refuses_unknown_paths) {
  tu_run r;
  setenv("ORION_BCAST", "ring", 1);
  r = DRIVE("--executors", "2", "@bcast.lua");
  unsetenv("ORION_BCAST");
  cr_expect_neq(r.status, 0);
  expect_has(r.err, "ORION_BCAST must be chain, star or shard, not 'ring'");
  tu_run_free(&r);
  setenv("ORION_BCAST_CHUNK", "0", 1);
  r = DRIVE("--executors", "2", "@bcast.lua");
  unsetenv("ORION_BCAST_CHUNK");
  cr_expect_neq(r.status, 0);
  expect_has(r.err, "ORION_BCAST_CHUNK must be a number of bytes from 1 to "
                    "67108864, not '0'");
  tu_run_free(&r);
  expect_no_executors_left("bcast switch", 0);
}

/* Executor 1 of 3, the middle of the chain, is stopped before a 48 MB
 * broadcast starts (so that it is in flight, executor 0 passing pieces on
 * to nobody) and killed once it has: the job ends with exit code 3 and a
 * message naming executor 1, and nobody waits for the rest of the
 * array. */
Test(cluster, executor_lost_in_the_middle_of_a_chain) {
  child *c = &jobs[0];
  char *path = script("bcast_lost.lua");
  char *argv[] = {(char *)tu_driver(), "-v", "--executors", "3",
                  "--heartbeat-timeout", "20", path, NULL};
  pid_t ex[4], mid = 0;
  int n = 0, i;
  char line[1024];
  double t_kill;
  child_start(c, argv, NULL);
  free(path);
  cr_assert(child_wait_text(c, 0, "warm\n", 60), "no warm-up:\n%s\n%s",
            c->buf[0], c->buf[1]);
  for (i = 0; i < 100 && n < 3; i++) {
    n = children_named(c->pid, "orion-executor", ex, 4);
    if (n < 3)
      sleep_s(0.05);
  }
  cr_assert_eq(n, 3, "found %d executors of driver %d", n, (int)c->pid);
  for (i = 0; i < 3; i++)
    if (executor_id(ex[i]) == 1)
      mid = ex[i];
  cr_assert_neq(mid, 0, "no executor with --id 1");
  cr_assert_eq(kill(mid, SIGSTOP), 0);
  cr_assert(child_wait_text(c, 0, "broadcast\n", 60), "%s\n%s", c->buf[0],
            c->buf[1]);
  sleep_s(0.5); /* the pieces reach executor 0, which cannot pass them on */
  cr_assert(!child_exited(c), "the driver ended early:\n%s\n%s", c->buf[0],
            c->buf[1]);
  cr_assert_eq(kill(mid, SIGKILL), 0);
  t_kill = now_s();
  cr_expect(child_wait(c, 15), "the driver still runs 15 s after executor "
                               "1 was killed:\n%s",
            c->buf[1]);
  cr_log_info("the driver exited with %d %.2f s after the kill",
              c->status, now_s() - t_kill);
  cr_expect_eq(c->status, 3, "exit status %d (want 3):\n%s", c->status,
               c->buf[1]);
  line_with(c->buf[1], "cluster failure: ", line, sizeof line);
  expect_has(line, "executor 1 (");
  expect_has(line, "was killed by signal 9");
  cr_expect(strstr(c->buf[0], "not reached") == NULL, "%s", c->buf[0]);
  for (i = 0; i < 200; i++) {
    reap_executors();
    if (!alive_as(ex[0], "orion-executor") &&
        !alive_as(ex[1], "orion-executor") &&
        !alive_as(ex[2], "orion-executor"))
      break;
    sleep_s(0.01);
  }
  for (i = 0; i < 3; i++)
    cr_expect(!alive_as(ex[i], "orion-executor"),
              "executor pid %d is still there 2 s after the driver",
              (int)ex[i]);
  expect_no_executors_left("chain loss", 0);
  child_free(c);
}

/* Local executors start with OpenBLAS's pool at ORION_BLAS_THREADS threads
 * (default 1), not one spinning thread per core, unless the user set
 * OPENBLAS_NUM_THREADS (drivers/launcher.c). */
Test(cluster, local_executors_start_openblas_with_the_threads_they_use) {
  static const struct {
    const char *orion, *openblas, *want;
  } cases[] = {{NULL, NULL, "blas threads 1 1"},
               {"3", NULL, "blas threads 3 3"},
               {"3", "2", "blas threads 2 2"}};
  size_t k;
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tu_run r;
    if (cases[k].orion != NULL)
      setenv("ORION_BLAS_THREADS", cases[k].orion, 1);
    else
      unsetenv("ORION_BLAS_THREADS");
    if (cases[k].openblas != NULL)
      setenv("OPENBLAS_NUM_THREADS", cases[k].openblas, 1);
    else
      unsetenv("OPENBLAS_NUM_THREADS");
    r = DRIVE("--executors", "2", "--allow-io", "@blas_env.lua");
    unsetenv("ORION_BLAS_THREADS");
    unsetenv("OPENBLAS_NUM_THREADS");
    expect_ok(&r, "blas_env.lua");
    expect_has(r.out, cases[k].want);
    tu_run_free(&r);
  }
}

/* t/cluster/iter_store.lua: compiled bodies over a sparse array on 2
 * executors.  One that never returns a value leaves the elements (its
 * executors do not keep the blocks' values: the object says it stores
 * nothing); one that returns values stores them, and they reach the
 * driver's copy: the same lines as inside the driver. */
Test(cluster, compiled_bodies_store_into_the_iterated_array_only_when_they_return) {
  tu_run in = DRIVE("--executors", "0", "@iter_store.lua"),
         r = DRIVE("--executors", "2", "@iter_store.lua");
  expect_ok(&in, "iter_store.lua inside the driver");
  expect_ok(&r, "iter_store.lua on 2 executors");
  expect_has(r.out, "unchanged by a body that stores nothing: true");
  expect_has(r.out, "stored by a body that returns values: true");
  cr_expect_str_eq(r.out, in.out, "2 executors differ from in-process");
  tu_run_free(&in);
  tu_run_free(&r);
}
