/* t/mitm: a man in the middle that holds the job's token, for
 * t/badkeys.sh: a driver that passes the authentication but sends what it
 * should not (a compromised or broken driver, which no record tag can
 * catch: only the executor's checks of what it decodes).
 *
 *   t/mitm DRIVER_PORT TOKEN STATUS_FILE
 *
 * Listens on a free port of 127.0.0.1 (printed on stdout as "PORT\n").
 * For each executor that connects it completes dsm/sec.h's handshake as
 * the driver would, connects to 127.0.0.1:DRIVER_PORT as the executor
 * would, and forwards every frame both ways, opening each record and
 * sealing it again.  The first RUN_BLOCK that carries a sparse block's
 * elements gets its first element's first key set to 2^40 (outside any
 * array's dimension) and is re-encoded; it then writes one line to
 * STATUS_FILE ("applied RUN_BLOCK block 3: element 1's key 1099511627776").
 * It runs until killed, or for 120 s.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dsm/msg.h"
#include "dsm/sec.h"
#include "dsm/wire.h"
#include "t/loopsock.h"
#include "util/buf.h"

#define MAXPAIRS 16
#define BAD_KEY ((int64_t)1 << 40)

/* One direction of a pair: records from `from`, sealed again to `to`. */
typedef struct side {
  int from, to;
  orion_sec *in, *out;   /* the channel read from, the one written to */
  orion_wire_decoder dec; /* the frames inside */
  int down;               /* driver to executor */
} side;

typedef struct pair {
  orion_sec exec, drv; /* our end of each connection */
  side s[2];
  int open;
} pair;

static const char *token, *status_path;
static int tampered;

static int send_all(int s, const void *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(s, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    p = (const char *)p + w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads handshake bytes from s into sec until it completes, sending its
 * replies; 0 or -1.  A byte at a time: records may follow at once. */
static int handshake(int s, orion_sec *sec) {
  int rc = ORION_SEC_MORE;
  while (rc == ORION_SEC_MORE) {
    orion_buf out;
    unsigned char b;
    size_t used;
    if (recv(s, &b, 1, 0) != 1)
      return -1;
    orion_buf_init(&out);
    rc = orion_sec_handshake(sec, &b, 1, &used, &out);
    if (out.len > 0)
      send_all(s, out.data, out.len);
    orion_buf_free(&out);
  }
  if (rc != ORION_SEC_DONE)
    fprintf(stderr, "t/mitm: handshake failed: %s\n", sec->why);
  return rc == ORION_SEC_DONE ? 0 : -1;
}

/* Seals plaintext p[0..n) as records to d->to; 0 or -1. */
static int reseal(side *d, const char *p, size_t n) {
  unsigned char *rec = malloc(ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD);
  int rc = rec != NULL ? 0 : -1;
  while (rc == 0 && n > 0) {
    size_t k = n < ORION_SEC_RECORD_MAX ? n : ORION_SEC_RECORD_MAX;
    memcpy(rec + ORION_SEC_HEAD_LEN, p, k);
    rc = orion_sec_seal(d->out, rec + ORION_SEC_HEAD_LEN, k, rec,
                        rec + ORION_SEC_HEAD_LEN + k);
    if (rc == 0)
      rc = send_all(d->to, rec, k + ORION_SEC_RECORD_OVERHEAD);
    p += k;
    n -= k;
  }
  free(rec);
  return rc;
}

/* A RUN_BLOCK with sparse elements, the first element's first key made
 * out of range, framed into b; 0, or -1 when f is not one to change. */
static int bad_run_block(const orion_wire_frame *f, orion_buf *b) {
  orion_msg_run_block m;
  char *keys;
  int rc = -1;
  if (orion_msg_run_block_decode(f->payload, f->len, &m, NULL) != 0)
    return -1;
  if (m.has_elems && m.nelems > 0 && m.keys_len >= 8 &&
      (keys = malloc(m.keys_len)) != NULL) {
    int64_t k = BAD_KEY;
    FILE *st = fopen(status_path, "w");
    memcpy(keys, m.keys, m.keys_len);
    memcpy(keys, &k, sizeof k);
    m.keys = keys;
    rc = orion_msg_run_block_encode(b, &m) == 0 ? 0 : -1; /* a whole frame */
    if (st != NULL) {
      fprintf(st, "applied RUN_BLOCK block %lld: element 1's key %lld\n",
              (long long)m.block, (long long)k);
      fclose(st);
    }
    free(keys);
  }
  orion_msg_run_block_free(&m);
  return rc;
}

/* One frame across: as it came, or (once) changed; 0 or -1. */
static int pass_frame(side *d, const orion_wire_frame *f) {
  orion_buf b;
  int rc;
  orion_buf_init(&b);
  if (!(d->down && !tampered && f->type == ORION_WIRE_RUN_BLOCK &&
        bad_run_block(f, &b) == 0)) {
    b.len = 0;
    rc = orion_wire_encode(&b, f->type, f->payload, f->len);
  } else {
    tampered = 1;
    rc = 0;
  }
  if (rc == 0)
    rc = reseal(d, b.data, b.len);
  orion_buf_free(&b);
  return rc;
}

/* Reads what d->from has; 0, or -1 when the connection ends. */
static int pump(side *d) {
  unsigned char raw[65536];
  const unsigned char *p = raw;
  ssize_t got = recv(d->from, raw, sizeof raw, 0);
  size_t left = got > 0 ? (size_t)got : 0;
  if (got <= 0)
    return -1;
  while (left > 0) {
    const unsigned char *plain;
    size_t used, plen;
    int rc = orion_sec_open(d->in, p, left, &used, &plain, &plen);
    if (rc < 0)
      return -1;
    p += used;
    left -= used;
    while (rc == ORION_SEC_DONE && plen > 0) {
      size_t u;
      int fr = orion_wire_decoder_feed(&d->dec, plain, plen, &u);
      plain += u;
      plen -= u;
      if (fr < 0 || (fr == ORION_WIRE_FRAME_READY &&
                     pass_frame(d, orion_wire_decoder_frame(&d->dec)) != 0))
        return -1;
    }
  }
  return 0;
}

/* Both handshakes for a new executor connection c; 0 or -1. */
static int open_pair(pair *pr, int c, int port) {
  struct timeval tv = {10, 0};
  orion_buf out;
  int s = tu_connect_loopback(port);
  size_t tl = strlen(token);
  memset(pr, 0, sizeof *pr);
  if (s < 0)
    return -1;
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  orion_sec_init(&pr->drv, ORION_SEC_CONNECT, token, tl, ORION_SEC_AUTO);
  orion_sec_init(&pr->exec, ORION_SEC_ACCEPT, token, tl, ORION_SEC_AUTO);
  pr->drv.loopback = pr->exec.loopback = 1;
  orion_buf_init(&out);
  orion_sec_start(&pr->drv, &out);
  send_all(s, out.data, out.len);
  orion_buf_free(&out);
  if (handshake(c, &pr->exec) != 0 || handshake(s, &pr->drv) != 0) {
    close(s);
    return -1;
  }
  tv.tv_sec = 0;
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  pr->s[0] = (side){c, s, &pr->exec, &pr->drv, {0}, 0};
  pr->s[1] = (side){s, c, &pr->drv, &pr->exec, {0}, 1};
  orion_wire_decoder_init(&pr->s[0].dec, ORION_WIRE_ACCEPT); /* as the driver */
  orion_wire_decoder_init(&pr->s[1].dec, ORION_WIRE_CONNECT);
  /* As at both ends (dsm/net.c): the frames come out of opened records,
   * whose MAC covers them (frames sealed for a link carry no CRC). */
  orion_wire_decoder_mac_covered(&pr->s[0].dec);
  orion_wire_decoder_mac_covered(&pr->s[1].dec);
  pr->open = 1;
  return 0;
}

int main(int argc, char **argv) {
  static pair pairs[MAXPAIRS];
  int ls, np = 0, polled, port, i;
  time_t until = time(NULL) + 120;
  if (argc != 4) {
    fprintf(stderr, "usage: t/mitm DRIVER_PORT TOKEN STATUS_FILE\n");
    return 2;
  }
  port = atoi(argv[1]);
  token = argv[2];
  status_path = argv[3];
  if ((ls = tu_listen_loopback("t/mitm")) < 0)
    return 1;
  while (time(NULL) < until) {
    struct pollfd pf[1 + 2 * MAXPAIRS];
    int n = 0;
    pf[n++] = (struct pollfd){ls, POLLIN, 0};
    for (i = 0; i < np; i++) {
      pf[n++] = (struct pollfd){pairs[i].open ? pairs[i].s[0].from : -1,
                                POLLIN, 0};
      pf[n++] = (struct pollfd){pairs[i].open ? pairs[i].s[1].from : -1,
                                POLLIN, 0};
    }
    polled = np;
    if (poll(pf, (nfds_t)n, 200) <= 0)
      continue;
    if ((pf[0].revents & POLLIN) && np < MAXPAIRS) {
      int c = accept(ls, NULL, NULL);
      if (c >= 0 && open_pair(&pairs[np], c, port) == 0)
        np++;
      else if (c >= 0)
        close(c);
    }
    for (i = 0; i < polled; i++) {
      int k;
      for (k = 0; k < 2 && pairs[i].open; k++)
        if ((pf[1 + 2 * i + k].revents & (POLLIN | POLLHUP | POLLERR)) &&
            pump(&pairs[i].s[k]) != 0) {
          close(pairs[i].s[0].from);
          close(pairs[i].s[1].from);
          pairs[i].open = 0;
        }
    }
  }
  return 0;
}
