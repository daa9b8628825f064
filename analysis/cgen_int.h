/* The C code generator's internals, shared by its files (the public API is
 * analysis/cgen.h):
 *
 *  cgen.c        the entry point (orion_cgen), the generator's memory,
 *                strings and output, the walk over the body and the
 *                assembly of the generated source around the prelude;
 *  cgen_types.c  type inference: the types of values and locals, their C
 *                representations and conversions, the slots a body is
 *                bound to, scopes, definite assignment and narrowing;
 *  cgen_expr.c   expressions: constants and folding, operators,
 *                comparisons, and/or, names, array elements and slices;
 *  cgen_call.c   calls: math.* and acc:add;
 *  cgen_stmt.c   statements and loops.
 *
 * Functions shared between these files are named orion__cgen_NAME in the
 * library; the macros at the end of this header let the generator's files
 * call them by their short names (NAME), which is how the code reads.
 * Everything runs on the caller's thread and allocates from the generator
 * (freed with it); a refusal or out of memory longjmps to orion_cgen.
 */
#ifndef ORION_ANALYSIS_CGEN_INT_H
#define ORION_ANALYSIS_CGEN_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/cgen.h"

/* ======================================================================
 * The generator's state and the types of values.
 * ====================================================================== */

/* The values a Lua value may be: a mask of these. */
enum { M_NIL = 1, M_FALSE = 2, M_TRUE = 4, M_INT = 8, M_FLT = 16 };
#define M_BOOL (M_FALSE | M_TRUE)
#define M_NUM (M_INT | M_FLT)
#define M_TRUTHY (M_TRUE | M_NUM)
#define M_FALSY (M_NIL | M_FALSE)

/* Kinds: nothing known yet (unreached), a value (mask), an array or
 * buffer or a slice of one (slot, depth), an accumulator (slot), the math
 * table, a ragged array's row (the body's second parameter: #row,
 * row:key(j), row:value(j) over elements [o_e, o_re)). */
enum { T_NONE = 0, T_VAL, T_REF, T_ACC, T_MATH, T_ROW };

/* Precision of a float, for fast mode: a constant or a value computed
 * in double that may be narrowed, one derived from f32 data, one derived
 * from f64 data. */
enum { P_WEAK = 0, P_F32, P_F64 };

/* Element types (orion_type). */
enum { ET_F32 = 0, ET_F64, ET_I32, ET_I64 };

typedef struct ty {
  int k;     /* T_* */
  int m;     /* T_VAL: M_* */
  int prec;  /* T_VAL with M_FLT: P_* */
  int slot;  /* T_REF, T_ACC: index into gen.slots */
  int depth; /* T_REF: dimensions already subscripted */
} ty;

/* A Lua compile-time constant (a numeral, nil, true or false, or a
 * folded expression of them). */
typedef struct lval {
  int m; /* one of M_* */
  int64_t i;
  double d;
} lval;

/* What Lua's error messages call an operand (ldebug.c varinfo). */
enum { VI_NONE = 0, VI_LOCAL, VI_UPVAL, VI_GLOBAL, VI_FIELD };

/* An evaluated expression: its type and a C expression for its value (a
 * pointer or offset for T_REF; nothing for T_ACC and T_MATH). */
typedef struct cv {
  ty t;
  const char *s;
  int simple; /* s may be evaluated twice (a name or a literal) */
  int isk;    /* a Lua constant, value k */
  lval k;
  int vi; /* VI_* and name, for "number (local 'x') has no ..." */
  const char *vn;
} cv;

/* A bound name of the body that the generated code reads from ctx. */
typedef struct slot {
  orion_cslot_kind kind;
  int idx;          /* number within its kind */
  const char *name; /* the name in the body */
  int64_t id;
  int ndims, etype; /* arrays and buffers */
  int isint;        /* constants */
  int64_t ival;
  double fval;
  char pfx[24]; /* C prefix: A0, B0, C0, K0 */
  int written;  /* arrays: the body stores into it */
  int wline;    /* ... first at this line (orion_cslot's wline) */
  int rowkey;   /* arrays: 1 + the iterated key every first subscript is
                   (the element's own, never reassigned); 0: none seen
                   yet; -1: some other first subscript */
} slot;

/* A free name of the body, resolved once. */
typedef struct fname {
  const char *name;
  orion_binding b;
  int slot;  /* -1 until a slot is needed */
  int scope; /* SC_*: an upvalue or a global of the chunk */
} fname;

enum { SC_UNKNOWN = 0, SC_UPVAL, SC_GLOBAL };

/* A local of the body (stable across walks: keyed by its declaration). */
typedef struct var {
  const ast_node *decl;
  const char *name;
  const char *cname;
  ty t;
  int noinit; /* declared without a value (`local x`) */
  int da;     /* definitely assigned at the current point of the walk */
  int isk;    /* a <const> local with a constant value */
  lval k;
} var;

typedef struct scope_ent {
  const char *name;
  var *v;
} scope_ent;

/* A Lua block being walked: for goto, the statements whose labels are
 * visible, and the suffix its labels get in C (a loop emitted twice
 * names the labels of each copy apart). */
typedef struct blkframe {
  const ast_list *stmts;
  const char *suffix;
  struct blkframe *up;
} blkframe;

/* A snapshot of definite assignment. */
typedef struct dastate {
  unsigned char *v;
  int n;
  int dead;
} dastate;

typedef struct arena_blk {
  struct arena_blk *next;
  size_t used, cap;
  double data[]; /* aligned enough for anything stored here */
} arena_blk;

/* Bounds checks hoisted out of a loop: subscript `var + off` against
 * dimension `dim`. */
typedef struct hoistcond {
  const char *dim;
  int64_t off;
} hoistcond;

/* A local's type where a condition on it holds. */
typedef struct narrowing {
  var *v;
  ty t;
} narrowing;

typedef struct gen {
  const orion_cgen_in *in;
  orion_cgen_out *out;
  jmp_buf jb;
  int rc;
  arena_blk *arena;

  orion_buf *o; /* where code goes */
  int ind;
  int emit; /* 0 while inferring types */
  int fast;
  int tmp;

  fname *fn;
  int nfn, capfn;
  slot *slots;
  int nslots, capslots;
  int nkind[4];
  var **vars;
  int nvars, capvars;
  scope_ent *sc;
  int nsc, capsc;
  blkframe *blk;
  const ast_node **labels;
  int nlabels, caplabels;
  int changed;
  int dead; /* the current point is unreachable */

  int pctrack;             /* keep o_pc current */
  int userand;             /* the body calls math.random */
  /* Fast mode: 1 + the slot of the captured integer that bounds a dot
   * product's loop (0: none), and whether the copy of the run function
   * for its value at generation (the slot's ival) is being emitted. */
  int kslot;
  int kspec;
  int itwritten;           /* the body returns a value (stored in iter) */
  int line0;               /* the line the body is defined on */
  orion_buf body, scratch; /* the function's body: the last walk, the
                              others */

  /* Hoisting of bounds checks in the loop being emitted. */
  const char *hk;          /* the loop variable's name, or NULL */
  int hfast;               /* emitting the copy without those checks */
  const ast_node **hnodes; /* candidate subscripts */
  int nhnodes;
  hoistcond *hconds;
  int nhconds, caphconds;
  const char *suffix;
  /* Lane loops on the device (analysis/cgen_lane.c): a group runs on a
   * warp, and an innermost loop whose iterations touch disjoint elements
   * spreads them over the warp's lanes. */
  int inlane;  /* emitting a lane loop's body: its stores are the lane's */
  int nlane;   /* lane loops emitted */
  int nolane;  /* emit none (set when a lane loop's body could fail) */
  int lanebad; /* a lane loop's body holds an exit: emit again with none */
  orion_buf **bufs; /* temporary buffers, freed with the generator */
  int nbufs, capbufs;
  /* Locals whose type a condition narrows where it holds (`x and x * 2`,
   * `if x ~= nil then ... end`). */
  narrowing *nar;
  int nnar, capnar;
  /* The locals of the chunk visible where the body is defined (its
   * upvalues), when in->chunk is given. */
  const char **up;
  int nup, capup, haveup;
} gen;

/* ======================================================================
 * Small pure helpers (inline).
 * ====================================================================== */

static inline ty ty_val(int m, int prec) {
  ty t;
  memset(&t, 0, sizeof t);
  t.k = T_VAL;
  t.m = m;
  t.prec = (m & M_FLT) ? prec : P_WEAK;
  return t;
}

/* A buffer slot whose pending values the f32 copy of the body (O_BF32,
 * analysis/cgen.c) keeps as floats: fast mode, an f32 target, the CPU
 * (util/cbody.h's buf_f32). */
static inline int f32buf(const gen *g, const slot *s) {
  return g->fast && !g->in->gpu && s->kind == ORION_CSLOT_BUFFER &&
         s->etype == ET_F32;
}

static inline int fastf(const gen *g, ty t) {
  return g->fast && t.k == T_VAL && t.m == M_FLT && t.prec == P_F32;
}

/* Dynamic (tagged) representation? */
static inline int isdyn(ty t) {
  return t.k == T_VAL && t.m != M_INT && t.m != M_FLT && t.m != M_NIL &&
         (t.m & ~M_BOOL) != 0;
}

static inline const char *etype_c(int et) {
  static const char *const n[] = {"float", "double", "int32_t", "int64_t"};
  return n[et & 3];
}

static inline const char *etype_name(int et) {
  static const char *const n[] = {"f32", "f64", "i32", "i64"};
  return n[et & 3];
}

static inline cv cv_none(void) {
  cv r;
  memset(&r, 0, sizeof r);
  r.s = "0";
  r.simple = 1;
  return r;
}

static inline cv cv_of(ty t, const char *s, int simple) {
  cv r = cv_none();
  r.t = t;
  r.s = s;
  r.simple = simple;
  return r;
}

static inline int is_num(cv v) {
  return v.t.k == T_VAL && v.t.m != 0 && (v.t.m & ~M_NUM) == 0;
}

static inline double k_tonum(lval v) {
  return v.m == M_INT ? (double)v.i : v.d;
}

/* ======================================================================
 * The shared functions.  Each is orion__cgen_NAME in the library and NAME
 * in the generator's files.  All take the generator; strings they return
 * live in its arena until orion_cgen returns.
 * ====================================================================== */

/* ---- cgen.c: memory, strings, refusal, output ------------------------- */

/* Out of memory: unwinds to orion_cgen, which returns ORION_ENOMEM. */
#define oom(...) orion__cgen_oom(__VA_ARGS__)
void oom(gen *g) __attribute__((noreturn));
/* n bytes from the arena (8-aligned). */
#define amalloc(...) orion__cgen_amalloc(__VA_ARGS__)
void *amalloc(gen *g, size_t n);
/* A formatted string in the arena. */
#define S(...) orion__cgen_S(__VA_ARGS__)
char *S(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Grows the orion_malloc'd array *v (capacity *cap) so index n fits; the
 * array belongs to the generator (free_gen frees it). */
#define grow(...) orion__cgen_grow(__VA_ARGS__)
void grow(gen *g, void **v, int *cap, int n, size_t elem);
/* A temporary output buffer, freed with the generator. */
#define tmpbuf(...) orion__cgen_tmpbuf(__VA_ARGS__)
orion_buf *tmpbuf(gen *g);
/* Refuses the body: out->why = "LINE: what"; unwinds to orion_cgen. */
#define refuse(...) orion__cgen_refuse(__VA_ARGS__)
void refuse(gen *g, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/* Notes, in the final walk, why the body cannot run on the device
 * (out->gpu_why = "LINE: what"; the first reason is kept). */
#define gpu_note(...) orion__cgen_gpu_note(__VA_ARGS__)
void gpu_note(gen *g, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A C string literal for s (any bytes). */
#define cstr(...) orion__cgen_cstr(__VA_ARGS__)
const char *cstr(gen *g, const char *s);
/* The AST printed as Lua, cut to 60 characters (for messages). */
#define lua_text(...) orion__cgen_lua_text(__VA_ARGS__)
const char *lua_text(gen *g, const ast_node *n);
/* Emits one line of code at the current indentation into g->o. */
#define E(...) orion__cgen_E(__VA_ARGS__)
void E(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Emits "HEAD{" and indents; close_ undoes it with "}". */
#define open_(...) orion__cgen_open_(__VA_ARGS__)
void open_(gen *g, const char *head);
#define close_(...) orion__cgen_close_(__VA_ARGS__)
void close_(gen *g);
/* Emits a failure: when cond (NULL: always), o_rc = call (an error call,
 * which returns 1) and the exit. */
#define fail(...) orion__cgen_fail(__VA_ARGS__)
void fail(gen *g, const char *cond, const char *call);
/* A fresh temporary's name ("t12"). */
#define newtmp(...) orion__cgen_newtmp(__VA_ARGS__)
const char *newtmp(gen *g);
/* "(c)", or c itself when it is already in one pair of parentheses. */
#define cond_of(...) orion__cgen_cond_of(__VA_ARGS__)
const char *cond_of(gen *g, const char *c);
/* Brings o_pc to line where the interpreter saves its pc. */
#define savepc(...) orion__cgen_savepc(__VA_ARGS__)
void savepc(gen *g, int line);
/* The line integer `//` and `%` by zero report (a C expression). */
/* The iterated array's value at element position `pos` (a C expression). */
#define iter_value(...) orion__cgen_iter_value(__VA_ARGS__)
cv iter_value(gen *g, const char *pos);
#define pcline(...) orion__cgen_pcline(__VA_ARGS__)
const char *pcline(gen *g);

/* ---- cgen_types.c: types, values, names, definite assignment ---------- */

/* How a type reads in messages ("an integer", "the array 'W'"). */
#define ty_text(...) orion__cgen_ty_text(__VA_ARGS__)
const char *ty_text(gen *g, ty t);
/* The C type holding a value of type t, ready to precede a name. */
#define ctype(...) orion__cgen_ctype(__VA_ARGS__)
const char *ctype(gen *g, ty t);
/* Joins src into *dst (refusing kinds that cannot share a local, naming
 * `name` at `line`); 1 when *dst changed. */
#define ty_join(...) orion__cgen_ty_join(__VA_ARGS__)
int ty_join(gen *g, ty *dst, ty src, int line, const char *name);
/* Joins t into v's type; sets g->changed when it grows. */
#define var_join(...) orion__cgen_var_join(__VA_ARGS__)
void var_join(gen *g, var *v, ty t, int line);
/* A float literal (inf and nan included). */
#define flt_lit(...) orion__cgen_flt_lit(__VA_ARGS__)
const char *flt_lit(gen *g, double d);
/* A constant as a value; nil. */
#define cv_k(...) orion__cgen_cv_k(__VA_ARGS__)
cv cv_k(gen *g, lval k);
#define cv_nil(...) orion__cgen_cv_nil(__VA_ARGS__)
cv cv_nil(gen *g);
/* v in a temporary unless it is simple (may be read twice); copy also
 * copies a local, which a later store of the statement may change. */
#define mat(...) orion__cgen_mat(__VA_ARGS__)
cv mat(gen *g, cv v);
#define copy(...) orion__cgen_copy(__VA_ARGS__)
cv copy(gen *g, cv v);
/* v's value as a double; as a float of precision prec (a float in fast
 * mode for f32 data); as an o_v; its Lua truthiness as a C int. */
#define as_d(...) orion__cgen_as_d(__VA_ARGS__)
const char *as_d(gen *g, cv v);
#define as_f(...) orion__cgen_as_f(__VA_ARGS__)
const char *as_f(gen *g, cv v, int prec);
#define as_v(...) orion__cgen_as_v(__VA_ARGS__)
const char *as_v(gen *g, cv v);
#define truth(...) orion__cgen_truth(__VA_ARGS__)
const char *truth(gen *g, cv v);
/* v's value in the representation of type t. */
#define conv(...) orion__cgen_conv(__VA_ARGS__)
const char *conv(gen *g, cv v, ty t);
/* A free name of the body, resolved once. */
#define free_name(...) orion__cgen_free_name(__VA_ARGS__)
fname *free_name(gen *g, const char *name);
/* Finds target below n; on success g->up holds the locals in scope. */
#define up_walk(...) orion__cgen_up_walk(__VA_ARGS__)
int up_walk(gen *g, const ast_node *n, const ast_node *target);
/* The slot of a free name (made on first use). */
#define new_slot(...) orion__cgen_new_slot(__VA_ARGS__)
int new_slot(gen *g, fname *f, orion_cslot_kind kind);
/* The local `name` in scope, or NULL. */
#define lookup(...) orion__cgen_lookup(__VA_ARGS__)
var *lookup(gen *g, const char *name);
/* The variable declared by node decl (the same object on every walk). */
#define get_var(...) orion__cgen_get_var(__VA_ARGS__)
var *get_var(gen *g, const ast_node *decl);
/* Brings v into scope. */
#define push_var(...) orion__cgen_push_var(__VA_ARGS__)
void push_var(gen *g, var *v);
/* Definite assignment: a snapshot, restoring one, meeting the current
 * state into *acc, and a state where nothing is reachable yet. */
#define da_save(...) orion__cgen_da_save(__VA_ARGS__)
dastate da_save(gen *g);
#define da_restore(...) orion__cgen_da_restore(__VA_ARGS__)
void da_restore(gen *g, dastate s);
#define da_meet(...) orion__cgen_da_meet(__VA_ARGS__)
void da_meet(gen *g, dastate *acc);
#define da_dead(...) orion__cgen_da_dead(__VA_ARGS__)
dastate da_dead(void);
/* Does n declare or assign `name`? */
#define touches(...) orion__cgen_touches(__VA_ARGS__)
int touches(const ast_node *n, const char *name);
/* Narrows the locals condition c tests to their types where c is true
 * (truthy) or false, except those `keep` assigns; undo by resetting
 * g->nnar. */
#define narrow(...) orion__cgen_narrow(__VA_ARGS__)
void narrow(gen *g, const ast_node *c, int truthy, const ast_node *keep);

/* ---- cgen_expr.c: expressions ----------------------------------------- */

/* Evaluates e (one value); for up to `want` values (calls may give
 * several: the count); an expression list for exactly n values, each in
 * a temporary when keep. */
#define ex(...) orion__cgen_ex(__VA_ARGS__)
cv ex(gen *g, const ast_node *e);
#define exn(...) orion__cgen_exn(__VA_ARGS__)
int exn(gen *g, const ast_node *e, cv *out, int want);
#define explist(...) orion__cgen_explist(__VA_ARGS__)
cv *explist(gen *g, const ast_list *l, int n, int keep);
/* Refuses v unless it is surely a number ("WHAT TYPE"). */
#define numeric(...) orion__cgen_numeric(__VA_ARGS__)
void numeric(gen *g, cv v, int line, const char *what);
/* v converted to an integer in a new temporary, failing with `call` when
 * it has no integer value. */
#define int_or_fail(...) orion__cgen_int_or_fail(__VA_ARGS__)
const char *int_or_fail(gen *g, cv v, const char *call);
/* a < b (le: a <= b) for numbers, as Lua compares them. */
#define less(...) orion__cgen_less(__VA_ARGS__)
const char *less(gen *g, cv a, cv b, int le);
/* Stores v into the element `dest` of an array of element type et, or
 * through buffer slot bs at pos, with the executor's checks. */
#define store_value(...) orion__cgen_store_value(__VA_ARGS__)
void store_value(gen *g, cv v, int et, const char *dest, const slot *bs,
                 const char *pos, const char *tail, const char *what,
                 int line);
/* o[k] = v. */
#define index_set(...) orion__cgen_index_set(__VA_ARGS__)
void index_set(gen *g, cv o, cv k, const ast_node *keynode, cv v, int line);
/* tgt = val when tgt (o[k]) is a buffer's element and val is tgt + x,
 * x + tgt or tgt - x: emitted as an atomic add on the device (for an
 * integer target, or a float one in fast mode) and as the read and store
 * on the CPU; 1 when done so, 0 when the statement is not that form. */
#define buffer_add(...) orion__cgen_buffer_add(__VA_ARGS__)
int buffer_add(gen *g, cv o, cv k, const ast_node *tgt, const ast_node *val,
               int line);

/* ---- cgen_call.c: calls ----------------------------------------------- */

/* A call for up to `want` values; the count. */
#define call_expr(...) orion__cgen_call_expr(__VA_ARGS__)
int call_expr(gen *g, const ast_node *e, cv *out, int want);

/* ---- cgen_stmt.c: statements ------------------------------------------ */

/* The statements of a block in a new scope. */
#define stmts(...) orion__cgen_stmts(__VA_ARGS__)
void stmts(gen *g, const ast_list *l);
/* r[k], r a local holding a row (the last dimension) of a dense f32 or
 * f64 array and k the loop variable: the local, else NULL. */
#define row_at(...) orion__cgen_row_at(__VA_ARGS__)
var *row_at(gen *g, const ast_node *e, const char *k);

/* ---- cgen_lane.c: lane loops on the device ---------------------------- */

/* May numeric loop s (innermost, hoisted: g->hk is its variable) spread
 * its iterations over a warp's lanes on the device? */
#define lane_loop_ok(...) orion__cgen_lane_loop_ok(__VA_ARGS__)
int lane_loop_ok(gen *g, const ast_node *s);

#endif
