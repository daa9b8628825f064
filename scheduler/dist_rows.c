/* The rows of a resident or replicated array a block needs (dist_int.h):
 * the range a block may read or write by the plan's subscripts, and the
 * runs of it an executor lacks, appended to a RUN_BLOCK or a ROWS frame.
 * dist.c (a block going out) and dist_resid.c (rows moving between
 * executors) call these; they call neither.
 */
#include <stdint.h>

#include "analysis/analyze.h"
#include "dsm/msg.h"
#include "dsm/replica.h"
#include "dsm/types.h"
#include "scheduler/dist_int.h"
#include "scheduler/dist_rows.h"

/* The rows [*lo, *hi) of array u that block b may read (mode ACC_READ) or
 * write (ACC_WRITE); empty when none. */
void orion__dist_row_range(const loop_run *r, const arr_use *u, int b,
                           int mode, int64_t *lo, int64_t *hi) {
  const orion_plan *p = r->j->plan;
  int64_t rows = u->d->a->dims[0], l = INT64_MAX, h = -1;
  int i;
  *lo = 0;
  *hi = 0;
  if (u->iterated) {
    /* Its own block's rows, read (the element) and written (a returned
     * value), plus whatever the body's subscripts reach below. */
    l = r->itc->krange[b][0][0];
    h = r->itc->krange[b][0][1];
  }
  if (p == NULL || u->plan_index < 0) {
    *lo = 0;
    *hi = rows;
    return;
  }
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    int64_t al, ah;
    if (ac->array != u->plan_index || ac->buffered || ac->mode != mode)
      continue;
    if (ac->nsub < 1 || ac->sub[0].kind == SUB_UNKNOWN) {
      *lo = 0;
      *hi = rows;
      return;
    }
    if (ac->sub[0].kind == SUB_CONST) {
      al = ah = ac->sub[0].c - 1; /* the script's 1-based subscript */
    } else {
      int d = ac->sub[0].dim;
      if (r->itc->krange[b][d][1] < 0)
        continue; /* an empty block */
      al = r->itc->krange[b][d][0] + ac->sub[0].c;
      ah = r->itc->krange[b][d][1] + ac->sub[0].c;
    }
    if (al < l)
      l = al;
    if (ah > h)
      h = ah;
  }
  if (l < 0)
    l = 0;
  if (h >= rows)
    h = rows - 1;
  if (h >= l) {
    *lo = l;
    *hi = h + 1;
  }
}

/* Appends to v the stale rows of [lo, hi) of u for executor e as runs
 * (views of the driver's copy); only whole chunks are marked as held (a
 * partly sent chunk stays stale there, so that rows the executor did not
 * ask for are never overwritten).  Returns 0 or ORION_ENOMEM. */
int orion__dist_add_rows(orion_msg_runvec *v, const arr_use *u, int e,
                         int64_t lo, int64_t hi, uint64_t seq) {
  orion_replica *c = u->c;
  orion_array *a = u->d->a;
  size_t esz = orion_type_size(a->type);
  int64_t k, k0, k1;
  if (hi <= lo)
    return 0;
  k0 = lo / c->chunk;
  k1 = (hi - 1) / c->chunk;
  for (k = k0; k <= k1; k++) {
    uint64_t *have = &c->have[(int64_t)e * c->nchunks + k];
    int64_t rlo = k * c->chunk, rhi = rlo + c->chunk, first, count;
    if (*have == c->ver[k])
      continue;
    c->sent[(int64_t)e * c->nchunks + k] = seq;
    if (rhi > c->rows)
      rhi = c->rows;
    if (rlo >= lo && rhi <= hi)
      *have = c->ver[k];
    if (rlo < lo)
      rlo = lo;
    if (rhi > hi)
      rhi = hi;
    first = rlo * c->row_elems;
    count = (rhi - rlo) * c->row_elems;
    if (orion_msg_runvec_push(v, u->d->id, first, count,
                              (const char *)a->values + (size_t)first * esz,
                              (size_t)count * esz) != 0)
      return ORION_ENOMEM;
  }
  return 0;
}
