/* Buffers' script names and helper arrays on the driver (issue 21):
 * orion.buffer's `with` option, the names that its messages and the
 * executors' use, the check that an apply function captures no
 * DistArray, the capture of an apply function with its helpers, and
 * their --explain lines (lua/buffer_with.c). */
#ifndef ORION_LUA_BUFFER_WITH_H
#define ORION_LUA_BUFFER_WITH_H

#include <lua.h>
#include <lauxlib.h>
#include <stddef.h>

#include "scheduler/module.h"
#include "util/buf.h"

/* Fills b->name and b->target_name: the names the calling script gives
 * the buffer (the variable `local G = orion.buffer(...)` assigns, read
 * from the call's source line) and its target (at tidx: a local, upvalue
 * or global of the caller). */
void orion__buffer_names(lua_State *L, int tidx, dbuffer *b);

/* Reads opts.with (opts at optidx, the target at tidx) into b and, as
 * uservalue 3 of the buffer userdata at budx, the list of helper arrays.
 * Raises an error naming the buffer and the arrays when a helper is not
 * a dense array of the target's dims and type, repeats, is the target,
 * or `with` comes without an apply function. */
void orion__buffer_with(lua_State *L, int optidx, int tidx, int budx,
                        dbuffer *b);

/* Checks that the apply function of the buffer userdata at budx captures
 * no DistArray (not its target, not a helper, no other).  Returns 0, or
 * ORION_ECAPTURE with a message in msg naming the buffer and the array
 * (prefixed with `who`: "orion.buffer" or "parallel_for"). */
int orion__buffer_check_apply(lua_State *L, int budx, const char *who,
                              char *msg, size_t n);

/* Encodes the apply function of buffer b (userdata at budx) into blob: the
 * function itself, or with helpers a closure returning the function and a
 * table {nhelpers, name1, id1, ...} (executor/exec.c unwraps it).  Returns 0 or
 * a capture error code with msg set. */
int orion__buffer_capture(lua_State *L, int budx, const dbuffer *b,
                          orion_buf *blob, char *msg, size_t n);

/* --explain: one line per live buffer with helpers whose target is one of
 * targets[0..n), appended to out. */
void orion__buffer_explain(lua_State *L, const int64_t *targets, int n,
                           orion_buf *out);

#endif
