/* The C code generator: from a parallel_for body's AST, one C function that
 * runs the body over a whole block of elements (util/cbody.h is the
 * contract), bit-identical to the Lua interpreter in exact mode.
 *
 * A body outside the compiled subset is not an error of the loop: the
 * generator says why (the construct and its line) and the caller runs the
 * body in the interpreter, or fails when the user asked for tier "c".
 */
#ifndef ORION_ANALYSIS_CGEN_H
#define ORION_ANALYSIS_CGEN_H

#include "analysis/analyze.h"
#include "analysis/ast.h"
#include "util/cbody.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct orion_cgen_in {
  const ast_node *func;  /* the body's AST_FUNC (see orion_find_body) */
  const char *chunkname; /* for messages, as the interpreter names it */
  orion_arrayinfo iter;  /* the iterated array (type and sparse matter) */
  orion_resolve_fn resolve; /* the body's free names, as for the analysis */
  void *ud;
  int fast; /* opts.fast: may reassociate, contract and use f32 math */
  /* Optional: the whole parsed chunk the body is in.  With it, free names
   * are known to be upvalues or globals, which some messages tell apart
   * ("number (upvalue 'x') has no integer representation"); without it,
   * captured numbers are taken for upvalues and `math` for the global. */
  const ast_node *chunk;
  /* Also emit the device form (util/gbody.h: the source then builds with
   * nvcc too); set when some executor has a GPU.  Without it the source
   * is the CPU body alone (and nvcc stops at an #error). */
  int gpu;
} orion_cgen_in;

typedef struct orion_cgen_out {
  orion_buf src;       /* the generated C source (NUL-terminated) */
  orion_cslot *slots;  /* what the code needs bound, see util/cbody.h */
  int nslots;
  char why[512];       /* outside the subset: "LINE: what" */
  /* "" when the source also builds for the device (nvcc, util/gbody.h);
   * else why not: "LINE: what" (buffers, math.random and so flushes every
   * n elements run on the CPU).  Such a source fails to build with nvcc
   * (#error with this text). */
  char gpu_why[256];
} orion_cgen_out;

/* Generates the body's C source.  Returns 0 with out->src and out->slots
 * filled; ORION_EUNSUPPORTED with out->why saying which construct (and its
 * line) is outside the compiled subset; ORION_ENOMEM.  Free out with
 * orion_cgen_out_free in every case. */
int orion_cgen(const orion_cgen_in *in, orion_cgen_out *out, orion_error *err);
void orion_cgen_out_free(orion_cgen_out *out);

/* The compiler flags that exact or fast mode adds after the user's
 * (exact: no contraction, no reassociation). */
const char *orion_cgen_mode_flags(int fast);

/* The nvcc flags of exact or fast mode (exact: no FMA contraction, IEEE
 * division and square root, no flush to zero; never --use_fast_math). */
const char *orion_cgen_mode_flags_cuda(int fast);

#endif
