#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *orion_strerror(int code) {
  switch (code) {
#define ORION__ERRNO_CASE(name, val, msg)                                     \
  case ORION_##name:                                                          \
    return msg;
    ORION_ERRNO_MAP(ORION__ERRNO_CASE)
#undef ORION__ERRNO_CASE
  default:
    break;
  }
  if (code < 0 && code > -1000)
    return strerror(-code);
  return code == 0 ? "success" : "unknown error";
}

int orion_error_set(orion_error *err, int code, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

void orion_error_clear(orion_error *err) {
  if (err != NULL) {
    err->code = 0;
    err->msg[0] = '\0';
  }
}

void orion__assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "orion: assertion failed: %s (%s:%d)\n", expr, file, line);
  fflush(stderr);
  abort();
}
