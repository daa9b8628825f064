/* orion.train (lua/orion/train.lua, docs/training.md) on a scripted run,
 * t/scripts/train_loop.lua: early stopping at the right epoch with the
 * best epoch's model kept, the learning-rate schedules' values, the
 * progress line on a terminal and elsewhere with its ETA, the summary
 * line, the errors of bad options, and the TensorBoard event file read
 * back by the reader below (TFRecord framing, CRC-32C, Event protobufs),
 * and by the tensorboard Python package where it is installed. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "t/testutil.h"
#include "util/progress.h"

static tu_run drive(const char *const *args) {
  return tu_drive("t/scripts", args, 60);
}
#define DRIVE(...) drive((const char *const[]){__VA_ARGS__, NULL})

/* Lines on stderr one per epoch, not drawn in place. */
static void plain(void) { setenv("ORION_PROGRESS", "0", 1); }

static void expect_has(const char *text, const char *want) {
  cr_expect(strstr(text, want) != NULL, "expected \"%s\" in:\n%s", want, text);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

Test(train, early_stop_at_the_right_epoch_keeps_the_best_model) {
  char *best = tu_temp_path(".best");
  char *text, want[1024];
  tu_run r;
  plain();
  /* Best 0.7 at epoch 3; epochs 4, 5, 6 are not better: patience 3 stops
   * after epoch 6, before the 0.5 of epoch 7. */
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals",
            "1.0,0.8,0.7,0.75,0.72,0.71,0.5", "--epochs", "7", "--early-stop",
            "3", "--save-best", best);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(
      want, sizeof want,
      "epoch 1/7  loss 1.0000  val_loss 1.0000  ETA 1m00s\n"
      "epoch 2/7  loss 0.5000  val_loss 0.8000  ETA 50s\n"
      "epoch 3/7  loss 0.3333  val_loss 0.7000  ETA 40s\n"
      "epoch 4/7  loss 0.2500  val_loss 0.7500  ETA 30s\n"
      "epoch 5/7  loss 0.2000  val_loss 0.7200  ETA 20s\n"
      "epoch 6/7  loss 0.1667  val_loss 0.7100  done in 1m00s\n"
      "train_loop.lua: stopped early at epoch 6 of 7 (val_loss not better "
      "for 3 epochs) after 1m00s; best val_loss 0.7000 at epoch 3; model not "
      "saved (--save PATH keeps it); best model (epoch 3) in %s\n",
      best);
  cr_expect_str_eq(r.err, want);
  cr_expect(strstr(r.out, "lr 6 ") != NULL && strstr(r.out, "lr 7 ") == NULL,
            "%s", r.out);
  expect_has(r.out, "summary: train_loop.lua: stopped early at epoch 6 of 7 "
                    "(val_loss not better for 3 epochs) after 1m00s; best "
                    "val_loss 0.7000 at epoch 3; model not saved (--save "
                    "PATH keeps it); best model (epoch 3) in ");
  text = slurp(best);
  cr_expect_str_eq(text, "epoch 3 val_loss 0.7\n");
  free(text);
  unlink(best);
  free(best);
  tu_run_free(&r);
}

Test(train, early_stop_on_a_metric_that_should_rise) {
  char *best = tu_temp_path(".best");
  char *text;
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--goal", "max", "--vals",
            "0.5,0.6,0.55,0.58,0.9", "--epochs", "5", "--early-stop", "2",
            "--save-best", best);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_has(r.out, "stopped early at epoch 4 of 5 (val_loss not better "
                    "for 2 epochs) after 40s; best val_loss 0.6000 at epoch "
                    "2;");
  text = slurp(best);
  cr_expect_str_eq(text, "epoch 2 val_loss 0.6\n");
  free(text);
  unlink(best);
  free(best);
  tu_run_free(&r);
}

/* Without --early-stop every epoch runs; the summary names the best one
 * and the final model. */
Test(train, summary_line_without_early_stop) {
  char *model = tu_temp_path(".model");
  char want[512];
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "1.0,0.8,0.7,0.75",
            "--epochs", "4", "--secs", "2000", "--save", model);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(want, sizeof want,
           "epoch 1/4  loss 1.0000  val_loss 1.0000  ETA 1h40m\n"
           "epoch 2/4  loss 0.5000  val_loss 0.8000  ETA 1h06m\n"
           "epoch 3/4  loss 0.3333  val_loss 0.7000  ETA 33m20s\n"
           "epoch 4/4  loss 0.2500  val_loss 0.7500  done in 2h13m\n"
           "train_loop.lua: 4 epochs in 2h13m; best val_loss 0.7000 at "
           "epoch 3; model saved to %s\n",
           model);
  cr_expect_str_eq(r.err, want);
  unlink(model);
  free(model);
  tu_run_free(&r);
}

/* Short epochs: tenths of a second under ten seconds. */
Test(train, eta_under_ten_seconds_has_a_tenth) {
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "3", "--secs",
            "2.5");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err, "epoch 1/3  loss 1.0000  ETA 5.0s\n"
                          "epoch 2/3  loss 0.5000  ETA 2.5s\n"
                          "epoch 3/3  loss 0.3333  done in 7.5s\n"
                          "train_loop.lua: 3 epochs in 7.5s; no val_loss "
                          "measured; model not saved (--save PATH keeps it)\n");
  tu_run_free(&r);
}

/* On a terminal (ORION_PROGRESS=1 stands for one) the line is rewritten
 * in place, erased before the script prints, and ended by a newline
 * before the summary. */
Test(train, progress_line_in_place_on_a_terminal) {
  tu_run r;
  setenv("ORION_PROGRESS", "1", 1);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "3.0,2.0",
            "--epochs", "2");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err,
                   "\repoch 1/2  loss 1.0000  val_loss 3.0000  ETA 10s\033[K"
                   "\r\033[K"
                   "\repoch 2/2  loss 0.5000  val_loss 2.0000  done in "
                   "20s\033[K\n"
                   "train_loop.lua: 2 epochs in 20s; best val_loss 2.0000 at "
                   "epoch 2; model not saved (--save PATH keeps it)\n");
  unsetenv("ORION_PROGRESS");
  tu_run_free(&r);
}

/* Under --quiet: no progress line, no summary. */
Test(train, quiet_prints_no_line) {
  tu_run r;
  setenv("ORION_PROGRESS", "1", 1);
  r = DRIVE("--executors", "0", "--quiet", "@train_loop.lua", "--vals", "3,2",
            "--epochs", "2");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err, "");
  unsetenv("ORION_PROGRESS");
  tu_run_free(&r);
}

/* The scheduled rate of each epoch as the script printed it ("lr E X"). */
static double lr_of(const char *out, int e) {
  char tag[32];
  const char *p;
  snprintf(tag, sizeof tag, "lr %d ", e);
  p = strstr(out, tag);
  cr_assert_not_null(p, "no \"%s\" in:\n%s", tag, out);
  return strtod(p + strlen(tag), NULL);
}

static void expect_rate(const char *out, int e, double want) {
  double got = lr_of(out, e);
  cr_expect(fabs(got - want) <= 1e-12 * fabs(want) + 1e-300,
            "epoch %d: lr %.17g, expected %.17g", e, got, want);
}

Test(train, lr_schedules_give_the_documented_rates) {
  tu_run r;
  int e;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "6", "--lr",
            "0.5", "--lr-schedule", "step", "--lr-step", "2", "--lr-gamma",
            "0.5");
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_rate(r.out, 1, 0.5);
  expect_rate(r.out, 2, 0.5);
  expect_rate(r.out, 3, 0.25);
  expect_rate(r.out, 4, 0.25);
  expect_rate(r.out, 5, 0.125);
  expect_rate(r.out, 6, 0.125);
  tu_run_free(&r);

  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "4", "--lr",
            "0.5", "--lr-schedule", "step");
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (e = 1; e <= 4; e++) /* 10 epochs a step by default */
    expect_rate(r.out, e, 0.5);
  tu_run_free(&r);

  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "5", "--lr",
            "0.5", "--lr-schedule", "exp");
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (e = 1; e <= 5; e++) /* gamma 0.9 by default */
    expect_rate(r.out, e, 0.5 * pow(0.9, e - 1));
  tu_run_free(&r);

  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "4", "--lr",
            "0.5", "--lr-schedule", "cosine", "--lr-min", "0.1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_rate(r.out, 1, 0.5);
  expect_rate(r.out, 2, 0.1 + 0.4 * (1 + cos(M_PI / 4)) / 2);
  expect_rate(r.out, 3, 0.3);
  expect_rate(r.out, 4, 0.1 + 0.4 * (1 + cos(3 * M_PI / 4)) / 2);
  tu_run_free(&r);
}

static void expect_refused(tu_run r, const char *want) {
  cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  expect_has(r.err, want);
  cr_expect_str_eq(r.out, "");
}

Test(train, bad_options_are_usage_errors) {
  char *file = tu_write_temp(".txt", "x\n");
  char want[512];
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--lr-schedule", "linear");
  expect_refused(r, "train_loop.lua: --lr-schedule must be step, exp or "
                    "cosine, not 'linear'\n");
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--early-stop", "2");
  expect_refused(r, "train_loop.lua: --early-stop needs a validation metric "
                    "(val_loss), measured with --vals\n");
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "1",
            "--early-stop", "-1");
  expect_refused(r, "--early-stop must not be negative");
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--lr-gamma", "0.5");
  expect_refused(r, "--lr-step, --lr-gamma and --lr-min need --lr-schedule");
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--lr-schedule", "exp",
            "--lr-gamma", "1.5");
  expect_refused(r, "--lr-gamma must be in (0, 1]");
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--tensorboard", file);
  snprintf(want, sizeof want, "train_loop.lua: --tensorboard %s: ", file);
  expect_refused(r, want);
  tu_run_free(&r);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "1", "--save-best",
            "/nonexistent-orion/best");
  expect_refused(r, "--save-best /nonexistent-orion/best: the folder "
                    "/nonexistent-orion does not exist");
  tu_run_free(&r);
  unlink(file);
  free(file);
}

/* The job page shows the line the script showed (orion.progress's 4th
 * argument) instead of its own. */
Test(train, job_page_line_is_the_scripts) {
  orion_job_progress p;
  char line[160];
  memset(&p, 0, sizeof p);
  orion_job_progress_note(&p, "epoch", 0, 10, 100.0);
  orion_job_progress_note(&p, "epoch", 3, 10, 136.0);
  snprintf(p.shown, sizeof p.shown, "epoch 3/10  loss 0.2500  ETA 1m24s");
  orion_job_progress_line(&p, line, sizeof line);
  cr_expect_str_eq(line, "epoch 3/10  loss 0.2500  ETA 1m24s");
  p.shown[0] = '\0';
  orion_job_progress_line(&p, line, sizeof line);
  cr_expect_str_eq(line, "epoch 3 / 10, 36s so far, ETA 1m24s for the whole "
                         "job");
}

/* ---- a TensorBoard event file reader ------------------------------------ */

/* CRC-32C bit by bit (the writer uses dsm/wire.c's table or instruction). */
static uint32_t crc32c(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    c ^= p[i];
    for (k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

static uint32_t masked(const unsigned char *p, size_t n) {
  uint32_t c = crc32c(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  int i;
  for (i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

typedef struct event {
  double wall;
  int64_t step;
  char version[32];
  int n;
  char tag[8][32];
  float value[8];
} event;

static uint64_t varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  int shift = 0;
  for (;;) {
    cr_assert(*p < end && shift < 64, "varint runs past its message");
    v |= (uint64_t)(**p & 0x7f) << shift;
    shift += 7;
    if ((*(*p)++ & 0x80) == 0)
      return v;
  }
}

/* One protobuf field at *p: its number and wire type; a length-delimited
 * one's bytes in [*body, *body + *len). */
static int field(const unsigned char **p, const unsigned char *end, int *wt,
                 const unsigned char **body, size_t *len) {
  uint64_t key = varint(p, end);
  *wt = (int)(key & 7);
  *body = *p;
  switch (*wt) {
  case 0:
    *len = 0;
    varint(p, end);
    break;
  case 1:
    *len = 8;
    break;
  case 2:
    *len = varint(p, end);
    *body = *p;
    break;
  case 5:
    *len = 4;
    break;
  default:
    cr_assert_fail("wire type %d", *wt);
  }
  if (*wt != 0) {
    cr_assert(*len <= (size_t)(end - *p), "field past its message");
    *p += *len;
  }
  return (int)(key >> 3);
}

static void decode_value(event *ev, const unsigned char *p,
                         const unsigned char *end) {
  const unsigned char *b;
  size_t len;
  int wt, f;
  cr_assert(ev->n < 8);
  while (p < end) {
    f = field(&p, end, &wt, &b, &len);
    if (f == 1 && wt == 2) {
      cr_assert(len < sizeof ev->tag[0]);
      memcpy(ev->tag[ev->n], b, len);
      ev->tag[ev->n][len] = '\0';
    } else if (f == 2 && wt == 5) {
      uint32_t u = (uint32_t)le(b, 4);
      memcpy(&ev->value[ev->n], &u, 4);
    } else {
      cr_assert_fail("Summary.Value field %d (wire type %d)", f, wt);
    }
  }
  ev->n++;
}

static void decode_event(event *ev, const unsigned char *p,
                         const unsigned char *end) {
  const unsigned char *b, *q;
  size_t len;
  int wt, f;
  memset(ev, 0, sizeof *ev);
  while (p < end) {
    f = field(&p, end, &wt, &b, &len);
    if (f == 1 && wt == 1) {
      uint64_t u = le(b, 8);
      memcpy(&ev->wall, &u, 8);
    } else if (f == 2 && wt == 0) {
      q = b;
      ev->step = (int64_t)varint(&q, end);
    } else if (f == 3 && wt == 2) {
      cr_assert(len < sizeof ev->version);
      memcpy(ev->version, b, len);
    } else if (f == 5 && wt == 2) {
      const unsigned char *s = b, *send = b + len, *vb;
      size_t vlen;
      while (s < send) {
        cr_assert_eq(field(&s, send, &wt, &vb, &vlen), 1);
        cr_assert_eq(wt, 2);
        decode_value(ev, vb, vb + vlen);
      }
    } else {
      cr_assert_fail("Event field %d (wire type %d)", f, wt);
    }
  }
}

/* Reads the TFRecord file at path into evs (at most max), checking each
 * record's framing and both CRCs; returns the number of events. */
static int read_events(const char *path, event *evs, int max) {
  FILE *f = fopen(path, "rb");
  unsigned char head[12], tail[4], *data;
  int n = 0;
  cr_assert_not_null(f, "cannot open %s", path);
  while (fread(head, 1, 12, f) == 12) {
    uint64_t len = le(head, 8);
    cr_assert_eq(le(head + 8, 4), masked(head, 8), "record %d: length CRC", n);
    cr_assert(len < 1 << 20 && n < max);
    data = malloc(len + 1);
    cr_assert(fread(data, 1, len, f) == len, "record %d cut short", n);
    cr_assert(fread(tail, 1, 4, f) == 4, "record %d: no data CRC", n);
    cr_assert_eq(le(tail, 4), masked(data, len), "record %d: data CRC", n);
    decode_event(&evs[n++], data, data + len);
    free(data);
  }
  cr_assert(feof(f), "a partial record at the end");
  fclose(f);
  return n;
}

/* The one events.out.tfevents.* file in dir (a new string). */
static char *event_file(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *found = NULL;
  char host[256];
  cr_assert_not_null(d, "no folder %s", dir);
  gethostname(host, sizeof host);
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    cr_assert_null(found, "two files in %s", dir);
    cr_expect(strncmp(e->d_name, "events.out.tfevents.", 20) == 0 &&
                  strstr(e->d_name, host) != NULL,
              "file name %s", e->d_name);
    found = malloc(strlen(dir) + strlen(e->d_name) + 2);
    sprintf(found, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  cr_assert_not_null(found, "no event file in %s", dir);
  return found;
}

Test(train, tensorboard_file_reads_back) {
  char *dir = tu_temp_path(".tb"), *path;
  event evs[16];
  int n, e;
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "0.9,0.8,0.85",
            "--epochs", "3", "--tensorboard", dir);
  cr_assert_eq(r.status, 0, "%s", r.err);
  path = event_file(dir);
  expect_has(r.err, path);
  n = read_events(path, evs, 16);
  cr_assert_eq(n, 4, "the version and 3 epochs, got %d events", n);
  cr_expect_str_eq(evs[0].version, "brain.Event:2");
  cr_expect_eq(evs[0].step, 0);
  cr_expect_eq(evs[0].n, 0);
  for (e = 1; e <= 3; e++) {
    static const double vals[] = {0, 0.9, 0.8, 0.85};
    event *ev = &evs[e];
    cr_expect_eq(ev->step, e);
    cr_expect_eq(ev->wall, 1700000000.0 + e);
    cr_assert_eq(ev->n, 3, "epoch %d: %d values (numbers only)", e, ev->n);
    cr_expect_str_eq(ev->tag[0], "epoch");
    cr_expect_eq(ev->value[0], (float)e);
    cr_expect_str_eq(ev->tag[1], "loss");
    cr_expect_eq(ev->value[1], (float)(1.0 / e));
    cr_expect_str_eq(ev->tag[2], "val_loss");
    cr_expect_eq(ev->value[2], (float)vals[e]);
  }
  tu_run_free(&r);
  unlink(path);
  rmdir(dir);
  free(path);
  free(dir);
}

/* Under --lr-schedule the epoch's rate is one more scalar, lr; a second
 * run into the same folder (in the same second, most likely) writes a
 * file of its own. */
Test(train, tensorboard_lr_and_a_second_run) {
  char *dir = tu_temp_path(".tb"), *path, *p2;
  event evs[8];
  int n, files = 0;
  DIR *d;
  struct dirent *de;
  tu_run r;
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "2", "--lr",
            "0.5", "--lr-schedule", "exp", "--lr-gamma", "0.5", "--tensorboard",
            dir);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tu_run_free(&r);
  path = event_file(dir);
  n = read_events(path, evs, 8);
  cr_assert_eq(n, 3);
  cr_assert_eq(evs[2].n, 3, "epoch, loss and lr: %d values", evs[2].n);
  cr_expect_str_eq(evs[2].tag[1], "loss");
  cr_expect_str_eq(evs[2].tag[2], "lr");
  cr_expect_eq(evs[2].value[2], 0.25f);
  r = DRIVE("--executors", "0", "@train_loop.lua", "--epochs", "1",
            "--tensorboard", dir);
  cr_assert_eq(r.status, 0, "%s", r.err);
  d = opendir(dir);
  cr_assert_not_null(d);
  p2 = NULL;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    files++;
    if (strstr(path, de->d_name) == NULL) {
      p2 = malloc(strlen(dir) + strlen(de->d_name) + 2);
      sprintf(p2, "%s/%s", dir, de->d_name);
    }
  }
  closedir(d);
  cr_assert_eq(files, 2, "one file per run");
  cr_assert_not_null(p2);
  expect_has(r.err, p2);
  cr_expect_eq(read_events(p2, evs, 8), 2, "its own version and epoch");
  tu_run_free(&r);
  unlink(path);
  unlink(p2);
  rmdir(dir);
  free(path);
  free(p2);
  free(dir);
}

/* The same file through the tensorboard package's reader, where Python
 * has it (no Debian package ships it: skipped elsewhere). */
Test(train, tensorboard_package_reads_the_file) {
  char *dir, *path, cmd[2048];
  tu_run r;
  if (system("python3 -c 'import tensorboard' >/dev/null 2>&1") != 0)
    cr_skip_test("python3 with the tensorboard package is not installed");
  dir = tu_temp_path(".tb");
  plain();
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals", "0.9,0.8",
            "--epochs", "2", "--tensorboard", dir);
  cr_assert_eq(r.status, 0, "%s", r.err);
  path = event_file(dir);
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import sys\n"
           "from tensorboard.backend.event_processing import "
           "event_accumulator as ea\n"
           "a = ea.EventAccumulator(sys.argv[1]); a.Reload()\n"
           "for s in a.Scalars(\"val_loss\"): print(s.step, \"%%.6f\" %% "
           "s.value)' %s",
           dir);
  {
    FILE *p = popen(cmd, "r");
    char out[256] = "";
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    cr_expect_eq(pclose(p), 0);
    cr_expect_str_eq(out, "1 0.900000\n2 0.800000\n");
  }
  tu_run_free(&r);
  unlink(path);
  rmdir(dir);
  free(path);
  free(dir);
}

/* orion.progress's 4th argument: one line, printed instead of the
 * driver's own, or an error naming the limit. */
Test(train, progress_line_argument) {
  char *ok = tu_write_temp(
      ".lua", "local orion = require 'orion'\n"
              "orion.progress(0, 2)\n"
              "orion.progress(1, 2, 'epoch', 'epoch 1/2  loss 0.5  ETA 1s')\n"
              "orion.progress(2, 2)\n");
  char *bad =
      tu_write_temp(".lua", "local orion = require 'orion'\n"
                            "orion.progress(1, 2, 'epoch', 'two\\nlines')\n");
  char *argv[] = {(char *)tu_driver(), "--executors", "0", ok, NULL};
  tu_run r = tu_run_argv(argv, 30);
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* Epoch 1's line is the script's, printed as it is; epoch 2's the
   * driver's own. */
  cr_expect(strncmp(r.err,
                    "epoch 1/2  loss 0.5  ETA 1s\n"
                    "orion: epoch 2 / 2, done in ",
                    56) == 0,
            "%s", r.err);
  tu_run_free(&r);
  argv[3] = bad;
  r = tu_run_argv(argv, 30);
  cr_expect_eq(r.status, 1);
  expect_has(r.err, ":2: orion.progress: the line must be one line of at "
                    "most 159 characters");
  tu_run_free(&r);
  unlink(ok);
  unlink(bad);
  free(ok);
  free(bad);
}

/* On a terminal the epoch's line shares the screen's last line with the
 * loops' own progress lines: a loop's line replaces it while the loop
 * runs and it comes back when the loop's line is erased. */
Test(train, line_comes_back_after_a_loops_line) {
  char *s = tu_write_temp(".lua",
                          "local orion = require 'orion'\n"
                          "local cli = require 'orion.cli'\n"
                          "local train = require 'orion.train'\n"
                          "local spec = { name = 'loops.lua', options = {} }\n"
                          "train.options(spec, { metric = 'x' })\n"
                          "local opts = cli.parse(arg, spec)\n"
                          "local run = train.start(spec, opts,\n"
                          "  { total = 2, show = { 'x' } })\n"
                          "local A = orion.zeros { 64 }\n"
                          "for e = 1, 2 do\n"
                          "  orion.parallel_for(A, function(i, v) end)\n"
                          "  run:epoch(e, { x = 0.5 })\n"
                          "end\n"
                          "run:finish()\n");
  char *argv[] = {(char *)tu_driver(), "--executors", "1", s, NULL};
  const char *first, *loop, *again, *second;
  tu_run r;
  setenv("ORION_PROGRESS", "1", 1);
  setenv("ORION_PROGRESS_AFTER", "0", 1);
  r = tu_run_argv(argv, 60);
  unsetenv("ORION_PROGRESS_AFTER");
  unsetenv("ORION_PROGRESS");
  cr_assert_eq(r.status, 0, "%s", r.err);
  first = strstr(r.err, "\repoch 1/2  x 0.5000  ETA ");
  cr_assert_not_null(first, "%s", r.err);
  loop = strstr(first, "\rparallel_for at ");
  cr_assert_not_null(loop, "no loop line after epoch 1's: %s", r.err);
  again = strstr(loop, "\r\033[K\repoch 1/2  x 0.5000  ETA ");
  second = strstr(loop, "\repoch 2/2  x 0.5000  done in ");
  cr_expect(again != NULL && second != NULL && again < second,
            "epoch 1's line not drawn again after the loop's: %s", r.err);
  cr_expect(strstr(r.err, "\033[K\nloops.lua: 2 epochs in ") != NULL, "%s",
            r.err);
  tu_run_free(&r);
  unlink(s);
  free(s);
}

/* A resumed run goes on with the early-stopping state its checkpoint kept
 * (run:state()): the best value, its epoch and the patience used. */
Test(train, resumed_run_keeps_the_early_stopping_state) {
  tu_run r;
  plain();
  /* Best 0.5 at epoch 2, epoch 3 not better; epochs 4 and 5 are not
   * better either: patience 3 stops after epoch 5. */
  r = DRIVE("--executors", "0", "@train_loop.lua", "--vals",
            "0.9,0.5,0.6,0.7,0.8,0.1", "--epochs", "6", "--first", "4",
            "--resume", "0.5,2,1", "--early-stop", "3");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err,
                   "epoch 4/6  loss 0.2500  val_loss 0.7000  ETA 20s\n"
                   "epoch 5/6  loss 0.2000  val_loss 0.8000  done in 20s\n"
                   "train_loop.lua: stopped early at epoch 5 of 6 (val_loss "
                   "not better for 3 epochs) after 20s; best val_loss 0.5000 "
                   "at epoch 2; model not saved (--save PATH keeps it)\n");
  tu_run_free(&r);
}

/* The apps refuse what they cannot do, before any work: early stopping
 * without a validation metric, a schedule without a learning rate. */
Test(train, apps_refuse_options_they_cannot_honour) {
  char *mf = tu_src("apps/mf/mf.lua"), *lr = tu_src("apps/lr/lr.lua");
  char *tiny = tu_src("docs/examples/tiny.txt");
  char *ltr = tu_src("docs/examples/lr_train.txt");
  char *lte = tu_src("docs/examples/lr_test.txt");
  char *a1[] = {(char *)tu_driver(), "--executors", "0", mf, "--train", tiny,
                "--early-stop",      "3",           NULL};
  char *a2[] = {(char *)tu_driver(),
                "--executors",
                "0",
                lr,
                "--train",
                ltr,
                "--test",
                lte,
                "--optimizer",
                "adarev",
                "--lr-schedule",
                "exp",
                NULL};
  tu_run r = tu_run_argv(a1, 30);
  expect_refused(r, "mf.lua: --early-stop needs a validation metric "
                    "(test_rmse), measured with --test or --test-split\n");
  tu_run_free(&r);
  r = tu_run_argv(a2, 30);
  expect_refused(r, "lr.lua: --lr-schedule applies to --solver sgd\n");
  tu_run_free(&r);
  free(mf);
  free(lr);
  free(tiny);
  free(ltr);
  free(lte);
}

/* dnn.lua and lda.lua keep their best model with --save-best: a file
 * written, named in the summary with its epoch (iteration). */
Test(train, dnn_and_lda_save_the_best_model) {
  char *dnn = tu_src("apps/dnn/dnn.lua"), *lda = tu_src("apps/lda/lda.lua");
  char *best = tu_temp_path(".best"), *last = tu_temp_path(".last");
  char *a1[] = {(char *)tu_driver(), "--executors", "1",      dnn,
                "--epochs",          "3",           "--save", last,
                "--save-best",       best,          NULL};
  char *a2[] = {(char *)tu_driver(),
                "--executors",
                "1",
                lda,
                "--k",
                "5",
                "--iters",
                "4",
                "--ll-every",
                "2",
                "--save-best",
                best,
                NULL};
  struct stat sb;
  tu_run r;
  plain();
  r = tu_run_argv(a1, 120);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_has(r.err, "dnn.lua: 3 epochs in ");
  expect_has(r.err, "; model saved to ");
  expect_has(r.err, "; best model (epoch ");
  cr_expect(stat(best, &sb) == 0 && sb.st_size > 0, "no %s", best);
  cr_expect(stat(last, &sb) == 0 && sb.st_size > 0, "no %s", last);
  tu_run_free(&r);
  unlink(best);
  r = tu_run_argv(a2, 120);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_has(r.err, "lda.lua: 4 iterations in ");
  expect_has(r.err, "; best ll_per_token -");
  expect_has(r.err, "; best model (iteration ");
  cr_expect(stat(best, &sb) == 0 && sb.st_size > 0, "no %s", best);
  tu_run_free(&r);
  unlink(best);
  unlink(last);
  free(best);
  free(last);
  free(dnn);
  free(lda);
}
