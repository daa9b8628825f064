/* The payload codec of the runtime's messages between the driver and the
 * executors (and between executors): one struct per message, an encoder
 * that appends a whole frame (dsm/wire.h) to a byte buffer, and a decoder
 * from the payload bytes of a frame.  Like the frame codec it never touches
 * a socket; both sides, the tests and the fuzzer drive it with plain bytes.
 *
 * Layout.  Every field is a little-endian 64-bit word: integers as two's
 * complement (i64, u64), doubles as their IEEE bits (f64); `str` and
 * `bytes` are a u64 length, then that many bytes; a flag is a u64 that is 0
 * or 1.  Each struct below lists its fields in wire order.  Ids (arrays,
 * blocks, buffers, accumulators, executors, loop runs) are i64.
 *
 * Encoders.  orion_msg_X_encode(b, m) appends one complete frame of X's
 * type to b and returns 0, ORION_ENOMEM (b->oom is set: discard b),
 * -EMSGSIZE (the payload would exceed ORION_WIRE_MAX_FRAME) or ORION_EINVAL
 * (a field outside its documented range, a NULL pointer with a nonzero
 * length or count, a negative count); on the last two nothing was appended.
 * Flags are written as 0 or 1 (any nonzero int is 1).  The encoders read m
 * and keep nothing.
 *
 * Decoders.  orion_msg_X_decode(p, n, out, err) reads the payload p[0..n)
 * of an X frame.  It checks every length and count against the bytes left
 * before it reads or allocates anything for them, and refuses trailing
 * bytes.  It returns 0, or ORION_ETRUNC (the payload ends early, or a count
 * needs more bytes than are left), ORION_EPARSE (a malformed field, trailing
 * bytes), ORION_ETYPE / ORION_EDIMS (an element type / a number of
 * dimensions out of range) or ORION_ENOMEM; on failure err (when not NULL)
 * names the message and the field, and *out is zeroed.
 *
 * Ownership, one rule for every message:
 *   - bulk parts (row data, keys, values, strings, blobs) are views: a
 *     pointer INTO the payload and a length, valid while the payload is;
 *   - lists of small records (segments, runs, ranges, array descriptors,
 *     accumulators, slots, chunks, items, ids) are arrays the decoder
 *     allocates (orion_malloc; NULL when the count is 0), at most a small
 *     multiple of the payload's size since every count was checked against
 *     the bytes left; orion_msg_X_free releases them (messages without
 *     lists have no _free).  _free is safe on a zeroed struct, on a struct
 *     a decoder failed on, and twice.
 * Senders fill the same structs with pointers to their own memory (nothing
 * is copied until the encoder appends it).
 *
 * Threads: no global state; any thread may use distinct buffers and
 * structs.
 */
#ifndef ORION_DSM_MSG_H
#define ORION_DSM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/loader.h"
#include "dsm/wire.h"
#include "util/buf.h"
#include "util/cbody.h"
#include "util/error.h"
#include "util/limits.h"

/* ------------------------------------------------------------------------
 * Records shared by several messages.
 * ---------------------------------------------------------------------- */

/* A run of elements of a dense array: i64 array, i64 first, i64 count,
 * bytes data: elements [first, first + count) in row-major order, at most
 * count * the element size bytes, a whole number of elements (the
 * receiver checks that against the array it holds); the elements past
 * the data are zero.  first and count are >= 0.
 *
 * esz is not sent: a sender sets it to the element size when data holds
 * all count elements, and the writer then leaves out every aligned
 * stretch of ORION_MSG_ZERO_GAP or more zero bytes, cutting the run in
 * two there (sparse rows, such as LDA's topic tables at large K, travel
 * as their non-zero parts).  0 (a decoded run, which may be short) sends
 * the run as it is. */
typedef struct orion_msg_run {
  int64_t array;
  int64_t first;
  int64_t count;
  const char *data;
  size_t len;
  size_t esz;
} orion_msg_run;

#define ORION_MSG_ZERO_GAP 64

/* Copies a decoded run into the dense array a (the one run->array names),
 * zeroing the elements past its data: ORION_EPARSE, changing nothing,
 * when the run lies outside a or its data is more than count elements of
 * a's type or not a whole number of them. */
int orion_msg_run_apply(orion_array *a, const orion_msg_run *run);
/* Writes run's count elements of esz bytes (its data, then zeros) to dst;
 * the caller has checked the run (as orion_msg_run_apply does). */
void orion_msg_run_copy(void *dst, const orion_msg_run *run, size_t esz);

/* A range of elements without data: i64 array, i64 first, i64 count
 * (both >= 0). */
typedef struct orion_msg_range {
  int64_t array;
  int64_t first;
  int64_t count;
} orion_msg_range;

/* Elements that move between executors: i64 array, i64 first, i64 count
 * (both >= 0), i64 peer (the executor they come from, in a RUN_BLOCK's
 * gets; the one they go to, in its puts and in SEND_ROWS), i64 block (the
 * block they are for at the receiver: they travel in a ROWS frame tagged
 * with it). */
typedef struct orion_msg_move {
  int64_t array;
  int64_t first;
  int64_t count;
  int64_t peer;
  int64_t block;
} orion_msg_move;

/* For senders that find runs one at a time: a growable array of them
 * (zero it to start; the runs point at the sender's memory). */
typedef struct orion_msg_runvec {
  orion_msg_run *v;
  int64_t n;
  int64_t cap;
} orion_msg_runvec;

/* Appends a run; returns 0 or ORION_ENOMEM (v unchanged). */
int orion_msg_runvec_push(orion_msg_runvec *v, int64_t array, int64_t first,
                          int64_t count, const void *data, size_t len);
/* Releases the array (not the runs' data); v is zeroed. */
void orion_msg_runvec_free(orion_msg_runvec *v);

/* ------------------------------------------------------------------------
 * LOAD_BODY (driver -> executor), before a loop's blocks.
 * ---------------------------------------------------------------------- */

/* Flags of a sharded array. */
#define ORION_SHARD_FETCH 1   /* the body reads it: refresh at blocks */
#define ORION_SHARD_WRITTEN 2 /* buffers write it during the run */
#define ORION_SHARD_DIRECT 4  /* the body writes it directly: each block
                                 sends the elements it changed to their
                                 owners (SHARD_WRITE) */
#define ORION_SHARD_CHAIN 8   /* read-only, and the whole array's stale
                                 rows come as BCAST frames (a chain from
                                 the driver through every executor): no
                                 FETCH; without this flag or FETCH, the
                                 receiver's copy is current already */

/* An array the body binds: i64 id, u64 type (orion_type), u64 sparse
 * (flag), u64 ndims (1..ORION_MAX_DIMS), i64 dims[ndims].  The one sparse
 * array is the iterated one: its blocks come with RUN_BLOCK. */
typedef struct orion_msg_array_desc {
  int64_t id;
  int type;
  int sparse;
  int ndims;
  int64_t dims[ORION_MAX_DIMS];
  int ragged; /* sparse and iterated by rows (dsm/ragged.h); on the wire
                 the array's kind is 0 dense, 1 sparse, 2 ragged */
} orion_msg_array_desc;

/* An accumulator: i64 id, i64 op (executor/accum.h's orion_acc_op). */
typedef struct orion_msg_acc_desc {
  int64_t id;
  int64_t op;
} orion_msg_acc_desc;

/* A buffer: i64 id, str name, i64 target (an array id), i64 op
 * (executor/exec.h's orion_apply_op), bytes apply (the captured apply function;
 * empty for none), i64 flush (ORION_FLUSH_BLOCK, ORION_FLUSH_LOOP,
 * ORION_FLUSH_MANAGED or n). */
typedef struct orion_msg_buf_desc {
  int64_t id;
  const char *name;
  size_t name_len;
  int64_t target;
  int64_t op;
  const char *apply;
  size_t apply_len;
  int64_t flush;
} orion_msg_buf_desc;

/* An array sharded across the executors in this run (dense, server-held,
 * listed among the arrays): i64 array, u64 flags (ORION_SHARD_* bits
 * only), u64 nruns, then the runs: the rows of the receiver's own chunks
 * that its copy lacks. */
typedef struct orion_msg_shard {
  int64_t array;
  int flags;
  const orion_msg_run *runs;
  int64_t nruns;
} orion_msg_shard;

/* Wire order: i64 loop (the loop id math.random is seeded with), bytes
 * blob (the captured body, executor/capture.h), i64 iter (the iterated array's
 * id), u64 narrays + arrays, u64 naccs + accs, u64 nbufs + bufs, i64 run
 * (this loop run's number; peers' frames carry it), u64 chash (the compiled
 * body's hash, 0: interpret the body), str csrc (its C source, or empty
 * when this executor was sent it before: executors keep the bodies they
 * built by hash), str cflags (the mode flags to compile it with), u64
 * required (flag: tier "c", a failure to compile is the loop's error), u64
 * nslots + slots (each u64 kind, i64 id, u64 isint (flag), i64 ival, f64
 * fval; the slot's name is not sent), u64 nshards + shards, u64 ngets +
 * moves (rows that come from peers as ROWS tagged with block -1, copied
 * into the executor's copies once the arrays are bound and before the
 * shards are set up: resident rows a sharded array's owner needs), then
 * (wire version 5) the device fields: u64 gpu (0 CPU only, 1 auto: on the
 * device when the executor has one, 2 required: tier "gpu"), u64 gkind
 * (executor/gpugrid.h's orion_gpugrid_kind), i64 gspace, i64 gtime (0-based
 * key dims, -1 unused), i64 gskew_dim (-1 none), i64 gskew, i64 gb (the grid
 * size, opts.gpu_grid; 0 the default from the block's size).  The device
 * body is built from csrc, so gpu != 0 needs chash != 0.  Wire version 6
 * appends f64 bandwidth_mbps: the budget of the managed buffers' early
 * sends in megabits per second (--bandwidth-mbps; 0: the executor's
 * measured link rate).  Wire version 8 appends f64 timeout: the seconds a
 * block may run (opts.timeout, --loop-timeout; 0 none, at most
 * ORION_MSG_TIMEOUT_MAX).  Wire version 13 appends i64 blob_chained: the
 * length of a body that comes in BCAST frames of array ORION_BCAST_BODY
 * instead (scheduler/dist_chain.c; at most ORION_MSG_BODY_MAX, and then blob is
 * empty), 0 when the blob is inline.  Wire version 14 appends u64 nguards
 * + guards, the runtime guard (executor/exec.h's orion_exec_guard_array): each
 * i64 array (one of the arrays above) and str placement (the plan's
 * placement as messages name it, 1 to ORION_MSG_GUARD_MAX bytes): arrays
 * the body must not write directly.  Wire version 15 appends i64 verify:
 * 0, or orion-driver --verify's recording mode (ORION_MSG_VERIFY_KEYS:
 * record the keys each block reads and writes and send them in BLOCK_KEYS
 * before its BLOCK_DONE; ORION_MSG_VERIFY_ORDER: also the first and last
 * element that touched each, for an ordered loop).  Wire version 17: the
 * blob may hold integer lists in executor/capture.c's compact form.  Wire
 * version 22 appends bytes bdigest (empty, or the ORION_BODY_DIGEST bytes
 * of dsm/bodycache.h's digest of the whole body: the executor keeps the
 * body under it), bytes bbase (empty, or the digest of a body the
 * executor holds: then blob is a patch of it), u64 bprefix and u64
 * bsuffix: the body is bbase's first bprefix bytes, then blob, then
 * bbase's last bsuffix bytes.  A body the executor holds goes as bbase =
 * bdigest, bprefix its length, bsuffix 0 and no blob.  bbase needs
 * bdigest and an inline body; a chained body is not kept. */
#define ORION_MSG_VERIFY_KEYS 1
#define ORION_MSG_VERIFY_ORDER 2
#define ORION_MSG_GUARD_MAX 159
typedef struct orion_msg_guard {
  int64_t array;
  const char *placement;
  size_t placement_len;
} orion_msg_guard;
#define ORION_MSG_TIMEOUT_MAX 1e9
#define ORION_MSG_BODY_MAX ((int64_t)1 << 40)
/* BCAST frames of this "array" carry a chained body's bytes: run first and
 * count are byte offsets into it. */
#define ORION_BCAST_BODY (-1)
typedef struct orion_msg_load_body {
  int64_t loop;
  const char *blob;
  size_t blob_len;
  int64_t iter;
  const orion_msg_array_desc *arrays;
  int64_t narrays;
  const orion_msg_acc_desc *accs;
  int64_t naccs;
  const orion_msg_buf_desc *bufs;
  int64_t nbufs;
  int64_t run;
  uint64_t chash;
  const char *csrc;
  size_t csrc_len;
  const char *cflags;
  size_t cflags_len;
  int required;
  const orion_cslot *slots; /* name NULL when decoded */
  int64_t nslots;
  const orion_msg_shard *shards;
  int64_t nshards;
  const orion_msg_move *gets;
  int64_t ngets;
  int gpu;
  int gkind;
  int64_t gspace, gtime, gskew_dim, gskew, gb;
  double bandwidth_mbps;
  double timeout;
  int64_t blob_chained;
  const orion_msg_guard *guards;
  int64_t nguards;
  int64_t verify;
  const unsigned char *bdigest; /* NULL or ORION_BODY_DIGEST bytes */
  const unsigned char *bbase;   /* NULL or ORION_BODY_DIGEST bytes */
  uint64_t bprefix, bsuffix;
} orion_msg_load_body;

int orion_msg_load_body_encode(orion_buf *b, const orion_msg_load_body *m);
int orion_msg_load_body_decode(const void *p, size_t n,
                               orion_msg_load_body *out, orion_error *err);
void orion_msg_load_body_free(orion_msg_load_body *m);

/* ------------------------------------------------------------------------
 * RUN_BLOCK (driver -> executor): run one block.
 * ---------------------------------------------------------------------- */

/* Element positions [lo, hi) of the iterated array: of the block's own
 * elements when it is sparse, of the whole array when it is dense. */
typedef struct orion_msg_seg {
  int64_t lo;
  int64_t hi;
} orion_msg_seg;

/* Wire order: i64 block, u64 seed, i64 nblocks, u64 nsegs + segs (i64 lo,
 * i64 hi each), u64 has_elems (flag); when 1: i64 nelems (>= 0), bytes keys
 * (nelems * ndims i64), bytes values (the sparse iterated block's elements;
 * otherwise the executor keeps the copy it was sent before); u64 nruns +
 * runs (data for the executor's copies of dense arrays); u64 nwatch +
 * ranges (the elements the block may write directly: compared after the
 * block); u64
 * ngets + moves (elements that come from peers in ROWS frames tagged with
 * this block: the block waits for them); u64 nputs + moves (elements the
 * executor sends to peers once the block is done, before its BLOCK_DONE);
 * i64 first (the position of the block's first element in the driver's
 * sparse iterated array: ROWS_PULL names the block's values by it; 0 when
 * dense), u64 keep (flag: the executor keeps the block's new values, and
 * its BLOCK_DONE says only that they changed, scheduler/dist_resid.c);
 * i64 space and i64 time (wire version 21): the block's space and
 * time part when the executor may run it before blocks that came earlier
 * (executor/exec_order.c: none of those shares a part with it, and its
 * gets are in), or -1 and -1: in the order it came; u64 late (flag,
 * wire version 24): the driver sent the executor every block of the loop
 * at its start and waits for no report to send more, so the block's
 * BLOCK_DONE may go with the next ones' (executor/exec_late.c). */
typedef struct orion_msg_run_block {
  int64_t block;
  uint64_t seed;
  int64_t nblocks;
  const orion_msg_seg *segs;
  int64_t nsegs;
  int has_elems;
  int64_t nelems;
  const char *keys;
  size_t keys_len;
  const char *values;
  size_t values_len;
  const orion_msg_run *runs;
  int64_t nruns;
  const orion_msg_range *watch;
  int64_t nwatch;
  const orion_msg_move *gets;
  int64_t ngets;
  const orion_msg_move *puts;
  int64_t nputs;
  int64_t first;
  int keep;
  int64_t space, time; /* -1: in order (wire version 21) */
  int late;             /* the report may wait (wire version 24) */
} orion_msg_run_block;

int orion_msg_run_block_encode(orion_buf *b, const orion_msg_run_block *m);
int orion_msg_run_block_decode(const void *p, size_t n,
                               orion_msg_run_block *out, orion_error *err);
void orion_msg_run_block_free(orion_msg_run_block *m);

/* ------------------------------------------------------------------------
 * BLOCK_DONE (executor -> driver): a block finished.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 block, f64 seconds, f64 wait_seconds (of them, waiting
 * for data: peers' rows, owners' shards), u64 has_values (flag); when 1: bytes
 * values (the sparse block's values, which the body changed); u64 nruns +
 * runs (the elements of dense arrays that changed); u64 kept (flag: the
 * sparse block's values changed and stay with the executor, as RUN_BLOCK's
 * keep asked; has_values is then 0). */
typedef struct orion_msg_block_done {
  int64_t block;
  double seconds;
  int has_values;
  const char *values;
  size_t values_len;
  const orion_msg_run *runs;
  int64_t nruns;
  double wait_seconds;
  int kept;
} orion_msg_block_done;

int orion_msg_block_done_encode(orion_buf *b, const orion_msg_block_done *m);
int orion_msg_block_done_decode(const void *p, size_t n,
                                orion_msg_block_done *out, orion_error *err);
void orion_msg_block_done_free(orion_msg_block_done *m);

/* ------------------------------------------------------------------------
 * BLOCK_KEYS (executor -> driver, orion-driver --verify): the keys a block
 * read and wrote directly, sent before its BLOCK_DONE.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 block, u64 nsrcs + srcs (str each: a source name as Lua
 * prints it, 1 to ORION_MSG_KEYSRC_MAX bytes), u64 nranges + ranges: i64
 * array, i64 lo, i64 hi (the elements lo..hi-1, 0 <= lo < hi), i64 flags
 * (ORION_KEY_READ | ORION_KEY_WRITE, not 0), i64 rline, i64 rsrc, i64
 * wline, i64 wsrc (the first access of each kind: line >= 0, 0 when none,
 * and its source's index in srcs), i64 rfirst, rlast, wfirst, wlast (the
 * first and last element, as a rank in key order, that read / wrote them;
 * -1 when not recorded).  Every element of a range has the same values. */
#define ORION_KEY_READ 1
#define ORION_KEY_WRITE 2
#define ORION_MSG_KEYSRC_MAX 255
typedef struct orion_msg_key_range {
  int64_t array, lo, hi, flags;
  int64_t rline, rsrc, wline, wsrc;
  int64_t rfirst, rlast, wfirst, wlast;
} orion_msg_key_range;
typedef struct orion_msg_keysrc {
  const char *s;
  size_t len;
} orion_msg_keysrc;
typedef struct orion_msg_block_keys {
  int64_t block;
  const orion_msg_keysrc *srcs;
  int64_t nsrcs;
  const orion_msg_key_range *ranges;
  int64_t nranges;
} orion_msg_block_keys;

int orion_msg_block_keys_encode(orion_buf *b, const orion_msg_block_keys *m);
int orion_msg_block_keys_decode(const void *p, size_t n,
                                orion_msg_block_keys *out, orion_error *err);
void orion_msg_block_keys_free(orion_msg_block_keys *m);

/* ------------------------------------------------------------------------
 * BUFFER_FLUSH (executor -> driver, or executor -> the owning executor for
 * a sharded target): buffered writes for their owner.
 * ---------------------------------------------------------------------- */

/* A pending buffered write: the element's linear key in the target and its
 * value (the integer for i32/i64 targets, the float otherwise); the value
 * travels as its 64 bits.  dsm/wbuf.h's orion_pend_item is this type, so
 * decoded items go to a buffer's store as they are. */
typedef union orion_msg_value {
  int64_t i;
  double d;
} orion_msg_value;

typedef struct orion_msg_item {
  int64_t key;
  orion_msg_value val;
} orion_msg_item;

/* Wire order: i64 run, i64 buffer, u64 isint (flag), i64 block, the
 * items.  The items (they end the payload): u64
 * n, u64 nruns, then either (nruns 0) n times i64 key, u64 value bits, or
 * nruns times i64 first key (>= 0), u64 count (>= 1), then the n value bits
 * in item order, the runs' counts summing to n.  Consecutive keys (the
 * dense ranges nn.add_to writes) so cost 8 bytes an item instead of 16; the
 * encoder picks the runs form when there are fewer than n / 2 runs.  The
 * nruns word's top bit set (the count is the other 63 bits) says each
 * value is 4 bytes instead of 8: an i32 (isint) or a float's bits, which
 * the encoder picks when every value survives it unchanged (integers
 * that fit an i32; doubles that are exactly a float, as an f32 target's
 * compiled body writes them), so an f32 or i32 buffer's runs cost 4 bytes
 * an item and the decoded values are the same bits.  A
 * decoded list re-encodes to the same items, not always to the same bytes
 * (a runs form the encoder would not have picked comes back plain). */
typedef struct orion_msg_buffer_flush {
  int64_t run;
  int64_t buffer;
  int isint;
  const orion_msg_item *items;
  int64_t nitems;
  int64_t block; /* the block whose writes these are, for
                    a flush = "loop" buffer (applied in block order once
                    every block's are in); -1: apply them now */
} orion_msg_buffer_flush;

int orion_msg_buffer_flush_encode(orion_buf *b,
                                  const orion_msg_buffer_flush *m);
int orion_msg_buffer_flush_decode(const void *p, size_t n,
                                  orion_msg_buffer_flush *out,
                                  orion_error *err);
void orion_msg_buffer_flush_free(orion_msg_buffer_flush *m);

/* ------------------------------------------------------------------------
 * FLUSH_ACK (owner -> executor): the BUFFER_FLUSH of run `run` is applied.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 run. */
typedef struct orion_msg_flush_ack {
  int64_t run;
} orion_msg_flush_ack;

int orion_msg_flush_ack_encode(orion_buf *b, const orion_msg_flush_ack *m);
int orion_msg_flush_ack_decode(const void *p, size_t n,
                               orion_msg_flush_ack *out, orion_error *err);

/* ------------------------------------------------------------------------
 * FETCH (executor -> owner): the owner's chunks of a sharded array.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 run, i64 array, i64 chunk_lo, i64 chunk_hi (chunk_lo <=
 * chunk_hi), then per chunk of [chunk_lo, chunk_hi) the u64 version the
 * requester holds (0: none): versions[k] is chunk chunk_lo + k's. */
typedef struct orion_msg_fetch {
  int64_t run;
  int64_t array;
  int64_t chunk_lo;
  int64_t chunk_hi;
  const uint64_t *versions;
} orion_msg_fetch;

int orion_msg_fetch_encode(orion_buf *b, const orion_msg_fetch *m);
int orion_msg_fetch_decode(const void *p, size_t n, orion_msg_fetch *out,
                           orion_error *err);
void orion_msg_fetch_free(orion_msg_fetch *m);

/* ------------------------------------------------------------------------
 * FETCH_REPLY (owner -> executor): the chunks whose version differs.
 * ---------------------------------------------------------------------- */

/* A chunk's rows: i64 chunk, u64 version, i64 row (the first row of data
 * within the chunk: 0 for a whole chunk), bytes rows. */
typedef struct orion_msg_chunk {
  int64_t chunk;
  uint64_t version;
  const char *data;
  size_t len;
  int64_t row;
} orion_msg_chunk;

/* Wire order: i64 array, u64 nchunks + chunks, u64 applied.  applied:
 * how many of the requester's BUFFER_FLUSHes applied at once (not held
 * for the loop's end) the owner has taken in, over the job; the chunks
 * include exactly those, so the requester re-applies its later ones to
 * them (read-your-writes, executor/exec_ryw.c). */
typedef struct orion_msg_fetch_reply {
  int64_t array;
  const orion_msg_chunk *chunks;
  int64_t nchunks;
  uint64_t applied;
} orion_msg_fetch_reply;

int orion_msg_fetch_reply_encode(orion_buf *b, const orion_msg_fetch_reply *m);
int orion_msg_fetch_reply_decode(const void *p, size_t n,
                                 orion_msg_fetch_reply *out, orion_error *err);
void orion_msg_fetch_reply_free(orion_msg_fetch_reply *m);

/* ------------------------------------------------------------------------
 * PEERS (driver -> executor, once, before any loop).
 * ---------------------------------------------------------------------- */

/* A string view. */
typedef struct orion_msg_str {
  const char *p;
  size_t len;
} orion_msg_str;

/* Wire order: u64 n, then per executor str "host:port" where it listens
 * for peers. */
typedef struct orion_msg_peers {
  const orion_msg_str *addrs;
  int64_t n;
} orion_msg_peers;

int orion_msg_peers_encode(orion_buf *b, const orion_msg_peers *m);
int orion_msg_peers_decode(const void *p, size_t n, orion_msg_peers *out,
                           orion_error *err);
void orion_msg_peers_free(orion_msg_peers *m);

/* ------------------------------------------------------------------------
 * SHARD_PULL (driver -> executor, after LOOP_DONE): apply the loop's held
 * buffered writes, then send back the changes of your shards (keep = 0),
 * or only which elements changed, keeping them (keep = 1: the driver asks
 * for them with ROWS_PULL when the script reads the array, and the next
 * loop that shards it alike finds them where they are).
 * ---------------------------------------------------------------------- */

/* Wire order: u64 keep (0 or 1). */
typedef struct orion_msg_shard_pull {
  int keep;
} orion_msg_shard_pull;

int orion_msg_shard_pull_encode(orion_buf *b, const orion_msg_shard_pull *m);
int orion_msg_shard_pull_decode(const void *p, size_t n,
                                orion_msg_shard_pull *out, orion_error *err);

/* ------------------------------------------------------------------------
 * SHARD_DATA (executor -> driver): the elements of its shards that changed
 * during the run (runs, with their values), or, answering a SHARD_PULL
 * with keep, only their ranges (kept: the executor holds them).
 * ---------------------------------------------------------------------- */

/* Wire order: u64 nruns + runs, u64 nkept + ranges. */
typedef struct orion_msg_shard_data {
  const orion_msg_run *runs;
  int64_t nruns;
  const orion_msg_range *kept;
  int64_t nkept;
} orion_msg_shard_data;

int orion_msg_shard_data_encode(orion_buf *b, const orion_msg_shard_data *m);
int orion_msg_shard_data_decode(const void *p, size_t n,
                                orion_msg_shard_data *out, orion_error *err);
void orion_msg_shard_data_free(orion_msg_shard_data *m);

/* ------------------------------------------------------------------------
 * Resident rows (dsm/msg_move.c): SEND_ROWS (driver -> executor): send
 * these elements of your copies to the peers named, now, each as a ROWS
 * frame tagged with the run and the move's block.  ROWS (executor ->
 * executor): elements for the receiver's block `block` of run `run`.
 * ROWS_PULL (driver -> executor): send these elements of your copies back
 * (ROWS_DATA, with run 0 and block -1), for the script to read.
 * MOVE_ROWS (driver -> executor): SEND_ROWS's payload, for a block placed
 * during the run (dynamic assignment): the executor's loop thread sends
 * the rows at once, not after the blocks it has queued.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 run, u64 n + moves. */
typedef struct orion_msg_send_rows {
  int64_t run;
  const orion_msg_move *moves;
  int64_t n;
} orion_msg_send_rows;

int orion_msg_send_rows_encode(orion_buf *b, const orion_msg_send_rows *m);
int orion_msg_send_rows_decode(const void *p, size_t n,
                               orion_msg_send_rows *out, orion_error *err);
void orion_msg_send_rows_free(orion_msg_send_rows *m);

typedef orion_msg_send_rows orion_msg_move_rows;
int orion_msg_move_rows_encode(orion_buf *b, const orion_msg_move_rows *m);
int orion_msg_move_rows_decode(const void *p, size_t n,
                               orion_msg_move_rows *out, orion_error *err);
void orion_msg_move_rows_free(orion_msg_move_rows *m);

/* ROWS and ROWS_DATA; wire order: i64 run, i64 block, u64 nruns + runs. */
typedef struct orion_msg_rows {
  int64_t run;
  int64_t block;
  const orion_msg_run *runs;
  int64_t nruns;
} orion_msg_rows;

int orion_msg_rows_encode(orion_buf *b, const orion_msg_rows *m);
/* The same frame with its CRC left to the records' MAC, for a frame that
 * an orion_conn sends (orion_wire_end_sealed): an executor's rows to a
 * peer. */
int orion_msg_rows_encode_sealed(orion_buf *b, const orion_msg_rows *m);
int orion_msg_rows_decode(const void *p, size_t n, orion_msg_rows *out,
                          orion_error *err);
void orion_msg_rows_free(orion_msg_rows *m);
int orion_msg_rows_data_encode(orion_buf *b, const orion_msg_rows *m);
int orion_msg_rows_data_decode(const void *p, size_t n, orion_msg_rows *out,
                               orion_error *err);
void orion_msg_rows_data_free(orion_msg_rows *m);

/* SHARD_WRITE (executor -> owner): the elements of the owner's chunks of a
 * directly written sharded array (ORION_SHARD_DIRECT) that a block of run
 * `run` changed; the owner applies them, publishes them and answers
 * WRITE_ACK (i64 run) before the writer reports its block done.  Wire
 * order: i64 run, u64 nruns + runs. */
typedef struct orion_msg_shard_write {
  int64_t run;
  const orion_msg_run *runs;
  int64_t nruns;
} orion_msg_shard_write;

int orion_msg_shard_write_encode(orion_buf *b, const orion_msg_shard_write *m);
int orion_msg_shard_write_decode(const void *p, size_t n,
                                 orion_msg_shard_write *out, orion_error *err);
void orion_msg_shard_write_free(orion_msg_shard_write *m);

typedef struct orion_msg_write_ack {
  int64_t run;
} orion_msg_write_ack;

int orion_msg_write_ack_encode(orion_buf *b, const orion_msg_write_ack *m);
int orion_msg_write_ack_decode(const void *p, size_t n,
                               orion_msg_write_ack *out, orion_error *err);

/* Wire order: u64 n + ranges. */
typedef struct orion_msg_rows_pull {
  const orion_msg_range *ranges;
  int64_t n;
} orion_msg_rows_pull;

int orion_msg_rows_pull_encode(orion_buf *b, const orion_msg_rows_pull *m);
int orion_msg_rows_pull_decode(const void *p, size_t n,
                               orion_msg_rows_pull *out, orion_error *err);
void orion_msg_rows_pull_free(orion_msg_rows_pull *m);

/* ------------------------------------------------------------------------
 * Checkpoints (dsm/msg_ckpt.c, issue 19).  CKPT_WRITE (driver ->
 * executor): write these elements of your copies (whole rows of dense
 * arrays, which this executor holds the newest copy of) as checkpoint
 * parts into `folder` (an absolute path the driver made; each part a file
 * named by dsm/ckpt.h's orion_ckpt_part_name), for the checkpoint of step
 * `step`.  Wire order: i64 step, bytes folder (1..4095 bytes, no NUL),
 * u64 n + ranges.  CKPT_DONE (executor -> driver): the answer, the parts
 * in the order asked with their file's size and CRC-32, or an error
 * message (then no parts).  Wire order: i64 step, bytes error (0..1023),
 * u64 n + parts (i64 array, i64 first, i64 count, u64 size, u64 crc
 * < 2^32).
 * ---------------------------------------------------------------------- */
typedef struct orion_msg_ckpt_write {
  int64_t step;
  const char *folder;
  size_t folder_len;
  const orion_msg_range *ranges;
  int64_t n;
} orion_msg_ckpt_write;

int orion_msg_ckpt_write_encode(orion_buf *b, const orion_msg_ckpt_write *m);
int orion_msg_ckpt_write_decode(const void *p, size_t n,
                                orion_msg_ckpt_write *out, orion_error *err);
void orion_msg_ckpt_write_free(orion_msg_ckpt_write *m);

typedef struct orion_msg_ckpt_part {
  int64_t array;
  int64_t first;
  int64_t count;
  uint64_t size;
  uint32_t crc;
} orion_msg_ckpt_part;

typedef struct orion_msg_ckpt_done {
  int64_t step;
  const char *error; /* "" (error_len 0): written */
  size_t error_len;
  const orion_msg_ckpt_part *parts;
  int64_t n;
} orion_msg_ckpt_done;

int orion_msg_ckpt_done_encode(orion_buf *b, const orion_msg_ckpt_done *m);
int orion_msg_ckpt_done_decode(const void *p, size_t n,
                               orion_msg_ckpt_done *out, orion_error *err);
void orion_msg_ckpt_done_free(orion_msg_ckpt_done *m);

/* ------------------------------------------------------------------------
 * BCAST (dsm/msg_chain.c): one piece of a broadcast of a read-only sharded
 * array (ORION_SHARD_CHAIN), from the driver or from the executor before
 * the receiver in the chain.  Wire order: i64 run, i64 array, u64 forward
 * (flag: pass the frame on, unchanged, to executor id + 1 when there is
 * one), i64 index (0 .. nframes - 1), i64 nframes (>= 1, the same in every
 * piece), u64 nruns + runs (elements of `array`, current at the driver).
 * ---------------------------------------------------------------------- */
typedef struct orion_msg_bcast {
  int64_t run;
  int64_t array;
  int forward;
  int64_t index;
  int64_t nframes;
  const orion_msg_run *runs;
  int64_t nruns;
} orion_msg_bcast;

int orion_msg_bcast_encode(orion_buf *b, const orion_msg_bcast *m);
int orion_msg_bcast_decode(const void *p, size_t n, orion_msg_bcast *out,
                           orion_error *err);
void orion_msg_bcast_free(orion_msg_bcast *m);

/* ------------------------------------------------------------------------
 * LOOP_END (driver -> executor): the loop's last block is sent.
 * ---------------------------------------------------------------------- */

/* Wire order: u64 abort (flag: drop pending writes). */
typedef struct orion_msg_loop_end {
  int abort;
} orion_msg_loop_end;

int orion_msg_loop_end_encode(orion_buf *b, const orion_msg_loop_end *m);
int orion_msg_loop_end_decode(const void *p, size_t n, orion_msg_loop_end *out,
                              orion_error *err);

/* ------------------------------------------------------------------------
 * LOOP_DONE (executor -> driver): accumulators; the loop is finished here.
 * ---------------------------------------------------------------------- */

/* One block's partial of an accumulator: i64 block (-1: folded outside
 * any block), i64 id, u64 has (flag: any value folded in), u64 isint
 * (flag), i64 i, f64 d (executor/accum.h's orion_accval). */
typedef struct orion_msg_acc_value {
  int64_t block; /* the block whose partial this is; -1: none */
  int64_t id;
  int has;
  int isint;
  int64_t i;
  double d;
} orion_msg_acc_value;

/* Wire order: u64 naccs + accs (one per block run here and accumulator
 * that got a value), u64 peer_bytes (bytes sent to peers,
 * framing included: executor/exec_peer.c says which side counts what) and
 * u64 shard_items (buffered writes applied to own shards) since the last
 * LOOP_DONE, f64 compute_seconds, f64 wait_seconds and f64 idle_seconds
 * (the loop's time on this executor, from its LOAD_BODY to this LOOP_DONE:
 * running blocks, blocked on data from peers, neither).  (Wire version 3
 * had no seconds, and ended with the runs of deferred arrays, which since
 * stay on the executors: scheduler/dist_resid.c.)  Wire version 5 appends u64
 * gpu_blocks: the blocks this executor ran on its device in the loop.
 * Wire version 6 appends the managed buffers' early sends in the loop
 * (executor/exec_managed.h): u64 managed_bytes, u64 managed_items and f64
 * managed_staleness (the sum over those items of their staleness in
 * blocks).  Wire version 19 appends u64 reordered: the loop's blocks this
 * executor started before a block that came earlier (executor/exec_order.c).
 * Wire version 24 appends, from LOAD_BODY to this LOOP_DONE: f64
 * cpu_seconds (the executor process's CPU seconds, every thread), f64
 * exch_cpu_seconds (the exchange's: the loop thread's, which does every
 * socket's I/O, and the compute thread's moving bytes between hosts:
 * shard fetches and writes, rows handed over), f64 net_cpu_seconds (of
 * those, the loop thread's), f64 body_cpu_seconds and
 * f64 body_seconds (the compute thread's CPU and wall seconds inside the
 * blocks' bodies): issue 35's model, scheduler/sim.h's
 * exch_elems_per_byte. */
typedef struct orion_msg_loop_done {
  const orion_msg_acc_value *accs;
  int64_t naccs;
  uint64_t peer_bytes;
  uint64_t shard_items;
  double compute_seconds;
  double wait_seconds;
  double idle_seconds;
  uint64_t gpu_blocks;
  uint64_t managed_bytes;
  uint64_t managed_items;
  double managed_staleness;
  uint64_t reordered;
  double cpu_seconds;
  double exch_cpu_seconds;
  double net_cpu_seconds;
  double body_cpu_seconds;
  double body_seconds;
} orion_msg_loop_done;

int orion_msg_loop_done_encode(orion_buf *b, const orion_msg_loop_done *m);
int orion_msg_loop_done_decode(const void *p, size_t n,
                               orion_msg_loop_done *out, orion_error *err);
void orion_msg_loop_done_free(orion_msg_loop_done *m);

/* ------------------------------------------------------------------------
 * BODY_ERROR (executor -> driver): a body or a flush raised an error.
 * ---------------------------------------------------------------------- */

/* Wire order: i64 executor, i64 block (the failed block's id; -1 for an
 * error outside a block), str message (names the executor and the element
 * and carries the traceback).  (Wire version 2 sent the block as decimal
 * text in a key string.) */
typedef struct orion_msg_body_error {
  int64_t executor;
  int64_t block;
  const char *msg;
  size_t msg_len;
} orion_msg_body_error;

int orion_msg_body_error_encode(orion_buf *b, const orion_msg_body_error *m);
int orion_msg_body_error_decode(const void *p, size_t n,
                                orion_msg_body_error *out, orion_error *err);

/* ------------------------------------------------------------------------
 * FORGET (driver -> executor): drop cached arrays.
 * ---------------------------------------------------------------------- */

/* Wire order: u64 n, then n i64 array ids. */
typedef struct orion_msg_forget {
  const int64_t *ids;
  int64_t n;
} orion_msg_forget;

int orion_msg_forget_encode(orion_buf *b, const orion_msg_forget *m);
int orion_msg_forget_decode(const void *p, size_t n, orion_msg_forget *out,
                            orion_error *err);
void orion_msg_forget_free(orion_msg_forget *m);

/* ------------------------------------------------------------------------
 * LOAD_FILE (driver -> executor): parse a byte range of a file.
 * ---------------------------------------------------------------------- */

/* Wire order: str path, i64 part, i64 nparts, then the orion_load_opts
 * fields as i64: format, index_base, nkeys, have_dims,
 * dims[ORION_MAX_DIMS], value_type, skip_errors, sep, header, ncols_key,
 * key_cols[ORION_MAX_DIMS], value_col (each must fit its C type; `expand`
 * is not sent and decodes as 0), then bytes digest (empty, or
 * ORION_MSG_LOAD_DIGEST bytes) and u64 held_only (flag).  The executor
 * reads the whole (decompressed) file and parses the lines starting in
 * bytes [len * part / nparts, len * (part + 1) / nparts).  A digest (an
 * --elastic driver's: dsm/pload.h) names the load: the executor keeps its
 * answer under it (executor/exec_kept.h) and answers the same digest
 * later from that copy; held_only asks for the kept copy only (LOADED
 * not_held when there is none). */
#define ORION_MSG_LOAD_DIGEST 32
typedef struct orion_msg_load_file {
  const char *path;
  size_t path_len;
  int64_t part;
  int64_t nparts;
  orion_load_opts opts;
  const char *digest; /* NULL (len 0) or ORION_MSG_LOAD_DIGEST bytes */
  size_t digest_len;
  int held_only;
} orion_msg_load_file;

int orion_msg_load_file_encode(orion_buf *b, const orion_msg_load_file *m);
int orion_msg_load_file_decode(const void *p, size_t n,
                               orion_msg_load_file *out, orion_error *err);

/* ------------------------------------------------------------------------
 * LOADED (executor -> driver): the elements of that range.
 * ---------------------------------------------------------------------- */

/* An array: u64 type (orion_type), u64 ndims (1..ORION_MAX_DIMS), i64
 * dims[ndims], i64 nnz (>= 0), bytes keys (nnz * ndims i64; empty for a
 * dense array), bytes values (nnz elements). */
typedef struct orion_msg_loaded_array {
  int type;
  int ndims;
  int64_t dims[ORION_MAX_DIMS];
  int64_t nnz;
  const char *keys;
  size_t keys_len;
  const char *values;
  size_t values_len;
} orion_msg_loaded_array;

/* Wire order: u64 ok (flag); when 0: str message; when 1: the elements
 * (array), u64 has_labels (flag) [, the labels (array)], i64 row_lo, i64
 * lines, i64 skipped, str first_skip; then either way i64 part and bytes
 * digest (the LOAD_FILE's, echoed) and u64 not_held (flag: ok is 0, and
 * the executor keeps no copy of that load, answering held_only). */
typedef struct orion_msg_loaded {
  int64_t part;
  const char *digest;
  size_t digest_len;
  int not_held;
  int ok;
  const char *msg;
  size_t msg_len;
  orion_msg_loaded_array array;
  int has_labels;
  orion_msg_loaded_array labels;
  int64_t row_lo;
  int64_t lines;
  int64_t skipped;
  const char *first_skip;
  size_t first_skip_len;
} orion_msg_loaded;

int orion_msg_loaded_encode(orion_buf *b, const orion_msg_loaded *m);
int orion_msg_loaded_decode(const void *p, size_t n, orion_msg_loaded *out,
                            orion_error *err);

/* ------------------------------------------------------------------------
 * SHUTDOWN (driver -> executor): the job ends; the executor exits.
 * ---------------------------------------------------------------------- */

/* Wire order: str reason: empty when the job ended normally, else why the
 * driver ends it (a cluster failure's message, at most
 * ORION_MSG_SHUTDOWN_REASON_MAX bytes), which the executor prints. */
#define ORION_MSG_SHUTDOWN_REASON_MAX 4096
typedef struct orion_msg_shutdown {
  const char *reason;
  size_t len;
} orion_msg_shutdown;

int orion_msg_shutdown_encode(orion_buf *b, const orion_msg_shutdown *m);
int orion_msg_shutdown_decode(const void *p, size_t n, orion_msg_shutdown *out,
                              orion_error *err);

/* ------------------------------------------------------------------------
 * Any message by its frame type (the fuzzer, tools, a fake transport).
 * ---------------------------------------------------------------------- */

typedef union orion_msg {
  orion_msg_load_body load_body;
  orion_msg_run_block run_block;
  orion_msg_block_done block_done;
  orion_msg_buffer_flush buffer_flush;
  orion_msg_flush_ack flush_ack;
  orion_msg_fetch fetch;
  orion_msg_fetch_reply fetch_reply;
  orion_msg_peers peers;
  orion_msg_shard_pull shard_pull;
  orion_msg_shard_data shard_data;
  orion_msg_send_rows send_rows;
  orion_msg_move_rows move_rows;
  orion_msg_rows rows;
  orion_msg_rows rows_data;
  orion_msg_rows_pull rows_pull;
  orion_msg_shard_write shard_write;
  orion_msg_write_ack write_ack;
  orion_msg_loop_end loop_end;
  orion_msg_loop_done loop_done;
  orion_msg_body_error body_error;
  orion_msg_forget forget;
  orion_msg_load_file load_file;
  orion_msg_loaded loaded;
  orion_msg_shutdown shutdown;
  orion_msg_bcast bcast;
  orion_msg_ckpt_write ckpt_write;
  orion_msg_ckpt_done ckpt_done;
  orion_msg_block_keys block_keys;
} orion_msg;

/* True when type's payload is one of the messages above. */
int orion_msg_known(int type);
/* The message's decoder, encoder and _free by frame type; ORION_EINVAL for
 * a type orion_msg_known refuses (free: nothing happens). */
int orion_msg_decode(int type, const void *p, size_t n, orion_msg *out,
                     orion_error *err);
int orion_msg_encode(orion_buf *b, int type, const orion_msg *m);
void orion_msg_free(int type, orion_msg *m);

#endif
