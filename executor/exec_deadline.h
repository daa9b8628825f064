/* The loop deadline (exec_deadline.c). */
#ifndef ORION_EXECUTOR_EXEC_DEADLINE_H
#define ORION_EXECUTOR_EXEC_DEADLINE_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"
#include "util/cbody.h"

/* The loop deadline (executor/exec_deadline.c).  _start before a block runs
 * (the deadline is now + the timeout; an interpreted body gets the count
 * hook that stops it), _stop after it; the compiled body's poll
 * (util/cbody.h), which sets c->err once the block is past its deadline
 * (c->ud is the executor). */
void orion__exec_deadline_start(struct orion_exec *ex, int64_t block);
/* Wraps xpcall in L's globals so that its message handler cannot hold a
 * body past its deadline (called once, before the sandbox copies them). */
void orion__exec_deadline_open(lua_State *L);
void orion__exec_deadline_stop(struct orion_exec *ex);
/* After each element of an interpreted body returns: raises the deadline's
 * error in L (outside the body, where nothing catches it) if the block
 * went past its deadline while the element ran. */
void orion__exec_deadline_check(lua_State *L, struct orion_exec *ex);
int orion__exec_cpoll(orion_cctx *c);

#endif
