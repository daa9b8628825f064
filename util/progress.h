/* A one-line progress display on stderr for long loops and loads:
 *
 *   parallel_for at x.lua:3: blocks 5/16 [#########.....................]  31% 2.1s, ETA 4.6s
 *
 * It shows only when stderr is a terminal, logging is not quiet, and the
 * step has taken more than a second, so short steps, logs and pipes stay
 * clean; the line is erased at the end, and before any log message
 * (util/log.c calls orion_progress_clear).  ORION_PROGRESS=1 draws it even
 * when stderr is not a terminal (tests, `script`), ORION_PROGRESS=0 never;
 * ORION_PROGRESS_AFTER=SECONDS changes the one-second delay.  One line at
 * a time, from the driver's thread. */
#ifndef ORION_UTIL_PROGRESS_H
#define ORION_UTIL_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct orion_progress {
  char label[96];
  const char *unit; /* "blocks", "elements", ...; NULL: bytes */
  int64_t total;
  double start, after, last_draw;
  int enabled; /* drawn at all (terminal or forced, not quiet) */
  int shown;   /* this progress drew a line */
} orion_progress;

/* label is copied (cut to fit); unit must outlive p (a literal). */
void orion_progress_start(orion_progress *p, const char *label,
                          const char *unit, int64_t total);
/* done of total so far; redraws at most five times a second (and at the
 * end), once the delay has passed. */
void orion_progress_update(orion_progress *p, int64_t done);
/* Erases the line if anything was drawn. */
void orion_progress_end(orion_progress *p);
/* Erases the line on screen, if any, so other output starts on a clean
 * line; the next update draws it again. */
void orion_progress_clear(void);
/* No line at all under --quiet (orion_log_set_quiet calls this). */
void orion_progress_set_quiet(int quiet);
/* Whether progress lines are drawn in place: stderr is a terminal (or
 * ORION_PROGRESS=1; never with ORION_PROGRESS=0) and not --quiet. */
int orion_progress_in_place(void);
/* The job's own line (orion.train's "epoch 7/50  loss ...  ETA 2m10s"):
 * drawn in place when lines are (then kept: a loop's progress line that
 * ends, or orion_progress_clear before a log message, erases it and the
 * end of the next loop's line draws it again), else printed as a line,
 * not under --quiet.  orion_progress_settle ends the line drawn in place
 * with a newline, so that it stays above what follows, and forgets it. */
void orion_progress_job_line(const char *line);
void orion_progress_settle(void);

/* A whole job's progress as its script reports it (orion.progress):
 * done of total units ("epoch"), timed from the first report, which is
 * the baseline (a script reports 0, or what a resumed run had done,
 * before its first epoch).  Plain data: the caller owns it. */
typedef struct orion_job_progress {
  char unit[32];
  int64_t done, total;
  int64_t done0;  /* done at the first report */
  double start;   /* orion_now() at the first report */
  double seconds; /* from the first report to the last */
  int started;    /* a report was made */
  char shown[160]; /* the line the script showed for the last report
                      (orion.progress's 4th argument), or "" */
} orion_job_progress;

/* Records a report of done of total units (unit is copied, cut to fit) at
 * time now. */
void orion_job_progress_note(orion_job_progress *p, const char *unit,
                             int64_t done, int64_t total, double now);
/* The seconds the rest of the job will take at the pace since the
 * baseline, or -1 while no unit was done since it. */
double orion_job_progress_eta(const orion_job_progress *p);
/* The report as one line: "epoch 3 / 10, 41s so far, ETA 1m36s for the
 * whole job" ("ETA ?" before a unit was done since the baseline; "done
 * in 2m17s" at the last), or the line the script showed (p->shown). */
void orion_job_progress_line(const orion_job_progress *p, char *out,
                             size_t n);

#endif
