/* Logging to stderr (see log.h). */
#include "util/log.h"

#include "util/log_ring.h"

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
  char line[2100];
  int n;
  vsnprintf(buf, sizeof buf, fmt, ap);
  n = snprintf(line, sizeof line, "orion: %s%s", tag, buf);
  orion_progress_clear();
  fprintf(stderr, "%s\n", line);
  orion_log_keep(line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
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
