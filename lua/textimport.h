/* orion.import_text (lua/textimport.c): the Lua face of dsm/textbow.h,
 * raw text to a UCI docword file and its vocabulary on the driver. */
#ifndef ORION_LUA_TEXTIMPORT_H
#define ORION_LUA_TEXTIMPORT_H

#include <lua.h>

/* Adds import_text to the module table at the top of L's stack. */
void orion__open_textimport(lua_State *L);

#endif
