/* Key permutations (A:permute_keys, lua/permute.c): a random bijection of
 * the keys 0..n-1 of one dimension, made from (n, seed) alone, and the
 * remapping of an array's keys along one dimension through one.
 *
 * The permutation is a Fisher-Yates shuffle driven by util/rng.h seeded
 * with orion_seed_mix(seed, n, "perm"): the same (n, seed) gives the same
 * permutation in every process, whatever the number of executors.  Two
 * permutations are equal when their n and seed are (orion_perm_same).
 */
#ifndef ORION_DSM_PERM_H
#define ORION_DSM_PERM_H

#include <stdint.h>

#include "dsm/array.h"
#include "util/error.h"

typedef struct orion_perm {
  int refs;
  int64_t n;
  int64_t seed;
  int64_t *fwd; /* original key -> stored key (0-based) */
  int64_t *inv; /* stored key -> original key */
} orion_perm;

/* The permutation of 0..n-1 for seed (one reference); NULL with err on
 * n < 1 or out of memory. */
orion_perm *orion_perm_new(int64_t n, int64_t seed, orion_error *err);
void orion_perm_retain(orion_perm *p);
/* Drops one reference; frees at zero.  NULL is ignored. */
void orion_perm_release(orion_perm *p);
/* Whether x and y map every key the same way (both NULL: the identity). */
int orion_perm_same(const orion_perm *x, const orion_perm *y);

/* Moves every element of a to key map[k] along dimension dim (0-based),
 * in place: a sparse array's keys are rewritten in storage order (a
 * ragged array's rows are then sorted again when dim is its row
 * dimension); a dense array's slices move.  map is a bijection of
 * 0..a->dims[dim]-1.  ORION_ENOMEM with err. */
int orion_array_remap(orion_array *a, int dim, const int64_t *map,
                      orion_error *err);

#endif
