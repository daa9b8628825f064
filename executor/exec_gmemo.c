/* Device grids kept across passes (executor/exec_gmemo.h). */
#include "executor/exec_gmemo.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"

typedef struct entry {
  int64_t id;
  orion_gpugrid_in in; /* keys NULL, nelems 0 */
  int ndims, sparse;
  int64_t dims[ORION_MAX_DIMS], nnz;
  orion_segment *segs;
  int64_t nsegs;
  int64_t *keys; /* sparse: the block's keys, nel * ndims */
  size_t bytes;
  uint64_t used; /* the tick of its last use */
  orion_gmemo_grid g;
} entry;

struct orion_gmemo {
  entry *e[ORION_GMEMO_ENTRIES];
  int n;
  entry *pending; /* the last one returned that was not kept */
  uint64_t tick, serial;
  size_t bytes, cap;
};

static void entry_free(entry *e) {
  if (e == NULL)
    return;
  orion_gpugrid_free(&e->g.grid);
  orion_free(e->g.order);
  orion_free(e->segs);
  orion_free(e->keys);
  orion_free(e);
}

static void drop(orion_gmemo *m, int i) {
  m->bytes -= m->e[i]->bytes;
  entry_free(m->e[i]);
  m->e[i] = m->e[--m->n];
}

/* Same grid input, ignoring the keys. */
static int same_in(const orion_gpugrid_in *x, const orion_gpugrid_in *y) {
  return x->kind == y->kind && x->ndims == y->ndims && x->space == y->space &&
         x->time == y->time && x->skew_dim == y->skew_dim &&
         x->skew == y->skew && x->b == y->b && x->rows == y->rows;
}

/* Is entry e of this block of array id, for this grid input (whatever
 * the keys)? */
static int same_block(const entry *e, int64_t id, const orion_segment *segs,
                      int64_t nsegs, const orion_gpugrid_in *in) {
  int64_t k;
  if (e->id != id || e->nsegs != nsegs || !same_in(&e->in, in))
    return 0;
  for (k = 0; k < nsegs; k++)
    if (e->segs[k].lo != segs[k].lo || e->segs[k].hi != segs[k].hi)
      return 0;
  return 1;
}

/* Does entry e hold this block of a, with its keys as they are now? */
static int matches(const entry *e, int64_t id, const orion_array *a,
                   const orion_segment *segs, int64_t nsegs,
                   const orion_gpugrid_in *in) {
  int64_t k, off = 0;
  int d;
  if (!same_block(e, id, segs, nsegs, in) || e->ndims != a->ndims ||
      e->sparse != a->sparse || e->nnz != a->nnz)
    return 0;
  for (d = 0; d < a->ndims; d++)
    if (e->dims[d] != a->dims[d])
      return 0;
  if (!a->sparse)
    return 1; /* the keys follow from the shape */
  for (k = 0; k < nsegs; k++) {
    size_t n = (size_t)(segs[k].hi - segs[k].lo) * (size_t)a->ndims;
    if (n > 0 && memcmp(e->keys + off, a->keys + segs[k].lo * a->ndims,
                        n * sizeof(int64_t)) != 0)
      return 0;
    off += (int64_t)n;
  }
  return 1;
}

/* The block's positions and keys, in block order. */
static int block_elements(const orion_array *a, const orion_segment *segs,
                          int64_t nsegs, int64_t **pos, int64_t **keys,
                          int64_t *n) {
  int64_t k, p, i = 0, total = 0;
  int d;
  for (k = 0; k < nsegs; k++)
    total += segs[k].hi - segs[k].lo;
  *pos = orion_malloc(sizeof **pos * (size_t)(total + 1));
  *keys = orion_malloc(sizeof **keys * (size_t)(total * a->ndims + 1));
  if (*pos == NULL || *keys == NULL)
    return ORION_ENOMEM;
  for (k = 0; k < nsegs; k++) {
    if (a->sparse && segs[k].hi > segs[k].lo)
      memcpy(*keys + i * a->ndims, a->keys + segs[k].lo * a->ndims,
             sizeof **keys * (size_t)((segs[k].hi - segs[k].lo) * a->ndims));
    for (p = segs[k].lo; p < segs[k].hi; p++, i++) {
      (*pos)[i] = p;
      if (!a->sparse)
        for (d = 0; d < a->ndims; d++)
          (*keys)[i * a->ndims + d] = (p / a->strides[d]) % a->dims[d];
    }
  }
  *n = total;
  return 0;
}

/* ORION_GPU_GRID_CACHE (bytes, or with M or G), else a quarter of the
 * host's memory, at least 1 GiB: a grid takes about 32 bytes an element,
 * beside the array's own 24 or more, and a pass over more blocks than
 * the cache holds finds none of them (each is dropped before its turn
 * comes again). */
static size_t cap_of(void) {
  const char *s = getenv("ORION_GPU_GRID_CACHE");
  char *end;
  unsigned long long v;
  if (s == NULL || *s == '\0') {
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    unsigned long long q =
        pages > 0 && ps > 0 ? (unsigned long long)pages * (unsigned long long)ps / 4
                            : 0;
    return (size_t)(q > (1ull << 30) ? q : 1ull << 30);
  }
  v = strtoull(s, &end, 10);
  if (*end == 'M' || *end == 'm')
    v <<= 20;
  else if (*end == 'G' || *end == 'g')
    v <<= 30;
  return (size_t)v;
}

/* The entry's grid and order, built from the block's keys. */
static int build(entry *e, const orion_array *a, const orion_segment *segs,
                 int64_t nsegs, const orion_gpugrid_in *in,
                 orion_error *err) {
  int64_t *pos = NULL, *keys = NULL, i;
  orion_gpugrid_in gi = *in;
  int d, rc = block_elements(a, segs, nsegs, &pos, &keys, &e->g.nel);
  if (rc != 0) {
    orion_free(pos);
    orion_free(keys);
    return orion_error_set(err, ORION_ENOMEM,
                           "out of memory for the device grid");
  }
  for (d = 0; d < a->ndims; d++) {
    e->g.klo[d] = INT64_MAX;
    e->g.khi[d] = INT64_MIN;
  }
  for (i = 0; i < e->g.nel; i++)
    for (d = 0; d < a->ndims; d++) {
      int64_t k = keys[i * a->ndims + d];
      e->g.klo[d] = k < e->g.klo[d] ? k : e->g.klo[d];
      e->g.khi[d] = k > e->g.khi[d] ? k : e->g.khi[d];
    }
  if (e->g.nel > 0) {
    gi.ndims = a->ndims;
    gi.nelems = e->g.nel;
    gi.keys = keys;
    rc = orion_gpugrid_build(&gi, &e->g.grid, err);
    if (rc == 0) {
      e->g.order = orion_malloc(sizeof *e->g.order * (size_t)(e->g.nel + 1));
      if (e->g.order == NULL)
        rc = orion_error_set(err, ORION_ENOMEM,
                             "out of memory for the device grid");
    }
    for (i = 0; rc == 0 && i < e->g.nel; i++)
      e->g.order[i] = pos[e->g.grid.order[i]];
  }
  orion_free(pos);
  if (a->sparse && rc == 0)
    e->keys = keys; /* kept, to check the block against */
  else
    orion_free(keys);
  return rc;
}

int orion_gmemo_get(orion_gmemo **mp, int64_t id, const orion_array *a,
                    const orion_segment *segs, int64_t nsegs,
                    const orion_gpugrid_in *in, orion_gmemo_grid **out,
                    int *hit, orion_error *err) {
  orion_gmemo *m = *mp;
  entry *e;
  int i, rc, d;
  *out = NULL;
  *hit = 0;
  if (m == NULL) {
    m = *mp = orion_calloc(1, sizeof *m);
    if (m == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    m->cap = cap_of();
  }
  entry_free(m->pending);
  m->pending = NULL;
  m->tick++;
  for (i = 0; i < m->n; i++)
    if (matches(m->e[i], id, a, segs, nsegs, in)) {
      m->e[i]->used = m->tick;
      *out = &m->e[i]->g;
      *hit = 1;
      return 0;
    }
  /* An entry of this block that did not match is stale: its keys
   * changed. */
  for (i = 0; i < m->n; i++)
    if (same_block(m->e[i], id, segs, nsegs, in))
      drop(m, i--);
  e = orion_calloc(1, sizeof *e);
  if (e == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  e->id = id;
  e->g.serial = ++m->serial;
  e->in = *in;
  e->in.keys = NULL;
  e->in.nelems = 0;
  e->ndims = a->ndims;
  e->sparse = a->sparse;
  e->nnz = a->nnz;
  for (d = 0; d < a->ndims; d++)
    e->dims[d] = a->dims[d];
  e->nsegs = nsegs;
  e->segs = orion_malloc(sizeof *e->segs * (size_t)(nsegs + 1));
  if (e->segs == NULL) {
    entry_free(e);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  memcpy(e->segs, segs, sizeof *segs * (size_t)nsegs);
  rc = build(e, a, segs, nsegs, in, err);
  if (rc != 0) {
    entry_free(e);
    return rc;
  }
  e->bytes = sizeof *e + sizeof *e->segs * (size_t)nsegs +
             sizeof(int64_t) * (size_t)e->g.nel *
                 (2 + (size_t)(a->sparse ? a->ndims : 0)) +
             sizeof(int64_t) * (size_t)(e->g.grid.ngroups + 1) * 4 +
             sizeof(int64_t) * (size_t)(e->g.grid.nsteps + 1);
  e->used = m->tick;
  /* Kept when it fits, the least recently used dropped for it.  An
   * entry that is not kept is still returned: the caller holds it until
   * its next call (the pending slot). */
  while (m->n > 0 && e->g.nel > 0 && e->bytes <= m->cap &&
         (m->n == ORION_GMEMO_ENTRIES || m->bytes + e->bytes > m->cap)) {
    int old = 0;
    for (i = 1; i < m->n; i++)
      if (m->e[i]->used < m->e[old]->used)
        old = i;
    drop(m, old);
  }
  if (e->g.nel > 0 && e->bytes <= m->cap) {
    m->e[m->n++] = e;
    m->bytes += e->bytes;
  } else {
    m->pending = e;
  }
  *out = &e->g;
  return 0;
}

/* Do two lists of segments meet? */
static int meet(const orion_segment *a, int64_t na, const orion_segment *b,
                int64_t nb) {
  int64_t i, j;
  for (i = 0; i < na; i++)
    for (j = 0; j < nb; j++)
      if (a[i].lo < b[j].hi && b[j].lo < a[i].hi)
        return 1;
  return 0;
}

void orion_gmemo_dev_lost(orion_gmemo *m, int64_t id) {
  int i;
  if (m == NULL)
    return;
  for (i = 0; i < m->n; i++)
    if (m->e[i]->id == id)
      m->e[i]->g.dev_keys = 0;
  if (m->pending != NULL && m->pending->id == id)
    m->pending->g.dev_keys = 0;
}

void orion_gmemo_dev_wrote(orion_gmemo *m, int64_t id,
                           orion_gmemo_grid *g) {
  entry *w = NULL;
  int i;
  if (m == NULL)
    return;
  for (i = 0; i < m->n; i++)
    if (&m->e[i]->g == g)
      w = m->e[i];
  if (w == NULL && m->pending != NULL && &m->pending->g == g)
    w = m->pending;
  if (w == NULL)
    return;
  for (i = 0; i < m->n; i++)
    if (m->e[i] != w && m->e[i]->id == id &&
        meet(m->e[i]->segs, m->e[i]->nsegs, w->segs, w->nsegs))
      m->e[i]->g.dev_keys = 0;
  w->g.dev_keys = 1;
}

int orion_gmemo_count(const orion_gmemo *m, size_t *bytes) {
  if (bytes != NULL)
    *bytes = m != NULL ? m->bytes : 0;
  return m != NULL ? m->n : 0;
}

void orion_gmemo_free(orion_gmemo *m) {
  int i;
  if (m == NULL)
    return;
  for (i = 0; i < m->n; i++)
    entry_free(m->e[i]);
  entry_free(m->pending);
  orion_free(m);
}
