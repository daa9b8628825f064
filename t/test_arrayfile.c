/* Tests of dsm/arrayfile: binary and text round trips, the documented byte
 * layout, and rejection of damaged, truncated, foreign and future files. */
#include "t/testutil.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <zlib.h>

#include "dsm/array.h"
#include "dsm/arrayfile.h"
#include "util/alloc.h"

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

static double from_bits64(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

static float from_bits32(uint32_t b) {
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* Element i of a fill pattern that visits the awkward values first. */
static void special_value(orion_type t, int64_t i, void *out) {
  static const int NSPECIAL = 14;
  int64_t k = i % (NSPECIAL + 7);
  switch (t) {
  case ORION_F64: {
    const double s[] = {NAN,
                        -NAN,
                        INFINITY,
                        -INFINITY,
                        0.0,
                        -0.0,
                        DBL_MAX,
                        -DBL_MAX,
                        DBL_MIN,
                        DBL_TRUE_MIN,
                        0.1,
                        1.0 / 3.0,
                        -2.5e-300,
                        from_bits64(0x7ff0000000000123ull)};
    double v = k < NSPECIAL ? s[k] : (double)i * 1.1 - 7.3;
    memcpy(out, &v, sizeof v);
    break;
  }
  case ORION_F32: {
    const float s[] = {NAN,
                       -NAN,
                       INFINITY,
                       -INFINITY,
                       0.0f,
                       -0.0f,
                       FLT_MAX,
                       -FLT_MAX,
                       FLT_MIN,
                       FLT_TRUE_MIN,
                       0.1f,
                       1.0f / 3.0f,
                       -2.5e-30f,
                       from_bits32(0x7fc00123u)};
    float v = k < NSPECIAL ? s[k] : (float)i * 1.1f - 7.3f;
    memcpy(out, &v, sizeof v);
    break;
  }
  case ORION_I32: {
    const int32_t s[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1,
                         INT32_MAX - 1};
    int32_t v = k < 7 ? s[k] : (int32_t)(i * 7919 - 40000);
    memcpy(out, &v, sizeof v);
    break;
  }
  case ORION_I64: {
    const int64_t s[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1,
                         INT64_MAX - 1, (int64_t)1 << 53,
                         ((int64_t)1 << 53) + 1};
    int64_t v = k < 9 ? s[k] : i * 1000003 - 5000000;
    memcpy(out, &v, sizeof v);
    break;
  }
  }
}

static const int64_t DENSE_DIMS[3][3] = {{15, 0, 0}, {4, 5, 0}, {2, 3, 4}};
static const int64_t SPARSE_DIMS[3][3] = {{100, 0, 0}, {30, 40, 0}, {5, 6, 7}};

static orion_array *make_dense(int ndims, orion_type t) {
  orion_error err;
  orion_array *a = orion_array_new_dense(ndims, DENSE_DIMS[ndims - 1], t, &err);
  int64_t i;
  cr_assert(a != NULL, "%s", err.msg);
  for (i = 0; i < a->nnz; i++)
    special_value(t, i, (char *)a->values + i * (int64_t)orion_type_size(t));
  return a;
}

/* A sparse array with unsorted (and some repeated) keys, dims larger than
 * the largest key. */
static orion_array *make_sparse(int ndims, orion_type t, int n) {
  orion_error err;
  orion_array *a = orion_array_new_sparse(ndims, t, &err);
  uint64_t x = 88172645463325252ull;
  int64_t keys[3];
  unsigned char v[8];
  int i, d;
  cr_assert(a != NULL, "%s", err.msg);
  for (i = 0; i < n; i++) {
    for (d = 0; d < ndims; d++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      keys[d] = (int64_t)(x % (uint64_t)(SPARSE_DIMS[ndims - 1][d] - 1));
    }
    special_value(t, i, v);
    cr_assert(orion_array_push(a, keys, v) == 0);
  }
  if (n > 3) /* a repeated key */
    cr_assert(orion_array_push(a, a->keys, v) == 0);
  cr_assert(orion_array_set_dims(a, SPARSE_DIMS[ndims - 1], &err) == 0, "%s",
            err.msg);
  return a;
}

/* Asserts b is a exactly: bit for bit when `bitwise`, else every value equal
 * with NaN equal to a NaN of the same sign (text loses NaN payloads). */
static void assert_same(const orion_array *a, const orion_array *b,
                        int bitwise) {
  size_t es = orion_type_size(a->type);
  int64_t i;
  cr_assert_eq(b->refs, 1);
  cr_assert_eq(a->type, b->type);
  cr_assert_eq(a->sparse, b->sparse);
  cr_assert_eq(a->ndims, b->ndims);
  cr_assert_eq(a->nnz, b->nnz);
  cr_assert(memcmp(a->dims, b->dims, (size_t)a->ndims * 8) == 0);
  if (a->sparse && a->nnz > 0)
    cr_assert(memcmp(a->keys, b->keys, (size_t)(a->nnz * a->ndims) * 8) == 0,
              "keys differ");
  if (!a->sparse)
    for (i = 0; i < a->ndims; i++)
      cr_assert_eq(a->strides[i], b->strides[i]);
  for (i = 0; i < a->nnz; i++) {
    const char *x = (const char *)a->values + i * (int64_t)es;
    const char *y = (const char *)b->values + i * (int64_t)es;
    if (!bitwise && a->type == ORION_F64 && isnan(*(const double *)x)) {
      const double dx = *(const double *)x, dy = *(const double *)y;
      cr_assert(isnan(dy), "element %" PRId64, i);
      cr_assert_eq(!!signbit(dx), !!signbit(dy));
    } else if (!bitwise && a->type == ORION_F32 && isnan(*(const float *)x)) {
      const float fx = *(const float *)x, fy = *(const float *)y;
      cr_assert(isnan(fy), "element %" PRId64, i);
      cr_assert_eq(!!signbit(fx), !!signbit(fy));
    } else {
      cr_assert(memcmp(x, y, es) == 0, "%s element %" PRId64 " differs",
                orion_type_name(a->type), i);
    }
  }
}

static void round_trip(orion_array *a, int text) {
  char *path = tu_temp_path(text ? ".txt" : ".oa");
  orion_array *b = NULL;
  orion_error err;
  int rc = text ? orion_array_save_text(a, path, &err)
                : orion_array_save(a, path, &err);
  cr_assert_eq(rc, 0, "save: %s", err.msg);
  rc = orion_array_load(path, &b, &err);
  cr_assert_eq(rc, 0, "load: %s", err.msg);
  assert_same(a, b, !text);
  orion_array_release(b);
  unlink(path);
  free(path);
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  cr_assert(f != NULL);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

static void spit(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  cr_assert(f != NULL);
  cr_assert_eq(fwrite(buf, 1, len, f), len);
  cr_assert_eq(fclose(f), 0);
}

static void le32(unsigned char *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void le64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes a binary file of the given header followed by `payload` zero
 * bytes and a correct CRC; returns its length. */
static size_t write_crafted(const char *path, uint32_t version, uint32_t type,
                            uint32_t flags, uint32_t ndims,
                            const int64_t *dims, int64_t nnz, size_t payload) {
  size_t len = 24 + 8 * (size_t)ndims + 8 + payload + 4, i;
  unsigned char *b = calloc(1, len);
  memcpy(b, "ORIONARR", 8);
  le32(b + 8, version);
  le32(b + 12, type);
  le32(b + 16, flags);
  le32(b + 20, ndims);
  for (i = 0; i < ndims; i++)
    le64(b + 24 + 8 * i, (uint64_t)dims[i]);
  le64(b + 24 + 8 * ndims, (uint64_t)nnz);
  le32(b + len - 4, (uint32_t)crc32(0L, b, (uInt)(len - 4)));
  spit(path, b, len);
  free(b);
  return len;
}

/* Loads path expecting failure with `code` and, when msg is not NULL, that
 * exact message; checks nothing leaked and *out stayed NULL. */
static void expect_load_error(const char *path, int code, const char *msg) {
  orion_array *b = (orion_array *)&b; /* must be reset to NULL */
  orion_error err;
  size_t before = orion_alloc_used();
  int rc;
  orion_error_clear(&err);
  rc = orion_array_load(path, &b, &err);
  cr_assert_eq(rc, code, "expected %s, got %d (%s): %s",
               orion_strerror(code), rc, orion_strerror(rc), err.msg);
  cr_assert_eq(err.code, code);
  cr_assert_null(b);
  if (msg != NULL)
    cr_assert_str_eq(err.msg, msg);
  cr_assert_eq(orion_alloc_used(), before, "load leaked on failure");
}

static char *saved_binary(size_t *len) {
  char *path = tu_temp_path(".oa");
  orion_array *a = make_sparse(2, ORION_F64, 20);
  orion_error err;
  cr_assert_eq(orion_array_save(a, path, &err), 0, "%s", err.msg);
  orion_array_release(a);
  if (len != NULL)
    free(slurp(path, len));
  return path;
}

static const orion_type ALL_TYPES[] = {ORION_F32, ORION_F64, ORION_I32,
                                       ORION_I64};

/* ------------------------------------------------------------------------
 * Round trips.
 * ---------------------------------------------------------------------- */

Test(arrayfile, binary_round_trip_dense) {
  int t, nd;
  for (t = 0; t < 4; t++)
    for (nd = 1; nd <= 3; nd++) {
      orion_array *a = make_dense(nd, ALL_TYPES[t]);
      round_trip(a, 0);
      orion_array_release(a);
    }
}

Test(arrayfile, binary_round_trip_sparse) {
  int t, nd;
  for (t = 0; t < 4; t++)
    for (nd = 1; nd <= 3; nd++) {
      orion_array *a = make_sparse(nd, ALL_TYPES[t], 60);
      round_trip(a, 0);
      orion_array_release(a);
    }
}

Test(arrayfile, text_round_trip_dense) {
  int t, nd;
  for (t = 0; t < 4; t++)
    for (nd = 1; nd <= 3; nd++) {
      orion_array *a = make_dense(nd, ALL_TYPES[t]);
      round_trip(a, 1);
      orion_array_release(a);
    }
}

Test(arrayfile, text_round_trip_sparse) {
  int t, nd;
  for (t = 0; t < 4; t++)
    for (nd = 1; nd <= 3; nd++) {
      orion_array *a = make_sparse(nd, ALL_TYPES[t], 60);
      round_trip(a, 1);
      orion_array_release(a);
    }
}

Test(arrayfile, round_trip_empty_sparse) {
  orion_error err;
  const int64_t dims[2] = {3, 4};
  orion_array *a = orion_array_new_sparse(2, ORION_I32, &err);
  round_trip(a, 0); /* dims 0 0 */
  round_trip(a, 1);
  cr_assert_eq(orion_array_set_dims(a, dims, &err), 0);
  round_trip(a, 0);
  round_trip(a, 1);
  orion_array_release(a);
}

Test(arrayfile, round_trip_large_dense) {
  /* More than one internal buffer's worth of values. */
  const int64_t dims[2] = {300, 257};
  orion_error err;
  orion_array *a = orion_array_new_dense(2, dims, ORION_F64, &err);
  int64_t i;
  for (i = 0; i < a->nnz; i++)
    ((double *)a->values)[i] = sin((double)i) * 1e10;
  round_trip(a, 0);
  round_trip(a, 1);
  orion_array_release(a);
}

/* ------------------------------------------------------------------------
 * The documented layouts.
 * ---------------------------------------------------------------------- */

Test(arrayfile, binary_layout) {
  char *path = tu_temp_path(".oa");
  orion_error err;
  orion_array *a = orion_array_new_sparse(2, ORION_I32, &err);
  const int64_t k1[2] = {0, 2}, k2[2] = {4, 1}, dims[2] = {5, 3};
  const int32_t v1 = -2, v2 = 0x01020304;
  unsigned char want[24 + 16 + 8 + 32 + 8 + 4];
  unsigned char *got;
  size_t len;
  cr_assert_eq(orion_array_push(a, k1, &v1), 0);
  cr_assert_eq(orion_array_push(a, k2, &v2), 0);
  cr_assert_eq(orion_array_set_dims(a, dims, &err), 0);
  cr_assert_eq(orion_array_save(a, path, &err), 0, "%s", err.msg);
  memcpy(want, "ORIONARR", 8);
  le32(want + 8, 1);
  le32(want + 12, ORION_I32);
  le32(want + 16, 1);
  le32(want + 20, 2);
  le64(want + 24, 5);
  le64(want + 32, 3);
  le64(want + 40, 2);
  le64(want + 48, 0);
  le64(want + 56, 2);
  le64(want + 64, 4);
  le64(want + 72, 1);
  le32(want + 80, (uint32_t)v1);
  le32(want + 84, (uint32_t)v2);
  le32(want + 88, (uint32_t)crc32(0L, want, 88));
  got = slurp(path, &len);
  cr_assert_eq(len, sizeof want);
  cr_assert(memcmp(got, want, len) == 0, "binary layout differs");
  free(got);
  orion_array_release(a);
  unlink(path);
  free(path);
}

Test(arrayfile, text_layout) {
  char *path = tu_temp_path(".txt");
  orion_error err;
  const int64_t dims[2] = {2, 3}, sdims[2] = {10, 20}, k[2] = {9, 0};
  const double v = 0.1;
  orion_array *a = orion_array_new_dense(2, dims, ORION_I64, &err);
  orion_array *s = orion_array_new_sparse(2, ORION_F64, &err);
  unsigned char *got;
  size_t len;
  int i;
  for (i = 0; i < 6; i++)
    ((int64_t *)a->values)[i] = i == 5 ? INT64_MIN : i * 10;
  cr_assert_eq(orion_array_save_text(a, path, &err), 0, "%s", err.msg);
  got = slurp(path, &len);
  cr_assert_str_eq((char *)got, "# orion-c array i64 dense dims 2 3\n"
                                "1 1 0\n1 2 10\n1 3 20\n"
                                "2 1 30\n2 2 40\n2 3 -9223372036854775808\n");
  free(got);
  cr_assert_eq(orion_array_push(s, k, &v), 0);
  cr_assert_eq(orion_array_set_dims(s, sdims, &err), 0);
  cr_assert_eq(orion_array_save_text(s, path, &err), 0, "%s", err.msg);
  got = slurp(path, &len);
  cr_assert_str_eq((char *)got, "# orion-c array f64 sparse dims 10 20\n"
                                "10 1 0.10000000000000001\n");
  free(got);
  orion_array_release(a);
  orion_array_release(s);
  unlink(path);
  free(path);
}

/* ------------------------------------------------------------------------
 * Damaged and foreign binary files.
 * ---------------------------------------------------------------------- */

Test(arrayfile, corrupted_payload_fails_checksum) {
  size_t len;
  char *path = saved_binary(&len);
  unsigned char *b = slurp(path, &len);
  char msg[1200];
  b[len - 4 - 3] ^= 0x10; /* a bit of the last value */
  spit(path, b, len);
  snprintf(msg, sizeof msg, "%s: checksum mismatch (file corrupted)", path);
  expect_load_error(path, ORION_ECHECKSUM, msg);
  free(b);
  unlink(path);
  free(path);
}

Test(arrayfile, every_single_byte_corruption_is_rejected) {
  size_t len, i;
  char *path = saved_binary(&len);
  unsigned char *orig = slurp(path, &len);
  for (i = 0; i < len; i++) {
    orion_array *b = NULL;
    orion_error err;
    int rc;
    orig[i] ^= 0xff;
    spit(path, orig, len);
    orig[i] ^= 0xff;
    rc = orion_array_load(path, &b, &err);
    cr_assert_lt(rc, 0, "byte %zu flipped but the file loaded", i);
    cr_assert_null(b);
    if (i >= 48) /* past the header: the checksum catches it */
      cr_assert_eq(rc, ORION_ECHECKSUM, "byte %zu: %s", i, err.msg);
  }
  free(orig);
  unlink(path);
  free(path);
}

Test(arrayfile, truncated_file) {
  size_t len, cut;
  char *path = saved_binary(&len);
  unsigned char *b = slurp(path, &len);
  char msg[1200];
  spit(path, b, len - 5);
  snprintf(msg, sizeof msg, "%s: truncated: expected %zu bytes, file has %zu",
           path, len, len - 5);
  expect_load_error(path, ORION_ETRUNC, msg);
  /* Every shorter prefix fails too (an empty file is simply not ours). */
  for (cut = 1; cut < len; cut++) {
    spit(path, b, cut);
    expect_load_error(path, ORION_ETRUNC, NULL);
  }
  spit(path, b, 0);
  expect_load_error(path, ORION_EBADFILE, NULL);
  /* Extra bytes after the trailer are not silently ignored. */
  {
    unsigned char *longer = calloc(1, len + 3);
    memcpy(longer, b, len);
    spit(path, longer, len + 3);
    expect_load_error(path, ORION_EBADFILE, NULL);
    free(longer);
  }
  free(b);
  unlink(path);
  free(path);
}

Test(arrayfile, wrong_magic) {
  size_t len;
  char *path = saved_binary(&len);
  unsigned char *b = slurp(path, &len);
  char msg[1200];
  memcpy(b, "ORIONARX", 8);
  spit(path, b, len);
  snprintf(msg, sizeof msg, "%s: not an Orion-C array file", path);
  expect_load_error(path, ORION_EBADFILE, msg);
  spit(path, "hello, world\n", 13);
  expect_load_error(path, ORION_EBADFILE, msg);
  free(b);
  unlink(path);
  free(path);
}

Test(arrayfile, future_version) {
  char *path = tu_temp_path(".oa");
  const int64_t dims[1] = {2};
  orion_error err;
  orion_array *b = NULL;
  write_crafted(path, 2, ORION_F64, 0, 1, dims, 2, 16);
  cr_assert_eq(orion_array_load(path, &b, &err), ORION_EVERSION);
  cr_assert(strstr(err.msg, path) != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "version 2") != NULL, "%s", err.msg);
  /* The same file as version 1 loads. */
  write_crafted(path, 1, ORION_F64, 0, 1, dims, 2, 16);
  cr_assert_eq(orion_array_load(path, &b, &err), 0, "%s", err.msg);
  cr_assert_eq(((double *)b->values)[1], 0.0);
  orion_array_release(b);
  unlink(path);
  free(path);
}

Test(arrayfile, huge_nnz_on_small_file) {
  char *path = tu_temp_path(".oa");
  const int64_t dims[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
  const int64_t dense_dims[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
  const int64_t small[2] = {3, 3};
  char msg[1200];
  size_t len;
  /* Sparse, 2^40 elements claimed, a 64-byte file: truncated, no
   * allocation from the claimed count. */
  len = write_crafted(path, 1, ORION_F64, 1, 2, dims, (int64_t)1 << 40, 16);
  snprintf(msg, sizeof msg,
           "%s: truncated: expected %" PRIu64 " bytes, file has %zu", path,
           (uint64_t)48 + ((uint64_t)1 << 40) * 24 + 4, len);
  expect_load_error(path, ORION_ETRUNC, msg);
  /* A count whose byte size overflows. */
  write_crafted(path, 1, ORION_F64, 1, 2, dims, INT64_MAX, 16);
  expect_load_error(path, ORION_EBADFILE, NULL);
  /* A negative count. */
  write_crafted(path, 1, ORION_F64, 1, 2, small, -1, 16);
  expect_load_error(path, ORION_EBADFILE, NULL);
  /* Dense: 2^40 positions, consistent nnz, small file. */
  write_crafted(path, 1, ORION_F64, 0, 2, dense_dims, (int64_t)1 << 40, 16);
  expect_load_error(path, ORION_ETRUNC, NULL);
  /* Dense dims whose product overflows, and nnz disagreeing with dims. */
  write_crafted(path, 1, ORION_F64, 0, 2, dims, 0, 16);
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 0, 2, small, 2, 16);
  expect_load_error(path, ORION_EBADFILE, NULL);
  unlink(path);
  free(path);
}

Test(arrayfile, bad_header_fields) {
  char *path = tu_temp_path(".oa");
  const int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t zero[1] = {0}, neg[1] = {-4}, one[1] = {1};
  write_crafted(path, 1, 4, 0, 1, one, 1, 8); /* unknown type */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 2, 1, one, 1, 8); /* unknown flag */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 0, 0, dims, 1, 8); /* 0 dims */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 0, 9, dims, 1, 8); /* 9 dims */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 0, 1, zero, 0, 0); /* dense dim 0 */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 1, 1, neg, 0, 0); /* negative dim */
  expect_load_error(path, ORION_EBADFILE, NULL);
  write_crafted(path, 1, ORION_F64, 1, 1, zero, 1, 16); /* key cannot fit */
  expect_load_error(path, ORION_EBADFILE, NULL);
  unlink(path);
  free(path);
}

Test(arrayfile, sparse_key_out_of_range_with_valid_crc) {
  char *path = tu_temp_path(".oa");
  const int64_t dims[1] = {4};
  unsigned char *b;
  size_t len;
  write_crafted(path, 1, ORION_I64, 1, 1, dims, 1, 16);
  b = slurp(path, &len);
  le64(b + 40, 4); /* key 4 (0-based) in a dimension of size 4 */
  le32(b + len - 4, (uint32_t)crc32(0L, b, (uInt)(len - 4)));
  spit(path, b, len);
  expect_load_error(path, ORION_EBADFILE, NULL);
  free(b);
  unlink(path);
  free(path);
}

Test(arrayfile, missing_file) {
  char *path = tu_temp_path(".oa");
  char msg[1200];
  snprintf(msg, sizeof msg, "cannot open %s: %s", path, strerror(ENOENT));
  expect_load_error(path, -ENOENT, msg);
  free(path);
}

Test(arrayfile, directory_is_not_loaded) {
  char *path = tu_temp_path(".d");
  cr_assert_eq(mkdir(path, 0700), 0);
  expect_load_error(path, -EISDIR, NULL);
  rmdir(path);
  free(path);
}

/* ------------------------------------------------------------------------
 * Atomic saves.
 * ---------------------------------------------------------------------- */

Test(arrayfile, save_replaces_existing_file_atomically) {
  char *path = tu_temp_path(".oa"), tmp[1100];
  orion_array *a = make_dense(2, ORION_F64), *b = make_sparse(3, ORION_I32, 30);
  orion_array *c = NULL;
  orion_error err;
  unsigned char *old_bytes, *seen;
  size_t old_len, seen_len = 0;
  struct stat st_old, st_new;
  FILE *held;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  cr_assert_eq(orion_array_save(a, path, &err), 0, "%s", err.msg);
  old_bytes = slurp(path, &old_len);
  cr_assert_eq(stat(path, &st_old), 0);
  /* A reader that opened the old file keeps seeing all of it. */
  held = fopen(path, "rb");
  cr_assert(held != NULL);
  cr_assert_eq(orion_array_save(b, path, &err), 0, "%s", err.msg);
  cr_assert_eq(stat(path, &st_new), 0);
  cr_assert_neq(st_old.st_ino, st_new.st_ino, "file rewritten in place");
  seen = malloc(old_len + 16);
  seen_len = fread(seen, 1, old_len + 16, held);
  fclose(held);
  cr_assert_eq(seen_len, old_len);
  cr_assert(memcmp(seen, old_bytes, old_len) == 0);
  cr_assert_neq(access(tmp, F_OK), 0, "%s left behind", tmp);
  cr_assert_eq(orion_array_load(path, &c, &err), 0, "%s", err.msg);
  assert_same(b, c, 1);
  orion_array_release(c);
  /* A save that fails (PATH.tmp cannot be created) leaves PATH intact. */
  cr_assert_eq(mkdir(tmp, 0700), 0);
  cr_assert_lt(orion_array_save(a, path, &err), 0);
  cr_assert(strstr(err.msg, tmp) != NULL, "%s", err.msg);
  cr_assert_lt(orion_array_save_text(a, path, &err), 0);
  cr_assert_eq(orion_array_load(path, &c, &err), 0, "%s", err.msg);
  assert_same(b, c, 1);
  orion_array_release(c);
  rmdir(tmp);
  /* Text saves replace the same way. */
  cr_assert_eq(orion_array_save_text(a, path, &err), 0, "%s", err.msg);
  cr_assert_neq(access(tmp, F_OK), 0);
  cr_assert_eq(orion_array_load(path, &c, &err), 0, "%s", err.msg);
  assert_same(a, c, 0);
  orion_array_release(c);
  free(seen);
  free(old_bytes);
  orion_array_release(a);
  orion_array_release(b);
  unlink(path);
  free(path);
}

Test(arrayfile, save_rejects_inconsistent_array) {
  char *path = tu_temp_path(".oa");
  orion_array *a = make_sparse(2, ORION_F32, 10);
  orion_error err;
  a->keys[3] = a->dims[1]; /* one past the end */
  cr_assert_eq(orion_array_save(a, path, &err), ORION_EKEYRANGE);
  cr_assert_eq(orion_array_save_text(a, path, &err), ORION_EKEYRANGE);
  cr_assert_neq(access(path, F_OK), 0, "a file was created");
  orion_array_release(a);
  free(path);
}

/* ------------------------------------------------------------------------
 * Text input.
 * ---------------------------------------------------------------------- */

/* Writes text to a temp file and expects loading it to fail with `code`
 * and a message that starts with the path followed by `where` and, when
 * `quoted` is not NULL, contains it. */
static void expect_text_error(const char *text, int code, const char *where,
                              const char *quoted) {
  char *path = tu_write_temp(".txt", text);
  orion_array *b = NULL;
  orion_error err;
  char want[1200];
  int rc = orion_array_load(path, &b, &err);
  cr_assert_eq(rc, code, "text %s: expected %d, got %d: %s", text, code, rc,
               err.msg);
  cr_assert_null(b);
  snprintf(want, sizeof want, "%s%s", path, where);
  cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message \"%s\"",
            err.msg);
  if (quoted != NULL)
    cr_assert(strstr(err.msg, quoted) != NULL, "message \"%s\"", err.msg);
  unlink(path);
  free(path);
}

Test(arrayfile, text_errors_name_path_line_and_text) {
  const char *h = "# orion-c array f64 sparse dims 3 4\n";
  char buf[512];
  snprintf(buf, sizeof buf, "%s1 1 1.5\n2 x 3\n", h);
  expect_text_error(buf, ORION_EPARSE, ":3: ", "\"2 x 3\"");
  snprintf(buf, sizeof buf, "%s1 1 1.5\n\n2 2\n", h);
  expect_text_error(buf, ORION_EPARSE, ":4: ", "\"2 2\"");
  snprintf(buf, sizeof buf, "%s1 5 1.5\n", h);
  expect_text_error(buf, ORION_EKEYRANGE, ":2: ", "\"1 5 1.5\"");
  snprintf(buf, sizeof buf, "%s0 1 1.5\n", h);
  expect_text_error(buf, ORION_EKEYRANGE, ":2: ", "\"0 1 1.5\"");
  snprintf(buf, sizeof buf, "%s1 1 abc\n", h);
  expect_text_error(buf, ORION_EPARSE, ":2: ", "\"1 1 abc\"");
  snprintf(buf, sizeof buf, "%s1 1 1.5 7\n", h);
  expect_text_error(buf, ORION_EPARSE, ":2: ", "\"1 1 1.5 7\"");
  snprintf(buf, sizeof buf, "%s1 1 1e999\n", h);
  expect_text_error(buf, ORION_EPARSE, ":2: ", "1e999");
  expect_text_error("# orion-c array i32 dense dims 2\n1 2147483648\n2 0\n",
                    ORION_EPARSE, ":2: ", "2147483648");
  expect_text_error("# orion-c array i64 dense dims 2\n1 1.5\n2 0\n",
                    ORION_EPARSE, ":2: ", "1.5");
  expect_text_error("# orion-c array i64 dense dims 2\n"
                    "1 9223372036854775808\n2 0\n",
                    ORION_EPARSE, ":2: ", NULL);
  expect_text_error("# orion-c array c128 dense dims 2\n", ORION_ETYPE, ":1: ",
                    "c128");
  expect_text_error("# orion-c array f64 dense dims 0\n", ORION_EDIMS, ":1: ",
                    NULL);
  expect_text_error("# orion-c array f64 dense dims\n", ORION_EDIMS, ":1: ",
                    NULL);
  expect_text_error("# orion-c array f64 packed dims 2\n", ORION_EPARSE,
                    ":1: ", "packed");
  expect_text_error("# orion-c arrays f64 dense dims 2\n", ORION_EPARSE,
                    ":1: ", NULL);
  expect_text_error("# orion-c array f64 dense dims 2 3\n1 1 0\n1 1 0\n",
                    ORION_EPARSE, ":3: ", "twice");
  expect_text_error("1 1 0\n", ORION_EBADFILE, ": not an Orion-C", NULL);
}

Test(arrayfile, text_dense_must_list_every_element) {
  expect_text_error("# orion-c array f32 dense dims 2 2\n1 1 0\n2 2 0\n1 2 0\n",
                    ORION_ETRUNC, ": dense array lists 3 of its 4",
                    "element 2 1 is missing");
  /* A huge dense header on a small file allocates nothing. */
  expect_text_error("# orion-c array f64 dense dims 1000000 1000000\n1 1 0\n",
                    ORION_ETRUNC, ": truncated", NULL);
}

Test(arrayfile, text_accepts_comments_blank_lines_crlf_any_order) {
  const char *text = "# orion-c array f64 dense dims 2 2\r\n"
                     "# a comment\r\n"
                     "\r\n"
                     "  2 2\t-inf\r\n"
                     "1 2 1e-3\n"
                     "2 1 nan\n"
                     "1 1 +7";
  char *path = tu_write_temp(".txt", text);
  orion_array *b = NULL;
  orion_error err;
  const double *v;
  cr_assert_eq(orion_array_load(path, &b, &err), 0, "%s", err.msg);
  v = b->values;
  cr_assert_eq(v[0], 7.0);
  cr_assert_eq(v[1], 1e-3);
  cr_assert(isnan(v[2]));
  cr_assert(isinf(v[3]) && v[3] < 0);
  orion_array_release(b);
  unlink(path);
  free(path);
}

Test(arrayfile, text_f32_values_round_trip_exactly) {
  /* Runs of consecutive f32 bit patterns (near 0.1, the smallest
   * subnormals, FLT_MAX and 2^24) through %.9g and back. */
  const int64_t dims[1] = {4000};
  orion_error err;
  orion_array *a = orion_array_new_dense(1, dims, ORION_F32, &err);
  uint32_t base[4] = {0x3dcccccdu, 0x00000001u, 0x7f7ffc00u, 0x4b7fff00u};
  int64_t i;
  for (i = 0; i < 4000; i++)
    ((float *)a->values)[i] =
        from_bits32(base[i / 1000] + (uint32_t)(i % 1000));
  round_trip(a, 1);
  orion_array_release(a);
}
