/* The state of one orion-executor process, and the calls between its
 * files.  Internal to drivers/executor.c and executor/exec_*.c.
 *
 *   drivers/executor.c  main: the command line, the driver's connection,
 *                    the heartbeat, the loop thread's outbox (on_wake)
 *   exec_queue.c     what passes between the two threads: posting a frame
 *                    to the outbox, a job taken from a connection, a new
 *                    connection, the exit; every other file calls these
 *   exec_dispatch.c  the one message handler: which connection may send
 *                    which frame, the loop thread's and the compute
 *                    thread's handler of each, the compute thread's queue
 *   exec_order.c     which queued job the compute thread takes next (a
 *                    later block whose rows are in may go first)
 *   exec_late.c      BLOCK_DONEs of blocks run back to back, sent together
 *   exec_peer.c      peers: the listener, HELLO, PEERS, connections to and
 *                    from the other executors, frames queued for them
 *   exec_replica.c   array copies: dense replicas, sparse block copies,
 *                    FORGET
 *   exec_shardtab.c  the table of sharded arrays (by id, by buffer)
 *   exec_shard.c     sharded server arrays' messaging (their data and
 *                    chunk versions: dsm/shard.c): FETCH and its reply,
 *                    buffered writes to their owners, SHARD_PULL
 *   exec_hold.c      writes to our own chunks: applied, or held till the
 *                    loop's end in block order
 *   exec_run.c       running a loop: LOAD_BODY, RUN_BLOCK, LOOP_END
 *   exec_bodies.c    the compiled bodies kept by hash
 *   exec_load.c      parsing a byte range of an input file (LOAD_FILE)
 *   exec_chain.c     broadcasts along a chain of executors (BCAST)
 *
 * Every payload is encoded and decoded with the payload codec (dsm/msg.h);
 * bulk data travels as views into the frame (in) or pointers into the
 * executor's own copies (out), copied once, into or out of the frame.
 *
 * Two threads share the state: the loop thread runs the libuv loop (every
 * socket, the heartbeat), the compute thread owns the Lua state and every
 * array copy and takes the driver's requests in order.  Each field says
 * who may touch it; "mu" fields only with x->mu held.  The state reaches
 * every callback without a global: libuv handles carry it in their data
 * pointer, connections through their loop's (orion__exec_of), the compute
 * thread as its start argument, the flush sink as its user data.
 */
#ifndef ORION_DRIVERS_EXEC_STATE_H
#define ORION_DRIVERS_EXEC_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "dsm/array.h"
#include "dsm/bodycache.h"
#include "dsm/msg.h"
#include "dsm/net.h"
#include "dsm/proto.h"
#include "dsm/shard.h"
#include "dsm/types.h"
#include "dsm/wbuf.h"
#include "dsm/wire.h"
#include "gpu/gpu.h"
#include "executor/exec.h"
#include "util/buf.h"
#include "util/ccomp.h"
#include "util/clock.h"
#include "util/error.h"

/* The exit code of an executor whose job is gone (driver lost, silent,
 * or a fatal protocol error). */
#define ORION_EXEC_EXIT_CLUSTER 3

/* A frame's payload handed from the loop thread to the compute thread (or
 * kept by the loop thread for later). */
typedef struct job {
  struct job *next;
  int type;      /* ORION_WIRE_... */
  char *payload; /* orion_malloc'd, may be NULL */
  size_t len;
  int from; /* the peer that sent it; -1: the driver */
  /* A RUN_BLOCK's order (executor/exec_order.c), read from its payload
   * once: its space and time part (-1: it runs in the order it came) and
   * the rows it waits for (orion_malloc'd). */
  int ordered;
  int64_t space, time;
  orion_msg_move *gets;
  int64_t ngets;
} job;

/* A dense array copy this executor holds (a replica of the driver's
 * array; only the parts the driver sent are meaningful). */
typedef struct replica {
  int64_t id;
  orion_array *a;
} replica;

/* One block of a sparse iterated array, as the driver sent it; its
 * elements are the driver's [first, first + a->nnz) (ROWS_PULL asks for
 * the values the blocks here kept by those positions). */
typedef struct blockcopy {
  int64_t array, block;
  int64_t first;
  orion_array *a;
} blockcopy;

/* Another executor, as this one sees it: where it listens, the
 * connection this executor opened to it (requests go out there, answers
 * come back), the one it opened to us (its requests, our answers), and
 * frames the compute thread queued for it (under mu). */
typedef struct peerlink {
  int index; /* its executor id */
  char host[256];
  int port;
  orion_conn *out;
  int out_ready; /* out connected and HELLO sent */
  orion_conn *in;
  orion_buf pending;   /* for out, before it is ready */
  orion_buf queued;    /* from the compute thread, for out (mu) */
  orion_buf queued_in; /* from the compute thread, for in (mu) */
} peerlink;

/* Bodies an executor built, by hash, oldest first; obj NULL: it failed
 * to build.  The oldest is forgotten when ORION_BODY_CACHE are kept. */
typedef struct exec_bodies {
  struct {
    uint64_t hash;
    orion_cobj *obj;
  } e[ORION_BODY_CACHE];
  int n;
} exec_bodies;

typedef struct exec_state {
  /* From the command line; read-only once the threads run. */
  int id;
  char host[256]; /* the driver's */
  int port;
  const char *token;
  const char *bind;
  int allow_io;       /* --allow-io: bodies are not sandboxed */
  int elastic;        /* --elastic or --join: losing the driver or a peer
                         does not end it; it registers again (--join) */
  int joining;        /* --join: HELLO without an id until WELCOME names
                         one; the compute thread starts then */
  void (*start)(struct exec_state *x); /* starts the compute thread */
  double hb_timeout;
  double reg_timeout; /* $ORION_REGISTER_TIMEOUT: seconds to keep trying */
  int gpu_index;      /* --gpu N; -1: none */
  uint64_t gpu_cap;   /* --gpu-memory in bytes; 0: the whole device */
  orion_gpu *gpu;     /* opened at start (gpu/gpu.h); NULL: no device.  The
                         compute thread uses it, one thread at a time */
  char gpu_desc[ORION_WIRE_DEVICE_MAX + 1]; /* orion_gpu_describe's; "" */

  /* Loop thread. */
  uv_loop_t loop;   /* its data is this state */
  orion_conn *conn; /* to the driver; NULL once closed */
  /* The compute thread queued frames (orion__exec_wake): a byte in the
   * pipe wake_fd makes wake readable.  Not a uv_async_t: libuv 1.44's
   * spins, then yields, while the other thread is inside uv_async_send,
   * which a loaded machine turned into a wasted slice per block. */
  uv_poll_t wake;
  int wake_fd[2];
  atomic_int wake_pending; /* a byte is in the pipe, not yet taken */
  /* The current run binds a flush = "clock" buffer: a peer's
   * BUFFER_FLUSH is queued ahead of the RUN_BLOCKs (exec_dispatch.c).
   * Set by the compute thread at LOAD_BODY, read by the loop thread. */
  atomic_int flush_ahead;
  uv_timer_t hb;
  uint64_t hb_seq;
  int welcomed;
  int encrypt;      /* dsm/sec.h's policy: --no-encrypt, or the driver's */
  int tries;        /* connections to the driver so far */
  double reg_until; /* when to stop trying to register */
  char last_why[512]; /* why the last try failed */
  uv_timer_t retry;
  uv_tcp_t listener;     /* for peers */
  char listen_addr[128]; /* "host:port" peers reach us at */
  peerlink *peers;       /* npeers; [id] unused; set once by PEERS */
  /* The handlers of the frames peers send (exec_dispatch.c), set by main:
   * exec_peer.c opens the connections and calls no dispatcher itself. */
  void (*peer_in_frame)(orion_conn *, const orion_wire_frame *);
  void (*peer_out_frame)(orion_conn *, const orion_wire_frame *);
  job *deferred;         /* FETCHes for a run not started here yet */
  job *moves;            /* MOVE_ROWS for a run not started here yet */
  /* ORION_TEST_SLOW="E:MS" or "E:xF" (tests and benchmarks): executor E
   * sleeps MS ms after each block, or F - 1 times the block's time. */
  double slow_ms, slow_factor;

  /* Shared by the threads: under mu. */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* signalled when a job is queued */
  job *head, *tail;  /* to the compute thread */
  int64_t jobs_open; /* queued or running: while > 0 the driver must talk */
  orion_buf out;     /* frames from the compute thread */
  int stop;
  int npeers;    /* executors in the job (from PEERS) */
  orion_shard *shards; /* the loop thread serves from them */
  int nshards;
  uint64_t vcounter;    /* owner chunk versions */
  int64_t outstanding;  /* BUFFER_FLUSHes to peers not yet acknowledged */
  orion_buf done_frame; /* LOOP_DONE held back until they are */
  int done_held;
  job *replies;         /* FETCH_REPLY payloads for the compute thread */
  int64_t awaiting;     /* FETCH_REPLYs the compute thread waits for */
  pthread_cond_t fcv;   /* signalled when one arrives */
  job *rows_in;         /* ROWS from peers, for the compute thread */
  job *writes_in;       /* SHARD_WRITEs applied to our served copies, to
                           copy into our own (executor/exec_swrite.c) */
  int64_t writes_out;   /* our SHARD_WRITEs not acknowledged yet */
  int rows_waiting;     /* the compute thread waits for one */
  job *bcast_in;        /* BCAST pieces for the compute thread (each
                           passed on already: executor/exec_chain.c) */
  uint64_t peer_bytes;  /* between us and peers since the last LOOP_DONE
                         * (exec_peer.c counts them) */
  uint64_t shard_items; /* writes applied to own shards, likewise */
  double link_bps;      /* the measured link rate, bytes/s; 0: not yet
                           (executor/exec_budget.c) */
  uint64_t *ryw_applied; /* per peer: its BUFFER_FLUSHes applied at once
                            that we took in, over the job (exec_ryw.c) */
  int64_t loaded_run;   /* the run whose LOAD_BODY the compute thread has
                           taken (MOVE_ROWS waits for it) */

  /* Compute thread. */
  orion_exec *ex;
  replica *reps;
  int nreps;
  blockcopy *blocks;
  int nblocks;
  int64_t iter_id;
  int iter_sparse;
  int iter_ragged; /* iterated by rows (dsm/ragged.h) */
  orion_type iter_type;
  int iter_ndims;
  int64_t iter_dims[ORION_MAX_DIMS];
  int64_t *bound; /* array ids bound for the current loop */
  int nbound;
  int64_t *bufs;        /* buffer ids bound for the current loop */
  int64_t *buf_targets; /* and their target arrays */
  int nbufs;
  int64_t *accs;
  int naccs;
  int failed;       /* a body failed in this loop: skip its remaining blocks */
  int64_t run;      /* the loop run being computed (SHARD_PULL reads it) */
  job *early;       /* BUFFER_FLUSHes for a run whose LOAD_BODY is not in */
  orion_cobj *cobj; /* the loaded loop's compiled body, or NULL */
  exec_bodies bodies;  /* built, by hash (dsm/proto.h) */
  exec_bodies gbodies; /* device bodies (executor/exec_gload.c) */
  orion_bodycache blobs; /* the bodies sent, by digest (exec_bodies.c) */
  /* The loop's time (LOOP_DONE): when its LOAD_BODY came, the seconds
   * running its blocks less their waits, and the seconds blocked on data
   * (orion__wait_begin/end). */
  double loop_t0, compute_s, wait_s;
  /* The loop's CPU here (issue 35's exchange CPU, LOOP_DONE): the
   * process's and the loop thread's CPU seconds at its LOAD_BODY, the
   * compute thread's CPU seconds moving bytes between hosts (shard
   * fetches and writes, rows handed over), and its CPU and wall seconds
   * inside the blocks' bodies.  net_clock: the loop thread's CPU clock
   * (has_net_clock: there is one), set before the compute thread starts. */
  double cpu_t0, net_t0, xfer_cpu_s, body_cpu_s, body_s;
  clockid_t net_clock;
  int has_net_clock;
  /* executor/exec_order.c: the loop's blocks started before a block that
   * came earlier (LOOP_DONE's reordered), and when the block handed over
   * began to wait for its rows there (0: it did not; orion__rows_get's
   * time limit counts from it). */
  uint64_t reordered;
  double rows_since;
  /* executor/exec_late.c: BLOCK_DONEs held back (RUN_BLOCK's late flag)
   * and when the first of them was. */
  orion_buf late;
  double late_since;
  /* The flush = "loop" writes to our shards in this run, ours and the
   * peers', held until the driver's SHARD_PULL says every block's are in
   * (executor/exec_hold.c). */
  struct held_items *held;
  int64_t nheld, capheld;
  /* The managed buffers' budget (executor/exec_budget.c): bytes/s (0: no
   * limit), the bucket's bytes and when it was last filled. */
  double budget_bps, tokens, tokens_t;
  /* Read-your-writes (executor/exec_ryw.c): per peer, our BUFFER_FLUSHes
   * applied at once sent to it over the job, and those it may not have
   * taken in yet, oldest first. */
  uint64_t *ryw_sent;
  struct ryw_entry **ryw_log;
} exec_state;

/* The state a connection's callbacks run for. */
static inline exec_state *orion__exec_of(const orion_conn *c) {
  return (exec_state *)c->tcp.loop->data;
}

/* The compute thread blocked on data it needs (an owner's rows, a peer's
 * partition, an acknowledgement): every such wait is wrapped as
 *   double t = orion__wait_begin();  ...wait...  orion__wait_end(x, t);
 * and its time is the loop's wait_seconds, not its compute_seconds.
 * Compute thread. */
static inline double orion__wait_begin(void) { return orion_now(); }
static inline void orion__wait_end(exec_state *x, double t0) {
  x->wait_s += orion_now() - t0;
}

/* ---- executor.c --------------------------------------------------------- */

/* Prints "orion-executor ID: MESSAGE" and exits with
 * ORION_EXEC_EXIT_CLUSTER at once (either thread). */
void orion__exec_die(const exec_state *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Waits on x->fcv (a peer's answer came) for at most 100 ms, so that a
 * waiter checks its deadline; x->mu held.  Compute thread. */
void orion__exec_nap(exec_state *x);

/* Hands the finished frames in b to the loop thread for the driver and
 * empties b (compute thread). */
void orion__exec_post(exec_state *x, orion_buf *b);

/* Makes the loop thread run its on_wake soon (either thread): one write
 * to the wake pipe unless one is already pending. */
void orion__exec_wake(exec_state *x);

/* Loop thread, in wake's callback, before it looks at what was queued:
 * empties the pipe and lets the next orion__exec_wake write again. */
void orion__exec_wake_taken(exec_state *x);

/* Creates the wake pipe and starts watching it (loop thread, at start);
 * on failure it dies. */
void orion__exec_wake_init(exec_state *x, uv_poll_cb cb);

/* Posts a BODY_ERROR: a body or loop error in block `block` (-1: none). */
void orion__exec_post_error(exec_state *x, int64_t block, const char *msg);

/* A connection on the executor's loop that connects out (to the driver or
 * a peer) with these callbacks and owner data; dies on out of memory.
 * Loop thread. */
orion_conn *orion__exec_connection(exec_state *x,
                                   void (*frame)(orion_conn *,
                                                 const orion_wire_frame *),
                                   void (*closed)(orion_conn *, const char *),
                                   void (*connected)(orion_conn *), void *data);

/* ---- exec_dispatch.c ---------------------------------------------------- */

/* Frame callbacks of the driver's connection and of the connections to
 * and from peers: each hands the frame to the one dispatch table. */
void orion__exec_on_driver_frame(orion_conn *c, const orion_wire_frame *f);
void orion__exec_on_peer_in_frame(orion_conn *c, const orion_wire_frame *f);
void orion__exec_on_peer_out_frame(orion_conn *c, const orion_wire_frame *f);

/* A job holding frame f's payload (taken from c's decoder: f is gone
 * afterwards), from peer `from` (-1: the driver).  Dies on out of
 * memory.  Loop thread. */
job *orion__exec_job_take(exec_state *x, orion_conn *c,
                          const orion_wire_frame *f, int from);
void orion__exec_job_free(job *j);

/* The compute thread: takes the queued jobs until x->stop, in order but
 * for the blocks executor/exec_order.c lets pass. */
void *orion__exec_compute_main(void *arg);

/* ---- exec_order.c ------------------------------------------------------- */

/* The next job for the compute thread, unlinked from the queue: the head,
 * or a later RUN_BLOCK that may start first; waits (for a job, or for an
 * earlier block's rows) and returns NULL once x->stop.  Under x->mu. */
job *orion__order_take(exec_state *x);

/* ---- exec_late.c -------------------------------------------------------- */

/* Posts block report b (BLOCK_DONE, compute thread), or holds it back with
 * those held before when `late` (its RUN_BLOCK's flag and nothing in the
 * report but the block's times), the block took under ORION_LATE_MOST / 2
 * seconds, the first held one is under ORION_LATE_MOST seconds old and
 * another RUN_BLOCK is queued; otherwise posts the held ones with b, in
 * one frame.  b is emptied either way. */
#define ORION_LATE_MOST 0.5
void orion__late_post(exec_state *x, orion_buf *b, double seconds, int late);

/* Posts the held reports (compute thread): before the thread waits, takes
 * a job other than a RUN_BLOCK, or posts an error.  _locked: under x->mu. */
void orion__late_flush(exec_state *x);
void orion__late_flush_locked(exec_state *x);

/* ---- exec_peer.c -------------------------------------------------------- */

/* The executor id of a peer connection, or -1 before its HELLO. */
int orion__peer_index(const orion_conn *c);
/* Sends HELLO (id, where we listen) on c.  Loop thread. */
void orion__peer_send_hello(exec_state *x, orion_conn *c);
/* Listens for peers on the address c (the driver's connection) leaves
 * from.  Loop thread. */
void orion__peer_listen(exec_state *x, orion_conn *c);
/* Queues frames for peer e: to_in = 0 on the connection we opened to e
 * (requests), 1 on the one e opened to us (answers).  Empties b and counts
 * its bytes in x->peer_bytes.  Compute thread (or the loop thread, whose
 * next wake-up sends them: executor/exec_chain.c). */
void orion__peer_post(exec_state *x, int e, orion_buf *b, int to_in);
/* The same, uncounted: an answer whose requester counted it (exec_peer.c
 * says which).  Compute thread. */
void orion__peer_post_paid(exec_state *x, int e, orion_buf *b, int to_in);
/* Counts n bytes between executors: the requester counting the answer to
 * come.  Either thread. */
void orion__peer_count(exec_state *x, uint64_t n);
/* Sends (and counts) an answer on the connection peer e opened to us.
 * Empties b.  Loop thread. */
void orion__peer_answer(exec_state *x, int e, orion_buf *b);
/* Sends what the compute thread queued for the peers.  Loop thread. */
void orion__peer_drain(exec_state *x);
/* Loop-thread handlers of PEERS (from the driver) and HELLO (from a
 * peer). */
void orion__peer_on_peers(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f);
void orion__peer_on_hello(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f);

/* ---- exec_replica.c ----------------------------------------------------- */

replica *orion__replica_find(exec_state *x, int64_t id);
/* The replica of array id with this shape, made (zero-filled) when it is
 * missing or has another shape.  NULL with err set on failure. */
orion_array *orion__replica_for(exec_state *x, int64_t id, orion_type type,
                                int ndims, const int64_t *dims,
                                orion_error *err);
blockcopy *orion__block_find(exec_state *x, int64_t array, int64_t block);
/* Stores the elements of a sparse block of the iterated array, the
 * driver's [first, first + n) (replacing an older copy, and dropping
 * copies of other blocks that overlap it: blocks of an older cut, whose
 * positions no longer mean what they did).  NULL with err set on
 * failure. */
orion_array *orion__block_store(exec_state *x, int64_t block, int64_t first,
                                int64_t n, const char *keys,
                                const char *values, orion_error *err);
/* FORGET: drops the copies (and shards) of the listed arrays. */
int orion__replica_forget(exec_state *x, job *j);


/* ---- exec_budget.c ------------------------------------------------------ */

/* At LOAD_BODY: the managed buffers' budget is mbps (the driver's
 * --bandwidth-mbps; 0: the measured link rate), the bucket empty.
 * Compute thread. */
void orion__budget_start(exec_state *x, double mbps);
/* After a block: fills the bucket for the time since the last call and
 * sends the managed buffers' largest pending writes it affords.  Returns
 * 0 or the send's error.  Compute thread. */
int orion__budget_send(exec_state *x, orion_error *err);
/* The core's managed tick (executor/exec_managed.h), ud the state: within a
 * block, orion__budget_send once TICK_SECONDS have passed since the last
 * send.  Compute thread. */
int orion__budget_tick(void *ud, orion_error *err);
/* Takes the fastest frame rate read from the driver or a peer as the link
 * rate.  Loop thread. */
void orion__budget_observe(exec_state *x);

/* ---- exec_shard.c ------------------------------------------------------- */

/* Array id's shard, or NULL (x->mu held, or the compute thread). */
orion_shard *orion__shard_find(exec_state *x, int64_t id);

/* One LOAD_BODY shard entry: sets up or refreshes the shard and installs
 * the rows sent for our chunks.  Compute thread. */
int orion__shard_setup(exec_state *x, const orion_msg_shard *s, int64_t run,
                       orion_error *err);
/* Retires the shards not sharded in this run.  Compute thread. */
void orion__shards_retire(exec_state *x, int64_t run);
/* Drops array id's shard, if any.  Compute thread. */
void orion__shard_drop(exec_state *x, int64_t id);
/* Brings the sharded arrays the body reads up to date before a block.
 * Compute thread. */
void orion__shard_fetch(exec_state *x);
/* The flush sink (executor/exec.h) of the executor's core; ud is the state. */
int orion__shard_flush_sink(void *ud, int64_t id, int isint,
                            const orion_pend_item *items, int64_t n,
                            int64_t block, orion_error *err);
/* Whether a flush = "loop" buffer's writes of a block go to their owners
 * as soon as the block ends (its target is sharded in this run), rather
 * than at LOOP_END; the owners hold them either way and apply them in
 * block order.  ORION_NO_EARLY_FLUSH=1: never (the path before, to
 * compare).  ud is the state.  Compute thread. */
int orion__shard_flush_early(void *ud, int64_t buffer);
/* Applies items of buffer to our own shard sh and publishes the chunks
 * they touch; count: add n to the shard_items LOOP_DONE reports; from:
 * the peer whose BUFFER_FLUSH they are (counted for read-your-writes in
 * the same critical section as the publishing), or -1.  Compute thread. */
int orion__shard_apply_own(exec_state *x, orion_shard *sh, int64_t buffer,
                           const orion_pend_item *items, int64_t n, int count,
                           int from, orion_error *err);
/* Read-your-writes (executor/exec_ryw.c), compute thread unless said.
 * orion__ryw_sent: a BUFFER_FLUSH of items for `buffer` went to owner,
 * to be applied at once: applies them to our copy too and logs them.
 * orion__ryw_took (under mu, in the section that publishes their chunks):
 * we took in one such flush of peer `from`; orion__ryw_applied (under mu):
 * how many so far, for a FETCH_REPLY to it.  orion__ryw_reply: after the
 * chunks of owner's reply m to sh are installed, re-applies our flushes
 * it had not taken in to them.  orion__ryw_drop: forgets the log (a new
 * run). */
int orion__ryw_sent(exec_state *x, int owner, int64_t buffer,
                    const orion_pend_item *items, int64_t n, orion_error *err);
void orion__ryw_took(exec_state *x, int from);
uint64_t orion__ryw_applied(const exec_state *x, int from);
void orion__ryw_reply(exec_state *x, int owner, orion_shard *sh,
                      const orion_msg_fetch_reply *m);
void orion__ryw_drop(exec_state *x);
/* The shard buffer writes to in this run, or NULL. */
orion_shard *orion__shard_of_buffer(exec_state *x, int64_t buffer);
/* BUFFER_FLUSH from a peer (compute thread): applied now, or kept (returns
 * 1) until the LOAD_BODY of its run is in. */
int orion__shard_on_flush(exec_state *x, job *j);
/* Applies the BUFFER_FLUSHes kept for the run just loaded. */
void orion__shard_apply_early(exec_state *x);
/* Loop-thread handlers: FETCH, FETCH_REPLY, FLUSH_ACK from peers. */
void orion__shard_on_fetch(exec_state *x, orion_conn *c, int from,
                           const orion_wire_frame *f);
void orion__shard_on_fetch_reply(exec_state *x, orion_conn *c, int from,
                                 const orion_wire_frame *f);
void orion__shard_on_flush_ack(exec_state *x, orion_conn *c, int from,
                               const orion_wire_frame *f);
/* SHARD_PULL (compute thread, after every executor's LOOP_DONE): the
 * held writes are applied, then our changed rows go to the driver, or
 * (keep) only which chunks changed. */
int orion__shard_on_pull(exec_state *x, job *j);
/* The test hook ORION_TEST_DIE_AT=ID:FRAME (FRAME SHARD_PULL or
 * ROWS_PULL): executor ID exits at once when that frame comes, an owner
 * lost mid-reduction or while it holds the rows it kept. */
void orion__exec_test_die(const exec_state *x, const char *frame);
/* Retries the FETCHes that arrived before their run started here.  Loop
 * thread. */
void orion__shard_serve_deferred(exec_state *x);

/* ---- exec_swrite.c ------------------------------------------------------ */

/* Whether array is sharded and written directly in this run.  Compute
 * thread. */
int orion__swrite_is_direct(exec_state *x, int64_t array);
/* After a block: publishes our own chunks' changed elements among runs,
 * sends the others to their owners and waits for their WRITE_ACKs (dies
 * after 2 heartbeat timeouts).  Compute thread. */
int orion__swrite_send(exec_state *x, const orion_msg_run *runs, int64_t n,
                       orion_error *err);
/* Before a block: copies the owners' applied writes into our copies.
 * Compute thread. */
void orion__swrite_sync(exec_state *x);
/* Applies SHARD_WRITE job j to our served copy and answers; returns 1
 * (nothing done, j kept by the caller) when its run has not started here,
 * else 0 (j is taken).  Loop thread. */
int orion__swrite_serve(exec_state *x, job *j);
/* Loop-thread handlers of SHARD_WRITE and WRITE_ACK from peers. */
void orion__swrite_on_write(exec_state *x, orion_conn *c, int from,
                            const orion_wire_frame *f);
void orion__swrite_on_ack(exec_state *x, orion_conn *c, int from,
                          const orion_wire_frame *f);

/* ---- exec_ckpt.c -------------------------------------------------------- */

/* CKPT_WRITE: writes the rows asked for as checkpoint parts and answers
 * CKPT_DONE.  Compute thread. */
int orion__ckpt_write(exec_state *x, job *j);

/* ---- exec_rows.c -------------------------------------------------------- */

/* ROWS from a peer: kept for the compute thread.  Loop thread. */
void orion__rows_on_rows(exec_state *x, orion_conn *c, int from,
                         const orion_wire_frame *f);
/* Waits (up to 6 heartbeat timeouts) for the ROWS of move g of run `run`
 * and copies them into our copy.  Compute thread. */
int orion__rows_get(exec_state *x, const orion_msg_move *g, int64_t run,
                    orion_error *err);
/* Whether the aborting LOOP_END of a loop is queued.  Under x->mu. */
int orion__rows_abort_queued(const exec_state *x);
/* Whether the ROWS of move g of run `run` are in (or g is one that
 * orion__rows_get refuses at once).  Under x->mu. */
int orion__rows_there(const exec_state *x, const orion_msg_move *g,
                      int64_t run);
/* Sends the elements of move v of our copy to its peer as ROWS of run
 * `run`.  Compute thread. */
int orion__rows_put(exec_state *x, const orion_msg_move *v, int64_t run,
                    orion_error *err);
/* Drops the ROWS kept for runs before `run`.  Compute thread. */
void orion__rows_drop_old(exec_state *x, int64_t run);
/* Compute-thread handlers of SEND_ROWS and ROWS_PULL. */
int orion__rows_send(exec_state *x, job *j);
int orion__rows_pull(exec_state *x, job *j);
/* MOVE_ROWS (a block placed elsewhere during the run): the rows go at
 * once, from the loop thread, or once the run's LOAD_BODY is taken.  Loop
 * thread. */
void orion__rows_on_move(exec_state *x, orion_conn *c, int from,
                         const orion_wire_frame *f);
/* Retries the MOVE_ROWS kept for a run that had not started.  Loop
 * thread. */
void orion__rows_serve_moves(exec_state *x);
/* The compute thread took run `run`'s LOAD_BODY: MOVE_ROWS for it may be
 * served.  Compute thread. */
void orion__rows_loaded(exec_state *x, int64_t run);
/* The ORION_TEST_SLOW hook after a block that took `seconds`.  Compute
 * thread. */
void orion__exec_test_slow(exec_state *x, double seconds);

/* ---- exec_chain.c ------------------------------------------------------ */

/* BCAST from the driver or the executor before us: passed on to
 * executor id + 1 at once when it says so, then kept for the compute
 * thread.  Loop thread. */
void orion__chain_on_bcast(exec_state *x, orion_conn *c, int from,
                           const orion_wire_frame *f);
/* Waits for every piece of this run's broadcast of array id (dying after
 * 2 heartbeat timeouts without one) and copies them into a.  0, or
 * ORION_EPARSE with err set when a piece does not fit a (the others are
 * taken all the same).  Compute thread. */
/* The bytes of a chained body of len bytes (LOAD_BODY's blob_chained),
 * from its BCAST pieces; NULL with err set when they do not fit.  Free
 * with orion_free. */
char *orion__chain_take_body(exec_state *x, int64_t len, orion_error *err);
int orion__chain_take(exec_state *x, int64_t id, orion_array *a,
                      orion_error *err);

/* ---- exec_hold.c -------------------------------------------------------- */

/* Holds a copy of block `block`'s writes items[0..n) to buffer (in our
 * shard) until orion__hold_apply.  Compute thread. */
void orion__hold_items(exec_state *x, int64_t buffer, int64_t block,
                       const orion_pend_item *items, int64_t n);
/* Applies the held writes block by block in ascending block number
 * (each block's in the order they came), then forgets them; an apply
 * error fails the loop here.  Compute thread. */
void orion__hold_apply(exec_state *x);
/* Forgets the held writes (a new run). */
void orion__hold_drop(exec_state *x);

/* ---- exec_run.c --------------------------------------------------------- */

/* Compute-thread handlers of LOAD_BODY, RUN_BLOCK and LOOP_END. */
int orion__run_load_body(exec_state *x, job *j);
int orion__run_block(exec_state *x, job *j);
int orion__run_loop_end(exec_state *x, job *j);

/* ---- exec_gload.c ------------------------------------------------------- */

/* LOAD_BODY's device body: when m asks for one (m->gpu) and this executor
 * has a device, builds (or finds by hash) the nvcc object of the compiled
 * body and gives it to the executor core with the device grid.  A failure
 * is the loop's error under tier "gpu" (m->gpu == 2), a one-line note and
 * the CPU otherwise.  Compute thread. */
/* The body built for hash: 1 with *obj set (NULL when it failed to
 * build), else 0. */
int orion__bodies_find(const exec_bodies *b, uint64_t hash, orion_cobj **obj);
/* Keeps obj (may be NULL) for hash, forgetting (and freeing) the oldest
 * when full. */
void orion__bodies_keep(exec_bodies *b, uint64_t hash, orion_cobj *obj);

/* LOAD_BODY's body when m names a digest (wire version 22): the held body
 * it names or patches, checked against the digest and kept; else m's blob.
 * *body points into m, into x->blobs or to *owned (the caller frees it).
 * Returns 0, or the loop's error: a body this executor does not hold, a
 * patch that does not fit its base, a digest that does not match. */
int orion__blobs_resolve(exec_state *x, const orion_msg_load_body *m,
                         const char **body, size_t *len, char **owned,
                         orion_error *err);

int orion__load_gbody(exec_state *x, const orion_msg_load_body *m,
                      const char *mode, orion_error *err);

#endif
