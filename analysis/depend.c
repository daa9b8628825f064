/* Dependence vectors for the loop-body analysis (DESIGN.md section 4,
 * rule 5): for every pair of accesses to one array of which at least one
 * writes (two writes only in an ordered loop), the iteration distance at
 * which they may touch one element, normalised to be lexicographically
 * non-negative.  Buffered accesses never depend: a buffer applies its
 * updates at flush points.
 */
#include <string.h>

#include "analysis/analyze_int.h"

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
  for (d = 0; d < n && orion__dep_zero(&v[d]); d++)
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

int orion__dep_vectors(orion_plan *p) {
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
      if (orion__grow((void **)&p->vec, &cap, p->nvec, sizeof *p->vec) != 0)
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
