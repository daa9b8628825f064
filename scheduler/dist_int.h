/* The engine's loop state, shared by scheduler/dist.c (the loop's messaging),
 * scheduler/dist_resid.c (resident rows: what moves peer to peer) and
 * scheduler/dist_check.c (checks of what executors send).  Internal to them. */
#ifndef ORION_LUA_DIST_INT_H
#define ORION_LUA_DIST_INT_H

#include "analysis/analyze.h"
#include "dsm/bodycache.h"
#include "dsm/cluster.h"
#include "dsm/msg.h"
#include "dsm/replica.h"
#include "scheduler/dist.h"
#include "scheduler/dist_held.h"
#include "scheduler/dist_watch.h"
#include "scheduler/module.h"
#include "scheduler/loop.h"

/* How an array's rows stay on the executors during and after a loop
 * (scheduler/dist_resid.c). */
enum {
  RES_NONE = 0,
  RES_SPACE, /* every access subscripts dimension 1 by the space key */
  RES_TIME   /* ... by the time key: the rows rotate with the time parts */
};

/* A get fixed when a run starts: move m (peer: the holder) for executor
 * dest; the holder is told to send it (SEND_ROWS). */
typedef struct resid_get {
  orion_msg_move m;
  int dest;
} resid_get;

typedef struct arr_use {
  darray *d;
  orion_replica *c; /* what the executors hold of it */
  int plan_index; /* in plan->arrays, or -1 */
  int iterated;
  int shard_flags; /* sharded in this run: ORION_SHARD_*, else 0 */
  int sharded;
  int chain; /* its stale rows go by BCAST (scheduler/dist_chain.c): CHAIN_* */
  /* Resident (RES_SPACE, RES_TIME; scheduler/dist_resid.c): the rows of each
   * part move only to the executor of the part's next block, peer to peer,
   * and stay where its last block ran after the loop. */
  int resident;
  int writes;              /* the body writes it directly */
  int nparts;
  int64_t (*prange)[2];    /* per part: its rows [lo, hi) */
} arr_use;

/* A list of ranges with room for all a block has (RUN_BLOCK's watched
 * ranges). */
typedef struct rangelist {
  orion_msg_range *v;
  int64_t n;
} rangelist;

static inline void range_add(rangelist *l, int64_t array, int64_t first,
                      int64_t count) {
  l->v[l->n].array = array;
  l->v[l->n].first = first;
  l->v[l->n].count = count;
  l->n++;
}

typedef struct loop_run {
  lua_State *L;
  mod_state *s;
  orion_cluster *cl;
  const orion_dist_job *j;
  int n;          /* executors */
  int n1;         /* blocks per space part */
  arr_use *use;
  int nuse;
  orion_replica *itc; /* what they hold of the iterated array */
  orion_loop m;       /* what to send when (scheduler/loop.h) */
  orion_dist_watch eye; /* the progress line, stall reports */
  uint64_t *seq;  /* per block: its dispatch number */
  int pull;       /* sharded arrays written: collect them after the loop */
  int keep_shards; /* ... their changed ranges only: the owners keep the
                     rows (shards_kept_wanted, scheduler/dist.c) */
  int64_t run;    /* this run's number */
  uint64_t pull_seq;
  uint64_t peer_bytes, shard_items;
  uint64_t gpu_blocks; /* blocks the executors ran on their devices */
  /* RUN_BLOCKs name their parts, so that an executor may start a later
   * queued block first (executor/exec_order.c), and the blocks the
   * executors so started (their LOOP_DONEs). */
  int reorder;
  uint64_t reordered;
  /* Every block goes out at the loop's start (the window covers a whole
   * time part), so no report is needed to send more: RUN_BLOCK's late
   * flag lets an executor send the reports of blocks it runs back to
   * back together (executor/exec_late.c). */
  int late;
  /* The executors' CPU seconds in the loop (LOOP_DONE), all together: in
   * all, the exchange's (and of it the loop thread's), and the bodies', with the bodies' wall seconds. */
  double cpu, exch_cpu, net_cpu, body_cpu, body_wall;
  orion_managed_stats managed; /* early sends of managed buffers */
  uint64_t chash; /* the compiled body's hash, 0 when interpreted */
  double *secs;
  /* Balanced placement (scheduler/dist_assign.c): whether this run uses it, and
   * per executor its blocks' compute seconds, then their elements. */
  int balanced;
  double *work;
  /* The accumulator partials of each block (and of each executor outside
   * blocks), combined in the schedule's block order once the loop ends,
   * so that a floating-point sum does not depend on the executors. */
  orion_acc_table accpart;
  orion_held_frames held; /* flush = "loop" writes, applied at the end */
  /* The lists of the frame being built, reused from frame to frame (their
   * runs are views of the arrays' rows until the encoder copies them). */
  orion_msg_seg *segs; /* room for the most segments a block has */
  orion_msg_runvec runs;
  rangelist watch;     /* room for nuse + the most segments */
  /* LOAD_BODY's lists (their fields the same for every executor) */
  orion_msg_array_desc *adesc;
  orion_msg_acc_desc *accdesc;
  orion_msg_buf_desc *bufdesc;
  orion_msg_shard *shards;
  /* RUN_BLOCK's and LOAD_BODY's moves (scheduler/dist_resid.c), and the gets
   * fixed when the run starts (of the parts' first blocks, and of the
   * shards' owners: block -1), with the executor each is for. */
  orion_msg_move *gets, *puts;
  int64_t ngets, nputs, capgets, capputs;
  struct resid_get *fgets;
  int64_t nfgets, capfgets;
  /* Parts' rows sent on by the executor of a part's block to the next
   * one's after that block (puts), and fetched when a block was placed
   * (MOVE_ROWS, dynamic assignment). */
  uint64_t parts_pushed, parts_pulled;
  /* The broadcasts still being sent (scheduler/dist_chain.c), and the dispatch
   * number they are recorded as sent with. */
  struct orion_chain_pump *pump;
  uint64_t chain_seq;
  int body_chain; /* the body goes by BCAST (orion__chain_body) */
  /* The body's digest, and the base of executor e's patch while its
   * LOAD_BODY is made (scheduler/dist_body.c). */
  unsigned char bdigest[ORION_BODY_DIGEST], bbase[ORION_BODY_DIGEST];
  /* The blocks' new values of a sparse iterated array stay with the
   * executors that ran them (orion__resid_keep). */
  int keep;
  /* RUN_BLOCK bytes: each executor's first of the pass, the others, and
   * the LOAD_BODYs (orion_dist_stats.exec_bytes). */
  uint64_t first_bytes, other_bytes, body_bytes;
  int64_t nfirst, nother;
} loop_run;



/* ---- dist_resid.c ------------------------------------------------------- */

/* Whether u stays resident in this run, and its parts' rows. */
int orion__resid_decide(loop_run *r, arr_use *u);
/* Before the loop: brings back to the driver the rows held on executors
 * of the arrays this run uses otherwise than resident (but read-only
 * shards, whose owners take them from the holders). */
void orion__resid_prepare(loop_run *r);
/* Before the LOAD_BODYs: tells the holders of resident rows from earlier
 * runs to send them (SEND_ROWS) to the executors of the parts' first
 * blocks and to the owners of read-only shards, before anything else of
 * the run reaches them, so that no executor waits for a peer that waits
 * for it.  0 or ORION_ENOMEM. */
int orion__resid_start(loop_run *r);
/* LOAD_BODY for executor e: the rows of its shard of u it lacks, from the
 * driver (r->runs) or from peers (r->gets); 0 or ORION_ENOMEM. */
int orion__resid_shard(loop_run *r, arr_use *u, int e, int64_t lo,
                       int64_t hi, uint64_t seq);
/* LOAD_BODY's gets for executor e in r->gets. */
int orion__resid_load_gets(loop_run *r, int e);
/* RUN_BLOCK of block b on e: the resident rows it gets (r->gets: from
 * peers; r->runs: from the driver) and puts (r->puts).  0 or
 * ORION_ENOMEM. */
int orion__resid_block(loop_run *r, int e, int b);
/* Block b is done on e: e holds its parts' rows now. */
void orion__resid_done(loop_run *r, int e, int b);
void orion__resid_free(loop_run *r);
/* Bytes of resident rows of block b's parts that executor e holds. */
int64_t orion__resid_affinity(const loop_run *r, int e, int b);
/* After the placement is known (orion__assign_start), before anything
 * is sent: whether the executors keep the blocks' new values of a sparse
 * iterated array (r->keep: placed statically, and not ORION_NO_RESIDENT),
 * and the values that executors kept in earlier runs and that cannot stay
 * where they are (a block now placed elsewhere, or not kept in this run)
 * taken back to the driver. */
void orion__resid_keep(loop_run *r);
/* The executor that holds the newest values of block b of the sparse
 * iterated array, -1 when the driver does (its copy is current there),
 * -2 when they are spread over several. */
int orion__resid_block_holder(const loop_run *r, int b);
/* Block b's values changed at executor e, which keeps them (kept) or sent
 * them to the driver. */
void orion__resid_block_values(loop_run *r, int e, int b, int kept);
/* Whether the loop may dispatch early (scheduler/loop.h): no RUN_BLOCK
 * carries rows that the block before it on the same executor may write,
 * because every dense array the body writes directly is resident, or
 * iterated and not subscripted in the body (its blocks are disjoint).  ORION_NO_EARLY=1 turns it off. */
int orion__resid_early(const loop_run *r);
/* Whether the loop may dispatch ahead along its time parts
 * (scheduler/loop.h): it dispatches early, has rows resident along its
 * time parts (the rows pushed between executors carry the dependence)
 * and no buffers.  ORION_NO_AHEAD=1 turns it off. */
int orion__resid_ahead(const loop_run *r);
/* Whether the executors may start a queued block before earlier ones
 * (executor/exec_order.c): the loop dispatches ahead under static
 * placement, so every dependence between two blocks is one along a
 * space part (kept in order on its executor) or a time part (its rows).
 * ORION_NO_REORDER=1 turns it off. */
int orion__resid_reorder(const loop_run *r);
/* Whether the loop sends every block at its start and marks them late
 * (loop_run.late): under reorder, without a loop timeout or --verify
 * (their watch needs each block's report as it ends), with at most
 * ORION_LOOP_START_BLOCKS blocks an executor; ORION_NO_LATE=1
 * turns it off (benchmarks' A/B). */
int orion__resid_late(const loop_run *r);

/* ---- dist_assign.c: where blocks run ----------------------------------- */

/* Whether the loop places blocks at run time (gpu_execs: executors that
 * run its blocks on a device). */
int orion__assign_dynamic(const loop_run *r, int gpu_execs);
/* Sets r->m.dynamic (before orion__resid_start) and, when set, the
 * affinity callback and the executors' block times of the last loop. */
void orion__assign_start(loop_run *r, int gpu_execs);
/* The loop's blocks per executor into st (and the block times kept). */
void orion__assign_end(loop_run *r, orion_dist_stats *st);
/* Block b took executor e `seconds` of compute (balanced placement's
 * speeds). */
void orion__assign_note_block(loop_run *r, int e, int b, double seconds);
/* ---- dist_chain.c ------------------------------------------------------- */

/* How read-only sharded arrays reach the executors ($ORION_BCAST). */
enum {
  CHAIN_OFF = 0, /* "shard": rows in LOAD_BODY to their owners, FETCHes */
  CHAIN_CHAIN,   /* "chain" (default): driver -> 0 -> 1 -> ... -> N-1 */
  CHAIN_STAR     /* "star": the driver sends every executor every frame */
};
/* The path ORION_BCAST (and ORION_BCAST_CHUNK) asks for: CHAIN_*, or a
 * negative code with err naming the variable. */
int orion__chain_mode(orion_error *err);
/* Whether u goes by BCAST in this run (u->chain), and its LOAD_BODY
 * flags: ORION_SHARD_CHAIN when a chunk is current at the driver only, 0
 * when every executor holds every chunk (u->chain stays 0, the shard path,
 * when the chunks they lack are current at other executors). */
void orion__chain_decide(arr_use *u, int mode);
/* Whether the loop's body goes to the executors along their chain, in
 * BCAST frames (ORION_BCAST_BODY) after its LOAD_BODYs, instead of inline
 * in each: with the chain path, two or more executors and a body of
 * ORION_BODY_CHAIN_MIN bytes or more. */
#define ORION_BODY_CHAIN_MIN (256 << 10)
int orion__chain_body(const loop_run *r, int mode);

/* The bodies the executors hold (scheduler/dist_body.c): the driver's
 * record, per executor, of each one's dsm/bodycache.h cache, and the bytes
 * of the bodies it sent (the bases of patches).  orion__body_start
 * computes the run's digest (before the LOAD_BODYs); orion__body_ref sets
 * m's body for executor e: a reference when e holds it, a patch of a body
 * e holds when that is shorter, else the whole body, and records what e
 * holds after it (nothing for a chained body).  orion__body_forget drops
 * the record (a new or re-formed cluster, a failed loop: the executors'
 * caches may then hold less than the record says). */
void orion__body_start(loop_run *r);
void orion__body_ref(loop_run *r, int e, orion_msg_load_body *m);
void orion__body_forget(void);
typedef struct orion_chain_pump orion_chain_pump;
/* After the LOAD_BODYs: starts sending the BCAST frames of every chained
 * array, a few pieces ahead of what each first hop's link has taken;
 * orion__chain_pump, called after every event while the driver waits,
 * sends the rest.  Once an array's frames are all out, every executor is
 * taken to hold every chunk (seq: the dispatch number recorded as their
 * sender).  Both end the job on out of memory. */
void orion__chain_send(loop_run *r, uint64_t seq);
void orion__chain_pump(loop_run *r);
/* orion__chain_pump, then whether every frame is out (an
 * orion_cluster_wait condition: a loop that failed before its executors
 * took every piece still sends them the rest, which they wait for). */
int orion__chain_pumped(void *ud);
void orion__chain_free(loop_run *r);
/* After a failed run: the chained arrays' copies cannot be trusted. */
void orion__chain_failed(loop_run *r);

#endif
