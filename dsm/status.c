/* The job page's store and its JSON (see status.h); the server that
 * serves it is status_server.c. */
#include "dsm/status.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"
#include "util/log_ring.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
  int on;
  char script[512];
  double started;     /* orion_now() */
  double wall;        /* time(NULL) at the start */
  orion_status_exec *execs;
  int nexec;
  orion_status_loop loop; /* loop.number 0: none yet */
  orion_status_loop hist[ORION_STATUS_HISTORY]; /* ring, by loop number */
  int64_t nhist;          /* finished loops moved to hist */
  char **metrics;         /* recorded lines, each orion_malloc'd */
  int64_t nmetrics, mcap, dropped;
} st;

int orion_status_on(void) {
  int on;
  pthread_mutex_lock(&lock);
  on = st.on;
  pthread_mutex_unlock(&lock);
  return on;
}

void orion_status_store(int on) {
  int64_t i;
  pthread_mutex_lock(&lock);
  for (i = 0; i < st.nmetrics; i++)
    orion_free(st.metrics[i]);
  orion_free(st.metrics);
  orion_free(st.execs);
  memset(&st, 0, sizeof st);
  st.on = on;
  st.started = orion_now();
  st.wall = (double)time(NULL);
  pthread_mutex_unlock(&lock);
}

void orion_status_put_job(const char *script) {
  pthread_mutex_lock(&lock);
  if (st.on)
    snprintf(st.script, sizeof st.script, "%s", script);
  pthread_mutex_unlock(&lock);
}

void orion_status_put_execs(const orion_status_exec *v, int n) {
  pthread_mutex_lock(&lock);
  if (st.on) {
    if (n != st.nexec) {
      orion_status_exec *e = orion_realloc(st.execs, sizeof *e * (size_t)n);
      if (e != NULL || n == 0) {
        st.execs = e;
        st.nexec = n;
      }
    }
    if (n == st.nexec && n > 0)
      memcpy(st.execs, v, sizeof *v * (size_t)n);
  }
  pthread_mutex_unlock(&lock);
}

void orion_status_put_loop(const orion_status_loop *l) {
  pthread_mutex_lock(&lock);
  if (st.on) {
    if (st.loop.number != 0 && st.loop.number != l->number)
      st.hist[st.nhist++ % ORION_STATUS_HISTORY] = st.loop;
    st.loop = *l;
  }
  pthread_mutex_unlock(&lock);
}

void orion_status_record(const char *json, size_t n) {
  int warn = 0;
  char *line;
  if (!orion_status_on()) /* no copy without the page */
    return;
  if (n > 0 && json[n - 1] == '\n')
    n--;
  line = orion_strndup(json, n);
  pthread_mutex_lock(&lock);
  if (!st.on) {
    orion_free(line);
    line = NULL;
  } else if (line == NULL || st.nmetrics == ORION_STATUS_METRICS_MAX) {
    warn = st.dropped++ == 0;
  } else {
    if (st.nmetrics == st.mcap) {
      int64_t cap = st.mcap > 0 ? st.mcap * 2 : 256;
      char **m = orion_realloc(st.metrics, sizeof *m * (size_t)cap);
      if (m != NULL) {
        st.metrics = m;
        st.mcap = cap;
      }
    }
    if (st.nmetrics < st.mcap) {
      st.metrics[st.nmetrics++] = line;
      line = NULL;
    } else {
      warn = st.dropped++ == 0;
    }
  }
  pthread_mutex_unlock(&lock);
  orion_free(line);
  if (warn) /* outside the lock: the log ring has its own */
    orion_log_warn("the status page keeps at most %d recorded lines (or "
                   "memory ran out); later ones are counted as dropped and "
                   "not shown (the --metrics file has them all)",
                   ORION_STATUS_METRICS_MAX);
}

/* ---- rendering ---------------------------------------------------------- */

/* Whether a loop in this phase is still going. */
static int live(const orion_status_loop *l) {
  return strcmp(l->phase, "running") == 0 || strcmp(l->phase, "ending") == 0 ||
         strcmp(l->phase, "pulling") == 0;
}

/* key: value members. */
static void kint(orion_json *j, const char *key, int64_t v) {
  orion_json_key(j, key);
  orion_json_int(j, v);
}

static void knum(orion_json *j, const char *key, double v) {
  orion_json_key(j, key);
  orion_json_num(j, v);
}

static void kstr(orion_json *j, const char *key, const char *v) {
  orion_json_key(j, key);
  orion_json_str(j, v);
}

static void render_exec(orion_json *j, const orion_status_exec *e,
                        double now) {
  orion_json_object(j);
  kint(j, "id", e->id);
  kstr(j, "host", e->host);
  kstr(j, "addr", e->addr[0] != '\0' ? e->addr : NULL);
  orion_json_key(j, "pid");
  if (e->pid > 0)
    orion_json_int(j, e->pid);
  else
    orion_json_null(j);
  kstr(j, "device", e->device);
  orion_json_key(j, "heartbeat_age");
  if (e->heard > 0)
    orion_json_num(j, e->polled - e->heard);
  else
    orion_json_null(j);
  knum(j, "polled_ago", now - e->polled);
  kstr(j, "state", e->state);
  kint(j, "blocks_done", e->blocks_done);
  kint(j, "blocks_total", e->blocks_total);
  knum(j, "compute_seconds", e->compute);
  knum(j, "wait_seconds", e->wait);
  orion_json_end(j);
}

static void render_loop(orion_json *j, const orion_status_loop *l) {
  orion_json_object(j);
  kint(j, "number", l->number);
  kstr(j, "where", l->where);
  kstr(j, "schedule", l->schedule);
  kstr(j, "phase", l->phase);
  kint(j, "blocks", l->blocks);
  kint(j, "blocks_done", l->blocks_done);
  kint(j, "clocks", l->clocks);
  kint(j, "elements", l->elements);
  kint(j, "executors", l->nexec);
  kint(j, "driver_bytes", (int64_t)l->bytes);
  kint(j, "bytes_moved", (int64_t)l->bytes);
  kint(j, "peer_bytes", (int64_t)l->peer_bytes);
  knum(j, "seconds", l->seconds);
  knum(j, "compute_seconds", l->compute);
  knum(j, "wait_seconds", l->wait);
  orion_json_end(j);
}

static void render_log_line(void *ud, uint64_t seq, double t,
                            const char *line) {
  orion_json *j = ud;
  orion_json_object(j);
  kint(j, "n", (int64_t)seq);
  knum(j, "t", t - st.started);
  kstr(j, "line", line);
  orion_json_end(j);
}

void orion_status_render(orion_buf *b, double now) {
  orion_json j;
  int64_t i, first;
  orion_json_init(&j, b);
  pthread_mutex_lock(&lock);
  orion_json_object(&j);
  orion_json_key(&j, "job");
  orion_json_object(&j);
  kstr(&j, "script", st.script);
  kint(&j, "pid", (int64_t)getpid());
  knum(&j, "started", st.wall);
  knum(&j, "uptime", now - st.started);
  kint(&j, "loops_done", st.nhist + (st.loop.number != 0 && !live(&st.loop)));
  orion_json_end(&j);
  orion_json_key(&j, "executors");
  orion_json_array(&j);
  for (i = 0; i < st.nexec; i++)
    render_exec(&j, &st.execs[i], now);
  orion_json_end(&j);
  orion_json_key(&j, "loop");
  if (st.loop.number != 0) {
    orion_status_loop l = st.loop;
    if (live(&l))
      l.seconds = now - l.started;
    render_loop(&j, &l);
  } else {
    orion_json_null(&j);
  }
  orion_json_key(&j, "loops"); /* finished loops, oldest first */
  orion_json_array(&j);
  first = st.nhist > ORION_STATUS_HISTORY ? st.nhist - ORION_STATUS_HISTORY
                                          : 0;
  for (i = first; i < st.nhist; i++)
    render_loop(&j, &st.hist[i % ORION_STATUS_HISTORY]);
  orion_json_end(&j);
  orion_json_key(&j, "metrics");
  orion_json_object(&j);
  kint(&j, "count", st.nmetrics);
  kint(&j, "dropped", st.dropped);
  orion_json_end(&j);
  orion_json_key(&j, "log");
  orion_json_array(&j);
  orion_log_recent(0, render_log_line, &j);
  orion_json_end(&j);
  orion_json_end(&j);
  pthread_mutex_unlock(&lock);
}

void orion_status_render_metrics(orion_buf *b, int64_t since) {
  orion_json j;
  int64_t i;
  orion_json_init(&j, b);
  pthread_mutex_lock(&lock);
  orion_json_array(&j);
  for (i = since > 0 ? since : 0; i < st.nmetrics; i++)
    orion_json_raw(&j, st.metrics[i], strlen(st.metrics[i]));
  orion_json_end(&j);
  pthread_mutex_unlock(&lock);
}
