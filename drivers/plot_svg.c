/* Draws an orion_plot_figure as one SVG document, by hand: a legend on top
 * (one line a run), then the panels in a grid, two a row.  Each panel is a
 * <g class="panel"> with its data ranges as attributes (data-x-min, ...),
 * a <rect class="plot-area">, axes with round ticks, a title (the key), and
 * one <polyline class="series"> per run, so tools and tests can map each
 * point back to its value.  The output is deterministic. */
#include "drivers/plot.h"

#include <math.h>
#include <string.h>

/* The geometry of a panel, in pixels. */
#define PANEL_W 520
#define PANEL_H 300
#define MARGIN_L 74
#define MARGIN_R 18
#define MARGIN_T 34
#define MARGIN_B 46
#define LEGEND_ROW 20
#define MAX_TICKS 6
#define MAX_MARKERS 60 /* points drawn as dots up to this many a series */

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
                                      "#ff7f0e", "#9467bd", "#8c564b",
                                      "#e377c2", "#7f7f7f", "#bcbd22",
                                      "#17becf"};
#define NCOLOURS (sizeof colours / sizeof colours[0])

/* ---- text --------------------------------------------------------------- */

/* The length of the UTF-8 sequence at s (n bytes left), or 0 when the bytes
 * there are not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len, i;
  unsigned cp;
  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xc2 && s[0] < 0xe0)
    len = 2, cp = s[0] & 0x1fu;
  else if (s[0] >= 0xe0 && s[0] < 0xf0)
    len = 3, cp = s[0] & 0x0fu;
  else if (s[0] >= 0xf0 && s[0] < 0xf5)
    len = 4, cp = s[0] & 0x07u;
  else
    return 0;
  if (len > n)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 ||
                                                cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp < 0xe000))
    return 0;
  return len;
}

/* Writes s as XML character data: markup characters escaped, control
 * bytes and bytes that are not UTF-8 as '?' (XML allows neither). */
static void xml_text(FILE *out, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  while (n > 0) {
    size_t k = utf8_len(p, n);
    if (*p == '&')
      fputs("&amp;", out);
    else if (*p == '<')
      fputs("&lt;", out);
    else if (*p == '>')
      fputs("&gt;", out);
    else if (*p == '"')
      fputs("&quot;", out);
    else if (*p == '\'')
      fputs("&apos;", out);
    else if (k == 0 || (*p < 0x20 && *p != '\t'))
      fputc('?', out);
    else
      fwrite(p, 1, k, out);
    if (k == 0)
      k = 1;
    p += k;
    n -= k;
  }
}

/* ---- scales ------------------------------------------------------------- */

/* One axis: the data range [lo, hi] widened to round ticks lo, lo + step,
 * ... hi (in log10 units on a log axis). */
typedef struct axis {
  double lo, hi, step;
  int log;
} axis;

/* A round number near v: 1, 2, 5 or 10 times a power of ten. */
static double round_step(double v) {
  double p = pow(10, floor(log10(v) + 1e-9)), f = v / p * (1 + 1e-9);
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

/* The axis over data in [lo, hi] (log: values > 0, in log10 units); with
 * whole, the data are whole numbers and so are the ticks. */
static axis make_axis(double lo, double hi, int log, int whole) {
  axis a;
  a.log = log;
  if (log) {
    lo = floor(log10(lo));
    hi = ceil(log10(hi));
    if (hi <= lo)
      hi = lo + 1;
    a.step = ceil((hi - lo) / (MAX_TICKS - 1));
    a.lo = lo;
    a.hi = lo + a.step * ceil((hi - lo) / a.step);
    return a;
  }
  if (hi <= lo) { /* one value: a range around it */
    double d = lo != 0 ? fabs(lo) * 0.1 : 1;
    lo -= d;
    hi += d;
  }
  a.step = round_step((hi - lo) / (MAX_TICKS - 1));
  if (whole && a.step < 1)
    a.step = 1;
  a.lo = floor(lo / a.step + 1e-9) * a.step;
  a.hi = ceil(hi / a.step - 1e-9) * a.step;
  return a;
}

/* Where v falls on a, from 0 (lo) to 1 (hi). */
static double frac(const axis *a, double v) {
  if (a->log)
    v = log10(v);
  return (v - a->lo) / (a->hi - a->lo);
}

/* A tick's label: digits enough for the step, or %g for extreme values. */
static void tick_label(const axis *a, double t, char *buf, size_t n) {
  int digits;
  if (a->log) {
    snprintf(buf, n, "%g", pow(10, t));
    return;
  }
  if (fabs(t) < a->step * 1e-9)
    t = 0; /* not "-0" */
  if (fabs(t) >= 1e6 || a->step < 1e-4) {
    snprintf(buf, n, "%g", t);
    return;
  }
  digits = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
  snprintf(buf, n, "%.*f", digits, t);
}

/* ---- panels ------------------------------------------------------------- */

/* The ranges of a panel's points; *whole when every x is a whole number. */
static void data_range(const orion_plot_panel *p, double *xlo, double *xhi,
                       double *ylo, double *yhi, int *whole) {
  size_t i, j;
  *whole = 1;
  *xlo = *ylo = INFINITY;
  *xhi = *yhi = -INFINITY;
  for (i = 0; i < p->ns; i++)
    for (j = 0; j < p->s[i].n; j++) {
      *whole &= p->s[i].x[j] == floor(p->s[i].x[j]);
      *xlo = fmin(*xlo, p->s[i].x[j]);
      *xhi = fmax(*xhi, p->s[i].x[j]);
      *ylo = fmin(*ylo, p->s[i].y[j]);
      *yhi = fmax(*yhi, p->s[i].y[j]);
    }
}

/* The number of steps from a->lo to a->hi. */
static int nsteps(const axis *a) { return (int)lround((a->hi - a->lo) / a->step); }

/* The ticks of both axes, grid lines and labels; w, h the plot area. */
static void draw_axes(FILE *out, const axis *ax, const axis *ay, double w,
                      double h) {
  int k;
  char label[64];
  fputs("<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n", out);
  for (k = 0; k <= nsteps(ax); k++) {
    double x = MARGIN_L + w * k / nsteps(ax);
    fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x,
            MARGIN_T, x, MARGIN_T + h);
  }
  for (k = 0; k <= nsteps(ay); k++) {
    double y = MARGIN_T + h - h * k / nsteps(ay);
    fprintf(out, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
            MARGIN_L, y, MARGIN_L + w, y);
  }
  fputs("</g>\n<g class=\"ticks\" font-size=\"11\" fill=\"#333\">\n", out);
  for (k = 0; k <= nsteps(ax); k++) {
    tick_label(ax, ax->lo + k * ax->step, label, sizeof label);
    fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s"
                 "</text>\n",
            MARGIN_L + w * k / nsteps(ax), MARGIN_T + h + 16, label);
  }
  for (k = 0; k <= nsteps(ay); k++) {
    tick_label(ay, ay->lo + k * ay->step, label, sizeof label);
    fprintf(out, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
            MARGIN_L - 6, MARGIN_T + h - h * k / nsteps(ay) + 4, label);
  }
  fputs("</g>\n", out);
}

/* One series as a polyline (and dots when it has few points). */
static void draw_series(FILE *out, const orion_plot_series *s,
                        const axis *ax, const axis *ay, double w, double h) {
  const char *colour = colours[s->run % NCOLOURS];
  size_t j;
  fprintf(out, "<polyline class=\"series\" data-run=\"%zu\" fill=\"none\" "
               "stroke=\"%s\" stroke-width=\"1.8\" points=\"",
          s->run, colour);
  for (j = 0; j < s->n; j++)
    fprintf(out, "%s%.2f,%.2f", j > 0 ? " " : "",
            MARGIN_L + frac(ax, s->x[j]) * w,
            MARGIN_T + h - frac(ay, s->y[j]) * h);
  fputs("\"/>\n", out);
  if (s->n > MAX_MARKERS)
    return;
  fprintf(out, "<g fill=\"%s\">", colour);
  for (j = 0; j < s->n; j++)
    fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\"/>",
            MARGIN_L + frac(ax, s->x[j]) * w,
            MARGIN_T + h - frac(ay, s->y[j]) * h);
  fputs("</g>\n", out);
}

static void draw_panel(FILE *out, const orion_plot_figure *f,
                       const orion_plot_panel *p, int left, int top) {
  double xlo, xhi, ylo, yhi, w = PANEL_W - MARGIN_L - MARGIN_R,
                             h = PANEL_H - MARGIN_T - MARGIN_B;
  axis ax, ay;
  size_t i;
  int whole;
  data_range(p, &xlo, &xhi, &ylo, &yhi, &whole);
  if (p->ns == 0)
    xlo = ylo = xhi = yhi = 1; /* an empty panel: any axes */
  ax = make_axis(xlo, xhi, 0, whole);
  ay = make_axis(ylo, yhi, f->log_y, 0);
  fprintf(out, "<g class=\"panel\" transform=\"translate(%d,%d)\" data-key=\"",
          left, top);
  xml_text(out, p->key);
  fprintf(out, "\" data-x-min=\"%.15g\" data-x-max=\"%.15g\" "
               "data-y-min=\"%.15g\" data-y-max=\"%.15g\" "
               "data-y-scale=\"%s\">\n",
          ax.lo, ax.hi, ay.log ? pow(10, ay.lo) : ay.lo,
          ay.log ? pow(10, ay.hi) : ay.hi, ay.log ? "log" : "linear");
  fprintf(out, "<rect class=\"plot-area\" x=\"%d\" y=\"%d\" width=\"%.0f\" "
               "height=\"%.0f\" fill=\"#ffffff\" stroke=\"none\"/>\n",
          MARGIN_L, MARGIN_T, w, h);
  draw_axes(out, &ax, &ay, w, h);
  fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" "
               "fill=\"none\" stroke=\"#555\" stroke-width=\"1\"/>\n",
          MARGIN_L, MARGIN_T, w, h);
  fprintf(out, "<text class=\"title\" x=\"%.1f\" y=\"%d\" "
               "text-anchor=\"middle\" font-size=\"14\" "
               "font-weight=\"bold\">",
          MARGIN_L + w / 2, MARGIN_T - 12);
  xml_text(out, p->key);
  fputs(f->log_y ? " (log scale)</text>\n" : "</text>\n", out);
  fprintf(out, "<text class=\"xlabel\" x=\"%.1f\" y=\"%d\" "
               "text-anchor=\"middle\" font-size=\"12\">",
          MARGIN_L + w / 2, PANEL_H - 8);
  xml_text(out, f->xlabel);
  fputs("</text>\n", out);
  if (p->ns == 0)
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                 "fill=\"#888\">no values</text>\n",
            MARGIN_L + w / 2, MARGIN_T + h / 2);
  for (i = 0; i < p->ns; i++)
    draw_series(out, &p->s[i], &ax, &ay, w, h);
  fputs("</g>\n", out);
}

int orion_plot_svg(FILE *out, const orion_plot_figure *f) {
  int cols = f->npanels > 1 ? 2 : 1;
  int rows = (int)((f->npanels + (size_t)cols - 1) / (size_t)cols);
  int legend_h = (int)f->nruns * LEGEND_ROW + 12;
  size_t i;
  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"DejaVu Sans, Verdana, sans-serif\">\n",
          cols * PANEL_W, legend_h + rows * PANEL_H, cols * PANEL_W,
          legend_h + rows * PANEL_H);
  fputs("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
        "<g class=\"legend\" font-size=\"12\">\n",
        out);
  for (i = 0; i < f->nruns; i++) {
    int y = 12 + (int)i * LEGEND_ROW;
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                 "stroke=\"%s\" stroke-width=\"3\"/>"
                 "<text x=\"%d\" y=\"%d\">",
            MARGIN_L, y + 6, MARGIN_L + 28, y + 6, colours[i % NCOLOURS],
            MARGIN_L + 36, y + 10);
    xml_text(out, f->runs[i]);
    fputs("</text>\n", out);
  }
  fputs("</g>\n", out);
  for (i = 0; i < f->npanels; i++)
    draw_panel(out, f, &f->panels[i], (int)(i % (size_t)cols) * PANEL_W,
               legend_h + (int)(i / (size_t)cols) * PANEL_H);
  fputs("</svg>\n", out);
  return ferror(out) ? -1 : 0;
}
