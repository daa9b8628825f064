/* The last lines logged, kept in memory for the job page (dsm/status.h):
 * every message util/log.c prints, and whatever else the driver chooses to
 * keep (the script's print output).  A ring of ORION_LOG_KEEP lines, each
 * cut at ORION_LOG_LINE_MAX bytes with " [...]" when longer.  Safe to call
 * from any thread (one mutex). */
#ifndef ORION_UTIL_LOG_RING_H
#define ORION_UTIL_LOG_RING_H

#include <stddef.h>
#include <stdint.h>

#define ORION_LOG_KEEP 200
#define ORION_LOG_LINE_MAX 1024

/* Keeps line[0..n) (without its newline) as the newest line. */
void orion_log_keep(const char *line, size_t n);

/* Calls fn for each kept line numbered above `since` (lines are numbered
 * from 1 as they come), oldest first, with the line's number and the
 * orion_now() time it came.  fn runs under the ring's lock: it must not
 * log. */
typedef void (*orion_log_each_fn)(void *ud, uint64_t seq, double t,
                                  const char *line);
void orion_log_recent(uint64_t since, orion_log_each_fn fn, void *ud);

#endif
