/* Elastic jobs for orion-driver (issue 35, --elastic, --min-executors):
 * a lost executor no longer ends the job, and executors may join a running
 * one.  Either way the job re-forms: the driver lets its executors go
 * without SHUTDOWN (dsm/cluster.h, orion_cluster_release) and they
 * register again (orion-executor --elastic runs itself again with --join,
 * keeping the parts of files it parsed).  On a loss the driver runs
 * itself again (drivers/recover.h, orion_recover_exec) over the executors
 * that come back, listening where it listened, with the same token,
 * starting none, the script resuming from its newest checkpoint (from the
 * beginning without --checkpoint-dir).  Executors that join are taken at
 * the next loop boundary, in this process, the script going on where it
 * is (every array's rows back on the driver first).
 * Results are the same bits on any executor count, so the job ends with
 * the result of an undisturbed run.  docs/checkpoints.md ("Elastic
 * executors") has the guarantees, docs/design-notes.md why it is built
 * this way. */
#ifndef ORION_DRIVERS_ELASTIC_H
#define ORION_DRIVERS_ELASTIC_H

#include <lua.h>

#include "drivers/recover.h"
#include "dsm/cluster.h"

typedef struct orion_elastic {
  int on;             /* --elastic */
  int min;            /* --min-executors M (default 1) */
  int quiet;
  orion_recover *r;   /* for its command line, lock and orion_recover_exec */
  lua_State *L;       /* the script's, for its checkpoint progress */
} orion_elastic;

/* In a driver that a re-forming started ($ORION_ELASTIC_FORM): the cluster
 * options o listen where the job listened, keep its token and start no
 * executor (they register again), and *nexec is the count that comes
 * back (the job goes on with fewer when at least min come back within
 * the register timeout).  Nothing otherwise. */
void orion_elastic_adopt(orion_cluster_opts *o, int *nexec, int min);

/* Sets the cluster's elastic hook (when e->on): a loss with at least
 * e->min executors left, or executors waiting to join at a loop boundary,
 * re-form the job. */
void orion_elastic_arm(orion_elastic *e, lua_State *L);

#endif
