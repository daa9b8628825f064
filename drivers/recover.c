/* Automatic recovery for orion-driver (see recover.h): the cluster's
 * failure hook that runs the driver again with --resume, and the choice
 * of hosts for the executors of a restart. */
#include "drivers/recover.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm/ckpt.h"
#include "dsm/cluster.h"
#include "dsm/status.h"
#include "lua/checkpoint.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/progress.h"

#define FAILED_HOSTS_MAX 4096

void orion_recover_init(orion_recover *r, int argc, char **argv) {
  const char *env = getenv("ORION_RESTART");
  char *end;
  memset(r, 0, sizeof r[0]);
  r->max_restarts = -1;
  r->period = 3600;
  snprintf(r->period_text, sizeof r->period_text, "1h");
  r->lock_fd = -1;
  r->argc = argc;
  r->argv = argv;
  if (env != NULL && env[0] != '\0')
    r->restarts = atoi(env);
  if (r->restarts < 0)
    r->restarts = 0;
  env = getenv("ORION_RESTART_TIMES");
  while (env != NULL && r->ntimes < ORION_RECOVER_MAX) {
    double t = strtod(env, &end);
    if (end == env)
      break;
    r->times[r->ntimes++] = t;
    env = end;
  }
}

int orion_recover_parse_limit(orion_recover *r, const char *arg, char *msg,
                              size_t n) {
  static const char units[] = "smhd";
  static const double scale[] = {1, 60, 3600, 86400};
  const char *slash = arg != NULL ? strchr(arg, '/') : NULL;
  char num[16], *end;
  double v;
  int k = -1;
  if (arg == NULL || arg[0] == '\0' ||
      (size_t)(slash != NULL ? slash - arg : (ptrdiff_t)strlen(arg)) >=
          sizeof num) {
    snprintf(msg, n, "--max-restarts needs N[/PERIOD], N a number 0..%d%s%s%s",
             ORION_RECOVER_MAX, arg != NULL ? ", not '" : "",
             arg != NULL ? arg : "", arg != NULL ? "'" : "");
    return -1;
  }
  snprintf(num, sizeof num, "%.*s",
           (int)(slash != NULL ? slash - arg : (ptrdiff_t)strlen(arg)), arg);
  v = strtod(num, &end);
  if (num[0] < '0' || num[0] > '9' || *end != '\0' || v != (int)v ||
      v > ORION_RECOVER_MAX) {
    snprintf(msg, n, "--max-restarts needs N[/PERIOD], N a number 0..%d, "
                     "not '%s'",
             ORION_RECOVER_MAX, arg);
    return -1;
  }
  r->max_restarts = (int)v;
  if (slash == NULL)
    return 0;
  v = strtod(slash + 1, &end);
  if (*end != '\0' && end[1] == '\0' && strchr(units, *end) != NULL)
    k = (int)(strchr(units, *end) - units);
  if (slash[1] < '0' || slash[1] > '9' || (*end != '\0' && k < 0) ||
      !(v > 0) || v * scale[k < 0 ? 0 : k] > 1e9 ||
      strlen(slash + 1) >= sizeof r->period_text) {
    snprintf(msg, n, "--max-restarts N/PERIOD needs a PERIOD above 0 in "
                     "seconds, or with s, m, h or d (30m, 1h), not '%s'",
             slash + 1);
    return -1;
  }
  r->period = v * scale[k < 0 ? 0 : k];
  snprintf(r->period_text, sizeof r->period_text, "%s%s", slash + 1,
           k < 0 ? "s" : "");
  return 0;
}

/* How many times host appears in $ORION_FAILED_HOSTS (space-separated). */
static int failures(const char *host) {
  const char *env = getenv("ORION_FAILED_HOSTS"), *p;
  size_t n = strlen(host);
  int k = 0;
  for (p = env; p != NULL && *p != '\0';) {
    const char *sp = strchr(p, ' ');
    size_t len = sp != NULL ? (size_t)(sp - p) : strlen(p);
    if (len == n && strncmp(p, host, n) == 0)
      k++;
    p = sp != NULL ? sp + 1 : p + len;
  }
  return k;
}

/* Marks in stdout, where the script's lines go, the place the restarted
 * job's output begins: its header lines come again, and without a mark
 * they read as a second job.  It counts as the recovery line on stderr
 * does: the restarts within --max-restarts' period.  saved: the step of the checkpoint it goes
 * on from, or -1. */
static void mark_restart(const orion_recover *r, int64_t saved) {
  fflush(stdout);
  if (saved >= 0)
    printf("== restart %d of %d, from the checkpoint of step %" PRId64
           " ==\n",
           r->ntimes + 1, r->max_restarts, saved);
  else
    printf("== restart %d of %d, from the beginning ==\n", r->ntimes + 1,
           r->max_restarts);
  fflush(stdout);
}

static void on_failure(void *ud, int exec, const char *host,
                       const char *why) {
  orion_recover *r = ud;
  int64_t saved, cur, lo;
  char num[16], redo[96], hosts[FAILED_HOSTS_MAX];
  const char *old = getenv("ORION_FAILED_HOSTS");
  int i, k;
  double now = orion_now();
  (void)why; /* the cluster printed it */
  /* The restarts that count: those within the last period, as systemd's
   * StartLimitIntervalSec= and StartLimitBurst= count starts (a job that
   * recovered a few times over days is not stopped by its old losses; one
   * that keeps failing is). */
  for (i = k = 0; i < r->ntimes; i++)
    if (now - r->times[i] < r->period)
      r->times[k++] = r->times[i];
  r->ntimes = k;
  if (r->ntimes >= r->max_restarts) {
    fprintf(stderr,
            "orion-driver: no restart left (%d within %s: --max-restarts "
            "%d/%s); the checkpoints in %s stay for --resume\n",
            r->ntimes, r->period_text, r->max_restarts, r->period_text,
            r->dir);
    return;
  }
  orion_checkpoint_progress(r->L, &saved, &cur);
  if (saved < 0) /* a restart that failed before orion.restore() */
    orion_ckpt_count(r->dir, &saved);
  lo = saved >= 0 ? saved + 1 : 1; /* the first step run again */
  if (cur > lo)
    snprintf(redo, sizeof redo, "steps %" PRId64 "..%" PRId64 " are redone",
             lo, cur);
  else if (cur == lo)
    snprintf(redo, sizeof redo, "step %" PRId64 " is redone", cur);
  else
    snprintf(redo, sizeof redo, "%s",
             cur < 0 ? "no step reached yet" : "no step is redone");
  fprintf(stderr, "orion: recovery: executor %d on %s failed; restart %d of "
                  "%d, ",
          exec, host != NULL ? host : "?", r->ntimes + 1, r->max_restarts);
  if (saved >= 0)
    fprintf(stderr, "from the checkpoint of step %" PRId64 " (%s)\n", saved,
            redo);
  else
    fprintf(stderr, "from the beginning: no checkpoint yet (%s)\n", redo);
  fflush(stderr);
  mark_restart(r, saved);
  snprintf(num, sizeof num, "%d", r->restarts + 1);
  setenv("ORION_RESTART", num, 1);
  {
    /* This restart's time joins the window's, for the next process. */
    char times[ORION_RECOVER_MAX * 24 + 32];
    size_t w = 0;
    r->times[r->ntimes < ORION_RECOVER_MAX ? r->ntimes++ : 0] = now;
    for (i = 0; i < r->ntimes && w < sizeof times - 24; i++)
      w += (size_t)snprintf(times + w, sizeof times - w, "%s%.3f",
                            i > 0 ? " " : "", r->times[i]);
    setenv("ORION_RESTART_TIMES", times, 1);
  }
  if (host != NULL) {
    snprintf(hosts, sizeof hosts, "%s%s%s", old != NULL ? old : "",
             old != NULL && old[0] != '\0' ? " " : "", host);
    setenv("ORION_FAILED_HOSTS", hosts, 1);
  }
  orion_recover_exec(r);
}

void orion_recover_exec(orion_recover *r) {
  char **argv;
  int i, j, have_resume = 0;
  orion_status_stop();
  fflush(stdout);
  /* The same command line with --resume=auto among the driver's options
   * (they end at the script): a job lost before its first checkpoint
   * starts again from the beginning.  A --resume the user gave stays. */
  for (i = 1; i < r->argc; i++)
    if (strncmp(r->argv[i], "--resume", 8) == 0 &&
        (r->argv[i][8] == '\0' || r->argv[i][8] == '='))
      have_resume = 1;
  argv = orion_calloc((size_t)r->argc + 2, sizeof *argv);
  if (argv == NULL)
    return;
  argv[0] = r->argv[0];
  j = 1;
  if (!have_resume && r->dir != NULL) /* (--elastic without a folder:
                                          from the beginning) */
    argv[j++] = "--resume=auto";
  for (i = 1; i < r->argc; i++)
    argv[j++] = r->argv[i];
  argv[j] = NULL;
  orion_ckpt_lock_pass(r->lock_fd); /* the folder stays this job's */
  execv("/proc/self/exe", argv);
  execvp(r->argv[0], argv);
  perror("orion-driver: cannot run itself again");
  orion_free(argv);
}

void orion_recover_arm(orion_recover *r, const orion_launcher *l,
                       lua_State *L) {
  r->L = L;
  if (r->dir == NULL)
    return;
  if (r->max_restarts < 0)
    r->max_restarts = 3;
  if (l->kind != ORION_LAUNCH_LOCAL && l->kind != ORION_LAUNCH_SSH) {
    if (r->max_restarts > 0 && !r->quiet)
      fprintf(stderr, "orion: automatic recovery needs executors the "
                      "driver starts (local or --hosts); a lost executor "
                      "ends this job, and --resume continues it\n");
    return;
  }
  if (r->max_restarts > 0)
    orion_cluster_set_failure_hook(on_failure, r);
}

void orion_recover_hosts(orion_launcher *l, int quiet) {
  size_t i, k;
  if (l->kind != ORION_LAUNCH_SSH)
    return;
  for (i = 0; i < l->hosts.n; i++) {
    orion_host_slot *s = &l->hosts.slots[i];
    const char *alt = NULL;
    int best = 2;
    if (failures(s->host) < 2)
      continue;
    for (k = 0; k < l->hosts.n; k++) {
      int f = failures(l->hosts.slots[k].host);
      if (f < best) {
        best = f;
        alt = l->hosts.slots[k].host;
      }
    }
    if (alt == NULL) {
      if (!quiet)
        fprintf(stderr, "orion: recovery: host %s failed twice and every "
                        "other host of %s has too; trying it again\n",
                s->host, l->hosts_file);
      continue;
    }
    if (!quiet)
      fprintf(stderr, "orion: recovery: host %s failed twice; executor %zu "
                      "starts on %s instead\n",
              s->host, i, alt);
    memmove(s->host, alt, strlen(alt) + 1);
    s->port = 0; /* any free port there */
  }
}
