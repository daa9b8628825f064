/* The prelude of every C source the code generator writes (analysis/cgen.c
 * assembles it after `#define O_EXACT 0|1` and the chunk name o_chunk).
 * No file of the project includes this header: the build turns it into
 * the string array of analysis/cgen_prelude.inc (analysis/mkprelude.awk),
 * replacing each include of a project header below by the part of that
 * header marked ORION_PRELUDE_BEGIN ... ORION_PRELUDE_END.  So the
 * generated source needs system headers only (it is compiled on executor
 * hosts that may not have the project's headers) and still has one copy
 * of the compiled-body ABI (util/cbody.h), of Lua's arithmetic
 * (util/luaops.h) and of its random generator (util/luarand.h).  What is
 * here is the rest of the run time of a compiled body: values whose type
 * is known only at run time, math library results, accumulators, the
 * math.random calls and error messages.
 *
 * One source, two targets.  Built with the C compiler, ORION_GPU_BODY is 0
 * and the source is the CPU body of util/cbody.h.  Built with nvcc
 * (`-x cu -DORION_GPU_BODY=1`, util/ccomp.c's orion_cobj_build_cuda) the
 * same element code becomes a __device__ function (o_gbody) run by one
 * device thread per group, and the part at the end of this file adds the
 * entry points of util/gbody.h: the kernel, orion_gbody_run, and the error
 * records the device writes instead of messages (the host formats them
 * with the same o_err* functions afterwards, so the texts are the CPU's).
 * O_HD marks what both sides call (__host__ __device__ under nvcc).
 *
 * Exactness on the device (exact mode, -fmad=false, IEEE division and
 * square root): + - * /, sqrt, fabs, floor, ceil, fmod and every integer
 * operation give the CPU's bits.  exp, log, log2, log10, pow (but x^2),
 * sin, cos, tan, asin, acos and atan2 come from libdevice, whose results
 * may differ from glibc's by an ulp or two: bodies using them are within
 * a tolerance on the device, not bit-identical.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ORION_GPU_BODY
#define ORION_GPU_BODY 0
#endif
#if ORION_GPU_BODY
#define O_HD __host__ __device__
#define O_DV __device__
#else
#define O_HD
#define O_DV
#endif
#define O_U __attribute__((unused))
#define O_I static inline __attribute__((unused)) O_HD
#define O_NO(x) __builtin_expect(!!(x), 0)
#define ORION_LUAOP_HD O_HD
#define ORION_LUARAND_HD O_HD
#define ORION_GBODY_HD O_HD

/* In exact mode the compiler must not fold a transcendental function of
 * a constant: it would round exactly where the C library, which the
 * interpreter calls, may not.  (The device's libdevice is within a
 * tolerance anyway.) */
#if O_EXACT
O_I double o_opq(double x) {
#ifndef __CUDA_ARCH__
  __asm__("" : "+m"(x));
#endif
  return x;
}
#else
O_I double o_opq(double x) { return x; }
#endif
#define ORION_LUAOP_OPAQUE(x) o_opq(x)

#include "util/cbody.h"
#include "util/luaops.h"
#include "util/luarand.h"

/* The loop deadline (util/cbody.h's poll): nonzero, c->err set, once the
 * block ran past it.  Called at each element and each back edge of a
 * loop; a device body has none. */
#if ORION_GPU_BODY
#define o_poll(c) 0
#else
O_I int o_poll(orion_cctx *c) {
  return O_NO(--c->poll_left < 0) && c->poll != NULL && c->poll(c) != 0;
}
#endif

/* A value whose type is known only at run time: t is 0 nil, 1 false,
 * 2 true, 3 integer (i), 4 float (d). */
typedef struct o_v {
  int64_t i;
  double d;
  int t;
} o_v;
O_I o_v o_vi(int64_t i) {
  o_v v;
  v.t = 3;
  v.i = i;
  v.d = 0;
  return v;
}
O_I o_v o_vf(double d) {
  o_v v;
  v.t = 4;
  v.i = 0;
  v.d = d;
  return v;
}
O_I o_v o_vb(int b) {
  o_v v;
  v.t = b ? 2 : 1;
  v.i = 0;
  v.d = 0;
  return v;
}
O_I o_v o_vnil(void) {
  o_v v;
  v.t = 0;
  v.i = 0;
  v.d = 0;
  return v;
}
O_I double o_vn(o_v v) { return v.t == 3 ? (double)v.i : v.d; }

/* Lua's operators on run-time values (both numbers). */
O_I int o_vlt(o_v a, o_v b) {
  if (a.t == 3)
    return b.t == 3 ? a.i < b.i : orion_lua_lt_if(a.i, b.d);
  return b.t == 4 ? a.d < b.d : orion_lua_lt_fi(a.d, b.i);
}
O_I int o_vle(o_v a, o_v b) {
  if (a.t == 3)
    return b.t == 3 ? a.i <= b.i : orion_lua_le_if(a.i, b.d);
  return b.t == 4 ? a.d <= b.d : orion_lua_le_fi(a.d, b.i);
}
O_I int o_veq(o_v a, o_v b) {
  if (a.t >= 3 && b.t >= 3) {
    if (a.t == b.t)
      return a.t == 3 ? a.i == b.i : a.d == b.d;
    return a.t == 3 ? orion_lua_eq_if(a.i, b.d) : orion_lua_eq_if(b.i, a.d);
  }
  return a.t == b.t;
}
O_I o_v o_vadd(o_v a, o_v b) {
  return a.t == 3 && b.t == 3 ? o_vi(orion_lua_iadd(a.i, b.i))
                              : o_vf(o_vn(a) + o_vn(b));
}
O_I o_v o_vsub(o_v a, o_v b) {
  return a.t == 3 && b.t == 3 ? o_vi(orion_lua_isub(a.i, b.i))
                              : o_vf(o_vn(a) - o_vn(b));
}
O_I o_v o_vmul(o_v a, o_v b) {
  return a.t == 3 && b.t == 3 ? o_vi(orion_lua_imul(a.i, b.i))
                              : o_vf(o_vn(a) * o_vn(b));
}
O_I o_v o_vneg(o_v a) {
  return a.t == 3 ? o_vi(orion_lua_iunm(a.i)) : o_vf(-a.d);
}
O_I o_v o_vabs(o_v a) {
  return a.t == 3 ? o_vi(a.i < 0 ? orion_lua_iunm(a.i) : a.i)
                  : o_vf(fabs(a.d));
}

/* `%` on f32 data in fast mode (orion_lua_fmod in single precision). */
O_I float o_fmodf(float a, float b) {
  float m = fmodf(a, b);
  if ((m > 0) ? b < 0 : (m < 0 && b > 0))
    m += b;
  return m;
}

/* math.floor/ceil's result: an integer when the float fits. */
O_I o_v o_numint(double d) {
  return orion_lua_ffits(d) ? o_vi((int64_t)d) : o_vf(d);
}

/* Accumulators (executor/accum.c). */
typedef struct o_acc {
  int32_t op, has, isint;
  int64_t i;
  double d;
} o_acc;
O_I o_acc o_acc_load(const orion_cacc *p) {
  o_acc a;
  a.op = p->op;
  a.has = p->has;
  a.isint = p->isint;
  a.i = p->i;
  a.d = p->d;
  return a;
}
O_I void o_acc_save(orion_cacc *p, const o_acc *a) {
  p->has = a->has;
  p->isint = a->isint;
  p->i = a->i;
  p->d = a->d;
}
O_I void o_acc_addf(o_acc *a, double x) {
  double cur;
  if (!a->has) {
    a->has = 1;
    a->isint = 0;
    a->d = x;
    return;
  }
  cur = a->isint ? (double)a->i : a->d;
  a->isint = 0;
  switch (a->op) {
  case 0:
    a->d = cur + x;
    break;
  case 1:
    a->d = x < cur || cur != cur ? x : cur;
    break;
  case 2:
    a->d = x > cur || cur != cur ? x : cur;
    break;
  default:
    break;
  }
}
O_I void o_acc_addi(o_acc *a, int64_t x) {
  if (!a->has) {
    a->has = 1;
    a->isint = 1;
    a->i = x;
  } else if (a->isint) {
    switch (a->op) {
    case 0:
      a->i = orion_lua_iadd(a->i, x);
      break;
    case 1:
      if (x < a->i)
        a->i = x;
      break;
    case 2:
      if (x > a->i)
        a->i = x;
      break;
    default:
      break;
    }
  } else {
    o_acc_addf(a, (double)x);
  }
}

/* math.random: util/luarand.h's steps (included above). */
#define o_rnext orion_luarand_step
#define o_rfloat orion_luarand_tofloat
#define o_rproject orion_luarand_project

/* Errors: the interpreter's first line, then a one-frame traceback.  A
 * negative line raises without a position (as the executor's own
 * checks of a returned value do). */
static __attribute__((cold, noinline)) O_U int
o_err(orion_cctx *c, int line, const char *msg) {
  if (line > 0)
    snprintf(c->err, sizeof c->err,
             "%s:%d: %s\nstack traceback:\n\t[compiled] %s:%d", o_chunk,
             line, msg, o_chunk, line);
  else
    snprintf(c->err, sizeof c->err,
             "%s\nstack traceback:\n\t[compiled] %s:%d", msg, o_chunk,
             -line);
  return 1;
}
static O_U void o_numstr(char *b, size_t n, double d) {
  int len = snprintf(b, n, "%.14g", d);
  if (len > 0 && (size_t)len + 3 <= n &&
      b[strspn(b, "-0123456789")] == 0) {
    b[len] = '.';
    b[len + 1] = '0';
    b[len + 2] = 0;
  }
}
static __attribute__((cold, noinline)) O_U int
o_err_index(orion_cctx *c, int line, const char *what, int64_t k,
            int64_t dim, int d) {
  char m[512];
  snprintf(m, sizeof m,
           "%s: index %lld out of range 1..%lld in dimension %d", what,
           (long long)k, (long long)dim, d);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_sub(orion_cctx *c, int line, const char *what, double x) {
  char m[512], n[64];
  o_numstr(n, sizeof n, x);
  snprintf(m, sizeof m, "%s: subscript %s is not an integer", what, n);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_notint(orion_cctx *c, int line, double x, const char *tail) {
  char m[512], n[64];
  o_numstr(n, sizeof n, x);
  snprintf(m, sizeof m, "cannot store %s in %s: not an integer", n,
           tail);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_range(orion_cctx *c, int line, int64_t v, const char *what) {
  char m[512];
  snprintf(m, sizeof m, "cannot store %lld in i32 %s: out of range",
           (long long)v, what);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_type(orion_cctx *c, int line, int t, const char *tail) {
  char m[512];
  snprintf(m, sizeof m, "cannot store a %s in %s",
           t == 0 ? "nil" : "boolean", tail);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_acc(orion_cctx *c, int line, int t) {
  char m[512];
  snprintf(m, sizeof m, "accumulator add: expected a number, got a %s",
           t < 0    ? "no value"
           : t == 0 ? "nil"
                    : "boolean");
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_noint(orion_cctx *c, int line, const char *vinfo) {
  char m[512];
  snprintf(m, sizeof m, "number%s has no integer representation",
           vinfo);
  return o_err(c, line, m);
}
static __attribute__((cold, noinline)) O_U int
o_err_arg(orion_cctx *c, int line, int arg, const char *fn,
          const char *msg) {
  char m[512];
  snprintf(m, sizeof m, "bad argument #%d to '%s' (%s)", arg, fn, msg);
  return o_err(c, line, m);
}

/* The device form (analysis/cgen.c leaves this block out unless asked,
 * by this exact line). */
#if defined(ORION_GPU_BODY) && ORION_GPU_BODY
#include "util/gbody.h"
#include "util/gclaim.h"
#include "analysis/cgen_prelude_gpu.h"
#endif
