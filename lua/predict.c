/* orion-driver --predict: a loop's measured pass, simulated on another
 * cluster (lua/predict.h). */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/predict.h"
#include "scheduler/schedule.h"
#include "scheduler/sim.h"
#include "util/alloc.h"
#include "util/error.h"

#define SEEN_KEY "orion.predicted" /* call sites predicted so far */

/* How many times a time part changes executor in a pass of the steady
 * state (each starts where the previous pass left it) when the blocks go
 * to executors by the schedule's static ranges. */
static int64_t moves_per_pass(orion_order_kind kind, int n0, int n1,
                              int nexec) {
  orion_schedule s;
  int64_t moves = 0;
  int q, k, *at;
  if (nexec < 2 || orion_schedule_make(&s, kind, n0, n1, 0) != 0)
    return 0;
  at = orion_malloc(sizeof(int) * (size_t)n1);
  if (at != NULL && s.has_time) {
    for (k = 0; k < s.nblocks; k++)
      at[s.order[k] % n1] = orion_schedule_exec(&s, s.order[k], nexec);
    for (k = 0; k < s.nblocks; k++) {
      int b = s.order[k], e = orion_schedule_exec(&s, b, nexec);
      q = b % n1;
      moves += at[q] != e;
      at[q] = e;
    }
  }
  orion_free(at);
  orion_schedule_free(&s);
  return moves;
}

static void record(lua_State *L, const char *spec, const char *where,
                   const orion_sim_result *r, double fixed, int n, int pass,
                   const orion_sim_loop *lp, double spe, int64_t elements) {
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "orion") == LUA_TTABLE &&
      lua_getfield(L, -1, "record") == LUA_TFUNCTION) {
    lua_createtable(L, 0, 16);
    lua_pushstring(L, spec);
    lua_setfield(L, -2, "predict");
    lua_pushstring(L, where);
    lua_setfield(L, -2, "loop");
    lua_pushnumber(L, r->seconds + fixed);
    lua_setfield(L, -2, "predicted_pass_seconds");
    lua_pushnumber(L, fixed);
    lua_setfield(L, -2, "fixed_seconds");
    lua_pushnumber(L, r->compute);
    lua_setfield(L, -2, "compute_seconds");
    lua_pushnumber(L, r->rows);
    lua_setfield(L, -2, "rows_seconds");
    lua_pushnumber(L, r->driver);
    lua_setfield(L, -2, "driver_seconds");
    lua_pushnumber(L, r->slow);
    lua_setfield(L, -2, "slow_host_seconds");
    lua_pushnumber(L, r->seconds + fixed > 0
                          ? r->busy / (n * (r->seconds + fixed))
                          : 1.0);
    lua_setfield(L, -2, "efficiency");
    lua_pushstring(L, r->bottleneck);
    lua_setfield(L, -2, "bottleneck");
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "hosts");
    lua_pushinteger(L, pass);
    lua_setfield(L, -2, "pass");
    /* The costs measured here, for bench/predict_scale. */
    lua_pushinteger(L, elements);
    lua_setfield(L, -2, "elements");
    lua_pushnumber(L, spe);
    lua_setfield(L, -2, "sec_per_elem");
    lua_pushnumber(L, lp->part_bytes);
    lua_setfield(L, -2, "part_bytes");
    lua_pushnumber(L, lp->drv_block_bytes);
    lua_setfield(L, -2, "driver_block_bytes");
    lua_pushinteger(L, lp->n0);
    lua_setfield(L, -2, "space_parts");
    lua_pushinteger(L, lp->n1);
    lua_setfield(L, -2, "time_parts");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}

/* One cluster of the --predict list: predicted, printed, recorded.  0, or
 * -1 with err set. */
static int predict_on(lua_State *L, const char *spec, const orion_sim_loop *lp,
                      double spe, const orion_predict_obs *o,
                      const char *where, int pass, orion_error *err) {
  orion_sim_cluster c;
  orion_sim_host *hosts;
  orion_sim_result r;
  double cpus, bps, here, fixed;
  int n, e, rc, nh = o->nexec > 0 ? o->nexec : 1;
  if (orion_sim_parse_spec(spec, &n, &cpus, &bps, err) != 0)
    return -1;
  hosts = orion_malloc(sizeof *hosts * (size_t)(n > nh ? n : nh));
  if (hosts == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  /* Measured here as one CPU's; a host of Q CPUs runs Q times as fast. */
  for (e = 0; e < (n > nh ? n : nh); e++)
    hosts[e] = (orion_sim_host){spe / cpus, bps, ORION_SIM_HOST_LATENCY};
  c.hosts = hosts;
  c.driver = (orion_sim_host){0, bps, ORION_SIM_HOST_LATENCY};
  /* The fixed costs of a pass (starting and ending the loop, the body's
   * setup, what the model leaves out): the pass's wall time beyond what
   * the model predicts for its own executors, at the speed measured, on
   * links of this kind. */
  for (e = 0; e < nh; e++)
    hosts[e].sec_per_elem = spe;
  c.n = nh;
  rc = orion_sim_pass(lp, &c, &here, err);
  for (e = 0; e < nh; e++)
    hosts[e].sec_per_elem = spe / cpus;
  fixed = rc == 0 && o->seconds > here ? o->seconds - here : 0;
  c.n = n;
  if (rc == 0)
    rc = orion_sim_predict(lp, &c, &r, err);
  orion_free(hosts);
  if (rc != 0)
    return rc;
  if (fixed > r.compute && fixed > r.rows && fixed > r.driver &&
      fixed > r.slow)
    r.bottleneck = "fixed";
  printf("predict: parallel_for at %s, from pass %d, on %s: %.4g s a pass "
         "(compute %.4g, rows in flight %.4g, driver %.4g, slow host %.4g, "
         "fixed %.4g; bottleneck %s; efficiency %.2f)\n",
         where, pass, spec, r.seconds + fixed, r.compute, r.rows, r.driver,
         r.slow, fixed, r.bottleneck,
         r.seconds + fixed > 0 ? r.busy / (n * (r.seconds + fixed)) : 1.0);
  record(L, spec, where, &r, fixed, n, pass, lp, spe, o->elements);
  return 0;
}

void orion__predict_loop(lua_State *L, const char *spec,
                         const orion_predict_obs *o) {
  const orion_blockset *bs = o->bs;
  orion_sim_loop lp;
  orion_error err;
  int64_t *elems, moves, nb = (int64_t)bs->n0 * bs->n1, b, k;
  double spe;
  int rc = 0, pass;
  const char *where, *p;

  luaL_where(L, 1); /* "FILE:LINE: " */
  {
    size_t len;
    const char *w = lua_tolstring(L, -1, &len);
    lua_pushlstring(L, w, len >= 2 ? len - 2 : len);
    lua_remove(L, -2);
  }
  where = lua_tostring(L, -1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, SEEN_KEY);
  pass = (int)lua_tointeger(L, (lua_getfield(L, -1, where), -1)) + 1;
  lua_pop(L, 1);
  if (pass > 2) {
    lua_pop(L, 2);
    return;
  }
  lua_pushinteger(L, pass);
  lua_setfield(L, -2, where);
  lua_pop(L, 1);
  orion_error_clear(&err);
  elems = orion_malloc(sizeof(int64_t) * (size_t)(nb > 0 ? nb : 1));
  if (elems == NULL)
    luaL_error(L, "--predict: out of memory");
  for (b = 0; b < nb; b++) {
    elems[b] = 0;
    for (k = bs->first[b]; k < bs->first[b + 1]; k++)
      elems[b] += bs->segs[k].hi - bs->segs[k].lo;
  }
  spe = o->elements > 0 ? o->compute_seconds / (double)o->elements : 0;
  moves = moves_per_pass(o->kind, bs->n0, bs->n1, o->nexec);
  memset(&lp, 0, sizeof lp);
  lp.kind = o->kind;
  lp.n0 = bs->n0;
  lp.n1 = bs->n1;
  lp.elems = elems;
  lp.part_bytes = moves > 0 ? (double)o->peer_bytes / (double)moves : 0;
  lp.drv_block_bytes = nb > 0 ? (double)o->driver_bytes / (double)nb : 0;
  lp.early = o->early;
  lp.ahead = o->ahead;
  lp.dynamic = o->dynamic;
  /* SPEC[,SPEC...]: each cluster in turn. */
  for (p = spec; rc == 0 && *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
    char one[128];
    size_t len = strcspn(p, ",");
    if (len >= sizeof one) {
      rc = orion_error_set(&err, ORION_EINVAL, "a cluster of %zu characters",
                           len);
      break;
    }
    memcpy(one, p, len);
    one[len] = '\0';
    rc = predict_on(L, one, &lp, spe, o, where, pass, &err);
  }
  orion_free(elems);
  if (rc != 0)
    luaL_error(L, "--predict at %s: %s", where, err.msg);
  printf("predict: measured here on %d executor%s: %lld elements, %.3g s an "
         "element, %.0f bytes a time part%s, %.0f driver bytes a block, "
         "%.4g s a pass\n",
         o->nexec > 0 ? o->nexec : 1, o->nexec > 1 ? "s" : "",
         (long long)o->elements, spe, lp.part_bytes,
         moves > 0 || bs->n1 < 2 ? "" : " (not measured: 1 executor)",
         lp.drv_block_bytes, o->seconds);
  fflush(stdout);
  lua_pop(L, 1); /* where */
}
