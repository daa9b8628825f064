/* What the driver checks in the frames executors send (scheduler/dist.c's
 * handlers), and the runs of values it takes from them into its copies: a
 * frame that fails a check ends the job (exit 3, the
 * executor's connection with it) with a message that names the executor,
 * its address, the frame and the field. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dsm/holders.h"
#include "dsm/msg.h"
#include "dsm/proto.h" /* orion_shard_first */
#include "dsm/replica.h"
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

/* ---- payloads the executors send, and what the driver does with them ---- */

arr_use *orion__dist_use_of(loop_run *r, int64_t id) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].d->id == id)
      return &r->use[i];
  return NULL;
}

/* Copies a run into the driver's copy of u; ORION_EPARSE when it does not
 * fit u. */
static int apply_run(arr_use *u, const orion_msg_run *m) {
  /* An executor reports only runs that changed something. */
  return m->count > 0 ? orion_msg_run_apply(u->d->a, m) : ORION_EPARSE;
}

static int run_allowed(const loop_run *r, int e, const arr_use *u,
                       const orion_msg_run *run, int may) {
  int64_t c0, c1;
  if (u == NULL || may == RUNS_ANY) /* a shard's changes go to its owner */
    return u != NULL && !u->sharded;
  if (!u->sharded || run->count <= 0)
    return 0;
  c0 = run->first / u->c->row_elems / u->c->chunk;
  c1 = (run->first + run->count - 1) / u->c->row_elems / u->c->chunk;
  return c1 >= c0 && c0 >= orion_shard_first(e, r->n, u->c->nchunks) &&
         c1 < orion_shard_first(e + 1, r->n, u->c->nchunks);
}

/* Copies the runs of executor e's `what` frame into the driver's copies,
 * which e then holds as of dispatch number seq; a run the frame may not
 * carry (see run_allowed) ends the job. */
void orion__dist_take_runs(loop_run *r, int e, const char *what,
                           const orion_msg_run *runs, int64_t n, int may,
                           uint64_t seq) {
  int64_t k;
  for (k = 0; k < n; k++) {
    arr_use *u = orion__dist_use_of(r, runs[k].array);
    if (u == NULL)
      orion__dist_bad_frame(r, e, what,
                            "run %lld's array %lld is not an array of the "
                            "loop",
                            (long long)k, (long long)runs[k].array);
    if (!run_allowed(r, e, u, &runs[k], may))
      orion__dist_bad_frame(r, e, what,
                            "run %lld (array %lld, elements %lld..+%lld) "
                            "is not %s",
                            (long long)k, (long long)runs[k].array,
                            (long long)runs[k].first, (long long)runs[k].count,
                            may == RUNS_ANY
                                ? "of a dense array the driver serves"
                                : "of the sender's own shard chunks");
    if (apply_run(u, &runs[k]) != 0)
      orion__dist_bad_frame(r, e, what,
                            "run %lld (elements %lld..+%lld, %zu bytes) "
                            "does not fit array %lld (%lld elements)",
                            (long long)k, (long long)runs[k].first,
                            (long long)runs[k].count, runs[k].len,
                            (long long)runs[k].array, (long long)u->d->a->nnz);
    orion_replica_changed(u->c, e, seq, runs[k].first, runs[k].count);
  }
}

/* The ranges an owner kept (SHARD_DATA after a SHARD_PULL with keep): it
 * holds their newest values, the driver's copy is stale there until the
 * script reads the array (orion__dist_reclaim) or a loop binds it
 * otherwise (orion__resid_prepare). */
void orion__dist_take_kept(loop_run *r, int e, const orion_msg_range *kept,
                           int64_t n) {
  int64_t k;
  for (k = 0; k < n; k++) {
    arr_use *u = orion__dist_use_of(r, kept[k].array);
    orion_msg_run as_run;
    memset(&as_run, 0, sizeof as_run);
    as_run.array = kept[k].array;
    as_run.first = kept[k].first;
    as_run.count = kept[k].count;
    if (u == NULL || kept[k].first < 0 ||
        kept[k].count > u->d->a->nnz - kept[k].first ||
        !run_allowed(r, e, u, &as_run, RUNS_OWNED))
      orion__dist_bad_frame(r, e, "SHARD_DATA",
                            "kept range %lld (array %lld, elements "
                            "%lld..+%lld) is not of its own shard chunks",
                            (long long)k, (long long)kept[k].array,
                            (long long)kept[k].first,
                            (long long)kept[k].count);
    orion_replica_changed(u->c, e, r->pull_seq, kept[k].first, kept[k].count);
    if (orion_holders_set(&u->c->held, kept[k].first,
                          kept[k].first + kept[k].count, e) != 0)
      orion_cluster_fail(r->cl, "out of memory ending %s", r->j->where);
  }
}
