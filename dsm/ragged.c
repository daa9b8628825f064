/* Ragged arrays (dsm/ragged.h): making one from a sparse 2-D array, and
 * finding its rows in an element range. */
#include "dsm/ragged.h"

#include <string.h>

#include "util/alloc.h"

/* True when every element's row is at least the one before it. */
static int rows_ascend(const orion_array *a) {
  int64_t e;
  for (e = 1; e < a->nnz; e++)
    if (a->keys[2 * e] < a->keys[2 * (e - 1)])
      return 0;
  return 1;
}

/* A stable counting sort of the elements by row. */
static int sort_rows(orion_array *a, orion_error *err) {
  size_t es = orion_type_size(a->type);
  int64_t nrows = a->dims[0], e, r;
  int64_t *start = orion_calloc((size_t)nrows + 1, sizeof *start);
  int64_t *keys = orion_malloc((size_t)a->nnz * 2 * sizeof *keys);
  char *values = orion_malloc((size_t)a->nnz * es + 1);
  if (start == NULL || keys == NULL || values == NULL) {
    orion_free(start);
    orion_free(keys);
    orion_free(values);
    return orion_error_set(err, ORION_ENOMEM,
                           "out of memory sorting a ragged array's rows");
  }
  for (e = 0; e < a->nnz; e++)
    start[a->keys[2 * e] + 1]++;
  for (r = 0; r < nrows; r++)
    start[r + 1] += start[r];
  for (e = 0; e < a->nnz; e++) {
    int64_t to = start[a->keys[2 * e]]++;
    keys[2 * to] = a->keys[2 * e];
    keys[2 * to + 1] = a->keys[2 * e + 1];
    memcpy(values + to * es, (char *)a->values + e * es, es);
  }
  orion_free(start);
  orion_array_adopt(a, keys, values);
  return 0;
}

int orion_ragged_make(orion_array *a, const char *what, orion_error *err) {
  if (!a->sparse || a->ndims != 2)
    return orion_error_set(err, ORION_EINVAL,
                           "%s: a ragged array is made from a sparse array "
                           "with 2 dims (row, key), not a %s one with %d",
                           what, a->sparse ? "sparse" : "dense", a->ndims);
  if (!rows_ascend(a)) {
    int rc = sort_rows(a, err);
    if (rc != 0)
      return rc;
  }
  a->ragged = 1;
  return 0;
}

int64_t orion_ragged_row_end(const orion_array *a, int64_t e, int64_t hi) {
  int64_t row = a->keys[2 * e];
  for (e++; e < hi && a->keys[2 * e] == row; e++)
    ;
  return e;
}

int64_t orion_ragged_count_rows(const orion_array *a, int64_t lo,
                                int64_t hi) {
  int64_t n = 0;
  while (lo < hi) {
    lo = orion_ragged_row_end(a, lo, hi);
    n++;
  }
  return n;
}
