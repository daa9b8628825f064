#include "dsm/synth.h"

#include <math.h>
#include <string.h>

#include "util/alloc.h"
#include "util/rng.h"

void orion_synth_opts_init(orion_synth_opts *o) {
  o->users = 6000;
  o->items = 4000;
  o->ratings = 400000;
  o->rank = 8;
  o->noise = 0.3;
  o->zipf = 0.8;
  o->test_fraction = 0.1;
  o->seed = 42;
}

/* Cumulative weights r^-zipf over a random permutation of ids, so popular
 * ids are spread over the key range instead of bunched at its start. */
static double *power_law_cdf(int64_t n, double zipf, orion_rng *rng,
                             int64_t **perm_out) {
  double *cdf = orion_malloc(sizeof *cdf * (size_t)n), acc = 0;
  int64_t *perm = orion_malloc(sizeof *perm * (size_t)n), i;
  if (cdf == NULL || perm == NULL) {
    orion_free(cdf);
    orion_free(perm);
    return NULL;
  }
  for (i = 0; i < n; i++)
    perm[i] = i;
  for (i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)orion_rng_below(rng, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (i = 0; i < n; i++) {
    acc += pow((double)(i + 1), -zipf);
    cdf[i] = acc;
  }
  *perm_out = perm;
  return cdf;
}

static int64_t draw(const double *cdf, const int64_t *perm, int64_t n,
                    orion_rng *rng) {
  double x = orion_rng_uniform(rng) * cdf[n - 1];
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (cdf[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return perm[lo];
}

/* Open-addressing set of linear keys (to keep pairs distinct). */
typedef struct {
  uint64_t *slots;
  uint64_t mask;
} keyset;

static int keyset_add(keyset *s, uint64_t key) {
  uint64_t h = (key + 1) * 0x9e3779b97f4a7c15ULL;
  uint64_t i = (h ^ (h >> 29)) & s->mask;
  while (s->slots[i] != 0) {
    if (s->slots[i] == key + 1)
      return 0;
    i = (i + 1) & s->mask;
  }
  s->slots[i] = key + 1;
  return 1;
}

int orion_synth_ratings(const orion_synth_opts *o, orion_array **train,
                        orion_array **test, orion_error *err) {
  orion_rng rng;
  double *ucdf = NULL, *icdf = NULL, *U = NULL, *V = NULL, sd;
  int64_t *uperm = NULL, *iperm = NULL, made = 0, tries = 0;
  keyset set = {NULL, 0};
  orion_array *tr = NULL, *te = NULL;
  uint64_t slots = 1;
  int rc = 0;
  *train = *test = NULL;
  if (o->users < 1 || o->items < 1 || o->rank < 1 || o->ratings < 1 ||
      o->ratings > o->users * o->items / 2)
    return orion_error_set(err, ORION_EINVAL,
                           "synthetic ratings: bad shape (ratings must be at "
                           "most half of users x items)");
  orion_rng_seed(&rng, o->seed);
  ucdf = power_law_cdf(o->users, o->zipf, &rng, &uperm);
  icdf = power_law_cdf(o->items, o->zipf, &rng, &iperm);
  U = orion_malloc(sizeof *U * (size_t)(o->users * o->rank));
  V = orion_malloc(sizeof *V * (size_t)(o->items * o->rank));
  while (slots < (uint64_t)o->ratings * 2)
    slots <<= 1;
  set.slots = orion_calloc(slots, sizeof *set.slots);
  set.mask = slots - 1;
  tr = orion_array_new_sparse(2, ORION_F32, err);
  te = orion_array_new_sparse(2, ORION_F32, err);
  if (ucdf == NULL || icdf == NULL || U == NULL || V == NULL ||
      set.slots == NULL || tr == NULL || te == NULL ||
      orion_array_reserve(tr, o->ratings) != 0) {
    rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    goto done;
  }
  /* Factor entries with std rank^-1/4 give <u, v> unit variance. */
  sd = pow((double)o->rank, -0.25);
  for (int64_t i = 0; i < o->users * o->rank; i++)
    U[i] = sd * orion_rng_normal(&rng);
  for (int64_t i = 0; i < o->items * o->rank; i++)
    V[i] = sd * orion_rng_normal(&rng);
  while (made < o->ratings && rc == 0) {
    int64_t u = draw(ucdf, uperm, o->users, &rng);
    int64_t it = draw(icdf, iperm, o->items, &rng);
    int64_t keys[2] = {u, it};
    double dot = 0, r;
    float v;
    if (++tries > o->ratings * 50) {
      rc = orion_error_set(err, ORION_EINVAL,
                           "synthetic ratings: too many collisions; lower "
                           "the rating count or the zipf exponent");
      break;
    }
    if (!keyset_add(&set, (uint64_t)(u * o->items + it)))
      continue;
    for (int k = 0; k < o->rank; k++)
      dot += U[u * o->rank + k] * V[it * o->rank + k];
    r = 3.0 + 1.2 * dot + o->noise * orion_rng_normal(&rng);
    v = (float)(r < 1.0 ? 1.0 : r > 5.0 ? 5.0 : r);
    rc = orion_array_push(orion_rng_uniform(&rng) < o->test_fraction ? te : tr,
                          keys, &v);
    made++;
  }
  if (rc == 0) {
    int64_t dims[2] = {o->users, o->items};
    memcpy(tr->dims, dims, sizeof dims);
    memcpy(te->dims, dims, sizeof dims);
    *train = tr;
    *test = te;
    tr = te = NULL;
  } else if (err != NULL && err->code == 0) {
    orion_error_set(err, rc, "synthetic ratings: %s", orion_strerror(rc));
  }
done:
  orion_free(ucdf);
  orion_free(icdf);
  orion_free(uperm);
  orion_free(iperm);
  orion_free(U);
  orion_free(V);
  orion_free(set.slots);
  orion_array_release(tr);
  orion_array_release(te);
  return rc;
}
