/* Lua 5.4's math.random, in C: the same xoshiro256** generator, seeding
 * and projection onto ranges as lmathlib.c, so that code compiled from a
 * loop body (issue 5) draws exactly the numbers the interpreter would draw
 * after the same math.randomseed.  t/test_luarand.c checks it against the
 * linked Lua library. */
#ifndef ORION_UTIL_LUARAND_H
#define ORION_UTIL_LUARAND_H

#include <stdint.h>

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
