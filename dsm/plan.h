/* Partition plans: how the key range of one dimension is cut into parts.
 * Equal bounds cut the key range evenly; histogram bounds cut it so that
 * each part holds about the same number of stored elements. */
#ifndef ORION_SCHEDULER_PLAN_H
#define ORION_SCHEDULER_PLAN_H

#include <stdint.h>

#include "dsm/array.h"

typedef struct orion_split {
  int dim;         /* 0-based dimension that is cut */
  int nparts;      /* number of parts, >= 1 */
  int64_t *bounds; /* nparts+1 keys: part p covers [bounds[p], bounds[p+1]) */
} orion_split;

/* Cuts [0, size) into nparts ranges of (nearly) equal width; nparts is
 * lowered to size when size is smaller.  out->bounds is owned by out. */
int orion_split_equal(int64_t size, int dim, int nparts, orion_split *out);

/* Cuts dimension dim of a so that each part holds about nnz/nparts stored
 * elements (keys are never split across parts). */
int orion_split_histogram(const orion_array *a, int dim, int nparts,
                          orion_split *out);

/* The part holding key k (binary search). */
int orion_split_find(const orion_split *s, int64_t k);

void orion_split_free(orion_split *s);

#endif
