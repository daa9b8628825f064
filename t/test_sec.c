/* dsm/sec.h: the handshake and the records, in memory.
 *
 * Two ends with the same token agree on keys and the mode; records go
 * through in both modes, a large buffer as many records; a record with any
 * one bit changed, replayed, reordered, dropped or from the other
 * direction is refused; ends with different tokens never complete (each
 * side's message says so); a downgrade of the mode or policy on the way is
 * found; another wire version and bytes that are no handshake are named.
 * The token never appears in what an end sends.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "dsm/sec.h"
#include "dsm/wire.h"
#include "t/secsock.h"
#include "util/buf.h"
#include "util/error.h"

#define TOKEN "7f3a9c1e5d2b48a6b0c4e8f1a3d5c7e9"

/* Set: the connector says its CPU has no AES (ChaCha20-Poly1305 then). */
static int no_aes;

typedef struct ends {
  orion_sec c, a;
  orion_buf wire_up, wire_down; /* everything each side sent */
} ends;

/* Runs the handshake between c (connector) and a (acceptor); returns
 * the acceptor's result (ORION_SEC_DONE when both completed). */
static int handshake(ends *e, const char *tok_c, const char *tok_a, int pol_c,
                     int pol_a, int loopback) {
  orion_buf up, down;
  size_t used;
  int rc;
  memset(e, 0, sizeof *e);
  orion_buf_init(&e->wire_up);
  orion_buf_init(&e->wire_down);
  cr_assert_eq(orion_sec_init(&e->c, ORION_SEC_CONNECT, tok_c, strlen(tok_c),
                              (orion_sec_policy)pol_c),
               0);
  cr_assert_eq(orion_sec_init(&e->a, ORION_SEC_ACCEPT, tok_a, strlen(tok_a),
                              (orion_sec_policy)pol_a),
               0);
  e->a.loopback = e->c.loopback = loopback;
  if (no_aes)
    e->c.aes = 0;
  orion_buf_init(&up);
  orion_buf_init(&down);
  orion_sec_start(&e->c, &up);
  cr_assert_eq(up.len, ORION_SEC_CHALLENGE_LEN);
  orion_buf_append(&e->wire_up, up.data, up.len);
  rc = orion_sec_handshake(&e->a, up.data, up.len, &used, &down);
  cr_assert_eq(rc, ORION_SEC_MORE, "%s", e->a.why);
  cr_assert_eq(used, up.len);
  cr_assert_eq(down.len, ORION_SEC_ANSWER_LEN);
  orion_buf_append(&e->wire_down, down.data, down.len);
  up.len = 0;
  rc = orion_sec_handshake(&e->c, down.data, down.len, &used, &up);
  if (rc != ORION_SEC_DONE) {
    orion_buf_free(&up);
    orion_buf_free(&down);
    return rc;
  }
  cr_assert_eq(up.len, ORION_SEC_PROOF_LEN);
  orion_buf_append(&e->wire_up, up.data, up.len);
  rc = orion_sec_handshake(&e->a, up.data, up.len, &used, &down);
  orion_buf_free(&up);
  orion_buf_free(&down);
  return rc;
}

/* The handshake in mode m of four: MAC only (m even) or encrypted (odd),
 * each with AES-GCM where the CPU has it (m < 2) and ChaCha20-Poly1305. */
static void handshake_mode(ends *e, int m, int loopback) {
  no_aes = m / 2;
  cr_assert_eq(handshake(e, TOKEN, TOKEN, m % 2 ? ORION_SEC_ON : ORION_SEC_OFF,
                         ORION_SEC_AUTO, loopback),
               ORION_SEC_DONE);
}

static void ends_free(ends *e) {
  orion_sec_free(&e->c);
  orion_sec_free(&e->a);
  orion_buf_free(&e->wire_up);
  orion_buf_free(&e->wire_down);
}

/* Seals msg[0..n) from s as one record into out (head, body, tag). */
static void seal_into(orion_sec *s, const void *msg, size_t n,
                      orion_buf *out) {
  size_t at = out->len;
  orion_buf_append(out, "\0\0\0\0", 4);
  orion_buf_append(out, msg, n);
  orion_buf_append(out, "0123456789abcdef", 16);
  cr_assert_eq(orion_sec_seal(s, out->data + at + 4, n,
                              (unsigned char *)out->data + at,
                              (unsigned char *)out->data + at + 4 + n),
               0, "%s", s->why);
}

/* Opens every record in in[0..n) with s, appending the plaintext to out;
 * returns the last result. */
static int open_all(orion_sec *s, const void *in, size_t n, orion_buf *out) {
  const unsigned char *p = in;
  int rc = ORION_SEC_MORE;
  while (n > 0) {
    const unsigned char *plain;
    size_t used, plen;
    rc = orion_sec_open(s, p, n, &used, &plain, &plen);
    if (rc < 0)
      return rc;
    if (rc == ORION_SEC_DONE)
      orion_buf_append(out, plain, plen);
    p += used;
    n -= used;
  }
  return rc;
}

Test(sec, both_ends_agree_and_records_go_through_in_both_modes) {
  static const int modes[][4] = {/* policy c, policy a, loopback, encrypt */
                                 {ORION_SEC_AUTO, ORION_SEC_AUTO, 1, 0},
                                 {ORION_SEC_AUTO, ORION_SEC_AUTO, 0, 1},
                                 {ORION_SEC_OFF, ORION_SEC_AUTO, 0, 0},
                                 {ORION_SEC_AUTO, ORION_SEC_OFF, 0, 0},
                                 {ORION_SEC_ON, ORION_SEC_OFF, 1, 1},
                                 {ORION_SEC_OFF, ORION_SEC_ON, 0, 1}};
  size_t m;
  for (m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    ends e;
    orion_buf w, got;
    static char big[200000];
    size_t i;
    no_aes = (int)(m % 2); /* both AEADs (AES-GCM where the CPU has it) */
    cr_assert_eq(handshake(&e, TOKEN, TOKEN, modes[m][0], modes[m][1],
                           modes[m][2]),
                 ORION_SEC_DONE, "%s", e.a.why);
    cr_assert_eq(e.a.cipher, !no_aes && crypto_aead_aes256gcm_is_available());
    cr_assert_eq(e.c.cipher, e.a.cipher);
    cr_assert_eq(e.a.encrypt, modes[m][3], "case %zu", m);
    cr_assert_eq(e.c.encrypt, modes[m][3], "case %zu", m);
    cr_assert_eq(e.c.peer_policy, modes[m][1]);
    cr_assert_eq(e.a.peer_policy, modes[m][0]);
    orion_buf_init(&w);
    orion_buf_init(&got);
    for (i = 0; i < sizeof big; i++)
      big[i] = (char)(i * 7 + m);
    /* Up: a small record and a big buffer cut into records. */
    seal_into(&e.c, "hello", 5, &w);
    for (i = 0; i < sizeof big; i += ORION_SEC_RECORD_MAX) {
      size_t k = sizeof big - i < ORION_SEC_RECORD_MAX ? sizeof big - i
                                                        : ORION_SEC_RECORD_MAX;
      seal_into(&e.c, big + i, k, &w);
    }
    cr_assert_eq(orion_sec_records(sizeof big), 4);
    /* In encrypted mode the bytes on the wire are not the plaintext. */
    cr_assert_eq(memmem(w.data, w.len, big + 1000, 64) == NULL,
                 modes[m][3] == 1, "case %zu", m);
    cr_assert_eq(open_all(&e.a, w.data, w.len, &got), ORION_SEC_DONE, "%s",
                 e.a.why);
    cr_assert_eq(got.len, 5 + sizeof big);
    cr_assert(memcmp(got.data, "hello", 5) == 0);
    cr_assert(memcmp(got.data + 5, big, sizeof big) == 0);
    /* Down, fed one byte at a time. */
    w.len = got.len = 0;
    seal_into(&e.a, "welcome", 7, &w);
    for (i = 0; i < w.len; i++)
      cr_assert_geq(open_all(&e.c, w.data + i, 1, &got), 0, "%s", e.c.why);
    cr_assert(got.len == 7 && memcmp(got.data, "welcome", 7) == 0);
    /* The token is nowhere in what either side sent. */
    cr_assert_null(memmem(e.wire_up.data, e.wire_up.len, TOKEN, 8));
    cr_assert_null(memmem(e.wire_down.data, e.wire_down.len, TOKEN, 8));
    orion_buf_free(&w);
    orion_buf_free(&got);
    ends_free(&e);
  }
}

/* Every single-bit change anywhere in a record, a replay, a swap, a drop,
 * a record sent back the way it came, and an injected record made with a
 * guessed key are refused, in both modes. */
Test(sec, every_changed_record_is_refused) {
  int enc;
  for (enc = 0; enc < 4; enc++) { /* MAC, encrypted; each with both AEADs */
    ends e;
    orion_buf r0, r1, got;
    size_t bit;
    orion_sec saved;
    handshake_mode(&e, enc, 1);
    orion_buf_init(&r0);
    orion_buf_init(&r1);
    orion_buf_init(&got);
    seal_into(&e.c, "LOADED 17 elements", 18, &r0);
    seal_into(&e.c, "BLOCK_DONE", 10, &r1);
    saved = e.a; /* the receiver before any record (same buffer) */
    for (bit = 0; bit < r0.len * 8; bit++) {
      e.a = saved;
      r0.data[bit / 8] ^= (char)(1 << (bit % 8));
      /* Refused, or (a longer length) waiting for bytes that would then
       * fail: never a plaintext. */
      cr_assert_neq(open_all(&e.a, r0.data, r0.len, &got), ORION_SEC_DONE,
                    "bit %zu of %zu accepted (mode %d)", bit, r0.len * 8, enc);
      r0.data[bit / 8] ^= (char)(1 << (bit % 8));
      cr_assert_eq(got.len, 0);
    }
    e.a = saved; /* swapped */
    cr_assert_lt(open_all(&e.a, r1.data, r1.len, &got), 0);
    cr_assert(strstr(e.a.why, "record 0 (10 bytes) failed authentication") !=
              NULL, "%s", e.a.why);
    e.a = saved; /* replayed */
    cr_assert_eq(open_all(&e.a, r0.data, r0.len, &got), ORION_SEC_DONE);
    cr_assert_lt(open_all(&e.a, r0.data, r0.len, &got), 0);
    e.a = saved; /* sent back to its sender */
    cr_assert_lt(open_all(&e.c, r0.data, r0.len, &got), 0);
    e.a = saved; /* a length over the limit */
    {
      unsigned char head[4] = {0, 0, 2, 0};
      cr_assert_eq(open_all(&e.a, head, 4, &got), -EBADMSG);
      cr_assert(strstr(e.a.why, "declares 131072 bytes") != NULL, "%s",
                e.a.why);
    }
    orion_buf_free(&r0);
    orion_buf_free(&r1);
    orion_buf_free(&got);
    saved.rec = NULL; /* freed with e.a */
    ends_free(&e);
  }
}

/* issue 32: the end that refuses a record tells the other in an alert,
 * which opens as ORION_SEC_ALERT with the reason; an alert cannot pass for
 * a record nor a record for an alert (the flag is covered by the tag),
 * nothing opens after an alert, and only one is sealed. */
Test(sec, an_alert_says_why_a_record_was_refused) {
  int enc;
  for (enc = 0; enc < 4; enc++) { /* MAC, encrypted; each with both AEADs */
    ends e;
    orion_buf r0, got;
    orion_sec before;
    unsigned char al[ORION_SEC_ALERT_MAX + ORION_SEC_RECORD_OVERHEAD];
    const unsigned char *plain;
    size_t n, used, plen;
    char why[sizeof e.a.why];
    handshake_mode(&e, enc, 1);
    orion_buf_init(&r0);
    orion_buf_init(&got);
    /* A record of the acceptor's with the flag set fails as an alert;
     * as it was sent, it opens. */
    seal_into(&e.a, "WELCOME", 7, &r0);
    before = e.c;
    r0.data[3] ^= (char)0x80;
    cr_assert_eq(open_all(&e.c, r0.data, r0.len, &got), -EBADMSG);
    cr_assert_eq(got.len, 0);
    r0.data[3] ^= (char)0x80;
    e.c = before;
    cr_assert_eq(open_all(&e.c, r0.data, r0.len, &got), ORION_SEC_DONE);
    /* A record of the connector's changed on the way. */
    r0.len = 0;
    seal_into(&e.c, "HELLO", 5, &r0);
    r0.data[6] ^= 1;
    cr_assert_eq(open_all(&e.a, r0.data, r0.len, &got), -EBADMSG);
    snprintf(why, sizeof why, "%s", e.a.why);
    cr_assert_str_eq(why, "record 0 (5 bytes) failed authentication: "
                          "changed, replayed, reordered or injected on the "
                          "way");
    /* The acceptor answers on its own direction, which still works. */
    n = orion_sec_alert(&e.a, why, al);
    cr_assert_eq(n, ORION_SEC_HEAD_LEN + strlen(why) + ORION_SEC_TAG_LEN);
    cr_assert_eq(al[3] & 0x80, 0x80, "the flag is in the head");
    {
      unsigned char again[sizeof al];
      cr_assert_eq(orion_sec_alert(&e.a, why, again), 0, "only one alert");
    }
    before = e.c;
    /* With the flag cleared it is a record whose tag fails. */
    al[3] ^= 0x80;
    cr_assert_eq(orion_sec_open(&e.c, al, n, &used, &plain, &plen),
                 -EBADMSG);
    al[3] ^= 0x80;
    e.c = before;
    cr_assert_eq(orion_sec_open(&e.c, al, n, &used, &plain, &plen),
                 ORION_SEC_ALERT, "%s", e.c.why);
    cr_assert_eq(used, n);
    cr_assert_eq(plen, strlen(why));
    cr_assert(memcmp(plain, why, plen) == 0);
    /* Nothing opens after it. */
    cr_assert_lt(orion_sec_open(&e.c, al, n, &used, &plain, &plen), 0);
    orion_buf_free(&r0);
    orion_buf_free(&got);
    ends_free(&e);
  }
  {
    orion_sec s; /* before the handshake there is nothing to seal with */
    unsigned char al[ORION_SEC_ALERT_MAX + ORION_SEC_RECORD_OVERHEAD];
    cr_assert_eq(orion_sec_init(&s, ORION_SEC_CONNECT, TOKEN, strlen(TOKEN),
                                ORION_SEC_AUTO),
                 0);
    cr_assert_eq(orion_sec_alert(&s, "x", al), 0);
    orion_sec_free(&s);
  }
}

Test(sec, different_tokens_never_complete) {
  ends e;
  int rc = handshake(&e, TOKEN, "another job's token, 32 chars...", 0, 0, 1);
  cr_assert_eq(rc, -EACCES);
  cr_assert_str_eq(e.c.why,
                   "authentication failed: the peer that answered does not "
                   "hold this end's token (a wrong token on one side, or not "
                   "this job's driver or executor)");
  ends_free(&e);
  /* A connector that sends a PROOF anyway, made with its own token. */
  {
    orion_sec a;
    orion_buf up, down;
    unsigned char proof[ORION_SEC_PROOF_LEN];
    size_t used;
    static const char wrong[] = "0123456789abcdef0123456789abcdef";
    orion_sec c;
    orion_buf_init(&up);
    orion_buf_init(&down);
    cr_assert_eq(orion_sec_init(&a, ORION_SEC_ACCEPT, TOKEN, strlen(TOKEN), 0),
                 0);
    cr_assert_eq(orion_sec_init(&c, ORION_SEC_CONNECT, wrong, strlen(wrong),
                                0),
                 0);
    orion_sec_start(&c, &up);
    cr_assert_eq(orion_sec_handshake(&a, up.data, up.len, &used, &down),
                 ORION_SEC_MORE);
    tu_sec_forge_proof(wrong, c.challenge, (unsigned char *)down.data, proof);
    cr_assert_eq(orion_sec_handshake(&a, proof, sizeof proof, &used, &down),
                 -EACCES);
    cr_assert_str_eq(a.why, "authentication failed: the peer does not hold "
                            "the job's token (a wrong token, or not one of "
                            "this job's executors)");
    /* The same construction with the right token passes: the tests'
     * forger follows dsm/sec.h's description. */
    orion_sec_free(&a);
    cr_assert_eq(orion_sec_init(&a, ORION_SEC_ACCEPT, wrong, strlen(wrong), 0),
                 0);
    down.len = 0;
    cr_assert_eq(orion_sec_handshake(&a, up.data, up.len, &used, &down),
                 ORION_SEC_MORE);
    tu_sec_forge_proof(wrong, c.challenge, (unsigned char *)down.data, proof);
    cr_assert_eq(orion_sec_handshake(&a, proof, sizeof proof, &used, &down),
                 ORION_SEC_DONE, "%s", a.why);
    orion_sec_free(&a);
    orion_sec_free(&c);
    orion_buf_free(&up);
    orion_buf_free(&down);
  }
}

/* Turning encryption off on the way (the CHALLENGE's policy, the
 * ANSWER's mode) breaks the proofs. */
Test(sec, downgrades_on_the_way_are_found) {
  int which;
  for (which = 0; which < 2; which++) {
    orion_sec c, a;
    orion_buf up, down;
    size_t used;
    orion_buf_init(&up);
    orion_buf_init(&down);
    cr_assert_eq(orion_sec_init(&c, ORION_SEC_CONNECT, TOKEN, strlen(TOKEN),
                                ORION_SEC_AUTO),
                 0);
    cr_assert_eq(orion_sec_init(&a, ORION_SEC_ACCEPT, TOKEN, strlen(TOKEN),
                                ORION_SEC_AUTO),
                 0);
    orion_sec_start(&c, &up);
    if (which == 0)
      up.data[4] = ORION_SEC_OFF; /* the connector "asked" for no encryption */
    cr_assert_eq(orion_sec_handshake(&a, up.data, up.len, &used, &down),
                 ORION_SEC_MORE);
    if (which == 1)
      down.data[5] ^= 1; /* the mode byte */
    up.len = 0;
    cr_assert_eq(orion_sec_handshake(&c, down.data, down.len, &used, &up),
                 -EACCES, "downgrade %d passed", which);
    orion_sec_free(&c);
    orion_sec_free(&a);
    orion_buf_free(&up);
    orion_buf_free(&down);
  }
}

Test(sec, no_handshake_and_other_versions_are_named) {
  orion_sec a;
  orion_buf out;
  size_t used;
  unsigned char v7[ORION_SEC_CHALLENGE_LEN] = {'O', 'C', 7, 1};
  orion_buf_init(&out);
  cr_assert_eq(orion_sec_init(&a, ORION_SEC_ACCEPT, TOKEN, strlen(TOKEN), 0),
               0);
  cr_assert_eq(orion_sec_handshake(&a, "GET / HTTP/1.1\r\n", 16, &used, &out),
               -EPROTO);
  cr_assert_str_eq(a.why, "no authentication handshake (expected its first "
                          "message): not an Orion-C peer");
  cr_assert_eq(used, 16);
  cr_assert_eq(out.len, 0);
  orion_sec_free(&a);
  cr_assert_eq(orion_sec_init(&a, ORION_SEC_ACCEPT, TOKEN, strlen(TOKEN), 0),
               0);
  cr_assert_eq(orion_sec_handshake(&a, v7, sizeof v7, &used, &out),
               ORION_EVERSION);
  {
    char want[80];
    snprintf(want, sizeof want,
             "the peer speaks wire version 7, this build version %d",
             ORION_WIRE_VERSION);
    cr_assert_str_eq(a.why, want);
  }
  cr_assert_eq(orion_sec_handshake(&a, v7, sizeof v7, &used, &out), -EPROTO);
  cr_assert_eq(used, 0);
  orion_sec_free(&a);
  orion_buf_free(&out);
}

/* The records are the standard AEADs (OpenSSL seals them, dsm/sec.h's
 * format): libsodium's own AES-256-GCM and ChaCha20-Poly1305 IETF open what
 * an end seals, under the direction's key and the nonce 0^4 || LE64(seq),
 * and an end opens what libsodium seals; in both modes. */
Test(sec, records_are_the_standard_aeads) {
  int m;
  for (m = 0; m < 4; m++) { /* MAC, encrypted; each with both AEADs */
    ends e;
    unsigned char msg[3000], rec[4 + sizeof msg + 16], nonce[12] = {0};
    unsigned char back[sizeof msg], tag[16], none[1];
    orion_buf got;
    size_t i, n = sizeof msg - 77;
    int rc, aes, enc = m % 2;
    no_aes = m / 2;
    cr_assert_eq(handshake(&e, TOKEN, TOKEN, enc ? ORION_SEC_ON : ORION_SEC_OFF,
                           ORION_SEC_AUTO, 0),
                 ORION_SEC_DONE, "%s", e.a.why);
    aes = e.c.cipher;
    for (i = 0; i < sizeof msg; i++)
      msg[i] = (unsigned char)(i * 13 + 5);
    /* Record 0 and 1 from the connector: libsodium opens record 1. */
    orion_buf_init(&got);
    seal_into(&e.c, msg, 10, &got);
    memcpy(rec + 4, msg, n);
    cr_assert_eq(orion_sec_seal(&e.c, rec + 4, n, rec, rec + 4 + n), 0);
    cr_assert_eq(rec[0] | rec[1] << 8 | rec[2] << 16 | rec[3] << 24, (int)n);
    nonce[4] = 1;
    if (aes && enc)
      rc = crypto_aead_aes256gcm_decrypt_detached(
          back, NULL, rec + 4, n, rec + 4 + n, NULL, 0, nonce, e.c.tx_key);
    else if (aes)
      rc = crypto_aead_aes256gcm_decrypt_detached(
          none, NULL, none, 0, rec + 4 + n, rec + 4, n, nonce, e.c.tx_key);
    else if (enc)
      rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
          back, NULL, rec + 4, n, rec + 4 + n, NULL, 0, nonce, e.c.tx_key);
    else
      rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
          none, NULL, none, 0, rec + 4 + n, rec + 4, n, nonce, e.c.tx_key);
    cr_assert_eq(rc, 0, "libsodium refused a record (mode %d)", m);
    cr_assert(memcmp(enc ? back : rec + 4, msg, n) == 0);
    /* Record 0 the other way, sealed by libsodium with the acceptor's
     * key: the connector opens it. */
    nonce[4] = 0;
    memcpy(back, msg, n);
    if (aes && enc)
      crypto_aead_aes256gcm_encrypt_detached(back, tag, NULL, back, n, NULL,
                                             0, NULL, nonce, e.a.tx_key);
    else if (aes)
      crypto_aead_aes256gcm_encrypt_detached(none, tag, NULL, none, 0, back,
                                             n, NULL, nonce, e.a.tx_key);
    else if (enc)
      crypto_aead_chacha20poly1305_ietf_encrypt_detached(
          back, tag, NULL, back, n, NULL, 0, NULL, nonce, e.a.tx_key);
    else
      crypto_aead_chacha20poly1305_ietf_encrypt_detached(
          none, tag, NULL, none, 0, back, n, NULL, nonce, e.a.tx_key);
    rec[0] = (unsigned char)n;
    rec[1] = (unsigned char)(n >> 8);
    rec[2] = rec[3] = 0;
    memcpy(rec + 4, back, n);
    memcpy(rec + 4 + n, tag, 16);
    got.len = 0;
    cr_assert_eq(open_all(&e.c, rec, n + 20, &got), ORION_SEC_DONE, "%s",
                 e.c.why);
    cr_assert(got.len == n && memcmp(got.data, msg, n) == 0);
    orion_buf_free(&got);
    ends_free(&e);
  }
}

/* A record is opened as its bytes come, in pieces of any size (an
 * encrypted one is decrypted piece by piece): the plaintext is the same
 * whatever the cut, and a record with one byte changed anywhere gives no
 * plaintext, also when the change is in a piece before the last. */
Test(sec, records_open_in_pieces_of_any_size) {
  static const size_t cuts[] = {1, 3, 16, 17, 1000, 4096, 65535, 65556, 70000};
  static unsigned char big[150000];
  int m;
  size_t i;
  for (i = 0; i < sizeof big; i++)
    big[i] = (unsigned char)(i * 31 + (i >> 9));
  for (m = 0; m < 4; m++) {
    ends e;
    orion_buf w, got;
    size_t c, off, flip;
    orion_sec saved;
    handshake_mode(&e, m, 0);
    orion_buf_init(&w);
    orion_buf_init(&got);
    for (i = 0; i < sizeof big; i += ORION_SEC_RECORD_MAX)
      seal_into(&e.c, big + i,
                sizeof big - i < ORION_SEC_RECORD_MAX ? sizeof big - i
                                                       : ORION_SEC_RECORD_MAX,
                &w);
    saved = e.a;
    for (c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
      e.a = saved;
      got.len = 0;
      for (off = 0; off < w.len; off += cuts[c]) {
        size_t k = w.len - off < cuts[c] ? w.len - off : cuts[c];
        cr_assert_geq(open_all(&e.a, w.data + off, k, &got), 0,
                      "cut %zu at %zu: %s", cuts[c], off, e.a.why);
      }
      cr_assert_eq(got.len, sizeof big, "cut %zu", cuts[c]);
      cr_assert(memcmp(got.data, big, sizeof big) == 0, "cut %zu", cuts[c]);
    }
    /* One byte changed in the second record's body, fed in 1000-byte
     * pieces: the first record opens, the second never does. */
    for (flip = 4 + ORION_SEC_RECORD_MAX + 16 + 4 + 5;
         flip < 2 * (4 + ORION_SEC_RECORD_MAX + 16); flip += 9973) {
      int rc = ORION_SEC_MORE;
      e.a = saved;
      got.len = 0;
      w.data[flip] ^= 0x20;
      for (off = 0; off < w.len && rc >= 0; off += 1000)
        rc = open_all(&e.a, w.data + off, w.len - off < 1000 ? w.len - off
                                                             : 1000,
                      &got);
      w.data[flip] ^= 0x20;
      cr_assert_eq(rc, -EBADMSG, "byte %zu changed, mode %d", flip, m);
      cr_assert(strstr(e.a.why, "record 1 (65536 bytes) failed "
                                "authentication") != NULL,
                "%s", e.a.why);
      cr_assert_eq(got.len, ORION_SEC_RECORD_MAX, "only record 0 opened");
    }
    saved.rec = NULL;
    orion_buf_free(&w);
    orion_buf_free(&got);
    ends_free(&e);
  }
}

/* orion_sec_record_want tells a reader that keeps bytes how much of a
 * MAC-only record to gather before it opens the record in place: the
 * whole record's size while a part of it is there (one of the largest
 * while the head is cut), 0 when it is all there, and 0 for encrypted
 * records, a record begun already, an alert or a bad head (opened, or
 * refused, at once). */
Test(sec, a_reader_is_told_how_much_of_a_record_to_gather) {
  static const char msg[] = "the rows of one part";
  const size_t whole = ORION_SEC_RECORD_OVERHEAD + sizeof msg;
  int m;
  for (m = 0; m < 2; m++) {
    ends e;
    orion_buf w;
    const unsigned char *plain;
    size_t used, plen, k;
    handshake_mode(&e, m, 0);
    orion_buf_init(&w);
    seal_into(&e.c, msg, sizeof msg, &w);
    for (k = 0; k <= w.len; k++) {
      size_t want = orion_sec_record_want(&e.a, w.data, k), expect = 0;
      if (m == 0 && k < ORION_SEC_HEAD_LEN)
        expect = ORION_SEC_HEAD_LEN + ORION_SEC_RECORD_MAX + ORION_SEC_TAG_LEN;
      else if (m == 0 && k < whole)
        expect = whole;
      cr_assert_eq(want, expect, "mode %d, %zu of %zu bytes: want %zu", m, k,
                   whole, want);
    }
    /* Begun already (7 bytes taken): the open goes on with the rest. */
    cr_assert_eq(orion_sec_open(&e.a, w.data, 7, &used, &plain, &plen),
                 ORION_SEC_MORE);
    cr_assert_eq(orion_sec_record_want(&e.a, w.data + 7, 3), 0);
    cr_assert_eq(orion_sec_open(&e.a, w.data + 7, w.len - 7, &used, &plain,
                                &plen),
                 ORION_SEC_DONE, "%s", e.a.why);
    /* An alert's head or a length over the largest: opened at once. */
    cr_assert_eq(orion_sec_record_want(&e.a, "\x05\0\0\x80", 4), 0);
    cr_assert_eq(orion_sec_record_want(&e.a, "\x01\0\x01\0", 4), 0);
    cr_assert_eq(orion_sec_record_want(&e.a, "\0\0\0\0", 4), 0);
    if (m == 0) /* the largest record, its head alone */
      cr_assert_eq(orion_sec_record_want(&e.a, "\0\0\x01\0", 4),
                   ORION_SEC_RECORD_OVERHEAD + ORION_SEC_RECORD_MAX);
    orion_buf_free(&w);
    ends_free(&e);
  }
}

/* A MAC-only record that arrives whole is authenticated where it lies and
 * its plaintext handed out from there (no copy into the record buffer);
 * an encrypted one is decrypted into the buffer; one split across feeds
 * is gathered as before.  A changed byte still fails either way. */
Test(sec, whole_mac_only_records_open_in_place) {
  static const char msg[] = "frames of one block, in one record";
  int m;
  for (m = 0; m < 2; m++) {
    ends e;
    orion_buf w;
    orion_sec saved;
    const unsigned char *plain;
    size_t used, plen;
    handshake_mode(&e, m, 0);
    orion_buf_init(&w);
    seal_into(&e.c, msg, sizeof msg, &w);
    saved = e.a;
    cr_assert_eq(orion_sec_open(&e.a, w.data, w.len, &used, &plain, &plen),
                 ORION_SEC_DONE, "%s", e.a.why);
    cr_assert_eq(used, w.len);
    cr_assert(plen == sizeof msg && memcmp(plain, msg, plen) == 0);
    if (m == 0)
      cr_assert(plain == (const unsigned char *)w.data + ORION_SEC_HEAD_LEN,
                "MAC only: the plaintext is the record's own bytes");
    else
      cr_assert(plain == e.a.rec, "encrypted: decrypted into the buffer");
    /* Split after the head: gathered into the buffer. */
    e.a = saved;
    cr_assert_eq(orion_sec_open(&e.a, w.data, 7, &used, &plain, &plen),
                 ORION_SEC_MORE);
    cr_assert_eq(used, 7);
    cr_assert_eq(orion_sec_open(&e.a, w.data + 7, w.len - 7, &used, &plain,
                                &plen),
                 ORION_SEC_DONE, "%s", e.a.why);
    cr_assert(plain == e.a.rec && plen == sizeof msg &&
              memcmp(plain, msg, plen) == 0);
    /* A changed byte, the record whole. */
    e.a = saved;
    w.data[ORION_SEC_HEAD_LEN + 3] ^= 1;
    cr_assert_eq(orion_sec_open(&e.a, w.data, w.len, &used, &plain, &plen),
                 -EBADMSG);
    saved.rec = NULL;
    orion_buf_free(&w);
    ends_free(&e);
  }
}
