/* Identifying a loop body by its compiled code (see bodyid.h). */
#include "lua/bodyid.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "executor/bcscan.h"
#include "util/alloc.h"
#include "util/buf.h"

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  orion_buf_append(ud, p, sz);
  return 0;
}

/* Dumps the function on top of the stack (with its debug information)
 * and lists its functions into *fn / *n (orion_free it). */
static int dump_functions(lua_State *L, orion_buf *dump, orion_bc_func **fn,
                          int *n, orion_error *err) {
  orion_buf_init(dump);
  lua_dump(L, dump_writer, dump, 0);
  if (dump->oom)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  return orion_bcscan_functions(dump->data, dump->len, fn, n, err);
}

/* The place of function i of the list: the chain of its child numbers
 * from the main function down. */
static int place_of(const orion_bc_func *fn, int i, orion_body_path *p) {
  int k, depth = 0;
  for (k = i; fn[k].parent >= 0; k = fn[k].parent)
    depth++;
  if (depth > ORION_BODY_MAXDEPTH)
    return -1;
  p->depth = depth;
  for (k = i; fn[k].parent >= 0; k = fn[k].parent)
    p->idx[--depth] = fn[k].child;
  return 0;
}

/* The body is not in the text at hand: a file edited since it was loaded,
 * or a chunk loaded from a string under a name, of which Lua keeps only
 * the name. */
static int not_there(const orion_body_src *body, int from_file,
                     const char *why, orion_error *err) {
  return orion_error_set(
      err, ORION_EINVAL, "%s:%d: cannot find the body's source (lines "
      "%d-%d): %s; %s", body->chunkname, body->line_defined,
      body->line_defined, body->last_line, why,
      from_file ? "was the file changed after it was loaded?"
                : "a chunk loaded from a string under a chunk name keeps "
                  "only the name, not the text (load it without a name)");
}

/* Compiles the chunk's text as Lua did when it was loaded and pushes the
 * main function, or returns nonzero with err set (and nothing pushed). */
static int compile_chunk(lua_State *L, int from_file,
                         const orion_body_src *body, orion_error *err) {
  const char *s = body->src;
  size_t len = body->len;
  if (from_file) {
    /* luaL_loadfilex skips a UTF-8 byte order mark, then a first line
     * starting with '#' but not its newline, so line numbers stay. */
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
      s += 3;
      len -= 3;
    }
    if (len > 0 && s[0] == '#') {
      const char *nl = memchr(s, '\n', len);
      len = nl != NULL ? len - (size_t)(nl - s) : 0;
      s = nl != NULL ? nl : s + len;
    }
  }
  char name[300];
  /* "=name": Lua's messages then read "name:line:". */
  snprintf(name, sizeof name, "=%s", body->chunkname);
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    char why[600];
    snprintf(why, sizeof why, "the %s does not compile (%s)",
             from_file ? "file's text" : "chunk's source",
             lua_tostring(L, -1));
    lua_pop(L, 1);
    return not_there(body, from_file, why, err);
  }
  return 0;
}

/* Pushes the dump of the chunk compiled from body->src, or returns nonzero
 * with err set and nothing pushed.  Compiling a script of a few hundred
 * lines costs about as much as the rest of a loop's launch, and a training
 * script launches the same loops again and again; so the registry keeps
 * the last dump of each chunk name with the text it was compiled from,
 * and it is used again only while the text is the same (a file edited
 * since is compiled anew). */
static int push_chunk_dump(lua_State *L, int from_file,
                           const orion_body_src *body, orion_error *err) {
  int top = lua_gettop(L);
  orion_buf d;
  if (lua_getfield(L, LUA_REGISTRYINDEX, "orion.bodyid") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "orion.bodyid");
  }
  if (lua_getfield(L, top + 1, body->chunkname) == LUA_TTABLE) {
    size_t tlen;
    const char *t;
    lua_getfield(L, top + 2, "text");
    lua_getfield(L, top + 2, "file");
    t = lua_tolstring(L, -2, &tlen);
    if (t != NULL && tlen == body->len && memcmp(t, body->src, tlen) == 0 &&
        lua_toboolean(L, -1) == from_file) {
      lua_getfield(L, top + 2, "dump");
      lua_replace(L, top + 1);
      lua_settop(L, top + 1);
      return 0;
    }
  }
  lua_settop(L, top + 1);
  if (compile_chunk(L, from_file, body, err) != 0) {
    lua_settop(L, top);
    return err->code;
  }
  orion_buf_init(&d);
  lua_dump(L, dump_writer, &d, 0);
  lua_pop(L, 1);
  if (d.oom) {
    orion_buf_free(&d);
    lua_settop(L, top);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  lua_pushlstring(L, d.data, d.len);
  orion_buf_free(&d);
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, body->src, body->len);
  lua_setfield(L, -2, "text");
  lua_pushboolean(L, from_file);
  lua_setfield(L, -2, "file");
  lua_pushvalue(L, top + 2);
  lua_setfield(L, -2, "dump");
  lua_setfield(L, top + 1, body->chunkname);
  lua_replace(L, top + 1);
  return 0;
}

int orion_body_identify(lua_State *L, int fidx, int from_file,
                        orion_body_src *body, orion_error *err) {
  orion_buf bdump;
  orion_bc_func *bfn = NULL, *cfn = NULL;
  const char *cdump;
  size_t clen;
  int bn = 0, cn = 0, i, rc;
  fidx = lua_absindex(L, fidx);
  body->ncand = 0;
  /* The chunk's dump first: it is the part that may raise a Lua error
   * (out of memory), before anything below is allocated. */
  if ((rc = push_chunk_dump(L, from_file, body, err)) != 0)
    return rc;
  cdump = lua_tolstring(L, -1, &clen);
  rc = orion_bcscan_functions(cdump, clen, &cfn, &cn, err);
  lua_pushvalue(L, fidx);
  if (rc == 0)
    rc = dump_functions(L, &bdump, &bfn, &bn, err);
  else
    orion_buf_init(&bdump);
  lua_pop(L, 1);
  /* The main function (0) is never a body: it has no parameters. */
  for (i = 1; rc == 0 && i < cn; i++) {
    const orion_bc_func *c = &cfn[i];
    if (c->len != bfn[0].len ||
        memcmp(cdump + c->start, bdump.data + bfn[0].start, c->len) != 0)
      continue;
    if (body->ncand < ORION_BODY_MAXCAND &&
        place_of(cfn, i, &body->cand[body->ncand]) != 0)
      rc = orion_error_set(err, ORION_EUNSUPPORTED,
                           "%s:%d: the body is nested more than %d "
                           "functions deep; the analysis does not follow "
                           "it",
                           body->chunkname, body->line_defined,
                           ORION_BODY_MAXDEPTH);
    body->ncand++;
  }
  if (rc == 0 && body->ncand == 0)
    rc = not_there(body, from_file,
                   from_file ? "no function in the file's text compiles to "
                               "the body's code"
                             : "no function in the chunk's source compiles "
                               "to the body's code",
                   err);
  lua_pop(L, 1);
  orion_free(bfn);
  orion_free(cfn);
  orion_buf_free(&bdump);
  return rc;
}
