/* The driver's side of a job's executors: listening for them, starting
 * them through the launcher it is given (a callback, so that this layer
 * knows nothing of ssh, srun or command lines), their registration,
 * heartbeats, and the end of the job.  scheduler/dist.c drives loops over it.
 *
 * Failures are final: when an executor dies, closes its connection or stays
 * silent past the heartbeat timeout, the cluster prints one message naming
 * the executor, its host and what the driver was doing, stops every other
 * executor, and exits the driver process with code 3 (after the failure
 * hook of drivers/recover.c, or instead the elastic hook of
 * drivers/elastic.c, which re-forms the job on the others).
 *
 * Single-threaded: everything runs on the driver's thread, inside
 * orion_cluster_wait.
 */
#ifndef ORION_DSM_CLUSTER_H
#define ORION_DSM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "dsm/net.h"
#include "util/error.h"

#define ORION_EXIT_CLUSTER 3

typedef struct orion_cluster orion_cluster;

/* What a launcher is told when the driver listens. */
typedef struct orion_cluster_launch_info {
  int n;                   /* executors to start: ids 0..n-1 */
  const char *driver;      /* "HOST:PORT" they connect to */
  const char *token;       /* the job's token, which they prove they hold */
  double register_timeout; /* seconds the cluster waits for them */
} orion_cluster_launch_info;

/* Starts the executors of cluster c, or arranges for them to start (the
 * driver layer's launcher, drivers/launcher.h: local processes, ssh, ranks
 * of srun/mpirun, commands printed for a user).  Processes it starts here
 * go through orion_cluster_spawn, so that the cluster sees them exit; it
 * names where each executor runs with orion_cluster_set_where.  Called
 * once, from orion_cluster_start, on the driver's thread.  Returns 0, or a
 * negative code with err set (the cluster then stops what was started). */
typedef int (*orion_cluster_launch_fn)(orion_cluster *c, void *ud,
                                       const orion_cluster_launch_info *info,
                                       orion_error *err);

/* What a launcher makes of one of its processes (orion_cluster_spawn with
 * relay set) that exited before its executor registered: `out` holds the
 * last bytes (at most ORION_CLUSTER_TAIL - 1) it wrote on stderr,
 * NUL-terminated, `status` its exit code (128+N for signal N).  Writes
 * one line of advice for the user into hint[0..n), without a newline
 * ("" when it has none), e.g. what to do about ssh's "Host key
 * verification failed". */
#define ORION_CLUSTER_TAIL 4096
typedef void (*orion_cluster_hint_fn)(void *ud, int exec, int status,
                                      const char *out, char *hint,
                                      size_t n);

typedef struct orion_cluster_opts {
  int nexec;              /* executors */
  const char *listen;     /* HOST[:PORT] the driver listens on; NULL:
                             127.0.0.1 */
  const char *token;      /* the job's token; NULL: a fresh one */
  orion_cluster_launch_fn launch; /* required */
  void *launch_ud;                /* its second argument */
  orion_cluster_hint_fn hint;     /* NULL: none; called with launch_ud */
  double register_timeout; /* seconds to wait for every executor */
  double heartbeat_timeout; /* seconds of silence that mean dead */
  int encrypt;              /* an orion_sec_policy (dsm/sec.h): AUTO,
                               ON (--encrypt), OFF (--no-encrypt) */
  int elastic;              /* orion-driver --elastic: executors that join
                               (HELLO with ORION_WIRE_ANY_EXECUTOR) wait
                               for the next re-forming (see
                               orion_cluster_set_elastic_hook) */
  int reform_min;           /* a re-formed elastic job (drivers/elastic.c):
                               when fewer than nexec executors register
                               again in time but at least this many (> 0),
                               the job goes on with those; 0: an error as
                               in any start */
  int load_parts;           /* an elastic job: the executors its files
                               are cut into parts for by parallel loading
                               (dsm/pload.c), the job's first count, kept
                               by re-formed drivers so that the survivors'
                               kept parts match; 0: the cluster's size */
  const char *relay_fds;    /* a re-formed elastic job: the read ends of
                               the pipes that carry the stderr of executors
                               an earlier driver of this process started
                               (space-separated descriptors, which the
                               cluster relays to stderr and closes); NULL */
} orion_cluster_opts;

void orion_cluster_opts_init(orion_cluster_opts *o);

/* What the loop in progress does with the executors' frames. */
typedef void (*orion_cluster_frame_fn)(void *ud, int exec,
                                       const orion_wire_frame *f);

/* What the loop in progress does when executor exec is lost: `what` says
 * who and how ("executor 1 (127.0.0.1:40312, pid 4242) was killed by
 * signal 9 (Killed)"); `silent` is 1 when it stopped answering (the
 * heartbeat timeout) and 0 when it died or closed its connection.  The
 * handler may end the job itself (orion_cluster_fail) with a message that
 * says what was lost with it; if it returns, the cluster fails with what. */
typedef void (*orion_cluster_lost_fn)(void *ud, int exec, int silent,
                                      const char *what);

/* Starts the executors and waits until every one has registered.  Returns
 * NULL with err set (the executors started are stopped) when the driver
 * cannot listen, a launch fails, or some never register in time (err names
 * them). */
orion_cluster *orion_cluster_start(const orion_cluster_opts *o,
                                   orion_error *err);

/* orion_cluster_start in two halves, so that the driver can do other work
 * (parse a file) while the executors start: begin listens and launches
 * them, without waiting (NULL with err set when it cannot listen or a
 * launch fails); finish waits until every one has registered, within
 * register_timeout from the call to finish, and returns c, or NULL with
 * err set and c freed, as orion_cluster_start.  Until finish the
 * executors' registrations wait in the listening socket; each executor
 * gives up on a driver that stays silent for its heartbeat timeout (10 s
 * by default), so begin only ahead of work that takes less. */
orion_cluster *orion_cluster_begin(const orion_cluster_opts *o,
                                   orion_error *err);
orion_cluster *orion_cluster_finish(orion_cluster *c, orion_error *err);

int orion_cluster_size(const orion_cluster *c);

/* The executor's address as it registered ("127.0.0.1:40312"). */
const char *orion_cluster_addr(const orion_cluster *c, int exec);

/* Whether executor k registered with a GPU (orion-executor --gpu): 1, with
 * its description ("GPU 0 (NVIDIA H100 80GB HBM3, 79.1 GiB, cc 9.0)")
 * copied into desc[0..n) when desc is not NULL; else 0 and desc "" (also
 * for k out of range, and before k registered). */
int orion_cluster_executor_gpu(const orion_cluster *c, int k, char *desc,
                               size_t n);
/* The device memory executor k may use (its --gpu-memory, else the
 * device's); 0 without a GPU. */
uint64_t orion_cluster_executor_gpu_cap(const orion_cluster *c, int k);

/* The host executor exec runs on, as a user knows it: the host the
 * launcher started it on (the hosts file's name, "127.0.0.1" for a local
 * one), else the host it registered from ("10.0.0.5"), else where the
 * launcher said it was ("rank 2").  Valid until the cluster is freed. */
const char *orion_cluster_host(orion_cluster *c, int exec);

/* Queues frames (complete, in b, taken) to executor exec. */
void orion_cluster_send(orion_cluster *c, int exec, orion_buf *b);
/* Bytes queued to executor exec that its connection has not written yet
 * (0 once it is gone). */
size_t orion_cluster_queued(const orion_cluster *c, int exec);

/* Sets the handler of executor frames (other than heartbeats) and what the
 * driver is doing, for failure messages ("in the parallel_for at x.lua:3"). */
void orion_cluster_set_handler(orion_cluster *c, orion_cluster_frame_fn fn,
                               void *ud, const char *doing);

/* Sets what happens when an executor is lost while the handler above is
 * set (same ud; NULL: the cluster fails at once).  Cleared with it. */
void orion_cluster_set_lost(orion_cluster *c, orion_cluster_lost_fn fn);

/* on 1: holds the frames sent to each executor from now on, so that those
 * sent in a row go in one write (the corked connections of a wait, below);
 * on 0: sends what is held and stops holding.  Not across a wait's end. */
void orion_cluster_hold(orion_cluster *c, int on);

/* Runs the event loop until done(ud) returns nonzero.  Never returns on a
 * cluster failure (the process exits with ORION_EXIT_CLUSTER). */
void orion_cluster_wait(orion_cluster *c, int (*done)(void *), void *ud);

/* What the driver knows of executor exec, for the job page (read-only,
 * valid until the next call into the cluster). */
typedef struct orion_cluster_peer_info {
  const char *where;  /* where it was started ("127.0.0.1", a host) */
  const char *addr;   /* where it connected from; "" before registering */
  int pid;            /* the process started for it here; 0: none */
  double last_heard;  /* orion_now() of its last frame; 0: none yet */
  int connected;      /* registered and its connection open */
  int exited;         /* the process started for it has exited */
} orion_cluster_peer_info;

void orion_cluster_peer(const orion_cluster *c, int exec,
                        orion_cluster_peer_info *out);

/* Calls fn(ud) on the driver's thread at every tick of the cluster's
 * timer (5 times a second) while the cluster waits, after the heartbeat
 * checks (NULL: none).  The job page publishes the executors from it. */
void orion_cluster_set_tick(orion_cluster *c, void (*fn)(void *), void *ud);

/* Bytes read from and written to executors so far. */
uint64_t orion_cluster_bytes(const orion_cluster *c);

/* The socket reads and writes that carried them so far (the driver's
 * system calls and wake-ups on the executors' connections). */
uint64_t orion_cluster_io(const orion_cluster *c);

/* Ends the job: SHUTDOWN to every executor, waits briefly for local ones to
 * exit, kills the rest, and frees c. */
void orion_cluster_stop(orion_cluster *c);

/* Ends the job after a fatal problem: prints "orion-driver: MSG", stops
 * the executors and exits with ORION_EXIT_CLUSTER. */
void orion_cluster_fail(orion_cluster *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* What the driver does after a cluster failure, before it exits with
 * ORION_EXIT_CLUSTER (drivers/recover.c: start the job again from its last
 * checkpoint): called once, after every executor was stopped, with the
 * executor that was lost (-1 when the failure named none), the host it ran
 * on (NULL with -1) and the message printed.  If it returns, the process
 * exits as before.  One for the process; NULL: none. */
typedef void (*orion_cluster_failure_fn)(void *ud, int exec, const char *host,
                                         const char *why);
void orion_cluster_set_failure_hook(orion_cluster_failure_fn fn, void *ud);

/* Elastic jobs (orion-driver --elastic, drivers/elastic.c).  The hook is
 * called (once for the process) instead of the failure hook when executor
 * `lost` is lost, before any executor is stopped, and by
 * orion_cluster_boundary with lost -1 when executors wait to join.  It
 * re-forms the job (orion_cluster_release, then the driver runs itself
 * again) and does not return; if it returns, a loss ends the job as
 * before. */
typedef void (*orion_cluster_elastic_fn)(void *ud, orion_cluster *c,
                                         int lost);
void orion_cluster_set_elastic_hook(orion_cluster_elastic_fn fn, void *ud);

/* A loop boundary where the job may re-form (a checkpoint was written):
 * calls the elastic hook when executors wait to join. */
void orion_cluster_boundary(orion_cluster *c);

/* Executors registered and connected, other than `except` (-1: none). */
int orion_cluster_live(const orion_cluster *c, int except);
/* Executors that connected with --join and wait for the next re-forming. */
int orion_cluster_joiners(const orion_cluster *c);
/* An elastic job's opts.load_parts (its cluster's size when 0); 0 for a
 * job without --elastic. */
int orion_cluster_load_parts(const orion_cluster *c);
/* Whether this cluster is a re-formed elastic job's (opts.reform_min). */
int orion_cluster_reformed(const orion_cluster *c);
/* Where the driver listens ("HOST:PORT", the bound port) and the job's
 * token: the driver that re-forms the job listens there again. */
const char *orion_cluster_listen_addr(const orion_cluster *c);
const char *orion_cluster_token(const orion_cluster *c);

/* Lets the executors go without SHUTDOWN, for a re-forming: the lost one
 * (-1: none) is killed when it is a process started here, and every
 * connection (joiners' included) is closed, which an executor started with
 * --elastic answers by registering again (orion-executor --join).  The
 * pids of live processes started here (those the next driver adopts) are
 * written space-separated into pids[0..n).  c is left to exit or exec. */
void orion_cluster_release(orion_cluster *c, int lost, char *pids, size_t n);

/* Frees c after orion_cluster_release, in a driver that goes on (an
 * elastic job re-formed in place): its handles closed, its port free for
 * the next cluster to listen on. */
void orion_cluster_discard(orion_cluster *c);

/* The read ends of the pipes that carry executors' stderr (those started
 * here with relay, and those of opts.relay_fds), as descriptors that stay
 * open across exec, space-separated into fds[0..n): for the next driver's
 * opts.relay_fds. */
void orion_cluster_keep_stderr(const orion_cluster *c, char *fds, size_t n);

/* For launchers: starts argv[0] (searched on PATH) with arguments argv and
 * environment env (NULL: the driver's) as the process of executor exec,
 * its stdout and stderr on the driver's stderr.  With relay set, its
 * stderr passes through the driver (a pipe the cluster reads, written on
 * as it comes), which keeps the tail for the options' hint: when the
 * process exits before its executor registered, the hint's line is
 * printed ("orion-driver: HINT") before the cluster failure.  The cluster
 * watches it: its exit before the job ends is a cluster failure.  Returns
 * 0, or ORION_EINVAL with err "cannot start PROGRAM for executor N:
 * reason".  argv and env stay the caller's. */
int orion_cluster_spawn(orion_cluster *c, int exec, char **argv, char **env,
                        int relay, orion_error *err);
/* orion_cluster_spawn with the process's standard input read from in_fd
 * (-1: none), which is closed here either way: a launcher hands a secret
 * over in a pipe this way, never on a command line. */
int orion_cluster_spawn_in(orion_cluster *c, int exec, char **argv,
                           char **env, int relay, int in_fd,
                           orion_error *err);

/* For launchers: where executor exec was started ("127.0.0.1", a host,
 * "rank 2", "manual"), named in messages until it registers (copied). */
void orion_cluster_set_where(orion_cluster *c, int exec, const char *where);

#endif
