/* The rows of an array a block needs, and the runs an executor lacks
 * (dist_rows.c). */
#ifndef ORION_SCHEDULER_DIST_ROWS_H
#define ORION_SCHEDULER_DIST_ROWS_H

#include <stdint.h>

#include "dsm/msg.h"
#include "scheduler/dist_int.h"

/* Appends to v the stale rows of [lo, hi) of u for executor e (as
 * views of the driver's copy); 0 or ORION_ENOMEM. */
int orion__dist_add_rows(orion_msg_runvec *v, const arr_use *u, int e,
                         int64_t lo, int64_t hi, uint64_t seq);
/* The rows [*lo, *hi) of u that block b may touch (mode ACC_READ
 * or ACC_WRITE). */
void orion__dist_row_range(const loop_run *r, const arr_use *u, int b,
                           int mode, int64_t *lo, int64_t *hi);

#endif
