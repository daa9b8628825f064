/* The loop-body analysis: from a parallel_for body's source and the arrays
 * it names, the dependence vectors between iterations and a plan (schedule,
 * partitioned dimensions, placement of every array).
 *
 * Input is source text plus metadata only (no Lua state, no cluster), so it
 * is testable on its own.  DESIGN.md section 4 is the specification; the
 * files listed in analysis/analyze_int.h say how each rule is implemented.
 */
#ifndef ORION_ANALYSIS_ANALYZE_H
#define ORION_ANALYSIS_ANALYZE_H

#include <stdint.h>

#include "analysis/ast.h"
#include "util/limits.h"
#include "util/buf.h"
#include "util/error.h"

/* What a free name of the body was bound to when the loop was launched. */
typedef enum orion_bind_kind {
  ORION_BIND_NONE = 0, /* nil / not found */
  ORION_BIND_ARRAY,    /* a DistArray */
  ORION_BIND_ACC,      /* an accumulator */
  ORION_BIND_BUFFER,   /* an orion.buffer; `arr` describes its target */
  ORION_BIND_NUMBER,   /* a captured number (a constant for subscripts) */
  ORION_BIND_VALUE,    /* another plain value: string, boolean, table */
  ORION_BIND_FUNC,     /* a Lua helper function (shipped with the body) */
  ORION_BIND_BUILTIN   /* a standard-library table or function */
} orion_bind_kind;

typedef struct orion_arrayinfo {
  int64_t id;
  const char *name; /* the name the body uses (set by the analysis) */
  int ndims;
  int64_t dims[ORION_MAX_DIMS];
  int elem_size; /* bytes */
  int type;      /* orion_type of the elements (dsm/types.h) */
  int sparse;
  int ragged; /* iterated by rows: ndims 1 (the row), the value a row view
                 whose keys are unknown subscripts (dsm/ragged.h) */
  int64_t nnz;
} orion_arrayinfo;

/* A helper function reaches arrays through its own captures; the analysis
 * cannot see those accesses, so it counts them as unknown reads and writes
 * (buffers it reaches are buffered and excluded). */
typedef struct orion_reach {
  orion_arrayinfo arr;
  int buffer; /* reached as a buffer of arr */
} orion_reach;

typedef struct orion_binding {
  orion_bind_kind kind;
  orion_arrayinfo arr;  /* ARRAY; BUFFER: the target */
  int64_t id;           /* ACC, BUFFER */
  int is_int;           /* NUMBER */
  int64_t ival;
  double fval;
  int nreach;           /* FUNC: arrays it reaches */
  orion_reach *reach;   /* owned by the resolver; valid during the call */
  int nn_module;        /* VALUE: the orion.nn table (executor/nn.h): a call
                           NAME.f(...) only reads the array data it is
                           passed, except that NAME.write and NAME.add_to
                           also write their first argument */
  const char *std;      /* BUILTIN function: the standard function it is
                           ("select", "table.unpack"), whatever name the
                           body calls it by; NULL when it is none (then a
                           call of it counts as an unknown function's) */
  int env;              /* VALUE: the body's global environment itself (its
                           _ENV, or _G when that is the same table):
                           NAME.g and NAME["g"] are the global g, and any
                           other use of it refuses the loop */
} orion_binding;

/* The resolver is asked for "_ENV.g" (a name Lua cannot spell) when the
 * body reads the global g through its environment (_ENV.g, _G["g"]): the
 * field g of the body's _ENV, never an upvalue that happens to be named g.
 * (A resolver that cannot answer it leaves the access unseen.) */
#define ORION_ENV_PREFIX "_ENV."


/* Resolves a free name of the body (an upvalue or a global); fills *b and
 * returns 0, or returns nonzero when the name is unbound (kind NONE). */
typedef int (*orion_resolve_fn)(void *ud, const char *name, orion_binding *b);

/* Where a function sits in its chunk: idx[k] is its ancestor at depth
 * k + 1 (the main chunk is depth 0) counted from 0 among the functions
 * written directly in the ancestor at depth k, in source order, which is
 * how Lua numbers a function's nested prototypes. */
#define ORION_BODY_MAXDEPTH 32
#define ORION_BODY_MAXCAND 4
typedef struct orion_body_path {
  int depth;
  int idx[ORION_BODY_MAXDEPTH];
} orion_body_path;

typedef struct orion_body_src {
  const char *chunkname; /* for messages, e.g. "mf.lua" */
  const char *src;       /* the whole chunk's source text */
  size_t len;
  int line_defined, last_line; /* from debug.getinfo */
  int nparams, is_vararg;
  /* The functions of the chunk whose compiled code is the running body's
   * (lua/bodyid.h): ncand of them, the first ORION_BODY_MAXCAND kept.  0
   * when not known: the body is then found by its lines and parameters
   * alone, which cannot tell apart two functions that share them. */
  int ncand;
  orion_body_path cand[ORION_BODY_MAXCAND];
} orion_body_src;

typedef struct orion_analysis_in {
  orion_body_src body;
  orion_arrayinfo iter;  /* the iterated array (name may be NULL) */
  int iter_guessed;      /* iter.name is a default, not a name the caller
                            gives the array */
  orion_resolve_fn resolve;
  void *ud;
  int ordered;
  int nparts;            /* partitions per dimension, for estimates (>=1) */
  int force;             /* 0, or 1 + the orion_sched forced by opts.schedule */
  int force_space;       /* 0, or 1 + the 0-based key opts.space puts on the
                            space dimension */
} orion_analysis_in;

/* ---- the plan ----------------------------------------------------------- */

typedef enum orion_comp_kind { DEP_INT = 0, DEP_ANY, DEP_NONNEG } orion_comp_kind;

typedef struct orion_dep_comp {
  orion_comp_kind kind;
  int64_t v; /* DEP_INT */
} orion_dep_comp;

typedef enum orion_sub_kind {
  SUB_KEY = 0, /* key_d + c */
  SUB_CONST,   /* c */
  SUB_UNKNOWN
} orion_sub_kind;

#define SUB_ROWKEY (-2)
/* An unknown subscript that is c - key_d (c in the sub's c): no distance
 * to key + c' is known, but two such subscripts of one key are equal only
 * for keys c1 - c2 apart (depend.c), so a write at N + 1 - i is a
 * bijection of i.  Its dim is SUB_REVKEY(d), d = SUB_REVKEY_DIM(dim). */
#define SUB_REVKEY(d) (-3 - (d))
#define SUB_REVKEY_DIM(dim) (-3 - (dim))
#define SUB_IS_REVKEY(s) ((s)->kind == SUB_UNKNOWN && (s)->dim <= -3)

typedef struct orion_sub {
  orion_sub_kind kind;
  int dim;   /* SUB_KEY: 0-based loop key; SUB_UNKNOWN: -1, or
                SUB_ROWKEY when the subscript is a ragged row's key, or
                SUB_REVKEY(d) for c - key_d */
  int64_t c; /* SUB_KEY offset, SUB_CONST value, SUB_REVKEY constant */
} orion_sub;

typedef enum orion_acc_mode {
  ACC_READ = 1,
  ACC_WRITE = 2
} orion_acc_mode;

typedef struct orion_access {
  int array;      /* index into plan->arrays */
  int mode;       /* ACC_READ or ACC_WRITE (a read-write is two accesses) */
  int buffered;   /* through an orion.buffer: no dependences */
  int nsub;       /* one per array dimension */
  orion_sub sub[ORION_MAX_DIMS];
  int line, col;
  char *text;     /* the access as source on one line, e.g. "W[u][k]" */
  char *why;      /* how it was found: "assignment", "passed to dot", ... */
  int update;     /* '+' or '-': the read or the write of an update
                     X[s] = X[s] + e or X[s] = X[s] - e (an accumulation);
                     0 otherwise */
  int refused;    /* the receiver of a method call on a whole array: the
                     loop is rejected with a reason of its own */
} orion_access;

typedef struct orion_depvec {
  orion_dep_comp c[ORION_MAX_DIMS];
  int array;     /* index into plan->arrays */
  int acc_a, acc_b; /* the accesses that give it (indices) */
  int flow_read, flow_write; /* the first pair behind it in which a read
                                (not an update's own) comes after the
                                write in key order, or -1 */
  int all_update; /* every pair behind it is two accesses of updates */
  int refused;    /* every pair behind it has a refused access */
} orion_depvec;

typedef enum orion_sched {
  ORION_SCHED_NONE = 0,
  ORION_SCHED_1D,
  ORION_SCHED_2D,
  ORION_SCHED_2D_ORDERED,
  ORION_SCHED_2D_SKEWED,
  ORION_SCHED_REJECTED
} orion_sched;

typedef enum orion_place {
  PLACE_ITERATED = 0, /* the iterated array: cut into the blocks */
  PLACE_LOCAL,        /* partitioned with the space dimension */
  PLACE_ROTATING,     /* partitioned with the time dimension, rotates */
  PLACE_SERVER_RO,    /* server-held, read through a cache */
  PLACE_SERVER_BUF,   /* server-held, written through a buffer */
  PLACE_SERVER_RW     /* server-held, direct writes sent as dirty keys */
} orion_place;

typedef struct orion_plan_array {
  orion_arrayinfo info;
  char *name;     /* as the body names it (the caller's name for the
                     iterated array the body does not name) */
  char *caller;   /* the iterated array's name where parallel_for is
                     called, when the body names it otherwise; or NULL */
  orion_place place;
  int place_dim;  /* array dimension aligned with space/time (0-based), -1 */
  char *reason;
  int reads, writes, buffered;
} orion_plan_array;

typedef struct orion_plan {
  orion_sched sched;
  int ordered;
  int ndims;           /* loop keys (dims of the iterated array) */
  char *keynames[ORION_MAX_DIMS]; /* the body's parameter names (or NULL) */
  int space, time;     /* 0-based key dims; -1 when unused */
  int skew_dim;        /* 2d-skewed: the dimension that is skewed ... */
  int64_t skew;        /* ... as key[skew_dim] + skew * key[other] */
  int order;           /* 2-D: 0 rotation, 1 wavefront */
  int nacc;
  orion_access *acc;
  int narrays;
  orion_plan_array *arrays;
  int nvec;
  orion_depvec *vec;
  int64_t bytes;       /* estimate for the chosen schedule, per pass */
  int nparts;          /* used by the estimate */
  int nnotes;
  char **notes;        /* the other candidates and why not chosen */
  int nreasons;
  char **reasons;      /* rejected: the accesses that forbid parallelism */
  char *chunkname;     /* owned copy */
  int line;            /* the body's first line */
} orion_plan;

/* Analyses the body; on success fills *plan (free with orion_plan_free).
 * A rejected loop is a successful analysis with sched REJECTED.  Fails
 * (nonzero, err set) when the body's source cannot be found or parsed. */
int orion_analyze(const orion_analysis_in *in, orion_plan *plan,
                  orion_error *err);

/* Finds the AST_FUNC of the body in a parsed chunk: the one at body->cand
 * when it is known, else the one whose lines and parameters match.  Returns
 * NULL with err set (naming the body, or every candidate with its line
 * and column) when there is none, or more than one it could be. */
const ast_node *orion_find_body(const ast_node *chunk,
                                const orion_body_src *body, orion_error *err);

void orion_plan_free(orion_plan *plan);

/* The plan as text: "schedule: NAME" first, then space, time, vectors,
 * placements, estimate, candidates and (rejected) reasons, one per line. */
void orion_plan_text(const orion_plan *plan, orion_buf *out);

const char *orion_sched_name(orion_sched s);
const char *orion_place_name(orion_place p);

/* A vector component as text: "3", "-1", "ANY", "NONNEG". */
void orion_dep_comp_text(const orion_dep_comp *c, char *out, size_t size);

#endif
