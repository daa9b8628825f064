/* The runtime guard's driver side: which arrays a loop's body must not
 * write directly, by the plan.  An executor keeps a direct write only for
 * arrays the plan expects the body to write (it sends the changed elements
 * of those, and no others, back); a write the plan did not foresee is
 * therefore lost, or races with the blocks the schedule runs beside it.
 * Such a write can only come from a hole in the analysis, so it fails the
 * loop, naming the array, the line and the placement, instead of giving
 * silently wrong numbers.  See docs/analysis.md, "The runtime guard". */
#include "lua/pfor_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "util/alloc.h"
#include "util/error.h"

/* The placement text of plan array pa, which the body must not write. */
static void placement_text(const orion_plan_array *pa, char *out, size_t n) {
  const char *place = orion_place_name(pa->place);
  if (pa->place == PLACE_SERVER_BUF && pa->buffered > 0)
    snprintf(out, n, "%s: written only through an orion.buffer", place);
  else if (pa->place == PLACE_SERVER_BUF)
    snprintf(out, n, "%s, with no buffer writing it: the analysis saw the "
                     "body neither read nor write it",
             place);
  else if (pa->place == PLACE_SERVER_RO)
    snprintf(out, n, "%s: the analysis saw the body only read it", place);
  else
    snprintf(out, n, "%s, read-only: the analysis saw the body only read it",
             place);
}

/* The test hook: whether plan array pa is to be guarded as if the plan
 * placed it read-only (ORION_TEST_PLAN_READONLY names it), so that tests
 * show the guard without relying on a hole in the analysis. */
static int test_readonly(const orion_plan_array *pa) {
  const char *v = getenv("ORION_TEST_PLAN_READONLY");
  return v != NULL && pa->name != NULL && strcmp(v, pa->name) == 0;
}

/* The guard's placement text for array id, into out; 0 when the body may
 * write it directly. */
static int guard_of(const orion_plan *p, int64_t id, char *out, size_t n) {
  int i;
  for (i = 0; i < p->narrays; i++) {
    const orion_plan_array *pa = &p->arrays[i];
    if (pa->info.id != id)
      continue;
    if (test_readonly(pa)) {
      snprintf(out, n, "%s, read-only (ORION_TEST_PLAN_READONLY)",
               orion_place_name(pa->place));
      return 1;
    }
    if (pa->place == PLACE_ITERATED || pa->writes > 0)
      return 0;
    placement_text(pa, out, n);
    return 1;
  }
  snprintf(out, n, "nowhere: the analysis did not see the body use it");
  return 1;
}

int orion__pfor_guards_make(orion_pfor_guards *g, const orion_plan *p,
                            int64_t iter_id, const int64_t *ids, int nids) {
  int i;
  memset(g, 0, sizeof *g);
  if (p == NULL || nids == 0)
    return 0;
  g->v = orion_calloc((size_t)nids, sizeof *g->v);
  g->text = orion_calloc((size_t)nids, sizeof *g->text);
  if (g->v == NULL || g->text == NULL) {
    orion__pfor_guards_free(g);
    return ORION_ENOMEM;
  }
  for (i = 0; i < nids; i++) {
    if (ids[i] == iter_id ||
        !guard_of(p, ids[i], g->text[g->n], sizeof g->text[g->n]))
      continue;
    g->v[g->n].array = ids[i];
    g->v[g->n].placement = g->text[g->n];
    g->v[g->n].placement_len = strlen(g->text[g->n]);
    g->n++;
  }
  return 0;
}

void orion__pfor_guards_apply(const orion_pfor_guards *g, orion_exec *ex) {
  int i;
  /* Every id is bound (the loop's bound arrays made the list). */
  for (i = 0; i < g->n; i++)
    orion_exec_guard_array(ex, g->v[i].array, g->text[i]);
}

int orion__pfor_guards_cbody(const orion_pfor_guards *g,
                             const orion_cslot *slots, int nslots,
                             const char *chunk, char *msg, size_t n) {
  int i, k;
  for (i = 0; i < nslots; i++) {
    if (slots[i].kind != ORION_CSLOT_ARRAY || slots[i].wline <= 0)
      continue;
    for (k = 0; k < g->n; k++)
      if (g->v[k].array == slots[i].id) {
        char where[320];
        snprintf(where, sizeof where, "%s:%d", chunk, slots[i].wline);
        snprintf(msg, n, ORION_EXEC_GUARD_FMT,
                 slots[i].name != NULL ? slots[i].name : "?", where,
                 g->text[k]);
        return 1;
      }
  }
  return 0;
}

void orion__pfor_guards_free(orion_pfor_guards *g) {
  orion_free(g->v);
  orion_free(g->text);
  memset(g, 0, sizeof *g);
}
