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
#ifdef __GLIBC__
#include <malloc.h>
#endif
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
#include "util/ccomp.h"
#include "util/clock.h"

#define EXIT_CLUSTER 3

/* ---- requests from the loop thread to the compute thread --------------- */

typedef struct job {
  struct job *next;
  int type;
  char *payload; /* orion_malloc'd, may be NULL */
  size_t len;
  int from; /* the peer that sent it (peer requests and replies) */
} job;

/* A dense array copy this executor holds (a replica of the driver's array;
 * only the parts the driver sent are meaningful). */
typedef struct replica {
  int64_t id;
  orion_array *a;
} replica;

/* Another executor, as this one sees it: where it listens, the
 * connection this executor opened to it (requests go out there, answers
 * come back), the one it opened to us (its requests, our answers), and
 * frames the compute thread queued for it (under X.mu). */
typedef struct peerlink {
  char host[256];
  int port;
  orion_conn *out;
  int out_ready; /* out connected and HELLO sent */
  orion_conn *in;
  orion_buf pending;   /* for out, before it is ready */
  orion_buf queued;    /* from the compute thread, for out (X.mu) */
  orion_buf queued_in; /* from the compute thread, for in (X.mu) */
} peerlink;

/* A server-held array sharded across the executors (for one loop run).
 * Its rows are grouped in the driver's version chunks; executor e owns
 * chunks [orion_shard_first(e), orion_shard_first(e + 1)).  The owner's
 * replica is the authoritative copy of its chunks during the run; it
 * publishes them (after applying buffered writes) to `served`, from which
 * the loop thread answers other executors' FETCHes without waiting for
 * the compute thread.  Requesters keep the version they hold of each
 * chunk and fetch only newer ones at block boundaries. */
typedef struct shard {
  int64_t id;
  orion_array *a;    /* the replica (compute thread) */
  int64_t row_elems, chunk_rows, nchunks;
  size_t esz;
  int flags;         /* ORION_SHARD_FETCH | ORION_SHARD_WRITTEN */
  int64_t run;       /* the run the flags are for */
  int64_t fetched_run; /* read-only: fetched once in this run */
  uint64_t *have;    /* requester: version held per chunk */
  int64_t clo, chi;  /* owner: my chunks */
  uint64_t *ver;     /* owner: per own chunk */
  char *served;      /* owner: own rows as published */
  char *base;        /* owner: own rows when the run started */
  int64_t served_run;
} shard;

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
  int64_t *buf_targets; /* and their target arrays */
  int nbufs;
  int64_t *accs;
  int naccs;
  int failed; /* a body failed in this loop: skip its remaining blocks */

  /* Peers and shards (see "sharded server arrays" below). */
  uv_tcp_t listener;
  char listen_addr[128]; /* "host:port" peers reach us at */
  int npeers;            /* executors in the job (from PEERS) */
  peerlink *peers;       /* npeers; [X.id] unused */
  shard *shards;         /* under mu: the loop thread serves from them */
  int nshards;
  int64_t run;           /* the loop run being served / computed */
  uint64_t vcounter;     /* owner chunk versions */
  int64_t outstanding;   /* BUFFER_FLUSHes to peers not yet acknowledged */
  orion_buf done_frame;  /* LOOP_DONE held back until they are */
  int done_held;
  job *replies;          /* FETCH_REPLY payloads for the compute thread */
  int64_t awaiting;      /* FETCH_REPLYs the compute thread waits for */
  pthread_cond_t fcv;    /* signalled when one arrives */
  job *deferred;         /* FETCHes for a run not started here yet */
  job *early;            /* (compute thread) BUFFER_FLUSHes likewise */
  uint64_t peer_bytes;   /* sent to peers since the last LOOP_DONE (mu) */
  orion_cobj *cobj;      /* the loaded loop's compiled body, or NULL */
  struct { uint64_t hash; orion_cobj *obj; } bodies[64]; /* built, by hash */
  int nbodies;
  uint64_t shard_items;  /* writes applied to own shards, likewise (mu) */
  /* Ranges of deferred arrays this executor keeps during the run and
   * returns with its LOOP_DONE (compute thread). */
  int64_t (*kept)[3];
  int nkept, capkept;
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

/* ---- sharded server arrays: the compute thread's side ------------------- */

/* Hands frames for peer e to the loop thread: to_in = 0 on the connection
 * we opened to e (requests), 1 on the one e opened to us (answers). */
static void post_peer(int e, orion_buf *b, int to_in) {
  if (b->oom)
    die("out of memory building a frame for executor %d", e);
  pthread_mutex_lock(&X.mu);
  X.peer_bytes += b->len;
  orion_buf_append(to_in ? &X.peers[e].queued_in : &X.peers[e].queued,
                   b->data, b->len);
  pthread_mutex_unlock(&X.mu);
  b->len = 0;
  uv_async_send(&X.wake);
}

static shard *find_shard(int64_t id) {
  int i;
  for (i = 0; i < X.nshards; i++)
    if (X.shards[i].id == id)
      return &X.shards[i];
  return NULL;
}

static void shard_clear(shard *sh) {
  orion_free(sh->have);
  orion_free(sh->ver);
  orion_free(sh->served);
  orion_free(sh->base);
  orion_array_release(sh->a);
  memset(sh, 0, sizeof *sh);
}

/* Element range of chunks [k0, k1) of sh. */
static void chunk_elems(const shard *sh, int64_t k0, int64_t k1,
                        int64_t *first, int64_t *count) {
  int64_t r0 = k0 * sh->chunk_rows, r1 = k1 * sh->chunk_rows;
  if (r1 > sh->a->dims[0])
    r1 = sh->a->dims[0];
  if (r0 > r1)
    r0 = r1;
  *first = r0 * sh->row_elems;
  *count = (r1 - r0) * sh->row_elems;
}

/* Copies own chunks [k0, k1) from the replica to the served copy, bumping
 * the version of each that changed (all of them when force).  X.mu held. */
static void publish_chunks(shard *sh, int64_t k0, int64_t k1, int force) {
  int64_t k, base0, dummy;
  chunk_elems(sh, sh->clo, sh->clo, &base0, &dummy);
  for (k = k0 < sh->clo ? sh->clo : k0; k < k1 && k < sh->chi; k++) {
    int64_t first, count;
    char *dst, *src;
    chunk_elems(sh, k, k + 1, &first, &count);
    dst = sh->served + (size_t)(first - base0) * sh->esz;
    src = (char *)sh->a->values + (size_t)first * sh->esz;
    if (force || memcmp(dst, src, (size_t)count * sh->esz) != 0) {
      memcpy(dst, src, (size_t)count * sh->esz);
      sh->ver[k - sh->clo] = ++X.vcounter;
    }
  }
}

/* Sets up (or refreshes) array id as sharded for this run, from a
 * LOAD_BODY entry: installs the rows the driver sent for our chunks and
 * republishes them.  Compute thread. */
static int shard_setup(orion_reader *r, int64_t run, orion_error *err) {
  int64_t id = orion_pr_i64(r), flags = orion_pr_i64(r);
  int64_t nruns = orion_pr_count(r, 32), k, rows;
  replica *rp = find_replica(id);
  shard *sh;
  int fresh = 0;
  if (r->bad || rp == NULL || X.npeers < 1)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: malformed shard in LOAD_BODY",
                           X.id);
  for (k = 0; k < nruns && !r->bad; k++) {
    int64_t rid = orion_pr_i64(r), first = orion_pr_i64(r);
    int64_t count = orion_pr_i64(r);
    size_t len;
    const char *data = orion_pr_bytes(r, &len);
    size_t esz = orion_type_size(rp->a->type);
    if (data == NULL || rid != id || first < 0 || count < 0 || first > rp->a->nnz ||
        count > rp->a->nnz - first || len != (size_t)count * esz)
      return orion_error_set(err, ORION_EPARSE,
                             "executor %d: malformed shard rows", X.id);
    memcpy((char *)rp->a->values + (size_t)first * esz, data, len);
  }
  pthread_mutex_lock(&X.mu);
  sh = find_shard(id);
  if (sh != NULL && sh->a != rp->a)
    shard_clear(sh); /* the array was remade: start over */
  if (sh == NULL || sh->a == NULL) {
    if (sh == NULL) {
      shard *ns = orion_realloc(X.shards, sizeof *ns * (size_t)(X.nshards + 1));
      if (ns == NULL) {
        pthread_mutex_unlock(&X.mu);
        return orion_error_set(err, ORION_ENOMEM, "out of memory");
      }
      X.shards = ns;
      sh = &X.shards[X.nshards++];
      memset(sh, 0, sizeof *sh);
    }
    sh->id = id;
    sh->a = rp->a;
    orion_array_retain(sh->a);
    rows = sh->a->dims[0];
    sh->esz = orion_type_size(sh->a->type);
    sh->row_elems = rows > 0 ? sh->a->nnz / rows : 0;
    sh->chunk_rows = orion_chunk_rows(sh->row_elems * (int64_t)sh->esz);
    sh->nchunks = rows > 0 ? (rows + sh->chunk_rows - 1) / sh->chunk_rows : 0;
    sh->clo = orion_shard_first(X.id, X.npeers, sh->nchunks);
    sh->chi = orion_shard_first(X.id + 1, X.npeers, sh->nchunks);
    sh->have = orion_calloc((size_t)sh->nchunks + 1, sizeof *sh->have);
    sh->ver = orion_calloc((size_t)(sh->chi - sh->clo) + 1, sizeof *sh->ver);
    {
      int64_t first, count;
      chunk_elems(sh, sh->clo, sh->chi, &first, &count);
      sh->served = orion_malloc((size_t)count * sh->esz + 1);
      sh->base = orion_malloc((size_t)count * sh->esz + 1);
    }
    if (sh->have == NULL || sh->ver == NULL || sh->served == NULL ||
        sh->base == NULL) {
      shard_clear(sh);
      pthread_mutex_unlock(&X.mu);
      return orion_error_set(err, ORION_ENOMEM, "out of memory for a shard");
    }
    fresh = 1;
  }
  sh->flags = (int)flags;
  sh->run = run;
  sh->fetched_run = 0;
  /* The replica may have changed since the last sharded run (the driver's
   * rows above, or a loop that placed the array otherwise). */
  publish_chunks(sh, sh->clo, sh->chi, fresh);
  {
    int64_t first, count;
    chunk_elems(sh, sh->clo, sh->chi, &first, &count);
    memcpy(sh->base, sh->served, (size_t)count * sh->esz);
  }
  sh->served_run = run;
  pthread_mutex_unlock(&X.mu);
  uv_async_send(&X.wake); /* FETCHes waiting for this run */
  return 0;
}

/* Drops the shards not sharded in this run from serving.  A loop that
 * binds the array otherwise (replicated, partitioned) may write our
 * replica, so the versions we hold of other owners' chunks are forgotten;
 * an array this loop does not bind at all keeps them, so that a read-only
 * array used every other loop (training data between evaluations) is not
 * fetched again. */
static void shards_retire(int64_t run) {
  int i, j;
  pthread_mutex_lock(&X.mu);
  for (i = 0; i < X.nshards; i++)
    if (X.shards[i].run != run && X.shards[i].a != NULL) {
      X.shards[i].served_run = 0;
      for (j = 0; j < X.nbound; j++)
        if (X.bound[j] == X.shards[i].id) {
          memset(X.shards[i].have, 0,
                 sizeof *X.shards[i].have * (size_t)X.shards[i].nchunks);
          break;
        }
    }
  pthread_mutex_unlock(&X.mu);
}

static void shards_drop(int64_t id) {
  shard *sh;
  pthread_mutex_lock(&X.mu);
  sh = find_shard(id);
  if (sh != NULL) {
    shard_clear(sh);
    *sh = X.shards[--X.nshards];
  }
  pthread_mutex_unlock(&X.mu);
}

/* The shard a buffer writes in this run, or NULL. */
static shard *buffer_shard(int64_t buffer) {
  int i;
  for (i = 0; i < X.nbufs; i++)
    if (X.bufs[i] == buffer) {
      shard *sh = find_shard(X.buf_targets[i]);
      return sh != NULL && sh->run == X.run ? sh : NULL;
    }
  return NULL;
}

/* Applies items to our own shard and publishes the chunks they touch. */
static int apply_own(shard *sh, int64_t buffer, const orion_pend_item *items,
                     int64_t n, orion_error *err) {
  int64_t i, k0, k1;
  int64_t lo, hi;
  int rc;
  if (n == 0)
    return 0;
  lo = hi = items[0].key;
  rc = orion_exec_buffer_apply(X.ex, buffer, items, n, err);
  for (i = 1; i < n; i++) { /* in key order, but be safe */
    lo = items[i].key < lo ? items[i].key : lo;
    hi = items[i].key > hi ? items[i].key : hi;
  }
  k0 = lo / sh->row_elems / sh->chunk_rows;
  k1 = hi / sh->row_elems / sh->chunk_rows + 1;
  pthread_mutex_lock(&X.mu);
  publish_chunks(sh, k0, k1, 0);
  X.shard_items += (uint64_t)n;
  pthread_mutex_unlock(&X.mu);
  uv_async_send(&X.wake);
  return rc;
}

static void encode_flush(orion_buf *b, int64_t buffer, int isint,
                         const orion_pend_item *items, int64_t n) {
  size_t at = orion_wire_begin(b, ORION_WIRE_BUFFER_FLUSH);
  orion_pw_i64(b, X.run);
  orion_pw_i64(b, buffer);
  orion_buf_u64(b, (uint64_t)isint);
  orion_flush_items_put(b, items, n);
  if (orion_wire_end(b, at) != 0)
    b->oom = 1;
}

/* Buffered writes go to the owners of their target's rows: applied here
 * for our own chunks, sent to the other owners; or, for a target that is
 * not sharded, to the driver. */
static int flush_sink(void *ud, int64_t id, int isint,
                      const orion_pend_item *items, int64_t n,
                      orion_error *err) {
  shard *sh = buffer_shard(id);
  orion_buf b;
  int64_t i = 0;
  int rc = 0;
  (void)ud;
  orion_buf_init(&b);
  if (sh == NULL) {
    encode_flush(&b, id, isint, items, n);
    if (b.oom) {
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
  while (i < n && rc == 0) {
    int64_t k = items[i].key / sh->row_elems / sh->chunk_rows, j = i, end;
    int owner = 0, e;
    for (e = 0; e < X.npeers; e++)
      if (k >= orion_shard_first(e, X.npeers, sh->nchunks))
        owner = e;
    /* The owner's chunks end at this key (items come in key order). */
    end = orion_shard_first(owner + 1, X.npeers, sh->nchunks) *
          sh->chunk_rows * sh->row_elems;
    while (j < n && items[j].key < end)
      j++;
    if (owner == X.id) {
      rc = apply_own(sh, id, items + i, j - i, err);
    } else {
      encode_flush(&b, id, isint, items + i, j - i);
      pthread_mutex_lock(&X.mu);
      X.outstanding++;
      pthread_mutex_unlock(&X.mu);
      post_peer(owner, &b, 0);
    }
    i = j;
  }
  orion_buf_free(&b);
  return rc;
}

/* A BUFFER_FLUSH from peer `from` for one of our shards: apply, publish,
 * acknowledge.  An apply error is the loop's error (reported to the
 * driver); the flush is acknowledged all the same. */
static void peer_flush(int from, const char *p, size_t len) {
  orion_reader r;
  orion_error err;
  orion_pend_item *items = NULL;
  int64_t run, id, n, k;
  shard *sh;
  orion_buf b;
  size_t at;
  orion_reader_init(&r, p, len);
  run = orion_pr_i64(&r);
  id = orion_pr_i64(&r);
  orion_pr_i64(&r); /* isint: the buffer knows its type */
  n = orion_flush_items_get(&r, &items);
  if (r.bad || r.left != 0)
    die("executor %d sent a malformed BUFFER_FLUSH", from);
  if (n < 0)
    die("out of memory applying buffered writes");
  orion_error_clear(&err);
  sh = buffer_shard(id);
  if (run != X.run || sh == NULL)
    die("executor %d sent buffered writes for buffer #%lld of run %lld, "
        "which this executor does not hold",
        from, (long long)id, (long long)run);
  {
    int64_t lo = sh->clo * sh->chunk_rows * sh->row_elems;
    int64_t hi = sh->chi * sh->chunk_rows * sh->row_elems;
    for (k = 0; k < n; k++)
      if (items[k].key < lo || items[k].key >= hi)
        die("executor %d sent buffered writes outside this executor's shard",
            from);
  }
  if (!X.failed && apply_own(sh, id, items, n, &err) != 0) {
    X.failed = 1;
    post_error(-1, err.msg);
  }
  orion_free(items);
  orion_buf_init(&b);
  at = orion_wire_begin(&b, ORION_WIRE_FLUSH_ACK);
  orion_pw_i64(&b, run);
  orion_wire_end(&b, at);
  post_peer(from, &b, 1);
  orion_buf_free(&b);
}

/* Before a block: brings the rows of the sharded arrays the body reads up
 * to date from their owners (only chunks whose version changed travel).
 * Read-only ones are fetched once per run. */
static void fetch_shards(void) {
  int i, e;
  int64_t asked = 0;
  double deadline;
  struct timespec ts;
  for (i = 0; i < X.nshards; i++) {
    shard *sh = &X.shards[i];
    if (sh->a == NULL || sh->run != X.run || !(sh->flags & ORION_SHARD_FETCH))
      continue;
    if (!(sh->flags & ORION_SHARD_WRITTEN) && sh->fetched_run == X.run)
      continue;
    sh->fetched_run = X.run;
    for (e = 0; e < X.npeers; e++) {
      int64_t lo = orion_shard_first(e, X.npeers, sh->nchunks);
      int64_t hi = orion_shard_first(e + 1, X.npeers, sh->nchunks), k;
      orion_buf b;
      size_t at;
      if (e == X.id || hi <= lo)
        continue;
      orion_buf_init(&b);
      at = orion_wire_begin(&b, ORION_WIRE_FETCH);
      orion_pw_i64(&b, X.run);
      orion_pw_i64(&b, sh->id);
      orion_pw_i64(&b, lo);
      orion_pw_i64(&b, hi);
      for (k = lo; k < hi; k++)
        orion_buf_u64(&b, sh->have[k]);
      orion_wire_end(&b, at);
      pthread_mutex_lock(&X.mu);
      X.awaiting++;
      pthread_mutex_unlock(&X.mu);
      post_peer(e, &b, 0);
      orion_buf_free(&b);
      asked++;
    }
  }
  if (asked == 0)
    return;
  deadline = orion_now() + 2 * X.hb_timeout;
  for (;;) {
    job *j;
    pthread_mutex_lock(&X.mu);
    while (X.replies == NULL && X.awaiting > 0 && orion_now() < deadline) {
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&X.fcv, &X.mu, &ts);
    }
    j = X.replies;
    if (j != NULL)
      X.replies = j->next;
    else if (X.awaiting > 0) {
      pthread_mutex_unlock(&X.mu);
      die("no answer from the owners of a sharded array in %.0f s",
          2 * X.hb_timeout);
    }
    pthread_mutex_unlock(&X.mu);
    if (j == NULL)
      return;
    {
      orion_reader r;
      int64_t id, n, k;
      shard *sh;
      orion_reader_init(&r, j->payload, j->len);
      id = orion_pr_i64(&r);
      n = orion_pr_count(&r, 24);
      sh = find_shard(id);
      if (sh == NULL || r.bad)
        die("executor %d sent a malformed FETCH_REPLY", j->from);
      for (k = 0; k < n && !r.bad; k++) {
        int64_t c = orion_pr_i64(&r), first, count;
        uint64_t v = (uint64_t)orion_pr_i64(&r);
        size_t len;
        const char *data = orion_pr_bytes(&r, &len);
        if (data == NULL || c < 0 || c >= sh->nchunks)
          die("executor %d sent a malformed FETCH_REPLY", j->from);
        chunk_elems(sh, c, c + 1, &first, &count);
        if (len != (size_t)count * sh->esz)
          die("executor %d sent a malformed FETCH_REPLY", j->from);
        memcpy((char *)sh->a->values + (size_t)first * sh->esz, data, len);
        sh->have[c] = v;
      }
      if (r.bad || r.left != 0)
        die("executor %d sent a malformed FETCH_REPLY", j->from);
    }
    orion_free(j->payload);
    orion_free(j);
  }
}

/* ---- sharded server arrays: the loop thread's side ---------------------- */

/* Answers a FETCH from the served copy, or returns 1 when the run it asks
 * about has not started here yet (it is kept and retried). */
static int serve_fetch(int from, const char *p, size_t len) {
  orion_reader r;
  int64_t run, id, lo, hi, k, cnt = 0;
  shard *sh;
  orion_buf b;
  size_t at, cnt_at, base0;
  orion_reader_init(&r, p, len);
  run = orion_pr_i64(&r);
  id = orion_pr_i64(&r);
  lo = orion_pr_i64(&r);
  hi = orion_pr_i64(&r);
  pthread_mutex_lock(&X.mu);
  sh = find_shard(id);
  if (sh == NULL || sh->served_run < run || sh->served_run == 0) {
    pthread_mutex_unlock(&X.mu);
    return 1;
  }
  if (r.bad || lo != sh->clo || hi != sh->chi ||
      r.left != (size_t)(hi - lo) * 8) {
    pthread_mutex_unlock(&X.mu);
    if (X.peers[from].in != NULL)
      orion_conn_close(X.peers[from].in, "malformed FETCH");
    return 0;
  }
  {
    int64_t f0, c0;
    chunk_elems(sh, sh->clo, sh->clo, &f0, &c0);
    base0 = (size_t)f0;
    (void)c0;
  }
  orion_buf_init(&b);
  at = orion_wire_begin(&b, ORION_WIRE_FETCH_REPLY);
  orion_pw_i64(&b, id);
  cnt_at = b.len;
  orion_buf_u64(&b, 0);
  for (k = lo; k < hi; k++) {
    uint64_t held = (uint64_t)orion_pr_i64(&r);
    int64_t first, count;
    if (held == sh->ver[k - lo])
      continue;
    chunk_elems(sh, k, k + 1, &first, &count);
    orion_pw_i64(&b, k);
    orion_buf_u64(&b, sh->ver[k - lo]);
    orion_pw_bytes(&b, sh->served + (size_t)(first - (int64_t)base0) * sh->esz,
                   (size_t)count * sh->esz);
    cnt++;
  }
  pthread_mutex_unlock(&X.mu);
  if (!b.oom)
    for (k = 0; k < 8; k++)
      ((unsigned char *)b.data)[cnt_at + (size_t)k] =
          (unsigned char)((uint64_t)cnt >> (8 * k));
  if (orion_wire_end(&b, at) != 0)
    die("a FETCH_REPLY exceeds the largest frame");
  pthread_mutex_lock(&X.mu);
  X.peer_bytes += b.len;
  pthread_mutex_unlock(&X.mu);
  if (X.peers[from].in != NULL)
    orion_conn_send(X.peers[from].in, &b);
  orion_buf_free(&b);
  return 0;
}

/* The changed rows of our shards written in this run, for the driver. */
static void shard_pull(void) {
  orion_buf b;
  size_t at, cnt_at;
  int64_t runs = 0, k;
  int i;
  orion_buf_init(&b);
  at = orion_wire_begin(&b, ORION_WIRE_SHARD_DATA);
  cnt_at = b.len;
  orion_buf_u64(&b, 0);
  pthread_mutex_lock(&X.mu);
  for (i = 0; i < X.nshards; i++) {
    shard *sh = &X.shards[i];
    int64_t first, count, e = 0;
    if (sh->a == NULL || sh->run != X.run ||
        !(sh->flags & ORION_SHARD_WRITTEN))
      continue;
    chunk_elems(sh, sh->clo, sh->chi, &first, &count);
    while (e < count) { /* runs of changed elements */
      int64_t f;
      if (memcmp(sh->served + (size_t)e * sh->esz,
                 sh->base + (size_t)e * sh->esz, sh->esz) == 0) {
        e++;
        continue;
      }
      f = e + 1;
      while (f < count && memcmp(sh->served + (size_t)f * sh->esz,
                                 sh->base + (size_t)f * sh->esz,
                                 sh->esz) != 0)
        f++;
      orion_pw_i64(&b, sh->id);
      orion_pw_i64(&b, first + e);
      orion_pw_i64(&b, f - e);
      orion_pw_bytes(&b, sh->served + (size_t)e * sh->esz,
                     (size_t)(f - e) * sh->esz);
      runs++;
      e = f;
    }
    memcpy(sh->base, sh->served, (size_t)count * sh->esz);
  }
  pthread_mutex_unlock(&X.mu);
  if (!b.oom)
    for (k = 0; k < 8; k++)
      ((unsigned char *)b.data)[cnt_at + (size_t)k] =
          (unsigned char)((uint64_t)runs >> (8 * k));
  if (orion_wire_end(&b, at) != 0)
    die("the changes of this executor's shards exceed the largest frame");
  orion_conn_send(X.conn, &b);
  orion_buf_free(&b);
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

static int push_buf(int64_t id, int64_t target) {
  int64_t *nt = orion_realloc(X.buf_targets, sizeof *nt * (size_t)(X.nbufs + 1));
  if (nt == NULL)
    return ORION_ENOMEM;
  X.buf_targets = nt;
  nt[X.nbufs] = target;
  return push_id(&X.bufs, &X.nbufs, id);
}

/* Builds (or finds in the cache) the compiled body the driver sent and
 * makes the executor run it.  A failure is an error for tier "c"; under
 * "auto" the loop runs interpreted, which gives the same results. */
static int load_compiled(uint64_t hash, const char *src, size_t len,
                         const char *flags, size_t flen, int64_t required,
                         const orion_cslot *slots, int nslots,
                         orion_error *err) {
  char mode[512];
  orion_error cerr;
  const int *abi;
  int i;
  snprintf(mode, sizeof mode, "%.*s", (int)(flen < 511 ? flen : 511),
           flags != NULL ? flags : "");
  orion_error_clear(&cerr);
  for (i = 0; i < X.nbodies; i++)
    if (X.bodies[i].hash == hash) {
      X.cobj = X.bodies[i].obj; /* built for an earlier run */
      if (X.cobj == NULL)
        orion_error_set(&cerr, ORION_ECOMPILE, "it failed to build before");
      goto loaded;
    }
  if (len == 0)
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: the driver sent no source for a "
                           "compiled body this executor never built",
                           X.id);
  if (orion_cobj_build(src, len, mode, 0, &X.cobj, NULL, &cerr) == 0 &&
      ((abi = orion_cobj_sym(X.cobj, ORION_CBODY_ABI_SYM)) == NULL ||
       *abi != ORION_CBODY_ABI ||
       orion_cobj_sym(X.cobj, ORION_CBODY_FN) == NULL)) {
    orion_error_set(&cerr, ORION_ECOMPILE, "%s lacks the expected entry "
                                           "points",
                    orion_cobj_path(X.cobj));
    orion_cobj_free(X.cobj);
    X.cobj = NULL;
  }
  if (X.nbodies == 64) { /* forget the oldest */
    orion_cobj_free(X.bodies[0].obj);
    memmove(&X.bodies[0], &X.bodies[1], sizeof X.bodies[0] * 63);
    X.nbodies--;
  }
  X.bodies[X.nbodies].hash = hash;
  X.bodies[X.nbodies].obj = X.cobj;
  X.nbodies++;
loaded:
  if (X.cobj == NULL) {
    if (required)
      return orion_error_set(err, ORION_ECOMPILE,
                             "executor %d: tier \"c\": compiling the body "
                             "failed: %s",
                             X.id, cerr.msg);
    fprintf(stderr,
            "orion-executor %d: note: compiling the body failed (%s); it "
            "runs in the Lua interpreter here\n",
            X.id, cerr.msg);
    return 0;
  }
  return orion_exec_set_compiled(
      X.ex, (orion_cbody_fn)orion_cobj_sym(X.cobj, ORION_CBODY_FN), slots,
      nslots);
}

static int load_body(const char *p, size_t n, orion_error *err) {
  orion_reader r;
  const char *blob, *csrc, *cflags;
  size_t blen, clen, cflen;
  int64_t loop, k, cnt, required;
  uint64_t chash;
  orion_cslot *slots = NULL;
  int rc = 0, nslots;
  unbind_loop();
  X.failed = 0;
  X.nkept = 0;
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
      rc = push_buf(id, target);
  }
  X.run = orion_pr_i64(&r);
  chash = (uint64_t)orion_pr_i64(&r);
  csrc = orion_pr_bytes(&r, &clen);
  cflags = orion_pr_bytes(&r, &cflen);
  required = orion_pr_i64(&r);
  cnt = orion_pr_count(&r, 40);
  if (!r.bad && cnt > 0) {
    slots = orion_calloc((size_t)cnt, sizeof *slots);
    if (slots == NULL)
      return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  for (k = 0; k < cnt && !r.bad; k++) {
    slots[k].kind = (orion_cslot_kind)orion_pr_i64(&r);
    slots[k].id = orion_pr_i64(&r);
    slots[k].isint = (int)orion_pr_i64(&r);
    slots[k].ival = orion_pr_i64(&r);
    slots[k].fval = orion_pr_f64(&r);
  }
  nslots = (int)cnt;
  cnt = orion_pr_count(&r, 24);
  for (k = 0; k < cnt && !r.bad && rc == 0; k++)
    rc = shard_setup(&r, X.run, err);
  if (rc == 0 && !r.bad)
    shards_retire(X.run);
  if (r.bad || r.left != 0) {
    orion_free(slots);
    return orion_error_set(err, ORION_EPARSE,
                           "executor %d: malformed LOAD_BODY frame", X.id);
  }
  if (rc != 0) {
    orion_free(slots);
    if (err->msg[0] == '\0')
      orion_error_set(err, rc, "executor %d: cannot bind the loop: %s", X.id,
                      orion_strerror(rc));
    return rc;
  }
  rc = orion_exec_load(X.ex, loop, blob, blen, err);
  X.cobj = NULL;
  if (rc == 0 && chash != 0)
    rc = load_compiled(chash, csrc, clen, cflags, cflen, required, slots,
                       nslots, err);
  orion_free(slots);
  return rc;
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
static int elem_same(const char *x, const char *y, size_t esz) {
  if (esz == 4) {
    uint32_t a, c;
    memcpy(&a, x, 4);
    memcpy(&c, y, 4);
    return a == c;
  }
  if (esz == 8) {
    uint64_t a, c;
    memcpy(&a, x, 8);
    memcpy(&c, y, 8);
    return a == c;
  }
  return memcmp(x, y, esz) == 0;
}

static int64_t emit_changes(orion_buf *b, const watch *w) {
  enum { STRIDE = 64 }; /* elements skipped at once while nothing differs */
  size_t esz = orion_type_size(w->a->type);
  const char *now = (const char *)w->a->values + (size_t)w->first * esz;
  int64_t i = 0, runs = 0;
  while (i < w->count) {
    int64_t j;
    if (i + STRIDE <= w->count &&
        memcmp(now + (size_t)i * esz, w->before + (size_t)i * esz,
               STRIDE * esz) == 0) {
      i += STRIDE;
      continue;
    }
    if (elem_same(now + (size_t)i * esz, w->before + (size_t)i * esz, esz)) {
      i++;
      continue;
    }
    j = i + 1;
    while (j < w->count &&
           !elem_same(now + (size_t)j * esz, w->before + (size_t)j * esz, esz))
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
  cnt = r.bad || rc != 0 ? 0 : orion_pr_count(&r, 24);
  for (k = 0; k < cnt && !r.bad; k++) { /* ranges kept until LOOP_DONE */
    int64_t id = orion_pr_i64(&r), first = orion_pr_i64(&r);
    int64_t count = orion_pr_i64(&r);
    replica *rp = find_replica(id);
    if (r.bad || rp == NULL || first < 0 || count <= 0 ||
        first > rp->a->nnz || count > rp->a->nnz - first) {
      r.bad = 1;
      break;
    }
    if (X.nkept == X.capkept) {
      int cap = X.capkept > 0 ? 2 * X.capkept : 16;
      void *nk = orion_realloc(X.kept, sizeof *X.kept * (size_t)cap);
      if (nk == NULL) {
        rc = orion_error_set(err, ORION_ENOMEM, "out of memory");
        break;
      }
      X.kept = nk;
      X.capkept = cap;
    }
    X.kept[X.nkept][0] = id;
    X.kept[X.nkept][1] = first;
    X.kept[X.nkept][2] = count;
    X.nkept++;
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
  if (rc == 0)
    fetch_shards();
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
  pthread_mutex_lock(&X.mu);
  orion_buf_u64(&b, X.peer_bytes);
  orion_buf_u64(&b, X.shard_items);
  X.peer_bytes = X.shard_items = 0;
  pthread_mutex_unlock(&X.mu);
  /* The deferred arrays' rows, as they are now: only our blocks wrote them
   * during the run (sent even after a failure, so that the driver's copy
   * matches ours again). */
  orion_buf_u64(&b, (uint64_t)X.nkept);
  for (i = 0; i < X.nkept; i++) {
    replica *rp = find_replica(X.kept[i][0]);
    size_t esz = rp != NULL ? orion_type_size(rp->a->type) : 0;
    orion_pw_i64(&b, X.kept[i][0]);
    orion_pw_i64(&b, X.kept[i][1]);
    orion_pw_i64(&b, X.kept[i][2]);
    orion_pw_bytes(&b,
                   rp != NULL ? (const char *)rp->a->values +
                                    (size_t)X.kept[i][1] * esz
                              : "",
                   rp != NULL ? (size_t)X.kept[i][2] * esz : 0);
  }
  X.nkept = 0;
  if (orion_wire_end(&b, at) != 0)
    die("executor %d: the loop's kept rows exceed the largest frame", X.id);
  /* The loop stays bound until the next LOAD_BODY: peers may still send
   * buffered writes for our shards.  The driver may read the shards once every executor is done, so
   * LOOP_DONE waits until the owners applied our buffered writes. */
  pthread_mutex_lock(&X.mu);
  if (X.outstanding > 0) {
    orion_buf_free(&X.done_frame);
    X.done_frame = b;
    X.done_held = 1;
    orion_buf_init(&b);
  }
  pthread_mutex_unlock(&X.mu);
  if (b.len > 0)
    post(&b);
  orion_buf_free(&b);
}

static void forget(const char *p, size_t n) {
  orion_reader r;
  int64_t k, cnt;
  orion_reader_init(&r, p, n);
  cnt = orion_pr_count(&r, 8);
  for (k = 0; k < cnt && !r.bad; k++) {
    int64_t id = orion_pr_i64(&r);
    shards_drop(id);
    drop_replica(id);
  }
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
      while (X.early != NULL) { /* peers' writes that came first */
        job *e = X.early;
        X.early = e->next;
        peer_flush(e->from, e->payload, e->len);
        orion_free(e->payload);
        orion_free(e);
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
    case ORION_WIRE_BUFFER_FLUSH: {
      int64_t run = 0;
      if (j->len >= 8)
        memcpy(&run, j->payload, 8);
      if (run > X.run) { /* its LOAD_BODY is still on the way */
        job **tail;
        for (tail = &X.early; *tail != NULL; tail = &(*tail)->next)
          ;
        *tail = j;
        j->next = NULL;
        continue;
      }
      peer_flush(j->from, j->payload, j->len);
      break;
    }
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

/* ---- peer connections (loop thread) ------------------------------------- */

static void peer_out_frame(orion_conn *c, const orion_wire_frame *f);
static void peer_out_closed(orion_conn *c, const char *reason);
static void peer_out_connected(orion_conn *c);

static int peer_index(const orion_conn *c) {
  return (int)(intptr_t)c->data - 1;
}

/* Sends b to peer e over the connection we opened, connecting first. */
static void peer_send_out(int e, orion_buf *b) {
  peerlink *pl = &X.peers[e];
  if (b->len == 0)
    return;
  if (pl->out_ready) {
    orion_conn_send(pl->out, b);
    return;
  }
  orion_buf_append(&pl->pending, b->data, b->len);
  b->len = 0;
  if (pl->out == NULL) {
    orion_conn_cbs cbs;
    memset(&cbs, 0, sizeof cbs);
    cbs.frame = peer_out_frame;
    cbs.closed = peer_out_closed;
    cbs.connected = peer_out_connected;
    pl->out = orion_conn_new(X.loop, ORION_WIRE_CONNECT, NULL, &cbs,
                             (void *)(intptr_t)(e + 1));
    if (pl->out == NULL)
      die("out of memory");
    if (orion_conn_connect(pl->out, pl->host, pl->port) != 0)
      die("cannot reach executor %d at %s:%d", e, pl->host, pl->port);
  }
}

/* Introduces this executor on c: the job's token, our id and where we
 * listen for peers. */
static void send_hello(orion_conn *c) {
  orion_buf b;
  orion_wire_hello h;
  memset(&h, 0, sizeof h);
  h.token = X.token;
  h.token_len = strlen(X.token);
  h.executor = (uint32_t)X.id;
  h.addr = X.listen_addr;
  h.addr_len = strlen(X.listen_addr);
  orion_buf_init(&b);
  if (orion_wire_hello_encode(&b, &h) != 0)
    die("cannot encode the HELLO (token too long?)");
  orion_conn_send(c, &b);
  orion_buf_free(&b);
}

static void peer_out_connected(orion_conn *c) {
  int e = peer_index(c);
  send_hello(c);
  X.peers[e].out_ready = 1;
  orion_conn_send(c, &X.peers[e].pending);
}

/* A peer's connection ended.  At the end of a job peers exit in any
 * order, so this is fatal only while we wait on that peer; otherwise the
 * driver (which watches every executor) decides. */
static void peer_lost(int e, const char *reason) {
  int waiting;
  pthread_mutex_lock(&X.mu);
  waiting = X.awaiting > 0 || X.outstanding > 0;
  pthread_mutex_unlock(&X.mu);
  if (waiting)
    die("lost executor %d (%s:%d) while waiting on it: %s", e,
        X.peers[e].host, X.peers[e].port, reason);
}

static void peer_out_closed(orion_conn *c, const char *reason) {
  int e = peer_index(c);
  X.peers[e].out = NULL;
  X.peers[e].out_ready = 0;
  peer_lost(e, reason);
}

/* Answers on the connection we opened: FLUSH_ACK and FETCH_REPLY. */
static void peer_out_frame(orion_conn *c, const orion_wire_frame *f) {
  int e = peer_index(c);
  if (f->type == ORION_WIRE_FLUSH_ACK) {
    orion_buf done;
    orion_buf_init(&done);
    pthread_mutex_lock(&X.mu);
    if (X.outstanding > 0 && --X.outstanding == 0 && X.done_held) {
      done = X.done_frame;
      orion_buf_init(&X.done_frame);
      X.done_held = 0;
    }
    pthread_mutex_unlock(&X.mu);
    if (done.len > 0)
      orion_conn_send(X.conn, &done);
    orion_buf_free(&done);
  } else if (f->type == ORION_WIRE_FETCH_REPLY) {
    job *j = orion_calloc(1, sizeof *j), **tail;
    if (j == NULL)
      die("out of memory");
    j->type = f->type;
    j->from = e;
    j->payload = orion_wire_decoder_take(&c->dec, &j->len);
    pthread_mutex_lock(&X.mu);
    for (tail = &X.replies; *tail != NULL; tail = &(*tail)->next)
      ;
    *tail = j;
    X.awaiting--;
    pthread_cond_signal(&X.fcv);
    pthread_mutex_unlock(&X.mu);
  } else if (f->type != ORION_WIRE_HEARTBEAT &&
             f->type != ORION_WIRE_WELCOME) {
    orion_conn_close(c, "unexpected %s frame from executor %d",
                     orion_wire_type_name(f->type), e);
  }
}

/* Retries the FETCHes that arrived before their run started here. */
static void serve_deferred(void) {
  job **pp = &X.deferred;
  while (*pp != NULL) {
    job *j = *pp;
    if (serve_fetch(j->from, j->payload, j->len) == 0) {
      *pp = j->next;
      orion_free(j->payload);
      orion_free(j);
    } else {
      pp = &j->next;
    }
  }
}

static void enqueue(job *j);

/* Requests on a connection a peer opened to us. */
static void peer_in_frame(orion_conn *c, const orion_wire_frame *f) {
  int e = c->data != NULL ? peer_index(c) : -1;
  job *j;
  if (f->type == ORION_WIRE_HELLO) {
    orion_wire_hello h;
    orion_error err;
    orion_error_clear(&err);
    if (orion_wire_hello_decode(f->payload, f->len, &h, &err) != 0 ||
        (int)h.executor >= X.npeers || (int)h.executor == X.id ||
        X.peers[h.executor].in != NULL) {
      orion_conn_close(c, "bad peer HELLO");
      return;
    }
    c->data = (void *)(intptr_t)(h.executor + 1);
    X.peers[h.executor].in = c;
    orion_conn_send_frame(c, ORION_WIRE_WELCOME, NULL, 0);
    return;
  }
  if (e < 0) {
    orion_conn_close(c, "a %s frame before HELLO",
                     orion_wire_type_name(f->type));
    return;
  }
  switch (f->type) {
  case ORION_WIRE_HEARTBEAT:
    return;
  case ORION_WIRE_FETCH:
    if (serve_fetch(e, (const char *)f->payload, f->len) == 0)
      return;
    break; /* kept for later */
  case ORION_WIRE_BUFFER_FLUSH:
    break; /* for the compute thread */
  default:
    orion_conn_close(c, "unexpected %s frame from executor %d",
                     orion_wire_type_name(f->type), e);
    return;
  }
  j = orion_calloc(1, sizeof *j);
  if (j == NULL)
    die("out of memory");
  j->type = f->type;
  j->from = e;
  j->payload = orion_wire_decoder_take(&c->dec, &j->len); /* f is gone */
  if (j->type == ORION_WIRE_FETCH) {
    j->next = X.deferred;
    X.deferred = j;
  } else {
    enqueue(j);
  }
}

static void peer_in_closed(orion_conn *c, const char *reason) {
  int e = c->data != NULL ? peer_index(c) : -1;
  if (e >= 0) {
    X.peers[e].in = NULL;
    (void)reason;
  }
}

static void on_peer_connection(uv_stream_t *server, int status) {
  orion_conn_cbs cbs;
  orion_conn *c;
  if (status != 0)
    return;
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = peer_in_frame;
  cbs.closed = peer_in_closed;
  c = orion_conn_new(X.loop, ORION_WIRE_ACCEPT, X.token, &cbs, NULL);
  if (c != NULL)
    orion_conn_accept(server, c);
}

/* PEERS from the driver: where every executor listens. */
static void on_peers(orion_conn *c, const orion_wire_frame *f) {
  orion_reader r;
  int64_t n, e;
  orion_reader_init(&r, (const char *)f->payload, f->len);
  n = orion_pr_count(&r, 8);
  if (r.bad || n < 1 || n > 100000 || X.peers != NULL) {
    orion_conn_close(c, "malformed PEERS frame");
    return;
  }
  X.peers = orion_calloc((size_t)n, sizeof *X.peers);
  if (X.peers == NULL)
    die("out of memory");
  for (e = 0; e < n; e++) {
    size_t len;
    const char *a = orion_pr_bytes(&r, &len);
    char hp[300];
    orion_buf_init(&X.peers[e].pending);
    orion_buf_init(&X.peers[e].queued);
    orion_buf_init(&X.peers[e].queued_in);
    snprintf(hp, sizeof hp, "%.*s", (int)(len < 299 ? len : 299),
             a != NULL ? a : "");
    if (a == NULL ||
        (e != X.id && (orion_hostport_parse(hp, X.peers[e].host,
                                            sizeof X.peers[e].host,
                                            &X.peers[e].port) != 0 ||
                       X.peers[e].port <= 0))) {
      orion_conn_close(c, "malformed PEERS frame (executor %lld: '%s')",
                       (long long)e, hp);
      return;
    }
  }
  if (r.left != 0) {
    orion_conn_close(c, "malformed PEERS frame");
    return;
  }
  pthread_mutex_lock(&X.mu);
  X.npeers = (int)n;
  pthread_mutex_unlock(&X.mu);
}

/* Listens for peers on the address we reach the driver from. */
static void start_listening(orion_conn *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss, port = 0;
  char host[INET6_ADDRSTRLEN + 2], msg[256];
  if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
    die("cannot find this executor's address");
  if (ss.ss_family == AF_INET6)
    uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof host);
  else
    uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
  if (orion_net_listen(X.loop, &X.listener, host, 0, on_peer_connection,
                       &port, msg, sizeof msg) != 0)
    die("cannot listen for peers: %s", msg);
  if (ss.ss_family == AF_INET6)
    snprintf(X.listen_addr, sizeof X.listen_addr, "[%s]:%d", host, port);
  else
    snprintf(X.listen_addr, sizeof X.listen_addr, "%s:%d", host, port);
}

static void on_wake(uv_async_t *h) {
  orion_buf b;
  int e;
  (void)h;
  pthread_mutex_lock(&X.mu);
  b = X.out;
  orion_buf_init(&X.out);
  pthread_mutex_unlock(&X.mu);
  if (X.conn != NULL)
    orion_conn_send(X.conn, &b);
  orion_buf_free(&b);
  for (e = 0; e < X.npeers; e++) {
    orion_buf q, qi;
    pthread_mutex_lock(&X.mu);
    q = X.peers[e].queued;
    qi = X.peers[e].queued_in;
    orion_buf_init(&X.peers[e].queued);
    orion_buf_init(&X.peers[e].queued_in);
    pthread_mutex_unlock(&X.mu);
    peer_send_out(e, &q);
    if (qi.len > 0) {
      if (X.peers[e].in == NULL)
        die("executor %d went away before this one could answer it", e);
      orion_conn_send(X.peers[e].in, &qi);
    }
    orion_buf_free(&q);
    orion_buf_free(&qi);
  }
  serve_deferred();
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
  case ORION_WIRE_PEERS:
    on_peers(c, f);
    return;
  case ORION_WIRE_SHARD_PULL:
    shard_pull();
    return;
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
  j->from = -1;
  j->payload = orion_wire_decoder_take(&c->dec, &j->len);
  enqueue(j);
}

/* Queues a request for the compute thread. */
static void enqueue(job *j) {
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
  start_listening(c);
  send_hello(c);
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

#ifdef __GLIBC__
  /* Loops allocate and free the same large blocks (frames, pending
   * writes, nn matrices) over and over: keep them in the heap instead of
   * mapping and faulting in fresh pages each time. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
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
  pthread_cond_init(&X.fcv, NULL);
  orion_buf_init(&X.done_frame);
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
