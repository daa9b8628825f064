/* Internals of the executor core shared by its two files: lua/exec.c (the
 * Lua host: bindings, body proxies, buffers, running a shipped body in the
 * executor's Lua state) and lua/exec_cbody.c (running a compiled body
 * against the same bindings).  Not for any other file.  It does not
 * include lua/exec.h (which lua/exec.c implements), so that the two
 * modules include each other in one direction only; it names the core
 * `struct orion_exec`, the type lua/exec.h calls orion_exec.
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

/* The most helper arrays a buffer's apply function takes (lua/module.h's
 * ORION_BUFFER_MAX_WITH on the driver). */
#define ORION_EXEC_MAX_HELPERS 8

/* One block's pending writes to one flush = "loop" buffer, taken at the
 * block's end (lua/exec_block.c). */
typedef struct block_items {
  int64_t block, buffer, seq;
  orion_pend_item *items;
  int64_t n;
} block_items;

/* The core behind lua/exec.h's orion_exec. */
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
  struct exec_gpu *gpu; /* the device and its body (lua/exec_gbody.c) */
  /* The accumulators' partials of the blocks ended so far in this loop
   * (lua/exec_block.c). */
  orion_block_acc *bacc;
  int64_t nbacc, capbacc;
  /* ... and the flush = "loop" buffers' writes of those blocks. */
  block_items *bkept;
  int64_t nbkept, capbkept;
  /* Managed buffers (lua/exec_managed.c): blocks ended in this loop, and
   * what went early. */
  int64_t mblocks;
  orion_managed_stats mstats;
  int nmanaged;        /* managed buffers bound */
  int64_t mcount;      /* elements since the last tick */
  orion_managed_tick mtick; /* called every ORION_MANAGED_TICK elements */
  void *mtick_ud;
  /* The loop deadline (lua/exec_deadline.c): seconds a block may run (0:
   * no limit), and the running block's id and deadline on orion_now's
   * clock.  Once the hook sees the deadline pass, `expired` is set and
   * `past` holds the error, so that a body that catches it (pcall,
   * coroutine.resume) still fails when its element returns. */
  double timeout, deadline;
  int64_t tblock;
  int expired;
  char past[384];
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
  int64_t flush;   /* ORION_FLUSH_BLOCK, _LOOP, _MANAGED or n > 0 */
  int64_t count;   /* elements run since the last flush (n > 0) */
  orion_wbuf pend; /* its pending writes */
  /* flush = "managed": the keys pending at the last early send, in key
   * order, each with (val.i) the block count when first seen pending. */
  orion_pend_item *born;
  int64_t nborn;
};

/* Managed buffers (lua/exec_managed.c): forgets b's first-seen blocks (its
 * writes were all sent, or dropped); counts a block's end. */
void orion__exec_managed_forget(exec_buffer *b);
void orion__exec_managed_block_end(struct orion_exec *ex);
/* Whether the body must count its elements for the managed tick. */
int orion__exec_managed_ticks(const struct orion_exec *ex);
/* After each element (with orion__exec_count_element): calls the tick
 * every ORION_MANAGED_TICK elements.  0 or the tick's error. */
int orion__exec_managed_count(struct orion_exec *ex, orion_error *err);

/* The binding, buffer or accumulator slot of id on ex, or NULL.  The
 * pointers stay valid until the next bind or unbind. */
binding *orion__exec_find_array(struct orion_exec *ex, int64_t id);
exec_buffer *orion__exec_find_buffer(struct orion_exec *ex, int64_t id);
acc_slot *orion__exec_find_acc(struct orion_exec *ex, int64_t id);
/* The index of buffer id in ex->bufs, or -1. */
int orion__exec_find_buffer_index(struct orion_exec *ex, int64_t id);

/* Element i of a pushed onto L; the Lua value at vidx stored into it,
 * raising an error that names the array (`kind` "array" or "buffer") when
 * the value does not fit its type (exec_elem.c). */
void orion__exec_push_elem(lua_State *L, const orion_array *a, int64_t i);
void orion__exec_store_elem(lua_State *L, const orion_array *a,
                            const char *kind, const char *name, int64_t i,
                            int vidx);
/* The message handler of bodies and apply functions: the error with a
 * traceback. */
int orion__exec_traceback(lua_State *L);
/* Takes b's pending elements and applies them to the target (or hands
 * them to the flush sink); restarts its count (exec_apply.c). */
int orion__exec_flush_buffer(struct orion_exec *ex, exec_buffer *b,
                             orion_error *err);

/* Applies items[0..n) to b's target with b's operator, in order. */
int orion__exec_apply_taken(struct orion_exec *ex, exec_buffer *b,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err);

/* At the loop's end: the kept writes of the flush = "loop" buffers, block
 * by block in ascending block number, applied (or handed to the sink,
 * tagged with their block); then forgotten.  0, or the first error. */
int orion__exec_flush_kept(struct orion_exec *ex, orion_error *err);

/* The sandbox of bodies in state L (lua/exec_sandbox.c): the allow-listed
 * globals that decoded bodies see, and (--allow-io) the state's own
 * globals in their place. */
void orion__exec_sandbox(lua_State *L);
void orion__exec_unsandbox(lua_State *L);

/* Writes element e's 1-based key "(k1, ..., kn)" into buf[0..n). */
/* Ragged rows (lua/exec_ragged.c): the row view's metatable, and a view
 * of elements [lo, hi) of ragged array a pushed onto L. */
void orion__exec_row_open(lua_State *L);
void orion__exec_push_row(lua_State *L, orion_array *a, int64_t lo,
                          int64_t hi);
void orion__exec_key_string(const orion_array *a, int64_t e, char *buf,
                            size_t n);

/* After each element of a block: counts it for the n-element buffers and
 * flushes those whose count is reached, and for the managed tick.
 * Returns 0 or the failed flush's code with err set (as
 * orion_exec_flush). */
int orion__exec_count_element(struct orion_exec *ex, orion_error *err);

/* The host array a as a compiled body sees it (util/cbody.h); a device
 * body gets the same with device pointers put in (lua/exec_gbody.c). */
void orion__exec_carray_of(orion_carray *ca, const orion_array *a);

/* Runs ex's compiled body over elements [lo, hi) of a (lua/exec_cbody.c);
 * errors as orion_exec_run. */
int orion__exec_run_compiled(struct orion_exec *ex, orion_array *a, int64_t lo,
                             int64_t hi, uint64_t seed, int64_t block,
                             orion_error *err);

/* The loop deadline (lua/exec_deadline.c).  _start before a block runs
 * (the deadline is now + the timeout; an interpreted body gets the count
 * hook that stops it), _stop after it; the compiled body's poll
 * (util/cbody.h), which sets c->err once the block is past its deadline
 * (c->ud is the executor). */
void orion__exec_deadline_start(struct orion_exec *ex, int64_t block);
/* Wraps xpcall in L's globals so that its message handler cannot hold a
 * body past its deadline (called once, before the sandbox copies them). */
void orion__exec_deadline_open(lua_State *L);
void orion__exec_deadline_stop(struct orion_exec *ex);
/* After each element of an interpreted body returns: raises the deadline's
 * error in L (outside the body, where nothing catches it) if the block
 * went past its deadline while the element ran. */
void orion__exec_deadline_check(lua_State *L, struct orion_exec *ex);
int orion__exec_cpoll(orion_cctx *c);

#endif
