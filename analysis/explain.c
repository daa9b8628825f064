/* The explain printer of the loop-body analysis: a plan as text (what
 * orion.explain and the analysis goldens in t/analysis show), and the
 * labels of keys, vectors and accesses that notes and reasons quote.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyze_int.h"

/* ======================================================================
 * Labels.
 * ====================================================================== */

void orion__vec_text(const orion_plan *p, const orion_dep_comp *v, char *out,
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

const char *orion__key_label(const orion_plan *p, int d, char *buf,
                             size_t size) {
  if (p->keynames[d] != NULL)
    snprintf(buf, size, "%d (%s)", d + 1, p->keynames[d]);
  else
    snprintf(buf, size, "%d", d + 1);
  return buf;
}

const char *orion__array_label(const orion_plan *p, int i, char *buf,
                               size_t size) {
  const orion_plan_array *pa = &p->arrays[i];
  if (pa->caller != NULL)
    snprintf(buf, size, "%s (%s in the caller)", pa->name, pa->caller);
  else
    snprintf(buf, size, "%s", pa->name);
  return buf;
}

void orion__access_label(const orion_plan *p, const orion_access *a,
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

/* A subscript as text: "u", "key2+1", "3", "9-i", "?". */
static const char *sub_text(const orion_plan *p, const orion_sub *s,
                            char *buf, size_t size) {
  char kb[40];
  if (s->kind == SUB_CONST)
    snprintf(buf, size, "%" PRId64, s->c);
  else if (SUB_IS_REVKEY(s)) {
    int d = SUB_REVKEY_DIM(s->dim);
    if (p->keynames[d] != NULL)
      snprintf(kb, sizeof kb, "%s", p->keynames[d]);
    else
      snprintf(kb, sizeof kb, "key%d", d + 1);
    snprintf(buf, size, "%" PRId64 "-%s", s->c, kb);
  } else if (s->kind == SUB_UNKNOWN)
    snprintf(buf, size, s->dim == SUB_ROWKEY ? "? (a row's key)" : "?");
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

/* ======================================================================
 * The plan as text.
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
  char kb[80], vt[160], sb[160], la[512];
  put(out, "schedule: %s\n", orion_sched_name(p->sched));
  put(out, "ordered: %s\n", p->ordered ? "yes" : "no");
  if (p->space >= 0)
    put(out, "space: key %s\n", orion__key_label(p, p->space, kb, sizeof kb));
  else
    put(out, "space: -\n");
  if (p->time >= 0) {
    put(out, "time: key %s (%s)\n", orion__key_label(p, p->time, kb, sizeof kb),
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
    orion__vec_text(p, p->vec[i].c, vt, sizeof vt);
    put(out, " %s", vt);
  }
  put(out, "\n");
  for (i = 0; i < p->nvec; i++) {
    const orion_depvec *v = &p->vec[i];
    char lb[512];
    orion__vec_text(p, v->c, vt, sizeof vt);
    orion__access_label(p, &p->acc[v->acc_a], la, sizeof la);
    orion__access_label(p, &p->acc[v->acc_b], lb, sizeof lb);
    put(out, "vector %s on %s: %s vs %s\n", vt,
        orion__array_label(p, v->array, sb, sizeof sb), la, lb);
  }
  for (i = 0; i < p->nacc; i++) {
    const orion_access *a = &p->acc[i];
    if (a->text[0] == '\0')
      continue;
    orion__access_label(p, a, la, sizeof la);
    put(out, "access: %s%s subscripts (", la, a->buffered ? " buffered" : "");
    for (j = 0; j < a->nsub; j++)
      put(out, "%s%s", j ? ", " : "", sub_text(p, &a->sub[j], sb, sizeof sb));
    put(out, ")\n");
  }
  for (i = 0; i < p->narrays; i++)
    put(out, "array %s: %s -- %s\n",
        orion__array_label(p, i, sb, sizeof sb),
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
