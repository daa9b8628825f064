#include "util/ccache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/hash.h"
#include "util/log.h"

#define SEAL_MAGIC "ORIONCK1"
#define SEAL_LEN 24
#define DEFAULT_CAP ((uint64_t)512 << 20)
/* How much of /proc/cpuinfo is read: the first processor's lines. */
#define CPUINFO_MAX 16384
/* A key: 32 hex digits. */
#define KEY_LEN 32

int orion_ccache_off(void) {
  const char *e = getenv("ORION_CACHE_DIR");
  return e != NULL && strcmp(e, "off") == 0;
}

/* ------------------------------------------------------------------------
 * The compiler's identity.
 * ---------------------------------------------------------------------- */

/* The file cmd names (looked up in PATH when it has no slash, as
 * posix_spawnp does), resolved through symlinks, in out; 0 when none. */
static int resolve(const char *cmd, char out[PATH_MAX]) {
  const char *path = getenv("PATH"), *p, *end;
  if (strchr(cmd, '/') != NULL)
    return realpath(cmd, out) != NULL;
  if (path == NULL)
    path = "/bin:/usr/bin";
  for (p = path;; p = end + 1) {
    char full[PATH_MAX];
    struct stat st;
    end = strchr(p, ':');
    if (end == NULL)
      end = p + strlen(p);
    if (snprintf(full, sizeof full, "%.*s%s%s", (int)(end - p), p,
                 end == p ? "" : "/", cmd) < (int)sizeof full &&
        access(full, X_OK) == 0 && stat(full, &st) == 0 &&
        S_ISREG(st.st_mode) && realpath(full, out) != NULL)
      return 1;
    if (*end == '\0')
      return 0;
  }
}

void orion_ccache_compiler_id(const char *cmd, char *out, size_t n) {
  char real[PATH_MAX];
  struct stat st;
  if (n == 0)
    return;
  if (!resolve(cmd, real) || stat(real, &st) != 0) {
    snprintf(out, n, "%s", cmd);
    return;
  }
  snprintf(out, n, "%s %lld %lld.%09ld", real, (long long)st.st_size,
           (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
}

/* ------------------------------------------------------------------------
 * The target.
 * ---------------------------------------------------------------------- */

static pthread_once_t target_once = PTHREAD_ONCE_INIT;
static char target_plain[80], target_native[120];

/* Whether the /proc/cpuinfo line s (NUL-terminated) names the CPU (x86:
 * vendor, family, model, stepping, flags; ARM: implementer, architecture,
 * variant, part, revision, features; RISC-V: isa, uarch) rather than its
 * state (clock, cache, core numbering). */
static int cpu_line(const char *s) {
  static const char *const keys[] = {
      "vendor_id",    "cpu family",      "model",       "model name",
      "stepping",     "flags",           "Features",    "CPU implementer",
      "CPU architecture", "CPU variant", "CPU part",    "CPU revision",
      "isa",          "uarch",           NULL};
  const char *colon = strchr(s, ':');
  size_t len;
  int i;
  if (colon == NULL)
    return 0;
  len = (size_t)(colon - s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  for (i = 0; keys[i] != NULL; i++)
    if (strlen(keys[i]) == len && strncmp(s, keys[i], len) == 0)
      return 1;
  return 0;
}

static void target_init(void) {
  struct utsname u;
  char *buf;
  uint64_t h = ORION_HASH_INIT;
  const char *machine = uname(&u) == 0 ? u.machine : "unknown";
  int fd;
  snprintf(target_plain, sizeof target_plain, "%s", machine);
  buf = orion_malloc(CPUINFO_MAX + 1);
  fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (buf != NULL && fd >= 0) {
    size_t got = 0;
    char *line, *next;
    while (got < CPUINFO_MAX) {
      ssize_t r = read(fd, buf + got, CPUINFO_MAX - got);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    buf[got] = '\0';
    /* The first processor's block: up to the first blank line. */
    for (line = buf; line != NULL && *line != '\n' && *line != '\0';
         line = next) {
      next = strchr(line, '\n');
      if (next != NULL)
        *next++ = '\0';
      if (cpu_line(line))
        h = orion_hash_bytes(h, line, strlen(line) + 1);
    }
  }
  if (fd >= 0)
    close(fd);
  orion_free(buf);
  snprintf(target_native, sizeof target_native, "%s cpu %016llx", machine,
           (unsigned long long)orion_hash_mix(h));
}

const char *orion_ccache_target(int native) {
  pthread_once(&target_once, target_init);
  return native ? target_native : target_plain;
}

/* ------------------------------------------------------------------------
 * Seals.
 * ---------------------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* The hash of the first n bytes of fd (read from offset 0); 0 with *ok
 * cleared on a read error or a short file. */
static uint64_t hash_fd(int fd, uint64_t n, int *ok) {
  unsigned char buf[65536];
  uint64_t h = ORION_HASH_INIT, off = 0;
  *ok = 1;
  while (off < n) {
    size_t want = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf;
    ssize_t r = pread(fd, buf, want, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      *ok = 0;
      return 0;
    }
    h = orion_hash_bytes(h, buf, (size_t)r);
    off += (uint64_t)r;
  }
  return orion_hash_mix(orion_hash_u64(h, n));
}

int orion_ccache_seal(const char *path) {
  unsigned char seal[SEAL_LEN];
  struct stat st;
  int fd = open(path, O_RDWR | O_CLOEXEC), ok, e = 0;
  uint64_t h;
  size_t done = 0;
  if (fd < 0)
    return errno;
  if (fstat(fd, &st) != 0) {
    e = errno;
    close(fd);
    return e;
  }
  h = hash_fd(fd, (uint64_t)st.st_size, &ok);
  if (!ok) {
    close(fd);
    return EIO;
  }
  memcpy(seal, SEAL_MAGIC, 8);
  put_le(seal + 8, (uint64_t)st.st_size);
  put_le(seal + 16, h);
  while (done < SEAL_LEN) {
    ssize_t w = pwrite(fd, seal + done, SEAL_LEN - done,
                       (off_t)((uint64_t)st.st_size + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      e = w < 0 ? errno : EIO;
      break;
    }
    done += (size_t)w;
  }
  if (close(fd) != 0 && e == 0)
    e = errno;
  return e;
}

int orion_ccache_sealed(const char *path) {
  unsigned char seal[SEAL_LEN];
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
  uint64_t n;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > SEAL_LEN &&
      pread(fd, seal, SEAL_LEN, st.st_size - SEAL_LEN) == SEAL_LEN &&
      memcmp(seal, SEAL_MAGIC, 8) == 0 &&
      (n = get_le(seal + 8)) == (uint64_t)st.st_size - SEAL_LEN) {
    int read_ok;
    uint64_t h = hash_fd(fd, n, &read_ok);
    ok = read_ok && h == get_le(seal + 16);
  }
  close(fd);
  return ok;
}

void orion_ccache_touch(const char *path) {
  utimensat(AT_FDCWD, path, NULL, 0); /* a read-only folder: left as is */
}

/* ------------------------------------------------------------------------
 * The size cap.
 * ---------------------------------------------------------------------- */

int orion_ccache_cap(uint64_t *cap) {
  const char *e = getenv("ORION_CACHE_MAX");
  char *end;
  unsigned long long v;
  int shift = 0;
  *cap = DEFAULT_CAP;
  if (e == NULL || e[0] == '\0')
    return 0;
  if (e[0] < '0' || e[0] > '9')
    return -1;
  errno = 0;
  v = strtoull(e, &end, 10);
  if (errno != 0)
    return -1;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift > 0)
    end++;
  if (*end != '\0' || (shift > 0 && v > (UINT64_MAX >> shift)))
    return -1;
  *cap = (uint64_t)v << shift;
  return 0;
}

typedef struct entry {
  char key[KEY_LEN + 1];
  uint64_t bytes;
  struct timespec used;
} entry;

static int older(const void *x, const void *y) {
  const entry *a = x, *b = y;
  if (a->used.tv_sec != b->used.tv_sec)
    return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
  if (a->used.tv_nsec != b->used.tv_nsec)
    return a->used.tv_nsec < b->used.tv_nsec ? -1 : 1;
  return strcmp(a->key, b->key);
}

/* Whether name is KEY.so; the key goes to key. */
static int entry_name(const char *name, char key[KEY_LEN + 1]) {
  int i;
  if (strlen(name) != KEY_LEN + 3 || strcmp(name + KEY_LEN, ".so") != 0)
    return 0;
  for (i = 0; i < KEY_LEN; i++) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return 0;
  }
  memcpy(key, name, KEY_LEN);
  key[KEY_LEN] = '\0';
  return 1;
}

/* Adds the size of dir/KEY.EXT, if there, to *bytes. */
static void add_size(int dfd, const char *key, const char *ext,
                     uint64_t *bytes) {
  char name[KEY_LEN + 8];
  struct stat st;
  snprintf(name, sizeof name, "%s.%s", key, ext);
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
    *bytes += (uint64_t)st.st_size;
}

static void remove_entry(int dfd, const char *key) {
  static const char *const ext[] = {"so", "c", "cu"};
  char name[KEY_LEN + 8];
  size_t i;
  /* The object first: an entry without it is never used. */
  for (i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    snprintf(name, sizeof name, "%s.%s", key, ext[i]);
    unlinkat(dfd, name, 0); /* gone already: another process evicted it */
  }
}

/* Any process: entries removed by another at the same time are skipped;
 * one loaded by another stays usable (its mapping outlives the name). */
void orion_ccache_evict(const char *dir, uint64_t cap, const char *keep) {
  DIR *d;
  struct dirent *de;
  entry *v = NULL;
  size_t n = 0, max = 0, i;
  uint64_t total = 0;
  if (cap == 0 || (d = opendir(dir)) == NULL)
    return;
  while ((de = readdir(d)) != NULL) {
    entry e;
    struct stat st;
    if (!entry_name(de->d_name, e.key) ||
        fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    e.bytes = (uint64_t)st.st_size;
    e.used = st.st_mtim;
    add_size(dirfd(d), e.key, "c", &e.bytes);
    add_size(dirfd(d), e.key, "cu", &e.bytes);
    if (n == max) {
      size_t m = max == 0 ? 64 : max * 2;
      entry *w = orion_realloc(v, m * sizeof *w);
      if (w == NULL)
        break; /* out of memory: evict among those seen */
      v = w;
      max = m;
    }
    v[n++] = e;
    total += e.bytes;
  }
  if (total > cap && n > 0) {
    qsort(v, n, sizeof *v, older);
    for (i = 0; i < n && total > cap; i++) {
      if (keep != NULL && strcmp(v[i].key, keep) == 0)
        continue;
      remove_entry(dirfd(d), v[i].key);
      total -= v[i].bytes;
    }
  }
  closedir(d);
  orion_free(v);
}

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static int warned;

void orion_ccache_warn_once(const char *why) {
  int first;
  pthread_mutex_lock(&warn_lock);
  first = !warned;
  warned = 1;
  pthread_mutex_unlock(&warn_lock);
  if (first)
    orion_log_warn("%s; bodies are compiled without a cache (set "
                   "ORION_CACHE_DIR to a writable folder, or to off)",
                   why);
}
