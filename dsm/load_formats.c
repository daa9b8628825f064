/* The five built-in text formats of dsm/loader.h: coo, csv, movielens,
 * libsvm and uci-bow.  Each has a line parser (the fields of one data
 * line into keys and a value, with the messages a bad line gets); here
 * too are the options they take, the uci-bow header and its count checks,
 * coo's key count, and the token expansion of a bag-of-words load.
 *
 * The line walk that calls them, over a whole input or a byte range, is
 * dsm/load_walk.c; the shared state is dsm/load_int.h.  The "lines" format
 * (a Lua function per line) is not here: lua/orion.c runs it.
 */
#include "dsm/load_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

/* ------------------------------------------------------------------------
 * Formats and options.
 * ------------------------------------------------------------------------ */

#define NFORMATS 5

static const char *const format_names[NFORMATS] = {"coo", "csv", "movielens",
                                                   "libsvm", "uci-bow"};

/* The largest csv column number accepted (bounds the per-line field
 * table). */
#define MAX_CSV_COL 4096

/* Name to format (see loader.h); allocates nothing. */
int orion_format_parse(const char *name, orion_format *out) {
  int i;
  for (i = 0; i < NFORMATS; i++) {
    if (strcmp(name, format_names[i]) == 0) {
      *out = (orion_format)i;
      return 0;
    }
  }
  return ORION_EOPTION;
}

/* Format to its static name; the caller frees nothing. */
const char *orion_format_name(orion_format f) {
  if ((unsigned)f < NFORMATS)
    return format_names[f];
  return "unknown";
}

/* Defaults into the caller's *o; nothing allocated. */
void orion_load_opts_init(orion_load_opts *o) {
  memset(o, 0, sizeof *o);
  o->format = ORION_FMT_COO;
  o->index_base = 1;
  o->value_type = ORION_F64;
  o->sep = ',';
  o->ncols_key = 2;
  o->key_cols[0] = 1;
  o->key_cols[1] = 2;
  o->value_col = 3;
}

/* Fails the load for a bad option (see load_int.h). */
int orion__load_check_opts(loader *L) {
  const orion_load_opts *o = L->o;
  int d;
  if ((unsigned)o->format >= NFORMATS)
    return orion__load_fail(L, ORION_EOPTION, "%s: unknown format %d", L->name,
                            (int)o->format);
  if (o->index_base != 0 && o->index_base != 1)
    return orion__load_fail(L, ORION_EOPTION,
                            "%s: index_base must be 0 or 1, not %d", L->name,
                            o->index_base);
  if ((unsigned)o->value_type >= ORION_NTYPES)
    return orion__load_fail(L, ORION_EOPTION, "%s: unknown value type %d",
                            L->name, (int)o->value_type);
  if (o->header &&
      (o->format == ORION_FMT_LIBSVM || o->format == ORION_FMT_UCIBOW))
    return orion__load_fail(L, ORION_EOPTION,
                            "%s: header applies to the coo, csv and movielens "
                            "formats, not %s",
                            L->name,
                            o->format == ORION_FMT_LIBSVM ? "libsvm"
                                                          : "uci-bow");
  if (o->format == ORION_FMT_COO && (o->nkeys < 0 || o->nkeys > ORION_MAX_DIMS))
    return orion__load_fail(L, ORION_EOPTION,
                            "%s: nkeys must be 0 to %d, not %d", L->name,
                            ORION_MAX_DIMS, o->nkeys);
  if (o->format == ORION_FMT_CSV) {
    if (o->ncols_key < 1 || o->ncols_key > ORION_MAX_DIMS)
      return orion__load_fail(L, ORION_EOPTION,
                              "%s: a csv load needs 1 to %d key "
                              "columns, not %d",
                              L->name, ORION_MAX_DIMS, o->ncols_key);
    if (o->sep == '\0' || o->sep == '\n' || o->sep == '\r')
      return orion__load_fail(L, ORION_EOPTION,
                              "%s: bad csv separator (code %d)", L->name,
                              (int)(unsigned char)o->sep);
    for (d = 0; d <= o->ncols_key; d++) {
      int col = d < o->ncols_key ? o->key_cols[d] : o->value_col;
      if (col < 1 || col > MAX_CSV_COL)
        return orion__load_fail(L, ORION_EOPTION,
                                "%s: csv column numbers are 1 to %d, not %d",
                                L->name, MAX_CSV_COL, col);
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * Keys, values and elements.
 * ------------------------------------------------------------------------ */

static int problem(loader *L, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A problem with the current line; the caller adds file, line and text. */
static int problem(loader *L, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->problem, sizeof L->problem, fmt, ap);
  va_end(ap);
  return code;
}

/* Which part of a field a number came from, for messages. */
enum { PART_FIELD, PART_INDEX, PART_VALUE };

static void describe(char *dst, size_t cap, int part, int fieldno) {
  if (part == PART_INDEX)
    snprintf(dst, cap, "the index in field %d", fieldno);
  else if (part == PART_VALUE)
    snprintf(dst, cap, "the value in field %d", fieldno);
  else
    snprintf(dst, cap, "field %d", fieldno);
}

/* Parses the key for dimension d from field `fieldno` (a column number;
 * for libsvm the whitespace-separated field) into a 0-based key. */
static int take_key(loader *L, const char *s, const char *e, int part,
                    int fieldno, int d, int64_t *out) {
  char what[48];
  const char *where = part == PART_FIELD ? "column" : "field";
  int64_t k;
  int r = scan_int(s, e, &k);
  if (r != NUM_OK) {
    describe(what, sizeof what, part, fieldno);
    if (s == e)
      return problem(L, ORION_EPARSE, "%s is empty", what);
    if (r == NUM_RANGE)
      return problem(L, ORION_EPARSE, "%s is out of the 64-bit integer range",
                     what);
    return problem(L, ORION_EPARSE, "%s is not an integer", what);
  }
  if (k < L->base)
    return problem(L, ORION_EKEYRANGE,
                   "key %lld in %s %d is below the index base %d", (long long)k,
                   where, fieldno, L->base);
  k -= L->base;
  if (L->check && k >= L->lim[d])
    return problem(
        L, ORION_EKEYRANGE, "key %lld in %s %d is above dimension size %lld",
        (long long)k + L->base, where, fieldno, (long long)L->lim[d]);
  if (k == INT64_MAX) /* its dimension size would not fit */
    return problem(L, ORION_EKEYRANGE, "key %lld in %s %d is too large",
                   (long long)k + L->base, where, fieldno);
  *out = k;
  return 0;
}

/* Parses a value of the loader's type. */
static int take_value(loader *L, const char *s, const char *e, int part,
                      int fieldno, value *v) {
  char what[48];
  const char *why;
  int r;
  if (L->type == ORION_I32 || L->type == ORION_I64) {
    int64_t x = 0;
    r = scan_int(s, e, &x);
    if (r == NUM_OK &&
        (L->type == ORION_I64 || (x >= INT32_MIN && x <= INT32_MAX))) {
      if (L->type == ORION_I32)
        v->i32 = (int32_t)x;
      else
        v->i64 = x;
      return 0;
    }
    why = r == NUM_BAD ? "is not an integer" : "is out of range for";
  } else {
    double x = 0;
    r = scan_double(s, e, &x);
    /* f32: at or above FLT_MAX + half an ulp rounds to infinity. */
    if (r == NUM_OK && L->type == ORION_F32 &&
        (x >= 0x1.ffffffp+127 || x <= -0x1.ffffffp+127))
      r = NUM_RANGE;
    if (r == NUM_OK) {
      if (L->type == ORION_F32)
        v->f32 = (float)x;
      else
        v->f64 = x;
      return 0;
    }
    why = r == NUM_BAD    ? "is not a number"
          : r == NUM_LONG ? "is too long for a number"
                          : "is out of range for";
  }
  describe(what, sizeof what, part, fieldno);
  if (s == e)
    return problem(L, ORION_EPARSE, "%s is empty", what);
  if (r == NUM_RANGE || (r == NUM_OK && L->type == ORION_I32))
    return problem(L, ORION_EPARSE, "%s %s %s", what, why,
                   orion_type_name(L->type));
  return problem(L, ORION_EPARSE, "%s %s", what, why);
}

static int emit(loader *L, const int64_t *keys, const value *v) {
  int rc = orion_array_push(L->a, keys, v);
  if (rc != 0)
    return orion__load_fail(L, rc, "%s: %s after %lld elements", L->name,
                            orion_strerror(rc), (long long)L->a->nnz);
  return 0;
}

/* Creates L->a once ndims is known: checks given dims, reserves room (see
 * load_int.h). */
int orion__load_start_array(loader *L) {
  const orion_load_opts *o = L->o;
  orion_error e2;
  int d, rc;
  if (o->have_dims) {
    for (d = 0; d < L->ndims; d++) {
      if (o->dims[d] <= 0)
        return orion__load_fail(L, ORION_EOPTION,
                                "%s: dimension %d must be positive, not %lld",
                                L->name, d + 1, (long long)o->dims[d]);
      L->lim[d] = o->dims[d];
    }
    L->check = 1;
  }
  L->a = orion_array_new_sparse(L->ndims, L->type, &e2);
  if (L->a == NULL)
    return orion__load_fail(L, e2.code, "%s: %s", L->name, e2.msg);
  if (L->est_elems > 0) {
    rc = orion_array_reserve(L->a, L->est_elems);
    if (rc != 0)
      return orion__load_fail(L, rc, "%s: %s reserving %lld elements", L->name,
                              orion_strerror(rc), (long long)L->est_elems);
  }
  return 0;
}

/* The keys of fields 1 and 2 and the value of field 3 (movielens and
 * uci-bow lines). */
static int take_pair(loader *L, const field *f, int64_t keys[2], value *v) {
  int rc = take_key(L, f[0].s, f[0].e, PART_FIELD, 1, 0, &keys[0]);
  if (rc == 0)
    rc = take_key(L, f[1].s, f[1].e, PART_FIELD, 2, 1, &keys[1]);
  if (rc == 0)
    rc = take_value(L, f[2].s, f[2].e, PART_FIELD, 3, v);
  return rc;
}

/* ------------------------------------------------------------------------
 * One function per format, called for each non-blank, non-comment line
 * [s, e) (line end and CR removed).  They return 0, a line error (EPARSE,
 * EKEYRANGE with L->problem set) or, with L->failed, a fatal error.
 * ------------------------------------------------------------------------ */

static int line_coo(loader *L, const char *s, const char *e) {
  field f[ORION_MAX_DIMS + 1];
  int64_t keys[ORION_MAX_DIMS];
  value v;
  int n = scan_split_ws(s, e, f, ORION_MAX_DIMS + 1), d, rc;
  if (L->ndims == 0) {
    if (n < 2)
      return problem(L, ORION_EPARSE, "expected at least 2 fields, found %d",
                     n);
    if (n - 1 > ORION_MAX_DIMS)
      return problem(L, ORION_EPARSE,
                     "found %d fields, more than %d keys and a value", n,
                     ORION_MAX_DIMS);
    L->ndims = n - 1;
    rc = orion__load_start_array(L);
    if (rc != 0)
      return rc;
  }
  if (n != L->ndims + 1)
    return problem(L, ORION_EPARSE, "expected %d fields, found %d",
                   L->ndims + 1, n);
  for (d = 0; d < L->ndims; d++) {
    rc = take_key(L, f[d].s, f[d].e, PART_FIELD, d + 1, d, &keys[d]);
    if (rc != 0)
      return rc;
  }
  rc = take_value(L, f[n - 1].s, f[n - 1].e, PART_FIELD, n, &v);
  if (rc != 0)
    return rc;
  return emit(L, keys, &v);
}

static int line_csv(loader *L, const char *s, const char *e) {
  const orion_load_opts *o = L->o;
  int64_t keys[ORION_MAX_DIMS];
  value v;
  int n = 0, d, rc, col;
  for (;;) {
    const char *q = memchr(s, o->sep, (size_t)(e - s));
    const char *fe = q != NULL ? q : e;
    L->cols[n].s = s;
    L->cols[n].e = fe;
    scan_trim(&L->cols[n].s, &L->cols[n].e, o->sep);
    n++;
    if (n == L->maxcol || q == NULL)
      break;
    s = q + 1;
  }
  if (n < L->maxcol)
    return problem(L, ORION_EPARSE, "expected at least %d fields, found %d",
                   L->maxcol, n);
  for (d = 0; d < L->ndims; d++) {
    col = o->key_cols[d];
    rc = take_key(L, L->cols[col - 1].s, L->cols[col - 1].e, PART_FIELD, col, d,
                  &keys[d]);
    if (rc != 0)
      return rc;
  }
  col = o->value_col;
  rc = take_value(L, L->cols[col - 1].s, L->cols[col - 1].e, PART_FIELD, col,
                  &v);
  if (rc != 0)
    return rc;
  return emit(L, keys, &v);
}

static int line_movielens(loader *L, const char *s, const char *e) {
  field f[4];
  int64_t keys[2], ts;
  value v;
  int n, rc;
  if (memchr(s, ':', (size_t)(e - s)) != NULL)
    n = orion__scan_split_dcolon(s, e, f, 4);
  else
    n = scan_split_ws(s, e, f, 4);
  if (n < 3 || n > 4)
    return problem(L, ORION_EPARSE, "expected 3 or 4 fields, found %d", n);
  if ((rc = take_pair(L, f, keys, &v)) != 0)
    return rc;
  if (n == 4 && scan_int(f[3].s, f[3].e, &ts) != NUM_OK)
    return problem(L, ORION_EPARSE,
                   "field 4 (the timestamp) is not an "
                   "integer");
  return emit(L, keys, &v);
}

/* Counts a libsvm row and keeps its label: labels[] holds the rows of the
 * range only, from row_lo on (a dry pass keeps none). */
static int add_label(loader *L, double label) {
  int64_t i = L->rows - L->row_lo;
  if (L->dry) {
    L->rows++;
    return 0;
  }
  if (i == L->labels_cap) {
    int64_t cap = L->labels_cap < 1024 ? 1024 : L->labels_cap * 2;
    double *p = orion_realloc(L->labels, (size_t)cap * sizeof *p);
    if (p == NULL)
      return orion__load_fail(L, ORION_ENOMEM,
                              "%s: out of memory for %lld labels", L->name,
                              (long long)cap);
    L->labels = p;
    L->labels_cap = cap;
  }
  L->labels[i] = label;
  L->rows++;
  return 0;
}

static int line_libsvm_items(loader *L, const char *s, const char *e) {
  int64_t keys[2];
  double label;
  value v;
  const char *t, *colon;
  int fieldno = 1, rc;
  while (s < e && scan_is_space(*s))
    s++;
  t = s;
  while (s < e && !scan_is_space(*s))
    s++;
  rc = scan_double(t, s, &label);
  if (rc != NUM_OK)
    return problem(L, ORION_EPARSE, "field 1 (the label) is %s",
                   rc == NUM_BAD ? "not a number" : "out of range");
  keys[0] = L->rows;
  if (L->check && keys[0] >= L->lim[0])
    return problem(L, ORION_EKEYRANGE, "row %lld is above dimension size %lld",
                   (long long)keys[0] + 1, (long long)L->lim[0]);
  for (;;) {
    while (s < e && scan_is_space(*s))
      s++;
    if (s == e)
      break;
    fieldno++;
    t = s;
    while (s < e && !scan_is_space(*s))
      s++;
    colon = memchr(t, ':', (size_t)(s - t));
    if (colon == NULL)
      return problem(L, ORION_EPARSE, "field %d is not an index:value pair",
                     fieldno);
    rc = take_key(L, t, colon, PART_INDEX, fieldno, 1, &keys[1]);
    if (rc == 0)
      rc = take_value(L, colon + 1, s, PART_VALUE, fieldno, &v);
    if (rc == 0 && !L->dry) /* a dry pass only checks the line */
      rc = emit(L, keys, &v);
    if (rc != 0)
      return rc;
  }
  return add_label(L, label);
}

/* A libsvm line adds several elements: a bad one takes back the others. */
static int line_libsvm(loader *L, const char *s, const char *e) {
  int64_t nnz = L->a->nnz, d0 = L->a->dims[0], d1 = L->a->dims[1];
  int rc = line_libsvm_items(L, s, e);
  if (rc != 0 && !L->failed) {
    L->a->nnz = nnz;
    L->a->dims[0] = d0;
    L->a->dims[1] = d1;
  }
  return rc;
}

/* One of the D, W, NNZ header lines; the third creates the array. */
static int line_ucibow_header(loader *L, const char *s, const char *e) {
  static const char *const hdr_names[3] = {"D (documents)", "W (words)",
                                           "NNZ (entries)"};
  int64_t x = 0;
  int i = L->header_seen, rc;
  scan_trim(&s, &e, 0);
  rc = scan_int(s, e, &x);
  if (rc != NUM_OK || x < (i < 2 ? 1 : 0)) {
    L->hard = 1;
    return problem(L, ORION_EPARSE, "header line %d, %s, is not a %s integer",
                   i + 1, hdr_names[i], i < 2 ? "positive" : "non-negative");
  }
  L->hdr[i] = x;
  if (++L->header_seen < 3)
    return 0;
  if (!L->o->have_dims) {
    L->lim[0] = L->hdr[0];
    L->lim[1] = L->hdr[1];
  }
  L->check = 1;
  if (L->hdr[2] < L->est_elems)
    L->est_elems = L->hdr[2];
  return orion__load_start_array(L);
}

/* A data line (the header is read first, by orion__load_ucibow_header). */
static int line_ucibow(loader *L, const char *s, const char *e) {
  field f[3];
  int64_t keys[2];
  value v;
  int n, rc;
  L->data_lines++;
  n = scan_split_ws(s, e, f, 3);
  if (n != 3)
    return problem(L, ORION_EPARSE, "expected 3 fields, found %d", n);
  if ((rc = take_pair(L, f, keys, &v)) != 0)
    return rc;
  return emit(L, keys, &v);
}

/* The line parser of a format (an index checked by check_opts). */
line_fn orion__load_line_fn(orion_format f) {
  static const line_fn fns[NFORMATS] = {line_coo, line_csv, line_movielens,
                                        line_libsvm, line_ucibow};
  return fns[f];
}

/* ------------------------------------------------------------------------
 * Per-format set-up and checks.
 * ------------------------------------------------------------------------ */

/* The dims count, csv's field table (the caller frees L->cols), the array
 * when the dims count is known now. */
int orion__load_start_format(loader *L) {
  const orion_load_opts *o = L->o;
  int d;
  switch (o->format) {
  case ORION_FMT_COO:
    L->ndims = o->nkeys;
    break;
  case ORION_FMT_CSV:
    L->ndims = o->ncols_key;
    L->maxcol = o->value_col;
    for (d = 0; d < L->ndims; d++)
      if (o->key_cols[d] > L->maxcol)
        L->maxcol = o->key_cols[d];
    L->cols = orion_malloc((size_t)L->maxcol * sizeof *L->cols);
    if (L->cols == NULL)
      return orion__load_fail(L, ORION_ENOMEM, "%s: out of memory", L->name);
    break;
  case ORION_FMT_MOVIELENS:
  case ORION_FMT_LIBSVM:
  case ORION_FMT_UCIBOW:
    L->ndims = 2;
    break;
  }
  if (L->ndims > 0 && o->format != ORION_FMT_UCIBOW)
    return orion__load_start_array(L);
  return 0;
}

/* uci-bow's D, W and NNZ (see load_int.h). */
int orion__load_ucibow_header(loader *L, int64_t first_line) {
  const char *p = L->buf, *ls = L->buf, *le = L->buf;
  int64_t lineno = first_line, last = first_line;
  int rc;
  while (L->header_seen < 3 && p < L->end) {
    text_line ln = scan_line_at(p, L->end);
    if (!scan_is_blank(ln.s, ln.e)) {
      if ((rc = line_ucibow_header(L, ln.s, ln.e)) != 0)
        return L->failed ? rc
                         : orion__load_line_fail(L, rc, lineno, ln.s, ln.e);
      ls = ln.s, le = ln.e, last = lineno;
    }
    p = ln.next;
    lineno++;
  }
  if (L->header_seen < 3) {
    problem(L, ORION_EPARSE,
            "incomplete uci-bow header: expected D, W and NNZ lines, found "
            "%d",
            L->header_seen);
    return orion__load_line_fail(L, ORION_EPARSE, last, ls, le);
  }
  L->data_from = p;
  return 0;
}

/* coo's key count from the input (see load_int.h); only reads. */
int orion__load_coo_nkeys(const loader *L, const char **at) {
  field f[ORION_MAX_DIMS + 1];
  const char *p = L->buf;
  *at = NULL;
  while (p < L->end) {
    text_line ln = scan_line_at(p, L->end);
    if (load_is_data(L, ln.s, ln.e)) {
      int n = scan_split_ws(ln.s, ln.e, f, ORION_MAX_DIMS + 1);
      if (n >= 2 && n - 1 <= ORION_MAX_DIMS) {
        *at = ln.s;
        return n - 1;
      }
    }
    p = ln.next;
  }
  return 0;
}

/* The uci-bow data line count differs from the header's NNZ: an error at
 * the first data line past NNZ, or, for a file that ends too early, at its
 * last line (a truncated file).  Runs once, on the error path, so it walks
 * the whole input again. */
static int nnz_mismatch(loader *L) {
  const char *p = L->buf, *ls = L->buf, *le = L->buf;
  int64_t lineno = L->first_line, last = L->first_line, seen = 0;
  L->hard = 1;
  for (; p < L->end; lineno++) {
    text_line ln = scan_line_at(p, L->end);
    if (p >= L->data_from && load_is_data(L, ln.s, ln.e) &&
        ++seen > L->hdr[2]) {
      problem(L, ORION_EPARSE,
              "data line %lld is past NNZ = %lld (from the header), found "
              "%lld data lines",
              (long long)seen, (long long)L->hdr[2], (long long)L->data_lines);
      return orion__load_line_fail(L, ORION_EPARSE, lineno, ln.s, ln.e);
    }
    if (!scan_is_blank(ln.s, ln.e))
      ls = ln.s, le = ln.e, last = lineno;
    p = ln.next;
  }
  problem(L, ORION_EPARSE,
          "the input ends after %lld of NNZ = %lld data lines (from the "
          "header); is it truncated?",
          (long long)L->data_lines, (long long)L->hdr[2]);
  return orion__load_line_fail(L, ORION_EPARSE, last, ls, le);
}

/* A uci-bow input whose last line has no line end: with the NNZ count
 * right, this is the one sign left of a file cut inside its last number
 * ("3 1 17" cut to "3 1 1"), so it is an error at that line. */
static int unterminated(loader *L) {
  const char *p = L->buf, *last = L->buf;
  int64_t lineno = L->first_line;
  while (p < L->end) {
    const char *nl = memchr(p, '\n', (size_t)(L->end - p));
    if (nl == NULL)
      break;
    p = nl + 1;
    last = p;
    lineno++;
  }
  if (last >= L->end || scan_is_blank(last, L->end))
    return 0;
  L->hard = 1;
  problem(L, ORION_EPARSE,
          "the last line has no line end; is the input truncated?");
  return orion__load_line_fail(L, ORION_EPARSE, lineno, last, L->end);
}

/* The NNZ count and the last line end, for the range at the input's end;
 * the caller checks L->at_end. */
int orion__load_ucibow_check(loader *L) {
  if (L->data_lines != L->hdr[2])
    return nnz_mismatch(L);
  if (L->end > L->data_from && L->end[-1] != '\n')
    return unterminated(L);
  return 0;
}

/* ------------------------------------------------------------------------
 * Token expansion (uci-bow).
 * ------------------------------------------------------------------------ */

/* The count of element i as an integer; 0 with *ok clear when it is
 * negative or not an integer. */
static int64_t count_of(const orion_array *a, int64_t i, int *ok) {
  double f;
  *ok = 1;
  switch (a->type) {
  case ORION_I32:
    if (((const int32_t *)a->values)[i] >= 0)
      return ((const int32_t *)a->values)[i];
    break;
  case ORION_I64:
    if (((const int64_t *)a->values)[i] >= 0)
      return ((const int64_t *)a->values)[i];
    break;
  default:
    f = orion_value_get_f64(a->values, a->type, i);
    if (f >= 0 && f < 0x1p53 && f == floor(f))
      return (int64_t)f;
    break;
  }
  *ok = 0;
  return 0;
}

/* Replaces res->array (2-D counts) by one element per token; on failure
 * res->array is kept and nothing is left allocated. */
int orion_load_expand(orion_load_result *res, orion_type vt, const char *name,
                      orion_error *err) {
  const orion_array *a = res->array;
  orion_array *x;
  orion_error e2;
  int64_t i, j, total = 0, maxc = 0, dims[3], keys[3];
  int ok, rc;
  if (name == NULL)
    name = "(buffer)";
  if (a == NULL || !a->sparse || a->ndims != 2)
    return orion_error_set(err, ORION_EDIMS,
                           "%s: token expansion needs a 2-D (doc, word) count "
                           "array",
                           name);
  for (i = 0; i < a->nnz; i++) {
    int64_t c = count_of(a, i, &ok);
    if (!ok)
      return orion_error_set(
          err, ORION_EPARSE,
          "%s: document %lld, word %lld: count %.17g is not a non-negative "
          "integer",
          name, (long long)a->keys[2 * i] + 1,
          (long long)a->keys[2 * i + 1] + 1,
          orion_value_get_f64(a->values, a->type, i));
    if (c > INT64_MAX - total)
      return orion_error_set(err, ORION_ENOMEM, "%s: too many tokens", name);
    total += c;
    if (c > maxc)
      maxc = c;
  }
  x = orion_array_new_sparse(3, vt, &e2);
  if (x == NULL)
    return orion_error_set(err, e2.code, "%s: %s", name, e2.msg);
  if (total > 0 && (rc = orion_array_reserve(x, total)) != 0) {
    orion_array_release(x);
    return orion_error_set(err, rc, "%s: %s for %lld tokens", name,
                           orion_strerror(rc), (long long)total);
  }
  /* The values are zero-filled here: 0 in every element type. */
  if (total > 0)
    memset(x->values, 0, (size_t)total * orion_type_size(vt));
  for (i = 0; i < a->nnz; i++) {
    int64_t c = count_of(a, i, &ok);
    keys[0] = a->keys[2 * i];
    keys[1] = a->keys[2 * i + 1];
    for (j = 0; j < c; j++) {
      int64_t *k = x->keys + (x->nnz + j) * 3;
      k[0] = keys[0];
      k[1] = keys[1];
      k[2] = j;
    }
    x->nnz += c;
  }
  dims[0] = a->dims[0];
  dims[1] = a->dims[1];
  dims[2] = maxc > 0 ? maxc : 1;
  if ((rc = orion_array_set_dims(x, dims, &e2)) != 0) {
    orion_array_release(x);
    return orion_error_set(err, rc, "%s: %s", name, e2.msg);
  }
  orion_array_release(res->array);
  res->array = x;
  return 0;
}
