/* Broadcasts along a chain of executors (the driver's side): the rows of a
 * read-only sharded array (`server (read-only)`) that the executors lack
 * leave the driver once, cut into BCAST frames of about ORION_BCAST_CHUNK
 * bytes, to executor 0, which passes each on to executor 1 as soon as it
 * has it, and so on (executor/exec_chain.c), so that N executors have the
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
 * A loop's body of ORION_BODY_CHAIN_MIN bytes or more (one that captures a
 * large Lua table) goes the same way in chain mode, before the arrays:
 * its LOAD_BODYs carry only its length, and BCAST frames of the "array"
 * ORION_BCAST_BODY carry its bytes (executor/exec_chain.c puts them
 * together).  A smaller body stays inline: a chain adds a hop's latency
 * per executor, which only a large payload repays.
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
#include "scheduler/dist_int.h"
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

int orion__chain_body(const loop_run *r, int mode) {
  return mode == CHAIN_CHAIN && r->n >= 2 &&
         r->j->blen >= (size_t)ORION_BODY_CHAIN_MIN;
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

/* Where the pieces of u are cut from: the chunks some executor lacks, in
 * runs of consecutive ones, each run cut into frames of `per` elements (a
 * frame may hold the end of one run and the start of the next). */
typedef struct cutter {
  const arr_use *u;
  int64_t per;      /* elements per frame */
  int64_t k;        /* the next chunk to look at */
  int64_t pos, end; /* elements [pos, end) of the current run left */
  orion_msg_runvec runs; /* the frame cut last */
} cutter;

static void cutter_start(cutter *t, const arr_use *u) {
  int64_t per = chunk_bytes() / (int64_t)orion_type_size(u->d->a->type);
  t->u = u;
  t->per = per > 0 ? per : 1;
  t->k = t->pos = t->end = 0;
  t->runs.n = 0;
}

/* Cuts the next frame into t->runs; 0 when the array is done, 1, or
 * ORION_ENOMEM. */
static int next_frame(cutter *t) {
  const orion_replica *c = t->u->c;
  const orion_array *a = t->u->d->a;
  size_t esz = orion_type_size(a->type);
  int64_t room = t->per;
  t->runs.n = 0;
  while (room > 0) {
    int64_t n;
    if (t->pos == t->end) { /* the next run of stale chunks */
      int64_t k1, hi;
      while (t->k < c->nchunks && !stale(c, t->k))
        t->k++;
      if (t->k == c->nchunks)
        break;
      for (k1 = t->k; k1 < c->nchunks && stale(c, k1); k1++)
        ;
      hi = k1 * c->chunk < c->rows ? k1 * c->chunk : c->rows;
      t->pos = t->k * c->chunk * c->row_elems;
      t->end = hi * c->row_elems;
      t->k = k1;
    }
    n = t->end - t->pos < room ? t->end - t->pos : room;
    if (orion_msg_runvec_push(&t->runs, t->u->d->id, t->pos, n,
                              (const char *)a->values + (size_t)t->pos * esz,
                              (size_t)n * esz) != 0)
      return ORION_ENOMEM;
    t->pos += n;
    room -= n;
  }
  return t->runs.n > 0;
}

/* The broadcasts of a run in progress: the array being sent (an index in
 * r->use), its cutter, and how many frames it has and has sent. */
struct orion_chain_pump {
  int use;
  cutter t;
  int64_t nframes, made;
  int64_t body_at; /* bytes of a chained body sent (r->body_chain) */
};

/* Bytes queued to one executor beyond which the pump waits for its link
 * to take them: a few pieces, so the first hop always has the next one
 * ready and the driver's heartbeats are never seconds behind. */
#define WINDOW (4 << 20)

static void pump_fail(loop_run *r, const arr_use *u, int rc) {
  orion_cluster_fail(r->cl, "cannot send the rows of array #%lld in %s: %s",
                     (long long)u->d->id, r->j->where, orion_strerror(rc));
}

/* Every executor holds every chunk of u once its frames are out (they
 * come before the loop's first block there). */
static void mark_all(loop_run *r, arr_use *u, uint64_t seq) {
  orion_replica *c = u->c;
  int64_t k;
  int e;
  for (e = 0; e < r->n; e++)
    for (k = 0; k < c->nchunks; k++)
      if (c->have[(int64_t)e * c->nchunks + k] != c->ver[k]) {
        c->have[(int64_t)e * c->nchunks + k] = c->ver[k];
        c->sent[(int64_t)e * c->nchunks + k] = seq;
      }
}

/* Moves the pump to the next array with frames (counting them). */
static void next_array(loop_run *r, orion_chain_pump *p) {
  for (p->use++; p->use < r->nuse; p->use++) {
    arr_use *u = &r->use[p->use];
    int rc;
    if (!u->chain || !(u->shard_flags & ORION_SHARD_CHAIN))
      continue;
    cutter_start(&p->t, u);
    p->nframes = p->made = 0;
    while ((rc = next_frame(&p->t)) == 1)
      p->nframes++;
    if (rc != 0)
      pump_fail(r, u, rc);
    cutter_start(&p->t, u);
    return;
  }
}

/* Sends the chained body's next frame to executor 0, which passes it on
 * (some of it must be left to send). */
static void body_frame(loop_run *r, orion_chain_pump *p) {
  int64_t per = chunk_bytes(), len = (int64_t)r->j->blen;
  orion_msg_run run;
  orion_msg_bcast m;
  orion_buf b;
  int rc;
  run.array = ORION_BCAST_BODY;
  run.first = p->body_at;
  run.count = len - p->body_at < per ? len - p->body_at : per;
  run.data = r->j->blob + p->body_at;
  run.len = (size_t)run.count;
  run.esz = 1;
  m.run = r->run;
  m.array = ORION_BCAST_BODY;
  m.forward = 1;
  m.index = p->body_at / per;
  m.nframes = (len + per - 1) / per;
  m.runs = &run;
  m.nruns = 1;
  orion_buf_init(&b);
  rc = orion_msg_bcast_encode(&b, &m);
  if (rc != 0 || b.oom)
    orion_cluster_fail(r->cl, "cannot send the body of %s: %s", r->j->where,
                       orion_strerror(rc != 0 ? rc : ORION_ENOMEM));
  orion_cluster_send(r->cl, 0, &b);
  orion_buf_free(&b);
  p->body_at += run.count;
}

void orion__chain_pump(loop_run *r) {
  orion_chain_pump *p = r->pump;
  while (p != NULL && r->body_chain && p->body_at < (int64_t)r->j->blen) {
    if (orion_cluster_queued(r->cl, 0) > WINDOW)
      return; /* more once the link took some */
    body_frame(r, p);
  }
  while (p != NULL && p->use < r->nuse) {
    arr_use *u = &r->use[p->use];
    orion_msg_bcast m;
    int e, to = u->chain == CHAIN_STAR ? r->n : 1, rc;
    for (e = 0; e < to; e++)
      if (orion_cluster_queued(r->cl, e) > WINDOW)
        return; /* more once the link took some */
    rc = next_frame(&p->t);
    if (rc < 0)
      pump_fail(r, u, rc);
    if (rc == 0) {
      mark_all(r, u, r->chain_seq);
      next_array(r, p);
      continue;
    }
    m.run = r->run;
    m.array = u->d->id;
    m.forward = u->chain == CHAIN_CHAIN;
    m.index = p->made++;
    m.nframes = p->nframes;
    m.runs = p->t.runs.v;
    m.nruns = p->t.runs.n;
    for (e = 0; e < to; e++) {
      orion_buf b;
      orion_buf_init(&b);
      rc = orion_msg_bcast_encode(&b, &m);
      if (rc != 0 || b.oom)
        pump_fail(r, u, rc != 0 ? rc : ORION_ENOMEM);
      orion_cluster_send(r->cl, e, &b);
      orion_buf_free(&b);
    }
  }
}

int orion__chain_pumped(void *ud) {
  loop_run *r = ud;
  orion__chain_pump(r);
  return r->pump == NULL ||
         (r->pump->use >= r->nuse &&
          (!r->body_chain || r->pump->body_at >= (int64_t)r->j->blen));
}

void orion__chain_send(loop_run *r, uint64_t seq) {
  orion_chain_pump *p = orion_calloc(1, sizeof *p);
  if (p == NULL)
    orion_cluster_fail(r->cl, "out of memory in %s", r->j->where);
  r->pump = p;
  r->chain_seq = seq;
  p->use = -1;
  next_array(r, p);
  orion__chain_pump(r);
}

void orion__chain_free(loop_run *r) {
  if (r->pump != NULL)
    orion_msg_runvec_free(&r->pump->t.runs);
  orion_free(r->pump);
  r->pump = NULL;
}

void orion__chain_failed(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].chain)
      orion_replica_invalidate(r->use[i].c);
}
