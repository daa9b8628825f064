/* A small, reproducible random number generator (xoshiro256**, seeded
 * through splitmix64) used for array initialisation, splits and synthetic
 * data.  Same seed, same stream, on every platform. */
#ifndef ORION_UTIL_RNG_H
#define ORION_UTIL_RNG_H

#include <stdint.h>

typedef struct orion_rng {
  uint64_t s[4];
  int has_spare;
  double spare;
} orion_rng;

void orion_rng_seed(orion_rng *r, uint64_t seed);
uint64_t orion_rng_next(orion_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double orion_rng_uniform(orion_rng *r);
/* Standard normal (Marsaglia polar method). */
double orion_rng_normal(orion_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t orion_rng_below(orion_rng *r, uint64_t n);
/* Mixes several 64-bit values into one seed. */
uint64_t orion_seed_mix(uint64_t a, uint64_t b, uint64_t c);

#endif
