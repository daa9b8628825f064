/* Tests of analysis/analyze: plans computed from source text and bindings
 * (no Lua state), the golden corpus under t/analysis/ run through the
 * driver (plans plus serial-equivalence checks), and the user-facing
 * surface: --explain, rejection messages, unavailable sources. */
#include "t/testutil.h"

#include <dirent.h>

#include "analysis/analyze.h"
#include "util/alloc.h"

/* ---- direct analysis ------------------------------------------------------ */

typedef struct fake_bind {
  const char *name;
  orion_bind_kind kind;
  int64_t id;
  int ndims;
  int64_t d0, d1;
  int64_t ival;
} fake_bind;

typedef struct fake_env {
  const fake_bind *b;
  orion_reach reach[2];
  int nreach;
} fake_env;

static int fake_resolve(void *ud, const char *name, orion_binding *out) {
  fake_env *env = ud;
  int i;
  memset(out, 0, sizeof *out);
  /* The body's environment, and globals read through it, as
   * lua/analyse.c answers them. */
  if (strcmp(name, "_ENV") == 0) {
    out->kind = ORION_BIND_VALUE;
    out->env = 1;
    return 0;
  }
  if (strncmp(name, ORION_ENV_PREFIX, strlen(ORION_ENV_PREFIX)) == 0)
    name += strlen(ORION_ENV_PREFIX);
  for (i = 0; env->b[i].name != NULL; i++) {
    const fake_bind *f = &env->b[i];
    if (strcmp(f->name, name) != 0)
      continue;
    out->kind = f->kind;
    out->id = f->id;
    out->arr.id = f->id;
    out->arr.name = f->name;
    out->arr.ndims = f->ndims;
    out->arr.dims[0] = f->d0;
    out->arr.dims[1] = f->d1;
    out->arr.elem_size = 8;
    out->is_int = 1;
    out->ival = f->ival;
    out->fval = (double)f->ival;
    if (f->kind == ORION_BIND_BUILTIN)
      out->std = f->name;
    if (f->kind == ORION_BIND_FUNC) {
      out->reach = env->reach;
      out->nreach = env->nreach;
    }
    return 0;
  }
  return 1;
}

/* The resolver analyse() uses; a test may put another in front. */
static orion_resolve_fn test_resolver = fake_resolve;

/* Analyses `src` whose body is the function spanning lines [l0, l1] over a
 * sparse 2-D iteration array (id 1) and returns the plan text; *plan is
 * filled (free it). */
static char *analyse(const char *src, int l0, int l1, int nparams,
                     fake_env *env, int ordered, orion_plan *plan, int *rc) {
  orion_analysis_in in;
  orion_error err;
  orion_buf b;
  memset(&in, 0, sizeof in);
  in.body.chunkname = "t.lua";
  in.body.src = src;
  in.body.len = strlen(src);
  in.body.line_defined = l0;
  in.body.last_line = l1;
  in.body.nparams = nparams;
  in.iter.id = 1;
  in.iter.name = "R";
  in.iter.ndims = 2;
  in.iter.dims[0] = 100;
  in.iter.dims[1] = 50;
  in.iter.elem_size = 8;
  in.iter.sparse = 1;
  in.iter.nnz = 1000;
  in.resolve = test_resolver;
  in.ud = env;
  in.ordered = ordered;
  in.nparts = 2;
  orion_error_clear(&err);
  *rc = orion_analyze(&in, plan, &err);
  if (*rc != 0)
    return orion_strdup(err.msg);
  orion_buf_init(&b);
  orion_plan_text(plan, &b);
  orion_buf_u8(&b, 0);
  return b.data;
}

static const fake_bind mf_env[] = {
    {"W", ORION_BIND_ARRAY, 2, 2, 100, 8, 0},
    {"H", ORION_BIND_ARRAY, 3, 2, 50, 8, 0},
    {"B", ORION_BIND_ARRAY, 4, 2, 50, 1000, 0},
    {"V", ORION_BIND_ARRAY, 5, 1, 100, 0, 0},
    {"K", ORION_BIND_NUMBER, 0, 0, 0, 0, 8},
    {"off", ORION_BIND_NUMBER, 0, 0, 0, 0, 3},
    {"math", ORION_BIND_BUILTIN, 0, 0, 0, 0, 0},
    {"print", ORION_BIND_BUILTIN, 0, 0, 0, 0, 0},
    {"helper", ORION_BIND_FUNC, 0, 0, 0, 0, 0},
    {"acc", ORION_BIND_ACC, 7, 0, 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0, 0}};

static fake_env env_of(int nreach) {
  fake_env e;
  memset(&e, 0, sizeof e);
  e.b = mf_env;
  e.nreach = nreach;
  return e;
}

#define HAS(text, s) cr_expect(strstr((text), (s)) != NULL, "expected %s in:\n%s", (s), (text))
#define HASNT(text, s) cr_expect(strstr((text), (s)) == NULL, "unexpected %s in:\n%s", (s), (text))

Test(analysis, mf_body_is_2d_with_w_local_h_rotating) {
  const char *src = "local W, H = ...\n"
                    "local function sgd(u, i, r)\n"
                    "  local wu, hi = W[u], H[i]\n"
                    "  local e = r\n"
                    "  for k = 1, K do e = e - wu[k] * hi[k] end\n"
                    "  for k = 1, K do wu[k] = wu[k] + e * hi[k] end\n"
                    "  for k = 1, K do hi[k] = hi[k] + e * wu[k] end\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 2, 8, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  cr_expect_eq(p.sched, ORION_SCHED_2D);
  cr_expect_eq(p.space, 0);
  cr_expect_eq(p.time, 1);
  HAS(t, "schedule: 2d\n");
  HAS(t, "vectors: (0, NONNEG) (NONNEG, 0)\n");
  HAS(t, "array W: local");
  HAS(t, "array H: rotating");
  HAS(t, "array R: iterated");
  HAS(t, "wu[k] (read, line 5)");
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, bigger_array_on_key_two_flips_space_and_time) {
  /* B follows key 2 and is 1000 columns wide: keeping it local is cheaper
   * than rotating it, so space is key 2. */
  const char *src = "return function(u, i, r)\n"
                    "  local vu = V[u]\n"
                    "  V[u] = V[u] + r\n"
                    "  for k = 1, 1000 do B[i][k] = B[i][k] + r end\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 5, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  cr_expect_eq(p.sched, ORION_SCHED_2D, "%s", t);
  cr_expect_eq(p.space, 1, "%s", t);
  HAS(t, "array B: local");
  HAS(t, "array V: rotating");
  HAS(t, "candidate 2d space key 1 (u), time key 2 (i): feasible");
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, subscript_classes) {
  const char *src = "return function(i, j)\n"
                    "  local a = W[i + off][j - 2]\n"
                    "  local b = W[off - i][2 * j]\n"
                    "  local c = W[V[i]][5]\n"
                    "  local ii = i + 1\n"
                    "  local d = W[ii][(1 + 2) * 3]\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc, i;
  char *t = analyse(src, 1, 7, 2, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  HAS(t, "access: W[i + off][j - 2] (read, line 2) subscripts (i+3, j-2)");
  HAS(t, "subscripts (3-i, ?)");     /* off - i and 2 * j */
  HAS(t, "subscripts (?, 5)");       /* V[i] is indirect */
  HAS(t, "V[i] (read, line 4) subscripts (i)"); /* V[i] itself */
  HAS(t, "subscripts (i+1, 9)");     /* alias plus folded constant */
  for (i = 0; i < p.nacc; i++)
    cr_expect_eq(p.acc[i].mode, ACC_READ);
  cr_expect_eq(p.sched, ORION_SCHED_NONE);
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, reassigned_alias_is_not_followed) {
  const char *src = "return function(u, i, r)\n"
                    "  local wu = W[u]\n"
                    "  if r > 3 then wu = W[u + 1] end\n"
                    "  wu[1] = r\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 5, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  /* The uses through wu are unknown: the slices held in it count as read
   * and written (with their known rows), the write through it is lost to
   * the alias, so W is written at rows u and u + 1. */
  HAS(t, "held in a local");
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED, "%s", t);
  orion_free(t);
  orion_plan_free(&p);
}

/* ---- per-local facts (issue 33) ------------------------------------------ *
 *
 * Whether a local is assigned after its declaration, or used as a value,
 * is known from the first walk over the body and read back in the second.
 * The facts are keyed to the node that declares the local, so function
 * literals anywhere in the body (inside a subscript of an initialiser,
 * nested in each other) cannot make the second walk read another local's
 * facts.  X is read only, Y and Z are written. */

static const fake_bind locals_env[] = {
    {"X", ORION_BIND_ARRAY, 2, 1, 100, 0, 0},
    {"Y", ORION_BIND_ARRAY, 3, 1, 100, 0, 0},
    {"Z", ORION_BIND_ARRAY, 4, 2, 100, 8, 0},
    {"K", ORION_BIND_NUMBER, 0, 0, 0, 0, 3},
    {"math", ORION_BIND_BUILTIN, 0, 0, 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0, 0}};

/* Analyses src (the body on lines 1..last, keys i and j, value v) in
 * locals_env; the plan text is freed, *plan kept. */
static void analyse_locals(const char *src, int last, orion_plan *plan) {
  fake_env env;
  int rc;
  char *t;
  memset(&env, 0, sizeof env);
  env.b = locals_env;
  t = analyse(src, 1, last, 3, &env, 0, plan, &rc);
  cr_assert_eq(rc, 0, "%s\n%s", t, src);
  orion_free(t);
}

/* The access of array `name` with `mode` on `line`, or NULL. */
static const orion_access *access_at(const orion_plan *p, const char *name,
                                     int mode, int line) {
  int i;
  for (i = 0; i < p->nacc; i++)
    if (p->acc[i].mode == mode && p->acc[i].line == line &&
        strcmp(p->arrays[p->acc[i].array].name, name) == 0)
      return &p->acc[i];
  return NULL;
}

/* The write of Y on `line` of src is at an unknown row, and Y is held on
 * the server (old plans placed it with the blocks of key 1, where a write
 * to row i - 1 from a block's first row leaves the block). */
static void expect_y_unknown(const char *src, int last, int line) {
  orion_plan p;
  const orion_access *a;
  analyse_locals(src, last, &p);
  a = access_at(&p, "Y", ACC_WRITE, line);
  cr_assert(a != NULL, "no write of Y on line %d", line);
  cr_expect_eq(a->sub[0].kind, SUB_UNKNOWN,
               "the write of Y on line %d was followed as key %d%+lld", line,
               a->sub[0].dim + 1, (long long)a->sub[0].c);
  cr_expect_eq(p.arrays[a->array].place, PLACE_SERVER_RW,
               "Y is placed %d, not on the server",
               (int)p.arrays[a->array].place);
  orion_plan_free(&p);
}

/* A function literal in the subscript of an initialiser, whose parameter
 * is assigned: the first walk saw the literal's locals twice (once while
 * it looked for an alias), the second once, so `u` read the facts of `t`
 * and the write Y[u] was taken for Y[i] although u = i - 1. */
Test(analysis, literal_in_initialiser_subscript_keeps_reassigned_local) {
  expect_y_unknown("return function(i, j, v)\n"
                   "  local t = X[(function(x) x = x + 1 return x end)(j)]\n"
                   "  local u = i\n"
                   "  u = u - 1\n"
                   "  Y[u] = t\n"
                   "end\n",
                   6, 5);
}

/* Two locals declared by one statement after a function literal in the
 * first initialiser: the second local's facts are its own. */
Test(analysis, literal_in_first_initialiser_keeps_second_local_facts) {
  expect_y_unknown("return function(i, j, v)\n"
                   "  local t, u = X[(function(x) x = x + 1 local y = x "
                   "return y end)(j)], i\n"
                   "  u = u + 1\n"
                   "  Y[u] = t\n"
                   "end\n",
                   5, 4);
}

/* The closure `g` is passed on, so it may run in another iteration and
 * the key it captured is not that iteration's: Y[i] inside it is unknown.
 * Whether g is used as a value is a fact of g's declaration; counted by
 * creation order, the second walk read the facts of the literal's
 * parameter `a` instead (the literal in the first initialiser declares x
 * before it). */
Test(analysis, closure_passed_on_is_judged_by_its_own_facts) {
  expect_y_unknown("return function(i, j, v)\n"
                   "  local f, g = (function(x) return x end)(1), "
                   "function(a) Y[i] = 1 end\n"
                   "  stash(g)\n"
                   "end\n",
                   4, 2);
}

/* The property test generates bodies from a fixed seed and analyses each
 * one twice: with every opaque call written as a call of a helper the
 * body declares first, and with each such call written as a function
 * literal called in place (which declares and reassigns locals of its
 * own).  The two plans must agree access by access, and a write through a
 * local the body reassigns must never be followed as a loop key. */

/* A small deterministic generator (xorshift64*), so every run checks the
 * same bodies and a failure names one that can be rerun. */
typedef struct gen {
  uint64_t s;
  orion_buf ref, lit; /* the two texts being written */
  int nlocals;
  int reassigned[64]; /* per local aN: reassigned right after */
  int line;
  int nwrites;
  int wline[64], wlocal[64]; /* writes Y[aN]: line and local */
} gen;

static unsigned rnd(gen *g, unsigned n) {
  g->s ^= g->s >> 12;
  g->s ^= g->s << 25;
  g->s ^= g->s >> 27;
  return (unsigned)((g->s * 2685821657736338717ULL) >> 33) % n;
}

static void both(gen *g, const char *s) {
  orion_buf_append(&g->ref, s, strlen(s));
  orion_buf_append(&g->lit, s, strlen(s));
}

static void gen_expr(gen *g, int depth);

/* An opaque call of e: h(e) in the reference text, a function literal
 * called in place in the other.  The literals declare and reassign locals
 * of their own and nest further literals, so that they shift the number
 * of locals created before whatever follows them. */
static void gen_hole(gen *g, int depth) {
  static const char *const open[] = {
      "(function(p) p = p + 1 return p end)(",
      "(function(p, q) local r = p r = r * 2 return r end)(",
      "(function(...) local a, b = ... a = b return a end)(",
      "(function(p) local g = function(s) s = s - 1 return s end "
      "return g(p) end)(",
      "(function(p) local t = {function(w) w = 0 return w end} return p "
      "end)("};
  const char *o = open[rnd(g, sizeof open / sizeof open[0])];
  orion_buf_append(&g->ref, "h(", 2);
  orion_buf_append(&g->lit, o, strlen(o));
  gen_expr(g, depth + 1);
  both(g, ")");
}

static void gen_expr(gen *g, int depth) {
  char b[32];
  unsigned k = depth > 3 ? rnd(g, 4) : rnd(g, 9);
  switch (k) {
  case 0:
    both(g, rnd(g, 2) ? "i" : "j");
    break;
  case 1:
    if (g->nlocals > 0) {
      snprintf(b, sizeof b, "a%u", rnd(g, (unsigned)g->nlocals));
      both(g, b);
    } else {
      both(g, "v");
    }
    break;
  case 2:
    snprintf(b, sizeof b, "%u", rnd(g, 5));
    both(g, b);
    break;
  case 3:
    both(g, "K");
    break;
  case 4:
  case 5:
    gen_hole(g, depth);
    break;
  case 6:
    gen_expr(g, depth + 1);
    snprintf(b, sizeof b, rnd(g, 2) ? " + %u" : " - %u", rnd(g, 3));
    both(g, b);
    break;
  case 7:
    both(g, "X[");
    gen_expr(g, depth + 1);
    both(g, "]");
    break;
  default:
    both(g, "math.abs(");
    gen_expr(g, depth + 1);
    both(g, ")");
    break;
  }
}

/* One statement on one line. */
static void gen_stat(gen *g) {
  char b[64];
  unsigned k = rnd(g, 7);
  both(g, "  ");
  if (k <= 2 && g->nlocals < 60) {
    int n = g->nlocals;
    snprintf(b, sizeof b, "local a%d = ", n);
    both(g, b);
    /* Often a key or a key plus a constant, so that the local is an
     * alias the analysis follows unless it is reassigned. */
    if (rnd(g, 2)) {
      snprintf(b, sizeof b, "%s + %u", rnd(g, 2) ? "i" : "j", rnd(g, 3));
      both(g, b);
    } else {
      gen_expr(g, 0);
    }
    g->nlocals++;
    g->reassigned[n] = rnd(g, 3) == 0;
    if (g->reassigned[n]) {
      /* On the same line: a reassignment after the declaration. */
      snprintf(b, sizeof b, "; a%d = a%d - 1", n, n);
      both(g, b);
    }
  } else if (k == 3 && g->nlocals > 0 && g->nwrites < 64) {
    /* A write through a local, sometimes under a condition. */
    int n = (int)rnd(g, (unsigned)g->nlocals), cond = rnd(g, 3) == 0;
    if (cond) {
      both(g, "if ");
      gen_expr(g, 1);
      both(g, " > 1 then ");
    }
    snprintf(b, sizeof b, "Y[a%d] = ", n);
    both(g, b);
    gen_expr(g, 0);
    if (cond)
      both(g, " end");
    g->wline[g->nwrites] = g->line;
    g->wlocal[g->nwrites++] = n;
  } else if (k == 4) {
    both(g, "Z[");
    gen_expr(g, 1);
    both(g, "][1] = ");
    gen_expr(g, 0);
  } else if (k == 5) {
    /* Loop bounds and a body of its own. */
    both(g, "for q = ");
    gen_expr(g, 1);
    both(g, ", ");
    gen_expr(g, 1);
    both(g, " do Z[q][2] = ");
    gen_expr(g, 1);
    both(g, " end");
  } else {
    both(g, "local _ = X[");
    gen_expr(g, 0);
    both(g, "] + X[");
    gen_expr(g, 0);
    both(g, "]");
  }
  both(g, "\n");
  g->line++;
}

/* Two plans agree: the same schedule, the same placements and, access by
 * access, the same array, mode, line and subscripts (the texts differ
 * where a literal replaced h). */
static int same_plan(const orion_plan *x, const orion_plan *y, char *why,
                     size_t size) {
  int i, d;
  if (x->sched != y->sched) {
    snprintf(why, size, "schedule %d vs %d", (int)x->sched, (int)y->sched);
    return 0;
  }
  if (x->nacc != y->nacc) {
    snprintf(why, size, "%d accesses vs %d", x->nacc, y->nacc);
    return 0;
  }
  if (x->narrays != y->narrays) {
    snprintf(why, size, "%d arrays vs %d", x->narrays, y->narrays);
    return 0;
  }
  for (i = 0; i < x->narrays; i++)
    if (strcmp(x->arrays[i].name, y->arrays[i].name) != 0 ||
        x->arrays[i].place != y->arrays[i].place ||
        x->arrays[i].place_dim != y->arrays[i].place_dim) {
      snprintf(why, size, "array %s is placed %d (dim %d) vs %s %d (dim %d)",
               x->arrays[i].name, (int)x->arrays[i].place,
               x->arrays[i].place_dim, y->arrays[i].name,
               (int)y->arrays[i].place, y->arrays[i].place_dim);
      return 0;
    }
  for (i = 0; i < x->nacc; i++) {
    const orion_access *a = &x->acc[i], *b = &y->acc[i];
    int same = a->mode == b->mode && a->line == b->line &&
               a->nsub == b->nsub && a->buffered == b->buffered &&
               strcmp(x->arrays[a->array].name, y->arrays[b->array].name) == 0;
    for (d = 0; same && d < a->nsub; d++)
      same = a->sub[d].kind == b->sub[d].kind &&
             a->sub[d].dim == b->sub[d].dim && a->sub[d].c == b->sub[d].c;
    if (!same) {
      snprintf(why, size,
               "access %d differs: %s (line %d, mode %d, first subscript "
               "kind %d dim %d) vs %s (line %d, mode %d, kind %d dim %d)",
               i, a->text, a->line, a->mode, (int)a->sub[0].kind,
               a->sub[0].dim, b->text, b->line, b->mode, (int)b->sub[0].kind,
               b->sub[0].dim);
      return 0;
    }
  }
  return 1;
}

Test(analysis, nested_function_literals_never_change_the_plan) {
  gen g;
  int body, checked_writes = 0, differing = 0;
  memset(&g, 0, sizeof g);
  g.s = 0x33c1a55ULL;
  for (body = 0; body < 4000; body++) {
    orion_plan p0, p1;
    char why[400];
    int i, nstat = 3 + (int)rnd(&g, 8), last;
    orion_buf_init(&g.ref);
    orion_buf_init(&g.lit);
    g.nlocals = 0;
    g.nwrites = 0;
    both(&g, "return function(i, j, v)\n");
    /* The helper the reference text calls (declared in both, so that
     * the lines agree). */
    both(&g, "  local function h(p) return p end\n");
    g.line = 3;
    for (i = 0; i < nstat; i++)
      gen_stat(&g);
    if (rnd(&g, 2)) {
      /* The returned value replaces the element. */
      both(&g, "  return ");
      gen_expr(&g, 0);
      both(&g, "\n");
      g.line++;
    }
    both(&g, "end\n");
    orion_buf_u8(&g.ref, 0);
    orion_buf_u8(&g.lit, 0);
    cr_assert(!g.ref.oom && !g.lit.oom);
    last = g.line;
    analyse_locals((const char *)g.ref.data, last, &p0);
    analyse_locals((const char *)g.lit.data, last, &p1);
    if (!same_plan(&p0, &p1, why, sizeof why)) {
      cr_expect_fail("body %d: the literals changed the plan: %s\n"
                     "reference:\n%s\nwith literals:\n%s",
                     body, why, g.ref.data, g.lit.data);
      differing++;
    }
    /* A write through a reassigned local is never at a known key. */
    for (i = 0; i < g.nwrites; i++) {
      const orion_access *a =
          access_at(&p1, "Y", ACC_WRITE, g.wline[i]);
      cr_assert(a != NULL, "body %d: no write of Y on line %d", body,
                g.wline[i]);
      if (g.reassigned[g.wlocal[i]]) {
        checked_writes++;
        cr_expect_eq(a->sub[0].kind, SUB_UNKNOWN,
                     "body %d: Y[a%d] on line %d was followed although a%d "
                     "is reassigned:\n%s",
                     body, g.wlocal[i], g.wline[i], g.wlocal[i], g.lit.data);
      }
    }
    orion_plan_free(&p0);
    orion_plan_free(&p1);
    orion_buf_free(&g.ref);
    orion_buf_free(&g.lit);
    if (differing > 3)
      break; /* enough to read */
  }
  /* The generator must really exercise the rule it checks. */
  cr_expect_gt(checked_writes, 100, "only %d writes through reassigned locals",
               checked_writes);
}

Test(analysis, helper_reaching_an_array_is_unknown_read_write) {
  const char *src = "return function(u, i, r)\n"
                    "  helper(r)\n"
                    "end\n";
  fake_env env = env_of(1);
  orion_plan p;
  int rc;
  char *t;
  env.reach[0].arr.id = 2;
  env.reach[0].arr.name = "W";
  env.reach[0].arr.ndims = 2;
  env.reach[0].arr.dims[0] = 100;
  env.reach[0].arr.dims[1] = 8;
  env.reach[0].arr.elem_size = 8;
  t = analyse(src, 1, 3, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  HAS(t, "reached by helper helper");
  HAS(t, "vectors: (NONNEG, ANY)");
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED);
  /* What the helper does to W is unknown: not offered a buffer, which
   * would compute something else unless it only adds (issue 33). */
  HAS(t, "hint: helper (line 2) may read and write elements of W that "
         "other iterations touch, at a distance the analysis cannot know "
         "(vector (NONNEG, ANY))");
  HASNT(t, "orion.buffer(W");
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, pure_builtin_reads_only_unknown_call_reads_and_writes) {
  const char *src = "return function(u, i, r)\n"
                    "  print(W[u])\n"
                    "  acc:add(math.max(W[u][1], H[i][2]))\n"
                    "end\n";
  const char *src2 = "return function(u, i, r)\n"
                     "  local f = function(s) return s end\n"
                     "  f(W[u])\n"
                     "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 4, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  cr_expect_eq(p.sched, ORION_SCHED_NONE, "%s", t);
  HAS(t, "W[u] (read, line 2, passed to print)");
  orion_free(t);
  orion_plan_free(&p);
  t = analyse(src2, 1, 4, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  HAS(t, "W[u] (write, line 3, passed to f)");
  cr_expect_eq(p.sched, ORION_SCHED_1D, "%s", t);
  cr_expect_eq(p.space, 0);
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, write_write_pairs_only_when_ordered) {
  const char *src = "return function(u, i, r)\n"
                    "  V[1] = r\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 3, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  cr_expect_eq(p.nvec, 0);
  cr_expect_eq(p.sched, ORION_SCHED_NONE);
  HAS(t, "array V: server (read-write)");
  orion_free(t);
  orion_plan_free(&p);
  t = analyse(src, 1, 3, 3, &env, 1, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  HAS(t, "vectors: (NONNEG, ANY)");
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED);
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, different_constants_never_conflict) {
  const char *src = "return function(u, i, r)\n"
                    "  V[1] = V[2] + r\n"
                    "end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 3, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  cr_expect_eq(p.nvec, 0, "%s", t);
  orion_free(t);
  orion_plan_free(&p);
}

Test(analysis, body_found_among_functions_on_one_line) {
  const char *src = "local f, g = function(a) return a end, function(u, i, r) W[u][1] = r end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 1, 3, &env, 0, &p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  HAS(t, "W[u][1] (write, line 1)");
  orion_free(t);
  orion_plan_free(&p);
}

/* Without the places lua/bodyid.c finds (no Lua state here), two
 * functions sharing the body's lines and parameters are a tie, refused
 * with both named; the first one in the tree was analysed before. */
Test(analysis, body_tie_by_lines_is_refused_naming_both) {
  const char *src = "local f, g = function(u, i, r) W[u][1] = r end, "
                    "function(u, i, r) H[u][1] = r end\n";
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse(src, 1, 1, 3, &env, 0, &p, &rc);
  cr_expect_eq(rc, ORION_EINVAL, "%s", t);
  HAS(t, "t.lua:1: the body cannot be told apart from another function: "
         "t.lua:1:14 and t.lua:1:49 share its lines and parameters");
  orion_free(t);
}

Test(analysis, syntax_error_and_missing_body_are_errors) {
  fake_env env = env_of(0);
  orion_plan p;
  int rc;
  char *t = analyse("return function(u, i)\n  x = = 1\nend\n", 1, 3, 2, &env,
                    0, &p, &rc);
  cr_expect_eq(rc, ORION_EPARSE);
  HAS(t, "t.lua:2:");
  orion_free(t);
  t = analyse("return function(u, i) end\n", 5, 9, 2, &env, 0, &p, &rc);
  cr_expect_neq(rc, 0);
  HAS(t, "cannot find the body's source (lines 5-9)");
  orion_free(t);
}

/* ---- the golden corpus ----------------------------------------------------- */

static int count_checks(const char *path) {
  int n = tu_count_line_prefix(path, "G.check");
  cr_assert(n >= 0, "cannot open %s", path);
  return n;
}

static int count_ok(const char *out) {
  return tu_count_substr(out, "golden ok: ");
}

Test(analysis, golden_corpus, .timeout = 600) {
  char *dir = tu_src("t/analysis");
  DIR *d = opendir(dir);
  struct dirent *e;
  int files = 0, checks = 0;
  cr_assert(d != NULL, "cannot open %s", dir);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    char path[2048];
    char *argv[3];
    tu_run r;
    int want;
    if (n < 5 || strcmp(e->d_name + n - 4, ".lua") != 0 ||
        strcmp(e->d_name, "golden.lua") == 0 ||
        strncmp(e->d_name, "pending_", 8) == 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    want = count_checks(path);
    argv[0] = (char *)tu_driver();
    argv[1] = path;
    argv[2] = NULL;
    r = tu_run_argv(argv, 120);
    cr_expect_eq(r.status, 0, "%s failed (exit %d):\n%s\n%s", e->d_name,
                 r.status, r.out, r.err);
    /* A failing check raises (exit 1); a check inside a loop runs more
     * than once, so at least one pass per G.check line. */
    cr_expect_geq(count_ok(r.out), want, "%s: %d checks passed of %d:\n%s",
                  e->d_name, count_ok(r.out), want, r.out);
    checks += count_ok(r.out);
    files++;
    tu_run_free(&r);
  }
  closedir(d);
  free(dir);
  cr_log_info("golden corpus: %d bodies in %d files", checks, files);
  cr_expect_geq(checks, 40, "only %d golden bodies", checks);
}

/* ---- which function is the body -------------------------------------------- */

/* Runs the driver on a temporary script: opts (NULL-terminated, at most 6)
 * before the script, then one script argument (or none). */
static tu_run drive_with(const char *text, const char *const *opts,
                         const char *arg) {
  char *path = tu_write_temp(".lua", text);
  char *argv[10];
  tu_run r;
  int i = 0, k;
  argv[i++] = (char *)tu_driver();
  for (k = 0; opts[k] != NULL && k < 6; k++)
    argv[i++] = (char *)opts[k];
  argv[i++] = path;
  if (arg != NULL)
    argv[i++] = (char *)arg;
  argv[i] = NULL;
  r = tu_run_argv(argv, 60);
  unlink(path);
  free(path);
  return r;
}

/* The script run serially (no analysis, the interpreter) and then with the
 * C tier on 0 and 2 executors: every run must print `want`, and the
 * compiled runs' --explain must show the tier was the C one. */
static void expect_tiers_agree(const char *script, const char *want,
                               char **explain) {
  static const char *const no[] = {NULL};
  static const char *const ex0[] = {"--explain", "--executors", "0", NULL};
  static const char *const ex2[] = {"--explain", "--executors", "2", NULL};
  tu_run ser = drive_with(script, no, "serial");
  tu_run c0 = drive_with(script, ex0, "c");
  tu_run c2 = drive_with(script, ex2, "c");
  cr_expect_eq(ser.status, 0, "serial: %s", ser.err);
  cr_expect_str_eq(ser.out, want, "serial run");
  cr_expect_eq(c0.status, 0, "tier c, 0 executors: %s", c0.err);
  cr_expect_eq(c2.status, 0, "tier c, 2 executors: %s", c2.err);
  HAS(c0.out, want);
  HAS(c2.out, want);
  HAS(c2.out, "tier: c (compiled, exact;");
  *explain = strdup(c2.out);
  tu_run_free(&ser);
  tu_run_free(&c0);
  tu_run_free(&c2);
}

/* The plan printed for the n-th loop (from 1) of --explain's output. */
static char *nth_plan(const char *out, int n) {
  const char *p = out, *e;
  int k;
  for (k = 0; k < n && p != NULL; k++) {
    p = strstr(p, "== parallel_for at ");
    if (p != NULL && k + 1 < n)
      p++;
  }
  cr_assert_not_null(p, "no plan %d in:\n%s", n, out);
  e = strstr(p + 1, "== parallel_for at ");
  return strndup(p, e != NULL ? (size_t)(e - p) : strlen(p));
}

/* Two bodies on one line with the same parameters: each loop is analysed
 * and compiled from its own text.  The second body was taken for the
 * first, so its plan missed B and the C tier ran the first body's code. */
Test(analysis, two_bodies_on_one_line_are_each_analysed_and_compiled,
     .timeout = 120) {
  static const char script[] =
      "local orion = require 'orion'\n"
      "local A, B = orion.zeros{8}, orion.zeros{8}\n"
      "for i = 1, 8 do A:set(i, i); B:set(i, 100 * i) end\n"
      "local mode = arg[1]\n"
      "local f, g = function(i, v) A[i] = v + 1 end, function(i, v) A[i] = v * 10 + B[i] end\n"
      "local o = mode == 'serial' and {schedule = 'serial'} or {tier = mode}\n"
      "orion.parallel_for(A, g, o)\n"
      "orion.parallel_for(A, f, o)\n"
      "local s = {}\n"
      "for i = 1, 8 do s[#s + 1] = string.format('%g', A:get(i)) end\n"
      "print(table.concat(s, ' '))\n";
  char *out, *p1, *p2;
  /* A[i] = 10 i + 100 i, then one more. */
  expect_tiers_agree(script, "111 221 331 441 551 661 771 881\n", &out);
  p1 = nth_plan(out, 1);
  p2 = nth_plan(out, 2);
  HAS(p1, "access: B[i] (read, line 5) subscripts (i)");
  HAS(p1, "array B: local");
  HASNT(p2, "B[i]");
  HAS(p2, "access: A[i] (write, line 5) subscripts (i)");
  free(p1);
  free(p2);
  free(out);
}

/* A factory whose returned body starts on the factory's line, with as
 * many parameters and the same last line: the factory was analysed (keys
 * "W" and "H") and the C tier refused its function definition. */
Test(analysis, factory_body_on_the_factorys_line_is_the_body,
     .timeout = 120) {
  static const char script[] =
      "local orion = require 'orion'\n"
      "local A, B = orion.zeros{4, 3}, orion.zeros{4, 3}\n"
      "for i = 1, 4 do for j = 1, 3 do A:set(i, j, 10 * i + j) end end\n"
      "local function make(W, H, unused) return function(i, j, v)\n"
      "  W[i][j] = v + H[i][j]\n"
      "end end\n"
      "local mode = arg[1]\n"
      "orion.parallel_for(A, make(B, A, 0), mode == 'serial' and "
      "{schedule = 'serial'} or {tier = mode})\n"
      "local s = {}\n"
      "for i = 1, 4 do for j = 1, 3 do s[#s + 1] = B:get(i, j) end end\n"
      "print(table.concat(s, ' '))\n";
  char *out;
  expect_tiers_agree(script,
                     "22.0 24.0 26.0 42.0 44.0 46.0 62.0 64.0 66.0 82.0 "
                     "84.0 86.0\n",
                     &out);
  HAS(out, "space: key 1 (i)\n");
  HAS(out, "access: W[i][j] (write, line 5) subscripts (i, j)");
  HAS(out, "access: H[i][j] (read, line 5) subscripts (i, j)");
  HASNT(out, "(W)");
  free(out);
}

/* Two functions that compile to the same code on one line: which one runs
 * cannot be known, so the loop is refused with both named. */
/* Runs a script whose parallel_for (on line 4, after the `orion` and `A`
 * lines) must be refused; free the result. */
static tu_run refused(const char *line3) {
  static const char *const no[] = {NULL};
  char script[512];
  tu_run r;
  snprintf(script, sizeof script,
           "local orion = require 'orion'\n"
           "local A = orion.zeros{4}\n"
           "%s\n"
           "orion.parallel_for(A, body)\n",
           line3);
  r = drive_with(script, no, NULL);
  cr_expect_eq(r.status, 1, "%s", r.err);
  return r;
}

Test(analysis, bodies_that_compile_alike_on_one_line_are_refused) {
  tu_run r = refused("local f, body = function(i) A[i] = i end, "
                     "function(i) A[i] = i end");
  HAS(r.err, ":4: parallel_for: cannot analyse the body: ");
  HAS(r.err, ":3: the body cannot be told apart from another function: ");
  HAS(r.err, ":3:17 and ");
  HAS(r.err, ":3:43 compile to the same code, so the analysis cannot know "
             "which one runs; give the body a line of its own (pass "
             "schedule = \"serial\" to run without analysis)");
  tu_run_free(&r);
}

/* A body file edited and loaded again: the compiled chunk kept from the
 * first loop (lua/bodyid.c) must not serve the second, whose body it does
 * not hold. */
Test(analysis, body_file_edited_between_loops_is_compiled_again) {
  static const char *const no[] = {NULL};
  tu_run r = drive_with(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{4}\n"
      "local path = os.tmpname()\n"
      "local function write(text)\n"
      "  local f = assert(io.open(path, 'w'))\n"
      "  f:write(text)\n"
      "  f:close()\n"
      "end\n"
      "write('local A = ... return function(i) A[i] = i end\\n')\n"
      "orion.parallel_for(A, loadfile(path)(A), {tier = 'c'})\n"
      "print(A:get(1), A:get(4))\n"
      "write('local A = ... return function(i) A[i] = 10 * i end\\n')\n"
      "orion.parallel_for(A, loadfile(path)(A), {tier = 'c'})\n"
      "os.remove(path)\n"
      "print(A:get(1), A:get(4))\n",
      no, NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "1.0\t4.0\n10.0\t40.0\n");
  tu_run_free(&r);
}

/* Lua keeps only the name of a chunk loaded from a string under a name:
 * the body's text is not at hand, and the refusal says so (it was a bare
 * syntax error in the name, read as Lua). */
Test(analysis, body_of_a_named_string_chunk_is_refused_saying_why) {
  tu_run r = refused("local body = load('local A = ... return "
                     "function(i) A[i] = i end', 'mybody')(A)");
  HAS(r.err, ":4: parallel_for: cannot analyse the body: [string "
             "\"mybody\"]:1: cannot find the body's source (lines 1-1): "
             "the chunk's source does not compile (");
  HAS(r.err, "); a chunk loaded from a string under a chunk name keeps "
             "only the name, not the text (load it without a name)");
  tu_run_free(&r);
}

/* ---- the driver surface ---------------------------------------------------- */

static tu_run drive_script(const char *text, const char *opt) {
  char *path = tu_write_temp(".lua", text);
  char *argv[4];
  tu_run r;
  int i = 0;
  argv[i++] = (char *)tu_driver();
  if (opt != NULL)
    argv[i++] = (char *)opt;
  argv[i++] = path;
  argv[i] = NULL;
  r = tu_run_argv(argv, 60);
  unlink(path);
  free(path);
  return r;
}

/* The rows of an app's table: lines that start with "    N " (N = 1..9);
 * the last field of each is written to last[], up to max rows. */
static int table_rows(const char *out, double *last, int max) {
  int n = 0;
  const char *l = out;
  while (l != NULL && *l != '\0' && n < max) {
    const char *nl = strchr(l, '\n');
    if (strncmp(l, "    ", 4) == 0 && l[4] >= '1' && l[4] <= '9' &&
        l[5] == ' ') {
      const char *e = nl != NULL ? nl : l + strlen(l), *f = e;
      while (f > l && f[-1] != ' ')
        f--;
      last[n++] = strtod(f, NULL);
    }
    l = nl != NULL ? nl + 1 : NULL;
  }
  return n;
}

Test(analysis, explain_runs_the_mf_app_for_real_and_prints_each_loop_once,
     .timeout = 120) {
  char *app = tu_src("apps/mf/mf.lua");
  /* In the driver's process: what is tested is --explain, not the
   * cluster (the user script below runs on executors). */
  char *argv[] = {(char *)tu_driver(), "--executors", "0", "--explain", app,
                  "--epochs", "3", "--k", "4", NULL};
  tu_run r = tu_run_argv(argv, 120);
  const char *first, *second;
  double rmse[8];
  int i;
  cr_expect_eq(r.status, 0, "%s", r.err);
  /* The training loop, then the test pass, which asks for the same 2-D
   * schedule (H rotates on from where training left it). */
  first = strstr(r.out, "schedule: 2d\n");
  second = first != NULL ? strstr(first + 1, "schedule: 2d\n") : NULL;
  cr_expect(first != NULL && second != NULL, "%s", r.out);
  HAS(r.out, "array W: local");
  HAS(r.out, "array H: rotating");
  HAS(r.out, "array train: iterated");
  HAS(r.out, "array test: iterated");
  HAS(r.out, "vectors: (0, NONNEG) (NONNEG, 0)");
  /* Three epochs, two loops: each call site is explained once. */
  cr_expect(second == NULL || strstr(second + 1, "== parallel_for") == NULL,
            "%s", r.out);
  /* ... and the loops ran: real RMSEs, not rows of 0.0000. */
  cr_expect_eq(table_rows(r.out, rmse, 8), 3, "%s", r.out);
  for (i = 0; i < 3; i++)
    cr_expect(rmse[i] > 0.1 && rmse[i] < 10, "test RMSE %g in:\n%s", rmse[i],
              r.out);
  HASNT(r.out, " 0.0000");
  tu_run_free(&r);
  free(app);
}

Test(analysis, explain_runs_the_lda_app_for_real, .timeout = 120) {
  char *app = tu_src("apps/lda/lda.lua");
  char *argv[] = {(char *)tu_driver(), "--executors", "0", "--explain", app,
                  "--iters", "2", "--k", "5", "--ll-every", "1", NULL};
  tu_run r = tu_run_argv(argv, 120);
  double ll[8];
  int i;
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "schedule: 2d\n");
  /* A log-likelihood per token is negative; each topic has words. */
  cr_expect_eq(table_rows(r.out, ll, 8), 2, "%s", r.out);
  for (i = 0; i < 2; i++)
    cr_expect(ll[i] < -1, "ll/token %g in:\n%s", ll[i], r.out);
  HASNT(r.out, "topic   1: \n");
  cr_expect(strstr(r.out, "topic   1: ") != NULL &&
                strstr(r.out, "topic   5: ") != NULL &&
                strstr(r.out, "topic   6: ") == NULL,
            "%s", r.out);
  tu_run_free(&r);
  free(app);
}

Test(analysis, rejected_recurrence_names_accesses_lines_and_no_buffer) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{10}\n"
      "orion.parallel_for(A, function(i)\n"
      "  if i > 1 then\n"
      "    A[i] = A[i - 1] + 1\n"
      "  end\n"
      "end, {ordered = true})\n",
      NULL);
  cr_expect_eq(r.status, 1);
  HAS(r.err, ":3: parallel_for: the loop cannot run in parallel");
  HAS(r.err, "vector (1) on A");
  HAS(r.err, "A[i - 1] (read, line 5)");
  HAS(r.err, "A[i] (write, line 5)");
  /* A prefix sum is a true dependence: a buffer would compute something
   * else, so it is not suggested. */
  HAS(r.err, "hint: A[i - 1] (line 5) reads what another iteration writes "
             "to A[i] (line 5) at distance (1): a true loop-carried "
             "dependence");
  HASNT(r.err, "orion.buffer(A, {apply = \"add\"})");
  HAS(r.err, "schedule = \"serial\"");
  tu_run_free(&r);
}

Test(analysis, method_call_in_a_body_is_rejected_naming_the_call) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{10}\n"
      "local B = orion.zeros{10}\n"
      "orion.parallel_for(B, function(i)\n"
      "  B[i] = A:get(i) + 1\n"
      "end)\n",
      NULL);
  cr_expect_eq(r.status, 1);
  HAS(r.err, ":4: parallel_for: the loop cannot run in parallel:\n"
             "  A:get(i) at line 5: a method call on DistArray 'A'; DistArray "
             "methods run on the driver only, a parallel_for body cannot call "
             "them: write A[i] instead\n");
  HASNT(r.err, "vector");
  HASNT(r.err, "orion.buffer");
  tu_run_free(&r);
}

Test(analysis, serial_schedule_runs_a_rejected_loop_in_key_order) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{6}\n"
      "A:set(1, 1)\n"
      "local st = orion.parallel_for(A, function(i)\n"
      "  if i > 1 then A[i] = A[i - 1] * 2 + 1 end\n"
      "end, {schedule = 'serial'})\n"
      "print(st.schedule, table.concat(A:to_table(), ' '))\n",
      NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "serial\t1.0 3.0 7.0 15.0 31.0 63.0");
  tu_run_free(&r);
}

Test(analysis, body_without_source_is_refused) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{4}\n"
      "local f = load(string.dump(function(i) end, true))\n"
      "orion.parallel_for(A, f)\n",
      NULL);
  cr_expect_eq(r.status, 1);
  HAS(r.err, "source is not available");
  HAS(r.err, ":4:");
  tu_run_free(&r);
}

Test(analysis, forced_infeasible_schedule_is_rejected_with_the_vector) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{4, 4}\n"
      "orion.parallel_for(A, function(i, j)\n"
      "  if j > 1 then A[i][j] = A[i][j - 1] end\n"
      "end, {schedule = 'none'})\n",
      NULL);
  cr_expect_eq(r.status, 1);
  HAS(r.err, "schedule \"none\" was forced and is infeasible");
  tu_run_free(&r);
  r = drive_script("local orion = require 'orion'\n"
                   "local A = orion.zeros{4, 4}\n"
                   "orion.parallel_for(A, function(i, j) end, "
                   "{schedule = 'diagonal'})\n",
                   NULL);
  cr_expect_eq(r.status, 1);
  HAS(r.err, "unknown schedule \"diagonal\"");
  tu_run_free(&r);
}

Test(analysis, orion_explain_returns_the_plan_and_runs_nothing) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local A = orion.zeros{4, 3}\n"
      "local t = orion.explain(A, function(i, j) A[i][j] = 7 end)\n"
      "io.write(t)\n"
      "print('sum', A:get(1, 1) + A:get(4, 3))\n",
      NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strncmp(r.out, "schedule: none\n", 15) == 0, "%s", r.out);
  HAS(r.out, "array A: iterated");
  HAS(r.out, "sum\t0.0");
  tu_run_free(&r);
}

/* A script that uses what its loops return and compute. */
static const char explain_script[] =
    "local orion = require 'orion'\n"
    "local A = orion.zeros{4, 3}\n"
    "print('before')\n"
    "local st = orion.parallel_for(A, function(i, j) A[i][j] = 7 end)\n"
    "print('after', st.schedule, st.blocks > 0, st.elements, A:get(1, 1))\n"
    "local acc = orion.accumulator('sum')\n"
    "orion.parallel_for(A, function(i, j, v) acc:add(v) end)\n"
    "print('sum', acc:get())\n"
    "st = orion.parallel_for(A, function(i, j) A[i][j] = i end, "
    "{schedule = 'serial'})\n"
    "print('serial', st.schedule, A:get(4, 3))\n";

Test(analysis, explain_runs_every_loop_and_the_script_gets_real_results,
     .timeout = 60) {
  tu_run r = drive_script(explain_script, "--explain");
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "== parallel_for at ");
  HAS(r.out, "after\tnone\ttrue\t12\t7.0\n");
  HAS(r.out, "sum\t84.0\n");
  HAS(r.out, "(schedule = \"serial\"): not analysed");
  HAS(r.out, "serial\tserial\t4.0\n");
  HASNT(r.err, "explain-only");
  tu_run_free(&r);
}

Test(analysis, explain_only_stops_the_script_before_the_loop_runs,
     .timeout = 60) {
  const char *stop1 = "orion: --explain-only: stopped after explaining 1 "
                      "loop; no results computed\n";
  tu_run r = drive_script(explain_script, "--explain-only");
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "before\n== parallel_for at ");
  HAS(r.out, "schedule: none\n");
  HASNT(r.out, "after");
  HAS(r.err, stop1);
  HASNT(r.err, "orion-driver:");
  tu_run_free(&r);
  /* Two call sites: the first runs, the second stops the script. */
  r = drive_script(explain_script, "--explain-only=2");
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "after\tnone\ttrue\t12\t7.0\n");
  HASNT(r.out, "sum");
  HAS(r.err, "stopped after explaining 2 loops; no results computed\n");
  tu_run_free(&r);
  /* A script that catches the stop gets it again from its next loop, and
   * a real error after it is still an error. */
  r = drive_script("local orion = require 'orion'\n"
                   "local A = orion.zeros{4}\n"
                   "local ok, e = pcall(orion.parallel_for, A, "
                   "function(i) end)\n"
                   "print(ok, tostring(e))\n"
                   "ok = pcall(orion.parallel_for, A, function(i) end)\n"
                   "print('again', ok)\n",
                   "--explain-only");
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "false\torion: --explain-only: stopped after explaining 1 loop");
  HAS(r.out, "again\tfalse\n");
  HAS(r.err, stop1);
  tu_run_free(&r);
  r = drive_script("local orion = require 'orion'\n"
                   "local A = orion.zeros{4}\n"
                   "pcall(orion.parallel_for, A, function(i) end)\n"
                   "error('boom')\n",
                   "--explain-only");
  cr_expect_eq(r.status, 1, "%s", r.err);
  HAS(r.err, "boom");
  tu_run_free(&r);
  r = drive_script("print('x')\n", "--explain-only=0");
  cr_expect_eq(r.status, 2, "%s", r.err);
  HAS(r.err, "--explain-only=N needs a number of loops");
  tu_run_free(&r);
}

Test(analysis, buffered_totals_run_two_dimensional) {
  tu_run r = drive_script(
      "local orion = require 'orion'\n"
      "local T = orion.array{4, 4, type = 'i64'}\n"
      "local tot = orion.zeros{3, type = 'i64'}\n"
      "local B = orion.buffer(tot, {apply = 'add'})\n"
      "local C = orion.zeros{4, 3, type = 'i64'}\n"
      "local D = orion.zeros{4, 3, type = 'i64'}\n"
      "local st = orion.parallel_for(T, function(d, w)\n"
      "  local t = (d + w) % 3 + 1\n"
      "  C[d][t] = C[d][t] + 1\n"
      "  D[w][t] = D[w][t] + 1\n"
      "  B[t] = B[t] + 1\n"
      "end)\n"
      "print(st.schedule, tot:get(1) + tot:get(2) + tot:get(3))\n",
      NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "2d\t16");
  tu_run_free(&r);
}

/* ---- issue 15: explain entries, method calls, recurrence hints ------------ */

/* The plan text of the body on lines 1..l1 of src with the bindings of
 * mf_env; the analysis must succeed.  Free with plan_done. */
static char *plan_of(const char *src, int l1, int ordered, orion_plan *p) {
  fake_env env = env_of(0);
  int rc;
  char *t = analyse(src, 1, l1, 3, &env, ordered, p, &rc);
  cr_assert_eq(rc, 0, "%s", t);
  return t;
}

static void plan_done(char *t, orion_plan *p) {
  orion_free(t);
  orion_plan_free(p);
}

/* Every line of a plan text is one entry with a known prefix. */
static void expect_one_line_entries(const char *t) {
  static const char *const prefixes[] = {
      "schedule: ", "ordered: ", "space: ", "time: ", "skew: ", "vectors:",
      "vector ", "access: ", "array ", "estimate: ", "candidate ", "reason: ",
      NULL};
  const char *l = t;
  while (*l != '\0') {
    const char *nl = strchr(l, '\n');
    size_t n = nl != NULL ? (size_t)(nl - l) : strlen(l);
    int i, ok = 0;
    for (i = 0; prefixes[i] != NULL && !ok; i++)
      ok = strncmp(l, prefixes[i], strlen(prefixes[i])) == 0;
    cr_expect(ok, "line '%.*s' is not an entry of its own in:\n%s", (int)n, l,
              t);
    if (nl == NULL)
      break;
    l = nl + 1;
  }
}

Test(analysis, returned_value_access_is_one_line) {
  const char *src = "return function(u, i, r)\n"
                    "  if r > 0 then\n"
                    "    return r // 2\n"
                    "  end\n"
                    "  return R[u][i + 1] +\n"
                    "    1\n"
                    "end\n";
  orion_plan p;
  char *t = plan_of(src, 7, 1, &p);
  HAS(t, "access: return r // 2 (write, line 3, returned value replaces the "
         "element) subscripts (u, i)\n");
  HAS(t, "access: return R[u][i + 1] + 1 (write, line 5, returned value "
         "replaces the element) subscripts (u, i)\n");
  expect_one_line_entries(t);
  plan_done(t, &p);
}

Test(analysis, method_call_on_an_array_is_refused_by_name) {
  const char *src = "return function(u, i, r)\n"
                    "  V[u] = W:get(u, 1) + r\n"
                    "  local n = H:dims()\n"
                    "end\n";
  orion_plan p;
  char *t = plan_of(src, 4, 0, &p);
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED);
  HAS(t, "reason: W:get(u, 1) at line 2: a method call on DistArray 'W'; "
         "DistArray methods run on the driver only, a parallel_for body "
         "cannot call them: write W[u][1] instead\n");
  HAS(t, "reason: H:dims() at line 3: a method call on DistArray 'H'; "
         "DistArray methods run on the driver only, a parallel_for body "
         "cannot call them: use #H and #H[1] instead\n");
  HASNT(t, "hint: write W through orion.buffer");
  HASNT(t, "hint: write H through orion.buffer");
  HASNT(t, "reason: vector (NONNEG, ANY) on W");
  expect_one_line_entries(t);
  plan_done(t, &p);
}

Test(analysis, prefix_sum_is_a_true_dependence_not_a_buffer_case) {
  const char *src = "return function(u, i, r)\n"
                    "  if u > 1 then V[u] = V[u - 1] + r end\n"
                    "end\n";
  orion_plan p;
  char *t = plan_of(src, 3, 1, &p);
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED);
  HAS(t, "vector (1, ANY) on V: V[u - 1] (read, line 2) and V[u] (write, "
         "line 2)");
  HAS(t, "reason: hint: V[u - 1] (line 2) reads what another iteration "
         "writes to V[u] (line 2) at distance (1, ANY): a true loop-carried "
         "dependence (a recurrence such as a prefix sum)");
  HAS(t, "run the loop with schedule = \"serial\"");
  HASNT(t, "orion.buffer(V");
  plan_done(t, &p);
}

Test(analysis, accumulation_keeps_the_buffer_hint) {
  const char *src = "return function(u, i, r)\n"
                    "  local k = math.floor(r)\n"
                    "  V[k] = V[k] + r\n"
                    "  W[k][1] = W[k][1] - 1\n"
                    "end\n";
  orion_plan p;
  char *t = plan_of(src, 5, 0, &p);
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED);
  HAS(t, "hint: V is accumulated (V[k] = V[k] + ..., line 3) and read only "
         "by its own updates: write V through orion.buffer(V, {apply = "
         "\"add\"})");
  HAS(t, "hint: W is accumulated (W[k][1] = W[k][1] - ..., line 4)");
  HASNT(t, "true loop-carried dependence");
  plan_done(t, &p);
}

/* ---- issue 33: the environment and builtins that pass arguments on ------ */

/* mf_env, plus the standard functions these tests call, _G bound to the
 * body's environment (as lua/analyse.c binds it when _G is the same table
 * as _ENV) and `type` bound to what `local type = table.unpack` in the
 * script makes it. */
static int env_resolve(void *ud, const char *name, orion_binding *out) {
  static const char *const std[] = {"ipairs", "pairs", "next", "pcall",
                                    "error", "table", "rawget", "rawset",
                                    "load", "select", NULL};
  int i;
  for (i = 0; std[i] != NULL; i++)
    if (strcmp(name, std[i]) == 0) {
      memset(out, 0, sizeof *out);
      out->kind = ORION_BIND_BUILTIN;
      out->std = std[i];
      return 0;
    }
  if (strcmp(name, "_G") == 0 || strcmp(name, "type") == 0) {
    memset(out, 0, sizeof *out);
    out->kind = name[0] == '_' ? ORION_BIND_VALUE : ORION_BIND_BUILTIN;
    out->env = name[0] == '_';
    out->std = name[0] == '_' ? NULL : "table.unpack";
    return 0;
  }
  return fake_resolve(ud, name, out);
}

/* The body `return function(u, i, r) LINES end` (one or two lines) is
 * rejected, and its plan holds `want`. */
static void expect_refused(const char *lines, const char *want) {
  char src[512];
  orion_plan p;
  char *t;
  test_resolver = env_resolve;
  snprintf(src, sizeof src, "return function(u, i, r)\n  %s\nend\n", lines);
  t = plan_of(src, 3 + (strchr(lines, '\n') != NULL), 0, &p);
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED, "%s:\n%s", lines, t);
  HAS(t, want);
  plan_done(t, &p);
}

Test(analysis, env_field_is_the_global_it_names) {
  /* _ENV.W and _ENV["W"] are the global W, which the executors receive
   * (the bytecode reads it by name): a recurrence through them is one. */
  const char *rec = "return function(u, i, r)\n"
                    "  _ENV.W[u][1] = _ENV[\"W\"][u - 1][1] + r\n"
                    "end\n";
  const char *own = "return function(u, i, r)\n"
                    "  _ENV.W[u][1] = r\n"
                    "end\n";
  orion_plan p;
  char *t = plan_of(rec, 3, 0, &p);
  cr_expect_eq(p.sched, ORION_SCHED_REJECTED, "%s", t);
  HAS(t, "vector (1, ANY) on W: _ENV[\"W\"][u - 1][1] (read, line 2) and "
         "_ENV.W[u][1] (write, line 2)");
  plan_done(t, &p);
  t = plan_of(own, 3, 0, &p);
  cr_expect_eq(p.sched, ORION_SCHED_NONE, "%s", t);
  HAS(t, "access: _ENV.W[u][1] (write, line 2) subscripts (u, 1)");
  HAS(t, "array W: ");
  plan_done(t, &p);
}

Test(analysis, environment_used_as_a_value_refuses_the_loop) {
  static const struct {
    const char *line, *reason;
  } cases[] = {
      {"rawset(_ENV, \"off\", 1)",
       "_ENV at line 2 (in rawset(_ENV, \"off\", 1)): the body uses its "
       "global environment as a value, so the analysis cannot tell which "
       "globals it reads or changes; name each global directly (G[i], or "
       "_ENV.G[i] with a constant name), or run the loop with schedule = "
       "\"serial\""},
      {"local w = rawget(_ENV, \"W\")", "_ENV at line 2 (in rawget(_ENV, "},
      {"local f = load(\"return W\", \"x\", \"t\", _ENV)",
       "_ENV at line 2 (in load(\"return W\", \"x\", \"t\", _ENV)): "},
      {"local g = _G", "_G at line 2: the body uses its global environment "
                       "as a value"},
      {"local w = _ENV[\"W\" .. \"\"]", "_ENV at line 2: "},
      {"for k, v in next, _G do end", "_G at line 2: "},
  };
  size_t k;
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++)
    expect_refused(cases[k].line, cases[k].reason);
}

Test(analysis, builtins_that_pass_an_argument_on_count_writes_through_it) {
  static const struct {
    const char *body, *access;
  } cases[] = {
      /* pcall returns what error raised. */
      {"local ok, w = pcall(function() error(W[u]) end)\n  w[1] = r",
       "(write, line 2, passed to error)"},
      {"local w = table.unpack(W, u, u)\n  w[1] = r",
       "W (write, line 2, passed to table.unpack)"},
      /* local type = table.unpack in the script: what it is counts. */
      {"local w = type(W, u, u)\n  w[1] = r",
       "W (write, line 2, passed to table.unpack)"},
      /* The rows ipairs gives of a 2-D array are slices. */
      {"for k, w in ipairs(W) do w[1] = r end",
       "W (write, line 2, passed to ipairs)"},
      /* Any other iterator is given W itself. */
      {"local function it(s, k) return nil end\n"
       "  for k, w in it, W, 0 do w[1] = r end",
       "W (write, line 3, iterated)"},
      /* What select gives back, or and/or yields, is stored: a later
       * iteration may use the row, so its subscripts are all unknown. */
      {"stash[1] = select(1, W[u])",
       "W[u] (write, line 2, passed to select) subscripts (?, ?)"},
      {"stash[1] = r > 0 and W[u] or nil",
       "W[u] (write, line 2, an and/or operand) subscripts (?, ?)"},
      /* So may any function the analysis does not know. */
      {"local function id(x) return x end\n  stash[1] = id(W[u])",
       "W[u] (write, line 3, passed to id) subscripts (?, ?)"},
  };
  size_t k;
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++)
    expect_refused(cases[k].body, cases[k].access);
}

Test(analysis, iterating_a_row_still_only_reads_it) {
  /* ipairs over a row gives numbers: the row is read, nothing more. */
  const char *src = "return function(u, i, r)\n"
                    "  for k, x in ipairs(W[u]) do acc:add(x) end\n"
                    "end\n";
  orion_plan p;
  char *t;
  test_resolver = env_resolve;
  t = plan_of(src, 3, 0, &p);
  HAS(t, "W[u] (read, line 2, passed to ipairs)");
  HASNT(t, "(write, line 2");
  cr_expect_eq(p.sched, ORION_SCHED_NONE, "%s", t);
  plan_done(t, &p);
}
