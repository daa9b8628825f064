/* Managed buffers' early sends and their statistics
 * (executor/exec_managed.h).  A managed buffer's writes stay in its pending
 * store (dsm/wbuf.h) until they are sent, early or at the loop's end; the
 * buffer remembers, for the keys still pending at the last send, the
 * block count at which each was first seen pending, which gives the
 * staleness of what is sent later. */
#include "executor/exec_managed.h"

#include <string.h>

#include "dsm/types.h"
#include "executor/exec.h"
#include "executor/exec_int.h"
#include "util/alloc.h"

void orion__exec_managed_forget(exec_buffer *b) {
  orion_free(b->born);
  b->born = NULL;
  b->nborn = 0;
}

void orion__exec_managed_block_end(struct orion_exec *ex) { ex->mblocks++; }

void orion_exec_set_managed_tick(struct orion_exec *ex, orion_managed_tick fn,
                                 void *ud) {
  ex->mtick = fn;
  ex->mtick_ud = ud;
}

int orion__exec_managed_ticks(const struct orion_exec *ex) {
  return ex->mtick != NULL && ex->nmanaged > 0;
}

int orion__exec_managed_count(struct orion_exec *ex, orion_error *err) {
  if (!orion__exec_managed_ticks(ex) || ++ex->mcount < ORION_MANAGED_TICK)
    return 0;
  ex->mcount = 0;
  return ex->mtick(ex->mtick_ud, err);
}

int orion_exec_managed_pending(struct orion_exec *ex) {
  int i;
  for (i = 0; i < ex->nbufs; i++)
    if (ex->bufs[i]->flush == ORION_FLUSH_MANAGED &&
        ex->bufs[i]->target != NULL &&
        orion_wbuf_pending(&ex->bufs[i]->pend) > 0)
      return 1;
  return 0;
}

/* The block count at which key was first seen pending, from the sorted
 * list b->born (walked forward with *at, the items coming in key order);
 * now when it is not there. */
static int64_t born_of(const exec_buffer *b, int64_t *at, int64_t key,
                       int64_t now) {
  while (*at < b->nborn && b->born[*at].key < key)
    (*at)++;
  return *at < b->nborn && b->born[*at].key == key ? b->born[*at].val.i : now;
}

/* One buffer: sends at most max items; *sent: how many went. */
static int send_buffer(struct orion_exec *ex, exec_buffer *b, int64_t max,
                       int64_t *sent, orion_error *err) {
  orion_pend_item *s, *r;
  int64_t ns, nr, i, at = 0;
  int isint = orion_type_is_int(b->target->type), rc = 0;
  *sent = 0;
  if (orion_wbuf_take_largest(&b->pend, isint, max, &s, &ns, &r, &nr) != 0)
    return orion_error_set(err, ORION_ENOMEM,
                           "executor %d: buffer '%s': out of memory sending "
                           "its writes early",
                           ex->id, b->name);
  for (i = 0; i < ns; i++)
    ex->mstats.staleness_sum +=
        (double)(ex->mblocks - born_of(b, &at, s[i].key, ex->mblocks));
  /* What stays pending keeps the block it was first seen at: r reuses its
   * items, the value becoming that block count. */
  at = 0;
  for (i = 0; i < nr; i++)
    r[i].val.i = born_of(b, &at, r[i].key, ex->mblocks);
  orion__exec_managed_forget(b);
  b->born = r;
  b->nborn = nr;
  orion__exec_mean_scale(ex, b, s, ns);
  if (ns > 0)
    rc = ex->sink(ex->sink_ud, b->id, isint, s, ns, -1, err);
  ex->mstats.items += (uint64_t)ns;
  ex->mstats.bytes += (uint64_t)ns * ORION_MANAGED_ITEM_BYTES;
  orion_free(s);
  *sent = ns;
  return rc;
}

int orion_exec_managed_send(struct orion_exec *ex, int64_t max_bytes,
                            int64_t *used, orion_error *err) {
  int64_t left = max_bytes / ORION_MANAGED_ITEM_BYTES;
  int i;
  *used = 0;
  if (ex->sink == NULL) /* in the driver: flushed at the loop's end */
    return 0;
  for (i = 0; i < ex->nbufs && left > 0; i++) {
    exec_buffer *b = ex->bufs[i];
    int64_t sent;
    int rc;
    if (b->flush != ORION_FLUSH_MANAGED || b->target == NULL ||
        orion_wbuf_pending(&b->pend) == 0)
      continue;
    rc = send_buffer(ex, b, left, &sent, err);
    left -= sent;
    *used += sent * ORION_MANAGED_ITEM_BYTES;
    if (rc != 0)
      return rc;
  }
  return 0;
}

void orion_exec_managed_take_stats(struct orion_exec *ex,
                                   orion_managed_stats *out) {
  *out = ex->mstats;
  memset(&ex->mstats, 0, sizeof ex->mstats);
}
