/* The loop-body analysis's internals, shared by its files (not part of the
 * public API in analysis/analyze.h):
 *
 *  analyze.c   the entry point: runs the steps below in order, frees a plan;
 *  resolve.c   name resolution: scopes of the body's locals, the bindings
 *              of free names, aliases (locals that stand for a key
 *              expression, a constant or a slice);
 *  access.c    access extraction (the walk over the body) and subscript
 *              classification;
 *  depend.c    dependence vectors between the accesses;
 *  choose.c    the candidate schedules, the choice, placement of arrays
 *              and the reasons of a rejection;
 *  explain.c   the plan as text (orion_plan_text and its pieces).
 *
 * Everything here runs on the caller's thread; nothing is global.
 */
#ifndef ORION_ANALYSIS_ANALYZE_INT_H
#define ORION_ANALYSIS_ANALYZE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analyze.h"

/* Grows *v (elements of `elem` bytes, capacity *cap) so that index n fits;
 * 0 or ORION_ENOMEM (then *v is unchanged). */
int orion__grow(void **v, int *cap, int n, size_t elem);

/* ---- the state of one analysis (resolve.c, access.c) ------------------- */

typedef enum orion__var_kind {
  VAR_KEY,   /* loop key parameter (dim) */
  VAR_VALUE, /* the element value parameter */
  VAR_LOCAL  /* any other local or parameter */
} orion__var_kind;

typedef enum orion__alias_kind {
  ALIAS_NONE,
  ALIAS_SUB,   /* a key expression or constant: sub */
  ALIAS_SLICE  /* a slice of array `array` with nsub leading subscripts */
} orion__alias_kind;

typedef struct orion__var {
  const char *name;
  const ast_node *decl; /* the AST_NAME that declares it: the key of its
                           facts from pass 1 */
  orion__var_kind kind;
  int dim;          /* VAR_KEY */
  int assigned;     /* assignments after the declaration (pass 1) */
  int as_value;     /* uses other than as a direct callee (pass 1) */
  int depth;        /* function nesting depth of the declaration */
  orion__alias_kind alias;
  orion_sub sub;    /* ALIAS_SUB */
  int array;        /* ALIAS_SLICE: plan array */
  int buffered;     /* ALIAS_SLICE through a buffer */
  int nsub;
  orion_sub subs[ORION_MAX_DIMS];
  const char *outer; /* set from a table the body did not create: the
                        free name at its root (captab.c), or NULL */
  int outer_depth;   /* subscripts from that name to the local's value */
} orion__var;

/* What pass 1 found about one declared local, keyed by its declaring
 * node: pass 2 creates its locals in its own order (a look-ahead for an
 * alias may visit a function literal once or twice), so a position in
 * creation order does not name the same local in both passes. */
typedef struct orion__fact {
  const ast_node *decl;
  int assigned;
  int as_value;
} orion__fact;

/* A free name's binding, cached. */
typedef struct orion__freename {
  char *name;
  orion_binding b;
  int array;       /* plan array for ARRAY / BUFFER */
  orion_reach *reach; /* owned copy */
} orion__freename;

typedef struct orion__actx {
  const orion_analysis_in *in;
  orion_plan *plan;
  const ast_node *body;
  int pass;        /* 1: count assignments; 2: extract accesses */
  orion__var *vars;
  int nvars, capvars;
  int *scope;      /* stack of var indices */
  int nscope, capscope;
  orion__fact *facts; /* from pass 1, sorted by decl */
  int nfacts;
  int floor;       /* vars declared below this depth are seen from a
                      closure that may run in another iteration: their
                      key relations are unknown (-1: none) */
  const ast_node *owner; /* the declaration of the local an AST_FUNC
                            being visited initialises, or NULL */
  int peek;        /* looking ahead for an alias: visit nothing, count
                      nothing */
  int in_genfor;   /* visiting a generic for's explist */
  int opaque;      /* an array-holding free name is reassigned */
  char **assigned_free; /* free names the body assigns (pass 1) */
  int nassigned_free;
  int func_depth;  /* 0 in the body itself */
  orion__freename *free;
  int nfree, capfree;
  int capacc, caparr;
  const ast_node *upd_read, *upd_write; /* the operand and the target of
                                           the update X[s] = X[s] +/- e
                                           being visited */
  int upd_op;      /* its operator, '+' or '-' */
  int flow_keep;   /* where the value being visited goes keeps its known
                      leading subscripts (a call argument, a local: 1) or
                      not (stored, returned: 0); what a builtin gives back
                      or an and/or yields goes there too */
  const ast_node *call; /* the call whose arguments are being visited
                           (for messages), or NULL */
  int refusing;    /* recording the receiver of a refused method call */
  int nrefused;    /* method calls on whole arrays (each a reason) */
  int iter_named;  /* the body has named the iterated array */
  int oom;
} orion__actx;

/* An array reference: array (plan index), the subscripts seen so far, and
 * whether it goes through a buffer. */
typedef struct orion__aref {
  int array;
  int buffered;
  int nsub;
  orion_sub subs[ORION_MAX_DIMS];
} orion__aref;

/* ---- resolve.c ---------------------------------------------------------- */

/* Declares the local (or parameter) that the AST_NAME decl declares in the
 * current scope; its index, or -1 (c->oom set).  In pass 2 it starts with
 * the facts pass 1 found for decl. */
int orion__new_var(orion__actx *c, const ast_node *decl, orion__var_kind kind,
                   int dim);
/* Pass 1's facts about the local declared by decl, or NULL when pass 1
 * has not run (or saw no such declaration). */
const orion__fact *orion__pass1_fact(const orion__actx *c,
                                     const ast_node *decl);
/* Gathers pass 1's facts from c->vars into c->facts, one per declaring
 * node (summed when a node was visited more than once); 0 or
 * ORION_ENOMEM. */
int orion__keep_facts(orion__actx *c);
/* The innermost local named `name` in scope, or -1. */
int orion__lookup_var(const orion__actx *c, const char *name);
/* The plan array of `info` (added on first sight), or -1 (c->oom set). */
int orion__plan_array_for(orion__actx *c, const orion_arrayinfo *info,
                          const char *name);
/* The binding of a free name (cached; the resolver is asked once); NULL
 * on out of memory. */
orion__freename *orion__resolve_free(orion__actx *c, const char *name);
/* Does the body assign the free name (seen in pass 1)? */
int orion__free_assigned(const orion__actx *c, const char *name);
/* Records that the body assigns the free name (pass 1). */
void orion__note_free_assigned(orion__actx *c, const char *name);
/* A local declared outside the closure being visited when that closure
 * may run in another iteration. */
int orion__outer_var(const orion__actx *c, const orion__var *x);
/* The alias a local declared once from `init` would be (x->alias and its
 * fields); computed before the local enters scope. */
void orion__alias_of(orion__actx *c, const ast_node *init, orion__var *x);

/* ---- access.c ----------------------------------------------------------- */

/* Classifies a subscript expression: key_d + c, a constant, or unknown. */
orion_sub orion__sub_classify(orion__actx *c, const ast_node *e);
/* Walks an index chain a[s1][s2]...: 1 with r filled when it refers to
 * array data; every other subexpression is visited once either way. */
int orion__index_chain(orion__actx *c, const ast_node *e, orion__aref *r);
/* One pass over the body (1: count assignments and uses; 2: extract the
 * accesses into c->plan). */
void orion__run_pass(orion__actx *c, int pass);

/* The source text of n on one line, appended to out. */
void orion__node_text(const ast_node *n, orion_buf *out);
/* Adds the text in b (freed) as a reason that refuses the loop. */
void orion__add_refusal(orion__actx *c, orion_buf *b);

/* ---- captab.c: writes to tables the body did not create ---------------- */

/* The assignment target t (a field of a plain table): refuses the loop
 * when the table is reached from outside the body (pass 2). */
void orion__captab_target(orion__actx *c, const ast_node *t);
/* A call of the builtin bname (table.insert, rawset, ...) that changes its
 * table argument: refuses the loop when the table is reached from outside
 * the body (pass 2). */
void orion__captab_call(orion__actx *c, const ast_node *e, const char *bname);
/* The local x is set to init: notes in x when init is a table reached from
 * outside the body. */
void orion__captab_local(orion__actx *c, orion__var *x, const ast_node *init);
/* The generic for s, whose variables are c->vars[first...]: notes in its
 * value variable when it iterates (pairs, ipairs, next) a table reached
 * from outside the body. */
void orion__captab_iter(orion__actx *c, const ast_node *s, int first);

/* ---- depend.c ----------------------------------------------------------- */

static inline int orion__dep_zero(const orion_dep_comp *x) {
  return x->kind == DEP_INT && x->v == 0;
}

static inline int orion__dep_nonneg(const orion_dep_comp *x) {
  return x->kind == DEP_NONNEG || (x->kind == DEP_INT && x->v >= 0);
}

/* Fills p->vec from p->acc; 0 or ORION_ENOMEM. */
int orion__dep_vectors(orion_plan *p);

/* ---- choose.c ----------------------------------------------------------- */

/* Appends s (owned; NULL means out of memory) to the list; 0 or
 * ORION_ENOMEM (then s is freed). */
int orion__add_str(char ***list, int *n, char *s);

/* Chooses the schedule (p->sched and its keys, p->notes, p->reasons when
 * a forced choice fails); 0 or ORION_ENOMEM. */
int orion__choose(orion_plan *p, const orion_analysis_in *in);
/* Places every array under the chosen schedule, with its reason. */
int orion__place_all(orion_plan *p);
/* The reasons a rejected loop cannot run in parallel; `ordered` is the
 * schedule the loop would get with ordered = true (ORION_SCHED_REJECTED:
 * none, or not tried). */
int orion__reject_reasons(orion_plan *p, orion_sched ordered);

/* ---- explain.c ---------------------------------------------------------- */

/* "(1, 0, ANY)". */
void orion__vec_text(const orion_plan *p, const orion_dep_comp *v, char *out,
                     size_t size);
/* "2 (i)": key d, 1-based, with its parameter name when known. */
const char *orion__key_label(const orion_plan *p, int d, char *buf,
                             size_t size);
/* Array i as the body names it, with the caller's name when that differs:
 * "X (Y in the caller)". */
const char *orion__array_label(const orion_plan *p, int i, char *buf,
                               size_t size);
/* "W[u][k] (write, line 3, passed to f)". */
void orion__access_label(const orion_plan *p, const orion_access *a,
                         char *out, size_t size);

#endif
