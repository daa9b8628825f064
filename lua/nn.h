/* orion.nn: dense and sparse f32 matrix math (OpenBLAS) for neural
 * networks, usable in driver scripts and inside parallel_for bodies.
 *
 * Matrices are userdata of the Lua state that made them (row-major f32,
 * the values inside the userdata so the garbage collector sees their size);
 * compressed-row sparse matrices hold orion_malloc'd arrays freed by __gc.
 * Functions read DistArrays (on the driver) and array or slice proxies (in
 * bodies, lua/exec.h) into matrices, and write matrices back into arrays,
 * slices or buffers.  The reference is docs/apps-dnn.md and the orion.nn
 * section of docs/lua-api.md.
 *
 * OpenBLAS runs on one thread per process unless $ORION_BLAS_THREADS says
 * otherwise (executors share the cores; see nn.threads).
 */
#ifndef ORION_LUA_NN_H
#define ORION_LUA_NN_H

#include <lua.h>

#include "dsm/array.h"

/* Registry key of the nn table of a Lua state (set by the two openers). */
#define ORION_NN_KEY "orion.nn"

/* Pushes the driver's nn table (made once per state and kept at
 * ORION_NN_KEY), with the driver-only readers that make DistArrays.  Called
 * by luaopen_orion (lua/orion.c). */
int orion_nn_open(lua_State *L);

/* Pushes an executor state's nn table (made once per state, kept at
 * ORION_NN_KEY): the same functions; the driver-only ones raise an error
 * saying so.  Called when an executor state is made (lua/exec.c). */
int orion_nn_open_body(lua_State *L);

/* Made in lua/orion.c for the readers here: wraps a (taking over one
 * reference) into a new DistArray pushed onto L (the driver's state). */
struct darray;
struct darray *orion__push_array(lua_State *L, orion_array *a);

#endif
