/* The bandwidth budget of an executor's managed buffers (flush =
 * "managed", executor/exec_managed.h): a token bucket filled at the budget's
 * rate, spent at each block's end, and within a block every few
 * milliseconds (the core's tick), on the buffers' largest pending writes.
 * The rate is the driver's --bandwidth-mbps when it gave one (LOAD_BODY),
 * otherwise the link rate this executor measured: the fastest large frame
 * it has read so far, from the driver or a peer (dsm/net.h's rx_rate),
 * and no limit before it has read one. */
#include <stdint.h>

#include "executor/exec_state.h"
#include "util/clock.h"

/* The bucket holds at most this many seconds of the rate. */
#define BURST_SECONDS 1.0
/* Within a block, sends are at least this far apart. */
#define TICK_SECONDS 0.002

void orion__budget_start(exec_state *x, double mbps) {
  double link;
  pthread_mutex_lock(&x->mu);
  link = x->link_bps;
  pthread_mutex_unlock(&x->mu);
  x->budget_bps = mbps > 0 ? mbps * 1e6 / 8 : link;
  x->tokens = 0;
  x->tokens_t = orion_now();
}

int orion__budget_send(exec_state *x, orion_error *err) {
  double now = orion_now(), max = 1e15; /* no limit: 1 PB */
  int64_t used = 0;
  int rc;
  if (x->budget_bps > 0) {
    x->tokens += x->budget_bps * (now - x->tokens_t);
    if (x->tokens > x->budget_bps * BURST_SECONDS)
      x->tokens = x->budget_bps * BURST_SECONDS;
    max = x->tokens;
  }
  x->tokens_t = now;
  if (max < ORION_MANAGED_ITEM_BYTES || !orion_exec_managed_pending(x->ex))
    return 0;
  rc = orion_exec_managed_send(x->ex, (int64_t)max, &used, err);
  if (x->budget_bps > 0)
    x->tokens -= (double)used;
  return rc;
}

int orion__budget_tick(void *ud, orion_error *err) {
  exec_state *x = ud;
  if (orion_now() - x->tokens_t < TICK_SECONDS)
    return 0;
  return orion__budget_send(x, err);
}

void orion__budget_observe(exec_state *x) {
  double r = x->conn != NULL ? x->conn->rx_rate : 0;
  int i;
  for (i = 0; x->peers != NULL && i < x->npeers; i++) {
    if (x->peers[i].in != NULL && x->peers[i].in->rx_rate > r)
      r = x->peers[i].in->rx_rate;
    if (x->peers[i].out != NULL && x->peers[i].out->rx_rate > r)
      r = x->peers[i].out->rx_rate;
  }
  pthread_mutex_lock(&x->mu);
  if (r > x->link_bps)
    x->link_bps = r;
  pthread_mutex_unlock(&x->mu);
}
