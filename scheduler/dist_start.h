/* Starting the cluster (dist_start.c). */
#ifndef ORION_SCHEDULER_DIST_START_H
#define ORION_SCHEDULER_DIST_START_H

#include "scheduler/dist_int.h"

/* The cluster, started now if it was not (scheduler/dist_start.c): finishes a
 * start that orion__dist_prestart began, or starts it whole.  Exits the
 * process (3) when it cannot start. */
orion_cluster *orion__dist_cluster(mod_state *s);

#endif
