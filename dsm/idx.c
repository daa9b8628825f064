/* Readers for the DNN app's datasets: IDX files, labelled document lists
 * and bag-of-words feature rows.  See dsm/idx.h. */
#include "dsm/idx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/loader.h"
#include "util/alloc.h"

/* ======================================================================
 * IDX.
 * ====================================================================== */

void orion_idx_opts_init(orion_idx_opts *o) {
  memset(o, 0, sizeof *o);
  o->type = ORION_F32;
  o->scale = 1.0;
  o->shift = 0.0;
}

typedef struct idx_kind {
  unsigned char code;
  int size;
  const char *name;
} idx_kind;

static const idx_kind idx_kinds[] = {{0x08, 1, "u8"},  {0x09, 1, "i8"},
                                     {0x0B, 2, "i16"}, {0x0C, 4, "i32"},
                                     {0x0D, 4, "f32"}, {0x0E, 8, "f64"}};

static const idx_kind *idx_kind_of(unsigned char code) {
  size_t i;
  for (i = 0; i < sizeof idx_kinds / sizeof idx_kinds[0]; i++)
    if (idx_kinds[i].code == code)
      return &idx_kinds[i];
  return NULL;
}

static uint64_t be(const unsigned char *p, int n) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

/* Element i of the IDX data as a double. */
static double idx_value(const idx_kind *k, const unsigned char *p) {
  switch (k->code) {
  case 0x08:
    return (double)p[0];
  case 0x09:
    return (double)(int8_t)p[0];
  case 0x0B:
    return (double)(int16_t)(uint16_t)be(p, 2);
  case 0x0C:
    return (double)(int32_t)(uint32_t)be(p, 4);
  case 0x0D: {
    uint32_t bits = (uint32_t)be(p, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
  }
  default: {
    uint64_t bits = be(p, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
  }
  }
}

int orion_idx_parse(const char *name, const unsigned char *buf, size_t len,
                    const orion_idx_opts *o, orion_array **out,
                    orion_error *err) {
  orion_idx_opts def;
  const idx_kind *k;
  int ndims, d;
  int64_t dims[ORION_MAX_DIMS], n = 1;
  size_t header, need;
  char shape[160];
  size_t sl = 0;
  orion_array *a;
  int64_t i;
  const unsigned char *p;

  *out = NULL;
  if (o == NULL) {
    orion_idx_opts_init(&def);
    o = &def;
  }
  if (len < 4)
    return orion_error_set(err, ORION_ETRUNC,
                           "%s: truncated at byte %zu (the IDX header needs "
                           "at least 4 bytes)",
                           name, len);
  if (buf[0] != 0 || buf[1] != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "%s: not an IDX file (magic bytes %02x %02x %02x "
                           "%02x)",
                           name, buf[0], buf[1], buf[2], buf[3]);
  k = idx_kind_of(buf[2]);
  if (k == NULL)
    return orion_error_set(err, ORION_EPARSE,
                           "%s: not an IDX file (unknown element type code "
                           "0x%02x)",
                           name, buf[2]);
  ndims = buf[3];
  if (ndims < 1 || ndims > ORION_MAX_DIMS)
    return orion_error_set(err, ORION_EPARSE,
                           "%s: IDX header gives %d dimensions (1 to %d "
                           "allowed)",
                           name, ndims, ORION_MAX_DIMS);
  header = 4 + 4 * (size_t)ndims;
  if (len < header)
    return orion_error_set(err, ORION_ETRUNC,
                           "%s: truncated at byte %zu (the IDX header needs "
                           "%zu bytes)",
                           name, len, header);
  shape[0] = '\0';
  for (d = 0; d < ndims; d++) {
    dims[d] = (int64_t)be(buf + 4 + 4 * d, 4);
    if (dims[d] == 0)
      return orion_error_set(err, ORION_EPARSE, "%s: IDX dimension %d is 0",
                             name, d + 1);
    if (__builtin_mul_overflow(n, dims[d], &n))
      return orion_error_set(err, ORION_EOVERFLOW,
                             "%s: IDX dimensions overflow", name);
    sl += (size_t)snprintf(shape + sl, sl < sizeof shape ? sizeof shape - sl : 0,
                           "%s%lld", d ? "x" : "", (long long)dims[d]);
    if (sl >= sizeof shape)
      sl = sizeof shape - 1;
  }
  if (orion_mul_overflow((size_t)n, (size_t)k->size, &need) ||
      need > SIZE_MAX - header)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "%s: IDX dimensions overflow", name);
  need += header;
  if (len < need)
    return orion_error_set(err, ORION_ETRUNC,
                           "%s: truncated at byte %zu (%s %s elements need "
                           "%zu bytes)",
                           name, len, shape, k->name, need);
  if (len > need)
    return orion_error_set(err, ORION_EPARSE,
                           "%s: %zu bytes after the data (the header "
                           "promises %zu bytes in all)",
                           name, len - need, need);
  if (o->flatten && ndims > 2) {
    for (d = 2; d < ndims; d++)
      dims[1] *= dims[d];
    ndims = 2;
  }
  a = orion_array_new_dense(ndims, dims, o->type, err);
  if (a == NULL)
    return err != NULL ? err->code : ORION_ENOMEM;
  p = buf + header;
  for (i = 0; i < n; i++, p += k->size) {
    double v = idx_value(k, p) * o->scale + o->shift;
    if (o->type == ORION_F32) {
      ((float *)a->values)[i] = (float)v;
    } else if (o->type == ORION_F64) {
      ((double *)a->values)[i] = v;
    } else {
      double lim = o->type == ORION_I32 ? 2147483647.0 : 9.2e18;
      if (v != floor(v) || v > lim || v < -lim - 1) {
        orion_array_release(a);
        return orion_error_set(err, ORION_EPARSE,
                               "%s: element %lld is %g, which does not fit "
                               "%s",
                               name, (long long)i + 1, v,
                               orion_type_name(o->type));
      }
      orion_value_set_i64(a->values, o->type, i, (int64_t)v);
    }
  }
  *out = a;
  return 0;
}

int orion_idx_read(const char *path, const orion_idx_opts *o,
                   orion_array **out, orion_error *err) {
  char *data;
  size_t len;
  int rc;
  *out = NULL;
  rc = orion_read_file(path, &data, &len, err);
  if (rc != 0)
    return rc;
  rc = orion_idx_parse(path, (const unsigned char *)data, len, o, out, err);
  orion_free(data);
  return rc;
}

/* ======================================================================
 * Labelled documents.
 * ====================================================================== */

void orion_docs_free(orion_docs *d) {
  int i;
  if (d == NULL)
    return;
  orion_free(d->label);
  orion_free(d->test);
  for (i = 0; i < d->ngroups; i++)
    orion_free(d->groups[i]);
  orion_free(d->groups);
  memset(d, 0, sizeof *d);
}

/* The text of a line for messages: quoted, cut to 80 bytes. */
static void line_text(char *dst, size_t size, const char *s, size_t n) {
  if (n > 80)
    n = 80;
  snprintf(dst, size, "\"%.*s\"", (int)n, s);
}

static int cmp_name(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Index of name in the unsorted list, adding it when new; ORION_ENOMEM on
 * OOM. */
static int group_index(orion_docs *d, int *cap, const char *s, size_t n) {
  int i;
  for (i = d->ngroups - 1; i >= 0; i--)
    if (strlen(d->groups[i]) == n && memcmp(d->groups[i], s, n) == 0)
      return i;
  if (d->ngroups == *cap) {
    int nc = *cap ? 2 * *cap : 32;
    char **ng = orion_realloc(d->groups, sizeof *ng * (size_t)nc);
    if (ng == NULL)
      return ORION_ENOMEM;
    d->groups = ng;
    *cap = nc;
  }
  d->groups[d->ngroups] = orion_strndup(s, n);
  if (d->groups[d->ngroups] == NULL)
    return ORION_ENOMEM;
  return d->ngroups++;
}

int orion_docs_parse(const char *name, const char *buf, size_t len,
                     orion_docs *d, orion_error *err) {
  const char *p = buf, *end = buf + len;
  int64_t line = 0, cap = 0;
  int gcap = 0, rc = 0, i;
  char text[100];
  char **sorted = NULL;
  int *rank = NULL;

  memset(d, 0, sizeof *d);
  while (p < end && rc == 0) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol != NULL ? eol : end, *q = p;
    const char *f[3];
    size_t fl[3];
    int nf = 0, g;
    char *num_end;
    long long id;
    line++;
    if (le > p && le[-1] == '\r')
      le--;
    /* Fields: runs of non-blank characters. */
    while (q < le && nf < 3) {
      while (q < le && (*q == ' ' || *q == '\t'))
        q++;
      if (q == le)
        break;
      f[nf] = q;
      while (q < le && *q != ' ' && *q != '\t')
        q++;
      fl[nf] = (size_t)(q - f[nf]);
      nf++;
    }
    if (nf == 0 || f[0][0] == '#') {
      p = eol != NULL ? eol + 1 : end;
      continue;
    }
    line_text(text, sizeof text, p, (size_t)(le - p));
    if (nf < 3) {
      rc = orion_error_set(err, ORION_EPARSE,
                           "%s:%lld: expected 3 fields (docID split group), "
                           "found %d: %s",
                           name, (long long)line, nf, text);
      break;
    }
    {
      char idbuf[32];
      size_t n = fl[0] < sizeof idbuf - 1 ? fl[0] : sizeof idbuf - 1;
      memcpy(idbuf, f[0], n);
      idbuf[n] = '\0';
      id = strtoll(idbuf, &num_end, 10);
      if (*num_end != '\0' || n != fl[0] || n == 0) {
        rc = orion_error_set(err, ORION_EPARSE,
                             "%s:%lld: docID is not an integer: %s", name,
                             (long long)line, text);
        break;
      }
    }
    if (id != d->n + 1) {
      rc = orion_error_set(err, ORION_EPARSE,
                           "%s:%lld: expected document %lld, found %lld: %s",
                           name, (long long)line, (long long)d->n + 1, id,
                           text);
      break;
    }
    if (d->n == cap) {
      int64_t nc = cap ? 2 * cap : 1024;
      int32_t *nl = orion_realloc(d->label, sizeof *nl * (size_t)nc);
      uint8_t *nt;
      if (nl == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM, "%s: out of memory", name);
        break;
      }
      d->label = nl;
      nt = orion_realloc(d->test, sizeof *nt * (size_t)nc);
      if (nt == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM, "%s: out of memory", name);
        break;
      }
      d->test = nt;
      cap = nc;
    }
    if (fl[1] == 5 && memcmp(f[1], "train", 5) == 0) {
      d->test[d->n] = 0;
    } else if (fl[1] == 4 && memcmp(f[1], "test", 4) == 0) {
      d->test[d->n] = 1;
    } else {
      rc = orion_error_set(err, ORION_EPARSE,
                           "%s:%lld: split must be \"train\" or \"test\", not "
                           "\"%.*s\": %s",
                           name, (long long)line, (int)(fl[1] > 40 ? 40 : fl[1]),
                           f[1], text);
      break;
    }
    g = group_index(d, &gcap, f[2], fl[2]);
    if (g < 0) {
      rc = orion_error_set(err, ORION_ENOMEM, "%s: out of memory", name);
      break;
    }
    d->label[d->n++] = g; /* renumbered in sorted order below */
    p = eol != NULL ? eol + 1 : end;
  }
  if (rc == 0 && d->n == 0)
    rc = orion_error_set(err, ORION_EPARSE, "%s: no documents", name);
  if (rc == 0) {
    /* Number the groups in sorted name order. */
    sorted = orion_malloc(sizeof *sorted * (size_t)d->ngroups);
    rank = orion_malloc(sizeof *rank * (size_t)d->ngroups);
    if (sorted == NULL || rank == NULL) {
      rc = orion_error_set(err, ORION_ENOMEM, "%s: out of memory", name);
    } else {
      memcpy(sorted, d->groups, sizeof *sorted * (size_t)d->ngroups);
      qsort(sorted, (size_t)d->ngroups, sizeof *sorted, cmp_name);
      for (i = 0; i < d->ngroups; i++) {
        int j = 0;
        while (sorted[j] != d->groups[i])
          j++;
        rank[i] = j;
      }
      for (int64_t k = 0; k < d->n; k++)
        d->label[k] = rank[d->label[k]] + 1;
      memcpy(d->groups, sorted, sizeof *sorted * (size_t)d->ngroups);
    }
  }
  orion_free(sorted);
  orion_free(rank);
  if (rc != 0)
    orion_docs_free(d);
  return rc;
}

int orion_docs_read(const char *path, orion_docs *d, orion_error *err) {
  char *data;
  size_t len;
  int rc;
  memset(d, 0, sizeof *d);
  rc = orion_read_file(path, &data, &len, err);
  if (rc != 0)
    return rc;
  rc = orion_docs_parse(path, data, len, d, err);
  orion_free(data);
  return rc;
}

/* ======================================================================
 * Bag-of-words feature rows.
 * ====================================================================== */

typedef struct bow_ent {
  int64_t word;
  double count;
} bow_ent;

static int cmp_ent(const void *x, const void *y) {
  int64_t a = ((const bow_ent *)x)->word, b = ((const bow_ent *)y)->word;
  return (a > b) - (a < b);
}

int orion_bow_csr(const orion_array *counts, const int64_t *rows,
                  int64_t nrows, orion_bow_weight weight, int l2,
                  orion_array **rowptr, orion_array **cols,
                  orion_array **vals, orion_error *err) {
  int64_t ndocs, nwords, *start = NULL, *fill = NULL, e, r, total = 0;
  bow_ent *ent = NULL;
  int64_t *rp = NULL;
  int rc = 0;
  int64_t dims[1];

  *rowptr = *cols = *vals = NULL;
  if (counts->ndims != 2)
    return orion_error_set(err, ORION_EDIMS,
                           "bag-of-words counts must be a 2-D (document x "
                           "word) array, not %d-D",
                           counts->ndims);
  ndocs = counts->dims[0];
  nwords = counts->dims[1];
  if (nwords > INT32_MAX)
    return orion_error_set(err, ORION_EDIMS,
                           "bag-of-words: %lld words do not fit i32 ids",
                           (long long)nwords);
  for (r = 0; r < nrows; r++)
    if (rows[r] < 0 || rows[r] >= ndocs)
      return orion_error_set(err, ORION_EINVAL,
                             "bag-of-words: document %lld out of range "
                             "1..%lld",
                             (long long)rows[r] + 1, (long long)ndocs);
  /* Group the stored elements by document (counting sort). */
  start = orion_calloc((size_t)ndocs + 1, sizeof *start);
  fill = orion_calloc((size_t)ndocs + 1, sizeof *fill);
  ent = orion_malloc(sizeof *ent * (size_t)(counts->nnz > 0 ? counts->nnz : 1));
  rp = orion_malloc(sizeof *rp * (size_t)(nrows + 1));
  if (start == NULL || fill == NULL || ent == NULL || rp == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "bag-of-words: out of memory");
    goto done;
  }
  for (e = 0; e < counts->nnz; e++) {
    int64_t doc = counts->sparse ? counts->keys[2 * e] : e / nwords;
    start[doc + 1]++;
  }
  for (r = 0; r < ndocs; r++)
    start[r + 1] += start[r];
  for (e = 0; e < counts->nnz; e++) {
    int64_t doc, word, at;
    double c = orion_value_get_f64(counts->values, counts->type, e);
    if (counts->sparse) {
      doc = counts->keys[2 * e];
      word = counts->keys[2 * e + 1];
    } else {
      doc = e / nwords;
      word = e % nwords;
    }
    if (c < 0 || c != c) {
      rc = orion_error_set(err, ORION_EPARSE,
                           "bag-of-words: document %lld, word %lld: count %g "
                           "is negative",
                           (long long)doc + 1, (long long)word + 1, c);
      goto done;
    }
    at = start[doc] + fill[doc]++;
    ent[at].word = word;
    ent[at].count = c;
  }
  /* Sort each selected document's words, merge duplicates and drop zero
   * counts, once per document (a document may be listed twice); fill[doc]
   * becomes its length, -1 while not done. */
  for (r = 0; r < ndocs; r++)
    fill[r] = -1;
  rp[0] = 0;
  for (r = 0; r < nrows; r++) {
    int64_t doc = rows[r], lo = start[doc], hi = start[doc + 1], j, k = 0;
    if (fill[doc] < 0) {
      qsort(ent + lo, (size_t)(hi - lo), sizeof *ent, cmp_ent);
      for (j = lo; j < hi; j++) {
        if (k > 0 && ent[lo + k - 1].word == ent[j].word)
          ent[lo + k - 1].count += ent[j].count;
        else
          ent[lo + k++] = ent[j];
      }
      fill[doc] = 0;
      for (j = 0; j < k; j++)
        if (ent[lo + j].count > 0)
          ent[lo + fill[doc]++] = ent[lo + j];
    }
    total += fill[doc];
    rp[r + 1] = total;
  }
  dims[0] = nrows + 1;
  *rowptr = orion_array_new_dense(1, dims, ORION_I64, err);
  dims[0] = total > 0 ? total : 1;
  *cols = orion_array_new_dense(1, dims, ORION_I32, err);
  *vals = orion_array_new_dense(1, dims, ORION_F32, err);
  if (*rowptr == NULL || *cols == NULL || *vals == NULL) {
    rc = orion_error_set(err, ORION_ENOMEM, "bag-of-words: out of memory");
    goto done;
  }
  memcpy((*rowptr)->values, rp, sizeof *rp * (size_t)(nrows + 1));
  for (r = 0; r < nrows; r++) {
    int64_t doc = rows[r], lo = start[doc], n = rp[r + 1] - rp[r], j;
    int32_t *cv = (int32_t *)(*cols)->values + rp[r];
    float *vv = (float *)(*vals)->values + rp[r];
    double norm = 0;
    for (j = 0; j < n; j++) {
      double w = ent[lo + j].count;
      if (weight == ORION_BOW_LOG1P)
        w = log1p(w);
      cv[j] = (int32_t)(ent[lo + j].word + 1);
      vv[j] = (float)w;
      norm += w * w;
    }
    if (l2 && norm > 0) {
      double s = 1.0 / sqrt(norm);
      for (j = 0; j < n; j++)
        vv[j] = (float)(vv[j] * s);
    }
  }
done:
  if (rc != 0) {
    orion_array_release(*rowptr);
    orion_array_release(*cols);
    orion_array_release(*vals);
    *rowptr = *cols = *vals = NULL;
  }
  orion_free(start);
  orion_free(fill);
  orion_free(ent);
  orion_free(rp);
  return rc;
}
