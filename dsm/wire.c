#include "dsm/wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#include "dsm/types.h"
#include "util/alloc.h"

/* ARRAY_DATA ships elements as they lie in memory and calls them
 * little-endian; a big-endian port would have to swap them here. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dsm/wire.c assumes a little-endian host (ARRAY_DATA element bytes)"
#endif
#endif

/* Decoder states: reading the header, the payload, the trailer; or holding
 * a complete frame for the caller. */
enum { ST_HEADER, ST_PAYLOAD, ST_TRAILER, ST_READY };

/* A payload buffer up to this size is kept for the next frame; a larger
 * one (bulk data) is released as soon as its frame is. */
#define KEEP_BUF (64u * 1024u)

/* The fixed part of an ARRAY_DATA payload, before dims. */
#define ARRAY_FIXED 16u

/* What an empty frame's payload points at, so that it is never NULL. */
static const unsigned char empty_payload[1];

/* ------------------------------------------------------------------------
 * Little-endian integers, independent of the host's byte order.
 * ---------------------------------------------------------------------- */

static void put_u16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static uint16_t get_u16(const unsigned char *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void buf_u16(orion_buf *b, uint16_t v) {
  unsigned char x[2];
  put_u16(x, v);
  orion_buf_append(b, x, sizeof x);
}

static void buf_u32(orion_buf *b, uint32_t v) {
  unsigned char x[4];
  put_u32(x, v);
  orion_buf_append(b, x, sizeof x);
}

static int rd_u16(orion_reader *r, uint16_t *v) {
  const char *p;
  if (orion_reader_bytes(r, 2, &p) != 0)
    return ORION_ETRUNC;
  *v = get_u16((const unsigned char *)p);
  return 0;
}

static int rd_u32(orion_reader *r, uint32_t *v) {
  const char *p;
  if (orion_reader_bytes(r, 4, &p) != 0)
    return ORION_ETRUNC;
  *v = get_u32((const unsigned char *)p);
  return 0;
}

static int rd_i64(orion_reader *r, int64_t *v) {
  uint64_t u;
  if (orion_reader_u64(r, &u) != 0)
    return ORION_ETRUNC;
  *v = (int64_t)u;
  return 0;
}

/* ------------------------------------------------------------------------
 * Types.
 * ---------------------------------------------------------------------- */

int orion_wire_type_known(int type) {
  switch (type) {
#define ORION__WIRE_TYPE_CASE(name, code) case ORION_WIRE_##name:
    ORION_WIRE_TYPE_MAP(ORION__WIRE_TYPE_CASE)
#undef ORION__WIRE_TYPE_CASE
    return 1;
  default:
    return 0;
  }
}

const char *orion_wire_type_name(int type) {
  switch (type) {
#define ORION__WIRE_TYPE_NAME(name, code)                                     \
  case ORION_WIRE_##name:                                                     \
    return #name;
    ORION_WIRE_TYPE_MAP(ORION__WIRE_TYPE_NAME)
#undef ORION__WIRE_TYPE_NAME
  default:
    return "unknown";
  }
}

/* ------------------------------------------------------------------------
 * Framing.
 * ---------------------------------------------------------------------- */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), chained like
 * zlib's crc32: start with 0, pass the previous result to continue.  On
 * x86-64 with SSE4.2 the crc32 instruction computes it at several bytes
 * per cycle (zlib's CRC-32 was a fifth of a loop's frame handling time);
 * elsewhere a byte table does. */
static uint32_t crc32c_table[256];
static int crc32c_has_hw;
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void) {
  uint32_t i, k, c;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  crc32c_has_hw = __builtin_cpu_supports("sse4.2");
#endif
  for (i = 0; i < 256; i++) {
    c = i;
    for (k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc32c_table[i] = c;
  }
}

static uint32_t crc32c_soft(uint32_t c, const unsigned char *s, size_t n) {
  while (n-- > 0)
    c = crc32c_table[(c ^ *s++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t c, const unsigned char *s, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
    s += 8;
    n -= 8;
  }
  c = (uint32_t)c64;
  while (n-- > 0)
    c = __builtin_ia32_crc32qi(c, *s++);
  return c;
}
#endif

uint32_t orion_wire_crc(uint32_t crc, const void *p, size_t n) {
  const unsigned char *s = p;
  uint32_t c = ~crc;
  pthread_once(&crc32c_once, crc32c_init);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (crc32c_has_hw)
    return ~crc32c_hw(c, s, n);
#endif
  return ~crc32c_soft(c, s, n);
}

void orion_wire_pack_header(unsigned char out[ORION_WIRE_HEADER_LEN],
                            int type, uint32_t len) {
  orion_assert(orion_wire_type_known(type));
  out[0] = ORION_WIRE_MAGIC0;
  out[1] = ORION_WIRE_MAGIC1;
  out[2] = ORION_WIRE_VERSION;
  out[3] = (unsigned char)type;
  out[4] = 0;
  put_u32(out + 5, len);
}

void orion_wire_pack_trailer(unsigned char out[ORION_WIRE_TRAILER_LEN],
                             uint32_t crc) {
  put_u32(out, crc);
}

size_t orion_wire_begin(orion_buf *b, int type) {
  unsigned char h[ORION_WIRE_HEADER_LEN];
  size_t start = b->len;
  orion_wire_pack_header(h, type, 0);
  orion_buf_append(b, h, sizeof h);
  return start;
}

static int wire_end(orion_buf *b, size_t start, int crc) {
  unsigned char t[ORION_WIRE_TRAILER_LEN];
  size_t n;
  if (b->oom)
    return ORION_ENOMEM;
  orion_assert(start <= b->len && b->len - start >= ORION_WIRE_HEADER_LEN);
  n = b->len - start - ORION_WIRE_HEADER_LEN;
  if (n > ORION_WIRE_MAX_FRAME) {
    b->len = start;
    return -EMSGSIZE;
  }
  put_u32((unsigned char *)b->data + start + 5, (uint32_t)n);
  orion_wire_pack_trailer(
      t, crc ? orion_wire_crc(0, b->data + start, ORION_WIRE_HEADER_LEN + n)
             : 0);
  orion_buf_append(b, t, sizeof t);
  return b->oom ? ORION_ENOMEM : 0;
}

int orion_wire_end(orion_buf *b, size_t start) {
  return wire_end(b, start, 1);
}

int orion_wire_end_sealed(orion_buf *b, size_t start) {
  return wire_end(b, start, 0);
}

int orion_wire_encode(orion_buf *b, int type, const void *payload,
                      size_t len) {
  size_t start;
  if (len > ORION_WIRE_MAX_FRAME)
    return -EMSGSIZE;
  if (payload == NULL && len > 0)
    return ORION_EINVAL;
  start = orion_wire_begin(b, type);
  if (len > 0)
    orion_buf_append(b, payload, len);
  return orion_wire_end(b, start);
}

/* ------------------------------------------------------------------------
 * Payload helpers.
 * ---------------------------------------------------------------------- */

static int too_short(orion_error *err, const char *frame, const char *field) {
  return orion_error_set(err, ORION_ETRUNC,
                         "%s payload too short: it ends inside the %s",
                         frame, field);
}

static int trailing(orion_error *err, const char *frame, size_t n) {
  return orion_error_set(err, ORION_EPARSE,
                         "%s payload has %zu unexpected trailing bytes",
                         frame, n);
}

/* ------------------------------------------------------------------------
 * HELLO.
 * ---------------------------------------------------------------------- */

int orion_wire_hello_encode(orion_buf *b, const orion_wire_hello *h) {
  size_t start;
  if (h->addr_len > ORION_WIRE_ADDR_MAX ||
      (h->addr == NULL && h->addr_len > 0) ||
      h->device_len > ORION_WIRE_DEVICE_MAX ||
      (h->device == NULL && h->device_len > 0))
    return ORION_EINVAL;
  start = orion_wire_begin(b, ORION_WIRE_HELLO);
  buf_u32(b, h->executor);
  buf_u16(b, (uint16_t)h->addr_len);
  if (h->addr_len > 0)
    orion_buf_append(b, h->addr, h->addr_len);
  buf_u16(b, (uint16_t)h->device_len);
  if (h->device_len > 0)
    orion_buf_append(b, h->device, h->device_len);
  orion_buf_u64(b, h->gpu_total);
  orion_buf_u64(b, h->gpu_cap);
  return orion_wire_end(b, start);
}

int orion_wire_hello_decode(const void *p, size_t n, orion_wire_hello *out,
                            orion_error *err) {
  orion_reader r;
  uint16_t alen, dlen;
  uint32_t executor;
  const char *addr, *device;
  uint64_t gpu_total, gpu_cap;
  orion_reader_init(&r, p, n);
  if (rd_u32(&r, &executor) != 0)
    return too_short(err, "HELLO", "executor id");
  if (rd_u16(&r, &alen) != 0)
    return too_short(err, "HELLO", "address length");
  if (alen > ORION_WIRE_ADDR_MAX)
    return orion_error_set(err, ORION_EPARSE,
                           "HELLO address length %u is over %u",
                           (unsigned)alen, ORION_WIRE_ADDR_MAX);
  if (orion_reader_bytes(&r, alen, &addr) != 0)
    return too_short(err, "HELLO", "address");
  if (rd_u16(&r, &dlen) != 0)
    return too_short(err, "HELLO", "device length");
  if (dlen > ORION_WIRE_DEVICE_MAX)
    return orion_error_set(err, ORION_EPARSE,
                           "HELLO device length %u is over %u",
                           (unsigned)dlen, ORION_WIRE_DEVICE_MAX);
  if (orion_reader_bytes(&r, dlen, &device) != 0)
    return too_short(err, "HELLO", "device");
  if (orion_reader_u64(&r, &gpu_total) != 0)
    return too_short(err, "HELLO", "device memory");
  if (orion_reader_u64(&r, &gpu_cap) != 0)
    return too_short(err, "HELLO", "device memory cap");
  if (r.left != 0)
    return trailing(err, "HELLO", r.left);
  out->executor = executor;
  out->addr = addr;
  out->addr_len = alen;
  out->device = device;
  out->device_len = dlen;
  out->gpu_total = gpu_total;
  out->gpu_cap = gpu_cap;
  return 0;
}

/* ------------------------------------------------------------------------
 * HEARTBEAT.
 * ---------------------------------------------------------------------- */

int orion_wire_heartbeat_encode(orion_buf *b, const orion_wire_heartbeat *h) {
  size_t start = orion_wire_begin(b, ORION_WIRE_HEARTBEAT);
  buf_u32(b, h->executor);
  orion_buf_u64(b, h->seq);
  orion_buf_u64(b, h->sent_ns);
  orion_buf_u64(b, h->mem_used);
  return orion_wire_end(b, start);
}

int orion_wire_heartbeat_decode(const void *p, size_t n,
                                orion_wire_heartbeat *out, orion_error *err) {
  orion_reader r;
  orion_wire_heartbeat h;
  orion_reader_init(&r, p, n);
  if (rd_u32(&r, &h.executor) != 0)
    return too_short(err, "HEARTBEAT", "executor id");
  if (orion_reader_u64(&r, &h.seq) != 0)
    return too_short(err, "HEARTBEAT", "sequence number");
  if (orion_reader_u64(&r, &h.sent_ns) != 0)
    return too_short(err, "HEARTBEAT", "clock");
  if (orion_reader_u64(&r, &h.mem_used) != 0)
    return too_short(err, "HEARTBEAT", "memory figure");
  if (r.left != 0)
    return trailing(err, "HEARTBEAT", r.left);
  *out = h;
  return 0;
}

/* ------------------------------------------------------------------------
 * ARRAY_DATA.
 * ---------------------------------------------------------------------- */

/* Bytes per element, 0 for an unknown type (kept here so that the codec
 * links without the rest of dsm/). */
static size_t elem_size(int type) {
  switch (type) {
  case ORION_F32:
  case ORION_I32:
    return 4;
  case ORION_F64:
  case ORION_I64:
    return 8;
  default:
    return 0;
  }
}

/* Checks the header fields of a (from the sender or the wire) and stores
 * the byte size of its elements in *nbytes. */
static int check_array(const orion_wire_array *a, size_t *nbytes,
                       orion_error *err) {
  size_t size = elem_size(a->type);
  int64_t total = 1;
  int d;
  if (size == 0)
    return orion_error_set(err, ORION_ETYPE,
                           "ARRAY_DATA of array %" PRId64
                           ": unknown element type %d",
                           a->array_id, a->type);
  if (a->ndims < 1 || a->ndims > ORION_MAX_DIMS)
    return orion_error_set(err, ORION_EDIMS,
                           "ARRAY_DATA of array %" PRId64
                           ": %d dimensions (1..%d allowed)",
                           a->array_id, a->ndims, ORION_MAX_DIMS);
  for (d = 0; d < a->ndims; d++) {
    if (a->dims[d] <= 0)
      return orion_error_set(err, ORION_EDIMS,
                             "ARRAY_DATA of array %" PRId64
                             ": dimension %d is %" PRId64,
                             a->array_id, d + 1, a->dims[d]);
    if (total > INT64_MAX / a->dims[d])
      return orion_error_set(err, ORION_EOVERFLOW,
                             "ARRAY_DATA of array %" PRId64
                             ": the element count overflows 64 bits",
                             a->array_id);
    total *= a->dims[d];
  }
  if (a->first < 0 || a->count < 0 || a->first > total ||
      a->count > total - a->first)
    return orion_error_set(err, ORION_EKEYRANGE,
                           "ARRAY_DATA of array %" PRId64 ": elements %" PRId64
                           " + %" PRId64 " outside the %" PRId64
                           " of the array",
                           a->array_id, a->first, a->count, total);
  if ((uint64_t)a->count > SIZE_MAX / size)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "ARRAY_DATA of array %" PRId64
                           ": %" PRId64 " elements do not fit in memory",
                           a->array_id, a->count);
  *nbytes = (size_t)a->count * size;
  return 0;
}

int orion_wire_array_head(orion_buf *head,
                          unsigned char trailer[ORION_WIRE_TRAILER_LEN],
                          const orion_wire_array *a) {
  size_t nbytes, fixed, start;
  uint32_t crc;
  int d;
  if (check_array(a, &nbytes, NULL) != 0 || (a->data == NULL && nbytes > 0))
    return ORION_EINVAL;
  fixed = ARRAY_FIXED + 8u * (size_t)a->ndims + 16u;
  if (nbytes > ORION_WIRE_MAX_FRAME - fixed)
    return -EMSGSIZE;
  start = orion_wire_begin(head, ORION_WIRE_ARRAY_DATA);
  orion_buf_u64(head, (uint64_t)a->array_id);
  orion_buf_u8(head, (uint8_t)a->type);
  orion_buf_u8(head, (uint8_t)a->ndims);
  buf_u16(head, 0);
  buf_u32(head, 0);
  for (d = 0; d < a->ndims; d++)
    orion_buf_u64(head, (uint64_t)a->dims[d]);
  orion_buf_u64(head, (uint64_t)a->first);
  orion_buf_u64(head, (uint64_t)a->count);
  if (head->oom)
    return ORION_ENOMEM;
  put_u32((unsigned char *)head->data + start + 5, (uint32_t)(fixed + nbytes));
  crc = orion_wire_crc(0, head->data + start, head->len - start);
  crc = orion_wire_crc(crc, a->data, nbytes);
  orion_wire_pack_trailer(trailer, crc);
  return 0;
}

int orion_wire_array_encode(orion_buf *b, const orion_wire_array *a) {
  unsigned char t[ORION_WIRE_TRAILER_LEN];
  int rc = orion_wire_array_head(b, t, a);
  if (rc != 0)
    return rc;
  if (a->count > 0)
    orion_buf_append(b, a->data, (size_t)a->count * elem_size(a->type));
  orion_buf_append(b, t, sizeof t);
  return b->oom ? ORION_ENOMEM : 0;
}

int orion_wire_array_decode(const void *p, size_t n, orion_wire_array *out,
                            orion_error *err) {
  orion_reader r;
  orion_wire_array a;
  uint8_t type, ndims;
  uint16_t res16;
  uint32_t res32;
  size_t nbytes;
  const char *data;
  int d, rc;
  memset(&a, 0, sizeof a);
  orion_reader_init(&r, p, n);
  if (rd_i64(&r, &a.array_id) != 0)
    return too_short(err, "ARRAY_DATA", "array id");
  if (orion_reader_u8(&r, &type) != 0 || orion_reader_u8(&r, &ndims) != 0 ||
      rd_u16(&r, &res16) != 0 || rd_u32(&r, &res32) != 0)
    return too_short(err, "ARRAY_DATA", "fixed header");
  if (res16 != 0 || res32 != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "ARRAY_DATA of array %" PRId64
                           ": reserved header bytes are not 0",
                           a.array_id);
  a.type = type;
  a.ndims = ndims;
  /* Checked before the dims are read, so that dims[] cannot overflow. */
  if (a.ndims < 1 || a.ndims > ORION_MAX_DIMS)
    return orion_error_set(err, ORION_EDIMS,
                           "ARRAY_DATA of array %" PRId64
                           ": %d dimensions (1..%d allowed)",
                           a.array_id, a.ndims, ORION_MAX_DIMS);
  for (d = 0; d < a.ndims; d++)
    if (rd_i64(&r, &a.dims[d]) != 0)
      return too_short(err, "ARRAY_DATA", "dimensions");
  if (rd_i64(&r, &a.first) != 0 || rd_i64(&r, &a.count) != 0)
    return too_short(err, "ARRAY_DATA", "element range");
  if ((rc = check_array(&a, &nbytes, err)) != 0)
    return rc;
  if (nbytes > r.left)
    return orion_error_set(err, ORION_ETRUNC,
                           "ARRAY_DATA of array %" PRId64 ": %" PRId64
                           " elements need %zu bytes, the payload has %zu",
                           a.array_id, a.count, nbytes, r.left);
  if (orion_reader_bytes(&r, nbytes, &data) != 0)
    return too_short(err, "ARRAY_DATA", "elements");
  if (r.left != 0)
    return trailing(err, "ARRAY_DATA", r.left);
  a.data = data;
  *out = a;
  return 0;
}

/* ------------------------------------------------------------------------
 * The decoder.
 * ---------------------------------------------------------------------- */

/* Fails d for good: records the fault and the message, releases the
 * payload buffer.  Returns code. */
static int fail(orion_wire_decoder *d, int fault, int code, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static int fail(orion_wire_decoder *d, int fault, int code, const char *fmt,
                ...) {
  va_list ap;
  d->fault = fault;
  d->err.code = code;
  va_start(ap, fmt);
  vsnprintf(d->err.msg, sizeof d->err.msg, fmt, ap);
  va_end(ap);
  orion_free(d->buf);
  d->buf = NULL;
  d->cap = 0;
  memset(&d->frame, 0, sizeof d->frame);
  return code;
}

int orion_wire_decoder_init(orion_wire_decoder *d, orion_wire_role role) {
  memset(d, 0, sizeof *d);
  d->role = role;
  d->state = ST_HEADER;
  d->limit = ORION_WIRE_MAX_FRAME;
  d->handshaken = role == ORION_WIRE_TRUSTED;
  if (role != ORION_WIRE_ACCEPT && role != ORION_WIRE_CONNECT &&
      role != ORION_WIRE_TRUSTED)
    return fail(d, ORION_WIRE_OK, ORION_EINVAL,
                "wire decoder set up with unknown role %d", (int)role);
  return 0;
}

void orion_wire_decoder_mac_covered(orion_wire_decoder *d) {
  d->mac_covered = 1;
}

void orion_wire_decoder_set_limit(orion_wire_decoder *d,
                                  uint32_t max_payload) {
  d->limit =
      max_payload > ORION_WIRE_MAX_FRAME ? ORION_WIRE_MAX_FRAME : max_payload;
}

/* Forgets the ready frame; keeps a small buffer for the next one. */
static void release_frame(orion_wire_decoder *d) {
  if (d->cap > KEEP_BUF) {
    orion_free(d->buf);
    d->buf = NULL;
    d->cap = 0;
  }
  memset(&d->frame, 0, sizeof d->frame);
  d->state = ST_HEADER;
  d->have = 0;
}

/* The header is complete: checks it and prepares for the payload. */
static int check_header(orion_wire_decoder *d) {
  const unsigned char *h = d->hdr;
  int type = h[3];
  const char *name = orion_wire_type_name(type);
  uint32_t len = get_u32(h + 5), limit;
  d->frame_start = d->offset - ORION_WIRE_HEADER_LEN;
  if (h[0] != ORION_WIRE_MAGIC0 || h[1] != ORION_WIRE_MAGIC1)
    return fail(d, ORION_WIRE_BAD_MAGIC, ORION_EPARSE,
                "bad magic 0x%02x 0x%02x at stream offset %" PRIu64
                " (expected 'O' 'C': not an Orion-C peer, or out of step)",
                h[0], h[1], d->frame_start);
  if (h[2] != ORION_WIRE_VERSION)
    return fail(d, ORION_WIRE_BAD_VERSION, ORION_EVERSION,
                "unknown version %u at stream offset %" PRIu64
                " (this build speaks version %d)",
                h[2], d->frame_start, ORION_WIRE_VERSION);
  if (!orion_wire_type_known(type))
    return fail(d, ORION_WIRE_BAD_TYPE, ORION_EPARSE,
                "unknown frame type %d at stream offset %" PRIu64, type,
                d->frame_start);
  if (h[4] != 0)
    return fail(d, ORION_WIRE_BAD_FLAGS, ORION_EPARSE,
                "reserved flags 0x%02x set in the %s frame at stream offset "
                "%" PRIu64,
                h[4], name, d->frame_start);
  if (!d->handshaken) {
    if (d->role == ORION_WIRE_ACCEPT && type != ORION_WIRE_HELLO)
      return fail(d, ORION_WIRE_HANDSHAKE, -EPROTO,
                  "first frame is %s, not HELLO",
                  name);
    if (d->role == ORION_WIRE_CONNECT && type != ORION_WIRE_WELCOME)
      return fail(d, ORION_WIRE_HANDSHAKE, -EPROTO,
                  "first frame is %s, not WELCOME", name);
  } else if (d->role == ORION_WIRE_ACCEPT && type == ORION_WIRE_HELLO) {
    return fail(d, ORION_WIRE_HANDSHAKE, -EPROTO,
                "second HELLO at stream offset %" PRIu64, d->frame_start);
  }
  limit = d->limit;
  if (!d->handshaken && limit > ORION_WIRE_HELLO_MAX)
    limit = ORION_WIRE_HELLO_MAX;
  if (len > limit)
    return fail(d, ORION_WIRE_OVERSIZED, -EMSGSIZE,
                "oversized frame: the %s frame at stream offset %" PRIu64
                " declares a payload of %" PRIu32
                " bytes, over the limit of %" PRIu32,
                name, d->frame_start, len, limit);
  if (len > d->cap) {
    orion_free(d->buf);
    d->cap = 0;
    d->buf = orion_malloc(len);
    if (d->buf == NULL)
      return fail(d, ORION_WIRE_NOMEM, ORION_ENOMEM,
                  "cannot allocate %" PRIu32 " bytes for the %s frame", len,
                  name);
    d->cap = len;
  }
  d->type = type;
  d->len = len;
  d->crc = d->mac_covered ? 0 : orion_wire_crc(0, h, ORION_WIRE_HEADER_LEN);
  d->have = 0;
  d->state = len > 0 ? ST_PAYLOAD : ST_TRAILER;
  return 0;
}

/* The handshake HELLO of an accepting decoder must be well formed (the
 * peer proved it holds the token before, in dsm/sec.h's handshake). */
static int check_hello(orion_wire_decoder *d, const unsigned char *payload) {
  orion_wire_hello h;
  orion_error e;
  orion_error_clear(&e);
  if (orion_wire_hello_decode(payload, d->len, &h, &e) != 0)
    return fail(d, ORION_WIRE_BAD_HELLO, ORION_EPARSE, "malformed HELLO: %s",
                e.msg);
  return 0;
}

/* The trailer is complete: checks the CRC and the handshake. */
static int complete_frame(orion_wire_decoder *d) {
  uint32_t carried = get_u32(d->trailer);
  const unsigned char *payload = d->len > 0 ? d->buf : empty_payload;
  int rc;
  if (!d->mac_covered && carried != d->crc)
    return fail(d, ORION_WIRE_BAD_CRC, ORION_ECHECKSUM,
                "CRC mismatch in the %s frame at stream offset %" PRIu64
                ": computed 0x%08" PRIx32 ", the frame carries 0x%08" PRIx32,
                orion_wire_type_name(d->type), d->frame_start, d->crc,
                carried);
  if (!d->handshaken) {
    if (d->role == ORION_WIRE_ACCEPT &&
        (rc = check_hello(d, payload)) != 0)
      return rc;
    d->handshaken = 1;
  }
  d->frame.type = d->type;
  d->frame.version = ORION_WIRE_VERSION;
  d->frame.payload = payload;
  d->frame.len = d->len;
  d->state = ST_READY;
  d->frames++;
  return ORION_WIRE_FRAME_READY;
}

/* Copies into dst, which holds d->have of its want bytes, as many of the
 * bytes at s[*i..n) as it still needs; returns how many it took. */
static size_t take_into(orion_wire_decoder *d, unsigned char *dst,
                        size_t want, const unsigned char *s, size_t *i,
                        size_t n) {
  size_t take = want - d->have;
  if (take > n - *i)
    take = n - *i;
  memcpy(dst + d->have, s + *i, take);
  d->have += take;
  d->offset += take;
  *i += take;
  return take;
}

int orion_wire_decoder_feed(orion_wire_decoder *d, const void *p, size_t n,
                            size_t *used) {
  const unsigned char *s = p;
  size_t i = 0, take;
  int rc;
  *used = 0;
  if (d->err.code != 0)
    return d->err.code;
  if (d->state == ST_READY)
    release_frame(d);
  while (i < n) {
    switch (d->state) {
    case ST_HEADER:
      take_into(d, d->hdr, ORION_WIRE_HEADER_LEN, s, &i, n);
      if (d->have == ORION_WIRE_HEADER_LEN && (rc = check_header(d)) != 0) {
        *used = i;
        return rc;
      }
      break;
    case ST_PAYLOAD:
      take = take_into(d, d->buf, d->len, s, &i, n);
      if (!d->mac_covered)
        d->crc = orion_wire_crc(d->crc, s + i - take, take);
      if (d->have == d->len) {
        d->state = ST_TRAILER;
        d->have = 0;
      }
      break;
    case ST_TRAILER:
      take_into(d, d->trailer, ORION_WIRE_TRAILER_LEN, s, &i, n);
      if (d->have == ORION_WIRE_TRAILER_LEN) {
        *used = i;
        return complete_frame(d);
      }
      break;
    default:
      orion_assert(!"wire decoder in an impossible state");
    }
  }
  *used = n;
  return ORION_WIRE_NEED_MORE;
}

const orion_wire_frame *orion_wire_decoder_frame(const orion_wire_decoder *d) {
  return d->err.code == 0 && d->state == ST_READY ? &d->frame : NULL;
}

void *orion_wire_decoder_take(orion_wire_decoder *d, size_t *len) {
  void *p = NULL;
  *len = 0;
  if (d->err.code != 0 || d->state != ST_READY)
    return NULL;
  if (d->len > 0) {
    p = d->buf;
    *len = d->len;
    d->buf = NULL;
    d->cap = 0;
  }
  release_frame(d);
  return p;
}

int orion_wire_decoder_finish(orion_wire_decoder *d) {
  if (d->err.code != 0)
    return d->err.code;
  switch (d->state) {
  case ST_HEADER:
    if (d->have == 0)
      return 0;
    return fail(d, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                "truncated header at end of stream: %zu of %d bytes of the "
                "frame at stream offset %" PRIu64,
                d->have, ORION_WIRE_HEADER_LEN, d->offset - d->have);
  case ST_PAYLOAD:
    return fail(d, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                "truncated payload at end of stream: the %s frame at stream "
                "offset %" PRIu64 " has %zu of its %" PRIu32 " payload bytes",
                orion_wire_type_name(d->type), d->frame_start, d->have,
                d->len);
  case ST_TRAILER:
    return fail(d, ORION_WIRE_TRUNCATED, ORION_ETRUNC,
                "truncated CRC at end of stream: the %s frame at stream "
                "offset %" PRIu64 " has %zu of its %d CRC bytes",
                orion_wire_type_name(d->type), d->frame_start, d->have,
                ORION_WIRE_TRAILER_LEN);
  default:
    return 0;
  }
}

const char *orion_wire_decoder_reason(const orion_wire_decoder *d) {
  return d->err.msg;
}

int orion_wire_decoder_fault(const orion_wire_decoder *d) { return d->fault; }

void orion_wire_decoder_free(orion_wire_decoder *d) {
  orion_free(d->buf);
  d->buf = NULL;
  d->cap = 0;
  memset(&d->frame, 0, sizeof d->frame);
  if (d->state == ST_READY)
    d->state = ST_HEADER;
  d->have = 0;
}
