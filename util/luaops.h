/* Lua 5.4's arithmetic and comparison semantics as C inline functions: the
 * one copy of them in the project.  The code generator folds constants
 * with them (analysis/cgen_expr.c), and the code it generates from loop
 * bodies calls them at run time: the build copies the part between
 * ORION_PRELUDE_BEGIN and ORION_PRELUDE_END into the prelude of every
 * generated source (analysis/cgen_prelude.h, analysis/mkprelude.awk), so
 * that part must stay self-contained: system headers only, static
 * functions only.
 *
 * Each function gives exactly the value the interpreter gives for the same
 * operands and subtypes (integers wrap around; `//` and `%` round toward
 * minus infinity; mixed integer/float comparisons are exact), following
 * lvm.c.  Operations that raise in Lua return a code instead:
 * ORION_LUAOP_OK, or one naming the error Lua raises.  t/test_luaops.c
 * checks them against the Lua library; t/test_cgen.c checks compiled
 * bodies against the interpreter.
 *
 * ORION_LUAOP_OPAQUE(x), when defined before this header, wraps the base
 * of pow(): generated code in exact mode makes it an optimisation barrier
 * so that the C compiler cannot fold pow of a constant (it would round
 * where the C library, which the interpreter calls, may not).
 */
#ifndef ORION_UTIL_LUAOPS_H
#define ORION_UTIL_LUAOPS_H

#include <math.h>
#include <stdint.h>

#ifndef ORION_LUAOP_OPAQUE
#define ORION_LUAOP_OPAQUE(x) (x)
#endif

/* ORION_PRELUDE_BEGIN */

/* Every function here is static inline and may go unused where the header
 * is included (clang warns about those in a main file).  A body built for
 * the device with nvcc defines ORION_LUAOP_HD as __host__ __device__. */
#ifndef ORION_LUAOP_HD
#define ORION_LUAOP_HD
#endif
#define ORION_LUAOP static inline __attribute__((unused)) ORION_LUAOP_HD

enum {
  ORION_LUAOP_OK = 0,
  ORION_LUAOP_IDIV_ZERO, /* "attempt to divide by zero" */
  ORION_LUAOP_MOD_ZERO,  /* "attempt to perform 'n%0'" */
  ORION_LUAOP_NO_INT     /* "number has no integer representation" */
};

/* Integer +, -, * and unary minus wrap around (two's complement). */
ORION_LUAOP int64_t orion_lua_iadd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
ORION_LUAOP int64_t orion_lua_isub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
ORION_LUAOP int64_t orion_lua_imul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
ORION_LUAOP int64_t orion_lua_iunm(int64_t a) {
  return (int64_t)(0u - (uint64_t)a);
}

/* a // b for integers and b != 0 (luaV_idiv): floor division. */
ORION_LUAOP int64_t orion_lua_idiv_nz(int64_t a, int64_t b) {
  int64_t q;
  if ((uint64_t)b + 1u <= 1u) /* -1 (or 0): avoids INT64_MIN / -1 */
    return orion_lua_iunm(a);
  q = a / b;
  if ((a ^ b) < 0 && a % b != 0)
    q -= 1; /* truncated toward zero: one below for a negative quotient */
  return q;
}

/* a % b for integers and b != 0 (luaV_mod): the result has b's sign. */
ORION_LUAOP int64_t orion_lua_imod_nz(int64_t a, int64_t b) {
  int64_t m;
  if ((uint64_t)b + 1u <= 1u) /* -1 (or 0) */
    return 0;
  m = a % b;
  if (m != 0 && (m ^ b) < 0)
    m += b;
  return m;
}

/* a // b for floats: floor(a / b). */
ORION_LUAOP double orion_lua_fidiv(double a, double b) {
  return floor(a / b);
}

/* a % b for floats: fmod adjusted to b's sign (inf and nan as in Lua). */
ORION_LUAOP double orion_lua_fmod(double a, double b) {
  double m = fmod(a, b);
  if ((m > 0) ? b < 0 : (m < 0 && b > 0)) /* signs differ */
    m += b;
  return m;
}

/* a ^ b always works on floats. */
ORION_LUAOP double orion_lua_pow(double a, double b) {
  return b == 2 ? a * a : pow(ORION_LUAOP_OPAQUE(a), b);
}

/* Shifts: logical; a shift of 64 or more (either way) gives 0. */
ORION_LUAOP int64_t orion_lua_shl(int64_t a, int64_t n) {
  if (n < 0) {
    if (n <= -64)
      return 0;
    return (int64_t)((uint64_t)a >> (uint64_t)orion_lua_iunm(n));
  }
  if (n >= 64)
    return 0;
  return (int64_t)((uint64_t)a << n);
}
ORION_LUAOP int64_t orion_lua_shr(int64_t a, int64_t n) {
  return orion_lua_shl(a, orion_lua_iunm(n));
}

/* Floats to integers (luaV_flttointns): exactly (math.tointeger, array
 * subscripts, bitwise operands: a float with an integral value), or the
 * floor or the ceiling; ORION_LUAOP_NO_INT when the result does not fit. */
ORION_LUAOP int orion_lua_ffits(double f) {
  return f >= -0x1p63 && f < 0x1p63;
}
ORION_LUAOP int orion_lua_f2i(double d, int64_t *out) {
  double f = floor(d);
  if (d != f || !orion_lua_ffits(f))
    return ORION_LUAOP_NO_INT;
  *out = (int64_t)f;
  return ORION_LUAOP_OK;
}
ORION_LUAOP int orion_lua_f2i_floor(double d, int64_t *out) {
  double f = floor(d);
  if (!orion_lua_ffits(f))
    return ORION_LUAOP_NO_INT;
  *out = (int64_t)f;
  return ORION_LUAOP_OK;
}
ORION_LUAOP int orion_lua_f2i_ceil(double d, int64_t *out) {
  double f = floor(d);
  if (d != f)
    f += 1;
  if (!orion_lua_ffits(f))
    return ORION_LUAOP_NO_INT;
  *out = (int64_t)f;
  return ORION_LUAOP_OK;
}

/* Exact comparisons between an integer and a float (LTintfloat and the
 * others in lvm.c: i < f, i <= f, f < i, f <= i, i == f); nan compares
 * false.  An integer of at most 2^53 in magnitude converts exactly. */
ORION_LUAOP int orion_lua_ifitsf(int64_t i) {
  return (uint64_t)0x20000000000000 + (uint64_t)i <=
         (uint64_t)0x40000000000000;
}
ORION_LUAOP int orion_lua_lt_if(int64_t i, double f) {
  int64_t fi;
  if (orion_lua_ifitsf(i))
    return (double)i < f;
  if (orion_lua_f2i_ceil(f, &fi) == ORION_LUAOP_OK) /* i < f <=> i < ceil f */
    return i < fi;
  return f > 0; /* f is beyond the integers (or nan: false) */
}
ORION_LUAOP int orion_lua_le_if(int64_t i, double f) {
  int64_t fi;
  if (orion_lua_ifitsf(i))
    return (double)i <= f;
  if (orion_lua_f2i_floor(f, &fi) == ORION_LUAOP_OK)
    return i <= fi;
  return f > 0;
}
ORION_LUAOP int orion_lua_lt_fi(double f, int64_t i) {
  int64_t fi;
  if (orion_lua_ifitsf(i))
    return f < (double)i;
  if (orion_lua_f2i_floor(f, &fi) == ORION_LUAOP_OK)
    return fi < i;
  return f < 0;
}
ORION_LUAOP int orion_lua_le_fi(double f, int64_t i) {
  int64_t fi;
  if (orion_lua_ifitsf(i))
    return f <= (double)i;
  if (orion_lua_f2i_ceil(f, &fi) == ORION_LUAOP_OK)
    return fi <= i;
  return f < 0;
}
ORION_LUAOP int orion_lua_eq_if(int64_t i, double f) {
  int64_t k;
  return orion_lua_f2i(f, &k) == ORION_LUAOP_OK && k == i;
}

/* An integer for loop's float limit (forlimit in lvm.c): the integer
 * limit in *lim; returns 1 when the loop does not run at all. */
ORION_LUAOP int orion_lua_forlimit(int64_t init, double flim, int64_t step,
                                   int64_t *lim) {
  if ((step < 0 ? orion_lua_f2i_ceil(flim, lim)
                : orion_lua_f2i_floor(flim, lim)) != ORION_LUAOP_OK) {
    if (0 < flim) { /* too large (else too small, or nan) */
      if (step < 0)
        return 1;
      *lim = INT64_MAX;
    } else {
      if (step > 0)
        return 1;
      *lim = INT64_MIN;
    }
  }
  return step > 0 ? init > *lim : init < *lim;
}

/* The iteration count minus one of an integer for loop that runs
 * (forprep in lvm.c), computed without overflow. */
ORION_LUAOP uint64_t orion_lua_forcount(int64_t init, int64_t lim,
                                        int64_t step) {
  if (step > 0) {
    uint64_t n = (uint64_t)lim - (uint64_t)init;
    return step != 1 ? n / (uint64_t)step : n;
  }
  return ((uint64_t)init - (uint64_t)lim) / ((uint64_t)(-(step + 1)) + 1u);
}
/* ORION_PRELUDE_END */

/* What the generated code does not need: the messages of the codes, and
 * the integer division and modulo that check for zero (the generated code
 * checks before, to raise at the interpreter's line). */

/* The message Lua raises for a code above (static). */
ORION_LUAOP const char *orion_luaop_message(int code) {
  switch (code) {
  case ORION_LUAOP_IDIV_ZERO: return "attempt to divide by zero";
  case ORION_LUAOP_MOD_ZERO: return "attempt to perform 'n%0'";
  case ORION_LUAOP_NO_INT: return "number has no integer representation";
  default: return "";
  }
}

/* a // b and a % b for integers; b == 0 is an error. */
ORION_LUAOP int orion_lua_idiv(int64_t a, int64_t b, int64_t *out) {
  if (b == 0)
    return ORION_LUAOP_IDIV_ZERO;
  *out = orion_lua_idiv_nz(a, b);
  return ORION_LUAOP_OK;
}
ORION_LUAOP int orion_lua_imod(int64_t a, int64_t b, int64_t *out) {
  if (b == 0)
    return ORION_LUAOP_MOD_ZERO;
  *out = orion_lua_imod_nz(a, b);
  return ORION_LUAOP_OK;
}

#endif
