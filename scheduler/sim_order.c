/* Which queued block a simulated host starts (scheduler/sim.h): the
 * oldest, or with `reorder` the oldest whose rows are there and that
 * shares neither its space nor its time part with a block queued before
 * it, as executor/exec_order.c chooses.  Kept apart from sim.c so that
 * the model's cost terms and its order change independently. */
#include "config.h"

#include "scheduler/sim_order.h"

int orion__sim_pick(const int *next, int head, const unsigned char *ready,
                    int n1, int reorder, int *prev) {
  int b, k, before = -1;
  *prev = -1;
  if (head < 0)
    return -1;
  if (!reorder)
    return ready[head] ? head : -1;
  for (b = head; b >= 0; before = b, b = next[b]) {
    int clash = 0;
    for (k = head; k != b && !clash; k = next[k])
      clash = k / n1 == b / n1 || k % n1 == b % n1;
    if (!clash && ready[b]) {
      *prev = before;
      return b;
    }
  }
  return -1;
}
