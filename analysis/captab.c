/* Writes to tables the body did not create (docs/analysis.md, "What
 * reaches every array, or refuses the loop").
 *
 * Every executor, and the driver's own run with --executors 0, runs the
 * body on a copy of what it captures: a write to a field of a captured
 * table (`S.n = S.n + 1`, `table.insert(S, x)`, `T[k] = v` for a global
 * T) changes the copy and vanishes, and a write to the body's globals or
 * a standard library table (`_G.x = 1`, `math.abs = nil`) would change
 * what later blocks see.  Such a write refuses the loop, naming the table,
 * the field and the line.
 *
 * The rule: the table written is reached from a free name of the body (an
 * upvalue or a global), directly or through a local the body sets from
 * one (`local r = S.rows; r[1] = 0`), and it is
 *   - the body's global environment (_ENV, _G) or a standard library
 *     table, at any depth;
 *   - a captured table that holds no array, at any depth;
 *   - a captured table that holds arrays, itself (`model.n = 1`): below
 *     it the analysis cannot tell a plain table from an array
 *     (`model.W[u] = x` writes the array W), and takes it as an array.
 * Tables reached another way (a function's result, a function parameter,
 * a value passed to a helper that writes it) are not seen: the limits of
 * docs/analysis.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analyze_int.h"

/* The global g when e is `X.g` or `X["g"]` with X the body's global
 * environment (_ENV, or _G naming it), or NULL. */
static orion__freename *env_global(orion__actx *c, const ast_node *e) {
  orion__freename *x;
  char name[128];
  if (e->a->kind != AST_NAME || e->b->kind != AST_STR ||
      strlen(e->b->str) != e->b->len ||
      e->b->len + sizeof ORION_ENV_PREFIX > sizeof name ||
      orion__lookup_var(c, e->a->str) >= 0)
    return NULL;
  x = orion__resolve_free(c, e->a->str);
  if (x == NULL || !x->b.env)
    return NULL;
  snprintf(name, sizeof name, "%s%s", ORION_ENV_PREFIX, e->b->str);
  return orion__resolve_free(c, name);
}

/* The free name at the root of the chain e (X, X.a, X.a[b], (X).a, and
 * either operand of and/or) with the number of subscripts from it to e's
 * value in *depth; a root that is a local holding a captured table adds
 * that local's depth.  NULL when e is not such a chain. */
static orion__freename *chain_root(orion__actx *c, const ast_node *e,
                                   int *depth) {
  int d = 0, vi;
  orion__freename *f;
  for (;;) {
    if (e->kind == AST_PAREN) {
      e = e->a;
    } else if (e->kind == AST_INDEX) {
      if ((f = env_global(c, e)) != NULL) {
        *depth = d; /* _G.g, _ENV["g"]: the global g */
        return f;
      }
      d++;
      e = e->a;
    } else if (e->kind == AST_BINOP && (e->op == OP_AND || e->op == OP_OR)) {
      f = chain_root(c, e->b, depth);
      if (f == NULL)
        f = chain_root(c, e->a, depth);
      if (f != NULL)
        *depth += d;
      return f;
    } else {
      break;
    }
  }
  if (e->kind != AST_NAME)
    return NULL;
  vi = orion__lookup_var(c, e->str);
  if (vi >= 0) {
    const orion__var *x = &c->vars[vi];
    if (x->outer == NULL)
      return NULL;
    *depth = d + x->outer_depth;
    return orion__resolve_free(c, x->outer);
  }
  f = orion__resolve_free(c, e->str);
  *depth = d;
  return f;
}

/* Does writing into the table `depth` subscripts below the free name f
 * (or holding it in a local, for writes further down) reach a table the
 * body did not create?  (The rule in the header.)  *what names it. */
static int outer_table(const orion__freename *f, int depth,
                       const char **what) {
  if (f == NULL)
    return 0;
  if (f->b.env) {
    *what = "the body's global environment, which every later block and "
            "loop on the executor shares (read only in loop bodies)";
    return 1;
  }
  if (f->b.kind == ORION_BIND_BUILTIN) {
    *what = "a standard library table, which every later block and loop "
            "on the executor shares (read only in loop bodies)";
    return 1;
  }
  if (f->b.kind != ORION_BIND_VALUE || f->b.nn_module)
    return 0;
  if (f->b.nreach > 0 && depth > 0)
    return 0;
  *what = "a table captured from outside the body; each executor, and the "
          "driver with --executors 0, runs the body on a copy of it, so the "
          "write would be lost";
  return 1;
}

/* The displayed name of a root: "_ENV.g" is the global g. */
static const char *root_name(const orion__freename *f) {
  size_t np = strlen(ORION_ENV_PREFIX);
  return strncmp(f->name, ORION_ENV_PREFIX, np) == 0 ? f->name + np
                                                     : f->name;
}

static void put_s(orion_buf *b, const char *s) {
  orion_buf_append(b, s, strlen(s));
}

/* Refuses the loop (pass 2): `at` (its text shown) writes the table
 * rooted at f: its field `field` (NULL: not a constant name) by an
 * assignment, or by a call of the builtin `how`. */
static void refuse(orion__actx *c, const ast_node *at, const char *how,
                   const char *field, const orion__freename *f,
                   const char *what) {
  orion_buf b;
  char head[96];
  if (c->pass != 2)
    return;
  orion_buf_init(&b);
  orion__node_text(at, &b);
  snprintf(head, sizeof head, " at %s:%d: ",
           c->plan->chunkname != NULL ? c->plan->chunkname : "?", at->line);
  put_s(&b, head);
  if (how == NULL) {
    put_s(&b, "the body writes ");
    if (field != NULL && strlen(field) < 64) {
      put_s(&b, "field '");
      put_s(&b, field);
      put_s(&b, "' of '");
    } else {
      put_s(&b, "a field of '");
    }
  } else {
    put_s(&b, "the body changes '");
  }
  put_s(&b, root_name(f));
  put_s(&b, "'");
  if (how != NULL) {
    put_s(&b, " with ");
    put_s(&b, how);
  }
  put_s(&b, ", ");
  put_s(&b, what);
  put_s(&b, ": add into an orion.accumulator (acc:add(x)), write through "
            "an orion.buffer, or use a table created inside the body "
            "(local t = {})");
  orion__add_refusal(c, &b);
}

void orion__captab_target(orion__actx *c, const ast_node *t) {
  int depth = 0;
  const char *what;
  orion__freename *f;
  if (t->kind != AST_INDEX)
    return;
  f = chain_root(c, t->a, &depth);
  if (outer_table(f, depth, &what))
    refuse(c, t, NULL,
           t->b->kind == AST_STR && strlen(t->b->str) == t->b->len
               ? t->b->str
               : NULL,
           f, what);
}

void orion__captab_call(orion__actx *c, const ast_node *e, const char *bname) {
  static const char *const mutators[] = {"table.insert", "table.remove",
                                         "table.sort",   "table.move",
                                         "rawset",       "setmetatable",
                                         NULL};
  int i, arg = 0, depth = 0;
  const char *what;
  orion__freename *f;
  for (i = 0; mutators[i] != NULL; i++)
    if (strcmp(bname, mutators[i]) == 0)
      break;
  if (mutators[i] == NULL)
    return;
  if (strcmp(bname, "table.move") == 0 && e->list.n >= 5)
    arg = 4; /* table.move(a1, f, e, t, a2) writes a2 */
  if (arg >= e->list.n)
    return;
  f = chain_root(c, e->list.v[arg], &depth);
  if (f != NULL && f->b.env && depth == 0)
    return; /* rawset(_ENV, k, v): the environment as a value, refused */
  if (outer_table(f, depth, &what))
    refuse(c, e, bname, NULL, f, what);
}

void orion__captab_local(orion__actx *c, orion__var *x, const ast_node *init) {
  int depth = 0;
  const char *what;
  orion__freename *f = chain_root(c, init, &depth);
  /* A local set from a captured table that holds arrays is followed
   * only when it is that table itself (outer_table's depth rule). */
  if (outer_table(f, depth, &what)) {
    x->outer = f->name;
    x->outer_depth = depth;
  }
}

void orion__captab_iter(orion__actx *c, const ast_node *s, int first) {
  const ast_node *it = s->list2.n > 0 ? s->list2.v[0] : NULL, *t = NULL;
  const orion__freename *fn;
  orion__freename *f;
  int depth = 0;
  const char *what;
  if (it == NULL || s->list.n < 2 || first < 0 || first + 1 >= c->nvars)
    return;
  if (it->kind == AST_CALL && it->list.n > 0 && s->list2.n == 1) {
    t = it->list.v[0]; /* pairs(S), ipairs(S), next(S) */
    it = it->a;
  } else if (s->list2.n > 1) {
    t = s->list2.v[1]; /* next, S */
  }
  if (t == NULL || it->kind != AST_NAME || orion__lookup_var(c, it->str) >= 0)
    return;
  fn = orion__resolve_free(c, it->str);
  if (fn == NULL || fn->b.kind != ORION_BIND_BUILTIN || fn->b.std == NULL ||
      (strcmp(fn->b.std, "pairs") != 0 && strcmp(fn->b.std, "ipairs") != 0 &&
       strcmp(fn->b.std, "next") != 0))
    return;
  /* The loop's value variable holds the iterated table's fields. */
  f = chain_root(c, t, &depth);
  if (outer_table(f, depth + 1, &what)) {
    c->vars[first + 1].outer = f->name;
    c->vars[first + 1].outer_depth = depth + 1;
  }
}
