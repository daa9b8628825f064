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

/* Accumulators (lua/accum.c). */
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

#if ORION_GPU_BODY
/* ---- The device side (nvcc only) ------------------------------------- */
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>
#include "util/gbody.h"

/* Lua divides by a constant zero as the body says (inf, nan). */
#pragma nv_diag_suppress 39

/* What the device records instead of a message: the kind (the o_err*
 * function), its operands, and the element.  The lowest group that fails
 * wins (atomicMin on group; the record is written under a lock by the
 * group that holds the minimum).  Lives at the start of the scratch. */
enum {
  O_GE_MSG = 1, O_GE_INDEX, O_GE_SUB, O_GE_NOTINT, O_GE_RANGE, O_GE_TYPE,
  O_GE_ACC, O_GE_NOINT, O_GE_ARG
};
#define O_GSTR 1000
typedef struct o_gerr {
  unsigned long long group; /* the lowest failing group; ~0: none */
  unsigned long long wgroup; /* the group whose record is written */
  int lock, kind, line, n1;
  long long cur, i1, i2;
  double x;
  char s1[O_GSTR], s2[O_GSTR];
} o_gerr;

/* One device thread's view of the block: what the element code reads
 * from c (the names are those of orion_cctx). */
typedef struct o_dctx {
  orion_carray iter;
  const orion_carray *arrays;
  const orion_cval *consts;
  orion_cacc *accs; /* this group's partials, in the scratch */
  int64_t cur;
  unsigned long long group;
  o_gerr *err;
} o_dctx;

static __device__ O_U void o_gstr(char *d, const char *s) {
  int i = 0;
  if (s != NULL)
    for (; i < O_GSTR - 1 && s[i] != 0; i++)
      d[i] = s[i];
  d[i] = 0;
}
static __device__ __noinline__ O_U int
o_gfail(o_dctx *c, int kind, int line, const char *s1, const char *s2,
        long long i1, long long i2, double x, int n1) {
  o_gerr *e = c->err;
  const unsigned long long g = c->group;
  if (atomicMin(&e->group, g) > g) {
    while (atomicCAS(&e->lock, 0, 1) != 0)
      ;
    __threadfence();
    if (*(volatile unsigned long long *)&e->group == g) {
      e->kind = kind;
      e->line = line;
      e->n1 = n1;
      e->cur = c->cur;
      e->i1 = i1;
      e->i2 = i2;
      e->x = x;
      o_gstr(e->s1, s1);
      o_gstr(e->s2, s2);
      e->wgroup = g;
    }
    __threadfence();
    atomicExch(&e->lock, 0);
  }
  return 1;
}
/* The device's o_err*: the same names and operands as the host's. */
static __device__ O_U int o_err(o_dctx *c, int line, const char *msg) {
  return o_gfail(c, O_GE_MSG, line, msg, NULL, 0, 0, 0, 0);
}
static __device__ O_U int o_err_index(o_dctx *c, int line, const char *what,
                                      int64_t k, int64_t dim, int d) {
  return o_gfail(c, O_GE_INDEX, line, what, NULL, k, dim, 0, d);
}
static __device__ O_U int o_err_sub(o_dctx *c, int line, const char *what,
                                    double x) {
  return o_gfail(c, O_GE_SUB, line, what, NULL, 0, 0, x, 0);
}
static __device__ O_U int o_err_notint(o_dctx *c, int line, double x,
                                       const char *tail) {
  return o_gfail(c, O_GE_NOTINT, line, tail, NULL, 0, 0, x, 0);
}
static __device__ O_U int o_err_range(o_dctx *c, int line, int64_t v,
                                      const char *what) {
  return o_gfail(c, O_GE_RANGE, line, what, NULL, v, 0, 0, 0);
}
static __device__ O_U int o_err_type(o_dctx *c, int line, int t,
                                     const char *tail) {
  return o_gfail(c, O_GE_TYPE, line, tail, NULL, 0, 0, 0, t);
}
static __device__ O_U int o_err_acc(o_dctx *c, int line, int t) {
  return o_gfail(c, O_GE_ACC, line, NULL, NULL, 0, 0, 0, t);
}
static __device__ O_U int o_err_noint(o_dctx *c, int line,
                                      const char *vinfo) {
  return o_gfail(c, O_GE_NOINT, line, vinfo, NULL, 0, 0, 0, 0);
}
static __device__ O_U int o_err_arg(o_dctx *c, int line, int arg,
                                    const char *fn, const char *msg) {
  return o_gfail(c, O_GE_ARG, line, fn, msg, 0, 0, 0, arg);
}
/* Another group failed: stop after the current element. */
static __device__ O_U int o_gstop(const o_dctx *c) {
  return *(volatile unsigned long long *)&c->err->group != ~0ull;
}

/* The host's message for a record: the CPU body's text. */
static O_U int o_gmsg(orion_cctx *c, const o_gerr *e) {
  switch (e->kind) {
  case O_GE_INDEX:
    return o_err_index(c, e->line, e->s1, e->i1, e->i2, e->n1);
  case O_GE_SUB:
    return o_err_sub(c, e->line, e->s1, e->x);
  case O_GE_NOTINT:
    return o_err_notint(c, e->line, e->x, e->s1);
  case O_GE_RANGE:
    return o_err_range(c, e->line, e->i1, e->s1);
  case O_GE_TYPE:
    return o_err_type(c, e->line, e->n1, e->s1);
  case O_GE_ACC:
    return o_err_acc(c, e->line, e->n1);
  case O_GE_NOINT:
    return o_err_noint(c, e->line, e->s1);
  case O_GE_ARG:
    return o_err_arg(c, e->line, e->n1, e->s1, e->s2);
  default:
    return o_err(c, e->line, e->s1);
  }
}

/* The generated part: o_gbody (the element code over one group's list),
 * o_gcheck (the CPU body's checks of the bound arrays, on the host), and
 * O_NA, O_NK, O_NACC (the slots of each kind), O_LINE0. */
static __device__ int o_gbody(o_dctx *c, const int64_t *o_ord, int64_t lo,
                              int64_t hi);
static int o_gcheck(orion_cctx *c);

/* A kernel's parameters: everything by value (no copies to set up). */
#define O_N1(n) ((n) > 0 ? (n) : 1)
typedef struct o_kp {
  orion_carray iter;
  orion_carray arrays[O_N1(O_NA)];
  orion_cval consts[O_N1(O_NK)];
  int32_t ops[O_N1(O_NACC)];
  const int64_t *order, *goff;
  int64_t first, end; /* the groups of this step */
  char *scratch;
} o_kp;

/* Thread t runs group first + t: its partials start empty. */
static __global__ void o_gkernel(const o_kp p) {
  const int64_t grp =
      p.first + (int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  o_dctx c;
  int k;
  if (grp >= p.end)
    return;
  c.err = (o_gerr *)p.scratch;
  c.accs = (orion_cacc *)(p.scratch + 4096) + grp * O_NACC;
  for (k = 0; k < O_NACC; k++) {
    c.accs[k].op = p.ops[k];
    c.accs[k].has = 0;
    c.accs[k].isint = 0;
    c.accs[k].pad = 0;
    c.accs[k].i = 0;
    c.accs[k].d = 0;
  }
  if (o_gstop(&c))
    return;
  c.iter = p.iter;
  c.arrays = p.arrays;
  c.consts = p.consts;
  c.cur = -1;
  c.group = (unsigned long long)grp;
  (void)o_gbody(&c, p.order, p.goff[grp], p.goff[grp + 1]);
}

static O_U int o_gsay(orion_gctx *g, const char *what, cudaError_t rc) {
  snprintf(g->err, sizeof g->err, "%s:%d: GPU body: %s: %s", o_chunk,
           O_LINE0, what, rc == cudaSuccess ? "" : cudaGetErrorString(rc));
  return 1;
}
static O_U double o_gnow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* Polls the stream until it is idle (0), fails, or until passes. */
static O_U int o_gwait(orion_gctx *g, cudaStream_t st, double until,
                       double limit) {
  long ns = 20000;
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(st);
    struct timespec ts;
    if (rc == cudaSuccess)
      return 0;
    if (rc != cudaErrorNotReady)
      return o_gsay(g, "running the block", rc);
    if (o_gnow() > until) {
      snprintf(g->err, sizeof g->err,
               "%s:%d: GPU body: the block did not finish in %g s", o_chunk,
               O_LINE0, limit);
      return 1;
    }
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
    if (ns < 2000000)
      ns *= 2;
  }
}

extern "C" int orion_gbody_run(orion_gctx *g);
extern "C" int orion_gbody_run(orion_gctx *g) {
  orion_cctx hc;
  o_kp p;
  o_gerr *rec;
  cudaStream_t st;
  cudaError_t rc;
  double limit, until;
  int64_t s, i;
  if (g == NULL)
    return 1;
  g->cur = -1;
  g->err[0] = 0;
  if (g->abi != O_GABI) {
    snprintf(g->err, sizeof g->err,
             "%s:%d: GPU body: called with ABI %d, built for %d", o_chunk,
             O_LINE0, (int)g->abi, O_GABI);
    return 1;
  }
  if (g->naccs != O_NACC || (O_NACC > 0 && (g->accs == NULL ||
                                            g->h_partials == NULL))) {
    snprintf(g->err, sizeof g->err,
             "%s:%d: GPU body: called with %d accumulators (partials %s), "
             "built for %d",
             o_chunk, O_LINE0, (int)g->naccs,
             g->h_partials != NULL ? "given" : "missing", O_NACC);
    return 1;
  }
  memset(&hc, 0, sizeof hc);
  hc.executor = g->executor;
  hc.iter = g->iter;
  hc.arrays = g->arrays;
  hc.consts = g->consts;
  if (o_gcheck(&hc) != 0) {
    memcpy(g->err, hc.err, sizeof g->err);
    return 1;
  }
  if (g->ngroups < 0 || g->nsteps < 0 ||
      (g->nsteps > 0 && g->h_step_off == NULL)) {
    snprintf(g->err, sizeof g->err, "%s:%d: GPU body: %lld groups, %lld steps",
             o_chunk, O_LINE0, (long long)g->ngroups, (long long)g->nsteps);
    return 1;
  }
  for (s = 0; s < g->nsteps; s++)
    if (g->h_step_off[s] < 0 || g->h_step_off[s] > g->h_step_off[s + 1] ||
        g->h_step_off[s + 1] > g->ngroups) {
      snprintf(g->err, sizeof g->err,
               "%s:%d: GPU body: step %lld is groups %lld..%lld of %lld",
               o_chunk, O_LINE0, (long long)s, (long long)g->h_step_off[s],
               (long long)g->h_step_off[s + 1], (long long)g->ngroups);
      return 1;
    }
  if (g->nsteps == 0 || g->ngroups == 0)
    return 0;
  memset(&p, 0, sizeof p);
  p.iter = g->iter;
  for (i = 0; i < O_NA; i++)
    p.arrays[i] = g->arrays[i];
  for (i = 0; i < O_NK; i++)
    p.consts[i] = g->consts[i];
  for (i = 0; i < O_NACC; i++)
    p.ops[i] = g->accs[i].op;
  p.order = g->d_order;
  p.goff = g->d_group_off;
  p.scratch = (char *)g->d_scratch;
  st = (cudaStream_t)g->stream;
  limit = g->timeout_s > 0 ? g->timeout_s : 600;
  until = o_gnow() + limit;
  rc = cudaMemsetAsync(p.scratch, 0, sizeof(o_gerr), st);
  if (rc == cudaSuccess)
    rc = cudaMemsetAsync(p.scratch, 0xff, sizeof(unsigned long long), st);
  if (rc != cudaSuccess)
    return o_gsay(g, "clearing the error record", rc);
  for (s = 0; s < g->nsteps; s++) {
    const int64_t n = g->h_step_off[s + 1] - g->h_step_off[s];
    if (n <= 0)
      continue;
    p.first = g->h_step_off[s];
    p.end = g->h_step_off[s + 1];
    o_gkernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(p);
    rc = cudaGetLastError();
    if (rc != cudaSuccess)
      return o_gsay(g, "launching a step", rc);
  }
  if (o_gwait(g, st, until, limit) != 0)
    return 1;
  /* Malloc'd: after a timeout the copy may still land. */
  rec = (o_gerr *)malloc(sizeof *rec);
  if (rec == NULL)
    return o_gsay(g, "out of host memory", cudaSuccess);
  rc = cudaMemcpyAsync(rec, p.scratch, sizeof *rec, cudaMemcpyDeviceToHost,
                       st);
  if (rc == cudaSuccess && O_NACC > 0)
    rc = cudaMemcpyAsync(g->h_partials, p.scratch + 4096,
                         (size_t)g->ngroups * O_N1(O_NACC) *
                             sizeof(orion_cacc),
                         cudaMemcpyDeviceToHost, st);
  if (rc != cudaSuccess) {
    free(rec);
    return o_gsay(g, "copying the partials back", rc);
  }
  if (o_gwait(g, st, until, limit) != 0)
    return 1;
  if (rec->group != ~0ull) {
    o_gmsg(&hc, rec);
    memcpy(g->err, hc.err, sizeof g->err);
    g->cur = rec->cur;
    free(rec);
    return 1;
  }
  free(rec);
  return 0;
}
extern "C" const int orion_gbody_abi;
extern "C" const int orion_gbody_abi = O_GABI;
#endif
