/* The driver's plan cache (lua/plancache.c): a training script launches
 * the same loops epoch after epoch, and analysing a body (its source
 * parsed, its names resolved, its C generated) costs about as much as the
 * rest of a launch.  An analysis is kept per call site, body code, loop
 * options and iterated array, and used again while every binding the
 * analysis and the generator read still answers the same
 * (orion__analysis_same). */
#ifndef ORION_LUA_PLANCACHE_H
#define ORION_LUA_PLANCACHE_H

#include <lua.h>
#include <stddef.h>

#include "lua/analyse.h"

/* Pushes the cache key of the loop about to start (the iterated array at
 * stack index 1, the body at 2, called from the function one level up;
 * opts: the bytes of the options the plan depends on, name: opts.name or
 * NULL), or nil when the body cannot be keyed (a C function). */
void orion__plan_key(lua_State *L, const darray *it, const char *name,
                     const void *opts, size_t optslen);

/* With the key at kidx (nil: a miss): the kept analysis, pushed, if its
 * bindings still answer the same; else NULL and nothing pushed. */
analysis *orion__plan_lookup(lua_State *L, int kidx);

/* Keeps the analysis box at aidx under the key at kidx (nil: nothing is
 * kept; nor is an analysis whose ->cacheable is 0).  A string-chunk
 * body's source, which the analysis points into, is copied first. */
void orion__plan_store(lua_State *L, int kidx, int aidx);

#endif
