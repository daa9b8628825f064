/* orion-executor's array copies: the dense replicas of the driver's arrays
 * (only the parts the driver sent are meaningful) and the blocks of a
 * sparse iterated array, as the driver sent them; FORGET, which drops
 * them; and the runs of elements that carry their data on the wire
 * (RUN_BLOCK, LOAD_BODY's shard rows, BLOCK_DONE, LOOP_DONE, SHARD_DATA).
 * Compute thread.
 */
#include "config.h"

#include <string.h>

#include "drivers/exec_state.h"
#include "dsm/array.h"
#include "dsm/proto.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* ---- element runs on the wire ------------------------------------------- */

void orion__elems_get(orion_reader *r, elem_run *run) {
  run->id = orion_pr_i64(r);
  run->first = orion_pr_i64(r);
  run->count = orion_pr_i64(r);
  run->data = orion_pr_bytes(r, &run->len);
}

void orion__elems_put(orion_buf *b, int64_t id, int64_t first, int64_t count,
                      const void *data, size_t esz) {
  orion_pw_i64(b, id);
  orion_pw_i64(b, first);
  orion_pw_i64(b, count);
  orion_pw_bytes(b, data, (size_t)count * esz);
}

int orion__elems_apply(orion_array *a, const elem_run *run) {
  size_t esz = orion_type_size(a->type);
  if (run->data == NULL || run->first < 0 || run->count < 0 ||
      run->first > a->nnz || run->count > a->nnz - run->first ||
      run->len != (size_t)run->count * esz)
    return ORION_EPARSE;
  memcpy((char *)a->values + (size_t)run->first * esz, run->data, run->len);
  return 0;
}

void orion__patch_u64(orion_buf *b, size_t at, uint64_t v) {
  int k;
  if (b->oom)
    return;
  for (k = 0; k < 8; k++)
    ((unsigned char *)b->data)[at + (size_t)k] = (unsigned char)(v >> (8 * k));
}

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

orion_array *orion__block_store(exec_state *x, int64_t block, int64_t n,
                                const char *keys, const char *values,
                                orion_error *err) {
  blockcopy *bc = orion__block_find(x, x->iter_id, block);
  orion_array *a = orion_array_new_sparse(x->iter_ndims, x->iter_type, err);
  size_t esz = orion_type_size(x->iter_type);
  int i;
  if (a == NULL)
    return NULL;
  if (orion_array_reserve(a, n > 0 ? n : 1) != 0) {
    orion_array_release(a);
    orion_error_set(err, ORION_ENOMEM, "out of memory for a block");
    return NULL;
  }
  memcpy(a->keys, keys, (size_t)n * (size_t)x->iter_ndims * sizeof(int64_t));
  memcpy(a->values, values, (size_t)n * esz);
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
  return a;
}

/* ---- FORGET ------------------------------------------------------------- */

/* FORGET: u64 n, then n array ids. */
int orion__replica_forget(exec_state *x, job *j) {
  orion_reader r;
  int64_t k, cnt;
  orion_reader_init(&r, j->payload, j->len);
  cnt = orion_pr_count(&r, 8);
  for (k = 0; k < cnt && !r.bad; k++) {
    int64_t id = orion_pr_i64(&r);
    orion__shard_drop(x, id);
    replica_drop(x, id);
  }
  return 0;
}
