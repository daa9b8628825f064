/* The C code generator for compiled loop bodies (issue 5): one C function
 * per parallel_for body that runs the body over a block of elements,
 * bit-identical to the Lua 5.4 interpreter in exact mode.
 *
 * How it works:
 *  - The body's AST is walked several times.  The first walks only infer
 *    types: every local's set of possible values (nil, false, true,
 *    integer, float, or an array slice, an accumulator, the math table),
 *    joined over all its assignments until nothing changes.  The last walk
 *    emits C with those types.  A local that holds integers and floats at
 *    different points, or booleans and numbers, becomes a tagged value
 *    (o_v) with Lua's rules applied at run time; one with a single type
 *    becomes an int64_t, a double (a float in fast mode for f32 data) or
 *    an int.
 *  - Evaluation order follows the Lua compiler (operands left to right,
 *    targets of an assignment before its values, stores right to left),
 *    so the first error and math.random's draws are the interpreter's.
 *  - Errors give the interpreter's message and line.  Integer `//` and
 *    `%` by zero are raised by the VM without saving the current
 *    instruction, so Lua reports the line of the last instruction that
 *    did save it (an index, a call, `==` of two registers, a numeric
 *    for...); the generated code tracks that line in o_pc when the body
 *    can divide an integer by zero.
 *  - Array subscripts are checked per access, except in innermost integer
 *    for loops: an access whose subscript is the loop variable (plus or
 *    minus a literal) is checked once for the whole range before the
 *    loop, and the loop falls back to a copy with per-access checks when
 *    that check fails, so behaviour is the same either way.
 *  - Conditions narrow types where they hold: in `x and x * 2` or
 *    `if x ~= nil then ... end` a local that may be nil is a number.
 *  - In fast mode, values computed from f32 data are floats and the
 *    compiler may reassociate and contract (orion_cgen_mode_flags(1));
 *    a dot product in the unchecked copy of a loop runs in four vector
 *    accumulators (split_dot in cgen_stmt.c).
 *
 * The subset: numbers, booleans and nil in locals; arithmetic, bitwise,
 * comparison and logical operators; math.* (but randomseed and type);
 * local, assignment, numeric for, while, repeat, if, break, goto, do,
 * return; dense arrays, slices and buffers of every element type, `#`;
 * acc:add; captured numbers.  Anything else (strings, tables, functions,
 * calls other than math.* and acc:add, generic for, varargs, captured
 * values that are not numbers, arrays, buffers or accumulators) is
 * refused with "LINE: what".
 *
 * This file holds the entry point, the generator's memory and output, the
 * walk over the body and the assembly of the generated source; the other
 * parts are listed in analysis/cgen_int.h.
 */
#include "analysis/cgen.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/parse.h"
#include "util/alloc.h"
#include "util/gbody.h"
#include "analysis/cgen_int.h"

/* ======================================================================
 * The prelude: analysis/cgen_prelude.h with the marked parts of
 * util/cbody.h, util/luaops.h and util/luarand.h in place of their
 * includes, made into `prelude[]` (one string a line) by the build
 * (analysis/mkprelude.awk).
 * ====================================================================== */

#include "analysis/cgen_prelude.inc"

/* ======================================================================
 * Memory, strings, refusal.
 * ====================================================================== */

void oom(gen *g) {
  g->rc = ORION_ENOMEM;
  snprintf(g->out->why, sizeof g->out->why, "out of memory");
  longjmp(g->jb, 1);
}

void *amalloc(gen *g, size_t n) {
  arena_blk *b = g->arena;
  n = (n + 7) & ~(size_t)7;
  if (b == NULL || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    b = orion_malloc(sizeof *b + cap);
    if (b == NULL)
      oom(g);
    b->next = g->arena;
    b->used = 0;
    b->cap = cap;
    g->arena = b;
  }
  b->used += n;
  return (char *)b->data + b->used - n;
}

char *S(gen *g, const char *fmt, ...) {
  va_list ap;
  char small[256], *s;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom(g);
  s = amalloc(g, (size_t)n + 1);
  if ((size_t)n < sizeof small) {
    memcpy(s, small, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return s;
}

void grow(gen *g, void **v, int *cap, int n, size_t elem) {
  void *p;
  int c;
  if (n < *cap)
    return;
  c = *cap ? 2 * *cap : 16;
  p = orion_realloc(*v, elem * (size_t)c);
  if (p == NULL)
    oom(g);
  *v = p;
  *cap = c;
}

/* A temporary output buffer, freed with the generator even when a
 * refusal unwinds the walk. */
orion_buf *tmpbuf(gen *g) {
  orion_buf *b = amalloc(g, sizeof *b);
  orion_buf_init(b);
  grow(g, (void **)&g->bufs, &g->capbufs, g->nbufs, sizeof *g->bufs);
  g->bufs[g->nbufs++] = b;
  return b;
}

/* Refuses the body: out->why = "LINE: what". */
void refuse(gen *g, int line, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(g->out->why, sizeof g->out->why, "%d: %s", line, what);
  g->rc = ORION_EUNSUPPORTED;
  longjmp(g->jb, 1);
}

/* Notes that the body is outside the GPU subset (the first reason, in
 * the final walk only): out->gpu_why = "LINE: what". */
void gpu_note(gen *g, int line, const char *fmt, ...) {
  char what[200];
  va_list ap;
  if (!g->emit || g->out->gpu_why[0] != 0)
    return;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(g->out->gpu_why, sizeof g->out->gpu_why, "%d: %s", line, what);
}

/* A C string literal for s (any bytes). */
const char *cstr(gen *g, const char *s) {
  size_t n = strlen(s), i, j = 0;
  char *r = amalloc(g, 4 * n + 3);
  r[j++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      r[j++] = '\\';
      r[j++] = (char)ch;
    } else if (ch < 32 || ch >= 127 || ch == '?') {
      /* Octal, always three digits (no trigraphs, no merging). */
      r[j++] = '\\';
      r[j++] = (char)('0' + (ch >> 6));
      r[j++] = (char)('0' + ((ch >> 3) & 7));
      r[j++] = (char)('0' + (ch & 7));
    } else {
      r[j++] = (char)ch;
    }
  }
  r[j++] = '"';
  r[j] = 0;
  return r;
}

/* The AST printed as Lua (for messages). */
const char *lua_text(gen *g, const ast_node *n) {
  orion_buf b;
  char *s;
  orion_buf_init(&b);
  orion_ast_print(n, &b);
  if (b.oom) {
    orion_buf_free(&b);
    oom(g);
  }
  s = amalloc(g, b.len + 1);
  if (b.len > 0) /* an empty buffer's data is NULL */
    memcpy(s, b.data, b.len);
  s[b.len] = 0;
  orion_buf_free(&b);
  if (strlen(s) > 60)
    strcpy(s + 57, "...");
  return s;
}

/* ======================================================================
 * Output.
 * ====================================================================== */

static void put(gen *g, const char *s) { orion_buf_append(g->o, s, strlen(s)); }

/* Emits one line of code at the current indentation. */
void E(gen *g, const char *fmt, ...) {
  va_list ap;
  char small[256], *s = small;
  int n, i;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom(g);
  if ((size_t)n >= sizeof small) {
    s = amalloc(g, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  for (i = 0; i < g->ind; i++)
    orion_buf_append(g->o, "  ", 2);
  orion_buf_append(g->o, s, (size_t)n);
  orion_buf_append(g->o, "\n", 1);
}

void open_(gen *g, const char *head) {
  E(g, "%s{", head);
  g->ind++;
}

void close_(gen *g) {
  g->ind--;
  E(g, "}");
}

/* Emits a failure: the error call (which returns 1) and the exit. */
void fail(gen *g, const char *cond, const char *call) {
  if (cond != NULL)
    E(g, "if (O_NO(%s)) { o_rc = %s; goto o_out; }", cond, call);
  else
    E(g, "{ o_rc = %s; goto o_out; }", call);
}

const char *newtmp(gen *g) { return S(g, "t%d", ++g->tmp); }

/* "(c)", or c itself when it is already in one pair of parentheses (an
 * `if ((a == b))` draws a warning from clang). */
const char *cond_of(gen *g, const char *c) {
  size_t n = strlen(c), i;
  int depth = 0;
  if (n >= 2 && c[0] == '(' && c[n - 1] == ')') {
    for (i = 0; i < n; i++) {
      depth += c[i] == '(' ? 1 : c[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < n)
        break;
    }
    if (i == n)
      return c;
  }
  return S(g, "(%s)", c);
}

/* Brings o_pc to line where the interpreter saves its pc. */
void savepc(gen *g, int line) {
  if (g->pctrack)
    E(g, "o_pc = %d;", line);
}

/* The line integer `//` and `%` by zero report. */
const char *pcline(gen *g) {
  return g->pctrack ? "o_pc" : S(g, "%d", g->line0);
}

/* ======================================================================
 * The body and the function around it.
 * ====================================================================== */

/* Is n an integer `//` or `%` that may divide by zero?  (Those errors
 * report the VM's last saved line, which the generated code then tracks
 * when the body has one.) */
static int may_divide_by_zero(const ast_node *n, void *ud) {
  const ast_node *b;
  (void)ud;
  if (n->kind != AST_BINOP || (n->op != OP_IDIV && n->op != OP_MOD))
    return 0;
  b = n->b;
  while (b->kind == AST_PAREN)
    b = b->a;
  return !((b->kind == AST_INT && b->ival != 0) || b->kind == AST_FLT);
}

cv iter_value(gen *g, const char *pos) {
  switch (g->in->iter.type) {
  case ET_F32:
    return cv_of(ty_val(M_FLT, P_F32),
                 g->fast ? S(g, "IT_v[%s]", pos)
                         : S(g, "((double)IT_v[%s])", pos),
                 0);
  case ET_F64:
    return cv_of(ty_val(M_FLT, P_F64), S(g, "IT_v[%s]", pos), 0);
  case ET_I32:
    return cv_of(ty_val(M_INT, P_WEAK), S(g, "((int64_t)IT_v[%s])", pos), 0);
  default:
    return cv_of(ty_val(M_INT, P_WEAK), S(g, "IT_v[%s]", pos), 0);
  }
}

/* One walk over the body: declares the parameters from the element and
 * runs the statements. */
static void walk(gen *g) {
  const ast_node *f = g->in->func;
  const orion_arrayinfo *it = &g->in->iter;
  int i, nk = it->ndims;
  g->nsc = 0;
  g->blk = NULL;
  g->tmp = 0;
  g->dead = 0;
  g->suffix = "";
  g->ind = 2;
  g->hk = NULL;
  g->hfast = 0;
  g->nnar = 0;
  for (i = 0; i < g->nvars; i++)
    g->vars[i]->da = 0;
  for (i = 0; i < f->params.n; i++) {
    const ast_node *p = f->params.v[i];
    var *x = get_var(g, p);
    cv val;
    if (i < nk) {
      val = cv_of(ty_val(M_INT, P_WEAK),
                  it->sparse ? S(g, "(IT_k[o_e * %d + %d] + 1)",
                                 it->ragged ? 2 : nk, i)
                             : S(g, "(o_k%d + 1)", i),
                  0);
    } else if (i == nk && it->ragged) {
      memset(&val, 0, sizeof val);
      val.t.k = T_ROW;
      val.s = "";
    } else if (i == nk) {
      val = iter_value(g, "o_e");
    } else {
      val = cv_nil(g);
    }
    var_join(g, x, val.t, p->line);
    if (x->t.k == T_VAL)
      E(g, "O_U %s%s = %s;", ctype(g, x->t), x->cname, conv(g, val, x->t));
    x->da = 1;
    push_var(g, x);
  }
  stmts(g, &f->a->list);
}

/* The prelude's lines; without the device form, not the block
 * `#if defined(ORION_GPU_BODY) && ORION_GPU_BODY` ... `#endif` that holds
 * it (executors receive
 * every generated source: a CPU-only cluster is sent no device code). */
static void lines(gen *g, const char *const *l) {
  int depth = 0;
  for (; *l != NULL; l++) {
    if (!g->in->gpu && depth == 0 &&
        strcmp(*l, "#if defined(ORION_GPU_BODY) && ORION_GPU_BODY") == 0)
      depth = 1;
    else if (depth > 0 && strncmp(*l, "#if", 3) == 0)
      depth++;
    else if (depth > 0 && strcmp(*l, "#endif") == 0)
      depth--;
    else if (depth == 0) {
      put(g, *l);
      put(g, "\n");
    }
  }
}

/* " || ..." testing that a dense iterated array is row-major and
 * contiguous (its keys are then counted, not divided out). */
static const char *rowmajor(gen *g, const orion_arrayinfo *it) {
  const char *r;
  int d;
  if (it->sparse)
    return "";
  r = S(g, " || IT_s%d != 1", it->ndims - 1);
  for (d = it->ndims - 2; d >= 0; d--)
    r = S(g, "%s || IT_s%d != IT_s%d * IT_d%d", r, d, d + 1, d + 1);
  return r;
}

/* The declarations of the bound arrays, buffers and numbers, with the
 * checks that they are what the body was compiled for (at the start of
 * the body, and of o_gcheck, the host's checks for the device). */
static void prologue(gen *g) {
  const orion_arrayinfo *it = &g->in->iter;
  int i, d;
  E(g, "O_U %s *const IT_v = (%s *)c->iter.values;", etype_c(it->type),
    etype_c(it->type));
  E(g, "O_U const int64_t *const IT_k = c->iter.keys;");
  for (d = 0; d < it->ndims; d++)
    E(g,
      "O_U const int64_t IT_d%d = c->iter.dims[%d], IT_s%d = "
      "c->iter.strides[%d];",
      d, d, d, d);
  fail(g,
       S(g,
         "c->iter.type != %d || c->iter.ndims != %d || "
         "(c->iter.keys == NULL) != %d%s",
         it->type, it->ragged ? 2 : it->ndims, !it->sparse,
         rowmajor(g, it)),
       S(g, "o_err(c, %d, %s)", -g->line0,
         cstr(g, S(g,
                   "compiled body: the iterated array is not the %s %d-D "
                   "%s array the body was compiled for",
                   it->ragged ? "ragged" : it->sparse ? "sparse" : "dense",
                   it->ragged ? 2 : it->ndims,
                   etype_name(it->type)))));
  for (i = 0; i < g->nslots; i++) {
    const slot *s = &g->slots[i];
    const char *p = s->pfx;
    switch (s->kind) {
    case ORION_CSLOT_ARRAY:
      E(g, "O_U %s *const %s_v = (%s *)c->arrays[%d].values;",
        etype_c(s->etype), p, etype_c(s->etype), s->idx);
      for (d = 0; d < s->ndims; d++)
        E(g,
          "O_U const int64_t %s_d%d = c->arrays[%d].dims[%d], %s_s%d = "
          "c->arrays[%d].strides[%d];",
          p, d, s->idx, d, p, d, s->idx, d);
      fail(g,
           S(g,
             "c->arrays[%d].type != %d || c->arrays[%d].ndims != %d "
             "|| c->arrays[%d].keys != NULL || %s_s%d != 1",
             s->idx, s->etype, s->idx, s->ndims, s->idx, p, s->ndims - 1),
           S(g, "o_err(c, %d, %s)", -g->line0,
             cstr(g, S(g,
                       "compiled body: array '%.63s' is not the dense "
                       "row-major %d-D %s array the body was compiled for",
                       s->name, s->ndims, etype_name(s->etype)))));
      break;
    case ORION_CSLOT_BUFFER:
      E(g, "O_U void *const %s_h = c->bufs[%d].h;", p, s->idx);
      E(g, "O_U const int32_t %s_op = c->bufs[%d].op;", p, s->idx);
      /* The store's dense values (util/cbody.h; the CPU body's). */
      E(g,
        "O_U orion_cval *const %s_v = c->bufs[%d].vals; "
        "O_U uint64_t *const %s_b = c->bufs[%d].bits; "
        "O_U int64_t *const %s_l = c->bufs[%d].dirty; "
        "O_U int64_t *const %s_n = c->bufs[%d].ndirty; "
        "O_U const int64_t %s_m = c->bufs[%d].dirty_max;",
        p, s->idx, p, s->idx, p, s->idx, p, s->idx, p, s->idx);
      for (d = 0; d < s->ndims; d++)
        E(g,
          "O_U const int64_t %s_d%d = c->bufs[%d].dims[%d], %s_s%d = "
          "c->bufs[%d].strides[%d];",
          p, d, s->idx, d, p, d, s->idx, d);
      /* Row-major, as the target is dense: the last subscript steps by
       * one (a unit stride the element loops vectorize over). */
      fail(g,
           S(g, "c->bufs[%d].type != %d || c->bufs[%d].ndims != %d || %s_s%d "
                "!= 1",
             s->idx, s->etype, s->idx, s->ndims, p, s->ndims - 1),
           S(g, "o_err(c, %d, %s)", -g->line0,
             cstr(g, S(g,
                       "compiled body: buffer '%.63s' does not write into "
                       "the %d-D %s array the body was compiled for",
                       s->name, s->ndims, etype_name(s->etype)))));
      if (f32buf(g, s)) {
        /* The f32 copy's floats (util/cbody.h's buf_f32). */
        E(g, "O_U float *const %s_f = O_BF32 ? c->buf_f32(c, %s_h) : NULL;", p,
          p);
        fail(g, S(g, "O_BF32 && %s_f == NULL", p), "1");
      }
      break;
    case ORION_CSLOT_CONST:
      if (s->isint && g->kspec && i == g->kslot - 1)
        E(g, "O_U const int64_t %s = INT64_C(%lld);", p, (long long)s->ival);
      else if (s->isint)
        E(g, "O_U const int64_t %s = c->consts[%d].i;", p, s->idx);
      else
        E(g, "O_U const double %s = c->consts[%d].d;", p, s->idx);
      break;
    default:
      break;
    }
  }
}

/* The most arrays and numbers a device kernel's parameters take (each
 * array descriptor is 160 bytes; the limit is 4 KiB). */
#define GPU_MAX_ARRAYS 16
#define GPU_MAX_CONSTS 64

/* The device's entry points beside the function (nvcc only):
 * orion_gbody_writes says which arrays the body stores into. */
static void gpu_part(gen *g) {
  int i;
  E(g, "#if ORION_GPU_BODY");
  E(g, "extern \"C\" int orion_gbody_writes(int k);");
  open_(g, "extern \"C\" int orion_gbody_writes(int k) ");
  E(g, "return 0%s", g->itwritten ? " || k == -1" : "");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ARRAY && g->slots[i].written)
      E(g, "    || k == %d", g->slots[i].idx);
  E(g, "    ;");
  close_(g);
  /* For each array slot, the iterated key that its every first subscript
   * is: a block reaches only the rows of its own key range. */
  E(g, "extern \"C\" int orion_gbody_rowkey(int k);");
  open_(g, "extern \"C\" int orion_gbody_rowkey(int k) ");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ARRAY && g->slots[i].rowkey > 0)
      E(g, "if (k == %d) return %d;", g->slots[i].idx,
        g->slots[i].rowkey - 1);
  E(g, "return -1;");
  close_(g);
  /* The host's checks of what orion_gbody_run is given. */
  open_(g, "static int o_gcheck(orion_cctx *c) ");
  E(g, "int o_rc = 0;");
  open_(g, "");
  prologue(g);
  close_(g);
  E(g, "o_out: O_U;");
  E(g, "return o_rc;");
  close_(g);
  E(g, "#endif");
}

/* Whether to emit a copy of the run function for the captured bound of a
 * dot product's loop (fast mode; bodies without buffers, whose scan-store
 * copy would need one too; bounds up to 4096). */
static int kspec_on(const gen *g) {
  const slot *s = g->kslot > 0 ? &g->slots[g->kslot - 1] : NULL;
  return g->fast && s != NULL && g->nkind[ORION_CSLOT_BUFFER] == 0 &&
         s->ival >= 1 && s->ival <= 4096;
}

/* The run function around the element code: orion_cbody_run (o_gbody on
 * the device), or with dense its copy for scan stores, o_run_dense (CPU
 * only; util/cbody.h). */
static void run_fn(gen *g, const orion_buf *body, int dense) {
  const orion_arrayinfo *it = &g->in->iter;
  int i, d;
  if (g->kspec) {
    E(g, "static int o_run_k(orion_cctx *c, int64_t lo, int64_t hi) {");
  } else if (dense) {
    E(g, "static int o_run_%s(orion_cctx *c, int64_t lo, int64_t hi) {",
      dense == 2 ? "f32" : "dense");
  } else {
    E(g, "#if ORION_GPU_BODY");
    E(g, "static __device__ int o_gbody(o_dctx *c, const int64_t *o_ord, "
         "int64_t lo, int64_t hi) {");
    E(g, "#else");
    E(g, "int orion_cbody_run(orion_cctx *c, int64_t lo, int64_t hi) {");
    E(g, "#endif");
  }
  g->ind++;
  if (!dense && g->nkind[ORION_CSLOT_BUFFER] > 0) {
    /* Every buffer's store a scan store: the copy without a branch per
     * access (util/cbody.h). */
    E(g, "#if !ORION_GPU_BODY");
    E(g, "{ int o_sc = 1; for (int o_i = 0; o_i < O_NB; o_i++) "
         "o_sc &= c->bufs[o_i].vals != NULL && c->bufs[o_i].bits == NULL; "
         "if (o_sc && O_HASF32 && c->buf_f32 != NULL) return O_RUNF32(c, lo, "
         "hi); "
         "if (o_sc) return o_run_dense(c, lo, hi); }");
    E(g, "#endif");
  }
  if (!dense && !g->kspec && kspec_on(g)) {
    E(g, "#if !ORION_GPU_BODY");
    E(g, "if (c->consts[%d].i == INT64_C(%lld)) return o_run_k(c, lo, hi);",
      g->slots[g->kslot - 1].idx, (long long)g->slots[g->kslot - 1].ival);
    E(g, "#endif");
  }
  E(g, "int o_rc = 0;");
  if (g->pctrack)
    E(g, "O_U int o_pc = %d;", g->line0);
  E(g, "#if !ORION_GPU_BODY");
  E(g, "int (*const o_ed)(orion_cctx *) = c->elem_done;");
  E(g, "#endif");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ACC)
      E(g, "o_acc %s = o_acc_load(&c->accs[%d]);", g->slots[i].pfx,
        g->slots[i].idx);
  if (g->userand) {
    E(g, "uint64_t o_rs[4];");
    E(g, "memcpy(o_rs, c->rng, sizeof o_rs);");
  }
  /* Braces, so that no goto jumps into the scope of a declaration (which
   * C allows and C++, the device compiler's language, does not). */
  open_(g, "");
  prologue(g);
  if (!it->sparse) {
    /* A dense array's keys, kept as counters (0-based) from lo on (on
     * the device, from each element). */
    for (d = 0; d < it->ndims; d++)
      E(g, "int64_t o_k%d = 0;", d);
    E(g, "#if !ORION_GPU_BODY");
    open_(g, "if (lo < hi) ");
    for (d = 0; d < it->ndims; d++)
      E(g, "o_k%d = (lo / IT_s%d) %% IT_d%d;", d, d, d);
    close_(g);
    E(g, "#endif");
  }
  E(g, "#if ORION_GPU_BODY");
  E(g, "for (int64_t o_j = lo; o_j < hi; o_j++) {");
  E(g, "  const int64_t o_e = o_ord[o_j];");
  E(g, "  if (O_NO(o_gstopw(c))) break;");
  if (!it->sparse)
    for (d = 0; d < it->ndims; d++)
      E(g, d == 0 ? "  o_k%d = o_e / IT_s%d;" : "  o_k%d = (o_e / IT_s%d) %% IT_d%d;",
        d, d, d);
  E(g, "#else");
  if (it->ragged) {
    /* A row is the run of elements [o_e, o_re) with one row key. */
    E(g, "int64_t o_re = lo;");
    E(g, "for (int64_t o_e = lo; o_e < hi; o_e = o_re) {");
    E(g, "  for (o_re = o_e + 1; o_re < hi && IT_k[o_re * 2] == IT_k[o_e * "
         "2]; o_re++) {}");
  } else {
    E(g, "for (int64_t o_e = lo; o_e < hi; o_e++) {");
  }
  E(g, "#endif");
  g->ind++;
  E(g, "c->cur = o_e;");
  fail(g, "o_poll(c)", "1"); /* the loop deadline */
  if (g->pctrack)
    E(g, "o_pc = %d;", g->line0);
  open_(g, "");
  orion_buf_append(g->o, body->data, body->len);
  close_(g);
  E(g, "o_next: O_U;");
  E(g, "#if !ORION_GPU_BODY");
  if (!it->sparse) {
    for (d = it->ndims - 1; d > 0; d--) {
      open_(g, S(g, "if (++o_k%d == IT_d%d) ", d, d));
      E(g, "o_k%d = 0;", d);
    }
    E(g, "++o_k0;");
    for (d = it->ndims - 1; d > 0; d--)
      close_(g);
  }
  open_(g, "if (o_ed != NULL) ");
  E(g, "const int o_r = o_ed(c);");
  E(g, "if (O_NO(o_r != 0)) { o_rc = o_r; goto o_out; }");
  close_(g);
  E(g, "#endif");
  close_(g);
  close_(g);
  E(g, "o_out: O_U;");
  for (i = 0; i < g->nslots; i++)
    if (g->slots[i].kind == ORION_CSLOT_ACC)
      E(g, "O_ST1(o_acc_save(&c->accs[%d], &%s));", g->slots[i].idx,
        g->slots[i].pfx);
  if (g->userand)
    E(g, "memcpy(c->rng, o_rs, sizeof o_rs);");
  E(g, "return o_rc;");
  close_(g);
}

/* The generated source: prelude, messages, and the function.  One source
 * for the C compiler (the CPU body) and for nvcc (ORION_GPU_BODY: the
 * element code as a device function over a group's element list, plus
 * util/gbody.h's entry points; see analysis/cgen_prelude.h). */
static void assemble(gen *g, const orion_buf *body) {
  const orion_arrayinfo *it = &g->in->iter;
  const char *w;
  int i, f32;
  g->o = &g->out->src;
  g->ind = 0;
  if (g->nkind[ORION_CSLOT_ARRAY] + g->nkind[ORION_CSLOT_BUFFER] >
          GPU_MAX_ARRAYS ||
      g->nkind[ORION_CSLOT_CONST] > GPU_MAX_CONSTS)
    gpu_note(g, g->line0,
             "%d arrays and buffers and %d numbers bound (a device kernel "
             "takes at most %d and %d)",
             g->nkind[ORION_CSLOT_ARRAY] + g->nkind[ORION_CSLOT_BUFFER],
             g->nkind[ORION_CSLOT_CONST], GPU_MAX_ARRAYS, GPU_MAX_CONSTS);
  E(g,
    "/* Generated by Orion-C from a parallel_for body (%s:%d, %s mode). "
    "*/",
    g->in->chunkname, g->line0, g->fast ? "fast" : "exact");
  E(g, "#define O_EXACT %d", g->fast ? 0 : 1);
  E(g, "#define O_LINE0 %d", g->line0);
  E(g, "#define O_GABI %d", ORION_GBODY_ABI);
  E(g, "#define O_NA %d", g->nkind[ORION_CSLOT_ARRAY]);
  E(g, "#define O_NK %d", g->nkind[ORION_CSLOT_CONST]);
  E(g, "#define O_NB %d", g->nkind[ORION_CSLOT_BUFFER]);
  E(g, "#define O_NACC %d", g->nkind[ORION_CSLOT_ACC]);
  /* A warp per group on the device when the body has a lane loop
   * (analysis/cgen_lane.c); a thread per group otherwise. */
  E(g, "#define O_WARP %d", g->in->gpu && g->nlane > 0 ? 1 : 0);
  E(g, "#if defined(ORION_GPU_BODY) && ORION_GPU_BODY && O_WARP");
  E(g, "#define O_LANE ((uint64_t)(threadIdx.x & 31u))");
  E(g, "#define O_LANES 32u");
  E(g, "#define O_WSYNC() __syncwarp()");
  E(g, "#define O_ST1(...) do { __syncwarp(); if ((threadIdx.x & 31u) == 0) "
       "{ __VA_ARGS__; } __syncwarp(); } while (0)");
  E(g, "#else");
  E(g, "#define O_LANE 0u");
  E(g, "#define O_LANES 1u");
  E(g, "#define O_WSYNC() ((void)0)");
  E(g, "#define O_ST1(...) __VA_ARGS__");
  E(g, "#endif");
  E(g, "static const char o_chunk[] = %s;", cstr(g, g->in->chunkname));
  if (!g->in->gpu) {
    E(g, "#if ORION_GPU_BODY");
    E(g, "#error \"generated without the device form (orion_cgen_in.gpu)\"");
    E(g, "#endif");
  } else if (g->out->gpu_why[0] != 0) {
    E(g, "#if ORION_GPU_BODY");
    E(g, "#error %s", cstr(g, S(g, "outside the GPU subset: %s",
                                g->out->gpu_why)));
    E(g, "#endif");
  }
  lines(g, prelude);
  put(g, "\n");
  E(g, "#if !ORION_GPU_BODY");
  E(g, "extern const int orion_cbody_abi;");
  E(g, "const int orion_cbody_abi = %d;", ORION_CBODY_ABI);
  E(g, "int orion_cbody_run(orion_cctx *c, int64_t lo, int64_t hi);");
  E(g, "#endif");
  put(g, "\n");
  for (i = 0; i < g->nslots; i++) {
    const slot *s = &g->slots[i];
    const char *kind = s->kind == ORION_CSLOT_BUFFER ? "buffer" : "array";
    if (s->kind != ORION_CSLOT_ARRAY && s->kind != ORION_CSLOT_BUFFER)
      continue;
    E(g, "static O_DV O_U const char o_w%d[] = %s;", i,
      cstr(g, S(g, "%s '%.63s'", kind, s->name)));
    E(g, "static O_DV O_U const char o_t%d[] = %s;", i,
      cstr(g, S(g, "%s %s '%.63s'", etype_name(s->etype), kind, s->name)));
  }
  w = "the iterated array (returned value)";
  E(g, "static O_DV O_U const char o_wr[] = %s;",
    cstr(g, S(g, "array '%s'", w)));
  E(g, "static O_DV O_U const char o_tr[] = %s;",
    cstr(g, S(g, "%s array '%s'", etype_name(it->type), w)));
  put(g, "\n");
  E(g, "#define O_BDENSE 0");
  E(g, "#define O_BF32 0");
  for (i = 0, f32 = 0; i < g->nslots; i++)
    f32 |= f32buf(g, &g->slots[i]);
  E(g, "#define O_HASF32 %d", f32);
  E(g, "#define O_RUNF32 %s", f32 ? "o_run_f32" : "o_run_dense");
  if (g->nkind[ORION_CSLOT_BUFFER] > 0) {
    /* The copy for scan stores: O_BDENSE folds every buffer access's
     * test away, so that the element loop can vectorize. */
    E(g, "#if !ORION_GPU_BODY");
    E(g, "#undef O_BDENSE");
    E(g, "#define O_BDENSE 1");
    run_fn(g, body, 1);
    if (f32) {
      /* And the copy whose f32 buffers keep floats: O_BF32 (fast mode
       * only; exact mode keeps the interpreter's doubles). */
      E(g, "#undef O_BF32");
      E(g, "#define O_BF32 1");
      run_fn(g, body, 2);
      E(g, "#undef O_BF32");
      E(g, "#define O_BF32 0");
    }
    E(g, "#undef O_BDENSE");
    E(g, "#define O_BDENSE 0");
    E(g, "#endif");
  }
  if (kspec_on(g)) {
    /* The copy for the dot product's bound as it was captured: the
     * compiler knows the trip count (whole vectors, no remainder loop,
     * the update loop unrolled); another value runs the general copy. */
    E(g, "#if !ORION_GPU_BODY");
    g->kspec = 1;
    run_fn(g, body, 0);
    g->kspec = 0;
    E(g, "#endif");
  }
  run_fn(g, body, 0);
  /* Whether the body stores into the iterated array: the executor then
   * keeps a block's values to see what changed, else it need not. */
  E(g, "#if !ORION_GPU_BODY");
  E(g, "extern const int orion_cbody_stores_iter;");
  E(g, "const int orion_cbody_stores_iter = %d;", g->itwritten ? 1 : 0);
  E(g, "#endif");
  if (g->in->gpu)
    gpu_part(g);
  orion_buf_append(g->o, "", 1); /* NUL, not counted */
  g->o->len--;
}

static void free_gen(gen *g) {
  int i;
  for (i = 0; i < g->nbufs; i++)
    orion_buf_free(g->bufs[i]);
  orion_free(g->bufs);
  while (g->arena != NULL) {
    arena_blk *b = g->arena;
    g->arena = b->next;
    orion_free(b);
  }
  orion_free(g->fn);
  orion_free(g->slots);
  orion_free(g->vars);
  orion_free(g->sc);
  orion_free(g->labels);
  orion_free(g->hconds);
  orion_free(g->nar);
  orion_free(g->up);
  orion_free(g);
}

int orion_cgen(const orion_cgen_in *in, orion_cgen_out *out, orion_error *err) {
  gen *g;
  int pass, i, rc;
  memset(out, 0, sizeof *out);
  orion_buf_init(&out->src);
  if (in == NULL || in->func == NULL || in->func->kind != AST_FUNC ||
      in->chunkname == NULL || in->iter.ndims < 1 ||
      in->iter.ndims > ORION_CBODY_MAXDIMS || in->iter.type < 0 ||
      in->iter.type > 3)
    return orion_error_set(err, ORION_EINVAL,
                           "orion_cgen: no body, chunk name or iterated "
                           "array shape");
  g = orion_calloc(1, sizeof *g);
  if (g == NULL)
    return orion_error_set(err, ORION_ENOMEM, "orion_cgen: out of memory");
  g->in = in;
  g->out = out;
  g->fast = in->fast != 0;
  g->line0 = in->func->line;
  g->pctrack = orion_ast_any(in->func->a, may_divide_by_zero, NULL);
  orion_buf_init(&g->body);
  orion_buf_init(&g->scratch);
  /* Refusals and out of memory longjmp back here; everything the walk
   * allocates hangs off g. */
  if (setjmp(g->jb) == 0) {
    if (in->iter.ragged)
      gpu_note(g, g->line0, "a loop over a ragged array's rows runs on the "
                            "CPU");
    if (in->chunk != NULL && up_walk(g, in->chunk, in->func))
      g->haveup = 1;
    for (pass = 0;; pass++) {
      if (pass == 100)
        refuse(g, g->line0, "types that do not settle");
      orion_buf_free(&g->scratch);
      g->o = &g->scratch;
      g->emit = 0;
      g->changed = 0;
      walk(g);
      if (!g->changed)
        break;
    }
    g->o = &g->body;
    g->emit = 1;
    walk(g);
    if (g->lanebad) {
      /* A lane loop's body could leave the loop early: no lane loops. */
      orion_buf_free(&g->body);
      orion_buf_init(&g->body);
      g->nolane = 1;
      g->nlane = 0;
      walk(g);
    }
    if (g->body.oom || g->scratch.oom)
      oom(g);
    assemble(g, &g->body);
    if (out->src.oom)
      oom(g);
    out->slots = orion_calloc((size_t)g->nslots + 1, sizeof *out->slots);
    if (out->slots == NULL)
      oom(g);
    for (i = 0; i < g->nslots; i++) {
      const slot *s = &g->slots[i];
      orion_cslot *o = &out->slots[i];
      o->kind = s->kind;
      o->name = orion_strdup(s->name);
      if (o->name == NULL)
        oom(g);
      out->nslots = i + 1;
      o->id = s->kind == ORION_CSLOT_CONST ? 0 : s->id;
      o->isint = s->isint;
      o->ival = s->ival;
      o->fval = s->fval;
      o->wline = s->kind == ORION_CSLOT_ARRAY ? s->wline : 0;
    }
    rc = 0;
  } else {
    rc = g->rc;
  }
  orion_buf_free(&g->body);
  orion_buf_free(&g->scratch);
  free_gen(g);
  if (rc == ORION_EUNSUPPORTED)
    orion_error_set(err, rc, "outside the compiled subset: %s", out->why);
  else if (rc != 0)
    orion_error_set(err, rc, "orion_cgen: out of memory");
  return rc;
}

void orion_cgen_out_free(orion_cgen_out *out) {
  int i;
  if (out == NULL)
    return;
  orion_buf_free(&out->src);
  for (i = 0; i < out->nslots; i++)
    orion_free(out->slots[i].name);
  orion_free(out->slots);
  out->slots = NULL;
  out->nslots = 0;
}

const char *orion_cgen_mode_flags_cuda(int fast) {
  return fast ? "-fmad=true"
              : "-fmad=false -prec-div=true -prec-sqrt=true -ftz=false";
}

const char *orion_cgen_mode_flags(int fast) {
  return fast ? "-ffp-contract=fast -fno-math-errno -fno-signed-zeros "
                "-fno-trapping-math -fassociative-math -fno-finite-math-only"
              : "-ffp-contract=off -fno-fast-math -fno-math-errno";
}

