/* What the driver checks in the frames executors send (scheduler/dist.c's
 * handlers): a frame that fails a check ends the job (exit 3, the
 * executor's connection with it) with a message that names the executor,
 * its address, the frame and the field. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/dist_int.h"
#include "scheduler/dist_check.h"

/* Ends the job for executor e's malformed `what` frame: the message names
 * the executor, its address, the frame and the field (fmt) that is wrong.
 * The executor's connection goes with the job. */
void orion__dist_bad_frame(loop_run *r, int e, const char *what,
                           const char *fmt, ...) {
  char field[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(field, sizeof field, fmt, ap);
  va_end(ap);
  orion_cluster_fail(r->cl, "executor %d (%s) sent a malformed %s frame: %s", e,
                     orion_cluster_addr(r->cl, e), what, field);
}

/* A decoder's code for executor e's `what` frame: memory running out ends
 * the job as such, anything else as a malformed frame, with the field the
 * decoder names (err, "WHAT payload: ..."). */
void orion__dist_check_decoded(loop_run *r, int e, const char *what, int rc,
                               const orion_error *err) {
  const char *why = err->msg;
  size_t n = strlen(what);
  if (rc == ORION_ENOMEM)
    orion_cluster_fail(r->cl, "out of memory reading a %s frame", what);
  if (rc == 0)
    return;
  if (strncmp(why, what, n) == 0 && strncmp(why + n, " payload: ", 10) == 0)
    why += n + 10;
  orion__dist_bad_frame(r, e, what, "%s",
                        why[0] != '\0' ? why : orion_strerror(rc));
}

/* Seconds an executor reports: finite and not negative. */
void orion__dist_check_seconds(loop_run *r, int e, const char *what,
                               const char *field, double s) {
  if (!(s >= 0 && s <= 1e12))
    orion__dist_bad_frame(r, e, what, "its %s is %g", field, s);
}
