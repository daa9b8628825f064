/* Loop bodies kept by digest: an executor keeps the bodies (LOAD_BODY's
 * blob) it was sent, and the driver keeps, per executor, a record of the
 * same cache, so that a LOAD_BODY can name a held body (or patch one)
 * instead of sending it again.
 *
 * The cache forgets its least recently used entry while it holds more
 * than ORION_BODYCACHE_N entries or ORION_BODYCACHE_BYTES bytes; a body
 * larger than that is never kept.  The rule depends only on the sequence
 * of lookups and insertions, so the driver's record, fed the same
 * sequence as the executor's cache, never names a body the executor
 * forgot.  An entry may carry no bytes (the driver's record of an
 * executor): it counts its length all the same.
 */
#ifndef ORION_DSM_BODYCACHE_H
#define ORION_DSM_BODYCACHE_H

#include <stddef.h>
#include <stdint.h>

#define ORION_BODY_DIGEST 32 /* BLAKE2b-256 */
#define ORION_BODYCACHE_N 16
#define ORION_BODYCACHE_BYTES ((size_t)64 << 20)

typedef struct orion_bodycache_entry {
  unsigned char digest[ORION_BODY_DIGEST];
  size_t len;
  char *bytes; /* NULL in a record without bytes */
} orion_bodycache_entry;

/* Entries oldest first. */
typedef struct orion_bodycache {
  orion_bodycache_entry e[ORION_BODYCACHE_N];
  int n;
  size_t bytes;
} orion_bodycache;

/* The digest of len bytes. */
void orion_body_digest(const void *p, size_t len,
                       unsigned char out[ORION_BODY_DIGEST]);

/* The entry with this digest, or NULL; when touch, it becomes the most
 * recently used. */
orion_bodycache_entry *orion_bodycache_find(orion_bodycache *c,
                                            const unsigned char *digest,
                                            int touch);

/* Keeps a body of len bytes under digest (a copy of p when p is not NULL),
 * forgetting the oldest entries as needed; an entry already there becomes
 * the most recently used.  Returns 0, or ORION_ENOMEM (c unchanged but for
 * the forgotten entries). */
int orion_bodycache_put(orion_bodycache *c, const unsigned char *digest,
                        const void *p, size_t len);

/* Forgets every entry. */
void orion_bodycache_clear(orion_bodycache *c);

/* The patch that makes body b (blen bytes) from base a (alen bytes): the
 * bytes they share at the start (*prefix) and at the end (*suffix), not
 * overlapping in either; b's other bytes, b[*prefix, blen - *suffix), go
 * as they are. */
void orion_body_patch(const char *a, size_t alen, const char *b, size_t blen,
                      size_t *prefix, size_t *suffix);

#endif
