/* util/luarand: Lua 5.4's math.random in C, checked draw for draw against
 * the Lua library the executors run. */
#include <criterion/criterion.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>

#include "util/luarand.h"

static lua_State *L;

static void setup(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
}

static void teardown(void) { lua_close(L); }

TestSuite(luarand, .init = setup, .fini = teardown);

/* Calls math.<fn>(args...) in Lua and leaves the first result on the
 * stack. */
static void call_math(const char *fn, int nargs, const lua_Integer *args) {
  int i;
  lua_getglobal(L, "math");
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);
  for (i = 0; i < nargs; i++)
    lua_pushinteger(L, args[i]);
  lua_call(L, nargs, 1);
}

static void seed_both(orion_luarand *r, int64_t n1, int64_t n2, int two) {
  lua_Integer a[2] = {n1, n2};
  call_math("randomseed", two ? 2 : 1, a);
  lua_pop(L, 1);
  orion_luarand_seed(r, n1, two ? n2 : 0);
}

static const int64_t seeds[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN,
                                0x5DEECE66DLL, -123456789012345LL};

Test(luarand, floats_match) {
  size_t k;
  int i;
  for (k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    orion_luarand r;
    seed_both(&r, seeds[k], 0, 0);
    for (i = 0; i < 5000; i++) {
      double want, got = orion_luarand_float(&r);
      call_math("random", 0, NULL);
      want = lua_tonumber(L, -1);
      lua_pop(L, 1);
      cr_assert(got == want, "seed %lld draw %d: %.17g vs Lua %.17g",
                (long long)seeds[k], i, got, want);
      cr_assert(got >= 0 && got < 1);
    }
  }
}

Test(luarand, two_argument_seed_matches) {
  orion_luarand r;
  int i;
  seed_both(&r, 7, -99, 1);
  for (i = 0; i < 2000; i++) {
    int64_t got = orion_luarand_range(&r, -1000, 1000);
    lua_Integer a[2] = {-1000, 1000};
    call_math("random", 2, a);
    cr_assert_eq(got, (int64_t)lua_tointeger(L, -1), "draw %d", i);
    lua_pop(L, 1);
  }
}

Test(luarand, ranges_match) {
  static const int64_t ranges[][2] = {
      {1, 1},           {1, 2},          {1, 6},
      {1, 7},           {1, 8},          {1, 1000},
      {-5, 5},          {0, 0},          {-1000000007, 3},
      {1, 1LL << 40},   {1, (1LL << 40) + 1},
      {INT64_MIN, INT64_MAX},            {INT64_MIN, -1},
      {0, INT64_MAX},   {INT64_MAX - 3, INT64_MAX}};
  size_t k, j;
  int i;
  for (k = 0; k < sizeof seeds / sizeof *seeds; k++)
    for (j = 0; j < sizeof ranges / sizeof *ranges; j++) {
      orion_luarand r;
      seed_both(&r, seeds[k], 0, 0);
      for (i = 0; i < 300; i++) {
        lua_Integer a[2] = {ranges[j][0], ranges[j][1]};
        int64_t got = orion_luarand_range(&r, ranges[j][0], ranges[j][1]);
        int64_t want;
        call_math("random", 2, a);
        want = (int64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
        cr_assert_eq(got, want, "seed %lld, random(%lld, %lld), draw %d",
                     (long long)seeds[k], (long long)ranges[j][0],
                     (long long)ranges[j][1], i);
        cr_assert(got >= ranges[j][0] && got <= ranges[j][1]);
      }
    }
}

Test(luarand, one_argument_and_zero_match) {
  orion_luarand r;
  int i;
  seed_both(&r, 2024, 0, 0);
  for (i = 0; i < 3000; i++) {
    lua_Integer m = i % 3 == 0 ? 0 : (lua_Integer)(i % 97 + 1);
    int64_t got = m == 0 ? orion_luarand_int(&r)
                         : orion_luarand_range(&r, 1, (int64_t)m);
    call_math("random", 1, &m);
    cr_assert_eq(got, (int64_t)lua_tointeger(L, -1), "random(%lld), draw %d",
                 (long long)m, i);
    lua_pop(L, 1);
  }
}

/* Mixed calls share one stream, as in a body that draws floats and
 * integers in turn. */
Test(luarand, interleaved_calls_match) {
  orion_luarand r;
  int i;
  seed_both(&r, -77, 0, 0);
  for (i = 0; i < 4000; i++) {
    if (i % 2 == 0) {
      double got = orion_luarand_float(&r);
      call_math("random", 0, NULL);
      cr_assert(got == lua_tonumber(L, -1), "draw %d", i);
    } else {
      lua_Integer a[2] = {3, 3 + i};
      int64_t got = orion_luarand_range(&r, 3, 3 + i);
      call_math("random", 2, a);
      cr_assert_eq(got, (int64_t)lua_tointeger(L, -1), "draw %d", i);
    }
    lua_pop(L, 1);
  }
}
