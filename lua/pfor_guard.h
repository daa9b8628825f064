/* The runtime guard's driver side (lua/pfor_guard.c): from a loop's plan,
 * the arrays its body must not write directly, each with the placement
 * that a guarded write's message names.  The interpreter enforces them on
 * every executor, the driver's own included (executor/exec.h's
 * orion_exec_guard_array); a compiled body is checked here, at launch.
 *
 * Driver thread only. */
#ifndef ORION_LUA_PFOR_GUARD_H
#define ORION_LUA_PFOR_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/msg.h"
#include "executor/exec.h"
#include "util/cbody.h"

struct orion_plan;

/* A loop's guards: v[i].placement points into text[i].  Zero it to start;
 * free with orion__pfor_guards_free. */
typedef struct orion_pfor_guards {
  orion_msg_guard *v;
  char (*text)[ORION_MSG_GUARD_MAX + 1];
  int n;
} orion_pfor_guards;

/* Fills g with the arrays among ids[0..nids) (the loop's bound arrays)
 * that plan p does not expect the body to write directly: every one but
 * the iterated array and those the plan counts direct writes of.  An array
 * the plan does not list (the analysis did not see the body use it) is
 * guarded too.  p NULL (a serial loop: nothing is planned) guards nothing.
 * The test hook ORION_TEST_PLAN_READONLY=NAME also guards the plan's array
 * NAME, as if the plan placed it read-only.  Returns 0 or ORION_ENOMEM. */
int orion__pfor_guards_make(orion_pfor_guards *g, const struct orion_plan *p,
                            int64_t iter_id, const int64_t *ids, int nids);

/* Marks g's arrays on ex (bound already; before orion_exec_load). */
void orion__pfor_guards_apply(const orion_pfor_guards *g, orion_exec *ex);

/* A compiled body writes its arrays through raw pointers, so it is
 * checked before it runs: 1, with msg the guard's refusal, when one of
 * slots[0..nslots) is an array the generated code stores into (its wline)
 * that g guards; chunk names the body's file as messages do.  0 otherwise. */
int orion__pfor_guards_cbody(const orion_pfor_guards *g,
                             const orion_cslot *slots, int nslots,
                             const char *chunk, char *msg, size_t n);

void orion__pfor_guards_free(orion_pfor_guards *g);

#endif
