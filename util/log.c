#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static int quiet;

void orion_log_set_quiet(int q) { quiet = q; }

int orion_log_quiet(void) { return quiet; }

static void emit(const char *tag, const char *fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fprintf(stderr, "orion: %s%s\n", tag, buf);
}

void orion_log_info(const char *fmt, ...) {
  va_list ap;
  if (quiet)
    return;
  va_start(ap, fmt);
  emit("", fmt, ap);
  va_end(ap);
}

void orion_log_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("warning: ", fmt, ap);
  va_end(ap);
}
