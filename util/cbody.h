/* The contract between an executor (executor/exec.c) and a compiled loop body:
 * the C function analysis/cgen.c generates from a body's AST, built into a
 * shared object by util/ccomp.c and loaded with dlopen.
 *
 * The generated source cannot include this header (it is compiled on
 * executor hosts where the project's headers may not exist): the build
 * copies the part between ORION_PRELUDE_BEGIN and ORION_PRELUDE_END into
 * the prelude of every generated source (analysis/cgen_prelude.h,
 * analysis/mkprelude.awk), so that part must stay self-contained (system
 * headers only).  Bump ORION_CBODY_ABI on any change of layout: the loader
 * refuses an object whose `orion_cbody_abi` differs, so objects cached
 * from an older build are rebuilt.
 *
 * One call runs the body over elements [lo, hi) of the iterated array, in
 * order, with the loop over elements in C.  It returns 0, or nonzero after
 * writing the error message to ctx->err (and ctx->cur is the element that
 * failed).  Arrays are written in place; accumulators are read from
 * ctx->accs at entry and written back before returning (also on error), so
 * a sequence of calls folds values exactly as the interpreter does.
 */
#ifndef ORION_UTIL_CBODY_H
#define ORION_UTIL_CBODY_H

#include <stdint.h>

#define ORION_CBODY_ABI 5
#define ORION_CBODY_FN "orion_cbody_run"     /* orion_cbody_fn */
#define ORION_CBODY_ABI_SYM "orion_cbody_abi" /* const int */
/* const int: 1 when the body returns values (stored into the iterated
 * array's elements), 0 when it never does; an object without it is taken
 * to store them. */
#define ORION_CBODY_ITER_SYM "orion_cbody_stores_iter"

/* ORION_PRELUDE_BEGIN */
#define ORION_CBODY_MAXDIMS 8 /* == ORION_MAX_DIMS */

/* A number as a body sees it: an integer or a float.  Which member is live
 * is known from context (the element type, or the slot's isint). */
typedef union orion_cval {
  int64_t i;
  double d;
} orion_cval;

/* An array bound to the body, or the iterated array.  Dense arrays are
 * row-major (element (k1..kn), 0-based, is at sum k_d * strides[d]).  The
 * iterated array may be sparse: then keys holds nnz * ndims 0-based keys,
 * element-major, and values nnz values; for dense arrays keys is NULL. */
typedef struct orion_carray {
  void *values;
  const int64_t *keys;
  int32_t type; /* orion_type: 0 f32, 1 f64, 2 i32, 3 i64 */
  int32_t ndims;
  int64_t nnz;
  int64_t dims[ORION_CBODY_MAXDIMS];
  int64_t strides[ORION_CBODY_MAXDIMS];
} orion_carray;

/* An orion.buffer.  dims/strides are those of its target; op is the
 * orion_apply_op (0 add, 1 replace, 2 function).  The pending writes live
 * in the executor's store (dsm/wbuf.h).  When that store is dense, vals is
 * its value array (one per element of the target, zero when nothing is
 * pending) and the body reads and writes it inline, as a parameter-server
 * worker does its local delta cache: a first write to element k since the
 * last flush sets bit k of bits, appends k to dirty while *ndirty <
 * dirty_max, and counts it in *ndirty (the store's own bookkeeping, so
 * that a flush takes exactly what the calls below would have left).
 * vals == NULL: reads and writes go through buf_get/buf_set.  vals set
 * and bits == NULL: a "scan" store (an "add" buffer flushed per block or
 * per clock): the body only stores the values, and the executor marks
 * every element whose value is not all-zero bits pending after the call
 * (orion_wbuf_absorb), so that the element loop has no branch and
 * vectorizes; a generated body runs a copy of itself compiled for it when
 * every buffer's store is one.  The pointers stay valid for the whole call
 * (also across elem_done's flushes). */
typedef struct orion_cbuffer {
  void *h;
  int32_t type;
  int32_t ndims;
  int32_t op;
  int32_t pad;
  int64_t dims[ORION_CBODY_MAXDIMS];
  int64_t strides[ORION_CBODY_MAXDIMS];
  orion_cval *vals;
  uint64_t *bits;
  int64_t *dirty;
  int64_t *ndirty;
  int64_t dirty_max;
} orion_cbuffer;

/* An accumulator's running partial, as executor/accum.h's orion_accval:
 * op 0 sum, 1 min, 2 max; has = any value folded in; isint = the value is
 * the integer i (else the float d). */
typedef struct orion_cacc {
  int32_t op;
  int32_t has;
  int32_t isint;
  int32_t pad;
  int64_t i;
  double d;
} orion_cacc;

typedef struct orion_cctx orion_cctx;

struct orion_cctx {
  int32_t abi;      /* ORION_CBODY_ABI */
  int32_t executor; /* executor id, for messages */
  orion_carray iter;
  orion_carray *arrays; /* one per ORION_CSLOT_ARRAY slot, in slot order */
  orion_cbuffer *bufs;  /* one per ORION_CSLOT_BUFFER slot */
  orion_cacc *accs;     /* one per ORION_CSLOT_ACC slot */
  orion_cval *consts;   /* one per ORION_CSLOT_CONST slot */
  uint64_t rng[4];      /* math.random's xoshiro256** state: the executor
                           seeds it per block as math.randomseed would */
  /* Buffer element `key` (linear, 0-based): its pending value, or 0 of
   * the target's kind when none is pending. */
  orion_cval (*buf_get)(orion_cctx *c, void *h, int64_t key);
  /* Sets the pending value; nonzero (with c->err set) on failure, e.g. an
   * i32 "replace" value out of range or out of memory. */
  int (*buf_set)(orion_cctx *c, void *h, int64_t key, orion_cval v);
  /* Called after each element when some buffer flushes every n elements
   * (NULL otherwise); nonzero (c->err set) fails the block. */
  int (*elem_done)(orion_cctx *c);
  /* A fast-mode body whose buffers all write into f32 targets, every
   * store a scan store: the buffer's pending values as floats, one per
   * element of the target (dsm/wbuf.h's f32 form), read and stored
   * inline without marks, half the bytes of vals; NULL, with c->err set,
   * when the store has no such form.  A body calls it at entry, for each
   * buffer, only when every store is a scan store; NULL here: the body
   * uses vals. */
  float *(*buf_f32)(orion_cctx *c, void *h);
  void *ud;      /* the executor's */
  int64_t cur;   /* the element being run; the body keeps it current */
  /* The loop deadline: the body counts poll_left down at each element and
   * each back edge of its loops, and below 0 calls poll (NULL: none, and
   * poll_left is INT64_MAX), which sets poll_left again and returns
   * nonzero, c->err set, once the block ran past its deadline. */
  int (*poll)(orion_cctx *c);
  int64_t poll_left;
  char err[1024];
};
/* ORION_PRELUDE_END */

typedef int (*orion_cbody_fn)(orion_cctx *c, int64_t lo, int64_t hi);

/* What the generated code needs bound, in the order the ctx arrays list
 * them (each kind numbered from 0 separately). */
typedef enum orion_cslot_kind {
  ORION_CSLOT_ARRAY = 0, /* a dense DistArray (id) */
  ORION_CSLOT_BUFFER,    /* an orion.buffer (id) */
  ORION_CSLOT_ACC,       /* an accumulator (id) */
  ORION_CSLOT_CONST      /* a captured number: ival when isint, else fval */
} orion_cslot_kind;

typedef struct orion_cslot {
  orion_cslot_kind kind;
  char *name; /* the name in the body (owned) */
  int64_t id;
  int isint;
  int64_t ival;
  double fval;
  /* Arrays: the first line the generated code stores into it directly,
   * 0 for none (the driver's runtime guard, lua/pfor_guard.c; not sent to
   * executors). */
  int wline;
} orion_cslot;

#endif
