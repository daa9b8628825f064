#include "dsm/plan.h"

#include "util/alloc.h"
#include "util/error.h"

int orion_split_equal(int64_t size, int dim, int nparts, orion_split *out) {
  int p;
  out->bounds = NULL;
  if (nparts < 1 || size < 0)
    return ORION_EINVAL;
  if (size > 0 && nparts > size)
    nparts = (int)size;
  if (size == 0)
    nparts = 1;
  out->bounds = orion_malloc(sizeof(int64_t) * (size_t)(nparts + 1));
  if (out->bounds == NULL)
    return ORION_ENOMEM;
  out->dim = dim;
  out->nparts = nparts;
  for (p = 0; p <= nparts; p++)
    out->bounds[p] = (int64_t)((__int128)size * p / nparts);
  return 0;
}

int orion_split_histogram(const orion_array *a, int dim, int nparts,
                          orion_split *out) {
  int64_t size = a->dims[dim], *counts, acc = 0, k;
  int p = 1, rc;
  out->bounds = NULL;
  if (dim < 0 || dim >= a->ndims || nparts < 1)
    return ORION_EINVAL;
  if (size == 0 || size > (int64_t)1 << 31 || a->nnz == 0)
    return orion_split_equal(size, dim, nparts, out);
  if (nparts > size)
    nparts = (int)size;
  counts = orion_malloc(sizeof *counts * (size_t)size);
  if (counts == NULL)
    return ORION_ENOMEM;
  rc = orion_array_histogram(a, dim, (int)size, counts);
  if (rc != 0) {
    orion_free(counts);
    return rc;
  }
  out->bounds = orion_malloc(sizeof(int64_t) * (size_t)(nparts + 1));
  if (out->bounds == NULL) {
    orion_free(counts);
    return ORION_ENOMEM;
  }
  out->dim = dim;
  out->nparts = nparts;
  out->bounds[0] = 0;
  /* Close part p once the running count reaches p/nparts of the total,
   * keeping at least one key for every remaining part. */
  for (k = 0; k < size && p < nparts; k++) {
    acc += counts[k];
    if ((__int128)acc * nparts >= (__int128)a->nnz * p ||
        size - (k + 1) == nparts - p)
      out->bounds[p++] = k + 1;
  }
  while (p < nparts) {
    out->bounds[p] = out->bounds[p - 1] + 1;
    p++;
  }
  out->bounds[nparts] = size;
  orion_free(counts);
  return 0;
}

int orion_split_find(const orion_split *s, int64_t k) {
  int lo = 0, hi = s->nparts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (s->bounds[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void orion_split_free(orion_split *s) {
  orion_free(s->bounds);
  s->bounds = NULL;
  s->nparts = 0;
}
