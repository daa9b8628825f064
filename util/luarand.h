/* Lua 5.4's math.random, in C: the same xoshiro256** generator, seeding
 * and projection onto ranges as lmathlib.c, so that code compiled from a
 * loop body (issue 5) draws exactly the numbers the interpreter would draw
 * after the same math.randomseed.  t/test_luarand.c checks it against the
 * linked Lua library. */
#ifndef ORION_UTIL_LUARAND_H
#define ORION_UTIL_LUARAND_H

#include <stdint.h>

/* ORION_PRELUDE_BEGIN */

/* The generator's steps on a bare state, static inline: the functions
 * below call them, and the build copies this part into the prelude of
 * every generated source (analysis/cgen_prelude.h, analysis/mkprelude.awk),
 * so compiled bodies draw exactly what the interpreter draws.  System
 * headers only. */
#ifndef ORION_LUARAND_HD /* __host__ __device__ when built for the GPU */
#define ORION_LUARAND_HD
#endif
#define ORION_LUARAND static inline __attribute__((unused)) ORION_LUARAND_HD

ORION_LUARAND uint64_t orion_luarand_rotl(uint64_t x, int n) {
  return (x << n) | (x >> (64 - n));
}

/* xoshiro256** as lmathlib.c: the next 64 bits, advancing s. */
ORION_LUARAND uint64_t orion_luarand_step(uint64_t *s) {
  uint64_t s0 = s[0], s1 = s[1], s2 = s[2] ^ s0, s3 = s[3] ^ s1;
  uint64_t out = orion_luarand_rotl(s1 * 5, 7) * 9;
  s[0] = s0 ^ s3;
  s[1] = s1 ^ s2;
  s[2] = s2 ^ (s1 << 17);
  s[3] = orion_luarand_rotl(s3, 45);
  return out;
}

/* A float in [0, 1) from 64 random bits (the top 53). */
ORION_LUARAND double orion_luarand_tofloat(uint64_t r) {
  return (double)(r >> 11) * 0x1.0p-53;
}

/* An integer in [low, up] from the draw ran: masked to the smallest
 * 2^b - 1 >= up - low, drawn again from s while it falls above. */
ORION_LUARAND int64_t orion_luarand_project(uint64_t ran, int64_t low,
                                            int64_t up, uint64_t *s) {
  uint64_t n = (uint64_t)up - (uint64_t)low, lim = n;
  if ((n & (n + 1)) == 0) { /* n + 1 is a power of 2 */
    ran &= n;
  } else {
    lim |= lim >> 1;
    lim |= lim >> 2;
    lim |= lim >> 4;
    lim |= lim >> 8;
    lim |= lim >> 16;
    lim |= lim >> 32;
    while ((ran &= lim) > n)
      ran = orion_luarand_step(s);
  }
  return (int64_t)(ran + (uint64_t)low);
}
/* ORION_PRELUDE_END */

typedef struct orion_luarand {
  uint64_t s[4];
} orion_luarand;

/* math.randomseed(n1, n2) with integer arguments (n2 = 0 when omitted). */
void orion_luarand_seed(orion_luarand *r, int64_t n1, int64_t n2);

/* The next raw 64-bit value of the generator. */
uint64_t orion_luarand_next(orion_luarand *r);

/* math.random(): a float in [0, 1) from the top 53 bits of one draw. */
double orion_luarand_float(orion_luarand *r);

/* math.random(0): one draw as a signed integer. */
int64_t orion_luarand_int(orion_luarand *r);

/* math.random(low, up) for low <= up (math.random(m) is (1, m)); the
 * caller raises Lua's "interval is empty" error when low > up. */
int64_t orion_luarand_range(orion_luarand *r, int64_t low, int64_t up);

#endif
