/* The device side of a generated body: the part of the prelude that only
 * nvcc sees (analysis/cgen_prelude.h includes it under ORION_GPU_BODY,
 * after util/gbody.h's part).  No file of the project includes this
 * header: analysis/mkprelude.awk copies the part below into every
 * generated source, so it uses system headers and the prelude only.
 *
 * What it adds to the CPU body's prelude:
 *   - o_dctx, one device thread's view of the block, with the member
 *     names of orion_cctx that the element code reads (iter, arrays,
 *     bufs, consts, accs, rng, cur), so the element code is the same
 *     text;
 *   - o_gbadd and o_gbaddf, a buffer's add on the device;
 *   - the device's o_err* (same names and operands as the host's): they
 *     record the error kind and its operands in the scratch (o_gerr; the
 *     lowest failing group wins) instead of formatting a message, which
 *     the host does afterwards with the host's o_err* (o_gmsg), so the
 *     text is the CPU body's;
 *   - the kernel (thread t of a launch runs group first + t over its
 *     element list, partials starting empty) and orion_gbody_run (the
 *     host's checks, one launch per step on the caller's stream, or one
 *     launch of the claiming kernel for claimed groups, a polled
 *     wait with a timeout, the partials and the error record copied back).
 * The generated source defines O_NA, O_NK, O_NB, O_NACC (slots of each kind),
 * O_LINE0 and O_GABI before the prelude, and o_gbody, o_gcheck and
 * orion_gbody_writes after it.
 */
#ifndef ORION_ANALYSIS_CGEN_PRELUDE_GPU_H
#define ORION_ANALYSIS_CGEN_PRELUDE_GPU_H

/* ORION_PRELUDE_BEGIN */
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>

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
  const orion_cbuffer *bufs; /* h: the device sums (util/gbody.h) */
  unsigned char *const *bmark; /* per buffer: its marks, after the sums */
  const orion_cval *consts;
  orion_cacc *accs; /* this group's partials, in the scratch */
  int64_t cur;
  unsigned long long group;
  o_gerr *err;
  uint64_t rng[4]; /* math.random: this group's state (orion_gbody_seed) */
} o_dctx;

/* A buffer's `B[k] = B[k] + x` on the device: x added atomically to
 * element pos's sum of buffer slot k, and the element marked
 * (ORION_GBUF_BYTES' layout; the marks' address is worked out once per
 * launch, in orion_gbody_run).  Integers wrap as Lua's do; the additions'
 * order does not change an integer sum. */
static __device__ O_U void o_gbadd(const o_dctx *c, int k, int64_t pos,
                                   int64_t x) {
  atomicAdd((unsigned long long *)c->bufs[k].h + pos, (unsigned long long)x);
  c->bmark[k][pos] = 1;
}
static __device__ O_U void o_gbaddf(const o_dctx *c, int k, int64_t pos,
                                    double x) {
  atomicAdd((double *)c->bufs[k].h + pos, x);
  c->bmark[k][pos] = 1;
}

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
#if O_WARP
/* A warp runs a group (O_WARP): lane 0's answer, so the lanes stop
 * together; and the sum of a value over the lanes, by a butterfly of
 * shuffles that leaves the same bits in every lane (each step adds two
 * lanes' values in either order, and addition commutes). */
static __device__ O_U int o_gstopw(const o_dctx *c) {
  return __shfl_sync(0xffffffffu, o_gstop(c), 0);
}
static __device__ O_U float o_wsum(float v) {
  for (int m = 16; m > 0; m >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
static __device__ O_U double o_wsum(double v) {
  for (int m = 16; m > 0; m >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
#define O_TPG 32
#else
#define o_gstopw o_gstop
#define O_TPG 1
#endif

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
  orion_cbuffer bufs[O_N1(O_NB)];
  unsigned char *bmark[O_N1(O_NB)]; /* each buffer's marks (device) */
  uint64_t rng[4];  /* the block's math.random state */
  long long group0; /* the number of group 0 in the block */
  orion_cval consts[O_N1(O_NK)];
  int32_t ops[O_N1(O_NACC)];
  const int64_t *order, *goff;
  int64_t first, end; /* the groups of this step */
  char *scratch;
  /* Claimed groups (util/gclaim.h): b rows, the row lists, the claim
   * state in the scratch. */
  long long b;
  const int64_t *row_off, *row_group, *row_col;
  char *claim;
} o_kp;

#if O_WARP
#define O_BCAST(x) __shfl_sync(0xffffffffu, (x), 0)
#define O_LANE0 (threadIdx.x % 32 == 0)
#else
#define O_BCAST(x) (x)
#define O_LANE0 1
#endif

/* Group grp's partials in the scratch, started empty with their
 * accumulators' ops by lane 0 before the lanes go on. */
static __device__ orion_cacc *o_gpartials(const o_kp *p, int64_t grp) {
  orion_cacc *a = (orion_cacc *)(p->scratch + 4096) + grp * O_NACC;
  int k;
  if (O_LANE0)
    for (k = 0; k < O_NACC; k++) {
      a[k].op = p->ops[k];
      a[k].has = 0;
      a[k].isint = 0;
      a[k].pad = 0;
      a[k].i = 0;
      a[k].d = 0;
    }
#if O_WARP
  __syncwarp();
#endif
  return a;
}

/* Thread t (warp t with O_WARP: O_TPG threads a group) runs group
 * first + t: its partials start empty.  A block's threads are a multiple
 * of 32, so the threads of a warp share their group. */
static __global__ void o_gkernel(const o_kp p) {
  const int64_t grp =
      p.first +
      ((int64_t)blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / O_TPG;
  o_dctx c;
  if (grp >= p.end)
    return;
  c.err = (o_gerr *)p.scratch;
  c.accs = o_gpartials(&p, grp);
  if (o_gstopw(&c))
    return;
  c.iter = p.iter;
  c.arrays = p.arrays;
  c.bufs = p.bufs;
  c.bmark = p.bmark;
  c.consts = p.consts;
  c.cur = -1;
  c.group = (unsigned long long)grp;
  orion_gbody_seed(p.rng, p.group0 + grp, c.rng);
  (void)o_gbody(&c, p.order, p.goff[grp], p.goff[grp + 1]);
}

/* The claiming kernel (util/gclaim.h): each worker (a warp with O_WARP,
 * else a thread) takes rows and runs their groups, each while it holds
 * the group's column; lane 0 claims, the lanes run the group.  Every
 * thread fences its writes before lane 0 gives the column back. */
static __global__ void o_gclaim_kernel(const o_kp p) {
  o_dctx c;
  c.err = (o_gerr *)p.scratch;
  c.iter = p.iter;
  c.arrays = p.arrays;
  c.bufs = p.bufs;
  c.bmark = p.bmark;
  c.consts = p.consts;
  for (;;) {
    long long row = 0, first, hi;
    if (O_LANE0)
      row = o_claim_row(p.claim, p.b);
    row = O_BCAST(row);
    if (row < 0)
      return;
    first = p.row_off[row];
    hi = p.row_off[row + 1];
    for (;;) {
      long long i = -1, grp;
      int stop = o_gstop(&c);
      if (O_LANE0 && !stop)
        i = o_claim_cell(p.claim, p.b, &first, hi, p.row_col);
      stop = O_BCAST(stop);
      i = O_BCAST(i);
      if (stop || i == hi)
        break;
      if (i < 0) {
#if __CUDA_ARCH__ >= 700
        __nanosleep(200);
#endif
        continue;
      }
      /* Every lane's acquire: the column's last writes, made and fenced
       * on another SM, are what this lane reads (a fence at device scope
       * also drops this SM's L1 copies of them). */
      __threadfence();
      grp = p.row_group[i];
      c.accs = o_gpartials(&p, grp);
      c.cur = -1;
      c.group = (unsigned long long)grp;
      orion_gbody_seed(p.rng, p.group0 + grp, c.rng);
      (void)o_gbody(&c, p.order, p.goff[grp], p.goff[grp + 1]);
      __threadfence();
#if O_WARP
      __syncwarp();
#endif
      if (O_LANE0)
        o_claim_done(p.claim, p.b, i, p.row_col);
    }
    if (O_BCAST(o_gstop(&c))) /* the lanes leave together */
      return;
  }
}

/* How many workers the claiming kernel runs: as many as the device holds
 * at once, at most half the rows (so that a worker mostly finds a free
 * column), at least one; in blocks of *threads threads. */
static O_U int o_gworkers(long long b, int *blocks, int *threads) {
  int dev = 0, sms = 0, per = 0;
  long long want = b / 2 > 0 ? b / 2 : 1, fit;
  *threads = 256;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, o_gclaim_kernel,
                                                    256, 0) != cudaSuccess)
    return 1;
  fit = (long long)sms * (per > 0 ? per : 1) * (256 / O_TPG);
  if (want > fit)
    want = fit;
  if (want * O_TPG < 256)
    *threads = (int)((want * O_TPG + 31) / 32 * 32);
  *blocks = (int)((want * O_TPG + *threads - 1) / *threads);
  return 0;
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
  if (g->nbufs != O_NB || (O_NB > 0 && g->bufs == NULL)) {
    snprintf(g->err, sizeof g->err,
             "%s:%d: GPU body: called with %d buffers, built for %d", o_chunk,
             O_LINE0, (int)g->nbufs, O_NB);
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
  hc.bufs = g->bufs;
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
  if (g->claim_b > 0 && (g->d_row_off == NULL || g->d_row_group == NULL ||
                         g->d_row_col == NULL)) {
    snprintf(g->err, sizeof g->err,
             "%s:%d: GPU body: claimed groups without their rows", o_chunk,
             O_LINE0);
    return 1;
  }
  for (s = 0; s < g->nsteps && g->claim_b <= 0; s++)
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
  for (i = 0; i < O_NB; i++) { /* the marks follow the n sums */
    int64_t n = 1;
    int d;
    p.bufs[i] = g->bufs[i];
    for (d = 0; d < g->bufs[i].ndims; d++)
      n *= g->bufs[i].dims[d];
    p.bmark[i] = (unsigned char *)g->bufs[i].h + n * (int64_t)sizeof(int64_t);
  }
  for (i = 0; i < 4; i++)
    p.rng[i] = g->rng[i];
  p.group0 = g->group0;
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
  if (g->claim_b > 0) {
    /* Claimed: partials empty (a group an error leaves unrun folds
     * nothing), the claim state cleared, one launch. */
    const size_t pb = ORION_GBODY_SCRATCH(g->ngroups, O_NACC) - 4096;
    int blocks = 1, threads = 256;
    p.b = g->claim_b;
    p.row_off = g->d_row_off;
    p.row_group = g->d_row_group;
    p.row_col = g->d_row_col;
    p.claim = p.scratch + ORION_GBODY_SCRATCH(g->ngroups, O_NACC);
    rc = cudaMemsetAsync(p.scratch + 4096, 0,
                         pb + ORION_GCLAIM_SCRATCH(g->claim_b, g->ngroups),
                         st);
    if (rc != cudaSuccess)
      return o_gsay(g, "clearing the claim state", rc);
    if (o_gworkers(g->claim_b, &blocks, &threads) != 0)
      return o_gsay(g, "sizing the claiming kernel", cudaGetLastError());
    o_gclaim_kernel<<<(unsigned)blocks, (unsigned)threads, 0, st>>>(p);
    rc = cudaGetLastError();
    if (rc != cudaSuccess)
      return o_gsay(g, "launching the claiming kernel", rc);
  }
  for (s = 0; s < g->nsteps && g->claim_b <= 0; s++) {
    const int64_t n = g->h_step_off[s + 1] - g->h_step_off[s];
    if (n <= 0)
      continue;
    p.first = g->h_step_off[s];
    p.end = g->h_step_off[s + 1];
    o_gkernel<<<(unsigned)((n * O_TPG + 255) / 256), 256, 0, st>>>(p);
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
/* ORION_PRELUDE_END */

#endif
