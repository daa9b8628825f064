/* Expressions for the C code generator: constants and Lua's constant
 * folding, arithmetic, bitwise and comparison operators with Lua 5.4's
 * semantics, `and`/`or`, names, array and buffer elements and slices
 * (with their subscript checks, hoisted out of innermost integer loops
 * where they can be), stores, and the dispatcher over expression kinds.
 * Evaluation order follows the Lua compiler, so the first error is the
 * interpreter's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/luaops.h"
#include "analysis/cgen_int.h"

/* ======================================================================
 * Expressions: constants, operators.
 * ====================================================================== */

static int fprec(cv v) { return v.t.m == M_FLT ? v.t.prec : P_WEAK; }

static int maxi(int a, int b) { return a > b ? a : b; }

/* " (local 'x')" as Lua's varinfo would say it, or "". */
static const char *vinfo(gen *g, cv v) {
  static const char *const kind[] = {"", "local", "upvalue", "global", "field"};
  if (v.vi == VI_NONE)
    return "";
  return S(g, " (%s '%s')", kind[v.vi], v.vn);
}

/* Refuses v unless it is surely a number (T_NONE passes: unreached). */
void numeric(gen *g, cv v, int line, const char *what) {
  if (v.t.k == T_NONE || is_num(v))
    return;
  refuse(g, line, "%s %s%s", what, ty_text(g, v.t), vinfo(g, v));
}

static int k_toint(lval v, int64_t *i) {
  if (v.m == M_INT) {
    *i = v.i;
    return 1;
  }
  return v.m == M_FLT && orion_lua_f2i(v.d, i) == ORION_LUAOP_OK;
}

/* Lua's constant folding (lcode.c): 1 and *r when `a op b` folds. */
static int fold(int op, lval a, lval b, lval *r) {
  int64_t x, y;
  double p, q, d;
  if ((a.m != M_INT && a.m != M_FLT) || (b.m != M_INT && b.m != M_FLT))
    return 0;
  memset(r, 0, sizeof *r);
  switch (op) {
  case OP_BAND:
  case OP_BOR:
  case OP_BXOR:
  case OP_SHL:
  case OP_SHR:
  case OP_BNOT:
    if (!k_toint(a, &x) || !k_toint(b, &y))
      return 0;
    r->m = M_INT;
    r->i = op == OP_BAND   ? (x & y)
           : op == OP_BOR  ? (x | y)
           : op == OP_BXOR ? (x ^ y)
           : op == OP_SHL  ? orion_lua_shl(x, y)
           : op == OP_SHR  ? orion_lua_shr(x, y)
                           : ~x;
    return 1;
  case OP_DIV:
  case OP_IDIV:
  case OP_MOD:
    if (k_tonum(b) == 0)
      return 0;
    break;
  default:
    break;
  }
  if (op != OP_DIV && op != OP_POW && a.m == M_INT && b.m == M_INT) {
    r->m = M_INT;
    switch (op) {
    case OP_ADD:
      r->i = orion_lua_iadd(a.i, b.i);
      break;
    case OP_SUB:
      r->i = orion_lua_isub(a.i, b.i);
      break;
    case OP_MUL:
      r->i = orion_lua_imul(a.i, b.i);
      break;
    case OP_IDIV:
      orion_lua_idiv(a.i, b.i, &r->i);
      break;
    case OP_MOD:
      orion_lua_imod(a.i, b.i, &r->i);
      break;
    case OP_NEG:
      r->i = orion_lua_iunm(a.i);
      break;
    default:
      return 0;
    }
    return 1;
  }
  p = k_tonum(a);
  q = k_tonum(b);
  switch (op) {
  case OP_ADD:
    d = p + q;
    break;
  case OP_SUB:
    d = p - q;
    break;
  case OP_MUL:
    d = p * q;
    break;
  case OP_DIV:
    d = p / q;
    break;
  case OP_IDIV:
    d = floor(p / q);
    break;
  case OP_MOD:
    d = orion_lua_fmod(p, q);
    break;
  case OP_POW:
    d = orion_lua_pow(p, q);
    break;
  case OP_NEG:
    d = -p;
    break;
  default:
    return 0;
  }
  if (isnan(d) || d == 0)
    return 0;
  r->m = M_FLT;
  r->d = d;
  return 1;
}

/* v converted to an integer in a new temporary, failing with `call`
 * (an error-reporting C expression) when it has no integer value.  The
 * one conversion of a float or a run-time number to an integer: bitwise
 * operands, subscripts, integer stores and integer arguments use it. */
const char *int_or_fail(gen *g, cv v, const char *call) {
  const char *t = newtmp(g);
  E(g, "O_U int64_t %s = 0;", t);
  if (v.t.m == M_FLT) {
    fail(g, S(g, "orion_lua_f2i(%s, &%s) != ORION_LUAOP_OK", as_d(g, v), t),
         call);
  } else {
    v = mat(g, v);
    E(g,
      "if (%s.t == 3) %s = %s.i; "
      "else if (O_NO(orion_lua_f2i(%s.d, &%s) != ORION_LUAOP_OK)) "
      "{ o_rc = %s; goto o_out; }",
      v.s, t, v.s, v.s, t, call);
  }
  return t;
}

/* v as an integer for a bitwise operation ("number has no integer
 * representation" otherwise); a simple C expression. */
static const char *toint(gen *g, cv v, int line) {
  if (v.t.m == M_INT)
    return mat(g, v).s;
  return int_or_fail(
      g, v, S(g, "o_err_noint(c, %d, %s)", line, cstr(g, vinfo(g, v))));
}

/* Integer `//` or `%` of a by b (both integers). */
static const char *int_divmod(gen *g, int op, cv *a, cv *b) {
  const char *fn = op == OP_IDIV ? "orion_lua_idiv_nz" : "orion_lua_imod_nz";
  const char *msg =
      op == OP_IDIV ? "attempt to divide by zero" : "attempt to perform 'n%0'";
  if (b->isk && b->k.m == M_INT && b->k.i != 0)
    return S(g, "%s(%s, %s)", fn, a->s, b->s);
  *a = mat(g, *a);
  *b = mat(g, *b);
  fail(g, S(g, "%s == 0", b->s), S(g, "o_err(c, %s, \"%s\")", pcline(g), msg));
  return S(g, "%s(%s, %s)", fn, a->s, b->s);
}

static cv arith(gen *g, int op, cv a, cv b, int line) {
  int bit = op >= OP_BAND && op <= OP_SHR, prec, tofloat;
  const char *x, *y;
  lval k;
  if (a.t.k == T_NONE || b.t.k == T_NONE)
    return cv_none();
  numeric(g, a, line, bit ? "a bitwise operation on" : "arithmetic on");
  numeric(g, b, line, bit ? "a bitwise operation on" : "arithmetic on");
  if (a.isk && b.isk && fold(op, a.k, b.k, &k))
    return cv_k(g, k);
  if (bit) {
    static const char *const pre[] = {"(", "(", "(", "orion_lua_shl(",
                                       "orion_lua_shr("};
    static const char *const mid[] = {" & ", " | ", " ^ ", ", ", ", "};
    x = toint(g, a, line);
    y = toint(g, b, line);
    return cv_of(ty_val(M_INT, P_WEAK),
                 S(g, "%s%s%s%s)", pre[op - OP_BAND], x, mid[op - OP_BAND], y),
                 0);
  }
  prec = maxi(fprec(a), fprec(b));
  tofloat = g->fast && prec == P_F32;
  if (op == OP_DIV)
    return cv_of(ty_val(M_FLT, prec),
                 S(g, "(%s / %s)", as_f(g, a, prec), as_f(g, b, prec)), 0);
  if (op == OP_POW) {
    const char *s = S(g, "orion_lua_pow(%s, %s)", as_d(g, a), as_d(g, b));
    return cv_of(ty_val(M_FLT, prec), tofloat ? S(g, "((float)%s)", s) : s, 0);
  }
  if (a.t.m == M_INT && b.t.m == M_INT) {
    const char *s;
    switch (op) {
    case OP_ADD:
      s = S(g, "orion_lua_iadd(%s, %s)", a.s, b.s);
      break;
    case OP_SUB:
      s = S(g, "orion_lua_isub(%s, %s)", a.s, b.s);
      break;
    case OP_MUL:
      s = S(g, "orion_lua_imul(%s, %s)", a.s, b.s);
      break;
    default:
      s = int_divmod(g, op, &a, &b);
      break;
    }
    return cv_of(ty_val(M_INT, P_WEAK), s, 0);
  }
  if (a.t.m == M_FLT || b.t.m == M_FLT) {
    const char *s;
    x = as_f(g, a, prec);
    y = as_f(g, b, prec);
    switch (op) {
    case OP_ADD:
      s = S(g, "(%s + %s)", x, y);
      break;
    case OP_SUB:
      s = S(g, "(%s - %s)", x, y);
      break;
    case OP_MUL:
      s = S(g, "(%s * %s)", x, y);
      break;
    case OP_IDIV:
      s = S(g, "%s(%s / %s)", tofloat ? "floorf" : "floor", x, y);
      break;
    default:
      s = S(g, "%s(%s, %s)", tofloat ? "o_fmodf" : "orion_lua_fmod", x,
            y);
      break;
    }
    return cv_of(ty_val(M_FLT, prec), s, 0);
  }
  /* Integers or floats known only at run time. */
  x = as_v(g, a);
  y = as_v(g, b);
  if (op == OP_ADD || op == OP_SUB || op == OP_MUL) {
    static const char *const fn[] = {"o_vadd", "o_vsub", "o_vmul"};
    return cv_of(ty_val(M_NUM, P_WEAK), S(g, "%s(%s, %s)", fn[op], x, y), 0);
  } else {
    const char *t = newtmp(g), *p = newtmp(g), *q = newtmp(g);
    int idiv = op == OP_IDIV;
    E(g, "O_U const o_v %s = %s, %s = %s;", p, x, q, y);
    E(g, "O_U o_v %s;", t);
    open_(g, S(g, "if (%s.t == 3 && %s.t == 3) ", p, q));
    fail(g, S(g, "%s.i == 0", q),
         S(g, "o_err(c, %s, \"%s\")", pcline(g),
           idiv ? "attempt to divide by zero" : "attempt to perform 'n%0'"));
    E(g, "%s = o_vi(%s(%s.i, %s.i));", t,
      idiv ? "orion_lua_idiv_nz" : "orion_lua_imod_nz", p, q);
    close_(g);
    E(g, "else %s = o_vf(%s(o_vn(%s), o_vn(%s)));", t,
      idiv ? "orion_lua_fidiv" : "orion_lua_fmod", p, q);
    return cv_of(ty_val(M_NUM, P_WEAK), t, 1);
  }
}

static int small_int(int64_t i) {
  return i >= -(INT64_C(1) << 53) && i <= (INT64_C(1) << 53);
}

/* a < b (le: a <= b) for numbers. */
const char *less(gen *g, cv a, cv b, int le) {
  const char *op = le ? "<=" : "<";
  if (a.t.m == M_INT && b.t.m == M_INT)
    return S(g, "(%s %s %s)", a.s, op, b.s);
  if (a.t.m == M_FLT && b.t.m == M_FLT)
    return S(g, "(%s %s %s)", a.s, op, b.s);
  /* An integer constant of at most 2^53 converts exactly: Lua then
   * compares as floats (LTintfloat), and so can C. */
  if (a.t.m == M_INT && b.t.m == M_FLT && a.isk && small_int(a.k.i))
    return S(g, "(%s %s %s)", flt_lit(g, (double)a.k.i), op, b.s);
  if (a.t.m == M_FLT && b.t.m == M_INT && b.isk && small_int(b.k.i))
    return S(g, "(%s %s %s)", a.s, op, flt_lit(g, (double)b.k.i));
  if (a.t.m == M_INT && b.t.m == M_FLT)
    return S(g, "orion_lua_%s_if(%s, %s)", le ? "le" : "lt", a.s,
             as_d(g, b));
  if (a.t.m == M_FLT && b.t.m == M_INT)
    return S(g, "orion_lua_%s_fi(%s, %s)", le ? "le" : "lt", as_d(g, a),
             b.s);
  return S(g, "o_v%s(%s, %s)", le ? "le" : "lt", as_v(g, a), as_v(g, b));
}

/* Lua's == on two values. */
static const char *equal(gen *g, cv a, cv b) {
  int am = a.t.m, bm = b.t.m;
  if (!isdyn(a.t) && !isdyn(b.t)) {
    if ((am & M_NUM) && (bm & M_NUM)) {
      if (am == bm)
        return S(g, "(%s == %s)", a.s, b.s);
      if (am == M_INT && a.isk && small_int(a.k.i))
        return S(g, "(%s == %s)", flt_lit(g, (double)a.k.i), b.s);
      if (bm == M_INT && b.isk && small_int(b.k.i))
        return S(g, "(%s == %s)", a.s, flt_lit(g, (double)b.k.i));
      return am == M_INT ? S(g, "orion_lua_eq_if(%s, %s)", a.s, as_d(g, b))
                         : S(g, "orion_lua_eq_if(%s, %s)", b.s, as_d(g, a));
    }
    if ((am & M_BOOL) && (bm & M_BOOL))
      return S(g, "(%s == %s)", a.s, b.s);
    if (am == M_NIL && bm == M_NIL)
      return "1";
    return "0";
  }
  return S(g, "o_veq(%s, %s)", as_v(g, a), as_v(g, b));
}

static cv compare(gen *g, int op, cv a, cv b, int line) {
  ty tb = ty_val(M_BOOL, P_WEAK);
  if (a.t.k == T_NONE || b.t.k == T_NONE)
    return cv_of(tb, "0", 1);
  if (op == OP_EQ || op == OP_NE) {
    const char *s;
    if (a.t.k != T_VAL || b.t.k != T_VAL)
      refuse(g, line, "a comparison of %s",
             ty_text(g, a.t.k != T_VAL ? a.t : b.t));
    /* OP_EQ (two registers) saves the pc; EQK and EQI do not. */
    if (!a.isk && !b.isk)
      savepc(g, line);
    s = equal(g, a, b);
    return cv_of(tb, op == OP_NE ? S(g, "(!%s)", s) : s, 0);
  }
  numeric(g, a, line, "a comparison with");
  numeric(g, b, line, "a comparison with");
  switch (op) {
  case OP_LT:
    return cv_of(tb, less(g, a, b, 0), 0);
  case OP_LE:
    return cv_of(tb, less(g, a, b, 1), 0);
  case OP_GT:
    return cv_of(tb, less(g, b, a, 0), 0);
  default:
    return cv_of(tb, less(g, b, a, 1), 0);
  }
}

/* `a and b`, `a or b`: b runs only when needed; the result has the
 * types of a's deciding values and b's. */
static cv logic(gen *g, const ast_node *e) {
  int isand = e->op == OP_AND, cant, canf, nar;
  cv a = ex(g, e->a), b, r;
  orion_buf *sub, *saved = g->o;
  const char *t;
  ty rt;
  if (a.t.k == T_NONE) {
    (void)ex(g, e->b);
    return cv_none();
  }
  cant = a.t.k != T_VAL || (a.t.m & M_TRUTHY);
  canf = a.t.k == T_VAL && (a.t.m & M_FALSY);
  if (isand ? !cant : !canf)
    return a;
  if (isand ? !canf : !cant) {
    nar = g->nnar;
    narrow(g, e->a, isand, NULL);
    r = ex(g, e->b);
    g->nnar = nar;
    return r;
  }
  a = mat(g, a);
  sub = tmpbuf(g);
  g->o = sub;
  g->ind++;
  nar = g->nnar;
  narrow(g, e->a, isand, NULL);
  b = ex(g, e->b);
  g->nnar = nar;
  g->ind--;
  g->o = saved;
  if (sub->oom)
    oom(g);
  if (b.t.k != T_VAL && b.t.k != T_NONE)
    refuse(g, e->line, "'%s' with %s", isand ? "and" : "or", ty_text(g, b.t));
  rt = ty_val(a.t.m & (isand ? M_FALSY : M_TRUTHY), a.t.prec);
  (void)ty_join(g, &rt, b.t, e->line, "?");
  t = newtmp(g);
  E(g, "O_U %s%s;", ctype(g, rt), t);
  open_(g, S(g, "if %s ",
             cond_of(g, S(g, "%s%s", isand ? "" : "!", truth(g, a)))));
  orion_buf_append(g->o, sub->data, sub->len);
  orion_buf_free(sub);
  E(g, "%s = %s;", t, conv(g, b, rt));
  close_(g);
  E(g, "else %s = %s;", t, conv(g, a, rt));
  r = cv_of(rt, t, 1);
  return r;
}

/* ======================================================================
 * Expressions: names, array elements and slices.
 * ====================================================================== */

static cv name_ref(gen *g, const ast_node *e) {
  var *v = lookup(g, e->str);
  fname *f;
  cv r;
  int s, i;
  if (v != NULL) {
    if (v->isk) {
      r = cv_k(g, v->k);
      return r;
    }
    for (i = g->nnar - 1; i >= 0; i--)
      if (g->nar[i].v == v) {
        r = cv_of(g->nar[i].t, conv(g, cv_of(v->t, v->cname, 1), g->nar[i].t),
                  1);
        r.vi = VI_LOCAL;
        r.vn = v->name;
        return r;
      }
    if (!g->dead && !v->da && v->noinit)
      var_join(g, v, ty_val(M_NIL, P_WEAK), e->line);
    r = cv_of(v->t, v->cname, 1);
    r.vi = VI_LOCAL;
    r.vn = v->name;
    return r;
  }
  f = free_name(g, e->str);
  switch (f->b.kind) {
  case ORION_BIND_ARRAY:
    if (f->b.arr.sparse)
      refuse(g, e->line,
             "the sparse array '%s' (only dense arrays can be "
             "indexed in a body)",
             e->str);
    if (f->b.arr.ndims < 1 || f->b.arr.ndims > ORION_CBODY_MAXDIMS ||
        f->b.arr.type < 0 || f->b.arr.type > 3)
      refuse(g, e->line, "the array '%s' of an unknown shape", e->str);
    s = new_slot(g, f, ORION_CSLOT_ARRAY);
    r = cv_of(ty_val(0, 0), S(g, "%s_v", g->slots[s].pfx), 1);
    r.t.k = T_REF;
    r.t.slot = s;
    r.t.depth = 0;
    return r;
  case ORION_BIND_BUFFER:
    if (f->b.arr.ndims < 1 || f->b.arr.ndims > ORION_CBODY_MAXDIMS ||
        f->b.arr.type < 0 || f->b.arr.type > 3)
      refuse(g, e->line, "the buffer '%s' of an unknown shape", e->str);
    s = new_slot(g, f, ORION_CSLOT_BUFFER);
    r = cv_of(ty_val(0, 0), "0", 1);
    r.t.k = T_REF;
    r.t.slot = s;
    r.t.depth = 0;
    return r;
  case ORION_BIND_ACC:
    s = new_slot(g, f, ORION_CSLOT_ACC);
    r = cv_of(ty_val(0, 0), g->slots[s].pfx, 1);
    r.t.k = T_ACC;
    r.t.slot = s;
    return r;
  case ORION_BIND_NUMBER:
    s = new_slot(g, f, ORION_CSLOT_CONST);
    r = cv_of(ty_val(f->b.is_int ? M_INT : M_FLT, P_WEAK), g->slots[s].pfx, 1);
    r.vi = f->scope == SC_GLOBAL ? VI_GLOBAL : VI_UPVAL;
    r.vn = f->name;
    return r;
  case ORION_BIND_BUILTIN:
    if (strcmp(e->str, "math") == 0) {
      /* A global is read through the body's _ENV, whose __index saves the
       * pc (executor/capture.c keeps the standard library out of _ENV). */
      if (f->scope != SC_UPVAL)
        savepc(g, e->line);
      r = cv_none();
      r.t.k = T_MATH;
      return r;
    }
    refuse(g, e->line, "the standard-library value '%s'", e->str);
  case ORION_BIND_FUNC:
    refuse(g, e->line, "the function '%s' used as a value", e->str);
  case ORION_BIND_VALUE:
    refuse(g, e->line,
           "the value '%s' (a string, boolean or table captured by the body)",
           e->str);
  default:
    refuse(g, e->line, "the unbound name '%s'", e->str);
  }
}

/* The key node of an access the enclosing loop checks in advance. */
static int hoisted(gen *g, const ast_node *key, int64_t *off) {
  int i;
  if (!g->hfast || g->hk == NULL)
    return 0;
  for (i = 0; i < g->nhnodes; i++)
    if (g->hnodes[i] == key) {
      *off = 0;
      if (key->kind == AST_BINOP)
        *off = key->a->kind == AST_INT
                   ? key->a->ival
                   : (key->op == OP_SUB ? -key->b->ival : key->b->ival);
      return 1;
    }
  return 0;
}

/* The subscript k of dimension `depth` of slot s as a checked 1-based
 * integer (a simple C expression). */
/* Which iterated key a first subscript is: the key's index, or -1 (a
 * name of the body's key parameters that the body never assigns). */
static int key_param(gen *g, const ast_node *keynode) {
  const ast_node *f = g->in->func;
  int i;
  if (keynode == NULL || keynode->kind != AST_NAME)
    return -1;
  for (i = 0; i < f->params.n && i < g->in->iter.ndims; i++)
    if (strcmp(f->params.v[i]->str, keynode->str) == 0)
      return lookup(g, keynode->str) == get_var(g, f->params.v[i]) &&
                     !touches(f->a, keynode->str)
                 ? i
                 : -1;
  return -1;
}

static const char *subscript(gen *g, const slot *s, int depth, cv k,
                             const ast_node *keynode, int line) {
  const char *kk, *dim = S(g, "%s_d%d", s->pfx, depth);
  int64_t off;
  if (g->emit && depth == 0 && s->kind == ORION_CSLOT_ARRAY) {
    /* The rows a block reaches (orion_gbody_rowkey). */
    slot *w = &g->slots[s - g->slots];
    int d = key_param(g, keynode);
    if (d < 0 || (w->rowkey != 0 && w->rowkey != d + 1))
      w->rowkey = -1;
    else
      w->rowkey = d + 1;
  }
  if (k.t.k == T_NONE)
    return "1";
  if (!is_num(k))
    refuse(g, line, "a subscript of %s that is %s%s", s->name, ty_text(g, k.t),
           vinfo(g, k));
  k = mat(g, k);
  if (k.t.m == M_INT) {
    kk = k.s;
  } else {
    kk = int_or_fail(g, k,
                     S(g, "o_err_sub(c, %d, o_w%d, %s)", line,
                       (int)(s - g->slots), as_d(g, k)));
  }
  if (hoisted(g, keynode, &off)) {
    int i;
    for (i = 0; i < g->nhconds; i++)
      if (strcmp(g->hconds[i].dim, dim) == 0 && g->hconds[i].off == off)
        return kk;
    grow(g, (void **)&g->hconds, &g->caphconds, g->nhconds, sizeof *g->hconds);
    g->hconds[g->nhconds].dim = dim;
    g->hconds[g->nhconds++].off = off;
    return kk;
  }
  fail(g, S(g, "(uint64_t)%s - 1u >= (uint64_t)%s", kk, dim),
       S(g, "o_err_index(c, %d, o_w%d, %s, %s, %d)", line, (int)(s - g->slots),
         kk, dim, depth + 1));
  return kk;
}

/* The linear position (offset or pointer) of subscript kk below o. */
static const char *position(gen *g, cv o, const char *kk) {
  const slot *s = &g->slots[o.t.slot];
  int last = o.t.depth + 1 == s->ndims;
  if ((s->kind == ORION_CSLOT_ARRAY || s->kind == ORION_CSLOT_BUFFER) && last)
    return S(g, "(%s + (%s - 1))", o.s, kk); /* stride 1, checked */
  return S(g, "(%s + (%s - 1) * %s_s%d)", o.s, kk, s->pfx, o.t.depth);
}

/* The pending value of buffer slot s's element at pos. */
static cv buffer_read(gen *g, const slot *s, const char *pos) {
  const char *t = newtmp(g);
  int isint = s->etype == ET_I32 || s->etype == ET_I64;
  /* Inline from the dense store when there is one (util/cbody.h), as
   * the member's type (a load the element loops vectorize). */
  E(g,
    "O_U const %s %s = %sO_BDENSE || %s_v != NULL ? ((const %s *)%s_v)[%s] : "
    "c->buf_get(c, %s_h, %s).%c;",
    isint ? "int64_t" : "double", t,
    f32buf(g, s) ? S(g, "O_BF32 ? (double)%s_f[%s] : ", s->pfx, pos) : "",
    s->pfx, isint ? "int64_t" : "double", s->pfx, pos, s->pfx, pos,
    isint ? 'i' : 'd');
  return cv_of(ty_val(isint ? M_INT : M_FLT, P_WEAK), t, 1);
}

/* o[k] for an array, buffer or slice o. */
static cv index_get(gen *g, cv o, cv k, const ast_node *keynode, int line) {
  const slot *s = &g->slots[o.t.slot];
  const char *kk, *pos;
  cv r;
  savepc(g, line);
  kk = subscript(g, s, o.t.depth, k, keynode, line);
  pos = position(g, o, kk);
  if (o.t.depth + 1 < s->ndims) {
    r = cv_of(o.t, pos, 0);
    r.t.depth++;
    return r;
  }
  if (s->kind == ORION_CSLOT_BUFFER) {
    gpu_note(g, line, "a buffer read (orion.buffer '%.63s') runs on the CPU",
             s->name);
    r = buffer_read(g, s, pos);
  } else {
    switch (s->etype) {
    case ET_F32:
      r = cv_of(ty_val(M_FLT, P_F32),
                g->fast ? S(g, "(*%s)", pos) : S(g, "((double)*%s)", pos), 0);
      break;
    case ET_F64:
      r = cv_of(ty_val(M_FLT, P_F64), S(g, "(*%s)", pos), 0);
      break;
    case ET_I32:
      r = cv_of(ty_val(M_INT, P_WEAK), S(g, "((int64_t)*%s)", pos), 0);
      break;
    default:
      r = cv_of(ty_val(M_INT, P_WEAK), S(g, "(*%s)", pos), 0);
      break;
    }
  }
  r.vi = VI_FIELD;
  r.vn = (k.isk && k.k.m == M_INT && k.k.i >= 0 && k.k.i <= 255)
             ? "integer index"
             : "?";
  return r;
}

/* Stores v (already evaluated) into the element at `dest` (an lvalue) of
 * an array of element type et, or through buffer slot s at position pos,
 * with store_elem's and buffer_store's checks.  tail names the target for
 * messages ("f32 array 'W'"), what without the type ("array 'W'"). */
void store_value(gen *g, cv v, int et, const char *dest, const slot *bs,
                        const char *pos, const char *tail, const char *what,
                        int line) {
  int toint = et == ET_I32 || et == ET_I64;
  const char *val;
  if (v.t.k == T_NONE)
    return;
  if (v.t.k != T_VAL)
    refuse(g, line > 0 ? line : -line, "storing %s in an array",
           ty_text(g, v.t));
  if (!(v.t.m & M_NUM)) {
    fail(g, NULL,
         S(g, "o_err_type(c, %d, %d, %s)", line, v.t.m == M_NIL ? 0 : 1, tail));
    return;
  }
  v = mat(g, v);
  if (isdyn(v.t) && (v.t.m & (M_NIL | M_BOOL)))
    fail(g, S(g, "%s.t < 3", v.s),
         S(g, "o_err_type(c, %d, %s.t, %s)", line, v.s, tail));
  if (toint) {
    if (v.t.m == M_INT)
      val = v.s;
    else
      val = int_or_fail(g, v,
                        S(g, "o_err_notint(c, %d, %s, %s)", line,
                          isdyn(v.t) ? S(g, "%s.d", v.s) : as_d(g, v), tail));
    if (et == ET_I32)
      fail(g,
           S(g, "%s(%s < INT32_MIN || %s > INT32_MAX)",
             bs != NULL ? S(g, "%s_op == 1 && ", bs->pfx) : "", val, val),
           S(g, "o_err_range(c, %d, %s, %s)", line, val, what));
  } else if (bs == NULL && et == ET_F32 && fastf(g, v.t)) {
    val = v.s;
  } else {
    val = as_d(g, v);
  }
  if (bs != NULL) {
    const char *t = newtmp(g), *t2 = newtmp(g), *k = newtmp(g);
    const char *p = bs->pfx;
    E(g, "O_U orion_cval %s;", t);
    E(g, "int %s = 0;", t2);
    E(g, "%s.%c = %s;", t, toint ? 'i' : 'd', val);
    /* The dense store inline: mark the key as dsm/wbuf.c does (not in a
     * scan store, bits NULL, nor in the copy of the body for scan stores,
     * O_BDENSE), then store (util/cbody.h); else the call. */
    if (f32buf(g, bs)) /* the f32 copy's floats, unmarked */
      E(g, "if (O_BF32) %s_f[%s] = (float)%s.d; else", p, pos, t);
    E(g, "if (O_BDENSE || %s_v != NULL) {", p);
    E(g, "  const int64_t %s = %s;", k, pos);
    E(g, "  if (!O_BDENSE && %s_b != NULL && "
         "!(%s_b[%s >> 6] & ((uint64_t)1 << (%s & 63)))) {", p, p, k, k);
    E(g, "    %s_b[%s >> 6] |= (uint64_t)1 << (%s & 63);", p, k, k);
    E(g, "    if (*%s_n < %s_m) %s_l[*%s_n] = %s;", p, p, p, p, k);
    E(g, "    ++*%s_n;", p);
    E(g, "  }");
    E(g, "  ((%s *)%s_v)[%s] = %s.%c;", toint ? "int64_t" : "double", p, k, t,
      toint ? 'i' : 'd');
    E(g, "} else");
    E(g, "%s = c->buf_set(c, %s_h, %s, %s);", t2, p, pos, t);
    fail(g, S(g, "%s != 0", t2), t2);
  } else if (g->in->gpu && !g->inlane) {
    /* Lane 0's store when a warp runs the body (analysis/cgen_lane.c). */
    E(g, "O_ST1(%s = (%s)%s);", dest, etype_c(et), val);
  } else {
    E(g, "%s = (%s)%s;", dest, etype_c(et), val);
  }
}

/* o[k] = v. */
void index_set(gen *g, cv o, cv k, const ast_node *keynode, cv v,
                      int line) {
  const slot *s;
  const char *kk, *pos;
  int i = o.t.slot;
  if (o.t.k == T_NONE)
    return;
  s = &g->slots[i];
  savepc(g, line);
  if (o.t.depth + 1 != s->ndims) {
    const char *kind = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    const char *msg =
        o.t.depth == 0
            ? S(g,
                "%s '%.63s' has %d dimensions: assign to an element "
                "(%.63s[i][j] = x), not to a slice",
                kind, s->name, s->ndims, s->name)
            : S(g, "%s '%.63s': assign to an element, not to a slice", kind,
                s->name);
    fail(g, NULL, S(g, "o_err(c, %d, %s)", line, cstr(g, msg)));
    return;
  }
  kk = subscript(g, s, o.t.depth, k, keynode, line);
  pos = position(g, o, kk);
  if (s->kind == ORION_CSLOT_BUFFER) {
    gpu_note(g, line, "a buffer write (orion.buffer '%.63s') runs on the CPU",
             s->name);
    store_value(g, v, s->etype, NULL, s, pos, S(g, "o_t%d", i),
                S(g, "o_w%d", i), line);
  } else {
    if (g->emit && !g->slots[i].written)
      g->slots[i].wline = line;
    if (g->emit)
      g->slots[i].written = 1;
    store_value(g, v, s->etype, S(g, "*%s", pos), NULL, NULL, S(g, "o_t%d", i),
                S(g, "o_w%d", i), line);
  }
}

/* `a[b]` and `a.name` as an expression. */
static cv index_expr(gen *g, const ast_node *e);

static cv math_field(gen *g, const ast_node *e) {
  const char *f = e->b->str;
  lval k;
  cv r;
  memset(&k, 0, sizeof k);
  if (!e->flag || e->b->kind != AST_STR)
    refuse(g, e->line, "indexing the math table with a computed key");
  if (strcmp(f, "pi") == 0) {
    k.m = M_FLT;
    k.d = 3.141592653589793238462643383279502884;
  } else if (strcmp(f, "huge") == 0) {
    k.m = M_FLT;
    k.d = HUGE_VAL;
  } else if (strcmp(f, "maxinteger") == 0) {
    k.m = M_INT;
    k.i = INT64_MAX;
  } else if (strcmp(f, "mininteger") == 0) {
    k.m = M_INT;
    k.i = INT64_MIN;
  } else {
    refuse(g, e->line, "the value 'math.%s'", f);
  }
  /* A field read at run time: not a Lua constant.  math is a read-only
   * view in a body's sandbox (executor/exec_sandbox.c): the read goes through
   * __index, which saves the pc. */
  savepc(g, e->line);
  r = cv_k(g, k);
  r.isk = 0;
  r.vi = VI_FIELD;
  r.vn = f;
  return r;
}

static cv index_expr(gen *g, const ast_node *e) {
  cv o = ex(g, e->a), k;
  if (o.t.k == T_MATH)
    return math_field(g, e);
  if (o.t.k == T_NONE) {
    if (!e->flag)
      (void)ex(g, e->b);
    return cv_none();
  }
  if (o.t.k != T_REF)
    refuse(g, e->line, "indexing %s%s", ty_text(g, o.t), vinfo(g, o));
  if (e->flag)
    refuse(g, e->line, "the field '%s' of %s", e->b->str, ty_text(g, o.t));
  k = ex(g, e->b);
  return index_get(g, o, k, e->b, e->line);
}

/* ======================================================================
 * Expressions: the dispatcher.
 * ====================================================================== */

static cv unop(gen *g, const ast_node *e) {
  cv a = ex(g, e->a);
  lval k, zero;
  memset(&zero, 0, sizeof zero);
  zero.m = M_INT;
  switch (e->op) {
  case OP_NOT:
    if (a.isk) {
      memset(&k, 0, sizeof k);
      k.m = (a.k.m & M_FALSY) ? M_TRUE : M_FALSE;
      return cv_k(g, k);
    }
    return cv_of(ty_val(M_BOOL, P_WEAK), S(g, "(!%s)", truth(g, a)), 0);
  case OP_NEG:
  case OP_BNOT:
    if (a.t.k == T_NONE)
      return a;
    numeric(g, a, e->line,
            e->op == OP_NEG ? "arithmetic on" : "a bitwise operation on");
    if (a.isk && fold(e->op, a.k, zero, &k))
      return cv_k(g, k);
    if (e->op == OP_BNOT)
      return cv_of(ty_val(M_INT, P_WEAK), S(g, "(~%s)", toint(g, a, e->line)),
                   0);
    if (a.t.m == M_INT)
      return cv_of(a.t, S(g, "orion_lua_iunm(%s)", a.s), 0);
    if (a.t.m == M_FLT)
      return cv_of(a.t, S(g, "(-%s)", a.s), 0);
    return cv_of(a.t, S(g, "o_vneg(%s)", a.s), 0);
  default: /* OP_LEN */
    if (a.t.k == T_NONE)
      return cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    if (a.t.k == T_ROW) /* the row's pairs */
      return cv_of(ty_val(M_INT, P_WEAK), "(o_re - o_e)", 1);
    if (a.t.k != T_REF)
      refuse(g, e->line, "the length of %s", ty_text(g, a.t));
    savepc(g, e->line);
    return cv_of(ty_val(M_INT, P_WEAK),
                 S(g, "%s_d%d", g->slots[a.t.slot].pfx, a.t.depth), 1);
  }
}

cv ex(gen *g, const ast_node *e) {
  lval k;
  memset(&k, 0, sizeof k);
  switch (e->kind) {
  case AST_NIL:
    return cv_nil(g);
  case AST_TRUE:
  case AST_FALSE:
    k.m = e->kind == AST_TRUE ? M_TRUE : M_FALSE;
    return cv_k(g, k);
  case AST_INT:
    k.m = M_INT;
    k.i = e->ival;
    return cv_k(g, k);
  case AST_FLT:
    k.m = M_FLT;
    k.d = e->fval;
    return cv_k(g, k);
  case AST_STR:
    refuse(g, e->line, "a string value");
  case AST_VARARG:
    refuse(g, e->line, "a vararg expression '...'");
  case AST_FUNC:
    refuse(g, e->line, "a function definition");
  case AST_TABLE:
    refuse(g, e->line, "a table constructor");
  case AST_NAME:
    return name_ref(g, e);
  case AST_INDEX:
    return index_expr(g, e);
  case AST_PAREN:
    return ex(g, e->a);
  case AST_UNOP:
    return unop(g, e);
  case AST_BINOP:
    if (e->op == OP_AND || e->op == OP_OR)
      return logic(g, e);
    if (e->op == OP_CONCAT)
      refuse(g, e->line, "string concatenation '..'");
    if (e->op >= OP_EQ && e->op <= OP_GE) {
      cv a = ex(g, e->a);
      cv b = ex(g, e->b);
      return compare(g, e->op, a, b, e->line);
    } else {
      cv a = ex(g, e->a);
      cv b = ex(g, e->b);
      return arith(g, e->op, a, b, e->line);
    }
  case AST_CALL:
  case AST_METHCALL: {
    cv r[2];
    if (exn(g, e, r, 1) == 0)
      return cv_nil(g);
    return r[0];
  }
  default:
    refuse(g, e->line, "a %s expression", orion_ast_kind_name(e->kind));
  }
}

/* Evaluates e for up to `want` values (calls may give several). */
int exn(gen *g, const ast_node *e, cv *out, int want) {
  if (e->kind == AST_CALL || e->kind == AST_METHCALL)
    return call_expr(g, e, out, want);
  if (want < 1) {
    (void)ex(g, e);
    return 0;
  }
  out[0] = ex(g, e);
  return 1;
}

/* Evaluates an expression list for exactly n values (nil-padded; extra
 * values are evaluated and dropped).  With keep, each value is held in a
 * temporary so later stores do not change it. */
cv *explist(gen *g, const ast_list *l, int n, int keep) {
  cv *v = amalloc(g, sizeof *v * (size_t)(n + l->n + 2));
  int i, got = 0;
  for (i = 0; i < l->n; i++) {
    if (i == l->n - 1) {
      got += exn(g, l->v[i], v + got, n - got > 0 ? n - got : 0);
    } else {
      cv x = ex(g, l->v[i]);
      if (got < n)
        v[got++] = keep ? copy(g, x) : x;
    }
  }
  for (i = 0; i < got; i++)
    if (keep)
      v[i] = copy(g, v[i]);
  for (; got < n; got++)
    v[got] = cv_nil(g);
  return v;
}


/* ======================================================================
 * A buffer's add: `B[k] = B[k] + x` (or `x + B[k]`, `B[k] - x`).
 * ====================================================================== */

/* a and b are the same expression without calls: in one statement they
 * have the same value. */
static int same_pure(const ast_node *a, const ast_node *b) {
  if (a == NULL || b == NULL)
    return a == b;
  if (a->kind != b->kind)
    return 0;
  switch (a->kind) {
  case AST_NAME:
  case AST_STR:
    return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
  case AST_INT:
    return a->ival == b->ival;
  case AST_FLT:
    return memcmp(&a->fval, &b->fval, sizeof a->fval) == 0;
  case AST_TRUE:
  case AST_FALSE:
  case AST_NIL:
    return 1;
  case AST_PAREN:
    return same_pure(a->a, b->a);
  case AST_UNOP:
    return a->op == b->op && same_pure(a->a, b->a);
  case AST_BINOP:
    return a->op == b->op && same_pure(a->a, b->a) && same_pure(a->b, b->b);
  case AST_INDEX:
    return a->flag == b->flag && same_pure(a->a, b->a) &&
           same_pure(a->b, b->b);
  default:
    return 0;
  }
}

/* The operand x of `tgt = tgt + x`, `x + tgt` or `tgt - x` (*sub set for
 * the last), or NULL. */
static const ast_node *added(const ast_node *tgt, const ast_node *val,
                             int *sub) {
  if (val->kind != AST_BINOP || (val->op != OP_ADD && val->op != OP_SUB))
    return NULL;
  *sub = val->op == OP_SUB;
  if (same_pure(tgt, val->a))
    return val->b;
  if (!*sub && same_pure(tgt, val->b))
    return val->a;
  return NULL;
}

int buffer_add(gen *g, cv o, cv k, const ast_node *tgt, const ast_node *val,
               int line) {
  const slot *s;
  const ast_node *xn;
  const char *kk, *pos, *why = NULL;
  int sub = 0, isint, x_left;
  cv x, rd;
  if (o.t.k != T_REF || g->slots[o.t.slot].kind != ORION_CSLOT_BUFFER ||
      o.t.depth + 1 != g->slots[o.t.slot].ndims ||
      (xn = added(tgt, val, &sub)) == NULL)
    return 0;
  s = &g->slots[o.t.slot];
  isint = s->etype == ET_I32 || s->etype == ET_I64;
  x_left = xn == val->a;
  /* The operands in the interpreter's order, so that the first error is
   * its: x first in `x + B[k]`, the read's subscript check first else. */
  savepc(g, line);
  if (x_left)
    x = ex(g, xn);
  kk = subscript(g, s, o.t.depth, k, tgt->b, tgt->line);
  pos = position(g, o, kk);
  if (!x_left)
    x = ex(g, xn);
  if (x.t.k == T_NONE)
    return 1;
  if (x.t.k != T_VAL || (x.t.m & ~M_NUM) != 0)
    why = "a buffer add of a value that may not be a number";
  else if (x.t.m != M_INT && x.t.m != M_FLT)
    why = "a buffer add of a value that may be an integer or a float";
  else if (isint && x.t.m != M_INT)
    why = "a buffer add of a float to an integer target";
  else if (!isint && !g->fast)
    why = "a float buffer add in exact mode (the device's order of "
          "additions varies; fast = true allows it)";
  x = mat(g, x); /* in a temporary both branches below see */
  if (g->in->gpu) {
    if (why != NULL)
      gpu_note(g, line, "%s (orion.buffer '%.63s') runs on the CPU", why,
               s->name);
    E(g, "#if ORION_GPU_BODY");
    if (why == NULL) {
      if (isint)
        E(g, "O_ST1(o_gbadd(c, %d, %s, (int64_t)(%s(uint64_t)(%s))));",
          s->idx, pos, sub ? "0u - " : "", x.s);
      else
        E(g, "O_ST1(o_gbaddf(c, %d, %s, %s(%s)));", s->idx, pos,
          sub ? "-" : "", as_d(g, x));
    }
    E(g, "#else");
  }
  /* The CPU: what `B[k] + x` does, the pending value read and stored. */
  rd = buffer_read(g, s, pos);
  store_value(g, x_left ? arith(g, OP_ADD, x, rd, line)
                        : arith(g, sub ? OP_SUB : OP_ADD, rd, x, line),
              s->etype, NULL, s, pos, S(g, "o_t%d", o.t.slot),
              S(g, "o_w%d", o.t.slot), line);
  if (g->in->gpu)
    E(g, "#endif");
  return 1;
}
