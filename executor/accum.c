/* Accumulator values (executor/accum.h): folding operands and executors'
 * partials with sum, min or max. */
#include "executor/accum.h"

#include <string.h>

#include "util/alloc.h"
#include "util/error.h"

static const char *const op_names[] = {"sum", "min", "max"};

int orion_acc_op_parse(const char *name, orion_acc_op *op) {
  int i;
  for (i = 0; i < 3; i++)
    if (strcmp(name, op_names[i]) == 0) {
      *op = (orion_acc_op)i;
      return 0;
    }
  return ORION_EINVAL;
}

const char *orion_acc_op_name(orion_acc_op op) { return op_names[op]; }

static lua_Number as_num(const orion_accval *v) {
  return v->isint ? (lua_Number)v->i : v->d;
}

void orion_accval_add_int(orion_accval *v, orion_acc_op op, lua_Integer x) {
  if (!v->has) {
    v->has = 1;
    v->isint = 1;
    v->i = x;
    return;
  }
  if (v->isint) {
    switch (op) {
    case ORION_ACC_SUM:
      v->i = (lua_Integer)((lua_Unsigned)v->i + (lua_Unsigned)x);
      break;
    case ORION_ACC_MIN:
      if (x < v->i)
        v->i = x;
      break;
    case ORION_ACC_MAX:
      if (x > v->i)
        v->i = x;
      break;
    }
    return;
  }
  orion_accval_add_num(v, op, (lua_Number)x);
}

void orion_accval_add_num(orion_accval *v, orion_acc_op op, lua_Number x) {
  lua_Number cur;
  if (!v->has) {
    v->has = 1;
    v->isint = 0;
    v->d = x;
    return;
  }
  cur = as_num(v);
  v->isint = 0;
  switch (op) {
  case ORION_ACC_SUM:
    v->d = cur + x;
    break;
  case ORION_ACC_MIN:
    v->d = x < cur || cur != cur ? x : cur;
    break;
  case ORION_ACC_MAX:
    v->d = x > cur || cur != cur ? x : cur;
    break;
  }
}

void orion_accval_combine(orion_accval *v, orion_acc_op op,
                          const orion_accval *p) {
  if (!p->has)
    return;
  if (p->isint)
    orion_accval_add_int(v, op, p->i);
  else
    orion_accval_add_num(v, op, p->d);
}

int orion_acc_table_init(orion_acc_table *t, int naccs, int nblocks,
                         int nextra) {
  t->naccs = naccs;
  t->nblocks = nblocks;
  t->nextra = nextra;
  t->part = orion_calloc((size_t)naccs * (size_t)(nblocks + nextra) + 1,
                         sizeof *t->part);
  return t->part != NULL ? 0 : ORION_ENOMEM;
}

int orion_acc_table_put(orion_acc_table *t, int k, int64_t block, int extra,
                        orion_acc_op op, const orion_accval *p) {
  int64_t row = block >= 0 ? block : t->nblocks + (int64_t)extra;
  if (k < 0 || k >= t->naccs || block >= t->nblocks || row < 0 ||
      row >= t->nblocks + t->nextra)
    return ORION_EINVAL;
  orion_accval_combine(&t->part[(size_t)row * (size_t)t->naccs + (size_t)k],
                       op, p);
  return 0;
}

void orion_acc_table_fold(const orion_acc_table *t, int k, orion_acc_op op,
                          const int *order, orion_accval *v) {
  int r;
  for (r = 0; r < t->nblocks + t->nextra; r++) {
    int row = r < t->nblocks ? order[r] : r;
    orion_accval_combine(
        v, op, &t->part[(size_t)row * (size_t)t->naccs + (size_t)k]);
  }
}

void orion_acc_table_free(orion_acc_table *t) {
  orion_free(t->part);
  t->part = NULL;
}

void orion_accval_push(lua_State *L, const orion_accval *v) {
  if (!v->has)
    lua_pushnil(L);
  else if (v->isint)
    lua_pushinteger(L, v->i);
  else
    lua_pushnumber(L, v->d);
}
