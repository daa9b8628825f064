/* orion-executor's compiled bodies, kept by the hash of their source and
 * flags (exec_state.h, exec_bodies): LOAD_BODY finds a body built before
 * (exec_run.c on the CPU, exec_gload.c on the device) and keeps a new
 * one, forgetting the oldest past ORION_BODY_CACHE.  Compute thread.
 */
#include <string.h>

#include "executor/exec_state.h"
#include "util/ccomp.h"

int orion__bodies_find(const exec_bodies *b, uint64_t hash,
                       orion_cobj **obj) {
  int i;
  for (i = 0; i < b->n; i++)
    if (b->e[i].hash == hash) {
      *obj = b->e[i].obj;
      return 1;
    }
  return 0;
}

void orion__bodies_keep(exec_bodies *b, uint64_t hash, orion_cobj *obj) {
  if (b->n == ORION_BODY_CACHE) { /* forget the oldest */
    orion_cobj_free(b->e[0].obj);
    memmove(&b->e[0], &b->e[1], sizeof b->e[0] * (ORION_BODY_CACHE - 1));
    b->n--;
  }
  b->e[b->n].hash = hash;
  b->e[b->n].obj = obj;
  b->n++;
}
