/* The text loaders' scanner: the parts of dsm/load_scan.h that do not run
 * once per field (the strtod path of numbers, "::" fields, byte-range
 * line starts, line messages). */
#include "dsm/load_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines quoted in messages are cut to this many bytes. */
#define QUOTE_MAX 80

/* The syntax check, then strtod on a NUL-terminated copy (see
 * load_scan.h).  Allocates nothing. */
int orion__scan_double_slow(const char *s, const char *e, double *out) {
  char tmp[ORION_SCAN_NUM_MAX + 1];
  const char *p = s;
  char *end;
  size_t n = (size_t)(e - s);
  int digits = 0;
  double v;
  if (p < e && (*p == '+' || *p == '-'))
    p++;
  for (; p < e && scan_is_digit(*p); p++)
    digits++;
  if (p < e && *p == '.')
    for (p++; p < e && scan_is_digit(*p); p++)
      digits++;
  if (digits == 0)
    return NUM_BAD;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-'))
      p++;
    if (p == e || !scan_is_digit(*p))
      return NUM_BAD;
    while (p < e && scan_is_digit(*p))
      p++;
  }
  if (p != e)
    return NUM_BAD;
  if (n > ORION_SCAN_NUM_MAX)
    return NUM_LONG;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  v = strtod(tmp, &end);
  if (end != tmp + n)
    return NUM_BAD; /* a locale whose decimal point is not '.' */
  if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
    return NUM_RANGE;
  *out = v;
  return NUM_OK;
}

/* Fields between "::" separators; f is the caller's. */
int orion__scan_split_dcolon(const char *s, const char *e, field *f, int cap) {
  int n = 0;
  for (;;) {
    const char *p = s, *fe = e, *next = NULL;
    while (p < e) {
      const char *c = memchr(p, ':', (size_t)(e - p));
      if (c == NULL)
        break;
      if (c + 1 < e && c[1] == ':') {
        fe = c;
        next = c + 2;
        break;
      }
      p = c + 1;
    }
    if (n < cap) {
      f[n].s = s;
      f[n].e = fe;
      scan_trim(&f[n].s, &f[n].e, 0);
    }
    n++;
    if (next == NULL)
      return n;
    s = next;
  }
}

/* A range's first line start; reads buf only. */
size_t orion__scan_line_start(const char *buf, size_t len, size_t off) {
  const char *nl;
  if (off == 0 || off >= len || buf[off - 1] == '\n')
    return off;
  nl = memchr(buf + off, '\n', len - off);
  return nl != NULL ? (size_t)(nl - buf) + 1 : len;
}

/* Writes the message into the caller's dst. */
/* The length of the valid UTF-8 sequence at s (before e), or 0 when the
 * bytes there are not one (a stray continuation, an overlong form, a
 * surrogate, beyond U+10FFFF, or cut short). */
static size_t utf8_len(const unsigned char *s, const unsigned char *e) {
  unsigned char c = s[0], lo = 0x80, hi = 0xbf;
  size_t k, i;
  if (c >= 0xc2 && c <= 0xdf)
    k = 2;
  else if (c >= 0xe0 && c <= 0xef)
    k = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    k = 4;
  else
    return 0;
  if (c == 0xe0)
    lo = 0xa0; /* overlong */
  else if (c == 0xed)
    hi = 0x9f; /* surrogates */
  else if (c == 0xf0)
    lo = 0x90; /* overlong */
  else if (c == 0xf4)
    hi = 0x8f; /* beyond U+10FFFF */
  if ((size_t)(e - s) < k || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < k; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return k;
}

void orion__scan_line_message(char *dst, size_t cap, const char *name,
                              int64_t lineno, const char *prob, const char *s,
                              const char *e) {
  /* Control bytes and bytes that are not UTF-8 (binary garbage) become
   * '?', so a message never writes them to a terminal; whole UTF-8
   * characters are kept, and the quote is cut between characters. */
  const unsigned char *p = (const unsigned char *)s;
  const unsigned char *end = (const unsigned char *)e;
  char text[QUOTE_MAX + 4];
  size_t n = 0, k;
  while (p < end && n < QUOTE_MAX) {
    if (*p < 0x80) {
      text[n++] = (char)((*p < 0x20 && *p != '\t') || *p == 0x7f ? '?' : *p);
      p++;
    } else if ((k = utf8_len(p, end)) == 0) {
      text[n++] = '?';
      p++;
    } else if (n + k > QUOTE_MAX) {
      break;
    } else {
      memcpy(text + n, p, k);
      n += k;
      p += k;
    }
  }
  if (p < end) {
    memcpy(text + n, "...", 3);
    n += 3;
  }
  text[n] = '\0';
  snprintf(dst, cap, "%s:%lld: %s: \"%s\"", name, (long long)lineno, prob,
           text);
}
