/* The capture codec: a loop body (a Lua closure) and everything it captures,
 * encoded into bytes on the driver and decoded into another Lua state on an
 * executor.
 *
 * Plain values (nil, booleans, numbers, strings, tables of them) are copied;
 * Lua functions travel as bytecode (not stripped, so errors keep the script's
 * file and line) with their upvalues encoded by the same rules; standard
 * library functions and tables travel by name; DistArrays, accumulators and
 * buffers travel as ids that the executor binds to its own objects.  The
 * body's _ENV becomes a table holding the globals it reads (resolved at
 * launch), over the executor's standard library.  Anything else (userdata
 * other than arrays, accumulators and buffers, coroutines, C functions
 * outside the standard library, tables with metatables) is refused with a
 * message naming it.
 */
#ifndef ORION_LUA_CAPTURE_H
#define ORION_LUA_CAPTURE_H

#include <lua.h>
#include <stdint.h>

#include "util/buf.h"

#define ORION_CAPTURE_ARRAY 'A'
#define ORION_CAPTURE_ACC 'C'
#define ORION_CAPTURE_BUFFER 'B'

/* The registry field holding the globals decoded functions see: their
 * global environment falls back to it, and standard names captured by
 * reference resolve in it.  An executor's state holds the sandbox of loop
 * bodies there (executor/exec_sandbox.c); without the field, the state's own
 * globals serve. */
#define ORION_CAPTURE_GLOBALS "orion.capture.globals"

/* Driver side: classifies a userdata at idx.  Returns ORION_CAPTURE_ARRAY,
 * ORION_CAPTURE_ACC or ORION_CAPTURE_BUFFER and fills *id, or 0 when it
 * cannot be shipped. */
typedef int (*orion_capture_classify_fn)(lua_State *L, int idx, int64_t *id,
                                         void *ud);

/* What a body refers to, collected while encoding (ids in first-seen order,
 * each once).  Owned by the caller; free with orion_capture_info_free. */
typedef struct orion_capture_info {
  int64_t *arrays;
  int narrays;
  int64_t *accs;
  int naccs;
  int64_t *buffers;
  int nbuffers;
} orion_capture_info;

void orion_capture_info_free(orion_capture_info *info);

/* Encodes the Lua function at index fidx of L into out and fills info
 * (NULL when the caller does not need it).  Returns 0, or ORION_ECAPTURE
 * with err holding a message that names the offending value (e.g. "upvalue
 * 'f' is a userdata ...").  Runs on the driver's thread; may use the Lua
 * stack temporarily but leaves it balanced. */
int orion_capture_encode(lua_State *L, int fidx,
                         orion_capture_classify_fn classify, void *ud,
                         orion_buf *out, orion_capture_info *info, char *err,
                         size_t errlen);

/* Refuses a loop body (the Lua function at fidx) that assigns one of its
 * upvalues, in its own code or in a closure made inside it: such an
 * upvalue is a local of the script, each executor (and the driver with
 * --executors 0) runs the body on its own copy, and the assignment would
 * be lost without a word.  Returns 0, or ORION_ECAPTURE with err naming
 * the upvalue and its first assignment's file:line and saying what
 * combines values instead (ORION_ENOMEM when out of memory).  A body from
 * stripped bytecode, which names nothing, is not refused.  Only
 * parallel_for calls it: a helper or a buffer's apply function may keep
 * state of its own on each executor.  Leaves the stack balanced. */
int orion_capture_check_assigns(lua_State *L, int fidx, char *err,
                                size_t errlen);

/* Executor side: pushes the object bound to (kind, id) onto L, or returns
 * nonzero (ORION_ECAPTURE).  kind is ORION_CAPTURE_ARRAY, ORION_CAPTURE_ACC, ORION_CAPTURE_BUFFER
 * or 'M' (the orion module, id 0).  name is the upvalue or global name an
 * array or buffer was captured under ("array" / "buffer" when it has none);
 * for the others it carries no meaning. */
typedef int (*orion_capture_resolve_fn)(lua_State *L, int kind, int64_t id,
                                        const char *name, void *ud);

/* Decodes blob into a function pushed onto L.  Returns 0, or ORION_EPARSE
 * (malformed blob) / ORION_ECAPTURE (unresolvable reference) with err set,
 * pushing nothing. */
int orion_capture_decode(lua_State *L, const char *blob, size_t len,
                         orion_capture_resolve_fn resolve, void *ud,
                         char *err, size_t errlen);

#endif
