/* Tests of GPU ownership without a device (issue 20): gpu/gpu.h where no
 * device is usable (the CUDA build on a machine without a driver or GPU,
 * and gpu/gpu_none.c in a build without CUDA): a count of 0 with its
 * reason, an open that fails naming the device and the reason, and, in the
 * build without CUDA, every other call failing cleanly.  Then the sizes of
 * --gpu-memory, the driver's --gpus and its default of one executor per
 * GPU (with a fake device count), the --gpu of each launcher's executor
 * command lines, an executor's device carried by its HELLO into the
 * driver's cluster (orion_cluster_executor_gpu and the log line), and the
 * one-line messages and exit codes of `orion-driver --gpus 1` and
 * `orion-executor --gpu 0` on a machine without a GPU.
 *
 * On a machine with a GPU the no-device cases skip (t/gpu_backend.c, run
 * by `make check-gpu`, checks the device). */
#include "t/testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "config.h"
#include "drivers/launch.h"
#include "drivers/launcher.h"
#include "dsm/cluster.h"
#include "dsm/wire.h"
#include "gpu/gpu.h"
#include "t/secsock.h"
#include "util/buf.h"
#include "util/error.h"

TestSuite(gpu, .timeout = 60);

/* Skips the test when a device is usable here. */
static void need_no_device(void) {
  if (orion_gpu_count(NULL) > 0)
    cr_skip_test("a GPU is usable here: the no-device checks do not apply "
                 "(make check-gpu tests the device)");
}

/* ------------------------------------------------------------------------
 * gpu/gpu.h without a device.
 * ---------------------------------------------------------------------- */

Test(gpu, built_matches_configure) {
#ifdef ORION_HAVE_CUDA
  cr_assert_eq(orion_gpu_built(), 1);
#else
  cr_assert_eq(orion_gpu_built(), 0);
#endif
}

Test(gpu, count_is_zero_with_a_reason) {
  const char *why = NULL;
  need_no_device();
  cr_assert_eq(orion_gpu_count(&why), 0);
  cr_assert_not_null(why);
  cr_log_info("no GPU here: %s", why);
  if (orion_gpu_built())
    cr_assert(strncmp(why, "no CUDA driver: ", 16) == 0 ||
                  strncmp(why, "no device: ", 11) == 0 ||
                  strncmp(why, "CUDA cannot start: ", 19) == 0,
              "reason '%s'", why);
  else
    cr_assert_str_eq(why, "this build has no CUDA (configure found no nvcc; "
                          "see --with-cuda)");
  cr_assert_eq(orion_gpu_count(NULL), 0);
}

Test(gpu, open_fails_naming_the_device_and_the_reason) {
  const char *why = "";
  orion_gpu *g = (orion_gpu *)1;
  orion_error err;
  char want[600];
  int rc;
  need_no_device();
  orion_gpu_count(&why);
  orion_error_clear(&err);
  rc = orion_gpu_open(0, 0, &g, &err);
  cr_assert_eq(rc, ORION_EUNSUPPORTED);
  cr_assert_eq(err.code, ORION_EUNSUPPORTED);
  cr_assert_null(g);
  snprintf(want, sizeof want, "GPU 0: %s", why);
  cr_assert_str_eq(err.msg, want);
  rc = orion_gpu_open(3, 256u << 20, &g, &err);
  cr_assert_eq(rc, ORION_EUNSUPPORTED);
  snprintf(want, sizeof want, "GPU 3: %s", why);
  cr_assert_str_eq(err.msg, want);
  cr_assert_null(g);
  /* NULL err is fine too. */
  cr_assert_eq(orion_gpu_open(0, 0, &g, NULL), ORION_EUNSUPPORTED);
}

/* gpu_none.c: every call on a device fails cleanly (there is none). */
Test(gpu, none_every_call_fails_cleanly) {
  orion_error err;
  void *p = (void *)1;
  char desc[16] = "x";
  orion_gpu *g = NULL;
  if (orion_gpu_built())
    cr_skip_test("this build has CUDA: gpu_none.c is not linked");
#define NONE_MSG "no GPU: this build has no CUDA"
#define EXPECT_NONE(call)                                                    \
  do {                                                                       \
    orion_error_clear(&err);                                                 \
    cr_assert_eq((call), ORION_EUNSUPPORTED, "%s", #call);                   \
    cr_assert_str_eq(err.msg, NONE_MSG, "%s", #call);                        \
  } while (0)
  EXPECT_NONE(orion_gpu_alloc(g, 64, "array 'W'", &p, &err));
  cr_assert_null(p);
  p = (void *)1;
  EXPECT_NONE(orion_gpu_host_alloc(g, 64, &p, &err));
  cr_assert_null(p);
  EXPECT_NONE(orion_gpu_h2d(g, desc, desc, 1, &err));
  EXPECT_NONE(orion_gpu_d2h(g, desc, desc, 1, &err));
  EXPECT_NONE(orion_gpu_h2d_async(g, desc, desc, 1, 1, &err));
  EXPECT_NONE(orion_gpu_d2h_async(g, desc, desc, 1, 0, &err));
  EXPECT_NONE(orion_gpu_memset(g, desc, 0, 1, &err));
  EXPECT_NONE(orion_gpu_sync(g, 0, 1, &err));
  EXPECT_NONE(orion_gpu_order(g, &err));
  orion_error_clear(&err);
  cr_assert_null(orion_gpu_cublas(g, &err));
  cr_assert_str_eq(err.msg, NONE_MSG);
  cr_assert_null(orion_gpu_stream(g));
  cr_assert_null(orion_gpu_copy_stream(g));
  cr_assert_null(orion_gpu_info_of(g));
  cr_assert_eq(orion_gpu_in_use(g), 0);
  orion_gpu_describe(g, desc, sizeof desc);
  cr_assert_str_eq(desc, "");
  orion_gpu_free(g, NULL);
  orion_gpu_host_free(g, NULL);
  orion_gpu_close(g);
#undef EXPECT_NONE
#undef NONE_MSG
}

/* ------------------------------------------------------------------------
 * --gpu-memory sizes.
 * ---------------------------------------------------------------------- */

Test(gpu, size_parse_good) {
  static const struct {
    const char *s;
    uint64_t v;
  } good[] = {{"4096", 4096},
              {"1", 1},
              {"64k", 65536},
              {"64K", 65536},
              {"256M", 256ull << 20},
              {"256MB", 256ull << 20},
              {"256MiB", 256ull << 20},
              {"8G", 8ull << 30},
              {"8g", 8ull << 30},
              {"1.5G", 3ull << 29},
              {"2GiB", 2ull << 30},
              {"1T", 1ull << 40},
              {"0.5K", 512}};
  size_t i;
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    uint64_t v = 0;
    orion_error err;
    orion_error_clear(&err);
    cr_assert_eq(orion_launch_size_parse(good[i].s, "--gpu-memory", &v, &err),
                 0, "'%s': %s", good[i].s, err.msg);
    cr_assert_eq(v, good[i].v, "'%s' gave %llu", good[i].s,
                 (unsigned long long)v);
  }
}

Test(gpu, size_parse_bad) {
  static const char *const bad[] = {"",    "0",    "-1",   "12Q",  "1e9",
                                    "0x10", "G",   "1.5.5G", " 1G", "1G ",
                                    "1GG", "0.1",  "inf",  "1Gx",
                                    "99999999999T"};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t v = 77;
    orion_error err;
    char want[160];
    orion_error_clear(&err);
    cr_assert_eq(orion_launch_size_parse(bad[i], "--gpu-memory", &v, &err),
                 ORION_EINVAL, "'%s' was taken", bad[i]);
    snprintf(want, sizeof want,
             "--gpu-memory needs a size such as 256M or 8G, not '%s'",
             bad[i]);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(v, 77, "'%s' changed the output", bad[i]);
  }
}

/* ------------------------------------------------------------------------
 * The driver's --gpus, with a fake device count.
 * ---------------------------------------------------------------------- */

static int fake_none(const char **why) {
  if (why != NULL)
    *why = "no device: fake";
  return 0;
}
static int fake_two(const char **why) {
  (void)why;
  return 2;
}

static void launcher_with(orion_launcher *l, int (*count)(const char **)) {
  orion_launcher_init(l);
  l->gpu_count = count;
}

/* Runs the setup; returns its code, with the message in msg. */
static int setup(orion_launcher *l, int *nexec, int given, char *note,
                 char *msg) {
  orion_error err;
  int rc;
  orion_error_clear(&err);
  rc = orion_launcher_gpu_setup(l, nexec, given, note, 160, &err);
  strcpy(msg, err.msg);
  return rc;
}

Test(gpu, gpus_option) {
  orion_launcher l;
  orion_error err;
  static const char *const bad[] = {"0", "-1", "x", "", "4097", "2x", "ALL"};
  size_t i;
  launcher_with(&l, fake_two);
  cr_assert_eq(orion_launcher_set_gpus(&l, "3", &err), 0);
  cr_assert_eq(l.gpus, 3);
  cr_assert_eq(orion_launcher_set_gpus(&l, "all", &err), 0);
  cr_assert_eq(l.gpus, -1);
  cr_assert_str_eq(l.gpus_text, "all");
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[160];
    orion_error_clear(&err);
    cr_assert_eq(orion_launcher_set_gpus(&l, bad[i], &err), ORION_EOPTION,
                 "'%s'", bad[i]);
    snprintf(want, sizeof want,
             "--gpus needs a number of GPUs 1..4096 or 'all', not '%s'",
             bad[i]);
    cr_assert_str_eq(err.msg, want);
  }
}

Test(gpu, gpus_local_without_a_device) {
  orion_launcher l;
  char note[160], msg[1024];
  int n = 8;
  launcher_with(&l, fake_none);
  orion_launcher_set_gpus(&l, "1", NULL);
  cr_assert_eq(setup(&l, &n, 0, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg, "--gpus 1: no GPU usable here: no device: fake");
  cr_assert_eq(n, 8);
  /* No --gpus: the CPU default stays, without a word. */
  launcher_with(&l, fake_none);
  cr_assert_eq(setup(&l, &n, 0, note, msg), 0);
  cr_assert_eq(n, 8);
  cr_assert_str_eq(note, "");
  cr_assert_eq(l.gpus, 0);
  /* --gpu-memory alone needs a device. */
  l.gpu_memory = "256M";
  cr_assert_eq(setup(&l, &n, 0, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg,
                   "--gpu-memory 256M: no GPU usable here: no device: fake");
}

Test(gpu, gpus_local_with_two_devices) {
  orion_launcher l;
  char note[160], msg[1024];
  int n = 8;
  /* The default: one executor per GPU, said in one line. */
  launcher_with(&l, fake_two);
  cr_assert_eq(setup(&l, &n, 0, note, msg), 0);
  cr_assert_eq(n, 2);
  cr_assert_eq(l.gpus, 2);
  cr_assert_str_eq(note, "2 GPUs here: one executor per GPU (--executors N "
                         "for CPU executors)");
  /* --executors given: CPU executors as asked, no device. */
  launcher_with(&l, fake_two);
  n = 3;
  cr_assert_eq(setup(&l, &n, 1, note, msg), 0);
  cr_assert_eq(n, 3);
  cr_assert_eq(l.gpus, 0);
  cr_assert_str_eq(note, "");
  /* --executors 0: everything in the driver, no device. */
  n = 0;
  cr_assert_eq(setup(&l, &n, 1, note, msg), 0);
  cr_assert_eq(l.gpus, 0);
  /* --gpus all and --gpus 1. */
  orion_launcher_set_gpus(&l, "all", NULL);
  n = 8;
  cr_assert_eq(setup(&l, &n, 0, note, msg), 0);
  cr_assert_eq(n, 2);
  cr_assert_eq(l.gpus, 2);
  orion_launcher_set_gpus(&l, "1", NULL);
  cr_assert_eq(setup(&l, &n, 0, note, msg), 0);
  cr_assert_eq(n, 1);
  /* More than there are. */
  unsetenv("CUDA_VISIBLE_DEVICES");
  orion_launcher_set_gpus(&l, "3", NULL);
  cr_assert_eq(setup(&l, &n, 0, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg, "--gpus 3: only 2 GPUs usable here");
  setenv("CUDA_VISIBLE_DEVICES", "1,2", 1);
  cr_assert_eq(setup(&l, &n, 0, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg, "--gpus 3: only 2 GPUs usable here "
                        "(CUDA_VISIBLE_DEVICES='1,2')");
  unsetenv("CUDA_VISIBLE_DEVICES");
  /* --executors that disagree. */
  orion_launcher_set_gpus(&l, "2", NULL);
  n = 4;
  cr_assert_eq(setup(&l, &n, 1, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg, "--gpus 2 starts one executor per GPU (2); "
                        "--executors 4 asks for 4");
  n = 2;
  cr_assert_eq(setup(&l, &n, 1, note, msg), 0);
}

Test(gpu, gpus_other_launchers_are_not_checked_here) {
  orion_launcher l;
  char note[160], msg[1024];
  int n = 4;
  launcher_with(&l, fake_none);
  l.kind = ORION_LAUNCH_SSH;
  orion_launcher_set_gpus(&l, "2", NULL);
  cr_assert_eq(setup(&l, &n, 0, note, msg), 0);
  cr_assert_eq(n, 4);
  launcher_with(&l, fake_none);
  l.kind = ORION_LAUNCH_MANUAL;
  l.gpu_memory = "1G";
  cr_assert_eq(setup(&l, &n, 1, note, msg), ORION_EOPTION);
  cr_assert_str_eq(msg, "--gpu-memory needs --gpus N or --gpus all");
}

/* ------------------------------------------------------------------------
 * --gpu on the executors' command lines.
 * ---------------------------------------------------------------------- */

/* The manual line of executor exec under l. */
static void manual_line(const orion_launcher *l, int exec, char *out,
                        size_t n) {
  orion_launch_cmd cmd;
  orion_buf b;
  memset(&cmd, 0, sizeof cmd);
  cmd.driver = "h:1";
  cmd.id = exec;
  orion_launcher_gpu_cmd(l, exec, &cmd);
  orion_buf_init(&b);
  cr_assert_eq(orion_launch_manual_text(&cmd, &b), 0);
  snprintf(out, n, "%s", b.data);
  orion_buf_free(&b);
}

Test(gpu, executor_command_lines) {
  orion_launcher l;
  orion_launch_cmd cmd;
  orion_error err;
  char line[512], **argv = NULL;
  static const char *const want[] = {"orion-executor", "--driver", "h:1",
                                     "--id",           "1",        "--gpu",
                                     "1",              "--gpu-memory",
                                     "256M"};
  size_t i;
  /* Local: executor i owns device i. */
  launcher_with(&l, fake_two);
  orion_launcher_set_gpus(&l, "2", NULL);
  l.gpu_memory = "256M";
  memset(&cmd, 0, sizeof cmd);
  cmd.driver = "h:1";
  cmd.id = 1;
  orion_launcher_gpu_cmd(&l, 1, &cmd);
  cr_assert_eq(orion_launch_local_argv(&cmd, &argv), 0);
  for (i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_assert_str_eq(argv[i], want[i], "word %zu", i);
  cr_assert_null(argv[i]);
  orion_launch_argv_free(argv);
  /* Without GPUs the line is as before. */
  launcher_with(&l, fake_two);
  manual_line(&l, 1, line, sizeof line);
  cr_assert_str_eq(line, "'orion-executor' '--driver' 'h:1' '--id' '1'");
  /* Manual: executor i, modulo --gpus N. */
  l.kind = ORION_LAUNCH_MANUAL;
  orion_launcher_set_gpus(&l, "2", NULL);
  manual_line(&l, 3, line, sizeof line);
  cr_assert_str_eq(line, "'orion-executor' '--driver' 'h:1' '--id' '3' "
                         "'--gpu' '1'");
  /* ssh: the slot's index on its hosts line. */
  l.kind = ORION_LAUNCH_SSH;
  cr_assert_eq(orion_hosts_parse("a 3\nb 2\n", 8, "h", &l.hosts, &err), 0);
  orion_launcher_set_gpus(&l, "all", NULL);
  manual_line(&l, 4, line, sizeof line);
  cr_assert_str_eq(line, "'orion-executor' '--driver' 'h:1' '--id' '4' "
                         "'--gpu' '1'");
  orion_launcher_set_gpus(&l, "2", NULL);
  manual_line(&l, 2, line, sizeof line);
  cr_assert_str_eq(line, "'orion-executor' '--driver' 'h:1' '--id' '2' "
                         "'--gpu' '0'");
  orion_launcher_free(&l);
  /* slurm/mpi: the node-local rank. */
  launcher_with(&l, fake_two);
  l.kind = ORION_LAUNCH_SLURM;
  orion_launcher_set_gpus(&l, "2", NULL);
  setenv("SLURM_LOCALID", "3", 1);
  manual_line(&l, 5, line, sizeof line);
  cr_assert_str_eq(line, "'orion-executor' '--driver' 'h:1' '--id' '5' "
                         "'--gpu' '1'");
  unsetenv("SLURM_LOCALID");
  /* A bad --gpu-memory never reaches a command line. */
  memset(&cmd, 0, sizeof cmd);
  cmd.driver = "h:1";
  cmd.gpu_memory = "12Q";
  cr_assert_eq(orion_launch_cmd_check(&cmd, &err), ORION_EINVAL);
  cr_assert_str_eq(err.msg,
                   "--gpu-memory needs a size such as 256M or 8G, not '12Q'");
}

/* ------------------------------------------------------------------------
 * An executor's device, from its HELLO into the driver's cluster.
 * ---------------------------------------------------------------------- */

#define FAKE_DESC "GPU 0 (Fake GPU, 16.0 GiB, cc 9.0)"

typedef struct fake_exec {
  char driver[64];
  char token[128];
  int id;
  const char *device; /* "" for none */
  pthread_t thr;
  tu_sec sec;
} fake_exec;

/* Connects to the driver as executor f->id, sends its HELLO, and reads
 * until the driver closes the connection (at most 20 s). */
static void *fake_exec_main(void *arg) {
  fake_exec *f = arg;
  struct sockaddr_in a;
  orion_wire_hello h;
  orion_buf b;
  char *colon = strrchr(f->driver, ':'), buf[4096];
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct timeval tv = {20, 0};
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(colon + 1));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    close(s);
    return NULL;
  }
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (tu_sec_connect(s, &f->sec, f->token, ORION_SEC_AUTO) != 0) {
    close(s);
    return NULL;
  }
  tu_sec_of[s] = NULL; /* read below as raw bytes, until the end */
  memset(&h, 0, sizeof h);
  h.executor = (uint32_t)f->id;
  h.device = f->device;
  h.device_len = strlen(f->device);
  h.gpu_total = h.device_len > 0 ? 16ull << 30 : 0;
  h.gpu_cap = h.device_len > 0 ? 1ull << 30 : 0;
  orion_buf_init(&b);
  orion_wire_hello_encode(&b, &h);
  if (tu_sec_send(s, &f->sec, b.data, b.len) == 0)
    while (recv(s, buf, sizeof buf, 0) > 0)
      ;
  orion_buf_free(&b);
  orion_sec_free(&f->sec.s);
  close(s);
  return NULL;
}

static fake_exec fakes[2];

static int fake_start(orion_cluster *c, void *ud,
                      const orion_cluster_launch_info *info,
                      orion_error *err) {
  int i;
  (void)ud, (void)err;
  for (i = 0; i < info->n; i++) {
    fake_exec *f = &fakes[i];
    snprintf(f->driver, sizeof f->driver, "%s", info->driver);
    snprintf(f->token, sizeof f->token, "%s", info->token);
    f->id = i;
    f->device = i == 0 ? FAKE_DESC : "";
    orion_cluster_set_where(c, i, "fake-host");
    pthread_create(&f->thr, NULL, fake_exec_main, f);
  }
  return 0;
}

Test(gpu, registration_carries_the_device) {
  orion_cluster_opts o;
  orion_cluster *c;
  orion_error err;
  char desc[256], *log, errp[] = "/tmp/orion-gpulog-XXXXXX";
  int fd = mkstemp(errp), saved = dup(2), i;
  cr_assert(fd >= 0 && saved >= 0);
  orion_cluster_opts_init(&o);
  o.nexec = 2;
  o.launch = fake_start;
  o.register_timeout = 20;
  orion_error_clear(&err);
  fflush(stderr);
  dup2(fd, 2); /* the driver's log line */
  c = orion_cluster_start(&o, &err);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  cr_assert_not_null(c, "%s", err.msg);
  cr_assert_eq(orion_cluster_executor_gpu(c, 0, desc, sizeof desc), 1);
  cr_assert_str_eq(desc, FAKE_DESC);
  cr_assert_eq(orion_cluster_executor_gpu_cap(c, 0), 1ull << 30);
  cr_assert_eq(orion_cluster_executor_gpu(c, 1, desc, sizeof desc), 0);
  cr_assert_str_eq(desc, "");
  cr_assert_eq(orion_cluster_executor_gpu_cap(c, 1), 0);
  cr_assert_eq(orion_cluster_executor_gpu(c, 1, NULL, 0), 0);
  cr_assert_eq(orion_cluster_executor_gpu(c, 2, desc, sizeof desc), 0);
  cr_assert_eq(orion_cluster_executor_gpu(c, -1, desc, sizeof desc), 0);
  orion_cluster_stop(c);
  for (i = 0; i < 2; i++)
    pthread_join(fakes[i].thr, NULL);
  lseek(fd, 0, SEEK_SET);
  log = tu_slurp_fd(fd);
  close(fd);
  unlink(errp);
  cr_assert(strstr(log, "orion: executor 0 on fake-host: " FAKE_DESC "\n") !=
                NULL,
            "log:\n%s", log);
  cr_assert(strstr(log, "executor 1 on") == NULL, "log:\n%s", log);
  free(log);
}

/* ------------------------------------------------------------------------
 * The programs, on a machine without a GPU: one line, exit code 2.
 * ---------------------------------------------------------------------- */

static const char *executor_path(void) {
  const char *e = getenv("ORION_EXECUTOR");
  return e != NULL ? e : "./orion-executor";
}

/* "REASON" of orion_gpu_count, for the expected messages. */
static const char *reason(void) {
  const char *why = "";
  orion_gpu_count(&why);
  return why;
}

Test(gpu, driver_gpus_without_a_device) {
  static const char *const args[] = {"--gpus", "1", "@arrays.lua", NULL};
  static const char *const all[] = {"--gpus", "all", "@arrays.lua", NULL};
  static const char *const mem[] = {"--gpu-memory", "1G", "@arrays.lua", NULL};
  static const char *const badmem[] = {"--gpus", "1", "--gpu-memory", "lots",
                                       "@arrays.lua", NULL};
  char want[1024];
  tu_run r;
  need_no_device();
  r = tu_drive("t/scripts", args, 30);
  snprintf(want, sizeof want, "orion-driver: --gpus 1: no GPU usable here: "
                              "%s\n",
           reason());
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_str_eq(r.err, want);
  cr_assert_str_eq(r.out, "");
  tu_run_free(&r);
  r = tu_drive("t/scripts", all, 30);
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  snprintf(want, sizeof want, "orion-driver: --gpus all: no GPU usable here: "
                              "%s\n",
           reason());
  cr_assert_str_eq(r.err, want);
  tu_run_free(&r);
  r = tu_drive("t/scripts", mem, 30);
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_drive("t/scripts", badmem, 30);
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_str_eq(r.err, "orion-driver: --gpu-memory needs a size such as "
                          "256M or 8G, not 'lots'\nTry 'orion-driver "
                          "--help'.\n");
  tu_run_free(&r);
}

#define TOKEN32 "c713e8480882adb58fa7f30e26befd8c"

/* A secret shorter than 128 bits is refused before anything else. */
Test(gpu, executor_refuses_a_short_token) {
  char *argv[] = {(char *)executor_path(), "--driver", "127.0.0.1:9",
                  "--token", "t", NULL};
  tu_run r = tu_run_argv(argv, 30);
  cr_assert_eq(r.status, 2);
  cr_assert_str_eq(r.err, "orion-executor: the token (--token or "
                          "$ORION_TOKEN) is 1 characters; a job's secret "
                          "needs at least 128 bits: 32 or more characters, "
                          "such as the 32 hex digits of `openssl rand -hex "
                          "16`\n");
  tu_run_free(&r);
}

Test(gpu, executor_gpu_without_a_device) {
  char *argv[] = {(char *)executor_path(), "--gpu", "0", "--driver",
                  "127.0.0.1:9", "--token", TOKEN32, NULL};
  char *mem[] = {(char *)executor_path(), "--gpu", "0", "--gpu-memory", "0",
                 "--driver", "127.0.0.1:9", "--token", TOKEN32, NULL};
  char *nogpu[] = {(char *)executor_path(), "--gpu-memory", "1G",
                   "--driver", "127.0.0.1:9", "--token", TOKEN32, NULL};
  char *badgpu[] = {(char *)executor_path(), "--gpu", "x", "--driver",
                    "127.0.0.1:9", "--token", TOKEN32, NULL};
  char want[1024];
  tu_run r;
  r = tu_run_argv(mem, 30);
  cr_assert_eq(r.status, 2);
  cr_assert_str_eq(r.err, "orion-executor: --gpu-memory needs a size such as "
                          "256M or 8G, not '0'\n");
  tu_run_free(&r);
  r = tu_run_argv(nogpu, 30);
  cr_assert_eq(r.status, 2);
  cr_assert(strncmp(r.err, "orion-executor: --gpu-memory needs --gpu N\n",
                    43) == 0,
            "%s", r.err);
  tu_run_free(&r);
  r = tu_run_argv(badgpu, 30);
  cr_assert_eq(r.status, 2);
  cr_assert_str_eq(r.err, "orion-executor: --gpu needs a device number "
                          "0..4096, not 'x'\n");
  tu_run_free(&r);
  need_no_device();
  r = tu_run_argv(argv, 30);
  snprintf(want, sizeof want,
           "orion-executor: --gpu 0: no GPU usable here: %s\n", reason());
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_str_eq(r.err, want);
  tu_run_free(&r);
}

/* 1 when a library whose path holds name is mapped in this process. */
static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  cr_assert_not_null(f);
  while (!found && fgets(line, sizeof line, f) != NULL)
    found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

/* cuBLAS is not linked: a CUDA build opens it on first use, with or
 * without a device, and a process that never multiplies never loads it
 * (linking it cost every process 0.4 s at start). */
Test(gpu, cublas_loads_when_first_asked) {
  orion_error err;
  orion_error_clear(&err);
  if (!orion_gpu_built()) {
    cr_assert_neq(orion_gpu_cublas_load(&err), 0);
    cr_assert_str_eq(err.msg, "no GPU: this build has no CUDA");
    return;
  }
  cr_assert_eq(mapped("libcublas"), 0,
               "libcublas is mapped before anything asked for it");
  cr_assert_eq(orion_gpu_cublas_load(&err), 0, "%s", err.msg);
  cr_assert_eq(mapped("libcublas"), 1);
  cr_assert_eq(orion_gpu_cublas_load(&err), 0, "%s", err.msg); /* again */
}
