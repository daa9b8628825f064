/* orion-executor's peers: the other executors of the job.  Each executor
 * listens for peers on the address it reaches the driver from and learns
 * everybody's address from the driver's PEERS frame.  Between two
 * executors there are up to two connections: the one this executor opens
 * (lazily, on its first request) carries its requests and their answers;
 * the one the peer opens carries the peer's requests.  Both start with
 * dsm/sec.h's handshake (each end proves it holds the job's token, with the
 * encryption policy the driver gave this executor), then a HELLO.  The compute thread queues frames for
 * peers (orion__peer_post); the loop thread sends them (orion__peer_drain).
 * Frames from peers go to the dispatch table (executor/exec_dispatch.c).
 *
 * Counting: every frame to a peer passes here, and its bytes (framing
 * included) go to x->peer_bytes, which LOOP_DONE reports and resets.  The
 * sender counts what it sends, except an answer that the peer may send
 * after its own LOOP_DONE: the requester, whose LOOP_DONE waits for that
 * answer, counts it when it sends the request (orion__peer_count), and the
 * peer posts it uncounted (orion__peer_post_paid).  A FLUSH_ACK is such an
 * answer; a FETCH_REPLY is not (every FETCH is answered before the block
 * that asked ends, and so before any LOOP_END).  The connections' HELLO
 * and WELCOME, once per pair of executors in a job, are not counted.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "executor/exec_state.h"
#include "dsm/addr.h"
#include "dsm/net.h"
#include "dsm/msg.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"

int orion__peer_index(const orion_conn *c) {
  const peerlink *pl = c->data;
  return pl != NULL ? pl->index : -1;
}

void orion__peer_send_hello(exec_state *x, orion_conn *c) {
  orion_buf b;
  orion_wire_hello h;
  memset(&h, 0, sizeof h);
  h.executor = x->joining ? ORION_WIRE_ANY_EXECUTOR : (uint32_t)x->id;
  h.addr = x->listen_addr;
  h.addr_len = strlen(x->listen_addr);
  h.device = x->gpu_desc;
  h.device_len = strlen(x->gpu_desc);
  if (x->gpu != NULL) {
    h.gpu_total = orion_gpu_info_of(x->gpu)->total_bytes;
    h.gpu_cap = orion_gpu_info_of(x->gpu)->cap_bytes;
  }
  orion_buf_init(&b);
  if (orion_wire_hello_encode(&b, &h) != 0)
    orion__exec_die(x, "cannot encode the HELLO");
  orion_conn_send(c, &b);
  orion_buf_free(&b);
}

/* ---- the connection this executor opens to a peer ----------------------- */

static void peer_out_connected(orion_conn *c) {
  exec_state *x = orion__exec_of(c);
  peerlink *pl = c->data;
  orion__peer_send_hello(x, c);
  pl->out_ready = 1;
  orion_conn_send(c, &pl->pending);
}

/* A peer's connection ended.  At the end of a job peers exit in any
 * order, so this is fatal only while we wait on that peer; otherwise the
 * driver (which watches every executor) decides. */
static void peer_lost(exec_state *x, const peerlink *pl, const char *reason) {
  int waiting;
  pthread_mutex_lock(&x->mu);
  waiting = x->awaiting > 0 || x->outstanding > 0 || x->rows_waiting > 0;
  pthread_mutex_unlock(&x->mu);
  /* Elastic: the driver sees the loss too and re-forms the job, which
   * closes this executor's connection (and it registers again). */
  if (waiting && !x->elastic)
    orion__exec_die(x, "lost executor %d (%s:%d) while waiting on it: %s",
                    pl->index, pl->host, pl->port, reason);
}

/* A record or frame from an authenticated peer failed (dsm/net.c closes
 * such a connection "refused: ..."): changed on the way, and never
 * applied.  Fatal (exit 3, which the driver reports naming this
 * executor), as on the driver's link: the peer may be waiting for what
 * the connection carried.  A connection that never proved itself is only
 * dropped, so that nobody without the token can end an executor. */
static void refused_peer(orion_conn *c, const peerlink *pl,
                         const char *reason) {
  if (c->authed && strncmp(reason, "refused: ", 9) == 0) {
    if (pl != NULL)
      orion__exec_die(orion__exec_of(c), "dropped the link with executor "
                      "%d (%s): %s", pl->index, c->peer, reason + 9);
    orion__exec_die(orion__exec_of(c), "dropped a peer's link (%s): %s",
                    c->peer, reason + 9);
  }
}

static void peer_out_closed(orion_conn *c, const char *reason) {
  peerlink *pl = c->data;
  pl->out = NULL;
  pl->out_ready = 0;
  refused_peer(c, pl, reason);
  peer_lost(orion__exec_of(c), pl, reason);
}

/* Sends b to peer pl over the connection we opened, connecting first. */
static void peer_send_out(exec_state *x, peerlink *pl, orion_buf *b) {
  if (b->len == 0)
    return;
  if (pl->out_ready) {
    orion_conn_send(pl->out, b);
    return;
  }
  orion_buf_append(&pl->pending, b->data, b->len);
  b->len = 0;
  if (pl->out == NULL) {
    pl->out = orion__exec_connection(x, x->peer_out_frame,
                                     peer_out_closed, peer_out_connected, pl);
    if (orion_conn_connect(pl->out, pl->host, pl->port) != 0)
      orion__exec_die(x, "cannot reach executor %d at %s:%d", pl->index,
                      pl->host, pl->port);
  }
}

void orion__peer_count(exec_state *x, uint64_t n) {
  pthread_mutex_lock(&x->mu);
  x->peer_bytes += n;
  pthread_mutex_unlock(&x->mu);
}

/* orion__peer_post, counting b's bytes or (paid) not. */
static void post(exec_state *x, int e, orion_buf *b, int to_in, int paid) {
  orion_buf *q;
  if (b->oom)
    orion__exec_die(x, "out of memory building a frame for executor %d", e);
  pthread_mutex_lock(&x->mu);
  if (!paid)
    x->peer_bytes += b->len;
  q = to_in ? &x->peers[e].queued_in : &x->peers[e].queued;
  if (q->len == 0) { /* nothing queued: b's buffer goes, not a copy of it */
    orion_buf t = *q;
    *q = *b;
    *b = t;
  } else {
    orion_buf_append(q, b->data, b->len);
  }
  pthread_mutex_unlock(&x->mu);
  b->len = 0;
  orion__exec_wake(x);
}

void orion__peer_post(exec_state *x, int e, orion_buf *b, int to_in) {
  post(x, e, b, to_in, 0);
}

void orion__peer_post_paid(exec_state *x, int e, orion_buf *b, int to_in) {
  post(x, e, b, to_in, 1);
}

void orion__peer_answer(exec_state *x, int e, orion_buf *b) {
  orion__peer_count(x, b->len);
  if (x->peers[e].in != NULL)
    orion_conn_send(x->peers[e].in, b);
}

void orion__peer_drain(exec_state *x) {
  int e;
  for (e = 0; e < x->npeers; e++) {
    peerlink *pl = &x->peers[e];
    orion_buf q, qi;
    pthread_mutex_lock(&x->mu);
    q = pl->queued;
    qi = pl->queued_in;
    orion_buf_init(&pl->queued);
    orion_buf_init(&pl->queued_in);
    pthread_mutex_unlock(&x->mu);
    peer_send_out(x, pl, &q);
    if (qi.len > 0) {
      if (pl->in == NULL)
        orion__exec_die(x,
                        "executor %d went away before this one could "
                        "answer it",
                        e);
      orion_conn_send(pl->in, &qi);
    }
    orion_buf_free(&q);
    orion_buf_free(&qi);
  }
}

/* ---- connections peers open to this executor ---------------------------- */

/* A peer's HELLO (the peer proved it holds the token before); the id must be
 * another executor's that has no connection to us yet. */
void orion__peer_on_hello(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f) {
  orion_wire_hello h;
  orion_error err;
  (void)from;
  orion_error_clear(&err);
  if (orion_wire_hello_decode(f->payload, f->len, &h, &err) != 0 ||
      (int)h.executor >= x->npeers || (int)h.executor == x->id ||
      x->peers[h.executor].in != NULL) {
    orion_conn_close(c, "bad peer HELLO");
    return;
  }
  c->data = &x->peers[h.executor];
  x->peers[h.executor].in = c;
  orion_conn_send_frame(c, ORION_WIRE_WELCOME, NULL, 0);
}

static void peer_in_closed(orion_conn *c, const char *reason) {
  peerlink *pl = c->data;
  if (pl != NULL)
    pl->in = NULL;
  refused_peer(c, pl, reason);
}

static void on_peer_connection(uv_stream_t *server, int status) {
  exec_state *x = server->loop->data;
  orion_conn_cbs cbs;
  orion_conn *c;
  if (status != 0)
    return;
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = x->peer_in_frame;
  cbs.closed = peer_in_closed;
  c = orion_conn_new(&x->loop, ORION_WIRE_ACCEPT, x->token, x->encrypt, &cbs,
                     NULL);
  if (c != NULL)
    orion_conn_accept(server, c);
}

void orion__peer_listen(exec_state *x, orion_conn *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss, port = 0;
  char host[INET6_ADDRSTRLEN + 2], msg[256];
  const char *via;
  if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
    orion__exec_die(x, "cannot find this executor's address");
  if (ss.ss_family == AF_INET6)
    uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof host);
  else
    uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
  if (orion_net_listen(&x->loop, &x->listener, host, 0, on_peer_connection,
                       &port, msg, sizeof msg) != 0)
    orion__exec_die(x, "cannot listen for peers: %s", msg);
  if (ss.ss_family == AF_INET6)
    snprintf(x->listen_addr, sizeof x->listen_addr, "[%s]:%d", host, port);
  else
    snprintf(x->listen_addr, sizeof x->listen_addr, "%s:%d", host, port);
  /* Tests only: peers are told another address, a tampering relay in
   * front of this one (t/tamper.sh's executor-to-executor links). */
  via = getenv("ORION_TEST_PEER_VIA");
  if (via != NULL && via[0] != '\0') {
    fprintf(stderr,
            "orion-executor %d: listening for peers on %s, advertised as "
            "%s (ORION_TEST_PEER_VIA)\n",
            x->id, x->listen_addr, via);
    snprintf(x->listen_addr, sizeof x->listen_addr, "%s", via);
  }
}

/* ---- PEERS: where every executor listens -------------------------------- */

/* PEERS entry e ("host:port", ours unused) into pl; 0 or ORION_EPARSE
 * with the text in hp. */
static int read_peer_addr(const orion_msg_str *a, int e, int self,
                          peerlink *pl, char *hp, size_t hplen) {
  snprintf(hp, hplen, "%.*s", (int)(a->len < hplen - 1 ? a->len : hplen - 1),
           a->p != NULL ? a->p : "");
  if (e != self &&
      (orion_hostport_parse(hp, pl->host, sizeof pl->host, &pl->port) != 0 ||
       pl->port <= 0))
    return ORION_EPARSE;
  return 0;
}

void orion__peer_on_peers(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f) {
  orion_msg_peers m;
  int64_t e;
  (void)from;
  if (orion_msg_peers_decode(f->payload, f->len, &m, NULL) != 0 || m.n < 1 ||
      m.n > 100000 || x->peers != NULL) {
    orion_msg_peers_free(&m);
    orion_conn_close(c, "malformed PEERS frame");
    return;
  }
  x->peers = orion_calloc((size_t)m.n, sizeof *x->peers);
  if (x->peers == NULL)
    orion__exec_die(x, "out of memory");
  for (e = 0; e < m.n; e++) {
    peerlink *pl = &x->peers[e];
    char hp[300];
    pl->index = (int)e;
    orion_buf_init(&pl->pending);
    orion_buf_init(&pl->queued);
    orion_buf_init(&pl->queued_in);
    if (read_peer_addr(&m.addrs[e], (int)e, x->id, pl, hp, sizeof hp) != 0) {
      orion_msg_peers_free(&m);
      orion_conn_close(c, "malformed PEERS frame (executor %lld: '%s')",
                       (long long)e, hp);
      return;
    }
  }
  pthread_mutex_lock(&x->mu);
  x->npeers = (int)m.n;
  pthread_mutex_unlock(&x->mu);
  orion_msg_peers_free(&m);
}
