#include "scheduler/schedule.h"

#include <string.h>

#include "util/alloc.h"
#include "util/error.h"

void orion_schedule_cut(const orion_schedule_shape *sh,
                        orion_block_spec *spec, orion_order_kind *kind) {
  memset(spec, 0, sizeof *spec);
  spec->skew_dim = -1;
  spec->histogram = sh->histogram;
  spec->lex = sh->serial || sh->ordered;
  spec->interleave = sh->interleave && !spec->lex;
  spec->time = -1;
  *kind = ORION_ORDER_ALL;
  if (sh->serial) {
    spec->space = 0;
    spec->nspace = 1;
    return;
  }
  spec->space = sh->space;
  spec->time = sh->time;
  spec->nspace = sh->nspace;
  spec->ntime = sh->ntime;
  spec->skew_dim = sh->skew_dim;
  spec->skew = sh->skew;
  if (spec->time >= 0) {
    *kind = sh->wavefront ? ORION_ORDER_WAVEFRONT : ORION_ORDER_ROTATION;
    if (*kind == ORION_ORDER_ROTATION && spec->ntime < spec->nspace)
      spec->ntime = spec->nspace;
  }
}

void orion_schedule_free(orion_schedule *s) {
  orion_free(s->order);
  orion_free(s->clock);
  orion_free(s->pos_of);
  orion_free(s->after_p);
  orion_free(s->after_q);
  memset(s, 0, sizeof *s);
}

int orion_schedule_make(orion_schedule *s, orion_order_kind kind, int n0,
                        int n1, int reverse) {
  size_t n;
  int i, *last_p, *last_q;
  memset(s, 0, sizeof *s);
  if (n0 < 0 || n1 < 1)
    return ORION_EINVAL;
  s->n0 = n0;
  s->n1 = n1;
  s->nblocks = n0 * n1;
  s->has_time = kind != ORION_ORDER_ALL && n1 > 1;
  n = (size_t)s->nblocks + 1;
  s->order = orion_malloc(sizeof(int) * n);
  s->clock = orion_malloc(sizeof(int) * n);
  s->pos_of = orion_malloc(sizeof(int) * n);
  s->after_p = orion_malloc(sizeof(int) * n);
  s->after_q = orion_malloc(sizeof(int) * n);
  last_p = orion_malloc(sizeof(int) * ((size_t)n0 + 1));
  last_q = orion_malloc(sizeof(int) * (size_t)n1);
  if (s->order == NULL || s->clock == NULL || s->pos_of == NULL ||
      s->after_p == NULL || s->after_q == NULL || last_p == NULL ||
      last_q == NULL) {
    orion_free(last_p);
    orion_free(last_q);
    orion_schedule_free(s);
    return ORION_ENOMEM;
  }
  s->nclocks = orion_block_clocks(kind, n0, n1, reverse, s->order, s->clock);
  for (i = 0; i < n0; i++)
    last_p[i] = -1;
  for (i = 0; i < n1; i++)
    last_q[i] = -1;
  /* Each block waits for the one before it of its space part (they share
   * an executor and the rows of that part) and, with clocks, of its time
   * part (they share the rotating or wavefront data). */
  for (i = 0; i < s->nblocks; i++) {
    int b = s->order[i], p = b / n1, q = b % n1;
    s->pos_of[b] = i;
    s->after_p[i] = last_p[p];
    last_p[p] = i;
    s->after_q[i] = s->has_time ? last_q[q] : -1;
    last_q[q] = i;
  }
  orion_free(last_p);
  orion_free(last_q);
  return 0;
}

int orion_schedule_exec(const orion_schedule *s, int block, int nexec) {
  int64_t p = block / s->n1;
  /* Contiguous ranges of space parts: in a 2-D rotation the next block of
   * a time part is on the space part before, which is then mostly on the
   * same executor, so the time part's rows stay where they are. */
  return s->n0 > 0 ? (int)(p * nexec / s->n0) : 0;
}
