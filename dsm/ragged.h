/* Ragged arrays: a sparse 2-D array whose elements are (row, key) -> value,
 * iterated by rows.  Each row's pairs are contiguous and the rows ascend,
 * so an element range that starts and ends on row edges is CSR without an
 * offsets array: a row is the run of elements with the same row key.  The
 * flag is orion_array.ragged; arrays, partitions, files and the wire move
 * a ragged array as the sparse array it is.
 */
#ifndef ORION_DSM_RAGGED_H
#define ORION_DSM_RAGGED_H

#include <stdint.h>

#include "dsm/array.h"
#include "util/error.h"

/* Makes the sparse 2-D array a ragged one: sorts its elements by row
 * (stable, so each row keeps its pairs' order) unless they already are,
 * and sets a->ragged.  ORION_EINVAL (err says why) for a dense array or
 * one with other than 2 dims. */
int orion_ragged_make(orion_array *a, const char *what, orion_error *err);

/* The end of the row that starts at element e, at most hi. */
int64_t orion_ragged_row_end(const orion_array *a, int64_t e, int64_t hi);

/* The number of rows that have at least one pair in elements [lo, hi). */
int64_t orion_ragged_count_rows(const orion_array *a, int64_t lo, int64_t hi);

#endif
