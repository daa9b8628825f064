/* orion.checkpoint, orion.restore, orion.step and orion.checkpoint_dir
 * (issue 19; lua/checkpoint.h).
 *
 * A checkpoint is taken between loops, where nothing is in flight: every
 * live DistArray (with the rows loops left on executors brought back
 * first), the accumulators, the module's counters (script seed, the next
 * array, accumulator, loop and buffer ids: loop ids seed the bodies'
 * math.random), the driver's own math.random state, the blocks each array
 * was last cut into, the script's `state` table (plain data, as Lua
 * source) and a hash of the script and its arguments.  dsm/ckpt.c lays
 * the files out and checks them.
 *
 * Arrays are named for messages and matching by the local (or upvalue)
 * of the calling function that holds them; restore matches the arrays
 * alive when it is called by that name, else by their id (the count of
 * arrays the script created, the same in every run of the same script). */
#include "lua/checkpoint.h"

#include <inttypes.h>
#include <lauxlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/arrayfile.h"
#include "dsm/ckpt.h"
#include "dsm/cluster.h"
#include "dsm/replica.h"
#include "dsm/types.h"
#include "lua/checkpoint_parts.h"
#include "scheduler/dist.h"
#include "scheduler/module.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/log.h"

#define CKPT_KEY "orion.ckpt"
#define STATE_DEPTH 64
#define CKPT_FAILURES_MAX 3 /* checkpoints in a row not written end a job */

typedef struct ckpt_state {
  char *dir;             /* --checkpoint-dir; NULL: none */
  int resume, force;     /* --resume (1; 2: --resume=auto), --force */
  int failures;          /* checkpoints in a row that were not written */
  int64_t saved;         /* the last checkpoint written or resumed; -1 */
  int64_t cur;           /* the step the script last reached; -1 */
  int checked_fresh;     /* a fresh start found dir without checkpoints */
  /* The last checkpoint this process wrote, whose unchanged arrays the
   * next one links (dsm/ckpt.h): its folder, and its arrays' ids and
   * content hashes. */
  char *prev;
  int nprev;
  int64_t *prev_id;
  uint64_t *prev_hash;
} ckpt_state;

static int ckpt_gc(lua_State *L) {
  ckpt_state *c = lua_touserdata(L, 1);
  orion_free(c->dir);
  orion_free(c->prev);
  orion_free(c->prev_id);
  orion_free(c->prev_hash);
  c->dir = c->prev = NULL;
  c->prev_id = NULL;
  c->prev_hash = NULL;
  return 0;
}

/* Remembers checkpoint ck, written to folder, for the next one. */
static void remember(ckpt_state *c, const orion_ckpt *ck, const char *folder) {
  int i;
  orion_free(c->prev);
  orion_free(c->prev_id);
  orion_free(c->prev_hash);
  c->nprev = 0;
  c->prev = orion_strdup(folder);
  c->prev_id = orion_malloc((size_t)(ck->narrays + 1) * sizeof *c->prev_id);
  c->prev_hash =
      orion_malloc((size_t)(ck->narrays + 1) * sizeof *c->prev_hash);
  if (c->prev == NULL || c->prev_id == NULL || c->prev_hash == NULL)
    return; /* nothing is linked next time */
  for (i = 0; i < ck->narrays; i++) {
    c->prev_id[i] = ck->arrays[i].id;
    c->prev_hash[i] = ck->arrays[i].hash;
  }
  c->nprev = ck->narrays;
}

static ckpt_state *cstate(lua_State *L) {
  ckpt_state *c;
  lua_getfield(L, LUA_REGISTRYINDEX, CKPT_KEY);
  c = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (c == NULL) {
    c = lua_newuserdatauv(L, sizeof *c, 0);
    memset(c, 0, sizeof *c);
    c->saved = c->cur = -1;
    lua_newtable(L);
    lua_pushcfunction(L, ckpt_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, CKPT_KEY);
  }
  return c;
}

void orion__checkpoint_configure(lua_State *L, const char *dir, int resume,
                                 int force) {
  ckpt_state *c = cstate(L);
  orion_free(c->dir);
  c->dir = dir != NULL ? orion_strdup(dir) : NULL;
  c->resume = resume;
  c->force = force;
}

void orion_checkpoint_progress(lua_State *L, int64_t *saved, int64_t *cur) {
  ckpt_state *c = cstate(L);
  *saved = c->saved;
  *cur = c->cur;
}

/* ---- the script and its arguments ---------------------------------------- */

/* Hashes the script file's bytes and its arguments (the global `arg`), and
 * puts "SCRIPT ARG ..." (control bytes as '?', at most 400 bytes) in
 * words. */
static uint64_t script_hash(lua_State *L, char *words, size_t n) {
  uint64_t h = ORION_HASH_INIT;
  size_t w = 0;
  lua_Integer i;
  words[0] = '\0';
  lua_getglobal(L, "arg");
  for (i = 0; lua_istable(L, -1); i++) {
    size_t len, k;
    const char *s;
    lua_rawgeti(L, -1, i);
    s = lua_tolstring(L, -1, &len);
    if (s == NULL) {
      lua_pop(L, 1);
      break;
    }
    if (i == 0) { /* the script: its bytes, and its base name in words */
      FILE *f = fopen(s, "rb");
      char buf[8192];
      size_t r;
      const char *base = strrchr(s, '/');
      while (f != NULL && (r = fread(buf, 1, sizeof buf, f)) > 0)
        h = orion_hash_bytes(h, buf, r);
      if (f != NULL)
        fclose(f);
      s = base != NULL ? base + 1 : s;
      len = strlen(s);
    } else {
      h = orion_hash_u64(h, (uint64_t)len);
      h = orion_hash_bytes(h, s, len);
    }
    for (k = 0; k <= len && w + 2 < n && w < 400; k++) {
      char ch = k < len ? s[k] : ' ';
      words[w++] = (unsigned char)ch < 32 || ch == 127 ? '?' : ch;
    }
    words[w] = '\0';
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  while (w > 0 && words[w - 1] == ' ')
    words[--w] = '\0';
  return h;
}

/* ---- the state table ------------------------------------------------------- */

/* Appends the Lua source of the value at idx to b; 0, or -1 with why set
 * ("state.opts.f is a function"). */
static int ser(lua_State *L, int idx, orion_buf *b, char *path, size_t plen,
               int depth, char *why, size_t n) {
  char tmp[64];
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    orion_buf_append(b, "nil", 3);
    return 0;
  case LUA_TBOOLEAN:
    orion_buf_append(b, lua_toboolean(L, idx) ? "true" : "false",
                     lua_toboolean(L, idx) ? 4 : 5);
    return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      lua_Integer v = lua_tointeger(L, idx);
      if (v == LUA_MININTEGER)
        snprintf(tmp, sizeof tmp, "(-%lld-1)", (long long)LUA_MAXINTEGER);
      else
        snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    } else {
      double v = lua_tonumber(L, idx);
      if (isnan(v))
        snprintf(tmp, sizeof tmp, "(0/0)");
      else if (isinf(v))
        snprintf(tmp, sizeof tmp, v > 0 ? "(1/0)" : "(-1/0)");
      else
        snprintf(tmp, sizeof tmp, "%a", v); /* exact */
    }
    orion_buf_append(b, tmp, strlen(tmp));
    return 0;
  case LUA_TSTRING: {
    size_t len, i;
    const unsigned char *s =
        (const unsigned char *)lua_tolstring(L, idx, &len);
    orion_buf_append(b, "\"", 1);
    for (i = 0; i < len; i++) {
      if (s[i] >= 32 && s[i] < 127 && s[i] != '"' && s[i] != '\\')
        orion_buf_append(b, (const char *)&s[i], 1);
      else {
        snprintf(tmp, sizeof tmp, "\\%03u", (unsigned)s[i]);
        orion_buf_append(b, tmp, 4);
      }
    }
    orion_buf_append(b, "\"", 1);
    return 0;
  }
  case LUA_TTABLE: {
    size_t at = strlen(path);
    if (depth >= STATE_DEPTH) {
      snprintf(why, n, "%s nests more than %d tables deep (a cycle?)", path,
               STATE_DEPTH);
      return -1;
    }
    if (lua_getmetatable(L, idx)) {
      lua_pop(L, 1);
      snprintf(why, n, "%s is a table with a metatable", path);
      return -1;
    }
    orion_buf_append(b, "{", 1);
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
      int kt = lua_type(L, -2);
      if (kt == LUA_TSTRING)
        snprintf(path + at, plen - at, ".%.40s", lua_tostring(L, -2));
      else if (kt == LUA_TNUMBER || kt == LUA_TBOOLEAN) {
        lua_pushvalue(L, -2);
        snprintf(path + at, plen - at, "[%.40s]", luaL_tolstring(L, -1, NULL));
        lua_pop(L, 2);
      } else {
        path[at] = '\0';
        snprintf(why, n, "%s has a key that is a %s", path,
                 luaL_typename(L, -2));
        lua_pop(L, 2);
        return -1;
      }
      orion_buf_append(b, "[", 1);
      if (ser(L, -2, b, path, plen, depth + 1, why, n) != 0 ||
          (orion_buf_append(b, "]=", 2),
           ser(L, -1, b, path, plen, depth + 1, why, n) != 0)) {
        lua_pop(L, 2);
        return -1;
      }
      orion_buf_append(b, ",", 1);
      lua_pop(L, 1);
      path[at] = '\0';
    }
    orion_buf_append(b, "}", 1);
    return 0;
  }
  default: {
    const char *what = luaL_typename(L, idx);
    if (luaL_testudata(L, idx, ARRAY_MT) != NULL)
      what = "DistArray (arrays are saved by themselves: keep it in a "
             "local declared before orion.restore())";
    else if (luaL_testudata(L, idx, ACC_MT) != NULL)
      what = "Accumulator (accumulators are saved by themselves)";
    snprintf(why, n, "%s is a %s", path, what);
    return -1;
  }
  }
}

/* ---- the arrays ------------------------------------------------------------ */

typedef struct live {
  darray *d;
  char name[ORION_CKPT_NAME_MAX + 1];
} live;

static int cmp_live(const void *x, const void *y) {
  int64_t a = ((const live *)x)->d->id, b = ((const live *)y)->d->id;
  return a < b ? -1 : a > b;
}

static void name_one(lua_State *L, const char *name, live *v, int nv) {
  darray *d = luaL_testudata(L, -1, ARRAY_MT);
  int i;
  if (d == NULL || name == NULL || name[0] == '(' ||
      strlen(name) > ORION_CKPT_NAME_MAX)
    return;
  for (i = 0; i < nv; i++)
    if (v[i].d == d && v[i].name[0] == '\0')
      snprintf(v[i].name, sizeof v[i].name, "%s", name);
}

/* The live DistArrays, sorted by id (orion_malloc'd; *nv entries), named
 * after the caller's locals and upvalues that hold them.  The registry's
 * weak table is the list; a full collection first drops the dead. */
static live *live_arrays(lua_State *L, int *nv) {
  live *v = NULL;
  int n = 0, cap = 0, i;
  lua_Debug ar;
  const char *name;
  lua_gc(L, LUA_GCCOLLECT);
  lua_getfield(L, LUA_REGISTRYINDEX, ARRAYS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    darray *d = luaL_testudata(L, -1, ARRAY_MT);
    if (d != NULL && d->a != NULL) {
      if (n == cap) {
        live *nl = orion_realloc(v, (size_t)(cap = cap ? 2 * cap : 16) *
                                        sizeof *nl);
        if (nl == NULL) {
          orion_free(v);
          luaL_error(L, "out of memory");
        }
        v = nl;
      }
      v[n].d = d;
      v[n++].name[0] = '\0';
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (n > 1)
    qsort(v, (size_t)n, sizeof *v, cmp_live);
  if (lua_getstack(L, 1, &ar)) {
    for (i = 1; (name = lua_getlocal(L, &ar, i)) != NULL; i++) {
      name_one(L, name, v, n);
      lua_pop(L, 1);
    }
    lua_getinfo(L, "f", &ar);
    for (i = 1; (name = lua_getupvalue(L, -1, i)) != NULL; i++) {
      name_one(L, name, v, n);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  *nv = n;
  return v;
}

static void dims_text(const orion_ckpt_array *e, char *out, size_t n) {
  size_t w = 0;
  int d;
  out[0] = '\0';
  for (d = 0; d < e->ndims && w < n; d++)
    w += (size_t)snprintf(out + w, n - w, "%s%" PRId64, d ? " x " : "",
                          e->dims[d]);
  snprintf(out + (w < n ? w : n - 1), n - (w < n ? w : n - 1), " %s %s",
           orion_type_name((orion_type)e->type),
           e->sparse ? "sparse" : "dense");
}

/* ---- the module's counters, random state, accumulators, blocks ----------- */

/* The 32-byte state of the driver's math.random (Lua 5.4 keeps it in the
 * function's one upvalue, a userdata), or NULL. */
static void *lua_random_state(lua_State *L) {
  void *p = NULL;
  lua_getglobal(L, "math");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "random");
    if (lua_iscfunction(L, -1) && lua_getupvalue(L, -1, 1) != NULL) {
      if (lua_type(L, -1) == LUA_TUSERDATA && lua_rawlen(L, -1) == 32)
        p = lua_touserdata(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return p; /* the function keeps it alive */
}

static void meta_append(orion_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void meta_append(orion_buf *b, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  int w;
  va_start(ap, fmt);
  w = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (w > 0)
    orion_buf_append(b, line, (size_t)w < sizeof line ? (size_t)w
                                                      : sizeof line - 1);
}

static void write_meta(lua_State *L, mod_state *s, const live *v, int nv,
                       orion_buf *b) {
  const uint64_t *rs = lua_random_state(L);
  int i, k;
  meta_append(b,
              "counters %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64
              " %" PRId64 "\n",
              s->seed, s->next_array_id, s->next_acc_id, s->next_loop_id,
              s->next_buffer_id);
  if (rs != NULL)
    meta_append(b, "random %016" PRIx64 " %016" PRIx64 " %016" PRIx64
                   " %016" PRIx64 "\n",
                rs[0], rs[1], rs[2], rs[3]);
  lua_getfield(L, LUA_REGISTRYINDEX, ACCS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    dacc *a = luaL_testudata(L, -1, ACC_MT);
    if (a != NULL)
      meta_append(b, "acc %" PRId64 " %s %d %d %lld %a\n", a->id,
                  orion_acc_op_name(a->op), a->val.has, a->val.isint,
                  (long long)a->val.i, (double)a->val.d);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  /* The partition bounds: where each block of the array's last cut
   * starts (element positions; -1: an empty block). */
  for (i = 0; i < nv; i++) {
    const darray *d = v[i].d;
    if (!d->have_bs)
      continue;
    orion_buf_append(b, "blocks", 6);
    meta_append(b, " %" PRId64 " %d %d", d->id, d->bs.n0, d->bs.n1);
    for (k = 0; k < d->bs.n0 * d->bs.n1; k++)
      meta_append(b, " %" PRId64,
                  d->bs.first[k] < d->bs.first[k + 1]
                      ? d->bs.segs[d->bs.first[k]].lo
                      : -1);
    orion_buf_append(b, "\n", 1);
  }
}

static void read_meta(lua_State *L, mod_state *s, const char *meta) {
  const char *l;
  for (l = meta; l != NULL && *l != '\0';) {
    unsigned long long seed;
    long long na, nc, nl, nb, id, iv;
    uint64_t r[4];
    char op[16];
    int has, isint;
    double dv;
    if (sscanf(l, "counters %llu %lld %lld %lld %lld", &seed, &na, &nc, &nl,
               &nb) == 5) {
      s->seed = seed;
      if (na > s->next_array_id)
        s->next_array_id = na;
      if (nc > s->next_acc_id)
        s->next_acc_id = nc;
      s->next_loop_id = nl;
      if (nb > s->next_buffer_id)
        s->next_buffer_id = nb;
    } else if (sscanf(l, "random %" SCNx64 " %" SCNx64 " %" SCNx64
                         " %" SCNx64,
                      &r[0], &r[1], &r[2], &r[3]) == 4) {
      uint64_t *rs = lua_random_state(L);
      if (rs != NULL)
        memcpy(rs, r, sizeof r);
    } else if (sscanf(l, "acc %lld %15s %d %d %lld %lf", &id, op, &has,
                      &isint, &iv, &dv) == 6) {
      dacc *a = orion__by_id(L, ACCS_KEY, ACC_MT, id);
      if (a != NULL && strcmp(orion_acc_op_name(a->op), op) == 0) {
        a->val.has = has;
        a->val.isint = isint;
        a->val.i = (lua_Integer)iv;
        a->val.d = dv;
      }
    }
    l = strchr(l, '\n');
    if (l != NULL)
      l++;
  }
}

/* ---- orion.checkpoint ------------------------------------------------------ */

static ckpt_state *need_dir(lua_State *L, const char *fn) {
  ckpt_state *c = cstate(L);
  if (c->dir == NULL)
    luaL_error(L, "%s: no checkpoint directory (start orion-driver with "
                  "--checkpoint-dir DIR)",
               fn);
  return c;
}

/* A fresh start (no --resume) must not mix its checkpoints with an older
 * run's. */
static void check_fresh(lua_State *L, ckpt_state *c, const char *fn) {
  int64_t newest;
  if (c->resume || c->checked_fresh || c->saved >= 0)
    return;
  if (orion_ckpt_count(c->dir, &newest) > 0)
    luaL_error(L, "%s: %s already holds checkpoints (the newest of step "
                  "%I); give orion-driver --resume to continue from it, or "
                  "remove them to start afresh",
               fn, c->dir, (LUAI_UACINT)newest);
  c->checked_fresh = 1;
}

/* A checkpoint that could not be written (a full disk, a folder gone):
 * dsm/ckpt.c removed what it had written and the last good one is intact,
 * so the job goes on with a warning and orion.checkpoint returns nil; the
 * CKPT_FAILURES_MAX-th failure in a row ends it (a disk that stays full
 * would otherwise let the job run on with nothing to resume from), saying
 * how to continue. */
static int write_failed(lua_State *L, ckpt_state *c, int64_t step,
                        const char *why) {
  char last[160];
  if (c->saved >= 0)
    snprintf(last, sizeof last, "the checkpoint of step %" PRId64
                                " stays the newest",
             c->saved);
  else
    snprintf(last, sizeof last, "no checkpoint of this job is there yet");
  if (++c->failures < CKPT_FAILURES_MAX) {
    orion_log_warn("checkpoint of step %" PRId64 " not written: %s; %s, "
                   "and the job goes on (%d checkpoints in a row that "
                   "fail end it)",
                   step, why, last, CKPT_FAILURES_MAX);
    lua_pushnil(L);
    return 1;
  }
  if (c->saved >= 0)
    return luaL_error(L, "checkpoint: step %I: %s; %d checkpoints in a row "
                         "were not written, so the job ends here.  The "
                         "checkpoint of step %I in %s is intact: make room "
                         "(or mend the folder) and run the same command "
                         "with --resume to continue from it",
                      (LUAI_UACINT)step, why, c->failures,
                      (LUAI_UACINT)c->saved, c->dir);
  return luaL_error(L, "checkpoint: step %I: %s; %d checkpoints in a row "
                       "were not written, so the job ends here.  %s has "
                       "no checkpoint of it to resume from: make room (or "
                       "mend the folder) and start it again",
                    (LUAI_UACINT)step, why, c->failures, c->dir);
}

static int l_checkpoint(lua_State *L) {
  static const char *const keys[] = {"step", "state", "keep", NULL};
  mod_state *s = orion__state(L);
  ckpt_state *c;
  orion_ckpt ck;
  orion_buf sb, meta;
  orion_error err;
  char words[512], path[4096], why[512], spath[256] = "state";
  live *v;
  char (*prev)[4160];
  darray **ds;
  orion_ckpt_remote *remote;
  int nv, i, keep, rc, nparts;
  uint64_t bytes[2] = {0, 0};
  double t0 = orion_now();
  luaL_checktype(L, 1, LUA_TTABLE);
  orion__check_keys(L, 1, "checkpoint", keys);
  c = need_dir(L, "checkpoint");
  lua_getfield(L, 1, "step");
  if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
    return luaL_error(L, "checkpoint: step must be an integer >= 0");
  memset(&ck, 0, sizeof ck);
  ck.step = lua_tointeger(L, -1);
  lua_pop(L, 1);
  keep = (int)orion__opt_int(L, 1, "keep", 2);
  if (keep < 1)
    return luaL_error(L, "checkpoint: keep must be at least 1");
  check_fresh(L, c, "checkpoint");
  /* The state first: an error must come before anything is written. */
  orion_buf_init(&sb);
  orion_buf_append(&sb, "return ", 7);
  lua_getfield(L, 1, "state");
  rc = ser(L, -1, &sb, spath, sizeof spath, 0, why, sizeof why);
  lua_pop(L, 1);
  orion_buf_append(&sb, "\n", 1);
  if (rc != 0 || sb.oom) {
    orion_buf_free(&sb);
    return luaL_error(L, "checkpoint: %s; only nil, booleans, numbers, "
                         "strings and tables of them can be saved",
                      rc != 0 ? why : "out of memory");
  }
  v = live_arrays(L, &nv);
  ck.arrays = orion_calloc((size_t)(nv > 0 ? nv : 1), sizeof *ck.arrays);
  prev = orion_calloc((size_t)(nv > 0 ? nv : 1), sizeof *prev);
  ds = orion_calloc((size_t)(nv > 0 ? nv : 1), sizeof *ds);
  if (ck.arrays == NULL || prev == NULL || ds == NULL) {
    orion_free(ck.arrays);
    orion_free(prev);
    orion_free(ds);
    orion_free(v);
    orion_buf_free(&sb);
    return luaL_error(L, "out of memory");
  }
  for (i = 0; i < nv; i++) {
    ds[i] = v[i].d;
    ck.arrays[i].id = v[i].d->id;
    snprintf(ck.arrays[i].name, sizeof ck.arrays[i].name, "%s", v[i].name);
    ck.arrays[i].a = v[i].d->a;
  }
  ck.narrays = nv;
  /* Rows left on executors: written there, in parts (without a cluster
   * that can, brought back first); a sparse array's values that its
   * blocks kept on executors are brought back (no parts). */
  remote = orion__ckpt_remote_plan(s, &ck, ds);
  for (i = 0; i < nv; i++)
    if (ds[i]->rep != NULL && ds[i]->rep->held.n > 0 &&
        (remote == NULL || ck.arrays[i].nparts == 0))
      orion__dist_reclaim(s, ds[i]);
  for (i = 0; i < nv && c->prev != NULL; i++) {
    int k;
    for (k = 0; k < c->nprev; k++)
      if (c->prev_id[k] == ck.arrays[i].id) {
        snprintf(prev[i], sizeof prev[i], "%s/a%" PRId64 ".oarr", c->prev,
                 ck.arrays[i].id);
        ck.arrays[i].prev = prev[i];
        ck.arrays[i].prev_hash = c->prev_hash[k];
      }
  }
  orion_buf_init(&meta);
  write_meta(L, s, v, nv, &meta);
  orion_free(v);
  ck.script_hash = script_hash(L, words, sizeof words);
  ck.words = words;
  ck.state = sb.data;
  ck.state_len = sb.len;
  ck.meta = meta.data;
  ck.meta_len = meta.len;
  orion_error_clear(&err);
  rc = meta.oom ? orion_error_set(&err, ORION_ENOMEM, "out of memory")
                : orion_ckpt_write(c->dir, &ck, keep, path, sizeof path,
                                   bytes, &err);
  orion_buf_free(&sb);
  orion_buf_free(&meta);
  orion_free(prev);
  nparts = orion__ckpt_remote_parts(remote);
  orion__ckpt_remote_free(remote, &ck);
  orion_free(ds);
  if (rc == 0)
    remember(c, &ck, path);
  orion_free(ck.arrays);
  if (rc != 0)
    return write_failed(L, c, ck.step, err.msg);
  c->failures = 0;
  c->saved = ck.step;
  if (ck.step > c->cur)
    c->cur = ck.step;
  orion_log_info("checkpoint of step %" PRId64 " written to %s: %d arrays, "
                 "%.1f MB (%.1f MB new) in %.2f s%s",
                 ck.step, path, nv, (double)bytes[0] / 1e6,
                 (double)bytes[1] / 1e6, orion_now() - t0,
                 nparts > 0 ? " (with parts the executors wrote)" : "");
  /* --elastic: executors waiting to join are taken here, the job
   * re-forming from this checkpoint (drivers/elastic.h). */
  orion_cluster_boundary(s->cl);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)ck.step);
  lua_setfield(L, -2, "step");
  lua_pushstring(L, path);
  lua_setfield(L, -2, "path");
  lua_pushinteger(L, (lua_Integer)bytes[0]);
  lua_setfield(L, -2, "bytes");
  lua_pushnumber(L, orion_now() - t0);
  lua_setfield(L, -2, "seconds");
  return 1;
}

/* ---- orion.restore --------------------------------------------------------- */

/* orion_ckpt_read's reasons, one a line, kept until it is known whether
 * a checkpoint is used (they are then warnings) or none is (with plain
 * --resume, an error that lists them). */
static void note_skip(void *ud, const char *msg) {
  orion_buf *b = ud;
  orion_buf_append(b, msg, strlen(msg));
  orion_buf_append(b, "\n", 1);
}

/* Whether line l (len bytes) names an entry left alone (dsm/ckpt.c ends
 * those with these words), not a checkpoint that failed its checks. */
static int left_alone(const char *l, size_t len) {
  return len >= 18 && memcmp(l + len - 18, "; it is left alone", 18) == 0;
}

/* Prints the reasons in b as warnings, each checkpoint that failed with
 * what comes instead, as orion_ckpt_read tried them: the one before it,
 * or none. */
static void warn_skipped(const orion_buf *b, int found) {
  const char *l, *nl, *end = b->data + b->len, *last = NULL;
  for (l = b->data; l != NULL && l < end; l = nl + 1) {
    if ((nl = memchr(l, '\n', (size_t)(end - l))) == NULL)
      break;
    if (!left_alone(l, (size_t)(nl - l)))
      last = l;
  }
  for (l = b->data; l != NULL && l < end; l = nl + 1) {
    if ((nl = memchr(l, '\n', (size_t)(end - l))) == NULL)
      break;
    if (left_alone(l, (size_t)(nl - l)))
      orion_log_warn("checkpoint %.*s", (int)(nl - l), l);
    else
      orion_log_warn("checkpoint %.*s; %s", (int)(nl - l), l,
                     found || l != last ? "using the checkpoint before it"
                                        : "no older checkpoint is left");
  }
}

/* Puts the checkpoint's array e (file in folder) into the script's d,
 * whose name is name (with load 0, only checks that it would fit): 0, or
 * -1 with msg (n bytes) saying what does not match or cannot be read. */
static int restore_array(const char *folder, const orion_ckpt *ck,
                         const orion_ckpt_array *e, darray *d,
                         const char *name, int load, char *msg, size_t n) {
  orion_array *a = d->a, *in = NULL;
  orion_ckpt_array mine;
  char want[160], have[160], path[4352];
  orion_error err;
  memset(&mine, 0, sizeof mine);
  mine.type = (int)a->type;
  mine.sparse = a->sparse;
  mine.ndims = a->ndims;
  memcpy(mine.dims, a->dims, sizeof mine.dims);
  dims_text(e, have, sizeof have);
  dims_text(&mine, want, sizeof want);
  if (strcmp(want, have) != 0 || a->nnz != e->nnz) {
    snprintf(msg, n,
             "restore: array '%s' (id %" PRId64 ") does not match the "
             "checkpoint %s: the script declared %s with %" PRId64
             " elements, the checkpoint holds %s with %" PRId64,
             name, d->id, folder, want, a->nnz, have, e->nnz);
    return -1;
  }
  if (!load)
    return 0;
  snprintf(path, sizeof path, "%s/%s", folder, e->file);
  orion_error_clear(&err);
  if (orion_ckpt_load_array(folder, ck, e, &in, &err) != 0) {
    snprintf(msg, n, "restore: %s", err.msg);
    return -1;
  }
  if (in->nnz != a->nnz || in->type != a->type || in->sparse != a->sparse) {
    orion_array_release(in);
    snprintf(msg, n, "restore: array '%s': %s does not hold what its "
                     "manifest says", name, path);
    return -1;
  }
  if (a->sparse)
    memcpy(a->keys, in->keys,
           (size_t)a->nnz * (size_t)a->ndims * sizeof *a->keys);
  memcpy(a->values, in->values,
         (size_t)a->nnz * orion_type_size(a->type));
  orion_array_release(in);
  if (d->have_bs) { /* cut again from the restored order */
    orion_blockset_free(&d->bs);
    d->have_bs = 0;
  }
  d->gen++;
  return 0;
}

/* text's lines (each ending in a newline) joined by "\n  ", without the
 * last newline, on the Lua stack (the string returned lives there). */
static const char *indent_lines(lua_State *L, const char *text) {
  luaL_Buffer b;
  size_t len = strlen(text);
  luaL_buffinit(L, &b);
  for (; len > 0; text++, len--)
    if (*text != '\n')
      luaL_addchar(&b, *text);
    else if (len > 1)
      luaL_addstring(&b, "\n  ");
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

static int l_restore(lua_State *L) {
  mod_state *s = orion__state(L);
  ckpt_state *c = cstate(L);
  orion_ckpt ck;
  orion_error err;
  char path[4096], words[512], msg[9000];
  orion_buf skipped;
  live *v;
  int nv, i, j, rc, pass;
  if (c->dir == NULL)
    return 0; /* nil: no checkpoints in this run */
  if (!c->resume) {
    check_fresh(L, c, "restore");
    return 0;
  }
  orion_error_clear(&err);
  orion_buf_init(&skipped);
  rc = orion_ckpt_read(c->dir, &ck, path, sizeof path, note_skip, &skipped,
                       &err);
  if (rc < 0) {
    orion_buf_free(&skipped);
    return luaL_error(L, "restore: %s", err.msg);
  }
  if (rc == 0 && c->resume == 1) {
    /* Plain --resume promises to continue: starting afresh instead would
     * redo the whole job and exit 0 as if it had resumed. */
    orion_buf_append(&skipped, "", 1);
    lua_pushfstring(L, "restore: --resume: no usable checkpoint in %s%s%s%s"
                       "give --resume=auto (or --fresh-if-none) to start "
                       "from the beginning when there is none",
                    c->dir,
                    skipped.len > 1 ? ":\n  " : " (it holds none); ",
                    skipped.len > 1 ? indent_lines(L, skipped.data) : "",
                    skipped.len > 1 ? "\n" : "");
    orion_buf_free(&skipped);
    return lua_error(L);
  }
  warn_skipped(&skipped, rc == 1);
  orion_buf_free(&skipped);
  if (rc == 0) {
    orion_log_info("no usable checkpoint in %s: starting from the "
                   "beginning (--resume=auto)",
                   c->dir);
    c->checked_fresh = 1;
    return 0;
  }
  if (ck.script_hash != script_hash(L, words, sizeof words) && !c->force) {
    lua_pushfstring(L,
                    "restore: %s was written by another script or with "
                    "other arguments (%s), not by this run (%s); give "
                    "orion-driver --force to resume from it anyway",
                    path, ck.words, words);
    orion_ckpt_free(&ck);
    return lua_error(L);
  }
  v = live_arrays(L, &nv);
  /* Every array is matched and checked before any is changed. */
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < nv; i++) {
      const orion_ckpt_array *e = NULL;
      char name[96];
      for (j = 0; j < ck.narrays && v[i].name[0] != '\0'; j++)
        if (strcmp(ck.arrays[j].name, v[i].name) == 0)
          e = &ck.arrays[j];
      for (j = 0; j < ck.narrays && e == NULL; j++)
        if (ck.arrays[j].id == v[i].d->id &&
            (ck.arrays[j].name[0] == '\0' || v[i].name[0] == '\0'))
          e = &ck.arrays[j];
      if (v[i].name[0] != '\0')
        snprintf(name, sizeof name, "%s", v[i].name);
      else
        snprintf(name, sizeof name, "#%" PRId64, v[i].d->id);
      if (e == NULL)
        snprintf(msg, sizeof msg,
                 "restore: array '%s' (id %" PRId64 "), declared before "
                 "orion.restore(), is not in the checkpoint %s",
                 name, v[i].d->id, path);
      else if (pass == 1 && v[i].d->rep != NULL &&
               v[i].d->rep->held.n > 0)
        orion__dist_reclaim(s, v[i].d); /* else they would overwrite it */
      if (e == NULL ||
          restore_array(path, &ck, e, v[i].d, name, pass, msg,
                        sizeof msg) != 0) {
        orion_free(v);
        orion_ckpt_free(&ck);
        return luaL_error(L, "%s", msg);
      }
    }
  /* The arrays the driver wrote whole, as restored: their hashes, so
   * that the next checkpoint links those still unchanged (below). */
  for (j = 0; j < ck.narrays; j++)
    for (i = 0; i < nv && ck.arrays[j].nparts == 0; i++)
      if (v[i].d->id == ck.arrays[j].id)
        ck.arrays[j].hash = orion_ckpt_array_hash(v[i].d->a);
  orion_free(v);
  read_meta(L, s, ck.meta);
  c->saved = c->cur = ck.step;
  c->checked_fresh = 1;
  /* The state: Lua source of table constructors, run with no globals. */
  if (luaL_loadbufferx(L, ck.state, ck.state_len, "=checkpoint state", "t") !=
      LUA_OK) {
    orion_ckpt_free(&ck);
    return luaL_error(L, "restore: %s/state.lua: %s", path,
                      lua_tostring(L, -1));
  }
  lua_newtable(L);
  lua_setupvalue(L, -2, 1);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    orion_ckpt_free(&ck);
    return luaL_error(L, "restore: %s/state.lua: %s", path,
                      lua_tostring(L, -1));
  }
  /* The next checkpoint links the arrays still unchanged since this one
   * (by their hash), as it would after writing it: a resumed job (a
   * re-formed elastic one) does not write its data arrays again. */
  remember(c, &ck, path);
  orion_log_info("resumed from the checkpoint of step %" PRId64 " (%s)",
                 ck.step, path);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)ck.step);
  lua_setfield(L, -2, "step");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "state");
  orion_ckpt_free(&ck);
  return 1;
}

/* ---- orion.step, orion.checkpoint_dir ---------------------------------------- */

static int l_step(lua_State *L) {
  cstate(L)->cur = (int64_t)luaL_checkinteger(L, 1);
  return 0;
}

static int l_checkpoint_dir(lua_State *L) {
  ckpt_state *c = cstate(L);
  if (c->dir == NULL)
    return 0;
  lua_pushstring(L, c->dir);
  return 1;
}

void orion__open_checkpoint(lua_State *L) {
  static const luaL_Reg funcs[] = {{"checkpoint", l_checkpoint},
                                   {"restore", l_restore},
                                   {"step", l_step},
                                   {"checkpoint_dir", l_checkpoint_dir},
                                   {NULL, NULL}};
  cstate(L);
  luaL_setfuncs(L, funcs, 0);
}
