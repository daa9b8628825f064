/* The driver's side of a job's executors (see cluster.h). */
#include "dsm/cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm/addr.h"
#include "dsm/gate.h"
#include "dsm/msg.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/progress.h"

#define ORION_CLUSTER_JOINERS_MAX 64 /* executors waiting to join */
#define ORION_CLUSTER_RELAYS_MAX 64  /* stderr pipes an earlier driver had */

typedef struct peer {
  orion_cluster *cl;
  int id;
  orion_conn *conn;     /* NULL until registered, and after it closed */
  char addr[96];        /* where it connected from */
  char listen[ORION_WIRE_ADDR_MAX + 1]; /* where it listens for peers */
  char where[ORION_HOST_MAX + 16]; /* where it was started ("127.0.0.1") */
  char host[ORION_HOST_MAX + 1];   /* orion_cluster_host's answer */
  uv_process_t proc;
  int spawned, exited;  /* proc is live / has exited */
  int64_t exit_status;
  int term_signal;
  double ended_itself;  /* when it exited with 3, reported a moment later */
  uv_pipe_t errpipe;   /* its stderr, when relayed */
  int relaying;        /* errpipe is open */
  char tail[ORION_CLUSTER_TAIL]; /* the last bytes of that stderr */
  size_t tail_len;
  char gpu[ORION_WIRE_DEVICE_MAX + 1]; /* its device, from HELLO; "" */
  uint64_t gpu_total, gpu_cap;
} peer;

struct orion_cluster {
  orion_cluster_opts o;
  uv_loop_t loop;
  uv_tcp_t server;
  uv_timer_t tick;
  char token[ORION_TOKEN_MAX + 1];
  char listen_host[ORION_HOST_MAX + 1];
  char advertise[ORION_HOSTPORT_MAX + 1];
  int port;
  int n;
  peer *peers;
  int registered;
  double deadline; /* registration */
  int stopping;
  orion_cluster_frame_fn fn;
  orion_cluster_lost_fn lost;
  void *ud;
  char doing[256];
  int failed; /* the executor whose loss ended the job; -1 */
  uint64_t closed_bytes; /* bytes of connections gone */
  uint64_t closed_io;    /* their reads and writes */
  orion_gate gate; /* accepted, not yet registered */
  double last_hb_sent;
  double last_tick; /* when on_tick last ran */
  void (*tick_fn)(void *); /* the job page's, or NULL */
  void *tick_ud;
  int formed; /* every executor registered once (orion_cluster_finish) */
  orion_conn *joiners[ORION_CLUSTER_JOINERS_MAX]; /* --join, waiting */
  int njoin;
  char listen_addr[ORION_HOSTPORT_MAX + 1]; /* listen_host:port */
  uv_pipe_t relays[ORION_CLUSTER_RELAYS_MAX]; /* opts.relay_fds */
  int relay_open[ORION_CLUSTER_RELAYS_MAX];
  int nrelays;
  int waiting; /* inside orion_cluster_wait: the connections are corked */
  int held;    /* corked by orion_cluster_hold (outside any wait) */
};

static orion_cluster *accepting; /* the cluster whose server is listening */
static orion_cluster_elastic_fn elastic_hook; /* drivers/elastic.c's */
static void *elastic_ud;
static orion_cluster_failure_fn failure_hook; /* drivers/recover.c's */
static void *failure_ud;

void orion_cluster_set_failure_hook(orion_cluster_failure_fn fn, void *ud) {
  failure_hook = fn;
  failure_ud = ud;
}

void orion_cluster_set_elastic_hook(orion_cluster_elastic_fn fn, void *ud) {
  elastic_hook = fn;
  elastic_ud = ud;
}

void orion_cluster_opts_init(orion_cluster_opts *o) {
  memset(o, 0, sizeof *o);
  o->register_timeout = 30;
  o->heartbeat_timeout = 5;
}

int orion_cluster_size(const orion_cluster *c) { return c->n; }

const char *orion_cluster_addr(const orion_cluster *c, int exec) {
  return c->peers[exec].addr;
}

int orion_cluster_executor_gpu(const orion_cluster *c, int k, char *desc,
                               size_t n) {
  const peer *p = c != NULL && k >= 0 && k < c->n ? &c->peers[k] : NULL;
  if (desc != NULL && n > 0)
    snprintf(desc, n, "%s", p != NULL ? p->gpu : "");
  return p != NULL && p->gpu[0] != '\0';
}

uint64_t orion_cluster_executor_gpu_cap(const orion_cluster *c, int k) {
  return c != NULL && k >= 0 && k < c->n ? c->peers[k].gpu_cap : 0;
}

const char *orion_cluster_host(orion_cluster *c, int exec) {
  peer *p = &c->peers[exec];
  int port;
  /* "manual" and "rank N" say how it was started, not where. */
  if (orion_host_valid(p->where) && strcmp(p->where, "manual") != 0)
    return p->where;
  if (p->addr[0] != '\0' &&
      orion_hostport_parse(p->addr, p->host, sizeof p->host, &port) == 0)
    return p->host;
  return p->where;
}

void orion_cluster_peer(const orion_cluster *c, int exec,
                        orion_cluster_peer_info *out) {
  const peer *p = &c->peers[exec];
  out->where = p->where;
  out->addr = p->addr;
  out->pid = p->spawned ? p->proc.pid : 0;
  out->last_heard = p->conn != NULL ? p->conn->last_rx : 0;
  out->connected = p->conn != NULL;
  out->exited = p->exited;
}

void orion_cluster_set_tick(orion_cluster *c, void (*fn)(void *), void *ud) {
  c->tick_fn = fn;
  c->tick_ud = ud;
}

uint64_t orion_cluster_bytes(const orion_cluster *c) {
  uint64_t t = c->closed_bytes;
  int i;
  for (i = 0; i < c->n; i++)
    if (c->peers[i].conn != NULL)
      t += c->peers[i].conn->bytes_in + c->peers[i].conn->bytes_out;
  return t;
}

uint64_t orion_cluster_io(const orion_cluster *c) {
  uint64_t t = c->closed_io;
  int i;
  for (i = 0; i < c->n; i++)
    if (c->peers[i].conn != NULL)
      t += c->peers[i].conn->reads + c->peers[i].conn->writes;
  return t;
}

void orion_cluster_set_handler(orion_cluster *c, orion_cluster_frame_fn fn,
                               void *ud, const char *doing) {
  c->fn = fn;
  c->ud = ud;
  if (fn == NULL)
    c->lost = NULL;
  snprintf(c->doing, sizeof c->doing, "%s", doing != NULL ? doing : "");
}

void orion_cluster_set_lost(orion_cluster *c, orion_cluster_lost_fn fn) {
  c->lost = fn;
}

/* Executor p is lost: the loop in progress hears of it first (it names the
 * block that was lost with it), then the job ends. */
static void lose(orion_cluster *c, const peer *p, int silent,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5),
                                                      noreturn));
static void lose(orion_cluster *c, const peer *p, int silent,
                 const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  c->failed = p->id;
  if (c->lost != NULL) {
    orion_cluster_lost_fn fn = c->lost;
    c->lost = NULL; /* once */
    fn(c->ud, p->id, silent, what);
  }
  orion_cluster_fail(c, "%s", what);
}

/* ---- ending the job ----------------------------------------------------- */

static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

/* Runs the loop until every spawned executor has exited and its stderr
 * pipe has ended (and those of an earlier driver's executors), or
 * `seconds` have passed. */
static void reap(orion_cluster *c, double seconds) {
  double until = orion_now() + seconds;
  int i, live;
  do {
    uv_run(&c->loop, UV_RUN_NOWAIT);
    live = 0;
    for (i = 0; i < c->n; i++) /* running, or its stderr not yet all read */
      if (c->peers[i].spawned && (!c->peers[i].exited || c->peers[i].relaying))
        live++;
    for (i = 0; i < c->nrelays; i++) /* an earlier driver's executors: */
      if (c->relay_open[i])          /* their last words, to the end */
        live++;
    if (live > 0)
      usleep(1000);
  } while (live > 0 && orion_now() < until);
}

/* WELCOME, with the executor's id (for one that joined without one). */
static void send_welcome(orion_conn *conn, int id) {
  unsigned char b[4];
  b[0] = (unsigned char)(id & 0xff);
  b[1] = (unsigned char)((id >> 8) & 0xff);
  b[2] = (unsigned char)((id >> 16) & 0xff);
  b[3] = (unsigned char)((id >> 24) & 0xff);
  orion_conn_send_frame(conn, ORION_WIRE_WELCOME, b, sizeof b);
}

static void send_shutdown(orion_conn *conn, const orion_msg_shutdown *m) {
  orion_buf b;
  orion_buf_init(&b);
  if (orion_msg_shutdown_encode(&b, m) == 0)
    orion_conn_send(conn, &b); /* takes the bytes */
  else /* out of memory: without the reason */
    orion_conn_send_frame(conn, ORION_WIRE_SHUTDOWN, "\0\0\0\0\0\0\0", 8);
  orion_buf_free(&b);
}

/* Sets every connection's cork (orion_conn_cork: off sends what is held)
 * or, with on < 0, sends what each holds and leaves the cork as it is. */
static void cork_all(orion_cluster *c, int on) {
  int i;
  for (i = 0; i < c->n; i++)
    if (c->peers[i].conn != NULL) {
      if (on < 0)
        orion_conn_flush(c->peers[i].conn);
      else
        orion_conn_cork(c->peers[i].conn, on);
    }
}

/* SHUTDOWN, with why (empty: the job ended normally), to every connected
 * executor (and to executors waiting to join, welcomed first so that they
 * read it), then up to `grace` seconds for local processes to exit before
 * SIGKILL. */
static void stop_all(orion_cluster *c, double grace, const char *why) {
  orion_msg_shutdown m;
  int i;
  c->stopping = 1;
  cork_all(c, 0); /* a wait may have been left by exit() or a Lua error */
  m.reason = why;
  m.len = strlen(why);
  if (m.len > ORION_MSG_SHUTDOWN_REASON_MAX)
    m.len = ORION_MSG_SHUTDOWN_REASON_MAX; /* the driver printed it whole */
  for (i = 0; i < c->n; i++)
    if (c->peers[i].conn != NULL)
      send_shutdown(c->peers[i].conn, &m);
  for (i = 0; i < c->njoin; i++) {
    send_welcome(c->joiners[i], c->n);
    send_shutdown(c->joiners[i], &m);
  }
  reap(c, grace);
  for (i = 0; i < c->n; i++)
    if (c->peers[i].spawned && !c->peers[i].exited)
      uv_process_kill(&c->peers[i].proc, SIGKILL);
  reap(c, 2); /* what was killed */
}

/* Closes every handle, runs the loop until their close callbacks have
 * run, closes the loop and frees c.  A loop that stays busy (UV_EBUSY: a
 * handle or request still open, e.g. one a close callback started) gets
 * its handles closed and another run, up to a second; if it still cannot
 * close, c is left allocated (libuv may still point into it) and a
 * warning says so. */
static void free_cluster(orion_cluster *c) {
  int rc, tries;
  uv_walk(&c->loop, walk_close, NULL);
  while (uv_run(&c->loop, UV_RUN_NOWAIT) != 0)
    ;
  for (tries = 0; (rc = uv_loop_close(&c->loop)) == UV_EBUSY && tries < 1000;
       tries++) {
    uv_walk(&c->loop, walk_close, NULL);
    if (uv_run(&c->loop, UV_RUN_NOWAIT) != 0)
      usleep(1000);
  }
  if (rc != 0) {
    orion_log_warn("cannot close the cluster's event loop: %s; leaving it "
                   "open",
                   uv_strerror(rc));
    return;
  }
  orion_free(c->peers);
  orion_free(c);
}

/* Closes the connections of the executors waiting to join (each close's
 * callback takes its joiner off the list). */
static void close_joiners(orion_cluster *c, const char *why) {
  orion_conn *j[ORION_CLUSTER_JOINERS_MAX];
  int i, nj = c->njoin;
  memcpy(j, c->joiners, (size_t)nj * sizeof j[0]);
  for (i = 0; i < nj; i++)
    orion_conn_close(j[i], "%s", why);
}

void orion_cluster_stop(orion_cluster *c) {
  int i;
  if (c == NULL)
    return;
  stop_all(c, 3, "");
  orion_gate_flush(&c->gate);
  /* An executor that has not closed its end by now (one that ignores
   * SHUTDOWN): its connection is closed through net.c, whose close
   * callback frees it; free_cluster's walk would close only the handle. */
  for (i = 0; i < c->n; i++)
    if (c->peers[i].conn != NULL)
      orion_conn_close(c->peers[i].conn, "the job ended");
  close_joiners(c, "the job ended");
  /* Connections that never registered (a hostile client's): closed
   * without a refusal line, and freed by their close callbacks. */
  accepting = NULL;
  orion_gate_close_all(&c->gate, "the job ended");
  free_cluster(c);
}

void orion_cluster_discard(orion_cluster *c) {
  if (c == NULL)
    return;
  if (accepting == c)
    accepting = NULL;
  free_cluster(c);
}

void orion_cluster_fail(orion_cluster *c, const char *fmt, ...) {
  char why[ORION_MSG_SHUTDOWN_REASON_MAX + 1];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (n < 0)
    why[0] = '\0';
  n = (int)strlen(why);
  if (c->doing[0] != '\0')
    snprintf(why + n, sizeof why - (size_t)n, ", %s", c->doing);
  fflush(stdout);
  orion_progress_clear();
  /* With a failure hook (drivers/recover.c) the job may go on in a
   * restart, which the hook announces; "ending the job" is said only
   * once it is sure. */
  fprintf(stderr, "orion-driver: cluster failure: %s%s\n", why,
          failure_hook != NULL || (elastic_hook != NULL && c->failed >= 0)
              ? ""
              : "; ending the job");
  fflush(stderr);
  if (elastic_hook != NULL && c->failed >= 0) {
    /* --elastic: the survivors go on without the lost executor (the hook
     * returns only when too few are left). */
    orion_cluster_elastic_fn fn = elastic_hook;
    elastic_hook = NULL; /* once */
    fn(elastic_ud, c, c->failed);
    if (failure_hook == NULL)
      fprintf(stderr, "orion-driver: ending the job\n");
  }
  /* The executors that are still there say why they stop. */
  stop_all(c, 1, why);
  if (failure_hook != NULL) {
    orion_cluster_failure_fn fn = failure_hook;
    failure_hook = NULL; /* once */
    fn(failure_ud, c->failed,
       c->failed >= 0 && c->failed < c->n ? orion_cluster_host(c, c->failed)
                                          : NULL,
       why);
    /* The hook returns only when the job did not restart. */
    fprintf(stderr, "orion-driver: ending the job\n");
  }
  exit(ORION_EXIT_CLUSTER);
}

static const char *peer_where(const peer *p) {
  return p->addr[0] != '\0' ? p->addr : p->where;
}

/* ---- connections -------------------------------------------------------- */

static void on_frame(orion_conn *conn, const orion_wire_frame *f);


/* Whether conn is an executor waiting to join c; removes it if so. */
static int drop_joiner(orion_cluster *c, const orion_conn *conn) {
  int i;
  for (i = 0; c != NULL && i < c->njoin; i++)
    if (c->joiners[i] == conn) {
      c->joiners[i] = c->joiners[--c->njoin];
      return 1;
    }
  return 0;
}

static void on_closed(orion_conn *conn, const char *reason) {
  peer *p = conn->data;
  orion_cluster *c;
  if (p == NULL && drop_joiner(accepting, conn)) {
    if (!accepting->stopping) /* (not the driver's own close) */
      orion_log_info("an executor waiting to join (%s) left: %s",
                     conn->peer, reason);
    return;
  }
  if (p == NULL) { /* never registered: a refused or stray connection */
    if (accepting != NULL) {
      orion_gate_remove(&accepting->gate, conn);
      orion_gate_refused(&accepting->gate, conn->peer, reason);
    }
    return;
  }
  c = p->cl;
  c->closed_bytes += conn->bytes_in + conn->bytes_out;
  c->closed_io += conn->reads + conn->writes;
  p->conn = NULL;
  if (c->stopping)
    return;
  /* A record that failed its tag, either way: said as such, at once (the
   * executor's exit status would only repeat it). */
  if (conn->fault == ORION_CONN_FAULT_ALERTED)
    lose(c, p, 0, "executor %d (%s) refused a record from the driver: %s",
         p->id, peer_where(p), conn->alert);
  if (conn->fault == ORION_CONN_FAULT_RECORD)
    lose(c, p, 0, "the driver refused a record from executor %d (%s): %s",
         p->id, peer_where(p), conn->sec.why);
  if (p->spawned && !p->exited) {
    /* A local executor that died closes its socket first: give its exit
     * status a moment to arrive, so the message says how it ended (2 s:
     * on a loaded machine its threads can take more than half a second
     * to wind down after the socket closes). */
    double until = orion_now() + 2.0;
    while (!p->exited && orion_now() < until) {
      uv_run(&c->loop, UV_RUN_NOWAIT);
      if (!p->exited)
        usleep(1000);
    }
  }
  if (p->exited && p->ended_itself > 0)
    return; /* it exited with 3: the tick reports it, unless another
               executor's end comes first */
  lose(c, p, 0, "executor %d (%s) closed its connection: %s", p->id,
       peer_where(p), reason);
}

static void on_hello(orion_conn *conn, const orion_wire_frame *f) {
  orion_cluster *c = accepting;
  orion_wire_hello h;
  orion_error err;
  peer *p;
  orion_error_clear(&err);
  if (c == NULL || orion_wire_hello_decode(f->payload, f->len, &h, &err) != 0) {
    orion_conn_close(conn, "bad HELLO: %s", err.msg);
    return;
  }
  if (h.executor == ORION_WIRE_ANY_EXECUTOR && !c->o.elastic) {
    orion_conn_close(conn, "this job takes no joining executors (it needs "
                           "orion-driver --elastic)");
    return;
  }
  if (h.executor == ORION_WIRE_ANY_EXECUTOR && !c->formed) {
    /* While the job forms, a joining executor takes the first free id. */
    int k;
    for (k = 0; k < c->n; k++)
      if (c->peers[k].conn == NULL && c->peers[k].addr[0] == '\0')
        break;
    h.executor = (uint32_t)k; /* c->n: none free, refused below */
  } else if (h.executor == ORION_WIRE_ANY_EXECUTOR) {
    /* A running job takes it at the next loop boundary. */
    if (c->njoin == ORION_CLUSTER_JOINERS_MAX) {
      orion_conn_close(conn, "%d executors already wait to join",
                       ORION_CLUSTER_JOINERS_MAX);
      return;
    }
    orion_gate_remove(&c->gate, conn);
    c->joiners[c->njoin++] = conn;
    orion_log_info("executor at %s asks to join; it takes partitions at "
                   "the next loop boundary",
                   conn->peer);
    return;
  }
  if (h.executor >= (uint32_t)c->n) {
    orion_conn_close(conn, "executor id %u is not in this job (0..%d)",
                     h.executor, c->n - 1);
    return;
  }
  p = &c->peers[h.executor];
  if (p->conn != NULL || p->addr[0] != '\0') {
    orion_conn_close(conn, "executor id %u registered twice", h.executor);
    return;
  }
  orion_gate_remove(&c->gate, conn);
  p->conn = conn;
  conn->data = p;
  snprintf(p->addr, sizeof p->addr, "%s", conn->peer);
  snprintf(p->listen, sizeof p->listen, "%.*s", (int)h.addr_len, h.addr);
  snprintf(p->gpu, sizeof p->gpu, "%.*s", (int)h.device_len, h.device);
  p->gpu_total = h.gpu_total;
  p->gpu_cap = h.gpu_cap;
  c->registered++;
  send_welcome(conn, p->id);
  orion_log_detail("executor %d registered from %s", p->id, p->addr);
  if (p->gpu[0] != '\0')
    orion_log_info("executor %d on %s: %s", p->id,
                   orion_cluster_host(c, p->id), p->gpu);
}

static void on_frame(orion_conn *conn, const orion_wire_frame *f) {
  peer *p = conn->data;
  if (f->type == ORION_WIRE_HELLO) {
    on_hello(conn, f);
    return;
  }
  if (p == NULL) {
    orion_conn_close(conn, "a %s frame before registering",
                     orion_wire_type_name(f->type));
    return;
  }
  if (f->type == ORION_WIRE_HEARTBEAT)
    return;
  if (p->cl->fn != NULL)
    p->cl->fn(p->cl->ud, p->id, f);
}

static void on_connection(uv_stream_t *server, int status) {
  orion_cluster *c = server->data;
  orion_conn_cbs cbs;
  orion_conn *conn;
  if (status != 0)
    return;
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = on_frame;
  cbs.closed = on_closed;
  conn = orion_conn_new(&c->loop, ORION_WIRE_ACCEPT, c->token, c->o.encrypt,
                        &cbs, NULL);
  if (conn == NULL)
    return;
  if (orion_conn_accept(server, conn) != 0)
    return;
  orion_gate_admit(&c->gate, conn); /* dsm/gate.h: until it registers */
}

void orion_cluster_send(orion_cluster *c, int exec, orion_buf *b) {
  peer *p = &c->peers[exec];
  if (p->conn == NULL) {
    orion_buf_free(b);
    orion_buf_init(b);
    return;
  }
  if (!c->waiting && p->conn->corked) /* a wait left by a Lua error */
    orion_conn_cork(p->conn, 0);
  orion_conn_send(p->conn, b);
}

size_t orion_cluster_queued(const orion_cluster *c, int exec) {
  const peer *p = &c->peers[exec];
  return p->conn != NULL
             ? uv_stream_get_write_queue_size((const uv_stream_t *)&p->conn->tcp)
             : 0;
}

/* ---- processes ---------------------------------------------------------- */

/* A relayed stderr: each piece goes on to the driver's stderr as it comes,
 * and the last ORION_CLUSTER_TAIL - 1 bytes are kept for the hint. */
static void on_err_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf) {
  static char chunk[4096];
  (void)h;
  (void)want;
  *buf = uv_buf_init(chunk, sizeof chunk);
}

static void on_err_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  peer *p = s->data;
  size_t k, keep = sizeof p->tail - 1;
  if (n < 0) { /* end of file, or the pipe broke: either way, done */
    p->relaying = 0;
    uv_close((uv_handle_t *)s, NULL);
    return;
  }
  fwrite(buf->base, 1, (size_t)n, stderr);
  fflush(stderr);
  k = (size_t)n < keep ? (size_t)n : keep;
  if (p->tail_len + k > keep) { /* drop the oldest bytes */
    size_t drop = p->tail_len + k - keep;
    memmove(p->tail, p->tail + drop, p->tail_len - drop);
    p->tail_len -= drop;
  }
  memcpy(p->tail + p->tail_len, buf->base + (size_t)n - k, k);
  p->tail_len += k;
  p->tail[p->tail_len] = '\0';
}

/* A stderr pipe an earlier driver of this process had: passed on. */
static void on_relay_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  int *open = s->data;
  if (n < 0) {
    *open = 0;
    uv_close((uv_handle_t *)s, NULL);
    return;
  }
  fwrite(buf->base, 1, (size_t)n, stderr);
  fflush(stderr);
}

/* Starts relaying opts.relay_fds (a descriptor that is not a pipe is
 * closed and skipped). */
static void open_relays(orion_cluster *c) {
  const char *s = c->o.relay_fds;
  char *end;
  while (s != NULL && *s != '\0' && c->nrelays < ORION_CLUSTER_RELAYS_MAX) {
    long fd = strtol(s, &end, 10);
    uv_pipe_t *p = &c->relays[c->nrelays];
    if (end == s)
      break;
    s = end;
    if (fd < 3 || uv_pipe_init(&c->loop, p, 0) != 0)
      continue;
    /* A next re-forming passes on a copy (orion_cluster_keep_stderr). */
    (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    if (uv_pipe_open(p, (uv_file)fd) != 0) {
      uv_close((uv_handle_t *)p, NULL);
      close((int)fd);
      continue;
    }
    p->data = &c->relay_open[c->nrelays];
    c->relay_open[c->nrelays] = 1;
    if (uv_read_start((uv_stream_t *)p, on_err_alloc, on_relay_read) != 0) {
      c->relay_open[c->nrelays] = 0;
      uv_close((uv_handle_t *)p, NULL);
      continue;
    }
    c->nrelays++;
  }
}

/* A process that exited before registering: what its launcher makes of
 * its last words, printed before the failure.  The rest of its stderr is
 * read first (at most half a second: a child it left may hold the pipe). */
static void print_hint(orion_cluster *c, peer *p, int status) {
  char hint[1024] = "";
  double until = orion_now() + 0.5;
  if (c->o.hint == NULL || p->addr[0] != '\0')
    return;
  while (p->relaying && orion_now() < until) {
    uv_run(&c->loop, UV_RUN_NOWAIT);
    if (p->relaying)
      usleep(1000);
  }
  c->o.hint(c->o.launch_ud, p->id, status, p->tail, hint, sizeof hint);
  if (hint[0] != '\0') {
    fprintf(stderr, "orion-driver: %s\n", hint);
    fflush(stderr);
  }
}

/* Ends the job for executor p, whose process has exited. */
static void report_exit(orion_cluster *c, peer *p) {
  int sig = p->term_signal;
  print_hint(c, p, sig != 0 ? 128 + sig : (int)p->exit_status);
  if (sig != 0)
    lose(c, p, 0, "executor %d (%s, pid %d) was killed by signal %d (%s)",
         p->id, peer_where(p), p->proc.pid, sig, strsignal(sig));
  lose(c, p, 0, "executor %d (%s, pid %d) exited with code %lld", p->id,
       peer_where(p), p->proc.pid, (long long)p->exit_status);
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int sig) {
  peer *p = proc->data;
  orion_cluster *c = p->cl;
  p->exited = 1;
  p->exit_status = status;
  p->term_signal = sig;
  uv_close((uv_handle_t *)proc, NULL);
  if (c->stopping)
    return;
  if (sig == 0 && status == 3) {
    /* An executor ends itself with 3 when it loses a peer (or the
     * driver). The peer's own end may be reaped in the same pass: report
     * this one from the tick half a second later, so that the job names
     * the executor that failed first, not the one that saw it. */
    p->ended_itself = orion_now();
    return;
  }
  report_exit(c, p);
}

/* A launcher's process for executor exec (see cluster.h). */
int orion_cluster_spawn(orion_cluster *c, int exec, char **argv, char **env,
                        int relay, orion_error *err) {
  return orion_cluster_spawn_in(c, exec, argv, env, relay, -1, err);
}

int orion_cluster_spawn_in(orion_cluster *c, int exec, char **argv,
                           char **env, int relay, int in_fd,
                           orion_error *err) {
  peer *p = &c->peers[exec];
  uv_process_options_t po;
  uv_stdio_container_t stdio[3];
  int rc;
  memset(&po, 0, sizeof po);
  stdio[0].flags = UV_IGNORE;
  if (in_fd >= 0) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = in_fd;
  }
  /* A body's print writes to the executor's stdout, which is the
   * driver's: the script's output is in one stream whatever the number of
   * executors, as with --executors 0 (docs/guide.md).  The executor's own
   * messages go to stderr. */
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = 1;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  if (relay && uv_pipe_init(&c->loop, &p->errpipe, 0) == 0) {
    p->errpipe.data = p;
    p->relaying = 1;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&p->errpipe;
  }
  po.file = argv[0];
  po.args = argv;
  po.env = env;
  po.stdio = stdio;
  po.stdio_count = 3;
  po.exit_cb = on_exit_cb;
  p->proc.data = p;
  rc = uv_spawn(&c->loop, &p->proc, &po);
  if (in_fd >= 0)
    close(in_fd); /* the child has its copy */
  if (rc != 0) {
    if (p->relaying) {
      p->relaying = 0;
      uv_close((uv_handle_t *)&p->errpipe, NULL);
    }
    return orion_error_set(err, ORION_EINVAL, "cannot start %s for executor "
                                              "%d: %s",
                           argv[0], p->id, uv_strerror(rc));
  }
  if (p->relaying &&
      uv_read_start((uv_stream_t *)&p->errpipe, on_err_alloc, on_err_read) !=
          0) {
    p->relaying = 0;
    uv_close((uv_handle_t *)&p->errpipe, NULL);
  }
  p->spawned = 1;
  return 0;
}

void orion_cluster_set_where(orion_cluster *c, int exec, const char *where) {
  snprintf(c->peers[exec].where, sizeof c->peers[exec].where, "%s", where);
}

/* Hands the executors to the launcher, telling it where the driver listens
 * and the token. */
static int launch(orion_cluster *c, orion_error *err) {
  orion_cluster_launch_info info;
  info.n = c->n;
  info.driver = c->advertise;
  info.token = c->token;
  info.register_timeout = c->o.register_timeout;
  return c->o.launch(c, c->o.launch_ud, &info, err);
}

/* ---- the event loop ----------------------------------------------------- */

static void send_heartbeats(orion_cluster *c) {
  int i;
  for (i = 0; i < c->n; i++) {
    orion_buf b;
    orion_wire_heartbeat h;
    if (c->peers[i].conn == NULL)
      continue;
    memset(&h, 0, sizeof h);
    h.executor = (uint32_t)i;
    h.sent_ns = uv_hrtime();
    h.mem_used = orion_alloc_used();
    orion_buf_init(&b);
    orion_wire_heartbeat_encode(&b, &h);
    orion_conn_send(c->peers[i].conn, &b);
    orion_buf_free(&b);
  }
}

static void on_tick(uv_timer_t *t) {
  orion_cluster *c = t->data;
  double now = orion_now();
  int i;
  if (c->stopping)
    return;
  /* The driver was away since the last tick (running the script between
   * loops, or starved of CPU): the executors' frames of that time may wait
   * unread in the sockets, so it does not count as their silence. */
  if (now - c->last_tick > 1.0)
    for (i = 0; i < c->n; i++) {
      orion_conn *conn = c->peers[i].conn;
      if (conn != NULL)
        conn->last_rx = fmin(now, conn->last_rx + (now - c->last_tick));
    }
  c->last_tick = now;
  if (now - c->last_hb_sent >= 1.0) {
    send_heartbeats(c);
    c->last_hb_sent = now;
  }
  orion_gate_tick(&c->gate, now);
  for (i = 0; i < c->n; i++)
    if (c->peers[i].ended_itself > 0 && now - c->peers[i].ended_itself >= 0.5)
      report_exit(c, &c->peers[i]);
  for (i = 0; i < c->n; i++) {
    peer *p = &c->peers[i];
    if (p->conn != NULL && now - p->conn->last_rx > c->o.heartbeat_timeout)
      lose(c, p, 1, "executor %d (%s) has not answered for %.0f s", p->id,
           peer_where(p), now - p->conn->last_rx);
  }
  if (c->tick_fn != NULL)
    c->tick_fn(c->tick_ud);
}

/* While the driver waits, the frames sent in one turn of the loop (the
 * blocks one BLOCK_DONE releases, a clock's blocks for one executor) go to
 * each executor together when the turn ends, before the loop blocks again
 * (net.h, orion_conn_cork); outside waits frames go at once. */
void orion_cluster_hold(orion_cluster *c, int on) {
  if (on ? c->waiting : !c->held) /* inside a wait: held already, and */
    return;                       /* its end releases, not this call */
  c->held = c->waiting = on != 0;
  cork_all(c, on != 0);
}

void orion_cluster_wait(orion_cluster *c, int (*done)(void *), void *ud) {
  int outer = c->waiting; /* a wait inside a wait's callback */
  c->waiting = 1;
  cork_all(c, 1);
  for (;;) {
    int fin = done(ud); /* which may send too */
    cork_all(c, -1);    /* before the loop blocks: nothing waits held */
    if (fin)
      break;
    uv_run(&c->loop, UV_RUN_ONCE);
  }
  c->waiting = outer;
  if (!outer)
    cork_all(c, 0);
}

static int all_registered(void *ud) {
  orion_cluster *c = ud;
  return c->registered == c->n || orion_now() > c->deadline;
}

/* HOST or HOST:PORT into host and port (0 when absent). */
static int split_listen(const char *s, char *host, size_t hn, int *port) {
  if (orion_hostport_parse(s, host, hn, port) == 0)
    return 0;
  if (strchr(s, ':') == NULL || s[0] == '[' || strchr(s, ':') != strrchr(s, ':')) {
    if (s[0] == '\0' || strlen(s) >= hn)
      return ORION_EINVAL;
    snprintf(host, hn, "%s", s);
    *port = 0;
    return 0;
  }
  return ORION_EINVAL;
}

/* PEERS: every executor learns where the others listen (sharded server
 * arrays move between them directly). */
static void send_peers(orion_cluster *c) {
  orion_msg_str *addrs = orion_calloc((size_t)c->n, sizeof *addrs);
  orion_msg_peers m;
  int i;
  if (addrs == NULL)
    orion_cluster_fail(c, "out of memory sending the executors' addresses");
  for (i = 0; i < c->n; i++) {
    addrs[i].p = c->peers[i].listen;
    addrs[i].len = strlen(c->peers[i].listen);
  }
  m.addrs = addrs;
  m.n = c->n;
  for (i = 0; i < c->n; i++) {
    orion_buf b;
    orion_buf_init(&b);
    orion_msg_peers_encode(&b, &m);
    orion_cluster_send(c, i, &b);
    orion_buf_free(&b);
  }
  orion_free(addrs);
}

orion_cluster *orion_cluster_begin(const orion_cluster_opts *o,
                                   orion_error *err) {
  orion_cluster *c;
  char msg[256];
  int i, rc, nlisten = 0;

  c = orion_calloc(1, sizeof *c);
  if (c == NULL) {
    orion_error_set(err, ORION_ENOMEM, "out of memory");
    return NULL;
  }
  c->o = *o;
  /* A write to an executor that just died must fail with EPIPE (and be
   * reported as that executor's loss), not kill the driver. */
  signal(SIGPIPE, SIG_IGN);
  c->n = c->o.nexec;
  c->failed = -1;
  if (c->o.launch == NULL) {
    orion_error_set(err, ORION_EINVAL, "no launcher to start executors");
    orion_free(c);
    return NULL;
  }
  if (c->n < 1) {
    orion_error_set(err, ORION_EINVAL, "a cluster needs at least one "
                                       "executor");
    orion_free(c);
    return NULL;
  }
  c->peers = orion_calloc((size_t)c->n, sizeof *c->peers);
  if (c->peers == NULL || uv_loop_init(&c->loop) != 0) {
    orion_free(c->peers);
    orion_free(c);
    orion_error_set(err, ORION_ENOMEM, "out of memory");
    return NULL;
  }
  for (i = 0; i < c->n; i++) {
    c->peers[i].cl = c;
    c->peers[i].id = i;
  }
  if (c->o.token != NULL) {
    snprintf(c->token, sizeof c->token, "%s", c->o.token);
  } else if (orion_token_new(c->token, sizeof c->token) != 0) {
    orion_error_set(err, ORION_EINVAL, "cannot make a job token: no "
                                       "randomness");
    free_cluster(c);
    return NULL;
  }
  {
    const char *l = c->o.listen;
    if (l == NULL)
      l = "127.0.0.1";
    if (split_listen(l, c->listen_host, sizeof c->listen_host, &c->port) !=
        0) {
      orion_error_set(err, ORION_EINVAL, "--listen: expected HOST or "
                                         "HOST:PORT, got '%s'",
                      l);
      free_cluster(c);
      return NULL;
    }
  }
  c->server.data = c;
  msg[0] = '\0';
  rc = orion_net_listen(&c->loop, &c->server, c->listen_host, c->port,
                        on_connection, &nlisten, msg, sizeof msg);
  if (rc != 0) {
    orion_error_set(err, ORION_EINVAL, "%s", msg);
    free_cluster(c);
    return NULL;
  }
  c->port = nlisten;
  orion_hostport_format(c->listen_host, c->port, c->listen_addr,
                        sizeof c->listen_addr);
  {
    char host[ORION_HOST_MAX + 1];
    snprintf(host, sizeof host, "%s", c->listen_host);
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
      if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "127.0.0.1");
    orion_hostport_format(host, c->port, c->advertise, sizeof c->advertise);
  }
  accepting = c;
  orion_gate_init(&c->gate);
  open_relays(c);
  uv_timer_init(&c->loop, &c->tick);
  c->tick.data = c;
  c->last_tick = orion_now();
  uv_timer_start(&c->tick, on_tick, 200, 200);
  snprintf(c->doing, sizeof c->doing, "while starting");
  if (launch(c, err) != 0) {
    stop_all(c, 1, err != NULL ? err->msg : "the executors could not start");
    free_cluster(c);
    accepting = NULL;
    return NULL;
  }
  return c;
}

orion_cluster *orion_cluster_finish(orion_cluster *c, orion_error *err) {
  int i;
  c->deadline = orion_now() + c->o.register_timeout;
  orion_cluster_wait(c, all_registered, c);
  if (c->registered < c->n && c->o.reform_min > 0 &&
      c->registered >= c->o.reform_min) {
    /* Re-forming: ids went to the first free slots, so the executors that
     * came back are 0..registered-1; the job goes on with them. */
    fprintf(stderr, "orion: elastic: %d of the %d executors expected "
                    "registered again within %.0f s; going on with %d\n",
            c->registered, c->n, c->o.register_timeout, c->registered);
    fflush(stderr);
    c->n = c->registered;
  }
  if (c->registered < c->n) {
    orion_buf names;
    orion_buf_init(&names);
    for (i = 0; i < c->n; i++)
      if (c->peers[i].addr[0] == '\0') {
        char one[ORION_HOST_MAX + 64];
        snprintf(one, sizeof one, "%sexecutor %d (%s)", names.len ? ", " : "",
                 i, c->peers[i].where);
        orion_buf_append(&names, one, strlen(one));
      }
    orion_buf_u8(&names, 0);
    orion_error_set(err, ORION_EINVAL,
                    "%d of %d executors never registered within %.0f s: "
                    "%s",
                    c->n - c->registered, c->n, c->o.register_timeout,
                    names.data != NULL ? names.data : "?");
    orion_buf_free(&names);
    stop_all(c, 1, err != NULL ? err->msg : "executors never registered");
    free_cluster(c);
    accepting = NULL;
    return NULL;
  }
  send_peers(c);
  c->doing[0] = '\0';
  c->formed = 1;
  return c;
}

orion_cluster *orion_cluster_start(const orion_cluster_opts *o,
                                   orion_error *err) {
  orion_cluster *c = orion_cluster_begin(o, err);
  return c != NULL ? orion_cluster_finish(c, err) : NULL;
}

/* ---- elastic jobs ------------------------------------------------------- */

void orion_cluster_boundary(orion_cluster *c) {
  if (c != NULL && c->njoin > 0 && elastic_hook != NULL) {
    orion_cluster_elastic_fn fn = elastic_hook;
    elastic_hook = NULL;
    fn(elastic_ud, c, -1);
    elastic_hook = fn; /* it returned: the joiners wait on */
  }
}

int orion_cluster_live(const orion_cluster *c, int except) {
  int i, k = 0;
  for (i = 0; i < c->n; i++)
    if (i != except && c->peers[i].conn != NULL &&
        !(c->peers[i].spawned && c->peers[i].exited))
      k++;
  return k;
}

int orion_cluster_joiners(const orion_cluster *c) { return c->njoin; }

int orion_cluster_load_parts(const orion_cluster *c) {
  if (!c->o.elastic)
    return 0;
  return c->o.load_parts > 0 ? c->o.load_parts : c->n;
}

int orion_cluster_reformed(const orion_cluster *c) {
  return c->o.reform_min > 0;
}

const char *orion_cluster_listen_addr(const orion_cluster *c) {
  return c->listen_addr;
}

const char *orion_cluster_token(const orion_cluster *c) { return c->token; }

void orion_cluster_release(orion_cluster *c, int lost, char *pids, size_t n) {
  size_t w = 0;
  int i;
  c->stopping = 1;
  if (n > 0)
    pids[0] = '\0';
  for (i = 0; i < c->n; i++) {
    peer *p = &c->peers[i];
    if (p->spawned && !p->exited && i == lost)
      uv_process_kill(&p->proc, SIGKILL);
    else if (p->spawned && !p->exited && w + 16 < n)
      w += (size_t)snprintf(pids + w, n - w, "%s%d", w > 0 ? " " : "",
                            p->proc.pid);
    if (p->conn != NULL)
      orion_conn_close(p->conn, "the job re-forms");
  }
  close_joiners(c, "the job re-forms");
  orion_gate_close_all(&c->gate, "the job re-forms");
  for (i = 0; i < 20; i++) /* the closes reach the executors */
    uv_run(&c->loop, UV_RUN_NOWAIT);
}

/* Appends a copy of h's descriptor (dup: without close-on-exec) to
 * fds[*w..n). */
static void keep_fd(const uv_handle_t *h, char *fds, size_t n, size_t *w) {
  uv_os_fd_t fd;
  int k;
  if (uv_fileno(h, &fd) != 0 || *w + 16 >= n)
    return;
  k = dup(fd);
  if (k >= 0)
    *w += (size_t)snprintf(fds + *w, n - *w, "%s%d", *w > 0 ? " " : "", k);
}

void orion_cluster_keep_stderr(const orion_cluster *c, char *fds, size_t n) {
  size_t w = 0;
  int i;
  if (n > 0)
    fds[0] = '\0';
  for (i = 0; i < c->n; i++)
    if (c->peers[i].relaying)
      keep_fd((const uv_handle_t *)&c->peers[i].errpipe, fds, n, &w);
  for (i = 0; i < c->nrelays; i++)
    if (c->relay_open[i])
      keep_fd((const uv_handle_t *)&c->relays[i], fds, n, &w);
}
