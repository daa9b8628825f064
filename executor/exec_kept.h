/* Kept loads (issue 35, elastic executors): the parts of files an
 * executor parsed for an --elastic driver (LOAD_FILE with a digest,
 * dsm/msg.h), kept as the LOADED frames it sent, so that after the job
 * re-forms the survivors answer the same load from what they hold instead
 * of reading and parsing the file again (dsm/pload.c asks them first).
 *
 * Each kept frame lives in its own memory file (memfd_create), which
 * survives the executor's execv of itself with --join
 * (drivers/executor.c): orion_kept_pass_on before the execv, and
 * orion_kept_take_over at the start of the new image.  A kept frame is
 * used only for the same digest (the driver's: the file's path, size,
 * modification time and inode as the driver sees them, the parse options,
 * the part and the number of parts) and while the file, as this executor
 * sees it, has the size, modification time and inode it had when it was
 * parsed.  It costs one more copy of the executor's parsed part of each
 * file, until the executor exits.  Thread-safe. */
#ifndef ORION_EXECUTOR_EXEC_KEPT_H
#define ORION_EXECUTOR_EXEC_KEPT_H

#include <stddef.h>
#include <sys/stat.h>

#include "util/buf.h"

/* Appends the kept LOADED frame of digest (ORION_MSG_LOAD_DIGEST bytes)
 * to out and returns 1, when there is one and path is still the file it
 * was parsed from; 0 otherwise (a copy for a changed file is dropped).  A
 * frame that does not fit out (memory) is not appended: -1. */
int orion_kept_answer(const char *digest, const char *path, orion_buf *out);

/* Keeps frame[0..len) (a LOADED frame) under digest, for the file whose
 * stat was st when it was parsed.  Best effort: without memory files or
 * memory, or past the limit of kept frames, nothing is kept (a later
 * load parses again). */
void orion_kept_add(const char *digest, const struct stat *st,
                    const void *frame, size_t len);

/* The number of frames kept and their bytes (tests, the log). */
int orion_kept_count(size_t *bytes);

/* Before the executor runs itself again: the kept frames' memory files
 * stay open across the exec and $ORION_KEPT_LOADS names them.  Holds the
 * store's lock from then on (the exec follows). */
void orion_kept_pass_on(void);

/* At the executor's start: takes the memory files $ORION_KEPT_LOADS
 * names (and removes it from the environment); a file that is not one
 * this code wrote is closed and skipped. */
void orion_kept_take_over(void);

#endif
