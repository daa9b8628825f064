#include "executor/capture.h"

#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "executor/bcscan.h"
#include "util/alloc.h"
#include "util/error.h"

#define MAX_DEPTH 100

/* ======================================================================
 * Names of the standard globals every executor state has (never shipped).
 * ====================================================================== */

static char **std_names;
static int nstd_names;

static void load_std_names(void) {
  lua_State *T;
  int n = 0;
  if (std_names != NULL)
    return;
  T = luaL_newstate();
  if (T == NULL)
    return;
  luaL_openlibs(T);
  lua_pushglobaltable(T);
  lua_pushnil(T);
  while (lua_next(T, -2)) {
    lua_pop(T, 1);
    n++;
  }
  std_names = orion_calloc((size_t)n + 1, sizeof *std_names);
  lua_pushnil(T);
  while (std_names != NULL && lua_next(T, -2)) {
    lua_pop(T, 1);
    if (lua_type(T, -1) == LUA_TSTRING)
      std_names[nstd_names++] = orion_strdup(lua_tostring(T, -1));
  }
  lua_close(T);
}

static int is_std_name(const char *name) {
  int i;
  load_std_names();
  for (i = 0; i < nstd_names; i++)
    if (strcmp(std_names[i], name) == 0)
      return 1;
  return 0;
}

/* ======================================================================
 * Encoder.
 * ====================================================================== */

typedef struct enc {
  lua_State *L;
  orion_buf *out;
  orion_capture_classify_fn classify;
  void *ud;
  orion_capture_info *info;
  int refs;    /* stack index: object -> ref number */
  int nrefs;
  int stdmap;  /* stack index: std function/table -> name (nil until a
                  function or table is met: build_stdmap) */
  char *err;
  size_t errlen;
  int depth;
} enc;

static void put_str(orion_buf *b, const char *s, size_t n) {
  orion_buf_u64(b, n);
  orion_buf_append(b, s, n);
}

static int fail(enc *e, const char *what, const char *detail) {
  snprintf(e->err, e->errlen, "parallel_for body captures %s, %s", what,
           detail);
  return ORION_ECAPTURE;
}

static void add_id(int64_t **v, int *n, int64_t id) {
  int i;
  int64_t *nv;
  for (i = 0; i < *n; i++)
    if ((*v)[i] == id)
      return;
  nv = orion_realloc(*v, sizeof **v * (size_t)(*n + 1));
  if (nv == NULL)
    return;
  nv[(*n)++] = id;
  *v = nv;
}

/* Builds the map from standard library functions and tables to their
 * names, from the driver's own globals, into its slot e->stdmap, when the
 * encoder first meets a C function or a table: a body that captures only
 * arrays, accumulators and numbers (MF's) skips it, and with it about a
 * tenth of the driver's CPU in a short loop (docs/design-notes.md). */
static void build_stdmap(enc *e) {
  lua_State *L = e->L;
  int i, map;
  lua_newtable(L);
  map = lua_gettop(L);
  load_std_names();
  for (i = 0; i < nstd_names; i++) {
    const char *name = std_names[i];
    lua_getglobal(L, name);
    if (lua_type(L, -1) == LUA_TTABLE && strcmp(name, "_G") != 0) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING &&
            lua_type(L, -1) == LUA_TFUNCTION) {
          lua_pushfstring(L, "%s.%s", name, lua_tostring(L, -2));
          lua_rawset(L, map);
        } else {
          lua_pop(L, 1);
        }
      }
    }
    if (lua_type(L, -1) == LUA_TTABLE || lua_type(L, -1) == LUA_TFUNCTION) {
      lua_pushstring(L, name);
      lua_rawset(L, map);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_replace(L, e->stdmap);
}

/* Pushes the standard name of the value at idx, or nothing (returns 0). */
static int std_name_of(enc *e, int idx) {
  idx = lua_absindex(e->L, idx);
  if (lua_isnil(e->L, e->stdmap))
    build_stdmap(e);
  lua_pushvalue(e->L, idx);
  if (lua_rawget(e->L, e->stdmap) == LUA_TSTRING)
    return 1;
  lua_pop(e->L, 1);
  return 0;
}

/* orion.nn (executor/nn.c): its table and C functions travel by name ('N' and
 * the function's name, "" for the table) and decode to the executor's own.
 * Pushes that name and returns 1 when the value at idx is one of them. */
static int nn_name_of(enc *e, int idx) {
  lua_State *L = e->L;
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, LUA_REGISTRYINDEX, "orion.nn") != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  if (lua_rawequal(L, -1, idx)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "");
    return 1;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, idx)) {
      lua_pop(L, 1);
      lua_remove(L, -2);
      return 1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

static int enc_nn(enc *e) {
  size_t n;
  const char *s = lua_tolstring(e->L, -1, &n);
  orion_buf_u8(e->out, 'N');
  put_str(e->out, s, n);
  lua_pop(e->L, 1);
  return 0;
}

static int enc_value(enc *e, int idx, const char *what);

/* Emits a back-reference if the object at idx was seen; otherwise registers
 * it and returns 0 so the caller encodes it in full. */
static int seen(enc *e, int idx) {
  lua_State *L = e->L;
  lua_pushvalue(L, idx);
  if (lua_rawget(L, e->refs) == LUA_TNUMBER) {
    orion_buf_u8(e->out, 'R');
    orion_buf_u64(e->out, (uint64_t)lua_tointeger(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, e->nrefs++);
  lua_rawset(L, e->refs);
  return 0;
}

static int writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  orion_buf_append(ud, p, sz);
  return 0;
}

/* t[k] through metamethods (arguments t, k), for a protected call. */
static int get_through_index(lua_State *L) {
  lua_settop(L, 2);
  lua_gettable(L, 1);
  return 1;
}

/* Pushes the value of the global g->name read raw, as the analysis reads
 * it (lua/analyse.c).  A global that only the __index metamethod of the
 * global table supplies (setmetatable(_G, {__index = t})) would be shipped
 * while the analysis saw nil and planned the loop without it: such a
 * global is refused, naming it and its line (ORION_ECAPTURE, nothing
 * pushed). */
static int push_global_raw(enc *e, const orion_bc_global *g,
                           const char *src) {
  lua_State *L = e->L;
  int top = lua_gettop(L), st;
  const char *raised = NULL;
  lua_pushglobaltable(L);
  lua_pushstring(L, g->name);
  if (lua_rawget(L, -2) != LUA_TNIL ||
      luaL_getmetafield(L, top + 1, "__index") == LUA_TNIL) {
    lua_remove(L, top + 1);
    return 0;
  }
  lua_pop(L, 2); /* __index and nil */
  lua_pushcfunction(L, get_through_index);
  lua_pushvalue(L, top + 1);
  lua_pushstring(L, g->name);
  st = lua_pcall(L, 2, 1, 0);
  if (st == LUA_OK && lua_isnil(L, -1)) {
    lua_remove(L, top + 1);
    return 0; /* nil either way */
  }
  if (st != LUA_OK)
    raised = lua_tostring(L, -1);
  snprintf(e->err, e->errlen,
           "parallel_for body reads global '%s' at %s:%d, which only the "
           "__index metamethod of the global table %s; the analysis and the "
           "executors read globals raw: make it a real global "
           "(rawset(_G, \"%s\", value)) or capture it in a local before "
           "the loop",
           g->name, src, g->line,
           raised != NULL ? "could supply (looking it up raised an error)"
                          : "supplies",
           g->name);
  lua_settop(L, top);
  return ORION_ECAPTURE;
}

/* Encodes the globals that function dump `chunk` reads, as an 'E' record.
 * The function is `what` ("the body", or the helper's place: "upvalue
 * 'f'"), defined on line `defined` of src. */
static int enc_env(enc *e, const char *chunk, size_t len, const char *src,
                   const char *what, int defined) {
  orion_bc_scan scan = {0};
  orion_error oerr;
  int i, count = 0, rc = 0;
  lua_State *L = e->L;
  if (orion_bcscan(chunk, len, &scan, &oerr) != 0) {
    snprintf(e->err, e->errlen, "cannot scan the body's bytecode: %s",
             oerr.msg);
    return ORION_ECAPTURE;
  }
  for (i = 0; i < scan.n; i++) {
    if (scan.items[i].write && strcmp(what, "the body") == 0) {
      snprintf(e->err, e->errlen,
               "parallel_for body assigns global '%s' at %s:%d; "
               "declare it local",
               scan.items[i].name, src, scan.items[i].line);
      orion_bc_scan_free(&scan);
      return ORION_ECAPTURE;
    }
    if (scan.items[i].write) {
      /* Not the body's own code: a helper it captures, which runs on the
       * executors with it (the body may well never name the global). */
      snprintf(e->err, e->errlen,
               "parallel_for body captures a helper function (%s, defined "
               "at %s:%d) that assigns global '%s' at %s:%d; the helper "
               "runs on the executors with the body, where a global cannot "
               "be assigned: declare '%s' local in the helper, or return the "
               "value to the body",
               what, src, defined, scan.items[i].name, src,
               scan.items[i].line, scan.items[i].name);
      orion_bc_scan_free(&scan);
      return ORION_ECAPTURE;
    }
  }
  orion_buf_u8(e->out, 'E');
  for (i = 0; i < scan.n; i++)
    if (!is_std_name(scan.items[i].name))
      count++;
  orion_buf_u64(e->out, (uint64_t)count);
  for (i = 0; i < scan.n && rc == 0; i++) {
    char gwhat[160];
    const char *name = scan.items[i].name;
    if (is_std_name(name))
      continue;
    put_str(e->out, name, strlen(name));
    snprintf(gwhat, sizeof gwhat, "global '%s'", name);
    rc = push_global_raw(e, &scan.items[i], src);
    if (rc != 0)
      break;
    rc = enc_value(e, -1, gwhat);
    lua_pop(L, 1);
  }
  orion_bc_scan_free(&scan);
  return rc;
}

static int enc_function(enc *e, int idx, const char *what) {
  lua_State *L = e->L;
  orion_buf dump;
  int n, rc = 0;
  if (lua_iscfunction(L, idx)) {
    if (std_name_of(e, idx)) {
      orion_buf_u8(e->out, 'G');
      put_str(e->out, lua_tostring(L, -1), lua_rawlen(L, -1));
      lua_pop(L, 1);
      return 0;
    }
    if (nn_name_of(e, idx))
      return enc_nn(e);
    return fail(e, what,
                "a C function that is not part of Lua's standard library; "
                "executors cannot receive it");
  }
  if (seen(e, idx))
    return 0;
  if (++e->depth > MAX_DEPTH)
    return fail(e, what, "functions nested too deeply");
  orion_buf_init(&dump);
  lua_pushvalue(L, idx);
  lua_dump(L, writer, &dump, 0);
  lua_pop(L, 1);
  if (dump.oom) {
    orion_buf_free(&dump);
    snprintf(e->err, e->errlen, "out of memory encoding %s", what);
    return ORION_ENOMEM;
  }
  orion_buf_u8(e->out, 'F');
  put_str(e->out, dump.data, dump.len);
  for (n = 0; lua_getupvalue(L, idx, n + 1) != NULL; n++)
    lua_pop(L, 1);
  orion_buf_u64(e->out, (uint64_t)n);
  for (int i = 1; i <= n && rc == 0; i++) {
    const char *name = lua_getupvalue(L, idx, i);
    char uwhat[160];
    put_str(e->out, name, strlen(name));
    if (strcmp(name, "_ENV") == 0 && lua_type(L, -1) == LUA_TTABLE) {
      int isglobal;
      lua_pushglobaltable(L);
      isglobal = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
      if (isglobal) {
        lua_Debug ar;
        lua_pushvalue(L, idx);
        lua_getinfo(L, ">S", &ar);
        rc = enc_env(e, dump.data, dump.len, ar.short_src, what,
                     ar.linedefined);
        lua_pop(L, 1);
        continue;
      }
    }
    snprintf(uwhat, sizeof uwhat, "upvalue '%s'", name);
    rc = enc_value(e, -1, uwhat);
    lua_pop(L, 1);
  }
  orion_buf_free(&dump);
  e->depth--;
  return rc;
}

/* The length n of the table at idx when it is a list of at least
 * MIN_INT_LIST integers, t[1..n], and nothing else; else 0. */
#define MIN_INT_LIST 16
static lua_Unsigned int_list_len(lua_State *L, int idx) {
  lua_Unsigned n = lua_rawlen(L, idx), i = 0;
  if (n < MIN_INT_LIST || n > (lua_Unsigned)INT_MAX)
    return 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (!lua_isinteger(L, -2) || !lua_isinteger(L, -1) ||
        (lua_Unsigned)lua_tointeger(L, -2) != ++i) {
      lua_pop(L, 2);
      return 0;
    }
    lua_pop(L, 1);
  }
  return i == n ? n : 0;
}

/* An integer list as 'L', its length and its values: a permutation of
 * 60k rows captured by a training loop costs a few copies, not a tagged
 * key and value per entry. */
static void enc_int_list(enc *e, int idx, lua_Unsigned n) {
  lua_State *L = e->L;
  lua_Unsigned i;
  orion_buf_u8(e->out, 'L');
  orion_buf_u64(e->out, (uint64_t)n);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i);
    orion_buf_u64(e->out, (uint64_t)lua_tointeger(L, -1));
    lua_pop(L, 1);
  }
}

static int enc_table(enc *e, int idx, const char *what) {
  lua_State *L = e->L;
  int rc = 0;
  char awhat[200];
  lua_Unsigned n;
  if (std_name_of(e, idx)) {
    orion_buf_u8(e->out, 'G');
    put_str(e->out, lua_tostring(L, -1), lua_rawlen(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "orion.module");
  if (lua_rawequal(L, -1, idx)) {
    lua_pop(L, 1);
    orion_buf_u8(e->out, 'M');
    return 0;
  }
  lua_pop(L, 1);
  if (nn_name_of(e, idx))
    return enc_nn(e);
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    return fail(e, what,
                "a table with a metatable; only plain tables can be copied to "
                "executors");
  }
  if (seen(e, idx))
    return 0;
  if (++e->depth > MAX_DEPTH)
    return fail(e, what, "a table nested too deeply");
  n = int_list_len(L, idx);
  if (n > 0) {
    enc_int_list(e, idx, n);
    e->depth--;
    return 0;
  }
  orion_buf_u8(e->out, 'T');
  /* Formatted once per table, not per entry: an array of 60k numbers
   * (a permutation) is encoded in every loop that captures it. */
  snprintf(awhat, sizeof awhat, "%s (a field)", what);
  lua_pushnil(L);
  while (rc == 0 && lua_next(L, idx)) {
    char fwhat[200];
    const char *w = awhat;
    if (lua_type(L, -2) == LUA_TSTRING) {
      snprintf(fwhat, sizeof fwhat, "%s field '%s'", what,
               lua_tostring(L, -2));
      w = fwhat;
    }
    rc = enc_value(e, -2, w);
    if (rc == 0)
      rc = enc_value(e, -1, w);
    lua_pop(L, 1);
  }
  if (rc != 0)
    lua_pop(L, 1); /* the key lua_next left */
  orion_buf_u8(e->out, 'e');
  e->depth--;
  return rc;
}

static int enc_value(enc *e, int idx, const char *what) {
  lua_State *L = e->L;
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    orion_buf_u8(e->out, 'n');
    return 0;
  case LUA_TBOOLEAN:
    orion_buf_u8(e->out, lua_toboolean(L, idx) ? 't' : 'f');
    return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      orion_buf_u8(e->out, 'i');
      orion_buf_u64(e->out, (uint64_t)lua_tointeger(L, idx));
    } else {
      lua_Number d = lua_tonumber(L, idx);
      uint64_t bits;
      memcpy(&bits, &d, sizeof bits);
      orion_buf_u8(e->out, 'd');
      orion_buf_u64(e->out, bits);
    }
    return 0;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    orion_buf_u8(e->out, 's');
    put_str(e->out, s, n);
    return 0;
  }
  case LUA_TTABLE:
    return enc_table(e, idx, what);
  case LUA_TFUNCTION:
    return enc_function(e, idx, what);
  case LUA_TUSERDATA: {
    int64_t id;
    int kind = e->classify != NULL ? e->classify(L, idx, &id, e->ud) : 0;
    /* The name the body knows an array by, for error messages: the last
     * quoted name in `what` ("upvalue 'model' field 'W'" -> W). */
    const char *end = strrchr(what, '\''), *name = NULL;
    if (end != NULL && end > what) {
      name = end - 1;
      while (name > what && *name != '\'')
        name--;
      if (*name != '\'')
        name = NULL;
    }
    if (kind == ORION_CAPTURE_ARRAY || kind == ORION_CAPTURE_BUFFER) {
      const char *dflt = kind == ORION_CAPTURE_ARRAY ? "array" : "buffer";
      orion_buf_u8(e->out, (uint8_t)kind);
      orion_buf_u64(e->out, (uint64_t)id);
      if (name != NULL) {
        put_str(e->out, name + 1, (size_t)(end - name - 1));
      } else {
        put_str(e->out, dflt, strlen(dflt));
      }
      if (kind == ORION_CAPTURE_ARRAY)
        add_id(&e->info->arrays, &e->info->narrays, id);
      else
        add_id(&e->info->buffers, &e->info->nbuffers, id);
      return 0;
    }
    if (kind == ORION_CAPTURE_ACC) {
      orion_buf_u8(e->out, 'C');
      orion_buf_u64(e->out, (uint64_t)id);
      add_id(&e->info->accs, &e->info->naccs, id);
      return 0;
    }
    return fail(e, what,
                "a userdata that is not a DistArray, an accumulator or a "
                "buffer; executors cannot receive it");
  }
  case LUA_TTHREAD:
    return fail(e, what, "a coroutine; executors cannot receive it");
  default:
    return fail(e, what, "a light userdata; executors cannot receive it");
  }
}

void orion_capture_info_free(orion_capture_info *info) {
  orion_free(info->arrays);
  orion_free(info->accs);
  orion_free(info->buffers);
  memset(info, 0, sizeof *info);
}

int orion_capture_encode(lua_State *L, int fidx,
                         orion_capture_classify_fn classify, void *ud,
                         orion_buf *out, orion_capture_info *info, char *err,
                         size_t errlen) {
  enc e;
  orion_capture_info scratch;
  int top = lua_gettop(L), rc;
  memset(&e, 0, sizeof e);
  if (info == NULL)
    info = &scratch;
  memset(info, 0, sizeof *info);
  fidx = lua_absindex(L, fidx);
  if (lua_type(L, fidx) != LUA_TFUNCTION || lua_iscfunction(L, fidx)) {
    snprintf(err, errlen, "the loop body must be a Lua function");
    return ORION_ECAPTURE;
  }
  e.L = L;
  e.out = out;
  e.classify = classify;
  e.ud = ud;
  e.info = info;
  e.err = err;
  e.errlen = errlen;
  luaL_checkstack(L, 2 * MAX_DEPTH + 20, "capture");
  lua_newtable(L);
  e.refs = lua_gettop(L);
  /* Its slot is taken up front so that it sits below everything the
   * encoder pushes (a map pushed mid-stack was popped by a caller for its
   * own value); the map itself is built when first needed. */
  lua_pushnil(L);
  e.stdmap = lua_gettop(L);
  rc = enc_function(&e, fidx, "the body");
  lua_settop(L, top);
  if (rc == 0 && out->oom) {
    snprintf(err, errlen, "out of memory encoding the body");
    rc = ORION_ENOMEM;
  }
  if (rc != 0 || info == &scratch)
    orion_capture_info_free(info);
  return rc;
}

int orion_capture_check_assigns(lua_State *L, int fidx, char *err,
                                size_t errlen) {
  orion_buf dump;
  orion_bc_scan scan = {0};
  orion_error oerr;
  lua_Debug ar;
  int rc = 0;
  fidx = lua_absindex(L, fidx);
  if (lua_type(L, fidx) != LUA_TFUNCTION || lua_iscfunction(L, fidx))
    return 0; /* orion_capture_encode says what the body must be */
  orion_buf_init(&dump);
  lua_pushvalue(L, fidx);
  lua_dump(L, writer, &dump, 0);
  lua_getinfo(L, ">S", &ar);
  if (dump.oom) {
    orion_buf_free(&dump);
    snprintf(err, errlen, "out of memory scanning the body");
    return ORION_ENOMEM;
  }
  /* A body loaded from stripped bytecode names no upvalues and no lines:
   * it is not refused here, and the analysis (which needs its source) or
   * the capture (for the globals it reads) says what is wrong with it. */
  rc = orion_bcscan_upvalue_writes(dump.data, dump.len, &scan, &oerr);
  if (rc == ORION_ENOMEM) {
    snprintf(err, errlen, "out of memory scanning the body");
  } else if (rc != 0) {
    rc = 0;
  } else if (scan.n > 0) {
    const char *name = scan.items[0].name;
    snprintf(err, errlen,
             "parallel_for body assigns upvalue '%s' at %s:%d; the body "
             "runs on a copy of '%s' on each executor, so the assignment "
             "would be lost: add into an orion.accumulator (acc:add(x)) or "
             "write through an orion.buffer, or declare it local inside the "
             "body",
             name, ar.short_src, scan.items[0].line, name);
    rc = ORION_ECAPTURE;
  }
  orion_bc_scan_free(&scan);
  orion_buf_free(&dump);
  return rc;
}

/* ======================================================================
 * Decoder.
 * ====================================================================== */

typedef struct dec {
  lua_State *L;
  orion_reader r;
  orion_capture_resolve_fn resolve;
  void *ud;
  int refs; /* stack index: ref number -> object */
  int nrefs;
  char *err;
  size_t errlen;
  int depth;
} dec;

static int bad(dec *d, const char *what) {
  snprintf(d->err, d->errlen, "malformed body capture: %s", what);
  return ORION_EPARSE;
}

static int get_str(dec *d, const char **s, size_t *n) {
  uint64_t len;
  if (orion_reader_u64(&d->r, &len) != 0 ||
      orion_reader_bytes(&d->r, (size_t)len, s) != 0)
    return ORION_ETRUNC;
  *n = (size_t)len;
  return 0;
}

static int dec_value(dec *d);

/* Pushes the globals decoded functions see (ORION_CAPTURE_GLOBALS). */
static void push_globals(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, ORION_CAPTURE_GLOBALS) !=
      LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushglobaltable(L);
  }
}

/* Replaces the key at the top by the field of the table just below it,
 * read raw; when that table is a read-only view of another (its __index
 * is a table: executor/exec_sandbox.c), the field of the table it shows. */
static void raw_field(lua_State *L) {
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) == LUA_TNIL && lua_getmetatable(L, -3)) {
    if (lua_getfield(L, -1, "__index") == LUA_TTABLE) {
      lua_pushvalue(L, -4);
      lua_rawget(L, -2);
      lua_replace(L, -4);
    }
    lua_pop(L, 2);
  }
  lua_remove(L, -2);
}

/* Pushes the value at a dotted path like "math.sqrt" from the globals. */
static int push_path(dec *d, const char *s, size_t n) {
  lua_State *L = d->L;
  const char *dot = memchr(s, '.', n);
  push_globals(L);
  if (dot == NULL) {
    lua_pushlstring(L, s, n);
    raw_field(L);
  } else {
    lua_pushlstring(L, s, (size_t)(dot - s));
    raw_field(L);
    if (!lua_istable(L, -1)) {
      lua_pop(L, 2);
      return bad(d, "unknown standard library name");
    }
    lua_pushlstring(L, dot + 1, n - (size_t)(dot - s) - 1);
    raw_field(L);
    lua_remove(L, -2);
  }
  lua_remove(L, -2);
  return 0;
}

static int global_assign_error(lua_State *L) {
  return luaL_error(L, "assignment to global '%s' inside a parallel_for body",
                    luaL_tolstring(L, 2, NULL));
}

static int dec_env(dec *d) {
  lua_State *L = d->L;
  uint64_t count, i;
  int rc = 0;
  if (orion_reader_u64(&d->r, &count) != 0)
    return bad(d, "truncated environment");
  lua_newtable(L);
  for (i = 0; i < count && rc == 0; i++) {
    const char *s;
    size_t n;
    if (get_str(d, &s, &n) != 0)
      return lua_pop(L, 1), bad(d, "truncated global name");
    lua_pushlstring(L, s, n);
    rc = dec_value(d);
    if (rc != 0) {
      lua_pop(L, 2);
      return rc;
    }
    lua_rawset(L, -3);
  }
  lua_newtable(L);
  push_globals(L);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, global_assign_error);
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, -2);
  return 0;
}

/* lua_load reader over one byte range {start, end}: the whole range on the
 * first call, then the end of input. */
static const char *chunk_reader(lua_State *L, void *ud, size_t *size) {
  const char **p = ud, *r = p[0];
  (void)L;
  *size = r != NULL ? (size_t)(p[1] - r) : 0;
  p[0] = NULL;
  return r;
}

static int dec_function(dec *d) {
  lua_State *L = d->L;
  const char *code, *range[2];
  size_t n;
  uint64_t nups, i;
  int fidx, rc = 0;
  lua_Debug ar;
  if (++d->depth > MAX_DEPTH)
    return bad(d, "nested too deeply");
  if (get_str(d, &code, &n) != 0 || orion_reader_u64(&d->r, &nups) != 0)
    return bad(d, "truncated function");
  range[0] = code;
  range[1] = code + n;
  if (lua_load(L, chunk_reader, (void *)range, "=body", "b") != LUA_OK) {
    snprintf(d->err, d->errlen, "cannot load the body's bytecode: %s",
             lua_tostring(L, -1));
    lua_pop(L, 1);
    return ORION_EPARSE;
  }
  /* A damaged chunk can give its closure fewer upvalues than its prototype
   * names; lua_setupvalue would then index past the closure's array. */
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">u", &ar);
  if ((uint64_t)ar.nups != nups) {
    lua_pop(L, 1);
    return bad(d, "upvalue count mismatch");
  }
  fidx = lua_gettop(L);
  lua_pushvalue(L, fidx);
  lua_rawseti(L, d->refs, ++d->nrefs);
  for (i = 1; i <= nups && rc == 0; i++) {
    const char *name;
    size_t nn;
    uint8_t tag;
    if (get_str(d, &name, &nn) != 0 || orion_reader_u8(&d->r, &tag) != 0) {
      rc = bad(d, "truncated upvalue");
      break;
    }
    if (tag == 'E')
      rc = dec_env(d);
    else {
      /* Step back so dec_value sees the tag. */
      d->r.p--;
      d->r.left++;
      rc = dec_value(d);
    }
    if (rc == 0 && lua_setupvalue(L, fidx, (int)i) == NULL) {
      lua_pop(L, 1);
      rc = bad(d, "upvalue count mismatch");
    }
  }
  if (rc != 0)
    lua_settop(L, fidx - 1);
  d->depth--;
  return rc;
}

static int dec_value(dec *d) {
  lua_State *L = d->L;
  uint8_t tag;
  uint64_t x;
  const char *s;
  size_t n;
  if (orion_reader_u8(&d->r, &tag) != 0)
    return bad(d, "truncated value");
  switch (tag) {
  case 'n':
    lua_pushnil(L);
    return 0;
  case 't':
  case 'f':
    lua_pushboolean(L, tag == 't');
    return 0;
  case 'i':
    if (orion_reader_u64(&d->r, &x) != 0)
      return bad(d, "truncated integer");
    lua_pushinteger(L, (lua_Integer)x);
    return 0;
  case 'd': {
    lua_Number v;
    if (orion_reader_u64(&d->r, &x) != 0)
      return bad(d, "truncated number");
    memcpy(&v, &x, sizeof v);
    lua_pushnumber(L, v);
    return 0;
  }
  case 's':
    if (get_str(d, &s, &n) != 0)
      return bad(d, "truncated string");
    lua_pushlstring(L, s, n);
    return 0;
  case 'R':
    if (orion_reader_u64(&d->r, &x) != 0 || x >= (uint64_t)d->nrefs)
      return bad(d, "bad reference");
    lua_rawgeti(L, d->refs, (lua_Integer)x + 1);
    return 0;
  case 'L': { /* integers t[1..n] (enc_int_list) */
    uint64_t i, v;
    if (orion_reader_u64(&d->r, &x) != 0 || x > d->r.left / 8 ||
        x > (uint64_t)INT_MAX)
      return bad(d, "truncated integer list");
    lua_createtable(L, (int)x, 0);
    lua_pushvalue(L, -1);
    lua_rawseti(L, d->refs, ++d->nrefs);
    for (i = 0; i < x; i++) {
      (void)orion_reader_u64(&d->r, &v); /* the length was checked */
      lua_pushinteger(L, (lua_Integer)v);
      lua_rawseti(L, -2, (lua_Integer)(i + 1));
    }
    return 0;
  }
  case 'T': {
    int rc = 0;
    if (++d->depth > MAX_DEPTH)
      return bad(d, "nested too deeply");
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, d->refs, ++d->nrefs);
    for (;;) {
      if (d->r.left > 0 && (uint8_t)d->r.p[0] == 'e') {
        d->r.p++;
        d->r.left--;
        break;
      }
      rc = dec_value(d);
      if (rc == 0) {
        rc = dec_value(d);
        if (rc != 0)
          lua_pop(L, 1);
      }
      if (rc == 0 && lua_isnil(L, -2)) {
        lua_pop(L, 2);
        rc = bad(d, "nil table key");
      }
      /* lua_rawset would raise (unprotected) on a NaN key. */
      if (rc == 0 && lua_type(L, -2) == LUA_TNUMBER &&
          lua_tonumber(L, -2) != lua_tonumber(L, -2)) {
        lua_pop(L, 2);
        rc = bad(d, "NaN table key");
      }
      if (rc != 0) {
        lua_pop(L, 1);
        return rc;
      }
      lua_rawset(L, -3);
    }
    d->depth--;
    return 0;
  }
  case 'F':
    return dec_function(d);
  case 'G':
    if (get_str(d, &s, &n) != 0)
      return bad(d, "truncated name");
    return push_path(d, s, n);
  case 'N': /* orion.nn or one of its functions, from the registry */
    if (get_str(d, &s, &n) != 0)
      return bad(d, "truncated name");
    if (lua_getfield(L, LUA_REGISTRYINDEX, "orion.nn") != LUA_TTABLE) {
      lua_pop(L, 1);
      return bad(d, "no orion.nn module on this executor");
    }
    if (n > 0) {
      lua_pushlstring(L, s, n);
      if (lua_rawget(L, -2) != LUA_TFUNCTION) {
        lua_pop(L, 2);
        return bad(d, "unknown orion.nn function");
      }
      lua_remove(L, -2);
    }
    return 0;
  case 'M':
    if (d->resolve(L, 'M', 0, "orion", d->ud) != 0)
      return bad(d, "no orion module on this executor");
    return 0;
  case 'A':
  case 'B':
  case 'C': {
    char name[128] = "array";
    const char *what = tag == 'A'   ? "array"
                       : tag == 'B' ? "buffer"
                                    : "accumulator";
    if (orion_reader_u64(&d->r, &x) != 0)
      return bad(d, "truncated id");
    if (tag != 'C') {
      if (get_str(d, &s, &n) != 0)
        return bad(d, "truncated name");
      if (n >= sizeof name)
        n = sizeof name - 1;
      memcpy(name, s, n);
      name[n] = '\0';
    }
    if (d->resolve(L, tag, (int64_t)x, name, d->ud) != 0) {
      snprintf(d->err, d->errlen, "%s %lld is not bound on this executor",
               what, (long long)x);
      return ORION_ECAPTURE;
    }
    return 0;
  }
  default:
    return bad(d, "unknown tag");
  }
}

int orion_capture_decode(lua_State *L, const char *blob, size_t len,
                         orion_capture_resolve_fn resolve, void *ud,
                         char *err, size_t errlen) {
  dec d;
  uint8_t tag;
  int rc, top = lua_gettop(L);
  memset(&d, 0, sizeof d);
  d.L = L;
  d.resolve = resolve;
  d.ud = ud;
  d.err = err;
  d.errlen = errlen;
  orion_reader_init(&d.r, blob, len);
  if (!lua_checkstack(L, 2 * MAX_DEPTH + 20))
    return bad(&d, "stack overflow");
  lua_newtable(L);
  d.refs = lua_gettop(L);
  if (orion_reader_u8(&d.r, &tag) != 0 || tag != 'F') {
    lua_settop(L, top);
    return bad(&d, "does not start with a function");
  }
  rc = dec_function(&d);
  if (rc == 0 && d.r.left != 0)
    rc = bad(&d, "trailing bytes");
  if (rc != 0) {
    lua_settop(L, top);
    return rc;
  }
  lua_remove(L, d.refs);
  return 0;
}
