/* The GPU suite's orion.nn test (make check-gpu; built only with CUDA):
 * every device kernel of kernels/nn_gpu.h against its CPU kernel
 * (kernels/nn_math.h) on random data, sizes including 0 and
 * non-multiples of 32, printing the max abs and rel error of each; the
 * device copies of executor/nn_dev.c never serving a stale value (a matrix
 * changed on the host between two device kernels); and a small MLP
 * trained by the same Lua code in a CPU state and a GPU state, whose
 * losses and accuracies must agree.
 *
 * Exit 0 when all pass, 1 on a failure (each says what differed), 77
 * (skip) without a device. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "kernels/nn_gpu.h"
#include "kernels/nn_math.h"
#include "executor/nn.h"
#include "t/nnstate.h"

static orion_gpu *g;
static int failures;
static uint64_t rng = 88172645463325252ull;

static float frand(void) { /* [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) / (double)(1 << 24) * 2.0 - 1.0);
}

static float *rand_host(int64_t n) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  int64_t i;
  for (i = 0; i < n; i++)
    p[i] = frand();
  return p;
}

static void die(const char *what, const orion_error *err) {
  printf("FAIL: %s: %s\n", what, err->msg);
  exit(1);
}

static void *up(const void *h, size_t bytes) {
  void *d;
  orion_error err;
  orion_error_clear(&err);
  if (orion_gpu_alloc(g, bytes ? bytes : 1, "test data", &d, &err) != 0)
    die("alloc", &err);
  if (bytes > 0 && orion_gpu_h2d(g, d, h, bytes, &err) != 0)
    die("h2d", &err);
  return d;
}

static void down(void *h, const void *d, size_t bytes) {
  orion_error err;
  orion_error_clear(&err);
  if (orion_gpu_sync(g, 0, 60, &err) != 0)
    die("sync", &err);
  if (bytes > 0 && orion_gpu_d2h(g, h, d, bytes, &err) != 0)
    die("d2h", &err);
}

/* Compares n device results with the CPU's: |got - want| <= tol[i] (tol
 * NULL: rtol * max(1, |want|)).  Prints max abs/rel errors. */
static void compare(const char *what, const float *got, const float *want,
                    const double *tol, double rtol, int64_t n) {
  double maxabs = 0, maxrel = 0;
  int64_t i, worst = -1;
  for (i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]);
    double t = tol ? tol[i] : rtol * fmax(1.0, fabs((double)want[i]));
    double r = e / fmax(fabs((double)want[i]), 1e-30);
    if (e > maxabs || isnan(e))
      maxabs = e;
    if (r > maxrel)
      maxrel = r;
    if ((e > t || isnan(e)) && worst < 0)
      worst = i;
  }
  printf("%s %-44s n=%-7lld max abs %.3g, max rel %.3g\n",
         worst < 0 ? "ok  " : "FAIL", what, (long long)n, maxabs, maxrel);
  if (worst >= 0) {
    printf("     first beyond tolerance: element %lld: GPU %.9g, CPU %.9g "
           "(tolerance %.3g)\n", (long long)worst, got[worst], want[worst],
           tol ? tol[worst] : rtol * fmax(1.0, fabs((double)want[worst])));
    failures++;
  }
}

#define EPS 1.1920929e-07 /* 2^-23 */

static void test_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k,
                      float beta) {
  float alpha = 0.75f;
  int64_t lda = ta ? m : k, ldb = tb ? k : n, i, j, l;
  float *a = rand_host(m * k), *b = rand_host(k * n), *c = rand_host(m * n);
  float *want = malloc(sizeof(float) * (size_t)(m * n + 1));
  float *got = malloc(sizeof(float) * (size_t)(m * n + 1));
  double *tol = malloc(sizeof(double) * (size_t)(m * n + 1));
  void *da = up(a, sizeof(float) * (size_t)(m * k));
  void *db = up(b, sizeof(float) * (size_t)(k * n));
  void *dc;
  char what[96];
  orion_error err;
  if (beta == 0.0f)
    for (i = 0; i < m * n; i++)
      c[i] = NAN; /* beta 0 must not read C */
  dc = up(c, sizeof(float) * (size_t)(m * n));
  memcpy(want, c, sizeof(float) * (size_t)(m * n));
  orion_nn_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, n);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      double s = beta == 0.0f ? 0 : fabs(beta * c[i * n + j]);
      for (l = 0; l < k; l++)
        s += fabs(alpha * (ta ? a[l * lda + i] : a[i * lda + l]) *
                  (tb ? b[j * ldb + l] : b[l * ldb + j]));
      tol[i * n + j] = (double)(k + 2) * EPS * s + 1e-30;
    }
  orion_error_clear(&err);
  if (orion_nn_gpu_gemm(g, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc,
                        n, &err) != 0)
    die("orion_nn_gpu_gemm", &err);
  down(got, dc, sizeof(float) * (size_t)(m * n));
  snprintf(what, sizeof what, "gemm %s%s m %lld n %lld k %lld beta %g",
           ta ? "T" : "N", tb ? "T" : "N", (long long)m, (long long)n,
           (long long)k, beta);
  compare(what, got, want, tol, 0, m * n);
  orion_gpu_free(g, da);
  orion_gpu_free(g, db);
  orion_gpu_free(g, dc);
  free(a), free(b), free(c), free(want), free(got), free(tol);
}

/* The element-wise kernels and bias, on n values (rows x cols). */
static void test_elementwise(int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  size_t bytes = sizeof(float) * (size_t)n;
  /* The column sums read and write cols values of x even with 0 rows:
   * every buffer holds at least cols values. */
  int64_t na = n > cols ? n : cols;
  size_t abytes = sizeof(float) * (size_t)na;
  float *x = rand_host(na), *y = rand_host(na), *z = rand_host(na);
  float *bias = rand_host(cols), *want = malloc(abytes + 4),
        *got = malloc(abytes + 4), *w2 = malloc(abytes + 4),
        *g2 = malloc(abytes + 4);
  float *dx = up(x, abytes), *dy = up(y, abytes), *dz = up(z, abytes);
  float *db = up(bias, sizeof(float) * (size_t)cols);
  char what[96];
  orion_error err;
  orion_error_clear(&err);
#define RESET(dev, host) orion_gpu_h2d(g, dev, host, bytes, &err)
#define CHECK(name, rtol)                                                    \
  do {                                                                       \
    if (err.code != 0)                                                       \
      die(name, &err);                                                       \
    down(got, dx, bytes);                                                    \
    snprintf(what, sizeof what, "%s %lldx%lld", name, (long long)rows,      \
             (long long)cols);                                               \
    compare(what, got, want, NULL, rtol, n);                                 \
  } while (0)
  memcpy(want, x, bytes), orion_nn_fill(want, n, 0.25f);
  orion_nn_gpu_fill(g, dx, n, 0.25f, &err);
  CHECK("fill", 0);
  RESET(dx, x), memcpy(want, x, bytes), orion_nn_scale(want, n, -1.5f);
  orion_nn_gpu_scale(g, dx, n, -1.5f, &err);
  CHECK("scale", 0);
  RESET(dx, x), memcpy(want, x, bytes), orion_nn_axpy(want, 0.3f, y, n);
  orion_nn_gpu_axpy(g, dx, 0.3f, dy, n, &err);
  CHECK("axpy", 2 * EPS);
  RESET(dx, x), memcpy(want, x, bytes), orion_nn_relu(want, n);
  orion_nn_gpu_relu(g, dx, n, &err);
  CHECK("relu", 0);
  RESET(dx, x), memcpy(want, x, bytes), orion_nn_relu_backward(want, y, n);
  orion_nn_gpu_relu_backward(g, dx, dy, n, &err);
  CHECK("relu_backward", 0);
  RESET(dx, x), memcpy(want, y, bytes);
  orion_nn_gpu_copy(g, dx, dy, n, &err);
  CHECK("copy", 0);
  RESET(dx, x), memcpy(want, x, bytes), orion_nn_add_bias(want, rows, cols,
                                                          bias);
  orion_nn_gpu_add_bias(g, dx, rows, cols, db, &err);
  CHECK("add_bias", 0);
  /* momentum: w = x, v = y, gradient z; checks w here and v below. */
  RESET(dx, x), RESET(dy, y), memcpy(want, x, bytes), memcpy(w2, y, bytes);
  orion_nn_momentum(want, w2, z, n, 0.05f, 0.9f, 0.001f);
  orion_nn_gpu_momentum(g, dx, dy, dz, n, 0.05f, 0.9f, 0.001f, &err);
  CHECK("momentum (w)", 4 * EPS);
  down(g2, dy, bytes);
  snprintf(what, sizeof what, "momentum (v) %lldx%lld", (long long)rows,
           (long long)cols);
  compare(what, g2, w2, NULL, 4 * EPS, n);
  RESET(dy, y);
  /* Column sums into d = the first cols of x, beta 0.5. */
  {
    double *tol = malloc(sizeof(double) * (size_t)(cols + 1));
    int64_t i, j;
    orion_gpu_h2d(g, dx, x, sizeof(float) * (size_t)cols, &err);
    memcpy(want, x, sizeof(float) * (size_t)cols);
    orion_nn_colsum(want, y, rows, cols, 0.5f, 0.5f);
    for (j = 0; j < cols; j++) {
      double s = fabs(0.5 * x[j]);
      for (i = 0; i < rows; i++)
        s += fabs(0.5 * y[i * cols + j]);
      tol[j] = (double)(rows + 2) * EPS * s + 1e-30;
    }
    orion_nn_gpu_colsum(g, dx, dy, rows, cols, 0.5f, 0.5f, &err);
    if (err.code != 0)
      die("colsum", &err);
    down(got, dx, sizeof(float) * (size_t)cols);
    snprintf(what, sizeof what, "colsum %lldx%lld", (long long)rows,
             (long long)cols);
    compare(what, got, want, tol, 0, cols);
    free(tol);
  }
#undef RESET
#undef CHECK
  orion_gpu_free(g, dx), orion_gpu_free(g, dy), orion_gpu_free(g, dz);
  orion_gpu_free(g, db);
  free(x), free(y), free(z), free(bias), free(want), free(got), free(w2);
  free(g2);
}

static void test_xent(int64_t rows, int64_t k, int64_t badrow) {
  size_t bytes = sizeof(float) * (size_t)(rows * k);
  float *z = rand_host(rows * k), *y = malloc(sizeof(float) * (rows + 1));
  float *want = malloc(bytes + 4), *got = malloc(bytes + 4);
  double lw, lg;
  int64_t cw, cg, bw, bg, i;
  void *dz_, *dy, *ddz, *scratch;
  int rw, rg;
  char what[96];
  orion_error err;
  for (i = 0; i < rows * k; i++)
    z[i] *= 4;
  for (i = 0; i < rows; i++)
    y[i] = (float)(1 + (int64_t)((frand() + 1) / 2 * k) % k);
  if (badrow >= 0 && badrow < rows) {
    y[badrow] = 0.5f;
    if (badrow + 2 < rows)
      y[badrow + 2] = (float)(k + 1);
  }
  dz_ = up(z, bytes);
  dy = up(y, sizeof(float) * (size_t)rows);
  ddz = up(z, bytes);
  orion_error_clear(&err);
  if (orion_gpu_alloc(g, ORION_NN_GPU_XENT_SCRATCH, "scratch", &scratch,
                      &err) != 0)
    die("alloc", &err);
  rw = orion_nn_softmax_xent(z, rows, k, y, want, &lw, &cw, &bw);
  rg = orion_nn_gpu_softmax_xent(g, dz_, rows, k, dy, ddz, &lg, &cg, &bg,
                                 scratch, &err);
  snprintf(what, sizeof what, "softmax_xent %lldx%lld%s", (long long)rows,
           (long long)k, badrow >= 0 ? " (bad labels)" : "");
  if (badrow >= 0) {
    int ok = rw == ORION_EINVAL && rg == ORION_EINVAL && bw == bg;
    printf("%s %-44s CPU rc %d bad row %lld, GPU rc %d bad row %lld\n",
           ok ? "ok  " : "FAIL", what, rw, (long long)bw, rg, (long long)bg);
    failures += !ok;
  } else {
    int ok = rw == 0 && rg == 0 && cw == cg &&
             fabs(lw - lg) <= 1e-9 * fmax(1.0, fabs(lw));
    if (rg != 0)
      printf("     GPU error: %s\n", err.msg);
    printf("%s %-44s loss CPU %.12g GPU %.12g, correct CPU %lld GPU %lld\n",
           ok ? "ok  " : "FAIL", what, lw, lg, (long long)cw, (long long)cg);
    failures += !ok;
    down(got, ddz, bytes);
    strcat(what, " dZ");
    compare(what, got, want, NULL, 4 * EPS, rows * k);
  }
  orion_gpu_free(g, dz_), orion_gpu_free(g, dy), orion_gpu_free(g, ddz);
  orion_gpu_free(g, scratch);
  free(z), free(y), free(want), free(got);
}

static void test_spmm(int64_t rows, int64_t cols, int64_t n, int trans,
                      float beta) {
  int64_t *ptr = malloc(sizeof(int64_t) * (size_t)(rows + 1)), i, e;
  int32_t *col = malloc(sizeof(int32_t) * (size_t)(rows * 8 + 1));
  float *val = malloc(sizeof(float) * (size_t)(rows * 8 + 1));
  int64_t brows = trans ? rows : cols, crows = trans ? cols : rows;
  float *b = rand_host(brows * n), *c = rand_host(crows * n);
  size_t cbytes = sizeof(float) * (size_t)(crows * n);
  float *want = malloc(cbytes + 4), *got = malloc(cbytes + 4);
  double *tol = malloc(sizeof(double) * (size_t)(crows * n + 1));
  orion_nn_csr s;
  void *dp, *dcol, *dval, *db, *dc;
  char what[96];
  orion_error err;
  ptr[0] = 0;
  for (i = 0; i < rows; i++) {
    int64_t cnt = cols > 0 ? (int64_t)((frand() + 1) * 4) : 0;
    ptr[i + 1] = ptr[i] + cnt;
    for (e = ptr[i]; e < ptr[i + 1]; e++) {
      col[e] = (int32_t)((uint64_t)((frand() + 1) * 1e6) % (uint64_t)cols);
      val[e] = frand();
    }
  }
  s.rows = rows, s.cols = cols, s.ptr = ptr, s.col = col, s.val = val;
  memcpy(want, c, cbytes);
  orion_nn_spmm(want, &s, b, n, 0.5f, beta, trans);
  /* Tolerance from the magnitudes: the same product on |values|. */
  {
    float *ab = malloc(sizeof(float) * (size_t)(brows * n + 1));
    float *av = malloc(sizeof(float) * (size_t)(ptr[rows] + 1));
    float *mag = malloc(cbytes + 4);
    orion_nn_csr sa = s;
    for (i = 0; i < brows * n; i++)
      ab[i] = fabsf(b[i]);
    for (e = 0; e < ptr[rows]; e++)
      av[e] = fabsf(val[e]);
    sa.val = av;
    for (i = 0; i < crows * n; i++)
      mag[i] = fabsf(c[i]);
    orion_nn_spmm(mag, &sa, ab, n, 0.5f, fabsf(beta), trans);
    for (i = 0; i < crows * n; i++)
      tol[i] = 40 * EPS * mag[i] + 1e-30;
    free(ab), free(av), free(mag);
  }
  dp = up(ptr, sizeof(int64_t) * (size_t)(rows + 1));
  dcol = up(col, sizeof(int32_t) * (size_t)ptr[rows]);
  dval = up(val, sizeof(float) * (size_t)ptr[rows]);
  db = up(b, sizeof(float) * (size_t)(brows * n));
  dc = up(c, cbytes);
  orion_error_clear(&err);
  if (orion_nn_gpu_spmm(g, dc, rows, cols, dp, dcol, dval, db, n, 0.5f, beta,
                        trans, &err) != 0)
    die("orion_nn_gpu_spmm", &err);
  down(got, dc, cbytes);
  snprintf(what, sizeof what, "spmm%s %lldx%lld nnz %lld n %lld beta %g",
           trans ? "_t" : "", (long long)rows, (long long)cols,
           (long long)ptr[rows], (long long)n, beta);
  compare(what, got, want, tol, 0, crows * n);
  orion_gpu_free(g, dp), orion_gpu_free(g, dcol), orion_gpu_free(g, dval);
  orion_gpu_free(g, db), orion_gpu_free(g, dc);
  free(ptr), free(col), free(val), free(b), free(c), free(want), free(got);
  free(tol);
}

/* Runs t/scripts/NAME in L with nn as its first argument; a Lua error is
 * a failure naming what.  The string it returns goes to out. */
static int run_lua(lua_State *L, const char *what, const char *name,
                   char *out, size_t n) {
  char path[1024];
  const char *src = getenv("ORION_SRCDIR");
  snprintf(path, sizeof path, "%s/t/scripts/%s", src ? src : ".", name);
  if (luaL_loadfile(L, path) != LUA_OK) {
    printf("FAIL %s: %s\n", what, lua_tostring(L, -1));
    failures++;
    lua_pop(L, 1);
    return 1;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    printf("FAIL %s: %s\n", what, lua_tostring(L, -1));
    failures++;
    lua_pop(L, 1);
    return 1;
  }
  printf("ok   %s%s%s\n", what, lua_isstring(L, -1) ? ": " : "",
         lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
  if (out != NULL)
    snprintf(out, n, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
  lua_pop(L, 1);
  return 0;
}

static lua_State *nn_state(orion_gpu *dev) {
  orion_error err;
  lua_State *L = tu_nn_state(dev, &err);
  if (L == NULL)
    die("orion_nn_set_gpu", &err);
  return L;
}

static void test_mlp(void) {
  lua_State *cpu = nn_state(NULL), *gpu = nn_state(g);
  double lc = 0, ac = 0, lg = 0, ag = 0;
  char rc_[128], rg_[128];
  printf("---- the MLP in a CPU state and in a GPU state\n");
  if (run_lua(cpu, "MLP on the CPU (loss accuracy)", "nn_dev_mlp.lua", rc_,
              sizeof rc_) == 0 &&
      run_lua(gpu, "MLP on the GPU (loss accuracy)", "nn_dev_mlp.lua", rg_,
              sizeof rg_) == 0) {
    sscanf(rc_, "%lf %lf", &lc, &ac);
    sscanf(rg_, "%lf %lf", &lg, &ag);
    {
      int ok = fabs(lc - lg) <= 1e-3 * fmax(1.0, lc) && fabs(ac - ag) <= 0.01;
      printf("%s MLP: loss CPU %.6f GPU %.6f (tolerance 1e-3 relative), "
             "accuracy CPU %.4f GPU %.4f (tolerance 0.01)\n",
             ok ? "ok  " : "FAIL", lc, lg, ac, ag);
      failures += !ok;
    }
  }
  lua_close(cpu);
  lua_close(gpu);
}

int main(void) {
  const char *why = NULL;
  static const int64_t sz[] = {0, 1, 31, 33, 100, 257};
  char desc[256];
  orion_error err;
  int i, j, l, t;
  setvbuf(stdout, NULL, _IOLBF, 0); /* a crash shows the last case */
  if (!orion_nn_gpu_built() || orion_gpu_count(&why) == 0) {
    printf("SKIP: no GPU: %s\n",
           !orion_nn_gpu_built() ? "this build has no CUDA" : why);
    return 77;
  }
  orion_error_clear(&err);
  if (orion_gpu_open(0, 0, &g, &err) != 0)
    die("orion_gpu_open(0)", &err);
  orion_gpu_describe(g, desc, sizeof desc);
  printf("device: %s\n---- kernels against the CPU's\n", desc);
  for (t = 0; t < 4; t++)
    for (i = 0; i < 6; i++)
      for (j = 0; j < 6; j++)
        for (l = 0; l < 6; l += (i + j) % 2 ? 2 : 1)
          if (i == j || l == 3 || (i + j + l) % 3 == 0)
            test_gemm(t & 1, t >> 1, sz[i], sz[j], sz[l],
                      (i + l) % 2 ? 0.5f : 0.0f);
  test_gemm(0, 0, 1000, 784, 256, 0.0f);
  test_gemm(1, 0, 784, 256, 1000, 0.9f);
  test_gemm(0, 1, 1000, 784, 256, 0.0f);
  for (i = 0; i < 6; i++)
    for (j = 0; j < 6; j += 2)
      test_elementwise(sz[i], sz[j]);
  test_elementwise(1000, 10);
  test_elementwise(3000, 257);
  test_xent(0, 10, -1);
  test_xent(1, 1, -1);
  test_xent(33, 10, -1);
  test_xent(257, 37, -1);
  test_xent(1000, 10, -1);
  test_xent(100, 10, 5);
  for (t = 0; t < 2; t++) {
    test_spmm(0, 10, 8, t, 0.0f);
    test_spmm(33, 100, 31, t, 0.5f);
    test_spmm(257, 1000, 64, t, 0.0f);
    test_spmm(100, 31, 1, t, 1.0f);
  }
  printf("---- device copies of nn matrices\n");
  {
    lua_State *L = nn_state(g);
    uint64_t before = orion_gpu_in_use(g);
    run_lua(L, "stale copies are never used", "nn_dev_stale.lua", NULL, 0);
    if (orion_gpu_in_use(g) <= before) {
      printf("FAIL nn kernels did not allocate device memory (in use %llu "
             "before and after)\n", (unsigned long long)before);
      failures++;
    }
    lua_close(L);
  }
  test_mlp();
  orion_gpu_close(g);
  printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures,
         failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
