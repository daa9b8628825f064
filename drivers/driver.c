/* orion-driver: runs a Lua training script with the `orion` module.
 *
 * Exit codes: 0 success, 1 script or data error, 2 usage error, 3 cluster
 * failure. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdarg.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/datadir.h"
#include "drivers/launcher.h"
#include "drivers/plot.h"
#include "drivers/elastic.h"
#include "drivers/recover.h"
#include "dsm/ckpt.h"
#include "dsm/cluster.h"
#include "dsm/sec.h"
#include "dsm/status.h"
#include "scheduler/jobpage.h"
#include "lua/orion.h"
#include "lua/srcstore.h"
#include "scheduler/sim.h"
#include "util/ccomp.h"
#include "util/outpath.h"
#include "util/progress.h"

/* The job page's HTML, CSS and JS: drivers/status_page.html as the bytes
 * of status_page[], NUL-terminated (made at build time, Makefile.am). */
#include "drivers/status_page.inc"

#define EXIT_SCRIPT 1
#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: orion-driver [OPTIONS] SCRIPT.lua [SCRIPT-ARGS...]\n"
    "       orion-driver plot [OPTIONS] METRICS.jsonl [MORE.jsonl...]\n"
    "\n"
    "Runs a Lua 5.4 training script with `require \"orion\"` available.\n"
    "Arguments after the script go to the script in `arg`.\n"
    "`orion-driver plot` draws --metrics files as SVG charts (see\n"
    "`orion-driver plot --help`).\n"
    "\n"
    "Options:\n"
    "  --metrics FILE  append one JSON object per orion.record{...} to FILE\n"
    "  --predict NxQc:RATE[,...]\n"
    "                  after the first and the second pass of each\n"
    "                  parallel_for call site, print its predicted time per\n"
    "                  pass on N hosts of Q CPUs with links of RATE\n"
    "                  (4x0.4c:400mbit, 64x16c:10gbit), from the pass's\n"
    "                  measured costs (docs/scale.md)\n"
    "  --loop-metrics  with --metrics: also one JSON object per parallel_for\n"
    "                  call: its FILE:LINE, seconds, bytes, each executor's\n"
    "                  compute / wait / idle seconds and the driver's CPU\n"
    "                  seconds (docs/scale.md)\n"
    "  --seed N        the script seed (default 0): seeds math.random in\n"
    "                  loop bodies and arrays created without a seed\n"
    "  -q, --quiet     no informational messages and no progress line\n"
    "                  on stderr (warnings and errors still show)\n"
    "  -v, --verbose   also the executors' registration and other details\n"
    "  --traceback     print the Lua traceback of a script error\n"
    "  --explain       run the script as usual, and print each parallel_for's\n"
    "                  plan (schedule, dependence vectors, placements) the\n"
    "                  first time its call site is reached, before it runs\n"
    "  --explain-only[=N]\n"
    "                  print plans as --explain does, and stop the script\n"
    "                  (exit code 0) before the loop of the Nth call site\n"
    "                  (default 1) runs; the loops before it run\n"
    "  --verify        check each parallel_for's plan as it runs: blocks\n"
    "                  record the keys they read and write (every key, in\n"
    "                  the interpreter), and a key that two blocks the\n"
    "                  schedule may run concurrently, or out of an ordered\n"
    "                  loop's order, touch with a write fails the loop\n"
    "                  naming both blocks, the array, the key and lines\n"
    "  --status [ADDR:]PORT  serve a live job page (executors, loops,\n"
    "                  metrics, log) on PORT (0: any free one) of ADDR\n"
    "                  (default 127.0.0.1); its address, with the token it\n"
    "                  needs, is printed on stderr\n"
    "  --fast-math     compiled loop bodies may reassociate sums, contract\n"
    "                  multiply-adds and compute f32 data in single\n"
    "                  precision (opts.fast = true for every loop)\n"
    "  --partitions N  parts per key dimension a loop is cut into when its\n"
    "                  opts.partitions does not say (default 8, or\n"
    "                  $ORION_PARTITIONS; fewer when a dimension is\n"
    "                  shorter); never depends on the executors, so\n"
    "                  results are the same on any number of them;\n"
    "                  auto: chosen by the simulator from each loop's\n"
    "                  first passes (the results then depend on the\n"
    "                  executors: docs/design-notes.md)\n"
    "  --allow-io      let loop bodies run programs, use files, read the\n"
    "                  environment and load modules (os.execute, io.open,\n"
    "                  os.getenv, require, binary chunks, debug), on the\n"
    "                  executors and in the driver; refused by default\n"
    "\n"
    "Cluster (loops run on orion-executor processes):\n"
    "  --executors N   start N local executors (default: the number of cores;\n"
    "                  0 runs every loop inside the driver process)\n"
    "  --hosts FILE    start executors over ssh, one per slot of each\n"
    "                  `host[:port] [slots]` line of FILE\n"
    "  --launcher L    local, ssh, slurm, mpi (srun/mpirun started every\n"
    "                  rank: rank 0 drives, the others become executors;\n"
    "                  needs ORION_DRIVER=HOST:PORT and ORION_TOKEN), or\n"
    "                  manual (print the command for each executor, wait;\n"
    "                  an exported ORION_TOKEN is used and not printed);\n"
    "                  local executors get an exported ORION_TOKEN too,\n"
    "                  so `orion-executor --join` can join an --elastic job\n"
    "  --listen ADDR   HOST[:PORT] the driver listens on (default\n"
    "                  127.0.0.1 for local executors, else the address\n"
    "                  facing them; 0.0.0.0: every address)\n"
    "  --gpus N|all    executors own GPUs: with the local launcher one\n"
    "                  executor per device 0..N-1 (numbered after\n"
    "                  CUDA_VISIBLE_DEVICES); elsewhere each executor opens\n"
    "                  the device of its slot on its host.  Without\n"
    "                  --executors and --gpus, a host with GPUs starts one\n"
    "                  local executor per GPU\n"
    "  --gpu-memory SIZE  device memory each executor may use (256M, 8G)\n"
    "  --register-timeout S  seconds to wait for executors (default 30)\n"
    "  --no-encrypt    authenticate every frame but send it in the clear\n"
    "                  (default: encrypted, except over loopback; see\n"
    "                  docs/security.md); --encrypt: on loopback too\n"
    "  --heartbeat-timeout S seconds of silence that mean an executor is\n"
    "                  lost (default 5)\n"
    "  --stall-seconds S  report an executor that has run one block for S\n"
    "                  seconds (which block, its heartbeat), then keep\n"
    "                  waiting (default 60; 0: never)\n"
    "  --loop-timeout S  end a loop whose block runs longer than S seconds\n"
    "                  (its error names the executor, block and element;\n"
    "                  a loop's opts.timeout overrides it; default 0: never)\n"
    "  --bandwidth-mbps N  megabits per second each executor may spend on\n"
    "                  early sends of flush = \"managed\" buffers (default\n"
    "                  $ORION_BANDWIDTH_MBPS, else the link rate the\n"
    "                  executor measures)\n"
    "\n"
    "Checkpoints (docs/checkpoints.md):\n"
    "  --checkpoint-dir DIR  orion.checkpoint{...} writes to DIR, and a\n"
    "                  lost executor restarts the job from the newest\n"
    "  --resume[=auto] orion.restore() continues from the newest complete\n"
    "                  checkpoint in DIR; with none usable, an error\n"
    "                  naming each (=auto: start from the beginning)\n"
    "  --fresh-if-none with --resume: the same as --resume=auto\n"
    "  --force         resume even from a checkpoint of another script or\n"
    "                  other arguments\n"
    "  --max-restarts N[/PERIOD]  restarts after lost executors within\n"
    "                  any PERIOD (seconds, or 30m, 1h, 1d; default 3/1h\n"
    "                  with a checkpoint folder; 0: a lost executor ends\n"
    "                  the job)\n"
    "  --elastic       a lost executor does not end the job: the others go\n"
    "                  on from the newest checkpoint of --checkpoint-dir\n"
    "                  (without one, or before the first, from the\n"
    "                  beginning; any launcher), keeping the parts of\n"
    "                  files they parsed; executors may join\n"
    "                  (orion-executor --join), taken at the next loop\n"
    "                  boundary; results stay the same bits\n"
    "  --min-executors M  with --elastic: fewer than M executors left ends\n"
    "                  the job (exit 3; default 1)\n"
    "  -h, --help      show this help\n"
    "  --version       show the version\n"
    "\n"
    "On a terminal, loops and loads that take over a second show a progress\n"
    "line (blocks or bytes done of total, ETA), erased when they end;\n"
    "ORION_PROGRESS=1 draws it on any stderr, ORION_PROGRESS=0 never.\n"
    "\n"
    "Exit codes: 0 success, 1 script or data error, 2 usage error,\n"
    "3 cluster failure.  See orion-driver(1).\n";

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* A bandwidth in megabits per second: a number above 0 (at most 10^7),
 * into *v; -1 when text is not one. */
static int parse_mbps(const char *text, double *v) {
  char *end;
  double x;
  if (text == NULL || text[0] == '\0')
    return -1;
  x = strtod(text, &end);
  if (*end != '\0' || !(x > 0 && x <= 1e7))
    return -1;
  *v = x;
  return 0;
}

static int usage_error(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "orion-driver: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'orion-driver --help'.\n");
  return EXIT_USAGE;
}

/* A count 0..max in decimal into *out; 0, or ORION_EINVAL (*out kept). */
static int parse_count(const char *s, int max, int *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max)
    return ORION_EINVAL;
  *out = (int)v;
  return 0;
}

static int traceback_on;
static orion_recover recover; /* --max-restarts and the restart itself */
static orion_elastic elastic; /* --elastic, --min-executors */
static int min_given;         /* --min-executors was given */
static const char *status_spec; /* --status, or NULL */
static int fresh_if_none;       /* --fresh-if-none (it needs --resume) */
static pid_t lock_pid;          /* the process that holds recover.lock_fd */

/* The manual and local launchers: an exported ORION_TOKEN is the job's
 * (orion_launcher_token_setup); 0, or nonzero with the reason printed. */
static int env_token(orion_launcher *l, orion_cluster_opts *o) {
  orion_error err;
  orion_error_clear(&err);
  if (orion_launcher_token_setup(l, o, &err) == 0)
    return 0;
  fprintf(stderr, "orion-driver: %s\n", err.msg);
  return -1;
}

/* At exit: the checkpoint folder's lock is released, its file emptied
 * (only by the process that took it: a child that exits is not it). */
static void release_lock(void) {
  if (getpid() == lock_pid)
    orion_ckpt_unlock(recover.lock_fd);
}

static int msghandler(lua_State *L) {
  const char *msg;
  if (orion_module_stopped(L, 1, NULL, 0))
    return 1; /* --explain-only stopped the script: not an error */
  msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)",
                          luaL_typename(L, 1));
  }
  if (traceback_on)
    luaL_traceback(L, L, msg, 1);
  return 1;
}

/* package.path: $ORION_LUA_PATH, then the lua/ folders of
 * drivers/datadir.h (beside the binary, the installed tree relative to
 * it, the configured one). */
static void set_lua_path(lua_State *L, const char *argv0) {
  char dirs[ORION_DATADIR_MAX][4096];
  const char *env = getenv("ORION_LUA_PATH");
  int i, n = orion_datadir_list(argv0, "lua", dirs);
  luaL_Buffer b;
  lua_getglobal(L, "package");
  luaL_buffinit(L, &b);
  if (env != NULL && env[0] != '\0') {
    luaL_addstring(&b, env);
    luaL_addchar(&b, ';');
  }
  for (i = 0; i < n; i++) {
    luaL_addstring(&b, dirs[i]);
    luaL_addstring(&b, "/?.lua;");
  }
  lua_getfield(L, -2, "path");
  luaL_addvalue(&b);
  luaL_pushresult(&b);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

/* ======================================================================
 * The command line (getopt_long).
 *
 * Options end at the script (later words are the script's, "+"), and a
 * long option must be spelled out ("--quie" is unknown, as "-hx" is): the
 * words getopt_long reads are checked against the option's full name.
 * "--name=value" is accepted beside "--name value".
 * ====================================================================== */

enum {
  OPT_VERSION = 256,
  OPT_TRACEBACK,
  OPT_EXPLAIN,
  OPT_EXPLAIN_ONLY,
  OPT_VERIFY,
  OPT_FAST_MATH,
  OPT_EXECUTORS,
  OPT_HOSTS,
  OPT_LAUNCHER,
  OPT_LISTEN,
  OPT_REGISTER_TIMEOUT,
  OPT_HEARTBEAT_TIMEOUT,
  OPT_STALL_SECONDS,
  OPT_LOOP_TIMEOUT,
  OPT_METRICS,
  OPT_PREDICT,
  OPT_LOOP_METRICS,
  OPT_SEED,
  OPT_STATUS,
  OPT_PARTITIONS,
  OPT_GPUS,
  OPT_GPU_MEMORY,
  OPT_ALLOW_IO,
  OPT_BANDWIDTH,
  OPT_ENCRYPT,
  OPT_NO_ENCRYPT,
  OPT_CHECKPOINT_DIR,
  OPT_RESUME,
  OPT_FORCE,
  OPT_MAX_RESTARTS,
  OPT_ELASTIC,
  OPT_MIN_EXECUTORS,
  OPT_FRESH_IF_NONE
};

/* What parse_options returns when the driver goes on to the script. */
#define GO_ON (-1)

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"traceback", no_argument, NULL, OPT_TRACEBACK},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"explain-only", optional_argument, NULL, OPT_EXPLAIN_ONLY},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {"fast-math", no_argument, NULL, OPT_FAST_MATH},
    {"executors", required_argument, NULL, OPT_EXECUTORS},
    {"hosts", required_argument, NULL, OPT_HOSTS},
    {"launcher", required_argument, NULL, OPT_LAUNCHER},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"register-timeout", required_argument, NULL, OPT_REGISTER_TIMEOUT},
    {"heartbeat-timeout", required_argument, NULL, OPT_HEARTBEAT_TIMEOUT},
    {"stall-seconds", required_argument, NULL, OPT_STALL_SECONDS},
    {"loop-timeout", required_argument, NULL, OPT_LOOP_TIMEOUT},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"predict", required_argument, NULL, OPT_PREDICT},
    {"loop-metrics", no_argument, NULL, OPT_LOOP_METRICS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"status", required_argument, NULL, OPT_STATUS},
    {"partitions", required_argument, NULL, OPT_PARTITIONS},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"gpu-memory", required_argument, NULL, OPT_GPU_MEMORY},
    {"allow-io", no_argument, NULL, OPT_ALLOW_IO},
    {"bandwidth-mbps", required_argument, NULL, OPT_BANDWIDTH},
    {"encrypt", no_argument, NULL, OPT_ENCRYPT},
    {"no-encrypt", no_argument, NULL, OPT_NO_ENCRYPT},
    {"checkpoint-dir", required_argument, NULL, OPT_CHECKPOINT_DIR},
    {"resume", optional_argument, NULL, OPT_RESUME},
    {"fresh-if-none", no_argument, NULL, OPT_FRESH_IF_NONE},
    {"force", no_argument, NULL, OPT_FORCE},
    {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
    {"elastic", no_argument, NULL, OPT_ELASTIC},
    {"min-executors", required_argument, NULL, OPT_MIN_EXECUTORS},
    {NULL, 0, NULL, 0}};

/* Whether word, where getopt_long found option val, spells it in full:
 * "-h", "-q", "-v", or "--NAME" / "--NAME=..." (getopt_long also takes
 * prefixes). */
static int spelled_out(const char *word, int val) {
  const struct option *o;
  if ((val == 'h' || val == 'q' || val == 'v') && word[0] == '-' &&
      word[1] == val && word[2] == '\0')
    return 1;
  for (o = long_opts; o->name != NULL; o++)
    if (o->val == val) {
      size_t n = strlen(o->name);
      return strncmp(word, "--", 2) == 0 &&
             strncmp(word + 2, o->name, n) == 0 &&
             (word[2 + n] == '\0' || word[2 + n] == '=');
    }
  return 0;
}

/* The driver's options as package.loaded["orion.driver_options"]: name
 * -> true when it takes a value.  lua/orion/cli.lua reads it to tell a
 * user who wrote a driver option after the script ("mf.lua --executors 4",
 * where the script's own parser sees it) where it belongs. */
static void publish_options(lua_State *L) {
  const struct option *o;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_newtable(L);
  for (o = long_opts; o->name != NULL; o++) {
    lua_pushboolean(L, o->has_arg == required_argument);
    lua_setfield(L, -2, o->name);
  }
  lua_setfield(L, -2, "orion.driver_options");
  lua_pop(L, 2);
}

/* The driver's own outputs, checked before the script runs
 * (util/outpath.h): a --metrics file or a --checkpoint-dir that cannot be
 * written is a usage error now, not a failure after the first epoch or at
 * the first checkpoint. */
static int check_outputs(const orion_config *cfg) {
  orion_error err;
  orion_error_clear(&err);
  if (cfg->metrics_path != NULL &&
      orion_output_check(cfg->metrics_path, ORION_OUT_FILE, &err) != 0)
    return usage_error("--metrics %s: %s", cfg->metrics_path, err.msg);
  if (cfg->loop_metrics && cfg->metrics_path == NULL)
    return usage_error("--loop-metrics needs --metrics FILE to write to");
  if (cfg->checkpoint_dir != NULL &&
      orion_output_check(cfg->checkpoint_dir, ORION_OUT_FOLDER, &err) != 0)
    return usage_error("--checkpoint-dir %s: %s", cfg->checkpoint_dir,
                       err.msg);
  return GO_ON;
}

/* The launcher named by --launcher, or an error. */
static int set_launcher(orion_launcher *l, const char *name) {
  static const char *const names[] = {"local", "ssh", "slurm", "mpi",
                                      "manual"};
  static const orion_launcher_kind kinds[] = {
      ORION_LAUNCH_LOCAL, ORION_LAUNCH_SSH, ORION_LAUNCH_SLURM,
      ORION_LAUNCH_MPI, ORION_LAUNCH_MANUAL};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0) {
      l->kind = kinds[i];
      return GO_ON;
    }
  return usage_error("--launcher must be local, ssh, slurm, mpi or manual, "
                     "not '%s'",
                     name);
}

/* Applies option c with its argument arg (NULL when the command line ends
 * before it).  Returns GO_ON, or the exit code: 0 after --help or
 * --version, EXIT_USAGE after a message. */
static int apply_option(int c, const char *arg, orion_config *cfg,
                        orion_launcher *l, int *have_exec) {
  char *end;
  double v;
  switch (c) {
  case 'h':
    fputs(usage_text, stdout);
    return 0;
  case OPT_VERSION:
    printf("orion-driver (Orion-C) %s\n", PACKAGE_VERSION);
    return 0;
  case 'q':
    cfg->quiet = 1;
    return GO_ON;
  case 'v':
    cfg->verbose = 1;
    return GO_ON;
  case OPT_TRACEBACK:
    traceback_on = 1;
    return GO_ON;
  case OPT_EXPLAIN:
    cfg->explain = 1;
    return GO_ON;
  case OPT_VERIFY:
    cfg->verify = 1;
    return GO_ON;
  case OPT_EXPLAIN_ONLY:
    cfg->explain_only = 1;
    if (arg != NULL && (parse_count(arg, 1000000, &cfg->explain_only) != 0 ||
                        cfg->explain_only < 1))
      return usage_error("--explain-only=N needs a number of loops 1..1000000, "
                         "not '%s'",
                         arg);
    return GO_ON;
  case OPT_FAST_MATH:
    cfg->fast_math = 1;
    return GO_ON;
  case OPT_EXECUTORS:
    if (arg == NULL || parse_count(arg, 4096, &cfg->executors) != 0)
      return usage_error("--executors needs a number 0..4096%s%s%s",
                         arg != NULL ? ", not '" : "",
                         arg != NULL ? arg : "", arg != NULL ? "'" : "");
    *have_exec = 1;
    return GO_ON;
  case OPT_HOSTS:
    if (arg == NULL)
      return usage_error("%s needs a file name", "--hosts");
    l->hosts_file = arg;
    l->kind = ORION_LAUNCH_SSH;
    return GO_ON;
  case OPT_LAUNCHER:
    return set_launcher(l, arg != NULL ? arg : "");
  case OPT_LISTEN:
    if (arg == NULL)
      return usage_error("%s needs HOST[:PORT]", "--listen");
    cfg->cluster.listen = arg;
    return GO_ON;
  case OPT_REGISTER_TIMEOUT:
  case OPT_HEARTBEAT_TIMEOUT:
    v = arg != NULL ? strtod(arg, &end) : 0;
    if (arg == NULL || *end != '\0' || !(v > 0 && v <= 86400))
      return usage_error("%s needs a number of seconds (0..86400]",
                         c == OPT_REGISTER_TIMEOUT ? "--register-timeout"
                                                   : "--heartbeat-timeout");
    if (c == OPT_REGISTER_TIMEOUT)
      cfg->cluster.register_timeout = v;
    else
      cfg->cluster.heartbeat_timeout = v;
    return GO_ON;
  case OPT_STALL_SECONDS:
    v = arg != NULL ? strtod(arg, &end) : -1;
    if (arg == NULL || arg[0] == '\0' || *end != '\0' ||
        !(v >= 0 && v <= 86400))
      return usage_error("%s needs a number of seconds 0..86400 (0: never)",
                         "--stall-seconds");
    cfg->stall_seconds = v;
    return GO_ON;
  case OPT_LOOP_TIMEOUT:
    v = arg != NULL ? strtod(arg, &end) : -1;
    if (arg == NULL || arg[0] == '\0' || *end != '\0' || !(v >= 0 && v <= 1e9))
      return usage_error("%s needs a number of seconds 0..1e9 (0: never)",
                         "--loop-timeout");
    cfg->loop_timeout = v;
    return GO_ON;
  case OPT_BANDWIDTH:
    if (parse_mbps(arg, &cfg->bandwidth_mbps) != 0)
      return usage_error("--bandwidth-mbps needs a number of megabits per "
                         "second above 0, not '%s'",
                         arg != NULL ? arg : "");
    return GO_ON;
  case OPT_CHECKPOINT_DIR:
    if (arg == NULL || arg[0] == '\0')
      return usage_error("%s needs a folder", "--checkpoint-dir");
    cfg->checkpoint_dir = arg;
    recover.dir = arg;
    return GO_ON;
  case OPT_RESUME:
    if (arg != NULL && strcmp(arg, "auto") != 0)
      return usage_error("--resume takes no value or =auto, not '%s'", arg);
    cfg->resume = arg != NULL || cfg->resume == 2 ? 2 : 1;
    return GO_ON;
  case OPT_FRESH_IF_NONE:
    cfg->resume = 2; /* --resume=auto; --resume itself is still needed */
    fresh_if_none = 1;
    return GO_ON;
  case OPT_FORCE:
    cfg->force = 1;
    return GO_ON;
  case OPT_ELASTIC:
    elastic.on = 1;
    cfg->cluster.elastic = 1;
    l->elastic = 1;
    return GO_ON;
  case OPT_MIN_EXECUTORS:
    if (arg == NULL || parse_count(arg, 4096, &elastic.min) != 0 ||
        elastic.min < 1)
      return usage_error("--min-executors needs a number 1..4096, not '%s'",
                         arg != NULL ? arg : "");
    min_given = 1;
    return GO_ON;
  case OPT_MAX_RESTARTS: {
    char msg[200];
    if (orion_recover_parse_limit(&recover, arg, msg, sizeof msg) != 0)
      return usage_error("%s", msg);
    return GO_ON;
  }
  case OPT_METRICS:
    if (arg == NULL)
      return usage_error("%s needs a file name", "--metrics");
    cfg->metrics_path = arg;
    return GO_ON;
  case OPT_LOOP_METRICS:
    cfg->loop_metrics = 1;
    return GO_ON;
  case OPT_PREDICT: {
    int n;
    double q, bps;
    orion_error err;
    if (arg == NULL)
      return usage_error("%s needs a cluster, as in 4x0.4c:400mbit",
                         "--predict");
    for (const char *p = arg; *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
      char one[128];
      size_t len = strcspn(p, ",");
      snprintf(one, sizeof one, "%.*s", (int)len, p);
      if (len >= sizeof one || orion_sim_parse_spec(one, &n, &q, &bps, &err) != 0)
        return usage_error("%s", len >= sizeof one ? "--predict: a cluster "
                                                     "spec is too long"
                                                   : err.msg);
    }
    if (*arg == '\0' || arg[strlen(arg) - 1] == ',')
      return usage_error("--predict '%s': an empty cluster spec", arg);
    cfg->predict = arg;
    return GO_ON;
  }
  case OPT_STATUS:
    if (arg == NULL)
      return usage_error("%s needs [ADDR:]PORT", "--status");
    status_spec = arg;
    return GO_ON;
  case OPT_ENCRYPT:
  case OPT_NO_ENCRYPT: /* dsm/sec.h's policies */
    cfg->cluster.encrypt = c == OPT_ENCRYPT ? ORION_SEC_ON : ORION_SEC_OFF;
    return GO_ON;
  case OPT_ALLOW_IO:
    cfg->allow_io = 1;
    l->allow_io = 1;
    return GO_ON;
  case OPT_PARTITIONS:
    if (arg != NULL && strcmp(arg, "auto") == 0) {
      cfg->partitions = ORION_PARTITIONS_AUTO;
      return GO_ON;
    }
    if (arg == NULL || parse_count(arg, 4096, &cfg->partitions) != 0 ||
        cfg->partitions < 1)
      return usage_error("--partitions needs a number 1..4096 or auto%s%s%s",
                         arg != NULL ? ", not '" : "",
                         arg != NULL ? arg : "", arg != NULL ? "'" : "");
    return GO_ON;
  case OPT_GPUS:
  case OPT_GPU_MEMORY: {
    orion_error err;
    uint64_t size;
    orion_error_clear(&err);
    if (c == OPT_GPUS ? orion_launcher_set_gpus(l, arg, &err) != 0
                      : orion_launch_size_parse(arg, "--gpu-memory", &size,
                                                &err) != 0)
      return usage_error("%s", err.msg);
    if (c == OPT_GPU_MEMORY)
      l->gpu_memory = arg;
    return GO_ON;
  }
  case OPT_SEED:
    if (arg == NULL)
      return usage_error("%s needs a number", "--seed");
    errno = 0;
    cfg->seed = strtoull(arg, &end, 10);
    if (errno != 0 || *end != '\0' || arg[0] == '-' || arg[0] == '\0')
      return usage_error("--seed needs a non-negative integer, not '%s'",
                         arg);
    return GO_ON;
  }
  return GO_ON;
}

/* Reads the options before the script; optind is then the script's
 * index.  Returns GO_ON or an exit code (see apply_option). */
static int parse_options(int argc, char **argv, orion_config *cfg,
                         orion_launcher *l, int *have_exec) {
  int rc;
  opterr = 0; /* the messages are ours */
  optind = 1;
  for (;;) {
    int at = optind, c = getopt_long(argc, argv, "+:hqv", long_opts, NULL);
    if (c == -1)
      return GO_ON;
    if (c == '?' || !spelled_out(argv[at], c == ':' ? optopt : c))
      return usage_error("unknown option '%s'", argv[at]);
    rc = apply_option(c == ':' ? optopt : c, c == ':' ? NULL : optarg, cfg, l,
                      have_exec);
    if (rc != GO_ON)
      return rc;
  }
}

int main(int argc, char **argv) {
  orion_config cfg;
  static orion_launcher launcher; /* the cluster's, for the whole run */
  const char *script;
  lua_State *L;
  int i, first, rc, have_exec = 0, exec_env = 0;

  if (argc > 1 && strcmp(argv[1], "plot") == 0)
    return orion_plot_main(argc - 1, argv + 1);
  memset(&cfg, 0, sizeof cfg);
  elastic.min = 1;
  orion_cluster_opts_init(&cfg.cluster);
  cfg.stall_seconds = 60;
  orion_launcher_init(&launcher);
  {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("ORION_EXECUTORS");
    cfg.executors = n > 0 ? (int)n : 1;
    exec_env = env != NULL && env[0] != '\0';
    if (exec_env && parse_count(env, 4096, &cfg.executors) != 0)
      return usage_error("ORION_EXECUTORS must be a number 0..4096, not "
                         "'%s'",
                         env);
    env = getenv("ORION_PARTITIONS");
    cfg.partitions = ORION_DEFAULT_PARTITIONS;
    if (env != NULL && env[0] != '\0' &&
        (parse_count(env, 4096, &cfg.partitions) != 0 || cfg.partitions < 1))
      return usage_error("ORION_PARTITIONS must be a number 1..4096, not "
                         "'%s'",
                         env);
    env = getenv("ORION_BANDWIDTH_MBPS");
    if (env != NULL && env[0] != '\0' &&
        parse_mbps(env, &cfg.bandwidth_mbps) != 0)
      return usage_error("ORION_BANDWIDTH_MBPS must be a number of megabits "
                         "per second above 0, not '%s'",
                         env);
  }

  orion_recover_init(&recover, argc, argv);
  rc = parse_options(argc, argv, &cfg, &launcher, &have_exec);
  if (rc != GO_ON)
    return rc;
  if (optind >= argc)
    return usage_error("%s", "no script given");
  if ((cfg.resume || cfg.force || recover.max_restarts >= 0) &&
      cfg.checkpoint_dir == NULL)
    return usage_error("%s needs --checkpoint-dir DIR",
                       fresh_if_none ? "--fresh-if-none"
                       : cfg.resume  ? "--resume"
                       : cfg.force   ? "--force"
                                     : "--max-restarts");
  for (i = 1; fresh_if_none && i < optind; i++)
    if (strncmp(argv[i], "--resume", 8) == 0)
      break;
  if (fresh_if_none && i == optind)
    return usage_error("%s", "--fresh-if-none needs --resume (it says what "
                             "--resume does when no checkpoint is usable)");
  if (min_given && !elastic.on)
    return usage_error("%s", "--min-executors needs --elastic");
  i = optind;
  recover.quiet = cfg.quiet;
  elastic.quiet = cfg.quiet;
  elastic.r = &recover;
  if (launcher.kind == ORION_LAUNCH_SSH && launcher.hosts_file == NULL)
    return usage_error("%s", "--launcher ssh needs --hosts FILE");
  if (launcher.kind == ORION_LAUNCH_SLURM ||
      launcher.kind == ORION_LAUNCH_MPI) {
    /* Every rank runs this command: rank 0 continues as the driver, the
     * others become executors here. */
    orion_error err;
    orion_error_clear(&err);
    if (orion_launcher_rank_setup(&launcher, &cfg.cluster, &err) != 0) {
      fprintf(stderr, "orion-driver: %s\n", err.msg);
      return EXIT_USAGE;
    }
    cfg.executors = cfg.cluster.nexec;
  } else if (launcher.kind == ORION_LAUNCH_SSH) {
    /* Read now, so that a bad line is a usage error before the script
     * runs; the launcher starts one executor per slot. */
    orion_error err;
    orion_error_clear(&err);
    if (orion_launcher_load_hosts(&launcher, &err) != 0) {
      fprintf(stderr, "orion-driver: --hosts: %s\n", err.msg);
      return EXIT_USAGE;
    }
    cfg.executors = (int)launcher.hosts.n; /* the hosts file decides */
    orion_recover_hosts(&launcher, cfg.quiet); /* hosts that failed twice */
  } else if (launcher.kind == ORION_LAUNCH_MANUAL && !have_exec) {
    return usage_error("%s", "--launcher manual needs --executors N");
  } else if (launcher.kind == ORION_LAUNCH_MANUAL &&
             env_token(&launcher, &cfg.cluster) != 0) {
    return EXIT_USAGE;
  }
  {
    /* GPUs: --gpus, --gpu-memory, or one executor per GPU found here. */
    char note[160];
    orion_error err;
    orion_error_clear(&err);
    if (orion_launcher_gpu_setup(&launcher, &cfg.executors,
                                 have_exec || exec_env, note, sizeof note,
                                 &err) != 0) {
      fprintf(stderr, "orion-driver: %s\n", err.msg);
      return EXIT_USAGE;
    }
    if (note[0] != '\0' && !cfg.quiet)
      fprintf(stderr, "orion: %s\n", note);
  }
  if (launcher.kind != ORION_LAUNCH_LOCAL && cfg.executors == 0)
    return usage_error("%s", "--executors 0 runs no executors; it cannot be "
                             "combined with --launcher or --hosts");
  /* The executor count is settled (hosts file, ranks, GPUs). */
  if (launcher.kind == ORION_LAUNCH_LOCAL && cfg.executors > 0 &&
      env_token(&launcher, &cfg.cluster) != 0)
    return EXIT_USAGE;
  if (elastic.on && cfg.executors > 0 && elastic.min > cfg.executors &&
      getenv("ORION_ELASTIC_FORM") == NULL)
    return usage_error("--min-executors %d is more than the %d executors "
                       "of the job",
                       elastic.min, cfg.executors);
  /* The outputs first: a --checkpoint-dir that cannot be a folder is a
   * usage error naming it, before the lock inside it is tried. */
  if ((rc = check_outputs(&cfg)) != GO_ON)
    return rc;
  /* An unusable compile cache folder: one warning for the whole run. */
  orion_ccomp_check_cache(launcher.kind == ORION_LAUNCH_LOCAL);
  if (cfg.checkpoint_dir != NULL) {
    /* The folder is this job's for its whole life (restarts included).
     * Taken here, after the other ranks of slurm or mpi have become
     * executors: only the driver holds it. */
    orion_error err;
    orion_error_clear(&err);
    if (orion_ckpt_lock(cfg.checkpoint_dir, &recover.lock_fd, &err) != 0) {
      fprintf(stderr, "orion-driver: %s\n", err.msg);
      return EXIT_SCRIPT;
    }
    lock_pid = getpid();
    atexit(release_lock);
  }
  orion_launcher_attach(&launcher, &cfg.cluster);
  if (elastic.on) /* a re-formed job: its executors register again */
    orion_elastic_adopt(&cfg.cluster, &cfg.executors, elastic.min);
  {
    orion_error err;
    orion_error_clear(&err);
    if (orion_launcher_bind(&launcher, &cfg.cluster, &err) != 0) {
      fprintf(stderr, "orion-driver: %s\n", err.msg);
      return EXIT_USAGE;
    }
  }
  first = i;
  script = argv[first];
  {
    /* A path that does not open from here may name an installed app
     * ("apps/mf/mf.lua", "mf/mf.lua"): drivers/datadir.h. */
    static char found[PATH_MAX];
    int e = orion_datadir_find_script(argv[0], script, found, sizeof found);
    if (e != 0) {
      fprintf(stderr, "orion-driver: cannot open script %s: %s\n", script,
              strerror(e));
      return EXIT_USAGE;
    }
    argv[first] = found;
    script = found;
  }
  if (status_spec != NULL) {
    char url[512];
    orion_error err;
    orion_error_clear(&err);
    if (orion_status_start(status_spec, status_page, sizeof status_page - 1,
                           url, sizeof url, &err) != 0) {
      fprintf(stderr, "orion-driver: %s\n", err.msg);
      return EXIT_USAGE;
    }
    orion_status_put_job(script);
    fprintf(stderr, "orion: status page at %s\n", url);
    fflush(stderr);
  }

  L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "orion-driver: cannot create a Lua state\n");
    orion_status_stop();
    return EXIT_SCRIPT;
  }
  luaL_openlibs(L);
  /* The script, dofile, loadfile and require keep each chunk's text, so
   * the analysis reads the text that runs, whatever happens to the file
   * later. */
  orion_srcstore_install(L);
  publish_options(L);
  orion_jobpage_print(L);
  set_lua_path(L, argv[0]);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_orion);
  lua_setfield(L, -2, "orion");
  lua_pop(L, 2);
  orion_module_configure(L, &cfg);
  if (elastic.on) {
    recover.L = L;
    orion_elastic_arm(&elastic, L);
  } else {
    orion_recover_arm(&recover, &launcher, L);
  }

  /* arg: arg[0] the script, arg[1..] its arguments, and the driver's own
   * words at negative indices (arg[-first] is the driver), as lua(1) does. */
  lua_createtable(L, argc - first, first + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - first);
  }
  lua_setglobal(L, "arg");

  lua_pushcfunction(L, msghandler);
  rc = orion_srcstore_loadfile(L, script, NULL);
  if (rc != LUA_OK) {
    fprintf(stderr, "orion-driver: %s\n", lua_tostring(L, -1));
    lua_close(L);
    orion_status_stop();
    return EXIT_SCRIPT;
  }
  for (i = first + 1; i < argc; i++)
    lua_pushstring(L, argv[i]);
  rc = lua_pcall(L, argc - first - 1, 0, 1);
  if (rc != LUA_OK && !orion_module_stopped(L, -1, NULL, 0)) {
    orion_progress_clear(); /* a load's line, if an error cut it short */
    fprintf(stderr, "orion-driver: %s\n", lua_tostring(L, -1));
    fflush(stdout);
    lua_close(L);
    orion_status_stop();
    return EXIT_SCRIPT;
  }
  fflush(stdout);
  {
    /* --explain-only stopped the script (also when it caught the stop). */
    char line[160];
    if (orion_module_stopped(L, 0, line, sizeof line))
      fprintf(stderr, "%s\n", line);
  }
  lua_close(L);
  orion_status_stop();
  return 0;
}
