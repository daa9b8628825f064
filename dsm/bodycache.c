/* Loop bodies kept by digest (dsm/bodycache.h). */
#include "dsm/bodycache.h"

#include <sodium.h>
#include <string.h>

#include "util/error.h"
#include "util/alloc.h"

void orion_body_digest(const void *p, size_t len,
                       unsigned char out[ORION_BODY_DIGEST]) {
  crypto_generichash(out, ORION_BODY_DIGEST, p, len, NULL, 0);
}

static void drop(orion_bodycache *c, int i) {
  c->bytes -= c->e[i].len;
  orion_free(c->e[i].bytes);
  memmove(&c->e[i], &c->e[i + 1], sizeof c->e[0] * (size_t)(c->n - i - 1));
  c->n--;
}

orion_bodycache_entry *orion_bodycache_find(orion_bodycache *c,
                                            const unsigned char *digest,
                                            int touch) {
  int i;
  for (i = c->n - 1; i >= 0; i--)
    if (memcmp(c->e[i].digest, digest, ORION_BODY_DIGEST) == 0)
      break;
  if (i < 0)
    return NULL;
  if (touch && i != c->n - 1) {
    orion_bodycache_entry t = c->e[i];
    memmove(&c->e[i], &c->e[i + 1], sizeof c->e[0] * (size_t)(c->n - i - 1));
    c->e[c->n - 1] = t;
  }
  return &c->e[touch ? c->n - 1 : i];
}

int orion_bodycache_put(orion_bodycache *c, const unsigned char *digest,
                        const void *p, size_t len) {
  orion_bodycache_entry *t;
  char *copy = NULL;
  if (orion_bodycache_find(c, digest, 1) != NULL)
    return 0;
  if (len > ORION_BODYCACHE_BYTES)
    return 0; /* never kept */
  while (c->n > 0 &&
         (c->n == ORION_BODYCACHE_N || c->bytes + len > ORION_BODYCACHE_BYTES))
    drop(c, 0);
  if (p != NULL) {
    copy = orion_malloc(len > 0 ? len : 1);
    if (copy == NULL)
      return ORION_ENOMEM;
    memcpy(copy, p, len);
  }
  t = &c->e[c->n++];
  memcpy(t->digest, digest, ORION_BODY_DIGEST);
  t->len = len;
  t->bytes = copy;
  c->bytes += len;
  return 0;
}

void orion_bodycache_clear(orion_bodycache *c) {
  while (c->n > 0)
    drop(c, c->n - 1);
}

void orion_body_patch(const char *a, size_t alen, const char *b, size_t blen,
                      size_t *prefix, size_t *suffix) {
  size_t most = alen < blen ? alen : blen, p = 0, s = 0;
  while (p < most && a[p] == b[p])
    p++;
  while (s < most - p && a[alen - 1 - s] == b[blen - 1 - s])
    s++;
  *prefix = p;
  *suffix = s;
}
