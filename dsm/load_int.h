/* The text loaders' shared state (internal): the `loader` one load works
 * in, between the line walk over an input or a byte range of it
 * (dsm/load_walk.c) and the formats that parse each line (dsm/load_formats.c).
 * The public interface is dsm/loader.h.
 *
 * A loader lives on the stack of one orion_load_buffer(_range) call: any
 * thread, nothing shared.
 */
#ifndef ORION_DSM_LOAD_INT_H
#define ORION_DSM_LOAD_INT_H

#include <stdint.h>

#include "dsm/load_scan.h"
#include "dsm/loader.h"

/* One element's value, as the loader's type says. */
typedef union value {
  double f64;
  float f32;
  int64_t i64;
  int32_t i32;
} value;

typedef struct loader loader;

/* A format's line parser, called for each data line [s, e) (line end and
 * CR removed).  Returns 0, a line error (ORION_EPARSE, ORION_EKEYRANGE
 * with L->problem set) or, with L->failed, a fatal error. */
typedef int (*line_fn)(loader *L, const char *s, const char *e);

struct loader {
  const orion_load_opts *o;
  const char *name;
  orion_error *err;
  line_fn line;
  orion_type type;
  int base;
  int ndims; /* 0 until known (coo with nkeys 0) */
  int check; /* keys at or above lim are errors */
  int64_t lim[ORION_MAX_DIMS];
  orion_array *a;
  int64_t est_lines; /* estimated lines in the buffer */
  int64_t est_elems; /* estimated elements */
  int hard;          /* the line error is not skippable */
  int failed;        /* err is set: stop now */
  /* csv */
  int maxcol;
  field *cols;
  /* libsvm */
  int64_t rows;
  double *labels;
  int64_t labels_cap;
  /* uci-bow */
  int header_seen;
  int64_t hdr[3];
  int64_t data_lines;
  /* which lines are data (load_is_data) */
  const char *data_from; /* the first data line's earliest start: buf, or
                            for uci-bow the end of the header */
  const char *skip_line; /* the csv header line, or NULL */
  int comments;          /* '#' lines are comments */
  /* byte ranges */
  const char *buf, *end; /* the whole input */
  int dry;               /* libsvm prefix pass: parse lines, keep nothing */
  int at_end;            /* the range reaches the end of the input */
  int file_ndims;        /* coo with nkeys 0: the input's key count */
  int64_t row_lo;        /* libsvm: rows before the range */
  int64_t first_line;    /* the number of buf's first line */
  struct orion_progress *prog; /* whole loads with o->progress, or NULL */
  char problem[256];
};

/* Whether line [s, e) is data: not blank, not a '#' comment (uci-bow has
 * none), not the csv header (the input's first line), not a uci-bow header
 * line.  Inline: it runs once per line. */
static inline int load_is_data(const loader *L, const char *s, const char *e) {
  const char *q = s;
  while (q < e && scan_is_space(*q))
    q++;
  return q < e && s >= L->data_from && s != L->skip_line &&
         (*q != '#' || !L->comments);
}

/* ---- the line walk (dsm/load_walk.c) --------------------------------- */

/* An error that ends the load at once, message complete: sets L->failed
 * and L->err; returns code. */
int orion__load_fail(loader *L, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Ends the load with the line error rc of line lineno, [s, e), whose
 * problem is in L->problem: "NAME:LINE: PROBLEM: "TEXT"".  Returns rc. */
int orion__load_line_fail(loader *L, int rc, int64_t lineno, const char *s,
                          const char *e);

/* ---- the formats (dsm/load_formats.c) ---------------------------------- */

/* Checks the options of L->o; a bad one fails the load (ORION_EOPTION). */
int orion__load_check_opts(loader *L);

/* The line parser of format f (checked by orion__load_check_opts). */
line_fn orion__load_line_fn(orion_format f);

/* Per-format set-up: the dims count, csv's field table (L->cols, freed by
 * the caller), the array when the dims count is known now. */
int orion__load_start_format(loader *L);

/* Creates L->a once L->ndims is known: checks given dims, reserves room
 * for the estimated elements. */
int orion__load_start_array(loader *L);

/* uci-bow: reads D, W and NNZ from the input's first three non-blank lines
 * (line first_line is buf's first), whichever range is parsed (every range
 * needs the dims), and sets L->data_from past them.  A bad header line is
 * an error in every range. */
int orion__load_ucibow_header(loader *L, int64_t first_line);

/* uci-bow, for the range that reaches the input's end: the data line count
 * must be the header's NNZ and the last line must have its line end. */
int orion__load_ucibow_check(loader *L);

/* coo with nkeys 0: the key count a whole load takes from the input's
 * first data line with 2 to ORION_MAX_DIMS + 1 fields (earlier data lines
 * are errors); 0 when there is no such line.  *at is where the line
 * starts. */
int orion__load_coo_nkeys(const loader *L, const char **at);

#endif
