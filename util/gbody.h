/* The contract between an executor with a GPU (executor/exec_gbody.c) and a
 * compiled loop body built for the device.
 *
 * The code generator writes one source per body (analysis/cgen.c).  Built
 * with the C compiler it is the CPU body of util/cbody.h; built with nvcc
 * (util/ccomp.c, orion_cobj_build_cuda: `-x cu -DORION_GPU_BODY=1`, cudart
 * shared so that the object shares the executor's CUDA context) the same
 * source also defines the entry points below.  The element code is the
 * same text in both: a device function runs the body over a list of
 * elements, in list order, exactly as the CPU loop does over [lo, hi).
 *
 * One call of orion_gbody_run runs a block as a device grid:
 *   - the block's elements are cut into groups; group g is the elements
 *     d_order[d_group_off[g] .. d_group_off[g+1]) (positions in iter), run
 *     one after another by one device thread, in that order;
 *   - groups are cut into steps; step s is the groups
 *     [h_step_off[s], h_step_off[s+1]); the groups of a step run
 *     concurrently, and step s+1 starts after every group of step s is
 *     done (the schedule that fills these, executor/gpugrid.c, makes the
 *     groups of one step touch disjoint rows, so the result is one a serial
 *     run allows);
 *   - or, when claim_b > 0 (a 2d rotation: its b x b cells are the
 *     groups), the groups are claimed instead of run by steps: one kernel
 *     whose warps take rows and run each row's groups while holding their
 *     columns (util/gclaim.h), so that no two groups that share a row or
 *     a column run at once; h_step_off is then not read;
 *   - accumulators: each group starts from an empty partial (has = 0) and
 *     its partial is written to h_partials[g * naccs + k]; the caller folds
 *     them in group order, so a grid gives the same bits on every run;
 *   - errors: the first error the device records (lowest group) stops
 *     the block: the call returns nonzero with err the message the CPU
 *     body would write for that element and cur that element.  Every
 *     group already running finishes its current element.
 * Arrays (iter and arrays[]) carry DEVICE pointers in values and keys;
 * everything else in the struct is host memory.  The call returns after
 * the stream has finished the block (or the timeout passed).
 *
 *   - math.random: group g draws from its own xoshiro256** state,
 *     orion_gbody_seed(rng, group0 + g): group 0 from the block's (the
 *     CPU body's, so a 1 x 1 grid draws what the CPU draws), every other
 *     group from a state made of the block's and its number.  The grid
 *     depends on the block and the options only, so the draws are the
 *     same on every device and every run;
 *   - buffers (bufs, one per ORION_CSLOT_BUFFER slot, h a device pointer
 *     laid out as ORION_GBUF_BYTES says, zeroed by the caller): the body's
 *     `B[k] = B[k] + x` and `- x` add x atomically to the pending sum of
 *     element k and mark it; the caller adds the sums to the executor's
 *     pending writes afterwards.  The generator allows only that form on
 *     the device, and for float targets only in fast mode (the order of
 *     the atomic additions varies from run to run).
 *
 * Bodies outside the GPU subset (other buffer reads and writes, flushes
 * every n elements: analysis/cgen.c's gpu_why says which) are not built
 * for the device; they run on the CPU with a one-line note.
 */
#ifndef ORION_UTIL_GBODY_H
#define ORION_UTIL_GBODY_H

#include <stddef.h>
#include <stdint.h>

#include "util/cbody.h"

#define ORION_GBODY_ABI 3
#define ORION_GBODY_FN "orion_gbody_run"          /* orion_gbody_fn */
#define ORION_GBODY_ABI_SYM "orion_gbody_abi"     /* const int */
#define ORION_GBODY_WRITES_FN "orion_gbody_writes" /* orion_gbody_writes_fn */
#define ORION_GBODY_ROWKEY_FN "orion_gbody_rowkey" /* orion_gbody_rowkey_fn */

/* ORION_PRELUDE_BEGIN */
typedef struct orion_gctx {
  int32_t abi;      /* ORION_GBODY_ABI */
  int32_t executor; /* for messages */
  orion_carray iter;    /* values/keys: device pointers; nnz: elements */
  orion_carray *arrays; /* host array, one per ORION_CSLOT_ARRAY slot;
                           values: device pointers */
  orion_cval *consts;   /* one per ORION_CSLOT_CONST slot */
  int32_t naccs;        /* ORION_CSLOT_ACC slots */
  int32_t pad;
  const orion_cacc *accs; /* host, naccs: the accumulators; only op is
                             read (each group's partial starts empty with
                             that op) */
  const int64_t *d_order;     /* device: element positions, group-major */
  const int64_t *d_group_off; /* device: ngroups + 1 offsets into d_order */
  const int64_t *h_step_off;  /* host: nsteps + 1 offsets into the groups */
  int64_t ngroups;
  int64_t nsteps;
  orion_cacc *h_partials; /* host, ngroups * naccs: each group's partials */
  void *d_scratch; /* device, at least ORION_GBODY_SCRATCH(ngroups, naccs)
                      bytes, owned by the caller */
  void *stream;    /* cudaStream_t */
  double timeout_s; /* 0: 600 s */
  int64_t claim_b;  /* > 0: the groups are claimed over claim_b rows; the
                       scratch then also holds ORION_GCLAIM_SCRATCH(claim_b,
                       ngroups) bytes after ORION_GBODY_SCRATCH's */
  const int64_t *d_row_off;   /* device, claim_b + 1: offsets into the row
                                 lists */
  const int64_t *d_row_group; /* device, ngroups: each row's groups */
  const int64_t *d_row_col;   /* device, ngroups: their columns */
  uint64_t rng[4];  /* math.random: the block's state, as the CPU body's */
  int64_t group0;   /* the number of group 0 in the block (a streamed
                       chunk's first group), for orion_gbody_seed */
  orion_cbuffer *bufs; /* host array, one per ORION_CSLOT_BUFFER slot; h:
                          device memory, ORION_GBUF_BYTES(elements) */
  int32_t nbufs;
  int32_t pad2;
  int64_t cur;     /* out, on error: the element that failed */
  char err[1024];  /* out, on error: the message */
} orion_gctx;

/* A buffer's device memory for a target of n elements: the pending sums
 * (int64_t for an integer target, double for a float one), then a byte
 * per element, 1 where the body added. */
#define ORION_GBUF_BYTES(n) ((size_t)(n) * (sizeof(int64_t) + 1))

#ifndef ORION_GBODY_HD /* __host__ __device__ in a generated source */
#define ORION_GBODY_HD
#endif
/* Group g's math.random state from the block's: group 0 takes the block's
 * own; any other a splitmix64 sequence started from the block's state and
 * g (splitmix64, the generator xoshiro's authors give for seeding it),
 * a different state for every g. */
static inline __attribute__((unused)) ORION_GBODY_HD void
orion_gbody_seed(const uint64_t blk[4], int64_t g, uint64_t out[4]) {
  uint64_t x;
  int i;
  if (g == 0) {
    for (i = 0; i < 4; i++)
      out[i] = blk[i];
    return;
  }
  x = blk[0] ^ (blk[1] << 17 | blk[1] >> 47) ^ (blk[2] << 31 | blk[2] >> 33) ^
      (blk[3] << 47 | blk[3] >> 17) ^ ((uint64_t)g * 0xd1342543de82ef95u);
  for (i = 0; i < 4; i++) {
    uint64_t z = (x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    out[i] = z ^ (z >> 31);
  }
}

#define ORION_GBODY_SCRATCH(ngroups, naccs)                                  \
  (((size_t)4096 + (size_t)(ngroups) * (size_t)((naccs) > 0 ? (naccs) : 1) * \
                       sizeof(orion_cacc) +                                  \
    63) / 64 * 64)
/* ORION_PRELUDE_END */

/* Returns 0, or nonzero with g->err and g->cur set. */
typedef int (*orion_gbody_fn)(orion_gctx *g);

/* 1 when the body may write array slot k (0-based among the ARRAY slots),
 * k == -1 meaning the iterated array (a body that returns a value); the
 * caller copies back only those. */
typedef int (*orion_gbody_writes_fn)(int k);

/* For array slot k, the iterated key d (0-based) that every first
 * subscript of the array in the body is, so that a block reaches only the
 * rows its elements' key d spans (the caller copies only those); -1 when
 * the body reaches it otherwise.  Sources generated before it existed do
 * not have it: every row moves. */
typedef int (*orion_gbody_rowkey_fn)(int k);

#endif
