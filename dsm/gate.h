/* The driver's gate: the connections that have not registered yet, kept
 * from crowding out the job's executors.  A connection has
 * ORION_GATE_DEADLINE_S seconds to authenticate and register (dsm/net.c
 * ends those that have not authenticated after ORION_CONN_HANDSHAKE_S).
 * One address may hold ORION_GATE_PER_HOST of them at once and all
 * addresses ORION_GATE_MAX: a new connection over either cap closes the
 * oldest one waiting (of its address, or of all).  A real executor
 * authenticates and registers within milliseconds of connecting, so a
 * client that holds connections open, even from the executors' own
 * address, only ever pushes out its own; an executor whose connection is
 * pushed out all the same tries again (drivers/executor.c).
 *
 * Refusals are logged at most ORION_GATE_LOG_BURST lines per
 * ORION_GATE_LOG_S seconds; the rest are counted, and the count is logged
 * once the interval is over ("refused N more connections ...").
 *
 * Loop thread only.
 */
#ifndef ORION_DSM_GATE_H
#define ORION_DSM_GATE_H

#include "dsm/net.h"

#define ORION_GATE_MAX 256
#define ORION_GATE_PER_HOST 16
#define ORION_GATE_DEADLINE_S 10
#define ORION_GATE_LOG_BURST 3
#define ORION_GATE_LOG_S 10

typedef struct orion_gate {
  orion_conn *conn[ORION_GATE_MAX];
  double since[ORION_GATE_MAX];
  double log_start;  /* the logging interval's start */
  int logged;        /* lines in it */
  long hidden;       /* refusals counted, not logged */
  char last[400];    /* the last one hidden: "from HOST:PORT: REASON" */
} orion_gate;

void orion_gate_init(orion_gate *g);

/* A connection was accepted: it waits in the gate; over a cap, the
 * oldest one waiting (of its address, or of all) is closed for it. */
void orion_gate_admit(orion_gate *g, orion_conn *conn);

/* conn registered or closed: it leaves the gate. */
void orion_gate_remove(orion_gate *g, orion_conn *conn);

/* Once a tick: closes connections past the deadline, and logs the count
 * of refusals hidden in an interval that is over. */
void orion_gate_tick(orion_gate *g, double now);

/* A connection that never registered closed with reason: logged, or
 * counted when this interval has logged enough. */
void orion_gate_refused(orion_gate *g, const char *peer, const char *reason);

/* Logs what is still counted (at the end of the job). */
/* Closes every connection still waiting at the gate (net.c's close
 * callback frees each): at the job's end. */
void orion_gate_close_all(orion_gate *g, const char *why);
void orion_gate_flush(orion_gate *g);

#endif
