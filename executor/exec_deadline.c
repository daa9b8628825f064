/* The loop deadline (opts.timeout, orion-driver --loop-timeout): a block
 * that runs longer than the loop's timeout fails with an error naming the
 * executor, the block and the element in progress, like an error the body
 * raised there.  An interpreted body is stopped by a count hook that looks
 * at the clock every HOOK_EVERY virtual-machine instructions; a compiled
 * one polls (util/cbody.h's poll) at each element and at each back edge
 * of its loops, and the poll looks at the clock every POLL_EVERY calls.
 * What the body catches of that error does not save it (see hook).
 * A body blocked inside one C function (a huge string.rep) is stopped once
 * it returns; the driver's watch (scheduler/dist_watch.c) ends the job should an
 * executor never report the block. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>

#include "executor/exec.h"
#include "executor/exec_deadline.h"
#include "executor/exec_int.h"
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

/* The count hook, in the body's thread or any coroutine it made (a new
 * thread inherits its creator's hook).  Before the deadline it looks at
 * the clock every HOOK_EVERY instructions.  Past it, it raises the same
 * error at every instruction of every thread it runs in, and the element
 * loop checks `expired` when the body returns: a body that catches the
 * error (pcall, xpcall, coroutine.resume, a coroutine.wrap inside pcall)
 * can then neither go on computing nor end its element normally. */
static void hook(lua_State *L, lua_Debug *ar) {
  orion_exec *ex;
  (void)ar;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_key);
  ex = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (ex == NULL || ex->timeout <= 0) {
    /* A coroutine kept from a loop with a deadline, in one without. */
    lua_sethook(L, NULL, 0, 0);
    return;
  }
  if (!ex->expired) {
    char msg[160];
    if (orion_now() <= ex->deadline) {
      /* A coroutine kept from a block that ran past its deadline still
       * has the every-instruction hook: back to the cheap one. */
      if (lua_gethookcount(L) != HOOK_EVERY)
        lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY);
      return;
    }
    past(ex, msg, sizeof msg);
    luaL_where(L, 1); /* the body's line, as an error it raised has */
    snprintf(ex->past, sizeof ex->past, "%s%s", lua_tostring(L, -1), msg);
    lua_pop(L, 1);
    ex->expired = 1;
  }
  lua_sethook(L, hook, LUA_MASKCOUNT, 1);
  if (L != ex->L)
    lua_sethook(ex->L, hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, ex->past);
  lua_error(L);
}

/* The continuation of calls that may yield: their results as they are. */
static int results(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  return lua_gettop(L);
}

/* A message handler of xpcall, wrapped (upvalue 1: the body's handler).
 * Lua calls a message handler with hooks off when the error came from a
 * hook, so a handler that looped would run for ever: past the deadline
 * the error passes through unhandled. */
static int guard(lua_State *L) {
  orion_exec *ex;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_key);
  ex = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (ex != NULL && ex->expired)
    return 1;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* xpcall(f, msgh, ...) with msgh guarded (upvalue 1: the real xpcall). */
static int guarded_xpcall(lua_State *L) {
  luaL_checkany(L, 2);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, guard, 1);
  lua_replace(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, results);
  return lua_gettop(L);
}

void orion__exec_deadline_open(lua_State *L) {
  if (lua_getglobal(L, "xpcall") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  lua_pushcclosure(L, guarded_xpcall, 1);
  lua_setglobal(L, "xpcall");
}

void orion__exec_deadline_start(orion_exec *ex, int64_t block) {
  ex->tblock = block;
  ex->expired = 0;
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

void orion__exec_deadline_check(lua_State *L, orion_exec *ex) {
  if (ex->expired) {
    lua_pushstring(L, ex->past);
    lua_error(L);
  }
}

int orion__exec_cpoll(orion_cctx *c) {
  orion_exec *ex = c->ud;
  c->poll_left = POLL_EVERY;
  if (orion_now() <= ex->deadline)
    return 0;
  past(ex, c->err, sizeof c->err);
  return 1;
}
