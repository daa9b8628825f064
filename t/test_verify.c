/* orion-driver --verify's check (scheduler/verify.c) on hand-made key ranges:
 * which pairs of blocks the rule lets touch one key, over real schedules
 * (scheduler/schedule.h), and the message it fails with.  The script-level
 * tests (t/test_scripts.c verify_*, t/slow_verify.sh) run it end to end. */
#include "t/testutil.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "scheduler/module.h"
#include "scheduler/verify.h"
#include "scheduler/schedule.h"

static const orion_msg_keysrc src[1] = {{"t.lua", 5}};

typedef struct fixture {
  lua_State *L;
  orion_schedule s;
  orion_verify v;
  orion_plan plan;
  orion_plan_array pa;
  orion_error err;
} fixture;

/* A 2 x 2 grid laid out by kind, array 7 named X, recording mode. */
static void setup(fixture *f, orion_order_kind kind, int mode) {
  memset(f, 0, sizeof *f);
  f->L = luaL_newstate();
  cr_assert_not_null(f->L);
  lua_newtable(f->L); /* no DistArray: keys print as element numbers */
  lua_setfield(f->L, LUA_REGISTRYINDEX, ARRAYS_KEY);
  cr_assert_eq(orion_schedule_make(&f->s, kind, 2, 2, 0), 0);
  cr_assert_eq(orion__verify_init(&f->v, 4, mode, &f->err), 0);
  f->pa.info.id = 7;
  f->pa.name = (char *)"X";
  f->plan.sched = kind == ORION_ORDER_WAVEFRONT ? ORION_SCHED_2D_ORDERED
                                                 : ORION_SCHED_2D;
  f->plan.arrays = &f->pa;
  f->plan.narrays = 1;
  orion_error_clear(&f->err);
}

static void teardown(fixture *f) {
  orion__verify_free(&f->v);
  orion_schedule_free(&f->s);
  lua_close(f->L);
}

/* Block b (id p * 2 + q) touches elements lo..hi-1 of X: flags, the
 * lines (10 + flags) and, for ordered loops, the elements' ranks. */
static void touch(fixture *f, int b, int64_t lo, int64_t hi, int flags,
                  int64_t rank) {
  orion_msg_key_range r;
  memset(&r, 0, sizeof r);
  r.array = 7;
  r.lo = lo;
  r.hi = hi;
  r.flags = flags;
  r.rfirst = r.rlast = r.wfirst = r.wlast = -1;
  if (flags & ORION_KEY_READ) {
    r.rline = 11;
    r.rfirst = r.rlast = rank;
  }
  if (flags & ORION_KEY_WRITE) {
    r.wline = 12;
    r.wfirst = r.wlast = rank;
  }
  cr_assert_eq(orion__verify_add(&f->v, b, &r, 1, src, 1), 0);
}

static int check(fixture *f) {
  return orion__verify_check(f->L, &f->v, &f->s, &f->plan, &f->err);
}

enum { R = ORION_KEY_READ, W = ORION_KEY_WRITE };

/* Rotation: (0, 0) and (1, 1) run at clock 0, concurrently; (0, 0) and
 * (0, 1) share a space part, so one waits for the other.  A write and a
 * read of one key: a conflict between the first pair, none between the
 * second, in an unordered loop. */
Test(verify, rotation_concurrent_read_write_conflicts) {
  fixture f;
  setup(&f, ORION_ORDER_ROTATION, ORION_MSG_VERIFY_KEYS);
  touch(&f, 0, 4, 6, W, -1);
  touch(&f, 1, 4, 6, R | W, -1); /* (0, 1): waits for (0, 0) */
  cr_expect_eq(check(&f), 0, "%s", f.err.msg);
  touch(&f, 3, 5, 9, R, -1); /* (1, 1): concurrent with (0, 0) */
  cr_assert_eq(check(&f), ORION_EBODY);
  cr_expect_str_eq(
      f.err.msg,
      "orion-driver --verify: block (space 0, time 0) at clock 0 and block "
      "(space 1, time 1) at clock 0 may run concurrently (schedule 2d), but "
      "both touch array 'X' at key (element 5), one writing: block (space "
      "0, time 0) at clock 0 writes it at t.lua:12, block (space 1, time 1) "
      "at clock 0 reads it at t.lua:11; the plan is wrong (a hole in the "
      "analysis: please report it)");
  teardown(&f);
}

/* Two stores alone are no dependence of an unordered loop (the analysis
 * does not count them); in an ordered one they are. */
Test(verify, write_write_conflicts_only_when_ordered) {
  fixture f;
  setup(&f, ORION_ORDER_ROTATION, ORION_MSG_VERIFY_KEYS);
  touch(&f, 0, 0, 1, W, -1);
  touch(&f, 3, 0, 1, W, -1);
  cr_expect_eq(check(&f), 0, "%s", f.err.msg);
  teardown(&f);
  setup(&f, ORION_ORDER_WAVEFRONT, ORION_MSG_VERIFY_ORDER);
  touch(&f, 1, 0, 1, W, 1); /* (0, 1) and (1, 0): clock 1 both */
  touch(&f, 2, 0, 1, W, 2);
  cr_assert_eq(check(&f), ORION_EBODY);
  cr_expect(strstr(f.err.msg, "may run concurrently (schedule 2d-ordered)")
                != NULL, "%s", f.err.msg);
  teardown(&f);
}

/* An ordered wavefront: (0, 1) waits for (0, 0).  Its read at an element
 * later in key order than (0, 0)'s write is what the serial order does;
 * one earlier in key order ran against it. */
Test(verify, ordered_blocks_must_follow_key_order) {
  fixture f;
  setup(&f, ORION_ORDER_WAVEFRONT, ORION_MSG_VERIFY_ORDER);
  touch(&f, 0, 3, 4, W, 10);
  touch(&f, 1, 3, 4, R, 12);
  cr_expect_eq(check(&f), 0, "%s", f.err.msg);
  teardown(&f);
  setup(&f, ORION_ORDER_WAVEFRONT, ORION_MSG_VERIFY_ORDER);
  touch(&f, 0, 3, 4, W, 10);
  touch(&f, 1, 3, 4, R, 8);
  cr_assert_eq(check(&f), ORION_EBODY);
  cr_expect(strstr(f.err.msg,
                   "the ordered loop's schedule (2d-ordered) runs block "
                   "(space 0, time 0) at clock 0 before block (space 0, "
                   "time 1) at clock 1, but array 'X' at key (element 3) "
                   "is touched in the other order of keys: block (space 0, "
                   "time 0) at clock 0 writes it at t.lua:12 for a later "
                   "element than the one for which block (space 0, time 1) "
                   "at clock 1 reads it at t.lua:11") != NULL,
            "%s", f.err.msg);
  teardown(&f);
}

/* Reads alone never conflict, nor does a block with itself; of several
 * conflicts the one at the smallest key is named. */
Test(verify, the_first_conflict_in_key_order_is_named) {
  fixture f;
  setup(&f, ORION_ORDER_ALL, ORION_MSG_VERIFY_KEYS);
  touch(&f, 0, 0, 100, R, -1);
  touch(&f, 2, 0, 100, R, -1);
  touch(&f, 0, 200, 201, R | W, -1);
  cr_expect_eq(check(&f), 0, "%s", f.err.msg);
  touch(&f, 2, 150, 400, W, -1);
  touch(&f, 0, 300, 301, W, -1);
  touch(&f, 2, 40, 41, W, -1);
  cr_assert_eq(check(&f), ORION_EBODY);
  cr_expect(strstr(f.err.msg, "at key (element 40),") != NULL, "%s",
            f.err.msg);
  teardown(&f);
}

/* A block out of range, or a line naming a source not sent, is refused;
 * more blocks than the check takes too, naming the limit. */
Test(verify, bad_input_is_refused) {
  fixture f;
  orion_msg_key_range r;
  orion_verify big;
  setup(&f, ORION_ORDER_ALL, ORION_MSG_VERIFY_KEYS);
  memset(&r, 0, sizeof r);
  r.array = 7;
  r.hi = 1;
  r.flags = R;
  r.rline = 3;
  r.rsrc = 1;
  cr_expect_eq(orion__verify_add(&f.v, 4, &r, 1, src, 1), ORION_EINVAL);
  cr_expect_eq(orion__verify_add(&f.v, 0, &r, 1, src, 1), ORION_EINVAL);
  teardown(&f);
  orion_error_clear(&f.err);
  cr_expect_eq(orion__verify_init(&big, ORION_VERIFY_MAX_BLOCKS + 1,
                                  ORION_MSG_VERIFY_KEYS, &f.err),
               ORION_EINVAL);
  cr_expect(strstr(f.err.msg, "the check takes at most 16384") != NULL,
            "%s", f.err.msg);
}
