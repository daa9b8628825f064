/* Ragged arrays on the driver (lua/orion_ragged.c). */
#ifndef ORION_LUA_ORION_RAGGED_H
#define ORION_LUA_ORION_RAGGED_H

#include <lua.h>

#include "dsm/array.h"

/* Makes a (a DistArray's array) ragged, or raises the error naming what. */
void orion__ragged_rows(lua_State *L, orion_array *a, const char *what);
/* Adds orion.ragged to the module table on top of L. */
void orion__open_ragged(lua_State *L);

#endif
