/* orion.import_text(src, opts) -> stats (see lua/textimport.h).
 *
 *   opts: docword = PATH (required), vocab_out = PATH, names = PATH,
 *         stoplist = PATH, vocab = PATH (a fixed vocabulary),
 *         skip_header = bool, min_df = N (default 1), max_df = F in
 *         (0, 1] (default 1)
 *   stats: { docs, words, nnz, tokens, stopped, pruned }
 *
 * A bad option or a failed import raises a Lua error with the message of
 * dsm/textbow.c (naming the file and line). */
#include <lauxlib.h>
#include <string.h>

#include "dsm/textbow.h"
#include "lua/textimport.h"

static const char *opt_str(lua_State *L, const char *key) {
  const char *s;
  lua_getfield(L, 2, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TSTRING)
    luaL_error(L, "orion.import_text: opts.%s must be a path", key);
  s = lua_tostring(L, -1);
  lua_pop(L, 1); /* still referenced by the opts table */
  return s;
}

static int l_import_text(lua_State *L) {
  const char *src = luaL_checkstring(L, 1);
  orion_textbow_opts o;
  orion_textbow_stats st;
  char err[1024];
  int isnum;
  luaL_checktype(L, 2, LUA_TTABLE);
  memset(&o, 0, sizeof o);
  o.docword = opt_str(L, "docword");
  if (o.docword == NULL)
    return luaL_error(L, "orion.import_text: opts.docword is required");
  o.vocab_out = opt_str(L, "vocab_out");
  o.names_out = opt_str(L, "names");
  o.stoplist = opt_str(L, "stoplist");
  o.vocab_in = opt_str(L, "vocab");
  lua_getfield(L, 2, "skip_header");
  o.skip_header = lua_toboolean(L, -1);
  lua_getfield(L, 2, "min_df");
  o.min_df = lua_isnil(L, -1) ? 1 : lua_tointegerx(L, -1, &isnum);
  if (!lua_isnil(L, -1) && (!isnum || o.min_df < 1))
    return luaL_error(L, "orion.import_text: opts.min_df must be an integer "
                         "of at least 1");
  lua_getfield(L, 2, "max_df");
  o.max_df = lua_isnil(L, -1) ? 1.0 : lua_tonumberx(L, -1, &isnum);
  if (!lua_isnil(L, -1) && (!isnum || !(o.max_df > 0) || o.max_df > 1))
    return luaL_error(L, "orion.import_text: opts.max_df must be in (0, 1]");
  lua_pop(L, 3);
  if (orion_textbow_import(src, &o, &st, err, sizeof err) != 0)
    return luaL_error(L, "%s", err);
  {
    static const char *const keys[] = {"docs",   "words",   "nnz",
                                       "tokens", "stopped", "pruned"};
    const int64_t vals[] = {st.docs,   st.words,   st.nnz,
                            st.tokens, st.stopped, st.pruned};
    int i;
    lua_createtable(L, 0, 6);
    for (i = 0; i < 6; i++) {
      lua_pushinteger(L, vals[i]);
      lua_setfield(L, -2, keys[i]);
    }
  }
  return 1;
}

void orion__open_textimport(lua_State *L) {
  static const luaL_Reg funcs[] = {{"import_text", l_import_text},
                                   {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
}
