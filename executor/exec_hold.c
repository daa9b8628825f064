/* orion-executor's held buffered writes: the writes of flush = "loop"
 * buffers to this executor's shards, its own and its peers', each tagged
 * with the block that made them.  They are applied only once every block
 * of the loop has sent its writes (the driver's SHARD_PULL comes after
 * every executor's LOOP_DONE, and a LOOP_DONE after the owners
 * acknowledged its writes), block by block in ascending block number, so
 * that a float "add" target gets the same sums in the same order on any
 * number of executors.  Here too: applying buffered writes to the chunks
 * this executor owns and publishing them (orion__shard_apply_own), at once
 * or when held.  Compute thread.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "executor/exec_state.h"
#include "dsm/shard.h"
#include "executor/exec.h"
#include "util/alloc.h"
#include "util/error.h"

typedef struct held_items {
  int64_t block, buffer, seq;
  orion_pend_item *items;
  int64_t n;
} held_items;

void orion__hold_items(exec_state *x, int64_t buffer, int64_t block,
                       const orion_pend_item *items, int64_t n) {
  held_items *h;
  if (n == 0)
    return;
  if (x->nheld == x->capheld) {
    int64_t cap = x->capheld > 0 ? 2 * x->capheld : 16;
    held_items *nv = orion_realloc(x->held, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      orion__exec_die(x, "out of memory holding buffered writes");
    x->held = nv;
    x->capheld = cap;
  }
  h = &x->held[x->nheld];
  h->items = orion_malloc(sizeof *items * (size_t)n);
  if (h->items == NULL)
    orion__exec_die(x, "out of memory holding buffered writes");
  memcpy(h->items, items, sizeof *items * (size_t)n);
  h->n = n;
  h->block = block;
  h->buffer = buffer;
  h->seq = x->nheld++;
  /* Counted now, so that this run's LOOP_DONE reports them. */
  pthread_mutex_lock(&x->mu);
  x->shard_items += (uint64_t)n;
  pthread_mutex_unlock(&x->mu);
}

static int by_block(const void *pa, const void *pb) {
  const held_items *a = pa, *b = pb;
  if (a->block != b->block)
    return a->block < b->block ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void orion__hold_apply(exec_state *x) {
  orion_error err;
  int64_t k;
  orion_error_clear(&err);
  if (x->nheld > 1)
    qsort(x->held, (size_t)x->nheld, sizeof *x->held, by_block);
  for (k = 0; k < x->nheld && !x->failed; k++) {
    held_items *h = &x->held[k];
    orion_shard *sh = orion__shard_of_buffer(x, h->buffer);
    if (sh != NULL &&
        orion__shard_apply_own(x, sh, h->buffer, h->items, h->n, 0, -1, &err) !=
            0) {
      x->failed = 1;
      orion__exec_post_error(x, -1, err.msg);
    }
  }
  orion__hold_drop(x);
}

void orion__hold_drop(exec_state *x) {
  int64_t k;
  for (k = 0; k < x->nheld; k++)
    orion_free(x->held[k].items);
  orion_free(x->held);
  x->held = NULL;
  x->nheld = x->capheld = 0;
}

int orion__shard_apply_own(exec_state *x, orion_shard *sh, int64_t buffer,
                           const orion_pend_item *items, int64_t n, int count,
                           int from, orion_error *err) {
  int64_t i, k, start = 0, end = -1;
  const int64_t *hids;
  int rc, h, nh;
  if (n == 0) {
    if (from >= 0) {
      pthread_mutex_lock(&x->mu);
      orion__ryw_took(x, from);
      pthread_mutex_unlock(&x->mu);
    }
    return 0;
  }
  /* Our own writes, or a peer's checked against our shard (peer_flush). */
  rc = orion_exec_buffer_apply_valid(x->ex, buffer, items, n, err);
  nh = orion_exec_buffer_helpers(x->ex, buffer, &hids);
  pthread_mutex_lock(&x->mu);
  /* Only the chunks the items touched (a managed send's few largest
   * writes are scattered over the shard: comparing every chunk between
   * its first and last key cost a quarter of an LDA executor). */
  for (i = 0; i < n; i++) {
    if (items[i].key >= start && items[i].key < end)
      continue; /* in the chunk published last */
    k = orion_shard_chunk_of(sh, items[i].key);
    start = orion_shard_chunk_key(sh, k);
    end = orion_shard_chunk_key(sh, k + 1);
    orion_shard_publish(sh, k, k + 1, 0, &x->vcounter);
    for (h = 0; h < nh; h++) { /* sharded with the target: the same chunks */
      orion_shard *hs = orion__shard_find(x, hids[h]);
      if (hs != NULL && hs->run == x->run)
        orion_shard_publish(hs, k, k + 1, 0, &x->vcounter);
    }
  }
  if (from >= 0)
    orion__ryw_took(x, from);
  if (count)
    x->shard_items += (uint64_t)n;
  pthread_mutex_unlock(&x->mu);
  orion__exec_wake(x);
  return rc;
}
