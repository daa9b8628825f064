/* orion-driver plot: SVG charts of metrics files.  The tests run the real
 * driver and read the SVG back: well-formed XML, one panel per key, one
 * polyline per run whose points map the recorded values through the
 * panel's axes, the legend, and errors that name the file and line. */
#include <math.h>

#include "t/testutil.h"

#define PLOT(...)                                                             \
  tu_drive("t", (const char *const[]){"plot", __VA_ARGS__, NULL}, 30)

static const char run_a[] = "{\"epoch\":1,\"loss\":0.5,\"rmse\":2,\"tier\":\"c\"}\n"
                            "{\"epoch\":2,\"loss\":0.25,\"rmse\":1.5}\n"
                            "{\"epoch\":3,\"loss\":0.2,\"rmse\":1.25}\n";
static const char run_b[] = "{\"epoch\":1,\"loss\":0.75,\"rmse\":2.5}\n"
                            "{\"epoch\":2,\"rmse\":1.75}\n"
                            "\n"
                            "{\"epoch\":4,\"loss\":0.375,\"rmse\":1}\n";

static char *slurp(const char *path) {
  int fd = open(path, O_RDONLY);
  char *s;
  cr_assert(fd >= 0, "no file %s", path);
  s = tu_slurp_fd(fd);
  close(fd);
  return s;
}

static void expect_has(const char *text, const char *want) {
  cr_expect(strstr(text, want) != NULL, "expected '%s' in:\n%s", want, text);
}

static int count(const char *s, const char *what) {
  int n = 0;
  while ((s = strstr(s, what)) != NULL) {
    n++;
    s += strlen(what);
  }
  return n;
}

/* Well-formed XML: xmllint when installed, else a check that the element
 * tags balance. */
static void expect_well_formed(const char *path, const char *svg) {
  if (access("/usr/bin/xmllint", X_OK) == 0) {
    char *argv[] = {"/usr/bin/xmllint", "--noout", (char *)path, NULL};
    tu_run r = tu_run_argv(argv, 30);
    cr_expect_eq(r.status, 0, "xmllint: %s", r.err);
    tu_run_free(&r);
    return;
  }
  {
    const char *p = svg;
    int depth = 0;
    cr_log_info("xmllint is not installed: checking that tags balance");
    while ((p = strchr(p, '<')) != NULL) {
      const char *end = strchr(p, '>');
      cr_assert_not_null(end, "unclosed tag");
      if (p[1] == '/')
        depth--;
      else if (p[1] != '?' && end[-1] != '/')
        depth++;
      cr_assert_geq(depth, 0, "a closing tag without an opening one");
      p = end + 1;
    }
    cr_expect_eq(depth, 0, "unbalanced tags");
  }
}

/* The number in attribute name="..." of the element text starts with. */
static double attr(const char *text, const char *name) {
  char pat[64];
  const char *p;
  snprintf(pat, sizeof pat, " %s=\"", name);
  p = strstr(text, pat);
  cr_assert_not_null(p, "no attribute %s", name);
  return strtod(p + strlen(pat), NULL);
}

/* One panel of the SVG, as the test reads it back. */
typedef struct panel {
  char key[64];
  double xmin, xmax, ymin, ymax; /* the axes' ranges */
  double ax, ay, aw, ah;         /* the plot area */
  int npoly;
  char points[4][512]; /* the first polylines' points */
} panel;

static int read_panels(const char *svg, panel *out, int max) {
  int n = 0;
  const char *p = svg;
  while ((p = strstr(p, "<g class=\"panel\"")) != NULL && n < max) {
    const char *end = strstr(p + 1, "<g class=\"panel\""), *q, *rect;
    panel *pl = &out[n++];
    memset(pl, 0, sizeof *pl);
    sscanf(strstr(p, "data-key=\"") + 10, "%63[^\"]", pl->key);
    pl->xmin = attr(p, "data-x-min");
    pl->xmax = attr(p, "data-x-max");
    pl->ymin = attr(p, "data-y-min");
    pl->ymax = attr(p, "data-y-max");
    rect = strstr(p, "<rect class=\"plot-area\"");
    cr_assert_not_null(rect);
    pl->ax = attr(rect, "x");
    pl->ay = attr(rect, "y");
    pl->aw = attr(rect, "width");
    pl->ah = attr(rect, "height");
    for (q = p; (q = strstr(q, "<polyline")) != NULL && (end == NULL || q < end);
         q++) {
      if (pl->npoly < 4)
        sscanf(strstr(q, "points=\"") + 8, "%511[^\"]",
               pl->points[pl->npoly]);
      pl->npoly++;
    }
    p++;
  }
  return n;
}

/* Point i (-1: the last) of a points list. */
static void point(const char *points, int i, double *x, double *y) {
  int n = 0;
  const char *p = points;
  if (i < 0) {
    p = strrchr(points, ' ');
    p = p != NULL ? p + 1 : points;
  } else {
    while (n < i) {
      p = strchr(p, ' ');
      cr_assert_not_null(p, "fewer than %d points in %s", i + 1, points);
      p++;
      n++;
    }
  }
  cr_assert_eq(sscanf(p, "%lf,%lf", x, y), 2, "bad point in %s", points);
}

/* Checks that the point at (x, y) in pixels shows the value (vx, vy). */
static void expect_maps(const panel *pl, const char *points, int i, double vx,
                        double vy) {
  double px, py;
  double want_x = pl->ax + (vx - pl->xmin) / (pl->xmax - pl->xmin) * pl->aw;
  double want_y =
      pl->ay + pl->ah - (vy - pl->ymin) / (pl->ymax - pl->ymin) * pl->ah;
  point(points, i, &px, &py);
  cr_expect(fabs(px - want_x) < 0.01 && fabs(py - want_y) < 0.01,
            "panel %s point %d: (%g, %g) is at (%.2f, %.2f), expected "
            "(%.2f, %.2f)",
            pl->key, i, vx, vy, px, py, want_x, want_y);
}

/* Checks a panel's key, its count of polylines and its axes' ranges. */
static void expect_panel(const panel *pl, const char *key, int npoly,
                         double xmin, double xmax, double ymin, double ymax) {
  cr_expect_str_eq(pl->key, key);
  cr_expect_eq(pl->npoly, npoly, "panel %s", key);
  cr_expect(pl->xmin == xmin && pl->xmax == xmax && pl->ymin == ymin &&
                pl->ymax == ymax,
            "panel %s: axes x %g..%g y %g..%g, expected x %g..%g y %g..%g",
            key, pl->xmin, pl->xmax, pl->ymin, pl->ymax, xmin, xmax, ymin,
            ymax);
}

Test(plot, two_runs_overlaid_one_panel_per_key) {
  char *a = tu_write_temp(".jsonl", run_a), *b = tu_write_temp(".jsonl", run_b);
  char *svg_path = tu_temp_path(".svg");
  panel pl[4];
  char *svg;
  int n;
  tu_run r = PLOT(a, b, "-o", svg_path);
  cr_assert_eq(r.status, 0, "plot failed: %s", r.err);
  cr_expect_str_empty(r.out);
  {
    char want[512];
    snprintf(want, sizeof want,
             "orion-driver plot: wrote %s (2 panels, 2 runs)\n", svg_path);
    cr_expect_str_eq(r.err, want);
  }
  tu_run_free(&r);
  svg = slurp(svg_path);
  expect_well_formed(svg_path, svg);
  cr_expect(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "<svg xmlns=") != NULL);
  /* The legend names both files, in order. */
  {
    const char *legend = strstr(svg, "<g class=\"legend\"");
    cr_assert_not_null(legend);
    cr_expect(strstr(legend, a) != NULL && strstr(legend, b) != NULL &&
                  strstr(legend, a) < strstr(legend, b),
              "legend does not name %s then %s", a, b);
  }
  n = read_panels(svg, pl, 4);
  cr_assert_eq(n, 2, "panels: loss and rmse (epoch is the x axis, tier is "
                     "not a number)");
  /* The axes cover the data with round ends; epochs are whole. */
  expect_panel(&pl[0], "loss", 2, 1, 4, 0.2, 0.8);
  expect_panel(&pl[1], "rmse", 2, 1, 4, 1, 2.5);
  /* loss: run a (1, 0.5) .. (3, 0.2); run b skips epoch 2, which has no
   * loss: (1, 0.75) .. (4, 0.375). */
  expect_maps(&pl[0], pl[0].points[0], 0, 1, 0.5);
  expect_maps(&pl[0], pl[0].points[0], 1, 2, 0.25);
  expect_maps(&pl[0], pl[0].points[0], -1, 3, 0.2);
  expect_maps(&pl[0], pl[0].points[1], 0, 1, 0.75);
  expect_maps(&pl[0], pl[0].points[1], -1, 4, 0.375);
  cr_expect_eq(count(pl[0].points[1], ","), 2, "run b has 2 loss points: %s",
               pl[0].points[1]);
  expect_maps(&pl[1], pl[1].points[0], 0, 1, 2);
  expect_maps(&pl[1], pl[1].points[0], -1, 3, 1.25);
  expect_maps(&pl[1], pl[1].points[1], 0, 1, 2.5);
  expect_maps(&pl[1], pl[1].points[1], 1, 2, 1.75);
  expect_maps(&pl[1], pl[1].points[1], -1, 4, 1);
  /* Round tick labels on rmse's y axis: 1.0 to 2.5 by 0.5 (or finer). */
  expect_has(svg, "text-anchor=\"end\">1.0</text>");
  expect_has(svg, "text-anchor=\"end\">2.5</text>");
  /* Epochs are whole numbers, so are the x ticks. */
  expect_has(svg, "text-anchor=\"middle\">2</text>");
  cr_expect_null(strstr(svg, "text-anchor=\"middle\">1.5</text>"));
  expect_has(svg, "font-weight=\"bold\">rmse</text>");
  expect_has(svg, "font-size=\"12\">epoch</text>");
  free(svg);
  unlink(a);
  unlink(b);
  unlink(svg_path);
  free(a);
  free(b);
  free(svg_path);
}

Test(plot, options_choose_keys_axes_and_output) {
  char *a = tu_write_temp(".jsonl", "{\"epoch\":1,\"seconds\":2,\"acc\":0.01}\n"
                                    "{\"epoch\":2,\"seconds\":3,\"acc\":0.1}\n"
                                    "{\"epoch\":3,\"seconds\":5,\"acc\":10}\n");
  char default_svg[512];
  panel pl[4];
  char *svg;
  tu_run r;
  /* --y one key, --x seconds as a running total, --log-y, to stdout. */
  r = PLOT("--y", "acc", "--x", "seconds", "--sum-x", "--log-y", a, "-o",
           "-");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_empty(r.err);
  cr_assert_eq(read_panels(r.out, pl, 4), 1);
  expect_panel(&pl[0], "acc", 1, 2, 10, 0.01, 10);
  expect_has(r.out, "data-y-scale=\"log\"");
  expect_has(r.out, ">seconds (running total)</text>");
  expect_has(r.out, "text-anchor=\"end\">0.1</text>");
  expect_has(r.out, "text-anchor=\"end\">1</text>");
  {
    /* On a log axis 0.1 is halfway from 0.01 to 1: a third of the way up. */
    double px, py;
    point(pl[0].points[0], 1, &px, &py);
    cr_expect(fabs(px - (pl[0].ax + (5.0 - 2) / 8 * pl[0].aw)) < 0.01);
    cr_expect(fabs(py - (pl[0].ay + pl[0].ah * 2 / 3)) < 0.01, "y %g", py);
  }
  tu_run_free(&r);
  /* The default output: the input's name with .svg. */
  snprintf(default_svg, sizeof default_svg, "%.*s.svg",
           (int)(strlen(a) - strlen(".jsonl")), a);
  r = PLOT(a);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tu_run_free(&r);
  svg = slurp(default_svg);
  cr_assert_eq(read_panels(svg, pl, 4), 2, "acc and seconds");
  cr_expect_str_eq(pl[0].key, "acc");
  cr_expect_str_eq(pl[1].key, "seconds");
  free(svg);
  unlink(default_svg);
  unlink(a);
  free(a);
}

Test(plot, runs_appended_to_one_file_are_separate_lines) {
  char *a = tu_write_temp(".jsonl", "{\"epoch\":1,\"loss\":3}\n"
                                    "{\"epoch\":2,\"loss\":2}\n"
                                    "{\"epoch\":1,\"loss\":4}\n"
                                    "{\"epoch\":2,\"loss\":1}\n");
  panel pl[2];
  char want[512];
  tu_run r = PLOT(a, "-o", "-");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(read_panels(r.out, pl, 2), 1);
  cr_expect_eq(pl[0].npoly, 2);
  expect_maps(&pl[0], pl[0].points[1], 0, 1, 4);
  expect_maps(&pl[0], pl[0].points[1], -1, 2, 1);
  snprintf(want, sizeof want, ">%s (run 2)</text>", a);
  expect_has(r.out, want);
  tu_run_free(&r);
  unlink(a);
  free(a);
}

/* Runs plot on one file holding text (with option extra and the value x,
 * when not NULL) and expects exit 2 and the message "orion-driver plot:
 * FILE" followed by tail. */
static void expect_bad(const char *text, const char *extra, const char *tail) {
  char *f = tu_write_temp(".jsonl", text), want[1024];
  char *out = tu_temp_path(".svg");
  tu_run r = extra != NULL ? PLOT(extra, "x", f, "-o", out)
                           : PLOT(f, "-o", out);
  snprintf(want, sizeof want, "orion-driver plot: %s%s", f, tail);
  cr_expect_eq(r.status, 2, "exit code for %s", want);
  cr_expect_str_empty(r.out);
  cr_expect_str_eq(r.err, want);
  cr_expect_neq(access(out, F_OK), 0, "an SVG was written");
  tu_run_free(&r);
  unlink(f);
  free(f);
  free(out);
}

Test(plot, bad_input_names_the_file_and_line) {
  expect_bad("{\"epoch\":1,\"loss\":1}\n{\"epoch\":2,,}\n", NULL,
             ":2: not a JSON object (column 12: "
             "expected a key, found ','): \"{\"epoch\":2,,}\"\n");
  expect_bad("\n{\"epoch\":1}\nepoch 2 loss 0.5\n", NULL,
             ":3: not a JSON object (column 1: "
             "expected a JSON object ('{'), found 'e'): \"epoch 2 loss "
             "0.5\"\n");
  /* Binary garbage is not echoed raw. */
  expect_bad("\x01\xff\xfe\n", NULL,
             ":1: not a JSON object (column 1: "
             "expected a JSON object ('{'), found byte 0x01): \"???\"\n");
  expect_bad("", NULL, ": empty (no records)\n");
  expect_bad("\n \n", NULL, ": empty (no records)\n");
  expect_bad("{\"epoch\":1,\"name\":\"a\"}\n", NULL,
             ": no numeric key to plot besides "
             "'epoch'\n");
  expect_bad("{\"epoch\":1,\"loss\":1}\n", "--y",
             ": --y x: none of its 1 records has a "
             "number for 'x' (its numeric keys: epoch, loss)\n");
  expect_bad("{\"epoch\":1,\"loss\":1}\n", "--x",
             ": --x x: none of its 1 records has a "
             "number for 'x' (its numeric keys: epoch, loss)\n");
}

Test(plot, usage_errors_and_help) {
  tu_run r = PLOT("/nonexistent/m.jsonl");
  cr_expect_eq(r.status, 2);
  cr_expect_str_eq(r.err, "orion-driver plot: cannot open "
                          "/nonexistent/m.jsonl: No such file or directory\n");
  tu_run_free(&r);
  r = PLOT("--bogus", "m.jsonl");
  cr_expect_eq(r.status, 2);
  cr_expect_str_eq(r.err, "orion-driver plot: unknown option '--bogus'\n"
                          "Try 'orion-driver plot --help'.\n");
  tu_run_free(&r);
  r = tu_drive("t", (const char *const[]){"plot", NULL}, 30);
  cr_expect_eq(r.status, 2);
  expect_has(r.err, "no metrics file given");
  tu_run_free(&r);
  r = PLOT("--help");
  cr_expect_eq(r.status, 0);
  expect_has(r.out, "usage: orion-driver plot [OPTIONS] METRICS.jsonl");
  tu_run_free(&r);
}
