/* orion-executor: parsing one byte range of an input file for the driver
 * (parallel loading: LOAD_FILE in, LOADED out; layouts in dsm/proto.h). */
#include "config.h"

#include <string.h>

#include "drivers/exec_load.h"
#include "dsm/loader.h"
#include "dsm/proto.h"
#include "dsm/types.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

static void loaded_error(orion_buf *out, const char *msg) {
  size_t at = orion_wire_begin(out, ORION_WIRE_LOADED);
  orion_buf_u64(out, 0);
  orion_pw_bytes(out, msg, strlen(msg));
  orion_wire_end(out, at);
}

static void put_array(orion_buf *out, const orion_array *a) {
  int d;
  orion_buf_u64(out, (uint64_t)a->type);
  orion_buf_u64(out, (uint64_t)a->ndims);
  for (d = 0; d < a->ndims; d++)
    orion_pw_i64(out, a->dims[d]);
  orion_pw_i64(out, a->nnz);
  orion_pw_bytes(out, a->keys,
                 a->sparse ? (size_t)a->nnz * (size_t)a->ndims * 8 : 0);
  orion_pw_bytes(out, a->values, (size_t)a->nnz * orion_type_size(a->type));
}

int orion_executor_load_range(const char *p, size_t n, orion_buf *out) {
  orion_reader r;
  orion_load_opts o;
  orion_load_result res;
  orion_error err;
  const char *path;
  size_t plen, len = 0;
  char *file, *data = NULL;
  int64_t part, nparts;
  int d, rc;
  uint64_t lo, hi;
  size_t at;

  orion_reader_init(&r, p, n);
  path = orion_pr_bytes(&r, &plen);
  part = orion_pr_i64(&r);
  nparts = orion_pr_i64(&r);
  orion_load_opts_init(&o);
  o.format = (orion_format)orion_pr_i64(&r);
  o.index_base = (int)orion_pr_i64(&r);
  o.nkeys = (int)orion_pr_i64(&r);
  o.have_dims = (int)orion_pr_i64(&r);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    o.dims[d] = orion_pr_i64(&r);
  o.value_type = (orion_type)orion_pr_i64(&r);
  o.skip_errors = (int)orion_pr_i64(&r);
  o.sep = (char)orion_pr_i64(&r);
  o.header = (int)orion_pr_i64(&r);
  o.ncols_key = (int)orion_pr_i64(&r);
  for (d = 0; d < ORION_MAX_DIMS; d++)
    o.key_cols[d] = (int)orion_pr_i64(&r);
  o.value_col = (int)orion_pr_i64(&r);
  if (r.bad || r.left != 0 || nparts < 1 || part < 0 || part >= nparts) {
    loaded_error(out, "malformed LOAD_FILE frame");
    return ORION_EPARSE;
  }
  file = orion_strndup(path, plen);
  orion_error_clear(&err);
  rc = file != NULL ? orion_read_file(file, &data, &len, &err) : ORION_ENOMEM;
  if (rc == 0) {
    lo = (uint64_t)((unsigned __int128)len * (uint64_t)part / (uint64_t)nparts);
    hi = (uint64_t)((unsigned __int128)len * (uint64_t)(part + 1) /
                    (uint64_t)nparts);
    memset(&res, 0, sizeof res);
    rc = orion_load_buffer_range(data, len, file, lo, hi, &o, &res, &err);
  }
  orion_free(data);
  orion_free(file);
  if (rc != 0) {
    loaded_error(out, err.msg[0] ? err.msg : orion_strerror(rc));
    return rc;
  }
  at = orion_wire_begin(out, ORION_WIRE_LOADED);
  orion_buf_u64(out, 1);
  put_array(out, res.array);
  orion_buf_u64(out, res.labels != NULL);
  if (res.labels != NULL)
    put_array(out, res.labels);
  orion_pw_i64(out, res.row_lo);
  orion_pw_i64(out, res.lines);
  orion_pw_i64(out, res.skipped);
  orion_pw_bytes(out, res.first_skip, strlen(res.first_skip));
  orion_array_release(res.array);
  orion_array_release(res.labels);
  rc = orion_wire_end(out, at);
  if (rc != 0) {
    out->len = at;
    loaded_error(out, "this executor's part of the file is larger than the "
                      "largest frame (256 MiB): use more executors");
    return rc;
  }
  return 0;
}
