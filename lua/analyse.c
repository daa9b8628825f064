/* A parallel_for body analysed from the driver's Lua state: finds the
 * body's source (debug.getinfo), resolves its free names against its
 * upvalues and globals for the dependence analysis (analysis/analyze.h)
 * and the code generator (analysis/cgen.h), and keeps the plan and the
 * generated C body for the launch (lua/pfor.c). */
#include "lua/analyse.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "analysis/parse.h"
#include "dsm/loader.h"
#include "lua/bodyid.h"
#include "executor/capture.h"
#include "lua/srcstore.h"
#include "util/alloc.h"
#include "util/ccomp.h"
#include "util/log.h"
#include "util/luaops.h"

/* Pushes the target DistArray of the buffer at idx (NULL when it is not
 * one). */
static darray *buffer_target(lua_State *L, int idx) {
  darray *d;
  lua_getiuservalue(L, idx, 1);
  d = luaL_testudata(L, -1, ARRAY_MT);
  return d;
}

/* ---- the analysis input: body source and the bindings of free names -- */

typedef struct rctx {
  lua_State *L;
  int fidx;
  char **strs; /* names kept alive for the analysis */
  int nstrs;
  orion_reach *reach;
  int nreach;
  orion_buf *sig; /* the plan cache's record of the answers, or NULL */
} rctx;

static const char *keep(rctx *r, const char *s) {
  char **v = orion_realloc(r->strs, sizeof *v * (size_t)(r->nstrs + 1));
  char *c = orion_strdup(s);
  if (v == NULL || c == NULL) {
    orion_free(c);
    if (v != NULL)
      r->strs = v;
    return "?";
  }
  r->strs = v;
  r->strs[r->nstrs++] = c;
  return c;
}

static void rctx_free(rctx *r) {
  int i;
  for (i = 0; i < r->nstrs; i++)
    orion_free(r->strs[i]);
  orion_free(r->strs);
  orion_free(r->reach);
}

static void fill_info(const darray *d, const char *name, orion_arrayinfo *ai) {
  int i;
  memset(ai, 0, sizeof *ai);
  ai->id = d->id;
  ai->name = name;
  /* A ragged array is iterated by rows: one key, the row. */
  ai->ndims = d->a->ragged ? 1 : d->a->ndims;
  ai->ragged = d->a->ragged;
  for (i = 0; i < ai->ndims; i++)
    ai->dims[i] = d->a->dims[i];
  ai->elem_size = (int)orion_type_size(d->a->type);
  ai->type = (int)d->a->type;
  ai->sparse = d->a->sparse;
  ai->nnz = d->a->nnz;
}

/* Pushes the value of upvalue `name` of the function at fidx, or nothing
 * (returns 0). */
static int push_upvalue(lua_State *L, int fidx, const char *name) {
  int i;
  const char *n;
  for (i = 1; (n = lua_getupvalue(L, fidx, i)) != NULL; i++) {
    if (strcmp(n, name) == 0)
      return 1;
    lua_pop(L, 1);
  }
  return 0;
}

static int is_std_table(lua_State *L, int idx, const char *name) {
  int same;
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, name);
  same = lua_rawequal(L, -1, idx < 0 ? idx - 2 : idx);
  lua_pop(L, 2);
  return same && strcmp(name, "orion") != 0;
}

/* The arrays and buffers a helper function reaches, through its own
 * captures and globals (the capture codec walks them). */
static void helper_reach(rctx *r, int idx, const char *fname,
                         orion_binding *b) {
  lua_State *L = r->L;
  orion_buf blob;
  orion_capture_info info;
  char msg[256];
  int i, n, base, rc, top = lua_gettop(L);
  char label[160];
  idx = lua_absindex(L, idx);
  /* A closure that captures the value lets the capture codec walk it:
   * tables (their arrays, and the functions in them) as well as
   * functions. */
  if (luaL_loadstring(L, "local v; return function() return v end") != 0 ||
      lua_pcall(L, 0, 1, 0) != 0) {
    lua_settop(L, top);
    return;
  }
  lua_pushvalue(L, idx);
  lua_setupvalue(L, -2, 1);
  orion_buf_init(&blob);
  memset(&info, 0, sizeof info);
  rc = orion_capture_encode(L, lua_gettop(L), orion__classify, NULL, &blob, &info,
                            msg, sizeof msg);
  orion_buf_free(&blob);
  lua_settop(L, top);
  if (rc != 0)
    return; /* parallel_for reports it when capturing the body */
  n = info.narrays + info.nbuffers;
  base = r->nreach;
  if (n > 0) {
    orion_reach *v =
        orion_realloc(r->reach, sizeof *v * (size_t)(r->nreach + n));
    if (v == NULL) {
      orion_capture_info_free(&info);
      return;
    }
    r->reach = v;
  }
  for (i = 0; i < info.narrays; i++) {
    darray *d = orion__by_id(L, ARRAYS_KEY, ARRAY_MT, info.arrays[i]);
    if (d == NULL || d->a == NULL)
      continue;
    snprintf(label, sizeof label, "array #%lld (via %s)",
             (long long)d->id, fname);
    fill_info(d, keep(r, label), &r->reach[r->nreach].arr);
    r->reach[r->nreach++].buffer = 0;
  }
  for (i = 0; i < info.nbuffers; i++) {
    dbuffer *bf = orion__by_id(L, BUFFERS_KEY, BUFFER_MT, info.buffers[i]);
    darray *d = bf != NULL ? orion__by_id(L, ARRAYS_KEY, ARRAY_MT, bf->target_id)
                           : NULL;
    if (d == NULL || d->a == NULL)
      continue;
    snprintf(label, sizeof label, "array #%lld (via %s)",
             (long long)d->id, fname);
    fill_info(d, keep(r, label), &r->reach[r->nreach].arr);
    r->reach[r->nreach++].buffer = 1;
  }
  orion_capture_info_free(&info);
  /* r->reach may move when another helper is resolved: the analysis copies
   * the entries during the call, so hand it the ones just added. */
  b->reach = r->reach + base;
  b->nreach = r->nreach - base;
}

/* ---- standard functions by what they are ------------------------------ */

/* The C functions of Lua's standard library and their names ("select",
 * "table.unpack"), taken once from a fresh state: the same C function is
 * the same pointer in every state of the process, whatever a script has
 * renamed or reassigned (`local type = table.unpack`, `print = select`). */
typedef struct std_fn {
  lua_CFunction f;
  char name[48];
} std_fn;

static std_fn *std_fns;
static int nstd_fns;

static void std_fn_add(lua_CFunction f, const char *lib, const char *name) {
  std_fn *v = orion_realloc(std_fns, sizeof *v * (size_t)(nstd_fns + 1));
  if (v == NULL)
    return;
  std_fns = v;
  std_fns[nstd_fns].f = f;
  snprintf(std_fns[nstd_fns].name, sizeof std_fns[0].name, "%s%s%s",
           lib != NULL ? lib : "", lib != NULL ? "." : "", name);
  nstd_fns++;
}

/* Adds the C functions of the table at the top of T (lib: its name, or
 * NULL for the base library, whose tables are walked one level down). */
static void std_fns_of(lua_State *T, const char *lib) {
  lua_pushnil(T);
  while (lua_next(T, -2)) {
    if (lua_type(T, -2) == LUA_TSTRING) {
      const char *k = lua_tostring(T, -2);
      if (lua_iscfunction(T, -1))
        std_fn_add(lua_tocfunction(T, -1), lib, k);
      else if (lib == NULL && lua_istable(T, -1) && strcmp(k, "_G") != 0)
        std_fns_of(T, k);
    }
    lua_pop(T, 1);
  }
}

/* The standard name of the C function at idx, or NULL.  Called on the
 * driver's thread only (the table is built on first use). */
static const char *std_fn_name(lua_State *L, int idx) {
  lua_CFunction f = lua_tocfunction(L, idx);
  int i;
  if (std_fns == NULL) {
    lua_State *T = luaL_newstate();
    if (T == NULL)
      return NULL;
    luaL_openlibs(T);
    lua_pushglobaltable(T);
    std_fns_of(T, NULL);
    lua_close(T);
  }
  for (i = 0; f != NULL && i < nstd_fns; i++)
    if (std_fns[i].f == f)
      return std_fns[i].name;
  return NULL;
}

/* Pushes the body's global environment (its _ENV upvalue, when a table)
 * and returns 1, or pushes nothing and returns 0. */
static int push_env(lua_State *L, int fidx) {
  if (!push_upvalue(L, fidx, "_ENV"))
    return 0;
  if (lua_istable(L, -1))
    return 1;
  lua_pop(L, 1);
  return 0;
}

/* ---- the plan cache's record of the resolver's answers ---------------- */

static int sig_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  uint64_t *h = ud;
  size_t i;
  (void)L;
  for (i = 0; i < sz; i++)
    *h = (*h ^ ((const unsigned char *)p)[i]) * UINT64_C(0x100000001b3);
  return 0;
}

static void sig_str(orion_buf *o, const char *s) {
  size_t n = s != NULL ? strlen(s) : 0;
  orion_buf_u64(o, s != NULL ? n : UINT64_MAX);
  orion_buf_append(o, s != NULL ? s : "", n);
}

static void sig_arr(orion_buf *o, const orion_arrayinfo *a) {
  int i;
  sig_str(o, a->name);
  orion_buf_u64(o, (uint64_t)a->id);
  orion_buf_u64(o, (uint64_t)a->ndims);
  for (i = 0; i < a->ndims && i < ORION_MAX_DIMS; i++)
    orion_buf_u64(o, (uint64_t)a->dims[i]);
  orion_buf_u64(o, (uint64_t)a->elem_size);
  orion_buf_u64(o, (uint64_t)a->type);
  orion_buf_u64(o, (uint64_t)a->sparse);
  orion_buf_u64(o, (uint64_t)a->ragged);
  orion_buf_u64(o, (uint64_t)a->nnz);
}

/* Appends the question `name` and what the analysis and the generator
 * read of the answer b: a number's value only where it is a whole number
 * (access.c takes an integral captured number as a subscript constant; a
 * fraction, a learning rate, reaches the compiled body through its CONST
 * slot, which orion__analysis_same refreshes); a Lua helper function by a
 * hash of its code (at the top of L). */
static void sig_put(rctx *r, const char *name, const orion_binding *b) {
  orion_buf *o = r->sig;
  int64_t v;
  int i;
  sig_str(o, name);
  orion_buf_u64(o, (uint64_t)b->kind);
  switch (b->kind) {
  case ORION_BIND_NUMBER:
    orion_buf_u64(o, (uint64_t)b->is_int);
    if (b->is_int)
      orion_buf_u64(o, (uint64_t)b->ival);
    else if (orion_lua_f2i(b->fval, &v) == ORION_LUAOP_OK)
      orion_buf_u64(o, (uint64_t)v);
    else
      orion_buf_u8(o, 0xfe); /* some fraction, not a subscript */
    break;
  case ORION_BIND_FUNC: {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    if (lua_type(r->L, -1) == LUA_TFUNCTION)
      lua_dump(r->L, sig_writer, &h, 0);
    orion_buf_u64(o, h);
    break;
  }
  default:
    break;
  }
  sig_arr(o, &b->arr);
  orion_buf_u64(o, (uint64_t)b->id);
  sig_str(o, b->std);
  orion_buf_u64(o, (uint64_t)b->env);
  orion_buf_u64(o, (uint64_t)b->nn_module);
  orion_buf_u64(o, (uint64_t)b->nreach);
  for (i = 0; i < b->nreach; i++) {
    sig_arr(o, &b->reach[i].arr);
    orion_buf_u64(o, (uint64_t)b->reach[i].buffer);
  }
}

static int resolve_cb(void *ud, const char *name, orion_binding *b) {
  rctx *r = ud;
  lua_State *L = r->L;
  int top = lua_gettop(L), found = 0;
  size_t np = strlen(ORION_ENV_PREFIX);
  /* "_ENV.g" is the global g read through the environment: never an
   * upvalue, even one named g. */
  int global_only = strncmp(name, ORION_ENV_PREFIX, np) == 0;
  const char *asked = name;
  memset(b, 0, sizeof *b);
  if (global_only)
    name += np; /* from here on, the global's own name */
  if (!global_only && push_upvalue(L, r->fidx, name)) {
    found = 1;
  } else if (push_env(L, r->fidx)) {
    /* Raw, as the capture reads globals (executor/capture.c refuses one that
     * only the environment's __index supplies). */
    lua_pushstring(L, name);
    lua_rawget(L, -2);
    found = !lua_isnil(L, -1);
  }
  if (!found) {
    lua_settop(L, top);
    b->kind = ORION_BIND_NONE;
    if (r->sig != NULL)
      sig_put(r, asked, b);
    return 1;
  }
  switch (lua_type(L, -1)) {
  case LUA_TNUMBER:
    b->kind = ORION_BIND_NUMBER;
    b->is_int = lua_isinteger(L, -1);
    if (b->is_int)
      b->ival = lua_tointeger(L, -1);
    b->fval = lua_tonumber(L, -1);
    break;
  case LUA_TUSERDATA: {
    darray *d = luaL_testudata(L, -1, ARRAY_MT);
    dbuffer *bf = luaL_testudata(L, -1, BUFFER_MT);
    if (d != NULL && d->a != NULL) {
      b->kind = ORION_BIND_ARRAY;
      fill_info(d, keep(r, name), &b->arr);
    } else if (luaL_testudata(L, -1, ACC_MT) != NULL) {
      b->kind = ORION_BIND_ACC;
      b->id = ((dacc *)lua_touserdata(L, -1))->id;
    } else if (bf != NULL) {
      darray *t = buffer_target(L, -1);
      char label[160];
      if (t != NULL && t->a != NULL) {
        b->kind = ORION_BIND_BUFFER;
        b->id = bf->id;
        snprintf(label, sizeof label, "target of %s", name);
        fill_info(t, keep(r, label), &b->arr);
      } else {
        b->kind = ORION_BIND_VALUE;
      }
    } else {
      b->kind = ORION_BIND_VALUE;
    }
    break;
  }
  case LUA_TFUNCTION:
    if (lua_iscfunction(L, -1)) {
      b->kind = ORION_BIND_BUILTIN;
      b->std = std_fn_name(L, -1);
    } else {
      b->kind = ORION_BIND_FUNC;
      helper_reach(r, lua_gettop(L), name, b);
    }
    break;
  case LUA_TTABLE: {
    static const char *const std[] = {"math",      "string", "table",
                                      "utf8",      "os",     "io",
                                      "coroutine", "package", "debug",
                                      NULL};
    int i;
    b->kind = ORION_BIND_VALUE;
    /* The body's own environment (_ENV, or _G naming the same table). */
    if (push_env(L, r->fidx)) {
      b->env = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
    }
    if (b->env)
      break;
    for (i = 0; std[i] != NULL; i++)
      if (strcmp(name, std[i]) == 0 && is_std_table(L, -1, name))
        b->kind = ORION_BIND_BUILTIN;
    if (b->kind == ORION_BIND_VALUE)
      helper_reach(r, lua_gettop(L), name, b); /* arrays held in it */
    /* The orion.nn table (executor/nn.h): the analysis knows what its
     * functions do to the array data they are passed. */
    lua_getfield(L, LUA_REGISTRYINDEX, "orion.nn");
    b->nn_module = lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    break;
  }
  default:
    b->kind = ORION_BIND_VALUE;
  }
  if (r->sig != NULL)
    sig_put(r, asked, b);
  lua_settop(L, top);
  return 0;
}

int orion__analysis_same(lua_State *L, analysis *a) {
  orion_reader rd;
  orion_buf now;
  rctx r;
  int same, i;
  if (!a->cacheable || a->sig.oom)
    return 0;
  memset(&r, 0, sizeof r);
  r.L = L;
  r.fidx = 2;
  r.sig = &now;
  orion_buf_init(&now);
  /* Ask every question again, in the order the analysis asked them: the
   * record comes out the same exactly when every answer does. */
  orion_reader_init(&rd, a->sig.data, a->sig.len);
  while (rd.bad == 0 && rd.left > 0 && now.len <= a->sig.len && !now.oom) {
    orion_binding b;
    const char *name;
    char nm[256];
    uint64_t n;
    size_t at;
    if (orion_reader_u64(&rd, &n) != 0 || n >= sizeof nm ||
        orion_reader_bytes(&rd, (size_t)n, &name) != 0)
      break;
    memcpy(nm, name, (size_t)n);
    nm[n] = '\0';
    at = now.len;
    resolve_cb(&r, nm, &b);
    /* Skip the rest of this question's record in the old one. */
    if (now.len - at < 8 + n ||
        orion_reader_bytes(&rd, now.len - at - 8 - (size_t)n, &name) != 0)
      break;
  }
  same = !now.oom && rd.bad == 0 && rd.left == 0 && now.len == a->sig.len &&
         (now.len == 0 || memcmp(now.data, a->sig.data, now.len) == 0);
  orion_buf_free(&now);
  r.sig = NULL;
  /* The values of the captured numbers the compiled body reads. */
  for (i = 0; same && a->cg_done && i < a->cg.nslots; i++) {
    orion_cslot *sl = &a->cg.slots[i];
    orion_binding b;
    if (sl->kind != ORION_CSLOT_CONST || sl->name == NULL)
      continue;
    resolve_cb(&r, sl->name, &b);
    if (b.kind != ORION_BIND_NUMBER || b.is_int != sl->isint) {
      same = 0;
      break;
    }
    sl->ival = b.ival;
    sl->fval = b.fval;
  }
  rctx_free(&r);
  return same;
}

/* The name the calling function gives the value at idx (a local or an
 * upvalue of the caller), or def. */
const char *orion__caller_name(lua_State *L, int idx, const char *def,
                               char *buf, size_t size) {
  lua_Debug ar;
  const char *n;
  int i;
  idx = lua_absindex(L, idx);
  if (!lua_getstack(L, 1, &ar))
    return def;
  for (i = 1; (n = lua_getlocal(L, &ar, i)) != NULL; i++) {
    int same = lua_rawequal(L, -1, idx);
    lua_pop(L, 1);
    if (same && n[0] != '(') {
      snprintf(buf, size, "%s", n);
      return buf;
    }
  }
  if (lua_getinfo(L, "f", &ar)) {
    int f = lua_gettop(L);
    for (i = 1; (n = lua_getupvalue(L, f, i)) != NULL; i++) {
      int same = lua_rawequal(L, -1, idx);
      lua_pop(L, 1);
      if (same) {
        snprintf(buf, size, "%s", n);
        lua_pop(L, 1);
        return buf;
      }
    }
    lua_pop(L, 1);
  }
  return def;
}

static orion_sched sched_by_name(lua_State *L, const char *s) {
  static const char *const names[] = {"none", "1d", "2d", "2d-ordered",
                                      "2d-skewed", NULL};
  int i;
  for (i = 0; names[i] != NULL; i++)
    if (strcmp(s, names[i]) == 0)
      return (orion_sched)i;
  luaL_error(L, "parallel_for: unknown schedule \"%s\" (use \"serial\", "
                "\"none\", \"1d\", \"2d\", \"2d-ordered\" or \"2d-skewed\")",
             s);
  return ORION_SCHED_REJECTED;
}

void orion__analyse(lua_State *L, darray *it, int ordered, int nparts,
                    const char *force, int space, const char *name,
                    analysis *out) {
  orion_analysis_in in;
  orion_error err;
  lua_Debug ar;
  rctx r;
  char iname[64];
  size_t srclen = 0;
  const char *text = NULL;
  int rc, kept = 0, nocache = 0;
  memset(out, 0, sizeof *out);
  memset(&in, 0, sizeof in);
  memset(&r, 0, sizeof r);
  in.force = force != NULL ? 1 + (int)sched_by_name(L, force) : 0;
  if (space != 0 && (space < 1 || space > (it->a->ragged ? 1 : it->a->ndims)))
    luaL_error(L, "parallel_for: space must be a key of the iterated array, "
                  "1..%d, not %d",
               it->a->ragged ? 1 : it->a->ndims, space);
  in.force_space = space;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar))
    snprintf(out->where, sizeof out->where, "%s:%d", ar.short_src,
             ar.currentline);
  else
    snprintf(out->where, sizeof out->where, "?");
  lua_pushvalue(L, 2);
  lua_getinfo(L, ">Su", &ar);
  if (strcmp(ar.what, "C") == 0)
    luaL_error(L, "parallel_for: the body is a C function; its source is "
                  "needed for the dependence analysis (write it in Lua, or "
                  "pass schedule = \"serial\")");
  in.body.line_defined = ar.linedefined;
  in.body.last_line = ar.lastlinedefined;
  in.body.nparams = ar.nparams;
  in.body.is_vararg = ar.isvararg;
  snprintf(out->chunk, sizeof out->chunk, "%s", ar.short_src);
  in.body.chunkname = out->chunk;
  if (ar.source[0] == '@' &&
      (kept = orion_srcstore_text(L, ar.source, 1, &text, &srclen)) != 0) {
    /* The text the chunk was loaded with (lua/srcstore.c).  A file loaded
     * again after an edit has several: the body's is the newest one in
     * which a function compiles to the body's code (lua/bodyid.c). */
    int k = kept;
    while (kept > 1 && k >= 1) {
      orion_srcstore_text(L, ar.source, k, &text, &srclen);
      in.body.src = text;
      in.body.len = srclen;
      orion_error_clear(&err);
      if (orion_body_identify(L, 2, 1, &in.body, &err) == 0)
        break;
      k--;
    }
    if (k < 1)
      luaL_error(L, "parallel_for: cannot analyse the body: %s was loaded "
                    "%d times with different texts and no function in any "
                    "of them compiles to the body's code (pass schedule = "
                    "\"serial\" to run without analysis)",
                 ar.source + 1, kept);
    out->src = orion_malloc(srclen + 1);
    if (out->src == NULL)
      luaL_error(L, "parallel_for: out of memory copying the body's source "
                    "(%zu bytes)", srclen);
    memcpy(out->src, text, srclen);
    out->src[srclen] = '\0';
    in.body.src = out->src;
    in.body.len = srclen;
  } else if (ar.source[0] == '@') {
    /* A chunk some other loader read (not the driver's): its file as it
     * is now, which may change under a kept plan (lua/plancache.h). */
    nocache = 1;
    orion_error_clear(&err);
    if (orion_read_file(ar.source + 1, &out->src, &srclen, &err) != 0)
      luaL_error(L, "parallel_for: cannot read the body's source %s: %s "
                    "(pass schedule = \"serial\" to run without analysis)",
                 ar.source + 1, err.msg);
    in.body.src = out->src;
    in.body.len = srclen;
  } else if (ar.source[0] == '=' || ar.source[0] == '\x1b') {
    luaL_error(L, "parallel_for: the body's source is not available (%s: "
                  "Lua keeps no source for bytecode, streams or chunks "
                  "named with '='); the dependence analysis needs it (pass "
                  "schedule = \"serial\" to run without analysis)",
               ar.short_src);
  } else {
    in.body.src = ar.source;
    in.body.len = ar.srclen;
  }
  /* The body's own text, not just another function on its lines. */
  orion_error_clear(&err);
  if (orion_body_identify(L, 2, ar.source[0] == '@', &in.body, &err) != 0) {
    orion_free(out->src);
    out->src = NULL;
    luaL_error(L, "parallel_for: cannot analyse the body: %s (pass schedule "
                  "= \"serial\" to run without analysis)",
               err.msg);
  }
  if (name == NULL)
    name = orion__caller_name(L, 1, NULL, iname, sizeof iname);
  in.iter_guessed = name == NULL;
  fill_info(it, name != NULL ? name : "A", &in.iter);
  r.L = L;
  r.fidx = 2;
  r.sig = &out->sig;
  in.resolve = resolve_cb;
  in.ud = &r;
  in.ordered = ordered;
  in.nparts = nparts;
  orion_error_clear(&err);
  rc = orion_analyze(&in, &out->plan, &err);
  rctx_free(&r);
  out->body = in.body;
  out->iter = in.iter;
  out->iter.name = NULL;
  if (rc != 0) {
    orion_free(out->src);
    out->src = NULL;
    luaL_error(L, "parallel_for: cannot analyse the body: %s (pass schedule "
                  "= \"serial\" to run without analysis)",
               err.msg);
  }
  out->ok = 1;
  out->cacheable = !nocache;
}

void orion__analysis_free(analysis *a) {
  if (a->ok)
    orion_plan_free(&a->plan);
  if (a->cg_done)
    orion_cgen_out_free(&a->cg);
  a->cg_done = a->cg_ok = 0;
  orion_free(a->src);
  a->src = NULL;
  a->ok = 0;
  orion_buf_free(&a->sig);
  a->cacheable = 0;
  orion_cobj_free(a->cobj);
  a->cobj = NULL;
}

void orion__gen_body(lua_State *L, analysis *a, int fast, int gpu) {
  orion_cgen_in in;
  orion_ast *ast = NULL;
  orion_error err;
  const ast_node *f;
  rctx r;
  int rc;
  memset(&in, 0, sizeof in);
  memset(&r, 0, sizeof r);
  orion_error_clear(&err);
  a->cg_done = 1;
  orion_buf_init(&a->cg.src);
  if (orion_parse(a->body.src, a->body.len, a->chunk, &ast, &err) != 0) {
    snprintf(a->note, sizeof a->note, "the body's source did not parse: %.700s",
             err.msg);
    return;
  }
  f = orion_find_body(ast->chunk, &a->body, &err);
  if (f == NULL) {
    snprintf(a->note, sizeof a->note, "%.760s", err.msg);
    orion_ast_free(ast);
    return;
  }
  r.L = L;
  r.fidx = 2;
  r.sig = &a->sig;
  in.func = f;
  in.chunk = ast->chunk;
  in.chunkname = a->chunk;
  in.iter = a->iter;
  in.resolve = resolve_cb;
  in.ud = &r;
  in.fast = fast;
  in.gpu = gpu;
  a->cg_gpu = gpu;
  rc = orion_cgen(&in, &a->cg, &err);
  rctx_free(&r);
  orion_ast_free(ast);
  if (rc == ORION_EUNSUPPORTED)
    snprintf(a->note, sizeof a->note,
             "%.200s:%.500s is outside the compiled subset",
             a->chunk, a->cg.why);
  else if (rc != 0)
    snprintf(a->note, sizeof a->note, "generating C failed: %.700s",
             err.msg);
  else
    a->cg_ok = 1;
}

void orion__note_interpreted(lua_State *L, const analysis *a) {
  int seen;
  lua_getfield(L, LUA_REGISTRYINDEX, "orion.tier_noted");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "orion.tier_noted");
  }
  lua_getfield(L, -1, a->where);
  seen = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!seen) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, a->where);
    orion_log_info("note: the parallel_for at %s runs in the Lua "
                   "interpreter: %s",
                   a->where, a->note);
  }
  lua_pop(L, 1);
}

#define ANALYSIS_MT "orion.Analysis"

static int analysis_gc(lua_State *L) {
  orion__analysis_free(lua_touserdata(L, 1));
  return 0;
}

analysis *orion__analysis_box(lua_State *L) {
  analysis *a = lua_newuserdatauv(L, sizeof *a, 0);
  memset(a, 0, sizeof *a);
  if (luaL_newmetatable(L, ANALYSIS_MT)) {
    lua_pushcfunction(L, analysis_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return a;
}

void orion__push_plan_text(lua_State *L, const analysis *a) {
  orion_buf b;
  orion_buf_init(&b);
  orion_plan_text(&a->plan, &b);
  lua_pushlstring(L, b.data != NULL ? b.data : "", b.len);
  orion_buf_free(&b);
}
