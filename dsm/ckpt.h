/* Checkpoint directories on disk (issue 19): the layout of one checkpoint,
 * writing it so that a crash at any moment leaves the previous one usable,
 * finding the newest complete one, and checking every byte of it.
 *
 *   DIR/ckpt-0000000010/        one checkpoint, named by its step
 *       a5.oarr ...             one binary array file per array
 *                               (docs/file-format.md: orion.load reads it)
 *       a7.r0.oarr a7.r300.oarr an array whose rows executors hold, in
 *                               parts: each a dense array file of whole
 *                               rows, named by its first row (0-based),
 *                               written by the executor holding them or
 *                               by the driver (orion_ckpt_write_part)
 *       state.lua               the script's state table, as Lua source
 *       manifest                written last: what is there, each file's
 *                               size and CRC-32, the caller's meta lines,
 *                               and a CRC-32 of the manifest itself
 *
 * A checkpoint is written into DIR/.ckpt-STEP.tmp (arrays in parallel
 * threads, each file to a temporary name, fsynced and renamed; the
 * executors' parts meanwhile by the executors, through the caller's
 * hooks), the manifest last, the folder fsynced, then renamed to DIR/ckpt-STEP and DIR
 * fsynced.  A folder without a valid manifest is never used.
 *
 * Pure C: no Lua.  lua/checkpoint.c decides what goes in. */
#ifndef ORION_DSM_CKPT_H
#define ORION_DSM_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/array.h"
#include "util/error.h"

#define ORION_CKPT_NAME_MAX 63

typedef struct orion_ckpt_array {
  int64_t id;                          /* the script's array id */
  char name[ORION_CKPT_NAME_MAX + 1];  /* the script's name for it; "" */
  orion_array *a; /* writing: the array (borrowed); reading: NULL */
  /* Writing: the same array's file in an earlier checkpoint that is still
   * there (NULL: none) and the content hash it was written with; when the
   * hash is the same, the file is hard-linked instead of written again.
   * hash is set to the array's content hash. */
  const char *prev;
  uint64_t prev_hash, hash;
  int linked; /* written as a link to prev */
  /* Filled by orion_ckpt_write and orion_ckpt_read: */
  char file[32];  /* "a5.oarr", inside the checkpoint folder */
  uint64_t size;  /* bytes */
  uint32_t crc;   /* the file's CRC-32 trailer */
  int type, sparse, ndims;
  int64_t dims[8];
  int64_t nnz;
  int nparts; /* > 0: written in parts (orion_ckpt.parts), not as file */
} orion_ckpt_array;

/* One part of an array written in parts: elements [first, first + count)
 * of array `array`, whole rows, in `file`. */
typedef struct orion_ckpt_part {
  int64_t array;
  int64_t first, count;
  int writer;         /* the executor that wrote it; -1: the driver */
  char host[64];      /* where the writer ran ("-": the driver's host) */
  const orion_array *a; /* writing, writer -1: the driver's array */
  char file[48];
  uint64_t size;
  uint32_t crc;
} orion_ckpt_part;

/* The caller's hooks around the driver's own writing (NULL: none): start
 * is called once the temporary folder exists (its absolute path), before
 * the driver writes its files; collect after they are written, before the
 * manifest: it fills the size and CRC-32 of the parts others wrote.  Each
 * returns 0 or a negative code with err set (nothing is committed). */
typedef struct orion_ckpt_hooks {
  int (*start)(void *ud, const char *tmp, orion_error *err);
  int (*collect)(void *ud, const char *tmp, orion_error *err);
  void *ud;
} orion_ckpt_hooks;

typedef struct orion_ckpt {
  int64_t step;
  uint64_t script_hash;       /* of the script and its arguments */
  char *words;                /* the script and its arguments, for messages */
  char *state;                /* state.lua's text */
  size_t state_len;
  char *meta;                 /* the caller's lines ("key value...\n") */
  size_t meta_len;
  orion_ckpt_array *arrays;
  int narrays;
  orion_ckpt_part *parts; /* ascending by array, then first */
  int nparts;
  orion_ckpt_hooks hooks; /* writing only */
} orion_ckpt;

/* The name of the part of array `array` that begins at row `row`
 * ("a7.r300.oarr"). */
void orion_ckpt_part_name(char *out, size_t n, int64_t array, int64_t row);

/* Writes elements [first, first + count) of dense array a (whole rows) to
 * folder/NAME as a dense array file of count / row-length rows (the same
 * type and trailing dims; orion_ckpt_part_name of its first row), through
 * a temporary name, fsynced and renamed.  Fills file (the name), size and
 * crc (the file's CRC-32 trailer).  0, or a negative code with err naming
 * the file or what does not fit. */
int orion_ckpt_write_part(const char *folder, const orion_array *a,
                          int64_t array, int64_t first, int64_t count,
                          char *file, size_t fn, uint64_t *size,
                          uint32_t *crc, orion_error *err);

/* The content hash a checkpoint writes array a with (never 0): a later
 * checkpoint links the file of an array whose hash it still has. */
uint64_t orion_ckpt_array_hash(const orion_array *a);

/* The size and CRC-32 trailer of an array file (0, or -errno /
 * ORION_ETRUNC). */
int orion_ckpt_file_trailer(const char *path, uint64_t *size, uint32_t *crc);

/* Writes checkpoint c (step, hash, words, state, meta, arrays with id,
 * name, a and prev) into dir (created if missing), replacing a checkpoint
 * of the same step, then removes the complete checkpoints beyond the
 * newest `keep` and any unfinished ones.  No entry of dir is followed if
 * it is a symbolic link: one named like a checkpoint (ckpt-*, .ckpt-*) is
 * left alone with a warning (orion_log_warn), and one where this
 * checkpoint's folder goes fails the write.  Fills each array's file, size,
 * crc, hash and linked, path (n bytes) with the new folder, bytes[0] with
 * the checkpoint's size and bytes[1] with the bytes written (not linked).
 * Returns 0, or a negative code with err naming the file. */
int orion_ckpt_write(const char *dir, orion_ckpt *c, int keep, char *path,
                     size_t n, uint64_t *bytes, orion_error *err);

/* Called with ud for each checkpoint that is skipped, with a message
 * naming the file and the fault ("DIR/ckpt-0000000010/a5.oarr: CRC-32
 * mismatch (the file is damaged)"), and for each entry named like a
 * checkpoint that is not a plain directory ("DIR/ckpt-0000000003: not a
 * plain directory (a symbolic link or a file); it is left alone"). */
typedef void (*orion_ckpt_warn_fn)(void *ud, const char *msg);

/* Reads the newest complete checkpoint of dir into *out, checking the
 * manifest and every file's size and CRC-32; a checkpoint that fails is
 * reported through warn (NULL: not reported) and the one before it
 * tried.  path (n bytes) gets its folder.  Returns 1 when one was read
 * (free *out with orion_ckpt_free), 0 when dir holds none that is usable
 * (or does not exist), or a negative code with err set when dir cannot be
 * read. */
int orion_ckpt_read(const char *dir, orion_ckpt *out, char *path, size_t n,
                    orion_ckpt_warn_fn warn, void *ud, orion_error *err);

/* The number of checkpoint folders (complete or not; plain directories
 * only) in dir, and the highest step among them into *newest (-1:
 * none). */
int orion_ckpt_count(const char *dir, int64_t *newest);

/* The lock that keeps a checkpoint folder to one job (issue 32): two
 * drivers on one folder would resume from each other's checkpoints and
 * remove each other's unfinished ones.  Creates dir if missing and takes
 * an flock on dir/.orion-lock for as long as *fd stays open, writing the
 * holder's pid, host and start time into it.  0, or a negative code with
 * err naming the folder and, when another driver holds it, that driver.
 * A lock file that is not held but not empty (its driver was killed) is
 * taken over with a warning.  After orion_ckpt_lock_pass, the program
 * that this process execs takes the same lock back here. */
int orion_ckpt_lock(const char *dir, int *fd, orion_error *err);

/* Hands lock fd (-1: none) to the program this process is about to exec
 * (an environment variable names it; it stays open across exec). */
void orion_ckpt_lock_pass(int fd);

/* Empties the lock file (so the next driver sees a clean release) and
 * closes fd, which releases the lock; -1: nothing. */
void orion_ckpt_unlock(int fd);

void orion_ckpt_free(orion_ckpt *c);

/* Array e of checkpoint c (read by orion_ckpt_read from folder) as one
 * new array: its file, or its parts put together.  0, or a negative code
 * with err naming the file. */
int orion_ckpt_load_array(const char *folder, const orion_ckpt *c,
                          const orion_ckpt_array *e, orion_array **out,
                          orion_error *err);

/* orion.load of a checkpoint's array file that is not there because the
 * array was written in parts ("DIR/ckpt-0000000010/a7.oarr"): when path's
 * folder holds a checkpoint whose manifest lists that file in parts, the
 * checkpoint is checked and the array put together into *out (returns 1);
 * 0 when it does not (path is not such a file); negative with err set
 * when the checkpoint fails its checks. */
int orion_ckpt_load_path(const char *path, orion_array **out,
                         orion_error *err);

#endif
