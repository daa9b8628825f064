/* A sharded array's chunk layout, versions and copies on one executor
 * (dsm/shard.h). */
#include "dsm/shard.h"

#include <string.h>

#include "dsm/proto.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/error.h"

int orion_shard_init(orion_shard *sh, int64_t id, orion_array *a, int e,
                     int n) {
  int64_t rows, first, count;
  sh->id = id;
  sh->a = a;
  orion_array_retain(sh->a);
  rows = sh->a->dims[0];
  sh->esz = orion_type_size(sh->a->type);
  orion_chunk_layout(rows, sh->a->nnz, sh->esz, &sh->row_elems,
                     &sh->chunk_rows, &sh->nchunks);
  sh->clo = orion_shard_first(e, n, sh->nchunks);
  sh->chi = orion_shard_first(e + 1, n, sh->nchunks);
  sh->have = orion_calloc((size_t)sh->nchunks + 1, sizeof *sh->have);
  sh->ver = orion_calloc((size_t)(sh->chi - sh->clo) + 1, sizeof *sh->ver);
  sh->rver = orion_calloc((size_t)((sh->chi - sh->clo) * sh->chunk_rows) + 1,
                          sizeof *sh->rver);
  orion_shard_chunk_elems(sh, sh->clo, sh->chi, &first, &count);
  sh->served = orion_malloc((size_t)count * sh->esz + 1);
  sh->base = orion_malloc((size_t)count * sh->esz + 1);
  if (sh->have == NULL || sh->ver == NULL || sh->rver == NULL ||
      sh->served == NULL || sh->base == NULL) {
    orion_shard_clear(sh);
    return ORION_ENOMEM;
  }
  return 0;
}

void orion_shard_clear(orion_shard *sh) {
  orion_free(sh->have);
  orion_free(sh->ver);
  orion_free(sh->rver);
  orion_free(sh->served);
  orion_free(sh->base);
  orion_array_release(sh->a);
  memset(sh, 0, sizeof *sh);
}

void orion_shard_chunk_elems(const orion_shard *sh, int64_t k0, int64_t k1,
                             int64_t *first, int64_t *count) {
  int64_t r0 = k0 * sh->chunk_rows, r1 = k1 * sh->chunk_rows;
  if (r1 > sh->a->dims[0])
    r1 = sh->a->dims[0];
  if (r0 > r1)
    r0 = r1;
  *first = r0 * sh->row_elems;
  *count = (r1 - r0) * sh->row_elems;
}

int64_t orion_shard_chunk_of(const orion_shard *sh, int64_t key) {
  return key / sh->row_elems / sh->chunk_rows;
}

int64_t orion_shard_chunk_key(const orion_shard *sh, int64_t k) {
  return k * sh->chunk_rows * sh->row_elems;
}

int orion_shard_owner(const orion_shard *sh, int n, int64_t k) {
  /* The inverse of orion_shard_first: the last e with ceil(e N / n) <= k. */
  return sh->nchunks > 0 ? (int)(k * n / sh->nchunks) : 0;
}

/* Where own chunk k's rows start in the served copy and the base. */
static size_t own_offset(const orion_shard *sh, int64_t k) {
  return (size_t)(orion_shard_chunk_key(sh, k) -
                  orion_shard_chunk_key(sh, sh->clo)) *
         sh->esz;
}

void orion_shard_publish(orion_shard *sh, int64_t k0, int64_t k1, int force,
                         uint64_t *counter) {
  int64_t k;
  for (k = k0 < sh->clo ? sh->clo : k0; k < k1 && k < sh->chi; k++) {
    int64_t first, count;
    char *dst, *src;
    orion_shard_chunk_elems(sh, k, k + 1, &first, &count);
    dst = sh->served + own_offset(sh, k);
    src = (char *)sh->a->values + (size_t)first * sh->esz;
    if (force || memcmp(dst, src, (size_t)count * sh->esz) != 0) {
      size_t rb = (size_t)sh->row_elems * sh->esz;
      uint64_t *rv = sh->rver + (k - sh->clo) * sh->chunk_rows;
      int64_t r, nr = sh->row_elems > 0 ? count / sh->row_elems : 0;
      uint64_t v = ++*counter;
      for (r = 0; r < nr; r++) /* the rows that changed get v */
        if (force || memcmp(dst + r * rb, src + r * rb, rb) != 0)
          rv[r] = v;
      memcpy(dst, src, (size_t)count * sh->esz);
      sh->ver[k - sh->clo] = v;
    }
  }
}

void orion_shard_rebase(orion_shard *sh) {
  int64_t first, count;
  orion_shard_chunk_elems(sh, sh->clo, sh->chi, &first, &count);
  memcpy(sh->base, sh->served, (size_t)count * sh->esz);
}

void orion_shard_forget(orion_shard *sh) {
  memset(sh->have, 0, sizeof *sh->have * (size_t)sh->nchunks);
}

/* Unchanged bytes between two runs of changed rows up to which one entry
 * carries both (an entry's own fields take about this much). */
#define RUN_GAP_BYTES 32

int64_t orion_shard_changed(const orion_shard *sh, const uint64_t *versions,
                            orion_msg_chunk *out) {
  int64_t k, n = 0;
  size_t rb = (size_t)sh->row_elems * sh->esz;
  for (k = sh->clo; k < sh->chi; k++) {
    int64_t first, count, nr, r = 0, gap;
    uint64_t held = versions[k - sh->clo], ver = sh->ver[k - sh->clo];
    const uint64_t *rv = sh->rver + (k - sh->clo) * sh->chunk_rows;
    if (held == ver)
      continue;
    orion_shard_chunk_elems(sh, k, k + 1, &first, &count);
    nr = sh->row_elems > 0 ? count / sh->row_elems : 0;
    if (held == 0 || held > ver || nr == 0) { /* the whole chunk */
      if (out != NULL) {
        orion_msg_chunk *c = &out[n];
        c->chunk = k;
        c->version = ver;
        c->row = 0;
        c->data = sh->served + own_offset(sh, k);
        c->len = (size_t)count * sh->esz;
      }
      n++;
      continue;
    }
    gap = rb > 0 ? (int64_t)(RUN_GAP_BYTES / rb) : 0;
    while (r < nr) {
      int64_t e, z;
      if (rv[r] <= held) {
        r++;
        continue;
      }
      /* A run from r: changed rows, and gaps of up to `gap` rows. */
      for (e = r + 1; e < nr; e = z + 1) {
        for (z = e; z < nr && z - e < gap && rv[z] <= held; z++)
          ;
        if (z >= nr || rv[z] <= held)
          break;
      }
      if (out != NULL) {
        orion_msg_chunk *c = &out[n];
        c->chunk = k;
        c->version = ver;
        c->row = r;
        c->data = sh->served + own_offset(sh, k) + (size_t)r * rb;
        c->len = (size_t)(e - r) * rb;
      }
      n++;
      r = e;
    }
  }
  return n;
}

int orion_shard_install(orion_shard *sh, const orion_msg_chunk *c) {
  int64_t first, count, nr;
  size_t rb = (size_t)sh->row_elems * sh->esz;
  if (c->chunk < 0 || c->chunk >= sh->nchunks)
    return ORION_EPARSE;
  orion_shard_chunk_elems(sh, c->chunk, c->chunk + 1, &first, &count);
  nr = sh->row_elems > 0 ? count / sh->row_elems : 0;
  if (c->len == 0 ? count != 0 || c->row != 0 /* only an empty chunk */
                  : rb == 0 || c->len % rb != 0 || c->row < 0 ||
                        c->row >= nr || (int64_t)(c->len / rb) > nr - c->row)
    return ORION_EPARSE;
  if (c->len > 0) /* an empty chunk's data is NULL */
    memcpy((char *)sh->a->values + (size_t)first * sh->esz +
               (size_t)c->row * rb,
           c->data, c->len);
  sh->have[c->chunk] = c->version;
  return 0;
}

int orion_shard_diff(orion_shard *sh, orion_msg_runvec *runs) {
  int64_t first, count, e = 0;
  int rc = 0;
  orion_shard_chunk_elems(sh, sh->clo, sh->chi, &first, &count);
  while (e < count && rc == 0) { /* runs of changed elements */
    int64_t g;
    if (memcmp(sh->served + (size_t)e * sh->esz,
               sh->base + (size_t)e * sh->esz, sh->esz) == 0) {
      e++;
      continue;
    }
    g = e + 1;
    while (g < count && memcmp(sh->served + (size_t)g * sh->esz,
                               sh->base + (size_t)g * sh->esz, sh->esz) != 0)
      g++;
    rc = orion_msg_runvec_push(runs, sh->id, first + e, g - e,
                               sh->served + (size_t)e * sh->esz,
                               (size_t)(g - e) * sh->esz);
    e = g;
  }
  orion_shard_rebase(sh);
  return rc;
}
