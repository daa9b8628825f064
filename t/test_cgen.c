/* Tests of the C code generator (analysis/cgen.c).
 *
 * Each snippet is a loop body run twice over the same data: once by the
 * interpreter tier itself (captured with executor/capture.c and run by a real
 * orion_exec, as an executor runs it) and once as the C that orion_cgen
 * generates, built with the system compiler (-Wall -Wextra -Werror, so
 * the generated code is warning-free) and loaded with dlopen.  The runs
 * must agree bit for bit: every array (including the iterated one, which
 * returned values replace), every accumulator (value and subtype), the
 * writes made through buffers once flushed, and the first line of the
 * error message together with the element it names.
 *
 * Covered: the MF SGD body (f32 and f64, exact; f32 fast within a
 * tolerance), the golden bodies of t/analysis that are in the subset
 * (MF, control flow, logistic regression with a buffer, subscripts, LDA
 * Gibbs sampling with math.random), a long list of semantic snippets
 * (integer wrap-around, floor division and modulo signs, division by
 * zero, NaN and infinities, float/integer conversions and comparisons at
 * 2^53 and 2^63, math.*, numeric for loops, while/repeat/goto, math.random,
 * accumulators, returned values, bounds and store errors), the `why` of
 * every kind of refused construct, the slot list, the ABI's layout, and
 * runs split into several blocks.
 */
#include "config.h"
#include "t/testutil.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/cgen.h"
#include "analysis/parse.h"
#include "dsm/array.h"
#include "executor/accum.h"
#include "executor/capture.h"
#include "util/cbody.h"
#include "executor/exec.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/ccomp.h"
#include "util/error.h"
#include "util/luarand.h"
#include "util/rng.h"

/* ------------------------------------------------------------------------
 * The environment every snippet runs in: arrays, accumulators, buffers and
 * captured numbers, declared as locals of the chunk that returns the body.
 * ---------------------------------------------------------------------- */

#define ID_ITER 1

typedef struct tarray {
  const char *name;
  int id;
  orion_type type;
  int ndims;
  int64_t dims[3];
  int fill;
} tarray;

static const tarray ARRS[] = {
    {"A", 2, ORION_F64, 1, {12, 0, 0}, 0},
    {"B", 3, ORION_I64, 1, {12, 0, 0}, 1},
    {"I", 4, ORION_I32, 1, {12, 0, 0}, 1},
    {"F", 5, ORION_F32, 1, {12, 0, 0}, 0},
    {"M", 6, ORION_F64, 2, {4, 5, 0}, 0},
    {"N", 7, ORION_I64, 3, {3, 4, 2}, 1},
    {"W", 8, ORION_F32, 2, {6, 8, 0}, 2},
    {"H", 9, ORION_F32, 2, {5, 8, 0}, 2},
    {"W2", 10, ORION_F64, 2, {6, 8, 0}, 2},
    {"H2", 11, ORION_F64, 2, {5, 8, 0}, 2},
    {"G", 12, ORION_F64, 1, {12, 0, 0}, 3},
    {"TA", 13, ORION_F64, 1, {12, 0, 0}, 0},
    {"TI", 14, ORION_I32, 1, {12, 0, 0}, 1},
    {"TM", 15, ORION_F64, 2, {4, 5, 0}, 0},
    {"DT", 16, ORION_I64, 2, {12, 4, 0}, 4},
    {"WT", 17, ORION_I64, 2, {9, 4, 0}, 4},
    {"NT", 18, ORION_I64, 1, {4, 0, 0}, 5},
    {"IF", 19, ORION_I64, 1, {12, 0, 0}, 6},
    {"LM", 20, ORION_F64, 1, {6, 0, 0}, 0},
    {"LY", 21, ORION_F64, 1, {6, 0, 0}, 4},
    {"LW", 22, ORION_F64, 1, {5, 0, 0}, 2},
    {"LG", 23, ORION_F64, 1, {5, 0, 0}, 0},
    {"WL", 24, ORION_F32, 2, {6, 70, 0}, 2},
    {"HL", 25, ORION_F32, 2, {5, 70, 0}, 2},
    {"WL2", 26, ORION_F64, 2, {6, 70, 0}, 2},
};
#define NARRS ((int)(sizeof ARRS / sizeof ARRS[0]))

typedef struct tacc {
  const char *name;
  int id;
  orion_acc_op op;
} tacc;

static const tacc ACCS[] = {{"S", 30, ORION_ACC_SUM},
                            {"MN", 31, ORION_ACC_MIN},
                            {"MX", 32, ORION_ACC_MAX}};
#define NACCS 3

typedef struct tbuffer {
  const char *name;
  int id;
  const char *target;
  orion_apply_op op;
} tbuffer;

static const tbuffer BUFS[] = {{"BA", 40, "TA", ORION_APPLY_ADD},
                               {"BI", 41, "TI", ORION_APPLY_REPLACE},
                               {"BM", 42, "TM", ORION_APPLY_ADD},
                               {"TB", 43, "NT", ORION_APPLY_ADD},
                               {"GB", 44, "LG", ORION_APPLY_ADD}};
#define NBUFS 5

typedef struct tconst {
  const char *name;
  int isint;
  int64_t i;
  double d;
} tconst;

static const tconst CONSTS[] = {
    {"K", 1, 8, 0},         {"KF", 0, 0, 0.5},        {"Z", 1, 0, 0},
    {"ONE", 1, 1, 0},       {"BIG", 1, INT64_MAX, 0}, {"LR", 0, 0, 0.01},
    {"REG", 0, 0, 0.05},    {"NEG", 1, -3, 0},        {"TWO", 0, 0, 2.0},
    {"NK", 1, 4, 0},        {"alpha", 0, 0, 0.5},     {"beta", 0, 0, 0.1},
    {"V", 1, 9, 0},         {"HALF", 0, 0, 0.5},      {"MOD", 1, 1000003, 0},
    {"SMALL", 0, 0, 1e-300}, {"KL", 1, 70, 0}};
#define NCONSTS ((int)(sizeof CONSTS / sizeof CONSTS[0]))

/* Iterated arrays. */
typedef enum {
  IT_VEC,  /* dense 1-D i64 [12]: function(i, v) */
  IT_MAT,  /* dense 2-D f64 [3][4]: function(i, j, v) */
  IT_RAT,  /* sparse 2-D f32 ratings [6][5]: function(u, i, r) */
  IT_F32,  /* dense 1-D f32 [12] */
  IT_I32,  /* dense 1-D i32 [12] */
  IT_TOK,  /* sparse 3-D i32 tokens [12][9][3] (topics 1..4) */
  IT_SPEC, /* dense 1-D f64 [12] of special values */
  IT_M64,  /* dense 2-D i64 [6][5] */
  IT_D3    /* dense 3-D i64 [3][4][2] */
} iter_kind;

/* ------------------------------------------------------------------------
 * Arrays.
 * ---------------------------------------------------------------------- */

static const double specials[12] = {0.0, -0.0,   1.5,    -2.5,    0,     0,
                                    0,   0x1p53, 0x1p63, -0x1p63, 1e308, 3.0};

static double fill_value(int fill, int64_t k) {
  switch (fill) {
  case 0:
    return (double)((k * 37) % 19 - 9) / 4.0;
  case 1:
    return (double)((k * 37) % 19 - 9);
  case 2:
    return (double)((k * 13) % 17 - 8) * 0.0625;
  case 3:
    if (k % 12 == 4)
      return INFINITY;
    if (k % 12 == 5)
      return -INFINITY;
    if (k % 12 == 6)
      return NAN;
    return specials[k % 12];
  case 4:
    return (double)(k % 3);
  case 5:
    return (double)(20 + k);
  default:
    return (double)(k % 12 + 1); /* 1..12: valid subscripts */
  }
}

static void fill_array(orion_array *a, int fill) {
  int64_t k;
  for (k = 0; k < a->nnz; k++) {
    double v = fill_value(fill, k);
    if (a->type == ORION_F32 || a->type == ORION_F64)
      orion_value_set_f64(a->values, a->type, k, v);
    else
      orion_value_set_i64(a->values, a->type, k, (int64_t)v);
  }
}

static orion_array *new_dense(int ndims, const int64_t *dims, orion_type t,
                              int fill) {
  orion_array *a = orion_array_new_dense(ndims, dims, t, NULL);
  cr_assert_not_null(a);
  fill_array(a, fill);
  return a;
}

static orion_array *new_iter(iter_kind kind) {
  orion_array *a = NULL;
  int64_t d[3], k[3];
  switch (kind) {
  case IT_VEC:
    d[0] = 12;
    return new_dense(1, d, ORION_I64, 1);
  case IT_MAT:
    d[0] = 3;
    d[1] = 4;
    return new_dense(2, d, ORION_F64, 0);
  case IT_F32:
    d[0] = 12;
    return new_dense(1, d, ORION_F32, 0);
  case IT_I32:
    d[0] = 12;
    return new_dense(1, d, ORION_I32, 1);
  case IT_SPEC:
    d[0] = 12;
    return new_dense(1, d, ORION_F64, 3);
  case IT_M64:
    d[0] = 6;
    d[1] = 5;
    return new_dense(2, d, ORION_I64, 1);
  case IT_D3:
    d[0] = 3;
    d[1] = 4;
    d[2] = 2;
    return new_dense(3, d, ORION_I64, 1);
  case IT_RAT:
    a = orion_array_new_sparse(2, ORION_F32, NULL);
    cr_assert_not_null(a);
    for (k[0] = 0; k[0] < 6; k[0]++)
      for (k[1] = 0; k[1] < 5; k[1]++)
        if ((k[0] * 7 + k[1] * 3) % 4 != 0) {
          float r = (float)((k[0] + k[1]) % 5 + 1);
          cr_assert_eq(orion_array_push(a, k, &r), 0);
        }
    d[0] = 6;
    d[1] = 5;
    cr_assert_eq(orion_array_set_dims(a, d, NULL), 0);
    return a;
  case IT_TOK:
    a = orion_array_new_sparse(3, ORION_I32, NULL);
    cr_assert_not_null(a);
    for (k[0] = 0; k[0] < 12; k[0]++)
      for (k[1] = 0; k[1] < 9; k[1]++)
        for (k[2] = 0; k[2] < 3; k[2]++)
          if ((k[0] * 7 + k[1] * 5 + k[2] * 3) % 4 < 2 &&
              (k[2] == 0 || (k[0] + k[1]) % 3 == 0)) {
            int32_t z = (int32_t)((k[0] * 5 + k[1] * 3 + k[2]) % 4 + 1);
            cr_assert_eq(orion_array_push(a, k, &z), 0);
          }
    d[0] = 12;
    d[1] = 9;
    d[2] = 3;
    cr_assert_eq(orion_array_set_dims(a, d, NULL), 0);
    return a;
  }
  return NULL;
}

/* The whole state a run leaves: every array (the iterated one last) and
 * every accumulator, plus the error. */
typedef struct state {
  orion_array *arr[NARRS + 1];
  orion_accval acc[NACCS];
  int failed;
  char first[1024]; /* first line of the error message */
  char key[128];    /* the element that failed, "(2, 3)" */
} state;

static void state_init(state *s, iter_kind kind) {
  int i;
  memset(s, 0, sizeof *s);
  for (i = 0; i < NARRS; i++)
    s->arr[i] =
        new_dense(ARRS[i].ndims, ARRS[i].dims, ARRS[i].type, ARRS[i].fill);
  s->arr[NARRS] = new_iter(kind);
}

static void state_free(state *s) {
  int i;
  for (i = 0; i <= NARRS; i++)
    orion_array_release(s->arr[i]);
}

static int array_index(const char *name) {
  int i;
  for (i = 0; i < NARRS; i++)
    if (strcmp(ARRS[i].name, name) == 0)
      return i;
  return -1;
}

static void key_text(const orion_array *a, int64_t e, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "(");
  int d;
  for (d = 0; d < a->ndims && len < n; d++) {
    int64_t k = a->sparse ? a->keys[e * a->ndims + d]
                          : (e / a->strides[d]) % a->dims[d];
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "",
                            (long long)k + 1);
  }
  if (len < n)
    snprintf(buf + len, n - len, ")");
}

/* ------------------------------------------------------------------------
 * The chunk: the environment as locals, then `return <body>`.
 * ---------------------------------------------------------------------- */

#define HEADER_LINES 5

static char *chunk_text(const char *body) {
  orion_buf b;
  char tmp[256];
  int i;
  orion_buf_init(&b);
#define PUT(s) orion_buf_append(&b, (s), strlen(s))
  PUT("local ");
  for (i = 0; i < NARRS; i++) {
    PUT(ARRS[i].name);
    PUT(", ");
  }
  PUT("IT = ");
  for (i = 0; i < NARRS; i++) {
    snprintf(tmp, sizeof tmp, "fake_array(%d), ", ARRS[i].id);
    PUT(tmp);
  }
  snprintf(tmp, sizeof tmp, "fake_array(%d)\nlocal ", ID_ITER);
  PUT(tmp);
  for (i = 0; i < NACCS; i++) {
    snprintf(tmp, sizeof tmp, "%s%s", i ? ", " : "", ACCS[i].name);
    PUT(tmp);
  }
  PUT(" = ");
  for (i = 0; i < NACCS; i++) {
    snprintf(tmp, sizeof tmp, "%sfake_acc(%d)", i ? ", " : "", ACCS[i].id);
    PUT(tmp);
  }
  PUT("\nlocal ");
  for (i = 0; i < NBUFS; i++) {
    snprintf(tmp, sizeof tmp, "%s%s", i ? ", " : "", BUFS[i].name);
    PUT(tmp);
  }
  PUT(" = ");
  for (i = 0; i < NBUFS; i++) {
    snprintf(tmp, sizeof tmp, "%sfake_buffer(%d)", i ? ", " : "", BUFS[i].id);
    PUT(tmp);
  }
  PUT("\nlocal ");
  for (i = 0; i < NCONSTS; i++) {
    snprintf(tmp, sizeof tmp, "%s%s", i ? ", " : "", CONSTS[i].name);
    PUT(tmp);
  }
  PUT(" = ");
  for (i = 0; i < NCONSTS; i++) {
    if (!CONSTS[i].isint)
      snprintf(tmp, sizeof tmp, "%s%a", i ? ", " : "", CONSTS[i].d);
    else if (CONSTS[i].i == INT64_MAX)
      snprintf(tmp, sizeof tmp, "%smath.maxinteger", i ? ", " : "");
    else
      snprintf(tmp, sizeof tmp, "%s%lld", i ? ", " : "",
               (long long)CONSTS[i].i);
    PUT(tmp);
  }
  PUT("; GK, GN = 2.5, 3\nreturn ");
  PUT(body);
  PUT("\n");
#undef PUT
  orion_buf_append(&b, "", 1);
  cr_assert(!b.oom);
  return b.data;
}

/* ------------------------------------------------------------------------
 * The reference: the interpreter tier (capture + orion_exec).
 * ---------------------------------------------------------------------- */

#define FAKE_ARRAY_MT "test.cgen.array"
#define FAKE_ACC_MT "test.cgen.acc"
#define FAKE_BUFFER_MT "test.cgen.buffer"

static int fake_new(lua_State *L, const char *mt) {
  int64_t *id = lua_newuserdatauv(L, sizeof *id, 0);
  *id = (int64_t)luaL_checkinteger(L, 1);
  luaL_setmetatable(L, mt);
  return 1;
}
static int fake_array(lua_State *L) { return fake_new(L, FAKE_ARRAY_MT); }
static int fake_acc(lua_State *L) { return fake_new(L, FAKE_ACC_MT); }
static int fake_buffer(lua_State *L) { return fake_new(L, FAKE_BUFFER_MT); }

static int classify(lua_State *L, int idx, int64_t *id, void *ud) {
  int64_t *p;
  (void)ud;
  if ((p = luaL_testudata(L, idx, FAKE_ARRAY_MT)) != NULL) {
    *id = *p;
    return ORION_CAPTURE_ARRAY;
  }
  if ((p = luaL_testudata(L, idx, FAKE_ACC_MT)) != NULL) {
    *id = *p;
    return ORION_CAPTURE_ACC;
  }
  if ((p = luaL_testudata(L, idx, FAKE_BUFFER_MT)) != NULL) {
    *id = *p;
    return ORION_CAPTURE_BUFFER;
  }
  return 0;
}

/* The body's function info, for orion_find_body. */
typedef struct body_info {
  int line_defined, last_line, nparams, is_vararg;
} body_info;

/* Loads the chunk in a driver state and encodes the body it returns. */
static void encode_body(const char *chunk, orion_buf *blob, body_info *bi) {
  lua_State *L = luaL_newstate();
  orion_capture_info info;
  lua_Debug ar;
  char err[512];
  int rc;
  luaL_openlibs(L);
  luaL_newmetatable(L, FAKE_ARRAY_MT);
  luaL_newmetatable(L, FAKE_ACC_MT);
  luaL_newmetatable(L, FAKE_BUFFER_MT);
  lua_pop(L, 3);
  lua_register(L, "fake_array", fake_array);
  lua_register(L, "fake_acc", fake_acc);
  lua_register(L, "fake_buffer", fake_buffer);
  rc = luaL_loadbuffer(L, chunk, strlen(chunk), "=snippet");
  cr_assert_eq(rc, LUA_OK, "snippet does not compile: %s", lua_tostring(L, -1));
  rc = lua_pcall(L, 0, 1, 0);
  cr_assert_eq(rc, LUA_OK, "snippet fails: %s", lua_tostring(L, -1));
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">Su", &ar);
  bi->line_defined = ar.linedefined;
  bi->last_line = ar.lastlinedefined;
  bi->nparams = ar.nparams;
  bi->is_vararg = ar.isvararg;
  orion_buf_init(blob);
  rc =
      orion_capture_encode(L, -1, classify, NULL, blob, &info, err, sizeof err);
  cr_assert_eq(rc, 0, "encode failed: %s", err);
  orion_capture_info_free(&info);
  lua_close(L);
}

#define SEED 12345u
#define BLOCK 7

/* Runs the body over [lo, hi) of the iterated array in `calls` equal
 * parts (each a run of the executor), then flushes the buffers. */
static void run_reference(const char *chunk, state *s, int64_t lo, int64_t hi,
                          int calls) {
  orion_exec *ex = orion_exec_new(0);
  orion_buf blob;
  orion_error err;
  body_info bi;
  int i, rc = 0;
  cr_assert_not_null(ex);
  for (i = 0; i < NARRS; i++)
    cr_assert_eq(orion_exec_bind_array(ex, ARRS[i].id, s->arr[i]), 0);
  cr_assert_eq(orion_exec_bind_array(ex, ID_ITER, s->arr[NARRS]), 0);
  for (i = 0; i < NACCS; i++)
    cr_assert_eq(orion_exec_bind_acc(ex, ACCS[i].id, ACCS[i].op), 0);
  for (i = 0; i < NBUFS; i++) {
    orion_error_clear(&err);
    cr_assert_eq(orion_exec_bind_buffer(ex, BUFS[i].id, BUFS[i].name,
                                        ARRS[array_index(BUFS[i].target)].id,
                                        BUFS[i].op, NULL, 0, ORION_FLUSH_BLOCK,
                                        &err),
                 0, "%s", err.msg);
  }
  encode_body(chunk, &blob, &bi);
  orion_error_clear(&err);
  rc = orion_exec_load(ex, 1, blob.data, blob.len, &err);
  orion_buf_free(&blob);
  cr_assert_eq(rc, 0, "load: %s", err.msg);
  for (i = 0; i < calls && rc == 0; i++) {
    int64_t a = lo + (hi - lo) * i / calls,
            b = lo + (hi - lo) * (i + 1) / calls;
    orion_error_clear(&err);
    rc = orion_exec_run(ex, ID_ITER, a, b, SEED, BLOCK, &err);
  }
  if (rc != 0) {
    const char *m = err.msg, *p, *nl;
    s->failed = 1;
    cr_assert(strncmp(m, "executor 0, element ", 20) == 0, "%s", m);
    p = strstr(m, "): ");
    cr_assert_not_null(p, "%s", m);
    snprintf(s->key, sizeof s->key, "%.*s", (int)(p + 1 - (m + 20)), m + 20);
    nl = strchr(p + 3, '\n');
    snprintf(s->first, sizeof s->first, "%.*s",
             (int)(nl != NULL ? nl - (p + 3) : (ptrdiff_t)strlen(p + 3)),
             p + 3);
  }
  orion_error_clear(&err);
  cr_assert_eq(orion_exec_flush(ex, 1, &err), 0, "flush: %s", err.msg);
  for (i = 0; i < NACCS; i++)
    cr_assert_eq(orion_exec_take_acc(ex, ACCS[i].id, &s->acc[i]), 0);
  orion_exec_free(ex);
}

/* ------------------------------------------------------------------------
 * The compiled body.
 * ---------------------------------------------------------------------- */

static int resolve(void *ud, const char *name, orion_binding *b) {
  int i;
  (void)ud;
  memset(b, 0, sizeof *b);
  for (i = 0; i < NARRS; i++)
    if (strcmp(ARRS[i].name, name) == 0) {
      b->kind = ORION_BIND_ARRAY;
      b->arr.id = ARRS[i].id;
      b->arr.ndims = ARRS[i].ndims;
      memcpy(b->arr.dims, ARRS[i].dims, sizeof ARRS[i].dims);
      b->arr.type = ARRS[i].type;
      return 0;
    }
  for (i = 0; i < NACCS; i++)
    if (strcmp(ACCS[i].name, name) == 0) {
      b->kind = ORION_BIND_ACC;
      b->id = ACCS[i].id;
      return 0;
    }
  for (i = 0; i < NBUFS; i++)
    if (strcmp(BUFS[i].name, name) == 0) {
      const tarray *t = &ARRS[array_index(BUFS[i].target)];
      b->kind = ORION_BIND_BUFFER;
      b->id = BUFS[i].id;
      b->arr.id = t->id;
      b->arr.ndims = t->ndims;
      memcpy(b->arr.dims, t->dims, sizeof t->dims);
      b->arr.type = t->type;
      return 0;
    }
  for (i = 0; i < NCONSTS; i++)
    if (strcmp(CONSTS[i].name, name) == 0) {
      b->kind = ORION_BIND_NUMBER;
      b->is_int = CONSTS[i].isint;
      b->ival = CONSTS[i].i;
      b->fval = CONSTS[i].isint ? (double)CONSTS[i].i : CONSTS[i].d;
      return 0;
    }
  if (strcmp(name, "IT") == 0) {
    b->kind = ORION_BIND_ARRAY; /* filled by the caller's iter info */
    b->arr.id = ID_ITER;
    return 0;
  }
  if (strcmp(name, "math") == 0 || strcmp(name, "print") == 0 ||
      strcmp(name, "string") == 0 || strcmp(name, "pairs") == 0 ||
      strcmp(name, "ipairs") == 0 || strcmp(name, "tostring") == 0 ||
      strcmp(name, "type") == 0) {
    b->kind = ORION_BIND_BUILTIN;
    return 0;
  }
  if (strcmp(name, "GK") == 0 || strcmp(name, "GN") == 0) {
    b->kind = ORION_BIND_NUMBER; /* globals of the chunk */
    b->is_int = name[1] == 'N';
    b->ival = 3;
    b->fval = name[1] == 'N' ? 3.0 : 2.5;
    return 0;
  }
  if (strcmp(name, "helper") == 0) {
    b->kind = ORION_BIND_FUNC;
    return 0;
  }
  if (strcmp(name, "flag") == 0 || strcmp(name, "tbl") == 0) {
    b->kind = ORION_BIND_VALUE;
    return 0;
  }
  b->kind = ORION_BIND_NONE;
  return 1;
}

/* The iterated array's shape, and how the captured numbers differ from
 * CONSTS: each value plus `shift` (subtypes kept), and the one named
 * `flip` (if any) of the other subtype. */
typedef struct resolve_ctx {
  orion_arrayinfo iter;
  int64_t shift;
  const char *flip;
} resolve_ctx;

static int resolve_iter(void *ud, const char *name, orion_binding *b) {
  resolve_ctx *r = ud;
  int rc = resolve(NULL, name, b);
  if (rc == 0 && b->kind == ORION_BIND_ARRAY && b->arr.id == ID_ITER) {
    b->arr = r->iter;
    b->arr.id = ID_ITER;
  }
  if (rc == 0 && b->kind == ORION_BIND_NUMBER) {
    if (r->flip != NULL && strcmp(name, r->flip) == 0) {
      b->is_int = !b->is_int;
      b->ival = (int64_t)b->fval; /* the same number, as the subtype says */
    }
    if (b->is_int)
      b->ival += r->shift;
    b->fval += (double)r->shift;
  }
  return rc;
}

static orion_arrayinfo iter_info(iter_kind kind) {
  orion_array *a = new_iter(kind);
  orion_arrayinfo info;
  memset(&info, 0, sizeof info);
  info.id = ID_ITER;
  info.ndims = a->ndims;
  memcpy(info.dims, a->dims, sizeof info.dims);
  info.type = a->type;
  info.sparse = a->sparse;
  info.nnz = a->nnz;
  orion_array_release(a);
  return info;
}

/* Generates C for the chunk's body with the captured numbers changed as
 * resolve_ctx says; returns orion_cgen's code. */
/* Generate the device form too (orion_cgen_in.gpu): the C builds of
 * every test then show that the C compiler ignores it. */
static int gen_gpu = 1;

static int generate_with(const char *chunk, iter_kind kind, int fast,
                         int64_t shift, const char *flip, orion_cgen_out *out,
                         orion_error *err) {
  orion_ast *ast;
  orion_cgen_in in;
  resolve_ctx r;
  const ast_node *ret;
  int rc;
  rc = orion_parse(chunk, strlen(chunk), "snippet", &ast, err);
  cr_assert_eq(rc, 0, "parse: %s", err->msg);
  ret = ast->chunk->list.v[ast->chunk->list.n - 1];
  cr_assert_eq(ret->kind, AST_RETURN);
  memset(&in, 0, sizeof in);
  in.func = ret->list.v[0];
  cr_assert_eq(in.func->kind, AST_FUNC);
  in.chunkname = "snippet";
  in.chunk = ast->chunk;
  r.iter = iter_info(kind);
  r.shift = shift;
  r.flip = flip;
  in.iter = r.iter;
  in.resolve = resolve_iter;
  in.ud = &r;
  in.fast = fast;
  in.gpu = gen_gpu;
  orion_error_clear(err);
  rc = orion_cgen(&in, out, err);
  orion_ast_free(ast);
  return rc;
}

/* Generates C for the chunk's body; returns orion_cgen's code. */
static int generate(const char *chunk, iter_kind kind, int fast,
                    orion_cgen_out *out, orion_error *err) {
  return generate_with(chunk, kind, fast, 0, NULL, out, err);
}

/* A loaded shared object. */
typedef struct built {
  orion_cobj *obj;
  orion_cbody_fn fn;
} built;

/* Builds src with util/ccomp.c into a private cache, warnings as errors
 * (the generated code must compile cleanly). */
static void build(const char *src, int fast, built *b) {
  orion_error err;
  const int *abi;
  int rc, cached;
  orion_error_clear(&err);
  rc = orion_cobj_build(src, strlen(src), orion_cgen_mode_flags(fast), 0,
                        &b->obj, &cached, &err);
  cr_assert_eq(rc, 0, "building the generated code failed: %s\n%s", err.msg,
               src);
  b->fn = (orion_cbody_fn)(uintptr_t)orion_cobj_sym(b->obj, ORION_CBODY_FN);
  cr_assert_not_null(b->fn);
  abi = orion_cobj_sym(b->obj, ORION_CBODY_ABI_SYM);
  cr_assert_not_null(abi);
  cr_assert_eq(*abi, ORION_CBODY_ABI);
}

static void unbuild(built *b) { orion_cobj_free(b->obj); }

/* One cache directory per test run (removed at the end), and the flags
 * every object is built with. */
static char cache_dir[256];

static void suite_init(void) {
  const char *cflags = getenv("ORION_CFLAGS");
  char flags[512];
  snprintf(cache_dir, sizeof cache_dir, "/tmp/orion-test-cgen-%d",
           (int)getpid());
  setenv("ORION_CACHE_DIR", cache_dir, 1);
  snprintf(flags, sizeof flags, "%s -Wall -Wextra -Werror",
           cflags != NULL ? cflags : "-O3 -march=native");
  setenv("ORION_CFLAGS", flags, 1);
}

static void suite_fini(void) {
  char cmd[400];
  int rc;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  rc = system(cmd);
  (void)rc;
}

TestSuite(cgen, .init = suite_init, .fini = suite_fini);

/* Buffers as the executor keeps them: pending values per element of the
 * target, applied in key order at the flush. */
typedef struct mockbuf {
  orion_array *target;
  orion_apply_op op;
  orion_cval *pend;
  unsigned char *dirty;
  /* Inline mode (util/cbody.h's vals): pend is the body's dense store. */
  uint64_t *bits;
  int64_t *list, nlisted;
} mockbuf;

/* Inline mode: the buffers hand the body their dense store (as the
 * executor does for small targets) and the calls must not be made;
 * MOCK_LIST is the key list's room, small so that both of the store's
 * ways (list, then count only) are exercised. */
static int inline_mode, mock_calls;
#define MOCK_LIST 3

static orion_cval mock_get(orion_cctx *c, void *h, int64_t key) {
  mockbuf *m = h;
  orion_cval zero;
  (void)c;
  mock_calls++;
  cr_assert(key >= 0 && key < m->target->nnz, "buf_get key %lld",
            (long long)key);
  zero.i = 0;
  return m->dirty[key] ? m->pend[key] : zero;
}

static int mock_set(orion_cctx *c, void *h, int64_t key, orion_cval v) {
  mockbuf *m = h;
  (void)c;
  mock_calls++;
  cr_assert(key >= 0 && key < m->target->nnz, "buf_set key %lld",
            (long long)key);
  m->pend[key] = v;
  m->dirty[key] = 1;
  return 0;
}

static void mock_flush(mockbuf *m) {
  orion_array *a = m->target;
  int64_t k;
  int isint = a->type == ORION_I32 || a->type == ORION_I64;
  for (k = 0; k < a->nnz; k++) {
    if (!m->dirty[k])
      continue;
    if (isint) {
      int64_t x = m->pend[k].i;
      if (m->op == ORION_APPLY_ADD)
        x = (int64_t)((uint64_t)orion_value_get_i64(a->values, a->type, k) +
                      (uint64_t)x);
      orion_value_set_i64(a->values, a->type, k, x);
    } else {
      double x = m->pend[k].d;
      if (m->op == ORION_APPLY_ADD)
        x += orion_value_get_f64(a->values, a->type, k);
      orion_value_set_f64(a->values, a->type, k, x);
    }
  }
}

static int elem_count;
static int count_elem(orion_cctx *c) {
  (void)c;
  elem_count++;
  return 0;
}

static void carray_of(const orion_array *a, orion_carray *c) {
  memset(c, 0, sizeof *c);
  c->values = a->values;
  c->keys = a->sparse ? a->keys : NULL;
  c->type = (int32_t)a->type;
  c->ndims = a->ndims;
  c->nnz = a->nnz;
  memcpy(c->dims, a->dims, sizeof c->dims);
  memcpy(c->strides, a->strides, sizeof c->strides);
}

static void run_compiled(const orion_cgen_out *out, built *b, state *s,
                         int64_t lo, int64_t hi, int calls) {
  orion_cctx ctx;
  orion_carray arrays[16];
  orion_cbuffer bufs[8];
  mockbuf mocks[8];
  orion_cacc accs[8];
  orion_cval consts[32];
  orion_luarand rng;
  int na = 0, nb = 0, nc = 0, nk = 0, i, j, rc = 0;
  memset(&ctx, 0, sizeof ctx);
  memset(mocks, 0, sizeof mocks);
  ctx.abi = ORION_CBODY_ABI;
  carray_of(s->arr[NARRS], &ctx.iter);
  for (i = 0; i < out->nslots; i++) {
    const orion_cslot *sl = &out->slots[i];
    switch (sl->kind) {
    case ORION_CSLOT_ARRAY:
      j = sl->id == ID_ITER ? NARRS : array_index(sl->name);
      cr_assert(j >= 0, "slot %s", sl->name);
      cr_assert_lt(na, 16);
      carray_of(s->arr[j], &arrays[na++]);
      break;
    case ORION_CSLOT_BUFFER:
      for (j = 0; j < NBUFS && strcmp(BUFS[j].name, sl->name) != 0; j++)
        ;
      cr_assert(j < NBUFS);
      cr_assert_eq(sl->id, BUFS[j].id);
      mocks[nb].target = s->arr[array_index(BUFS[j].target)];
      mocks[nb].op = BUFS[j].op;
      mocks[nb].pend =
          calloc((size_t)mocks[nb].target->nnz, sizeof(orion_cval));
      mocks[nb].dirty = calloc((size_t)mocks[nb].target->nnz, 1);
      memset(&bufs[nb], 0, sizeof bufs[nb]);
      bufs[nb].h = &mocks[nb];
      bufs[nb].type = (int32_t)mocks[nb].target->type;
      bufs[nb].ndims = mocks[nb].target->ndims;
      bufs[nb].op = (int32_t)BUFS[j].op;
      memcpy(bufs[nb].dims, mocks[nb].target->dims, sizeof bufs[nb].dims);
      memcpy(bufs[nb].strides, mocks[nb].target->strides,
             sizeof bufs[nb].strides);
      if (inline_mode) {
        mocks[nb].bits = calloc(((size_t)mocks[nb].target->nnz + 63) / 64,
                                sizeof(uint64_t));
        mocks[nb].list = calloc(MOCK_LIST, sizeof(int64_t));
        bufs[nb].vals = mocks[nb].pend;
        bufs[nb].bits = mocks[nb].bits;
        bufs[nb].dirty = mocks[nb].list;
        bufs[nb].ndirty = &mocks[nb].nlisted;
        bufs[nb].dirty_max = MOCK_LIST;
      }
      nb++;
      break;
    case ORION_CSLOT_ACC:
      for (j = 0; j < NACCS && strcmp(ACCS[j].name, sl->name) != 0; j++)
        ;
      cr_assert(j < NACCS);
      cr_assert_eq(sl->id, ACCS[j].id);
      memset(&accs[nc], 0, sizeof accs[nc]);
      accs[nc++].op = (int32_t)ACCS[j].op;
      break;
    case ORION_CSLOT_CONST:
      if (sl->isint)
        consts[nk++].i = sl->ival;
      else
        consts[nk++].d = sl->fval;
      break;
    }
  }
  ctx.arrays = arrays;
  ctx.bufs = bufs;
  ctx.accs = accs;
  ctx.consts = consts;
  ctx.buf_get = mock_get;
  ctx.buf_set = mock_set;
  ctx.elem_done = count_elem;
  elem_count = 0;
  mock_calls = 0;
  for (i = 0; i < calls && rc == 0; i++) {
    int64_t a = lo + (hi - lo) * i / calls,
            e = lo + (hi - lo) * (i + 1) / calls;
    /* The executor seeds math.random per run, as the interpreter's
     * orion_exec_run does. */
    orion_luarand_seed(&rng, (int64_t)orion_seed_mix(SEED, 1, BLOCK), 0);
    memcpy(ctx.rng, rng.s, sizeof ctx.rng);
    rc = b->fn(&ctx, a, e);
    if (rc == 0) {
      cr_assert_eq(ctx.cur, e > a ? e - 1 : ctx.cur);
    }
  }
  if (rc != 0) {
    char *nl = strchr(ctx.err, '\n');
    s->failed = 1;
    cr_assert_not_null(nl, "no traceback in '%s'", ctx.err);
    cr_assert(strstr(nl, "\nstack traceback:\n\t[compiled] snippet:") == nl,
              "%s", ctx.err);
    snprintf(s->first, sizeof s->first, "%.*s", (int)(nl - ctx.err), ctx.err);
    key_text(s->arr[NARRS], ctx.cur, s->key, sizeof s->key);
  } else {
    cr_assert_eq(elem_count, hi - lo);
  }
  if (inline_mode)
    cr_assert_eq(mock_calls, 0, "inline mode, yet %d buf_get/buf_set calls",
                 mock_calls);
  for (i = 0; i < nb && inline_mode; i++) {
    /* The store's bookkeeping, as dsm/wbuf.c keeps it: one bit per
     * pending key, the count of them, the first MOCK_LIST listed. */
    int64_t k, nbits = 0;
    for (k = 0; k < mocks[i].target->nnz; k++)
      if (mocks[i].bits[k >> 6] >> (k & 63) & 1) {
        mocks[i].dirty[k] = 1;
        nbits++;
      } else {
        cr_assert_eq(mocks[i].pend[k].i, 0, "clean key %lld is not 0",
                     (long long)k);
      }
    cr_assert_eq(mocks[i].nlisted, nbits);
    for (k = 0; k < nbits && k < MOCK_LIST; k++) {
      int64_t key = mocks[i].list[k];
      cr_assert(mocks[i].bits[key >> 6] >> (key & 63) & 1);
      cr_assert(k == 0 || key != mocks[i].list[k - 1]);
    }
    free(mocks[i].bits);
    free(mocks[i].list);
  }
  for (i = 0; i < nb; i++) {
    mock_flush(&mocks[i]);
    free(mocks[i].pend);
    free(mocks[i].dirty);
  }
  /* Accumulators in slot order; the state keeps them in ACCS order. */
  for (i = 0, j = 0; i < out->nslots; i++) {
    const orion_cslot *sl = &out->slots[i];
    int k;
    if (sl->kind != ORION_CSLOT_ACC)
      continue;
    for (k = 0; strcmp(ACCS[k].name, sl->name) != 0; k++)
      ;
    s->acc[k].has = accs[j].has;
    s->acc[k].isint = accs[j].isint;
    s->acc[k].i = accs[j].i;
    s->acc[k].d = accs[j].d;
    j++;
  }
}

/* ------------------------------------------------------------------------
 * Comparing.
 * ---------------------------------------------------------------------- */

static const char *arr_name(int i) { return i == NARRS ? "IT" : ARRS[i].name; }

/* Bit-exact, or within tol (relative) when tol > 0. */
static void compare_states(const state *want, const state *got, double tol,
                           const char *body) {
  int i;
  cr_assert_eq(got->failed, want->failed,
               "interpreter %s, compiled %s\ninterpreter: %s\ncompiled: "
               "%s\nbody: %s",
               want->failed ? "failed" : "succeeded",
               got->failed ? "failed" : "succeeded", want->first, got->first,
               body);
  if (want->failed) {
    cr_assert_str_eq(got->first, want->first, "message differs\nbody: %s",
                     body);
    cr_assert_str_eq(got->key, want->key, "failing element differs\nbody: %s",
                     body);
  }
  for (i = 0; i <= NARRS; i++) {
    const orion_array *a = want->arr[i], *b = got->arr[i];
    size_t es = orion_type_size(a->type);
    int64_t k;
    for (k = 0; k < a->nnz; k++) {
      const char *pa = (const char *)a->values + (size_t)k * es;
      const char *pb = (const char *)b->values + (size_t)k * es;
      if (memcmp(pa, pb, es) == 0)
        continue;
      /* Where two NaNs meet, which one's sign and payload survive depends
       * on the machine code, not on Lua: any NaN equals any NaN. */
      if ((a->type == ORION_F32 || a->type == ORION_F64) &&
          isnan(orion_value_get_f64(a->values, a->type, k)) &&
          isnan(orion_value_get_f64(b->values, b->type, k)))
        continue;
      if (tol > 0 && (a->type == ORION_F32 || a->type == ORION_F64)) {
        double x = orion_value_get_f64(a->values, a->type, k);
        double y = orion_value_get_f64(b->values, b->type, k);
        if (fabs(x - y) <= tol * (1 + fabs(x)))
          continue;
      }
      if (a->type == ORION_F32 || a->type == ORION_F64)
        cr_assert_fail("array %s element %lld: interpreter %.17g, compiled "
                       "%.17g\nbody: %s",
                       arr_name(i), (long long)k,
                       orion_value_get_f64(a->values, a->type, k),
                       orion_value_get_f64(b->values, b->type, k), body);
      else
        cr_assert_fail("array %s element %lld: interpreter %lld, compiled "
                       "%lld\nbody: %s",
                       arr_name(i), (long long)k,
                       (long long)orion_value_get_i64(a->values, a->type, k),
                       (long long)orion_value_get_i64(b->values, b->type, k),
                       body);
    }
  }
  for (i = 0; i < NACCS; i++) {
    const orion_accval *x = &want->acc[i], *y = &got->acc[i];
    cr_assert_eq(y->has, x->has, "accumulator %s: has\nbody: %s", ACCS[i].name,
                 body);
    if (!x->has)
      continue;
    cr_assert_eq(y->isint, x->isint, "accumulator %s: subtype\nbody: %s",
                 ACCS[i].name, body);
    if (x->isint)
      cr_assert_eq(y->i, x->i, "accumulator %s: %lld vs %lld\nbody: %s",
                   ACCS[i].name, (long long)x->i, (long long)y->i, body);
    else if (tol > 0)
      cr_assert(fabs(x->d - y->d) <= tol * (1 + fabs(x->d)),
                "accumulator %s: %.17g vs %.17g\nbody: %s", ACCS[i].name, x->d,
                y->d, body);
    else
      cr_assert(memcmp(&x->d, &y->d, sizeof x->d) == 0 ||
                    (isnan(x->d) && isnan(y->d)),
                "accumulator %s: %.17g vs %.17g\nbody: %s", ACCS[i].name, x->d,
                y->d, body);
  }
}

typedef struct check_opts {
  int fast;
  double tol;
  int calls;            /* runs the range in this many calls (default 1) */
  int64_t lo, hi;       /* element range (hi 0: all) */
  const char *expect;   /* a substring the error's first line must hold, or
                           "" for success, or NULL for no expectation */
  orion_cgen_out *keep; /* receives the generated code when not NULL */
} check_opts;

/* Runs body both ways and compares. */
static void check_with(iter_kind kind, const char *body, check_opts o) {
  char *chunk = chunk_text(body);
  orion_cgen_out out;
  orion_error err;
  state want, got;
  built b;
  int rc;
  int64_t lo, hi;
  rc = generate(chunk, kind, o.fast, &out, &err);
  cr_assert_eq(rc, 0, "orion_cgen refused: %s\nbody: %s", err.msg, body);
  if (getenv("TEST_CGEN_DUMP") != NULL) {
    /* Appends the generated code to that file, for reading. */
    FILE *f = fopen(getenv("TEST_CGEN_DUMP"), "a");
    if (f != NULL) {
      fprintf(f, "/* ==== body:\n%s\n*/\n%s\n", body, out.src.data);
      fclose(f);
    }
  }
  build(out.src.data, o.fast, &b);
  state_init(&want, kind);
  state_init(&got, kind);
  lo = o.lo;
  hi = o.hi > 0 ? o.hi : want.arr[NARRS]->nnz;
  run_reference(chunk, &want, lo, hi, o.calls > 0 ? o.calls : 1);
  run_compiled(&out, &b, &got, lo, hi, o.calls > 0 ? o.calls : 1);
  compare_states(&want, &got, o.tol, body);
  /* Again with the buffers' dense stores read and written inline. */
  state_free(&got);
  state_init(&got, kind);
  inline_mode = 1;
  run_compiled(&out, &b, &got, lo, hi, o.calls > 0 ? o.calls : 1);
  inline_mode = 0;
  if (o.expect != NULL) {
    if (o.expect[0] == 0)
      cr_assert(!want.failed, "the interpreter failed: %s\nbody: %s",
                want.first, body);
    else
      cr_assert(want.failed && strstr(want.first, o.expect) != NULL,
                "expected an error with '%s', the interpreter says '%s'\n"
                "body: %s",
                o.expect, want.first, body);
  }
  compare_states(&want, &got, o.tol, body);
  state_free(&want);
  state_free(&got);
  unbuild(&b);
  if (o.keep != NULL)
    *o.keep = out;
  else
    orion_cgen_out_free(&out);
  orion_free(chunk);
}

static void check(iter_kind kind, const char *body) {
  check_opts o;
  memset(&o, 0, sizeof o);
  check_with(kind, body, o);
}

/* The body runs without error, identically. */
static void check_ok(iter_kind kind, const char *body) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.expect = "";
  check_with(kind, body, o);
}

/* The body fails with an error holding `msg`, identically. */
static void check_err(iter_kind kind, const char *body, const char *msg) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.expect = msg;
  check_with(kind, body, o);
}

/* orion_cgen refuses the body with why == expect. */
static void check_why(iter_kind kind, const char *body, const char *expect) {
  char *chunk = chunk_text(body);
  orion_cgen_out out;
  orion_error err;
  int rc = generate(chunk, kind, 0, &out, &err);
  cr_assert_eq(rc, ORION_EUNSUPPORTED, "expected a refusal (%s), got %d",
               expect, rc);
  cr_assert_str_eq(out.why, expect);
  cr_assert(strstr(err.msg, expect) != NULL, "%s", err.msg);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

/* ------------------------------------------------------------------------
 * The MF body (apps/mf/mf.lua).
 * ---------------------------------------------------------------------- */

static const char MF_SGD[] = "function(u, i, r)\n"
                             "  local wu, hi = W[u], H[i]\n"
                             "  local e = r\n"
                             "  for k = 1, K do e = e - wu[k] * hi[k] end\n"
                             "  S:add(e * e)\n"
                             "  for k = 1, K do\n"
                             "    local w, h = wu[k], hi[k]\n"
                             "    wu[k] = w + LR * (e * h - REG * w)\n"
                             "    hi[k] = h + LR * (e * w - REG * h)\n"
                             "  end\n"
                             "end";

static const char MF_SGD64[] = "function(u, i, r)\n"
                               "  local wu, hi = W2[u], H2[i]\n"
                               "  local e = r\n"
                               "  for k = 1, K do e = e - wu[k] * hi[k] end\n"
                               "  S:add(e * e)\n"
                               "  for k = 1, K do\n"
                               "    local w, h = wu[k], hi[k]\n"
                               "    wu[k] = w + LR * (e * h - REG * w)\n"
                               "    hi[k] = h + LR * (e * w - REG * h)\n"
                               "  end\n"
                               "end";

Test(cgen, mf_sgd_f32) { check_ok(IT_RAT, MF_SGD); }

Test(cgen, mf_sgd_f64) { check_ok(IT_RAT, MF_SGD64); }

Test(cgen, mf_sgd_in_blocks) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.calls = 3;
  o.expect = "";
  check_with(IT_RAT, MF_SGD, o);
}

Test(cgen, mf_sgd_fast_within_tolerance) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.fast = 1;
  o.tol = 1e-5;
  o.expect = "";
  check_with(IT_RAT, MF_SGD, o);
}

static const char MF_EVAL[] = "function(u, i, r)\n"
                              "  local wu, hi = W[u], H[i]\n"
                              "  local e = r\n"
                              "  for k = 1, K do e = e - wu[k] * hi[k] end\n"
                              "  S:add(e * e)\n"
                              "end";

Test(cgen, mf_eval) { check_ok(IT_RAT, MF_EVAL); }

/* The subscripts run past the row: the loop's check fails and the copy
 * with per-access checks raises at the same access as the interpreter. */
Test(cgen, mf_hoisted_check_fails_like_interpreter) {
  check_err(IT_RAT,
            "function(u, i, r)\n"
            "  local wu = W[u]\n"
            "  local s = 0.0\n"
            "  for k = 1, K + 1 do s = s + wu[k]; wu[k] = s end\n"
            "  S:add(s)\n"
            "end",
            "array 'W': index 9 out of range 1..8 in dimension 2");
  check_err(IT_RAT,
            "function(u, i, r)\n"
            "  for k = K, 0, -1 do W[u][k] = W[u][k] + k end\n"
            "end",
            "array 'W': index 0 out of range 1..8 in dimension 2");
  check_ok(IT_RAT,
           "function(u, i, r)\n"
           "  for k = 2, K do W[u][k - 1] = W[u][k] + H[i][k - 1] end\n"
           "  for k = 1, K - 1, 2 do H[i][k + 1] = H[i][1 + k] * r end\n"
           "  for k = K, 1, -3 do H[i][k] = -H[i][k] end\n"
           "end");
}

/* ------------------------------------------------------------------------
 * Golden bodies of t/analysis that are in the compiled subset.
 * ---------------------------------------------------------------------- */

static const char LDA_GIBBS[] =
    "function(d, w, o, z)\n"
    "  local dd, ww = DT[d], WT[w]\n"
    "  dd[z] = dd[z] - 1\n"
    "  ww[z] = ww[z] - 1\n"
    "  TB[z] = TB[z] - 1\n"
    "  local total = 0\n"
    "  for k = 1, NK do\n"
    "    total = total + (dd[k] + alpha) * (ww[k] + beta) / (NT[k] + V * "
    "beta)\n"
    "  end\n"
    "  local r = math.random() * total\n"
    "  local nz = NK\n"
    "  for k = 1, NK do\n"
    "    r = r - (dd[k] + alpha) * (ww[k] + beta) / (NT[k] + V * beta)\n"
    "    if r <= 0 then\n"
    "      nz = k\n"
    "      break\n"
    "    end\n"
    "  end\n"
    "  dd[nz] = dd[nz] + 1\n"
    "  ww[nz] = ww[nz] + 1\n"
    "  TB[nz] = TB[nz] + 1\n"
    "  return nz\n"
    "end";

/* Each with the error its run raises ("": none) and, for bodies outside
 * the GPU subset, the gpu_why the generator gives (NULL: in the subset;
 * tests below build those with nvcc). */
typedef struct golden {
  const char *name;
  iter_kind kind;
  const char *body;
  const char *err;
  const char *gpu_why;
} golden;

static const golden GOLDEN[] = {
    /* mf.lua: sgd and the evaluation loop. */
    {"mf_sgd", IT_RAT, MF_SGD, "", NULL},
    {"mf_sgd64", IT_RAT, MF_SGD64, "", NULL},
    {"mf_eval", IT_RAT, MF_EVAL, "", NULL},
    /* control.lua: nested_loops_1d and break_1d on DT; while_row,
     * repeat_alias, repeat_counter, early. */
    {"control_nested", IT_M64,
     "function(i, j, v)\n"
     "  for k = 1, 4 do\n"
     "    for l = 1, 2 do\n"
     "      DT[i][k] = (DT[i][k] * 3 + l + v) % MOD\n"
     "    end\n"
     "  end\n"
     "end",
     "", NULL},
    {"control_break", IT_M64,
     "function(i, j, v)\n"
     "  for k = 1, 4 do\n"
     "    if DT[i][k] > 12 then break end\n"
     "    DT[i][k] = (DT[i][k] * 7 + v + j) % 17\n"
     "  end\n"
     "end",
     "", NULL},
    {"control_while", IT_VEC,
     "function(i, v)\n"
     "  local k = 1\n"
     "  while k <= 2 do\n"
     "    N[1 + i % 3][k][1] = (N[1 + i % 3][k][1] * 3 + v + k) % MOD\n"
     "    k = k + 1\n"
     "  end\n"
     "end",
     "", NULL},
    {"control_repeat_alias", IT_VEC,
     "function(i, v)\n"
     "  local x = v\n"
     "  repeat\n"
     "    local u = i\n"
     "    B[u] = (B[u] * 3 + x) % MOD\n"
     "    x = x // 2\n"
     "  until x == 0 or u < 0 or x == -1\n"
     "end",
     "", NULL},
    {"control_repeat_counter", IT_VEC,
     "function(i, v)\n"
     "  local k = 0\n"
     "  repeat\n"
     "    k = k + 1\n"
     "    B[k] = (B[k] * 3 + v) % MOD\n"
     "  until k >= 3\n"
     "end",
     "", NULL},
    {"control_early", IT_VEC,
     "function(i, v)\n"
     "  if v % 3 == 0 then return end\n"
     "  if v % 3 == 1 then return nil end\n"
     "  B[i] = (B[i] * 3 + v) % MOD\n"
     "end",
     "", NULL},
    /* return_new_value, left_return (the iterated array by name),
     * prefix. */
    {"returns_new_value", IT_M64,
     "function(i, j, v)\n"
     "  if j == 1 then return end\n"
     "  if v % 2 == 0 then return v // 2 end\n"
     "  return (v * 3 + i) % MOD\n"
     "end",
     "", NULL},
    {"returns_left", IT_M64,
     "function(i, j, v)\n"
     "  if j > 1 then return (IT[i][j - 1] * 3 + v) % MOD end\n"
     "end",
     "", NULL},
    {"returns_prefix", IT_VEC,
     "function(i, v)\n"
     "  if i > 1 then return (IT[i - 1] * 3 + v) % MOD end\n"
     "end",
     "", NULL},
    /* subscripts.lua: twice (fails past the middle), float_sub, consts,
     * shifted. */
    {"subscripts_twice", IT_VEC,
     "function(i, v)\n"
     "  B[2 * i] = (B[2 * i] * 3 + v) % MOD\n"
     "end",
     "array 'B': index 14 out of range 1..12 in dimension 1", NULL},
    {"subscripts_float", IT_VEC,
     "function(i, v)\n"
     "  if i < 12 then\n"
     "    B[i + HALF * 2] = (B[i + HALF * 2] * 3 + v) % MOD\n"
     "  end\n"
     "end",
     "", NULL},
    {"subscripts_consts", IT_VEC,
     "function(i, v)\n"
     "  B[2] = B[1] * 2 + 1\n"
     "  I[i] = (v * 3 + B[1] + I[i]) % MOD\n"
     "end",
     "", NULL},
    {"subscripts_shifted", IT_M64,
     "function(i, j, v)\n"
     "  local off = 1\n"
     "  if i < 6 then DT[i][1 + j % 4] = (DT[i + off][1 + j % 4]"
     " * 3 + v) % MOD end\n"
     "end",
     "", NULL},
    /* logreg.lua: margin_grad with the gradient through a buffer,
     * gradient, sgd. */
    {"logreg_margin_grad", IT_RAT,
     "function(s, f, x)\n"
     "  LM[s] = LM[s] + LW[f] * x\n"
     "  local p = 1 / (1 + math.exp(-LM[s]))\n"
     "  GB[f] = GB[f] + (p - LY[s]) * x\n"
     "end",
     "", "8: a float buffer add in exact mode (the device's order of "
     "additions varies; fast = true allows it) (orion.buffer 'GB') runs on "
     "the CPU"},
    {"logreg_gradient", IT_RAT,
     "function(s, f, x)\n"
     "  local p = 1 / (1 + math.exp(-LM[s]))\n"
     "  GB[f] = GB[f] + (p - LY[s]) * x\n"
     "end",
     "", "7: a float buffer add in exact mode (the device's order of "
     "additions varies; fast = true allows it) (orion.buffer 'GB') runs on "
     "the CPU"},
    {"logreg_sgd", IT_RAT,
     "function(s, f, x)\n"
     "  local m = LM[s]\n"
     "  local p = 1 / (1 + math.exp(-m))\n"
     "  local g = (p - LY[s]) * x\n"
     "  LW[f] = LW[f] - LR * g\n"
     "  LM[s] = m - LR * g * x * x\n"
     "end",
     "", NULL},
    /* lda.lua: the Gibbs sampler (a count buffer, math.random) and the
     * log likelihood. */
    {"lda_gibbs", IT_TOK, LDA_GIBBS, "", NULL},
    {"lda_loglik", IT_TOK,
     "function(d, w, o, z)\n"
     "  S:add(math.log((DT[d][z] + alpha) * (WT[w][z] + beta) /"
     " (NT[z] + V * beta)))\n"
     "end",
     "", NULL},
};
#define NGOLDEN ((int)(sizeof GOLDEN / sizeof GOLDEN[0]))

/* Runs the golden bodies whose name starts with prefix both ways. */
static void check_golden(const char *prefix) {
  int i, n = 0;
  for (i = 0; i < NGOLDEN; i++)
    if (strncmp(GOLDEN[i].name, prefix, strlen(prefix)) == 0) {
      if (GOLDEN[i].err[0] != 0)
        check_err(GOLDEN[i].kind, GOLDEN[i].body, GOLDEN[i].err);
      else
        check_ok(GOLDEN[i].kind, GOLDEN[i].body);
      n++;
    }
  cr_assert(n > 0, "no golden body %s*", prefix);
}

Test(cgen, golden_control) { check_golden("control_"); }

Test(cgen, golden_returns) { check_golden("returns_"); }

Test(cgen, golden_subscripts) { check_golden("subscripts_"); }

Test(cgen, golden_logreg) { check_golden("logreg_"); }

Test(cgen, golden_lda_gibbs) { check_golden("lda_"); }

/* ------------------------------------------------------------------------
 * Integers.
 * ---------------------------------------------------------------------- */

Test(cgen, integer_wraparound) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  B[i] = BIG + i\n"
                   "  N[1][1][1] = math.mininteger * -1\n"
                   "  N[1][1][2] = -math.mininteger\n"
                   "  N[1][2][1] = math.maxinteger * 2 + v\n"
                   "  N[1][2][2] = BIG * BIG\n"
                   "  N[2][1][1] = math.mininteger - i\n"
                   "  N[2][1][2] = math.mininteger // -1\n"
                   "  N[2][2][1] = math.mininteger % -1\n"
                   "  N[2][2][2] = -(BIG + 1)\n"
                   "  N[3][1][1] = math.abs(math.mininteger) + v\n"
                   "end");
}

Test(cgen, floor_division_and_modulo_signs) {
  const char *body = "function(i, v)\n"
                     "  local d = i % 2 == 0 and -(i // 2) or (i + 1) // 2\n"
                     "  B[i] = v // d\n"
                     "  I[i] = v % d\n"
                     "  A[i] = (v + 0.5) // d\n"
                     "  M[1 + (i - 1) // 5 % 4][1 + (i - 1) % 5] = (v + 0.25)"
                     " % (d - 0.5)\n"
                     "  G[i] = v % -0.75 + (-v) // 0.5 + v % math.huge + "
                     "(-v - 1) % -math.huge\n"
                     "end";
  check_ok(IT_VEC, body);
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local n = v * 1000003 + i\n"
                   "  B[i] = n // 7 + n % 7 + n // -7 * 100 + n % -7 * 1000\n"
                   "  N[1 + i % 3][1 + i % 4][1 + i % 2] = (v - 5) // 3 - (v - "
                   "5) % 3\n"
                   "end");
}

Test(cgen, integer_division_by_zero) {
  check_err(IT_VEC, "function(i, v)\n  return i // Z\nend",
            "snippet:5: attempt to divide by zero");
  check_err(IT_VEC, "function(i, v)\n  B[i] = v % (i - i)\nend",
            "attempt to perform 'n%0'");
  /* The line is the last one where the VM saved its position: the read
   * of A (line 6), the call (line 7), the `==` of two registers (line
   * 8), the numeric for (line 9). */
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i]\n"
            "  local y = v + 1\n"
            "  if i > 3 then\n"
            "    return i // (y - y)\n"
            "  end\n"
            "end",
            "snippet:6: attempt to divide by zero");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i]\n"
            "  local y = math.abs(v)\n"
            "  if i == v then y = 0 end\n"
            "  for k = 1, 2 do y = y + k end\n"
            "  return i % (y - y)\n"
            "end",
            "snippet:9: attempt to perform 'n%0'");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i]\n"
            "  local y = math.abs(v)\n"
            "  if i == v or i == 7 then y = 0 end\n"
            "  return i // (y - y)\n"
            "end",
            "snippet:8: attempt to divide by zero");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i]\n"
            "  local y = math.abs(v)\n"
            "  return i // (y - y)\n"
            "end",
            "snippet:7: attempt to divide by zero");
  /* m.pi reads the sandbox's read-only view of math through its
   * __index, which saves the pc (line 8; issue 33). */
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i]\n"
            "  local m = math\n"
            "  local y = m.pi + v\n"
            "  return v % (i - i)\n"
            "end",
            "snippet:8: attempt to perform 'n%0'");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = A[i] + math.huge\n"
            "  if x ~= v then x = v end\n"
            "  return i // (x - x)\n"
            "end",
            "snippet:7: attempt to divide by zero");
}

Test(cgen, float_division_by_zero) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  A[i] = v / 0\n"
                   "  G[i] = (v - v) / 0.0\n"
                   "  M[1 + i % 4][1] = -v / 0.0\n"
                   "  M[1 + i % 4][2] = (v + 0.0) // 0\n"
                   "  M[1 + i % 4][3] = (v + 0.5) % 0\n"
                   "  M[1 + i % 4][4] = 0/0\n"
                   "  M[1 + i % 4][5] = -(0/0)\n"
                   "end");
}

Test(cgen, bitwise_and_shifts) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  B[i] = (v & 5) | (i << 60) ~ (v >> 1) ~ ~v\n"
                   "  N[1 + i % 3][1][1] = 1 << 63\n"
                   "  N[1 + i % 3][1][2] = 1 << 64\n"
                   "  N[1 + i % 3][2][1] = -1 >> 1\n"
                   "  N[1 + i % 3][2][2] = v << -1\n"
                   "  N[1 + i % 3][3][1] = v >> -70\n"
                   "  N[1 + i % 3][3][2] = (i + 0.0) | 0 + 2.0 & 3\n"
                   "  N[1 + i % 3][4][1] = v >> math.mininteger\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  local y = i + 0.5\n  B[i] = y & 1\nend",
            "snippet:7: number (local 'y') has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = 3 | (v + 0.5)\nend",
            "number has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = ~(i / 3)\nend",
            "number has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = v ~ KF\nend",
            "number (upvalue 'KF') has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = v ~ GK\nend",
            "number (global 'GK') has no integer representation");
  check_ok(IT_VEC, "function(i, v)\n  B[i] = (v ~ GN) + GK // 1\nend");
  check_err(IT_VEC,
            "function(i, v)\n  local m = math\n"
            "  B[i] = 1 | m.pi\nend",
            "number (field 'pi') has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = A[i] >> 1\nend",
            "number (field '?') has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = G[3] >> 1\nend",
            "number (field 'integer index') has no integer representation");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.huge & 1\nend",
            "number (field 'huge') has no integer representation");
}

/* ------------------------------------------------------------------------
 * Floats.
 * ---------------------------------------------------------------------- */

Test(cgen, nan_comparisons) {
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  local n = 0\n"
                    "  if x < 1 then n = n + 1 end\n"
                    "  if x <= 1 then n = n + 2 end\n"
                    "  if x > 1 then n = n + 4 end\n"
                    "  if x >= 1 then n = n + 8 end\n"
                    "  if x == x then n = n + 16 end\n"
                    "  if x ~= x then n = n + 32 end\n"
                    "  if not (x < 1) then n = n + 64 end\n"
                    "  if x == 0 then n = n + 128 end\n"
                    "  if x < math.huge then n = n + 256 end\n"
                    "  if x > -math.huge then n = n + 512 end\n"
                    "  B[i] = n\n"
                    "end");
}

Test(cgen, infinities) {
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  A[i] = x * 0\n"
                    "  M[1 + i % 4][1] = x - x\n"
                    "  M[1 + i % 4][2] = x + math.huge\n"
                    "  M[1 + i % 4][3] = x * -math.huge\n"
                    "  M[1 + i % 4][4] = 1 / x\n"
                    "  M[1 + i % 4][5] = x ^ 0.5\n"
                    "  G[i] = -x\n"
                    "end");
}

Test(cgen, float_to_integer_conversions) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  B[i] = (v * 2.0) // 1\n"
                   "  A[i] = (v + 0.5) // 1\n"
                   "  I[i] = v * 1.0\n"
                   "  F[i * 1.0] = i\n"
                   "  IF[i] = math.tointeger(v + 0.0) or -1\n"
                   "  B[13 - i] = math.tointeger(v + 0.5) or -2\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  A[i + 0.5] = 1\nend",
            "array 'A': subscript 1.5 is not an integer");
  check_err(IT_VEC, "function(i, v)\n  local x = M[1][i / 4]\nend",
            "array 'M': subscript 0.25 is not an integer");
  check_err(IT_VEC, "function(i, v)\n  B[i] = v + 0.5\nend",
            "cannot store -8.5 in i64 array 'B': not an integer");
  check_err(IT_VEC, "function(i, v)\n  A[2^63] = 1\nend",
            "array 'A': subscript 9.2233720368548e+18 is not an integer");
  check_err(IT_SPEC, "function(i, x)\n  B[i] = x\nend",
            "cannot store 1.5 in i64 array 'B': not an integer");
}

Test(cgen, mixed_comparisons_at_boundaries) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local n = 0\n"
                   "  local a = (1 << 53) + i - 6\n"
                   "  local f = 2.0^53\n"
                   "  if a < f then n = n | 1 end\n"
                   "  if a <= f then n = n | 2 end\n"
                   "  if a == f then n = n | 4 end\n"
                   "  if f < a then n = n | 8 end\n"
                   "  if f <= a + 0.0 then n = n | 16 end\n"
                   "  local m = math.maxinteger - i + 6\n"
                   "  if m < 2^63 then n = n | 32 end\n"
                   "  if m == 2^63 then n = n | 64 end\n"
                   "  if m + 0.0 == 2^63 then n = n | 128 end\n"
                   "  if math.mininteger + i - 6 <= -2^63 then n = n | 256 "
                   "end\n"
                   "  if -2^63 == math.mininteger then n = n | 512 end\n"
                   "  if (1 << 53) + 1 == 2^53 + 1 then n = n | 1024 end\n"
                   "  if m > 9.2233720368547748e18 then n = n | 2048 end\n"
                   "  if m >= 2^63 - 1024 then n = n | 4096 end\n"
                   "  if -m < -2^63 + 1024 then n = n | 8192 end\n"
                   "  if 0.5 < i and i < 12.5 then n = n | 16384 end\n"
                   "  B[i] = n\n"
                   "end");
}

/* ------------------------------------------------------------------------
 * math.*.
 * ---------------------------------------------------------------------- */

/* `x + BIG < 0` holds for a positive integer x only (a float does not
 * wrap): a way to see a value's subtype. */
Test(cgen, math_floor_ceil_subtypes) {
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  local f, c = math.floor(x), math.ceil(x)\n"
                    "  A[i] = f\n"
                    "  G[i] = c\n"
                    "  if f == f and f > 0 and f + BIG < 0 then B[i] = 1 else "
                    "B[i] = 0 end\n"
                    "  if c == c and c > 0 and c + BIG < 0 then I[i] = 1 else "
                    "I[i] = 0 end\n"
                    "  MX:add(math.floor(i + 0.5))\n"
                    "end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  S:add(math.floor(1e300))\n"
                   "  MN:add(math.ceil(-2^63))\n"
                   "  MX:add(math.floor(v / 4))\n"
                   "end");
}

Test(cgen, math_min_max_subtypes) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local m = math.max(i, 6.0)\n"
                   "  local n = math.min(6.0, i, 7)\n"
                   "  if m + BIG < 0 then B[i] = 1 else B[i] = 0 end\n"
                   "  if n + BIG < 0 then I[i] = 1 else I[i] = 0 end\n"
                   "  A[i] = math.max(v, -v, 2.5) + math.min(v + 0.5, v)\n"
                   "  MX:add(math.max(i, 6.0))\n"
                   "  MN:add(math.min(i))\n"
                   "end");
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  A[i] = math.max(x, 0)\n"
                    "  G[i] = math.min(0, x)\n"
                    "  MX:add(x)\n"
                    "  MN:add(x)\n"
                    "end");
}

Test(cgen, math_functions) {
  check_ok(IT_MAT, "function(i, j, v)\n"
                   "  local x = math.abs(v) + 0.25\n"
                   "  M[i][j] = math.sqrt(x) + math.exp(v) + math.log(x)\n"
                   "  M[i + 1][j] = math.log(x, 2) + math.log(x, 10) + "
                   "math.log(x, 3) + math.log(8, 2)\n"
                   "  M[i][j + 1] = math.sin(v) + math.cos(v) + math.tan(v)\n"
                   "  M[i + 1][j + 1] = math.asin(v / 4) + math.acos(v / 4) + "
                   "math.atan(v) + math.atan(v, -1)\n"
                   "  A[i * 4 + j - 4] = math.deg(v) + math.rad(v) + math.pi "
                   "+ math.exp(1) + 2^0.5 + v ^ 3\n"
                   "  local ip, fp = math.modf(v * 3)\n"
                   "  B[i * 4 + j - 4] = ip\n"
                   "  F[i * 4 + j - 4] = fp\n"
                   "  local a, b = math.modf(i)\n"
                   "  I[i * 4 + j - 4] = a + b\n"
                   "  if math.ult(i, -1) then S:add(1) end\n"
                   "end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  B[i] = math.fmod(v, 4) + math.fmod(v, -3) + "
                   "math.fmod(math.mininteger, -1)\n"
                   "  A[i] = math.fmod(v + 0.5, 4) + math.fmod(v, 2.5) + "
                   "math.fmod(v, 0.0)\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.fmod(v, i - 6)\nend",
            "snippet:6: bad argument #2 to 'fmod' (zero)");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.ult(v, i + 0.5)\nend",
            "bad argument #2 to 'ult' (number has no integer representation)");
}

Test(cgen, math_random) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  A[i] = math.random()\n"
                   "  B[i] = math.random(10)\n"
                   "  I[i] = math.random(-5, 5)\n"
                   "  N[1 + i % 3][1][1] = math.random(0)\n"
                   "  N[1 + i % 3][1][2] = math.random(math.mininteger, "
                   "math.maxinteger)\n"
                   "  N[1 + i % 3][2][1] = math.random(3.0, 7)\n"
                   "  N[1 + i % 3][2][2] = math.random(1000000007)\n"
                   "  math.random()\n"
                   "  for k = 1, i do S:add(math.random(k)) end\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.random(3, 1)\nend",
            "snippet:6: bad argument #1 to 'random' (interval is empty)");
  check_err(IT_VEC, "function(i, v)\n  return math.random(v)\nend",
            "bad argument #1 to 'random' (interval is empty)");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.random(1, 2.5)\nend",
            "bad argument #2 to 'random' (number has no integer "
            "representation)");
  check_err(IT_VEC, "function(i, v)\n  B[i] = math.random(1, 2, 3)\nend",
            "snippet:6: wrong number of arguments");
}

/* ------------------------------------------------------------------------
 * Control flow.
 * ---------------------------------------------------------------------- */

Test(cgen, numeric_for_loops) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local n, s = 0, 0.0\n"
                   "  for x = 0, 1, 0.1 do n = n + 1; s = s + x end\n"
                   "  for k = 10, 1, -3 do n = n + k end\n"
                   "  for k = math.maxinteger - 2, math.maxinteger do n = n + 1"
                   " end\n"
                   "  for k = math.mininteger + 2, math.mininteger, -1 do n = n"
                   " + 1 end\n"
                   "  for k = math.mininteger, math.mininteger + 2 do n = n + 1"
                   " end\n"
                   "  for k = 1, 3.7 do n = n + k end\n"
                   "  for k = 3, 1.2, -1 do n = n + k end\n"
                   "  for k = 1, math.huge do n = n + 1; if k >= i then break "
                   "end end\n"
                   "  for k = 1, -math.huge do n = n + 1000 end\n"
                   "  for k = 1, 0 do n = n + 1000 end\n"
                   "  for k = i, v, -2 do n = n + k end\n"
                   "  for k = 1, 2^70 do n = n + 1; if n > 1000 then break end "
                   "end\n"
                   "  for x = 1, 0, -0.25 do s = s + x end\n"
                   "  for x = 0.5, i do s = s + x end\n"
                   "  for k = math.maxinteger - 1, 2^63 do n = n + 1 end\n"
                   "  for k = 1, 3 do k = k * 2; n = n + k end\n"
                   "  for k = 0, 0/0 do n = n + 1 end\n"
                   "  B[i] = n\n"
                   "  A[i] = s\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  for k = 1, 2, Z do end\nend",
            "snippet:6: 'for' step is zero");
  check_err(IT_VEC, "function(i, v)\n  for x = 1.0, 2, 0.0 do end\nend",
            "snippet:6: 'for' step is zero");
}

Test(cgen, while_repeat_goto_break) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local n, k = 0, 0\n"
                   "  while k < i do\n"
                   "    k = k + 1\n"
                   "    if k % 3 == 0 then goto continue end\n"
                   "    n = n + k\n"
                   "    ::continue::\n"
                   "  end\n"
                   "  repeat\n"
                   "    local j = k\n"
                   "    k = k - 2\n"
                   "    if j == 5 then break end\n"
                   "  until j <= 0\n"
                   "  for j = 1, 10 do\n"
                   "    if j > i then break end\n"
                   "    if j % 2 == 0 then goto next end\n"
                   "    n = n * 2\n"
                   "    ::next::\n"
                   "  end\n"
                   "  local t = 0\n"
                   "  ::again::\n"
                   "  t = t + 1\n"
                   "  if t < 4 then goto again end\n"
                   "  do\n"
                   "    local q = n + t\n"
                   "    n = q\n"
                   "  end\n"
                   "  B[i] = n * 100 + k\n"
                   "end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local s = 0\n"
                   "  for a = 1, 3 do\n"
                   "    for b = 1, 3 do\n"
                   "      if b == a then goto skip end\n"
                   "      s = s + a * b\n"
                   "      if s > 20 then goto done end\n"
                   "      ::skip::\n"
                   "    end\n"
                   "  end\n"
                   "  ::done::\n"
                   "  B[i] = s\n"
                   "end");
}

Test(cgen, logic_and_or) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local x = v > 0 and v or -v\n"
                   "  local y = (i > 6) and 1.5 or nil\n"
                   "  local z = y or i\n"
                   "  local w = i > 3 and i < 9 and i\n"
                   "  B[i] = x + (v > 0 and 1 or 0) + (w or 100)\n"
                   "  A[i] = z + (y and y * 2 or 0)\n"
                   "  if not w then I[i] = 7 end\n"
                   "  if w == false then I[i] = I[i] + 1 end\n"
                   "  if y == nil then F[i] = 1 end\n"
                   "  local t = (v == 0) or (i == 3)\n"
                   "  if t then S:add(i) end\n"
                   "  local q = nil\n"
                   "  if i > 4 then q = i end\n"
                   "  IF[i] = q or 0\n"
                   "end");
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  A[i] = (x ~= x) and 0 or x\n"
                    "end");
}

Test(cgen, dynamic_subtypes) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local x = 1\n"
                   "  if v > 0 then x = 2.5 end\n"
                   "  local y = x * 2\n"
                   "  local z = x // 1 + x % 2\n"
                   "  A[i] = y + z\n"
                   "  if y + BIG < 0 then B[i] = 1 else B[i] = 0 end\n"
                   "  local m = i\n"
                   "  for k = 1, 3 do m = m / 2 end\n"
                   "  S:add(x)\n"
                   "  MX:add(z)\n"
                   "  local c = i\n"
                   "  while c < 40 do c = c * 1.5 end\n"
                   "  G[i] = c + m\n"
                   "  local s = math.floor(v / 2)\n"
                   "  I[i] = s\n"
                   "  N[1 + i % 3][1 + s % 4][1] = -s\n"
                   "end");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = 1\n"
            "  if i > 4 then x = 2.5 end\n"
            "  if i > 8 then x = 0 end\n"
            "  return v // (x * 0)\n"
            "end",
            "attempt to divide by zero");
}

Test(cgen, multiple_assignment_order) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  A[i], A[i] = 1, 2\n"
                   "  local a, b = i, v\n"
                   "  a, b = b, a\n"
                   "  B[i] = a * 100 + b\n"
                   "  local k = i\n"
                   "  k, I[k] = k + 1, 5\n"
                   "  I[k % 12 + 1], k = 6, 0\n"
                   "  local p, q, r = math.modf(v + 0.5)\n"
                   "  F[i] = p + q + (r or 0)\n"
                   "end");
  /* Stores run right to left: the failing store to I comes first. */
  check_err(IT_VEC, "function(i, v)\n  B[i], I[i] = v * 2, 3000000000\nend",
            "cannot store 3000000000 in i32 array 'I': out of range");
}

/* ------------------------------------------------------------------------
 * Accumulators.
 * ---------------------------------------------------------------------- */

Test(cgen, accumulators) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  S:add(i)\n"
                   "  if i > 6 then S:add(0.5) end\n"
                   "  MN:add(v)\n"
                   "  if i == 9 then MN:add(v + 0.25) end\n"
                   "  MX:add(BIG)\n"
                   "  MX:add(i)\n"
                   "end");
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  S:add(x)\n"
                    "  MN:add(x)\n"
                    "  MX:add(x)\n"
                    "end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  S:add(BIG)\n"
                   "  S:add(v)\n"
                   "  local acc = MX\n"
                   "  acc:add(v * 2)\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  S:add(i > 3)\nend",
            "accumulator add: expected a number, got a boolean");
  check_err(IT_VEC, "function(i, v)\n  S:add()\nend",
            "accumulator add: expected a number, got a no value");
}

/* ------------------------------------------------------------------------
 * Returned values.
 * ---------------------------------------------------------------------- */

Test(cgen, returned_values) {
  check_ok(IT_I32, "function(i, v) return v * 1000 + i end");
  check_ok(IT_F32, "function(i, v) return v / 3 end");
  check_ok(IT_F32, "function(i, v) return i * 16777217 end");
  check_ok(IT_VEC, "function(i, v) return v * 2.0 end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  if i % 3 == 0 then return end\n"
                   "  if i % 3 == 1 then return nil end\n"
                   "  return i > 6 and v or nil\n"
                   "end");
  check_ok(IT_MAT, "function(i, j, v) return v * i, j end");
  check_err(IT_I32, "function(i, v) return v * 1000000000 end",
            "cannot store -9000000000 in i32 array 'the iterated array "
            "(returned value)': out of range");
  check_err(IT_VEC, "function(i, v) return v + 0.5 end",
            "cannot store -8.5 in i64 array 'the iterated array (returned "
            "value)': not an integer");
  check_err(IT_VEC, "function(i, v) return i > 3 end",
            "cannot store a boolean in i64 array 'the iterated array "
            "(returned value)'");
  check_err(IT_MAT, "function(i, j, v) return i > 2 or nil end",
            "cannot store a boolean in f64 array");
}

/* ------------------------------------------------------------------------
 * Arrays: bounds, stores, slices, n-D.
 * ---------------------------------------------------------------------- */

Test(cgen, bounds_errors) {
  check_err(IT_VEC, "function(i, v)\n  A[i + 1] = 1\nend",
            "snippet:6: array 'A': index 13 out of range 1..12 in dimension 1");
  check_err(IT_VEC, "function(i, v)\n  local x = A[i - 1]\nend",
            "array 'A': index 0 out of range 1..12 in dimension 1");
  check_err(IT_VEC, "function(i, v)\n  M[i][1] = v\nend",
            "array 'M': index 5 out of range 1..4 in dimension 1");
  check_err(IT_VEC, "function(i, v)\n  local x = M[1][i]\nend",
            "array 'M': index 6 out of range 1..5 in dimension 2");
  check_err(IT_VEC, "function(i, v)\n  N[1][2][i] = 1\nend",
            "array 'N': index 3 out of range 1..2 in dimension 3");
  check_err(IT_VEC, "function(i, v)\n  local r = W[i]\n  r[1] = 0\nend",
            "array 'W': index 7 out of range 1..6 in dimension 1");
  check_err(IT_VEC, "function(i, v)\n  BA[i + 1] = 1\nend",
            "buffer 'BA': index 13 out of range 1..12 in dimension 1");
  /* A buffer's add (on the device, an atomic add) fails first where the
   * interpreter does: x before B[k] in `x + B[k]`, B[k] first else. */
  check_err(IT_VEC, "function(i, v)\n  TB[i + 4] = A[i + 12] + TB[i + 4]\nend",
            "array 'A': index 13 out of range 1..12 in dimension 1");
  check_err(IT_VEC, "function(i, v)\n  TB[i + 4] = TB[i + 4] + A[i + 12]\nend",
            "buffer 'TB': index 5 out of range 1..4 in dimension 1");
}

Test(cgen, store_errors) {
  check_err(IT_VEC, "function(i, v)\n  I[i] = 3000000000\nend",
            "cannot store 3000000000 in i32 array 'I': out of range");
  check_err(IT_VEC, "function(i, v)\n  B[i] = 2.5\nend",
            "cannot store 2.5 in i64 array 'B': not an integer");
  check_err(IT_VEC, "function(i, v)\n  A[i] = true\nend",
            "cannot store a boolean in f64 array 'A'");
  check_err(IT_VEC, "function(i, v)\n  A[i] = nil\nend",
            "cannot store a nil in f64 array 'A'");
  check_err(IT_VEC, "function(i, v)\n  M[1] = 5\nend",
            "array 'M' has 2 dimensions: assign to an element (M[i][j] = x),"
            " not to a slice");
  check_err(IT_VEC, "function(i, v)\n  local r = N[1]\n  r[2] = 1\nend",
            "array 'N': assign to an element, not to a slice");
  check_err(IT_VEC, "function(i, v)\n  I[i] = math.maxinteger + 0.0\nend",
            "cannot store 9.2233720368548e+18 in i32 array 'I': not an "
            "integer");
}

Test(cgen, slices_and_lengths) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local row = M[1 + i % 4]\n"
                   "  row[1 + i % 5] = v + #M + #row\n"
                   "  local plane = N[1 + i % 3]\n"
                   "  local line = plane[1 + i % 4]\n"
                   "  line[1 + i % 2] = #N + #plane + #line + #A\n"
                   "  local r = W[1]\n"
                   "  if i > 6 then r = W[2] end\n"
                   "  r[i % 8 + 1] = r[1] + 1\n"
                   "  F[i] = i + 0.1\n"
                   "  I[i] = I[i] * 2 + #BA + #BM + #BM[1]\n"
                   "end");
}

Test(cgen, stores_round_and_convert) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  F[i] = v / 3\n"
                   "  W[1 + i % 6][1] = (1 << 53) + 1\n"
                   "  W[1 + i % 6][2] = 16777217\n"
                   "  W[1 + i % 6][3] = 1e300\n"
                   "  A[i] = (1 << 62) + 1\n"
                   "  I[i] = -2147483648 + i - 1\n"
                   "  B[i] = 2^62\n"
                   "end");
}

Test(cgen, buffers) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  BA[i] = BA[i] + v\n"
                   "  BA[1] = BA[1] + 0.5\n"
                   "  BI[i] = v * 100\n"
                   "  BI[1] = BI[1] + 1\n"
                   "  local row = BM[1 + i % 4]\n"
                   "  row[1 + i % 5] = row[1 + i % 5] + i\n"
                   "  TB[1 + i % 4] = TB[1 + i % 4] - 1\n"
                   "  TB[1] = TB[1] + 2.0\n"
                   "end");
  check_err(IT_VEC, "function(i, v)\n  BI[i] = v * 1e10\nend",
            "cannot store -90000000000 in i32 buffer 'BI': out of range");
  check_err(IT_VEC, "function(i, v)\n  BI[i] = v + 0.5\nend",
            "cannot store -8.5 in i32 buffer 'BI': not an integer");
  check_err(IT_VEC, "function(i, v)\n  BA[i] = i > 2\nend",
            "cannot store a boolean in f64 buffer 'BA'");
}

Test(cgen, constants_and_params) {
  check_ok(IT_MAT, "function(i, j, v, extra)\n"
                   "  local N2 <const> = 10\n"
                   "  local half <const> = N2 / 4\n"
                   "  M[i][j] = v * N2 + half + TWO + KF + ONE + (extra or 7)\n"
                   "  if extra == nil then M[i + 1][j] = 1 end\n"
                   "  A[i * 4 + j - 4] = v == 0 and 1 or 2\n"
                   "end");
  check_ok(IT_MAT, "function(i) A[i] = i end");
  check_ok(IT_MAT, "function() S:add(1) end");
  check_ok(IT_M64, "function(i, j, v)\n"
                   "  i = i + 0.5\n"
                   "  j = j * 2\n"
                   "  v = v // 2\n"
                   "  M[1 + j % 4][1 + v % 5] = i\n"
                   "end");
}

Test(cgen, unary_minus_and_zeros) {
  check_ok(IT_SPEC, "function(i, x)\n"
                    "  A[i] = -(-0.0) + x * -0.0\n"
                    "  G[i] = -x\n"
                    "  M[1 + i % 4][1] = 0.0 * -1\n"
                    "  M[1 + i % 4][2] = -0.0 + 0\n"
                    "  M[1 + i % 4][3] = (-0.0) ^ 1\n"
                    "  M[1 + i % 4][4] = -math.mininteger + 0.0\n"
                    "end");
}

Test(cgen, runs_in_blocks_and_sub_ranges) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.calls = 4;
  o.lo = 2;
  o.hi = 11;
  o.expect = "";
  check_with(IT_VEC,
             "function(i, v)\n"
             "  S:add(v)\n"
             "  MX:add(math.random(100))\n"
             "  B[i] = math.random(1000)\n"
             "end",
             o);
  o.calls = 3;
  o.lo = 0;
  o.hi = 0;
  o.expect = NULL;
  check_with(IT_TOK, LDA_GIBBS, o);
  o.calls = 4;
  o.lo = 5;
  o.hi = 23;
  o.expect = "";
  check_with(IT_D3,
             "function(i, j, k, v)\n"
             "  N[i][j][k] = N[i][j][k] + i * 100 + j * 10 + k\n"
             "  return v * 2 + k\n"
             "end",
             o);
  /* Dense keys counted from a start in the middle of a row. */
  o.calls = 5;
  o.lo = 3;
  o.hi = 27;
  o.expect = "";
  check_with(IT_M64,
             "function(i, j, v)\n"
             "  DT[i][1 + j % 4] = DT[i][1 + j % 4] * 10 + j\n"
             "  S:add(i * 100 + j)\n"
             "  return v + i * j\n"
             "end",
             o);
}

/* ------------------------------------------------------------------------
 * Outside the subset: orion_cgen says what and where.
 * ---------------------------------------------------------------------- */

Test(cgen, refused_constructs) {
  check_why(IT_VEC, "function(i, v)\n  local s = \"x\"\nend",
            "6: a string value");
  check_why(IT_VEC, "function(i, v)\n  B[i] = helper(v)\nend",
            "6: a call to 'helper'");
  check_why(IT_VEC, "function(i, v)\n\n  print(v)\nend",
            "7: a call to 'print'");
  check_why(IT_VEC, "function(i, v)\n  local t = {1, 2}\nend",
            "6: a table constructor");
  check_why(IT_VEC, "function(i, v)\n  for k, x in pairs(tbl) do end\nend",
            "6: a generic 'for' loop");
  check_why(IT_VEC, "function(i, v)\n  local n = W:dims()\nend",
            "6: a method call 'W:dims'");
  check_why(IT_VEC, "function(i, v)\n  B[i] = S:get()\nend",
            "6: a method call 'S:get'");
  check_why(IT_VEC, "function(i, v)\n  local f = function() end\nend",
            "6: a function definition");
  check_why(IT_VEC, "function(i, v)\n  local function f() end\nend",
            "6: a function definition");
  check_why(IT_VEC, "function(i, v)\n  B[i] = #(v .. v)\nend",
            "6: string concatenation '..'");
  check_why(IT_VEC, "function(i, v)\n  if flag then B[i] = 1 end\nend",
            "6: the value 'flag' (a string, boolean or table captured by the "
            "body)");
  check_why(IT_VEC, "function(i, v)\n  K = 3\nend",
            "6: an assignment to 'K', which is not a local of the body");
  check_why(IT_VEC, "function(i, v)\n  local x = W[1]\n  x = 3\nend",
            "7: the local 'x' holds a slice of the array 'W' and an integer");
  check_why(IT_VEC, "function(i, v)\n  local x\n  B[i] = x + 1\nend",
            "7: arithmetic on nil (local 'x')");
  check_why(IT_VEC,
            "function(i, v)\n  local x = i > 2 and 1\n  B[i] = x * "
            "2\nend",
            "7: arithmetic on a value that may be a boolean (local 'x')");
  check_why(IT_VEC, "function(i, v)\n  math.randomseed(1)\nend",
            "6: a call to 'math.randomseed'");
  check_why(IT_VEC, "function(i, v)\n  B[i] = #v\nend",
            "6: the length of an integer");
  check_why(IT_VEC, "function(i, v)\n  local x <close> = nil\nend",
            "6: the to-be-closed variable 'x'");
  check_why(IT_RAT, "function(u, i, r)\n  local x = IT[u]\nend",
            "6: the sparse array 'IT' (only dense arrays can be indexed in a "
            "body)");
  check_why(IT_VEC, "function(...)\n  local a = ...\nend",
            "6: a vararg expression '...'");
  check_why(IT_VEC, "function(i, v)\n  local s = string.rep(\"a\", 3)\nend",
            "6: a call to 'string.rep'");
  check_why(IT_VEC, "function(i, v)\n  B[i] = math.type(v)\nend",
            "6: a call to 'math.type'");
  check_why(IT_VEC, "function(i, v)\n  B[i] = undefined_name\nend",
            "6: the unbound name 'undefined_name'");
  check_why(IT_VEC, "function(i, v)\n  local f = math.floor\nend",
            "6: the value 'math.floor'");
  check_why(IT_VEC, "function(i, v)\n  B[i] = W[1] + 1\nend",
            "6: arithmetic on a slice of the array 'W'");
  check_why(IT_VEC, "function(i, v)\n  return W[1]\nend",
            "6: returning a slice of the array 'W'");
  check_why(IT_VEC, "function(i, v)\n  if W[1] == W[2] then end\nend",
            "6: a comparison of a slice of the array 'W'");
}

/* ------------------------------------------------------------------------
 * The interface: slots, the ABI, the mode flags.
 * ---------------------------------------------------------------------- */

Test(cgen, slots_in_first_use_order) {
  char *chunk = chunk_text("function(u, i, r)\n"
                           "  local x = H[i][1] + LR + K\n"
                           "  S:add(x)\n"
                           "  BA[1] = W[u][1] + REG + LR\n"
                           "  MX:add(H[i][2] + W[u][2])\n"
                           "end");
  orion_cgen_out out;
  orion_error err;
  static const struct {
    orion_cslot_kind kind;
    const char *name;
    int64_t id;
  } want[] = {{ORION_CSLOT_ARRAY, "H", 9},    {ORION_CSLOT_CONST, "LR", 0},
              {ORION_CSLOT_CONST, "K", 0},    {ORION_CSLOT_ACC, "S", 30},
              {ORION_CSLOT_BUFFER, "BA", 40}, {ORION_CSLOT_ARRAY, "W", 8},
              {ORION_CSLOT_CONST, "REG", 0},  {ORION_CSLOT_ACC, "MX", 32}};
  int i;
  cr_assert_eq(generate(chunk, IT_RAT, 0, &out, &err), 0, "%s", err.msg);
  cr_assert_eq(out.nslots, 8);
  for (i = 0; i < 8; i++) {
    cr_assert_eq(out.slots[i].kind, want[i].kind, "slot %d", i);
    cr_assert_str_eq(out.slots[i].name, want[i].name);
    cr_assert_eq(out.slots[i].id, want[i].id, "slot %d", i);
  }
  cr_assert_eq(out.slots[2].isint, 1);
  cr_assert_eq(out.slots[2].ival, 8);
  cr_assert_eq(out.slots[1].isint, 0);
  cr_assert_eq(out.slots[1].fval, 0.01);
  /* The source reads values from ctx, and names them no where else. */
  cr_assert_not_null(strstr(out.src.data, "c->consts[0].d"));
  cr_assert_not_null(strstr(out.src.data, "const int orion_cbody_abi = 5;"));
  cr_assert_null(strstr(out.src.data, "#include \""));
  cr_assert_eq(strlen(out.src.data), out.src.len);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

/* The constant values are not part of the source (one compiled object
 * serves every value); their subtypes are. */
Test(cgen, source_independent_of_constant_values) {
  char *chunk = chunk_text(MF_SGD);
  orion_cgen_out a, b, c;
  orion_error err;
  int i, lr = -1, k = -1;
  cr_assert_eq(generate(chunk, IT_RAT, 0, &a, &err), 0, "%s", err.msg);
  cr_assert_eq(generate_with(chunk, IT_RAT, 0, 7, NULL, &b, &err), 0, "%s",
               err.msg);
  for (i = 0; i < a.nslots; i++) {
    if (strcmp(a.slots[i].name, "LR") == 0)
      lr = i;
    if (strcmp(a.slots[i].name, "K") == 0)
      k = i;
  }
  cr_assert(lr >= 0 && k >= 0 && b.nslots == a.nslots);
  /* Other values went in (the slots say so), the same source came out. */
  cr_assert_eq(a.slots[lr].fval, 0.01);
  cr_assert_eq(b.slots[lr].fval, 0.01 + 7);
  cr_assert_eq(a.slots[k].ival, 8);
  cr_assert_eq(b.slots[k].ival, 15);
  cr_assert_str_eq(a.src.data, b.src.data);
  cr_assert_null(strstr(a.src.data, "0x1.47ae147ae147bp-7")); /* LR */
  cr_assert_null(strstr(a.src.data, "INT64_C(8)"));            /* K */
  /* K as a float (8.0) changes the loops' code. */
  cr_assert_eq(generate_with(chunk, IT_RAT, 0, 0, "K", &c, &err), 0, "%s",
               err.msg);
  cr_assert_eq(c.slots[k].isint, 0);
  cr_assert_eq(c.slots[k].fval, 8.0);
  cr_assert_str_neq(a.src.data, c.src.data);
  orion_cgen_out_free(&a);
  orion_cgen_out_free(&b);
  orion_cgen_out_free(&c);
  orion_free(chunk);
}

/* The prelude's structures have util/cbody.h's layout. */
Test(cgen, abi_layout_matches_cbody_h) {
  char *chunk = chunk_text("function(i, v) B[i] = v end");
  orion_cgen_out out;
  orion_error err;
  orion_buf src;
  built b;
  const int64_t *lay;
  static const char tail[] =
      "\n#include <stddef.h>\n"
      "extern const int64_t o_layout[];\n"
      "const int64_t o_layout[] = {\n"
      "  sizeof(orion_cctx), offsetof(orion_cctx, iter),\n"
      "  offsetof(orion_cctx, arrays), offsetof(orion_cctx, bufs),\n"
      "  offsetof(orion_cctx, accs), offsetof(orion_cctx, consts),\n"
      "  offsetof(orion_cctx, rng), offsetof(orion_cctx, buf_get),\n"
      "  offsetof(orion_cctx, buf_set), offsetof(orion_cctx, elem_done),\n"
      "  offsetof(orion_cctx, ud), offsetof(orion_cctx, cur),\n"
      "  offsetof(orion_cctx, err), sizeof(orion_carray),\n"
      "  offsetof(orion_carray, keys), offsetof(orion_carray, type),\n"
      "  offsetof(orion_carray, ndims), offsetof(orion_carray, nnz),\n"
      "  offsetof(orion_carray, dims), offsetof(orion_carray, strides),\n"
      "  sizeof(orion_cbuffer), offsetof(orion_cbuffer, type),\n"
      "  offsetof(orion_cbuffer, op), offsetof(orion_cbuffer, dims),\n"
      "  offsetof(orion_cbuffer, strides), sizeof(orion_cacc),\n"
      "  offsetof(orion_cacc, has), offsetof(orion_cacc, isint),\n"
      "  offsetof(orion_cacc, i), offsetof(orion_cacc, d),\n"
      "  sizeof(orion_cval)};\n";
  const int64_t host[] = {sizeof(orion_cctx),
                          offsetof(orion_cctx, iter),
                          offsetof(orion_cctx, arrays),
                          offsetof(orion_cctx, bufs),
                          offsetof(orion_cctx, accs),
                          offsetof(orion_cctx, consts),
                          offsetof(orion_cctx, rng),
                          offsetof(orion_cctx, buf_get),
                          offsetof(orion_cctx, buf_set),
                          offsetof(orion_cctx, elem_done),
                          offsetof(orion_cctx, ud),
                          offsetof(orion_cctx, cur),
                          offsetof(orion_cctx, err),
                          sizeof(orion_carray),
                          offsetof(orion_carray, keys),
                          offsetof(orion_carray, type),
                          offsetof(orion_carray, ndims),
                          offsetof(orion_carray, nnz),
                          offsetof(orion_carray, dims),
                          offsetof(orion_carray, strides),
                          sizeof(orion_cbuffer),
                          offsetof(orion_cbuffer, type),
                          offsetof(orion_cbuffer, op),
                          offsetof(orion_cbuffer, dims),
                          offsetof(orion_cbuffer, strides),
                          sizeof(orion_cacc),
                          offsetof(orion_cacc, has),
                          offsetof(orion_cacc, isint),
                          offsetof(orion_cacc, i),
                          offsetof(orion_cacc, d),
                          sizeof(orion_cval)};
  size_t i;
  cr_assert_eq(generate(chunk, IT_VEC, 0, &out, &err), 0);
  orion_buf_init(&src);
  orion_buf_append(&src, out.src.data, out.src.len);
  orion_buf_append(&src, tail, sizeof tail); /* with the NUL */
  build(src.data, 0, &b);
  lay = orion_cobj_sym(b.obj, "o_layout");
  cr_assert_not_null(lay);
  for (i = 0; i < sizeof host / sizeof host[0]; i++)
    cr_assert_eq(lay[i], host[i], "layout entry %zu: %lld vs %lld", i,
                 (long long)lay[i], (long long)host[i]);
  unbuild(&b);
  orion_buf_free(&src);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

/* The prelude is made by the build from the real headers: every code
 * line of the marked part of util/cbody.h and util/luaops.h is in the
 * generated source, once, and nothing after the mark (the parts only the
 * project uses) or any comment is. */
static void expect_header_part(const char *src, const char *rel) {
  char *path = tu_src(rel), line[512];
  FILE *f = fopen(path, "r");
  int part = 0, lines = 0;
  cr_assert_not_null(f, "%s", path);
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = 0;
    if (strcmp(line, "/* ORION_PRELUDE_BEGIN */") == 0) {
      part = 1;
    } else if (strcmp(line, "/* ORION_PRELUDE_END */") == 0) {
      part = 2;
    } else if (strncmp(line, "ORION_LUAOP ", 12) == 0 ||
               strncmp(line, "ORION_LUARAND ", 14) == 0 ||
               strncmp(line, "typedef ", 8) == 0 ||
               strncmp(line, "struct ", 7) == 0) {
      /* A definition's first line, with its own comment cut off. */
      char *c = strstr(line, " /*");
      if (c != NULL)
        *c = 0;
      if (part == 1) {
        cr_assert_eq(tu_count_substr(src, line), 1, "%s: '%s'", rel, line);
        lines++;
      } else if (part == 2) {
        cr_assert_eq(tu_count_substr(src, line), 0, "%s: '%s'", rel, line);
      }
    }
  }
  fclose(f);
  cr_assert_eq(part, 2, "%s: no ORION_PRELUDE_BEGIN ... END part", rel);
  cr_assert_geq(lines, 4, "%s", rel);
  free(path);
}

Test(cgen, prelude_is_made_from_the_headers) {
  char *chunk = chunk_text("function(i, v) B[i] = v // 3 end");
  orion_cgen_out out;
  orion_error err;
  cr_assert_eq(generate(chunk, IT_VEC, 0, &out, &err), 0, "%s", err.msg);
  expect_header_part(out.src.data, "util/cbody.h");
  expect_header_part(out.src.data, "util/luaops.h");
  expect_header_part(out.src.data, "util/luarand.h");
  /* And, for nvcc, util/gbody.h's and analysis/cgen_prelude_gpu.h's. */
  cr_assert_eq(tu_count_substr(out.src.data, "typedef struct orion_gctx {"),
               1);
  cr_assert_eq(tu_count_substr(out.src.data, "typedef struct o_dctx {"), 1);
  /* The generated code calls the one copy of Lua's `//`. */
  cr_assert_not_null(strstr(out.src.data, "orion_lua_idiv_nz(v"));
  /* Only the first line (which names the body) is a comment. */
  cr_assert_eq(tu_count_substr(out.src.data, "/*"), 1);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

Test(cgen, mode_flags) {
  const char *exact = orion_cgen_mode_flags(0),
             *fast = orion_cgen_mode_flags(1);
  cr_assert_not_null(strstr(exact, "-ffp-contract=off"));
  cr_assert_null(strstr(exact, "-ffast-math "));
  cr_assert_not_null(strstr(fast, "-fassociative-math"));
  cr_assert_null(strstr(fast, "-ffinite-math-only"));
  cr_assert_null(strstr(fast, "-ffast-math"));
}

/* A shape other than the one compiled for is refused at run time. */
Test(cgen, wrong_shapes_are_refused) {
  char *chunk = chunk_text("function(u, i, r) W[u][i] = r end");
  orion_cgen_out out;
  orion_error err;
  built b;
  state s;
  orion_cctx ctx;
  orion_carray arr;
  int64_t d[2] = {6, 4};
  orion_array *w2 = orion_array_new_dense(2, d, ORION_F64, NULL);
  cr_assert_eq(generate(chunk, IT_RAT, 0, &out, &err), 0);
  build(out.src.data, 0, &b);
  state_init(&s, IT_RAT);
  memset(&ctx, 0, sizeof ctx);
  carray_of(s.arr[NARRS], &ctx.iter);
  carray_of(w2, &arr);
  ctx.arrays = &arr;
  cr_assert_eq(b.fn(&ctx, 0, 3), 1);
  cr_assert_not_null(strstr(ctx.err, "compiled body: array 'W' is not the"),
                     "%s", ctx.err);
  carray_of(s.arr[array_index("W")], &arr);
  carray_of(s.arr[array_index("A")], &ctx.iter);
  cr_assert_eq(b.fn(&ctx, 0, 3), 1);
  cr_assert_not_null(strstr(ctx.err, "the iterated array is not"), "%s",
                     ctx.err);
  orion_array_release(w2);
  state_free(&s);
  unbuild(&b);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

Test(cgen, plain_checks) {
  check(IT_M64, "function(i, j, v) DT[i][1 + j % 4] = DT[i][1 + j % 4] + v "
                "end");
}

/* ------------------------------------------------------------------------
 * Typing: narrowing by conditions, definite assignment, loops.
 * ---------------------------------------------------------------------- */

Test(cgen, conditions_narrow_types) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local y = i > 6 and 1.5 or nil\n"
                   "  if y then A[i] = y * 2 end\n"
                   "  if y ~= nil then A[i] = A[i] + y end\n"
                   "  if y == nil then F[i] = 1 else F[i] = y end\n"
                   "  local z = y and y + 1 or 0\n"
                   "  local w = (y ~= nil) and y * 3 or -1\n"
                   "  local q = (nil == y) or y < 7\n"
                   "  G[i] = z + w\n"
                   "  if q then S:add(1) end\n"
                   "  if not y then MN:add(i) elseif y > 1 then MX:add(y) end\n"
                   "end");
}

Test(cgen, definite_assignment) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local x\n"
                   "  if v > 0 then x = 1 else x = 2.5 end\n"
                   "  A[i] = x + 1\n"
                   "  local y\n"
                   "  for k = 1, i % 3 do y = k end\n"
                   "  B[i] = (y or 0) + 1\n"
                   "  local a, b\n"
                   "  a, b = i, v\n"
                   "  I[i] = a - b\n"
                   "  local c\n"
                   "  repeat c = i until true\n"
                   "  IF[i] = c or 0\n"
                   "end");
}

Test(cgen, loops_with_dynamic_limits_and_early_exits) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local lim = i > 5 and 3.5 or 2\n"
                   "  local n = 0\n"
                   "  for k = 1, lim do n = n + k end\n"
                   "  for k = lim // 1, 1, -1 do n = n * 2 + k end\n"
                   "  local x = v > 0 and 1 or 0.5\n"
                   "  for k = x, 3 do n = n + k * 2 end\n"
                   "  for k = 3, 1, x - 2 do n = n + k end\n"
                   "  for k = x, x + 1, x do n = n + k end\n"
                   "  local c = i\n"
                   "  while true do\n"
                   "    c = c + 1\n"
                   "    if c % 5 == 0 then break end\n"
                   "  end\n"
                   "  A[i] = n + c\n"
                   "  for k = 1, 12 do\n"
                   "    if A[k] > v then return k end\n"
                   "  end\n"
                   "  return -1\n"
                   "end");
  check_ok(IT_RAT, "function(u, i, r)\n"
                   "  for k = 1, K do\n"
                   "    if W[u][k] < 0 then goto cont end\n"
                   "    local t = W[u][k] * r\n"
                   "    W[u][k] = t\n"
                   "    if t > 1 then break end\n"
                   "    ::cont::\n"
                   "  end\n"
                   "  for k = 1, K do\n"
                   "    if H[i][k] > 0.25 then return end\n"
                   "    H[i][k] = H[i][k] + r\n"
                   "  end\n"
                   "end");
  check_ok(IT_VEC, "function(i, v)\n"
                   "  if v > 3 then B[i] = 1\n"
                   "  elseif v < -3 then B[i] = 2\n"
                   "  elseif v == 0 then B[i] = 3\n"
                   "  else B[i] = 4 end\n"
                   "  IT[i] = v * 2\n"
                   "end");
}

/* ------------------------------------------------------------------------
 * Fast mode: f32 math and reassociation, within a tolerance.
 * ---------------------------------------------------------------------- */

static void check_fast(iter_kind kind, const char *body, double tol) {
  check_opts o;
  memset(&o, 0, sizeof o);
  o.fast = 1;
  o.tol = tol;
  o.expect = "";
  check_with(kind, body, o);
}

Test(cgen, fast_mode) {
  check_fast(IT_RAT, MF_EVAL, 1e-5);
  check_fast(IT_RAT, MF_SGD64, 1e-12);
  check_fast(IT_RAT,
             "function(s, f, x)\n"
             "  LM[s] = LM[s] + LW[f] * x\n"
             "  local p = 1 / (1 + math.exp(-LM[s]))\n"
             "  GB[f] = GB[f] + (p - LY[s]) * x\n"
             "end",
             1e-9);
  check_fast(IT_RAT,
             "function(u, i, r)\n"
             "  local s = 0.0\n"
             "  for k = 1, K do s = s + math.sqrt(math.abs(W[u][k])) "
             "end\n"
             "  F[u] = s / K\n"
             "  MX:add(s)\n"
             "end",
             1e-5);
  check_fast(IT_TOK, LDA_GIBBS, 1e-9);
}

/* Dot products over rows of 70 (two groups of 32 lanes and a rest): fast
 * mode runs them in vector accumulators, exact mode keeps the
 * interpreter's order and its bits. */
static const char SUM_F32[] = "function(u, i, r)\n"
                              "  local wu, hi = WL[u], HL[i]\n"
                              "  local e = r\n"
                              "  for k = 1, KL do e = e - wu[k] * hi[k] end\n"
                              "  local s = 0.0\n"
                              "  for k = 1, KL do s = hi[k] * hi[k] + s end\n"
                              "  for k = 1, KL do\n"
                              "    wu[k] = wu[k] + LR * (e * hi[k] - REG * s)\n"
                              "  end\n"
                              "  S:add(e * e)\n"
                              "end";
static const char SUM_F64[] = "function(u, i, r)\n"
                              "  local w = WL2[u]\n"
                              "  local s = r\n"
                              "  for k = 1, KL do s = s + w[k] * w[k] end\n"
                              "  w[1] = s / 3\n"
                              "  S:add(s)\n"
                              "end";

/* Fast mode: a dot product bounded by a captured integer gets a copy of
 * the run function for the value captured when the code was generated
 * (its trip count known to the compiler); another value at run time
 * takes the general copy.  Both agree with the interpreter. */
Test(cgen, dot_bound_copy_and_general_copy_agree_with_interpreter) {
  char *chunk = chunk_text(SUM_F32);
  orion_cgen_out at70, at71, exact;
  orion_error err;
  state want, got;
  built b70, b71;
  int i;
  cr_assert_eq(generate_with(chunk, IT_RAT, 1, 0, NULL, &at70, &err), 0,
               "%s", err.msg);
  cr_assert_eq(generate_with(chunk, IT_RAT, 1, 1, NULL, &at71, &err), 0,
               "%s", err.msg);
  cr_assert_eq(generate(chunk, IT_RAT, 0, &exact, &err), 0, "%s", err.msg);
  cr_assert_eq(tu_count_substr(at70.src.data, "static int o_run_k("), 1);
  cr_assert_not_null(strstr(at70.src.data, "O_U const int64_t K"));
  cr_assert_not_null(strstr(at70.src.data, " = INT64_C(70);"));
  cr_assert_not_null(strstr(at71.src.data, " = INT64_C(71);"));
  cr_assert_null(strstr(exact.src.data, "o_run_k"));
  /* The source generated at 71 runs with the values the interpreter has
   * (KL = 70): its general copy. */
  cr_assert_eq(at71.nslots, at70.nslots);
  for (i = 0; i < at71.nslots; i++) {
    at71.slots[i].ival = at70.slots[i].ival;
    at71.slots[i].fval = at70.slots[i].fval;
  }
  build(at70.src.data, 1, &b70);
  build(at71.src.data, 1, &b71);
  state_init(&want, IT_RAT);
  run_reference(chunk, &want, 0, want.arr[NARRS]->nnz, 1);
  state_init(&got, IT_RAT);
  run_compiled(&at70, &b70, &got, 0, got.arr[NARRS]->nnz, 1);
  compare_states(&want, &got, 1e-5, SUM_F32);
  state_free(&got);
  state_init(&got, IT_RAT);
  run_compiled(&at71, &b71, &got, 0, got.arr[NARRS]->nnz, 1);
  compare_states(&want, &got, 1e-5, SUM_F32);
  state_free(&got);
  state_free(&want);
  unbuild(&b70);
  unbuild(&b71);
  orion_cgen_out_free(&at70);
  orion_cgen_out_free(&at71);
  orion_cgen_out_free(&exact);
  orion_free(chunk);
}

Test(cgen, sums_split_in_fast_mode) {
  char *chunk = chunk_text(SUM_F32);
  orion_cgen_out fast, exact;
  orion_error err;
  cr_assert_eq(generate(chunk, IT_RAT, 1, &fast, &err), 0, "%s", err.msg);
  cr_assert_eq(generate(chunk, IT_RAT, 0, &exact, &err), 0, "%s", err.msg);
  /* Both dot products are split, the update loop is not; each twice:
   * in the general copy and in the copy for KL's captured value. */
  cr_assert_eq(tu_count_substr(fast.src.data, "typedef float o_vt"), 4, "%s",
               fast.src.data);
  cr_assert_eq(tu_count_substr(fast.src.data, "+= *(const o_vt"), 16);
  cr_assert_null(strstr(exact.src.data, "o_vt"));
  orion_cgen_out_free(&fast);
  orion_cgen_out_free(&exact);
  orion_free(chunk);
  chunk = chunk_text(SUM_F64);
  cr_assert_eq(generate(chunk, IT_RAT, 1, &fast, &err), 0, "%s", err.msg);
  cr_assert_eq(tu_count_substr(fast.src.data, "typedef double o_vt"), 2);
  orion_cgen_out_free(&fast);
  orion_free(chunk);
  /* Not dot products: the sum is read in the term, or subtracted from
   * it, or the term is not a product of two rows at k. */
  chunk = chunk_text("function(u, i, r)\n"
                     "  local w, h, s, t = WL[u], HL[i], 0.0, 0.0\n"
                     "  for k = 1, KL do s = s + w[k] * s end\n"
                     "  for k = 1, KL do t = w[k] * h[k] - t end\n"
                     "  for k = 1, KL do s = s + w[k] * h[k] * 2 end\n"
                     "  for k = 1, KL do s = s + w[k] * h[k + 0] end\n"
                     "  for k = 1, KL do s = s + w[k] end\n"
                     "  S:add(s + t)\n"
                     "end");
  cr_assert_eq(generate(chunk, IT_RAT, 1, &fast, &err), 0, "%s", err.msg);
  cr_assert_null(strstr(fast.src.data, "o_vt"));
  orion_cgen_out_free(&fast);
  orion_free(chunk);
}

Test(cgen, sums_exact_bits) {
  check_ok(IT_RAT, SUM_F32);
  check_ok(IT_RAT, SUM_F64);
}

Test(cgen, sums_fast_within_tolerance) {
  check_fast(IT_RAT, SUM_F32, 1e-5);
  check_fast(IT_RAT, SUM_F64, 1e-12);
}

/* ------------------------------------------------------------------------
 * Values whose type is known only at run time, stored and added.
 * ---------------------------------------------------------------------- */

Test(cgen, dynamic_values_stored) {
  check_ok(IT_VEC, "function(i, v)\n"
                   "  local x = i > 6 and 2.5 or (i > 3 and i or nil)\n"
                   "  if i <= 3 then return end\n"
                   "  A[i] = x\n"
                   "  B[i] = i > 6 and 2.0 or i\n"
                   "  F[i] = x\n"
                   "  I[i] = i > 8 and 7.0 or v\n"
                   "  BA[i] = x\n"
                   "  BI[i] = i > 9 and 3.0 or i\n"
                   "  S:add(x)\n"
                   "  MX:add(i > 5 and v or 0.5)\n"
                   "  if i == 10 then return (x or 0) // 1 end\n"
                   "  return i > 8 and 1.0 or nil\n"
                   "end");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = i > 6 and 2.5 or (i > 3 and i or nil)\n"
            "  A[i] = x\n"
            "end",
            "cannot store a nil in f64 array 'A'");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = i > 2 and 2.5 or (i > 1 and i or false)\n"
            "  S:add(x)\n"
            "end",
            "accumulator add: expected a number, got a boolean");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local x = i > 2 and 2.5 or (i > 1 and i or nil)\n"
            "  BA[i] = x\n"
            "end",
            "cannot store a nil in f64 buffer 'BA'");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local s = i > 6 and i / 2 or i\n"
            "  A[s] = 1\n"
            "end",
            "array 'A': subscript 3.5 is not an integer");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local s = i > 3 and i / 2 or i\n"
            "  B[i] = s\n"
            "end",
            "cannot store 2.5 in i64 array 'B': not an integer");
  check_err(IT_VEC,
            "function(i, v)\n"
            "  local s = i > 3 and i + 0.5 or false\n"
            "  return s\n"
            "end",
            "cannot store a boolean in i64 array 'the iterated array "
            "(returned value)'");
}

/* elem_done runs after every element, also after an early return, and its
 * failure (with its own code and message) ends the block. */
static int stop_at_three(orion_cctx *c) {
  if (++elem_count == 3) {
    snprintf(c->err, sizeof c->err, "flush failed");
    return 2;
  }
  return 0;
}

Test(cgen, elem_done_failure_ends_the_block) {
  char *chunk = chunk_text("function(i, v)\n"
                           "  if i % 2 == 0 then return end\n"
                           "  B[i] = v + 1\n"
                           "end");
  orion_cgen_out out;
  orion_error err;
  built b;
  state s;
  orion_cctx ctx;
  orion_carray arr;
  cr_assert_eq(generate(chunk, IT_VEC, 0, &out, &err), 0);
  build(out.src.data, 0, &b);
  state_init(&s, IT_VEC);
  memset(&ctx, 0, sizeof ctx);
  carray_of(s.arr[NARRS], &ctx.iter);
  carray_of(s.arr[array_index("B")], &arr);
  ctx.arrays = &arr;
  ctx.elem_done = stop_at_three;
  elem_count = 0;
  cr_assert_eq(b.fn(&ctx, 0, 12), 2);
  cr_assert_str_eq(ctx.err, "flush failed");
  cr_assert_eq(ctx.cur, 2);
  cr_assert_eq(((int64_t *)s.arr[array_index("B")]->values)[2],
               fill_value(1, 2) + 1);
  cr_assert_eq(((int64_t *)s.arr[array_index("B")]->values)[4],
               fill_value(1, 4));
  state_free(&s);
  unbuild(&b);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

/* ------------------------------------------------------------------------
 * The device form of the same source (ORION_GPU_BODY, util/gbody.h):
 * which bodies are in the GPU subset (gpu_why), and that the sources of
 * those compile with nvcc for sm_90 (compile only: no device here).  All
 * of them go into one translation unit, each in a namespace of its own
 * (nvcc takes seconds per file).
 * ---------------------------------------------------------------------- */

/* Bodies beyond the golden ones whose device code differs in kind:
 * fast mode, math functions, run-time subtypes, errors of every kind. */
typedef struct gextra {
  iter_kind kind;
  int fast;
  const char *body;
} gextra;

static const gextra GPU_EXTRA[] = {
    /* Buffers' adds and math.random on the device: a float target in
     * fast mode, an integer one through a slice, subtracted, and x + B. */
    {IT_RAT, 1,
     "function(s, f, x)\n"
     "  local p = 1 / (1 + math.exp(-LM[s]))\n"
     "  GB[f] = GB[f] + (p - LY[s]) * x\n"
     "  GB[f] = GB[f] - math.random() * 0.5\n"
     "end"},
    {IT_MAT, 0,
     "function(i, j, v)\n"
     "  TB[j % 4 + 1] = TB[j % 4 + 1] - 1\n"
     "  TB[i] = 3 + TB[i]\n"
     "  BI[i] = BI[i] + math.random(1, 9)\n"
     "end"},
    {IT_RAT, 1, MF_SGD},
    {IT_RAT, 1, MF_SGD64},
    {IT_MAT, 0,
     "function(i, j, v)\n"
     "  local x = math.abs(v) + 0.25\n"
     "  M[i][j] = math.sqrt(x) + math.exp(v) + math.log(x)\n"
     "  M[i + 1][j] = math.log(x, 2) + math.log(x, 10) + math.log(x, 3)\n"
     "  M[i][j + 1] = math.sin(v) + math.cos(v) + math.tan(v)\n"
     "  M[i + 1][j + 1] = math.asin(v / 4) + math.atan(v, -1) + 2^0.5\n"
     "  local ip, fp = math.modf(v * 3)\n"
     "  B[i * 4 + j - 4] = ip + math.floor(fp) + math.ceil(v)\n"
     "  if math.ult(i, -1) then S:add(1) end\n"
     "end"},
    {IT_VEC, 0,
     "function(i, v)\n"
     "  local x = 1\n"
     "  if v > 0 then x = 2.5 end\n"
     "  local y = x * 2\n"
     "  local z = x // 1 + x % 2\n"
     "  A[i] = y + z\n"
     "  MN:add(z)\n"
     "  MX:add(i)\n"
     "  I[i] = math.fmod(v, i - 6) + v // (i - 3) + v % (i - 2)\n"
     "  B[i] = math.tointeger(y) or A[i]\n"
     "  F[i] = v / 0\n"
     "end"},
    {IT_F32, 1,
     "function(i, v)\n"
     "  local s = 0.0\n"
     "  for k = 1, KL do s = s + WL[1][k] * HL[1][k] end\n"
     "  WL[2][i] = s + math.sqrt(v) + v % 3\n"
     "  return v * 2\n"
     "end"},
    {IT_I32, 0,
     "function(i, v)\n"
     "  I[i] = v * 3.0\n"
     "  B[i] = (v << 3) ~ (v >> 1) & 255 | i\n"
     "  if v > 5 then return v + 0.5 end\n"
     "end"},
};
#define NGPU_EXTRA ((int)(sizeof GPU_EXTRA / sizeof GPU_EXTRA[0]))

Test(cgen, gpu_why_says_what_runs_on_the_cpu) {
  struct {
    iter_kind kind;
    const char *body, *why;
  } cases[] = {
      {IT_VEC, "function(i, v)\n  BA[i] = v\nend",
       "6: a buffer write (orion.buffer 'BA') runs on the CPU"},
      {IT_VEC, "function(i, v)\n  local x = BA[i]\n  A[i] = x\nend",
       "6: a buffer read (orion.buffer 'BA') runs on the CPU"},
      /* math.random is in the subset; a buffer's element only as
       * B[k] = B[k] + x (integers, or floats in fast mode). */
      {IT_VEC, "function(i, v)\n  A[i] = 1\n  A[i] = math.random(3)\nend",
       ""},
      {IT_VEC, "function(i, v)\n  TB[1] = TB[1] + i\n  TB[2] = 1 + TB[2]\nend",
       ""},
      {IT_VEC, "function(i, v)\n  BA[i] = BA[i] + v\nend",
       "6: a float buffer add in exact mode (the device's order of "
       "additions varies; fast = true allows it) (orion.buffer 'BA') runs on "
       "the CPU"},
      {IT_VEC, "function(i, v)\n  TB[1] = TB[1] + v / 2\nend",
       "6: a buffer add of a float to an integer target (orion.buffer 'TB') "
       "runs on the CPU"},
      {IT_VEC, "function(i, v)\n  TB[1] = TB[1] + TB[2]\nend",
       "6: a buffer read (orion.buffer 'TB') runs on the CPU"},
      {IT_VEC, "function(i, v)\n  TB[1] = TB[2] + 1\nend",
       "6: a buffer read (orion.buffer 'TB') runs on the CPU"},
      {IT_VEC, "function(i, v)\n  TB[1] = 2 - TB[1]\nend",
       "6: a buffer read (orion.buffer 'TB') runs on the CPU"},
      {IT_VEC,
       "function(i, v)\n"
       "  for k = 1, 3 do\n"
       "    if k == v then goto continue end\n"
       "    B[k] = B[k] + 1\n"
       "    ::continue::\n"
       "  end\n"
       "end",
       "7: a goto forward (nvcc compiles C++, where a jump may not pass "
       "declarations)"},
      {IT_VEC, "function(i, v)\n  A[i] = v * 2\nend", ""},
  };
  int i;
  for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    char *chunk = chunk_text(cases[i].body);
    orion_cgen_out out;
    orion_error err;
    cr_assert_eq(generate(chunk, cases[i].kind, 0, &out, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(out.gpu_why, cases[i].why, "gpu_why \"%s\", body: %s",
                     out.gpu_why, cases[i].body);
    /* Outside the subset, nvcc stops at an #error saying why. */
    cr_assert_eq(strstr(out.src.data, "#error \"outside the GPU subset: ") !=
                     NULL,
                 cases[i].why[0] != 0);
    orion_cgen_out_free(&out);
    orion_free(chunk);
  }
  for (i = 0; i < NGOLDEN; i++) {
    char *chunk = chunk_text(GOLDEN[i].body);
    orion_cgen_out out;
    orion_error err;
    cr_assert_eq(generate(chunk, GOLDEN[i].kind, 0, &out, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(out.gpu_why,
                     GOLDEN[i].gpu_why != NULL ? GOLDEN[i].gpu_why : "",
                     "golden %s", GOLDEN[i].name);
    orion_cgen_out_free(&out);
    orion_free(chunk);
  }
}

/* Appends src to units as namespace gN (its system includes collected in
 * inc instead, its exported symbols suffixed _N, its macros undefined
 * after it), so that many sources make one translation unit. */
static void gpu_unit(orion_buf *inc, orion_buf *units, const char *src,
                     int n) {
  const char *p = src, *end;
  char head[64];
  snprintf(head, sizeof head, "namespace g%d {\n", n);
  orion_buf_append(units, head, strlen(head));
  orion_buf_append(inc, "", 1);
  inc->len--;
  for (; *p != 0; p = *end ? end + 1 : end) {
    const char *q = p;
    size_t len;
    end = strchr(p, '\n');
    if (end == NULL)
      end = p + strlen(p);
    len = (size_t)(end - p);
    while (*q == ' ')
      q++;
    if (strncmp(q, "#include <", 10) == 0) {
      char line[256];
      snprintf(line, sizeof line, "%.*s\n", (int)(end - q), q);
      if (inc->data == NULL || strstr((const char *)inc->data, line) == NULL)
        orion_buf_append(inc, line, strlen(line));
      orion_buf_append(inc, "", 1);
      inc->len--;
      continue;
    }
    while (len > 0) {
      const char *hit = NULL, *names[] = {"orion_gbody_run", "orion_gbody_writes",
                                          "orion_gbody_abi"};
      size_t k, at = len;
      for (k = 0; k < 3; k++) {
        const char *h = strstr(p, names[k]);
        if (h != NULL && h < p + len && (size_t)(h - p) < at) {
          at = (size_t)(h - p);
          hit = names[k];
        }
      }
      if (hit == NULL) {
        orion_buf_append(units, p, len);
        break;
      }
      orion_buf_append(units, p, at + strlen(hit));
      snprintf(head, sizeof head, "_%d", n);
      orion_buf_append(units, head, strlen(head));
      p += at + strlen(hit);
      len -= at + strlen(hit);
    }
    orion_buf_append(units, "\n", 1);
  }
  orion_buf_append(units, "}\n", 2);
  for (p = src; (p = strstr(p, "#define ")) != NULL; p += 8) {
    size_t k = strspn(p + 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                             "0123456789_");
    snprintf(head, sizeof head, "#undef %.*s\n", (int)k, p + 8);
    orion_buf_append(units, head, strlen(head));
  }
}

Test(cgen, gpu_sources_compile_with_nvcc, .timeout = 600) {
  const char *nvcc = tu_nvcc();
  orion_buf inc, units;
  char dir[] = "/tmp/orion-gpucg-XXXXXX", path[256], obj[256];
  char *argv[12];
  int i, n = 0;
  tu_run r;
  FILE *f;
  orion_buf_init(&inc);
  orion_buf_init(&units);
  for (i = 0; i < NGOLDEN + NGPU_EXTRA; i++) {
    const char *body = i < NGOLDEN ? GOLDEN[i].body
                                   : GPU_EXTRA[i - NGOLDEN].body;
    iter_kind kind = i < NGOLDEN ? GOLDEN[i].kind
                                 : GPU_EXTRA[i - NGOLDEN].kind;
    char *chunk = chunk_text(body);
    orion_cgen_out out;
    orion_error err;
    cr_assert_eq(generate(chunk, kind, i < NGOLDEN ? 0
                                                   : GPU_EXTRA[i - NGOLDEN].fast,
                          &out, &err),
                 0, "%s", err.msg);
    if (out.gpu_why[0] == 0) {
      gpu_unit(&inc, &units, out.src.data, i);
      n++;
    }
    orion_cgen_out_free(&out);
    orion_free(chunk);
  }
  cr_assert(n >= NGOLDEN - 3 + NGPU_EXTRA, "only %d bodies in the subset", n);
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/bodies.cu", dir);
  snprintf(obj, sizeof obj, "%s/bodies.o", dir);
  f = fopen(path, "w");
  cr_assert(f != NULL);
  fwrite(inc.data, 1, inc.len, f);
  fwrite(units.data, 1, units.len, f);
  fclose(f);
  argv[0] = (char *)nvcc;
  argv[1] = (char *)"-arch=sm_90";
  argv[2] = (char *)"-c";
  argv[3] = (char *)"-x";
  argv[4] = (char *)"cu";
  argv[5] = (char *)"-DORION_GPU_BODY=1";
  argv[6] = (char *)"-fmad=false";
  argv[7] = (char *)"-o";
  argv[8] = obj;
  argv[9] = path;
  argv[10] = NULL;
  r = tu_run_argv(argv, 500);
  cr_log_info("nvcc -arch=sm_90 -c: %d generated sources in one unit: exit %d",
              n, r.status);
  cr_assert_eq(r.status, 0, "nvcc failed on %s:\n%.3000s\n%.3000s", path,
               r.out, r.err);
  cr_assert(strstr(r.err, "warning") == NULL, "nvcc warns:\n%.3000s", r.err);
  tu_run_free(&r);
  unlink(obj);
  unlink(path);
  rmdir(dir);
  orion_buf_free(&inc);
  orion_buf_free(&units);
}

/* A source outside the subset does not build for the device: the build
 * error says why. */
Test(cgen, gpu_build_outside_the_subset_says_why, .timeout = 300) {
  char *chunk;
  orion_cgen_out out;
  orion_error err;
  orion_cobj *o = NULL;
  (void)tu_nvcc();
  setenv("ORION_NVCC_FLAGS", "-O0 -arch=sm_90", 1);
  chunk = chunk_text("function(i, v)\n  BA[i] = v\nend");
  cr_assert_eq(generate(chunk, IT_VEC, 0, &out, &err), 0, "%s", err.msg);
  cr_assert_eq(orion_cobj_build_cuda(out.src.data, out.src.len,
                                     orion_cgen_mode_flags_cuda(0), 0, &o,
                                     NULL, &err),
               ORION_ECOMPILE);
  cr_assert(strstr(err.msg, "error: #error \"outside the GPU subset: 6: "
                            "a buffer write (orion.buffer 'BA') runs on the "
                            "CPU\"") != NULL,
            "%s", err.msg);
  orion_cgen_out_free(&out);
  orion_free(chunk);
}

/* Without the device form (no executor has a GPU) the source holds no
 * device code: executors are sent no more than before. */
Test(cgen, no_device_form_unless_asked) {
  char *chunk = chunk_text(MF_SGD);
  int i;
  orion_cgen_out with, without;
  orion_error err;
  cr_assert_eq(generate(chunk, IT_RAT, 0, &with, &err), 0, "%s", err.msg);
  gen_gpu = 0;
  cr_assert_eq(generate(chunk, IT_RAT, 0, &without, &err), 0, "%s", err.msg);
  cr_assert_not_null(strstr(with.src.data, "o_gkernel"));
  cr_assert_not_null(strstr(with.src.data, "orion_gbody_writes"));
  cr_assert_null(strstr(without.src.data, "o_gkernel"));
  cr_assert_null(strstr(without.src.data, "orion_gbody_writes"));
  cr_assert_null(strstr(without.src.data, "typedef struct orion_gctx"));
  cr_assert_not_null(strstr(without.src.data,
                            "#error \"generated without the device form"));
  cr_assert_str_eq(without.gpu_why, "");
  cr_log_info("MF source: %zu bytes, %zu with the device form",
              without.src.len, with.src.len);
  cr_assert_lt(without.src.len + 8000, with.src.len);
  /* Both build with the C compiler, to the same function. */
  for (i = 0; i < 2; i++) {
    orion_cobj *o = NULL;
    const orion_cgen_out *out = i ? &without : &with;
    cr_assert_eq(orion_cobj_build(out->src.data, out->src.len,
                                  orion_cgen_mode_flags(0), 0, &o, NULL, &err),
                 0, "%s", err.msg);
    cr_assert_not_null(orion_cobj_sym(o, ORION_CBODY_FN));
    orion_cobj_free(o);
  }
  orion_cgen_out_free(&with);
  orion_cgen_out_free(&without);
  orion_free(chunk);
}

/* Lane loops on the device (analysis/cgen_lane.c): the MF update's two
 * loops spread over a warp's lanes, in fast mode the dot product too; a
 * loop whose iterations could touch one element, or that writes an
 * element not at the loop variable, stays a loop of one lane. */
static char *gen_src(const char *body, iter_kind kind, int fast) {
  char *chunk = chunk_text(body), *s;
  orion_cgen_out out;
  orion_error err;
  cr_assert_eq(generate(chunk, kind, fast, &out, &err), 0, "%s", err.msg);
  s = orion_strdup(out.src.data);
  orion_cgen_out_free(&out);
  orion_free(chunk);
  return s;
}

static int count_of(const char *s, const char *t) {
  int n = 0;
  for (; (s = strstr(s, t)) != NULL; s += strlen(t))
    n++;
  return n;
}

/* The object says whether its body stores into the iterated array (a
 * returned value): the executor keeps a block's values only then. */
Test(cgen, the_object_says_whether_the_body_stores_into_the_iterated_array) {
  static const char *const bodies[] = {
      MF_SGD, "function(u, i, r) if u > 2 then return r * 2 end end",
      "function(u, i, r) return nil end"};
  static const int stores[] = {0, 1, 0};
  int k;
  for (k = 0; k < 3; k++) {
    char *src = gen_src(bodies[k], IT_RAT, 0), want[64];
    built b;
    const int *st;
    snprintf(want, sizeof want, "const int orion_cbody_stores_iter = %d;",
             stores[k]);
    cr_assert_not_null(strstr(src, want), "body %d: no \"%s\"", k, want);
    build(src, 0, &b);
    st = orion_cobj_sym(b.obj, ORION_CBODY_ITER_SYM);
    cr_assert_not_null(st, "body %d: no %s", k, ORION_CBODY_ITER_SYM);
    cr_assert_eq(*st, stores[k], "body %d", k);
    unbuild(&b);
    orion_free(src);
  }
}

Test(cgen, lane_loops_on_the_device) {
  char *fast = gen_src(MF_SGD, IT_RAT, 1), *exact = gen_src(MF_SGD, IT_RAT, 0);
  static const char *const serial[] = {
      /* reads an element another iteration writes */
      "  for k = 1, K - 1 do wu[k] = wu[k + 1] * 0.5 end\n",
      /* writes one element from every iteration */
      "  for k = 1, K do wu[1] = wu[1] + hi[k] end\n",
      /* a sum that is not a dot product, in exact mode */
      "  for k = 1, K do e = e + wu[k] end\n  wu[1] = e\n",
      /* an accumulator */
      "  for k = 1, K do S:add(wu[k]) end\n",
      /* a local hiding the row */
      "  for k = 1, K do local wu = hi; wu[k] = 1 end\n",
  };
  size_t i;
  /* Fast mode: the dot product and the update are lane loops; the
   * update's stores are the lane's own in the unchecked copy and lane
   * 0's in the checked one.  The element code is there twice: the CPU's
   * copy for K's captured value holds it too (and never builds for the
   * device). */
  cr_assert_eq(count_of(fast, "#define O_WARP 1\n"), 1);
  cr_assert_eq(count_of(fast, "static int o_run_k("), 1);
  cr_assert_eq(count_of(fast, "o_wsum(o_p"), 2);
  cr_assert_eq(count_of(fast, " = O_LANE; "), 4);
  cr_assert_eq(count_of(fast, "O_WSYNC();"), 2);
  cr_assert_eq(count_of(fast, ") = (float)t"), 8);
  cr_assert_eq(count_of(fast, "O_ST1(*("), 4);
  /* Exact mode keeps the dot product's order: only the update. */
  cr_assert_eq(count_of(exact, "#define O_WARP 1\n"), 1);
  cr_assert_eq(count_of(exact, "o_wsum(o_p"), 0);
  cr_assert_eq(count_of(exact, " = O_LANE; "), 1);
  orion_free(fast);
  orion_free(exact);
  for (i = 0; i < sizeof serial / sizeof *serial; i++) {
    char body[512], *src;
    snprintf(body, sizeof body,
             "function(u, i, r)\n  local wu, hi = W[u], H[i]\n"
             "  local e = r\n%s  wu[2] = e\nend",
             serial[i]);
    src = gen_src(body, IT_RAT, 0);
    cr_assert_eq(count_of(src, "#define O_WARP 0\n"), 1, "%s", serial[i]);
    cr_assert_eq(count_of(src, "O_LANE; "), 0, "%s", serial[i]);
    orion_free(src);
  }
}

/* orion_gbody_rowkey: the iterated key every first subscript of an array
 * is, so that a GPU block copies only the rows it reaches; any other
 * first subscript (an offset, a reassigned key, another variable) makes
 * the array move whole. */
Test(cgen, rowkey_names_the_key_of_each_array) {
  static const struct {
    const char *body;
    int w, h; /* W's and H's key, or -1 */
  } cases[] = {
      {MF_SGD, 0, 1},
      {"function(u, i, r)\n  W[u][1] = r\n  H[i][1] = H[u + 0][1]\nend", 0, -1},
      {"function(u, i, r)\n  W[u + 1][1] = r\n  H[i][2] = r\nend", -1, 1},
      {"function(u, i, r)\n  u = i\n  W[u][1] = r\n  H[i][2] = r\nend", -1, 1},
      {"function(u, i, r)\n  local j = i\n  W[j][1] = r\n  H[i][2] = r\nend", -1, 1},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *src = gen_src(cases[i].body, IT_RAT, 0), want[64];
    int k;
    for (k = 0; k < 2; k++) {
      int key = k == 0 ? cases[i].w : cases[i].h;
      snprintf(want, sizeof want, "if (k == %d) return %d;", k, key);
      if (key >= 0)
        cr_assert(strstr(src, want) != NULL, "case %zu: no '%s'", i, want);
      else {
        snprintf(want, sizeof want, "if (k == %d) return", k);
        cr_assert(strstr(src, want) == NULL, "case %zu: '%s'", i, want);
      }
    }
    orion_free(src);
  }
}
