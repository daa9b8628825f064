/* The sandbox of bodies (exec_sandbox.c). */
#ifndef ORION_EXECUTOR_EXEC_SANDBOX_H
#define ORION_EXECUTOR_EXEC_SANDBOX_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"

/* The sandbox of bodies in state L (executor/exec_sandbox.c): the allow-listed
 * globals that decoded bodies see, and (--allow-io) the state's own
 * globals in their place. */
void orion__exec_sandbox(lua_State *L);
void orion__exec_unsandbox(lua_State *L);

#endif
