/* The Lua 5.4 lexer.  See lex.h for the token model and error positions.
 *
 * Character classes are spelled out here rather than taken from <ctype.h>:
 * Lua's lexer is locale-independent (identifiers are ASCII letters, digits
 * and '_'), and bytes >= 0x80 must never count as letters.
 */
#include "analysis/lex.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes --------------------------------------------------- */

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int is_xdigit(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }

static int is_newline(int c) { return c == '\n' || c == '\r'; }

/* Lua's lisspace: the C locale's isspace. */
static int is_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

static int hex_value(int c) {
  if (is_digit(c))
    return c - '0';
  return (c | 0x20) - 'a' + 10;
}

/* ---- token names ---------------------------------------------------------- */

static const char *const tok_names[] = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function",
  "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then",
  "true", "until", "while",
  "//", "..", "...", "==", ">=", "<=", "~=", "<<", ">>", "::",
  "<eof>", "<number>", "<integer>", "<name>", "<string>"
};

#define NUM_RESERVED (TK_WHILE - TK_FIRST + 1)

const char *orion_lex_kind_text(int kind, char *buf, size_t n) {
  if (kind >= 0 && kind < 256) {
    if (kind >= 32 && kind < 127)
      snprintf(buf, n, "'%c'", kind);
    else
      snprintf(buf, n, "'<\\%d>'", kind);
    return buf;
  }
  if (kind < TK_FIRST || kind >= TK_LAST)
    return "<?>";
  if (kind < TK_EOF) {
    snprintf(buf, n, "'%s'", tok_names[kind - TK_FIRST]);
    return buf;
  }
  return tok_names[kind - TK_FIRST];
}

/* Appends s[0..len) to buf (capacity n, kept NUL-terminated), showing
 * control bytes as <\N> so a message stays one printable line. */
static void near_text(const char *s, size_t len, char *buf, size_t n) {
  size_t o = 0, i;
  const size_t max_shown = 40;
  if (n < 8) {
    if (n > 0)
      buf[0] = '\0';
    return;
  }
  buf[o++] = '\'';
  for (i = 0; i < len && i < max_shown; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    size_t k;
    if (c < 32 || c == 127)
      k = (size_t)snprintf(tmp, sizeof tmp, "<\\%d>", c);
    else {
      tmp[0] = (char)c;
      k = 1;
    }
    if (o + k + 5 > n)
      break;
    memcpy(buf + o, tmp, k);
    o += k;
  }
  if (i < len && o + 5 <= n) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o++] = '\'';
  buf[o] = '\0';
}

void orion_lex_near(const orion_token *t, char *buf, size_t n) {
  if (t->kind == TK_EOF)
    snprintf(buf, n, "<eof>");
  else if (t->kind < 256)
    orion_lex_kind_text(t->kind, buf, n); /* '<\255>' for odd bytes */
  else
    near_text(t->raw, t->rawlen, buf, n);
}

/* ---- the reader ----------------------------------------------------------- */

void orion_lex_init(orion_lexer *lx, const char *src, size_t len,
                    const char *chunkname, orion__arena *arena,
                    orion_error *err) {
  if (src == NULL) {
    src = "";
    len = 0;
  }
  lx->src = lx->p = lx->line_start = src;
  lx->end = src + len;
  lx->line = 1;
  lx->chunkname = chunkname != NULL ? chunkname : "?";
  lx->arena = arena;
  orion_buf_init(&lx->scratch);
  lx->err = err;
  /* A UTF-8 byte-order mark, then a '#' first line, are skipped the way
   * luaL_loadfile skips them; the line break stays, keeping line numbers. */
  if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0)
    lx->p += 3;
  if (lx->p < lx->end && *lx->p == '#')
    while (lx->p < lx->end && !is_newline((unsigned char)*lx->p))
      lx->p++;
}

void orion_lex_free(orion_lexer *lx) { orion_buf_free(&lx->scratch); }

static int column_of(const orion_lexer *lx, const char *p) {
  size_t c = (size_t)(p - lx->line_start) + 1;
  return c > INT_MAX ? INT_MAX : (int)c;
}

/* Reports an error at (line, col) near the text s[0..len), or near <eof>
 * when s is NULL. */
static int lex_error(orion_lexer *lx, int line, int col, const char *s,
                     size_t len, const char *msg) {
  char near[128];
  if (s == NULL)
    snprintf(near, sizeof near, "<eof>");
  else
    near_text(s, len, near, sizeof near);
  return orion_error_set(lx->err, ORION_EPARSE, "%s:%d:%d: %s near %s",
                         lx->chunkname, line, col, msg, near);
}

static int oom(orion_lexer *lx) {
  return orion_error_set(lx->err, ORION_ENOMEM, "%s: out of memory",
                         lx->chunkname);
}

/* Skips the line break at lx->p: one of \n, \r, \n\r, \r\n. */
static int skip_newline(orion_lexer *lx) {
  char first = *lx->p++;
  if (lx->p < lx->end && is_newline((unsigned char)*lx->p) &&
      *lx->p != first)
    lx->p++;
  if (lx->line == INT_MAX)
    return lex_error(lx, lx->line, 1, NULL, 0, "chunk has too many lines");
  lx->line++;
  lx->line_start = lx->p;
  return 0;
}

static int peek(const orion_lexer *lx, size_t k) {
  return (size_t)(lx->end - lx->p) > k ? (unsigned char)lx->p[k] : -1;
}

/* Counts the '=' of a long bracket whose first '[' or ']' is at lx->p;
 * *closed tells whether the same bracket closes it.  Nothing is consumed. */
static size_t bracket_level(const orion_lexer *lx, int bracket, int *closed) {
  size_t k = 1;
  while (peek(lx, k) == '=')
    k++;
  *closed = peek(lx, k) == bracket;
  return k - 1;
}

static void scratch_add(orion_lexer *lx, char c) {
  orion_buf_append(&lx->scratch, &c, 1);
}

/* Copies the scratch buffer into the arena as t->str. */
static int finish_string(orion_lexer *lx, orion_token *t) {
  if (lx->scratch.oom)
    return oom(lx);
  t->len = lx->scratch.len;
  t->str = orion__arena_strdup(lx->arena, lx->scratch.data, t->len);
  if (t->str == NULL)
    return oom(lx);
  return 0;
}

/* Reads a long string or comment at the opening bracket (level '='s).
 * Line breaks inside become "\n"; a break right after the opening bracket
 * is dropped. */
static int read_long(orion_lexer *lx, orion_token *t, size_t level,
                     int is_comment) {
  int start_line = lx->line;
  int rc;
  lx->p += level + 2;
  lx->scratch.len = 0;
  if (lx->p < lx->end && is_newline((unsigned char)*lx->p) &&
      (rc = skip_newline(lx)) != 0)
    return rc;
  for (;;) {
    int c, closed;
    if (lx->p >= lx->end) {
      char msg[96];
      snprintf(msg, sizeof msg, "unfinished long %s (starting at line %d)",
               is_comment ? "comment" : "string", start_line);
      return lex_error(lx, lx->line, column_of(lx, lx->p), NULL, 0, msg);
    }
    c = (unsigned char)*lx->p;
    if (c == ']') {
      size_t l = bracket_level(lx, ']', &closed);
      if (closed && l == level) {
        lx->p += level + 2;
        break;
      }
      /* Not our closing bracket: keep the ']' and the '='s, and look at
       * whatever follows afresh (it may start the real closing one). */
      if (!is_comment)
        orion_buf_append(&lx->scratch, lx->p, l + 1);
      lx->p += l + 1;
    } else if (is_newline(c)) {
      if (!is_comment)
        scratch_add(lx, '\n');
      if ((rc = skip_newline(lx)) != 0)
        return rc;
    } else {
      /* Copy the run of ordinary bytes at once. */
      const char *q = lx->p;
      while (q < lx->end && *q != ']' && !is_newline((unsigned char)*q))
        q++;
      if (!is_comment)
        orion_buf_append(&lx->scratch, lx->p, (size_t)(q - lx->p));
      lx->p = q;
    }
  }
  if (is_comment)
    return 0;
  t->kind = TK_STRING;
  return finish_string(lx, t);
}

/* Appends the extended UTF-8 encoding of x (< 2^31) as Lua does: up to six
 * bytes, the first with as many leading ones as the sequence has bytes. */
static void utf8_add(orion_lexer *lx, unsigned long x) {
  char b[6];
  int n, i;
  if (x < 0x80) {
    scratch_add(lx, (char)x);
    return;
  }
  if (x < 0x800)
    n = 2;
  else if (x < 0x10000)
    n = 3;
  else if (x < 0x200000)
    n = 4;
  else if (x < 0x4000000)
    n = 5;
  else
    n = 6;
  for (i = n - 1; i > 0; i--) {
    b[i] = (char)(0x80 | (x & 0x3f));
    x >>= 6;
  }
  b[0] = (char)(((0xff00u >> n) & 0xffu) | x);
  orion_buf_append(&lx->scratch, b, (size_t)n);
}

/* An error about the escape sequence at esc, shown up to and including the
 * byte at lx->p (the offending one) when there is one. */
static int escape_error(orion_lexer *lx, const orion_token *t,
                        const char *esc, const char *msg) {
  const char *stop = lx->p < lx->end ? lx->p + 1 : lx->end;
  return lex_error(lx, lx->line, column_of(lx, esc), t->raw,
                   (size_t)(stop - t->raw), msg);
}

/* Reads the escape sequence whose backslash is at lx->p. */
static int read_escape(orion_lexer *lx, const orion_token *t) {
  const char *esc = lx->p;
  int c, rc;
  lx->p++;
  if (lx->p >= lx->end)
    return 0; /* the caller reports the unfinished string */
  c = (unsigned char)*lx->p;
  switch (c) {
  case 'a': scratch_add(lx, '\a'); break;
  case 'b': scratch_add(lx, '\b'); break;
  case 'f': scratch_add(lx, '\f'); break;
  case 'n': scratch_add(lx, '\n'); break;
  case 'r': scratch_add(lx, '\r'); break;
  case 't': scratch_add(lx, '\t'); break;
  case 'v': scratch_add(lx, '\v'); break;
  case '\\': case '"': case '\'':
    scratch_add(lx, (char)c);
    break;
  case '\n': case '\r':
    scratch_add(lx, '\n');
    return skip_newline(lx);
  case 'x': {
    int v = 0, i;
    for (i = 0; i < 2; i++) {
      lx->p++;
      if (lx->p >= lx->end || !is_xdigit((unsigned char)*lx->p))
        return escape_error(lx, t, esc, "hexadecimal digit expected");
      v = v * 16 + hex_value((unsigned char)*lx->p);
    }
    scratch_add(lx, (char)v);
    break;
  }
  case 'z':
    lx->p++;
    while (lx->p < lx->end && is_space((unsigned char)*lx->p)) {
      if (is_newline((unsigned char)*lx->p)) {
        if ((rc = skip_newline(lx)) != 0)
          return rc;
      } else {
        lx->p++;
      }
    }
    return 0;
  case 'u': {
    unsigned long v;
    lx->p++;
    if (lx->p >= lx->end || *lx->p != '{')
      return escape_error(lx, t, esc, "missing '{' in \\u{xxxx}");
    lx->p++;
    if (lx->p >= lx->end || !is_xdigit((unsigned char)*lx->p))
      return escape_error(lx, t, esc, "hexadecimal digit expected");
    v = 0;
    while (lx->p < lx->end && is_xdigit((unsigned char)*lx->p)) {
      v = v * 16 + (unsigned long)hex_value((unsigned char)*lx->p);
      if (v > 0x7FFFFFFFul)
        return escape_error(lx, t, esc, "UTF-8 value too large");
      lx->p++;
    }
    if (lx->p >= lx->end || *lx->p != '}')
      return escape_error(lx, t, esc, "missing '}' in \\u{xxxx}");
    utf8_add(lx, v);
    break;
  }
  default:
    if (is_digit(c)) {
      int v = 0, i;
      for (i = 0; i < 3 && lx->p < lx->end && is_digit((unsigned char)*lx->p);
           i++)
        v = v * 10 + (*lx->p++ - '0');
      if (v > 255) {
        lx->p--; /* show the last digit as the offending byte */
        return escape_error(lx, t, esc, "decimal escape too large");
      }
      scratch_add(lx, (char)v);
      return 0;
    }
    return escape_error(lx, t, esc, "invalid escape sequence");
  }
  lx->p++;
  return 0;
}

/* Reads a short string; lx->p is at its opening quote. */
static int read_string(orion_lexer *lx, orion_token *t) {
  char quote = *lx->p++;
  int rc;
  lx->scratch.len = 0;
  for (;;) {
    int c;
    if (lx->p >= lx->end)
      return lex_error(lx, t->line, t->col, NULL, 0, "unfinished string");
    c = (unsigned char)*lx->p;
    if (c == quote) {
      lx->p++;
      break;
    }
    if (is_newline(c))
      return lex_error(lx, t->line, t->col, t->raw,
                       (size_t)(lx->p - t->raw), "unfinished string");
    if (c == '\\') {
      if ((rc = read_escape(lx, t)) != 0)
        return rc;
    } else {
      const char *q = lx->p;
      while (q < lx->end && *q != quote && *q != '\\' &&
             !is_newline((unsigned char)*q))
        q++;
      orion_buf_append(&lx->scratch, lx->p, (size_t)(q - lx->p));
      lx->p = q;
    }
  }
  t->kind = TK_STRING;
  return finish_string(lx, t);
}

/* Converts a decimal or hex float text with strtod, which rounds exactly
 * (Lua itself uses strtod for both).  The text was validated already; the
 * copy swaps in the locale's decimal point, which strtod insists on. */
static int to_double(orion_lexer *lx, const char *s, size_t len, double *out) {
  char point = localeconv()->decimal_point[0];
  size_t i;
  lx->scratch.len = 0;
  orion_buf_append(&lx->scratch, s, len);
  scratch_add(lx, '\0');
  if (lx->scratch.oom)
    return oom(lx);
  if (point != '.' && point != '\0')
    for (i = 0; i < len; i++)
      if (lx->scratch.data[i] == '.')
        lx->scratch.data[i] = point;
  *out = strtod(lx->scratch.data, NULL);
  return 0;
}

/* Converts the numeral s[0..len) the way Lua's lua_stringtonumber reads a
 * numeral: an integer when it has no '.' and no exponent (hex ones wrap
 * around modulo 2^64, decimal ones that overflow become floats), a float
 * otherwise.  Returns 1 when the text is not a numeral. */
static int convert_number(orion_lexer *lx, const char *s, size_t len,
                          orion_token *t, int *rc) {
  size_t i = 0, mant = 0;
  int hex = 0, is_float = 0;
  *rc = 0;
  if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    hex = 1;
    i = 2;
  }
  for (; i < len && (hex ? is_xdigit((unsigned char)s[i])
                         : is_digit((unsigned char)s[i]));
       i++)
    mant++;
  if (i < len && s[i] == '.') {
    is_float = 1;
    for (i++; i < len && (hex ? is_xdigit((unsigned char)s[i])
                              : is_digit((unsigned char)s[i]));
         i++)
      mant++;
  }
  if (mant == 0)
    return 1;
  if (i < len && (hex ? (s[i] == 'p' || s[i] == 'P')
                      : (s[i] == 'e' || s[i] == 'E'))) {
    size_t digits = 0;
    is_float = 1;
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-'))
      i++;
    for (; i < len && is_digit((unsigned char)s[i]); i++)
      digits++;
    if (digits == 0)
      return 1;
  }
  if (i != len)
    return 1;
  if (!is_float) {
    if (hex) {
      uint64_t v = 0;
      for (i = 2; i < len; i++)
        v = v * 16 + (uint64_t)hex_value((unsigned char)s[i]);
      t->kind = TK_INT;
      t->ival = (int64_t)v;
      return 0;
    } else {
      uint64_t v = 0;
      for (i = 0; i < len; i++) {
        int d = s[i] - '0';
        if (v > (uint64_t)(INT64_MAX - d) / 10)
          break;
        v = v * 10 + (uint64_t)d;
      }
      if (i == len) {
        t->kind = TK_INT;
        t->ival = (int64_t)v;
        return 0;
      }
      /* Overflow: Lua reads it as a float instead. */
    }
  }
  t->kind = TK_FLT;
  *rc = to_double(lx, s, len, &t->fval);
  return 0;
}

/* Reads a numeral at lx->p.  Like Lua, it first takes the longest run that
 * could belong to a numeral (hex digits, '.', exponent marks with their
 * sign) plus one letter touching it, then checks the whole text, so "3x"
 * and "0x" are one malformed number rather than two tokens. */
static int read_number(orion_lexer *lx, orion_token *t) {
  const char *s = lx->p;
  char e1 = 'e', e2 = 'E';
  int rc;
  if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X')) {
    lx->p += 2;
    e1 = 'p';
    e2 = 'P';
  }
  for (;;) {
    int c = peek(lx, 0);
    if (c == e1 || c == e2) {
      lx->p++;
      if (peek(lx, 0) == '+' || peek(lx, 0) == '-')
        lx->p++;
    } else if (c >= 0 && (is_xdigit(c) || c == '.')) {
      lx->p++;
    } else {
      break;
    }
  }
  if (peek(lx, 0) >= 0 && is_alpha(peek(lx, 0)))
    lx->p++;
  t->rawlen = (size_t)(lx->p - s);
  if (convert_number(lx, s, t->rawlen, t, &rc) != 0)
    return lex_error(lx, t->line, t->col, s, t->rawlen, "malformed number");
  return rc;
}

static int read_name(orion_lexer *lx, orion_token *t) {
  const char *s = lx->p;
  size_t len;
  int k;
  while (lx->p < lx->end && is_alnum((unsigned char)*lx->p))
    lx->p++;
  len = (size_t)(lx->p - s);
  for (k = 0; k < NUM_RESERVED; k++)
    if (strlen(tok_names[k]) == len && memcmp(tok_names[k], s, len) == 0) {
      t->kind = TK_FIRST + k;
      return 0;
    }
  t->kind = TK_NAME;
  t->len = len;
  t->str = orion__arena_strdup(lx->arena, s, len);
  return t->str == NULL ? oom(lx) : 0;
}

/* Sets t->kind to two (or one) byte symbol: `a` followed by `next` gives
 * `two`, anything else `a` alone. */
static void symbol2(orion_lexer *lx, orion_token *t, int next, int two) {
  if (peek(lx, 1) == next) {
    t->kind = two;
    lx->p += 2;
  } else {
    t->kind = (unsigned char)*lx->p;
    lx->p++;
  }
}

int orion_lex_next(orion_lexer *lx, orion_token *t) {
  int rc;
  memset(t, 0, sizeof *t);
  /* Whitespace and comments. */
  for (;;) {
    int c = peek(lx, 0), closed;
    if (c < 0)
      break;
    if (is_newline(c)) {
      if ((rc = skip_newline(lx)) != 0)
        return rc;
    } else if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
      lx->p++;
    } else if (c == '-' && peek(lx, 1) == '-') {
      lx->p += 2;
      if (peek(lx, 0) == '[') {
        size_t level = bracket_level(lx, '[', &closed);
        if (closed) {
          if ((rc = read_long(lx, t, level, 1)) != 0)
            return rc;
          continue;
        }
      }
      while (lx->p < lx->end && !is_newline((unsigned char)*lx->p))
        lx->p++;
    } else {
      break;
    }
  }
  t->line = lx->line;
  t->col = column_of(lx, lx->p);
  t->raw = lx->p;
  if (lx->p >= lx->end) {
    t->kind = TK_EOF;
    return 0;
  }
  rc = 0;
  switch ((unsigned char)*lx->p) {
  case '-': case '+': case '*': case '%': case '^': case '#': case '&':
  case '|': case '(': case ')': case '{': case '}': case ']': case ';':
  case ',':
    t->kind = (unsigned char)*lx->p++;
    break;
  case '=': symbol2(lx, t, '=', TK_EQ); break;
  case '~': symbol2(lx, t, '=', TK_NE); break;
  case ':': symbol2(lx, t, ':', TK_DBCOLON); break;
  case '/': symbol2(lx, t, '/', TK_IDIV); break;
  case '<':
    if (peek(lx, 1) == '<')
      symbol2(lx, t, '<', TK_SHL);
    else
      symbol2(lx, t, '=', TK_LE);
    break;
  case '>':
    if (peek(lx, 1) == '>')
      symbol2(lx, t, '>', TK_SHR);
    else
      symbol2(lx, t, '=', TK_GE);
    break;
  case '[': {
    int closed;
    size_t level = bracket_level(lx, '[', &closed);
    if (closed) {
      rc = read_long(lx, t, level, 0);
    } else if (level > 0) {
      return lex_error(lx, t->line, t->col, t->raw, level + 1,
                       "invalid long string delimiter");
    } else {
      t->kind = '[';
      lx->p++;
    }
    break;
  }
  case '"': case '\'':
    rc = read_string(lx, t);
    break;
  case '.':
    if (peek(lx, 1) == '.') {
      if (peek(lx, 2) == '.') {
        t->kind = TK_DOTS;
        lx->p += 3;
      } else {
        t->kind = TK_CONCAT;
        lx->p += 2;
      }
    } else if (peek(lx, 1) >= 0 && is_digit(peek(lx, 1))) {
      rc = read_number(lx, t);
    } else {
      t->kind = '.';
      lx->p++;
    }
    break;
  default: {
    int c = (unsigned char)*lx->p;
    if (is_digit(c))
      rc = read_number(lx, t);
    else if (is_alpha(c))
      rc = read_name(lx, t);
    else {
      /* Any other byte is a token of its own; the parser rejects it as an
       * unexpected symbol with a position, as luac does. */
      t->kind = c;
      lx->p++;
    }
    break;
  }
  }
  t->rawlen = (size_t)(lx->p - t->raw);
  return rc;
}
