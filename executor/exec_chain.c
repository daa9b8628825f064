/* orion-executor's part in a broadcast along a chain (scheduler/dist_chain.c):
 * BCAST frames come from the driver (executor 0, or everyone in a star)
 * or from the executor before this one.  The loop thread passes each on,
 * unchanged, to executor id + 1 the moment it arrives (when the frame says
 * forward and there is one), so that a large array streams through the
 * chain piece by piece instead of hop by hop; then it keeps the frame for
 * the compute thread, which copies the pieces into its replica while
 * setting up the array's shard (LOAD_BODY, ORION_SHARD_CHAIN), before the
 * loop's first block runs here.  A chained body's pieces (ORION_BCAST_BODY)
 * are put together the same way before the body is loaded.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/error.h"

void orion__chain_on_bcast(exec_state *x, orion_conn *c, int from,
                           const orion_wire_frame *f) {
  orion_msg_bcast m;
  job *j, **tail;
  if (orion_msg_bcast_decode(f->payload, f->len, &m, NULL) != 0) {
    if (from < 0)
      orion__exec_die(x, "the driver sent a malformed BCAST frame");
    orion_conn_close(c, "malformed BCAST frame");
    return;
  }
  if (m.forward && x->id + 1 < x->npeers) {
    orion_buf b;
    orion_buf_init(&b);
    if (orion_wire_encode(&b, ORION_WIRE_BCAST, f->payload, f->len) != 0)
      b.oom = 1; /* orion__peer_post reports it */
    orion__peer_post(x, x->id + 1, &b, 0);
    orion_buf_free(&b);
  }
  orion_msg_bcast_free(&m);
  j = orion__exec_job_take(x, c, f, from);
  pthread_mutex_lock(&x->mu);
  for (tail = &x->bcast_in; *tail != NULL; tail = &(*tail)->next)
    ;
  *tail = j;
  pthread_cond_signal(&x->fcv);
  pthread_mutex_unlock(&x->mu);
}

/* Takes from x->bcast_in the first piece of run `run` and array `id`,
 * dropping those of earlier runs on the way; NULL when none is in yet.
 * x->mu held. */
static job *take_piece(exec_state *x, int64_t run, int64_t id,
                       orion_msg_bcast *m) {
  job **pp = &x->bcast_in;
  while (*pp != NULL) {
    job *j = *pp;
    if (orion_msg_bcast_decode(j->payload, j->len, m, NULL) != 0)
      orion__exec_die(x, "executor %d sent a malformed BCAST frame", j->from);
    if (m->run < run) { /* a failed run's leftovers */
      *pp = j->next;
      orion_msg_bcast_free(m);
      orion__exec_job_free(j);
      continue;
    }
    if (m->run == run && m->array == id) {
      *pp = j->next;
      return j;
    }
    orion_msg_bcast_free(m);
    pp = &j->next;
  }
  return NULL;
}

/* Puts one piece's run where it belongs: into array a, or into a chained
 * body's bytes. */
typedef int (*piece_fn)(void *ud, const orion_msg_run *run);

/* Takes every piece of run x->run's broadcast `id` (what names it in
 * messages), handing each run to fn, however many pieces the first one
 * says there are.  Dies when the pieces stop coming for twice the
 * heartbeat timeout. */
static int take_all(exec_state *x, int64_t id, const char *what, piece_fn fn,
                    void *ud, orion_error *err) {
  int64_t got = 0, want = -1, k;
  double t = orion__wait_begin(), quiet = 2 * x->hb_timeout;
  double deadline = orion_now() + quiet;
  int rc = 0;
  while (want < 0 || got < want) {
    orion_msg_bcast m;
    job *j;
    pthread_mutex_lock(&x->mu);
    while ((j = take_piece(x, x->run, id, &m)) == NULL &&
           orion_now() < deadline)
      orion__exec_nap(x);
    pthread_mutex_unlock(&x->mu);
    if (j == NULL)
      orion__exec_die(x,
                      "%s: %lld of %lld pieces of its broadcast came, then "
                      "none for %.0f s",
                      what, (long long)got, (long long)want, quiet);
    if (want >= 0 && m.nframes != want)
      orion__exec_die(x, "executor %d sent a BCAST frame of %s that "
                         "disagrees on the number of pieces",
                      j->from, what);
    want = m.nframes;
    for (k = 0; k < m.nruns && rc == 0; k++)
      if (m.runs[k].array != id || fn(ud, &m.runs[k]) != 0)
        rc = orion_error_set(err, ORION_EPARSE,
                             "executor %d: a BCAST frame of %s does not fit "
                             "its shape",
                             x->id, what);
    orion_msg_bcast_free(&m);
    orion__exec_job_free(j);
    got++;
    deadline = orion_now() + quiet;
  }
  orion__wait_end(x, t);
  return rc;
}

static int array_piece(void *ud, const orion_msg_run *run) {
  return orion_msg_run_apply(ud, run);
}

int orion__chain_take(exec_state *x, int64_t id, orion_array *a,
                      orion_error *err) {
  char what[64];
  snprintf(what, sizeof what, "array #%lld", (long long)id);
  return take_all(x, id, what, array_piece, a, err);
}

typedef struct body_bytes {
  char *p;
  int64_t len;
} body_bytes;

static int body_piece(void *ud, const orion_msg_run *run) {
  body_bytes *bb = ud;
  if (run->first < 0 || run->count < 0 || run->first > bb->len ||
      run->count > bb->len - run->first || run->len > (size_t)run->count)
    return ORION_EPARSE;
  orion_msg_run_copy(bb->p + run->first, run, 1);
  return 0;
}

char *orion__chain_take_body(exec_state *x, int64_t len, orion_error *err) {
  body_bytes bb;
  bb.len = len;
  bb.p = orion_malloc((size_t)len + 1);
  if (bb.p == NULL) {
    orion_error_set(err, ORION_ENOMEM, "executor %d: out of memory for a "
                                       "body of %lld bytes",
                    x->id, (long long)len);
    return NULL;
  }
  memset(bb.p, 0, (size_t)len); /* pieces that never came stay zero */
  if (take_all(x, ORION_BCAST_BODY, "the loop's body", body_piece, &bb,
               err) != 0) {
    orion_free(bb.p);
    return NULL;
  }
  return bb.p;
}
