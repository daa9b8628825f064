/* A small JSON writer onto a byte buffer (util/buf.h): the job page's
 * documents (dsm/status.c) and orion.record's lines (lua/orion.c).
 *
 * The writer places the commas and colons; the caller says what comes
 * next.  Strings are escaped so that the output is always valid JSON and
 * valid UTF-8: quote and backslash are escaped, control bytes written as
 * \u00XX, and bytes that are not UTF-8 become U+FFFD.  Numbers that are not finite are
 * written as null.  Nesting deeper than ORION_JSON_DEPTH, or an end that
 * does not match, marks the writer bad (orion_json_ok) instead of writing
 * invalid text.  Single-threaded per writer; the buffer stays the
 * caller's. */
#ifndef ORION_UTIL_JSON_H
#define ORION_UTIL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define ORION_JSON_DEPTH 32

typedef struct orion_json {
  orion_buf *b;
  int depth;
  int bad;
  unsigned char kind[ORION_JSON_DEPTH]; /* per level: '{' or '[' */
  unsigned char count[ORION_JSON_DEPTH]; /* per level: 0 before the first
                                            member, else 1 */
  int want_value;                        /* a key was written */
  int top;                               /* the top-level value began */
} orion_json;

void orion_json_init(orion_json *j, orion_buf *b);
/* 1 when every call so far was well placed (and the buffer grew). */
int orion_json_ok(const orion_json *j);

void orion_json_object(orion_json *j);
void orion_json_array(orion_json *j);
/* Ends the innermost object or array. */
void orion_json_end(orion_json *j);
/* A member's key (inside an object). */
void orion_json_key(orion_json *j, const char *key);

void orion_json_str(orion_json *j, const char *s);      /* NULL: null */
void orion_json_strn(orion_json *j, const char *s, size_t n);
void orion_json_int(orion_json *j, int64_t v);
void orion_json_num(orion_json *j, double v);
void orion_json_bool(orion_json *j, int v);
void orion_json_null(orion_json *j);
/* A value that is JSON text already (a recorded metrics line). */
void orion_json_raw(orion_json *j, const char *s, size_t n);

/* Appends s[0..n) to b as a quoted JSON string (the escaping above). */
void orion_json_quote(orion_buf *b, const char *s, size_t n);

#endif
