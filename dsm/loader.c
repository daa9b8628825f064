#include "dsm/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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

/* Lines quoted in messages are cut to this many bytes. */
#define QUOTE_MAX 80

/* Numbers longer than this are rejected (no real number needs it). */
#define NUM_MAX_LEN 255

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

/* ------------------------------------------------------------------------
 * Numbers.  Hand-written scanners over [s, e): no NUL needed, no locale.
 * ------------------------------------------------------------------------ */

enum { NUM_OK = 0, NUM_BAD, NUM_RANGE, NUM_LONG };

static int is_digit(char c) { return (unsigned)(unsigned char)c - '0' < 10; }

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A decimal integer with an optional sign, nothing else. */
static int parse_int(const char *s, const char *e, int64_t *out) {
  uint64_t v = 0, lim;
  int neg = 0, over = 0;
  if (s < e && (*s == '+' || *s == '-')) {
    neg = *s == '-';
    s++;
  }
  if (s == e)
    return NUM_BAD;
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; s < e; s++) {
    unsigned d = (unsigned)(unsigned char)*s - '0';
    if (d > 9)
      return NUM_BAD;
    if (v > (lim - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  if (over)
    return NUM_RANGE;
  if (!neg)
    *out = (int64_t)v;
  else if (v == (uint64_t)INT64_MAX + 1)
    *out = INT64_MIN;
  else
    *out = -(int64_t)v;
  return NUM_OK;
}

static const double pow10_tab[16] = {1e0,  1e1,  1e2,  1e3, 1e4,  1e5,
                                     1e6,  1e7,  1e8,  1e9, 1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15};

/* The general case: check the decimal syntax
 * [sign] digits [. digits] [e [sign] digits] here (so strtod's hex, inf and
 * nan forms are refused), then let strtod round it. */
static int parse_double_slow(const char *s, const char *e, double *out) {
  char tmp[NUM_MAX_LEN + 1];
  const char *p = s;
  char *end;
  size_t n = (size_t)(e - s);
  int digits = 0;
  double v;
  if (p < e && (*p == '+' || *p == '-'))
    p++;
  for (; p < e && is_digit(*p); p++)
    digits++;
  if (p < e && *p == '.')
    for (p++; p < e && is_digit(*p); p++)
      digits++;
  if (digits == 0)
    return NUM_BAD;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-'))
      p++;
    if (p == e || !is_digit(*p))
      return NUM_BAD;
    while (p < e && is_digit(*p))
      p++;
  }
  if (p != e)
    return NUM_BAD;
  if (n > NUM_MAX_LEN)
    return NUM_LONG;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  v = strtod(tmp, &end);
  if (end != tmp + n)
    return NUM_BAD; /* a locale whose decimal point is not '.' */
  if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
    return NUM_RANGE;
  *out = v;
  return NUM_OK;
}

/* A decimal number.  Up to 15 significant digits without an exponent
 * (ratings, counts, most features) are exact as an integer mantissa over
 * an exact power of ten, so one correctly rounded division gives the
 * correctly rounded result; anything else goes to strtod. */
static int parse_double(const char *s, const char *e, double *out) {
  const char *p = s;
  uint64_t m = 0;
  int neg = 0, nd = 0, nf = 0;
  unsigned d;
  if (p < e && (*p == '+' || *p == '-')) {
    neg = *p == '-';
    p++;
  }
  for (; p < e && (d = (unsigned)(unsigned char)*p - '0') < 10; p++) {
    m = m * 10 + d;
    nd++;
  }
  if (p < e && *p == '.') {
    for (p++; p < e && (d = (unsigned)(unsigned char)*p - '0') < 10; p++) {
      m = m * 10 + d;
      nd++;
      nf++;
    }
  }
  if (p == e && nd > 0 && nd <= 15) {
    double v = (double)m;
    if (nf > 0)
      v /= pow10_tab[nf];
    *out = neg ? -v : v;
    return NUM_OK;
  }
  return parse_double_slow(s, e, out);
}

/* ------------------------------------------------------------------------
 * The loader state.
 * ------------------------------------------------------------------------ */

typedef struct field {
  const char *s, *e;
} field;

typedef union value {
  double f64;
  float f32;
  int64_t i64;
  int32_t i32;
} value;

typedef struct loader loader;
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
  /* which lines are data (is_data) */
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
  char problem[256];
};

static int problem(loader *L, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(loader *L, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A problem with the current line; the caller adds file, line and text. */
static int problem(loader *L, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->problem, sizeof L->problem, fmt, ap);
  va_end(ap);
  return code;
}

/* An error that ends the load at once, message complete. */
static int fail(loader *L, int code, const char *fmt, ...) {
  va_list ap;
  L->failed = 1;
  if (L->err != NULL) {
    L->err->code = code;
    va_start(ap, fmt);
    vsnprintf(L->err->msg, sizeof L->err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Copies src into dst[cap], cutting it when needed. */
static void copy_cut(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* "NAME:LINE: PROBLEM: "TEXT"" with TEXT the line cut to QUOTE_MAX bytes
 * (on a UTF-8 boundary, then "...") and control bytes shown as '?'. */
static void line_message(char *dst, size_t cap, const char *name,
                         int64_t lineno, const char *prob, const char *s,
                         const char *e) {
  char text[QUOTE_MAX + 4];
  size_t n = 0, len = (size_t)(e - s);
  size_t take = len > QUOTE_MAX ? QUOTE_MAX : len;
  for (n = 0; n < take; n++) {
    unsigned char c = (unsigned char)s[n];
    text[n] = (char)((c < 0x20 && c != '\t') || c == 0x7f ? '?' : c);
  }
  if (take < len) {
    while (n > 0 && ((unsigned char)text[n - 1] & 0xc0) == 0x80)
      n--;
    if (n > 0 && (unsigned char)text[n - 1] >= 0xc0)
      n--;
    memcpy(text + n, "...", 3);
    n += 3;
  }
  text[n] = '\0';
  snprintf(dst, cap, "%s:%lld: %s: \"%s\"", name, (long long)lineno, prob,
           text);
}

/* Splits [s, e) at runs of blanks; stores up to cap fields, returns how
 * many there are. */
static int split_ws(const char *s, const char *e, field *f, int cap) {
  int n = 0;
  for (;;) {
    const char *t;
    while (s < e && is_space(*s))
      s++;
    if (s == e)
      return n;
    t = s;
    while (s < e && !is_space(*s))
      s++;
    if (n < cap) {
      f[n].s = t;
      f[n].e = s;
    }
    n++;
  }
}

static void trim(const char **s, const char **e, char keep) {
  while (*s < *e && (**s == ' ' || **s == '\t') && **s != keep)
    (*s)++;
  while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t') && (*e)[-1] != keep)
    (*e)--;
}

/* Splits [s, e) at "::" with each field trimmed; as split_ws. */
static int split_dcolon(const char *s, const char *e, field *f, int cap) {
  int n = 0;
  for (;;) {
    const char *p = s, *fe = e, *next = NULL;
    while (p < e) {
      const char *c = memchr(p, ':', (size_t)(e - p));
      if (c == NULL)
        break;
      if (c + 1 < e && c[1] == ':') {
        fe = c;
        next = c + 2;
        break;
      }
      p = c + 1;
    }
    if (n < cap) {
      f[n].s = s;
      f[n].e = fe;
      trim(&f[n].s, &f[n].e, 0);
    }
    n++;
    if (next == NULL)
      return n;
    s = next;
  }
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
  int r = parse_int(s, e, &k);
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
    r = parse_int(s, e, &x);
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
    r = parse_double(s, e, &x);
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
    return fail(L, rc, "%s: %s after %lld elements", L->name,
                orion_strerror(rc), (long long)L->a->nnz);
  return 0;
}

/* Creates the array once ndims is known: checks given dims, reserves. */
static int start_array(loader *L) {
  const orion_load_opts *o = L->o;
  orion_error e2;
  int d, rc;
  if (o->have_dims) {
    for (d = 0; d < L->ndims; d++) {
      if (o->dims[d] <= 0)
        return fail(L, ORION_EOPTION,
                    "%s: dimension %d must be positive, not %lld", L->name,
                    d + 1, (long long)o->dims[d]);
      L->lim[d] = o->dims[d];
    }
    L->check = 1;
  }
  L->a = orion_array_new_sparse(L->ndims, L->type, &e2);
  if (L->a == NULL)
    return fail(L, e2.code, "%s: %s", L->name, e2.msg);
  if (L->est_elems > 0) {
    rc = orion_array_reserve(L->a, L->est_elems);
    if (rc != 0)
      return fail(L, rc, "%s: %s reserving %lld elements", L->name,
                  orion_strerror(rc), (long long)L->est_elems);
  }
  return 0;
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
  int n = split_ws(s, e, f, ORION_MAX_DIMS + 1), d, rc;
  if (L->ndims == 0) {
    if (n < 2)
      return problem(L, ORION_EPARSE, "expected at least 2 fields, found %d",
                     n);
    if (n - 1 > ORION_MAX_DIMS)
      return problem(L, ORION_EPARSE,
                     "found %d fields, more than %d keys and a value", n,
                     ORION_MAX_DIMS);
    L->ndims = n - 1;
    rc = start_array(L);
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
    trim(&L->cols[n].s, &L->cols[n].e, o->sep);
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
    n = split_dcolon(s, e, f, 4);
  else
    n = split_ws(s, e, f, 4);
  if (n < 3 || n > 4)
    return problem(L, ORION_EPARSE, "expected 3 or 4 fields, found %d", n);
  rc = take_key(L, f[0].s, f[0].e, PART_FIELD, 1, 0, &keys[0]);
  if (rc == 0)
    rc = take_key(L, f[1].s, f[1].e, PART_FIELD, 2, 1, &keys[1]);
  if (rc == 0)
    rc = take_value(L, f[2].s, f[2].e, PART_FIELD, 3, &v);
  if (rc != 0)
    return rc;
  if (n == 4 && parse_int(f[3].s, f[3].e, &ts) != NUM_OK)
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
      return fail(L, ORION_ENOMEM, "%s: out of memory for %lld labels", L->name,
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
  while (s < e && is_space(*s))
    s++;
  t = s;
  while (s < e && !is_space(*s))
    s++;
  rc = parse_double(t, s, &label);
  if (rc != NUM_OK)
    return problem(L, ORION_EPARSE, "field 1 (the label) is %s",
                   rc == NUM_BAD ? "not a number" : "out of range");
  keys[0] = L->rows;
  if (L->check && keys[0] >= L->lim[0])
    return problem(L, ORION_EKEYRANGE, "row %lld is above dimension size %lld",
                   (long long)keys[0] + 1, (long long)L->lim[0]);
  for (;;) {
    while (s < e && is_space(*s))
      s++;
    if (s == e)
      break;
    fieldno++;
    t = s;
    while (s < e && !is_space(*s))
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
  trim(&s, &e, 0);
  rc = parse_int(s, e, &x);
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
  return start_array(L);
}

/* A data line (the header is read first, by read_header). */
static int line_ucibow(loader *L, const char *s, const char *e) {
  field f[3];
  int64_t keys[2];
  value v;
  int n, rc;
  L->data_lines++;
  n = split_ws(s, e, f, 3);
  if (n != 3)
    return problem(L, ORION_EPARSE, "expected 3 fields, found %d", n);
  rc = take_key(L, f[0].s, f[0].e, PART_FIELD, 1, 0, &keys[0]);
  if (rc == 0)
    rc = take_key(L, f[1].s, f[1].e, PART_FIELD, 2, 1, &keys[1]);
  if (rc == 0)
    rc = take_value(L, f[2].s, f[2].e, PART_FIELD, 3, &v);
  if (rc != 0)
    return rc;
  return emit(L, keys, &v);
}

/* ------------------------------------------------------------------------
 * The driver loop.
 * ------------------------------------------------------------------------ */

static int check_opts(loader *L) {
  const orion_load_opts *o = L->o;
  int d;
  if ((unsigned)o->format >= NFORMATS)
    return fail(L, ORION_EOPTION, "%s: unknown format %d", L->name,
                (int)o->format);
  if (o->index_base != 0 && o->index_base != 1)
    return fail(L, ORION_EOPTION, "%s: index_base must be 0 or 1, not %d",
                L->name, o->index_base);
  if ((unsigned)o->value_type >= ORION_NTYPES)
    return fail(L, ORION_EOPTION, "%s: unknown value type %d", L->name,
                (int)o->value_type);
  if (o->format == ORION_FMT_COO && (o->nkeys < 0 || o->nkeys > ORION_MAX_DIMS))
    return fail(L, ORION_EOPTION, "%s: nkeys must be 0 to %d, not %d", L->name,
                ORION_MAX_DIMS, o->nkeys);
  if (o->format == ORION_FMT_CSV) {
    if (o->ncols_key < 1 || o->ncols_key > ORION_MAX_DIMS)
      return fail(L, ORION_EOPTION,
                  "%s: a csv load needs 1 to %d key "
                  "columns, not %d",
                  L->name, ORION_MAX_DIMS, o->ncols_key);
    if (o->sep == '\0' || o->sep == '\n' || o->sep == '\r')
      return fail(L, ORION_EOPTION, "%s: bad csv separator (code %d)", L->name,
                  (int)(unsigned char)o->sep);
    for (d = 0; d <= o->ncols_key; d++) {
      int col = d < o->ncols_key ? o->key_cols[d] : o->value_col;
      if (col < 1 || col > MAX_CSV_COL)
        return fail(L, ORION_EOPTION,
                    "%s: csv column numbers are 1 to %d, not %d", L->name,
                    MAX_CSV_COL, col);
    }
  }
  return 0;
}

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

/* One line of the input: its text [s, e) without the '\n' and one CR
 * before it, and where the next line starts (the input's end after the
 * last). */
typedef struct text_line {
  const char *s, *e, *next;
} text_line;

static text_line line_at(const char *p, const char *end) {
  text_line ln;
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  ln.s = p;
  ln.e = nl != NULL ? nl : end;
  ln.next = nl != NULL ? nl + 1 : end;
  if (ln.e > p && ln.e[-1] == '\r')
    ln.e--;
  return ln;
}

/* Where the first line starting at or after off begins: off itself at 0
 * or just after a '\n', else just past the next '\n' (len when none). */
static size_t line_start(const char *buf, size_t len, size_t off) {
  const char *nl;
  if (off == 0 || off >= len || buf[off - 1] == '\n')
    return off;
  nl = memchr(buf + off, '\n', len - off);
  return nl != NULL ? (size_t)(nl - buf) + 1 : len;
}

static int is_blank(const char *s, const char *e) {
  while (s < e && is_space(*s))
    s++;
  return s == e;
}

/* Whether line [s, e) is data: not blank, not a '#' comment (uci-bow has
 * none), not the csv header (the input's first line), not a uci-bow header
 * line.  Inline: it runs once per line. */
static inline int is_data(const loader *L, const char *s, const char *e) {
  const char *q = s;
  while (q < e && is_space(*q))
    q++;
  return q < e && s >= L->data_from && s != L->skip_line &&
         (*q != '#' || !L->comments);
}

/* Ends the load with the line error rc of line lineno, [s, e). */
static int line_fail(loader *L, int rc, int64_t lineno, const char *s,
                     const char *e) {
  char msg[sizeof L->err->msg];
  line_message(msg, sizeof msg, L->name, lineno, L->problem, s, e);
  L->failed = 1;
  return orion_error_set(L->err, rc, "%s", msg);
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
    text_line ln = line_at(p, L->end);
    if (p >= L->data_from && is_data(L, ln.s, ln.e) && ++seen > L->hdr[2]) {
      problem(L, ORION_EPARSE,
              "data line %lld is past NNZ = %lld (from the header), found "
              "%lld data lines",
              (long long)seen, (long long)L->hdr[2],
              (long long)L->data_lines);
      return line_fail(L, ORION_EPARSE, lineno, ln.s, ln.e);
    }
    if (!is_blank(ln.s, ln.e))
      ls = ln.s, le = ln.e, last = lineno;
    p = ln.next;
  }
  problem(L, ORION_EPARSE,
          "the input ends after %lld of NNZ = %lld data lines (from the "
          "header); is it truncated?",
          (long long)L->data_lines, (long long)L->hdr[2]);
  return line_fail(L, ORION_EPARSE, last, ls, le);
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
  if (last >= L->end || is_blank(last, L->end))
    return 0;
  L->hard = 1;
  problem(L, ORION_EPARSE,
          "the last line has no line end; is the input truncated?");
  return line_fail(L, ORION_EPARSE, lineno, last, L->end);
}

/* Checks the uci-bow line count, makes the array when no line did, fixes
 * the dims and hands over the labels of the range's rows. */
static int finish(loader *L, orion_load_result *res) {
  const orion_load_opts *o = L->o;
  orion_error e2;
  int d, rc;
  int64_t nrows = L->rows - L->row_lo;
  if (o->format == ORION_FMT_UCIBOW && L->at_end && L->data_lines != L->hdr[2])
    return nnz_mismatch(L);
  if (o->format == ORION_FMT_UCIBOW && L->at_end && L->end > L->data_from &&
      L->end[-1] != '\n' && (rc = unterminated(L)) != 0)
    return rc;
  if (L->a == NULL) { /* coo with nkeys 0 and no usable line here */
    L->ndims = L->file_ndims > 0 ? L->file_ndims : 2;
    if ((rc = start_array(L)) != 0)
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
        return fail(L, e2.code, "%s: %s", L->name, e2.msg);
      memcpy(res->labels->values, L->labels, (size_t)nrows * sizeof(double));
    }
  }
  res->row_lo = L->row_lo;
  shrink(L->a);
  return 0;
}

/* uci-bow: reads D, W and NNZ from the input's first three non-blank lines,
 * whichever range is parsed (every range needs the dims), and notes where
 * the header ends.  A bad header line is an error in every range. */
static int read_header(loader *L, int64_t first_line) {
  const char *p = L->buf, *ls = L->buf, *le = L->buf;
  int64_t lineno = first_line, last = first_line;
  int rc;
  while (L->header_seen < 3 && p < L->end) {
    text_line ln = line_at(p, L->end);
    if (!is_blank(ln.s, ln.e)) {
      if ((rc = line_ucibow_header(L, ln.s, ln.e)) != 0)
        return L->failed ? rc : line_fail(L, rc, lineno, ln.s, ln.e);
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
    return line_fail(L, ORION_EPARSE, last, ls, le);
  }
  L->data_from = p;
  return 0;
}

/* coo with nkeys 0: a whole load takes the key count from the input's first
 * data line with 2 to ORION_MAX_DIMS + 1 fields (earlier data lines are
 * errors).  Returns that count, 0 when there is no such line; *at is where
 * the line starts. */
static int first_nkeys(const loader *L, const char **at) {
  field f[ORION_MAX_DIMS + 1];
  const char *p = L->buf;
  *at = NULL;
  while (p < L->end) {
    text_line ln = line_at(p, L->end);
    if (is_data(L, ln.s, ln.e)) {
      int n = split_ws(ln.s, ln.e, f, ORION_MAX_DIMS + 1);
      if (n >= 2 && n - 1 <= ORION_MAX_DIMS) {
        *at = ln.s;
        return n - 1;
      }
    }
    p = ln.next;
  }
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
    text_line ln = line_at(p, L->end);
    p = ln.next;
    if (!is_data(L, ln.s, ln.e))
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
    text_line ln = line_at(p, L->end);
    res->lines++;
    p = ln.next;
    if (!is_data(L, ln.s, ln.e) || (rc = L->line(L, ln.s, ln.e)) == 0)
      continue;
    if (L->failed)
      return rc;
    if (!L->o->skip_errors || L->hard)
      return line_fail(L, rc, lineno, ln.s, ln.e);
    line_message(msg, sizeof msg, L->name, lineno, L->problem, ln.s, ln.e);
    if (res->skipped++ == 0)
      copy_cut(res->first_skip, sizeof res->first_skip, msg);
  }
  return 0;
}

/* Per-format set-up: the dims count, csv's field table, the array when the
 * dims count is known now. */
static int start_format(loader *L) {
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
      return fail(L, ORION_ENOMEM, "%s: out of memory", L->name);
    break;
  case ORION_FMT_MOVIELENS:
  case ORION_FMT_LIBSVM:
  case ORION_FMT_UCIBOW:
    L->ndims = 2;
    break;
  }
  if (L->ndims > 0 && o->format != ORION_FMT_UCIBOW)
    return start_array(L);
  return 0;
}

/* Learns from the input before the range what a whole load would know
 * there: the uci-bow header, coo's key count, the libsvm rows and the line
 * number.  *lineno becomes the number of the range's first line. */
static int start_range(loader *L, const char *start, const char *stop,
                       int64_t *lineno) {
  const char *at;
  int rc;
  if (L->o->format == ORION_FMT_UCIBOW && (rc = read_header(L, *lineno)) != 0)
    return rc;
  if (L->o->format == ORION_FMT_COO && L->o->nkeys == 0 &&
      (start > L->buf || stop < L->end)) {
    L->file_ndims = first_nkeys(L, &at);
    if (L->file_ndims > 0 && at < start) {
      L->ndims = L->file_ndims;
      if ((rc = start_array(L)) != 0)
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
  static const line_fn fns[NFORMATS] = {line_coo, line_csv, line_movielens,
                                        line_libsvm, line_ucibow};
  loader L;
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
  L.skip_line = o->format == ORION_FMT_CSV && o->header ? buf : NULL;
  L.comments = o->format != ORION_FMT_UCIBOW;
  if ((rc = check_opts(&L)) != 0)
    return rc;
  if (lo > hi)
    return fail(&L, ORION_EOPTION, "%s: bad byte range [%llu, %llu)", L.name,
                (unsigned long long)lo, (unsigned long long)hi);
  L.line = fns[o->format];
  stop = buf + (hi < len ? hi : len);
  start = buf + line_start(buf, len, lo < len ? lo : len);
  L.at_end = stop == L.end;
  estimate(&L, start, start < stop ? (size_t)(stop - start) : 0);
  if ((rc = start_format(&L)) == 0 &&
      (rc = start_range(&L, start, stop, &lineno)) == 0 &&
      (rc = parse_lines(&L, start, stop, lineno, res)) == 0)
    rc = finish(&L, res);
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
                           "array", name);
  for (i = 0; i < a->nnz; i++) {
    int64_t c = count_of(a, i, &ok);
    if (!ok)
      return orion_error_set(
          err, ORION_EPARSE,
          "%s: document %lld, word %lld: count %.17g is not a non-negative "
          "integer",
          name, (long long)a->keys[2 * i] + 1, (long long)a->keys[2 * i + 1] + 1,
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

/* ------------------------------------------------------------------------
 * Merging the results of byte ranges.
 * ------------------------------------------------------------------------ */

/* The rows of a part: its labels' length (0 without labels). */
static int64_t part_rows(const orion_load_result *r) {
  return r->labels != NULL ? r->labels->dims[0] : 0;
}

/* Checks that the parts fit together (arrays of one shape and type, labels
 * 1-D f64, rows consecutive) and totals their elements and rows. */
static int merge_check(const orion_load_result *parts, int n, int64_t *nnz,
                       int64_t *rows, orion_error *err) {
  const orion_array *a0;
  int64_t next;
  int i;
  if (n < 1 || parts == NULL || parts[0].array == NULL)
    return orion_error_set(err, ORION_EINVAL, "load merge: no parts");
  a0 = parts[0].array;
  next = parts[0].row_lo;
  *nnz = 0;
  for (i = 0; i < n; i++) {
    const orion_array *a = parts[i].array, *lab = parts[i].labels;
    if (a == NULL || !a->sparse)
      return orion_error_set(err, ORION_EINVAL,
                             "load merge: part %d has no sparse array", i + 1);
    if (a->ndims != a0->ndims || a->type != a0->type)
      return orion_error_set(
          err, a->type != a0->type ? ORION_ETYPE : ORION_EDIMS,
          "load merge: part %d is %d-D %s, part 1 %d-D %s", i + 1, a->ndims,
          orion_type_name(a->type), a0->ndims, orion_type_name(a0->type));
    if (lab != NULL &&
        (lab->sparse || lab->ndims != 1 || lab->type != ORION_F64))
      return orion_error_set(err, ORION_EINVAL,
                             "load merge: part %d's labels are not 1-D f64",
                             i + 1);
    if (parts[i].row_lo != next)
      return orion_error_set(err, ORION_EINVAL,
                             "load merge: part %d starts at row %lld, "
                             "expected %lld",
                             i + 1, (long long)parts[i].row_lo,
                             (long long)next);
    next += part_rows(&parts[i]);
    *nnz += a->nnz;
  }
  *rows = next - parts[0].row_lo;
  return 0;
}

/* The parts' elements in part order into a new array *m, with dims the
 * largest of the parts' (the given dims with o->have_dims). */
static int merge_elements(const orion_load_result *parts, int n, int64_t nnz,
                          const orion_load_opts *o, orion_array **m,
                          orion_error *err) {
  const orion_array *a0 = parts[0].array;
  size_t es = orion_type_size(a0->type);
  size_t kb = (size_t)a0->ndims * sizeof(int64_t);
  int64_t at = 0;
  orion_error e2;
  int i, d, rc;
  *m = orion_array_new_sparse(a0->ndims, a0->type, &e2);
  if (*m == NULL)
    return orion_error_set(err, e2.code, "load merge: %s", e2.msg);
  if ((rc = orion_array_reserve(*m, nnz)) != 0) {
    orion_array_release(*m);
    *m = NULL;
    return orion_error_set(err, rc, "load merge: %s for %lld elements",
                           orion_strerror(rc), (long long)nnz);
  }
  for (i = 0; i < n; i++) {
    const orion_array *a = parts[i].array;
    if (a->nnz > 0) {
      memcpy((*m)->keys + at * a0->ndims, a->keys, (size_t)a->nnz * kb);
      memcpy((char *)(*m)->values + (size_t)at * es, a->values,
             (size_t)a->nnz * es);
    }
    at += a->nnz;
    for (d = 0; d < a0->ndims; d++)
      if (a->dims[d] > (*m)->dims[d])
        (*m)->dims[d] = a->dims[d];
  }
  (*m)->nnz = at;
  if (o != NULL && o->have_dims)
    for (d = 0; d < a0->ndims; d++)
      (*m)->dims[d] = o->dims[d];
  return 0;
}

/* The parts' labels in a new array *lab of `rows`, each part's at its rows
 * counted from the first part's row_lo. */
static int merge_labels(const orion_load_result *parts, int n, int64_t rows,
                        orion_array **lab, orion_error *err) {
  orion_error e2;
  int i;
  *lab = orion_array_new_dense(1, &rows, ORION_F64, &e2);
  if (*lab == NULL)
    return orion_error_set(err, e2.code, "load merge: %s", e2.msg);
  for (i = 0; i < n; i++)
    if (parts[i].labels != NULL)
      memcpy((double *)(*lab)->values + (parts[i].row_lo - parts[0].row_lo),
             parts[i].labels->values,
             (size_t)part_rows(&parts[i]) * sizeof(double));
  return 0;
}

/* Concatenates parts[0..n-1] into *out; the parts are only read and stay
 * the caller's.  out's arrays are new, the caller's to release. */
int orion_load_merge(const orion_load_result *parts, int n,
                     const orion_load_opts *o, orion_load_result *out,
                     orion_error *err) {
  int64_t nnz = 0, rows = 0;
  int i, rc;
  memset(out, 0, sizeof *out);
  if ((rc = merge_check(parts, n, &nnz, &rows, err)) != 0)
    return rc;
  if ((rc = merge_elements(parts, n, nnz, o, &out->array, err)) != 0)
    return rc;
  if (rows > 0 && (rc = merge_labels(parts, n, rows, &out->labels, err)) != 0) {
    orion_array_release(out->array);
    out->array = NULL;
    return rc;
  }
  out->row_lo = parts[0].row_lo;
  for (i = 0; i < n; i++) {
    out->lines += parts[i].lines;
    out->skipped += parts[i].skipped;
    if (out->first_skip[0] == '\0')
      memcpy(out->first_skip, parts[i].first_skip, sizeof out->first_skip);
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * Files.
 * ------------------------------------------------------------------------ */

/* A starting buffer size for the file behind fd: its size when plain, the
 * gzip trailer's ISIZE (bounded by deflate's best ratio) when gzipped. */
static size_t size_hint(int fd, const struct stat *st) {
  unsigned char b[4];
  size_t size = st->st_size > 0 ? (size_t)st->st_size : 0;
  uint64_t isize;
  if (size == 0)
    return (size_t)1 << 16;
  if (pread(fd, b, 2, 0) != 2 || b[0] != 0x1f || b[1] != 0x8b)
    return size + 2;
  if (size < 18 || pread(fd, b, 4, (off_t)(size - 4)) != 4)
    return size * 4 + 2;
  isize = (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
          (uint64_t)b[3] << 24;
  if (isize < size / 2 || isize / 1032 > size)
    return size * 4 + 2;
  return (size_t)isize + 2;
}

/* Reads path whole through zlib (plain or gzip).  *data, on success, is
 * the caller's to orion_free; on failure nothing is left allocated. */
int orion_read_file(const char *path, char **data, size_t *len,
                    orion_error *err) {
  struct stat st;
  gzFile gz;
  char *buf, *p;
  size_t cap, n = 0;
  int fd, r, zerr, e, rc = 0;
  const char *zmsg;
  *data = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    e = errno;
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e != 0) {
    close(fd);
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  cap = size_hint(fd, &st);
  buf = orion_malloc(cap);
  gz = buf != NULL ? gzdopen(fd, "rb") : NULL;
  if (gz == NULL) {
    close(fd);
    orion_free(buf);
    return orion_error_set(err, ORION_ENOMEM, "cannot read %s: out of memory",
                           path);
  }
  gzbuffer(gz, 1 << 18);
  for (;;) {
    size_t room;
    if (cap - n < 2) {
      if (cap > SIZE_MAX / 2 || (p = orion_realloc(buf, cap * 2)) == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM,
                             "cannot read %s: out of memory at %zu bytes", path,
                             n);
        goto out;
      }
      buf = p;
      cap *= 2;
    }
    room = cap - n - 1;
    if (room > (size_t)1 << 30)
      room = (size_t)1 << 30;
    errno = 0;
    r = gzread(gz, buf + n, (unsigned)room);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  e = errno;
  zmsg = gzerror(gz, &zerr);
  if (zerr == Z_ERRNO)
    rc = orion_error_set(err, e != 0 ? -e : -EIO, "cannot read %s: %s", path,
                         strerror(e != 0 ? e : EIO));
  else if (zerr == Z_BUF_ERROR)
    rc = orion_error_set(err, ORION_ETRUNC, "%s: truncated gzip data (%s)",
                         path, zmsg);
  else if (zerr == Z_MEM_ERROR)
    rc = orion_error_set(err, ORION_ENOMEM, "cannot read %s: out of memory",
                         path);
  else if (zerr != Z_OK)
    rc = orion_error_set(err, ORION_EPARSE, "%s: corrupt gzip data (%s)", path,
                         zmsg);
out:
  r = gzclose(gz);
  if (rc == 0 && r == Z_BUF_ERROR)
    rc = orion_error_set(err, ORION_ETRUNC,
                         "%s: truncated gzip data (unexpected end of file)",
                         path);
  else if (rc == 0 && r != Z_OK)
    rc = orion_error_set(err, ORION_EPARSE, "%s: corrupt gzip data", path);
  if (rc != 0) {
    orion_free(buf);
    return rc;
  }
  if (cap - n > 4096 && (p = orion_realloc(buf, n + 1)) != NULL)
    buf = p;
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return 0;
}

/* orion_read_file + orion_load_buffer; the file's bytes are freed here,
 * the result's arrays belong to the caller. */
int orion_load_file(const char *path, const orion_load_opts *o,
                    orion_load_result *res, orion_error *err) {
  char *data;
  size_t len;
  int rc;
  memset(res, 0, sizeof *res);
  rc = orion_read_file(path, &data, &len, err);
  if (rc != 0)
    return rc;
  rc = orion_load_buffer(data, len, path, 1, o, res, err);
  orion_free(data);
  return rc;
}
