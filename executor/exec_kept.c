/* Kept loads (executor/exec_kept.h): LOADED frames in memory files that
 * outlive the executor's execv of itself. */
#include "executor/exec_kept.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dsm/msg.h"
#include "util/log.h"

#define KEPT_MAX 4096
#define KEPT_ENV "ORION_KEPT_LOADS"
static const char kept_magic[8] = {'O', 'R', 'K', 'E', 'P', 'T', '0', '1'};

/* The head of a memory file; the frame follows it. */
typedef struct kept_head {
  char magic[8];
  char digest[ORION_MSG_LOAD_DIGEST];
  int64_t size, mtime_sec, mtime_nsec;
  uint64_t ino, dev;
  uint64_t frame_len;
} kept_head;

typedef struct kept {
  int fd;
  const kept_head *h; /* mapped read-only, h->frame_len bytes after it */
  size_t map_len;
} kept;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept store[KEPT_MAX];
static int nstore;

static int same_file(const kept_head *h, const struct stat *st) {
  return h->size == (int64_t)st->st_size &&
         h->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
         h->mtime_nsec == (int64_t)st->st_mtim.tv_nsec &&
         h->ino == (uint64_t)st->st_ino && h->dev == (uint64_t)st->st_dev;
}

static void drop(int i) {
  munmap((void *)store[i].h, store[i].map_len);
  close(store[i].fd);
  store[i] = store[--nstore];
}

int orion_kept_answer(const char *digest, const char *path, orion_buf *out) {
  struct stat st;
  int i, rc = 0, have = stat(path, &st) == 0;
  pthread_mutex_lock(&lock);
  for (i = 0; i < nstore; i++) {
    const kept_head *h = store[i].h;
    if (memcmp(h->digest, digest, ORION_MSG_LOAD_DIGEST) != 0)
      continue;
    if (!have || !same_file(h, &st)) {
      orion_log_info("the file %s changed (or is gone) since this executor "
                     "parsed it: parsing it again",
                     path);
      drop(i);
      break;
    }
    orion_buf_append(out, (const char *)(h + 1), (size_t)h->frame_len);
    rc = out->oom ? -1 : 1;
    break;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* write(2) until all of p[0..n) is written. */
static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Maps memory file fd (map_len bytes) and takes it into the store, or
 * closes it: 0, or -1 when it is not a kept frame. */
static int take(int fd, size_t map_len) {
  void *m;
  const kept_head *h;
  if (nstore >= KEPT_MAX || map_len < sizeof *h ||
      (m = mmap(NULL, map_len, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    close(fd);
    return -1;
  }
  h = m;
  if (memcmp(h->magic, kept_magic, sizeof kept_magic) != 0 ||
      h->frame_len != map_len - sizeof *h) {
    munmap(m, map_len);
    close(fd);
    return -1;
  }
  store[nstore].fd = fd;
  store[nstore].h = h;
  store[nstore].map_len = map_len;
  nstore++;
  return 0;
}

void orion_kept_add(const char *digest, const struct stat *st,
                    const void *frame, size_t len) {
  kept_head h;
  int fd;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, kept_magic, sizeof kept_magic);
  memcpy(h.digest, digest, ORION_MSG_LOAD_DIGEST);
  h.size = (int64_t)st->st_size;
  h.mtime_sec = (int64_t)st->st_mtim.tv_sec;
  h.mtime_nsec = (int64_t)st->st_mtim.tv_nsec;
  h.ino = (uint64_t)st->st_ino;
  h.dev = (uint64_t)st->st_dev;
  h.frame_len = len;
  pthread_mutex_lock(&lock);
  if (nstore >= KEPT_MAX) {
    pthread_mutex_unlock(&lock);
    return;
  }
  fd = memfd_create("orion-kept-load", MFD_CLOEXEC);
  if (fd < 0 || write_all(fd, &h, sizeof h) != 0 ||
      write_all(fd, frame, len) != 0) {
    orion_log_info("cannot keep a loaded part for --elastic (%s): a "
                   "re-formed job parses it again",
                   strerror(errno));
    if (fd >= 0)
      close(fd);
  } else {
    take(fd, sizeof h + len);
  }
  pthread_mutex_unlock(&lock);
}

int orion_kept_count(size_t *bytes) {
  int i, n;
  size_t b = 0;
  pthread_mutex_lock(&lock);
  for (i = 0; i < nstore; i++)
    b += (size_t)store[i].h->frame_len;
  n = nstore;
  pthread_mutex_unlock(&lock);
  if (bytes != NULL)
    *bytes = b;
  return n;
}

void orion_kept_pass_on(void) {
  char *list;
  size_t w = 0;
  int i;
  pthread_mutex_lock(&lock); /* held: the exec follows */
  if (nstore == 0)
    return;
  list = malloc((size_t)nstore * 12 + 1);
  if (list == NULL)
    return;
  list[0] = '\0';
  for (i = 0; i < nstore; i++) {
    int fl = fcntl(store[i].fd, F_GETFD);
    if (fl < 0 || fcntl(store[i].fd, F_SETFD, fl & ~FD_CLOEXEC) != 0)
      continue;
    w += (size_t)snprintf(list + w, 12, "%s%d", w > 0 ? "," : "",
                          store[i].fd);
  }
  setenv(KEPT_ENV, list, 1);
  free(list);
}

void orion_kept_take_over(void) {
  const char *s = getenv(KEPT_ENV);
  char *end;
  int taken = 0;
  if (s == NULL)
    return;
  pthread_mutex_lock(&lock);
  while (*s != '\0') {
    long fd = strtol(s, &end, 10);
    struct stat st;
    if (end == s || fd < 3 || fd > INT32_MAX)
      break;
    s = *end == ',' ? end + 1 : end;
    if (fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode))
      continue; /* not an open memory file: not ours to close */
    fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    if (take((int)fd, (size_t)st.st_size) == 0)
      taken++;
  }
  pthread_mutex_unlock(&lock);
  unsetenv(KEPT_ENV);
  if (taken > 0)
    orion_log_detail("kept %d loaded part%s across registering again",
                     taken, taken == 1 ? "" : "s");
}
