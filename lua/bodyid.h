/* Identifying a loop body among the functions of its chunk.
 *
 * Lua tells where a function was defined only by its first and last lines
 * and its parameters, which two functions can share (two literals on one
 * line; a factory whose returned function starts on the factory's line).
 * The analysis and the C tier must read the body's own text, so the body
 * is identified by its compiled code instead: the chunk's text is compiled
 * again, and every function in it whose dump (code, constants, upvalues,
 * nested functions, line and debug information) equals the running body's
 * is a candidate.  analysis/resolve.c follows the candidates' places in
 * its own parse of the text and refuses when there is more than one.
 */
#ifndef ORION_LUA_BODYID_H
#define ORION_LUA_BODYID_H

#include <lua.h>

#include "analysis/analyze.h"
#include "util/error.h"

/* Fills body->ncand and body->cand for the Lua function at stack index
 * fidx, from body->src (body->len bytes, the chunk's text) and
 * body->chunkname (for messages).  from_file: the text is a file's, which
 * Lua loaded skipping a UTF-8 byte order mark and a first line starting
 * with '#'.  Returns 0, or nonzero with err set when the text does not
 * compile or no function in it is the body (the file changed since it was
 * loaded).  Leaves the stack as it was; runs on the driver's Lua state. */
int orion_body_identify(lua_State *L, int fidx, int from_file,
                        orion_body_src *body, orion_error *err);

#endif
