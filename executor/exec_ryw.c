/* orion-executor's read-your-writes for buffered writes to sharded arrays
 * that are applied while a loop runs (flush = "block" or every n
 * elements): after a flush, this executor's next block reads the target
 * with its own writes in, even when the owner has not applied them yet.
 *
 * The owner applies a peer's BUFFER_FLUSH on its compute thread, between
 * its own blocks, but answers FETCHes at once from its published copy.
 * Without this file a FETCH could overtake the requester's own flush, and
 * the requester's next block would read the target without the writes it
 * had just flushed (a data-parallel SGD then applies the same gradient
 * again and again, and diverges).  So:
 *   - at a flush, the items sent to another owner are also applied to this
 *     executor's copy, and kept in a log with a sequence number per owner;
 *   - the owner counts the flushes it has taken in from each peer, in the
 *     same critical section that publishes their chunks, and each
 *     FETCH_REPLY carries that count;
 *   - after installing a reply's chunks, the requester re-applies, to those
 *     chunks only, the logged flushes the owner had not taken in yet, and
 *     forgets the ones it had.
 * Chunks a reply does not carry did not change at the owner, so this
 * executor's copy of them already holds its own writes.  Flushes held for
 * the loop's end (flush = "loop") are neither applied here nor logged:
 * reads see the target as of the loop's start.  The counts run over the
 * whole job; a run's flushes are all acknowledged before its LOOP_DONE,
 * so the log is dropped when the next run's body is loaded.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "executor/exec_state.h"
#include "dsm/shard.h"
#include "executor/exec.h"
#include "util/alloc.h"
#include "util/error.h"

struct ryw_entry {
  uint64_t seq;
  int64_t buffer;
  orion_pend_item *items;
  int64_t n;
  struct ryw_entry *next;
};

static void entry_free(struct ryw_entry *e) {
  orion_free(e->items);
  orion_free(e);
}

/* The per-peer tables, allocated at first use: 0, or ORION_ENOMEM. */
static int tables(exec_state *x) {
  if (x->ryw_log != NULL)
    return 0;
  x->ryw_sent = orion_calloc((size_t)x->npeers, sizeof *x->ryw_sent);
  x->ryw_log = orion_calloc((size_t)x->npeers, sizeof *x->ryw_log);
  if (x->ryw_sent == NULL || x->ryw_log == NULL) {
    orion_free(x->ryw_sent);
    orion_free(x->ryw_log);
    x->ryw_sent = NULL;
    x->ryw_log = NULL;
    return ORION_ENOMEM;
  }
  return 0;
}

int orion__ryw_sent(exec_state *x, int owner, int64_t buffer,
                    const orion_pend_item *items, int64_t n,
                    orion_error *err) {
  struct ryw_entry *e, **tail;
  const int64_t *hids;
  int rc;
  if (tables(x) != 0 || (e = orion_calloc(1, sizeof *e)) == NULL)
    return orion_error_set(err, ORION_ENOMEM,
                           "executor %d: out of memory keeping a flush",
                           x->id);
  e->items = orion_malloc(sizeof *items * (size_t)(n > 0 ? n : 1));
  if (e->items == NULL) {
    orion_free(e);
    return orion_error_set(err, ORION_ENOMEM,
                           "executor %d: out of memory keeping a flush",
                           x->id);
  }
  if (n > 0)
    memcpy(e->items, items, sizeof *items * (size_t)n);
  e->n = n;
  e->buffer = buffer;
  e->seq = ++x->ryw_sent[owner];
  for (tail = &x->ryw_log[owner]; *tail != NULL; tail = &(*tail)->next)
    ;
  *tail = e;
  /* An apply function with helpers runs only where the helpers are: at
   * the owner (our copies of its chunks are not current). */
  rc = n > 0 && orion_exec_buffer_helpers(x->ex, buffer, &hids) == 0
           ? orion_exec_buffer_apply_valid(x->ex, buffer, items, n, err)
           : 0;
  return rc;
}

void orion__ryw_took(exec_state *x, int from) {
  if (x->ryw_applied == NULL) {
    x->ryw_applied = orion_calloc((size_t)x->npeers, sizeof *x->ryw_applied);
    if (x->ryw_applied == NULL)
      orion__exec_die(x, "out of memory");
  }
  x->ryw_applied[from]++;
}

uint64_t orion__ryw_applied(const exec_state *x, int from) {
  return x->ryw_applied != NULL ? x->ryw_applied[from] : 0;
}

/* Whether key's row is marked; [*lo, *hi) caches the last row's elements
 * (keys come mostly in order: a division per row, not per item). */
static int marked(const orion_shard *sh, const unsigned char *mark,
                  int64_t key, int64_t *lo, int64_t *hi, int *on) {
  if (key < *lo || key >= *hi) {
    int64_t r = key / sh->row_elems;
    *lo = r * sh->row_elems;
    *hi = *lo + sh->row_elems;
    *on = mark[r];
  }
  return *on;
}

/* Re-applies entry e's items that fall in the rows marked in `mark` (the
 * rows a reply installed). */
static void reapply(exec_state *x, const orion_shard *sh,
                    const unsigned char *mark, const struct ryw_entry *e) {
  int64_t i = 0, lo = 0, hi = 0;
  int on = 0;
  const int64_t *hids;
  if (orion_exec_buffer_helpers(x->ex, e->buffer, &hids) > 0)
    return; /* not applied here (orion__ryw_sent) */
  while (i < e->n) {
    int64_t j = i;
    orion_error err;
    if (!marked(sh, mark, e->items[i].key, &lo, &hi, &on)) {
      i++;
      continue;
    }
    while (j < e->n && marked(sh, mark, e->items[j].key, &lo, &hi, &on))
      j++;
    orion_error_clear(&err);
    if (orion_exec_buffer_apply_valid(x->ex, e->buffer, e->items + i, j - i,
                                      &err) != 0)
      orion__exec_die(x, "re-applying this executor's buffered writes: %s",
                      err.msg);
    i = j;
  }
}

void orion__ryw_reply(exec_state *x, int owner, orion_shard *sh,
                      const orion_msg_fetch_reply *m) {
  struct ryw_entry **pp, *e;
  unsigned char *mark = NULL;
  int64_t k;
  if (x->ryw_log == NULL)
    return;
  /* The owner has these: its chunks include them. */
  while ((e = x->ryw_log[owner]) != NULL && e->seq <= m->applied) {
    x->ryw_log[owner] = e->next;
    entry_free(e);
  }
  if (x->ryw_log[owner] == NULL || m->nchunks == 0)
    return;
  if (sh->row_elems <= 0)
    return;
  mark = orion_calloc((size_t)sh->a->dims[0] + 1, 1);
  if (mark == NULL)
    orion__exec_die(x, "out of memory");
  for (k = 0; k < m->nchunks; k++) { /* installed, so in range */
    const orion_msg_chunk *c = &m->chunks[k];
    int64_t r0 = c->chunk * sh->chunk_rows + c->row;
    int64_t nr = (int64_t)(c->len / ((size_t)sh->row_elems * sh->esz));
    memset(mark + r0, 1, (size_t)nr);
  }
  for (pp = &x->ryw_log[owner]; *pp != NULL; pp = &(*pp)->next)
    if (orion__shard_of_buffer(x, (*pp)->buffer) == sh)
      reapply(x, sh, mark, *pp);
  orion_free(mark);
}

void orion__ryw_drop(exec_state *x) {
  int e;
  if (x->ryw_log == NULL)
    return;
  for (e = 0; e < x->npeers; e++)
    while (x->ryw_log[e] != NULL) {
      struct ryw_entry *next = x->ryw_log[e]->next;
      entry_free(x->ryw_log[e]);
      x->ryw_log[e] = next;
    }
}
