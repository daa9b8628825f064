/* Starting the cluster (scheduler/dist.h, scheduler/dist_int.h): on the first loop or
 * parallel load, or, with one executor, launched before the driver parses
 * the first data file and finished at the next use, so that the
 * executor's start-up overlaps the parse. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dsm/cluster.h"
#include "scheduler/dist.h"
#include "scheduler/dist_int.h"
#include "scheduler/dist_start.h"
#include "scheduler/jobpage.h"
#include "scheduler/module.h"

static void cannot_start(const orion_error *err) {
  fflush(stdout);
  fprintf(stderr, "orion-driver: cannot start the cluster: %s\n", err->msg);
  exit(ORION_EXIT_CLUSTER);
}

orion_cluster *orion__dist_cluster(mod_state *s) {
  orion_error err;
  orion_cluster_opts o = s->copts;
  if (s->cl != NULL)
    return s->cl;
  o.nexec = s->nexec;
  orion_error_clear(&err);
  if (s->cl_starting != NULL) {
    s->cl = orion_cluster_finish(s->cl_starting, &err);
    s->cl_starting = NULL;
  } else {
    s->cl = orion_cluster_start(&o, &err);
  }
  if (s->cl == NULL)
    cannot_start(&err);
  s->nexec = orion_cluster_size(s->cl); /* fewer in a re-formed elastic
                                           job when some did not return */
  orion_jobpage_cluster(s->cl);
  return s->cl;
}

void orion__dist_prestart(mod_state *s, const char *path) {
  struct stat st;
  orion_error err;
  orion_cluster_opts o = s->copts;
  if (s->nexec < 1 || s->cl != NULL)
    return;
  if (s->cl_starting != NULL) {
    (void)orion__dist_cluster(s);
    return;
  }
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > ORION__PRESTART_BYTES)
    return;
  o.nexec = s->nexec;
  orion_error_clear(&err);
  s->cl_starting = orion_cluster_begin(&o, &err);
  if (s->cl_starting == NULL)
    cannot_start(&err);
}
