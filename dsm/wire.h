/* The wire codec of the distributed runtime: length-prefixed, typed,
 * versioned frames on byte buffers.  It never touches a socket; dsm/net.c
 * (later) plugs it into libuv, and the tests and the fuzzer drive it with
 * plain bytes.
 *
 * A frame is a 9-byte header, the payload, and a 4-byte trailer:
 *
 *   offset  size  field
 *   0       2     magic 'O' 'C'
 *   2       1     version, ORION_WIRE_VERSION
 *   3       1     type, one of ORION_WIRE_TYPE_MAP
 *   4       1     flags, reserved: 0 (a frame with any bit set is refused)
 *   5       4     payload length N, u32 little-endian, <= ORION_WIRE_MAX_FRAME
 *   9       N     payload
 *   9+N     4     CRC-32C (Castagnoli) of the header and the payload, u32 LE
 *
 * The CRC covers the header too, so that a damaged type or length byte is
 * caught as surely as a damaged payload byte.  It sits after the payload so
 * that a large frame can be sent without copying: the sender writes the
 * header, the caller's memory, then the trailer (orion_wire_array_head).
 *
 * All integers in payloads are little-endian and unaligned; strings are a
 * length then that many bytes (no terminating NUL).  The payload layouts of
 * HELLO, HEARTBEAT and ARRAY_DATA are defined here (see the structs below);
 * the runtime's messages (LOAD_BODY, RUN_BLOCK, BODY_ERROR and the rest)
 * are dsm/msg.h's, and this codec only frames them.
 *
 * Versions: 25 added LOOP_DONE's CPU seconds, in the bodies and in all
 * (the exchange's CPU, issue 35's model); 24 added RUN_BLOCK's late flag (an executor that holds every
 * block of a loop may send the reports of blocks it runs back to back in
 * one frame, executor/exec_late.c); 23 added LOAD_BODY's body digest and base (executors keep the
 * bodies they were sent, dsm/bodycache.h; the driver sends a reference or
 * a patch of a held one); 22 gave SHARD_PULL its keep flag and SHARD_DATA the ranges
 * an owner kept (the loop end's reduction stays on the owners); 21 added RUN_BLOCK's space and time parts (an executor may
 * start a later queued block whose rows are in: executor/exec_order.c)
 * and LOOP_DONE's count of the blocks it so started; 20 added LOAD_FILE's digest and held_only and LOADED's part,
 * digest and not_held (kept loads for --elastic, dsm/pload.c); 19 added RUN_BLOCK's first and
 * keep and BLOCK_DONE's kept (a sparse block's new values kept on the
 * executor, dsm/msg.h); 18 let BUFFER_FLUSH's values travel in 4 bytes (dsm/msg.h);
 * 17 sent a body's captured integer lists as a length and 8 bytes an
 * entry (executor/capture.c);
 * 16 sent FETCH_REPLY's changed rows only; 15 added BLOCK_KEYS and LOAD_BODY's verify mode (orion-driver
 * --verify: the keys each block read and wrote); 14 added LOAD_BODY's
 * runtime guard (the arrays the body must not write directly, with the
 * plan's placement of each); 13 added
 * LOAD_BODY's chained body (a large body's bytes in
 * BCAST frames along the executors' chain); 10 added LOAD_BODY's loop timeout; 9 LOAD_BODY's array
 * kind (dense, sparse, ragged); 8 put dsm/sec.h's authentication handshake and records under
 * the frames and took the token out of HELLO (the secret never crosses
 * the wire); 7 added BCAST (broadcasts along a chain of executors); 6
 * added MOVE_ROWS and BLOCK_DONE's wait seconds (dynamic block
 * assignment), FETCH_REPLY's count of the requester's flushes
 * (read-your-writes) and the managed buffers' budget and statistics; 5
 * added the executor's GPU to HELLO (its description and
 * its device memory, total and cap), LOAD_BODY's device fields (tier
 * "gpu": the device grid's kind, dimensions and size) and LOOP_DONE's
 * count of blocks run on a device; 4 gave SHUTDOWN a payload, the reason the driver ends the job
 * (version 3 sent it empty), added the loop's seconds and each block's
 * accumulator partials to LOOP_DONE, a block to BUFFER_FLUSH, and the
 * resident rows that move between executors (SEND_ROWS, ROWS, ROWS_PULL,
 * ROWS_DATA, RUN_BLOCK's gets and puts), and the sharding of directly
 * written server arrays (SHARD_WRITE, WRITE_ACK); 3 made BODY_ERROR's block a typed
 * i64 (version 2 sent it as decimal text); 2 run-coded buffered writes and
 * moved to CRC-32C.
 *
 * Handshake.  Below the frames, dsm/sec.h's handshake has proved that both
 * ends hold the job's token, and every frame travels in its authenticated
 * records.  The peer that connects then sends HELLO first (who it is); a
 * decoder in ORION_WIRE_ACCEPT role refuses any other first frame and any
 * later HELLO.  Until the HELLO has been accepted the payload limit is
 * ORION_WIRE_HELLO_MAX.
 *
 * Threads: the codec keeps no global state.  One decoder belongs to one
 * connection and must be used by one thread (its loop) at a time; the
 * encoders may be called from any thread on distinct buffers.
 */
#ifndef ORION_DSM_WIRE_H
#define ORION_DSM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/key.h"
#include "util/buf.h"
#include "util/error.h"

#define ORION_WIRE_MAGIC0 'O'
#define ORION_WIRE_MAGIC1 'C'
#define ORION_WIRE_VERSION 25

#define ORION_WIRE_HEADER_LEN 9
#define ORION_WIRE_TRAILER_LEN 4
/* Bytes a frame adds to its payload. */
#define ORION_WIRE_OVERHEAD (ORION_WIRE_HEADER_LEN + ORION_WIRE_TRAILER_LEN)

/* The largest payload (in bytes, header and trailer not counted) that any
 * frame may declare.  Decoders may be given a lower limit. */
#define ORION_WIRE_MAX_FRAME (256u * 1024u * 1024u)
/* The payload limit that applies to the first frame of a handshaking
 * decoder, before the peer has proved it holds the token. */
#define ORION_WIRE_HELLO_MAX 1024u
/* The longest job token (it never travels; dsm/sec.h hashes it). */
#define ORION_WIRE_TOKEN_MAX 256u
/* Bounds on the HELLO strings. */
#define ORION_WIRE_ADDR_MAX 255u
/* HELLO's executor id of an executor that joins (orion-executor --join):
 * the driver picks its id and says it in WELCOME's payload (u32). */
#define ORION_WIRE_ANY_EXECUTOR 0xffffffffu
#define ORION_WIRE_DEVICE_MAX 255u

/* Frame types: X(NAME, code).  Codes are part of the protocol: never
 * renumber one, only append. */
#define ORION_WIRE_TYPE_MAP(X)                                                \
  X(HELLO, 1)        /* peer -> acceptor: executor id, listen addr */        \
  X(WELCOME, 2)      /* acceptor -> peer: the HELLO was accepted */          \
  X(HEARTBEAT, 3)    /* either way, periodically */                          \
  X(LOAD_BODY, 4)    /* driver -> executor: a captured loop body */          \
  X(RUN_BLOCK, 5)    /* driver -> executor: run one block */                 \
  X(BLOCK_DONE, 6)   /* executor -> driver: a block finished */              \
  X(BODY_ERROR, 7)   /* executor -> driver: a body raised an error */        \
  X(ARRAY_DATA, 8)   /* bulk partition bytes */                              \
  X(FETCH, 9)        /* ask a peer for server-held elements */               \
  X(FETCH_REPLY, 10) /* the answer to a FETCH */                             \
  X(BUFFER_FLUSH, 11) /* buffered updates for their owner */                 \
  X(SHUTDOWN, 12)    /* driver -> executor: end of job, and why */        \
  X(LOOP_END, 13)    /* driver -> executor: the loop's last block is sent */ \
  X(LOOP_DONE, 14)   /* executor -> driver: accumulators, loop finished */  \
  X(LOAD_FILE, 15)   /* driver -> executor: parse a byte range of a file */ \
  X(LOADED, 16)      /* executor -> driver: the elements of that range */   \
  X(FORGET, 17)      /* driver -> executor: drop cached arrays */         \
  X(PEERS, 18)       /* driver -> executor: every executor's peer address */\
  X(FLUSH_ACK, 19)   /* owner -> executor: a BUFFER_FLUSH was applied */    \
  X(SHARD_PULL, 20)  /* driver -> executor: send back your shards' changes */\
  X(SHARD_DATA, 21)  /* executor -> driver: the changed rows of its shards */\
  X(SEND_ROWS, 22)   /* driver -> executor: send rows you hold to peers */  \
  X(ROWS, 23)        /* executor -> executor: rows for a block */          \
  X(ROWS_PULL, 24)   /* driver -> executor: send rows you hold back */     \
  X(ROWS_DATA, 25)   /* executor -> driver: those rows */                  \
  X(SHARD_WRITE, 26) /* executor -> owner: elements a block wrote */       \
  X(WRITE_ACK, 27)   /* owner -> executor: a SHARD_WRITE was applied */    \
  X(MOVE_ROWS, 28)   /* driver -> executor: send rows now, mid-loop */     \
  X(BCAST, 29)       /* driver/executor -> executor: a broadcast's piece */\
  X(CKPT_WRITE, 30)  /* driver -> executor: write your rows' checkpoint */ \
  X(CKPT_DONE, 31)   /* executor -> driver: the parts written, or why not */\
  X(BLOCK_KEYS, 32)  /* executor -> driver: the keys a block touched */

typedef enum orion_wire_type {
#define ORION__WIRE_TYPE_ENUM(name, code) ORION_WIRE_##name = (code),
  ORION_WIRE_TYPE_MAP(ORION__WIRE_TYPE_ENUM)
#undef ORION__WIRE_TYPE_ENUM
  ORION_WIRE_TYPE_END /* one past the last code */
} orion_wire_type;

/* True when type is one of ORION_WIRE_TYPE_MAP. */
int orion_wire_type_known(int type);
/* The type's name ("HELLO"), or "unknown" for any other value.  Static. */
const char *orion_wire_type_name(int type);

/* ------------------------------------------------------------------------
 * Framing (encoder side).  Every encoder appends one complete frame to an
 * orion_buf the caller owns, and returns 0, ORION_ENOMEM (the buffer's oom
 * flag is set; the buffer must be discarded), -EMSGSIZE (the payload would
 * exceed ORION_WIRE_MAX_FRAME; nothing was appended) or ORION_EINVAL (a
 * field out of its documented range; nothing was appended).  Passing a type
 * outside ORION_WIRE_TYPE_MAP is a programming error (orion_assert).
 * ---------------------------------------------------------------------- */

/* Appends a frame of `type` carrying payload[0..len) (payload may be NULL
 * when len is 0). */
int orion_wire_encode(orion_buf *b, int type, const void *payload,
                      size_t len);

/* For building a payload in place: orion_wire_begin appends a header and
 * returns its offset in b; the caller appends the payload to b; then
 * orion_wire_end(b, offset) fills in the length and appends the trailer.
 * On -EMSGSIZE, orion_wire_end removes the whole frame (b->len = offset). */
size_t orion_wire_begin(orion_buf *b, int type);
int orion_wire_end(orion_buf *b, size_t start);
/* orion_wire_end for a frame that only an orion_conn (dsm/net.h) sends:
 * such frames travel in records whose MAC covers them, and the decoders
 * there leave the CRC to it (orion_wire_decoder_mac_covered), so the
 * trailer is left 0 instead of computed over the frame.  A decoder that
 * checks CRCs refuses such a frame. */
int orion_wire_end_sealed(orion_buf *b, size_t start);

/* Low-level pieces for a sender that writes a frame from several buffers
 * (writev): the header for a payload of len bytes, the running CRC (start
 * with crc = 0 and feed the header, then each payload piece in order), and
 * the trailer holding the final CRC. */
void orion_wire_pack_header(unsigned char out[ORION_WIRE_HEADER_LEN],
                            int type, uint32_t len);
uint32_t orion_wire_crc(uint32_t crc, const void *p, size_t n);
void orion_wire_pack_trailer(unsigned char out[ORION_WIRE_TRAILER_LEN],
                             uint32_t crc);

/* ------------------------------------------------------------------------
 * Payloads.  Decoders take the payload bytes of a frame (frame->payload,
 * frame->len) and fill a struct whose pointers point INTO those bytes: the
 * struct is valid only while the payload is.  They check every length
 * against the bytes present and refuse trailing bytes; on failure they
 * return a negative code and fill err (when not NULL) with a message naming
 * the frame type and the field.
 * ---------------------------------------------------------------------- */

/* HELLO: u32 executor id, u16 address length (0..ORION_WIRE_ADDR_MAX), address bytes
 * ("host:port" the executor listens on for peers; empty when it does not
 * listen), u16 device length (0..ORION_WIRE_DEVICE_MAX), device bytes (the
 * GPU the executor opened, orion_gpu_describe's text; empty: none), u64
 * the device's memory and u64 what the executor may use of it (both 0
 * without a device). */
typedef struct orion_wire_hello {
  uint32_t executor;
  const char *addr;
  size_t addr_len;
  const char *device;
  size_t device_len;
  uint64_t gpu_total;
  uint64_t gpu_cap;
} orion_wire_hello;

int orion_wire_hello_encode(orion_buf *b, const orion_wire_hello *h);
/* Returns 0, ORION_ETRUNC or ORION_EPARSE. */
int orion_wire_hello_decode(const void *p, size_t n, orion_wire_hello *out,
                            orion_error *err);

/* HEARTBEAT: u32 executor id, u64 sequence number, u64 the sender's
 * monotonic clock in nanoseconds, u64 bytes the sender holds through the
 * allocation seam (orion_alloc_used); exactly 28 bytes. */
typedef struct orion_wire_heartbeat {
  uint32_t executor;
  uint64_t seq;
  uint64_t sent_ns;
  uint64_t mem_used;
} orion_wire_heartbeat;

int orion_wire_heartbeat_encode(orion_buf *b, const orion_wire_heartbeat *h);
/* Returns 0, ORION_ETRUNC or ORION_EPARSE. */
int orion_wire_heartbeat_decode(const void *p, size_t n,
                                orion_wire_heartbeat *out, orion_error *err);

/* ARRAY_DATA: a run of elements of an array, in bulk.
 *
 *   0        i64  array id
 *   8        u8   element type (orion_type: 0 f32, 1 f64, 2 i32, 3 i64)
 *   9        u8   ndims, 1..ORION_MAX_DIMS
 *   10       u16  reserved, 0
 *   12       u32  reserved, 0
 *   16       i64  dims[ndims], each > 0, product <= INT64_MAX
 *   16+8n    i64  first: row-major linear index of the first element
 *   24+8n    i64  count: number of elements, first + count <= product
 *   32+8n         count * size(type) bytes, the elements as they lie in
 *                 memory (little-endian; no per-element framing)
 *
 * The element bytes start at a multiple of 8 in the payload, and a
 * decoder's payload buffer comes from orion_malloc (16-byte aligned), so
 * out->data may be used in place as an array of the element type. */
typedef struct orion_wire_array {
  int64_t array_id;
  int type;  /* orion_type */
  int ndims;
  int64_t dims[ORION_MAX_DIMS];
  int64_t first;
  int64_t count;
  const void *data; /* count * size(type) bytes */
} orion_wire_array;

/* Appends a whole ARRAY_DATA frame, copying the element bytes. */
int orion_wire_array_encode(orion_buf *b, const orion_wire_array *a);
/* The zero-copy form: appends to `head` the frame header and the ARRAY_DATA
 * header, and fills `trailer` with the CRC over both and a->data; the
 * frame on the wire is then head's new bytes, the count * size bytes at
 * a->data, and the 4 trailer bytes, in that order.  a->data is read (to
 * compute the CRC), never copied or kept. */
int orion_wire_array_head(orion_buf *head,
                          unsigned char trailer[ORION_WIRE_TRAILER_LEN],
                          const orion_wire_array *a);
/* Returns 0, or ORION_ETRUNC, ORION_EPARSE, ORION_ETYPE, ORION_EDIMS,
 * ORION_EOVERFLOW or ORION_EKEYRANGE. */
int orion_wire_array_decode(const void *p, size_t n, orion_wire_array *out,
                            orion_error *err);

/* ------------------------------------------------------------------------
 * The incremental decoder.
 *
 * Usage, for each chunk p[0..n) read from the connection:
 *
 *   while (n > 0) {
 *     size_t used;
 *     int rc = orion_wire_decoder_feed(d, p, n, &used);
 *     p += used, n -= used;
 *     if (rc == ORION_WIRE_FRAME_READY)
 *       handle(orion_wire_decoder_frame(d));
 *     else if (rc < 0)
 *       close the connection, logging orion_wire_decoder_reason(d);
 *   }
 *
 * and orion_wire_decoder_finish(d) when the stream ends.  Chunks may split
 * frames anywhere, down to one byte.  The decoder copies only payload bytes,
 * into one buffer of the declared length allocated once the header has
 * passed every check (so a peer past the handshake can make it reserve up
 * to the limit; before, at most ORION_WIRE_HELLO_MAX).  Buffers up to 64 KiB
 * are reused; larger ones are freed with their frame.  It consumes at most
 * one frame per call so that the caller handles each frame before the next
 * one overwrites it.
 * ---------------------------------------------------------------------- */

/* What the first frame must be. */
typedef enum orion_wire_role {
  /* The accepting side: the first frame must be a HELLO; no HELLO after
   * it. */
  ORION_WIRE_ACCEPT = 1,
  /* The connecting side: the first frame must be a WELCOME. */
  ORION_WIRE_CONNECT = 2,
  /* No handshake (tests, tools replaying a capture): any valid frame. */
  ORION_WIRE_TRUSTED = 3
} orion_wire_role;

/* Why a decoder stopped, for callers that branch on it; the message says
 * more.  Each maps to the code listed. */
typedef enum orion_wire_fault {
  ORION_WIRE_OK = 0,
  ORION_WIRE_BAD_MAGIC,   /* ORION_EPARSE */
  ORION_WIRE_BAD_VERSION, /* ORION_EVERSION */
  ORION_WIRE_BAD_TYPE,    /* ORION_EPARSE */
  ORION_WIRE_BAD_FLAGS,   /* ORION_EPARSE */
  ORION_WIRE_OVERSIZED,   /* -EMSGSIZE */
  ORION_WIRE_TRUNCATED,   /* ORION_ETRUNC */
  ORION_WIRE_BAD_CRC,     /* ORION_ECHECKSUM */
  ORION_WIRE_HANDSHAKE,   /* -EPROTO: first frame not HELLO/WELCOME, or a
                             second HELLO */
  ORION_WIRE_BAD_HELLO,   /* ORION_EPARSE: the HELLO payload is malformed */
  ORION_WIRE_NOMEM        /* ORION_ENOMEM */
} orion_wire_fault;

/* Results of orion_wire_decoder_feed besides negative codes. */
#define ORION_WIRE_NEED_MORE 0
#define ORION_WIRE_FRAME_READY 1

/* A complete frame, owned by the decoder. */
typedef struct orion_wire_frame {
  int type;                     /* an orion_wire_type */
  int version;                  /* ORION_WIRE_VERSION */
  const unsigned char *payload; /* len bytes; never NULL */
  size_t len;
} orion_wire_frame;

/* The caller allocates the decoder (embed it in the connection) and treats
 * every field as private. */
typedef struct orion_wire_decoder {
  int role;
  int state;
  int handshaken; /* the first frame has been accepted */
  int fault;      /* an orion_wire_fault; sticky */
  uint32_t limit; /* payload limit after the handshake */
  unsigned char hdr[ORION_WIRE_HEADER_LEN];
  unsigned char trailer[ORION_WIRE_TRAILER_LEN];
  size_t have;    /* bytes of the current part (header/payload/trailer) */
  int type;       /* of the frame being read */
  uint32_t len;   /* its payload length */
  uint32_t crc;   /* running CRC of the frame being read */
  unsigned char *buf; /* payload buffer (orion_malloc) */
  size_t cap;
  uint64_t offset;      /* stream bytes consumed */
  uint64_t frame_start; /* stream offset of the current frame */
  uint64_t frames;      /* frames yielded */
  int mac_covered; /* orion_wire_decoder_mac_covered */
  orion_wire_frame frame;
  orion_error err;
} orion_wire_decoder;

/* Initialises d.  Returns 0 or ORION_EINVAL (an unknown role; d is then
 * unusable but safe to free).  Release with orion_wire_decoder_free. */
int orion_wire_decoder_init(orion_wire_decoder *d, orion_wire_role role);

/* Lowers the payload limit to max_payload (values above
 * ORION_WIRE_MAX_FRAME mean ORION_WIRE_MAX_FRAME).  A frame whose header
 * declares more is refused (ORION_WIRE_OVERSIZED) before any of its payload
 * is buffered. */
void orion_wire_decoder_set_limit(orion_wire_decoder *d, uint32_t max_payload);

/* Every byte d is fed from here on has passed a MAC that covers it, in
 * order and in full (dsm/sec.h's records, which refuse a changed,
 * dropped, reordered or injected record): the CRC-32C would only repeat
 * that check, so d no longer computes or checks it.  The frames keep their
 * trailers (the format is the same; a capture replayed without records is
 * checked as before). */
void orion_wire_decoder_mac_covered(orion_wire_decoder *d);

/* Consumes bytes from p[0..n) and stores how many in *used; stops right
 * after the first frame it completes.  Returns ORION_WIRE_FRAME_READY (the
 * frame is at orion_wire_decoder_frame until the next feed, take or free),
 * ORION_WIRE_NEED_MORE (*used == n), or a negative code: the decoder has
 * failed (for good: every later call returns the same code and consumes
 * nothing) and orion_wire_decoder_reason names the problem.  The previous
 * frame, if any, is released on entry. */
int orion_wire_decoder_feed(orion_wire_decoder *d, const void *p, size_t n,
                            size_t *used);

/* The frame just completed, or NULL when none is ready.  Owned by d. */
const orion_wire_frame *orion_wire_decoder_frame(const orion_wire_decoder *d);

/* Takes ownership of the ready frame's payload: returns it (free with
 * orion_free; NULL when the payload is empty) and its length in *len.  The
 * frame view is gone afterwards.  Use it to keep bulk data without a
 * copy. */
void *orion_wire_decoder_take(orion_wire_decoder *d, size_t *len);

/* The stream has ended.  Returns 0 when it ended between frames, else fails
 * the decoder with ORION_WIRE_TRUNCATED (ORION_ETRUNC) and returns that, or
 * the earlier failure's code. */
int orion_wire_decoder_finish(orion_wire_decoder *d);

/* Why the decoder failed ("" while it has not): one line for a log. */
const char *orion_wire_decoder_reason(const orion_wire_decoder *d);
/* The orion_wire_fault (ORION_WIRE_OK while it has not failed). */
int orion_wire_decoder_fault(const orion_wire_decoder *d);

/* Releases the payload buffer; d may be initialised again. */
void orion_wire_decoder_free(orion_wire_decoder *d);

#endif
