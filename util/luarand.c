/* Lua 5.4's math.random in C (see luarand.h).  Written from the behaviour
 * documented in the Lua 5.4 reference manual (section 6.7) and checked
 * draw for draw against the Lua library in t/test_luarand.c. */
#include "util/luarand.h"

static uint64_t rotl(uint64_t x, int n) { return (x << n) | (x >> (64 - n)); }

uint64_t orion_luarand_next(orion_luarand *r) {
  uint64_t *s = r->s;
  uint64_t s0 = s[0], s1 = s[1], s2 = s[2] ^ s0, s3 = s[3] ^ s1;
  uint64_t out = rotl(s1 * 5, 7) * 9;
  s1 <<= 17;
  s[0] = s0 ^ s3;
  s[1] = s[1] ^ s2;
  s[2] = s2 ^ s1;
  s[3] = rotl(s3, 45);
  return out;
}

void orion_luarand_seed(orion_luarand *r, int64_t n1, int64_t n2) {
  int i;
  r->s[0] = (uint64_t)n1;
  r->s[1] = 0xff; /* never an all-zero state */
  r->s[2] = (uint64_t)n2;
  r->s[3] = 0;
  for (i = 0; i < 16; i++) /* spread the seed */
    orion_luarand_next(r);
}

double orion_luarand_float(orion_luarand *r) {
  return (double)(orion_luarand_next(r) >> 11) * 0x1.0p-53;
}

int64_t orion_luarand_int(orion_luarand *r) {
  return (int64_t)orion_luarand_next(r);
}

/* A draw in [0, n]: masked to the smallest 2^b - 1 >= n, redrawn while it
 * falls above n. */
static uint64_t project(orion_luarand *r, uint64_t ran, uint64_t n) {
  uint64_t lim = n;
  if ((n & (n + 1)) == 0) /* n + 1 is a power of 2 */
    return ran & n;
  lim |= lim >> 1;
  lim |= lim >> 2;
  lim |= lim >> 4;
  lim |= lim >> 8;
  lim |= lim >> 16;
  lim |= lim >> 32;
  while ((ran &= lim) > n)
    ran = orion_luarand_next(r);
  return ran;
}

int64_t orion_luarand_range(orion_luarand *r, int64_t low, int64_t up) {
  uint64_t ran = orion_luarand_next(r);
  return (int64_t)(project(r, ran, (uint64_t)up - (uint64_t)low) +
                   (uint64_t)low);
}
