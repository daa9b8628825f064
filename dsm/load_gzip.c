/* Reading a whole data file, plain or gzip-compressed (told apart by
 * content), through zlib: orion_read_file of dsm/loader.h; and mapping a
 * plain one instead of reading it (orion_map_file). */
#include "dsm/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/alloc.h"

/* A starting buffer size for the file behind fd: its size when plain, the
 * gzip trailer's ISIZE (bounded by deflate's best ratio) when gzipped. */
static size_t size_hint(int fd, const struct stat *st) {
  unsigned char b[4];
  size_t size = st->st_size > 0 ? (size_t)st->st_size : 0;
  uint64_t isize;
  if (size == 0)
    return (size_t)1 << 16;
  if (pread(fd, b, 2, 0) != 2 || b[0] != 0x1f || b[1] != 0x8b)
    return size + 2;
  if (size < 18 || pread(fd, b, 4, (off_t)(size - 4)) != 4)
    return size * 4 + 2;
  isize = (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
          (uint64_t)b[3] << 24;
  if (isize < size / 2 || isize / 1032 > size)
    return size * 4 + 2;
  return (size_t)isize + 2;
}

/* Reads path whole through zlib (plain or gzip).  *data, on success, is
 * the caller's to orion_free; on failure nothing is left allocated. */
int orion_read_file(const char *path, char **data, size_t *len,
                    orion_error *err) {
  struct stat st;
  gzFile gz;
  char *buf, *p;
  size_t cap, n = 0;
  int fd, r, zerr, e, rc = 0;
  const char *zmsg;
  *data = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    e = errno;
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e != 0) {
    close(fd);
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  cap = size_hint(fd, &st);
  buf = orion_malloc(cap);
  gz = buf != NULL ? gzdopen(fd, "rb") : NULL;
  if (gz == NULL) {
    close(fd);
    orion_free(buf);
    return orion_error_set(err, ORION_ENOMEM, "cannot read %s: out of memory",
                           path);
  }
  gzbuffer(gz, 1 << 18);
  for (;;) {
    size_t room;
    if (cap - n < 2) {
      if (cap > SIZE_MAX / 2 || (p = orion_realloc(buf, cap * 2)) == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM,
                             "cannot read %s: out of memory at %zu bytes", path,
                             n);
        goto out;
      }
      buf = p;
      cap *= 2;
    }
    room = cap - n - 1;
    if (room > (size_t)1 << 30)
      room = (size_t)1 << 30;
    errno = 0;
    r = gzread(gz, buf + n, (unsigned)room);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  e = errno;
  zmsg = gzerror(gz, &zerr);
  if (zerr == Z_ERRNO)
    rc = orion_error_set(err, e != 0 ? -e : -EIO, "cannot read %s: %s", path,
                         strerror(e != 0 ? e : EIO));
  else if (zerr == Z_BUF_ERROR)
    rc = orion_error_set(err, ORION_ETRUNC, "%s: truncated gzip data (%s)",
                         path, zmsg);
  else if (zerr == Z_MEM_ERROR)
    rc = orion_error_set(err, ORION_ENOMEM, "cannot read %s: out of memory",
                         path);
  else if (zerr != Z_OK)
    rc = orion_error_set(err, ORION_EPARSE, "%s: corrupt gzip data (%s)", path,
                         zmsg);
out:
  r = gzclose(gz);
  if (rc == 0 && r == Z_BUF_ERROR)
    rc = orion_error_set(err, ORION_ETRUNC,
                         "%s: truncated gzip data (unexpected end of file)",
                         path);
  else if (rc == 0 && r != Z_OK)
    rc = orion_error_set(err, ORION_EPARSE, "%s: corrupt gzip data", path);
  if (rc != 0) {
    orion_free(buf);
    return rc;
  }
  if (cap - n > 4096 && (p = orion_realloc(buf, n + 1)) != NULL)
    buf = p;
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return 0;
}

/* Maps a plain file read-only when it can: a regular file, not empty, not
 * gzip, whose size is not a multiple of the page size (so that the byte
 * after the data lies in the mapping's last page, which the kernel fills
 * with zeros: the terminating NUL orion_read_file promises).  Returns 1
 * with *data and *len set, or 0 (nothing mapped, errno ignored). */
static int map_plain(const char *path, char **data, size_t *len) {
  struct stat st;
  unsigned char magic[2];
  long page = sysconf(_SC_PAGESIZE);
  void *m;
  int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 2 &&
      page > 0 && st.st_size % page != 0 &&
      (uint64_t)st.st_size < (uint64_t)SIZE_MAX &&
      pread(fd, magic, 2, 0) == 2 && !(magic[0] == 0x1f && magic[1] == 0x8b)) {
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      (void)madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
      *data = m;
      *len = (size_t)st.st_size;
      ok = 1;
    }
  }
  close(fd);
  return ok;
}

int orion_map_file(const char *path, char **data, size_t *len, int *mapped,
                   orion_error *err) {
  *mapped = map_plain(path, data, len);
  if (*mapped)
    return 0;
  return orion_read_file(path, data, len, err);
}

void orion_unmap_file(char *data, size_t len, int mapped) {
  if (mapped)
    munmap(data, len);
  else
    orion_free(data);
}
