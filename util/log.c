/* Logging to stderr (see log.h). */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/progress.h"

static int quiet, verbose;

void orion_log_set_quiet(int q) {
  quiet = q;
  orion_progress_set_quiet(q);
}

int orion_log_quiet(void) { return quiet; }

void orion_log_set_verbose(int v) { verbose = v; }

int orion_log_verbose(void) { return verbose && !quiet; }

/* One message; a progress line on screen is erased first. */
static void emit(const char *tag, const char *fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  orion_progress_clear();
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

void orion_log_detail(const char *fmt, ...) {
  va_list ap;
  if (!orion_log_verbose())
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
