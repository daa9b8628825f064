/* The progress line on stderr (see progress.h). */
#include "util/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

static int on_screen; /* a progress line is on stderr now */
static int quiet;     /* --quiet (util/log.c passes it on) */
static char job_line[160]; /* orion_progress_job_line's, drawn in place */
static int job_shown;      /* job_line is what is on screen */

void orion_progress_set_quiet(int q) { quiet = q; }

/* Whether to draw at all: ORION_PROGRESS=1 forces it on, 0 off, anything
 * else follows stderr being a terminal. */
static int wanted(void) {
  const char *env = getenv("ORION_PROGRESS");
  if (quiet)
    return 0;
  if (env != NULL && strcmp(env, "1") == 0)
    return 1;
  if (env != NULL && strcmp(env, "0") == 0)
    return 0;
  return isatty(2);
}

/* Seconds before the line appears: ORION_PROGRESS_AFTER, default 1. */
static double delay(void) {
  const char *env = getenv("ORION_PROGRESS_AFTER");
  char *end;
  double v;
  if (env == NULL || env[0] == '\0')
    return 1.0;
  v = strtod(env, &end);
  return *end == '\0' && v >= 0 ? v : 1.0;
}

int orion_progress_in_place(void) { return wanted(); }

static void draw_job_line(void) {
  fprintf(stderr, "\r%s\033[K", job_line);
  fflush(stderr);
  on_screen = 1;
  job_shown = 1;
}

void orion_progress_job_line(const char *line) {
  if (quiet)
    return;
  if (!wanted()) {
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    return;
  }
  snprintf(job_line, sizeof job_line, "%s", line);
  draw_job_line();
}

void orion_progress_settle(void) {
  if (job_line[0] != '\0') {
    if (!job_shown) { /* erased since: drawn again to stay */
      orion_progress_clear();
      draw_job_line();
    }
    fputc('\n', stderr);
    fflush(stderr);
    on_screen = 0;
  }
  job_shown = 0;
  job_line[0] = '\0';
}

void orion_progress_start(orion_progress *p, const char *label,
                          const char *unit, int64_t total) {
  snprintf(p->label, sizeof p->label, "%s", label);
  p->unit = unit;
  p->total = total;
  p->start = orion_now();
  p->after = delay();
  p->last_draw = 0;
  p->enabled = wanted();
  p->shown = 0;
}

/* A duration as "4.6s", "42s", "3m05s" or "2h07m". */
static void fmt_secs(char *out, size_t n, double s) {
  long t = (long)(s + 0.5);
  if (s < 10)
    snprintf(out, n, "%.1fs", s);
  else if (t < 60)
    snprintf(out, n, "%lds", t);
  else if (t < 3600)
    snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(out, n, "%ldh%02ldm", t / 3600, t % 3600 / 60);
}

/* "5/16 blocks" style counts, or bytes in a unit that fits the total. */
static void fmt_count(char *out, size_t n, const orion_progress *p,
                      int64_t done) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double scale = 1;
  int u = 0;
  if (p->unit != NULL) {
    snprintf(out, n, "%s %lld/%lld", p->unit, (long long)done,
             (long long)p->total);
    return;
  }
  while (u < 4 && (double)p->total >= scale * 1024) {
    scale *= 1024;
    u++;
  }
  snprintf(out, n, u == 0 ? "%.0f/%.0f %s" : "%.1f/%.1f %s",
           (double)done / scale, (double)p->total / scale, units[u]);
}

void orion_progress_update(orion_progress *p, int64_t done) {
  char bar[31], count[64], took[32], eta[32];
  double now, elapsed, frac;
  int i, fill;
  if (!p->enabled || p->total <= 0)
    return;
  now = orion_now();
  elapsed = now - p->start;
  if (elapsed < p->after)
    return;
  if (p->shown && now - p->last_draw < 0.2 && done < p->total)
    return;
  if (done > p->total)
    done = p->total;
  frac = done > 0 ? (double)done / (double)p->total : 0;
  fill = (int)(frac * 30);
  for (i = 0; i < 30; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[30] = '\0';
  fmt_count(count, sizeof count, p, done);
  fmt_secs(took, sizeof took, elapsed);
  if (done > 0)
    fmt_secs(eta, sizeof eta,
             elapsed * (double)(p->total - done) / (double)done);
  else
    snprintf(eta, sizeof eta, "?");
  /* Carriage return, the line, erase what a longer line left. */
  fprintf(stderr, "\r%s: %s [%s] %3d%% %s, ETA %s\033[K", p->label, count,
          bar, (int)(frac * 100), took, eta);
  fflush(stderr);
  job_shown = 0;
  p->shown = 1;
  p->last_draw = now;
  on_screen = 1;
}

void orion_progress_clear(void) {
  if (!on_screen)
    return;
  fputs("\r\033[K", stderr); /* carriage return, erase the line */
  fflush(stderr);
  on_screen = 0;
  job_shown = 0;
}

void orion_progress_end(orion_progress *p) {
  if (p->shown) {
    orion_progress_clear();
    if (job_line[0] != '\0')
      draw_job_line(); /* the job's line comes back under the output */
  }
  p->shown = 0;
}

/* ---- a whole job's progress ------------------------------------------- */

void orion_job_progress_note(orion_job_progress *p, const char *unit,
                             int64_t done, int64_t total, double now) {
  snprintf(p->unit, sizeof p->unit, "%s", unit);
  if (!p->started) {
    p->started = 1;
    p->start = now;
    p->done0 = done;
  }
  /* A report below the baseline (a script that starts over) is a new
   * baseline: the pace of the old one says nothing about the new. */
  if (done < p->done0) {
    p->start = now;
    p->done0 = done;
  }
  p->done = done;
  p->total = total;
  p->seconds = now - p->start;
}

double orion_job_progress_eta(const orion_job_progress *p) {
  if (!p->started || p->done <= p->done0)
    return -1;
  return p->seconds / (double)(p->done - p->done0) *
         (double)(p->total - p->done);
}

void orion_job_progress_line(const orion_job_progress *p, char *out,
                             size_t n) {
  char took[32], eta[32];
  double left = orion_job_progress_eta(p);
  if (p->shown[0] != '\0') {
    snprintf(out, n, "%s", p->shown);
    return;
  }
  fmt_secs(took, sizeof took, p->seconds);
  if (p->done >= p->total)
    snprintf(out, n, "%s %lld / %lld, done in %s", p->unit,
             (long long)p->done, (long long)p->total, took);
  else {
    if (left >= 0)
      fmt_secs(eta, sizeof eta, left);
    else
      snprintf(eta, sizeof eta, "?");
    snprintf(out, n, "%s %lld / %lld, %s so far, ETA %s for the whole job",
             p->unit, (long long)p->done, (long long)p->total, took, eta);
  }
}
