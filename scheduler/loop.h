/* The execution state machine of one distributed loop (sans-I/O).
 *
 * It decides what the driver sends and when, from the reports it gets;
 * it never touches sockets, payloads or Lua.  The driver's glue
 * (scheduler/dist.c) turns frames into the event calls below and carries out the
 * actions it emits through an orion_loop_io: in tests a fake transport
 * records them.
 *
 * A loop runs in phases:
 *   RUNNING   blocks go out in the schedule's order (scheduler/schedule.h)
 *             as soon as the blocks they wait for are done (with `early`,
 *             the one before of its space part only sent); an executor
 *             may hold several (it gets the next block's data while it
 *             computes the current one).  When every block is done, or a
 *             block failed, every executor is told to end the loop (once).
 *   ENDING    waiting for every executor's end of loop.  Then, when the
 *             loop has sharded arrays to collect and nothing failed, every
 *             executor is asked for its shards' changes;
 *   PULLING   waiting for every executor's shard data;
 *   FINISHED  done (orion_loop_failed says how it went);
 *   BROKEN    an executor was lost or stayed silent: `fail` was emitted
 *             and nothing more will be.
 *
 * Where a block runs:
 *   - static (`dynamic` 0): space part p of n0 on executor p * N / n0
 *     (orion_schedule_exec), or on owner[p] where a plan was set
 *     (orion_loop_set_owners), fixed in advance;
 *   - dynamic (`dynamic` 1): a ready block waits at the driver until an
 *     executor holds fewer than `depth` blocks, and goes to the executor
 *     that would finish it first: its queue and the block at its mean
 *     compute time per block (orion_loop_note_seconds; one not measured
 *     yet counts as the fastest), plus, where the executor lacks data of
 *     the block that another holds (io.affinity; without it, the executor
 *     that ran the previous block of its space part holds it), 1 ms and
 *     what moved data cost per byte so far (the waits for it and the time
 *     beyond the executor's mean of blocks whose data was there; at first
 *     1 GB/s); ties
 *     go to the static executor.  The ready blocks are placed in order as
 *     a list schedule (each counts the ones placed before it), so a slower
 *     executor gets some when the fast one's queue would grow long.  The
 *     best place may be an executor whose queue is full: the block then
 *     waits for it.  So an idle executor
 *     takes the ready blocks that a slow or busy one would otherwise
 *     hold, while data stays where it is when moving it costs more.  The
 *     blocks and the dependences between them are the same either way:
 *     only the executor changes, so results do not (issue 16).  With
 *     `early`, a block whose space part's previous block is only sent may
 *     follow it into that executor's queue only when that executor is the
 *     best place anyway; otherwise it waits for that block to be done.
 *
 * Failures inside blocks (a body or a buffered write that raised) do not
 * stop the other executors at once: no new block goes out, the loop ends
 * on every executor, and of several failed blocks the first in the
 * schedule's order is reported, as a serial run would.  A lost or silent
 * executor has no recovery (yet): the loop breaks with a message naming
 * the executor and the block it was running, and the transport ends the
 * job.
 *
 * Single-threaded; actions are emitted from inside the event calls.  An
 * action callback must not call back into the same orion_loop.
 */
#ifndef ORION_SCHEDULER_LOOP_H
#define ORION_SCHEDULER_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler/schedule.h"
#include "util/error.h"

/* The actions: the transport that carries them out. */
typedef struct orion_loop_io {
  void *ud;
  /* Send block `block` to executor exec (RUN_BLOCK). */
  void (*send_block)(void *ud, int exec, int block);
  /* Tell executor exec the loop is over (LOOP_END); abort is 1 when the
   * loop failed (the executor drops its pending writes). */
  void (*end_loop)(void *ud, int exec, int abort);
  /* Ask executor exec for its shards' changes (SHARD_PULL). */
  void (*pull)(void *ud, int exec);
  /* The loop cannot go on: msg names the executor and the block it was
   * running (block -1: none).  The transport ends the job. */
  void (*fail)(void *ud, int exec, int block, const char *msg);
  /* Optional, dynamic assignment only: how much of block's data executor
   * exec holds already (bytes, any unit); the larger, the better.  NULL:
   * 1 for the executor that ran the previous block of its space part. */
  int64_t (*affinity)(void *ud, int exec, int block);
} orion_loop_io;

typedef enum orion_loop_phase {
  ORION_LOOP_RUNNING,
  ORION_LOOP_ENDING,
  ORION_LOOP_PULLING,
  ORION_LOOP_FINISHED,
  ORION_LOOP_BROKEN
} orion_loop_phase;

typedef enum orion_block_state {
  ORION_BLOCK_WAITING, /* not sent yet */
  ORION_BLOCK_SENT,    /* at its executor, no report yet */
  ORION_BLOCK_DONE     /* reported done */
} orion_block_state;

typedef struct orion_loop {
  const orion_schedule *s; /* borrowed; outlives the loop */
  int nexec;
  int pull;                /* collect shards after the loop */
  /* Early dispatch: a block goes out once the block before it of its
   * space part is sent (to the same executor, which runs its blocks in
   * the order they came), not done.  Set before orion_loop_start when
   * what a block's RUN_BLOCK carries cannot depend on the previous block
   * of its space part (scheduler/dist.c says when), so that an executor gets its
   * next block, and the rows it needs come from peers, while it computes
   * the current one. */
  int early;
  /* Dispatch ahead (static placement only; needs `early`): a block also
   * goes out once the block before it of its time part is *sent*, when
   * the one before that is done (a window of one block along each time
   * part).  The executor then waits for the part's rows, which the
   * previous block's executor pushes to it straight after that block
   * (scheduler/dist_resid.c), so neither the report to the driver nor the
   * driver's next message is on the path from one block of a time part
   * to the next.  Set before orion_loop_start when every dependence
   * along a time part travels with the rows pushed between executors
   * (scheduler/dist.c says when); ignored with `dynamic`.  Reports may
   * then come in out of the schedule's order across executors: the block
   * after another of its time part may report first.  nahead counts the
   * blocks sent before the block before them of their time part was
   * done. */
  int ahead;
  int nahead;
  /* With `ahead`: the blocks of a time part that may be sent and not
   * done ahead of a block when it goes (0: 1, the window above).  A wider
   * window lets an executor that starts any queued block whose rows are
   * in (executor/exec_order.c) hold blocks of several clocks; with
   * executors that run their blocks in the order they came it only
   * couples the clocks harder (orion_loop_reorder_window). */
  int window;
  /* Dynamic assignment (above); set before orion_loop_start.  depth: the
   * most blocks an executor holds unreported (default 2: one computing,
   * the next one's data on its way). */
  int dynamic;
  int depth;
  /* Per space part: its executor under static placement, set by
   * orion_loop_set_owners (a balanced plan); NULL: the schedule's ranges
   * (orion_schedule_exec). */
  int *owner;
  orion_loop_io io;
  orion_loop_phase phase;
  unsigned char *state;    /* per position: orion_block_state */
  int *ndeps;              /* per position: blocks it still waits for */
  int *next_p, *next_q;    /* per position: who waits for it, or -1 */
  unsigned char *ended;    /* per executor: its end of loop came */
  unsigned char *pulled;   /* per executor: its shard data came */
  int *at;                 /* per position: the executor it went to, -1 */
  int *held;               /* per executor: blocks sent, not reported */
  int *ran;                /* per executor: blocks it reported done */
  double *mean;            /* per executor: mean seconds per block, 0:
                              none yet (orion_loop_note_seconds) */
  int *ready;              /* dynamic: positions ready to go, ascending */
  int nready;
  int64_t *moved;          /* dynamic, per position: bytes of its data its
                              executor lacked (io.affinity) */
  double move_cost;        /* seconds a byte of moved data cost */
  int *nclean;             /* per executor: blocks measured whose data
                              did not move (mean is over them) */
  int *queued;             /* per executor: held, plus the ready blocks
                              placed there in the current pass */
  int done, nended, npulled;
  int ending;              /* end_loop was emitted */
  int failed;
  int err_pos;             /* position of the reported failed block, -1 */
  orion_error err;
} orion_loop;

/* Sets up a loop of schedule s (borrowed) on nexec executors; pull says
 * whether shards are collected after it.  Emits nothing.  Returns 0, or
 * ORION_EINVAL / ORION_ENOMEM.  Free with orion_loop_free. */
int orion_loop_init(orion_loop *l, const orion_schedule *s, int nexec,
                    int pull, const orion_loop_io *io);
void orion_loop_free(orion_loop *l);

/* Sends every block that waits for nothing (and ends a loop without
 * blocks).  Call once, after the executors have the body. */
void orion_loop_start(orion_loop *l);

/* Whether executor exec may report `block` done: it was sent there and
 * not reported yet.  0, or ORION_EPARSE.  The glue checks before it
 * applies the report's data, then calls orion_loop_block_done. */
int orion_loop_check_done(const orion_loop *l, int exec, int64_t block);

/* Executor exec computed `block` for `seconds` and waited `waited` more
 * for its data; call before orion_loop_block_done.  Dynamic assignment
 * weighs executors by their mean compute time over blocks whose data was
 * there, and moving data by what it cost the blocks whose data moved
 * (their waits and their time beyond that mean), per byte. */
void orion_loop_note_seconds(orion_loop *l, int exec, int64_t block,
                             double seconds, double waited);

/* Executor exec finished `block`: sends the blocks that were waiting only
 * for it (unless the loop failed), and ends the loop after the last
 * block.  ORION_EPARSE (nothing done) when the report is unexpected. */
int orion_loop_block_done(orion_loop *l, int exec, int64_t block);

/* A body failed on executor exec in `block` (-1 or out of range: outside
 * a block) with msg[0..len): recorded as the loop's error unless a block
 * earlier in the order failed too; no block goes out any more and the
 * loop ends. */
void orion_loop_body_error(orion_loop *l, int exec, int64_t block,
                           const char *msg, size_t len);

/* A failure the driver found itself (applying buffered writes): recorded
 * unless the loop failed already; the loop ends as after a body error. */
void orion_loop_fail(orion_loop *l, const orion_error *err);

/* Executor exec ended the loop (LOOP_DONE).  After the last one, asks for
 * the shards (when pull and nothing failed) or finishes.  ORION_EPARSE
 * when the loop was not ended there or exec reported before. */
int orion_loop_exec_done(orion_loop *l, int exec);

/* Executor exec sent its shard data.  ORION_EPARSE when not asked for or
 * sent before. */
int orion_loop_pulled(orion_loop *l, int exec);

/* Executor exec is gone (it died or closed its connection), or has stopped
 * answering.  `what` names it and says how, as the transport saw it
 * ("executor 1 (127.0.0.1:40312) closed its connection: end of file"):
 * the loop breaks, emitting fail with `what` and the block lost with it
 * ("... while running block 18").  The error's code is -ECONNRESET or
 * -ETIMEDOUT.  Nothing happens once the loop is finished or broken. */
void orion_loop_lost(orion_loop *l, int exec, const char *what);
void orion_loop_timeout(orion_loop *l, int exec, const char *what);

/* True once finished or broken: the driver stops waiting. */
int orion_loop_finished(const orion_loop *l);

/* The loop's error (a body, a buffered write, a lost executor), or NULL
 * when nothing failed. */
const orion_error *orion_loop_failed(const orion_loop *l);

/* The state of block id `block`. */
orion_block_state orion_loop_block_state(const orion_loop *l, int block);

/* The first block, in the schedule's order, that executor exec holds
 * without having reported it, or -1. */
int orion_loop_in_flight(const orion_loop *l, int exec);

/* The executor block went to, or -1 while it waits. */
int orion_loop_exec_of(const orion_loop *l, int block);

/* Static placement by a plan: owner[p] (0..nexec-1) for each of the
 * schedule's n0 space parts, copied; before orion_loop_start.  0, or
 * ORION_EINVAL (an owner out of range) / ORION_ENOMEM. */
int orion_loop_set_owners(orion_loop *l, const int *owner);

/* The window (orion_loop.window) for executors that start any queued
 * block whose rows are in: the space parts an executor holds,
 * ceil(n0 / nexec), so that a time part can pass through all of them
 * without waiting for the driver (the simulator, docs/scale.md: 0.40
 * efficiency at 64 hosts with 2 or 4 parts a host, against 0.37 and 0.24
 * with a window of 1). */
int orion_loop_reorder_window(int n0, int nexec);

/* Whether a loop of nblocks blocks on nexec executors may send every
 * block at its start (scheduler/dist.c's late dispatch; the simulator
 * models the same): at most ORION_LOOP_START_BLOCKS blocks an executor,
 * so that the driver's first writes and the executors' queues stay small
 * (at 1,024 hosts of one part each, a pass is a million blocks). */
#define ORION_LOOP_START_BLOCKS 64
int orion_loop_all_at_start(int nblocks, int nexec);

/* The executor block runs on under static placement: its space part's
 * owner, or without a plan the schedule's (orion_schedule_exec). */
int orion_loop_home(const orion_loop *l, int block);

/* For the job page: the blocks done and in all that run on executor exec
 * (-1: on every executor); with dynamic assignment, those sent there so
 * far. */
void orion_loop_count(const orion_loop *l, int exec, int *done, int *total);

/* The phase as a word: "running", "ending", "pulling", "finished",
 * "failed" (finished after a body or a write failed) or "broken". */
const char *orion_loop_phase_name(const orion_loop *l);

#endif
