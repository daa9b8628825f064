/* The driver's plan cache (see plancache.h). */
#include "lua/plancache.h"

#include <lauxlib.h>
#include <string.h>

#include "lua/srcstore.h"
#include "util/alloc.h"
#include "util/buf.h"

/* The registry's table key -> analysis box. */
#define PLANS_KEY "orion.plans"
/* Loops over ever new arrays would grow the table without end: past this
 * many entries it starts again empty. */
#define PLANS_MAX 256

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  orion_buf_append(ud, p, sz);
  return 0;
}

static void put_str(orion_buf *b, const char *s) {
  size_t n = strlen(s);
  orion_buf_u64(b, n);
  orion_buf_append(b, s, n);
}

void orion__plan_key(lua_State *L, const darray *it, const char *name,
                     const void *opts, size_t optslen) {
  orion_buf k;
  lua_Debug ar;
  char iname[64];
  int i;
  if (lua_iscfunction(L, 2)) {
    lua_pushnil(L);
    return;
  }
  orion_buf_init(&k);
  orion_buf_u64(&k, optslen);
  orion_buf_append(&k, opts, optslen);
  /* The call site, as the analysis's messages and --explain name it. */
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) {
    put_str(&k, ar.short_src);
    orion_buf_u64(&k, (uint64_t)ar.currentline);
  }
  /* The iterated array and the name the analysis gives it. */
  if (name == NULL)
    name = orion__caller_name(L, 1, "", iname, sizeof iname);
  put_str(&k, name);
  orion_buf_u64(&k, (uint64_t)it->id);
  orion_buf_u64(&k, (uint64_t)it->a->ndims);
  for (i = 0; i < it->a->ndims; i++)
    orion_buf_u64(&k, (uint64_t)it->a->dims[i]);
  orion_buf_u64(&k, (uint64_t)it->a->type);
  orion_buf_u64(&k, (uint64_t)it->a->sparse);
  orion_buf_u64(&k, (uint64_t)it->a->ragged);
  orion_buf_u64(&k, (uint64_t)it->a->nnz);
  /* The body's code with its debug information: its chunk's name and
   * lines (a string chunk's whole text), its upvalues' names. */
  lua_pushvalue(L, 2);
  lua_getinfo(L, ">S", &ar);
  lua_pushvalue(L, 2);
  lua_dump(L, dump_writer, &k, 0);
  lua_pop(L, 1);
  /* A file loaded again with another text (lua/srcstore.c): the body may
   * compile the same while the helpers around it do not. */
  if (ar.source[0] == '@') {
    const char *t;
    size_t tl;
    orion_buf_u64(&k, (uint64_t)orion_srcstore_text(L, ar.source, 1, &t,
                                                    &tl));
  }
  if (k.oom)
    lua_pushnil(L);
  else
    lua_pushlstring(L, k.data, k.len);
  orion_buf_free(&k);
}

static int push_plans(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, PLANS_KEY) == LUA_TTABLE)
    return lua_gettop(L);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, PLANS_KEY);
  return lua_gettop(L);
}

analysis *orion__plan_lookup(lua_State *L, int kidx) {
  analysis *a;
  int t;
  kidx = lua_absindex(L, kidx);
  if (lua_isnil(L, kidx))
    return NULL;
  t = push_plans(L);
  lua_pushvalue(L, kidx);
  lua_rawget(L, t);
  a = lua_touserdata(L, -1);
  if (a == NULL || !a->ok || !orion__analysis_same(L, a)) {
    lua_pop(L, 2);
    return NULL;
  }
  lua_remove(L, t);
  return a;
}

void orion__plan_store(lua_State *L, int kidx, int aidx) {
  analysis *a = lua_touserdata(L, aidx);
  int t, n = 0;
  kidx = lua_absindex(L, kidx);
  aidx = lua_absindex(L, aidx);
  if (lua_isnil(L, kidx) || a == NULL || !a->ok || !a->cacheable ||
      a->sig.oom)
    return;
  if (a->src == NULL && a->body.src != NULL) {
    /* The analysis points into the body's Lua string: keep a copy. */
    a->src = orion_malloc(a->body.len + 1);
    if (a->src == NULL)
      return;
    memcpy(a->src, a->body.src, a->body.len);
    a->src[a->body.len] = '\0';
    a->body.src = a->src;
  }
  t = push_plans(L);
  lua_pushnil(L);
  while (lua_next(L, t) != 0 && n <= PLANS_MAX) {
    lua_pop(L, 1);
    n++;
  }
  if (n > PLANS_MAX) {
    lua_settop(L, t - 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, PLANS_KEY);
  } else {
    lua_settop(L, t);
  }
  lua_pushvalue(L, kidx);
  lua_pushvalue(L, aidx);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}
