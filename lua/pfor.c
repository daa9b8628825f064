/* parallel_for, orion.explain and orion.buffer on the driver: their
 * arguments, and the launch of a loop.
 *
 * A loop launch: the body is analysed from its source and the values its
 * free names are bound to (lua/analyse.h); the plan's shape gives the
 * blocks of the iteration space and the order they run in
 * (scheduler/schedule.h); the body is captured (executor/capture.h) and run
 * either on the cluster (scheduler/dist.h) or block by block by the in-process
 * executor (executor/exec.h), clock by clock, flushing buffers at their flush
 * points.  Under orion-driver --explain each call site's plan is printed
 * the first time it is reached (lua/pfor_explain.c), and the loop then
 * runs as it would without.
 */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/pfor.h"
#include "lua/pfor_auto.h"
#include "lua/loop_metrics.h"
#include "lua/predict.h"
#include "lua/pfor_gpu.h"

#include "lua/analyse.h"
#include "lua/buffer_with.h"
#include "executor/capture.h"
#include "scheduler/dist.h"
#include "executor/exec.h"
#include "scheduler/module.h"
#include "lua/permute.h"
#include "lua/pfor_guard.h"
#include "lua/plancache.h"
#include "scheduler/verify.h"
#include "executor/exec_keys.h"
#include "dsm/replica.h"
#include "scheduler/schedule.h"
#include "util/alloc.h"
#include "util/ccomp.h"
#include "util/clock.h"
#include "util/progress.h"

/* ======================================================================
 * orion.buffer
 * ====================================================================== */

static const char *const buffer_opts[] = {"apply", "flush", "clock", "with",
                                          NULL};

static int l_buffer(lua_State *L) {
  darray *t = orion__check_array_only(L, 1);
  mod_state *s = orion__state(L);
  dbuffer *b;
  orion_apply_op op = ORION_APPLY_ADD;
  int64_t flush = ORION_FLUSH_LOOP; /* deterministic; "block" and n relax */
  orion__check_keys(L, 2, "orion.buffer", buffer_opts);
  if (t->a->sparse)
    return luaL_error(L, "orion.buffer: the target must be a dense array "
                         "(this one is sparse)");
  lua_settop(L, 2);
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "apply");
    if (lua_isfunction(L, -1)) {
      if (lua_iscfunction(L, -1))
        return luaL_error(L, "orion.buffer: apply must be \"add\", "
                             "\"mean\", \"replace\" or a Lua function");
      op = ORION_APPLY_FUNC;
    } else if (!lua_isnil(L, -1)) {
      const char *a = lua_tostring(L, -1);
      if (a != NULL && lua_type(L, -1) == LUA_TSTRING &&
          strcmp(a, "add") == 0)
        op = ORION_APPLY_ADD;
      else if (a != NULL && lua_type(L, -1) == LUA_TSTRING &&
               strcmp(a, "replace") == 0)
        op = ORION_APPLY_REPLACE;
      else if (a != NULL && lua_type(L, -1) == LUA_TSTRING &&
               strcmp(a, "mean") == 0)
        op = ORION_APPLY_MEAN;
      else
        return luaL_error(L, "orion.buffer: apply must be \"add\", "
                             "\"mean\", \"replace\" or a function(old, "
                             "delta)");
    }
    lua_getfield(L, 2, "flush");
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *f = lua_tostring(L, -1);
      if (strcmp(f, "block") == 0)
        flush = ORION_FLUSH_BLOCK;
      else if (strcmp(f, "loop") == 0)
        flush = ORION_FLUSH_LOOP;
      else if (strcmp(f, "managed") == 0)
        flush = ORION_FLUSH_MANAGED;
      else if (strcmp(f, "clock") == 0)
        flush = ORION_FLUSH_CLOCK(ORION_CLOCK_DEFAULT);
      else
        return luaL_error(L, "orion.buffer: flush must be \"block\", "
                             "\"loop\", \"managed\", \"clock\" or a "
                             "positive integer, not \"%s\"",
                          f);
    } else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0) {
      flush = lua_tointeger(L, -1);
    } else if (!lua_isnil(L, -1)) {
      return luaL_error(L, "orion.buffer: flush must be \"block\", \"loop\", "
                           "\"managed\", \"clock\" or a positive integer");
    }
    lua_getfield(L, 2, "clock");
    if (!lua_isnil(L, -1)) {
      lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
      if (!ORION_FLUSH_IS_CLOCK(flush))
        return luaL_error(L, "orion.buffer: clock (blocks per clock) goes "
                             "with flush = \"clock\"");
      if (n < 1 || n > ORION_FLUSH_CLOCK_MAX)
        return luaL_error(L, "orion.buffer: clock must be a whole number of "
                             "blocks from 1 to %d",
                          (int)ORION_FLUSH_CLOCK_MAX);
      flush = ORION_FLUSH_CLOCK(n);
    }
  }
  if (op == ORION_APPLY_MEAN && orion_type_is_int(t->a->type))
    return luaL_error(L, "orion.buffer: apply = \"mean\" needs a float "
                         "target (this one is %s)",
                      orion_type_name(t->a->type));
  if (op == ORION_APPLY_MEAN && flush == ORION_FLUSH_LOOP)
    return luaL_error(L, "orion.buffer: apply = \"mean\" goes with a flush "
                         "while the loop runs (\"block\", \"clock\", "
                         "\"managed\" or n); flush = \"loop\" keeps the "
                         "same bits on any executor count");
  b = lua_newuserdatauv(L, sizeof *b, 3);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, BUFFER_MT);
  b->target_id = t->id;
  b->op = op;
  b->flush = flush;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  if (op == ORION_APPLY_FUNC) {
    lua_getfield(L, 2, "apply");
    lua_setiuservalue(L, -2, 2);
  }
  orion__buffer_names(L, 1, b);
  orion__buffer_with(L, 2, 1, -1, b);
  {
    char msg[1024];
    if (orion__buffer_check_apply(L, -1, "orion.buffer", msg, sizeof msg))
      return luaL_error(L, "%s", msg);
  }
  b->id = ++s->next_buffer_id;
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, b->id);
  lua_pop(L, 1);
  return 1;
}

static int buffer_tostring(lua_State *L) {
  dbuffer *b = luaL_checkudata(L, 1, BUFFER_MT);
  lua_pushfstring(L, "Buffer %s (%s into %s%s)", b->name,
                  b->op == ORION_APPLY_ADD       ? "add"
                  : b->op == ORION_APPLY_MEAN    ? "mean"
                  : b->op == ORION_APPLY_REPLACE ? "replace"
                                                 : "function",
                  b->target_name, b->nwith > 0 ? ", with helpers" : "");
  return 1;
}

static int buffer_index(lua_State *L) {
  return luaL_error(L, "a Buffer is written inside parallel_for bodies only; "
                       "read its target array instead");
}

/* ======================================================================
 * orion.explain and parallel_for
 * ====================================================================== */

static const char *const pfor_opts[] = {
    "ordered", "histogram", "schedule", "tier", "partitions",
    "concurrent_order", "name", "seed", "fast", "space", "gpu_grid",
    "assign", "timeout", "interleave", NULL};

typedef struct pfor_opts_t {
  int ordered, hist, reverse, fast, space;
  int interleave; /* a block's rows dealt out in rounds (dsm/blocks.h) */
  const char *tier, *sched, *name;
  int assign; /* ORION_ASSIGN_... (scheduler/dist.h) */
  int64_t parts[2];
  int auto_parts; /* partitions = "auto" (lua/pfor_auto.h) */
  int has_seed;
  lua_Integer seed;
  int64_t gpu_grid; /* the device grid's b (0: from the block's size) */
  double timeout;   /* seconds a block may run (0: no limit) */
} pfor_opts_t;

static void read_opts(lua_State *L, pfor_opts_t *o) {
  int nparts;
  const char *co;
  orion__check_keys(L, 3, "parallel_for", pfor_opts);
  o->hist = orion__opt_bool(L, 3, "histogram", 0);
  o->ordered = orion__opt_bool(L, 3, "ordered", 0);
  o->interleave = orion__opt_bool(L, 3, "interleave", 0);
  o->tier = orion__opt_string(L, 3, "tier", "auto");
  if (strcmp(o->tier, "auto") != 0 && strcmp(o->tier, "lua") != 0 &&
      strcmp(o->tier, "c") != 0 && strcmp(o->tier, "gpu") != 0)
    luaL_error(L, "parallel_for: tier must be \"auto\", \"c\", \"lua\" or "
                  "\"gpu\", not \"%s\"",
               o->tier);
  o->gpu_grid = orion__opt_int(L, 3, "gpu_grid", 0);
  if (o->gpu_grid < 0 || o->gpu_grid > 65536)
    luaL_error(L, "parallel_for: gpu_grid must be 1..65536 (0: from the "
                  "block's size), not %d",
               (int)o->gpu_grid);
  o->timeout = orion__opt_num(L, 3, "timeout", orion__state(L)->loop_timeout);
  if (!(o->timeout >= 0 && o->timeout <= 1e9))
    luaL_error(L, "parallel_for: timeout must be a number of seconds "
                  "0..1e9 (0: no limit), not %f",
               o->timeout);
  o->fast = orion__opt_bool(L, 3, "fast", orion__state(L)->fast);
  o->sched = orion__opt_string(L, 3, "schedule", NULL);
  if (o->interleave &&
      (o->ordered || (o->sched != NULL && strcmp(o->sched, "serial") == 0)))
    luaL_error(L, "parallel_for: interleave reorders the elements of a "
                  "block, which %s runs in key order",
               o->ordered ? "ordered = true" : "schedule = \"serial\"");
  o->name = orion__opt_string(L, 3, "name", NULL);
  o->space = (int)orion__opt_int(L, 3, "space", 0);
  o->has_seed = !lua_isnoneornil(L, 3) &&
                lua_getfield(L, 3, "seed") != LUA_TNIL;
  if (!lua_isnoneornil(L, 3))
    lua_pop(L, 1);
  o->seed = orion__opt_int(L, 3, "seed", 0);
  co = orion__opt_string(L, 3, "concurrent_order", "forward");
  if (strcmp(co, "forward") != 0 && strcmp(co, "reverse") != 0)
    luaL_error(L, "parallel_for: concurrent_order must be \"forward\" or "
                  "\"reverse\"");
  o->reverse = strcmp(co, "reverse") == 0;
  o->assign = orion__dist_assign_opt(L, orion__opt_string(L, 3, "assign",
                                                           NULL));
  /* The job's default (--partitions), never the executor count: the
   * blocks, and with them the results, are the same on any cluster. */
  o->parts[0] = o->parts[1] = orion__state(L)->partitions;
  o->auto_parts = orion__state(L)->auto_partitions;
  nparts = 0;
  if (!lua_isnoneornil(L, 3) &&
      lua_getfield(L, 3, "partitions") == LUA_TSTRING) {
    if (strcmp(lua_tostring(L, -1), "auto") != 0)
      luaL_error(L, "parallel_for: partitions must be a list of integers or "
                    "\"auto\", not \"%s\"",
                 lua_tostring(L, -1));
    o->auto_parts = 1;
    lua_pop(L, 1);
  } else {
    if (!lua_isnoneornil(L, 3))
      lua_pop(L, 1);
    nparts = orion__opt_int_list(L, 3, "partitions", o->parts, 2);
    if (nparts > 0)
      o->auto_parts = 0;
  }
  if (o->auto_parts)
    orion__auto_parts_before(L, o->parts, &o->assign);
  if (nparts == 1)
    o->parts[1] = o->parts[0];
  if (o->parts[0] > 4096 || o->parts[1] > 4096)
    luaL_error(L, "parallel_for: at most 4096 partitions per dimension");
}

/* Decides the tier of an analysed loop (without compiling): fills a->cg
 * or a->note.  tier "lua" skips the generator. */
static void plan_tier(lua_State *L, analysis *a, const pfor_opts_t *o) {
  if (strcmp(o->tier, "lua") == 0) {
    snprintf(a->note, sizeof a->note, "tier = \"lua\" was asked for");
    return;
  }
  orion__gen_body(L, a, o->fast, orion__gpu_form(orion__state(L), o->tier));
}

/* "tier: c (compiled, exact)" or "tier: lua (why)"; tier "gpu" (and
 * "auto" on a cluster with a GPU) as lua/pfor_gpu.c says. */
static void tier_text(const mod_state *s, const analysis *a,
                      const pfor_opts_t *o, char *out, size_t n) {
  char ctext[900];
  if (a->cg_ok)
    snprintf(ctext, sizeof ctext, "tier: c (compiled, %s; %d slots)",
             o->fast ? "fast math" : "exact", a->cg.nslots);
  else
    snprintf(ctext, sizeof ctext, "tier: lua (%s)", a->note);
  if (!orion__gpu_tier_text(s, a, orion__gpu_want(o->tier), o->gpu_grid,
                            ctext, out, n))
    snprintf(out, n, "%s", ctext);
}

static int l_explain(lua_State *L) {
  darray *it = orion__check_array_only(L, 1);
  pfor_opts_t o;
  analysis a;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  read_opts(L, &o);
  if (o.sched != NULL && strcmp(o.sched, "serial") == 0) {
    lua_pushstring(L, "schedule: serial\nordered: yes\nspace: -\ntime: -\n"
                      "vectors: not analysed (forced serial)\n");
    return 1;
  }
  orion__analyse(L, it, o.ordered, (int)o.parts[0], o.sched, o.space, o.name, &a);
  {
    char line[900];
    plan_tier(L, &a, &o);
    tier_text(orion__state(L), &a, &o, line, sizeof line);
    orion__push_plan_text(L, &a);
    lua_pushfstring(L, "%s\n", line);
    lua_concat(L, 2);
  }
  orion__analysis_free(&a);
  return 1;
}

static mod_state *ensure_exec(lua_State *L) {
  mod_state *s = orion__state(L);
  if (s->ex == NULL) {
    s->ex = orion_exec_new(0);
    if (s->ex == NULL)
      luaL_error(L, "cannot start the in-process executor: out of memory");
    if (s->allow_io)
      orion_exec_allow_io(s->ex);
  }
  return s;
}

typedef struct launch {
  orion_capture_info info;
  int64_t iter_id;
  int64_t *bound; /* array ids bound for this loop */
  int nbound;
  /* The buffers (info.nbuffers of them) as executors bind them, with the
   * captures of their apply functions. */
  orion_dist_buf *bufs;
  orion_buf *blobs;
  orion_pfor_guards guards; /* the runtime guard's arrays */
} launch;

static void unbind_all(orion_exec *ex, launch *l) {
  int i;
  for (i = 0; i < l->info.nbuffers; i++)
    orion_exec_unbind_buffer(ex, l->info.buffers[i]);
  for (i = 0; i < l->nbound; i++)
    orion_exec_unbind_array(ex, l->bound[i]);
  orion_free(l->bound);
  l->bound = NULL;
  l->nbound = 0;
  for (i = 0; l->blobs != NULL && i < l->info.nbuffers; i++)
    orion_buf_free(&l->blobs[i]);
  orion_free(l->blobs);
  orion_free(l->bufs);
  l->blobs = NULL;
  l->bufs = NULL;
  orion__pfor_guards_free(&l->guards);
  orion_capture_info_free(&l->info);
}

static int bind_array(orion_exec *ex, launch *l, darray *d) {
  int i;
  int64_t *v;
  if (d == NULL || d->a == NULL)
    return ORION_EINVAL;
  for (i = 0; i < l->nbound; i++)
    if (l->bound[i] == d->id)
      return 0;
  v = orion_realloc(l->bound, sizeof *v * (size_t)(l->nbound + 1));
  if (v == NULL)
    return ORION_ENOMEM;
  l->bound = v;
  l->bound[l->nbound++] = d->id;
  return orion_exec_bind_array(ex, d->id, d->a);
}

/* The capture of buffer b's apply function into blob (nothing for the
 * built-in operators). */
static int capture_apply(lua_State *L, const dbuffer *b, orion_buf *blob,
                         orion_error *err) {
  char msg[1024];
  int rc;
  if (b->op != ORION_APPLY_FUNC)
    return 0;
  /* Push the buffer to reach its apply function (uservalue 2); what it
   * captures is checked again: a global it reads may have changed. */
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_rawgeti(L, -1, b->id);
  rc = orion__buffer_check_apply(L, -1, "parallel_for: buffer", msg,
                                 sizeof msg);
  if (rc == 0)
    rc = orion__buffer_capture(L, -1, b, blob, msg, sizeof msg);
  lua_pop(L, 2);
  if (rc != 0)
    return orion_error_set(err, rc, "%s", msg);
  return 0;
}

/* Binds buffer b's helpers (their rows back from executors first), and
 * refuses a loop whose body also uses one (or makes it another buffer's
 * target): the apply function alone reads and writes them. */
static int bind_helpers(lua_State *L, orion_exec *ex, launch *l,
                        const darray *it, const dbuffer *b,
                        orion_dist_buf *db, orion_error *err) {
  int k, i, rc = 0;
  for (k = 0; k < b->nwith && rc == 0; k++) {
    darray *h = orion__by_id(L, ARRAYS_KEY, ARRAY_MT, b->with[k]);
    const char *hn = b->with_names[k];
    if (h == NULL || h->a == NULL)
      return orion_error_set(err, ORION_EINVAL, "parallel_for: helper '%s' "
                             "of buffer %s has been freed", hn, b->name);
    for (i = 0; i < l->info.narrays; i++)
      if (l->info.arrays[i] == h->id)
        return orion_error_set(
            err, ORION_EINVAL,
            "parallel_for: the body uses array '%s', a helper of buffer %s "
            "(with); during the loop only %s's apply function reads and "
            "writes it (at the keys it applies); read it in another loop",
            hn, b->name, b->name);
    if (it->id == h->id)
      return orion_error_set(err, ORION_EINVAL,
                             "parallel_for: the loop iterates over '%s', a "
                             "helper of buffer %s (with)", hn, b->name);
    for (i = 0; i < l->info.nbuffers; i++) {
      dbuffer *o = orion__by_id(L, BUFFERS_KEY, BUFFER_MT, l->info.buffers[i]);
      if (o != NULL && o->target_id == h->id)
        return orion_error_set(err, ORION_EINVAL,
                               "parallel_for: '%s' is a helper of buffer %s "
                               "and the target of buffer %s in the same "
                               "loop", hn, b->name, o->name);
    }
    if (h->rep != NULL && h->rep->held.n > 0)
      orion__dist_reclaim(orion__state(L), h); /* rows left on executors */
    rc = bind_array(ex, l, h);
    db->with[db->nwith++] = h->id;
  }
  return rc;
}

/* Runs the loop on the cluster (scheduler/dist.c) and pushes nothing.  Returns 0
 * or ORION_EBODY with err set. */
static int run_distributed(lua_State *L, mod_state *s, launch *l, darray *it,
                           const orion_plan *plan,
                           const orion_schedule *sched, const orion_buf *blob,
                           int64_t load_loop, uint64_t seed,
                           const analysis *a, const pfor_opts_t *o,
                           orion_verify *vr, orion_dist_stats *st,
                           orion_error *err) {
  orion_dist_job j;
  size_t wl;
  const char *w;
  int rc;
  memset(&j, 0, sizeof j);
  luaL_where(L, 1);
  w = lua_tolstring(L, -1, &wl);
  while (wl > 0 && (w[wl - 1] == ' ' || w[wl - 1] == ':'))
    wl--; /* "file:line: " */
  lua_pushlstring(L, w, wl);
  lua_pushfstring(L, "in the parallel_for at %s", lua_tostring(L, -1));
  lua_remove(L, -2);
  j.it = it;
  j.plan = plan;
  j.sched = sched;
  j.blob = blob->data;
  j.blen = blob->len;
  j.load_loop = load_loop;
  j.seed = seed;
  j.arrays = l->info.arrays;
  j.narrays = l->info.narrays;
  j.accs = l->info.accs;
  j.naccs = l->info.naccs;
  j.bufs = l->bufs;
  j.nbufs = l->info.nbuffers;
  j.where = lua_tostring(L, -1);
  j.assign = o->assign;
  j.timeout = o->timeout;
  j.guards = l->guards.v;
  j.nguards = l->guards.n;
  j.verify = vr;
  j.verify_mode = vr != NULL ? vr->mode : 0;
  if (a != NULL && a->cg_ok) {
    j.csrc = a->cg.src.data;
    j.clen = a->cg.src.len;
    j.cflags = orion_cgen_mode_flags(o->fast);
    j.cslots = a->cg.slots;
    j.ncslots = a->cg.nslots;
    j.tier_c = strcmp(o->tier, "c") == 0;
    orion__gpu_job(s, a, orion__gpu_want(o->tier), o->gpu_grid, &j);
  }
  rc = orion__dist_run(L, s, &j, st, err);
  lua_pop(L, 2);
  return rc;
}

/* Binds everything the captured body refers to.  Returns 0 or a code with
 * err set. */
static int bind_loop(lua_State *L, orion_exec *ex, launch *l, darray *it,
                     orion_error *err) {
  int i, rc = bind_array(ex, l, it);
  for (i = 0; i < l->info.narrays && rc == 0; i++)
    rc = bind_array(ex, l, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, l->info.arrays[i]));
  for (i = 0; i < l->info.naccs && rc == 0; i++) {
    dacc *a = orion__by_id(L, ACCS_KEY, ACC_MT, l->info.accs[i]);
    rc = a != NULL ? orion_exec_bind_acc(ex, a->id, a->op) : ORION_EINVAL;
  }
  if (rc == 0 && l->info.nbuffers > 0) {
    l->bufs = orion_calloc((size_t)l->info.nbuffers, sizeof *l->bufs);
    l->blobs = orion_calloc((size_t)l->info.nbuffers, sizeof *l->blobs);
    if (l->bufs == NULL || l->blobs == NULL)
      rc = ORION_ENOMEM;
  }
  for (i = 0; i < l->info.nbuffers && rc == 0; i++) {
    dbuffer *b = orion__by_id(L, BUFFERS_KEY, BUFFER_MT, l->info.buffers[i]);
    darray *t = b != NULL ? orion__by_id(L, ARRAYS_KEY, ARRAY_MT, b->target_id)
                          : NULL;
    orion_dist_buf *db = &l->bufs[i];
    if (b == NULL || t == NULL)
      return orion_error_set(err, ORION_EINVAL, "a buffer's target array "
                                                "is gone");
    rc = bind_array(ex, l, t);
    if (rc == 0)
      rc = bind_helpers(L, ex, l, it, b, db, err);
    if (rc != 0)
      break;
    orion_buf_init(&l->blobs[i]);
    rc = capture_apply(L, b, &l->blobs[i], err);
    if (rc != 0)
      return rc;
    db->id = b->id;
    db->target = b->target_id;
    db->op = b->op;
    db->flush = b->flush;
    snprintf(db->name, sizeof db->name, "%s", b->name);
    db->blob = l->blobs[i].data;
    db->blen = l->blobs[i].len;
    /* In the driver a managed buffer flushes as "loop": nothing is sent
     * early in one process (0 executors), and with executors this binding
     * only applies what they send. */
    rc = orion_exec_bind_buffer(ex, b->id, db->name, t->id, b->op, db->blob,
                                db->blen,
                                b->flush == ORION_FLUSH_MANAGED
                                    ? ORION_FLUSH_LOOP
                                    : b->flush,
                                err);
  }
  if (rc != 0 && err->msg[0] == '\0')
    orion_error_set(err, rc, "parallel_for: cannot bind the body's arrays: "
                             "%s",
                    orion_strerror(rc));
  return rc;
}

/* The blocks for a plan (cached on the DistArray while the spec holds). */
static void blocks_for(lua_State *L, darray *it, const orion_block_spec *spec) {
  orion_error err;
  if (it->have_bs && it->bs_nnz == it->a->nnz &&
      orion_block_spec_equal(&it->bs.spec, spec))
    return;
  /* A new cut reorders a sparse array's elements: the values its blocks
   * kept on executors come back first (scheduler/dist_resid.c). */
  if (it->rep != NULL && it->rep->held.n > 0)
    orion__dist_reclaim(orion__state(L), it);
  if (it->have_bs)
    orion_blockset_free(&it->bs);
  it->have_bs = 0;
  orion_error_clear(&err);
  if (orion_blockset_build(it->a, spec, &it->bs, &err) != 0)
    orion__raise(L, &err);
  it->have_bs = 1;
  it->bs_nnz = it->a->nnz;
  it->bs_gen++;
}

/* Builds the generated body with the system compiler (util/ccomp.h) into
 * a->cobj, once per analysis (a kept plan's later calls use that build);
 * a failure turns the loop back to the interpreter with a note, or raises
 * for tier "c".  Prints the note (once per call site) when the loop is
 * interpreted under tier "auto". */
static void compile_body(lua_State *L, analysis *a, const pfor_opts_t *o) {
  orion_error err;
  if (a->cg_ok && a->cobj == NULL) {
    const int *abi;
    orion_error_clear(&err);
    if (orion_cobj_build(a->cg.src.data, a->cg.src.len,
                         orion_cgen_mode_flags(o->fast), 0, &a->cobj, NULL,
                         &err) != 0) {
      snprintf(a->note, sizeof a->note, "compiling the body failed: %.700s",
               err.msg);
      a->cg_ok = 0;
      a->cacheable = 0; /* perhaps only for now: not kept */
    } else if ((abi = orion_cobj_sym(a->cobj, ORION_CBODY_ABI_SYM)) == NULL ||
               *abi != ORION_CBODY_ABI ||
               orion_cobj_sym(a->cobj, ORION_CBODY_FN) == NULL) {
      snprintf(a->note, sizeof a->note, "the compiled body %s does not "
                                        "have the expected entry points",
               orion_cobj_path(a->cobj));
      orion_cobj_free(a->cobj);
      a->cobj = NULL;
      a->cg_ok = 0;
      a->cacheable = 0;
    }
  }
  if (a->cg_ok)
    return;
  if (strcmp(o->tier, "c") == 0)
    luaL_error(L, "parallel_for: tier \"c\": %s", a->note);
  if (strcmp(o->tier, "auto") == 0 || strcmp(o->tier, "gpu") == 0)
    orion__note_interpreted(L, a);
}

/* Under --explain, the plan of the loop (analysed, with its tier line) the
 * first time its call site is reached (lua/pfor_explain.c). */
static void explain_plan(lua_State *L, const analysis *a,
                         const char *tierline) {
  orion_buf b;
  luaL_Buffer lb;
  int64_t ids[64];
  int i, n = 0;
  orion_buf_init(&b);
  orion_plan_text(&a->plan, &b);
  for (i = 0; i < a->plan.narrays && n < 64; i++)
    ids[n++] = a->plan.arrays[i].info.id;
  orion__buffer_explain(L, ids, n, &b);
  luaL_buffinit(L, &lb);
  lua_pushfstring(L, "== parallel_for at %s (body %s:%d)\n", a->where,
                  a->plan.chunkname, a->plan.line);
  luaL_addvalue(&lb);
  if (b.data != NULL)
    luaL_addlstring(&lb, b.data, b.len);
  orion_buf_free(&b);
  luaL_addstring(&lb, tierline);
  luaL_addstring(&lb, "\n\n");
  luaL_pushresult(&lb);
  orion__explain_site(L, a->where, lua_tostring(L, -1));
  lua_pop(L, 1);
}

/* The same for a loop with schedule = "serial", which is not analysed. */
static void explain_serial(lua_State *L) {
  size_t n;
  const char *w;
  luaL_where(L, 1);
  w = lua_tolstring(L, -1, &n);
  while (n > 0 && (w[n - 1] == ' ' || w[n - 1] == ':'))
    n--; /* "file:line: " */
  lua_pushlstring(L, w, n);
  lua_pushfstring(L, "== parallel_for at %s (schedule = \"serial\"): not "
                     "analysed, runs in lexicographic order on one "
                     "executor\n\n",
                  lua_tostring(L, -1));
  orion__explain_site(L, lua_tostring(L, -2), lua_tostring(L, -1));
  lua_pop(L, 3);
}

/* Raises the rejection with its reasons at the script line (freeing a). */
static void raise_rejected(lua_State *L, analysis *a) {
  luaL_Buffer b;
  int i;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "parallel_for: the loop cannot run in parallel:");
  for (i = 0; i < a->plan.nreasons; i++) {
    luaL_addstring(&b, "\n  ");
    luaL_addstring(&b, a->plan.reasons[i]);
  }
  luaL_pushresult(&b);
  orion__analysis_free(a);
  /* Keep the message at the script line: luaL_error adds the position. */
  luaL_where(L, 1);
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_error(L);
}

/* t[name] = {v[0], ..., v[n-1]} for the table t on top of the stack. */
static void set_seconds(lua_State *L, const char *name, const double *v,
                        int n) {
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, name);
}

/* The in-process executor's per-block accumulator partials into the
 * driver's accumulators, in the schedule's block order (as scheduler/dist.c
 * does with the executors'); keep 0 drops them.  0 or ORION_ENOMEM. */
static int fold_local_accs(lua_State *L, mod_state *s, const launch *l,
                           const orion_schedule *sched, int keep) {
  orion_block_acc *v = NULL;
  orion_acc_table t;
  int64_t n, k;
  int i, rc = orion_exec_take_block_accs(s->ex, &v, &n);
  if (rc != 0 || !keep || l->info.naccs == 0) {
    orion_free(v);
    return rc;
  }
  rc = orion_acc_table_init(&t, l->info.naccs, sched->nblocks, 1);
  for (i = 0; i < l->info.naccs && rc == 0; i++) {
    dacc *acc = orion__by_id(L, ACCS_KEY, ACC_MT, l->info.accs[i]);
    if (acc == NULL)
      continue;
    for (k = 0; k < n; k++)
      if (v[k].id == acc->id)
        orion_acc_table_put(&t, i, v[k].block, 0, acc->op, &v[k].val);
    orion_acc_table_fold(&t, i, acc->op, sched->order, &acc->val);
  }
  orion_acc_table_free(&t);
  orion_free(v);
  return rc;
}

/* --verify with the in-process executor: block b's keys into vr. */
static int verify_take(orion_exec *ex, orion_verify *vr, int b,
                       orion_error *err) {
  orion_keyset ks;
  int rc = orion_exec_take_keys(ex, &ks);
  if (rc == 0)
    rc = orion__verify_add(vr, b, ks.v, ks.n, ks.srcs, ks.nsrcs);
  return rc != 0 ? orion_error_set(err, rc, "--verify: block %d's keys: %s",
                                   b, orion_strerror(rc))
                 : 0;
}

/* Tier "gpu" ran on the CPU: why, once per call site (a body outside
 * the compiled subset already had the interpreter's note). */
static void gpu_cpu_note(lua_State *L, const mod_state *s,
                         const analysis *a) {
  const char *why = orion__gpu_why(a);
  char line[700];
  if (!a->cg_ok)
    return;
  if (why[0] != '\0')
    snprintf(line, sizeof line,
             "tier \"gpu\": the body is outside the GPU subset: %.600s", why);
  else if (s->nexec == 0)
    snprintf(line, sizeof line,
             "tier \"gpu\": the driver runs the loop itself (--executors 0) "
             "and has no device");
  else
    snprintf(line, sizeof line,
             "tier \"gpu\": no executor registered a GPU (orion-driver "
             "--gpus, orion-executor --gpu N)");
  orion__gpu_note(L, a->where, line);
}

static int l_parallel_for(lua_State *L) {
  darray *it = orion__check_array_only(L, 1);
  mod_state *s;
  pfor_opts_t o;
  analysis *ap;
  launch l;
  orion_buf blob;
  orion_error err;
  orion_schedule_shape shape;
  orion_block_spec spec;
  orion_order_kind kind;
  orion_schedule sched;
  orion_progress progress;
  char msg[768];
  const char *sname;
  int serial, rc, i, nblocks, nclocks, vmode, verified = 1, cached = 0, kidx;
  orion_verify vr;
  const int *order;
  orion_dist_stats dst;
  int64_t loop_id, done = 0;
  double t0 = orion_now(), t_exec = 0, cpu0 = orion__cpu_seconds(), t_dist = 0;
  double dcpu = 0, dwait = 0; /* the driver's CPU and wait on the executors */

  memset(&vr, 0, sizeof vr);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  /* --elastic: executors waiting to join are taken here, a loop boundary
   * (drivers/elastic.h); the loop then runs on the re-formed cluster. */
  s = orion__state(L);
  if (s->cl != NULL)
    orion_cluster_boundary(s->cl);
  read_opts(L, &o);
  s = ensure_exec(L);
  serial = o.sched != NULL && strcmp(o.sched, "serial") == 0;
  ap = NULL;
  if (!serial && !s->verify) {
    /* The plan of an earlier call of this loop, while what it depends on
     * is the same (lua/plancache.h); --verify marks its analysis, so it
     * always analyses afresh. */
    char ok[512];
    int n = snprintf(ok, sizeof ok, "%d %lld %d %d %d %s %s", o.ordered,
                     (long long)o.parts[0], o.space, o.fast,
                     orion__gpu_form(s, o.tier), o.tier,
                     o.sched != NULL ? o.sched : "-");
    orion__plan_key(L, it, o.name, ok,
                    n > 0 && (size_t)n < sizeof ok ? (size_t)n : 0);
    ap = orion__plan_lookup(L, -1);
    cached = ap != NULL;
  } else {
    lua_pushnil(L);
  }
  kidx = lua_gettop(L) - cached; /* the key, then the analysis */
  if (ap == NULL)
    ap = orion__analysis_box(L);
  if (!serial) {
    if (!cached) {
      orion__analyse(L, it, o.ordered, (int)o.parts[0], o.sched, o.space,
                     o.name, ap);
      plan_tier(L, ap, &o);
    }
    /* Under --explain the plan is printed, then the loop runs (or is
     * rejected, or --explain-only stops the script) as it would without. */
    if (s->explain) {
      char line[900];
      tier_text(s, ap, &o, line, sizeof line);
      explain_plan(L, ap, line);
    }
    if (ap->plan.sched == ORION_SCHED_REJECTED)
      raise_rejected(L, ap);
    /* A body that assigns a captured local would lose the assignment: it
     * is refused here, before the compiler's note about that assignment,
     * and (below) at once for a serial loop. */
    if (orion_capture_check_assigns(L, 2, msg, sizeof msg) != 0)
      return luaL_error(L, "%s", msg);
    {
      char iname[64];
      orion__perm_check(L, it, o.name != NULL ? o.name
                                   : orion__caller_name(L, 1, "A", iname,
                                                        sizeof iname),
                        &ap->plan);
    }
    orion__explain_check_stop(L);
    if (s->verify) { /* recording is the interpreter's (executor/exec_keys.h) */
      ap->cg_ok = 0;
      snprintf(ap->note, sizeof ap->note, "orion-driver --verify");
    } else {
      compile_body(L, ap, &o);
      if (!cached)
        orion__plan_store(L, kidx, kidx + 1);
    }
  } else {
    if (orion_capture_check_assigns(L, 2, msg, sizeof msg) != 0)
      return luaL_error(L, "%s", msg);
    if (s->explain)
      explain_serial(L);
    if (strcmp(o.tier, "c") == 0)
      luaL_error(L, "parallel_for: tier \"c\": a loop with schedule = "
                    "\"serial\" is not analysed, so its body is not "
                    "compiled");
    orion__explain_check_stop(L);
  }

  /* Blocks and clocks from the plan (scheduler/schedule.h). */
  memset(&shape, 0, sizeof shape);
  shape.serial = serial;
  shape.ordered = o.ordered;
  shape.histogram = o.hist;
  shape.interleave = o.interleave;
  if (o.interleave && it->a->ragged)
    return luaL_error(L, "parallel_for: interleave would split the rows of "
                         "a ragged array; it applies to sparse arrays of "
                         "elements");
  sname = "serial";
  if (!serial) {
    shape.space = ap->plan.space;
    shape.time = ap->plan.time;
    shape.skew_dim = ap->plan.skew_dim;
    shape.skew = ap->plan.skew;
    shape.wavefront = ap->plan.order;
    shape.nspace = (int)o.parts[0];
    shape.ntime = (int)o.parts[1];
    sname = orion_sched_name(ap->plan.sched);
  }
  orion_schedule_cut(&shape, &spec, &kind);
  blocks_for(L, it, &spec);
  rc = orion_schedule_make(&sched, kind, it->bs.n0, it->bs.n1, o.reverse);
  if (rc != 0)
    return luaL_error(L, "parallel_for: %s", orion_strerror(rc));
  nblocks = sched.nblocks;
  nclocks = sched.nclocks;
  order = sched.order;
  /* --verify: an ordered loop's blocks also record where in key order
   * each key was touched. */
  vmode = !s->verify || serial ? 0
          : ap->plan.ordered   ? ORION_MSG_VERIFY_ORDER
                               : ORION_MSG_VERIFY_KEYS;

  /* Capture and bind the body. */
  loop_id = ++s->next_loop_id;
  memset(&l, 0, sizeof l);
  orion_buf_init(&blob);
  rc = orion_capture_encode(L, 2, orion__classify, NULL, &blob, &l.info, msg,
                            sizeof msg);
  if (rc != 0) {
    orion_buf_free(&blob);
    orion_schedule_free(&sched);
    return luaL_error(L, "%s", msg);
  }
  orion_error_clear(&err);
  rc = bind_loop(L, s->ex, &l, it, &err);
  /* The runtime guard: the arrays the plan does not expect the body to
   * write directly, marked before the body is loaded; a compiled body
   * that writes one is refused here. */
  if (rc == 0)
    rc = orion__pfor_guards_make(&l.guards, serial ? NULL : &ap->plan,
                                 it->id, l.bound, l.nbound);
  if (rc == 0 && !serial && ap->cg_ok &&
      orion__pfor_guards_cbody(&l.guards, ap->cg.slots, ap->cg.nslots,
                               ap->chunk, msg, sizeof msg))
    rc = orion_error_set(&err, ORION_EBODY, "%s", msg);
  if (rc == 0 && s->nexec == 0)
    orion__pfor_guards_apply(&l.guards, s->ex);
  if (rc == 0 && vmode != 0)
    rc = orion__verify_init(&vr, nblocks, vmode, &err);
  if (rc == 0 && orion_exec_record_keys(s->ex, s->nexec == 0 ? vmode : 0))
    rc = orion_error_set(&err, ORION_ENOMEM, "out of memory");
  /* opts.seed pins math.random: streams from (seed, block) alone, the same
   * for every call; otherwise (script seed, loop number, block). */
  if (rc == 0 && s->nexec == 0)
    rc = orion_exec_load(s->ex, o.has_seed ? 0 : loop_id, blob.data,
                         blob.len, &err);
  orion_exec_set_timeout(s->ex, o.timeout);
  if (rc == 0 && s->nexec == 0 && !serial && ap->cg_ok)
    rc = orion_exec_set_compiled(s->ex,
                                 (orion_cbody_fn)orion_cobj_sym(
                                     ap->cobj, ORION_CBODY_FN),
                                 ap->cg.slots, ap->cg.nslots);
  if (rc != 0) {
    orion_buf_free(&blob);
    unbind_all(s->ex, &l);
    orion_schedule_free(&sched);
    orion__verify_free(&vr);
    orion__raise(L, &err);
  }

  memset(&dst, 0, sizeof dst);
  if (s->nexec > 0) {
    /* On the executors; the in-process executor only applies buffered
     * writes to the driver's arrays. */
    t_dist = orion_now();
    dcpu = orion__cpu_seconds();
    /* The wait for a CPU (/proc, a file read: for --predict and
     * partitions = "auto" only, which take it). */
    if (s->predict != NULL || o.auto_parts)
      dwait = orion__run_delay_seconds();
    rc = run_distributed(L, s, &l, it, serial ? NULL : &ap->plan, &sched,
                         &blob, o.has_seed ? 0 : loop_id,
                         o.has_seed ? (uint64_t)o.seed : s->seed,
                         serial ? NULL : ap, &o, vmode ? &vr : NULL, &dst,
                         &err);
    t_dist = orion_now() - t_dist;
    dcpu = orion__cpu_seconds() - dcpu;
    if (s->predict != NULL || o.auto_parts)
      dwait = orion__run_delay_seconds() - dwait;
  } else {
    orion_progress_start(&progress, "parallel_for", "elements",
                         it->a->nnz);
    for (i = 0; i < nblocks && rc == 0; i++) {
      int b = order[i];
      int64_t sg;
      double tb = orion_now();
      for (sg = it->bs.first[b]; sg < it->bs.first[b + 1] && rc == 0; sg++) {
        const orion_segment *seg = &it->bs.segs[sg];
        /* math.random is seeded per (loop, block); a dense block made of
         * several segments gets one stream per segment. */
        int64_t seed_block = b + (sg - it->bs.first[b]) * (int64_t)nblocks;
        rc = orion_exec_run(s->ex, it->id, seg->lo, seg->hi,
                            o.has_seed ? (uint64_t)o.seed : s->seed,
                            seed_block, &err);
        done += seg->hi - seg->lo;
      }
      if (rc == 0)
        rc = orion_exec_end_block(s->ex, b, &err);
      if (rc == 0 && vmode != 0)
        rc = verify_take(s->ex, &vr, b, &err);
      if (rc == 0)
        rc = orion_exec_flush(s->ex, 0, &err);
      t_exec += orion_now() - tb;
      orion_progress_update(&progress, done);
    }
    if (rc == 0)
      rc = orion_exec_flush(s->ex, 1, &err);
    orion_progress_end(&progress);
  }
  orion_buf_free(&blob);
  /* Fold the in-process blocks' partials into the driver's accumulators
   * (taken also after an error, so they do not leak into the next loop). */
  if (fold_local_accs(L, s, &l, &sched, rc == 0) != 0 && rc == 0)
    rc = orion_error_set(&err, ORION_ENOMEM, "out of memory");
  if (rc == 0 && vmode != 0 &&
      orion__verify_check(L, &vr, &sched, &ap->plan, &err) != 0)
    verified = 0;
  orion__verify_free(&vr);
  orion_schedule_free(&sched);
  unbind_all(s->ex, &l);
  if (!verified || rc != 0) {
    orion_free(dst.exec_seconds);
    orion_free(dst.exec_blocks);
    if (!verified) /* --verify found a conflict: its message, whole */
      return luaL_error(L, "%s", err.msg);
    return luaL_error(L, "parallel_for body failed on %s", err.msg);
  }
  if (!serial && strcmp(o.tier, "gpu") == 0 && dst.gpu_execs == 0)
    gpu_cpu_note(L, s, ap);
  /* --predict: this pass's costs, before the table takes them. */
  orion_predict_obs pobs = {kind,        &it->bs,        it->a->nnz,
                            t_exec,      dst.peer_bytes, dst.bytes,
                            dst.nexec,   dst.early,      dst.dynamic,
                            orion_now() - t0, orion__cpu_seconds() - cpu0,
                            s->nexec > 0 ? t_dist : 0, dst.ahead,
                            dst.exec_bytes, dcpu + dwait, dst.reorder,
                            dst.exec_cpu, dst.exch_cpu, dst.net_cpu,
                            dst.body_cpu,
                            dst.body_wall};
  if (dst.exec_seconds != NULL)
    for (i = 0, pobs.compute_seconds = 0; i < dst.nexec; i++)
      pobs.compute_seconds += dst.exec_seconds[i];

  lua_createtable(L, 0, 16);
  lua_pushstring(L, sname);
  lua_setfield(L, -2, "schedule");
  lua_pushstring(L, dst.gpu_blocks > 0          ? "gpu"
                    : !serial && ap->cg_ok ? "c"
                                           : "lua");
  lua_setfield(L, -2, "tier");
  /* "cached": the plan of an earlier call was used (lua/plancache.h). */
  lua_pushstring(L, serial ? "serial" : cached ? "cached" : "analysed");
  lua_setfield(L, -2, "plan");
  lua_pushnumber(L, orion_now() - t0);
  lua_setfield(L, -2, "seconds");
  lua_pushinteger(L, nblocks);
  lua_setfield(L, -2, "blocks");
  lua_pushinteger(L, nclocks);
  lua_setfield(L, -2, "clocks");
  lua_pushinteger(L, o.parts[0]);
  lua_setfield(L, -2, "partitions");
  lua_pushinteger(L, it->a->nnz);
  lua_setfield(L, -2, "elements");
  lua_pushinteger(L, (lua_Integer)dst.bytes);
  lua_setfield(L, -2, "driver_bytes");
  lua_pushinteger(L, (lua_Integer)dst.bytes);
  lua_setfield(L, -2, "bytes_moved"); /* the old name of driver_bytes */
  lua_pushinteger(L, (lua_Integer)dst.peer_bytes);
  lua_setfield(L, -2, "peer_bytes");
  /* The driver's socket reads and writes to executors in the call. */
  lua_pushinteger(L, (lua_Integer)dst.io);
  lua_setfield(L, -2, "driver_io");
  lua_pushinteger(L, (lua_Integer)dst.shard_items);
  lua_setfield(L, -2, "shard_writes");
  /* Managed buffers: what went before the loop's end, and its mean
   * staleness in blocks (executor/exec_managed.h). */
  lua_pushinteger(L, (lua_Integer)dst.managed.bytes);
  lua_setfield(L, -2, "managed_bytes");
  lua_pushinteger(L, (lua_Integer)dst.managed.items);
  lua_setfield(L, -2, "managed_items");
  lua_pushnumber(L, dst.managed.items > 0 ? dst.managed.staleness_sum /
                                                (double)dst.managed.items
                                          : 0.0);
  lua_setfield(L, -2, "managed_staleness");
  /* Dispatch ahead along time parts, and how parts' rows moved between
   * executors: pushed after a block, or pulled when a block was placed
   * (scheduler/loop.h, scheduler/dist_resid.c). */
  lua_pushboolean(L, dst.ahead);
  lua_setfield(L, -2, "ahead");
  lua_pushinteger(L, (lua_Integer)dst.blocks_ahead);
  lua_setfield(L, -2, "blocks_ahead");
  lua_pushinteger(L, (lua_Integer)dst.parts_pushed);
  lua_setfield(L, -2, "parts_pushed");
  lua_pushinteger(L, (lua_Integer)dst.parts_pulled);
  lua_setfield(L, -2, "parts_pulled");
  /* Blocks an executor started before one that came earlier, whose rows
   * were not in yet (executor/exec_order.c). */
  lua_pushboolean(L, dst.reorder);
  lua_setfield(L, -2, "reorder");
  lua_pushinteger(L, (lua_Integer)dst.ran_out_of_order);
  lua_setfield(L, -2, "ran_out_of_order");
  {
    /* In the driver: one executor, always computing. */
    double one[4] = {t_exec, t_exec, 0, 0};
    const double *secs = dst.exec_seconds != NULL ? dst.exec_seconds : one;
    int n = dst.exec_seconds != NULL ? dst.nexec : 1;
    set_seconds(L, "executor_seconds", secs, n);
    set_seconds(L, "compute_seconds", secs + n, n);
    set_seconds(L, "wait_seconds", secs + 2 * n, n);
    set_seconds(L, "idle_seconds", secs + 3 * n, n);
    orion_free(dst.exec_seconds);
  }
  orion__dist_push_blocks(L, &dst, nblocks);
  lua_pushinteger(L, s->nexec > 0 ? s->nexec : 1);
  lua_setfield(L, -2, "executors");
  if (s->predict != NULL)
    orion__predict_loop(L, s->predict, &pobs);
  if (o.auto_parts) {
    const char *env = getenv("ORION_ASSIGN");
    int64_t rows = it->a->dims[0];
    for (i = 1; i < it->a->ndims; i++)
      if (it->a->dims[i] < rows)
        rows = it->a->dims[i];
    orion__auto_parts_after(L, &pobs, rows,
                            o.assign != ORION_ASSIGN_DEFAULT ||
                                (env != NULL && env[0] != '\0'));
  }
  if (s->loop_metrics)
    orion__loop_metrics(L, -1, cpu0);
  return 1;
}

void orion__open_pfor(lua_State *L) {
  static const luaL_Reg funcs[] = {{"parallel_for", l_parallel_for},
                                   {"explain", l_explain},
                                   {"buffer", l_buffer},
                                   {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
  if (luaL_newmetatable(L, BUFFER_MT)) {
    lua_pushcfunction(L, buffer_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, buffer_index);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
}
