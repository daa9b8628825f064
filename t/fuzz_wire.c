/* A fuzz target for the wire codec (dsm/wire.c).
 *
 With libFuzzer (UTIL stands for the files util/[a-z]*.c):
 *   clang -g -fsanitize=fuzzer,address,undefined -I. t/fuzz_wire.c \
 *     dsm/wire.c UTIL -lz -lm -o fuzz_wire && ./fuzz_wire CORPUS_DIR
 *
 * Without it (gcc, or clang without libFuzzer), a standalone mutator:
 *   gcc -g -DORION_FUZZ_STANDALONE -fsanitize=address,undefined -I. \
 *     t/fuzz_wire.c dsm/wire.c UTIL -lz -lm -o fuzz_wire
 *   ./fuzz_wire SECONDS [SEED]     mutate valid streams for SECONDS
 *   ./fuzz_wire -r FILE...         run saved inputs once each
 *   ./fuzz_wire -s DIR             write the seed streams into DIR (a
 *                                  starting corpus for libFuzzer)
 *
 * Input layout: one control byte, then the byte stream.  Control bits:
 *   0-1  decoder role: 0 and 3 ACCEPT (token "fuzz-token"), 1 CONNECT,
 *        2 TRUSTED
 *   2-4  chunking: 0 all at once, else chunks of 1, 2, 3, 7, 16, 64, 509
 *   5    a low payload limit (200 bytes)
 *   6    take each payload (orion_wire_decoder_take) instead of viewing it
 *   7    recompute the CRCs of the frames first, so that mutations reach
 *        the payload decoders and the handshake instead of the checksum
 *
 * Every violated invariant aborts: a frame before the handshake, a wrong
 * token accepted, a frame over the limit, an error that is not sticky, a
 * decoded field outside its payload, a payload that does not re-encode to
 * the same bytes, or memory left allocated.  `make check` runs it for
 * 60 s through t/fuzz_wire.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#define FUZZ_TOKEN "fuzz-token"
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
    CHECK(inside(h.token, h.token_len, p, len));
    CHECK(inside(h.addr, h.addr_len, p, len));
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
  case ORION_WIRE_BODY_ERROR: {
    orion_wire_body_error e;
    if (orion_wire_body_error_decode(p, len, &e, &err) != 0) {
      CHECK(err.code < 0 && err.msg[0] != '\0');
      break;
    }
    CHECK(inside(e.key, e.key_len, p, len));
    CHECK(inside(e.msg, e.msg_len, p, len));
    CHECK(orion_wire_body_error_encode(&b, &e) == 0);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t chunks[8] = {0, 1, 2, 3, 7, 16, 64, 509};
  orion_wire_decoder d;
  orion_wire_role role;
  unsigned char *s;
  size_t n, off = 0, chunk, base = orion_alloc_used();
  uint32_t limit = ORION_WIRE_MAX_FRAME;
  uint64_t frames = 0;
  int ctl, rc = 0, take;
  if (size < 1)
    return 0;
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
  CHECK(orion_wire_decoder_init(&d, role, FUZZ_TOKEN, strlen(FUZZ_TOKEN)) ==
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
        /* The handshake: HELLO first, with our token, and only once. */
        CHECK((f->type == ORION_WIRE_HELLO) == (frames == 0));
        if (frames == 0) {
          orion_wire_hello h;
          CHECK(f->len <= ORION_WIRE_HELLO_MAX);
          CHECK(orion_wire_hello_decode(f->payload, f->len, &h, NULL) == 0);
          CHECK(h.token_len == strlen(FUZZ_TOKEN) &&
                memcmp(h.token, FUZZ_TOKEN, h.token_len) == 0);
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
#define NSEEDS 4

/* Valid streams (without the control byte) to start mutations from. */
static void make_seeds(orion_buf seeds[NSEEDS]) {
  static const double vals[4] = {1, 2, 3, 4};
  orion_wire_hello h = {FUZZ_TOKEN, strlen(FUZZ_TOKEN), 2, "127.0.0.1:9000",
                        14};
  orion_wire_heartbeat hb = {2, 1, 1000, 4096};
  orion_wire_body_error be = {2, "(1, 2)", 6, "oops\ntraceback", 14};
  orion_wire_array a = {5, 1, 2, {2, 2}, 0, 4, vals};
  int i;
  for (i = 0; i < NSEEDS; i++)
    orion_buf_init(&seeds[i]);
  /* An executor's session, as the driver sees it. */
  orion_wire_hello_encode(&seeds[0], &h);
  orion_wire_heartbeat_encode(&seeds[0], &hb);
  orion_wire_array_encode(&seeds[0], &a);
  orion_wire_body_error_encode(&seeds[0], &be);
  orion_wire_encode(&seeds[0], ORION_WIRE_BLOCK_DONE, "\1\0\0\0", 4);
  orion_wire_encode(&seeds[0], ORION_WIRE_SHUTDOWN, NULL, 0);
  /* The driver's side, as an executor sees it. */
  orion_wire_encode(&seeds[1], ORION_WIRE_WELCOME, NULL, 0);
  orion_wire_encode(&seeds[1], ORION_WIRE_LOAD_BODY, "body bytes", 10);
  orion_wire_encode(&seeds[1], ORION_WIRE_RUN_BLOCK, "\3\0\0\0", 4);
  orion_wire_array_encode(&seeds[1], &a);
  /* A HELLO and many small frames. */
  orion_wire_hello_encode(&seeds[2], &h);
  for (i = 0; i < 20; i++) {
    hb.seq = (uint64_t)i;
    orion_wire_heartbeat_encode(&seeds[2], &hb);
    orion_wire_encode(&seeds[2], ORION_WIRE_FETCH, "k", 1);
  }
  /* Just a HELLO. */
  orion_wire_hello_encode(&seeds[3], &h);
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
    default: /* a random control byte */
      if (len > 0)
        s[0] = (unsigned char)orion_rng_next(r);
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
static int write_seeds(const char *dir) {
  static const unsigned char ctls[4] = {0x00, 0x81, 0x86, 0xc4};
  orion_buf seeds[NSEEDS];
  int i, j, rc = 0;
  make_seeds(seeds);
  for (i = 0; i < NSEEDS; i++)
    for (j = 0; j < 4; j++) {
      char path[4096];
      FILE *f;
      snprintf(path, sizeof path, "%s/seed-%d-%02x", dir, i, ctls[j]);
      f = fopen(path, "wb");
      if (f == NULL || fwrite(&ctls[j], 1, 1, f) != 1 ||
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
      size_t n = 1 + sd->len;
      input[0] = (unsigned char)orion_rng_next(&rng);
      memcpy(input + 1, sd->data, sd->len);
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
