/* orion.checkpoint, orion.restore, orion.step and orion.checkpoint_dir
 * (lua/checkpoint.c, issue 19): what a checkpoint holds of the driver's
 * Lua state and module, and how it is put back.  The files themselves are
 * dsm/ckpt.h's. */
#ifndef ORION_LUA_CHECKPOINT_H
#define ORION_LUA_CHECKPOINT_H

#include <lua.h>
#include <stdint.h>

/* Adds checkpoint, restore, step and checkpoint_dir to the module table on
 * top of the stack. */
void orion__open_checkpoint(lua_State *L);

/* --checkpoint-dir (NULL: none), --resume and --force. */
void orion__checkpoint_configure(lua_State *L, const char *dir, int resume,
                                 int force);

/* For the driver's recovery (drivers/recover.c): the step of the last
 * checkpoint this run wrote or resumed from (-1: none) and the step the
 * script last reached (orion.step or orion.checkpoint; -1: unknown). */
void orion_checkpoint_progress(lua_State *L, int64_t *saved, int64_t *cur);

#endif
