/* Identifying a loop body by its compiled code (see bodyid.h). */
#include "lua/bodyid.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/bcscan.h"
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

int orion_body_identify(lua_State *L, int fidx, int from_file,
                        orion_body_src *body, orion_error *err) {
  orion_buf bdump, cdump;
  orion_bc_func *bfn = NULL, *cfn = NULL;
  int bn = 0, cn = 0, i, rc;
  fidx = lua_absindex(L, fidx);
  body->ncand = 0;
  orion_buf_init(&cdump);
  lua_pushvalue(L, fidx);
  rc = dump_functions(L, &bdump, &bfn, &bn, err);
  lua_pop(L, 1);
  if (rc == 0 && (rc = compile_chunk(L, from_file, body, err)) == 0) {
    rc = dump_functions(L, &cdump, &cfn, &cn, err);
    lua_pop(L, 1);
  }
  /* The main function (0) is never a body: it has no parameters. */
  for (i = 1; rc == 0 && i < cn; i++) {
    const orion_bc_func *c = &cfn[i];
    if (c->len != bfn[0].len ||
        memcmp(cdump.data + c->start, bdump.data + bfn[0].start,
               c->len) != 0)
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
  orion_free(bfn);
  orion_free(cfn);
  orion_buf_free(&bdump);
  orion_buf_free(&cdump);
  return rc;
}
