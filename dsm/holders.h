/* Where the newest copy of an array's elements lives when it is not the
 * driver's: a set of disjoint element ranges [lo, hi), each held by one
 * executor.  Elements outside every range are the driver's (its copy is
 * current there).
 *
 * Arrays that a loop only touches part by part (a time partition that
 * rotates, a space partition that stays) are left where the loop's last
 * block on each part ran: the next loop takes them from there, peer to
 * peer, and the driver asks for them back only when the script reads the
 * array itself (scheduler/dist_resid.c).  Pure bookkeeping: no I/O,
 * single-threaded.
 */
#ifndef ORION_DSM_HOLDERS_H
#define ORION_DSM_HOLDERS_H

#include <stdint.h>

typedef struct orion_holders {
  int64_t (*v)[3]; /* sorted, disjoint: lo, hi, executor */
  int64_t n, cap;
} orion_holders;

/* Elements [lo, hi) are now held by executor e (e < 0: by the driver).
 * 0 or ORION_ENOMEM (unchanged). */
int orion_holders_set(orion_holders *h, int64_t lo, int64_t hi, int e);

/* Calls fn for every piece of [lo, hi) in ascending order, with the
 * executor holding it (-1: the driver); stops at and returns fn's first
 * nonzero result. */
int orion_holders_each(const orion_holders *h, int64_t lo, int64_t hi,
                       int (*fn)(void *ud, int64_t lo, int64_t hi, int e),
                       void *ud);

/* Whether executor e (-1: anyone) holds any element. */
int orion_holders_any(const orion_holders *h, int e);

void orion_holders_free(orion_holders *h);

#endif
