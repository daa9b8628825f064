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

/* The registry's table "@path" -> the list of the distinct texts loaded
 * from path, oldest first. */
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

/* The texts the chunks named `source` ("@path") were loaded with: returns
 * how many distinct texts were loaded under that name (0 when no chunk of
 * that name went through the store; more than 1 when the file changed
 * between loads), and for 1 <= k <= that count sets *text and *len to the
 * k-th, oldest first (the bytes belong to the store and live as long as
 * L; copy them before anything can load the same path again). */
int orion_srcstore_text(lua_State *L, const char *source, int k,
                        const char **text, size_t *len);

#endif
