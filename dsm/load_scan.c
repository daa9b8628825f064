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
void orion__scan_line_message(char *dst, size_t cap, const char *name,
                              int64_t lineno, const char *prob, const char *s,
                              const char *e) {
  char text[QUOTE_MAX + 4];
  size_t n = 0, len = (size_t)(e - s);
  size_t take = len > QUOTE_MAX ? QUOTE_MAX : len;
  for (n = 0; n < take; n++) {
    unsigned char c = (unsigned char)s[n];
    text[n] = (char)((c < 0x20 && c != '\t') || c == 0x7f ? '?' : c);
  }
  if (take < len) {
    while (n > 0 && ((unsigned char)text[n - 1] & 0xc0) == 0x80)
      n--;
    if (n > 0 && (unsigned char)text[n - 1] >= 0xc0)
      n--;
    memcpy(text + n, "...", 3);
    n += 3;
  }
  text[n] = '\0';
  snprintf(dst, cap, "%s:%lld: %s: \"%s\"", name, (long long)lineno, prob,
           text);
}
