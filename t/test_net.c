/* dsm/net.h: a corked connection over loopback TCP.
 *
 * A corked connection holds small frames until orion_conn_flush and then
 * sends them in order as one set of records (one record's overhead for
 * several frames); nothing reaches the peer before the flush; a frame over
 * ORION_CONN_HOLD_MAX sends what is held first, then itself; closing a
 * corked connection sends what it holds before it closes.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <uv.h>

#include "dsm/net.h"
#include "dsm/sec.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"

#define TOKEN "c41e9a7b2f5d08e3a6c9b1d47f2e8a05"
#define MAXF 80

typedef struct got {
  int n;
  int type[MAXF];
  size_t len[MAXF];
  unsigned char *payload[MAXF];
  int closed;
} got;

static uv_loop_t loop;
static uv_tcp_t server;
static orion_conn *cli, *acc; /* connector (reads), acceptor (corked) */
static got g;
static int cli_up;

static void on_cli_frame(orion_conn *c, const orion_wire_frame *f) {
  (void)c;
  cr_assert_lt(g.n, MAXF, "more frames than sent");
  g.type[g.n] = f->type;
  g.len[g.n] = f->len;
  g.payload[g.n] = orion_malloc(f->len + 1);
  cr_assert_not_null(g.payload[g.n]);
  if (f->len > 0)
    memcpy(g.payload[g.n], f->payload, f->len);
  g.n++;
}

static void on_cli_closed(orion_conn *c, const char *why) {
  (void)c;
  (void)why;
  g.closed = 1;
  cli = NULL;
}

static void on_cli_connected(orion_conn *c) {
  (void)c;
  cli_up = 1;
}

static void on_acc_frame(orion_conn *c, const orion_wire_frame *f) {
  (void)c;
  (void)f;
}

static void on_acc_closed(orion_conn *c, const char *why) {
  (void)c;
  (void)why;
  acc = NULL;
}

static void on_connection(uv_stream_t *s, int status) {
  orion_conn_cbs cbs;
  cr_assert_eq(status, 0);
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = on_acc_frame;
  cbs.closed = on_acc_closed;
  acc = orion_conn_new(&loop, ORION_WIRE_ACCEPT, TOKEN, ORION_SEC_AUTO, &cbs,
                       NULL);
  cr_assert_not_null(acc);
  cr_assert_eq(orion_conn_accept(s, acc), 0);
}

/* Runs the loop until *flag is set, 5 s at most. */
static void run_until(const int *flag, const char *what) {
  double until = orion_now() + 5;
  while (!*flag && orion_now() < until)
    uv_run(&loop, UV_RUN_NOWAIT);
  cr_assert(*flag, "timed out waiting for %s", what);
}

/* Runs the loop for `s` seconds. */
static void run_for(double s) {
  double until = orion_now() + s;
  while (orion_now() < until)
    uv_run(&loop, UV_RUN_NOWAIT);
}

/* Runs the loop until n frames have arrived, 5 s at most. */
static void run_until_frames(int n) {
  double until = orion_now() + 5;
  while (g.n < n && orion_now() < until)
    uv_run(&loop, UV_RUN_NOWAIT);
  cr_assert_eq(g.n, n, "%d frames arrived, %d sent", g.n, n);
}

static void setup(void) {
  orion_conn_cbs cbs;
  char msg[256];
  int port = 0;
  memset(&g, 0, sizeof g);
  cli_up = 0;
  acc = NULL;
  cr_assert_eq(uv_loop_init(&loop), 0);
  cr_assert_eq(orion_net_listen(&loop, &server, "127.0.0.1", 0,
                                on_connection, &port, msg, sizeof msg),
               0, "%s", msg);
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = on_cli_frame;
  cbs.closed = on_cli_closed;
  cbs.connected = on_cli_connected;
  cli = orion_conn_new(&loop, ORION_WIRE_CONNECT, TOKEN, ORION_SEC_AUTO, &cbs,
                       NULL);
  cr_assert_not_null(cli);
  cr_assert_eq(orion_conn_connect(cli, "127.0.0.1", port), 0);
  run_until(&cli_up, "the handshake");
  cr_assert_not_null(acc);
  {
    double until = orion_now() + 5;
    while (!acc->authed && orion_now() < until)
      uv_run(&loop, UV_RUN_NOWAIT);
  }
  cr_assert(acc->authed, "the acceptor never completed the handshake");
}

static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void teardown(void) {
  int i;
  if (cli != NULL)
    orion_conn_close(cli, "test over");
  if (acc != NULL)
    orion_conn_close(acc, "test over");
  run_for(0.05);
  uv_walk(&loop, walk_close, NULL);
  while (uv_run(&loop, UV_RUN_NOWAIT) != 0)
    ;
  cr_assert_eq(uv_loop_close(&loop), 0);
  for (i = 0; i < g.n; i++)
    orion_free(g.payload[i]);
}

/* Sends a frame of `type` whose payload is len bytes of `fill`; returns
 * its bytes on the wire. */
static size_t send_fill(orion_conn *c, int type, size_t len, int fill) {
  orion_buf b;
  unsigned char *p = orion_malloc(len + 1);
  size_t n;
  cr_assert_not_null(p);
  memset(p, fill, len);
  orion_buf_init(&b);
  cr_assert_eq(orion_wire_encode(&b, type, p, len), 0);
  n = b.len;
  cr_assert_eq(orion_conn_send(c, &b), 0);
  orion_buf_free(&b);
  orion_free(p);
  return n;
}

static void expect_frame(int i, int type, size_t len, int fill) {
  size_t k;
  cr_assert_eq(g.type[i], type, "frame %d: type %d, sent %d", i, g.type[i],
               type);
  cr_assert_eq(g.len[i], len, "frame %d: %zu bytes, sent %zu", i, g.len[i],
               len);
  for (k = 0; k < len; k++)
    cr_assert_eq(g.payload[i][k], (unsigned char)fill,
                 "frame %d: byte %zu changed", i, k);
}

TestSuite(net, .init = setup, .fini = teardown, .timeout = 30);

Test(net, corked_frames_wait_for_the_flush_and_go_as_one_record) {
  uint64_t before = acc->bytes_out;
  size_t bytes = 0;
  orion_conn_cork(acc, 1);
  bytes += send_fill(acc, ORION_WIRE_WELCOME, 0, 0);
  bytes += send_fill(acc, ORION_WIRE_HEARTBEAT, 100, 0x11);
  bytes += send_fill(acc, ORION_WIRE_HEARTBEAT, 2000, 0x22);
  bytes += send_fill(acc, ORION_WIRE_HEARTBEAT, 300, 0x33);
  cr_assert_eq(acc->bytes_out, before, "a held frame went out");
  run_for(0.1);
  cr_assert_eq(g.n, 0, "%d held frames arrived before the flush", g.n);
  cr_assert_eq(orion_conn_flush(acc), 0);
  cr_assert_eq(acc->bytes_out - before, bytes + ORION_SEC_RECORD_OVERHEAD,
               "4 frames of %zu bytes took %llu bytes: not one record",
               bytes, (unsigned long long)(acc->bytes_out - before));
  run_until_frames(4);
  expect_frame(0, ORION_WIRE_WELCOME, 0, 0);
  expect_frame(1, ORION_WIRE_HEARTBEAT, 100, 0x11);
  expect_frame(2, ORION_WIRE_HEARTBEAT, 2000, 0x22);
  expect_frame(3, ORION_WIRE_HEARTBEAT, 300, 0x33);
}

Test(net, a_large_frame_sends_what_is_held_first) {
  orion_conn_cork(acc, 1);
  send_fill(acc, ORION_WIRE_WELCOME, 0, 0);
  send_fill(acc, ORION_WIRE_HEARTBEAT, 50, 0x44);
  send_fill(acc, ORION_WIRE_HEARTBEAT, ORION_CONN_HOLD_MAX + 1000, 0x55);
  run_until_frames(3); /* without a flush */
  expect_frame(0, ORION_WIRE_WELCOME, 0, 0);
  expect_frame(1, ORION_WIRE_HEARTBEAT, 50, 0x44);
  expect_frame(2, ORION_WIRE_HEARTBEAT, ORION_CONN_HOLD_MAX + 1000, 0x55);
}

Test(net, uncorking_and_closing_send_what_is_held) {
  orion_conn_cork(acc, 1);
  send_fill(acc, ORION_WIRE_WELCOME, 0, 0);
  send_fill(acc, ORION_WIRE_HEARTBEAT, 10, 0x66);
  orion_conn_cork(acc, 0); /* sends */
  run_until_frames(2);
  send_fill(acc, ORION_WIRE_HEARTBEAT, 20, 0x77); /* uncorked: at once */
  run_until_frames(3);
  orion_conn_cork(acc, 1);
  send_fill(acc, ORION_WIRE_HEARTBEAT, 30, 0x88);
  orion_conn_close(acc, "done");
  run_until(&g.closed, "the close");
  cr_assert_eq(g.n, 4, "%d frames arrived before the close, 4 sent", g.n);
  expect_frame(1, ORION_WIRE_HEARTBEAT, 10, 0x66);
  expect_frame(2, ORION_WIRE_HEARTBEAT, 20, 0x77);
  expect_frame(3, ORION_WIRE_HEARTBEAT, 30, 0x88);
}

/* Frames of many records, the first of them behind a small frame so that
 * reads end inside records: the reader keeps a record's first part until
 * the rest arrives and opens it where it lies (its buffer grows to hold
 * several records), and every byte arrives as sent, in order. */
Test(net, records_cut_by_reads_are_gathered_and_arrive_intact) {
  enum { BIG = 700001 };
  unsigned char *p = orion_malloc(BIG);
  size_t k;
  int f;
  cr_assert_not_null(p);
  send_fill(acc, ORION_WIRE_WELCOME, 0, 0);
  send_fill(acc, ORION_WIRE_HEARTBEAT, 37, 0x21);
  for (f = 0; f < 2; f++) {
    orion_buf b;
    for (k = 0; k < BIG; k++)
      p[k] = (unsigned char)((k * 131 + (k >> 11) + (size_t)f * 7) & 0xff);
    orion_buf_init(&b);
    cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_HEARTBEAT, p, BIG), 0);
    cr_assert_eq(orion_conn_send(acc, &b), 0);
    orion_buf_free(&b);
  }
  send_fill(acc, ORION_WIRE_HEARTBEAT, 5, 0x42);
  run_until_frames(5);
  expect_frame(0, ORION_WIRE_WELCOME, 0, 0);
  expect_frame(1, ORION_WIRE_HEARTBEAT, 37, 0x21);
  for (f = 0; f < 2; f++) {
    cr_assert_eq(g.len[2 + f], BIG, "frame %d: %zu bytes", 2 + f,
                 g.len[2 + f]);
    for (k = 0; k < BIG; k++)
      cr_assert_eq(g.payload[2 + f][k],
                   (unsigned char)((k * 131 + (k >> 11) + (size_t)f * 7) &
                                   0xff),
                   "frame %d: byte %zu changed", 2 + f, k);
  }
  expect_frame(4, ORION_WIRE_HEARTBEAT, 5, 0x42);
  cr_assert_not_null(cli);
  cr_assert_gt(cli->rcap, ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD,
               "no record was kept for the rest of it (buffer of %zu bytes)",
               cli->rcap);
  /* Small reads after them, one frame each: the large buffer stays for
   * a while (the large frames' last reads may have been small too) and
   * goes back after 64 in a row. */
  for (f = 0; f < 64; f++) {
    if (f < 32)
      cr_assert_gt(cli->rcap,
                   ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD,
                   "the large buffer went after %d small reads", f);
    send_fill(acc, ORION_WIRE_HEARTBEAT, 9, f);
    run_until_frames(6 + f);
    expect_frame(5 + f, ORION_WIRE_HEARTBEAT, 9, f);
  }
  cr_assert_leq(cli->rcap, ORION_SEC_RECORD_MAX + ORION_SEC_RECORD_OVERHEAD,
                "a %zu-byte read buffer kept after 64 small reads", cli->rcap);
  orion_free(p);
}
