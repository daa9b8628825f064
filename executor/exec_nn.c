/* orion.nn in an executor's Lua state: the host through which the binding
 * (lua/nn.c) reads the array, slice and buffer proxies bodies see
 * (lua/exec.h), and writes buffers as pending values.  It belongs to the
 * executor host (lua/exec*), which includes lua/nn.h, never the reverse. */
#include "executor/nn.h"

#include <string.h>

#include "executor/exec.h"
#include "executor/exec_int.h"

/* The proxy at idx (see orion__nn_host). */
static int data_of(lua_State *L, int idx, const char *fn, const char *what,
                   orion__nn_data *d) {
  orion_exec_view ev;
  if (!orion_exec_view_of(L, idx, &ev))
    return 0;
  d->a = ev.a;
  d->off = ev.off;
  d->depth = ev.depth;
  d->name = ev.name;
  d->buffer = ev.buffer;
  d->guard = ev.guard;
  return 1;
}

/* Pending values of a buffer proxy. */
static int pend(const orion__nn_data *d, int64_t first, const float *x,
                const float *x0, int64_t n, double alpha, int replace) {
  orion_exec_view ev;
  memset(&ev, 0, sizeof ev);
  ev.a = d->a;
  ev.off = d->off;
  ev.depth = d->depth;
  ev.name = d->name;
  ev.buffer = d->buffer;
  return orion_exec_view_pend(&ev, first, x, x0, n, alpha, replace);
}

/* The runtime guard: nn stores into an array the plan placed read-only. */
static void refuse(lua_State *L, const orion__nn_data *d) {
  orion_exec_view ev;
  memset(&ev, 0, sizeof ev);
  ev.a = d->a;
  ev.name = d->name;
  ev.guard = d->guard;
  orion_exec_guard_refuse(L, &ev);
}

static const orion__nn_host host = {data_of, NULL, pend, refuse};

/* An executor's table: the proxies as array data, stubs for the driver's
 * functions. */
int orion_nn_open_body(lua_State *L) {
  return orion__nn_open(L, &host, NULL);
}

int orion_exec_nn_gpu(orion_exec *ex, struct orion_gpu *g, orion_error *err) {
  return orion_nn_set_gpu(ex->L, g, err);
}
