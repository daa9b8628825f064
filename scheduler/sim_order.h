/* The order in which a simulated host starts its queued blocks
 * (scheduler/sim_order.c). */
#ifndef ORION_SCHEDULER_SIM_ORDER_H
#define ORION_SCHEDULER_SIM_ORDER_H

/* Of the queue from `head` (next[b]: the block after b, -1 at the end;
 * blocks numbered space part x n1 + time part), the block to start now,
 * or -1; *prev: the block before it in the queue (-1: it is the head).
 * Without reorder only the head, once ready[head]; with it the first
 * ready block that shares no part with a block before it. */
int orion__sim_pick(const int *next, int head, const unsigned char *ready,
                    int n1, int reorder, int *prev);

#endif
