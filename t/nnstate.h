/* For t/test_nndev.c and t/gpu_nn.c: a Lua state with orion.nn opened as
 * an executor opens it, its kernels on g (NULL: the CPU).  NULL with err
 * set when orion_nn_set_gpu fails. */
#ifndef ORION_T_NNSTATE_H
#define ORION_T_NNSTATE_H

#include <lauxlib.h>
#include <lualib.h>

#include "executor/nn.h"

static inline lua_State *tu_nn_state(orion_gpu *g, orion_error *err) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  orion_nn_open_body(L);
  lua_pop(L, 1);
  orion_error_clear(err);
  if (orion_nn_set_gpu(L, g, err) != 0) {
    lua_close(L);
    return NULL;
  }
  return L;
}

#endif
