/* orion-executor: one worker process of an Orion-C job.
 *
 *   orion-executor --driver HOST:PORT [--token T] [--id N] [--bind ADDR]
 *
 * The token comes from --token or, better (ps shows arguments), from
 * $ORION_TOKEN.
 *
 * It connects to the driver, proves it holds the job's token (HELLO), and
 * then serves the driver until told to stop.  Two threads:
 *   - the main thread runs a libuv loop: it reads and writes frames,
 *     sends a heartbeat every second and watches the driver's;
 *   - the compute thread owns the Lua state and every array copy: it takes
 *     the driver's requests (load a body, run a block, end a loop, parse
 *     part of a file) in order and queues its answers back to the loop.
 * So the next block's data arrives while the current block computes.
 *
 * The executor never outlives its job: when the driver's connection closes
 * or the driver stays silent past the heartbeat timeout, it exits at once
 * (code 3).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "drivers/launch.h"
#include "dsm/array.h"
#include "drivers/exec_load.h"
#include "dsm/loader.h"
#include "dsm/net.h"
#include "dsm/proto.h"
#include "dsm/types.h"
#include "dsm/wire.h"
#include "lua/exec.h"
#include "util/alloc.h"
#include "util/clock.h"

#define EXIT_CLUSTER 3

/* ---- requests from the loop thread to the compute thread --------------- */

typedef struct job {
  struct job *next;
  int type;
  char *payload; /* orion_malloc'd, may be NULL */
  size_t len;
} job;

/* A dense array copy this executor holds (a replica of the driver's array;
 * only the parts the driver sent are meaningful). */
typedef struct replica {
  int64_t id;
  orion_array *a;
} replica;

/* One block of a sparse iterated array, as the driver sent it. */
typedef struct blockcopy {
  int64_t array, block;
  orion_array *a;
} blockcopy;

static struct {
  int id;
  char host[256];
  int port;
  const char *token;
  const char *bind;
  double hb_timeout;
  uv_loop_t *loop;
  orion_conn *conn;
  uv_async_t wake;
  uv_timer_t hb;
  uint64_t hb_seq;
  int welcomed;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  job *head, *tail; /* to the compute thread */
  orion_buf out;    /* frames from the compute thread */
  int stop;

  /* Compute-thread state. */
  orion_exec *ex;
  replica *reps;
  int nreps;
  blockcopy *blocks;
  int nblocks;
  int64_t iter_id;
  int iter_sparse;
  orion_type iter_type;
  int iter_ndims;
  int64_t iter_dims[ORION_MAX_DIMS];
  int64_t *bound; /* array ids bound for the current loop */
  int nbound;
  int64_t *bufs; /* buffer ids bound for the current loop */
  int nbufs;
  int64_t *accs;
  int naccs;
  int failed; /* a body failed in this loop: skip its remaining blocks */
} X;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "orion-executor %d: ", X.id);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  _exit(EXIT_CLUSTER);
}

/* Hands finished frames to the loop thread (compute thread). */
static void post(orion_buf *b) {
  if (b->oom)
    die("out of memory building a reply");
  pthread_mutex_lock(&X.mu);
  if (X.out.len == 0) {
    orion_buf t = X.out;
    X.out = *b;
    *b = t;
  } else {
    orion_buf_append(&X.out, b->data, b->len);
  }
  pthread_mutex_unlock(&X.mu);
  b->len = 0;
  uv_async_send(&X.wake);
}

/* A body or loop error; block is the block it happened in (-1: none). */
static void post_error(int64_t block, const char *msg) {
  orion_buf b;
  orion_wire_body_error e;
  char where[32];
  orion_buf_init(&b);
  memset(&e, 0, sizeof e);
  e.executor = (uint32_t)X.id;
  snprintf(where, sizeof where, "%lld", (long long)block);
  e.key = where;
  e.key_len = strlen(where);
  e.msg = msg;
  e.msg_len = strlen(msg);
  if (e.msg_len > 60000)
    e.msg_len = 60000;
  orion_wire_body_error_encode(&b, &e);
  post(&b);
  orion_buf_free(&b);
}

/* ---- array copies ------------------------------------------------------- */

static replica *find_replica(int64_t id) {
  int i;
  for (i = 0; i < X.nreps; i++)
    if (X.reps[i].id == id)
      return &X.reps[i];
  return NULL;
}

static void drop_replica(int64_t id) {
  replica *r = find_replica(id);
  int i;
  if (r != NULL) {
    orion_array_release(r->a);
    *r = X.reps[--X.nreps];
  }
  for (i = 0; i < X.nblocks;)
    if (X.blocks[i].array == id) {
      orion_array_release(X.blocks[i].a);
      X.blocks[i] = X.blocks[--X.nblocks];
    } else {
      i++;
    }
}

static int same_shape(const orion_array *a, orion_type type, int ndims,
                      const int64_t *dims) {
  int i;
  if (a->type != type || a->ndims != ndims || a->sparse)
    return 0;
  for (i = 0; i < ndims; i++)
    if (a->dims[i] != dims[i])
      return 0;
  return 1;
}

/* The replica of array id with this shape, made (zero-filled) when it is
 * missing or has another shape. */
static orion_array *replica_for(int64_t id, orion_type type, int ndims,
                                const int64_t *dims, orion_error *err) {
  replica *r = find_replica(id), *nr;
  orion_array *a;
  if (r != NULL && same_shape(r->a, type, ndims, dims))
    return r->a;
  if (r != NULL)
    drop_replica(id);
  a = orion_array_new_dense(ndims, dims, type, err);
  if (a == NULL)
    return NULL;
  nr = orion_realloc(X.reps, sizeof *nr * (size_t)(X.nreps + 1));
  if (nr == NULL) {
    orion_array_release(a);
    orion_error_set(err, ORION_ENOMEM, "out of memory");
    return NULL;
  }
  X.reps = nr;
  X.reps[X.nreps].id = id;
  X.reps[X.nreps].a = a;
  X.nreps++;
  return a;
}

static blockcopy *find_block(int64_t array, int64_t block) {
  int i;
  for (i = 0; i < X.nblocks; i++)
    if (X.blocks[i].array == array && X.blocks[i].block == block)
      return &X.blocks[i];
  return NULL;
}

/* Stores the elements of a sparse block (replacing an older copy). */
static orion_array *store_block(int64_t block, int64_t n, const char *keys,
                                const char *values, orion_error *err) {
  blockcopy *bc = find_block(X.iter_id, block);
  orion_array *a = orion_array_new_sparse(X.iter_ndims, X.iter_type, err);
  size_t esz = orion_type_size(X.iter_type);
  int i;
  if (a == NULL)
    return NULL;
  if (orion_array_reserve(a, n > 0 ? n : 1) != 0) {
    orion_array_release(a);
    orion_error_set(err, ORION_ENOMEM, "out of memory for a block");
    return NULL;
  }
  memcpy(a->keys, keys, (size_t)n * (size_t)X.iter_ndims * sizeof(int64_t));
  memcpy(a->values, values, (size_t)n * esz);
  a->nnz = n;
  for (i = 0; i < X.iter_ndims; i++)
    a->dims[i] = X.iter_dims[i];
  if (bc == NULL) {
    blockcopy *nb =
        orion_realloc(X.blocks, sizeof *nb * (size_t)(X.nblocks + 1));
    if (nb == NULL) {
      orion_array_release(a);
      orion_error_set(err, ORION_ENOMEM, "out of memory");
      return NULL;
    }
    X.blocks = nb;
    bc = &X.blocks[X.nblocks++];
    bc->array = X.iter_id;
    bc->block = block;
  } else {
    orion_array_release(bc->a);
  }
  bc->a = a;
  return a;
}

/* ---- loading a body ----------------------------------------------------- */

static int push_id(int64_t **v, int *n, int64_t id) {
  int64_t *nv = orion_realloc(*v, sizeof *nv * (size_t)(*n + 1));
  if (nv == NULL)
    return ORION_ENOMEM;
  nv[(*n)++] = id;
  *v = nv;
  return 0;
}

static void unbind_loop(void) {
  int i;
  for (i = 0; i < X.nbufs; i++)
    orion_exec_unbind_buffer(X.ex, X.bufs[i]);
  for (i = 0; i < X.nbound; i++)
    orion_exec_unbind_array(X.ex, X.bound[i]);
  X.nbufs = X.nbound = X.naccs = 0;
}

/* Buffered writes go to the driver, which applies them to the array. */
static int flush_sink(void *ud, int64_t id, int isint,
                      const orion_pend_item *items, int64_t n,
                      orion_error *err) {
  orion_buf b;
  size_t at;
  int64_t i;
  (void)ud;
  orion_buf_init(&b);
  at = orion_wire_begin(&b, ORION_WIRE_BUFFER_FLUSH);
  orion_pw_i64(&b, id);
  orion_buf_u64(&b, (uint64_t)isint);
  orion_buf_u64(&b, (uint64_t)n);
  for (i = 0; i < n; i++) {
    orion_pw_i64(&b, items[i].key);
    orion_buf_u64(&b, (uint64_t)items[i].val.i);
  }
  if (orion_wire_end(&b, at) != 0) {
    orion_buf_free(&b);
    return orion_error_set(err, ORION_EINVAL,
                           "executor %d: buffer #%lld: %lld pending writes "
                           "exceed the largest frame",
                           X.id, (long long)id, (long long)n);
  }
  post(&b);
  orion_buf_free(&b);
  return 0;
}

static int load_body(const char *p, size_t n, orion_error *err) {
  orion_reader r;
  const char *blob;
  size_t blen;
  int64_t loop, k, cnt;
  int rc = 0;
  unbind_loop();
  X.failed = 0;
  orion_reader_init(&r, p, n);
  loop = orion_pr_i64(&r);
  blob = orion_pr_bytes(&r, &blen);
  X.iter_id = orion_pr_i64(&r);
  X.iter_sparse = 0;
  cnt = orion_pr_count(&r, 32);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    int64_t id = orion_pr_i64(&r), type = orion_pr_i64(&r);
    int64_t sparse = orion_pr_i64(&r), nd = orion_pr_i64(&r), dims[8];
    int d;
    orion_array *a;
    if (nd < 1 || nd > ORION_MAX_DIMS || type < 0 || type > ORION_I64) {
      r.bad = 1;
      break;
    }
    for (d = 0; d < nd; d++)
      dims[d] = orion_pr_i64(&r);
    if (r.bad)
      break;
    if (sparse) {
      /* The iterated sparse array: its blocks arrive with RUN_BLOCK.  A
       * placeholder is bound in case the body names it. */
      X.iter_sparse = 1;
      X.iter_type = (orion_type)type;
      X.iter_ndims = (int)nd;
      memcpy(X.iter_dims, dims, sizeof(int64_t) * (size_t)nd);
      a = orion_array_new_sparse((int)nd, (orion_type)type, err);
      if (a == NULL)
        return err->code;
      memcpy(a->dims, dims, sizeof(int64_t) * (size_t)nd);
      rc = orion_exec_bind_array(X.ex, id, a);
      orion_array_release(a);
    } else {
      a = replica_for(id, (orion_type)type, (int)nd, dims, err);
      if (a == NULL)
        return err->code;
      rc = orion_exec_bind_array(X.ex, id, a);
    }
    if (rc == 0)
      rc = push_id(&X.bound, &X.nbound, id);
  }
  cnt = orion_pr_count(&r, 16);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    int64_t id = orion_pr_i64(&r), op = orion_pr_i64(&r);
    rc = orion_exec_bind_acc(X.ex, id, (orion_acc_op)op);
    if (rc == 0)
      rc = push_id(&X.accs, &X.naccs, id);
  }
  cnt = orion_pr_count(&r, 48);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++) {
    int64_t id = orion_pr_i64(&r), target, op, flush;
    size_t nlen, alen;
    const char *name = orion_pr_bytes(&r, &nlen), *ablob;
    char nm[64];
    target = orion_pr_i64(&r);
    op = orion_pr_i64(&r);
    ablob = orion_pr_bytes(&r, &alen);
    flush = orion_pr_i64(&r);
    if (r.bad)
      break;
    snprintf(nm, sizeof nm, "%.*s", (int)(nlen < 63 ? nlen : 63),
             name != NULL ? name : "");
    rc = orion_exec_bind_buffer(X.ex, id, nm, target, (orion_apply_op)op,
                                alen > 0 ? ablob : NULL, alen, flush, err);
    if (rc == 0)
      rc = push_id(&X.bufs, &X.nbufs, id);
  }
  if (r.bad || r.left != 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: malformed LOAD_BODY frame", X.id);
  if (rc != 0) {
    if (err->msg[0] == '\0')
      orion_error_set(err, rc, "executor %d: cannot bind the loop: %s", X.id,
                      orion_strerror(rc));
    return rc;
  }
  return orion_exec_load(X.ex, loop, blob, blen, err);
}

/* ---- running a block ---------------------------------------------------- */

typedef struct watch {
  orion_array *a;
  int64_t id, first, count;
  char *before;
} watch;

/* Appends runs of the elements of w that differ from the snapshot.  Only
 * changed elements are sent: an unchanged element between two changed
 * ones may be another executor's to write in this clock, so sending our
 * stale copy of it would undo that write. */
static int64_t emit_changes(orion_buf *b, const watch *w) {
  size_t esz = orion_type_size(w->a->type);
  const char *now = (const char *)w->a->values + (size_t)w->first * esz;
  int64_t i = 0, runs = 0;
  while (i < w->count) {
    int64_t j;
    if (memcmp(now + (size_t)i * esz, w->before + (size_t)i * esz, esz) ==
        0) {
      i++;
      continue;
    }
    j = i + 1;
    while (j < w->count &&
           memcmp(now + (size_t)j * esz, w->before + (size_t)j * esz, esz) !=
               0)
      j++;
    orion_pw_i64(b, w->id);
    orion_pw_i64(b, w->first + i);
    orion_pw_i64(b, j - i);
    orion_pw_bytes(b, now + (size_t)i * esz, (size_t)(j - i) * esz);
    runs++;
    i = j;
  }
  return runs;
}

static int run_block(const char *p, size_t n, orion_error *err) {
  orion_reader r;
  int64_t block, nblocks, nsegs, k, cnt, nwatch = 0;
  uint64_t seed;
  const char *segs = NULL;
  orion_array *it = NULL;
  char *before_vals = NULL;
  watch *w = NULL;
  int rc = 0;
  double t0 = orion_now();
  orion_buf b;
  size_t at, nruns_at;
  int64_t nruns = 0;

  orion_reader_init(&r, p, n);
  block = orion_pr_i64(&r);
  seed = (uint64_t)orion_pr_i64(&r);
  nblocks = orion_pr_i64(&r);
  nsegs = orion_pr_count(&r, 16);
  if (orion_reader_bytes(&r, (size_t)nsegs * 16, &segs) != 0)
    r.bad = 1;
  if (orion_pr_i64(&r) == 1 && !r.bad) { /* the sparse block's elements */
    int64_t ne = orion_pr_i64(&r);
    size_t kl, vl;
    const char *keys = orion_pr_bytes(&r, &kl), *vals = orion_pr_bytes(&r, &vl);
    if (r.bad || !X.iter_sparse || ne < 0 ||
        kl != (size_t)ne * (size_t)X.iter_ndims * 8 ||
        vl != (size_t)ne * orion_type_size(X.iter_type))
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed block elements", X.id);
    if (store_block(block, ne, keys, vals, err) == NULL)
      return err->code;
  }
  cnt = orion_pr_count(&r, 32);
  for (k = 0; k < cnt && !r.bad; k++) { /* data for the array copies */
    int64_t id = orion_pr_i64(&r), first = orion_pr_i64(&r);
    int64_t count = orion_pr_i64(&r);
    size_t len;
    const char *data = orion_pr_bytes(&r, &len);
    replica *rp = find_replica(id);
    size_t esz;
    if (r.bad || rp == NULL)
      break;
    esz = orion_type_size(rp->a->type);
    if (first < 0 || count < 0 || first > rp->a->nnz ||
        count > rp->a->nnz - first || len != (size_t)count * esz) {
      r.bad = 1;
      break;
    }
    memcpy((char *)rp->a->values + (size_t)first * esz, data, len);
  }
  cnt = orion_pr_count(&r, 24);
  if (!r.bad && cnt > 0) {
    w = orion_calloc((size_t)cnt, sizeof *w);
    if (w == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (k = 0; k < cnt && !r.bad; k++) { /* ranges the block may write */
    watch *x = &w[nwatch];
    replica *rp;
    size_t esz;
    x->id = orion_pr_i64(&r);
    x->first = orion_pr_i64(&r);
    x->count = orion_pr_i64(&r);
    rp = find_replica(x->id);
    if (r.bad || rp == NULL || x->first < 0 || x->count < 0 ||
        x->first > rp->a->nnz || x->count > rp->a->nnz - x->first) {
      r.bad = 1;
      break;
    }
    x->a = rp->a;
    esz = orion_type_size(rp->a->type);
    x->before = orion_malloc((size_t)x->count * esz + 1);
    if (x->before == NULL) {
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
      break;
    }
    memcpy(x->before, (char *)rp->a->values + (size_t)x->first * esz,
           (size_t)x->count * esz);
    nwatch++;
  }
  if (rc == 0 && (r.bad || r.left != 0))
    rc = orion_error_set(err, ORION_EPARSE,
                         "executor %d: malformed RUN_BLOCK frame", X.id);
  if (rc == 0 && X.iter_sparse) {
    blockcopy *bc = find_block(X.iter_id, block);
    if (bc == NULL)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: block %lld was never sent", X.id,
                           (long long)block);
    else
      it = bc->a;
  } else if (rc == 0) {
    replica *rp = find_replica(X.iter_id);
    it = rp != NULL ? rp->a : NULL;
    if (it == NULL)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: the iterated array is not bound",
                           X.id);
  }
  if (rc == 0 && X.iter_sparse) {
    size_t vl = (size_t)it->nnz * orion_type_size(it->type);
    rc = orion_exec_bind_array(X.ex, X.iter_id, it);
    before_vals = orion_malloc(vl + 1);
    if (before_vals == NULL)
      rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
    else
      memcpy(before_vals, it->values, vl);
  }
  for (k = 0; k < nsegs && rc == 0; k++) {
    int64_t lo, hi;
    memcpy(&lo, segs + k * 16, 8);
    memcpy(&hi, segs + k * 16 + 8, 8);
    rc = orion_exec_run(X.ex, X.iter_id, lo, hi, seed, block + k * nblocks,
                        err);
  }
  if (rc == 0)
    rc = orion_exec_flush(X.ex, 0, err);

  if (rc == 0) {
    orion_buf_init(&b);
    at = orion_wire_begin(&b, ORION_WIRE_BLOCK_DONE);
    orion_pw_i64(&b, block);
    orion_pw_f64(&b, orion_now() - t0);
    if (X.iter_sparse &&
        memcmp(before_vals, it->values,
               (size_t)it->nnz * orion_type_size(it->type)) != 0) {
      orion_buf_u64(&b, 1);
      orion_pw_bytes(&b, it->values,
                     (size_t)it->nnz * orion_type_size(it->type));
    } else {
      orion_buf_u64(&b, 0);
    }
    nruns_at = b.len;
    orion_buf_u64(&b, 0);
    for (k = 0; k < nwatch; k++)
      nruns += emit_changes(&b, &w[k]);
    if (!b.oom) {
      unsigned char *q = (unsigned char *)b.data + nruns_at;
      int i;
      for (i = 0; i < 8; i++)
        q[i] = (unsigned char)((uint64_t)nruns >> (8 * i));
    }
    if (orion_wire_end(&b, at) != 0)
      rc = orion_error_set(err, ORION_EINVAL,
                           "executor %d: block %lld changed more data than "
                           "the largest frame holds",
                           X.id, (long long)block);
    else
      post(&b);
    orion_buf_free(&b);
  }
  for (k = 0; k < nwatch; k++)
    orion_free(w[k].before);
  orion_free(w);
  orion_free(before_vals);
  return rc;
}

static void end_loop(const char *p, size_t n) {
  orion_reader r;
  orion_error err;
  orion_buf b;
  size_t at;
  int i, abort_loop;
  orion_reader_init(&r, p, n);
  abort_loop = orion_pr_i64(&r) != 0 || X.failed;
  orion_error_clear(&err);
  if (!abort_loop && orion_exec_flush(X.ex, 1, &err) != 0)
    post_error(-1, err.msg);
  orion_buf_init(&b);
  at = orion_wire_begin(&b, ORION_WIRE_LOOP_DONE);
  orion_buf_u64(&b, (uint64_t)X.naccs);
  for (i = 0; i < X.naccs; i++) {
    orion_accval v;
    memset(&v, 0, sizeof v);
    orion_exec_take_acc(X.ex, X.accs[i], &v);
    orion_pw_i64(&b, X.accs[i]);
    orion_buf_u64(&b, (uint64_t)v.has);
    orion_buf_u64(&b, (uint64_t)v.isint);
    orion_pw_i64(&b, (int64_t)v.i);
    orion_pw_f64(&b, (double)v.d);
  }
  orion_wire_end(&b, at);
  unbind_loop();
  post(&b);
  orion_buf_free(&b);
}

static void forget(const char *p, size_t n) {
  orion_reader r;
  int64_t k, cnt;
  orion_reader_init(&r, p, n);
  cnt = orion_pr_count(&r, 8);
  for (k = 0; k < cnt && !r.bad; k++)
    drop_replica(orion_pr_i64(&r));
}

static void *compute_main(void *arg) {
  (void)arg;
  for (;;) {
    job *j;
    orion_error err;
    pthread_mutex_lock(&X.mu);
    while (X.head == NULL && !X.stop)
      pthread_cond_wait(&X.cv, &X.mu);
    if (X.stop) {
      pthread_mutex_unlock(&X.mu);
      return NULL;
    }
    j = X.head;
    X.head = j->next;
    if (X.head == NULL)
      X.tail = NULL;
    pthread_mutex_unlock(&X.mu);

    orion_error_clear(&err);
    switch (j->type) {
    case ORION_WIRE_LOAD_BODY:
      if (load_body(j->payload, j->len, &err) != 0) {
        X.failed = 1;
        post_error(-1, err.msg);
      }
      break;
    case ORION_WIRE_RUN_BLOCK:
      if (!X.failed && run_block(j->payload, j->len, &err) != 0) {
        int64_t block = -1;
        if (j->len >= 8)
          memcpy(&block, j->payload, 8); /* its first field */
        X.failed = 1;
        post_error(block, err.msg);
      }
      break;
    case ORION_WIRE_LOOP_END:
      end_loop(j->payload, j->len);
      break;
    case ORION_WIRE_FORGET:
      forget(j->payload, j->len);
      break;
    case ORION_WIRE_LOAD_FILE: {
      orion_buf b;
      orion_buf_init(&b);
      orion_executor_load_range(j->payload, j->len, &b);
      post(&b);
      orion_buf_free(&b);
      break;
    }
    default:
      break;
    }
    orion_free(j->payload);
    orion_free(j);
  }
}

/* ---- the loop thread ---------------------------------------------------- */

static void on_wake(uv_async_t *h) {
  orion_buf b;
  (void)h;
  pthread_mutex_lock(&X.mu);
  b = X.out;
  orion_buf_init(&X.out);
  pthread_mutex_unlock(&X.mu);
  if (X.conn != NULL)
    orion_conn_send(X.conn, &b);
  orion_buf_free(&b);
}

static void send_heartbeat(void) {
  orion_buf b;
  orion_wire_heartbeat h;
  h.executor = (uint32_t)X.id;
  h.seq = ++X.hb_seq;
  h.sent_ns = uv_hrtime();
  h.mem_used = orion_alloc_used();
  orion_buf_init(&b);
  orion_wire_heartbeat_encode(&b, &h);
  orion_conn_send(X.conn, &b);
  orion_buf_free(&b);
}

static void on_tick(uv_timer_t *t) {
  (void)t;
  if (X.conn == NULL)
    return;
  if (orion_now() - X.conn->last_rx > X.hb_timeout)
    die("the driver at %s:%d has been silent for %.0f s; exiting", X.host,
        X.port, X.hb_timeout);
  if (X.welcomed)
    send_heartbeat();
}

static void on_frame(orion_conn *c, const orion_wire_frame *f) {
  job *j;
  switch (f->type) {
  case ORION_WIRE_WELCOME:
    X.welcomed = 1;
    return;
  case ORION_WIRE_HEARTBEAT:
    return;
  case ORION_WIRE_SHUTDOWN:
    fflush(stderr);
    _exit(0);
  case ORION_WIRE_LOAD_BODY:
  case ORION_WIRE_RUN_BLOCK:
  case ORION_WIRE_LOOP_END:
  case ORION_WIRE_FORGET:
  case ORION_WIRE_LOAD_FILE:
    break;
  default:
    orion_conn_close(c, "unexpected %s frame from the driver",
                     orion_wire_type_name(f->type));
    return;
  }
  j = orion_calloc(1, sizeof *j);
  if (j == NULL)
    die("out of memory");
  j->type = f->type;
  j->payload = orion_wire_decoder_take(&c->dec, &j->len);
  pthread_mutex_lock(&X.mu);
  if (X.tail != NULL)
    X.tail->next = j;
  else
    X.head = j;
  X.tail = j;
  pthread_cond_signal(&X.cv);
  pthread_mutex_unlock(&X.mu);
}

static void on_connected(orion_conn *c) {
  orion_buf b;
  orion_wire_hello h;
  char addr[128];
  memset(&h, 0, sizeof h);
  h.token = X.token;
  h.token_len = strlen(X.token);
  h.executor = (uint32_t)X.id;
  snprintf(addr, sizeof addr, "%s", X.bind != NULL ? X.bind : "");
  h.addr = addr;
  h.addr_len = strlen(addr);
  orion_buf_init(&b);
  if (orion_wire_hello_encode(&b, &h) != 0)
    die("cannot encode the HELLO (token too long?)");
  orion_conn_send(c, &b);
  orion_buf_free(&b);
}

static void on_closed(orion_conn *c, const char *reason) {
  (void)c;
  X.conn = NULL;
  die("lost the driver at %s:%d: %s", X.host, X.port, reason);
}

static const char usage[] =
    "usage: orion-executor --driver HOST:PORT [--token TOKEN] [--id N]\n"
    "                      [--bind ADDR]\n"
    "\n"
    "A worker of an Orion-C job; orion-driver starts these (or prints the\n"
    "command for --launcher manual).  It exits when the driver goes away.\n"
    "  --driver HOST:PORT  the driver's address\n"
    "  --token TOKEN       the job's token (default: $ORION_TOKEN, which\n"
    "                      keeps it out of `ps`)\n"
    "  --id N              this executor's number in the job (default 0)\n"
    "  --bind ADDR         connect from this local address\n";

int main(int argc, char **argv) {
  const char *driver = NULL, *env;
  pthread_t thr;
  orion_conn_cbs cbs;
  char msg[256];
  int i;

  X.token = getenv("ORION_TOKEN");
  X.hb_timeout = 10;
  env = getenv("ORION_HEARTBEAT_TIMEOUT");
  if (env != NULL && atof(env) > 0)
    X.hb_timeout = atof(env);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (v == NULL) {
      fprintf(stderr, "orion-executor: unknown or incomplete option '%s'\n%s",
              a, usage);
      return 2;
    }
    if (strcmp(a, "--driver") == 0)
      driver = v;
    else if (strcmp(a, "--token") == 0)
      X.token = v;
    else if (strcmp(a, "--bind") == 0)
      X.bind = v;
    else if (strcmp(a, "--id") == 0) {
      char *end;
      long id = strtol(v, &end, 10);
      if (*end != '\0' || id < 0 || id > 1000000) {
        fprintf(stderr, "orion-executor: --id: not a number: '%s'\n", v);
        return 2;
      }
      X.id = (int)id;
    } else {
      fprintf(stderr, "orion-executor: unknown option '%s'\n%s", a, usage);
      return 2;
    }
    i++;
  }
  if (driver == NULL || X.token == NULL || X.token[0] == '\0') {
    fprintf(stderr, "orion-executor: --driver and --token are required\n%s",
            usage);
    return 2;
  }
  if (orion_hostport_parse(driver, X.host, sizeof X.host, &X.port) != 0 ||
      X.port <= 0) {
    fprintf(stderr, "orion-executor: --driver: expected HOST:PORT, got '%s'\n",
            driver);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  X.ex = orion_exec_new(X.id);
  if (X.ex == NULL)
    die("out of memory");
  orion_exec_set_flush_sink(X.ex, flush_sink, NULL);
  orion_buf_init(&X.out);
  pthread_mutex_init(&X.mu, NULL);
  pthread_cond_init(&X.cv, NULL);
  X.loop = uv_default_loop();
  uv_async_init(X.loop, &X.wake, on_wake);
  uv_timer_init(X.loop, &X.hb);
  uv_timer_start(&X.hb, on_tick, 1000, 1000);

  memset(&cbs, 0, sizeof cbs);
  cbs.frame = on_frame;
  cbs.closed = on_closed;
  cbs.connected = on_connected;
  X.conn = orion_conn_new(X.loop, ORION_WIRE_CONNECT, NULL, &cbs, NULL);
  if (X.conn == NULL)
    die("out of memory");
  if (X.bind != NULL &&
      orion_conn_bind_local(X.conn, X.bind, msg, sizeof msg) != 0)
    die("--bind %s: %s", X.bind, msg);
  orion_conn_connect(X.conn, X.host, X.port);
  if (pthread_create(&thr, NULL, compute_main, NULL) != 0)
    die("cannot start the compute thread: %s", strerror(errno));
  uv_run(X.loop, UV_RUN_DEFAULT);
  die("the event loop ended");
  return EXIT_CLUSTER;
}
