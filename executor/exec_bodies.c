/* orion-executor's compiled bodies, kept by the hash of their source and
 * flags (exec_state.h, exec_bodies): LOAD_BODY finds a body built before
 * (exec_run.c on the CPU, exec_gload.c on the device) and keeps a new
 * one, forgetting the oldest past ORION_BODY_CACHE; and the bodies
 * themselves (LOAD_BODY's blob) by digest, dsm/bodycache.h.  Compute thread.
 */
#include <string.h>

#include "executor/exec_state.h"
#include "util/alloc.h"
#include "util/ccomp.h"

int orion__bodies_find(const exec_bodies *b, uint64_t hash,
                       orion_cobj **obj) {
  int i;
  for (i = 0; i < b->n; i++)
    if (b->e[i].hash == hash) {
      *obj = b->e[i].obj;
      return 1;
    }
  return 0;
}

void orion__bodies_keep(exec_bodies *b, uint64_t hash, orion_cobj *obj) {
  if (b->n == ORION_BODY_CACHE) { /* forget the oldest */
    orion_cobj_free(b->e[0].obj);
    memmove(&b->e[0], &b->e[1], sizeof b->e[0] * (ORION_BODY_CACHE - 1));
    b->n--;
  }
  b->e[b->n].hash = hash;
  b->e[b->n].obj = obj;
  b->n++;
}

/* The first bytes of a digest in hex, for messages. */
static const char *short_hex(const unsigned char *d, char out[17]) {
  static const char hex[] = "0123456789abcdef";
  int i;
  for (i = 0; i < 8; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[16] = '\0';
  return out;
}

int orion__blobs_resolve(exec_state *x, const orion_msg_load_body *m,
                         const char **body, size_t *len, char **owned,
                         orion_error *err) {
  unsigned char got[ORION_BODY_DIGEST];
  char hx[17];
  *body = m->blob != NULL ? m->blob : "";
  *len = m->blob_len;
  *owned = NULL;
  if (m->bdigest == NULL)
    return 0;
  if (m->bbase != NULL) {
    const orion_bodycache_entry *b = orion_bodycache_find(&x->blobs, m->bbase, 1);
    const char *base;
    size_t blen;
    if (b == NULL || b->bytes == NULL)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: LOAD_BODY names body %s, which "
                             "this executor does not hold (the driver's "
                             "record of its body cache is wrong)",
                             x->id, short_hex(m->bbase, hx));
    base = b->bytes;
    blen = b->len;
    if (m->bprefix > blen || m->bsuffix > blen - m->bprefix)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed LOAD_BODY frame: a "
                             "patch keeping %llu + %llu bytes of body %s "
                             "of %zu bytes",
                             x->id, (unsigned long long)m->bprefix,
                             (unsigned long long)m->bsuffix,
                             short_hex(m->bbase, hx), blen);
    if (m->blob_len == 0 && m->bprefix == blen) {
      *body = base; /* the held body itself */
      *len = blen;
    } else {
      *len = (size_t)m->bprefix + m->blob_len + (size_t)m->bsuffix;
      *owned = orion_malloc(*len > 0 ? *len : 1);
      if (*owned == NULL)
        return orion_error_set(err, ORION_ENOMEM, "out of memory");
      memcpy(*owned, base, (size_t)m->bprefix);
      if (m->blob_len > 0)
        memcpy(*owned + m->bprefix, m->blob, m->blob_len);
      memcpy(*owned + m->bprefix + m->blob_len, base + blen - m->bsuffix,
             (size_t)m->bsuffix);
      *body = *owned;
    }
  }
  orion_body_digest(*body, *len, got);
  if (memcmp(got, m->bdigest, ORION_BODY_DIGEST) != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: the body of LOAD_BODY (%zu bytes) "
                           "does not match its digest %s",
                           x->id, *len, short_hex(m->bdigest, hx));
  /* A body the cache holds is only touched: *body stays valid. */
  if (orion_bodycache_put(&x->blobs, m->bdigest, *body, *len) != 0)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  return 0;
}
