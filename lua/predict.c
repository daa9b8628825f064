/* orion-driver --predict: a loop's measured pass, simulated on another
 * cluster (lua/predict.h). */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lua/predict.h"
#include "scheduler/schedule.h"
#include "scheduler/sim.h"
#include "util/alloc.h"
#include "util/error.h"

#define SEEN_KEY "orion.predicted" /* call sites: their passes so far */

double orion__cpu_seconds(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double orion__run_delay_seconds(void) {
  unsigned long long run = 0, wait = 0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (f == NULL)
    return 0;
  if (fscanf(f, "%llu %llu", &run, &wait) != 2)
    wait = 0;
  fclose(f);
  return 1e-9 * (double)wait;
}

const char *orion__push_site(lua_State *L) {
  size_t len;
  const char *w;
  luaL_where(L, 1); /* "FILE:LINE: " */
  w = lua_tolstring(L, -1, &len);
  lua_pushlstring(L, w, len >= 2 ? len - 2 : len);
  lua_remove(L, -2);
  return lua_tostring(L, -1);
}

int orion__site_count(lua_State *L, const char *key, const char *where) {
  int n;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, key);
  n = (int)lua_tointeger(L, (lua_getfield(L, -1, where), -1)) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, where);
  lua_pop(L, 1);
  return n;
}

int orion__record_open(lua_State *L, int n) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "orion") != LUA_TTABLE ||
      lua_getfield(L, -1, "record") != LUA_TFUNCTION)
    return 0;
  lua_createtable(L, 0, n);
  return 1;
}

/* Every pass as measured: {"loop", "pass", "measured_pass_seconds"}. */
static void record_measured(lua_State *L, const char *where, int pass,
                            double seconds) {
  int top = lua_gettop(L);
  if (orion__record_open(L, 3)) {
    lua_pushstring(L, where);
    lua_setfield(L, -2, "loop");
    lua_pushinteger(L, pass);
    lua_setfield(L, -2, "pass");
    lua_pushnumber(L, seconds);
    lua_setfield(L, -2, "measured_pass_seconds");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}

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
                   const orion_sim_loop *lp, double spe, int64_t elements,
                   double scale) {
  int top = lua_gettop(L);
  if (orion__record_open(L, 27)) {
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
    lua_pushnumber(L, r->exchange);
    lua_setfield(L, -2, "exchange_seconds");
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
    lua_pushnumber(L, scale);
    lua_setfield(L, -2, "host_scale");
    lua_pushnumber(L, lp->part_bytes);
    lua_setfield(L, -2, "part_bytes");
    lua_pushnumber(L, lp->drv_block_bytes);
    lua_setfield(L, -2, "driver_block_bytes");
    lua_pushnumber(L, lp->drv_block_sec);
    lua_setfield(L, -2, "driver_block_seconds");
    lua_pushnumber(L, lp->drv_exec_bytes);
    lua_setfield(L, -2, "driver_exec_bytes");
    lua_pushnumber(L, lp->exch_elems_per_byte);
    lua_setfield(L, -2, "exchange_elems_per_byte");
    lua_pushnumber(L, lp->shard_bytes_per_elem);
    lua_setfield(L, -2, "shard_bytes_per_elem");
    lua_pushinteger(L, lp->n0);
    lua_setfield(L, -2, "space_parts");
    lua_pushinteger(L, lp->n1);
    lua_setfield(L, -2, "time_parts");
    lua_call(L, 1, 0);
  }
  lua_settop(L, top);
}

/* The exchange's CPU (scheduler/sim.h): the executors' CPU seconds in
 * the network path over the bytes they sent and received (the driver's,
 * both ways, and those between executors, at both ends), as elements of
 * the body at its CPU seconds an element; and, in a loop whose time parts
 * do not move (moves 0), the bytes between executors per element as
 * shard traffic, were every row remote (the part (n - 1) / n was). */
static void exchange_of(const orion_predict_obs *o, int64_t moves,
                        orion_sim_loop *lp) {
  double bytes = (double)o->driver_bytes + 2.0 * (double)o->peer_bytes;
  if (o->nexec < 1 || o->elements <= 0 || o->body_cpu <= 0 || bytes <= 0)
    return;
  lp->exch_elems_per_byte =
      o->exch_cpu / bytes / (o->body_cpu / (double)o->elements);
  if (moves == 0 && o->nexec > 1)
    lp->shard_bytes_per_elem = (double)o->peer_bytes / (double)o->elements *
                               o->nexec / (o->nexec - 1);
}

/* The pass o as the simulator's loop (*lp, whose elems are the returned
 * array, orion_malloc'd: NULL when out of memory), its seconds an element
 * (one CPU's) and the moves of its time parts. */
static int64_t *loop_of(const orion_predict_obs *o, orion_sim_loop *lp,
                        double *spe, int64_t *moves) {
  const orion_blockset *bs = o->bs;
  int64_t *elems, nb = (int64_t)bs->n0 * bs->n1, b, k;
  elems = orion_malloc(sizeof(int64_t) * (size_t)(nb > 0 ? nb : 1));
  if (elems == NULL)
    return NULL;
  for (b = 0; b < nb; b++) {
    elems[b] = 0;
    for (k = bs->first[b]; k < bs->first[b + 1]; k++)
      elems[b] += bs->segs[k].hi - bs->segs[k].lo;
  }
  /* The bodies' own seconds where the executors said: their CPU seconds
   * at the wall seconds a CPU second took a host, the loop thread's CPU
   * (which runs beside the bodies, on the same quota) counted with the
   * bodies' (the rest of a block's seconds is the exchange's, below, or
   * comes back as the hosts' speed, predict_on); else the blocks'. */
  if (o->elements <= 0)
    *spe = 0;
  else if (o->body_wall > 0 && o->body_cpu > 0) {
    double wpc = o->body_wall / (o->body_cpu + o->net_cpu);
    *spe = o->body_cpu / (double)o->elements * (wpc > 1 ? wpc : 1);
  } else
    *spe = o->compute_seconds / (double)o->elements;
  *moves = moves_per_pass(o->kind, bs->n0, bs->n1, o->nexec);
  memset(lp, 0, sizeof *lp);
  lp->kind = o->kind;
  lp->n0 = bs->n0;
  lp->n1 = bs->n1;
  lp->elems = elems;
  lp->part_bytes = *moves > 0 ? (double)o->peer_bytes / (double)*moves : 0;
  /* The driver's bytes: those each executor got once (its LOAD_BODY,
   * the stale rows its first block carried), the rest per block. */
  lp->drv_exec_bytes = o->nexec > 0 ? o->exec_bytes : 0;
  lp->drv_block_bytes =
      nb > 0 ? ((double)o->driver_bytes - lp->drv_exec_bytes * o->nexec) /
                   (double)nb
             : 0;
  if (lp->drv_block_bytes < 0)
    lp->drv_block_bytes = 0;
  /* The driver's time per block: its CPU from sending the loop to its
   * end, at the speed it ran (with the time its quota or the machine held
   * it), all taken as per block: sending the block and taking its report
   * (the loop's own start and end are a few blocks' worth).  Its work
   * before and after is in the fixed costs (predict_on). */
  lp->drv_block_sec =
      nb > 0 && o->nexec > 0 ? o->driver_loop / (double)nb : 0;
  exchange_of(o, *moves, lp);
  lp->early = o->early;
  lp->ahead = o->ahead;
  lp->reorder = o->reorder;
  lp->dynamic = o->dynamic;
  return elems;
}

/* The factor on the hosts' seconds an element (c's first c->n hosts, at
 * spe) that makes the model's pass on them last `target` seconds: by
 * bisection (the pass grows with it), to 0.1%, within 40 steps; for loops
 * of over 100,000 blocks the first guess only (more work beyond the
 * model's compute).  0, or the simulator's error. */
static int host_scale(const orion_sim_loop *lp, orion_sim_cluster *c,
                      double spe, double target, double *scale,
                      orion_error *err) {
  orion_sim_host *h = (orion_sim_host *)c->hosts;
  double lo = 1, hi, t;
  int e, k, rc;
  orion_sim_result r;
  if ((rc = orion_sim_predict(lp, c, &r, err)) != 0)
    return rc;
  hi = 1 + (target - r.seconds) / r.compute;
  *scale = hi;
  if ((int64_t)lp->n0 * lp->n1 > 100000)
    return 0;
  for (k = 0; k < 40; k++) { /* an upper bound: the pass at hi >= target */
    for (e = 0; e < c->n; e++)
      h[e].sec_per_elem = spe * hi;
    if ((rc = orion_sim_pass(lp, c, &t, err)) != 0)
      return rc;
    if (t >= target)
      break;
    lo = hi;
    hi *= 2;
  }
  for (k = 0; k < 40 && hi - lo > 1e-3 * lo; k++) {
    double mid = (lo + hi) / 2;
    for (e = 0; e < c->n; e++)
      h[e].sec_per_elem = spe * mid;
    if ((rc = orion_sim_pass(lp, c, &t, err)) != 0)
      return rc;
    if (t >= target)
      hi = mid;
    else
      lo = mid;
  }
  *scale = (lo + hi) / 2;
  return 0;
}

/* One cluster of the --predict list: predicted, printed, recorded.  0, or
 * -1 with err set. */
static int predict_on(lua_State *L, const char *spec, const orion_sim_loop *lp,
                      double spe, const orion_predict_obs *o,
                      const char *where, int pass, orion_error *err) {
  orion_sim_cluster c;
  orion_sim_host *hosts;
  orion_sim_result r, rh;
  double cpus, bps, burst, fixed, scale = 1;
  int n, e, rc, nh = o->nexec > 0 ? o->nexec : 1;
  if (orion_sim_parse_cluster(spec, &n, &cpus, &bps, &burst, err) != 0)
    return -1;
  hosts = orion_malloc(sizeof *hosts * (size_t)(n > nh ? n : nh));
  if (hosts == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  /* Measured here as one CPU's; a host of Q CPUs runs Q times as fast. */
  for (e = 0; e < (n > nh ? n : nh); e++)
    hosts[e] = (orion_sim_host){spe / cpus, bps, ORION_SIM_HOST_LATENCY, burst};
  c.hosts = hosts;
  c.driver = (orion_sim_host){0, bps, ORION_SIM_HOST_LATENCY, burst};
  /* The pass as the model sees it on its own executors, at the speed
   * measured, on links of this kind, against the pass as it ran:
   * - the fixed costs of a pass are the driver's own time before sending
   *   the loop and after its end (the plan, binding and capturing the
   *   body, folding accumulators), measured: the same on any cluster;
   * - the executors' time in the loop beyond the model's (a host held
   *   between its blocks by its CPU quota or by other work, what a block's
   *   own seconds do not see) is taken as the hosts' speed: their seconds
   *   an element grow by it over the model's compute, so that it shrinks
   *   with the work a host has.
   * Run in the driver (no executors), the whole rest is the fixed cost. */
  for (e = 0; e < nh; e++)
    hosts[e].sec_per_elem = spe;
  c.n = nh;
  rc = orion_sim_predict(lp, &c, &rh, err);
  if (rc == 0 && o->dist_seconds > 0) {
    fixed = o->seconds > o->dist_seconds ? o->seconds - o->dist_seconds : 0;
    if (o->dist_seconds > rh.seconds && rh.compute > 0)
      rc = host_scale(lp, &c, spe, o->dist_seconds, &scale, err);
  } else
    fixed = rc == 0 && o->seconds > rh.seconds ? o->seconds - rh.seconds : 0;
  for (e = 0; e < (n > nh ? n : nh); e++)
    hosts[e].sec_per_elem = spe * scale / cpus;
  c.n = n;
  if (rc == 0)
    rc = orion_sim_predict(lp, &c, &r, err);
  orion_free(hosts);
  if (rc != 0)
    return rc;
  if (fixed > r.compute && fixed > r.rows && fixed > r.exchange &&
      fixed > r.driver && fixed > r.slow)
    r.bottleneck = "fixed";
  printf("predict: parallel_for at %s, from pass %d, on %s: %.4g s a pass "
         "(compute %.4g, rows in flight %.4g, exchange %.4g, driver %.4g, "
         "slow host %.4g, "
         "fixed %.4g; bottleneck %s; efficiency %.2f; hosts x%.3g)\n",
         where, pass, spec, r.seconds + fixed, r.compute, r.rows, r.exchange,
         r.driver,
         r.slow, fixed, r.bottleneck,
         r.seconds + fixed > 0 ? r.busy / (n * (r.seconds + fixed)) : 1.0,
         scale);
  record(L, spec, where, &r, fixed, n, pass, lp, spe, o->elements, scale);
  return 0;
}

void orion__predict_loop(lua_State *L, const char *spec,
                         const orion_predict_obs *o) {
  const orion_blockset *bs = o->bs;
  orion_sim_loop lp;
  orion_error err;
  int64_t *elems, moves;
  double spe;
  int rc = 0, pass;
  const char *where, *p;
  char shard[64] = "";

  where = orion__push_site(L);
  pass = orion__site_count(L, SEEN_KEY, where);
  record_measured(L, where, pass, o->seconds);
  if (pass > 2) {
    lua_pop(L, 1);
    return;
  }
  orion_error_clear(&err);
  elems = loop_of(o, &lp, &spe, &moves);
  if (elems == NULL)
    luaL_error(L, "--predict: out of memory");
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
  if (lp.shard_bytes_per_elem > 0)
    snprintf(shard, sizeof shard, ", %.3g shard bytes an element",
             lp.shard_bytes_per_elem);
  printf("predict: measured here on %d executor%s: %lld elements, %.3g s an "
         "element, %.0f bytes a time part%s, %.0f driver bytes and %.3g driver "
         "s a block (CPU, and held), %.0f driver bytes an executor, %.4g s a pass; "
         "exchange %.3g elements a byte%s\n",
         o->nexec > 0 ? o->nexec : 1, o->nexec > 1 ? "s" : "",
         (long long)o->elements, spe, lp.part_bytes,
         moves > 0 || bs->n1 < 2 ? "" : " (not measured: 1 executor)",
         lp.drv_block_bytes, lp.drv_block_sec, lp.drv_exec_bytes, o->seconds,
         lp.exch_elems_per_byte, shard);
  fflush(stdout);
  lua_pop(L, 1); /* where */
}

int orion__predict_choose(const orion_predict_obs *o, double link_bps,
                          int64_t max_parts, int keep_placement,
                          orion_sim_setting *ran,
                          orion_sim_setting *best, orion_error *err) {
  orion_sim_loop lp;
  orion_sim_cluster c;
  orion_sim_result rh;
  orion_sim_host *hosts;
  int64_t *elems, moves;
  double spe, scale = 1, fixed;
  int e, rc, n = o->nexec;
  if (n < 1)
    return orion_error_set(err, ORION_EINVAL,
                           "partitions \"auto\": the loop ran in the driver");
  elems = loop_of(o, &lp, &spe, &moves);
  hosts = orion_malloc(sizeof *hosts * (size_t)n);
  if (elems == NULL || hosts == NULL) {
    orion_free(elems);
    orion_free(hosts);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (e = 0; e < n; e++)
    hosts[e] = (orion_sim_host){spe, link_bps, ORION_SIM_HOST_LATENCY, 0};
  c.n = n;
  c.hosts = hosts;
  c.driver = (orion_sim_host){0, link_bps, ORION_SIM_HOST_LATENCY, 0};
  /* Calibrated as --predict is (predict_on): the hosts' speed from the
   * pass as it ran. */
  rc = orion_sim_predict(&lp, &c, &rh, err);
  if (rc == 0 && o->dist_seconds > rh.seconds && rh.compute > 0)
    rc = host_scale(&lp, &c, spe, o->dist_seconds, &scale, err);
  for (e = 0; e < n; e++)
    hosts[e].sec_per_elem = spe * scale;
  if (rc == 0)
    rc = orion_sim_choose(&lp, &c, max_parts, ORION_AUTO_MARGIN,
                          keep_placement, ran, best, err);
  fixed = o->seconds > o->dist_seconds ? o->seconds - o->dist_seconds : 0;
  ran->seconds += fixed;
  best->seconds += fixed;
  orion_free(elems);
  orion_free(hosts);
  return rc;
}
