/* Tests of the payload codec (dsm/msg.h): for every message a round trip
 * with non-trivial content (several segments, runs, arrays, negative ids,
 * NaN and infinities bit for bit), the same bytes as the hand-written
 * encoders the runtime used before (the BUFFER_FLUSH item coding included),
 * exact sizes, every truncation and a trailing byte refused with a message
 * and nothing left allocated, counts larger than the bytes left refused
 * before anything is allocated, the encoders' range checks, and the
 * transitional BODY_ERROR interface.  No sockets: byte buffers only. */
#include "t/testutil.h"

#include <math.h>
#include <stdint.h>

#include "dsm/bodycache.h"
#include "dsm/msg.h"
#include "dsm/types.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* The hand-written field writers the runtime used before dsm/msg.h: the
 * reference layouts the codec must reproduce byte for byte. */
static void orion_pw_i64(orion_buf *b, int64_t v) {
  orion_buf_u64(b, (uint64_t)v);
}

static void orion_pw_f64(orion_buf *b, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  orion_buf_u64(b, u);
}

static void orion_pw_bytes(orion_buf *b, const void *p, size_t n) {
  orion_buf_u64(b, (uint64_t)n);
  orion_buf_append(b, p, n);
}

TestSuite(msg, .timeout = 120);

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

static double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

#define NAN_PAYLOAD 0x7ff800000000beefull
#define SNAN_NEG 0xfff0000000000001ull

/* The payload of the one frame in b, after checking its header. */
static const char *payload_of(const orion_buf *b, int type, size_t *n) {
  cr_assert_geq(b->len, ORION_WIRE_OVERHEAD);
  cr_assert_eq((unsigned char)b->data[3], type, "frame type %d, not %d",
               (unsigned char)b->data[3], type);
  *n = b->len - ORION_WIRE_OVERHEAD;
  return b->data + ORION_WIRE_HEADER_LEN;
}

static void eq_bytes(const char *a, size_t na, const char *b, size_t nb,
                     const char *what) {
  cr_assert_eq(na, nb, "%s: %zu bytes, expected %zu", what, na, nb);
  cr_assert(na == 0 || memcmp(a, b, na) == 0, "%s differs", what);
}

static void eq_f64(double a, double b, const char *what) {
  cr_assert(memcmp(&a, &b, sizeof a) == 0, "%s: bits differ", what);
}

/* A view that points into the payload p[0..n). */
static void inside(const void *v, size_t len, const char *p, size_t n) {
  const char *c = v;
  cr_assert(len == 0 || (c >= p && c + len <= p + n),
            "a view points outside the payload");
}

static void eq_runs(const orion_msg_run *a, int64_t na, const orion_msg_run *b,
                    int64_t nb, const char *p, size_t n) {
  int64_t k;
  cr_assert_eq(na, nb, "%lld runs, expected %lld", (long long)na,
               (long long)nb);
  for (k = 0; k < na; k++) {
    cr_assert_eq(a[k].array, b[k].array);
    cr_assert_eq(a[k].first, b[k].first);
    cr_assert_eq(a[k].count, b[k].count);
    eq_bytes(a[k].data, a[k].len, b[k].data, b[k].len, "run data");
    inside(a[k].data, a[k].len, p, n);
  }
}

static void eq_ranges(const orion_msg_range *a, int64_t na,
                      const orion_msg_range *b, int64_t nb) {
  int64_t k;
  cr_assert_eq(na, nb);
  for (k = 0; k < na; k++) {
    cr_assert_eq(a[k].array, b[k].array);
    cr_assert_eq(a[k].first, b[k].first);
    cr_assert_eq(a[k].count, b[k].count);
  }
}

/* Every proper prefix of the frame's payload is refused (with a code, a
 * message, and nothing left allocated), read from an exact-size copy so
 * that a sanitizer sees any over-read; so are the payload plus one byte
 * and plus eight; the whole payload decodes and re-encodes to the same
 * frame. */
static void check_bounds(int type, const orion_buf *frame) {
  size_t plen, k, base = orion_alloc_used();
  const char *payload = payload_of(frame, type, &plen);
  orion_msg m;
  orion_buf again;
  for (k = 0; k <= plen + 8; k++) {
    char *copy;
    orion_error err;
    int rc;
    if (k > plen + 1 && k != plen + 8)
      continue;
    copy = malloc(k + 1);
    memcpy(copy, payload, k <= plen ? k : plen);
    if (k > plen)
      memset(copy + plen, 0, k - plen);
    orion_error_clear(&err);
    rc = orion_msg_decode(type, copy, k, &m, &err);
    if (k == plen) {
      cr_assert_eq(rc, 0, "%s: the whole payload fails: %s",
                   orion_wire_type_name(type), err.msg);
      orion_buf_init(&again);
      cr_assert_eq(orion_msg_encode(&again, type, &m), 0);
      cr_assert_eq(again.len, frame->len, "%s: re-encoded to %zu bytes",
                   orion_wire_type_name(type), again.len);
      cr_assert(memcmp(again.data, frame->data, frame->len) == 0,
                "%s: re-encoded to other bytes", orion_wire_type_name(type));
      orion_buf_free(&again);
      orion_msg_free(type, &m);
    } else {
      cr_assert(rc < 0, "%s: %zu of %zu bytes decode",
                orion_wire_type_name(type), k, plen);
      cr_assert(err.code == rc && err.msg[0] != '\0',
                "%s: no message for %zu bytes", orion_wire_type_name(type), k);
      cr_assert(strstr(err.msg, orion_wire_type_name(type)) != NULL,
                "%s: the message does not name it: %s",
                orion_wire_type_name(type), err.msg);
      if (k > plen)
        cr_assert_eq(rc, ORION_EPARSE, "%s: trailing bytes give %d",
                     orion_wire_type_name(type), rc);
      orion_msg_free(type, &m); /* zeroed on failure: harmless */
    }
    free(copy);
    cr_assert_eq(orion_alloc_used(), base, "%s: %zu bytes left allocated",
                 orion_wire_type_name(type), orion_alloc_used() - base);
  }
}

/* A payload of 64-bit words, decoded as type: returns the code. */
static int decode_words(int type, const uint64_t *w, size_t nw) {
  size_t base = orion_alloc_used();
  orion_msg m;
  orion_error err;
  int rc;
  orion_error_clear(&err);
  rc = orion_msg_decode(type, w, nw * 8, &m, &err);
  if (rc == 0)
    orion_msg_free(type, &m);
  else
    cr_assert(err.code == rc && err.msg[0] != '\0');
  cr_assert_eq(orion_alloc_used(), base);
  return rc;
}

/* ------------------------------------------------------------------------
 * Sample messages.
 * ---------------------------------------------------------------------- */

static const char blob[] = "\x1bLua captured body\0with a NUL";
static const double vals5[5] = {1.5, -2.25, 3.0, 1e300, -0.0};
static const int32_t ivals3[3] = {7, -8, 9};
static const int64_t keys2x3[6] = {0, 1, 2, 3, 4, -5};

static const orion_msg_run runs3[3] = {
    {-7, 0, 5, (const char *)vals5, sizeof vals5, 0},
    {12, 40, 3, (const char *)ivals3, sizeof ivals3, 0},
    {-7, 100, 0, NULL, 0, 0}};

/* LOAD_BODY's last fields, wire version 22's (empty here): the body
 * digest and base (a length word each), prefix and suffix. */
#define LB_TAIL 32

static void sample_load_body(orion_msg_load_body *m, orion_msg_shard *sh,
                             orion_cslot *sl) {
  static const orion_msg_array_desc arrays[3] = {
      {-7, ORION_F64, 0, 2, {100, 5}, 0},
      {12, ORION_I32, 0, 1, {43}, 0},
      {3, ORION_F32, 1, 2, {2, 3}, 1}}; /* ragged */
  static const orion_msg_acc_desc accs[2] = {{-1, 0}, {99, 2}};
  static const orion_msg_buf_desc bufs[2] = {
      {21, "grad", 4, -7, 0, NULL, 0, 0},
      {-22, "ff", 2, 12, 2, "apply\0fn", 8, -1}};
  int i;
  memset(m, 0, sizeof *m);
  m->loop = -3;
  m->blob = blob;
  m->blob_len = sizeof blob;
  m->iter = 3;
  m->arrays = arrays;
  m->narrays = 3;
  m->accs = accs;
  m->naccs = 2;
  m->bufs = bufs;
  m->nbufs = 2;
  m->run = 41;
  m->chash = 0xfedcba9876543210ull;
  m->csrc = "int f(void) { return 0; }";
  m->csrc_len = strlen(m->csrc);
  m->cflags = "-O2 fast";
  m->cflags_len = 8;
  m->required = 1;
  memset(sl, 0, 4 * sizeof *sl);
  for (i = 0; i < 4; i++) {
    sl[i].kind = (orion_cslot_kind)i;
    sl[i].id = -i;
    sl[i].isint = i & 1;
    sl[i].ival = INT64_MIN + i;
  }
  sl[0].fval = bits_f64(NAN_PAYLOAD);
  sl[1].fval = INFINITY;
  sl[2].fval = -INFINITY;
  sl[3].fval = -0.0;
  m->slots = sl;
  m->nslots = 4;
  sh[0].array = -7;
  sh[0].flags = ORION_SHARD_FETCH | ORION_SHARD_WRITTEN | ORION_SHARD_DIRECT;
  sh[0].runs = runs3;
  sh[0].nruns = 2;
  sh[1].array = 12;
  sh[1].flags = 0;
  sh[1].runs = NULL;
  sh[1].nruns = 0;
  m->shards = sh;
  {
    static const orion_msg_move gets[1] = {{-7, 5, 10, 2, -1}};
    m->gets = gets;
    m->ngets = 1;
  }
  { /* tier "gpu": a 2d-ordered grid, skewed, b = 12 */
    m->gpu = 2;
    m->gkind = 4;
    m->gspace = 1;
    m->gtime = 0;
    m->gskew_dim = 0;
    m->gskew = -3;
    m->gb = 12;
    m->bandwidth_mbps = 12.5;
    m->timeout = 2.5;
  }
  m->nshards = 2;
}

static void sample_run_block(orion_msg_run_block *m) {
  static const orion_msg_seg segs[3] = {{0, 10}, {-4, 4}, {30, 31}};
  static const orion_msg_range watch[2] = {{-7, 0, 500}, {12, 1, 2}};
  static const orion_msg_move gets[1] = {{5, 10, 20, 1, 7}};
  static const orion_msg_move puts[2] = {{5, 10, 20, 2, 9}, {6, 0, 3, 0, -1}};
  memset(m, 0, sizeof *m);
  m->block = -1;
  m->seed = 0x8000000000000001ull;
  m->nblocks = 16;
  m->segs = segs;
  m->nsegs = 3;
  m->has_elems = 1;
  m->nelems = 3;
  m->keys = (const char *)keys2x3;
  m->keys_len = sizeof keys2x3;
  m->values = (const char *)ivals3;
  m->values_len = sizeof ivals3;
  m->runs = runs3;
  m->nruns = 3;
  m->watch = watch;
  m->nwatch = 2;
  m->gets = gets;
  m->ngets = 1;
  m->puts = puts;
  m->nputs = 2;
  m->first = 1234567; /* wire version 19 */
  m->keep = 1;
  m->space = 3; /* wire version 21 */
  m->time = -1;
  m->late = 1; /* wire version 24 */
}

static void eq_moves(const orion_msg_move *a, int64_t na,
                     const orion_msg_move *b, int64_t nb) {
  int64_t k;
  cr_assert_eq(na, nb);
  for (k = 0; k < na; k++) {
    cr_assert_eq(a[k].array, b[k].array);
    cr_assert_eq(a[k].first, b[k].first);
    cr_assert_eq(a[k].count, b[k].count);
    cr_assert_eq(a[k].peer, b[k].peer);
    cr_assert_eq(a[k].block, b[k].block);
  }
}

static void sample_items(orion_msg_item *it, int n, int dense) {
  int i;
  for (i = 0; i < n; i++) {
    it[i].key = dense ? (i < n / 2 ? 100 + i : 1500 + i) : 7 * i + (i % 3);
    it[i].val.d = 0.25 * i - 3.0;
  }
  if (n > 2)
    it[1].val.i = (int64_t)NAN_PAYLOAD;
}

/* ------------------------------------------------------------------------
 * Round trips, bounds and re-encoding, message by message.
 * ---------------------------------------------------------------------- */

Test(msg, load_body_round_trip) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_buf b;
  const char *p;
  size_t n;
  int64_t k;
  int d;
  sample_load_body(&m, sh, sl);
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.loop, -3);
  eq_bytes(out.blob, out.blob_len, blob, sizeof blob, "blob");
  inside(out.blob, out.blob_len, p, n);
  cr_assert_eq(out.iter, 3);
  cr_assert_eq(out.narrays, 3);
  for (k = 0; k < 3; k++) {
    cr_assert_eq(out.arrays[k].id, m.arrays[k].id);
    cr_assert_eq(out.arrays[k].type, m.arrays[k].type);
    cr_assert_eq(out.arrays[k].sparse, m.arrays[k].sparse);
    cr_assert_eq(out.arrays[k].ragged, m.arrays[k].ragged);
    cr_assert_eq(out.arrays[k].ndims, m.arrays[k].ndims);
    for (d = 0; d < m.arrays[k].ndims; d++)
      cr_assert_eq(out.arrays[k].dims[d], m.arrays[k].dims[d]);
  }
  cr_assert_eq(out.naccs, 2);
  cr_assert_eq(out.accs[0].id, -1);
  cr_assert_eq(out.accs[1].op, 2);
  cr_assert_eq(out.nbufs, 2);
  for (k = 0; k < 2; k++) {
    cr_assert_eq(out.bufs[k].id, m.bufs[k].id);
    eq_bytes(out.bufs[k].name, out.bufs[k].name_len, m.bufs[k].name,
             m.bufs[k].name_len, "buffer name");
    cr_assert_eq(out.bufs[k].target, m.bufs[k].target);
    cr_assert_eq(out.bufs[k].op, m.bufs[k].op);
    eq_bytes(out.bufs[k].apply, out.bufs[k].apply_len, m.bufs[k].apply,
             m.bufs[k].apply_len, "apply");
    cr_assert_eq(out.bufs[k].flush, m.bufs[k].flush);
  }
  cr_assert_eq(out.run, 41);
  eq_moves(out.gets, out.ngets, m.gets, 1);
  cr_assert_eq(out.chash, 0xfedcba9876543210ull);
  eq_bytes(out.csrc, out.csrc_len, m.csrc, m.csrc_len, "csrc");
  eq_bytes(out.cflags, out.cflags_len, m.cflags, m.cflags_len, "cflags");
  cr_assert_eq(out.required, 1);
  cr_assert_eq(out.nslots, 4);
  for (k = 0; k < 4; k++) {
    cr_assert_eq(out.slots[k].kind, sl[k].kind);
    cr_assert_eq(out.slots[k].id, sl[k].id);
    cr_assert_eq(out.slots[k].isint, sl[k].isint);
    cr_assert_eq(out.slots[k].ival, sl[k].ival);
    cr_assert_null(out.slots[k].name);
    eq_f64(out.slots[k].fval, sl[k].fval, "slot float");
  }
  cr_assert_eq(out.nshards, 2);
  cr_assert_eq(out.shards[0].flags, 7);
  cr_assert_eq(out.shards[1].array, 12);
  eq_runs(out.shards[0].runs, out.shards[0].nruns, runs3, 2, p, n);
  cr_assert_eq(out.shards[1].nruns, 0);
  cr_assert_null(out.shards[1].runs);
  cr_assert_eq(out.gpu, 2);
  cr_assert_eq(out.gkind, 4);
  cr_assert_eq(out.gspace, 1);
  cr_assert_eq(out.gtime, 0);
  cr_assert_eq(out.gskew_dim, 0);
  cr_assert_eq(out.gskew, -3);
  cr_assert_eq(out.gb, 12);
  eq_f64(out.bandwidth_mbps, 12.5, "bandwidth budget");
  eq_f64(out.timeout, 2.5, "loop timeout");
  orion_msg_load_body_free(&out);
  orion_msg_load_body_free(&out); /* twice is harmless */
  check_bounds(ORION_WIRE_LOAD_BODY, &b);
  orion_buf_free(&b);
}

/* The runtime guard's list (wire version 14): each array with the plan's
 * placement round-trips; an empty placement, or one past
 * ORION_MSG_GUARD_MAX bytes, is refused by the encoder and the decoder. */
Test(msg, load_body_guards_round_trip_and_bounds) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_msg_guard g[2] = {{-7, "server (read-only)", 18},
                          {12, "local, read-only", 16}};
  char big[ORION_MSG_GUARD_MAX + 1];
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  sample_load_body(&m, sh, sl);
  m.guards = g;
  m.nguards = 2;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.nguards, 2);
  cr_assert_eq(out.guards[0].array, -7);
  eq_bytes(out.guards[0].placement, out.guards[0].placement_len,
           "server (read-only)", 18, "placement");
  cr_assert_eq(out.guards[1].array, 12);
  eq_bytes(out.guards[1].placement, out.guards[1].placement_len,
           "local, read-only", 16, "placement");
  orion_msg_load_body_free(&out);
  check_bounds(ORION_WIRE_LOAD_BODY, &b);
  /* The last placement's length word (8 bytes before its 16 bytes) made
   * 0: the decoder names the field. */
  {
    char *q = (char *)p + n - LB_TAIL - 8 - 16 - 8; /* verify follows */
    q[0] = 0;
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n - 16, &out, &err),
                 ORION_EPARSE);
    cr_assert(strstr(err.msg, "placement") != NULL, "%s", err.msg);
  }
  g[1].placement_len = 0;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  memset(big, 'x', sizeof big);
  g[1].placement = big;
  g[1].placement_len = sizeof big;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  orion_buf_free(&b);
}

/* An array's kind: a ragged array is a sparse one (refused on a dense
 * desc), and a kind past 2 is refused by the decoder. */
Test(msg, load_body_array_kind) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_msg_array_desc arr[1] = {{5, ORION_F64, 0, 2, {4, 3}, 1}};
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  sample_load_body(&m, sh, sl);
  m.arrays = arr;
  m.narrays = 1;
  orion_buf_init(&b);
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  arr[0].sparse = 1;
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.arrays[0].sparse, 1);
  cr_assert_eq(out.arrays[0].ragged, 1);
  orion_msg_load_body_free(&out);
  {
    /* loop, blob (length + bytes), iter, the array count, id, type: the
     * kind is the word after them. */
    char *q = (char *)p + 8 + 8 + sizeof blob + 8 + 8 + 8 + 8;
    cr_assert_eq(q[0], 2, "the kind word is not where expected");
    q[0] = 3;
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "kind") != NULL, "%s", err.msg);
  }
  orion_buf_free(&b);
}

/* The device fields: out-of-range values are refused on both sides, and a
 * device body needs a compiled one; so is a bad bandwidth budget. */
Test(msg, load_body_device_fields_checked) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  sample_load_body(&m, sh, sl);
  orion_buf_init(&b);
  m.gpu = 3;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.gpu = 1;
  m.gkind = 5;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.gkind = 1;
  m.chash = 0;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.chash = 7;
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  /* The last fields are gb (i64), the bandwidth and the timeout (f64),
   * then the chained body's length (i64), the count of guards (none
   * here) and the verify mode: make the gpu flag (12 words before the
   * end) 3, then the device grid space 99. */
  {
    char *q = (char *)p + n - LB_TAIL - 12 * 8;
    q[0] = 3;
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "gpu flag") != NULL, "%s", err.msg);
    q[0] = 1;
    q[16] = 99;
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "device grid space") != NULL, "%s", err.msg);
    q[16] = 1;
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
    cr_assert_eq(out.gpu, 1);
    cr_assert_eq(out.gkind, 1);
    orion_msg_load_body_free(&out);
  }
  /* The bandwidth budget (wire version 6, the last field): a negative one,
   * or NaN, is refused on both sides. */
  m.bandwidth_mbps = -1;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.bandwidth_mbps = NAN;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.bandwidth_mbps = 0; /* the measured rate */
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  {
    double bad = -1;
    /* little-endian, as the wire; the chained length and the count of
     * guards follow */
    memcpy((char *)p + n - LB_TAIL - 40, &bad, 8);
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "negative bandwidth budget") != NULL, "%s",
              err.msg);
  }
  /* The loop timeout (wire version 8): negative, NaN or
   * over ORION_MSG_TIMEOUT_MAX is refused on both sides. */
  m.timeout = -1;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.timeout = NAN;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.timeout = 0; /* no limit */
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  {
    double bad = 2e9;
    memcpy((char *)p + n - LB_TAIL - 32, &bad, 8);
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "the loop timeout is 2e+09 s") != NULL, "%s",
              err.msg);
  }
  /* The chained body's length (wire version 13, the last field): never
   * beside an inline blob, never negative; it comes back as sent. */
  cr_assert_gt(m.blob_len, 0);
  m.blob_chained = 600000;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0, "inline and chained");
  m.blob = NULL;
  m.blob_len = 0;
  m.blob_chained = -1;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.blob_chained = 600000;
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.blob_chained, 600000);
  cr_assert_eq(out.blob_len, 0);
  orion_msg_load_body_free(&out);
  {
    int64_t bad = -5;
    memcpy((char *)p + n - LB_TAIL - 24, &bad, 8); /* before guards, verify */
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "chained body's length") != NULL, "%s",
              err.msg);
  }
  orion_buf_free(&b);
}

Test(msg, run_block_round_trip) {
  orion_msg_run_block m, out;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  sample_run_block(&m);
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_run_block_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_RUN_BLOCK, &n);
  cr_assert_eq(orion_msg_run_block_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.block, -1);
  cr_assert_eq(out.seed, 0x8000000000000001ull);
  cr_assert_eq(out.nblocks, 16);
  cr_assert_eq(out.nsegs, 3);
  for (k = 0; k < 3; k++) {
    cr_assert_eq(out.segs[k].lo, m.segs[k].lo);
    cr_assert_eq(out.segs[k].hi, m.segs[k].hi);
  }
  cr_assert_eq(out.has_elems, 1);
  cr_assert_eq(out.nelems, 3);
  eq_bytes(out.keys, out.keys_len, m.keys, m.keys_len, "keys");
  eq_bytes(out.values, out.values_len, m.values, m.values_len, "values");
  inside(out.keys, out.keys_len, p, n);
  eq_runs(out.runs, out.nruns, runs3, 3, p, n);
  eq_ranges(out.watch, out.nwatch, m.watch, 2);
  eq_moves(out.gets, out.ngets, m.gets, 1);
  eq_moves(out.puts, out.nputs, m.puts, 2);
  cr_assert_eq(out.first, 1234567);
  cr_assert_eq(out.keep, 1);
  cr_assert_eq(out.space, 3);
  cr_assert_eq(out.time, -1);
  cr_assert_eq(out.late, 1);
  orion_msg_run_block_free(&out);
  check_bounds(ORION_WIRE_RUN_BLOCK, &b);
  /* Without the elements (the executor holds them), nothing else. */
  b.len = 0;
  memset(&m, 0, sizeof m);
  m.block = 5;
  cr_assert_eq(orion_msg_run_block_encode(&b, &m), 0);
  cr_assert_eq(b.len - ORION_WIRE_OVERHEAD, 14 * 8);
  check_bounds(ORION_WIRE_RUN_BLOCK, &b);
  /* A negative first element is refused. */
  b.len = 0;
  m.first = -1;
  cr_assert_eq(orion_msg_run_block_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_RUN_BLOCK, &n);
  cr_assert_eq(orion_msg_run_block_decode(p, n, &out, NULL), ORION_EPARSE);
  orion_buf_free(&b);
}

Test(msg, block_done_round_trip) {
  orion_msg_block_done m, out;
  orion_buf b;
  const char *p;
  size_t n;
  memset(&m, 0, sizeof m);
  m.block = 1234567890123ll;
  m.seconds = bits_f64(SNAN_NEG);
  m.wait_seconds = 0.125;
  m.has_values = 1;
  m.values = (const char *)vals5;
  m.values_len = sizeof vals5;
  m.runs = runs3;
  m.nruns = 3;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_block_done_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BLOCK_DONE, &n);
  cr_assert_eq(n, 8 + 8 + 8 + 8 + 8 + sizeof vals5 + 8 + 3 * 32 + sizeof vals5 +
                      sizeof ivals3 + 8);
  cr_assert_eq(orion_msg_block_done_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.block, m.block);
  eq_f64(out.seconds, m.seconds, "seconds");
  eq_f64(out.wait_seconds, 0.125, "wait seconds");
  cr_assert_eq(out.has_values, 1);
  eq_bytes(out.values, out.values_len, m.values, m.values_len, "values");
  eq_runs(out.runs, out.nruns, runs3, 3, p, n);
  cr_assert_eq(out.kept, 0);
  orion_msg_block_done_free(&out);
  check_bounds(ORION_WIRE_BLOCK_DONE, &b);
  /* Kept at the executor (wire version 19): the flag, no values; values
   * both sent and kept are refused. */
  b.len = 0;
  m.has_values = 0;
  m.kept = 1;
  cr_assert_eq(orion_msg_block_done_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BLOCK_DONE, &n);
  cr_assert_eq(orion_msg_block_done_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.kept, 1);
  cr_assert_eq(out.has_values, 0);
  cr_assert_eq(out.values_len, 0);
  orion_msg_block_done_free(&out);
  b.len = 0;
  m.has_values = 1;
  cr_assert_eq(orion_msg_block_done_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BLOCK_DONE, &n);
  cr_assert_eq(orion_msg_block_done_decode(p, n, &out, NULL), ORION_EPARSE);
  orion_buf_free(&b);
}

Test(msg, buffer_flush_round_trip_both_forms) {
  static orion_msg_item it[1000];
  int dense;
  for (dense = 0; dense < 2; dense++) {
    orion_msg_buffer_flush m, out;
    orion_buf b;
    const char *p;
    size_t n;
    int64_t k, cnt = dense ? 1000 : 50;
    sample_items(it, (int)cnt, dense);
    memset(&m, 0, sizeof m);
    m.run = -9;
    m.buffer = 77;
    m.isint = !dense;
    m.items = it;
    m.nitems = cnt;
    orion_buf_init(&b);
    cr_assert_eq(orion_msg_buffer_flush_encode(&b, &m), 0);
    p = payload_of(&b, ORION_WIRE_BUFFER_FLUSH, &n);
    /* t/test_buffer's sizes, after run, buffer and isint. */
    cr_assert_eq(n, dense ? 32 + 16 + 2 * 16 + 1000 * 8 : 32 + 16 + 50 * 16);
    cr_assert_eq(orion_msg_buffer_flush_decode(p, n, &out, NULL), 0);
    cr_assert_eq(out.run, -9);
    cr_assert_eq(out.buffer, 77);
    cr_assert_eq(out.isint, !dense);
    cr_assert_eq(out.nitems, cnt);
    for (k = 0; k < cnt; k++) {
      cr_assert_eq(out.items[k].key, it[k].key);
      cr_assert_eq(out.items[k].val.i, it[k].val.i);
    }
    orion_msg_buffer_flush_free(&out);
    check_bounds(ORION_WIRE_BUFFER_FLUSH, &b);
    orion_buf_free(&b);
  }
}

Test(msg, small_messages_round_trip_and_sizes) {
  orion_msg_flush_ack fa = {-5}, fa2;
  orion_msg_loop_end le = {1}, le2;
  orion_msg_shard_pull sp = {0}, sp2;
  orion_buf b;
  const char *p;
  size_t n;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_flush_ack_encode(&b, &fa), 0);
  p = payload_of(&b, ORION_WIRE_FLUSH_ACK, &n);
  cr_assert_eq(n, 8);
  cr_assert_eq(orion_msg_flush_ack_decode(p, n, &fa2, NULL), 0);
  cr_assert_eq(fa2.run, -5);
  check_bounds(ORION_WIRE_FLUSH_ACK, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_loop_end_encode(&b, &le), 0);
  p = payload_of(&b, ORION_WIRE_LOOP_END, &n);
  cr_assert_eq(n, 8);
  cr_assert_eq(orion_msg_loop_end_decode(p, n, &le2, NULL), 0);
  cr_assert_eq(le2.abort, 1);
  check_bounds(ORION_WIRE_LOOP_END, &b);
  b.len = 0;
  sp.keep = 1;
  cr_assert_eq(orion_msg_shard_pull_encode(&b, &sp), 0);
  p = payload_of(&b, ORION_WIRE_SHARD_PULL, &n);
  cr_assert_eq(n, 8);
  cr_assert_eq(orion_msg_shard_pull_decode(p, n, &sp2, NULL), 0);
  cr_assert_eq(sp2.keep, 1);
  check_bounds(ORION_WIRE_SHARD_PULL, &b);
  orion_buf_free(&b);
}

/* SHUTDOWN carries why the driver ends the job: empty after a normal end,
 * a failure's message otherwise; longer than the limit is refused. */
Test(msg, shutdown_reason_round_trip_and_limit) {
  static char big[ORION_MSG_SHUTDOWN_REASON_MAX + 2];
  static const char *const whys[2] = {
      "executor 1 (10.79.5.3:40312) has not answered for 5 s", ""};
  orion_msg_shutdown m, m2;
  orion_error err;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  orion_buf_init(&b);
  for (k = 0; k < 2; k++) {
    m.reason = whys[k];
    m.len = strlen(whys[k]);
    b.len = 0;
    cr_assert_eq(orion_msg_shutdown_encode(&b, &m), 0);
    p = payload_of(&b, ORION_WIRE_SHUTDOWN, &n);
    cr_assert_eq(n, 8 + m.len);
    cr_assert_eq(orion_msg_shutdown_decode(p, n, &m2, NULL), 0);
    eq_bytes(m2.reason, m2.len, whys[k], m.len, "the reason");
    check_bounds(ORION_WIRE_SHUTDOWN, &b);
  }
  /* A version-3 SHUTDOWN (no payload) is malformed now. */
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_shutdown_decode("", 0, &m2, &err), ORION_ETRUNC);
  cr_assert(strstr(err.msg, "SHUTDOWN") != NULL, "%s", err.msg);
  b.len = 0;
  memset(big, 'x', sizeof big);
  m.reason = big;
  m.len = ORION_MSG_SHUTDOWN_REASON_MAX + 1;
  cr_assert_eq(orion_msg_shutdown_encode(&b, &m), ORION_EINVAL);
  cr_assert_eq(b.len, 0);
  orion_buf_free(&b);
}

Test(msg, fetch_and_reply_round_trip) {
  static const uint64_t vers[4] = {0, 1, UINT64_MAX, 42};
  static const orion_msg_chunk chunks[2] = {{3, 17, (const char *)vals5, 40, 6},
                                            {-1, UINT64_MAX, NULL, 0, 0}};
  orion_msg_fetch f = {-2, 8, 10, 14, vers}, f2;
  orion_msg_fetch_reply r = {-8, chunks, 2, 77}, r2;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_fetch_encode(&b, &f), 0);
  p = payload_of(&b, ORION_WIRE_FETCH, &n);
  cr_assert_eq(n, 32 + 4 * 8);
  cr_assert_eq(orion_msg_fetch_decode(p, n, &f2, NULL), 0);
  cr_assert_eq(f2.run, -2);
  cr_assert_eq(f2.array, 8);
  cr_assert_eq(f2.chunk_lo, 10);
  cr_assert_eq(f2.chunk_hi, 14);
  for (k = 0; k < 4; k++)
    cr_assert_eq(f2.versions[k], vers[k]);
  orion_msg_fetch_free(&f2);
  check_bounds(ORION_WIRE_FETCH, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_fetch_reply_encode(&b, &r), 0);
  p = payload_of(&b, ORION_WIRE_FETCH_REPLY, &n);
  cr_assert_eq(orion_msg_fetch_reply_decode(p, n, &r2, NULL), 0);
  cr_assert_eq(r2.array, -8);
  cr_assert_eq(r2.nchunks, 2);
  cr_assert_eq(r2.applied, 77);
  for (k = 0; k < 2; k++) {
    cr_assert_eq(r2.chunks[k].chunk, chunks[k].chunk);
    cr_assert_eq(r2.chunks[k].version, chunks[k].version);
    cr_assert_eq(r2.chunks[k].row, chunks[k].row);
    eq_bytes(r2.chunks[k].data, r2.chunks[k].len, chunks[k].data, chunks[k].len,
             "chunk rows");
    inside(r2.chunks[k].data, r2.chunks[k].len, p, n);
  }
  orion_msg_fetch_reply_free(&r2);
  check_bounds(ORION_WIRE_FETCH_REPLY, &b);
  orion_buf_free(&b);
}

Test(msg, peers_shard_data_forget_round_trip) {
  static const orion_msg_str addrs[3] = {
      {"10.0.0.1:4000", 13}, {NULL, 0}, {"[::1]:9", 7}};
  static const int64_t ids[3] = {-1, 0, INT64_MAX};
  orion_msg_peers pe = {addrs, 3}, pe2;
  static const orion_msg_range kept[2] = {{7, 0, 512}, {7, 4096, 1}};
  orion_msg_shard_data sd = {runs3, 3, kept, 2}, sd2;
  orion_msg_forget fg = {ids, 3}, fg2;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_peers_encode(&b, &pe), 0);
  p = payload_of(&b, ORION_WIRE_PEERS, &n);
  cr_assert_eq(n, 8 + 3 * 8 + 13 + 7);
  cr_assert_eq(orion_msg_peers_decode(p, n, &pe2, NULL), 0);
  cr_assert_eq(pe2.n, 3);
  for (k = 0; k < 3; k++)
    eq_bytes(pe2.addrs[k].p, pe2.addrs[k].len, addrs[k].p, addrs[k].len,
             "address");
  orion_msg_peers_free(&pe2);
  check_bounds(ORION_WIRE_PEERS, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_shard_data_encode(&b, &sd), 0);
  p = payload_of(&b, ORION_WIRE_SHARD_DATA, &n);
  cr_assert_eq(orion_msg_shard_data_decode(p, n, &sd2, NULL), 0);
  eq_runs(sd2.runs, sd2.nruns, runs3, 3, p, n);
  cr_assert_eq(sd2.nkept, 2);
  for (k = 0; k < 2; k++)
    cr_assert(sd2.kept[k].array == kept[k].array &&
                  sd2.kept[k].first == kept[k].first &&
                  sd2.kept[k].count == kept[k].count,
              "kept range %d", k);
  orion_msg_shard_data_free(&sd2);
  check_bounds(ORION_WIRE_SHARD_DATA, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_forget_encode(&b, &fg), 0);
  p = payload_of(&b, ORION_WIRE_FORGET, &n);
  cr_assert_eq(n, 8 + 3 * 8);
  cr_assert_eq(orion_msg_forget_decode(p, n, &fg2, NULL), 0);
  for (k = 0; k < 3; k++)
    cr_assert_eq(fg2.ids[k], ids[k]);
  orion_msg_forget_free(&fg2);
  check_bounds(ORION_WIRE_FORGET, &b);
  orion_buf_free(&b);
}

Test(msg, loop_done_round_trip) {
  orion_msg_acc_value accs[3] = {
      {-1, -1, 1, 1, INT64_MIN, 0.0}, {-1, 2, 1, 0, 0, 0.0},
      {5, 3, 0, 0, 0, 0.0}};
  orion_msg_loop_done m = {.accs = accs,
                           .naccs = 3,
                           .peer_bytes = 123456789,
                           .shard_items = 42,
                           .compute_seconds = 2.5,
                           .wait_seconds = 0.0625,
                           .idle_seconds = 1e-9,
                           .gpu_blocks = 17,
                           .managed_bytes = 4096,
                           .managed_items = 256,
                           .managed_staleness = 37.5,
                           .reordered = 11,
                           .cpu_seconds = 0.75,
                           .exch_cpu_seconds = 0.125,
                           .net_cpu_seconds = 0.0625,
                           .body_cpu_seconds = 0.5,
                           .body_seconds = 4.25},
                      out;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  accs[1].d = bits_f64(NAN_PAYLOAD);
  accs[2].d = -INFINITY;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_loop_done_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOOP_DONE, &n);
  cr_assert_eq(orion_msg_loop_done_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.naccs, 3);
  for (k = 0; k < 3; k++) {
    cr_assert_eq(out.accs[k].block, accs[k].block);
    cr_assert_eq(out.accs[k].id, accs[k].id);
    cr_assert_eq(out.accs[k].has, accs[k].has);
    cr_assert_eq(out.accs[k].isint, accs[k].isint);
    cr_assert_eq(out.accs[k].i, accs[k].i);
    eq_f64(out.accs[k].d, accs[k].d, "accumulator");
  }
  cr_assert_eq(out.peer_bytes, 123456789);
  cr_assert_eq(out.shard_items, 42);
  eq_f64(out.compute_seconds, 2.5, "compute seconds");
  eq_f64(out.wait_seconds, 0.0625, "wait seconds");
  eq_f64(out.idle_seconds, 1e-9, "idle seconds");
  cr_assert_eq(out.gpu_blocks, 17);
  cr_assert_eq(out.managed_bytes, 4096);
  cr_assert_eq(out.managed_items, 256);
  eq_f64(out.managed_staleness, 37.5, "managed staleness");
  cr_assert_eq(out.reordered, 11);
  eq_f64(out.cpu_seconds, 0.75, "CPU seconds");
  eq_f64(out.exch_cpu_seconds, 0.125, "exchange CPU seconds");
  eq_f64(out.net_cpu_seconds, 0.0625, "loop thread CPU seconds");
  eq_f64(out.body_cpu_seconds, 0.5, "body CPU seconds");
  eq_f64(out.body_seconds, 4.25, "body seconds");
  orion_msg_loop_done_free(&out);
  check_bounds(ORION_WIRE_LOOP_DONE, &b);
  orion_buf_free(&b);
}

Test(msg, body_error_round_trip_and_layout) {
  static const char text[] = "executor 2, element (3, 17): boom\nstack "
                             "traceback:\n\t?\0after a NUL";
  orion_msg_body_error m = {2, -1, text, sizeof text - 1}, out;
  orion_buf b;
  const char *p;
  size_t n;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_body_error_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BODY_ERROR, &n);
  cr_assert_eq(n, 24 + sizeof text - 1);
  /* i64 executor, i64 block, u64 length, the text. */
  cr_assert_eq(p[0], 2);
  cr_assert(memcmp(p + 8, "\xff\xff\xff\xff\xff\xff\xff\xff", 8) == 0);
  cr_assert_eq((unsigned char)p[16], sizeof text - 1);
  cr_assert_eq(orion_msg_body_error_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.executor, 2);
  cr_assert_eq(out.block, -1);
  eq_bytes(out.msg, out.msg_len, text, sizeof text - 1, "message");
  check_bounds(ORION_WIRE_BODY_ERROR, &b);
  b.len = 0;
  m.block = INT64_MAX;
  m.executor = -4;
  cr_assert_eq(orion_msg_body_error_encode(&b, &m), 0);
  check_bounds(ORION_WIRE_BODY_ERROR, &b);
  orion_buf_free(&b);
}

Test(msg, load_file_round_trip) {
  orion_msg_load_file m, out;
  orion_buf b;
  const char *p;
  size_t n;
  int d;
  memset(&m, 0, sizeof m);
  m.path = "/data/ratings.csv.gz";
  m.path_len = strlen(m.path);
  m.part = 3;
  m.nparts = 4;
  orion_load_opts_init(&m.opts);
  m.opts.format = ORION_FMT_CSV;
  m.opts.index_base = 0;
  m.opts.have_dims = 1;
  for (d = 0; d < ORION_MAX_DIMS; d++) {
    m.opts.dims[d] = (int64_t)1 << (40 + d);
    m.opts.key_cols[d] = -d;
  }
  m.opts.value_type = ORION_I32;
  m.opts.sep = (char)-3;
  m.opts.header = 1;
  m.opts.value_col = INT32_MIN;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_load_file_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_FILE, &n);
  cr_assert_eq(n, 8 + m.path_len + 16 + (4 + 8 + 5 + 8 + 1) * 8 + 8 + 8);
  cr_assert_eq(orion_msg_load_file_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.digest_len, 0);
  cr_assert_eq(out.held_only, 0);
  eq_bytes(out.path, out.path_len, m.path, m.path_len, "path");
  cr_assert_eq(out.part, 3);
  cr_assert_eq(out.nparts, 4);
  cr_assert_eq(out.opts.format, ORION_FMT_CSV);
  cr_assert_eq(out.opts.index_base, 0);
  cr_assert_eq(out.opts.nkeys, m.opts.nkeys);
  cr_assert_eq(out.opts.have_dims, 1);
  cr_assert(memcmp(out.opts.dims, m.opts.dims, sizeof m.opts.dims) == 0);
  cr_assert_eq(out.opts.value_type, ORION_I32);
  cr_assert_eq(out.opts.skip_errors, m.opts.skip_errors);
  cr_assert_eq(out.opts.sep, (char)-3);
  cr_assert_eq(out.opts.header, 1);
  cr_assert_eq(out.opts.ncols_key, 2);
  cr_assert(
      memcmp(out.opts.key_cols, m.opts.key_cols, sizeof m.opts.key_cols) == 0);
  cr_assert_eq(out.opts.value_col, INT32_MIN);
  cr_assert_eq(out.opts.expand, 0);
  check_bounds(ORION_WIRE_LOAD_FILE, &b);
  /* An --elastic driver's: the digest and held_only come back; a digest
   * of another length is refused both ways. */
  {
    static const char dig[ORION_MSG_LOAD_DIGEST] = "0123456789abcdef0123456789abcde";
    b.len = 0;
    m.digest = dig;
    m.digest_len = sizeof dig;
    m.held_only = 1;
    cr_assert_eq(orion_msg_load_file_encode(&b, &m), 0);
    p = payload_of(&b, ORION_WIRE_LOAD_FILE, &n);
    cr_assert_eq(orion_msg_load_file_decode(p, n, &out, NULL), 0);
    eq_bytes(out.digest, out.digest_len, dig, sizeof dig, "digest");
    cr_assert_eq(out.held_only, 1);
    check_bounds(ORION_WIRE_LOAD_FILE, &b);
    b.len = 0;
    m.digest_len = 31;
    cr_assert_neq(orion_msg_load_file_encode(&b, &m), 0);
  }
  orion_buf_free(&b);
}

Test(msg, loaded_round_trip) {
  static const double lab[2] = {1.0, -1.0};
  orion_msg_loaded m, out;
  orion_buf b;
  const char *p;
  size_t n;
  memset(&m, 0, sizeof m);
  m.ok = 1;
  m.array.type = ORION_I32;
  m.array.ndims = 2;
  m.array.dims[0] = 2;
  m.array.dims[1] = 6;
  m.array.nnz = 3;
  m.array.keys = (const char *)keys2x3;
  m.array.keys_len = sizeof keys2x3;
  m.array.values = (const char *)ivals3;
  m.array.values_len = sizeof ivals3;
  m.has_labels = 1;
  m.labels.type = ORION_F64;
  m.labels.ndims = 1;
  m.labels.dims[0] = 2;
  m.labels.nnz = 2;
  m.labels.values = (const char *)lab;
  m.labels.values_len = sizeof lab;
  m.row_lo = 1000;
  m.lines = 2002;
  m.skipped = -1;
  m.first_skip = "line 7: bad";
  m.first_skip_len = 11;
  m.part = 3;
  m.digest = "0123456789abcdef0123456789abcdef";
  m.digest_len = ORION_MSG_LOAD_DIGEST;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_loaded_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOADED, &n);
  cr_assert_eq(orion_msg_loaded_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.ok, 1);
  cr_assert_eq(out.array.type, ORION_I32);
  cr_assert_eq(out.array.ndims, 2);
  cr_assert_eq(out.array.dims[1], 6);
  cr_assert_eq(out.array.nnz, 3);
  eq_bytes(out.array.keys, out.array.keys_len, m.array.keys, m.array.keys_len,
           "keys");
  eq_bytes(out.array.values, out.array.values_len, m.array.values,
           m.array.values_len, "values");
  cr_assert_eq(out.has_labels, 1);
  cr_assert_eq(out.labels.keys_len, 0);
  eq_bytes(out.labels.values, out.labels.values_len, m.labels.values,
           m.labels.values_len, "labels");
  cr_assert_eq(out.row_lo, 1000);
  cr_assert_eq(out.lines, 2002);
  cr_assert_eq(out.skipped, -1);
  eq_bytes(out.first_skip, out.first_skip_len, "line 7: bad", 11, "skip");
  cr_assert_eq(out.part, 3);
  eq_bytes(out.digest, out.digest_len, m.digest, ORION_MSG_LOAD_DIGEST,
           "digest");
  check_bounds(ORION_WIRE_LOADED, &b);
  /* The error form: the flag and the message only. */
  b.len = 0;
  memset(&m, 0, sizeof m);
  m.msg = "cannot open x";
  m.msg_len = 13;
  m.part = 5;
  cr_assert_eq(orion_msg_loaded_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOADED, &n);
  cr_assert_eq(n, 16 + 13 + 24);
  cr_assert_eq(orion_msg_loaded_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.ok, 0);
  cr_assert_eq(out.part, 5);
  cr_assert_eq(out.not_held, 0);
  eq_bytes(out.msg, out.msg_len, "cannot open x", 13, "message");
  check_bounds(ORION_WIRE_LOADED, &b);
  /* "Not held" (an answer to held_only): never with elements. */
  b.len = 0;
  m.msg_len = 0;
  m.not_held = 1;
  cr_assert_eq(orion_msg_loaded_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOADED, &n);
  cr_assert_eq(orion_msg_loaded_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.not_held, 1);
  b.len = 0;
  m.ok = 1;
  cr_assert_neq(orion_msg_loaded_encode(&b, &m), 0);
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * The same bytes as the hand-written encoders of wire version 2.
 * ---------------------------------------------------------------------- */

static void same_payload(const orion_buf *frame, int type,
                         const orion_buf *hand) {
  size_t n;
  const char *p = payload_of(frame, type, &n);
  eq_bytes(p, n, hand->data, hand->len, orion_wire_type_name(type));
}

/* orion_pw_bytes, never passing NULL on to memcpy (undefined even for 0
 * bytes; the runtime's callers pass NULL with 0 today). */
static void hand_bytes(orion_buf *h, const void *p, size_t n) {
  orion_pw_bytes(h, p != NULL ? p : "", n);
}

/* A list of moves as the codec writes it: the count, then five i64s each. */
static void hand_moves(orion_buf *h, const orion_msg_move *v, int64_t n) {
  int64_t k;
  orion_buf_u64(h, (uint64_t)n);
  for (k = 0; k < n; k++) {
    orion_pw_i64(h, v[k].array);
    orion_pw_i64(h, v[k].first);
    orion_pw_i64(h, v[k].count);
    orion_pw_i64(h, v[k].peer);
    orion_pw_i64(h, v[k].block);
  }
}

static void hand_runs(orion_buf *h, const orion_msg_run *r, int64_t n) {
  int64_t k;
  orion_buf_u64(h, (uint64_t)n);
  for (k = 0; k < n; k++) {
    orion_pw_i64(h, r[k].array);
    orion_pw_i64(h, r[k].first);
    orion_pw_i64(h, r[k].count);
    hand_bytes(h, r[k].data, r[k].len);
  }
}

Test(msg, layouts_match_the_hand_written_encoders) {
  orion_msg_load_body lb;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_msg_run_block rb;
  orion_buf b, h;
  int64_t k;
  int d;
  orion_buf_init(&b);
  orion_buf_init(&h);
  /* LOAD_BODY, as scheduler/dist.c's load_body_frame writes it. */
  sample_load_body(&lb, sh, sl);
  cr_assert_eq(orion_msg_load_body_encode(&b, &lb), 0);
  orion_pw_i64(&h, lb.loop);
  hand_bytes(&h, lb.blob, lb.blob_len);
  orion_pw_i64(&h, lb.iter);
  orion_buf_u64(&h, (uint64_t)lb.narrays);
  for (k = 0; k < lb.narrays; k++) {
    orion_pw_i64(&h, lb.arrays[k].id);
    orion_buf_u64(&h, (uint64_t)lb.arrays[k].type);
    /* the kind: 0 dense, 1 sparse, 2 ragged */
    orion_buf_u64(&h, (uint64_t)(lb.arrays[k].sparse + lb.arrays[k].ragged));
    orion_buf_u64(&h, (uint64_t)lb.arrays[k].ndims);
    for (d = 0; d < lb.arrays[k].ndims; d++)
      orion_pw_i64(&h, lb.arrays[k].dims[d]);
  }
  orion_buf_u64(&h, (uint64_t)lb.naccs);
  for (k = 0; k < lb.naccs; k++) {
    orion_pw_i64(&h, lb.accs[k].id);
    orion_buf_u64(&h, (uint64_t)lb.accs[k].op);
  }
  orion_buf_u64(&h, (uint64_t)lb.nbufs);
  for (k = 0; k < lb.nbufs; k++) {
    orion_pw_i64(&h, lb.bufs[k].id);
    hand_bytes(&h, lb.bufs[k].name, lb.bufs[k].name_len);
    orion_pw_i64(&h, lb.bufs[k].target);
    orion_buf_u64(&h, (uint64_t)lb.bufs[k].op);
    hand_bytes(&h, lb.bufs[k].apply, lb.bufs[k].apply_len);
    orion_pw_i64(&h, lb.bufs[k].flush);
  }
  orion_pw_i64(&h, lb.run);
  orion_buf_u64(&h, lb.chash);
  hand_bytes(&h, lb.csrc, lb.csrc_len);
  hand_bytes(&h, lb.cflags, lb.cflags_len);
  orion_buf_u64(&h, (uint64_t)lb.required);
  orion_buf_u64(&h, (uint64_t)lb.nslots);
  for (k = 0; k < lb.nslots; k++) {
    orion_buf_u64(&h, (uint64_t)sl[k].kind);
    orion_pw_i64(&h, sl[k].id);
    orion_buf_u64(&h, (uint64_t)sl[k].isint);
    orion_pw_i64(&h, sl[k].ival);
    orion_pw_f64(&h, sl[k].fval);
  }
  orion_buf_u64(&h, (uint64_t)lb.nshards);
  for (k = 0; k < lb.nshards; k++) {
    orion_pw_i64(&h, sh[k].array);
    orion_buf_u64(&h, (uint64_t)sh[k].flags);
    hand_runs(&h, sh[k].runs, sh[k].nruns);
  }
  hand_moves(&h, lb.gets, lb.ngets);
  orion_buf_u64(&h, (uint64_t)lb.gpu); /* wire version 5 */
  orion_buf_u64(&h, (uint64_t)lb.gkind);
  orion_pw_i64(&h, lb.gspace);
  orion_pw_i64(&h, lb.gtime);
  orion_pw_i64(&h, lb.gskew_dim);
  orion_pw_i64(&h, lb.gskew);
  orion_pw_i64(&h, lb.gb);
  orion_pw_f64(&h, lb.bandwidth_mbps); /* wire version 6 */
  orion_pw_f64(&h, lb.timeout);        /* wire version 8 */
  orion_pw_i64(&h, lb.blob_chained);   /* wire version 13 */
  orion_buf_u64(&h, (uint64_t)lb.nguards); /* wire version 14 */
  for (k = 0; k < lb.nguards; k++) {
    orion_pw_i64(&h, lb.guards[k].array);
    hand_bytes(&h, lb.guards[k].placement, lb.guards[k].placement_len);
  }
  orion_pw_i64(&h, lb.verify); /* wire version 15 */
  hand_bytes(&h, NULL, 0); /* wire version 22: no body digest, */
  hand_bytes(&h, NULL, 0); /* no base, */
  orion_buf_u64(&h, 0);    /* prefix */
  orion_buf_u64(&h, 0);    /* and suffix */
  same_payload(&b, ORION_WIRE_LOAD_BODY, &h);
  /* RUN_BLOCK, as scheduler/dist.c's send_block writes it. */
  b.len = h.len = 0;
  sample_run_block(&rb);
  cr_assert_eq(orion_msg_run_block_encode(&b, &rb), 0);
  orion_pw_i64(&h, rb.block);
  orion_buf_u64(&h, rb.seed);
  orion_pw_i64(&h, rb.nblocks);
  orion_buf_u64(&h, (uint64_t)rb.nsegs);
  for (k = 0; k < rb.nsegs; k++) {
    orion_pw_i64(&h, rb.segs[k].lo);
    orion_pw_i64(&h, rb.segs[k].hi);
  }
  orion_buf_u64(&h, 1);
  orion_pw_i64(&h, rb.nelems);
  hand_bytes(&h, rb.keys, rb.keys_len);
  hand_bytes(&h, rb.values, rb.values_len);
  hand_runs(&h, rb.runs, rb.nruns);
  orion_buf_u64(&h, (uint64_t)rb.nwatch);
  for (k = 0; k < rb.nwatch; k++) {
    orion_pw_i64(&h, rb.watch[k].array);
    orion_pw_i64(&h, rb.watch[k].first);
    orion_pw_i64(&h, rb.watch[k].count);
  }
  hand_moves(&h, rb.gets, rb.ngets);
  hand_moves(&h, rb.puts, rb.nputs);
  orion_pw_i64(&h, rb.first);              /* wire version 19 */
  orion_buf_u64(&h, (uint64_t)rb.keep);
  orion_pw_i64(&h, rb.space); /* wire version 21 */
  orion_pw_i64(&h, rb.time);
  orion_buf_u64(&h, (uint64_t)rb.late); /* wire version 24 */
  same_payload(&b, ORION_WIRE_RUN_BLOCK, &h);
  orion_buf_free(&b);
  orion_buf_free(&h);
}

/* The item coding of wire version 2 (executor/exec.c's orion_flush_items_put,
 * gone since the executor ships items with the codec), for keys >= 0. */
static void hand_items(orion_buf *h, const orion_msg_item *it, int64_t n) {
  int64_t i, j, nruns = 0;
  for (i = 0; i < n; i++)
    if (i == 0 || it[i].key != it[i - 1].key + 1)
      nruns++;
  orion_buf_u64(h, (uint64_t)n);
  if (nruns * 2 >= n) {
    orion_buf_u64(h, 0);
    for (i = 0; i < n; i++) {
      orion_pw_i64(h, it[i].key);
      orion_buf_u64(h, (uint64_t)it[i].val.i);
    }
    return;
  }
  orion_buf_u64(h, (uint64_t)nruns);
  for (i = 0; i < n; i = j) {
    for (j = i + 1; j < n && it[j].key == it[j - 1].key + 1; j++)
      ;
    orion_pw_i64(h, it[i].key);
    orion_buf_u64(h, (uint64_t)(j - i));
  }
  for (i = 0; i < n; i++)
    orion_buf_u64(h, (uint64_t)it[i].val.i);
}

Test(msg, items_match_the_hand_written_item_coding) {
  static orion_msg_item it[1000];
  int form, n;
  for (form = 0; form < 3; form++)
    for (n = 0; n <= 1000; n += n < 10 ? 1 : 197) {
      orion_msg_buffer_flush m = {4, 5, 1, it, n, 6};
      orion_buf b, h;
      sample_items(it, n, form != 0);
      if (form == 2 && n > 3) /* ranges broken up here and there */
        it[n / 3].key += 5;
      orion_buf_init(&b);
      orion_buf_init(&h);
      cr_assert_eq(orion_msg_buffer_flush_encode(&b, &m), 0);
      orion_pw_i64(&h, 4);
      orion_pw_i64(&h, 5);
      orion_buf_u64(&h, 1);
      orion_pw_i64(&h, 6); /* the block */
      hand_items(&h, it, n);
      same_payload(&b, ORION_WIRE_BUFFER_FLUSH, &h);
      orion_buf_free(&b);
      orion_buf_free(&h);
    }
}

/* Wire version 4: the loop's seconds on the executor follow shard_items;
 * version 5: then the blocks run on the device; version 6: then the
 * managed buffers' early bytes, items and staleness sum. */
Test(msg, loop_done_layout) {
  orion_msg_loop_done m = {.peer_bytes = 7,
                           .shard_items = 9,
                           .compute_seconds = 0.5,
                           .wait_seconds = 0.25,
                           .idle_seconds = 2.0,
                           .gpu_blocks = 3,
                           .managed_bytes = 48,
                           .managed_items = 3,
                           .managed_staleness = 1.5,
                           .reordered = 4,
                           .cpu_seconds = 0.75,
                           .exch_cpu_seconds = 0.125,
                           .net_cpu_seconds = 0.0625,
                           .body_cpu_seconds = 0.5,
                           .body_seconds = 4.0};
  orion_buf b, h;
  orion_buf_init(&b);
  orion_buf_init(&h);
  cr_assert_eq(orion_msg_loop_done_encode(&b, &m), 0);
  orion_buf_u64(&h, 0); /* no accumulators */
  orion_buf_u64(&h, 7);
  orion_buf_u64(&h, 9);
  orion_pw_f64(&h, 0.5);
  orion_pw_f64(&h, 0.25);
  orion_pw_f64(&h, 2.0);
  orion_buf_u64(&h, 3);
  orion_buf_u64(&h, 48);
  orion_buf_u64(&h, 3);
  orion_pw_f64(&h, 1.5);
  orion_buf_u64(&h, 4); /* wire version 19 */
  orion_pw_f64(&h, 0.75); /* wire version 24: the executor's CPU */
  orion_pw_f64(&h, 0.125);
  orion_pw_f64(&h, 0.0625);
  orion_pw_f64(&h, 0.5);
  orion_pw_f64(&h, 4.0);
  same_payload(&b, ORION_WIRE_LOOP_DONE, &h);
  orion_buf_free(&b);
  orion_buf_free(&h);
}

/* ------------------------------------------------------------------------
 * Refusals.
 * ---------------------------------------------------------------------- */

#define HUGE_COUNT ((uint64_t)1 << 61)

Test(msg, counts_beyond_the_payload_are_refused_before_allocating) {
  /* RUN_BLOCK: block, seed, nblocks, then 2^61 segments. */
  uint64_t rb[5] = {1, 2, 3, HUGE_COUNT, 0};
  /* LOAD_BODY: loop, empty blob, iter, then 2^61 arrays. */
  uint64_t lb[5] = {1, 0, 3, HUGE_COUNT, 0};
  /* BLOCK_DONE: block, seconds, wait seconds, no values, then 2^61
   * runs. */
  uint64_t bd[6] = {1, 0, 0, 0, HUGE_COUNT, 0};
  /* One more run than the bytes left hold (32 bytes each). */
  uint64_t bd1[9] = {1, 0, 0, 0, 2, 9, 0, 1, 0};
  uint64_t sd[2] = {HUGE_COUNT, 0};
  uint64_t pe[2] = {2, 0};
  uint64_t fg[3] = {3, 1, 2};
  uint64_t fr[2] = {7, HUGE_COUNT};
  uint64_t ld[2] = {HUGE_COUNT, 0};
  /* FETCH: chunks 0..2^61 with one version. */
  uint64_t fe[5] = {1, 2, 0, HUGE_COUNT, 0};
  /* BUFFER_FLUSH: 2^61 items, plain or in one run. */
  uint64_t bf[7] = {1, 2, 0, 0, HUGE_COUNT, 0, 0};
  uint64_t bf1[8] = {1, 2, 0, 0, HUGE_COUNT, 1, 0, 5};
  /* A string longer than the payload. */
  uint64_t be[3] = {1, 2, HUGE_COUNT};
  cr_assert_eq(decode_words(ORION_WIRE_RUN_BLOCK, rb, 5), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_LOAD_BODY, lb, 5), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_BLOCK_DONE, bd, 6), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_BLOCK_DONE, bd1, 9), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_SHARD_DATA, sd, 2), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_PEERS, pe, 2), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_FORGET, fg, 3), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_FETCH_REPLY, fr, 2), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_LOOP_DONE, ld, 2), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_FETCH, fe, 5), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_BUFFER_FLUSH, bf, 7), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_BUFFER_FLUSH, bf1, 8), ORION_ETRUNC);
  cr_assert_eq(decode_words(ORION_WIRE_BODY_ERROR, be, 3), ORION_ETRUNC);
}

Test(msg, malformed_fields_are_refused) {
  /* Flags other than 0 and 1. */
  uint64_t le[1] = {2};
  uint64_t rb[8] = {1, 2, 3, 0, 7, 0, 0, 0};
  /* LOAD_BODY arrays: type 4, then ndims 0 and 9. */
  uint64_t ty[10] = {0, 0, 0, 1, 5, 4, 0, 1, 10};
  uint64_t nd0[10] = {0, 0, 0, 1, 5, 1, 0, 0, 10};
  uint64_t nd9[10] = {0, 0, 0, 1, 5, 1, 0, 9, 10};
  /* RUN_BLOCK ranges with a negative first, elements more than keys. */
  uint64_t neg[12] = {1, 2, 3, 0, 0, 0, 1, 5, (uint64_t)-1, 2, 0};
  uint64_t el[9] = {1, 2, 3, 0, 1, 2, 8, 0, 0};
  /* FETCH with reversed chunks. */
  uint64_t fe[4] = {1, 2, 9, 8};
  /* LOADED with 3 elements but 2 values (f64), with element type 9. */
  uint64_t lo[9] = {1, 1, 1, 3, 3, 0, 16, 0, 0};
  uint64_t lt[9] = {1, 9, 1, 3, 3, 0, 24, 0, 0};
  /* LOAD_FILE with an index base beyond int. */
  uint64_t lf[29] = {0, 0, 1, 0, (uint64_t)1 << 40};
  cr_assert_eq(decode_words(ORION_WIRE_LOOP_END, le, 1), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_RUN_BLOCK, rb, 8), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_LOAD_BODY, ty, 10), ORION_ETYPE);
  cr_assert_eq(decode_words(ORION_WIRE_LOAD_BODY, nd0, 10), ORION_EDIMS);
  cr_assert_eq(decode_words(ORION_WIRE_LOAD_BODY, nd9, 10), ORION_EDIMS);
  cr_assert_eq(decode_words(ORION_WIRE_RUN_BLOCK, neg, 11), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_RUN_BLOCK, el, 9), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_FETCH, fe, 4), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_LOADED, lo, 9), ORION_EPARSE);
  cr_assert_eq(decode_words(ORION_WIRE_LOADED, lt, 9), ORION_ETYPE);
  cr_assert_eq(decode_words(ORION_WIRE_LOAD_FILE, lf, 29), ORION_EPARSE);
}

/* t/test_buffer's malformed item lists, behind run, buffer and isint. */
Test(msg, buffer_flush_refuses_malformed_item_lists) {
  static const uint64_t lists[8][9] = {
      {3, 1, 10, 2, 1, 2, 3},         /* runs' counts sum to 2 */
      {3, 2, 10, 2, 20, 2, 1, 2, 3},  /* ... to 4 */
      {2, 1, (uint64_t)-5, 2, 1, 2},  /* a negative first key */
      {2, 2, 10, 0, 11, 2, 1, 2},     /* a zero count */
      {3, 1, 10, 3, 1, 2},            /* a value missing */
      {1, 2, 10, 1, 20, 1, 5},        /* more runs than items */
      {2, 0, 10, 1, 11},              /* a plain list cut short */
      {(uint64_t)1 << 60, 0, 10, 1}}; /* a huge n */
  static const size_t len[8] = {7, 9, 6, 8, 6, 7, 5, 4};
  int i;
  for (i = 0; i < 8; i++) {
    uint64_t w[13] = {1, 2, 0, 0}; /* run, buffer, isint, block */
    memcpy(w + 4, lists[i], len[i] * 8);
    cr_assert_lt(decode_words(ORION_WIRE_BUFFER_FLUSH, w, 4 + len[i]), 0,
                 "list %d decodes", i);
  }
}

Test(msg, items_outside_runs_travel_plain) {
  /* Negative keys and INT64_MAX cannot stand in a run: the plain form
   * carries them, and they come back. */
  orion_msg_item it[8];
  orion_msg_buffer_flush m = {1, 2, 1, it, 8, -1}, out;
  orion_buf b;
  const char *p;
  size_t n;
  int i;
  for (i = 0; i < 8; i++) {
    it[i].key = -4 + i;
    it[i].val.i = i;
  }
  it[7].key = INT64_MAX;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_buffer_flush_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BUFFER_FLUSH, &n);
  cr_assert_eq(n, 32 + 16 + 8 * 12); /* values 0..7: 4 bytes each */
  cr_assert_eq(orion_msg_buffer_flush_decode(p, n, &out, NULL), 0);
  for (i = 0; i < 8; i++) {
    cr_assert_eq(out.items[i].key, it[i].key);
    cr_assert_eq(out.items[i].val.i, it[i].val.i);
  }
  orion_msg_buffer_flush_free(&out);
  check_bounds(ORION_WIRE_BUFFER_FLUSH, &b);
  orion_buf_free(&b);
}

Test(msg, encoders_refuse_out_of_range_fields_appending_nothing) {
  orion_msg_load_body lb;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_msg_array_desc bad_array = {1, ORION_F64, 0, 0, {0}, 0};
  orion_msg_run_block rb;
  orion_msg_fetch fe = {1, 2, 5, 4, NULL};
  orion_msg_forget fg = {NULL, 2};
  orion_msg_shard_data sd = {runs3, -1, NULL, 0};
  orion_msg_run neg = {1, -1, 1, "x", 1, 0};
  orion_msg_loaded ld;
  orion_buf b;
  orion_buf_init(&b);
  orion_buf_u8(&b, 0xaa); /* earlier frames stay */
  sample_load_body(&lb, sh, sl);
  lb.arrays = &bad_array;
  lb.narrays = 1;
  cr_assert_eq(orion_msg_load_body_encode(&b, &lb), ORION_EINVAL);
  sample_load_body(&lb, sh, sl);
  sl[2].kind = (orion_cslot_kind)9;
  cr_assert_eq(orion_msg_load_body_encode(&b, &lb), ORION_EINVAL);
  sample_load_body(&lb, sh, sl);
  sh[1].flags = 16; /* no such flag */
  cr_assert_eq(orion_msg_load_body_encode(&b, &lb), ORION_EINVAL);
  sample_run_block(&rb);
  rb.nelems = 4; /* 48 bytes of keys hold at most 6, so 4 is fine... */
  cr_assert_eq(orion_msg_run_block_encode(&b, &rb), 0);
  b.len = 1;
  rb.nelems = 7; /* ...7 is not */
  cr_assert_eq(orion_msg_run_block_encode(&b, &rb), ORION_EINVAL);
  sample_run_block(&rb);
  rb.runs = &neg;
  rb.nruns = 1;
  cr_assert_eq(orion_msg_run_block_encode(&b, &rb), ORION_EINVAL);
  cr_assert_eq(orion_msg_fetch_encode(&b, &fe), ORION_EINVAL);
  cr_assert_eq(orion_msg_forget_encode(&b, &fg), ORION_EINVAL);
  cr_assert_eq(orion_msg_shard_data_encode(&b, &sd), ORION_EINVAL);
  memset(&ld, 0, sizeof ld);
  ld.ok = 1;
  ld.array.type = ORION_F64;
  ld.array.ndims = 1;
  ld.array.nnz = 2;
  ld.array.values = (const char *)vals5;
  ld.array.values_len = 24; /* 3 values for 2 elements */
  cr_assert_eq(orion_msg_loaded_encode(&b, &ld), ORION_EINVAL);
  cr_assert_eq(b.len, 1);
  cr_assert_eq((unsigned char)b.data[0], 0xaa);
  cr_assert_eq(orion_msg_encode(&b, ORION_WIRE_HELLO, NULL), ORION_EINVAL);
  cr_assert_eq(b.len, 1);
  orion_buf_free(&b);
}

Test(msg, dispatch_by_type) {
  int t, n = 0;
  orion_error err;
  orion_msg m;
  for (t = 0; t < 256; t++)
    n += orion_msg_known(t);
  cr_assert_eq(n, 28); /* BLOCK_KEYS since wire version 15 */
  cr_assert(!orion_msg_known(ORION_WIRE_HELLO));
  cr_assert(!orion_msg_known(ORION_WIRE_ARRAY_DATA));
  cr_assert(orion_msg_known(ORION_WIRE_LOADED));
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_decode(ORION_WIRE_HEARTBEAT, "", 0, &m, &err),
               ORION_EINVAL);
  cr_assert(strstr(err.msg, "HEARTBEAT") != NULL);
  orion_msg_free(ORION_WIRE_HELLO, &m); /* nothing to do */
}

Test(msg, runvec_grows) {
  orion_msg_runvec v;
  orion_msg_shard_data sd, out;
  orion_buf b;
  const char *p;
  size_t n;
  int64_t k;
  memset(&v, 0, sizeof v);
  for (k = 0; k < 100; k++)
    cr_assert_eq(orion_msg_runvec_push(&v, k, 2 * k, 1, vals5, 8), 0);
  cr_assert_eq(v.n, 100);
  memset(&sd, 0, sizeof sd);
  sd.runs = v.v;
  sd.nruns = v.n;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_shard_data_encode(&b, &sd), 0);
  p = payload_of(&b, ORION_WIRE_SHARD_DATA, &n);
  cr_assert_eq(n, 8 + 100 * 40 + 8);
  cr_assert_eq(orion_msg_shard_data_decode(p, n, &out, NULL), 0);
  eq_runs(out.runs, out.nruns, v.v, v.n, p, n);
  orion_msg_shard_data_free(&out);
  orion_msg_runvec_free(&v);
  cr_assert_null(v.v);
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * BODY_ERROR's block is a typed i64 (wire version 2 sent it as text).
 * ---------------------------------------------------------------------- */

Test(msg, body_error_block_is_a_typed_i64_at_its_extremes) {
  static const int64_t blocks[4] = {17, -1, INT64_MIN, INT64_MAX};
  int i, k;
  for (i = 0; i < 4; i++) {
    orion_msg_body_error m = {3, blocks[i], "boom", 4}, out;
    orion_buf b;
    const char *p;
    size_t n;
    uint64_t u = 0;
    orion_buf_init(&b);
    cr_assert_eq(orion_msg_body_error_encode(&b, &m), 0);
    p = payload_of(&b, ORION_WIRE_BODY_ERROR, &n);
    /* i64 executor, then the block's 8 bytes, little-endian. */
    for (k = 7; k >= 0; k--)
      u = u << 8 | (unsigned char)p[8 + k];
    cr_assert_eq((int64_t)u, blocks[i], "block bytes");
    cr_assert_eq(orion_msg_body_error_decode(p, n, &out, NULL), 0);
    cr_assert_eq(out.block, blocks[i]);
    cr_assert_eq(out.executor, 3);
    eq_bytes(out.msg, out.msg_len, "boom", 4, "message");
    orion_buf_free(&b);
  }
}

/* ------------------------------------------------------------------------
 * Applying a decoded run to an array (both sides use it).
 * ---------------------------------------------------------------------- */

Test(msg, run_apply_copies_inside_and_refuses_the_rest) {
  int64_t dims[2] = {3, 2};
  double vals[2] = {1.5, -2.5};
  orion_error err;
  orion_array *a = orion_array_new_dense(2, dims, ORION_F64, &err);
  orion_array *s = orion_array_new_sparse(2, ORION_F64, &err);
  orion_msg_run ok = {7, 3, 2, (const char *)vals, sizeof vals, 0};
  orion_msg_run past = {7, 5, 2, (const char *)vals, sizeof vals, 0};
  orion_msg_run longer = {7, 0, 1, (const char *)vals, sizeof vals, 0};
  orion_msg_run partial = {7, 0, 2, (const char *)vals, 12, 0};
  orion_msg_run negative = {7, -1, 1, (const char *)vals, 8, 0};
  orion_msg_run empty = {7, 6, 0, NULL, 0, 0};
  orion_msg_run zeros = {7, 3, 2, NULL, 0, 0};
  orion_msg_run shortlen = {7, 0, 2, (const char *)vals, 8, 0};
  cr_assert_not_null(a);
  cr_assert_not_null(s);
  cr_assert_eq(orion_msg_run_apply(a, &ok), 0);
  cr_assert_eq(((double *)a->values)[3], 1.5);
  cr_assert_eq(((double *)a->values)[4], -2.5);
  cr_assert_eq(((double *)a->values)[2], 0.0);
  cr_assert_eq(((double *)a->values)[5], 0.0);
  cr_assert_eq(orion_msg_run_apply(a, &past), ORION_EPARSE);
  cr_assert_eq(orion_msg_run_apply(a, &longer), ORION_EPARSE,
               "more data than count elements");
  cr_assert_eq(orion_msg_run_apply(a, &partial), ORION_EPARSE,
               "data that is not a whole number of elements");
  cr_assert_eq(orion_msg_run_apply(a, &negative), ORION_EPARSE);
  cr_assert_eq(((double *)a->values)[0], 0.0, "a refused run wrote");
  cr_assert_eq(orion_msg_run_apply(a, &empty), 0);
  /* Data shorter than the count: the elements past it become zero. */
  cr_assert_eq(orion_msg_run_apply(a, &zeros), 0);
  cr_assert_eq(((double *)a->values)[3], 0.0);
  cr_assert_eq(((double *)a->values)[4], 0.0);
  ((double *)a->values)[1] = 9.0;
  cr_assert_eq(orion_msg_run_apply(a, &shortlen), 0);
  cr_assert_eq(((double *)a->values)[0], 1.5);
  cr_assert_eq(((double *)a->values)[1], 0.0, "the short run's tail is zero");
  cr_assert_eq(orion_msg_run_apply(s, &empty), ORION_EPARSE,
               "a run for a sparse array");
  orion_array_release(a);
  orion_array_release(s);
}

/* Sends src (n elements of type t) as one ROWS run whose sender set esz,
 * applies what arrives onto an array full of garbage, and checks that it
 * holds src exactly; returns the payload's size and the runs it held. */
static size_t zero_gaps_round_trip(const void *src, int64_t n, orion_type t,
                                   int64_t *nruns) {
  size_t esz = orion_type_size(t);
  int64_t dims[1] = {n + 3};
  orion_error err;
  orion_array *a = orion_array_new_dense(1, dims, t, &err);
  orion_msg_run r = {5, 3, n, (const char *)src, (size_t)n * esz, esz};
  orion_msg_rows m = {1, 2, &r, 1}, out;
  orion_buf b;
  const char *p;
  size_t len;
  int64_t k;
  cr_assert_not_null(a);
  memset(a->values, 0x5a, (size_t)(n + 3) * esz);
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_rows_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_ROWS, &len);
  cr_assert_eq(orion_msg_rows_decode(p, len, &out, NULL), 0);
  for (k = 0; k < out.nruns; k++) {
    cr_assert_eq(out.runs[k].array, 5);
    cr_assert_eq(orion_msg_run_apply(a, &out.runs[k]), 0, "run %lld",
                 (long long)k);
  }
  cr_assert_eq(memcmp((char *)a->values + 3 * esz, src, (size_t)n * esz), 0,
               "the receiver's elements differ from the sender's");
  cr_assert_eq(((unsigned char *)a->values)[0], 0x5a,
               "an element before the run changed");
  *nruns = out.nruns;
  orion_msg_rows_free(&out);
  check_bounds(ORION_WIRE_ROWS, &b);
  orion_buf_free(&b);
  orion_array_release(a);
  return len;
}

Test(msg, zero_stretches_stay_home_and_arrive_as_zeros) {
  /* LDA's word-topic rows at K = 1000: a few counts first, then zeros. */
  int32_t row[4 * 1000];
  double d[300];
  int64_t nruns;
  size_t len;
  memset(row, 0, sizeof row);
  row[0] = 7, row[1] = 3;            /* row 1: 2 entries */
  row[1000] = 1;                     /* row 2: 1 entry */
  row[2999] = -4;                    /* row 3: its last element only */
  len = zero_gaps_round_trip(row, 4000, ORION_I32, &nruns);
  cr_assert_lt(len, 400, "%zu bytes for 4 rows of 3 counts", len);
  cr_assert_eq(nruns, 3);
  /* f64: -0.0 is not zero bytes, so it travels. */
  memset(d, 0, sizeof d);
  d[0] = 1.0, d[150] = -0.0, d[299] = 2.0;
  len = zero_gaps_round_trip(d, 300, ORION_F64, &nruns);
  cr_assert_lt(len, 600, "%zu bytes", len);
  cr_assert_eq(nruns, 3);
  /* Dense data is one run, as before. */
  for (int i = 0; i < 300; i++)
    d[i] = i + 1;
  len = zero_gaps_round_trip(d, 300, ORION_F64, &nruns);
  cr_assert_eq(nruns, 1);
  cr_assert_eq(len, 8 + 8 + 8 + 32 + 300 * 8);
}

Test(msg, zero_stretches_any_pattern_round_trips) {
  /* Random patterns of zero and non-zero stretches, odd sizes included. */
  uint64_t s = 12345;
  int trial;
  for (trial = 0; trial < 300; trial++) {
    int64_t n, i, nruns;
    int32_t *v;
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    n = 1 + (int64_t)((s >> 33) % 700);
    v = orion_calloc((size_t)n, sizeof *v);
    cr_assert_not_null(v);
    i = 0;
    while (i < n) {
      int64_t run;
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      run = 1 + (int64_t)((s >> 33) % 60);
      if ((s >> 20) & 1)
        for (int64_t j = i; j < i + run && j < n; j++)
          v[j] = (int32_t)(j % 5 == 0 ? 0 : j);
      i += run;
    }
    zero_gaps_round_trip(v, n, ORION_I32, &nruns);
    cr_assert_geq(nruns, 1);
    orion_free(v);
  }
}

/* ------------------------------------------------------------------------
 * Resident rows: SEND_ROWS, MOVE_ROWS, ROWS, ROWS_PULL, ROWS_DATA.
 * ---------------------------------------------------------------------- */

Test(msg, resident_rows_round_trip) {
  static const orion_msg_move mv[2] = {{3, 128, 64, 2, 5}, {4, 0, 8, 0, 11}};
  static const orion_msg_range rg[1] = {{3, 0, 256}};
  orion_msg_send_rows sr = {9, mv, 2};
  orion_msg_rows rw = {9, 5, runs3, 1}, rwo;
  orion_msg_rows_pull rp = {rg, 1}, rpo;
  orion_buf b;
  const char *p;
  size_t n;
  orion_buf_init(&b);
  /* SEND_ROWS, and MOVE_ROWS: the same payload, another frame type. */
  for (int t = ORION_WIRE_SEND_ROWS; t != 0;
       t = t == ORION_WIRE_SEND_ROWS ? ORION_WIRE_MOVE_ROWS : 0) {
    orion_msg m, out;
    m.send_rows = sr;
    cr_assert_eq(orion_msg_encode(&b, t, &m), 0);
    p = payload_of(&b, t, &n);
    cr_assert_eq(n, 8 + 8 + 2 * 40);
    cr_assert_eq(orion_msg_decode(t, p, n, &out, NULL), 0);
    cr_assert_eq(out.send_rows.run, 9);
    eq_moves(out.send_rows.moves, out.send_rows.n, mv, 2);
    orion_msg_free(t, &out);
    check_bounds(t, &b);
    b.len = 0;
  }
  cr_assert_eq(orion_msg_rows_encode(&b, &rw), 0);
  p = payload_of(&b, ORION_WIRE_ROWS, &n);
  cr_assert_eq(orion_msg_rows_decode(p, n, &rwo, NULL), 0);
  cr_assert_eq(rwo.run, 9);
  cr_assert_eq(rwo.block, 5);
  eq_runs(rwo.runs, rwo.nruns, runs3, 1, p, n);
  orion_msg_rows_free(&rwo);
  check_bounds(ORION_WIRE_ROWS, &b);
  {
    /* For a peer link: the same bytes, but for the trailer, left 0. */
    orion_buf s;
    orion_buf_init(&s);
    cr_assert_eq(orion_msg_rows_encode_sealed(&s, &rw), 0);
    cr_assert_eq(s.len, b.len);
    cr_assert(memcmp(s.data, b.data, b.len - ORION_WIRE_TRAILER_LEN) == 0);
    cr_assert(memcmp(s.data + s.len - ORION_WIRE_TRAILER_LEN, "\0\0\0\0",
                     ORION_WIRE_TRAILER_LEN) == 0);
    orion_buf_free(&s);
  }
  b.len = 0;
  cr_assert_eq(orion_msg_rows_data_encode(&b, &rw), 0);
  p = payload_of(&b, ORION_WIRE_ROWS_DATA, &n);
  cr_assert_eq(orion_msg_rows_data_decode(p, n, &rwo, NULL), 0);
  eq_runs(rwo.runs, rwo.nruns, runs3, 1, p, n);
  orion_msg_rows_data_free(&rwo);
  b.len = 0;
  cr_assert_eq(orion_msg_rows_pull_encode(&b, &rp), 0);
  p = payload_of(&b, ORION_WIRE_ROWS_PULL, &n);
  cr_assert_eq(orion_msg_rows_pull_decode(p, n, &rpo, NULL), 0);
  eq_ranges(rpo.ranges, rpo.n, rg, 1);
  orion_msg_rows_pull_free(&rpo);
  check_bounds(ORION_WIRE_ROWS_PULL, &b);
  orion_buf_free(&b);
}

/* LOAD_BODY's verify mode (wire version 15, the last field) round-trips;
 * one outside 0..ORION_MSG_VERIFY_ORDER is refused both ways. */
Test(msg, load_body_verify_mode) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  int64_t bad = 3;
  sample_load_body(&m, sh, sl);
  m.verify = ORION_MSG_VERIFY_ORDER;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.verify, ORION_MSG_VERIFY_ORDER);
  orion_msg_load_body_free(&out);
  memcpy((char *)p + n - LB_TAIL - 8, &bad, 8);
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
  cr_assert(strstr(err.msg, "verify") != NULL, "%s", err.msg);
  m.verify = 3;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  orion_buf_free(&b);
}

/* The body reference (wire version 22): a digest, a base and the shared
 * prefix and suffix round-trip; a base without a digest, a base with a
 * chained body, or a prefix without a base is refused both ways, and a
 * digest of another length than ORION_BODY_DIGEST is named. */
Test(msg, load_body_reference) {
  orion_msg_load_body m, out;
  orion_msg_shard sh[2];
  orion_cslot sl[4];
  unsigned char dg[ORION_BODY_DIGEST], base[ORION_BODY_DIGEST];
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  int64_t seven = 7;
  sample_load_body(&m, sh, sl);
  orion_body_digest("body one", 8, dg);
  orion_body_digest("body two", 8, base);
  cr_assert_neq(memcmp(dg, base, sizeof dg), 0);
  m.bdigest = dg;
  m.bbase = base;
  m.bprefix = 1000;
  m.bsuffix = 24;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert(out.bdigest != NULL && out.bbase != NULL);
  cr_assert_eq(memcmp(out.bdigest, dg, sizeof dg), 0);
  cr_assert_eq(memcmp(out.bbase, base, sizeof base), 0);
  cr_assert_eq(out.bprefix, 1000);
  cr_assert_eq(out.bsuffix, 24);
  eq_bytes(out.blob, out.blob_len, m.blob, m.blob_len, "the patch bytes");
  orion_msg_load_body_free(&out);
  /* The base digest's length word (after the body digest's 8 + 32 bytes)
   * made 7: named. */
  memcpy((char *)p + n - 16 - 32 - 8, &seven, 8);
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
  cr_assert(strstr(err.msg, "base body digest") != NULL, "%s", err.msg);
  /* A digest alone keeps an inline body: it round-trips, no base. */
  m.bbase = NULL;
  m.bprefix = m.bsuffix = 0;
  b.len = 0;
  cr_assert_eq(orion_msg_load_body_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_LOAD_BODY, &n);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, NULL), 0);
  cr_assert(out.bdigest != NULL && out.bbase == NULL);
  orion_msg_load_body_free(&out);
  /* A prefix without a base: refused by the encoder; made by hand (the
   * prefix is the second-last word), refused by the decoder. */
  m.bprefix = 5;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  memcpy((char *)p + n - 16, &seven, 8);
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_load_body_decode(p, n, &out, &err), ORION_EPARSE);
  cr_assert(strstr(err.msg, "without a base body") != NULL, "%s", err.msg);
  /* A base without a digest, or beside a chained body: refused. */
  m.bprefix = 0;
  m.bdigest = NULL;
  m.bbase = base;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  m.bdigest = dg;
  m.blob = NULL;
  m.blob_len = 0;
  m.blob_chained = 600000;
  b.len = 0;
  cr_assert_neq(orion_msg_load_body_encode(&b, &m), 0);
  orion_buf_free(&b);
}

/* BLOCK_KEYS (wire version 15): a block's key ranges and the sources
 * their lines refer to round-trip; an empty range, one without an
 * access, or a line whose source is not listed is refused both ways. */
Test(msg, block_keys_round_trip_and_bounds) {
  static const orion_msg_keysrc src[2] = {{"mf.lua", 6}, {"lib.lua", 7}};
  orion_msg_key_range rg[2] = {
      {4, 10, 13, ORION_KEY_READ | ORION_KEY_WRITE, 12, 0, 14, 1, -1, -1,
       -1, -1},
      {9, 0, 1, ORION_KEY_READ, 3, 1, 0, 0, 5, 7, -1, -1}};
  orion_msg_block_keys m = {17, src, 2, rg, 2}, out;
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_block_keys_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BLOCK_KEYS, &n);
  cr_assert_eq(n, 8 + 8 + (8 + 6) + (8 + 7) + 8 + 2 * 96);
  cr_assert_eq(orion_msg_block_keys_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.block, 17);
  cr_assert_eq(out.nsrcs, 2);
  eq_bytes(out.srcs[1].s, out.srcs[1].len, "lib.lua", 7, "source");
  cr_assert_eq(out.nranges, 2);
  cr_assert_eq(memcmp(out.ranges, rg, sizeof rg), 0);
  orion_msg_block_keys_free(&out);
  check_bounds(ORION_WIRE_BLOCK_KEYS, &b);
  /* The second range's flags (its fourth word) made 0. */
  {
    char *q = (char *)p + n - 96 + 3 * 8;
    q[0] = 0;
    orion_error_clear(&err);
    cr_assert_eq(orion_msg_block_keys_decode(p, n, &out, &err), ORION_EPARSE);
    cr_assert(strstr(err.msg, "range 1") != NULL, "%s", err.msg);
  }
  rg[0].hi = rg[0].lo;
  b.len = 0;
  cr_assert_eq(orion_msg_block_keys_encode(&b, &m), ORION_EINVAL);
  rg[0].hi = 13;
  rg[1].rsrc = 2;
  cr_assert_eq(orion_msg_block_keys_encode(&b, &m), ORION_EINVAL);
  rg[1].rsrc = 1;
  rg[1].flags = 0;
  cr_assert_eq(orion_msg_block_keys_encode(&b, &m), ORION_EINVAL);
  cr_assert_eq(b.len, 0);
  orion_buf_free(&b);
}

/* CKPT_WRITE and CKPT_DONE: an executor's parts of a checkpoint; the
 * folder must be 1..4095 bytes without a NUL, a CRC-32 fit in 32 bits. */
Test(msg, ckpt_round_trip) {
  static const orion_msg_range rg[2] = {{3, 0, 1200}, {4, 600, 800}};
  static const orion_msg_ckpt_part pt[2] = {{3, 0, 1200, 4852, 0x069d7643u},
                                            {4, 600, 800, 3252, 0xffffffffu}};
  orion_msg_ckpt_write w = {6, "/d/.ckpt-0000000006.tmp", 23, rg, 2}, wo;
  orion_msg_ckpt_done d = {6, "", 0, pt, 2}, dout;
  orion_buf b;
  const char *p;
  size_t n;
  int k;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_ckpt_write_encode(&b, &w), 0);
  p = payload_of(&b, ORION_WIRE_CKPT_WRITE, &n);
  cr_assert_eq(n, 8 + 8 + 23 + 8 + 2 * 24);
  cr_assert_eq(orion_msg_ckpt_write_decode(p, n, &wo, NULL), 0);
  cr_assert_eq(wo.step, 6);
  cr_assert_eq(wo.folder_len, 23);
  cr_assert_eq(memcmp(wo.folder, "/d/.ckpt-0000000006.tmp", 23), 0);
  eq_ranges(wo.ranges, wo.n, rg, 2);
  orion_msg_ckpt_write_free(&wo);
  check_bounds(ORION_WIRE_CKPT_WRITE, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_ckpt_done_encode(&b, &d), 0);
  p = payload_of(&b, ORION_WIRE_CKPT_DONE, &n);
  cr_assert_eq(n, 8 + 8 + 8 + 2 * 40);
  cr_assert_eq(orion_msg_ckpt_done_decode(p, n, &dout, NULL), 0);
  cr_assert_eq(dout.step, 6);
  cr_assert_eq(dout.error_len, 0);
  cr_assert_eq(dout.n, 2);
  for (k = 0; k < 2; k++) {
    cr_assert_eq(dout.parts[k].array, pt[k].array);
    cr_assert_eq(dout.parts[k].first, pt[k].first);
    cr_assert_eq(dout.parts[k].count, pt[k].count);
    cr_assert_eq(dout.parts[k].size, pt[k].size);
    cr_assert_eq(dout.parts[k].crc, pt[k].crc);
  }
  orion_msg_ckpt_done_free(&dout);
  check_bounds(ORION_WIRE_CKPT_DONE, &b);
  b.len = 0;
  /* An error instead of parts. */
  d = (orion_msg_ckpt_done){6, "cannot create x: No space", 25, NULL, 0};
  cr_assert_eq(orion_msg_ckpt_done_encode(&b, &d), 0);
  p = payload_of(&b, ORION_WIRE_CKPT_DONE, &n);
  cr_assert_eq(orion_msg_ckpt_done_decode(p, n, &dout, NULL), 0);
  cr_assert_eq(dout.error_len, 25);
  cr_assert_eq(memcmp(dout.error, "cannot create x: No space", 25), 0);
  cr_assert_eq(dout.n, 0);
  orion_msg_ckpt_done_free(&dout);
  b.len = 0;
  /* Refused both ways: an empty folder, one with a NUL. */
  w.folder_len = 0;
  cr_assert_eq(orion_msg_ckpt_write_encode(&b, &w), ORION_EINVAL);
  cr_assert_eq(b.len, 0);
  w.folder = "/d\0x";
  w.folder_len = 4;
  cr_assert_eq(orion_msg_ckpt_write_encode(&b, &w), ORION_EINVAL);
  {
    /* A hand-made payload: step 6, folder "a\0", no ranges. */
    unsigned char raw[8 + 8 + 2 + 8] = {6, 0, 0, 0, 0, 0, 0, 0,
                                        2, 0, 0, 0, 0, 0, 0, 0, 'a', 0};
    orion_error err;
    cr_assert_eq(orion_msg_ckpt_write_decode(raw, sizeof raw, &wo, &err),
                 ORION_EPARSE);
    cr_assert(strstr(err.msg, "CKPT_WRITE") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "NUL") != NULL, "%s", err.msg);
    /* A CRC-32 of 33 bits in CKPT_DONE. */
    unsigned char rd[8 + 8 + 8 + 40] = {6, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 0, 0, 0,
                                        1, 0, 0, 0, 0, 0, 0, 0};
    rd[24 + 16] = 1;               /* count 1 */
    rd[24 + 32 + 4] = 1;           /* crc = 2^32 */
    cr_assert_eq(orion_msg_ckpt_done_decode(rd, sizeof rd, &dout, &err),
                 ORION_EPARSE);
    cr_assert(strstr(err.msg, "CRC-32") != NULL, "%s", err.msg);
  }
  orion_buf_free(&b);
}

/* BCAST: a piece of a broadcast along a chain; its index must lie below
 * its count of pieces, both ways. */
Test(msg, bcast_round_trip) {
  orion_msg_bcast m = {9, 3, 1, 2, 5, runs3, 1}, out;
  orion_buf b;
  const char *p;
  size_t n;
  orion_error err;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_bcast_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BCAST, &n);
  cr_assert_eq(orion_msg_bcast_decode(p, n, &out, NULL), 0);
  cr_assert_eq(out.run, 9);
  cr_assert_eq(out.array, 3);
  cr_assert_eq(out.forward, 1);
  cr_assert_eq(out.index, 2);
  cr_assert_eq(out.nframes, 5);
  eq_runs(out.runs, out.nruns, runs3, 1, p, n);
  orion_msg_bcast_free(&out);
  check_bounds(ORION_WIRE_BCAST, &b);
  b.len = 0;
  m.index = 5; /* not below nframes */
  cr_assert_eq(orion_msg_bcast_encode(&b, &m), ORION_EINVAL);
  cr_assert_eq(b.len, 0, "a refused encode appends nothing");
  m.index = 4;
  cr_assert_eq(orion_msg_bcast_encode(&b, &m), 0);
  p = payload_of(&b, ORION_WIRE_BCAST, &n);
  ((unsigned char *)p)[24] = 7; /* index 7 of 5 pieces */
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_bcast_decode(p, n, &out, &err), ORION_EPARSE);
  cr_expect(strstr(err.msg, "BCAST") != NULL, "%s", err.msg);
  cr_expect(strstr(err.msg, "nframes") != NULL, "%s", err.msg);
  cr_assert_null(out.runs);
  orion_buf_free(&b);
}

/* A move naming no executor, or a negative range, is refused both ways. */
Test(msg, moves_refuse_bad_fields) {
  orion_msg_move bad[1] = {{3, 0, 8, -1, 0}};
  orion_msg_send_rows sr = {1, bad, 1}, out;
  orion_buf b, h;
  size_t before;
  orion_error err;
  orion_buf_init(&b);
  orion_buf_init(&h);
  before = b.len;
  cr_assert_neq(orion_msg_send_rows_encode(&b, &sr), 0);
  cr_assert_eq(b.len, before, "a refused encode appends nothing");
  orion_pw_i64(&h, 1);
  orion_buf_u64(&h, 1);
  orion_pw_i64(&h, 3);
  orion_pw_i64(&h, 0);
  orion_pw_i64(&h, 8);
  orion_pw_i64(&h, -1);
  orion_pw_i64(&h, 0);
  orion_error_clear(&err);
  cr_assert_eq(orion_msg_send_rows_decode(h.data, h.len, &out, &err),
               ORION_EPARSE);
  cr_assert(strstr(err.msg, "names executor -1") != NULL, "%s", err.msg);
  orion_buf_free(&b);
  orion_buf_free(&h);
}

Test(msg, shard_write_and_ack_round_trip) {
  orion_msg_shard_write w = {7, runs3, 2}, wo;
  orion_msg_write_ack a = {7}, ao;
  orion_buf b;
  const char *p;
  size_t n;
  orion_buf_init(&b);
  cr_assert_eq(orion_msg_shard_write_encode(&b, &w), 0);
  p = payload_of(&b, ORION_WIRE_SHARD_WRITE, &n);
  cr_assert_eq(orion_msg_shard_write_decode(p, n, &wo, NULL), 0);
  cr_assert_eq(wo.run, 7);
  eq_runs(wo.runs, wo.nruns, runs3, 2, p, n);
  orion_msg_shard_write_free(&wo);
  check_bounds(ORION_WIRE_SHARD_WRITE, &b);
  b.len = 0;
  cr_assert_eq(orion_msg_write_ack_encode(&b, &a), 0);
  p = payload_of(&b, ORION_WIRE_WRITE_ACK, &n);
  cr_assert_eq(n, 8);
  cr_assert_eq(orion_msg_write_ack_decode(p, n, &ao, NULL), 0);
  cr_assert_eq(ao.run, 7);
  orion_buf_free(&b);
}
