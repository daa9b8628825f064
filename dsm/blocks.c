#include "dsm/blocks.h"

#include <string.h>

#include "dsm/key.h"
#include "dsm/partition.h"
#include "dsm/plan.h"
#include "util/alloc.h"

int orion_block_spec_equal(const orion_block_spec *x,
                           const orion_block_spec *y) {
  return x->space == y->space && x->time == y->time &&
         x->nspace == y->nspace && (x->time < 0 || x->ntime == y->ntime) &&
         x->skew_dim == y->skew_dim && (x->skew_dim < 0 || x->skew == y->skew) &&
         x->histogram == y->histogram && x->lex == y->lex &&
         x->interleave == y->interleave;
}

/* Deals the elements [lo, hi) of a (lexicographically sorted) segment out
 * in rounds over its rows (runs of equal first keys): a stable counting
 * sort by each element's rank within its row.  keys and vals are scratch
 * of the segment's size; rank and count of hi - lo + 1 entries. */
static void interleave_segment(orion_array *a, int64_t lo, int64_t hi,
                               int64_t *keys, char *vals, int64_t *rank,
                               int64_t *count) {
  size_t es = orion_type_size(a->type), kn = (size_t)a->ndims;
  int64_t n = hi - lo, e, r, nr = 0;
  const int64_t *k = a->keys + lo * a->ndims;
  for (e = 0; e < n; e++) {
    rank[e] = e > 0 && k[e * a->ndims] == k[(e - 1) * a->ndims]
                  ? rank[e - 1] + 1
                  : 0;
    if (rank[e] + 1 > nr)
      nr = rank[e] + 1;
  }
  memset(count, 0, sizeof *count * (size_t)(nr + 1));
  for (e = 0; e < n; e++)
    count[rank[e] + 1]++;
  for (r = 0; r < nr; r++)
    count[r + 1] += count[r];
  for (e = 0; e < n; e++) {
    int64_t dst = count[rank[e]]++;
    memcpy(keys + dst * a->ndims, k + e * a->ndims, sizeof *keys * kn);
    memcpy(vals + dst * (int64_t)es, (char *)a->values + (lo + e) * (int64_t)es,
           es);
  }
  memcpy(a->keys + lo * a->ndims, keys, sizeof *keys * kn * (size_t)n);
  memcpy((char *)a->values + lo * (int64_t)es, vals, es * (size_t)n);
}

/* interleave_segment over every block of a partitioned sparse array. */
static int interleave_blocks(orion_array *a, const int64_t *start,
                             int64_t nb, orion_error *err) {
  int64_t b, most = 1;
  int64_t *keys, *rank, *count;
  char *vals;
  for (b = 0; b < nb; b++)
    if (start[b + 1] - start[b] > most)
      most = start[b + 1] - start[b];
  keys = orion_malloc(sizeof *keys * (size_t)most * (size_t)a->ndims);
  vals = orion_malloc(orion_type_size(a->type) * (size_t)most);
  rank = orion_malloc(sizeof *rank * (size_t)most);
  count = orion_malloc(sizeof *count * (size_t)(most + 1));
  if (keys == NULL || vals == NULL || rank == NULL || count == NULL) {
    orion_free(keys);
    orion_free(vals);
    orion_free(rank);
    orion_free(count);
    return orion_error_set(err, ORION_ENOMEM, "out of memory interleaving "
                                              "the blocks' rows");
  }
  for (b = 0; b < nb; b++)
    if (start[b + 1] > start[b])
      interleave_segment(a, start[b], start[b + 1], keys, vals, rank, count);
  orion_free(keys);
  orion_free(vals);
  orion_free(rank);
  orion_free(count);
  return 0;
}

void orion_blockset_free(orion_blockset *b) {
  orion_free(b->first);
  orion_free(b->segs);
  b->first = NULL;
  b->segs = NULL;
  b->nsegs = 0;
}

/* One coordinate (space or time) of the blocking: the key dimension it
 * reads, the optional skew, and the cut points over its value range. */
typedef struct axis {
  int dim, other;
  int64_t skew;   /* 0: plain */
  int64_t base;   /* smallest coordinate value */
  orion_split split;
} axis;

static int64_t coord(const axis *x, const int64_t *k) {
  int64_t v = k[x->dim];
  if (x->skew != 0)
    v += x->skew * k[x->other];
  return v - x->base;
}

static int axis_init(const orion_array *a, const orion_block_spec *s,
                     int dim, int other, int nparts, axis *x,
                     orion_error *err) {
  int rc;
  int64_t lo, hi, span;
  memset(x, 0, sizeof *x);
  x->dim = dim;
  x->other = other;
  if (s->skew_dim == dim && other >= 0)
    x->skew = s->skew;
  if (x->skew == 0) {
    rc = s->histogram && a->sparse
             ? orion_split_histogram(a, dim, nparts, &x->split)
             : orion_split_equal(a->dims[dim], dim, nparts, &x->split);
  } else {
    /* key[dim] + skew * key[other] ranges over [lo, hi]. */
    int64_t m = x->skew * (a->dims[other] - 1);
    lo = m < 0 ? m : 0;
    hi = a->dims[dim] - 1 + (m > 0 ? m : 0);
    x->base = lo;
    span = hi - lo + 1;
    rc = orion_split_equal(span, dim, nparts, &x->split);
  }
  if (rc != 0)
    return orion_error_set(err, rc, "cannot cut key dimension %d into %d "
                                    "parts: %s",
                           dim + 1, nparts, orion_strerror(rc));
  return 0;
}

static int block_of(const orion_blockset *b, const axis *x0, const axis *x1,
                    const int64_t *k) {
  int p = orion_split_find(&x0->split, coord(x0, k));
  int q = b->n1 > 1 ? orion_split_find(&x1->split, coord(x1, k)) : 0;
  return p * b->n1 + q;
}

int orion_blockset_build(orion_array *a, const orion_block_spec *spec,
                         orion_blockset *out, orion_error *err) {
  axis x0, x1;
  int rc, two = spec->time >= 0;
  int64_t nb, e, b, *count = NULL;
  int *bid = NULL;
  memset(out, 0, sizeof *out);
  memset(&x1, 0, sizeof x1);
  if (spec->space < 0 || spec->space >= a->ndims ||
      (two && (spec->time >= a->ndims || spec->time == spec->space)) ||
      spec->nspace < 1 || (two && spec->ntime < 1))
    return orion_error_set(err, ORION_EINVAL, "bad block specification");
  rc = axis_init(a, spec, spec->space, two ? spec->time : -1, spec->nspace,
                 &x0, err);
  if (rc == 0 && two)
    rc = axis_init(a, spec, spec->time, spec->space, spec->ntime, &x1, err);
  if (rc != 0)
    goto done;
  out->spec = *spec;
  out->n0 = x0.split.nparts;
  out->n1 = two ? x1.split.nparts : 1;
  nb = (int64_t)out->n0 * out->n1;
  if (a->sparse && (spec->lex || spec->interleave) &&
      !orion_array_is_sorted(a)) {
    rc = orion_array_sort(a, err);
    if (rc != 0)
      goto done;
  }
  if (a->sparse) {
    orion_blocks blk;
    /* Reorder by block id (a stable counting sort): one segment per block. */
    bid = orion_malloc(sizeof *bid * (size_t)(a->nnz ? a->nnz : 1));
    if (bid == NULL) {
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      goto done;
    }
    for (e = 0; e < a->nnz; e++)
      bid[e] = block_of(out, &x0, &x1, a->keys + e * a->ndims);
    rc = orion_partition_by_id(a, (int)nb, bid, &blk, err);
    if (rc == 0 && spec->interleave)
      rc = interleave_blocks(a, blk.start, nb, err);
    if (rc != 0) {
      orion_blocks_free(&blk);
      goto done;
    }
    out->first = orion_malloc(sizeof *out->first * (size_t)(nb + 1));
    out->segs = orion_malloc(sizeof *out->segs * (size_t)(nb ? nb : 1));
    if (out->first == NULL || out->segs == NULL) {
      orion_blocks_free(&blk);
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      goto done;
    }
    for (b = 0; b < nb; b++) {
      out->first[b] = b;
      out->segs[b].lo = blk.start[b];
      out->segs[b].hi = blk.start[b + 1];
    }
    out->first[nb] = nb;
    out->nsegs = nb;
    orion_blocks_free(&blk);
  } else {
    /* Dense: runs of consecutive positions in one block are segments;
     * a stable counting sort of the segments groups them by block. */
    int64_t keys[ORION_MAX_DIMS], nruns = 0, cap = 64, pos;
    orion_segment *runs = orion_malloc(sizeof *runs * (size_t)cap);
    int *rb = orion_malloc(sizeof *rb * (size_t)cap);
    int cur = -1;
    count = orion_calloc((size_t)nb + 1, sizeof *count);
    if (runs == NULL || rb == NULL || count == NULL) {
      orion_free(runs);
      orion_free(rb);
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      goto done;
    }
    for (pos = 0; pos < a->nnz; pos++) {
      int blk;
      orion_key_delinearize(a->ndims, a->dims, pos, keys);
      blk = block_of(out, &x0, &x1, keys);
      if (blk == cur && nruns > 0) {
        runs[nruns - 1].hi = pos + 1;
        continue;
      }
      if (nruns == cap) {
        orion_segment *r2 = orion_realloc(runs, sizeof *runs * (size_t)cap * 2);
        int *b2 = r2 ? orion_realloc(rb, sizeof *rb * (size_t)cap * 2) : NULL;
        if (r2 != NULL)
          runs = r2;
        if (b2 == NULL) {
          orion_free(runs);
          orion_free(rb);
          rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
          goto done;
        }
        rb = b2;
        cap *= 2;
      }
      runs[nruns].lo = pos;
      runs[nruns].hi = pos + 1;
      rb[nruns++] = blk;
      cur = blk;
    }
    out->first = orion_malloc(sizeof *out->first * (size_t)(nb + 1));
    out->segs = orion_malloc(sizeof *out->segs * (size_t)(nruns ? nruns : 1));
    if (out->first == NULL || out->segs == NULL) {
      orion_free(runs);
      orion_free(rb);
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      goto done;
    }
    for (e = 0; e < nruns; e++)
      count[rb[e] + 1]++;
    for (b = 0; b < nb; b++)
      count[b + 1] += count[b];
    memcpy(out->first, count, sizeof *count * (size_t)(nb + 1));
    for (e = 0; e < nruns; e++)
      out->segs[count[rb[e]]++] = runs[e];
    out->nsegs = nruns;
    orion_free(runs);
    orion_free(rb);
  }
done:
  orion_free(bid);
  orion_free(count);
  orion_split_free(&x0.split);
  orion_split_free(&x1.split);
  if (rc != 0)
    orion_blockset_free(out);
  return rc;
}

int orion_block_clocks(orion_order_kind kind, int n0, int n1, int reverse,
                       int *order, int *clock) {
  int i = 0, c, p, r, nclocks;
  /* A rotation needs a time part per space part in every clock; with fewer
   * time parts, the wavefront is the order that still keeps them apart. */
  if (kind == ORION_ORDER_ROTATION && n1 < n0)
    kind = ORION_ORDER_WAVEFRONT;
  nclocks = kind == ORION_ORDER_ROTATION    ? n1
            : kind == ORION_ORDER_WAVEFRONT ? n0 + n1 - 1
                                            : 1;
  for (c = 0; c < nclocks; c++) {
    for (p = 0; p < n0; p++) {
      int pp = reverse ? n0 - 1 - p : p;
      int q0 = kind == ORION_ORDER_ALL        ? 0
               : kind == ORION_ORDER_ROTATION ? (pp + c) % n1
                                              : c - pp;
      int q1 = kind == ORION_ORDER_ALL ? n1 : q0 + 1; /* one per clock */
      for (r = q0 < 0 ? 0 : q0; r < q1 && r < n1; r++) {
        order[i] = pp * n1 + r;
        if (clock != NULL)
          clock[i] = c;
        i++;
      }
    }
  }
  return nclocks;
}

void orion_blockset_key_ranges(const orion_array *a, const orion_blockset *bs,
                               int64_t (*out)[ORION_MAX_DIMS][2]) {
  int nb = bs->n0 * bs->n1, b, d;
  for (b = 0; b < nb; b++) {
    int64_t sg;
    for (d = 0; d < a->ndims; d++) {
      out[b][d][0] = INT64_MAX;
      out[b][d][1] = -1;
    }
    for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
      int64_t lo = bs->segs[sg].lo, hi = bs->segs[sg].hi, e;
      if (lo >= hi)
        continue;
      if (a->sparse) {
        for (e = lo; e < hi; e++)
          for (d = 0; d < a->ndims; d++) {
            int64_t k = a->keys[e * a->ndims + d];
            if (k < out[b][d][0])
              out[b][d][0] = k;
            if (k > out[b][d][1])
              out[b][d][1] = k;
          }
      } else {
        int64_t k0[ORION_MAX_DIMS], k1[ORION_MAX_DIMS];
        int same = 1;
        orion_key_delinearize(a->ndims, a->dims, lo, k0);
        orion_key_delinearize(a->ndims, a->dims, hi - 1, k1);
        for (d = 0; d < a->ndims; d++) {
          int64_t klo = same ? k0[d] : 0, khi = same ? k1[d] : a->dims[d] - 1;
          if (klo > khi) { /* wrapped within a row: the whole range */
            klo = 0;
            khi = a->dims[d] - 1;
          }
          if (klo < out[b][d][0])
            out[b][d][0] = klo;
          if (khi > out[b][d][1])
            out[b][d][1] = khi;
          if (k0[d] != k1[d])
            same = 0;
        }
      }
    }
  }
}
