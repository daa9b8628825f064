/* orion-driver --verify's keys as the executors report them (dist_keys.c). */
#ifndef ORION_SCHEDULER_DIST_KEYS_H
#define ORION_SCHEDULER_DIST_KEYS_H

#include "dsm/wire.h"
#include "scheduler/dist_int.h"

/* orion-driver --verify: executor e's BLOCK_KEYS frame f, for a block it
 * was sent and has not reported done, into the job's keys
 * (scheduler/dist_keys.c); any other ends the job as a malformed frame. */
void orion__dist_block_keys(loop_run *r, int e, const orion_wire_frame *f);

#endif
