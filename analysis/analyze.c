/* The loop-body analysis (DESIGN.md section 4).
 *
 * Steps, each a section below:
 *  1. find the body's AST_FUNC in the parsed chunk by its line range;
 *  2. resolve names: parameters are loop keys (the last one, when there is
 *     one more than the keys, is the element value), locals declared once
 *     from a key expression or a slice are aliases, everything free is asked
 *     of the resolver (upvalues and globals bound at launch);
 *  3. extract every read and write of every array element or slice;
 *  4. classify subscripts as key_d + c, constant, or unknown;
 *  5. derive dependence vectors, normalised lexicographically non-negative;
 *  6. choose a schedule among the feasible ones by estimated bytes moved;
 *  7. place every array.
 *
 * Soundness comes first: whenever a construct is not understood, the access
 * it may hide is recorded with unknown subscripts, as both a read and a
 * write, so it can only forbid parallelism, never allow a wrong plan.
 */
#include "analysis/analyze.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/parse.h"
#include "util/alloc.h"

/* ======================================================================
 * Small helpers.
 * ====================================================================== */

static char *xasprintf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  s = orion_malloc((size_t)n + 1);
  if (s == NULL)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static int grow(void **v, int *cap, int n, size_t elem) {
  void *p;
  int c;
  if (n < *cap)
    return 0;
  c = *cap == 0 ? 8 : *cap * 2;
  p = orion_realloc(*v, (size_t)c * elem);
  if (p == NULL)
    return ORION_ENOMEM;
  *v = p;
  *cap = c;
  return 0;
}

/* ======================================================================
 * 1. Finding the body.
 * ====================================================================== */

typedef struct find_ctx {
  int line, last, nparams, vararg;
  const ast_node *best;
  int best_dist;
} find_ctx;

static void find_walk(const ast_node *n, find_ctx *f);

static void find_list(const ast_list *l, find_ctx *f) {
  int i;
  for (i = 0; i < l->n; i++)
    find_walk(l->v[i], f);
}

static void find_walk(const ast_node *n, find_ctx *f) {
  if (n == NULL)
    return;
  if (n->kind == AST_FUNC && n->end_line == f->last &&
      n->params.n == f->nparams && (n->is_vararg != 0) == (f->vararg != 0) &&
      n->line <= f->line) {
    /* Lua records the line of the token after `function` for anonymous
     * functions and the `function` line otherwise: take the closest. */
    int d = f->line - n->line;
    if (f->best == NULL || d < f->best_dist) {
      f->best = n;
      f->best_dist = d;
    }
  }
  find_walk(n->a, f);
  find_walk(n->b, f);
  find_walk(n->c, f);
  find_walk(n->d, f);
  find_list(&n->list, f);
  find_list(&n->list2, f);
  find_list(&n->params, f);
}

const ast_node *orion_find_body(const ast_node *chunk, int line_defined,
                                int last_line, int nparams, int is_vararg) {
  find_ctx f;
  memset(&f, 0, sizeof f);
  f.line = line_defined;
  f.last = last_line;
  f.nparams = nparams;
  f.vararg = is_vararg;
  find_walk(chunk, &f);
  return f.best;
}

/* ======================================================================
 * 2. Names.
 * ====================================================================== */

typedef enum var_kind {
  VAR_KEY,   /* loop key parameter (dim) */
  VAR_VALUE, /* the element value parameter */
  VAR_LOCAL  /* any other local or parameter */
} var_kind;

typedef enum alias_kind {
  ALIAS_NONE,
  ALIAS_SUB,   /* a key expression or constant: sub */
  ALIAS_SLICE  /* a slice of array `array` with nsub leading subscripts */
} alias_kind;

typedef struct var {
  const char *name;
  var_kind kind;
  int dim;          /* VAR_KEY */
  int assigned;     /* assignments after the declaration (pass 1) */
  int as_value;     /* uses other than as a direct callee (pass 1) */
  int depth;        /* function nesting depth of the declaration */
  alias_kind alias;
  orion_sub sub;    /* ALIAS_SUB */
  int array;        /* ALIAS_SLICE: plan array */
  int buffered;     /* ALIAS_SLICE through a buffer */
  int nsub;
  orion_sub subs[ORION_MAX_DIMS];
} var;

/* A free name's binding, cached. */
typedef struct freename {
  char *name;
  orion_binding b;
  int array;       /* plan array for ARRAY / BUFFER */
  orion_reach *reach; /* owned copy */
} freename;

typedef struct actx {
  const orion_analysis_in *in;
  orion_plan *plan;
  const ast_node *body;
  int pass;        /* 1: count assignments; 2: extract accesses */
  var *vars;
  int nvars, capvars;
  int *scope;      /* stack of var indices */
  int nscope, capscope;
  int *pass1_assigned; /* per var index, from pass 1 */
  int *pass1_as_value;
  int floor;       /* vars declared below this depth are seen from a
                      closure that may run in another iteration: their
                      key relations are unknown (-1: none) */
  int owner;       /* the local an AST_FUNC being visited initialises */
  int in_genfor;   /* visiting a generic for's explist */
  int opaque;      /* an array-holding free name is reassigned */
  char **assigned_free; /* free names the body assigns (pass 1) */
  int nassigned_free;
  int npass1;
  int func_depth;  /* 0 in the body itself */
  freename *free;
  int nfree, capfree;
  int capacc, caparr;
  int oom;
} actx;

static int new_var(actx *c, const char *name, var_kind kind, int dim) {
  var *v;
  if (grow((void **)&c->vars, &c->capvars, c->nvars, sizeof *c->vars) != 0 ||
      grow((void **)&c->scope, &c->capscope, c->nscope, sizeof *c->scope) !=
          0) {
    c->oom = 1;
    return -1;
  }
  v = &c->vars[c->nvars];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->kind = kind;
  v->dim = dim;
  v->alias = ALIAS_NONE;
  v->depth = c->func_depth;
  if (c->pass == 2 && c->nvars < c->npass1) {
    v->assigned = c->pass1_assigned[c->nvars];
    v->as_value = c->pass1_as_value[c->nvars];
  }
  c->scope[c->nscope++] = c->nvars;
  return c->nvars++;
}

static int lookup_var(const actx *c, const char *name) {
  int i;
  for (i = c->nscope - 1; i >= 0; i--)
    if (strcmp(c->vars[c->scope[i]].name, name) == 0)
      return c->scope[i];
  return -1;
}

static int plan_array_for(actx *c, const orion_arrayinfo *info,
                          const char *name) {
  orion_plan *p = c->plan;
  int i;
  for (i = 0; i < p->narrays; i++)
    if (p->arrays[i].info.id == info->id)
      return i;
  if (grow((void **)&p->arrays, &c->caparr, p->narrays, sizeof *p->arrays)) {
    c->oom = 1;
    return -1;
  }
  memset(&p->arrays[p->narrays], 0, sizeof p->arrays[0]);
  p->arrays[p->narrays].info = *info;
  p->arrays[p->narrays].name = orion_strdup(name != NULL ? name : "?");
  p->arrays[p->narrays].info.name = p->arrays[p->narrays].name;
  p->arrays[p->narrays].place_dim = -1;
  if (p->arrays[p->narrays].name == NULL)
    c->oom = 1;
  return p->narrays++;
}

/* The binding of a free name (cached; the resolver is asked once). */
static freename *resolve_free(actx *c, const char *name) {
  freename *f;
  int i;
  for (i = 0; i < c->nfree; i++)
    if (strcmp(c->free[i].name, name) == 0)
      return &c->free[i];
  if (grow((void **)&c->free, &c->capfree, c->nfree, sizeof *c->free) != 0) {
    c->oom = 1;
    return NULL;
  }
  f = &c->free[c->nfree];
  memset(f, 0, sizeof *f);
  f->name = orion_strdup(name);
  f->array = -1;
  if (f->name == NULL) {
    c->oom = 1;
    return NULL;
  }
  c->nfree++;
  if (c->in->resolve == NULL || c->in->resolve(c->in->ud, name, &f->b) != 0)
    f->b.kind = ORION_BIND_NONE;
  if (f->b.kind == ORION_BIND_ARRAY || f->b.kind == ORION_BIND_BUFFER)
    f->array = plan_array_for(c, &f->b.arr, f->b.kind == ORION_BIND_ARRAY
                                                ? name
                                                : f->b.arr.name);
  if ((f->b.kind == ORION_BIND_FUNC || f->b.kind == ORION_BIND_VALUE) &&
      f->b.nreach > 0) {
    f->reach = orion_malloc(sizeof *f->reach * (size_t)f->b.nreach);
    if (f->reach == NULL) {
      c->oom = 1;
      f->b.nreach = 0;
    } else {
      memcpy(f->reach, f->b.reach, sizeof *f->reach * (size_t)f->b.nreach);
    }
  }
  f->b.reach = f->reach;
  if (f->reach == NULL)
    f->b.nreach = 0;
  return f;
}

static int free_assigned(const actx *c, const char *name) {
  int i;
  for (i = 0; i < c->nassigned_free; i++)
    if (strcmp(c->assigned_free[i], name) == 0)
      return 1;
  return 0;
}

/* A local declared outside the closure being visited when that closure
 * may run in another iteration (see visit_func). */
static int outer_var(const actx *c, const var *x) {
  return c->floor >= 0 && x->depth < c->floor;
}

/* ======================================================================
 * 3 and 4. Accesses and subscripts.
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

static int float_to_int(double d, int64_t *out) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
      d != floor(d))
    return 0;
  *out = (int64_t)d;
  return 1;
}

/* Classifies a subscript expression (rule 4). */
static orion_sub classify(actx *c, const ast_node *e) {
  orion_sub l, r, s;
  int64_t v;
  switch (e->kind) {
  case AST_INT:
    return sub_const(e->ival);
  case AST_FLT:
    return float_to_int(e->fval, &v) ? sub_const(v) : sub_unknown();
  case AST_PAREN:
    return classify(c, e->a);
  case AST_NAME: {
    int vi = lookup_var(c, e->str);
    if (vi >= 0) {
      const var *x = &c->vars[vi];
      if (x->assigned || outer_var(c, x))
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
      freename *f = resolve_free(c, e->str);
      if (free_assigned(c, e->str))
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
      l = classify(c, e->a);
      if (l.kind == SUB_CONST && l.c != INT64_MIN)
        return sub_const(-l.c);
    }
    return sub_unknown();
  case AST_BINOP:
    if (e->op != OP_ADD && e->op != OP_SUB && e->op != OP_MUL)
      return sub_unknown();
    l = classify(c, e->a);
    r = classify(c, e->b);
    if (l.kind == SUB_UNKNOWN || r.kind == SUB_UNKNOWN)
      return sub_unknown();
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
    /* OP_SUB: key - c is key + (-c); c - key and key - key are unknown. */
    if (r.kind == SUB_KEY)
      return sub_unknown();
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

/* An array reference: array (plan index), the subscripts seen so far, and
 * whether it goes through a buffer. */
typedef struct aref {
  int array;
  int buffered;
  int nsub;
  orion_sub subs[ORION_MAX_DIMS];
} aref;

static void add_access(actx *c, const aref *r, int mode, const ast_node *at,
                       const char *why, int all_unknown) {
  orion_plan *p = c->plan;
  orion_access *a;
  orion_plan_array *pa;
  orion_buf text;
  int i;
  if (c->pass != 2 || r->array < 0)
    return;
  if (grow((void **)&p->acc, &c->capacc, p->nacc, sizeof *p->acc) != 0) {
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
  orion_buf_init(&text);
  if (at != NULL)
    orion_ast_print(at, &text);
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

static void add_rw(actx *c, const aref *r, const ast_node *at, const char *why,
                   int all_unknown) {
  add_access(c, r, ACC_READ, at, why, all_unknown);
  add_access(c, r, ACC_WRITE, at, why, all_unknown);
}

static void add_rw(actx *c, const aref *r, const ast_node *at, const char *why,
                   int all_unknown);

/* A free name whose value reaches arrays (a helper function, or a table
 * holding arrays or such functions): every reference to it may touch them
 * anywhere, so each reference counts as an unknown read and write. */
static void touch_reach(actx *c, freename *f, const ast_node *at) {
  int i;
  char why[160];
  if (c->pass != 2)
    return;
  snprintf(why, sizeof why, f->b.kind == ORION_BIND_FUNC
                                ? "reached by helper %s"
                                : "reached through %s",
           f->name);
  for (i = 0; i < f->b.nreach; i++) {
    aref r;
    memset(&r, 0, sizeof r);
    r.array = plan_array_for(c, &f->b.reach[i].arr, f->b.reach[i].arr.name);
    r.buffered = f->b.reach[i].buffer;
    add_rw(c, &r, at, why, 1);
  }
}

/* Resolves the base of an index chain: a name bound to an array or buffer,
 * or a slice alias.  Returns 1 and fills r when e refers to array data.
 * Any other name reference is noted (pass 1: a local used as a value;
 * pass 2: the arrays a free name reaches). */
static int array_base(actx *c, const ast_node *e, aref *r) {
  int vi;
  memset(r, 0, sizeof *r);
  r->array = -1;
  if (e->kind == AST_PAREN)
    return array_base(c, e->a, r);
  if (e->kind != AST_NAME)
    return 0;
  vi = lookup_var(c, e->str);
  if (vi >= 0) {
    var *x = &c->vars[vi];
    int i;
    if (c->pass == 1)
      x->as_value++;
    if (x->alias != ALIAS_SLICE || x->assigned)
      return 0;
    r->array = x->array;
    r->buffered = x->buffered;
    r->nsub = x->nsub;
    memcpy(r->subs, x->subs, sizeof r->subs);
    if (outer_var(c, x))
      for (i = 0; i < ORION_MAX_DIMS; i++)
        r->subs[i] = sub_unknown();
    return 1;
  } else {
    freename *f = resolve_free(c, e->str);
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
}

/* The iterated element of this iteration: the iterated array (plan array
 * 0) at every loop key. */
static void element_ref(const actx *c, aref *r) {
  int d;
  memset(r, 0, sizeof *r);
  r->array = 0;
  r->nsub = c->plan->ndims;
  for (d = 0; d < r->nsub; d++) {
    r->subs[d].kind = SUB_KEY;
    r->subs[d].dim = d;
  }
}

static void visit_expr(actx *c, const ast_node *e);
static void visit_block(actx *c, const ast_node *b);

/* Walks an index chain a[s1][s2]...: returns 1 with r filled when the chain
 * refers to array data.  Either way every subexpression that is not part of
 * the chain itself (subscripts, a non-array base) is visited exactly once. */
static int index_chain(actx *c, const ast_node *e, aref *r) {
  if (e->kind == AST_INDEX) {
    if (!index_chain(c, e->a, r)) {
      visit_expr(c, e->b);
      return 0;
    }
    visit_expr(c, e->b);
    if (r->nsub < ORION_MAX_DIMS)
      r->subs[r->nsub] = classify(c, e->b);
    r->nsub++;
    return 1;
  }
  if (array_base(c, e, r))
    return 1;
  if (e->kind != AST_NAME)
    visit_expr(c, e);
  return 0;
}

static int ndims_of(const actx *c, const aref *r) {
  return c->plan->arrays[r->array].info.ndims;
}

/* How a builtin treats a slice it is given: 0 only reads it; 1 may return
 * it (its result then flows on: assert, select, ipairs, ...), so it counts
 * as read and written where the result goes; 2 may store or write it
 * (table.insert, rawset, unknown builtins). */
static int builtin_effect(const actx *c, const char *name) {
  static const char *const pure[] = {
      "print", "type", "tostring", "tonumber", "rawlen", "rawequal", "error",
      "table.concat", "table.unpack", "string.format", "string.rep",
      "string.len", "utf8.char", NULL};
  static const char *const through[] = {"assert", "select", "ipairs",
                                        "pairs", "next", "rawget", NULL};
  int i;
  if (strncmp(name, "math.", 5) == 0)
    return 0;
  for (i = 0; pure[i] != NULL; i++)
    if (strcmp(name, pure[i]) == 0)
      return 0;
  for (i = 0; through[i] != NULL; i++)
    if (strcmp(name, through[i]) == 0)
      /* In a generic for's explist the iterator's results feed the loop
       * machinery, and the loop variables hold elements. */
      return c->in_genfor && i >= 2 && i <= 4 ? 0 : 1;
  return 2;
}

/* The name of a builtin callee (print, math.sqrt), or NULL. */
static const char *builtin_name(actx *c, const ast_node *f, char *buf,
                                size_t size) {
  freename *fn;
  if (f->kind == AST_NAME && lookup_var(c, f->str) < 0) {
    fn = resolve_free(c, f->str);
    if (fn != NULL && fn->b.kind == ORION_BIND_BUILTIN) {
      snprintf(buf, size, "%s", f->str);
      return buf;
    }
    return NULL;
  }
  if (f->kind == AST_INDEX && f->flag && f->a->kind == AST_NAME &&
      lookup_var(c, f->a->str) < 0) {
    fn = resolve_free(c, f->a->str);
    if (fn != NULL && fn->b.kind == ORION_BIND_BUILTIN) {
      snprintf(buf, size, "%s.%s", f->a->str, f->b->str);
      return buf;
    }
  }
  return NULL;
}

/* Visits an expression whose value goes somewhere: when it is array data (a
 * whole array or a slice) it escapes, and every element it covers counts as
 * read and written (only read when `pure`).  keep_subs keeps the known
 * leading subscripts (the value stays inside this iteration: a call argument
 * or a local); otherwise the escape is unknown everywhere. */
static void escape_value(actx *c, const ast_node *e, const char *why,
                         int keep_subs, int pure) {
  aref r;
  if (e->kind != AST_NAME && e->kind != AST_INDEX) {
    visit_expr(c, e);
    return;
  }
  if (!index_chain(c, e, &r))
    return;
  if (r.nsub >= ndims_of(c, &r))
    add_access(c, &r, ACC_READ, e, "read", 0); /* an element, by value */
  else if (pure)
    add_access(c, &r, ACC_READ, e, why, 0);
  else
    add_rw(c, &r, e, why, !keep_subs);
}

static void visit_call_args(actx *c, const ast_list *args, const char *callee,
                            int pure) {
  int i;
  char why[200];
  snprintf(why, sizeof why, "passed to %s", callee);
  for (i = 0; i < args->n; i++)
    escape_value(c, args->v[i], why, 1, pure);
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
static int nn_call(actx *c, const ast_node *f, char *buf, size_t size,
                   const char **fname) {
  freename *fn;
  if (f->kind != AST_INDEX || !f->flag || f->a->kind != AST_NAME ||
      f->b->kind != AST_STR || lookup_var(c, f->a->str) >= 0)
    return 0;
  fn = resolve_free(c, f->a->str);
  if (fn == NULL || fn->b.kind != ORION_BIND_VALUE || !fn->b.nn_module)
    return 0;
  snprintf(buf, size, "%s.%s", f->a->str, f->b->str);
  *fname = f->b->str;
  return 1;
}

static void visit_call(actx *c, const ast_node *e) {
  char name[128], text[160];
  const char *bname, *nnf;
  if (e->kind == AST_METHCALL) {
    /* acc:add(x) and the like on non-array objects are not accesses; a
     * method on array data may do anything to it. */
    snprintf(text, sizeof text, "method :%s", e->str);
    escape_value(c, e->a, text, 1, 0);
    visit_call_args(c, &e->list, text, 0);
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
  bname = builtin_name(c, e->a, name, sizeof name);
  if (bname != NULL) {
    int eff = builtin_effect(c, bname);
    int i, saved = c->in_genfor;
    char why[200];
    snprintf(why, sizeof why, "passed to %s", bname);
    c->in_genfor = 0;
    for (i = 0; i < e->list.n; i++)
      escape_value(c, e->list.v[i], why, eff < 2, eff == 0);
    c->in_genfor = saved;
    return;
  }
  callee_text(e->a, text, sizeof text);
  if (e->a->kind == AST_NAME && lookup_var(c, e->a->str) >= 0) {
    /* A direct call of a local function is not a use of it as a value. */
  } else {
    escape_value(c, e->a, "called", 0, 0);
  }
  visit_call_args(c, &e->list, text, 0);
}

/* A function defined inside the body runs in this iteration when it is a
 * local that is only ever called directly; any other closure (passed,
 * stored, returned, reassigned) may run in another iteration, where the
 * keys and slices it captured do not match that iteration's: inside it,
 * every local of the enclosing functions counts as unknown. */
static void visit_func(actx *c, const ast_node *f) {
  int saved = c->nscope, saved_floor = c->floor, i, owner = c->owner;
  int precise = 0;
  c->owner = -1;
  if (owner >= 0 && owner < c->npass1 && c->pass == 2)
    precise = c->pass1_assigned[owner] == 0 && c->pass1_as_value[owner] == 0;
  c->func_depth++;
  if (!precise)
    c->floor = c->func_depth; /* the innermost such closure counts */
  for (i = 0; i < f->params.n; i++)
    new_var(c, f->params.v[i]->str, VAR_LOCAL, -1);
  visit_block(c, f->a);
  c->nscope = saved;
  c->func_depth--;
  c->floor = saved_floor;
}

static void visit_expr(actx *c, const ast_node *e) {
  int i;
  if (e == NULL)
    return;
  switch (e->kind) {
  case AST_NAME:
  case AST_INDEX: {
    aref r;
    if (index_chain(c, e, &r)) {
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
      escape_value(c, e->a, flows ? "an and/or operand" : "operand", 1,
                   !flows);
      if (e->kind == AST_BINOP)
        escape_value(c, e->b, flows ? "an and/or operand" : "operand", 1,
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

/* The alias a local declared once from `init` would be: a key expression,
 * a constant, or a slice.  Computed before the local enters scope (Lua
 * evaluates initialisers first). */
static void alias_of(actx *c, const ast_node *init, var *x) {
  orion_sub s;
  aref r;
  x->alias = ALIAS_NONE;
  if (init == NULL)
    return;
  s = classify(c, init);
  if (s.kind != SUB_UNKNOWN) {
    x->alias = ALIAS_SUB;
    x->sub = s;
    return;
  }
  if (init->kind == AST_INDEX || init->kind == AST_NAME) {
    /* Peek without recording: the subscripts are visited by the caller. */
    int saved = c->pass;
    c->pass = 1;
    if (index_chain(c, init, &r) && r.nsub < ndims_of(c, &r)) {
      x->alias = ALIAS_SLICE;
      x->array = r.array;
      x->buffered = r.buffered;
      x->nsub = r.nsub;
      memcpy(x->subs, r.subs, sizeof x->subs);
    }
    c->pass = saved;
  }
}

static int assigned_later(const actx *c, int vi) {
  return c->pass == 2 && vi < c->npass1 ? c->pass1_assigned[vi] : 0;
}

static void visit_local(actx *c, const ast_node *s) {
  int first = c->nvars, i, n = s->list.n;
  var al[16];
  memset(al, 0, sizeof al);
  for (i = 0; i < s->list2.n; i++) {
    const ast_node *e = s->list2.v[i];
    int single = i < n && !(i == s->list2.n - 1 && i < n - 1 &&
                            (e->kind == AST_CALL || e->kind == AST_METHCALL ||
                             e->kind == AST_VARARG));
    if (single && i < 16 && !assigned_later(c, first + i))
      alias_of(c, e, &al[i]);
    if (i < 16 && al[i].alias == ALIAS_SLICE) {
      aref r;
      index_chain(c, e, &r); /* a followed alias: visit the subscripts */
    } else if (e->kind == AST_FUNC && i < n) {
      c->owner = first + i; /* declared next, visible only after */
      visit_func(c, e);
    } else {
      /* Array data held in a local that is not followed escapes. */
      escape_value(c, e, "held in a local", 1, 0);
    }
  }
  for (i = 0; i < n; i++) {
    int vi = new_var(c, s->list.v[i]->str, VAR_LOCAL, -1);
    if (vi < 0)
      return;
    if (i < 16 && !c->vars[vi].assigned) {
      var *x = &c->vars[vi];
      x->alias = al[i].alias;
      x->sub = al[i].sub;
      x->array = al[i].array;
      x->buffered = al[i].buffered;
      x->nsub = al[i].nsub;
      memcpy(x->subs, al[i].subs, sizeof x->subs);
    }
  }
}

static void visit_assign_target(actx *c, const ast_node *t) {
  aref r;
  if (t->kind == AST_NAME) {
    int vi = lookup_var(c, t->str);
    if (vi >= 0 && c->pass == 1)
      c->vars[vi].assigned++;
    if (vi < 0 && c->pass == 1 && !free_assigned(c, t->str)) {
      char **v = orion_realloc(c->assigned_free,
                               sizeof *v * (size_t)(c->nassigned_free + 1));
      char *dup = orion_strdup(t->str);
      if (v == NULL || dup == NULL) {
        orion_free(dup);
        if (v != NULL)
          c->assigned_free = v;
        c->oom = 1;
        return;
      }
      c->assigned_free = v;
      c->assigned_free[c->nassigned_free++] = dup;
    }
    if (vi < 0 && c->pass == 2) {
      /* Reassigning a name that held array data: its accesses may go to
       * any array the body can reach. */
      freename *f = resolve_free(c, t->str);
      if (f != NULL && (f->array >= 0 || f->b.nreach > 0))
        c->opaque = 1;
    }
    return;
  }
  if (t->kind == AST_INDEX) {
    if (index_chain(c, t, &r)) {
      add_access(c, &r, ACC_WRITE, t, "assignment",
                 r.nsub < ndims_of(c, &r));
      return;
    }
    return; /* a field of a plain table: index_chain visited the parts */
  }
  visit_expr(c, t);
}

static void visit_stat(actx *c, const ast_node *s) {
  int i, saved;
  switch (s->kind) {
  case AST_LOCAL:
    visit_local(c, s);
    break;
  case AST_LOCALFUNC:
    if (new_var(c, s->a->str, VAR_LOCAL, -1) < 0)
      break;
    c->owner = c->nvars - 1;
    visit_func(c, s->b);
    break;
  case AST_FUNCSTAT:
    visit_assign_target(c, s->a);
    visit_func(c, s->b);
    break;
  case AST_ASSIGN:
    for (i = 0; i < s->list2.n; i++) {
      const ast_node *t = i < s->list.n ? s->list.v[i] : NULL;
      int keep = t != NULL && t->kind == AST_NAME && lookup_var(c, t->str) >= 0;
      escape_value(c, s->list2.v[i], keep ? "held in a local" : "stored",
                   keep, 0);
    }
    for (i = 0; i < s->list.n; i++)
      visit_assign_target(c, s->list.v[i]);
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
    new_var(c, s->list.v[0]->str, VAR_LOCAL, -1);
    visit_block(c, s->d);
    c->nscope = saved;
    break;
  case AST_GENFOR:
    for (i = 0; i < s->list2.n; i++) {
      c->in_genfor = 1;
      escape_value(c, s->list2.v[i], "iterated", 1, 1);
      c->in_genfor = 0;
    }
    saved = c->nscope;
    for (i = 0; i < s->list.n; i++)
      new_var(c, s->list.v[i]->str, VAR_LOCAL, -1);
    visit_block(c, s->a);
    c->nscope = saved;
    break;
  case AST_RETURN:
    for (i = 0; i < s->list.n; i++)
      escape_value(c, s->list.v[i], "returned", 0, 0);
    if (c->func_depth == 0 && s->list.n > 0 &&
        !(s->list.n == 1 && s->list.v[0]->kind == AST_NIL)) {
      /* The body's return value replaces the iterated element. */
      aref r;
      element_ref(c, &r);
      add_access(c, &r, ACC_WRITE, s, "returned value replaces the element",
                 0);
    }
    break;
  default:
    break;
  }
}

static void visit_block(actx *c, const ast_node *b) {
  int saved = c->nscope, i;
  for (i = 0; i < b->list.n; i++)
    visit_stat(c, b->list.v[i]);
  c->nscope = saved;
}

/* One pass over the body: parameters, then the block. */
static void run_pass(actx *c, int pass) {
  const ast_node *f = c->body;
  int i, n = c->plan->ndims;
  c->pass = pass;
  c->nvars = 0;
  c->nscope = 0;
  c->func_depth = 0;
  c->floor = -1;
  c->owner = -1;
  c->in_genfor = 0;
  for (i = 0; i < f->params.n; i++) {
    var_kind k = i < n ? VAR_KEY : i == n ? VAR_VALUE : VAR_LOCAL;
    new_var(c, f->params.v[i]->str, k, i < n ? i : -1);
  }
  if (pass == 2 && f->params.n > n) {
    /* The value parameter is the element: a read of it at its keys. */
    aref r;
    element_ref(c, &r);
    add_access(c, &r, ACC_READ, f->params.v[n], "the element value", 0);
  }
  visit_block(c, f->a);
  if (pass == 2 && c->opaque) {
    /* A name that held array data was reassigned: accesses through it
     * may touch any array, anywhere. */
    int a, na = c->plan->narrays;
    for (a = 0; a < na; a++) {
      aref r;
      memset(&r, 0, sizeof r);
      r.array = a;
      add_rw(c, &r, f, "a reassigned array name may refer to it", 1);
    }
  }
}

/* ======================================================================
 * 5. Dependence vectors.
 * ====================================================================== */

static int comp_zero(const orion_dep_comp *x) {
  return x->kind == DEP_INT && x->v == 0;
}

static int comp_nonneg(const orion_dep_comp *x) {
  return x->kind == DEP_NONNEG || (x->kind == DEP_INT && x->v >= 0);
}

/* The vector of iteration distances I' - I such that iteration I doing
 * access a and iteration I' doing access b touch one element.  Returns 0
 * when they never do. */
static int pair_vector(const orion_access *a, const orion_access *b, int n,
                       orion_dep_comp *out) {
  int set[ORION_MAX_DIMS], j, d;
  memset(set, 0, sizeof set);
  for (d = 0; d < n; d++) {
    out[d].kind = DEP_ANY;
    out[d].v = 0;
  }
  for (j = 0; j < a->nsub && j < b->nsub; j++) {
    const orion_sub *x = &a->sub[j], *y = &b->sub[j];
    if (x->kind == SUB_CONST && y->kind == SUB_CONST) {
      if (x->c != y->c)
        return 0; /* different elements */
    } else if (x->kind == SUB_KEY && y->kind == SUB_KEY && x->dim == y->dim) {
      int64_t dist;
      if (__builtin_sub_overflow(x->c, y->c, &dist))
        continue;
      d = x->dim;
      if (set[d] && out[d].v != dist)
        return 0; /* conflicting distances: never the same element */
      set[d] = 1;
      out[d].kind = DEP_INT;
      out[d].v = dist;
    }
    /* Anything else constrains nothing: the component stays ANY. */
  }
  return 1;
}

/* Normalises a vector to be lexicographically non-negative (rule 5).  A
 * leading ANY stands for positive, zero and negative distances at once: it
 * becomes NONNEG and the later non-zero constants become ANY (their sign
 * flips with the negated half).  Returns 0 for the zero vector. */
static int normalise(orion_dep_comp *v, int n) {
  int d, e;
  for (d = 0; d < n && comp_zero(&v[d]); d++)
    ;
  if (d == n)
    return 0;
  if (v[d].kind == DEP_INT && v[d].v < 0) {
    for (e = d; e < n; e++)
      if (v[e].kind == DEP_INT)
        v[e].v = -v[e].v;
  } else if (v[d].kind == DEP_ANY) {
    v[d].kind = DEP_NONNEG;
    for (e = d + 1; e < n; e++)
      if (v[e].kind == DEP_INT && v[e].v != 0)
        v[e].kind = DEP_ANY;
  }
  return 1;
}

static int same_vec(const orion_dep_comp *x, const orion_dep_comp *y, int n) {
  int d;
  for (d = 0; d < n; d++)
    if (x[d].kind != y[d].kind || (x[d].kind == DEP_INT && x[d].v != y[d].v))
      return 0;
  return 1;
}

static int build_vectors(actx *c) {
  orion_plan *p = c->plan;
  int i, j, cap = 0, n = p->ndims;
  for (i = 0; i < p->nacc; i++) {
    for (j = i; j < p->nacc; j++) {
      const orion_access *a = &p->acc[i], *b = &p->acc[j];
      orion_dep_comp v[ORION_MAX_DIMS];
      int k, dup = 0;
      if (a->array != b->array || a->buffered || b->buffered)
        continue;
      if (a->mode == ACC_READ && b->mode == ACC_READ)
        continue;
      if (a->mode == ACC_WRITE && b->mode == ACC_WRITE && !p->ordered)
        continue;
      if (!pair_vector(a, b, n, v) || !normalise(v, n))
        continue;
      for (k = 0; k < p->nvec && !dup; k++)
        dup = p->vec[k].array == a->array && same_vec(p->vec[k].c, v, n);
      if (dup)
        continue;
      if (grow((void **)&p->vec, &cap, p->nvec, sizeof *p->vec) != 0)
        return ORION_ENOMEM;
      memset(&p->vec[p->nvec], 0, sizeof p->vec[0]);
      memcpy(p->vec[p->nvec].c, v, sizeof v);
      p->vec[p->nvec].array = a->array;
      p->vec[p->nvec].acc_a = i;
      p->vec[p->nvec].acc_b = j;
      p->nvec++;
    }
  }
  return 0;
}

/* ======================================================================
 * 6 and 7. Schedules and placement.
 * ====================================================================== */

typedef struct cand {
  orion_sched sched;
  int space, time;
  int skew_dim;
  int64_t skew;
  int order;
} cand;

static int64_t array_bytes(const orion_arrayinfo *a) {
  int64_t n = 1;
  int d;
  if (a->sparse)
    return a->nnz * (a->elem_size + 8 * a->ndims);
  for (d = 0; d < a->ndims; d++)
    if (__builtin_mul_overflow(n, a->dims[d], &n))
      return INT64_MAX / 4;
  return n * a->elem_size;
}

/* The array dimension every non-buffered access indexes with key `key` + 0,
 * or -1. */
static int aligned_dim(const orion_plan *p, int array, int key) {
  int j, i, nd = p->arrays[array].info.ndims;
  for (j = 0; j < nd; j++) {
    int ok = 0, all = 1;
    for (i = 0; i < p->nacc && all; i++) {
      const orion_access *a = &p->acc[i];
      if (a->array != array || a->buffered)
        continue;
      ok = 1;
      all = a->sub[j].kind == SUB_KEY && a->sub[j].dim == key &&
            a->sub[j].c == 0;
    }
    if (ok && all)
      return j;
  }
  return -1;
}

/* Places one array under a candidate; returns its bytes per pass. */
static int64_t place(const orion_plan *p, const cand *k, int array,
                     orion_place *where, int *dim) {
  const orion_plan_array *pa = &p->arrays[array];
  int64_t b = array_bytes(&pa->info), P = p->nparts < 2 ? 2 : p->nparts;
  int j;
  *dim = -1;
  if (array == 0) {
    *where = PLACE_ITERATED;
    return 0;
  }
  /* The target of a buffer lives on the servers that apply its updates,
   * even when it is also read (through a cache). */
  if (pa->writes == 0 && pa->buffered > 0) {
    *where = PLACE_SERVER_BUF;
    return b * P;
  }
  if (pa->reads + pa->writes == 0) {
    *where = PLACE_SERVER_BUF;
    return b * P;
  }
  /* A skewed dimension is cut along a diagonal: arrays cannot follow it. */
  if (k->space >= 0 && !(k->sched == ORION_SCHED_2D_SKEWED &&
                         k->skew_dim == k->space)) {
    j = aligned_dim(p, array, k->space);
    if (j >= 0) {
      *where = PLACE_LOCAL;
      *dim = j;
      return 0;
    }
  }
  if (k->time >= 0 && !(k->sched == ORION_SCHED_2D_SKEWED &&
                        k->skew_dim == k->time)) {
    j = aligned_dim(p, array, k->time);
    if (j >= 0) {
      *where = PLACE_ROTATING;
      *dim = j;
      return b * P;
    }
  }
  if (pa->writes == 0) {
    *where = pa->buffered ? PLACE_SERVER_BUF : PLACE_SERVER_RO;
    return b * P;
  }
  *where = PLACE_SERVER_RW;
  return 2 * b * P;
}

static int64_t cand_bytes(const orion_plan *p, const cand *k) {
  int64_t sum = 0;
  int i, dim;
  orion_place w;
  for (i = 0; i < p->narrays; i++)
    sum += place(p, k, i, &w, &dim);
  return sum;
}

/* Feasibility of a candidate against the vectors; on failure *why names
 * the first vector that forbids it. */
static int feasible(const orion_plan *p, const cand *k, int *why) {
  int i;
  for (i = 0; i < p->nvec; i++) {
    const orion_dep_comp *v = p->vec[i].c;
    int ok;
    switch (k->sched) {
    case ORION_SCHED_NONE:
      ok = 0;
      break;
    case ORION_SCHED_1D:
      ok = comp_zero(&v[k->space]);
      break;
    case ORION_SCHED_2D:
      ok = comp_zero(&v[k->space]) || comp_zero(&v[k->time]);
      break;
    case ORION_SCHED_2D_ORDERED:
      ok = comp_nonneg(&v[k->space]) && comp_nonneg(&v[k->time]);
      break;
    case ORION_SCHED_2D_SKEWED: {
      /* Transform (s, t) to the skewed coordinates; constants only. */
      int64_t s, t, other;
      if (v[k->space].kind != DEP_INT || v[k->time].kind != DEP_INT) {
        ok = 0;
        break;
      }
      s = v[k->space].v;
      t = v[k->time].v;
      other = k->skew_dim == k->time ? s : t;
      if (k->skew_dim == k->time)
        t += k->skew * other;
      else
        s += k->skew * other;
      ok = k->order ? s >= 0 && t >= 0 : s == 0 || t == 0;
      break;
    }
    default:
      ok = 0;
    }
    if (!ok) {
      *why = i;
      return 0;
    }
  }
  return 1;
}

static void vec_text(const orion_plan *p, const orion_dep_comp *v, char *out,
                     size_t size) {
  size_t off = 0;
  int d;
  char comp[32];
  off += (size_t)snprintf(out + off, size - off, "(");
  for (d = 0; d < p->ndims && off < size; d++) {
    orion_dep_comp_text(&v[d], comp, sizeof comp);
    off += (size_t)snprintf(out + off, size - off, "%s%s", d ? ", " : "",
                            comp);
  }
  if (off < size)
    snprintf(out + off, size - off, ")");
}

static const char *key_label(const orion_plan *p, int d, char *buf,
                             size_t size) {
  if (p->keynames[d] != NULL)
    snprintf(buf, size, "%d (%s)", d + 1, p->keynames[d]);
  else
    snprintf(buf, size, "%d", d + 1);
  return buf;
}

static char *cand_label(const orion_plan *p, const cand *k) {
  char a[80], b[80];
  switch (k->sched) {
  case ORION_SCHED_NONE:
    return xasprintf("none (blocks on key %s)", key_label(p, k->space, a,
                                                          sizeof a));
  case ORION_SCHED_1D:
    return xasprintf("1d on key %s", key_label(p, k->space, a, sizeof a));
  case ORION_SCHED_2D:
  case ORION_SCHED_2D_ORDERED:
    return xasprintf("%s space key %s, time key %s",
                     orion_sched_name(k->sched),
                     key_label(p, k->space, a, sizeof a),
                     key_label(p, k->time, b, sizeof b));
  case ORION_SCHED_2D_SKEWED:
    return xasprintf("2d-skewed space key %s, time key %s, key %d' = key %d "
                     "%+" PRId64 " * key %d",
                     key_label(p, k->space, a, sizeof a),
                     key_label(p, k->time, b, sizeof b), k->skew_dim + 1,
                     k->skew_dim + 1, k->skew,
                     (k->skew_dim == k->space ? k->time : k->space) + 1);
  default:
    return xasprintf("?");
  }
}

static int add_str(char ***list, int *n, char *s) {
  char **v;
  if (s == NULL)
    return ORION_ENOMEM;
  v = orion_realloc(*list, sizeof *v * (size_t)(*n + 1));
  if (v == NULL) {
    orion_free(s);
    return ORION_ENOMEM;
  }
  v[(*n)++] = s;
  *list = v;
  return 0;
}

static int sched_rank(orion_sched s) {
  switch (s) {
  case ORION_SCHED_NONE: return 0;
  case ORION_SCHED_1D: return 1;
  case ORION_SCHED_2D: return 2;
  case ORION_SCHED_2D_ORDERED: return 2;
  case ORION_SCHED_2D_SKEWED: return 3;
  default: return 4;
  }
}

static void access_label(const orion_plan *p, const orion_access *a,
                         char *out, size_t size) {
  snprintf(out, size, "%s (%s, line %d%s%s)",
           a->text[0] ? a->text : p->arrays[a->array].name,
           a->mode == ACC_READ ? "read" : "write", a->line,
           a->why != NULL && strcmp(a->why, "read") != 0 &&
                   strcmp(a->why, "assignment") != 0
               ? ", "
               : "",
           a->why != NULL && strcmp(a->why, "read") != 0 &&
                   strcmp(a->why, "assignment") != 0
               ? a->why
               : "");
}

/* Enumerates the candidate schedules (rule 6): none when there are no
 * vectors; otherwise 1-D on every key and 2-D on every ordered pair of keys;
 * skewed 2-D only when no plain candidate is feasible, with the smallest
 * skew factor that works for each pair.  The cheapest feasible candidate by
 * estimated bytes per pass wins; ties go to the simpler schedule, then to
 * enumeration order.  Every other candidate leaves a note saying why. */
static int choose(actx *c) {
  orion_plan *p = c->plan;
  int n = p->ndims, s, t, why, have = 0, rc = 0, sd, skewed;
  int force = c->in->force - 1; /* -1: nothing forced */
  int fspace = c->in->force_space - 1; /* -1: any key on space */
  int64_t best_bytes = 0, f;
  cand best, k;
  char vt[160];
  memset(&best, 0, sizeof best);
  if (force == ORION_SCHED_2D && p->ordered) {
    p->sched = ORION_SCHED_REJECTED;
    p->space = p->time = -1;
    return add_str(&p->reasons, &p->nreasons,
                   xasprintf("schedule \"2d\" (rotation) was forced on an "
                             "ordered loop; ordered loops run as a "
                             "wavefront (\"2d-ordered\")"));
  }
  for (skewed = force == ORION_SCHED_2D_SKEWED; skewed < 2 && !have && rc == 0;
       skewed++) {
    for (s = 0; s < n && rc == 0; s++) {
      for (t = -1; t < n && rc == 0; t++) {
        for (sd = 0; sd < (skewed ? 2 : 1) && rc == 0; sd++) {
          char *label;
          int64_t bytes;
          int found = 0;
          memset(&k, 0, sizeof k);
          k.space = s;
          k.time = t;
          k.skew_dim = -1;
          k.order = p->ordered && t >= 0;
          if (t == s || (fspace >= 0 && s != fspace))
            continue;
          if (t < 0) {
            if (skewed)
              continue;
            k.sched = p->nvec == 0 && force != ORION_SCHED_1D
                          ? ORION_SCHED_NONE
                          : ORION_SCHED_1D;
          } else if (p->nvec == 0 && force < 0) {
            continue; /* nothing to order: blocks on one key suffice */
          } else if (!skewed) {
            k.sched = p->ordered || force == ORION_SCHED_2D_ORDERED
                          ? ORION_SCHED_2D_ORDERED
                          : ORION_SCHED_2D;
            k.order = k.sched == ORION_SCHED_2D_ORDERED;
          } else {
            k.order = p->ordered;
            k.sched = ORION_SCHED_2D_SKEWED;
            k.skew_dim = sd == 0 ? t : s;
            for (f = 1; f <= 8 && !found; f++) {
              int sign;
              for (sign = 1; sign >= -1 && !found; sign -= 2) {
                k.skew = f * sign;
                found = feasible(p, &k, &why);
              }
            }
            if (!found)
              continue; /* too many to list one by one */
          }
          if (force >= 0 && (int)k.sched != force)
            continue;
          if (!found && !feasible(p, &k, &why)) {
            const char *what =
                k.sched == ORION_SCHED_1D
                    ? "is non-zero in the space dimension"
                : k.sched == ORION_SCHED_2D_ORDERED
                    ? "has a negative or unknown component in space or "
                      "time, so a wavefront would run it out of order"
                    : "is non-zero in both dimensions, so concurrent "
                      "blocks would conflict";
            label = cand_label(p, &k);
            vec_text(p, p->vec[why].c, vt, sizeof vt);
            rc = add_str(&p->notes, &p->nnotes,
                         label == NULL ? NULL
                                       : xasprintf("candidate %s: infeasible, "
                                                   "vector %s %s",
                                                   label, vt, what));
            orion_free(label);
            continue;
          }
          bytes = cand_bytes(p, &k);
          if (have && (bytes > best_bytes ||
                       (bytes == best_bytes &&
                        sched_rank(k.sched) >= sched_rank(best.sched)))) {
            label = cand_label(p, &k);
          } else {
            label = have ? cand_label(p, &best) : NULL;
            if (have) {
              int64_t tmp = bytes;
              bytes = best_bytes;
              best_bytes = tmp;
            } else {
              best_bytes = bytes;
            }
            best = k;
            if (!have) {
              have = 1;
              continue;
            }
          }
          rc = add_str(&p->notes, &p->nnotes,
                       label == NULL ? NULL
                                     : xasprintf("candidate %s: feasible, "
                                                 "%" PRId64 " bytes per pass",
                                                 label, bytes));
          orion_free(label);
        }
      }
    }
  }
  if (rc != 0)
    return rc;
  if (!have) {
    p->sched = ORION_SCHED_REJECTED;
    p->space = p->time = -1;
    if (fspace >= 0 || force >= 0) {
      /* What was asked for, then why each candidate failed. */
      int i;
      rc = add_str(&p->reasons, &p->nreasons,
                   fspace >= 0
                       ? xasprintf("space = %d was requested and no feasible "
                                   "schedule puts key %d on the space "
                                   "dimension",
                                   fspace + 1, fspace + 1)
                       : xasprintf("schedule \"%s\" was forced and is "
                                   "infeasible",
                                   orion_sched_name((orion_sched)force)));
      for (i = 0; i < p->nnotes && rc == 0; i++)
        rc = add_str(&p->reasons, &p->nreasons, xasprintf("%s", p->notes[i]));
    }
    return rc;
  }
  p->sched = best.sched;
  p->space = best.space;
  p->time = best.time;
  p->skew_dim = best.skew_dim;
  p->skew = best.skew;
  p->order = best.order;
  p->bytes = best_bytes;
  return 0;
}

static const char *sub_text(const orion_plan *p, const orion_sub *s,
                            char *buf, size_t size) {
  char kb[40];
  if (s->kind == SUB_CONST)
    snprintf(buf, size, "%" PRId64, s->c);
  else if (s->kind == SUB_UNKNOWN)
    snprintf(buf, size, "?");
  else {
    if (p->keynames[s->dim] != NULL)
      snprintf(kb, sizeof kb, "%s", p->keynames[s->dim]);
    else
      snprintf(kb, sizeof kb, "key%d", s->dim + 1);
    if (s->c == 0)
      snprintf(buf, size, "%s", kb);
    else
      snprintf(buf, size, "%s%+" PRId64, kb, s->c);
  }
  return buf;
}

/* Places every array under the chosen schedule, with its reason. */
static int place_all(actx *c) {
  orion_plan *p = c->plan;
  cand k;
  int i;
  char kb[80];
  memset(&k, 0, sizeof k);
  k.sched = p->sched;
  k.space = p->space;
  k.time = p->time;
  k.skew_dim = p->skew_dim;
  k.skew = p->skew;
  for (i = 0; i < p->narrays; i++) {
    orion_plan_array *pa = &p->arrays[i];
    orion_place w;
    int dim;
    char *why;
    if (p->sched == ORION_SCHED_REJECTED) {
      pa->place = i == 0 ? PLACE_ITERATED : PLACE_SERVER_RO;
      pa->reason = xasprintf("%s", i == 0 ? "the iterated array"
                                          : "the loop is rejected");
      if (pa->reason == NULL)
        return ORION_ENOMEM;
      continue;
    }
    place(p, &k, i, &w, &dim);
    pa->place = w;
    pa->place_dim = dim;
    switch (w) {
    case PLACE_ITERATED:
      why = p->time >= 0
                ? xasprintf("the iterated array, cut into blocks on keys "
                            "%d and %d",
                            p->space + 1, p->time + 1)
                : xasprintf("the iterated array, cut into blocks on key %d",
                            p->space + 1);
      break;
    case PLACE_LOCAL:
      why = xasprintf("dimension %d follows key %s in every access, "
                      "partitioned with the space dimension",
                      dim + 1, key_label(p, p->space, kb, sizeof kb));
      break;
    case PLACE_ROTATING:
      why = xasprintf("dimension %d follows key %s in every access, "
                      "rotates with the time dimension",
                      dim + 1, key_label(p, p->time, kb, sizeof kb));
      break;
    case PLACE_SERVER_RO:
      why = xasprintf("read only and no dimension follows the %s key in "
                      "every access; read through a cache refreshed at "
                      "block boundaries",
                      p->time >= 0 ? "space or time" : "space");
      break;
    case PLACE_SERVER_BUF:
      why = xasprintf("written only through an orion.buffer; updates are "
                      "applied at the buffer's flush points%s",
                      pa->reads ? ", reads go through a cache" : "");
      break;
    default:
      why = xasprintf("written directly with subscripts that follow no "
                      "partitioned key; dirty keys are written back");
      break;
    }
    if (why == NULL)
      return ORION_ENOMEM;
    pa->reason = why;
  }
  return 0;
}

/* The reasons a rejected loop cannot run in parallel: each vector with the
 * two accesses behind it, and a buffer suggestion for the written arrays. */
static int reject_reasons(actx *c) {
  orion_plan *p = c->plan;
  int i, rc = 0;
  char vt[160], la[512], lb[512];
  for (i = 0; i < p->nvec && rc == 0; i++) {
    const orion_depvec *v = &p->vec[i];
    vec_text(p, v->c, vt, sizeof vt);
    access_label(p, &p->acc[v->acc_a], la, sizeof la);
    access_label(p, &p->acc[v->acc_b], lb, sizeof lb);
    rc = add_str(&p->reasons, &p->nreasons,
                 xasprintf("vector %s on %s: %s and %s", vt,
                           p->arrays[v->array].name, la, lb));
  }
  for (i = 0; i < p->narrays && rc == 0; i++) {
    int j, dep = 0, returned = 0;
    for (j = 0; j < p->nvec; j++)
      dep |= p->vec[j].array == i;
    for (j = 0; j < p->nacc; j++)
      returned |= p->acc[j].array == i && p->acc[j].mode == ACC_WRITE &&
                  strncmp(p->acc[j].why, "returned", 8) == 0;
    if (!dep || p->arrays[i].writes == 0)
      continue;
    rc = add_str(&p->reasons, &p->nreasons,
                 xasprintf("hint: write %s through orion.buffer(%s, {apply = "
                           "\"add\"}) if its updates may be applied at "
                           "flush points%s, or run the loop with schedule = "
                           "\"serial\"",
                           p->arrays[i].name, p->arrays[i].name,
                           returned ? " (instead of returning new values, "
                                      "which replace elements of the "
                                      "iterated array)"
                                    : ""));
  }
  return rc;
}

/* ======================================================================
 * Entry point.
 * ====================================================================== */

int orion_analyze(const orion_analysis_in *in, orion_plan *plan,
                  orion_error *err) {
  orion_ast *ast = NULL;
  actx c;
  int rc, i, n;
  const ast_node *f;
  memset(plan, 0, sizeof *plan);
  plan->space = plan->time = plan->skew_dim = -1;
  plan->ordered = in->ordered != 0;
  plan->ndims = in->iter.ndims;
  plan->nparts = in->nparts;
  plan->chunkname = orion_strdup(in->body.chunkname != NULL
                                     ? in->body.chunkname
                                     : "?");
  if (plan->chunkname == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  plan->line = in->body.line_defined;
  if (in->body.src == NULL) {
    orion_plan_free(plan);
    return orion_error_set(err, ORION_EINVAL,
                           "the body's source is not available (a C function "
                           "or a function loaded from bytecode); write the "
                           "body as a Lua function in the script");
  }
  rc = orion_parse(in->body.src, in->body.len, in->body.chunkname, &ast, err);
  if (rc != 0) {
    orion_plan_free(plan);
    return rc;
  }
  f = orion_find_body(ast->chunk, in->body.line_defined, in->body.last_line,
                      in->body.nparams, in->body.is_vararg);
  if (f == NULL) {
    orion_ast_free(ast);
    orion_plan_free(plan);
    return orion_error_set(err, ORION_EINVAL,
                           "%s:%d: cannot find the body's source (lines "
                           "%d-%d); was the file changed after it was "
                           "loaded?",
                           in->body.chunkname, in->body.line_defined,
                           in->body.line_defined, in->body.last_line);
  }
  memset(&c, 0, sizeof c);
  c.in = in;
  c.plan = plan;
  c.body = f;
  n = plan->ndims;
  for (i = 0; i < n && i < f->params.n; i++) {
    plan->keynames[i] = orion_strdup(f->params.v[i]->str);
    if (plan->keynames[i] == NULL)
      c.oom = 1;
  }
  /* The iterated array is plan array 0. */
  plan_array_for(&c, &in->iter, in->iter.name != NULL ? in->iter.name
                                                       : "(iterated)");
  run_pass(&c, 1);
  c.npass1 = c.nvars;
  c.pass1_assigned = orion_malloc(sizeof(int) * (size_t)(c.nvars + 1));
  if (c.pass1_assigned == NULL)
    c.oom = 1;
  else
    for (i = 0; i < c.nvars; i++)
      c.pass1_assigned[i] = c.vars[i].assigned;
  c.pass1_as_value = orion_malloc(sizeof(int) * (size_t)(c.nvars + 1));
  if (c.pass1_as_value == NULL)
    c.oom = 1;
  else
    for (i = 0; i < c.nvars; i++)
      c.pass1_as_value[i] = c.vars[i].as_value;
  if (!c.oom)
    run_pass(&c, 2);
  rc = c.oom ? ORION_ENOMEM : build_vectors(&c);
  if (rc == 0)
    rc = choose(&c);
  if (rc == 0)
    rc = place_all(&c);
  if (rc == 0 && plan->sched == ORION_SCHED_REJECTED)
    rc = reject_reasons(&c);
  for (i = 0; i < c.nfree; i++) {
    orion_free(c.free[i].name);
    orion_free(c.free[i].reach);
  }
  orion_free(c.free);
  orion_free(c.vars);
  orion_free(c.scope);
  orion_free(c.pass1_assigned);
  orion_free(c.pass1_as_value);
  for (i = 0; i < c.nassigned_free; i++)
    orion_free(c.assigned_free[i]);
  orion_free(c.assigned_free);
  orion_ast_free(ast);
  if (rc != 0) {
    orion_plan_free(plan);
    return orion_error_set(err, rc, "analysis: %s", orion_strerror(rc));
  }
  return 0;
}

void orion_plan_free(orion_plan *p) {
  int i;
  for (i = 0; i < p->nacc; i++) {
    orion_free(p->acc[i].text);
    orion_free(p->acc[i].why);
  }
  orion_free(p->acc);
  for (i = 0; i < p->narrays; i++) {
    orion_free(p->arrays[i].name);
    orion_free(p->arrays[i].reason);
  }
  orion_free(p->arrays);
  orion_free(p->vec);
  for (i = 0; i < p->nnotes; i++)
    orion_free(p->notes[i]);
  orion_free(p->notes);
  for (i = 0; i < p->nreasons; i++)
    orion_free(p->reasons[i]);
  orion_free(p->reasons);
  for (i = 0; i < ORION_MAX_DIMS; i++)
    orion_free(p->keynames[i]);
  orion_free(p->chunkname);
  memset(p, 0, sizeof *p);
}

/* ======================================================================
 * Text.
 * ====================================================================== */

const char *orion_sched_name(orion_sched s) {
  switch (s) {
  case ORION_SCHED_NONE: return "none";
  case ORION_SCHED_1D: return "1d";
  case ORION_SCHED_2D: return "2d";
  case ORION_SCHED_2D_ORDERED: return "2d-ordered";
  case ORION_SCHED_2D_SKEWED: return "2d-skewed";
  default: return "rejected";
  }
}

const char *orion_place_name(orion_place p) {
  switch (p) {
  case PLACE_ITERATED: return "iterated";
  case PLACE_LOCAL: return "local";
  case PLACE_ROTATING: return "rotating";
  case PLACE_SERVER_RO: return "server (read-only)";
  case PLACE_SERVER_BUF: return "server (buffered)";
  default: return "server (read-write)";
  }
}

void orion_dep_comp_text(const orion_dep_comp *c, char *out, size_t size) {
  if (c->kind == DEP_ANY)
    snprintf(out, size, "ANY");
  else if (c->kind == DEP_NONNEG)
    snprintf(out, size, "NONNEG");
  else
    snprintf(out, size, "%" PRId64, c->v);
}

static void put(orion_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(orion_buf *b, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof line)
    n = (int)sizeof line - 1;
  orion_buf_append(b, line, (size_t)n);
}

void orion_plan_text(const orion_plan *p, orion_buf *out) {
  int i, j;
  char kb[80], vt[160], sb[64], la[512];
  put(out, "schedule: %s\n", orion_sched_name(p->sched));
  put(out, "ordered: %s\n", p->ordered ? "yes" : "no");
  if (p->space >= 0)
    put(out, "space: key %s\n", key_label(p, p->space, kb, sizeof kb));
  else
    put(out, "space: -\n");
  if (p->time >= 0) {
    put(out, "time: key %s (%s)\n", key_label(p, p->time, kb, sizeof kb),
        p->order ? "wavefront" : "rotation");
  } else {
    put(out, "time: -\n");
  }
  if (p->sched == ORION_SCHED_2D_SKEWED)
    put(out, "skew: key %d' = key %d %+" PRId64 " * key %d\n",
        p->skew_dim + 1, p->skew_dim + 1, p->skew,
        (p->skew_dim == p->space ? p->time : p->space) + 1);
  put(out, "vectors:");
  if (p->nvec == 0)
    put(out, " none");
  for (i = 0; i < p->nvec; i++) {
    vec_text(p, p->vec[i].c, vt, sizeof vt);
    put(out, " %s", vt);
  }
  put(out, "\n");
  for (i = 0; i < p->nvec; i++) {
    const orion_depvec *v = &p->vec[i];
    char lb[512];
    vec_text(p, v->c, vt, sizeof vt);
    access_label(p, &p->acc[v->acc_a], la, sizeof la);
    access_label(p, &p->acc[v->acc_b], lb, sizeof lb);
    put(out, "vector %s on %s: %s vs %s\n", vt, p->arrays[v->array].name, la,
        lb);
  }
  for (i = 0; i < p->nacc; i++) {
    const orion_access *a = &p->acc[i];
    if (a->text[0] == '\0')
      continue;
    access_label(p, a, la, sizeof la);
    put(out, "access: %s%s subscripts (", la, a->buffered ? " buffered" : "");
    for (j = 0; j < a->nsub; j++)
      put(out, "%s%s", j ? ", " : "", sub_text(p, &a->sub[j], sb, sizeof sb));
    put(out, ")\n");
  }
  for (i = 0; i < p->narrays; i++)
    put(out, "array %s: %s -- %s\n", p->arrays[i].name,
        orion_place_name(p->arrays[i].place),
        p->arrays[i].reason != NULL ? p->arrays[i].reason : "");
  if (p->sched != ORION_SCHED_REJECTED)
    put(out, "estimate: %" PRId64 " bytes moved per pass with %d partitions "
             "per dimension\n",
        p->bytes, p->nparts < 2 ? 2 : p->nparts);
  for (i = 0; i < p->nnotes; i++)
    put(out, "%s\n", p->notes[i]);
  for (i = 0; i < p->nreasons; i++)
    put(out, "reason: %s\n", p->reasons[i]);
}
