/* The loop-body analysis (DESIGN.md section 4): the entry point, which
 * runs the steps in order, and the plan's destructor.
 *
 * Steps, each in its own file (see analysis/analyze_int.h):
 *  1. find the body's AST_FUNC in the parsed chunk by its line range
 *     (resolve.c);
 *  2. resolve names: parameters are loop keys (the last one, when there is
 *     one more than the keys, is the element value), locals declared once
 *     from a key expression or a slice are aliases, everything free is asked
 *     of the resolver (upvalues and globals bound at launch) (resolve.c);
 *  3. extract every read and write of every array element or slice, and
 *  4. classify subscripts as key_d + c, constant, or unknown (access.c);
 *  5. derive dependence vectors, normalised lexicographically non-negative
 *     (depend.c);
 *  6. choose a schedule among the feasible ones by estimated bytes moved,
 *     and
 *  7. place every array (choose.c).
 * explain.c prints the result.
 *
 * Soundness comes first: whenever a construct is not understood, the access
 * it may hide is recorded with unknown subscripts, as both a read and a
 * write, so it can only forbid parallelism, never allow a wrong plan.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze_int.h"
#include "analysis/parse.h"
#include "util/alloc.h"

int orion__grow(void **v, int *cap, int n, size_t elem) {
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

/* A rejected loop's first write whose subscript is a ragged row's key:
 * why it needs a buffer (a reason). */
/* The test hook of orion-driver --verify (docs/analysis.md): with
 * ORION_TEST_PLAN_NODEP=NAME the analysis forgets the dependence vectors
 * through array NAME, so that the plan it makes from the rest is wrong on
 * purpose (a dependent loop planned as independent), and tests can show
 * --verify catching it without relying on a hole in the analysis. */
static void test_drop_vectors(orion_plan *p) {
  const char *name = getenv("ORION_TEST_PLAN_NODEP");
  int i, n = 0;
  if (name == NULL || name[0] == '\0')
    return;
  for (i = 0; i < p->nvec; i++) {
    const char *an = p->arrays[p->vec[i].array].name;
    if (an == NULL || strcmp(an, name) != 0)
      p->vec[n++] = p->vec[i];
  }
  p->nvec = n;
}

static int row_key_note(orion_plan *p) {
  int i, j;
  if (p->sched != ORION_SCHED_REJECTED)
    return 0;
  for (i = 0; i < p->nacc; i++) {
    const orion_access *a = &p->acc[i];
    for (j = 0; j < a->nsub; j++)
      if (a->sub[j].kind == SUB_UNKNOWN && a->sub[j].dim == SUB_ROWKEY &&
          a->mode == ACC_WRITE)
        break;
    if (j == a->nsub)
      continue;
    if (a->buffered)
      return 0;
    return orion__add_str(&p->reasons, &p->nreasons,
                          orion_asprintf("note: %s (line %d) is subscripted "
                                         "by a ragged row's key, which the "
                                         "analysis cannot know: two rows "
                                         "may name the same key, so writes "
                                         "through it need an orion.buffer",
                                         a->text, a->line));
  }
  return 0;
}

/* What schedule the rejected unordered loop `in` of two or more keys gets
 * with ordered = true (a wavefront keeps every dependence in key order,
 * so it gives the serial loop's result), into *sched: the analysis runs
 * again as ordered.  ORION_SCHED_REJECTED when that is rejected too. */
static int ordered_trial(const orion_analysis_in *in, orion_sched *sched) {
  orion_analysis_in o = *in;
  orion_plan q;
  orion_error err;
  o.ordered = 1;
  orion_error_clear(&err);
  *sched = ORION_SCHED_REJECTED;
  if (orion_analyze(&o, &q, &err) != 0)
    return err.code == ORION_ENOMEM ? ORION_ENOMEM : 0;
  *sched = q.sched;
  orion_plan_free(&q);
  return 0;
}

/* ======================================================================
 * Entry point.
 * ====================================================================== */

int orion_analyze(const orion_analysis_in *in, orion_plan *plan,
                  orion_error *err) {
  orion_ast *ast = NULL;
  orion__actx c;
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
  f = orion_find_body(ast->chunk, &in->body, err);
  if (f == NULL) {
    orion_ast_free(ast);
    orion_plan_free(plan);
    return err->code;
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
  orion__plan_array_for(&c, &in->iter,
                        in->iter.name != NULL ? in->iter.name : "(iterated)");
  orion__run_pass(&c, 1);
  if (!c.oom && orion__keep_facts(&c) != 0)
    c.oom = 1;
  if (!c.oom)
    orion__run_pass(&c, 2);
  rc = c.oom ? ORION_ENOMEM : orion__dep_vectors(plan);
  if (rc == 0)
    test_drop_vectors(plan);
  if (rc == 0)
    rc = orion__choose(plan, in);
  if (rc == 0 && c.nrefused > 0) {
    /* A method call on a whole array: rejected, whatever the vectors. */
    plan->sched = ORION_SCHED_REJECTED;
    plan->space = plan->time = -1;
  }
  if (rc == 0)
    rc = orion__place_all(plan);
  if (rc == 0 && plan->sched == ORION_SCHED_REJECTED) {
    orion_sched os = ORION_SCHED_REJECTED;
    if (!in->ordered && in->force == 0 && plan->ndims >= 2 &&
        c.nrefused == 0)
      rc = ordered_trial(in, &os);
    if (rc == 0)
      rc = orion__reject_reasons(plan, os);
  }
  if (rc == 0)
    rc = row_key_note(plan);
  for (i = 0; i < c.nfree; i++) {
    orion_free(c.free[i].name);
    orion_free(c.free[i].reach);
  }
  orion_free(c.free);
  orion_free(c.vars);
  orion_free(c.scope);
  orion_free(c.facts);
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
    orion_free(p->arrays[i].caller);
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
