/* Parsing an input in a built-in text format (orion_load_buffer and
 * orion_load_buffer_range of dsm/loader.h): the walk over the lines of a
 * whole input or of the byte range one executor parses, what a range
 * learns from the input before it, and finishing a load's array.
 *
 * The line parsers of the formats are dsm/load_formats.c, the scanner
 * dsm/load_scan.c, the shared state dsm/load_int.h.
 */
#include "dsm/load_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/progress.h"

/* ------------------------------------------------------------------------
 * Errors.
 * ------------------------------------------------------------------------ */

/* Copies src into dst[cap], cutting it when needed. */
static void copy_cut(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* ------------------------------------------------------------------------
 * The line walk.
 * ------------------------------------------------------------------------ */

/* Lines and ':' in the first MiB, scaled to the buffer, plus a margin. */
static void estimate(loader *L, const char *buf, size_t len) {
  size_t sample = len < ((size_t)1 << 20) ? len : (size_t)1 << 20;
  const char *p = buf, *end = buf + sample;
  double scale = sample > 0 ? (double)len / (double)sample : 0;
  int64_t nl = 1, colons = 0;
  while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL)
    nl++, p++;
  if (L->o->format == ORION_FMT_LIBSVM)
    for (p = buf; (p = memchr(p, ':', (size_t)(end - p))) != NULL; p++)
      colons++;
  L->est_lines = (int64_t)((double)nl * scale * 1.02) + 16;
  L->est_elems = L->o->format == ORION_FMT_LIBSVM
                     ? (int64_t)((double)colons * scale * 1.02) + 16
                     : L->est_lines;
}

/* Gives back reserved room an over-estimate left unused. */
static void shrink(orion_array *a) {
  size_t es = orion_type_size(a->type);
  int64_t *k;
  void *v;
  if (a->nnz == 0 || a->cap - a->nnz < 4096)
    return;
  k = orion_realloc(a->keys, (size_t)a->nnz * (size_t)a->ndims * sizeof *k);
  if (k == NULL)
    return;
  a->keys = k;
  v = orion_realloc(a->values, (size_t)a->nnz * es);
  if (v == NULL) {
    a->cap = a->nnz; /* keys shrank: the smaller of both counts */
    return;
  }
  a->values = v;
  a->cap = a->nnz;
}

/* Checks the uci-bow line count, makes the array when no line did, fixes
 * the dims and hands over the labels of the range's rows. */
static int finish(loader *L, orion_load_result *res) {
  const orion_load_opts *o = L->o;
  orion_error e2;
  int d, rc;
  int64_t nrows = L->rows - L->row_lo;
  if (o->format == ORION_FMT_UCIBOW && L->at_end &&
      (rc = orion__load_ucibow_check(L)) != 0)
    return rc;
  if (L->a == NULL) { /* coo with nkeys 0 and no usable line here */
    L->ndims = L->file_ndims > 0 ? L->file_ndims : 2;
    if ((rc = orion__load_start_array(L)) != 0)
      return rc;
  }
  if (L->check)
    for (d = 0; d < L->ndims; d++)
      L->a->dims[d] = L->lim[d];
  if (o->format == ORION_FMT_LIBSVM) {
    if (L->a->dims[0] < L->rows)
      L->a->dims[0] = L->rows;
    if (nrows > 0) {
      res->labels = orion_array_new_dense(1, &nrows, ORION_F64, &e2);
      if (res->labels == NULL)
        return orion__load_fail(L, e2.code, "%s: %s", L->name, e2.msg);
      memcpy(res->labels->values, L->labels, (size_t)nrows * sizeof(double));
    }
  }
  res->row_lo = L->row_lo;
  shrink(L->a);
  return 0;
}

/* Walks the lines before `to` (the range's first line) and returns how
 * many there are.  Counts the data lines before it where they matter:
 * libsvm rows (with skip_errors only parsing tells which lines make rows,
 * so they are parsed dry), and uci-bow data lines for the NNZ check of the
 * range at the end. */
static int64_t scan_prefix(loader *L, const char *to) {
  const orion_load_opts *o = L->o;
  const char *p = L->buf;
  int64_t n = 0;
  if (o->format != ORION_FMT_LIBSVM &&
      (o->format != ORION_FMT_UCIBOW || !L->at_end)) {
    while ((p = memchr(p, '\n', (size_t)(to - p))) != NULL)
      n++, p++;
    return n;
  }
  L->dry = o->format == ORION_FMT_LIBSVM && o->skip_errors;
  for (; p < to; n++) {
    text_line ln = scan_line_at(p, L->end);
    p = ln.next;
    if (!load_is_data(L, ln.s, ln.e))
      continue;
    if (L->dry)
      (void)L->line(L, ln.s, ln.e); /* a bad line makes no row */
    else if (o->format == ORION_FMT_LIBSVM)
      L->rows++;
    else
      L->data_lines++;
  }
  L->dry = 0;
  return n;
}

/* Parses the lines that start in [p, stop), each one whole; lineno is the
 * first one's number.  A line error ends the load, or with skip_errors is
 * counted in res. */
static int parse_lines(loader *L, const char *p, const char *stop,
                       int64_t lineno, orion_load_result *res) {
  char msg[sizeof L->err->msg];
  int rc;
  for (; p < stop; lineno++) {
    text_line ln = scan_line_at(p, L->end);
    res->lines++;
    p = ln.next;
    if (L->prog != NULL && (res->lines & 16383) == 0)
      orion_progress_update(L->prog, p - L->buf);
    if (!load_is_data(L, ln.s, ln.e) || (rc = L->line(L, ln.s, ln.e)) == 0)
      continue;
    if (L->failed)
      return rc;
    if (!L->o->skip_errors || L->hard)
      return orion__load_line_fail(L, rc, lineno, ln.s, ln.e);
    orion__scan_line_message(msg, sizeof msg, L->name, lineno, L->problem, ln.s,
                             ln.e);
    if (res->skipped++ == 0)
      copy_cut(res->first_skip, sizeof res->first_skip, msg);
  }
  return 0;
}

/* Learns from the input before the range what a whole load would know
 * there: the uci-bow header, coo's key count, the libsvm rows and the line
 * number.  *lineno becomes the number of the range's first line. */
static int start_range(loader *L, const char *start, const char *stop,
                       int64_t *lineno) {
  const char *at;
  int rc;
  if (L->o->format == ORION_FMT_UCIBOW &&
      (rc = orion__load_ucibow_header(L, *lineno)) != 0)
    return rc;
  if (L->o->format == ORION_FMT_COO && L->o->nkeys == 0 &&
      (start > L->buf || stop < L->end)) {
    L->file_ndims = orion__load_coo_nkeys(L, &at);
    if (L->file_ndims > 0 && at < start) {
      L->ndims = L->file_ndims;
      if ((rc = orion__load_start_array(L)) != 0)
        return rc;
    }
  }
  if (start > L->buf)
    *lineno += scan_prefix(L, start);
  L->row_lo = L->rows;
  return 0;
}

/* The loads of a whole buffer and of a byte range: parses the lines of
 * buf that start in [lo, hi), numbered from first_line for buf's first.
 * Ownership as orion_load_buffer. */
static int load_range(const char *buf, size_t len, const char *name,
                      int64_t first_line, uint64_t lo, uint64_t hi, int whole,
                      const orion_load_opts *o, orion_load_result *res,
                      orion_error *err) {
  loader L;
  orion_progress prog;
  const char *start, *stop;
  int64_t lineno = first_line;
  int rc;
  memset(res, 0, sizeof *res);
  if (buf == NULL)
    buf = "", len = 0;
  memset(&L, 0, sizeof L);
  L.o = o;
  L.name = name != NULL ? name : "(buffer)";
  L.err = err;
  L.base = o->index_base;
  L.type = o->value_type;
  /* Counts to expand are parsed as integers, whatever the element type. */
  if (whole && o->expand && o->format == ORION_FMT_UCIBOW)
    L.type = ORION_I64;
  L.first_line = first_line;
  L.buf = buf;
  L.end = buf + len;
  L.data_from = buf;
  /* A header line is the input's first line, in every format whose lines
   * are one element each (orion__load_check_opts refuses the others). */
  L.skip_line = o->header ? buf : NULL;
  L.comments = o->format != ORION_FMT_UCIBOW;
  if ((rc = orion__load_check_opts(&L)) != 0)
    return rc;
  if (lo > hi)
    return orion__load_fail(&L, ORION_EOPTION,
                            "%s: bad byte range [%llu, %llu)", L.name,
                            (unsigned long long)lo, (unsigned long long)hi);
  L.line = orion__load_line_fn(o->format);
  stop = buf + (hi < len ? hi : len);
  start = buf + orion__scan_line_start(buf, len, lo < len ? lo : len);
  L.at_end = stop == L.end;
  estimate(&L, start, start < stop ? (size_t)(stop - start) : 0);
  if (whole && o->progress) {
    char label[96];
    snprintf(label, sizeof label, "loading %s", L.name);
    orion_progress_start(&prog, label, NULL, (int64_t)len);
    L.prog = &prog;
  }
  if ((rc = orion__load_start_format(&L)) == 0 &&
      (rc = start_range(&L, start, stop, &lineno)) == 0 &&
      (rc = parse_lines(&L, start, stop, lineno, res)) == 0)
    rc = finish(&L, res);
  if (L.prog != NULL) {
    if (rc == 0)
      orion_progress_update(&prog, (int64_t)len);
    orion_progress_end(&prog);
  }
  orion_free(L.cols);
  orion_free(L.labels);
  if (rc != 0) {
    orion_array_release(L.a);
    orion_array_release(res->labels);
    res->labels = NULL;
    res->array = NULL;
    return rc;
  }
  res->array = L.a;
  if (whole && o->expand && o->format == ORION_FMT_UCIBOW &&
      (rc = orion_load_expand(res, o->value_type, L.name, err)) != 0) {
    orion_array_release(res->array);
    res->array = NULL;
    return rc;
  }
  return 0;
}

/* Parses buf (only read, the caller keeps it).  On success res->array and
 * res->labels belong to the caller (orion_array_release); on failure
 * everything allocated here is freed and both are NULL. */
int orion_load_buffer(const char *buf, size_t len, const char *name,
                      int64_t first_line, const orion_load_opts *o,
                      orion_load_result *res, orion_error *err) {
  return load_range(buf, len, name, first_line, 0, len, 1, o, res, err);
}

/* The lines of buf starting in [lo, hi), with global line numbers and
 * libsvm rows; buf is only read.  Ownership as orion_load_buffer. */
int orion_load_buffer_range(const char *buf, size_t len, const char *name,
                            uint64_t lo, uint64_t hi, const orion_load_opts *o,
                            orion_load_result *res, orion_error *err) {
  return load_range(buf, len, name, 1, lo, hi, 0, o, res, err);
}
