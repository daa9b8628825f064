/* Elastic jobs (see elastic.h): the cluster's elastic hook, and the
 * driver that a re-forming starts adopting the executors that come back. */
#include "drivers/elastic.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>

#include "lua/checkpoint.h"
#include "scheduler/dist.h"
#include "scheduler/module.h"
#include "util/clock.h"

#define ELASTIC_PIDS_MAX 4096

/* Local executors an earlier driver of this process started: children of
 * this process still (exec keeps the pid), reaped at exit. */
static pid_t adopted[ELASTIC_PIDS_MAX];
static int nadopted;
static char listen_addr[256];
static char token[256];
static char relay_fds[1024];

/* At exit: the adopted executors had their SHUTDOWN; each gets 3 s to
 * exit before SIGKILL, and is reaped. */
static void reap_adopted(void) {
  double until = orion_now() + 3;
  int i, left;
  do {
    for (i = left = 0; i < nadopted; i++)
      if (adopted[i] > 0 && waitpid(adopted[i], NULL, WNOHANG) == 0)
        left++;
      else
        adopted[i] = 0;
    if (left > 0)
      usleep(10000);
  } while (left > 0 && orion_now() < until);
  for (i = 0; i < nadopted; i++)
    if (adopted[i] > 0) {
      kill(adopted[i], SIGKILL);
      waitpid(adopted[i], NULL, 0);
    }
}

/* The re-formed cluster's launcher: nothing to start, the executors
 * register again by themselves. */
static int adopt_launch(orion_cluster *c, void *ud,
                        const orion_cluster_launch_info *info,
                        orion_error *err) {
  int i;
  (void)ud;
  (void)err;
  for (i = 0; i < info->n; i++)
    orion_cluster_set_where(c, i, "(registering again)");
  return 0;
}

/* Adds the pids (space-separated) to the executors reaped at exit. */
static void adopt_pids(const char *pids) {
  static int armed;
  char *end;
  while (*pids != '\0' && nadopted < ELASTIC_PIDS_MAX) {
    long p = strtol(pids, &end, 10);
    if (end == pids)
      break;
    if (p > 0)
      adopted[nadopted++] = (pid_t)p;
    pids = end;
  }
  if (nadopted > 0 && !armed++)
    atexit(reap_adopted);
}

void orion_elastic_adopt(orion_cluster_opts *o, int *nexec, int min) {
  const char *form = getenv("ORION_ELASTIC_FORM");
  const char *pids = getenv("ORION_ELASTIC_PIDS");
  char *end;
  long n;
  if (form == NULL || form[0] == '\0')
    return;
  n = strtol(form, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    return;
  *nexec = (int)n;
  snprintf(listen_addr, sizeof listen_addr, "%s",
           getenv("ORION_ELASTIC_LISTEN") != NULL
               ? getenv("ORION_ELASTIC_LISTEN")
               : "127.0.0.1");
  snprintf(token, sizeof token, "%s",
           getenv("ORION_ELASTIC_TOKEN") != NULL
               ? getenv("ORION_ELASTIC_TOKEN")
               : "");
  unsetenv("ORION_ELASTIC_TOKEN"); /* the secret stays in this process */
  unsetenv("ORION_ELASTIC_FORM");
  unsetenv("ORION_ELASTIC_LISTEN");
  if (getenv("ORION_ELASTIC_LOAD_PARTS") != NULL) {
    long parts = strtol(getenv("ORION_ELASTIC_LOAD_PARTS"), &end, 10);
    if (*end == '\0' && parts >= 1 && parts <= 4096)
      o->load_parts = (int)parts;
    unsetenv("ORION_ELASTIC_LOAD_PARTS");
  }
  o->listen = listen_addr;
  o->token = token[0] != '\0' ? token : NULL;
  o->launch = adopt_launch;
  o->launch_ud = NULL;
  o->hint = NULL;
  o->reform_min = min > 0 ? min : 1;
  if (pids != NULL)
    adopt_pids(pids);
  unsetenv("ORION_ELASTIC_PIDS");
  snprintf(relay_fds, sizeof relay_fds, "%s",
           getenv("ORION_ELASTIC_ERRFDS") != NULL
               ? getenv("ORION_ELASTIC_ERRFDS")
               : "");
  unsetenv("ORION_ELASTIC_ERRFDS");
  o->relay_fds = relay_fds;
}

/* "from the checkpoint of step S (steps A..B are redone)", "from the
 * beginning (no checkpoint yet)" or, without --checkpoint-dir, "from the
 * beginning (no checkpoint folder)" into out[0..n). */
static void from_where(const orion_elastic *e, char *out, size_t n) {
  int64_t saved, cur;
  orion_checkpoint_progress(e->L, &saved, &cur);
  if (e->r == NULL || e->r->dir == NULL)
    snprintf(out, n, "from the beginning (no checkpoint folder)");
  else if (saved < 0)
    snprintf(out, n, "from the beginning (no checkpoint yet)");
  else if (cur > saved + 1)
    snprintf(out, n, "from the checkpoint of step %" PRId64 " (steps %" PRId64
                     "..%" PRId64 " are redone)",
             saved, saved + 1, cur);
  else if (cur == saved + 1)
    snprintf(out, n, "from the checkpoint of step %" PRId64 " (step %" PRId64
                     " is redone)",
             saved, cur);
  else
    snprintf(out, n, "from the checkpoint of step %" PRId64
                     " (no step is redone)",
             saved);
}

/* Executors wait to join at a loop boundary (a parallel_for about to
 * start, or a checkpoint written): the job re-forms in this process, the
 * script going on where it is.  Every array's rows come back to the
 * driver, the executors are let go (they register again, keeping the
 * parts of files they parsed) and the next loop starts a cluster of the
 * executors that come back and the joiners, which takes the partitions
 * from the driver as a new one does.  Nothing is redone. */
static void reform_in_place(orion_elastic *e, orion_cluster *c, int live,
                            int join) {
  mod_state *s = orion__state(e->L);
  char pids[ELASTIC_PIDS_MAX * 8], where[256];
  const char *w;
  size_t n;
  luaL_where(e->L, 1);
  w = lua_tolstring(e->L, -1, &n);
  while (n > 0 && (w[n - 1] == ' ' || w[n - 1] == ':'))
    n--; /* "file:line: " */
  snprintf(where, sizeof where, "%.*s", (int)(n < 200 ? n : 200), w);
  lua_pop(e->L, 1);
  fprintf(stderr, "orion: elastic: %d executor%s join%s; going on with %d "
                  "executors at %s, a loop boundary (nothing is redone)\n",
          join, join == 1 ? "" : "s", join == 1 ? "s" : "", live + join,
          where[0] != '\0' ? where : "the script's start");
  fflush(stderr);
  orion__dist_detach(e->L, s); /* the rows back, while c still runs */
  orion_cluster_keep_stderr(c, relay_fds, sizeof relay_fds);
  orion_cluster_release(c, -1, pids, sizeof pids);
  adopt_pids(pids);
  snprintf(listen_addr, sizeof listen_addr, "%s", orion_cluster_listen_addr(c));
  snprintf(token, sizeof token, "%s", orion_cluster_token(c));
  s->copts.load_parts = orion_cluster_load_parts(c);
  orion_cluster_discard(c);
  s->copts.listen = listen_addr;
  s->copts.token = token;
  s->copts.launch = adopt_launch;
  s->copts.launch_ud = NULL;
  s->copts.hint = NULL;
  s->copts.reform_min = e->min > 0 ? e->min : 1;
  s->copts.relay_fds = relay_fds;
  s->nexec = live + join;
}

static void on_elastic(void *ud, orion_cluster *c, int lost) {
  orion_elastic *e = ud;
  int live = orion_cluster_live(c, lost), join = orion_cluster_joiners(c);
  char from[160], num[16], pids[ELASTIC_PIDS_MAX * 8], fds[1024];
  const char *host = lost >= 0 ? orion_cluster_host(c, lost) : NULL;
  size_t w;
  int i;
  if (lost >= 0 && live + join < e->min) {
    fprintf(stderr,
            "orion-driver: elastic: executor %d on %s was lost and %d "
            "executor%s left, below --min-executors %d\n",
            lost, host, live + join, live + join == 1 ? " is" : "s are",
            e->min);
    fflush(stderr);
    return;
  }
  if (live + join < 1)
    return;
  if (lost < 0) {
    reform_in_place(e, c, live, join);
    return;
  }
  from_where(e, from, sizeof from);
  fprintf(stderr, "orion: elastic: executor %d on %s lost; going on with "
                  "%d executor%s %s\n",
          lost, host, live + join, live + join == 1 ? "" : "s", from);
  fflush(stderr);
  fflush(stdout);
  /* stdout, where the script's lines go, marks where the re-formed job's
   * output begins (its header lines come again). */
  printf("== elastic: %d executor%s, %s ==\n", live + join,
         live + join == 1 ? "" : "s", from);
  fflush(stdout);
  /* The pipes of executors' stderr (ssh's), which the next driver relays:
   * copies taken before the lost one's is closed with it. */
  orion_cluster_keep_stderr(c, fds, sizeof fds);
  orion_cluster_release(c, lost, pids, sizeof pids);
  /* Executors adopted before that are still there: the next driver's. */
  w = strlen(pids);
  for (i = 0; i < nadopted; i++)
    if (adopted[i] > 0 && waitpid(adopted[i], NULL, WNOHANG) == 0 &&
        w + 16 < sizeof pids)
      w += (size_t)snprintf(pids + w, sizeof pids - w, "%s%d",
                            w > 0 ? " " : "", (int)adopted[i]);
  snprintf(num, sizeof num, "%d", live + join);
  setenv("ORION_ELASTIC_FORM", num, 1);
  /* Files are cut into the parts the job's first executors parsed, which
   * the survivors keep (dsm/pload.c, executor/exec_kept.h). */
  snprintf(num, sizeof num, "%d", orion_cluster_load_parts(c));
  setenv("ORION_ELASTIC_LOAD_PARTS", num, 1);
  setenv("ORION_ELASTIC_LISTEN", orion_cluster_listen_addr(c), 1);
  setenv("ORION_ELASTIC_TOKEN", orion_cluster_token(c), 1);
  setenv("ORION_ELASTIC_PIDS", pids, 1);
  setenv("ORION_ELASTIC_ERRFDS", fds, 1);
  orion_recover_exec(e->r); /* returns only when it cannot */
}

void orion_elastic_arm(orion_elastic *e, lua_State *L) {
  e->L = L;
  if (e->on)
    orion_cluster_set_elastic_hook(on_elastic, e);
}
