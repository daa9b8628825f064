/* Device grids kept across passes (executor/exec_gbody.c).
 *
 * A loop's blocks come back every pass with the same elements, and the
 * grid of a block depends only on its keys and the loop's schedule
 * (executor/gpugrid.h).  Building it is the host's largest cost of a GPU
 * block (MovieLens-1M's 900k ratings: 55 ms on the H200's host against
 * 17 ms of body), so an executor keeps the grids of the blocks it ran,
 * keyed by the iterated array, the block's segments and the grid's input,
 * and checked against the array's keys on every use: a block whose keys
 * changed since (a permutation, a reload, pushed elements) is built again,
 * never run on a stale grid.  A dense array's keys follow from its shape,
 * which is compared instead.
 *
 * The entries also say whether the iterated array's device copy of its
 * keys still holds the block's (dev_keys), so that a block that found its
 * grid copies only its values in.
 *
 * At most ORION_GMEMO_ENTRIES entries and ORION_GPU_GRID_CACHE bytes
 * (default a quarter of the host's memory, at least 1 GiB; 0 keeps none),
 * the least recently used dropped first.
 * Compute thread only. */
#ifndef ORION_LUA_EXEC_GMEMO_H
#define ORION_LUA_EXEC_GMEMO_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/blocks.h"
#include "executor/gpugrid.h"
#include "util/error.h"

#define ORION_GMEMO_ENTRIES 1024

typedef struct orion_gmemo orion_gmemo;

/* One block's grid. */
typedef struct orion_gmemo_grid {
  int64_t nel;           /* the block's elements */
  orion_gpugrid grid;    /* over them, in block order */
  int64_t *order;        /* positions in the array, group-major */
  int64_t klo[ORION_MAX_DIMS], khi[ORION_MAX_DIMS]; /* each key's range */
  int dev_keys;          /* the device copy of the keys holds this block's */
  uint64_t serial;       /* unique over the executor's life, never 0 */
} orion_gmemo_grid;

/* The grid of the block segs[0..nsegs) of array id (a), for the grid input
 * in (its kind, dims, skew and b; keys and nelems are ignored): kept, or
 * built and kept.  *out stays valid until the next call on m; *hit says
 * which.  An empty block gives nel 0 and is not kept.  *m is created on
 * first use.  Returns 0, ORION_ENOMEM or the grid's error. */
int orion_gmemo_get(orion_gmemo **m, int64_t id, const orion_array *a,
                    const orion_segment *segs, int64_t nsegs,
                    const orion_gpugrid_in *in, orion_gmemo_grid **out,
                    int *hit, orion_error *err);

/* The device copy of array id's keys was freed or reallocated: no entry's
 * keys are there. */
void orion_gmemo_dev_lost(orion_gmemo *m, int64_t id);

/* The device copy of array id's keys now holds g's block (written over
 * the positions of g's segments): every other entry of id whose segments
 * meet them loses dev_keys. */
void orion_gmemo_dev_wrote(orion_gmemo *m, int64_t id,
                           orion_gmemo_grid *g);

/* Entries kept, and their bytes (for tests). */
int orion_gmemo_count(const orion_gmemo *m, size_t *bytes);

void orion_gmemo_free(orion_gmemo *m);

#endif
