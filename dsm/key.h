/* Key linearisation.  Keys are 0-based inside the C code (1-based in Lua);
 * an n-D key (k1..kn) maps row-major to one 64-bit linear key. */
#ifndef ORION_DSM_KEY_H
#define ORION_DSM_KEY_H

#include <stdint.h>

#include "util/limits.h"

/* Fills strides[d] = product of dims[d+1..n-1] and *total with the product
 * of all dims.  Returns 0, ORION_EDIMS for a non-positive dim or
 * ORION_EOVERFLOW when the product does not fit in int64. */
int orion_key_strides(int ndims, const int64_t *dims, int64_t *strides,
                      int64_t *total);

/* Linear key of keys[0..n-1] under dims; ORION_EKEYRANGE when some key is
 * outside [0, dims[d]). */
int orion_key_linearize(int ndims, const int64_t *dims, const int64_t *keys,
                        int64_t *out);

/* Inverse of orion_key_linearize; lin must be in range. */
void orion_key_delinearize(int ndims, const int64_t *dims, int64_t lin,
                           int64_t *keys);

/* Whether each of the n keys at keys (n * ndims 64-bit integers, row-major,
 * in memory of any alignment: a view into a received frame) lies inside
 * dims: 0, or ORION_EKEYRANGE with *elem and *dim (when not NULL) set to
 * the first element and dimension outside.  Keys from a peer are checked
 * with it before anything indexes memory with them. */
int orion_key_check_all(int ndims, const int64_t *dims, const void *keys,
                        int64_t n, int64_t *elem, int *dim);

#endif
