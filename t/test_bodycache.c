/* dsm/bodycache.h: the executors' kept bodies and the driver's record of
 * them.  The cache forgets its least recently used body past
 * ORION_BODYCACHE_N entries or ORION_BODYCACHE_BYTES bytes; the driver's
 * record (no bytes), fed the same lookups and insertions, never names a
 * body the cache forgot, even after the record was cleared (a failed
 * loop); a patch keeps the bytes two bodies share at both ends. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "dsm/bodycache.h"

static void digest_of(int k, unsigned char d[ORION_BODY_DIGEST]) {
  char s[32];
  snprintf(s, sizeof s, "body %d", k);
  orion_body_digest(s, strlen(s), d);
}

Test(bodycache, keeps_bytes_and_forgets_the_least_recently_used) {
  orion_bodycache c;
  unsigned char d[ORION_BODY_DIGEST];
  orion_bodycache_entry *e;
  int k;
  memset(&c, 0, sizeof c);
  for (k = 0; k < ORION_BODYCACHE_N; k++) {
    char body[16];
    snprintf(body, sizeof body, "bytes %d", k);
    digest_of(k, d);
    cr_assert_eq(orion_bodycache_put(&c, d, body, strlen(body)), 0);
  }
  cr_assert_eq(c.n, ORION_BODYCACHE_N);
  digest_of(0, d); /* used: body 1 is now the oldest */
  e = orion_bodycache_find(&c, d, 1);
  cr_assert(e != NULL);
  cr_assert_eq(e->len, 7);
  cr_assert_eq(memcmp(e->bytes, "bytes 0", 7), 0);
  digest_of(ORION_BODYCACHE_N, d);
  cr_assert_eq(orion_bodycache_put(&c, d, "new", 3), 0);
  cr_assert_eq(c.n, ORION_BODYCACHE_N);
  digest_of(1, d);
  cr_assert_null(orion_bodycache_find(&c, d, 0), "body 1 kept");
  digest_of(0, d);
  cr_assert_not_null(orion_bodycache_find(&c, d, 0), "body 0 forgotten");
  orion_bodycache_clear(&c);
  cr_assert_eq(c.n, 0);
  cr_assert_eq(c.bytes, 0);
}

/* Lengths without bytes (a record) count against the byte cap too; a body
 * over the cap is never kept. */
Test(bodycache, byte_cap) {
  orion_bodycache c;
  unsigned char d[ORION_BODY_DIGEST];
  size_t third = ORION_BODYCACHE_BYTES / 3 + 1;
  memset(&c, 0, sizeof c);
  digest_of(1, d);
  cr_assert_eq(orion_bodycache_put(&c, d, NULL, third), 0);
  digest_of(2, d);
  cr_assert_eq(orion_bodycache_put(&c, d, NULL, third), 0);
  cr_assert_eq(c.n, 2);
  digest_of(3, d);
  cr_assert_eq(orion_bodycache_put(&c, d, NULL, third), 0);
  cr_assert_eq(c.n, 2, "three thirds and more kept");
  cr_assert_leq(c.bytes, ORION_BODYCACHE_BYTES);
  digest_of(1, d);
  cr_assert_null(orion_bodycache_find(&c, d, 0));
  digest_of(4, d);
  cr_assert_eq(orion_bodycache_put(&c, d, NULL, ORION_BODYCACHE_BYTES + 1), 0);
  cr_assert_null(orion_bodycache_find(&c, d, 0), "a body over the cap kept");
  cr_assert_eq(c.n, 2, "a body over the cap made room");
  orion_bodycache_clear(&c);
}

/* The driver's use of the record against an executor's cache, on a fixed
 * pseudo-random sequence of bodies of random sizes: what the record holds
 * the cache holds, also after the record is cleared. */
Test(bodycache, the_record_never_names_a_forgotten_body) {
  orion_bodycache rec, cache;
  unsigned long long x = 88172645463325252ULL;
  int step, k, refs = 0;
  memset(&rec, 0, sizeof rec);
  memset(&cache, 0, sizeof cache);
  for (step = 0; step < 4000; step++) {
    unsigned char d[ORION_BODY_DIGEST];
    int body;
    size_t len;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    body = (int)(x % 40);
    len = (size_t)body * (ORION_BODYCACHE_BYTES / 160) + 1; /* its size */
    digest_of(body, d);
    if (x % 97 == 0)
      orion_bodycache_clear(&rec); /* a failed loop */
    if (orion_bodycache_find(&rec, d, 1) != NULL) {
      cr_assert_not_null(orion_bodycache_find(&cache, d, 1),
                         "step %d: the record names body %d, forgotten",
                         step, body);
      refs++;
    } else {
      cr_assert_eq(orion_bodycache_put(&rec, d, NULL, len), 0);
      cr_assert_eq(orion_bodycache_put(&cache, d, NULL, len), 0);
    }
    for (k = 0; k < rec.n; k++)
      cr_assert_not_null(orion_bodycache_find(&cache, rec.e[k].digest, 0),
                         "step %d: the record holds more than the cache",
                         step);
  }
  cr_assert_gt(refs, 100, "only %d references", refs);
  orion_bodycache_clear(&rec);
  orion_bodycache_clear(&cache);
}

Test(bodycache, patch_keeps_both_ends) {
  size_t p, s;
  orion_body_patch("abcXYZdef", 9, "abcQdef", 7, &p, &s);
  cr_assert_eq(p, 3);
  cr_assert_eq(s, 3);
  /* No overlap: "aaaa" against "aaa" shares 3 at most in all. */
  orion_body_patch("aaaa", 4, "aaa", 3, &p, &s);
  cr_assert_eq(p + s, 3);
  orion_body_patch("same", 4, "same", 4, &p, &s);
  cr_assert_eq(p, 4);
  cr_assert_eq(s, 0);
  orion_body_patch("", 0, "new", 3, &p, &s);
  cr_assert_eq(p + s, 0);
}
