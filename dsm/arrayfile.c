#include "dsm/arrayfile.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/alloc.h"
#include "util/atomic.h"

/* Binary layout (docs/file-format.md): a fixed part of magic, version, type,
 * flags and ndims; then dims[ndims] and nnz; keys; values; CRC-32. */
#define MAGIC_LEN 8
#define FIXED_LEN 24 /* magic + 4 u32 */
#define CRC_LEN 4
#define FLAG_SPARSE 1u
#define FLAG_RAGGED 2u /* with FLAG_SPARSE: a ragged array (dsm/ragged.h) */

/* Text lines longer than this are rejected (a valid line needs < 300). */
#define TEXT_LINE_MAX 4096
/* How much of an offending line error messages quote. */
#define QUOTE_MAX 120

#define CHUNK 8192

/* ------------------------------------------------------------------------
 * Little-endian encoding, independent of the host's byte order.
 * ---------------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static void put_u64(unsigned char *p, uint64_t v) {
  put_u32(p, (uint32_t)v);
  put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) {
  return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* Encodes n items of `size` bytes (4 or 8) from src, bit for bit. */
static void encode_items(unsigned char *dst, const void *src, size_t size,
                         size_t n) {
  const unsigned char *s = src;
  size_t i;
  for (i = 0; i < n; i++) {
    if (size == 4) {
      uint32_t v;
      memcpy(&v, s + i * 4, 4);
      put_u32(dst + i * 4, v);
    } else {
      uint64_t v;
      memcpy(&v, s + i * 8, 8);
      put_u64(dst + i * 8, v);
    }
  }
}

static void decode_items(void *dst, const unsigned char *src, size_t size,
                         size_t n) {
  unsigned char *d = dst;
  size_t i;
  for (i = 0; i < n; i++) {
    if (size == 4) {
      uint32_t v = get_u32(src + i * 4);
      memcpy(d + i * 4, &v, 4);
    } else {
      uint64_t v = get_u64(src + i * 8);
      memcpy(d + i * 8, &v, 8);
    }
  }
}

/* ------------------------------------------------------------------------
 * Numbers in text always use the C locale ('.' as decimal point), whatever
 * setlocale the embedding program called.
 * ---------------------------------------------------------------------- */

typedef struct {
  locale_t c;
  locale_t old;
} c_numeric;

static void c_numeric_enter(c_numeric *s) {
  s->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  s->old = s->c != (locale_t)0 ? uselocale(s->c) : (locale_t)0;
}

static void c_numeric_leave(c_numeric *s) {
  if (s->c != (locale_t)0) {
    uselocale(s->old);
    freelocale(s->c);
  }
}

/* ------------------------------------------------------------------------
 * Saving.
 * ---------------------------------------------------------------------- */

/* Checks that `a` is a consistent array worth writing. */
static int check_array(const orion_array *a, const char *path,
                       orion_error *err) {
  int64_t total, e;
  int d;
  if (a == NULL || path == NULL)
    return orion_error_set(err, ORION_EINVAL, "cannot save: %s is NULL",
                           a == NULL ? "the array" : "the path");
  if ((unsigned)a->type >= ORION_NTYPES)
    return orion_error_set(err, ORION_ETYPE,
                           "cannot save %s: unknown element type %d", path,
                           (int)a->type);
  if (a->ndims < 1 || a->ndims > ORION_MAX_DIMS)
    return orion_error_set(err, ORION_EDIMS,
                           "cannot save %s: an array has 1 to %d dimensions, "
                           "not %d",
                           path, ORION_MAX_DIMS, a->ndims);
  if (!a->sparse) {
    if (orion_key_strides(a->ndims, a->dims, NULL, &total) != 0 ||
        total != a->nnz || a->values == NULL)
      return orion_error_set(err, ORION_EDIMS,
                             "cannot save %s: inconsistent dense array", path);
    return 0;
  }
  for (d = 0; d < a->ndims; d++)
    if (a->dims[d] < 0)
      return orion_error_set(err, ORION_EDIMS,
                             "cannot save %s: dimension %d is negative", path,
                             d + 1);
  if (a->nnz < 0 || (a->nnz > 0 && (a->keys == NULL || a->values == NULL)))
    return orion_error_set(err, ORION_EINVAL,
                           "cannot save %s: inconsistent sparse array", path);
  for (e = 0; e < a->nnz; e++)
    for (d = 0; d < a->ndims; d++) {
      int64_t k = a->keys[e * a->ndims + d];
      if (k < 0 || k >= a->dims[d])
        return orion_error_set(err, ORION_EKEYRANGE,
                               "cannot save %s: element %" PRId64
                               " has key %" PRId64 " in dimension %d, "
                               "outside 1..%" PRId64,
                               path, e + 1, k + 1, d + 1, a->dims[d]);
    }
  return 0;
}

static int write_error(const char *tmp, orion_error *err) {
  int e = errno != 0 ? errno : EIO;
  return orion_error_set(err, -e, "cannot write %s: %s", tmp, strerror(e));
}

/* A buffered binary writer that keeps the running CRC of what it wrote. */
typedef struct {
  FILE *f;
  const char *tmp;
  uLong crc;
  size_t len;
  unsigned char buf[CHUNK];
} bin_writer;

static int bw_flush(bin_writer *w, orion_error *err) {
  if (w->len == 0)
    return 0;
  w->crc = crc32(w->crc, w->buf, (uInt)w->len);
  errno = 0;
  if (fwrite(w->buf, 1, w->len, w->f) != w->len)
    return write_error(w->tmp, err);
  w->len = 0;
  return 0;
}

/* Appends n items of `size` bytes from src, encoded little-endian. */
static int bw_items(bin_writer *w, const void *src, size_t size, size_t n,
                    orion_error *err) {
  const unsigned char *s = src;
  while (n > 0) {
    size_t room = (CHUNK - w->len) / size, k = n < room ? n : room;
    int rc;
    if (k == 0) {
      if ((rc = bw_flush(w, err)) != 0)
        return rc;
      continue;
    }
    encode_items(w->buf + w->len, s, size, k);
    w->len += k * size;
    s += k * size;
    n -= k;
  }
  return 0;
}

static int bw_raw(bin_writer *w, const unsigned char *p, size_t n,
                  orion_error *err) {
  int rc;
  if (CHUNK - w->len < n && (rc = bw_flush(w, err)) != 0)
    return rc;
  memcpy(w->buf + w->len, p, n);
  w->len += n;
  return 0;
}

static int save_binary_body(const orion_array *a, FILE *f, const char *tmp,
                            orion_error *err) {
  bin_writer *w = orion_malloc(sizeof *w);
  unsigned char hdr[FIXED_LEN], trailer[CRC_LEN];
  size_t es = orion_type_size(a->type), nnz = (size_t)a->nnz;
  int rc;
  if (w == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory saving %s", tmp);
  w->f = f;
  w->tmp = tmp;
  w->crc = crc32(0L, Z_NULL, 0);
  w->len = 0;
  memcpy(hdr, ORION_ARRAYFILE_MAGIC, MAGIC_LEN);
  put_u32(hdr + 8, ORION_ARRAYFILE_VERSION);
  put_u32(hdr + 12, (uint32_t)a->type);
  put_u32(hdr + 16, (a->sparse ? FLAG_SPARSE : 0) |
                         (a->ragged ? FLAG_RAGGED : 0));
  put_u32(hdr + 20, (uint32_t)a->ndims);
  rc = bw_raw(w, hdr, sizeof hdr, err);
  if (rc == 0)
    rc = bw_items(w, a->dims, 8, (size_t)a->ndims, err);
  if (rc == 0)
    rc = bw_items(w, &a->nnz, 8, 1, err);
  if (rc == 0 && a->sparse)
    rc = bw_items(w, a->keys, 8, nnz * (size_t)a->ndims, err);
  if (rc == 0)
    rc = bw_items(w, a->values, es, nnz, err);
  if (rc == 0)
    rc = bw_flush(w, err);
  if (rc == 0) {
    put_u32(trailer, (uint32_t)w->crc);
    errno = 0;
    if (fwrite(trailer, 1, CRC_LEN, f) != CRC_LEN)
      rc = write_error(tmp, err);
  }
  orion_free(w);
  return rc;
}

/* Formats element e's value; returns snprintf's result (ORION_ETYPE, also
 * negative, for an unknown type). */
static int format_value(char *buf, size_t n, const orion_array *a,
                        int64_t e) {
  switch (a->type) {
  case ORION_F32:
    return snprintf(buf, n, "%.9g", (double)((const float *)a->values)[e]);
  case ORION_F64:
    return snprintf(buf, n, "%.17g", ((const double *)a->values)[e]);
  case ORION_I32:
    return snprintf(buf, n, "%" PRId32, ((const int32_t *)a->values)[e]);
  case ORION_I64:
    return snprintf(buf, n, "%" PRId64, ((const int64_t *)a->values)[e]);
  }
  return ORION_ETYPE;
}

static int text_write(FILE *f, const char *s, size_t n, const char *tmp,
                      orion_error *err) {
  errno = 0;
  if (fwrite(s, 1, n, f) != n)
    return write_error(tmp, err);
  return 0;
}

static int save_text_body(const orion_array *a, FILE *f, const char *tmp,
                          orion_error *err) {
  char line[512];
  int64_t keys[ORION_MAX_DIMS] = {0}, e;
  size_t len;
  int d, n, rc;
  len = (size_t)snprintf(line, sizeof line, "%s %s %s dims",
                         ORION_ARRAYFILE_TEXT_TAG, orion_type_name(a->type),
                         a->ragged   ? "ragged"
                         : a->sparse ? "sparse"
                                     : "dense");
  for (d = 0; d < a->ndims; d++)
    len += (size_t)snprintf(line + len, sizeof line - len, " %" PRId64,
                            a->dims[d]);
  line[len++] = '\n';
  if ((rc = text_write(f, line, len, tmp, err)) != 0)
    return rc;
  for (e = 0; e < a->nnz; e++) {
    const int64_t *k = a->sparse ? a->keys + e * a->ndims : keys;
    len = 0;
    for (d = 0; d < a->ndims; d++)
      len += (size_t)snprintf(line + len, sizeof line - len, "%" PRId64 " ",
                              k[d] + 1);
    n = format_value(line + len, sizeof line - len, a, e);
    if (n < 0 || (size_t)n >= sizeof line - len - 1)
      return orion_error_set(err, ORION_EINVAL,
                             "cannot format element %" PRId64 " of %s", e + 1,
                             tmp);
    len += (size_t)n;
    line[len++] = '\n';
    if ((rc = text_write(f, line, len, tmp, err)) != 0)
      return rc;
    /* Dense: advance the row-major key counter. */
    for (d = a->ndims - 1; !a->sparse && d >= 0; d--) {
      if (++keys[d] < a->dims[d])
        break;
      keys[d] = 0;
    }
  }
  return 0;
}

typedef int (*save_body)(const orion_array *a, FILE *f, const char *tmp,
                         orion_error *err);

/* Writes PATH.tmp with `body`, makes it durable and renames it over PATH
 * (and makes the rename durable: util/atomic.h); removes PATH.tmp on any
 * failure. */
static int save_atomic(const orion_array *a, const char *path, save_body body,
                       orion_error *err) {
  size_t plen;
  char *tmp;
  FILE *f;
  int rc = check_array(a, path, err), e;
  if (rc != 0)
    return rc;
  plen = strlen(path);
  tmp = orion_malloc(plen + 5);
  if (tmp == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory saving %s", path);
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);
  f = fopen(tmp, "wb");
  if (f == NULL) {
    e = errno;
    rc = orion_error_set(err, -e, "cannot create %s: %s", tmp, strerror(e));
    orion_free(tmp);
    return rc;
  }
  rc = body(a, f, tmp, err);
  if (rc == 0) {
    errno = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
      rc = write_error(tmp, err);
  }
  errno = 0;
  if (fclose(f) != 0 && rc == 0)
    rc = write_error(tmp, err);
  if (rc == 0 && rename(tmp, path) != 0) {
    e = errno;
    rc = orion_error_set(err, -e, "cannot rename %s to %s: %s", tmp, path,
                         strerror(e));
  }
  if (rc != 0)
    unlink(tmp);
  else /* the rename survives a crash too */
    rc = orion_sync_parent(path, err);
  orion_free(tmp);
  return rc;
}

/* Binary save; `a` stays the caller's (read only), nothing is retained. */
int orion_array_save(const orion_array *a, const char *path,
                     orion_error *err) {
  return save_atomic(a, path, save_binary_body, err);
}

/* Text save; `a` stays the caller's (read only), nothing is retained. */
int orion_array_save_text(const orion_array *a, const char *path,
                          orion_error *err) {
  c_numeric loc;
  int rc;
  c_numeric_enter(&loc);
  rc = save_atomic(a, path, save_text_body, err);
  c_numeric_leave(&loc);
  return rc;
}

/* ------------------------------------------------------------------------
 * Loading binary files.
 * ---------------------------------------------------------------------- */

typedef struct {
  FILE *f;
  const char *path;
  uint64_t size; /* file length from fstat */
  uint64_t pos;
  uLong crc;
  unsigned char buf[CHUNK];
} bin_reader;

static int truncated(const char *path, uint64_t expect, uint64_t size,
                     int at_least, orion_error *err) {
  return orion_error_set(err, ORION_ETRUNC,
                         "%s: truncated: expected %s%" PRIu64
                         " bytes, file has %" PRIu64,
                         path, at_least ? "at least " : "", expect, size);
}

/* Reads n bytes into p (and into the CRC when `crc`). */
static int br_read(bin_reader *r, void *p, size_t n, int crc,
                   orion_error *err) {
  size_t got;
  if (r->size - r->pos < n)
    return truncated(r->path, r->pos + n, r->size, 1, err);
  errno = 0;
  got = fread(p, 1, n, r->f);
  if (got != n) {
    if (ferror(r->f)) {
      int e = errno != 0 ? errno : EIO;
      return orion_error_set(err, -e, "cannot read %s: %s", r->path,
                             strerror(e));
    }
    /* The file shrank under us. */
    return truncated(r->path, r->pos + n, r->pos + got, 1, err);
  }
  r->pos += n;
  if (crc)
    r->crc = crc32(r->crc, p, (uInt)n);
  return 0;
}

/* Reads n little-endian items of `size` bytes into dst. */
static int br_items(bin_reader *r, void *dst, size_t size, size_t n,
                    orion_error *err) {
  unsigned char *d = dst;
  while (n > 0) {
    size_t k = n < CHUNK / size ? n : CHUNK / size;
    int rc = br_read(r, r->buf, k * size, 1, err);
    if (rc != 0)
      return rc;
    decode_items(d, r->buf, size, k);
    d += k * size;
    n -= k;
  }
  return 0;
}

static int bad_header(const char *path, const char *what, long long v,
                      orion_error *err) {
  return orion_error_set(err, ORION_EBADFILE, "%s: corrupt header: %s %lld",
                         path, what, v);
}

static int load_binary(bin_reader *r, orion_array **out, orion_error *err) {
  unsigned char hdr[FIXED_LEN];
  int64_t dims[ORION_MAX_DIMS], nnz, total, e;
  uint32_t version, type, flags, ndims;
  uint64_t head, per, expect;
  unsigned char stored[CRC_LEN];
  orion_array *a;
  size_t es;
  int rc, d, sparse;

  if ((rc = br_read(r, hdr, sizeof hdr, 1, err)) != 0)
    return rc;
  if (memcmp(hdr, ORION_ARRAYFILE_MAGIC, MAGIC_LEN) != 0)
    return orion_error_set(err, ORION_EBADFILE,
                           "%s: not an Orion-C array file", r->path);
  version = get_u32(hdr + 8);
  type = get_u32(hdr + 12);
  flags = get_u32(hdr + 16);
  ndims = get_u32(hdr + 20);
  if (version != ORION_ARRAYFILE_VERSION)
    return orion_error_set(err, ORION_EVERSION,
                           "%s: unsupported array file version %" PRIu32
                           " (this build reads version %d)",
                           r->path, version, ORION_ARRAYFILE_VERSION);
  if (type >= ORION_NTYPES)
    return bad_header(r->path, "unknown element type", type, err);
  if ((flags & ~(FLAG_SPARSE | FLAG_RAGGED)) != 0 ||
      ((flags & FLAG_RAGGED) != 0 && (flags & FLAG_SPARSE) == 0))
    return bad_header(r->path, "unknown flags", flags, err);
  if ((flags & FLAG_RAGGED) != 0 && ndims != 2)
    return bad_header(r->path, "number of dimensions of a ragged array",
                      ndims, err);
  if (ndims < 1 || ndims > ORION_MAX_DIMS)
    return bad_header(r->path, "number of dimensions", ndims, err);
  sparse = (flags & FLAG_SPARSE) != 0;
  if ((rc = br_items(r, dims, 8, ndims, err)) != 0 ||
      (rc = br_items(r, &nnz, 8, 1, err)) != 0)
    return rc;
  for (d = 0; d < (int)ndims; d++)
    if (dims[d] < 0 || (dims[d] == 0 && (!sparse || nnz != 0)))
      return bad_header(r->path, "dimension size", (long long)dims[d], err);
  if (nnz < 0)
    return bad_header(r->path, "element count", (long long)nnz, err);
  if (!sparse) {
    if (orion_key_strides((int)ndims, dims, NULL, &total) != 0)
      return orion_error_set(err, ORION_EBADFILE,
                             "%s: corrupt header: dims overflow", r->path);
    if (total != nnz)
      return orion_error_set(err, ORION_EBADFILE,
                             "%s: corrupt header: a dense array of %" PRId64
                             " positions stores %" PRId64 " elements",
                             r->path, total, nnz);
  }
  /* The whole file's length follows from the header; check it against the
   * real length before allocating anything. */
  es = orion_type_size((orion_type)type);
  head = FIXED_LEN + 8 * (uint64_t)ndims + 8;
  per = es + (sparse ? 8 * (uint64_t)ndims : 0);
  if ((uint64_t)nnz > (UINT64_MAX - head - CRC_LEN) / per)
    return bad_header(r->path, "element count", (long long)nnz, err);
  expect = head + (uint64_t)nnz * per + CRC_LEN;
  if (r->size < expect)
    return truncated(r->path, expect, r->size, 0, err);
  if (r->size > expect)
    return orion_error_set(err, ORION_EBADFILE,
                           "%s: %" PRIu64 " unexpected bytes after the array "
                           "(expected %" PRIu64 " bytes, file has %" PRIu64
                           ")",
                           r->path, r->size - expect, expect, r->size);

  if (sparse) {
    a = orion_array_new_sparse((int)ndims, (orion_type)type, err);
    if (a != NULL && orion_array_reserve(a, nnz) != 0) {
      orion_array_release(a);
      a = NULL;
    }
  } else {
    a = orion_array_new_dense((int)ndims, dims, (orion_type)type, err);
  }
  if (a == NULL)
    return orion_error_set(err, ORION_ENOMEM,
                           "%s: out of memory loading %" PRId64 " elements",
                           r->path, nnz);
  memcpy(a->dims, dims, ndims * sizeof *dims);
  a->ragged = (flags & FLAG_RAGGED) != 0;
  if (sparse)
    rc = br_items(r, a->keys, 8, (size_t)nnz * ndims, err);
  if (rc == 0)
    rc = br_items(r, a->values, es, (size_t)nnz, err);
  if (rc == 0)
    rc = br_read(r, stored, CRC_LEN, 0, err);
  if (rc == 0 && get_u32(stored) != (uint32_t)r->crc)
    rc = orion_error_set(err, ORION_ECHECKSUM,
                         "%s: checksum mismatch (file corrupted)", r->path);
  for (e = 0; rc == 0 && sparse && e < nnz; e++)
    for (d = 0; rc == 0 && d < (int)ndims; d++) {
      int64_t k = a->keys[e * ndims + d];
      if (k < 0 || k >= dims[d])
        rc = orion_error_set(err, ORION_EBADFILE,
                             "%s: element %" PRId64 " has key %" PRId64
                             " in dimension %d, outside 1..%" PRId64,
                             r->path, e + 1, k + 1, d + 1, dims[d]);
    }
  if (rc != 0) {
    orion_array_release(a);
    return rc;
  }
  a->nnz = nnz;
  *out = a;
  return 0;
}

/* ------------------------------------------------------------------------
 * Loading text files.
 * ---------------------------------------------------------------------- */

typedef struct {
  FILE *f;
  const char *path;
  long line;
  size_t len;
  char buf[TEXT_LINE_MAX + 1];
} text_reader;

/* Reads the next line into r->buf without its end of line; returns 1, 0 at
 * end of file, or a negative code. */
static int tr_next(text_reader *r, orion_error *err) {
  int c;
  r->len = 0;
  errno = 0;
  while ((c = getc(r->f)) != EOF && c != '\n') {
    if (c == '\0')
      return orion_error_set(err, ORION_EPARSE, "%s:%ld: NUL byte in text",
                             r->path, r->line + 1);
    if (r->len == TEXT_LINE_MAX)
      return orion_error_set(err, ORION_EPARSE,
                             "%s:%ld: line longer than %d bytes", r->path,
                             r->line + 1, TEXT_LINE_MAX);
    r->buf[r->len++] = (char)c;
  }
  if (c == EOF && ferror(r->f)) {
    int e = errno != 0 ? errno : EIO;
    return orion_error_set(err, -e, "cannot read %s: %s", r->path,
                           strerror(e));
  }
  if (c == EOF && r->len == 0)
    return 0;
  if (r->len > 0 && r->buf[r->len - 1] == '\r')
    r->len--;
  r->buf[r->len] = '\0';
  r->line++;
  return 1;
}

/* Reports a problem with the current line, quoting (the start of) it. */
static int line_error(text_reader *r, int code, const char *what,
                      orion_error *err) {
  return orion_error_set(err, code, "%s:%ld: %s: \"%.*s%s\"", r->path,
                         r->line, what, QUOTE_MAX, r->buf,
                         r->len > QUOTE_MAX ? "..." : "");
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

static char *skip_space(char *s) {
  while (is_space(*s))
    s++;
  return s;
}

/* Cuts the next whitespace-separated token from *s; NULL when none. */
static char *next_token(char **s) {
  char *t = skip_space(*s), *end;
  if (*t == '\0')
    return NULL;
  end = t;
  while (*end != '\0' && !is_space(*end))
    end++;
  if (*end != '\0')
    *end++ = '\0';
  *s = end;
  return t;
}

/* Parses a whole token as a decimal integer; 0, or ORION_EPARSE when it is
 * not one or out of range. */
static int parse_i64(const char *t, int64_t *out) {
  const char *p = t;
  char *end;
  long long v;
  if (*p == '-' || *p == '+')
    p++;
  if (*p < '0' || *p > '9')
    return ORION_EPARSE;
  errno = 0;
  v = strtoll(t, &end, 10);
  if (errno != 0 || *end != '\0')
    return ORION_EPARSE;
  *out = v;
  return 0;
}

/* Parses a value token of `type` into dst (one element); 0, or
 * ORION_EPARSE.  A float must use the whole token and not overflow to
 * infinity (strtof/strtod's ERANGE with an infinite result). */
static int parse_value(const char *t, orion_type type, void *dst) {
  union {
    float f32;
    double f64;
    int32_t i32;
    int64_t i64;
  } v;
  char *end = NULL;
  int64_t i = 0;
  int bad;
  errno = 0;
  switch (type) {
  case ORION_F32:
    v.f32 = strtof(t, &end);
    bad = errno == ERANGE && isinf(v.f32);
    break;
  case ORION_F64:
    v.f64 = strtod(t, &end);
    bad = errno == ERANGE && isinf(v.f64);
    break;
  case ORION_I32:
    bad = parse_i64(t, &i) != 0 || i < INT32_MIN || i > INT32_MAX;
    v.i32 = (int32_t)i;
    break;
  case ORION_I64:
    bad = parse_i64(t, &v.i64) != 0;
    break;
  default:
    return ORION_EPARSE;
  }
  if (end != NULL && (end == t || *end != '\0'))
    bad = 1;
  if (bad)
    return ORION_EPARSE;
  memcpy(dst, &v, orion_type_size(type));
  return 0;
}

/* Parses "# orion-c array TYPE dense|sparse dims D1 .. Dn". */
static int parse_header(text_reader *r, orion_type *type, int *sparse,
                        int *ndims, int64_t *dims, orion_error *err) {
  char line[TEXT_LINE_MAX + 1], *s, *t;
  int n = 0;
  memcpy(line, r->buf, r->len + 1);
  s = line + strlen(ORION_ARRAYFILE_TEXT_TAG);
  if (!is_space(*s))
    return line_error(r, ORION_EPARSE, "bad header", err);
  t = next_token(&s);
  if (t == NULL || orion_type_parse(t, type) != 0)
    return line_error(r, ORION_ETYPE,
                      "header: expected an element type (f32, f64, i32 or "
                      "i64)",
                      err);
  t = next_token(&s);
  if (t != NULL && strcmp(t, "dense") == 0)
    *sparse = 0;
  else if (t != NULL && strcmp(t, "sparse") == 0)
    *sparse = 1;
  else if (t != NULL && strcmp(t, "ragged") == 0)
    *sparse = 2; /* a sparse array iterated by rows */
  else
    t = NULL;
  if (t != NULL)
    t = next_token(&s);
  if (t == NULL || strcmp(t, "dims") != 0)
    return line_error(r, ORION_EPARSE,
                      "header: expected TYPE dense|sparse|ragged dims D1 .. "
                      "Dn",
                      err);
  while ((t = next_token(&s)) != NULL) {
    if (n == ORION_MAX_DIMS || parse_i64(t, &dims[n]) != 0 || dims[n] < 0 ||
        (dims[n] == 0 && !*sparse))
      return line_error(r, ORION_EDIMS,
                        "header: dimension sizes must be 1 to 8 positive "
                        "integers (0 allowed when sparse)",
                        err);
    n++;
  }
  if (n == 0)
    return line_error(r, ORION_EDIMS, "header: no dimension sizes", err);
  if (*sparse == 2 && n != 2)
    return line_error(r, ORION_EDIMS, "header: a ragged array has 2 dims",
                      err);
  *ndims = n;
  return 0;
}

/* Parses one data line into 0-based keys and a value. */
static int parse_element(text_reader *r, const orion_array *a, int64_t *keys,
                         void *value, orion_error *err) {
  char line[TEXT_LINE_MAX + 1], *s = line, *t;
  char what[160];
  int d, rc = 0;
  memcpy(line, r->buf, r->len + 1);
  for (d = 0; d < a->ndims && rc == 0; d++) {
    t = next_token(&s);
    if (t == NULL || (*t != '-' && *t != '+' && (*t < '0' || *t > '9')) ||
        parse_i64(t, &keys[d]) != 0) {
      snprintf(what, sizeof what, "expected %d key%s and a value", a->ndims,
               a->ndims > 1 ? "s" : "");
      rc = line_error(r, ORION_EPARSE, what, err);
    } else if (keys[d] < 1 || keys[d] > a->dims[d]) {
      snprintf(what, sizeof what,
               "key %" PRId64 " in dimension %d is outside 1..%" PRId64,
               keys[d], d + 1, a->dims[d]);
      rc = line_error(r, ORION_EKEYRANGE, what, err);
    } else {
      keys[d]--;
    }
  }
  if (rc != 0)
    return rc;
  t = next_token(&s);
  if (t == NULL) {
    snprintf(what, sizeof what, "expected %d key%s and a value", a->ndims,
             a->ndims > 1 ? "s" : "");
    return line_error(r, ORION_EPARSE, what, err);
  }
  if (parse_value(t, a->type, value) != 0) {
    snprintf(what, sizeof what, "bad %s value \"%.40s\"",
             orion_type_name(a->type), t);
    return line_error(r, ORION_EPARSE, what, err);
  }
  if (next_token(&s) != NULL)
    return line_error(r, ORION_EPARSE, "unexpected text after the value",
                      err);
  return 0;
}

static int load_text(text_reader *r, uint64_t size, orion_array **out,
                     orion_error *err) {
  int64_t dims[ORION_MAX_DIMS], keys[ORION_MAX_DIMS], total = 0, seen_n = 0;
  int64_t idx, e;
  union {
    float f;
    double d;
    int32_t i;
    int64_t l;
  } value;
  unsigned char *seen = NULL;
  orion_array *a = NULL;
  orion_type type = ORION_F64;
  int rc, sparse = 0, ndims = 0, d;

  rc = tr_next(r, err);
  if (rc <= 0)
    return rc < 0 ? rc
                  : orion_error_set(err, ORION_EBADFILE,
                                    "%s: not an Orion-C array file", r->path);
  if ((rc = parse_header(r, &type, &sparse, &ndims, dims, err)) != 0)
    return rc;
  if (sparse) {
    a = orion_array_new_sparse(ndims, type, err);
    if (a == NULL)
      return ORION_ENOMEM;
    memcpy(a->dims, dims, (size_t)ndims * sizeof *dims);
    a->ragged = sparse == 2;
  } else {
    /* A dense file lists every element, each on a line of at least
     * 2 * ndims + 2 bytes: bound the allocation by the file length. */
    rc = orion_key_strides(ndims, dims, NULL, &total);
    if (rc != 0)
      return line_error(r, rc, "header: dims too large", err);
    if ((uint64_t)total > size / (2 * (uint64_t)ndims + 2) + 1)
      return orion_error_set(err, ORION_ETRUNC,
                             "%s: truncated: a dense array of %" PRId64
                             " elements cannot fit in %" PRIu64 " bytes",
                             r->path, total, size);
    a = orion_array_new_dense(ndims, dims, type, err);
    seen = orion_calloc((size_t)total / 8 + 1, 1);
    if (a == NULL || seen == NULL) {
      orion_array_release(a);
      orion_free(seen);
      return orion_error_set(err, ORION_ENOMEM,
                             "%s: out of memory loading %" PRId64 " elements",
                             r->path, total);
    }
  }
  while (rc == 0 && (rc = tr_next(r, err)) == 1) {
    char *s = skip_space(r->buf);
    rc = 0;
    if (*s == '\0' || *s == '#')
      continue;
    rc = parse_element(r, a, keys, &value, err);
    if (rc != 0)
      break;
    if (sparse) {
      rc = orion_array_push(a, keys, &value);
      if (rc != 0)
        rc = orion_error_set(err, rc, "%s:%ld: %s", r->path, r->line,
                             orion_strerror(rc));
      continue;
    }
    orion_key_linearize(ndims, dims, keys, &idx);
    if (seen[idx / 8] & (1u << (idx % 8))) {
      rc = line_error(r, ORION_EPARSE, "element given twice", err);
      break;
    }
    seen[idx / 8] |= (unsigned char)(1u << (idx % 8));
    seen_n++;
    memcpy((char *)a->values + (size_t)idx * orion_type_size(type), &value,
           orion_type_size(type));
  }
  if (rc == 0 && !sparse && seen_n != total) {
    for (e = 0; e < total && (seen[e / 8] & (1u << (e % 8))); e++)
      ;
    orion_key_delinearize(ndims, dims, e, keys);
    {
      char key[ORION_MAX_DIMS * 21 + 1];
      size_t len = 0;
      for (d = 0; d < ndims; d++)
        len += (size_t)snprintf(key + len, sizeof key - len, "%s%" PRId64,
                                d > 0 ? " " : "", keys[d] + 1);
      rc = orion_error_set(err, ORION_ETRUNC,
                           "%s: dense array lists %" PRId64 " of its %" PRId64
                           " elements; element %s is missing",
                           r->path, seen_n, total, key);
    }
  }
  orion_free(seen);
  if (rc != 0) {
    orion_array_release(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* ------------------------------------------------------------------------
 * Loading: open, detect the format, dispatch.
 * ---------------------------------------------------------------------- */

/* A reader of size bytes for the open file f (orion_malloc'd, the caller's
 * to free); out of memory, f is closed, err set and NULL returned. */
static void *reader_new(FILE *f, size_t size, const char *path,
                        orion_error *err) {
  void *r = orion_malloc(size);
  if (r == NULL) {
    fclose(f);
    orion_error_set(err, ORION_ENOMEM, "out of memory loading %s", path);
  }
  return r;
}

/* Loads either format; on success the caller owns the one reference in
 * *out (orion_array_release frees it), on failure *out is NULL and every
 * buffer allocated on the way has been freed. */
int orion_array_load(const char *path, orion_array **out, orion_error *err) {
  static const char tag[] = ORION_ARRAYFILE_TEXT_TAG;
  unsigned char head[sizeof tag];
  struct stat st;
  size_t n;
  FILE *f;
  int rc, e;
  if (out == NULL || path == NULL)
    return orion_error_set(err, ORION_EINVAL, "cannot load: %s is NULL",
                           out == NULL ? "the result pointer" : "the path");
  *out = NULL;
  f = fopen(path, "rb");
  if (f == NULL) {
    e = errno;
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  e = fstat(fileno(f), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e != 0) {
    fclose(f);
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    fclose(f);
    return orion_error_set(err, ORION_EBADFILE, "%s: not a regular file",
                           path);
  }
  n = fread(head, 1, sizeof head - 1, f);
  if (ferror(f) || fseek(f, 0, SEEK_SET) != 0) {
    e = errno != 0 ? errno : EIO;
    fclose(f);
    return orion_error_set(err, -e, "cannot read %s: %s", path, strerror(e));
  }
  if (n == sizeof tag - 1 && memcmp(head, tag, n) == 0) {
    text_reader *r = reader_new(f, sizeof *r, path, err);
    c_numeric loc;
    if (r == NULL)
      return ORION_ENOMEM;
    r->f = f;
    r->path = path;
    r->line = 0;
    c_numeric_enter(&loc);
    rc = load_text(r, (uint64_t)st.st_size, out, err);
    c_numeric_leave(&loc);
    orion_free(r);
  } else if (n > 0 && memcmp(head, ORION_ARRAYFILE_MAGIC,
                             n < MAGIC_LEN ? n : MAGIC_LEN) == 0) {
    /* The magic, or a file cut short inside it (then br_read says
     * truncated). */
    bin_reader *r = reader_new(f, sizeof *r, path, err);
    if (r == NULL)
      return ORION_ENOMEM;
    r->f = f;
    r->path = path;
    r->size = (uint64_t)st.st_size;
    r->pos = 0;
    r->crc = crc32(0L, Z_NULL, 0);
    rc = load_binary(r, out, err);
    orion_free(r);
  } else {
    rc = orion_error_set(err, ORION_EBADFILE,
                         "%s: not an Orion-C array file", path);
  }
  fclose(f);
  return rc;
}
