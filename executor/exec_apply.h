/* Buffers' pending values applied to their targets (exec_apply.c). */
#ifndef ORION_EXECUTOR_EXEC_APPLY_H
#define ORION_EXECUTOR_EXEC_APPLY_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"

/* Takes b's pending elements and applies them to the target (or hands
 * them to the flush sink); restarts its count (exec_apply.c). */
int orion__exec_flush_buffer(struct orion_exec *ex, exec_buffer *b,
                             orion_error *err);

/* Applies items[0..n) to b's target with b's operator, in order. */
int orion__exec_apply_taken(struct orion_exec *ex, exec_buffer *b,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err);

/* After each element of a block: counts it for the n-element buffers and
 * flushes those whose count is reached, and for the managed tick.
 * Returns 0 or the failed flush's code with err set (as
 * orion_exec_flush). */
int orion__exec_count_element(struct orion_exec *ex, orion_error *err);

#endif
