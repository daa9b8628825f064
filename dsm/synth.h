/* The embedded default dataset: a synthetic low-rank ratings matrix with
 * noise and power-law user and item degrees, generated deterministically
 * from a seed (no file needed). */
#ifndef ORION_DSM_SYNTH_H
#define ORION_DSM_SYNTH_H

#include <stdint.h>

#include "dsm/array.h"

typedef struct orion_synth_opts {
  int64_t users, items; /* matrix shape */
  int64_t ratings;      /* distinct (user, item) pairs to draw */
  int rank;             /* rank of the true factors */
  double noise;         /* std of Gaussian noise added to each rating */
  double zipf;          /* degree exponent: weight of the r-th id ~ r^-zipf */
  double test_fraction; /* share of ratings held out for testing */
  uint64_t seed;
} orion_synth_opts;

/* Defaults: 6000 x 4000, 400k ratings, rank 8, noise 0.3, zipf 0.8,
 * 10% test, seed 42. */
void orion_synth_opts_init(orion_synth_opts *o);

/* Draws the ratings (values f32 in [1, 5]: 3 + 1.2 * <u, v> + noise, clamped)
 * into two sparse 2-D arrays with dims (users, items).  The caller owns one
 * reference to each. */
int orion_synth_ratings(const orion_synth_opts *o, orion_array **train,
                        orion_array **test, orion_error *err);

#endif
