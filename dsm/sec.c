/* The secure channel: the handshake with libsodium, the records with
 * OpenSSL's EVP AEADs (see sec.h). */
#include "dsm/sec.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/error.h"

enum { ST_HELLO = 0, ST_ANSWER, ST_PROOF, ST_OPEN, ST_FAILED };

/* Both AEADs take a 96-bit nonce (OpenSSL's default length for both). */
#define NONCE_LEN 12
_Static_assert(crypto_aead_aes256gcm_NPUBBYTES == NONCE_LEN &&
                   crypto_aead_chacha20poly1305_IETF_NPUBBYTES == NONCE_LEN,
               "one nonce layout serves both AEADs");

static const unsigned char label_key[] = "orion-c job key";
static const unsigned char label_answer[] = "answer";
static const unsigned char label_proof[] = "proof";
static const unsigned char label_session[] = "session";
/* An alert's associated data, before its text (sec.h, "Alerts"). */
static const unsigned char alert_aad[1] = {'!'};

int orion_sec_global_init(void) {
  return sodium_init() < 0 ? ORION_EINVAL : 0;
}

int orion_sec_init(orion_sec *s, orion_sec_role role, const char *token,
                   size_t token_len, orion_sec_policy policy) {
  crypto_generichash_state h;
  memset(s, 0, sizeof *s);
  s->role = role;
  s->policy = policy;
  s->state = role == ORION_SEC_CONNECT ? ST_ANSWER : ST_HELLO;
  if (orion_sec_global_init() != 0 || token == NULL || token_len == 0)
    return ORION_EINVAL;
  crypto_generichash_init(&h, NULL, 0, ORION_SEC_KEY_LEN);
  crypto_generichash_update(&h, label_key, sizeof label_key);
  crypto_generichash_update(&h, (const unsigned char *)token, token_len);
  crypto_generichash_final(&h, s->job_key, ORION_SEC_KEY_LEN);
  s->aes = crypto_aead_aes256gcm_is_available();
  s->rec = orion_malloc(ORION_SEC_RECORD_MAX + ORION_SEC_TAG_LEN);
  return s->rec != NULL ? 0 : ORION_ENOMEM;
}

void orion_sec_free(orion_sec *s) {
  orion_free(s->rec);
  s->rec = NULL;
  EVP_CIPHER_CTX_free(s->tx_ctx); /* wipes the expanded keys */
  EVP_CIPHER_CTX_free(s->rx_ctx);
  s->tx_ctx = s->rx_ctx = NULL;
  sodium_memzero(s->job_key, sizeof s->job_key);
  sodium_memzero(s->tx_key, sizeof s->tx_key);
  sodium_memzero(s->rx_key, sizeof s->rx_key);
}

/* The 8-byte head of a handshake message. */
static void msg_head(unsigned char *m, int kind, int a, int b) {
  m[0] = ORION_WIRE_MAGIC0;
  m[1] = ORION_WIRE_MAGIC1;
  m[2] = ORION_WIRE_VERSION;
  m[3] = (unsigned char)kind;
  m[4] = (unsigned char)a;
  m[5] = (unsigned char)b;
  m[6] = m[7] = 0;
}

/* BLAKE2b keyed with the job key over label || challenge || answer[0..n). */
static void mac_of(const orion_sec *s, const unsigned char *label,
                   size_t label_len, size_t answer_len,
                   unsigned char out[ORION_SEC_KEY_LEN]) {
  crypto_generichash_state h;
  crypto_generichash_init(&h, s->job_key, ORION_SEC_KEY_LEN,
                          ORION_SEC_KEY_LEN);
  crypto_generichash_update(&h, label, label_len);
  crypto_generichash_update(&h, s->challenge, ORION_SEC_CHALLENGE_LEN);
  crypto_generichash_update(&h, s->answer, answer_len);
  crypto_generichash_final(&h, out, ORION_SEC_KEY_LEN);
}

static int fail(orion_sec *s, int code, const char *why) {
  s->state = ST_FAILED;
  snprintf(s->why, sizeof s->why, "%s", why);
  return code;
}

/* Both directions' keys from the transcript, each expanded once into its
 * cipher context (a record then only sets its nonce).  ORION_SEC_DONE, or
 * ORION_ENOMEM when OpenSSL cannot set up a context. */
static int derive_keys(orion_sec *s) {
  const EVP_CIPHER *aead =
      s->cipher == 1 ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
  unsigned char m[ORION_SEC_KEY_LEN], c2a[ORION_SEC_KEY_LEN],
      a2c[ORION_SEC_KEY_LEN];
  mac_of(s, label_session, sizeof label_session, ORION_SEC_ANSWER_LEN, m);
  crypto_kdf_derive_from_key(c2a, sizeof c2a, 1, "orionsec", m);
  crypto_kdf_derive_from_key(a2c, sizeof a2c, 2, "orionsec", m);
  memcpy(s->tx_key, s->role == ORION_SEC_CONNECT ? c2a : a2c, sizeof c2a);
  memcpy(s->rx_key, s->role == ORION_SEC_CONNECT ? a2c : c2a, sizeof c2a);
  sodium_memzero(m, sizeof m);
  sodium_memzero(c2a, sizeof c2a);
  sodium_memzero(a2c, sizeof a2c);
  s->tx_ctx = EVP_CIPHER_CTX_new();
  s->rx_ctx = EVP_CIPHER_CTX_new();
  if (s->tx_ctx == NULL || s->rx_ctx == NULL ||
      EVP_EncryptInit_ex(s->tx_ctx, aead, NULL, s->tx_key, NULL) != 1 ||
      EVP_DecryptInit_ex(s->rx_ctx, aead, NULL, s->rx_key, NULL) != 1 ||
      EVP_CIPHER_CTX_get_iv_length(s->tx_ctx) != NONCE_LEN) {
    ERR_clear_error();
    return fail(s, ORION_ENOMEM,
                "cannot set up the record cipher (OpenSSL's EVP)");
  }
  s->state = ST_OPEN;
  return ORION_SEC_DONE;
}

void orion_sec_start(orion_sec *s, orion_buf *out) {
  msg_head(s->challenge, ORION_SEC_KIND_CHALLENGE, s->policy, s->aes);
  randombytes_buf(s->challenge + 8, ORION_SEC_NONCE_LEN);
  orion_buf_append(out, s->challenge, ORION_SEC_CHALLENGE_LEN);
}

/* Checks a complete handshake message's head. */
static int check_head(orion_sec *s, const unsigned char *m, int kind,
                      const char *name) {
  if (m[0] != ORION_WIRE_MAGIC0 || m[1] != ORION_WIRE_MAGIC1 ||
      (m[2] == ORION_WIRE_VERSION && m[3] != kind)) {
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why,
             "no authentication handshake (expected its %s): not an "
             "Orion-C peer",
             name);
    return -EPROTO;
  }
  if (m[2] != ORION_WIRE_VERSION) {
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why,
             "the peer speaks wire version %u, this build version %d",
             m[2], ORION_WIRE_VERSION);
    return ORION_EVERSION;
  }
  if (m[4] > ORION_SEC_OFF || m[5] > 1 || m[6] > 1 || m[7] != 0) {
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why, "bad option bytes in the handshake's %s",
             name);
    return -EPROTO;
  }
  return 0;
}

/* The acceptor's choice (sec.h). */
static int choose_mode(const orion_sec *s) {
  int a = s->policy, b = s->peer_policy;
  if (a == ORION_SEC_ON || b == ORION_SEC_ON)
    return 1;
  if (a == ORION_SEC_OFF || b == ORION_SEC_OFF)
    return 0;
  return !s->loopback;
}

static int on_challenge(orion_sec *s, orion_buf *out) {
  int rc = check_head(s, s->in, ORION_SEC_KIND_CHALLENGE, "CHALLENGE");
  if (rc != 0)
    return rc;
  memcpy(s->challenge, s->in, ORION_SEC_CHALLENGE_LEN);
  s->peer_policy = s->in[4];
  s->encrypt = choose_mode(s);
  s->cipher = s->aes && s->in[5];
  msg_head(s->answer, ORION_SEC_KIND_ANSWER, s->policy, s->encrypt);
  s->answer[6] = (unsigned char)s->cipher;
  randombytes_buf(s->answer + 8, ORION_SEC_NONCE_LEN);
  mac_of(s, label_answer, sizeof label_answer, 40, s->answer + 40);
  orion_buf_append(out, s->answer, ORION_SEC_ANSWER_LEN);
  s->state = ST_PROOF;
  return ORION_SEC_MORE;
}

static int on_answer(orion_sec *s, orion_buf *out) {
  unsigned char want[ORION_SEC_KEY_LEN], proof[ORION_SEC_PROOF_LEN];
  int rc = check_head(s, s->in, ORION_SEC_KIND_ANSWER, "ANSWER");
  if (rc != 0)
    return rc;
  memcpy(s->answer, s->in, ORION_SEC_ANSWER_LEN);
  mac_of(s, label_answer, sizeof label_answer, 40, want);
  if (sodium_memcmp(want, s->answer + 40, sizeof want) != 0)
    return fail(s, -EACCES,
                "authentication failed: the peer that answered does not "
                "hold this end's token (a wrong token on one side, or not "
                "this job's driver or executor)");
  s->peer_policy = s->answer[4];
  s->encrypt = s->answer[5];
  s->cipher = s->answer[6];
  if (s->cipher && !s->aes)
    return fail(s, -EPROTO, "the peer chose AES-256-GCM, which this CPU "
                            "does not run");
  if (s->policy == ORION_SEC_ON && !s->encrypt)
    return fail(s, -EACCES,
                "the peer would not encrypt and this end requires it");
  msg_head(proof, ORION_SEC_KIND_PROOF, 0, 0);
  mac_of(s, label_proof, sizeof label_proof, ORION_SEC_ANSWER_LEN,
         proof + 8);
  orion_buf_append(out, proof, sizeof proof);
  return derive_keys(s);
}

static int on_proof(orion_sec *s) {
  unsigned char want[ORION_SEC_KEY_LEN];
  int rc = check_head(s, s->in, ORION_SEC_KIND_PROOF, "PROOF");
  if (rc != 0)
    return rc;
  if (s->in[4] != 0 || s->in[5] != 0 || s->in[6] != 0)
    return fail(s, -EPROTO, "bad option bytes in the handshake's PROOF");
  mac_of(s, label_proof, sizeof label_proof, ORION_SEC_ANSWER_LEN, want);
  if (sodium_memcmp(want, s->in + 8, sizeof want) != 0)
    return fail(s, -EACCES,
                "authentication failed: the peer does not hold the job's "
                "token (a wrong token, or not one of this job's executors)");
  return derive_keys(s);
}

int orion_sec_handshake(orion_sec *s, const void *p, size_t n, size_t *used,
                        orion_buf *out) {
  size_t want, take;
  *used = 0;
  if (s->state == ST_FAILED)
    return -EPROTO;
  if (s->state == ST_OPEN)
    return ORION_SEC_DONE;
  want = s->state == ST_ANSWER ? ORION_SEC_ANSWER_LEN : ORION_SEC_PROOF_LEN;
  take = want - s->in_have < n ? want - s->in_have : n;
  memcpy(s->in + s->in_have, p, take);
  s->in_have += take;
  *used = take;
  if (s->in_have >= 4 && s->in_have - take < 4 &&
      (s->in[0] != ORION_WIRE_MAGIC0 || s->in[1] != ORION_WIRE_MAGIC1 ||
       s->in[2] != ORION_WIRE_VERSION))
    return check_head(s, s->in, -1, "first message"); /* fail early */
  if (s->in_have < want)
    return ORION_SEC_MORE;
  s->in_have = 0;
  if (s->state == ST_HELLO)
    return on_challenge(s, out);
  if (s->state == ST_ANSWER)
    return on_answer(s, out);
  return on_proof(s);
}

static void nonce_of(uint64_t seq, unsigned char n[NONCE_LEN]) {
  int i;
  memset(n, 0, NONCE_LEN);
  for (i = 0; i < 8; i++)
    n[4 + i] = (unsigned char)(seq >> (8 * i));
}

size_t orion_sec_records(size_t len) {
  return (len + ORION_SEC_RECORD_MAX - 1) / ORION_SEC_RECORD_MAX;
}

/* An OpenSSL call on a record failed (it does not on a context that
 * derive_keys set up, short of memory). */
static int cipher_failed(orion_sec *s, const char *what) {
  char why[160];
  ERR_clear_error();
  snprintf(why, sizeof why, "the record cipher failed %s (OpenSSL)", what);
  return fail(s, ORION_EINVAL, why);
}

/* Seals data[0..len) in place as record number tx_seq (an alert when
 * alert is 1), filling head and tag.  0, or -1 when OpenSSL failed. */
static int seal_record(orion_sec *s, void *data, size_t len, int alert,
                       unsigned char head[ORION_SEC_HEAD_LEN],
                       unsigned char tag[ORION_SEC_TAG_LEN]) {
  unsigned char nonce[NONCE_LEN];
  EVP_CIPHER_CTX *x = s->tx_ctx;
  uint32_t h = (uint32_t)len | (alert ? ORION_SEC_ALERT_FLAG : 0u);
  int n;
  nonce_of(s->tx_seq++, nonce);
  head[0] = (unsigned char)h;
  head[1] = (unsigned char)(h >> 8);
  head[2] = (unsigned char)(h >> 16);
  head[3] = (unsigned char)(h >> 24);
  /* Encrypted: the bytes in place.  MAC only: the bytes as associated
   * data and no plaintext.  An alert's '!' goes first either way. */
  if (EVP_EncryptInit_ex(x, NULL, NULL, NULL, nonce) != 1 ||
      (alert &&
       EVP_EncryptUpdate(x, NULL, &n, alert_aad, sizeof alert_aad) != 1) ||
      EVP_EncryptUpdate(x, s->encrypt ? data : NULL, &n, data, (int)len) !=
          1 ||
      EVP_EncryptFinal_ex(x, tag, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, ORION_SEC_TAG_LEN, tag) !=
          1) {
    ERR_clear_error();
    return -1;
  }
  return 0;
}

int orion_sec_seal(orion_sec *s, void *data, size_t len,
                   unsigned char head[ORION_SEC_HEAD_LEN],
                   unsigned char tag[ORION_SEC_TAG_LEN]) {
  if (s->state != ST_OPEN || len == 0 || len > ORION_SEC_RECORD_MAX)
    return fail(s, ORION_EINVAL, "a record to seal before the handshake "
                                 "or of a size out of range");
  if (seal_record(s, data, len, 0, head, tag) != 0)
    return cipher_failed(s, "sealing a record");
  return 0;
}

size_t orion_sec_alert(orion_sec *s, const char *text, unsigned char *out) {
  size_t len = strlen(text);
  unsigned char *body = out + ORION_SEC_HEAD_LEN;
  if (s->tx_ctx == NULL || s->alert_sent)
    return 0;
  s->alert_sent = 1;
  if (len > ORION_SEC_ALERT_MAX)
    len = ORION_SEC_ALERT_MAX;
  if (len == 0) { /* an alert says something */
    text = "?";
    len = 1;
  }
  memcpy(body, text, len);
  if (seal_record(s, body, len, 1, out, body + len) != 0)
    return 0;
  return ORION_SEC_HEAD_LEN + len + ORION_SEC_TAG_LEN;
}

/* The head of a record is complete: its length checked, the cipher set to
 * its nonce. */
static int begin_record(orion_sec *s) {
  unsigned char nonce[NONCE_LEN];
  uint32_t h = (uint32_t)s->head[0] | (uint32_t)s->head[1] << 8 |
               (uint32_t)s->head[2] << 16 | (uint32_t)s->head[3] << 24;
  uint32_t max = h & ORION_SEC_ALERT_FLAG ? ORION_SEC_ALERT_MAX
                                          : ORION_SEC_RECORD_MAX;
  int out;
  s->rec_alert = (h & ORION_SEC_ALERT_FLAG) != 0;
  s->rec_len = h & ~ORION_SEC_ALERT_FLAG;
  s->rec_have = 0;
  if (s->rec_len == 0 || s->rec_len > max) {
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why,
             "record %llu declares %lu bytes (1..%lu%s): tampered or out of "
             "step",
             (unsigned long long)s->rx_seq, (unsigned long)s->rec_len,
             (unsigned long)max, s->rec_alert ? " for an alert" : "");
    return -EBADMSG;
  }
  nonce_of(s->rx_seq, nonce);
  if (EVP_DecryptInit_ex(s->rx_ctx, NULL, NULL, NULL, nonce) != 1 ||
      (s->rec_alert && EVP_DecryptUpdate(s->rx_ctx, NULL, &out, alert_aad,
                                         sizeof alert_aad) != 1))
    return cipher_failed(s, "starting a record");
  return 0;
}

/* Body bytes p[0..n) of the record arriving, as they come: decrypted
 * straight into rec (encrypted mode; no copy first), or authenticated as
 * associated data and copied (MAC only).  Nothing leaves rec before the
 * tag has been checked. */
static int take_body(orion_sec *s, const unsigned char *p, size_t n) {
  int out;
  if (s->encrypt) {
    if (EVP_DecryptUpdate(s->rx_ctx, s->rec + s->rec_have, &out, p,
                          (int)n) != 1 ||
        (size_t)out != n)
      return cipher_failed(s, "opening a record");
  } else {
    if (EVP_DecryptUpdate(s->rx_ctx, NULL, &out, p, (int)n) != 1)
      return cipher_failed(s, "opening a record");
    memcpy(s->rec + s->rec_have, p, n);
  }
  return 0;
}

/* The whole record is in: its tag (at tag) decides. */
static int end_record(orion_sec *s, unsigned char *tag) {
  unsigned char none[16];
  int out;
  if (EVP_CIPHER_CTX_ctrl(s->rx_ctx, EVP_CTRL_AEAD_SET_TAG, ORION_SEC_TAG_LEN,
                          tag) != 1)
    return cipher_failed(s, "taking a record's tag");
  if (EVP_DecryptFinal_ex(s->rx_ctx, none, &out) != 1) {
    ERR_clear_error();
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why,
             "record %llu (%lu bytes) failed authentication: changed, "
             "replayed, reordered or injected on the way",
             (unsigned long long)s->rx_seq, (unsigned long)s->rec_len);
    return -EBADMSG;
  }
  return 0;
}

/* A record verified: the next one's state, and what this one was. */
static int opened(orion_sec *s, size_t *plain_len) {
  s->rx_seq++;
  *plain_len = s->rec_len;
  s->rec_len = 0;
  s->rec_have = 0;
  if (s->rec_alert) { /* the peer's last word: nothing may follow it */
    s->state = ST_FAILED;
    snprintf(s->why, sizeof s->why, "the peer sent an alert and closed");
    return ORION_SEC_ALERT;
  }
  return ORION_SEC_DONE;
}

size_t orion_sec_record_want(const orion_sec *s, const void *p, size_t n) {
  const unsigned char *b = p;
  size_t whole;
  uint32_t h;
  if (s->state != ST_OPEN || s->encrypt || s->rec_len != 0 ||
      s->rec_have != 0)
    return 0;
  if (n < ORION_SEC_HEAD_LEN)
    return ORION_SEC_HEAD_LEN + ORION_SEC_RECORD_MAX + ORION_SEC_TAG_LEN;
  h = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
      (uint32_t)b[3] << 24;
  if (h == 0 || h > ORION_SEC_RECORD_MAX) /* an alert, or bad: open it */
    return 0;
  whole = ORION_SEC_HEAD_LEN + (size_t)h + ORION_SEC_TAG_LEN;
  return n < whole ? whole : 0;
}

int orion_sec_open(orion_sec *s, const void *p, size_t n, size_t *used,
                   const unsigned char **plain, size_t *plain_len) {
  const unsigned char *b = p;
  size_t take, body;
  int rc;
  *used = 0;
  if (s->state != ST_OPEN)
    return -EPROTO;
  if (s->rec_len == 0) { /* the head */
    take = ORION_SEC_HEAD_LEN - s->rec_have < n
               ? ORION_SEC_HEAD_LEN - s->rec_have
               : n;
    memcpy(s->head + s->rec_have, b, take);
    s->rec_have += take;
    *used = take;
    if (s->rec_have < ORION_SEC_HEAD_LEN)
      return ORION_SEC_MORE;
    if ((rc = begin_record(s)) != 0)
      return rc;
    b += take;
    n -= take;
  }
  if (!s->encrypt && s->rec_have == 0 &&
      n >= (size_t)s->rec_len + ORION_SEC_TAG_LEN) {
    /* MAC only, the whole record in p: authenticated where it lies and
     * handed out from there, not copied into rec first. */
    unsigned char tag[ORION_SEC_TAG_LEN];
    int out;
    memcpy(tag, b + s->rec_len, sizeof tag);
    if (EVP_DecryptUpdate(s->rx_ctx, NULL, &out, b, (int)s->rec_len) != 1)
      return cipher_failed(s, "opening a record");
    if ((rc = end_record(s, tag)) != 0)
      return rc;
    *used += s->rec_len + ORION_SEC_TAG_LEN;
    *plain = b;
    return opened(s, plain_len);
  }
  take = s->rec_len + ORION_SEC_TAG_LEN - s->rec_have;
  if (take > n)
    take = n;
  body = s->rec_have < s->rec_len ? s->rec_len - s->rec_have : 0;
  if (body > take)
    body = take;
  if (body > 0 && (rc = take_body(s, b, body)) != 0)
    return rc;
  memcpy(s->rec + s->rec_have + body, b + body, take - body); /* the tag */
  s->rec_have += take;
  *used += take;
  if (s->rec_have < s->rec_len + ORION_SEC_TAG_LEN)
    return ORION_SEC_MORE;
  if ((rc = end_record(s, s->rec + s->rec_len)) != 0)
    return rc;
  *plain = s->rec;
  return opened(s, plain_len);
}
