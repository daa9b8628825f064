/* orion-driver --verify's driver side (scheduler/verify.c): the keys each
 * block of a loop read and wrote (from the executors' BLOCK_KEYS, or the
 * in-process executor), and the check that the schedule keeps every two
 * accesses of one key, one of them a write, apart: see docs/analysis.md,
 * "orion-driver --verify".
 *
 * Driver thread only. */
#ifndef ORION_LUA_VERIFY_H
#define ORION_LUA_VERIFY_H

#include <lua.h>
#include <stdint.h>

#include "dsm/msg.h"
#include "scheduler/schedule.h"
#include "util/error.h"

struct orion_plan;

/* The most blocks a loop checked by --verify may have (the check keeps
 * which blocks each waits for, nblocks^2 bits). */
#define ORION_VERIFY_MAX_BLOCKS 16384

typedef struct orion_verify_block {
  orion_msg_key_range *v; /* sources index orion_verify's src */
  int64_t n, cap;
} orion_verify_block;

typedef struct orion_verify {
  int mode; /* ORION_MSG_VERIFY_KEYS, or _ORDER for an ordered loop */
  int nblocks;
  orion_verify_block *b; /* per block id */
  char (*src)[ORION_MSG_KEYSRC_MAX + 1];
  int nsrc, capsrc;
} orion_verify;

/* Sets v up for a loop of nblocks blocks; mode as above.  0, or
 * ORION_EINVAL (too many blocks, err says so) / ORION_ENOMEM. */
int orion__verify_init(orion_verify *v, int nblocks, int mode,
                       orion_error *err);
void orion__verify_free(orion_verify *v);

/* Adds block's keys r[0..n), whose sources index srcs[0..nsrcs).  0, or
 * ORION_EINVAL (block out of range) / ORION_ENOMEM. */
int orion__verify_add(orion_verify *v, int64_t block,
                      const orion_msg_key_range *r, int64_t n,
                      const orion_msg_keysrc *srcs, int64_t nsrcs);

/* The check, once every block is in: 0, or ORION_EBODY with err naming
 * the two blocks (space and time part, clock), the array and key, and
 * the two accesses' lines.  Arrays are named from plan (by id) and their
 * keys from the DistArrays of L's registry.  ORION_ENOMEM too. */
int orion__verify_check(lua_State *L, const orion_verify *v,
                        const orion_schedule *s,
                        const struct orion_plan *plan, orion_error *err);

#endif
