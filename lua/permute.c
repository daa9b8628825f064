/* Permuted keys on the driver (lua/permute.h): the Permutation userdata
 * (orion.permutation), A:permute_keys and A:permutation, the translation
 * of keys between what the script sees and what the array stores, and
 * the check of a loop's accesses against its arrays' permutations.
 *
 * An array whose dimension is permuted stores its elements at permuted
 * keys (dsm/perm.h: fwd[original]); everything that runs in loops
 * (partitions, blocks, executors, bodies) sees those.  The driver's
 * methods translate: get/set take original keys, to_table, map, save and
 * histogram give them (save through an unpermuted copy).
 */
#include "lua/permute.h"

#include <lauxlib.h>
#include <string.h>

#include "dsm/perm.h"
#include "lua/analyse.h"
#include "util/alloc.h"

#define PERM_MT "orion.Permutation"

typedef struct dperm {
  orion_perm *p;
} dperm;

static int perm_gc(lua_State *L) {
  dperm *u = luaL_checkudata(L, 1, PERM_MT);
  orion_perm_release(u->p);
  u->p = NULL;
  return 0;
}

/* Pushes the Permutation of (n, seed): the job's one for that pair when
 * it is alive, else a new one. */
static orion_perm *push_perm(lua_State *L, int64_t n, int64_t seed) {
  orion_error err;
  orion_perm *p;
  dperm *u;
  lua_getfield(L, LUA_REGISTRYINDEX, PERMS_KEY);
  lua_pushfstring(L, "%I:%I", (LUAI_UACINT)n, (LUAI_UACINT)seed);
  if (lua_rawget(L, -2) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return ((dperm *)lua_touserdata(L, -1))->p;
  }
  lua_pop(L, 1);
  orion_error_clear(&err);
  p = orion_perm_new(n, seed, &err);
  if (p == NULL)
    orion__raise(L, &err);
  u = lua_newuserdatauv(L, sizeof *u, 0);
  u->p = p;
  luaL_setmetatable(L, PERM_MT);
  lua_pushfstring(L, "%I:%I", (LUAI_UACINT)n, (LUAI_UACINT)seed);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_remove(L, -2);
  return p;
}

/* An integer argument, or an error that says what it got. */
static int64_t int_arg(lua_State *L, int idx, const char *fn,
                       const char *who, const char *what) {
  int isint, num = lua_type(L, idx) == LUA_TNUMBER;
  lua_Integer v = lua_tointegerx(L, idx, &isint);
  if (!isint || !num)
    luaL_error(L, "%s: %s%s%s must be an integer, not %s%s", fn, who,
               who[0] ? ": " : "", what, num ? "" : "a ",
               num ? lua_tostring(L, idx) : luaL_typename(L, idx));
  return (int64_t)v;
}

/* orion.permutation(n, seed) -> Permutation */
static int l_permutation(lua_State *L) {
  int64_t n = int_arg(L, 1, "orion.permutation", "", "the number of keys");
  int64_t seed = int_arg(L, 2, "orion.permutation", "", "the seed");
  if (n < 1)
    return luaL_error(L, "orion.permutation: the number of keys must be "
                         "positive, not %I", (LUAI_UACINT)n);
  push_perm(L, n, seed);
  return 1;
}

static orion_perm *check_perm(lua_State *L, int idx) {
  return ((dperm *)luaL_checkudata(L, idx, PERM_MT))->p;
}

/* p:size(), p:seed(), p:forward(k), p:inverse(k) (1-based keys) */
static int p_size(lua_State *L) {
  lua_pushinteger(L, check_perm(L, 1)->n);
  return 1;
}

static int p_seed(lua_State *L) {
  lua_pushinteger(L, check_perm(L, 1)->seed);
  return 1;
}

static int p_map(lua_State *L, int inverse) {
  orion_perm *p = check_perm(L, 1);
  int64_t k = int_arg(L, 2, inverse ? "inverse" : "forward", "", "the key");
  if (k < 1 || k > p->n)
    return luaL_error(L, "%s: key %I out of range 1..%I",
                      inverse ? "inverse" : "forward", (LUAI_UACINT)k,
                      (LUAI_UACINT)p->n);
  lua_pushinteger(L, (inverse ? p->inv : p->fwd)[k - 1] + 1);
  return 1;
}

static int p_forward(lua_State *L) { return p_map(L, 0); }
static int p_inverse(lua_State *L) { return p_map(L, 1); }

static int p_tostring(lua_State *L) {
  orion_perm *p = check_perm(L, 1);
  lua_pushfstring(L, "Permutation(%I keys, seed %I)", (LUAI_UACINT)p->n,
                  (LUAI_UACINT)p->seed);
  return 1;
}

/* ---- the keys of a permuted array ------------------------------------- */

int orion__permuted(const darray *d) {
  int i;
  for (i = 0; i < d->a->ndims; i++)
    if (d->perm[i] != NULL)
      return 1;
  return 0;
}

int64_t orion__perm_dim(const darray *d, int dim) {
  return d->perm[dim] != NULL ? d->odim[dim] : d->a->dims[dim];
}

void orion__perm_keys_in(lua_State *L, const darray *d, int64_t *keys) {
  int i;
  for (i = 0; i < d->a->ndims; i++) {
    if (d->perm[i] == NULL)
      continue;
    if (keys[i] >= d->odim[i])
      luaL_error(L, "key %I out of range 1..%I in dimension %d",
                 (LUAI_UACINT)(keys[i] + 1), (LUAI_UACINT)d->odim[i], i + 1);
    keys[i] = d->perm[i]->fwd[keys[i]];
  }
}

int64_t orion__perm_key_out(const darray *d, int dim, int64_t k) {
  return d->perm[dim] != NULL ? d->perm[dim]->inv[k] : k;
}

orion_array *orion__unpermuted(lua_State *L, darray *d, int copy) {
  orion_error err;
  orion_array *c;
  int64_t dims[ORION_MAX_DIMS];
  int i;
  if (!copy && !orion__permuted(d)) {
    orion_array_retain(d->a);
    return d->a;
  }
  orion_error_clear(&err);
  c = orion_array_copy(d->a, &err);
  if (c == NULL)
    orion__raise(L, &err);
  for (i = 0; i < c->ndims; i++) {
    dims[i] = orion__perm_dim(d, i);
    if (d->perm[i] != NULL &&
        orion_array_remap(c, i, d->perm[i]->inv, &err) != 0) {
      orion_array_release(c);
      orion__raise(L, &err);
    }
  }
  if (c->sparse && orion_array_set_dims(c, dims, &err) != 0) {
    orion_array_release(c); /* cannot happen: the keys are the originals */
    orion__raise(L, &err);
  }
  return c;
}

void orion__perm_inherit(darray *to, const darray *from) {
  int i;
  for (i = 0; i < from->a->ndims; i++) {
    to->perm[i] = from->perm[i];
    to->odim[i] = from->odim[i];
    if (to->perm[i] != NULL)
      orion_perm_retain(to->perm[i]);
  }
}

void orion__perm_free(darray *d) {
  int i;
  for (i = 0; i < ORION_MAX_DIMS; i++) {
    orion_perm_release(d->perm[i]);
    d->perm[i] = NULL;
  }
}

/* ---- A:permute_keys(dim, p | seed), A:permutation(dim) ---------------- */

/* "permuted by orion.permutation(n, seed)" or "not permuted". */
static void perm_text(const orion_perm *p, char *buf, size_t n) {
  if (p == NULL)
    snprintf(buf, n, "not permuted");
  else
    snprintf(buf, n, "permuted by orion.permutation(%lld, %lld)",
             (long long)p->n, (long long)p->seed);
}

static int m_permute_keys(lua_State *L) {
  darray *d = orion__check_array(L, 1);
  orion_array *a = d->a;
  char nbuf[64], txt[96];
  const char *name = orion__caller_name(L, 1, "the array", nbuf, sizeof nbuf);
  int64_t dim = int_arg(L, 2, "permute_keys", name, "the dimension");
  int64_t dims[ORION_MAX_DIMS];
  orion_perm *p;
  orion_error err;
  lua_settop(L, 3);
  if (dim < 1 || dim > a->ndims)
    return luaL_error(L, "permute_keys: %s: dimension %I out of range 1..%d",
                      name, (LUAI_UACINT)dim, a->ndims);
  dim--;
  if (luaL_testudata(L, 3, PERM_MT) != NULL)
    p = check_perm(L, 3);
  else
    p = push_perm(L, a->dims[dim],
                  int_arg(L, 3, "permute_keys", name,
                          "the seed (or an orion.permutation)"));
  if (d->looped || d->have_bs || d->rep != NULL)
    return luaL_error(L, "permute_keys: %s has been used by a parallel_for; "
                         "permute an array's keys before its first loop",
                      name);
  if (d->perm[dim] != NULL) {
    perm_text(d->perm[dim], txt, sizeof txt);
    return luaL_error(L, "permute_keys: %s: dimension %d is already %s",
                      name, (int)dim + 1, txt);
  }
  if (a->sparse ? p->n < a->dims[dim] : p->n != a->dims[dim])
    return luaL_error(L, "permute_keys: %s has %I keys in dimension %d, the "
                         "permutation has %I%s",
                      name, (LUAI_UACINT)a->dims[dim], (int)dim + 1,
                      (LUAI_UACINT)p->n,
                      a->sparse ? " (a sparse array's dimension may be "
                                  "smaller, not larger)"
                                : "");
  memcpy(dims, a->dims, sizeof dims);
  d->odim[dim] = a->dims[dim];
  dims[dim] = p->n; /* the stored keys range over the permutation's */
  orion_error_clear(&err);
  if (orion_array_remap(a, (int)dim, p->fwd, &err) != 0 ||
      orion_array_set_dims(a, dims, &err) != 0)
    orion__raise(L, &err);
  orion_perm_retain(p);
  d->perm[dim] = p;
  d->gen++;
  lua_settop(L, 1);
  return 1;
}

static int m_permutation(lua_State *L) {
  darray *d = orion__check_array_only(L, 1);
  lua_Integer dim = luaL_checkinteger(L, 2);
  orion_perm *p;
  if (dim < 1 || dim > d->a->ndims)
    return luaL_error(L, "permutation: dimension %I out of range 1..%d",
                      (LUAI_UACINT)dim, d->a->ndims);
  p = d->perm[dim - 1];
  if (p == NULL)
    lua_pushnil(L);
  else
    push_perm(L, p->n, p->seed);
  return 1;
}

/* ---- loops ------------------------------------------------------------ */

static const char *key_name(const orion_plan *p, int k, char *buf, size_t n) {
  if (k < p->ndims && p->keynames[k] != NULL)
    return p->keynames[k];
  snprintf(buf, n, "key %d", k + 1);
  return buf;
}

void orion__perm_check(lua_State *L, darray *it, const char *iname,
                       const orion_plan *p) {
  int i, j;
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    const char *an = p->arrays[ac->array].name;
    darray *u = orion__by_id(L, ARRAYS_KEY, ARRAY_MT,
                             p->arrays[ac->array].info.id);
    if (u == NULL || u->a == NULL)
      continue;
    for (j = 0; j < ac->nsub && j < u->a->ndims; j++) {
      const orion_sub *s = &ac->sub[j];
      const orion_perm *mine = u->perm[j], *its;
      char kb[32], t1[96], t2[96];
      if (s->kind == SUB_UNKNOWN)
        continue; /* a computed key: the script's to get right (docs) */
      if (s->kind == SUB_CONST) {
        if (mine != NULL)
          luaL_error(L, "parallel_for: %s (line %d) subscripts dimension %d "
                        "of %s, whose keys are permuted, with a constant; "
                        "loop bodies see permuted keys, so a constant names "
                        "another element than on the driver",
                     ac->text, ac->line, j + 1, an);
        continue;
      }
      its = s->dim < it->a->ndims ? it->perm[s->dim] : NULL;
      if (!orion_perm_same(mine, its)) {
        perm_text(mine, t1, sizeof t1);
        perm_text(its, t2, sizeof t2);
        luaL_error(L, "parallel_for: %s (line %d) subscripts dimension %d "
                      "of %s (%s) with %s, dimension %d of %s (%s); permute "
                      "both with the same permutation (A:permute_keys)",
                   ac->text, ac->line, j + 1, an, t1,
                   key_name(p, s->dim, kb, sizeof kb), s->dim + 1, iname, t2);
      }
      if (mine != NULL && s->c != 0)
        luaL_error(L, "parallel_for: %s (line %d) subscripts dimension %d "
                      "of %s, whose keys are permuted, with an offset from "
                      "%s; permuted neighbours are not neighbours",
                   ac->text, ac->line, j + 1, an,
                   key_name(p, s->dim, kb, sizeof kb));
    }
  }
  it->looped = 1; /* their keys may no longer change */
  for (i = 0; i < p->narrays; i++) {
    darray *u = orion__by_id(L, ARRAYS_KEY, ARRAY_MT, p->arrays[i].info.id);
    if (u != NULL)
      u->looped = 1;
  }
}

void orion__open_permute(lua_State *L) {
  static const luaL_Reg meta[] = {{"__gc", perm_gc},
                                  {"__tostring", p_tostring},
                                  {NULL, NULL}};
  static const luaL_Reg pmethods[] = {{"size", p_size},
                                      {"seed", p_seed},
                                      {"forward", p_forward},
                                      {"inverse", p_inverse},
                                      {NULL, NULL}};
  static const luaL_Reg amethods[] = {{"permute_keys", m_permute_keys},
                                      {"permutation", m_permutation},
                                      {NULL, NULL}};
  luaL_newmetatable(L, PERM_MT);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, pmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_permutation);
  lua_setfield(L, -2, "permutation");
  luaL_getmetatable(L, ARRAY_MT); /* the DistArray methods */
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, amethods, 0);
  lua_pop(L, 2);
}
