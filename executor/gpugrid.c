/* The device grid of a block (executor/gpugrid.h): element groups and
 * steps from the block's keys, and the checker the tests use. */
#include "executor/gpugrid.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/limits.h"

int64_t orion_gpugrid_b(orion_gpugrid_kind kind, int64_t nelems) {
  int64_t b;
  if (nelems < 1)
    return 1;
  switch (kind) {
  case ORION_GPUGRID_NONE:
    return nelems;
  case ORION_GPUGRID_1D:
    return nelems < 65536 ? nelems : 65536;
  case ORION_GPUGRID_2D:
  case ORION_GPUGRID_2D_ORDERED:
    b = (int64_t)ceil(sqrt((double)nelems));
    return b < 1 ? 1 : b > ORION_GPUGRID_MAX_B ? ORION_GPUGRID_MAX_B : b;
  default:
    return 1;
  }
}

int64_t orion_gpugrid_coord(const orion_gpugrid_in *in, int64_t i,
                            int which) {
  const int64_t *k = in->keys + i * in->ndims;
  int dim = which == 0 ? in->space : in->time;
  int other = which == 0 ? in->time : in->space;
  int64_t c = k[dim];
  if (in->skew_dim >= 0 && in->skew_dim == dim && other >= 0)
    c += in->skew * k[other];
  return c;
}

void orion_gpugrid_free(orion_gpugrid *g) {
  orion_free(g->order);
  orion_free(g->group_off);
  orion_free(g->step_off);
  orion_free(g->row_off);
  orion_free(g->row_group);
  orion_free(g->row_col);
  memset(g, 0, sizeof *g);
}

/* The range (0..b-1) of coordinate c in [lo, hi] cut into b equal-width
 * contiguous ranges. */
static int64_t range_of(int64_t c, int64_t lo, int64_t hi, int64_t b) {
  unsigned __int128 w = (unsigned __int128)((uint64_t)hi - (uint64_t)lo) + 1;
  unsigned __int128 x = (unsigned __int128)((uint64_t)c - (uint64_t)lo);
  return (int64_t)(x * (unsigned __int128)b / w);
}

static int check_in(const orion_gpugrid_in *in, orion_error *err) {
  int two = in->kind == ORION_GPUGRID_2D || in->kind == ORION_GPUGRID_2D_ORDERED;
  if (in->kind < ORION_GPUGRID_SERIAL || in->kind > ORION_GPUGRID_2D_ORDERED)
    return orion_error_set(err, ORION_EINVAL, "device grid: unknown kind %d",
                           (int)in->kind);
  if (in->nelems < 0 || in->b < 0 || (in->nelems > 0 && in->keys == NULL &&
                                      in->kind >= ORION_GPUGRID_1D))
    return orion_error_set(err, ORION_EINVAL,
                           "device grid: %" PRId64 " elements, b %" PRId64,
                           in->nelems, in->b);
  if (in->kind >= ORION_GPUGRID_1D &&
      (in->ndims < 1 || in->ndims > ORION_MAX_DIMS || in->space < 0 ||
       in->space >= in->ndims ||
       (two && (in->time < 0 || in->time >= in->ndims ||
                in->time == in->space))))
    return orion_error_set(err, ORION_EINVAL,
                           "device grid: space %d / time %d do not fit %d "
                           "key dimensions",
                           in->space, in->time, in->ndims);
  if (two && in->skew_dim >= 0 && in->skew_dim != in->space &&
      in->skew_dim != in->time)
    return orion_error_set(err, ORION_EINVAL,
                           "device grid: the skewed dimension %d is neither "
                           "space nor time",
                           in->skew_dim);
  return 0;
}

/* Balanced cuts of one coordinate: bal[c - lo] = (elements with a smaller
 * coordinate) * b / n, the range of coordinate c when b contiguous ranges
 * hold about n / b elements each.  Monotone in c and the same for equal
 * coordinates, as the safety argument needs (gpugrid.h); skewed data (a
 * user with thousands of ratings beside users with a few) then gives
 * groups of even size, where equal-width ranges give a step as long as
 * its largest group.  NULL (equal widths) when b ranges cover the extent
 * anyway (one coordinate each) or a table of the extent would be large
 * beside the elements; or when out of memory, which only costs balance. */
static int64_t *balanced(const orion_gpugrid_in *in, int which, int64_t lo,
                         int64_t hi, int64_t b) {
  uint64_t ext = (uint64_t)hi - (uint64_t)lo + 1;
  int64_t i, n = in->nelems, *bal, sum = 0;
  if (n <= 0 || ext <= (uint64_t)b ||
      ext > (uint64_t)n * 4 + ((uint64_t)1 << 20))
    return NULL;
  bal = orion_calloc((size_t)ext, sizeof *bal);
  if (bal == NULL)
    return NULL;
  for (i = 0; i < n; i++)
    bal[(uint64_t)orion_gpugrid_coord(in, i, which) - (uint64_t)lo]++;
  for (i = 0; i < (int64_t)ext; i++) {
    int64_t c = bal[i];
    bal[i] = (int64_t)((unsigned __int128)sum * (unsigned __int128)b /
                       (unsigned __int128)n);
    sum += c;
  }
  return bal;
}

/* The range of element i's coordinate `which`. */
static int64_t range_at(const orion_gpugrid_in *in, int64_t i, int which,
                        const int64_t *bal, int64_t lo, int64_t hi,
                        int64_t b) {
  int64_t c = orion_gpugrid_coord(in, i, which);
  return bal != NULL ? bal[(uint64_t)c - (uint64_t)lo] : range_of(c, lo, hi, b);
}

/* Each element's slot (step * b + position in the step) and the number of
 * slots; slot order is group order. */
static int64_t slots_of(const orion_gpugrid_in *in, int64_t b, int64_t *slot) {
  int64_t i, n = in->nelems, lo[2] = {INT64_MAX, INT64_MAX},
             hi[2] = {INT64_MIN, INT64_MIN}, *bal[2] = {NULL, NULL};
  int w, nc = in->kind == ORION_GPUGRID_1D ? 1 : 2;
  if (in->kind == ORION_GPUGRID_SERIAL) {
    memset(slot, 0, sizeof *slot * (size_t)n);
    return 1;
  }
  if (in->kind == ORION_GPUGRID_NONE) {
    for (i = 0; i < n; i++) /* b groups of consecutive elements */
      slot[i] = (int64_t)((unsigned __int128)i * (unsigned __int128)b /
                          (unsigned __int128)n);
    return b;
  }
  for (i = 0; i < n; i++)
    for (w = 0; w < nc; w++) {
      int64_t c = orion_gpugrid_coord(in, i, w);
      if (c < lo[w])
        lo[w] = c;
      if (c > hi[w])
        hi[w] = c;
    }
  for (w = 0; w < nc; w++)
    bal[w] = balanced(in, w, lo[w], hi[w], b);
  for (i = 0; i < n; i++) {
    int64_t p = range_at(in, i, 0, bal[0], lo[0], hi[0], b), q;
    if (nc == 1) {
      slot[i] = p;
      continue;
    }
    q = range_at(in, i, 1, bal[1], lo[1], hi[1], b);
    if (in->kind == ORION_GPUGRID_2D) /* step (q - p) mod b, then p */
      slot[i] = ((q - p + b) % b) * b + p;
    else /* wavefront: step p + q, then p */
      slot[i] = (p + q) * b + p;
  }
  orion_free(bal[0]);
  orion_free(bal[1]);
  return nc == 1 ? b : in->kind == ORION_GPUGRID_2D ? b * b : (2 * b - 1) * b;
}

/* The largest coordinate extent (hi - lo + 1) of the kind's coordinates,
 * which bounds a useful b. */
static int64_t extent(const orion_gpugrid_in *in) {
  int64_t i, best = 1;
  int w, nc = in->kind == ORION_GPUGRID_1D ? 1 : 2;
  for (w = 0; w < nc; w++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (i = 0; i < in->nelems; i++) {
      int64_t c = orion_gpugrid_coord(in, i, w);
      lo = c < lo ? c : lo;
      hi = c > hi ? c : hi;
    }
    if (in->nelems > 0 && (uint64_t)hi - (uint64_t)lo + 1 > (uint64_t)best)
      best = (uint64_t)hi - (uint64_t)lo + 1 > (uint64_t)INT64_MAX / 2
                 ? INT64_MAX / 2
                 : (int64_t)((uint64_t)hi - (uint64_t)lo + 1);
  }
  return best;
}

/* The rotation's groups by row (orion_gpugrid's row_*): end[s] is the
 * end of slot s's elements; slot s = step * b + p is the cell (p, (step +
 * p) mod b).  A counting sort of the groups by row keeps step order. */
static int rows_of(orion_gpugrid *out, int64_t b, const int64_t *end,
                   int64_t nslots) {
  int64_t s, g = 0, *fill;
  out->row_off = orion_calloc((size_t)b + 2, sizeof *out->row_off);
  out->row_group = orion_malloc(sizeof *out->row_group *
                                (size_t)(out->ngroups + 1));
  out->row_col = orion_malloc(sizeof *out->row_col *
                              (size_t)(out->ngroups + 1));
  fill = orion_malloc(sizeof *fill * (size_t)(b + 1));
  if (out->row_off == NULL || out->row_group == NULL ||
      out->row_col == NULL || fill == NULL) {
    orion_free(fill);
    return ORION_ENOMEM;
  }
  for (s = 0; s < nslots; s++)
    if (end[s] > (s == 0 ? 0 : end[s - 1]))
      out->row_off[s % b + 1]++;
  for (s = 0; s < b; s++)
    out->row_off[s + 1] += out->row_off[s];
  memcpy(fill, out->row_off, sizeof *fill * (size_t)b);
  for (s = 0; s < nslots; s++)
    if (end[s] > (s == 0 ? 0 : end[s - 1])) {
      int64_t p = s % b, at = fill[p]++;
      out->row_group[at] = g++;
      out->row_col[at] = (s / b + p) % b;
    }
  orion_free(fill);
  return 0;
}

int orion_gpugrid_build(const orion_gpugrid_in *in, orion_gpugrid *out,
                        orion_error *err) {
  int64_t b, nslots, i, s, n = in->nelems, *slot = NULL, *count = NULL;
  int64_t per_step, g, st;
  int rc;
  memset(out, 0, sizeof *out);
  if ((rc = check_in(in, err)) != 0)
    return rc;
  b = in->b > 0 ? in->b : orion_gpugrid_b(in->kind, n);
  if (in->kind == ORION_GPUGRID_SERIAL)
    b = 1;
  else if (in->kind == ORION_GPUGRID_NONE)
    b = b > n ? (n > 0 ? n : 1) : b;
  else {
    int64_t e = extent(in);
    if (in->kind != ORION_GPUGRID_1D && b > ORION_GPUGRID_MAX_B)
      b = ORION_GPUGRID_MAX_B;
    b = b > e ? e : b; /* more ranges than keys: all but e would be empty */
  }
  out->b = b;
  out->nelems = n;
  slot = orion_malloc(sizeof *slot * (size_t)(n + 1));
  out->order = orion_malloc(sizeof *out->order * (size_t)(n + 1));
  if (slot == NULL || out->order == NULL)
    goto oom;
  nslots = slots_of(in, b, slot);
  per_step = in->kind == ORION_GPUGRID_2D || in->kind == ORION_GPUGRID_2D_ORDERED
                 ? b
                 : nslots;
  count = orion_calloc((size_t)nslots + 1, sizeof *count);
  out->group_off = orion_malloc(sizeof *out->group_off * (size_t)(nslots + 1));
  out->step_off =
      orion_malloc(sizeof *out->step_off * (size_t)(nslots / per_step + 1));
  if (count == NULL || out->group_off == NULL || out->step_off == NULL)
    goto oom;
  /* A stable counting sort by slot keeps block order within each group. */
  for (i = 0; i < n; i++)
    count[slot[i] + 1]++;
  for (s = 0; s < nslots; s++)
    count[s + 1] += count[s];
  for (i = 0; i < n; i++)
    out->order[count[slot[i]]++] = i;
  /* count[s] is now the end of slot s: the non-empty slots are the groups,
   * the steps with any group the steps. */
  g = 0;
  st = 0;
  out->group_off[0] = 0;
  out->step_off[0] = 0;
  for (s = 0; s < nslots; s++) {
    int64_t start = s == 0 ? 0 : count[s - 1];
    if (count[s] > start)
      out->group_off[++g] = count[s];
    if ((s + 1) % per_step == 0 && g > out->step_off[st])
      out->step_off[++st] = g;
  }
  out->ngroups = g;
  out->nsteps = st;
  if (in->kind == ORION_GPUGRID_2D && in->rows &&
      rows_of(out, b, count, nslots) != 0)
    goto oom;
  orion_free(slot);
  orion_free(count);
  return 0;
oom:
  orion_free(slot);
  orion_free(count);
  orion_gpugrid_free(out);
  return orion_error_set(err, ORION_ENOMEM,
                         "device grid: out of memory for %" PRId64
                         " elements",
                         n);
}

/* Why a grid is bad, into why; returns 1. */
static int bad(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* Fails when two of the groups [g0, g1) hold the same space (which = 0)
 * or time (1) coordinate: an open-addressing table of cap > elements
 * entries maps each coordinate to the group that first held it. */
static int disjoint(const orion_gpugrid_in *in, const orion_gpugrid *g,
                    int64_t g0, int64_t g1, int which, int64_t *tab_k,
                    int64_t *tab_g, int64_t cap, char *why, size_t n) {
  int64_t gi, e;
  for (e = 0; e < cap; e++)
    tab_g[e] = -1;
  for (gi = g0; gi < g1; gi++)
    for (e = g->group_off[gi]; e < g->group_off[gi + 1]; e++) {
      int64_t c = orion_gpugrid_coord(in, g->order[e], which);
      uint64_t h = ((uint64_t)c * 0x9E3779B97F4A7C15ull) % (uint64_t)cap;
      while (tab_g[h] >= 0 && tab_k[h] != c)
        h = (h + 1) % (uint64_t)cap;
      if (tab_g[h] >= 0 && tab_g[h] != gi)
        return bad(why, n,
                   which == 0 ? "groups %" PRId64 " and %" PRId64
                                " of one step share space coordinate %" PRId64
                              : "groups %" PRId64 " and %" PRId64
                                " of one step share time coordinate %" PRId64,
                   tab_g[h], gi, c);
      tab_k[h] = c;
      tab_g[h] = gi;
    }
  return 0;
}

/* Fails when a space (which = 0) or time (1) coordinate lies in groups
 * of two labels (label[g]: the group's row or column in the claimed
 * rotation), so that groups of different rows share no space coordinate
 * and groups of different columns no time coordinate. */
static int one_label(const orion_gpugrid_in *in, const orion_gpugrid *g,
                     const int64_t *label, int which, int64_t *tab_k,
                     int64_t *tab_g, int64_t cap, char *why, size_t n) {
  int64_t gi, e;
  for (e = 0; e < cap; e++)
    tab_g[e] = -1;
  for (gi = 0; gi < g->ngroups; gi++)
    for (e = g->group_off[gi]; e < g->group_off[gi + 1]; e++) {
      int64_t c = orion_gpugrid_coord(in, g->order[e], which);
      uint64_t h = ((uint64_t)c * 0x9E3779B97F4A7C15ull) % (uint64_t)cap;
      while (tab_g[h] >= 0 && tab_k[h] != c)
        h = (h + 1) % (uint64_t)cap;
      if (tab_g[h] >= 0 && label[tab_g[h]] != label[gi])
        return bad(why, n,
                   "groups %" PRId64 " and %" PRId64 " share %s coordinate "
                   "%" PRId64 " but lie in %s %" PRId64 " and %" PRId64,
                   tab_g[h], gi, which == 0 ? "space" : "time", c,
                   which == 0 ? "rows" : "columns", label[tab_g[h]],
                   label[gi]);
      tab_k[h] = c;
      tab_g[h] = gi;
    }
  return 0;
}

/* The rotation's rows (orion_gpugrid's row_*): every group once, in step
 * order within its row, the row and column each group's coordinates
 * say. */
static int check_rows(const orion_gpugrid_in *in, const orion_gpugrid *g,
                      int64_t *tab_k, int64_t *tab_g, int64_t cap, char *why,
                      size_t n) {
  int64_t p, i, *row = NULL, *col = NULL;
  int rc = 0;
  if (g->row_off == NULL || g->row_group == NULL || g->row_col == NULL)
    return bad(why, n, "2d grid without its rows");
  if (g->row_off[0] != 0 || g->row_off[g->b] != g->ngroups)
    return bad(why, n, "rows cover %" PRId64 " of %" PRId64 " groups",
               g->row_off[g->b] - g->row_off[0], g->ngroups);
  row = orion_malloc(sizeof *row * (size_t)(g->ngroups + 1));
  col = orion_malloc(sizeof *col * (size_t)(g->ngroups + 1));
  if (row == NULL || col == NULL) {
    rc = bad(why, n, "out of memory");
    goto done;
  }
  for (i = 0; i < g->ngroups; i++)
    row[i] = -1;
  for (p = 0; p < g->b && rc == 0; p++)
    for (i = g->row_off[p]; i < g->row_off[p + 1] && rc == 0; i++) {
      int64_t gi = g->row_group[i];
      if (gi < 0 || gi >= g->ngroups || row[gi] >= 0)
        rc = bad(why, n, "row %" PRId64 " lists group %" PRId64
                         " twice or out of range",
                 p, gi);
      else if (i > g->row_off[p] && g->row_group[i - 1] > gi)
        rc = bad(why, n, "row %" PRId64 " lists group %" PRId64
                         " after %" PRId64 " (step order broken)",
                 p, gi, g->row_group[i - 1]);
      else if (g->row_col[i] < 0 || g->row_col[i] >= g->b)
        rc = bad(why, n, "group %" PRId64 " in column %" PRId64, gi,
                 g->row_col[i]);
      else {
        row[gi] = p;
        col[gi] = g->row_col[i];
      }
    }
  if (rc == 0)
    rc = one_label(in, g, row, 0, tab_k, tab_g, cap, why, n);
  if (rc == 0)
    rc = one_label(in, g, col, 1, tab_k, tab_g, cap, why, n);
done:
  orion_free(row);
  orion_free(col);
  return rc;
}

int orion_gpugrid_check(const orion_gpugrid_in *in, const orion_gpugrid *g,
                        char *why, size_t n) {
  int64_t i, gi, s, cap = 2 * in->nelems + 1, *seen, *tab_k, *tab_g;
  int rc = 0;
  why[0] = '\0';
  if (g->nelems != in->nelems)
    return bad(why, n, "grid of %" PRId64 " elements for %" PRId64, g->nelems,
               in->nelems);
  if (in->nelems == 0)
    return g->ngroups == 0 ? 0 : bad(why, n, "%" PRId64 " groups, no elements",
                                     g->ngroups);
  if (g->group_off[0] != 0 || g->group_off[g->ngroups] != in->nelems ||
      g->step_off[0] != 0 || g->step_off[g->nsteps] != g->ngroups)
    return bad(why, n, "offsets do not cover %" PRId64 " elements in %" PRId64
                       " groups (%" PRId64 " steps)",
               in->nelems, g->ngroups, g->nsteps);
  seen = orion_calloc((size_t)in->nelems, sizeof *seen);
  tab_k = orion_malloc(sizeof *tab_k * (size_t)cap);
  tab_g = orion_malloc(sizeof *tab_g * (size_t)cap);
  if (seen == NULL || tab_k == NULL || tab_g == NULL) {
    rc = bad(why, n, "out of memory");
    goto done;
  }
  for (gi = 0; gi < g->ngroups && rc == 0; gi++) {
    if (g->group_off[gi + 1] <= g->group_off[gi])
      rc = bad(why, n, "group %" PRId64 " is empty", gi);
    for (i = g->group_off[gi]; i < g->group_off[gi + 1] && rc == 0; i++) {
      int64_t e = g->order[i];
      if (e < 0 || e >= in->nelems || seen[e]++)
        rc = bad(why, n, "element %" PRId64 " listed twice or out of range "
                         "(group %" PRId64 ")",
                 e, gi);
      else if (i > g->group_off[gi] && g->order[i - 1] > e)
        rc = bad(why, n, "group %" PRId64 " runs element %" PRId64
                         " after %" PRId64 " (block order broken)",
                 gi, e, g->order[i - 1]);
    }
  }
  for (s = 0; s < g->nsteps && rc == 0; s++)
    if (g->step_off[s + 1] <= g->step_off[s])
      rc = bad(why, n, "step %" PRId64 " is empty", s);
  if (rc == 0 && in->kind == ORION_GPUGRID_SERIAL) {
    for (i = 0; i < in->nelems && rc == 0; i++)
      if (g->order[i] != i)
        rc = bad(why, n, "serial grid: position %" PRId64 " holds element "
                         "%" PRId64,
                 i, g->order[i]);
    if (rc == 0 && g->ngroups != 1)
      rc = bad(why, n, "serial grid with %" PRId64 " groups",
               g->ngroups);
  }
  if (rc == 0 && in->kind == ORION_GPUGRID_1D)
    rc = disjoint(in, g, 0, g->ngroups, 0, tab_k, tab_g, cap, why, n);
  if (in->kind == ORION_GPUGRID_2D || in->kind == ORION_GPUGRID_2D_ORDERED)
    for (s = 0; s < g->nsteps && rc == 0; s++) {
      rc = disjoint(in, g, g->step_off[s], g->step_off[s + 1], 0, tab_k, tab_g,
                    cap, why, n);
      if (rc == 0)
        rc = disjoint(in, g, g->step_off[s], g->step_off[s + 1], 1, tab_k,
                      tab_g, cap, why, n);
    }
  if (rc == 0 && in->kind == ORION_GPUGRID_2D && in->rows && g->ngroups > 0)
    rc = check_rows(in, g, tab_k, tab_g, cap, why, n);
done:
  orion_free(seen);
  orion_free(tab_k);
  orion_free(tab_g);
  return rc;
}

void orion_gpugrid_describe(const orion_gpugrid *g, orion_gpugrid_kind kind,
                            char *out, size_t n) {
  switch (kind) {
  case ORION_GPUGRID_2D:
  case ORION_GPUGRID_2D_ORDERED:
    snprintf(out, n, "%s, %" PRId64 " x %" PRId64 " %s, %" PRId64
                     " groups in %" PRId64 " steps",
             kind == ORION_GPUGRID_2D ? "2d" : "2d-ordered", g->b, g->b,
             kind == ORION_GPUGRID_2D ? "rotation" : "wavefront", g->ngroups,
             g->nsteps);
    break;
  case ORION_GPUGRID_1D:
  case ORION_GPUGRID_NONE:
    snprintf(out, n, "%s, %" PRId64 " groups",
             kind == ORION_GPUGRID_1D ? "1d" : "none", g->ngroups);
    break;
  default:
    snprintf(out, n, "serial, 1 group");
  }
}

orion_gpugrid_kind orion_gpugrid_kind_of(int sched, int order) {
  switch (sched) {
  case 0:
    return ORION_GPUGRID_NONE;
  case 1:
    return ORION_GPUGRID_1D;
  case 2:
    return ORION_GPUGRID_2D;
  case 3:
    return ORION_GPUGRID_2D_ORDERED;
  case 4:
    return order ? ORION_GPUGRID_2D_ORDERED : ORION_GPUGRID_2D;
  default:
    return ORION_GPUGRID_SERIAL;
  }
}
