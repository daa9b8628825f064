/* A one-line progress bar on stderr for long loads and passes.  It shows
 * only when stderr is a terminal, logging is not quiet, and the work has
 * taken more than a second, so short steps and logs stay clean. */
#ifndef ORION_UTIL_PROGRESS_H
#define ORION_UTIL_PROGRESS_H

#include <stdint.h>

typedef struct orion_progress {
  const char *label;
  int64_t total;
  double start;
  int enabled; /* stderr is a terminal and not quiet */
  int shown;   /* something was drawn (to be cleared at the end) */
} orion_progress;

/* label must outlive the progress (a literal, usually). */
void orion_progress_start(orion_progress *p, const char *label, int64_t total);
void orion_progress_update(orion_progress *p, int64_t done);
/* Clears the line if anything was drawn. */
void orion_progress_end(orion_progress *p);

#endif
