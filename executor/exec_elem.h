/* The Lua host's access to what is bound to it (exec_elem.c). */
#ifndef ORION_EXECUTOR_EXEC_ELEM_H
#define ORION_EXECUTOR_EXEC_ELEM_H

#include <lua.h>
#include <stdint.h>

#include "executor/exec_int.h"
#include <stddef.h>

/* The binding, buffer or accumulator slot of id on ex, or NULL.  The
 * pointers stay valid until the next bind or unbind. */
binding *orion__exec_find_array(struct orion_exec *ex, int64_t id);
exec_buffer *orion__exec_find_buffer(struct orion_exec *ex, int64_t id);
acc_slot *orion__exec_find_acc(struct orion_exec *ex, int64_t id);
/* The index of buffer id in ex->bufs, or -1. */
int orion__exec_find_buffer_index(struct orion_exec *ex, int64_t id);

/* Element i of a pushed onto L; the Lua value at vidx stored into it,
 * raising an error that names the array (`kind` "array" or "buffer") when
 * the value does not fit its type (exec_elem.c). */
void orion__exec_push_elem(lua_State *L, const orion_array *a, int64_t i);
void orion__exec_store_elem(lua_State *L, const orion_array *a,
                            const char *kind, const char *name, int64_t i,
                            int vidx);
/* The message handler of bodies and apply functions: the error with a
 * traceback. */
int orion__exec_traceback(lua_State *L);

/* Writes element e's 1-based key "(k1, ..., kn)" into buf[0..n). */
void orion__exec_key_string(const orion_array *a, int64_t e, char *buf,
                            size_t n);

#endif
