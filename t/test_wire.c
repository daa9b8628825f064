/* Tests of the wire codec (dsm/wire.c): the frame layout byte for byte,
 * round trips of every payload type, decoding fed one byte at a time and
 * many frames at once, every decoder error with its message, the size
 * limits (a frame exactly at ORION_WIRE_MAX_FRAME accepted, one byte more
 * refused before anything is allocated), the payload decoders' bounds
 * checks, random bytes, and every truncation and single-byte corruption of
 * a valid stream.  No sockets: everything is byte buffers. */
#include "t/testutil.h"

#include <stdint.h>

#include "dsm/msg.h"
#include "dsm/types.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/rng.h"

#define ADDR "10.0.0.7:41234"
#define MAXF 4096

/* One timeout for the whole suite: the slowest test,
 * every_single_byte_corruption_detected, takes under a second.  Under
 * AddressSanitizer it takes about 20 s of CPU: a corrupted length makes
 * many of its decoders allocate a buffer of up to 256 MiB, which ASan maps
 * and poisons, and the slow set runs it beside the rest of the fast suite
 * (t/slow_sanitize.sh), where a busy machine stretched it to 74 s of wall
 * time.  Under ASan the limit is ten minutes, so that only a hang trips
 * it.  Per-test .timeout options are avoided because criterion 2.4.1
 * leaks 48 bytes in its runner when two such tests overlap, which fails
 * the suite under LeakSanitizer. */
#if defined(__SANITIZE_ADDRESS__)
#define WIRE_TIMEOUT 600
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WIRE_TIMEOUT 600
#endif
#endif
#ifndef WIRE_TIMEOUT
#define WIRE_TIMEOUT 120
#endif
TestSuite(wire, .timeout = WIRE_TIMEOUT);

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

/* Frames a decoder yielded, copied out. */
typedef struct frames {
  int n;
  int type[MAXF];
  size_t len[MAXF];
  unsigned char *p[MAXF];
} frames;

static frames *frames_new(void) {
  frames *f = calloc(1, sizeof *f);
  cr_assert_not_null(f);
  return f;
}

static void frames_clear(frames *f) {
  int i;
  for (i = 0; i < f->n; i++)
    free(f->p[i]);
  f->n = 0;
}

static void frames_free(frames *f) {
  frames_clear(f);
  free(f);
}

static int frames_equal(const frames *a, const frames *b) {
  int i;
  if (a->n != b->n)
    return 0;
  for (i = 0; i < a->n; i++)
    if (a->type[i] != b->type[i] || a->len[i] != b->len[i] ||
        memcmp(a->p[i], b->p[i], a->len[i]) != 0)
      return 0;
  return 1;
}

/* Feeds s[0..n) to d in chunks of `chunk` bytes (0: one chunk), copying
 * each frame into fr (when not NULL); then calls finish when asked.
 * Returns 0, or the decoder's failure code. */
static int run(orion_wire_decoder *d, const void *s, size_t n, size_t chunk,
               frames *fr, int finish) {
  const unsigned char *p = s;
  size_t off = 0;
  if (chunk == 0)
    chunk = n > 0 ? n : 1;
  while (off < n) {
    size_t left = n - off < chunk ? n - off : chunk;
    const unsigned char *q = p + off;
    off += left;
    while (left > 0) {
      size_t used = 0;
      int rc = orion_wire_decoder_feed(d, q, left, &used);
      if (used > left)
        cr_assert_fail("feed used %zu of %zu bytes", used, left);
      q += used;
      left -= used;
      if (rc < 0)
        return rc;
      if (rc == ORION_WIRE_FRAME_READY) {
        const orion_wire_frame *f = orion_wire_decoder_frame(d);
        if (f == NULL || f->payload == NULL)
          cr_assert_fail("a ready frame has no view");
        if (fr != NULL) {
          if (fr->n >= MAXF)
            cr_assert_fail("too many frames");
          fr->type[fr->n] = f->type;
          fr->len[fr->n] = f->len;
          fr->p[fr->n] = malloc(f->len + 1);
          memcpy(fr->p[fr->n], f->payload, f->len);
          fr->n++;
        }
      } else if (rc != ORION_WIRE_NEED_MORE) {
        cr_assert_fail("feed returned %d", rc);
      } else if (left != 0) {
        cr_assert_fail("NEED_MORE with %zu bytes unused", left);
      }
    }
  }
  return finish ? orion_wire_decoder_finish(d) : 0;
}

static void accept_init(orion_wire_decoder *d) {
  cr_assert_eq(orion_wire_decoder_init(d, ORION_WIRE_ACCEPT), 0);
}

static void put_hello(orion_buf *b, uint32_t executor) {
  orion_wire_hello h = {executor, ADDR, strlen(ADDR), NULL, 0, 0, 0};
  cr_assert_eq(orion_wire_hello_encode(b, &h), 0);
}

/* CRC-32C bit by bit, the reference the codec's table and SSE4.2 versions
 * must match; chained like zlib's crc32 (start with 0). */
static uint32_t ref_crc32c(uint32_t crc, const void *p, size_t n) {
  const unsigned char *s = p;
  uint32_t c = ~crc;
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    c ^= s[i];
    for (k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

Test(wire, crc_is_crc32c) {
  /* The check value of CRC-32C ("123456789") and chaining over pieces of
   * every length, against the bitwise reference. */
  unsigned char buf[300];
  size_t i, cut;
  cr_assert_eq(orion_wire_crc(0, "123456789", 9), 0xE3069283u);
  cr_assert_eq(ref_crc32c(0, "123456789", 9), 0xE3069283u);
  for (i = 0; i < sizeof buf; i++)
    buf[i] = (unsigned char)(i * 37 + 11);
  for (cut = 0; cut <= sizeof buf; cut += 7) {
    uint32_t a = orion_wire_crc(orion_wire_crc(0, buf, cut), buf + cut,
                                sizeof buf - cut);
    cr_assert_eq(a, ref_crc32c(0, buf, sizeof buf), "cut at %zu", cut);
    cr_assert_eq(orion_wire_crc(0, buf, cut), ref_crc32c(0, buf, cut));
  }
}

/* A frame built by hand, independently of the encoder: any version, type
 * and flags, and a right or wrong CRC. */
static void put_raw(orion_buf *b, int version, int type, int flags,
                    const void *payload, uint32_t len, int good_crc) {
  unsigned char h[9], t[4];
  uint32_t crc;
  h[0] = 'O';
  h[1] = 'C';
  h[2] = (unsigned char)version;
  h[3] = (unsigned char)type;
  h[4] = (unsigned char)flags;
  h[5] = (unsigned char)len;
  h[6] = (unsigned char)(len >> 8);
  h[7] = (unsigned char)(len >> 16);
  h[8] = (unsigned char)(len >> 24);
  crc = ref_crc32c(0, h, 9);
  if (len > 0)
    crc = ref_crc32c(crc, payload, len);
  if (!good_crc)
    crc ^= 0x5a;
  t[0] = (unsigned char)crc;
  t[1] = (unsigned char)(crc >> 8);
  t[2] = (unsigned char)(crc >> 16);
  t[3] = (unsigned char)(crc >> 24);
  orion_buf_append(b, h, 9);
  if (len > 0)
    orion_buf_append(b, payload, len);
  orion_buf_append(b, t, 4);
}

/* Decodes b (in ACCEPT role after our HELLO, unless trusted) and expects
 * failure with `fault`, a message containing `needle`, and code `code`. */
static void expect_fault(const orion_buf *b, orion_wire_role role, int fault,
                         int code, const char *needle) {
  orion_wire_decoder d;
  frames *fr = frames_new();
  int rc;
  cr_assert_eq(orion_wire_decoder_init(&d, role), 0);
  rc = run(&d, b->data, b->len, 0, fr, 1);
  cr_assert_eq(rc, code, "code %d (%s), expected %d; reason: %s", rc,
               orion_strerror(rc), code, orion_wire_decoder_reason(&d));
  cr_assert_eq(orion_wire_decoder_fault(&d), fault, "fault %d, expected %d",
               orion_wire_decoder_fault(&d), fault);
  cr_assert(strstr(orion_wire_decoder_reason(&d), needle) != NULL,
            "reason \"%s\" does not mention \"%s\"",
            orion_wire_decoder_reason(&d), needle);
  cr_assert_null(orion_wire_decoder_frame(&d));
  orion_wire_decoder_free(&d);
  frames_free(fr);
}

/* A stream with one frame of every type (a HELLO first). */
static void put_every_type(orion_buf *b) {
  static const double vals[5] = {1.5, -2.25, 3.0, 1e300, -0.0};
  orion_wire_heartbeat hb = {3, 77, 123456789u, 1u << 30};
  orion_msg_body_error be = {3, 4, "boom\nstack traceback:", 21};
  orion_wire_array a = {42, ORION_F64, 2, {3, 4}, 6, 5, vals};
  int t;
  put_hello(b, 3);
  for (t = 1; t < ORION_WIRE_TYPE_END; t++) {
    char opaque[32];
    int n = snprintf(opaque, sizeof opaque, "opaque payload of %d", t);
    switch (t) {
    case ORION_WIRE_HELLO:
      break;
    case ORION_WIRE_HEARTBEAT:
      cr_assert_eq(orion_wire_heartbeat_encode(b, &hb), 0);
      break;
    case ORION_WIRE_BODY_ERROR:
      cr_assert_eq(orion_msg_body_error_encode(b, &be), 0);
      break;
    case ORION_WIRE_ARRAY_DATA:
      cr_assert_eq(orion_wire_array_encode(b, &a), 0);
      break;
    case ORION_WIRE_WELCOME:
    case ORION_WIRE_SHUTDOWN:
      cr_assert_eq(orion_wire_encode(b, t, NULL, 0), 0);
      break;
    default:
      cr_assert_eq(orion_wire_encode(b, t, opaque, (size_t)n), 0);
    }
  }
}

/* Offsets where frames end in b (the whole buffer is whole frames). */
static int frame_ends(const orion_buf *b, size_t *ends, int max) {
  size_t off = 0;
  int n = 0;
  while (off < b->len) {
    const unsigned char *h = (const unsigned char *)b->data + off;
    uint32_t len = (uint32_t)h[5] | (uint32_t)h[6] << 8 |
                   (uint32_t)h[7] << 16 | (uint32_t)h[8] << 24;
    off += ORION_WIRE_OVERHEAD + len;
    cr_assert(n < max);
    ends[n++] = off;
  }
  cr_assert_eq(off, b->len);
  return n;
}

/* ------------------------------------------------------------------------
 * Layout and types.
 * ---------------------------------------------------------------------- */

Test(wire, type_names_and_codes) {
  cr_assert_eq(ORION_WIRE_HELLO, 1);
  cr_assert_eq(ORION_WIRE_SHUTDOWN, 12);
  cr_assert_str_eq(orion_wire_type_name(ORION_WIRE_HELLO), "HELLO");
  cr_assert_str_eq(orion_wire_type_name(ORION_WIRE_ARRAY_DATA), "ARRAY_DATA");
  cr_assert_str_eq(orion_wire_type_name(ORION_WIRE_FETCH_REPLY),
                   "FETCH_REPLY");
  cr_assert_str_eq(orion_wire_type_name(0), "unknown");
  cr_assert_str_eq(orion_wire_type_name(200), "unknown");
  cr_assert(!orion_wire_type_known(0));
  cr_assert(!orion_wire_type_known(ORION_WIRE_TYPE_END));
  cr_assert(orion_wire_type_known(ORION_WIRE_BUFFER_FLUSH));
}

Test(wire, frame_layout_byte_for_byte) {
  orion_buf b, ref;
  orion_wire_heartbeat hb = {0x01020304u, 5, 6, 7};
  unsigned char payload[28] = {4, 3, 2, 1, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0,
                               0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0};
  orion_buf_init(&b);
  orion_buf_init(&ref);
  cr_assert_eq(orion_wire_heartbeat_encode(&b, &hb), 0);
  put_raw(&ref, ORION_WIRE_VERSION, ORION_WIRE_HEARTBEAT, 0, payload, 28, 1);
  cr_assert_eq(b.len, 9 + 28 + 4);
  cr_assert_eq(b.len, ref.len);
  cr_assert(memcmp(b.data, ref.data, b.len) == 0);
  cr_assert_eq(b.data[0], 'O');
  cr_assert_eq(b.data[1], 'C');
  cr_assert_eq(b.data[2], ORION_WIRE_VERSION);
  cr_assert_eq(b.data[3], ORION_WIRE_HEARTBEAT);
  cr_assert_eq(b.data[4], 0);
  cr_assert_eq((unsigned char)b.data[5], 28);
  orion_buf_free(&b);
  orion_buf_free(&ref);
}

Test(wire, begin_end_builds_in_place) {
  orion_buf b, ref;
  orion_wire_decoder d;
  frames *fr = frames_new();
  size_t start;
  orion_buf_init(&b);
  orion_buf_init(&ref);
  orion_buf_append(&b, "junk", 4); /* a frame need not start at 0 */
  start = orion_wire_begin(&b, ORION_WIRE_RUN_BLOCK);
  cr_assert_eq(start, 4);
  orion_buf_append(&b, "block 17", 8);
  cr_assert_eq(orion_wire_end(&b, start), 0);
  cr_assert_eq(orion_wire_encode(&ref, ORION_WIRE_RUN_BLOCK, "block 17", 8),
               0);
  cr_assert_eq(b.len, 4 + ref.len);
  cr_assert(memcmp(b.data + 4, ref.data, ref.len) == 0);
  orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
  cr_assert_eq(run(&d, b.data + 4, b.len - 4, 0, fr, 1), 0);
  cr_assert_eq(fr->n, 1);
  cr_assert_eq(fr->type[0], ORION_WIRE_RUN_BLOCK);
  cr_assert(fr->len[0] == 8 && memcmp(fr->p[0], "block 17", 8) == 0);
  orion_wire_decoder_free(&d);
  frames_free(fr);
  orion_buf_free(&b);
  orion_buf_free(&ref);
}

/* A frame ended by orion_wire_end_sealed (for an orion_conn, whose
 * records' MAC covers it) is the same frame with a zero trailer: a
 * MAC-covered decoder takes it, one that checks CRCs refuses it. */
Test(wire, sealed_frames_leave_the_crc_to_the_mac) {
  orion_buf b, ref;
  orion_wire_decoder d;
  frames *fr = frames_new();
  size_t start;
  orion_buf_init(&b);
  orion_buf_init(&ref);
  start = orion_wire_begin(&b, ORION_WIRE_ROWS);
  orion_buf_append(&b, "rows of part 3", 14);
  cr_assert_eq(orion_wire_end_sealed(&b, start), 0);
  cr_assert_eq(orion_wire_encode(&ref, ORION_WIRE_ROWS, "rows of part 3", 14),
               0);
  cr_assert_eq(b.len, ref.len);
  cr_assert(memcmp(b.data, ref.data, b.len - ORION_WIRE_TRAILER_LEN) == 0,
            "header and payload as orion_wire_end writes them");
  cr_assert(memcmp(b.data + b.len - ORION_WIRE_TRAILER_LEN, "\0\0\0\0",
                   ORION_WIRE_TRAILER_LEN) == 0,
            "the trailer is 0, not computed");
  orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
  orion_wire_decoder_mac_covered(&d);
  cr_assert_eq(run(&d, b.data, b.len, 3, fr, 1), 0, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert(fr->n == 1 && fr->type[0] == ORION_WIRE_ROWS && fr->len[0] == 14 &&
            memcmp(fr->p[0], "rows of part 3", 14) == 0);
  orion_wire_decoder_free(&d);
  orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
  cr_assert_eq(run(&d, b.data, b.len, 0, NULL, 1), ORION_ECHECKSUM);
  cr_assert_eq(orion_wire_decoder_fault(&d), ORION_WIRE_BAD_CRC);
  orion_wire_decoder_free(&d);
  frames_free(fr);
  orion_buf_free(&b);
  orion_buf_free(&ref);
}

Test(wire, encoders_refuse_bad_fields) {
  orion_buf b;
  char big[300];
  orion_wire_hello h = {1, ADDR, strlen(ADDR), NULL, 0, 0, 0};
  orion_wire_array a = {1, ORION_F32, 1, {10}, 0, 10, big};
  memset(big, 'x', sizeof big);
  orion_buf_init(&b);
  h.addr = big;
  h.addr_len = ORION_WIRE_ADDR_MAX + 1;
  cr_assert_eq(orion_wire_hello_encode(&b, &h), ORION_EINVAL);
  h.addr_len = 0;
  h.device = big;
  h.device_len = ORION_WIRE_DEVICE_MAX + 1;
  cr_assert_eq(orion_wire_hello_encode(&b, &h), ORION_EINVAL);
  h.device = NULL;
  h.device_len = 1;
  cr_assert_eq(orion_wire_hello_encode(&b, &h), ORION_EINVAL);
  a.type = 9;
  cr_assert_eq(orion_wire_array_encode(&b, &a), ORION_EINVAL);
  a.type = ORION_F32;
  a.count = 11;
  cr_assert_eq(orion_wire_array_encode(&b, &a), ORION_EINVAL);
  a.count = 10;
  a.ndims = 0;
  cr_assert_eq(orion_wire_array_encode(&b, &a), ORION_EINVAL);
  a.ndims = 1;
  a.data = NULL;
  cr_assert_eq(orion_wire_array_encode(&b, &a), ORION_EINVAL);
  /* 2^26 f64 elements = 512 MiB: over the frame limit, refused before the
   * (absent) data is read. */
  a.type = ORION_F64;
  a.dims[0] = a.count = (int64_t)1 << 26;
  a.data = big;
  cr_assert_eq(orion_wire_array_encode(&b, &a), -EMSGSIZE);
  cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_FETCH, big,
                                 (size_t)ORION_WIRE_MAX_FRAME + 1),
               -EMSGSIZE);
  cr_assert_eq(b.len, 0, "a refused frame left %zu bytes", b.len);
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * Round trips.
 * ---------------------------------------------------------------------- */

Test(wire, hello_round_trip) {
  orion_buf b;
  orion_wire_decoder d;
  orion_wire_hello h;
  orion_error err;
  frames *fr = frames_new();
  orion_buf_init(&b);
  put_hello(&b, 0xfffffffeu);
  accept_init(&d);
  cr_assert_eq(run(&d, b.data, b.len, 0, fr, 1), 0, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert_eq(fr->n, 1);
  cr_assert_eq(fr->type[0], ORION_WIRE_HELLO);
  cr_assert_eq(orion_wire_hello_decode(fr->p[0], fr->len[0], &h, &err), 0);
  cr_assert_eq(h.executor, 0xfffffffeu);
  cr_assert(h.addr_len == strlen(ADDR) &&
            memcmp(h.addr, ADDR, h.addr_len) == 0);
  orion_wire_decoder_free(&d);

  /* No listen address; no token (wire version 8: it never travels). */
  {
    orion_wire_hello in = {9, NULL, 0, NULL, 0, 0, 0};
    orion_buf_free(&b);
    orion_buf_init(&b);
    cr_assert_eq(orion_wire_hello_encode(&b, &in), 0);
    cr_assert_eq(b.len, ORION_WIRE_OVERHEAD + 4 + 2 + 2 + 16);
    cr_assert_eq(orion_wire_decoder_init(&d, ORION_WIRE_ACCEPT), 0);
    frames_clear(fr);
    cr_assert_eq(run(&d, b.data, b.len, 0, fr, 1), 0, "%s",
                 orion_wire_decoder_reason(&d));
    cr_assert_eq(orion_wire_hello_decode(fr->p[0], fr->len[0], &h, &err),
                 0);
    cr_assert_eq(h.executor, 9);
    cr_assert_eq(h.addr_len, 0);
    cr_assert_eq(h.device_len, 0);
    cr_assert_eq(h.gpu_total, 0);
    cr_assert_eq(h.gpu_cap, 0);
    orion_wire_decoder_free(&d);
  }
  frames_free(fr);
  orion_buf_free(&b);
}

/* An executor with a GPU names it in its HELLO (wire version 5): the
 * description and the device memory, total and cap, come back as sent;
 * the longest fields together stay under the handshake's payload limit;
 * a HELLO cut inside the new fields, or one of version 4's layout (no
 * device fields), is refused naming the field. */
Test(wire, hello_device_round_trip) {
  static const char desc[] = "GPU 0 (NVIDIA H100 80GB HBM3, 79.1 GiB, cc 9.0)";
  char addr[ORION_WIRE_ADDR_MAX], dev[ORION_WIRE_DEVICE_MAX];
  orion_wire_hello in = {4, ADDR, strlen(ADDR), desc, strlen(desc),
                         85520809984ull, 268435456ull};
  orion_wire_hello h;
  orion_error err;
  orion_buf b;
  size_t k;
  orion_buf_init(&b);
  cr_assert_eq(orion_wire_hello_encode(&b, &in), 0);
  cr_assert_eq(orion_wire_hello_decode(b.data + ORION_WIRE_HEADER_LEN,
                                       b.len - ORION_WIRE_OVERHEAD, &h, &err),
               0, "%s", err.msg);
  cr_assert_eq(h.executor, 4);
  cr_assert(h.device_len == strlen(desc) &&
            memcmp(h.device, desc, h.device_len) == 0);
  cr_assert_eq(h.gpu_total, 85520809984ull);
  cr_assert_eq(h.gpu_cap, 268435456ull);
  /* Every cut inside the payload is refused, naming what is missing. */
  for (k = 0; k < b.len - ORION_WIRE_OVERHEAD; k++) {
    int rc = orion_wire_hello_decode(b.data + ORION_WIRE_HEADER_LEN, k, &h,
                                     &err);
    cr_assert_eq(rc, ORION_ETRUNC, "cut at %zu: rc %d", k, rc);
  }
  cr_assert_str_eq(err.msg,
                   "HELLO payload too short: it ends inside the device "
                   "memory cap");
  orion_wire_hello_decode(b.data + ORION_WIRE_HEADER_LEN,
                          b.len - ORION_WIRE_OVERHEAD - 16 - strlen(desc) - 2,
                          &h, &err);
  cr_assert_str_eq(err.msg, "HELLO payload too short: it ends inside the "
                            "device length");
  /* The largest HELLO fits the unauthenticated limit. */
  memset(addr, 'a', sizeof addr);
  memset(dev, 'd', sizeof dev);
  in.addr = addr;
  in.addr_len = sizeof addr;
  in.device = dev;
  in.device_len = sizeof dev;
  b.len = 0;
  cr_assert_eq(orion_wire_hello_encode(&b, &in), 0);
  cr_assert_leq(b.len - ORION_WIRE_OVERHEAD, ORION_WIRE_HELLO_MAX);
  cr_assert_eq(orion_wire_hello_decode(b.data + ORION_WIRE_HEADER_LEN,
                                       b.len - ORION_WIRE_OVERHEAD, &h, &err),
               0, "%s", err.msg);
  cr_assert(h.device_len == sizeof dev &&
            memcmp(h.device, dev, sizeof dev) == 0);
  /* A device length over the bound. */
  {
    unsigned char *p = (unsigned char *)b.data + ORION_WIRE_HEADER_LEN + 4 +
                       2 + sizeof addr;
    p[0] = (unsigned char)((ORION_WIRE_DEVICE_MAX + 1) & 0xff);
    p[1] = (unsigned char)((ORION_WIRE_DEVICE_MAX + 1) >> 8);
    cr_assert_eq(orion_wire_hello_decode(b.data + ORION_WIRE_HEADER_LEN,
                                         b.len - ORION_WIRE_OVERHEAD, &h,
                                         &err),
                 ORION_EPARSE);
    cr_assert_str_eq(err.msg, "HELLO device length 256 is over 255");
  }
  orion_buf_free(&b);
}

Test(wire, heartbeat_round_trip) {
  orion_wire_heartbeat cases[3] = {{0, 0, 0, 0},
                                   {7, 1, 2, 3},
                                   {UINT32_MAX, UINT64_MAX, UINT64_MAX - 1,
                                    (uint64_t)1 << 63}};
  int i;
  for (i = 0; i < 3; i++) {
    orion_buf b;
    orion_wire_decoder d;
    orion_wire_heartbeat out;
    frames *fr = frames_new();
    orion_buf_init(&b);
    cr_assert_eq(orion_wire_heartbeat_encode(&b, &cases[i]), 0);
    orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
    cr_assert_eq(run(&d, b.data, b.len, 0, fr, 1), 0);
    cr_assert_eq(fr->n, 1);
    cr_assert_eq(fr->type[0], ORION_WIRE_HEARTBEAT);
    cr_assert_eq(fr->len[0], 28);
    cr_assert_eq(orion_wire_heartbeat_decode(fr->p[0], fr->len[0], &out,
                                             NULL),
                 0);
    cr_assert_eq(out.executor, cases[i].executor);
    cr_assert_eq(out.seq, cases[i].seq);
    cr_assert_eq(out.sent_ns, cases[i].sent_ns);
    cr_assert_eq(out.mem_used, cases[i].mem_used);
    orion_wire_decoder_free(&d);
    frames_free(fr);
    orion_buf_free(&b);
  }
}

Test(wire, array_data_round_trip_every_type) {
  static const int64_t dims3[3] = {5, 4, 3};
  int t;
  for (t = 0; t < ORION_NTYPES; t++) {
    size_t size = t == ORION_F32 || t == ORION_I32 ? 4 : 8;
    int shape;
    for (shape = 0; shape < 3; shape++) {
      unsigned char data[60 * 8];
      orion_wire_array a, out;
      orion_wire_decoder d;
      orion_buf b;
      orion_error err;
      size_t i, plen;
      void *taken;
      memset(&a, 0, sizeof a);
      a.array_id = -(int64_t)t - 100;
      a.type = t;
      if (shape == 0) { /* all of a 1-D array */
        a.ndims = 1;
        a.dims[0] = 60;
        a.first = 0;
        a.count = 60;
      } else if (shape == 1) { /* a slab of a 3-D array */
        a.ndims = 3;
        memcpy(a.dims, dims3, sizeof dims3);
        a.first = 12;
        a.count = 36;
      } else { /* nothing, at the very end */
        a.ndims = 3;
        memcpy(a.dims, dims3, sizeof dims3);
        a.first = 60;
        a.count = 0;
      }
      for (i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 37 + (size_t)t);
      a.data = data;
      orion_buf_init(&b);
      cr_assert_eq(orion_wire_array_encode(&b, &a), 0);
      orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
      {
        size_t used;
        cr_assert_eq(orion_wire_decoder_feed(&d, b.data, b.len, &used),
                     ORION_WIRE_FRAME_READY);
        cr_assert_eq(used, b.len);
      }
      /* The element bytes are 8-aligned where they lie. */
      {
        const orion_wire_frame *f = orion_wire_decoder_frame(&d);
        cr_assert_eq(f->type, ORION_WIRE_ARRAY_DATA);
        cr_assert_eq(orion_wire_array_decode(f->payload, f->len, &out, &err),
                     0, "%s", err.msg);
        cr_assert_eq((uintptr_t)out.data % 8, 0);
      }
      /* Keep the payload without a copy, then decode from it. */
      taken = orion_wire_decoder_take(&d, &plen);
      cr_assert_null(orion_wire_decoder_frame(&d));
      cr_assert_eq(orion_wire_array_decode(taken, plen, &out, &err), 0, "%s",
                   err.msg);
      cr_assert_eq(out.array_id, a.array_id);
      cr_assert_eq(out.type, t);
      cr_assert_eq(out.ndims, a.ndims);
      cr_assert(memcmp(out.dims, a.dims, sizeof(int64_t) * (size_t)a.ndims) ==
                0);
      cr_assert_eq(out.first, a.first);
      cr_assert_eq(out.count, a.count);
      cr_assert(memcmp(out.data, data, (size_t)a.count * size) == 0);
      cr_assert_eq(plen, 32 + 8 * (size_t)a.ndims + (size_t)a.count * size);
      orion_free(taken);
      orion_wire_decoder_free(&d);
      orion_buf_free(&b);
    }
  }
}

Test(wire, array_data_zero_copy_form_matches) {
  double vals[1000];
  orion_wire_array a = {7, ORION_F64, 1, {1000}, 0, 1000, vals};
  unsigned char trailer[4];
  orion_buf whole, head;
  int i;
  for (i = 0; i < 1000; i++)
    vals[i] = i * 0.5;
  orion_buf_init(&whole);
  orion_buf_init(&head);
  cr_assert_eq(orion_wire_array_encode(&whole, &a), 0);
  cr_assert_eq(orion_wire_array_head(&head, trailer, &a), 0);
  cr_assert_eq(head.len + sizeof vals + 4, whole.len);
  cr_assert(memcmp(whole.data, head.data, head.len) == 0);
  cr_assert(memcmp(whole.data + head.len, vals, sizeof vals) == 0);
  cr_assert(memcmp(whole.data + head.len + sizeof vals, trailer, 4) == 0);
  orion_buf_free(&whole);
  orion_buf_free(&head);
}

Test(wire, every_type_round_trips_in_a_stream) {
  orion_buf b;
  orion_wire_decoder d;
  frames *fr = frames_new();
  int t;
  orion_buf_init(&b);
  put_every_type(&b);
  accept_init(&d);
  cr_assert_eq(run(&d, b.data, b.len, 0, fr, 1), 0, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert_eq(fr->n, ORION_WIRE_TYPE_END - 1);
  for (t = 1; t < ORION_WIRE_TYPE_END; t++)
    cr_assert_eq(fr->type[t - 1], t == 1 ? ORION_WIRE_HELLO : t);
  for (t = 1; t < ORION_WIRE_TYPE_END; t++) {
    char opaque[32];
    int n = snprintf(opaque, sizeof opaque, "opaque payload of %d", t);
    if (t == ORION_WIRE_WELCOME || t == ORION_WIRE_SHUTDOWN)
      cr_assert_eq(fr->len[t - 1], 0);
    else if (t == ORION_WIRE_LOAD_BODY || t == ORION_WIRE_FETCH ||
             t == ORION_WIRE_BUFFER_FLUSH)
      cr_assert(fr->len[t - 1] == (size_t)n &&
                memcmp(fr->p[t - 1], opaque, (size_t)n) == 0);
  }
  {
    orion_wire_array a;
    orion_error err;
    const double *v;
    int i = ORION_WIRE_ARRAY_DATA - 1;
    cr_assert_eq(orion_wire_array_decode(fr->p[i], fr->len[i], &a, &err), 0,
                 "%s", err.msg);
    v = a.data;
    cr_assert(a.count == 5 && v[0] == 1.5 && v[3] == 1e300);
  }
  orion_wire_decoder_free(&d);
  frames_free(fr);
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * Chunking.
 * ---------------------------------------------------------------------- */

Test(wire, byte_by_byte_equals_one_chunk) {
  orion_buf b;
  orion_wire_decoder d1, d2;
  frames *whole = frames_new(), *bytes = frames_new();
  size_t i;
  int ready = 0;
  orion_buf_init(&b);
  put_every_type(&b);
  accept_init(&d1);
  cr_assert_eq(run(&d1, b.data, b.len, 0, whole, 1), 0);
  /* One byte per call: every call uses its byte. */
  accept_init(&d2);
  for (i = 0; i < b.len; i++) {
    size_t used = 0;
    int rc = orion_wire_decoder_feed(&d2, b.data + i, 1, &used);
    cr_assert(rc >= 0, "%s", orion_wire_decoder_reason(&d2));
    cr_assert_eq(used, 1);
    if (rc == ORION_WIRE_FRAME_READY) {
      const orion_wire_frame *f = orion_wire_decoder_frame(&d2);
      cr_assert_eq(f->type, whole->type[ready]);
      cr_assert(f->len == whole->len[ready] &&
                memcmp(f->payload, whole->p[ready], f->len) == 0);
      ready++;
    } else {
      cr_assert_null(orion_wire_decoder_frame(&d2));
    }
  }
  cr_assert_eq(ready, whole->n);
  cr_assert_eq(orion_wire_decoder_finish(&d2), 0);
  /* And through the helper, with odd chunk sizes. */
  for (i = 1; i < 40; i += 3) {
    orion_wire_decoder d3;
    accept_init(&d3);
    frames_clear(bytes);
    cr_assert_eq(run(&d3, b.data, b.len, i, bytes, 1), 0);
    cr_assert(frames_equal(whole, bytes), "chunks of %zu differ", i);
    orion_wire_decoder_free(&d3);
  }
  orion_wire_decoder_free(&d1);
  orion_wire_decoder_free(&d2);
  frames_free(whole);
  frames_free(bytes);
  orion_buf_free(&b);
}

Test(wire, many_frames_in_one_chunk) {
  orion_buf b;
  orion_wire_decoder d;
  size_t off = 0;
  uint64_t seq = 0;
  orion_buf_init(&b);
  put_hello(&b, 1);
  for (seq = 0; seq < 3000; seq++) {
    orion_wire_heartbeat hb = {1, seq, seq * 1000, seq * 7};
    cr_assert_eq(orion_wire_heartbeat_encode(&b, &hb), 0);
  }
  accept_init(&d);
  seq = 0;
  while (off < b.len) {
    size_t used;
    int rc = orion_wire_decoder_feed(&d, b.data + off, b.len - off, &used);
    const orion_wire_frame *f;
    orion_wire_heartbeat hb;
    cr_assert_eq(rc, ORION_WIRE_FRAME_READY);
    off += used;
    f = orion_wire_decoder_frame(&d);
    if (f->type == ORION_WIRE_HELLO)
      continue;
    cr_assert_eq(orion_wire_heartbeat_decode(f->payload, f->len, &hb, NULL),
                 0);
    cr_assert_eq(hb.seq, seq);
    cr_assert_eq(hb.mem_used, seq * 7);
    seq++;
  }
  cr_assert_eq(seq, 3000);
  cr_assert_eq(orion_wire_decoder_finish(&d), 0);
  orion_wire_decoder_free(&d);
  orion_buf_free(&b);
}

Test(wire, decoder_memory_is_released) {
  size_t before = orion_alloc_used();
  orion_buf b;
  orion_wire_decoder d;
  static float big[100000];
  orion_wire_array a = {1, ORION_F32, 1, {100000}, 0, 100000, big};
  orion_buf_init(&b);
  put_hello(&b, 1);
  cr_assert_eq(orion_wire_array_encode(&b, &a), 0);
  cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_SHUTDOWN, NULL, 0), 0);
  accept_init(&d);
  cr_assert_eq(run(&d, b.data, b.len, 4096, NULL, 1), 0);
  orion_wire_decoder_free(&d);
  orion_buf_free(&b);
  cr_assert_eq(orion_alloc_used(), before, "leaked %zu bytes",
               orion_alloc_used() - before);
}

/* ------------------------------------------------------------------------
 * Decoder errors.
 * ---------------------------------------------------------------------- */

Test(wire, error_bad_magic) {
  orion_buf b;
  orion_buf_init(&b);
  orion_buf_append(&b, "GET / HTTP/1.1\r\n", 16);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_MAGIC, ORION_EPARSE,
               "bad magic 0x47 0x45 at stream offset 0");
  /* Out of step after a good frame: the offset names where. */
  orion_buf_free(&b);
  orion_buf_init(&b);
  put_hello(&b, 1);
  orion_buf_append(&b, "XC\001\003\000\000\000\000\000", 9);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_MAGIC, ORION_EPARSE,
               "bad magic");
  orion_buf_free(&b);
}

Test(wire, error_unknown_version) {
  orion_buf b;
  int v;
  orion_buf_init(&b);
  /* Version 1 is the build before buffered writes were run-coded and the
   * checksum became CRC-32C, version 2 the one whose BODY_ERROR carried its
   * block as text, version 3 the one whose SHUTDOWN carried no reason, whose
   * LOOP_DONE had no seconds and whose rotating rows went through the
   * driver, version 4 the one whose HELLO named no GPU and whose LOAD_BODY
   * had no device fields, version 5 the one whose FETCH_REPLY did not say
   * how many of the requester's flushes it holds and whose LOAD_BODY and
   * LOOP_DONE had no managed buffers' budget and statistics, version 6 the
   * one without BCAST: refused by their number, not by a CRC error or a
   * malformed payload. */
  for (v = 1; v < ORION_WIRE_VERSION; v++) {
    char want[96];
    b.len = 0;
    put_raw(&b, v, ORION_WIRE_HELLO, 0, NULL, 0, 1);
    snprintf(want, sizeof want,
             "unknown version %d at stream offset 0 (this build speaks "
             "version %d)",
             v, ORION_WIRE_VERSION);
    expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_VERSION,
                 ORION_EVERSION, want);
  }
  orion_buf_free(&b);
}

Test(wire, error_unknown_type) {
  orion_buf b;
  orion_buf_init(&b);
  put_hello(&b, 1);
  put_raw(&b, ORION_WIRE_VERSION, 99, 0, "x", 1, 1);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_TYPE, ORION_EPARSE,
               "unknown frame type 99");
  orion_buf_free(&b);
  orion_buf_init(&b);
  put_raw(&b, ORION_WIRE_VERSION, 0, 0, NULL, 0, 1);
  expect_fault(&b, ORION_WIRE_TRUSTED, ORION_WIRE_BAD_TYPE, ORION_EPARSE,
               "unknown frame type 0");
  orion_buf_free(&b);
}

Test(wire, error_reserved_flags) {
  orion_buf b;
  orion_buf_init(&b);
  put_raw(&b, ORION_WIRE_VERSION, ORION_WIRE_HEARTBEAT, 0x80, NULL, 0, 1);
  expect_fault(&b, ORION_WIRE_TRUSTED, ORION_WIRE_BAD_FLAGS, ORION_EPARSE,
               "reserved flags 0x80 set in the HEARTBEAT frame");
  orion_buf_free(&b);
}

Test(wire, error_truncated_at_end_of_stream) {
  orion_buf b;
  orion_buf_init(&b);
  put_hello(&b, 1);
  cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_LOAD_BODY, "0123456789", 10),
               0);
  {
    size_t full = b.len;
    b.len = full - 4 - 3; /* 7 of the 10 payload bytes */
    expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                 "truncated payload at end of stream: the LOAD_BODY frame "
                 "at stream offset");
    b.len = full - 4 - 10 - 5; /* 4 of 9 header bytes */
    expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                 "truncated header at end of stream: 4 of 9 bytes");
    b.len = full - 1; /* 3 of 4 CRC bytes */
    expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                 "truncated CRC at end of stream");
  }
  orion_buf_free(&b);
}

Test(wire, error_crc_mismatch) {
  orion_buf b;
  orion_buf_init(&b);
  put_hello(&b, 1);
  put_raw(&b, ORION_WIRE_VERSION, ORION_WIRE_FETCH, 0, "abc", 3, 0);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_CRC, ORION_ECHECKSUM,
               "CRC mismatch in the FETCH frame at stream offset");
  orion_buf_free(&b);
}

/* Under a MAC that covers every byte (dsm/net.c after the handshake) the
 * decoder leaves the CRC to it: the frames still parse, header checks and
 * all, and a trailer that does not match passes (the records' MAC has
 * refused a changed byte before the decoder sees it). */
Test(wire, mac_covered_decoder_leaves_the_crc_to_the_mac) {
  orion_buf b;
  orion_wire_decoder d;
  frames *fr = frames_new();
  orion_buf_init(&b);
  put_hello(&b, 1);
  put_raw(&b, ORION_WIRE_VERSION, ORION_WIRE_FETCH, 0, "abc", 3, 0);
  accept_init(&d);
  orion_wire_decoder_mac_covered(&d);
  cr_assert_eq(run(&d, b.data, b.len, 2, fr, 1), 0, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert_eq(fr->n, 2);
  cr_assert_eq(fr->type[1], ORION_WIRE_FETCH);
  cr_assert(fr->len[1] == 3 && memcmp(fr->p[1], "abc", 3) == 0);
  orion_wire_decoder_free(&d);
  /* The header is still checked. */
  b.data[b.len - (ORION_WIRE_HEADER_LEN + 3 + 4) + 3] = 0x7f; /* its type */
  accept_init(&d);
  orion_wire_decoder_mac_covered(&d);
  cr_assert_eq(run(&d, b.data, b.len, 0, NULL, 1), ORION_EPARSE);
  cr_assert_eq(orion_wire_decoder_fault(&d), ORION_WIRE_BAD_TYPE);
  orion_wire_decoder_free(&d);
  frames_free(fr);
  orion_buf_free(&b);
}

Test(wire, error_first_frame_not_hello) {
  orion_buf b;
  orion_wire_heartbeat hb = {1, 2, 3, 4};
  orion_buf_init(&b);
  cr_assert_eq(orion_wire_heartbeat_encode(&b, &hb), 0);
  put_hello(&b, 1);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_HANDSHAKE, -EPROTO,
               "first frame is HEARTBEAT, not HELLO");
  /* A connecting side wants WELCOME first. */
  expect_fault(&b, ORION_WIRE_CONNECT, ORION_WIRE_HANDSHAKE, -EPROTO,
               "first frame is HEARTBEAT, not WELCOME");
  orion_buf_free(&b);
}

Test(wire, error_second_hello) {
  orion_buf b;
  orion_buf_init(&b);
  put_hello(&b, 1);
  put_hello(&b, 2);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_HANDSHAKE, -EPROTO,
               "second HELLO");
  orion_buf_free(&b);
}

Test(wire, error_malformed_hello) {
  orion_buf b;
  /* an executor id, address length 3 but 2 bytes of address */
  static const unsigned char p[] = {1, 0, 0, 0, 3, 0, 'a', 'b'};
  orion_buf_init(&b);
  put_raw(&b, ORION_WIRE_VERSION, ORION_WIRE_HELLO, 0, p, sizeof p, 1);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_BAD_HELLO, ORION_EPARSE,
               "malformed HELLO: HELLO payload too short: it ends inside the "
               "address");
  orion_buf_free(&b);
}

Test(wire, errors_are_sticky) {
  orion_buf good, bad;
  orion_wire_decoder d;
  char reason[1024];
  size_t used = 99;
  int rc;
  orion_buf_init(&good);
  orion_buf_init(&bad);
  put_hello(&good, 1);
  put_raw(&bad, ORION_WIRE_VERSION, ORION_WIRE_HELLO, 0, "zz", 2, 0);
  accept_init(&d);
  rc = run(&d, bad.data, bad.len, 0, NULL, 0);
  cr_assert_eq(rc, ORION_ECHECKSUM);
  snprintf(reason, sizeof reason, "%s", orion_wire_decoder_reason(&d));
  /* A valid HELLO afterwards is ignored: no frame, nothing consumed, the
   * same code and reason, and finish says the same. */
  rc = orion_wire_decoder_feed(&d, good.data, good.len, &used);
  cr_assert_eq(rc, ORION_ECHECKSUM);
  cr_assert_eq(used, 0);
  cr_assert_null(orion_wire_decoder_frame(&d));
  cr_assert_str_eq(orion_wire_decoder_reason(&d), reason);
  cr_assert_eq(orion_wire_decoder_finish(&d), ORION_ECHECKSUM);
  cr_assert_eq(orion_wire_decoder_fault(&d), ORION_WIRE_BAD_CRC);
  {
    size_t len;
    cr_assert_null(orion_wire_decoder_take(&d, &len));
    cr_assert_eq(len, 0);
  }
  orion_wire_decoder_free(&d);
  orion_buf_free(&good);
  orion_buf_free(&bad);
}

Test(wire, bad_setup_refused) {
  orion_wire_decoder d;
  size_t used;
  cr_assert_eq(orion_wire_decoder_init(&d, (orion_wire_role)77),
               ORION_EINVAL);
  cr_assert_eq(orion_wire_decoder_feed(&d, "OC", 2, &used), ORION_EINVAL);
  cr_assert(strstr(orion_wire_decoder_reason(&d), "role") != NULL);
  orion_wire_decoder_free(&d);
}

/* ------------------------------------------------------------------------
 * Size limits.
 * ---------------------------------------------------------------------- */

Test(wire, configured_limit_exact_and_one_over) {
  static unsigned char payload[4097];
  orion_buf b;
  orion_wire_decoder d;
  frames *fr = frames_new();
  size_t before, used;
  int rc;
  orion_buf_init(&b);
  put_hello(&b, 1);
  cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_ARRAY_DATA, payload, 4096),
               0);
  accept_init(&d);
  orion_wire_decoder_set_limit(&d, 4096);
  cr_assert_eq(run(&d, b.data, b.len, 0, fr, 1), 0, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert_eq(fr->n, 2);
  cr_assert_eq(fr->len[1], 4096);
  orion_wire_decoder_free(&d);

  /* One byte more: refused from the header, nothing allocated. */
  orion_buf_free(&b);
  orion_buf_init(&b);
  put_hello(&b, 1);
  cr_assert_eq(orion_wire_encode(&b, ORION_WIRE_ARRAY_DATA, payload, 4097),
               0);
  accept_init(&d);
  orion_wire_decoder_set_limit(&d, 4096);
  cr_assert_eq(run(&d, b.data, b.len - 4097 - 4 - 9, 0, NULL, 0), 0);
  before = orion_alloc_used();
  rc = orion_wire_decoder_feed(&d, b.data + b.len - 4097 - 4 - 9, 4097 + 13,
                               &used);
  cr_assert_eq(rc, -EMSGSIZE);
  cr_assert_eq(used, 9, "the decoder read past the header (%zu bytes)", used);
  cr_assert(orion_alloc_used() <= before);
  cr_assert_eq(orion_wire_decoder_fault(&d), ORION_WIRE_OVERSIZED);
  cr_assert(strstr(orion_wire_decoder_reason(&d),
                   "oversized frame: the ARRAY_DATA frame at stream offset") !=
                NULL,
            "%s", orion_wire_decoder_reason(&d));
  cr_assert(strstr(orion_wire_decoder_reason(&d),
                   "declares a payload of 4097 bytes, over the limit of "
                   "4096") != NULL,
            "%s", orion_wire_decoder_reason(&d));
  orion_wire_decoder_free(&d);
  frames_free(fr);
  orion_buf_free(&b);
}

Test(wire, hello_limited_before_the_handshake) {
  static unsigned char junk[ORION_WIRE_HELLO_MAX + 1];
  orion_buf b;
  orion_buf_init(&b);
  put_raw(&b, ORION_WIRE_VERSION, ORION_WIRE_HELLO, 0, junk, sizeof junk, 1);
  expect_fault(&b, ORION_WIRE_ACCEPT, ORION_WIRE_OVERSIZED, -EMSGSIZE,
               "over the limit of 1024");
  orion_buf_free(&b);
}

/* Feeds a frame of exactly ORION_WIRE_MAX_FRAME payload bytes in pieces
 * (no 256 MiB source buffer), and a header one byte over. */
Test(wire, default_limit_exact_and_one_over) {
  unsigned char h[9], t[4];
  static unsigned char piece[1 << 20];
  orion_wire_decoder d;
  orion_buf hello;
  uint32_t crc;
  size_t sent, used, before;
  int rc, i;
  for (i = 0; i < (int)sizeof piece; i++)
    piece[i] = (unsigned char)(i * 131);
  orion_buf_init(&hello);
  put_hello(&hello, 1);
  accept_init(&d);
  cr_assert_eq(run(&d, hello.data, hello.len, 0, NULL, 0), 0);
  orion_wire_pack_header(h, ORION_WIRE_ARRAY_DATA, ORION_WIRE_MAX_FRAME);
  crc = orion_wire_crc(0, h, 9);
  cr_assert_eq(orion_wire_decoder_feed(&d, h, 9, &used),
               ORION_WIRE_NEED_MORE);
  for (sent = 0; sent < ORION_WIRE_MAX_FRAME; sent += sizeof piece) {
    cr_assert_eq(orion_wire_decoder_feed(&d, piece, sizeof piece, &used),
                 ORION_WIRE_NEED_MORE);
    crc = orion_wire_crc(crc, piece, sizeof piece);
  }
  orion_wire_pack_trailer(t, crc);
  rc = orion_wire_decoder_feed(&d, t, 4, &used);
  cr_assert_eq(rc, ORION_WIRE_FRAME_READY, "%s",
               orion_wire_decoder_reason(&d));
  cr_assert_eq(orion_wire_decoder_frame(&d)->len, ORION_WIRE_MAX_FRAME);
  cr_assert(memcmp(orion_wire_decoder_frame(&d)->payload +
                       ORION_WIRE_MAX_FRAME - sizeof piece,
                   piece, sizeof piece) == 0);

  /* The next frame declares one byte more. */
  before = orion_alloc_used();
  orion_wire_pack_header(h, ORION_WIRE_ARRAY_DATA, ORION_WIRE_MAX_FRAME);
  h[5] = 1; /* 256 MiB + 1, little-endian */
  rc = orion_wire_decoder_feed(&d, h, 9, &used);
  cr_assert_eq(rc, -EMSGSIZE);
  cr_assert_eq(orion_wire_decoder_fault(&d), ORION_WIRE_OVERSIZED);
  cr_assert(strstr(orion_wire_decoder_reason(&d), "268435457") != NULL, "%s",
            orion_wire_decoder_reason(&d));
  /* Failing released the big buffer; nothing new was allocated. */
  cr_assert(orion_alloc_used() < before);
  orion_wire_decoder_free(&d);
  orion_buf_free(&hello);

  /* A limit above the maximum is the maximum. */
  orion_wire_decoder_init(&d, ORION_WIRE_TRUSTED);
  orion_wire_decoder_set_limit(&d, UINT32_MAX);
  cr_assert_eq(orion_wire_decoder_feed(&d, h, 9, &used), -EMSGSIZE);
  orion_wire_decoder_free(&d);
}

/* ------------------------------------------------------------------------
 * Payload decoders: bounds.
 * ---------------------------------------------------------------------- */

/* Every proper prefix of a valid payload fails, read from an exact-size
 * copy (so a sanitizer sees any over-read), and one extra byte fails. */
static void every_prefix_fails(int type, const orion_buf *frame) {
  size_t plen = frame->len - ORION_WIRE_OVERHEAD, k;
  const char *payload = frame->data + ORION_WIRE_HEADER_LEN;
  for (k = 0; k <= plen + 1; k++) {
    char *copy = malloc(k + 1);
    orion_error err;
    int rc;
    union {
      orion_wire_hello h;
      orion_wire_heartbeat hb;
      orion_wire_array a;
    } u;
    memcpy(copy, payload, k <= plen ? k : plen);
    if (k > plen)
      copy[plen] = 0;
    orion_error_clear(&err);
    switch (type) {
    case ORION_WIRE_HELLO:
      rc = orion_wire_hello_decode(copy, k, &u.h, &err);
      break;
    case ORION_WIRE_HEARTBEAT:
      rc = orion_wire_heartbeat_decode(copy, k, &u.hb, &err);
      break;
    default:
      rc = orion_wire_array_decode(copy, k, &u.a, &err);
    }
    free(copy);
    if (k == plen && rc != 0)
      cr_assert_fail("%s: the whole payload fails: %s",
                     orion_wire_type_name(type), err.msg);
    if (k != plen && rc == 0)
      cr_assert_fail("%s: %zu of %zu bytes decode", orion_wire_type_name(type),
                     k, plen);
    if (k != plen && (err.code != rc || err.msg[0] == '\0'))
      cr_assert_fail("%s: no message for %zu bytes",
                     orion_wire_type_name(type), k);
  }
}

Test(wire, payload_decoders_check_every_length) {
  orion_buf b;
  orion_wire_heartbeat hb = {1, 2, 3, 4};
  int32_t v[6] = {1, 2, 3, 4, 5, 6};
  orion_wire_array a = {3, ORION_I32, 2, {2, 3}, 0, 6, v};
  orion_buf_init(&b);
  put_hello(&b, 1);
  every_prefix_fails(ORION_WIRE_HELLO, &b);
  b.len = 0;
  cr_assert_eq(orion_wire_heartbeat_encode(&b, &hb), 0);
  every_prefix_fails(ORION_WIRE_HEARTBEAT, &b);
  b.len = 0;
  cr_assert_eq(orion_wire_array_encode(&b, &a), 0);
  every_prefix_fails(ORION_WIRE_ARRAY_DATA, &b);
  orion_buf_free(&b);
}

/* Patches one field of a valid ARRAY_DATA payload and expects `code`. */
static void array_patch(size_t at, const void *bytes, size_t n, int code,
                        const char *needle) {
  int64_t v[6] = {1, 2, 3, 4, 5, 6};
  orion_wire_array a = {3, ORION_I64, 2, {2, 3}, 0, 6, v}, out;
  orion_buf b;
  orion_error err;
  char *p;
  int rc;
  orion_buf_init(&b);
  cr_assert_eq(orion_wire_array_encode(&b, &a), 0);
  p = b.data + ORION_WIRE_HEADER_LEN;
  memcpy(p + at, bytes, n);
  orion_error_clear(&err);
  rc = orion_wire_array_decode(p, b.len - ORION_WIRE_OVERHEAD, &out, &err);
  cr_assert_eq(rc, code, "patch at %zu: code %d, message %s", at, rc,
               err.msg);
  cr_assert(strstr(err.msg, needle) != NULL, "\"%s\" lacks \"%s\"", err.msg,
            needle);
  orion_buf_free(&b);
}

Test(wire, array_data_fields_checked) {
  static const unsigned char t9 = 9, nd0 = 0, nd9 = 9, one = 1;
  static const int64_t zero = 0, minus = -1, seven = 7, huge = INT64_MAX / 2;
  array_patch(8, &t9, 1, ORION_ETYPE, "unknown element type 9");
  array_patch(9, &nd0, 1, ORION_EDIMS, "0 dimensions");
  array_patch(9, &nd9, 1, ORION_EDIMS, "9 dimensions");
  array_patch(10, &one, 1, ORION_EPARSE, "reserved");
  array_patch(12, &one, 1, ORION_EPARSE, "reserved");
  array_patch(16, &zero, 8, ORION_EDIMS, "dimension 1 is 0");
  array_patch(24, &minus, 8, ORION_EDIMS, "dimension 2 is -1");
  array_patch(16, &huge, 8, ORION_EOVERFLOW, "overflows");
  array_patch(32, &minus, 8, ORION_EKEYRANGE, "outside");
  array_patch(32, &seven, 8, ORION_EKEYRANGE, "outside"); /* 7 + 6 > 6 */
  array_patch(40, &seven, 8, ORION_EKEYRANGE, "outside");
  {
    static const int64_t five = 5, one64 = 1;
    array_patch(40, &five, 8, ORION_EPARSE, "8 unexpected trailing bytes");
    array_patch(32, &one64, 8, ORION_EKEYRANGE, "outside");
  }
}

/* ------------------------------------------------------------------------
 * Hostile input.
 * ---------------------------------------------------------------------- */

/* 10^5 random chunks, some starting like a real header: no frame is ever
 * yielded before a valid HELLO, and nothing crashes. */
Test(wire, random_bytes_never_pass_the_handshake) {
  orion_rng rng;
  orion_wire_decoder d;
  unsigned char chunk[64];
  int i, errors = 0;
  orion_rng_seed(&rng, 20240611);
  accept_init(&d);
  for (i = 0; i < 100000; i++) {
    size_t n = 1 + (size_t)orion_rng_below(&rng, sizeof chunk), j, off = 0;
    for (j = 0; j < n; j++)
      chunk[j] = (unsigned char)orion_rng_next(&rng);
    if (orion_rng_below(&rng, 4) == 0 && n >= 5) {
      chunk[0] = 'O';
      chunk[1] = 'C';
      chunk[2] = 1;
      chunk[3] = orion_rng_below(&rng, 2) ? ORION_WIRE_HELLO
                                          : (unsigned char)chunk[3] % 14;
      chunk[4] = 0;
      if (n >= 9 && orion_rng_below(&rng, 2)) {
        chunk[6] = chunk[7] = chunk[8] = 0; /* a small length */
      }
    }
    while (off < n) {
      size_t used;
      int rc = orion_wire_decoder_feed(&d, chunk + off, n - off, &used);
      if (rc == ORION_WIRE_FRAME_READY)
        cr_assert_fail("random bytes yielded a %s frame after chunk %d",
                       orion_wire_type_name(orion_wire_decoder_frame(&d)->type),
                       i);
      if (used > n - off)
        cr_assert_fail("used too much");
      off += used;
      if (rc < 0) {
        errors++;
        if (orion_wire_decoder_reason(&d)[0] == '\0')
          cr_assert_fail("an error without a reason");
        orion_wire_decoder_free(&d);
        accept_init(&d);
        break;
      }
    }
  }
  cr_assert(errors > 1000, "only %d errors", errors);
  orion_wire_decoder_free(&d);
}

/* Every prefix of a valid stream: the frames before the cut come out
 * intact, and finish reports truncation unless the cut is between
 * frames. */
Test(wire, every_truncation_detected) {
  orion_buf b;
  frames *whole = frames_new(), *got = frames_new();
  size_t ends[64], k;
  int nends, chunk;
  orion_wire_decoder d;
  orion_buf_init(&b);
  put_every_type(&b);
  nends = frame_ends(&b, ends, 64);
  accept_init(&d);
  cr_assert_eq(run(&d, b.data, b.len, 0, whole, 1), 0);
  orion_wire_decoder_free(&d);
  for (chunk = 0; chunk <= 7; chunk += 7)
    for (k = 0; k <= b.len; k++) {
      int rc, complete = 0, i;
      while (complete < nends && ends[complete] <= k)
        complete++;
      accept_init(&d);
      frames_clear(got);
      rc = run(&d, b.data, k, (size_t)chunk, got, 1);
      if (got->n != complete)
        cr_assert_fail("cut at %zu: %d frames, expected %d", k, got->n,
                       complete);
      for (i = 0; i < got->n; i++)
        if (got->len[i] != whole->len[i] ||
            memcmp(got->p[i], whole->p[i], got->len[i]) != 0)
          cr_assert_fail("cut at %zu: frame %d differs", k, i);
      if (k == 0 || (complete > 0 && ends[complete - 1] == k)) {
        if (rc != 0)
          cr_assert_fail("cut at %zu (a boundary) fails: %s", k,
                         orion_wire_decoder_reason(&d));
      } else if (rc != ORION_ETRUNC ||
                 strstr(orion_wire_decoder_reason(&d), "truncated") == NULL) {
        cr_assert_fail("cut at %zu: rc %d, %s", k, rc,
                       orion_wire_decoder_reason(&d));
      }
      orion_wire_decoder_free(&d);
    }
  frames_free(whole);
  frames_free(got);
  orion_buf_free(&b);
}

/* Every single-byte corruption (every position, every xor value) of a
 * valid stream: an error, or frames that differ from the original, never
 * a crash.  The CRC covers header and payload, so in practice every one is
 * an error; frames before the damaged one still come out intact. */
Test(wire, every_single_byte_corruption_detected) {
  orion_buf b;
  frames *whole = frames_new(), *got = frames_new();
  size_t ends[64], pos;
  int nends, detected = 0, total = 0;
  orion_wire_decoder d;
  orion_buf_init(&b);
  put_every_type(&b);
  nends = frame_ends(&b, ends, 64);
  accept_init(&d);
  cr_assert_eq(run(&d, b.data, b.len, 0, whole, 1), 0);
  orion_wire_decoder_free(&d);
  for (pos = 0; pos < b.len; pos++) {
    unsigned char orig = (unsigned char)b.data[pos];
    int x, damaged = 0, i;
    while (damaged < nends && ends[damaged] <= pos)
      damaged++;
    for (x = 1; x < 256; x++) {
      int rc;
      b.data[pos] = (char)(orig ^ x);
      accept_init(&d);
      frames_clear(got);
      rc = run(&d, b.data, b.len, 0, got, 1);
      total++;
      if (rc < 0) {
        detected++;
        if (orion_wire_decoder_reason(&d)[0] == '\0')
          cr_assert_fail("an error without a reason");
      } else if (frames_equal(got, whole)) {
        cr_assert_fail("corrupting byte %zu with 0x%02x went unnoticed", pos,
                       x);
      }
      if (got->n < damaged)
        cr_assert_fail("byte %zu: only %d frames before the damaged one",
                       pos, got->n);
      for (i = 0; i < damaged; i++)
        if (got->len[i] != whole->len[i] ||
            memcmp(got->p[i], whole->p[i], got->len[i]) != 0)
          cr_assert_fail("byte %zu: an earlier frame %d changed", pos, i);
      orion_wire_decoder_free(&d);
    }
    b.data[pos] = (char)orig;
  }
  cr_assert_eq(detected, total, "%d of %d corruptions detected", detected,
               total);
  frames_free(whole);
  frames_free(got);
  orion_buf_free(&b);
}
