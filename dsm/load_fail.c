/* A load's errors (dsm/load_int.h): one that ends the load with its
 * message complete, and a line's error naming the file, the line and
 * what was expected there.  The walk (load_walk.c) and the formats
 * (load_formats.c) call these; they call neither.
 */
#include "dsm/load_int.h"

#include <stdarg.h>
#include <stdio.h>

#include "dsm/load_scan.h"

/* An error that ends the load at once, message complete (see
 * load_int.h); writes only L and L->err. */
int orion__load_fail(loader *L, int code, const char *fmt, ...) {
  va_list ap;
  L->failed = 1;
  if (L->err != NULL) {
    L->err->code = code;
    va_start(ap, fmt);
    vsnprintf(L->err->msg, sizeof L->err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Ends the load with the line error rc of line lineno, [s, e) (see
 * load_int.h). */
int orion__load_line_fail(loader *L, int rc, int64_t lineno, const char *s,
                          const char *e) {
  char msg[sizeof L->err->msg];
  orion__scan_line_message(msg, sizeof msg, L->name, lineno, L->problem, s, e);
  L->failed = 1;
  return orion_error_set(L->err, rc, "%s", msg);
}
