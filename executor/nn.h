/* orion.nn: dense and sparse f32 matrix math (OpenBLAS) for neural
 * networks, usable in driver scripts and inside parallel_for bodies.
 *
 * The binding executor/nn.c (matrices as userdata, array data, one Lua function
 * per kernel) runs in the driver's and in executors' Lua states and
 * includes neither side: each side lends it its array data through an
 * orion__nn_host when it opens orion.nn, the driver's module from
 * lua/nn_driver.c (DistArrays, and the driver-only readers that make
 * them), an executor's Lua host from executor/exec.c (the proxies bodies
 * see).  The math is kernels/nn_math.c (plain C, no Lua).
 *
 * Matrices are userdata of the Lua state that made them (row-major f32,
 * the values inside the userdata so the garbage collector sees their size);
 * compressed-row sparse matrices hold orion_malloc'd arrays freed by __gc.
 * Functions read DistArrays (on the driver) and array or slice proxies (in
 * bodies, executor/exec.h) into matrices, and write matrices back into arrays,
 * slices or buffers.  The reference is docs/apps-dnn.md and the orion.nn
 * section of docs/lua-api.md.
 *
 * On an executor with a GPU (orion_nn_set_gpu), the kernels run there
 * (executor/nn_dev.c, kernels/nn_gpu.h).
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
#include "gpu/gpu.h"

/* Registry key of the nn table of a Lua state (set by the two openers). */
#define ORION_NN_KEY "orion.nn"

/* Pushes the driver's nn table (made once per state and kept at
 * ORION_NN_KEY), with the driver-only readers that make DistArrays.  Called
 * by luaopen_orion (lua/orion.c); defined in lua/nn_driver.c. */
int orion_nn_open(lua_State *L);

/* Pushes an executor state's nn table (made once per state, kept at
 * ORION_NN_KEY): the same functions; the driver-only ones raise an error
 * saying so.  Called when an executor state is made (executor/exec.c); defined
 * in executor/exec.c. */
int orion_nn_open_body(lua_State *L);

/* Runs L's orion.nn kernels on device g from now on (g NULL: on the CPU
 * again): GEMM, sparse products and softmax cross-entropy on the device,
 * element-wise kernels there when an operand is; matrices keep a device
 * copy coherent with their host values (executor/nn_int.h), so results are the
 * CPU's within fp32 rounding (kernels/nn_gpu.h).  nn.device() then names
 * g.  g must stay open until L is closed (matrices free their device
 * copies when collected).  Returns 0, or the code of allocating the
 * state's small device scratch with err set.  Defined in executor/nn_dev.c. */
int orion_nn_set_gpu(lua_State *L, orion_gpu *g, orion_error *err);

/* ---- between the binding and its driver half (internal) --------------- */

/* Array data as the binding sees it: the elements of `a` below `depth`
 * fixed leading subscripts, from element `off`. */
typedef struct orion__nn_data {
  const orion_array *a; /* valid while the Lua value it came from is */
  int64_t off;
  int depth;
  const char *name;     /* for messages */
  void *buffer;         /* non-NULL: a write buffer, written through the
                           host's pend, never into `a` */
  int64_t id;           /* the host's array id (orion-driver --verify) */
  void *keys;           /* the host's key recorder, or NULL */
  void *handle;         /* the host's, for its wrote */
  const void *guard;    /* the host's runtime guard: non-NULL, nn must not
                           store into `a` (the host's refuse raises) */
} orion__nn_data;

/* What the owner of a Lua state lends the binding: its array data. */
typedef struct orion__nn_host {
  /* Fills *d from the value at stack index idx and returns 1, or returns 0
   * when that value is not array data of this host.  Raises a Lua error
   * naming fn (and what, the argument) for a value the host knows but nn
   * cannot use (a freed DistArray, a Buffer on the driver). */
  int (*data_of)(lua_State *L, int idx, const char *fn, const char *what,
                 orion__nn_data *d);
  /* nn stored into d's array (not a buffer); NULL: nothing to tell. */
  void (*wrote)(const orion__nn_data *d);
  /* d is a buffer: pends x (minus x0 when not NULL, times alpha, or set
   * when replace) at elements first.. of d, as orion_exec_view_pend does
   * (executor/exec.h).  Returns 0, ORION_EINVAL (an integer target) or
   * ORION_ENOMEM.  NULL for a host without buffers. */
  int (*pend)(const orion__nn_data *d, int64_t first, const float *x,
              const float *x0, int64_t n, double alpha, int replace);
  /* d->guard is set and nn is about to store into d's array: raises the
   * host's error (an executor's runtime guard, executor/exec.h).  NULL for a
   * host that never sets guard. */
  void (*refuse)(lua_State *L, const orion__nn_data *d);
  /* nn reads (write 0) or stores into (1) elements first..first+n-1 of
   * d's array (from d->off): orion-driver --verify records them when
   * d->keys is set (executor/exec_keys.h).  NULL: nothing to record. */
  void (*touch)(lua_State *L, const orion__nn_data *d, int64_t first,
                int64_t n, int write);
} orion__nn_host;

/* Pushes L's nn table, made once per state (a later call pushes the same
 * table and ignores its arguments).  host (static storage) is how the
 * binding reaches array data in L; driver_funcs (NULL: stubs raising
 * "nn.NAME runs on the driver only, ...") are added to the table. */
int orion__nn_open(lua_State *L, const orion__nn_host *host,
                   const luaL_Reg *driver_funcs);

/* The values of the nn matrix at stack index idx (row-major, *rows x
 * *cols, owned by the userdata); raises naming fn and what when the value
 * is not a matrix. */
float *orion__nn_check_matrix(lua_State *L, int idx, const char *fn,
                              const char *what, int64_t *rows,
                              int64_t *cols);

#endif
