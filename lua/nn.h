/* orion.nn: dense and sparse f32 matrix math (OpenBLAS) for neural
 * networks, usable in driver scripts and inside parallel_for bodies.
 *
 * Three files: the binding lua/nn.c (matrices as userdata, array data,
 * one Lua function per kernel; it runs in the driver's and in executors'
 * Lua states and includes nothing of the driver's module), the kernels
 * kernels/nn.c (plain C, no Lua), and lua/nn_driver.c, the driver's half:
 * the readers that make DistArrays and how the binding sees DistArrays.
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

#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>

#include "dsm/array.h"

/* Registry key of the nn table of a Lua state (set by the two openers). */
#define ORION_NN_KEY "orion.nn"

/* Pushes the driver's nn table (made once per state and kept at
 * ORION_NN_KEY), with the driver-only readers that make DistArrays.  Called
 * by luaopen_orion (lua/orion.c); defined in lua/nn_driver.c. */
int orion_nn_open(lua_State *L);

/* Pushes an executor state's nn table (made once per state, kept at
 * ORION_NN_KEY): the same functions; the driver-only ones raise an error
 * saying so.  Called when an executor state is made (lua/exec.c). */
int orion_nn_open_body(lua_State *L);

/* ---- between the binding and its driver half (internal) --------------- */

/* What the driver's module lends the binding: its DistArrays, which nn
 * functions read and write like arrays in bodies. */
typedef struct orion__nn_host {
  /* The array of the DistArray at stack index idx, or NULL when the value
   * there is not a DistArray.  Raises a Lua error naming fn (and what, the
   * argument) for a freed DistArray or a Buffer.  *handle receives what
   * `wrote` takes. */
  const orion_array *(*array_of)(lua_State *L, int idx, const char *fn,
                                 const char *what, void **handle);
  /* nn stored into the array behind handle: copies held elsewhere (the
   * executors') are stale. */
  void (*wrote)(void *handle);
} orion__nn_host;

/* Pushes L's nn table, made once per state (a later call pushes the same
 * table and ignores its arguments).  host (static storage; NULL in an
 * executor's state) is how the binding reaches DistArrays; driver_funcs
 * (NULL: stubs raising "nn.NAME runs on the driver only, ...") are added
 * to the table. */
int orion__nn_open(lua_State *L, const orion__nn_host *host,
                   const luaL_Reg *driver_funcs);

/* The values of the nn matrix at stack index idx (row-major, *rows x
 * *cols, owned by the userdata); raises naming fn and what when the value
 * is not a matrix. */
float *orion__nn_check_matrix(lua_State *L, int idx, const char *fn,
                              const char *what, int64_t *rows,
                              int64_t *cols);

#endif
