#include "dsm/replica.h"

#include "dsm/proto.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/error.h"

static uint64_t version_counter;

void orion_replica_free(orion_replica *c) {
  if (c == NULL)
    return;
  orion_free(c->ver);
  orion_free(c->have);
  orion_free(c->sent);
  orion_free(c->bver);
  orion_free(c->bhave);
  orion_free(c->krange);
  orion_holders_free(&c->held);
  orion_free(c);
}

orion_replica *orion_replica_new(const orion_array *a, int n, uint64_t gen) {
  orion_replica *c = orion_calloc(1, sizeof *c);
  size_t esz = orion_type_size(a->type);
  int64_t k;
  if (c == NULL)
    return NULL;
  c->n = n;
  c->gen = gen;
  if (a->sparse)
    return c;
  c->rows = a->dims[0];
  orion_chunk_layout(c->rows, a->nnz, esz, &c->row_elems, &c->chunk,
                     &c->nchunks);
  c->ver = orion_calloc((size_t)c->nchunks + 1, sizeof *c->ver);
  c->have = orion_calloc((size_t)(c->nchunks * n) + 1, sizeof *c->have);
  c->sent = orion_calloc((size_t)(c->nchunks * n) + 1, sizeof *c->sent);
  if (c->ver == NULL || c->have == NULL || c->sent == NULL) {
    orion_replica_free(c);
    return NULL;
  }
  for (k = 0; k < c->nchunks; k++)
    c->ver[k] = ++version_counter;
  return c;
}

int64_t orion_replica_fresh_rows(const orion_replica *c, int e, int64_t lo,
                                 int64_t hi) {
  int64_t k, n = 0;
  if (c->chunk <= 0 || e < 0 || e >= c->n || lo < 0 || hi > c->rows)
    return 0;
  for (k = lo / c->chunk; lo < hi && k <= (hi - 1) / c->chunk; k++)
    if (c->have[(int64_t)e * c->nchunks + k] == c->ver[k]) {
      int64_t a = k * c->chunk > lo ? k * c->chunk : lo;
      int64_t z = (k + 1) * c->chunk < hi ? (k + 1) * c->chunk : hi;
      n += z - a;
    }
  return n;
}

void orion_replica_invalidate(orion_replica *c) {
  int64_t k;
  for (k = 0; k < c->nchunks; k++)
    c->ver[k] = ++version_counter;
}

void orion_replica_sync(orion_replica *c, uint64_t gen) {
  int k;
  if (c->gen == gen)
    return;
  orion_replica_invalidate(c);
  for (k = 0; k < c->nb; k++)
    c->bver[k] = ++version_counter;
  c->gen = gen;
}

int orion_replica_set_blocks(orion_replica *c, int nb, uint64_t bs_gen) {
  int k;
  if (c->bs_gen == bs_gen && c->nb == nb && c->bver != NULL)
    return 0;
  orion_free(c->bver);
  orion_free(c->bhave);
  orion_free(c->krange);
  c->krange = NULL;
  c->bver = orion_calloc((size_t)nb + 1, sizeof *c->bver);
  c->bhave = orion_calloc((size_t)nb * (size_t)c->n + 1, sizeof *c->bhave);
  if (c->bver == NULL || c->bhave == NULL)
    return ORION_ENOMEM;
  for (k = 0; k < nb; k++)
    c->bver[k] = ++version_counter;
  c->nb = nb;
  c->bs_gen = bs_gen;
  return 0;
}

void orion_replica_block_changed(orion_replica *c, int e, int b) {
  c->bver[b] = ++version_counter;
  c->bhave[e * c->nb + b] = c->bver[b];
}

void orion_replica_changed(orion_replica *c, int e, uint64_t seq,
                           int64_t first, int64_t count) {
  int64_t r0 = first / c->row_elems, r1 = (first + count - 1) / c->row_elems;
  int64_t k;
  for (k = r0 / c->chunk; k <= r1 / c->chunk; k++) {
    uint64_t *have = e >= 0 ? &c->have[(int64_t)e * c->nchunks + k] : NULL;
    /* Rows sent to e for a later block overwrote its copy of the chunk
     * after this block wrote it: e holds the older values there. */
    int fresh = have != NULL && *have == c->ver[k] &&
                c->sent[(int64_t)e * c->nchunks + k] <= seq;
    c->ver[k] = ++version_counter;
    if (fresh)
      *have = c->ver[k];
  }
}
