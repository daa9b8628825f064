/* Dynamic block assignment on the cluster: which loops place their blocks
 * at run time (scheduler/loop.h says how a block's executor is chosen),
 * what each executor holds of a block's data, and the blocks each one
 * ran.
 *
 * A loop assigns dynamically when opts.assign = "dynamic", or when
 * ORION_ASSIGN=dynamic and opts.assign is not given and its blocks do not
 * run on devices (tier "gpu"/"auto" with a device: a block's results could
 * then depend on whether its executor has one).  Static placement stays
 * the default: dynamic placement depends on timing, so which executor
 * holds which blocks and rows after a loop (and names a failing block)
 * changes from run to run, and under load it can move the data that the
 * static placement keeps in place between loops.  Only the executor changes: the
 * blocks and the dependences between them are the schedule's, so the
 * results are the same bits either way (t/cluster/dynamic.lua).
 *
 * Each executor's mean block time, and what moving a byte cost, carry over
 * from one loop to the next (a loop starts weighing executors by what the
 * last one saw).
 *
 * Balanced placement (opts.assign = "balanced", ORION_ASSIGN=balanced, on
 * the same terms) is static within a run: what changes is which executor
 * owns which space parts (orion_loop_set_owners).  Per loop site (its
 * `where`) the driver keeps each executor's elements per second of block
 * compute time, and from the site's second run on the parts go to the
 * plan of scheduler/balance.h for those speeds.  The rows still go on to
 * the next block's executor ahead of it, which the per-block placement
 * above cannot do, so a slow executor is worked around without a round
 * trip on the critical path, one run late.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "scheduler/dist_int.h"
#include "scheduler/balance.h"
#include "util/alloc.h"

/* Per executor: the mean seconds per block of the last loop (0: none). */
static double *last_mean;
static int last_n;
static double last_move_cost; /* 0: none yet */

int orion__dist_assign_opt(lua_State *L, const char *v) {
  const char *env = getenv("ORION_ASSIGN");
  if (v == NULL && env != NULL && env[0] != '\0' &&
      strcmp(env, "static") != 0 && strcmp(env, "dynamic") != 0 &&
      strcmp(env, "balanced") != 0)
    return luaL_error(L, "ORION_ASSIGN must be \"static\", \"dynamic\" or "
                         "\"balanced\", not \"%s\"",
                      env);
  if (v == NULL)
    return ORION_ASSIGN_DEFAULT;
  if (strcmp(v, "static") == 0)
    return ORION_ASSIGN_STATIC;
  if (strcmp(v, "dynamic") == 0)
    return ORION_ASSIGN_DYNAMIC;
  if (strcmp(v, "balanced") == 0)
    return ORION_ASSIGN_BALANCED;
  return luaL_error(L, "parallel_for: assign must be \"static\", "
                       "\"dynamic\" or \"balanced\", not \"%s\"",
                    v);
}

/* The placement a loop gets: its opts.assign, else $ORION_ASSIGN where its
 * blocks do not run on devices, else static. */
static int assign_of(const loop_run *r, int gpu_execs) {
  const char *v = getenv("ORION_ASSIGN");
  if (r->j->assign != ORION_ASSIGN_DEFAULT)
    return r->j->assign;
  if (v == NULL || gpu_execs > 0)
    return ORION_ASSIGN_STATIC;
  if (strcmp(v, "dynamic") == 0)
    return ORION_ASSIGN_DYNAMIC;
  if (strcmp(v, "balanced") == 0)
    return ORION_ASSIGN_BALANCED;
  return ORION_ASSIGN_STATIC;
}

int orion__assign_dynamic(const loop_run *r, int gpu_execs) {
  return assign_of(r, gpu_execs) == ORION_ASSIGN_DYNAMIC;
}

/* ---- balanced placement ------------------------------------------------- */

/* What the runs of one loop (its `where`) on n executors saw: each
 * executor's elements per second of block compute time (a running mean
 * over runs, 0: not measured), and the plan the last run used. */
typedef struct site {
  char *where;
  int n, n0;
  double *speed;
  int *owner; /* NULL: the last run was placed statically */
  unsigned long used;
} site;

#define NSITES 64
static site sites[NSITES];
static unsigned long site_clock;

/* A new plan must be this much faster than keeping the last one, by the
 * speeds measured so far: speeds vary from run to run, and a plan that
 * changes moves the parts' rows. */
#define REPLAN_GAIN 1.15

static void site_reset(site *x) {
  orion_free(x->where);
  orion_free(x->speed);
  orion_free(x->owner);
  memset(x, 0, sizeof *x);
}

/* The site of r's loop, found or made (the least recently used one
 * replaced), reset when its executors or space parts changed; NULL when
 * out of memory. */
static site *site_of(const loop_run *r) {
  int k, pick = 0, n0 = r->j->sched->n0;
  site *x;
  for (k = 0; k < NSITES; k++) {
    if (sites[k].where != NULL && strcmp(sites[k].where, r->j->where) == 0)
      break;
    if (sites[k].used < sites[pick].used)
      pick = k;
  }
  x = &sites[k < NSITES ? k : pick];
  if (k == NSITES || x->n != r->n || x->n0 != n0) {
    site_reset(x);
    x->where = orion_malloc(strlen(r->j->where) + 1);
    x->speed = orion_calloc((size_t)r->n, sizeof *x->speed);
    if (x->where == NULL || x->speed == NULL) {
      site_reset(x);
      return NULL;
    }
    strcpy(x->where, r->j->where);
    x->n = r->n;
    x->n0 = n0;
  }
  x->used = ++site_clock;
  return x;
}

/* The elements of block b. */
static double block_elements(const orion_blockset *bs, int b) {
  double n = 0;
  int64_t k;
  for (k = bs->first[b]; k < bs->first[b + 1]; k++)
    n += (double)(bs->segs[k].hi - bs->segs[k].lo);
  return n;
}

/* Balanced placement: with every executor measured by earlier runs of the
 * loop, its space parts go to the plan of scheduler/balance.h (the last
 * run's plan kept unless the new one is REPLAN_GAIN faster); before that,
 * the static placement. */
static void balance_start(loop_run *r) {
  const orion_schedule *s = r->j->sched;
  const orion_blockset *bs = &r->j->it->bs;
  site *x = site_of(r);
  double *w, best;
  int *owner, p, q, e;
  if (x == NULL || s->n0 < 1 || bs->n0 != s->n0 || bs->n1 != s->n1)
    return;
  for (e = 0; e < r->n; e++)
    if (!(x->speed[e] > 0))
      return; /* the static placement measures them first */
  w = orion_calloc((size_t)s->n0, sizeof *w);
  owner = orion_malloc(sizeof *owner * (size_t)s->n0);
  if (w == NULL || owner == NULL) {
    orion_free(w);
    orion_free(owner);
    return;
  }
  for (p = 0; p < s->n0; p++)
    for (q = 0; q < s->n1; q++)
      w[p] += block_elements(bs, p * s->n1 + q);
  best = orion_balance_plan(w, s->n0, x->speed, r->n, owner);
  if (x->owner != NULL &&
      orion_balance_makespan(w, s->n0, x->speed, r->n, x->owner) <=
          best * REPLAN_GAIN) {
    orion_free(owner);
    owner = x->owner;
  } else {
    orion_free(x->owner);
    x->owner = owner;
  }
  if (orion_loop_set_owners(&r->m, owner) != 0) {
    orion_free(x->owner);
    x->owner = NULL;
  }
  orion_free(w);
}

/* The run's speeds into its site: each executor that ran blocks, half the
 * old figure and half this run's; one that ran none drifts a quarter of
 * the way to the median of the others, so that a slow executor left
 * without parts gets one again after some runs and is measured anew. */
static void balance_end(loop_run *r) {
  site *x = site_of(r);
  double *got, med = 0;
  int e, k, ngot = 0;
  if (x == NULL)
    return;
  got = orion_malloc(sizeof *got * (size_t)r->n);
  if (got == NULL)
    return;
  for (e = 0; e < r->n; e++) {
    double busy = r->work[e], nel = r->work[r->n + e];
    if (busy > 0 && nel > 0) {
      double v = nel / busy;
      x->speed[e] = x->speed[e] > 0 ? (x->speed[e] + v) / 2 : v;
      for (k = ngot; k > 0 && got[k - 1] > x->speed[e]; k--)
        got[k] = got[k - 1];
      got[k] = x->speed[e];
      ngot++;
    }
  }
  if (ngot > 0)
    med = got[ngot / 2];
  for (e = 0; e < r->n && ngot > 0; e++)
    if (!(r->work[e] > 0 && r->work[r->n + e] > 0) && x->speed[e] > 0)
      x->speed[e] += (med - x->speed[e]) / 4;
  orion_free(got);
}

void orion__assign_note_block(loop_run *r, int e, int b, double seconds) {
  if (r->work == NULL || e < 0 || e >= r->n || !(seconds >= 0))
    return;
  r->work[e] += seconds;
  r->work[r->n + e] += block_elements(&r->j->it->bs, b);
}

/* What executor e holds of block b's data, in bytes: its sparse elements
 * and the resident rows of its parts (scheduler/dist_resid.c). */
static int64_t affinity(void *ud, int e, int b) {
  loop_run *r = ud;
  const orion_replica *c = r->itc;
  const orion_array *a = r->j->it->a;
  const orion_blockset *bs = &r->j->it->bs;
  int64_t n = orion__resid_affinity(r, e, b), s0, s1;
  if (a->sparse && c->bhave != NULL && b < c->nb &&
      c->bhave[e * c->nb + b] == c->bver[b]) {
    s0 = bs->first[b];
    s1 = bs->first[b + 1];
    if (s1 > s0) /* its elements: keys and values */
      n += (bs->segs[s1 - 1].hi - bs->segs[s0].lo) *
           ((int64_t)orion_type_size(a->type) + 8 * a->ndims);
  }
  return n;
}

void orion__assign_start(loop_run *r, int gpu_execs) {
  int e;
  r->balanced = assign_of(r, gpu_execs) == ORION_ASSIGN_BALANCED;
  if (r->balanced) {
    r->work = orion_calloc((size_t)r->n * 2, sizeof *r->work);
    balance_start(r);
  }
  r->m.dynamic = orion__assign_dynamic(r, gpu_execs);
  if (!r->m.dynamic)
    return;
  r->m.io.affinity = affinity;
  if (last_n == r->n)
    for (e = 0; e < r->n; e++)
      r->m.mean[e] = last_mean[e];
  if (last_move_cost > 0)
    r->m.move_cost = last_move_cost;
}

void orion__assign_end(loop_run *r, orion_dist_stats *st) {
  int e;
  st->dynamic = r->m.dynamic;
  st->exec_blocks = orion_calloc((size_t)r->n + 1, sizeof *st->exec_blocks);
  for (e = 0; st->exec_blocks != NULL && e < r->n; e++)
    st->exec_blocks[e] = r->m.ran[e];
  st->balanced = r->balanced;
  if (r->balanced && r->work != NULL && orion_loop_failed(&r->m) == NULL)
    balance_end(r);
  orion_free(r->work);
  r->work = NULL;
  if (!r->m.dynamic)
    return;
  if (last_n != r->n) {
    orion_free(last_mean);
    last_mean = orion_calloc((size_t)r->n, sizeof *last_mean);
    last_n = last_mean != NULL ? r->n : 0;
  }
  for (e = 0; e < last_n; e++)
    if (r->m.ran[e] > 0)
      last_mean[e] = r->m.mean[e];
  last_move_cost = r->m.move_cost;
}

void orion__dist_push_blocks(lua_State *L, orion_dist_stats *st,
                             int nblocks) {
  int e, n = st->exec_blocks != NULL ? st->nexec : 1;
  lua_createtable(L, n, 0);
  for (e = 0; e < n; e++) {
    lua_pushinteger(L, st->exec_blocks != NULL ? st->exec_blocks[e]
                                               : nblocks);
    lua_rawseti(L, -2, e + 1);
  }
  lua_setfield(L, -2, "executor_blocks");
  lua_pushstring(L, st->exec_blocks == NULL ? "driver"
                    : st->dynamic          ? "dynamic"
                    : st->balanced         ? "balanced"
                                           : "static");
  lua_setfield(L, -2, "assign");
  orion_free(st->exec_blocks);
  st->exec_blocks = NULL;
}
