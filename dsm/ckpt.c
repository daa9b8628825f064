/* Checkpoint directories on disk (see ckpt.h): layout, atomic writing,
 * the manifest, verification and pruning. */
#include "dsm/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "dsm/arrayfile.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/log.h"

#define MANIFEST "manifest"
#define STATE_FILE "state.lua"
#define MAGIC_LINE "orion-checkpoint 2\n" /* 2: with parts */
#define MAGIC_LINE1 "orion-checkpoint 1\n"
#define WRITERS 8 /* threads writing array files at once */
#define LOCK_FILE ".orion-lock"
#define LOCK_ENV "ORION_CKPT_LOCK_FD"

/* ---- small file helpers ------------------------------------------------ */

static int fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
  if (fd < 0)
    return -errno;
  rc = fsync(fd) != 0 && errno != EINVAL ? -errno : 0;
  close(fd);
  return rc;
}

/* Writes len bytes to path through path.tmp, fsync and rename. */
static int write_file(const char *path, const void *p, size_t len,
                      orion_error *err) {
  char tmp[4096];
  int fd, rc = 0;
  const char *s = p;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return orion_error_set(err, -errno, "cannot create %s: %s", tmp,
                           strerror(errno));
  while (len > 0 && rc == 0) {
    ssize_t w = write(fd, s, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      rc = orion_error_set(err, -errno, "cannot write %s: %s", tmp,
                           strerror(errno));
    else {
      s += w;
      len -= (size_t)w;
    }
  }
  if (rc == 0 && fsync(fd) != 0)
    rc = orion_error_set(err, -errno, "cannot fsync %s: %s", tmp,
                         strerror(errno));
  close(fd);
  if (rc == 0 && rename(tmp, path) != 0)
    rc = orion_error_set(err, -errno, "cannot rename %s: %s", tmp,
                         strerror(errno));
  if (rc != 0)
    unlink(tmp);
  return rc;
}

/* ---- entries that are never followed ---------------------------------- */

/* Names dir/name, a checkpoint entry that is not a plain directory (a
 * symbolic link, a file), as one that is left alone: reading, pruning and
 * renaming never follow such an entry, so a link planted in the folder
 * cannot make a checkpoint read or empty another folder.  (lua/checkpoint.c
 * tells these messages from a failed checkpoint's by their last words.) */
static void not_plain(const char *dir, const char *name,
                      orion_ckpt_warn_fn warn, void *ud) {
  char msg[4400];
  snprintf(msg, sizeof msg, "%s/%s: not a plain directory (a symbolic link "
                            "or a file); it is left alone",
           dir, name);
  if (warn != NULL)
    warn(ud, msg);
}

/* warn for prune: straight to the log. */
static void log_warn(void *ud, const char *msg) {
  (void)ud;
  orion_log_warn("checkpoint %s", msg);
}

/* Removes dir's entry `name` (dfd: dir, opened), a folder, and the files
 * in it (one level), without following a symbolic link: the folder is
 * opened with O_NOFOLLOW and its files unlinked relative to that handle,
 * and the folder itself removed with unlinkat, which never follows one
 * either.  Returns 0 when it is gone (or was not there), -1 when it is
 * not a plain directory (a warning names it; nothing is touched) or
 * cannot be removed. */
static int remove_at(int dfd, const char *dir, const char *name) {
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d;
  struct dirent *e;
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ELOOP || errno == ENOTDIR)
      not_plain(dir, name, log_warn, NULL);
    return -1;
  }
  if ((d = fdopendir(fd)) == NULL) {
    close(fd);
    return -1;
  }
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlinkat(fd, e->d_name, 0);
  closedir(d); /* closes fd */
  return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Whether dfd's entry name is a plain directory, not following a link. */
static int plain_dir_at(int dfd, const char *name) {
  struct stat st;
  return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode);
}

/* The CRC-32 and size of path's bytes but the last `skip`, and those last
 * bytes' little-endian u32 (for an array file: its trailer). */
static int file_crc(const char *path, size_t skip, uint64_t *size,
                    uint32_t *crc, uint32_t *trailer) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  unsigned char buf[1 << 16], t[4];
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t left;
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < skip) {
    close(fd);
    return ORION_ETRUNC;
  }
  *size = (uint64_t)st.st_size;
  left = *size - skip;
  while (left > 0) {
    size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
    ssize_t r = read(fd, buf, want);
    if (r <= 0) {
      close(fd);
      return ORION_ETRUNC;
    }
    c = crc32(c, buf, (uInt)r);
    left -= (uint64_t)r;
  }
  if (skip == 4) {
    if (read(fd, t, 4) != 4) {
      close(fd);
      return ORION_ETRUNC;
    }
    *trailer = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
               (uint32_t)t[3] << 24;
  }
  close(fd);
  *crc = (uint32_t)c;
  return 0;
}

/* ---- writing ----------------------------------------------------------- */

/* A 64-bit hash of a's type, shape, keys and values, 8 bytes at a time
 * (the arrays of a checkpoint are hashed in its writer threads). */
static uint64_t mix_word(uint64_t h, uint64_t w) {
  h ^= w;
  h *= 0x9e3779b97f4a7c15ULL;
  return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t w;
  size_t i;
  for (i = 0; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = mix_word(h, w);
  }
  w = 0;
  memcpy(&w, s + i, n - i);
  return mix_word(h, w ^ ((uint64_t)n << 56));
}

static uint64_t array_hash(const orion_array *a) {
  uint64_t h = 0x6f72696f6e636b70ULL; /* "orionckp" */
  size_t vs = orion_type_size(a->type);
  h = mix_word(h, (uint64_t)a->type | (uint64_t)a->sparse << 8 |
                      (uint64_t)a->ndims << 16);
  h = hash_bytes(h, a->dims, sizeof a->dims[0] * (size_t)a->ndims);
  h = mix_word(h, (uint64_t)a->nnz);
  if (a->sparse && a->nnz > 0)
    h = hash_bytes(h, a->keys,
                   (size_t)a->nnz * (size_t)a->ndims * sizeof *a->keys);
  if (a->nnz > 0)
    h = hash_bytes(h, a->values, (size_t)a->nnz * vs);
  h = orion_hash_mix(h);
  return h != 0 ? h : 1; /* 0: an array written in parts (never linked) */
}

uint64_t orion_ckpt_array_hash(const orion_array *a) { return array_hash(a); }

void orion_ckpt_part_name(char *out, size_t n, int64_t array, int64_t row) {
  snprintf(out, n, "a%" PRId64 ".r%" PRId64 ".oarr", array, row);
}

int orion_ckpt_file_trailer(const char *path, uint64_t *size, uint32_t *crc) {
  struct stat st;
  unsigned char t[4];
  int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) != 0)
    rc = -errno;
  else if (st.st_size < 4 || pread(fd, t, 4, st.st_size - 4) != 4)
    rc = ORION_ETRUNC;
  close(fd);
  if (rc != 0)
    return rc;
  *size = (uint64_t)st.st_size;
  *crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
         (uint32_t)t[3] << 24;
  return 0;
}

int orion_ckpt_write_part(const char *folder, const orion_array *a,
                          int64_t array, int64_t first, int64_t count,
                          char *file, size_t fn, uint64_t *size,
                          uint32_t *crc, orion_error *err) {
  orion_array v;
  int64_t re = a->ndims > 0 && a->dims[0] > 0 ? a->nnz / a->dims[0] : 0;
  char path[4096];
  int rc;
  if (a->sparse || re <= 0 || first < 0 || count <= 0 || first % re != 0 ||
      count % re != 0 || first > a->nnz || count > a->nnz - first)
    return orion_error_set(err, ORION_EINVAL,
                           "array %" PRId64 ": elements %" PRId64 "..%" PRId64
                           " are not whole rows of it",
                           array, first, first + count - 1);
  orion_ckpt_part_name(file, fn, array, first / re);
  snprintf(path, sizeof path, "%s/%s", folder, file);
  v = *a; /* a view of the rows: same type and trailing dims */
  v.refs = 1;
  v.dims[0] = count / re;
  v.nnz = count;
  v.cap = count;
  v.values = (char *)a->values + (size_t)first * orion_type_size(a->type);
  if ((rc = orion_array_save(&v, path, err)) != 0)
    return rc;
  if ((rc = orion_ckpt_file_trailer(path, size, crc)) != 0)
    return orion_error_set(err, rc, "cannot read back %s: %s", path,
                           orion_strerror(rc));
  return 0;
}

typedef struct writer {
  const char *dir;
  orion_ckpt *c;
  int first, step; /* arrays first, first + step, ... */
  int rc;
  orion_error err;
} writer;

/* The driver's parts of arrays written in parts. */
static void write_driver_part(writer *w, orion_ckpt_part *p) {
  if (p->writer < 0)
    w->rc = orion_ckpt_write_part(w->dir, p->a, p->array, p->first, p->count,
                                  p->file, sizeof p->file, &p->size, &p->crc,
                                  &w->err);
}

static void *write_arrays(void *arg) {
  writer *w = arg;
  int i, rc;
  for (i = w->first; i < w->c->narrays + w->c->nparts && w->rc == 0;
       i += w->step) {
    orion_ckpt_array *e;
    char path[4096];
    if (i >= w->c->narrays) {
      write_driver_part(w, &w->c->parts[i - w->c->narrays]);
      continue;
    }
    e = &w->c->arrays[i];
    snprintf(e->file, sizeof e->file, "a%" PRId64 ".oarr", e->id);
    snprintf(path, sizeof path, "%s/%s", w->dir, e->file);
    e->hash = e->size = 0;
    e->crc = 0;
    e->linked = 0;
    if (e->nparts == 0) {
      e->hash = array_hash(e->a);
      /* Unchanged since an earlier checkpoint: the same bytes, linked. */
      e->linked = e->prev != NULL && e->prev_hash != 0 &&
                  e->hash == e->prev_hash && link(e->prev, path) == 0;
      if (!e->linked)
        w->rc = orion_array_save(e->a, path, &w->err);
      if (w->rc != 0)
        break;
      /* The manifest keeps the size and the CRC-32 trailer the file ends
       * with; reading checks both against the whole file. */
      if ((rc = orion_ckpt_file_trailer(path, &e->size, &e->crc)) != 0) {
        w->rc = orion_error_set(&w->err, rc, "cannot read back %s: %s", path,
                                orion_strerror(rc));
        break;
      }
    }
    e->type = (int)e->a->type;
    e->sparse = e->a->sparse;
    e->ndims = e->a->ndims;
    memcpy(e->dims, e->a->dims, sizeof e->dims);
    e->nnz = e->a->nnz;
  }
  return NULL;
}

/* The manifest's text, its own CRC-32 line last. */
static int manifest_text(const orion_ckpt *c, uint64_t state_size,
                         uint32_t state_crc, orion_buf *b) {
  char line[512];
  int i, d;
  uLong crc;
  orion_buf_append(b, MAGIC_LINE, strlen(MAGIC_LINE));
  snprintf(line, sizeof line,
           "step %" PRId64 "\nscript %016" PRIx64 "\nwords ", c->step,
           c->script_hash);
  orion_buf_append(b, line, strlen(line));
  orion_buf_append(b, c->words, strlen(c->words));
  snprintf(line, sizeof line, "\nfile %s %" PRIu64 " %08" PRIx32 "\n",
           STATE_FILE, state_size, state_crc);
  orion_buf_append(b, line, strlen(line));
  for (i = 0; i < c->narrays; i++) {
    const orion_ckpt_array *e = &c->arrays[i];
    int w = snprintf(line, sizeof line, "array %" PRId64 " %s %s %s %d",
                     e->id, e->name[0] ? e->name : "-",
                     orion_type_name((orion_type)e->type),
                     e->sparse ? "sparse" : "dense", e->ndims);
    for (d = 0; d < e->ndims; d++)
      w += snprintf(line + w, sizeof line - (size_t)w, " %" PRId64,
                    e->dims[d]);
    snprintf(line + w, sizeof line - (size_t)w,
             " %" PRId64 " %s %" PRIu64 " %08" PRIx32 "\n", e->nnz, e->file,
             e->size, e->crc);
    orion_buf_append(b, line, strlen(line));
  }
  /* part ARRAY FILE FIRST COUNT WRITER HOST SIZE CRC */
  for (i = 0; i < c->nparts; i++) {
    const orion_ckpt_part *p = &c->parts[i];
    char who[32];
    if (p->writer < 0)
      snprintf(who, sizeof who, "driver");
    else
      snprintf(who, sizeof who, "executor-%d", p->writer);
    snprintf(line, sizeof line,
             "part %" PRId64 " %s %" PRId64 " %" PRId64 " %s %s %" PRIu64
             " %08" PRIx32 "\n",
             p->array, p->file, p->first, p->count, who,
             p->host[0] ? p->host : "-", p->size, p->crc);
    orion_buf_append(b, line, strlen(line));
  }
  if (c->meta_len > 0)
    orion_buf_append(b, c->meta, c->meta_len);
  crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)b->data, (uInt)b->len);
  snprintf(line, sizeof line, "crc %08" PRIx32 "\n", (uint32_t)crc);
  orion_buf_append(b, line, strlen(line));
  return b->oom ? ORION_ENOMEM : 0;
}

static int is_ckpt_name(const char *name, int64_t *step) {
  char *end;
  long long v;
  if (strncmp(name, "ckpt-", 5) != 0)
    return 0;
  errno = 0;
  v = strtoll(name + 5, &end, 10);
  if (errno != 0 || *end != '\0' || end == name + 5 || v < 0)
    return 0;
  *step = v;
  return 1;
}

static int cmp_desc(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? 1 : a > b ? -1 : 0;
}

/* The steps of dir's checkpoint folders, newest first (orion_malloc'd).
 * An entry named like one that is not a plain directory is not listed;
 * warn (NULL: none) names it. */
static int list_steps(const char *dir, int64_t **out, orion_ckpt_warn_fn warn,
                      void *ud) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0, cap = 0;
  int64_t step, *v = NULL;
  *out = NULL;
  if (d == NULL)
    return errno == ENOENT ? 0 : -errno;
  while ((e = readdir(d)) != NULL) {
    if (!is_ckpt_name(e->d_name, &step))
      continue;
    if (!plain_dir_at(dirfd(d), e->d_name)) {
      not_plain(dir, e->d_name, warn, ud);
      continue;
    }
    if (n == cap) {
      int64_t *nv = orion_realloc(v, (size_t)(cap = cap ? 2 * cap : 16) *
                                         sizeof *v);
      if (nv == NULL) {
        orion_free(v);
        closedir(d);
        return ORION_ENOMEM;
      }
      v = nv;
    }
    v[n++] = step;
  }
  closedir(d);
  if (n > 1)
    qsort(v, (size_t)n, sizeof *v, cmp_desc);
  *out = v;
  return n;
}

int orion_ckpt_count(const char *dir, int64_t *newest) {
  int64_t *v;
  int n = list_steps(dir, &v, NULL, NULL);
  *newest = n > 0 ? v[0] : -1;
  orion_free(v);
  return n > 0 ? n : 0;
}

/* Removes unfinished folders (.ckpt-*.tmp) and the complete checkpoints
 * beyond the newest `keep` that have a manifest (dfd: dir, opened). */
static void prune(int dfd, const char *dir, int keep) {
  DIR *d;
  struct dirent *e;
  char name[64], gone[64];
  int64_t *v;
  int i, n, kept = 0, fd = dup(dfd);
  if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
    while ((e = readdir(d)) != NULL)
      if (strncmp(e->d_name, ".ckpt-", 6) == 0)
        remove_at(dfd, dir, e->d_name);
    closedir(d);
  } else if (fd >= 0)
    close(fd);
  n = list_steps(dir, &v, log_warn, NULL);
  for (i = 0; i < n; i++) {
    struct stat st;
    snprintf(name, sizeof name, "ckpt-%010" PRId64 "/" MANIFEST, v[i]);
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && kept < keep) {
      kept++;
      continue;
    }
    if (kept >= keep) {
      /* Renamed out of the way first, in one step: a crash or Ctrl-C in
       * the middle of the removal leaves a .ckpt-* folder (removed at the
       * next checkpoint), never a ckpt-* folder missing its files.  The
       * entry is checked again just before: list_steps saw a plain
       * directory, but renameat would move a link put there since. */
      snprintf(name, sizeof name, "ckpt-%010" PRId64, v[i]);
      snprintf(gone, sizeof gone, ".ckpt-%010" PRId64 ".old", v[i]);
      if (!plain_dir_at(dfd, name))
        not_plain(dir, name, log_warn, NULL);
      else
        remove_at(dfd, dir, renameat(dfd, name, dfd, gone) == 0 ? gone : name);
    }
  }
  orion_free(v);
}

int orion_ckpt_write(const char *dir, orion_ckpt *c, int keep, char *path,
                     size_t n, uint64_t *bytes, orion_error *err) {
  char tmp[4096], fin[4096], p[4352], abs[PATH_MAX];
  char tname[64], fname[64], oname[64];
  struct stat st;
  pthread_t th[WRITERS];
  writer w[WRITERS];
  int i, k, nw, rc = 0, items = c->narrays + c->nparts;
  uint64_t ssize = 0;
  uint32_t scrc, trailer;
  orion_buf b;
  int dfd;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return orion_error_set(err, -errno, "cannot create %s: %s", dir,
                           strerror(errno));
  /* Every entry is reached through this handle, never by following a
   * link inside dir (dir itself may be one: the user named it). */
  if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return orion_error_set(err, -errno, "cannot open %s: %s", dir,
                           strerror(errno));
  snprintf(tname, sizeof tname, ".ckpt-%010" PRId64 ".tmp", c->step);
  snprintf(fname, sizeof fname, "ckpt-%010" PRId64, c->step);
  snprintf(oname, sizeof oname, ".ckpt-%010" PRId64 ".old", c->step);
  snprintf(tmp, sizeof tmp, "%s/%s", dir, tname);
  snprintf(fin, sizeof fin, "%s/%s", dir, fname);
  if (remove_at(dfd, dir, tname) != 0)
    rc = orion_error_set(err, -ENOTDIR, "cannot create %s: %s", tmp,
                         plain_dir_at(dfd, tname)
                             ? "an unfinished folder of that name cannot be "
                               "removed"
                             : "an entry of that name that is not a plain "
                               "directory (a symbolic link or a file) is in "
                               "the way");
  else if (mkdirat(dfd, tname, 0755) != 0)
    rc = orion_error_set(err, -errno, "cannot create %s: %s", tmp,
                         strerror(errno));
  if (rc != 0) {
    close(dfd);
    return rc;
  }
  /* The executors' parts, by the executors (the caller's start hook),
   * while the driver writes the arrays and its parts in parallel. */
  if (c->hooks.start != NULL) {
    if (realpath(tmp, abs) == NULL)
      rc = orion_error_set(err, -errno, "cannot resolve %s: %s", tmp,
                           strerror(errno));
    else
      rc = c->hooks.start(c->hooks.ud, abs, err);
    if (rc != 0) {
      remove_at(dfd, dir, tname);
      close(dfd);
      return rc;
    }
  }
  nw = items < WRITERS ? items : WRITERS;
  for (i = 0; i < nw; i++) {
    w[i].dir = tmp;
    w[i].c = c;
    w[i].first = i;
    w[i].step = nw;
    w[i].rc = 0;
    orion_error_clear(&w[i].err);
    if (pthread_create(&th[i], NULL, write_arrays, &w[i]) != 0) {
      w[i].rc = orion_error_set(&w[i].err, ORION_ENOMEM,
                                "cannot start a writer thread");
      nw = i; /* the ones started are joined below */
      rc = w[i].rc;
      *err = w[i].err;
      break;
    }
  }
  for (i = 0; i < nw; i++) {
    pthread_join(th[i], NULL);
    if (w[i].rc != 0 && rc == 0) {
      rc = w[i].rc;
      *err = w[i].err;
    }
  }
  /* Then the executors' reports (every hook that started is collected,
   * even after a failure here, so that no reply is left in flight). */
  if (c->hooks.collect != NULL) {
    orion_error e2;
    int rc2;
    orion_error_clear(&e2);
    rc2 = c->hooks.collect(c->hooks.ud, tmp, &e2);
    if (rc == 0 && rc2 != 0) {
      rc = rc2;
      *err = e2;
    }
  }
  for (i = 0; rc == 0 && i < c->narrays; i++)
    for (k = 0; k < c->nparts && c->arrays[i].nparts > 0; k++)
      if (c->parts[k].array == c->arrays[i].id)
        c->arrays[i].size += c->parts[k].size;
  for (k = 0; rc == 0 && k < c->nparts; k++)
    if (c->parts[k].file[0] == '\0')
      rc = orion_error_set(err, ORION_EINVAL,
                           "part %d of array %" PRId64 " was not written", k,
                           c->parts[k].array);
  bytes[0] = bytes[1] = 0;
  for (i = 0; rc == 0 && i < c->narrays; i++) {
    bytes[0] += c->arrays[i].size;
    bytes[1] += c->arrays[i].linked ? 0 : c->arrays[i].size;
  }
  /* The state, then the manifest, last. */
  snprintf(p, sizeof p, "%s/" STATE_FILE, tmp);
  if (rc == 0)
    rc = write_file(p, c->state, c->state_len, err);
  if (rc == 0)
    rc = file_crc(p, 0, &ssize, &scrc, &trailer);
  orion_buf_init(&b);
  if (rc == 0 && (rc = manifest_text(c, ssize, scrc, &b)) != 0)
    orion_error_set(err, rc, "out of memory writing a checkpoint");
  snprintf(p, sizeof p, "%s/" MANIFEST, tmp);
  if (rc == 0)
    rc = write_file(p, b.data, b.len, err);
  bytes[0] += ssize + b.len;
  bytes[1] += ssize + b.len;
  orion_buf_free(&b);
  if (rc == 0 && (rc = fsync_path(tmp)) != 0)
    orion_error_set(err, rc, "cannot fsync %s: %s", tmp, strerror(-rc));
  if (rc == 0) {
    /* A checkpoint of the same step (a rerun after a restart) goes aside
     * first: rename cannot replace a folder that has files.  Only a plain
     * directory: a link of that name is left alone (were it moved aside,
     * emptying it would empty the folder it points to). */
    remove_at(dfd, dir, oname);
    if (fstatat(dfd, fname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISDIR(st.st_mode))
      rc = orion_error_set(err, -ENOTDIR,
                           "%s is not a plain directory (a symbolic link "
                           "or a file): it is left alone, and this "
                           "checkpoint cannot take its place",
                           fin);
    else if (renameat(dfd, fname, dfd, oname) != 0 && errno != ENOENT)
      rc = orion_error_set(err, -errno, "cannot move %s aside: %s", fin,
                           strerror(errno));
  }
  if (rc == 0 && renameat(dfd, tname, dfd, fname) != 0)
    rc = orion_error_set(err, -errno, "cannot rename %s to %s: %s", tmp, fin,
                         strerror(errno));
  if (rc == 0 && fsync(dfd) != 0 && errno != EINVAL)
    rc = orion_error_set(err, -errno, "cannot fsync %s: %s", dir,
                         strerror(errno));
  if (rc != 0) {
    remove_at(dfd, dir, tname);
    close(dfd);
    return rc;
  }
  remove_at(dfd, dir, oname);
  snprintf(path, n, "%s", fin);
  prune(dfd, dir, keep);
  close(dfd);
  return 0;
}

/* ---- the folder's lock ------------------------------------------------ */

/* The holder's line of the lock file at fd ("pid 812 on host node-a,
 * since 2026-12-07 14:20:11 UTC"; "" when empty), printable bytes only. */
static void lock_holder(int fd, char *out, size_t n) {
  ssize_t r = pread(fd, out, n - 1, 0), i;
  if (r < 0)
    r = 0;
  out[r] = '\0';
  for (i = 0; i < r; i++)
    if (out[i] == '\n') {
      out[i] = '\0';
      break;
    } else if ((unsigned char)out[i] < 32 || out[i] == 127)
      out[i] = '?';
}

int orion_ckpt_lock(const char *dir, int *out, orion_error *err) {
  char path[4096], who[300], host[256] = "?", when[64] = "?";
  const char *env = getenv(LOCK_ENV);
  struct stat a, b;
  struct tm tm;
  time_t now = time(NULL);
  int fd, w;
  *out = -1;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return orion_error_set(err, -errno, "--checkpoint-dir %s: cannot create "
                                        "it: %s",
                           dir, strerror(errno));
  snprintf(path, sizeof path, "%s/" LOCK_FILE, dir);
  /* A restart (drivers/recover.c) goes on with the open lock file of the
   * process it replaces: flock belongs to that open file, so taking it
   * again there succeeds, where a new open of the file would not. */
  if (env != NULL) {
    fd = atoi(env);
    unsetenv(LOCK_ENV);
    if (fd > 2 && fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
        flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      *out = fd;
      return 0;
    }
  }
  fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return orion_error_set(err, -errno, "--checkpoint-dir %s: cannot create "
                                        "its lock file %s: %s",
                           dir, path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    lock_holder(fd, who, sizeof who);
    close(fd);
    if (e != EWOULDBLOCK)
      return orion_error_set(err, -e, "--checkpoint-dir %s: cannot lock %s: "
                                      "%s",
                             dir, path, strerror(e));
    return orion_error_set(
        err, -e,
        "--checkpoint-dir %s is in use by another orion-driver (%s; its "
        "lock file is %s); two drivers on one checkpoint folder would "
        "resume from and remove each other's checkpoints: wait for that "
        "job to end, or give another --checkpoint-dir",
        dir, who[0] != '\0' ? who : "it has not said who it is yet", path);
  }
  /* Not held, yet not empty: the driver that wrote it was killed before
   * it could clear it (a clean exit empties it: orion_ckpt_unlock). */
  lock_holder(fd, who, sizeof who);
  if (who[0] != '\0')
    orion_log_warn("checkpoint folder %s: its lock was left by an "
                   "orion-driver that is no longer running (%s); this job "
                   "takes it over",
                   dir, who);
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  if (gmtime_r(&now, &tm) != NULL)
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  w = snprintf(who, sizeof who, "pid %ld on host %s, since %s\n",
               (long)getpid(), host, when);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, who, (size_t)w, 0) != w)
    orion_log_warn("checkpoint folder %s: cannot write who holds its lock "
                   "to %s: %s",
                   dir, path, strerror(errno));
  *out = fd;
  return 0;
}

void orion_ckpt_lock_pass(int fd) {
  char num[16];
  if (fd < 0)
    return;
  snprintf(num, sizeof num, "%d", fd);
  fcntl(fd, F_SETFD, 0);
  setenv(LOCK_ENV, num, 1);
}

void orion_ckpt_unlock(int fd) {
  if (fd < 0)
    return;
  if (ftruncate(fd, 0) != 0) {
    /* Left as it is: the next driver then takes it over with a warning. */
  }
  close(fd);
}

/* ---- reading ----------------------------------------------------------- */

void orion_ckpt_free(orion_ckpt *c) {
  orion_free(c->words);
  orion_free(c->state);
  orion_free(c->meta);
  orion_free(c->arrays);
  orion_free(c->parts);
  memset(c, 0, sizeof *c);
}

/* Reads a whole (small) file into *out, NUL-terminated. */
static int slurp(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *p;
  long sz;
  *out = NULL;
  if (f == NULL)
    return -errno;
  if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0 || (p = orion_malloc((size_t)sz + 1)) == NULL) {
    fclose(f);
    return -EIO;
  }
  if (fread(p, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f);
    orion_free(p);
    return ORION_ETRUNC;
  }
  fclose(f);
  p[sz] = '\0';
  *out = p;
  *len = (size_t)sz;
  return 0;
}

static char *dup_n(const char *s, size_t n) {
  char *p = orion_malloc(n + 1);
  if (p != NULL) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Parses one "array ..." line into e; 0 or -1. */
static int parse_array(const char *l, orion_ckpt_array *e) {
  char name[ORION_CKPT_NAME_MAX + 2], type[16], kind[16];
  int used, d;
  long long v;
  if (sscanf(l, "array %" SCNd64 " %64s %15s %15s %d%n", &e->id, name, type,
             kind, &e->ndims, &used) != 5 ||
      e->ndims < 1 || e->ndims > 8 || strlen(name) > ORION_CKPT_NAME_MAX)
    return -1;
  snprintf(e->name, sizeof e->name, "%s", strcmp(name, "-") ? name : "");
  e->sparse = strcmp(kind, "sparse") == 0;
  {
    orion_type t;
    if (orion_type_parse(type, &t) != 0)
      return -1;
    e->type = (int)t;
  }
  l += used;
  for (d = 0; d < e->ndims; d++) {
    if (sscanf(l, " %lld%n", &v, &used) != 1)
      return -1;
    e->dims[d] = v;
    l += used;
  }
  if (sscanf(l, " %" SCNd64 " %31s %" SCNu64 " %" SCNx32, &e->nnz, e->file,
             &e->size, &e->crc) != 4 ||
      strchr(e->file, '/') != NULL)
    return -1;
  return 0;
}

/* list (n records of size bytes) with one more, zeroed, at its end;
 * NULL (list unchanged) when out of memory. */
static void *grow(void *list, int n, size_t size) {
  char *p = orion_realloc(list, (size_t)(n + 1) * size);
  if (p != NULL)
    memset(p + (size_t)n * size, 0, size);
  return p;
}

/* Parses one "part ..." line into p; 0 or -1. */
static int parse_part(const char *l, orion_ckpt_part *p) {
  char who[32];
  if (sscanf(l, "part %" SCNd64 " %47s %" SCNd64 " %" SCNd64 " %31s %63s %" SCNu64
                " %" SCNx32,
             &p->array, p->file, &p->first, &p->count, who, p->host, &p->size,
             &p->crc) != 8 ||
      strchr(p->file, '/') != NULL || p->first < 0 || p->count <= 0)
    return -1;
  if (strcmp(who, "driver") == 0)
    p->writer = -1;
  else if (sscanf(who, "executor-%d", &p->writer) != 1 || p->writer < 0)
    return -1;
  return 0;
}

/* Each array written in parts: its parts, in the manifest's order, are
 * consecutive and cover every element.  0, or -1 with why set. */
static int check_parts(const char *f, orion_ckpt *c, char *why, size_t n) {
  int i, k;
  for (k = 0; k < c->nparts; k++) {
    for (i = 0; i < c->narrays && c->arrays[i].id != c->parts[k].array; i++)
      ;
    if (i == c->narrays) {
      snprintf(why, n, "%s/" MANIFEST ": part %s of array %" PRId64
                       ", which it does not list",
               f, c->parts[k].file, c->parts[k].array);
      return -1;
    }
    c->arrays[i].nparts++;
  }
  for (i = 0; i < c->narrays; i++) {
    int64_t next = 0;
    if (c->arrays[i].nparts == 0)
      continue;
    for (k = 0; k < c->nparts; k++)
      if (c->parts[k].array == c->arrays[i].id) {
        if (c->parts[k].first != next)
          break;
        next += c->parts[k].count;
      }
    if (k < c->nparts || next != c->arrays[i].nnz) {
      snprintf(why, n, "%s/" MANIFEST ": the parts of array %" PRId64
                       " do not cover its %" PRId64 " elements once",
               f, c->arrays[i].id, c->arrays[i].nnz);
      return -1;
    }
  }
  return 0;
}

/* Checks the array file f/file against its manifest's size and CRC-32;
 * 0, or -1 with why naming the file. */
static int check_file(const char *f, const char *file, uint64_t want_size,
                      uint32_t want_crc, char *why, size_t n) {
  char p[4352];
  uint64_t size;
  uint32_t crc, trailer;
  int rc;
  snprintf(p, sizeof p, "%s/%s", f, file);
  rc = file_crc(p, 4, &size, &crc, &trailer);
  if (rc == 0 && size == want_size && crc == trailer && crc == want_crc)
    return 0;
  snprintf(why, n, "%s: %s", p,
           rc == -ENOENT ? "missing"
           : rc != 0 || size != want_size
               ? "truncated or resized (not the size its manifest says)"
               : "CRC-32 mismatch (the file is damaged)");
  return -1;
}

/* Reads and checks the checkpoint in folder f; 0, or a message in why. */
static int read_one(const char *f, orion_ckpt *c, char *why, size_t n) {
  char p[4352], *text = NULL, *line, *next;
  size_t len, clen;
  uint64_t size;
  uint32_t crc, trailer, want;
  int i, rc;
  snprintf(p, sizeof p, "%s/" MANIFEST, f);
  if ((rc = slurp(p, &text, &len)) != 0) {
    snprintf(why, n, "%s: %s (an unfinished checkpoint)", p,
             rc < 0 && rc > -4096 ? strerror(-rc) : "cannot read it");
    return -1;
  }
  /* The last line is "crc XXXXXXXX" over everything before it. */
  line = len >= 13 ? text + len - 13 : NULL;
  if (line == NULL || strncmp(line, "crc ", 4) != 0 ||
      sscanf(line + 4, "%" SCNx32, &want) != 1 ||
      (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)text,
                      (uInt)(len - 13)) != want ||
      (strncmp(text, MAGIC_LINE, strlen(MAGIC_LINE)) != 0 &&
       strncmp(text, MAGIC_LINE1, strlen(MAGIC_LINE1)) != 0)) {
    snprintf(why, n, "%s: damaged (its CRC-32 does not match)", p);
    orion_free(text);
    return -1;
  }
  clen = len - 13;
  text[clen] = '\0';
  memset(c, 0, sizeof *c);
  c->step = -1;
  for (line = text + strlen(MAGIC_LINE); *line != '\0'; line = next) {
    char *nl = strchr(line, '\n');
    next = nl != NULL ? nl + 1 : line + strlen(line);
    if (nl != NULL)
      *nl = '\0';
    if (strncmp(line, "step ", 5) == 0)
      c->step = strtoll(line + 5, NULL, 10);
    else if (strncmp(line, "script ", 7) == 0)
      c->script_hash = strtoull(line + 7, NULL, 16);
    else if (strncmp(line, "words ", 6) == 0)
      c->words = dup_n(line + 6, strlen(line + 6));
    else if (strncmp(line, "array ", 6) == 0 ||
             strncmp(line, "part ", 5) == 0) {
      int is_array = line[0] == 'a', bad;
      void *v = is_array ? grow(c->arrays, c->narrays, sizeof *c->arrays)
                         : grow(c->parts, c->nparts, sizeof *c->parts);
      if (v == NULL)
        break;
      if (is_array) {
        c->arrays = v;
        bad = parse_array(line, &c->arrays[c->narrays++]);
      } else {
        c->parts = v;
        bad = parse_part(line, &c->parts[c->nparts++]);
      }
      if (bad) {
        snprintf(why, n, "%s: bad line '%.80s'", p, line);
        orion_free(text);
        orion_ckpt_free(c);
        return -1;
      }
    } else if (strncmp(line, "file ", 5) != 0) {
      /* the caller's meta lines */
      size_t l = strlen(line);
      char *nm = orion_realloc(c->meta, c->meta_len + l + 2);
      if (nm == NULL)
        break;
      c->meta = nm;
      memcpy(c->meta + c->meta_len, line, l);
      c->meta_len += l;
      c->meta[c->meta_len++] = '\n';
      c->meta[c->meta_len] = '\0';
    } else {
      char fname[64];
      if (sscanf(line, "file %63s %" SCNu64 " %" SCNx32, fname, &size,
                 &want) != 3 ||
          strcmp(fname, STATE_FILE) != 0) {
        snprintf(why, n, "%s: bad line '%.80s'", p, line);
        orion_free(text);
        orion_ckpt_free(c);
        return -1;
      }
      snprintf(p, sizeof p, "%s/" STATE_FILE, f);
      rc = file_crc(p, 0, &size, &crc, &trailer);
      if (rc == 0 && (rc = slurp(p, &c->state, &c->state_len)) == 0 &&
          (c->state_len != size || crc != want))
        rc = ORION_ECHECKSUM;
      if (rc != 0) {
        snprintf(why, n, "%s: %s", p,
                 rc == ORION_ECHECKSUM ? "CRC-32 mismatch"
                                       : "missing or unreadable");
        orion_free(text);
        orion_ckpt_free(c);
        return -1;
      }
    }
  }
  orion_free(text);
  if (c->step < 0 || c->words == NULL || c->state == NULL) {
    snprintf(why, n, "%s/" MANIFEST ": incomplete", f);
    orion_ckpt_free(c);
    return -1;
  }
  if (check_parts(f, c, why, n) != 0) {
    orion_ckpt_free(c);
    return -1;
  }
  for (i = 0; i < c->narrays; i++) {
    const orion_ckpt_array *e = &c->arrays[i];
    if (e->nparts == 0 && check_file(f, e->file, e->size, e->crc, why, n)) {
      orion_ckpt_free(c);
      return -1;
    }
  }
  for (i = 0; i < c->nparts; i++) {
    const orion_ckpt_part *q = &c->parts[i];
    if (check_file(f, q->file, q->size, q->crc, why, n) != 0) {
      orion_ckpt_free(c);
      return -1;
    }
  }
  return 0;
}

int orion_ckpt_read(const char *dir, orion_ckpt *out, char *path, size_t n,
                    orion_ckpt_warn_fn warn, void *ud, orion_error *err) {
  int64_t *v;
  int i, cnt = list_steps(dir, &v, warn, ud);
  char f[4096], why[4700];
  if (cnt < 0)
    return orion_error_set(err, cnt, "cannot read %s: %s", dir,
                           cnt > -4096 ? strerror(-cnt) : "out of memory");
  for (i = 0; i < cnt; i++) {
    snprintf(f, sizeof f, "%s/ckpt-%010" PRId64, dir, v[i]);
    if (read_one(f, out, why, sizeof why) == 0) {
      snprintf(path, n, "%s", f);
      orion_free(v);
      return 1;
    }
    if (warn != NULL)
      warn(ud, why);
  }
  orion_free(v);
  return 0;
}

/* ---- arrays of a checkpoint ------------------------------------------- */

int orion_ckpt_load_array(const char *folder, const orion_ckpt *c,
                          const orion_ckpt_array *e, orion_array **out,
                          orion_error *err) {
  char p[4352];
  orion_array *a;
  int k, rc;
  *out = NULL;
  if (e->nparts == 0) {
    snprintf(p, sizeof p, "%s/%s", folder, e->file);
    return orion_array_load(p, out, err);
  }
  if (e->sparse)
    return orion_error_set(err, ORION_EBADFILE,
                           "%s/" MANIFEST ": sparse array %" PRId64
                           " in parts",
                           folder, e->id);
  a = orion_array_new_dense(e->ndims, e->dims, (orion_type)e->type, err);
  if (a == NULL)
    return err != NULL && err->code != 0 ? err->code : ORION_ENOMEM;
  for (k = 0; k < c->nparts; k++) {
    const orion_ckpt_part *q = &c->parts[k];
    orion_array *in = NULL;
    if (q->array != e->id)
      continue;
    snprintf(p, sizeof p, "%s/%s", folder, q->file);
    if ((rc = orion_array_load(p, &in, err)) != 0) {
      orion_array_release(a);
      return rc;
    }
    if (in->sparse || in->type != a->type || in->nnz != q->count ||
        q->first > a->nnz || q->count > a->nnz - q->first) {
      orion_array_release(in);
      orion_array_release(a);
      return orion_error_set(err, ORION_EBADFILE,
                             "%s: does not hold the %" PRId64
                             " elements of array %" PRId64
                             " its manifest says",
                             p, q->count, e->id);
    }
    memcpy((char *)a->values + (size_t)q->first * orion_type_size(a->type),
           in->values, (size_t)q->count * orion_type_size(a->type));
    orion_array_release(in);
  }
  *out = a;
  return 0;
}

int orion_ckpt_load_path(const char *path, orion_array **out,
                         orion_error *err) {
  char folder[4096], why[4700];
  const char *slash = strrchr(path, '/'), *base;
  struct stat st;
  orion_ckpt c;
  int i, rc = 0;
  *out = NULL;
  if (stat(path, &st) == 0)
    return 0; /* there: an ordinary array file */
  if (slash == NULL)
    snprintf(folder, sizeof folder, ".");
  else
    snprintf(folder, sizeof folder, "%.*s", (int)(slash - path), path);
  base = slash != NULL ? slash + 1 : path;
  snprintf(why, sizeof why, "%s/" MANIFEST, folder);
  if (stat(why, &st) != 0)
    return 0;
  if (read_one(folder, &c, why, sizeof why) != 0)
    return orion_error_set(err, ORION_ECHECKSUM, "%s", why);
  for (i = 0; i < c.narrays; i++)
    if (c.arrays[i].nparts > 0 && strcmp(c.arrays[i].file, base) == 0) {
      rc = orion_ckpt_load_array(folder, &c, &c.arrays[i], out, err);
      rc = rc == 0 ? 1 : rc;
      break;
    }
  orion_ckpt_free(&c);
  return rc;
}
