/* Tests of executor/bcscan: the globals read and written by dumped Lua 5.4
 * functions, with their lines, and the rejection of truncated, corrupted
 * and foreign chunks. */
#include "t/testutil.h"

#include <stdarg.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "executor/bcscan.h"
#include "util/alloc.h"
#include "util/error.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct tb {
  char *data;
  size_t len;
  size_t cap;
} tb;

static void tb_add(tb *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap == 0 ? 256 : b->cap;
    while (b->len + n + 1 > cap)
      cap *= 2;
    b->data = realloc(b->data, cap);
    cr_assert_not_null(b->data);
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static void tb_printf(tb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tb_printf(tb *b, const char *fmt, ...) {
  char line[512];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && (size_t)n < sizeof line);
  tb_add(b, line, (size_t)n);
}

static int tb_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  tb_add(ud, p, sz);
  return 0;
}

/* Loads src as chunk "=snippet"; when run, executes it and dumps the
 * function it returns (the loop body), otherwise dumps the chunk itself.
 * Returns a malloc'd buffer of *len bytes. */
static char *dump_lua(const char *src, int run, int strip, size_t *len) {
  lua_State *L = luaL_newstate();
  tb b = {NULL, 0, 0};
  cr_assert_not_null(L);
  luaL_openlibs(L);
  cr_assert_eq(luaL_loadbuffer(L, src, strlen(src), "=snippet"), LUA_OK,
               "load: %s", lua_tostring(L, -1));
  if (run) {
    cr_assert_eq(lua_pcall(L, 0, 1, 0), LUA_OK, "run: %s", lua_tostring(L, -1));
    cr_assert(lua_isfunction(L, -1), "snippet must return a function");
  }
  cr_assert_eq(lua_dump(L, tb_writer, &b, strip), 0);
  lua_close(L);
  *len = b.len;
  return b.data;
}

static char *dump_body(const char *src, size_t *len) {
  return dump_lua(src, 1, 0, len);
}

typedef int (*scan_fn)(const char *, size_t, orion_bc_scan *, orion_error *);

/* Scans the body src returns with fn; asserts success. */
static orion_bc_scan scan_body_with(scan_fn fn, const char *src) {
  orion_bc_scan s;
  orion_error err;
  size_t len;
  char *chunk = dump_body(src, &len);
  int rc = fn(chunk, len, &s, &err);
  cr_assert_eq(rc, 0, "scan: %d %s", rc, err.msg);
  cr_assert_eq(err.code, 0);
  free(chunk);
  return s;
}

/* The globals the body src returns reads and writes. */
static orion_bc_scan scan_body(const char *src) {
  return scan_body_with(orion_bcscan, src);
}

static const orion_bc_global *find(const orion_bc_scan *s, const char *name,
                                   int write) {
  int i;
  for (i = 0; i < s->n; i++)
    if (strcmp(s->items[i].name, name) == 0 && s->items[i].write == write)
      return &s->items[i];
  return NULL;
}

#define EXPECT(s, name, write, want)                                           \
  do {                                                                         \
    const orion_bc_global *g_ = find(&(s), (name), (write));                   \
    cr_assert_not_null(g_, "missing %s %s", (write) ? "write" : "read",        \
                       (name));                                                \
    cr_assert_eq(g_->line, (want), "%s %s: line %d, expected %d",              \
                 (write) ? "write" : "read", (name), g_->line, (want));        \
  } while (0)

#define ABSENT(s, name, write)                                                 \
  cr_assert_null(find(&(s), (name), (write)), "unexpected %s %s",              \
                 (write) ? "write" : "read", (name))

/* ---- what is reported ---------------------------------------------------- */

Test(bcscan, reads_of_library_and_user_globals) {
  size_t before = orion_alloc_used();
  orion_bc_scan s = scan_body("return function(u, i, r)\n" /* 1 */
                              "  local s = math.sqrt(i)\n" /* 2 */
                              "  print(s)\n"               /* 3 */
                              "  return s * scale\n"       /* 4 */
                              "end\n");
  cr_assert_eq(s.n, 3);
  EXPECT(s, "math", 0, 2);
  EXPECT(s, "print", 0, 3);
  EXPECT(s, "scale", 0, 4);
  ABSENT(s, "sqrt", 0);
  cr_assert_str_eq(s.items[0].name, "math"); /* order of discovery */
  cr_assert_str_eq(s.items[1].name, "print");
  cr_assert_str_eq(s.items[2].name, "scale");
  orion_bc_scan_free(&s);
  cr_assert_null(s.items);
  cr_assert_eq(s.n, 0);
  cr_assert_eq(orion_alloc_used(), before, "scan leaked memory");
}

Test(bcscan, global_write_is_flagged_with_its_line) {
  orion_bc_scan s = scan_body("return function(u, i, r)\n" /* 1 */
                              "  local a = i * 2\n"        /* 2 */
                              "  if a > 3 then\n"          /* 3 */
                              "    x = 1\n"                /* 4 */
                              "  end\n"                    /* 5 */
                              "  total = x + a\n"          /* 6 */
                              "end\n");
  cr_assert_eq(s.n, 3);
  EXPECT(s, "x", 1, 4);
  EXPECT(s, "x", 0, 6);
  EXPECT(s, "total", 1, 6);
  ABSENT(s, "total", 0);
  ABSENT(s, "a", 0);
  orion_bc_scan_free(&s);
}

Test(bcscan, locals_and_upvalues_are_not_globals) {
  orion_bc_scan s =
      scan_body("local helper = function(v) return v + 1 end\n" /* 1 */
                "local k = 10\n"                                /* 2 */
                "return function(u, i, r)\n"                    /* 3 */
                "  local t = {}\n"                              /* 4 */
                "  t.a = helper(i) + k\n"                       /* 5 */
                "  u[i] = t.a\n"                                /* 6 */
                "  k = k + 1\n"                                 /* 7 */
                "  return u, r\n"                               /* 8 */
                "end\n");
  cr_assert_eq(s.n, 0);
  cr_assert_null(s.items);
  orion_bc_scan_free(&s);
}

/* The upvalues the body src returns assigns. */
static orion_bc_scan scan_upvalue_writes(const char *src) {
  return scan_body_with(orion_bcscan_upvalue_writes, src);
}

Test(bcscan, captured_locals_assigned_by_the_body_are_listed) {
  orion_bc_scan s = scan_upvalue_writes(
      "local total, k, t, unused = 0, 10, {}, 1\n" /* 1 */
      "return function(u, i, r)\n"                 /* 2 */
      "  local own = 0\n"                          /* 3 */
      "  local f = function()\n"                   /* 4 */
      "    own = own + 1\n"                        /* 5: the body's own */
      "    local g = function() k = 1 end\n"       /* 6: the script's */
      "    g()\n"                                  /* 7 */
      "  end\n"                                    /* 8 */
      "  t.n = i\n"                                /* 9: a field, not k */
      "  total = total + i\n"                      /* 10 */
      "  total = total + r\n"                      /* 11 */
      "  f()\n"                                    /* 12 */
      "  return own + unused\n"                    /* 13 */
      "end\n");
  cr_assert_eq(s.n, 2, "%d items", s.n);
  EXPECT(s, "k", 1, 6);
  EXPECT(s, "total", 1, 10); /* once, at its first line */
  ABSENT(s, "own", 1);
  ABSENT(s, "t", 1);
  ABSENT(s, "unused", 1);
  orion_bc_scan_free(&s);
  /* Reads and global writes are not upvalue writes. */
  s = scan_upvalue_writes("local k = 1\n"
                          "return function(u, i) x = k + i; return k end\n");
  cr_assert_eq(s.n, 0);
  orion_bc_scan_free(&s);
}

Test(bcscan, upvalue_writes_reject_what_the_global_scan_rejects) {
  orion_error err;
  orion_bc_scan s;
  size_t len;
  char *chunk = dump_lua("local k = 1\nreturn function() k = 2 end\n", 1, 1,
                         &len);
  cr_expect_eq(orion_bcscan_upvalue_writes(chunk, len, &s, &err),
               ORION_EBADFILE, "a stripped chunk names nothing");
  cr_expect_eq(s.n, 0);
  cr_expect_eq(orion_bcscan_upvalue_writes(chunk, len / 2, &s, &err),
               ORION_ETRUNC);
  free(chunk);
}

Test(bcscan, body_without_globals) {
  orion_bc_scan s =
      scan_body("return function(u, i, r) local a = i + 1 return a * 2 end\n");
  cr_assert_eq(s.n, 0);
  orion_bc_scan_free(&s);
}

Test(bcscan, field_and_method_chains_count_the_base_name_only) {
  orion_bc_scan s = scan_body("return function(u, i, r)\n"           /* 1 */
                              "  local f = string.format('%d', i)\n" /* 2 */
                              "  logger:info(f)\n"                   /* 3 */
                              "  cfg.a.b.c = i\n"                    /* 4 */
                              "  return os.time()\n"                 /* 5 */
                              "end\n");
  cr_assert_eq(s.n, 4);
  EXPECT(s, "string", 0, 2);
  EXPECT(s, "logger", 0, 3);
  EXPECT(s, "cfg", 0, 4); /* a field store through a global is a read */
  EXPECT(s, "os", 0, 5);
  ABSENT(s, "cfg", 1);
  ABSENT(s, "format", 0);
  ABSENT(s, "info", 0);
  ABSENT(s, "time", 0);
  orion_bc_scan_free(&s);
}

Test(bcscan, nested_closures_inside_the_body) {
  orion_bc_scan s = scan_body("return function(u, i, r)\n"           /* 1 */
                              "  local f = function(v)\n"            /* 2 */
                              "    return tostring(v)\n"             /* 3 */
                              "  end\n"                              /* 4 */
                              "  local g = function()\n"             /* 5 */
                              "    local h = function() y = 2 end\n" /* 6 */
                              "    return h, ipairs\n"               /* 7 */
                              "  end\n"                              /* 8 */
                              "  return f(i), g, u\n"                /* 9 */
                              "end\n");
  cr_assert_eq(s.n, 3);
  EXPECT(s, "tostring", 0, 3);
  EXPECT(s, "y", 1, 6);
  EXPECT(s, "ipairs", 0, 7);
  orion_bc_scan_free(&s);
}

Test(bcscan, repeated_access_is_recorded_once_at_its_first_line) {
  orion_bc_scan s = scan_body("return function(u, i, r)\n" /* 1 */
                              "  local f = function()\n"   /* 2 */
                              "    print('in')\n"          /* 3 */
                              "    n = 0\n"                /* 4 */
                              "  end\n"                    /* 5 */
                              "  print(i)\n"               /* 6 */
                              "  print(r)\n"               /* 7 */
                              "  n = 1\n"                  /* 8 */
                              "  f()\n"                    /* 9 */
                              "end\n");
  cr_assert_eq(s.n, 2);
  /* the nested function's line 3 is smaller than the body's line 6 */
  EXPECT(s, "print", 0, 3);
  EXPECT(s, "n", 1, 4);
  orion_bc_scan_free(&s);
}

Test(bcscan, local_env_is_not_the_global_environment) {
  /* The captured local _ENV sits in register 4 and the body's own _ENV
   * upvalue is upvalue 4 too: only the instack flag tells them apart. */
  orion_bc_scan s = scan_body("local a, b, c, d = 1, 2, 3, 4\n"    /* 1 */
                              "return function(u, i, r)\n"         /* 2 */
                              "  local q = a + b + c + d\n"        /* 3 */
                              "  local _ENV = { print = print }\n" /* 4 */
                              "  local f = function() z = 1 end\n" /* 5 */
                              "  w = 2\n"                          /* 6 */
                              "  f()\n"                            /* 7 */
                              "  return q\n"                       /* 8 */
                              "end\n");
  cr_assert_eq(s.n, 1);
  EXPECT(s, "print", 0, 4);
  ABSENT(s, "z", 1);
  ABSENT(s, "w", 1);
  orion_bc_scan_free(&s);
}

Test(bcscan, line_deltas_are_signed) {
  /* the CALL takes the line of `print(`, a step back from the arguments */
  orion_bc_scan s = scan_body("return function(u, i, r)\n" /* 1 */
                              "  print(\n"                 /* 2 */
                              "    i,\n"                   /* 3 */
                              "    r\n"                    /* 4 */
                              "  )\n"                      /* 5 */
                              "  done = (\n"               /* 6 */
                              "    i\n"                    /* 7 */
                              "  )\n"                      /* 8 */
                              "  again = 1\n"              /* 9 */
                              "end\n");
  cr_assert_eq(s.n, 3);
  EXPECT(s, "print", 0, 2);
  EXPECT(s, "done", 1, 8);
  EXPECT(s, "again", 1, 9);
  orion_bc_scan_free(&s);
}

Test(bcscan, whole_env_values_do_not_name_globals) {
  /* _ENV and "name" are call arguments, not a table and its key: the CALL
   * overwrites their registers before u(i)[r(i)] reuses them */
  orion_bc_scan s = scan_body("return function(u, i, r)\n"   /* 1 */
                              "  rawget(_ENV, 'name')\n"     /* 2 */
                              "  local v = u(i)[r(i)]\n"     /* 3 */
                              "  rawset(_ENV, 'other', v)\n" /* 4 */
                              "  u(i)[r(i)] = v\n"           /* 5 */
                              "end\n");
  cr_assert_eq(s.n, 2);
  EXPECT(s, "rawget", 0, 2);
  EXPECT(s, "rawset", 0, 4);
  orion_bc_scan_free(&s);
}

Test(bcscan, main_chunk_dump) {
  orion_bc_scan s;
  orion_error err;
  size_t len;
  char *chunk = dump_lua("x = 1\n"
                         "print(x)\n"
                         "local function f() return y end\n",
                         0, 0, &len);
  cr_assert_eq(orion_bcscan(chunk, len, &s, &err), 0, "%s", err.msg);
  cr_assert_eq(s.n, 4);
  EXPECT(s, "x", 1, 1);
  EXPECT(s, "print", 0, 2);
  EXPECT(s, "x", 0, 2);
  EXPECT(s, "y", 0, 3);
  orion_bc_scan_free(&s);
  free(chunk);
}

Test(bcscan, all_constant_kinds_and_long_names) {
  orion_bc_scan s = scan_body(
      "return function(u, i, r)\n" /* 1 */
      "  local t = { [true] = 1.5, [false] = 2, [3.25] = 'a very long string "
      "constant that is longer than forty characters', n = 123456789012 }\n"
      "  if u == nil or r == true or i == false then t[1] = nil end\n" /* 3 */
      "  t[0.5] = -7\n"                                                /* 4 */
      "  print(t)\n"                                                   /* 5 */
      /* names over 40 bytes are long strings: GETUPVAL/LOADK/GETTABLE */
      "  a_global_name_that_is_longer_than_forty_bytes_x = t\n"    /* 6 */
      "  return a_global_name_that_is_longer_than_forty_bytes_y\n" /* 7 */
      "end\n");
  cr_assert_eq(s.n, 3);
  EXPECT(s, "print", 0, 5);
  EXPECT(s, "a_global_name_that_is_longer_than_forty_bytes_x", 1, 6);
  EXPECT(s, "a_global_name_that_is_longer_than_forty_bytes_y", 0, 7);
  orion_bc_scan_free(&s);
}

/* Builds a body whose table constructor holds nconst distinct strings, then
 * reads print, writes y, and reads early/late globals.  Returns the line of
 * the print call. */
static int many_constants_src(tb *b, int nconst) {
  int line = 1, k;
  tb_printf(b, "return function(u, i, r)\n"); /* 1 */
  tb_printf(b, "  local s = tostring(i)\n");  /* 2: constant index 0 */
  tb_printf(b, "  local t = {\n");            /* 3 */
  line = 3;
  for (k = 0; k < nconst; k++) {
    tb_printf(b, "    \"s%d\",\n", k);
    line++;
  }
  tb_printf(b, "  }\n");
  tb_printf(b, "  print(t, s)\n");
  line += 2;
  tb_printf(b, "  y = i\n");
  tb_printf(b, "  return tostring(y)\n");
  tb_printf(b, "end\n");
  return line;
}

Test(bcscan, constant_index_above_127) {
  tb b = {NULL, 0, 0};
  int pl = many_constants_src(&b, 200); /* K indexes 128..255 in C/B */
  orion_bc_scan s = scan_body(b.data);
  cr_assert_eq(s.n, 4);
  EXPECT(s, "tostring", 0, 2);
  EXPECT(s, "print", 0, pl);
  EXPECT(s, "y", 1, pl + 1);
  EXPECT(s, "y", 0, pl + 2);
  orion_bc_scan_free(&s);
  free(b.data);
}

Test(bcscan, more_than_255_constants) {
  tb b = {NULL, 0, 0};
  int pl = many_constants_src(&b, 300); /* names beyond K index 255 */
  orion_bc_scan s = scan_body(b.data);
  cr_assert_eq(s.n, 4);
  EXPECT(s, "tostring", 0, 2);
  EXPECT(s, "print", 0, pl);
  EXPECT(s, "y", 1, pl + 1);
  EXPECT(s, "y", 0, pl + 2);
  orion_bc_scan_free(&s);
  free(b.data);
}

Test(bcscan, many_distinct_globals) {
  tb b = {NULL, 0, 0};
  orion_bc_scan s;
  char name[32];
  int k, n = 600;
  tb_printf(&b, "return function(u, i, r)\n  local s = 0\n");
  for (k = 0; k < n; k++)
    tb_printf(&b, "  s = s + g%d\n", k); /* line k + 3 */
  tb_printf(&b, "  result = s\nend\n");
  s = scan_body(b.data);
  cr_assert_eq(s.n, n + 1);
  for (k = 0; k < n; k++) {
    snprintf(name, sizeof name, "g%d", k);
    EXPECT(s, name, 0, k + 3);
    cr_assert_str_eq(s.items[k].name, name);
  }
  EXPECT(s, "result", 1, n + 3);
  orion_bc_scan_free(&s);
  free(b.data);
}

Test(bcscan, long_function_uses_absolute_line_info) {
  tb b = {NULL, 0, 0};
  orion_bc_scan s;
  int line = 1, k, first, far, last;
  tb_printf(&b, "return function(u, i, r)\n");
  for (k = 0; k < 300; k++, line++) /* 2 instructions each: ADDI, MMBINI */
    tb_printf(&b, "  i = i + 1\n");
  tb_printf(&b, "  first = i\n");
  first = ++line;
  for (k = 0; k < 200; k++, line++) /* a line jump of more than 127 */
    tb_printf(&b, "\n");
  tb_printf(&b, "  print(i)\n");
  far = ++line;
  for (k = 0; k < 150; k++, line++)
    tb_printf(&b, "  i = i * 2\n");
  tb_printf(&b, "  last = i\n");
  last = ++line;
  tb_printf(&b, "end\n");
  s = scan_body(b.data);
  cr_assert_eq(s.n, 3);
  EXPECT(s, "first", 1, first);
  EXPECT(s, "print", 0, far);
  EXPECT(s, "last", 1, last);
  cr_assert_eq(last, 654);
  orion_bc_scan_free(&s);
  free(b.data);
}

/* ---- malformed input ----------------------------------------------------- */

static const char *nested_src = "return function(u, i, r)\n"
                                "  local t = { 1.5, 'str', 7 }\n"
                                "  local f = function(v)\n"
                                "    return tostring(v) .. sep\n"
                                "  end\n"
                                "  out = f(i) .. math.floor(t[1])\n"
                                "  return out\n"
                                "end\n";

static int scan_copy(const char *data, size_t len, orion_bc_scan *s,
                     orion_error *err) {
  /* an exactly sized copy, so that any over-read trips ASan */
  char *copy = malloc(len == 0 ? 1 : len);
  int rc;
  cr_assert_not_null(copy);
  memcpy(copy, data, len);
  rc = orion_bcscan(copy, len, s, err);
  free(copy);
  return rc;
}

Test(bcscan, every_prefix_of_a_chunk_is_truncated) {
  size_t len, k, before = orion_alloc_used();
  char *chunk = dump_body(nested_src, &len);
  orion_bc_scan s;
  orion_error err;
  cr_assert_eq(scan_copy(chunk, len, &s, &err), 0, "%s", err.msg);
  cr_assert_eq(s.n, 5);
  orion_bc_scan_free(&s);
  for (k = 0; k < len; k++) {
    int rc = scan_copy(chunk, k, &s, &err);
    cr_assert_eq(rc, ORION_ETRUNC, "prefix %zu of %zu: rc %d (%s)", k, len, rc,
                 err.msg);
    cr_assert_eq(err.code, ORION_ETRUNC);
    cr_assert(err.msg[0] != '\0');
    cr_assert_eq(s.n, 0);
    cr_assert_null(s.items);
  }
  cr_assert_eq(orion_alloc_used(), before);
  free(chunk);
}

Test(bcscan, every_prefix_of_a_long_chunk_is_truncated) {
  tb b = {NULL, 0, 0};
  size_t len, k;
  char *chunk;
  orion_bc_scan s;
  orion_error err;
  many_constants_src(&b, 300);
  chunk = dump_body(b.data, &len);
  for (k = 0; k < len; k += 7) {
    int rc = scan_copy(chunk, k, &s, &err);
    cr_assert_eq(rc, ORION_ETRUNC, "prefix %zu of %zu: rc %d (%s)", k, len, rc,
                 err.msg);
  }
  free(chunk);
  free(b.data);
}

/* Offsets in the Lua 5.4 header. */
enum {
  H_VERSION = 4,
  H_FORMAT = 5,
  H_DATA = 6,
  H_SIZE_INSN = 12,
  H_SIZE_INT = 13,
  H_SIZE_NUM = 14,
  H_INT = 15,
  H_NUM = 23
};

static void expect_corrupt(const char *chunk, size_t len, size_t off,
                           unsigned char value, int code) {
  char *copy = malloc(len);
  orion_bc_scan s;
  orion_error err;
  int rc;
  cr_assert_not_null(copy);
  memcpy(copy, chunk, len);
  copy[off] = (char)value;
  rc = orion_bcscan(copy, len, &s, &err);
  cr_assert_eq(rc, code, "byte %zu = 0x%02x: rc %d, expected %d (%s)", off,
               value, rc, code, err.msg);
  cr_assert_eq(err.code, code);
  cr_assert_eq(s.n, 0);
  free(copy);
}

Test(bcscan, corrupted_header) {
  size_t len;
  char *chunk = dump_body(nested_src, &len);
  cr_assert(len > H_NUM + 8);
  cr_assert_eq(memcmp(chunk, "\x1bLua\x54\x00\x19\x93\r\n\x1a\n", 12), 0);
  expect_corrupt(chunk, len, 0, 'X', ORION_EBADFILE);
  expect_corrupt(chunk, len, 1, 'l', ORION_EBADFILE);
  expect_corrupt(chunk, len, H_VERSION, 0x53, ORION_EVERSION);
  expect_corrupt(chunk, len, H_VERSION, 0x55, ORION_EVERSION);
  expect_corrupt(chunk, len, H_FORMAT, 1, ORION_EVERSION);
  expect_corrupt(chunk, len, H_DATA, 0x18, ORION_EBADFILE);
  expect_corrupt(chunk, len, H_DATA + 2, '\n', ORION_EBADFILE);
  expect_corrupt(chunk, len, H_SIZE_INSN, 8, ORION_EVERSION);
  expect_corrupt(chunk, len, H_SIZE_INT, 4, ORION_EVERSION);
  expect_corrupt(chunk, len, H_SIZE_NUM, 4, ORION_EVERSION);
  expect_corrupt(chunk, len, H_INT, 0x00, ORION_EVERSION);
  expect_corrupt(chunk, len, H_NUM + 7, 0x00, ORION_EVERSION);
  free(chunk);
}

Test(bcscan, text_and_empty_input_are_rejected) {
  orion_bc_scan s;
  orion_error err;
  const char *text = "return function() end";
  cr_assert_eq(orion_bcscan(text, strlen(text), &s, &err), ORION_EBADFILE);
  cr_assert_eq(s.n, 0);
  cr_assert_eq(orion_bcscan(text, 0, &s, &err), ORION_ETRUNC);
  cr_assert_eq(orion_bcscan(NULL, 0, &s, NULL), ORION_ETRUNC);
}

Test(bcscan, stripped_and_trailing_bytes_are_rejected) {
  size_t len;
  char *chunk = dump_lua(nested_src, 1, 1, &len);
  char *longer;
  orion_bc_scan s;
  orion_error err;
  int rc = orion_bcscan(chunk, len, &s, &err);
  cr_assert_eq(rc, ORION_EBADFILE, "stripped: rc %d", rc);
  cr_assert(strstr(err.msg, "stripped") != NULL, "%s", err.msg);
  free(chunk);

  chunk = dump_body(nested_src, &len);
  longer = malloc(len + 1);
  memcpy(longer, chunk, len);
  longer[len] = 0;
  cr_assert_eq(orion_bcscan(longer, len + 1, &s, &err), ORION_EBADFILE);
  cr_assert_eq(orion_bcscan(longer, len, &s, NULL), 0);
  cr_assert_eq(s.n, 5);
  orion_bc_scan_free(&s);
  orion_bc_scan_free(&s); /* idempotent */
  orion_bc_scan_free(NULL);
  free(longer);
  free(chunk);
}

/* The function list lua/bodyid.c identifies a loop body with: places
 * in Lua's order, lines, and bytes that are equal exactly when two
 * functions compiled alike. */
Test(bcscan, functions_list_places_lines_and_bytes) {
  static const char src[] =
      "local f, g = function(i) return i end, function(i) return i end\n"
      "local function make(a) return function(i) return a + i end end\n";
  size_t len;
  char *chunk = dump_lua(src, 0, 0, &len);
  orion_bc_func *fn;
  orion_error err;
  int n;
  cr_assert_eq(orion_bcscan_functions(chunk, len, &fn, &n, &err), 0, "%s",
               err.msg);
  cr_assert_eq(n, 5);
  cr_expect_eq(fn[0].parent, -1);
  cr_expect_eq(fn[1].parent, 0);
  cr_expect_eq(fn[1].child, 0);
  cr_expect_eq(fn[2].child, 1);
  cr_expect_eq(fn[2].line, 1);
  cr_expect_eq(fn[3].child, 2);
  cr_expect_eq(fn[3].line, 2);
  cr_expect_eq(fn[3].last, 2);
  cr_expect_eq(fn[4].parent, 3);
  cr_expect_eq(fn[4].child, 0);
  cr_expect_eq(fn[4].line, 2);
  cr_expect(fn[1].len == fn[2].len &&
                memcmp(chunk + fn[1].start, chunk + fn[2].start,
                       fn[1].len) == 0,
            "two literals compiled alike must have equal bytes");
  cr_expect(fn[3].len != fn[4].len ||
                memcmp(chunk + fn[3].start, chunk + fn[4].start,
                       fn[3].len) != 0);
  /* The main function's bytes end the chunk; a nested one lies inside. */
  cr_expect_eq(fn[0].start + fn[0].len, len);
  cr_expect(fn[4].start > fn[3].start &&
            fn[4].start + fn[4].len < fn[3].start + fn[3].len);
  orion_free(fn);
  cr_expect_eq(orion_bcscan_functions(src, strlen(src), &fn, &n, &err),
               ORION_EBADFILE);
  cr_expect_null(fn);
  cr_expect_eq(n, 0);
  free(chunk);
}

Test(bcscan, random_corruption_never_crashes) {
  size_t len, before = orion_alloc_used();
  char *chunk = dump_body(nested_src, &len);
  char *copy = malloc(len);
  unsigned long long seed = 0x9e3779b97f4a7c15ull;
  int round, ok = 0, bad = 0;
  cr_assert_not_null(copy);
  for (round = 0; round < 20000; round++) {
    orion_bc_scan s;
    orion_error err;
    int flips = 1 + round % 4, f, rc;
    memcpy(copy, chunk, len);
    for (f = 0; f < flips; f++) {
      size_t off;
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      off = 33 + (size_t)(seed >> 33) % (len - 33); /* past the header */
      copy[off] = (char)(seed >> 20);
    }
    rc = orion_bcscan(copy, len, &s, &err);
    cr_assert(rc == 0 || rc == ORION_EBADFILE || rc == ORION_ETRUNC,
              "round %d: rc %d (%s)", round, rc, err.msg);
    if (rc == 0)
      ok++;
    else
      bad++;
    orion_bc_scan_free(&s);
  }
  cr_assert(ok > 0 && bad > 0, "ok %d bad %d", ok, bad);
  cr_assert_eq(orion_alloc_used(), before);
  free(copy);
  free(chunk);
}
