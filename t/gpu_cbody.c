/* The GPU suite's check of compiled bodies on a device (make check-gpu;
 * built only with CUDA, run only where there is a device: exit 77, a
 * skip, without one).
 *
 * Each body is generated once (analysis/cgen.c), built twice from the same
 * source (the C compiler: the CPU body; nvcc: util/gbody.h's entry
 * points), and run on the same data both ways: on the CPU with
 * orion_cbody_run, group after group in the grid's order, and on device 0
 * with orion_gbody_run (arrays copied with cudaMemcpy).  Then every array
 * and the folded accumulators are compared and the comparison printed:
 *   - int_sum   an integer body with a sum accumulator (1-D, one step):
 *               identical;
 *   - axpy      a dense f64 body y = a*x + y that also returns a value
 *               (exact mode, only + and *): identical;
 *   - exp       a dense f64 body with math.exp: within 1e-5 relative
 *               (libdevice may differ from glibc by an ulp);
 *   - mf_sgd    the MF SGD body on a small sparse ratings matrix, its
 *               grid made by hand: b x b sub-blocks are the groups, the
 *               wavefront diagonals the steps (no two groups of a step
 *               share a row or a column), exact mode: identical;
 *   - range     an index out of range: the same message and element as
 *               the CPU body's.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/cgen.h"
#include "analysis/parse.h"
#include "util/ccomp.h"
#include "util/cbody.h"
#include "util/error.h"
#include "util/gbody.h"

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define CUDA(call)                                                             \
  do {                                                                         \
    cudaError_t rc_ = (call);                                                  \
    if (rc_ != cudaSuccess) {                                                  \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                \
             cudaGetErrorString(rc_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* ------------------------------------------------------------------------
 * The arrays, numbers and accumulator the bodies see.
 * ---------------------------------------------------------------------- */

typedef struct tarr {
  const char *name;
  int64_t id;
  int type; /* 0 f32, 1 f64, 2 i32, 3 i64 */
  int ndims;
  int64_t dims[2];
  int sparse;
  int64_t nnz;
  void *h, *init; /* current host values; the values to start from */
  int64_t *keys;  /* sparse: nnz * ndims, 0-based */
  void *d;        /* device copies */
  int64_t *dkeys;
} tarr;

static const size_t TSIZE[] = {4, 8, 4, 8};

enum { NU = 64, NI = 48, K = 16, NV = 1000, NX = 100000 };

static tarr ARR[] = {
    {"V", 1, 3, 1, {NV, 0}, 0, NV, 0, 0, 0, 0, 0},
    {"B", 2, 3, 1, {NV, 0}, 0, NV, 0, 0, 0, 0, 0},
    {"X", 3, 1, 1, {NX, 0}, 0, NX, 0, 0, 0, 0, 0},
    {"Y", 4, 1, 1, {NX, 0}, 0, NX, 0, 0, 0, 0, 0},
    {"R", 5, 0, 2, {NU, NI}, 1, 0, 0, 0, 0, 0, 0},
    {"W", 6, 0, 2, {NU, K}, 0, NU * K, 0, 0, 0, 0, 0},
    {"H", 7, 0, 2, {NI, K}, 0, NI * K, 0, 0, 0, 0, 0},
};
#define NARR ((int)(sizeof ARR / sizeof ARR[0]))

static const struct {
  const char *name;
  int isint;
  int64_t i;
  double d;
} NUMS[] = {{"A", 0, 0, 0.75}, {"K", 1, K, 0}, {"LR", 0, 0, 0.01},
            {"REG", 0, 0, 0.05}};
#define ACC_ID 30

static tarr *arr_by_id(int64_t id) {
  int i;
  for (i = 0; i < NARR; i++)
    if (ARR[i].id == id)
      return &ARR[i];
  return NULL;
}

static void info_of(const tarr *a, orion_arrayinfo *in) {
  memset(in, 0, sizeof *in);
  in->id = a->id;
  in->ndims = a->ndims;
  in->dims[0] = a->dims[0];
  in->dims[1] = a->dims[1];
  in->type = a->type;
  in->elem_size = (int)TSIZE[a->type];
  in->sparse = a->sparse;
  in->nnz = a->nnz;
}

static int resolve(void *ud, const char *name, orion_binding *b) {
  int i;
  (void)ud;
  memset(b, 0, sizeof *b);
  for (i = 0; i < NARR; i++)
    if (strcmp(ARR[i].name, name) == 0) {
      b->kind = ORION_BIND_ARRAY;
      info_of(&ARR[i], &b->arr);
      b->arr.name = ARR[i].name;
      return 0;
    }
  for (i = 0; i < (int)(sizeof NUMS / sizeof NUMS[0]); i++)
    if (strcmp(NUMS[i].name, name) == 0) {
      b->kind = ORION_BIND_NUMBER;
      b->is_int = NUMS[i].isint;
      b->ival = NUMS[i].i;
      b->fval = NUMS[i].isint ? (double)NUMS[i].i : NUMS[i].d;
      return 0;
    }
  if (strcmp(name, "S") == 0) {
    b->kind = ORION_BIND_ACC;
    b->id = ACC_ID;
    return 0;
  }
  if (strcmp(name, "math") == 0) {
    b->kind = ORION_BIND_BUILTIN;
    return 0;
  }
  return 1;
}

/* Deterministic data (xorshift). */
static uint64_t rs = 88172645463325252ull;
static double rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) * 0x1.0p-53;
}

static void make_data(void) {
  int i;
  int64_t k, n = 0;
  tarr *r = arr_by_id(5);
  r->keys = malloc(sizeof(int64_t) * 2 * NU * NI);
  for (i = 0; i < NU * NI; i++)
    if (rnd() < 0.5) {
      r->keys[2 * n] = i / NI;
      r->keys[2 * n + 1] = i % NI;
      n++;
    }
  r->nnz = n;
  for (i = 0; i < NARR; i++) {
    tarr *a = &ARR[i];
    size_t bytes = (size_t)a->nnz * TSIZE[a->type];
    a->init = malloc(bytes);
    a->h = malloc(bytes);
    for (k = 0; k < a->nnz; k++) {
      double x = rnd();
      switch (a->type) {
      case 0:
        ((float *)a->init)[k] = (float)(a->sparse ? 1 + 4 * x : x * 0.3);
        break;
      case 1:
        ((double *)a->init)[k] = x * 10 - 5;
        break;
      default:
        ((int64_t *)a->init)[k] = (int64_t)(x * 2000000) - 1000000;
        break;
      }
    }
    CUDA(cudaMalloc(&a->d, bytes > 0 ? bytes : 8));
    if (a->sparse) {
      CUDA(cudaMalloc((void **)&a->dkeys, sizeof(int64_t) * 2 * (size_t)n));
      CUDA(cudaMemcpy(a->dkeys, a->keys, sizeof(int64_t) * 2 * (size_t)n,
                      cudaMemcpyHostToDevice));
    }
  }
}

static void reset(void) {
  int i;
  for (i = 0; i < NARR; i++) {
    size_t bytes = (size_t)ARR[i].nnz * TSIZE[ARR[i].type];
    memcpy(ARR[i].h, ARR[i].init, bytes);
    CUDA(cudaMemcpy(ARR[i].d, ARR[i].init, bytes, cudaMemcpyHostToDevice));
  }
}

static void carray(const tarr *a, int dev, orion_carray *c) {
  memset(c, 0, sizeof *c);
  c->values = dev ? a->d : a->h;
  c->keys = a->sparse ? (dev ? a->dkeys : a->keys) : NULL;
  c->type = a->type;
  c->ndims = a->ndims;
  c->nnz = a->nnz;
  c->dims[0] = a->dims[0];
  c->dims[1] = a->dims[1];
  c->strides[a->ndims - 1] = 1;
  if (a->ndims == 2)
    c->strides[0] = a->dims[1];
}

/* ------------------------------------------------------------------------
 * A body, both builds.
 * ---------------------------------------------------------------------- */

typedef struct body {
  const char *name;
  orion_cgen_out out;
  orion_cobj *cobj, *gobj;
  orion_cbody_fn run;
  orion_gbody_fn grun;
  orion_gbody_writes_fn writes;
  tarr *it;
  orion_carray arrays[8];
  orion_cval consts[8];
  orion_cacc accs[1];
  int narrays, nconsts, naccs;
} body;

static int build(body *b, const char *name, const char *src, int64_t iter_id,
                 int fast) {
  orion_ast *ast;
  orion_cgen_in in;
  orion_error err;
  const ast_node *ret;
  void *sym;
  double t0;
  struct timespec ts;
  memset(b, 0, sizeof *b);
  b->name = name;
  b->it = arr_by_id(iter_id);
  orion_error_clear(&err);
  if (orion_parse(src, strlen(src), "gpu_cbody", &ast, &err) != 0) {
    printf("FAIL %s: parse: %s\n", name, err.msg);
    return 1;
  }
  ret = ast->chunk->list.v[ast->chunk->list.n - 1];
  memset(&in, 0, sizeof in);
  in.func = ret->list.v[0];
  in.chunkname = "gpu_cbody";
  info_of(b->it, &in.iter);
  in.resolve = resolve;
  in.fast = fast;
  in.gpu = 1;
  if (orion_cgen(&in, &b->out, &err) != 0) {
    printf("FAIL %s: orion_cgen: %s\n", name, err.msg);
    orion_ast_free(ast);
    return 1;
  }
  orion_ast_free(ast);
  if (b->out.gpu_why[0] != 0) {
    printf("FAIL %s: outside the GPU subset: %s\n", name, b->out.gpu_why);
    return 1;
  }
  if (orion_cobj_build(b->out.src.data, b->out.src.len,
                       orion_cgen_mode_flags(fast), 0, &b->cobj, NULL,
                       &err) != 0) {
    printf("FAIL %s: C build: %s\n", name, err.msg);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t0 = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
  if (orion_cobj_build_cuda(b->out.src.data, b->out.src.len,
                            orion_cgen_mode_flags_cuda(fast), 0, &b->gobj,
                            NULL, &err) != 0) {
    printf("FAIL %s: nvcc build: %s\n", name, err.msg);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  printf("  %s: built for the device in %.1f s (%s)\n", name,
         (double)ts.tv_sec + ts.tv_nsec * 1e-9 - t0,
         orion_cobj_path(b->gobj));
  sym = orion_cobj_sym(b->cobj, ORION_CBODY_FN);
  memcpy(&b->run, &sym, sizeof sym);
  sym = orion_cobj_sym(b->gobj, ORION_GBODY_FN);
  memcpy(&b->grun, &sym, sizeof sym);
  sym = orion_cobj_sym(b->gobj, ORION_GBODY_WRITES_FN);
  memcpy(&b->writes, &sym, sizeof sym);
  sym = orion_cobj_sym(b->gobj, ORION_GBODY_ABI_SYM);
  if (b->run == NULL || b->grun == NULL || b->writes == NULL || sym == NULL ||
      *(const int *)sym != ORION_GBODY_ABI) {
    printf("FAIL %s: an entry point is missing or the ABI differs (abi "
           "symbol %s)\n",
           name, sym != NULL ? "found" : "missing");
    return 1;
  }
  return 0;
}

/* Binds the slots (dev: device pointers). */
static void bind(body *b, int dev) {
  int i;
  b->narrays = b->nconsts = b->naccs = 0;
  for (i = 0; i < b->out.nslots; i++) {
    const orion_cslot *s = &b->out.slots[i];
    switch (s->kind) {
    case ORION_CSLOT_ARRAY:
      carray(arr_by_id(s->id), dev, &b->arrays[b->narrays++]);
      break;
    case ORION_CSLOT_CONST:
      if (s->isint)
        b->consts[b->nconsts++].i = s->ival;
      else
        b->consts[b->nconsts++].d = s->fval;
      break;
    case ORION_CSLOT_ACC:
      memset(&b->accs[0], 0, sizeof b->accs[0]);
      b->accs[0].op = 0; /* sum */
      b->naccs = 1;
      break;
    default:
      break;
    }
  }
}

/* Folds partial p into t as executor/accum.c does for a sum. */
static void fold(orion_cacc *t, const orion_cacc *p) {
  if (!p->has)
    return;
  if (!t->has) {
    *t = *p;
  } else if (t->isint && p->isint) {
    t->i = (int64_t)((uint64_t)t->i + (uint64_t)p->i);
  } else {
    double a = t->isint ? (double)t->i : t->d;
    double c = p->isint ? (double)p->i : p->d;
    t->isint = 0;
    t->d = a + c;
  }
}

/* The grid: group g is order[goff[g] .. goff[g+1]), step s the groups
 * soff[s] .. soff[s+1]. */
typedef struct grid {
  int64_t *order, *goff, *soff;
  int64_t ngroups, nsteps;
} grid;

/* 1-D: contiguous groups of `per` elements, all in one step. */
static void grid_1d(grid *gr, int64_t n, int64_t per) {
  int64_t g, e;
  gr->ngroups = (n + per - 1) / per;
  gr->nsteps = 1;
  gr->order = malloc(sizeof(int64_t) * (size_t)n);
  gr->goff = malloc(sizeof(int64_t) * (size_t)(gr->ngroups + 1));
  gr->soff = malloc(sizeof(int64_t) * 2);
  for (e = 0; e < n; e++)
    gr->order[e] = e;
  for (g = 0; g <= gr->ngroups; g++)
    gr->goff[g] = g * per < n ? g * per : n;
  gr->soff[0] = 0;
  gr->soff[1] = gr->ngroups;
}

/* 2-D over sparse keys: bxb sub-blocks; step s holds the blocks (r, (r +
 * s) mod b), group index s * b + r. */
static void grid_2d(grid *gr, const tarr *it, int b) {
  int64_t n = it->nnz, e, pos = 0;
  int s, r;
  gr->ngroups = (int64_t)b * b;
  gr->nsteps = b;
  gr->order = malloc(sizeof(int64_t) * (size_t)n);
  gr->goff = malloc(sizeof(int64_t) * (size_t)(gr->ngroups + 1));
  gr->soff = malloc(sizeof(int64_t) * (size_t)(b + 1));
  for (s = 0; s < b; s++) {
    gr->soff[s] = (int64_t)s * b;
    for (r = 0; r < b; r++) {
      int c = (r + s) % b;
      gr->goff[s * b + r] = pos;
      for (e = 0; e < n; e++)
        if (it->keys[2 * e] * b / it->dims[0] == r &&
            it->keys[2 * e + 1] * b / it->dims[1] == c)
          gr->order[pos++] = e;
    }
  }
  gr->soff[b] = gr->ngroups;
  gr->goff[gr->ngroups] = pos;
}

typedef struct result {
  int rc;
  int64_t cur;
  char err[1024];
  orion_cacc acc;
  double ms;
} result;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The CPU body over the grid, group by group, each group's accumulator
 * starting empty and folded in group order (as the device's partials). */
static void run_cpu(body *b, const grid *gr, result *res) {
  orion_cctx c;
  int64_t g, j;
  double t0 = now_ms();
  memset(res, 0, sizeof *res);
  bind(b, 0);
  memset(&c, 0, sizeof c);
  c.abi = ORION_CBODY_ABI;
  carray(b->it, 0, &c.iter);
  c.arrays = b->arrays;
  c.consts = b->consts;
  c.accs = b->accs;
  for (g = 0; g < gr->ngroups && res->rc == 0; g++) {
    b->accs[0].has = 0;
    for (j = gr->goff[g]; j < gr->goff[g + 1] && res->rc == 0; j++) {
      int64_t e = gr->order[j];
      res->rc = b->run(&c, e, e + 1);
    }
    if (b->naccs > 0)
      fold(&res->acc, &b->accs[0]);
  }
  res->ms = now_ms() - t0;
  if (res->rc != 0) {
    res->cur = c.cur;
    memcpy(res->err, c.err, sizeof res->err);
  }
}

static void run_gpu(body *b, const grid *gr, cudaStream_t st, result *res) {
  orion_gctx g;
  int64_t i, *dord, *dgoff;
  orion_cacc *parts;
  void *scratch;
  size_t sbytes = ORION_GBODY_SCRATCH(gr->ngroups, 1);
  double t0;
  memset(res, 0, sizeof *res);
  bind(b, 1);
  CUDA(cudaMalloc((void **)&dord, sizeof(int64_t) * (size_t)b->it->nnz));
  CUDA(cudaMalloc((void **)&dgoff,
                  sizeof(int64_t) * (size_t)(gr->ngroups + 1)));
  CUDA(cudaMalloc(&scratch, sbytes));
  CUDA(cudaMemcpy(dord, gr->order, sizeof(int64_t) * (size_t)b->it->nnz,
                  cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(dgoff, gr->goff,
                  sizeof(int64_t) * (size_t)(gr->ngroups + 1),
                  cudaMemcpyHostToDevice));
  parts = calloc((size_t)gr->ngroups + 1, sizeof *parts);
  memset(&g, 0, sizeof g);
  g.abi = ORION_GBODY_ABI;
  carray(b->it, 1, &g.iter);
  g.arrays = b->arrays;
  g.consts = b->consts;
  g.naccs = b->naccs;
  g.accs = b->accs;
  g.d_order = dord;
  g.d_group_off = dgoff;
  g.h_step_off = gr->soff;
  g.ngroups = gr->ngroups;
  g.nsteps = gr->nsteps;
  g.h_partials = parts;
  g.d_scratch = scratch;
  g.stream = st;
  g.timeout_s = 60;
  t0 = now_ms();
  res->rc = b->grun(&g);
  res->ms = now_ms() - t0;
  if (res->rc != 0) {
    res->cur = g.cur;
    memcpy(res->err, g.err, sizeof res->err);
  }
  for (i = 0; i < gr->ngroups && b->naccs > 0; i++)
    fold(&res->acc, &parts[i]);
  /* Back to the host copies (the CPU run's are compared against). */
  CUDA(cudaFree(dord));
  CUDA(cudaFree(dgoff));
  CUDA(cudaFree(scratch));
  free(parts);
}

/* Runs b both ways from the same start; tol 0: identical bits. */
static void compare(body *b, const grid *gr, cudaStream_t st, double tol,
                    const char *want_err) {
  void *cpu[NARR];
  result rc, rg;
  int i;
  int64_t k;
  reset();
  run_cpu(b, gr, &rc);
  for (i = 0; i < NARR; i++) {
    size_t bytes = (size_t)ARR[i].nnz * TSIZE[ARR[i].type];
    cpu[i] = malloc(bytes > 0 ? bytes : 1);
    memcpy(cpu[i], ARR[i].h, bytes);
  }
  reset();
  run_gpu(b, gr, st, &rg);
  printf("  %s: %lld elements in %lld groups, %lld steps: CPU %.2f ms, GPU "
         "%.2f ms (with the launch)\n",
         b->name, (long long)b->it->nnz, (long long)gr->ngroups,
         (long long)gr->nsteps, rc.ms, rg.ms);
  CHECK(rc.rc == rg.rc, "%s: CPU rc %d, GPU rc %d (GPU: %s)", b->name, rc.rc,
        rg.rc, rg.err);
  if (want_err != NULL) {
    CHECK(rc.rc != 0 && strstr(rc.err, want_err) != NULL,
          "%s: the CPU body says '%s'", b->name, rc.err);
    CHECK(strcmp(rc.err, rg.err) == 0, "%s: messages differ:\n  CPU: %s\n  "
                                       "GPU: %s",
          b->name, rc.err, rg.err);
    CHECK(rc.cur == rg.cur, "%s: failing element CPU %lld, GPU %lld", b->name,
          (long long)rc.cur, (long long)rg.cur);
    printf("  %s: error at element %lld (CPU %lld): %s\n", b->name,
           (long long)rg.cur, (long long)rc.cur, rg.err);
  }
  for (i = 0; i < NARR; i++) {
    tarr *a = &ARR[i];
    size_t es = TSIZE[a->type], bytes = (size_t)a->nnz * es;
    int64_t ndiff = 0;
    double maxrel = 0;
    int written = a == b->it ? b->writes(-1) : 0, j, idx = 0;
    for (j = 0; j < b->out.nslots; j++)
      if (b->out.slots[j].kind == ORION_CSLOT_ARRAY) {
        if (b->out.slots[j].id == a->id)
          written = b->writes(idx);
        idx++;
      }
    if (want_err != NULL)
      continue; /* after an error, what other groups did is unspecified */
    CUDA(cudaMemcpy(a->h, a->d, bytes, cudaMemcpyDeviceToHost));
    if (memcmp(cpu[i], a->init, bytes) == 0 && memcmp(a->h, a->init, bytes) == 0)
      continue; /* untouched both ways */
    for (k = 0; k < a->nnz; k++) {
      const char *x = (const char *)cpu[i] + k * es,
                 *y = (const char *)a->h + k * es;
      if (memcmp(x, y, es) == 0)
        continue;
      if (a->type <= 1) {
        double u = a->type ? *(const double *)x : *(const float *)x;
        double v = a->type ? *(const double *)y : *(const float *)y;
        double rel = fabs(u - v) / (fabs(u) > 1e-30 ? fabs(u) : 1);
        if (rel > maxrel)
          maxrel = rel;
        if (tol > 0 && rel <= tol)
          continue;
      }
      ndiff++;
    }
    printf("  %s: array %s (written: %d): %lld of %lld elements differ beyond "
           "%g (max relative difference %.3g)\n",
           b->name, a->name, written, (long long)ndiff, (long long)a->nnz, tol,
           maxrel);
    CHECK(ndiff == 0, "%s: array %s differs", b->name, a->name);
    free(cpu[i]);
    cpu[i] = NULL;
  }
  for (i = 0; i < NARR; i++)
    free(cpu[i]);
  if (b->naccs > 0) {
    printf("  %s: S CPU has %d isint %d i %lld d %.17g; GPU has %d isint %d "
           "i %lld d %.17g\n",
           b->name, rc.acc.has, rc.acc.isint, (long long)rc.acc.i, rc.acc.d,
           rg.acc.has, rg.acc.isint, (long long)rg.acc.i, rg.acc.d);
    CHECK(rc.acc.has == rg.acc.has && rc.acc.isint == rg.acc.isint &&
              rc.acc.i == rg.acc.i &&
              (tol > 0 ? fabs(rc.acc.d - rg.acc.d) <=
                             tol * (1 + fabs(rc.acc.d))
                       : memcmp(&rc.acc.d, &rg.acc.d, sizeof rc.acc.d) == 0),
          "%s: accumulator differs", b->name);
  }
}

typedef struct spec {
  const char *name, *src;
  int64_t iter;
  int fast;
  double tol;
  const char *err;
} spec;

#define MF_SGD                                                                 \
  "return function(u, i, r)\n"                                                 \
  "  local wu, hi = W[u], H[i]\n"                                              \
  "  local e = r\n"                                                            \
  "  for k = 1, K do e = e - wu[k] * hi[k] end\n"                              \
  "  S:add(e * e)\n"                                                           \
  "  for k = 1, K do\n"                                                        \
  "    local w, h = wu[k], hi[k]\n"                                            \
  "    wu[k] = w + LR * (e * h - REG * w)\n"                                   \
  "    hi[k] = h + LR * (e * w - REG * h)\n"                                   \
  "  end\n"                                                                    \
  "end"

static const spec SPECS[] = {
    {"int_sum",
     "return function(i, v)\n"
     "  S:add(v * 7 % 13 + i)\n"
     "  B[i] = (v * 3 + i) // 7\n"
     "end",
     1, 0, 0, NULL},
    {"axpy",
     "return function(i, x)\n"
     "  Y[i] = A * x + Y[i]\n"
     "  return x * 0.5 + i\n"
     "end",
     3, 0, 0, NULL},
    {"exp",
     "return function(i, x)\n"
     "  Y[i] = math.exp(x * 0.25) + Y[i]\n"
     "  S:add(math.log(1 + x * x))\n"
     "end",
     3, 0, 1e-5, NULL},
    {"mf_sgd", MF_SGD, 5, 0, 0, NULL},
    {"mf_sgd_fast", MF_SGD, 5, 1, 1e-4, NULL},
    {"range",
     "return function(i, v)\n"
     "  B[i + 5] = v\n"
     "end",
     1, 0, 0, "array 'B': index 1001 out of range 1..1000 in dimension 1"},
};
#define NSPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

/* Builds every body first (no device needed: this fills the compile
 * cache, so a device host with the same cache and flags needs no nvcc),
 * then runs them on device 0. */
int main(void) {
  struct cudaDeviceProp prop;
  cudaStream_t st;
  int n = 0, i;
  body b[NSPECS];
  grid g1, gx, g2;
  cudaError_t rc;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 0; i < NSPECS; i++)
    if (build(&b[i], SPECS[i].name, SPECS[i].src, SPECS[i].iter,
              SPECS[i].fast) != 0)
      return 1;
  rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n == 0) {
    printf("no GPU (%s): skipping the runs\n",
           rc != cudaSuccess ? cudaGetErrorString(rc) : "no device");
    return 77;
  }
  CUDA(cudaSetDevice(0));
  CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("device 0: %s, cc %d.%d, %d SMs\n", prop.name, prop.major,
         prop.minor, prop.multiProcessorCount);
  CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  make_data();
  grid_1d(&g1, NV, 64);
  grid_1d(&gx, NX, 128);
  grid_2d(&g2, arr_by_id(5), 4);
  CHECK(b[0].writes(0) == 1 && b[0].writes(-1) == 0, "int_sum: writes");
  CHECK(b[1].writes(0) == 1 && b[1].writes(-1) == 1 && b[1].writes(1) == 0,
        "axpy: writes");
  for (i = 0; i < NSPECS; i++) {
    const tarr *it = arr_by_id(SPECS[i].iter);
    compare(&b[i], it->sparse ? &g2 : it->nnz == NV ? &g1 : &gx, st,
            SPECS[i].tol, SPECS[i].err);
  }
  for (i = 0; i < NARR; i++) {
    CUDA(cudaFree(ARR[i].d));
    if (ARR[i].dkeys != NULL)
      CUDA(cudaFree(ARR[i].dkeys));
  }
  CUDA(cudaStreamDestroy(st));
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
