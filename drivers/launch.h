/* How orion-driver starts its executors: the pure part.
 *
 * Nothing here opens a socket or starts a process.  This module parses the
 * hosts file, builds the command lines that start an executor (over ssh,
 * locally, or as text a user pastes on a host), and reads a task's rank
 * from the environment that srun or mpirun sets.  Host names, HOST:PORT
 * and job tokens are dsm/addr.h (included here); drivers/launcher.c does
 * the starting, dsm/cluster.c the listening.
 *
 * An executor is started as
 *
 *   orion-executor --driver HOST:PORT --token T [--id N] [--bind ADDR]
 *                  [--gpu G] [--gpu-memory SIZE]
 *
 * where HOST:PORT is where the driver listens, T the job's token (the
 * executor's HELLO must carry it), N the executor id the driver assigned,
 * ADDR the address the executor binds for its peers, G the CUDA device it
 * opens and SIZE the device memory it may use.
 *
 * Threads: no global state; every function may be called from any thread
 * on distinct arguments.  orion_launch_rank_from_env with get == NULL reads
 * the process environment with getenv, which must not race with setenv.
 */
#ifndef ORION_DRIVERS_LAUNCH_H
#define ORION_DRIVERS_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/addr.h"
#include "util/buf.h"
#include "util/error.h"

/* The most executors one hosts-file line may ask for, and the largest
 * hosts file read. */
#define ORION_HOSTS_MAX_SLOTS 4096
#define ORION_HOSTS_MAX_FILE (16u << 20)

/* ------------------------------------------------------------------------
 * Hosts files.
 *
 *   # comment
 *   node1              one executor on node1, any port
 *   node2:7100 4       four executors on node2, binding ports 7100..7103
 *   10.0.0.5 2
 *   [fe80::1%eth0]:7000
 *   ::1                a bare IPv6 address is fine without a port
 *
 * One `HOST[:PORT] [SLOTS]` per line; '#' starts a comment anywhere; blank
 * lines are ignored; fields are separated by spaces or tabs; a trailing
 * "\r" is ignored.  PORT is 1..65535, the port the host's first executor
 * binds for its peers (slot i binds PORT+i; absent: any port).  SLOTS is
 * 1..ORION_HOSTS_MAX_SLOTS, the executors started on that host (default
 * 1).  A host may be listed on several lines.
 * ---------------------------------------------------------------------- */

/* One executor slot: the list expands each line into SLOTS of these, in
 * file order, so slot k of the list is executor id k+1 (id 0 is the
 * driver). */
typedef struct orion_host_slot {
  char host[ORION_HOST_MAX + 1]; /* no brackets around IPv6 */
  int port;                      /* to bind for peers; 0: any */
  int index;                     /* 0..SLOTS-1 on its line */
  int line;                      /* hosts-file line, 1-based */
} orion_host_slot;

typedef struct orion_hostlist {
  orion_host_slot *slots; /* owned; free with orion_hostlist_free */
  size_t n;               /* >= 1 after a successful parse */
} orion_hostlist;

/* Parses text[0..len) (need not be NUL-terminated), naming the file fname
 * in messages ("hosts" when NULL).  On success fills *out, which the
 * caller frees with orion_hostlist_free, and returns 0.  On failure *out
 * is empty (nothing to free) and err says "FILE:LINE: problem 'text'",
 * e.g. "h.txt:3: bad port '70000' in 'node2:70000' (want 1..65535)", or
 * "h.txt: no hosts" for a file of only comments and blank lines.  Returns
 * ORION_EPARSE, ORION_EOVERFLOW (too many slots) or ORION_ENOMEM. */
int orion_hosts_parse(const char *text, size_t len, const char *fname,
                      orion_hostlist *out, orion_error *err);

/* Reads the file at path (at most ORION_HOSTS_MAX_FILE bytes) and parses
 * it as orion_hosts_parse does, naming path in messages.  A file that
 * cannot be read gives -errno and "cannot open PATH: reason". */
int orion_hosts_load(const char *path, orion_hostlist *out, orion_error *err);

/* Frees what a parse filled in and empties l; safe on an empty list. */
void orion_hostlist_free(orion_hostlist *l);

/* ------------------------------------------------------------------------
 * Executor command lines.
 * ---------------------------------------------------------------------- */

/* What one executor is started with.  The strings are borrowed; nothing
 * here is freed by this module.  A token given here ends up on the
 * executor's command line, where other users of that host can read it
 * (ps); with token NULL the command has no --token and the executor reads
 * $ORION_TOKEN instead (put "ORION_TOKEN=..." in env, or in the child's
 * environment). */
typedef struct orion_launch_cmd {
  const char *exe;    /* NULL: "orion-executor" (found on the PATH) */
  const char *driver; /* "HOST:PORT" the driver listens on; required */
  const char *token;  /* the job's token, 1..ORION_TOKEN_MAX bytes, or
                         NULL: none on the command line */
  int id;             /* executor id; < 0: no --id (the driver assigns) */
  const char *bind;   /* NULL: no --bind */
  /* NULL, or a NULL-terminated list of "NAME=VALUE" (NAME a shell
   * variable name) set for the executor, e.g. "ORION_LUA_PATH=...". */
  const char *const *env;
  /* ssh only: NULL, or a folder the remote command enters first when it
   * exists there ("cd 'DIR' 2>/dev/null; ..."), else it stays in the
   * remote home. */
  const char *cwd;
  int use_gpu;        /* 1: --gpu GPU */
  int gpu;            /* the device, >= 0 */
  const char *gpu_memory; /* NULL: no --gpu-memory; else a SIZE that
                             orion_launch_size_parse accepts */
  int allow_io;           /* 1: --allow-io */
  int elastic;            /* 1: --elastic (orion-driver --elastic) */
} orion_launch_cmd;

/* Checks c: a driver address orion_hostport_parse accepts, no token or
 * one of 1..ORION_TOKEN_MAX bytes, a non-empty exe and bind when given, and env
 * entries of the form NAME=VALUE.  Returns 0 or ORION_EINVAL with err
 * saying which field is wrong.  The builders below run this check. */
int orion_launch_cmd_check(const orion_launch_cmd *c, orion_error *err);

/* A size in bytes: decimal digits with an optional suffix K, M, G or T
 * (also KB/KiB...; powers of 1024, any case), e.g. "256M", "1.5G", "4096".
 * Returns 0 with *out set (> 0), or ORION_EINVAL with err "--gpu-memory
 * needs a size such as 256M or 8G, not 'TEXT'" (what names the option). */
int orion_launch_size_parse(const char *s, const char *what, uint64_t *out,
                            orion_error *err);

/* Quotes s for a POSIX shell and appends it to out: every byte inside
 * single quotes, an embedded ' written as '\'' (so "it's" becomes
 * 'it'\''s' and "" becomes '').  The shell gives s back as one word,
 * whatever it holds. */
void orion_shell_quote(orion_buf *out, const char *s);

/* The argv that starts executor c on host over ssh:
 *
 *   ssh -o BatchMode=yes -o ConnectTimeout=10 HOST REMOTE
 *
 * REMOTE is one string, the same as orion_launch_manual_text's: ssh joins
 * its arguments with spaces and the remote shell splits them again, so
 * every argument is quoted with orion_shell_quote.  Because the exe is
 * quoted, "~" and "$VAR" in it are not expanded; a relative path is
 * relative to the remote home.  The remote login shell must be a POSIX
 * shell (sh, dash, bash, zsh, ksh): csh and fish do not take the NAME=VALUE
 * prefix c->env adds.  The job's secret is not in it: an ORION_TOKEN entry
 * of c->env becomes "IFS= read -r ORION_TOKEN; export ORION_TOKEN; " (the
 * shell reads it from its standard input, which the launcher feeds with
 * orion_launch_ssh_stdin), so that `ps` shows it neither here, in ssh's
 * arguments, nor on the host.  With c->cwd set, REMOTE starts with
 * "cd 'DIR' 2>/dev/null; ".  host must pass orion_host_valid.
 * On success *argv_out is a NULL-terminated array the caller frees with
 * orion_launch_argv_free.  Returns 0, ORION_EINVAL (bad c or host) or
 * ORION_ENOMEM; *argv_out is NULL on failure. */
int orion_launch_ssh_argv(const orion_launch_cmd *c, const char *host,
                          char ***argv_out);

/* Appends to out what the remote shell of orion_launch_ssh_argv reads on
 * its standard input: the value of each ORION_TOKEN entry of c->env, and
 * a newline.  Returns 0, ORION_EINVAL (bad c, or a value holding a
 * newline) or ORION_ENOMEM. */
int orion_launch_ssh_stdin(const orion_launch_cmd *c, orion_buf *out);

/* The argv that starts executor c on this machine, without a shell:
 * EXE --driver ADDR --token T [--id N] [--bind B].  c->env is not part of
 * an argv: the caller puts it in the child's environment (execve's envp,
 * or setenv after fork).  Ownership and returns as orion_launch_ssh_argv,
 * without the host. */
int orion_launch_local_argv(const orion_launch_cmd *c, char ***argv_out);

/* Appends to out the shell command line that starts executor c when a
 * user pastes it into a shell on the host:
 *
 *   NAME='VALUE' ... 'EXE' '--driver' 'ADDR' '--token' 'T' '--id' 'N' ...
 *
 * without a trailing newline.  On success out->data is NUL-terminated
 * (the NUL is not counted in out->len).  Returns 0, ORION_EINVAL or
 * ORION_ENOMEM (out's own oom flag set); on failure out may hold a
 * partial line. */
int orion_launch_manual_text(const orion_launch_cmd *c, orion_buf *out);

/* Frees an argv from the builders above; NULL is fine. */
void orion_launch_argv_free(char **argv);

/* ------------------------------------------------------------------------
 * Ranks from srun or mpirun.
 *
 * Under `--launcher slurm` or `--launcher mpi` every task runs
 * orion-driver; the task with rank 0 is the driver and ranks 1..SIZE-1
 * become executors 1..SIZE-1, so SIZE must be at least 2.  The rank and
 * size come from:
 *
 *   slurm  SLURM_PROCID, SLURM_NTASKS (set by srun)
 *   mpi    PMI_RANK, PMI_SIZE (MPICH's Hydra, Intel MPI), else
 *          OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE (Open MPI's mpirun)
 *
 * Every task also needs ORION_DRIVER=HOST:PORT (the address of the rank-0
 * task, which listens on PORT; HOST must be reachable from every task) and
 * ORION_TOKEN (the job's token, which executors send and the driver
 * checks).  srun and mpirun pass the caller's environment on to the tasks
 * (for Open MPI, add `-x ORION_DRIVER -x ORION_TOKEN`), so the user
 * exports both before starting the job, e.g.
 *
 *   export ORION_DRIVER=$(hostname):7077 ORION_TOKEN=$(openssl rand -hex 16)
 *   srun -N 4 orion-driver --launcher slurm train.lua
 *
 * with the first task of the allocation on this host (srun's default
 * distribution puts rank 0 on the first node).
 * ---------------------------------------------------------------------- */

/* A getenv: returns the value of name, or NULL when unset.  The string
 * must stay valid until orion_launch_rank_from_env returns. */
typedef const char *(*orion_getenv_fn)(const char *name, void *ud);

typedef struct orion_rank_env {
  int rank;                              /* 0: the driver */
  int size;                              /* tasks, >= 2 */
  const char *rank_var;                  /* e.g. "SLURM_PROCID" (static) */
  const char *size_var;                  /* e.g. "SLURM_NTASKS" (static) */
  char driver[ORION_HOSTPORT_MAX + 1];   /* ORION_DRIVER as given */
  char driver_host[ORION_HOST_MAX + 1];  /* its host, no brackets */
  int driver_port;                       /* its port, 1..65535 */
  char token[ORION_TOKEN_MAX + 1];       /* ORION_TOKEN */
} orion_rank_env;

/* Fills *out for launcher "slurm" or "mpi", reading variables through
 * get(name, ud) (get == NULL: the process environment).  Returns 0, or
 * ORION_EOPTION for an unknown launcher, or ORION_EINVAL with err naming
 * the variable and its value: a variable missing, not a decimal integer,
 * rank >= size, size < 2, ORION_DRIVER not HOST:PORT, ORION_TOKEN missing
 * or refused by orion_launch_token_env.  Owns nothing; *out holds copies. */
int orion_launch_rank_from_env(orion_rank_env *out, const char *launcher,
                               orion_getenv_fn get, void *ud,
                               orion_error *err);

/* Checks t, the value of $ORION_TOKEN (not NULL), as a job's secret and
 * copies it into out (n bytes).  Returns 0, or ORION_EINVAL with err
 * naming ORION_TOKEN and what is wrong, never the token: empty, longer
 * than ORION_TOKEN_MAX (or n - 1), or too guessable (orion_token_check:
 * "ORION_TOKEN is 6 characters; a job's secret needs at least 128
 * bits..."). */
int orion_launch_token_env(const char *t, char *out, size_t n,
                           orion_error *err);

#endif
