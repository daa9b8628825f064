/* The secure channel under every connection of a job: a mutual
 * challenge-response that proves both ends hold the job's secret (the
 * token) without sending it, per-connection keys, and authenticated
 * records that carry the frames of dsm/wire.h.  All cryptography is a
 * library's: the handshake's hashes, key derivation and randomness are
 * libsodium's, the records' AEADs OpenSSL's EVP (libcrypto: several times
 * libsodium's AES-GCM and ChaCha20 speed on CPUs with AVX2/AVX-512,
 * docs/security.md); this file only strings their calls together.  It never
 * touches a socket: dsm/net.c feeds it bytes, and the tests drive it with
 * plain buffers.
 *
 * Handshake (fixed-size messages, before any frame):
 *
 *   connector -> acceptor  CHALLENGE  40 bytes  'O' 'C' version 0xA1
 *                                      policy aes 0 0, nonce_c[32]
 *   acceptor -> connector  ANSWER     72 bytes  'O' 'C' version 0xA2
 *                                      policy mode cipher 0, nonce_a[32],
 *                                      proof_a[32]
 *   connector -> acceptor  PROOF      40 bytes  'O' 'C' version 0xA3
 *                                      0 0 0 0, proof_c[32]
 *
 * The job key is K = BLAKE2b-256("orion-c job key" || token).  proof_a is
 * BLAKE2b keyed with K over "answer" || CHALLENGE || ANSWER's first 40
 * bytes; proof_c over "proof" || CHALLENGE || ANSWER.  Different labels
 * keep either side from replaying the other's proof, and the fresh nonces
 * from both sides keep an old transcript from passing.  The connector
 * checks proof_a before it sends anything else, so a peer that does not
 * hold the token (a fake driver) learns nothing and gets no frame; the
 * acceptor checks proof_c before it takes any frame.  Session keys:
 * M = BLAKE2b_K("session" || CHALLENGE || ANSWER), and crypto_kdf subkeys
 * 1 (connector to acceptor) and 2 (acceptor to connector) of M.
 *
 * The policy bytes (orion_sec_policy), the connector's `aes` (1: this CPU
 * runs AES-256-GCM in hardware) and ANSWER's mode and cipher are covered
 * by the proofs, so nobody on the path can turn encryption off.  The
 * acceptor decides the mode: encrypted when either side asks ON; MAC only
 * when either says OFF (and neither ON); else encrypted unless the
 * connection is over loopback.  And the cipher: AES-256-GCM (1) when both
 * ends run it in hardware, else ChaCha20-Poly1305 (0).
 *
 * Records (after the handshake, each way):
 *
 *   u32 LE length L (1..ORION_SEC_RECORD_MAX), L bytes, a 16-byte tag
 *
 * sealed with the agreed AEAD (ChaCha20-Poly1305 IETF or AES-256-GCM)
 * under the direction's key and a nonce that is the record's number in its
 * direction (0, 1, 2, ...; never sent).  Encrypted mode encrypts the L
 * bytes in place; MAC-only mode sends them in the clear and authenticates
 * them as associated data.  Both AEADs cover the lengths, so a changed,
 * dropped, replayed, reordered or injected record fails its tag and the
 * connection ends.
 *
 * Alerts.  The end that finds a bad record says so before it closes, in
 * one last record of its own direction (which nobody has shown to be
 * tampered with): the head's length has ORION_SEC_ALERT_FLAG set, the
 * body is a line of text (1..ORION_SEC_ALERT_MAX bytes: why the record
 * failed), and the AEAD covers one byte '!' of associated data before it,
 * so that a record and an alert cannot pass for each other by a flipped
 * flag.  The other end then reports that its record was refused, rather
 * than a closed connection or a failed write.  An alert is as
 * authenticated as any record: nobody without the keys can forge one.  (A
 * build from before alerts reads one as a record that declares too many
 * bytes, and closes the connection all the same.)
 *
 * Threads: an orion_sec belongs to one connection, used by one thread.
 */
#ifndef ORION_DSM_SEC_H
#define ORION_DSM_SEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define ORION_SEC_KEY_LEN 32
#define ORION_SEC_NONCE_LEN 32
#define ORION_SEC_CHALLENGE_LEN 40
#define ORION_SEC_ANSWER_LEN 72
#define ORION_SEC_PROOF_LEN 40
#define ORION_SEC_KIND_CHALLENGE 0xA1
#define ORION_SEC_KIND_ANSWER 0xA2
#define ORION_SEC_KIND_PROOF 0xA3
/* A record's plaintext bytes at most, and its framing. */
#define ORION_SEC_RECORD_MAX 65536u
#define ORION_SEC_HEAD_LEN 4
#define ORION_SEC_TAG_LEN 16
#define ORION_SEC_RECORD_OVERHEAD (ORION_SEC_HEAD_LEN + ORION_SEC_TAG_LEN)
/* An alert's flag in a record's head, and its text's longest length. */
#define ORION_SEC_ALERT_FLAG 0x80000000u
#define ORION_SEC_ALERT_MAX 240u

/* What one end wants of a connection. */
typedef enum orion_sec_policy {
  ORION_SEC_AUTO = 0, /* encrypt unless over loopback */
  ORION_SEC_ON = 1,   /* always encrypt */
  ORION_SEC_OFF = 2   /* authenticate only (--no-encrypt) */
} orion_sec_policy;

typedef enum orion_sec_role {
  ORION_SEC_CONNECT = 1,
  ORION_SEC_ACCEPT = 2
} orion_sec_role;

/* Results of orion_sec_handshake and orion_sec_open besides negative
 * codes (-EACCES: a proof failed; -EBADMSG: a record failed its tag;
 * -EPROTO: not a handshake message; ORION_EVERSION: another wire
 * version). */
#define ORION_SEC_MORE 0
#define ORION_SEC_DONE 1 /* the handshake is complete / a record is open */
#define ORION_SEC_ALERT 2 /* orion_sec_open: the peer's alert is open */

typedef struct orion_sec {
  int role;
  int state;     /* private */
  int policy;    /* ours */
  int peer_policy; /* the other end's, once the handshake has it */
  int loopback;  /* the connection is over loopback (set by the caller) */
  int encrypt;   /* the mode agreed: 1 encrypted, 0 MAC only */
  int cipher;    /* the AEAD agreed: 0 ChaCha20-Poly1305, 1 AES-256-GCM */
  int aes;       /* this CPU runs AES-256-GCM in hardware */
  /* Each direction's AEAD with its key expanded: OpenSSL's
   * EVP_CIPHER_CTX, kept opaque so that users of this header need no
   * OpenSSL headers. */
  void *tx_ctx, *rx_ctx;
  unsigned char job_key[ORION_SEC_KEY_LEN];
  unsigned char tx_key[ORION_SEC_KEY_LEN];
  unsigned char rx_key[ORION_SEC_KEY_LEN];
  uint64_t tx_seq, rx_seq; /* records sealed and opened */
  unsigned char challenge[ORION_SEC_CHALLENGE_LEN];
  unsigned char answer[ORION_SEC_ANSWER_LEN];
  unsigned char in[ORION_SEC_ANSWER_LEN]; /* a handshake message arriving */
  size_t in_have;
  /* The record arriving: head, then body and tag into rec. */
  unsigned char head[ORION_SEC_HEAD_LEN];
  uint32_t rec_len;
  int rec_alert;      /* the record arriving is an alert */
  int alert_sent;     /* orion_sec_alert has sealed ours */
  size_t rec_have;
  unsigned char *rec; /* ORION_SEC_RECORD_MAX + ORION_SEC_TAG_LEN bytes */
  char why[256];      /* the last failure, for a log */
} orion_sec;

/* Starts libsodium (idempotent, thread-safe).  0 or ORION_EINVAL. */
int orion_sec_global_init(void);

/* Sets up s for one connection: role, the job's token, our policy.
 * 0, ORION_EINVAL (empty token) or ORION_ENOMEM. */
int orion_sec_init(orion_sec *s, orion_sec_role role, const char *token,
                   size_t token_len, orion_sec_policy policy);
/* Forgets every key and frees the record buffer. */
void orion_sec_free(orion_sec *s);

/* The connector's first message: appends the CHALLENGE to out. */
void orion_sec_start(orion_sec *s, orion_buf *out);

/* Feeds handshake bytes p[0..n); *used says how many it took (it never
 * takes bytes past the handshake's last message, which may be followed by
 * records in the same read).  May append the reply to out.  Returns
 * ORION_SEC_MORE, ORION_SEC_DONE (keys ready; the connector has appended
 * its PROOF to out and may send records right after it) or a negative code
 * with s->why saying why. */
int orion_sec_handshake(orion_sec *s, const void *p, size_t n, size_t *used,
                        orion_buf *out);

/* Seals one record of data[0..len) (1..ORION_SEC_RECORD_MAX bytes) in
 * place: fills head and tag; in encrypted mode data is overwritten with
 * the ciphertext.  The record on the wire is head, data, tag.  0, or
 * ORION_EINVAL (before the handshake, a size out of range, or OpenSSL
 * failed) with s->why set: the connection must end. */
int orion_sec_seal(orion_sec *s, void *data, size_t len,
                    unsigned char head[ORION_SEC_HEAD_LEN],
                   unsigned char tag[ORION_SEC_TAG_LEN]);
/* Seals an alert saying text (cut to ORION_SEC_ALERT_MAX bytes) into
 * out[0..ORION_SEC_ALERT_MAX + ORION_SEC_RECORD_OVERHEAD), the whole record
 * on the wire, and returns its length; 0 when there is nothing to seal it
 * with (before the handshake), when one was sealed already, or when
 * OpenSSL failed.  Works after orion_sec_open has failed: the direction
 * that sends is not the one that was tampered with. */
size_t orion_sec_alert(orion_sec *s, const char *text, unsigned char *out);

/* How many records len bytes make. */
size_t orion_sec_records(size_t len);

/* Feeds record bytes p[0..n); *used says how many it took (at most up to
 * the end of one record).  An encrypted record's bytes are decrypted as
 * they come, from p straight into the record buffer; its plaintext is
 * handed out only once the whole record's tag has verified.  ORION_SEC_DONE: a record verified; its
 * plaintext is *plain[0..*plain_len), valid until the next call and, for
 * a MAC-only record that p held whole (authenticated where it lies, not
 * copied), while p's bytes are.
 * ORION_SEC_ALERT: the peer's alert verified, its text in *plain (not
 * NUL-terminated, the peer's bytes as they are); the connection ends.
 * ORION_SEC_MORE, or a negative code (the connection must end) with s->why
 * set. */
int orion_sec_open(orion_sec *s, const void *p, size_t n, size_t *used,
                   const unsigned char **plain, size_t *plain_len);

/* For a reader that can keep bytes until more arrive: the bytes of the
 * MAC-only record that starts at p (head, body, tag) when p[0..n) holds
 * less than all of it (ORION_SEC_HEAD_LEN + ORION_SEC_RECORD_MAX +
 * ORION_SEC_TAG_LEN while the head itself is cut), so that the reader can
 * feed it whole to orion_sec_open, which then opens it where it lies.  0
 * when orion_sec_open should take p now: the whole record is there, s is
 * not between records (or not open, or encrypting: its records are
 * decrypted into the record buffer anyway), or the head is bad (the open
 * says so). */
size_t orion_sec_record_want(const orion_sec *s, const void *p, size_t n);

#endif
