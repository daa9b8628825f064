/* The C code generator for compiled loop bodies (issue 5): one C function
 * per parallel_for body that runs the body over a block of elements,
 * bit-identical to the Lua 5.4 interpreter in exact mode.
 *
 * How it works:
 *  - The body's AST is walked several times.  The first walks only infer
 *    types: every local's set of possible values (nil, false, true,
 *    integer, float, or an array slice, an accumulator, the math table),
 *    joined over all its assignments until nothing changes.  The last walk
 *    emits C with those types.  A local that holds integers and floats at
 *    different points, or booleans and numbers, becomes a tagged value
 *    (o_v) with Lua's rules applied at run time; one with a single type
 *    becomes an int64_t, a double (a float in fast mode for f32 data) or
 *    an int.
 *  - Evaluation order follows the Lua compiler (operands left to right,
 *    targets of an assignment before its values, stores right to left),
 *    so the first error and math.random's draws are the interpreter's.
 *  - Errors give the interpreter's message and line.  Integer `//` and
 *    `%` by zero are raised by the VM without saving the current
 *    instruction, so Lua reports the line of the last instruction that
 *    did save it (an index, a call, `==` of two registers, a numeric
 *    for...); the generated code tracks that line in o_pc when the body
 *    can divide an integer by zero.
 *  - Array subscripts are checked per access, except in innermost integer
 *    for loops: an access whose subscript is the loop variable (plus or
 *    minus a literal) is checked once for the whole range before the
 *    loop, and the loop falls back to a copy with per-access checks when
 *    that check fails, so behaviour is the same either way.
 *  - Conditions narrow types where they hold: in `x and x * 2` or
 *    `if x ~= nil then ... end` a local that may be nil is a number.
 *  - In fast mode, values computed from f32 data are floats and the
 *    compiler may reassociate and contract (orion_cgen_mode_flags(1)).
 *
 * The subset: numbers, booleans and nil in locals; arithmetic, bitwise,
 * comparison and logical operators; math.* (but randomseed and type);
 * local, assignment, numeric for, while, repeat, if, break, goto, do,
 * return; dense arrays, slices and buffers of every element type, `#`;
 * acc:add; captured numbers.  Anything else (strings, tables, functions,
 * calls other than math.* and acc:add, generic for, varargs, captured
 * values that are not numbers, arrays, buffers or accumulators) is
 * refused with "LINE: what".
 */
#include "analysis/cgen.h"

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/parse.h"
#include "util/alloc.h"
#include "util/luaops.h"

/* ======================================================================
 * The prelude: the contract's structures and Lua's semantics, as C text
 * that every generated source starts with (system headers only).  The
 * chunk name goes between the two parts.
 * ====================================================================== */

static const char *const prelude_a[] = {
    "#include <math.h>",
    "#include <stdint.h>",
    "#include <stdio.h>",
    "#include <string.h>",
    "",
    "#define O_U __attribute__((unused))",
    "#define O_I static inline __attribute__((unused))",
    "",
    "/* The executor's contract (util/cbody.h, ABI 1), declared again here. */",
    "typedef union orion_cval {",
    "  int64_t i;",
    "  double d;",
    "} orion_cval;",
    "typedef struct orion_carray {",
    "  void *values;",
    "  const int64_t *keys;",
    "  int32_t type;",
    "  int32_t ndims;",
    "  int64_t nnz;",
    "  int64_t dims[8];",
    "  int64_t strides[8];",
    "} orion_carray;",
    "typedef struct orion_cbuffer {",
    "  void *h;",
    "  int32_t type;",
    "  int32_t ndims;",
    "  int32_t op;",
    "  int32_t pad;",
    "  int64_t dims[8];",
    "  int64_t strides[8];",
    "} orion_cbuffer;",
    "typedef struct orion_cacc {",
    "  int32_t op;",
    "  int32_t has;",
    "  int32_t isint;",
    "  int32_t pad;",
    "  int64_t i;",
    "  double d;",
    "} orion_cacc;",
    "typedef struct orion_cctx orion_cctx;",
    "struct orion_cctx {",
    "  int32_t abi;",
    "  int32_t executor;",
    "  orion_carray iter;",
    "  orion_carray *arrays;",
    "  orion_cbuffer *bufs;",
    "  orion_cacc *accs;",
    "  orion_cval *consts;",
    "  uint64_t rng[4];",
    "  orion_cval (*buf_get)(orion_cctx *c, void *h, int64_t key);",
    "  int (*buf_set)(orion_cctx *c, void *h, int64_t key, orion_cval v);",
    "  int (*elem_done)(orion_cctx *c);",
    "  void *ud;",
    "  int64_t cur;",
    "  char err[1024];",
    "};",
    "extern const int orion_cbody_abi;",
    "const int orion_cbody_abi = 1;",
    "int orion_cbody_run(orion_cctx *c, int64_t lo, int64_t hi);",
    "",
    "/* Lua 5.4 semantics (lvm.c, lmathlib.c, lua/accum.c). */",
    "#define O_NO(x) __builtin_expect(!!(x), 0)",
    "#define O_IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))",
    "#define O_ISUB(a, b) ((int64_t)((uint64_t)(a) - (uint64_t)(b)))",
    "#define O_IMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))",
    "#define O_INEG(a) ((int64_t)(0u - (uint64_t)(a)))",
    "#define O_MININT (-INT64_C(9223372036854775807) - 1)",
    "",
    "/* A value whose type is known only at run time: t is 0 nil, 1 false,",
    " * 2 true, 3 integer (i), 4 float (d). */",
    "typedef struct o_v {",
    "  int64_t i;",
    "  double d;",
    "  int t;",
    "} o_v;",
    "O_I o_v o_vi(int64_t i) {",
    "  o_v v;",
    "  v.t = 3;",
    "  v.i = i;",
    "  v.d = 0;",
    "  return v;",
    "}",
    "O_I o_v o_vf(double d) {",
    "  o_v v;",
    "  v.t = 4;",
    "  v.i = 0;",
    "  v.d = d;",
    "  return v;",
    "}",
    "O_I o_v o_vb(int b) {",
    "  o_v v;",
    "  v.t = b ? 2 : 1;",
    "  v.i = 0;",
    "  v.d = 0;",
    "  return v;",
    "}",
    "O_I o_v o_vnil(void) {",
    "  o_v v;",
    "  v.t = 0;",
    "  v.i = 0;",
    "  v.d = 0;",
    "  return v;",
    "}",
    "O_I double o_vn(o_v v) { return v.t == 3 ? (double)v.i : v.d; }",
    "",
    "/* Float to integer: exact (F2Ieq), floor and ceil (lvm.c). */",
    "O_I int o_fits(double f) { return f >= -0x1p63 && f < 0x1p63; }",
    "O_I int o_f2i(double d, int64_t *p) {",
    "  double f = floor(d);",
    "  if (d != f || !o_fits(f))",
    "    return 0;",
    "  *p = (int64_t)f;",
    "  return 1;",
    "}",
    "O_I int o_f2i_floor(double d, int64_t *p) {",
    "  double f = floor(d);",
    "  if (!o_fits(f))",
    "    return 0;",
    "  *p = (int64_t)f;",
    "  return 1;",
    "}",
    "O_I int o_f2i_ceil(double d, int64_t *p) {",
    "  double f = floor(d);",
    "  if (d != f)",
    "    f += 1;",
    "  if (!o_fits(f))",
    "    return 0;",
    "  *p = (int64_t)f;",
    "  return 1;",
    "}",
    "/* math.floor/ceil's result: an integer when the float fits. */",
    "O_I o_v o_numint(double d) {",
    "  return o_fits(d) ? o_vi((int64_t)d) : o_vf(d);",
    "}",
    "",
    "O_I int64_t o_idiv(int64_t m, int64_t n) {",
    "  int64_t q;",
    "  if ((uint64_t)n + 1u <= 1u)",
    "    return O_INEG(m);",
    "  q = m / n;",
    "  if ((m ^ n) < 0 && m % n != 0)",
    "    q -= 1;",
    "  return q;",
    "}",
    "O_I int64_t o_imod(int64_t m, int64_t n) {",
    "  int64_t r;",
    "  if ((uint64_t)n + 1u <= 1u)",
    "    return 0;",
    "  r = m % n;",
    "  if (r != 0 && (r ^ n) < 0)",
    "    r += n;",
    "  return r;",
    "}",
    "O_I double o_fmod(double a, double b) {",
    "  double m = fmod(a, b);",
    "  if ((m > 0) ? b < 0 : (m < 0 && b > 0))",
    "    m += b;",
    "  return m;",
    "}",
    "O_I float o_fmodf(float a, float b) {",
    "  float m = fmodf(a, b);",
    "  if ((m > 0) ? b < 0 : (m < 0 && b > 0))",
    "    m += b;",
    "  return m;",
    "}",
    "/* In exact mode the compiler must not fold a transcendental function of",
    " * a constant: it would round exactly where the C library, which the",
    " * interpreter calls, may not. */",
    "#if O_EXACT",
    "O_I double o_opq(double x) {",
    "  __asm__(\"\" : \"+m\"(x));",
    "  return x;",
    "}",
    "#else",
    "O_I double o_opq(double x) { return x; }",
    "#endif",
    "O_I double o_pow(double a, double b) {",
    "  return b == 2 ? a * a : pow(o_opq(a), b);",
    "}",
    "O_I double o_fidiv(double a, double b) { return floor(a / b); }",
    "O_I int64_t o_shl(int64_t x, int64_t y) {",
    "  if (y < 0) {",
    "    if (y <= -64)",
    "      return 0;",
    "    return (int64_t)((uint64_t)x >> (uint64_t)O_INEG(y));",
    "  }",
    "  if (y >= 64)",
    "    return 0;",
    "  return (int64_t)((uint64_t)x << y);",
    "}",
    "O_I int64_t o_shr(int64_t x, int64_t y) { return o_shl(x, O_INEG(y)); }",
    "",
    "/* Exact integer/float comparisons (LTintfloat etc. in lvm.c). */",
    "O_I int o_ifits(int64_t i) {",
    "  return (uint64_t)0x20000000000000 + (uint64_t)i <=",
    "         (uint64_t)0x40000000000000;",
    "}",
    "O_I int o_lt_if(int64_t i, double f) {",
    "  int64_t fi;",
    "  if (o_ifits(i))",
    "    return (double)i < f;",
    "  if (o_f2i_ceil(f, &fi))",
    "    return i < fi;",
    "  return f > 0;",
    "}",
    "O_I int o_le_if(int64_t i, double f) {",
    "  int64_t fi;",
    "  if (o_ifits(i))",
    "    return (double)i <= f;",
    "  if (o_f2i_floor(f, &fi))",
    "    return i <= fi;",
    "  return f > 0;",
    "}",
    "O_I int o_lt_fi(double f, int64_t i) {",
    "  int64_t fi;",
    "  if (o_ifits(i))",
    "    return f < (double)i;",
    "  if (o_f2i_floor(f, &fi))",
    "    return fi < i;",
    "  return f < 0;",
    "}",
    "O_I int o_le_fi(double f, int64_t i) {",
    "  int64_t fi;",
    "  if (o_ifits(i))",
    "    return f <= (double)i;",
    "  if (o_f2i_ceil(f, &fi))",
    "    return fi <= i;",
    "  return f < 0;",
    "}",
    "O_I int o_eq_if(int64_t i, double f) {",
    "  int64_t k;",
    "  return o_f2i(f, &k) && k == i;",
    "}",
    "O_I int o_vlt(o_v a, o_v b) {",
    "  if (a.t == 3)",
    "    return b.t == 3 ? a.i < b.i : o_lt_if(a.i, b.d);",
    "  return b.t == 4 ? a.d < b.d : o_lt_fi(a.d, b.i);",
    "}",
    "O_I int o_vle(o_v a, o_v b) {",
    "  if (a.t == 3)",
    "    return b.t == 3 ? a.i <= b.i : o_le_if(a.i, b.d);",
    "  return b.t == 4 ? a.d <= b.d : o_le_fi(a.d, b.i);",
    "}",
    "O_I int o_veq(o_v a, o_v b) {",
    "  if (a.t >= 3 && b.t >= 3) {",
    "    if (a.t == b.t)",
    "      return a.t == 3 ? a.i == b.i : a.d == b.d;",
    "    return a.t == 3 ? o_eq_if(a.i, b.d) : o_eq_if(b.i, a.d);",
    "  }",
    "  return a.t == b.t;",
    "}",
    "O_I o_v o_vadd(o_v a, o_v b) {",
    "  return a.t == 3 && b.t == 3 ? o_vi(O_IADD(a.i, b.i))",
    "                              : o_vf(o_vn(a) + o_vn(b));",
    "}",
    "O_I o_v o_vsub(o_v a, o_v b) {",
    "  return a.t == 3 && b.t == 3 ? o_vi(O_ISUB(a.i, b.i))",
    "                              : o_vf(o_vn(a) - o_vn(b));",
    "}",
    "O_I o_v o_vmul(o_v a, o_v b) {",
    "  return a.t == 3 && b.t == 3 ? o_vi(O_IMUL(a.i, b.i))",
    "                              : o_vf(o_vn(a) * o_vn(b));",
    "}",
    "O_I o_v o_vneg(o_v a) {",
    "  return a.t == 3 ? o_vi(O_INEG(a.i)) : o_vf(-a.d);",
    "}",
    "O_I o_v o_vabs(o_v a) {",
    "  return a.t == 3 ? o_vi(a.i < 0 ? O_INEG(a.i) : a.i) : o_vf(fabs(a.d));",
    "}",
    "/* for loops: an integer loop's float limit (forlimit in lvm.c); returns",
    " * 1 when the loop does not run. */",
    "O_I int o_forlimit(int64_t init, double lim, int64_t step, int64_t *p) {",
    "  if (!(step < 0 ? o_f2i_ceil(lim, p) : o_f2i_floor(lim, p))) {",
    "    if (0 < lim) {",
    "      if (step < 0)",
    "        return 1;",
    "      *p = INT64_MAX;",
    "    } else {",
    "      if (step > 0)",
    "        return 1;",
    "      *p = O_MININT;",
    "    }",
    "  }",
    "  return step > 0 ? init > *p : init < *p;",
    "}",
    "O_I uint64_t o_forcount(int64_t init, int64_t lim, int64_t step) {",
    "  if (step > 0) {",
    "    uint64_t n = (uint64_t)lim - (uint64_t)init;",
    "    return step != 1 ? n / (uint64_t)step : n;",
    "  }",
    "  return ((uint64_t)init - (uint64_t)lim) /",
    "         ((uint64_t)(-(step + 1)) + 1u);",
    "}",
    "",
    "/* Accumulators (lua/accum.c). */",
    "typedef struct o_acc {",
    "  int32_t op, has, isint;",
    "  int64_t i;",
    "  double d;",
    "} o_acc;",
    "O_I o_acc o_acc_load(const orion_cacc *p) {",
    "  o_acc a;",
    "  a.op = p->op;",
    "  a.has = p->has;",
    "  a.isint = p->isint;",
    "  a.i = p->i;",
    "  a.d = p->d;",
    "  return a;",
    "}",
    "O_I void o_acc_save(orion_cacc *p, const o_acc *a) {",
    "  p->has = a->has;",
    "  p->isint = a->isint;",
    "  p->i = a->i;",
    "  p->d = a->d;",
    "}",
    "O_I void o_acc_addf(o_acc *a, double x) {",
    "  double cur;",
    "  if (!a->has) {",
    "    a->has = 1;",
    "    a->isint = 0;",
    "    a->d = x;",
    "    return;",
    "  }",
    "  cur = a->isint ? (double)a->i : a->d;",
    "  a->isint = 0;",
    "  switch (a->op) {",
    "  case 0:",
    "    a->d = cur + x;",
    "    break;",
    "  case 1:",
    "    a->d = x < cur || cur != cur ? x : cur;",
    "    break;",
    "  case 2:",
    "    a->d = x > cur || cur != cur ? x : cur;",
    "    break;",
    "  default:",
    "    break;",
    "  }",
    "}",
    "O_I void o_acc_addi(o_acc *a, int64_t x) {",
    "  if (!a->has) {",
    "    a->has = 1;",
    "    a->isint = 1;",
    "    a->i = x;",
    "  } else if (a->isint) {",
    "    switch (a->op) {",
    "    case 0:",
    "      a->i = O_IADD(a->i, x);",
    "      break;",
    "    case 1:",
    "      if (x < a->i)",
    "        a->i = x;",
    "      break;",
    "    case 2:",
    "      if (x > a->i)",
    "        a->i = x;",
    "      break;",
    "    default:",
    "      break;",
    "    }",
    "  } else {",
    "    o_acc_addf(a, (double)x);",
    "  }",
    "}",
    "",
    "/* math.random: xoshiro256** as lmathlib.c. */",
    "O_I uint64_t o_rotl(uint64_t x, int n) {",
    "  return (x << n) | (x >> (64 - n));",
    "}",
    "O_I uint64_t o_rnext(uint64_t *s) {",
    "  uint64_t s0 = s[0], s1 = s[1], s2 = s[2] ^ s0, s3 = s[3] ^ s1;",
    "  uint64_t res = o_rotl(s1 * 5, 7) * 9;",
    "  s[0] = s0 ^ s3;",
    "  s[1] = s1 ^ s2;",
    "  s[2] = s2 ^ (s1 << 17);",
    "  s[3] = o_rotl(s3, 45);",
    "  return res;",
    "}",
    "O_I double o_rfloat(uint64_t r) {",
    "  return (double)(r >> 11) * 0x1.0p-53;",
    "}",
    "O_I int64_t o_rproject(uint64_t ran, int64_t low, int64_t up,",
    "                       uint64_t *s) {",
    "  uint64_t n = (uint64_t)up - (uint64_t)low, lim = n;",
    "  if ((n & (n + 1)) == 0) {",
    "    ran &= n;",
    "  } else {",
    "    lim |= lim >> 1;",
    "    lim |= lim >> 2;",
    "    lim |= lim >> 4;",
    "    lim |= lim >> 8;",
    "    lim |= lim >> 16;",
    "    lim |= lim >> 32;",
    "    while ((ran &= lim) > n)",
    "      ran = o_rnext(s);",
    "  }",
    "  return (int64_t)(ran + (uint64_t)low);",
    "}",
    "",
    "/* Errors: the interpreter's first line, then a one-frame traceback.  A",
    " * negative line raises without a position (as the executor's own",
    " * checks of a returned value do). */",
    NULL};

static const char *const prelude_b[] = {
    "static __attribute__((cold, noinline)) O_U int",
    "o_err(orion_cctx *c, int line, const char *msg) {",
    "  if (line > 0)",
    "    snprintf(c->err, sizeof c->err,",
    "             \"%s:%d: %s\\nstack traceback:\\n\\t[compiled] %s:%d\", "
    "o_chunk,",
    "             line, msg, o_chunk, line);",
    "  else",
    "    snprintf(c->err, sizeof c->err,",
    "             \"%s\\nstack traceback:\\n\\t[compiled] %s:%d\", msg, "
    "o_chunk,",
    "             -line);",
    "  return 1;",
    "}",
    "static O_U void o_numstr(char *b, size_t n, double d) {",
    "  int len = snprintf(b, n, \"%.14g\", d);",
    "  if (len > 0 && (size_t)len + 3 <= n &&",
    "      b[strspn(b, \"-0123456789\")] == 0) {",
    "    b[len] = '.';",
    "    b[len + 1] = '0';",
    "    b[len + 2] = 0;",
    "  }",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_index(orion_cctx *c, int line, const char *what, int64_t k,",
    "            int64_t dim, int d) {",
    "  char m[512];",
    "  snprintf(m, sizeof m,",
    "           \"%s: index %lld out of range 1..%lld in dimension %d\", what,",
    "           (long long)k, (long long)dim, d);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_sub(orion_cctx *c, int line, const char *what, double x) {",
    "  char m[512], n[64];",
    "  o_numstr(n, sizeof n, x);",
    "  snprintf(m, sizeof m, \"%s: subscript %s is not an integer\", what, n);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_notint(orion_cctx *c, int line, double x, const char *tail) {",
    "  char m[512], n[64];",
    "  o_numstr(n, sizeof n, x);",
    "  snprintf(m, sizeof m, \"cannot store %s in %s: not an integer\", n,",
    "           tail);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_range(orion_cctx *c, int line, int64_t v, const char *what) {",
    "  char m[512];",
    "  snprintf(m, sizeof m, \"cannot store %lld in i32 %s: out of range\",",
    "           (long long)v, what);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_type(orion_cctx *c, int line, int t, const char *tail) {",
    "  char m[512];",
    "  snprintf(m, sizeof m, \"cannot store a %s in %s\",",
    "           t == 0 ? \"nil\" : \"boolean\", tail);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_acc(orion_cctx *c, int line, int t) {",
    "  char m[512];",
    "  snprintf(m, sizeof m, \"accumulator add: expected a number, got a %s\",",
    "           t < 0    ? \"no value\"",
    "           : t == 0 ? \"nil\"",
    "                    : \"boolean\");",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_noint(orion_cctx *c, int line, const char *vinfo) {",
    "  char m[512];",
    "  snprintf(m, sizeof m, \"number%s has no integer representation\",",
    "           vinfo);",
    "  return o_err(c, line, m);",
    "}",
    "static __attribute__((cold, noinline)) O_U int",
    "o_err_arg(orion_cctx *c, int line, int arg, const char *fn,",
    "          const char *msg) {",
    "  char m[512];",
    "  snprintf(m, sizeof m, \"bad argument #%d to '%s' (%s)\", arg, fn, msg);",
    "  return o_err(c, line, m);",
    "}",
    NULL};

/* ======================================================================
 * Types of values.
 * ====================================================================== */

/* The values a Lua value may be: a mask of these. */
enum { M_NIL = 1, M_FALSE = 2, M_TRUE = 4, M_INT = 8, M_FLT = 16 };
#define M_BOOL (M_FALSE | M_TRUE)
#define M_NUM (M_INT | M_FLT)
#define M_TRUTHY (M_TRUE | M_NUM)
#define M_FALSY (M_NIL | M_FALSE)

/* Kinds: nothing known yet (unreached), a value (mask), an array or
 * buffer or a slice of one (slot, depth), an accumulator (slot), the math
 * table. */
enum { T_NONE = 0, T_VAL, T_REF, T_ACC, T_MATH };

/* Precision of a float, for fast mode: a constant or a value computed
 * in double that may be narrowed, one derived from f32 data, one derived
 * from f64 data. */
enum { P_WEAK = 0, P_F32, P_F64 };

/* Element types (orion_type). */
enum { ET_F32 = 0, ET_F64, ET_I32, ET_I64 };

typedef struct ty {
  int k;     /* T_* */
  int m;     /* T_VAL: M_* */
  int prec;  /* T_VAL with M_FLT: P_* */
  int slot;  /* T_REF, T_ACC: index into gen.slots */
  int depth; /* T_REF: dimensions already subscripted */
} ty;

/* A Lua compile-time constant (a numeral, nil, true or false, or a
 * folded expression of them). */
typedef struct lval {
  int m; /* one of M_* */
  int64_t i;
  double d;
} lval;

/* What Lua's error messages call an operand (ldebug.c varinfo). */
enum { VI_NONE = 0, VI_LOCAL, VI_UPVAL, VI_GLOBAL, VI_FIELD };

/* An evaluated expression: its type and a C expression for its value (a
 * pointer or offset for T_REF; nothing for T_ACC and T_MATH). */
typedef struct cv {
  ty t;
  const char *s;
  int simple; /* s may be evaluated twice (a name or a literal) */
  int isk;    /* a Lua constant, value k */
  lval k;
  int vi; /* VI_* and name, for "number (local 'x') has no ..." */
  const char *vn;
} cv;

/* A bound name of the body that the generated code reads from ctx. */
typedef struct slot {
  orion_cslot_kind kind;
  int idx;          /* number within its kind */
  const char *name; /* the name in the body */
  int64_t id;
  int ndims, etype; /* arrays and buffers */
  int isint;        /* constants */
  int64_t ival;
  double fval;
  char pfx[24]; /* C prefix: A0, B0, C0, K0 */
} slot;

/* A free name of the body, resolved once. */
typedef struct fname {
  const char *name;
  orion_binding b;
  int slot;  /* -1 until a slot is needed */
  int scope; /* SC_*: an upvalue or a global of the chunk */
} fname;

enum { SC_UNKNOWN = 0, SC_UPVAL, SC_GLOBAL };

/* A local of the body (stable across walks: keyed by its declaration). */
typedef struct var {
  const ast_node *decl;
  const char *name;
  const char *cname;
  ty t;
  int noinit; /* declared without a value (`local x`) */
  int da;     /* definitely assigned at the current point of the walk */
  int isk;    /* a <const> local with a constant value */
  lval k;
} var;

typedef struct scope_ent {
  const char *name;
  var *v;
} scope_ent;

/* A Lua block being walked: for goto, the statements whose labels are
 * visible, and the suffix its labels get in C (a loop emitted twice
 * names the labels of each copy apart). */
typedef struct blkframe {
  const ast_list *stmts;
  const char *suffix;
  struct blkframe *up;
} blkframe;

/* A snapshot of definite assignment. */
typedef struct dastate {
  unsigned char *v;
  int n;
  int dead;
} dastate;

typedef struct arena_blk {
  struct arena_blk *next;
  size_t used, cap;
  double data[]; /* aligned enough for anything stored here */
} arena_blk;

/* Bounds checks hoisted out of a loop: subscript `var + off` against
 * dimension `dim`. */
typedef struct hoistcond {
  const char *dim;
  int64_t off;
} hoistcond;

/* A local's type where a condition on it holds. */
typedef struct narrowing {
  var *v;
  ty t;
} narrowing;

typedef struct gen {
  const orion_cgen_in *in;
  orion_cgen_out *out;
  jmp_buf jb;
  int rc;
  arena_blk *arena;

  orion_buf *o; /* where code goes */
  int ind;
  int emit; /* 0 while inferring types */
  int fast;
  int tmp;

  fname *fn;
  int nfn, capfn;
  slot *slots;
  int nslots, capslots;
  int nkind[4];
  var **vars;
  int nvars, capvars;
  scope_ent *sc;
  int nsc, capsc;
  blkframe *blk;
  const ast_node **labels;
  int nlabels, caplabels;
  int changed;
  int dead; /* the current point is unreachable */

  int pctrack;             /* keep o_pc current */
  int userand;             /* the body calls math.random */
  int line0;               /* the line the body is defined on */
  orion_buf body, scratch; /* the function's body: the last walk, the
                              others */

  /* Hoisting of bounds checks in the loop being emitted. */
  const char *hk;          /* the loop variable's name, or NULL */
  int hfast;               /* emitting the copy without those checks */
  const ast_node **hnodes; /* candidate subscripts */
  int nhnodes;
  hoistcond *hconds;
  int nhconds, caphconds;
  const char *suffix;
  orion_buf **bufs; /* temporary buffers, freed with the generator */
  int nbufs, capbufs;
  /* Locals whose type a condition narrows where it holds (`x and x * 2`,
   * `if x ~= nil then ... end`). */
  narrowing *nar;
  int nnar, capnar;
  /* The locals of the chunk visible where the body is defined (its
   * upvalues), when in->chunk is given. */
  const char **up;
  int nup, capup, haveup;
} gen;

/* ======================================================================
 * Memory, strings, refusal.
 * ====================================================================== */

static void oom(gen *g) __attribute__((noreturn));
static void oom(gen *g) {
  g->rc = ORION_ENOMEM;
  snprintf(g->out->why, sizeof g->out->why, "out of memory");
  longjmp(g->jb, 1);
}

static void *amalloc(gen *g, size_t n) {
  arena_blk *b = g->arena;
  n = (n + 7) & ~(size_t)7;
  if (b == NULL || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    b = orion_malloc(sizeof *b + cap);
    if (b == NULL)
      oom(g);
    b->next = g->arena;
    b->used = 0;
    b->cap = cap;
    g->arena = b;
  }
  b->used += n;
  return (char *)b->data + b->used - n;
}

static char *S(gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static char *S(gen *g, const char *fmt, ...) {
  va_list ap;
  char small[256], *s;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom(g);
  s = amalloc(g, (size_t)n + 1);
  if ((size_t)n < sizeof small) {
    memcpy(s, small, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return s;
}

static void grow(gen *g, void **v, int *cap, int n, size_t elem) {
  void *p;
  int c;
  if (n < *cap)
    return;
  c = *cap ? 2 * *cap : 16;
  p = orion_realloc(*v, elem * (size_t)c);
  if (p == NULL)
    oom(g);
  *v = p;
  *cap = c;
}

/* A temporary output buffer, freed with the generator even when a
 * refusal unwinds the walk. */
static orion_buf *tmpbuf(gen *g) {
  orion_buf *b = amalloc(g, sizeof *b);
  orion_buf_init(b);
  grow(g, (void **)&g->bufs, &g->capbufs, g->nbufs, sizeof *g->bufs);
  g->bufs[g->nbufs++] = b;
  return b;
}

/* Refuses the body: out->why = "LINE: what". */
static void refuse(gen *g, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static void refuse(gen *g, int line, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(g->out->why, sizeof g->out->why, "%d: %s", line, what);
  g->rc = ORION_EUNSUPPORTED;
  longjmp(g->jb, 1);
}

/* A C string literal for s (any bytes). */
static const char *cstr(gen *g, const char *s) {
  size_t n = strlen(s), i, j = 0;
  char *r = amalloc(g, 4 * n + 3);
  r[j++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      r[j++] = '\\';
      r[j++] = (char)ch;
    } else if (ch < 32 || ch >= 127 || ch == '?') {
      /* Octal, always three digits (no trigraphs, no merging). */
      r[j++] = '\\';
      r[j++] = (char)('0' + (ch >> 6));
      r[j++] = (char)('0' + ((ch >> 3) & 7));
      r[j++] = (char)('0' + (ch & 7));
    } else {
      r[j++] = (char)ch;
    }
  }
  r[j++] = '"';
  r[j] = 0;
  return r;
}

/* The AST printed as Lua (for messages). */
static const char *lua_text(gen *g, const ast_node *n) {
  orion_buf b;
  char *s;
  orion_buf_init(&b);
  orion_ast_print(n, &b);
  if (b.oom) {
    orion_buf_free(&b);
    oom(g);
  }
  s = amalloc(g, b.len + 1);
  memcpy(s, b.data, b.len);
  s[b.len] = 0;
  orion_buf_free(&b);
  if (strlen(s) > 60)
    strcpy(s + 57, "...");
  return s;
}

/* ======================================================================
 * Output.
 * ====================================================================== */

static void put(gen *g, const char *s) { orion_buf_append(g->o, s, strlen(s)); }

/* Emits one line of code at the current indentation. */
static void E(gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void E(gen *g, const char *fmt, ...) {
  va_list ap;
  char small[256], *s = small;
  int n, i;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom(g);
  if ((size_t)n >= sizeof small) {
    s = amalloc(g, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  for (i = 0; i < g->ind; i++)
    orion_buf_append(g->o, "  ", 2);
  orion_buf_append(g->o, s, (size_t)n);
  orion_buf_append(g->o, "\n", 1);
}

static void open_(gen *g, const char *head) {
  E(g, "%s{", head);
  g->ind++;
}

static void close_(gen *g) {
  g->ind--;
  E(g, "}");
}

/* Emits a failure: the error call (which returns 1) and the exit. */
static void fail(gen *g, const char *cond, const char *call) {
  if (cond != NULL)
    E(g, "if (O_NO(%s)) { o_rc = %s; goto o_out; }", cond, call);
  else
    E(g, "{ o_rc = %s; goto o_out; }", call);
}

static const char *newtmp(gen *g) { return S(g, "t%d", ++g->tmp); }

/* "(c)", or c itself when it is already in one pair of parentheses (an
 * `if ((a == b))` draws a warning from clang). */
static const char *cond_of(gen *g, const char *c) {
  size_t n = strlen(c), i;
  int depth = 0;
  if (n >= 2 && c[0] == '(' && c[n - 1] == ')') {
    for (i = 0; i < n; i++) {
      depth += c[i] == '(' ? 1 : c[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < n)
        break;
    }
    if (i == n)
      return c;
  }
  return S(g, "(%s)", c);
}

/* Brings o_pc to line where the interpreter saves its pc. */
static void savepc(gen *g, int line) {
  if (g->pctrack)
    E(g, "o_pc = %d;", line);
}

/* The line integer `//` and `%` by zero report. */
static const char *pcline(gen *g) {
  return g->pctrack ? "o_pc" : S(g, "%d", g->line0);
}

/* ======================================================================
 * Types.
 * ====================================================================== */

static ty ty_val(int m, int prec) {
  ty t;
  memset(&t, 0, sizeof t);
  t.k = T_VAL;
  t.m = m;
  t.prec = (m & M_FLT) ? prec : P_WEAK;
  return t;
}

static int fastf(const gen *g, ty t) {
  return g->fast && t.k == T_VAL && t.m == M_FLT && t.prec == P_F32;
}

static const char *etype_c(int et) {
  static const char *const n[] = {"float", "double", "int32_t", "int64_t"};
  return n[et & 3];
}

static const char *etype_name(int et) {
  static const char *const n[] = {"f32", "f64", "i32", "i64"};
  return n[et & 3];
}

/* The C type holding a value of type t, ready to precede a name ("int64_t ",
 * "float *"). */
static const char *ctype(gen *g, ty t) {
  if (t.k == T_REF)
    return g->slots[t.slot].kind == ORION_CSLOT_BUFFER
               ? "int64_t "
               : S(g, "%s *", etype_c(g->slots[t.slot].etype));
  if (t.k != T_VAL)
    return "int ";
  if (t.m == M_INT)
    return "int64_t ";
  if (t.m == M_FLT)
    return fastf(g, t) ? "float " : "double ";
  if ((t.m & ~M_BOOL) == 0 || t.m == M_NIL)
    return "int ";
  return "o_v ";
}

/* Dynamic (tagged) representation? */
static int isdyn(ty t) {
  return t.k == T_VAL && t.m != M_INT && t.m != M_FLT && t.m != M_NIL &&
         (t.m & ~M_BOOL) != 0;
}

/* How a type reads in messages. */
static const char *ty_text(gen *g, ty t) {
  if (t.k == T_REF) {
    const slot *s = &g->slots[t.slot];
    const char *what = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    return t.depth == 0 ? S(g, "the %s '%s'", what, s->name)
                        : S(g, "a slice of the %s '%s'", what, s->name);
  }
  if (t.k == T_ACC)
    return "an accumulator";
  if (t.k == T_MATH)
    return "the math table";
  if (t.k != T_VAL)
    return "an unknown value";
  switch (t.m) {
  case M_INT:
    return "an integer";
  case M_FLT:
    return "a float";
  case M_NUM:
    return "a number";
  case M_NIL:
    return "nil";
  default:
    break;
  }
  if (!(t.m & M_NUM))
    return (t.m & M_NIL) ? "a value that may be nil or a boolean" : "a boolean";
  if (t.m & M_NIL)
    return "a value that may be nil";
  return "a value that may be a boolean";
}

/* Joins src into *dst; returns 1 when *dst changed.  Values of different
 * kinds cannot share a local. */
static int ty_join(gen *g, ty *dst, ty src, int line, const char *name) {
  ty old = *dst;
  if (src.k == T_NONE)
    return 0;
  if (dst->k == T_NONE) {
    *dst = src;
    if (src.k == T_VAL)
      *dst = ty_val(src.m, src.prec);
    return 1;
  }
  if (dst->k == T_VAL && src.k == T_VAL) {
    int prec = dst->prec;
    if ((src.m & M_FLT) && src.prec > prec)
      prec = src.prec;
    if (!(dst->m & M_FLT))
      prec = src.prec;
    *dst = ty_val(dst->m | src.m, prec);
  } else if (dst->k != src.k ||
             (dst->k == T_REF &&
              (dst->slot != src.slot || dst->depth != src.depth)) ||
             (dst->k == T_ACC && dst->slot != src.slot)) {
    refuse(g, line, "the local '%s' holds %s and %s", name, ty_text(g, *dst),
           ty_text(g, src));
  }
  return memcmp(&old, dst, sizeof old) != 0;
}

static void var_join(gen *g, var *v, ty t, int line) {
  if (ty_join(g, &v->t, t, line, v->name))
    g->changed = 1;
}

/* ======================================================================
 * Values.
 * ====================================================================== */

static cv cv_none(void) {
  cv r;
  memset(&r, 0, sizeof r);
  r.s = "0";
  r.simple = 1;
  return r;
}

static cv cv_of(ty t, const char *s, int simple) {
  cv r = cv_none();
  r.t = t;
  r.s = s;
  r.simple = simple;
  return r;
}

static const char *int_lit(gen *g, int64_t i) {
  if (i == INT64_MIN)
    return "O_MININT";
  return S(g, "INT64_C(%" PRId64 ")", i);
}

static const char *flt_lit(gen *g, double d) {
  if (isinf(d))
    return d > 0 ? "(__builtin_inf())" : "(-__builtin_inf())";
  if (isnan(d))
    return "(__builtin_nan(\"\"))";
  return S(g, "%a", d);
}

/* A constant as a value. */
static cv cv_k(gen *g, lval k) {
  cv r;
  if (k.m == M_INT)
    r = cv_of(ty_val(M_INT, P_WEAK), int_lit(g, k.i), 1);
  else if (k.m == M_FLT)
    r = cv_of(ty_val(M_FLT, P_WEAK), flt_lit(g, k.d), 1);
  else if (k.m == M_NIL)
    r = cv_of(ty_val(M_NIL, P_WEAK), "0", 1);
  else
    r = cv_of(ty_val(k.m, P_WEAK), k.m == M_TRUE ? "1" : "0", 1);
  r.isk = 1;
  r.k = k;
  return r;
}

static cv cv_nil(gen *g) {
  lval k;
  memset(&k, 0, sizeof k);
  k.m = M_NIL;
  return cv_k(g, k);
}

/* Declares a temporary holding v's value (so it can be read twice or
 * keeps its value across later stores). */
static cv mat(gen *g, cv v) {
  const char *t;
  if (v.simple || v.t.k == T_NONE || v.t.k == T_ACC || v.t.k == T_MATH)
    return v;
  t = newtmp(g);
  E(g, "O_U %sconst %s = %s;", ctype(g, v.t), t, v.s);
  v.s = t;
  v.simple = 1;
  return v;
}

/* A temporary with v's current value even when v names a local (which a
 * later store of the same statement may change). */
static cv copy(gen *g, cv v) {
  if (!v.isk)
    v.simple = 0;
  return mat(g, v);
}

/* v's value as a double. */
static const char *as_d(gen *g, cv v) {
  if (v.t.m == M_INT)
    return S(g, "((double)%s)", v.s);
  if (v.t.m == M_FLT)
    return fastf(g, v.t) ? S(g, "((double)%s)", v.s) : v.s;
  return S(g, "o_vn(%s)", v.s);
}

/* v's (numeric) value as a float of precision prec: a float in fast mode
 * for f32 data, else a double. */
static const char *as_f(gen *g, cv v, int prec) {
  int tofloat = g->fast && prec == P_F32;
  if (v.t.m == M_INT)
    return S(g, "((%s)%s)", tofloat ? "float" : "double", v.s);
  if (v.t.m == M_FLT) {
    if (fastf(g, v.t) == tofloat)
      return v.s;
    return S(g, "((%s)%s)", tofloat ? "float" : "double", v.s);
  }
  return tofloat ? S(g, "((float)o_vn(%s))", v.s) : S(g, "o_vn(%s)", v.s);
}

/* v's value as an o_v. */
static const char *as_v(gen *g, cv v) {
  if (isdyn(v.t))
    return v.s;
  if (v.t.m == M_INT)
    return S(g, "o_vi(%s)", v.s);
  if (v.t.m == M_FLT)
    return S(g, "o_vf(%s)", fastf(g, v.t) ? S(g, "(double)%s", v.s) : v.s);
  if (v.t.m == M_NIL)
    return "o_vnil()";
  return S(g, "o_vb(%s)", v.s);
}

/* Lua truthiness of v as a C int. */
static const char *truth(gen *g, cv v) {
  if (v.t.k != T_VAL)
    return "1";
  if (!(v.t.m & M_FALSY))
    return "1";
  if (!(v.t.m & M_TRUTHY))
    return "0";
  if (isdyn(v.t))
    return S(g, "(%s.t >= 2)", v.s);
  return v.s; /* a boolean */
}

/* v's value in the representation of type t.  Either t's values include
 * v's, or the caller knows at this point that v holds one of t's. */
static const char *conv(gen *g, cv v, ty t) {
  if (v.t.k == T_NONE)
    return "0";
  if (t.k != T_VAL)
    return v.s;
  if (isdyn(t))
    return as_v(g, v);
  if (t.m == M_INT)
    return isdyn(v.t) ? S(g, "%s.i", v.s) : v.s;
  if (t.m == M_FLT) {
    if (isdyn(v.t))
      return fastf(g, t) ? S(g, "((float)%s.d)", v.s) : S(g, "%s.d", v.s);
    if (v.t.m == M_FLT)
      return as_f(g, v, t.prec);
    return "0";
  }
  if (t.m == M_NIL)
    return "0";
  /* A boolean. */
  if (isdyn(v.t))
    return S(g, "(%s.t == 2)", v.s);
  if (v.t.m & M_BOOL)
    return v.s;
  return "0";
}

/* ======================================================================
 * Names: slots for what the body is bound to, locals and scopes.
 * ====================================================================== */

static fname *free_name(gen *g, const char *name) {
  fname *f;
  int i;
  for (i = 0; i < g->nfn; i++)
    if (strcmp(g->fn[i].name, name) == 0)
      return &g->fn[i];
  grow(g, (void **)&g->fn, &g->capfn, g->nfn, sizeof *g->fn);
  f = &g->fn[g->nfn++];
  memset(f, 0, sizeof *f);
  f->name = S(g, "%s", name);
  f->slot = -1;
  if (g->in->resolve == NULL || g->in->resolve(g->in->ud, name, &f->b) != 0)
    f->b.kind = ORION_BIND_NONE;
  f->b.reach = NULL; /* only valid during the call */
  f->b.nreach = 0;
  f->scope = SC_UNKNOWN;
  if (g->haveup) {
    f->scope = SC_GLOBAL;
    for (i = 0; i < g->nup; i++)
      if (strcmp(g->up[i], name) == 0)
        f->scope = SC_UPVAL;
  }
  return f;
}

/* ---- upvalues: the locals visible where the body is defined ------------ */

static void up_push(gen *g, const char *name) {
  grow(g, (void **)&g->up, &g->capup, g->nup, sizeof *g->up);
  g->up[g->nup++] = name;
}

static int up_walk(gen *g, const ast_node *n, const ast_node *target);

static int up_list(gen *g, const ast_list *l, const ast_node *target) {
  int i;
  for (i = 0; i < l->n; i++)
    if (up_walk(g, l->v[i], target))
      return 1;
  return 0;
}

/* The statements of a block: each one's declarations are visible to the
 * ones after it. */
static int up_block(gen *g, const ast_list *l, const ast_node *target) {
  int i, j, mark = g->nup;
  for (i = 0; i < l->n; i++) {
    const ast_node *st = l->v[i];
    if (st->kind == AST_LOCALFUNC) {
      up_push(g, st->a->str);
      if (up_walk(g, st->b, target))
        return 1;
      continue;
    }
    if (up_walk(g, st, target))
      return 1;
    if (st->kind == AST_LOCAL)
      for (j = 0; j < st->list.n; j++)
        up_push(g, st->list.v[j]->str);
  }
  g->nup = mark;
  return 0;
}

/* Finds target below n; on success g->up holds the locals in scope. */
static int up_walk(gen *g, const ast_node *n, const ast_node *target) {
  int mark = g->nup, i;
  if (n == NULL)
    return 0;
  if (n == target)
    return 1;
  switch (n->kind) {
  case AST_BLOCK:
    return up_block(g, &n->list, target);
  case AST_FUNC:
    for (i = 0; i < n->params.n; i++)
      up_push(g, n->params.v[i]->str);
    if (up_walk(g, n->a, target))
      return 1;
    break;
  case AST_LOCAL:
    return up_list(g, &n->list2, target);
  case AST_NUMFOR:
    if (up_walk(g, n->a, target) || up_walk(g, n->b, target) ||
        up_walk(g, n->c, target))
      return 1;
    up_push(g, n->list.v[0]->str);
    if (up_walk(g, n->d, target))
      return 1;
    break;
  case AST_GENFOR:
    if (up_list(g, &n->list2, target))
      return 1;
    for (i = 0; i < n->list.n; i++)
      up_push(g, n->list.v[i]->str);
    if (up_walk(g, n->a, target))
      return 1;
    break;
  case AST_REPEAT: /* the condition sees the body's locals */
    if (n->a != NULL) {
      const ast_list *l = &n->a->list;
      for (i = 0; i < l->n; i++) {
        if (up_walk(g, l->v[i], target))
          return 1;
        if (l->v[i]->kind == AST_LOCAL) {
          int j;
          for (j = 0; j < l->v[i]->list.n; j++)
            up_push(g, l->v[i]->list.v[j]->str);
        } else if (l->v[i]->kind == AST_LOCALFUNC) {
          up_push(g, l->v[i]->a->str);
        }
      }
    }
    if (up_walk(g, n->b, target))
      return 1;
    break;
  default:
    if (up_walk(g, n->a, target) || up_walk(g, n->b, target) ||
        up_walk(g, n->c, target) || up_walk(g, n->d, target) ||
        up_list(g, &n->list, target) || up_list(g, &n->list2, target))
      return 1;
    break;
  }
  g->nup = mark;
  return 0;
}

static int new_slot(gen *g, fname *f, orion_cslot_kind kind) {
  static const char pfx[] = "ABCK";
  slot *s;
  if (f->slot >= 0)
    return f->slot;
  grow(g, (void **)&g->slots, &g->capslots, g->nslots, sizeof *g->slots);
  s = &g->slots[g->nslots];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->idx = g->nkind[kind]++;
  s->name = f->name;
  snprintf(s->pfx, sizeof s->pfx, "%c%d", pfx[kind], s->idx);
  switch (kind) {
  case ORION_CSLOT_ARRAY:
    s->id = f->b.arr.id;
    s->ndims = f->b.arr.ndims;
    s->etype = f->b.arr.type;
    break;
  case ORION_CSLOT_BUFFER:
    s->id = f->b.id;
    s->ndims = f->b.arr.ndims;
    s->etype = f->b.arr.type;
    break;
  case ORION_CSLOT_ACC:
    s->id = f->b.id;
    break;
  case ORION_CSLOT_CONST:
    s->isint = f->b.is_int;
    s->ival = f->b.ival;
    s->fval = f->b.fval;
    break;
  }
  f->slot = g->nslots++;
  return f->slot;
}

static var *lookup(gen *g, const char *name) {
  int i;
  for (i = g->nsc - 1; i >= 0; i--)
    if (strcmp(g->sc[i].name, name) == 0)
      return g->sc[i].v;
  return NULL;
}

/* The variable declared by node decl (the same object on every walk). */
static var *get_var(gen *g, const ast_node *decl) {
  var *v;
  int i;
  for (i = g->nvars - 1; i >= 0; i--)
    if (g->vars[i]->decl == decl)
      return g->vars[i];
  grow(g, (void **)&g->vars, &g->capvars, g->nvars, sizeof *g->vars);
  v = amalloc(g, sizeof *v);
  memset(v, 0, sizeof *v);
  v->decl = decl;
  v->name = decl->str;
  v->cname = S(g, "v%d_%s", g->nvars + 1, decl->str);
  g->vars[g->nvars++] = v;
  return v;
}

static void push_var(gen *g, var *v) {
  grow(g, (void **)&g->sc, &g->capsc, g->nsc, sizeof *g->sc);
  g->sc[g->nsc].name = v->name;
  g->sc[g->nsc].v = v;
  g->nsc++;
}

/* ---- definite assignment ---------------------------------------------- */

static dastate da_save(gen *g) {
  dastate s;
  int i;
  s.n = g->nvars;
  s.dead = g->dead;
  s.v = amalloc(g, (size_t)s.n + 1);
  for (i = 0; i < s.n; i++)
    s.v[i] = (unsigned char)g->vars[i]->da;
  return s;
}

static void da_restore(gen *g, dastate s) {
  int i;
  g->dead = s.dead;
  for (i = 0; i < g->nvars; i++)
    g->vars[i]->da = i < s.n ? s.v[i] : 0;
}

/* acc = acc meet (the current state). */
static void da_meet(gen *g, dastate *acc) {
  int i;
  if (g->dead)
    return;
  if (acc->dead) {
    *acc = da_save(g);
    return;
  }
  for (i = 0; i < acc->n && i < g->nvars; i++)
    acc->v[i] = (unsigned char)(acc->v[i] & g->vars[i]->da);
}

/* A fresh state where nothing is reachable yet (for meets). */
static dastate da_dead(void) {
  dastate s;
  memset(&s, 0, sizeof s);
  s.dead = 1;
  return s;
}

/* ======================================================================
 * Expressions: constants, operators.
 * ====================================================================== */

static cv ex(gen *g, const ast_node *e);
static int exn(gen *g, const ast_node *e, cv *out, int want);

static int is_num(cv v) {
  return v.t.k == T_VAL && v.t.m != 0 && (v.t.m & ~M_NUM) == 0;
}

static int fprec(cv v) { return v.t.m == M_FLT ? v.t.prec : P_WEAK; }

static int maxi(int a, int b) { return a > b ? a : b; }

/* " (local 'x')" as Lua's varinfo would say it, or "". */
static const char *vinfo(gen *g, cv v) {
  static const char *const kind[] = {"", "local", "upvalue", "global", "field"};
  if (v.vi == VI_NONE)
    return "";
  return S(g, " (%s '%s')", kind[v.vi], v.vn);
}

/* Refuses v unless it is surely a number (T_NONE passes: unreached). */
static void numeric(gen *g, cv v, int line, const char *what) {
  if (v.t.k == T_NONE || is_num(v))
    return;
  refuse(g, line, "%s %s%s", what, ty_text(g, v.t), vinfo(g, v));
}

static int k_toint(lval v, int64_t *i) {
  if (v.m == M_INT) {
    *i = v.i;
    return 1;
  }
  return v.m == M_FLT && orion_lua_f2i(v.d, i) == ORION_LUAOP_OK;
}

static double k_tonum(lval v) { return v.m == M_INT ? (double)v.i : v.d; }

/* Lua's constant folding (lcode.c): 1 and *r when `a op b` folds. */
static int fold(int op, lval a, lval b, lval *r) {
  int64_t x, y;
  double p, q, d;
  if ((a.m != M_INT && a.m != M_FLT) || (b.m != M_INT && b.m != M_FLT))
    return 0;
  memset(r, 0, sizeof *r);
  switch (op) {
  case OP_BAND:
  case OP_BOR:
  case OP_BXOR:
  case OP_SHL:
  case OP_SHR:
  case OP_BNOT:
    if (!k_toint(a, &x) || !k_toint(b, &y))
      return 0;
    r->m = M_INT;
    r->i = op == OP_BAND   ? (x & y)
           : op == OP_BOR  ? (x | y)
           : op == OP_BXOR ? (x ^ y)
           : op == OP_SHL  ? orion_lua_shl(x, y)
           : op == OP_SHR  ? orion_lua_shr(x, y)
                           : ~x;
    return 1;
  case OP_DIV:
  case OP_IDIV:
  case OP_MOD:
    if (k_tonum(b) == 0)
      return 0;
    break;
  default:
    break;
  }
  if (op != OP_DIV && op != OP_POW && a.m == M_INT && b.m == M_INT) {
    r->m = M_INT;
    switch (op) {
    case OP_ADD:
      r->i = orion_lua_iadd(a.i, b.i);
      break;
    case OP_SUB:
      r->i = orion_lua_isub(a.i, b.i);
      break;
    case OP_MUL:
      r->i = orion_lua_imul(a.i, b.i);
      break;
    case OP_IDIV:
      orion_lua_idiv(a.i, b.i, &r->i);
      break;
    case OP_MOD:
      orion_lua_imod(a.i, b.i, &r->i);
      break;
    case OP_NEG:
      r->i = orion_lua_iunm(a.i);
      break;
    default:
      return 0;
    }
    return 1;
  }
  p = k_tonum(a);
  q = k_tonum(b);
  switch (op) {
  case OP_ADD:
    d = p + q;
    break;
  case OP_SUB:
    d = p - q;
    break;
  case OP_MUL:
    d = p * q;
    break;
  case OP_DIV:
    d = p / q;
    break;
  case OP_IDIV:
    d = floor(p / q);
    break;
  case OP_MOD:
    d = orion_lua_fmod(p, q);
    break;
  case OP_POW:
    d = orion_lua_pow(p, q);
    break;
  case OP_NEG:
    d = -p;
    break;
  default:
    return 0;
  }
  if (isnan(d) || d == 0)
    return 0;
  r->m = M_FLT;
  r->d = d;
  return 1;
}

/* v as an integer for a bitwise operation ("number has no integer
 * representation" otherwise); a simple C expression. */
/* v converted to an integer in a new temporary, failing with `call`
 * (an error-reporting C expression) when it has no integer value. */
static const char *int_or_fail(gen *g, cv v, const char *call) {
  const char *t = newtmp(g);
  E(g, "O_U int64_t %s = 0;", t);
  if (v.t.m == M_FLT) {
    fail(g, S(g, "!o_f2i(%s, &%s)", as_d(g, v), t), call);
  } else {
    v = mat(g, v);
    E(g,
      "if (%s.t == 3) %s = %s.i; else if (O_NO(!o_f2i(%s.d, &%s))) "
      "{ o_rc = %s; goto o_out; }",
      v.s, t, v.s, v.s, t, call);
  }
  return t;
}

static const char *toint(gen *g, cv v, int line) {
  if (v.t.m == M_INT)
    return mat(g, v).s;
  return int_or_fail(
      g, v, S(g, "o_err_noint(c, %d, %s)", line, cstr(g, vinfo(g, v))));
}

/* Integer `//` or `%` of a by b (both integers). */
static const char *int_divmod(gen *g, int op, cv *a, cv *b) {
  const char *fn = op == OP_IDIV ? "o_idiv" : "o_imod";
  const char *msg =
      op == OP_IDIV ? "attempt to divide by zero" : "attempt to perform 'n%0'";
  if (b->isk && b->k.m == M_INT && b->k.i != 0)
    return S(g, "%s(%s, %s)", fn, a->s, b->s);
  *a = mat(g, *a);
  *b = mat(g, *b);
  fail(g, S(g, "%s == 0", b->s), S(g, "o_err(c, %s, \"%s\")", pcline(g), msg));
  return S(g, "%s(%s, %s)", fn, a->s, b->s);
}

static cv arith(gen *g, int op, cv a, cv b, int line) {
  int bit = op >= OP_BAND && op <= OP_SHR, prec, tofloat;
  const char *x, *y;
  lval k;
  if (a.t.k == T_NONE || b.t.k == T_NONE)
    return cv_none();
  numeric(g, a, line, bit ? "a bitwise operation on" : "arithmetic on");
  numeric(g, b, line, bit ? "a bitwise operation on" : "arithmetic on");
  if (a.isk && b.isk && fold(op, a.k, b.k, &k))
    return cv_k(g, k);
  if (bit) {
    static const char *const pre[] = {"(", "(", "(", "o_shl(", "o_shr("};
    static const char *const mid[] = {" & ", " | ", " ^ ", ", ", ", "};
    x = toint(g, a, line);
    y = toint(g, b, line);
    return cv_of(ty_val(M_INT, P_WEAK),
                 S(g, "%s%s%s%s)", pre[op - OP_BAND], x, mid[op - OP_BAND], y),
                 0);
  }
  prec = maxi(fprec(a), fprec(b));
  tofloat = g->fast && prec == P_F32;
  if (op == OP_DIV)
    return cv_of(ty_val(M_FLT, prec),
                 S(g, "(%s / %s)", as_f(g, a, prec), as_f(g, b, prec)), 0);
  if (op == OP_POW) {
    const char *s = S(g, "o_pow(%s, %s)", as_d(g, a), as_d(g, b));
    return cv_of(ty_val(M_FLT, prec), tofloat ? S(g, "((float)%s)", s) : s, 0);
  }
  if (a.t.m == M_INT && b.t.m == M_INT) {
    const char *s;
    switch (op) {
    case OP_ADD:
      s = S(g, "O_IADD(%s, %s)", a.s, b.s);
      break;
    case OP_SUB:
      s = S(g, "O_ISUB(%s, %s)", a.s, b.s);
      break;
    case OP_MUL:
      s = S(g, "O_IMUL(%s, %s)", a.s, b.s);
      break;
    default:
      s = int_divmod(g, op, &a, &b);
      break;
    }
    return cv_of(ty_val(M_INT, P_WEAK), s, 0);
  }
  if (a.t.m == M_FLT || b.t.m == M_FLT) {
    const char *s;
    x = as_f(g, a, prec);
    y = as_f(g, b, prec);
    switch (op) {
    case OP_ADD:
      s = S(g, "(%s + %s)", x, y);
      break;
    case OP_SUB:
      s = S(g, "(%s - %s)", x, y);
      break;
    case OP_MUL:
      s = S(g, "(%s * %s)", x, y);
      break;
    case OP_IDIV:
      s = S(g, "%s(%s / %s)", tofloat ? "floorf" : "floor", x, y);
      break;
    default:
      s = S(g, "%s(%s, %s)", tofloat ? "o_fmodf" : "o_fmod", x, y);
      break;
    }
    return cv_of(ty_val(M_FLT, prec), s, 0);
  }
  /* Integers or floats known only at run time. */
  x = as_v(g, a);
  y = as_v(g, b);
  if (op == OP_ADD || op == OP_SUB || op == OP_MUL) {
    static const char *const fn[] = {"o_vadd", "o_vsub", "o_vmul"};
    return cv_of(ty_val(M_NUM, P_WEAK), S(g, "%s(%s, %s)", fn[op], x, y), 0);
  } else {
    const char *t = newtmp(g), *p = newtmp(g), *q = newtmp(g);
    int idiv = op == OP_IDIV;
    E(g, "O_U const o_v %s = %s, %s = %s;", p, x, q, y);
    E(g, "O_U o_v %s;", t);
    open_(g, S(g, "if (%s.t == 3 && %s.t == 3) ", p, q));
    fail(g, S(g, "%s.i == 0", q),
         S(g, "o_err(c, %s, \"%s\")", pcline(g),
           idiv ? "attempt to divide by zero" : "attempt to perform 'n%0'"));
    E(g, "%s = o_vi(%s(%s.i, %s.i));", t, idiv ? "o_idiv" : "o_imod", p, q);
    close_(g);
    E(g, "else %s = o_vf(%s(o_vn(%s), o_vn(%s)));", t,
      idiv ? "o_fidiv" : "o_fmod", p, q);
    return cv_of(ty_val(M_NUM, P_WEAK), t, 1);
  }
}

static int small_int(int64_t i) {
  return i >= -(INT64_C(1) << 53) && i <= (INT64_C(1) << 53);
}

/* a < b (le: a <= b) for numbers. */
static const char *less(gen *g, cv a, cv b, int le) {
  const char *op = le ? "<=" : "<";
  if (a.t.m == M_INT && b.t.m == M_INT)
    return S(g, "(%s %s %s)", a.s, op, b.s);
  if (a.t.m == M_FLT && b.t.m == M_FLT)
    return S(g, "(%s %s %s)", a.s, op, b.s);
  /* An integer constant of at most 2^53 converts exactly: Lua then
   * compares as floats (LTintfloat), and so can C. */
  if (a.t.m == M_INT && b.t.m == M_FLT && a.isk && small_int(a.k.i))
    return S(g, "(%s %s %s)", flt_lit(g, (double)a.k.i), op, b.s);
  if (a.t.m == M_FLT && b.t.m == M_INT && b.isk && small_int(b.k.i))
    return S(g, "(%s %s %s)", a.s, op, flt_lit(g, (double)b.k.i));
  if (a.t.m == M_INT && b.t.m == M_FLT)
    return S(g, "o_%s_if(%s, %s)", le ? "le" : "lt", a.s, as_d(g, b));
  if (a.t.m == M_FLT && b.t.m == M_INT)
    return S(g, "o_%s_fi(%s, %s)", le ? "le" : "lt", as_d(g, a), b.s);
  return S(g, "o_v%s(%s, %s)", le ? "le" : "lt", as_v(g, a), as_v(g, b));
}

/* Lua's == on two values. */
static const char *equal(gen *g, cv a, cv b) {
  int am = a.t.m, bm = b.t.m;
  if (!isdyn(a.t) && !isdyn(b.t)) {
    if ((am & M_NUM) && (bm & M_NUM)) {
      if (am == bm)
        return S(g, "(%s == %s)", a.s, b.s);
      if (am == M_INT && a.isk && small_int(a.k.i))
        return S(g, "(%s == %s)", flt_lit(g, (double)a.k.i), b.s);
      if (bm == M_INT && b.isk && small_int(b.k.i))
        return S(g, "(%s == %s)", a.s, flt_lit(g, (double)b.k.i));
      return am == M_INT ? S(g, "o_eq_if(%s, %s)", a.s, as_d(g, b))
                         : S(g, "o_eq_if(%s, %s)", b.s, as_d(g, a));
    }
    if ((am & M_BOOL) && (bm & M_BOOL))
      return S(g, "(%s == %s)", a.s, b.s);
    if (am == M_NIL && bm == M_NIL)
      return "1";
    return "0";
  }
  return S(g, "o_veq(%s, %s)", as_v(g, a), as_v(g, b));
}

static cv compare(gen *g, int op, cv a, cv b, int line) {
  ty tb = ty_val(M_BOOL, P_WEAK);
  if (a.t.k == T_NONE || b.t.k == T_NONE)
    return cv_of(tb, "0", 1);
  if (op == OP_EQ || op == OP_NE) {
    const char *s;
    if (a.t.k != T_VAL || b.t.k != T_VAL)
      refuse(g, line, "a comparison of %s",
             ty_text(g, a.t.k != T_VAL ? a.t : b.t));
    /* OP_EQ (two registers) saves the pc; EQK and EQI do not. */
    if (!a.isk && !b.isk)
      savepc(g, line);
    s = equal(g, a, b);
    return cv_of(tb, op == OP_NE ? S(g, "(!%s)", s) : s, 0);
  }
  numeric(g, a, line, "a comparison with");
  numeric(g, b, line, "a comparison with");
  switch (op) {
  case OP_LT:
    return cv_of(tb, less(g, a, b, 0), 0);
  case OP_LE:
    return cv_of(tb, less(g, a, b, 1), 0);
  case OP_GT:
    return cv_of(tb, less(g, b, a, 0), 0);
  default:
    return cv_of(tb, less(g, b, a, 1), 0);
  }
}

static int touches(const ast_node *n, const char *name);

/* The local a condition tests, when it tests one: `x` (truthy) or
 * `x ~= nil` / `x == nil`. */
static void narrow_one(gen *g, const ast_node *n, int m) {
  var *v;
  ty t;
  if (n->kind != AST_NAME || (v = lookup(g, n->str)) == NULL || v->isk ||
      v->t.k != T_VAL || !(v->t.m & m) || (v->t.m & ~m) == 0)
    return;
  t = ty_val(v->t.m & m, v->t.prec);
  grow(g, (void **)&g->nar, &g->capnar, g->nnar, sizeof *g->nar);
  g->nar[g->nnar].v = v;
  g->nar[g->nnar++].t = t;
}

/* Narrows the locals that condition c tests to the types they have where
 * c is true (truthy) or false; only locals that `keep` does not assign
 * (keep NULL: an expression, which assigns nothing).  Undo with
 * g->nnar = the value before. */
static void narrow(gen *g, const ast_node *c, int truthy,
                   const ast_node *keep) {
  while (c->kind == AST_PAREN)
    c = c->a;
  if (c->kind == AST_NAME) {
    if (keep == NULL || !touches(keep, c->str))
      narrow_one(g, c, truthy ? M_TRUTHY : M_FALSY);
  } else if (c->kind == AST_UNOP && c->op == OP_NOT) {
    narrow(g, c->a, !truthy, keep);
  } else if (c->kind == AST_BINOP &&
             ((c->op == OP_AND && truthy) || (c->op == OP_OR && !truthy))) {
    narrow(g, c->a, truthy, keep);
    narrow(g, c->b, truthy, keep);
  } else if (c->kind == AST_BINOP && (c->op == OP_NE || c->op == OP_EQ) &&
             (c->op == OP_NE) == truthy) {
    const ast_node *x = c->a->kind == AST_NIL ? c->b : c->a;
    const ast_node *y = c->a->kind == AST_NIL ? c->a : c->b;
    if (y->kind == AST_NIL && x->kind == AST_NAME &&
        (keep == NULL || !touches(keep, x->str)))
      narrow_one(g, x, ~M_NIL & (M_BOOL | M_NUM));
  }
}

/* `a and b`, `a or b`: b runs only when needed; the result has the
 * types of a's deciding values and b's. */
static cv logic(gen *g, const ast_node *e) {
  int isand = e->op == OP_AND, cant, canf, nar;
  cv a = ex(g, e->a), b, r;
  orion_buf *sub, *saved = g->o;
  const char *t;
  ty rt;
  if (a.t.k == T_NONE) {
    (void)ex(g, e->b);
    return cv_none();
  }
  cant = a.t.k != T_VAL || (a.t.m & M_TRUTHY);
  canf = a.t.k == T_VAL && (a.t.m & M_FALSY);
  if (isand ? !cant : !canf)
    return a;
  if (isand ? !canf : !cant) {
    nar = g->nnar;
    narrow(g, e->a, isand, NULL);
    r = ex(g, e->b);
    g->nnar = nar;
    return r;
  }
  a = mat(g, a);
  sub = tmpbuf(g);
  g->o = sub;
  g->ind++;
  nar = g->nnar;
  narrow(g, e->a, isand, NULL);
  b = ex(g, e->b);
  g->nnar = nar;
  g->ind--;
  g->o = saved;
  if (sub->oom)
    oom(g);
  if (b.t.k != T_VAL && b.t.k != T_NONE)
    refuse(g, e->line, "'%s' with %s", isand ? "and" : "or", ty_text(g, b.t));
  rt = ty_val(a.t.m & (isand ? M_FALSY : M_TRUTHY), a.t.prec);
  (void)ty_join(g, &rt, b.t, e->line, "?");
  t = newtmp(g);
  E(g, "O_U %s%s;", ctype(g, rt), t);
  open_(g, S(g, "if %s ",
             cond_of(g, S(g, "%s%s", isand ? "" : "!", truth(g, a)))));
  orion_buf_append(g->o, sub->data, sub->len);
  orion_buf_free(sub);
  E(g, "%s = %s;", t, conv(g, b, rt));
  close_(g);
  E(g, "else %s = %s;", t, conv(g, a, rt));
  r = cv_of(rt, t, 1);
  return r;
}

/* ======================================================================
 * Expressions: names, array elements and slices.
 * ====================================================================== */

static cv name_ref(gen *g, const ast_node *e) {
  var *v = lookup(g, e->str);
  fname *f;
  cv r;
  int s, i;
  if (v != NULL) {
    if (v->isk) {
      r = cv_k(g, v->k);
      return r;
    }
    for (i = g->nnar - 1; i >= 0; i--)
      if (g->nar[i].v == v) {
        r = cv_of(g->nar[i].t, conv(g, cv_of(v->t, v->cname, 1), g->nar[i].t),
                  1);
        r.vi = VI_LOCAL;
        r.vn = v->name;
        return r;
      }
    if (!g->dead && !v->da && v->noinit)
      var_join(g, v, ty_val(M_NIL, P_WEAK), e->line);
    r = cv_of(v->t, v->cname, 1);
    r.vi = VI_LOCAL;
    r.vn = v->name;
    return r;
  }
  f = free_name(g, e->str);
  switch (f->b.kind) {
  case ORION_BIND_ARRAY:
    if (f->b.arr.sparse)
      refuse(g, e->line,
             "the sparse array '%s' (only dense arrays can be "
             "indexed in a body)",
             e->str);
    if (f->b.arr.ndims < 1 || f->b.arr.ndims > ORION_CBODY_MAXDIMS ||
        f->b.arr.type < 0 || f->b.arr.type > 3)
      refuse(g, e->line, "the array '%s' of an unknown shape", e->str);
    s = new_slot(g, f, ORION_CSLOT_ARRAY);
    r = cv_of(ty_val(0, 0), S(g, "%s_v", g->slots[s].pfx), 1);
    r.t.k = T_REF;
    r.t.slot = s;
    r.t.depth = 0;
    return r;
  case ORION_BIND_BUFFER:
    if (f->b.arr.ndims < 1 || f->b.arr.ndims > ORION_CBODY_MAXDIMS ||
        f->b.arr.type < 0 || f->b.arr.type > 3)
      refuse(g, e->line, "the buffer '%s' of an unknown shape", e->str);
    s = new_slot(g, f, ORION_CSLOT_BUFFER);
    r = cv_of(ty_val(0, 0), "0", 1);
    r.t.k = T_REF;
    r.t.slot = s;
    r.t.depth = 0;
    return r;
  case ORION_BIND_ACC:
    s = new_slot(g, f, ORION_CSLOT_ACC);
    r = cv_of(ty_val(0, 0), g->slots[s].pfx, 1);
    r.t.k = T_ACC;
    r.t.slot = s;
    return r;
  case ORION_BIND_NUMBER:
    s = new_slot(g, f, ORION_CSLOT_CONST);
    r = cv_of(ty_val(f->b.is_int ? M_INT : M_FLT, P_WEAK), g->slots[s].pfx, 1);
    r.vi = f->scope == SC_GLOBAL ? VI_GLOBAL : VI_UPVAL;
    r.vn = f->name;
    return r;
  case ORION_BIND_BUILTIN:
    if (strcmp(e->str, "math") == 0) {
      /* A global is read through the body's _ENV, whose __index saves the
       * pc (lua/capture.c keeps the standard library out of _ENV). */
      if (f->scope != SC_UPVAL)
        savepc(g, e->line);
      r = cv_none();
      r.t.k = T_MATH;
      return r;
    }
    refuse(g, e->line, "the standard-library value '%s'", e->str);
  case ORION_BIND_FUNC:
    refuse(g, e->line, "the function '%s' used as a value", e->str);
  case ORION_BIND_VALUE:
    refuse(g, e->line,
           "the value '%s' (a string, boolean or table captured by the body)",
           e->str);
  default:
    refuse(g, e->line, "the unbound name '%s'", e->str);
  }
}

/* The key node of an access the enclosing loop checks in advance. */
static int hoisted(gen *g, const ast_node *key, int64_t *off) {
  int i;
  if (!g->hfast || g->hk == NULL)
    return 0;
  for (i = 0; i < g->nhnodes; i++)
    if (g->hnodes[i] == key) {
      *off = 0;
      if (key->kind == AST_BINOP)
        *off = key->a->kind == AST_INT
                   ? key->a->ival
                   : (key->op == OP_SUB ? -key->b->ival : key->b->ival);
      return 1;
    }
  return 0;
}

/* The subscript k of dimension `depth` of slot s as a checked 1-based
 * integer (a simple C expression). */
static const char *subscript(gen *g, const slot *s, int depth, cv k,
                             const ast_node *keynode, int line) {
  const char *kk, *dim = S(g, "%s_d%d", s->pfx, depth);
  int64_t off;
  if (k.t.k == T_NONE)
    return "1";
  if (!is_num(k))
    refuse(g, line, "a subscript of %s that is %s%s", s->name, ty_text(g, k.t),
           vinfo(g, k));
  k = mat(g, k);
  if (k.t.m == M_INT) {
    kk = k.s;
  } else {
    const char *call = S(g, "o_err_sub(c, %d, o_w%d, %s)", line,
                         (int)(s - g->slots), as_d(g, k));
    kk = newtmp(g);
    E(g, "O_U int64_t %s = 0;", kk);
    if (k.t.m == M_FLT)
      fail(g, S(g, "!o_f2i(%s, &%s)", as_d(g, k), kk), call);
    else
      E(g,
        "if (%s.t == 3) %s = %s.i; else if (O_NO(!o_f2i(%s.d, &%s))) "
        "{ o_rc = %s; goto o_out; }",
        k.s, kk, k.s, k.s, kk, call);
  }
  if (hoisted(g, keynode, &off)) {
    int i;
    for (i = 0; i < g->nhconds; i++)
      if (strcmp(g->hconds[i].dim, dim) == 0 && g->hconds[i].off == off)
        return kk;
    grow(g, (void **)&g->hconds, &g->caphconds, g->nhconds, sizeof *g->hconds);
    g->hconds[g->nhconds].dim = dim;
    g->hconds[g->nhconds++].off = off;
    return kk;
  }
  fail(g, S(g, "(uint64_t)%s - 1u >= (uint64_t)%s", kk, dim),
       S(g, "o_err_index(c, %d, o_w%d, %s, %s, %d)", line, (int)(s - g->slots),
         kk, dim, depth + 1));
  return kk;
}

/* The linear position (offset or pointer) of subscript kk below o. */
static const char *position(gen *g, cv o, const char *kk) {
  const slot *s = &g->slots[o.t.slot];
  int last = o.t.depth + 1 == s->ndims;
  if (s->kind == ORION_CSLOT_ARRAY && last)
    return S(g, "(%s + (%s - 1))", o.s, kk);
  return S(g, "(%s + (%s - 1) * %s_s%d)", o.s, kk, s->pfx, o.t.depth);
}

/* o[k] for an array, buffer or slice o. */
static cv index_get(gen *g, cv o, cv k, const ast_node *keynode, int line) {
  const slot *s = &g->slots[o.t.slot];
  const char *kk, *pos;
  cv r;
  savepc(g, line);
  kk = subscript(g, s, o.t.depth, k, keynode, line);
  pos = position(g, o, kk);
  if (o.t.depth + 1 < s->ndims) {
    r = cv_of(o.t, pos, 0);
    r.t.depth++;
    return r;
  }
  if (s->kind == ORION_CSLOT_BUFFER) {
    const char *t = newtmp(g);
    int isint = s->etype == ET_I32 || s->etype == ET_I64;
    E(g, "O_U const orion_cval %s = c->buf_get(c, %s_h, %s);", t, s->pfx, pos);
    r = cv_of(ty_val(isint ? M_INT : M_FLT, P_WEAK),
              S(g, "%s.%c", t, isint ? 'i' : 'd'), 1);
  } else {
    switch (s->etype) {
    case ET_F32:
      r = cv_of(ty_val(M_FLT, P_F32),
                g->fast ? S(g, "(*%s)", pos) : S(g, "((double)*%s)", pos), 0);
      break;
    case ET_F64:
      r = cv_of(ty_val(M_FLT, P_F64), S(g, "(*%s)", pos), 0);
      break;
    case ET_I32:
      r = cv_of(ty_val(M_INT, P_WEAK), S(g, "((int64_t)*%s)", pos), 0);
      break;
    default:
      r = cv_of(ty_val(M_INT, P_WEAK), S(g, "(*%s)", pos), 0);
      break;
    }
  }
  r.vi = VI_FIELD;
  r.vn = (k.isk && k.k.m == M_INT && k.k.i >= 0 && k.k.i <= 255)
             ? "integer index"
             : "?";
  return r;
}

/* Stores v (already evaluated) into the element at `dest` (an lvalue) of
 * an array of element type et, or through buffer slot s at position pos,
 * with store_elem's and buffer_store's checks.  tail names the target for
 * messages ("f32 array 'W'"), what without the type ("array 'W'"). */
static void store_value(gen *g, cv v, int et, const char *dest, const slot *bs,
                        const char *pos, const char *tail, const char *what,
                        int line) {
  int toint = et == ET_I32 || et == ET_I64;
  const char *val;
  if (v.t.k == T_NONE)
    return;
  if (v.t.k != T_VAL)
    refuse(g, line > 0 ? line : -line, "storing %s in an array",
           ty_text(g, v.t));
  if (!(v.t.m & M_NUM)) {
    fail(g, NULL,
         S(g, "o_err_type(c, %d, %d, %s)", line, v.t.m == M_NIL ? 0 : 1, tail));
    return;
  }
  v = mat(g, v);
  if (isdyn(v.t) && (v.t.m & (M_NIL | M_BOOL)))
    fail(g, S(g, "%s.t < 3", v.s),
         S(g, "o_err_type(c, %d, %s.t, %s)", line, v.s, tail));
  if (toint) {
    const char *call;
    if (v.t.m == M_INT) {
      val = v.s;
    } else {
      val = newtmp(g);
      call = S(g, "o_err_notint(c, %d, %s, %s)", line,
               isdyn(v.t) ? S(g, "%s.d", v.s) : as_d(g, v), tail);
      E(g, "O_U int64_t %s = 0;", val);
      if (v.t.m == M_FLT)
        fail(g, S(g, "!o_f2i(%s, &%s)", as_d(g, v), val), call);
      else
        E(g,
          "if (%s.t == 3) %s = %s.i; else if (O_NO(!o_f2i(%s.d, &%s))) "
          "{ o_rc = %s; goto o_out; }",
          v.s, val, v.s, v.s, val, call);
    }
    if (et == ET_I32)
      fail(g,
           S(g, "%s(%s < INT32_MIN || %s > INT32_MAX)",
             bs != NULL ? S(g, "%s_op == 1 && ", bs->pfx) : "", val, val),
           S(g, "o_err_range(c, %d, %s, %s)", line, val, what));
  } else if (bs == NULL && et == ET_F32 && fastf(g, v.t)) {
    val = v.s;
  } else {
    val = as_d(g, v);
  }
  if (bs != NULL) {
    const char *t = newtmp(g), *t2 = newtmp(g);
    E(g, "O_U orion_cval %s;", t);
    E(g, "int %s;", t2);
    E(g, "%s.%c = %s;", t, toint ? 'i' : 'd', val);
    E(g, "%s = c->buf_set(c, %s_h, %s, %s);", t2, bs->pfx, pos, t);
    fail(g, S(g, "%s != 0", t2), t2);
  } else {
    E(g, "%s = (%s)%s;", dest, etype_c(et), val);
  }
}

/* o[k] = v. */
static void index_set(gen *g, cv o, cv k, const ast_node *keynode, cv v,
                      int line) {
  const slot *s;
  const char *kk, *pos;
  int i = o.t.slot;
  if (o.t.k == T_NONE)
    return;
  s = &g->slots[i];
  savepc(g, line);
  if (o.t.depth + 1 != s->ndims) {
    const char *kind = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    const char *msg =
        o.t.depth == 0
            ? S(g,
                "%s '%.63s' has %d dimensions: assign to an element "
                "(%.63s[i][j] = x), not to a slice",
                kind, s->name, s->ndims, s->name)
            : S(g, "%s '%.63s': assign to an element, not to a slice", kind,
                s->name);
    fail(g, NULL, S(g, "o_err(c, %d, %s)", line, cstr(g, msg)));
    return;
  }
  kk = subscript(g, s, o.t.depth, k, keynode, line);
  pos = position(g, o, kk);
  if (s->kind == ORION_CSLOT_BUFFER)
    store_value(g, v, s->etype, NULL, s, pos, S(g, "o_t%d", i),
                S(g, "o_w%d", i), line);
  else
    store_value(g, v, s->etype, S(g, "*%s", pos), NULL, NULL, S(g, "o_t%d", i),
                S(g, "o_w%d", i), line);
}

/* `a[b]` and `a.name` as an expression. */
static cv index_expr(gen *g, const ast_node *e);

static cv math_field(gen *g, const ast_node *e) {
  const char *f = e->b->str;
  lval k;
  cv r;
  memset(&k, 0, sizeof k);
  if (!e->flag || e->b->kind != AST_STR)
    refuse(g, e->line, "indexing the math table with a computed key");
  if (strcmp(f, "pi") == 0) {
    k.m = M_FLT;
    k.d = 3.141592653589793238462643383279502884;
  } else if (strcmp(f, "huge") == 0) {
    k.m = M_FLT;
    k.d = HUGE_VAL;
  } else if (strcmp(f, "maxinteger") == 0) {
    k.m = M_INT;
    k.i = INT64_MAX;
  } else if (strcmp(f, "mininteger") == 0) {
    k.m = M_INT;
    k.i = INT64_MIN;
  } else {
    refuse(g, e->line, "the value 'math.%s'", f);
  }
  /* A field read at run time: not a Lua constant. */
  r = cv_k(g, k);
  r.isk = 0;
  r.vi = VI_FIELD;
  r.vn = f;
  return r;
}

static cv index_expr(gen *g, const ast_node *e) {
  cv o = ex(g, e->a), k;
  if (o.t.k == T_MATH)
    return math_field(g, e);
  if (o.t.k == T_NONE) {
    if (!e->flag)
      (void)ex(g, e->b);
    return cv_none();
  }
  if (o.t.k != T_REF)
    refuse(g, e->line, "indexing %s%s", ty_text(g, o.t), vinfo(g, o));
  if (e->flag)
    refuse(g, e->line, "the field '%s' of %s", e->b->str, ty_text(g, o.t));
  k = ex(g, e->b);
  return index_get(g, o, k, e->b, e->line);
}

/* ======================================================================
 * Expressions: calls (math.*, acc:add).
 * ====================================================================== */

/* An argument math.NAME checks with luaL_checkinteger (a simple C
 * expression). */
static const char *arg_int(gen *g, cv v, int argn, const char *fn, int line) {
  if (v.t.m == M_INT)
    return mat(g, v).s;
  return int_or_fail(g, v,
                     S(g,
                       "o_err_arg(c, %d, %d, \"%s\", \"number has no integer "
                       "representation\")",
                       line, argn, fn));
}

/* A float function of one argument: the result is a float computed in
 * double (weak precision), or in float in fast mode where the function
 * rounds exactly (sqrt, abs). */
static cv math_f1(gen *g, const char *fn, cv x) {
  if (g->fast && x.t.m == M_FLT && x.t.prec == P_F32 && strcmp(fn, "sqrt") == 0)
    return cv_of(x.t, S(g, "sqrtf(%s)", x.s), 0);
  if (strcmp(fn, "sqrt") == 0)
    return cv_of(ty_val(M_FLT, P_WEAK), S(g, "sqrt(%s)", as_d(g, x)), 0);
  return cv_of(ty_val(M_FLT, P_WEAK), S(g, "%s(o_opq(%s))", fn, as_d(g, x)), 0);
}

/* math.min / math.max: the first argument that is smallest (largest) by
 * Lua's `<`, with its own subtype. */
static cv math_minmax(gen *g, int ismax, cv *a, int n) {
  ty rt = a[0].t;
  const char *t = newtmp(g);
  cv cur;
  int i;
  for (i = 1; i < n; i++)
    (void)ty_join(g, &rt, a[i].t, 0, "?");
  E(g, "O_U %s%s = %s;", ctype(g, rt), t, conv(g, a[0], rt));
  cur = cv_of(rt, t, 1);
  for (i = 1; i < n; i++) {
    cv x = mat(g, a[i]);
    E(g, "if %s %s = %s;",
      cond_of(g, ismax ? less(g, cur, x, 0) : less(g, x, cur, 0)), t,
      conv(g, x, rt));
  }
  return cur;
}

static int math_call(gen *g, const ast_node *e, const char *fn, cv *a, int n,
                     cv *out, int want) {
  int line = e->line, i;
  cv r = cv_none(), x;
  const char *t;
  for (i = 0; i < n; i++)
    if (a[i].t.k == T_NONE)
      return want > 0 ? (out[0] = cv_none(), 1) : 0;
  for (i = 0; i < n; i++)
    if (!is_num(a[i]))
      refuse(g, line, "a call to 'math.%s' with %s as argument %d", fn,
             ty_text(g, a[i].t), i + 1);
  savepc(g, line);
  if (strcmp(fn, "random") == 0) {
    const char *rv = newtmp(g), *lo, *up;
    g->userand = 1;
    E(g, "O_U const uint64_t %s = o_rnext(o_rs);", rv);
    if (n == 0) {
      r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "o_rfloat(%s)", rv), 0);
    } else if (n > 2) {
      fail(g, NULL, S(g, "o_err(c, %d, \"wrong number of arguments\")", line));
      r = cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    } else {
      if (n == 1) {
        lo = "1";
        up = arg_int(g, a[0], 1, "random", line);
      } else {
        lo = arg_int(g, a[0], 1, "random", line);
        up = arg_int(g, a[1], 2, "random", line);
      }
      t = newtmp(g);
      E(g, "O_U int64_t %s;", t);
      if (n == 1) {
        open_(g, S(g, "if (%s == 0) ", up));
        E(g, "%s = (int64_t)%s;", t, rv);
        close_(g);
        open_(g, "else ");
      }
      fail(
          g, S(g, "%s > %s", lo, up),
          S(g, "o_err_arg(c, %d, 1, \"random\", \"interval is empty\")", line));
      E(g, "%s = o_rproject(%s, %s, %s, o_rs);", t, rv, lo, up);
      if (n == 1)
        close_(g);
      r = cv_of(ty_val(M_INT, P_WEAK), t, 1);
    }
    goto done;
  }
  if (strcmp(fn, "min") == 0 || strcmp(fn, "max") == 0) {
    if (n == 0) {
      fail(g, NULL,
           S(g, "o_err_arg(c, %d, 1, \"%s\", \"value expected\")", line, fn));
      r = cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    } else {
      r = math_minmax(g, fn[1] == 'a', a, n);
    }
    goto done;
  }
  if (strcmp(fn, "ult") == 0) {
    const char *p, *q;
    if (n < 2)
      refuse(g, line, "a call to 'math.ult' with too few arguments");
    p = arg_int(g, a[0], 1, "ult", line);
    q = arg_int(g, a[1], 2, "ult", line);
    r = cv_of(ty_val(M_BOOL, P_WEAK),
              S(g, "((uint64_t)%s < (uint64_t)%s)", p, q), 0);
    goto done;
  }
  if (strcmp(fn, "fmod") == 0) {
    cv p, q;
    if (n < 2)
      refuse(g, line, "a call to 'math.fmod' with too few arguments");
    p = mat(g, a[0]);
    q = mat(g, a[1]);
    if (p.t.m == M_INT && q.t.m == M_INT) {
      fail(g, S(g, "%s == 0", q.s),
           S(g, "o_err_arg(c, %d, 2, \"fmod\", \"zero\")", line));
      r = cv_of(ty_val(M_INT, P_WEAK),
                S(g, "((uint64_t)%s + 1u <= 1u ? 0 : %s %% %s)", q.s, p.s, q.s),
                0);
    } else if (p.t.m == M_FLT || q.t.m == M_FLT || !isdyn(p.t) || !isdyn(q.t)) {
      if (isdyn(p.t) || isdyn(q.t)) {
        /* One integer (or float) and one run-time value. */
        const char *pv = as_v(g, p), *qv = as_v(g, q);
        t = newtmp(g);
        E(g, "O_U o_v %s;", t);
        open_(g, S(g, "if (%s.t == 3 && %s.t == 3) ", pv, qv));
        fail(g, S(g, "%s.i == 0", qv),
             S(g, "o_err_arg(c, %d, 2, \"fmod\", \"zero\")", line));
        E(g, "%s = o_vi((uint64_t)%s.i + 1u <= 1u ? 0 : %s.i %% %s.i);", t, qv,
          pv, qv);
        close_(g);
        E(g, "else %s = o_vf(fmod(o_vn(%s), o_vn(%s)));", t, pv, qv);
        r = cv_of(ty_val(M_NUM, P_WEAK), t, 1);
      } else {
        r = cv_of(ty_val(M_FLT, P_WEAK),
                  S(g, "fmod(%s, %s)", as_d(g, p), as_d(g, q)), 0);
      }
    } else {
      t = newtmp(g);
      E(g, "O_U o_v %s;", t);
      open_(g, S(g, "if (%s.t == 3 && %s.t == 3) ", p.s, q.s));
      fail(g, S(g, "%s.i == 0", q.s),
           S(g, "o_err_arg(c, %d, 2, \"fmod\", \"zero\")", line));
      E(g, "%s = o_vi((uint64_t)%s.i + 1u <= 1u ? 0 : %s.i %% %s.i);", t, q.s,
        p.s, q.s);
      close_(g);
      E(g, "else %s = o_vf(fmod(o_vn(%s), o_vn(%s)));", t, p.s, q.s);
      r = cv_of(ty_val(M_NUM, P_WEAK), t, 1);
    }
    goto done;
  }
  if (n < 1)
    refuse(g, line, "a call to 'math.%s' without arguments", fn);
  x = a[0];
  if (strcmp(fn, "floor") == 0 || strcmp(fn, "ceil") == 0) {
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
    } else if (x.t.m == M_FLT) {
      r = cv_of(ty_val(M_NUM, P_WEAK), S(g, "o_numint(%s(%s))", fn, as_d(g, x)),
                0);
    } else {
      x = mat(g, x);
      r = cv_of(
          ty_val(M_NUM, P_WEAK),
          S(g, "(%s.t == 3 ? %s : o_numint(%s(%s.d)))", x.s, x.s, fn, x.s), 0);
    }
  } else if (strcmp(fn, "abs") == 0) {
    x = mat(g, x);
    if (x.t.m == M_INT)
      r = cv_of(x.t, S(g, "(%s < 0 ? O_INEG(%s) : %s)", x.s, x.s, x.s), 0);
    else if (x.t.m == M_FLT)
      r = cv_of(x.t, S(g, "%s(%s)", fastf(g, x.t) ? "fabsf" : "fabs", x.s), 0);
    else
      r = cv_of(x.t, S(g, "o_vabs(%s)", x.s), 0);
  } else if (strcmp(fn, "tointeger") == 0) {
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
    } else {
      const char *k = newtmp(g);
      x = mat(g, x);
      t = newtmp(g);
      E(g, "O_U int64_t %s = 0;", k);
      if (x.t.m == M_FLT)
        E(g, "O_U const o_v %s = o_f2i(%s, &%s) ? o_vi(%s) : o_vnil();", t,
          as_d(g, x), k, k);
      else
        E(g,
          "O_U const o_v %s = %s.t == 3 ? %s : o_f2i(%s.d, &%s) ? o_vi(%s) "
          ": o_vnil();",
          t, x.s, x.s, x.s, k, k);
      r = cv_of(ty_val(M_INT | M_NIL, P_WEAK), t, 1);
    }
  } else if (strcmp(fn, "modf") == 0) {
    cv second;
    x = mat(g, x);
    if (x.t.m == M_INT) {
      r = x;
      r.isk = 0;
      r.vi = VI_NONE;
      second = cv_of(ty_val(M_FLT, P_WEAK), "0.0", 1);
    } else {
      const char *d = newtmp(g), *ip = newtmp(g);
      E(g, "O_U const double %s = %s;", d,
        isdyn(x.t) ? S(g, "o_vn(%s)", x.s) : as_d(g, x));
      E(g, "O_U const double %s = %s < 0 ? ceil(%s) : floor(%s);", ip, d, d, d);
      if (isdyn(x.t)) {
        r = cv_of(ty_val(M_NUM, P_WEAK),
                  S(g, "(%s.t == 3 ? %s : o_numint(%s))", x.s, x.s, ip), 0);
        second = cv_of(ty_val(M_FLT, P_WEAK),
                       S(g, "(%s.t == 3 ? 0.0 : (%s == %s ? 0.0 : %s - %s))",
                         x.s, d, ip, d, ip),
                       0);
      } else {
        r = cv_of(ty_val(M_NUM, P_WEAK), S(g, "o_numint(%s)", ip), 0);
        second = cv_of(ty_val(M_FLT, P_WEAK),
                       S(g, "(%s == %s ? 0.0 : %s - %s)", d, ip, d, ip), 0);
      }
    }
    if (want >= 2) {
      out[0] = mat(g, r);
      out[1] = second;
      return 2;
    }
  } else if (strcmp(fn, "log") == 0) {
    if (n == 1) {
      r = math_f1(g, "log", x);
    } else {
      cv b = a[1];
      const char *xd = as_d(g, x);
      if (b.isk && k_tonum(b.k) == 2.0)
        r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "log2(o_opq(%s))", xd), 0);
      else if (b.isk && k_tonum(b.k) == 10.0)
        r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "log10(o_opq(%s))", xd), 0);
      else {
        const char *bd = newtmp(g), *xx = newtmp(g);
        E(g, "O_U const double %s = o_opq(%s), %s = %s;", xx, xd, bd,
          as_d(g, b));
        r = cv_of(ty_val(M_FLT, P_WEAK),
                  S(g,
                    "(%s == 2.0 ? log2(%s) : %s == 10.0 ? log10(%s) : "
                    "log(%s) / log(%s))",
                    bd, xx, bd, xx, xx, bd),
                  0);
      }
    }
  } else if (strcmp(fn, "atan") == 0) {
    r = cv_of(ty_val(M_FLT, P_WEAK),
              S(g, "atan2(o_opq(%s), %s)", as_d(g, x),
                n >= 2 ? as_d(g, a[1]) : "1.0"),
              0);
  } else if (strcmp(fn, "deg") == 0 || strcmp(fn, "rad") == 0) {
    double pi = 3.141592653589793238462643383279502884;
    double f = fn[0] == 'd' ? 180.0 / pi : pi / 180.0;
    r = cv_of(ty_val(M_FLT, P_WEAK), S(g, "(%s * %a)", as_d(g, x), f), 0);
  } else if (strcmp(fn, "sqrt") == 0 || strcmp(fn, "exp") == 0 ||
             strcmp(fn, "sin") == 0 || strcmp(fn, "cos") == 0 ||
             strcmp(fn, "tan") == 0 || strcmp(fn, "asin") == 0 ||
             strcmp(fn, "acos") == 0) {
    r = math_f1(g, fn, x);
  } else {
    refuse(g, line, "a call to 'math.%s'", fn);
  }
done:
  if (want < 1)
    return 0;
  out[0] = r;
  return 1;
}

/* acc:add(x). */
static void acc_add(gen *g, cv acc, cv *a, int n, int line) {
  const char *p = g->slots[acc.t.slot].pfx;
  cv x;
  savepc(g, line);
  if (n == 0) {
    fail(g, NULL, S(g, "o_err_acc(c, %d, -1)", line));
    return;
  }
  x = mat(g, a[0]);
  if (x.t.k == T_NONE)
    return;
  if (x.t.k != T_VAL)
    refuse(g, line, "adding %s to an accumulator", ty_text(g, x.t));
  if (!(x.t.m & M_NUM)) {
    fail(g, NULL, S(g, "o_err_acc(c, %d, %d)", line, x.t.m == M_NIL ? 0 : 1));
    return;
  }
  if (x.t.m == M_INT) {
    E(g, "o_acc_addi(&%s, %s);", p, x.s);
  } else if (x.t.m == M_FLT) {
    E(g, "o_acc_addf(&%s, %s);", p, as_d(g, x));
  } else {
    if (x.t.m & (M_NIL | M_BOOL))
      fail(g, S(g, "%s.t < 3", x.s), S(g, "o_err_acc(c, %d, %s.t)", line, x.s));
    E(g, "if (%s.t == 3) o_acc_addi(&%s, %s.i); else o_acc_addf(&%s, %s.d);",
      x.s, p, x.s, p, x.s);
  }
}

/* Evaluates an argument list into args (the arena); returns the count. */
static int eval_args(gen *g, const ast_list *l, cv **args) {
  int i, n = 0;
  cv *a = amalloc(g, sizeof *a * (size_t)(l->n + 2));
  for (i = 0; i < l->n; i++) {
    if (i == l->n - 1) {
      n += exn(g, l->v[i], a + n, 2);
    } else {
      a[n++] = mat(g, ex(g, l->v[i]));
    }
  }
  /* Later arguments may change nothing earlier ones read, but keep each
   * one's value fixed anyway: a call evaluates all before running. */
  for (i = 0; i < n; i++)
    a[i] = mat(g, a[i]);
  *args = a;
  return n;
}

/* Is `e` the math table (a free `math` or a local holding it)? */
static int is_math(gen *g, const ast_node *e) {
  var *v;
  fname *f;
  if (e->kind != AST_NAME)
    return 0;
  v = lookup(g, e->str);
  if (v != NULL)
    return v->t.k == T_MATH;
  f = free_name(g, e->str);
  return f->b.kind == ORION_BIND_BUILTIN && strcmp(e->str, "math") == 0;
}

static int call_expr(gen *g, const ast_node *e, cv *out, int want) {
  cv *a;
  int n;
  if (e->kind == AST_METHCALL) {
    cv o = ex(g, e->a);
    if (o.t.k == T_ACC && strcmp(e->str, "add") == 0) {
      n = eval_args(g, &e->list, &a);
      acc_add(g, o, a, n, e->line);
      return 0;
    }
    if (o.t.k == T_NONE)
      return 0;
    refuse(g, e->line, "a method call '%s:%s'", lua_text(g, e->a), e->str);
  }
  if (e->a->kind == AST_INDEX && e->a->flag && e->a->b->kind == AST_STR &&
      is_math(g, e->a->a)) {
    (void)ex(g, e->a->a);
    n = eval_args(g, &e->list, &a);
    return math_call(g, e, e->a->b->str, a, n, out, want);
  }
  refuse(g, e->line, "a call to '%s'", lua_text(g, e->a));
}

/* ======================================================================
 * Expressions: the dispatcher.
 * ====================================================================== */

static cv unop(gen *g, const ast_node *e) {
  cv a = ex(g, e->a);
  lval k, zero;
  memset(&zero, 0, sizeof zero);
  zero.m = M_INT;
  switch (e->op) {
  case OP_NOT:
    if (a.isk) {
      memset(&k, 0, sizeof k);
      k.m = (a.k.m & M_FALSY) ? M_TRUE : M_FALSE;
      return cv_k(g, k);
    }
    return cv_of(ty_val(M_BOOL, P_WEAK), S(g, "(!%s)", truth(g, a)), 0);
  case OP_NEG:
    if (a.t.k == T_NONE)
      return a;
    numeric(g, a, e->line, "arithmetic on");
    if (a.isk && fold(OP_NEG, a.k, zero, &k))
      return cv_k(g, k);
    if (a.t.m == M_INT)
      return cv_of(a.t, S(g, "O_INEG(%s)", a.s), 0);
    if (a.t.m == M_FLT)
      return cv_of(a.t, S(g, "(-%s)", a.s), 0);
    return cv_of(a.t, S(g, "o_vneg(%s)", a.s), 0);
  case OP_BNOT:
    if (a.t.k == T_NONE)
      return a;
    numeric(g, a, e->line, "a bitwise operation on");
    if (a.isk && fold(OP_BNOT, a.k, zero, &k))
      return cv_k(g, k);
    return cv_of(ty_val(M_INT, P_WEAK), S(g, "(~%s)", toint(g, a, e->line)), 0);
  default: /* OP_LEN */
    if (a.t.k == T_NONE)
      return cv_of(ty_val(M_INT, P_WEAK), "0", 1);
    if (a.t.k != T_REF)
      refuse(g, e->line, "the length of %s", ty_text(g, a.t));
    savepc(g, e->line);
    return cv_of(ty_val(M_INT, P_WEAK),
                 S(g, "%s_d%d", g->slots[a.t.slot].pfx, a.t.depth), 1);
  }
}

static cv ex(gen *g, const ast_node *e) {
  lval k;
  memset(&k, 0, sizeof k);
  switch (e->kind) {
  case AST_NIL:
    return cv_nil(g);
  case AST_TRUE:
  case AST_FALSE:
    k.m = e->kind == AST_TRUE ? M_TRUE : M_FALSE;
    return cv_k(g, k);
  case AST_INT:
    k.m = M_INT;
    k.i = e->ival;
    return cv_k(g, k);
  case AST_FLT:
    k.m = M_FLT;
    k.d = e->fval;
    return cv_k(g, k);
  case AST_STR:
    refuse(g, e->line, "a string value");
  case AST_VARARG:
    refuse(g, e->line, "a vararg expression '...'");
  case AST_FUNC:
    refuse(g, e->line, "a function definition");
  case AST_TABLE:
    refuse(g, e->line, "a table constructor");
  case AST_NAME:
    return name_ref(g, e);
  case AST_INDEX:
    return index_expr(g, e);
  case AST_PAREN:
    return ex(g, e->a);
  case AST_UNOP:
    return unop(g, e);
  case AST_BINOP:
    if (e->op == OP_AND || e->op == OP_OR)
      return logic(g, e);
    if (e->op == OP_CONCAT)
      refuse(g, e->line, "string concatenation '..'");
    if (e->op >= OP_EQ && e->op <= OP_GE) {
      cv a = ex(g, e->a);
      cv b = ex(g, e->b);
      return compare(g, e->op, a, b, e->line);
    } else {
      cv a = ex(g, e->a);
      cv b = ex(g, e->b);
      return arith(g, e->op, a, b, e->line);
    }
  case AST_CALL:
  case AST_METHCALL: {
    cv r[2];
    if (exn(g, e, r, 1) == 0)
      return cv_nil(g);
    return r[0];
  }
  default:
    refuse(g, e->line, "a %s expression", ast_kind_name(e->kind));
  }
}

/* Evaluates e for up to `want` values (calls may give several). */
static int exn(gen *g, const ast_node *e, cv *out, int want) {
  if (e->kind == AST_CALL || e->kind == AST_METHCALL)
    return call_expr(g, e, out, want);
  if (want < 1) {
    (void)ex(g, e);
    return 0;
  }
  out[0] = ex(g, e);
  return 1;
}

/* Evaluates an expression list for exactly n values (nil-padded; extra
 * values are evaluated and dropped).  With keep, each value is held in a
 * temporary so later stores do not change it. */
static cv *explist(gen *g, const ast_list *l, int n, int keep) {
  cv *v = amalloc(g, sizeof *v * (size_t)(n + l->n + 2));
  int i, got = 0;
  for (i = 0; i < l->n; i++) {
    if (i == l->n - 1) {
      got += exn(g, l->v[i], v + got, n - got > 0 ? n - got : 0);
    } else {
      cv x = ex(g, l->v[i]);
      if (got < n)
        v[got++] = keep ? copy(g, x) : x;
    }
  }
  for (i = 0; i < got; i++)
    if (keep)
      v[i] = copy(g, v[i]);
  for (; got < n; got++)
    v[got] = cv_nil(g);
  return v;
}

/* ======================================================================
 * Statements.
 * ====================================================================== */

static void stmt(gen *g, const ast_node *s);

/* The statements of a block in a new scope (no braces). */
static void stmts(gen *g, const ast_list *l) {
  blkframe f;
  int i, base = g->nsc;
  dastate start;
  f.stmts = l;
  f.suffix = g->suffix;
  f.up = g->blk;
  g->blk = &f;
  start = da_save(g);
  for (i = 0; i < l->n; i++) {
    /* A goto may arrive at a label from anywhere in the block: only what
     * was assigned before the block is surely assigned there. */
    if (l->v[i]->kind == AST_LABEL)
      da_restore(g, start);
    stmt(g, l->v[i]);
  }
  g->nsc = base;
  g->blk = f.up;
}

/* A block in braces. */
static void block(gen *g, const ast_node *b) {
  open_(g, "");
  stmts(g, &b->list);
  close_(g);
}

static int label_id(gen *g, const ast_node *l) {
  int i;
  for (i = 0; i < g->nlabels; i++)
    if (g->labels[i] == l)
      return i;
  grow(g, (void **)&g->labels, &g->caplabels, g->nlabels, sizeof *g->labels);
  g->labels[g->nlabels] = l;
  return g->nlabels++;
}

static void goto_(gen *g, const ast_node *s) {
  blkframe *f;
  int i;
  for (f = g->blk; f != NULL; f = f->up)
    for (i = 0; i < f->stmts->n; i++) {
      const ast_node *l = f->stmts->v[i];
      if (l->kind == AST_LABEL && strcmp(l->str, s->str) == 0) {
        E(g, "goto o_L%d%s;", label_id(g, l), f->suffix);
        g->dead = 1;
        return;
      }
    }
  refuse(g, s->line, "a goto to the unknown label '%s'", s->str);
}

/* The last line an expression list reaches (Lua stores a value after
 * reading the whole list: the store reports that line). */
static int last_line(const ast_node *n) {
  int m, i, x;
  if (n == NULL)
    return 0;
  m = n->line;
  x = last_line(n->a);
  m = x > m ? x : m;
  x = last_line(n->b);
  m = x > m ? x : m;
  x = last_line(n->c);
  m = x > m ? x : m;
  for (i = 0; i < n->list.n; i++) {
    x = last_line(n->list.v[i]);
    m = x > m ? x : m;
  }
  return m;
}

static void local_(gen *g, const ast_node *s) {
  int n = s->list.n, i;
  cv *v = explist(g, &s->list2, n, 0);
  var **vs = amalloc(g, sizeof *vs * (size_t)(n + 1));
  for (i = 0; i < n; i++) {
    const ast_node *d = s->list.v[i];
    var *x = get_var(g, d);
    vs[i] = x;
    if (d->attrib == ATTR_CLOSE)
      refuse(g, d->line, "the to-be-closed variable '%s'", d->str);
    if (d->attrib == ATTR_CONST && v[i].isk) {
      x->isk = 1;
      x->k = v[i].k;
      continue;
    }
    x->noinit = s->list2.n == 0;
    if (!x->noinit)
      var_join(g, x, v[i].t, s->line);
    else if (x->t.k == T_NONE)
      continue; /* declared; typed by its first assignment */
  }
  for (i = 0; i < n; i++) {
    var *x = vs[i];
    if (!x->isk) {
      if (x->t.k != T_NONE && x->t.k != T_ACC && x->t.k != T_MATH)
        E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname,
          x->noinit ? (isdyn(x->t) ? "o_vnil()" : "0") : conv(g, v[i], x->t));
      x->da = !x->noinit;
    }
    push_var(g, x);
  }
}

typedef struct target {
  var *v;  /* a local */
  cv o, k; /* or o[k] */
  const ast_node *keynode;
  int line;
} target;

static void assign(gen *g, const ast_node *s) {
  int n = s->list.n, i, line = last_line(s);
  target *t = amalloc(g, sizeof *t * (size_t)(n + 1));
  cv *v;
  for (i = 0; i < n; i++) {
    const ast_node *e = s->list.v[i];
    memset(&t[i], 0, sizeof t[i]);
    if (e->kind == AST_NAME) {
      t[i].v = lookup(g, e->str);
      if (t[i].v == NULL)
        refuse(g, e->line,
               "an assignment to '%s', which is not a local of "
               "the body",
               e->str);
      if (t[i].v->isk)
        refuse(g, e->line, "an assignment to the constant '%s'", e->str);
    } else if (e->kind == AST_INDEX) {
      t[i].o = ex(g, e->a);
      if (t[i].o.t.k == T_MATH)
        refuse(g, e->line, "an assignment to a field of math");
      if (t[i].o.t.k != T_REF && t[i].o.t.k != T_NONE)
        refuse(g, e->line, "an assignment into %s", ty_text(g, t[i].o.t));
      if (e->flag)
        refuse(g, e->line, "the field '%s' of %s", e->b->str,
               ty_text(g, t[i].o.t));
      t[i].k = ex(g, e->b);
      t[i].keynode = e->b;
      if (n > 1) {
        t[i].o = copy(g, t[i].o);
        t[i].k = copy(g, t[i].k);
      }
      t[i].line = line;
    } else {
      refuse(g, e->line, "an assignment to %s", lua_text(g, e));
    }
  }
  v = explist(g, &s->list2, n, n > 1);
  for (i = n - 1; i >= 0; i--) {
    if (t[i].v != NULL) {
      var *x = t[i].v;
      var_join(g, x, v[i].t, s->line);
      if (x->t.k != T_NONE && x->t.k != T_ACC && x->t.k != T_MATH &&
          v[i].t.k != T_NONE)
        E(g, "%s = %s;", x->cname, conv(g, v[i], x->t));
      if (!g->dead)
        x->da = 1;
    } else {
      index_set(g, t[i].o, t[i].k, t[i].keynode, v[i], t[i].line);
    }
  }
}

static void return_(gen *g, const ast_node *s) {
  cv *v = explist(g, &s->list, s->list.n > 0 ? 1 : 0, 0);
  int et = g->in->iter.type;
  if (s->list.n > 0 && v[0].t.k != T_NONE &&
      !(v[0].t.k == T_VAL && v[0].t.m == M_NIL)) {
    cv x = v[0];
    if (x.t.k != T_VAL)
      refuse(g, s->line, "returning %s", ty_text(g, x.t));
    if (x.t.m & M_NIL) {
      /* nil keeps the element: store only the other values. */
      cv y;
      x = mat(g, x);
      open_(g, S(g, "if (%s.t != 0) ", x.s));
      y = x;
      y.t = ty_val(x.t.m & ~M_NIL, x.t.prec);
      if (!isdyn(y.t))
        y = cv_of(y.t, conv(g, x, y.t), 0);
      store_value(g, y, et, "IT_v[o_e]", NULL, NULL, "o_tr", "o_wr", -s->line);
      close_(g);
    } else {
      store_value(g, x, et, "IT_v[o_e]", NULL, NULL, "o_tr", "o_wr", -s->line);
    }
  }
  E(g, "goto o_next;");
  g->dead = 1;
}

/* ---- loops ------------------------------------------------------------ */

static int contains_loop(const ast_node *n) {
  int i;
  if (n == NULL)
    return 0;
  if (n->kind == AST_WHILE || n->kind == AST_REPEAT || n->kind == AST_NUMFOR ||
      n->kind == AST_GENFOR || n->kind == AST_FUNC)
    return 1;
  if (contains_loop(n->a) || contains_loop(n->b) || contains_loop(n->c) ||
      contains_loop(n->d))
    return 1;
  for (i = 0; i < n->list.n; i++)
    if (contains_loop(n->list.v[i]))
      return 1;
  for (i = 0; i < n->list2.n; i++)
    if (contains_loop(n->list2.v[i]))
      return 1;
  return 0;
}

/* Does the loop body declare or assign `name`? */
static int touches(const ast_node *n, const char *name) {
  int i;
  if (n == NULL)
    return 0;
  if (n->kind == AST_LOCAL)
    for (i = 0; i < n->list.n; i++)
      if (strcmp(n->list.v[i]->str, name) == 0)
        return 1;
  if (n->kind == AST_ASSIGN)
    for (i = 0; i < n->list.n; i++)
      if (n->list.v[i]->kind == AST_NAME &&
          strcmp(n->list.v[i]->str, name) == 0)
        return 1;
  if (touches(n->a, name) || touches(n->b, name) || touches(n->c, name) ||
      touches(n->d, name))
    return 1;
  for (i = 0; i < n->list.n; i++)
    if (touches(n->list.v[i], name))
      return 1;
  for (i = 0; i < n->list2.n; i++)
    if (touches(n->list2.v[i], name))
      return 1;
  return 0;
}

static int is_var(const ast_node *e, const char *name) {
  return e->kind == AST_NAME && strcmp(e->str, name) == 0;
}

/* Subscripts `k`, `k + c`, `c + k`, `k - c` (c a small integer literal)
 * of accesses in the loop body. */
static void find_keys(gen *g, const ast_node *n, const char *k) {
  int i;
  if (n == NULL)
    return;
  if (n->kind == AST_INDEX && !n->flag) {
    const ast_node *s = n->b;
    int ok = is_var(s, k);
    if (s->kind == AST_BINOP && (s->op == OP_ADD || s->op == OP_SUB)) {
      const ast_node *lit = NULL;
      if (is_var(s->a, k) && s->b->kind == AST_INT)
        lit = s->b;
      else if (s->op == OP_ADD && is_var(s->b, k) && s->a->kind == AST_INT)
        lit = s->a;
      ok = lit != NULL && lit->ival > -(INT64_C(1) << 31) &&
           lit->ival < (INT64_C(1) << 31);
    }
    if (ok) {
      const ast_node **v = amalloc(g, sizeof *v * (size_t)(g->nhnodes + 1));
      if (g->nhnodes > 0)
        memcpy(v, g->hnodes, sizeof *v * (size_t)g->nhnodes);
      v[g->nhnodes++] = s;
      g->hnodes = v;
    }
  }
  find_keys(g, n->a, k);
  find_keys(g, n->b, k);
  find_keys(g, n->c, k);
  find_keys(g, n->d, k);
  for (i = 0; i < n->list.n; i++)
    find_keys(g, n->list.v[i], k);
  for (i = 0; i < n->list2.n; i++)
    find_keys(g, n->list2.v[i], k);
}

/* The body of a numeric for: declares the control variable from the C
 * expression `val` and runs the block. */
static void for_body(gen *g, const ast_node *s, var *x, cv val) {
  open_(g, "");
  var_join(g, x, val.t, s->line);
  E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname, conv(g, val, x->t));
  x->da = 1;
  push_var(g, x);
  stmts(g, &s->d->list);
  g->nsc--;
  close_(g);
}

/* An integer loop (Lua 5.4's forprep/forloop): the count of iterations
 * is computed first, so the control variable never overflows. */
static void int_loop(gen *g, const ast_node *s, var *x, cv init, cv lim,
                     cv step, int n) {
  const char *i0 = S(g, "o_i%d", n), *st = S(g, "o_st%d", n),
             *li = S(g, "o_li%d", n), *cnt = S(g, "o_n%d", n),
             *tt = S(g, "o_t%d", n);
  int kstep = step.isk, hoist;
  int64_t sv = step.k.i;
  E(g, "O_U const int64_t %s = %s;", i0, init.s);
  E(g, "O_U const int64_t %s = %s;", st, step.s);
  E(g, "O_U int64_t %s = 0;", li);
  if (!kstep || sv == 0)
    fail(g, S(g, "%s == 0", st),
         S(g, "o_err(c, %d, \"'for' step is zero\")", s->line));
  if (lim.t.m == M_INT) {
    E(g, "%s = %s;", li, lim.s);
    if (kstep)
      open_(g, S(g, "if (%s %s %s) ", i0, sv > 0 ? "<=" : ">=", li));
    else
      open_(g, S(g, "if (%s > 0 ? %s <= %s : %s >= %s) ", st, i0, li, i0, li));
  } else if (lim.t.m == M_FLT) {
    open_(g,
          S(g, "if (!o_forlimit(%s, %s, %s, &%s)) ", i0, as_d(g, lim), st, li));
  } else {
    open_(g, S(g,
               "if (%s.t == 3 ? (%s = %s.i, %s > 0 ? %s <= %s : "
               "%s >= %s) : !o_forlimit(%s, %s.d, %s, &%s)) ",
               lim.s, li, lim.s, st, i0, li, i0, li, i0, lim.s, st, li));
  }
  E(g, "O_U const uint64_t %s = %s;", cnt,
    kstep && sv == 1 ? S(g, "(uint64_t)%s - (uint64_t)%s", li, i0)
                     : S(g, "o_forcount(%s, %s, %s)", i0, li, st));
  hoist = g->emit && g->hk == NULL && !contains_loop(s->d) &&
          !touches(s->d, x->name) && x->t.k == T_VAL && x->t.m == M_INT;
  if (hoist) {
    const char *saved_suffix = g->suffix;
    orion_buf *fastb = tmpbuf(g), *saved = g->o;
    int ind = g->ind, i;
    dastate mid = da_save(g);
    g->hk = x->name;
    g->nhnodes = 0;
    g->hnodes = NULL;
    g->nhconds = 0;
    find_keys(g, s->d, x->name);
    g->hfast = 1;
    g->suffix = S(g, "%s_f%d", saved_suffix, n);
    g->o = fastb;
    g->ind++;
    open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
    g->ind = ind;
    g->o = saved;
    g->hfast = 0;
    g->hk = NULL;
    g->suffix = saved_suffix;
    da_restore(g, mid);
    if (fastb->oom)
      oom(g);
    if (g->nhconds > 0) {
      orion_buf *cond = tmpbuf(g);
      for (i = 0; i < g->nhconds; i++) {
        const char *lo = S(g, "%" PRId64, 1 - g->hconds[i].off);
        const char *hi =
            g->hconds[i].off == 0
                ? g->hconds[i].dim
                : S(g, "%s - %" PRId64, g->hconds[i].dim, g->hconds[i].off);
        const char *up = S(g, "%s >= %s && %s <= %s", i0, lo, li, hi);
        const char *down = S(g, "%s >= %s && %s <= %s", li, lo, i0, hi);
        const char *c1 = kstep ? (sv > 0 ? up : down)
                               : S(g, "(%s > 0 ? (%s) : (%s))", st, up, down);
        if (i > 0)
          orion_buf_append(cond, " && ", 4);
        orion_buf_append(cond, "(", 1);
        orion_buf_append(cond, c1, strlen(c1));
        orion_buf_append(cond, ")", 1);
      }
      orion_buf_append(cond, "", 1);
      if (cond->oom)
        oom(g);
      E(g, "/* The subscripts of the loop variable are in range for the "
           "whole loop. */");
      open_(g, S(g, "if %s ", cond_of(g, cond->data)));
      orion_buf_free(cond);
      orion_buf_append(g->o, fastb->data, fastb->len);
      close_(g);
      open_(g, "else ");
      g->suffix = S(g, "%s_s%d", saved_suffix, n);
    }
    orion_buf_free(fastb);
    open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
    if (g->nhconds > 0) {
      close_(g);
      g->suffix = saved_suffix;
    }
  } else {
    open_(g, S(g, "for (uint64_t %s = 0; %s <= %s; %s++) ", tt, tt, cnt, tt));
    for_body(g, s, x,
             cv_of(ty_val(M_INT, P_WEAK),
                   S(g, "(int64_t)((uint64_t)%s + %s%s)", i0, tt,
                     kstep && sv == 1 ? "" : S(g, " * (uint64_t)%s", st)),
                   0));
    close_(g);
  }
  close_(g);
}

/* A float loop: every control value converted to a float. */
static void flt_loop(gen *g, const ast_node *s, var *x, cv init, cv lim,
                     cv step, int n) {
  const char *f0 = S(g, "o_f%d", n), *fl = S(g, "o_fl%d", n),
             *fs = S(g, "o_fs%d", n), *fx = S(g, "o_x%d", n);
  E(g, "O_U const double %s = %s, %s = %s, %s = %s;", fl, as_d(g, lim), fs,
    as_d(g, step), f0, as_d(g, init));
  fail(g, S(g, "%s == 0", fs),
       S(g, "o_err(c, %d, \"'for' step is zero\")", s->line));
  open_(g, S(g, "if (0 < %s ? !(%s < %s) : !(%s < %s)) ", fs, fl, f0, f0, fl));
  open_(g, S(g, "for (double %s = %s;;) ", fx, f0));
  for_body(g, s, x, cv_of(ty_val(M_FLT, P_WEAK), fx, 1));
  E(g, "%s += %s;", fx, fs);
  E(g, "if (!(0 < %s ? %s <= %s : %s <= %s)) break;", fs, fx, fl, fl, fx);
  close_(g);
  close_(g);
}

static void numfor(gen *g, const ast_node *s) {
  cv init = ex(g, s->a), lim = ex(g, s->b), step;
  var *x = get_var(g, s->list.v[0]);
  dastate before;
  lval one;
  int n = ++g->tmp;
  memset(&one, 0, sizeof one);
  one.m = M_INT;
  one.i = 1;
  step = s->c != NULL ? ex(g, s->c) : cv_k(g, one);
  init = mat(g, init);
  lim = mat(g, lim);
  step = mat(g, step);
  if (init.t.k == T_NONE || lim.t.k == T_NONE || step.t.k == T_NONE) {
    before = da_save(g);
    for_body(g, s, x, cv_none());
    da_restore(g, before);
    return;
  }
  numeric(g, init, s->line, "a 'for' initial value of");
  numeric(g, lim, s->line, "a 'for' limit of");
  numeric(g, step, s->line, "a 'for' step of");
  savepc(g, s->line);
  before = da_save(g);
  open_(g, "");
  if (init.t.m == M_INT && step.t.m == M_INT) {
    int_loop(g, s, x, init, lim, step, n);
  } else if (!isdyn(init.t) && !isdyn(step.t)) {
    flt_loop(g, s, x, init, lim, step, n);
  } else {
    /* An integer loop or a float loop, as the values turn out. */
    const char *saved = g->suffix;
    int canint = (init.t.m & M_INT) && (step.t.m & M_INT);
    if (canint) {
      cv ii = init, si = step;
      if (isdyn(ii.t))
        ii = cv_of(ty_val(M_INT, P_WEAK), S(g, "%s.i", init.s), 1);
      if (isdyn(si.t))
        si = cv_of(ty_val(M_INT, P_WEAK), S(g, "%s.i", step.s), 1);
      open_(g, S(g, "if (%s && %s) ",
                 isdyn(init.t) ? S(g, "%s.t == 3", init.s) : "1",
                 isdyn(step.t) ? S(g, "%s.t == 3", step.s) : "1"));
      g->suffix = S(g, "%s_i%d", saved, n);
      int_loop(g, s, x, ii, lim, si, n);
      close_(g);
      open_(g, "else ");
    }
    g->suffix = S(g, "%s_f%d", saved, n);
    flt_loop(g, s, x, init, lim, step, n);
    g->suffix = saved;
    if (canint)
      close_(g);
  }
  close_(g);
  da_restore(g, before);
}

static void while_(gen *g, const ast_node *s) {
  dastate before = da_save(g);
  cv c;
  open_(g, "for (;;) ");
  c = ex(g, s->a);
  E(g, "if (!%s) break;", truth(g, c));
  block(g, s->b);
  close_(g);
  da_restore(g, before);
}

static void repeat_(gen *g, const ast_node *s) {
  dastate before = da_save(g);
  blkframe f;
  int base = g->nsc, i;
  cv c;
  open_(g, "for (;;) ");
  /* The condition sees the body's locals: one scope for both. */
  f.stmts = &s->a->list;
  f.suffix = g->suffix;
  f.up = g->blk;
  g->blk = &f;
  for (i = 0; i < s->a->list.n; i++) {
    if (s->a->list.v[i]->kind == AST_LABEL)
      da_restore(g, before);
    stmt(g, s->a->list.v[i]);
  }
  c = ex(g, s->b);
  E(g, "if %s break;", cond_of(g, truth(g, c)));
  g->blk = f.up;
  g->nsc = base;
  close_(g);
  da_restore(g, before);
}

/* if / elseif / else.  A clause runs where the earlier conditions were
 * false and its own is true: the locals they test are narrowed there. */
static void if_(gen *g, const ast_node *s) {
  dastate before = da_save(g), after = da_dead();
  int i, j, opened = 0, nar = g->nnar;
  for (i = 0; i < s->list.n; i++) {
    cv c;
    for (j = 0; j < i; j++)
      narrow(g, s->list.v[j], 0, NULL);
    c = ex(g, s->list.v[i]);
    g->nnar = nar;
    open_(g, S(g, "if %s ", cond_of(g, truth(g, c))));
    for (j = 0; j < i; j++)
      narrow(g, s->list.v[j], 0, s->list2.v[i]);
    narrow(g, s->list.v[i], 1, s->list2.v[i]);
    stmts(g, &s->list2.v[i]->list);
    g->nnar = nar;
    close_(g);
    da_meet(g, &after);
    da_restore(g, before);
    open_(g, "else ");
    opened++;
  }
  if (s->c != NULL) {
    for (j = 0; j < s->list.n; j++)
      narrow(g, s->list.v[j], 0, s->c);
    stmts(g, &s->c->list);
    g->nnar = nar;
  }
  da_meet(g, &after);
  for (i = 0; i < opened; i++)
    close_(g);
  da_restore(g, after);
}

static void stmt(gen *g, const ast_node *s) {
  switch (s->kind) {
  case AST_LOCAL:
    local_(g, s);
    break;
  case AST_ASSIGN:
    assign(g, s);
    break;
  case AST_CALLSTAT:
    (void)exn(g, s->a, NULL, 0);
    break;
  case AST_DO:
    block(g, s->a);
    break;
  case AST_WHILE:
    while_(g, s);
    break;
  case AST_REPEAT:
    repeat_(g, s);
    break;
  case AST_IF:
    if_(g, s);
    break;
  case AST_NUMFOR:
    numfor(g, s);
    break;
  case AST_GENFOR:
    refuse(g, s->line, "a generic 'for' loop");
  case AST_FUNCSTAT:
  case AST_LOCALFUNC:
    refuse(g, s->line, "a function definition");
  case AST_RETURN:
    return_(g, s);
    break;
  case AST_BREAK:
    E(g, "break;");
    g->dead = 1;
    break;
  case AST_GOTO:
    goto_(g, s);
    break;
  case AST_LABEL:
    E(g, "o_L%d%s: O_U;", label_id(g, s), g->blk->suffix);
    break;
  case AST_SEMI:
    break;
  default:
    refuse(g, s->line, "a %s statement", ast_kind_name(s->kind));
  }
}

/* ======================================================================
 * The body and the function around it.
 * ====================================================================== */

/* Can the body raise integer `//` or `%` by zero?  (Those errors report
 * the VM's last saved line, which the generated code then tracks.) */
static int needs_pc(const ast_node *n) {
  int i;
  if (n == NULL)
    return 0;
  if (n->kind == AST_BINOP && (n->op == OP_IDIV || n->op == OP_MOD)) {
    const ast_node *b = n->b;
    while (b->kind == AST_PAREN)
      b = b->a;
    if (!((b->kind == AST_INT && b->ival != 0) || b->kind == AST_FLT))
      return 1;
  }
  if (needs_pc(n->a) || needs_pc(n->b) || needs_pc(n->c) || needs_pc(n->d))
    return 1;
  for (i = 0; i < n->list.n; i++)
    if (needs_pc(n->list.v[i]))
      return 1;
  for (i = 0; i < n->list2.n; i++)
    if (needs_pc(n->list2.v[i]))
      return 1;
  return 0;
}

/* One walk over the body: declares the parameters from the element and
 * runs the statements. */
static void walk(gen *g) {
  const ast_node *f = g->in->func;
  const orion_arrayinfo *it = &g->in->iter;
  int i, nk = it->ndims;
  g->nsc = 0;
  g->blk = NULL;
  g->tmp = 0;
  g->dead = 0;
  g->suffix = "";
  g->ind = 2;
  g->hk = NULL;
  g->hfast = 0;
  g->nnar = 0;
  for (i = 0; i < g->nvars; i++)
    g->vars[i]->da = 0;
  for (i = 0; i < f->params.n; i++) {
    const ast_node *p = f->params.v[i];
    var *x = get_var(g, p);
    cv val;
    if (i < nk) {
      val = cv_of(ty_val(M_INT, P_WEAK),
                  it->sparse ? S(g, "(IT_k[o_e * %d + %d] + 1)", nk, i)
                             : S(g, "(o_k%d + 1)", i),
                  0);
    } else if (i == nk) {
      switch (it->type) {
      case ET_F32:
        val = cv_of(ty_val(M_FLT, P_F32),
                    g->fast ? "IT_v[o_e]" : "((double)IT_v[o_e])", 0);
        break;
      case ET_F64:
        val = cv_of(ty_val(M_FLT, P_F64), "IT_v[o_e]", 0);
        break;
      case ET_I32:
        val = cv_of(ty_val(M_INT, P_WEAK), "((int64_t)IT_v[o_e])", 0);
        break;
      default:
        val = cv_of(ty_val(M_INT, P_WEAK), "IT_v[o_e]", 0);
        break;
      }
    } else {
      val = cv_nil(g);
    }
    var_join(g, x, val.t, p->line);
    if (x->t.k == T_VAL)
      E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname, conv(g, val, x->t));
    x->da = 1;
    push_var(g, x);
  }
  stmts(g, &f->a->list);
}

static void lines(gen *g, const char *const *l) {
  for (; *l != NULL; l++) {
    put(g, *l);
    put(g, "\n");
  }
}

/* " || ..." testing that a dense iterated array is row-major and
 * contiguous (its keys are then counted, not divided out). */
static const char *rowmajor(gen *g, const orion_arrayinfo *it) {
  const char *r;
  int d;
  if (it->sparse)
    return "";
  r = S(g, " || IT_s%d != 1", it->ndims - 1);
  for (d = it->ndims - 2; d >= 0; d--)
    r = S(g, "%s || IT_s%d != IT_s%d * IT_d%d", r, d, d + 1, d + 1);
  return r;
}

/* The generated source: prelude, messages, and the function. */
static void assemble(gen *g, const orion_buf *body) {
  const orion_arrayinfo *it = &g->in->iter;
  const char *w;
  int i, d;
  g->o = &g->out->src;
  g->ind = 0;
  E(g,
    "/* Generated by Orion-C from a parallel_for body (%s:%d, %s mode). "
    "*/",
    g->in->chunkname, g->line0, g->fast ? "fast" : "exact");
  E(g, "#define O_EXACT %d", g->fast ? 0 : 1);
  lines(g, prelude_a);
  E(g, "static const char o_chunk[] = %s;", cstr(g, g->in->chunkname));
  lines(g, prelude_b);
  put(g, "\n");
  for (i = 0; i < g->nslots; i++) {
    const slot *s = &g->slots[i];
    const char *kind = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    if (s->kind != ORION_CSLOT_ARRAY && s->kind != ORION_CSLOT_BUFFER)
      continue;
    E(g, "static O_U const char o_w%d[] = %s;", i,
      cstr(g, S(g, "%s '%.63s'", kind, s->name)));
    E(g, "static O_U const char o_t%d[] = %s;", i,
      cstr(g, S(g, "%s %s '%.63s'", etype_name(s->etype), kind, s->name)));
  }
  w = "the iterated array (returned value)";
  E(g, "static O_U const char o_wr[] = %s;", cstr(g, S(g, "array '%s'", w)));
  E(g, "static O_U const char o_tr[] = %s;",
    cstr(g, S(g, "%s array '%s'", etype_name(it->type), w)));
  put(g, "\n");
  open_(g, "int orion_cbody_run(orion_cctx *c, int64_t lo, int64_t hi) ");
  E(g, "int o_rc = 0;");
  if (g->pctrack)
    E(g, "O_U int o_pc = %d;", g->line0);
  E(g, "int (*const o_ed)(orion_cctx *) = c->elem_done;");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ACC)
      E(g, "o_acc %s = o_acc_load(&c->accs[%d]);", g->slots[i].pfx,
        g->slots[i].idx);
  if (g->userand) {
    E(g, "uint64_t o_rs[4];");
    E(g, "memcpy(o_rs, c->rng, sizeof o_rs);");
  }
  /* The iterated array. */
  E(g, "O_U %s *const IT_v = (%s *)c->iter.values;", etype_c(it->type),
    etype_c(it->type));
  E(g, "O_U const int64_t *const IT_k = c->iter.keys;");
  for (d = 0; d < it->ndims; d++)
    E(g,
      "O_U const int64_t IT_d%d = c->iter.dims[%d], IT_s%d = "
      "c->iter.strides[%d];",
      d, d, d, d);
  fail(g,
       S(g,
         "c->iter.type != %d || c->iter.ndims != %d || "
         "(c->iter.keys == NULL) != %d%s",
         it->type, it->ndims, !it->sparse, rowmajor(g, it)),
       S(g, "o_err(c, %d, %s)", -g->line0,
         cstr(g, S(g,
                   "compiled body: the iterated array is not the %s %d-D "
                   "%s array the body was compiled for",
                   it->sparse ? "sparse" : "dense", it->ndims,
                   etype_name(it->type)))));
  for (i = 0; i < g->nslots; i++) {
    const slot *s = &g->slots[i];
    const char *p = s->pfx;
    switch (s->kind) {
    case ORION_CSLOT_ARRAY:
      E(g, "O_U %s *const %s_v = (%s *)c->arrays[%d].values;",
        etype_c(s->etype), p, etype_c(s->etype), s->idx);
      for (d = 0; d < s->ndims; d++)
        E(g,
          "O_U const int64_t %s_d%d = c->arrays[%d].dims[%d], %s_s%d = "
          "c->arrays[%d].strides[%d];",
          p, d, s->idx, d, p, d, s->idx, d);
      fail(g,
           S(g,
             "c->arrays[%d].type != %d || c->arrays[%d].ndims != %d "
             "|| c->arrays[%d].keys != NULL || %s_s%d != 1",
             s->idx, s->etype, s->idx, s->ndims, s->idx, p, s->ndims - 1),
           S(g, "o_err(c, %d, %s)", -g->line0,
             cstr(g, S(g,
                       "compiled body: array '%.63s' is not the dense "
                       "row-major %d-D %s array the body was compiled for",
                       s->name, s->ndims, etype_name(s->etype)))));
      break;
    case ORION_CSLOT_BUFFER:
      E(g, "O_U void *const %s_h = c->bufs[%d].h;", p, s->idx);
      E(g, "O_U const int32_t %s_op = c->bufs[%d].op;", p, s->idx);
      for (d = 0; d < s->ndims; d++)
        E(g,
          "O_U const int64_t %s_d%d = c->bufs[%d].dims[%d], %s_s%d = "
          "c->bufs[%d].strides[%d];",
          p, d, s->idx, d, p, d, s->idx, d);
      fail(g,
           S(g, "c->bufs[%d].type != %d || c->bufs[%d].ndims != %d", s->idx,
             s->etype, s->idx, s->ndims),
           S(g, "o_err(c, %d, %s)", -g->line0,
             cstr(g, S(g,
                       "compiled body: buffer '%.63s' does not write into "
                       "the %d-D %s array the body was compiled for",
                       s->name, s->ndims, etype_name(s->etype)))));
      break;
    case ORION_CSLOT_CONST:
      if (s->isint)
        E(g, "O_U const int64_t %s = c->consts[%d].i;", p, s->idx);
      else
        E(g, "O_U const double %s = c->consts[%d].d;", p, s->idx);
      break;
    default:
      break;
    }
  }
  if (!it->sparse) {
    /* A dense array's keys, kept as counters (0-based) from lo on. */
    for (d = 0; d < it->ndims; d++)
      E(g, "int64_t o_k%d = 0;", d);
    open_(g, "if (lo < hi) ");
    for (d = 0; d < it->ndims; d++)
      E(g, "o_k%d = (lo / IT_s%d) %% IT_d%d;", d, d, d);
    close_(g);
  }
  open_(g, "for (int64_t o_e = lo; o_e < hi; o_e++) ");
  E(g, "c->cur = o_e;");
  if (g->pctrack)
    E(g, "o_pc = %d;", g->line0);
  orion_buf_append(g->o, body->data, body->len);
  E(g, "o_next: O_U;");
  if (!it->sparse) {
    for (d = it->ndims - 1; d > 0; d--) {
      open_(g, S(g, "if (++o_k%d == IT_d%d) ", d, d));
      E(g, "o_k%d = 0;", d);
    }
    E(g, "++o_k0;");
    for (d = it->ndims - 1; d > 0; d--)
      close_(g);
  }
  open_(g, "if (o_ed != NULL) ");
  E(g, "const int o_r = o_ed(c);");
  E(g, "if (O_NO(o_r != 0)) { o_rc = o_r; goto o_out; }");
  close_(g);
  close_(g);
  E(g, "o_out: O_U;");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ACC)
      E(g, "o_acc_save(&c->accs[%d], &%s);", g->slots[i].idx, g->slots[i].pfx);
  if (g->userand)
    E(g, "memcpy(c->rng, o_rs, sizeof o_rs);");
  E(g, "return o_rc;");
  close_(g);
  orion_buf_append(g->o, "", 1); /* NUL, not counted */
  g->o->len--;
}

static void free_gen(gen *g) {
  int i;
  for (i = 0; i < g->nbufs; i++)
    orion_buf_free(g->bufs[i]);
  orion_free(g->bufs);
  while (g->arena != NULL) {
    arena_blk *b = g->arena;
    g->arena = b->next;
    orion_free(b);
  }
  orion_free(g->fn);
  orion_free(g->slots);
  orion_free(g->vars);
  orion_free(g->sc);
  orion_free(g->labels);
  orion_free(g->hconds);
  orion_free(g->nar);
  orion_free(g->up);
  orion_free(g);
}

int orion_cgen(const orion_cgen_in *in, orion_cgen_out *out, orion_error *err) {
  gen *g;
  int pass, i, rc;
  memset(out, 0, sizeof *out);
  orion_buf_init(&out->src);
  if (in == NULL || in->func == NULL || in->func->kind != AST_FUNC ||
      in->chunkname == NULL || in->iter.ndims < 1 ||
      in->iter.ndims > ORION_CBODY_MAXDIMS || in->iter.type < 0 ||
      in->iter.type > 3)
    return orion_error_set(err, ORION_EINVAL,
                           "orion_cgen: no body, chunk name or iterated "
                           "array shape");
  g = orion_calloc(1, sizeof *g);
  if (g == NULL)
    return orion_error_set(err, ORION_ENOMEM, "orion_cgen: out of memory");
  g->in = in;
  g->out = out;
  g->fast = in->fast != 0;
  g->line0 = in->func->line;
  g->pctrack = needs_pc(in->func->a);
  orion_buf_init(&g->body);
  orion_buf_init(&g->scratch);
  /* Refusals and out of memory longjmp back here; everything the walk
   * allocates hangs off g. */
  if (setjmp(g->jb) == 0) {
    if (in->chunk != NULL && up_walk(g, in->chunk, in->func))
      g->haveup = 1;
    for (pass = 0;; pass++) {
      if (pass == 100)
        refuse(g, g->line0, "types that do not settle");
      orion_buf_free(&g->scratch);
      g->o = &g->scratch;
      g->emit = 0;
      g->changed = 0;
      walk(g);
      if (!g->changed)
        break;
    }
    g->o = &g->body;
    g->emit = 1;
    walk(g);
    if (g->body.oom || g->scratch.oom)
      oom(g);
    assemble(g, &g->body);
    if (out->src.oom)
      oom(g);
    out->slots = orion_calloc((size_t)g->nslots + 1, sizeof *out->slots);
    if (out->slots == NULL)
      oom(g);
    for (i = 0; i < g->nslots; i++) {
      const slot *s = &g->slots[i];
      orion_cslot *o = &out->slots[i];
      o->kind = s->kind;
      o->name = orion_strdup(s->name);
      if (o->name == NULL)
        oom(g);
      out->nslots = i + 1;
      o->id = s->kind == ORION_CSLOT_CONST ? 0 : s->id;
      o->isint = s->isint;
      o->ival = s->ival;
      o->fval = s->fval;
    }
    rc = 0;
  } else {
    rc = g->rc;
  }
  orion_buf_free(&g->body);
  orion_buf_free(&g->scratch);
  free_gen(g);
  if (rc == ORION_EUNSUPPORTED)
    orion_error_set(err, rc, "outside the compiled subset: %s", out->why);
  else if (rc != 0)
    orion_error_set(err, rc, "orion_cgen: out of memory");
  return rc;
}

void orion_cgen_out_free(orion_cgen_out *out) {
  int i;
  if (out == NULL)
    return;
  orion_buf_free(&out->src);
  for (i = 0; i < out->nslots; i++)
    orion_free(out->slots[i].name);
  orion_free(out->slots);
  out->slots = NULL;
  out->nslots = 0;
}

const char *orion_cgen_mode_flags(int fast) {
  return fast ? "-ffp-contract=fast -fno-math-errno -fno-signed-zeros "
                "-fno-trapping-math -fassociative-math -fno-finite-math-only"
              : "-ffp-contract=off -fno-fast-math -fno-math-errno";
}
