/* The printer (tree back to Lua source) and the dumper (tree to a
 * structural S-expression), both described in parse.h.
 *
 * The printer's contract is that parsing its output gives an equal dump.
 * For trees that came from the parser that holds exactly; for trees built
 * by hand that no source can produce (negative or NaN number literals, a
 * `return` in the middle of a block...) it still prints valid Lua, the
 * nearest equivalent, noted where it happens.
 */
#include "analysis/parse.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/lex.h"

/* ---- output helpers ------------------------------------------------------- */

static void put(orion_buf *b, const char *s) {
  orion_buf_append(b, s, strlen(s));
}

static void putf(orion_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(orion_buf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    orion_buf_append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n
                                                    : sizeof tmp - 1);
}

static void indent(orion_buf *b, int level) {
  int i;
  for (i = 0; i < level; i++)
    put(b, "  ");
}

/* A double-quoted Lua string literal holding exactly s[0..len): printable
 * ASCII as is, the usual control characters by name, every other byte as
 * a three-digit decimal escape (three digits, so a digit after it cannot
 * extend it). */
static void put_quoted(orion_buf *b, const char *s, size_t len) {
  size_t i, run = 0;
  put(b, "\"");
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char tmp[8];
    switch (c) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\a': esc = "\\a"; break;
    case '\b': esc = "\\b"; break;
    case '\f': esc = "\\f"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    case '\v': esc = "\\v"; break;
    default:
      if (c < 32 || c >= 127) {
        snprintf(tmp, sizeof tmp, "\\%03u", (unsigned)c);
        esc = tmp;
      }
      break;
    }
    if (esc == NULL) {
      run++;
      continue;
    }
    orion_buf_append(b, s + i - run, run);
    run = 0;
    put(b, esc);
  }
  orion_buf_append(b, s + len - run, run);
  put(b, "\"");
}

static const char *const reserved[] = {
  "and", "break", "do", "else", "elseif", "end", "false", "for",
  "function", "goto", "if", "in", "local", "nil", "not", "or", "repeat",
  "return", "then", "true", "until", "while"
};

/* Whether s[0..len) can be written as a Lua name. */
static int is_identifier(const char *s, size_t len) {
  size_t i;
  if (s == NULL || len == 0)
    return 0;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
      return 0;
  }
  for (i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strlen(reserved[i]) == len && memcmp(reserved[i], s, len) == 0)
      return 0;
  return 1;
}

static void put_name(orion_buf *b, const ast_node *n) {
  if (n->str != NULL)
    orion_buf_append(b, n->str, n->len);
}

/* Formats a finite double so that strtod reads back the same bits: the
 * shortest of %.15g..%.17g that round-trips.  The text uses '.' whatever
 * the locale, and always reads as a float (a ".0" is added to integral
 * values), never as an integer. */
static void format_double(double v, char *out, size_t n) {
  char point = localeconv()->decimal_point[0];
  int prec;
  size_t i;
  for (prec = 15; prec <= 17; prec++) {
    snprintf(out, n, "%.*g", prec, v);
    if (strtod(out, NULL) == v)
      break;
  }
  for (i = 0; out[i] != '\0'; i++)
    if (out[i] == point)
      out[i] = '.';
  if (strpbrk(out, ".eEni") == NULL && strlen(out) + 3 <= n)
    strcat(out, ".0");
}

/* ---- the printer ---------------------------------------------------------- */

static void print_expr(orion_buf *b, const ast_node *n, int level);
static void print_block(orion_buf *b, const ast_node *blk, int level);

/* head, then blk one level in, then `end` at this level: the shape of
 * do, while, for and function bodies. */
static void print_body_end(orion_buf *b, const char *head,
                           const ast_node *blk, int level) {
  put(b, head);
  print_block(b, blk, level + 1);
  indent(b, level);
  put(b, "end");
}

static void print_float(orion_buf *b, double v) {
  char tmp[64];
  if (isnan(v)) {
    put(b, "(0/0)"); /* no literal is NaN; this is the nearest form */
  } else if (isinf(v)) {
    put(b, v > 0 ? "1e9999" : "(-1e9999)");
  } else if (signbit(v)) {
    /* A negative literal cannot come from a parse (the minus is a unary
     * operator there); print the value, parenthesised. */
    format_double(-v, tmp, sizeof tmp);
    put(b, "(-");
    put(b, tmp);
    put(b, ")");
  } else {
    format_double(v, tmp, sizeof tmp);
    put(b, tmp);
  }
}

static void print_int(orion_buf *b, int64_t v) {
  /* Negative values only come from hex literals that wrapped around, and
   * hex reads back to the same bits. */
  if (v < 0)
    putf(b, "0x%" PRIx64, (uint64_t)v);
  else
    putf(b, "%" PRId64, v);
}

static void print_list(orion_buf *b, const ast_list *l, int level) {
  int i;
  for (i = 0; i < l->n; i++) {
    if (i > 0)
      put(b, ", ");
    print_expr(b, l->v[i], level);
  }
}

static int is_prefix(const ast_node *n) {
  return n != NULL && (n->kind == AST_NAME || n->kind == AST_INDEX ||
                       n->kind == AST_CALL || n->kind == AST_METHCALL ||
                       n->kind == AST_PAREN);
}

/* The object of an index or call: only prefix expressions may stand
 * there unparenthesised. */
static void print_prefix(orion_buf *b, const ast_node *n, int level) {
  if (is_prefix(n)) {
    print_expr(b, n, level);
  } else {
    put(b, "(");
    print_expr(b, n, level);
    put(b, ")");
  }
}

/* '(' params ')' block 'end'; skips the implicit self of a method. */
static void print_funcbody(orion_buf *b, const ast_node *f, int level) {
  int i, first = 1;
  put(b, "(");
  for (i = f->is_method ? 1 : 0; i < f->params.n; i++) {
    if (!first)
      put(b, ", ");
    put_name(b, f->params.v[i]);
    first = 0;
  }
  if (f->is_vararg)
    put(b, first ? "..." : ", ...");
  print_body_end(b, ")\n", f->a, level);
}

static void print_field(orion_buf *b, const ast_node *f, int level) {
  if (f->kind != AST_FIELD) {
    print_expr(b, f, level);
    return;
  }
  if (f->a == NULL) {
    print_expr(b, f->b, level);
  } else if (f->flag && f->a->kind == AST_STR &&
             is_identifier(f->a->str, f->a->len)) {
    orion_buf_append(b, f->a->str, f->a->len);
    put(b, " = ");
    print_expr(b, f->b, level);
  } else {
    put(b, "[");
    print_expr(b, f->a, level);
    put(b, "] = ");
    print_expr(b, f->b, level);
  }
}

/* Whether operand n of a binary operator op needs parentheses to be parsed
 * back as that operand (see subexpr in parse.c). */
static int binop_operand_needs_paren(const ast_node *n, int op, int right) {
  orion__prio p = orion__binop_prio(op);
  if (n == NULL)
    return 0;
  if (n->kind == AST_BINOP) {
    orion__prio q = orion__binop_prio(n->op);
    /* On the left, n would lose its right operand to op when op binds
     * tighter; on the right, n must bind tighter than op to be taken. */
    return right ? q.left <= p.right : q.right < p.left;
  }
  if (n->kind == AST_UNOP)
    return !right && p.left > ORION__UNARY_PRIO; /* (-x)^2 */
  return 0;
}

static void print_operand(orion_buf *b, const ast_node *n, int paren,
                          int level) {
  if (paren)
    put(b, "(");
  print_expr(b, n, level);
  if (paren)
    put(b, ")");
}

static void print_expr(orion_buf *b, const ast_node *n, int level) {
  if (n == NULL) {
    put(b, "nil");
    return;
  }
  switch (n->kind) {
  case AST_NIL: put(b, "nil"); break;
  case AST_TRUE: put(b, "true"); break;
  case AST_FALSE: put(b, "false"); break;
  case AST_VARARG: put(b, "..."); break;
  case AST_INT: print_int(b, n->ival); break;
  case AST_FLT: print_float(b, n->fval); break;
  case AST_STR: put_quoted(b, n->str, n->len); break;
  case AST_FUNC:
    put(b, "function");
    print_funcbody(b, n, level);
    break;
  case AST_TABLE: {
    int i;
    put(b, "{");
    for (i = 0; i < n->list.n; i++) {
      if (i > 0)
        put(b, ", ");
      print_field(b, n->list.v[i], level);
    }
    put(b, "}");
    break;
  }
  case AST_FIELD:
    print_field(b, n, level);
    break;
  case AST_BINOP:
    print_operand(b, n->a, binop_operand_needs_paren(n->a, n->op, 0), level);
    put(b, " ");
    put(b, orion_ast_op_text(n->op));
    put(b, " ");
    print_operand(b, n->b, binop_operand_needs_paren(n->b, n->op, 1), level);
    break;
  case AST_UNOP: {
    const ast_node *a = n->a;
    /* Only `^` binds tighter than a unary operator. */
    int paren = a != NULL && a->kind == AST_BINOP && a->op != OP_POW;
    put(b, orion_ast_op_text(n->op));
    /* "not" needs a space; "- -x" must not become a comment. */
    if (n->op == OP_NOT ||
        (n->op == OP_NEG && !paren && a != NULL && a->kind == AST_UNOP &&
         a->op == OP_NEG))
      put(b, " ");
    print_operand(b, a, paren, level);
    break;
  }
  case AST_NAME:
    put_name(b, n);
    break;
  case AST_INDEX:
    print_prefix(b, n->a, level);
    if (n->flag && n->b != NULL && n->b->kind == AST_STR &&
        is_identifier(n->b->str, n->b->len)) {
      put(b, ".");
      orion_buf_append(b, n->b->str, n->b->len);
    } else {
      put(b, "[");
      print_expr(b, n->b, level);
      put(b, "]");
    }
    break;
  case AST_CALL:
    print_prefix(b, n->a, level);
    put(b, "(");
    print_list(b, &n->list, level);
    put(b, ")");
    break;
  case AST_METHCALL:
    print_prefix(b, n->a, level);
    put(b, ":");
    put_name(b, n);
    put(b, "(");
    print_list(b, &n->list, level);
    put(b, ")");
    break;
  case AST_PAREN:
    put(b, "(");
    print_expr(b, n->a, level);
    put(b, ")");
    break;
  default:
    put(b, "nil"); /* a statement where an expression belongs */
    break;
  }
}

/* The name path of `function a.b:c()`: names joined by '.', the last by
 * ':' for a method. */
static void print_funcname(orion_buf *b, const ast_node *n, int method,
                           int level) {
  if (n != NULL && n->kind == AST_INDEX && n->flag && n->b != NULL &&
      n->b->kind == AST_STR) {
    print_funcname(b, n->a, 0, level);
    put(b, method ? ":" : ".");
    orion_buf_append(b, n->b->str, n->b->len);
  } else {
    print_expr(b, n, level);
  }
}

/* Whether a statement's text starts with '(' (a call or assignment whose
 * leftmost prefix is parenthesised). */
static int starts_with_paren(const ast_node *s) {
  const ast_node *e;
  if (s->kind == AST_CALLSTAT)
    e = s->a;
  else if (s->kind == AST_ASSIGN && s->list.n > 0)
    e = s->list.v[0];
  else
    return 0;
  while (e != NULL && (e->kind == AST_CALL || e->kind == AST_METHCALL ||
                       e->kind == AST_INDEX)) {
    if (!is_prefix(e->a))
      return 1;
    e = e->a;
  }
  return e != NULL && e->kind == AST_PAREN;
}

/* Whether an expression's text ends with a prefix expression, which a
 * following '(' would turn into a call. */
static int ends_with_prefix(const ast_node *e) {
  while (e != NULL && (e->kind == AST_BINOP || e->kind == AST_UNOP)) {
    if (e->kind == AST_BINOP) {
      if (binop_operand_needs_paren(e->b, e->op, 1))
        return 1; /* printed in parentheses */
      e = e->b;
    } else {
      if (e->a != NULL && e->a->kind == AST_BINOP && e->a->op != OP_POW)
        return 1;
      e = e->a;
    }
  }
  if (e != NULL && e->kind == AST_FLT && (isnan(e->fval) || signbit(e->fval)))
    return 1; /* "(0/0)", "(-2.5)" */
  return is_prefix(e);
}

static int stat_ends_with_prefix(const ast_node *s) {
  const ast_list *l = NULL;
  switch (s->kind) {
  case AST_ASSIGN: case AST_LOCAL: case AST_RETURN:
    l = &s->list2;
    if (s->kind == AST_RETURN)
      l = &s->list;
    return l->n > 0 && ends_with_prefix(l->v[l->n - 1]);
  case AST_CALLSTAT:
    return 1;
  case AST_REPEAT:
    return ends_with_prefix(s->b);
  default:
    return 0;
  }
}

static void print_names(orion_buf *b, const ast_list *l) {
  int i;
  for (i = 0; i < l->n; i++) {
    const ast_node *n = l->v[i];
    if (i > 0)
      put(b, ", ");
    put_name(b, n);
    if (n->attrib == ATTR_CONST)
      put(b, " <const>");
    else if (n->attrib == ATTR_CLOSE)
      put(b, " <close>");
  }
}

static void print_stat(orion_buf *b, const ast_node *s, int level) {
  int i;
  indent(b, level);
  switch (s->kind) {
  case AST_LOCAL:
    put(b, "local ");
    print_names(b, &s->list);
    if (s->list2.n > 0) {
      put(b, " = ");
      print_list(b, &s->list2, level);
    }
    break;
  case AST_ASSIGN:
    print_list(b, &s->list, level);
    put(b, " = ");
    print_list(b, &s->list2, level);
    break;
  case AST_CALLSTAT:
    print_expr(b, s->a, level);
    break;
  case AST_DO:
    print_body_end(b, "do\n", s->a, level);
    break;
  case AST_WHILE:
    put(b, "while ");
    print_expr(b, s->a, level);
    print_body_end(b, " do\n", s->b, level);
    break;
  case AST_REPEAT:
    put(b, "repeat\n");
    print_block(b, s->a, level + 1);
    indent(b, level);
    put(b, "until ");
    print_expr(b, s->b, level);
    break;
  case AST_IF:
    for (i = 0; i < s->list.n; i++) {
      if (i > 0)
        indent(b, level);
      put(b, i == 0 ? "if " : "elseif ");
      print_expr(b, s->list.v[i], level);
      put(b, " then\n");
      print_block(b, i < s->list2.n ? s->list2.v[i] : NULL, level + 1);
    }
    if (s->c != NULL) {
      indent(b, level);
      put(b, "else\n");
      print_block(b, s->c, level + 1);
    }
    indent(b, level);
    put(b, "end");
    break;
  case AST_NUMFOR:
    put(b, "for ");
    print_names(b, &s->list);
    put(b, " = ");
    print_expr(b, s->a, level);
    put(b, ", ");
    print_expr(b, s->b, level);
    if (s->c != NULL) {
      put(b, ", ");
      print_expr(b, s->c, level);
    }
    print_body_end(b, " do\n", s->d, level);
    break;
  case AST_GENFOR:
    put(b, "for ");
    print_names(b, &s->list);
    put(b, " in ");
    print_list(b, &s->list2, level);
    print_body_end(b, " do\n", s->a, level);
    break;
  case AST_FUNCSTAT:
    put(b, "function ");
    print_funcname(b, s->a, s->flag, level);
    if (s->b != NULL)
      print_funcbody(b, s->b, level);
    break;
  case AST_LOCALFUNC:
    put(b, "local function ");
    put_name(b, s->a);
    if (s->b != NULL)
      print_funcbody(b, s->b, level);
    break;
  case AST_RETURN:
    put(b, "return");
    if (s->list.n > 0) {
      put(b, " ");
      print_list(b, &s->list, level);
    }
    break;
  case AST_BREAK: put(b, "break"); break;
  case AST_GOTO:
    put(b, "goto ");
    put_name(b, s);
    break;
  case AST_LABEL:
    put(b, "::");
    put_name(b, s);
    put(b, "::");
    break;
  case AST_SEMI: put(b, ";"); break;
  case AST_BLOCK:
    print_body_end(b, "do\n", s, level);
    break;
  default:
    /* An expression where a statement belongs: keep it visible and
     * valid as `local _ = e`. */
    put(b, "local _ = ");
    print_expr(b, s, level);
    break;
  }
  put(b, "\n");
}

static void print_block(orion_buf *b, const ast_node *blk, int level) {
  int i;
  if (blk == NULL)
    return;
  if (blk->kind != AST_BLOCK) {
    print_stat(b, blk, level);
    return;
  }
  for (i = 0; i < blk->list.n; i++) {
    const ast_node *s = blk->list.v[i];
    if (s == NULL)
      continue;
    /* A parsed tree never needs the two guards below; a built one may. */
    if (i > 0 && starts_with_paren(s) && blk->list.v[i - 1] != NULL &&
        stat_ends_with_prefix(blk->list.v[i - 1])) {
      indent(b, level);
      put(b, ";\n"); /* else the '(' would call the previous expression */
    }
    if (s->kind == AST_RETURN && i + 1 < blk->list.n) {
      indent(b, level);
      put(b, "do\n"); /* return must end a block */
      print_stat(b, s, level + 1);
      indent(b, level);
      put(b, "end\n");
      continue;
    }
    print_stat(b, s, level);
  }
}

void orion_ast_print(const ast_node *n, orion_buf *out) {
  if (n == NULL)
    return;
  switch (n->kind) {
  case AST_BLOCK:
    print_block(out, n, 0);
    break;
  case AST_LOCAL: case AST_ASSIGN: case AST_CALLSTAT: case AST_DO:
  case AST_WHILE: case AST_REPEAT: case AST_IF: case AST_NUMFOR:
  case AST_GENFOR: case AST_FUNCSTAT: case AST_LOCALFUNC: case AST_RETURN:
  case AST_BREAK: case AST_GOTO: case AST_LABEL: case AST_SEMI:
    print_stat(out, n, 0);
    break;
  default:
    print_expr(out, n, 0);
    break;
  }
}

/* ---- the dumper ----------------------------------------------------------- */

static void dump(orion_buf *b, const ast_node *n);

static void dump_list(orion_buf *b, const ast_list *l) {
  int i;
  put(b, " [");
  for (i = 0; i < l->n; i++) {
    if (i > 0)
      put(b, " ");
    dump(b, l->v[i]);
  }
  put(b, "]");
}

static void dump_child(orion_buf *b, const ast_node *n) {
  put(b, " ");
  dump(b, n);
}

static void dump_str(orion_buf *b, const ast_node *n) {
  put(b, " ");
  if (is_identifier(n->str, n->len))
    orion_buf_append(b, n->str, n->len);
  else
    put_quoted(b, n->str != NULL ? n->str : "", n->str != NULL ? n->len : 0);
}

static void dump(orion_buf *b, const ast_node *n) {
  int i;
  if (n == NULL) {
    put(b, "_");
    return;
  }
  put(b, "(");
  put(b, orion_ast_kind_name(n->kind));
  switch (n->kind) {
  case AST_INT:
    putf(b, " %" PRId64, n->ival);
    break;
  case AST_FLT: {
    char tmp[64];
    char point = localeconv()->decimal_point[0];
    snprintf(tmp, sizeof tmp, "%.17g", n->fval);
    for (i = 0; tmp[i] != '\0'; i++)
      if (tmp[i] == point)
        tmp[i] = '.';
    put(b, " ");
    put(b, tmp);
    break;
  }
  case AST_STR:
    put(b, " ");
    put_quoted(b, n->str != NULL ? n->str : "", n->str != NULL ? n->len : 0);
    break;
  case AST_FUNC:
    if (n->is_method)
      put(b, " :method");
    if (n->is_vararg)
      put(b, " :vararg");
    dump_list(b, &n->params);
    dump_child(b, n->a);
    break;
  case AST_TABLE: case AST_BLOCK:
    for (i = 0; i < n->list.n; i++)
      dump_child(b, n->list.v[i]);
    break;
  case AST_FIELD:
    put(b, n->a == NULL ? " :pos" : n->flag ? " :name" : " :key");
    if (n->a != NULL)
      dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_BINOP:
    put(b, " ");
    put(b, orion_ast_op_text(n->op));
    dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_UNOP:
    put(b, " ");
    put(b, orion_ast_op_text(n->op));
    dump_child(b, n->a);
    break;
  case AST_NAME:
    dump_str(b, n);
    if (n->attrib == ATTR_CONST)
      put(b, " :const");
    else if (n->attrib == ATTR_CLOSE)
      put(b, " :close");
    break;
  case AST_INDEX:
    if (n->flag)
      put(b, " :dot");
    dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_CALL:
    dump_child(b, n->a);
    dump_list(b, &n->list);
    break;
  case AST_METHCALL:
    dump_child(b, n->a);
    dump_str(b, n);
    dump_list(b, &n->list);
    break;
  case AST_PAREN: case AST_CALLSTAT: case AST_DO:
    dump_child(b, n->a);
    break;
  case AST_LOCAL: case AST_ASSIGN:
    dump_list(b, &n->list);
    dump_list(b, &n->list2);
    break;
  case AST_WHILE: case AST_REPEAT:
    dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_IF:
    dump_list(b, &n->list);
    dump_list(b, &n->list2);
    dump_child(b, n->c);
    break;
  case AST_NUMFOR:
    dump_list(b, &n->list);
    dump_child(b, n->a);
    dump_child(b, n->b);
    dump_child(b, n->c);
    dump_child(b, n->d);
    break;
  case AST_GENFOR:
    dump_list(b, &n->list);
    dump_list(b, &n->list2);
    dump_child(b, n->a);
    break;
  case AST_FUNCSTAT:
    if (n->flag)
      put(b, " :method");
    dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_LOCALFUNC:
    dump_child(b, n->a);
    dump_child(b, n->b);
    break;
  case AST_RETURN:
    dump_list(b, &n->list);
    break;
  case AST_GOTO: case AST_LABEL:
    dump_str(b, n);
    break;
  case AST_NIL: case AST_TRUE: case AST_FALSE: case AST_VARARG:
  case AST_BREAK: case AST_SEMI:
    break;
  }
  put(b, ")");
}

void orion_ast_dump(const ast_node *n, orion_buf *out) { dump(out, n); }
