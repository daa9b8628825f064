/* Parallel loading (dsm/pload.h): LOAD_FILE to every executor, their
 * LOADED parts back, merged as one load of the whole file would return
 * them.  A large file is cut into more parts than executors, each part at
 * most PART_BYTES of text, handed out in turn (part p to executor p mod
 * n): a part's elements must fit in one LOADED frame (256 MiB), and a
 * libsvm or coo line takes up to about 5 times its text there.
 *
 * In an --elastic job each part is named by a digest (the file as the
 * driver sees it, the options, the part), which the executors keep their
 * parsed part under (executor/exec_kept.h), and the file is cut for the
 * job's first executor count whatever the count now.  A re-formed job
 * first asks every executor for the parts it keeps (held_only): the
 * survivors answer theirs from what they hold, and only the parts nobody
 * holds (the lost executor's) are parsed, by the executors with the
 * fewest parts. */
#include "dsm/pload.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsm/addr.h"
#include "dsm/key.h"
#include "dsm/msg.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/progress.h"

/* Text bytes of a part at most (ORION_TEST_LOAD_PART_BYTES overrides it,
 * for the tests: t/test_ragged.c). */
#define PART_BYTES ((int64_t)32 << 20)

typedef struct load_run {
  orion_cluster *cl;
  int n, got;   /* executors; parts that came */
  int np;       /* parts: n, or more for a large file */
  int *pending; /* per executor: answers still to come */
  int *asked;   /* per part: the executor asked to parse it, or -1 */
  int *held;    /* per executor: parts it answered or was asked to parse */
  int holders;  /* 1 while the executors are asked for their kept parts */
  int nkept;    /* parts that came from kept copies */
  unsigned char *digests; /* an elastic job: per part its digest (32
                             bytes), else NULL */
  orion_progress prog; /* with o->progress: bytes (or parts) parsed */
  int64_t size;        /* the file's size on the driver's side, or -1 */
  int64_t done;        /* bytes of the parts that came, or parts */
  orion_load_result *parts;
  char **errs; /* per part: its error, or NULL */
  const char *given, *path; /* the path as the script gave it; absolute */
  int failed_oom; /* an executor failed, and its message found no memory */
  const orion_load_opts *o;
} load_run;

/* Whether every key of sparse a lies inside its dimensions and, when the
 * load gives them (o->have_dims), inside those: 0, or ORION_EPARSE with
 * why saying which element, dimension and key (1-based, as the user
 * counts). */
static int check_keys(const orion_array *a, const orion_load_opts *o,
                      char *why, size_t n) {
  int64_t lim[ORION_MAX_DIMS], e;
  int d;
  for (d = 0; d < a->ndims; d++) {
    if (a->dims[d] < 0) {
      snprintf(why, n, "with dimension %d of %lld", d + 1,
               (long long)a->dims[d]);
      return ORION_EPARSE;
    }
    lim[d] = a->dims[d];
    if (o != NULL && o->have_dims && o->dims[d] < lim[d])
      lim[d] = o->dims[d];
  }
  if (a->keys == NULL ||
      orion_key_check_all(a->ndims, lim, a->keys, a->nnz, &e, &d) == 0)
    return 0;
  snprintf(why, n,
           "whose element %lld has key %lld in dimension %d, outside "
           "1..%lld",
           (long long)e + 1, (long long)a->keys[e * a->ndims + d] + 1, d + 1,
           (long long)lim[d]);
  return ORION_EPARSE;
}

orion_array *orion_pload_part(const orion_msg_loaded_array *m,
                              const orion_load_opts *o, char *why, size_t n) {
  orion_error err;
  orion_array *a;
  orion_error_clear(&err);
  snprintf(why, n, "that does not make an array");
  if (m->keys_len == 0 && m->nnz > 0) { /* dense */
    a = orion_array_new_dense(m->ndims, m->dims, (orion_type)m->type, &err);
    if (a == NULL || a->nnz != m->nnz) {
      orion_array_release(a);
      return NULL;
    }
  } else {
    a = orion_array_new_sparse(m->ndims, (orion_type)m->type, &err);
    if (a == NULL || orion_array_reserve(a, m->nnz > 0 ? m->nnz : 1) != 0) {
      orion_array_release(a);
      return NULL;
    }
    if (m->keys_len > 0)
      memcpy(a->keys, m->keys, m->keys_len);
    a->nnz = m->nnz;
    memcpy(a->dims, m->dims, sizeof(int64_t) * (size_t)m->ndims);
  }
  if (m->values_len > 0)
    memcpy(a->values, m->values, m->values_len);
  if (check_keys(a, o, why, n) != 0) {
    orion_array_release(a);
    return NULL;
  }
  return a;
}

/* LOAD_FILE for range `part` of nparts, named by digest (NULL: none). */
static void put_load_file(orion_buf *b, const char *path, int part,
                          int nparts, const orion_load_opts *o,
                          const unsigned char *digest, int held_only) {
  orion_msg_load_file m;
  memset(&m, 0, sizeof m);
  m.path = path;
  m.path_len = strlen(path);
  m.part = part;
  m.nparts = nparts;
  m.opts = *o;
  m.digest = (const char *)digest;
  m.digest_len = digest != NULL ? ORION_MSG_LOAD_DIGEST : 0;
  m.held_only = held_only;
  orion_msg_load_file_encode(b, &m);
}

/* The digest of part p of the load: BLAKE2b of its LOAD_FILE (path,
 * part, parts, options, wire version) and of the file's size,
 * modification time, inode, device and change time as the driver sees
 * them. */
static int load_digest(const char *path, int p, int np,
                       const orion_load_opts *o, const struct stat *st,
                       unsigned char *out) {
  crypto_generichash_state h;
  int64_t id[6];
  orion_buf b;
  int rc;
  orion_buf_init(&b);
  put_load_file(&b, path, p, np, o, NULL, 0);
  id[0] = (int64_t)st->st_size;
  id[1] = (int64_t)st->st_mtim.tv_sec;
  id[2] = (int64_t)st->st_mtim.tv_nsec;
  id[3] = (int64_t)st->st_ino;
  id[4] = (int64_t)st->st_dev;
  id[5] = (int64_t)st->st_ctim.tv_sec;
  rc = b.oom ? -1 : 0;
  if (rc == 0) {
    crypto_generichash_init(&h, NULL, 0, ORION_MSG_LOAD_DIGEST);
    crypto_generichash_update(&h, (const unsigned char *)b.data, b.len);
    crypto_generichash_update(&h, (const unsigned char *)id, sizeof id);
    crypto_generichash_final(&h, out, ORION_MSG_LOAD_DIGEST);
  }
  orion_buf_free(&b);
  return rc;
}

/* Sends LOAD_FILE for part p to executor e: asking only for its kept copy
 * (held_only), or to parse it. */
static void ask(load_run *lr, int e, int p, int held_only) {
  orion_buf b;
  orion_buf_init(&b);
  put_load_file(&b, lr->path, p, lr->np, lr->o,
                lr->digests != NULL
                    ? lr->digests + (size_t)p * ORION_MSG_LOAD_DIGEST
                    : NULL,
                held_only);
  orion_cluster_send(lr->cl, e, &b);
  orion_buf_free(&b);
  lr->pending[e]++;
  if (!held_only) {
    lr->asked[p] = e;
    lr->held[e]++;
  }
}

/* Executor e's error as the user sees it (owned; NULL when out of
 * memory).  One that says it cannot open or read the file is a problem of
 * its host (the path is not there, or not the same file): it gets
 * "executor N on HOST: " in front and keeps the absolute path tried.
 * Others are the file's ("PATH:LINE: ...", the same on every host) and
 * name it as the script did. */
static char *executor_error(load_run *lr, int e, const char *msg,
                            size_t len) {
  orion_buf b;
  size_t pl = strlen(lr->path);
  orion_buf_init(&b);
  if (len >= 7 && memcmp(msg, "cannot ", 7) == 0) {
    char head[ORION_HOST_MAX + 48];
    snprintf(head, sizeof head, "executor %d on %s: ", e,
             orion_cluster_host(lr->cl, e));
    orion_buf_append(&b, head, strlen(head));
  } else if (len >= pl && memcmp(msg, lr->path, pl) == 0) {
    orion_buf_append(&b, lr->given, strlen(lr->given));
    msg += pl;
    len -= pl;
  }
  orion_buf_append(&b, msg, len);
  orion_buf_append(&b, "", 1);
  if (b.oom) {
    orion_buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* Whether LOADED m answers part p of this load (its digest). */
static int same_load(const load_run *lr, const orion_msg_loaded *m) {
  if (lr->digests == NULL)
    return m->digest_len == 0;
  return m->digest_len == ORION_MSG_LOAD_DIGEST &&
         memcmp(m->digest, lr->digests + (size_t)m->part * ORION_MSG_LOAD_DIGEST,
                ORION_MSG_LOAD_DIGEST) == 0;
}

static void on_loaded(void *ud, int e, const orion_wire_frame *f) {
  load_run *lr = ud;
  int p;
  orion_load_result *res;
  orion_msg_loaded m;
  orion_error err;
  orion_error_clear(&err);
  if (f->type != ORION_WIRE_LOADED)
    orion_cluster_fail(lr->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(lr->cl, e),
                       orion_wire_type_name(f->type));
  if (orion_msg_loaded_decode(f->payload, f->len, &m, &err) != 0)
    orion_cluster_fail(lr->cl, "executor %d (%s) sent a malformed LOADED "
                               "frame: %s",
                       e, orion_cluster_addr(lr->cl, e),
                       strncmp(err.msg, "LOADED payload: ", 16) == 0
                           ? err.msg + 16
                           : err.msg);
  /* The part it answers, which it was asked for (by the digest the
   * driver gave that part, in an elastic job). */
  p = (int)m.part;
  if (m.part < 0 || m.part >= lr->np || lr->pending[e] == 0 ||
      (!lr->holders && lr->asked[(size_t)m.part] != e) || !same_load(lr, &m))
    orion_cluster_fail(lr->cl, "executor %d (%s) sent a LOADED frame for a "
                               "part of %s it was not asked for",
                       e, orion_cluster_addr(lr->cl, e), lr->given);
  lr->pending[e]--;
  if (!lr->holders)
    lr->asked[p] = -1; /* answered: a second answer is refused */
  res = &lr->parts[p];
  if (lr->holders) {
    /* Asked for its kept copy: a part it does not hold (or cannot answer
     * from it), or that another holder sent first, is left out. */
    if (!m.ok || res->array != NULL)
      return;
    lr->held[e]++;
    lr->nkept++;
  }
  if (!m.ok) {
    lr->errs[p] = executor_error(lr, e, m.msg != NULL ? m.msg : "",
                                 m.msg_len);
    lr->failed_oom |= lr->errs[p] == NULL;
  } else {
    char why[160];
    res->array = orion_pload_part(&m.array, lr->o, why, sizeof why);
    if (res->array == NULL)
      orion_cluster_fail(lr->cl, "executor %d (%s) sent a LOADED frame for "
                                 "%s %s",
                         e, orion_cluster_addr(lr->cl, e), lr->given, why);
    if (m.has_labels &&
        (res->labels = orion_pload_part(&m.labels, NULL, why, sizeof why)) ==
            NULL)
      orion_cluster_fail(lr->cl, "executor %d (%s) sent a LOADED frame for "
                                 "%s with labels %s",
                         e, orion_cluster_addr(lr->cl, e), lr->given, why);
    res->row_lo = m.row_lo;
    res->lines = m.lines;
    res->skipped = m.skipped;
    snprintf(res->first_skip, sizeof res->first_skip, "%.*s",
             (int)m.first_skip_len,
             m.first_skip != NULL ? m.first_skip : "");
  }
  lr->got++;
  /* Part p is bytes [size*p/np, size*(p+1)/np) of the file (exec_load.c). */
  lr->done += lr->size < 0 ? 1
                           : lr->size * (p + 1) / lr->np - lr->size * p / lr->np;
}

/* Called after every event while the driver waits: the progress line. */
static int all_loaded(void *ud) {
  load_run *lr = ud;
  int e;
  orion_progress_update(&lr->prog, lr->done);
  for (e = 0; e < lr->n; e++)
    if (lr->pending[e] > 0)
      return 0;
  return 1;
}

/* path made absolute against the driver's current folder: executors
 * started elsewhere (ssh runs them in the remote home) read the same path
 * the driver means.  Copies an absolute path as it is. */
static int absolute(const char *path, char *out, size_t n, orion_error *err) {
  char cwd[4096];
  int w;
  if (path[0] == '/' || path[0] == '\0')
    w = snprintf(out, n, "%s", path);
  else if (getcwd(cwd, sizeof cwd) == NULL)
    return orion_error_set(err, -errno, "%s: cannot tell the current "
                           "folder to make the path absolute: %s", path,
                           strerror(errno));
  else
    w = snprintf(out, n, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
  if (w < 0 || (size_t)w >= n)
    return orion_error_set(err, ORION_EINVAL, "%s: path too long", path);
  return 0;
}

int orion_pload(orion_cluster *cl, const char *given,
                const orion_load_opts *o, orion_load_result *res,
                orion_error *err) {
  load_run lr;
  char doing[512], path[4096];
  int e, p, basis, keep, rc = 0;
  int64_t part_bytes = PART_BYTES;
  const char *env = getenv("ORION_TEST_LOAD_PART_BYTES");
  struct stat st;
  if ((rc = absolute(given, path, sizeof path, err)) != 0)
    return rc;
  if (env != NULL && atoll(env) > 0)
    part_bytes = atoll(env);
  memset(&lr, 0, sizeof lr);
  lr.cl = cl;
  lr.given = given;
  lr.path = path;
  lr.o = o;
  lr.n = orion_cluster_size(cl);
  /* An elastic job cuts its files for its first executors (the parts the
   * survivors of a re-forming keep). */
  basis = orion_cluster_load_parts(cl) > 0 ? orion_cluster_load_parts(cl)
                                           : lr.n;
  /* The executors see the same file (a shared file system) or its copy:
   * the driver's size, where it has one, stands for theirs. */
  lr.size = stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
  lr.np = basis;
  if (lr.size > (int64_t)basis * part_bytes) {
    int64_t np = (lr.size + part_bytes - 1) / part_bytes;
    lr.np = np < INT32_MAX / 2 ? (int)np : INT32_MAX / 2;
  }
  lr.parts = orion_calloc((size_t)lr.np, sizeof *lr.parts);
  lr.errs = orion_calloc((size_t)lr.np, sizeof *lr.errs);
  lr.asked = orion_calloc((size_t)lr.np, sizeof *lr.asked);
  lr.pending = orion_calloc((size_t)lr.n, sizeof *lr.pending);
  lr.held = orion_calloc((size_t)lr.n, sizeof *lr.held);
  /* (ORION_NO_KEPT=1: no part named, none kept; to compare,
   * bench/elastic.sh) */
  keep = orion_cluster_load_parts(cl) > 0 && lr.size >= 0 &&
         (getenv("ORION_NO_KEPT") == NULL ||
          strcmp(getenv("ORION_NO_KEPT"), "1") != 0);
  if (keep)
    lr.digests = orion_calloc((size_t)lr.np, ORION_MSG_LOAD_DIGEST);
  for (p = 0; lr.asked != NULL && p < lr.np; p++)
    lr.asked[p] = -1;
  for (e = 0; lr.digests != NULL && e < lr.np; e++)
    if (load_digest(path, e, lr.np, o, &st,
                    lr.digests + (size_t)e * ORION_MSG_LOAD_DIGEST) != 0) {
      orion_free(lr.digests);
      lr.digests = NULL;
    }
  if (lr.parts == NULL || lr.errs == NULL || lr.asked == NULL ||
      lr.pending == NULL || lr.held == NULL ||
      (keep && lr.digests == NULL)) {
    orion_free(lr.parts);
    orion_free(lr.errs);
    orion_free(lr.asked);
    orion_free(lr.pending);
    orion_free(lr.held);
    orion_free(lr.digests);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  snprintf(doing, sizeof doing, "while loading %s", given);
  if (lr.np > lr.n)
    orion_log_detail("%s: %lld bytes, loaded in %d parts of at most %lld "
                     "bytes on %d executors",
                     given, (long long)lr.size, lr.np, (long long)part_bytes,
                     lr.n);
  {
    char label[96];
    snprintf(label, sizeof label, "loading %s", given);
    orion_progress_start(&lr.prog, label, lr.size < 0 ? "parts" : NULL,
                         lr.size < 0 ? lr.np : lr.size);
    lr.prog.enabled = lr.prog.enabled && o->progress;
  }
  orion_cluster_set_handler(cl, on_loaded, &lr, doing);
  if (lr.digests != NULL && orion_cluster_reformed(cl)) {
    /* First the parts the executors kept from before the re-forming. */
    lr.holders = 1;
    for (p = 0; p < lr.np; p++)
      for (e = 0; e < lr.n; e++)
        ask(&lr, e, p, 1);
    orion_cluster_wait(cl, all_loaded, &lr);
    lr.holders = 0;
  }
  /* Each part nobody sent to the executor with the fewest parts (in turn
   * when none kept any: part p to executor p mod n). */
  for (p = 0; p < lr.np; p++) {
    int best = 0;
    if (lr.parts[p].array != NULL)
      continue;
    for (e = 1; e < lr.n; e++)
      if (lr.held[e] < lr.held[best])
        best = e;
    ask(&lr, best, p, 0);
  }
  orion_cluster_wait(cl, all_loaded, &lr);
  orion_progress_end(&lr.prog);
  if (orion_cluster_reformed(cl) && lr.digests != NULL)
    orion_log_info("%s: %d of its %d parts were kept by the executors that "
                   "held them, %d parsed again",
                   given, lr.nkept, lr.np, lr.np - lr.nkept);
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  /* The first range's error is the one a whole load reports first. */
  for (e = 0; e < lr.np && rc == 0; e++)
    if (lr.errs[e] != NULL)
      rc = orion_error_set(err, ORION_EPARSE, "%s", lr.errs[e]);
  if (rc == 0 && lr.failed_oom)
    rc = orion_error_set(err, ORION_ENOMEM, "loading %s: out of memory",
                         given);
  if (rc == 0)
    rc = orion_load_merge(lr.parts, lr.np, o, res, err);
  for (e = 0; e < lr.np; e++) {
    orion_array_release(lr.parts[e].array);
    orion_array_release(lr.parts[e].labels);
    orion_free(lr.errs[e]);
  }
  orion_free(lr.parts);
  orion_free(lr.errs);
  orion_free(lr.asked);
  orion_free(lr.pending);
  orion_free(lr.held);
  orion_free(lr.digests);
  return rc;
}
