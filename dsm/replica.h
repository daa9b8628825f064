/* What the executors hold of one array, as the driver tracks it: the
 * driver's copy is the master; every executor holds some version of each
 * part of it.  A dense array is versioned per chunk of rows of dimension 1
 * (about 4 KiB, dsm/proto.h's orion_chunk_rows); a sparse iterated array
 * per block of its blockset.  A part an executor holds at its current
 * version need not be sent again.
 *
 * Versions come from one process-wide counter, so a version never repeats
 * across arrays or runs.  Pure bookkeeping: no I/O, single-threaded.
 */
#ifndef ORION_DSM_REPLICA_H
#define ORION_DSM_REPLICA_H

#include <stdint.h>

#include "dsm/array.h"
#include "dsm/holders.h"

typedef struct orion_replica {
  int n;              /* executors */
  uint64_t gen;       /* the owner's write generation last seen */
  /* Dense arrays: chunks of rows. */
  int64_t rows;       /* dims[0] */
  int64_t row_elems;  /* elements per row */
  int64_t chunk;      /* rows per chunk */
  int64_t nchunks;
  uint64_t *ver;      /* nchunks: the driver's version */
  uint64_t *have;     /* n * nchunks: the version executor e holds */
  uint64_t *sent;     /* n * nchunks: dispatch number of the last block
                         that carried rows of the chunk to the executor */
  /* Sparse iterated arrays: per block (orion_replica_set_blocks). */
  uint64_t bs_gen;    /* the blockset's generation they follow */
  int nb;
  uint64_t *bver;     /* nb */
  uint64_t *bhave;    /* n * nb */
  int64_t (*krange)[ORION_MAX_DIMS][2]; /* nb: the blocks' key ranges
                                           (orion_blockset_key_ranges),
                                           kept by the user while the
                                           blocks are; freed here */
  /* Rows whose newest copy is on an executor, not the driver (resident
   * rows, scheduler/dist_resid.c); the driver's copy is current elsewhere. */
  orion_holders held;
} orion_replica;

/* The record of a (shape and kind only) on n executors, which hold
 * nothing yet; gen is the owner's write generation.  NULL on out of
 * memory.  Free with orion_replica_free. */
orion_replica *orion_replica_new(const orion_array *a, int n, uint64_t gen);
void orion_replica_free(orion_replica *c);

/* The owner wrote the array when gen differs from the one seen: every
 * chunk and block gets a new version (no executor holds it). */
void orion_replica_sync(orion_replica *c, uint64_t gen);

/* Every chunk gets a new version (nobody's copy can be trusted). */
void orion_replica_invalidate(orion_replica *c);

/* Versions per block for nb blocks of blockset generation bs_gen; kept
 * while both match, else made anew (held by nobody).  0 or
 * ORION_ENOMEM. */
int orion_replica_set_blocks(orion_replica *c, int nb, uint64_t bs_gen);

/* Block b changed at executor e, which holds the new version. */
void orion_replica_block_changed(orion_replica *c, int e, int b);

/* How many of rows [lo, hi) executor e holds at their current versions:
 * the rows of its current chunks that lie in the range.  Counted by row,
 * not all or nothing: a range of rows (a block's part) rarely covers its
 * first and last chunk whole, and a chunk held only in part is never
 * marked held, so a whole-range test would almost never hold (dynamic
 * placement, scheduler/dist_resid.c, was blind to resident rows that way). */
int64_t orion_replica_fresh_rows(const orion_replica *c, int e, int64_t lo,
                                 int64_t hi);

/* Elements [first, first+count) changed, by the block with dispatch
 * number seq at executor e (e < 0: at the driver).  An executor that held
 * a chunk's previous version, and was sent nothing of it since that
 * block, holds the new one. */
void orion_replica_changed(orion_replica *c, int e, uint64_t seq,
                           int64_t first, int64_t count);

#endif
