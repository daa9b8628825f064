/* Tests' blocking side of dsm/sec.h on a plain socket: a fake executor or
 * a hostile client connects, runs the handshake, and sends and reads
 * plaintext through records.  tu_sec_of[fd] finds a socket's channel, so
 * helpers written for plain sockets (send_buf, recv_all) go through it
 * once tu_sec_connect has run.  Header-only: each test includes it once.
 */
#ifndef ORION_T_SECSOCK_H
#define ORION_T_SECSOCK_H

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dsm/sec.h"
#include "util/buf.h"

typedef struct tu_sec {
  orion_sec s;
  const unsigned char *plain; /* the record being read */
  size_t plain_len, plain_off;
  unsigned char raw[65536]; /* bytes read, not yet opened */
  size_t raw_len, raw_off;
} tu_sec;

#define TU_SEC_FDS 1024
static tu_sec *tu_sec_of[TU_SEC_FDS];

static inline int tu_raw_send(int fd, const void *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    off += (size_t)w;
  }
  return 0;
}

/* Reads more raw bytes into t->raw; 0, or -1 at the end or on an error. */
static inline int tu_sec_fill(int fd, tu_sec *t) {
  ssize_t got;
  t->raw_off = 0;
  do
    got = recv(fd, t->raw, sizeof t->raw, 0);
  while (got < 0 && errno == EINTR);
  t->raw_len = got > 0 ? (size_t)got : 0;
  return got > 0 ? 0 : -1;
}

/* The connector's handshake with the job's token and policy; 0, or a
 * negative code with t->s.why set ("" when the peer just hung up). */
static inline int tu_sec_connect(int fd, tu_sec *t, const char *token, int policy) {
  orion_buf out;
  int rc = ORION_SEC_MORE;
  memset(t, 0, sizeof *t);
  if (orion_sec_init(&t->s, ORION_SEC_CONNECT, token, strlen(token),
                     (orion_sec_policy)policy) != 0)
    return -EINVAL;
  orion_buf_init(&out);
  orion_sec_start(&t->s, &out);
  tu_raw_send(fd, out.data, out.len);
  out.len = 0;
  while (rc == ORION_SEC_MORE) {
    size_t used;
    if (t->raw_off == t->raw_len && tu_sec_fill(fd, t) != 0) {
      rc = -EPIPE;
      break;
    }
    rc = orion_sec_handshake(&t->s, t->raw + t->raw_off,
                             t->raw_len - t->raw_off, &used, &out);
    t->raw_off += used;
  }
  if (out.len > 0)
    tu_raw_send(fd, out.data, out.len);
  orion_buf_free(&out);
  if (rc == ORION_SEC_DONE && fd >= 0 && fd < TU_SEC_FDS)
    tu_sec_of[fd] = t;
  return rc == ORION_SEC_DONE ? 0 : rc;
}

/* Sends p[0..n) sealed (copied first); 0 or -1. */
static inline int tu_sec_send(int fd, tu_sec *t, const void *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    size_t k = n - off < ORION_SEC_RECORD_MAX ? n - off : ORION_SEC_RECORD_MAX;
    unsigned char *rec = malloc(k + ORION_SEC_RECORD_OVERHEAD);
    int rc;
    if (rec == NULL)
      return -1;
    memcpy(rec + ORION_SEC_HEAD_LEN, (const char *)p + off, k);
    rc = orion_sec_seal(&t->s, rec + ORION_SEC_HEAD_LEN, k, rec,
                        rec + ORION_SEC_HEAD_LEN + k);
    if (rc == 0)
      rc = tu_raw_send(fd, rec, k + ORION_SEC_RECORD_OVERHEAD);
    free(rec);
    if (rc != 0)
      return -1;
    off += k;
  }
  return 0;
}

/* Reads exactly n plaintext bytes; 0, or -1 (the end, an error, or a
 * record that failed: t->s.why). */
static inline int tu_sec_recv_all(int fd, tu_sec *t, void *p, size_t n) {
  unsigned char *dst = p;
  while (n > 0) {
    if (t->plain_off < t->plain_len) {
      size_t k = t->plain_len - t->plain_off < n ? t->plain_len - t->plain_off
                                                 : n;
      memcpy(dst, t->plain + t->plain_off, k);
      t->plain_off += k;
      dst += k;
      n -= k;
      continue;
    }
    for (;;) {
      size_t used;
      int rc;
      if (t->raw_off == t->raw_len && tu_sec_fill(fd, t) != 0)
        return -1;
      rc = orion_sec_open(&t->s, t->raw + t->raw_off, t->raw_len - t->raw_off,
                          &used, &t->plain, &t->plain_len);
      t->raw_off += used;
      if (rc < 0)
        return -1;
      if (rc == ORION_SEC_DONE) {
        t->plain_off = 0;
        break;
      }
    }
  }
  return 0;
}

/* What a hostile client that does not hold the token but follows the
 * protocol sends as its PROOF: dsm/sec.h's construction under the key of
 * its own (wrong) token, computed here from the documentation. */
static inline void tu_sec_forge_proof(const char *token, const unsigned char *challenge,
                               const unsigned char *answer,
                               unsigned char out[ORION_SEC_PROOF_LEN]) {
  static const unsigned char label_key[] = "orion-c job key";
  static const unsigned char label_proof[] = "proof";
  unsigned char k[32];
  crypto_generichash_state h;
  crypto_generichash_init(&h, NULL, 0, sizeof k);
  crypto_generichash_update(&h, label_key, sizeof label_key);
  crypto_generichash_update(&h, (const unsigned char *)token, strlen(token));
  crypto_generichash_final(&h, k, sizeof k);
  memcpy(out, answer, 8);
  out[3] = ORION_SEC_KIND_PROOF;
  out[4] = out[5] = out[6] = out[7] = 0;
  crypto_generichash_init(&h, k, sizeof k, 32);
  crypto_generichash_update(&h, label_proof, sizeof label_proof);
  crypto_generichash_update(&h, challenge, ORION_SEC_CHALLENGE_LEN);
  crypto_generichash_update(&h, answer, ORION_SEC_ANSWER_LEN);
  crypto_generichash_final(&h, out + 8, 32);
}

#endif
