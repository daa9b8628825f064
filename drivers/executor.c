/* orion-executor: one worker process of an Orion-C job.
 *
 *   orion-executor --driver HOST:PORT [--token T] [--id N] [--bind ADDR]
 *                  [--gpu N [--gpu-memory SIZE]]
 *
 * The token comes from --token or, better (ps shows arguments), from
 * $ORION_TOKEN.
 *
 * With --gpu it opens that CUDA device first (gpu/gpu.h; failing that it
 * exits with code 2 and the reason) and names it in its HELLO.
 * It connects to the driver, and each proves to the other that it holds the
 * job's token (dsm/sec.h: the token never travels) before any frame; it
 * tries again with a growing pause until $ORION_REGISTER_TIMEOUT (default
 * 30 s) when it cannot register.  Then it serves the driver until told to
 * stop.  Two threads:
 *   - the main thread runs a libuv loop: it reads and writes frames,
 *     sends a heartbeat every second and watches the driver's;
 *   - the compute thread owns the Lua state and every array copy: it takes
 *     the driver's requests (load a body, run a block, end a loop, parse
 *     part of a file) in order and queues its answers back to the loop.
 * So the next block's data arrives while the current block computes.
 *
 * The executor never outlives its job: when the driver's connection closes
 * or the driver stays silent past the heartbeat timeout, it exits at once
 * (code 3); with --elastic it runs itself again with --join instead, and
 * registers with the re-formed job (drivers/elastic.h), or exits when
 * none takes it within $ORION_REGISTER_TIMEOUT.
 *
 * This file holds main: the command line, the connection to the driver,
 * the heartbeat and the loop thread's outbox.  The rest of the executor is
 * in executor/exec_*.c (executor/exec_state.h lists who owns what).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <time.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "executor/exec_state.h"
#include "drivers/launch.h"
#include "dsm/msg.h"
#include "dsm/net.h"
#include "dsm/wire.h"
#include "executor/exec.h"
#include "executor/exec_gbody.h"
#include "executor/exec_kept.h"
#include "util/alloc.h"
#include "util/clock.h"

static int main_argc;   /* the command line, for --elastic's re-register */
static char **main_argv;

/* ---- the loop thread ---------------------------------------------------- */

/* The driver is gone: the end of this executor, except with --elastic,
 * where the job re-forms (drivers/elastic.c) and this process registers
 * with the driver again, afresh: it runs itself again with --join and
 * without --id (the driver names its id), within $ORION_REGISTER_TIMEOUT. */
static void lost_driver(exec_state *x, const char *why) {
  char **argv;
  int i, j;
  if (!x->elastic)
    orion__exec_die(x, "%s", why);
  fprintf(stderr, "orion-executor %d: %s; registering again (--elastic)\n",
          x->id, why);
  fflush(stderr);
  argv = orion_calloc((size_t)main_argc + 2, sizeof *argv);
  if (argv == NULL)
    orion__exec_die(x, "%s (out of memory registering again)", why);
  argv[0] = main_argv[0];
  for (i = j = 1; i < main_argc; i++) {
    if (strcmp(main_argv[i], "--id") == 0 && i + 1 < main_argc) {
      i++;
      continue;
    }
    if (strncmp(main_argv[i], "--id=", 5) == 0 ||
        strcmp(main_argv[i], "--join") == 0)
      continue;
    argv[j++] = main_argv[i];
  }
  argv[j++] = "--join";
  argv[j] = NULL;
  /* The parts of files it parsed stay with it (executor/exec_kept.h). */
  orion_kept_pass_on();
  {
    /* By its own path, not /proc/self/exe: the process keeps its name
     * (ps, pgrep orion-executor). */
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
      self[k] = '\0';
      execv(self, argv);
    }
  }
  execvp(main_argv[0], argv);
  orion__exec_die(x, "%s (cannot run itself again: %s)", why,
                  strerror(errno));
}

/* The compute thread queued frames: send them, to the driver and to the
 * peers, and retry the FETCHes a run that has now started can answer. */
static void on_wake(uv_poll_t *h, int status, int events) {
  exec_state *x = h->data;
  orion_buf b;
  (void)status; /* a failed poll of the pipe: the queues are read anyway */
  (void)events;
  orion__exec_wake_taken(x);
  pthread_mutex_lock(&x->mu);
  b = x->out;
  orion_buf_init(&x->out);
  pthread_mutex_unlock(&x->mu);
  if (x->conn != NULL)
    orion_conn_send(x->conn, &b);
  orion_buf_free(&b);
  orion__peer_drain(x);
  orion__shard_serve_deferred(x);
  orion__rows_serve_moves(x);
}

static void send_heartbeat(exec_state *x) {
  orion_buf b;
  orion_wire_heartbeat h;
  h.executor = (uint32_t)x->id;
  h.seq = ++x->hb_seq;
  h.sent_ns = uv_hrtime();
  h.mem_used = orion_alloc_used();
  orion_buf_init(&b);
  orion_wire_heartbeat_encode(&b, &h);
  orion_conn_send(x->conn, &b);
  orion_buf_free(&b);
}

/* The driver's silence counts only while this executor has work of the
 * driver's (then the driver waits on the executors and sends heartbeats).
 * Idle, the driver may be running the script for minutes; a driver that is
 * gone closes the connection, and a host that is gone is found by TCP
 * keepalive (dsm/net.c). */
static void on_tick(uv_timer_t *t) {
  exec_state *x = t->data;
  int64_t open;
  if (x->conn == NULL)
    return;
  pthread_mutex_lock(&x->mu);
  open = x->jobs_open;
  pthread_mutex_unlock(&x->mu);
  if (open == 0 && orion_now() - x->conn->last_rx > 1.0)
    x->conn->last_rx = orion_now() - 1.0;
  if (orion_now() - x->conn->last_rx > x->hb_timeout) {
    char why[512];
    snprintf(why, sizeof why, "the driver at %s:%d has been silent for "
                              "%.0f s%s",
             x->host, x->port, x->hb_timeout, x->elastic ? "" : "; exiting");
    lost_driver(x, why);
  }
  if (x->welcomed)
    send_heartbeat(x);
  orion__budget_observe(x);
}

/* The driver proved it holds the token: peers' links follow its
 * encryption policy unless --no-encrypt said otherwise. */
static void on_connected(orion_conn *c) {
  exec_state *x = orion__exec_of(c);
  if (x->joining) /* held until the job's next loop boundary: the time to
                     register again starts when the driver lets it go */
    x->reg_until = orion_now() + x->reg_timeout;
  if (x->encrypt == ORION_SEC_AUTO)
    x->encrypt = c->sec.peer_policy;
  if (x->listen_addr[0] == '\0')
    orion__peer_listen(x, c);
  orion__peer_send_hello(x, c);
}

static void connect_driver(exec_state *x);

static void on_retry(uv_timer_t *t) { connect_driver(t->data); }

/* Until it is registered, the executor tries again after a failure (the
 * driver not listening yet, or refusing while crowded) with a growing
 * pause, until $ORION_REGISTER_TIMEOUT; once registered, losing the
 * driver ends it. */
static void on_closed(orion_conn *c, const char *reason) {
  exec_state *x = orion__exec_of(c);
  double pause = 0.05 * (double)(1 << (x->tries < 6 ? x->tries : 6));
  x->conn = NULL;
  /* A record from a driver that had proved itself failed its tag: the
   * link is being tampered with.  Trying again would only hide that (the
   * driver, told by the alert, has ended the job), so it is said at once,
   * registered or not. */
  if (c->fault == ORION_CONN_FAULT_RECORD)
    orion__exec_die(x, "refused a record from the driver at %s:%d: %s", x->host,
                    x->port, c->sec.why);
  if (c->fault == ORION_CONN_FAULT_ALERTED && x->welcomed)
    orion__exec_die(x, "the driver at %s:%d refused a record from this "
                       "executor: %s",
                    x->host, x->port, c->alert);
  if (!x->welcomed && orion_now() + pause < x->reg_until) {
    snprintf(x->last_why, sizeof x->last_why, "%s", reason);
    uv_timer_start(&x->retry, on_retry, (uint64_t)(pause * 1000), 0);
    return;
  }
  if (!x->welcomed && x->tries > 1)
    orion__exec_die(x,
                    "could not register with the driver at %s:%d in %d "
                    "tries over %g s: %s",
                    x->host, x->port, x->tries, x->reg_timeout, reason);
  {
    char why[768];
    snprintf(why, sizeof why, "lost the driver at %s:%d: %s", x->host,
             x->port, reason);
    lost_driver(x, why);
  }
}

static void connect_driver(exec_state *x) {
  char msg[256];
  x->tries++;
  x->conn = orion__exec_connection(x, orion__exec_on_driver_frame, on_closed,
                                   on_connected, NULL);
  if (x->bind != NULL &&
      orion_conn_bind_local(x->conn, x->bind, msg, sizeof msg) != 0)
    orion__exec_die(x, "--bind %s: %s", x->bind, msg);
  orion_conn_connect(x->conn, x->host, x->port);
}

/* ---- the command line --------------------------------------------------- */

static const char usage[] =
    "usage: orion-executor --driver HOST:PORT [--token TOKEN] [--id N]\n"
    "                      [--bind ADDR] [--gpu N [--gpu-memory SIZE]]\n"
    "                      [--allow-io] [--no-encrypt] [--elastic] [--join]\n"
    "\n"
    "A worker of an Orion-C job; orion-driver starts these (or prints the\n"
    "command for --launcher manual).  It exits when the driver goes away.\n"
    "  --driver HOST:PORT  the driver's address\n"
    "  --token TOKEN       the job's token (default: $ORION_TOKEN, which\n"
    "                      keeps it out of `ps`)\n"
    "  --id N              this executor's number in the job (default 0)\n"
    "  --bind ADDR         connect from this local address\n"
    "  --gpu N             own CUDA device N (numbered after\n"
    "                      CUDA_VISIBLE_DEVICES); exit 2 when it cannot\n"
    "  --gpu-memory SIZE   use at most SIZE of its memory (256M, 8G, ...)\n"
    "  --allow-io          let loop bodies run programs, use files, read\n"
    "                      the environment and load modules (refused by\n"
    "                      default)\n"
    "  --no-encrypt        authenticate frames but send them in the clear\n"
    "                      (default: as the driver says)\n"
    "  --elastic           for orion-driver --elastic: when the driver or a\n"
    "                      peer is lost, register again (with --join)\n"
    "                      instead of exiting, keeping the parts of files\n"
    "                      it parsed for the job (in memory files)\n"
    "  --join              join a running --elastic job: the driver names\n"
    "                      this executor's id (--id is ignored) and gives it\n"
    "                      partitions at the job's next loop boundary (it\n"
    "                      implies --elastic)\n"
    "  -h, --help          show this help\n"
    "See orion-executor(1).\n";

/* Refuses argument `arg`; the last argument may be an option missing its
 * value, which the message allows for. */
static int bad_option(const char *arg, int last) {
  fprintf(stderr, "orion-executor: unknown %soption '%s'\n%s",
          last ? "or incomplete " : "", arg, usage);
  return 2;
}

/* Fills x from the command line (and $ORION_TOKEN,
 * $ORION_HEARTBEAT_TIMEOUT).  Returns -1 to go on, or the code to exit
 * with: 0 after --help, 2 on a usage error (with the message printed). */
static int parse_args(exec_state *x, int argc, char **argv) {
  static const struct option opts[] = {{"driver", required_argument, NULL, 'd'},
                                       {"token", required_argument, NULL, 't'},
                                       {"id", required_argument, NULL, 'i'},
                                       {"bind", required_argument, NULL, 'b'},
                                       {"gpu", required_argument, NULL, 'g'},
                                       {"gpu-memory", required_argument, NULL,
                                        'm'},
                                       {"allow-io", no_argument, NULL, 'a'},
                                       {"no-encrypt", no_argument, NULL, 'n'},
                                       {"elastic", no_argument, NULL, 'e'},
                                       {"join", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *driver = NULL, *env, *arg;
  int opt, at;
  char *end;
  long id, gpu;
  orion_error err;
  x->gpu_index = -1;
  x->token = getenv("ORION_TOKEN");
  x->hb_timeout = 10;
  env = getenv("ORION_HEARTBEAT_TIMEOUT");
  if (env != NULL && atof(env) > 0)
    x->hb_timeout = atof(env);
  x->reg_timeout = 30;
  env = getenv("ORION_REGISTER_TIMEOUT");
  if (env != NULL && atof(env) > 0)
    x->reg_timeout = atof(env);
  opterr = 0; /* the messages below instead of getopt's */
  for (;;) {
    at = optind;
    arg = at < argc ? argv[at] : "";
    /* "+": stop at the first non-option, which is refused below. */
    opt = getopt_long(argc, argv, "+:h", opts, NULL);
    if (opt == -1)
      break;
    switch (opt) {
    case 'h':
      fputs(usage, stdout);
      return 0;
    case 'd':
      driver = optarg;
      break;
    case 't':
      x->token = optarg;
      break;
    case 'b':
      x->bind = optarg;
      break;
    case 'a':
      x->allow_io = 1;
      break;
    case 'n':
      x->encrypt = ORION_SEC_OFF;
      break;
    case 'e':
      x->elastic = 1;
      break;
    case 'j':
      x->elastic = x->joining = 1;
      break;
    case 'g':
      gpu = strtol(optarg, &end, 10);
      if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || gpu > 4096) {
        fprintf(stderr, "orion-executor: --gpu needs a device number 0..4096, "
                        "not '%s'\n",
                optarg);
        return 2;
      }
      x->gpu_index = (int)gpu;
      break;
    case 'm':
      if (orion_launch_size_parse(optarg, "--gpu-memory", &x->gpu_cap,
                                  &err) != 0) {
        fprintf(stderr, "orion-executor: %s\n", err.msg);
        return 2;
      }
      break;
    case 'i':
      id = strtol(optarg, &end, 10);
      if (*end != '\0' || id < 0 || id > 1000000) {
        fprintf(stderr, "orion-executor: --id: not a number: '%s'\n", optarg);
        return 2;
      }
      x->id = (int)id;
      break;
    default: /* '?' unknown, ':' without its value */
      return bad_option(arg, at == argc - 1);
    }
  }
  if (optind < argc)
    return bad_option(argv[optind], optind == argc - 1);
  env = getenv("ORION_TEST_SLOW"); /* "E:MS" or "E:xF": executor/exec_state.h */
  if (env != NULL && env[0] != '\0') {
    long e = strtol(env, &end, 10);
    if (end == env || *end != ':' ||
        (end[1] == 'x' ? atof(end + 2) < 1 : atof(end + 1) < 0)) {
      fprintf(stderr, "orion-executor: ORION_TEST_SLOW must be EXEC:MS or "
                      "EXEC:xFACTOR, not '%s'\n",
              env);
      return 2;
    }
    if (e == x->id && end[1] == 'x')
      x->slow_factor = atof(end + 2);
    else if (e == x->id)
      x->slow_ms = atof(end + 1);
  }
  if (x->gpu_cap > 0 && x->gpu_index < 0) {
    fprintf(stderr, "orion-executor: --gpu-memory needs --gpu N\n%s", usage);
    return 2;
  }
  if (driver == NULL || x->token == NULL || x->token[0] == '\0') {
    fprintf(stderr, "orion-executor: --driver and --token are required\n%s",
            usage);
    return 2;
  }
  {
    char why[256];
    if (orion_token_check(x->token, strlen(x->token), why, sizeof why) !=
        0) {
      fprintf(stderr, "orion-executor: the token (--token or $ORION_TOKEN) "
                      "%s\n",
              why);
      return 2;
    }
  }
  if (orion_hostport_parse(driver, x->host, sizeof x->host, &x->port) != 0 ||
      x->port <= 0) {
    fprintf(stderr, "orion-executor: --driver: expected HOST:PORT, got '%s'\n",
            driver);
    return 2;
  }
  return -1;
}

/* Opens --gpu's device.  Returns -1 to go on, or 2 with the reason printed:
 * "orion-executor: --gpu 0: no GPU usable here: REASON". */
static int open_gpu(exec_state *x) {
  const char *why = "";
  orion_error err;
  if (x->gpu_index < 0)
    return -1;
  orion_error_clear(&err);
  if (orion_gpu_count(&why) == 0) {
    fprintf(stderr, "orion-executor: --gpu %d: no GPU usable here: %s\n",
            x->gpu_index, why);
    return 2;
  }
  if (orion_gpu_open(x->gpu_index, x->gpu_cap, &x->gpu, &err) != 0) {
    fprintf(stderr, "orion-executor: --gpu %d: %s\n", x->gpu_index, err.msg);
    return 2;
  }
  orion_gpu_describe(x->gpu, x->gpu_desc, sizeof x->gpu_desc);
  return -1;
}

/* Creates the executor's state (its id known) and starts the compute
 * thread: at once, or on WELCOME for --join. */
static void start_compute(exec_state *x) {
  pthread_t thr;
  int rc;
  x->ex = orion_exec_new(x->id);
  if (x->ex == NULL)
    orion__exec_die(x, "out of memory");
  orion_exec_set_flush_sink(x->ex, orion__shard_flush_sink, x);
  orion_exec_set_managed_tick(x->ex, orion__budget_tick, x);
  if (x->allow_io)
    orion_exec_allow_io(x->ex);
  if (x->gpu != NULL) { /* device bodies' blocks and orion.nn run there */
    orion_error gerr;
    orion_error_clear(&gerr);
    orion_exec_set_gpu(x->ex, x->gpu);
    if (orion_exec_nn_gpu(x->ex, x->gpu, &gerr) != 0)
      orion__exec_die(x, "%s", gerr.msg);
  }
  /* This thread runs the libuv loop: its CPU is the exchange's
   * (LOOP_DONE's exch_cpu_seconds). */
  x->has_net_clock = pthread_getcpuclockid(pthread_self(), &x->net_clock) == 0;
  rc = pthread_create(&thr, NULL, orion__exec_compute_main, x);
  if (rc != 0)
    orion__exec_die(x, "cannot start the compute thread: %s", strerror(rc));
}

int main(int argc, char **argv) {
  /* The state lives in main's frame: main never returns while the threads
   * run (the executor leaves through _exit). */
  exec_state xs;
  exec_state *x = &xs;
  int rc;

#ifdef __GLIBC__
  /* Loops allocate and free the same large blocks (frames, pending
   * writes, nn matrices) over and over: keep them in the heap instead of
   * mapping and faulting in fresh pages each time. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  memset(x, 0, sizeof *x);
  main_argc = argc;
  main_argv = argv;
  rc = parse_args(x, argc, argv);
  if (rc < 0)
    rc = open_gpu(x);
  if (rc >= 0)
    return rc;
  signal(SIGPIPE, SIG_IGN);
  orion_kept_take_over();
  x->peer_in_frame = orion__exec_on_peer_in_frame;
  x->peer_out_frame = orion__exec_on_peer_out_frame;
  x->start = start_compute;
  orion_buf_init(&x->out);
  orion_buf_init(&x->late);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);
  pthread_cond_init(&x->fcv, NULL);
  orion_buf_init(&x->done_frame);
  rc = uv_loop_init(&x->loop);
  if (rc != 0)
    orion__exec_die(x, "cannot start the event loop: %s", uv_strerror(rc));
  x->loop.data = x;
  orion__exec_wake_init(x, on_wake);
  uv_timer_init(&x->loop, &x->hb);
  x->hb.data = x;
  uv_timer_start(&x->hb, on_tick, 1000, 1000);

  uv_timer_init(&x->loop, &x->retry);
  x->retry.data = x;
  x->reg_until = orion_now() + x->reg_timeout;
  if (!x->joining)
    start_compute(x);
  connect_driver(x);
  uv_run(&x->loop, UV_RUN_DEFAULT);
  /* The heartbeat timer keeps the loop alive: it ends only when something
   * went wrong, and handles still open are part of the report. */
  rc = uv_loop_close(&x->loop);
  if (rc != 0)
    orion__exec_die(x, "the event loop ended (closing it: %s)",
                    uv_strerror(rc));
  orion__exec_die(x, "the event loop ended");
}
