/* The HTTP/1.1 request parser and response writer (see http.h). */
#include "dsm/http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void orion_http_init(orion_http_req *r) {
  memset(r, 0, sizeof *r);
}

static int refuse(orion_http_req *r, int status, const char *why) {
  r->state = -1;
  r->status = status;
  r->why = why;
  return -1;
}

/* RFC 9110 tchar: the bytes of a method or a field name. */
static int is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static int str_is(orion_http_str s, const char *lit) {
  return s.n == strlen(lit) && strncasecmp(s.p, lit, s.n) == 0;
}

/* Splits the line at p[0..n) (no line end) into the request line's three
 * parts. */
static int request_line(orion_http_req *r, const char *p, size_t n) {
  const char *sp1 = memchr(p, ' ', n), *sp2, *q, *end = p + n;
  size_t i;
  if (sp1 == NULL || sp1 == p)
    return refuse(r, 400, "malformed request line");
  for (i = 0; p + i < sp1; i++)
    if (!is_tchar((unsigned char)p[i]))
      return refuse(r, 400, "malformed method");
  sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
  if (sp2 == NULL || sp2 == sp1 + 1 || memchr(sp2 + 1, ' ', (size_t)(end - sp2 - 1)))
    return refuse(r, 400, "malformed request line");
  if (sp1[1] != '/')
    return refuse(r, 400, "the target must be a path");
  for (q = sp1 + 1; q < sp2; q++)
    if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
      return refuse(r, 400, "a control or non-ASCII byte in the target");
  if (end - sp2 - 1 != 8 || strncmp(sp2 + 1, "HTTP/", 5) != 0 ||
      sp2[6] < '0' || sp2[6] > '9' || sp2[7] != '.' || sp2[8] < '0' ||
      sp2[8] > '9')
    return refuse(r, 400, "malformed HTTP version");
  if (sp2[6] != '1' || sp2[8] > '1')
    return refuse(r, 505, "only HTTP/1.0 and HTTP/1.1 are served");
  r->minor = sp2[8] - '0';
  r->method.p = p;
  r->method.n = (size_t)(sp1 - p);
  r->path.p = sp1 + 1;
  q = memchr(r->path.p, '?', (size_t)(sp2 - r->path.p));
  r->path.n = (size_t)((q != NULL ? q : sp2) - r->path.p);
  r->query.p = q != NULL ? q + 1 : sp2;
  r->query.n = q != NULL ? (size_t)(sp2 - q - 1) : 0;
  return 0;
}

/* One header field line p[0..n). */
static int field_line(orion_http_req *r, const char *p, size_t n) {
  const char *colon = memchr(p, ':', n), *v, *end = p + n;
  orion_http_str name, val;
  size_t i;
  if (p[0] == ' ' || p[0] == '\t')
    return refuse(r, 400, "obsolete line folding");
  if (colon == NULL || colon == p)
    return refuse(r, 400, "malformed header field");
  for (i = 0; p + i < colon; i++)
    if (!is_tchar((unsigned char)p[i]))
      return refuse(r, 400, "malformed header field name");
  v = colon + 1;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  name.p = p;
  name.n = (size_t)(colon - p);
  val.p = v;
  val.n = (size_t)(end - v);
  if (str_is(name, "host")) {
    if (r->host.p != NULL)
      return refuse(r, 400, "two Host fields");
    r->host = val;
  } else if (str_is(name, "authorization")) {
    r->authorization = val;
  } else if (str_is(name, "cookie")) {
    r->cookie = val;
  } else if (str_is(name, "transfer-encoding")) {
    return refuse(r, 501, "request bodies are not accepted");
  } else if (str_is(name, "content-length")) {
    for (i = 0; i < val.n; i++)
      if (val.p[i] != '0')
        return refuse(r, val.n > 0 && strspn(val.p, "0123456789") >= val.n
                             ? 413 : 400,
                      "request bodies are not accepted");
    if (val.n == 0)
      return refuse(r, 400, "an empty Content-Length");
  }
  return 0;
}

/* The head is head[0..len) up to its blank line: parse it. */
static int parse_head(orion_http_req *r, size_t len) {
  const char *p = r->head, *end = r->head + len;
  int first = 1;
  size_t i;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)r->head[i];
    if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f)
      return refuse(r, 400, "a control byte in the request head");
  }
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)(nl - p);
    if (n > 0 && p[n - 1] == '\r')
      n--;
    if (memchr(p, '\r', n) != NULL)
      return refuse(r, 400, "a bare CR in the request head");
    if (n == 0) {
      if (first) /* blank lines before the request line */
        p = nl + 1;
      else
        break; /* the end of the head */
      continue;
    }
    if ((first ? request_line(r, p, n) : field_line(r, p, n)) != 0)
      return -1;
    first = 0;
    p = nl + 1;
  }
  if (r->minor == 1 && r->host.p == NULL)
    return refuse(r, 400, "no Host field in an HTTP/1.1 request");
  r->state = 1;
  return 1;
}

/* The end of the head in head[0..len): the offset after its blank line,
 * or 0.  Leading blank lines do not count. */
static size_t head_end(const char *h, size_t len) {
  size_t i = 0, lines = 0, start;
  while (i < len) {
    const char *nl = memchr(h + i, '\n', len - i);
    size_t n;
    if (nl == NULL)
      return 0;
    start = i;
    n = (size_t)(nl - (h + i));
    i = (size_t)(nl - h) + 1;
    if (n == 0 || (n == 1 && h[start] == '\r')) {
      if (lines > 0)
        return i;
    } else {
      lines++;
    }
  }
  return 0;
}

int orion_http_feed(orion_http_req *r, const void *p, size_t n) {
  size_t take, end;
  const char *nl;
  if (r->state != 0)
    return r->state;
  take = n < ORION_HTTP_HEAD_MAX - r->len ? n : ORION_HTTP_HEAD_MAX - r->len;
  memcpy(r->head + r->len, p, take);
  r->len += take;
  r->head[r->len] = '\0';
  end = head_end(r->head, r->len);
  if (end > 0)
    return parse_head(r, end);
  /* Not complete: is the request line too long already? */
  {
    size_t skip = strspn(r->head, "\r\n");
    nl = memchr(r->head + skip, '\n', r->len - skip);
    if ((nl == NULL && r->len - skip > ORION_HTTP_LINE_MAX) ||
        (nl != NULL && (size_t)(nl - r->head) - skip > ORION_HTTP_LINE_MAX + 1))
      return refuse(r, 414, "the request line is too long");
  }
  if (r->len == ORION_HTTP_HEAD_MAX)
    return refuse(r, 431, "the request head is too large");
  return 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Percent-decodes s[0..n) into out (n_out bytes with the NUL). */
static int decode(const char *s, size_t n, int plus, char *out, size_t n_out) {
  size_t i, o = 0;
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int hi, lo;
      if (i + 2 >= n)
        return -1;
      hi = hexval(s[i + 1]);
      lo = hexval(s[i + 2]);
      if (hi < 0 || lo < 0)
        return -1;
      c = (char)(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus) {
      c = ' ';
    }
    if (o + 1 >= n_out)
      return -1;
    out[o++] = c;
  }
  if (n_out == 0)
    return -1;
  out[o] = '\0';
  return (int)o;
}

/* The value of `name` in a list s[0..n) of NAME=VALUE items separated by
 * sep (and spaces after it, for cookies). */
static int list_value(orion_http_str s, char sep, const char *name,
                      int plus, char *out, size_t n) {
  const char *p = s.p, *end = s.p + s.n;
  size_t nl = strlen(name);
  while (p != NULL && p < end) {
    const char *next = memchr(p, sep, (size_t)(end - p));
    const char *item_end = next != NULL ? next : end;
    while (p < item_end && *p == ' ')
      p++;
    if ((size_t)(item_end - p) > nl && strncmp(p, name, nl) == 0 &&
        p[nl] == '=')
      return decode(p + nl + 1, (size_t)(item_end - p - nl - 1), plus, out,
                    n);
    p = next != NULL ? next + 1 : NULL;
  }
  return -1;
}

int orion_http_query_param(const orion_http_req *r, const char *name,
                           char *out, size_t n) {
  return list_value(r->query, '&', name, 1, out, n);
}

int orion_http_cookie(const orion_http_req *r, const char *name, char *out,
                      size_t n) {
  return list_value(r->cookie, ';', name, 0, out, n);
}

/* a and b equal, in time that depends on the lengths only. */
static int same(const char *a, size_t an, const char *b, size_t bn) {
  unsigned char d = an != bn;
  size_t i;
  for (i = 0; i < an && i < bn; i++)
    d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

int orion_http_token_ok(const orion_http_req *r, const char *token,
                        const char *cookie_name, int *from_query) {
  char got[256];
  size_t tn = strlen(token);
  int n;
  if (from_query != NULL)
    *from_query = 0;
  if (tn == 0)
    return 0;
  n = orion_http_query_param(r, "token", got, sizeof got);
  if (n >= 0 && same(got, (size_t)n, token, tn)) {
    if (from_query != NULL)
      *from_query = 1;
    return 1;
  }
  if (r->authorization.p != NULL) {
    orion_http_str a = r->authorization;
    const char *sp = memchr(a.p, ' ', a.n);
    if (sp != NULL) {
      orion_http_str scheme = {a.p, (size_t)(sp - a.p)};
      const char *v = sp;
      while (v < a.p + a.n && *v == ' ')
        v++;
      if ((str_is(scheme, "token") || str_is(scheme, "bearer")) &&
          same(v, (size_t)(a.p + a.n - v), token, tn))
        return 1;
    }
  }
  n = cookie_name != NULL ? orion_http_cookie(r, cookie_name, got, sizeof got)
                          : -1;
  return n >= 0 && same(got, (size_t)n, token, tn);
}

const char *orion_http_reason(int status) {
  static const struct {
    int status;
    const char *reason;
  } reasons[] = {{200, "OK"},
                 {204, "No Content"},
                 {400, "Bad Request"},
                 {403, "Forbidden"},
                 {404, "Not Found"},
                 {405, "Method Not Allowed"},
                 {408, "Request Timeout"},
                 {413, "Content Too Large"},
                 {414, "URI Too Long"},
                 {431, "Request Header Fields Too Large"},
                 {500, "Internal Server Error"},
                 {501, "Not Implemented"},
                 {503, "Service Unavailable"},
                 {505, "HTTP Version Not Supported"}};
  size_t i;
  for (i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    if (reasons[i].status == status)
      return reasons[i].reason;
  return "Unknown";
}

void orion_http_response(orion_buf *b, int status, const char *ctype,
                         const char *extra, const void *body, size_t n,
                         int head_only) {
  char head[768];
  int hn = snprintf(
      head, sizeof head,
      "HTTP/1.1 %d %s\r\n"
      "Content-Type: %s\r\n"
      "Content-Length: %zu\r\n"
      "Cache-Control: no-store\r\n"
      "Connection: close\r\n"
      "X-Content-Type-Options: nosniff\r\n"
      "X-Frame-Options: DENY\r\n"
      "Referrer-Policy: no-referrer\r\n"
      "Content-Security-Policy: default-src 'none'; script-src "
      "'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
      "connect-src 'self'; frame-ancestors 'none'\r\n",
      status, orion_http_reason(status), ctype, n);
  orion_buf_append(b, head, (size_t)hn);
  if (extra != NULL)
    orion_buf_append(b, extra, strlen(extra));
  orion_buf_append(b, "\r\n", 2);
  if (!head_only && n > 0)
    orion_buf_append(b, body, n);
}
