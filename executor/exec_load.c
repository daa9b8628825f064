/* orion-executor: parsing one byte range of an input file for the driver
 * (parallel loading: LOAD_FILE in, LOADED out; layouts in dsm/msg.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "executor/exec_load.h"
#include "executor/exec_kept.h"
#include "dsm/loader.h"
#include "dsm/msg.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* LOADED's echo of the LOAD_FILE lf answers (its part and digest). */
static void loaded_echo(orion_msg_loaded *m, const orion_msg_load_file *lf) {
  m->part = lf->part;
  m->digest = lf->digest;
  m->digest_len = lf->digest_len;
}

static void loaded_error(orion_buf *out, const orion_msg_load_file *lf,
                         const char *msg) {
  orion_msg_loaded m;
  memset(&m, 0, sizeof m);
  m.msg = msg;
  m.msg_len = strlen(msg);
  if (lf != NULL)
    loaded_echo(&m, lf);
  orion_msg_loaded_encode(out, &m); /* out of memory: out->oom tells */
}

/* The LOADED view of a, whose keys are sent when it is sparse. */
static void loaded_array(orion_msg_loaded_array *m, const orion_array *a) {
  m->type = (int)a->type;
  m->ndims = a->ndims;
  memcpy(m->dims, a->dims, sizeof(int64_t) * (size_t)a->ndims);
  m->nnz = a->nnz;
  m->keys = (const char *)a->keys;
  m->keys_len = a->sparse ? (size_t)a->nnz * (size_t)a->ndims * 8 : 0;
  m->values = (const char *)a->values;
  m->values_len = (size_t)a->nnz * orion_type_size(a->type);
}

int orion_executor_load_range(const char *p, size_t n, orion_buf *out) {
  orion_msg_load_file lf;
  orion_msg_loaded m;
  orion_load_result res;
  orion_error err;
  size_t len = 0, at = out->len;
  char *file, *data = NULL;
  int rc, mapped = 0, kept, keep;
  uint64_t lo, hi;
  struct stat st;

  if (orion_msg_load_file_decode(p, n, &lf, NULL) != 0 || lf.nparts < 1 ||
      lf.part < 0 || lf.part >= lf.nparts) {
    loaded_error(out, NULL, "malformed LOAD_FILE frame");
    return ORION_EPARSE;
  }
  file = orion_strndup(lf.path != NULL ? lf.path : "", lf.path_len);
  if (file == NULL) {
    loaded_error(out, &lf, orion_strerror(ORION_ENOMEM));
    return ORION_ENOMEM;
  }
  /* A load an --elastic driver named (its digest): the copy kept of it,
   * or none (held_only), or parsed now and kept. */
  kept = lf.digest_len > 0 ? orion_kept_answer(lf.digest, file, out) : 0;
  if (kept != 0 || lf.held_only) {
    if (kept == 0) {
      memset(&m, 0, sizeof m);
      loaded_echo(&m, &lf);
      m.not_held = 1;
      orion_msg_loaded_encode(out, &m);
    }
    orion_free(file);
    return kept < 0 ? ORION_ENOMEM : 0;
  }
  orion_error_clear(&err);
  /* (the identity before the parse: a file changed under it is parsed
   * again next time) */
  keep = lf.digest_len > 0 && stat(file, &st) == 0;
  rc = orion_map_file(file, &data, &len, &mapped, &err);
  if (rc == 0) {
    lo = (uint64_t)((unsigned __int128)len * (uint64_t)lf.part /
                    (uint64_t)lf.nparts);
    hi = (uint64_t)((unsigned __int128)len * (uint64_t)(lf.part + 1) /
                    (uint64_t)lf.nparts);
    memset(&res, 0, sizeof res);
    rc = orion_load_buffer_range(data, len, file, lo, hi, &lf.opts, &res,
                                 &err);
  }
  if (data != NULL)
    orion_unmap_file(data, len, mapped);
  orion_free(file);
  if (rc != 0) {
    loaded_error(out, &lf, err.msg[0] ? err.msg : orion_strerror(rc));
    return rc;
  }
  memset(&m, 0, sizeof m);
  m.ok = 1;
  loaded_array(&m.array, res.array);
  m.has_labels = res.labels != NULL;
  if (res.labels != NULL)
    loaded_array(&m.labels, res.labels);
  m.row_lo = res.row_lo;
  m.lines = res.lines;
  m.skipped = res.skipped;
  m.first_skip = res.first_skip;
  m.first_skip_len = strlen(res.first_skip);
  loaded_echo(&m, &lf);
  rc = orion_msg_loaded_encode(out, &m);
  orion_array_release(res.array);
  orion_array_release(res.labels);
  if (rc == -EMSGSIZE) {
    out->len = at;
    loaded_error(out, &lf, "this executor's part of the file is larger "
                           "than the largest frame (256 MiB): use more "
                           "executors");
  } else if (rc != 0 && rc != ORION_ENOMEM) {
    out->len = at;
    loaded_error(out, &lf, orion_strerror(rc));
  } else if (rc == 0 && keep) {
    orion_kept_add(lf.digest, &st, out->data + at, out->len - at);
  }
  return rc;
}
