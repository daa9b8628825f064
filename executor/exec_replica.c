/* orion-executor's array copies: the dense replicas of the driver's arrays
 * (only the parts the driver sent are meaningful) and the blocks of a
 * sparse iterated array, as the driver sent them; FORGET, which drops
 * them; and installing the runs of elements that carry their data on the
 * wire (RUN_BLOCK, LOAD_BODY's shard rows).
 * Compute thread.
 */
#include "config.h"

#include <string.h>

#include "executor/exec_state.h"
#include "dsm/array.h"
#include "dsm/msg.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/error.h"

/* ---- dense replicas ----------------------------------------------------- */

replica *orion__replica_find(exec_state *x, int64_t id) {
  int i;
  for (i = 0; i < x->nreps; i++)
    if (x->reps[i].id == id)
      return &x->reps[i];
  return NULL;
}

/* Drops the replica of array id and the block copies of it. */
static void replica_drop(exec_state *x, int64_t id) {
  replica *r = orion__replica_find(x, id);
  int i;
  if (r != NULL) {
    orion_array_release(r->a);
    *r = x->reps[--x->nreps];
  }
  for (i = 0; i < x->nblocks;)
    if (x->blocks[i].array == id) {
      orion_array_release(x->blocks[i].a);
      x->blocks[i] = x->blocks[--x->nblocks];
    } else {
      i++;
    }
}

static int same_shape(const orion_array *a, orion_type type, int ndims,
                      const int64_t *dims) {
  int i;
  if (a->type != type || a->ndims != ndims || a->sparse)
    return 0;
  for (i = 0; i < ndims; i++)
    if (a->dims[i] != dims[i])
      return 0;
  return 1;
}

orion_array *orion__replica_for(exec_state *x, int64_t id, orion_type type,
                                int ndims, const int64_t *dims,
                                orion_error *err) {
  replica *r = orion__replica_find(x, id), *nr;
  orion_array *a;
  if (r != NULL && same_shape(r->a, type, ndims, dims))
    return r->a;
  if (r != NULL)
    replica_drop(x, id);
  a = orion_array_new_dense(ndims, dims, type, err);
  if (a == NULL)
    return NULL;
  nr = orion_realloc(x->reps, sizeof *nr * (size_t)(x->nreps + 1));
  if (nr == NULL) {
    orion_array_release(a);
    orion_error_set(err, ORION_ENOMEM, "out of memory");
    return NULL;
  }
  x->reps = nr;
  x->reps[x->nreps].id = id;
  x->reps[x->nreps].a = a;
  x->nreps++;
  return a;
}

/* ---- blocks of the sparse iterated array -------------------------------- */

blockcopy *orion__block_find(exec_state *x, int64_t array, int64_t block) {
  int i;
  for (i = 0; i < x->nblocks; i++)
    if (x->blocks[i].array == array && x->blocks[i].block == block)
      return &x->blocks[i];
  return NULL;
}

/* Drops the copies of array's blocks but `block` that overlap elements
 * [first, first + n). */
static void drop_overlapping(exec_state *x, int64_t array, int64_t block,
                             int64_t first, int64_t n) {
  int i;
  for (i = 0; i < x->nblocks;) {
    blockcopy *bc = &x->blocks[i];
    if (bc->array == array && bc->block != block && n > 0 &&
        bc->a->nnz > 0 && bc->first < first + n &&
        first < bc->first + bc->a->nnz) {
      orion_array_release(bc->a);
      *bc = x->blocks[--x->nblocks];
    } else {
      i++;
    }
  }
}

orion_array *orion__block_store(exec_state *x, int64_t block, int64_t first,
                                int64_t n, const char *keys,
                                const char *values, orion_error *err) {
  blockcopy *bc;
  orion_array *a = orion_array_new_sparse(x->iter_ndims, x->iter_type, err);
  size_t esz = orion_type_size(x->iter_type);
  int i;
  if (a == NULL)
    return NULL;
  drop_overlapping(x, x->iter_id, block, first, n);
  bc = orion__block_find(x, x->iter_id, block);
  if (orion_array_reserve(a, n > 0 ? n : 1) != 0) {
    orion_array_release(a);
    orion_error_set(err, ORION_ENOMEM, "out of memory for a block");
    return NULL;
  }
  if (n > 0) { /* an empty block's lists may be NULL */
    memcpy(a->keys, keys, (size_t)n * (size_t)x->iter_ndims * sizeof(int64_t));
    memcpy(a->values, values, (size_t)n * esz);
  }
  a->nnz = n;
  for (i = 0; i < x->iter_ndims; i++)
    a->dims[i] = x->iter_dims[i];
  if (bc == NULL) {
    blockcopy *nb =
        orion_realloc(x->blocks, sizeof *nb * (size_t)(x->nblocks + 1));
    if (nb == NULL) {
      orion_array_release(a);
      orion_error_set(err, ORION_ENOMEM, "out of memory");
      return NULL;
    }
    x->blocks = nb;
    bc = &x->blocks[x->nblocks++];
    bc->array = x->iter_id;
    bc->block = block;
  } else {
    orion_array_release(bc->a);
  }
  bc->a = a;
  bc->first = first;
  return a;
}

/* ---- FORGET ------------------------------------------------------------- */

/* FORGET (dsm/msg.h).  Only the driver sends it, and it has no answer:
 * a malformed one is fatal. */
int orion__replica_forget(exec_state *x, job *j) {
  orion_msg_forget m;
  orion_error err;
  int64_t k;
  orion_error_clear(&err);
  if (orion_msg_forget_decode(j->payload, j->len, &m, &err) != 0)
    orion__exec_die(x, "the driver sent a malformed FORGET frame: %s",
                    err.msg);
  for (k = 0; k < m.n; k++) {
    orion__shard_drop(x, m.ids[k]);
    replica_drop(x, m.ids[k]);
  }
  orion_msg_forget_free(&m);
  return 0;
}
