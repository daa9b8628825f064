/* Type inference for the C code generator: what each value and local of a
 * body may hold (nil, false, true, integer, float, an array or buffer or a
 * slice of one, an accumulator, the math table), joined over all the
 * assignments of a local until nothing changes; the C representation of
 * each type and the conversions between them; the slots a body is bound
 * to (what its free names resolve to); scopes of locals; definite
 * assignment; and the narrowing of a local's type where a condition on it
 * holds.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/cgen_int.h"

/* ======================================================================
 * Types.
 * ====================================================================== */

/* The C type holding a value of type t, ready to precede a name ("int64_t ",
 * "float *"). */
const char *ctype(gen *g, ty t) {
  if (t.k == T_REF)
    return g->slots[t.slot].kind == ORION_CSLOT_BUFFER
               ? "int64_t "
               : S(g, "%s *", etype_c(g->slots[t.slot].etype));
  if (t.k != T_VAL)
    return "int ";
  if (t.m == M_INT)
    return "int64_t ";
  if (t.m == M_FLT)
    return fastf(g, t) ? "float " : "double ";
  if ((t.m & ~M_BOOL) == 0 || t.m == M_NIL)
    return "int ";
  return "o_v ";
}

/* How a type reads in messages. */
const char *ty_text(gen *g, ty t) {
  if (t.k == T_REF) {
    const slot *s = &g->slots[t.slot];
    const char *what = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    return t.depth == 0 ? S(g, "the %s '%s'", what, s->name)
                        : S(g, "a slice of the %s '%s'", what, s->name);
  }
  if (t.k == T_ACC)
    return "an accumulator";
  if (t.k == T_MATH)
    return "the math table";
  if (t.k == T_ROW)
    return "a ragged row";
  if (t.k != T_VAL)
    return "an unknown value";
  switch (t.m) {
  case M_INT:
    return "an integer";
  case M_FLT:
    return "a float";
  case M_NUM:
    return "a number";
  case M_NIL:
    return "nil";
  default:
    break;
  }
  if (!(t.m & M_NUM))
    return (t.m & M_NIL) ? "a value that may be nil or a boolean" : "a boolean";
  if (t.m & M_NIL)
    return "a value that may be nil";
  return "a value that may be a boolean";
}

/* Joins src into *dst; returns 1 when *dst changed.  Values of different
 * kinds cannot share a local. */
int ty_join(gen *g, ty *dst, ty src, int line, const char *name) {
  ty old = *dst;
  if (src.k == T_NONE)
    return 0;
  if (dst->k == T_NONE) {
    *dst = src;
    if (src.k == T_VAL)
      *dst = ty_val(src.m, src.prec);
    return 1;
  }
  if (dst->k == T_VAL && src.k == T_VAL) {
    int prec = dst->prec;
    if ((src.m & M_FLT) && src.prec > prec)
      prec = src.prec;
    if (!(dst->m & M_FLT))
      prec = src.prec;
    *dst = ty_val(dst->m | src.m, prec);
  } else if (dst->k != src.k ||
             (dst->k == T_REF &&
              (dst->slot != src.slot || dst->depth != src.depth)) ||
             (dst->k == T_ACC && dst->slot != src.slot)) {
    refuse(g, line, "the local '%s' holds %s and %s", name, ty_text(g, *dst),
           ty_text(g, src));
  }
  return memcmp(&old, dst, sizeof old) != 0;
}

void var_join(gen *g, var *v, ty t, int line) {
  if (ty_join(g, &v->t, t, line, v->name))
    g->changed = 1;
}

/* ======================================================================
 * Values.
 * ====================================================================== */

static const char *int_lit(gen *g, int64_t i) {
  if (i == INT64_MIN)
    return "INT64_MIN";
  return S(g, "INT64_C(%" PRId64 ")", i);
}

const char *flt_lit(gen *g, double d) {
  if (isinf(d))
    return d > 0 ? "(__builtin_inf())" : "(-__builtin_inf())";
  if (isnan(d))
    return "(__builtin_nan(\"\"))";
  return S(g, "%a", d);
}

/* A constant as a value. */
cv cv_k(gen *g, lval k) {
  cv r;
  if (k.m == M_INT)
    r = cv_of(ty_val(M_INT, P_WEAK), int_lit(g, k.i), 1);
  else if (k.m == M_FLT)
    r = cv_of(ty_val(M_FLT, P_WEAK), flt_lit(g, k.d), 1);
  else if (k.m == M_NIL)
    r = cv_of(ty_val(M_NIL, P_WEAK), "0", 1);
  else
    r = cv_of(ty_val(k.m, P_WEAK), k.m == M_TRUE ? "1" : "0", 1);
  r.isk = 1;
  r.k = k;
  return r;
}

cv cv_nil(gen *g) {
  lval k;
  memset(&k, 0, sizeof k);
  k.m = M_NIL;
  return cv_k(g, k);
}

/* Declares a temporary holding v's value (so it can be read twice or
 * keeps its value across later stores). */
cv mat(gen *g, cv v) {
  const char *t;
  if (v.simple || v.t.k == T_NONE || v.t.k == T_ACC || v.t.k == T_MATH)
    return v;
  t = newtmp(g);
  E(g, "O_U %sconst %s = %s;", ctype(g, v.t), t, v.s);
  v.s = t;
  v.simple = 1;
  return v;
}

/* A temporary with v's current value even when v names a local (which a
 * later store of the same statement may change). */
cv copy(gen *g, cv v) {
  if (!v.isk)
    v.simple = 0;
  return mat(g, v);
}

/* v's value as a double. */
const char *as_d(gen *g, cv v) {
  if (v.t.m == M_INT)
    return S(g, "((double)%s)", v.s);
  if (v.t.m == M_FLT)
    return fastf(g, v.t) ? S(g, "((double)%s)", v.s) : v.s;
  return S(g, "o_vn(%s)", v.s);
}

/* v's (numeric) value as a float of precision prec: a float in fast mode
 * for f32 data, else a double. */
const char *as_f(gen *g, cv v, int prec) {
  int tofloat = g->fast && prec == P_F32;
  if (v.t.m == M_INT)
    return S(g, "((%s)%s)", tofloat ? "float" : "double", v.s);
  if (v.t.m == M_FLT) {
    if (fastf(g, v.t) == tofloat)
      return v.s;
    return S(g, "((%s)%s)", tofloat ? "float" : "double", v.s);
  }
  return tofloat ? S(g, "((float)o_vn(%s))", v.s) : S(g, "o_vn(%s)", v.s);
}

/* v's value as an o_v. */
const char *as_v(gen *g, cv v) {
  if (isdyn(v.t))
    return v.s;
  if (v.t.m == M_INT)
    return S(g, "o_vi(%s)", v.s);
  if (v.t.m == M_FLT)
    return S(g, "o_vf(%s)", fastf(g, v.t) ? S(g, "(double)%s", v.s) : v.s);
  if (v.t.m == M_NIL)
    return "o_vnil()";
  return S(g, "o_vb(%s)", v.s);
}

/* Lua truthiness of v as a C int. */
const char *truth(gen *g, cv v) {
  if (v.t.k != T_VAL)
    return "1";
  if (!(v.t.m & M_FALSY))
    return "1";
  if (!(v.t.m & M_TRUTHY))
    return "0";
  if (isdyn(v.t))
    return S(g, "(%s.t >= 2)", v.s);
  return v.s; /* a boolean */
}

/* v's value in the representation of type t.  Either t's values include
 * v's, or the caller knows at this point that v holds one of t's. */
const char *conv(gen *g, cv v, ty t) {
  if (v.t.k == T_NONE)
    return "0";
  if (t.k != T_VAL)
    return v.s;
  if (isdyn(t))
    return as_v(g, v);
  if (t.m == M_INT)
    return isdyn(v.t) ? S(g, "%s.i", v.s) : v.s;
  if (t.m == M_FLT) {
    if (isdyn(v.t))
      return fastf(g, t) ? S(g, "((float)%s.d)", v.s) : S(g, "%s.d", v.s);
    if (v.t.m == M_FLT)
      return as_f(g, v, t.prec);
    return "0";
  }
  if (t.m == M_NIL)
    return "0";
  /* A boolean. */
  if (isdyn(v.t))
    return S(g, "(%s.t == 2)", v.s);
  if (v.t.m & M_BOOL)
    return v.s;
  return "0";
}

/* ======================================================================
 * Names: slots for what the body is bound to, locals and scopes.
 * ====================================================================== */

fname *free_name(gen *g, const char *name) {
  fname *f;
  int i;
  for (i = 0; i < g->nfn; i++)
    if (strcmp(g->fn[i].name, name) == 0)
      return &g->fn[i];
  grow(g, (void **)&g->fn, &g->capfn, g->nfn, sizeof *g->fn);
  f = &g->fn[g->nfn++];
  memset(f, 0, sizeof *f);
  f->name = S(g, "%s", name);
  f->slot = -1;
  if (g->in->resolve == NULL || g->in->resolve(g->in->ud, name, &f->b) != 0)
    f->b.kind = ORION_BIND_NONE;
  f->b.reach = NULL; /* only valid during the call */
  f->b.nreach = 0;
  f->scope = SC_UNKNOWN;
  if (g->haveup) {
    f->scope = SC_GLOBAL;
    for (i = 0; i < g->nup; i++)
      if (strcmp(g->up[i], name) == 0)
        f->scope = SC_UPVAL;
  }
  return f;
}

/* ---- upvalues: the locals visible where the body is defined ------------ */

static void up_push(gen *g, const char *name) {
  grow(g, (void **)&g->up, &g->capup, g->nup, sizeof *g->up);
  g->up[g->nup++] = name;
}

static int up_list(gen *g, const ast_list *l, const ast_node *target) {
  int i;
  for (i = 0; i < l->n; i++)
    if (up_walk(g, l->v[i], target))
      return 1;
  return 0;
}

/* The statements of a block: each one's declarations are visible to the
 * ones after it. */
static int up_block(gen *g, const ast_list *l, const ast_node *target) {
  int i, j, mark = g->nup;
  for (i = 0; i < l->n; i++) {
    const ast_node *st = l->v[i];
    if (st->kind == AST_LOCALFUNC) {
      up_push(g, st->a->str);
      if (up_walk(g, st->b, target))
        return 1;
      continue;
    }
    if (up_walk(g, st, target))
      return 1;
    if (st->kind == AST_LOCAL)
      for (j = 0; j < st->list.n; j++)
        up_push(g, st->list.v[j]->str);
  }
  g->nup = mark;
  return 0;
}

/* Finds target below n; on success g->up holds the locals in scope. */
int up_walk(gen *g, const ast_node *n, const ast_node *target) {
  int mark = g->nup, i;
  if (n == NULL)
    return 0;
  if (n == target)
    return 1;
  switch (n->kind) {
  case AST_BLOCK:
    return up_block(g, &n->list, target);
  case AST_FUNC:
    for (i = 0; i < n->params.n; i++)
      up_push(g, n->params.v[i]->str);
    if (up_walk(g, n->a, target))
      return 1;
    break;
  case AST_LOCAL:
    return up_list(g, &n->list2, target);
  case AST_NUMFOR:
    if (up_walk(g, n->a, target) || up_walk(g, n->b, target) ||
        up_walk(g, n->c, target))
      return 1;
    up_push(g, n->list.v[0]->str);
    if (up_walk(g, n->d, target))
      return 1;
    break;
  case AST_GENFOR:
    if (up_list(g, &n->list2, target))
      return 1;
    for (i = 0; i < n->list.n; i++)
      up_push(g, n->list.v[i]->str);
    if (up_walk(g, n->a, target))
      return 1;
    break;
  case AST_REPEAT: /* the condition sees the body's locals */
    if (n->a != NULL) {
      const ast_list *l = &n->a->list;
      for (i = 0; i < l->n; i++) {
        if (up_walk(g, l->v[i], target))
          return 1;
        if (l->v[i]->kind == AST_LOCAL) {
          int j;
          for (j = 0; j < l->v[i]->list.n; j++)
            up_push(g, l->v[i]->list.v[j]->str);
        } else if (l->v[i]->kind == AST_LOCALFUNC) {
          up_push(g, l->v[i]->a->str);
        }
      }
    }
    if (up_walk(g, n->b, target))
      return 1;
    break;
  default:
    if (up_walk(g, n->a, target) || up_walk(g, n->b, target) ||
        up_walk(g, n->c, target) || up_walk(g, n->d, target) ||
        up_list(g, &n->list, target) || up_list(g, &n->list2, target))
      return 1;
    break;
  }
  g->nup = mark;
  return 0;
}

int new_slot(gen *g, fname *f, orion_cslot_kind kind) {
  static const char pfx[] = "ABCK";
  slot *s;
  if (f->slot >= 0)
    return f->slot;
  grow(g, (void **)&g->slots, &g->capslots, g->nslots, sizeof *g->slots);
  s = &g->slots[g->nslots];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->idx = g->nkind[kind]++;
  s->name = f->name;
  snprintf(s->pfx, sizeof s->pfx, "%c%d", pfx[kind], s->idx);
  switch (kind) {
  case ORION_CSLOT_ARRAY:
    s->id = f->b.arr.id;
    s->ndims = f->b.arr.ndims;
    s->etype = f->b.arr.type;
    break;
  case ORION_CSLOT_BUFFER:
    s->id = f->b.id;
    s->ndims = f->b.arr.ndims;
    s->etype = f->b.arr.type;
    break;
  case ORION_CSLOT_ACC:
    s->id = f->b.id;
    break;
  case ORION_CSLOT_CONST:
    s->isint = f->b.is_int;
    s->ival = f->b.ival;
    s->fval = f->b.fval;
    break;
  }
  f->slot = g->nslots++;
  return f->slot;
}

var *lookup(gen *g, const char *name) {
  int i;
  for (i = g->nsc - 1; i >= 0; i--)
    if (strcmp(g->sc[i].name, name) == 0)
      return g->sc[i].v;
  return NULL;
}

/* The variable declared by node decl (the same object on every walk). */
var *get_var(gen *g, const ast_node *decl) {
  var *v;
  int i;
  for (i = g->nvars - 1; i >= 0; i--)
    if (g->vars[i]->decl == decl)
      return g->vars[i];
  grow(g, (void **)&g->vars, &g->capvars, g->nvars, sizeof *g->vars);
  v = amalloc(g, sizeof *v);
  memset(v, 0, sizeof *v);
  v->decl = decl;
  v->name = decl->str;
  v->cname = S(g, "v%d_%s", g->nvars + 1, decl->str);
  g->vars[g->nvars++] = v;
  return v;
}

void push_var(gen *g, var *v) {
  grow(g, (void **)&g->sc, &g->capsc, g->nsc, sizeof *g->sc);
  g->sc[g->nsc].name = v->name;
  g->sc[g->nsc].v = v;
  g->nsc++;
}

/* ---- definite assignment ---------------------------------------------- */

dastate da_save(gen *g) {
  dastate s;
  int i;
  s.n = g->nvars;
  s.dead = g->dead;
  s.v = amalloc(g, (size_t)s.n + 1);
  for (i = 0; i < s.n; i++)
    s.v[i] = (unsigned char)g->vars[i]->da;
  return s;
}

void da_restore(gen *g, dastate s) {
  int i;
  g->dead = s.dead;
  for (i = 0; i < g->nvars; i++)
    g->vars[i]->da = i < s.n ? s.v[i] : 0;
}

/* acc = acc meet (the current state). */
void da_meet(gen *g, dastate *acc) {
  int i;
  if (g->dead)
    return;
  if (acc->dead) {
    *acc = da_save(g);
    return;
  }
  for (i = 0; i < acc->n && i < g->nvars; i++)
    acc->v[i] = (unsigned char)(acc->v[i] & g->vars[i]->da);
}

/* A fresh state where nothing is reachable yet (for meets). */
dastate da_dead(void) {
  dastate s;
  memset(&s, 0, sizeof s);
  s.dead = 1;
  return s;
}

/* ======================================================================
 * Narrowing: the type of a local where a condition on it holds.
 * ====================================================================== */

/* Does the loop body declare or assign `name`? */
static int declares_or_assigns(const ast_node *n, void *name) {
  int i;
  if (n->kind == AST_LOCAL)
    for (i = 0; i < n->list.n; i++)
      if (strcmp(n->list.v[i]->str, name) == 0)
        return 1;
  if (n->kind == AST_ASSIGN)
    for (i = 0; i < n->list.n; i++)
      if (n->list.v[i]->kind == AST_NAME &&
          strcmp(n->list.v[i]->str, name) == 0)
        return 1;
  return 0;
}

int touches(const ast_node *n, const char *name) {
  return orion_ast_any(n, declares_or_assigns, (void *)name);
}

/* The local a condition tests, when it tests one: `x` (truthy) or
 * `x ~= nil` / `x == nil`. */
static void narrow_one(gen *g, const ast_node *n, int m) {
  var *v;
  ty t;
  if (n->kind != AST_NAME || (v = lookup(g, n->str)) == NULL || v->isk ||
      v->t.k != T_VAL || !(v->t.m & m) || (v->t.m & ~m) == 0)
    return;
  t = ty_val(v->t.m & m, v->t.prec);
  grow(g, (void **)&g->nar, &g->capnar, g->nnar, sizeof *g->nar);
  g->nar[g->nnar].v = v;
  g->nar[g->nnar++].t = t;
}

/* Narrows the locals that condition c tests to the types they have where
 * c is true (truthy) or false; only locals that `keep` does not assign
 * (keep NULL: an expression, which assigns nothing).  Undo with
 * g->nnar = the value before. */
void narrow(gen *g, const ast_node *c, int truthy,
                   const ast_node *keep) {
  while (c->kind == AST_PAREN)
    c = c->a;
  if (c->kind == AST_NAME) {
    if (keep == NULL || !touches(keep, c->str))
      narrow_one(g, c, truthy ? M_TRUTHY : M_FALSY);
  } else if (c->kind == AST_UNOP && c->op == OP_NOT) {
    narrow(g, c->a, !truthy, keep);
  } else if (c->kind == AST_BINOP &&
             ((c->op == OP_AND && truthy) || (c->op == OP_OR && !truthy))) {
    narrow(g, c->a, truthy, keep);
    narrow(g, c->b, truthy, keep);
  } else if (c->kind == AST_BINOP && (c->op == OP_NE || c->op == OP_EQ) &&
             (c->op == OP_NE) == truthy) {
    const ast_node *x = c->a->kind == AST_NIL ? c->b : c->a;
    const ast_node *y = c->a->kind == AST_NIL ? c->a : c->b;
    if (y->kind == AST_NIL && x->kind == AST_NAME &&
        (keep == NULL || !touches(keep, x->str)))
      narrow_one(g, x, ~M_NIL & (M_BOOL | M_NUM));
  }
}
