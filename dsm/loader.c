/* The text loaders' entry points that need no parser internals (see
 * dsm/loader.h): merging the results of byte ranges in range order, and
 * loading a whole file.  Parsing itself is dsm/load_walk.c (the walk over
 * lines), dsm/load_formats.c (the formats) and dsm/load_scan.c (the
 * scanner); reading a file, plain or gzip, is dsm/load_gzip.c.
 */
#include "dsm/loader.h"

#include <string.h>

#include "util/alloc.h"

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

/* orion_map_file + orion_load_buffer; the file's bytes are released here,
 * the result's arrays belong to the caller. */
int orion_load_file(const char *path, const orion_load_opts *o,
                    orion_load_result *res, orion_error *err) {
  char *data;
  size_t len;
  int rc, mapped;
  memset(res, 0, sizeof *res);
  rc = orion_map_file(path, &data, &len, &mapped, err);
  if (rc != 0)
    return rc;
  rc = orion_load_buffer(data, len, path, 1, o, res, err);
  orion_unmap_file(data, len, mapped);
  return rc;
}
