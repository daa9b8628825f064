/* executor/exec_kept.c: the parsed parts of files an --elastic executor
 * keeps under the driver's digest: answered while the file is unchanged,
 * dropped when it changed, passed on across the executor's exec, and
 * nothing taken from descriptors that are not kept frames.  (Criterion
 * runs each test in a process of its own: each starts with an empty
 * store.) */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsm/msg.h"
#include "executor/exec_kept.h"
#include "util/buf.h"

static char digest_a[ORION_MSG_LOAD_DIGEST], digest_b[ORION_MSG_LOAD_DIGEST];
static const char frame[] = "a LOADED frame's bytes, as the executor sent them";

/* A file with some text; its path in out. */
static void data_file(char *out, size_t n, const char *text) {
  int fd;
  snprintf(out, n, "/tmp/orion-kept-XXXXXX");
  fd = mkstemp(out);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  memset(digest_a, 'a', sizeof digest_a);
  memset(digest_b, 'b', sizeof digest_b);
}

Test(kept, answers_its_digest_while_the_file_is_unchanged) {
  char path[64];
  struct stat st;
  orion_buf out;
  size_t bytes;
  data_file(path, sizeof path, "1 1 5\n2 1 4\n");
  cr_assert_eq(stat(path, &st), 0);
  orion_kept_add(digest_a, &st, frame, sizeof frame);
  cr_assert_eq(orion_kept_count(&bytes), 1);
  cr_assert_eq(bytes, sizeof frame);
  orion_buf_init(&out);
  orion_buf_append(&out, "x", 1);
  cr_assert_eq(orion_kept_answer(digest_a, path, &out), 1);
  cr_assert_eq(out.len, 1 + sizeof frame);
  cr_assert(memcmp(out.data + 1, frame, sizeof frame) == 0);
  /* Another digest (another part, options or file): nothing. */
  cr_assert_eq(orion_kept_answer(digest_b, path, &out), 0);
  cr_assert_eq(out.len, 1 + sizeof frame);
  orion_buf_free(&out);
  unlink(path);
}

Test(kept, a_changed_file_is_parsed_again) {
  char path[64];
  struct stat st;
  orion_buf out;
  FILE *f;
  data_file(path, sizeof path, "1 1 5\n");
  cr_assert_eq(stat(path, &st), 0);
  orion_kept_add(digest_a, &st, frame, sizeof frame);
  f = fopen(path, "a");
  cr_assert_not_null(f);
  fputs("2 1 4\n", f);
  fclose(f);
  orion_buf_init(&out);
  cr_assert_eq(orion_kept_answer(digest_a, path, &out), 0);
  cr_assert_eq(out.len, 0);
  cr_assert_eq(orion_kept_count(NULL), 0, "the stale copy is dropped");
  /* A file gone: nothing either. */
  orion_kept_add(digest_b, &st, frame, sizeof frame);
  unlink(path);
  cr_assert_eq(orion_kept_answer(digest_b, path, &out), 0);
  orion_buf_free(&out);
}

Test(kept, passed_on_across_exec) {
  char path[64], *end;
  struct stat st;
  const char *env;
  long fd;
  char head[8];
  data_file(path, sizeof path, "1 1 5\n");
  cr_assert_eq(stat(path, &st), 0);
  orion_kept_add(digest_a, &st, frame, sizeof frame);
  orion_kept_add(digest_b, &st, frame, sizeof frame);
  unsetenv("ORION_KEPT_LOADS");
  orion_kept_pass_on(); /* (holds the store: the last call here) */
  env = getenv("ORION_KEPT_LOADS");
  cr_assert_not_null(env);
  /* Two memory files, open across exec, each starting with the magic. */
  fd = strtol(env, &end, 10);
  cr_assert_eq(*end, ',');
  cr_assert_eq(fcntl((int)fd, F_GETFD) & FD_CLOEXEC, 0);
  cr_assert_eq(pread((int)fd, head, sizeof head, 0), (ssize_t)sizeof head);
  cr_assert(memcmp(head, "ORKEPT01", 8) == 0);
  fd = strtol(end + 1, &end, 10);
  cr_assert_eq(*end, '\0');
  cr_assert_eq(fcntl((int)fd, F_GETFD) & FD_CLOEXEC, 0);
  unlink(path);
}

Test(kept, takes_over_kept_frames_only) {
  char path[64], list[32];
  int fd;
  data_file(path, sizeof path, "not a kept frame, but a file of the same size or so");
  fd = open(path, O_RDONLY);
  cr_assert(fd >= 3);
  snprintf(list, sizeof list, "%d,99999", fd);
  setenv("ORION_KEPT_LOADS", list, 1);
  orion_kept_take_over();
  cr_assert_eq(orion_kept_count(NULL), 0);
  cr_assert_null(getenv("ORION_KEPT_LOADS"));
  cr_assert_eq(fcntl(fd, F_GETFD), -1, "the descriptor is closed");
  unlink(path);
}
