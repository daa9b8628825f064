/* Starting a job's executors for orion-driver: the launcher the driver
 * gives the cluster (dsm/cluster.h) as its callback.  Local processes,
 * one ssh per slot of a hosts file, ranks that srun or mpirun started, or
 * command lines printed for a user to paste (manual).  The command lines
 * themselves come from drivers/launch.h; the cluster listens, watches the
 * processes started here and waits for every executor to register.
 *
 * Single-threaded: the driver's thread, like the cluster.
 */
#ifndef ORION_DRIVERS_LAUNCHER_H
#define ORION_DRIVERS_LAUNCHER_H

#include "drivers/launch.h"
#include "dsm/cluster.h"
#include "util/error.h"

typedef enum orion_launcher_kind {
  ORION_LAUNCH_LOCAL = 0, /* spawn executors on this machine */
  ORION_LAUNCH_SSH,       /* --hosts FILE: one ssh per executor slot */
  ORION_LAUNCH_SLURM,     /* srun started every rank; rank 0 is the driver */
  ORION_LAUNCH_MPI,       /* likewise under mpirun */
  ORION_LAUNCH_MANUAL     /* print the commands, wait for them */
} orion_launcher_kind;

typedef struct orion_launcher {
  orion_launcher_kind kind;
  const char *hosts_file; /* ORION_LAUNCH_SSH */
  orion_hostlist hosts;   /* its slots, read by orion_launcher_load_hosts */
  const char *executor;   /* the orion-executor program; NULL:
                             $ORION_EXECUTOR, else the one beside the
                             driver, else the one on PATH */
  char token[ORION_TOKEN_MAX + 1];      /* slurm, mpi, manual, local:
                                           $ORION_TOKEN */
  int token_from_env; /* manual, local: the user exported the token */
  char listen[ORION_HOSTPORT_MAX + 8];  /* where the driver listens, when
                                           the launcher decides it */
  /* GPUs (drivers/launcher_gpu.c): executors own devices when gpus != 0:
   * > 0 that many per host, -1 every visible one (--gpus all). */
  int gpus;
  char gpus_text[16];     /* --gpus as given, for messages */
  const char *gpu_memory; /* --gpu-memory SIZE, passed on; NULL: none */
  int allow_io;           /* --allow-io, passed on */
  int elastic;            /* --elastic, passed on */
  /* The devices visible here; NULL: orion_gpu_count (tests give a fake). */
  int (*gpu_count)(const char **why);
} orion_launcher;

/* Empties *l: local executors, no hosts file. */
void orion_launcher_init(orion_launcher *l);

/* ORION_LAUNCH_SSH: reads and checks l->hosts_file into l->hosts (one
 * executor per slot).  Returns 0, or the code of orion_hosts_load with err
 * set ("h.txt:3: bad port ..."). */
int orion_launcher_load_hosts(orion_launcher *l, orion_error *err);

/* ORION_LAUNCH_SLURM / ORION_LAUNCH_MPI, where every rank runs the driver:
 * on ranks other than 0 this replaces the process with orion-executor
 * (never returns on success); on rank 0 it returns 0 and sets o->nexec
 * (the ranks but one), o->listen ($ORION_DRIVER's HOST:PORT, or the
 * --listen host already in o->listen with its port) and
 * o->token ($ORION_TOKEN), pointing into l.  Returns a negative code with
 * err set when the environment is incomplete. */
/* ORION_LAUNCH_MANUAL and ORION_LAUNCH_LOCAL: a token the user exported
 * (ORION_TOKEN) is the job's: checked (orion_launch_token_env) and put in
 * o->token (pointing into l).  Manual: it is left out of the printed
 * command lines, which then ask for it to be exported on each host;
 * local: the executors started get it, and the user, who has it, can
 * start one more with `orion-executor --join` (an --elastic job).
 * Without ORION_TOKEN the driver makes a random one (manual: printed in
 * front of each command).  Returns 0, or ORION_EINVAL with err naming
 * ORION_TOKEN. */
int orion_launcher_token_setup(orion_launcher *l, orion_cluster_opts *o,
                               orion_error *err);

int orion_launcher_rank_setup(orion_launcher *l, orion_cluster_opts *o,
                              orion_error *err);

/* Makes l the launcher of the cluster options o (o->launch, o->launch_ud).
 * l must outlive every cluster started with o. */
void orion_launcher_attach(orion_launcher *l, orion_cluster_opts *o);

/* Unless o->listen says where (--listen; 0.0.0.0 for every address), makes
 * the driver of executors started elsewhere listen on the address facing
 * them (drivers/launcher_bind.c): ssh, the local address the hosts file's
 * hosts are reached from; manual, the default route's; local executors
 * keep 127.0.0.1.  After orion_launcher_load_hosts.  Returns 0, or
 * ORION_EINVAL with err set when the hosts are reached from different
 * addresses. */
int orion_launcher_bind(orion_launcher *l, orion_cluster_opts *o,
                        orion_error *err);

/* The numeric local address (into out[0..n)) this machine sends from to
 * reach host (a name or an address), by the kernel's routes; nothing is
 * sent.  0, or -1 when host does not resolve or has no route. */
int orion_launcher_facing(const char *host, char *out, size_t n);

/* The cluster's hint (an orion_cluster_hint_fn, ud the launcher): for an
 * ssh that exited before its executor registered, one line that says
 * what to do, naming the host: an unknown host key ("Host key
 * verification failed": accept it with 'ssh HOST true' or ssh-keyscan),
 * a host key that changed ("REMOTE HOST IDENTIFICATION HAS CHANGED": it
 * may be an attack; check the new key's fingerprint on the host before
 * 'ssh-keygen -R HOST'),
 * a login that needs a password ("Permission denied": BatchMode needs
 * key-based login), a name that does not resolve, a connection refused,
 * or no orion-executor at that path on the host (exit 127).  hint is ""
 * for other launchers and other failures. */
void orion_launcher_hint(void *ud, int exec, int status, const char *out,
                         char *hint, size_t n);

/* --gpus ARG (N in 1..4096, or "all") into l.  Returns 0, or
 * ORION_EOPTION with err "--gpus needs a number of GPUs 1..4096 or 'all',
 * not 'ARG'". */
int orion_launcher_set_gpus(orion_launcher *l, const char *arg,
                            orion_error *err);

/* Settles the executors' devices once the options are read (*nexec the
 * executors asked for, exec_given whether --executors or
 * $ORION_EXECUTORS said so).  Local launcher: --gpus needs that many
 * visible devices here and starts one executor per device (*nexec set;
 * "--gpus 1: no GPU usable here: REASON" when there is none); without
 * --gpus and --executors, one executor per visible device when there are
 * any, with note[0..n) saying so ("" otherwise, and the CPU default
 * stays).  Other launchers: the devices are on the executors' hosts, not
 * checked here.  --gpu-memory needs GPUs.  Returns 0 or ORION_EOPTION with
 * err set (a usage error). */
int orion_launcher_gpu_setup(orion_launcher *l, int *nexec, int exec_given,
                             char *note, size_t n, orion_error *err);

/* Sets cmd's --gpu and --gpu-memory for executor exec: local executor i
 * owns device i; an ssh slot the device of its index on its hosts line; a
 * manual one exec; a slurm/mpi rank its node-local rank
 * (SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or
 * PMI_LOCAL_RANK; else exec); modulo --gpus N when it gave a number.
 * Nothing without GPUs. */
void orion_launcher_gpu_cmd(const orion_launcher *l, int exec,
                            orion_launch_cmd *cmd);

/* Frees the hosts read; l can be used again after orion_launcher_init. */
void orion_launcher_free(orion_launcher *l);

/* The callback itself (an orion_cluster_launch_fn, ud the launcher):
 * starts the executors 0..info->n-1 of cluster c as l->kind says. */
int orion_launcher_start(orion_cluster *c, void *ud,
                         const orion_cluster_launch_info *info,
                         orion_error *err);

#endif
