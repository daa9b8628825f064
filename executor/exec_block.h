/* The end of a block on an executor (in process or in orion-executor):
 * each block's accumulator partials are kept apart, tagged with the block,
 * so that the driver combines them in the schedule's block order and a
 * float sum does not depend on how many executors ran the loop (nor on
 * which blocks each ran, nor when).  Compute thread only. */
#ifndef ORION_LUA_EXEC_BLOCK_H
#define ORION_LUA_EXEC_BLOCK_H

#include <stdint.h>

#include "executor/accum.h"
#include "util/error.h"

struct orion_exec;

/* One block's partial of one accumulator; block -1: folded outside any
 * block. */
typedef struct orion_block_acc {
  int64_t block;
  int64_t id;
  orion_accval val;
} orion_block_acc;

/* Ends block `block`: moves every bound accumulator's partial that holds
 * a value into the loop's list, leaving it empty (the identity) for the
 * next block.  0, or ORION_ENOMEM with err set. */
int orion_exec_end_block(struct orion_exec *ex, int64_t block,
                         orion_error *err);

/* Hands block `block`'s kept flush = "loop" writes of each buffer that
 * now(ud, buffer id) accepts to the flush sink at once, tagged with the
 * block, and forgets them; the others stay for the loop's end.  With no
 * sink, nothing moves.  The receiver must hold them and apply them in
 * block order with the rest, at the loop's end, so the bits do not depend
 * on when they left.  0, or the sink's error. */
int orion_exec_send_block_writes(struct orion_exec *ex, int64_t block,
                                 int (*now)(void *ud, int64_t buffer),
                                 void *ud, orion_error *err);

/* Takes the loop's list (then any partial folded since the last block,
 * as block -1) into *out (orion_free it; NULL when *n is 0) and empties
 * it.  0, or ORION_ENOMEM with nothing taken. */
int orion_exec_take_block_accs(struct orion_exec *ex, orion_block_acc **out,
                               int64_t *n);

/* Forgets the list (a new loop, or the executor's end). */
void orion__exec_block_reset(struct orion_exec *ex);

#endif
