/* Files that appear whole or not at all (util/atomic.h). */
#include "util/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"

int orion_sync_parent(const char *path, orion_error *err) {
  const char *slash = strrchr(path, '/');
  char *dir;
  int fd, rc = 0;
  if (slash == NULL)
    dir = orion_strdup(".");
  else if (slash == path)
    dir = orion_strdup("/");
  else
    dir = orion_strndup(path, (size_t)(slash - path));
  if (dir == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
    rc = orion_error_set(err, -errno, "cannot sync the folder %s: %s", dir,
                         strerror(errno));
  if (fd >= 0)
    close(fd);
  orion_free(dir);
  return rc;
}

/* data[0..len) into fd, named name in the error. */
static int write_all(int fd, const void *data, size_t len, const char *name,
                     orion_error *err) {
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, (const char *)data + off, len - off);
    if (w > 0)
      off += (size_t)w;
    else if (w < 0 && errno == EINTR)
      continue;
    else
      return orion_error_set(err, w < 0 ? -errno : -EIO,
                             "cannot write %s: %s", name,
                             w < 0 ? strerror(errno) : "short write");
  }
  return 0;
}

/* data written straight into path, an existing file that is not a
 * regular one (a device such as /dev/null, a FIFO): renaming a temporary
 * over it would replace the device with a regular file. */
static int write_special(const char *path, const void *data, size_t len,
                         orion_error *err) {
  int rc, fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return orion_error_set(err, -errno, "cannot write %s: %s", path,
                           strerror(errno));
  rc = write_all(fd, data, len, path, err);
  if (close(fd) != 0 && rc == 0)
    rc = orion_error_set(err, -errno, "cannot write %s: %s", path,
                         strerror(errno));
  return rc;
}

int orion_atomic_write(const char *path, const void *data, size_t len,
                       orion_error *err) {
  size_t plen = strlen(path);
  char *tmp;
  int fd, rc = 0;
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return write_special(path, data, len, err);
  tmp = orion_malloc(plen + 5);
  if (tmp == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory writing %s",
                           path);
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    rc = orion_error_set(err, -errno, "cannot create %s: %s", tmp,
                         strerror(errno));
    orion_free(tmp);
    return rc;
  }
  rc = write_all(fd, data, len, tmp, err);
  if (rc == 0 && fsync(fd) != 0)
    rc = orion_error_set(err, -errno, "cannot write %s: %s", tmp,
                         strerror(errno));
  if (close(fd) != 0 && rc == 0)
    rc = orion_error_set(err, -errno, "cannot write %s: %s", tmp,
                         strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0)
    rc = orion_error_set(err, -errno, "cannot rename %s to %s: %s", tmp, path,
                         strerror(errno));
  if (rc != 0)
    unlink(tmp);
  else
    rc = orion_sync_parent(path, err);
  orion_free(tmp);
  return rc;
}
