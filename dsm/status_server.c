/* The job page's HTTP server: a libuv loop on a thread of its own that
 * answers GET / (the page), /api/status and /api/metrics from the store
 * (status.c), behind the job page's token (see status.h).
 *
 * Every connection carries one request (dsm/http.h parses it) and is
 * closed after the answer.  So that slow or idle sockets cannot lock the
 * token holder out (docs/security.md, "The job page"):
 *
 *   - a request head must arrive whole within ORION_STATUS_HEAD_MS of the
 *     accept (a deadline, not an idle time: a byte a second does not
 *     extend it), else 408; an answer must be taken within
 *     ORION_STATUS_SEND_MS, else the connection is closed;
 *   - at most ORION_STATUS_CONNS connections are open, at most
 *     ORION_STATUS_PER_ADDR from one address, and the last slot is kept
 *     for an address that has presented the token before;
 *   - when a newcomer finds no room, the oldest connection still waiting
 *     for its head (at least ORION_STATUS_EVICT_MS old) is answered 503
 *     and closed to make room: a client that sends its request at once,
 *     as a browser does, gets in however many sockets an attacker holds
 *     open, even from the same loopback address.  Only when every
 *     connection is younger than that is the newcomer refused with 503.
 *
 * Only this thread touches the loop and its handles, once
 * orion_status_start has handed them over. */
#include "dsm/status.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "dsm/addr.h"
#include "dsm/http.h"
#include "dsm/net.h"
#include "util/alloc.h"
#include "util/clock.h"

#define ORION_STATUS_HEAD_S 2
#define ORION_STATUS_HEAD_MS (ORION_STATUS_HEAD_S * 1000)
#define ORION_STATUS_SEND_MS 10000
#define ORION_STATUS_CONNS 64
#define ORION_STATUS_PER_ADDR 8
#define ORION_STATUS_EVICT_MS 250
#define ORION_STATUS_TRUSTED 16

/* A client's address without its port: what the per-address limits and
 * the token holder's slot go by. */
typedef struct peer {
  int family; /* AF_INET or AF_INET6; 0: unknown */
  unsigned char a[16];
} peer;

typedef struct hconn hconn;

static struct {
  int up;
  uv_loop_t loop;
  uv_tcp_t server;
  uv_async_t stop;
  uv_thread_t thread;
  char token[ORION_TOKEN_HEX_LEN + 1];
  char cookie[32]; /* the cookie's name: "orion-status-PORT" */
  const char *page;
  size_t page_len;
  /* The connections that hold a slot, oldest first, and how many. */
  hconn *first, *last;
  int nconns;
  /* Addresses that presented the token, the oldest replaced first. */
  peer trusted[ORION_STATUS_TRUSTED];
  int ntrusted, trusted_next;
} srv;

struct hconn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wreq;
  orion_http_req req;
  orion_buf out;
  peer from;
  uint64_t accepted; /* uv_now at the accept */
  hconn *prev, *next; /* in srv's list while it holds a slot */
  int holds_slot;
  int answered;
  int closing; /* handles left to close */
};

/* ---- slots -------------------------------------------------------------- */

static void peer_of(uv_tcp_t *tcp, peer *p) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  memset(p, 0, sizeof *p);
  if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) != 0)
    return;
  if (ss.ss_family == AF_INET) {
    p->family = AF_INET;
    memcpy(p->a, &((struct sockaddr_in *)&ss)->sin_addr, 4);
  } else if (ss.ss_family == AF_INET6) {
    p->family = AF_INET6;
    memcpy(p->a, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
  }
}

static int peer_eq(const peer *x, const peer *y) {
  return x->family == y->family && memcmp(x->a, y->a, sizeof x->a) == 0;
}

static int trusted(const peer *p) {
  int i;
  for (i = 0; i < srv.ntrusted; i++)
    if (peer_eq(&srv.trusted[i], p))
      return 1;
  return 0;
}

/* Remembers that p presented the token (once; the oldest of a full table
 * is forgotten). */
static void trust(const peer *p) {
  if (p->family == 0 || trusted(p))
    return;
  srv.trusted[srv.trusted_next] = *p;
  srv.trusted_next = (srv.trusted_next + 1) % ORION_STATUS_TRUSTED;
  if (srv.ntrusted < ORION_STATUS_TRUSTED)
    srv.ntrusted++;
}

static void slot_take(hconn *c) {
  c->prev = srv.last;
  c->next = NULL;
  if (srv.last != NULL)
    srv.last->next = c;
  else
    srv.first = c;
  srv.last = c;
  c->holds_slot = 1;
  srv.nconns++;
}

static void slot_release(hconn *c) {
  if (!c->holds_slot)
    return;
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    srv.first = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  else
    srv.last = c->prev;
  c->prev = c->next = NULL;
  c->holds_slot = 0;
  srv.nconns--;
}

/* ---- connections -------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
  hconn *c = h->data;
  if (--c->closing > 0)
    return;
  orion_buf_free(&c->out);
  orion_free(c);
}

static void conn_close(hconn *c) {
  if (c->closing > 0)
    return;
  slot_release(c);
  c->closing = 2;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
  uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_written(uv_write_t *w, int status) {
  (void)status;
  conn_close(w->data);
}

static void on_timer(uv_timer_t *t);

/* Sends what is in c->out, then closes; a client that does not take the
 * answer within ORION_STATUS_SEND_MS loses it. */
static void send_out(hconn *c) {
  uv_buf_t b;
  c->answered = 1;
  uv_read_stop((uv_stream_t *)&c->tcp);
  uv_timer_start(&c->timer, on_timer, ORION_STATUS_SEND_MS, 0);
  if (c->out.oom) {
    conn_close(c);
    return;
  }
  b = uv_buf_init(c->out.data, (unsigned)c->out.len);
  c->wreq.data = c;
  if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0)
    conn_close(c);
}

static void answer_text(hconn *c, int status, const char *text,
                        const char *extra, int head_only) {
  char body[256];
  int n = snprintf(body, sizeof body, "%d %s: %s\n", status,
                   orion_http_reason(status), text);
  orion_http_response(&c->out, status, "text/plain; charset=utf-8", extra,
                      body, (size_t)n, head_only);
  send_out(c);
}

static int path_is(const orion_http_req *r, const char *p) {
  return r->path.n == strlen(p) && memcmp(r->path.p, p, r->path.n) == 0;
}

/* The request in c->req is complete: route it. */
static void route(hconn *c) {
  orion_http_req *r = &c->req;
  int head = r->method.n == 4 && memcmp(r->method.p, "HEAD", 4) == 0;
  int from_query;
  char extra[160], since_s[32];
  orion_buf body;
  if (!head && !(r->method.n == 3 && memcmp(r->method.p, "GET", 3) == 0)) {
    answer_text(c, 405, "the job page answers GET and HEAD only",
                "Allow: GET, HEAD\r\n", 0);
    return;
  }
  if (!orion_http_token_ok(r, srv.token, srv.cookie, &from_query)) {
    answer_text(c, 403,
                "this page needs the token that orion-driver printed "
                "(the whole http://...?token=... address)",
                NULL, head);
    return;
  }
  trust(&c->from);
  orion_buf_init(&body);
  if (path_is(r, "/")) {
    extra[0] = '\0';
    if (from_query) /* later requests (the page's own) carry the cookie */
      snprintf(extra, sizeof extra,
               "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\n",
               srv.cookie, srv.token);
    orion_http_response(&c->out, 200, "text/html; charset=utf-8", extra,
                        srv.page, srv.page_len, head);
  } else if (path_is(r, "/api/status")) {
    orion_status_render(&body, orion_now());
    orion_http_response(&c->out, 200, "application/json", NULL, body.data,
                        body.len, head);
  } else if (path_is(r, "/api/metrics")) {
    int64_t since = 0;
    if (orion_http_query_param(r, "since", since_s, sizeof since_s) >= 0)
      since = strtoll(since_s, NULL, 10);
    orion_status_render_metrics(&body, since);
    orion_http_response(&c->out, 200, "application/json", NULL, body.data,
                        body.len, head);
  } else {
    orion_buf_free(&body);
    answer_text(c, 404, "the job page has /, /api/status and /api/metrics",
                NULL, head);
    return;
  }
  orion_buf_free(&body);
  send_out(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  static char rbuf[4096]; /* one thread, and each read is consumed at once */
  (void)h;
  (void)hint;
  *b = uv_buf_init(rbuf, sizeof rbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  hconn *c = s->data;
  int rc;
  if (c->answered)
    return;
  if (n < 0) {
    conn_close(c);
    return;
  }
  if (n == 0)
    return;
  rc = orion_http_feed(&c->req, b->base, (size_t)n);
  if (rc == 1)
    route(c);
  else if (rc < 0)
    answer_text(c, c->req.status, c->req.why, NULL, 0);
}

static void on_timer(uv_timer_t *t) {
  hconn *c = t->data;
  char why[64];
  if (c->answered) {
    conn_close(c); /* the answer was not taken in time */
    return;
  }
  snprintf(why, sizeof why, "no complete request head within %d s",
           ORION_STATUS_HEAD_S);
  answer_text(c, 408, why, NULL, 0);
}

/* The oldest connection still waiting for its head that is at least
 * ORION_STATUS_EVICT_MS old, from address `from` only when it is not
 * NULL, and from an address without the token first. */
static hconn *victim(const peer *from, uint64_t now) {
  hconn *c, *any = NULL;
  for (c = srv.first; c != NULL; c = c->next) {
    if (c->answered || now - c->accepted < ORION_STATUS_EVICT_MS ||
        (from != NULL && !peer_eq(&c->from, from)))
      continue;
    if (!trusted(&c->from))
      return c;
    if (any == NULL)
      any = c;
  }
  return any;
}

static void evict(hconn *c) {
  slot_release(c);
  answer_text(c, 503, "the job page is full and this connection sent no "
                      "request; try again", NULL, 0);
}

/* Makes room for newcomer c: within its address's share, then within the
 * slots its address may use (all of them for an address that presented
 * the token, all but one for any other).  Returns 0 when there is none to
 * be had. */
static int make_room(hconn *c, uint64_t now) {
  hconn *o;
  int same = 0;
  for (o = srv.first; o != NULL; o = o->next)
    same += peer_eq(&o->from, &c->from);
  if (same >= ORION_STATUS_PER_ADDR) {
    if ((o = victim(&c->from, now)) == NULL)
      return 0;
    evict(o);
  }
  if (srv.nconns >= ORION_STATUS_CONNS - !trusted(&c->from)) {
    if ((o = victim(NULL, now)) == NULL)
      return 0;
    evict(o);
  }
  return 1;
}

static void on_connection(uv_stream_t *server, int status) {
  hconn *c;
  if (status != 0)
    return;
  c = orion_calloc(1, sizeof *c);
  if (c == NULL)
    return;
  orion_http_init(&c->req);
  orion_buf_init(&c->out);
  uv_tcp_init(&srv.loop, &c->tcp);
  uv_timer_init(&srv.loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  peer_of(&c->tcp, &c->from);
  uv_update_time(&srv.loop);
  c->accepted = uv_now(&srv.loop);
  if (!make_room(c, c->accepted)) {
    answer_text(c, 503, "too many connections to the job page from your "
                        "address or in all; try again", NULL, 0);
    return;
  }
  slot_take(c);
  uv_timer_start(&c->timer, on_timer, ORION_STATUS_HEAD_MS, 0);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- the thread --------------------------------------------------------- */

/* Closes every handle: a connection's two through conn_close (data
 * points at the connection), the server's and the async as they are. */
static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (uv_is_closing(h))
    return;
  if (h != (uv_handle_t *)&srv.server && h != (uv_handle_t *)&srv.stop &&
      h->data != NULL)
    conn_close(h->data);
  else
    uv_close(h, NULL);
}

static void on_stop(uv_async_t *a) {
  (void)a;
  uv_walk(&srv.loop, walk_close, NULL);
}

static void serve(void *arg) {
  (void)arg;
  uv_run(&srv.loop, UV_RUN_DEFAULT);
}

/* "[ADDR:]PORT" into host (127.0.0.1 when absent) and port 0..65535. */
static int parse_spec(const char *spec, char *host, size_t hn, int *port) {
  const char *colon = strrchr(spec, ':'), *p = colon != NULL ? colon + 1
                                                             : spec;
  char *end;
  long v;
  size_t len;
  if (*p < '0' || *p > '9')
    return -1;
  v = strtol(p, &end, 10);
  if (*end != '\0' || v < 0 || v > 65535)
    return -1;
  *port = (int)v;
  if (colon == NULL) {
    snprintf(host, hn, "127.0.0.1");
    return 0;
  }
  len = (size_t)(colon - spec);
  if (len >= 2 && spec[0] == '[' && spec[len - 1] == ']') {
    spec++;
    len -= 2;
  }
  if (len == 0 || len >= hn)
    return -1;
  memcpy(host, spec, len);
  host[len] = '\0';
  return orion_host_valid(host) ? 0 : -1;
}

int orion_status_start(const char *spec, const char *page, size_t page_len,
                       char *url, size_t url_len, orion_error *err) {
  char host[ORION_HOST_MAX + 1], shown[ORION_HOSTPORT_MAX + 1],
      msg[256];
  int port, rc;
  if (srv.up)
    return orion_error_set(err, ORION_EINVAL, "the status page runs already");
  if (parse_spec(spec, host, sizeof host, &port) != 0)
    return orion_error_set(err, ORION_EINVAL,
                           "--status: expected [ADDR:]PORT (PORT 0..65535, "
                           "0 for any free port), got '%s'",
                           spec);
  if (orion_token_new(srv.token, sizeof srv.token) != 0)
    return orion_error_set(err, ORION_EINVAL,
                           "--status: cannot make a token: no randomness");
  srv.first = srv.last = NULL;
  srv.nconns = srv.ntrusted = srv.trusted_next = 0;
  if (uv_loop_init(&srv.loop) != 0)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  msg[0] = '\0';
  rc = orion_net_listen(&srv.loop, &srv.server, host, port, on_connection,
                        &port, msg, sizeof msg);
  if (rc != 0) {
    uv_walk(&srv.loop, walk_close, NULL);
    uv_run(&srv.loop, UV_RUN_DEFAULT);
    uv_loop_close(&srv.loop);
    return orion_error_set(err, ORION_EINVAL, "--status: %s", msg);
  }
  srv.page = page;
  srv.page_len = page_len;
  snprintf(srv.cookie, sizeof srv.cookie, "orion-status-%d", port);
  uv_async_init(&srv.loop, &srv.stop, on_stop);
  {
    char shown_host[ORION_HOST_MAX + 1];
    snprintf(shown_host, sizeof shown_host, "%s", host);
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
      if (gethostname(shown_host, sizeof shown_host) != 0)
        snprintf(shown_host, sizeof shown_host, "127.0.0.1");
    if (orion_hostport_format(shown_host, port, shown, sizeof shown) != 0)
      snprintf(shown, sizeof shown, "127.0.0.1:%d", port);
  }
  snprintf(url, url_len, "http://%s/?token=%s", shown, srv.token);
  orion_status_store(1);
  if (uv_thread_create(&srv.thread, serve, NULL) != 0) {
    orion_status_store(0);
    uv_walk(&srv.loop, walk_close, NULL);
    uv_run(&srv.loop, UV_RUN_DEFAULT);
    uv_loop_close(&srv.loop);
    return orion_error_set(err, ORION_EINVAL,
                           "--status: cannot start the server's thread");
  }
  srv.up = 1;
  return 0;
}

void orion_status_stop(void) {
  if (!srv.up)
    return;
  uv_async_send(&srv.stop);
  uv_thread_join(&srv.thread);
  uv_loop_close(&srv.loop);
  srv.up = 0;
  orion_status_store(0);
}
