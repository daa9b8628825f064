/* Framed connections over libuv TCP (see net.h). */
#include "dsm/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "util/alloc.h"
#include "util/clock.h"

/* ST_ALERTING: an alert is on its way and the connection waits for the
 * peer to close (net.h); it counts as closing for everything else. */
enum { ST_NEW = 0, ST_OPEN, ST_ALERTING, ST_CLOSING };

static void sockaddr_text(const struct sockaddr *sa, char *out, size_t n) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    uv_ip4_name(in, host, sizeof host);
    port = ntohs(in->sin_port);
    snprintf(out, n, "%s:%d", host, port);
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    uv_ip6_name(in6, host, sizeof host);
    port = ntohs(in6->sin6_port);
    snprintf(out, n, "[%s]:%d", host, port);
  } else {
    snprintf(out, n, "?");
  }
}

/* Fills c->peer; returns whether the peer is on loopback. */
static int fill_peer(orion_conn *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
    return 0;
  sockaddr_text((const struct sockaddr *)&ss, c->peer, sizeof c->peer);
  if (ss.ss_family == AF_INET)
    return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
  if (ss.ss_family == AF_INET6) {
    const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) ||
           (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
  }
  return 0;
}

orion_conn *orion_conn_new(uv_loop_t *loop, orion_wire_role role,
                           const char *token, int policy,
                           const orion_conn_cbs *cbs, void *data) {
  orion_conn *c;
  size_t tlen = token != NULL ? strlen(token) : 0;
  if (role != ORION_WIRE_ACCEPT && role != ORION_WIRE_CONNECT)
    return NULL;
  c = orion_calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  if (orion_wire_decoder_init(&c->dec, role) != 0 ||
      orion_sec_init(&c->sec,
                     role == ORION_WIRE_ACCEPT ? ORION_SEC_ACCEPT
                                               : ORION_SEC_CONNECT,
                     token, tlen, (orion_sec_policy)policy) != 0 ||
      uv_tcp_init(loop, &c->tcp) != 0) {
    orion_wire_decoder_free(&c->dec);
    orion_sec_free(&c->sec);
    orion_free(c);
    return NULL;
  }
  uv_timer_init(loop, &c->deadline);
  c->handles = 2;
  c->tcp.data = c;
  c->deadline.data = c;
  orion_buf_init(&c->early);
  orion_buf_init(&c->held);
  c->cbs = *cbs;
  c->data = data;
  c->last_rx = orion_now();
  snprintf(c->peer, sizeof c->peer, "?");
  return c;
}

static void on_closed(uv_handle_t *h) {
  orion_conn *c = h->data;
  if (--c->handles > 0)
    return;
  if (c->cbs.closed != NULL)
    c->cbs.closed(c, c->reason);
  orion_wire_decoder_free(&c->dec);
  orion_sec_free(&c->sec);
  orion_buf_free(&c->early);
  orion_buf_free(&c->held);
  orion_free(c->rbuf);
  orion_free(c);
}

void orion_conn_close(orion_conn *c, const char *fmt, ...) {
  va_list ap;
  if (c->state == ST_CLOSING)
    return;
  /* What a corked connection holds goes first, as an uncorked send would
   * have gone (a write that fails closes c with its own reason). */
  if (c->state == ST_OPEN && c->held.len > 0 && orion_conn_flush(c) != 0)
    return;
  if (c->state != ST_ALERTING) { /* else the alert's reason stands */
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
  }
  c->state = ST_CLOSING;
  uv_read_stop((uv_stream_t *)&c->tcp);
  uv_close((uv_handle_t *)&c->deadline, on_closed);
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

int orion_conn_closing(const orion_conn *c) {
  return c->state >= ST_ALERTING;
}

/* The read buffer: one record and its framing at first; a connection
 * that carries records larger than its reads grows it to several, so
 * that a read ends inside a record seldom and the kept part moves to the
 * front seldom, and gives that back after RBUF_SMALL_READS reads in a row
 * that the small one would have held (a driver's connections to
 * thousands of executors do not each keep one). */
#define RBUF_FIRST (ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD)
#define RBUF_BULK (4 * RBUF_FIRST)
#define RBUF_SMALL_READS 64

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  orion_conn *c = h->data;
  (void)hint;
  if (c->rbuf == NULL) {
    c->rbuf = orion_malloc(RBUF_FIRST);
    c->rcap = c->rbuf != NULL ? RBUF_FIRST : 0;
    c->rstart = c->rkeep = 0;
  }
  /* Empty when out of memory: libuv then reports UV_ENOBUFS (on_read). */
  buf->base = c->rbuf != NULL ? c->rbuf + c->rstart + c->rkeep : NULL;
  buf->len = c->rcap - c->rstart - c->rkeep;
}

/* Keeps p[0..n) (in c->rbuf: the start of a record of `want` bytes) for
 * the next read, with room after it for the rest of the record; 0, or
 * ORION_ENOMEM (c is then closing). */
static int keep_record(orion_conn *c, const char *p, size_t n, size_t want) {
  if (c->rcap < RBUF_BULK) {
    char *big = orion_malloc(RBUF_BULK);
    if (big == NULL) {
      orion_conn_close(c, "out of memory reading a record");
      return ORION_ENOMEM;
    }
    memcpy(big, p, n);
    orion_free(c->rbuf);
    c->rbuf = big;
    c->rcap = RBUF_BULK;
    c->rstart = 0;
  } else {
    c->rstart = (size_t)(p - c->rbuf);
    if (c->rcap - c->rstart < want) { /* the rest would not fit after it */
      memmove(c->rbuf, p, n);
      c->rstart = 0;
    }
  }
  c->rkeep = n;
  return 0;
}

/* Plaintext stream bytes (what the records carried) into the decoder. */
static void feed_plain(orion_conn *c, const char *p, size_t left) {
  if (c->dec.offset == c->rx_off0) /* a frame starts in this read */
    c->rx_t0 = orion_now();
  while (left > 0 && c->state < ST_ALERTING) {
    size_t used = 0;
    int rc = orion_wire_decoder_feed(&c->dec, p, left, &used);
    p += used;
    left -= used;
    if (rc == ORION_WIRE_FRAME_READY) {
      c->last_rx = orion_now();
      if (c->dec.offset - c->rx_off0 >= ORION_CONN_RATE_MIN &&
          c->last_rx > c->rx_t0) {
        double r = (double)(c->dec.offset - c->rx_off0) /
                   (c->last_rx - c->rx_t0);
        if (r > c->rx_rate)
          c->rx_rate = r;
      }
      c->rx_off0 = c->dec.offset; /* the next frame starts here */
      c->rx_t0 = c->last_rx;
      c->cbs.frame(c, orion_wire_decoder_frame(&c->dec));
    } else if (rc < 0) {
      orion_conn_close(c, "refused: %s", orion_wire_decoder_reason(&c->dec));
    }
  }
}

static int write_raw(orion_conn *c, orion_buf *b);
static int write_sealed(orion_conn *c, orion_buf *b);

/* The handshake completed: frames queued meanwhile go, sealed. */
static void authenticated(orion_conn *c) {
  c->authed = 1;
  /* From here every byte the decoder gets came out of a verified record
   * (on_read): the records' MAC covers what the frames' CRC would. */
  orion_wire_decoder_mac_covered(&c->dec);
  uv_timer_stop(&c->deadline);
  if (c->early.len > 0)
    write_sealed(c, &c->early);
  if (c->sec.role == ORION_SEC_CONNECT && c->cbs.connected != NULL)
    c->cbs.connected(c);
}

/* Handshake bytes; returns how many of p[0..n) it took (the rest are
 * records). */
static size_t feed_handshake(orion_conn *c, const char *p, size_t n) {
  orion_buf out;
  size_t used = 0;
  int rc;
  orion_buf_init(&out);
  rc = orion_sec_handshake(&c->sec, p, n, &used, &out);
  if (out.len > 0)
    write_raw(c, &out);
  orion_buf_free(&out);
  if (rc < 0)
    orion_conn_close(c, "refused: %s", c->sec.why);
  else if (rc == ORION_SEC_DONE)
    authenticated(c);
  return used;
}

static void on_linger_end(uv_timer_t *t) {
  orion_conn_close(t->data, "%s", ""); /* keeps the alert's reason */
}

/* A record from the peer failed (c->sec.why says how): the peer is told
 * in an alert, and the connection waits for it to close (net.h). */
static void refuse_record(orion_conn *c) {
  unsigned char rec[ORION_SEC_ALERT_MAX + ORION_SEC_RECORD_OVERHEAD];
  size_t n = orion_sec_alert(&c->sec, c->sec.why, rec);
  orion_buf b;
  c->fault = ORION_CONN_FAULT_RECORD;
  orion_buf_init(&b);
  orion_buf_append(&b, rec, n);
  if (n == 0 || b.oom) {
    orion_buf_free(&b);
    orion_conn_close(c, "refused: %s", c->sec.why);
    return;
  }
  snprintf(c->reason, sizeof c->reason, "refused: %s", c->sec.why);
  /* Before the write: a write that fails at once closes the connection
   * with this reason, not its own. */
  c->state = ST_ALERTING;
  write_raw(c, &b);
  orion_buf_free(&b);
  if (c->state == ST_ALERTING)
    uv_timer_start(&c->deadline, on_linger_end, ORION_CONN_LINGER_S * 1000,
                   0);
}

/* The peer refused a record of ours: its alert's text, kept printable. */
static void alerted(orion_conn *c, const unsigned char *text, size_t n) {
  size_t i;
  for (i = 0; i < n && i < sizeof c->alert - 1; i++)
    c->alert[i] = text[i] >= 32 && text[i] < 127 ? (char)text[i] : '?';
  c->alert[i] = '\0';
  c->fault = ORION_CONN_FAULT_ALERTED;
  orion_conn_close(c, "the peer refused a record from this end: %s",
                   c->alert);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  orion_conn *c = s->data;
  const char *p = buf->base;
  size_t left;
  if (n == 0) /* nothing read (EAGAIN): what is kept stays */
    return;
  if (c->state == ST_ALERTING) { /* drop all until the peer closes */
    c->rstart = c->rkeep = 0;
    if (n < 0)
      orion_conn_close(c, "%s", "");
    return;
  }
  if (n < 0) {
    if (!c->authed)
      orion_conn_close(c, "connection closed by the peer during the "
                          "authentication handshake");
    else if (n == UV_EOF && c->rkeep == 0 && c->sec.rec_have == 0 &&
             c->sec.rec_len == 0 && orion_wire_decoder_finish(&c->dec) == 0)
      orion_conn_close(c, "connection closed by the peer");
    else if (n == UV_EOF)
      orion_conn_close(c, "connection closed by the peer inside a frame: %s",
                       c->dec.fault != ORION_WIRE_OK
                           ? orion_wire_decoder_reason(&c->dec)
                           : "within a record");
    else
      orion_conn_close(c, "read failed: %s", uv_strerror((int)n));
    return;
  }
  c->bytes_in += (uint64_t)n;
  c->reads++;
  left = (size_t)n;
  if (c->rkeep > 0) { /* the read landed after the kept bytes */
    p = c->rbuf + c->rstart;
    left += c->rkeep;
  }
  c->rstart = c->rkeep = 0;
  while (left > 0 && c->state < ST_ALERTING) {
    size_t used = 0;
    if (!c->authed) {
      used = feed_handshake(c, p, left);
    } else {
      const unsigned char *plain;
      size_t plain_len, want = orion_sec_record_want(&c->sec, p, left);
      int rc;
      if (want > left) { /* a record in part: kept until the rest comes */
        keep_record(c, p, left, want);
        c->rsmall = 0;
        return;
      }
      rc = orion_sec_open(&c->sec, p, left, &used, &plain, &plain_len);
      if (rc < 0)
        refuse_record(c);
      else if (rc == ORION_SEC_ALERT)
        alerted(c, plain, plain_len);
      else if (rc == ORION_SEC_DONE)
        feed_plain(c, (const char *)plain, plain_len);
    }
    p += used;
    left -= used;
  }
  c->rsmall = (size_t)n < RBUF_FIRST ? c->rsmall + 1 : 0;
  if (c->rkeep == 0 && c->rcap > RBUF_FIRST &&
      c->rsmall >= RBUF_SMALL_READS) {
    orion_free(c->rbuf); /* on_alloc makes a small one */
    c->rbuf = NULL;
    c->rcap = 0;
  }
}

/* TCP keepalive: a peer whose host is gone (not merely busy: its kernel
 * still answers) is found within about 10 s of silence, even while no
 * heartbeat is expected of it (an executor waiting for a driver that runs
 * the script between loops).  Keepalive probes only an idle connection:
 * one with data that the peer never acknowledges (an idle executor's
 * heartbeats to a driver behind a cut link) would wait for TCP's
 * retransmission timeout, many minutes.  TCP_USER_TIMEOUT bounds that too:
 * data unacknowledged for 10 s closes the connection (a slow link still
 * acknowledges what it carries, so it is not cut). */
static void keepalive(orion_conn *c) {
  uv_os_fd_t fd;
  uv_tcp_keepalive(&c->tcp, 1, 4);
  if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
#if defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
    int intvl = 2, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
#endif
#ifdef TCP_USER_TIMEOUT
    {
      unsigned int ms = 10000;
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
    }
#endif
  }
  (void)fd;
}

static void on_deadline(uv_timer_t *t) {
  orion_conn *c = t->data;
  if (!c->authed)
    orion_conn_close(c, "refused: no authentication within %d s",
                     ORION_CONN_HANDSHAKE_S);
}

/* Both ends: reading starts, and the handshake with it. */
static int start_reading(orion_conn *c) {
  int rc;
  c->state = ST_OPEN;
  uv_tcp_nodelay(&c->tcp, 1);
  keepalive(c);
  c->sec.loopback = fill_peer(c);
  uv_timer_start(&c->deadline, on_deadline, ORION_CONN_HANDSHAKE_S * 1000, 0);
  rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (rc != 0) {
    orion_conn_close(c, "cannot read: %s", uv_strerror(rc));
  } else if (c->sec.role == ORION_SEC_CONNECT) {
    orion_buf out;
    orion_buf_init(&out);
    orion_sec_start(&c->sec, &out);
    write_raw(c, &out);
    orion_buf_free(&out);
  }
  return rc;
}

int orion_conn_accept(uv_stream_t *server, orion_conn *c) {
  int rc = uv_accept(server, (uv_stream_t *)&c->tcp);
  if (rc != 0) {
    orion_conn_close(c, "accept failed: %s", uv_strerror(rc));
    return rc;
  }
  return start_reading(c);
}

static void on_connect(uv_connect_t *req, int status) {
  orion_conn *c = req->data;
  if (c->state >= ST_ALERTING)
    return;
  if (status != 0) {
    orion_conn_close(c, "cannot connect to %s: %s", c->peer,
                     uv_strerror(status));
    return;
  }
  start_reading(c); /* `connected` once the peer has proved itself */
}

int orion_conn_bind_local(orion_conn *c, const char *host, char *msg,
                          size_t msglen) {
  struct sockaddr_storage ss;
  int rc;
  msg[0] = '\0';
  rc = orion_net_resolve(host, 0, &ss, msg, msglen);
  if (rc == 0)
    rc = uv_tcp_bind(&c->tcp, (const struct sockaddr *)&ss, 0);
  if (rc != 0 && msg[0] == '\0')
    snprintf(msg, msglen, "cannot bind to %s: %s", host, uv_strerror(rc));
  return rc;
}

int orion_net_resolve(const char *host, int port, struct sockaddr_storage *out,
                      char *msg, size_t msglen) {
  struct addrinfo hints, *res = NULL;
  char ports[16];
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(ports, sizeof ports, "%d", port);
  rc = getaddrinfo(host, ports, &hints, &res);
  if (rc != 0 || res == NULL) {
    snprintf(msg, msglen, "cannot resolve host '%s': %s", host,
             rc != 0 ? gai_strerror(rc) : "no address");
    if (res != NULL)
      freeaddrinfo(res);
    return UV_EAI_NONAME;
  }
  memset(out, 0, sizeof *out);
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

int orion_conn_connect(orion_conn *c, const char *host, int port) {
  struct sockaddr_storage ss;
  int rc = orion_net_resolve(host, port, &ss, c->reason, sizeof c->reason);
  if (rc != 0) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    orion_conn_close(c, "%s", why);
    return rc;
  }
  sockaddr_text((const struct sockaddr *)&ss, c->peer, sizeof c->peer);
  c->creq.data = c;
  rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&ss,
                      on_connect);
  if (rc != 0)
    orion_conn_close(c, "cannot connect to %s: %s", c->peer, uv_strerror(rc));
  return rc;
}

typedef struct write_req {
  uv_write_t req;
  char *data;
  unsigned char *side; /* the records' heads and tags */
} write_req;

static void on_written(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  orion_conn *c = req->handle->data;
  orion_free(w->data);
  orion_free(w->side);
  orion_free(w);
  if (status != 0 && status != UV_ECANCELED)
    orion_conn_close(c, "write failed: %s", uv_strerror(status));
}

/* Writes bufs[0..nbufs) (pointing into data and side, which the write
 * then owns; data may be NULL when a later request owns it): at once as far
 * as the socket takes them when nothing is queued before them (uv_try_write
 * is one writev, without a request, a poll change or a callback), the rest
 * queued.  On failure it frees both and closes the connection. */
static int queue_write(orion_conn *c, char *data, unsigned char *side,
                       const uv_buf_t *bufs, unsigned nbufs, size_t total) {
  write_req *w;
  uv_buf_t rest[8]; /* write_sealed gives at most 3 * SEAL_GROUP */
  int rc = UV_EAGAIN;
  c->bytes_out += total;
  c->writes++;
  if (nbufs <= sizeof rest / sizeof rest[0])
    rc = uv_try_write((uv_stream_t *)&c->tcp, bufs, nbufs);
  if (rc >= 0) {
    size_t done = (size_t)rc;
    unsigned i, k = 0;
    if (done == total) {
      orion_free(data);
      orion_free(side);
      return 0;
    }
    for (i = 0; i < nbufs; i++) { /* what the socket did not take */
      if (done >= bufs[i].len) {
        done -= bufs[i].len;
        continue;
      }
      rest[k] = uv_buf_init(bufs[i].base + done,
                            (unsigned)(bufs[i].len - done));
      done = 0;
      k++;
    }
    bufs = rest;
    nbufs = k;
  } else if (rc != UV_EAGAIN && rc != UV_ENOSYS) {
    orion_free(data);
    orion_free(side);
    orion_conn_close(c, "write failed: %s", uv_strerror(rc));
    return rc;
  }
  w = orion_malloc(sizeof *w);
  if (w == NULL) {
    orion_free(data);
    orion_free(side);
    orion_conn_close(c, "out of memory queueing a frame");
    return ORION_ENOMEM;
  }
  w->data = data;
  w->side = side;
  rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, nbufs, on_written);
  if (rc != 0) {
    orion_free(w->data);
    orion_free(w->side);
    orion_free(w);
    orion_conn_close(c, "write failed: %s", uv_strerror(rc));
    return rc;
  }
  return 0;
}

/* Takes b's bytes (b is left empty). */
static char *take_buf(orion_buf *b) {
  char *data = b->data;
  orion_buf_init(b);
  return data;
}

/* The handshake's messages, as they are. */
static int write_raw(orion_conn *c, orion_buf *b) {
  uv_buf_t ub = uv_buf_init(b->data, (unsigned)b->len);
  size_t len = b->len;
  return queue_write(c, take_buf(b), NULL, &ub, 1, len);
}

/* Records sealed before each write: 128 KiB, so that the first bytes of a
 * large frame are on their way (and the peer opens them as they come)
 * while the rest is being sealed. */
#define SEAL_GROUP 2

/* b's bytes as records, sealed in place: head, the bytes, tag for each,
 * written SEAL_GROUP records at a time (the last write owns b's bytes:
 * libuv completes a stream's writes in order). */
static int write_sealed(orion_conn *c, orion_buf *b) {
  size_t nrec = orion_sec_records(b->len), i, off = 0;
  char *data = b->data;
  size_t len = b->len;
  orion_buf_init(b);
  for (i = 0; i < nrec; i += SEAL_GROUP) {
    size_t g = nrec - i < SEAL_GROUP ? nrec - i : SEAL_GROUP, k, bytes = 0;
    unsigned char *side = orion_malloc(g * ORION_SEC_RECORD_OVERHEAD);
    uv_buf_t bufs[3 * SEAL_GROUP];
    if (side == NULL) {
      orion_free(data);
      orion_conn_close(c, "out of memory sealing a frame");
      return ORION_ENOMEM;
    }
    for (k = 0; k < g; k++) {
      size_t n = len - off < ORION_SEC_RECORD_MAX ? len - off
                                                  : ORION_SEC_RECORD_MAX;
      unsigned char *head = side + k * ORION_SEC_RECORD_OVERHEAD;
      unsigned char *tag = head + ORION_SEC_HEAD_LEN;
      if (orion_sec_seal(&c->sec, data + off, n, head, tag) != 0) {
        orion_free(side);
        orion_free(data);
        orion_conn_close(c, "%s", c->sec.why);
        return ORION_EINVAL;
      }
      bufs[3 * k] = uv_buf_init((char *)head, ORION_SEC_HEAD_LEN);
      bufs[3 * k + 1] = uv_buf_init(data + off, (unsigned)n);
      bufs[3 * k + 2] = uv_buf_init((char *)tag, ORION_SEC_TAG_LEN);
      off += n;
      bytes += n + ORION_SEC_RECORD_OVERHEAD;
    }
    if (queue_write(c, i + g == nrec ? data : NULL, side, bufs,
                    (unsigned)(3 * g), bytes) != 0) {
      if (i + g < nrec) /* queue_write freed data only if it was the last */
        orion_free(data);
      return ORION_EINVAL;
    }
  }
  return 0;
}

int orion_conn_send(orion_conn *c, orion_buf *b) {
  if (c->corked && !b->oom && c->authed && c->state == ST_OPEN) {
    if (b->len <= ORION_CONN_HOLD_MAX) {
      if (c->held.len == 0) { /* the first: its buffer is kept, not copied */
        orion_buf t = c->held;
        c->held = *b;
        *b = t;
      } else {
        orion_buf_append(&c->held, b->data, b->len);
      }
      orion_buf_free(b);
      orion_buf_init(b);
      if (!c->held.oom)
        return 0;
      orion_buf_free(&c->held);
      orion_buf_init(&c->held);
      orion_conn_close(c, "out of memory holding a frame");
      return ORION_ENOMEM;
    }
    if (orion_conn_flush(c) != 0) { /* in order: what is held goes first */
      orion_buf_free(b);
      orion_buf_init(b);
      return ORION_EINVAL;
    }
  }
  if (b->oom) {
    orion_buf_free(b);
    orion_buf_init(b);
    orion_conn_close(c, "out of memory building a frame");
    return ORION_ENOMEM;
  }
  if (b->len == 0)
    return 0;
  if (c->state >= ST_ALERTING) {
    orion_buf_free(b);
    orion_buf_init(b);
    return ORION_EINVAL;
  }
  if (!c->authed) { /* after the handshake */
    orion_buf_append(&c->early, b->data, b->len);
    orion_buf_free(b);
    orion_buf_init(b);
    return c->early.oom ? ORION_ENOMEM : 0;
  }
  return write_sealed(c, b);
}

int orion_conn_flush(orion_conn *c) {
  orion_buf b;
  if (c->held.len == 0)
    return 0;
  b = c->held;
  orion_buf_init(&c->held);
  if (c->state != ST_OPEN) { /* closing: nothing more goes out */
    orion_buf_free(&b);
    return ORION_EINVAL;
  }
  return write_sealed(c, &b);
}

void orion_conn_cork(orion_conn *c, int on) {
  c->corked = on != 0;
  if (!on)
    orion_conn_flush(c);
}

int orion_conn_send_frame(orion_conn *c, int type, const void *payload,
                          size_t len) {
  orion_buf b;
  int rc;
  orion_buf_init(&b);
  rc = orion_wire_encode(&b, type, payload, len);
  if (rc != 0) {
    orion_buf_free(&b);
    return rc;
  }
  return orion_conn_send(c, &b);
}

int orion_net_listen(uv_loop_t *loop, uv_tcp_t *server, const char *host,
                     int port, uv_connection_cb cb, int *port_out, char *msg,
                     size_t msglen) {
  struct sockaddr_storage ss;
  int rc, len = sizeof ss;
  rc = orion_net_resolve(host, port, &ss, msg, msglen);
  if (rc != 0)
    return rc;
  rc = uv_tcp_init(loop, server);
  if (rc == 0)
    rc = uv_tcp_bind(server, (const struct sockaddr *)&ss, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)server, 128, cb);
  if (rc == 0)
    rc = uv_tcp_getsockname(server, (struct sockaddr *)&ss, &len);
  if (rc != 0) {
    snprintf(msg, msglen, "cannot listen on %s:%d: %s", host, port,
             uv_strerror(rc));
    return rc;
  }
  *port_out = ss.ss_family == AF_INET6
                  ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}
