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
/* Pushes v onto L (nil when it holds nothing). */
void orion_accval_push(lua_State *L, const orion_accval *v);

#endif
