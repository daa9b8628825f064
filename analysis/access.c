/* Access extraction and subscript classification for the loop-body
 * analysis (DESIGN.md section 4, rules 3 and 4): a walk over the body that
 * records every read and write of an array element or slice, with each
 * subscript classified as key_d + c, a constant, or unknown.
 *
 * The walk runs twice: pass 1 counts the assignments and value uses of
 * every local (an alias holds only when its local is never assigned),
 * pass 2 records the accesses into the plan.  Pass 1's counts belong to
 * the node that declares each local (orion__fact), since the two passes
 * need not create their locals in the same order.
 *
 * Soundness comes first: whenever a construct is not understood, the
 * access it may hide is recorded with unknown subscripts, as both a read
 * and a write, so it can only forbid parallelism, never allow a wrong plan.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analyze_int.h"
#include "analysis/parse.h"
#include "util/alloc.h"
#include "util/luaops.h"

/* ======================================================================
 * Subscripts.
 * ====================================================================== */

static orion_sub sub_unknown(void) {
  orion_sub s;
  s.kind = SUB_UNKNOWN;
  s.dim = -1;
  s.c = 0;
  return s;
}

static orion_sub sub_const(int64_t v) {
  orion_sub s;
  s.kind = SUB_CONST;
  s.dim = -1;
  s.c = v;
  return s;
}

/* c - key_d. */
static orion_sub sub_rev(int dim, int64_t v) {
  orion_sub s;
  s.kind = SUB_UNKNOWN;
  s.dim = SUB_REVKEY(dim);
  s.c = v;
  return s;
}

/* l op r for op + or - (or *), where one of them is c - key_d and the other
 * a constant or a key: (c - key) +/- k stays reversed, k - (c - key) is
 * key + (k - c); anything else is unknown. */
static orion_sub rev_arith(int op, orion_sub l, orion_sub r) {
  orion_sub s;
  int64_t v;
  if (op == OP_ADD && SUB_IS_REVKEY(&r) && l.kind == SUB_CONST) {
    s = l; /* k + (c - key) is (c - key) + k */
    l = r;
    r = s;
  }
  if (SUB_IS_REVKEY(&l) && r.kind == SUB_CONST) {
    if (op == OP_ADD && !__builtin_add_overflow(l.c, r.c, &v))
      return sub_rev(SUB_REVKEY_DIM(l.dim), v);
    if (op == OP_SUB && !__builtin_sub_overflow(l.c, r.c, &v))
      return sub_rev(SUB_REVKEY_DIM(l.dim), v);
  }
  if (op == OP_SUB && l.kind == SUB_CONST && SUB_IS_REVKEY(&r) &&
      !__builtin_sub_overflow(l.c, r.c, &v)) {
    s.kind = SUB_KEY;
    s.dim = SUB_REVKEY_DIM(r.dim);
    s.c = v;
    return s;
  }
  return sub_unknown();
}

/* A float subscript with an exact integer value, as Lua converts it. */
static int float_to_int(double d, int64_t *out) {
  return orion_lua_f2i(d, out) == ORION_LUAOP_OK;
}

/* row:key(j) on a ragged row (the value parameter), or a local that
 * holds one: unknown, marked so that --explain says where it came from. */
static int is_row_key(orion__actx *c, const ast_node *e) {
  int vi;
  if (e->kind != AST_METHCALL || e->str == NULL ||
      strcmp(e->str, "key") != 0 || e->a == NULL || e->a->kind != AST_NAME)
    return 0;
  vi = orion__lookup_var(c, e->a->str);
  return vi >= 0 && c->vars[vi].kind == VAR_VALUE &&
         !c->vars[vi].assigned && c->in->iter.ragged;
}

/* Classifies a subscript expression (rule 4). */
orion_sub orion__sub_classify(orion__actx *c, const ast_node *e) {
  orion_sub l, r, s;
  int64_t v;
  switch (e->kind) {
  case AST_INT:
    return sub_const(e->ival);
  case AST_FLT:
    return float_to_int(e->fval, &v) ? sub_const(v) : sub_unknown();
  case AST_PAREN:
    return orion__sub_classify(c, e->a);
  case AST_METHCALL:
    s = sub_unknown();
    if (is_row_key(c, e))
      s.dim = SUB_ROWKEY;
    return s;
  case AST_NAME: {
    int vi = orion__lookup_var(c, e->str);
    if (vi >= 0) {
      const orion__var *x = &c->vars[vi];
      if (x->assigned || orion__outer_var(c, x))
        return sub_unknown();
      if (x->kind == VAR_KEY) {
        s.kind = SUB_KEY;
        s.dim = x->dim;
        s.c = 0;
        return s;
      }
      if (x->alias == ALIAS_SUB)
        return x->sub;
      return sub_unknown();
    } else {
      orion__freename *f = orion__resolve_free(c, e->str);
      if (orion__free_assigned(c, e->str))
        return sub_unknown(); /* the executor's copy changes */
      if (f != NULL && f->b.kind == ORION_BIND_NUMBER) {
        if (f->b.is_int)
          return sub_const(f->b.ival);
        if (float_to_int(f->b.fval, &v))
          return sub_const(v);
      }
      return sub_unknown();
    }
  }
  case AST_UNOP:
    if (e->op == OP_NEG) {
      l = orion__sub_classify(c, e->a);
      if (l.kind == SUB_CONST && l.c != INT64_MIN)
        return sub_const(-l.c);
      /* -(key + c) is -c - key, -(c - key) is key - c. */
      if (l.kind == SUB_KEY && l.c != INT64_MIN)
        return sub_rev(l.dim, -l.c);
      if (SUB_IS_REVKEY(&l) && l.c != INT64_MIN) {
        s.kind = SUB_KEY;
        s.dim = SUB_REVKEY_DIM(l.dim);
        s.c = -l.c;
        return s;
      }
    }
    return sub_unknown();
  case AST_BINOP:
    if (e->op != OP_ADD && e->op != OP_SUB && e->op != OP_MUL)
      return sub_unknown();
    l = orion__sub_classify(c, e->a);
    r = orion__sub_classify(c, e->b);
    if ((SUB_IS_REVKEY(&l) && r.kind != SUB_UNKNOWN) ||
        (SUB_IS_REVKEY(&r) && l.kind != SUB_UNKNOWN))
      return rev_arith(e->op, l, r);
    if (l.kind == SUB_UNKNOWN || r.kind == SUB_UNKNOWN)
      return l.kind == SUB_UNKNOWN && l.dim == SUB_ROWKEY   ? l
             : r.kind == SUB_UNKNOWN && r.dim == SUB_ROWKEY ? r
                                                            : sub_unknown();
    if (e->op == OP_MUL) {
      if (l.kind == SUB_CONST && r.kind == SUB_CONST &&
          !__builtin_mul_overflow(l.c, r.c, &v))
        return sub_const(v);
      return sub_unknown(); /* 2*key is not key + c */
    }
    if (e->op == OP_ADD) {
      if (l.kind == SUB_KEY && r.kind == SUB_KEY)
        return sub_unknown();
      if (__builtin_add_overflow(l.c, r.c, &v))
        return sub_unknown();
      s = l.kind == SUB_KEY ? l : r;
      if (l.kind == SUB_CONST && r.kind == SUB_CONST)
        return sub_const(v);
      s.c = v;
      return s;
    }
    /* OP_SUB: key - c is key + (-c); c - key is reversed (no distance to
     * key + c' is known, SUB_REVKEY); key - key is unknown. */
    if (r.kind == SUB_KEY) {
      if (l.kind == SUB_CONST && !__builtin_sub_overflow(l.c, r.c, &v))
        return sub_rev(r.dim, v);
      return sub_unknown();
    }
    if (__builtin_sub_overflow(l.c, r.c, &v))
      return sub_unknown();
    if (l.kind == SUB_CONST)
      return sub_const(v);
    s = l;
    s.c = v;
    return s;
  default:
    return sub_unknown();
  }
}

/* Appends the source text of node n on one line to out: a statement
 * prints with its newline and a long expression with its line breaks, and
 * an entry of the plan text is one line, so every run of white space that
 * holds a line break becomes one space and the end is trimmed. */
void orion__node_text(const ast_node *n, orion_buf *out) {
  orion_buf raw;
  size_t i, start = out->len;
  int brk = 0;
  orion_buf_init(&raw);
  orion_ast_print(n, &raw);
  for (i = 0; i < raw.len && !raw.oom; i++) {
    char ch = (char)raw.data[i];
    if (ch == '\n' || ch == '\r') {
      brk = 1;
      continue;
    }
    if (brk && (ch == ' ' || ch == '\t'))
      continue;
    if (brk && out->len > start && out->data[out->len - 1] != ' ')
      orion_buf_u8(out, ' ');
    brk = 0;
    orion_buf_u8(out, (uint8_t)ch);
  }
  while (out->len > start && out->data[out->len - 1] == ' ')
    out->len--;
  if (raw.oom)
    out->oom = 1;
  orion_buf_free(&raw);
}

static void put_s(orion_buf *b, const char *s) {
  orion_buf_append(b, s, strlen(s));
}

/* Records an access to r (pass 2 only); all_unknown: every subscript is
 * unknown. */
static void add_access(orion__actx *c, const orion__aref *r, int mode,
                       const ast_node *at, const char *why, int all_unknown) {
  orion_plan *p = c->plan;
  orion_access *a;
  orion_plan_array *pa;
  orion_buf text;
  int i;
  if (c->pass != 2 || r->array < 0)
    return;
  if (orion__grow((void **)&p->acc, &c->capacc, p->nacc, sizeof *p->acc) != 0) {
    c->oom = 1;
    return;
  }
  pa = &p->arrays[r->array];
  a = &p->acc[p->nacc];
  memset(a, 0, sizeof *a);
  a->array = r->array;
  a->mode = mode;
  a->buffered = r->buffered;
  a->nsub = pa->info.ndims;
  for (i = 0; i < a->nsub; i++)
    a->sub[i] = !all_unknown && i < r->nsub ? r->subs[i] : sub_unknown();
  a->line = at != NULL ? at->line : c->body->line;
  a->col = at != NULL ? at->col : c->body->col;
  a->why = orion_strdup(why != NULL ? why : "");
  if (a->why == NULL) {
    c->oom = 1;
    return;
  }
  a->update =
      at != NULL && (at == c->upd_read || at == c->upd_write) ? c->upd_op : 0;
  a->refused = c->refusing;
  orion_buf_init(&text);
  if (at != NULL)
    orion__node_text(at, &text);
  else
    orion_buf_append(&text, pa->name, strlen(pa->name));
  orion_buf_u8(&text, 0);
  if (text.oom) {
    c->oom = 1;
    orion_buf_free(&text);
    orion_free(a->why);
    return;
  }
  a->text = text.data; /* owned by the access */
  p->nacc++;
  if (r->buffered)
    pa->buffered++;
  else if (mode == ACC_READ)
    pa->reads++;
  else
    pa->writes++;
}

static void add_rw(orion__actx *c, const orion__aref *r, const ast_node *at,
                   const char *why, int all_unknown) {
  add_access(c, r, ACC_READ, at, why, all_unknown);
  add_access(c, r, ACC_WRITE, at, why, all_unknown);
}

/* A free name whose value reaches arrays (a helper function, or a table
 * holding arrays or such functions): every reference to it may touch them
 * anywhere, so each reference counts as an unknown read and write. */
static void touch_reach(orion__actx *c, orion__freename *f,
                        const ast_node *at) {
  int i;
  char why[160];
  if (c->pass != 2)
    return;
  snprintf(why, sizeof why, f->b.kind == ORION_BIND_FUNC
                                ? "reached by helper %s"
                                : "reached through %s",
           f->name);
  for (i = 0; i < f->b.nreach; i++) {
    orion__aref r;
    memset(&r, 0, sizeof r);
    r.array =
        orion__plan_array_for(c, &f->b.reach[i].arr, f->b.reach[i].arr.name);
    r.buffered = f->b.reach[i].buffer;
    add_rw(c, &r, at, why, 1);
  }
}

/* The base of an index chain that is the free name (or environment field)
 * bound as f: 1 with r filled when it is an array or a buffer.  Every
 * reference to a value that reaches arrays touches them (pass 2). */
static int free_base(orion__actx *c, orion__freename *f, const ast_node *e,
                     orion__aref *r) {
  if (f == NULL)
    return 0;
  if (f->b.nreach > 0)
    touch_reach(c, f, e);
  if (f->array < 0)
    return 0;
  r->array = f->array;
  r->buffered = f->b.kind == ORION_BIND_BUFFER;
  return 1;
}

/* Adds the text in b (freed here) as a reason that refuses the loop
 * whatever its vectors say. */
void orion__add_refusal(orion__actx *c, orion_buf *b) {
  orion_buf_u8(b, 0);
  if (b->oom || orion__add_str(&c->plan->reasons, &c->plan->nreasons,
                               orion_strdup(b->data)) != 0)
    c->oom = 1;
  orion_buf_free(b);
  c->nrefused++;
}

/* The body's global environment used as a value (`rawget(_ENV, "G")`,
 * `rawset(_ENV, k, v)`, `load(s, n, "t", _ENV)`, `local e = _G`): what it
 * reaches is decided at run time by keys the analysis cannot see, and the
 * executors hold only the globals the body names, so the loop is refused
 * with a reason naming the use (pass 2). */
static void env_refused(orion__actx *c, const ast_node *e) {
  orion_buf b;
  char head[96];
  if (c->pass != 2)
    return;
  orion_buf_init(&b);
  put_s(&b, e->str);
  snprintf(head, sizeof head, " at line %d", e->line);
  put_s(&b, head);
  if (c->call != NULL) {
    put_s(&b, " (in ");
    orion__node_text(c->call, &b);
    put_s(&b, ")");
  }
  put_s(&b, ": the body uses its global environment as a value, so the "
            "analysis cannot tell which globals it reads or changes; name "
            "each global directly (G[i], or ");
  put_s(&b, e->str);
  put_s(&b, ".G[i] with a constant name), or run the loop with "
            "schedule = \"serial\"");
  orion__add_refusal(c, &b);
}

/* Resolves the base of an index chain: a name bound to an array or buffer,
 * or a slice alias.  Returns 1 and fills r when e refers to array data.
 * Any other name reference is noted (pass 1: a local used as a value;
 * pass 2: the arrays a free name reaches). */
static int array_base(orion__actx *c, const ast_node *e, orion__aref *r) {
  int vi;
  memset(r, 0, sizeof *r);
  r->array = -1;
  if (e->kind == AST_PAREN)
    return array_base(c, e->a, r);
  if (e->kind != AST_NAME)
    return 0;
  vi = orion__lookup_var(c, e->str);
  if (vi >= 0) {
    orion__var *x = &c->vars[vi];
    int i;
    if (c->pass == 1 && !c->peek)
      x->as_value++;
    if (x->alias != ALIAS_SLICE || x->assigned)
      return 0;
    r->array = x->array;
    r->buffered = x->buffered;
    r->nsub = x->nsub;
    memcpy(r->subs, x->subs, sizeof r->subs);
    if (orion__outer_var(c, x))
      for (i = 0; i < ORION_MAX_DIMS; i++)
        r->subs[i] = sub_unknown();
    return 1;
  } else {
    orion__freename *f = orion__resolve_free(c, e->str);
    if (f != NULL && f->b.env) {
      env_refused(c, e);
      return 0;
    }
    return free_base(c, f, e, r);
  }
}

/* The global g of `X.g` or `X["g"]` when X is a free name bound to the
 * body's global environment (_ENV, or _G when it is the same table): the
 * same global as the plain name g, which the executors receive because the
 * body's bytecode reads it by that name.  NULL for anything else, such as
 * a computed key or a key holding a NUL byte (those leave X as a value, and
 * the loop is refused). */
static orion__freename *env_field(orion__actx *c, const ast_node *e) {
  orion__freename *f;
  char name[256];
  if (e->kind != AST_INDEX || e->a->kind != AST_NAME ||
      e->b->kind != AST_STR || strlen(e->b->str) != e->b->len ||
      e->b->len + sizeof ORION_ENV_PREFIX > sizeof name ||
      orion__lookup_var(c, e->a->str) >= 0)
    return NULL;
  f = orion__resolve_free(c, e->a->str);
  if (f == NULL || !f->b.env)
    return NULL;
  snprintf(name, sizeof name, "%s%s", ORION_ENV_PREFIX, e->b->str);
  return orion__resolve_free(c, name);
}

/* The iterated element of this iteration: the iterated array (plan array
 * 0) at every loop key. */
static void element_ref(const orion__actx *c, orion__aref *r) {
  int d;
  memset(r, 0, sizeof *r);
  r->array = 0;
  r->nsub = c->plan->ndims;
  for (d = 0; d < r->nsub; d++) {
    r->subs[d].kind = SUB_KEY;
    r->subs[d].dim = d;
  }
}

static void visit_expr(orion__actx *c, const ast_node *e);
static void visit_block(orion__actx *c, const ast_node *b);

/* Walks an index chain a[s1][s2]...: returns 1 with r filled when the chain
 * refers to array data.  Either way every subexpression that is not part of
 * the chain itself (subscripts, a non-array base) is visited exactly once. */
int orion__index_chain(orion__actx *c, const ast_node *e, orion__aref *r) {
  orion__freename *g = env_field(c, e);
  if (g != NULL) {
    memset(r, 0, sizeof *r);
    r->array = -1;
    return free_base(c, g, e, r);
  }
  if (e->kind == AST_INDEX) {
    if (!orion__index_chain(c, e->a, r)) {
      if (!c->peek)
        visit_expr(c, e->b);
      return 0;
    }
    if (!c->peek)
      visit_expr(c, e->b);
    if (r->nsub < ORION_MAX_DIMS)
      r->subs[r->nsub] = orion__sub_classify(c, e->b);
    r->nsub++;
    return 1;
  }
  if (array_base(c, e, r))
    return 1;
  if (e->kind != AST_NAME && !c->peek)
    visit_expr(c, e);
  return 0;
}

static int ndims_of(const orion__actx *c, const orion__aref *r) {
  return c->plan->arrays[r->array].info.ndims;
}

/* How a builtin treats the array data it is given (EFF_*).  A function
 * that can give an argument back, directly or later, passes it on: what
 * the result is used for then reaches the argument's elements.  Besides
 * assert, select and rawget, that is error (pcall, xpcall and
 * coroutine.resume return the value it raised) and table.unpack (the
 * elements of an array it is given are slices, rows of the array, when the
 * array has more than one dimension).  The others listed as reading only
 * return strings, numbers or booleans: tostring and string.format call
 * __tostring, which must return a string; math.* raise on anything but
 * numbers. */
enum {
  EFF_READ = 0,    /* only reads it */
  EFF_THROUGH = 1, /* may give it back: read and written where the result
                      goes (its known leading subscripts kept) */
  EFF_STORE = 2,   /* may store or write it (table.insert, rawset, pcall,
                      setmetatable, any other builtin) */
  EFF_ITER = 3     /* an iterator (ipairs, pairs, next) in a generic for's
                      explist: its results feed the loop machinery and the
                      loop variables hold the argument's elements, which
                      are plain values only when the argument's elements
                      are an array's elements (a slice one subscript short
                      of them); rows of a larger slice pass on */
};

static int builtin_effect(int in_genfor, const char *name) {
  static const char *const pure[] = {
      "print", "type", "tostring", "tonumber", "rawlen", "rawequal",
      "table.concat", "string.format", "string.rep", "string.len",
      "utf8.char", NULL};
  static const char *const through[] = {"assert", "select", "ipairs",
                                        "pairs", "next", "rawget", "error",
                                        "table.unpack", NULL};
  int i;
  if (strncmp(name, "math.", 5) == 0)
    return EFF_READ;
  for (i = 0; pure[i] != NULL; i++)
    if (strcmp(name, pure[i]) == 0)
      return EFF_READ;
  for (i = 0; through[i] != NULL; i++)
    if (strcmp(name, through[i]) == 0)
      return in_genfor && i >= 2 && i <= 4 ? EFF_ITER : EFF_THROUGH;
  return EFF_STORE;
}

/* The name of a builtin callee (print, math.sqrt), or NULL. */
static const char *builtin_name(orion__actx *c, const ast_node *f, char *buf,
                                size_t size) {
  orion__freename *fn;
  if (f->kind == AST_NAME && orion__lookup_var(c, f->str) < 0) {
    /* What the function is, not what the body calls it: `local type =
     * table.unpack` makes type(W, u, u) give a row of W back. */
    fn = orion__resolve_free(c, f->str);
    if (fn != NULL && fn->b.kind == ORION_BIND_BUILTIN && fn->b.std != NULL) {
      snprintf(buf, size, "%s", fn->b.std);
      return buf;
    }
    return NULL;
  }
  if (f->kind == AST_INDEX && f->flag && f->a->kind == AST_NAME &&
      orion__lookup_var(c, f->a->str) < 0) {
    fn = orion__resolve_free(c, f->a->str);
    if (fn != NULL && fn->b.kind == ORION_BIND_BUILTIN) {
      snprintf(buf, size, "%s.%s", f->a->str, f->b->str);
      return buf;
    }
  }
  return NULL;
}

/* `pure` of escape_ref: the value is only read (PURE_YES), may be passed
 * on (PURE_NO), or only read when its own elements are plain values (a
 * slice one subscript short of the array's elements, PURE_IF_ELEMENTS). */
enum { PURE_NO = 0, PURE_YES = 1, PURE_IF_ELEMENTS = 2 };

/* Visits an expression whose value goes somewhere: when it is array data (a
 * whole array or a slice) it escapes, and every element it covers counts as
 * read and written (only read when `pure`).  keep_subs keeps the known
 * leading subscripts (the value stays inside this iteration: a call argument
 * or a local); otherwise the escape is unknown everywhere. */
static void escape_ref(orion__actx *c, const orion__aref *r,
                       const ast_node *e, const char *why, int keep_subs,
                       int pure) {
  if (pure == PURE_IF_ELEMENTS)
    pure = r->nsub + 1 >= ndims_of(c, r);
  if (r->nsub >= ndims_of(c, r))
    add_access(c, r, ACC_READ, e, "read", 0); /* an element, by value */
  else if (pure)
    add_access(c, r, ACC_READ, e, why, 0);
  else
    add_rw(c, r, e, why, !keep_subs);
}

static void escape_value(orion__actx *c, const ast_node *e, const char *why,
                         int keep_subs, int pure) {
  orion__aref r;
  if (e->kind != AST_NAME && e->kind != AST_INDEX) {
    /* A call of a builtin that gives its argument back, or an and/or,
     * passes the argument on to where this value goes (c->flow_keep). */
    int saved = c->flow_keep;
    c->flow_keep = keep_subs;
    visit_expr(c, e);
    c->flow_keep = saved;
    return;
  }
  if (orion__index_chain(c, e, &r))
    escape_ref(c, &r, e, why, keep_subs, pure);
}

/* The arguments of a call of a function the analysis does not know: it
 * may give them back, so they go where the call's value goes (keep). */
static void visit_call_args(orion__actx *c, const ast_list *args,
                            const char *callee, int keep) {
  int i;
  char why[200];
  snprintf(why, sizeof why, "passed to %s", callee);
  for (i = 0; i < args->n; i++)
    escape_value(c, args->v[i], why, keep, PURE_NO);
}

/* The callee text for messages. */
static const char *callee_text(const ast_node *f, char *buf, size_t size) {
  if (f->kind == AST_NAME)
    snprintf(buf, size, "%s", f->str);
  else if (f->kind == AST_INDEX && f->flag && f->a->kind == AST_NAME)
    snprintf(buf, size, "%s.%s", f->a->str, f->b->str);
  else
    snprintf(buf, size, "a function");
  return buf;
}

/* A call nn.f(...) where nn is bound to the orion.nn table: returns 1 and
 * puts "nn.f" in buf.  (orion.nn functions copy array data into matrices
 * and back; they keep no reference to it.) */
static int nn_call(orion__actx *c, const ast_node *f, char *buf, size_t size,
                   const char **fname) {
  orion__freename *fn;
  if (f->kind != AST_INDEX || !f->flag || f->a->kind != AST_NAME ||
      f->b->kind != AST_STR || orion__lookup_var(c, f->a->str) >= 0)
    return 0;
  fn = orion__resolve_free(c, f->a->str);
  if (fn == NULL || fn->b.kind != ORION_BIND_VALUE || !fn->b.nn_module)
    return 0;
  snprintf(buf, size, "%s.%s", f->a->str, f->b->str);
  *fname = f->b->str;
  return 1;
}

/* What to write instead of the method call e on the whole array (or
 * buffer) r: A:get(i, j) is A[i][j], A:set(i, v) is A[i] = v, A:dims() is
 * #A and #A[1]. */
static void method_instead(const orion__actx *c, const ast_node *e,
                           const orion__aref *r, orion_buf *b) {
  const char *m = e->str;
  int i, k, n = e->list.n, nd = ndims_of(c, r);
  int get = strcmp(m, "get") == 0 && n >= 1;
  int set = strcmp(m, "set") == 0 && n >= 2;
  if (r->buffered) {
    put_s(b, "write its elements instead (");
    orion__node_text(e->a, b);
    put_s(b, "[k] = delta)");
  } else if (get || set) {
    put_s(b, "write ");
    orion__node_text(e->a, b);
    for (i = 0; i < (get ? n : n - 1); i++) {
      put_s(b, "[");
      orion__node_text(e->list.v[i], b);
      put_s(b, "]");
    }
    if (set) {
      put_s(b, " = ");
      orion__node_text(e->list.v[n - 1], b);
    }
    put_s(b, " instead");
  } else if (strcmp(m, "dims") == 0) {
    put_s(b, "use ");
    for (i = 0; i < nd; i++) {
      put_s(b, i == 0 ? "#" : i == nd - 1 ? " and #" : ", #");
      orion__node_text(e->a, b);
      for (k = 0; k < i; k++)
        put_s(b, "[1]");
    }
    put_s(b, " instead");
  } else {
    put_s(b, "index the array instead (");
    orion__node_text(e->a, b);
    put_s(b, "[i]), or compute what the body needs on the driver before "
             "the loop and capture it in a local");
  }
}

/* The receiver of the method call e (a name), shown as the body wrote it
 * (`shown`): a method call on a whole
 * array or buffer cannot work in a body (there A.get is the subscript
 * "get"), so the loop is rejected with a reason naming the call; its
 * receiver is still recorded as an unknown read and write, marked
 * refused.  Any other receiver escapes as escape_value records it. */
static void method_receiver(orion__actx *c, const ast_node *e,
                            const ast_node *shown, const ast_node *recv,
                            const char *why) {
  orion__aref r;
  orion_buf b;
  char head[160];
  if (!orion__index_chain(c, recv, &r))
    return;
  if (r.nsub > 0) {
    escape_ref(c, &r, recv, why, c->flow_keep, 0); /* it may return self */
    return;
  }
  if (c->pass == 2) {
    orion_buf_init(&b);
    orion__node_text(shown, &b);
    snprintf(head, sizeof head, " at line %d: a method call on %s '", e->line,
             r.buffered ? "buffer" : "DistArray");
    put_s(&b, head);
    orion__node_text(recv, &b);
    put_s(&b, r.buffered ? "'; a buffer has no methods in a parallel_for "
                           "body: "
                         : "'; DistArray methods run on the driver only, a "
                           "parallel_for body cannot call them: ");
    method_instead(c, e, &r, &b);
    orion__add_refusal(c, &b);
  }
  c->refusing = 1;
  escape_ref(c, &r, recv, why, 1, 0);
  c->refusing = 0;
}

/* The call e of X.m(...) where X names a whole array or buffer: the
 * method call X:m(...) written with a dot (`A.set(A, i, v)`, its first
 * argument X the receiver), refused with the same reason and hint as
 * X:m(...).  Returns 0 when e is not one. */
static int dot_method(orion__actx *c, const ast_node *e, int keep) {
  const ast_node *f = e->a;
  orion__aref r;
  ast_node m;
  char text[160];
  int saved = c->pass, saved_peek = c->peek, whole;
  if (f->kind != AST_INDEX || !f->flag || f->a->kind != AST_NAME ||
      f->b->kind != AST_STR)
    return 0;
  /* Peek, counting nothing: when it is not one, the call is visited as
   * any other. */
  c->pass = 1;
  c->peek = 1;
  whole = orion__index_chain(c, f->a, &r) && r.nsub == 0;
  c->pass = saved;
  c->peek = saved_peek;
  if (!whole)
    return 0;
  m = *e;
  m.kind = AST_METHCALL;
  m.str = f->b->str;
  m.a = f->a;
  if (m.list.n > 0 && m.list.v[0]->kind == AST_NAME &&
      strcmp(m.list.v[0]->str, f->a->str) == 0) {
    m.list.v++;
    m.list.n--;
  }
  snprintf(text, sizeof text, "method .%s", m.str);
  method_receiver(c, &m, e, f->a, text);
  visit_call_args(c, &m.list, text, keep);
  return 1;
}

static void visit_call_in(orion__actx *c, const ast_node *e, int in_genfor) {
  char name[128], text[160];
  const char *bname, *nnf;
  int keep = c->flow_keep; /* read before the arguments change it */
  if (e->kind == AST_METHCALL) {
    /* acc:add(x) and the like on non-array objects are not accesses; a
     * method on a slice may do anything to it; one on a whole array is
     * refused. */
    snprintf(text, sizeof text, "method :%s", e->str);
    if (e->a->kind == AST_NAME)
      method_receiver(c, e, e, e->a, text);
    else
      escape_value(c, e->a, text, keep, 0);
    visit_call_args(c, &e->list, text, keep);
    return;
  }
  if (nn_call(c, e->a, name, sizeof name, &nnf)) {
    /* orion.nn: array arguments are read; nn.write and nn.add_to write
     * their first one (through a buffer, the write is buffered). */
    int writes = strcmp(nnf, "write") == 0 || strcmp(nnf, "add_to") == 0;
    int i;
    char why[200];
    snprintf(why, sizeof why, "passed to %s", name);
    for (i = 0; i < e->list.n; i++)
      escape_value(c, e->list.v[i], why, 1, !(writes && i == 0));
    return;
  }
  if (dot_method(c, e, keep))
    return;
  bname = builtin_name(c, e->a, name, sizeof name);
  if (bname != NULL) {
    int eff = builtin_effect(in_genfor, bname);
    int i;
    char why[200];
    orion__captab_call(c, e, bname);
    snprintf(why, sizeof why, "passed to %s", bname);
    for (i = 0; i < e->list.n; i++)
      escape_value(c, e->list.v[i], why,
                   eff != EFF_STORE && (eff != EFF_THROUGH || keep),
                   eff == EFF_READ    ? PURE_YES
                   : eff == EFF_ITER ? PURE_IF_ELEMENTS
                                     : PURE_NO);
    return;
  }
  callee_text(e->a, text, sizeof text);
  if (e->a->kind == AST_NAME && orion__lookup_var(c, e->a->str) >= 0) {
    /* A direct call of a local function is not a use of it as a value. */
  } else {
    escape_value(c, e->a, "called", 0, 0);
  }
  visit_call_args(c, &e->list, text, keep);
}

/* A call; messages about its parts name it.  Only the call that is a
 * generic for's whole explist is the loop's iterator: calls inside it are
 * not (in `for k, v in f(ipairs(W))`, f is given W itself). */
static void visit_call(orion__actx *c, const ast_node *e) {
  const ast_node *saved = c->call;
  int in_genfor = c->in_genfor;
  c->call = e;
  c->in_genfor = 0;
  visit_call_in(c, e, in_genfor);
  c->call = saved;
  c->in_genfor = in_genfor;
}

/* A function defined inside the body runs in this iteration when it is a
 * local that is only ever called directly; any other closure (passed,
 * stored, returned, reassigned) may run in another iteration, where the
 * keys and slices it captured do not match that iteration's: inside it,
 * every local of the enclosing functions counts as unknown. */
static void visit_func(orion__actx *c, const ast_node *f) {
  int saved = c->nscope, saved_floor = c->floor, i;
  const orion__fact *owner = orion__pass1_fact(c, c->owner);
  int precise = 0;
  const ast_node *saved_call = c->call;
  int saved_genfor = c->in_genfor, saved_keep = c->flow_keep;
  c->owner = NULL;
  c->call = NULL; /* the statements inside are not the call's arguments */
  c->in_genfor = 0;
  c->flow_keep = 1;
  if (owner != NULL && c->pass == 2)
    precise = owner->assigned == 0 && owner->as_value == 0;
  c->func_depth++;
  if (!precise)
    c->floor = c->func_depth; /* the innermost such closure counts */
  for (i = 0; i < f->params.n; i++)
    orion__new_var(c, f->params.v[i], VAR_LOCAL, -1);
  visit_block(c, f->a);
  c->nscope = saved;
  c->func_depth--;
  c->floor = saved_floor;
  c->call = saved_call;
  c->in_genfor = saved_genfor;
  c->flow_keep = saved_keep;
}

static void visit_expr(orion__actx *c, const ast_node *e) {
  int i;
  if (e == NULL)
    return;
  switch (e->kind) {
  case AST_NAME:
  case AST_INDEX: {
    orion__aref r;
    if (orion__index_chain(c, e, &r)) {
      if (r.nsub >= ndims_of(c, &r))
        add_access(c, &r, ACC_READ, e, "read", 0);
      else
        add_rw(c, &r, e, "used as a value", 1);
    }
    break;
  }
  case AST_CALL:
  case AST_METHCALL:
    visit_call(c, e);
    break;
  case AST_FUNC:
    visit_func(c, e);
    break;
  case AST_TABLE:
    for (i = 0; i < e->list.n; i++) {
      const ast_node *fd = e->list.v[i];
      if (fd->a != NULL && !fd->flag)
        visit_expr(c, fd->a);
      escape_value(c, fd->b, "stored in a table", 0, 0);
    }
    break;
  case AST_BINOP:
  case AST_UNOP:
    {
      /* `and` / `or` give one of their operands back: array data flows
       * on.  Other operators only read. */
      int flows = e->kind == AST_BINOP && (e->op == OP_AND || e->op == OP_OR);
      int keep = flows ? c->flow_keep : 1;
      escape_value(c, e->a, flows ? "an and/or operand" : "operand", keep,
                   !flows);
      if (e->kind == AST_BINOP)
        escape_value(c, e->b, flows ? "an and/or operand" : "operand", keep,
                     !flows);
    }
    break;
  case AST_PAREN:
    visit_expr(c, e->a);
    break;
  default:
    break;
  }
}

/* Is the local declared by decl assigned after its declaration (pass 2,
 * from pass 1's facts)? */
static int assigned_later(const orion__actx *c, const ast_node *decl) {
  const orion__fact *f = c->pass == 2 ? orion__pass1_fact(c, decl) : NULL;
  return f != NULL ? f->assigned : 0;
}

static void visit_local(orion__actx *c, const ast_node *s) {
  int i, n = s->list.n;
  orion__var al[16];
  memset(al, 0, sizeof al);
  for (i = 0; i < s->list2.n; i++) {
    const ast_node *e = s->list2.v[i];
    int single = i < n && !(i == s->list2.n - 1 && i < n - 1 &&
                            (e->kind == AST_CALL || e->kind == AST_METHCALL ||
                             e->kind == AST_VARARG));
    if (single && i < 16 && !assigned_later(c, s->list.v[i]))
      orion__alias_of(c, e, &al[i]);
    if (single && i < 16)
      orion__captab_local(c, &al[i], e);
    if (i < 16 && al[i].alias == ALIAS_SLICE) {
      orion__aref r;
      orion__index_chain(c, e, &r); /* a followed alias: visit the subscripts */
    } else if (e->kind == AST_FUNC && i < n) {
      c->owner = s->list.v[i]; /* declared next, visible only after */
      visit_func(c, e);
    } else {
      /* Array data held in a local that is not followed escapes. */
      escape_value(c, e, "held in a local", 1, 0);
    }
  }
  for (i = 0; i < n; i++) {
    int vi = orion__new_var(c, s->list.v[i], VAR_LOCAL, -1);
    if (vi < 0)
      return;
    if (i < 16) {
      c->vars[vi].outer = al[i].outer;
      c->vars[vi].outer_depth = al[i].outer_depth;
    }
    if (i < 16 && !c->vars[vi].assigned) {
      orion__var *x = &c->vars[vi];
      x->alias = al[i].alias;
      x->sub = al[i].sub;
      x->array = al[i].array;
      x->buffered = al[i].buffered;
      x->nsub = al[i].nsub;
      memcpy(x->subs, al[i].subs, sizeof x->subs);
    }
  }
}

static void visit_assign_target(orion__actx *c, const ast_node *t) {
  orion__aref r;
  if (t->kind == AST_NAME) {
    int vi = orion__lookup_var(c, t->str);
    if (vi >= 0 && c->pass == 1)
      c->vars[vi].assigned++;
    if (vi < 0 && c->pass == 1)
      orion__note_free_assigned(c, t->str);
    if (vi < 0 && c->pass == 2) {
      /* Reassigning a name that held array data: its accesses may go to
       * any array the body can reach. */
      orion__freename *f = orion__resolve_free(c, t->str);
      if (f != NULL && (f->array >= 0 || f->b.nreach > 0))
        c->opaque = 1;
    }
    return;
  }
  if (t->kind == AST_INDEX) {
    if (orion__index_chain(c, t, &r)) {
      add_access(c, &r, ACC_WRITE, t, "assignment",
                 r.nsub < ndims_of(c, &r));
      return;
    }
    /* A field of a plain table (index_chain visited the parts): refused
     * when the body did not create the table. */
    orion__captab_target(c, t);
    return;
  }
  visit_expr(c, t);
}

/* Two nodes with the same source text. */
static int same_text(const ast_node *x, const ast_node *y) {
  orion_buf a, b;
  int same;
  orion_buf_init(&a);
  orion_buf_init(&b);
  orion__node_text(x, &a);
  orion__node_text(y, &b);
  same = !a.oom && !b.oom && a.len == b.len &&
         (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
  orion_buf_free(&a);
  orion_buf_free(&b);
  return same;
}

/* An update X[s] = X[s] + e, X[s] = e + X[s] or X[s] = X[s] - e: notes its
 * operand and target (c->upd_read, c->upd_write) so that their accesses
 * are marked as an accumulation (the read serves only the update). */
static void find_update(orion__actx *c, const ast_node *s) {
  const ast_node *t, *rhs;
  c->upd_read = c->upd_write = NULL;
  if (s->list.n != 1 || s->list2.n != 1)
    return;
  t = s->list.v[0];
  rhs = s->list2.v[0];
  if (t->kind != AST_INDEX || rhs->kind != AST_BINOP ||
      (rhs->op != OP_ADD && rhs->op != OP_SUB))
    return;
  if (same_text(rhs->a, t))
    c->upd_read = rhs->a;
  else if (rhs->op == OP_ADD && same_text(rhs->b, t))
    c->upd_read = rhs->b;
  if (c->upd_read != NULL) {
    c->upd_write = t;
    c->upd_op = rhs->op == OP_ADD ? '+' : '-';
  }
}

static void visit_stat(orion__actx *c, const ast_node *s) {
  int i, saved;
  switch (s->kind) {
  case AST_LOCAL:
    visit_local(c, s);
    break;
  case AST_LOCALFUNC:
    if (orion__new_var(c, s->a, VAR_LOCAL, -1) < 0)
      break;
    c->owner = s->a;
    visit_func(c, s->b);
    break;
  case AST_FUNCSTAT:
    visit_assign_target(c, s->a);
    visit_func(c, s->b);
    break;
  case AST_ASSIGN:
    if (c->pass == 2)
      find_update(c, s);
    for (i = 0; i < s->list2.n; i++) {
      const ast_node *t = i < s->list.n ? s->list.v[i] : NULL;
      int keep = t != NULL && t->kind == AST_NAME &&
                 orion__lookup_var(c, t->str) >= 0;
      escape_value(c, s->list2.v[i], keep ? "held in a local" : "stored",
                   keep, 0);
    }
    for (i = 0; i < s->list.n; i++) {
      const ast_node *t = s->list.v[i];
      int vi = t->kind == AST_NAME ? orion__lookup_var(c, t->str) : -1;
      visit_assign_target(c, t);
      if (vi >= 0 && i < s->list2.n) /* a local now holding it */
        orion__captab_local(c, &c->vars[vi], s->list2.v[i]);
    }
    c->upd_read = c->upd_write = NULL;
    break;
  case AST_CALLSTAT:
    visit_call(c, s->a);
    break;
  case AST_DO:
    visit_block(c, s->a);
    break;
  case AST_WHILE:
    visit_expr(c, s->a);
    visit_block(c, s->b);
    break;
  case AST_REPEAT:
    /* The condition sees the block's locals. */
    saved = c->nscope;
    for (i = 0; i < s->a->list.n; i++)
      visit_stat(c, s->a->list.v[i]);
    visit_expr(c, s->b);
    c->nscope = saved;
    break;
  case AST_IF:
    for (i = 0; i < s->list.n; i++) {
      visit_expr(c, s->list.v[i]);
      visit_block(c, s->list2.v[i]);
    }
    if (s->c != NULL)
      visit_block(c, s->c);
    break;
  case AST_NUMFOR:
    visit_expr(c, s->a);
    visit_expr(c, s->b);
    visit_expr(c, s->c);
    saved = c->nscope;
    orion__new_var(c, s->list.v[0], VAR_LOCAL, -1);
    visit_block(c, s->d);
    c->nscope = saved;
    break;
  case AST_GENFOR:
    {
      /* `for k, v in f, s, k0`: f is called with s, so s passes on
       * unless f is a standard iterator, which gives its elements. */
      char nb[128];
      const char *it = s->list2.n > 1
                           ? builtin_name(c, s->list2.v[0], nb, sizeof nb)
                           : NULL;
      int std_iter = it != NULL && (strcmp(it, "next") == 0 ||
                                    strcmp(it, "pairs") == 0 ||
                                    strcmp(it, "ipairs") == 0);
      for (i = 0; i < s->list2.n; i++) {
        c->in_genfor = i == 0;
        escape_value(c, s->list2.v[i], "iterated", 1,
                     i > 0 && std_iter ? PURE_IF_ELEMENTS : PURE_NO);
        c->in_genfor = 0;
      }
    }
    saved = c->nscope;
    for (i = 0; i < s->list.n; i++)
      orion__new_var(c, s->list.v[i], VAR_LOCAL, -1);
    orion__captab_iter(c, s, c->nvars - s->list.n);
    visit_block(c, s->a);
    c->nscope = saved;
    break;
  case AST_RETURN:
    for (i = 0; i < s->list.n; i++)
      escape_value(c, s->list.v[i], "returned", 0, 0);
    if (c->func_depth == 0 && s->list.n > 0 &&
        !(s->list.n == 1 && s->list.v[0]->kind == AST_NIL)) {
      /* The body's return value replaces the iterated element. */
      orion__aref r;
      element_ref(c, &r);
      add_access(c, &r, ACC_WRITE, s, "returned value replaces the element",
                 0);
    }
    break;
  default:
    break;
  }
}

static void visit_block(orion__actx *c, const ast_node *b) {
  int saved = c->nscope, i;
  for (i = 0; i < b->list.n; i++)
    visit_stat(c, b->list.v[i]);
  c->nscope = saved;
}

/* One pass over the body: parameters, then the block. */
void orion__run_pass(orion__actx *c, int pass) {
  const ast_node *f = c->body;
  int i, n = c->plan->ndims;
  c->pass = pass;
  c->nvars = 0;
  c->nscope = 0;
  c->func_depth = 0;
  c->floor = -1;
  c->owner = NULL;
  c->peek = 0;
  c->in_genfor = 0;
  c->flow_keep = 1;
  for (i = 0; i < f->params.n; i++) {
    orion__var_kind k = i < n ? VAR_KEY : i == n ? VAR_VALUE : VAR_LOCAL;
    orion__new_var(c, f->params.v[i], k, i < n ? i : -1);
  }
  if (pass == 2 && f->params.n > n) {
    /* The value parameter is the element: a read of it at its keys. */
    orion__aref r;
    element_ref(c, &r);
    add_access(c, &r, ACC_READ, f->params.v[n], "the element value", 0);
  }
  visit_block(c, f->a);
  if (pass == 2 && c->opaque) {
    /* A name that held array data was reassigned: accesses through it
     * may touch any array, anywhere. */
    int a, na = c->plan->narrays;
    for (a = 0; a < na; a++) {
      orion__aref r;
      memset(&r, 0, sizeof r);
      r.array = a;
      add_rw(c, &r, f, "a reassigned array name may refer to it", 1);
    }
  }
}
