/* orion-driver --verify's recording on an executor (executor/exec_keys.h): an
 * open-addressing table of the keys the running block touched, turned
 * into ranges at the block's end. */
#include "executor/exec_keys.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/exec_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* The most distinct source names a loop's lines refer to; later ones
 * share the last slot, named as such. */
#define MAX_SRCS 32

typedef struct kent {
  int64_t array, pos;
  int64_t rfirst, rlast, wfirst, wlast;
  int32_t rline, wline;
  int16_t rsrc, wsrc;
  unsigned char flags, used;
} kent;

struct orion_keyrec {
  int mode;
  kent *tab;
  size_t cap, n; /* cap a power of two; n used */
  int64_t rank;  /* the running element's, -1 when not recorded */
  int body_line, body_src;
  char src[MAX_SRCS][ORION_MSG_KEYSRC_MAX + 1];
  orion_msg_keysrc srcs[MAX_SRCS];
  int nsrcs;
  orion_msg_key_range *out;
  size_t outcap;
};

static size_t slot_of(const orion_keyrec *k, int64_t array, int64_t pos) {
  uint64_t h = (uint64_t)pos * 0x9E3779B97F4A7C15ull ^
               (uint64_t)array * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return (size_t)h & (k->cap - 1);
}

static int grow(orion_keyrec *k) {
  size_t cap = k->cap > 0 ? 2 * k->cap : 1024, i;
  kent *old = k->tab, *nt = orion_calloc(cap, sizeof *nt);
  size_t oldcap = k->cap;
  if (nt == NULL)
    return ORION_ENOMEM;
  k->tab = nt;
  k->cap = cap;
  for (i = 0; i < oldcap; i++)
    if (old[i].used) {
      size_t s = slot_of(k, old[i].array, old[i].pos);
      while (nt[s].used)
        s = (s + 1) & (cap - 1);
      nt[s] = old[i];
    }
  orion_free(old);
  return 0;
}

/* The index of source name `name` in the table (added when new). */
static int src_index(orion_keyrec *k, const char *name) {
  int i;
  size_t len = strlen(name);
  if (len == 0)
    name = "?", len = 1;
  if (len > ORION_MSG_KEYSRC_MAX)
    len = ORION_MSG_KEYSRC_MAX;
  for (i = 0; i < k->nsrcs; i++)
    if (k->srcs[i].len == len && memcmp(k->src[i], name, len) == 0)
      return i;
  if (k->nsrcs == MAX_SRCS) {
    snprintf(k->src[MAX_SRCS - 1], sizeof k->src[0], "(another source)");
    k->srcs[MAX_SRCS - 1].len = strlen(k->src[MAX_SRCS - 1]);
    return MAX_SRCS - 1;
  }
  memcpy(k->src[k->nsrcs], name, len);
  k->src[k->nsrcs][len] = '\0';
  k->srcs[k->nsrcs].s = k->src[k->nsrcs];
  k->srcs[k->nsrcs].len = len;
  return k->nsrcs++;
}

/* The line and source of the Lua function at stack level 1. */
static void where(lua_State *L, orion_keyrec *k, int32_t *line, int16_t *src) {
  lua_Debug ar;
  *line = 0;
  *src = 0;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) &&
      ar.currentline > 0) {
    *line = ar.currentline;
    *src = (int16_t)src_index(k, ar.short_src);
  }
}

void orion__keys_body(lua_State *L, orion_keyrec *k, int idx) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  k->body_line = 0;
  k->body_src = 0;
  if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0) {
    k->body_line = ar.linedefined;
    k->body_src = src_index(k, ar.short_src);
  }
}

void orion__keys_rank(orion_keyrec *k, const orion_array *a, int64_t e) {
  int64_t r = 0;
  int d;
  if (k->mode != ORION_MSG_VERIFY_ORDER) {
    k->rank = -1;
    return;
  }
  if (!a->sparse) {
    k->rank = e;
    return;
  }
  for (d = 0; d < a->ndims; d++)
    r = r * a->dims[d] + a->keys[e * a->ndims + d];
  k->rank = r;
}

static void widen(int64_t *first, int64_t *last, int64_t rank, int fresh) {
  if (fresh || rank < *first)
    *first = rank;
  if (fresh || rank > *last)
    *last = rank;
}

void orion__keys_note(lua_State *L, orion_keyrec *k, int64_t array,
                      int64_t pos, int write, int returned) {
  kent *e;
  size_t s;
  unsigned char bit = write ? ORION_KEY_WRITE : ORION_KEY_READ;
  if (k->mode == 0)
    return; /* recording stopped; the proxies outlive it */
  if (2 * (k->n + 1) > k->cap && grow(k) != 0)
    luaL_error(L, "orion-driver --verify: out of memory recording the "
                  "block's keys");
  s = slot_of(k, array, pos);
  while (k->tab[s].used &&
         (k->tab[s].array != array || k->tab[s].pos != pos))
    s = (s + 1) & (k->cap - 1);
  e = &k->tab[s];
  if (!e->used) {
    memset(e, 0, sizeof *e);
    e->used = 1;
    e->array = array;
    e->pos = pos;
    e->rfirst = e->rlast = e->wfirst = e->wlast = -1;
    k->n++;
  }
  if (!(e->flags & bit)) {
    int32_t line;
    int16_t src;
    if (returned) {
      line = k->body_line;
      src = (int16_t)k->body_src;
    } else {
      where(L, k, &line, &src);
    }
    if (write) {
      e->wline = line;
      e->wsrc = src;
    } else {
      e->rline = line;
      e->rsrc = src;
    }
  }
  if (k->rank >= 0) {
    if (write)
      widen(&e->wfirst, &e->wlast, k->rank, !(e->flags & bit));
    else
      widen(&e->rfirst, &e->rlast, k->rank, !(e->flags & bit));
  }
  e->flags |= bit;
}

int orion_exec_record_keys(struct orion_exec *ex, int mode) {
  orion_keyrec *k = ex->keys;
  if (mode < 0 || mode > ORION_MSG_VERIFY_ORDER)
    return ORION_EINVAL;
  if (k == NULL && mode == 0)
    return 0;
  /* Kept until orion_exec_free: a loaded body's proxies point to it. */
  if (k == NULL && (k = ex->keys = orion_calloc(1, sizeof *k)) == NULL)
    return ORION_ENOMEM;
  if (k->tab != NULL)
    memset(k->tab, 0, sizeof *k->tab * k->cap);
  k->n = 0;
  k->nsrcs = 0;
  k->mode = mode;
  k->rank = -1;
  return 0;
}

orion_keyrec *orion__keys_live(orion_keyrec *k) {
  return k != NULL && k->mode != 0 ? k : NULL;
}

static int by_key(const void *pa, const void *pb) {
  const kent *a = pa, *b = pb;
  if (a->array != b->array)
    return a->array < b->array ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Whether e extends range r (the next element, every value the same). */
static int extends(const orion_msg_key_range *r, const kent *e) {
  return r->array == e->array && r->hi == e->pos && r->flags == e->flags &&
         r->rline == e->rline && r->rsrc == e->rsrc && r->wline == e->wline &&
         r->wsrc == e->wsrc && r->rfirst == e->rfirst &&
         r->rlast == e->rlast && r->wfirst == e->wfirst &&
         r->wlast == e->wlast;
}

int orion_exec_take_keys(struct orion_exec *ex, orion_keyset *out) {
  orion_keyrec *k = ex->keys;
  size_t i, m = 0, n = 0;
  memset(out, 0, sizeof *out);
  if (k == NULL || k->mode == 0 || k->n == 0)
    return 0;
  /* Pack the used entries to the front, sort them, then merge. */
  for (i = 0; i < k->cap; i++)
    if (k->tab[i].used)
      k->tab[m++] = k->tab[i];
  qsort(k->tab, m, sizeof *k->tab, by_key);
  if (k->outcap < m) {
    orion_msg_key_range *nv = orion_realloc(k->out, sizeof *nv * m);
    if (nv == NULL)
      return ORION_ENOMEM;
    k->out = nv;
    k->outcap = m;
  }
  for (i = 0; i < m; i++) {
    const kent *e = &k->tab[i];
    orion_msg_key_range *r;
    if (n > 0 && extends(&k->out[n - 1], e)) {
      k->out[n - 1].hi++;
      continue;
    }
    r = &k->out[n++];
    r->array = e->array;
    r->lo = e->pos;
    r->hi = e->pos + 1;
    r->flags = e->flags;
    r->rline = e->rline;
    r->rsrc = e->rsrc;
    r->wline = e->wline;
    r->wsrc = e->wsrc;
    r->rfirst = e->rfirst;
    r->rlast = e->rlast;
    r->wfirst = e->wfirst;
    r->wlast = e->wlast;
  }
  memset(k->tab, 0, sizeof *k->tab * k->cap);
  k->n = 0;
  out->v = k->out;
  out->n = (int64_t)n;
  out->srcs = k->srcs;
  out->nsrcs = k->nsrcs;
  return 0;
}

void orion__keys_free(orion_keyrec *k) {
  if (k == NULL)
    return;
  orion_free(k->tab);
  orion_free(k->out);
  orion_free(k);
}
