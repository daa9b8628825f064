/* orion-executor's one message handler.  Every frame that reaches the
 * executor, from the driver or from a peer, goes through dispatch(): one
 * table says, per frame type, which connections may send it and who
 * handles it: a handler on the loop thread (answers that must not wait
 * for a computing block: FETCH, FETCH_REPLY, FLUSH_ACK, MOVE_ROWS, the
 * handshake)
 * or one on the compute thread, to which the frame's payload is queued in
 * arrival order (LOAD_BODY, RUN_BLOCK, LOOP_END, FORGET, LOAD_FILE,
 * BUFFER_FLUSH, SHARD_PULL: it comes once the loop is over everywhere, and
 * first applies the writes held for block order).  The compute thread's loop lives here too: it
 * takes the queue and calls the same table's compute handlers.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "executor/exec_load.h"
#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "dsm/net.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* The connections a frame may arrive on. */
enum {
  FROM_DRIVER = 1,   /* the driver's connection */
  FROM_PEER_IN = 2,  /* one a peer opened to us: its requests */
  FROM_PEER_OUT = 4, /* one we opened to a peer: its answers */
  FROM_ANY = 7
};

/* A loop-thread handler: frame f on connection c, from peer `from` (-1:
 * the driver).  f and its payload are valid during the call only. */
typedef void (*loop_fn)(exec_state *x, orion_conn *c, int from,
                        const orion_wire_frame *f);
/* A compute-thread handler of a queued payload; returns 1 when it kept
 * the job (it frees it later), 0 to have it freed. */
typedef int (*compute_fn)(exec_state *x, job *j);

static void on_welcome(exec_state *x, orion_conn *c, int from,
                       const orion_wire_frame *f) {
  (void)c;
  if (from < 0 && x->joining && f->len >= 4) {
    /* --join: the driver named this executor's id. */
    const unsigned char *p = f->payload;
    x->id = (int)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    x->joining = 0;
    if (x->start != NULL)
      x->start(x);
  }
  if (from < 0) /* the driver accepted our HELLO: heartbeats may start */
    x->welcomed = 1;
}

static void on_heartbeat(exec_state *x, orion_conn *c, int from,
                         const orion_wire_frame *f) {
  (void)x; /* the connection noted the time it arrived */
  (void)c;
  (void)from;
  (void)f;
}

/* The end of the job: silent (exit 0) when it ended normally; after a
 * failure the driver says why, and the executor prints it and exits
 * ORION_EXEC_EXIT_CLUSTER, so that no executor of a failed job ends
 * silently with 0. */
static void on_shutdown(exec_state *x, orion_conn *c, int from,
                        const orion_wire_frame *f) {
  orion_msg_shutdown m;
  (void)c;
  (void)from;
  if (orion_msg_shutdown_decode(f->payload, f->len, &m, NULL) != 0)
    orion__exec_die(x, "stopping: the driver ended the job (with a "
                       "malformed SHUTDOWN frame)");
  if (m.len > 0)
    orion__exec_die(x, "stopping: the driver ended the job (%.*s)",
                    (int)m.len, m.reason);
  fflush(stderr);
  _exit(0);
}

/* LOAD_FILE: parse this executor's part of a file and answer LOADED. */
static int load_file(exec_state *x, job *j) {
  orion_buf b;
  orion_buf_init(&b);
  orion_executor_load_range(j->payload, j->len, &b);
  orion__exec_post(x, &b);
  orion_buf_free(&b);
  return 0;
}

static const struct frame_rule {
  int sources;           /* FROM_... */
  loop_fn on_loop;       /* handled on the loop thread, or NULL: */
  compute_fn on_compute; /* queued for the compute thread */
} rules[ORION_WIRE_TYPE_END] = {
    [ORION_WIRE_HELLO] = {FROM_PEER_IN, orion__peer_on_hello, NULL},
    [ORION_WIRE_WELCOME] = {FROM_DRIVER | FROM_PEER_OUT, on_welcome, NULL},
    [ORION_WIRE_HEARTBEAT] = {FROM_ANY, on_heartbeat, NULL},
    [ORION_WIRE_SHUTDOWN] = {FROM_DRIVER, on_shutdown, NULL},
    [ORION_WIRE_PEERS] = {FROM_DRIVER, orion__peer_on_peers, NULL},
    [ORION_WIRE_SHARD_PULL] = {FROM_DRIVER, NULL, orion__shard_on_pull},
    [ORION_WIRE_LOAD_BODY] = {FROM_DRIVER, NULL, orion__run_load_body},
    [ORION_WIRE_RUN_BLOCK] = {FROM_DRIVER, NULL, orion__run_block},
    [ORION_WIRE_LOOP_END] = {FROM_DRIVER, NULL, orion__run_loop_end},
    [ORION_WIRE_FORGET] = {FROM_DRIVER, NULL, orion__replica_forget},
    [ORION_WIRE_LOAD_FILE] = {FROM_DRIVER, NULL, load_file},
    [ORION_WIRE_FETCH] = {FROM_PEER_IN, orion__shard_on_fetch, NULL},
    [ORION_WIRE_BUFFER_FLUSH] = {FROM_PEER_IN, NULL, orion__shard_on_flush},
    [ORION_WIRE_FETCH_REPLY] = {FROM_PEER_OUT, orion__shard_on_fetch_reply,
                                NULL},
    [ORION_WIRE_FLUSH_ACK] = {FROM_PEER_OUT, orion__shard_on_flush_ack, NULL},
    [ORION_WIRE_ROWS] = {FROM_PEER_IN, orion__rows_on_rows, NULL},
    [ORION_WIRE_SHARD_WRITE] = {FROM_PEER_IN, orion__swrite_on_write, NULL},
    [ORION_WIRE_WRITE_ACK] = {FROM_PEER_OUT, orion__swrite_on_ack, NULL},
    [ORION_WIRE_SEND_ROWS] = {FROM_DRIVER, NULL, orion__rows_send},
    [ORION_WIRE_ROWS_PULL] = {FROM_DRIVER, NULL, orion__rows_pull},
    [ORION_WIRE_CKPT_WRITE] = {FROM_DRIVER, NULL, orion__ckpt_write},
    [ORION_WIRE_MOVE_ROWS] = {FROM_DRIVER, orion__rows_on_move, NULL},
    [ORION_WIRE_BCAST] = {FROM_DRIVER | FROM_PEER_IN, orion__chain_on_bcast,
                          NULL},
};

/* Queues a request for the compute thread.  In a run with a flush =
 * "clock" buffer (x->flush_ahead), a peer's BUFFER_FLUSH goes ahead of
 * the RUN_BLOCKs queued last (after every other job, and after the
 * flushes before it): an owner takes the writes in before its next block
 * rather than after every block already queued to it, so that the
 * refreshes it serves, and the writer's own, bring them back within a
 * block (the clock's bounded staleness; the order of flushes from one
 * peer, and everything's order against LOAD_BODY, LOOP_END and
 * SHARD_PULL, stays).  flush = "block" keeps the arrival order: with it,
 * data-parallel MF at 4 executors diverged more often (bench/README.md). */
static void enqueue(exec_state *x, job *j) {
  int ahead = j->type == ORION_WIRE_BUFFER_FLUSH &&
              atomic_load(&x->flush_ahead) != 0;
  pthread_mutex_lock(&x->mu);
  if (ahead && x->head != NULL && x->head->type == ORION_WIRE_RUN_BLOCK) {
    j->next = x->head;
    x->head = j;
  } else if (ahead && x->head != NULL) {
    job *at = x->head; /* the last job that is not a RUN_BLOCK */
    job *p;
    for (p = at->next; p != NULL; p = p->next)
      if (p->type != ORION_WIRE_RUN_BLOCK)
        at = p;
    j->next = at->next;
    at->next = j;
    if (x->tail == at)
      x->tail = j;
  } else if (x->tail != NULL) {
    x->tail->next = j;
    x->tail = j;
  } else {
    x->head = j;
    x->tail = j;
  }
  x->jobs_open++;
  pthread_cond_signal(&x->cv);
  /* A compute thread waiting for an earlier block's rows may start this
   * one (executor/exec_order.c). */
  pthread_cond_broadcast(&x->fcv);
  pthread_mutex_unlock(&x->mu);
}

/* Frame f arrived on c (a `source` connection; from: the peer, -1 for the
 * driver or a peer before its HELLO).  Loop thread. */
static void dispatch(exec_state *x, orion_conn *c, int source, int from,
                     const orion_wire_frame *f) {
  const struct frame_rule *r = NULL;
  if (f->type > 0 && f->type < ORION_WIRE_TYPE_END)
    r = &rules[f->type];
  if (source == FROM_PEER_IN && from < 0 && f->type != ORION_WIRE_HELLO) {
    orion_conn_close(c, "a %s frame before HELLO",
                     orion_wire_type_name(f->type));
    return;
  }
  if (r == NULL || !(r->sources & source)) {
    if (source == FROM_DRIVER)
      orion_conn_close(c, "unexpected %s frame from the driver",
                       orion_wire_type_name(f->type));
    else
      orion_conn_close(c, "unexpected %s frame from executor %d",
                       orion_wire_type_name(f->type), from);
    return;
  }
  if (r->on_loop != NULL)
    r->on_loop(x, c, from, f);
  else
    enqueue(x, orion__exec_job_take(x, c, f, from));
}

void orion__exec_on_driver_frame(orion_conn *c, const orion_wire_frame *f) {
  dispatch(orion__exec_of(c), c, FROM_DRIVER, -1, f);
}

void orion__exec_on_peer_in_frame(orion_conn *c, const orion_wire_frame *f) {
  dispatch(orion__exec_of(c), c, FROM_PEER_IN, orion__peer_index(c), f);
}

void orion__exec_on_peer_out_frame(orion_conn *c, const orion_wire_frame *f) {
  dispatch(orion__exec_of(c), c, FROM_PEER_OUT, orion__peer_index(c), f);
}

void *orion__exec_compute_main(void *arg) {
  exec_state *x = arg;
  for (;;) {
    job *j;
    pthread_mutex_lock(&x->mu);
    j = orion__order_take(x);
    if (j == NULL) {
      pthread_mutex_unlock(&x->mu);
      return NULL;
    }
    pthread_mutex_unlock(&x->mu);
    /* Only types with a compute handler are queued (dispatch). */
    orion_assert(rules[j->type].on_compute != NULL);
    if (!rules[j->type].on_compute(x, j))
      orion__exec_job_free(j);
    pthread_mutex_lock(&x->mu);
    x->jobs_open--;
    pthread_mutex_unlock(&x->mu);
  }
}
