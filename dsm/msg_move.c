/* The payload codec of rows that move between executors (dsm/msg.h):
 * resident rows (SEND_ROWS, MOVE_ROWS, ROWS, ROWS_PULL, ROWS_DATA) and the writes of
 * directly written sharded arrays (SHARD_WRITE, WRITE_ACK). */
#include <string.h>

#include "dsm/msg.h"
#include "dsm/msg_field.h"

static int send_rows_encode(orion_buf *b, int type,
                            const orion_msg_send_rows *m) {
  orion__mw e;
  orion__mw_begin(&e, b, type);
  orion__mw_i64(&e, m->run);
  orion__mw_moves(&e, m->moves, m->n);
  return orion__mw_end(&e);
}

static int send_rows_decode(const void *p, size_t n, const char *what,
                            orion_msg_send_rows *out, orion_error *err) {
  orion_msg_send_rows m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, what, err);
  m.run = orion__mr_i64(&d, "run");
  m.moves = orion__mr_moves(&d, "move", &m.n);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_send_rows_free(out);
  return d.rc;
}

int orion_msg_send_rows_encode(orion_buf *b, const orion_msg_send_rows *m) {
  return send_rows_encode(b, ORION_WIRE_SEND_ROWS, m);
}

int orion_msg_send_rows_decode(const void *p, size_t n,
                               orion_msg_send_rows *out, orion_error *err) {
  return send_rows_decode(p, n, "SEND_ROWS", out, err);
}

void orion_msg_send_rows_free(orion_msg_send_rows *m) {
  orion__msg_drop(m->moves);
  memset(m, 0, sizeof *m);
}

int orion_msg_move_rows_encode(orion_buf *b, const orion_msg_move_rows *m) {
  return send_rows_encode(b, ORION_WIRE_MOVE_ROWS, m);
}

int orion_msg_move_rows_decode(const void *p, size_t n,
                               orion_msg_move_rows *out, orion_error *err) {
  return send_rows_decode(p, n, "MOVE_ROWS", out, err);
}

void orion_msg_move_rows_free(orion_msg_move_rows *m) {
  orion_msg_send_rows_free(m);
}

static int rows_encode(orion_buf *b, int type, const orion_msg_rows *m,
                       int sealed) {
  orion__mw e;
  orion__mw_begin(&e, b, type);
  e.sealed = sealed;
  orion__mw_i64(&e, m->run);
  orion__mw_i64(&e, m->block);
  orion__mw_runs(&e, m->runs, m->nruns);
  return orion__mw_end(&e);
}

static int rows_decode(const void *p, size_t n, const char *what,
                       orion_msg_rows *out, orion_error *err) {
  orion_msg_rows m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, what, err);
  m.run = orion__mr_i64(&d, "run");
  m.block = orion__mr_i64(&d, "block");
  m.runs = orion__mr_runs(&d, &m.nruns);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_rows_free(out);
  return d.rc;
}

void orion_msg_rows_free(orion_msg_rows *m) {
  orion__msg_drop(m->runs);
  memset(m, 0, sizeof *m);
}

int orion_msg_rows_encode(orion_buf *b, const orion_msg_rows *m) {
  return rows_encode(b, ORION_WIRE_ROWS, m, 0);
}

int orion_msg_rows_encode_sealed(orion_buf *b, const orion_msg_rows *m) {
  return rows_encode(b, ORION_WIRE_ROWS, m, 1);
}

int orion_msg_rows_decode(const void *p, size_t n, orion_msg_rows *out,
                          orion_error *err) {
  return rows_decode(p, n, "ROWS", out, err);
}

int orion_msg_rows_data_encode(orion_buf *b, const orion_msg_rows *m) {
  return rows_encode(b, ORION_WIRE_ROWS_DATA, m, 0);
}

int orion_msg_rows_data_decode(const void *p, size_t n, orion_msg_rows *out,
                               orion_error *err) {
  return rows_decode(p, n, "ROWS_DATA", out, err);
}

void orion_msg_rows_data_free(orion_msg_rows *m) { orion_msg_rows_free(m); }

int orion_msg_rows_pull_encode(orion_buf *b, const orion_msg_rows_pull *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_ROWS_PULL);
  orion__mw_ranges(&e, m->ranges, m->n);
  return orion__mw_end(&e);
}

int orion_msg_rows_pull_decode(const void *p, size_t n,
                               orion_msg_rows_pull *out, orion_error *err) {
  orion_msg_rows_pull m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "ROWS_PULL", err);
  m.ranges = orion__mr_ranges(&d, "range", &m.n);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_rows_pull_free(out);
  return d.rc;
}

void orion_msg_rows_pull_free(orion_msg_rows_pull *m) {
  orion__msg_drop(m->ranges);
  memset(m, 0, sizeof *m);
}

int orion_msg_shard_write_encode(orion_buf *b, const orion_msg_shard_write *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_SHARD_WRITE);
  orion__mw_i64(&e, m->run);
  orion__mw_runs(&e, m->runs, m->nruns);
  return orion__mw_end(&e);
}

int orion_msg_shard_write_decode(const void *p, size_t n,
                                 orion_msg_shard_write *out, orion_error *err) {
  orion_msg_shard_write m;
  orion__mr d;
  memset(&m, 0, sizeof m);
  orion__mr_init(&d, p, n, "SHARD_WRITE", err);
  m.run = orion__mr_i64(&d, "run");
  m.runs = orion__mr_runs(&d, &m.nruns);
  *out = m;
  if (orion__mr_end(&d) != 0)
    orion_msg_shard_write_free(out);
  return d.rc;
}

void orion_msg_shard_write_free(orion_msg_shard_write *m) {
  orion__msg_drop(m->runs);
  memset(m, 0, sizeof *m);
}

int orion_msg_write_ack_encode(orion_buf *b, const orion_msg_write_ack *m) {
  orion__mw e;
  orion__mw_begin(&e, b, ORION_WIRE_WRITE_ACK);
  orion__mw_i64(&e, m->run);
  return orion__mw_end(&e);
}

int orion_msg_write_ack_decode(const void *p, size_t n,
                               orion_msg_write_ack *out, orion_error *err) {
  orion__mr d;
  memset(out, 0, sizeof *out);
  orion__mr_init(&d, p, n, "WRITE_ACK", err);
  out->run = orion__mr_i64(&d, "run");
  return orion__mr_end(&d);
}
