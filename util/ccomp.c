#include "util/ccomp.h"

#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/cbody.h"
#include "util/ccache.h"
#include "util/gbody.h"
#include "util/hash.h"
#include "util/log.h"

/* Part of every cache key: bump it when the way objects are built changes,
 * so stale objects are never reused. */
#define FORMAT_VERSION "orion-ccomp-2 -fPIC -shared -lm sealed"

#define DEFAULT_CC "cc"
#define DEFAULT_CFLAGS "-O3 -march=native"
/* nvcc: $ORION_NVCC, else the one configure found, else nvcc on PATH. */
#ifdef ORION_NVCC_PATH
#define DEFAULT_NVCC ORION_NVCC_PATH
#else
#define DEFAULT_NVCC "nvcc"
#endif
#define DEFAULT_NVCC_FLAGS "-O3 -arch=native"
/* Always after the user's nvcc flags: one source, built for the device
 * and sharing the executor's CUDA runtime (util/gbody.h). */
#define NVCC_FIXED "-x cu -DORION_GPU_BODY=1 -Xcompiler -fPIC -shared " \
                   "-cudart shared"
#define DEFAULT_TIMEOUT_S 120.0

/* How much of the compiler's diagnostics an error message quotes. */
#define DIAG_LINES 5
#define DIAG_LINE_MAX 200
#define DIAG_READ_MAX 16384

/* After SIGKILL a process normally dies at once; this bounds the wait for
 * one stuck in the kernel (say, on a dead NFS server). */
#define REAP_GRACE_S 10.0

/* waitpid is polled with sleeps growing from 1 ms to 20 ms. */
#define POLL_MIN_NS 1000000L
#define POLL_MAX_NS 20000000L

struct orion_cobj {
  void *handle;
  char *path;
};

/* ------------------------------------------------------------------------
 * Small strings: word vectors, joining, formatting.
 * ---------------------------------------------------------------------- */

/* A growable argv-style vector that owns its strings; v is NULL-terminated
 * once anything was pushed. */
typedef struct words {
  char **v;
  size_t n, cap;
} words;

static int words_push(words *w, const char *s, size_t len) {
  char *copy;
  if (w->n + 2 > w->cap) {
    size_t cap = w->cap == 0 ? 16 : w->cap * 2;
    char **v = orion_realloc(w->v, cap * sizeof *v);
    if (v == NULL)
      return ORION_ENOMEM;
    w->v = v;
    w->cap = cap;
  }
  copy = orion_strndup(s, len);
  if (copy == NULL)
    return ORION_ENOMEM;
  w->v[w->n++] = copy;
  w->v[w->n] = NULL;
  return 0;
}

static int push_str(words *w, const char *s) {
  return words_push(w, s, strlen(s));
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

/* Appends the whitespace-separated words of s (NULL: none).  No quoting,
 * no shell. */
static int words_split(words *w, const char *s) {
  if (s == NULL)
    return 0;
  for (;;) {
    const char *start;
    while (is_space(*s))
      s++;
    if (*s == '\0')
      return 0;
    start = s;
    while (*s != '\0' && !is_space(*s))
      s++;
    if (words_push(w, start, (size_t)(s - start)) != 0)
      return ORION_ENOMEM;
  }
}

static int words_append(words *w, const words *from) {
  size_t i;
  for (i = 0; i < from->n; i++)
    if (push_str(w, from->v[i]) != 0)
      return ORION_ENOMEM;
  return 0;
}

static void words_free(words *w) {
  size_t i;
  for (i = 0; i < w->n; i++)
    orion_free(w->v[i]);
  orion_free(w->v);
  w->v = NULL;
  w->n = w->cap = 0;
}

/* Appends s at out[*pos], truncating to the n bytes of out (which stays
 * NUL-terminated). */
static void append_str(char *out, size_t n, size_t *pos, const char *s) {
  size_t len = strlen(s);
  if (n == 0 || *pos + 1 >= n)
    return;
  if (len > n - 1 - *pos)
    len = n - 1 - *pos;
  memcpy(out + *pos, s, len);
  *pos += len;
  out[*pos] = '\0';
}

static void join_words(const words *w, char *out, size_t n, size_t *pos) {
  size_t i;
  for (i = 0; i < w->n; i++) {
    if (*pos > 0)
      append_str(out, n, pos, " ");
    append_str(out, n, pos, w->v[i]);
  }
}


/* ------------------------------------------------------------------------
 * Configuration from the environment.
 * ---------------------------------------------------------------------- */

typedef struct config {
  words cc;    /* the compiler command: at least one word */
  words flags; /* the user's flags */
  words fixed; /* what every build adds after them */
  int cuda;    /* nvcc (orion_cobj_build_cuda) */
  const char *what, *env; /* "C compiler", "ORION_CC" for messages */
} config;

static void config_free(config *c) {
  words_free(&c->cc);
  words_free(&c->flags);
  words_free(&c->fixed);
}

/* An unset ORION_CFLAGS means the default flags; a set but empty one means
 * no flags at all.  A blank ORION_CC means the default compiler.  The
 * same for ORION_NVCC and ORION_NVCC_FLAGS when cuda. */
static int config_load(config *c, int cuda) {
  const char *cc = getenv(cuda ? "ORION_NVCC" : "ORION_CC");
  const char *flags = getenv(cuda ? "ORION_NVCC_FLAGS" : "ORION_CFLAGS");
  memset(c, 0, sizeof *c);
  c->cuda = cuda;
  c->what = cuda ? "CUDA compiler" : "C compiler";
  c->env = cuda ? "ORION_NVCC" : "ORION_CC";
  if (words_split(&c->cc, cc) != 0 ||
      (c->cc.n == 0 &&
       words_split(&c->cc, cuda ? DEFAULT_NVCC : DEFAULT_CC) != 0) ||
      words_split(&c->flags,
                  flags != NULL ? flags
                                : cuda ? DEFAULT_NVCC_FLAGS : DEFAULT_CFLAGS) !=
          0 ||
      words_split(&c->fixed, cuda ? NVCC_FIXED : "-fPIC -shared") != 0) {
    config_free(c);
    return ORION_ENOMEM;
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * The cache key: two independent 64-bit hashes over length-prefixed
 * fields, so that moving bytes from one field to the next changes the key.
 * ---------------------------------------------------------------------- */

/* Two FNV-1a streams from different starting values. */
typedef struct hasher {
  uint64_t a, b;
} hasher;

static void hash_field(hasher *h, const void *p, size_t n) {
  h->a = orion_hash_bytes(orion_hash_u64(h->a, n), p, n);
  h->b = orion_hash_bytes(orion_hash_u64(h->b, n), p, n);
}

static void hash_words(hasher *h, const words *w) {
  size_t i;
  h->a = orion_hash_u64(h->a, w->n);
  h->b = orion_hash_u64(h->b, w->n);
  for (i = 0; i < w->n; i++)
    hash_field(h, w->v[i], strlen(w->v[i]));
}

/* Whether any of the words asks for the build machine's CPU
 * ("-march=native", "-mtune=native", nvcc's "-arch=native"). */
static int wants_native(const words *w) {
  size_t i;
  for (i = 0; i < w->n; i++)
    if (strstr(w->v[i], "native") != NULL)
      return 1;
  return 0;
}

/* Writes 32 hex digits and a NUL to hex: the source, the command, the
 * compiler's identity, the body ABI and the target (util/ccache.h). */
static void cache_key(const config *c, const words *mode, const char *src,
                      size_t len, char hex[33]) {
  hasher h = {ORION_HASH_INIT, 0x243f6a8885a308d3ULL};
  char id[PATH_MAX + 64];
  const char *target;
  int abi = c->cuda ? ORION_GBODY_ABI : ORION_CBODY_ABI;
  hash_field(&h, FORMAT_VERSION, strlen(FORMAT_VERSION));
  if (c->cuda)
    hash_field(&h, "cuda", 4);
  hash_words(&h, &c->cc);
  hash_words(&h, &c->flags);
  hash_words(&h, &c->fixed);
  hash_words(&h, mode);
  orion_ccache_compiler_id(c->cc.v[0], id, sizeof id);
  hash_field(&h, id, strlen(id));
  hash_field(&h, &abi, sizeof abi);
  target = orion_ccache_target(wants_native(&c->flags) ||
                               wants_native(mode));
  hash_field(&h, target, strlen(target));
  hash_field(&h, src, len);
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)orion_hash_mix(h.a),
           (unsigned long long)orion_hash_mix(h.b ^ h.a));
}

/* ------------------------------------------------------------------------
 * The cache directory.
 * ---------------------------------------------------------------------- */

/* The directory named by the environment (orion_free it), or NULL when out
 * of memory.  *shared_tmp is set for the /tmp fallback, which anyone could
 * have created first. */
static char *cache_dir_path(int *shared_tmp) {
  const char *e = getenv("ORION_CACHE_DIR");
  *shared_tmp = 0;
  if (e != NULL && e[0] != '\0') {
    size_t len = strlen(e);
    while (len > 1 && e[len - 1] == '/')
      len--;
    return orion_strndup(e, len);
  }
  e = getenv("XDG_CACHE_HOME");
  if (e != NULL && e[0] == '/') /* the XDG spec ignores relative paths */
    return orion_asprintf("%s/orion-c", e);
  e = getenv("HOME");
  if (e != NULL && e[0] != '\0')
    return orion_asprintf("%s/.cache/orion-c", e);
  *shared_tmp = 1;
  return orion_asprintf("/tmp/orion-c-%lu", (unsigned long)geteuid());
}

static int dir_error(orion_error *err, const char *dir, int e) {
  return orion_error_set(err, ORION_ECOMPILE,
                         "cannot create the compile cache directory '%s': "
                         "%s",
                         dir, strerror(e));
}

/* mkdir -p, each missing component with mode 0700.  A directory that
 * exists already is used as it is (it may be read-only: objects already in
 * it can still be loaded). */
static int ensure_dir(const char *dir, int shared_tmp, orion_error *err) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    char *p = orion_strdup(dir), *q;
    if (p == NULL)
      return orion_error_set(err, ORION_ECOMPILE, "out of memory");
    for (q = p + 1;; q++) {
      if (*q == '/' || *q == '\0') {
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
          int e = errno;
          orion_free(p);
          return dir_error(err, dir, e);
        }
        *q = c;
        if (c == '\0')
          break;
      }
    }
    orion_free(p);
    if (stat(dir, &st) != 0)
      return dir_error(err, dir, errno);
    if (!S_ISDIR(st.st_mode))
      return dir_error(err, dir, ENOTDIR);
  }
  if (shared_tmp && st.st_uid != geteuid())
    return orion_error_set(err, ORION_ECOMPILE,
                           "the compile cache directory '%s' belongs to "
                           "another user",
                           dir);
  return 0;
}

static int write_error(orion_error *err, const char *dir, int e) {
  return orion_error_set(err, ORION_ECOMPILE,
                         "cannot write to the compile folder '%s': %s",
                         dir, strerror(e));
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Removes dir and the files in it (the compiler writes no subfolders). */
static void remove_build_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      if (unlinkat(dirfd(d), de->d_name, 0) != 0)
        unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Whether the file at path is an ELF object as long as its headers say: a
 * file cut short (a crash before its data reached the disk) would make
 * dlopen fault on the missing pages instead of failing. */
static int elf_whole(const char *path) {
  ElfW(Ehdr) eh;
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
  size_t i;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_phentsize != sizeof(ElfW(Phdr)))
    goto out;
  if ((uint64_t)eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize >
      (uint64_t)st.st_size)
    goto out;
  for (i = 0; i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) !=
        (ssize_t)sizeof ph)
      goto out;
    if (ph.p_type == PT_LOAD &&
        (uint64_t)ph.p_offset + ph.p_filesz > (uint64_t)st.st_size)
      goto out;
  }
  ok = 1;
out:
  close(fd);
  return ok;
}

/* ------------------------------------------------------------------------
 * Running the compiler.
 * ---------------------------------------------------------------------- */

typedef enum run_kind {
  RUN_EXITED,   /* code: the exit status */
  RUN_SIGNALED, /* code: the signal */
  RUN_TIMEOUT,  /* killed; reaped tells whether it was reaped */
  RUN_LOST,     /* finished, status unknown (SIGCHLD ignored by the host) */
  RUN_NOSTART   /* code: the errno of the spawn */
} run_kind;

typedef struct run_result {
  run_kind kind;
  int code;
  int reaped;
} run_result;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls pid until it exits or the monotonic clock passes until.  Returns 1
 * with *st set, 0 at the deadline, -1 when the status is gone (ECHILD). */
static int wait_until(pid_t pid, int *st, double until) {
  long delay = POLL_MIN_NS;
  for (;;) {
    pid_t r = waitpid(pid, st, WNOHANG);
    double left;
    struct timespec ts;
    if (r == pid)
      return 1;
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    left = until - now_s();
    if (left <= 0)
      return 0;
    if (left * 1e9 < (double)delay)
      delay = (long)(left * 1e9) + 1;
    ts.tv_sec = 0;
    ts.tv_nsec = delay;
    nanosleep(&ts, NULL);
    if (delay < POLL_MAX_NS / 2)
      delay *= 2;
    else
      delay = POLL_MAX_NS;
  }
}

/* Runs argv (argv[0] looked up in PATH) with stdin from /dev/null and
 * stdout and stderr into log_path, in a process group of its own so that a
 * timeout kills whatever it started too.  posix_spawnp rather than fork:
 * the caller may have other threads (libuv), and nothing runs in the child
 * but the exec. */
static void run_compiler(char *const *argv, const char *log_path,
                         double timeout_s, run_result *res) {
  static const int reset[] = {SIGPIPE, SIGINT,  SIGQUIT, SIGTERM,
                              SIGHUP,  SIGCHLD, SIGALRM, SIGXFSZ,
                              SIGUSR1, SIGUSR2};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, dfl;
  pid_t pid;
  int logfd, rc, st = 0, got;
  size_t i;

  memset(res, 0, sizeof *res);
  logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) {
    res->kind = RUN_NOSTART;
    res->code = errno;
    return;
  }
  sigemptyset(&none);
  sigemptyset(&dfl);
  for (i = 0; i < sizeof reset / sizeof reset[0]; i++)
    sigaddset(&dfl, reset[i]);
  rc = posix_spawn_file_actions_init(&fa);
  if (rc != 0) {
    close(logfd);
    res->kind = RUN_NOSTART;
    res->code = rc;
    return;
  }
  rc = posix_spawnattr_init(&at);
  if (rc != 0) {
    posix_spawn_file_actions_destroy(&fa);
    close(logfd);
    res->kind = RUN_NOSTART;
    res->code = rc;
    return;
  }
  rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0)
    rc = posix_spawn_file_actions_adddup2(&fa, logfd, 1);
  if (rc == 0)
    rc = posix_spawn_file_actions_adddup2(&fa, logfd, 2);
#if defined(__GLIBC__) &&                                                     \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  /* The host's sockets and pipes are no business of the compiler's. */
  if (rc == 0)
    rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  if (rc == 0)
    rc = posix_spawnattr_setflags(&at, (short)(POSIX_SPAWN_SETPGROUP |
                                               POSIX_SPAWN_SETSIGMASK |
                                               POSIX_SPAWN_SETSIGDEF));
  if (rc == 0)
    rc = posix_spawnattr_setpgroup(&at, 0);
  if (rc == 0)
    rc = posix_spawnattr_setsigmask(&at, &none);
  if (rc == 0)
    rc = posix_spawnattr_setsigdefault(&at, &dfl);
  if (rc == 0)
    rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  close(logfd);
  if (rc != 0) {
    res->kind = RUN_NOSTART;
    res->code = rc;
    return;
  }

  got = wait_until(pid, &st, now_s() + timeout_s);
  if (got > 0) {
    if (WIFSIGNALED(st)) {
      res->kind = RUN_SIGNALED;
      res->code = WTERMSIG(st);
    } else {
      res->kind = RUN_EXITED;
      res->code = WEXITSTATUS(st);
    }
    return;
  }
  if (got < 0) {
    res->kind = RUN_LOST;
    return;
  }
  /* Not reaped yet, so pid (and its group id) cannot have been reused. */
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  res->kind = RUN_TIMEOUT;
  res->reaped = wait_until(pid, &st, now_s() + REAP_GRACE_S) != 0;
}

/* Whether name (looked up in PATH when it has no slash, as execvp does)
 * names an executable file.  For posix_spawnp implementations that report
 * a failed exec as exit status 127 (valgrind, some libcs) rather than an
 * error. */
static int command_exists(const char *name) {
  const char *path = getenv("PATH"), *p, *end;
  struct stat st;
  if (strchr(name, '/') != NULL)
    return access(name, X_OK) == 0;
  if (path == NULL)
    path = "/bin:/usr/bin";
  for (p = path;; p = end + 1) {
    char *full;
    int ok;
    end = strchr(p, ':');
    if (end == NULL)
      end = p + strlen(p);
    full = orion_asprintf("%.*s%s%s", (int)(end - p), p, end == p ? "" : "/",
                      name);
    if (full == NULL)
      return 1; /* do not claim "not found" on a shortage of memory */
    ok = access(full, X_OK) == 0 && stat(full, &st) == 0 &&
         S_ISREG(st.st_mode);
    orion_free(full);
    if (ok)
      return 1;
    if (*end == '\0')
      return 0;
  }
}

/* gcc's excerpts of the source ("   12 | x = y" and the caret line under
 * it) say nothing a one-paragraph message needs. */
static int is_excerpt_line(const char *s) {
  while (*s == ' ')
    s++;
  while (*s >= '0' && *s <= '9')
    s++;
  while (*s == ' ')
    s++;
  if (*s == '|')
    return 1;
  for (; *s != '\0'; s++)
    if (*s != '^' && *s != '~' && *s != ' ')
      return 0;
  return 1;
}

/* Lines that only say where the next message is ("x.c: In function 'f':",
 * "In file included from ...") or count them ("2 errors generated.", nvcc's
 * "1 error detected in the compilation of ..."). */
static int is_context_line(const char *s) {
  return strstr(s, ": In function ") != NULL ||
         strstr(s, ": At top level:") != NULL ||
         strstr(s, "In file included from ") != NULL ||
         strstr(s, " generated.") != NULL ||
         strstr(s, " detected in the compilation of ") != NULL;
}

/* Quotes the first DIAG_LINES lines of the log at path into out as one
 * line, " | " between lines, without colour escapes, source excerpts,
 * context lines, or the prefix strip (the temporary build folder). */
static void diag_excerpt(const char *path, const char *strip, int cuda,
                         char *out, size_t n) {
  char *buf, *line, *next;
  size_t pos = 0, slen = strlen(strip);
  ssize_t got;
  int fd, lines = 0;

  out[0] = '\0';
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  buf = orion_malloc(DIAG_READ_MAX + 1);
  if (buf == NULL) {
    close(fd);
    return;
  }
  do
    got = pread(fd, buf, DIAG_READ_MAX, 0);
  while (got < 0 && errno == EINTR);
  close(fd);
  buf[got > 0 ? got : 0] = '\0';

  for (line = buf; line != NULL && lines < DIAG_LINES; line = next) {
    char clean[DIAG_LINE_MAX + 4];
    const char *s = line, *t;
    size_t k = 0;
    next = strchr(line, '\n');
    if (next != NULL)
      *next++ = '\0';
    while (*s != '\0' && k < DIAG_LINE_MAX) {
      if (*s == '\033') { /* ESC [ parameters final-letter */
        s++;
        if (*s == '[')
          s++;
        while (*s != '\0' && !((*s >= 'A' && *s <= 'Z') ||
                               (*s >= 'a' && *s <= 'z')))
          s++;
        if (*s != '\0')
          s++;
      } else if (slen > 0 && strncmp(s, strip, slen) == 0) {
        s += slen;
      } else {
        clean[k++] = (*s == '\t' || *s == '\r') ? ' ' : *s;
        s++;
      }
    }
    if (*s != '\0') { /* cut: DIAG_LINE_MAX reached */
      memcpy(clean + k, "...", 3);
      k += 3;
    }
    while (k > 0 && clean[k - 1] == ' ')
      k--;
    clean[k] = '\0';
    for (t = clean; *t == ' '; t++)
      ;
    /* nvcc quotes the source line, indented, under each message. */
    if (*t == '\0' || is_excerpt_line(clean) || is_context_line(t) ||
        (cuda && clean[0] == ' '))
      continue;
    if (pos > 0)
      append_str(out, n, &pos, " | ");
    append_str(out, n, &pos, t);
    lines++;
  }
  orion_free(buf);
}

/* Builds src in a private temporary folder dir/.build-hex-XXXXXX, which
 * holds hex.so (sealed: util/ccache.h) and hex.c (.cu) on success; the
 * caller renames them into the cache, so that no one ever sees a partial
 * file, or loads the object from there, and removes the folder
 * (*build_out, orion_free it).  On failure the folder is removed and
 * *build_out is NULL; *no_folder is mkdtemp's errno when the folder could
 * not be made (dir is not writable), else 0. */
static int compile(const config *c, const words *mode, const char *dir,
                   const char *hex, const char *src, size_t len,
                   double timeout_s, char **build_out, int *no_folder,
                   orion_error *err) {
  char *build = orion_asprintf("%s/.build-%s-XXXXXX", dir, hex);
  char *bsrc = NULL, *bso = NULL, *blog = NULL, *strip = NULL;
  char name[256], diag[640];
  words argv = {0};
  run_result res;
  struct stat st;
  size_t pos = 0;
  int rc = 0, made = 0, fd;

  name[0] = '\0';
  *build_out = NULL;
  *no_folder = 0;
  join_words(&c->cc, name, sizeof name, &pos);
  if (build == NULL) {
    rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
    goto out;
  }
  if (mkdtemp(build) == NULL) {
    *no_folder = errno;
    rc = write_error(err, dir, errno);
    goto out;
  }
  made = 1;
  bsrc = orion_asprintf("%s/%s.%s", build, hex, c->cuda ? "cu" : "c");
  bso = orion_asprintf("%s/%s.so", build, hex);
  blog = orion_asprintf("%s/cc.log", build);
  strip = orion_asprintf("%s/", build);
  if (bsrc == NULL || bso == NULL || blog == NULL || strip == NULL ||
      words_append(&argv, &c->cc) != 0 ||
      words_append(&argv, &c->flags) != 0 ||
      words_append(&argv, &c->fixed) != 0 || words_append(&argv, mode) != 0 || push_str(&argv, "-o") != 0 ||
      push_str(&argv, bso) != 0 || push_str(&argv, bsrc) != 0 ||
      push_str(&argv, "-lm") != 0) {
    rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
    goto out;
  }

  fd = open(bsrc, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = write_error(err, dir, errno);
    goto out;
  }
  if (write_all(fd, src, len) != 0) {
    int e = errno;
    close(fd);
    rc = write_error(err, dir, e);
    goto out;
  }
  if (close(fd) != 0) {
    rc = write_error(err, dir, errno);
    goto out;
  }

  run_compiler(argv.v, blog, timeout_s, &res);
  switch (res.kind) {
  case RUN_NOSTART:
    if (res.code == ENOENT || res.code == ENOTDIR)
      rc = orion_error_set(err, ORION_ECOMPILE, "%s '%s' not found (set %s)",
                           c->what, argv.v[0], c->env);
    else
      rc = orion_error_set(err, ORION_ECOMPILE,
                           "cannot run the %s '%s': %s (set %s)", c->what,
                           argv.v[0], strerror(res.code), c->env);
    goto out;
  case RUN_TIMEOUT:
    rc = orion_error_set(err, ORION_ECOMPILE,
                         "%s '%s' did not finish in %g s and was killed%s",
                         c->what, name, timeout_s,
                         res.reaped ? "" : " (it has not exited yet)");
    goto out;
  case RUN_SIGNALED:
    diag_excerpt(blog, strip, c->cuda, diag, sizeof diag);
    rc = orion_error_set(err, ORION_ECOMPILE,
                         "%s '%s' was killed by signal %d (%s)%s%s",
                         c->what, name, res.code, strsignal(res.code),
                         diag[0] != '\0' ? ": " : "", diag);
    goto out;
  case RUN_EXITED:
    if (res.code == 127 && !command_exists(argv.v[0])) {
      rc = orion_error_set(err, ORION_ECOMPILE, "%s '%s' not found (set %s)",
                           c->what, argv.v[0], c->env);
      goto out;
    }
    if (res.code != 0) {
      diag_excerpt(blog, strip, c->cuda, diag, sizeof diag);
      rc = orion_error_set(err, ORION_ECOMPILE,
                           "%s '%s' failed (exit %d)%s%s", c->what, name,
                           res.code, diag[0] != '\0' ? ": " : "", diag);
      goto out;
    }
    break;
  case RUN_LOST: /* judge by the object; dlopen checks it */
    break;
  }
  if (stat(bso, &st) != 0 || st.st_size == 0) {
    diag_excerpt(blog, strip, c->cuda, diag, sizeof diag);
    rc = orion_error_set(err, ORION_ECOMPILE,
                         "%s '%s' wrote no object%s%s", c->what, name,
                         diag[0] != '\0' ? ": " : "", diag);
    goto out;
  }
  rc = orion_ccache_seal(bso);
  if (rc != 0)
    rc = write_error(err, dir, rc);

out:
  if (made && rc == 0) {
    *build_out = build;
    build = NULL;
  } else if (made) {
    remove_build_dir(build);
  }
  words_free(&argv);
  orion_free(build);
  orion_free(bsrc);
  orion_free(bso);
  orion_free(blog);
  orion_free(strip);
  return rc;
}

/* ------------------------------------------------------------------------
 * The API.
 * ---------------------------------------------------------------------- */

/* The folder for builds without the cache (ORION_CACHE_DIR=off, or a
 * cache folder that cannot be used): $TMPDIR, else /tmp. */
static const char *private_parent(void) {
  const char *t = getenv("TMPDIR");
  return t != NULL && t[0] == '/' ? t : "/tmp";
}

/* The cache folder to use (orion_free it), or NULL: the cache is off, or
 * the folder cannot be made (warned about once).  ORION_ENOMEM in *rc
 * when out of memory. */
static char *usable_dir(int *rc) {
  orion_error derr;
  int shared_tmp = 0;
  char *dir;
  *rc = 0;
  if (orion_ccache_off())
    return NULL;
  dir = cache_dir_path(&shared_tmp);
  if (dir == NULL) {
    *rc = ORION_ENOMEM;
    return NULL;
  }
  orion_error_clear(&derr);
  if (ensure_dir(dir, shared_tmp, &derr) != 0) {
    orion_ccache_warn_once(derr.msg);
    orion_free(dir);
    return NULL;
  }
  return dir;
}

/* The cached object at so_path, checked (its seal, then its ELF headers)
 * and loaded, or NULL: missing, damaged (then rebuilt by the caller, the
 * new object renamed over the bad one rather than the bad one unlinked
 * first, so that a process racing us can never unlink a good object just
 * renamed in by someone else) or not loadable. */
static void *load_cached(const char *so_path, const char *hex) {
  void *handle = NULL;
  if (access(so_path, F_OK) != 0)
    return NULL;
  if (orion_ccache_sealed(so_path) && elf_whole(so_path))
    handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    dlerror();
    orion_log_detail("compiled body %s: the cached object %s is damaged; "
                     "building it again",
                     hex, so_path);
    return NULL;
  }
  orion_ccache_touch(so_path); /* recently used: evicted last */
  orion_log_detail("compiled body %s: from the cache (%s)", hex, so_path);
  return handle;
}

/* Any thread; concurrent calls (threads or processes, one cache directory)
 * are safe: each builds in a private folder and the last rename wins, with
 * identical content.  The caller owns *out (orion_cobj_free). */
static int build_with(int cuda, const char *src, size_t len,
                      const char *mode_flags, double timeout_s,
                      orion_cobj **out, int *cached, orion_error *err) {
  config c;
  words mode = {0};
  char hex[33];
  char *dir = NULL, *so_path = NULL, *c_path = NULL, *build = NULL;
  char *bso = NULL, *bsrc = NULL, *path;
  void *handle = NULL;
  int rc = 0, from_cache = 0, stored = 0, no_folder = 0;
  uint64_t cap;
  double t0;
  orion_cobj *o;

  orion_assert(out != NULL);
  orion_assert(src != NULL || len == 0);
  *out = NULL;
  if (cached != NULL)
    *cached = 0;
  if (!(timeout_s > 0)) /* 0, negative or NaN */
    timeout_s = DEFAULT_TIMEOUT_S;
  if (src == NULL)
    src = "";
  if (config_load(&c, cuda) != 0)
    return orion_error_set(err, ORION_ECOMPILE, "out of memory");
  if (words_split(&mode, mode_flags) != 0) {
    rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
    goto out;
  }
  if (orion_ccache_cap(&cap) != 0) {
    rc = orion_error_set(err, ORION_ECOMPILE,
                         "ORION_CACHE_MAX '%s' is not a size (a number of "
                         "bytes, or one followed by K, M or G)",
                         getenv("ORION_CACHE_MAX"));
    goto out;
  }
  cache_key(&c, &mode, src, len, hex);
  dir = usable_dir(&rc);
  if (rc != 0) {
    rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
    goto out;
  }
  if (dir != NULL) {
    so_path = orion_asprintf("%s/%s.so", dir, hex);
    c_path = orion_asprintf("%s/%s.%s", dir, hex, cuda ? "cu" : "c");
    if (so_path == NULL || c_path == NULL) {
      rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
      goto out;
    }
    handle = load_cached(so_path, hex);
    from_cache = handle != NULL;
  }
  if (handle == NULL) {
    t0 = now_s();
    rc = compile(&c, &mode, dir != NULL ? dir : private_parent(), hex, src,
                 len, timeout_s, &build, &no_folder, err);
    if (rc != 0 && no_folder != 0 && dir != NULL) {
      /* A cache folder we may read but not write: build beside it. */
      orion_ccache_warn_once(err->msg);
      orion_error_clear(err);
      rc = compile(&c, &mode, private_parent(), hex, src, len, timeout_s,
                   &build, &no_folder, err);
      orion_free(dir);
      dir = NULL;
    }
    if (rc != 0)
      goto out;
    bso = orion_asprintf("%s/%s.so", build, hex);
    bsrc = orion_asprintf("%s/%s.%s", build, hex, cuda ? "cu" : "c");
    if (bso == NULL || bsrc == NULL) {
      rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
      goto out;
    }
    /* Loaded from the build folder, then renamed into the cache: the
     * mapping follows the file, and an entry evicted by another process
     * as soon as it lands cannot fail this load (nor is an object that
     * does not load ever kept). */
    handle = dlopen(bso, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      const char *e = dlerror();
      rc = orion_error_set(err, ORION_ECOMPILE,
                           "cannot load the compiled object: %s",
                           e != NULL ? e : bso);
      goto out;
    }
    /* The source first, so that an object in the cache has its source. */
    if (dir != NULL) {
      int src_in = rename(bsrc, c_path) == 0;
      if (src_in && rename(bso, so_path) == 0) {
        stored = 1;
      } else {
        int e = errno;
        orion_error werr;
        if (src_in) /* no source without its object: eviction lists .so */
          unlink(c_path);
        orion_error_clear(&werr);
        write_error(&werr, dir, e);
        orion_ccache_warn_once(werr.msg);
      }
    }
    orion_log_detail("compiled body %s: built by '%s' in %.3f s (%s)", hex,
                     c.cc.v[0], now_s() - t0,
                     stored ? so_path : "not cached");
    if (stored)
      orion_ccache_evict(dir, cap, hex);
  }

  path = orion_strdup(stored || from_cache ? so_path : bso);
  o = orion_malloc(sizeof *o);
  if (o == NULL || path == NULL) {
    dlclose(handle);
    orion_free(o);
    orion_free(path);
    rc = orion_error_set(err, ORION_ECOMPILE, "out of memory");
    goto out;
  }
  o->handle = handle;
  o->path = path;
  *out = o;
  if (cached != NULL)
    *cached = from_cache;

out:
  if (build != NULL) /* the object stays mapped */
    remove_build_dir(build);
  config_free(&c);
  words_free(&mode);
  orion_free(dir);
  orion_free(so_path);
  orion_free(c_path);
  orion_free(build);
  orion_free(bso);
  orion_free(bsrc);
  return rc;
}

/* The driver's thread, before it starts processes or threads (setenv). */
void orion_ccomp_check_cache(int for_children) {
  int rc;
  char *dir = usable_dir(&rc);
  if (dir == NULL && rc == 0 && !orion_ccache_off() && for_children)
    setenv("ORION_CACHE_DIR", "off", 1);
  orion_free(dir);
}

int orion_cobj_build(const char *src, size_t len, const char *mode_flags,
                     double timeout_s, orion_cobj **out, int *cached,
                     orion_error *err) {
  return build_with(0, src, len, mode_flags, timeout_s, out, cached, err);
}

int orion_cobj_build_cuda(const char *src, size_t len, const char *mode_flags,
                          double timeout_s, orion_cobj **out, int *cached,
                          orion_error *err) {
  return build_with(1, src, len, mode_flags, timeout_s, out, cached, err);
}

/* Any thread.  The address stays valid until orion_cobj_free(o). */
void *orion_cobj_sym(orion_cobj *o, const char *name) {
  if (o == NULL || name == NULL)
    return NULL;
  return dlsym(o->handle, name);
}

/* Owned by o. */
const char *orion_cobj_path(const orion_cobj *o) { return o->path; }

/* Any thread; nothing from the object may be used afterwards. */
void orion_cobj_free(orion_cobj *o) {
  if (o == NULL)
    return;
  dlclose(o->handle);
  orion_free(o->path);
  orion_free(o);
}

static void describe(int cuda, char *out, size_t n) {
  config c;
  size_t pos = 0;
  if (out == NULL || n == 0)
    return;
  out[0] = '\0';
  if (config_load(&c, cuda) != 0) {
    append_str(out, n, &pos, cuda ? DEFAULT_NVCC : DEFAULT_CC);
    return;
  }
  join_words(&c.cc, out, n, &pos);
  join_words(&c.flags, out, n, &pos);
  config_free(&c);
}

/* Any thread; reads the environment as orion_cobj_build does. */
void orion_ccomp_describe(char *out, size_t n) { describe(0, out, n); }

/* Any thread; as orion_cobj_build_cuda does. */
void orion_ccomp_describe_cuda(char *out, size_t n) { describe(1, out, n); }
