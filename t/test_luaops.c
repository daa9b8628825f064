/* util/luaops.h: Lua 5.4 arithmetic and comparisons in C, checked against
 * the Lua library on edge cases and random operands. */
#include <criterion/criterion.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/luaops.h"
#include "util/rng.h"

static lua_State *L;

static void setup(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
}

static void teardown(void) { lua_close(L); }

TestSuite(luaops, .init = setup, .fini = teardown);

static const int64_t ints[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, 64,
                               -64, 63, 65, INT64_MAX, INT64_MIN,
                               INT64_MAX - 1, INT64_MIN + 1,
                               (int64_t)1 << 53, ((int64_t)1 << 53) + 1,
                               -((int64_t)1 << 53) - 1, 1000000007};

static const double floats[] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5,
                                3.0, 1e300, -1e300, 0x1p63, -0x1p63,
                                0x1p63 - 1024, 0x1p53, 0x1p53 + 2,
                                INFINITY, -INFINITY, NAN, 7.25, -7.25,
                                9007199254740993.0, 1e-300};

/* Runs `return <expr>` over (a, b) with pcall; on success returns 1 with
 * the result at the top of the stack, else 0 with the message there. */
static int eval2(const char *expr, int aint, int64_t ai, double af, int bint,
                 int64_t bi, double bf) {
  char src[256];
  snprintf(src, sizeof src, "local a, b = ... return %s", expr);
  cr_assert_eq(luaL_loadstring(L, src), LUA_OK);
  if (aint)
    lua_pushinteger(L, ai);
  else
    lua_pushnumber(L, af);
  if (bint)
    lua_pushinteger(L, bi);
  else
    lua_pushnumber(L, bf);
  return lua_pcall(L, 2, 1, 0) == LUA_OK;
}

static int same_float(double x, double y) {
  if (isnan(x) || isnan(y))
    return isnan(x) && isnan(y);
  return memcmp(&x, &y, sizeof x) == 0; /* -0.0 vs 0.0 too */
}

static void check_int_op(const char *expr, int64_t a, int64_t b, int rc,
                         int64_t got) {
  int ok = eval2(expr, 1, a, 0, 1, b, 0);
  if (!ok) {
    const char *msg = lua_tostring(L, -1);
    cr_assert_neq(rc, ORION_LUAOP_OK, "%lld %s %lld: Lua raised %s",
                  (long long)a, expr, (long long)b, msg);
    cr_assert(strstr(msg, orion_luaop_message(rc)) != NULL,
              "%s: '%s' does not contain '%s'", expr, msg,
              orion_luaop_message(rc));
  } else {
    cr_assert_eq(rc, ORION_LUAOP_OK, "%lld %s %lld: Lua gave %lld",
                 (long long)a, expr, (long long)b,
                 (long long)lua_tointeger(L, -1));
    cr_assert(lua_isinteger(L, -1));
    cr_assert_eq(got, (int64_t)lua_tointeger(L, -1), "(%lld, %lld) %s",
                 (long long)a, (long long)b, expr);
  }
  lua_pop(L, 1);
}

static void int_pair(int64_t a, int64_t b) {
  int64_t r = 0;
  int rc;
  check_int_op("a + b", a, b, 0, orion_lua_iadd(a, b));
  check_int_op("a - b", a, b, 0, orion_lua_isub(a, b));
  check_int_op("a * b", a, b, 0, orion_lua_imul(a, b));
  rc = orion_lua_idiv(a, b, &r);
  check_int_op("a // b", a, b, rc, r);
  rc = orion_lua_imod(a, b, &r);
  check_int_op("a % b", a, b, rc, r);
  check_int_op("a << b", a, b, 0, orion_lua_shl(a, b));
  check_int_op("a >> b", a, b, 0, orion_lua_shr(a, b));
  check_int_op("-a", a, b, 0, orion_lua_iunm(a));
}

Test(luaops, integer_edges) {
  size_t i, j;
  for (i = 0; i < sizeof ints / sizeof *ints; i++)
    for (j = 0; j < sizeof ints / sizeof *ints; j++)
      int_pair(ints[i], ints[j]);
}

Test(luaops, integer_random) {
  orion_rng g;
  int k;
  orion_rng_seed(&g, 11);
  for (k = 0; k < 20000; k++) {
    int64_t a = (int64_t)orion_rng_next(&g), b = (int64_t)orion_rng_next(&g);
    if (k % 3 == 1)
      b = (int64_t)(orion_rng_next(&g) % 200) - 100;
    if (k % 5 == 2)
      a = (int64_t)(orion_rng_next(&g) % 2000) - 1000;
    int_pair(a, b);
  }
}

static void check_float(const char *expr, double a, double b, double got) {
  cr_assert(eval2(expr, 0, 0, a, 0, 0, b), "%s raised", expr);
  cr_assert(same_float(got, lua_tonumber(L, -1)), "(%.17g, %.17g) %s: %.17g "
            "vs Lua %.17g",
            a, b, expr, got, lua_tonumber(L, -1));
  lua_pop(L, 1);
}

static void float_pair(double a, double b) {
  check_float("a // b", a, b, orion_lua_fidiv(a, b));
  check_float("a % b", a, b, orion_lua_fmod(a, b));
  check_float("a ^ b", a, b, orion_lua_pow(a, b));
}

Test(luaops, float_edges_and_random) {
  size_t i, j;
  orion_rng g;
  int k;
  for (i = 0; i < sizeof floats / sizeof *floats; i++)
    for (j = 0; j < sizeof floats / sizeof *floats; j++)
      float_pair(floats[i], floats[j]);
  orion_rng_seed(&g, 5);
  for (k = 0; k < 20000; k++) {
    double a = (orion_rng_uniform(&g) - 0.5) * 1000;
    double b = (orion_rng_uniform(&g) - 0.5) * (k % 2 ? 10 : 1e6);
    float_pair(a, b);
  }
}

/* math.tointeger and the mixed comparisons, both operand orders. */
static void mixed(int64_t i, double f) {
  int64_t k = 0;
  int rc = orion_lua_f2i(f, &k);
  cr_assert(eval2("math.tointeger(b)", 1, i, 0, 0, 0, f));
  if (lua_isnil(L, -1))
    cr_assert_eq(rc, ORION_LUAOP_NO_INT, "tointeger(%.17g)", f);
  else
    cr_assert(rc == ORION_LUAOP_OK && k == lua_tointeger(L, -1),
              "tointeger(%.17g)", f);
  lua_pop(L, 1);
#define CMP(expr, val)                                                        \
  do {                                                                        \
    cr_assert(eval2(expr, 1, i, 0, 0, 0, f));                                 \
    cr_assert_eq(lua_toboolean(L, -1), (val), "%lld, %.17g: %s",            \
                 (long long)i, f, expr);                                      \
    lua_pop(L, 1);                                                            \
  } while (0)
  CMP("a < b", orion_lua_lt_if(i, f));
  CMP("a <= b", orion_lua_le_if(i, f));
  CMP("a == b", orion_lua_eq_if(i, f));
  CMP("b < a", orion_lua_lt_fi(f, i));
  CMP("b <= a", orion_lua_le_fi(f, i));
#undef CMP
}

Test(luaops, mixed_comparisons_and_tointeger) {
  size_t i, j;
  orion_rng g;
  int k;
  for (i = 0; i < sizeof ints / sizeof *ints; i++)
    for (j = 0; j < sizeof floats / sizeof *floats; j++)
      mixed(ints[i], floats[j]);
  orion_rng_seed(&g, 9);
  for (k = 0; k < 20000; k++) {
    int64_t a = (int64_t)(orion_rng_next(&g) % 2001) - 1000;
    double b = floor((orion_rng_uniform(&g) - 0.5) * 2000) +
               (k % 4 == 0 ? 0.5 : 0.0);
    if (k % 7 == 3) { /* near the ends of the integer range */
      a = k % 2 ? INT64_MAX - (int64_t)(orion_rng_next(&g) % 4096)
                : INT64_MIN + (int64_t)(orion_rng_next(&g) % 4096);
      b = k % 2 ? 0x1p63 - 1024 * (double)(orion_rng_next(&g) % 4)
                : -0x1p63 + 1024 * (double)(orion_rng_next(&g) % 4);
    }
    mixed(a, b);
  }
}
