/* The row view of a ragged array in a body (exec_ragged.c). */
#ifndef ORION_EXECUTOR_EXEC_RAGGED_H
#define ORION_EXECUTOR_EXEC_RAGGED_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"

/* Ragged rows (executor/exec_ragged.c): the row view's metatable, and a view
 * of elements [lo, hi) of ragged array a pushed onto L. */
void orion__exec_row_open(lua_State *L);
void orion__exec_push_row(lua_State *L, orion_array *a, int64_t lo,
                          int64_t hi);

#endif
