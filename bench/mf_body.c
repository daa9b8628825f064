/* bench/mf_body.c: a compiled MF body alone, over MovieLens-1M's ratings
 * (bench/mf_body.sh builds and runs it).
 *
 *   mf_body K RUNS RATINGS OBJ...
 *
 * RATINGS is a text file of "user item rating" lines (1-based ids); each
 * OBJ a compiled body of apps/mf/mf.lua's SGD loop (util/cbody.h, slots
 * W, H, the accumulator, then K, lr, reg_w, reg_h).  The ratings are cut
 * into 8 x 8 blocks of equal id ranges, as the 2-D schedule cuts them,
 * and laid out in two orders: "key" (each block user by user, the order
 * a block had before interleave = true) and "rounds" (each block's users
 * dealt out in rounds, dsm/blocks.c's interleave).  Every run trains
 * W and H from the same start for 5 epochs, block by block; runs of
 * every (object, order) pair are interleaved (A, B, A, B, ...).  Prints,
 * per pair, the CPU nanoseconds per rating: the best run and the median. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cbody.h"

#define GRID 8
#define EPOCHS 5
#define MAXOBJ 4

typedef struct rating {
  int64_t u, i;
  float r;
  int block, rank;
} rating;

static int by_key(const void *x, const void *y) {
  const rating *a = x, *b = y;
  if (a->block != b->block)
    return a->block < b->block ? -1 : 1;
  if (a->u != b->u)
    return a->u < b->u ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static int by_round(const void *x, const void *y) {
  const rating *a = x, *b = y;
  if (a->block != b->block)
    return a->block < b->block ? -1 : 1;
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->u != b->u)
    return a->u < b->u ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The ratings of a file, or NULL with a message. */
static rating *read_ratings(const char *path, int64_t *n, int64_t *nu,
                            int64_t *ni) {
  FILE *f = fopen(path, "r");
  rating *r = NULL;
  int64_t cap = 0, line = 0;
  long u, i;
  double v;
  int got;
  *n = *nu = *ni = 0;
  if (f == NULL) {
    perror(path);
    return NULL;
  }
  while ((got = fscanf(f, "%ld %ld %lf", &u, &i, &v)) == 3) {
    line++;
    if (u < 1 || i < 1) {
      fprintf(stderr, "%s:%lld: ids start at 1\n", path, (long long)line);
      free(r);
      fclose(f);
      return NULL;
    }
    if (*n == cap) {
      rating *r2;
      cap = cap ? cap * 2 : 1 << 20;
      r2 = realloc(r, sizeof *r * (size_t)cap);
      if (r2 == NULL) {
        fprintf(stderr, "mf_body: out of memory\n");
        free(r);
        fclose(f);
        return NULL;
      }
      r = r2;
    }
    r[*n].u = u - 1;
    r[*n].i = i - 1;
    r[*n].r = (float)v;
    (*n)++;
    if (u > *nu)
      *nu = u;
    if (i > *ni)
      *ni = i;
  }
  if (got != EOF || *n == 0) {
    fprintf(stderr, "%s:%lld: not a \"user item rating\" line\n", path,
            (long long)line + 1);
    free(r);
    fclose(f);
    return NULL;
  }
  fclose(f);
  return r;
}

/* The ratings in one order, as the iterated array's keys and values. */
static void lay_out(rating *r, int64_t n, int rounds, int64_t *keys,
                    float *vals) {
  int64_t e;
  qsort(r, (size_t)n, sizeof *r, by_key);
  if (rounds) {
    for (e = 0; e < n; e++)
      r[e].rank = e > 0 && r[e].block == r[e - 1].block &&
                          r[e].u == r[e - 1].u
                      ? r[e - 1].rank + 1
                      : 0;
    qsort(r, (size_t)n, sizeof *r, by_round);
  }
  for (e = 0; e < n; e++) {
    keys[2 * e] = r[e].u;
    keys[2 * e + 1] = r[e].i;
    vals[e] = r[e].r;
  }
}

int main(int argc, char **argv) {
  int k, runs, nobj, o, ord, run, b, ep, ok = 1;
  int64_t n, nu, ni, e, x, starts[GRID * GRID + 1];
  rating *r;
  int64_t *keys[2];
  float *vals[2], *W, *H;
  orion_cbody_fn fn[MAXOBJ];
  void *lib[MAXOBJ];
  double *t[MAXOBJ][2];
  if (argc < 5 || argc - 4 > MAXOBJ || (k = atoi(argv[1])) < 1 ||
      (runs = atoi(argv[2])) < 1) {
    fprintf(stderr, "usage: mf_body K RUNS RATINGS OBJ... (1 to %d objects)\n",
            MAXOBJ);
    return 2;
  }
  nobj = argc - 4;
  r = read_ratings(argv[3], &n, &nu, &ni);
  if (r == NULL)
    return 1;
  for (e = 0; e < n; e++)
    r[e].block = (int)(r[e].u * GRID / nu) * GRID + (int)(r[e].i * GRID / ni);
  for (ord = 0; ord < 2; ord++) {
    keys[ord] = malloc(sizeof(int64_t) * 2 * (size_t)n);
    vals[ord] = malloc(sizeof(float) * (size_t)n);
    if (keys[ord] == NULL || vals[ord] == NULL) {
      fprintf(stderr, "mf_body: out of memory\n");
      return 1;
    }
    lay_out(r, n, ord, keys[ord], vals[ord]);
  }
  for (b = 0, e = 0; b <= GRID * GRID; b++) {
    while (e < n && r[e].block < b)
      e++;
    starts[b] = e;
  }
  free(r);
  W = malloc(sizeof *W * (size_t)(nu * k));
  H = malloc(sizeof *H * (size_t)(ni * k));
  for (o = 0; o < nobj; o++) {
    lib[o] = dlopen(argv[4 + o], RTLD_NOW | RTLD_LOCAL);
    fn[o] = lib[o] != NULL ? (orion_cbody_fn)dlsym(lib[o], ORION_CBODY_FN)
                           : NULL;
    if (fn[o] == NULL) {
      fprintf(stderr, "mf_body: %s: %s\n", argv[4 + o],
              lib[o] != NULL ? "no " ORION_CBODY_FN : dlerror());
      return 1;
    }
    t[o][0] = calloc((size_t)runs, sizeof(double));
    t[o][1] = calloc((size_t)runs, sizeof(double));
  }
  if (W == NULL || H == NULL) {
    fprintf(stderr, "mf_body: out of memory\n");
    return 1;
  }
  for (run = 0; run < runs && ok; run++)
    for (o = 0; o < nobj && ok; o++)
      for (ord = 0; ord < 2 && ok; ord++) {
        orion_carray arr[2];
        orion_cacc acc;
        orion_cval cs[4];
        orion_cctx c;
        uint64_t s = 88172645463325252ULL;
        double t0;
        for (x = 0; x < nu * k + ni * k; x++) { /* xorshift, in [0, 0.1) */
          s ^= s << 13;
          s ^= s >> 7;
          s ^= s << 17;
          (x < nu * k ? W : H)[x < nu * k ? x : x - nu * k] =
              (float)(s >> 40) * (0.1f / 16777216.0f);
        }
        memset(arr, 0, sizeof arr);
        memset(&acc, 0, sizeof acc);
        memset(&c, 0, sizeof c);
        for (b = 0; b < 2; b++) {
          arr[b].values = b ? H : W;
          arr[b].type = 0;
          arr[b].ndims = 2;
          arr[b].dims[0] = b ? ni : nu;
          arr[b].dims[1] = k;
          arr[b].strides[0] = k;
          arr[b].strides[1] = 1;
        }
        cs[0].i = k;
        cs[1].d = 0.02;
        cs[2].d = 0.05;
        cs[3].d = 0.05;
        c.abi = ORION_CBODY_ABI;
        c.iter.values = vals[ord];
        c.iter.keys = keys[ord];
        c.iter.type = 0;
        c.iter.ndims = 2;
        c.iter.nnz = n;
        c.iter.dims[0] = nu;
        c.iter.dims[1] = ni;
        c.iter.strides[0] = ni;
        c.iter.strides[1] = 1;
        c.arrays = arr;
        c.accs = &acc;
        c.consts = cs;
        c.poll_left = INT64_MAX;
        t0 = cpu_now();
        for (ep = 0; ep < EPOCHS && ok; ep++)
          for (b = 0; b < GRID * GRID && ok; b++)
            if (fn[o](&c, starts[b], starts[b + 1]) != 0) {
              fprintf(stderr, "mf_body: %s failed: %s\n", argv[4 + o], c.err);
              ok = 0;
            }
        t[o][ord][run] = (cpu_now() - t0) / ((double)EPOCHS * (double)n) * 1e9;
      }
  if (ok) {
    printf("%-48s %-7s %14s %16s\n", "object", "order", "best ns/rating",
           "median ns/rating");
    for (o = 0; o < nobj; o++)
      for (ord = 0; ord < 2; ord++) {
        qsort(t[o][ord], (size_t)runs, sizeof(double), cmp_double);
        printf("%-48s %-7s %14.2f %16.2f\n", argv[4 + o],
               ord ? "rounds" : "key", t[o][ord][0], t[o][ord][runs / 2]);
      }
  }
  for (o = 0; o < nobj; o++) {
    free(t[o][0]);
    free(t[o][1]);
    dlclose(lib[o]);
  }
  for (ord = 0; ord < 2; ord++) {
    free(keys[ord]);
    free(vals[ord]);
  }
  free(W);
  free(H);
  return ok ? 0 : 1;
}
