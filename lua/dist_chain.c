/* Broadcasts along a chain of executors (the driver's side): the rows of a
 * read-only sharded array (`server (read-only)`) that the executors lack
 * leave the driver once, cut into BCAST frames of about ORION_BCAST_CHUNK
 * bytes, to executor 0, which passes each on to executor 1 as soon as it
 * has it, and so on (drivers/exec_chain.c), so that N executors have the
 * array after about one array's transfer time plus N - 1 frames' times,
 * and the driver's link carries it once.  Hoplite's pipelined broadcast,
 * with the driver as the chain's first node instead of its hub.
 *
 * ORION_BCAST chooses the path: "chain" (the default); "star", the same
 * frames sent by the driver to every executor (not passed on); "shard",
 * the path before chains (each owner gets its rows in LOAD_BODY, then
 * every reader FETCHes every other owner's chunks).  All three deliver the
 * same bytes.
 *
 * An array goes by chain when it is sharded read-only (fetched, never
 * written in the run), some chunk of it is current at the driver only (the
 * script made or changed it), and no executor holds rows of it newer than
 * the driver's (resident rows left by an earlier loop: those go the shard
 * path, from their holders).  When every chunk some executor lacks is
 * current at another executor (each owner's own, after a loop that wrote
 * it through a buffer) the shard path is kept too: the owners serve them,
 * and the driver's link carries nothing.  Its LOAD_BODY shard entry then carries no
 * rows and the flag ORION_SHARD_CHAIN when BCAST frames follow, or no
 * flag at all when every executor holds every chunk at its current
 * version (nothing moves, not even a FETCH).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/cluster.h"
#include "dsm/msg.h"
#include "dsm/replica.h"
#include "dsm/types.h"
#include "lua/dist_int.h"
#include "util/alloc.h"

#define CHUNK_DEFAULT (1 << 20)
#define CHUNK_MOST (64 << 20)

/* Bytes per BCAST frame: $ORION_BCAST_CHUNK, else 1 MiB; -1 when the
 * variable is not a number of bytes from 1 to 64 MiB. */
static int64_t chunk_bytes(void) {
  const char *v = getenv("ORION_BCAST_CHUNK");
  char *end;
  long long n;
  if (v == NULL || v[0] == '\0')
    return CHUNK_DEFAULT;
  n = strtoll(v, &end, 10);
  if (*end != '\0' || n < 1 || n > CHUNK_MOST)
    return -1;
  return n;
}

int orion__chain_mode(orion_error *err) {
  const char *v = getenv("ORION_BCAST");
  if (chunk_bytes() < 0)
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_BCAST_CHUNK must be a number of bytes from "
                           "1 to %d, not '%s'",
                           CHUNK_MOST, getenv("ORION_BCAST_CHUNK"));
  if (v == NULL || v[0] == '\0' || strcmp(v, "chain") == 0)
    return CHAIN_CHAIN;
  if (strcmp(v, "star") == 0)
    return CHAIN_STAR;
  if (strcmp(v, "shard") == 0)
    return CHAIN_OFF;
  return orion_error_set(err, ORION_EINVAL,
                         "ORION_BCAST must be chain, star or shard, not '%s'",
                         v);
}

/* Whether some executor lacks chunk k of c at its current version. */
static int stale(const orion_replica *c, int64_t k) {
  int e;
  for (e = 0; e < c->n; e++)
    if (c->have[(int64_t)e * c->nchunks + k] != c->ver[k])
      return 1;
  return 0;
}

/* Whether no executor holds chunk k of c at its current version: only
 * the driver can send it. */
static int driver_only(const orion_replica *c, int64_t k) {
  int e;
  for (e = 0; e < c->n; e++)
    if (c->have[(int64_t)e * c->nchunks + k] == c->ver[k])
      return 0;
  return 1;
}

void orion__chain_decide(arr_use *u, int mode) {
  int64_t k;
  int any_stale = 0;
  u->chain = 0;
  if (mode == CHAIN_OFF || !u->sharded ||
      u->shard_flags != ORION_SHARD_FETCH || u->c->held.n > 0)
    return;
  for (k = 0; k < u->c->nchunks; k++) {
    if (driver_only(u->c, k)) { /* refreshed by the script: chain it */
      u->chain = mode;
      u->shard_flags = ORION_SHARD_CHAIN;
      return;
    }
    any_stale |= stale(u->c, k);
  }
  if (any_stale) /* each owner holds its chunks: they serve the others */
    return;
  u->chain = mode; /* everyone holds everything: nothing moves */
  u->shard_flags = 0;
}

/* The BCAST frames of u being cut: the pieces of the current frame and
 * the frames made so far. */
typedef struct cutter {
  loop_run *r;
  arr_use *u;
  int64_t per;      /* elements per frame */
  int64_t nframes;  /* to make (counted first, then made) */
  int64_t made;
  int64_t room;     /* elements the current frame has room for */
  orion_msg_runvec runs;
  int send;         /* 0: only count the frames */
} cutter;

/* Sends the frame cut so far (to executor 0, or to every executor). */
static void flush_frame(cutter *t) {
  orion_msg_bcast m;
  int e, to = t->u->chain == CHAIN_STAR ? t->r->n : 1;
  if (t->runs.n > 0 && t->send) {
    m.run = t->r->run;
    m.array = t->u->d->id;
    m.forward = t->u->chain == CHAIN_CHAIN;
    m.index = t->made;
    m.nframes = t->nframes;
    m.runs = t->runs.v;
    m.nruns = t->runs.n;
    for (e = 0; e < to; e++) {
      orion_buf b;
      int rc;
      orion_buf_init(&b);
      rc = orion_msg_bcast_encode(&b, &m);
      if (rc != 0 || b.oom)
        orion_cluster_fail(t->r->cl, "cannot send the rows of array #%lld "
                                     "in %s: %s",
                           (long long)m.array, t->r->j->where,
                           orion_strerror(rc != 0 ? rc : ORION_ENOMEM));
      orion_cluster_send(t->r->cl, e, &b);
      orion_buf_free(&b);
    }
  }
  if (t->runs.n > 0)
    t->made++;
  t->runs.n = 0;
  t->room = t->per;
}

/* Elements [first, first + count) into frames. */
static void cut(cutter *t, int64_t first, int64_t count) {
  const orion_array *a = t->u->d->a;
  size_t esz = orion_type_size(a->type);
  while (count > 0) {
    int64_t n = count < t->room ? count : t->room;
    if (orion_msg_runvec_push(&t->runs, t->u->d->id, first,
                              n, (const char *)a->values + (size_t)first * esz,
                              (size_t)n * esz) != 0)
      orion_cluster_fail(t->r->cl, "out of memory in %s", t->r->j->where);
    first += n;
    count -= n;
    t->room -= n;
    if (t->room == 0)
      flush_frame(t);
  }
}

/* Every stale chunk of u, in runs of consecutive ones, through t. */
static void cut_all(cutter *t) {
  const orion_replica *c = t->u->c;
  int64_t k = 0;
  t->runs.n = 0;
  t->room = t->per;
  t->made = 0;
  while (k < c->nchunks) {
    int64_t k1 = k, lo, hi;
    if (!stale(c, k)) {
      k++;
      continue;
    }
    while (k1 < c->nchunks && stale(c, k1))
      k1++;
    lo = k * c->chunk;
    hi = k1 * c->chunk < c->rows ? k1 * c->chunk : c->rows;
    cut(t, lo * c->row_elems, (hi - lo) * c->row_elems);
    k = k1;
  }
  flush_frame(t);
}

void orion__chain_send(loop_run *r, uint64_t seq) {
  int i, e;
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    orion_replica *c = u->c;
    cutter t;
    int64_t k, per;
    if (!u->chain || !(u->shard_flags & ORION_SHARD_CHAIN))
      continue;
    per = chunk_bytes() / (int64_t)orion_type_size(u->d->a->type);
    memset(&t, 0, sizeof t);
    t.r = r;
    t.u = u;
    t.per = per > 0 ? per : 1;
    cut_all(&t); /* counts the frames */
    t.nframes = t.made;
    t.send = 1;
    cut_all(&t);
    orion_msg_runvec_free(&t.runs);
    /* Every executor holds every chunk now (the frames are on their way
     * and come before the loop's first block there). */
    for (e = 0; e < r->n; e++)
      for (k = 0; k < c->nchunks; k++)
        if (c->have[(int64_t)e * c->nchunks + k] != c->ver[k]) {
          c->have[(int64_t)e * c->nchunks + k] = c->ver[k];
          c->sent[(int64_t)e * c->nchunks + k] = seq;
        }
  }
}

void orion__chain_failed(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].chain)
      orion_replica_invalidate(r->use[i].c);
}
