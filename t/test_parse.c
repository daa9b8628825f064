/* Tests of analysis/parse: the Lua 5.4 lexer, parser, printer and dumper.
 *
 * Every corpus is checked against the real Lua compiler as well
 * (luaL_loadbufferx, text mode), so a valid snippet is known to be valid
 * Lua and an invalid one known to be invalid; the parser must agree, and
 * on errors must name the same line as Lua and the exact column we expect.
 * Valid sources must round-trip: parse, print, parse again gives an equal
 * dump, and the printed text is valid Lua too.
 */
#include "t/testutil.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "analysis/parse.h"
#include "util/alloc.h"
#include "util/error.h"

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

/* Whether the real Lua compiler accepts src.  Like luaL_loadfile (and so
 * like lua and luac on a file), a first line starting with '#' is skipped;
 * its line break stays so line numbers do not move.  On failure copies
 * Lua's message ("chunk:LINE: ...") into msg. */
static int lua_accepts(const char *src, size_t len, char *msg, size_t n) {
  lua_State *L = luaL_newstate();
  size_t skip = 0;
  int rc;
  cr_assert_not_null(L);
  if (len > 0 && src[0] == '#')
    while (skip < len && src[skip] != '\n' && src[skip] != '\r')
      skip++;
  rc = luaL_loadbufferx(L, src + skip, len - skip, "=chunk", "t");
  if (rc != LUA_OK && msg != NULL)
    snprintf(msg, n, "%s", lua_tostring(L, -1));
  lua_close(L);
  return rc == LUA_OK;
}

/* The line of a Lua message "chunk:LINE: ...", or -1 without one (Lua's
 * "C stack overflow" has none). */
static int lua_msg_line(const char *msg) {
  if (strncmp(msg, "chunk:", 6) != 0)
    return -1;
  return atoi(msg + 6);
}

/* Dump of a parsed tree as a malloc'd string. */
static char *dump_tree(const ast_node *n) {
  orion_buf b;
  char *s;
  orion_buf_init(&b);
  orion_ast_dump(n, &b);
  cr_assert(!b.oom);
  s = malloc(b.len + 1);
  cr_assert_not_null(s);
  memcpy(s, b.data, b.len);
  s[b.len] = '\0';
  orion_buf_free(&b);
  return s;
}

static orion_ast *parse_ok(const char *src, size_t len, const char *what) {
  orion_ast *ast = NULL;
  orion_error err;
  int rc = orion_parse(src, len, "chunk", &ast, &err);
  cr_assert_eq(rc, 0, "parse failed for %s: %s\n--- source:\n%.*s", what,
               err.msg, (int)len, src);
  cr_assert_not_null(ast);
  cr_assert_not_null(ast->chunk);
  cr_assert_eq(ast->chunk->kind, AST_BLOCK);
  return ast;
}

/* Parses src, prints it, parses the print; asserts equal dumps and that
 * Lua accepts the printed text.  Returns the dump (malloc'd). */
static char *round_trip(const char *src, size_t len, const char *what) {
  orion_ast *a = parse_ok(src, len, what), *b;
  orion_buf out;
  char *d1, *d2, msg[512];
  orion_buf_init(&out);
  orion_ast_print(a->chunk, &out);
  cr_assert(!out.oom);
  d1 = dump_tree(a->chunk);
  b = parse_ok(out.data != NULL ? out.data : "", out.len, "printed text");
  d2 = dump_tree(b->chunk);
  cr_assert_str_eq(d1, d2,
                   "round trip changed the tree of %s\n--- printed:\n%.*s",
                   what, (int)out.len, out.data != NULL ? out.data : "");
  cr_assert(lua_accepts(out.data != NULL ? out.data : "", out.len, msg,
                        sizeof msg),
            "Lua rejects the printed form of %s: %s\n--- printed:\n%.*s",
            what, msg, (int)out.len, out.data);
  free(d2);
  orion_buf_free(&out);
  orion_ast_free(a);
  orion_ast_free(b);
  return d1;
}

/* The first expression assigned by a one-statement chunk "x = e". */
static const ast_node *assigned(const orion_ast *ast) {
  const ast_node *s;
  cr_assert_geq(ast->chunk->list.n, 1);
  s = ast->chunk->list.v[0];
  cr_assert_eq(s->kind, AST_ASSIGN);
  cr_assert_geq(s->list2.n, 1);
  return s->list2.v[0];
}

/* ------------------------------------------------------------------------
 * 1. The project's own Lua sources.
 * ---------------------------------------------------------------------- */

typedef struct file_stats {
  int found, valid;
} file_stats;

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *data;
  long n;
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  cr_assert_geq(n, 0);
  data = malloc((size_t)n + 1);
  cr_assert_not_null(data);
  cr_assert_eq(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  data[n] = '\0';
  *len = (size_t)n;
  return data;
}

static void check_file(const char *path, file_stats *st) {
  size_t len;
  char *src = read_file(path, &len), msg[512];
  st->found++;
  if (lua_accepts(src, len, msg, sizeof msg)) {
    free(round_trip(src, len, path));
    st->valid++;
  } else {
    /* A deliberately broken script (t/scripts/err_syntax.lua): we must
     * reject it too, on the same line. */
    orion_ast *ast;
    orion_error err;
    int rc = orion_parse(src, len, "chunk", &ast, &err);
    cr_assert_eq(rc, ORION_EPARSE, "%s: Lua rejects it (%s), we accept", path,
                 msg);
    cr_assert_eq(atoi(err.msg + 6), lua_msg_line(msg),
                 "%s: we say %s, Lua says %s", path, err.msg, msg);
  }
  free(src);
}

static void walk(const char *dir, file_stats *st, int depth) {
  DIR *d = opendir(dir);
  struct dirent *e;
  if (d == NULL || depth > 16) {
    if (d != NULL)
      closedir(d);
    return;
  }
  while ((e = readdir(d)) != NULL) {
    char path[4096];
    struct stat sb;
    size_t n = strlen(e->d_name);
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) != 0)
      continue;
    if (S_ISDIR(sb.st_mode))
      walk(path, st, depth + 1);
    else if (S_ISREG(sb.st_mode) && n > 4 &&
             strcmp(e->d_name + n - 4, ".lua") == 0)
      check_file(path, st);
  }
  closedir(d);
}

Test(parse, project_lua_files_round_trip) {
  file_stats st = {0, 0};
  char *apps = tu_src("apps"), *t = tu_src("t");
  walk(apps, &st, 0);
  walk(t, &st, 0);
  free(apps);
  free(t);
  cr_assert_geq(st.found, 3, "only %d .lua files found (ORION_SRCDIR?)",
                st.found);
  cr_assert_geq(st.valid, 3);
}

/* ------------------------------------------------------------------------
 * 2. Valid snippets covering the grammar.
 * ---------------------------------------------------------------------- */

static const char *const valid[] = {
  /* Chunks and empty statements. */
  "",
  ";",
  ";;; ;",
  "-- only a comment",
  "#!/usr/bin/env lua\nx = 1\n",
  "#!/usr/bin/lua\nreturn #t",
  /* Locals and attributes. */
  "local x",
  "local x, y = 1, 2",
  "local a <const> = 10",
  "local f <close> = nil",
  "local a <const>, b, c <close> = 1, 2, nil",
  /* Assignments and calls. */
  "x = 1",
  "a, b.c, d[1] = 1, 2, 3",
  "a.b.c = f()",
  "a[b][c] = 1",
  "f()",
  "f(1, 2, 3)",
  "f 'str'",
  "f [[long]]",
  "f {1, 2}",
  "obj:method(1)",
  "obj:m'x':n{y}.z[1]:w()",
  "a.b.c:d(e)(f)[g]()",
  "(f)()",
  "(f).x = 1",
  "(\"x\"):rep(3)",
  "a = b\n(f)()",
  "x = a.b[c].d:e(f)",
  "local x = (f())",
  "a = 1; b = 2; f();",
  /* Blocks and loops. */
  "do end",
  "do local x = 1 end",
  "while x do x = x - 1 end",
  "while true do break end",
  "while a do if b then break end end",
  "repeat local y = 1 until y",
  "if a then end",
  "if a then b() elseif c then d() elseif e then f() else g() end",
  "if a then else end",
  "if not (a and b) then return end",
  "for i = 1, 10 do end",
  "for i = 10, 1, -1 do print(i) end",
  "for i = 1, #t do t[i] = t[i] * 2 end",
  "for k, v in pairs(t) do end",
  "for a, b, c in f, s, 0 do break end",
  /* Functions. */
  "function f() end",
  "function f(a, b, ...) return ... end",
  "function a.b.c() end",
  "function a.b:m(x) return self.x + x end",
  "function f(...) local t = {...} return select('#', ...) end",
  "local function g(n) if n > 0 then return g(n - 1) end end",
  "local f = function(x) return x * 2 end",
  "x = function(...) return ... end",
  "f(function() end, function(...) end)",
  "local function outer()\n  local function inner()\n"
  "    return function() return 1 end\n  end\n  return inner\nend",
  /* Returns. */
  "return",
  "return;",
  "return 1, 2, 3",
  "return f(...)",
  "do return end",
  /* goto and labels. */
  "goto done; ::done::",
  "for i = 1, 3 do\n  for j = 1, 3 do\n    if j == 2 then goto continue end\n"
  "  end\n  ::continue::\nend",
  "::top:: do goto top end",
  "do goto a; ::a:: end",
  /* Expressions: atoms and operators. */
  "x, y, z = nil, true, false",
  "x = ...",
  "x = 1 + 2 * 3",
  "x = (1 + 2) * 3",
  "x = 2^-3^2",
  "x = -x^2",
  "x = -2 ^ 2",
  "x = a .. b .. c",
  "x = 1 << 2 + 3",
  "x = not a == b",
  "x = a or b and c",
  "x = a and b or c and d",
  "x = a < b == (c >= d)",
  "x = a | b ~ c & d << e",
  "x = a // b % c * d / e",
  "x = #t + -n - ~m",
  "x = 1 - 2 - 3",
  "x = a >> 1 << 2 >> 3",
  "x = a ~= b, a <= b, a >= b, a > b",
  "x = 1 .. 2",
  "x = 'a' .. 1 .. 2.5",
  "x = - - -1",
  "x = not not nil",
  "x = ~~5 ~ ~5",
  "x = #'abc'",
  "x = 7 // 2, 7 % 2, 2 ^ 0.5, 1 // 0.0",
  "x = a.b.c.d.e.f",
  /* Numerals. */
  "x = 0, 42, 0x10, 0XFF, 0xffffffffffffffff, 0x7fffffffffffffff, "
  "0x10000000000000000",
  "x = 9223372036854775807, 9223372036854775808, 1e100, 1E-5, 3.14, .5, "
  "5., 1e+10",
  "x = 0x1p4, 0xA.8p1, 0x.1, 0x1P-2, 0x.8p+1, 0xA., 0X1E+1",
  "x = 0x.1p-1 + 0x1.8",
  "x = 1e9999, 1e-9999, 4.9406564584124654e-324",
  "x = 18446744073709551616, 99999999999999999999",
  /* Strings. */
  "x = '\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\\''",
  "x = \"\\x41\\x7a\\065\\0\\255\\z   \n  y\"",
  "x = \"a\\\nb\", 'c\\\r\nd'",
  "x = '\\u{48}\\u{7FF}\\u{FFFF}\\u{10FFFF}\\u{7FFFFFFF}\\u{0000000041}'",
  "x = 'nul\\0inside', '\\0001'",
  "x = [[\nfirst newline skipped]]",
  "x = [==[ a ]] ]=] ]==]",
  "x = [[\r\nline\r\nbreaks\n\r]]",
  "local s = [=[\n]=]",
  "x = t['end']",
  /* Comments. */
  "-- line comment\nx = 1 -- trailing\n--[[ long\ncomment ]] y = 2 "
  "--[==[ level 2 ]] ]==] z = 3",
  "--[==x short comment after all\nx = 1",
  "--[\nx = 1 --[=\n",
  /* Table constructors. */
  "t = {}",
  "t = {1, 2, 3,}",
  "t = {a = 1; b = 2; [3] = 4, 'x'; f(),}",
  "t = {[f(x)] = {y = {z = {}}}, ...}",
  "t = {x == 1, y = 2}",
  "local a = {[1]=1,[2]=2;n=2}",
  "x = {f()}, {f(), nil}, {(f())}",
  "local t = setmetatable({}, {__index = function(t, k) return k end})",
  /* Line breaks of every kind. */
  "local a = 1\r\nlocal b = 2\r\nreturn a + b\r\n",
  "a = 1\rb = 2\n\rc = 3\r\n\n\rd = 4",
};

#define N_VALID ((int)(sizeof valid / sizeof valid[0]))

Test(parse, valid_corpus_is_lua_and_round_trips) {
  int i;
  size_t before = orion_alloc_used();
  cr_assert_geq(N_VALID, 70);
  for (i = 0; i < N_VALID; i++) {
    char msg[512], what[64];
    size_t len = strlen(valid[i]);
    cr_assert(lua_accepts(valid[i], len, msg, sizeof msg),
              "valid[%d] is not valid Lua: %s\n%s", i, msg, valid[i]);
    snprintf(what, sizeof what, "valid[%d]", i);
    free(round_trip(valid[i], len, what));
  }
  cr_assert_eq(orion_alloc_used(), before, "parsing leaked memory");
}

/* Asserts that the dump of src contains want. */
static void expect_dump(const char *src, const char *want) {
  orion_ast *ast = parse_ok(src, strlen(src), src);
  char *d = dump_tree(ast->chunk);
  cr_assert_not_null(strstr(d, want), "%s\n  dumps as %s\n  expected %s",
                     src, d, want);
  cr_assert(lua_accepts(src, strlen(src), NULL, 0));
  free(d);
  orion_ast_free(ast);
}

Test(parse, precedence_and_associativity) {
  expect_dump("x = 1 + 2 * 3",
              "(binop + (int 1) (binop * (int 2) (int 3)))");
  expect_dump("x = (1 + 2) * 3",
              "(binop * (paren (binop + (int 1) (int 2))) (int 3))");
  expect_dump("x = 2^-3^2",
              "(binop ^ (int 2) (unop - (binop ^ (int 3) (int 2))))");
  expect_dump("x = -x^2", "(unop - (binop ^ (name x) (int 2)))");
  expect_dump("x = a .. b .. c",
              "(binop .. (name a) (binop .. (name b) (name c)))");
  expect_dump("x = 1 << 2 + 3",
              "(binop << (int 1) (binop + (int 2) (int 3)))");
  expect_dump("x = not a == b", "(binop == (unop not (name a)) (name b))");
  expect_dump("x = 1 - 2 - 3",
              "(binop - (binop - (int 1) (int 2)) (int 3))");
  expect_dump("x = a or b and c",
              "(binop or (name a) (binop and (name b) (name c)))");
  expect_dump("x = a | b ~ c & d << e",
              "(binop | (name a) (binop ~ (name b) (binop & (name c) "
              "(binop << (name d) (name e)))))");
  expect_dump("x = a .. b == c", "(binop == (binop .. (name a) (name b)) "
                                 "(name c))");
  expect_dump("x = #t + -n - ~m",
              "(binop - (binop + (unop # (name t)) (unop - (name n))) "
              "(unop ~ (name m)))");
  expect_dump("x = a < b and c",
              "(binop and (binop < (name a) (name b)) (name c))");
  expect_dump("x = 2^3^2", "(binop ^ (int 2) (binop ^ (int 3) (int 2)))");
}

Test(parse, statement_shapes) {
  expect_dump("a = b\n(f)()",
              "(block (assign [(name a)] [(call (call (name b) [(name f)]) "
              "[])]))");
  expect_dump("function a.b:m(x) end",
              "(funcstat :method (index :dot (index :dot (name a) "
              "(str \"b\")) (str \"m\")) (func :method [(name self) (name x)] "
              "(block)))");
  expect_dump("local x <const>, y <close> = 1",
              "(local [(name x :const) (name y :close)] [(int 1)])");
  expect_dump("t = {a = 1; [2] = 3, 4}",
              "(table (field :name (str \"a\") (int 1)) (field :key (int 2) "
              "(int 3)) (field :pos (int 4)))");
  expect_dump("f'x' f{} o:m[[y]]",
              "(block (callstat (call (name f) [(str \"x\")])) (callstat "
              "(call (name f) [(table)])) (callstat (methcall (name o) m "
              "[(str \"y\")])))");
  expect_dump("for i = 1, 2 do end",
              "(numfor [(name i)] (int 1) (int 2) _ (block))");
  expect_dump("if a then elseif b then else end",
              "(if [(name a) (name b)] [(block) (block)] (block))");
  expect_dump("return;", "(block (return []))");
  expect_dump("goto l ::l::", "(block (goto l) (label l))");
  expect_dump("local function f(...) end",
              "(localfunc (name f) (func :vararg [] (block)))");
}

/* orion_ast_any: n first, then every child; stops at the first match. */
typedef struct any_probe {
  const char *name; /* the AST_NAME looked for */
  int calls;
} any_probe;

static int names_it(const ast_node *n, void *ud) {
  any_probe *p = ud;
  p->calls++;
  return n->kind == AST_NAME && strcmp(n->str, p->name) == 0;
}

Test(parse, ast_any_reaches_every_child) {
  static const char src[] = "local t = {k = a}\n"
                            "for i = b, c, d do\n"
                            "  while e do t[i] = f(g, -h) end\n"
                            "end\n"
                            "if j then return k elseif l then else m() end";
  static const char *const names[] = {"t", "a", "b", "c", "d", "e", "f",
                                      "g", "h", "i", "j", "k", "l", "m"};
  orion_ast *ast = parse_ok(src, sizeof src - 1, "ast_any");
  any_probe p;
  int all, i;
  for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
    p.name = names[i];
    p.calls = 0;
    cr_assert(orion_ast_any(ast->chunk, names_it, &p), "%s", names[i]);
  }
  p.name = "nowhere";
  p.calls = 0;
  cr_assert_not(orion_ast_any(ast->chunk, names_it, &p));
  all = p.calls;
  p.name = "a"; /* early in the tree: fewer nodes seen */
  p.calls = 0;
  cr_assert(orion_ast_any(ast->chunk, names_it, &p));
  cr_assert_lt(p.calls, all);
  p.calls = 0;
  cr_assert_not(orion_ast_any(NULL, names_it, &p));
  cr_assert_eq(p.calls, 0);
  orion_ast_free(ast);
}

Test(parse, numeral_values) {
  orion_ast *ast;
  const ast_node *e;
  struct {
    const char *src;
    int is_int;
    int64_t ival;
    double fval;
  } cases[] = {
    {"x = 0xffffffffffffffff", 1, -1, 0},
    {"x = 0x8000000000000000", 1, INT64_MIN, 0},
    {"x = 0x10000000000000001", 1, 1, 0},
    {"x = 9223372036854775807", 1, INT64_MAX, 0},
    {"x = 9223372036854775808", 0, 0, 9223372036854775808.0},
    {"x = 0x1p4", 0, 0, 16.0},
    {"x = 0xA.8p1", 0, 0, 21.0},
    {"x = 0x.1", 0, 0, 0.0625},
    {"x = 0x1p-2", 0, 0, 0.25},
    {"x = 5.", 0, 0, 5.0},
    {"x = .5e1", 0, 0, 5.0},
    {"x = 3e2", 0, 0, 300.0},
    {"x = 0.1", 0, 0, 0.1},
    {"x = 0x10", 1, 16, 0},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ast = parse_ok(cases[i].src, strlen(cases[i].src), cases[i].src);
    e = assigned(ast);
    if (cases[i].is_int) {
      cr_assert_eq(e->kind, AST_INT, "%s: not an integer", cases[i].src);
      cr_assert_eq(e->ival, cases[i].ival, "%s: %" PRId64, cases[i].src,
                   e->ival);
    } else {
      cr_assert_eq(e->kind, AST_FLT, "%s: not a float", cases[i].src);
      cr_assert(e->fval == cases[i].fval, "%s: %.17g", cases[i].src,
                e->fval);
    }
    orion_ast_free(ast);
  }
  ast = parse_ok("x = 1e9999", 10, "inf");
  e = assigned(ast);
  cr_assert(e->kind == AST_FLT && e->fval > 1e308);
  orion_ast_free(ast);
}

/* Asserts that "x = <lit>" decodes to the bytes want[0..n). */
static void expect_string(const char *src, const char *want, size_t n) {
  orion_ast *ast = parse_ok(src, strlen(src), src);
  const ast_node *e = assigned(ast);
  cr_assert_eq(e->kind, AST_STR, "%s: not a string", src);
  cr_assert_eq(e->len, n, "%s: %zu bytes, expected %zu", src, e->len, n);
  cr_assert(memcmp(e->str, want, n) == 0, "%s: wrong bytes", src);
  cr_assert_eq(e->str[n], '\0');
  cr_assert(lua_accepts(src, strlen(src), NULL, 0));
  orion_ast_free(ast);
}

Test(parse, string_decoding) {
  expect_string("x = '\\u{7FF}'", "\xDF\xBF", 2);
  expect_string("x = '\\u{41}\\u{20AC}'", "A\xE2\x82\xAC", 4);
  expect_string("x = '\\u{7FFFFFFF}'", "\xFD\xBF\xBF\xBF\xBF\xBF", 6);
  expect_string("x = '\\u{10FFFF}'", "\xF4\x8F\xBF\xBF", 4);
  expect_string("x = [==[\nx]==]", "x", 1);
  expect_string("x = [[\r\na\r\nb\n\rc\rd]]", "a\nb\nc\nd", 7);
  expect_string("x = [=[a]]b]=]", "a]]b", 4);
  expect_string("x = '\\65\\x41\\z  \n\t b'", "AAb", 3);
  expect_string("x = '\\0\\00\\000\\0001'", "\0\0\0\0" "1", 5);
  expect_string("x = '\\255\\xff\\xFF'", "\xff\xff\xff", 3);
  expect_string("x = 'a\\\nb\\\r\nc'", "a\nb\nc", 5);
  expect_string("x = '\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\\''", "\a\b\f\n\r\t\v\\\"'",
                10);
  expect_string("x = \"\"", "", 0);
}

Test(parse, positions) {
  orion_ast *ast;
  const ast_node *s, *f;
  const char *src = "local a = 1\r\n"          /* 1 */
                    "\n"                       /* 2 */
                    "  function  t.f(x)\n\r"   /* 3 */
                    "    return x + a\n"       /* 4 */
                    "  end\r"                  /* 5 */
                    "local g = function() end"; /* 6 */
  ast = parse_ok(src, strlen(src), "positions");
  cr_assert_eq(ast->chunk->list.n, 3);
  s = ast->chunk->list.v[1];
  cr_assert_eq(s->kind, AST_FUNCSTAT);
  cr_assert_eq(s->line, 3);
  cr_assert_eq(s->col, 3);
  f = s->b;
  cr_assert_eq(f->kind, AST_FUNC);
  cr_assert_eq(f->line, 3);
  cr_assert_eq(f->col, 3);
  cr_assert_eq(f->end_line, 5);
  cr_assert_eq(s->a->b->line, 3); /* the key "f" */
  cr_assert_eq(s->a->b->col, 15);
  s = f->a->list.v[0]; /* return x + a */
  cr_assert_eq(s->line, 4);
  cr_assert_eq(s->col, 5);
  cr_assert_eq(s->list.v[0]->kind, AST_BINOP);
  cr_assert_eq(s->list.v[0]->col, 12); /* a binop starts at its left side */
  cr_assert_eq(s->list.v[0]->b->col, 16);
  s = ast->chunk->list.v[2];
  cr_assert_eq(s->line, 6);
  f = s->list2.v[0];
  cr_assert_eq(f->line, 6);
  cr_assert_eq(f->col, 11);
  cr_assert_eq(f->end_line, 6);
  orion_ast_free(ast);
}

/* ------------------------------------------------------------------------
 * 3. Malformed snippets: exact positions.
 * ---------------------------------------------------------------------- */

typedef struct bad_case {
  const char *src;
  size_t len; /* 0: strlen(src) */
  int line, col;
  const char *msg; /* a substring of our message */
} bad_case;

static const bad_case invalid[] = {
  {"function f()\n  x = 1\n", 0, 3, 1,
   "'end' expected (to close 'function' at line 1) near <eof>"},
  {"x = \"abc\ny = 1", 0, 1, 5, "unfinished string near '\"abc'"},
  {"x = 'abc", 0, 1, 5, "unfinished string near <eof>"},
  {"x = [[abc\n\ndef", 0, 3, 4,
   "unfinished long string (starting at line 1) near <eof>"},
  {"x = [=[ abc ]]", 0, 1, 15, "unfinished long string"},
  {"x = 1\n--[==[ comment\n]]", 0, 3, 3,
   "unfinished long comment (starting at line 2)"},
  {"x = 3x", 0, 1, 5, "malformed number near '3x'"},
  {"x = 0x", 0, 1, 5, "malformed number near '0x'"},
  {"x = 1e", 0, 1, 5, "malformed number near '1e'"},
  {"x = 1e+", 0, 1, 5, "malformed number near '1e+'"},
  {"x = 0x1p", 0, 1, 5, "malformed number"},
  {"x = 1..2", 0, 1, 5, "malformed number near '1..2'"},
  {"x = \"a\\qb\"", 0, 1, 7, "invalid escape sequence near '\"a\\q'"},
  {"x = \"\\x4g\"", 0, 1, 6, "hexadecimal digit expected"},
  {"x = '\\300'", 0, 1, 6, "decimal escape too large"},
  {"x = '\\u{110000000}'", 0, 1, 6, "UTF-8 value too large"},
  {"x = '\\u{41'", 0, 1, 6, "missing '}'"},
  {"x = '\\u41'", 0, 1, 6, "missing '{'"},
  {"x = [= abc", 0, 1, 5, "invalid long string delimiter near '[='"},
  {"x = = 1", 0, 1, 5, "unexpected symbol near '='"},
  {"local function (x) end", 0, 1, 16, "<name> expected near '('"},
  {"for i = 1 do end", 0, 1, 11, "',' expected near 'do'"},
  {"for a b in c do end", 0, 1, 7, "'=' or 'in' expected near 'b'"},
  {"if x then else elseif y then end", 0, 1, 16,
   "'end' expected near 'elseif'"},
  {"return return", 0, 1, 8, "unexpected symbol near 'return'"},
  {"return 1 x = 2", 0, 1, 10, "<eof> expected near 'x'"},
  {"f() = 1", 0, 1, 5, "syntax error near '='"},
  {"(a) = 1", 0, 1, 5, "syntax error near '='"},
  {"a + b = 1", 0, 1, 3, "syntax error near '+'"},
  {"x = 1 y", 0, 1, 8, "syntax error near <eof>"},
  {"local x <foo> = 1", 0, 1, 10, "unknown attribute 'foo'"},
  {"local x <const", 0, 1, 15, "'>' expected near <eof>"},
  {"goto", 0, 1, 5, "<name> expected near <eof>"},
  {"::a", 0, 1, 4, "'::' expected near <eof>"},
  {")", 0, 1, 1, "unexpected symbol near ')'"},
  {"a.b:c = 1", 0, 1, 7, "function arguments expected near '='"},
  {"a:b.c()", 0, 1, 4, "function arguments expected near '.'"},
  {"t = {1,,2}", 0, 1, 8, "unexpected symbol near ','"},
  {"x = {1, 2", 0, 1, 10, "'}' expected near <eof>"},
  {"x = f(1, 2\n\n", 0, 3, 1,
   "')' expected (to close '(' at line 1) near <eof>"},
  {"local 1 = 2", 0, 1, 7, "<name> expected near '1'"},
  {"function f(a,) end", 0, 1, 14, "<name> or '...' expected near ')'"},
  {"function f(..., a) end", 0, 1, 15, "')' expected near ','"},
  {"x = function() return ... end", 0, 1, 23,
   "cannot use '...' outside a vararg function near '...'"},
  {"while true do\n  x = 1\n", 0, 3, 1,
   "'end' expected (to close 'while' at line 1) near <eof>"},
  {"repeat x = 1", 0, 1, 13, "'until' expected near <eof>"},
  {"local t = {\n  a = 1,\n  b = 2 +,\n}", 0, 3, 10,
   "unexpected symbol near ','"},
  {"if a then\n  f()\nelse\n  g(\nend", 0, 5, 1,
   "unexpected symbol near 'end'"},
  {"local a = 1\r\nlocal b = 2\r\nlocal c = = 3\r\n", 0, 3, 11,
   "unexpected symbol near '='"},
  {"x = 1\n\ry = = 2", 0, 2, 5, "unexpected symbol near '='"},
  {"x = 1\r\r\ny = 2 +", 0, 3, 8, "unexpected symbol near <eof>"},
  {"x = 1 \0 y", 9, 1, 7, "unexpected symbol near '<\\0>'"},
  {"x = '\0", 6, 1, 5, "unfinished string near <eof>"},
  {"x = 1 @", 0, 1, 7, "unexpected symbol near '@'"},
  {"x = \xff", 0, 1, 5, "unexpected symbol near '<\\255>'"},
  {"#!shebang\nx = = 1", 0, 2, 5, "unexpected symbol"},
};

#define N_INVALID ((int)(sizeof invalid / sizeof invalid[0]))

static void check_invalid(const char *src, size_t len, int line, int col,
                          const char *want, const char *what) {
  orion_ast *ast = (orion_ast *)1;
  orion_error err;
  char lmsg[512], prefix[64];
  int rc, lline;
  cr_assert(!lua_accepts(src, len, lmsg, sizeof lmsg),
            "%s is valid Lua: %s", what, src);
  rc = orion_parse(src, len, "chunk", &ast, &err);
  cr_assert_eq(rc, ORION_EPARSE, "%s: parse returned %d for %s", what, rc,
               src);
  cr_assert_null(ast);
  cr_assert_eq(err.code, ORION_EPARSE);
  snprintf(prefix, sizeof prefix, "chunk:%d:%d: ", line, col);
  cr_assert(strncmp(err.msg, prefix, strlen(prefix)) == 0,
            "%s: got \"%s\", expected position %s", what, err.msg, prefix);
  cr_assert_not_null(strstr(err.msg, want), "%s: got \"%s\", expected \"%s\"",
                     what, err.msg, want);
  /* Lua names the same line, when it names one. */
  lline = lua_msg_line(lmsg);
  if (lline > 0)
    cr_assert_eq(lline, line, "%s: Lua says \"%s\", we say \"%s\"", what,
                 lmsg, err.msg);
}

Test(parse, invalid_corpus_positions) {
  int i;
  size_t before = orion_alloc_used();
  cr_assert_geq(N_INVALID, 25);
  for (i = 0; i < N_INVALID; i++) {
    char what[32];
    const bad_case *c = &invalid[i];
    snprintf(what, sizeof what, "invalid[%d]", i);
    check_invalid(c->src, c->len != 0 ? c->len : strlen(c->src), c->line,
                  c->col, c->msg, what);
  }
  cr_assert_eq(orion_alloc_used(), before, "failed parses leaked memory");
}

/* Builds prefix + n copies of open + middle + n copies of close. */
static char *nested(const char *prefix, const char *open, const char *middle,
                    const char *close, int n) {
  size_t len = strlen(prefix) + strlen(middle) +
               (size_t)n * (strlen(open) + strlen(close)) + 1;
  char *s = malloc(len);
  int i;
  cr_assert_not_null(s);
  strcpy(s, prefix);
  for (i = 0; i < n; i++)
    strcat(s, open);
  strcat(s, middle);
  for (i = 0; i < n; i++)
    strcat(s, close);
  return s;
}

Test(parse, deep_nesting_is_an_error_not_a_crash) {
  struct {
    const char *prefix, *open, *middle, *close;
  } shapes[] = {
    {"x = ", "(", "1", ")"},
    {"x = ", "{", "", "}"},
    {"", "do ", "", " end"},
    {"x = ", "- ", "1", ""},
    {"x = ", "a .. ", "b", ""},
    {"x = ", "function() return ", "1", " end"},
    {"x = ", "f(", "", ")"},
  };
  size_t i;
  for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char *s = nested(shapes[i].prefix, shapes[i].open, shapes[i].middle,
                     shapes[i].close, 300);
    char *ok = nested(shapes[i].prefix, shapes[i].open, shapes[i].middle,
                      shapes[i].close, 50);
    orion_ast *ast;
    orion_error err;
    int rc;
    cr_assert(!lua_accepts(s, strlen(s), NULL, 0), "Lua accepts shape %zu",
              i);
    rc = orion_parse(s, strlen(s), "chunk", &ast, &err);
    cr_assert_eq(rc, ORION_EPARSE, "shape %zu", i);
    cr_assert_not_null(strstr(err.msg, "chunk has too many syntax levels"),
                       "shape %zu: %s", i, err.msg);
    cr_assert(strncmp(err.msg, "chunk:1:", 8) == 0, "%s", err.msg);
    free(round_trip(ok, strlen(ok), "moderate nesting"));
    free(s);
    free(ok);
  }
  /* The exact column of the classic case: 199 '(' nest 201 levels with the
   * statement and the right-hand side, so the 200th '(' is refused. */
  {
    char *s = nested("x = ", "(", "1", ")", 300);
    orion_ast *ast;
    orion_error err;
    cr_assert_eq(orion_parse(s, strlen(s), "chunk", &ast, &err),
                 ORION_EPARSE);
    cr_assert_str_eq(err.msg,
                     "chunk:1:204: chunk has too many syntax levels near '('");
    free(s);
  }
}

Test(parse, long_left_chains_are_bounded) {
  /* Loops, not recursion, parse these; the tree height limit still keeps
   * walkers safe.  Moderate chains are fine. */
  size_t n = 100000, i;
  char *s = malloc(4 * n + 16);
  orion_ast *ast;
  orion_error err;
  cr_assert_not_null(s);
  strcpy(s, "x = a");
  for (i = 0; i < n; i++)
    memcpy(s + 5 + 4 * i, " + a", 4);
  s[5 + 4 * n] = '\0';
  cr_assert_eq(orion_parse(s, strlen(s), "chunk", &ast, &err), ORION_EPARSE);
  cr_assert_not_null(strstr(err.msg, "too many syntax levels"), "%s",
                     err.msg);
  s[5 + 4 * 1000] = '\0';
  free(round_trip(s, strlen(s), "a 1000-term sum"));
  free(s);
}

/* ------------------------------------------------------------------------
 * 4. Robustness: nothing crashes, errors are well formed.
 * ---------------------------------------------------------------------- */

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;

static unsigned rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state >> 11);
}

/* Parses arbitrary bytes: either a tree that round-trips, or a syntax
 * error whose message starts with the chunk name and a position.  Returns
 * whether it parsed. */
static int parse_any(const char *src, size_t len) {
  orion_ast *ast;
  orion_error err;
  int rc = orion_parse(src, len, "fuzz", &ast, &err);
  cr_assert(rc == 0 || rc == ORION_EPARSE, "rc %d", rc);
  if (rc == 0) {
    orion_buf out;
    orion_ast *again;
    char *d1, *d2;
    orion_buf_init(&out);
    orion_ast_print(ast->chunk, &out);
    rc = orion_parse(out.data != NULL ? out.data : "", out.len, "printed",
                     &again, &err);
    cr_assert_eq(rc, 0, "printed text does not parse: %s", err.msg);
    d1 = dump_tree(ast->chunk);
    d2 = dump_tree(again->chunk);
    cr_assert_str_eq(d1, d2);
    free(d1);
    free(d2);
    orion_ast_free(again);
    orion_ast_free(ast);
    orion_buf_free(&out);
    return 1;
  } else {
    int line = 0, col = 0;
    cr_assert_null(ast);
    cr_assert(strncmp(err.msg, "fuzz:", 5) == 0, "%s", err.msg);
    cr_assert_eq(sscanf(err.msg + 5, "%d:%d:", &line, &col), 2, "%s",
                 err.msg);
    cr_assert(line >= 1 && col >= 1, "%s", err.msg);
    return 0;
  }
}

Test(parse, random_bytes_never_crash) {
  static const char alphabet[] = "abx01239.eEpPx+-*/%^#&~|<>=(){}[];:,'\"\\"
                                 "  \n\r\t[[]]==--";
  char buf[96];
  int i, parsed = 0;
  size_t before = orion_alloc_used();
  for (i = 0; i < 3000; i++) {
    size_t n = rnd() % sizeof buf, k;
    int raw = i % 3 == 0;
    for (k = 0; k < n; k++)
      buf[k] = raw ? (char)(rnd() & 0xff)
                   : alphabet[rnd() % (sizeof alphabet - 1)];
    parsed += parse_any(buf, n);
  }
  cr_assert_lt(parsed, 3000); /* mostly garbage, but it must not all pass */
  cr_assert_eq(orion_alloc_used(), before);
}

Test(parse, truncated_and_mutated_snippets_never_crash) {
  static const char junk[] = "()[]{}'\"\\=.,;:-\n\0\xff";
  char buf[512];
  int i, parsed = 0, rejected = 0;
  for (i = 0; i < N_VALID; i++) {
    size_t len = strlen(valid[i]), cut;
    for (cut = 0; cut <= len; cut++) {
      if (parse_any(valid[i], cut))
        parsed++;
      else
        rejected++;
    }
  }
  /* Both paths ran: many prefixes are valid Lua, many are not. */
  cr_assert_gt(parsed, 100);
  cr_assert_gt(rejected, 100);
  for (i = 0; i < 2000; i++) {
    const char *s = valid[rnd() % N_VALID];
    size_t len = strlen(s), pos;
    if (len == 0 || len + 2 >= sizeof buf)
      continue;
    memcpy(buf, s, len);
    pos = rnd() % len;
    switch (rnd() % 3) {
    case 0: /* overwrite a byte */
      buf[pos] = junk[rnd() % (sizeof junk - 1)];
      break;
    case 1: /* delete a byte */
      memmove(buf + pos, buf + pos + 1, len - pos - 1);
      len--;
      break;
    default: /* insert a byte */
      memmove(buf + pos + 1, buf + pos, len - pos);
      buf[pos] = junk[rnd() % (sizeof junk - 1)];
      len++;
      break;
    }
    parse_any(buf, len);
  }
}

Test(parse, null_chunkname_and_empty_input) {
  orion_ast *ast;
  orion_error err;
  cr_assert_eq(orion_parse(NULL, 0, "chunk", &ast, &err), 0);
  cr_assert_eq(ast->chunk->list.n, 0);
  orion_ast_free(ast);
  cr_assert_eq(orion_parse("x = = 1", 7, NULL, &ast, &err), ORION_EPARSE);
  cr_assert_eq(orion_parse("x = = 1", 7, "c", &ast, NULL), ORION_EPARSE);
  orion_ast_free(NULL);
}

/* ------------------------------------------------------------------------
 * The printer on trees no parse produces.
 * ---------------------------------------------------------------------- */

Test(parse, printer_special_values) {
  ast_node num, neg, stmt, blk;
  ast_node *stmts[1], *vals[1], *targets[1];
  ast_node x;
  orion_buf out;
  double values[] = {-2.5, -0.0, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0};
  size_t i;
  memset(&x, 0, sizeof x);
  x.kind = AST_NAME;
  x.str = "x";
  x.len = 1;
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {
    char msg[256];
    memset(&num, 0, sizeof num);
    num.kind = AST_FLT;
    num.fval = values[i];
    memset(&neg, 0, sizeof neg);
    neg.kind = AST_BINOP; /* value ^ value */
    neg.op = OP_POW;
    neg.a = &num;
    neg.b = &num;
    memset(&stmt, 0, sizeof stmt);
    stmt.kind = AST_ASSIGN;
    targets[0] = &x;
    vals[0] = &neg;
    stmt.list.v = targets;
    stmt.list.n = 1;
    stmt.list2.v = vals;
    stmt.list2.n = 1;
    memset(&blk, 0, sizeof blk);
    blk.kind = AST_BLOCK;
    stmts[0] = &stmt;
    blk.list.v = stmts;
    blk.list.n = 1;
    orion_buf_init(&out);
    orion_ast_print(&blk, &out);
    orion_buf_u8(&out, 0);
    cr_assert(lua_accepts(out.data, out.len - 1, msg, sizeof msg),
              "%.17g printed as %s: %s", values[i], out.data, msg);
    orion_buf_free(&out);
  }
}
