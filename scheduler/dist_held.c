/* The driver's held BUFFER_FLUSH frames (scheduler/dist_held.h). */
#include "scheduler/dist_held.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/error.h"

int orion__held_add(orion_held_frames *h, int64_t block, int exec,
                    const void *p, size_t len) {
  orion_held_frame *f;
  if (h->n == h->cap) {
    int64_t cap = h->cap > 0 ? 2 * h->cap : 16;
    orion_held_frame *nv = orion_realloc(h->v, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    h->v = nv;
    h->cap = cap;
  }
  f = &h->v[h->n];
  f->payload = orion_malloc(len + 1);
  if (f->payload == NULL)
    return ORION_ENOMEM;
  memcpy(f->payload, p, len);
  f->len = len;
  f->block = block;
  f->exec = exec;
  f->seq = h->n++;
  return 0;
}

static int by_block(const void *pa, const void *pb) {
  const orion_held_frame *a = pa, *b = pb;
  if (a->block != b->block)
    return a->block < b->block ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void orion__held_run(orion_held_frames *h, orion_held_fn fn, void *ud) {
  int64_t k;
  if (h->n > 1)
    qsort(h->v, (size_t)h->n, sizeof *h->v, by_block);
  for (k = 0; k < h->n; k++)
    fn(ud, h->v[k].exec, h->v[k].payload, h->v[k].len);
  orion__held_free(h);
}

void orion__held_free(orion_held_frames *h) {
  int64_t k;
  for (k = 0; k < h->n; k++)
    orion_free(h->v[k].payload);
  orion_free(h->v);
  memset(h, 0, sizeof *h);
}
