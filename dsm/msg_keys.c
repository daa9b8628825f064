/* The payload codec of BLOCK_KEYS (dsm/msg.h, wire version 15): the keys
 * a block read and wrote directly, which an executor sends under
 * orion-driver --verify before the block's BLOCK_DONE. */
#include <string.h>

#include "dsm/msg.h"
#include "dsm/msg_field.h"

#define SRC_MIN 9u    /* a length and at least one byte */
#define RANGE_MIN 96u /* twelve i64 */

static int range_ok(const orion_msg_key_range *r, int64_t nsrcs) {
  return r->lo >= 0 && r->lo < r->hi && r->flags >= 1 &&
         r->flags <= (ORION_KEY_READ | ORION_KEY_WRITE) && r->rline >= 0 &&
         r->wline >= 0 && r->rsrc >= 0 && r->wsrc >= 0 &&
         (r->rsrc < nsrcs || r->rline == 0) &&
         (r->wsrc < nsrcs || r->wline == 0) && r->rfirst >= -1 &&
         r->rlast >= r->rfirst && r->wfirst >= -1 && r->wlast >= r->wfirst;
}

int orion_msg_block_keys_encode(orion_buf *b, const orion_msg_block_keys *m) {
  orion__mw e;
  int64_t k;
  orion__mw_begin(&e, b, ORION_WIRE_BLOCK_KEYS);
  orion__mw_need(&e, m->block >= 0);
  orion__mw_i64(&e, m->block);
  if (orion__mw_count(&e, m->srcs, m->nsrcs))
    for (k = 0; k < m->nsrcs; k++) {
      orion__mw_need(&e, m->srcs[k].len >= 1 &&
                             m->srcs[k].len <= ORION_MSG_KEYSRC_MAX);
      orion__mw_bytes(&e, m->srcs[k].s, m->srcs[k].len);
    }
  if (orion__mw_count(&e, m->ranges, m->nranges))
    for (k = 0; k < m->nranges; k++) {
      const orion_msg_key_range *r = &m->ranges[k];
      orion__mw_need(&e, range_ok(r, m->nsrcs));
      orion__mw_i64(&e, r->array);
      orion__mw_i64(&e, r->lo);
      orion__mw_i64(&e, r->hi);
      orion__mw_i64(&e, r->flags);
      orion__mw_i64(&e, r->rline);
      orion__mw_i64(&e, r->rsrc);
      orion__mw_i64(&e, r->wline);
      orion__mw_i64(&e, r->wsrc);
      orion__mw_i64(&e, r->rfirst);
      orion__mw_i64(&e, r->rlast);
      orion__mw_i64(&e, r->wfirst);
      orion__mw_i64(&e, r->wlast);
    }
  return orion__mw_end(&e);
}

int orion_msg_block_keys_decode(const void *p, size_t n,
                                orion_msg_block_keys *out, orion_error *err) {
  orion_msg_block_keys m;
  orion_msg_keysrc *s;
  orion_msg_key_range *v;
  orion__mr d;
  int64_t k;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "BLOCK_KEYS", err);
  m.block = orion__mr_in(&d, "block", 0, INT64_MAX, ORION_EPARSE);
  s = orion__mr_list(&d, "source", SRC_MIN, sizeof *s, &m.nsrcs);
  m.srcs = s;
  for (k = 0; k < m.nsrcs && d.rc == 0; k++) {
    s[k].s = orion__mr_bytes(&d, "source", &s[k].len);
    if (d.rc == 0 && (s[k].len < 1 || s[k].len > ORION_MSG_KEYSRC_MAX))
      orion__mr_fail(&d, ORION_EPARSE, "source %lld is %zu bytes (1..%d)",
                     (long long)k, s[k].len, ORION_MSG_KEYSRC_MAX);
  }
  v = orion__mr_list(&d, "range", RANGE_MIN, sizeof *v, &m.nranges);
  m.ranges = v;
  for (k = 0; k < m.nranges && d.rc == 0; k++) {
    v[k].array = orion__mr_i64(&d, "range's array");
    v[k].lo = orion__mr_i64(&d, "range's lo");
    v[k].hi = orion__mr_i64(&d, "range's hi");
    v[k].flags = orion__mr_i64(&d, "range's flags");
    v[k].rline = orion__mr_i64(&d, "range's read line");
    v[k].rsrc = orion__mr_i64(&d, "range's read source");
    v[k].wline = orion__mr_i64(&d, "range's write line");
    v[k].wsrc = orion__mr_i64(&d, "range's write source");
    v[k].rfirst = orion__mr_i64(&d, "range's first reader");
    v[k].rlast = orion__mr_i64(&d, "range's last reader");
    v[k].wfirst = orion__mr_i64(&d, "range's first writer");
    v[k].wlast = orion__mr_i64(&d, "range's last writer");
    if (d.rc == 0 && !range_ok(&v[k], m.nsrcs))
      orion__mr_fail(&d, ORION_EPARSE,
                     "range %lld (elements %lld..%lld, flags %lld) is "
                     "empty, has no access or names a source or element "
                     "out of range",
                     (long long)k, (long long)v[k].lo, (long long)v[k].hi,
                     (long long)v[k].flags);
  }
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_block_keys_free(out);
  return d.rc;
}

void orion_msg_block_keys_free(orion_msg_block_keys *m) {
  orion__msg_drop(m->srcs);
  orion__msg_drop(m->ranges);
  memset(m, 0, sizeof *m);
}
