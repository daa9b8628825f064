/* The end of a block on an executor: its accumulator partials and its
 * flush = "loop" buffers' writes, kept apart and tagged with the block
 * (executor/exec_block.h). */
#include "executor/exec_block.h"

#include <stdlib.h>
#include <string.h>

#include "dsm/types.h"
#include "executor/exec.h"

#include "executor/exec_apply.h"
#include "executor/exec_elem.h"
#include "executor/exec_int.h"
#include "util/alloc.h"

static int push(struct orion_exec *ex, int64_t block, acc_slot *s) {
  if (ex->nbacc == ex->capbacc) {
    int64_t cap = ex->capbacc > 0 ? 2 * ex->capbacc : 16;
    orion_block_acc *nv = orion_realloc(ex->bacc, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    ex->bacc = nv;
    ex->capbacc = cap;
  }
  ex->bacc[ex->nbacc].block = block;
  ex->bacc[ex->nbacc].id = s->id;
  ex->bacc[ex->nbacc].val = s->val;
  ex->nbacc++;
  memset(&s->val, 0, sizeof s->val);
  return 0;
}

/* Takes b's pending writes into the kept list, tagged with block. */
static int keep_items(struct orion_exec *ex, int64_t block, exec_buffer *b) {
  block_items *k;
  int rc;
  if (ex->nbkept == ex->capbkept) {
    int64_t cap = ex->capbkept > 0 ? 2 * ex->capbkept : 16;
    block_items *nv = orion_realloc(ex->bkept, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    ex->bkept = nv;
    ex->capbkept = cap;
  }
  k = &ex->bkept[ex->nbkept];
  rc = orion_wbuf_take(&b->pend, &k->items, &k->n);
  if (rc != 0)
    return rc;
  k->block = block;
  k->buffer = b->id;
  k->seq = ex->nbkept++;
  return 0;
}

int orion_exec_end_block(struct orion_exec *ex, int64_t block,
                         orion_error *err) {
  int i;
  orion__exec_managed_block_end(ex);
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].val.has && push(ex, block, &ex->accs[i]) != 0)
      return orion_error_set(err, ORION_ENOMEM,
                             "executor %d: out of memory keeping block "
                             "%lld's accumulators",
                             ex->id, (long long)block);
  /* A flush = "loop" buffer's writes of this block, kept apart: they are
   * applied at the loop's end block by block, so that a float "add" sums
   * the same blocks' values in the same order on any number of
   * executors. */
  for (i = 0; i < ex->nbufs; i++) {
    exec_buffer *b = ex->bufs[i];
    if (b->flush == ORION_FLUSH_LOOP && b->target != NULL &&
        orion_wbuf_pending(&b->pend) > 0 && keep_items(ex, block, b) != 0)
      return orion_error_set(err, ORION_ENOMEM,
                             "executor %d: buffer '%s': out of memory "
                             "keeping block %lld's writes",
                             ex->id, b->name, (long long)block);
  }
  return 0;
}

static int by_block(const void *pa, const void *pb) {
  const block_items *a = pa, *b = pb;
  if (a->block != b->block)
    return a->block < b->block ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void drop_kept(struct orion_exec *ex) {
  int64_t k;
  for (k = 0; k < ex->nbkept; k++)
    orion_free(ex->bkept[k].items);
  orion_free(ex->bkept);
  ex->bkept = NULL;
  ex->nbkept = ex->capbkept = 0;
}

int orion__exec_flush_kept(struct orion_exec *ex, orion_error *err) {
  int64_t k;
  int rc = 0;
  if (ex->nbkept > 1)
    qsort(ex->bkept, (size_t)ex->nbkept, sizeof *ex->bkept, by_block);
  for (k = 0; k < ex->nbkept && rc == 0; k++) {
    const block_items *e = &ex->bkept[k];
    exec_buffer *b = orion__exec_find_buffer(ex, e->buffer);
    if (b == NULL || b->target == NULL)
      continue; /* unbound since */
    if (ex->sink != NULL)
      rc = ex->sink(ex->sink_ud, b->id, orion_type_is_int(b->target->type),
                    e->items, e->n, e->block, err);
    else
      rc = orion__exec_apply_taken(ex, b, e->items, e->n, err);
  }
  drop_kept(ex);
  return rc;
}

int orion_exec_send_block_writes(struct orion_exec *ex, int64_t block,
                                 int (*now)(void *ud, int64_t buffer),
                                 void *ud, orion_error *err) {
  int64_t k, keep = 0;
  int rc = 0;
  if (ex->sink == NULL)
    return 0;
  for (k = 0; k < ex->nbkept; k++) {
    block_items *e = &ex->bkept[k];
    exec_buffer *b = orion__exec_find_buffer(ex, e->buffer);
    if (rc == 0 && e->block == block && b != NULL && b->target != NULL &&
        now(ud, e->buffer)) {
      rc = ex->sink(ex->sink_ud, b->id, orion_type_is_int(b->target->type),
                    e->items, e->n, e->block, err);
      orion_free(e->items);
      continue;
    }
    ex->bkept[keep++] = *e; /* in their order: seq still sorts them */
  }
  ex->nbkept = keep;
  return rc;
}

int orion_exec_take_block_accs(struct orion_exec *ex, orion_block_acc **out,
                               int64_t *n) {
  int i;
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].val.has && push(ex, -1, &ex->accs[i]) != 0)
      return ORION_ENOMEM;
  *out = ex->nbacc > 0 ? ex->bacc : NULL;
  *n = ex->nbacc;
  if (ex->nbacc == 0)
    orion_free(ex->bacc);
  ex->bacc = NULL;
  ex->nbacc = ex->capbacc = 0;
  return 0;
}

void orion__exec_block_reset(struct orion_exec *ex) {
  drop_kept(ex);
  ex->mblocks = 0;
  memset(&ex->mstats, 0, sizeof ex->mstats);
  orion_free(ex->bacc);
  ex->bacc = NULL;
  ex->nbacc = ex->capbacc = 0;
}
