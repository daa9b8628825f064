/* orion-executor's table of sharded arrays (exec_state.h, x->shards):
 * a shard by its array's id or by a buffer that writes to it in this run,
 * and dropping one when its array is forgotten.  The messaging of shards
 * is exec_shard.c's.
 */
#include <pthread.h>
#include <stdint.h>

#include "executor/exec_state.h"
#include "dsm/shard.h"

orion_shard *orion__shard_find(exec_state *x, int64_t id) {
  int i;
  for (i = 0; i < x->nshards; i++)
    if (x->shards[i].id == id)
      return &x->shards[i];
  return NULL;
}

void orion__shard_drop(exec_state *x, int64_t id) {
  orion_shard *sh;
  pthread_mutex_lock(&x->mu);
  sh = orion__shard_find(x, id);
  if (sh != NULL) {
    orion_shard_clear(sh);
    *sh = x->shards[--x->nshards];
  }
  pthread_mutex_unlock(&x->mu);
}

orion_shard *orion__shard_of_buffer(exec_state *x, int64_t buffer) {
  int i;
  for (i = 0; i < x->nbufs; i++)
    if (x->bufs[i] == buffer) {
      orion_shard *sh = orion__shard_find(x, x->buf_targets[i]);
      return sh != NULL && sh->run == x->run ? sh : NULL;
    }
  return NULL;
}
