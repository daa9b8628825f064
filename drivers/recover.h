/* Automatic recovery for orion-driver (issue 19, --max-restarts): when an
 * executor is lost and the job has a checkpoint directory, the driver
 * stops the other executors (dsm/cluster.c), says which executor failed,
 * where, and how many steps will be redone, and runs itself again with
 * --resume: a fresh process, a fresh Lua state and fresh executors started
 * by the same launcher, the script resuming from its newest complete
 * checkpoint (lua/checkpoint.h).  docs/checkpoints.md has the guarantees
 * and docs/design-notes.md why the whole driver starts again. */
#ifndef ORION_DRIVERS_RECOVER_H
#define ORION_DRIVERS_RECOVER_H

#include <lua.h>

#include "drivers/launcher.h"

#define ORION_RECOVER_MAX 1000 /* the most --max-restarts allows */

typedef struct orion_recover {
  int max_restarts; /* --max-restarts N; -1: not given (3 with a checkpoint
                       directory) */
  double period;    /* --max-restarts N/PERIOD: the window in seconds
                       (default 3600) */
  char period_text[32]; /* PERIOD as given ("1h"), for messages */
  int restarts;     /* restarts before this process ($ORION_RESTART) */
  /* When the restarts within the window before this process happened
   * ($ORION_RESTART_TIMES: CLOCK_MONOTONIC seconds, which a restart, the
   * same process, keeps), oldest first. */
  double times[ORION_RECOVER_MAX];
  int ntimes;
  int argc;
  char **argv;      /* the driver's command line, to run again */
  const char *dir;  /* --checkpoint-dir */
  int lock_fd;      /* its lock (dsm/ckpt.h), handed to the restart; -1 */
  lua_State *L;     /* the script's state, for its progress */
  int quiet;
} orion_recover;

/* Reads $ORION_RESTART (the restarts before this process; set by the one
 * before it) and $ORION_RESTART_TIMES into r. */
void orion_recover_init(orion_recover *r, int argc, char **argv);

/* Parses --max-restarts N[/PERIOD] (PERIOD: a number of seconds, or with
 * s, m, h or d; N alone keeps the period of an hour) into r: 0, or -1
 * with msg (n bytes) saying what is wrong. */
int orion_recover_parse_limit(orion_recover *r, const char *arg, char *msg,
                              size_t n);

/* Arms the cluster's failure hook when the job can restart: a checkpoint
 * directory, restarts left, and a launcher that can start executors again
 * (local or ssh).  Says why not with -v otherwise. */
void orion_recover_arm(orion_recover *r, const orion_launcher *l,
                       lua_State *L);

/* Runs the driver again with its command line and --resume=auto (the
 * checkpoint folder's lock passed on); returns only when it cannot, having
 * said why.  The restart above and --elastic's re-forming use it. */
void orion_recover_exec(orion_recover *r);

/* ssh: a slot whose host failed twice ($ORION_FAILED_HOSTS, kept by the
 * restarts) moves to another host of the hosts file that has not, and
 * says so. */
void orion_recover_hosts(orion_launcher *l, int quiet);

#endif
