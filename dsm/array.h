/* Distributed arrays as held by one process: dense (every element stored,
 * row-major) or sparse (a list of (key, value) elements).
 *
 * In the single-process engine the driver and its in-process executor share
 * one orion_array; a distributed executor holds the partitions of it.  An
 * array is reference counted: orion_array_retain/release, freed at zero.
 */
#ifndef ORION_DSM_ARRAY_H
#define ORION_DSM_ARRAY_H

#include <stdint.h>

#include "dsm/key.h"
#include "dsm/types.h"
#include "util/error.h"

typedef struct orion_array {
  int refs;
  int ndims;
  int sparse;
  int ragged; /* sparse 2-D array iterated by rows: (row, key) elements,
                 sorted by row (dsm/ragged.h) */
  orion_type type;
  int64_t dims[ORION_MAX_DIMS];
  int64_t strides[ORION_MAX_DIMS]; /* dense: row-major element strides */
  int64_t nnz;                     /* stored elements (dense: all) */
  int64_t cap;                     /* sparse: allocated elements */
  int64_t *keys;  /* sparse: nnz * ndims 0-based keys, element-major */
  void *values;   /* nnz values of `type` */
} orion_array;

/* A dense array of the given dims, zero-filled.  Returns NULL and fills err
 * on bad dims, overflow or out of memory.  The caller owns one reference. */
orion_array *orion_array_new_dense(int ndims, const int64_t *dims,
                                   orion_type type, orion_error *err);

/* An empty sparse array with ndims dimensions, all dims 0 (they grow with
 * pushed keys until orion_array_set_dims fixes them). */
orion_array *orion_array_new_sparse(int ndims, orion_type type,
                                    orion_error *err);

void orion_array_retain(orion_array *a);
/* Drops one reference; frees the array at zero.  NULL is ignored. */
void orion_array_release(orion_array *a);

/* Makes room for at least n elements in a sparse array. */
int orion_array_reserve(orion_array *a, int64_t n);

/* Appends an element to a sparse array.  keys are 0-based and non-negative;
 * dims grow to max(key)+1.  value points to one element of a->type. */
int orion_array_push(orion_array *a, const int64_t *keys, const void *value);

/* Sets the dims of a sparse array (e.g. from opts.dims); every stored key
 * must fit, else ORION_EKEYRANGE with err naming the element. */
int orion_array_set_dims(orion_array *a, const int64_t *dims, orion_error *err);

/* A deep copy with the same shape, keys and values (one reference). */
orion_array *orion_array_copy(const orion_array *a, orion_error *err);

/* Total number of positions (product of dims) or -1 on overflow. */
int64_t orion_array_positions(const orion_array *a);

/* Index of the stored element with 0-based key `keys`, or -1 when absent.
 * Dense: computed; sparse: a linear scan unless the array is sorted, see
 * orion_array_sort. */
int64_t orion_array_find(const orion_array *a, const int64_t *keys);

/* Makes keys and values (nnz elements each, from orion_malloc) the sparse
 * array's storage, freeing the old. */
void orion_array_adopt(orion_array *a, int64_t *keys, void *values);

/* Sorts a sparse array's elements by linear key (stable). */
int orion_array_sort(orion_array *a, orion_error *err);
/* True when a sparse array is sorted by linear key (dense: always). */
int orion_array_is_sorted(const orion_array *a);

/* Counts stored elements per bin of equal key width along dim: bin b covers
 * keys [b*w, (b+1)*w) with w = ceil(dims[dim]/bins).  counts has `bins`
 * entries. */
int orion_array_histogram(const orion_array *a, int dim, int bins,
                          int64_t *counts);

/* Splits a sparse array into (rest, held) with each element independently
 * held out with probability `fraction`, deterministically from seed.  Both
 * keep a's dims. */
int orion_array_split(const orion_array *a, double fraction, uint64_t seed,
                      orion_array **rest, orion_array **held,
                      orion_error *err);

#endif
