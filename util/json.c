/* The JSON writer (see json.h). */
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void orion_json_init(orion_json *j, orion_buf *b) {
  memset(j, 0, sizeof *j);
  j->b = b;
}

int orion_json_ok(const orion_json *j) {
  return !j->bad && !j->b->oom && j->depth == 0 && !j->want_value;
}

/* Before a value: the comma after a previous member, and a check that a
 * value may stand here (after a key in an object, anywhere in an array,
 * or once at the top). */
static int value_slot(orion_json *j) {
  if (j->bad)
    return 0;
  if (j->depth == 0) {
    if (j->top) /* a second top-level value */
      j->bad = 1;
    j->top = 1;
    return !j->bad;
  }
  if (j->kind[j->depth - 1] == '{') {
    if (!j->want_value) {
      j->bad = 1;
      return 0;
    }
    j->want_value = 0;
    return 1;
  }
  if (j->count[j->depth - 1])
    orion_buf_u8(j->b, ',');
  j->count[j->depth - 1] = 1;
  return 1;
}

static void open_level(orion_json *j, char kind) {
  if (!value_slot(j))
    return;
  if (j->depth == ORION_JSON_DEPTH) {
    j->bad = 1;
    return;
  }
  j->kind[j->depth] = (unsigned char)kind;
  j->count[j->depth] = 0;
  j->depth++;
  orion_buf_u8(j->b, (uint8_t)kind);
}

void orion_json_object(orion_json *j) { open_level(j, '{'); }

void orion_json_array(orion_json *j) { open_level(j, '['); }

void orion_json_end(orion_json *j) {
  if (j->bad || j->depth == 0 || j->want_value) {
    j->bad = 1;
    return;
  }
  j->depth--;
  orion_buf_u8(j->b, j->kind[j->depth] == '{' ? '}' : ']');
}

void orion_json_key(orion_json *j, const char *key) {
  if (j->bad || j->depth == 0 || j->kind[j->depth - 1] != '{' ||
      j->want_value) {
    j->bad = 1;
    return;
  }
  if (j->count[j->depth - 1])
    orion_buf_u8(j->b, ',');
  j->count[j->depth - 1] = 1;
  orion_json_quote(j->b, key, strlen(key));
  orion_buf_u8(j->b, ':');
  j->want_value = 1;
}

/* The length of the UTF-8 sequence at s[0..n), or 0 when it is not one
 * (a stray continuation byte, an overlong form, a surrogate, a code point
 * past U+10FFFF or a cut sequence). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len, i;
  unsigned long cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return len;
}

void orion_json_quote(orion_buf *b, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  orion_buf_u8(b, '"');
  while (i < n) {
    unsigned char c = p[i];
    size_t len;
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      orion_buf_append(b, esc, 2);
      i++;
    } else if (c < 0x20) { /* \u000a, as --metrics files always had */
      snprintf(esc, sizeof esc, "\\u%04x", c);
      orion_buf_append(b, esc, 6);
      i++;
    } else if ((len = utf8_len(p + i, n - i)) == 0) {
      orion_buf_append(b, "\\ufffd", 6);
      i++;
    } else {
      orion_buf_append(b, p + i, len);
      i += len;
    }
  }
  orion_buf_u8(b, '"');
}

void orion_json_strn(orion_json *j, const char *s, size_t n) {
  if (value_slot(j))
    orion_json_quote(j->b, s, n);
}

void orion_json_str(orion_json *j, const char *s) {
  if (s == NULL)
    orion_json_null(j);
  else
    orion_json_strn(j, s, strlen(s));
}

void orion_json_int(orion_json *j, int64_t v) {
  char num[32];
  int n = snprintf(num, sizeof num, "%lld", (long long)v);
  if (value_slot(j))
    orion_buf_append(j->b, num, (size_t)n);
}

void orion_json_num(orion_json *j, double v) {
  char num[40];
  int n;
  if (!isfinite(v)) {
    orion_json_null(j);
    return;
  }
  /* The shortest of 15 or 17 digits that reads back as v. */
  n = snprintf(num, sizeof num, "%.15g", v);
  if (strtod(num, NULL) != v)
    n = snprintf(num, sizeof num, "%.17g", v);
  if (value_slot(j))
    orion_buf_append(j->b, num, (size_t)n);
}

void orion_json_bool(orion_json *j, int v) {
  if (value_slot(j))
    orion_buf_append(j->b, v ? "true" : "false", v ? 4 : 5);
}

void orion_json_null(orion_json *j) {
  if (value_slot(j))
    orion_buf_append(j->b, "null", 4);
}

void orion_json_raw(orion_json *j, const char *s, size_t n) {
  if (value_slot(j))
    orion_buf_append(j->b, s, n);
}
