/* Statements for the C code generator: local, assignment (targets before
 * values, stores right to left, as Lua does), return (the value replaces
 * the element), blocks, goto and labels, if, while, repeat and numeric
 * for (integer loops count their iterations first, as Lua 5.4 does, and
 * innermost ones check the loop variable's subscripts once for the whole
 * range).
 */
#include <inttypes.h>
#include <string.h>

#include "analysis/cgen_int.h"

/* ======================================================================
 * Statements.
 * ====================================================================== */

static void stmt(gen *g, const ast_node *s);

/* The statements of a block in a new scope (no braces). */
void stmts(gen *g, const ast_list *l) {
  blkframe f;
  int i, base = g->nsc;
  dastate start;
  f.stmts = l;
  f.suffix = g->suffix;
  f.up = g->blk;
  g->blk = &f;
  start = da_save(g);
  for (i = 0; i < l->n; i++) {
    /* A goto may arrive at a label from anywhere in the block: only what
     * was assigned before the block is surely assigned there. */
    if (l->v[i]->kind == AST_LABEL)
      da_restore(g, start);
    stmt(g, l->v[i]);
  }
  g->nsc = base;
  g->blk = f.up;
}

/* A block in braces. */
static void block(gen *g, const ast_node *b) {
  open_(g, "");
  stmts(g, &b->list);
  close_(g);
}

static int label_id(gen *g, const ast_node *l) {
  int i;
  for (i = 0; i < g->nlabels; i++)
    if (g->labels[i] == l)
      return i;
  grow(g, (void **)&g->labels, &g->caplabels, g->nlabels, sizeof *g->labels);
  g->labels[g->nlabels] = l;
  return g->nlabels++;
}

static void goto_(gen *g, const ast_node *s) {
  blkframe *f;
  int i;
  for (f = g->blk; f != NULL; f = f->up)
    for (i = 0; i < f->stmts->n; i++) {
      const ast_node *l = f->stmts->v[i];
      if (l->kind == AST_LABEL && strcmp(l->str, s->str) == 0) {
        if (l->line >= s->line)
          gpu_note(g, s->line,
                   "a goto forward (nvcc compiles C++, where a jump may not "
                   "pass declarations)");
        E(g, "goto o_L%d%s;", label_id(g, l), f->suffix);
        g->dead = 1;
        return;
      }
    }
  refuse(g, s->line, "a goto to the unknown label '%s'", s->str);
}

/* The last line an expression list reaches (Lua stores a value after
 * reading the whole list: the store reports that line). */
static int last_line(const ast_node *n) {
  int m, i, x;
  if (n == NULL)
    return 0;
  m = n->line;
  x = last_line(n->a);
  m = x > m ? x : m;
  x = last_line(n->b);
  m = x > m ? x : m;
  x = last_line(n->c);
  m = x > m ? x : m;
  for (i = 0; i < n->list.n; i++) {
    x = last_line(n->list.v[i]);
    m = x > m ? x : m;
  }
  return m;
}

static void local_(gen *g, const ast_node *s) {
  int n = s->list.n, i;
  cv *v = explist(g, &s->list2, n, 0);
  var **vs = amalloc(g, sizeof *vs * (size_t)(n + 1));
  for (i = 0; i < n; i++) {
    const ast_node *d = s->list.v[i];
    var *x = get_var(g, d);
    vs[i] = x;
    if (d->attrib == ATTR_CLOSE)
      refuse(g, d->line, "the to-be-closed variable '%s'", d->str);
    if (d->attrib == ATTR_CONST && v[i].isk) {
      x->isk = 1;
      x->k = v[i].k;
      continue;
    }
    x->noinit = s->list2.n == 0;
    if (!x->noinit)
      var_join(g, x, v[i].t, s->line);
    else if (x->t.k == T_NONE)
      continue; /* declared; typed by its first assignment */
  }
  for (i = 0; i < n; i++) {
    var *x = vs[i];
    if (!x->isk) {
      if (x->t.k != T_NONE && x->t.k != T_ACC && x->t.k != T_MATH)
        E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname,
          x->noinit ? (isdyn(x->t) ? "o_vnil()" : "0") : conv(g, v[i], x->t));
      x->da = !x->noinit;
    }
    push_var(g, x);
  }
}

typedef struct target {
  var *v;  /* a local */
  cv o, k; /* or o[k] */
  const ast_node *keynode;
  int line;
} target;

static void assign(gen *g, const ast_node *s) {
  int n = s->list.n, i, line = last_line(s);
  target *t = amalloc(g, sizeof *t * (size_t)(n + 1));
  cv *v;
  for (i = 0; i < n; i++) {
    const ast_node *e = s->list.v[i];
    memset(&t[i], 0, sizeof t[i]);
    if (e->kind == AST_NAME) {
      t[i].v = lookup(g, e->str);
      if (t[i].v == NULL)
        refuse(g, e->line,
               "an assignment to '%s', which is not a local of "
               "the body",
               e->str);
      if (t[i].v->isk)
        refuse(g, e->line, "an assignment to the constant '%s'", e->str);
    } else if (e->kind == AST_INDEX) {
      t[i].o = ex(g, e->a);
      if (t[i].o.t.k == T_MATH)
        refuse(g, e->line, "an assignment to a field of math");
      if (t[i].o.t.k != T_REF && t[i].o.t.k != T_NONE)
        refuse(g, e->line, "an assignment into %s", ty_text(g, t[i].o.t));
      if (e->flag)
        refuse(g, e->line, "the field '%s' of %s", e->b->str,
               ty_text(g, t[i].o.t));
      t[i].k = ex(g, e->b);
      t[i].keynode = e->b;
      if (n > 1) {
        t[i].o = copy(g, t[i].o);
        t[i].k = copy(g, t[i].k);
      }
      t[i].line = line;
    } else {
      refuse(g, e->line, "an assignment to %s", lua_text(g, e));
    }
  }
  if (n == 1 && s->list2.n == 1 && t[0].v == NULL &&
      buffer_add(g, t[0].o, t[0].k, s->list.v[0], s->list2.v[0], line))
    return;
  v = explist(g, &s->list2, n, n > 1);
  for (i = n - 1; i >= 0; i--) {
    if (t[i].v != NULL) {
      var *x = t[i].v;
      var_join(g, x, v[i].t, s->line);
      if (x->t.k != T_NONE && x->t.k != T_ACC && x->t.k != T_MATH &&
          v[i].t.k != T_NONE)
        E(g, "%s = %s;", x->cname, conv(g, v[i], x->t));
      if (!g->dead)
        x->da = 1;
    } else {
      index_set(g, t[i].o, t[i].k, t[i].keynode, v[i], t[i].line);
    }
  }
}

static void return_(gen *g, const ast_node *s) {
  cv *v = explist(g, &s->list, s->list.n > 0 ? 1 : 0, 0);
  int et = g->in->iter.type;
  if (s->list.n > 0 && v[0].t.k != T_NONE &&
      !(v[0].t.k == T_VAL && v[0].t.m == M_NIL)) {
    cv x = v[0];
    if (x.t.k != T_VAL)
      refuse(g, s->line, "returning %s", ty_text(g, x.t));
    if (g->in->iter.ragged) /* the interpreter's error, at run time */
      refuse(g, s->line, "returning a value from a body over rows");
    if (g->emit)
      g->itwritten = 1;
    if (x.t.m & M_NIL) {
      /* nil keeps the element: store only the other values. */
      cv y;
      x = mat(g, x);
      open_(g, S(g, "if (%s.t != 0) ", x.s));
      y = x;
      y.t = ty_val(x.t.m & ~M_NIL, x.t.prec);
      if (!isdyn(y.t))
        y = cv_of(y.t, conv(g, x, y.t), 0);
      store_value(g, y, et, "IT_v[o_e]", NULL, NULL, "o_tr", "o_wr", -s->line);
      close_(g);
    } else {
      store_value(g, x, et, "IT_v[o_e]", NULL, NULL, "o_tr", "o_wr", -s->line);
    }
  }
  E(g, "goto o_next;");
  g->dead = 1;
}

/* ---- loops ------------------------------------------------------------ */

static int is_loop(const ast_node *n, void *ud) {
  (void)ud;
  return n->kind == AST_WHILE || n->kind == AST_REPEAT ||
         n->kind == AST_NUMFOR || n->kind == AST_GENFOR || n->kind == AST_FUNC;
}

static int contains_loop(const ast_node *n) {
  return orion_ast_any(n, is_loop, NULL);
}

static int is_var(const ast_node *e, const char *name) {
  return e->kind == AST_NAME && strcmp(e->str, name) == 0;
}

/* Subscripts `k`, `k + c`, `c + k`, `k - c` (c a small integer literal)
 * of accesses in the loop body. */
static void find_keys(gen *g, const ast_node *n, const char *k) {
  int i;
  if (n == NULL)
    return;
  if (n->kind == AST_INDEX && !n->flag) {
    const ast_node *s = n->b;
    int ok = is_var(s, k);
    if (s->kind == AST_BINOP && (s->op == OP_ADD || s->op == OP_SUB)) {
      const ast_node *lit = NULL;
      if (is_var(s->a, k) && s->b->kind == AST_INT)
        lit = s->b;
      else if (s->op == OP_ADD && is_var(s->b, k) && s->a->kind == AST_INT)
        lit = s->a;
      ok = lit != NULL && lit->ival > -(INT64_C(1) << 31) &&
           lit->ival < (INT64_C(1) << 31);
    }
    if (ok) {
      const ast_node **v = amalloc(g, sizeof *v * (size_t)(g->nhnodes + 1));
      if (g->nhnodes > 0)
        memcpy(v, g->hnodes, sizeof *v * (size_t)g->nhnodes);
      v[g->nhnodes++] = s;
      g->hnodes = v;
    }
  }
  find_keys(g, n->a, k);
  find_keys(g, n->b, k);
  find_keys(g, n->c, k);
  find_keys(g, n->d, k);
  for (i = 0; i < n->list.n; i++)
    find_keys(g, n->list.v[i], k);
  for (i = 0; i < n->list2.n; i++)
    find_keys(g, n->list2.v[i], k);
}

/* The body of a numeric for: declares the control variable from the C
 * expression `val` and runs the block. */
static void for_body(gen *g, const ast_node *s, var *x, cv val) {
  open_(g, "");
  var_join(g, x, val.t, s->line);
  E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname, conv(g, val, x->t));
  x->da = 1;
  push_var(g, x);
  stmts(g, &s->d->list);
  g->nsc--;
  close_(g);
}

/* ---- dot products in vector accumulators (fast mode) ------------------- */

static int names(const ast_node *n, void *ud) {
  return n->kind == AST_NAME && strcmp(n->str, (const char *)ud) == 0;
}

var *row_at(gen *g, const ast_node *e, const char *k) {
  var *r;
  const slot *sl;
  if (e->kind != AST_INDEX || e->flag || e->a->kind != AST_NAME ||
      !is_var(e->b, k) || (r = lookup(g, e->a->str)) == NULL ||
      r->t.k != T_REF)
    return NULL;
  sl = &g->slots[r->t.slot];
  if (sl->kind != ORION_CSLOT_ARRAY || r->t.depth + 1 != sl->ndims ||
      (sl->etype != ET_F32 && sl->etype != ET_F64))
    return NULL;
  return r;
}

/* The loop body `s = s + a[k] * b[k]`, `s = a[k] * b[k] + s` or
 * `s = s - a[k] * b[k]` (row_at for a and b, both f32 with s a float of
 * fast mode, or both f64 with s a double): s, with a, b and the sign in
 * ra, rb and *neg; NULL when the body is anything else. */
static var *dot_loop(gen *g, const ast_node *s, var **ra, var **rb,
                     int *neg) {
  const ast_node *a, *e, *t;
  var *v;
  int et;
  if (s->d->list.n != 1 || (a = s->d->list.v[0])->kind != AST_ASSIGN ||
      a->list.n != 1 || a->list2.n != 1 || a->list.v[0]->kind != AST_NAME)
    return NULL;
  e = a->list2.v[0];
  v = lookup(g, a->list.v[0]->str);
  if (v == NULL || v->isk || v->t.k != T_VAL || v->t.m != M_FLT ||
      e->kind != AST_BINOP || (e->op != OP_ADD && e->op != OP_SUB))
    return NULL;
  if (names(e->a, (void *)v->name))
    t = e->b;
  else if (e->op == OP_ADD && names(e->b, (void *)v->name))
    t = e->a;
  else
    return NULL;
  if (t->kind != AST_BINOP || t->op != OP_MUL ||
      (*ra = row_at(g, t->a, s->list.v[0]->str)) == NULL ||
      (*rb = row_at(g, t->b, s->list.v[0]->str)) == NULL)
    return NULL;
  et = g->slots[(*ra)->t.slot].etype;
  if (g->slots[(*rb)->t.slot].etype != et ||
      (et == ET_F32) != (fastf(g, v->t) != 0))
    return NULL;
  *neg = e->op == OP_SUB;
  return v;
}

/* Fast mode, in the copy of a loop without bounds checks: a dot product
 * (dot_loop) first runs whole groups of four 32-byte vectors in four
 * accumulators (GCC vector extensions), which the compiler would not
 * split by itself: one accumulator makes every multiply-add wait for the
 * previous one.  The caller's loop then runs the remaining iterations
 * from tt on. */
static void split_dot(gen *g, var *sum, var *ra, var *rb, int neg,
                      const char *i0, const char *cnt, const char *tt,
                      int n) {
  int f32 = g->slots[ra->t.slot].etype == ET_F32, lanes = f32 ? 8 : 4, i;
  const char *et = f32 ? "float" : "double", *vt = S(g, "o_vt%d", n),
             *qa = S(g, "o_qa%d", n), *qb = S(g, "o_qb%d", n),
             *tot = S(g, "o_s%d", n);
  if (g->in->gpu && !g->nolane) {
    /* On the device, a lane loop (analysis/cgen_lane.c): each lane sums
     * its iterations, then the warp adds the 32 partial sums. */
    E(g, "/* The dot product over the warp's lanes (fast mode). */");
    E(g, "#if ORION_GPU_BODY && O_WARP");
    open_(g, "");
    E(g, "const %s *const o_ga%d = %s + (%s - 1), *const o_gb%d = %s + (%s - 1);",
      et, n, ra->cname, i0, n, rb->cname, i0);
    E(g, "%s o_p%d = 0;", et, n);
    E(g, "for (uint64_t o_u%d = O_LANE; o_u%d <= %s; o_u%d += O_LANES) "
         "o_p%d += o_ga%d[o_u%d] * o_gb%d[o_u%d];",
      n, n, cnt, n, n, n, n, n, n);
    E(g, "%s = %s %c o_wsum(o_p%d);", sum->cname, sum->cname, neg ? '-' : '+',
      n);
    E(g, "%s = %s + 1;", tt, cnt);
    close_(g);
    E(g, "#endif");
  }
  E(g, "/* The dot product in four vector accumulators (fast mode). */");
  E(g, "#if !ORION_GPU_BODY");
  open_(g, S(g, "if (%s >= %d) ", cnt, 4 * lanes - 1));
  E(g, "typedef %s %s __attribute__((vector_size(32), aligned(%d), "
       "may_alias));",
    et, vt, f32 ? 4 : 8);
  E(g, "const %s *const %s = %s + (%s - 1), *const %s = %s + (%s - 1);", et,
    qa, ra->cname, i0, qb, rb->cname, i0);
  E(g, "%s o_a%d_0 = {0}, o_a%d_1 = {0}, o_a%d_2 = {0}, o_a%d_3 = {0};", vt,
    n, n, n, n);
  open_(g, S(g, "for (; %s + %d <= %s; %s += %d) ", tt, 4 * lanes - 1, cnt,
             tt, 4 * lanes));
  for (i = 0; i < 4; i++)
    E(g, "o_a%d_%d += *(const %s *)(%s + %s + %d) * *(const %s *)(%s + %s + "
         "%d);",
      n, i, vt, qa, tt, i * lanes, vt, qb, tt, i * lanes);
  close_(g);
  E(g, "o_a%d_0 = (o_a%d_0 + o_a%d_1) + (o_a%d_2 + o_a%d_3);", n, n, n, n, n);
  /* The lanes added as a tree (halves, quarters, pairs): log2(lanes)
   * dependent adds on the way to the error term, where a lane-by-lane
   * sum is lanes of them, and the next element's dot product waits for
   * that term (its row is usually the one this element updates). */
  E(g, "#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)");
  if (f32) {
    E(g, "o_a%d_0 += __builtin_shufflevector(o_a%d_0, o_a%d_0, 4, 5, 6, 7, "
         "0, 1, 2, 3);", n, n, n);
    E(g, "o_a%d_0 += __builtin_shufflevector(o_a%d_0, o_a%d_0, 2, 3, 0, 1, "
         "6, 7, 4, 5);", n, n, n);
    E(g, "o_a%d_0 += __builtin_shufflevector(o_a%d_0, o_a%d_0, 1, 0, 3, 2, "
         "5, 4, 7, 6);", n, n, n);
  } else {
    E(g, "o_a%d_0 += __builtin_shufflevector(o_a%d_0, o_a%d_0, 2, 3, 0, 1);",
      n, n, n);
    E(g, "o_a%d_0 += __builtin_shufflevector(o_a%d_0, o_a%d_0, 1, 0, 3, 2);",
      n, n, n);
  }
  E(g, "const %s %s = o_a%d_0[0];", et, tot, n);
  E(g, "#else");
  if (f32)
    E(g, "const %s %s = ((o_a%d_0[0] + o_a%d_0[4]) + (o_a%d_0[2] + "
         "o_a%d_0[6])) + ((o_a%d_0[1] + o_a%d_0[5]) + (o_a%d_0[3] + "
         "o_a%d_0[7]));", et, tot, n, n, n, n, n, n, n, n);
  else
    E(g, "const %s %s = (o_a%d_0[0] + o_a%d_0[2]) + (o_a%d_0[1] + "
         "o_a%d_0[3]);", et, tot, n, n, n, n);
  E(g, "#endif");
  E(g, "%s = %s %c %s;", sum->cname, sum->cname, neg ? '-' : '+', tot);
  close_(g);
  E(g, "#endif");
}

/* Does the code in b contain text t? */
static int has_text(const orion_buf *b, const char *t) {
  size_t n = strlen(t), i;
  for (i = 0; i + n <= b->len; i++)
    if (memcmp(b->data + i, t, n) == 0)
      return 1;
  return 0;
}

/* An integer loop (Lua 5.4's forprep/forloop): the count of iterations
 * is computed first, so the control variable never overflows. */
static void int_loop(gen *g, const ast_node *s, var *x, cv init, cv lim,
                     cv step, int n) {
  const char *i0 = S(g, "o_i%d", n), *st = S(g, "o_st%d", n),
             *li = S(g, "o_li%d", n), *cnt = S(g, "o_n%d", n),
             *tt = S(g, "o_t%d", n);
  int kstep = step.isk, hoist;
  int64_t sv = step.k.i;
  E(g, "O_U const int64_t %s = %s;", i0, init.s);
  E(g, "O_U const int64_t %s = %s;", st, step.s);
  E(g, "O_U int64_t %s = 0;", li);
  if (!kstep || sv == 0)
    fail(g, S(g, "%s == 0", st),
         S(g, "o_err(c, %d, \"'for' step is zero\")", s->line));
  if (lim.t.m == M_INT) {
    E(g, "%s = %s;", li, lim.s);
    if (kstep)
      open_(g, S(g, "if (%s %s %s) ", i0, sv > 0 ? "<=" : ">=", li));
    else
      open_(g, S(g, "if (%s > 0 ? %s <= %s : %s >= %s) ", st, i0, li, i0, li));
  } else if (lim.t.m == M_FLT) {
    open_(g,
          S(g, "if (!orion_lua_forlimit(%s, %s, %s, &%s)) ", i0, as_d(g, lim),
            st, li));
  } else {
    open_(g, S(g,
               "if (%s.t == 3 ? (%s = %s.i, %s > 0 ? %s <= %s : "
               "%s >= %s) : !orion_lua_forlimit(%s, %s.d, %s, &%s)) ",
               lim.s, li, lim.s, st, i0, li, i0, li, i0, lim.s, st, li));
  }
  E(g, "O_U const uint64_t %s = %s;", cnt,
    kstep && sv == 1 ? S(g, "(uint64_t)%s - (uint64_t)%s", li, i0)
                     : S(g, "orion_lua_forcount(%s, %s, %s)", i0, li, st));
  hoist = g->emit && g->hk == NULL && !contains_loop(s->d) &&
          !touches(s->d, x->name) && x->t.k == T_VAL && x->t.m == M_INT;
  if (hoist) {
    const char *saved_suffix = g->suffix;
    orion_buf *fastb = tmpbuf(g), *saved = g->o;
    int ind = g->ind, i, neg = 0, lane = 0;
    var *sum = NULL, *ra = NULL, *rb = NULL;
    dastate mid = da_save(g);
    g->hk = x->name;
    g->nhnodes = 0;
    g->hnodes = NULL;
    g->nhconds = 0;
    find_keys(g, s->d, x->name);
    g->hfast = 1;
    g->suffix = S(g, "%s_f%d", saved_suffix, n);
    g->o = fastb;
    g->ind++;
    if (g->fast && kstep && sv == 1 &&
        (sum = dot_loop(g, s, &ra, &rb, &neg)) != NULL) {
      for (i = 0; i < g->nslots && g->kslot == 0; i++)
        if (g->slots[i].kind == ORION_CSLOT_CONST && g->slots[i].isint &&
            strcmp(g->slots[i].pfx, lim.s) == 0)
          g->kslot = 1 + i;
      open_(g, "");
      E(g, "uint64_t %s = 0;", tt);
      split_dot(g, sum, ra, rb, neg, i0, cnt, tt, n);
      open_(g, S(g, "for (; %s <= %s; %s++) ", tt, cnt, tt));
      lane = g->in->gpu && !g->nolane;
    } else if (lane_loop_ok(g, s)) {
      /* On the device each lane runs every 32nd iteration
       * (analysis/cgen_lane.c); O_LANE is 0 and O_LANES 1 elsewhere. */
      open_(g, S(g, "for (uint64_t %s = O_LANE; %s <= %s; %s += O_LANES) ",
                 tt, tt, cnt, tt));
      lane = g->inlane = 1;
    } else {
      open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    }
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
    if (g->inlane) {
      g->inlane = 0;
      E(g, "O_WSYNC();");
      /* A lane that leaves the loop early would leave the others waiting
       * at the warp's next meeting: emit the body again without lane
       * loops (orion_cgen). */
      if (has_text(fastb, "goto "))
        g->lanebad = 1;
    }
    if (sum != NULL)
      close_(g);
    g->ind = ind;
    g->o = saved;
    g->hfast = 0;
    g->hk = NULL;
    g->suffix = saved_suffix;
    da_restore(g, mid);
    if (fastb->oom)
      oom(g);
    if (g->nhconds > 0) {
      orion_buf *cond = tmpbuf(g);
      for (i = 0; i < g->nhconds; i++) {
        const char *lo = S(g, "%" PRId64, 1 - g->hconds[i].off);
        const char *hi =
            g->hconds[i].off == 0
                ? g->hconds[i].dim
                : S(g, "%s - %" PRId64, g->hconds[i].dim, g->hconds[i].off);
        const char *up = S(g, "%s >= %s && %s <= %s", i0, lo, li, hi);
        const char *down = S(g, "%s >= %s && %s <= %s", li, lo, i0, hi);
        const char *c1 = kstep ? (sv > 0 ? up : down)
                               : S(g, "(%s > 0 ? (%s) : (%s))", st, up, down);
        if (i > 0)
          orion_buf_append(cond, " && ", 4);
        orion_buf_append(cond, "(", 1);
        orion_buf_append(cond, c1, strlen(c1));
        orion_buf_append(cond, ")", 1);
      }
      orion_buf_append(cond, "", 1);
      if (cond->oom)
        oom(g);
      E(g, "/* The subscripts of the loop variable are in range for the "
           "whole loop. */");
      open_(g, S(g, "if %s ", cond_of(g, cond->data)));
      orion_buf_free(cond);
      orion_buf_append(g->o, fastb->data, fastb->len);
      close_(g);
      open_(g, "else ");
      g->suffix = S(g, "%s_s%d", saved_suffix, n);
    }
    if (lane && g->nhconds > 0)
      g->nlane++;
    orion_buf_free(fastb);
    open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
    if (g->nhconds > 0) {
      close_(g);
      g->suffix = saved_suffix;
    }
  } else {
    open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
  }
  close_(g);
}

/* A float loop: every control value converted to a float. */
static void flt_loop(gen *g, const ast_node *s, var *x, cv init, cv lim,
                     cv step, int n) {
  const char *f0 = S(g, "o_f%d", n), *fl = S(g, "o_fl%d", n),
             *fs = S(g, "o_fs%d", n), *fx = S(g, "o_x%d", n);
  E(g, "O_U const double %s = %s, %s = %s, %s = %s;", fl, as_d(g, lim), fs,
    as_d(g, step), f0, as_d(g, init));
  fail(g, S(g, "%s == 0", fs),
       S(g, "o_err(c, %d, \"'for' step is zero\")", s->line));
  open_(g, S(g, "if (0 < %s ? !(%s < %s) : !(%s < %s)) ", fs, fl, f0, f0, fl));
  open_(g, S(g, "for (double %s = %s;;) ", fx, f0));
  fail(g, "o_poll(c)", "1");
  for_body(g, s, x, cv_of(ty_val(M_FLT, P_WEAK), fx, 1));
  E(g, "%s += %s;", fx, fs);
  E(g, "if (!(0 < %s ? %s <= %s : %s <= %s)) break;", fs, fx, fl, fl, fx);
  close_(g);
  close_(g);
}

static void numfor(gen *g, const ast_node *s) {
  cv init = ex(g, s->a), lim = ex(g, s->b), step;
  var *x = get_var(g, s->list.v[0]);
  dastate before;
  lval one;
  int n = ++g->tmp;
  memset(&one, 0, sizeof one);
  one.m = M_INT;
  one.i = 1;
  step = s->c != NULL ? ex(g, s->c) : cv_k(g, one);
  init = mat(g, init);
  lim = mat(g, lim);
  step = mat(g, step);
  if (init.t.k == T_NONE || lim.t.k == T_NONE || step.t.k == T_NONE) {
    before = da_save(g);
    for_body(g, s, x, cv_none());
    da_restore(g, before);
    return;
  }
  numeric(g, init, s->line, "a 'for' initial value of");
  numeric(g, lim, s->line, "a 'for' limit of");
  numeric(g, step, s->line, "a 'for' step of");
  savepc(g, s->line);
  before = da_save(g);
  open_(g, "");
  if (init.t.m == M_INT && step.t.m == M_INT) {
    int_loop(g, s, x, init, lim, step, n);
  } else if (!isdyn(init.t) && !isdyn(step.t)) {
    flt_loop(g, s, x, init, lim, step, n);
  } else {
    /* An integer loop or a float loop, as the values turn out. */
    const char *saved = g->suffix;
    int canint = (init.t.m & M_INT) && (step.t.m & M_INT);
    if (canint) {
      cv ii = init, si = step;
      if (isdyn(ii.t))
        ii = cv_of(ty_val(M_INT, P_WEAK), S(g, "%s.i", init.s), 1);
      if (isdyn(si.t))
        si = cv_of(ty_val(M_INT, P_WEAK), S(g, "%s.i", step.s), 1);
      open_(g, S(g, "if (%s && %s) ",
                 isdyn(init.t) ? S(g, "%s.t == 3", init.s) : "1",
                 isdyn(step.t) ? S(g, "%s.t == 3", step.s) : "1"));
      g->suffix = S(g, "%s_i%d", saved, n);
      int_loop(g, s, x, ii, lim, si, n);
      close_(g);
      open_(g, "else ");
    }
    g->suffix = S(g, "%s_f%d", saved, n);
    flt_loop(g, s, x, init, lim, step, n);
    g->suffix = saved;
    if (canint)
      close_(g);
  }
  close_(g);
  da_restore(g, before);
}

static void while_(gen *g, const ast_node *s) {
  dastate before = da_save(g);
  cv c;
  open_(g, "for (;;) ");
  fail(g, "o_poll(c)", "1"); /* the loop deadline */
  c = ex(g, s->a);
  E(g, "if (!%s) break;", truth(g, c));
  block(g, s->b);
  close_(g);
  da_restore(g, before);
}

static void repeat_(gen *g, const ast_node *s) {
  dastate before = da_save(g);
  blkframe f;
  int base = g->nsc, i;
  cv c;
  open_(g, "for (;;) ");
  fail(g, "o_poll(c)", "1");
  /* The condition sees the body's locals: one scope for both. */
  f.stmts = &s->a->list;
  f.suffix = g->suffix;
  f.up = g->blk;
  g->blk = &f;
  for (i = 0; i < s->a->list.n; i++) {
    if (s->a->list.v[i]->kind == AST_LABEL)
      da_restore(g, before);
    stmt(g, s->a->list.v[i]);
  }
  c = ex(g, s->b);
  E(g, "if %s break;", cond_of(g, truth(g, c)));
  g->blk = f.up;
  g->nsc = base;
  close_(g);
  da_restore(g, before);
}

/* if / elseif / else.  A clause runs where the earlier conditions were
 * false and its own is true: the locals they test are narrowed there. */
static void if_(gen *g, const ast_node *s) {
  dastate before = da_save(g), after = da_dead();
  int i, j, opened = 0, nar = g->nnar;
  for (i = 0; i < s->list.n; i++) {
    cv c;
    for (j = 0; j < i; j++)
      narrow(g, s->list.v[j], 0, NULL);
    c = ex(g, s->list.v[i]);
    g->nnar = nar;
    open_(g, S(g, "if %s ", cond_of(g, truth(g, c))));
    for (j = 0; j < i; j++)
      narrow(g, s->list.v[j], 0, s->list2.v[i]);
    narrow(g, s->list.v[i], 1, s->list2.v[i]);
    stmts(g, &s->list2.v[i]->list);
    g->nnar = nar;
    close_(g);
    da_meet(g, &after);
    da_restore(g, before);
    open_(g, "else ");
    opened++;
  }
  if (s->c != NULL) {
    for (j = 0; j < s->list.n; j++)
      narrow(g, s->list.v[j], 0, s->c);
    stmts(g, &s->c->list);
    g->nnar = nar;
  }
  da_meet(g, &after);
  for (i = 0; i < opened; i++)
    close_(g);
  da_restore(g, after);
}

static void stmt(gen *g, const ast_node *s) {
  switch (s->kind) {
  case AST_LOCAL:
    local_(g, s);
    break;
  case AST_ASSIGN:
    assign(g, s);
    break;
  case AST_CALLSTAT:
    (void)exn(g, s->a, NULL, 0);
    break;
  case AST_DO:
    block(g, s->a);
    break;
  case AST_WHILE:
    while_(g, s);
    break;
  case AST_REPEAT:
    repeat_(g, s);
    break;
  case AST_IF:
    if_(g, s);
    break;
  case AST_NUMFOR:
    numfor(g, s);
    break;
  case AST_GENFOR:
    refuse(g, s->line, "a generic 'for' loop");
  case AST_FUNCSTAT:
  case AST_LOCALFUNC:
    refuse(g, s->line, "a function definition");
  case AST_RETURN:
    return_(g, s);
    break;
  case AST_BREAK:
    E(g, "break;");
    g->dead = 1;
    break;
  case AST_GOTO:
    goto_(g, s);
    break;
  case AST_LABEL:
    E(g, "o_L%d%s: O_U;", label_id(g, s), g->blk->suffix);
    fail(g, "o_poll(c)", "1"); /* a goto back here loops */
    break;
  case AST_SEMI:
    break;
  default:
    refuse(g, s->line, "a %s statement", orion_ast_kind_name(s->kind));
  }
}

