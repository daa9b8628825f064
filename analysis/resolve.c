/* Name resolution for the loop-body analysis (DESIGN.md section 4, rule 2):
 * finding the body in its chunk, the scopes of the body's locals, the
 * bindings of its free names, and aliases.
 *
 * Parameters are loop keys (the last one, when there is one more than the
 * keys, is the element value).  A local declared once from a key
 * expression, a constant or a slice is an alias of it and is followed
 * through subscripts; one that is assigned later is not.  Every free name
 * is asked of the caller's resolver once (upvalues and globals bound at
 * launch) and cached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze_int.h"
#include "util/alloc.h"

/* ======================================================================
 * Finding the body.
 *
 * Lua tells where a function was defined only by its first and last lines
 * and its parameters, and two functions can share all of them: two
 * literals on one line, or a factory whose returned function starts on
 * the factory's own line.  So lua/bodyid.c compiles the chunk's text
 * afresh, compares every function in it with the running body's compiled
 * code, and passes the place of each one that matches; here that place is
 * followed through the AST.  Without it (the analysis's own tests, which
 * have no Lua state) the lines and parameters decide, and a tie is
 * refused rather than guessed.
 * ====================================================================== */

typedef struct func_list {
  const ast_node **v;
  int n, cap, oom;
} func_list;

/* Appends the functions written directly under n (those not inside
 * another function below n) to l, in the order the walk meets them. */
static void direct_funcs(const ast_node *n, func_list *l) {
  int i;
  if (n == NULL)
    return;
  if (n->kind == AST_FUNC) {
    if (orion__grow((void **)&l->v, &l->cap, l->n, sizeof *l->v) != 0)
      l->oom = 1;
    else
      l->v[l->n++] = n;
    return;
  }
  direct_funcs(n->a, l);
  direct_funcs(n->b, l);
  direct_funcs(n->c, l);
  direct_funcs(n->d, l);
  for (i = 0; i < n->list.n; i++)
    direct_funcs(n->list.v[i], l);
  for (i = 0; i < n->list2.n; i++)
    direct_funcs(n->list2.v[i], l);
}

static int before(const ast_node *x, const ast_node *y) {
  return x->line < y->line || (x->line == y->line && x->col < y->col);
}

/* The idx-th (from 0) function written directly in fn (a function, or the
 * chunk's block), in source order, which is the order in which Lua numbers
 * a function's nested prototypes; NULL when there are not that many.
 * Sets *oom when the list could not be built. */
static const ast_node *nested_func(const ast_node *fn, int idx, int *oom) {
  func_list l;
  const ast_node *hit = NULL;
  int i, j;
  memset(&l, 0, sizeof l);
  direct_funcs(fn->kind == AST_FUNC ? fn->a : fn, &l);
  *oom |= l.oom;
  /* Sibling functions never overlap, so their first tokens order them. */
  for (i = 1; i < l.n; i++) {
    const ast_node *x = l.v[i];
    for (j = i; j > 0 && before(x, l.v[j - 1]); j--)
      l.v[j] = l.v[j - 1];
    l.v[j] = x;
  }
  if (!l.oom && idx >= 0 && idx < l.n)
    hit = l.v[idx];
  orion_free(l.v);
  return hit;
}

/* Does function n have the lines and parameters Lua gave the body?  Lua
 * records the line of the token after `function` for anonymous functions
 * and the `function` line otherwise, so n may start a little earlier. */
static int fits(const ast_node *n, const orion_body_src *b) {
  return n->kind == AST_FUNC && n->end_line == b->last_line &&
         n->params.n == b->nparams &&
         (n->is_vararg != 0) == (b->is_vararg != 0) &&
         n->line <= b->line_defined;
}

static const ast_node *func_at(const ast_node *chunk,
                               const orion_body_path *p, int *oom) {
  const ast_node *n = chunk;
  int k;
  for (k = 0; n != NULL && k < p->depth && k < ORION_BODY_MAXDEPTH; k++)
    n = nested_func(n, p->idx[k], oom);
  return n != chunk ? n : NULL;
}

/* "t.lua:3:14, t.lua:3:40" for the functions v[0..n-1], into out; "and N
 * more" when total is larger than n. */
static void name_funcs(const orion_body_src *b, const ast_node *const *v,
                       int n, int total, char *out, size_t size) {
  size_t len = 0;
  int i;
  out[0] = '\0';
  for (i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%s:%d:%d",
                            i > 0 ? (i + 1 == total ? " and " : ", ") : "",
                            b->chunkname, v[i]->line, v[i]->col);
  if (total > n && len < size)
    snprintf(out + len, size - len, " and %d more", total - n);
}

static const ast_node *not_found(const orion_body_src *b, orion_error *err,
                                 const char *why) {
  orion_error_set(err, ORION_EINVAL,
                  "%s:%d: cannot find the body's source (lines %d-%d)%s",
                  b->chunkname, b->line_defined, b->line_defined,
                  b->last_line, why);
  return NULL;
}

static const ast_node *ambiguous(const orion_body_src *b, orion_error *err,
                                 const ast_node *const *v, int n,
                                 int total, const char *what) {
  char names[400];
  name_funcs(b, v, n, total, names, sizeof names);
  orion_error_set(err, ORION_EINVAL,
                  "%s:%d: the body cannot be told apart from another "
                  "function: %s %s, so the analysis cannot know which one "
                  "runs; give the body a line of its own",
                  b->chunkname, b->line_defined, names, what);
  return NULL;
}

/* By the places lua/bodyid.c found. */
static const ast_node *find_by_place(const ast_node *chunk,
                                     const orion_body_src *b,
                                     orion_error *err) {
  const ast_node *v[ORION_BODY_MAXCAND];
  int i, n = b->ncand < ORION_BODY_MAXCAND ? b->ncand : ORION_BODY_MAXCAND;
  int oom = 0;
  for (i = 0; i < n; i++) {
    v[i] = func_at(chunk, &b->cand[i], &oom);
    if (oom) {
      orion_error_set(err, ORION_ENOMEM, "out of memory");
      return NULL;
    }
    /* Lua's parser and the analysis's must see the same functions; if
     * they ever differ, refuse rather than analyse some other code. */
    if (v[i] == NULL || !fits(v[i], b))
      return not_found(b, err, ": the analysis's parse of the file does "
                               "not have the function Lua compiled there");
  }
  if (b->ncand > 1)
    return ambiguous(b, err, v, n, b->ncand, "compile to the same code");
  return v[0];
}

typedef struct find_ctx {
  const orion_body_src *b;
  const ast_node *best[ORION_BODY_MAXCAND];
  int nbest, best_dist;
} find_ctx;

static void find_walk(const ast_node *n, find_ctx *f);

static void find_list(const ast_list *l, find_ctx *f) {
  int i;
  for (i = 0; i < l->n; i++)
    find_walk(l->v[i], f);
}

/* By lines and parameters: the closest start wins, and a tie is kept for
 * the refusal. */
static void find_walk(const ast_node *n, find_ctx *f) {
  if (n == NULL)
    return;
  if (fits(n, f->b)) {
    int d = f->b->line_defined - n->line;
    if (f->nbest == 0 || d < f->best_dist) {
      f->nbest = 0;
      f->best_dist = d;
    }
    if (d == f->best_dist) {
      if (f->nbest < ORION_BODY_MAXCAND)
        f->best[f->nbest] = n;
      f->nbest++;
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

const ast_node *orion_find_body(const ast_node *chunk,
                                const orion_body_src *body, orion_error *err) {
  find_ctx f;
  if (body->ncand > 0)
    return find_by_place(chunk, body, err);
  memset(&f, 0, sizeof f);
  f.b = body;
  find_walk(chunk, &f);
  if (f.nbest == 0)
    return not_found(body, err, "; was the file changed after it was "
                                "loaded?");
  if (f.nbest > 1)
    return ambiguous(body, err, f.best,
                     f.nbest < ORION_BODY_MAXCAND ? f.nbest
                                                  : ORION_BODY_MAXCAND,
                     f.nbest, "share its lines and parameters");
  return f.best[0];
}

/* ======================================================================
 * Scopes and free names.
 * ====================================================================== */

int orion__new_var(orion__actx *c, const ast_node *decl, orion__var_kind kind,
                   int dim) {
  orion__var *v;
  const orion__fact *f;
  if (orion__grow((void **)&c->vars, &c->capvars, c->nvars,
                  sizeof *c->vars) != 0 ||
      orion__grow((void **)&c->scope, &c->capscope, c->nscope,
                  sizeof *c->scope) != 0) {
    c->oom = 1;
    return ORION_ENOMEM;
  }
  v = &c->vars[c->nvars];
  memset(v, 0, sizeof *v);
  v->name = decl->str;
  v->decl = decl;
  v->kind = kind;
  v->dim = dim;
  v->alias = ALIAS_NONE;
  v->depth = c->func_depth;
  f = c->pass == 2 ? orion__pass1_fact(c, decl) : NULL;
  if (f != NULL) {
    v->assigned = f->assigned;
    v->as_value = f->as_value;
  }
  c->scope[c->nscope++] = c->nvars;
  return c->nvars++;
}

static int fact_cmp(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)((const orion__fact *)x)->decl;
  uintptr_t b = (uintptr_t)((const orion__fact *)y)->decl;
  return a < b ? -1 : a > b;
}

const orion__fact *orion__pass1_fact(const orion__actx *c,
                                     const ast_node *decl) {
  orion__fact key;
  if (c->facts == NULL || decl == NULL)
    return NULL;
  key.decl = decl;
  return bsearch(&key, c->facts, (size_t)c->nfacts, sizeof *c->facts,
                 fact_cmp);
}

int orion__keep_facts(orion__actx *c) {
  int i, n = 0;
  c->facts = orion_malloc(sizeof *c->facts * (size_t)(c->nvars + 1));
  if (c->facts == NULL)
    return ORION_ENOMEM;
  for (i = 0; i < c->nvars; i++) {
    c->facts[i].decl = c->vars[i].decl;
    c->facts[i].assigned = c->vars[i].assigned;
    c->facts[i].as_value = c->vars[i].as_value;
  }
  qsort(c->facts, (size_t)c->nvars, sizeof *c->facts, fact_cmp);
  /* One entry per declaration: a declaration visited twice adds up. */
  for (i = 0; i < c->nvars; i++) {
    if (n > 0 && c->facts[n - 1].decl == c->facts[i].decl) {
      c->facts[n - 1].assigned += c->facts[i].assigned;
      c->facts[n - 1].as_value += c->facts[i].as_value;
    } else {
      c->facts[n++] = c->facts[i];
    }
  }
  c->nfacts = n;
  return 0;
}

int orion__lookup_var(const orion__actx *c, const char *name) {
  int i;
  for (i = c->nscope - 1; i >= 0; i--)
    if (strcmp(c->vars[c->scope[i]].name, name) == 0)
      return c->scope[i];
  return -1;
}

int orion__plan_array_for(orion__actx *c, const orion_arrayinfo *info,
                          const char *name) {
  orion_plan *p = c->plan;
  int i;
  for (i = 0; i < p->narrays; i++)
    if (p->arrays[i].info.id == info->id)
      return i;
  if (orion__grow((void **)&p->arrays, &c->caparr, p->narrays,
                  sizeof *p->arrays)) {
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

/* The body names the iterated array `name` (free name f): the plan calls
 * the array so, as the body's accesses do, and keeps the caller's name
 * when it differs (a function that runs `parallel_for(X, ...)` on its
 * parameter, a body that names the array by another upvalue). */
static void name_iterated(orion__actx *c, const char *name) {
  orion_plan_array *pa = &c->plan->arrays[0];
  char *n;
  if (c->iter_named)
    return;
  c->iter_named = 1;
  if (strcmp(pa->name, name) == 0)
    return;
  n = orion_strdup(name);
  if (n == NULL) {
    c->oom = 1;
    return;
  }
  if (c->in->iter.name != NULL && !c->in->iter_guessed)
    pa->caller = pa->name;
  else
    orion_free(pa->name);
  pa->name = n;
  pa->info.name = n;
}

/* The binding of a free name (cached; the resolver is asked once). */
orion__freename *orion__resolve_free(orion__actx *c, const char *name) {
  orion__freename *f;
  int i;
  for (i = 0; i < c->nfree; i++)
    if (strcmp(c->free[i].name, name) == 0)
      return &c->free[i];
  if (orion__grow((void **)&c->free, &c->capfree, c->nfree,
                  sizeof *c->free) != 0) {
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
  if (f->b.kind == ORION_BIND_ARRAY || f->b.kind == ORION_BIND_BUFFER) {
    /* The global g read as _ENV.g is the array g. */
    const char *an = name;
    if (strncmp(an, ORION_ENV_PREFIX, strlen(ORION_ENV_PREFIX)) == 0)
      an += strlen(ORION_ENV_PREFIX);
    f->array = orion__plan_array_for(
        c, &f->b.arr, f->b.kind == ORION_BIND_ARRAY ? an : f->b.arr.name);
    if (f->array == 0 && f->b.kind == ORION_BIND_ARRAY)
      name_iterated(c, an);
  }
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

int orion__free_assigned(const orion__actx *c, const char *name) {
  int i;
  for (i = 0; i < c->nassigned_free; i++)
    if (strcmp(c->assigned_free[i], name) == 0)
      return 1;
  return 0;
}

void orion__note_free_assigned(orion__actx *c, const char *name) {
  char **v;
  char *dup;
  if (orion__free_assigned(c, name))
    return;
  v = orion_realloc(c->assigned_free,
                    sizeof *v * (size_t)(c->nassigned_free + 1));
  dup = orion_strdup(name);
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

/* A local declared outside the closure being visited when that closure
 * may run in another iteration (see visit_func in access.c). */
int orion__outer_var(const orion__actx *c, const orion__var *x) {
  return c->floor >= 0 && x->depth < c->floor;
}

/* ======================================================================
 * Aliases.
 * ====================================================================== */

/* The alias a local declared once from `init` would be: a key expression,
 * a constant, or a slice.  Computed before the local enters scope (Lua
 * evaluates initialisers first). */
void orion__alias_of(orion__actx *c, const ast_node *init, orion__var *x) {
  orion_sub s;
  orion__aref r;
  x->alias = ALIAS_NONE;
  if (init == NULL)
    return;
  s = orion__sub_classify(c, init);
  if (s.kind != SUB_UNKNOWN || s.dim == SUB_ROWKEY ||
      SUB_IS_REVKEY(&s)) {
    x->alias = ALIAS_SUB;
    x->sub = s;
    return;
  }
  if (init->kind == AST_INDEX || init->kind == AST_NAME) {
    /* Peek without recording or counting anything: the caller visits
     * the initialiser once, after this, in both passes alike. */
    int saved = c->pass, saved_peek = c->peek;
    c->pass = 1;
    c->peek = 1;
    if (orion__index_chain(c, init, &r) &&
        r.nsub < c->plan->arrays[r.array].info.ndims) {
      x->alias = ALIAS_SLICE;
      x->array = r.array;
      x->buffered = r.buffered;
      x->nsub = r.nsub;
      memcpy(x->subs, r.subs, sizeof x->subs);
    }
    c->pass = saved;
    c->peek = saved_peek;
  }
}
