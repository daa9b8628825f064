#include "dsm/partition.h"

#include <string.h>

#include "util/alloc.h"

static int part_of(const int64_t *bounds, int n, int64_t k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (bounds[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int check_bounds(const orion_array *a, int d, int n,
                        const int64_t *bounds, orion_error *err) {
  int p;
  if (d < 0 || d >= a->ndims || n < 1)
    return orion_error_set(err, ORION_EINVAL, "bad partition dimension %d",
                           d + 1);
  if (bounds[0] != 0 || bounds[n] != a->dims[d])
    return orion_error_set(err, ORION_EINVAL,
                           "partition bounds must cover dimension %d", d + 1);
  for (p = 0; p < n; p++)
    if (bounds[p] > bounds[p + 1])
      return orion_error_set(err, ORION_EINVAL,
                             "partition bounds must be increasing");
  return 0;
}

int orion_partition(orion_array *a, int d0, int n0, const int64_t *bounds0,
                    int d1, int n1, const int64_t *bounds1, orion_blocks *out,
                    orion_error *err) {
  int64_t nb, e;
  int *bid = NULL;
  int rc, b;
  memset(out, 0, sizeof *out);
  if (d1 < 0)
    n1 = 1;
  rc = check_bounds(a, d0, n0, bounds0, err);
  if (rc == 0 && d1 >= 0)
    rc = check_bounds(a, d1, n1, bounds1, err);
  if (rc != 0)
    return rc;
  nb = (int64_t)n0 * n1;
  if (!a->sparse) {
    if (d0 != 0 || d1 >= 0)
      return orion_error_set(err, ORION_EINVAL,
                             "a dense array is partitioned by its first "
                             "dimension only");
    out->start = orion_calloc((size_t)nb + 1, sizeof(int64_t));
    if (out->start == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    for (b = 0; b <= n0; b++)
      out->start[b] = bounds0[b] * a->strides[0];
  } else {
    bid = orion_malloc(sizeof *bid * (size_t)(a->nnz ? a->nnz : 1));
    if (bid == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory partitioning");
    for (e = 0; e < a->nnz; e++) {
      const int64_t *k = a->keys + e * a->ndims;
      int p = part_of(bounds0, n0, k[d0]);
      int q = d1 >= 0 ? part_of(bounds1, n1, k[d1]) : 0;
      bid[e] = p * n1 + q;
    }
    rc = orion_partition_by_id(a, (int)nb, bid, out, err);
    orion_free(bid);
    if (rc != 0)
      return rc;
  }
  out->n0 = n0;
  out->n1 = n1;
  out->d0 = d0;
  out->d1 = d1;
  return 0;
}

int orion_partition_by_id(orion_array *a, int nblocks, const int *bid,
                          orion_blocks *out, orion_error *err) {
  int64_t e, *count = NULL, *keys = NULL;
  char *values = NULL;
  size_t es = orion_type_size(a->type);
  int b, grouped;
  memset(out, 0, sizeof *out);
  if (!a->sparse || nblocks < 1)
    return orion_error_set(err, ORION_EINVAL,
                           "only a sparse array is partitioned by block ids");
  out->start = orion_calloc((size_t)nblocks + 1, sizeof(int64_t));
  out->n0 = nblocks;
  out->n1 = 1;
  out->d0 = out->d1 = -1;
  /* Counting sort by block id: count, prefix-sum, scatter (stable).
   * Elements already grouped (rows in file order cut into row ranges: a
   * loaded data set's usual case) stay where they are: the sort would be
   * the identity, and the copy of the whole array is saved. */
  for (e = 1; e < a->nnz && bid[e - 1] <= bid[e]; e++)
    ;
  grouped = e >= a->nnz;
  count = orion_calloc((size_t)nblocks + 1, sizeof *count);
  if (!grouped) {
    keys = orion_malloc(sizeof *keys * (size_t)(a->nnz ? a->nnz : 1) *
                        (size_t)a->ndims);
    values = orion_malloc(es * (size_t)(a->nnz ? a->nnz : 1));
  }
  if (out->start == NULL || count == NULL ||
      (!grouped && (keys == NULL || values == NULL))) {
    orion_free(count);
    orion_free(keys);
    orion_free(values);
    orion_blocks_free(out);
    return orion_error_set(err, ORION_ENOMEM, "out of memory partitioning");
  }
  for (e = 0; e < a->nnz; e++) {
    orion_assert(bid[e] >= 0 && bid[e] < nblocks);
    count[bid[e] + 1]++;
  }
  for (b = 0; b < nblocks; b++)
    count[b + 1] += count[b];
  memcpy(out->start, count, sizeof *count * (size_t)(nblocks + 1));
  if (grouped) {
    orion_free(count);
    return 0;
  }
  for (e = 0; e < a->nnz; e++) {
    int64_t dst = count[bid[e]]++;
    memcpy(keys + dst * a->ndims, a->keys + e * a->ndims,
           sizeof *keys * (size_t)a->ndims);
    memcpy(values + dst * (int64_t)es, (char *)a->values + e * (int64_t)es,
           es);
  }
  orion_free(a->keys);
  orion_free(a->values);
  a->keys = keys;
  a->values = values;
  a->cap = a->nnz ? a->nnz : 1;
  orion_free(count);
  return 0;
}

void orion_blocks_free(orion_blocks *b) {
  orion_free(b->start);
  b->start = NULL;
}
