/* A recursive-descent parser for Lua 5.4 (the grammar of section 9 of the
 * reference manual), building the tree of ast.h.
 *
 * The structure follows the manual's grammar and matches luac's decisions
 * where the grammar leaves room: one token of lookahead everywhere except
 * `name =` in table constructors (two tokens), binary operators by
 * precedence climbing with Lua's binding powers, and the same error
 * messages at the same tokens ("'end' expected (to close 'function' at
 * line 1) near <eof>", "unexpected symbol near '+'", "syntax error" for
 * assignments to non-variables).
 *
 * Errors unwind with longjmp to orion_parse.  That is safe because every
 * allocation made while parsing lives in the arena, which orion_parse frees
 * on the error path; nothing else needs cleaning up.
 *
 * Two limits keep any input from exhausting the C stack, here and in the
 * code that walks the tree afterwards:
 *   - MAX_LEVELS bounds the recursion of the parser itself.  Like luac (its
 *     LUAI_MAXCCALLS), it counts nested statements and nested
 *     subexpressions, so luac rejects everything this rejects.
 *   - MAX_HEIGHT bounds the height of the tree.  Left-associative chains
 *     (a + b + c ..., a.b.c ..., f()()()...) are parsed by loops, not
 *     recursion, so without it a chain of 100000 terms, which luac accepts,
 *     would give a tree 100000 nodes deep that a recursive walker (the
 *     printer, the analysis) could not descend.  Such chains are the only
 *     valid Lua this parser rejects.
 */
#include "analysis/parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/lex.h"
#include "util/alloc.h"

#define MAX_LEVELS 200
#define MAX_HEIGHT 5000

/* Every node is allocated with its height beside it; the height is only
 * needed while parsing, so it stays out of ast.h. */
typedef struct pnode {
  ast_node n; /* first, so an ast_node * converts back */
  int height;
} pnode;

typedef struct parser {
  orion_lexer lx;
  orion_token t;     /* the current token */
  orion_token ahead; /* the lookahead token when has_ahead */
  int has_ahead;
  orion__arena *arena;
  orion_error *err;
  const char *chunk;
  int level;  /* syntactic nesting, for MAX_LEVELS */
  int vararg; /* the function being parsed is vararg */
  jmp_buf fail;
} parser;

/* A list under construction: grows by doubling inside the arena (the old
 * arrays are abandoned there, at most doubling the memory of lists). */
typedef struct nvec {
  ast_node **v;
  int n, cap;
} nvec;

/* ---- errors --------------------------------------------------------------- */

static _Noreturn void fail(parser *p, int code) { longjmp(p->fail, code); }

/* Reports a syntax error at token tk (the current one when NULL). */
static _Noreturn void error_at(parser *p, const orion_token *tk,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static _Noreturn void error_at(parser *p, const orion_token *tk,
                               const char *fmt, ...) {
  char msg[512], near[128];
  va_list ap;
  if (tk == NULL)
    tk = &p->t;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  orion_lex_near(tk, near, sizeof near);
  orion_error_set(p->err, ORION_EPARSE, "%s:%d:%d: %s near %s", p->chunk,
                  tk->line, tk->col, msg, near);
  fail(p, ORION_EPARSE);
}

static _Noreturn void error_expected(parser *p, int kind) {
  char buf[32];
  error_at(p, NULL, "%s expected", orion_lex_kind_text(kind, buf, sizeof buf));
}

static _Noreturn void out_of_memory(parser *p) {
  orion_error_set(p->err, ORION_ENOMEM, "%s: out of memory", p->chunk);
  fail(p, ORION_ENOMEM);
}

static void enter_level(parser *p) {
  if (++p->level > MAX_LEVELS)
    error_at(p, NULL, "chunk has too many syntax levels");
}

static void leave_level(parser *p) { p->level--; }

/* ---- tokens --------------------------------------------------------------- */

static void next(parser *p) {
  int rc;
  if (p->has_ahead) {
    p->t = p->ahead;
    p->has_ahead = 0;
    return;
  }
  rc = orion_lex_next(&p->lx, &p->t);
  if (rc != 0)
    fail(p, rc);
}

static int lookahead(parser *p) {
  if (!p->has_ahead) {
    int rc = orion_lex_next(&p->lx, &p->ahead);
    if (rc != 0)
      fail(p, rc);
    p->has_ahead = 1;
  }
  return p->ahead.kind;
}

static int testnext(parser *p, int kind) {
  if (p->t.kind != kind)
    return 0;
  next(p);
  return 1;
}

static void checknext(parser *p, int kind) {
  if (p->t.kind != kind)
    error_expected(p, kind);
  next(p);
}

/* Expects `what` closing `who` opened on line `line`; names that line when
 * it is not the current one, since the opener may be far above. */
static void check_match(parser *p, int what, int who, int line) {
  char b1[32], b2[32];
  if (testnext(p, what))
    return;
  if (line == p->t.line)
    error_expected(p, what);
  error_at(p, NULL, "%s expected (to close %s at line %d)",
           orion_lex_kind_text(what, b1, sizeof b1),
           orion_lex_kind_text(who, b2, sizeof b2), line);
}

/* Returns the current token, which must be a name, and moves past it. */
static orion_token check_name(parser *p) {
  orion_token t = p->t;
  if (t.kind != TK_NAME)
    error_expected(p, TK_NAME);
  next(p);
  return t;
}

/* ---- nodes ---------------------------------------------------------------- */

static void *alloc(parser *p, size_t n) {
  void *m = orion__arena_alloc(p->arena, n);
  if (m == NULL)
    out_of_memory(p);
  return m;
}

static ast_node *new_node(parser *p, ast_kind kind, int line, int col) {
  pnode *pn = alloc(p, sizeof *pn);
  memset(pn, 0, sizeof *pn);
  pn->n.kind = kind;
  pn->n.line = line;
  pn->n.col = col;
  pn->height = 1;
  return &pn->n;
}

static ast_node *node_at(parser *p, ast_kind kind, const orion_token *tk) {
  return new_node(p, kind, tk->line, tk->col);
}

static int height(const ast_node *n) {
  return n == NULL ? 0 : ((const pnode *)n)->height;
}

static int list_height(const ast_list *l) {
  int h = 0, i;
  for (i = 0; i < l->n; i++)
    if (height(l->v[i]) > h)
      h = height(l->v[i]);
  return h;
}

/* Records the height of a finished node and enforces MAX_HEIGHT. */
static ast_node *seal(parser *p, ast_node *n) {
  int h = height(n->a);
  if (height(n->b) > h)
    h = height(n->b);
  if (height(n->c) > h)
    h = height(n->c);
  if (height(n->d) > h)
    h = height(n->d);
  if (list_height(&n->list) > h)
    h = list_height(&n->list);
  if (list_height(&n->list2) > h)
    h = list_height(&n->list2);
  if (list_height(&n->params) > h)
    h = list_height(&n->params);
  if (h >= MAX_HEIGHT)
    error_at(p, NULL, "chunk has too many syntax levels");
  ((pnode *)n)->height = h + 1;
  return n;
}

static void push(parser *p, nvec *v, ast_node *n) {
  if (v->n == v->cap) {
    int cap = v->cap == 0 ? 4 : v->cap * 2;
    ast_node **nv;
    if (v->cap > (1 << 28))
      out_of_memory(p);
    nv = alloc(p, (size_t)cap * sizeof *nv);
    if (v->n > 0)
      memcpy(nv, v->v, (size_t)v->n * sizeof *nv);
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = n;
}

static ast_list done(const nvec *v) {
  ast_list l;
  l.v = v->v;
  l.n = v->n;
  return l;
}

static ast_node *name_node(parser *p, const orion_token *tk) {
  ast_node *n = node_at(p, AST_NAME, tk);
  n->str = tk->str;
  n->len = tk->len;
  return n;
}

/* A string node for a name used as a key (a.name, {name = v}, a:name). */
static ast_node *key_node(parser *p, const orion_token *tk) {
  ast_node *n = node_at(p, AST_STR, tk);
  n->str = tk->str;
  n->len = tk->len;
  return n;
}

/* ---- expressions ---------------------------------------------------------- */

static ast_node *expr(parser *p);
static ast_node *block(parser *p);

static int block_follow(const parser *p, int with_until) {
  switch (p->t.kind) {
  case TK_ELSE: case TK_ELSEIF: case TK_END: case TK_EOF:
    return 1;
  case TK_UNTIL:
    return with_until;
  default:
    return 0;
  }
}

static ast_list explist(parser *p) {
  nvec v = {NULL, 0, 0};
  push(p, &v, expr(p));
  while (testnext(p, ','))
    push(p, &v, expr(p));
  return done(&v);
}

/* body ::= '(' [parlist] ')' block end; fn is the `function` keyword. */
static ast_node *body(parser *p, const orion_token *fn, int is_method) {
  ast_node *f = node_at(p, AST_FUNC, fn);
  nvec params = {NULL, 0, 0};
  int saved_vararg = p->vararg;
  f->is_method = is_method;
  if (is_method) {
    ast_node *self = node_at(p, AST_NAME, fn);
    self->str = "self";
    self->len = 4;
    push(p, &params, self);
  }
  checknext(p, '(');
  if (p->t.kind != ')') {
    do {
      if (p->t.kind == TK_NAME) {
        push(p, &params, name_node(p, &p->t));
        next(p);
      } else if (p->t.kind == TK_DOTS) {
        next(p);
        f->is_vararg = 1;
      } else {
        error_at(p, NULL, "<name> or '...' expected");
      }
    } while (!f->is_vararg && testnext(p, ','));
  }
  checknext(p, ')');
  f->params = done(&params);
  p->vararg = f->is_vararg;
  f->a = block(p);
  f->end_line = p->t.line;
  check_match(p, TK_END, TK_FUNCTION, fn->line);
  p->vararg = saved_vararg;
  return seal(p, f);
}

/* table constructor: '{' [field {sep field} [sep]] '}' */
static ast_node *constructor(parser *p) {
  orion_token open = p->t;
  ast_node *t = node_at(p, AST_TABLE, &open);
  nvec fields = {NULL, 0, 0};
  checknext(p, '{');
  do {
    ast_node *f;
    if (p->t.kind == '}')
      break;
    if (p->t.kind == TK_NAME && lookahead(p) == '=') {
      orion_token key = p->t;
      f = node_at(p, AST_FIELD, &key);
      f->flag = 1;
      f->a = seal(p, key_node(p, &key));
      next(p);
      next(p); /* '=' */
      f->b = expr(p);
    } else if (p->t.kind == '[') {
      f = node_at(p, AST_FIELD, &p->t);
      next(p);
      f->a = expr(p);
      checknext(p, ']');
      checknext(p, '=');
      f->b = expr(p);
    } else {
      ast_node *v = expr(p);
      f = new_node(p, AST_FIELD, v->line, v->col);
      f->b = v;
    }
    push(p, &fields, seal(p, f));
  } while (testnext(p, ',') || testnext(p, ';'));
  check_match(p, '}', '{', open.line);
  t->list = done(&fields);
  return seal(p, t);
}

/* args ::= '(' [explist] ')' | tableconstructor | LiteralString */
static ast_list funcargs(parser *p) {
  nvec v = {NULL, 0, 0};
  switch (p->t.kind) {
  case '(': {
    int line = p->t.line;
    ast_list args = {NULL, 0};
    next(p);
    if (p->t.kind != ')')
      args = explist(p);
    check_match(p, ')', '(', line);
    return args;
  }
  case '{':
    push(p, &v, constructor(p));
    break;
  case TK_STRING:
    push(p, &v, seal(p, key_node(p, &p->t)));
    next(p);
    break;
  default:
    error_at(p, NULL, "function arguments expected");
  }
  return done(&v);
}

/* primaryexp ::= Name | '(' exp ')' */
static ast_node *primaryexp(parser *p) {
  ast_node *n;
  switch (p->t.kind) {
  case TK_NAME:
    n = name_node(p, &p->t);
    next(p);
    return seal(p, n);
  case '(': {
    orion_token open = p->t;
    n = node_at(p, AST_PAREN, &open);
    next(p);
    n->a = expr(p);
    check_match(p, ')', '(', open.line);
    return seal(p, n);
  }
  default:
    error_at(p, NULL, "unexpected symbol");
  }
}

/* base.NAME, with NAME the current token (after the '.' or ':'). */
static ast_node *field_node(parser *p, ast_node *base) {
  orion_token key = check_name(p);
  ast_node *n = new_node(p, AST_INDEX, base->line, base->col);
  n->flag = 1;
  n->a = base;
  n->b = seal(p, key_node(p, &key));
  return n;
}

/* suffixedexp ::= primaryexp { '.' Name | '[' exp ']' | ':' Name args |
 *                              args } */
static ast_node *suffixedexp(parser *p) {
  ast_node *e = primaryexp(p);
  for (;;) {
    ast_node *n;
    switch (p->t.kind) {
    case '.':
      next(p);
      n = field_node(p, e);
      break;
    case '[':
      next(p);
      n = new_node(p, AST_INDEX, e->line, e->col);
      n->a = e;
      n->b = expr(p);
      checknext(p, ']');
      break;
    case ':': {
      orion_token key;
      next(p);
      key = check_name(p);
      n = new_node(p, AST_METHCALL, e->line, e->col);
      n->a = e;
      n->str = key.str;
      n->len = key.len;
      n->list = funcargs(p);
      break;
    }
    case '(': case TK_STRING: case '{':
      n = new_node(p, AST_CALL, e->line, e->col);
      n->a = e;
      n->list = funcargs(p);
      break;
    default:
      return e;
    }
    e = seal(p, n);
  }
}

/* simpleexp ::= Numeral | LiteralString | nil | true | false | '...' |
 *               functiondef | tableconstructor | suffixedexp */
static ast_node *simpleexp(parser *p) {
  ast_node *n;
  switch (p->t.kind) {
  case TK_INT:
    n = node_at(p, AST_INT, &p->t);
    n->ival = p->t.ival;
    break;
  case TK_FLT:
    n = node_at(p, AST_FLT, &p->t);
    n->fval = p->t.fval;
    break;
  case TK_STRING:
    n = key_node(p, &p->t);
    break;
  case TK_NIL:
    n = node_at(p, AST_NIL, &p->t);
    break;
  case TK_TRUE:
    n = node_at(p, AST_TRUE, &p->t);
    break;
  case TK_FALSE:
    n = node_at(p, AST_FALSE, &p->t);
    break;
  case TK_DOTS:
    /* luac checks this while parsing, so it is a syntax error here too. */
    if (!p->vararg)
      error_at(p, NULL, "cannot use '...' outside a vararg function");
    n = node_at(p, AST_VARARG, &p->t);
    break;
  case '{':
    return constructor(p);
  case TK_FUNCTION: {
    orion_token fn = p->t;
    next(p);
    return body(p, &fn, 0);
  }
  default:
    return suffixedexp(p);
  }
  next(p);
  return seal(p, n);
}

static int unop_of(int kind) {
  switch (kind) {
  case TK_NOT: return OP_NOT;
  case '-': return OP_NEG;
  case '#': return OP_LEN;
  case '~': return OP_BNOT;
  default: return -1;
  }
}

static int binop_of(int kind) {
  switch (kind) {
  case '+': return OP_ADD;
  case '-': return OP_SUB;
  case '*': return OP_MUL;
  case '/': return OP_DIV;
  case TK_IDIV: return OP_IDIV;
  case '%': return OP_MOD;
  case '^': return OP_POW;
  case TK_CONCAT: return OP_CONCAT;
  case TK_EQ: return OP_EQ;
  case TK_NE: return OP_NE;
  case '<': return OP_LT;
  case TK_LE: return OP_LE;
  case '>': return OP_GT;
  case TK_GE: return OP_GE;
  case TK_AND: return OP_AND;
  case TK_OR: return OP_OR;
  case '&': return OP_BAND;
  case '|': return OP_BOR;
  case '~': return OP_BXOR;
  case TK_SHL: return OP_SHL;
  case TK_SHR: return OP_SHR;
  default: return -1;
  }
}

/* subexpr ::= (simpleexp | unop subexpr) { binop subexpr }, taking only
 * the binary operators whose left binding power exceeds limit. */
static ast_node *subexpr(parser *p, int limit) {
  ast_node *e;
  int op;
  enter_level(p);
  op = unop_of(p->t.kind);
  if (op >= 0) {
    e = node_at(p, AST_UNOP, &p->t);
    e->op = op;
    next(p);
    e->a = subexpr(p, ORION__UNARY_PRIO);
    e = seal(p, e);
  } else {
    e = simpleexp(p);
  }
  while ((op = binop_of(p->t.kind)) >= 0 &&
         orion__binop_prio(op).left > limit) {
    ast_node *b = new_node(p, AST_BINOP, e->line, e->col);
    b->op = op;
    b->a = e;
    next(p);
    b->b = subexpr(p, orion__binop_prio(op).right);
    e = seal(p, b);
  }
  leave_level(p);
  return e;
}

static ast_node *expr(parser *p) { return subexpr(p, 0); }

/* ---- statements ----------------------------------------------------------- */

static ast_node *statement(parser *p);

/* block ::= {stat} [retstat]; stops before the token that ends it. */
static ast_node *block(parser *p) {
  ast_node *b = node_at(p, AST_BLOCK, &p->t);
  nvec v = {NULL, 0, 0};
  while (!block_follow(p, 1)) {
    if (p->t.kind == TK_RETURN) {
      push(p, &v, statement(p));
      break; /* 'return' must be the last statement */
    }
    push(p, &v, statement(p));
  }
  b->list = done(&v);
  return seal(p, b);
}

static int is_var(const ast_node *e) {
  return e->kind == AST_NAME || e->kind == AST_INDEX;
}

/* exprstat ::= func | assignment */
static ast_node *exprstat(parser *p) {
  ast_node *e = suffixedexp(p), *s;
  if (p->t.kind == '=' || p->t.kind == ',') {
    nvec targets = {NULL, 0, 0};
    s = new_node(p, AST_ASSIGN, e->line, e->col);
    if (!is_var(e))
      error_at(p, NULL, "syntax error");
    push(p, &targets, e);
    while (testnext(p, ',')) {
      ast_node *v = suffixedexp(p);
      if (!is_var(v))
        error_at(p, NULL, "syntax error");
      push(p, &targets, v);
    }
    checknext(p, '=');
    s->list = done(&targets);
    s->list2 = explist(p);
  } else {
    if (e->kind != AST_CALL && e->kind != AST_METHCALL)
      error_at(p, NULL, "syntax error");
    s = new_node(p, AST_CALLSTAT, e->line, e->col);
    s->a = e;
  }
  return s;
}

/* local attnamelist ['=' explist] */
static void localstat(parser *p, ast_node *s) {
  nvec names = {NULL, 0, 0};
  do {
    orion_token tk = check_name(p);
    ast_node *n = name_node(p, &tk);
    if (testnext(p, '<')) {
      orion_token attr = check_name(p);
      checknext(p, '>');
      if (strcmp(attr.str, "const") == 0)
        n->attrib = ATTR_CONST;
      else if (strcmp(attr.str, "close") == 0)
        n->attrib = ATTR_CLOSE;
      else
        error_at(p, &attr, "unknown attribute '%s'", attr.str);
    }
    push(p, &names, seal(p, n));
  } while (testnext(p, ','));
  s->list = done(&names);
  if (testnext(p, '='))
    s->list2 = explist(p);
}

/* funcname ::= Name {'.' Name} [':' Name] */
static ast_node *funcname(parser *p, int *is_method) {
  orion_token tk = check_name(p);
  ast_node *path = seal(p, name_node(p, &tk));
  *is_method = 0;
  while (p->t.kind == '.' || p->t.kind == ':') {
    if (p->t.kind == ':')
      *is_method = 1;
    next(p);
    path = seal(p, field_node(p, path));
    if (*is_method)
      break;
  }
  return path;
}

static void forstat(parser *p, ast_node **out, const orion_token *kw) {
  orion_token var;
  ast_node *s;
  nvec names = {NULL, 0, 0};
  next(p);
  var = check_name(p);
  push(p, &names, seal(p, name_node(p, &var)));
  switch (p->t.kind) {
  case '=':
    s = node_at(p, AST_NUMFOR, kw);
    next(p);
    s->a = expr(p);
    checknext(p, ',');
    s->b = expr(p);
    if (testnext(p, ','))
      s->c = expr(p);
    checknext(p, TK_DO);
    s->d = block(p);
    break;
  case ',': case TK_IN:
    s = node_at(p, AST_GENFOR, kw);
    while (testnext(p, ',')) {
      orion_token tk = check_name(p);
      push(p, &names, seal(p, name_node(p, &tk)));
    }
    checknext(p, TK_IN);
    s->list2 = explist(p);
    checknext(p, TK_DO);
    s->a = block(p);
    break;
  default:
    error_at(p, NULL, "'=' or 'in' expected");
  }
  s->list = done(&names);
  check_match(p, TK_END, TK_FOR, kw->line);
  *out = s;
}

/* A label or goto: the keyword token kw, then a name. */
static ast_node *named_stat(parser *p, ast_kind kind, const orion_token *kw) {
  ast_node *s = node_at(p, kind, kw);
  orion_token name;
  next(p);
  name = check_name(p);
  s->str = name.str;
  s->len = name.len;
  return s;
}

static ast_node *statement(parser *p) {
  orion_token kw = p->t;
  ast_node *s;
  enter_level(p);
  switch (kw.kind) {
  case ';':
    s = node_at(p, AST_SEMI, &kw);
    next(p);
    break;
  case TK_IF: {
    nvec conds = {NULL, 0, 0}, blocks = {NULL, 0, 0};
    s = node_at(p, AST_IF, &kw);
    do { /* if/elseif cond then block */
      next(p);
      push(p, &conds, expr(p));
      checknext(p, TK_THEN);
      push(p, &blocks, block(p));
    } while (p->t.kind == TK_ELSEIF);
    if (testnext(p, TK_ELSE))
      s->c = block(p);
    check_match(p, TK_END, TK_IF, kw.line);
    s->list = done(&conds);
    s->list2 = done(&blocks);
    break;
  }
  case TK_WHILE:
    s = node_at(p, AST_WHILE, &kw);
    next(p);
    s->a = expr(p);
    checknext(p, TK_DO);
    s->b = block(p);
    check_match(p, TK_END, TK_WHILE, kw.line);
    break;
  case TK_DO:
    s = node_at(p, AST_DO, &kw);
    next(p);
    s->a = block(p);
    check_match(p, TK_END, TK_DO, kw.line);
    break;
  case TK_FOR:
    forstat(p, &s, &kw);
    break;
  case TK_REPEAT:
    s = node_at(p, AST_REPEAT, &kw);
    next(p);
    s->a = block(p);
    check_match(p, TK_UNTIL, TK_REPEAT, kw.line);
    s->b = expr(p);
    break;
  case TK_FUNCTION: {
    int is_method;
    s = node_at(p, AST_FUNCSTAT, &kw);
    next(p);
    s->a = funcname(p, &is_method);
    s->flag = is_method;
    s->b = body(p, &kw, is_method);
    break;
  }
  case TK_LOCAL:
    next(p);
    if (p->t.kind == TK_FUNCTION) {
      orion_token fn = p->t, name;
      s = node_at(p, AST_LOCALFUNC, &kw);
      next(p);
      name = check_name(p);
      s->a = seal(p, name_node(p, &name));
      s->b = body(p, &fn, 0);
    } else {
      s = node_at(p, AST_LOCAL, &kw);
      localstat(p, s);
    }
    break;
  case TK_DBCOLON:
    s = named_stat(p, AST_LABEL, &kw);
    checknext(p, TK_DBCOLON);
    break;
  case TK_RETURN:
    s = node_at(p, AST_RETURN, &kw);
    next(p);
    if (!block_follow(p, 1) && p->t.kind != ';')
      s->list = explist(p);
    testnext(p, ';');
    break;
  case TK_BREAK:
    s = node_at(p, AST_BREAK, &kw);
    next(p);
    break;
  case TK_GOTO:
    s = named_stat(p, AST_GOTO, &kw);
    break;
  default:
    s = exprstat(p);
    break;
  }
  leave_level(p);
  return seal(p, s);
}

/* ---- entry points --------------------------------------------------------- */

/* Parses the whole chunk; returns 0, or the code a failure unwound with.
 * Kept apart from orion_parse so no local of that function lives across
 * the setjmp. */
static int parse_chunk(parser *p, ast_node **chunk) {
  int rc = setjmp(p->fail);
  if (rc != 0)
    return rc;
  next(p);
  p->vararg = 1; /* the main chunk is a vararg function */
  *chunk = block(p);
  if (p->t.kind != TK_EOF)
    error_expected(p, TK_EOF);
  return 0;
}

int orion_parse(const char *src, size_t len, const char *chunkname,
                orion_ast **out, orion_error *err) {
  parser *p;
  ast_node *chunk = NULL;
  orion_ast *ast;
  orion__arena *arena;
  int rc;
  *out = NULL;
  orion_error_clear(err);
  if (chunkname == NULL)
    chunkname = "?";
  arena = orion__arena_new();
  /* The parser state is on the heap: the jmp_buf and two tokens make it
   * big, and the parser recurses. */
  p = orion_malloc(sizeof *p);
  if (arena == NULL || p == NULL) {
    orion__arena_free(arena);
    orion_free(p);
    return orion_error_set(err, ORION_ENOMEM, "%s: out of memory", chunkname);
  }
  memset(p, 0, sizeof *p);
  p->arena = arena;
  p->err = err;
  p->chunk = chunkname;
  orion_lex_init(&p->lx, src, len, chunkname, arena, err);
  rc = parse_chunk(p, &chunk);
  orion_lex_free(&p->lx);
  orion_free(p);
  if (rc == 0) {
    ast = orion__arena_alloc(arena, sizeof *ast);
    if (ast == NULL)
      rc = orion_error_set(err, ORION_ENOMEM, "%s: out of memory", chunkname);
  }
  if (rc != 0) {
    orion__arena_free(arena);
    return rc;
  }
  ast->chunk = chunk;
  ast->arena = arena;
  *out = ast;
  return 0;
}

void orion_ast_free(orion_ast *ast) {
  /* The orion_ast itself lives in the arena it points to. */
  if (ast != NULL)
    orion__arena_free(ast->arena);
}
