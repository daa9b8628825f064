/* Starting a job's executors for orion-driver (see launcher.h). */
#include "drivers/launcher.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/datadir.h"
#include "util/alloc.h"
#include "util/buf.h"

void orion_launcher_init(orion_launcher *l) { memset(l, 0, sizeof *l); }

void orion_launcher_free(orion_launcher *l) {
  orion_hostlist_free(&l->hosts);
}

int orion_launcher_load_hosts(orion_launcher *l, orion_error *err) {
  orion_hostlist_free(&l->hosts);
  return orion_hosts_load(l->hosts_file, &l->hosts, err);
}

void orion_launcher_attach(orion_launcher *l, orion_cluster_opts *o) {
  o->launch = orion_launcher_start;
  o->launch_ud = l;
  o->hint = orion_launcher_hint;
}

/* $ORION_EXECUTOR, else the orion-executor beside this program (a build
 * tree, or an installed bin/ wherever it was moved), else the one on
 * PATH. */
static void executor_path(const orion_launcher *l, char *out, size_t n) {
  char dir[PATH_MAX], exe[PATH_MAX];
  struct stat st;
  int w;
  const char *env = getenv("ORION_EXECUTOR");
  if (l->executor != NULL) {
    snprintf(out, n, "%s", l->executor);
    return;
  }
  if (env != NULL && env[0] != '\0') {
    snprintf(out, n, "%s", env);
    return;
  }
  orion_exe_dir(NULL, dir, sizeof dir);
  w = snprintf(exe, sizeof exe, "%s/orion-executor", dir);
  if (w > 0 && (size_t)w < sizeof exe && (size_t)w < n &&
      stat(exe, &st) == 0)
    memcpy(out, exe, (size_t)w + 1);
  else
    snprintf(out, n, "orion-executor");
}

/* OpenBLAS starts its thread pool when the library loads, sized by
 * OPENBLAS_NUM_THREADS or else one thread per core, and the idle threads
 * spin (sched_yield) before they sleep: every executor process burned CPU
 * that way, though it uses ORION_BLAS_THREADS threads (default 1,
 * kernels/nn_math.c) and OpenBLAS grows the pool when asked for more.  A
 * local executor therefore starts with OPENBLAS_NUM_THREADS set to that,
 * unless the user set it. */

static void child_env_free(char **env, size_t own) {
  size_t i;
  for (i = own; env[i] != NULL; i++)
    orion_free(env[i]);
  orion_free(env);
}

/* The environment of a local executor: ours plus ORION_TOKEN (so the token
 * is not on a command line that `ps` shows), and OPENBLAS_NUM_THREADS
 * (above).  Entries from *own on are allocated here (child_env_free). */
static char **child_env(const char *token, size_t *own) {
  extern char **environ;
  size_t n = 0, i, j = 0;
  char **env;
  const char *bt = getenv("ORION_BLAS_THREADS");
  while (environ[n] != NULL)
    n++;
  env = orion_calloc(n + 3, sizeof *env);
  if (env == NULL)
    return NULL;
  for (i = 0; i < n; i++)
    if (strncmp(environ[i], "ORION_TOKEN=", 12) != 0)
      env[j++] = environ[i];
  *own = j;
  if ((env[j] = orion_malloc(strlen(token) + 13)) == NULL)
    goto oom;
  sprintf(env[j++], "ORION_TOKEN=%s", token);
  if (getenv("OPENBLAS_NUM_THREADS") == NULL) {
    if ((env[j] = orion_malloc(48)) == NULL)
      goto oom;
    snprintf(env[j++], 48, "OPENBLAS_NUM_THREADS=%d",
             bt != NULL && atoi(bt) > 0 ? atoi(bt) : 1);
  }
  return env;
oom:
  child_env_free(env, *own);
  return NULL;
}

/* Starts ssh argv for executor i, the secret on its standard input (a
 * pipe holding orion_launch_ssh_stdin's line, far below a pipe's
 * capacity): the remote shell reads it, and no command line shows it. */
static int spawn_ssh(orion_cluster *c, int i, const orion_launch_cmd *cmd,
                     char **argv, orion_error *err) {
  orion_buf in;
  int fd[2], rc;
  orion_buf_init(&in);
  if (orion_launch_ssh_stdin(cmd, &in) != 0 || pipe(fd) != 0) {
    orion_buf_free(&in);
    return orion_error_set(err, ORION_EINVAL, "cannot hand executor %d its "
                                              "token: %s",
                           i, strerror(errno));
  }
  rc = write(fd[1], in.data, in.len) == (ssize_t)in.len ? 0 : -1;
  close(fd[1]);
  orion_buf_free(&in);
  if (rc != 0) {
    close(fd[0]);
    return orion_error_set(err, ORION_EINVAL, "cannot hand executor %d its "
                                              "token",
                           i);
  }
  return orion_cluster_spawn_in(c, i, argv, NULL, 1, fd[0], err);
}

/* One ssh per slot of the hosts file. */
static int start_ssh(orion_cluster *c, const orion_launcher *l,
                     orion_launch_cmd *cmd, int n, orion_error *err) {
  int i, rc = 0;
  if ((size_t)n > l->hosts.n)
    return orion_error_set(err, ORION_EINVAL,
                           "%s: %zu executor slots for %d executors",
                           l->hosts_file, l->hosts.n, n);
  char cwd[PATH_MAX];
  /* Remote executors start in the driver's folder where it exists there
   * too (a shared filesystem), else in the remote home. */
  cmd->cwd = getcwd(cwd, sizeof cwd);
  for (i = 0; i < n && rc == 0; i++) {
    char **argv = NULL;
    const orion_host_slot *s = &l->hosts.slots[i];
    orion_cluster_set_where(c, i, s->host);
    cmd->id = i;
    cmd->bind = NULL;
    orion_launcher_gpu_cmd(l, i, cmd);
    rc = orion_launch_ssh_argv(cmd, s->host, &argv);
    if (rc != 0)
      orion_error_set(err, rc, "%s:%d: cannot build the ssh command for "
                               "host '%s'",
                      l->hosts_file, s->line, s->host);
    else
      rc = spawn_ssh(c, i, cmd, argv, err);
    orion_launch_argv_free(argv);
  }
  return rc;
}

int orion_launcher_token_setup(orion_launcher *l, orion_cluster_opts *o,
                               orion_error *err) {
  const char *t = getenv("ORION_TOKEN");
  if (t == NULL)
    return 0; /* the cluster makes one */
  if (orion_launch_token_env(t, l->token, sizeof l->token, err) != 0)
    return err->code;
  l->token_from_env = 1;
  o->token = l->token;
  return 0;
}

/* The command of each executor, printed for a user to run: with the token
 * in front, unless the user exported it (then it is theirs, and it stays
 * out of the driver's output and logs). */
static int start_manual(orion_cluster *c, const orion_launcher *l,
                        orion_launch_cmd *cmd,
                        const orion_cluster_launch_info *info,
                        orion_error *err) {
  orion_buf text;
  int i;
  orion_buf_init(&text);
  if (l->token_from_env)
    cmd->env = NULL;
  fprintf(stderr, "orion-driver: waiting %.0f s for %d executors; run on "
                  "each host%s:\n",
          info->register_timeout, info->n,
          l->token_from_env ? ", with this driver's ORION_TOKEN exported "
                              "there"
                            : "");
  for (i = 0; i < info->n; i++) {
    cmd->id = i;
    orion_launcher_gpu_cmd(l, i, cmd);
    text.len = 0;
    if (orion_launch_manual_text(cmd, &text) != 0) {
      orion_buf_free(&text);
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
    }
    fprintf(stderr, "  %s\n", text.data);
    orion_cluster_set_where(c, i, "manual");
  }
  fflush(stderr);
  orion_buf_free(&text);
  return 0;
}

/* Local executors, the token in their environment. */
static int start_local(orion_cluster *c, const orion_launcher *l,
                       orion_launch_cmd *cmd,
                       const orion_cluster_launch_info *info,
                       orion_error *err) {
  size_t own = 0;
  char **env = child_env(info->token, &own);
  int i, rc = 0;
  if (env == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  cmd->env = NULL; /* in the child's environment instead */
  for (i = 0; i < info->n && rc == 0; i++) {
    char **argv = NULL;
    cmd->id = i;
    orion_launcher_gpu_cmd(l, i, cmd);
    orion_cluster_set_where(c, i, "127.0.0.1");
    rc = orion_launch_local_argv(cmd, &argv);
    if (rc != 0)
      orion_error_set(err, rc, "cannot build the executor command");
    else
      rc = orion_cluster_spawn(c, i, argv, env, 0, err);
    orion_launch_argv_free(argv);
  }
  child_env_free(env, own);
  return rc;
}

/* The cluster's launch callback; ud is the orion_launcher. */
int orion_launcher_start(orion_cluster *c, void *ud,
                         const orion_cluster_launch_info *info,
                         orion_error *err) {
  const orion_launcher *l = ud;
  char exe[PATH_MAX], tokvar[ORION_TOKEN_MAX + 16];
  const char *tokenv[2];
  orion_launch_cmd cmd;
  int i;
  executor_path(l, exe, sizeof exe);
  /* The token travels as ORION_TOKEN, never as an executor argument, so
   * `ps` on an executor's host does not show it. */
  snprintf(tokvar, sizeof tokvar, "ORION_TOKEN=%s", info->token);
  tokenv[0] = tokvar;
  tokenv[1] = NULL;
  memset(&cmd, 0, sizeof cmd);
  cmd.exe = exe;
  cmd.driver = info->driver;
  cmd.env = tokenv;
  switch (l->kind) {
  case ORION_LAUNCH_SSH:
    return start_ssh(c, l, &cmd, info->n, err);
  case ORION_LAUNCH_MANUAL:
    return start_manual(c, l, &cmd, info, err);
  case ORION_LAUNCH_SLURM:
  case ORION_LAUNCH_MPI: /* srun/mpirun started them */
    for (i = 0; i < info->n; i++) {
      char where[32];
      snprintf(where, sizeof where, "rank %d", i + 1);
      orion_cluster_set_where(c, i, where);
    }
    return 0;
  case ORION_LAUNCH_LOCAL:
    break;
  }
  return start_local(c, l, &cmd, info, err);
}

/* From ssh's warning about a changed host key ("The fingerprint for the
 * ED25519 key sent by the remote host is\nSHA256:....") the key's type,
 * lowercased ("ed25519"), and its fingerprint, each "" when ssh's words
 * are not there. */
static void changed_key_of(const char *out, char *type, size_t tn, char *fp,
                           size_t fn) {
  static const char lead[] = "The fingerprint for the ";
  const char *p = strstr(out, lead), *e;
  size_t k;
  type[0] = fp[0] = '\0';
  if (p == NULL)
    return;
  p += sizeof lead - 1;
  e = strstr(p, " key sent by the remote host is\n");
  if (e == NULL)
    return;
  for (k = 0; p + k < e && k + 1 < tn && isalnum((unsigned char)p[k]); k++)
    type[k] = (char)tolower((unsigned char)p[k]);
  type[k] = '\0';
  p = strchr(e, '\n') + 1;
  /* A fingerprint is base64 after "SHA256:" or hex pairs after "MD5:";
   * the sentence's full stop is not part of it. */
  for (k = 0; k + 1 < fn && (isalnum((unsigned char)p[k]) || p[k] == ':' ||
                             p[k] == '+' || p[k] == '/');
       k++)
    fp[k] = p[k];
  fp[k] = '\0';
}

/* A host whose key differs from the one in known_hosts: the unknown-key
 * advice (accept whatever answers now) would tell the user to trust the
 * very key the warning is about, so this says that the key changed, that
 * it may be an attack, and how to check the new key before removing the
 * old one. */
static int changed_key_hint(const char *host, const char *out, char *hint,
                            size_t n) {
  char type[16], fp[128], seen[192];
  changed_key_of(out, type, sizeof type, fp, sizeof fp);
  if (type[0] == '\0')
    snprintf(type, sizeof type, "ed25519");
  if (fp[0] != '\0')
    snprintf(seen, sizeof seen, "%s, the key that answered now", fp);
  else
    snprintf(seen, sizeof seen, "the fingerprint ssh printed above");
  return snprintf(hint, n,
                  "host %s: its ssh host key has CHANGED since it was "
                  "recorded in known_hosts (REMOTE HOST IDENTIFICATION HAS "
                  "CHANGED). This may be an attack: someone between here "
                  "and %s answering in its place. Do not remove the old key "
                  "yet: check the new one out of band first, by running "
                  "'ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub' on %s's "
                  "console or asking its administrator, and compare what it "
                  "prints with %s. Only if "
                  "they match (the host was reinstalled or its key "
                  "replaced), run 'ssh-keygen -R %s' and then 'ssh %s true' "
                  "to accept the new key",
                  host, host, type, host, seen, host, host);
}

/* ssh's words for the failures of a first contact, and what to do. */
static int ssh_hint(const char *host, const char *out, char *hint, size_t n) {
  if (strstr(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") != NULL)
    return changed_key_hint(host, out, hint, n);
  if (strstr(out, "Host key verification failed") != NULL)
    return snprintf(hint, n,
                    "host %s: ssh does not know this host's key (Host key "
                    "verification failed). Run 'ssh %s true' once to check "
                    "and accept its key, or add it with 'ssh-keyscan %s >> "
                    "~/.ssh/known_hosts'",
                    host, host, host);
  if (strstr(out, "Permission denied") != NULL)
    return snprintf(hint, n,
                    "host %s: ssh could not log in without a password "
                    "(Permission denied). Executors are started with 'ssh -o "
                    "BatchMode=yes', which needs key-based login: make a key "
                    "with 'ssh-keygen', copy it with 'ssh-copy-id %s', and "
                    "check that 'ssh -o BatchMode=yes %s true' works",
                    host, host, host);
  if (strstr(out, "Could not resolve hostname") != NULL)
    return snprintf(hint, n, "host %s: ssh cannot resolve this name; check "
                             "the hosts file",
                    host);
  if (strstr(out, "Connection refused") != NULL ||
      strstr(out, "Connection timed out") != NULL ||
      strstr(out, "No route to host") != NULL)
    return snprintf(hint, n, "host %s: ssh cannot connect (is sshd running "
                             "there? does 'ssh %s true' work?)",
                    host, host);
  return 0;
}

void orion_launcher_hint(void *ud, int exec, int status, const char *out,
                         char *hint, size_t n) {
  const orion_launcher *l = ud;
  char exe[PATH_MAX];
  const char *host;
  hint[0] = '\0';
  if (l->kind != ORION_LAUNCH_SSH || exec < 0 || (size_t)exec >= l->hosts.n)
    return;
  host = l->hosts.slots[exec].host;
  if (status == 255 && ssh_hint(host, out, hint, n) > 0)
    return;
  if (status == 127) { /* the remote shell found no orion-executor */
    executor_path(l, exe, sizeof exe);
    snprintf(hint, n, "host %s: cannot run %s there (exit 127): install "
                      "Orion-C on every host at the same path as on this "
                      "one, or set ORION_EXECUTOR to its path on the hosts",
             host, exe);
  }
}

int orion_launcher_rank_setup(orion_launcher *l, orion_cluster_opts *o,
                              orion_error *err) {
  orion_rank_env re;
  const char *which = l->kind == ORION_LAUNCH_SLURM ? "slurm" : "mpi";
  if (orion_launch_rank_from_env(&re, which, NULL, NULL, err) != 0)
    return err->code;
  if (re.rank > 0) {
    char exe[PATH_MAX];
    char **argv = NULL;
    orion_launch_cmd cmd;
    executor_path(l, exe, sizeof exe);
    memset(&cmd, 0, sizeof cmd);
    cmd.exe = exe;
    cmd.driver = re.driver;
    cmd.id = re.rank - 1;
    orion_launcher_gpu_cmd(l, cmd.id, &cmd);
    if (orion_launch_local_argv(&cmd, &argv) != 0)
      return orion_error_set(err, ORION_EINVAL, "rank %d: bad ORION_DRIVER",
                             re.rank);
    execvp(exe, argv);
    orion_launch_argv_free(argv);
    return orion_error_set(err, -errno, "rank %d: cannot run %s: %s",
                           re.rank, exe, strerror(errno));
  }
  o->nexec = re.size - 1;
  /* The address the ranks connect to, $ORION_DRIVER's (or --listen's
   * host), never every address unless --listen 0.0.0.0 says so. */
  if (o->listen == l->listen)
    ; /* set by an earlier call */
  else if (o->listen != NULL && strchr(o->listen, ':') != NULL &&
           strchr(o->listen, ':') == strrchr(o->listen, ':'))
    snprintf(l->listen, sizeof l->listen, "%s", o->listen);
  else if (o->listen != NULL)
    snprintf(l->listen, sizeof l->listen, "%s%s%s:%d",
             strchr(o->listen, ':') != NULL ? "[" : "", o->listen,
             strchr(o->listen, ':') != NULL ? "]" : "", re.driver_port);
  else
    snprintf(l->listen, sizeof l->listen, "%s", re.driver);
  o->listen = l->listen;
  snprintf(l->token, sizeof l->token, "%s", re.token);
  o->token = l->token;
  return 0;
}
