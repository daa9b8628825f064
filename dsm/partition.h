/* Partitions of an array into blocks.
 *
 * A sparse array is partitioned by reordering its elements (stably) so that
 * the elements of each block are contiguous: block b holds elements
 * [start[b], start[b+1]).  Blocks form an n0 x n1 grid over two dimensions
 * (n1 = 1 for a 1-D partition); block id = p*n1 + q.  A dense array is
 * partitioned by ranges of its first dimension, which are contiguous in
 * row-major order already.
 */
#ifndef ORION_DSM_PARTITION_H
#define ORION_DSM_PARTITION_H

#include <stdint.h>

#include "dsm/array.h"

typedef struct orion_blocks {
  int n0, n1;      /* grid shape */
  int d0, d1;      /* cut dimensions (d1 = -1 for 1-D) */
  int64_t *start;  /* n0*n1+1 element offsets, owned */
} orion_blocks;

/* Partitions a: dimension d0 cut by bounds0 (n0+1 keys), and, when d1 >= 0,
 * dimension d1 cut by bounds1 (n1+1 keys).  Sparse arrays are reordered in
 * place (stable within a block).  Dense arrays accept only d0 = 0, d1 = -1.
 * out->start is allocated here; free it with orion_blocks_free. */
int orion_partition(orion_array *a, int d0, int n0, const int64_t *bounds0,
                    int d1, int n1, const int64_t *bounds1, orion_blocks *out,
                    orion_error *err);

/* Reorders sparse a (stably) so that elements with block id bid[e] (in
 * [0, nblocks)) are contiguous, in block order; out gets nblocks x 1 blocks
 * with d0 = d1 = -1. */
int orion_partition_by_id(orion_array *a, int nblocks, const int *bid,
                          orion_blocks *out, orion_error *err);

void orion_blocks_free(orion_blocks *b);

#endif
