/* `orion-driver plot`: charts of the metrics files that `--metrics` writes.
 *
 * drivers/plot.c reads the files and builds a figure: one panel per
 * recorded key, one series per run in each panel.  drivers/plot_svg.c
 * draws a figure as SVG. */
#ifndef ORION_DRIVERS_PLOT_H
#define ORION_DRIVERS_PLOT_H

#include <stddef.h>
#include <stdio.h>

/* The points of one run in one panel, in file order. */
typedef struct orion_plot_series {
  size_t run; /* index into orion_plot_figure.runs */
  double *x, *y;
  size_t n;
} orion_plot_series;

typedef struct orion_plot_panel {
  const char *key; /* the y key, the panel's title */
  orion_plot_series *s;
  size_t ns;
} orion_plot_panel;

/* What plot_svg.c draws.  Owned by plot.c. */
typedef struct orion_plot_figure {
  char **runs; /* legend labels: the file names, "FILE (run 2)", ... */
  size_t nruns;
  orion_plot_panel *panels;
  size_t npanels;
  const char *xlabel;
  int log_y;
} orion_plot_figure;

/* orion-driver plot ARGS: argv[0] is "plot".  Returns the exit code: 0, 1
 * when the output cannot be written, 2 on a usage error or bad input (the
 * message, naming the file and line, printed on stderr). */
int orion_plot_main(int argc, char **argv);

/* Writes f as one SVG document to out.  Returns 0, or -1 when a write
 * failed (errno set). */
int orion_plot_svg(FILE *out, const orion_plot_figure *f);

#endif
