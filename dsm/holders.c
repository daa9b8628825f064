#include "dsm/holders.h"

#include <string.h>

#include "util/alloc.h"
#include "util/error.h"

void orion_holders_free(orion_holders *h) {
  orion_free(h->v);
  memset(h, 0, sizeof *h);
}

int orion_holders_set(orion_holders *h, int64_t lo, int64_t hi, int e) {
  int64_t i, o = 0, need;
  int64_t(*nv)[3];
  if (hi <= lo)
    return 0;
  /* At most two ranges are cut and one is added. */
  need = h->n + 3;
  nv = orion_malloc(sizeof *nv * (size_t)need);
  if (nv == NULL)
    return ORION_ENOMEM;
  for (i = 0; i < h->n && h->v[i][1] <= lo; i++, o++)
    memcpy(nv[o], h->v[i], sizeof *nv);
  if (i < h->n && h->v[i][0] < lo) { /* the part left of lo stays */
    nv[o][0] = h->v[i][0];
    nv[o][1] = lo;
    nv[o][2] = h->v[i][2];
    o++;
  }
  if (e >= 0) {
    nv[o][0] = lo;
    nv[o][1] = hi;
    nv[o][2] = e;
    o++;
  }
  while (i < h->n && h->v[i][1] <= hi)
    i++;
  if (i < h->n && h->v[i][0] < hi) { /* the part right of hi stays */
    nv[o][0] = hi;
    nv[o][1] = h->v[i][1];
    nv[o][2] = h->v[i][2];
    o++;
    i++;
  }
  for (; i < h->n; i++, o++)
    memcpy(nv[o], h->v[i], sizeof *nv);
  /* Neighbours held by the same executor become one range. */
  {
    int64_t k, w = 0;
    for (k = 0; k < o; k++) {
      if (w > 0 && nv[w - 1][1] == nv[k][0] && nv[w - 1][2] == nv[k][2])
        nv[w - 1][1] = nv[k][1];
      else
        memcpy(nv[w++], nv[k], sizeof *nv);
    }
    o = w;
  }
  orion_free(h->v);
  h->v = nv;
  h->n = o;
  h->cap = need;
  return 0;
}

int orion_holders_each(const orion_holders *h, int64_t lo, int64_t hi,
                       int (*fn)(void *ud, int64_t lo, int64_t hi, int e),
                       void *ud) {
  int64_t i, at = lo;
  int rc;
  for (i = 0; i < h->n && at < hi; i++) {
    int64_t a = h->v[i][0], b = h->v[i][1];
    if (b <= at)
      continue;
    if (a >= hi)
      break;
    if (a > at && (rc = fn(ud, at, a, -1)) != 0)
      return rc;
    if (a < at)
      a = at;
    if (b > hi)
      b = hi;
    if ((rc = fn(ud, a, b, (int)h->v[i][2])) != 0)
      return rc;
    at = b;
  }
  return at < hi ? fn(ud, at, hi, -1) : 0;
}

int orion_holders_any(const orion_holders *h, int e) {
  int64_t i;
  for (i = 0; i < h->n; i++)
    if (e < 0 || h->v[i][2] == e)
      return 1;
  return 0;
}
