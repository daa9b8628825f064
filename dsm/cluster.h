/* The driver's side of a job's executors: starting them (local processes,
 * ssh, srun/mpirun, or by hand), their registration, heartbeats, and the
 * end of the job.  lua/dist.c drives loops over it.
 *
 * Failures are final: when an executor dies, closes its connection or stays
 * silent past the heartbeat timeout, the cluster prints one message naming
 * the executor, its host and what the driver was doing, stops every other
 * executor, and exits the driver process with code 3.
 *
 * Single-threaded: everything runs on the driver's thread, inside
 * orion_cluster_wait.
 */
#ifndef ORION_DSM_CLUSTER_H
#define ORION_DSM_CLUSTER_H

#include <stdint.h>
#include <uv.h>

#include "dsm/net.h"
#include "util/error.h"

#define ORION_EXIT_CLUSTER 3

typedef enum orion_launcher {
  ORION_LAUNCH_LOCAL = 0, /* spawn executors on this machine */
  ORION_LAUNCH_SSH,       /* --hosts FILE: one ssh per executor slot */
  ORION_LAUNCH_SLURM,     /* srun started every rank; rank 0 is the driver */
  ORION_LAUNCH_MPI,       /* likewise under mpirun */
  ORION_LAUNCH_MANUAL     /* print the commands, wait for them */
} orion_launcher;

typedef struct orion_cluster_opts {
  orion_launcher launcher;
  int nexec;              /* executors (local, manual; from the hosts file
                             or the rank size otherwise) */
  const char *hosts_file; /* ORION_LAUNCH_SSH */
  const char *listen;     /* HOST[:PORT] the driver listens on; NULL: the
                             launcher's default */
  const char *executor;   /* the orion-executor program; NULL: beside the
                             driver, else on PATH */
  double register_timeout; /* seconds to wait for every executor */
  double heartbeat_timeout; /* seconds of silence that mean dead */
  int quiet;
} orion_cluster_opts;

void orion_cluster_opts_init(orion_cluster_opts *o);

typedef struct orion_cluster orion_cluster;

/* What the loop in progress does with the executors' frames. */
typedef void (*orion_cluster_frame_fn)(void *ud, int exec,
                                       const orion_wire_frame *f);

/* Starts the executors and waits until every one has registered.  Returns
 * NULL with err set (the executors started are stopped) when the driver
 * cannot listen, a launch fails, or some never register in time (err names
 * them). */
orion_cluster *orion_cluster_start(const orion_cluster_opts *o,
                                   orion_error *err);

int orion_cluster_size(const orion_cluster *c);

/* The executor's address as it registered ("127.0.0.1:40312"). */
const char *orion_cluster_addr(const orion_cluster *c, int exec);

/* Queues frames (complete, in b, taken) to executor exec. */
void orion_cluster_send(orion_cluster *c, int exec, orion_buf *b);

/* Sets the handler of executor frames (other than heartbeats) and what the
 * driver is doing, for failure messages ("in the parallel_for at x.lua:3"). */
void orion_cluster_set_handler(orion_cluster *c, orion_cluster_frame_fn fn,
                               void *ud, const char *doing);

/* Runs the event loop until done(ud) returns nonzero.  Never returns on a
 * cluster failure (the process exits with ORION_EXIT_CLUSTER). */
void orion_cluster_wait(orion_cluster *c, int (*done)(void *), void *ud);

/* Bytes read from and written to executors so far. */
uint64_t orion_cluster_bytes(const orion_cluster *c);

/* Ends the job: SHUTDOWN to every executor, waits briefly for local ones to
 * exit, kills the rest, and frees c. */
void orion_cluster_stop(orion_cluster *c);

/* Ends the job after a fatal problem: prints "orion-driver: MSG", stops
 * the executors and exits with ORION_EXIT_CLUSTER. */
void orion_cluster_fail(orion_cluster *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Under --launcher slurm|mpi: on ranks other than 0 this replaces the
 * process with orion-executor (never returns on success); on rank 0 it
 * returns 0 and fills o->nexec and o->listen.  Returns a negative code
 * with err set when the environment is incomplete. */
int orion_cluster_rank_setup(orion_cluster_opts *o, orion_error *err);

#endif
