/* Checks of the executors' frames on the driver (dist_check.c). */
#ifndef ORION_SCHEDULER_DIST_CHECK_H
#define ORION_SCHEDULER_DIST_CHECK_H

#include "dsm/msg.h"
#include "scheduler/dist_int.h"
#include "util/error.h"

/* Executor e's `what` frame is malformed: ends the job with "executor E
 * (ADDR) sent a malformed WHAT frame: " and the field (fmt) that is wrong
 *. */
void orion__dist_bad_frame(loop_run *r, int e, const char *what,
                           const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
/* A decoder's code rc for executor e's `what` frame: 0 returns; out of
 * memory ends the job as such; anything else as a malformed frame naming
 * the field the decoder's err names. */
void orion__dist_check_decoded(loop_run *r, int e, const char *what, int rc,
                               const orion_error *err);
/* Ends the job unless seconds s (the frame's `field`) are finite and not
 * negative. */
void orion__dist_check_seconds(loop_run *r, int e, const char *what,
                               const char *field, double s);

/* Which runs a frame may carry: of any dense array of the loop
 * (BLOCK_DONE), of the sender's own chunks of sharded ones (SHARD_DATA). */
enum { RUNS_ANY, RUNS_OWNED };
/* The loop's use of array id, or NULL. */
arr_use *orion__dist_use_of(loop_run *r, int64_t id);
/* Copies the runs of executor e's `what` frame into the driver's copies,
 * which e then holds as of dispatch number seq; a run the frame may not
 * carry (`may`) ends the job. */
void orion__dist_take_runs(loop_run *r, int e, const char *what,
                           const orion_msg_run *runs, int64_t n, int may,
                           uint64_t seq);
/* The ranges owner e kept (SHARD_DATA after a SHARD_PULL with keep): it
 * holds their newest values; a range not of its own shard chunks ends the
 * job. */
void orion__dist_take_kept(loop_run *r, int e, const orion_msg_range *kept,
                           int64_t n);

#endif
