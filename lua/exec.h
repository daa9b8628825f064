/* The executor core: a Lua state of its own that holds bindings from array
 * ids to array partitions and runs a shipped loop body over one block of
 * elements.  The single-process engine hosts one of these inside the driver;
 * distributed executors run the same code.
 *
 * Not thread-safe: one thread drives one orion_exec at a time.
 */
#ifndef ORION_LUA_EXEC_H
#define ORION_LUA_EXEC_H

#include <stdint.h>

#include "dsm/array.h"
#include "lua/accum.h"
#include "util/error.h"

typedef struct orion_exec orion_exec;

/* A new executor with id `executor_id` (reported in errors).  NULL on out of
 * memory.  Free with orion_exec_free. */
orion_exec *orion_exec_new(int executor_id);
void orion_exec_free(orion_exec *ex);

/* Binds array id to a (partition of an) array; the executor retains it until
 * unbound or freed.  Rebinding an id replaces the old binding. */
int orion_exec_bind_array(orion_exec *ex, int64_t id, orion_array *a);
void orion_exec_unbind_array(orion_exec *ex, int64_t id);

/* Declares accumulator id with its operator; its partial starts empty. */
int orion_exec_bind_acc(orion_exec *ex, int64_t id, orion_acc_op op);

/* Loads a loop body from a capture blob (lua/capture.h).  Replaces any loop
 * loaded before.  Fails with err naming the problem. */
int orion_exec_load(orion_exec *ex, int64_t loop_id, const char *blob,
                    size_t len, orion_error *err);

/* Runs the loaded body on elements [lo, hi) of the array bound to iter_id:
 * body(k1, ..., kn, v) with 1-based keys; a non-nil return value replaces
 * the element.  math.random is seeded from (seed, loop id, block) first.
 * On a body error, returns ORION_EBODY with err holding
 * "executor E, element (k1, ..., kn): MESSAGE\nTRACEBACK". */
int orion_exec_run(orion_exec *ex, int64_t iter_id, int64_t lo, int64_t hi,
                   uint64_t seed, int64_t block, orion_error *err);

/* Copies out and clears the partial value of accumulator id. */
int orion_exec_take_acc(orion_exec *ex, int64_t id, orion_accval *out);

#endif
