/* The driver's source text store (lua/srcstore.c): the text of every chunk
 * loaded from a file (the main script, dofile, loadfile, require), kept as
 * it was loaded, so that the dependence analysis and the C code generator
 * read the text the interpreter runs even when the file is edited or
 * rewritten afterwards (issue 33, class 6).  docs/analysis.md, "Names",
 * says what a script sees. */
#ifndef ORION_LUA_SRCSTORE_H
#define ORION_LUA_SRCSTORE_H

#include <lua.h>
#include <stddef.h>

/* The registry's table "@path" -> the text loaded from path, or false
 * when path was loaded more than once with different texts. */
#define SRCSTORE_KEY "orion.srcstore"

/* Replaces the globals loadfile and dofile and the file searcher of
 * require (package.searchers[2]) in L with versions that keep each
 * chunk's text in the store; loadfile() and dofile() of standard input
 * keep their old behaviour.  Call once, after luaL_openlibs, on the
 * driver's Lua thread. */
void orion_srcstore_install(lua_State *L);

/* Loads the file at path as a chunk named "@path" the way luaL_loadfilex
 * does (a UTF-8 byte-order mark and a first line starting with '#' are
 * skipped, keeping line numbers; mode as for load), keeping its text in
 * the store unless it is a precompiled chunk.  Pushes the function, or
 * an error message ("cannot open PATH: ..."), and returns LUA_OK or the
 * error status (LUA_ERRFILE, LUA_ERRSYNTAX, ...). */
int orion_srcstore_loadfile(lua_State *L, const char *path, const char *mode);

/* The text the chunk named `source` ("@path") was loaded with: 1 with
 * *text and *len set (the bytes belong to the store and live as long as
 * L; copy them before anything can load the same path again), 0 when no
 * chunk of that name went through the store, -1 when it was loaded more
 * than once with different texts (so which one a function comes from is
 * unknown). */
int orion_srcstore_text(lua_State *L, const char *source, const char **text,
                        size_t *len);

#endif
