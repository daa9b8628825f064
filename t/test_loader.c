/* Tests of the text loaders (dsm/loader.c): every format's happy path,
 * gzip input, options, every malformed-line message, skip mode, file
 * errors, and the shared MovieLens / UCI datasets. */
#include "t/testutil.h"

#include <errno.h>
#include <math.h>
#include <zlib.h>

#include "dsm/loader.h"
#include "dsm/pload.h"
#include "util/alloc.h"

/* One load of a text written to a temporary file. */
typedef struct loaded {
  char *path;
  int rc;
  orion_load_result res;
  orion_error err;
  size_t used_before;
} loaded;

static loaded load_text(const char *suffix, const char *text,
                        const orion_load_opts *o) {
  loaded l;
  memset(&l, 0, sizeof l);
  l.path = tu_write_temp(suffix, text);
  l.used_before = orion_alloc_used();
  orion_error_clear(&l.err);
  l.rc = orion_load_file(l.path, o, &l.res, &l.err);
  return l;
}

static void done(loaded *l) {
  orion_array_release(l->res.array);
  orion_array_release(l->res.labels);
  cr_expect_eq(orion_alloc_used(), l->used_before, "memory leaked");
  unlink(l->path);
  free(l->path);
}

static orion_load_opts opts_for(orion_format f) {
  orion_load_opts o;
  orion_load_opts_init(&o);
  o.format = f;
  return o;
}

/* Loads text that must load; returns the array. */
static loaded load_ok(orion_format f, const char *text,
                      const orion_load_opts *given) {
  orion_load_opts o = given != NULL ? *given : opts_for(f);
  loaded l;
  o.format = f;
  l = load_text(".txt", text, &o);
  cr_assert_eq(l.rc, 0, "load failed: %s", l.err.msg);
  cr_assert_not_null(l.res.array);
  cr_assert(l.res.array->sparse);
  return l;
}

/* Loads text that must fail with `code` and exactly the message
 * "PATH:LINE: PROBLEM: \"QUOTE\"". */
static void expect_line_error(orion_format f, const orion_load_opts *given,
                              const char *text, int code, int line,
                              const char *prob, const char *quote) {
  orion_load_opts o = given != NULL ? *given : opts_for(f);
  char want[2048];
  loaded l;
  o.format = f;
  l = load_text(".txt", text, &o);
  cr_assert_eq(l.rc, code, "rc %d (%s), want %d; msg %s", l.rc,
               orion_strerror(l.rc), code, l.err.msg);
  cr_assert_eq(l.err.code, code);
  cr_assert_null(l.res.array);
  cr_assert_null(l.res.labels);
  snprintf(want, sizeof want, "%s:%d: %s: \"%s\"", l.path, line, prob, quote);
  cr_assert_str_eq(l.err.msg, want);
  done(&l);
}

static void expect_elem(const orion_array *a, int64_t i, int64_t k0, int64_t k1,
                        double v) {
  cr_assert_lt(i, a->nnz);
  cr_expect_eq(a->keys[i * a->ndims], k0, "element %lld key 0: %lld != %lld",
               (long long)i, (long long)a->keys[i * a->ndims], (long long)k0);
  cr_expect_eq(a->keys[i * a->ndims + 1], k1,
               "element %lld key 1: %lld != %lld", (long long)i,
               (long long)a->keys[i * a->ndims + 1], (long long)k1);
  cr_expect_eq(orion_value_get_f64(a->values, a->type, i), v,
               "element %lld value %g != %g", (long long)i,
               orion_value_get_f64(a->values, a->type, i), v);
}

static void expect_dims2(const orion_array *a, int64_t d0, int64_t d1) {
  cr_assert_eq(a->ndims, 2);
  cr_expect_eq(a->dims[0], d0, "dims[0] %lld != %lld", (long long)a->dims[0],
               (long long)d0);
  cr_expect_eq(a->dims[1], d1, "dims[1] %lld != %lld", (long long)a->dims[1],
               (long long)d1);
}

static char *write_gz(const char *text, size_t len) {
  char *p = tu_temp_path(".gz");
  gzFile gz = gzopen(p, "wb");
  cr_assert_not_null(gz);
  cr_assert_eq(gzwrite(gz, text, (unsigned)len), (int)len);
  cr_assert_eq(gzclose(gz), Z_OK);
  return p;
}

static long file_size(const char *p) {
  FILE *f = fopen(p, "rb");
  long n;
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fclose(f);
  return n;
}

/* ---------------------------------------------------------------- options */

Test(loader, format_parse) {
  static const char *names[] = {"coo", "csv", "movielens", "libsvm", "uci-bow"};
  orion_format f = ORION_FMT_CSV;
  int i;
  for (i = 0; i < 5; i++) {
    cr_assert_eq(orion_format_parse(names[i], &f), 0);
    cr_assert_eq((int)f, i);
    cr_assert_str_eq(orion_format_name(f), names[i]);
  }
  f = ORION_FMT_LIBSVM;
  cr_assert_eq(orion_format_parse("tsv", &f), ORION_EOPTION);
  cr_assert_eq(orion_format_parse("", &f), ORION_EOPTION);
  cr_assert_eq(orion_format_parse("COO", &f), ORION_EOPTION);
  cr_assert_eq(f, ORION_FMT_LIBSVM);
}

Test(loader, opts_defaults) {
  orion_load_opts o;
  memset(&o, 0x5a, sizeof o);
  orion_load_opts_init(&o);
  cr_assert_eq(o.format, ORION_FMT_COO);
  cr_assert_eq(o.index_base, 1);
  cr_assert_eq(o.nkeys, 0);
  cr_assert_eq(o.have_dims, 0);
  cr_assert_eq(o.value_type, ORION_F64);
  cr_assert_eq(o.skip_errors, 0);
  cr_assert_eq(o.sep, ',');
  cr_assert_eq(o.header, 0);
  cr_assert_eq(o.ncols_key, 2);
  cr_assert_eq(o.key_cols[0], 1);
  cr_assert_eq(o.key_cols[1], 2);
  cr_assert_eq(o.value_col, 3);
}

Test(loader, bad_options) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  o.index_base = 2;
  cr_assert_eq(orion_load_buffer("1 1 1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  cr_assert_null(res.array);
  cr_assert(strstr(err.msg, "index_base") != NULL, "%s", err.msg);
  o = opts_for(ORION_FMT_CSV);
  o.value_col = 0;
  cr_assert_eq(orion_load_buffer("1,1,1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  o = opts_for(ORION_FMT_CSV);
  o.ncols_key = 0;
  cr_assert_eq(orion_load_buffer("1,1,1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  o = opts_for(ORION_FMT_COO);
  o.nkeys = ORION_MAX_DIMS + 1;
  cr_assert_eq(orion_load_buffer("1 1 1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  o = opts_for(ORION_FMT_MOVIELENS);
  o.have_dims = 1;
  o.dims[0] = 5;
  o.dims[1] = 0;
  cr_assert_eq(orion_load_buffer("1 1 1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  cr_assert(strstr(err.msg, "dimension 2 must be positive") != NULL, "%s",
            err.msg);
  /* coo infers its dims count, then checks the given dims. */
  o = opts_for(ORION_FMT_COO);
  o.have_dims = 1;
  o.dims[0] = 5;
  o.dims[1] = -1;
  cr_assert_eq(orion_load_buffer("1 1 1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  cr_assert_null(res.array);
  cr_assert_eq(orion_alloc_used(), 0);
}

/* -------------------------------------------------------------------- coo */

Test(loader, coo_basic) {
  loaded l = load_ok(ORION_FMT_COO, "1 1 5\n2 3 4.5\n1 2 -0.25\n", NULL);
  orion_array *a = l.res.array;
  cr_assert_eq(a->type, ORION_F64);
  cr_assert_eq(a->nnz, 3);
  expect_dims2(a, 2, 3);
  expect_elem(a, 0, 0, 0, 5);
  expect_elem(a, 1, 1, 2, 4.5);
  expect_elem(a, 2, 0, 1, -0.25);
  cr_assert_eq(l.res.lines, 3);
  cr_assert_eq(l.res.skipped, 0);
  cr_assert_str_eq(l.res.first_skip, "");
  cr_assert_null(l.res.labels);
  done(&l);
}

Test(loader, coo_three_keys_inferred) {
  loaded l = load_ok(ORION_FMT_COO, "1 2 3 1.5\n4 1 2 2.5\n", NULL);
  orion_array *a = l.res.array;
  cr_assert_eq(a->ndims, 3);
  cr_assert_eq(a->nnz, 2);
  cr_assert_eq(a->dims[0], 4);
  cr_assert_eq(a->dims[1], 2);
  cr_assert_eq(a->dims[2], 3);
  cr_assert_eq(a->keys[0], 0);
  cr_assert_eq(a->keys[1], 1);
  cr_assert_eq(a->keys[2], 2);
  cr_assert_eq(a->keys[3], 3);
  cr_assert_eq(((double *)a->values)[1], 2.5);
  done(&l);
}

Test(loader, coo_one_key) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.nkeys = 1;
  l = load_ok(ORION_FMT_COO, "3 7\n1 8\n", &o);
  cr_assert_eq(l.res.array->ndims, 1);
  cr_assert_eq(l.res.array->dims[0], 3);
  cr_assert_eq(l.res.array->keys[0], 2);
  cr_assert_eq(((double *)l.res.array->values)[1], 8);
  done(&l);
}

Test(loader, coo_blank_comment_crlf_tabs) {
  loaded l = load_ok(ORION_FMT_COO,
                     "# a comment\n\n1\t1   2\r\n   \r\n  # indented\n"
                     "2 2 3\r\n\t2 1 4  \n2 3 1", /* no final newline */
                     NULL);
  orion_array *a = l.res.array;
  cr_assert_eq(a->nnz, 4);
  expect_elem(a, 0, 0, 0, 2);
  expect_elem(a, 1, 1, 1, 3);
  expect_elem(a, 2, 1, 0, 4);
  expect_elem(a, 3, 1, 2, 1);
  cr_assert_eq(l.res.lines, 8);
  done(&l);
}

Test(loader, coo_empty_input) {
  loaded l = load_ok(ORION_FMT_COO, "# nothing\n\n", NULL);
  cr_assert_eq(l.res.array->nnz, 0);
  expect_dims2(l.res.array, 0, 0);
  cr_assert_eq(l.res.lines, 2);
  done(&l);
}

Test(loader, index_base_zero) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.index_base = 0;
  l = load_ok(ORION_FMT_COO, "0 0 1\n2 0 3\n", &o);
  expect_dims2(l.res.array, 3, 1);
  expect_elem(l.res.array, 0, 0, 0, 1);
  expect_elem(l.res.array, 1, 2, 0, 3);
  done(&l);
  expect_line_error(ORION_FMT_COO, &o, "0 0 1\n-1 0 2\n", ORION_EKEYRANGE, 2,
                    "key -1 in column 1 is below the index base 0", "-1 0 2");
}

Test(loader, dims_given) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.have_dims = 1;
  o.dims[0] = 10;
  o.dims[1] = 20;
  l = load_ok(ORION_FMT_COO, "1 1 1\n10 20 2\n", &o);
  expect_dims2(l.res.array, 10, 20);
  expect_elem(l.res.array, 1, 9, 19, 2);
  done(&l);
  /* No elements at all still gives the given dims. */
  l = load_ok(ORION_FMT_COO, "", &o);
  expect_dims2(l.res.array, 10, 20);
  cr_assert_eq(l.res.array->nnz, 0);
  done(&l);
}

Test(loader, key_above_dim) {
  orion_load_opts o = opts_for(ORION_FMT_MOVIELENS);
  o.have_dims = 1;
  o.dims[0] = 943;
  o.dims[1] = 1682;
  expect_line_error(
      ORION_FMT_MOVIELENS, &o, "943\t1\t5\t1\n944\t1\t3\t2\n", ORION_EKEYRANGE,
      2, "key 944 in column 1 is above dimension size 943", "944\t1\t3\t2");
  expect_line_error(ORION_FMT_MOVIELENS, &o, "1\t1683\t3\t2\n", ORION_EKEYRANGE,
                    1, "key 1683 in column 2 is above dimension size 1682",
                    "1\t1683\t3\t2");
}

Test(loader, key_below_base) {
  expect_line_error(ORION_FMT_COO, NULL, "1 1 3\n0 1 3\n", ORION_EKEYRANGE, 2,
                    "key 0 in column 1 is below the index base 1", "0 1 3");
  expect_line_error(ORION_FMT_COO, NULL, "1 -4 3\n", ORION_EKEYRANGE, 1,
                    "key -4 in column 2 is below the index base 1", "1 -4 3");
}

Test(loader, wrong_field_count) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  expect_line_error(ORION_FMT_COO, NULL, "1 1 3\n1 2\n", ORION_EPARSE, 2,
                    "expected 3 fields, found 2", "1 2");
  /* Trailing junk: an extra field. */
  expect_line_error(ORION_FMT_COO, NULL, "1 1 3\n1 2 3 x\n", ORION_EPARSE, 2,
                    "expected 3 fields, found 4", "1 2 3 x");
  expect_line_error(ORION_FMT_COO, NULL, "7\n", ORION_EPARSE, 1,
                    "expected at least 2 fields, found 1", "7");
  o.nkeys = 2;
  expect_line_error(ORION_FMT_COO, &o, "1 2 3 4\n", ORION_EPARSE, 1,
                    "expected 3 fields, found 4", "1 2 3 4");
}

Test(loader, not_a_number) {
  expect_line_error(ORION_FMT_COO, NULL, "1 1 3\n1 2 abc\n", ORION_EPARSE, 2,
                    "field 3 is not a number", "1 2 abc");
  /* Trailing junk glued to a number. */
  expect_line_error(ORION_FMT_COO, NULL, "1 2 3.5x\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1 2 3.5x");
  expect_line_error(ORION_FMT_COO, NULL, "1 2 1e\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1 2 1e");
  expect_line_error(ORION_FMT_COO, NULL, "1 2 nan\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1 2 nan");
  expect_line_error(ORION_FMT_COO, NULL, "1 2 0x10\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1 2 0x10");
  expect_line_error(ORION_FMT_COO, NULL, "1 2 -\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1 2 -");
  expect_line_error(ORION_FMT_COO, NULL, "1 2 1e999\n", ORION_EPARSE, 1,
                    "field 3 is out of range for f64", "1 2 1e999");
}

Test(loader, key_not_an_integer) {
  expect_line_error(ORION_FMT_COO, NULL, "1.5 2 3\n", ORION_EPARSE, 1,
                    "field 1 is not an integer", "1.5 2 3");
  expect_line_error(ORION_FMT_COO, NULL, "1 2e1 3\n", ORION_EPARSE, 1,
                    "field 2 is not an integer", "1 2e1 3");
  expect_line_error(ORION_FMT_COO, NULL, "1 x 3\n", ORION_EPARSE, 1,
                    "field 2 is not an integer", "1 x 3");
}

Test(loader, huge_numbers_are_errors) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  expect_line_error(
      ORION_FMT_COO, NULL, "99999999999999999999 1 1\n", ORION_EPARSE, 1,
      "field 1 is out of the 64-bit integer range", "99999999999999999999 1 1");
  o.value_type = ORION_I64;
  expect_line_error(ORION_FMT_COO, &o, "1 1 9223372036854775808\n",
                    ORION_EPARSE, 1, "field 3 is out of range for i64",
                    "1 1 9223372036854775808");
  l = load_ok(ORION_FMT_COO,
              "1 1 9223372036854775807\n1 2 -9223372036854775808\n", &o);
  cr_assert_eq(((int64_t *)l.res.array->values)[0], INT64_MAX);
  cr_assert_eq(((int64_t *)l.res.array->values)[1], INT64_MIN);
  done(&l);
  o.value_type = ORION_F64;
  o.index_base = 0;
  expect_line_error(ORION_FMT_COO, &o, "9223372036854775807 0 1\n",
                    ORION_EKEYRANGE, 1,
                    "key 9223372036854775807 in column 1 is too large",
                    "9223372036854775807 0 1");
}

Test(loader, value_type_i32) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.value_type = ORION_I32;
  l = load_ok(ORION_FMT_COO, "1 1 7\n1 2 -3\n2 1 +2147483647\n", &o);
  cr_assert_eq(l.res.array->type, ORION_I32);
  cr_assert_eq(((int32_t *)l.res.array->values)[0], 7);
  cr_assert_eq(((int32_t *)l.res.array->values)[1], -3);
  cr_assert_eq(((int32_t *)l.res.array->values)[2], INT32_MAX);
  done(&l);
  expect_line_error(ORION_FMT_COO, &o, "1 1 2.5\n", ORION_EPARSE, 1,
                    "field 3 is not an integer", "1 1 2.5");
  expect_line_error(ORION_FMT_COO, &o, "1 1 3000000000\n", ORION_EPARSE, 1,
                    "field 3 is out of range for i32", "1 1 3000000000");
  expect_line_error(ORION_FMT_COO, &o, "1 1 -2147483649\n", ORION_EPARSE, 1,
                    "field 3 is out of range for i32", "1 1 -2147483649");
}

Test(loader, value_type_i64) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.value_type = ORION_I64;
  l = load_ok(ORION_FMT_COO, "1 1 9000000000\n2 2 -1\n", &o);
  cr_assert_eq(l.res.array->type, ORION_I64);
  cr_assert_eq(((int64_t *)l.res.array->values)[0], 9000000000LL);
  cr_assert_eq(((int64_t *)l.res.array->values)[1], -1);
  done(&l);
  expect_line_error(ORION_FMT_COO, &o, "1 1 1e3\n", ORION_EPARSE, 1,
                    "field 3 is not an integer", "1 1 1e3");
}

Test(loader, value_type_f32) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  loaded l;
  o.value_type = ORION_F32;
  l = load_ok(ORION_FMT_COO, "1 1 0.1\n1 2 -2.5\n1 3 3.4028235e38\n", &o);
  cr_assert_eq(l.res.array->type, ORION_F32);
  cr_assert_eq(((float *)l.res.array->values)[0], 0.1f);
  cr_assert_eq(((float *)l.res.array->values)[1], -2.5f);
  cr_assert_eq(((float *)l.res.array->values)[2], 3.4028235e38f);
  done(&l);
  expect_line_error(ORION_FMT_COO, &o, "1 1 1e39\n", ORION_EPARSE, 1,
                    "field 3 is out of range for f32", "1 1 1e39");
}

Test(loader, floats_round_like_strtod) {
  static const char *nums[] = {"0",
                               "-0",
                               "4",
                               "3.5",
                               "0.1",
                               "-2.5e-3",
                               "1e308",
                               ".5",
                               "5.",
                               "+3",
                               "1E5",
                               "123456789012345678",
                               "0.30000000000000004",
                               "2.2250738585072014e-308",
                               "4.9e-324",
                               "999999999999999.9",
                               "123456.789012345",
                               "0.000001",
                               "1.7976931348623157e308",
                               "12345678901234.5",
                               "-0.000000000000000000000000001"};
  char text[4096] = "";
  size_t i, n = sizeof nums / sizeof nums[0];
  loaded l;
  for (i = 0; i < n; i++) {
    char line[128];
    snprintf(line, sizeof line, "1 %zu %s\n", i + 1, nums[i]);
    strcat(text, line);
  }
  l = load_ok(ORION_FMT_COO, text, NULL);
  cr_assert_eq(l.res.array->nnz, (int64_t)n);
  for (i = 0; i < n; i++) {
    double want = strtod(nums[i], NULL);
    double got = ((double *)l.res.array->values)[i];
    cr_expect(memcmp(&want, &got, sizeof want) == 0, "%s: %.17g != %.17g",
              nums[i], got, want);
  }
  done(&l);
}

Test(loader, long_line_quote_is_cut) {
  char text[400], quote[100];
  int i, n = 0;
  n += snprintf(text, sizeof text, "1 1 x");
  for (i = 0; i < 150; i++)
    text[n++] = (char)('a' + i % 26);
  text[n++] = '\n';
  text[n] = '\0';
  memcpy(quote, text, 80);
  memcpy(quote + 80, "...", 4);
  expect_line_error(ORION_FMT_COO, NULL, text, ORION_EPARSE, 1,
                    "field 3 is not a number", quote);
}

Test(loader, overlong_number) {
  char text[400];
  int n = snprintf(text, sizeof text, "1 1 0.");
  memset(text + n, '3', 300);
  text[n + 300] = '\n';
  text[n + 301] = '\0';
  {
    char quote[100];
    memcpy(quote, text, 80);
    memcpy(quote + 80, "...", 4);
    expect_line_error(ORION_FMT_COO, NULL, text, ORION_EPARSE, 1,
                      "field 3 is too long for a number", quote);
  }
}

Test(loader, control_bytes_quoted_safely) {
  static const char text[] = "1 1 \001x\n";
  expect_line_error(ORION_FMT_COO, NULL, text, ORION_EPARSE, 1,
                    "field 3 is not a number", "1 1 ?x");
}

/* Bytes that are not UTF-8 (binary garbage in a data file) are quoted as
 * '?', so an error message never writes raw binary to the terminal; valid
 * UTF-8 is kept (issue 15). */
Test(loader, invalid_utf8_quoted_safely) {
  static const char text[] = "1 1 \xff\xfe\xc3\xa9x\xe2\x82\n";
  expect_line_error(ORION_FMT_COO, NULL, text, ORION_EPARSE, 1,
                    "field 3 is not a number", "1 1 ??\xc3\xa9x??");
}

/* The 80-byte quote is cut between characters: a 2-byte character that
 * would end at byte 81 is left out whole. */
Test(loader, quote_cut_keeps_utf8_characters_whole) {
  char text[200], quote[100];
  int n = snprintf(text, sizeof text, "1 1 x");
  memset(text + n, 'a', 79 - n);
  memcpy(text + 79, "\xc3\xa9tail\n", 8);
  text[87] = '\0';
  memcpy(quote, text, 79);
  memcpy(quote + 79, "...", 4);
  expect_line_error(ORION_FMT_COO, NULL, text, ORION_EPARSE, 1,
                    "field 3 is not a number", quote);
}

Test(loader, skip_errors) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  char want[1024];
  loaded l;
  o.skip_errors = 1;
  l = load_ok(ORION_FMT_COO, "1 1 1\n1 x 2\n2 2 2\n0 1 1\n3 3\n# fine\n3 3 3\n",
              &o);
  cr_assert_eq(l.res.array->nnz, 3);
  cr_assert_eq(l.res.skipped, 3);
  cr_assert_eq(l.res.lines, 7);
  expect_dims2(l.res.array, 3, 3);
  expect_elem(l.res.array, 2, 2, 2, 3);
  snprintf(want, sizeof want, "%s:2: field 2 is not an integer: \"1 x 2\"",
           l.path);
  cr_assert_str_eq(l.res.first_skip, want);
  done(&l);
  /* Key-range errors are skippable too; a dims check still applies. */
  o.have_dims = 1;
  o.dims[0] = 2;
  o.dims[1] = 2;
  l = load_ok(ORION_FMT_COO, "1 1 1\n3 1 1\n2 2 2\n", &o);
  cr_assert_eq(l.res.array->nnz, 2);
  cr_assert_eq(l.res.skipped, 1);
  expect_dims2(l.res.array, 2, 2);
  snprintf(want, sizeof want,
           "%s:2: key 3 in column 1 is above dimension size 2: \"3 1 1\"",
           l.path);
  cr_assert_str_eq(l.res.first_skip, want);
  done(&l);
}

Test(loader, buffer_names_and_first_line) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  /* Exactly-sized heap buffers: no NUL after the last number (ASan checks
   * that the parser stays inside). */
  static const char t1[] = "1 1 2.5\n2 2 1e5";
  char *b = malloc(sizeof t1 - 1);
  memcpy(b, t1, sizeof t1 - 1);
  cr_assert_eq(
      orion_load_buffer(b, sizeof t1 - 1, "chunk", 101, &o, &res, &err), 0,
      "%s", err.msg);
  cr_assert_eq(res.array->nnz, 2);
  cr_assert_eq(((double *)res.array->values)[1], 1e5);
  cr_assert_eq(res.lines, 2);
  orion_array_release(res.array);
  b[sizeof t1 - 2] = 'x';
  cr_assert_eq(
      orion_load_buffer(b, sizeof t1 - 1, "chunk", 101, &o, &res, &err),
      ORION_EPARSE);
  cr_assert_str_eq(err.msg, "chunk:102: field 3 is not a number: \"2 2 1ex\"");
  free(b);
  cr_assert_eq(orion_load_buffer(NULL, 0, "none", 1, &o, &res, &err), 0);
  cr_assert_eq(res.array->nnz, 0);
  orion_array_release(res.array);
  cr_assert_eq(orion_alloc_used(), 0);
}

/* -------------------------------------------------------------------- csv */

Test(loader, csv_basic_header_spaces) {
  orion_load_opts o = opts_for(ORION_FMT_CSV);
  loaded l;
  o.header = 1;
  l = load_ok(ORION_FMT_CSV,
              "user,item,rating\n1, 2 ,3.5\r\n 2,1,4 , extra\n\n# c\n3,3,1\n",
              &o);
  cr_assert_eq(l.res.array->nnz, 3);
  expect_dims2(l.res.array, 3, 3);
  expect_elem(l.res.array, 0, 0, 1, 3.5);
  expect_elem(l.res.array, 1, 1, 0, 4);
  expect_elem(l.res.array, 2, 2, 2, 1);
  cr_assert_eq(l.res.lines, 6);
  done(&l);
}

Test(loader, csv_columns_and_sep) {
  orion_load_opts o = opts_for(ORION_FMT_CSV);
  loaded l;
  o.sep = ';';
  o.ncols_key = 2;
  o.key_cols[0] = 4;
  o.key_cols[1] = 1;
  o.value_col = 2;
  l = load_ok(ORION_FMT_CSV, "5;0.5;ignored;2\n1;-1;;3\n", &o);
  cr_assert_eq(l.res.array->nnz, 2);
  expect_dims2(l.res.array, 3, 5);
  expect_elem(l.res.array, 0, 1, 4, 0.5);
  expect_elem(l.res.array, 1, 2, 0, -1);
  done(&l);
  o.sep = '\t';
  o.ncols_key = 1;
  o.key_cols[0] = 2;
  o.value_col = 1;
  l = load_ok(ORION_FMT_CSV, "2.5\t7\n 1 \t 1 \n", &o);
  cr_assert_eq(l.res.array->ndims, 1);
  cr_assert_eq(l.res.array->dims[0], 7);
  cr_assert_eq(l.res.array->keys[0], 6);
  cr_assert_eq(((double *)l.res.array->values)[0], 2.5);
  cr_assert_eq(((double *)l.res.array->values)[1], 1);
  done(&l);
}

Test(loader, csv_errors) {
  orion_load_opts o = opts_for(ORION_FMT_CSV);
  o.header = 1;
  expect_line_error(ORION_FMT_CSV, &o, "u,i,r\n1,2,3\n1,2\n", ORION_EPARSE, 3,
                    "expected at least 3 fields, found 2", "1,2");
  expect_line_error(ORION_FMT_CSV, &o, "u,i,r\n1, ,3\n", ORION_EPARSE, 2,
                    "field 2 is empty", "1, ,3");
  expect_line_error(ORION_FMT_CSV, &o, "u,i,r\n1,2,3 4\n", ORION_EPARSE, 2,
                    "field 3 is not a number", "1,2,3 4");
  expect_line_error(ORION_FMT_CSV, &o, "u,i,r\n1,0,3\n", ORION_EKEYRANGE, 2,
                    "key 0 in column 2 is below the index base 1", "1,0,3");
  /* Without header the first line is data. */
  expect_line_error(ORION_FMT_CSV, NULL, "u,i,r\n", ORION_EPARSE, 1,
                    "field 1 is not an integer", "u,i,r");
}

/* -------------------------------------------------------------- movielens */

Test(loader, movielens_double_colon) {
  loaded l = load_ok(ORION_FMT_MOVIELENS,
                     "1::1193::5::978300760\n1::661::3::978302109\n"
                     "2::3::4.5\n",
                     NULL);
  cr_assert_eq(l.res.array->nnz, 3);
  expect_dims2(l.res.array, 2, 1193);
  expect_elem(l.res.array, 0, 0, 1192, 5);
  expect_elem(l.res.array, 1, 0, 660, 3);
  expect_elem(l.res.array, 2, 1, 2, 4.5);
  done(&l);
}

Test(loader, movielens_tabs) {
  orion_load_opts o = opts_for(ORION_FMT_MOVIELENS);
  loaded l;
  o.value_type = ORION_I32;
  l = load_ok(ORION_FMT_MOVIELENS, "196\t242\t3\t881250949\r\n22\t377\t1\n",
              &o);
  cr_assert_eq(l.res.array->nnz, 2);
  expect_dims2(l.res.array, 196, 377);
  expect_elem(l.res.array, 0, 195, 241, 3);
  expect_elem(l.res.array, 1, 21, 376, 1);
  done(&l);
}

Test(loader, movielens_errors) {
  expect_line_error(ORION_FMT_MOVIELENS, NULL, "1::2\n", ORION_EPARSE, 1,
                    "expected 3 or 4 fields, found 2", "1::2");
  expect_line_error(ORION_FMT_MOVIELENS, NULL, "1\t2\t3\t4\t5\n", ORION_EPARSE,
                    1, "expected 3 or 4 fields, found 5", "1\t2\t3\t4\t5");
  expect_line_error(ORION_FMT_MOVIELENS, NULL, "1::2::x::4\n", ORION_EPARSE, 1,
                    "field 3 is not a number", "1::2::x::4");
  expect_line_error(ORION_FMT_MOVIELENS, NULL, "1::2::3::4.5\n", ORION_EPARSE,
                    1, "field 4 (the timestamp) is not an integer",
                    "1::2::3::4.5");
  expect_line_error(ORION_FMT_MOVIELENS, NULL, "1:2::3::4\n", ORION_EPARSE, 1,
                    "field 1 is not an integer", "1:2::3::4");
}

/* ----------------------------------------------------------------- libsvm */

Test(loader, libsvm_labels) {
  loaded l =
      load_ok(ORION_FMT_LIBSVM,
              "+1 1:0.5 3:2\n-1\n# comment\n0 2:1.5 \n2.5 4:1e-3\n", NULL);
  orion_array *a = l.res.array, *lab = l.res.labels;
  cr_assert_eq(a->nnz, 4);
  expect_dims2(a, 4, 4);
  expect_elem(a, 0, 0, 0, 0.5);
  expect_elem(a, 1, 0, 2, 2);
  expect_elem(a, 2, 2, 1, 1.5);
  expect_elem(a, 3, 3, 3, 1e-3);
  cr_assert_not_null(lab);
  cr_assert(!lab->sparse);
  cr_assert_eq(lab->type, ORION_F64);
  cr_assert_eq(lab->ndims, 1);
  cr_assert_eq(lab->dims[0], 4);
  cr_assert_eq(((double *)lab->values)[0], 1);
  cr_assert_eq(((double *)lab->values)[1], -1);
  cr_assert_eq(((double *)lab->values)[2], 0);
  cr_assert_eq(((double *)lab->values)[3], 2.5);
  done(&l);
}

Test(loader, libsvm_trailing_empty_rows_count) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  loaded l;
  o.index_base = 0;
  l = load_ok(ORION_FMT_LIBSVM, "1 0:1\n0\n0\n", &o);
  expect_dims2(l.res.array, 3, 1);
  cr_assert_eq(l.res.labels->dims[0], 3);
  done(&l);
  l = load_ok(ORION_FMT_LIBSVM, "\n", &o);
  cr_assert_eq(l.res.array->nnz, 0);
  cr_assert_null(l.res.labels);
  done(&l);
}

Test(loader, libsvm_errors) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  expect_line_error(ORION_FMT_LIBSVM, NULL, "1 1:1\n1 3\n", ORION_EPARSE, 2,
                    "field 2 is not an index:value pair", "1 3");
  expect_line_error(ORION_FMT_LIBSVM, NULL, "1 1:1 0:2\n", ORION_EKEYRANGE, 1,
                    "key 0 in field 3 is below the index base 1", "1 1:1 0:2");
  expect_line_error(ORION_FMT_LIBSVM, NULL, "x 1:1\n", ORION_EPARSE, 1,
                    "field 1 (the label) is not a number", "x 1:1");
  expect_line_error(ORION_FMT_LIBSVM, NULL, "1 1.5:1\n", ORION_EPARSE, 1,
                    "the index in field 2 is not an integer", "1 1.5:1");
  expect_line_error(ORION_FMT_LIBSVM, NULL, "1 2:z\n", ORION_EPARSE, 1,
                    "the value in field 2 is not a number", "1 2:z");
  expect_line_error(ORION_FMT_LIBSVM, NULL, "1 2:\n", ORION_EPARSE, 1,
                    "the value in field 2 is empty", "1 2:");
  o.have_dims = 1;
  o.dims[0] = 1;
  o.dims[1] = 5;
  expect_line_error(ORION_FMT_LIBSVM, &o, "1 1:1 6:1\n", ORION_EKEYRANGE, 1,
                    "key 6 in field 3 is above dimension size 5", "1 1:1 6:1");
  expect_line_error(ORION_FMT_LIBSVM, &o, "1 1:1\n0 2:1\n", ORION_EKEYRANGE, 2,
                    "row 2 is above dimension size 1", "0 2:1");
}

Test(loader, libsvm_skip_takes_back_partial_rows) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  loaded l;
  o.skip_errors = 1;
  l = load_ok(ORION_FMT_LIBSVM, "1 1:1\n2 2:2 9:x\n3 3:3\n", &o);
  cr_assert_eq(l.res.skipped, 1);
  cr_assert_eq(l.res.array->nnz, 2);
  expect_dims2(l.res.array, 2, 3);
  expect_elem(l.res.array, 0, 0, 0, 1);
  expect_elem(l.res.array, 1, 1, 2, 3);
  cr_assert_eq(l.res.labels->dims[0], 2);
  cr_assert_eq(((double *)l.res.labels->values)[1], 3);
  done(&l);
}

/* ---------------------------------------------------------------- uci-bow */

static const char docword[] = "3\n4\n5\n1 1 2\n1 3 1\n2 2 5\n3 4 1\n3 1 7\n";

Test(loader, ucibow_basic) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  loaded l;
  o.value_type = ORION_I32;
  l = load_ok(ORION_FMT_UCIBOW, docword, &o);
  cr_assert_eq(l.res.array->type, ORION_I32);
  cr_assert_eq(l.res.array->nnz, 5);
  expect_dims2(l.res.array, 3, 4);
  expect_elem(l.res.array, 0, 0, 0, 2);
  expect_elem(l.res.array, 2, 1, 1, 5);
  expect_elem(l.res.array, 4, 2, 0, 7);
  done(&l);
  /* Header dims win over the largest keys: D=10 W=10. */
  l = load_ok(ORION_FMT_UCIBOW, "10\n10\n1\n2 2 1\n", NULL);
  expect_dims2(l.res.array, 10, 10);
  done(&l);
  /* Given dims override the header's. */
  o.have_dims = 1;
  o.dims[0] = 7;
  o.dims[1] = 8;
  l = load_ok(ORION_FMT_UCIBOW, docword, &o);
  expect_dims2(l.res.array, 7, 8);
  done(&l);
}

Test(loader, ucibow_nnz_mismatch) {
  char want[1024];
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  loaded l;
  l = load_text(".txt", "3\n4\n6\n1 1 2\n1 3 1\n2 2 5\n3 4 1\n3 1 7\n", &o);
  cr_assert_eq(l.rc, ORION_EPARSE);
  cr_assert_null(l.res.array);
  snprintf(want, sizeof want,
           "%s:8: the input ends after 5 of NNZ = 6 data lines (from the "
           "header); is it truncated?: \"3 1 7\"",
           l.path);
  cr_assert_str_eq(l.err.msg, want);
  done(&l);
  /* Too many lines is an error too; skipped lines count as data lines. */
  o.skip_errors = 1;
  l = load_ok(ORION_FMT_UCIBOW, "3\n4\n2\n1 1 2\n1 x 1\n", &o);
  cr_assert_eq(l.res.array->nnz, 1);
  cr_assert_eq(l.res.skipped, 1);
  done(&l);
  l = load_text(".txt", "3\n4\n1\n1 1 2\n1 3 1\n", &o);
  cr_assert_eq(l.rc, ORION_EPARSE);
  snprintf(want, sizeof want,
           "%s:5: data line 2 is past NNZ = 1 (from the header), found 2 "
           "data lines: \"1 3 1\"",
           l.path);
  cr_assert_str_eq(l.err.msg, want);
  done(&l);
}

Test(loader, ucibow_errors) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  loaded l;
  expect_line_error(ORION_FMT_UCIBOW, NULL, "3\n4\n1\n4 1 1\n", ORION_EKEYRANGE,
                    4, "key 4 in column 1 is above dimension size 3", "4 1 1");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "3\n4\n1\n1 5 1\n", ORION_EKEYRANGE,
                    4, "key 5 in column 2 is above dimension size 4", "1 5 1");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "3\n4\n1\n1 2\n", ORION_EPARSE, 4,
                    "expected 3 fields, found 2", "1 2");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "3\nW\n1\n1 2 1\n", ORION_EPARSE, 2,
                    "header line 2, W (words), is not a positive integer", "W");
  /* Header errors stay fatal in skip mode. */
  o.skip_errors = 1;
  expect_line_error(ORION_FMT_UCIBOW, &o, "0\n4\n1\n1 2 1\n", ORION_EPARSE, 1,
                    "header line 1, D (documents), is not a positive integer",
                    "0");
  l = load_text(".txt", "3\n4\n", &o);
  cr_assert_eq(l.rc, ORION_EPARSE);
  cr_assert(strstr(l.err.msg, "incomplete uci-bow header") != NULL, "%s",
            l.err.msg);
  cr_assert(strstr(l.err.msg, l.path) != NULL);
  done(&l);
}

/* ------------------------------------------------------------ gzip, files */

Test(loader, gz_input) {
  static const char text[] = "1 1 5\n2 3 4.5\n";
  char *p = write_gz(text, sizeof text - 1);
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  char *data;
  size_t len;
  cr_assert_eq(orion_read_file(p, &data, &len, &err), 0, "%s", err.msg);
  cr_assert_eq(len, sizeof text - 1);
  cr_assert_eq(memcmp(data, text, len), 0);
  cr_assert_eq(data[len], '\0');
  orion_free(data);
  cr_assert_eq(orion_load_file(p, &o, &res, &err), 0, "%s", err.msg);
  cr_assert_eq(res.array->nnz, 2);
  expect_dims2(res.array, 2, 3);
  expect_elem(res.array, 1, 1, 2, 4.5);
  cr_assert_eq(res.lines, 2);
  orion_array_release(res.array);
  cr_assert_eq(orion_alloc_used(), 0);
  unlink(p);
  free(p);
}

Test(loader, gz_large_multichunk) {
  /* Big enough to need several reads and buffer growth. */
  size_t n = 200000, i, len = 0;
  char *text = malloc(n * 32), *p;
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  for (i = 0; i < n; i++)
    len += (size_t)sprintf(text + len, "%zu %zu %zu.25\n", i % 1000 + 1,
                           i / 1000 + 1, i % 7);
  p = write_gz(text, len);
  cr_assert_eq(orion_load_file(p, &o, &res, &err), 0, "%s", err.msg);
  cr_assert_eq(res.array->nnz, (int64_t)n);
  expect_dims2(res.array, 1000, 200);
  expect_elem(res.array, 123456, 456, 123, 123456 % 7 + 0.25);
  cr_assert_eq(res.array->cap, res.array->nnz);
  orion_array_release(res.array);
  cr_assert_eq(orion_alloc_used(), 0);
  unlink(p);
  free(p);
  free(text);
}

Test(loader, gz_corrupt_and_truncated) {
  size_t n = 50000, i, len = 0;
  char *text = malloc(n * 32), *p, *data = NULL;
  unsigned char *raw;
  long size;
  FILE *f;
  orion_error err;
  size_t got;
  int rc;
  for (i = 0; i < n; i++)
    len += (size_t)sprintf(text + len, "%zu %zu 1\n", i + 1, i % 97 + 1);
  p = write_gz(text, len);
  size = file_size(p);
  raw = malloc((size_t)size);
  f = fopen(p, "rb");
  cr_assert_eq(fread(raw, 1, (size_t)size, f), (size_t)size);
  fclose(f);

  /* Flip bytes in the middle of the deflate stream. */
  for (i = 0; i < 16; i++)
    raw[size / 2 + (long)i] ^= 0x5a;
  f = fopen(p, "wb");
  fwrite(raw, 1, (size_t)size, f);
  fclose(f);
  rc = orion_read_file(p, &data, &got, &err);
  cr_assert(rc == ORION_EPARSE || rc == ORION_ETRUNC, "rc %d: %s", rc, err.msg);
  cr_assert_null(data);
  cr_assert(strstr(err.msg, p) != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "gzip") != NULL, "%s", err.msg);

  /* Cut the file short (restore the flipped bytes first). */
  for (i = 0; i < 16; i++)
    raw[size / 2 + (long)i] ^= 0x5a;
  f = fopen(p, "wb");
  fwrite(raw, 1, (size_t)(size / 2), f);
  fclose(f);
  rc = orion_read_file(p, &data, &got, &err);
  cr_assert_eq(rc, ORION_ETRUNC, "rc %d: %s", rc, err.msg);
  cr_assert_null(data);
  cr_assert(strstr(err.msg, p) != NULL, "%s", err.msg);
  cr_assert_eq(orion_alloc_used(), 0);
  unlink(p);
  free(p);
  free(raw);
  free(text);
}

Test(loader, read_file_plain) {
  static const char text[] = "line one\nline two\n";
  char *p = tu_write_temp(".txt", text), *data;
  orion_error err;
  size_t len;
  cr_assert_eq(orion_read_file(p, &data, &len, &err), 0, "%s", err.msg);
  cr_assert_eq(len, sizeof text - 1);
  cr_assert_str_eq(data, text);
  orion_free(data);
  unlink(p);
  free(p);
  p = tu_write_temp(".txt", "");
  cr_assert_eq(orion_read_file(p, &data, &len, &err), 0, "%s", err.msg);
  cr_assert_eq(len, 0);
  cr_assert_str_eq(data, "");
  orion_free(data);
  unlink(p);
  free(p);
  cr_assert_eq(orion_alloc_used(), 0);
}

Test(loader, missing_file) {
  char *p = tu_temp_path(".txt"), want[1024];
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  char *data = (char *)1;
  size_t len;
  memset(&res, 0x5a, sizeof res);
  cr_assert_eq(orion_load_file(p, &o, &res, &err), -ENOENT);
  cr_assert_null(res.array);
  cr_assert_eq(err.code, -ENOENT);
  snprintf(want, sizeof want, "cannot open %s: %s", p, strerror(ENOENT));
  cr_assert_str_eq(err.msg, want);
  cr_assert_eq(orion_read_file(p, &data, &len, &err), -ENOENT);
  cr_assert_null(data);
  cr_assert_eq(orion_read_file("/tmp", &data, &len, &err), -EISDIR);
  cr_assert(strstr(err.msg, "cannot open /tmp") != NULL, "%s", err.msg);
  cr_assert_eq(orion_alloc_used(), 0);
  free(p);
}

/* ---------------------------------------------------------- shared data */

Test(loader, movielens_100k_udata) {
  const char *dir = tu_data_dir("movielens-100k/u.data");
  char path[1024];
  orion_load_opts o = opts_for(ORION_FMT_MOVIELENS);
  orion_load_result res;
  orion_error err;
  int64_t counts[6] = {0}, i;
  snprintf(path, sizeof path, "%s/movielens-100k/u.data", dir);
  o.value_type = ORION_I32;
  cr_assert_eq(orion_load_file(path, &o, &res, &err), 0, "%s", err.msg);
  cr_assert_eq(res.array->nnz, 100000);
  expect_dims2(res.array, 943, 1682);
  cr_assert_eq(res.lines, 100000);
  /* The first line of u.data is "196 242 3 881250949". */
  expect_elem(res.array, 0, 195, 241, 3);
  for (i = 0; i < res.array->nnz; i++) {
    int32_t r = ((int32_t *)res.array->values)[i];
    cr_assert(r >= 1 && r <= 5);
    counts[r]++;
  }
  cr_assert_eq(counts[1], 6110);
  cr_assert_eq(counts[2], 11370);
  cr_assert_eq(counts[3], 27145);
  cr_assert_eq(counts[4], 34174);
  cr_assert_eq(counts[5], 21201);
  orion_array_release(res.array);
}

Test(loader, movielens_1m_train_gz) {
  const char *dir = tu_data_dir("movielens-1m/ratings.train.txt.gz");
  char path[1024];
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  snprintf(path, sizeof path, "%s/movielens-1m/ratings.train.txt.gz", dir);
  cr_assert_eq(orion_load_file(path, &o, &res, &err), 0, "%s", err.msg);
  cr_assert_eq(res.array->nnz, 900461);
  cr_assert_eq(res.array->ndims, 2);
  cr_assert_leq(res.array->dims[0], 6040);
  cr_assert_leq(res.array->dims[1], 3706);
  /* The first line is "1 1 5". */
  expect_elem(res.array, 0, 0, 0, 5);
  orion_array_release(res.array);
  cr_assert_eq(orion_alloc_used(), 0);
}

Test(loader, ucibow_kos) {
  const char *dir = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  char path[1024];
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  orion_load_result res;
  orion_error err;
  snprintf(path, sizeof path, "%s/uci-bow-kos/docword.kos.txt.gz", dir);
  o.value_type = ORION_I32;
  cr_assert_eq(orion_load_file(path, &o, &res, &err), 0, "%s", err.msg);
  cr_assert_eq(res.array->nnz, 353160);
  expect_dims2(res.array, 3430, 6906);
  /* The first entry is "1 61 2". */
  expect_elem(res.array, 0, 0, 60, 2);
  orion_array_release(res.array);
}

/* ------------------------------------------------------------ byte ranges */

/* The name range loads give their input in messages. */
#define RNAME "in"

/* An exactly sized heap copy of text (no NUL after it), so that a parser
 * reading past a range's last line end shows up under ASan. */
static char *exact_copy(const char *text, size_t len) {
  char *b = malloc(len > 0 ? len : 1);
  cr_assert_not_null(b);
  memcpy(b, text, len);
  return b;
}

static void release_result(orion_load_result *r) {
  orion_array_release(r->array);
  orion_array_release(r->labels);
  r->array = r->labels = NULL;
}

/* Asserts that got is want: elements and their order, dims, labels, line
 * counts and the first skipped line. */
static void expect_same(const orion_load_result *got,
                        const orion_load_result *want, const char *what) {
  const orion_array *a = got->array, *b = want->array;
  size_t es = orion_type_size(b->type);
  cr_assert_not_null(a, "%s: no array", what);
  cr_assert_eq(a->ndims, b->ndims, "%s: ndims %d != %d", what, a->ndims,
               b->ndims);
  cr_assert_eq(a->type, b->type, "%s: type", what);
  cr_assert_eq(a->nnz, b->nnz, "%s: nnz %lld != %lld", what, (long long)a->nnz,
               (long long)b->nnz);
  cr_assert(memcmp(a->dims, b->dims, (size_t)b->ndims * sizeof(int64_t)) == 0,
            "%s: dims [%lld %lld] != [%lld %lld]", what, (long long)a->dims[0],
            (long long)a->dims[1], (long long)b->dims[0],
            (long long)b->dims[1]);
  if (b->nnz > 0) {
    cr_assert(memcmp(a->keys, b->keys,
                     (size_t)b->nnz * (size_t)b->ndims * sizeof(int64_t)) == 0,
              "%s: keys differ", what);
    cr_assert(memcmp(a->values, b->values, (size_t)b->nnz * es) == 0,
              "%s: values differ", what);
  }
  if (want->labels == NULL) {
    cr_assert_null(got->labels, "%s: unexpected labels", what);
  } else {
    cr_assert_not_null(got->labels, "%s: no labels", what);
    cr_assert_eq(got->labels->dims[0], want->labels->dims[0],
                 "%s: %lld labels != %lld", what,
                 (long long)got->labels->dims[0],
                 (long long)want->labels->dims[0]);
    cr_assert(memcmp(got->labels->values, want->labels->values,
                     (size_t)want->labels->dims[0] * sizeof(double)) == 0,
              "%s: labels differ", what);
  }
  cr_assert_eq(got->row_lo, want->row_lo, "%s: row_lo", what);
  cr_assert_eq(got->lines, want->lines, "%s: lines %lld != %lld", what,
               (long long)got->lines, (long long)want->lines);
  cr_assert_eq(got->skipped, want->skipped, "%s: skipped %lld != %lld", what,
               (long long)got->skipped, (long long)want->skipped);
  cr_assert_str_eq(got->first_skip, want->first_skip, "%s", what);
}

/* Loads buf in the ranges cut at cuts[0..ncuts-1] (non-decreasing), merges
 * them in order and compares the result with the whole load `want`. */
static void check_cuts(const char *buf, size_t len, const orion_load_opts *o,
                       const uint64_t *cuts, int ncuts,
                       const orion_load_result *want) {
  orion_load_result parts[8], merged;
  orion_error err;
  char what[128];
  uint64_t lo = 0;
  int i, n = 0;
  cr_assert_lt(ncuts, 8);
  for (i = 0; i < ncuts; i++)
    n += snprintf(what + n, sizeof what - (size_t)n, " %llu",
                  (unsigned long long)cuts[i]);
  for (i = 0; i <= ncuts; i++) {
    uint64_t hi = i < ncuts ? cuts[i] : len;
    cr_assert_eq(
        orion_load_buffer_range(buf, len, RNAME, lo, hi, o, &parts[i], &err), 0,
        "cuts%s, range [%llu, %llu): %s", what, (unsigned long long)lo,
        (unsigned long long)hi, err.msg);
    lo = hi;
  }
  cr_assert_eq(orion_load_merge(parts, ncuts + 1, o, &merged, &err), 0,
               "cuts%s: merge: %s", what, err.msg);
  expect_same(&merged, want, what);
  for (i = 0; i <= ncuts; i++) {
    cr_assert_eq(parts[i].array->refs, 1, "the merge took a reference");
    release_result(&parts[i]);
  }
  release_result(&merged);
}

/* Every split of text into 2 and into 3 ranges, at every cut position,
 * merges to exactly the whole load. */
static void check_all_splits(orion_format f, const orion_load_opts *given,
                             const char *text) {
  orion_load_opts o = given != NULL ? *given : opts_for(f);
  size_t len = strlen(text), used = orion_alloc_used();
  char *buf = exact_copy(text, len);
  orion_load_result want;
  orion_error err;
  uint64_t c[2];
  o.format = f;
  cr_assert_eq(orion_load_buffer(buf, len, RNAME, 1, &o, &want, &err), 0,
               "whole load: %s", err.msg);
  for (c[0] = 0; c[0] <= len; c[0]++) {
    check_cuts(buf, len, &o, c, 1, &want);
    for (c[1] = c[0]; c[1] <= len; c[1]++)
      check_cuts(buf, len, &o, c, 2, &want);
  }
  release_result(&want);
  free(buf);
  cr_expect_eq(orion_alloc_used(), used, "memory leaked");
}

/* Where line `line` (1-based) of text starts. */
static size_t line_offset(const char *text, int line) {
  const char *p = text;
  while (--line > 0) {
    p = strchr(p, '\n');
    cr_assert_not_null(p);
    p++;
  }
  return (size_t)(p - text);
}

/* text has a bad line `line`: over every split into 2 and 3 ranges, the
 * range where that line starts fails with exactly the whole load's message
 * and the others succeed. */
static void check_error_splits(orion_format f, const orion_load_opts *given,
                               const char *text, int code, int line,
                               const char *prob, const char *quote) {
  orion_load_opts o = given != NULL ? *given : opts_for(f);
  size_t len = strlen(text), at = line_offset(text, line);
  char *buf = exact_copy(text, len), want[1024];
  orion_load_result res;
  orion_error err;
  uint64_t a, b, cut[4];
  int i, k;
  o.format = f;
  snprintf(want, sizeof want, "%s:%d: %s: \"%s\"", RNAME, line, prob, quote);
  cr_assert_eq(orion_load_buffer(buf, len, RNAME, 1, &o, &res, &err), code);
  cr_assert_str_eq(err.msg, want);
  for (a = 0; a <= len; a++)
    for (b = a; b <= len; b++)
      for (k = 0; k < 2; k++) { /* k = 0: [0,a) [a,len); 1: three ranges */
        int n = k == 0 ? 2 : 3;
        cut[0] = 0, cut[1] = a, cut[2] = k == 0 ? len : b, cut[3] = len;
        if (k == 0 && b != a)
          continue;
        for (i = 0; i < n; i++) {
          int holds = at >= cut[i] && at < cut[i + 1];
          int rc = orion_load_buffer_range(buf, len, RNAME, cut[i], cut[i + 1],
                                           &o, &res, &err);
          if (!holds) {
            cr_assert_eq(rc, 0, "[%llu, %llu): %s", (unsigned long long)cut[i],
                         (unsigned long long)cut[i + 1], err.msg);
            release_result(&res);
            continue;
          }
          cr_assert_eq(rc, code, "[%llu, %llu): rc %d",
                       (unsigned long long)cut[i],
                       (unsigned long long)cut[i + 1], rc);
          cr_assert_eq(err.code, code);
          cr_assert_str_eq(err.msg, want, "[%llu, %llu)",
                           (unsigned long long)cut[i],
                           (unsigned long long)cut[i + 1]);
          cr_assert_null(res.array);
          cr_assert_null(res.labels);
        }
      }
  free(buf);
  cr_assert_eq(orion_alloc_used(), 0, "memory leaked");
}

Test(loader, ranges_coo) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  check_all_splits(ORION_FMT_COO, NULL,
                   "# c\n1 1 5\n\n2 3 4.5\r\n  # x\n1 2 -0.25\n3 1 1");
  check_all_splits(ORION_FMT_COO, NULL, "1 2 3 1.5\n4 1 2 2.5\n\n2 2 2 7\n");
  check_all_splits(ORION_FMT_COO, NULL, "");
  check_all_splits(ORION_FMT_COO, NULL, "\n# only a comment\n\n");
  o.value_type = ORION_I32;
  o.index_base = 0;
  check_all_splits(ORION_FMT_COO, &o, "0 0 1\n\n2 0 3\n0 5 -4\n");
  o = opts_for(ORION_FMT_COO);
  o.nkeys = 1;
  o.have_dims = 1;
  o.dims[0] = 9;
  check_all_splits(ORION_FMT_COO, &o, "3 7\n1 8\n\n9 1\n");
}

Test(loader, ranges_coo_skip_errors) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  o.skip_errors = 1;
  /* The key count comes from line 3, the first usable line, in every
   * range: line 1 is bad whatever the split and line 4 has too many. */
  check_all_splits(ORION_FMT_COO, &o,
                   "7\n# c\n1 1 5\n1 2 3 4\n2 x 1\n\n2 2 1\n");
  /* Three keys from line 3, also for a range holding only line 1. */
  check_all_splits(ORION_FMT_COO, &o, "7\n\n1 2 3 4\n2 2 2 x\n3 1 1 1");
  /* No usable line at all: two dims in every range. */
  check_all_splits(ORION_FMT_COO, &o, "7\n\n8\n");
}

Test(loader, ranges_csv_header) {
  orion_load_opts o = opts_for(ORION_FMT_CSV);
  o.header = 1;
  check_all_splits(ORION_FMT_CSV, &o,
                   "user,item,rating\n1, 2 ,3.5\r\n 2,1,4 , extra\n\n"
                   "# c\n3,3,1\n");
  /* A header that parses as data is still the header. */
  check_all_splits(ORION_FMT_CSV, &o, "9,9,9\n1,1,1\n2,2,2");
  o.header = 0;
  o.sep = ';';
  o.ncols_key = 1;
  o.key_cols[0] = 2;
  o.value_col = 1;
  check_all_splits(ORION_FMT_CSV, &o, "0.5;4\n\n-1;1\n2;3\n");
}

/* A header line (column names, as mf.lua --header reads) is skipped in
 * every format whose lines are one element each, whole and by the range
 * that holds it; libsvm and uci-bow refuse the option rather than ignore
 * it. */
Test(loader, header_skips_the_first_line_of_coo_and_movielens) {
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result res;
  orion_error err;
  loaded l;
  o.header = 1;
  l = load_ok(ORION_FMT_COO, "user item rating\n1 2 3.5\n2 1 4\n", &o);
  cr_assert_eq(l.res.array->nnz, 2);
  expect_dims2(l.res.array, 2, 2);
  expect_elem(l.res.array, 0, 0, 1, 3.5);
  expect_elem(l.res.array, 1, 1, 0, 4);
  done(&l);
  check_all_splits(ORION_FMT_COO, &o, "user item rating\n1 2 3.5\n2 1 4\n");
  o = opts_for(ORION_FMT_MOVIELENS);
  o.header = 1;
  l = load_ok(ORION_FMT_MOVIELENS, "user::item::rating\n1::2::3\n", &o);
  cr_assert_eq(l.res.array->nnz, 1);
  expect_elem(l.res.array, 0, 0, 1, 3);
  done(&l);
  o = opts_for(ORION_FMT_LIBSVM);
  o.header = 1;
  cr_assert_eq(orion_load_buffer("1 1:1\n", 6, "buf", 1, &o, &res, &err),
               ORION_EOPTION);
  cr_assert_str_eq(err.msg, "buf: header applies to the coo, csv and "
                            "movielens formats, not libsvm");
}

Test(loader, ranges_movielens) {
  orion_load_opts o = opts_for(ORION_FMT_MOVIELENS);
  check_all_splits(ORION_FMT_MOVIELENS, NULL,
                   "1::1193::5::978300760\n1::661::3::978302109\n"
                   "2::3::4.5\n");
  o.value_type = ORION_I32;
  check_all_splits(ORION_FMT_MOVIELENS, &o,
                   "196\t242\t3\t881250949\r\n22\t377\t1\n\n5\t6\t2\n");
}

Test(loader, ranges_libsvm) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  check_all_splits(ORION_FMT_LIBSVM, NULL,
                   "+1 1:0.5 3:2\n-1\n# comment\n0 2:1.5 \n2.5 4:1e-3\n");
  /* Rows without elements at the end still count in dims[0]. */
  o.index_base = 0;
  check_all_splits(ORION_FMT_LIBSVM, &o, "1 0:1\n0\n\n0\n");
  o = opts_for(ORION_FMT_LIBSVM);
  o.have_dims = 1;
  o.dims[0] = 6;
  o.dims[1] = 5;
  check_all_splits(ORION_FMT_LIBSVM, &o, "1 1:1 5:2\n2\n3 2:3\n");
}

Test(loader, ranges_libsvm_skip_errors) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  o.skip_errors = 1;
  /* Skipped lines make no row, in whichever range they are. */
  check_all_splits(ORION_FMT_LIBSVM, &o,
                   "1 1:1\n2 2:2 9:x\n\n3 3:3\nx\n# c\n4\n5 1:5\n");
  o.have_dims = 1;
  o.dims[0] = 2;
  o.dims[1] = 4;
  /* Rows past dims[0] are errors; only parsing tells which rows exist. */
  check_all_splits(ORION_FMT_LIBSVM, &o, "1 1:1\n2 9:1\n3 2:3\n4 1:4\n");
}

Test(loader, ranges_libsvm_rows) {
  static const char text[] = "1 1:1\n\n2 2:2\n3\n4 1:4 3:1\n";
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  orion_load_result r;
  orion_error err;
  /* The range from line 4 on holds rows 2 and 3 (0-based). */
  cr_assert_eq(orion_load_buffer_range(text, sizeof text - 1, RNAME, 13,
                                       sizeof text - 1, &o, &r, &err),
               0, "%s", err.msg);
  cr_assert_eq(r.row_lo, 2);
  cr_assert_eq(r.lines, 2);
  cr_assert_eq(r.labels->dims[0], 2);
  cr_assert_eq(((double *)r.labels->values)[0], 3);
  cr_assert_eq(((double *)r.labels->values)[1], 4);
  cr_assert_eq(r.array->nnz, 2);
  expect_elem(r.array, 0, 3, 0, 4);
  expect_elem(r.array, 1, 3, 2, 1);
  expect_dims2(r.array, 4, 3);
  release_result(&r);
  /* A range without rows has no labels, but knows its row_lo. */
  cr_assert_eq(
      orion_load_buffer_range(text, sizeof text - 1, RNAME, 6, 7, &o, &r, &err),
      0, "%s", err.msg);
  cr_assert_eq(r.row_lo, 1);
  cr_assert_eq(r.lines, 1);
  cr_assert_null(r.labels);
  cr_assert_eq(r.array->nnz, 0);
  release_result(&r);
  cr_assert_eq(orion_alloc_used(), 0);
}

Test(loader, ranges_ucibow) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  o.value_type = ORION_I32;
  check_all_splits(ORION_FMT_UCIBOW, &o, docword);
  /* Blank lines in and after the header; header dims above every key. */
  check_all_splits(ORION_FMT_UCIBOW, &o, "\n10\n\n10\r\n2\n\n2 2 1\n1 9 3\n");
  o.have_dims = 1;
  o.dims[0] = 7;
  o.dims[1] = 8;
  check_all_splits(ORION_FMT_UCIBOW, &o, docword);
  o = opts_for(ORION_FMT_UCIBOW);
  o.skip_errors = 1;
  check_all_splits(ORION_FMT_UCIBOW, &o, "3\n4\n3\n1 1 2\n1 x 1\n5 1 1\n");
}

Test(loader, ranges_line_errors) {
  orion_load_opts o = opts_for(ORION_FMT_CSV);
  check_error_splits(ORION_FMT_COO, NULL, "1 1 3\n\n# c\n1 2 abc\n2 2 2\n",
                     ORION_EPARSE, 4, "field 3 is not a number", "1 2 abc");
  /* The first data line decides coo's key count, even in a later range. */
  check_error_splits(ORION_FMT_COO, NULL, "1 1 3\n2 2\n3 3 3\n", ORION_EPARSE,
                     2, "expected 3 fields, found 2", "2 2");
  check_error_splits(ORION_FMT_COO, NULL, "# c\n7\n1 1 1\n", ORION_EPARSE, 2,
                     "expected at least 2 fields, found 1", "7");
  o.header = 1;
  check_error_splits(ORION_FMT_CSV, &o, "u,i,r\n1,2,3\n1,2\r\n3,3,3\n",
                     ORION_EPARSE, 3, "expected at least 3 fields, found 2",
                     "1,2");
  check_error_splits(ORION_FMT_MOVIELENS, NULL,
                     "1::2::3\n1::2::x::4\n5::5::5\n", ORION_EPARSE, 2,
                     "field 3 is not a number", "1::2::x::4");
  check_error_splits(ORION_FMT_LIBSVM, NULL, "1 1:1\n-1\n\n1 1:1 0:2\n2 2:2\n",
                     ORION_EKEYRANGE, 4,
                     "key 0 in field 3 is below the index base 1", "1 1:1 0:2");
  check_error_splits(ORION_FMT_UCIBOW, NULL, "3\n4\n2\n1 1 1\n4 1 1\n",
                     ORION_EKEYRANGE, 5,
                     "key 4 in column 1 is above dimension size 3", "4 1 1");
}

/* A libsvm row past a given dims[0] is found in any range: rows are counted
 * from the data lines before it. */
Test(loader, ranges_libsvm_row_error) {
  orion_load_opts o = opts_for(ORION_FMT_LIBSVM);
  o.have_dims = 1;
  o.dims[0] = 2;
  o.dims[1] = 5;
  check_error_splits(ORION_FMT_LIBSVM, &o, "1 1:1\n# c\n2\n3 2:1\n",
                     ORION_EKEYRANGE, 4, "row 3 is above dimension size 2",
                     "3 2:1");
}

/* uci-bow's whole-input checks: a bad header fails every range (none can
 * know its dims), the NNZ line count is checked by the range at the end. */
Test(loader, ranges_ucibow_input_errors) {
  static const char bad_hdr[] = "3\nW\n1\n1 2 1\n";
  static const char bad_nnz[] = "3\n4\n6\n1 1 2\n1 3 1\n\n2 2 5\n3 4 1\n";
  static const char short_hdr[] = "3\n\n4\n";
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  orion_load_result r;
  orion_error err;
  uint64_t a, len;
  for (a = 0; a <= sizeof bad_hdr - 1; a++) {
    cr_assert_eq(orion_load_buffer_range(bad_hdr, sizeof bad_hdr - 1, RNAME, a,
                                         sizeof bad_hdr - 1, &o, &r, &err),
                 ORION_EPARSE);
    cr_assert_str_eq(err.msg,
                     RNAME ":2: header line 2, W (words), is not a positive "
                           "integer: \"W\"");
    cr_assert_null(r.array);
  }
  len = sizeof bad_nnz - 1;
  for (a = 0; a <= len; a++) {
    cr_assert_eq(
        orion_load_buffer_range(bad_nnz, len, RNAME, 0, a, &o, &r, &err),
        a == len ? ORION_EPARSE : 0, "[0, %llu): %s", (unsigned long long)a,
        err.msg);
    release_result(&r);
    cr_assert_eq(
        orion_load_buffer_range(bad_nnz, len, RNAME, a, len, &o, &r, &err),
        ORION_EPARSE);
    cr_assert_str_eq(err.msg, RNAME ":8: the input ends after 4 of NNZ = 6 "
                                    "data lines (from the header); is it "
                                    "truncated?: \"3 4 1\"");
  }
  for (a = 0; a <= sizeof short_hdr - 1; a++) {
    cr_assert_eq(orion_load_buffer_range(short_hdr, sizeof short_hdr - 1, RNAME,
                                         0, a, &o, &r, &err),
                 ORION_EPARSE);
    cr_assert_str_eq(err.msg, RNAME ":3: incomplete uci-bow header: expected "
                                    "D, W and NNZ lines, found 2: \"4\"");
  }
  cr_assert_eq(orion_alloc_used(), 0);
}

Test(loader, ranges_bad_arguments) {
  static const char text[] = "1 1 1\n2 2 2\n";
  orion_load_opts o = opts_for(ORION_FMT_COO);
  orion_load_result r, parts[2], m;
  orion_error err;
  cr_assert_eq(
      orion_load_buffer_range(text, sizeof text - 1, RNAME, 5, 4, &o, &r, &err),
      ORION_EOPTION);
  cr_assert_str_eq(err.msg, RNAME ": bad byte range [5, 4)");
  cr_assert_null(r.array);
  /* Offsets past the end mean the end. */
  cr_assert_eq(orion_load_buffer_range(text, sizeof text - 1, RNAME, 3,
                                       UINT64_MAX, &o, &r, &err),
               0, "%s", err.msg);
  cr_assert_eq(r.array->nnz, 1);
  cr_assert_eq(r.lines, 1);
  release_result(&r);
  cr_assert_eq(orion_load_buffer_range(text, sizeof text - 1, RNAME, 100, 200,
                                       &o, &r, &err),
               0, "%s", err.msg);
  cr_assert_eq(r.array->nnz, 0);
  cr_assert_eq(r.lines, 0);
  release_result(&r);
  cr_assert_eq(orion_load_merge(parts, 0, &o, &m, &err), ORION_EINVAL);
  cr_assert_null(m.array);
  /* Parts of different shapes or types, rows that leave a gap. */
  o.nkeys = 2;
  cr_assert_eq(orion_load_buffer_range(text, sizeof text - 1, RNAME, 0, 6, &o,
                                       &parts[0], &err),
               0);
  o.nkeys = 1;
  o.value_type = ORION_I32;
  cr_assert_eq(
      orion_load_buffer_range("1 1\n", 4, RNAME, 0, 4, &o, &parts[1], &err), 0);
  cr_assert_eq(orion_load_merge(parts, 2, &o, &m, &err), ORION_ETYPE);
  cr_assert_null(m.array);
  release_result(&parts[1]);
  o.value_type = ORION_F64;
  cr_assert_eq(
      orion_load_buffer_range("1 1\n", 4, RNAME, 0, 4, &o, &parts[1], &err), 0);
  cr_assert_eq(orion_load_merge(parts, 2, &o, &m, &err), ORION_EDIMS);
  release_result(&parts[0]);
  release_result(&parts[1]);
  o = opts_for(ORION_FMT_LIBSVM);
  cr_assert_eq(orion_load_buffer_range("1 1:1\n2\n3\n", 10, RNAME, 0, 6, &o,
                                       &parts[0], &err),
               0);
  cr_assert_eq(orion_load_buffer_range("1 1:1\n2\n3\n", 10, RNAME, 8, 10, &o,
                                       &parts[1], &err),
               0);
  cr_assert_eq(parts[1].row_lo, 2);
  cr_assert_eq(orion_load_merge(parts, 2, &o, &m, &err), ORION_EINVAL);
  cr_assert_str_eq(err.msg, "load merge: part 2 starts at row 2, expected 1");
  cr_assert_null(m.array);
  release_result(&parts[0]);
  release_result(&parts[1]);
  cr_assert_eq(orion_alloc_used(), 0);
}

/* Loads the data file at dir/rel whole and in nparts equal byte ranges
 * (2 and 3), and checks the merge against the whole load. */
static void check_file_ranges(const char *dir, const char *rel,
                              const orion_load_opts *o) {
  char path[1024], *data;
  orion_load_result want;
  orion_error err;
  uint64_t cuts[2];
  size_t len;
  int n;
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  cr_assert_eq(orion_read_file(path, &data, &len, &err), 0, "%s", err.msg);
  cr_assert_eq(orion_load_buffer(data, len, RNAME, 1, o, &want, &err), 0, "%s",
               err.msg);
  for (n = 2; n <= 3; n++) {
    int i;
    for (i = 1; i < n; i++)
      cuts[i - 1] = (uint64_t)len * (uint64_t)i / (uint64_t)n;
    check_cuts(data, len, o, cuts, n - 1, &want);
  }
  release_result(&want);
  orion_free(data);
  cr_assert_eq(orion_alloc_used(), 0);
}

Test(loader, ranges_movielens_1m) {
  const char *dir = tu_data_dir("movielens-1m/ratings.train.txt.gz");
  orion_load_opts o = opts_for(ORION_FMT_COO);
  check_file_ranges(dir, "movielens-1m/ratings.train.txt.gz", &o);
}

Test(loader, ranges_ucibow_kos) {
  const char *dir = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  o.value_type = ORION_I32;
  check_file_ranges(dir, "uci-bow-kos/docword.kos.txt.gz", &o);
}

/* ------------------------------------------- uci-bow: expansion, truncation */

/* One element per token: (doc, word, j) for j < count, value 0. */
Test(loader, ucibow_expand_tokens) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  const orion_array *a;
  loaded l;
  int64_t i;
  static const int64_t want[][3] = {{0, 0, 0}, {0, 0, 1}, {0, 2, 0},
                                    {1, 1, 0}, {1, 1, 1}, {1, 1, 2},
                                    {1, 1, 3}, {1, 1, 4}, {2, 3, 0}};
  o.expand = 1;
  o.value_type = ORION_I32;
  l = load_ok(ORION_FMT_UCIBOW, "3\n4\n5\n1 1 2\n1 3 1\n2 2 5\n3 4 1\n3 1 0\n",
              &o);
  a = l.res.array;
  cr_assert_eq(a->ndims, 3);
  cr_assert_eq(a->type, ORION_I32);
  cr_assert_eq(a->nnz, 9);
  cr_expect_eq(a->dims[0], 3);
  cr_expect_eq(a->dims[1], 4);
  cr_expect_eq(a->dims[2], 5);
  for (i = 0; i < 9; i++) {
    cr_expect_eq(a->keys[3 * i], want[i][0], "element %lld", (long long)i);
    cr_expect_eq(a->keys[3 * i + 1], want[i][1], "element %lld", (long long)i);
    cr_expect_eq(a->keys[3 * i + 2], want[i][2], "element %lld", (long long)i);
    cr_expect_eq(((const int32_t *)a->values)[i], 0);
  }
  done(&l);
  /* No tokens at all: 3-D, third dim 1. */
  l = load_ok(ORION_FMT_UCIBOW, "2\n2\n0\n", &o);
  cr_assert_eq(l.res.array->ndims, 3);
  cr_assert_eq(l.res.array->nnz, 0);
  cr_expect_eq(l.res.array->dims[2], 1);
  done(&l);
  /* Ranges ignore expand: the parts stay 2-D, and orion_load_expand on the
   * merged result gives what a whole load gives. */
  {
    static const char text[] = "3\n4\n3\n1 1 2\n2 2 1\n3 4 3\n";
    orion_load_result parts[2], m;
    orion_error err;
    size_t len = sizeof text - 1;
    cr_assert_eq(orion_load_buffer_range(text, len, RNAME, 0, len / 2, &o,
                                         &parts[0], &err), 0, "%s", err.msg);
    cr_assert_eq(orion_load_buffer_range(text, len, RNAME, len / 2, len, &o,
                                         &parts[1], &err), 0, "%s", err.msg);
    cr_assert_eq(parts[0].array->ndims, 2);
    cr_assert_eq(orion_load_merge(parts, 2, &o, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(orion_load_expand(&m, ORION_F64, RNAME, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(m.array->ndims, 3);
    cr_assert_eq(m.array->nnz, 6);
    cr_expect_eq(m.array->dims[2], 3);
    cr_expect_eq(m.array->keys[3 * 5 + 2], 2);
    release_result(&parts[0]);
    release_result(&parts[1]);
    release_result(&m);
    cr_assert_eq(orion_alloc_used(), 0);
  }
}

Test(loader, ucibow_expand_errors) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  orion_load_result r;
  orion_error err;
  loaded l;
  o.expand = 1;
  o.value_type = ORION_F64; /* counts are still read as integers */
  expect_line_error(ORION_FMT_UCIBOW, &o, "2\n2\n2\n1 1 2\n2 2 1.5\n",
                    ORION_EPARSE, 5, "field 3 is not an integer", "2 2 1.5");
  /* A negative count parses but cannot be expanded. */
  l = load_text(".txt", "2\n2\n2\n1 1 2\n2 1 -3\n", &o);
  cr_assert_eq(l.rc, ORION_EPARSE);
  cr_assert_null(l.res.array);
  cr_assert(strstr(l.err.msg, l.path) != NULL, "%s", l.err.msg);
  cr_assert(strstr(l.err.msg, "document 2, word 1: count -3 is not a "
                              "non-negative integer") != NULL,
            "%s", l.err.msg);
  done(&l);
  /* orion_load_expand wants a 2-D array; on failure res is untouched. */
  memset(&r, 0, sizeof r);
  cr_assert_eq(orion_load_expand(&r, ORION_I32, "x", &err), ORION_EDIMS);
  cr_assert(strstr(err.msg, "x: token expansion needs") != NULL, "%s",
            err.msg);
  cr_assert_eq(orion_alloc_used(), 0);
}

/* A docword file cut at any byte is an error naming the file and a line,
 * never a silent partial load: the cut leaves a bad line, too few data
 * lines, an incomplete header, or a last line without its line end. */
static const char kos_like[] = "4\n5\n6\n1 1 2\n1 3 13\n2 2 5\n3 4 1\n"
                               "3 5 27\n4 1 108\n";

static void expect_cut_error(const char *path, size_t cut, int rc,
                             const orion_error *err) {
  char prefix[1100];
  cr_assert_eq(rc, ORION_EPARSE, "cut at %zu: rc %d: %s", cut, rc, err->msg);
  snprintf(prefix, sizeof prefix, "%s:", path);
  cr_assert(strncmp(err->msg, prefix, strlen(prefix)) == 0 &&
                err->msg[strlen(prefix)] >= '1' &&
                err->msg[strlen(prefix)] <= '9',
            "cut at %zu: no FILE:LINE in \"%s\"", cut, err->msg);
}

Test(loader, ucibow_truncated_plain) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  size_t len = sizeof kos_like - 1, cut;
  o.value_type = ORION_I32;
  for (cut = 0; cut < len; cut++) {
    char text[sizeof kos_like];
    loaded l;
    memcpy(text, kos_like, cut);
    text[cut] = '\0';
    l = load_text(".txt", text, &o);
    expect_cut_error(l.path, cut, l.rc, &l.err);
    cr_assert_null(l.res.array);
    done(&l);
    o.expand = !o.expand; /* both ways */
  }
  /* The whole file loads. */
  {
    loaded l = load_ok(ORION_FMT_UCIBOW, kos_like, &o);
    cr_assert_eq(l.res.array->nnz, 6);
    done(&l);
  }
  /* Specific messages. */
  expect_line_error(ORION_FMT_UCIBOW, NULL, "4\n5\n6\n1 1 2\n1 3 13\n2 2",
                    ORION_EPARSE, 6, "expected 3 fields, found 2", "2 2");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "4\n5\n2\n1 1 2\n1 3 1",
                    ORION_EPARSE, 5,
                    "the last line has no line end; is the input truncated?",
                    "1 3 1");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "4\n5\n3\n1 1 2\n1 3 1\n",
                    ORION_EPARSE, 5,
                    "the input ends after 2 of NNZ = 3 data lines (from the "
                    "header); is it truncated?",
                    "1 3 1");
  expect_line_error(ORION_FMT_UCIBOW, NULL, "4\n5", ORION_EPARSE, 2,
                    "incomplete uci-bow header: expected D, W and NNZ lines, "
                    "found 2",
                    "5");
  /* Trailing blank space without a line end is not a truncation. */
  {
    loaded l = load_ok(ORION_FMT_UCIBOW, "4\n5\n1\n1 1 2\n  ", NULL);
    cr_assert_eq(l.res.array->nnz, 1);
    done(&l);
  }
}

Test(loader, ucibow_truncated_gzip) {
  orion_load_opts o = opts_for(ORION_FMT_UCIBOW);
  size_t len = sizeof kos_like - 1, cut;
  orion_error err;
  orion_load_result res;
  o.expand = 1;
  /* A gzip stream of a file cut short (complete gzip, short text). */
  for (cut = 1; cut < len; cut += 3) {
    char *p = write_gz(kos_like, cut);
    int rc = orion_load_file(p, &o, &res, &err);
    expect_cut_error(p, cut, rc, &err);
    cr_assert_null(res.array);
    unlink(p);
    free(p);
  }
  /* A gzip stream cut short itself: the reader names the file. */
  {
    size_t n = 20000, i, tl = 0;
    char *text = malloc(n * 24), *p, *raw;
    long size;
    FILE *f;
    tl = (size_t)sprintf(text, "%zu\n10\n%zu\n", n, n);
    for (i = 0; i < n; i++)
      tl += (size_t)sprintf(text + tl, "%zu %zu %zu\n", i + 1, i % 10 + 1,
                            i % 5 + 1);
    p = write_gz(text, tl);
    cr_assert_eq(orion_load_file(p, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.array->nnz, (int64_t)(n / 5 * 15));
    orion_array_release(res.array);
    size = file_size(p);
    raw = malloc((size_t)size);
    f = fopen(p, "rb");
    cr_assert_eq(fread(raw, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    f = fopen(p, "wb");
    fwrite(raw, 1, (size_t)(size * 2 / 3), f);
    fclose(f);
    cr_assert_eq(orion_load_file(p, &o, &res, &err), ORION_ETRUNC, "%s",
                 err.msg);
    cr_assert_null(res.array);
    cr_assert(strstr(err.msg, p) != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "truncated") != NULL, "%s", err.msg);
    unlink(p);
    free(p);
    free(raw);
    free(text);
  }
  cr_assert_eq(orion_alloc_used(), 0);
}

/* ------------------------------------------------------------------------
 * A LOADED part from an executor is input from a peer: its keys are
 * checked against its dimensions and the load's before anything is merged
 * (issue 18: a key out of range once wrote outside the merged array).
 * ---------------------------------------------------------------------- */

static orion_array *part_of(const int64_t *keys, int64_t nnz, int64_t d0,
                            int64_t d1, const orion_load_opts *o, char *why) {
  static const double vals[3] = {1, 2, 3};
  orion_msg_loaded_array m;
  memset(&m, 0, sizeof m);
  m.type = ORION_F64;
  m.ndims = 2;
  m.dims[0] = d0;
  m.dims[1] = d1;
  m.nnz = nnz;
  m.keys = (const char *)keys;
  m.keys_len = (size_t)nnz * 2 * sizeof(int64_t);
  m.values = (const char *)vals;
  m.values_len = (size_t)nnz * sizeof(double);
  return orion_pload_part(&m, o, why, 160);
}

Test(loader, peer_part_keys_are_checked) {
  static const int64_t good[6] = {0, 0, 5, 39, 9, 1};
  static const int64_t high[6] = {0, 0, 5, 40, 9, 1};
  static const int64_t neg[6] = {0, 0, -1, 3, 9, 1};
  static const int64_t huge[6] = {0, 0, 1, 1, INT64_MAX / 2, 1};
  orion_load_opts o;
  orion_array *a;
  char why[160];
  size_t before = orion_alloc_used();
  a = part_of(good, 3, 10, 40, NULL, why);
  cr_assert_not_null(a, "%s", why);
  cr_assert_eq(a->nnz, 3);
  cr_assert_eq(a->keys[3], 39);
  orion_array_release(a);
  cr_assert_null(part_of(high, 3, 10, 40, NULL, why));
  cr_assert_str_eq(why, "whose element 2 has key 41 in dimension 2, outside "
                        "1..40");
  cr_assert_null(part_of(neg, 3, 10, 40, NULL, why));
  cr_assert_str_eq(why, "whose element 2 has key 0 in dimension 1, outside "
                        "1..10");
  cr_assert_null(part_of(huge, 3, 10, 40, NULL, why));
  cr_assert_str_eq(why, "whose element 3 has key 4611686018427387904 in "
                        "dimension 1, outside 1..10");
  cr_assert_null(part_of(good, 3, -4, 40, NULL, why));
  cr_assert_str_eq(why, "with dimension 1 of -4");
  /* Inside the part's own dimensions but outside the load's. */
  orion_load_opts_init(&o);
  o.have_dims = 1;
  o.dims[0] = 6;
  o.dims[1] = 40;
  cr_assert_null(part_of(good, 3, 10, 40, &o, why));
  cr_assert_str_eq(why, "whose element 3 has key 10 in dimension 1, outside "
                        "1..6");
  cr_assert_eq(orion_alloc_used(), before);
}

/* orion_map_file maps a plain file (NUL after the data, as
 * orion_read_file's), and reads instead a gzip file and a plain one whose
 * size is a whole number of pages (no room for the NUL in the mapping);
 * orion_load_file gives the same elements either way. */
Test(loader, map_file_maps_plain_files_and_reads_the_others) {
  long page = sysconf(_SC_PAGESIZE);
  char *text = malloc((size_t)page + 1), *data;
  size_t len;
  int k, mapped;
  orion_error err;
  cr_assert_not_null(text);
  /* "1 2 3.5\n" lines, padded with a comment to exactly one page */
  memset(text, ' ', (size_t)page);
  memcpy(text, "1 2 3.5\n2 1 4\n#", 15);
  text[page - 1] = '\n';
  text[page] = '\0';
  for (k = 0; k < 2; k++) {
    char *path = tu_write_temp(".txt", k == 0 ? text : "1 2 3.5\n2 1 4\n");
    orion_load_opts o;
    orion_load_result res;
    orion_error_clear(&err);
    cr_assert_eq(orion_map_file(path, &data, &len, &mapped, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(mapped, k == 1, "a %s file: mapped %d",
                 k == 0 ? "page-sized" : "short", mapped);
    cr_expect_eq(len, k == 0 ? (size_t)page : 14u);
    cr_expect_eq(data[len], '\0');
    cr_expect_eq(strncmp(data, "1 2 3.5\n2 1 4\n", 14), 0);
    orion_unmap_file(data, len, mapped);
    orion_load_opts_init(&o);
    cr_assert_eq(orion_load_file(path, &o, &res, &err), 0, "%s", err.msg);
    cr_expect_eq(res.array->nnz, 2);
    orion_array_release(res.array);
    unlink(path);
    free(path);
  }
  {
    char path[] = "/tmp/orion-map-XXXXXX";
    int fd = mkstemp(path);
    gzFile gz;
    cr_assert_geq(fd, 0);
    gz = gzdopen(fd, "wb");
    cr_assert_not_null(gz);
    gzputs(gz, "1 2 3.5\n");
    gzclose(gz);
    orion_error_clear(&err);
    cr_assert_eq(orion_map_file(path, &data, &len, &mapped, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(mapped, 0);
    cr_expect_str_eq(data, "1 2 3.5\n");
    orion_unmap_file(data, len, mapped);
    unlink(path);
  }
  orion_error_clear(&err);
  cr_expect_lt(orion_map_file("/nonexistent/x", &data, &len, &mapped, &err),
               0);
  cr_expect(strstr(err.msg, "cannot open /nonexistent/x") != NULL, "%s",
            err.msg);
  free(text);
}
