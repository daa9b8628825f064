/* Calls for the C code generator: math.* (as lmathlib.c computes them,
 * math.random drawing from the executor's xoshiro256** state) and
 * acc:add.  Any other call is refused.
 */
#include <string.h>

#include "analysis/cgen_int.h"

/* ======================================================================
 * Expressions: calls (math.*, acc:add).
 * ====================================================================== */

/* An argument math.NAME checks with luaL_checkinteger (a simple C
 * expression). */
static const char *arg_int(gen *g, cv v, int argn, const char *fn, int line) {
  if (v.t.m == M_INT)
    return mat(g, v).s;
  return int_or_fail(g, v,
                     S(g,
                       "o_err_arg(c, %d, %d, \"%s\", \"number has no integer "
                       "representation\")",
                       line, argn, fn));
}

/* A float function of one argument: the result is a float computed in
 * double (weak precision), or in float in fast mode where the function
 * rounds exactly (sqrt, abs). */
static cv math_f1(gen *g, const char *fn, cv x) {
  if (g->fast && x.t.m == M_FLT && x.t.prec == P_F32 && strcmp(fn, "sqrt") == 0)
    return cv_of(x.t, S(g, "sqrtf(%s)", x.s), 0);
  if (strcmp(fn, "sqrt") == 0)
    return cv_of(ty_val(M_FLT, P_WEAK), S(g, "sqrt(%s)", as_d(g, x)), 0);
  return cv_of(ty_val(M_FLT, P_WEAK), S(g, "%s(o_opq(%s))", fn, as_d(g, x)), 0);
}

/* math.min / math.max: the first argument that is smallest (largest) by
 * Lua's `<`, with its own subtype. */
static cv math_minmax(gen *g, int ismax, cv *a, int n) {
  ty rt = a[0].t;
  const char *t = newtmp(g);
  cv cur;
  int i;
  for (i = 1; i < n; i++)
    (void)ty_join(g, &rt, a[i].t, 0, "?");
  E(g, "O_U %s%s = %s;", ctype(g, rt), t, conv(g, a[0], rt));
  cur = cv_of(rt, t, 1);
  for (i = 1; i < n; i++) {
    cv x = mat(g, a[i]);
    E(g, "if %s %s = %s;",
      cond_of(g, ismax ? less(g, cur, x, 0) : less(g, x, cur, 0)), t,
      conv(g, x, rt));
  }
  return cur;
}

static int math_call(gen *g, const ast_node *e, const char *fn, cv *a, int n,
                     cv *out, int want) {
  int line = e->line, i;
  cv r = cv_none(), x;
  const char *t;
  for (i = 0; i < n; i++)
    if (a[i].t.k == T_NONE)
      return want > 0 ? (out[0] = cv_none(), 1) : 0;
  for (i = 0; i < n; i++)
    if (!is_num(a[i]))
      refuse(g, line, "a call to 'math.%s' with %s as argument %d", fn,
             ty_text(g, a[i].t), i + 1);
  savepc(g, line);
  if (strcmp(fn, "random") == 0) {
    const char *rv = newtmp(g), *lo, *up;
    g->userand = 1;
    E(g, "O_U const uint64_t %s = o_rnext(o_rs);", rv);
    if (n == 0) {
      r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "o_rfloat(%s)", rv), 0);
    } else if (n > 2) {
      fail(g, NULL, S(g, "o_err(c, %d, \"wrong number of arguments\")", line));
      r = cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    } else {
      if (n == 1) {
        lo = "1";
        up = arg_int(g, a[0], 1, "random", line);
      } else {
        lo = arg_int(g, a[0], 1, "random", line);
        up = arg_int(g, a[1], 2, "random", line);
      }
      t = newtmp(g);
      E(g, "O_U int64_t %s;", t);
      if (n == 1) {
        open_(g, S(g, "if (%s == 0) ", up));
        E(g, "%s = (int64_t)%s;", t, rv);
        close_(g);
        open_(g, "else ");
      }
      fail(
          g, S(g, "%s > %s", lo, up),
          S(g, "o_err_arg(c, %d, 1, \"random\", \"interval is empty\")", line));
      E(g, "%s = o_rproject(%s, %s, %s, o_rs);", t, rv, lo, up);
      if (n == 1)
        close_(g);
      r = cv_of(ty_val(M_INT, P_WEAK), t, 1);
    }
    goto done;
  }
  if (strcmp(fn, "min") == 0 || strcmp(fn, "max") == 0) {
    if (n == 0) {
      fail(g, NULL,
           S(g, "o_err_arg(c, %d, 1, \"%s\", \"value expected\")", line, fn));
      r = cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    } else {
      r = math_minmax(g, fn[1] == 'a', a, n);
    }
    goto done;
  }
  if (strcmp(fn, "ult") == 0) {
    const char *p, *q;
    if (n < 2)
      refuse(g, line, "a call to 'math.ult' with too few arguments");
    p = arg_int(g, a[0], 1, "ult", line);
    q = arg_int(g, a[1], 2, "ult", line);
    r = cv_of(ty_val(M_BOOL, P_WEAK),
              S(g, "((uint64_t)%s < (uint64_t)%s)", p, q), 0);
    goto done;
  }
  if (strcmp(fn, "fmod") == 0) {
    cv p, q;
    if (n < 2)
      refuse(g, line, "a call to 'math.fmod' with too few arguments");
    p = mat(g, a[0]);
    q = mat(g, a[1]);
    if (p.t.m == M_INT && q.t.m == M_INT) {
      fail(g, S(g, "%s == 0", q.s),
           S(g, "o_err_arg(c, %d, 2, \"fmod\", \"zero\")", line));
      r = cv_of(ty_val(M_INT, P_WEAK),
                S(g, "((uint64_t)%s + 1u <= 1u ? 0 : %s %% %s)", q.s, p.s, q.s),
                0);
    } else if (isdyn(p.t) || isdyn(q.t)) {
      /* Integers or floats known only at run time. */
      const char *pv = as_v(g, p), *qv = as_v(g, q);
      t = newtmp(g);
      E(g, "O_U o_v %s;", t);
      open_(g, S(g, "if (%s.t == 3 && %s.t == 3) ", pv, qv));
      fail(g, S(g, "%s.i == 0", qv),
           S(g, "o_err_arg(c, %d, 2, \"fmod\", \"zero\")", line));
      E(g, "%s = o_vi((uint64_t)%s.i + 1u <= 1u ? 0 : %s.i %% %s.i);", t, qv,
        pv, qv);
      close_(g);
      E(g, "else %s = o_vf(fmod(o_vn(%s), o_vn(%s)));", t, pv, qv);
      r = cv_of(ty_val(M_NUM, P_WEAK), t, 1);
    } else {
      r = cv_of(ty_val(M_FLT, P_WEAK),
                S(g, "fmod(%s, %s)", as_d(g, p), as_d(g, q)), 0);
    }
    goto done;
  }
  if (n < 1)
    refuse(g, line, "a call to 'math.%s' without arguments", fn);
  x = a[0];
  if (strcmp(fn, "floor") == 0 || strcmp(fn, "ceil") == 0) {
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
    } else if (x.t.m == M_FLT) {
      r = cv_of(ty_val(M_NUM, P_WEAK), S(g, "o_numint(%s(%s))", fn, as_d(g, x)),
                0);
    } else {
      x = mat(g, x);
      r = cv_of(
          ty_val(M_NUM, P_WEAK),
          S(g, "(%s.t == 3 ? %s : o_numint(%s(%s.d)))", x.s, x.s, fn, x.s), 0);
    }
  } else if (strcmp(fn, "abs") == 0) {
    x = mat(g, x);
    if (x.t.m == M_INT)
      r = cv_of(x.t,
                S(g, "(%s < 0 ? orion_lua_iunm(%s) : %s)", x.s, x.s, x.s),
                0);
    else if (x.t.m == M_FLT)
      r = cv_of(x.t, S(g, "%s(%s)", fastf(g, x.t) ? "fabsf" : "fabs", x.s), 0);
    else
      r = cv_of(x.t, S(g, "o_vabs(%s)", x.s), 0);
  } else if (strcmp(fn, "tointeger") == 0) {
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
    } else {
      const char *k = newtmp(g);
      x = mat(g, x);
      t = newtmp(g);
      E(g, "O_U int64_t %s = 0;", k);
      if (x.t.m == M_FLT)
        E(g, "O_U const o_v %s = orion_lua_f2i(%s, &%s) == ORION_LUAOP_OK "
          "? o_vi(%s) : o_vnil();", t,
          as_d(g, x), k, k);
      else
        E(g,
          "O_U const o_v %s = %s.t == 3 ? %s : orion_lua_f2i(%s.d, &%s) == "
          "ORION_LUAOP_OK ? o_vi(%s) "
          ": o_vnil();",
          t, x.s, x.s, x.s, k, k);
      r = cv_of(ty_val(M_INT | M_NIL, P_WEAK), t, 1);
    }
  } else if (strcmp(fn, "modf") == 0) {
    cv second;
    x = mat(g, x);
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
      second = cv_of(ty_val(M_FLT, P_WEAK), "0.0", 1);
    } else {
      const char *d = newtmp(g), *ip = newtmp(g);
      E(g, "O_U const double %s = %s;", d,
        isdyn(x.t) ? S(g, "o_vn(%s)", x.s) : as_d(g, x));
      E(g, "O_U const double %s = %s < 0 ? ceil(%s) : floor(%s);", ip, d, d, d);
      if (isdyn(x.t)) {
        r = cv_of(ty_val(M_NUM, P_WEAK),
                  S(g, "(%s.t == 3 ? %s : o_numint(%s))", x.s, x.s, ip), 0);
        second = cv_of(ty_val(M_FLT, P_WEAK),
                       S(g, "(%s.t == 3 ? 0.0 : (%s == %s ? 0.0 : %s - %s))",
                         x.s, d, ip, d, ip),
                       0);
      } else {
        r = cv_of(ty_val(M_NUM, P_WEAK), S(g, "o_numint(%s)", ip), 0);
        second = cv_of(ty_val(M_FLT, P_WEAK),
                       S(g, "(%s == %s ? 0.0 : %s - %s)", d, ip, d, ip), 0);
      }
    }
    if (want >= 2) {
      out[0] = mat(g, r);
      out[1] = second;
      return 2;
    }
  } else if (strcmp(fn, "log") == 0) {
    if (n == 1) {
      r = math_f1(g, "log", x);
    } else {
      cv b = a[1];
      const char *xd = as_d(g, x);
      if (b.isk && k_tonum(b.k) == 2.0)
        r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "log2(o_opq(%s))", xd), 0);
      else if (b.isk && k_tonum(b.k) == 10.0)
        r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "log10(o_opq(%s))", xd), 0);
      else {
        const char *bd = newtmp(g), *xx = newtmp(g);
        E(g, "O_U const double %s = o_opq(%s), %s = %s;", xx, xd, bd,
          as_d(g, b));
        r = cv_of(ty_val(M_FLT, P_WEAK),
                  S(g,
                    "(%s == 2.0 ? log2(%s) : %s == 10.0 ? log10(%s) : "
                    "log(%s) / log(%s))",
                    bd, xx, bd, xx, xx, bd),
                  0);
      }
    }
  } else if (strcmp(fn, "atan") == 0) {
    r = cv_of(ty_val(M_FLT, P_WEAK),
              S(g, "atan2(o_opq(%s), %s)", as_d(g, x),
                n >= 2 ? as_d(g, a[1]) : "1.0"),
              0);
  } else if (strcmp(fn, "deg") == 0 || strcmp(fn, "rad") == 0) {
    double pi = 3.141592653589793238462643383279502884;
    double f = fn[0] == 'd' ? 180.0 / pi : pi / 180.0;
    r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "(%s * %a)", as_d(g, x), f), 0);
  } else if (strcmp(fn, "sqrt") == 0 || strcmp(fn, "exp") == 0 ||
             strcmp(fn, "sin") == 0 || strcmp(fn, "cos") == 0 ||
             strcmp(fn, "tan") == 0 || strcmp(fn, "asin") == 0 ||
             strcmp(fn, "acos") == 0) {
    r = math_f1(g, fn, x);
  } else {
    refuse(g, line, "a call to 'math.%s'", fn);
  }
done:
  if (want < 1)
    return 0;
  out[0] = r;
  return 1;
}

/* acc:add(x). */
static void acc_add(gen *g, cv acc, cv *a, int n, int line) {
  const char *p = g->slots[acc.t.slot].pfx;
  cv x;
  savepc(g, line);
  if (n == 0) {
    fail(g, NULL, S(g, "o_err_acc(c, %d, -1)", line));
    return;
  }
  x = mat(g, a[0]);
  if (x.t.k == T_NONE)
    return;
  if (x.t.k != T_VAL)
    refuse(g, line, "adding %s to an accumulator", ty_text(g, x.t));
  if (!(x.t.m & M_NUM)) {
    fail(g, NULL, S(g, "o_err_acc(c, %d, %d)", line, x.t.m == M_NIL ? 0 : 1));
    return;
  }
  if (x.t.m == M_INT) {
    E(g, "o_acc_addi(&%s, %s);", p, x.s);
  } else if (x.t.m == M_FLT) {
    E(g, "o_acc_addf(&%s, %s);", p, as_d(g, x));
  } else {
    if (x.t.m & (M_NIL | M_BOOL))
      fail(g, S(g, "%s.t < 3", x.s), S(g, "o_err_acc(c, %d, %s.t)", line, x.s));
    E(g, "if (%s.t == 3) o_acc_addi(&%s, %s.i); else o_acc_addf(&%s, %s.d);",
      x.s, p, x.s, p, x.s);
  }
}

/* Evaluates an argument list into args (the arena); returns the count. */
static int eval_args(gen *g, const ast_list *l, cv **args) {
  int i, n = 0;
  cv *a = amalloc(g, sizeof *a * (size_t)(l->n + 2));
  for (i = 0; i < l->n; i++) {
    if (i == l->n - 1) {
      n += exn(g, l->v[i], a + n, 2);
    } else {
      a[n++] = mat(g, ex(g, l->v[i]));
    }
  }
  /* Later arguments may change nothing earlier ones read, but keep each
   * one's value fixed anyway: a call evaluates all before running. */
  for (i = 0; i < n; i++)
    a[i] = mat(g, a[i]);
  *args = a;
  return n;
}

/* Is `e` the math table (a free `math` or a local holding it)? */
static int is_math(gen *g, const ast_node *e) {
  var *v;
  fname *f;
  if (e->kind != AST_NAME)
    return 0;
  v = lookup(g, e->str);
  if (v != NULL)
    return v->t.k == T_MATH;
  f = free_name(g, e->str);
  return f->b.kind == ORION_BIND_BUILTIN && strcmp(e->str, "math") == 0;
}

/* row:key(j) or row:value(j) on a ragged row: the j-th pair's key
 * (1-based) or value, j checked against 1..#row as the interpreter
 * does. */
static int row_call(gen *g, const ast_node *e, cv *out, int want) {
  int iskey = strcmp(e->str, "key") == 0;
  const char *t;
  cv *a;
  int n;
  if (!iskey && strcmp(e->str, "value") != 0)
    refuse(g, e->line, "a method call '%s:%s' (a row has key and value)",
           lua_text(g, e->a), e->str);
  n = eval_args(g, &e->list, &a);
  if (n != 1 || a[0].t.k != T_VAL || a[0].t.m != M_INT)
    refuse(g, e->line, "'%s:%s' with an argument that is not known to be "
                       "an integer",
           lua_text(g, e->a), e->str);
  savepc(g, e->line);
  t = newtmp(g);
  E(g, "const int64_t %s = o_e + (%s) - 1;", t, a[0].s);
  /* The interpreter's message (executor/exec_ragged.c). */
  E(g, "if (O_NO(%s < o_e || %s >= o_re)) { char o_m[128]; "
       "snprintf(o_m, sizeof o_m, \"row:%s(%%lld): row %%lld has %%lld "
       "pairs\", (long long)(%s - o_e + 1), (long long)IT_k[o_e * 2] + 1, "
       "(long long)(o_re - o_e)); o_rc = o_err(c, %d, o_m); goto o_out; }",
    t, t, e->str, t, e->line);
  if (want < 1)
    return 0;
  out[0] = iskey ? cv_of(ty_val(M_INT, P_WEAK),
                         S(g, "(IT_k[%s * 2 + 1] + 1)", t), 0)
                 : iter_value(g, t);
  return 1;
}

int call_expr(gen *g, const ast_node *e, cv *out, int want) {
  cv *a;
  int n;
  if (e->kind == AST_METHCALL) {
    cv o = ex(g, e->a);
    if (o.t.k == T_ROW)
      return row_call(g, e, out, want);
    if (o.t.k == T_ACC && strcmp(e->str, "add") == 0) {
      n = eval_args(g, &e->list, &a);
      acc_add(g, o, a, n, e->line);
      return 0;
    }
    if (o.t.k == T_NONE)
      return 0;
    refuse(g, e->line, "a method call '%s:%s'", lua_text(g, e->a), e->str);
  }
  if (e->a->kind == AST_INDEX && e->a->flag && e->a->b->kind == AST_STR &&
      is_math(g, e->a->a)) {
    (void)ex(g, e->a->a);
    /* math is a read-only view in a body's sandbox (executor/exec_sandbox.c):
     * reading its field goes through __index, which saves the pc. */
    savepc(g, e->a->line);
    n = eval_args(g, &e->list, &a);
    return math_call(g, e, e->a->b->str, a, n, out, want);
  }
  refuse(g, e->line, "a call to '%s'", lua_text(g, e->a));
}

