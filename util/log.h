/* Logging to stderr.  Info messages are dropped under --quiet; warnings and
 * errors never are.  Safe to call from any thread (one fprintf per call). */
#ifndef ORION_UTIL_LOG_H
#define ORION_UTIL_LOG_H

void orion_log_set_quiet(int quiet);
int orion_log_quiet(void);
void orion_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void orion_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
