/* orion-executor's directly written sharded arrays (ORION_SHARD_DIRECT,
 * a `server (read-write)` placement): the body writes its copy, and after
 * each block the elements it changed (the driver's watched ranges,
 * compared with their snapshot) go to the owners of their chunks, not to
 * the driver:
 *   - elements of our own chunks are published from our copy at once;
 *   - the others go to their owners in a SHARD_WRITE each, and the block
 *     is reported done only once every owner has answered WRITE_ACK, so
 *     that a block the driver sends next and that fetches those chunks
 *     (at its start, executor/exec_shard.c) sees them;
 *   - an owner applies a SHARD_WRITE to its served copy on the loop thread
 *     (bumping the chunks' versions, so that fetches see it), answers at
 *     once, and copies it into its own copy on the compute thread before
 *     its next block and before it publishes its own writes (both under
 *     x->mu, so that publishing never overwrites a write it has not copied
 *     yet).
 * Two blocks of one clock writing one element give the value that arrives
 * last, as the driver's dirty-element write-back did.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "dsm/proto.h"
#include "dsm/shard.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"

static orion_shard *direct(exec_state *x, int64_t array) {
  orion_shard *sh = orion__shard_find(x, array);
  return sh != NULL && sh->a != NULL && sh->run == x->run &&
                 (sh->flags & ORION_SHARD_DIRECT)
             ? sh
             : NULL;
}

int orion__swrite_is_direct(exec_state *x, int64_t array) {
  int yes;
  pthread_mutex_lock(&x->mu);
  yes = direct(x, array) != NULL;
  pthread_mutex_unlock(&x->mu);
  return yes;
}

/* Copies the SHARD_WRITEs applied to our served copies into our own
 * copies.  With x->mu held; compute thread. */
static void copy_in(exec_state *x) {
  while (x->writes_in != NULL) {
    job *j = x->writes_in;
    orion_msg_shard_write m;
    int64_t k;
    x->writes_in = j->next;
    if (orion_msg_shard_write_decode(j->payload, j->len, &m, NULL) == 0) {
      for (k = 0; k < m.nruns; k++) {
        orion_shard *sh = orion__shard_find(x, m.runs[k].array);
        if (sh != NULL && sh->a != NULL)
          orion_msg_run_apply(sh->a, &m.runs[k]); /* checked on arrival */
      }
      orion_msg_shard_write_free(&m);
    }
    orion__exec_job_free(j);
  }
}

void orion__swrite_sync(exec_state *x) {
  pthread_mutex_lock(&x->mu);
  copy_in(x);
  pthread_mutex_unlock(&x->mu);
}

/* The part of run r that lies in elements [lo, hi), or count 0. */
static orion_msg_run clip(const orion_msg_run *r, size_t esz, int64_t lo,
                          int64_t hi) {
  orion_msg_run c = *r;
  int64_t a = r->first > lo ? r->first : lo;
  int64_t b = r->first + r->count < hi ? r->first + r->count : hi;
  c.count = b > a ? b - a : 0;
  if (c.count > 0) {
    c.data = r->data + (size_t)(a - r->first) * esz;
    c.len = (size_t)c.count * esz;
    c.first = a;
  }
  return c;
}

int orion__swrite_send(exec_state *x, const orion_msg_run *runs, int64_t n,
                       orion_error *err) {
  orion_msg_run *part = orion_malloc(sizeof *part * (size_t)n + 1);
  double deadline, t0;
  int e;
  int64_t k;
  if (part == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (e = 0; e < x->npeers; e++) {
    orion_msg_shard_write m;
    orion_buf b;
    m.run = x->run;
    m.runs = part;
    m.nruns = 0;
    pthread_mutex_lock(&x->mu);
    for (k = 0; k < n; k++) {
      orion_shard *sh = direct(x, runs[k].array);
      int64_t lo, cnt;
      if (sh == NULL)
        continue;
      orion_shard_chunk_elems(sh, orion_shard_first(e, x->npeers, sh->nchunks),
                              orion_shard_first(e + 1, x->npeers, sh->nchunks),
                              &lo, &cnt);
      part[m.nruns] = clip(&runs[k], sh->esz, lo, lo + cnt);
      if (part[m.nruns].count > 0)
        m.nruns++;
    }
    if (e == x->id) { /* ours: copy the owners' writes in, then publish */
      copy_in(x);
      for (k = 0; k < m.nruns; k++) { /* the chunks the run touches */
        orion_shard *sh = direct(x, part[k].array);
        orion_shard_publish(
            sh, orion_shard_chunk_of(sh, part[k].first),
            orion_shard_chunk_of(sh, part[k].first + part[k].count - 1) + 1,
            0, &x->vcounter);
      }
      pthread_mutex_unlock(&x->mu);
      continue;
    }
    if (m.nruns > 0)
      x->writes_out++;
    pthread_mutex_unlock(&x->mu);
    if (m.nruns == 0)
      continue;
    orion_buf_init(&b);
    if (orion_msg_shard_write_encode(&b, &m) != 0)
      orion__exec_die(x, "a SHARD_WRITE exceeds the largest frame");
    orion__peer_post(x, e, &b, 0);
    orion_buf_free(&b);
  }
  orion_free(part);
  /* The owners' answers, before the block is reported done. */
  t0 = orion__wait_begin();
  deadline = orion_now() + 2 * x->hb_timeout;
  pthread_mutex_lock(&x->mu);
  while (x->writes_out > 0 && orion_now() < deadline)
    orion__exec_nap(x);
  k = x->writes_out;
  pthread_mutex_unlock(&x->mu);
  orion__wait_end(x, t0);
  if (k > 0)
    orion__exec_die(x, "no answer from the owners of a sharded array's "
                       "written elements in %.0f s",
                    2 * x->hb_timeout);
  return 0;
}

/* ---- owner side (loop thread) -------------------------------------------- */

int orion__swrite_serve(exec_state *x, job *j) {
  orion_msg_shard_write m;
  orion_msg_write_ack ack;
  orion_buf b;
  int64_t k;
  int from;
  if (orion_msg_shard_write_decode(j->payload, j->len, &m, NULL) != 0) {
    if (x->peers[j->from].in != NULL)
      orion_conn_close(x->peers[j->from].in, "malformed SHARD_WRITE");
    orion__exec_job_free(j);
    return 0;
  }
  pthread_mutex_lock(&x->mu);
  for (k = 0; k < m.nruns; k++) { /* every run's shard must be served */
    orion_shard *sh = orion__shard_find(x, m.runs[k].array);
    if (sh == NULL || sh->served_run < m.run || sh->served_run == 0) {
      pthread_mutex_unlock(&x->mu);
      orion_msg_shard_write_free(&m);
      return 1; /* its run has not started here yet */
    }
  }
  for (k = 0; k < m.nruns; k++) {
    orion_shard *sh = orion__shard_find(x, m.runs[k].array);
    const orion_msg_run *r = &m.runs[k];
    int64_t lo, cnt, c;
    orion_shard_chunk_elems(sh, sh->clo, sh->chi, &lo, &cnt);
    if (r->count <= 0 || r->first < lo || r->first + r->count > lo + cnt ||
        r->len > (size_t)r->count * sh->esz || r->len % sh->esz != 0) {
      pthread_mutex_unlock(&x->mu);
      orion__exec_die(x, "executor %d sent elements %" PRId64 "..%" PRId64
                         " of array %" PRId64 ", which are not ours",
                      j->from, r->first, r->first + r->count - 1, r->array);
    }
    orion_msg_run_copy(sh->served + (size_t)(r->first - lo) * sh->esz, r,
                       sh->esz);
    for (c = orion_shard_chunk_of(sh, r->first);
         c <= orion_shard_chunk_of(sh, r->first + r->count - 1); c++)
      sh->ver[c - sh->clo] = ++x->vcounter;
  }
  ack.run = m.run;
  from = j->from; /* j is the compute thread's once unlocked */
  orion_msg_shard_write_free(&m);
  { /* kept for the compute thread's copy */
    job **tail;
    j->next = NULL;
    for (tail = &x->writes_in; *tail != NULL; tail = &(*tail)->next)
      ;
    *tail = j;
  }
  pthread_mutex_unlock(&x->mu);
  orion_buf_init(&b);
  orion_msg_write_ack_encode(&b, &ack);
  orion__peer_answer(x, from, &b);
  orion_buf_free(&b);
  return 0;
}

void orion__swrite_on_write(exec_state *x, orion_conn *c, int from,
                            const orion_wire_frame *f) {
  job *j = orion__exec_job_take(x, c, f, from);
  if (orion__swrite_serve(x, j) == 1) { /* retried when its run starts */
    j->next = x->deferred;
    x->deferred = j;
  }
}

void orion__swrite_on_ack(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f) {
  orion_msg_write_ack m;
  (void)c;
  if (orion_msg_write_ack_decode(f->payload, f->len, &m, NULL) != 0)
    orion__exec_die(x, "executor %d sent a malformed WRITE_ACK", from);
  pthread_mutex_lock(&x->mu);
  x->writes_out--;
  pthread_cond_broadcast(&x->fcv);
  pthread_mutex_unlock(&x->mu);
}
