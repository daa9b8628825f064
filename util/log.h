/* Logging to stderr, at three levels: details only with --verbose (-v),
 * info messages unless --quiet, warnings and errors always.  Safe to call
 * from any thread (one fprintf per call); on the driver's thread a
 * progress line on screen (util/progress.h) is erased first. */
#ifndef ORION_UTIL_LOG_H
#define ORION_UTIL_LOG_H

void orion_log_set_quiet(int quiet);
int orion_log_quiet(void);
void orion_log_set_verbose(int verbose);
/* --verbose and not --quiet. */
int orion_log_verbose(void);
void orion_log_detail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
void orion_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void orion_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
