/* Internals of the executor core shared by its two files: executor/exec.c (the
 * Lua host: bindings, body proxies, buffers, running a shipped body in the
 * executor's Lua state) and executor/exec_cbody.c (running a compiled body
 * against the same bindings).  Not for any other file.  It does not
 * include executor/exec.h (which executor/exec.c implements), so that the two
 * modules include each other in one direction only; it names the core
 * `struct orion_exec`, the type executor/exec.h calls orion_exec.
 *
 * Compute thread only, like the orion_exec these describe. */
#ifndef ORION_LUA_EXEC_INT_H
#define ORION_LUA_EXEC_INT_H

#include <lua.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/wbuf.h"
#include "executor/accum.h"
#include "executor/exec_block.h"
#include "executor/exec_managed.h"
#include "util/cbody.h"
#include "util/error.h"

/* The longest placement text the runtime guard keeps (longer is cut). */
#define ORION_EXEC_GUARD_MAX 160

/* An array id bound to an array (retained).  guard is the runtime guard's
 * placement text (orion_exec_guard_array): "" while the body may write the
 * array directly. */
typedef struct binding {
  int64_t id;
  orion_array *a;
  char guard[ORION_EXEC_GUARD_MAX];
} binding;

/* An accumulator id with its operator and this executor's partial. */
typedef struct acc_slot {
  int64_t id;
  orion_acc_op op;
  orion_accval val;
} acc_slot;

typedef struct exec_buffer exec_buffer;

/* The most helper arrays a buffer's apply function takes (scheduler/module.h's
 * ORION_BUFFER_MAX_WITH on the driver). */
#define ORION_EXEC_MAX_HELPERS 8

/* One block's pending writes to one flush = "loop" buffer, taken at the
 * block's end (executor/exec_block.c). */
typedef struct block_items {
  int64_t block, buffer, seq;
  orion_pend_item *items;
  int64_t n;
} block_items;

/* The core behind executor/exec.h's orion_exec. */
struct orion_exec {
  lua_State *L;
  int id;
  binding *arrays;
  int narrays;
  acc_slot *accs;
  int naccs;
  exec_buffer **bufs; /* bound buffers, in bind order */
  int nbufs;
  int nflushn;  /* how many of them flush every n elements */
  int body_ref; /* registry ref of the loaded body, LUA_NOREF when none */
  int64_t loop_id;
  orion_flush_sink sink; /* flushes go here instead of the target, or NULL */
  void *sink_ud;
  orion_cbody_fn cfn;  /* the loop's compiled body, or NULL */
  orion_cslot *cslots; /* its slots (copied, names not kept) */
  int ncslots;
  struct exec_gpu *gpu; /* the device and its body (executor/exec_gbody.c) */
  /* The accumulators' partials of the blocks ended so far in this loop
   * (executor/exec_block.c). */
  orion_block_acc *bacc;
  int64_t nbacc, capbacc;
  /* ... and the flush = "loop" buffers' writes of those blocks. */
  block_items *bkept;
  int64_t nbkept, capbkept;
  /* Managed buffers (executor/exec_managed.c): blocks ended in this loop, and
   * what went early. */
  int64_t mblocks;
  orion_managed_stats mstats;
  int nmanaged;        /* managed buffers bound */
  int64_t mcount;      /* elements since the last tick */
  orion_managed_tick mtick; /* called every ORION_MANAGED_TICK elements */
  void *mtick_ud;
  /* The loop deadline (executor/exec_deadline.c): seconds a block may run (0:
   * no limit), and the running block's id and deadline on orion_now's
   * clock.  Once the hook sees the deadline pass, `expired` is set and
   * `past` holds the error, so that a body that catches it (pcall,
   * coroutine.resume) still fails when its element returns. */
  double timeout, deadline;
  int64_t tblock;
  int expired;
  char past[384];
  /* orion-driver --verify (executor/exec_keys.c): the keys the running block
   * touched, or NULL when not recording. */
  struct orion_keyrec *keys;
  /* The loop's number of executors (apply = "mean" divides by it); 0 or 1
   * in the driver and on a lone executor. */
  int nexec;
};

/* A buffer on this executor: a full userdata anchored in the Lua registry
 * while bound; body proxies hold it as their uservalue. */
struct exec_buffer {
  int64_t id;
  char name[64];
  orion_array *target; /* retained while bound; NULL once unbound */
  orion_apply_op op;
  int apply_ref;   /* registry ref of the apply function (ORION_APPLY_FUNC) */
  /* Its helper arrays (orion.buffer's `with`): ids, script names and the
   * bound arrays (retained; NULL until found bound on this executor). */
  int nhelp;
  int64_t help_id[ORION_EXEC_MAX_HELPERS];
  char help_name[ORION_EXEC_MAX_HELPERS][64];
  orion_array *help[ORION_EXEC_MAX_HELPERS];
  int64_t flush;   /* ORION_FLUSH_BLOCK, _LOOP, _MANAGED, _CLOCK(n) or n > 0 */
  int64_t count;   /* elements (n > 0) or blocks (clock) since the last flush */
  int mean;        /* apply = "mean": op is ADD, flushed values / nexec */
  /* Its scan store holds values a compiled body stored and nothing has
   * marked yet: marked and taken in one pass at its flush
   * (orion_wbuf_take_scan), not marked after every block of a clock. */
  int unabsorbed;
  /* The compiled body that left pend in the f32 form (dsm/wbuf.h's
   * orion_wbuf_f32_view), or NULL: run again, it finds its floats as it
   * left them; any other body gets them folded back into doubles. */
  void (*f32fn)(void);
  orion_wbuf pend; /* its pending writes */
  /* flush = "managed": the keys pending at the last early send, in key
   * order, each with (val.i) the block count when first seen pending. */
  orion_pend_item *born;
  int64_t nborn;
};

/* Marks the values a compiled body stored in b's scan store since its
 * last flush (b->unabsorbed); 0 or ORION_ENOMEM with err set. */
int orion__exec_absorb(struct orion_exec *ex, exec_buffer *b,
                       orion_error *err);

/* apply = "mean": the factor b's flushed values take, 1 / the loop's
 * executor count (1 for other buffers); and the float values of
 * items[0..n), taken from b's store for a flush or an early send,
 * multiplied by it.  (Inline: the flush, exec_apply.c, and the early
 * sends, exec_managed.c, both scale.) */
static inline double orion__exec_mean_factor(const struct orion_exec *ex,
                                             const exec_buffer *b) {
  return b->mean && ex->nexec > 1 ? 1.0 / (double)ex->nexec : 1.0;
}
static inline void orion__exec_mean_scale(const struct orion_exec *ex,
                                          const exec_buffer *b,
                                          orion_pend_item *items, int64_t n) {
  int64_t i;
  double s = orion__exec_mean_factor(ex, b);
  if (s != 1.0)
    for (i = 0; i < n; i++)
      items[i].val.d *= s;
}

/* Managed buffers (executor/exec_managed.c): forgets b's first-seen blocks (its
 * writes were all sent, or dropped); counts a block's end. */
void orion__exec_managed_forget(exec_buffer *b);
void orion__exec_managed_block_end(struct orion_exec *ex);
/* Whether the body must count its elements for the managed tick. */
int orion__exec_managed_ticks(const struct orion_exec *ex);
/* After each element (with orion__exec_count_element): calls the tick
 * every ORION_MANAGED_TICK elements.  0 or the tick's error. */
int orion__exec_managed_count(struct orion_exec *ex, orion_error *err);

/* At the loop's end: the kept writes of the flush = "loop" buffers, block
 * by block in ascending block number, applied (or handed to the sink,
 * tagged with their block); then forgotten.  0, or the first error. */
int orion__exec_flush_kept(struct orion_exec *ex, orion_error *err);

#endif
