/* The loop deadline (opts.timeout, orion-driver --loop-timeout): a block
 * that runs longer than the loop's timeout fails with an error naming the
 * executor, the block and the element in progress, like an error the body
 * raised there.  An interpreted body is stopped by a count hook that looks
 * at the clock every HOOK_EVERY virtual-machine instructions; a compiled
 * one polls (util/cbody.h's poll) at each element and at each back edge
 * of its loops, and the poll looks at the clock every POLL_EVERY calls.
 * A body blocked inside one C function (a huge string.rep) is stopped once
 * it returns; the driver's watch (lua/dist_watch.c) ends the job should an
 * executor never report the block. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>

#include "lua/exec.h"
#include "lua/exec_int.h"
#include "util/clock.h"

enum { HOOK_EVERY = 4096, POLL_EVERY = 4096 };

/* The registry key of the executor the hook looks at. */
static const char hook_key = 'd';

void orion_exec_set_timeout(orion_exec *ex, double seconds) {
  ex->timeout = seconds > 0 ? seconds : 0;
}

double orion_exec_timeout(const orion_exec *ex) { return ex->timeout; }

/* The message of a block past its deadline. */
static void past(const orion_exec *ex, char *out, size_t n) {
  snprintf(out, n, "block %lld ran past the loop's timeout of %g s "
                   "(opts.timeout or --loop-timeout)",
           (long long)ex->tblock, ex->timeout);
}

static void hook(lua_State *L, lua_Debug *ar) {
  orion_exec *ex;
  char msg[160];
  (void)ar;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_key);
  ex = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (ex == NULL || ex->timeout <= 0 || orion_now() <= ex->deadline)
    return;
  past(ex, msg, sizeof msg);
  luaL_error(L, "%s", msg); /* with the body's line in front */
}

void orion__exec_deadline_start(orion_exec *ex, int64_t block) {
  ex->tblock = block;
  if (ex->timeout <= 0)
    return;
  ex->deadline = orion_now() + ex->timeout;
  lua_pushlightuserdata(ex->L, ex);
  lua_rawsetp(ex->L, LUA_REGISTRYINDEX, &hook_key);
  lua_sethook(ex->L, hook, LUA_MASKCOUNT, HOOK_EVERY);
}

void orion__exec_deadline_stop(orion_exec *ex) {
  if (ex->timeout > 0)
    lua_sethook(ex->L, NULL, 0, 0);
}

int orion__exec_cpoll(orion_cctx *c) {
  orion_exec *ex = c->ud;
  c->poll_left = POLL_EVERY;
  if (orion_now() <= ex->deadline)
    return 0;
  past(ex, c->err, sizeof c->err);
  return 1;
}
