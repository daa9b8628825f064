/* The job page (orion-driver --status): what the driver publishes about
 * its job, and the HTTP server that shows it.
 *
 * The server runs a libuv loop of its own on a thread of its own
 * (dsm/status_server.c), so that it answers while the script runs Lua,
 * while a loop runs and while a file loads, and never makes them wait.
 * It never reads the cluster, the loop or Lua: the driver's thread
 * publishes copies here (scheduler/jobpage.c fills them at the cluster's ticks,
 * at the start and end of each loop and at orion.record), and the server
 * renders them as JSON under one mutex, held only to copy.
 *
 * One page per process: the store is a singleton.  Every put function is
 * a no-op until orion_status_start succeeded, so the driver's code calls
 * them unconditionally.  All functions are thread-safe. */
#ifndef ORION_DSM_STATUS_H
#define ORION_DSM_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/progress.h"

/* Recorded metrics kept at most (a line over it is counted as dropped,
 * and a warning says so once). */
#define ORION_STATUS_METRICS_MAX 1000000
/* Finished loops kept for the page's history. */
#define ORION_STATUS_HISTORY 20
/* Numeric keys of the recorded lines that get a chart, at most (later
 * ones are not charted; the lines keep them). */
#define ORION_STATUS_SERIES_MAX 64

/* One executor as the page shows it. */
typedef struct orion_status_exec {
  int id;
  char host[96];  /* where it was started ("127.0.0.1", a host) */
  char addr[96];  /* where it connected from; "" before it registered */
  int pid;        /* the process the driver started for it (for --hosts,
                     its ssh); 0: none */
  char device[16];
  double heard;   /* orion_now() of its last frame; 0: never */
  double polled;  /* orion_now() when the driver last read its executors'
                     sockets (it reads them only while it waits for a
                     loop or a load, not while the script runs Lua) */
  char state[64]; /* "starting", "idle", "running block 3", "lost" */
  int64_t blocks_done, blocks_total; /* in the current or last loop */
  double compute, wait;              /* seconds, likewise */
} orion_status_exec;

/* The current (or last) distributed loop. */
typedef struct orion_status_loop {
  int64_t number;   /* 1, 2, ...; 0: none yet */
  char where[256];  /* "the parallel_for at x.lua:3" */
  char schedule[32];
  char phase[16];   /* "running", "ending", "pulling", "finished",
                       "failed", "broken" */
  int64_t blocks, blocks_done, clocks, elements;
  int nexec;
  uint64_t bytes;   /* through the driver's connections so far */
  uint64_t peer_bytes; /* between executors, as their LOOP_DONEs report
                          (so 0 until the loop ends) */
  double started;   /* orion_now() */
  double seconds;   /* so far, or in all once finished */
  double compute;   /* summed over the executors */
  double wait;      /* executors' seconds not computing: nexec * seconds
                       - compute */
} orion_status_loop;

/* Starts the page on spec, "[ADDR:]PORT" (ADDR: an IPv4 or IPv6 address or
 * a name, default 127.0.0.1; PORT 0..65535, 0: any free port) with a fresh
 * random token, serving page[0..page_len) (borrowed for the process's
 * life) at "/".  Writes the page's address with its token into url
 * ("http://127.0.0.1:8123/?token=HEX").  Returns 0, or ORION_EINVAL with
 * err set (a bad spec, a port in use, a second start). */
int orion_status_start(const char *spec, const char *page, size_t page_len,
                       char *url, size_t url_len, orion_error *err);

/* Stops the server and frees the store (the driver's exit). */
void orion_status_stop(void);

/* Whether the page is up. */
int orion_status_on(void);

/* The job: its script and the time it started. */
void orion_status_put_job(const char *script);

/* The executors, all n of them (copied). */
void orion_status_put_execs(const orion_status_exec *v, int n);

/* The current loop (copied).  A loop with a new number moves the last one,
 * when finished, to the history. */
void orion_status_put_loop(const orion_status_loop *l);

/* One orion.record line, a JSON object (copied; a trailing newline is
 * dropped).  Its numeric keys become the page's series (see
 * orion_status_render). */
void orion_status_record(const char *json, size_t n);

/* The job's progress as the script last reported it (copied). */
void orion_status_put_progress(const orion_job_progress *p);

/* ---- rendering (the server's side; public for the tests) ------------- */

/* GET /api/status: {"job": {...}, "progress": {...} or null,
 * "executors": [...], "loop": {...} or null, "loops": [...], "metrics":
 * {"count", "dropped", "series"}, "log": [...]}.  The series are the
 * recorded numeric keys in the order the page charts them: train and
 * test metrics first (a loss, rmse, accuracy, auc, log-likelihood...,
 * each train one before its test one), then the rest as first recorded;
 * a key whose values equal an earlier one's in every line (bytes_moved
 * and driver_bytes) is not a series of its own but listed in that one's
 * "same".
 * with running times as of orion_now() = now.  An executor's
 * heartbeat_age is that of its last frame when the driver last read the
 * executors' sockets, polled_ago how long ago that was. */
void orion_status_render(orion_buf *b, double now);

/* GET /api/metrics: the recorded lines from number `since` (0-based) on,
 * as a JSON array. */
void orion_status_render_metrics(orion_buf *b, int64_t since);

/* Turns the store on (puts take effect from now) or, with on = 0, off,
 * freeing what it holds.  orion_status_start and _stop call it; the tests
 * call it to use the store without a server. */
void orion_status_store(int on);

#endif
