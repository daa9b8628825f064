/* The distributed engine's face to the `orion` module (scheduler/dist.c): runs
 * a parallel_for on orion-executor processes, loads text files across
 * them, and tracks what they hold of each DistArray.  What is sent when is
 * decided by the loop's state machine (scheduler/loop.h); dist.c carries
 * it out over the cluster (dsm/cluster.h). */
#ifndef ORION_LUA_DIST_H
#define ORION_LUA_DIST_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/exec_managed.h"
#include "scheduler/module.h"
#include "scheduler/schedule.h"
#include "util/error.h"

/* A buffer of the loop as executors bind it. */
typedef struct orion_dist_buf {
  int64_t id, target;
  int op;           /* orion_apply_op */
  int64_t flush;
  char name[64];
  const char *blob; /* capture of the apply function, or NULL */
  size_t blen;
  int nwith;        /* its helper arrays (scheduler/dist_with.c) */
  int64_t with[ORION_BUFFER_MAX_WITH];
} orion_dist_buf;

struct orion_plan;
struct orion_cslot;

typedef struct orion_dist_job {
  darray *it;
  const struct orion_plan *plan; /* NULL: serial (every array whole) */
  const orion_schedule *sched;   /* the blocks' order and dependences */
  const char *blob;              /* the captured body */
  size_t blen;
  int64_t load_loop;             /* the loop id bodies are seeded with */
  uint64_t seed;
  const int64_t *arrays;         /* the other arrays it names */
  int narrays;
  const int64_t *accs;
  int naccs;
  const orion_dist_buf *bufs;
  int nbufs;
  const char *where;             /* "the parallel_for at x.lua:3" */
  /* The compiled body (analysis/cgen.h), when the loop runs compiled. */
  const char *csrc;              /* C source, or NULL: interpreted */
  size_t clen;
  const char *cflags;            /* the mode flags to compile it with */
  const struct orion_cslot *cslots;
  int ncslots;
  int tier_c;                    /* opts.tier = "c": no fallback */
  /* The device (lua/pfor_gpu.c): gpu 0 CPU only, 1 "auto", 2 "gpu", sent
   * to the executors that registered one, with the device grid. */
  int gpu, gkind, gspace, gtime, gskew_dim;
  int64_t gskew, gb;
  int assign;                    /* ORION_ASSIGN_...: where blocks run */
  double timeout;                /* seconds a block may run (0: no limit) */
  /* The runtime guard (lua/pfor_guard.c): arrays the body must not write
   * directly, each with the plan's placement, sent in LOAD_BODY. */
  const struct orion_msg_guard *guards;
  int nguards;
  /* orion-driver --verify (scheduler/verify.h): where the blocks' keys go
   * (BLOCK_KEYS), and the recording mode LOAD_BODY sends; NULL, 0: off. */
  struct orion_verify *verify;
  int verify_mode;
} orion_dist_job;

/* Where a loop's blocks run (scheduler/loop.h): opts.assign, else
 * $ORION_ASSIGN ("dynamic" but for loops on devices), else static. */
enum {
  ORION_ASSIGN_DEFAULT,
  ORION_ASSIGN_STATIC,
  ORION_ASSIGN_DYNAMIC,
  ORION_ASSIGN_BALANCED
};

/* opts.assign (NULL: not given) as ORION_ASSIGN_...; a Lua error for
 * anything but "static" and "dynamic" (in $ORION_ASSIGN too). */
int orion__dist_assign_opt(lua_State *L, const char *v);

typedef struct orion_dist_stats {
  uint64_t bytes;      /* through the driver's connections */
  uint64_t io;         /* their socket reads and writes (orion_cluster_io) */
  uint64_t peer_bytes; /* between executors, as their LOOP_DONEs count */
  uint64_t shard_items; /* buffered writes applied by owning executors */
  /* 4 x nexec entries, orion_malloc'd: per executor the seconds running
   * blocks (BLOCK_DONE), then, from the LOOP_DONEs, computing, waiting for
   * data and idle. */
  double *exec_seconds;
  int nexec;
  int gpu_execs;       /* executors told to run the blocks on their device */
  uint64_t gpu_blocks; /* blocks they ran there (their LOOP_DONEs) */
  orion_managed_stats managed; /* managed buffers' early sends (LOOP_DONE) */
  int *exec_blocks;    /* nexec entries, orion_malloc'd: blocks each ran */
  int dynamic;         /* the blocks went where an executor was free */
  int early;           /* early dispatch (scheduler/loop.h) */
  int ahead;           /* dispatch ahead along time parts (loop.h) */
  uint64_t blocks_ahead; /* blocks sent before their time part was free */
  /* The executors could start a later queued block first
   * (executor/exec_order.c), and the blocks they so started. */
  int reorder;
  uint64_t ran_out_of_order;
  /* Parts' rows pushed by a block's executor to the next block's, and
   * fetched when a block was placed (scheduler/dist_resid.c). */
  uint64_t parts_pushed, parts_pulled;
  int balanced;        /* space parts placed by the executors' speeds */
  /* Bytes the driver sent each executor once in the pass, beyond what
   * each block's RUN_BLOCK carries (issue 35's model, scheduler/sim.h's
   * drv_exec_bytes): its LOAD_BODY and what its first RUN_BLOCK carried
   * over the mean of the others (the rows of the driver's arrays its
   * blocks read that the last pass made stale), per executor. */
  double exec_bytes;
  /* The executors' CPU seconds in the loop, all together (their
   * LOOP_DONEs): in all, the exchange's (the network path: dsm/msg.h) and
   * of it the loop thread's, and in the blocks' bodies, with the bodies' wall seconds: issue 35's
   * model, lua/predict.c. */
  double exec_cpu, exch_cpu, net_cpu, body_cpu, body_wall;
} orion_dist_stats;

/* Sets the result's executor_blocks (per executor, the blocks it ran; in
 * the driver {nblocks}) and assign ("static", "dynamic"; "driver" in
 * process) on the table at the top, and frees st->exec_blocks. */
void orion__dist_push_blocks(lua_State *L, orion_dist_stats *st,
                             int nblocks);

/* Runs a loop on the cluster (started on first use).  The driver's
 * in-process executor must have the loop's buffers bound (it applies the
 * executors' flushes to the arrays).  Returns 0, or ORION_EBODY with err
 * holding "executor E, element (...): MESSAGE\nTRACEBACK" when a body
 * failed.  Cluster failures end the process (exit 3). */
int orion__dist_run(lua_State *L, mod_state *s, const orion_dist_job *j,
                    orion_dist_stats *st, orion_error *err);

/* Loads a built-in text format split by byte range across the executors
 * (each parses the lines starting in its range) and merges the parts as
 * orion_load_file would return the whole.  Errors as orion_load_file. */
struct orion_load_opts;
struct orion_load_result;
/* Launches the executors without waiting for them (orion_cluster_begin),
 * when there are some, none has been started yet and the driver is about
 * to parse the file at path itself: their start-up then overlaps the
 * parse, and the first loop (ensure_cluster) finishes the start.  Only
 * for files up to ORION__PRESTART_BYTES, whose parse is far shorter than
 * an executor waits for a silent driver; any start still pending is
 * finished first.  Exits the process (3) when the cluster cannot start,
 * as the first loop would. */
#define ORION__PRESTART_BYTES (32 << 20)
void orion__dist_prestart(mod_state *s, const char *path);
int orion__dist_load(mod_state *s, const char *path,
                     const struct orion_load_opts *o,
                     struct orion_load_result *res, orion_error *err);

/* Brings the rows of d that stay on executors since a loop (resident rows,
 * scheduler/dist_resid.c) back into the driver's copy, so the script sees them;
 * nothing when there are none.  Ends the job (exit 3) if an executor is
 * lost meanwhile. */
void orion__dist_reclaim(mod_state *s, darray *d);

/* Forgets what executors hold of d (called when d is collected). */
void orion__dist_forget(mod_state *s, darray *d);

/* Stops the cluster, if any. */
void orion__dist_stop(mod_state *s);

/* Between loops, before an elastic job re-forms in place (drivers/
 * elastic.c): brings every array's rows back from the executors
 * (orion__dist_reclaim), forgets what they hold of every array and which
 * compiled bodies they have, and leaves s without a cluster (s->cl NULL;
 * the caller releases and frees it).  The next loop or load starts one
 * from s->copts, and sends each executor what it needs, as to new ones. */
void orion__dist_detach(lua_State *L, mod_state *s);

#endif
