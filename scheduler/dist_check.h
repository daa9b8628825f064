/* Checks of the executors' frames on the driver (dist_check.c). */
#ifndef ORION_SCHEDULER_DIST_CHECK_H
#define ORION_SCHEDULER_DIST_CHECK_H

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

#endif
