/* bench/sgemm_rate: cuBLAS sgemm's rate on this machine's GPU 0, at the
 * GEMM shapes of one training step of apps/dnn/dnn.lua and at a large
 * square shape, for bench/dnn_gpu.sh (built with CUDA only).
 *
 *   bench/sgemm_rate LAYERS BATCH [SQUARE]     e.g. 784,256,10 100 8192
 *
 * One step of the app at batch B with layers L0..Ln runs, for each layer l
 * (in = L(l-1), out = Ll): the forward product B x in times in x out (NN),
 * the weight gradient in x B times B x out (TN) and, except for the first
 * layer, the input gradient B x out times out x in (NT), all row-major as
 * orion.nn calls them.  The mix is timed as one sequence on one stream
 * (CUDA events, after a warm-up, repeated for at least 0.3 s), cuBLAS's
 * default fp32 math (no TF32), as orion.nn uses it.  Prints each shape's
 * rate, then
 *   flop_per_sample F
 *   mix_gflops G        (the app's shapes, as one step)
 *   square_gflops S     (SQUARE^3, default 8192)
 * Exit 77 without a device, 1 on a CUDA or cuBLAS error (named).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
  int ta, tb, m, n, k;
  float *a, *b, *c;
} shape;

static void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    printf("sgemm_rate: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

static void checkb(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    printf("sgemm_rate: %s: cuBLAS status %d\n", what, (int)s);
    exit(1);
  }
}

static float *dev_random(size_t n) {
  float *h = malloc(sizeof(float) * (n ? n : 1)), *d;
  size_t i;
  unsigned r = 12345;
  for (i = 0; i < n; i++) {
    r = r * 1103515245u + 12345u;
    h[i] = (float)((r >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  check(cudaMalloc((void **)&d, sizeof(float) * (n ? n : 1)), "cudaMalloc");
  check(cudaMemcpy(d, h, sizeof(float) * n, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  free(h);
  return d;
}

static void make(shape *s, int ta, int tb, int m, int n, int k) {
  s->ta = ta, s->tb = tb, s->m = m, s->n = n, s->k = k;
  s->a = dev_random((size_t)m * k);
  s->b = dev_random((size_t)k * n);
  s->c = dev_random((size_t)m * n);
}

/* Row-major C = op(A) op(B) as column-major C^T = op(B)^T op(A)^T. */
static void run(cublasHandle_t h, const shape *s) {
  const float one = 1.0f, zero = 0.0f;
  int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  checkb(cublasSgemm(h, s->tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                     s->ta ? CUBLAS_OP_T : CUBLAS_OP_N, s->n, s->m, s->k,
                     &one, s->b, ldb, s->a, lda, &zero, s->c, s->n),
         "cublasSgemm");
}

/* Seconds per run of shapes[0..ns), timed over at least 0.3 s. */
static double time_mix(cublasHandle_t h, const shape *sh, int ns) {
  cudaEvent_t e0, e1;
  float ms = 0;
  long reps = 5, r;
  int i;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  for (r = 0; r < 5; r++)
    for (i = 0; i < ns; i++)
      run(h, &sh[i]);
  for (;;) {
    check(cudaEventRecord(e0, 0), "cudaEventRecord");
    for (r = 0; r < reps; r++)
      for (i = 0; i < ns; i++)
        run(h, &sh[i]);
    check(cudaEventRecord(e1, 0), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    if (ms >= 300 || reps >= (1L << 24))
      break;
    reps = ms > 1 ? (long)(reps * 400.0 / ms) + 1 : reps * 100;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms / 1e3 / reps;
}

int main(int argc, char **argv) {
  int count = 0, sizes[64], nl = 0, batch, square, i, ns = 0;
  static shape sh[192];
  double flops = 0, t;
  char *p;
  struct cudaDeviceProp prop;
  cublasHandle_t h;
  if (argc < 3) {
    fprintf(stderr, "usage: sgemm_rate LAYERS BATCH [SQUARE]\n");
    return 2;
  }
  for (p = argv[1]; *p != '\0' && nl < 64;) {
    sizes[nl++] = (int)strtol(p, &p, 10);
    if (*p == ',')
      p++;
  }
  batch = atoi(argv[2]);
  square = argc > 3 ? atoi(argv[3]) : 8192;
  if (nl < 2 || batch < 1 || square < 1) {
    fprintf(stderr, "sgemm_rate: bad LAYERS, BATCH or SQUARE\n");
    return 2;
  }
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("SKIP: no GPU: %s\n",
           count == 0 ? "no CUDA device" : "no CUDA driver");
    return 77;
  }
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  printf("device %s (cc %d.%d, %d SMs)\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount);
  checkb(cublasCreate(&h), "cublasCreate");
  for (i = 1; i < nl; i++) {
    int in = sizes[i - 1], out = sizes[i];
    make(&sh[ns++], 0, 0, batch, out, in);
    make(&sh[ns++], 1, 0, in, out, batch);
    flops += 4.0 * in * out;
    if (i > 1) {
      make(&sh[ns++], 0, 1, batch, in, out);
      flops += 2.0 * in * out;
    }
  }
  for (i = 0; i < ns; i++) {
    double ti = time_mix(h, &sh[i], 1);
    printf("shape %s%s m %d n %d k %d: %.1f GFLOP/s (%.1f us)\n",
           sh[i].ta ? "T" : "N", sh[i].tb ? "T" : "N", sh[i].m, sh[i].n,
           sh[i].k, 2.0 * sh[i].m * sh[i].n * sh[i].k / ti / 1e9, ti * 1e6);
  }
  t = time_mix(h, sh, ns);
  printf("flop_per_sample %.0f\n", flops);
  printf("mix_gflops %.1f\n", flops * batch / t / 1e9);
  for (i = 0; i < ns; i++) {
    cudaFree(sh[i].a), cudaFree(sh[i].b), cudaFree(sh[i].c);
  }
  make(&sh[0], 0, 0, square, square, square);
  t = time_mix(h, sh, 1);
  printf("square_gflops %.1f\n", 2.0 * square * square * (double)square / t /
                                     1e9);
  cublasDestroy(h);
  return 0;
}
