/* `orion-driver plot METRICS.jsonl [MORE.jsonl...]`: reads metrics files
 * (one JSON object a line, as `orion-driver --metrics` writes them), picks
 * the x key and the keys to draw, splits each file into runs and hands the
 * figure to drivers/plot_svg.c.
 *
 * A file that several runs appended to holds several runs: a run ends
 * where the step key (epoch, iter, iteration or step) stops growing. */
#include "drivers/plot.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/load_scan.h"
#include "util/alloc.h"
#include "util/jsonl.h"

#define EXIT_WRITE 1
#define EXIT_BAD 2

static const char plot_usage[] =
    "usage: orion-driver plot [OPTIONS] METRICS.jsonl [MORE.jsonl...]\n"
    "\n"
    "Draws the keys that orion.record wrote to --metrics files as SVG\n"
    "charts: one panel per key, one line per file (or per run, when runs\n"
    "were appended to one file), against epoch or another key.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  the SVG file (default: the first input with .svg\n"
    "                     for its extension; - writes to stdout)\n"
    "  --x KEY            the x axis (default: epoch, iter, iteration or\n"
    "                     step, the first every file has; else the record\n"
    "                     number)\n"
    "  --sum-x            plot against the running total of the x key\n"
    "                     (per-epoch seconds become elapsed seconds)\n"
    "  --y KEY[,KEY...]   the keys to draw, one panel each (default: every\n"
    "                     numeric key but the x key)\n"
    "  --log-y            logarithmic y axes (values <= 0 are left out)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit codes: 0 success, 1 the output cannot be written, 2 usage error\n"
    "or bad input (the message names the file and line).\n";

/* The step keys, in the order the default x axis looks for them. */
static const char *const step_keys[] = {"epoch", "iter", "iteration", "step"};

/* One input file: its lines that hold an object. */
typedef struct plot_file {
  const char *path;
  orion_jsonl_object *rows;
  size_t *lineno;
  size_t n;
} plot_file;

typedef struct plot_opts {
  const char *out;
  const char *x;
  char *y; /* the --y list, split in place */
  int sum_x, log_y;
} plot_opts;

static int fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "orion-driver plot: MESSAGE" and returns code. */
static int fail(int code, const char *fmt, ...) {
  va_list ap;
  fputs("orion-driver plot: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return code;
}

/* A usage error: the message, then where the help is. */
static int usage_fail(const char *what, const char *arg) {
  fail(EXIT_BAD, "%s%s%s%s", what, arg != NULL ? " '" : "",
       arg != NULL ? arg : "", arg != NULL ? "'" : "");
  fputs("Try 'orion-driver plot --help'.\n", stderr);
  return EXIT_BAD;
}

/* ======================================================================
 * Reading the files.
 * ====================================================================== */

static int blank(const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
      return 0;
  return 1;
}

/* Reads f->path into f->rows; blank lines are skipped.  0 or an exit
 * code after the message. */
static int read_file(plot_file *f) {
  FILE *in = fopen(f->path, "r");
  char *line = NULL;
  size_t cap = 0, lineno = 0, room = 0;
  ssize_t len;
  int rc = 0;
  if (in == NULL)
    return fail(EXIT_BAD, "cannot open %s: %s", f->path, strerror(errno));
  while ((len = getline(&line, &cap, in)) >= 0) {
    orion_error err;
    lineno++;
    if (blank(line, (size_t)len))
      continue;
    if (f->n == room) {
      size_t nr = room == 0 ? 64 : room * 2;
      orion_jsonl_object *r = orion_realloc(f->rows, nr * sizeof *r);
      size_t *l = r != NULL ? orion_realloc(f->lineno, nr * sizeof *l) : NULL;
      if (r != NULL)
        f->rows = r;
      if (l == NULL) {
        rc = fail(EXIT_BAD, "%s: out of memory", f->path);
        break;
      }
      f->lineno = l;
      room = nr;
    }
    orion_error_clear(&err);
    f->lineno[f->n] = lineno;
    if (orion_jsonl_parse(line, (size_t)len, &f->rows[f->n], &err) != 0) {
      char msg[1400], prob[1100];
      orion_jsonl_free(&f->rows[f->n]);
      while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
      snprintf(prob, sizeof prob, "not a JSON object (%s)", err.msg);
      orion__scan_line_message(msg, sizeof msg, f->path, (int64_t)lineno, prob,
                               line, line + len);
      rc = fail(EXIT_BAD, "%s", msg);
      break;
    }
    f->n++;
  }
  if (rc == 0 && ferror(in))
    rc = fail(EXIT_BAD, "cannot read %s: %s", f->path, strerror(errno));
  if (rc == 0 && f->n == 0)
    rc = fail(EXIT_BAD, "%s: empty (no records)", f->path);
  free(line);
  fclose(in);
  return rc;
}

static void free_file(plot_file *f) {
  size_t i;
  for (i = 0; i < f->n; i++)
    orion_jsonl_free(&f->rows[i]);
  orion_free(f->rows);
  orion_free(f->lineno);
}

/* The number under key in row, or NaN when it is missing, not a number or
 * not finite. */
static double num_at(const orion_jsonl_object *row, const char *key) {
  const orion_jsonl_member *m = orion_jsonl_get(row, key);
  if (m == NULL || m->kind != ORION_JSONL_NUMBER || !isfinite(m->num))
    return NAN;
  return m->num;
}

static int has_number(const plot_file *f, const char *key) {
  size_t i;
  for (i = 0; i < f->n; i++)
    if (!isnan(num_at(&f->rows[i], key)))
      return 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sorted, distinct keys with a number in some line of some file (the
 * strings belong to the files' rows); NULL when out of memory. */
static const char **numeric_keys(const plot_file *files, size_t nfiles,
                                 size_t *count) {
  size_t i, j, k, n = 0, cap = 0, out = 0;
  const char **keys = NULL;
  for (i = 0; i < nfiles; i++)
    for (j = 0; j < files[i].n; j++)
      for (k = 0; k < files[i].rows[j].n; k++) {
        const orion_jsonl_member *m = &files[i].rows[j].m[k];
        if (m->kind != ORION_JSONL_NUMBER || !isfinite(m->num))
          continue;
        if (n == cap) {
          const char **nk;
          cap = cap == 0 ? 32 : cap * 2;
          nk = orion_realloc(keys, cap * sizeof *nk);
          if (nk == NULL) {
            orion_free(keys);
            return NULL;
          }
          keys = nk;
        }
        keys[n++] = m->key;
      }
  if (n > 0)
    qsort(keys, n, sizeof *keys, cmp_str);
  for (i = 0; i < n; i++)
    if (out == 0 || strcmp(keys[out - 1], keys[i]) != 0)
      keys[out++] = keys[i];
  *count = out;
  return keys != NULL ? keys : orion_malloc(sizeof *keys);
}

/* "a, b, c" of a file's numeric keys, for messages. */
static void key_list(const plot_file *f, char *buf, size_t cap) {
  size_t n = 0, i, at = 0;
  const char **keys = numeric_keys(f, 1, &n);
  buf[0] = '\0';
  for (i = 0; keys != NULL && i < n && at + 1 < cap; i++) {
    int w = snprintf(buf + at, cap - at, "%s%s", i > 0 ? ", " : "", keys[i]);
    if (w < 0)
      break;
    at += (size_t)w;
  }
  if (n == 0)
    snprintf(buf, cap, "none");
  orion_free(keys);
}

/* Fails unless every file has a number under key somewhere. */
static int require_key(const plot_file *files, size_t nfiles, const char *key,
                       const char *opt) {
  size_t i;
  for (i = 0; i < nfiles; i++)
    if (!has_number(&files[i], key)) {
      char keys[600];
      key_list(&files[i], keys, sizeof keys);
      return fail(EXIT_BAD,
                  "%s: %s %s: none of its %zu records has a number for "
                  "'%s' (its numeric keys: %s)",
                  files[i].path, opt, key, files[i].n, key, keys);
    }
  return 0;
}

/* ======================================================================
 * Building the figure.
 * ====================================================================== */

/* The runs of the files: where each begins.  A run ends where the step
 * key does not grow. */
typedef struct run_span {
  size_t file, first, end; /* rows [first, end) of files[file] */
} run_span;

static size_t split_runs(const plot_file *files, size_t nfiles,
                         const char *step, run_span *spans) {
  size_t i, j, n = 0;
  for (i = 0; i < nfiles; i++) {
    double prev = NAN;
    spans[n].file = i;
    spans[n].first = 0;
    for (j = 0; j < files[i].n; j++) {
      double s = step != NULL ? num_at(&files[i].rows[j], step) : NAN;
      if (!isnan(s) && !isnan(prev) && s <= prev) {
        spans[n].end = j;
        n++;
        spans[n].file = i;
        spans[n].first = j;
      }
      if (!isnan(s))
        prev = s;
    }
    spans[n].end = files[i].n;
    n++;
  }
  return n;
}

static void free_figure(orion_plot_figure *fig) {
  size_t i, j;
  for (i = 0; i < fig->nruns; i++)
    orion_free(fig->runs[i]);
  orion_free(fig->runs);
  for (i = 0; i < fig->npanels; i++) {
    for (j = 0; j < fig->panels[i].ns; j++) {
      orion_free(fig->panels[i].s[j].x);
      orion_free(fig->panels[i].s[j].y);
    }
    orion_free(fig->panels[i].s);
  }
  orion_free(fig->panels);
}

/* Fills panel p (key) with the points of each run: x from xkey (the record
 * number in the run when NULL, a running total with sum_x), rows without a
 * number for either left out, and y <= 0 too on a log axis.  Returns 0 or
 * -1 when out of memory. */
static int fill_panel(orion_plot_panel *p, const plot_file *files,
                      const run_span *spans, size_t nspans, const char *xkey,
                      const plot_opts *o) {
  size_t r, j;
  p->s = orion_calloc(nspans, sizeof *p->s);
  if (p->s == NULL)
    return -1;
  for (r = 0; r < nspans; r++) {
    const plot_file *f = &files[spans[r].file];
    orion_plot_series *s = &p->s[p->ns];
    size_t cap = spans[r].end - spans[r].first;
    double total = 0;
    s->run = r;
    s->x = orion_malloc((cap + 1) * sizeof *s->x);
    s->y = orion_malloc((cap + 1) * sizeof *s->y);
    if (s->x == NULL || s->y == NULL) {
      p->ns++; /* freed with the rest */
      return -1;
    }
    for (j = spans[r].first; j < spans[r].end; j++) {
      double x = xkey != NULL ? num_at(&f->rows[j], xkey)
                              : (double)(j - spans[r].first + 1);
      double y = num_at(&f->rows[j], p->key);
      if (o->sum_x && !isnan(x)) {
        total += x;
        x = total;
      }
      if (isnan(x) || isnan(y) || (o->log_y && y <= 0))
        continue;
      s->x[s->n] = x;
      s->y[s->n] = y;
      s->n++;
    }
    if (s->n > 0) {
      p->ns++;
    } else {
      orion_free(s->x);
      orion_free(s->y);
      s->x = s->y = NULL;
    }
  }
  return 0;
}

/* The legend labels: the file name, with "(run K)" when a file holds
 * several runs. */
static int label_runs(orion_plot_figure *fig, const plot_file *files,
                      const run_span *spans, size_t nspans) {
  size_t r;
  fig->runs = orion_calloc(nspans, sizeof *fig->runs);
  if (fig->runs == NULL)
    return -1;
  fig->nruns = nspans;
  for (r = 0; r < nspans; r++) {
    int several = (r > 0 && spans[r - 1].file == spans[r].file) ||
                  (r + 1 < nspans && spans[r + 1].file == spans[r].file);
    size_t k = 1, q;
    for (q = 0; q < r; q++)
      k += spans[q].file == spans[r].file;
    fig->runs[r] = several ? orion_asprintf("%s (run %zu)",
                                            files[spans[r].file].path, k)
                           : orion_strdup(files[spans[r].file].path);
    if (fig->runs[r] == NULL)
      return -1;
  }
  return 0;
}

/* ======================================================================
 * The command.
 * ====================================================================== */

static int parse_args(int argc, char **argv, plot_opts *o) {
  enum { OPT_X = 256, OPT_Y, OPT_LOG_Y, OPT_SUM_X };
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'},
      {"x", required_argument, NULL, OPT_X},
      {"y", required_argument, NULL, OPT_Y},
      {"log-y", no_argument, NULL, OPT_LOG_Y},
      {"sum-x", no_argument, NULL, OPT_SUM_X},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  optind = 1;
  for (;;) {
    c = getopt_long(argc, argv, ":o:h", opts, NULL);
    if (c == -1)
      break;
    switch (c) {
    case 'h':
      fputs(plot_usage, stdout);
      return 0;
    case 'o':
      o->out = optarg;
      break;
    case OPT_X:
      o->x = optarg;
      break;
    case OPT_Y:
      o->y = optarg;
      break;
    case OPT_LOG_Y:
      o->log_y = 1;
      break;
    case OPT_SUM_X:
      o->sum_x = 1;
      break;
    case ':':
      return usage_fail("a value is missing after", argv[optind - 1]);
    default:
      if (optopt != 0) {
        char name[3] = {'-', (char)optopt, '\0'};
        return usage_fail("unknown option", name);
      }
      return usage_fail("unknown option", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return usage_fail("no metrics file given", NULL);
  if (o->y != NULL && strspn(o->y, ",") == strlen(o->y))
    return usage_fail("--y needs KEY[,KEY...]", NULL);
  if (o->x != NULL && o->x[0] == '\0')
    return usage_fail("--x needs a key", NULL);
  return -1;
}

/* The default output: the first input with its extension replaced by
 * .svg (orion_free it). */
static char *default_output(const char *in) {
  const char *slash = strrchr(in, '/');
  const char *dot = strrchr(slash != NULL ? slash + 1 : in, '.');
  size_t stem = dot != NULL && dot != (slash != NULL ? slash + 1 : in)
                    ? (size_t)(dot - in)
                    : strlen(in);
  return orion_asprintf("%.*s.svg", (int)stem, in);
}

/* Chooses the y keys: the --y list (each in every file) or every numeric
 * key but x.  Returns 0 or an exit code. */
static int choose_keys(const plot_file *files, size_t nfiles,
                       const plot_opts *o, const char *xkey,
                       const char ***keys, size_t *nkeys) {
  size_t i, n = 0;
  if (o->y != NULL) {
    char *p = o->y, *save = NULL, *tok;
    size_t cap = 1;
    for (i = 0; o->y[i] != '\0'; i++)
      cap += o->y[i] == ',';
    *keys = orion_calloc(cap, sizeof **keys);
    if (*keys == NULL)
      return fail(EXIT_BAD, "out of memory");
    for (tok = strtok_r(p, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
      int rc = require_key(files, nfiles, tok, "--y");
      if (rc != 0)
        return rc;
      (*keys)[n++] = tok;
    }
    *nkeys = n;
    return 0;
  }
  *keys = numeric_keys(files, nfiles, &n);
  if (*keys == NULL)
    return fail(EXIT_BAD, "out of memory");
  for (i = 0, *nkeys = 0; i < n; i++)
    if (xkey == NULL || strcmp((*keys)[i], xkey) != 0)
      (*keys)[(*nkeys)++] = (*keys)[i];
  if (*nkeys == 0) {
    return fail(EXIT_BAD, "%s%s: no numeric key to plot%s%s%s",
                files[0].path, nfiles > 1 ? " (nor any other file)" : "",
                xkey != NULL ? " besides '" : "", xkey != NULL ? xkey : "",
                xkey != NULL ? "'" : "");
  }
  return 0;
}

/* Builds the figure from the files read.  0 or an exit code. */
static int build(plot_file *files, size_t nfiles, const plot_opts *o,
                 orion_plot_figure *fig) {
  const char *step = NULL, *xkey = o->x, **keys = NULL;
  size_t i, nkeys = 0, nspans, rows = 0;
  run_span *spans;
  int rc;
  for (i = 0; i < sizeof step_keys / sizeof step_keys[0] && step == NULL;
       i++) {
    size_t f;
    for (f = 0; f < nfiles && has_number(&files[f], step_keys[i]); f++)
      ;
    if (f == nfiles)
      step = step_keys[i];
  }
  if (xkey == NULL)
    xkey = step;
  else if ((rc = require_key(files, nfiles, xkey, "--x")) != 0)
    return rc;
  if (xkey == NULL && o->sum_x)
    return usage_fail("--sum-x needs --x KEY (epoch, iter, iteration and "
                      "step are not in every file)",
                      NULL);
  fig->xlabel = xkey == NULL ? "record" : xkey;
  if (o->sum_x)
    fig->xlabel = orion_asprintf("%s (running total)", xkey);
  fig->log_y = o->log_y;
  rc = choose_keys(files, nfiles, o, xkey, &keys, &nkeys);
  if (rc != 0) {
    orion_free(keys);
    return rc;
  }
  for (i = 0; i < nfiles; i++)
    rows += files[i].n;
  spans = orion_malloc((rows + nfiles) * sizeof *spans);
  fig->panels = orion_calloc(nkeys, sizeof *fig->panels);
  rc = spans == NULL || fig->panels == NULL || fig->xlabel == NULL;
  if (rc == 0) {
    nspans = split_runs(files, nfiles, step, spans);
    rc = label_runs(fig, files, spans, nspans);
  }
  for (i = 0; i < nkeys && rc == 0; i++) {
    fig->panels[i].key = keys[i];
    fig->npanels++;
    rc = fill_panel(&fig->panels[i], files, spans, nspans, xkey, o);
  }
  orion_free(spans);
  orion_free(keys);
  return rc != 0 ? fail(EXIT_BAD, "out of memory") : 0;
}

int orion_plot_main(int argc, char **argv) {
  plot_opts o;
  plot_file *files;
  orion_plot_figure fig;
  char *out_path = NULL;
  size_t nfiles, i;
  int rc;
  FILE *out;

  memset(&o, 0, sizeof o);
  memset(&fig, 0, sizeof fig);
  rc = parse_args(argc, argv, &o);
  if (rc >= 0)
    return rc;
  nfiles = (size_t)(argc - optind);
  files = orion_calloc(nfiles, sizeof *files);
  if (files == NULL)
    return fail(EXIT_BAD, "out of memory");
  for (i = 0, rc = 0; i < nfiles && rc == 0; i++) {
    files[i].path = argv[optind + (int)i];
    rc = read_file(&files[i]);
  }
  if (rc == 0)
    rc = build(files, nfiles, &o, &fig);
  if (rc == 0) {
    out_path = o.out != NULL ? orion_strdup(o.out)
                             : default_output(files[0].path);
    if (out_path == NULL)
      rc = fail(EXIT_BAD, "out of memory");
  }
  if (rc == 0) {
    int to_stdout = strcmp(out_path, "-") == 0;
    out = to_stdout ? stdout : fopen(out_path, "w");
    if (out != NULL) {
      int bad = orion_plot_svg(out, &fig) != 0;
      bad |= (to_stdout ? fflush(out) : fclose(out)) != 0;
      if (bad)
        out = NULL;
    }
    if (out == NULL) {
      rc = fail(EXIT_WRITE, "cannot write %s: %s", out_path, strerror(errno));
    } else if (!to_stdout) {
      fprintf(stderr, "orion-driver plot: wrote %s (%zu panel%s, %zu run%s)\n",
              out_path, fig.npanels, fig.npanels == 1 ? "" : "s", fig.nruns,
              fig.nruns == 1 ? "" : "s");
    }
  }
  if (o.sum_x)
    orion_free((char *)fig.xlabel);
  free_figure(&fig);
  for (i = 0; i < nfiles; i++)
    free_file(&files[i]);
  orion_free(files);
  orion_free(out_path);
  return rc;
}
