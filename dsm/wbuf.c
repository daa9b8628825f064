/* The buffered-write store (dsm/wbuf.h): a buffer's pending writes in a
 * dense or hashed form, taken out in key order, and the write-back of the
 * "add" and "replace" operators. */
#include "dsm/wbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/types.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/error.h"

typedef orion_pend_value pval;
typedef orion_wbuf pending;

/* Targets up to this many elements keep the dense form from the first
 * write (a compiled body reaches it inline, util/cbody.h): its values are
 * calloc'd, so pages nothing wrote cost address space only.  2^23: the
 * word-topic counts of 20 Newsgroups at K=100 (about 2 million) and of
 * KOS at K=1000 (6.9 million) are dense; past it, a hashed store. */
#define DENSE_MAX_POSITIONS ((int64_t)1 << 23)
#define HASH_MIN_CAP 64

void orion_wbuf_init(orion_wbuf *w, int64_t positions) {
  memset(w, 0, sizeof *w);
  w->positions = positions;
}

void orion_wbuf_free(orion_wbuf *p) {
  orion_free(p->vals);
  orion_free(p->bits);
  orion_free(p->hkeys);
  orion_free(p->hvals);
  orion_free(p->dirty);
  orion_free(p->fvals);
  p->fvals = NULL;
  p->f32 = 0;
  p->vals = p->hvals = NULL;
  p->bits = NULL;
  p->hkeys = p->dirty = NULL;
  p->hcap = p->ndirty = p->capdirty = 0;
}

int64_t orion_wbuf_pending(const orion_wbuf *w) { return w->ndirty; }

static int push_dirty(pending *p, int64_t x) {
  if (p->ndirty == p->capdirty) {
    int64_t cap = p->capdirty ? 2 * p->capdirty : 16;
    int64_t *nd = orion_realloc(p->dirty, sizeof *nd * (size_t)cap);
    if (nd == NULL)
      return ORION_ENOMEM;
    p->dirty = nd;
    p->capdirty = cap;
  }
  p->dirty[p->ndirty++] = x;
  return 0;
}

/* Dense form: marks key pending.  The key list is kept only while it is
 * short (orion_wbuf_take sorts it then); from positions / 512 keys on, the
 * bitmap alone yields them, and only the count goes on. */
static int dense_mark(pending *p, int64_t key) {
  uint64_t bit = (uint64_t)1 << (key & 63);
  if (p->bits[key >> 6] & bit)
    return 0;
  p->bits[key >> 6] |= bit;
  if (p->ndirty >= p->positions / 512) {
    p->ndirty++;
    return 0;
  }
  if (push_dirty(p, key) != 0) {
    p->bits[key >> 6] &= ~bit;
    return ORION_ENOMEM;
  }
  return 0;
}

static int64_t hash_home(const pending *p, int64_t key) {
  return (int64_t)(orion_hash_mix((uint64_t)key) & (uint64_t)(p->hcap - 1));
}

/* The slot holding key, or the empty slot where it would go. */
static int64_t hash_find(const pending *p, int64_t key) {
  int64_t s = hash_home(p, key);
  while (p->hkeys[s] != -1 && p->hkeys[s] != key)
    s = (s + 1) & (p->hcap - 1);
  return s;
}

/* Rehashes into cap slots; the dirty list follows the entries. */
static int hash_resize(pending *p, int64_t cap) {
  pending np = *p;
  int64_t i;
  np.hkeys = orion_malloc(sizeof *np.hkeys * (size_t)cap);
  np.hvals = orion_malloc(sizeof *np.hvals * (size_t)cap);
  if (np.hkeys == NULL || np.hvals == NULL) {
    orion_free(np.hkeys);
    orion_free(np.hvals);
    return ORION_ENOMEM;
  }
  memset(np.hkeys, 0xff, sizeof *np.hkeys * (size_t)cap); /* all -1 */
  np.hcap = cap;
  for (i = 0; i < p->ndirty; i++) {
    int64_t old = p->dirty[i], s = hash_find(&np, p->hkeys[old]);
    np.hkeys[s] = p->hkeys[old];
    np.hvals[s] = p->hvals[old];
    p->dirty[i] = s;
  }
  orion_free(p->hkeys);
  orion_free(p->hvals);
  p->hkeys = np.hkeys;
  p->hvals = np.hvals;
  p->hcap = cap;
  return 0;
}

static int dense_alloc(pending *p) {
  p->vals = orion_calloc((size_t)p->positions, sizeof *p->vals);
  p->bits = orion_calloc(((size_t)p->positions + 63) / 64, sizeof *p->bits);
  if (p->vals == NULL || p->bits == NULL) {
    orion_free(p->vals);
    orion_free(p->bits);
    p->vals = NULL;
    p->bits = NULL;
    return ORION_ENOMEM;
  }
  return 0;
}

/* Moves a hash table's entries into the dense form (keeps the hash on
 * failure: it still works). */
static void hash_to_dense(pending *p) {
  int64_t i;
  if (dense_alloc(p) != 0)
    return;
  for (i = 0; i < p->ndirty; i++) {
    int64_t s = p->dirty[i], k = p->hkeys[s];
    p->vals[k] = p->hvals[s];
    p->bits[k >> 6] |= (uint64_t)1 << (k & 63);
    p->dirty[i] = k;
  }
  orion_free(p->hkeys);
  orion_free(p->hvals);
  p->hkeys = NULL;
  p->hvals = NULL;
  p->hcap = 0;
}

/* A float's bits: not all zero is pending (-0.0 too, as in vals). */
static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Leaves the f32 form: its floats go back into vals as doubles, unmarked
 * (the scan store's form: vals were left zero when the floats took them).
 * A float -0.0 becomes a double -0.0, pending by its bits, as a -0.0 the
 * body stored as a double would be. */
static void settle(pending *p) {
  int64_t k;
  if (!p->f32)
    return;
  for (k = 0; k < p->positions; k++) {
    if (fbits(p->fvals[k]) != 0)
      p->vals[k].d = (double)p->fvals[k];
    p->fvals[k] = 0.0f;
  }
  p->f32 = 0;
}

int orion_wbuf_f32_view(orion_wbuf *p, float **fvals) {
  int64_t k;
  *fvals = NULL;
  if (p->f32) {
    *fvals = p->fvals;
    return 0;
  }
  if (p->vals == NULL) {
    if (p->hkeys != NULL || p->positions > DENSE_MAX_POSITIONS)
      return 0; /* hashed: no f32 form */
    if (dense_alloc(p) != 0)
      return ORION_ENOMEM;
  }
  if (p->fvals == NULL) {
    p->fvals = orion_calloc((size_t)p->positions, sizeof *p->fvals);
    if (p->fvals == NULL)
      return ORION_ENOMEM;
  }
  /* The pending values (marked or not) move to the floats; a marked 0
   * is dropped, which an "add" store (the one kind with an f32 form)
   * never misses. */
  for (k = 0; k < p->positions; k++) {
    p->fvals[k] = (float)p->vals[k].d;
    p->vals[k].i = 0;
  }
  memset(p->bits, 0, ((size_t)p->positions + 63) / 64 * sizeof *p->bits);
  p->ndirty = 0;
  p->f32 = 1;
  *fvals = p->fvals;
  return 0;
}

orion_pend_value *orion_wbuf_f32_dense(orion_wbuf *p) {
  return p->f32 ? p->vals : NULL;
}

const orion_pend_value *orion_wbuf_lookup(const orion_wbuf *p, int64_t key) {
  /* Folding the floats back changes no pending value, only its form. */
  settle((pending *)p);
  if (p->vals != NULL)
    return &p->vals[key]; /* zero when clean */
  if (p->hkeys != NULL) {
    int64_t s = hash_find(p, key);
    return p->hkeys[s] == key ? &p->hvals[s] : NULL;
  }
  return NULL;
}

orion_pend_value *orion_wbuf_slot(orion_wbuf *p, int64_t key) {
  settle(p);
  if (p->vals == NULL && p->hkeys == NULL) {
    if (p->positions <= DENSE_MAX_POSITIONS) {
      if (dense_alloc(p) != 0)
        return NULL;
    } else if (hash_resize(p, HASH_MIN_CAP) != 0) {
      return NULL;
    }
  }
  if (p->vals != NULL)
    return dense_mark(p, key) == 0 ? &p->vals[key] : NULL;
  {
    int64_t s = hash_find(p, key);
    if (p->hkeys[s] == key)
      return &p->hvals[s];
    if (2 * (p->ndirty + 1) > p->hcap) {
      if (4 * (p->ndirty + 1) >= p->positions) {
        hash_to_dense(p);
        if (p->vals != NULL)
          return orion_wbuf_slot(p, key);
      }
      if (hash_resize(p, 2 * p->hcap) != 0)
        return NULL;
      s = hash_find(p, key);
    }
    if (push_dirty(p, s) != 0)
      return NULL;
    p->hkeys[s] = key;
    p->hvals[s].i = 0;
    return &p->hvals[s];
  }
}

int orion_wbuf_dense_view(orion_wbuf *p, orion_pend_value **vals,
                          uint64_t **bits, int64_t **dirty, int64_t **ndirty,
                          int64_t *dirty_max) {
  int64_t lim = p->positions / 512;
  settle(p);
  *vals = NULL;
  *bits = NULL;
  *dirty = NULL;
  *ndirty = &p->ndirty;
  *dirty_max = lim;
  if (p->vals == NULL) {
    if (p->hkeys != NULL || p->positions > DENSE_MAX_POSITIONS)
      return 0; /* hashed: the caller goes through orion_wbuf_slot */
    if (dense_alloc(p) != 0)
      return ORION_ENOMEM;
  }
  if (p->capdirty < lim) { /* room for every key dense_mark may list */
    int64_t *nd = orion_realloc(p->dirty, sizeof *nd * (size_t)lim);
    if (nd == NULL)
      return ORION_ENOMEM;
    p->dirty = nd;
    p->capdirty = lim;
  }
  *vals = p->vals;
  *bits = p->bits;
  *dirty = p->dirty;
  return 0;
}

int orion_wbuf_absorb(orion_wbuf *p) {
  int64_t w, nw;
  settle(p);
  if (p->vals == NULL)
    return 0;
  nw = (p->positions + 63) / 64;
  for (w = 0; w < nw; w++) {
    const pval *v = p->vals + w * 64;
    int64_t b, nb = p->positions - w * 64 < 64 ? p->positions - w * 64 : 64;
    uint64_t m = 0;
    if (p->bits[w] == ~(uint64_t)0)
      continue; /* all pending already */
    for (b = 0; b < nb; b++)
      m |= (uint64_t)(v[b].i != 0) << b;
    m &= ~p->bits[w];
    if (m != 0 && p->ndirty >= p->positions / 512) {
      /* Past the key list: dense_mark only sets the bits and counts. */
      p->bits[w] |= m;
      p->ndirty += __builtin_popcountll(m);
      continue;
    }
    while (m) {
      if (dense_mark(p, w * 64 + __builtin_ctzll(m)) != 0)
        return ORION_ENOMEM;
      m &= m - 1;
    }
  }
  return 0;
}

int orion_wbuf_add_scaled(orion_wbuf *p, int64_t k0, const float *x,
                          const float *x0, int64_t n, double alpha,
                          int set_mode) {
  int64_t i;
  settle(p);
  if (n > 0 && p->vals == NULL && p->hkeys == NULL) {
    /* Large bulk writes go to the dense form at once. */
    if (n >= p->positions / 4 && dense_alloc(p) != 0)
      return ORION_ENOMEM;
  }
  if (p->vals != NULL) { /* dense: mark the bits, then the values */
    for (i = 0; i < n; i++)
      if (dense_mark(p, k0 + i) != 0)
        return ORION_ENOMEM;
    for (i = 0; i < n; i++) {
      double xi = x0 != NULL ? (double)x[i] - (double)x0[i] : (double)x[i];
      pval *slot = &p->vals[k0 + i];
      slot->d = set_mode ? xi : slot->d + alpha * xi;
    }
    return 0;
  }
  for (i = 0; i < n; i++) {
    pval *slot = orion_wbuf_slot(p, k0 + i);
    double xi;
    if (slot == NULL)
      return ORION_ENOMEM;
    xi = x0 != NULL ? (double)x[i] - (double)x0[i] : (double)x[i];
    slot->d = set_mode ? xi : slot->d + alpha * xi;
  }
  return 0;
}

static int cmp_key(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

int orion_wbuf_take(orion_wbuf *p, orion_pend_item **items, int64_t *n) {
  orion_pend_item *it;
  int64_t i, j = 0;
  settle(p);
  *items = NULL;
  *n = 0;
  if (p->ndirty == 0)
    return 0;
  it = orion_malloc(sizeof *it * (size_t)p->ndirty);
  if (it == NULL)
    return ORION_ENOMEM;
  if (p->vals != NULL && p->ndirty >= p->positions / 512) {
    /* Many dirty elements: the bitmap yields them in order. */
    int64_t w, nw = (p->positions + 63) / 64;
    for (w = 0; w < nw; w++) {
      uint64_t bits = p->bits[w];
      while (bits) {
        int64_t k = w * 64 + __builtin_ctzll(bits);
        it[j].key = k;
        it[j++].val = p->vals[k];
        p->vals[k].i = 0;
        bits &= bits - 1;
      }
      p->bits[w] = 0;
    }
  } else if (p->vals != NULL) { /* dense_mark kept every key */
    qsort(p->dirty, (size_t)p->ndirty, sizeof *p->dirty, cmp_key);
    for (i = 0; i < p->ndirty; i++) {
      int64_t k = p->dirty[i];
      it[j].key = k;
      it[j++].val = p->vals[k];
      p->vals[k].i = 0;
      p->bits[k >> 6] = 0;
    }
  } else {
    for (i = 0; i < p->ndirty; i++) {
      int64_t s = p->dirty[i];
      it[j].key = p->hkeys[s];
      it[j++].val = p->hvals[s];
      p->hkeys[s] = -1;
    }
    /* key is the first member: sorting by it sorts the items. */
    qsort(it, (size_t)j, sizeof *it, cmp_key);
  }
  p->ndirty = 0;
  *items = it;
  *n = j;
  return 0;
}

/* A word's pending bits in a scan store: marked, or holding a value. */
static uint64_t scan_word(const orion_wbuf *p, int64_t w) {
  const pval *v = p->vals + w * 64;
  int64_t b, nb = p->positions - w * 64 < 64 ? p->positions - w * 64 : 64;
  uint64_t m = 0;
  for (b = 0; b < nb; b++)
    m |= (uint64_t)(v[b].i != 0) << b;
  return m | p->bits[w];
}

/* orion_wbuf_take_scan of a store in the f32 form: the floats' values, in
 * key order, as doubles times scale (the bits settle then take_scan give);
 * the floats are left zero and the store stays in the form, so that the
 * body that took it runs on without moving values in again. */
static int take_f32(pending *p, double scale, orion_pend_item **items,
                    int64_t *n) {
  orion_pend_item *it;
  int64_t k, j = 0, count = 0;
  for (k = 0; k < p->positions; k++)
    count += fbits(p->fvals[k]) != 0;
  if (count == 0)
    return 0;
  it = orion_malloc(sizeof *it * (size_t)count);
  if (it == NULL)
    return ORION_ENOMEM;
  for (k = 0; k < p->positions; k++) {
    if (fbits(p->fvals[k]) == 0)
      continue;
    it[j].key = k;
    it[j++].val.d = (double)p->fvals[k] * scale;
    p->fvals[k] = 0.0f;
  }
  *items = it;
  *n = j;
  return 0;
}

int orion_wbuf_take_scan(orion_wbuf *p, int isint, double scale,
                         orion_pend_item **items, int64_t *n) {
  orion_pend_item *it;
  int64_t w, nw, j = 0, count = 0;
  int rc;
  if (p->f32 && !isint) {
    *items = NULL;
    *n = 0;
    return take_f32(p, scale, items, n);
  }
  settle(p);
  if (p->vals == NULL) {
    int64_t i;
    rc = orion_wbuf_take(p, items, n);
    if (rc == 0 && !isint && scale != 1.0)
      for (i = 0; i < *n; i++)
        (*items)[i].val.d *= scale;
    return rc;
  }
  *items = NULL;
  *n = 0;
  nw = (p->positions + 63) / 64;
  for (w = 0; w < nw; w++)
    count += __builtin_popcountll(scan_word(p, w));
  if (count == 0) {
    p->ndirty = 0;
    return 0;
  }
  it = orion_malloc(sizeof *it * (size_t)count);
  if (it == NULL)
    return ORION_ENOMEM;
  for (w = 0; w < nw; w++) {
    uint64_t bits = scan_word(p, w);
    while (bits) {
      int64_t k = w * 64 + __builtin_ctzll(bits);
      it[j].key = k;
      it[j].val = p->vals[k];
      if (!isint)
        it[j].val.d *= scale;
      j++;
      p->vals[k].i = 0;
      bits &= bits - 1;
    }
    p->bits[w] = 0;
  }
  p->ndirty = 0;
  *items = it;
  *n = j;
  return 0;
}

int orion_wbuf_apply(orion_array *target, orion_apply_op op,
                     const orion_pend_item *items, int64_t n, int64_t *failed,
                     int64_t *value) {
  int64_t i;
  if (op != ORION_APPLY_ADD && op != ORION_APPLY_REPLACE)
    return ORION_EINVAL;
  if (target->type == ORION_F64) {
    double *t = (double *)target->values;
    for (i = 0; i < n; i++)
      t[items[i].key] = op == ORION_APPLY_ADD ? items[i].val.d + t[items[i].key]
                                              : items[i].val.d;
    return 0;
  }
  if (target->type == ORION_F32) {
    float *t = (float *)target->values;
    for (i = 0; i < n; i++)
      t[items[i].key] = (float)(op == ORION_APPLY_ADD
                                    ? items[i].val.d + (double)t[items[i].key]
                                    : items[i].val.d);
    return 0;
  }
  for (i = 0; i < n; i++) {
    int64_t k = items[i].key, x = items[i].val.i;
    if (op == ORION_APPLY_ADD) /* wraps like Lua integers */
      x = (int64_t)((uint64_t)orion_value_get_i64(target->values, target->type,
                                                  k) +
                    (uint64_t)items[i].val.i);
    if (target->type == ORION_I32 && (x < INT32_MIN || x > INT32_MAX)) {
      *failed = i;
      *value = x;
      return -ERANGE;
    }
    orion_value_set_i64(target->values, target->type, k, x);
  }
  return 0;
}

/* ---- managed flushes ---------------------------------------------------- */

typedef struct ranked {
  double mag;
  int64_t at; /* index into the taken items (key order) */
} ranked;

static int by_magnitude(const void *x, const void *y) {
  const ranked *a = x, *b = y;
  if (a->mag != b->mag)
    return a->mag > b->mag ? -1 : 1;
  return (a->at > b->at) - (a->at < b->at); /* the lower key first */
}

static double magnitude(const pval *v, int isint) {
  if (isint) /* as a double: INT64_MIN has no positive int64 */
    return v->i < 0 ? -(double)v->i : (double)v->i;
  return v->d < 0 ? -v->d : v->d;
}

int orion_wbuf_take_largest(orion_wbuf *p, int isint, int64_t max,
                            orion_pend_item **sent, int64_t *nsent,
                            orion_pend_item **rest, int64_t *nrest) {
  orion_pend_item *all, *s = NULL, *r = NULL;
  ranked *rk = NULL;
  unsigned char *pick = NULL;
  int64_t n, i, ns = 0, nr = 0;
  settle(p);
  *sent = *rest = NULL;
  *nsent = *nrest = 0;
  if (p->ndirty == 0)
    return 0;
  if (max >= p->ndirty) /* everything goes */
    return orion_wbuf_take(p, sent, nsent);
  if (max < 0)
    max = 0;
  /* Allocate everything first, so that a failure changes nothing. */
  rk = orion_malloc(sizeof *rk * (size_t)p->ndirty);
  pick = orion_calloc((size_t)p->ndirty, 1);
  s = orion_malloc(sizeof *s * (size_t)p->ndirty);
  r = orion_malloc(sizeof *r * (size_t)(p->ndirty - max));
  if (rk == NULL || pick == NULL || s == NULL || r == NULL ||
      orion_wbuf_take(p, &all, &n) != 0) {
    orion_free(rk);
    orion_free(pick);
    orion_free(s);
    orion_free(r);
    return ORION_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    rk[i].mag = magnitude(&all[i].val, isint);
    rk[i].at = i;
  }
  qsort(rk, (size_t)n, sizeof *rk, by_magnitude);
  for (i = 0; i < max; i++)
    pick[rk[i].at] = 1;
  for (i = 0; i < n; i++) {
    if (pick[i])
      s[ns++] = all[i];
    else
      r[nr++] = all[i];
  }
  /* The rest become pending again.  The store kept its storage, so a
   * slot should not need memory; one that cannot get it is sent now
   * rather than lost (sorted again then, to stay in key order). */
  {
    int64_t kept = 0, moved = 0;
    for (i = 0; i < nr; i++) {
      pval *slot = orion_wbuf_slot(p, r[i].key);
      if (slot != NULL) {
        *slot = r[i].val;
        r[kept++] = r[i];
      } else {
        s[ns++] = r[i];
        moved++;
      }
    }
    nr = kept;
    if (moved > 0)
      qsort(s, (size_t)ns, sizeof *s, cmp_key);
  }
  orion_free(all);
  orion_free(rk);
  orion_free(pick);
  if (ns == 0) {
    orion_free(s);
    s = NULL;
  }
  if (nr == 0) {
    orion_free(r);
    r = NULL;
  }
  *sent = s;
  *nsent = ns;
  *rest = r;
  *nrest = nr;
  return 0;
}
