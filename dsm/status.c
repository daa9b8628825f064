/* The job page's store and its JSON (see status.h); the server that
 * serves it is status_server.c. */
#include "dsm/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"
#include "util/log_ring.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A numeric key of the recorded lines: a chart on the page. */
typedef struct series {
  char key[64];
  int same_as; /* the earlier series whose values it has had in every
                  line, or -1 */
} series;

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
  series series[ORION_STATUS_SERIES_MAX];
  int nseries;
  orion_job_progress progress; /* progress.started 0: none reported */
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

/* ---- series -------------------------------------------------------------- */

/* The numeric members of a recorded line (a flat JSON object, as
 * orion.record writes it). */
typedef struct member {
  char key[64]; /* as long as a series' key */
  double v;
} member;

/* Skips the JSON string at p (at its opening quote), copying at most
 * n - 1 of its raw bytes into out (NULL: none); returns the byte after
 * its closing quote, or NULL when it has none. */
static const char *scan_string(const char *p, char *out, size_t n) {
  size_t o = 0;
  for (p++; *p != '"'; p++) {
    if (*p == '\0')
      return NULL;
    if (*p == '\\' && *++p == '\0')
      return NULL;
    if (out != NULL && o + 1 < n)
      out[o++] = *p;
  }
  if (out != NULL)
    out[o] = '\0';
  return p + 1;
}

/* The numeric members of line into m (at most max); how many.  A line
 * that is not a flat object gives what was read before the surprise. */
static int scan_members(const char *line, member *m, int max) {
  const char *p = strchr(line, '{');
  int k = 0;
  while (p != NULL && k < max) {
    char *end;
    p += strspn(p + 1, " \t\r\n") + 1;
    if (*p != '"' || (p = scan_string(p, m[k].key, sizeof m[k].key)) == NULL)
      break;
    p += strspn(p, " \t\r\n");
    if (*p++ != ':')
      break;
    p += strspn(p, " \t\r\n");
    if (*p == '"') {
      p = scan_string(p, NULL, 0);
    } else {
      m[k].v = strtod(p, &end);
      if (end != p) {
        k++;
        p = end;
      } else {
        p += strcspn(p, ",}"); /* true, false, null */
      }
    }
    if (p == NULL)
      break;
    p += strspn(p, " \t\r\n");
    if (*p != ',')
      break;
  }
  return k;
}

/* Adds the numeric keys of a recorded line to the series, and ends a
 * series' sameness with another when this line has one of them without
 * the other or with another value.  A key new in this line is the same
 * as an earlier key also new in it with the same value.  Under the
 * lock. */
static void note_series(const char *line) {
  member m[256];
  int at[ORION_STATUS_SERIES_MAX], first_new = st.nseries;
  int nm = scan_members(line, m, 256), i, k;
  for (k = 0; k < ORION_STATUS_SERIES_MAX; k++)
    at[k] = -1;
  for (i = 0; i < nm; i++) {
    for (k = 0; k < st.nseries; k++)
      if (strcmp(st.series[k].key, m[i].key) == 0)
        break;
    if (k == st.nseries) {
      if (k == ORION_STATUS_SERIES_MAX)
        continue;
      memcpy(st.series[k].key, m[i].key, sizeof st.series[k].key);
      st.series[k].same_as = -1;
      st.nseries++;
    }
    at[k] = i;
  }
  for (k = 0; k < st.nseries; k++) {
    series *sk = &st.series[k];
    int j;
    if (k >= first_new) {
      for (j = first_new; j < k; j++)
        if (st.series[j].same_as < 0 && m[at[j]].v == m[at[k]].v) {
          sk->same_as = j;
          break;
        }
    } else if ((j = sk->same_as) >= 0 &&
               ((at[k] < 0) != (at[j] < 0) ||
                (at[k] >= 0 && m[at[k]].v != m[at[j]].v))) {
      sk->same_as = -1;
    }
  }
}

/* Whether token t[0..n) of a key is one of the words in list. */
static int word_in(const char *t, size_t n, const char *const *list) {
  for (; *list != NULL; list++)
    if (strlen(*list) == n && strncmp(t, *list, n) == 0)
      return 1;
  return 0;
}

/* Where a key goes among the charts: its group (0: a train or test
 * metric, 1: the rest), its side (0: train or neither, 1: test) and its
 * stem (the key without its side's word: "rmse" for train_rmse and
 * test_rmse), written into stem. */
static int series_group(const char *key, int *side, char *stem, size_t n) {
  static const char *const metric[] = {
      "loss", "rmse", "mse", "mae", "error", "err", "accuracy", "acc",
      "auc", "ll", "nll", "likelihood", "perplexity", NULL};
  static const char *const not_metric[] = {"seconds", "s", "bytes", "time",
                                           NULL};
  static const char *const test[] = {"test", "val", "valid", "validation",
                                     "eval", "heldout", NULL};
  static const char *const train[] = {"train", "training", NULL};
  const char *p = key;
  int is_metric = 0, no = 0;
  size_t o = 0;
  *side = 0;
  while (*p != '\0') {
    size_t len = strcspn(p, "_");
    int side_word = 0;
    if (word_in(p, len, metric))
      is_metric = 1;
    if (word_in(p, len, not_metric))
      no = 1;
    if (word_in(p, len, test))
      *side = side_word = 1;
    else if (word_in(p, len, train))
      side_word = 1;
    if (!side_word && o + len + 1 < n) {
      if (o > 0)
        stem[o++] = '_';
      memcpy(stem + o, p, len);
      o += len;
    }
    p += len + (p[len] == '_');
  }
  stem[o] = '\0';
  return is_metric && !no ? 0 : 1;
}

/* The page's order of series: indices of the series that are not the
 * same as another, into order; how many. */
static int series_order(int *order) {
  int group[ORION_STATUS_SERIES_MAX], side[ORION_STATUS_SERIES_MAX];
  int rank[ORION_STATUS_SERIES_MAX];
  char stem[ORION_STATUS_SERIES_MAX][64];
  int n = 0, i, j;
  for (i = 0; i < st.nseries; i++)
    group[i] = series_group(st.series[i].key, &side[i], stem[i],
                            sizeof stem[i]);
  /* A metric ranks by the first key with its stem, so train_rmse and
   * test_rmse stand side by side. */
  for (i = 0; i < st.nseries; i++) {
    rank[i] = i;
    for (j = 0; j < i && group[i] == 0; j++)
      if (group[j] == 0 && strcmp(stem[i], stem[j]) == 0) {
        rank[i] = rank[j];
        break;
      }
  }
  for (i = 0; i < st.nseries; i++) {
    if (st.series[i].same_as >= 0)
      continue;
    /* Insertion by (group, rank, side, first seen): n is at most 64. */
    for (j = n; j > 0; j--) {
      int o = order[j - 1];
      if (group[o] < group[i] ||
          (group[o] == group[i] &&
           (rank[o] < rank[i] || (rank[o] == rank[i] && side[o] <= side[i]))))
        break;
      order[j] = o;
    }
    order[j] = i;
    n++;
  }
  return n;
}

void orion_status_put_progress(const orion_job_progress *p) {
  pthread_mutex_lock(&lock);
  if (st.on)
    st.progress = *p;
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
      note_series(line);
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

/* "progress": the script's last report, or null.  Under the lock. */
static void render_progress(orion_json *j) {
  const orion_job_progress *p = &st.progress;
  char line[160];
  double eta = orion_job_progress_eta(p);
  orion_json_key(j, "progress");
  if (!p->started) {
    orion_json_null(j);
    return;
  }
  orion_job_progress_line(p, line, sizeof line);
  orion_json_object(j);
  kstr(j, "unit", p->unit);
  kint(j, "done", p->done);
  kint(j, "total", p->total);
  knum(j, "seconds", p->seconds);
  orion_json_key(j, "eta_seconds");
  if (eta >= 0)
    orion_json_num(j, eta);
  else
    orion_json_null(j);
  kstr(j, "line", line);
  orion_json_end(j);
}

/* "series": [{"key", "same": [...]}, ...] in the page's order.  Under
 * the lock. */
static void render_series(orion_json *j) {
  int order[ORION_STATUS_SERIES_MAX], n = series_order(order), i, k;
  orion_json_key(j, "series");
  orion_json_array(j);
  for (i = 0; i < n; i++) {
    orion_json_object(j);
    kstr(j, "key", st.series[order[i]].key);
    orion_json_key(j, "same");
    orion_json_array(j);
    for (k = 0; k < st.nseries; k++)
      if (st.series[k].same_as == order[i])
        orion_json_str(j, st.series[k].key);
    orion_json_end(j);
    orion_json_end(j);
  }
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
  render_progress(&j);
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
  render_series(&j);
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
