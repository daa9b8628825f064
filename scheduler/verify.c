/* orion-driver --verify's driver side (scheduler/verify.h).
 *
 * The rule (docs/analysis.md, "orion-driver --verify"): block B waits for
 * block A when A comes before it along B's space part or its time part,
 * or transitively so (scheduler/schedule.h's after_p and after_q); two
 * blocks neither of which waits for the other may run concurrently.  Two
 * accesses of one key from different blocks conflict when their blocks
 * may run concurrently and one writes while the other reads it (in an
 * ordered loop, or writes it: two stores alone are no dependence of an
 * unordered loop, as the analysis has it), and, in an ordered loop, also
 * when the block that runs first has its access, one of the two a write,
 * at an element that comes later in key order.  The check sweeps each written array's
 * ranges in key order and reports the first conflict (smallest array id,
 * then key, then block in the schedule's order), so that the message is
 * the same on any number of executors. */
#include "scheduler/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "dsm/key.h"
#include "scheduler/module.h"
#include "util/alloc.h"

int orion__verify_init(orion_verify *v, int nblocks, int mode,
                       orion_error *err) {
  memset(v, 0, sizeof *v);
  if (nblocks > ORION_VERIFY_MAX_BLOCKS)
    return orion_error_set(err, ORION_EINVAL,
                           "orion-driver --verify: the loop has %d blocks; "
                           "the check takes at most %d (ask for fewer "
                           "partitions)",
                           nblocks, ORION_VERIFY_MAX_BLOCKS);
  v->mode = mode;
  v->nblocks = nblocks;
  v->b = orion_calloc((size_t)nblocks + 1, sizeof *v->b);
  if (v->b == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  return 0;
}

void orion__verify_free(orion_verify *v) {
  int i;
  for (i = 0; v->b != NULL && i < v->nblocks; i++)
    orion_free(v->b[i].v);
  orion_free(v->b);
  orion_free(v->src);
  memset(v, 0, sizeof *v);
}

/* The index of source s in v's table (added when new), or -1. */
static int intern(orion_verify *v, const orion_msg_keysrc *s) {
  int i;
  for (i = 0; i < v->nsrc; i++)
    if (strlen(v->src[i]) == s->len && memcmp(v->src[i], s->s, s->len) == 0)
      return i;
  if (v->nsrc == v->capsrc) {
    int cap = v->capsrc > 0 ? 2 * v->capsrc : 8;
    void *nv = orion_realloc(v->src, sizeof *v->src * (size_t)cap);
    if (nv == NULL)
      return -1;
    v->src = nv;
    v->capsrc = cap;
  }
  memcpy(v->src[v->nsrc], s->s, s->len);
  v->src[v->nsrc][s->len] = '\0';
  return v->nsrc++;
}

int orion__verify_add(orion_verify *v, int64_t block,
                      const orion_msg_key_range *r, int64_t n,
                      const orion_msg_keysrc *srcs, int64_t nsrcs) {
  orion_verify_block *b;
  int map[64];
  int64_t k;
  if (block < 0 || block >= v->nblocks || nsrcs > 64)
    return ORION_EINVAL;
  for (k = 0; k < nsrcs; k++)
    if ((map[k] = intern(v, &srcs[k])) < 0)
      return ORION_ENOMEM;
  b = &v->b[block];
  if (b->n + n > b->cap) {
    int64_t cap = b->n + n + b->cap;
    orion_msg_key_range *nv = orion_realloc(b->v, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    b->v = nv;
    b->cap = cap;
  }
  for (k = 0; k < n; k++) {
    orion_msg_key_range x = r[k];
    if ((x.rline > 0 && x.rsrc >= nsrcs) || (x.wline > 0 && x.wsrc >= nsrcs))
      return ORION_EINVAL;
    x.rsrc = x.rline > 0 ? map[x.rsrc] : 0;
    x.wsrc = x.wline > 0 ? map[x.wsrc] : 0;
    b->v[b->n++] = x;
  }
  return 0;
}

/* ----------------------------------------------------------------------
 * The check.
 * -------------------------------------------------------------------- */

typedef struct item {
  const orion_msg_key_range *r;
  int block, pos; /* block id, its position in the schedule's order */
} item;

typedef struct checker {
  lua_State *L;
  const orion_verify *v;
  const orion_schedule *s;
  const struct orion_plan *plan;
  uint64_t *anc; /* per position: the positions it waits for (bits) */
  size_t words;
} checker;

static int by_lo(const void *pa, const void *pb) {
  const item *a = pa, *b = pb;
  if (a->r->lo != b->r->lo)
    return a->r->lo < b->r->lo ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int waits_for(const checker *c, int p, int q) {
  return (c->anc[(size_t)p * c->words + (size_t)q / 64] >> (q % 64)) & 1;
}

/* anc[p] = the positions p waits for, transitively.  Each block waits
 * only for blocks before it in the order, so one pass does. */
static int ancestors(checker *c) {
  const orion_schedule *s = c->s;
  int p, w;
  c->words = ((size_t)s->nblocks + 63) / 64;
  c->anc = orion_calloc((size_t)s->nblocks * c->words + 1, sizeof *c->anc);
  if (c->anc == NULL)
    return ORION_ENOMEM;
  for (p = 0; p < s->nblocks; p++) {
    int dep[2], i;
    uint64_t *me = c->anc + (size_t)p * c->words;
    dep[0] = s->after_p[p];
    dep[1] = s->after_q[p];
    for (i = 0; i < 2; i++) {
      const uint64_t *them;
      if (dep[i] < 0)
        continue;
      if (dep[i] >= p)
        return ORION_EINVAL; /* not the schedules this check knows */
      them = c->anc + (size_t)dep[i] * c->words;
      for (w = 0; w < (int)c->words; w++)
        me[w] |= them[w];
      me[dep[i] / 64] |= (uint64_t)1 << (dep[i] % 64);
    }
  }
  return 0;
}

/* Whether, in an ordered loop where block a runs before block b, some
 * access of a at a later element than one of b's conflicts. */
static int out_of_order(const orion_msg_key_range *a,
                        const orion_msg_key_range *b, int *aw, int *bw) {
  int64_t bfirst = INT64_MAX;
  if (b->flags & ORION_KEY_READ)
    bfirst = b->rfirst;
  if ((b->flags & ORION_KEY_WRITE) && b->wfirst < bfirst)
    bfirst = b->wfirst;
  if ((a->flags & ORION_KEY_WRITE) && a->wlast > bfirst) {
    *aw = 1;
    *bw = (b->flags & ORION_KEY_WRITE) && b->wfirst < a->wlast;
    return 1;
  }
  if ((a->flags & ORION_KEY_READ) && (b->flags & ORION_KEY_WRITE) &&
      a->rlast > b->wfirst) {
    *aw = 0;
    *bw = 1;
    return 1;
  }
  return 0;
}

static const char *array_name(const checker *c, int64_t id, char *buf,
                              size_t n) {
  int i;
  for (i = 0; c->plan != NULL && i < c->plan->narrays; i++)
    if (c->plan->arrays[i].info.id == id && c->plan->arrays[i].name != NULL)
      return c->plan->arrays[i].name;
  snprintf(buf, n, "#%lld", (long long)id);
  return buf;
}

/* "[i, j]" (1-based) for element pos of array id, from the plan's record
 * of its shape. */
static void key_text(const checker *c, int64_t id, int64_t pos, char *buf,
                     size_t n) {
  const orion_arrayinfo *in = NULL;
  int64_t strides[ORION_MAX_DIMS];
  size_t len;
  int i, k;
  for (i = 0; c->plan != NULL && i < c->plan->narrays; i++)
    if (c->plan->arrays[i].info.id == id)
      in = &c->plan->arrays[i].info;
  if (in == NULL || in->sparse || in->ragged ||
      orion_key_strides(in->ndims, in->dims, strides, NULL) != 0) {
    snprintf(buf, n, "(element %lld)", (long long)pos);
    return;
  }
  len = (size_t)snprintf(buf, n, "[");
  for (k = 0; k < in->ndims && len < n; k++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? ", " : "",
                            (long long)((pos / strides[k]) % in->dims[k]) + 1);
  if (len < n)
    snprintf(buf + len, n - len, "]");
}

/* "block (space 1, time 0) at clock 1". */
static void block_text(const checker *c, int block, char *buf, size_t n) {
  const orion_schedule *s = c->s;
  snprintf(buf, n, "block (space %d, time %d) at clock %d", block / s->n1,
           block % s->n1, s->clock[s->pos_of[block]]);
}

/* "writes it at f.lua:12" for r's write (w) or read. */
static void access_text(const checker *c, const orion_msg_key_range *r,
                        int w, char *buf, size_t n) {
  int64_t line = w ? r->wline : r->rline;
  int64_t src = w ? r->wsrc : r->rsrc;
  if (line > 0 && src < c->v->nsrc)
    snprintf(buf, n, "%s it at %s:%lld", w ? "writes" : "reads",
             c->v->src[src], (long long)line);
  else
    snprintf(buf, n, "%s it at an unknown line", w ? "writes" : "reads");
}

static int report(const checker *c, const item *a, int aw, const item *b,
                  int bw, int concurrent, orion_error *err) {
  char name[32], key[160], ba[96], bb[96], xa[400], xb[400];
  int64_t id = a->r->array;
  int64_t pos = a->r->lo > b->r->lo ? a->r->lo : b->r->lo;
  key_text(c, id, pos, key, sizeof key);
  block_text(c, a->block, ba, sizeof ba);
  block_text(c, b->block, bb, sizeof bb);
  access_text(c, a->r, aw, xa, sizeof xa);
  access_text(c, b->r, bw, xb, sizeof xb);
  if (concurrent)
    return orion_error_set(
        err, ORION_EBODY,
        "orion-driver --verify: %s and %s may run concurrently (schedule "
        "%s), but both touch array '%s' at key %s, one writing: %s %s, "
        "%s %s; the plan is wrong (a hole in the analysis: please report "
        "it)",
        ba, bb, orion_sched_name(c->plan->sched),
        array_name(c, id, name, sizeof name), key, ba, xa, bb, xb);
  return orion_error_set(
      err, ORION_EBODY,
      "orion-driver --verify: the ordered loop's schedule (%s) runs %s "
      "before %s, but array '%s' at key %s is touched in the other order "
      "of keys: %s %s for a later element than the one for which %s %s; "
      "the plan is wrong (a hole in the analysis: please report it)",
      orion_sched_name(c->plan->sched), ba, bb,
      array_name(c, id, name, sizeof name), key, ba, xa, bb, xb);
}

/* Compares the new range x with the active range y (one of them writes). */
static int pair(const checker *c, const item *x, const item *y,
                orion_error *err) {
  const item *a, *b;
  int aw, bw;
  if (waits_for(c, x->pos, y->pos)) {
    a = y, b = x;
  } else if (waits_for(c, y->pos, x->pos)) {
    a = x, b = y;
  } else {
    /* Concurrent: a the block first in the schedule's order. */
    a = y->pos < x->pos ? y : x;
    b = a == y ? x : y;
    aw = (a->r->flags & ORION_KEY_WRITE) != 0;
    bw = (b->r->flags & ORION_KEY_WRITE) != 0;
    if (c->v->mode != ORION_MSG_VERIFY_ORDER) {
      /* Unordered: two stores alone are no dependence (the analysis's
       * rule); a store and a read are. */
      if (aw && (b->r->flags & ORION_KEY_READ))
        return report(c, a, 1, b, 0, 1, err);
      if (bw && (a->r->flags & ORION_KEY_READ))
        return report(c, a, 0, b, 1, 1, err);
      return 0;
    }
    if (!aw)
      return report(c, a, 0, b, 1, 1, err);
    return report(c, a, 1, b, bw, 1, err);
  }
  if (c->v->mode != ORION_MSG_VERIFY_ORDER ||
      !out_of_order(a->r, b->r, &aw, &bw))
    return 0;
  return report(c, a, aw, b, bw, 0, err);
}

/* Sweeps one array's items (sorted by lo). */
static int sweep(const checker *c, item *it, size_t n, orion_error *err) {
  item **act = orion_malloc(sizeof *act * (n + 1));
  size_t na = 0, i, j;
  int rc = 0;
  if (act == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (i = 0; i < n && rc == 0; i++) {
    size_t keep = 0;
    for (j = 0; j < na; j++)
      if (act[j]->r->hi > it[i].r->lo)
        act[keep++] = act[j];
    na = keep;
    for (j = 0; j < na && rc == 0; j++)
      if (act[j]->block != it[i].block &&
          ((act[j]->r->flags | it[i].r->flags) & ORION_KEY_WRITE) &&
          ((act[j]->r->flags & ORION_KEY_WRITE) ||
           (it[i].r->flags & ORION_KEY_WRITE)))
        rc = pair(c, &it[i], act[j], err);
    act[na++] = &it[i];
  }
  orion_free(act);
  return rc;
}

static int by_id(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return a < b ? -1 : a > b;
}

int orion__verify_check(lua_State *L, const orion_verify *v,
                        const orion_schedule *s,
                        const struct orion_plan *plan, orion_error *err) {
  checker c;
  int64_t total = 0, *ids, nids = 0, k;
  item *it;
  int b, rc;
  memset(&c, 0, sizeof c);
  c.L = L;
  c.v = v;
  c.s = s;
  c.plan = plan;
  if (plan == NULL || v->nblocks != s->nblocks)
    return 0; /* a serial loop: one block */
  for (b = 0; b < v->nblocks; b++)
    total += v->b[b].n;
  rc = ancestors(&c);
  ids = orion_malloc(sizeof *ids * (size_t)(total + 1));
  it = orion_malloc(sizeof *it * (size_t)(total + 1));
  if (rc == ORION_EINVAL)
    rc = orion_error_set(err, rc, "orion-driver --verify: the schedule's "
                                  "blocks wait for later ones");
  else if (rc != 0 || ids == NULL || it == NULL)
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (b = 0; b < v->nblocks && rc == 0; b++)
    for (k = 0; k < v->b[b].n; k++)
      if (v->b[b].v[k].flags & ORION_KEY_WRITE)
        ids[nids++] = v->b[b].v[k].array;
  if (rc == 0)
    qsort(ids, (size_t)nids, sizeof *ids, by_id);
  /* Each written array in turn, in id order. */
  for (k = 0; k < nids && rc == 0; k++) {
    size_t n = 0;
    int64_t m;
    if (k > 0 && ids[k] == ids[k - 1])
      continue;
    for (b = 0; b < v->nblocks; b++)
      for (m = 0; m < v->b[b].n; m++)
        if (v->b[b].v[m].array == ids[k]) {
          it[n].r = &v->b[b].v[m];
          it[n].block = b;
          it[n].pos = s->pos_of[b];
          n++;
        }
    qsort(it, n, sizeof *it, by_lo);
    rc = sweep(&c, it, n, err);
  }
  orion_free(ids);
  orion_free(it);
  orion_free(c.anc);
  return rc;
}
