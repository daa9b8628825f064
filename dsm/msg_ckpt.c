/* The payload codec of checkpoints written by the executors (dsm/msg.h,
 * issue 19): CKPT_WRITE (driver -> executor) and CKPT_DONE (executor ->
 * driver). */
#include <string.h>

#include "dsm/msg.h"
#include "dsm/msg_field.h"

#define FOLDER_MAX 4095
#define ERROR_MAX 1023

int orion_msg_ckpt_write_encode(orion_buf *b, const orion_msg_ckpt_write *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_CKPT_WRITE);
  orion__mw_need(&e, m->folder_len > 0 && m->folder_len <= FOLDER_MAX &&
                         memchr(m->folder, '\0', m->folder_len) == NULL);
  orion__mw_i64(&e, m->step);
  orion__mw_bytes(&e, m->folder, m->folder_len);
  orion__mw_ranges(&e, m->ranges, m->n);
  return orion__mw_end(&e);
}

int orion_msg_ckpt_write_decode(const void *p, size_t n,
                                orion_msg_ckpt_write *out, orion_error *err) {
  orion_msg_ckpt_write m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "CKPT_WRITE", err);
  m.step = orion__mr_in(&d, "step", 0, INT64_MAX, ORION_EPARSE);
  m.folder = orion__mr_bytes(&d, "folder", &m.folder_len);
  if (d.rc == 0 && (m.folder_len == 0 || m.folder_len > FOLDER_MAX ||
                    memchr(m.folder, '\0', m.folder_len) != NULL))
    orion__mr_fail(&d, ORION_EPARSE,
                   "the folder is %zu bytes or holds a NUL (1..%d, none)",
                   m.folder_len, FOLDER_MAX);
  m.ranges = orion__mr_ranges(&d, "range", &m.n);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_ckpt_write_free(out);
  return d.rc;
}

void orion_msg_ckpt_write_free(orion_msg_ckpt_write *m) {
  orion__msg_drop(m->ranges);
  memset(m, 0, sizeof *m);
}

int orion_msg_ckpt_done_encode(orion_buf *b, const orion_msg_ckpt_done *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_CKPT_DONE);
  orion__mw_need(&e, m->error_len <= ERROR_MAX);
  orion__mw_i64(&e, m->step);
  orion__mw_bytes(&e, m->error, m->error_len);
  if (orion__mw_count(&e, m->parts, m->n))
    for (k = 0; k < m->n; k++) {
      const orion_msg_ckpt_part *q = &m->parts[k];
      orion__mw_need(&e, q->first >= 0 && q->count >= 0);
      orion__mw_i64(&e, q->array);
      orion__mw_i64(&e, q->first);
      orion__mw_i64(&e, q->count);
      orion__mw_u64(&e, q->size);
      orion__mw_u64(&e, q->crc);
    }
  return orion__mw_end(&e);
}

int orion_msg_ckpt_done_decode(const void *p, size_t n,
                               orion_msg_ckpt_done *out, orion_error *err) {
  orion_msg_ckpt_done m;
  orion_msg_ckpt_part *v;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "CKPT_DONE", err);
  m.step = orion__mr_in(&d, "step", 0, INT64_MAX, ORION_EPARSE);
  m.error = orion__mr_bytes(&d, "error", &m.error_len);
  if (d.rc == 0 && m.error_len > ERROR_MAX)
    orion__mr_fail(&d, ORION_EPARSE, "the error is %zu bytes, more than %d",
                   m.error_len, ERROR_MAX);
  v = orion__mr_list(&d, "part", 40, sizeof *v, &m.n);
  for (k = 0; k < m.n && d.rc == 0; k++) {
    v[k].array = orion__mr_i64(&d, "part's array");
    v[k].first = orion__mr_in(&d, "part's first", 0, INT64_MAX, ORION_EPARSE);
    v[k].count = orion__mr_in(&d, "part's count", 0, INT64_MAX, ORION_EPARSE);
    v[k].size = orion__mr_u64(&d, "part's size");
    v[k].crc = (uint32_t)orion__mr_in(&d, "part's CRC-32", 0, UINT32_MAX,
                                      ORION_EPARSE);
  }
  m.parts = v;
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_ckpt_done_free(out);
  return d.rc;
}

void orion_msg_ckpt_done_free(orion_msg_ckpt_done *m) {
  orion__msg_drop(m->parts);
  memset(m, 0, sizeof *m);
}
