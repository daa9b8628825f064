/* util/ccomp.h: building generated C into cached shared objects with the
 * system compiler.  Each test gets a fresh folder under /tmp (the cache is
 * ROOT/cache, created by the code under test) and removes it afterwards;
 * criterion runs each test in its own process, so setenv stays local. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "t/testutil.h"
#include "util/ccomp.h"

static char root[64];
static char cache[128];

static const char SRC[] = "int orion_test_f(int x) { return x * 3 + 1; }\n";

static void unset_all(void) {
  unsetenv("ORION_CC");
  unsetenv("ORION_CFLAGS");
  unsetenv("ORION_NVCC");
  unsetenv("ORION_NVCC_FLAGS");
  unsetenv("XDG_CACHE_HOME");
}

static void setup(void) {
  strcpy(root, "/tmp/orion-ccomp-XXXXXX");
  cr_assert(mkdtemp(root) != NULL, "mkdtemp: %s", strerror(errno));
  snprintf(cache, sizeof cache, "%s/cache", root);
  setenv("ORION_CACHE_DIR", cache, 1);
  unset_all();
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void teardown(void) {
  if (root[0] != '\0')
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(ccomp, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

typedef int (*int_fn)(int);

static int call_f(orion_cobj *o, int x) {
  void *sym = orion_cobj_sym(o, "orion_test_f");
  int_fn f;
  cr_assert(sym != NULL, "orion_test_f not found in %s", orion_cobj_path(o));
  memcpy(&f, &sym, sizeof f);
  return f(x);
}

/* Builds src and asserts success; returns the object. */
static orion_cobj *build_ok(const char *src, const char *mode, int *cached) {
  orion_cobj *o = NULL;
  orion_error err;
  int rc;
  orion_error_clear(&err);
  rc = orion_cobj_build(src, strlen(src), mode, 0, &o, cached, &err);
  cr_assert_eq(rc, 0, "build failed: %s", err.msg);
  cr_assert(o != NULL);
  return o;
}

/* Builds src and asserts ORION_ECOMPILE; the message is left in err. */
static void build_fails(const char *src, double timeout_s, orion_error *err) {
  orion_cobj *o = (orion_cobj *)&o; /* must be reset to NULL */
  int cached = -1, rc;
  orion_error_clear(err);
  rc = orion_cobj_build(src, strlen(src), NULL, timeout_s, &o, &cached, err);
  cr_assert_eq(rc, ORION_ECOMPILE, "rc %d, message: %s", rc, err->msg);
  cr_assert_eq(err->code, ORION_ECOMPILE);
  cr_assert(o == NULL);
  cr_assert_eq(cached, 0);
  cr_assert(err->msg[0] != '\0');
  cr_assert(strchr(err->msg, '\n') == NULL, "not one paragraph: %s",
            err->msg);
}

static char *root_path(const char *name) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s/%s", root, name);
  return strdup(buf);
}

/* Writes an executable shell script at ROOT/name; returns its path. */
static char *write_script(const char *name, const char *body) {
  char *path = root_path(name);
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  fprintf(f, "#!/bin/sh\n%s", body);
  fclose(f);
  cr_assert_eq(chmod(path, 0755), 0);
  return path;
}

/* Entries of dir other than . and .., dot files included (-1: no dir). */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  if (d == NULL)
    return -1;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
      n++;
  closedir(d);
  return n;
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0, c;
  if (f == NULL)
    return 0;
  while ((c = fgetc(f)) != EOF)
    if (c == '\n')
      n++;
  fclose(f);
  return n;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  cr_assert(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  if (len != NULL)
    *len = (size_t)n;
  return buf;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f != NULL);
  cr_assert_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------
 * Building and the cache.
 * ---------------------------------------------------------------------- */

Test(ccomp, builds_and_calls) {
  int cached = -1;
  orion_cobj *o = build_ok(SRC, NULL, &cached);
  const char *path = orion_cobj_path(o);
  size_t plen = strlen(path), n;
  char cpath[512], *text;
  struct stat st;

  cr_assert_eq(call_f(o, 5), 16);
  cr_assert_eq(call_f(o, -2), -5);
  cr_assert_eq(cached, 0);
  cr_assert(orion_cobj_sym(o, "no_such_symbol") == NULL);

  /* cache/<32 hex>.so, beside its source, and nothing else. */
  cr_assert(starts_with(path, cache), "%s not under %s", path, cache);
  cr_assert_eq(plen, strlen(cache) + 1 + 32 + 3, "%s", path);
  cr_assert_str_eq(path + plen - 3, ".so");
  cr_assert_eq(stat(path, &st), 0);
  cr_assert(S_ISREG(st.st_mode) && st.st_size > 0);
  snprintf(cpath, sizeof cpath, "%.*s.c", (int)(plen - 3), path);
  text = slurp(cpath, &n);
  cr_assert_eq(n, strlen(SRC));
  cr_assert_str_eq(text, SRC);
  free(text);
  cr_assert_eq(count_entries(cache), 2);

  /* Created with mode 0700. */
  cr_assert_eq(stat(cache, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700, "mode %o", st.st_mode & 0777);

  orion_cobj_free(o);
  orion_cobj_free(NULL);
}

Test(ccomp, second_build_comes_from_cache) {
  char *counter = root_path("runs");
  char body[512], *script;
  orion_cobj *o1, *o2, *o3;
  int cached = -1;
  char *first;

  snprintf(body, sizeof body, "echo run >> '%s'\nexec cc \"$@\"\n", counter);
  script = write_script("countcc", body);
  setenv("ORION_CC", script, 1);

  o1 = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(count_lines(counter), 1);
  cr_assert_eq(call_f(o1, 1), 4);
  first = strdup(orion_cobj_path(o1));
  orion_cobj_free(o1);

  o2 = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 1);
  cr_assert_str_eq(orion_cobj_path(o2), first);
  cr_assert_eq(count_lines(counter), 1, "the compiler ran again");
  cr_assert_eq(call_f(o2, 2), 7);

  /* Two live objects for one path. */
  o3 = build_ok(SRC, "", &cached);
  cr_assert_eq(cached, 1);
  cr_assert_eq(call_f(o3, 3), 10);
  orion_cobj_free(o2);
  cr_assert_eq(call_f(o3, 4), 13);
  orion_cobj_free(o3);
  cr_assert_eq(count_lines(counter), 1);

  free(first);
  free(script);
  free(counter);
}

Test(ccomp, flags_change_the_key) {
  static const char src[] = "int orion_test_f(int x) { return x * 3 + K; }\n";
  orion_cobj *a, *b, *c, *d, *e;
  int cached = -1;

  /* Mode flags reach the compiler, and are part of the key. */
  a = build_ok(src, "-DK=5", &cached);
  cr_assert_eq(call_f(a, 1), 8);
  b = build_ok(src, "-DK=7", &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(b, 1), 10);
  cr_assert_str_neq(orion_cobj_path(a), orion_cobj_path(b));

  /* Split on whitespace: spacing does not matter. */
  c = build_ok(src, "  -DK=5\t", &cached);
  cr_assert_eq(cached, 1);
  cr_assert_str_eq(orion_cobj_path(a), orion_cobj_path(c));

  /* ORION_CFLAGS is part of the key too. */
  setenv("ORION_CFLAGS", "-O1", 1);
  d = build_ok(src, "-DK=5", &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(d, 1), 8);
  setenv("ORION_CFLAGS", "-O2", 1);
  e = build_ok(src, "-DK=5", &cached);
  cr_assert_eq(cached, 0);
  cr_assert_str_neq(orion_cobj_path(a), orion_cobj_path(d));
  cr_assert_str_neq(orion_cobj_path(d), orion_cobj_path(e));

  cr_assert_eq(count_entries(cache), 8);
  orion_cobj_free(a);
  orion_cobj_free(b);
  orion_cobj_free(c);
  orion_cobj_free(d);
  orion_cobj_free(e);
}

/* ------------------------------------------------------------------------
 * Failures.
 * ---------------------------------------------------------------------- */

Test(ccomp, compiler_fails) {
  orion_error err;
  setenv("ORION_CC", "false", 1);
  build_fails(SRC, 0, &err);
  cr_assert_str_eq(err.msg, "C compiler 'false' failed (exit 1)");
  cr_assert(strstr(err.msg, "'false'") != NULL);
  cr_assert(strstr(err.msg, "exit 1") != NULL);
  cr_assert_eq(count_entries(cache), 0, "stray files in the cache");

  /* Exits 0 but writes nothing. */
  setenv("ORION_CC", "true", 1);
  build_fails(SRC, 0, &err);
  cr_assert(strstr(err.msg, "'true' wrote no object") != NULL, "%s",
            err.msg);
  cr_assert_eq(count_entries(cache), 0);
}

Test(ccomp, compiler_not_found) {
  orion_error err;
  setenv("ORION_CC", "/nonexistent/cc", 1);
  build_fails(SRC, 0, &err);
  cr_assert_str_eq(err.msg,
                   "C compiler '/nonexistent/cc' not found (set ORION_CC)");
  cr_assert_eq(count_entries(cache), 0);

  /* Looked up in PATH. */
  setenv("ORION_CC", "orion-no-such-compiler -O2", 1);
  build_fails(SRC, 0, &err);
  cr_assert(strstr(err.msg, "'orion-no-such-compiler' not found") != NULL,
            "%s", err.msg);
  cr_assert_eq(count_entries(cache), 0);
}

Test(ccomp, syntax_error_quotes_diagnostics) {
  orion_error err;
  build_fails("int orion_test_f(int x) { return x * 3 + 1 }\n"
              "int orion_test_g(void) { return undeclared_thing; }\n",
              0, &err);
  cr_assert(starts_with(err.msg, "C compiler 'cc' failed (exit "), "%s",
            err.msg);
  cr_assert(strstr(err.msg, "error") != NULL, "%s", err.msg);
  /* The temporary build folder is not quoted, only the file name. */
  cr_assert(strstr(err.msg, ".build-") == NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, ".c:") != NULL, "%s", err.msg);
  cr_assert_eq(count_entries(cache), 0);
}

Test(ccomp, compiler_killed_by_signal) {
  orion_error err;
  char *script = write_script("segv", "echo about to crash >&2\n"
                                      "kill -SEGV $$\n");
  setenv("ORION_CC", script, 1);
  build_fails(SRC, 0, &err);
  cr_assert(strstr(err.msg, "killed by signal 11") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "about to crash") != NULL, "%s", err.msg);
  cr_assert_eq(count_entries(cache), 0);
  free(script);
}

/* Whether pid is gone or a zombie (a grandchild reparented to an init that
 * has not reaped it yet). */
static int dead(pid_t pid) {
  char path[64], buf[256], *p;
  FILE *f;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return 1;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (f == NULL)
    return 1;
  p = fgets(buf, sizeof buf, f);
  fclose(f);
  if (p == NULL)
    return 1;
  p = strrchr(buf, ')');
  return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

Test(ccomp, timeout_kills_and_reaps) {
  char *pids = root_path("pids");
  char body[512], *script;
  orion_error err;
  double t0, took;
  int child = 0, grandchild = 0, i;
  FILE *f;

  snprintf(body, sizeof body,
           "echo $$ > '%s'\nsleep 30 &\necho $! >> '%s'\nwait\n", pids, pids);
  script = write_script("slowcc", body);
  setenv("ORION_CC", script, 1);

  t0 = now_s();
  build_fails(SRC, 1, &err);
  took = now_s() - t0;
  cr_assert(took < 3.0, "took %.2f s", took);
  cr_assert(took >= 0.9, "took %.2f s", took);
  cr_assert(strstr(err.msg, "did not finish in 1 s") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "'") != NULL);
  cr_assert_eq(count_entries(cache), 0);

  f = fopen(pids, "r");
  cr_assert(f != NULL, "the script never ran");
  cr_assert_eq(fscanf(f, "%d %d", &child, &grandchild), 2);
  fclose(f);
  /* The compiler was reaped: not even a zombie, and no child is left. */
  cr_assert(kill(child, 0) != 0 && errno == ESRCH, "pid %d still there",
            child);
  cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
  cr_assert_eq(errno, ECHILD);
  /* Its process group went with it. */
  for (i = 0; i < 200 && !dead(grandchild); i++)
    usleep(10000);
  cr_assert(dead(grandchild), "the compiler's child %d survived",
            grandchild);

  free(script);
  free(pids);
}

Test(ccomp, corrupt_cache_entry_is_rebuilt) {
  int cached = -1, round;
  orion_cobj *o = build_ok(SRC, NULL, &cached);
  char *path = strdup(orion_cobj_path(o)), *good, *now;
  size_t len, nlen;

  good = slurp(path, &len);
  orion_cobj_free(o);
  for (round = 0; round < 4; round++) {
    if (round == 0) /* garbage */
      write_file(path, "this is not an ELF object\n", 26);
    else if (round == 1) /* cut short: the headers are intact */
      write_file(path, good, len / 2);
    else if (round == 2) /* empty, as after a crash before the data
                            reached the disk */
      write_file(path, "", 0);
    else { /* one byte changed: a well-formed ELF object, but not ours */
      char *bad = malloc(len);
      cr_assert(bad != NULL);
      memcpy(bad, good, len);
      bad[len / 2] ^= 0x40;
      write_file(path, bad, len);
      free(bad);
    }
    o = build_ok(SRC, NULL, &cached);
    cr_assert_eq(cached, 0, "round %d", round);
    cr_assert_str_eq(orion_cobj_path(o), path);
    cr_assert_eq(call_f(o, 10), 31);
    orion_cobj_free(o);
    now = slurp(path, &nlen);
    cr_assert(nlen > 4 && memcmp(now, "\177ELF", 4) == 0);
    free(now);
  }
  cr_assert_eq(count_entries(cache), 2);
  free(good);
  free(path);
}

/* Runs fn with stderr going to ROOT/name; returns what it wrote. */
static char *stderr_of(const char *name, void (*fn)(void)) {
  char *path = root_path(name), *text;
  size_t n;
  int saved = dup(2), fd;
  cr_assert(saved >= 0);
  fflush(stderr);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert(fd >= 0);
  cr_assert_eq(dup2(fd, 2), 2);
  close(fd);
  fn();
  fflush(stderr);
  cr_assert_eq(dup2(saved, 2), 2);
  close(saved);
  text = slurp(path, &n);
  free(path);
  return text;
}

static int occurrences(const char *s, const char *sub) {
  int n = 0;
  for (; (s = strstr(s, sub)) != NULL; s++)
    n++;
  return n;
}

static char *private_tmp; /* TMPDIR for builds without the cache */

/* Builds SRC under each unusable ORION_CACHE_DIR: every build succeeds. */
static void build_in_unusable_dirs(void) {
  char *file = root_path("plainfile"), sub[300];
  int cached = -1;
  orion_cobj *o;

  setenv("ORION_CACHE_DIR", "/proc/nonexistent/cache", 1);
  o = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(o, 5), 16);
  orion_cobj_free(o);

  write_file(file, "x", 1);
  setenv("ORION_CACHE_DIR", file, 1);
  o = build_ok(SRC, NULL, &cached);
  cr_assert_eq(call_f(o, 1), 4);
  orion_cobj_free(o);

  snprintf(sub, sizeof sub, "%s/below", file);
  setenv("ORION_CACHE_DIR", sub, 1);
  o = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 0);
  orion_cobj_free(o);

  if (geteuid() != 0) { /* root writes anywhere */
    cr_assert_eq(mkdir(cache, 0500), 0);
    setenv("ORION_CACHE_DIR", cache, 1);
    o = build_ok(SRC, NULL, &cached);
    cr_assert_eq(call_f(o, 2), 7);
    orion_cobj_free(o);
    cr_assert_eq(count_entries(cache), 0);
    chmod(cache, 0700);
  }
  free(file);
}

/* A cache folder that cannot be made or written: one warning naming the
 * first folder and why, then every body is built in a private folder,
 * which is removed. */
Test(ccomp, unusable_cache_dir_warns_once_and_builds) {
  char *text;
  private_tmp = root_path("tmp");
  cr_assert_eq(mkdir(private_tmp, 0700), 0);
  setenv("TMPDIR", private_tmp, 1);
  text = stderr_of("err", build_in_unusable_dirs);
  cr_assert_eq(occurrences(text, "warning: "), 1, "%s", text);
  cr_assert(strstr(text, "'/proc/nonexistent/cache'") != NULL, "%s", text);
  cr_assert(strstr(text, strerror(ENOENT)) != NULL, "%s", text);
  cr_assert(strstr(text, "without a cache") != NULL, "%s", text);
  cr_assert_eq(count_entries(private_tmp), 0);
  free(text);
  free(private_tmp);
}

/* ORION_CACHE_DIR=off: nothing is kept; each build runs the compiler, in
 * a private folder that is removed. */
Test(ccomp, cache_off) {
  char *counter = root_path("runs"), body[512], *script;
  int cached = -1, round;
  orion_cobj *o;

  snprintf(body, sizeof body, "echo run >> '%s'\nexec cc \"$@\"\n", counter);
  script = write_script("countcc", body);
  setenv("ORION_CC", script, 1);
  private_tmp = root_path("tmp");
  cr_assert_eq(mkdir(private_tmp, 0700), 0);
  setenv("TMPDIR", private_tmp, 1);
  setenv("ORION_CACHE_DIR", "off", 1);
  for (round = 1; round <= 2; round++) {
    o = build_ok(SRC, NULL, &cached);
    cr_assert_eq(cached, 0);
    cr_assert_eq(call_f(o, 3), 10);
    cr_assert_eq(count_lines(counter), round);
    cr_assert_eq(count_entries(private_tmp), 0);
    orion_cobj_free(o);
  }
  cr_assert_eq(access("off", F_OK), -1); /* no folder named "off" */
  cr_assert_eq(count_entries(cache), -1);
  free(private_tmp);
  free(script);
  free(counter);
}

/* The bytes of ROOT/cache's entry for the object at so (object and
 * source). */
static long long entry_bytes(const char *so) {
  char c[512];
  struct stat a, b;
  snprintf(c, sizeof c, "%.*s.c", (int)(strlen(so) - 3), so);
  cr_assert_eq(stat(so, &a), 0);
  cr_assert_eq(stat(c, &b), 0);
  return (long long)a.st_size + (long long)b.st_size;
}

/* ORION_CACHE_MAX: after a new entry, the least recently used ones go
 * until the rest fit; a hit counts as a use. */
Test(ccomp, size_cap_evicts_least_recently_used) {
  static const char *const srcs[] = {
      "int orion_test_f(int x) { return x * 3 + 1; }\n",
      "int orion_test_f(int x) { return x * 3 + 2; }\n",
      "int orion_test_f(int x) { return x * 3 + 3; }\n"};
  char *path[3], cap[64];
  int cached = -1, i;
  orion_cobj *o;
  struct timespec pause = {0, 20000000};

  for (i = 0; i < 2; i++) {
    o = build_ok(srcs[i], NULL, &cached);
    path[i] = strdup(orion_cobj_path(o));
    orion_cobj_free(o);
    nanosleep(&pause, NULL);
  }
  /* Room for two entries and a half. */
  snprintf(cap, sizeof cap, "%lld", entry_bytes(path[0]) * 5 / 2);
  setenv("ORION_CACHE_MAX", cap, 1);
  o = build_ok(srcs[0], NULL, &cached); /* a hit: 0 is now the newer */
  cr_assert_eq(cached, 1);
  orion_cobj_free(o);
  nanosleep(&pause, NULL);
  o = build_ok(srcs[2], NULL, &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(o, 1), 6);
  path[2] = strdup(orion_cobj_path(o));
  orion_cobj_free(o);
  cr_assert_eq(access(path[0], F_OK), 0, "the recently used entry went");
  cr_assert_eq(access(path[1], F_OK), -1, "the oldest entry stayed");
  cr_assert_eq(access(path[2], F_OK), 0);
  cr_assert_eq(count_entries(cache), 4);
  /* The evicted body builds again. */
  o = build_ok(srcs[1], NULL, &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(o, 1), 5);
  orion_cobj_free(o);

  /* A cap smaller than one entry keeps the entry just built. */
  setenv("ORION_CACHE_MAX", "1K", 1);
  o = build_ok("int orion_test_f(int x) { return x; }\n", NULL, &cached);
  cr_assert_eq(access(orion_cobj_path(o), F_OK), 0);
  orion_cobj_free(o);
  cr_assert_eq(count_entries(cache), 2);
  for (i = 0; i < 3; i++)
    free(path[i]);
}

Test(ccomp, bad_cache_max) {
  static const char *const bad[] = {"lots", "-1", "12Q", "1.5G",
                                    "99999999999999999999G"};
  orion_error err;
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("ORION_CACHE_MAX", bad[i], 1);
    build_fails(SRC, 0, &err);
    cr_assert(strstr(err.msg, "ORION_CACHE_MAX") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, bad[i]) != NULL, "%s", err.msg);
  }
}

/* The compiler's identity is part of the key: the same command naming a
 * changed compiler (upgraded in place) builds again. */
Test(ccomp, compiler_change_changes_the_key) {
  char *counter = root_path("runs"), body[512], *script, *first;
  int cached = -1;
  orion_cobj *o;
  struct timespec old[2] = {{1000000, 0}, {1000000, 0}};

  snprintf(body, sizeof body, "echo run >> '%s'\nexec cc \"$@\"\n", counter);
  script = write_script("countcc", body);
  setenv("ORION_CC", script, 1);
  o = build_ok(SRC, NULL, &cached);
  first = strdup(orion_cobj_path(o));
  orion_cobj_free(o);
  o = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 1);
  orion_cobj_free(o);
  cr_assert_eq(utimensat(AT_FDCWD, script, old, 0), 0);
  o = build_ok(SRC, NULL, &cached);
  cr_assert_eq(cached, 0);
  cr_assert_eq(count_lines(counter), 2);
  cr_assert_str_neq(orion_cobj_path(o), first);
  cr_assert_eq(call_f(o, 0), 1);
  orion_cobj_free(o);
  free(first);
  free(script);
  free(counter);
}

Test(ccomp, default_cache_dirs) {
  char *xdg = root_path("xdg"), *home = root_path("home"), want[300];
  orion_cobj *o;
  struct stat st;
  int cached;

  unsetenv("ORION_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  o = build_ok(SRC, NULL, &cached);
  snprintf(want, sizeof want, "%s/orion-c/", xdg);
  cr_assert(starts_with(orion_cobj_path(o), want), "%s",
            orion_cobj_path(o));
  orion_cobj_free(o);

  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", home, 1);
  o = build_ok(SRC, NULL, &cached);
  snprintf(want, sizeof want, "%s/.cache/orion-c/", home);
  cr_assert(starts_with(orion_cobj_path(o), want), "%s",
            orion_cobj_path(o));
  orion_cobj_free(o);
  cr_assert_eq(stat(home, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700); /* mkdir -p, mode 0700 */

  free(xdg);
  free(home);
}

/* ------------------------------------------------------------------------
 * Concurrency: processes and threads building one new source at once.
 * ---------------------------------------------------------------------- */

static const char CONC_SRC[] =
    "/* built by several builders at once */\n"
    "int orion_test_f(int x) { return x * 3 + 1; }\n";

static int build_and_check(void) {
  orion_cobj *o = NULL;
  orion_error err;
  int cached, ok, rc;
  void *sym;
  int_fn f;
  rc = orion_cobj_build(CONC_SRC, strlen(CONC_SRC), NULL, 60, &o, &cached,
                        &err);
  if (rc != 0) {
    fprintf(stderr, "build: %s\n", err.msg);
    return 0;
  }
  sym = orion_cobj_sym(o, "orion_test_f");
  ok = sym != NULL;
  if (ok) {
    memcpy(&f, &sym, sizeof f);
    ok = f(7) == 22;
  }
  orion_cobj_free(o);
  return ok;
}

Test(ccomp, concurrent_processes) {
  pid_t kids[4];
  int go[2], i, st;
  char c;

  cr_assert_eq(pipe(go), 0);
  for (i = 0; i < 4; i++) {
    kids[i] = fork();
    cr_assert(kids[i] >= 0);
    if (kids[i] == 0) {
      close(go[1]);
      if (read(go[0], &c, 1) < 0) /* EOF: everyone starts */
        _exit(2);
      _exit(build_and_check() ? 0 : 1);
    }
  }
  close(go[0]);
  close(go[1]);
  for (i = 0; i < 4; i++) {
    cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %d",
              i, st);
  }
  /* One object, its source, and no leftover temporary files. */
  cr_assert_eq(count_entries(cache), 2);
  cr_assert(build_and_check());
}

/* Processes building and evicting at once (a cap below one entry: every
 * addition evicts the others' entries): every build loads and runs the
 * right code. */
Test(ccomp, concurrent_eviction) {
  pid_t kids[4];
  int i, st;
  setenv("ORION_CACHE_MAX", "1", 1);
  for (i = 0; i < 4; i++) {
    kids[i] = fork();
    cr_assert(kids[i] >= 0);
    if (kids[i] == 0) {
      int round, ok = 1;
      for (round = 0; round < 6 && ok; round++) {
        char src[128];
        int k = (i + round) % 3;
        orion_cobj *o = NULL;
        orion_error err;
        snprintf(src, sizeof src,
                 "int orion_test_f(int x) { return x * 3 + %d; }\n", k);
        orion_error_clear(&err);
        if (orion_cobj_build(src, strlen(src), NULL, 0, &o, NULL, &err) !=
            0) {
          fprintf(stderr, "child %d: %s\n", i, err.msg);
          _exit(1);
        }
        ok = call_f(o, 2) == 6 + k;
        orion_cobj_free(o);
      }
      _exit(ok ? 0 : 1);
    }
  }
  for (i = 0; i < 4; i++) {
    cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %d",
              i, st);
  }
}

static void *thread_main(void *arg) {
  (void)arg;
  return build_and_check() ? (void *)1 : NULL;
}

Test(ccomp, concurrent_threads) {
  pthread_t th[4];
  void *ok;
  int i;
  for (i = 0; i < 4; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, thread_main, NULL), 0);
  for (i = 0; i < 4; i++) {
    cr_assert_eq(pthread_join(th[i], &ok), 0);
    cr_assert(ok != NULL, "thread %d failed", i);
  }
  cr_assert_eq(count_entries(cache), 2);
}

/* ------------------------------------------------------------------------
 * Describe.
 * ---------------------------------------------------------------------- */

Test(ccomp, describe) {
  char buf[256], tiny[5];

  orion_ccomp_describe(buf, sizeof buf);
  cr_assert_str_eq(buf, "cc -O3 -march=native");

  setenv("ORION_CC", "ccache  gcc", 1);
  setenv("ORION_CFLAGS", "  -O2\t-g ", 1);
  orion_ccomp_describe(buf, sizeof buf);
  cr_assert_str_eq(buf, "ccache gcc -O2 -g");

  setenv("ORION_CC", "   ", 1); /* blank: the default */
  setenv("ORION_CFLAGS", "", 1); /* set but empty: no flags */
  orion_ccomp_describe(buf, sizeof buf);
  cr_assert_str_eq(buf, "cc");

  unset_all();
  orion_ccomp_describe(tiny, sizeof tiny);
  cr_assert_str_eq(tiny, "cc -");
  tiny[0] = 'x';
  orion_ccomp_describe(tiny, 0);
  cr_assert_eq(tiny[0], 'x');
}

/* ------------------------------------------------------------------------
 * nvcc (orion_cobj_build_cuda): the same cache, messages naming the CUDA
 * compiler and ORION_NVCC.  Compiling needs the toolkit (skipped without);
 * no device is needed to build or to load the object.
 * ---------------------------------------------------------------------- */

static const char CUSRC[] =
    "__global__ void orion_test_k(int *p) { *p = 1; }\n"
    "extern \"C\" int orion_test_f(int x) { return x * 3 + 1; }\n";

static int build_cuda(const char *src, orion_cobj **o, int *cached,
                      orion_error *err) {
  orion_error_clear(err);
  *o = NULL;
  return orion_cobj_build_cuda(src, strlen(src), "-fmad=false", 0, o, cached,
                               err);
}

Test(ccomp, cuda_compiler_not_found) {
  orion_error err;
  orion_cobj *o;
  setenv("ORION_NVCC", "/nonexistent/nvcc", 1);
  cr_assert_eq(build_cuda(CUSRC, &o, NULL, &err), ORION_ECOMPILE);
  cr_assert_str_eq(err.msg, "CUDA compiler '/nonexistent/nvcc' not found "
                            "(set ORION_NVCC)");
  cr_assert(o == NULL);
  cr_assert_eq(count_entries(cache), 0);
}

Test(ccomp, cuda_syntax_error_quotes_diagnostics, .timeout = 240) {
  orion_error err;
  orion_cobj *o;
  char want[1200], cmd[1024];
  (void)tu_nvcc();
  setenv("ORION_NVCC_FLAGS", "-O0 -arch=sm_90", 1);
  orion_ccomp_describe_cuda(cmd, sizeof cmd);
  cmd[strcspn(cmd, " ")] = 0; /* the command, as the message names it */
  cr_assert_eq(build_cuda("extern \"C\" int orion_test_f(int x) "
                          "{ return x * 3 + 1 }\n",
                          &o, NULL, &err),
               ORION_ECOMPILE);
  snprintf(want, sizeof want, "CUDA compiler '%s' failed (exit ", cmd);
  cr_assert(starts_with(err.msg, want), "%s", err.msg);
  cr_assert(strstr(err.msg, ".cu(1): error: expected a \";\"") != NULL,
            "%s", err.msg);
  /* No build folder, no quoted source line, no count of errors. */
  cr_assert(strstr(err.msg, ".build-") == NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "detected in the compilation") == NULL, "%s",
            err.msg);
  cr_assert(strchr(err.msg, '\n') == NULL, "%s", err.msg);
  cr_assert_eq(count_entries(cache), 0);
}

Test(ccomp, cuda_builds_loads_and_caches, .timeout = 240) {
  orion_error err;
  orion_cobj *o, *c;
  int cached = -1;
  (void)tu_nvcc();
  setenv("ORION_NVCC_FLAGS", "-O0 -arch=sm_90", 1);
  cr_assert_eq(build_cuda(CUSRC, &o, &cached, &err), 0, "%s", err.msg);
  cr_assert_eq(cached, 0);
  cr_assert_eq(call_f(o, 4), 13);
  cr_assert(strstr(orion_cobj_path(o), ".so") != NULL);
  /* Its own cache entry, source kept as .cu; the C build of the same
   * text is another key. */
  cr_assert_eq(build_cuda(CUSRC, &c, &cached, &err), 0, "%s", err.msg);
  cr_assert_eq(cached, 1);
  orion_cobj_free(c);
  cr_assert_eq(count_entries(cache), 2, "the object and its .cu");
  orion_cobj_free(o);
}

Test(ccomp, describe_cuda) {
  char buf[256];
  setenv("ORION_NVCC", "/opt/cuda/bin/nvcc", 1);
  orion_ccomp_describe_cuda(buf, sizeof buf);
  cr_assert_str_eq(buf, "/opt/cuda/bin/nvcc -O3 -arch=native");
  setenv("ORION_NVCC_FLAGS", "-O2 -arch=sm_90", 1);
  orion_ccomp_describe_cuda(buf, sizeof buf);
  cr_assert_str_eq(buf, "/opt/cuda/bin/nvcc -O2 -arch=sm_90");
  unset_all();
  orion_ccomp_describe_cuda(buf, sizeof buf);
#ifdef ORION_NVCC_PATH
  cr_assert_str_eq(buf, ORION_NVCC_PATH " -O3 -arch=native");
#else
  cr_assert_str_eq(buf, "nvcc -O3 -arch=native");
#endif
}
