/* The buffered-write store: the pending writes of one buffer
 * (orion.buffer) on an executor, keyed by the linear element offset into
 * the buffer's target array, and the write-back that applies them to the
 * target with the buffer's operator.
 *
 * Pure C: no Lua, no sockets.  The executor's Lua host (executor/exec.c) keeps
 * one store per bound buffer and writes to it from bodies; a flush takes
 * the pending writes out in key order and either applies them here (the
 * "add" and "replace" operators), applies them in Lua (an apply function)
 * or ships them to the target's owner.
 *
 * Not thread-safe: one thread uses one store at a time.
 */
#ifndef ORION_DSM_WBUF_H
#define ORION_DSM_WBUF_H

#include <stdint.h>

#include "dsm/array.h"
#include "dsm/msg.h"

/* A pending value: the integer for i32/i64 targets, the float otherwise
 * (all-zero bits are 0 and 0.0 alike).  A pending buffered write: the
 * element's linear key in the target and its value.  They are the payload
 * codec's item types (dsm/msg.h), so that a flush ships the items a store
 * hands out as they are. */
typedef orion_msg_value orion_pend_value;
typedef orion_msg_item orion_pend_item;

/* How a buffer's pending value meets the target's element at a flush. */
typedef enum orion_apply_op {
  ORION_APPLY_ADD,     /* target[k] = target[k] + pending[k] */
  ORION_APPLY_REPLACE, /* target[k] = pending[k] */
  ORION_APPLY_FUNC,    /* target[k] = f(target[k], pending[k]) in Lua */
  /* apply = "mean" (model averaging): each executor's flushed value is
   * divided by the loop's number of executors, then added.  Only in
   * orion.buffer and its wire op; an executor binds it as ORION_APPLY_ADD
   * with its flushes scaled (executor/exec_apply.c). */
  ORION_APPLY_MEAN
} orion_apply_op;

/* The pending writes of one buffer.  Small targets keep a dense array of
 * values (zero when nothing is pending) with a dirty bitmap and a list of
 * dirty keys, so a read is one load and a take touches only what was
 * written.  Large targets start with an open-addressing hash table (memory
 * in proportion to the writes) and switch to the dense form once a quarter
 * of their elements are pending.  Storage is allocated at the first write
 * and kept, cleared, across takes until orion_wbuf_free.  The fields are
 * private. */
typedef struct orion_wbuf {
  int64_t positions;       /* elements of the target */
  orion_pend_value *vals;  /* dense: positions values */
  uint64_t *bits;          /* dense: dirty bitmap */
  int64_t *hkeys;          /* hash: key per slot, -1 when empty */
  orion_pend_value *hvals; /* hash: value per slot */
  int64_t hcap;            /* hash: slots, a power of two */
  int64_t *dirty;          /* dense: dirty keys; hash: occupied slots */
  int64_t ndirty, capdirty;
  /* The f32 scan store (orion_wbuf_f32_view): positions floats, allocated
   * at its first use and kept; while f32 is set they hold the pending
   * values (unmarked, as a scan store's) and every other call folds them
   * back into vals first. */
  float *fvals;
  int f32;
} orion_wbuf;

/* Where a flush sends the writes it took, instead of applying them (a
 * distributed executor ships them to the target's owner): the items of
 * buffer buffer_id in ascending key order, isint saying which member of
 * val is set; block: the block that wrote them, for a flush = "loop"
 * buffer (the owner applies them in block order once the loop is over),
 * or -1 (apply them now).  A nonzero return fails the flush with err
 * set. */
typedef int (*orion_flush_sink)(void *ud, int64_t buffer_id, int isint,
                                const orion_pend_item *items, int64_t n,
                                int64_t block, orion_error *err);

/* An empty store for a target of `positions` elements (allocates
 * nothing). */
void orion_wbuf_init(orion_wbuf *w, int64_t positions);

/* Frees the storage and drops every pending write; the store stays usable
 * (empty).  Idempotent. */
void orion_wbuf_free(orion_wbuf *w);

/* The number of pending elements. */
int64_t orion_wbuf_pending(const orion_wbuf *w);

/* The pending value of key, or NULL when none is pending (the dense form
 * answers a zero value for a clean key).  key must be in [0, positions).
 * Valid until the next write to or take from the store. */
const orion_pend_value *orion_wbuf_lookup(const orion_wbuf *w, int64_t key);

/* The pending value of key for writing, made pending (zero) when it was
 * not.  NULL on out of memory (nothing changes).  key must be in
 * [0, positions).  Valid until the next write to or take from the store. */
orion_pend_value *orion_wbuf_slot(orion_wbuf *w, int64_t key);

/* The dense form's storage, for a caller that writes pending values
 * inline (a compiled body, util/cbody.h): *vals (one per position, zero
 * when clean), the dirty bitmap *bits, the key list *dirty and the pending
 * count *ndirty.  A caller marking key k pending does what the store does:
 * if bit k is clear it sets it, stores k at (*dirty)[*ndirty] when
 * *ndirty < *dirty_max, and increments *ndirty.  The list has room for
 * dirty_max keys.  An empty store of a small target is made dense here; a
 * hashed store (large targets) answers *vals = NULL (use
 * orion_wbuf_slot).  The pointers stay valid until orion_wbuf_free (takes
 * keep the storage).  Returns 0, or ORION_ENOMEM (*vals NULL). */
int orion_wbuf_dense_view(orion_wbuf *w, orion_pend_value **vals,
                          uint64_t **bits, int64_t **dirty, int64_t **ndirty,
                          int64_t *dirty_max);

/* An f32 scan store, for a fast-mode compiled body over an f32 target
 * (util/cbody.h's buf_f32): *fvals, one float per position, holding every
 * pending value; the body stores values without marking them, as in a
 * scan store.  The dense form only: a hashed store answers *fvals = NULL.
 * A store not in the f32 form yet moves its values there, each rounded to
 * float (fast mode's liberty: exact mode keeps doubles), and leaves vals
 * zero and unmarked.  Every other call on the store (lookup, slot, take,
 * absorb...) but orion_wbuf_take_scan first folds the floats back into
 * vals (as doubles, unmarked) and leaves the f32 form.  The pointer stays
 * valid until orion_wbuf_free, its contents while the form lasts.  Returns 0, or
 * ORION_ENOMEM (*fvals NULL, nothing changed). */
int orion_wbuf_f32_view(orion_wbuf *w, float **fvals);

/* A store in the f32 form: its dense values (all zero while the floats
 * hold the pending ones) without folding the floats back, for a caller
 * about to run again the body that took the f32 view; NULL when the store
 * is not in the f32 form. */
orion_pend_value *orion_wbuf_f32_dense(orion_wbuf *w);

/* A scan store (util/cbody.h's bits == NULL): a compiled body stored
 * values into the dense form (orion_wbuf_dense_view's *vals) without
 * marking them.  Marks pending every element whose value is not all-zero
 * bits and is not pending yet, so that the store's other calls see them.
 * A value stored as exactly 0 (or +0.0) stays clean: for an "add" buffer,
 * the one kind that uses scan stores, applying it would change nothing
 * but the sign of a -0.0 target.  The dense form only (else nothing to
 * do).  Returns 0, or ORION_ENOMEM (the elements before are marked). */
int orion_wbuf_absorb(orion_wbuf *w);

/* Float targets: for i in [0, n), with d = x[i] - x0[i] in double (d = x[i]
 * when x0 is NULL), the pending value of key k0 + i becomes d (set_mode 1)
 * or pending + alpha * d (set_mode 0).  A write of a quarter of the target
 * or more to an empty store goes to the dense form at once.  Returns 0 or
 * ORION_ENOMEM (the writes before the failing one stay pending). */
int orion_wbuf_add_scaled(orion_wbuf *w, int64_t k0, const float *x,
                          const float *x0, int64_t n, double alpha,
                          int set_mode);

/* Takes every pending element out, in ascending key order, into a new
 * array *items (orion_free it; NULL when *n is 0).  The store is empty
 * afterwards.  Returns 0, or ORION_ENOMEM with nothing changed. */
int orion_wbuf_take(orion_wbuf *w, orion_pend_item **items, int64_t *n);

/* orion_wbuf_absorb and orion_wbuf_take in one pass over a scan store,
 * each float value multiplied by scale (isint: integer values, never
 * scaled): the marked elements and the unmarked ones whose value is not
 * all-zero bits, in ascending key order.  A store that is not dense is
 * taken as orion_wbuf_take does.  Returns 0, or ORION_ENOMEM with nothing
 * changed.  A store in the f32 form (orion_wbuf_f32_view) and !isint:
 * its floats' values, as the doubles they fold to, and the store stays in
 * the form (the floats zero). */
int orion_wbuf_take_scan(orion_wbuf *w, int isint, double scale,
                         orion_pend_item **items, int64_t *n);

/* Managed flushes (flush = "managed"): takes every pending element out
 * and splits them into the (at most) max of largest magnitude, |value| as
 * an integer (isint) or a float, ties to the lower key, into *sent, and the
 * others into *rest, both in ascending key order (orion_free both; NULL
 * when empty).  The rest are pending again afterwards, with the same
 * values, so that a body reading them sees what it wrote.  Returns 0, or
 * ORION_ENOMEM with nothing changed. */
int orion_wbuf_take_largest(orion_wbuf *w, int isint, int64_t max,
                            orion_pend_item **sent, int64_t *nsent,
                            orion_pend_item **rest, int64_t *nrest);

/* Applies items[0..n) to the dense array target with op ORION_APPLY_ADD
 * or ORION_APPLY_REPLACE, in order (keys must be in [0, target->nnz)).
 * Integer sums wrap like Lua integers.  Returns 0; -ERANGE when a result
 * does not fit an i32 target (*failed is that item's index, *value the
 * result; the items before it are applied, the rest are not); ORION_EINVAL
 * for ORION_APPLY_FUNC, which the caller applies itself. */
int orion_wbuf_apply(orion_array *target, orion_apply_op op,
                     const orion_pend_item *items, int64_t n, int64_t *failed,
                     int64_t *value);

#endif
