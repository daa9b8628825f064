/* The executor core: a Lua state of its own that holds bindings from array
 * ids to array partitions (and from buffer ids to their pending writes) and
 * runs a shipped loop body over one block of elements.  The single-process
 * engine hosts one of these inside the driver; distributed executors run
 * the same code.  executor/exec.c is the Lua host (bindings, body proxies,
 * buffers, the interpreted run), executor/exec_cbody.c runs compiled bodies,
 * dsm/wbuf.c stores the buffers' pending writes.
 *
 * Not thread-safe: one thread drives one orion_exec at a time.
 */
#ifndef ORION_LUA_EXEC_H
#define ORION_LUA_EXEC_H

#include <stdint.h>

#include "dsm/array.h"
#include "dsm/wbuf.h"
#include "executor/accum.h"
#include "executor/exec_block.h"
#include "executor/exec_managed.h"
#include "util/cbody.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct orion_exec orion_exec;

/* A new executor with id `executor_id` (reported in errors).  NULL on out of
 * memory.  Free with orion_exec_free.  Its bodies run sandboxed: no
 * programs, files, environment, modules, binary chunks or debug library
 * (executor/exec_sandbox.c) until orion_exec_allow_io. */
orion_exec *orion_exec_new(int executor_id);
/* Lifts the sandbox (orion-driver / orion-executor --allow-io). */
void orion_exec_allow_io(orion_exec *ex);
void orion_exec_free(orion_exec *ex);

/* Binds array id to a (partition of an) array; the executor retains it until
 * unbound or freed.  Rebinding an id replaces the old binding. */
int orion_exec_bind_array(orion_exec *ex, int64_t id, orion_array *a);
void orion_exec_unbind_array(orion_exec *ex, int64_t id);

/* The runtime guard: marks bound array id as one the loaded body must not
 * write directly, because the loop's plan placed it so; placement (copied,
 * cut at 159 bytes) is the plan's placement as the message names it, e.g.
 * "server (read-only)".  NULL or "" lifts the guard.  Binding the id again
 * lifts it too, so set guards after binding a loop's arrays and before
 * orion_exec_load (the body's proxies copy them when it is loaded).  A
 * guarded write fails the element with ORION_EBODY: "parallel_for body
 * writes array 'NAME' at FILE:LINE, which the plan placed PLACEMENT; ...".
 * Returns 0, or ORION_EINVAL when id is not bound.  Compiled bodies are
 * guarded by their generator (lua/pfor_guard.c), not here. */
int orion_exec_guard_array(orion_exec *ex, int64_t id, const char *placement);
/* The guard's refusal, from the array's name, "FILE:LINE" and the
 * placement (the compiled tier's check, lua/pfor_guard.c, says the same). */
#define ORION_EXEC_GUARD_FMT                                                  \
  "parallel_for body writes array '%s' at %s, which the plan placed %s; "    \
  "the write would be lost or race with other blocks, so the loop stops "    \
  "(this is a hole in the analysis: please report it)"

/* Declares accumulator id with its operator; its partial starts empty. */
int orion_exec_bind_acc(orion_exec *ex, int64_t id, orion_acc_op op);

/* Loads a loop body from a capture blob (executor/capture.h).  Replaces any loop
 * loaded before.  Fails with err naming the problem. */
int orion_exec_load(orion_exec *ex, int64_t loop_id, const char *blob,
                    size_t len, orion_error *err);

/* Makes orion_exec_run use a compiled body (util/cbody.h) for the loaded
 * loop: fn from a loaded object (the caller keeps it loaded), slots as the
 * generator listed them, resolved against the bindings at each run.  NULL
 * goes back to the interpreter; orion_exec_load also does.  The compiled
 * body must be the loaded Lua body's (results are then identical). */
int orion_exec_set_compiled(orion_exec *ex, orion_cbody_fn fn,
                            const orion_cslot *slots, int nslots);
/* True when a compiled body is set. */
int orion_exec_compiled(const orion_exec *ex);

/* The loop deadline: each orion_exec_run call (a block, or one segment of
 * it) that runs longer than `seconds` fails with ORION_EBODY, "executor E,
 * element K: [LINE: ]block B ran past the loop's timeout of S s ..." (0:
 * no limit, the default).  Set per loop (executor/exec_deadline.c). */
void orion_exec_set_timeout(orion_exec *ex, double seconds);
double orion_exec_timeout(const orion_exec *ex);

/* Runs the loaded body on elements [lo, hi) of the array bound to iter_id:
 * body(k1, ..., kn, v) with 1-based keys; a non-nil return value replaces
 * the element.  math.random is seeded from (seed, loop id, block) first.
 * Buffers with an n-element flush policy are flushed here, between
 * elements, whenever their count is reached (see orion_exec_flush for the
 * error a failed flush returns); "block" and "loop" buffers are left to
 * orion_exec_flush.  On a body error, returns ORION_EBODY with err holding
 * "executor E, element (k1, ..., kn): MESSAGE\nTRACEBACK". */
int orion_exec_run(orion_exec *ex, int64_t iter_id, int64_t lo, int64_t hi,
                   uint64_t seed, int64_t block, orion_error *err);

/* Copies out and clears the partial value of accumulator id. */
int orion_exec_take_acc(orion_exec *ex, int64_t id, orion_accval *out);

/* ----------------------------------------------------------------------
 * Buffers (orion.buffer): writes a body makes through a buffer are kept
 * pending on the executor and applied to the buffer's target array at
 * flush points.
 * ---------------------------------------------------------------------- */

/* The pending writes live in a dsm/wbuf.h store per buffer; the apply
 * operators (orion_apply_op) and the flushed items (orion_pend_item) are
 * defined there. */

/* Flush policies: after every block, only at the end of the loop, or (any
 * n > 0) after every n elements the executor runs, counted across blocks,
 * and at the end of the loop.  ORION_FLUSH_MANAGED (executor/exec_managed.h):
 * at the end of the loop, and early whenever orion_exec_managed_send is
 * called.  ORION_FLUSH_CLOCK(n), n >= 1 (flush = "clock"): after every n
 * blocks the executor runs (a parameter server's clock), and at the end of
 * the loop; in between, a sharded target is not refreshed from its owners
 * (orion_exec_mid_clock): bodies read it as of the clock's start plus the
 * executor's pending writes. */
#define ORION_FLUSH_BLOCK 0
#define ORION_FLUSH_LOOP (-1)
#define ORION_FLUSH_CLOCK(n) (-2 - (int64_t)(n))
#define ORION_FLUSH_CLOCK_MAX INT32_MAX
#define ORION_FLUSH_IS_CLOCK(f)                                                \
  ((f) <= ORION_FLUSH_CLOCK(1) && (f) >= ORION_FLUSH_CLOCK(ORION_FLUSH_CLOCK_MAX))
#define ORION_FLUSH_CLOCK_BLOCKS(f) (-2 - (f))
/* flush = "clock" without `clock`: blocks per clock. */
#define ORION_CLOCK_DEFAULT 4

/* Binds buffer `id` writing into the bound dense array `target_id` (the
 * executor retains that array until the buffer is unbound, so unbinding
 * the array first is safe).  Inside a body the buffer reads like an array
 * of the target's shape: B[i][j] is the element's pending value (0 of the
 * target's kind when none is pending) and B[i][j] = x sets it.
 *
 * For ORION_APPLY_FUNC, apply_blob/len is a capture blob (executor/capture.h) of
 * the Lua function(old, delta) -> new, decoded here into the executor's
 * state; for the other ops pass NULL/0.  flush is ORION_FLUSH_BLOCK,
 * ORION_FLUSH_LOOP, ORION_FLUSH_MANAGED, ORION_FLUSH_CLOCK(n) or n > 0.
 * name (copied) names the buffer in messages.
 * Rebinding an id replaces the old buffer and drops its pending writes.
 * Returns 0, or ORION_EINVAL (unbound or sparse target, bad policy or op),
 * ORION_EPARSE / ORION_ECAPTURE (bad apply blob) or ORION_ENOMEM with err
 * set. */
/* An apply blob may also be the capture of a closure from the chunk
 * "=orion.buffer.with" (lua/buffer_with.c) returning the function and
 * {n, name1, id1, ..., namen, idn}: the buffer's helper arrays, looked up
 * among the executor's bound arrays when first applied.  The function is
 * then called as f(old, delta, h1, ..., hn, k1, ..., kd) with the helpers'
 * values (at most 8 helpers) and the 1-based key at each applied element,
 * and returns the new
 * target value followed by the helpers' new values (nil: unchanged). */
int orion_exec_bind_buffer(orion_exec *ex, int64_t id, const char *name,
                           int64_t target_id, orion_apply_op op,
                           const char *apply_blob, size_t len, int64_t flush,
                           orion_error *err);

/* The script's name of buffer id (as bound), for messages. */
const char *orion_exec_buffer_name(orion_exec *ex, int64_t id);

/* The ids of buffer id's helper arrays into *ids; returns how many (0
 * for an unknown buffer). */
int orion_exec_buffer_helpers(orion_exec *ex, int64_t id,
                              const int64_t **ids);

/* Unbinds buffer id, dropping its pending writes and releasing its target.
 * A body still holding the buffer raises an error if it touches it.
 * Unknown ids are ignored. */
void orion_exec_unbind_buffer(orion_exec *ex, int64_t id);

/* A flush point.  at_loop_end = 0 after a block: flushes the "block"
 * buffers and the "clock" buffers whose clock is over (n blocks since
 * their last flush); 1 at the end of the loop: flushes every buffer (and
 * restarts the element count of n-element buffers and the block count of
 * clocks).  Buffers are flushed in the order
 * they were bound; each applies its pending elements in ascending linear
 * key order, then its pending set is empty.  Returns 0, or ORION_EBODY with
 * err holding "executor E, buffer 'NAME', key (k1, ..., kn): MESSAGE" when
 * applying failed (the apply function raised, or its result does not fit
 * the target's type); the failing buffer's remaining pending elements are
 * dropped and the buffers after it are not flushed. */
int orion_exec_flush(orion_exec *ex, int at_loop_end, orion_error *err);

/* Where flushed writes go on a distributed executor: instead of applying
 * them to its local copy of the target, the executor hands the items to
 * the sink (orion_flush_sink, dsm/wbuf.h), which ships them to the array's
 * owner. */
/* The loop's number of executors n >= 1, by which an apply = "mean"
 * buffer's flushed values are divided (1 until set). */
void orion_exec_set_executors(orion_exec *ex, int n);

void orion_exec_set_flush_sink(orion_exec *ex, orion_flush_sink sink,
                               void *ud);

/* The owner's side: applies items[0..n) (as a flush sink received them) to
 * buffer id's target with the buffer's operator, in order, as a flush
 * would.  Errors as orion_exec_flush, plus ORION_EINVAL for an unbound
 * buffer and ORION_EKEYRANGE for a key outside the target. */
int orion_exec_buffer_apply(orion_exec *ex, int64_t id,
                            const orion_pend_item *items, int64_t n,
                            orion_error *err);
/* The same for items whose keys the caller has checked are in the target
 * (this executor's own flushes, a peer's checked against the shard): no
 * pass over the keys first. */
int orion_exec_buffer_apply_valid(orion_exec *ex, int64_t id,
                                  const orion_pend_item *items, int64_t n,
                                  orion_error *err);

/* The number of pending elements of buffer id, or -1 when it is not bound
 * (for tests and statistics). */
int64_t orion_exec_buffer_pending(orion_exec *ex, int64_t id);

/* Whether array a is in the middle of a clock: the target of a flush =
 * "clock" buffer that has run blocks since its last flush.  The executor
 * does not refresh such a sharded array before a block (its reads stay as
 * of the clock's start, with this executor's own writes in). */
int orion_exec_mid_clock(const orion_exec *ex, const orion_array *a);

/* ----------------------------------------------------------------------
 * Array data for native kernels (orion.nn, executor/nn.c).
 * ---------------------------------------------------------------------- */

struct lua_State;

/* What an array, slice or buffer proxy that a body holds stands for. */
typedef struct orion_exec_view {
  const orion_array *a; /* the array (a buffer's target); valid while the
                           proxy is */
  int64_t off;          /* linear offset of the view's first element */
  int depth;            /* leading dimensions fixed by subscripts */
  const char *name;     /* the name the body uses, for messages */
  void *buffer;         /* non-NULL: a buffer; write with
                           orion_exec_view_pend, never into `a` */
  const char *guard;    /* non-NULL: the runtime guard's placement of an
                           array the body must not write (refuse with
                           orion_exec_guard_refuse); valid as `a` is */
  int64_t id;           /* the array's id and orion-driver --verify's */
  void *keys;           /* key recorder (executor/exec_keys.h), or NULL */
} orion_exec_view;

/* Fills v and returns 1 when the value at idx of an executor's Lua state is
 * an array, slice or buffer proxy; returns 0 for anything else.  Raises a
 * Lua error for a buffer that is no longer bound.  Compute thread. */
int orion_exec_view_of(struct lua_State *L, int idx, orion_exec_view *v);

/* Raises the runtime guard's error for a write into v (v->guard set),
 * naming the line of the body's function that called the running C
 * function (a native kernel's store is the body's). */
void orion_exec_guard_refuse(struct lua_State *L, const orion_exec_view *v);

/* Buffer views only: for i in [0, n), with d = x[i] - x0[i] (in double;
 * d = x[i] when x0 is NULL), the pending value of element v->off + first + i
 * becomes pending + alpha * d (set_mode 0) or d (set_mode 1), as
 * B[...] = B[...] + alpha * d would make it.  Returns 0, ORION_EINVAL (not
 * a buffer, unbound, or an integer target) or ORION_ENOMEM. */
int orion_exec_view_pend(const orion_exec_view *v, int64_t first,
                         const float *x, const float *x0, int64_t n,
                         double alpha, int set_mode);

/* The executor's orion.nn runs on device g (NULL: the CPU), as
 * orion_nn_set_gpu (executor/nn.h) says: the executor main calls it after
 * opening its device; g stays open until orion_exec_free.  Returns 0 or
 * an error code with err set.  Defined in executor/exec.c. */
struct orion_gpu;
int orion_exec_nn_gpu(orion_exec *ex, struct orion_gpu *g, orion_error *err);

#endif
