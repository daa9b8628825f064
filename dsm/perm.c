/* Key permutations and remapping an array's keys through one (dsm/perm.h). */
#include "dsm/perm.h"

#include <string.h>

#include "dsm/ragged.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/rng.h"

/* "perm" in ASCII: keeps a permutation's stream apart from the other
 * users of a seed (array initialisation, splits). */
#define PERM_SALT 0x7065726dULL

orion_perm *orion_perm_new(int64_t n, int64_t seed, orion_error *err) {
  orion_perm *p;
  orion_rng rng;
  int64_t i;
  if (n < 1) {
    orion_error_set(err, ORION_EINVAL,
                    "a permutation needs at least one key, not %lld",
                    (long long)n);
    return NULL;
  }
  p = orion_calloc(1, sizeof *p);
  if (p == NULL)
    goto oom;
  p->refs = 1;
  p->fwd = orion_malloc(sizeof *p->fwd * (size_t)n);
  p->inv = orion_malloc(sizeof *p->inv * (size_t)n);
  if (p->fwd == NULL || p->inv == NULL)
    goto oom;
  p->n = n;
  p->seed = seed;
  for (i = 0; i < n; i++)
    p->fwd[i] = i;
  orion_rng_seed(&rng, orion_seed_mix((uint64_t)seed, (uint64_t)n,
                                      PERM_SALT));
  for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)orion_rng_below(&rng, (uint64_t)i + 1);
    int64_t t = p->fwd[i];
    p->fwd[i] = p->fwd[j];
    p->fwd[j] = t;
  }
  for (i = 0; i < n; i++)
    p->inv[p->fwd[i]] = i;
  return p;
oom:
  orion_perm_release(p);
  orion_error_set(err, ORION_ENOMEM,
                  "out of memory for a permutation of %lld keys",
                  (long long)n);
  return NULL;
}

void orion_perm_retain(orion_perm *p) { p->refs++; }

void orion_perm_release(orion_perm *p) {
  if (p == NULL || --p->refs > 0)
    return;
  orion_free(p->fwd);
  orion_free(p->inv);
  orion_free(p);
}

int orion_perm_same(const orion_perm *x, const orion_perm *y) {
  if (x == NULL || y == NULL)
    return x == y;
  return x == y || (x->n == y->n && x->seed == y->seed);
}

/* A dense array: slice k of dimension dim (every element whose key there
 * is k) moves to slice map[k].  Elements are copied in runs of
 * strides[dim] contiguous ones. */
static int remap_dense(orion_array *a, int dim, const int64_t *map,
                       orion_error *err) {
  size_t es = orion_type_size(a->type);
  int64_t run = a->strides[dim], n = a->dims[dim];
  int64_t outer = n > 0 ? a->nnz / (run * n) : 0, o, k;
  char *src = a->values;
  char *dst = orion_malloc(es * (size_t)(a->nnz ? a->nnz : 1));
  if (dst == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory remapping a "
                                              "dense array");
  for (o = 0; o < outer; o++)
    for (k = 0; k < n; k++)
      memcpy(dst + es * (size_t)((o * n + map[k]) * run),
             src + es * (size_t)((o * n + k) * run), es * (size_t)run);
  orion_free(a->values);
  a->values = dst;
  return 0;
}

int orion_array_remap(orion_array *a, int dim, const int64_t *map,
                      orion_error *err) {
  int64_t e;
  if (!a->sparse)
    return remap_dense(a, dim, map, err);
  for (e = 0; e < a->nnz; e++) {
    int64_t *k = a->keys + e * a->ndims + dim;
    *k = map[*k];
  }
  if (a->ragged && dim == 0) {
    a->ragged = 0; /* sorted again by the new rows */
    return orion_ragged_make(a, "remap", err);
  }
  return 0;
}
