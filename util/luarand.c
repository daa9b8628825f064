/* Lua 5.4's math.random in C (see luarand.h).  Written from the behaviour
 * documented in the Lua 5.4 reference manual (section 6.7) and checked
 * draw for draw against the Lua library in t/test_luarand.c. */
#include "util/luarand.h"

uint64_t orion_luarand_next(orion_luarand *r) {
  return orion_luarand_step(r->s);
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
  return orion_luarand_tofloat(orion_luarand_next(r));
}

int64_t orion_luarand_int(orion_luarand *r) {
  return (int64_t)orion_luarand_next(r);
}

int64_t orion_luarand_range(orion_luarand *r, int64_t low, int64_t up) {
  return orion_luarand_project(orion_luarand_next(r), low, up, r->s);
}
