/* A sharded array's data on one executor: a dense array whose rows,
 * grouped in version chunks (dsm/proto.h's orion_chunk_rows), are owned
 * by the executors in turn for a loop run; executor e of n owns chunks
 * [orion_shard_first(e), orion_shard_first(e + 1)).  The owner publishes
 * its chunks from its replica to a served copy, bumping the version of
 * each chunk that changed and stamping its changed rows with that
 * version; a requester keeps the version it holds of every chunk, and the
 * owner answers it with the chunks whose version differs, each with only
 * the rows changed since the version the requester holds (a parameter
 * server's delta refresh); the owner's changed elements since the last
 * rebase are the runs where the served copy and the base differ.
 *
 * Pure data: no locks, no I/O.  The user serializes calls (the executor
 * holds its mutex around them, executor/exec_shard.c) and does the
 * messaging.
 */
#ifndef ORION_DSM_SHARD_H
#define ORION_DSM_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/msg.h"

typedef struct orion_shard {
  int64_t id;
  orion_array *a; /* the replica (one reference held) */
  int64_t row_elems, chunk_rows, nchunks;
  size_t esz;
  /* The user's bookkeeping of the run (kept, cleared with the rest). */
  int flags;           /* ORION_SHARD_FETCH | ORION_SHARD_WRITTEN */
  int64_t run;         /* the run the flags are for */
  int64_t fetched_run; /* read-only: fetched once in this run */
  int64_t served_run;  /* the run `served` is published for (0: none) */
  uint64_t *have;      /* requester: version held per chunk */
  int64_t clo, chi;    /* owner: my chunks */
  uint64_t *ver;       /* owner: per own chunk */
  uint64_t *rver;      /* owner: per own row, the version it last changed */
  char *served;        /* owner: own rows as published */
  char *base;          /* owner: own rows when the run started */
} orion_shard;

/* A fresh shard (sh zeroed) of the dense array a, whose chunks
 * [orion_shard_first(e, n), orion_shard_first(e + 1, n)) are ours:
 * geometry, every version 0, the copy buffers (their contents undefined
 * until published).  Retains a.  0, or ORION_ENOMEM with sh cleared. */
int orion_shard_init(orion_shard *sh, int64_t id, orion_array *a, int e, int n);

/* Frees the buffers, releases the array and zeroes sh (a zeroed sh is
 * fine). */
void orion_shard_clear(orion_shard *sh);

/* The element range [*first, *first + *count) of chunks [k0, k1), cut at
 * the array's end. */
void orion_shard_chunk_elems(const orion_shard *sh, int64_t k0, int64_t k1,
                             int64_t *first, int64_t *count);

/* The chunk holding element `key`, and the first element of chunk k (not
 * cut at the array's end). */
int64_t orion_shard_chunk_of(const orion_shard *sh, int64_t key);
int64_t orion_shard_chunk_key(const orion_shard *sh, int64_t k);

/* The executor of n that owns chunk k. */
int orion_shard_owner(const orion_shard *sh, int n, int64_t k);

/* Copies own chunks [k0, k1) (cut to ours) from the replica to the
 * served copy, giving each that changed (every one when force) the next
 * version of *counter, and that version to its rows that changed (every
 * row when force). */
void orion_shard_publish(orion_shard *sh, int64_t k0, int64_t k1, int force,
                         uint64_t *counter);

/* The base becomes the served copy. */
void orion_shard_rebase(orion_shard *sh);

/* Forgets the versions held of every chunk (all 0). */
void orion_shard_forget(orion_shard *sh);

/* The owner's answer to a requester holding versions[k - clo] of our
 * chunks k: fills out with the chunks whose version differs, in chunk
 * order, their data pointing into the served copy: a chunk's rows
 * stamped after the version held, in runs (an entry per run, `row` its
 * first row in the chunk; runs a few unchanged bytes apart are sent as
 * one), or the whole chunk when nothing (0) or a version this owner never
 * gave is held.  Returns how many entries; out NULL: only counts them. */
int64_t orion_shard_changed(const orion_shard *sh, const uint64_t *versions,
                            orion_msg_chunk *out);

/* A requester installs chunk entry c (from an owner's answer: rows from
 * c->row on) in its replica and holds its version.  0, or ORION_EPARSE
 * (nothing changed) when the chunk is not one of the array's or its rows
 * do not fit it (whole rows, inside the chunk). */
int orion_shard_install(orion_shard *sh, const orion_msg_chunk *c);

/* Appends to runs the runs of our elements whose served value differs
 * from the base (pointing into the served copy), then rebases.  0, or
 * ORION_ENOMEM (rebased all the same). */
int orion_shard_diff(orion_shard *sh, orion_msg_runvec *runs);

#endif
