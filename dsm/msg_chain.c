/* The payload codec of BCAST (dsm/msg.h): one piece of a broadcast that
 * travels along a chain of executors. */
#include <string.h>

#include "dsm/msg.h"
#include "dsm/msg_field.h"

int orion_msg_bcast_encode(orion_buf *b, const orion_msg_bcast *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_BCAST);
  orion__mw_need(&e, m->nframes >= 1 && m->index >= 0 &&
                         m->index < m->nframes);
  orion__mw_i64(&e, m->run);
  orion__mw_i64(&e, m->array);
  orion__mw_flag(&e, m->forward);
  orion__mw_i64(&e, m->index);
  orion__mw_i64(&e, m->nframes);
  orion__mw_runs(&e, m->runs, m->nruns);
  return orion__mw_end(&e);
}

int orion_msg_bcast_decode(const void *p, size_t n, orion_msg_bcast *out,
                           orion_error *err) {
  orion_msg_bcast m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "BCAST", err);
  m.run = orion__mr_i64(&d, "run");
  m.array = orion__mr_i64(&d, "array");
  m.forward = orion__mr_flag(&d, "forward");
  m.index = orion__mr_in(&d, "index", 0, INT64_MAX - 1, ORION_EPARSE);
  m.nframes = orion__mr_in(&d, "nframes", m.index + 1, INT64_MAX,
                           ORION_EPARSE);
  m.runs = orion__mr_runs(&d, &m.nruns);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_bcast_free(out);
  return d.rc;
}

void orion_msg_bcast_free(orion_msg_bcast *m) {
  orion__msg_drop(m->runs);
  memset(m, 0, sizeof *m);
}
