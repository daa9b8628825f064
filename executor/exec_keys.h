/* orion-driver --verify's recording on an executor (executor/exec_keys.c): the
 * keys each block reads and writes directly, per array, with the first
 * line of each kind of access and, for ordered loops, the first and last
 * element (by rank in key order) that touched each key.
 *
 * Every key is recorded (no sampling).  The interpreter's array proxies
 * call orion__keys_note on each element read and each direct store (not
 * buffered writes: a buffer's writes are applied after the block, as the
 * plan says); compiled bodies are not recorded, so the driver runs the
 * interpreter under --verify.  At a block's end orion_exec_take_keys turns
 * the keys into ranges of consecutive elements that share every recorded
 * value, which is what BLOCK_KEYS (dsm/msg.h) carries.
 *
 * Compute thread only, like the orion_exec it belongs to. */
#ifndef ORION_LUA_EXEC_KEYS_H
#define ORION_LUA_EXEC_KEYS_H

#include <stdint.h>

#include "dsm/array.h"
#include "dsm/msg.h"

struct lua_State;
struct orion_exec;
typedef struct orion_keyrec orion_keyrec;

/* Starts recording on ex with mode ORION_MSG_VERIFY_KEYS or
 * ORION_MSG_VERIFY_ORDER, or stops it (mode 0); either way drops what was
 * recorded.  Call after binding a loop's buffers (their apply functions
 * are not recorded) and before orion_exec_load: the body's proxies take
 * the recorder when they are made.  0, ORION_EINVAL or ORION_ENOMEM. */
int orion_exec_record_keys(struct orion_exec *ex, int mode);

/* One block's keys, as orion_exec_take_keys hands them out: v[0..n) in
 * (array, lo) order, and the source names the lines refer to.  Both stay
 * the recorder's: valid until the next take, orion_exec_record_keys or
 * orion_exec_free. */
typedef struct orion_keyset {
  const orion_msg_key_range *v;
  int64_t n;
  const orion_msg_keysrc *srcs;
  int64_t nsrcs;
} orion_keyset;

/* The keys recorded since the last take (the block that just ended), and
 * forgets them.  Without recording, an empty set.  0 or ORION_ENOMEM. */
int orion_exec_take_keys(struct orion_exec *ex, orion_keyset *out);

/* For executor/exec.c.  Records that the running element reads (write 0) or
 * writes (1) element pos of array id; the line is that of the Lua function
 * at stack level 1 (the caller of the metamethod), or with `returned` the
 * body's first line (the iterated element set from the body's returned
 * value).  Raises a Lua error when out of memory. */
void orion__keys_note(struct lua_State *L, orion_keyrec *k, int64_t array,
                      int64_t pos, int write, int returned);
/* Notes the body (the function at stack index idx) for `returned`. */
void orion__keys_body(struct lua_State *L, orion_keyrec *k, int idx);
/* Element e of a, the running one: its rank in key order is kept for
 * ORION_MSG_VERIFY_ORDER (its position in a dense array, the row-major
 * index of its key in a sparse one). */
void orion__keys_rank(orion_keyrec *k, const orion_array *a, int64_t e);
/* The calls executor/exec.c makes, which cost one test when not recording. */
#define ORION_KEYS_NOTE(L, rec, id, pos, write)                               \
  do {                                                                        \
    if ((rec) != NULL)                                                        \
      orion__keys_note(L, rec, id, pos, write, 0);                            \
  } while (0)
#define ORION_KEYS_RANK(rec, a, e)                                            \
  do {                                                                        \
    if ((rec) != NULL)                                                        \
      orion__keys_rank(rec, a, e);                                            \
  } while (0)
/* k while it records, else NULL (what a new proxy keeps). */
orion_keyrec *orion__keys_live(orion_keyrec *k);
/* Frees the recorder (orion_exec_free). */
void orion__keys_free(orion_keyrec *k);

#endif
