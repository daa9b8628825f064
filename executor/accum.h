/* Accumulator values: sum, min or max over numbers, kept as a Lua integer
 * while every operand is an integer (sums wrap like Lua integers), as a
 * float once any operand is a float. */
#ifndef ORION_LUA_ACCUM_H
#define ORION_LUA_ACCUM_H

#include <lua.h>

typedef enum { ORION_ACC_SUM, ORION_ACC_MIN, ORION_ACC_MAX } orion_acc_op;

typedef struct orion_accval {
  int has;   /* any value folded in yet */
  int isint; /* value is an integer */
  lua_Integer i;
  lua_Number d;
} orion_accval;

/* Parses "sum" | "min" | "max"; returns 0 or ORION_EINVAL. */
int orion_acc_op_parse(const char *name, orion_acc_op *op);
const char *orion_acc_op_name(orion_acc_op op);

/* Folds one operand into v. */
void orion_accval_add_int(orion_accval *v, orion_acc_op op, lua_Integer x);
void orion_accval_add_num(orion_accval *v, orion_acc_op op, lua_Number x);
/* Folds the partial p (from an executor) into v. */
void orion_accval_combine(orion_accval *v, orion_acc_op op,
                          const orion_accval *p);
/* A loop's accumulator partials on the driver, per block: a row of naccs
 * values for each block id, then one for each executor (what it folded
 * outside any block).  They are folded into the accumulators in the
 * schedule's block order, then executor order, so that a float sum is
 * the same whichever executors ran the blocks, and when: the same on 0
 * (in process), 1, 2, 3 or 4 executors. */
typedef struct orion_acc_table {
  orion_accval *part;
  int naccs, nblocks, nextra;
} orion_acc_table;

/* 0, or ORION_ENOMEM. */
int orion_acc_table_init(orion_acc_table *t, int naccs, int nblocks,
                         int nextra);
/* Folds p into the row of block (0..nblocks-1), or of executor `extra`
 * when block is -1, for accumulator index k; out-of-range rows are
 * ignored (0), or ORION_EINVAL. */
int orion_acc_table_put(orion_acc_table *t, int k, int64_t block, int extra,
                        orion_acc_op op, const orion_accval *p);
/* Folds accumulator k's rows into v: blocks order[0..nblocks), then the
 * executors' rows. */
void orion_acc_table_fold(const orion_acc_table *t, int k, orion_acc_op op,
                          const int *order, orion_accval *v);
void orion_acc_table_free(orion_acc_table *t);
/* Pushes v onto L (nil when it holds nothing). */
void orion_accval_push(lua_State *L, const orion_accval *v);

#endif
