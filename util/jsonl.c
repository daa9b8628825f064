#include "util/jsonl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"

/* Arrays and objects nest at most this deep (the stack stays small). */
#define MAX_DEPTH 64

/* The parser's cursor: text[0..len), at pos; err gets the first fault. */
typedef struct cursor {
  const char *text;
  size_t len, pos;
  orion_error *err;
} cursor;

/* What a byte is called in a message: 'x', or "the end of the line". */
static const char *what_is(const cursor *c, char *buf, size_t n) {
  unsigned char ch;
  if (c->pos >= c->len)
    return "the end of the line";
  ch = (unsigned char)c->text[c->pos];
  if (ch >= 0x20 && ch < 0x7f)
    snprintf(buf, n, "'%c'", ch);
  else
    snprintf(buf, n, "byte 0x%02x", ch);
  return buf;
}

/* Fails at the cursor: "column C: expected WHAT, found X". */
static int expected(cursor *c, const char *what) {
  char buf[32];
  return orion_error_set(c->err, ORION_EPARSE, "column %zu: expected %s, "
                                               "found %s",
                         c->pos + 1, what, what_is(c, buf, sizeof buf));
}

static void skip_ws(cursor *c) {
  while (c->pos < c->len && (c->text[c->pos] == ' ' ||
                             c->text[c->pos] == '\t' ||
                             c->text[c->pos] == '\r' ||
                             c->text[c->pos] == '\n'))
    c->pos++;
}

static int peek(const cursor *c) {
  return c->pos < c->len ? (unsigned char)c->text[c->pos] : -1;
}

static int hex4(const cursor *c, size_t at, unsigned *out) {
  unsigned v = 0;
  size_t i;
  if (at + 4 > c->len)
    return -1;
  for (i = 0; i < 4; i++) {
    char h = c->text[at + i];
    v <<= 4;
    if (h >= '0' && h <= '9')
      v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f')
      v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F')
      v |= (unsigned)(h - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static void put_utf8(orion_buf *b, unsigned cp) {
  unsigned char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (unsigned char)(0xc0 | (cp >> 6));
    u[1] = (unsigned char)(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (unsigned char)(0xe0 | (cp >> 12));
    u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    u[2] = (unsigned char)(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    u[0] = (unsigned char)(0xf0 | (cp >> 18));
    u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    u[3] = (unsigned char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  orion_buf_append(b, u, n);
}

/* A \u escape at the cursor (on the 'u'): one code point, or a surrogate
 * pair as two escapes; a lone surrogate becomes U+FFFD. */
static int unicode_escape(cursor *c, orion_buf *b) {
  unsigned cp, lo;
  if (hex4(c, c->pos + 1, &cp) != 0) {
    c->pos++; /* to the first digit that is not hex */
    while (c->pos < c->len && strchr("0123456789abcdefABCDEF",
                                     c->text[c->pos]) != NULL &&
           c->text[c->pos] != '\0')
      c->pos++;
    return expected(c, "four hex digits after \\u");
  }
  c->pos += 5;
  if (cp >= 0xd800 && cp < 0xdc00 && c->pos + 6 <= c->len &&
      c->text[c->pos] == '\\' && c->text[c->pos + 1] == 'u' &&
      hex4(c, c->pos + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    c->pos += 6;
  } else if (cp >= 0xd800 && cp < 0xe000) {
    cp = 0xfffd;
  }
  put_utf8(b, cp);
  return 0;
}

/* A string at the cursor (on the '"'), decoded into b (when not NULL). */
static int string(cursor *c, orion_buf *b) {
  static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
  c->pos++;
  for (;;) {
    int ch = peek(c);
    const char *e;
    if (ch < 0)
      return expected(c, "'\"' to close the string");
    if (ch == '"') {
      c->pos++;
      return 0;
    }
    if (ch < 0x20)
      return expected(c, "a character (control bytes must be escaped)");
    if (ch != '\\') {
      size_t start = c->pos;
      while (c->pos < c->len && c->text[c->pos] != '"' &&
             c->text[c->pos] != '\\' && (unsigned char)c->text[c->pos] >= 0x20)
        c->pos++;
      if (b != NULL)
        orion_buf_append(b, c->text + start, c->pos - start);
      continue;
    }
    c->pos++;
    ch = peek(c);
    if (ch == 'u') {
      orion_buf scratch;
      int rc;
      orion_buf_init(&scratch);
      rc = unicode_escape(c, b != NULL ? b : &scratch);
      orion_buf_free(&scratch);
      if (rc != 0)
        return rc;
      continue;
    }
    e = ch > 0 ? strchr(esc_in, ch) : NULL;
    if (e == NULL)
      return expected(c, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
    if (b != NULL)
      orion_buf_append(b, &esc_out[e - esc_in], 1);
    c->pos++;
  }
}

static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }

/* A number at the cursor, in JSON's grammar; *out its value. */
static int number(cursor *c, double *out) {
  size_t start = c->pos;
  char small[64], *copy;
  if (peek(c) == '-')
    c->pos++;
  if (peek(c) == '0')
    c->pos++;
  else if (is_digit(peek(c)))
    while (is_digit(peek(c)))
      c->pos++;
  else
    return expected(c, "a digit");
  if (peek(c) == '.') {
    c->pos++;
    if (!is_digit(peek(c)))
      return expected(c, "a digit after '.'");
    while (is_digit(peek(c)))
      c->pos++;
  }
  if (peek(c) == 'e' || peek(c) == 'E') {
    c->pos++;
    if (peek(c) == '+' || peek(c) == '-')
      c->pos++;
    if (!is_digit(peek(c)))
      return expected(c, "a digit in the exponent");
    while (is_digit(peek(c)))
      c->pos++;
  }
  /* strtod needs a terminated copy: the text is not. */
  copy = c->pos - start < sizeof small ? small
                                       : orion_strndup(c->text + start,
                                                       c->pos - start);
  if (copy == NULL)
    return orion_error_set(c->err, ORION_ENOMEM, "out of memory");
  if (copy == small) {
    memcpy(small, c->text + start, c->pos - start);
    small[c->pos - start] = '\0';
  }
  *out = strtod(copy, NULL);
  if (copy != small)
    orion_free(copy);
  return 0;
}

static int literal(cursor *c, const char *word) {
  size_t n = strlen(word);
  if (c->pos + n > c->len || memcmp(c->text + c->pos, word, n) != 0)
    return expected(c, "a value");
  c->pos += n;
  return 0;
}

static int value(cursor *c, orion_jsonl_member *m, int depth);

/* An array or object at the cursor, checked and dropped. */
static int nested(cursor *c, int depth) {
  int close = peek(c) == '[' ? ']' : '}', first = 1;
  if (depth >= MAX_DEPTH)
    return orion_error_set(c->err, ORION_EPARSE,
                           "column %zu: nested deeper than %d levels",
                           c->pos + 1, MAX_DEPTH);
  c->pos++;
  for (;;) {
    orion_jsonl_member skip;
    int rc;
    skip_ws(c);
    if (first && peek(c) == close) {
      c->pos++;
      return 0;
    }
    if (close == '}') {
      if (peek(c) != '"')
        return expected(c, first ? "a key or '}'" : "a key");
      if ((rc = string(c, NULL)) != 0)
        return rc;
      skip_ws(c);
      if (peek(c) != ':')
        return expected(c, "':' after a key");
      c->pos++;
      skip_ws(c);
    }
    memset(&skip, 0, sizeof skip);
    if ((rc = value(c, &skip, depth + 1)) != 0)
      return rc;
    orion_free(skip.str);
    skip_ws(c);
    if (peek(c) == close) {
      c->pos++;
      return 0;
    }
    if (peek(c) != ',')
      return expected(c, close == '}' ? "',' or '}'" : "',' or ']'");
    c->pos++;
    first = 0;
  }
}

/* A value at the cursor into m (kind, num, str). */
static int value(cursor *c, orion_jsonl_member *m, int depth) {
  int ch = peek(c), rc;
  switch (ch) {
  case '"': {
    orion_buf b;
    orion_buf_init(&b);
    rc = string(c, &b);
    orion_buf_append(&b, "", 1);
    if (rc == 0 && b.oom)
      rc = orion_error_set(c->err, ORION_ENOMEM, "out of memory");
    if (rc != 0) {
      orion_buf_free(&b);
      return rc;
    }
    m->kind = ORION_JSONL_STRING;
    m->str = b.data;
    m->str_len = b.len - 1;
    return 0;
  }
  case '[':
  case '{':
    m->kind = ORION_JSONL_NESTED;
    return nested(c, depth);
  case 't':
  case 'f':
    m->kind = ORION_JSONL_BOOL;
    m->num = ch == 't';
    return literal(c, ch == 't' ? "true" : "false");
  case 'n':
    m->kind = ORION_JSONL_NULL;
    return literal(c, "null");
  default:
    if (ch == '-' || is_digit(ch)) {
      m->kind = ORION_JSONL_NUMBER;
      return number(c, &m->num);
    }
    return expected(c, "a value");
  }
}

static int add_member(orion_jsonl_object *o, orion_error *err) {
  if (o->n == o->cap) {
    size_t cap = o->cap == 0 ? 16 : o->cap * 2;
    orion_jsonl_member *m = orion_realloc(o->m, cap * sizeof *m);
    if (m == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    o->m = m;
    o->cap = cap;
  }
  memset(&o->m[o->n], 0, sizeof o->m[o->n]);
  o->n++;
  return 0;
}

int orion_jsonl_parse(const char *text, size_t len, orion_jsonl_object *out,
                      orion_error *err) {
  cursor c;
  int rc;
  memset(out, 0, sizeof *out);
  c.text = text;
  c.len = len;
  c.pos = 0;
  c.err = err;
  skip_ws(&c);
  if (peek(&c) != '{') {
    int ch = peek(&c);
    if (ch == '[' || ch == '"' || ch == '-' || is_digit(ch) || ch == 't' ||
        ch == 'f' || ch == 'n')
      return orion_error_set(err, ORION_EPARSE,
                             "column %zu: a JSON value, but not an object "
                             "('{')",
                             c.pos + 1);
    return expected(&c, "a JSON object ('{')");
  }
  c.pos++;
  skip_ws(&c);
  if (peek(&c) == '}') {
    c.pos++;
  } else {
    for (;;) {
      orion_jsonl_member *m;
      orion_buf key;
      skip_ws(&c);
      if (peek(&c) != '"')
        return expected(&c, out->n == 0 ? "a key or '}'" : "a key");
      if ((rc = add_member(out, err)) != 0)
        return rc;
      m = &out->m[out->n - 1];
      orion_buf_init(&key);
      rc = string(&c, &key);
      orion_buf_append(&key, "", 1);
      if (rc == 0 && key.oom)
        rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      if (rc != 0) {
        orion_buf_free(&key);
        return rc;
      }
      m->key = key.data;
      skip_ws(&c);
      if (peek(&c) != ':')
        return expected(&c, "':' after a key");
      c.pos++;
      skip_ws(&c);
      if ((rc = value(&c, m, 1)) != 0)
        return rc;
      skip_ws(&c);
      if (peek(&c) == '}') {
        c.pos++;
        break;
      }
      if (peek(&c) != ',')
        return expected(&c, "',' or '}'");
      c.pos++;
    }
  }
  skip_ws(&c);
  if (c.pos < c.len)
    return expected(&c, "the end of the line after the object");
  return 0;
}

const orion_jsonl_member *orion_jsonl_get(const orion_jsonl_object *o,
                                          const char *key) {
  size_t i;
  for (i = 0; i < o->n; i++)
    if (strcmp(o->m[i].key, key) == 0)
      return &o->m[i];
  return NULL;
}

void orion_jsonl_free(orion_jsonl_object *o) {
  size_t i;
  for (i = 0; i < o->n; i++) {
    orion_free(o->m[i].key);
    orion_free(o->m[i].str);
  }
  orion_free(o->m);
  memset(o, 0, sizeof *o);
}
