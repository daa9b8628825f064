/* A fuzz target for the wire codec (dsm/wire.c) and the payload codec of
 * every message (dsm/msg.h).
 *
 * With libFuzzer (UTIL stands for the files util/[a-z]*.c):
 *   clang -g -fsanitize=fuzzer,address,undefined -I. t/fuzz_wire.c \
 *     dsm/wire.c dsm/msg*.c UTIL -lz -lm -o fuzz_wire && ./fuzz_wire DIR
 *
 * Without it (gcc, or clang without libFuzzer), a standalone mutator:
 *   gcc -g -DORION_FUZZ_STANDALONE -fsanitize=address,undefined -I. \
 *     t/fuzz_wire.c dsm/wire.c dsm/msg*.c UTIL -lz -lm -o fuzz_wire
 *   ./fuzz_wire SECONDS [SEED]     mutate valid inputs for SECONDS
 *   ./fuzz_wire -r FILE...         run saved inputs once each
 *   ./fuzz_wire -s DIR             write the seed inputs into DIR (a
 *                                  starting corpus for libFuzzer)
 *
 * Input layout: a selector byte, then the rest.  When the selector's low
 * six bits (five before BLOCK_KEYS, type 32) are a frame type with a
 * payload codec (orion_msg_known), the rest is a payload of that type,
 * fed straight to its decoder.  When they are SEL_SEC (30), the rest
 * goes to dsm/sec.h's accepting side: the handshake, and records after
 * it (it must never complete the handshake or open a record: the fuzzer
 * does not hold the token).  Otherwise the rest is one control byte and
 * a byte stream for the frame decoder.
 * Control bits:
 *   0-1  decoder role: 0 and 3 ACCEPT, 1 CONNECT,
 *        2 TRUSTED
 *   2-4  chunking: 0 all at once, else chunks of 1, 2, 3, 7, 16, 64, 509
 *   5    a low payload limit (200 bytes)
 *   6    take each payload (orion_wire_decoder_take) instead of viewing it
 *   7    recompute the CRCs of the frames first, so that mutations reach
 *        the payload decoders and the handshake instead of the checksum
 * Every frame's payload goes to its type's decoder too.
 *
 * Every violated invariant aborts: a frame before the handshake, a
 * handshake or record accepted without the token, a frame over the limit, an error that is not sticky or
 * has no message, a decoded field outside its payload, a payload that
 * does not re-encode to the same bytes (BUFFER_FLUSH: to the same items,
 * and then to the same bytes again), or memory left allocated.  `make
 * check-slow` runs it for 60 s through t/fuzz_wire.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/msg.h"
#include "dsm/sec.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#define FUZZ_TOKEN "fuzz-token-0123456789abcdef0123456789"
#define SEL_SEC 30
#define LOW_LIMIT 200u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "fuzz_wire: invariant failed: %s (%s:%d)\n", #cond,     \
              __FILE__, __LINE__);                                            \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* ------------------------------------------------------------------------
 * Checks on one yielded frame.
 * ---------------------------------------------------------------------- */

static int inside(const void *field, size_t n, const unsigned char *p,
                  size_t len) {
  const unsigned char *f = field;
  if (n == 0)
    return 1;
  return f >= p && f <= p + len && n <= (size_t)(p + len - f);
}

/* The payload re-encodes (with `enc`, into a fresh buffer) to exactly the
 * bytes it was decoded from. */
static void same_bytes(const orion_buf *b, const unsigned char *p,
                       size_t len) {
  CHECK(b->len == ORION_WIRE_OVERHEAD + len);
  CHECK(len == 0 || memcmp(b->data + ORION_WIRE_HEADER_LEN, p, len) == 0);
}

/* The items of two decoded BUFFER_FLUSH messages are the same. */
static void same_items(const orion_msg_buffer_flush *x,
                       const orion_msg_buffer_flush *y) {
  int64_t k;
  CHECK(x->run == y->run && x->buffer == y->buffer && x->isint == y->isint);
  CHECK(x->nitems == y->nitems);
  for (k = 0; k < x->nitems; k++)
    CHECK(x->items[k].key == y->items[k].key &&
          x->items[k].val.i == y->items[k].val.i);
}

/* A message payload: it decodes, or fails with a code and a message and
 * nothing allocated; a decoded message re-encodes to the same bytes (a
 * BUFFER_FLUSH to the same items), which decode and re-encode again to
 * the same bytes. */
static void check_msg(int type, const unsigned char *p, size_t len) {
  orion_msg m, m2;
  orion_buf b, b2;
  orion_error err;
  size_t base = orion_alloc_used();
  int rc;
  orion_error_clear(&err);
  rc = orion_msg_decode(type, p, len, &m, &err);
  if (rc != 0) {
    CHECK(rc < 0 && err.code == rc && err.msg[0] != '\0');
    CHECK(orion_alloc_used() == base);
    return;
  }
  orion_buf_init(&b);
  orion_buf_init(&b2);
  CHECK(orion_msg_encode(&b, type, &m) == 0);
  CHECK(b.len >= ORION_WIRE_OVERHEAD &&
        (unsigned char)b.data[3] == (unsigned char)type);
  if (type != ORION_WIRE_BUFFER_FLUSH)
    same_bytes(&b, p, len);
  CHECK(orion_msg_decode(type, b.data + ORION_WIRE_HEADER_LEN,
                         b.len - ORION_WIRE_OVERHEAD, &m2, NULL) == 0);
  if (type == ORION_WIRE_BUFFER_FLUSH)
    same_items(&m.buffer_flush, &m2.buffer_flush);
  CHECK(orion_msg_encode(&b2, type, &m2) == 0);
  CHECK(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0);
  orion_msg_free(type, &m);
  orion_msg_free(type, &m2);
  orion_buf_free(&b);
  orion_buf_free(&b2);
  CHECK(orion_alloc_used() == base);
}

static void check_payload(int type, const unsigned char *p, size_t len) {
  orion_buf b;
  orion_error err;
  orion_buf_init(&b);
  orion_error_clear(&err);
  switch (type) {
  case ORION_WIRE_HELLO: {
    orion_wire_hello h;
    if (orion_wire_hello_decode(p, len, &h, &err) != 0) {
      CHECK(err.code < 0 && err.msg[0] != '\0');
      break;
    }
    CHECK(inside(h.addr, h.addr_len, p, len));
    CHECK(inside(h.device, h.device_len, p, len));
    CHECK(orion_wire_hello_encode(&b, &h) == 0);
    same_bytes(&b, p, len);
    break;
  }
  case ORION_WIRE_HEARTBEAT: {
    orion_wire_heartbeat h;
    if (orion_wire_heartbeat_decode(p, len, &h, &err) != 0) {
      CHECK(err.code < 0 && err.msg[0] != '\0');
      break;
    }
    CHECK(orion_wire_heartbeat_encode(&b, &h) == 0);
    same_bytes(&b, p, len);
    break;
  }
  case ORION_WIRE_ARRAY_DATA: {
    orion_wire_array a;
    size_t size;
    if (orion_wire_array_decode(p, len, &a, &err) != 0) {
      CHECK(err.code < 0 && err.msg[0] != '\0');
      break;
    }
    size = a.type == 0 || a.type == 2 ? 4 : 8;
    CHECK(a.ndims >= 1 && a.ndims <= ORION_MAX_DIMS);
    CHECK(a.count >= 0 && a.first >= 0);
    CHECK(inside(a.data, (size_t)a.count * size, p, len));
    CHECK((const unsigned char *)a.data + (size_t)a.count * size == p + len);
    CHECK(orion_wire_array_encode(&b, &a) == 0);
    same_bytes(&b, p, len);
    break;
  }
  default:
    if (orion_msg_known(type))
      check_msg(type, p, len);
    break;
  }
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * The entry point.
 * ---------------------------------------------------------------------- */

/* Rewrites the trailer of every whole frame in s[0..n) that has the right
 * magic, stopping at the first that does not fit. */
static void fix_crcs(unsigned char *s, size_t n) {
  size_t off = 0;
  while (n - off >= ORION_WIRE_OVERHEAD) {
    unsigned char *h = s + off;
    size_t len = (size_t)h[5] | (size_t)h[6] << 8 | (size_t)h[7] << 16 |
                 (size_t)h[8] << 24;
    uint32_t crc;
    if (h[0] != ORION_WIRE_MAGIC0 || h[1] != ORION_WIRE_MAGIC1 ||
        len > n - off - ORION_WIRE_OVERHEAD)
      return;
    crc = orion_wire_crc(0, h, ORION_WIRE_HEADER_LEN + len);
    orion_wire_pack_trailer(h + ORION_WIRE_HEADER_LEN + len, crc);
    off += ORION_WIRE_OVERHEAD + len;
  }
}

/* A payload of one message type, from an exact-size copy. */
static void run_payload(int type, const uint8_t *data, size_t n) {
  size_t base = orion_alloc_used();
  unsigned char *p = malloc(n > 0 ? n : 1);
  CHECK(p != NULL);
  if (n > 0)
    memcpy(p, data, n);
  check_msg(type, p, n);
  free(p);
  CHECK(orion_alloc_used() == base);
}

/* A control byte and a byte stream for the frame decoder. */
static void run_stream(const uint8_t *data, size_t size) {
  static const size_t chunks[8] = {0, 1, 2, 3, 7, 16, 64, 509};
  orion_wire_decoder d;
  orion_wire_role role;
  unsigned char *s;
  size_t n, off = 0, chunk, base = orion_alloc_used();
  uint32_t limit = ORION_WIRE_MAX_FRAME;
  uint64_t frames = 0;
  int ctl, rc = 0, take;
  if (size < 1)
    return;
  ctl = data[0];
  n = size - 1;
  /* A private copy: the stream may be rewritten, and an exact-size heap
   * block lets the sanitizer catch any over-read. */
  s = malloc(n > 0 ? n : 1);
  CHECK(s != NULL);
  if (n > 0)
    memcpy(s, data + 1, n);
  if (ctl & 0x80)
    fix_crcs(s, n);
  role = (ctl & 3) == 1   ? ORION_WIRE_CONNECT
         : (ctl & 3) == 2 ? ORION_WIRE_TRUSTED
                          : ORION_WIRE_ACCEPT;
  chunk = chunks[(ctl >> 2) & 7];
  if (chunk == 0)
    chunk = n > 0 ? n : 1;
  take = (ctl & 0x40) != 0;
  CHECK(orion_wire_decoder_init(&d, role) ==
        0);
  if (ctl & 0x20) {
    limit = LOW_LIMIT;
    orion_wire_decoder_set_limit(&d, limit);
  }
  while (off < n && rc >= 0) {
    size_t left = n - off < chunk ? n - off : chunk;
    const unsigned char *q = s + off;
    off += left;
    while (left > 0) {
      size_t used = (size_t)-1;
      const orion_wire_frame *f;
      rc = orion_wire_decoder_feed(&d, q, left, &used);
      CHECK(used <= left);
      q += used;
      left -= used;
      if (rc < 0)
        break;
      if (rc == ORION_WIRE_NEED_MORE) {
        CHECK(left == 0);
        CHECK(orion_wire_decoder_frame(&d) == NULL);
        continue;
      }
      CHECK(rc == ORION_WIRE_FRAME_READY);
      f = orion_wire_decoder_frame(&d);
      CHECK(f != NULL && f->payload != NULL);
      CHECK(orion_wire_type_known(f->type));
      CHECK(f->version == ORION_WIRE_VERSION);
      CHECK(f->len <= limit);
      if (role == ORION_WIRE_ACCEPT) {
        /* HELLO first, and only once. */
        CHECK((f->type == ORION_WIRE_HELLO) == (frames == 0));
        if (frames == 0) {
          orion_wire_hello h;
          CHECK(f->len <= ORION_WIRE_HELLO_MAX);
          CHECK(orion_wire_hello_decode(f->payload, f->len, &h, NULL) == 0);
        }
      } else if (role == ORION_WIRE_CONNECT && frames == 0) {
        CHECK(f->type == ORION_WIRE_WELCOME);
      }
      frames++;
      if (take) {
        size_t plen;
        int type = f->type;
        void *p = orion_wire_decoder_take(&d, &plen);
        CHECK((p == NULL) == (plen == 0));
        CHECK(orion_wire_decoder_frame(&d) == NULL);
        check_payload(type, p != NULL ? p : (const void *)"", plen);
        orion_free(p);
      } else {
        check_payload(f->type, f->payload, f->len);
      }
    }
  }
  if (rc >= 0)
    rc = orion_wire_decoder_finish(&d);
  if (rc < 0) {
    /* Sticky: the same code, nothing consumed, no frame, a reason. */
    size_t used = 1;
    const char *reason = orion_wire_decoder_reason(&d);
    CHECK(reason[0] != '\0');
    CHECK(orion_wire_decoder_fault(&d) != ORION_WIRE_OK);
    CHECK(orion_wire_decoder_feed(&d, "OC", 2, &used) == rc && used == 0);
    CHECK(orion_wire_decoder_frame(&d) == NULL);
    CHECK(orion_wire_decoder_finish(&d) == rc);
  } else {
    CHECK(orion_wire_decoder_fault(&d) == ORION_WIRE_OK);
  }
  orion_wire_decoder_free(&d);
  CHECK(orion_alloc_used() == base);
  free(s);
}

/* Bytes from a peer that does not hold the token, to an acceptor: the
 * handshake never completes, whatever the chunking (in chunks of 1..8
 * bytes, the first byte says how long), and failures say why. */
static void run_sec(const uint8_t *p, size_t n) {
  static const char token[] = "another job's token 0123456789abcdef";
  orion_sec s;
  orion_buf out;
  size_t chunk = n > 0 ? (size_t)(p[0] & 7) + 1 : 1, off = 0;
  int rc = ORION_SEC_MORE;
  size_t base = orion_alloc_used();
  CHECK(orion_sec_init(&s, ORION_SEC_ACCEPT, token, strlen(token),
                       ORION_SEC_AUTO) == 0);
  orion_buf_init(&out);
  while (off < n && rc == ORION_SEC_MORE) {
    size_t left = n - off < chunk ? n - off : chunk, used = 99;
    rc = orion_sec_handshake(&s, p + off, left, &used, &out);
    CHECK(used <= left);
    CHECK(used > 0 || rc < 0);
    off += used;
  }
  CHECK(rc != ORION_SEC_DONE);
  CHECK(out.len == 0 || out.len == ORION_SEC_ANSWER_LEN);
  if (rc < 0) {
    const unsigned char *plain;
    size_t used, plain_len;
    CHECK(s.why[0] != '\0');
    CHECK(orion_sec_open(&s, p, n, &used, &plain, &plain_len) < 0);
  }
  orion_buf_free(&out);
  orion_sec_free(&s);
  CHECK(orion_alloc_used() == base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if ((data[0] & 63) == SEL_SEC)
    run_sec(data + 1, size - 1);
  else if (orion_msg_known(data[0] & 63))
    run_payload(data[0] & 63, data + 1, size - 1);
  else
    run_stream(data + 1, size - 1);
  return 0;
}

/* ------------------------------------------------------------------------
 * The standalone mutator (no libFuzzer).
 * ---------------------------------------------------------------------- */
#ifdef ORION_FUZZ_STANDALONE

#include "util/clock.h"
#include "util/rng.h"

int main(int argc, char **argv);

#define MAX_INPUT 4096
#define NSTREAMS 3                 /* stream seeds first, then messages */
/* a message of each type (CKPT_DONE twice: parts, and an error), 3
 * variants, a handshake */
#define NSEEDS (NSTREAMS + 29 + 3 + 1)

/* A stream seed's selector (no message type) and control byte. */
static void stream_start(orion_buf *seed) {
  orion_buf_u8(seed, 0);
  orion_buf_u8(seed, 0);
}

/* Appends msg's frame to stream and adds a seed holding its payload. */
static void add_msg(orion_buf *stream, orion_buf *seeds, int *nseeds,
                    int type, const orion_msg *m) {
  orion_buf f;
  orion_buf_init(&f);
  CHECK(orion_msg_encode(&f, type, m) == 0);
  orion_buf_append(stream, f.data, f.len);
  CHECK(*nseeds < NSEEDS);
  orion_buf_u8(&seeds[*nseeds], (uint8_t)type);
  orion_buf_append(&seeds[*nseeds], f.data + ORION_WIRE_HEADER_LEN,
                   f.len - ORION_WIRE_OVERHEAD);
  (*nseeds)++;
  orion_buf_free(&f);
}

/* Valid inputs to start mutations from: a driver's and an executor's
 * sessions and a stream of many small frames, then one payload of every
 * message (a few in two forms). */
static void make_seeds(orion_buf seeds[NSEEDS]) {
  static const double vals[4] = {1, 2, 3, 4};
  static const int64_t keys[4] = {0, 1, 1, 0};
  static const orion_msg_run runs[2] = {{4, 0, 2, (const char *)vals, 16, 0},
                                        {-4, 8, 1, (const char *)vals, 8, 0}};
  static const orion_msg_range ranges[2] = {{4, 0, 2}, {5, 3, 1}};
  static const orion_msg_move moves[2] = {{4, 0, 2, 1, 3}, {5, 3, 1, 0, -1}};
  static const orion_msg_seg segs[2] = {{0, 2}, {-1, 7}};
  static const orion_msg_array_desc arrays[2] = {
      {4, 1, 0, 2, {2, 2}, 0}, {5, 2, 1, 3, {4, 5, 6}, 0}};
  static const orion_msg_acc_desc accs[1] = {{9, 1}};
  static const orion_msg_buf_desc bufs[1] = {{3, "b", 1, 4, 2, "ap", 2, -1}};
  static const orion_msg_shard shards[1] = {{4, 3, runs, 2}};
  static const orion_msg_acc_value accv[2] = {{3, 9, 1, 0, 5, -0.5},
                                              {-1, -2, 0, 1, -5, 0.0}};
  static const orion_msg_str addrs[2] = {{"h:1", 3}, {"[::1]:2", 7}};
  static const int64_t ids[2] = {4, -5};
  static const uint64_t vers[3] = {0, 7, 1};
  static const orion_msg_chunk chunks[1] = {{2, 8, (const char *)vals, 32, 1}};
  orion_msg_item items[12];
  orion_cslot slots[2];
  orion_msg m;
  orion_wire_hello h = {2, "127.0.0.1:9000", 14,
                        "GPU 0 (NVIDIA H100 80GB HBM3, 79.1 GiB, cc 9.0)",
                        47, 85520809984ull, 268435456ull};
  orion_wire_heartbeat hb = {2, 1, 1000, 4096};
  orion_wire_array a = {5, 1, 2, {2, 2}, 0, 4, vals};
  int i, ns = NSTREAMS;
  for (i = 0; i < NSEEDS; i++)
    orion_buf_init(&seeds[i]);
  for (i = 0; i < NSTREAMS; i++)
    stream_start(&seeds[i]);
  memset(slots, 0, sizeof slots);
  slots[0].kind = ORION_CSLOT_CONST;
  slots[0].fval = 0.5;
  slots[1].kind = ORION_CSLOT_ARRAY;
  slots[1].id = 4;
  for (i = 0; i < 12; i++) {
    items[i].key = i < 6 ? 10 + i : 3 * i;
    items[i].val.d = i - 0.5;
  }
  /* The driver's side, as an executor sees it. */
  orion_wire_encode(&seeds[0], ORION_WIRE_WELCOME, NULL, 0);
  m.peers = (orion_msg_peers){addrs, 2};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_PEERS, &m);
  memset(&m, 0, sizeof m);
  m.load_body = (orion_msg_load_body){
      .loop = 7, .blob = "body", .blob_len = 4, .iter = 5,
      .arrays = arrays, .narrays = 2, .accs = accs, .naccs = 1,
      .bufs = bufs, .nbufs = 1, .run = 3, .chash = 0x55, .csrc = "src",
      .csrc_len = 3, .cflags = "-O", .cflags_len = 2, .required = 1,
      .slots = slots, .nslots = 2, .shards = shards, .nshards = 1,
      .bandwidth_mbps = 100, .timeout = 30};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_LOAD_BODY, &m);
  m.run_block = (orion_msg_run_block){
      .block = 3, .seed = 99, .nblocks = 4, .segs = segs, .nsegs = 2,
      .has_elems = 1, .nelems = 2, .keys = (const char *)keys,
      .keys_len = 32, .values = (const char *)vals, .values_len = 16,
      .runs = runs, .nruns = 2, .watch = ranges, .nwatch = 2,
      .gets = moves, .ngets = 1, .puts = moves + 1, .nputs = 1};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_RUN_BLOCK, &m);
  m.run_block.has_elems = 0;
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_RUN_BLOCK, &m);
  orion_wire_array_encode(&seeds[0], &a);
  m.loop_end.abort = 1;
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_LOOP_END, &m);
  memset(&m, 0, sizeof m);
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_SHARD_PULL, &m);
  m.forget = (orion_msg_forget){ids, 2};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_FORGET, &m);
  memset(&m, 0, sizeof m);
  m.load_file.path = "f.txt";
  m.load_file.path_len = 5;
  m.load_file.nparts = 2;
  m.load_file.opts.sep = ',';
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_LOAD_FILE, &m);
  memset(&m, 0, sizeof m);
  m.shutdown.reason = "executor 1 was lost";
  m.shutdown.len = 19;
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_SHUTDOWN, &m);
  /* An executor's session, as the driver sees it. */
  orion_wire_hello_encode(&seeds[1], &h);
  orion_wire_heartbeat_encode(&seeds[1], &hb);
  memset(&m, 0, sizeof m);
  m.block_done = (orion_msg_block_done){
      .block = 2, .seconds = 0.25, .wait_seconds = 0.125, .has_values = 1,
      .values = (const char *)vals, .values_len = 8, .runs = runs,
      .nruns = 2};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BLOCK_DONE, &m);
  m.buffer_flush = (orion_msg_buffer_flush){3, 3, 0, items, 12, 2};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BUFFER_FLUSH, &m);
  m.buffer_flush.nitems = 6; /* consecutive keys: the runs form */
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BUFFER_FLUSH, &m);
  memset(&m, 0, sizeof m);
  m.body_error = (orion_msg_body_error){2, -1, "oops\ntraceback", 14};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BODY_ERROR, &m);
  m.loop_done = (orion_msg_loop_done){
      .accs = accv, .naccs = 2, .peer_bytes = 100, .shard_items = 3,
      .compute_seconds = 1.5, .wait_seconds = 0.25, .idle_seconds = 0.125,
      .managed_bytes = 32, .managed_items = 2, .managed_staleness = 3};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_LOOP_DONE, &m);
  m.shard_data = (orion_msg_shard_data){runs, 2, ranges, 1};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_SHARD_DATA, &m);
  memset(&m, 0, sizeof m);
  m.rows = (orion_msg_rows){3, 7, runs, 1};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_ROWS, &m);
  m.rows_data = (orion_msg_rows){0, -1, runs, 2};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_ROWS_DATA, &m);
  m.send_rows = (orion_msg_send_rows){3, moves, 2};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_SEND_ROWS, &m);
  m.move_rows = (orion_msg_move_rows){3, moves, 2};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_MOVE_ROWS, &m);
  m.rows_pull = (orion_msg_rows_pull){ranges, 2};
  add_msg(&seeds[0], seeds, &ns, ORION_WIRE_ROWS_PULL, &m);
  m.shard_write = (orion_msg_shard_write){3, runs, 2};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_SHARD_WRITE, &m);
  m.write_ack = (orion_msg_write_ack){3};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_WRITE_ACK, &m);
  m.bcast = (orion_msg_bcast){3, 4, 1, 1, 3, runs, 2};
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BCAST, &m);
  {
    static const orion_msg_ckpt_part parts[2] = {{3, 0, 1200, 4852, 0x069d7643},
                                                 {4, 600, 800, 3252, 7}};
    m.ckpt_write = (orion_msg_ckpt_write){4, "/tmp/c/.ckpt-4.tmp", 18,
                                          ranges, 2};
    add_msg(&seeds[0], seeds, &ns, ORION_WIRE_CKPT_WRITE, &m);
    m.ckpt_done = (orion_msg_ckpt_done){4, "", 0, parts, 2};
    add_msg(&seeds[1], seeds, &ns, ORION_WIRE_CKPT_DONE, &m);
    m.ckpt_done = (orion_msg_ckpt_done){4, "disk full", 9, NULL, 0};
    add_msg(&seeds[1], seeds, &ns, ORION_WIRE_CKPT_DONE, &m);
  }
  {
    static const orion_msg_keysrc src[1] = {{"mf.lua", 6}};
    static const orion_msg_key_range kr[2] = {
        {2, 0, 4, 3, 12, 0, 14, 0, -1, -1, -1, -1},
        {5, 7, 8, 2, 0, 0, 9, 0, -1, -1, 3, 6}};
    m.block_keys = (orion_msg_block_keys){3, src, 1, kr, 2};
    add_msg(&seeds[1], seeds, &ns, ORION_WIRE_BLOCK_KEYS, &m);
  }
  memset(&m, 0, sizeof m);
  m.loaded.ok = 1;
  m.loaded.array = (orion_msg_loaded_array){
      .type = 1, .ndims = 2, .dims = {3, 3}, .nnz = 2,
      .keys = (const char *)keys, .keys_len = 32,
      .values = (const char *)vals, .values_len = 16};
  m.loaded.has_labels = 1;
  m.loaded.labels = (orion_msg_loaded_array){
      .type = 1, .ndims = 1, .dims = {2}, .nnz = 2,
      .values = (const char *)vals, .values_len = 16};
  m.loaded.first_skip = "x";
  m.loaded.first_skip_len = 1;
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_LOADED, &m);
  memset(&m, 0, sizeof m);
  m.loaded.msg = "no such file";
  m.loaded.msg_len = 12;
  add_msg(&seeds[1], seeds, &ns, ORION_WIRE_LOADED, &m);
  /* A HELLO and many small frames between executors. */
  orion_wire_hello_encode(&seeds[2], &h);
  memset(&m, 0, sizeof m);
  m.fetch = (orion_msg_fetch){1, 4, 3, 6, vers};
  add_msg(&seeds[2], seeds, &ns, ORION_WIRE_FETCH, &m);
  m.fetch_reply = (orion_msg_fetch_reply){4, chunks, 1, 3};
  add_msg(&seeds[2], seeds, &ns, ORION_WIRE_FETCH_REPLY, &m);
  m.flush_ack.run = 1;
  add_msg(&seeds[2], seeds, &ns, ORION_WIRE_FLUSH_ACK, &m);
  for (i = 0; i < 20; i++) {
    hb.seq = (uint64_t)i;
    orion_wire_heartbeat_encode(&seeds[2], &hb);
    orion_wire_encode(&seeds[2], ORION_WIRE_FETCH, "k", 1);
  }
  /* A connector's CHALLENGE and PROOF to the accepting side. */
  {
    orion_sec sc;
    unsigned char proof[ORION_SEC_PROOF_LEN];
    CHECK(orion_sec_init(&sc, ORION_SEC_CONNECT, FUZZ_TOKEN,
                         strlen(FUZZ_TOKEN), ORION_SEC_AUTO) == 0);
    orion_buf_u8(&seeds[ns], SEL_SEC);
    orion_sec_start(&sc, &seeds[ns]);
    memset(proof, 0, sizeof proof);
    memcpy(proof, sc.challenge, 8);
    proof[3] = ORION_SEC_KIND_PROOF;
    proof[4] = proof[5] = proof[6] = proof[7] = 0;
    orion_buf_append(&seeds[ns], proof, sizeof proof);
    orion_buf_append(&seeds[ns], "\x10\0\0\0records after it", 20);
    orion_sec_free(&sc);
    ns++;
  }
  CHECK(ns == NSEEDS);
  for (i = 0; i < NSEEDS; i++)
    CHECK(!seeds[i].oom && seeds[i].len <= MAX_INPUT);
}

/* Values worth writing over a length or a count. */
static uint32_t interesting(orion_rng *r) {
  static const uint32_t v[] = {0,          1,          3,
                               8,          28,         199,
                               200,        201,        1023,
                               1024,       1025,       0x7fffffffu,
                               0x80000000u, 0xffffffffu, ORION_WIRE_MAX_FRAME,
                               ORION_WIRE_MAX_FRAME + 1};
  return v[orion_rng_below(r, sizeof v / sizeof v[0])];
}

/* Applies 1..8 random edits to s[0..*n), keeping *n <= MAX_INPUT. */
static void mutate(orion_rng *r, unsigned char *s, size_t *n,
                   const orion_buf *seeds) {
  int k, edits = 1 + (int)orion_rng_below(r, 8);
  for (k = 0; k < edits; k++) {
    size_t len = *n, at = len > 0 ? (size_t)orion_rng_below(r, len) : 0;
    switch (orion_rng_below(r, 9)) {
    case 0: /* flip a bit */
      if (len > 0)
        s[at] ^= (unsigned char)(1u << orion_rng_below(r, 8));
      break;
    case 1: /* a random byte */
      if (len > 0)
        s[at] = (unsigned char)orion_rng_next(r);
      break;
    case 2: /* insert random bytes */ {
      size_t m = 1 + (size_t)orion_rng_below(r, 16), i;
      if (len + m > MAX_INPUT)
        break;
      memmove(s + at + m, s + at, len - at);
      for (i = 0; i < m; i++)
        s[at + i] = (unsigned char)orion_rng_next(r);
      *n = len + m;
      break;
    }
    case 3: /* delete a range */ {
      size_t m = 1 + (size_t)orion_rng_below(r, 32);
      if (at + m > len)
        m = len - at;
      memmove(s + at, s + at + m, len - at - m);
      *n = len - m;
      break;
    }
    case 4: /* duplicate a range */ {
      size_t m = 1 + (size_t)orion_rng_below(r, 64);
      if (at + m > len)
        m = len - at;
      if (len + m > MAX_INPUT)
        break;
      memmove(s + at + m, s + at, len - at);
      *n = len + m;
      break;
    }
    case 5: /* truncate */
      *n = at;
      break;
    case 6: /* an interesting u32, little-endian */ {
      uint32_t v = interesting(r);
      int i;
      for (i = 0; i < 4 && at + (size_t)i < len; i++)
        s[at + (size_t)i] = (unsigned char)(v >> (8 * i));
      break;
    }
    case 7: /* splice in part of a seed */ {
      const orion_buf *sd = &seeds[orion_rng_below(r, NSEEDS)];
      size_t from = (size_t)orion_rng_below(r, sd->len), m;
      m = 1 + (size_t)orion_rng_below(r, sd->len - from);
      if (at + m > MAX_INPUT)
        m = MAX_INPUT - at;
      memcpy(s + at, sd->data + from, m);
      if (at + m > len)
        *n = at + m;
      break;
    }
    default: /* a random selector or control byte */
      if (len > 1)
        s[orion_rng_below(r, 2)] = (unsigned char)orion_rng_next(r);
    }
  }
}

static int run_files(int argc, char **argv) {
  int i;
  for (i = 2; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    unsigned char *buf;
    long len;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
      fprintf(stderr, "fuzz_wire: cannot read %s\n", argv[i]);
      return 1;
    }
    rewind(f);
    buf = malloc((size_t)len + 1);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
      fprintf(stderr, "fuzz_wire: cannot read %s\n", argv[i]);
      return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    printf("%s: ok\n", argv[i]);
  }
  return 0;
}

/* Writes each seed, behind each of a few control bytes, into dir. */
/* Writes each seed into dir: the stream seeds behind each of a few
 * control bytes, the message seeds as they are. */
static int write_seeds(const char *dir) {
  static const unsigned char ctls[4] = {0x00, 0x81, 0x86, 0xc4};
  orion_buf seeds[NSEEDS];
  int i, j, rc = 0;
  make_seeds(seeds);
  for (i = 0; i < NSEEDS; i++)
    for (j = 0; j < (i < NSTREAMS ? 4 : 1); j++) {
      char path[4096];
      FILE *f;
      if (i < NSTREAMS)
        seeds[i].data[1] = (char)ctls[j];
      snprintf(path, sizeof path, "%s/seed-%d-%02x", dir, i,
               (unsigned char)seeds[i].data[i < NSTREAMS ? 1 : 0]);
      f = fopen(path, "wb");
      if (f == NULL ||
          fwrite(seeds[i].data, 1, seeds[i].len, f) != seeds[i].len) {
        fprintf(stderr, "fuzz_wire: cannot write %s\n", path);
        rc = 1;
      }
      if (f != NULL)
        fclose(f);
    }
  for (i = 0; i < NSEEDS; i++)
    orion_buf_free(&seeds[i]);
  return rc;
}

int main(int argc, char **argv) {
  orion_buf seeds[NSEEDS];
  orion_rng rng;
  static unsigned char input[MAX_INPUT + 1];
  double seconds, end;
  uint64_t runs = 0, seed;
  int i;
  if (argc >= 3 && strcmp(argv[1], "-r") == 0)
    return run_files(argc, argv);
  if (argc == 3 && strcmp(argv[1], "-s") == 0)
    return write_seeds(argv[2]);
  if (argc < 2 || (seconds = atof(argv[1])) <= 0) {
    fprintf(stderr, "usage: %s SECONDS [SEED] | -r FILE... | -s DIR\n",
            argv[0]);
    return 2;
  }
  seed = argc >= 3 ? strtoull(argv[2], NULL, 10) : 1;
  orion_rng_seed(&rng, seed);
  make_seeds(seeds);
  end = orion_now() + seconds;
  while (orion_now() < end) {
    for (i = 0; i < 1000; i++, runs++) {
      const orion_buf *sd = &seeds[orion_rng_below(&rng, NSEEDS)];
      size_t n = sd->len;
      memcpy(input, sd->data, sd->len);
      if (!orion_msg_known(input[0] & 63)) /* a stream: any control */
        input[1] = (unsigned char)orion_rng_next(&rng);
      if (orion_rng_below(&rng, 16) != 0)
        mutate(&rng, input, &n, seeds);
      LLVMFuzzerTestOneInput(input, n);
    }
  }
  printf("fuzz_wire: %llu inputs in %.0f s (seed %llu), no invariant "
         "failed\n",
         (unsigned long long)runs, seconds, (unsigned long long)seed);
  for (i = 0; i < NSEEDS; i++)
    orion_buf_free(&seeds[i]);
  return 0;
}

#endif
