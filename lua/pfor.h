/* parallel_for, orion.explain and orion.buffer (lua/pfor.c): the Lua side
 * of a loop launch. */
#ifndef ORION_LUA_PFOR_H
#define ORION_LUA_PFOR_H

#include <lua.h>
#include <stddef.h>

/* Adds parallel_for, explain and buffer to the module table on top of the
 * stack and creates the Buffer metatable. */
void orion__open_pfor(lua_State *L);

/* lua/pfor_explain.c.  Under --explain, prints text (the plan of the loop
 * at `where`) the first time the script reaches that call site; raises
 * the stop error when --explain-only has already stopped the script. */
void orion__explain_site(lua_State *L, const char *where, const char *text);

/* Marks the call site `where` in the registry table regkey (made on first
 * use); 1 when it was not marked yet (lua/pfor_explain.c). */
int orion__first_at(lua_State *L, const char *regkey, const char *where);
/* Raises the stop error when --explain-only's count of call sites is
 * reached: the loop does not run, and the script ends. */
void orion__explain_check_stop(lua_State *L);
/* orion_module_stopped (lua/orion.h). */
int orion__explain_stopped(lua_State *L, int idx, char *line, size_t n);

#endif
