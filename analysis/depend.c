/* Dependence vectors for the loop-body analysis (DESIGN.md section 4,
 * rule 5): for every pair of accesses to one array of which at least one
 * writes (two writes only in an ordered loop), the iteration distance at
 * which they may touch one element, normalised to be lexicographically
 * non-negative.  Buffered accesses never depend: a buffer applies its
 * updates at flush points.  Each vector also says what is behind it, for
 * the hints of a rejection: a read that comes after a write (a flow
 * dependence), pairs made only of accumulations, or only of method calls.
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
    } else if (SUB_IS_REVKEY(x) && SUB_IS_REVKEY(y) && x->dim == y->dim) {
      /* c1 - key_a = c2 - key_b: key_b - key_a = c2 - c1. */
      int64_t dist;
      if (__builtin_sub_overflow(y->c, x->c, &dist))
        continue;
      d = SUB_REVKEY_DIM(x->dim);
      if (set[d] && out[d].v != dist)
        return 0;
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

/* A read of an element that is not an update's own read. */
static int plain_read(const orion_access *a) {
  return a->mode == ACC_READ && !a->update && !a->refused &&
         (strcmp(a->why, "read") == 0 ||
          strcmp(a->why, "the element value") == 0);
}

/* Does the read of the pair (a, b), whose raw vector I'(b) - I(a) is v,
 * come after the write in key order (a flow dependence: it may read what
 * the other iteration wrote)?  A leading ANY allows either order. */
static int flow_pair(const orion_access *a, const orion_access *b,
                     const orion_dep_comp *v, int n) {
  int d, lead = 0; /* -1, 1, or 2 for ANY */
  for (d = 0; d < n && lead == 0; d++)
    if (v[d].kind == DEP_ANY)
      lead = 2;
    else if (v[d].v != 0)
      lead = v[d].v < 0 ? -1 : 1;
  return (plain_read(a) && b->mode == ACC_WRITE && (lead == -1 || lead == 2)) ||
         (plain_read(b) && a->mode == ACC_WRITE && (lead == 1 || lead == 2));
}

int orion__dep_vectors(orion_plan *p) {
  int i, j, cap = 0, n = p->ndims;
  for (i = 0; i < p->nacc; i++) {
    for (j = i; j < p->nacc; j++) {
      const orion_access *a = &p->acc[i], *b = &p->acc[j];
      orion_dep_comp v[ORION_MAX_DIMS];
      orion_depvec *dv = NULL;
      int k, flow, upd, refused;
      if (a->array != b->array || a->buffered || b->buffered)
        continue;
      if (a->mode == ACC_READ && b->mode == ACC_READ)
        continue;
      if (a->mode == ACC_WRITE && b->mode == ACC_WRITE && !p->ordered)
        continue;
      if (!pair_vector(a, b, n, v))
        continue;
      flow = flow_pair(a, b, v, n);
      if (!normalise(v, n))
        continue;
      upd = a->update && b->update;
      refused = a->refused || b->refused;
      for (k = 0; k < p->nvec && dv == NULL; k++)
        if (p->vec[k].array == a->array && same_vec(p->vec[k].c, v, n))
          dv = &p->vec[k];
      if (dv == NULL) {
        if (orion__grow((void **)&p->vec, &cap, p->nvec, sizeof *p->vec) != 0)
          return ORION_ENOMEM;
        dv = &p->vec[p->nvec++];
        memset(dv, 0, sizeof *dv);
        memcpy(dv->c, v, sizeof v);
        dv->array = a->array;
        dv->acc_a = i;
        dv->acc_b = j;
        dv->flow_read = dv->flow_write = -1;
        dv->all_update = upd;
        dv->refused = refused;
      } else {
        if (dv->refused && !refused) {
          dv->acc_a = i; /* quote a pair without a method call */
          dv->acc_b = j;
        }
        dv->all_update &= upd;
        dv->refused &= refused;
      }
      if (flow && dv->flow_read < 0) {
        dv->flow_read = plain_read(a) ? i : j;
        dv->flow_write = plain_read(a) ? j : i;
      }
    }
  }
  return 0;
}
