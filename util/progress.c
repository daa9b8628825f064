#include "util/progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

void orion_progress_start(orion_progress *p, const char *label,
                          int64_t total) {
  p->label = label;
  p->total = total;
  p->start = orion_now();
  p->enabled = !orion_log_quiet() && isatty(2);
  p->shown = 0;
}

void orion_progress_update(orion_progress *p, int64_t done) {
  char bar[31];
  double elapsed, frac;
  int i, fill;
  if (!p->enabled || p->total <= 0)
    return;
  elapsed = orion_now() - p->start;
  if (elapsed < 1.0)
    return;
  frac = (double)done / (double)p->total;
  if (frac > 1)
    frac = 1;
  fill = (int)(frac * 30);
  for (i = 0; i < 30; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[30] = '\0';
  fprintf(stderr, "\r%s [%s] %3d%% %.1fs", p->label, bar, (int)(frac * 100),
          elapsed);
  fflush(stderr);
  p->shown = 1;
}

void orion_progress_end(orion_progress *p) {
  if (p->shown) {
    fputs("\r\033[K", stderr); /* carriage return, erase the line */
    fflush(stderr);
  }
  p->shown = 0;
}
