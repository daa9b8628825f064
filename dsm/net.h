/* Framed connections over libuv TCP: the thin adapter between the wire
 * codec (dsm/wire.h) and sockets.
 *
 * A connection owns a uv_tcp_t and an incremental decoder.  Every complete
 * frame is handed to the `frame` callback; the first fault (a bad frame, a
 * wrong token, a read error, the peer closing) closes the connection and
 * calls `closed` once with the reason, after which the connection is freed.
 * Writes are queued whole: orion_conn_send takes the bytes of one or more
 * complete frames and frees them once libuv has written them.  A write
 * goes to the socket at once when nothing is queued before it (one
 * writev, no request or poll change); only what the socket does not take
 * is queued.  A corked connection (orion_conn_cork) holds the small
 * frames sent to it and sends them together, as one set of records in one
 * write, when orion_conn_flush is called: the frames of one event (a
 * clock's blocks) cost one write and one wakeup of the reader.
 *
 * Every connection first runs dsm/sec.h's handshake: both ends prove they
 * hold the job's token, and no frame is delivered or sent before that
 * (frames sent earlier wait).  Afterwards every byte travels in
 * authenticated records, sealed in place in the caller's buffer (encrypted
 * or MAC only, as the handshake agreed).  A handshake that fails, or does
 * not finish within ORION_CONN_HANDSHAKE_S seconds, and a record that
 * fails its tag close the connection with the reason.
 *
 * A record that fails is answered with an alert (dsm/sec.h) before the
 * connection closes: the other end then knows that its record was
 * refused and why, where it would otherwise see a closed connection or a
 * failed write.  To let the alert arrive, the end that found the bad
 * record keeps reading (and dropping) what comes until the other end
 * closes, ORION_CONN_LINGER_S seconds at most, and only then calls
 * `closed`; no frame is delivered or sent meanwhile.  Either end's
 * `closed` can tell the two cases apart by `fault`.
 *
 * All functions run on the thread of the connection's loop.
 */
#ifndef ORION_DSM_NET_H
#define ORION_DSM_NET_H

#include <stdint.h>
#include <uv.h>

#include "dsm/sec.h"
#include "dsm/wire.h"
#include "util/buf.h"

typedef struct orion_conn orion_conn;

/* Seconds a connection has to complete the authentication handshake. */
#define ORION_CONN_HANDSHAKE_S 5

/* Seconds the end that refused a record waits for the other to close. */
#define ORION_CONN_LINGER_S 2

/* Why a connection closed, when a record decided it (orion_conn.fault). */
enum {
  ORION_CONN_FAULT_NONE = 0,
  ORION_CONN_FAULT_RECORD = 1, /* a record from the peer failed its tag;
                                  sec.why says which and how */
  ORION_CONN_FAULT_ALERTED = 2 /* the peer refused a record of ours;
                                  alert says why */
};

/* The smallest frame whose arrival measures orion_conn's rx_rate. */
#define ORION_CONN_RATE_MIN (512 * 1024)

typedef struct orion_conn_cbs {
  /* A frame arrived; f is valid during the call only (the callback may
   * take its payload with orion_wire_decoder_take on &c->dec). */
  void (*frame)(orion_conn *c, const orion_wire_frame *f);
  /* orion_conn_connect succeeded and the peer proved it holds the token
   * (optional). */
  void (*connected)(orion_conn *c);
  /* The connection is closed (reason says why); c is freed right after. */
  void (*closed)(orion_conn *c, const char *reason);
} orion_conn_cbs;

struct orion_conn {
  uv_tcp_t tcp;
  orion_wire_decoder dec;
  orion_sec sec;      /* the handshake, then the records' keys */
  int authed;         /* the handshake has completed */
  orion_buf early;    /* frames sent before that */
  uv_timer_t deadline; /* the handshake's */
  int handles;        /* open libuv handles (tcp, deadline); private */
  orion_conn_cbs cbs;
  void *data;         /* the owner's */
  char peer[80];      /* "host:port" of the other end, once known */
  int state;          /* private */
  char reason[512];   /* why it is closing */
  int fault;          /* ORION_CONN_FAULT_* */
  /* The peer's alert, printable ASCII only (others shown as '?'). */
  char alert[ORION_SEC_ALERT_MAX + 1];
  uint64_t bytes_in;  /* stream bytes read and written */
  uint64_t bytes_out;
  uint64_t reads, writes; /* the socket reads that brought bytes, the
                             writes (each one writev or queued request) */
  double last_rx;     /* orion_now() when the last frame arrived */
  /* The link's rate as the frames read show it: bytes per second of the
   * fastest frame of ORION_CONN_RATE_MIN bytes or more so far, from the
   * read that brought its first bytes to the one that completed it (0:
   * none yet).  rx_t0/rx_off0: private. */
  double rx_rate;
  double rx_t0;
  uint64_t rx_off0;
  uv_connect_t creq;
  int corked;         /* sends are held in `held` until orion_conn_flush */
  orion_buf held;     /* private */
  /* Private: what reads fill.  A MAC-only record that a read brought in
   * part is kept here ([rstart, rstart + rkeep)) and the next read lands
   * after it, so that records are opened where they lie, not copied
   * (orion_sec_record_want). */
  char *rbuf;
  size_t rcap, rstart, rkeep;
  unsigned rsmall; /* reads in a row that the small buffer would hold */
};

/* A connection on loop with a decoder in `role` (ORION_WIRE_ACCEPT or
 * ORION_WIRE_CONNECT), the job's token and our encryption policy (an
 * orion_sec_policy).  NULL on bad arguments or out of memory. */
orion_conn *orion_conn_new(uv_loop_t *loop, orion_wire_role role,
                           const char *token, int policy,
                           const orion_conn_cbs *cbs, void *data);

/* Accepts a pending connection of server into c and starts reading.
 * Returns 0 or a libuv error (c is then closed). */
int orion_conn_accept(uv_stream_t *server, orion_conn *c);

/* Connects c to host:port (a numeric address or a name, resolved now) and
 * starts reading once connected; a failure closes c with the reason.
 * Returns 0 or a negative code (resolution failed; c is then closed). */
int orion_conn_connect(orion_conn *c, const char *host, int port);

/* Binds c's local end to host (port 0) before orion_conn_connect, so that
 * the connection leaves from that address.  Returns 0 or a negative code
 * with msg set. */
int orion_conn_bind_local(orion_conn *c, const char *host, char *msg,
                          size_t msglen);

/* Queues the bytes of b (complete frames) for writing and takes them: b is
 * left empty.  Returns 0, or a negative code when c is closing (the bytes
 * are dropped). */
int orion_conn_send(orion_conn *c, orion_buf *b);

/* Encodes one frame of type with payload[0..len) and queues it. */
int orion_conn_send_frame(orion_conn *c, int type, const void *payload,
                          size_t len);

/* Frames of at most this many bytes are held while a connection is
 * corked; a larger one sends what is held, then itself (in order). */
#define ORION_CONN_HOLD_MAX (16 * 1024)

/* on != 0: hold small frames until orion_conn_flush; 0: send what is held
 * and stop holding.  The holder must flush before it waits for an answer
 * (dsm/cluster.c flushes after every turn of its loop). */
void orion_conn_cork(orion_conn *c, int on);

/* Sends the held frames now, as one write; 0, or an error after which the
 * connection is closing. */
int orion_conn_flush(orion_conn *c);

/* Starts closing c (idempotent); `closed` follows from the loop.  On a
 * connection waiting for its peer to take an alert, it ends the wait and
 * keeps the reason already given. */
void orion_conn_close(orion_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether c is closing, or waiting to close after an alert: it then
 * takes nothing to send. */
int orion_conn_closing(const orion_conn *c);

/* Binds and listens on host:port (port 0: any), filling *port_out with the
 * port bound.  Returns 0 or a negative libuv code with msg set. */
int orion_net_listen(uv_loop_t *loop, uv_tcp_t *server, const char *host,
                     int port, uv_connection_cb cb, int *port_out, char *msg,
                     size_t msglen);

/* Resolves host (numeric or name) and port into *out. */
int orion_net_resolve(const char *host, int port, struct sockaddr_storage *out,
                      char *msg, size_t msglen);

#endif
