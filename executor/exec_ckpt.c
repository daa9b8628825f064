/* orion-executor's part of a checkpoint (issue 19, dsm/ckpt.h): CKPT_WRITE
 * names rows of resident arrays this executor holds the newest copy of;
 * it writes them into the checkpoint's temporary folder (a path the
 * driver made, on a directory every host shares), each part to a
 * temporary name, fsynced and renamed (dsm/ckpt.c), and answers CKPT_DONE
 * with each part's size and CRC-32, or with why it could not (the driver
 * then takes those rows back and writes them itself).
 *
 * ORION_TEST_CKPT_DIE=STEP:FILE (tests): the first executor to write a part
 * of the checkpoint of step STEP while FILE does not exist creates FILE
 * and kills itself (SIGKILL) after its first part, in the middle of its
 * writing.  ORION_TEST_CKPT_FOLDER=E:DIR (tests): executor E writes its
 * parts into DIR instead, as an executor on a host whose disk does not
 * hold the driver's folder but a folder of the same name would. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/exec_state.h"
#include "dsm/ckpt.h"
#include "dsm/msg.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

/* The test hook: the folder executor id writes into, in place of the
 * driver's (made if missing). */
static void test_folder(int id, char *folder, size_t n) {
  const char *v = getenv("ORION_TEST_CKPT_FOLDER");
  char *end;
  if (v == NULL || strtol(v, &end, 10) != id || *end != ':')
    return;
  snprintf(folder, n, "%s", end + 1);
  mkdir(folder, 0755);
}

/* The test hook: whether this executor dies now, at the checkpoint of
 * step `step`. */
static int test_die(int64_t step) {
  const char *v = getenv("ORION_TEST_CKPT_DIE");
  char *end;
  long long s;
  int fd;
  if (v == NULL || v[0] == '\0')
    return 0;
  s = strtoll(v, &end, 10);
  if (*end != ':' || s != step)
    return 0;
  fd = open(end + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return 0; /* another executor, or an earlier run, died already */
  close(fd);
  return 1;
}

int orion__ckpt_write(exec_state *x, job *j) {
  orion_msg_ckpt_write m;
  orion_msg_ckpt_done out;
  orion_msg_ckpt_part *parts;
  orion_error err;
  orion_buf b;
  char folder[4096], file[64];
  int64_t k;
  int die;
  if (orion_msg_ckpt_write_decode(j->payload, j->len, &m, NULL) != 0)
    orion__exec_die(x, "the driver sent a malformed CKPT_WRITE");
  parts = orion_calloc((size_t)m.n + 1, sizeof *parts);
  if (parts == NULL)
    orion__exec_die(x, "out of memory writing a checkpoint");
  snprintf(folder, sizeof folder, "%.*s", (int)m.folder_len, m.folder);
  test_folder(x->id, folder, sizeof folder);
  die = test_die(m.step);
  orion_error_clear(&err);
  memset(&out, 0, sizeof out);
  out.step = m.step;
  for (k = 0; k < m.n && err.code == 0; k++) {
    const orion_msg_range *r = &m.ranges[k];
    replica *rp = orion__replica_find(x, r->array);
    parts[k].array = r->array;
    parts[k].first = r->first;
    parts[k].count = r->count;
    if (rp == NULL)
      orion_error_set(&err, ORION_EINVAL, "it holds no copy of array %" PRId64,
                      r->array);
    else
      orion_ckpt_write_part(folder, rp->a, r->array, r->first, r->count,
                            file, sizeof file, &parts[k].size,
                            &parts[k].crc, &err);
    if (die && err.code == 0)
      kill(getpid(), SIGKILL);
  }
  if (err.code != 0) {
    out.error = err.msg;
    out.error_len = strlen(err.msg);
  } else {
    out.parts = parts;
    out.n = m.n;
  }
  orion_buf_init(&b);
  if (orion_msg_ckpt_done_encode(&b, &out) != 0)
    orion__exec_die(x, "cannot encode CKPT_DONE");
  orion__exec_post(x, &b);
  orion_buf_free(&b);
  orion_free(parts);
  orion_msg_ckpt_write_free(&m);
  return 0;
}
