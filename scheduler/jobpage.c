/* The job page's view of the driver (see jobpage.h). */
#include "scheduler/jobpage.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "dsm/status.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/log_ring.h"
#include "util/progress.h"

static const orion_jobpage_loop *cur; /* the loop running, or NULL */
static int64_t nloops;                /* loops started */
static orion_status_loop loop;        /* what was published of the
                                         current or last loop */
static orion_status_exec *execs;      /* what was published of the
                                         executors (their blocks and
                                         times stay the last loop's) */
static int nexecs;

/* Executor e's state as a word (see orion_status_exec). */
static void exec_state(const orion_cluster_peer_info *pi, int e, char *out,
                       size_t n) {
  int b = cur != NULL ? orion_loop_in_flight(cur->m, e) : -1;
  if (!pi->connected)
    snprintf(out, n, "%s", pi->exited ? "exited"
                           : pi->addr[0] == '\0' ? "starting" : "lost");
  else if (b >= 0)
    snprintf(out, n, "running block %d", b);
  else if (cur != NULL && !orion_loop_finished(cur->m))
    snprintf(out, n, "waiting");
  else
    snprintf(out, n, "idle");
}

/* Publishes the executors of cl and the loop (when one runs). */
static void publish(orion_cluster *cl) {
  int n = orion_cluster_size(cl), e;
  double now = orion_now(), compute = 0;
  if (n != nexecs) {
    orion_status_exec *v = orion_realloc(execs, sizeof *v * (size_t)n);
    if (v == NULL)
      return;
    memset(v, 0, sizeof *v * (size_t)n);
    execs = v;
    nexecs = n;
  }
  if (cur != NULL) {
    int done, total;
    orion_loop_count(cur->m, -1, &done, &total);
    loop.blocks_done = done;
    loop.blocks = total;
    loop.clocks = cur->m->s->nclocks;
    snprintf(loop.phase, sizeof loop.phase, "%s",
             orion_loop_phase_name(cur->m));
    loop.bytes = orion_cluster_bytes(cl) - cur->bytes0;
    loop.peer_bytes = cur->peer_bytes != NULL ? *cur->peer_bytes : 0;
    loop.seconds = now - loop.started;
  }
  for (e = 0; e < n; e++) {
    orion_status_exec *x = &execs[e];
    orion_cluster_peer_info pi;
    orion_cluster_peer(cl, e, &pi);
    x->id = e;
    snprintf(x->host, sizeof x->host, "%s", pi.where);
    snprintf(x->addr, sizeof x->addr, "%s", pi.addr);
    x->pid = pi.pid;
    /* Every body runs on the executor's CPU (no GPU backend yet). */
    snprintf(x->device, sizeof x->device, "cpu");
    x->heard = pi.last_heard;
    x->polled = now;
    exec_state(&pi, e, x->state, sizeof x->state);
    if (cur != NULL) {
      int done, total;
      orion_loop_count(cur->m, e, &done, &total);
      x->blocks_done = done;
      x->blocks_total = total;
      x->compute = cur->secs[e];
      x->wait = loop.seconds > x->compute ? loop.seconds - x->compute : 0;
    }
    compute += x->compute;
  }
  orion_status_put_execs(execs, n);
  if (cur != NULL) {
    loop.compute = compute;
    loop.wait = n * loop.seconds > compute ? n * loop.seconds - compute : 0;
    orion_status_put_loop(&loop);
  }
}

static void on_tick(void *ud) { publish(ud); }

void orion_jobpage_cluster(orion_cluster *cl) {
  if (!orion_status_on())
    return;
  orion_cluster_set_tick(cl, on_tick, cl);
  publish(cl);
}

void orion_jobpage_loop_start(const orion_jobpage_loop *v) {
  if (!orion_status_on())
    return;
  cur = v;
  memset(&loop, 0, sizeof loop);
  loop.number = ++nloops;
  snprintf(loop.where, sizeof loop.where, "%s",
           strncmp(v->where, "in ", 3) == 0 ? v->where + 3 : v->where);
  snprintf(loop.schedule, sizeof loop.schedule, "%s", v->schedule);
  loop.elements = v->elements;
  loop.nexec = orion_cluster_size(v->cl);
  loop.started = orion_now();
  publish(v->cl);
}

void orion_jobpage_loop_end(void) {
  if (cur == NULL)
    return;
  publish(cur->cl);
  cur = NULL;
}

/* print, then the same text into the log ring, one entry per line. */
static int l_print(lua_State *L) {
  int n = lua_gettop(L), i;
  luaL_Buffer b;
  const char *s, *nl;
  size_t len;
  lua_pushvalue(L, lua_upvalueindex(1));
  for (i = 1; i <= n; i++)
    lua_pushvalue(L, i);
  lua_call(L, n, 0);
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (i > 1)
      luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  s = lua_tolstring(L, -1, &len);
  while ((nl = memchr(s, '\n', len)) != NULL) {
    orion_log_keep(s, (size_t)(nl - s));
    len -= (size_t)(nl - s) + 1;
    s = nl + 1;
  }
  orion_log_keep(s, len);
  return 0;
}

void orion_jobpage_print(lua_State *L) {
  if (!orion_status_on())
    return;
  lua_getglobal(L, "print");
  lua_pushcclosure(L, l_print, 1);
  lua_setglobal(L, "print");
}

/* ---- orion.progress ------------------------------------------------------ */

static orion_job_progress job; /* the script's reports (one per process) */

/* orion.progress(done, total [, unit [, line]]): the job has done `done`
 * of its `total` units ("epoch" unless unit says otherwise).  The first
 * call is the baseline the ETA is timed from; each later one that is past
 * it prints the line of util/progress.h on stderr (not under --quiet, and
 * into the page's log) and every one updates the page's progress.  With
 * line (one line of text), that line is the job's instead (orion.train's):
 * printed on stderr, drawn in place on a terminal (util/progress.h), shown
 * on the page and kept in its log. */
static int l_progress(lua_State *L) {
  lua_Integer done = luaL_checkinteger(L, 1);
  lua_Integer total = luaL_checkinteger(L, 2);
  const char *unit = luaL_optstring(L, 3, "epoch");
  size_t nshown = 0;
  const char *shown = luaL_optlstring(L, 4, NULL, &nshown);
  char line[160];
  if (done < 0 || done > total)
    return luaL_error(L, "orion.progress: done must be between 0 and the "
                         "total %I, got %I",
                      (LUAI_UACINT)total, (LUAI_UACINT)done);
  if (unit[0] == '\0' || strlen(unit) >= sizeof job.unit ||
      strpbrk(unit, "\r\n") != NULL)
    return luaL_error(L, "orion.progress: the unit must be a word of 1 to "
                         "%d characters on one line, got '%s'",
                      (int)sizeof job.unit - 1, unit);
  if (shown != NULL && (nshown >= sizeof job.shown ||
                        strlen(shown) != nshown ||
                        strpbrk(shown, "\r\n") != NULL))
    return luaL_error(L, "orion.progress: the line must be one line of at "
                         "most %d characters",
                      (int)sizeof job.shown - 1);
  orion_job_progress_note(&job, unit, (int64_t)done, (int64_t)total,
                          orion_now());
  snprintf(job.shown, sizeof job.shown, "%s", shown != NULL ? shown : "");
  orion_status_put_progress(&job);
  if (shown != NULL) {
    orion_log_keep(shown, nshown);
    orion_progress_job_line(shown);
  } else if (job.done > job.done0) {
    orion_job_progress_line(&job, line, sizeof line);
    orion_log_info("%s", line);
  }
  return 0;
}

/* orion.progress_in_place() -> whether a progress line is drawn in place
 * on stderr (a terminal, or ORION_PROGRESS=1; never ORION_PROGRESS=0 or
 * --quiet): orion.train then erases it before the script prints. */
static int l_progress_in_place(lua_State *L) {
  lua_pushboolean(L, orion_progress_in_place());
  return 1;
}

/* orion.progress_clear([keep]): erases the progress line drawn in place,
 * if one is on screen; with keep, the job's line (orion.progress's 4th
 * argument) stays instead, ended with a newline, and is not drawn again. */
static int l_progress_clear(lua_State *L) {
  if (lua_toboolean(L, 1))
    orion_progress_settle();
  else
    orion_progress_clear();
  return 0;
}

void orion_jobpage_open_progress(lua_State *L) {
  lua_pushcfunction(L, l_progress);
  lua_setfield(L, -2, "progress");
  lua_pushcfunction(L, l_progress_in_place);
  lua_setfield(L, -2, "progress_in_place");
  lua_pushcfunction(L, l_progress_clear);
  lua_setfield(L, -2, "progress_clear");
}
