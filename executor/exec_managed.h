/* Managed buffers (flush = "managed", after Bosen's managed communication,
 * SoCC'15) on an executor: between the loop's flush points the executor
 * sends the largest pending writes of these buffers within a byte budget,
 * and counts what it sent early and how long it had waited.  The budget
 * (a rate, a token bucket) belongs to the caller: orion-executor
 * (executor/exec_run.c); in the driver's own process a managed buffer
 * flushes as flush = "loop".  Compute thread only. */
#ifndef ORION_LUA_EXEC_MANAGED_H
#define ORION_LUA_EXEC_MANAGED_H

#include <stdint.h>

#include "util/error.h"

struct orion_exec;

/* The flush policy of a managed buffer (executor/exec.h's ORION_FLUSH_*). */
#define ORION_FLUSH_MANAGED (-2)

/* Bytes an early item counts for, in the budget and in the statistics:
 * an 8-byte key and an 8-byte value, as BUFFER_FLUSH carries scattered
 * keys (consecutive keys travel smaller, as runs). */
#define ORION_MANAGED_ITEM_BYTES 16

/* What went early in a loop: items and their bytes (ORION_MANAGED_ITEM_BYTES
 * each), and the sum over those items of their staleness: the blocks this
 * executor ended after the one that wrote the item, until it was sent (0:
 * sent at the end of the block that wrote it). */
typedef struct orion_managed_stats {
  uint64_t items;
  uint64_t bytes;
  double staleness_sum;
} orion_managed_stats;

/* Within a block: every ORION_MANAGED_TICK elements the body runs, while
 * a managed buffer is bound, the executor's core calls the tick set with
 * orion_exec_set_managed_tick (which may call orion_exec_managed_send).
 * A nonzero return fails the block with err set. */
#define ORION_MANAGED_TICK 256
typedef int (*orion_managed_tick)(void *ud, orion_error *err);
void orion_exec_set_managed_tick(struct orion_exec *ex, orion_managed_tick fn,
                                 void *ud);

/* Whether a managed buffer is bound with writes pending. */
int orion_exec_managed_pending(struct orion_exec *ex);

/* Sends early: for each managed buffer in bind order, its pending writes of
 * largest magnitude, as many as max_bytes still allows, to the flush sink
 * (block -1: the owner applies them now); the others stay pending.
 * *used: the bytes sent.  Returns 0, or the sink's or ORION_ENOMEM's code
 * with err set. */
int orion_exec_managed_send(struct orion_exec *ex, int64_t max_bytes,
                            int64_t *used, orion_error *err);

/* Takes the loop's statistics so far (and restarts them). */
void orion_exec_managed_take_stats(struct orion_exec *ex,
                                   orion_managed_stats *out);

#endif
