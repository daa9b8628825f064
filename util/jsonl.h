/* A reader for one line of a JSON-lines file: one JSON object (RFC 8259)
 * whose members are kept flat, with each key and, for a number, a boolean
 * or a string, its value.  Nested arrays and objects are checked and kept
 * as ORION_JSONL_NESTED without their contents.  orion-driver plot reads
 * the files `--metrics` writes with it.
 *
 * The parser never reads past the given length, needs no terminating NUL,
 * and reports the first fault with its 1-based column. */
#ifndef ORION_UTIL_JSONL_H
#define ORION_UTIL_JSONL_H

#include <stddef.h>

#include "util/error.h"

typedef enum orion_jsonl_kind {
  ORION_JSONL_NULL,
  ORION_JSONL_BOOL,   /* num is 0 or 1 */
  ORION_JSONL_NUMBER, /* num; +-inf when the text overflows a double */
  ORION_JSONL_STRING, /* str, decoded to UTF-8 (may hold NUL: str_len) */
  ORION_JSONL_NESTED  /* an array or an object */
} orion_jsonl_kind;

typedef struct orion_jsonl_member {
  char *key; /* decoded, NUL-terminated */
  orion_jsonl_kind kind;
  double num;
  char *str; /* STRING only, NUL-terminated; else NULL */
  size_t str_len;
} orion_jsonl_member;

/* The members of one object in text order.  Owns its keys and strings;
 * free with orion_jsonl_free. */
typedef struct orion_jsonl_object {
  orion_jsonl_member *m;
  size_t n, cap;
} orion_jsonl_object;

/* Parses text[0..len) as one JSON object, with white space around it
 * allowed, into *out (which the call initialises; free it with
 * orion_jsonl_free whatever the result).  Returns 0; ORION_EPARSE with
 * err->msg saying what was expected and at which column ("column 7:
 * expected ':' after a key"), also when the text is JSON but not an object;
 * or ORION_ENOMEM. */
int orion_jsonl_parse(const char *text, size_t len, orion_jsonl_object *out,
                      orion_error *err);

/* The first member named key, or NULL. */
const orion_jsonl_member *orion_jsonl_get(const orion_jsonl_object *o,
                                          const char *key);

/* Frees what o holds and leaves it empty. */
void orion_jsonl_free(orion_jsonl_object *o);

#endif
