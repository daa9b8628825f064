/* Output paths checked before any work starts (util/outpath.h). */
#include "util/outpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder that holds path's last component, into dir (n bytes): "."
 * for a bare name, "/" for a name at the root.  Trailing slashes of path
 * are not a component of their own ("a/b/" is b in a). */
static void parent_of(const char *path, char *dir, size_t n) {
  size_t len = strlen(path);
  const char *slash;
  while (len > 1 && path[len - 1] == '/')
    len--;
  slash = len > 0 ? memrchr(path, '/', len) : NULL;
  if (slash == NULL)
    snprintf(dir, n, ".");
  else if (slash == path)
    snprintf(dir, n, "/");
  else
    snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Whether new entries can be made in dir: it exists, is a folder and is
 * writable and searchable by this process. */
static int check_parent(const char *path, orion_error *err) {
  char dir[4096];
  struct stat st;
  parent_of(path, dir, sizeof dir);
  if (stat(dir, &st) != 0)
    return orion_error_set(err, -errno,
                           errno == ENOENT ? "the folder %s does not exist"
                                           : "cannot reach the folder %s: %s",
                           dir, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return orion_error_set(err, -ENOTDIR, "%s is not a folder", dir);
  if (access(dir, W_OK | X_OK) != 0)
    return orion_error_set(err, -errno,
                           "cannot create files in the folder %s: %s", dir,
                           strerror(errno));
  return 0;
}

int orion_output_check(const char *path, orion_out_kind kind,
                       orion_error *err) {
  struct stat st;
  if (path == NULL || path[0] == '\0')
    return orion_error_set(err, -EINVAL, "the path is empty");
  if (kind != ORION_OUT_FOLDER && path[strlen(path) - 1] == '/')
    return orion_error_set(err, -EISDIR,
                           "it ends with '/': a file name is needed");
  if (kind == ORION_OUT_PREFIX)
    return check_parent(path, err);
  if (stat(path, &st) != 0) {
    /* ENOTDIR: a component on the way is a file; the parent's check
     * names it.  Anything but "absent" is reported as it is. */
    if (errno != ENOENT && errno != ENOTDIR)
      return orion_error_set(err, -errno, "cannot reach it: %s",
                             strerror(errno));
    return check_parent(path, err);
  }
  if (kind == ORION_OUT_FOLDER) {
    if (!S_ISDIR(st.st_mode))
      return orion_error_set(err, -ENOTDIR, "it exists and is not a folder");
    if (access(path, W_OK | X_OK) != 0)
      return orion_error_set(err, -errno, "cannot create files in it: %s",
                             strerror(errno));
    return 0;
  }
  if (S_ISDIR(st.st_mode))
    return orion_error_set(err, -EISDIR, "it is a folder, not a file");
  if (access(path, W_OK) != 0)
    return orion_error_set(err, -errno, "cannot write it: %s",
                           strerror(errno));
  return 0;
}
