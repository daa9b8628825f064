/* TensorBoard event files (a TFRecord of Event protobufs), the parts
 * lua/orion/train.lua cannot do in Lua: the CRC-32C framing and making
 * the file.
 *
 *   orion.tfrecord(data)     -> one TFRecord record holding data
 *   orion.tfevents_file(dir) -> the path of a new, empty event file
 *
 * See docs/training.md ("TensorBoard"). */
#ifndef ORION_LUA_TFEVENTS_H
#define ORION_LUA_TFEVENTS_H

#include <lua.h>

/* Adds orion.tfrecord and orion.tfevents_file to the module table at the
 * top of L. */
void orion_tfevents_open(lua_State *L);

#endif
