/* Helpers shared by the criterion tests: temporary files, the shared data
 * folder (skip when missing, fail under CI=true), and running orion-driver
 * as a child process with its output captured. */
#ifndef ORION_T_TESTUTIL_H
#define ORION_T_TESTUTIL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes `text` to a fresh temporary file whose name ends with `suffix`;
 * returns the path in a static-free malloc'd string the caller frees. */
static inline char *tu_write_temp(const char *suffix, const char *text) {
  char tmpl[256];
  int fd;
  FILE *f;
  snprintf(tmpl, sizeof tmpl, "/tmp/orion-test-XXXXXX%s", suffix);
  fd = mkstemps(tmpl, (int)strlen(suffix));
  cr_assert(fd >= 0, "mkstemps failed");
  f = fdopen(fd, "w");
  cr_assert(f != NULL);
  fputs(text, f);
  fclose(f);
  return strdup(tmpl);
}

/* A fresh temporary path (the file does not exist) ending in suffix. */
static inline char *tu_temp_path(const char *suffix) {
  char *p = tu_write_temp(suffix, "");
  unlink(p);
  return p;
}

/* The shared datasets folder, or NULL after marking the test skipped when
 * it is missing.  Under CI=true a missing folder fails the test instead, so
 * a broken path can never hide a test. */
static inline const char *tu_data_dir(const char *need) {
  const char *dir = getenv("ORION_DATA");
  char path[1024];
  const char *ci = getenv("CI");
  if (dir == NULL)
    dir = "../shared/data";
  snprintf(path, sizeof path, "%s/%s", dir, need);
  if (access(path, R_OK) == 0)
    return dir;
  if (ci != NULL && strcmp(ci, "true") == 0)
    cr_assert_fail("CI=true and the shared data file %s is missing", path);
  cr_skip_test("shared data %s not found (set ORION_DATA); skipping", path);
  return NULL;
}

typedef struct tu_run {
  int status; /* exit code, or 128+signal */
  char *out;  /* stdout */
  char *err;  /* stderr */
} tu_run;

static inline char *tu_slurp_fd(int fd) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (cap - len < 2) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  buf[len] = '\0';
  return buf;
}

/* Runs argv (argv[0] a path) with a timeout in seconds; captures output
 * into temp files to avoid pipe deadlocks. */
static inline tu_run tu_run_argv(char *const argv[], int timeout_s) {
  tu_run r;
  char outp[] = "/tmp/orion-out-XXXXXX", errp[] = "/tmp/orion-err-XXXXXX";
  int ofd = mkstemp(outp), efd = mkstemp(errp), st = 0;
  pid_t pid;
  cr_assert(ofd >= 0 && efd >= 0);
  pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    dup2(ofd, 1);
    dup2(efd, 2);
    alarm((unsigned)timeout_s);
    execv(argv[0], argv);
    _exit(127);
  }
  waitpid(pid, &st, 0);
  lseek(ofd, 0, SEEK_SET);
  lseek(efd, 0, SEEK_SET);
  r.out = tu_slurp_fd(ofd);
  r.err = tu_slurp_fd(efd);
  close(ofd);
  close(efd);
  unlink(outp);
  unlink(errp);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

static inline void tu_run_free(tu_run *r) {
  free(r->out);
  free(r->err);
}

/* The nvcc that tests compile device code with: $ORION_NVCC (its first
 * word), else the one configure found (ORION_NVCC_PATH, when the test
 * includes config.h), else nvcc on PATH; the test is skipped with a
 * message when there is none.  The CUDA toolkit is optional everywhere
 * (CI has none), so this skips under CI=true too.  Returns a static
 * path. */
static inline const char *tu_nvcc(void) {
  static char found[1024];
  const char *e = getenv("ORION_NVCC"), *path = getenv("PATH"), *p;
  size_t n;
  if (e != NULL && e[0] != '\0') {
    n = strcspn(e, " \t");
    snprintf(found, sizeof found, "%.*s", (int)n, e);
    if (access(found, X_OK) == 0)
      return found;
  }
#ifdef ORION_NVCC_PATH
  if (access(ORION_NVCC_PATH, X_OK) == 0)
    return ORION_NVCC_PATH;
#endif
  for (p = path; p != NULL && *p != '\0'; p += n + (p[n] == ':')) {
    n = strcspn(p, ":");
    snprintf(found, sizeof found, "%.*s/nvcc", (int)n, p);
    if (n > 0 && access(found, X_OK) == 0)
      return found;
  }
  cr_skip_test("no nvcc (the CUDA toolkit is optional; set ORION_NVCC): "
               "skipping");
  return NULL;
}

/* The orion-driver binary under test. */
static inline const char *tu_driver(void) {
  const char *d = getenv("ORION_DRIVER");
  return d != NULL ? d : "./orion-driver";
}

/* A path under the source tree. */
static inline char *tu_src(const char *rel) {
  const char *s = getenv("ORION_SRCDIR");
  char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", s != NULL ? s : ".", rel);
  return strdup(buf);
}

/* Runs orion-driver with args (NULL-terminated, at most 14) for at most
 * timeout_s seconds; an "@name" argument names the file name under the
 * source folder dir (e.g. "t/scripts"). */
static inline tu_run tu_drive(const char *dir, const char *const *args,
                              int timeout_s) {
  char *argv[16], *owned[16];
  int n = 0, nowned = 0, i;
  tu_run r;
  argv[n++] = (char *)tu_driver();
  for (i = 0; args[i] != NULL && n < 15; i++) {
    if (args[i][0] == '@') {
      char rel[512];
      snprintf(rel, sizeof rel, "%s/%s", dir, args[i] + 1);
      owned[nowned] = tu_src(rel);
      argv[n++] = owned[nowned++];
    } else {
      argv[n++] = (char *)args[i];
    }
  }
  argv[n] = NULL;
  r = tu_run_argv(argv, timeout_s);
  for (i = 0; i < nowned; i++)
    free(owned[i]);
  return r;
}

/* Runs argv (an orion-driver command line) that names an input or output
 * path the run cannot use, and checks that it is refused before any work:
 * exit 2, stderr starting with want (the program, the option and the
 * path: "mf.lua: --save /x/m: the folder /x does not exist"), nothing on
 * stdout (no data loaded, no epoch run) and nothing made at absent. */
static inline void tu_expect_path_refused(char *const argv[],
                                          const char *want,
                                          const char *absent) {
  tu_run r = tu_run_argv(argv, 60);
  cr_expect_eq(r.status, 2, "exit %d, not 2; stderr:\n%s", r.status, r.err);
  cr_expect(strncmp(r.err, want, strlen(want)) == 0,
            "stderr does not start with '%s':\n%s", want, r.err);
  cr_expect_str_eq(r.out, "", "work started before the refusal");
  cr_expect(access(absent, F_OK) != 0, "%s was created", absent);
  tu_run_free(&r);
}

/* How many lines of the file at path start with prefix (-1: unreadable). */
static inline int tu_count_line_prefix(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int n = 0;
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, prefix, strlen(prefix)) == 0)
      n++;
  fclose(f);
  return n;
}

/* How many times needle occurs in text. */
static inline int tu_count_substr(const char *text, const char *needle) {
  int n = 0;
  const char *p = text;
  while ((p = strstr(p, needle)) != NULL) {
    n++;
    p++;
  }
  return n;
}

#endif
