/* Compiled bodies run by the Lua host (exec_cbody.c). */
#ifndef ORION_EXECUTOR_EXEC_CBODY_H
#define ORION_EXECUTOR_EXEC_CBODY_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"
#include "util/cbody.h"

/* The host array a as a compiled body sees it (util/cbody.h); a device
 * body gets the same with device pointers put in (executor/exec_gbody.c). */
void orion__exec_carray_of(orion_carray *ca, const orion_array *a);

/* Runs ex's compiled body over elements [lo, hi) of a (executor/exec_cbody.c);
 * errors as orion_exec_run. */
int orion__exec_run_compiled(struct orion_exec *ex, orion_array *a, int64_t lo,
                             int64_t hi, uint64_t seed, int64_t block,
                             orion_error *err);

#endif
