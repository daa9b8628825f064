/* Lua 5.4's arithmetic and comparison semantics as C inline functions, for
 * code generated from loop bodies (issue 5).  Each function gives exactly
 * the value the interpreter gives for the same operands and subtypes
 * (integers wrap around; `//` and `%` round toward minus infinity; mixed
 * integer/float comparisons are exact).  Operations that raise in Lua
 * return a code instead: ORION_LUAOP_OK, or one naming the error Lua
 * raises.  t/test_luaops.c checks them against the Lua library. */
#ifndef ORION_UTIL_LUAOPS_H
#define ORION_UTIL_LUAOPS_H

#include <math.h>
#include <stdint.h>

enum {
  ORION_LUAOP_OK = 0,
  ORION_LUAOP_IDIV_ZERO, /* "attempt to divide by zero" */
  ORION_LUAOP_MOD_ZERO,  /* "attempt to perform 'n%0'" */
  ORION_LUAOP_NO_INT     /* "number has no integer representation" */
};

/* The message Lua raises for a code above (static). */
static inline const char *orion_luaop_message(int code) {
  switch (code) {
  case ORION_LUAOP_IDIV_ZERO: return "attempt to divide by zero";
  case ORION_LUAOP_MOD_ZERO: return "attempt to perform 'n%0'";
  case ORION_LUAOP_NO_INT: return "number has no integer representation";
  default: return "";
  }
}

/* Integer +, -, * wrap around (two's complement), as in Lua. */
static inline int64_t orion_lua_iadd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t orion_lua_isub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
static inline int64_t orion_lua_imul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
static inline int64_t orion_lua_iunm(int64_t a) {
  return (int64_t)(0u - (uint64_t)a);
}

/* a // b for integers: floor division; b == 0 is an error. */
static inline int orion_lua_idiv(int64_t a, int64_t b, int64_t *out) {
  if (b == 0)
    return ORION_LUAOP_IDIV_ZERO;
  if (b == -1) { /* avoids the overflow of INT64_MIN / -1 */
    *out = orion_lua_iunm(a);
    return ORION_LUAOP_OK;
  }
  {
    int64_t q = a / b;
    if ((a % b != 0) && ((a ^ b) < 0))
      q -= 1; /* truncated toward zero: one below for a negative quotient */
    *out = q;
  }
  return ORION_LUAOP_OK;
}

/* a % b for integers: the result has b's sign; b == 0 is an error. */
static inline int orion_lua_imod(int64_t a, int64_t b, int64_t *out) {
  if (b == 0)
    return ORION_LUAOP_MOD_ZERO;
  if (b == -1) {
    *out = 0;
    return ORION_LUAOP_OK;
  }
  {
    int64_t m = a % b;
    if (m != 0 && (m ^ b) < 0)
      m += b;
    *out = m;
  }
  return ORION_LUAOP_OK;
}

/* a // b for floats: floor(a / b). */
static inline double orion_lua_fidiv(double a, double b) {
  return floor(a / b);
}

/* a % b for floats: fmod adjusted to b's sign (inf and nan as in Lua). */
static inline double orion_lua_fmod(double a, double b) {
  double m = fmod(a, b);
  if ((m > 0) ? b < 0 : (m < 0 && b > 0)) /* signs differ */
    m += b;
  return m;
}

/* a ^ b and a / b always work on floats. */
static inline double orion_lua_pow(double a, double b) {
  return b == 2 ? a * a : pow(a, b);
}

/* Shifts: logical; a shift of 64 or more (either way) gives 0. */
static inline int64_t orion_lua_shl(int64_t a, int64_t n) {
  if (n <= -64 || n >= 64)
    return 0;
  if (n >= 0)
    return (int64_t)((uint64_t)a << n);
  return (int64_t)((uint64_t)a >> -n);
}
static inline int64_t orion_lua_shr(int64_t a, int64_t n) {
  return orion_lua_shl(a, n == INT64_MIN ? 64 : -n);
}

/* A float with an exact integer value to that integer (math.tointeger,
 * array subscripts, bitwise operands); anything else is an error. */
static inline int orion_lua_f2i(double d, int64_t *out) {
  if (!(d >= -0x1p63 && d < 0x1p63) || floor(d) != d)
    return ORION_LUAOP_NO_INT;
  *out = (int64_t)d;
  return ORION_LUAOP_OK;
}

/* Exact comparisons between an integer and a float (i < f, i <= f,
 * i == f, and f < i, f <= i); nan compares false. */
static inline int orion_lua_lt_if(int64_t i, double f) {
  if (f >= 0x1p63)
    return !isnan(f);
  if (f > -0x1p63) /* -2^63 < f < 2^63: compare with ceil(f) exactly */
    return i < (int64_t)ceil(f);
  return 0; /* f <= -2^63 or nan */
}
static inline int orion_lua_le_if(int64_t i, double f) {
  if (f >= 0x1p63)
    return !isnan(f);
  if (f >= -0x1p63)
    return i <= (int64_t)floor(f);
  return 0;
}
static inline int orion_lua_lt_fi(double f, int64_t i) {
  if (f >= 0x1p63 || isnan(f))
    return 0;
  if (f >= -0x1p63)
    return (int64_t)floor(f) < i;
  return 1;
}
static inline int orion_lua_le_fi(double f, int64_t i) {
  if (f >= 0x1p63 || isnan(f))
    return 0;
  if (f > -0x1p63)
    return (int64_t)ceil(f) <= i;
  return 1;
}
static inline int orion_lua_eq_if(int64_t i, double f) {
  int64_t k;
  return orion_lua_f2i(f, &k) == ORION_LUAOP_OK && k == i;
}

#endif
