#include "dsm/array.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/rng.h"

static orion_array *array_alloc(int ndims, orion_type type, int sparse,
                                orion_error *err) {
  orion_array *a;
  if (ndims < 1 || ndims > ORION_MAX_DIMS) {
    orion_error_set(err, ORION_EDIMS, "an array has 1 to %d dimensions, not %d",
                    ORION_MAX_DIMS, ndims);
    return NULL;
  }
  a = orion_calloc(1, sizeof *a);
  if (a == NULL) {
    orion_error_set(err, ORION_ENOMEM, "out of memory");
    return NULL;
  }
  a->refs = 1;
  a->ndims = ndims;
  a->sparse = sparse;
  a->type = type;
  return a;
}

orion_array *orion_array_new_dense(int ndims, const int64_t *dims,
                                   orion_type type, orion_error *err) {
  orion_array *a = array_alloc(ndims, type, 0, err);
  int64_t total;
  size_t bytes;
  int rc, d;
  if (a == NULL)
    return NULL;
  for (d = 0; d < ndims; d++)
    a->dims[d] = dims[d];
  rc = orion_key_strides(ndims, dims, a->strides, &total);
  if (rc != 0) {
    orion_error_set(err, rc, "bad dimensions for a dense array: %s",
                    orion_strerror(rc));
    orion_free(a);
    return NULL;
  }
  if (orion_mul_overflow((size_t)total, orion_type_size(type), &bytes)) {
    orion_error_set(err, ORION_EOVERFLOW, "dense array too large");
    orion_free(a);
    return NULL;
  }
  a->values = orion_calloc(1, bytes ? bytes : 1);
  if (a->values == NULL) {
    orion_error_set(err, ORION_ENOMEM,
                    "out of memory allocating a dense array of %zu bytes",
                    bytes);
    orion_free(a);
    return NULL;
  }
  a->nnz = total;
  a->cap = total;
  return a;
}

orion_array *orion_array_new_sparse(int ndims, orion_type type,
                                    orion_error *err) {
  return array_alloc(ndims, type, 1, err);
}

void orion_array_retain(orion_array *a) { a->refs++; }

void orion_array_release(orion_array *a) {
  if (a == NULL || --a->refs > 0)
    return;
  orion_free(a->keys);
  orion_free(a->values);
  orion_free(a);
}

int orion_array_reserve(orion_array *a, int64_t n) {
  int64_t *keys;
  void *values;
  size_t kb, vb;
  if (!a->sparse || n <= a->cap)
    return 0;
  if (orion_mul_overflow((size_t)n, (size_t)a->ndims * sizeof(int64_t), &kb) ||
      orion_mul_overflow((size_t)n, orion_type_size(a->type), &vb))
    return ORION_EOVERFLOW;
  keys = orion_realloc(a->keys, kb);
  if (keys == NULL)
    return ORION_ENOMEM;
  a->keys = keys;
  values = orion_realloc(a->values, vb);
  if (values == NULL)
    return ORION_ENOMEM;
  a->values = values;
  a->cap = n;
  return 0;
}

int orion_array_push(orion_array *a, const int64_t *keys, const void *value) {
  size_t es = orion_type_size(a->type);
  int d, rc;
  if (a->nnz == a->cap) {
    rc = orion_array_reserve(a, a->cap < 1024 ? 1024 : a->cap * 2);
    if (rc != 0)
      return rc;
  }
  for (d = 0; d < a->ndims; d++) {
    a->keys[a->nnz * a->ndims + d] = keys[d];
    if (keys[d] >= a->dims[d])
      a->dims[d] = keys[d] + 1;
  }
  memcpy((char *)a->values + (size_t)a->nnz * es, value, es);
  a->nnz++;
  return 0;
}

int orion_array_set_dims(orion_array *a, const int64_t *dims,
                         orion_error *err) {
  int64_t e;
  int d;
  for (d = 0; d < a->ndims; d++)
    if (dims[d] <= 0)
      return orion_error_set(err, ORION_EDIMS, "dimension %d must be positive",
                             d + 1);
  if (!a->sparse) {
    for (d = 0; d < a->ndims; d++)
      if (dims[d] != a->dims[d])
        return orion_error_set(err, ORION_EDIMS,
                               "cannot change the dims of a dense array");
    return 0;
  }
  for (e = 0; e < a->nnz; e++)
    for (d = 0; d < a->ndims; d++)
      if (a->keys[e * a->ndims + d] >= dims[d])
        return orion_error_set(err, ORION_EKEYRANGE,
                               "element %lld has key %lld in dimension %d, "
                               "above its size %lld",
                               (long long)e + 1,
                               (long long)a->keys[e * a->ndims + d] + 1, d + 1,
                               (long long)dims[d]);
  for (d = 0; d < a->ndims; d++)
    a->dims[d] = dims[d];
  return 0;
}

orion_array *orion_array_copy(const orion_array *a, orion_error *err) {
  orion_array *c;
  size_t es = orion_type_size(a->type);
  if (!a->sparse) {
    c = orion_array_new_dense(a->ndims, a->dims, a->type, err);
    if (c != NULL)
      memcpy(c->values, a->values, (size_t)a->nnz * es);
    return c;
  }
  c = orion_array_new_sparse(a->ndims, a->type, err);
  if (c == NULL)
    return NULL;
  if (orion_array_reserve(c, a->nnz > 0 ? a->nnz : 1) != 0) {
    orion_array_release(c);
    orion_error_set(err, ORION_ENOMEM, "out of memory copying an array");
    return NULL;
  }
  memcpy(c->keys, a->keys, (size_t)a->nnz * a->ndims * sizeof(int64_t));
  memcpy(c->values, a->values, (size_t)a->nnz * es);
  memcpy(c->dims, a->dims, sizeof c->dims);
  c->nnz = a->nnz;
  c->ragged = a->ragged;
  return c;
}

int64_t orion_array_positions(const orion_array *a) {
  int64_t total;
  if (orion_key_strides(a->ndims, a->dims, NULL, &total) != 0)
    return -1;
  return total;
}

static int64_t linear_of(const orion_array *a, int64_t e) {
  int64_t lin = 0;
  int d;
  for (d = 0; d < a->ndims; d++)
    lin = lin * a->dims[d] + a->keys[e * a->ndims + d];
  return lin;
}

int orion_array_is_sorted(const orion_array *a) {
  int64_t e;
  if (!a->sparse)
    return 1;
  for (e = 1; e < a->nnz; e++)
    if (linear_of(a, e - 1) > linear_of(a, e))
      return 0;
  return 1;
}

int64_t orion_array_find(const orion_array *a, const int64_t *keys) {
  int64_t lin, lo, hi, e;
  int d;
  for (d = 0; d < a->ndims; d++)
    if (keys[d] < 0 || keys[d] >= a->dims[d])
      return -1;
  if (!a->sparse) {
    lin = 0;
    for (d = 0; d < a->ndims; d++)
      lin += keys[d] * a->strides[d];
    return lin;
  }
  if (orion_key_linearize(a->ndims, a->dims, keys, &lin) != 0)
    return -1;
  if (orion_array_is_sorted(a)) {
    lo = 0;
    hi = a->nnz;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (linear_of(a, mid) < lin)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < a->nnz && linear_of(a, lo) == lin ? lo : -1;
  }
  for (e = 0; e < a->nnz; e++)
    if (linear_of(a, e) == lin)
      return e;
  return -1;
}

typedef struct {
  int64_t lin;
  int64_t idx;
} sort_item;

static int sort_cmp(const void *x, const void *y) {
  const sort_item *a = x, *b = y;
  if (a->lin != b->lin)
    return a->lin < b->lin ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int orion_array_sort(orion_array *a, orion_error *err) {
  sort_item *items;
  int64_t *keys;
  char *values;
  size_t es = orion_type_size(a->type);
  int64_t e;
  if (!a->sparse || orion_array_is_sorted(a))
    return 0;
  if (orion_array_positions(a) < 0)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "array too large to linearise its keys");
  items = orion_malloc((size_t)a->nnz * sizeof *items);
  keys = orion_malloc((size_t)a->nnz * a->ndims * sizeof *keys);
  values = orion_malloc((size_t)a->nnz * es);
  if (items == NULL || keys == NULL || values == NULL) {
    orion_free(items);
    orion_free(keys);
    orion_free(values);
    return orion_error_set(err, ORION_ENOMEM, "out of memory sorting");
  }
  for (e = 0; e < a->nnz; e++) {
    items[e].lin = linear_of(a, e);
    items[e].idx = e;
  }
  qsort(items, (size_t)a->nnz, sizeof *items, sort_cmp);
  for (e = 0; e < a->nnz; e++) {
    memcpy(keys + e * a->ndims, a->keys + items[e].idx * a->ndims,
           (size_t)a->ndims * sizeof *keys);
    memcpy(values + e * es, (char *)a->values + items[e].idx * es, es);
  }
  orion_free(items);
  orion_array_adopt(a, keys, values);
  return 0;
}

void orion_array_adopt(orion_array *a, int64_t *keys, void *values) {
  orion_free(a->keys);
  orion_free(a->values);
  a->keys = keys;
  a->values = values;
  a->cap = a->nnz;
}

int orion_array_histogram(const orion_array *a, int dim, int bins,
                          int64_t *counts) {
  int64_t width, e, k, n = a->dims[dim];
  int b;
  if (dim < 0 || dim >= a->ndims || bins < 1)
    return ORION_EINVAL;
  for (b = 0; b < bins; b++)
    counts[b] = 0;
  width = n > 0 ? (n + bins - 1) / bins : 1;
  for (e = 0; e < a->nnz; e++) {
    if (a->sparse) {
      k = a->keys[e * a->ndims + dim];
    } else {
      k = (e / a->strides[dim]) % a->dims[dim];
    }
    counts[k / width]++;
  }
  return 0;
}

int orion_array_split(const orion_array *a, double fraction, uint64_t seed,
                      orion_array **rest, orion_array **held,
                      orion_error *err) {
  orion_array *r, *h;
  orion_rng rng;
  size_t es = orion_type_size(a->type);
  int64_t e;
  int rc = 0;
  *rest = *held = NULL;
  if (!a->sparse)
    return orion_error_set(err, ORION_EINVAL, "split needs a sparse array");
  if (!(fraction >= 0.0 && fraction <= 1.0))
    return orion_error_set(err, ORION_EINVAL,
                           "split fraction must be in [0, 1]");
  r = orion_array_new_sparse(a->ndims, a->type, err);
  h = orion_array_new_sparse(a->ndims, a->type, err);
  if (r == NULL || h == NULL) {
    orion_array_release(r);
    orion_array_release(h);
    return ORION_ENOMEM;
  }
  orion_rng_seed(&rng, seed);
  for (e = 0; e < a->nnz && rc == 0; e++) {
    orion_array *dst = orion_rng_uniform(&rng) < fraction ? h : r;
    rc = orion_array_push(dst, a->keys + e * a->ndims,
                          (const char *)a->values + e * es);
  }
  if (rc != 0) {
    orion_array_release(r);
    orion_array_release(h);
    return orion_error_set(err, rc, "split: %s", orion_strerror(rc));
  }
  memcpy(r->dims, a->dims, sizeof r->dims);
  memcpy(h->dims, a->dims, sizeof h->dims);
  *rest = r;
  *held = h;
  return 0;
}
