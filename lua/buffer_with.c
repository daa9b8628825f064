/* Buffers' script names and helper arrays on the driver (issue 21).
 *
 * orion.buffer(target, {apply = f, with = {A, B}}) gives the apply
 * function helper arrays: f(old, delta, a, b, k1, ..., kn) returns the new
 * target value and, optionally, new values of A and B at that key.  A
 * helper has the target's dims and element type, so that it is placed
 * with the target key for key wherever the target's elements are applied
 * (the driver, or the owners of its shards: lua/dist_with.c).  An apply
 * function reaches arrays only that way: one that captures a DistArray is
 * refused here, with the names the script uses, never internal ids.
 */
#include "config.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "lua/buffer_with.h"

#include "executor/capture.h"
#include "executor/exec.h"
#include "util/error.h"

#define WRAP_CHUNK "=orion.buffer.with" /* executor/exec.c knows this name */

/* ---- names ---------------------------------------------------------------- */

static int is_ident(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

/* The name a value at idx has in the calling script: a local or upvalue
 * of the function at level 1, or a global; 0 when none. */
static int caller_name(lua_State *L, int idx, char *buf, size_t size) {
  lua_Debug ar;
  const char *n;
  int i, found = 0;
  idx = lua_absindex(L, idx);
  if (lua_getstack(L, 1, &ar)) {
    for (i = 1; !found && (n = lua_getlocal(L, &ar, i)) != NULL; i++) {
      if (lua_rawequal(L, -1, idx) && n[0] != '(') {
        snprintf(buf, size, "%s", n);
        found = 1;
      }
      lua_pop(L, 1);
    }
    if (!found && lua_getinfo(L, "f", &ar)) {
      int f = lua_gettop(L);
      for (i = 1; !found && (n = lua_getupvalue(L, f, i)) != NULL; i++) {
        if (lua_rawequal(L, -1, idx)) {
          snprintf(buf, size, "%s", n);
          found = 1;
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  if (!found) {
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (!found && lua_type(L, -2) == LUA_TSTRING &&
          lua_rawequal(L, -1, idx)) {
        snprintf(buf, size, "%s", lua_tostring(L, -2));
        found = 1;
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return found;
}

/* Line `line` (1-based) of the caller's source into out; 0 when there is
 * no such line to read. */
static int source_line(lua_State *L, char *out, size_t size) {
  lua_Debug ar;
  int line = 1, len = 0;
  if (!lua_getstack(L, 1, &ar) || !lua_getinfo(L, "Sl", &ar) ||
      ar.currentline < 1)
    return 0;
  if (ar.source[0] == '@') {
    FILE *f = fopen(ar.source + 1, "r");
    int c;
    if (f == NULL)
      return 0;
    while ((c = getc(f)) != EOF && line <= ar.currentline) {
      if (c == '\n')
        line++;
      else if (line == ar.currentline && len + 1 < (int)size)
        out[len++] = (char)c;
    }
    fclose(f);
  } else if (ar.source[0] != '=') { /* the chunk is its own source */
    const char *p;
    for (p = ar.source; *p != '\0' && line <= ar.currentline; p++) {
      if (*p == '\n')
        line++;
      else if (line == ar.currentline && len + 1 < (int)size)
        out[len++] = *p;
    }
  }
  out[len] = '\0';
  return len > 0;
}

/* "NAME = orion.buffer(" (or "= buffer(", any prefix) in line: NAME. */
static int assigned_name(const char *line, char *out, size_t size) {
  const char *p = line;
  while ((p = strstr(p, "buffer")) != NULL) {
    const char *q = p + 6, *e, *s;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '(' || (p > line && is_ident((unsigned char)p[-1]))) {
      p += 6;
      continue;
    }
    s = p;
    while (s > line && (is_ident((unsigned char)s[-1]) || s[-1] == '.'))
      s--; /* "orion." */
    while (s > line && (s[-1] == ' ' || s[-1] == '\t'))
      s--;
    if (s == line || s[-1] != '=' ||
        (s - 1 > line && strchr("=~<>", s[-2]) != NULL))
      return 0;
    s--;
    while (s > line && (s[-1] == ' ' || s[-1] == '\t'))
      s--;
    e = s;
    while (s > line && is_ident((unsigned char)s[-1]))
      s--;
    if (e == s || (s[0] >= '0' && s[0] <= '9'))
      return 0;
    snprintf(out, size, "%.*s", (int)(e - s), s);
    return 1;
  }
  return 0;
}

void orion__buffer_names(lua_State *L, int tidx, dbuffer *b) {
  char line[512], name[64];
  if (!caller_name(L, tidx, b->target_name, sizeof b->target_name))
    snprintf(b->target_name, sizeof b->target_name, "its target");
  if (source_line(L, line, sizeof line) &&
      assigned_name(line, name, sizeof name))
    snprintf(b->name, sizeof b->name, "%s", name);
  else
    snprintf(b->name, sizeof b->name, "buffer on %.50s", b->target_name);
}

/* ---- with ------------------------------------------------------------------ */

static void dims_text(const orion_array *a, char *out, size_t n) {
  size_t len = 0;
  int d;
  len += (size_t)snprintf(out, n, "{");
  for (d = 0; d < a->ndims && len < n; d++)
    len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? ", " : "",
                            (long long)a->dims[d]);
  if (len < n)
    snprintf(out + len, n - len, "} %s", orion_type_name(a->type));
}

void orion__buffer_with(lua_State *L, int optidx, int tidx, int budx,
                        dbuffer *b) {
  darray *t = lua_touserdata(L, tidx);
  int i, n;
  optidx = lua_absindex(L, optidx);
  budx = lua_absindex(L, budx);
  b->nwith = 0;
  if (!lua_istable(L, optidx))
    return;
  lua_getfield(L, optidx, "with");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  if (!lua_istable(L, -1) || lua_getmetatable(L, -1))
    luaL_error(L, "orion.buffer %s (into %s): with must be a list of "
                  "DistArrays, as in with = {A, B}",
               b->name, b->target_name);
  if (b->op != ORION_APPLY_FUNC)
    luaL_error(L, "orion.buffer %s (into %s): with gives helper arrays to an "
                  "apply function; apply is not a function",
               b->name, b->target_name);
  n = (int)luaL_len(L, -1);
  if (n > ORION_BUFFER_MAX_WITH)
    luaL_error(L, "orion.buffer %s (into %s): %d helper arrays in with; at "
                  "most %d",
               b->name, b->target_name, n, ORION_BUFFER_MAX_WITH);
  lua_createtable(L, n, 0);
  for (i = 1; i <= n; i++) {
    darray *h;
    char nm[64], hd[96], td[96];
    int j;
    lua_geti(L, -2, i);
    h = luaL_testudata(L, -1, ARRAY_MT);
    if (h == NULL || h->a == NULL)
      luaL_error(L, "orion.buffer %s (into %s): with[%d] is a %s, not a "
                    "DistArray",
                 b->name, b->target_name, i, luaL_typename(L, -1));
    if (!caller_name(L, -1, nm, sizeof nm))
      snprintf(nm, sizeof nm, "with[%d]", i);
    if (h == t)
      luaL_error(L, "orion.buffer %s (into %s): with[%d] is the target "
                    "itself; the apply function gets its value as `old`",
                 b->name, b->target_name, i);
    for (j = 0; j < b->nwith; j++)
      if (b->with[j] == h->id)
        luaL_error(L, "orion.buffer %s (into %s): helper '%s' is in with "
                      "twice",
                   b->name, b->target_name, nm);
    dims_text(h->a, hd, sizeof hd);
    dims_text(t->a, td, sizeof td);
    if (h->a->sparse || h->a->ragged || h->a->ndims != t->a->ndims ||
        memcmp(h->a->dims, t->a->dims,
               sizeof *t->a->dims * (size_t)t->a->ndims) != 0 ||
        orion_type_size(h->a->type) != orion_type_size(t->a->type))
      luaL_error(L, "orion.buffer %s (into %s): helper '%s' is %s%s, the "
                    "target %s; a helper must be a dense array of the "
                    "target's dims, with elements of the target's size "
                    "(%s) (it is kept with the target, key for key, "
                    "wherever the target's elements are applied)",
                 b->name, b->target_name, nm,
                 h->a->sparse ? "sparse " : h->a->ragged ? "ragged " : "",
                 hd, td,
                 orion_type_size(t->a->type) == 8 ? "f64 or i64"
                                                  : "f32 or i32");
    b->with[b->nwith] = h->id;
    snprintf(b->with_names[b->nwith], sizeof b->with_names[0], "%s", nm);
    b->nwith++;
    lua_rawseti(L, -2, i);
  }
  lua_setiuservalue(L, budx, 3);
  lua_pop(L, 1);
}

/* ---- what an apply function captures ---------------------------------------- */

/* The name under which the function or table at idx reaches array `id`
 * (an upvalue, a table field, recursively), into out; 0 when not found. */
static int reach_name(lua_State *L, int idx, int64_t id, int depth,
                      char *out, size_t n) {
  const char *nm;
  int i, found = 0;
  idx = lua_absindex(L, idx);
  if (depth > 8 || !lua_checkstack(L, 4))
    return 0;
  if (lua_type(L, idx) == LUA_TFUNCTION) {
    for (i = 1; !found && (nm = lua_getupvalue(L, idx, i)) != NULL; i++) {
      darray *d = luaL_testudata(L, -1, ARRAY_MT);
      if (d != NULL && d->id == id) {
        snprintf(out, n, "%s", nm);
        found = 1;
      } else if (lua_istable(L, -1) || lua_isfunction(L, -1)) {
        found = reach_name(L, -1, id, depth + 1, out, n);
      }
      lua_pop(L, 1);
    }
  } else if (lua_istable(L, idx)) {
    lua_pushnil(L);
    while (!found && lua_next(L, idx) != 0) {
      darray *d = luaL_testudata(L, -1, ARRAY_MT);
      if (d != NULL && d->id == id) {
        if (lua_type(L, -2) == LUA_TSTRING)
          snprintf(out, n, "%s", lua_tostring(L, -2));
        else
          snprintf(out, n, "an array in a table");
        found = 1;
      } else if (lua_istable(L, -1) || lua_isfunction(L, -1)) {
        found = reach_name(L, -1, id, depth + 1, out, n);
      }
      lua_pop(L, 1);
    }
    if (found)
      lua_pop(L, 1); /* the key lua_next left */
  }
  return found;
}

/* The script's name for array id reached by the function at fidx: through
 * its upvalues, else a global holding it. */
static void array_name(lua_State *L, int fidx, int64_t id, char *out,
                       size_t n) {
  int found;
  fidx = lua_absindex(L, fidx);
  if (reach_name(L, fidx, id, 0, out, n))
    return;
  lua_pushglobaltable(L);
  found = reach_name(L, -1, id, 7, out, n);
  lua_pop(L, 1);
  if (!found)
    snprintf(out, n, "a DistArray");
}

int orion__buffer_check_apply(lua_State *L, int budx, const char *who,
                              char *msg, size_t n) {
  dbuffer *b = lua_touserdata(L, budx);
  orion_capture_info info;
  orion_buf scratch;
  char cerr[512], nm[64];
  int rc, i, j, top = lua_gettop(L);
  if (b->op != ORION_APPLY_FUNC)
    return 0;
  budx = lua_absindex(L, budx);
  lua_getiuservalue(L, budx, 2);
  orion_buf_init(&scratch);
  rc = orion_capture_encode(L, -1, orion__classify, NULL, &scratch, &info,
                            cerr, sizeof cerr);
  orion_buf_free(&scratch);
  if (rc != 0) {
    snprintf(msg, n, "%s %s (into %s): apply function: %s", who, b->name,
             b->target_name, cerr);
    lua_settop(L, top);
    return rc;
  }
  for (i = 0; i < info.narrays && rc == 0; i++) {
    int helper = -1;
    array_name(L, -1, info.arrays[i], nm, sizeof nm);
    for (j = 0; j < b->nwith; j++)
      if (b->with[j] == info.arrays[i])
        helper = j;
    rc = ORION_ECAPTURE;
    if (info.arrays[i] == b->target_id)
      snprintf(msg, n, "%s %s (into %s): the apply function captures its "
                       "target '%s'; it gets the target's value at the key "
                       "as its first argument: function(old, delta, ...)",
               who, b->name, b->target_name, nm);
    else if (helper >= 0)
      snprintf(msg, n, "%s %s (into %s): the apply function captures '%s', "
                       "one of its helpers (with); it gets %s's value at the "
                       "key as argument %d instead: function(old, delta%s%s, "
                       "...) and returns the new one after the target's",
               who, b->name, b->target_name, nm, nm, helper + 3,
               helper > 0 ? ", ..., " : ", ", nm);
    else
      snprintf(msg, n, "%s %s (into %s): the apply function captures array "
                       "'%s', which is not one of its helpers; an apply "
                       "function reaches other arrays only through with: "
                       "orion.buffer(%s, {apply = function(old, delta, %s, "
                       "...) ... end, with = {%s}}), at the key it applies",
               who, b->name, b->target_name, nm, b->target_name, nm, nm);
  }
  orion_capture_info_free(&info);
  lua_settop(L, top);
  return rc;
}

/* ---- the capture shipped to executors ---------------------------------------- */

int orion__buffer_capture(lua_State *L, int budx, const dbuffer *b,
                          orion_buf *blob, char *msg, size_t n) {
  static const char wrap[] = "local f, h = ...\n"
                             "return function() return f, h end\n";
  int rc, i, top = lua_gettop(L);
  budx = lua_absindex(L, budx);
  lua_getiuservalue(L, budx, 2);
  if (b->nwith > 0) {
    if (luaL_loadbufferx(L, wrap, sizeof wrap - 1, WRAP_CHUNK, "t") != 0)
      return luaL_error(L, "%s", lua_tostring(L, -1));
    lua_pushvalue(L, -2);
    lua_createtable(L, 1 + 2 * b->nwith, 0);
    lua_pushinteger(L, b->nwith);
    lua_rawseti(L, -2, 1);
    for (i = 0; i < b->nwith; i++) {
      lua_pushstring(L, b->with_names[i]);
      lua_rawseti(L, -2, 2 + 2 * i);
      lua_pushinteger(L, b->with[i]);
      lua_rawseti(L, -2, 3 + 2 * i);
    }
    lua_call(L, 2, 1);
  }
  rc = orion_capture_encode(L, -1, orion__classify, NULL, blob, NULL, msg, n);
  lua_settop(L, top);
  return rc;
}

/* ---- --explain ----------------------------------------------------------------- */

void orion__buffer_explain(lua_State *L, const int64_t *targets, int n,
                           orion_buf *out) {
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, BUFFERS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    dbuffer *b = luaL_testudata(L, -1, BUFFER_MT);
    int i, hit = 0;
    for (i = 0; b != NULL && i < n; i++)
      hit |= targets[i] == b->target_id;
    if (hit && b->nwith > 0) {
      char line[1024];
      size_t len = 0;
      len += (size_t)snprintf(line, sizeof line, "helpers of buffer %s: ",
                              b->name);
      for (i = 0; i < b->nwith && len < sizeof line; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s",
                                i ? ", " : "", b->with_names[i]);
      if (len < sizeof line)
        snprintf(line + len, sizeof line - len,
                 " -- read and written by its apply function, key for key "
                 "with %s, where %s's buffered updates are applied (its "
                 "owners, or the driver)\n",
                 b->target_name, b->target_name);
      orion_buf_append(out, line, strlen(line));
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
}
