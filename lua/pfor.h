/* parallel_for, orion.explain and orion.buffer (lua/pfor.c): the Lua side
 * of a loop launch. */
#ifndef ORION_LUA_PFOR_H
#define ORION_LUA_PFOR_H

#include <lua.h>

/* Adds parallel_for, explain and buffer to the module table on top of the
 * stack and creates the Buffer metatable. */
void orion__open_pfor(lua_State *L);

#endif
