/* orion-executor's sharded server arrays, the messaging (their data and
 * chunk versions: dsm/shard.c, `orion_shard`): a dense array whose rows,
 * grouped in version chunks, are owned by the executors in turn for one
 * loop run.  The owner applies the buffered
 * writes for its chunks (its own, and BUFFER_FLUSHes from the others,
 * each answered by a FLUSH_ACK) and publishes its chunks; a reader brings
 * its copy up to date before each block with FETCHes that return only the
 * chunks whose version changed; after the run the driver collects the
 * changed rows with SHARD_PULL.  The compute thread sets shards up,
 * applies writes and fetches; the loop thread answers FETCHes from the
 * published copy (under x->mu) without waiting for a computing block.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "executor/exec_state.h"
#include "dsm/net.h"
#include "dsm/msg.h"
#include "dsm/proto.h"
#include "dsm/shard.h"
#include "dsm/types.h"
#include "dsm/wbuf.h"
#include "dsm/wire.h"
#include "executor/exec.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/error.h"

/* ---- setting shards up (compute thread) --------------------------------- */

/* LOAD_BODY's shard entry s: flags, and the runs of the rows of our
 * chunks our copy lacks. */
int orion__shard_setup(exec_state *x, const orion_msg_shard *s, int64_t run,
                       orion_error *err) {
  int64_t id = s->array, k;
  replica *rp = orion__replica_find(x, id);
  orion_shard *sh;
  int fresh = 0;
  if (rp == NULL || x->npeers < 1)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: malformed shard in LOAD_BODY", x->id);
  for (k = 0; k < s->nruns; k++)
    if (s->runs[k].array != id || orion_msg_run_apply(rp->a, &s->runs[k]) != 0)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed shard rows", x->id);
  /* The whole array's stale rows, by chain (executor/exec_chain.c). */
  if ((s->flags & ORION_SHARD_CHAIN) &&
      orion__chain_take(x, id, rp->a, err) != 0)
    return err->code;
  pthread_mutex_lock(&x->mu);
  sh = orion__shard_find(x, id);
  if (sh != NULL && sh->a != rp->a)
    orion_shard_clear(sh); /* the array was remade: start over */
  if (sh == NULL || sh->a == NULL) {
    if (sh == NULL) {
      orion_shard *ns =
          orion_realloc(x->shards, sizeof *ns * (size_t)(x->nshards + 1));
      if (ns == NULL) {
        pthread_mutex_unlock(&x->mu);
        return orion_error_set(err, ORION_ENOMEM, "out of memory");
      }
      x->shards = ns;
      sh = &x->shards[x->nshards++];
      memset(sh, 0, sizeof *sh);
    }
    if (orion_shard_init(sh, id, rp->a, x->id, x->npeers) != 0) {
      pthread_mutex_unlock(&x->mu);
      return orion_error_set(err, ORION_ENOMEM, "out of memory for a shard");
    }
    fresh = 1;
  }
  sh->flags = s->flags;
  sh->run = run;
  sh->fetched_run = 0;
  /* The replica may have changed since the last sharded run (the driver's
   * rows above, or a loop that placed the array otherwise). */
  orion_shard_publish(sh, sh->clo, sh->chi, fresh, &x->vcounter);
  /* Only a written run's diff (SHARD_PULL) reads the base: a read-only
   * array (the training data) is not copied again every loop. */
  if (sh->flags & ORION_SHARD_WRITTEN)
    orion_shard_rebase(sh);
  sh->served_run = run;
  pthread_mutex_unlock(&x->mu);
  orion__exec_wake(x); /* FETCHes waiting for this run */
  return 0;
}

/* Drops the shards not sharded in this run from serving.  A loop that
 * binds the array otherwise (replicated, partitioned) may write our
 * replica, so the versions we hold of other owners' chunks are forgotten;
 * an array this loop does not bind at all keeps them, so that a read-only
 * array used every other loop (training data between evaluations) is not
 * fetched again. */
void orion__shards_retire(exec_state *x, int64_t run) {
  int i, j;
  pthread_mutex_lock(&x->mu);
  for (i = 0; i < x->nshards; i++)
    if (x->shards[i].run != run && x->shards[i].a != NULL) {
      x->shards[i].served_run = 0;
      for (j = 0; j < x->nbound; j++)
        if (x->bound[j] == x->shards[i].id) {
          orion_shard_forget(&x->shards[i]);
          break;
        }
    }
  pthread_mutex_unlock(&x->mu);
}

/* ---- buffered writes to the owners (compute thread) --------------------- */

/* Appends a BUFFER_FLUSH of items[0..n) for `buffer` in run `run` to b;
 * when it cannot be encoded, marks b out of memory (the caller reports
 * it). */
static void write_flush(orion_buf *b, int64_t run, int64_t buffer, int isint,
                        const orion_pend_item *items, int64_t n,
                        int64_t block) {
  orion_msg_buffer_flush m = {run, buffer, isint, items, n, block};
  if (orion_msg_buffer_flush_encode(b, &m) != 0)
    b->oom = 1;
}

/* Decodes a BUFFER_FLUSH from peer `from` (orion_msg_buffer_flush_free
 * it); dies on a malformed one. */
static void read_flush(exec_state *x, const job *j, orion_msg_buffer_flush *m) {
  orion_error err;
  int rc;
  orion_error_clear(&err);
  rc = orion_msg_buffer_flush_decode(j->payload, j->len, m, &err);
  if (rc == ORION_ENOMEM)
    orion__exec_die(x, "out of memory applying buffered writes");
  if (rc != 0)
    orion__exec_die(x, "executor %d sent a malformed BUFFER_FLUSH: %s",
                    j->from, err.msg);
}

/* FLUSH_ACK for run `run`. */
static void write_flush_ack(orion_buf *b, int64_t run) {
  orion_msg_flush_ack m = {run};
  orion_msg_flush_ack_encode(b, &m); /* out of memory: b->oom tells */
}

/* Buffered writes go to the owners of their target's rows: applied here
 * for our own chunks, sent to the other owners; or, for a target that is
 * not sharded, to the driver. */
int orion__shard_flush_sink(void *ud, int64_t id, int isint,
                            const orion_pend_item *items, int64_t n,
                            int64_t block, orion_error *err) {
  exec_state *x = ud;
  orion_shard *sh = orion__shard_of_buffer(x, id);
  orion_buf b;
  int64_t i = 0;
  int rc = 0;
  orion_buf_init(&b);
  if (sh == NULL) {
    write_flush(&b, x->run, id, isint, items, n, block);
    if (b.oom) {
      orion_buf_free(&b);
      return orion_error_set(err, ORION_EINVAL,
                             "executor %d: buffer '%s': %lld pending writes "
                             "exceed the largest frame",
                             x->id, orion_exec_buffer_name(x->ex, id),
                             (long long)n);
    }
    orion__exec_post(x, &b);
    orion_buf_free(&b);
    return 0;
  }
  while (i < n && rc == 0) {
    int64_t k = orion_shard_chunk_of(sh, items[i].key), j = i, end;
    int owner = orion_shard_owner(sh, x->npeers, k);
    /* The owner's chunks end at this key (items come in key order). */
    end = orion_shard_chunk_key(
        sh, orion_shard_first(owner + 1, x->npeers, sh->nchunks));
    while (j < n && items[j].key < end)
      j++;
    if (owner == x->id && block >= 0) {
      orion__hold_items(x, id, block, items + i, j - i);
    } else if (owner == x->id) {
      rc = orion__shard_apply_own(x, sh, id, items + i, j - i, 1, -1, err);
    } else {
      /* Applied at once: our copy has them too (exec_ryw.c). */
      if (block < 0)
        rc = orion__ryw_sent(x, owner, id, items + i, j - i, err);
      write_flush(&b, x->run, id, isint, items + i, j - i, block);
      pthread_mutex_lock(&x->mu);
      x->outstanding++;
      pthread_mutex_unlock(&x->mu);
      orion__peer_post(x, owner, &b, 0);
      /* Its FLUSH_ACK is counted here: the owner may send it after its
       * own LOOP_DONE, ours waits for it (exec_peer.c). */
      write_flush_ack(&b, x->run);
      orion__peer_count(x, b.len);
      b.len = 0;
    }
    i = j;
  }
  orion_buf_free(&b);
  return rc;
}

int orion__shard_flush_early(void *ud, int64_t buffer) {
  static int off = -1;
  if (off < 0) {
    const char *v = getenv("ORION_NO_EARLY_FLUSH");
    off = v != NULL && strcmp(v, "1") == 0;
  }
  return !off && orion__shard_of_buffer(ud, buffer) != NULL;
}

/* A BUFFER_FLUSH m from peer `from` for one of our shards: apply,
 * publish, acknowledge.  An apply error is the loop's error (reported to
 * the driver); the flush is acknowledged all the same. */
static void peer_flush(exec_state *x, int from,
                       const orion_msg_buffer_flush *m) {
  orion_error err;
  int64_t k, lo, hi;
  orion_shard *sh;
  orion_buf b;
  orion_error_clear(&err);
  sh = orion__shard_of_buffer(x, m->buffer);
  if (m->run != x->run || sh == NULL)
    orion__exec_die(x,
                    "executor %d sent buffered writes for buffer #%lld "
                    "of run %lld, which this executor does not hold",
                    from, (long long)m->buffer, (long long)m->run);
  lo = orion_shard_chunk_key(sh, sh->clo);
  hi = orion_shard_chunk_key(sh, sh->chi);
  for (k = 0; k < m->nitems; k++)
    if (m->items[k].key < lo || m->items[k].key >= hi)
      orion__exec_die(x,
                      "executor %d sent buffered writes outside this "
                      "executor's shard",
                      from);
  if (!x->failed && m->block >= 0) /* a flush = "loop" block's: held */
    orion__hold_items(x, m->buffer, m->block, m->items, m->nitems);
  else if (!x->failed && orion__shard_apply_own(x, sh, m->buffer, m->items,
                                                m->nitems, 1, from,
                                                &err) != 0) {
    x->failed = 1;
    orion__exec_post_error(x, -1, err.msg);
  } else if (x->failed && m->block < 0) { /* dropped, but taken in */
    pthread_mutex_lock(&x->mu);
    orion__ryw_took(x, from);
    pthread_mutex_unlock(&x->mu);
  }
  orion_buf_init(&b);
  write_flush_ack(&b, m->run);
  orion__peer_post_paid(x, from, &b, 1); /* counted by the flusher */
  orion_buf_free(&b);
}

int orion__shard_on_flush(exec_state *x, job *j) {
  orion_msg_buffer_flush m;
  read_flush(x, j, &m);
  if (m.run > x->run) { /* its LOAD_BODY is still on the way */
    job **tail;
    orion_msg_buffer_flush_free(&m); /* decoded again then */
    for (tail = &x->early; *tail != NULL; tail = &(*tail)->next)
      ;
    *tail = j;
    j->next = NULL;
    return 1;
  }
  peer_flush(x, j->from, &m);
  orion_msg_buffer_flush_free(&m);
  return 0;
}

void orion__shard_apply_early(exec_state *x) {
  while (x->early != NULL) { /* peers' writes that came first */
    job *e = x->early;
    orion_msg_buffer_flush m;
    x->early = e->next;
    read_flush(x, e, &m);
    peer_flush(x, e->from, &m);
    orion_msg_buffer_flush_free(&m);
    orion__exec_job_free(e);
  }
}

/* ---- fetching other owners' chunks (compute thread) --------------------- */

/* A FETCH of chunks [lo, hi) of sh, with the versions we hold. */
static void write_fetch(exec_state *x, orion_buf *b, const orion_shard *sh,
                        int64_t lo, int64_t hi) {
  orion_msg_fetch m = {x->run, sh->id, lo, hi, sh->have + lo};
  if (orion_msg_fetch_encode(b, &m) == -EMSGSIZE)
    orion__exec_die(x, "a FETCH of %lld chunks exceeds the largest frame",
                    (long long)(hi - lo));
  /* out of memory: b->oom, which orion__peer_post reports */
}

/* Installs the chunks of a FETCH_REPLY in our copy; dies on a malformed
 * one. */
static void apply_fetch_reply(exec_state *x, const job *j) {
  orion_msg_fetch_reply m;
  orion_error err;
  int64_t k;
  orion_shard *sh;
  orion_error_clear(&err);
  if (orion_msg_fetch_reply_decode(j->payload, j->len, &m, &err) != 0)
    orion__exec_die(x, "executor %d sent a malformed FETCH_REPLY: %s",
                    j->from, err.msg);
  if ((sh = orion__shard_find(x, m.array)) == NULL)
    orion__exec_die(x, "executor %d sent a malformed FETCH_REPLY: array "
                       "%lld is not a sharded array here",
                    j->from, (long long)m.array);
  for (k = 0; k < m.nchunks; k++)
    if (orion_shard_install(sh, &m.chunks[k]) != 0)
      orion__exec_die(x, "executor %d sent a malformed FETCH_REPLY: chunk "
                         "%lld of array %lld does not fit it",
                      j->from, (long long)m.chunks[k].chunk,
                      (long long)m.array);
  orion__ryw_reply(x, j->from, sh, &m);
  orion_msg_fetch_reply_free(&m);
}

/* The next FETCH_REPLY, waiting for it up to the deadline; NULL when none
 * is awaited any more.  Dies when the owners stay silent. */
static job *next_reply(exec_state *x, double deadline) {
  job *j;
  double t = orion__wait_begin();
  pthread_mutex_lock(&x->mu);
  while (x->replies == NULL && x->awaiting > 0 && orion_now() < deadline) {
    orion__exec_nap(x);
  }
  orion__wait_end(x, t);
  j = x->replies;
  if (j != NULL)
    x->replies = j->next;
  else if (x->awaiting > 0) {
    pthread_mutex_unlock(&x->mu);
    orion__exec_die(x,
                    "no answer from the owners of a sharded array in "
                    "%.0f s",
                    2 * x->hb_timeout);
  }
  pthread_mutex_unlock(&x->mu);
  return j;
}

/* Before a block: brings the rows of the sharded arrays the body reads up
 * to date from their owners (only chunks whose version changed travel).
 * Read-only ones are fetched once per run, the targets of flush = "clock"
 * buffers once per clock. */
void orion__shard_fetch(exec_state *x) {
  int i, e;
  int64_t asked = 0;
  double deadline;
  job *j;
  for (i = 0; i < x->nshards; i++) {
    orion_shard *sh = &x->shards[i];
    if (sh->a == NULL || sh->run != x->run || !(sh->flags & ORION_SHARD_FETCH))
      continue;
    if (!(sh->flags & ORION_SHARD_WRITTEN) && sh->fetched_run == x->run)
      continue;
    /* A flush = "clock" target is refreshed once a clock, after its
     * flush (a parameter-server worker's pull); inside the clock our copy
     * holds the target as of its start. */
    if (sh->fetched_run == x->run && orion_exec_mid_clock(x->ex, sh->a))
      continue;
    sh->fetched_run = x->run;
    for (e = 0; e < x->npeers; e++) {
      int64_t lo = orion_shard_first(e, x->npeers, sh->nchunks);
      int64_t hi = orion_shard_first(e + 1, x->npeers, sh->nchunks);
      orion_buf b;
      if (e == x->id || hi <= lo)
        continue;
      orion_buf_init(&b);
      write_fetch(x, &b, sh, lo, hi);
      pthread_mutex_lock(&x->mu);
      x->awaiting++;
      pthread_mutex_unlock(&x->mu);
      orion__peer_post(x, e, &b, 0);
      orion_buf_free(&b);
      asked++;
    }
  }
  if (asked == 0)
    return;
  deadline = orion_now() + 2 * x->hb_timeout;
  while ((j = next_reply(x, deadline)) != NULL) {
    apply_fetch_reply(x, j);
    orion__exec_job_free(j);
  }
}

/* ---- serving our chunks (loop thread) ----------------------------------- */

/* Answers a FETCH from the served copy, or returns 1 when the run it asks
 * about has not started here yet (it is kept and retried).  A malformed
 * FETCH closes the peer's connection, deferred or not. */
static int serve_fetch(exec_state *x, int from, const char *p, size_t len) {
  orion_msg_fetch m;
  orion_msg_fetch_reply rm;
  orion_msg_chunk *chunks = NULL;
  orion_shard *sh;
  orion_buf b;
  int rc;
  if (orion_msg_fetch_decode(p, len, &m, NULL) != 0) {
    if (x->peers[from].in != NULL)
      orion_conn_close(x->peers[from].in, "malformed FETCH");
    return 0;
  }
  pthread_mutex_lock(&x->mu);
  sh = orion__shard_find(x, m.array);
  if (sh == NULL || sh->served_run < m.run || sh->served_run == 0) {
    pthread_mutex_unlock(&x->mu);
    orion_msg_fetch_free(&m);
    return 1;
  }
  if (m.chunk_lo != sh->clo || m.chunk_hi != sh->chi) {
    pthread_mutex_unlock(&x->mu);
    orion_msg_fetch_free(&m);
    if (x->peers[from].in != NULL)
      orion_conn_close(x->peers[from].in, "malformed FETCH");
    return 0;
  }
  /* The chunks whose version differs from the one the requester holds,
   * their rows changed since, pointing into the served copy (encoded
   * while x->mu is held). */
  rm.nchunks = orion_shard_changed(sh, m.versions, NULL);
  if (rm.nchunks > 0) {
    chunks = orion_malloc(sizeof *chunks * (size_t)rm.nchunks);
    if (chunks == NULL)
      orion__exec_die(x, "out of memory");
    orion_shard_changed(sh, m.versions, chunks);
  }
  rm.array = m.array;
  rm.chunks = chunks;
  rm.applied = orion__ryw_applied(x, from);
  orion_buf_init(&b);
  rc = orion_msg_fetch_reply_encode(&b, &rm);
  pthread_mutex_unlock(&x->mu);
  orion_free(chunks);
  orion_msg_fetch_free(&m);
  if (rc != 0)
    orion__exec_die(x, "a FETCH_REPLY exceeds the largest frame");
  orion__peer_answer(x, from, &b);
  orion_buf_free(&b);
  return 0;
}

void orion__shard_on_fetch(exec_state *x, orion_conn *c, int from,
                           const orion_wire_frame *f) {
  job *j;
  if (serve_fetch(x, from, (const char *)f->payload, f->len) == 0)
    return;
  j = orion__exec_job_take(x, c, f, from); /* kept for later */
  j->next = x->deferred;
  x->deferred = j;
}

void orion__shard_serve_deferred(exec_state *x) {
  job **pp = &x->deferred;
  while (*pp != NULL) {
    job *j = *pp;
    job *next = j->next;
    if (j->type == ORION_WIRE_SHARD_WRITE) {
      /* served: it now belongs to the compute thread's list */
      if (orion__swrite_serve(x, j) == 0)
        *pp = next;
      else
        pp = &j->next;
    } else if (serve_fetch(x, j->from, j->payload, j->len) == 0) {
      *pp = next;
      orion__exec_job_free(j);
    } else {
      pp = &j->next;
    }
  }
}

/* A FETCH_REPLY for the compute thread, which waits for it. */
void orion__shard_on_fetch_reply(exec_state *x, orion_conn *c, int from,
                                 const orion_wire_frame *f) {
  job *j = orion__exec_job_take(x, c, f, from), **tail;
  pthread_mutex_lock(&x->mu);
  for (tail = &x->replies; *tail != NULL; tail = &(*tail)->next)
    ;
  *tail = j;
  x->awaiting--;
  pthread_cond_signal(&x->fcv);
  pthread_mutex_unlock(&x->mu);
}

/* An owner applied one of our BUFFER_FLUSHes (FLUSH_ACK): the LOOP_DONE
 * held back for them goes out with the last. */
void orion__shard_on_flush_ack(exec_state *x, orion_conn *c, int from,
                               const orion_wire_frame *f) {
  orion_msg_flush_ack m;
  orion_buf done;
  (void)c;
  if (orion_msg_flush_ack_decode(f->payload, f->len, &m, NULL) != 0)
    orion__exec_die(x, "executor %d sent a malformed FLUSH_ACK", from);
  orion_buf_init(&done);
  pthread_mutex_lock(&x->mu);
  if (x->outstanding > 0 && --x->outstanding == 0 && x->done_held) {
    done = x->done_frame;
    orion_buf_init(&x->done_frame);
    x->done_held = 0;
  }
  pthread_mutex_unlock(&x->mu);
  if (done.len > 0)
    orion_conn_send(x->conn, &done);
  orion_buf_free(&done);
}

void orion__exec_test_die(const exec_state *x, const char *frame) {
  const char *v = getenv("ORION_TEST_DIE_AT");
  char *end;
  if (v != NULL && v[0] != '\0' && strtol(v, &end, 10) == x->id &&
      *end == ':' && strcmp(end + 1, frame) == 0)
    _exit(1);
}

/* Appends the chunks of sh that runs[0..n) changed to *v as ranges of
 * elements (no values), whole chunks, adjacent ones merged: an owner that
 * keeps its rows tells the driver only which chunks changed, one range
 * when the changes are dense, never more ranges than chunks.  0 or
 * ORION_ENOMEM. */
static int kept_ranges(const orion_shard *sh, const orion_msg_run *runs,
                       int64_t n, orion_msg_range **v, int64_t *nv,
                       int64_t *cap) {
  int64_t k;
  for (k = 0; k < n; k++) {
    int64_t k0 = orion_shard_chunk_of(sh, runs[k].first);
    int64_t k1 = orion_shard_chunk_of(sh, runs[k].first + runs[k].count - 1);
    int64_t first, count;
    orion_msg_range *last = *nv > 0 ? &(*v)[*nv - 1] : NULL;
    orion_shard_chunk_elems(sh, k0, k1 + 1, &first, &count);
    if (last != NULL && last->array == sh->id &&
        last->first + last->count >= first) {
      if (first + count > last->first + last->count)
        last->count = first + count - last->first;
      continue;
    }
    if (*nv == *cap) {
      int64_t nc = *cap > 0 ? 2 * *cap : 16;
      orion_msg_range *nr = orion_realloc(*v, sizeof *nr * (size_t)nc);
      if (nr == NULL)
        return ORION_ENOMEM;
      *v = nr;
      *cap = nc;
    }
    (*v)[*nv].array = sh->id;
    (*v)[*nv].first = first;
    (*v)[*nv].count = count;
    (*nv)++;
  }
  return 0;
}

/* SHARD_PULL: every block's writes are in, so the held ones are applied
 * (executor/exec_hold.c), block by block; then the changed rows of our
 * shards written in this run go to the driver in a SHARD_DATA, runs
 * pointing into the served copies (encoded while x->mu is held), or with
 * keep only their ranges: the rows stay here, the newest copy, until the
 * driver's ROWS_PULL or the next loop's FETCHes. */
int orion__shard_on_pull(exec_state *x, job *j) {
  orion_msg_shard_pull pull;
  orion_msg_shard_data m;
  orion_msg_runvec runs;
  orion_msg_range *kept = NULL;
  int64_t capkept = 0;
  orion_buf b;
  int i, rc = 0;
  if (orion_msg_shard_pull_decode(j->payload, j->len, &pull, NULL) != 0)
    orion__exec_die(x, "the driver sent a malformed SHARD_PULL frame");
  orion__exec_test_die(x, "SHARD_PULL");
  orion__hold_apply(x);
  memset(&runs, 0, sizeof runs);
  memset(&m, 0, sizeof m);
  orion_buf_init(&b);
  pthread_mutex_lock(&x->mu);
  for (i = 0; i < x->nshards && rc == 0; i++) {
    orion_shard *sh = &x->shards[i];
    if (sh->a == NULL || sh->run != x->run ||
        !(sh->flags & ORION_SHARD_WRITTEN))
      continue;
    if (pull.keep) {
      runs.n = 0;
      rc = orion_shard_diff(sh, &runs);
      if (rc == 0)
        rc = kept_ranges(sh, runs.v, runs.n, &kept, &m.nkept, &capkept);
    } else {
      rc = orion_shard_diff(sh, &runs);
    }
  }
  if (!pull.keep) {
    m.runs = runs.v;
    m.nruns = runs.n;
  }
  m.kept = kept;
  if (rc == 0)
    rc = orion_msg_shard_data_encode(&b, &m);
  pthread_mutex_unlock(&x->mu);
  orion_msg_runvec_free(&runs);
  orion_free(kept);
  if (rc == ORION_ENOMEM)
    orion__exec_die(x, "out of memory sending this executor's shards");
  if (rc != 0)
    orion__exec_die(x, "the changes of this executor's shards exceed the "
                       "largest frame");
  orion__exec_post(x, &b);
  orion_buf_free(&b);
  return 0;
}
