/* The text loaders' scanner (internal to dsm/load_*.c):
 * lines, fields and numbers over byte ranges [s, e) that need no NUL and
 * no locale.
 *
 * What runs once per line or per field is static inline here, so that the
 * format parsers (dsm/load_formats.c) and the line walk (dsm/load_walk.c)
 * keep it inlined as they did when they were one file; the rest lives in
 * dsm/load_scan.c.  Nothing here allocates; every function may be called
 * from any thread.
 */
#ifndef ORION_DSM_LOAD_SCAN_H
#define ORION_DSM_LOAD_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Numbers longer than this are rejected (no real number needs it). */
#define ORION_SCAN_NUM_MAX 255

/* What a number scanner found. */
enum { NUM_OK = 0, NUM_BAD, NUM_RANGE, NUM_LONG };

/* A field: the bytes [s, e) of a line. */
typedef struct field {
  const char *s, *e;
} field;

/* One line of the input: its text [s, e) without the '\n' and one CR
 * before it, and where the next line starts (the input's end after the
 * last). */
typedef struct text_line {
  const char *s, *e, *next;
} text_line;

static inline int scan_is_digit(char c) {
  return (unsigned)(unsigned char)c - '0' < 10;
}

static inline int scan_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A decimal integer with an optional sign, nothing else: NUM_OK with *out
 * set, NUM_BAD or NUM_RANGE (outside int64_t). */
static inline int scan_int(const char *s, const char *e, int64_t *out) {
  uint64_t v = 0, lim;
  int neg = 0, over = 0;
  if (s < e && (*s == '+' || *s == '-')) {
    neg = *s == '-';
    s++;
  }
  if (s == e)
    return NUM_BAD;
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; s < e; s++) {
    unsigned d = (unsigned)(unsigned char)*s - '0';
    if (d > 9)
      return NUM_BAD;
    if (v > (lim - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  if (over)
    return NUM_RANGE;
  if (!neg)
    *out = (int64_t)v;
  else if (v == (uint64_t)INT64_MAX + 1)
    *out = INT64_MIN;
  else
    *out = -(int64_t)v;
  return NUM_OK;
}

/* The general case of scan_double (dsm/load_scan.c): checks the decimal
 * syntax [sign] digits [. digits] [e [sign] digits] (so strtod's hex, inf
 * and nan forms are refused), then lets strtod round it.  NUM_LONG for
 * more than ORION_SCAN_NUM_MAX bytes. */
int orion__scan_double_slow(const char *s, const char *e, double *out);

/* A decimal number.  Up to 15 significant digits without an exponent
 * (ratings, counts, most features) are exact as an integer mantissa over
 * an exact power of ten, so one correctly rounded division gives the
 * correctly rounded result; anything else goes to strtod. */
static inline int scan_double(const char *s, const char *e, double *out) {
  static const double pow10_tab[16] = {1e0,  1e1,  1e2,  1e3, 1e4,  1e5,
                                       1e6,  1e7,  1e8,  1e9, 1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15};
  const char *p = s;
  uint64_t m = 0;
  int neg = 0, nd = 0, nf = 0;
  unsigned d;
  if (p < e && (*p == '+' || *p == '-')) {
    neg = *p == '-';
    p++;
  }
  for (; p < e && (d = (unsigned)(unsigned char)*p - '0') < 10; p++) {
    m = m * 10 + d;
    nd++;
  }
  if (p < e && *p == '.') {
    for (p++; p < e && (d = (unsigned)(unsigned char)*p - '0') < 10; p++) {
      m = m * 10 + d;
      nd++;
      nf++;
    }
  }
  if (p == e && nd > 0 && nd <= 15) {
    double v = (double)m;
    if (nf > 0)
      v /= pow10_tab[nf];
    *out = neg ? -v : v;
    return NUM_OK;
  }
  return orion__scan_double_slow(s, e, out);
}

/* Splits [s, e) at runs of blanks; stores up to cap fields in f, returns
 * how many there are. */
static inline int scan_split_ws(const char *s, const char *e, field *f,
                                int cap) {
  int n = 0;
  for (;;) {
    const char *t;
    while (s < e && scan_is_space(*s))
      s++;
    if (s == e)
      return n;
    t = s;
    while (s < e && !scan_is_space(*s))
      s++;
    if (n < cap) {
      f[n].s = t;
      f[n].e = s;
    }
    n++;
  }
}

/* Splits [s, e) at "::", each field trimmed of blanks; as scan_split_ws. */
int orion__scan_split_dcolon(const char *s, const char *e, field *f, int cap);

/* Trims spaces and tabs other than `keep` from both ends of [*s, *e). */
static inline void scan_trim(const char **s, const char **e, char keep) {
  while (*s < *e && (**s == ' ' || **s == '\t') && **s != keep)
    (*s)++;
  while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t') && (*e)[-1] != keep)
    (*e)--;
}

/* The line starting at p, in an input ending at end. */
static inline text_line scan_line_at(const char *p, const char *end) {
  text_line ln;
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  ln.s = p;
  ln.e = nl != NULL ? nl : end;
  ln.next = nl != NULL ? nl + 1 : end;
  if (ln.e > p && ln.e[-1] == '\r')
    ln.e--;
  return ln;
}

/* Whether [s, e) holds only blanks. */
static inline int scan_is_blank(const char *s, const char *e) {
  while (s < e && scan_is_space(*s))
    s++;
  return s == e;
}

/* Where the first line starting at or after off begins in buf[0, len):
 * off itself at 0 or just after a '\n', else just past the next '\n' (len
 * when none).  This is what cuts an input into byte ranges. */
size_t orion__scan_line_start(const char *buf, size_t len, size_t off);

/* "NAME:LINE: PROBLEM: "TEXT"" into dst[cap], with TEXT the line [s, e)
 * cut to 80 bytes (on a UTF-8 boundary, then "...") and control bytes
 * shown as '?'. */
void orion__scan_line_message(char *dst, size_t cap, const char *name,
                              int64_t lineno, const char *prob, const char *s,
                              const char *e);

#endif
