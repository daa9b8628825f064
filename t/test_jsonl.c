/* util/jsonl.c: one JSON object a line, its members flat, faults with
 * their column. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/jsonl.h"

/* Parses text, expecting success. */
static orion_jsonl_object parse_ok(const char *text) {
  orion_jsonl_object o;
  orion_error err;
  orion_error_clear(&err);
  cr_assert_eq(orion_jsonl_parse(text, strlen(text), &o, &err), 0,
               "%s: %s", text, err.msg);
  return o;
}

/* Parses text, expecting ORION_EPARSE with message want. */
static void parse_bad(const char *text, const char *want) {
  orion_jsonl_object o;
  orion_error err;
  orion_error_clear(&err);
  cr_expect_eq(orion_jsonl_parse(text, strlen(text), &o, &err),
               ORION_EPARSE, "%s parsed", text);
  cr_expect_str_eq(err.msg, want, "for %s", text);
  orion_jsonl_free(&o);
}

Test(jsonl, flat_members_in_text_order_with_their_values) {
  orion_jsonl_object o = parse_ok(
      " {\"epoch\":3,\"loss\":-0.125e1, \"name\":\"a\\\"b\",\"ok\":true,"
      "\"bad\":null,\"no\":false,\"big\":1e400}\r\n");
  const orion_jsonl_member *m;
  cr_assert_eq(o.n, 7);
  cr_expect_str_eq(o.m[0].key, "epoch");
  cr_expect_eq(o.m[0].kind, ORION_JSONL_NUMBER);
  cr_expect_eq(o.m[0].num, 3);
  cr_expect_eq(o.m[1].num, -1.25);
  cr_expect_eq(o.m[2].kind, ORION_JSONL_STRING);
  cr_expect_str_eq(o.m[2].str, "a\"b");
  cr_expect_eq(o.m[2].str_len, 3);
  cr_expect_eq(o.m[3].kind, ORION_JSONL_BOOL);
  cr_expect_eq(o.m[3].num, 1);
  cr_expect_eq(o.m[4].kind, ORION_JSONL_NULL);
  cr_expect_eq(o.m[5].num, 0);
  cr_expect(isinf(o.m[6].num), "1e400 overflows to inf");
  m = orion_jsonl_get(&o, "name");
  cr_assert_not_null(m);
  cr_expect_str_eq(m->key, "name");
  cr_expect_null(orion_jsonl_get(&o, "nam"));
  orion_jsonl_free(&o);
  cr_expect_eq(o.n, 0);
}

Test(jsonl, escapes_decode_to_utf8) {
  orion_jsonl_object o = parse_ok(
      "{\"k\\u00e9y\":\"\\t\\n\\/\\\\\\u20ac\\ud83d\\ude00\\ud800x\"}");
  cr_assert_eq(o.n, 1);
  cr_expect_str_eq(o.m[0].key, "k\xc3\xa9y");
  /* U+20AC, U+1F600 from a surrogate pair, a lone surrogate as U+FFFD. */
  cr_expect_str_eq(o.m[0].str,
                   "\t\n/\\\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbdx");
  orion_jsonl_free(&o);
  o = parse_ok("{\"nul\":\"a\\u0000b\"}");
  cr_expect_eq(o.m[0].str_len, 3);
  cr_expect_eq(memcmp(o.m[0].str, "a\0b", 3), 0);
  orion_jsonl_free(&o);
}

Test(jsonl, nested_values_are_checked_and_kept_as_nested) {
  orion_jsonl_object o =
      parse_ok("{\"a\":[1,[2,{\"b\":\"]\"}],[]],\"c\":{},\"d\":{\"e\":[]},"
               "\"f\":2}");
  cr_assert_eq(o.n, 4);
  cr_expect_eq(o.m[0].kind, ORION_JSONL_NESTED);
  cr_expect_eq(o.m[1].kind, ORION_JSONL_NESTED);
  cr_expect_eq(o.m[2].kind, ORION_JSONL_NESTED);
  cr_expect_eq(o.m[3].num, 2);
  orion_jsonl_free(&o);
  o = parse_ok("{}");
  cr_expect_eq(o.n, 0);
  orion_jsonl_free(&o);
}

Test(jsonl, faults_name_their_column) {
  parse_bad("", "column 1: expected a JSON object ('{'), found the end of "
                "the line");
  parse_bad("[1]", "column 1: a JSON value, but not an object ('{')");
  parse_bad("epoch=1", "column 1: expected a JSON object ('{'), found 'e'");
  parse_bad("{\"a\" 1}", "column 6: expected ':' after a key, found '1'");
  parse_bad("{\"a\":1,}", "column 8: expected a key, found '}'");
  parse_bad("{\"a\":1", "column 7: expected ',' or '}', found the end of "
                        "the line");
  parse_bad("{\"a\":1} x", "column 9: expected the end of the line after "
                           "the object, found 'x'");
  parse_bad("{\"a\":01}", "column 7: expected ',' or '}', found '1'");
  parse_bad("{\"a\":1.}", "column 8: expected a digit after '.', found '}'");
  parse_bad("{\"a\":-}", "column 7: expected a digit, found '}'");
  parse_bad("{\"a\":nul}", "column 6: expected a value, found 'n'");
  parse_bad("{\"a\":'x'}", "column 6: expected a value, found '''");
  parse_bad("{\"a\":\"x", "column 8: expected '\"' to close the string, "
                          "found the end of the line");
  parse_bad("{\"a\":\"\x01\"}", "column 7: expected a character (control "
                                "bytes must be escaped), found byte 0x01");
  parse_bad("{\"a\":\"\\q\"}", "column 8: expected an escape (\\\" \\\\ \\/ "
                               "\\b \\f \\n \\r \\t \\u), found 'q'");
  parse_bad("{\"a\":\"\\u12g4\"}", "column 11: expected four hex digits "
                                   "after \\u, found 'g'");
  parse_bad("{\"a\":[1 2]}", "column 9: expected ',' or ']', found '2'");
}

Test(jsonl, reads_only_the_given_length) {
  /* The text goes on past len: the parser must not look there. */
  const char text[] = "{\"a\":12}GARBAGE";
  orion_jsonl_object o;
  orion_error err;
  cr_assert_eq(orion_jsonl_parse(text, 8, &o, &err), 0);
  cr_expect_eq(o.m[0].num, 12);
  orion_jsonl_free(&o);
  cr_expect_eq(orion_jsonl_parse(text, 7, &o, &err), ORION_EPARSE);
  cr_expect_str_eq(err.msg, "column 8: expected ',' or '}', found the end "
                            "of the line");
  orion_jsonl_free(&o);
}

Test(jsonl, deep_nesting_is_refused) {
  char text[300];
  size_t i, n = 0;
  orion_jsonl_object o;
  orion_error err;
  n += (size_t)snprintf(text, sizeof text, "{\"a\":");
  for (i = 0; i < 100; i++)
    text[n++] = '[';
  text[n] = '\0';
  cr_expect_eq(orion_jsonl_parse(text, n, &o, &err), ORION_EPARSE);
  cr_expect(strstr(err.msg, "nested deeper than 64 levels") != NULL, "%s",
            err.msg);
  orion_jsonl_free(&o);
}
