/* Schedule choice and placement for the loop-body analysis (DESIGN.md
 * section 4, rules 6 and 7): the candidate schedules (1-D on a key, 2-D on
 * a pair of keys as a rotation or a wavefront, skewed 2-D), which of them
 * the dependence vectors allow, the cheapest by estimated bytes moved per
 * pass, where every array lives under it, and for a rejected loop the
 * reasons and a hint.  Every candidate not chosen leaves a note.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyze_int.h"
#include "util/alloc.h"


/* A candidate schedule. */
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
      ok = orion__dep_zero(&v[k->space]);
      break;
    case ORION_SCHED_2D:
      ok = orion__dep_zero(&v[k->space]) || orion__dep_zero(&v[k->time]);
      break;
    case ORION_SCHED_2D_ORDERED:
      ok = orion__dep_nonneg(&v[k->space]) && orion__dep_nonneg(&v[k->time]);
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

static char *cand_label(const orion_plan *p, const cand *k) {
  char a[80], b[80];
  switch (k->sched) {
  case ORION_SCHED_NONE:
    return orion_asprintf("none (blocks on key %s)",
                     orion__key_label(p, k->space, a, sizeof a));
  case ORION_SCHED_1D:
    return orion_asprintf("1d on key %s",
                     orion__key_label(p, k->space, a, sizeof a));
  case ORION_SCHED_2D:
  case ORION_SCHED_2D_ORDERED:
    return orion_asprintf("%s space key %s, time key %s",
                     orion_sched_name(k->sched),
                     orion__key_label(p, k->space, a, sizeof a),
                     orion__key_label(p, k->time, b, sizeof b));
  case ORION_SCHED_2D_SKEWED:
    return orion_asprintf("2d-skewed space key %s, time key %s, key %d' = key %d "
                     "%+" PRId64 " * key %d",
                     orion__key_label(p, k->space, a, sizeof a),
                     orion__key_label(p, k->time, b, sizeof b),
                     k->skew_dim + 1, k->skew_dim + 1, k->skew,
                     (k->skew_dim == k->space ? k->time : k->space) + 1);
  default:
    return orion_asprintf("?");
  }
}

int orion__add_str(char ***list, int *n, char *s) {
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


/* Enumerates the candidate schedules (rule 6): none when there are no
 * vectors; otherwise 1-D on every key and 2-D on every ordered pair of keys;
 * skewed 2-D only when no plain candidate is feasible, with the smallest
 * skew factor that works for each pair.  The cheapest feasible candidate by
 * estimated bytes per pass wins; ties go to the simpler schedule, then to
 * enumeration order.  Every other candidate leaves a note saying why. */
int orion__choose(orion_plan *p, const orion_analysis_in *in) {
  int n = p->ndims, s, t, why, have = 0, rc = 0, sd, skewed;
  int force = in->force - 1; /* -1: nothing forced */
  int fspace = in->force_space - 1; /* -1: any key on space */
  int64_t best_bytes = 0, f;
  cand best, k;
  char vt[160];
  memset(&best, 0, sizeof best);
  if (force == ORION_SCHED_2D && p->ordered) {
    p->sched = ORION_SCHED_REJECTED;
    p->space = p->time = -1;
    return orion__add_str(&p->reasons, &p->nreasons,
                   orion_asprintf("schedule \"2d\" (rotation) was forced on an "
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
            orion__vec_text(p, p->vec[why].c, vt, sizeof vt);
            rc = orion__add_str(&p->notes, &p->nnotes,
                         label == NULL ? NULL
                                       : orion_asprintf("candidate %s: infeasible, "
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
          rc = orion__add_str(&p->notes, &p->nnotes,
                       label == NULL ? NULL
                                     : orion_asprintf("candidate %s: feasible, "
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
      rc = orion__add_str(&p->reasons, &p->nreasons,
                   fspace >= 0
                       ? orion_asprintf("space = %d was requested and no feasible "
                                   "schedule puts key %d on the space "
                                   "dimension",
                                   fspace + 1, fspace + 1)
                       : orion_asprintf("schedule \"%s\" was forced and is "
                                   "infeasible",
                                   orion_sched_name((orion_sched)force)));
      for (i = 0; i < p->nnotes && rc == 0; i++)
        rc = orion__add_str(&p->reasons, &p->nreasons, orion_asprintf("%s", p->notes[i]));
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

/* Places every array under the chosen schedule, with its reason. */
int orion__place_all(orion_plan *p) {
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
      pa->reason = orion_asprintf("%s", i == 0 ? "the iterated array"
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
                ? orion_asprintf("the iterated array, cut into blocks on keys "
                            "%d and %d",
                            p->space + 1, p->time + 1)
                : orion_asprintf("the iterated array, cut into blocks on key %d",
                            p->space + 1);
      break;
    case PLACE_LOCAL:
      why = orion_asprintf("dimension %d follows key %s in every access, "
                      "partitioned with the space dimension",
                      dim + 1, orion__key_label(p, p->space, kb, sizeof kb));
      break;
    case PLACE_ROTATING:
      why = orion_asprintf("dimension %d follows key %s in every access, "
                      "rotates with the time dimension",
                      dim + 1, orion__key_label(p, p->time, kb, sizeof kb));
      break;
    case PLACE_SERVER_RO:
      why = orion_asprintf("read only and no dimension follows the %s key in "
                      "every access; read through a cache refreshed at "
                      "block boundaries",
                      p->time >= 0 ? "space or time" : "space");
      break;
    case PLACE_SERVER_BUF:
      why = orion_asprintf("written only through an orion.buffer; updates are "
                      "applied at the buffer's flush points%s",
                      pa->reads ? ", reads go through a cache" : "");
      break;
    default:
      why = orion_asprintf("written directly with subscripts that follow no "
                      "partitioned key; dirty keys are written back");
      break;
    }
    if (why == NULL)
      return ORION_ENOMEM;
    pa->reason = why;
  }
  return 0;
}

/* The hint for array i of a rejected loop, or NULL when it needs none.
 * orion.buffer with apply = "add" is offered only for an accumulation
 * (X[s] = X[s] +/- e, read by nothing else): for anything else it would
 * compute something else.  A recurrence (a read after a write at a known
 * distance) and a read and a write at a distance the analysis cannot
 * know are loop-carried dependences, run serially; an array that is only
 * written conflicts only because ordered = true asks the last write in
 * key order to win. */
static char *array_hint(const orion_plan *p, int i, int ordered_runs) {
  const orion_plan_array *pa = &p->arrays[i];
  const char *none = ordered_runs ? "no unordered schedule" : "no schedule";
  const orion_depvec *rec = NULL, *acc = NULL, *any = NULL;
  int j, d, dep = 0, all_update = 1, returned = 0;
  char vt[160], nm[160];
  for (j = 0; j < p->nvec; j++) {
    const orion_depvec *v = &p->vec[j];
    if (v->array != i || v->refused)
      continue;
    dep = 1;
    all_update &= v->all_update;
    if (acc == NULL && v->all_update)
      acc = v;
    if (any == NULL)
      any = v;
    for (d = 0; d < p->ndims && orion__dep_zero(&v->c[d]); d++)
      ;
    if (rec == NULL && v->flow_read >= 0 && d < p->ndims &&
        v->c[d].kind == DEP_INT)
      rec = v;
  }
  for (j = 0; j < p->nacc; j++)
    returned |= p->acc[j].array == i && p->acc[j].mode == ACC_WRITE &&
                strncmp(p->acc[j].why, "returned", 8) == 0;
  if (!dep || pa->writes == 0)
    return NULL;
  orion__array_label(p, i, nm, sizeof nm);
  if (rec != NULL) {
    const orion_access *r = &p->acc[rec->flow_read];
    const orion_access *w = &p->acc[rec->flow_write];
    orion__vec_text(p, rec->c, vt, sizeof vt);
    return orion_asprintf(
        "hint: %s (line %d) reads what another iteration writes to %s (line "
        "%d) at distance %s: a true loop-carried dependence (a recurrence "
        "such as a prefix sum), so %s runs it in parallel, and "
        "orion.buffer would compute something else (reads of %s would see "
        "its values as of the buffer's last flush, not what the earlier "
        "iteration wrote); run the loop with "
        "schedule = \"serial\", or compute a prefix sum as a parallel scan "
        "(block totals, a prefix of them, then each block from its offset) "
        "instead of this loop",
        r->text, r->line, w->text, w->line, vt, none, nm);
  }
  if (all_update && acc != NULL) {
    const orion_access *w = p->acc[acc->acc_a].mode == ACC_WRITE
                                ? &p->acc[acc->acc_a]
                                : &p->acc[acc->acc_b];
    return orion_asprintf(
        "hint: %s is accumulated (%s = %s %c ..., line %d) and read only by "
        "its own updates: write %s through orion.buffer(%s, {apply = "
        "\"add\"}) if its updates may be applied at flush points, or run the "
        "loop with schedule = \"serial\"",
        nm, w->text, w->text, w->update, w->line, pa->name, pa->name);
  }
  if (pa->reads == 0 && p->ordered) {
    /* Only write-write pairs: the body never reads the array. */
    const orion_access *w = &p->acc[any->acc_a];
    return orion_asprintf(
        "hint: %s is only written, and the analysis cannot tell that two "
        "iterations never write one element (%s, line %d); ordered = true "
        "asks that the last write in key order win, which no parallel "
        "schedule can promise: if the subscript is a bijection of the key, "
        "write it as one the analysis recognises (%s[i + c] or %s[c - i], "
        "c loop-invariant), which ordered = true accepts; if any "
        "iteration's write may win, drop ordered = true; or run the loop "
        "with schedule = \"serial\"",
        nm, w->text, w->line, pa->name, pa->name);
  }
  {
    /* A read and a write at a distance the analysis cannot know. */
    int ri = p->acc[any->acc_a].mode == ACC_READ ? any->acc_a : any->acc_b;
    int wi = ri == any->acc_a ? any->acc_b : any->acc_a;
    const orion_access *r = &p->acc[any->flow_read >= 0 ? any->flow_read : ri];
    const orion_access *w =
        &p->acc[any->flow_read >= 0 ? any->flow_write : wi];
    char who[600];
    orion__vec_text(p, any->c, vt, sizeof vt);
    if (r->line == w->line && strcmp(r->text, w->text) == 0)
      snprintf(who, sizeof who,
               "%s (line %d) may read and write elements of %s that other "
               "iterations touch",
               r->text, r->line, nm);
    else
      snprintf(who, sizeof who,
               "%s (line %d) and %s (line %d) may touch one element of %s "
               "in different iterations",
               r->text, r->line, w->text, w->line, nm);
    return orion_asprintf(
        "hint: %s, at a distance the analysis cannot know (vector %s): a "
        "loop-carried dependence, so %s runs it in parallel, and "
        "orion.buffer would compute something else (reads would see the "
        "values as of the buffer's last flush, not what the other iteration "
        "wrote; apply = \"add\" is only for updates %s[s] = %s[s] + e); "
        "run the loop with schedule = \"serial\", which runs the body in "
        "key order as a plain Lua loop does%s",
        who, vt, none, pa->name, pa->name,
        returned ? " (returned values replace elements of the iterated "
                   "array)"
                 : "");
  }
}

/* The reasons a rejected loop cannot run in parallel: each vector with the
 * two accesses behind it (not those of a refused method call, which has a
 * reason of its own), and a hint for each written array. */
int orion__reject_reasons(orion_plan *p, orion_sched ordered) {
  int i, rc = 0;
  char vt[160], la[512], lb[512], nm[160];
  for (i = 0; i < p->nvec && rc == 0; i++) {
    const orion_depvec *v = &p->vec[i];
    if (v->refused)
      continue;
    orion__vec_text(p, v->c, vt, sizeof vt);
    orion__access_label(p, &p->acc[v->acc_a], la, sizeof la);
    orion__access_label(p, &p->acc[v->acc_b], lb, sizeof lb);
    rc = orion__add_str(
        &p->reasons, &p->nreasons,
        orion_asprintf("vector %s on %s: %s and %s", vt,
                       orion__array_label(p, v->array, nm, sizeof nm), la,
                       lb));
  }
  for (i = 0; i < p->narrays && rc == 0; i++) {
    char *h = array_hint(p, i, ordered != ORION_SCHED_REJECTED);
    if (h != NULL)
      rc = orion__add_str(&p->reasons, &p->nreasons, h);
  }
  if (rc == 0 && ordered != ORION_SCHED_REJECTED)
    rc = orion__add_str(
        &p->reasons, &p->nreasons,
        orion_asprintf("hint: with ordered = true the loop runs (schedule "
                       "%s), which keeps every dependence in key order and "
                       "gives the serial loop's result: pass "
                       "{ordered = true}",
                       orion_sched_name(ordered)));
  return rc;
}
