/* Files that appear whole or not at all: written under a temporary name
 * beside the target, flushed to the disk (fsync), renamed over the target,
 * and the folder's entry made durable too (fsync of the folder).  A reader
 * sees the old file or the new one, never a part; after a crash, the same.
 * A set of files (a model, a checkpoint) is made visible at once by a
 * manifest written this way last, which names each file (apps/mf/mf.lua,
 * predict.lua). */
#ifndef ORION_UTIL_ATOMIC_H
#define ORION_UTIL_ATOMIC_H

#include <stddef.h>

#include "util/error.h"

/* Writes data[0..len) to path as above (the temporary is PATH.tmp, removed
 * on failure).  A path that names an existing device or FIFO (/dev/null,
 * a named pipe) is written straight into instead, which is all such a
 * file can take: a rename would replace it with a regular file.  Returns 0, or a negative errno / ORION_ENOMEM with err
 * naming the file ("cannot write m.meta.tmp: No space left on device"). */
int orion_atomic_write(const char *path, const void *data, size_t len,
                       orion_error *err);

/* Makes the folder holding path durable (its entries: a rename or a new
 * file there).  Returns 0, or a negative errno with err naming the folder.
 * A file system that cannot sync a folder (EINVAL) counts as done. */
int orion_sync_parent(const char *path, orion_error *err);

#endif
