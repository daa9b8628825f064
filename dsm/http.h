/* A small HTTP/1.1 request parser and response writer, sans-I/O: it works
 * on the bytes a connection hands it and never touches a socket (the job
 * page's server, dsm/status_server.c, is the libuv adapter).
 *
 * It reads one request head (request line and header fields, up to
 * ORION_HTTP_HEAD_MAX bytes) and keeps what the page needs: the method,
 * the path, the query, and the Host, Authorization and Cookie fields.
 * Request bodies are refused (the page has no use for them) and each
 * connection carries one request: the server answers with
 * "Connection: close", so pipelining is not supported.
 *
 * A request that is not well formed gets the status to answer with:
 * 400 (a malformed line, a control byte, no Host in HTTP/1.1), 413 (a
 * body), 414 (a request line over ORION_HTTP_LINE_MAX), 431 (a head over
 * ORION_HTTP_HEAD_MAX), 501 (Transfer-Encoding) or 505 (a version other
 * than HTTP/1.0 and 1.1).  Single-threaded per parser. */
#ifndef ORION_DSM_HTTP_H
#define ORION_DSM_HTTP_H

#include <stddef.h>

#include "util/buf.h"

#define ORION_HTTP_HEAD_MAX 8192
#define ORION_HTTP_LINE_MAX 2048

/* A field's value: a view into the parser's copy of the head. */
typedef struct orion_http_str {
  const char *p;
  size_t n;
} orion_http_str;

typedef struct orion_http_req {
  char head[ORION_HTTP_HEAD_MAX + 1]; /* the bytes read so far */
  size_t len;
  int state;  /* 0 reading, 1 complete, -1 refused */
  int status; /* when refused: the status to answer with */
  const char *why; /* when refused: a short reason (static text) */
  /* When complete: */
  orion_http_str method, path, query; /* query: after '?', may be empty */
  int minor;                          /* HTTP/1.minor */
  orion_http_str host, authorization, cookie;
} orion_http_req;

void orion_http_init(orion_http_req *r);

/* Feeds the next n bytes read from the connection.  Returns 0 when more
 * are needed, 1 when the head is complete (bytes after it are ignored),
 * or -1 when the request is refused (r->status and r->why say why).  Once
 * it returned 1 or -1, later calls return the same. */
int orion_http_feed(orion_http_req *r, const void *p, size_t n);

/* The value of query parameter `name`, percent-decoded ('+' as a space),
 * into out (NUL-terminated).  Returns its length, or -1 when absent, not
 * well encoded or longer than n - 1 bytes. */
int orion_http_query_param(const orion_http_req *r, const char *name,
                           char *out, size_t n);

/* The value of cookie `name` from the Cookie field, as for the above. */
int orion_http_cookie(const orion_http_req *r, const char *name, char *out,
                      size_t n);

/* Whether the request carries token (NUL-terminated, non-empty) in its
 * query (?token=), its Authorization field ("token TOKEN" or "Bearer
 * TOKEN") or the cookie cookie_name.  Compares in time independent of
 * where the bytes differ.  *from_query (may be NULL) is set to 1 when the
 * query carried it, so the server can set the cookie. */
int orion_http_token_ok(const orion_http_req *r, const char *token,
                        const char *cookie_name, int *from_query);

/* The reason phrase of status ("Not Found"), or "Unknown". */
const char *orion_http_reason(int status);

/* Appends a whole response to b: status line, Content-Type (ctype),
 * Content-Length, Cache-Control: no-store, Connection: close, the page's
 * security fields, `extra` (NULL or complete "Name: value\r\n" lines),
 * then body[0..n) unless head_only (a HEAD request). */
void orion_http_response(orion_buf *b, int status, const char *ctype,
                         const char *extra, const void *body, size_t n,
                         int head_only);

#endif
