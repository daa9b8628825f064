/* The bodies the executors hold, the driver's side (scheduler/dist_int.h,
 * dsm/bodycache.h): a loop's body (its captured closure, tens of
 * kilobytes for the apps) goes to an executor once; later passes of the
 * loop send its digest, or a patch of a body the executor holds when the
 * captured values changed (a learning rate, an epoch number: a few bytes
 * in the middle of the body).
 *
 * The record of executor e sees the same lookups and insertions, in the
 * same order, as e's cache (executor/exec_bodies.c), so that what the
 * record holds e holds too.  A run that fails may leave them apart (an
 * executor that refused its LOAD_BODY before keeping the body), so a
 * failed loop forgets the record, as a new cluster does.
 */
#include <string.h>

#include "dsm/bodycache.h"
#include "dsm/msg.h"
#include "scheduler/dist_int.h"
#include "util/alloc.h"

static orion_bodycache *held; /* per executor */
static int nheld;
static const orion_cluster *heldcl; /* the cluster the record is of */
static orion_bodycache sent; /* bytes of the bodies sent */

/* Bytes a patch adds besides its own: the base's digest, prefix, suffix. */
#define PATCH_COST (ORION_BODY_DIGEST + 16)

void orion__body_forget(void) {
  int e;
  for (e = 0; e < nheld; e++)
    orion_bodycache_clear(&held[e]);
  orion_free(held);
  held = NULL;
  nheld = 0;
  heldcl = NULL;
  orion_bodycache_clear(&sent);
}

void orion__body_start(loop_run *r) {
  orion_body_digest(r->j->blob != NULL ? r->j->blob : "", r->j->blen,
                    r->bdigest);
  if (nheld != r->n || heldcl != r->cl) { /* another cluster */
    orion__body_forget();
    held = orion_calloc((size_t)r->n, sizeof *held);
    nheld = held != NULL ? r->n : 0;
    heldcl = r->cl;
  }
  if (!r->body_chain && nheld > 0 &&
      orion_bodycache_put(&sent, r->bdigest, r->j->blob, r->j->blen) != 0)
    orion_bodycache_clear(&sent); /* no bases to patch: whole bodies */
}

/* The held body of rec that makes the shortest patch of the run's body,
 * or NULL; *prefix and *suffix its shared bytes. */
static const orion_bodycache_entry *best_base(const loop_run *r,
                                              orion_bodycache *rec,
                                              size_t *prefix, size_t *suffix) {
  const orion_bodycache_entry *best = NULL;
  size_t cost = r->j->blen;
  int i;
  for (i = 0; i < rec->n; i++) {
    const orion_bodycache_entry *b =
        orion_bodycache_find(&sent, rec->e[i].digest, 0);
    size_t p, s;
    if (b == NULL || b->bytes == NULL)
      continue;
    orion_body_patch(b->bytes, b->len, r->j->blob, r->j->blen, &p, &s);
    if (r->j->blen - p - s + PATCH_COST < cost) {
      cost = r->j->blen - p - s + PATCH_COST;
      best = &rec->e[i];
      *prefix = p;
      *suffix = s;
    }
  }
  return best;
}

void orion__body_ref(loop_run *r, int e, orion_msg_load_body *m) {
  orion_bodycache *rec;
  const orion_bodycache_entry *base;
  size_t p = 0, s = 0;
  if (r->body_chain || e >= nheld || r->j->blob == NULL)
    return; /* the whole body, not kept */
  rec = &held[e];
  m->bdigest = r->bdigest;
  if (orion_bodycache_find(rec, r->bdigest, 1) != NULL) { /* e holds it */
    memcpy(r->bbase, r->bdigest, ORION_BODY_DIGEST);
    m->bbase = r->bbase;
    m->bprefix = r->j->blen;
    m->blob = NULL;
    m->blob_len = 0;
    return;
  }
  base = best_base(r, rec, &p, &s);
  if (base != NULL) {
    memcpy(r->bbase, base->digest, ORION_BODY_DIGEST);
    (void)orion_bodycache_find(rec, r->bbase, 1);
    m->bbase = r->bbase;
    m->bprefix = p;
    m->bsuffix = s;
    m->blob = r->j->blob + p;
    m->blob_len = r->j->blen - p - s;
  }
  /* A record keeps no bytes: it cannot run out of memory. */
  (void)orion_bodycache_put(rec, r->bdigest, NULL, r->j->blen);
}
