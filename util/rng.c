#include "util/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void orion_rng_seed(orion_rng *r, uint64_t seed) {
  int i;
  for (i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
  r->has_spare = 0;
  r->spare = 0;
}

uint64_t orion_rng_next(orion_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double orion_rng_uniform(orion_rng *r) {
  return (double)(orion_rng_next(r) >> 11) * 0x1.0p-53;
}

double orion_rng_normal(orion_rng *r) {
  double u, v, s;
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  do {
    u = 2.0 * orion_rng_uniform(r) - 1.0;
    v = 2.0 * orion_rng_uniform(r) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  s = sqrt(-2.0 * log(s) / s);
  r->spare = v * s;
  r->has_spare = 1;
  return u * s;
}

uint64_t orion_rng_below(orion_rng *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = orion_rng_next(r);
  while (x >= limit);
  return x % n;
}

uint64_t orion_seed_mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a;
  uint64_t h = splitmix64(&x);
  x = h ^ b;
  h = splitmix64(&x);
  x = h ^ c;
  return splitmix64(&x);
}
