/* t/relay: a man in the middle for the tamper tests (t/tamper.sh).
 *
 *   t/relay TARGET_PORT KIND DIR WHICH STATUS_FILE
 *
 * Listens on a free port of 127.0.0.1 (printed on stdout as "PORT\n") and
 * forwards every connection to 127.0.0.1:TARGET_PORT (or, given as @FILE,
 * the port in FILE, read when the first connection comes: an executor's
 * peer port, known only once it runs), cutting each
 * direction into the units dsm/sec.h puts on the wire: the handshake's
 * messages (up: CHALLENGE, PROOF; down: ANSWER), then records (u32 length,
 * body, 16-byte tag).  On the first connection it tampers once, in the
 * direction DIR ("up": connector to acceptor, executor to driver; "down":
 * the other way), with the record WHICH: a number (0 = the first record
 * after the handshake), or a frame type name ("LOADED"): the first record
 * in which a frame of that type starts, which the relay can see only when
 * the link is not encrypted (MAC only), as any eavesdropper could.
 * Handshake kinds (hs_*) ignore WHICH.  When it tampers it writes one line
 * to STATUS_FILE ("applied KIND up record 3 (LOADED)").  KIND "none" only
 * forwards.  Later connections (an executor trying again) pass untouched.
 * It runs until killed, or for 120 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dsm/sec.h"
#include "dsm/wire.h"
#include "t/loopsock.h"

#define MAXPAIRS 16
#define UNIT_MAX (ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD + 64)

static const char *const kinds[] = {
    "none",        "flip_len",   "flip_first", "flip_mid",  "flip_last",
    "flip_tag",    "zero_tag",   "zero_body",  "truncate",  "cut",
    "drop",        "dup",        "replay_old", "swap",      "inject_rand",
    "inject_frame", "len_plus",  "len_minus",  "splice_tag", "hs_nonce",
    "hs_policy",   "hs_mode",    "hs_answer",  "hs_proof",  "hs_cut",
    "hs_version",  NULL};

typedef struct dir {
  int from, to;          /* sockets */
  int up;                /* 1: client to server */
  unsigned char u[UNIT_MAX]; /* the unit being read */
  size_t have, want;     /* want 0: reading a record's head */
  int unit;              /* units forwarded so far */
  unsigned char prev[UNIT_MAX]; /* the last unit forwarded */
  size_t prev_len;
  unsigned char held[UNIT_MAX]; /* swap: the unit held back */
  size_t held_len;
  int holding;
  /* Plaintext frames inside the records (MAC only): bytes of the current
   * frame still to come, and a header being assembled. */
  uint64_t frame_left;
  unsigned char fh[ORION_WIRE_HEADER_LEN];
  size_t fh_have;
  int closed;
} dir;

typedef struct pair {
  dir d[2];
  int tamper; /* the first connection */
  int open;
} pair;

static const char *kind, *which, *status_path;
static int up_dir, done_tamper;

static int hs_units(int up) { return up ? 2 : 1; }
static size_t hs_len(int up, int unit) {
  return up ? (unit == 0 ? ORION_SEC_CHALLENGE_LEN : ORION_SEC_PROOF_LEN)
            : ORION_SEC_ANSWER_LEN;
}

static void send_all(int s, const void *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(s, (const char *)p + off, n - off, MSG_NOSIGNAL);
    if (w <= 0)
      return;
    off += (size_t)w;
  }
}

static void note(const char *what, int up, int rec, const char *type) {
  FILE *f = fopen(status_path, "w");
  if (f != NULL) {
    fprintf(f, "applied %s %s record %d%s%s%s\n", what, up ? "up" : "down",
            rec, type[0] ? " (" : "", type, type[0] ? ")" : "");
    fclose(f);
  }
  done_tamper = 1;
}

/* Frame types that start in the record body b[0..n) (MAC only): a
 * bitmask by type code. */
static uint64_t frame_starts(dir *d, const unsigned char *b, size_t n) {
  uint64_t seen = 0;
  size_t i = 0;
  while (i < n) {
    if (d->frame_left > 0) {
      size_t k = d->frame_left < n - i ? (size_t)d->frame_left : n - i;
      d->frame_left -= k;
      i += k;
      continue;
    }
    d->fh[d->fh_have++] = b[i++];
    if (d->fh_have == ORION_WIRE_HEADER_LEN) {
      uint32_t len = (uint32_t)d->fh[5] | (uint32_t)d->fh[6] << 8 |
                     (uint32_t)d->fh[7] << 16 | (uint32_t)d->fh[8] << 24;
      if (d->fh[3] < 64)
        seen |= (uint64_t)1 << d->fh[3];
      d->frame_left = (uint64_t)len + ORION_WIRE_TRAILER_LEN;
      d->fh_have = 0;
    }
  }
  return seen;
}

static int type_code(const char *name) {
  int t;
  for (t = 1; t < ORION_WIRE_TYPE_END; t++)
    if (strcmp(orion_wire_type_name(t), name) == 0)
      return t;
  return -1;
}

/* Whether this unit (record rec, whose frames started are `types`) is the
 * one to tamper with. */
static int chosen(int rec, uint64_t types) {
  char *end;
  long n = strtol(which, &end, 10);
  if (*end == '\0')
    return rec == n;
  n = type_code(which);
  return n > 0 && (types >> n & 1);
}

/* Forwards one complete unit of d, tampering when it is the chosen one;
 * returns -1 when the connection is to be cut. */
static int forward(pair *pr, dir *d) {
  unsigned char *u = d->u;
  size_t n = d->have;
  int hs = d->unit < hs_units(d->up), rec = d->unit - hs_units(d->up);
  uint64_t types = 0;
  int mine = pr->tamper && !done_tamper && d->up == up_dir;
  char tname[32] = "";
  if (!hs) {
    size_t len = n - ORION_SEC_RECORD_OVERHEAD;
    types = frame_starts(d, u + ORION_SEC_HEAD_LEN, len);
  }
  if (mine && strncmp(kind, "hs_", 3) == 0 && hs) {
    int k = 0;
    if (strcmp(kind, "hs_nonce") == 0 && d->up && d->unit == 0)
      u[20] ^= 0x04, k = 1;
    else if (strcmp(kind, "hs_policy") == 0 && d->up && d->unit == 0)
      u[4] = ORION_SEC_OFF, k = 1;
    else if (strcmp(kind, "hs_mode") == 0 && !d->up)
      u[5] ^= 1, k = 1;
    else if (strcmp(kind, "hs_answer") == 0 && !d->up)
      u[60] ^= 0x40, k = 1;
    else if (strcmp(kind, "hs_proof") == 0 && d->up && d->unit == 1)
      u[30] ^= 0x02, k = 1;
    else if (strcmp(kind, "hs_version") == 0)
      u[2] ^= 0x10, k = 1;
    else if (strcmp(kind, "hs_cut") == 0) {
      send_all(d->to, u, n / 2);
      note(kind, d->up, -1, "");
      return -1;
    }
    if (k)
      note(kind, d->up, -1, "");
  } else if (mine && strncmp(kind, "hs_", 3) != 0 && !hs &&
             strcmp(kind, "none") != 0 && chosen(rec, types)) {
    size_t len = n - ORION_SEC_RECORD_OVERHEAD;
    unsigned char extra[UNIT_MAX];
    int t;
    for (t = 1; t < 64; t++)
      if (types >> t & 1) {
        snprintf(tname, sizeof tname, "%s", orion_wire_type_name(t));
        break;
      }
    note(kind, d->up, rec, tname);
    if (strcmp(kind, "flip_len") == 0)
      u[0] ^= 0x01;
    else if (strcmp(kind, "flip_first") == 0)
      u[4] ^= 0x80;
    else if (strcmp(kind, "flip_mid") == 0)
      u[4 + len / 2] ^= 0x10;
    else if (strcmp(kind, "flip_last") == 0)
      u[4 + len - 1] ^= 0x01;
    else if (strcmp(kind, "flip_tag") == 0)
      u[n - 1] ^= 0x01;
    else if (strcmp(kind, "zero_tag") == 0)
      memset(u + n - ORION_SEC_TAG_LEN, 0, ORION_SEC_TAG_LEN);
    else if (strcmp(kind, "zero_body") == 0)
      memset(u + 4, 0, len);
    else if (strcmp(kind, "truncate") == 0) {
      send_all(d->to, u, n / 2);
      return -1;
    } else if (strcmp(kind, "cut") == 0) {
      return -1;
    } else if (strcmp(kind, "drop") == 0) {
      d->unit++;
      return 0;
    } else if (strcmp(kind, "dup") == 0) {
      send_all(d->to, u, n);
    } else if (strcmp(kind, "replay_old") == 0 && d->prev_len > 0) {
      send_all(d->to, d->prev, d->prev_len);
    } else if (strcmp(kind, "swap") == 0) {
      memcpy(d->held, u, n);
      d->held_len = n;
      d->holding = 1;
      d->unit++;
      return 0;
    } else if (strcmp(kind, "inject_rand") == 0) {
      size_t k;
      extra[0] = 100;
      extra[1] = extra[2] = extra[3] = 0;
      for (k = 4; k < 4 + 100 + ORION_SEC_TAG_LEN; k++)
        extra[k] = (unsigned char)rand();
      send_all(d->to, extra, 4 + 100 + ORION_SEC_TAG_LEN);
    } else if (strcmp(kind, "inject_frame") == 0) {
      /* An unsealed HEARTBEAT, as version 7 sent it. */
      static const unsigned char hb[9 + 28 + 4] = {
          'O', 'C', ORION_WIRE_VERSION, ORION_WIRE_HEARTBEAT, 0, 28, 0, 0, 0};
      send_all(d->to, hb, sizeof hb);
    } else if (strcmp(kind, "len_plus") == 0) {
      uint32_t l = (uint32_t)len + 1;
      memcpy(extra, u, 4 + len);
      extra[0] = (unsigned char)l, extra[1] = (unsigned char)(l >> 8);
      extra[2] = (unsigned char)(l >> 16), extra[3] = (unsigned char)(l >> 24);
      extra[4 + len] = 0x5a;
      memcpy(extra + 5 + len, u + 4 + len, ORION_SEC_TAG_LEN);
      send_all(d->to, extra, n + 1);
      d->prev_len = 0;
      d->unit++;
      return 0;
    } else if (strcmp(kind, "len_minus") == 0 && len > 1) {
      uint32_t l = (uint32_t)len - 1;
      u[0] = (unsigned char)l, u[1] = (unsigned char)(l >> 8);
      u[2] = (unsigned char)(l >> 16), u[3] = (unsigned char)(l >> 24);
      memmove(u + 4 + l, u + 4 + len, ORION_SEC_TAG_LEN);
      n--;
    } else if (strcmp(kind, "splice_tag") == 0 && d->prev_len > 0) {
      memcpy(u + n - ORION_SEC_TAG_LEN,
             d->prev + d->prev_len - ORION_SEC_TAG_LEN, ORION_SEC_TAG_LEN);
    }
  }
  send_all(d->to, u, n);
  if (d->holding) { /* swap: the held unit goes after this one */
    send_all(d->to, d->held, d->held_len);
    d->holding = 0;
  }
  memcpy(d->prev, u, n);
  d->prev_len = n;
  d->unit++;
  return 0;
}

/* Reads what is there on d->from; -1 once the pair is to close.  Kind
 * "none" forwards bytes as they come, whatever the protocol. */
static int pump(pair *pr, dir *d) {
  if (strcmp(kind, "none") == 0) {
    ssize_t got = recv(d->from, d->u, sizeof d->u, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return -1;
    if (got > 0)
      send_all(d->to, d->u, (size_t)got);
    return 0;
  }
  for (;;) {
    size_t need;
    ssize_t got;
    int hs = d->unit < hs_units(d->up);
    if (hs)
      need = hs_len(d->up, d->unit);
    else if (d->have < ORION_SEC_HEAD_LEN)
      need = ORION_SEC_HEAD_LEN;
    else {
      uint32_t l = (uint32_t)d->u[0] | (uint32_t)d->u[1] << 8 |
                   (uint32_t)d->u[2] << 16 | (uint32_t)d->u[3] << 24;
      l &= ~ORION_SEC_ALERT_FLAG; /* an alert is framed as a record */
      if (l > ORION_SEC_RECORD_MAX) /* not ours to judge: pass it on */
        l = ORION_SEC_RECORD_MAX;
      need = ORION_SEC_HEAD_LEN + l + ORION_SEC_TAG_LEN;
    }
    if (d->have == need) {
      if (forward(pr, d) != 0)
        return -1;
      d->have = 0;
      continue;
    }
    got = recv(d->from, d->u + d->have, need - d->have, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      if (d->have > 0) /* what came of a unit cut short */
        send_all(d->to, d->u, d->have);
      return -1;
    }
    if (got < 0)
      return 0;
    d->have += (size_t)got;
  }
}

/* TARGET_PORT, or the port in the file @FILE names (waiting up to 10 s
 * for it); -1 when there is none. */
static int target_port(const char *arg) {
  int i, port = -1;
  if (arg[0] != '@')
    return atoi(arg);
  for (i = 0; i < 100 && port <= 0; i++) {
    FILE *f = fopen(arg + 1, "r");
    if (f != NULL) {
      if (fscanf(f, "%d", &port) != 1)
        port = -1;
      fclose(f);
    }
    if (port <= 0)
      usleep(100000);
  }
  return port;
}

int main(int argc, char **argv) {
  pair pairs[MAXPAIRS];
  int ls, np = 0, target, i;
  time_t until = time(NULL) + 120;
  if (argc != 6) {
    fprintf(stderr, "usage: t/relay TARGET_PORT KIND DIR WHICH STATUS\n");
    return 2;
  }
  target = argv[1][0] == '@' ? 0 : atoi(argv[1]);
  kind = argv[2];
  up_dir = strcmp(argv[3], "up") == 0;
  which = argv[4];
  status_path = argv[5];
  for (i = 0; kinds[i] != NULL && strcmp(kinds[i], kind) != 0; i++)
    ;
  if (kinds[i] == NULL) {
    fprintf(stderr, "t/relay: unknown kind '%s'\n", kind);
    return 2;
  }
  srand((unsigned)getpid());
  if ((ls = tu_listen_loopback("t/relay")) < 0)
    return 1;
  memset(pairs, 0, sizeof pairs);
  while (time(NULL) < until) {
    struct pollfd pf[1 + 2 * MAXPAIRS];
    int n = 0;
    pf[n++] = (struct pollfd){ls, POLLIN, 0};
    for (i = 0; i < np; i++) {
      pf[n++] = (struct pollfd){pairs[i].open ? pairs[i].d[0].from : -1,
                                POLLIN, 0};
      pf[n++] = (struct pollfd){pairs[i].open ? pairs[i].d[1].from : -1,
                                POLLIN, 0};
    }
    if (poll(pf, (nfds_t)n, 200) <= 0)
      continue;
    if ((pf[0].revents & POLLIN) && np < MAXPAIRS) {
      int c = accept(ls, NULL, NULL), s;
      if (c >= 0 && target == 0)
        target = target_port(argv[1]);
      s = c >= 0 ? tu_connect_loopback(target) : -1;
      if (c >= 0 && s >= 0) {
        pair *pr = &pairs[np];
        memset(pr, 0, sizeof *pr);
        pr->tamper = np == 0;
        pr->open = 1;
        pr->d[0].from = c, pr->d[0].to = s, pr->d[0].up = 1;
        pr->d[1].from = s, pr->d[1].to = c, pr->d[1].up = 0;
        np++;
      } else if (c >= 0) {
        close(c);
      }
    }
    for (i = 0; i < np; i++) {
      int k;
      if (!pairs[i].open)
        continue;
      for (k = 0; k < 2; k++)
        if ((pf[1 + 2 * i + k].revents & (POLLIN | POLLHUP | POLLERR)) &&
            pump(&pairs[i], &pairs[i].d[k]) != 0) {
          close(pairs[i].d[0].from);
          close(pairs[i].d[1].from);
          pairs[i].open = 0;
          break;
        }
    }
  }
  return 0;
}
