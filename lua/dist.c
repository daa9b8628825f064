/* The distributed engine: parallel_for over orion-executor processes.
 *
 * The driver holds the master copy of every DistArray and is the server of
 * the arrays the plan places on servers.  For a loop it sends every
 * executor the body (LOAD_BODY), then dispatches blocks: space part p runs
 * on executor p mod N, and a block is sent as soon as the blocks before it
 * that share its space or time part are done, so an executor receives its
 * next block's data while it computes the current one.  A RUN_BLOCK carries
 * only what the executor lacks:
 *   - the block's elements of a sparse iterated array, unless the executor
 *     already holds that version of the block (blocks stay resident across
 *     loops);
 *   - for every dense array the body reads, the rows it may read (from the
 *     plan's subscripts and the block's key ranges: the local partition, the
 *     rotating partition, or the whole array for server-held ones), minus
 *     those the executor already holds at their current version.
 * The executor answers with the elements the block changed (it compares the
 * ranges the body may write before and after: dirty elements only) and
 * ships buffered writes at their flush points, which the driver applies
 * with the buffer's operator.  Versions are kept per chunk of rows of
 * dimension 1, per array and per executor.
 */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "dsm/cluster.h"
#include "dsm/loader.h"
#include "dsm/proto.h"
#include "dsm/types.h"
#include "util/cbody.h"
#include "lua/module.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/clock.h"

/* What the executors hold of one array. */
typedef struct dcache {
  int n;              /* executors */
  int64_t rows;       /* dims[0] (dense) */
  int64_t row_elems;  /* elements per row */
  int64_t chunk;      /* rows per version chunk */
  int64_t nchunks;
  uint64_t *ver;      /* nchunks */
  uint64_t *have;     /* n * nchunks */
  uint64_t *sent;     /* n * nchunks: dispatch number of the last block
                         that carried rows of the chunk to the executor */
  uint64_t gen;       /* darray gen seen */
  int declared_shape; /* the executors were told this array's shape */
  /* Sparse iterated arrays: per block. */
  uint64_t bs_gen;
  int nb;
  uint64_t *bver;     /* nb */
  uint64_t *bhave;    /* n * nb */
  int64_t (*krange)[ORION_MAX_DIMS][2]; /* nb key ranges per loop dim */
} dcache;

static uint64_t version_counter;
static uint64_t dispatch_counter; /* numbers every block sent */
static int64_t run_counter;       /* numbers every loop run */

/* Compiled bodies each executor was sent (by hash), so a loop that runs
 * again ships only the hash: CSENT_WAYS per executor, oldest replaced. */
#define CSENT_WAYS 64
static uint64_t *csent;
static int csent_n;

static uint64_t body_hash(const orion_dist_job *j) {
  uint64_t h = orion_hash_bytes(ORION_HASH_INIT, j->csrc, j->clen);
  h = orion_hash_bytes(h, j->cflags, strlen(j->cflags));
  return h != 0 ? h : 1;
}

/* True when executor e already has the body with hash h; else records it
 * as sent. */
static int body_sent(int e, int n, uint64_t h) {
  int k;
  if (csent == NULL || csent_n != n) {
    orion_free(csent);
    csent = orion_calloc((size_t)n * CSENT_WAYS, sizeof *csent);
    csent_n = csent != NULL ? n : 0;
    if (csent == NULL)
      return 0;
  }
  for (k = 0; k < CSENT_WAYS; k++)
    if (csent[e * CSENT_WAYS + k] == h)
      return 1;
  memmove(&csent[e * CSENT_WAYS + 1], &csent[e * CSENT_WAYS],
          sizeof *csent * (CSENT_WAYS - 1));
  csent[e * CSENT_WAYS] = h;
  return 0;
}

static void dcache_free(dcache *c) {
  if (c == NULL)
    return;
  orion_free(c->ver);
  orion_free(c->have);
  orion_free(c->sent);
  orion_free(c->bver);
  orion_free(c->bhave);
  orion_free(c->krange);
  orion_free(c);
}

void orion__dist_forget(mod_state *s, darray *d) {
  if (d->dc != NULL && s != NULL && s->cl != NULL) {
    int64_t *v = orion_realloc(s->forget,
                               sizeof *v * (size_t)(s->nforget + 1));
    if (v != NULL) {
      s->forget = v;
      s->forget[s->nforget++] = d->id;
    }
  }
  dcache_free(d->dc);
  d->dc = NULL;
}

void orion__dist_stop(mod_state *s) {
  orion_free(csent);
  csent = NULL;
  csent_n = 0;
  if (s->cl != NULL)
    orion_cluster_stop(s->cl);
  s->cl = NULL;
  orion_free(s->forget);
  s->forget = NULL;
  s->nforget = 0;
}

/* The cache of d for n executors, (re)made when missing; versions bumped
 * when the script wrote d since the last loop. */
static dcache *cache_of(darray *d, int n) {
  dcache *c = d->dc;
  int64_t k;
  if (c == NULL) {
    orion_array *a = d->a;
    size_t esz = orion_type_size(a->type);
    c = orion_calloc(1, sizeof *c);
    if (c == NULL)
      return NULL;
    c->n = n;
    c->gen = d->gen;
    if (!a->sparse) {
      c->rows = a->dims[0];
      c->row_elems = c->rows > 0 ? a->nnz / c->rows : 0;
      /* Chunks of about 4 KiB, at least one row. */
      c->chunk = orion_chunk_rows(c->row_elems * (int64_t)esz);
      c->nchunks = c->rows > 0 ? (c->rows + c->chunk - 1) / c->chunk : 0;
      c->ver = orion_calloc((size_t)c->nchunks + 1, sizeof *c->ver);
      c->have = orion_calloc((size_t)(c->nchunks * n) + 1, sizeof *c->have);
      c->sent = orion_calloc((size_t)(c->nchunks * n) + 1, sizeof *c->sent);
      if (c->ver == NULL || c->have == NULL || c->sent == NULL) {
        dcache_free(c);
        return NULL;
      }
      for (k = 0; k < c->nchunks; k++)
        c->ver[k] = ++version_counter;
    }
    d->dc = c;
  }
  if (c->gen != d->gen) {
    for (k = 0; k < c->nchunks; k++)
      c->ver[k] = ++version_counter;
    for (k = 0; k < c->nb; k++)
      c->bver[k] = ++version_counter;
    c->gen = d->gen;
  }
  return c;
}

/* ---- a loop in flight ------------------------------------------------- */

typedef struct arr_use {
  darray *d;
  dcache *c;
  int plan_index; /* in plan->arrays, or -1 */
  int iterated;
  int shard_flags; /* sharded in this run: ORION_SHARD_*, else 0 */
  int sharded;
  /* Deferred write-back: every access subscripts dimension 1 by the space
   * key itself, so the rows of space part p are touched only by p's
   * blocks, all on one executor.  That executor gets them with p's first
   * block and returns them once, with its LOOP_DONE, instead of after
   * every block. */
  int deferred;
  unsigned char *dsent; /* per space part: its rows went out in this run */
  int64_t kfirst, kcount; /* the block being sent hands these elements
                             over to its executor (kcount 0: none) */
} arr_use;

typedef struct loop_run {
  lua_State *L;
  mod_state *s;
  orion_cluster *cl;
  const orion_dist_job *j;
  int n;          /* executors */
  int n1;         /* blocks per space part */
  int has_time;
  arr_use *use;
  int nuse;
  dcache *itc;    /* the iterated array's cache */
  int *pos_of;    /* block id -> position in order */
  int *ndeps;     /* per position: deps not yet done */
  int *next_p, *next_q; /* per position: the next position sharing p / q */
  int *state;     /* per position: 0 waiting, 1 sent, 2 done */
  uint64_t *seq;  /* per position: its dispatch number */
  int sent, done;
  int loop_done;  /* LOOP_DONE received */
  int ending;     /* LOOP_END sent */
  int failed;
  int pulled;     /* SHARD_DATA frames received */
  int64_t run;    /* this run's number */
  uint64_t pull_seq;
  uint64_t peer_bytes, shard_items;
  uint64_t chash; /* the compiled body's hash, 0 when interpreted */
  int err_pos;    /* position of the failed block reported, or -1 */
  orion_error err;
  double *secs;
} loop_run;

static int exec_of(const loop_run *r, int block) {
  return (block / r->n1) % r->n;
}

/* Key ranges [lo, hi] per loop dim of every block of the iterated array. */
static int block_ranges(loop_run *r) {
  darray *it = r->j->it;
  dcache *c = r->itc;
  const orion_blockset *bs = &it->bs;
  orion_array *a = it->a;
  int nb = bs->n0 * bs->n1, b, d;
  if (c->krange != NULL && c->bs_gen == it->bs_gen && c->nb == nb)
    return 0;
  orion_free(c->krange);
  c->krange = orion_malloc(sizeof *c->krange * (size_t)nb);
  if (c->krange == NULL)
    return ORION_ENOMEM;
  for (b = 0; b < nb; b++) {
    int64_t sg;
    for (d = 0; d < a->ndims; d++) {
      c->krange[b][d][0] = INT64_MAX;
      c->krange[b][d][1] = -1;
    }
    for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
      int64_t lo = bs->segs[sg].lo, hi = bs->segs[sg].hi, e;
      if (lo >= hi)
        continue;
      if (a->sparse) {
        for (e = lo; e < hi; e++)
          for (d = 0; d < a->ndims; d++) {
            int64_t k = a->keys[e * a->ndims + d];
            if (k < c->krange[b][d][0])
              c->krange[b][d][0] = k;
            if (k > c->krange[b][d][1])
              c->krange[b][d][1] = k;
          }
      } else {
        int64_t k0[ORION_MAX_DIMS], k1[ORION_MAX_DIMS];
        int same = 1;
        orion_key_delinearize(a->ndims, a->dims, lo, k0);
        orion_key_delinearize(a->ndims, a->dims, hi - 1, k1);
        for (d = 0; d < a->ndims; d++) {
          int64_t klo = same ? k0[d] : 0, khi = same ? k1[d] : a->dims[d] - 1;
          if (klo > khi) { /* wrapped within a row: the whole range */
            klo = 0;
            khi = a->dims[d] - 1;
          }
          if (klo < c->krange[b][d][0])
            c->krange[b][d][0] = klo;
          if (khi > c->krange[b][d][1])
            c->krange[b][d][1] = khi;
          if (k0[d] != k1[d])
            same = 0;
        }
      }
    }
  }
  return 0;
}

/* The rows [*lo, *hi) of array u that block b may read (mode ACC_READ) or
 * write (ACC_WRITE); empty when none. */
static void row_range(const loop_run *r, const arr_use *u, int b, int mode,
                      int64_t *lo, int64_t *hi) {
  const orion_plan *p = r->j->plan;
  int64_t rows = u->d->a->dims[0], l = INT64_MAX, h = -1;
  int i;
  *lo = 0;
  *hi = 0;
  if (u->iterated) {
    /* Its own block's rows, read (the element) and written (a returned
     * value), plus whatever the body's subscripts reach below. */
    l = r->itc->krange[b][0][0];
    h = r->itc->krange[b][0][1];
  }
  if (p == NULL || u->plan_index < 0) {
    *lo = 0;
    *hi = rows;
    return;
  }
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    int64_t al, ah;
    if (ac->array != u->plan_index || ac->buffered || ac->mode != mode)
      continue;
    if (ac->nsub < 1 || ac->sub[0].kind == SUB_UNKNOWN) {
      *lo = 0;
      *hi = rows;
      return;
    }
    if (ac->sub[0].kind == SUB_CONST) {
      al = ah = ac->sub[0].c;
    } else {
      int d = ac->sub[0].dim;
      if (r->itc->krange[b][d][1] < 0)
        continue; /* an empty block */
      al = r->itc->krange[b][d][0] + ac->sub[0].c;
      ah = r->itc->krange[b][d][1] + ac->sub[0].c;
    }
    if (al < l)
      l = al;
    if (ah > h)
      h = ah;
  }
  if (l < 0)
    l = 0;
  if (h >= rows)
    h = rows - 1;
  if (h >= l) {
    *lo = l;
    *hi = h + 1;
  }
}

/* Appends the stale rows of [lo, hi) of u for executor e as runs; only
 * whole chunks are marked as held (a partly sent chunk stays stale there,
 * so that rows the executor did not ask for are never overwritten). */
static int64_t add_rows(orion_buf *b, const arr_use *u, int e, int64_t lo,
                        int64_t hi, uint64_t seq) {
  dcache *c = u->c;
  orion_array *a = u->d->a;
  size_t esz = orion_type_size(a->type);
  int64_t k, runs = 0, k0, k1;
  if (hi <= lo)
    return 0;
  k0 = lo / c->chunk;
  k1 = (hi - 1) / c->chunk;
  for (k = k0; k <= k1; k++) {
    uint64_t *have = &c->have[(int64_t)e * c->nchunks + k];
    int64_t rlo = k * c->chunk, rhi = rlo + c->chunk, first, count;
    if (*have == c->ver[k])
      continue;
    c->sent[(int64_t)e * c->nchunks + k] = seq;
    if (rhi > c->rows)
      rhi = c->rows;
    if (rlo >= lo && rhi <= hi)
      *have = c->ver[k];
    if (rlo < lo)
      rlo = lo;
    if (rhi > hi)
      rhi = hi;
    first = rlo * c->row_elems;
    count = (rhi - rlo) * c->row_elems;
    orion_pw_i64(b, u->d->id);
    orion_pw_i64(b, first);
    orion_pw_i64(b, count);
    orion_pw_bytes(b, (const char *)a->values + (size_t)first * esz,
                   (size_t)count * esz);
    runs++;
  }
  return runs;
}

static void put_count(orion_buf *b, size_t at, int64_t n) {
  int i;
  if (b->oom)
    return;
  for (i = 0; i < 8; i++)
    ((unsigned char *)b->data)[at + (size_t)i] =
        (unsigned char)((uint64_t)n >> (8 * i));
}

/* The rows every block of space part p may read or write, as one range. */
static void part_rows(const loop_run *r, const arr_use *u, int p,
                      int64_t *lo, int64_t *hi) {
  int q, m;
  *lo = INT64_MAX;
  *hi = -1;
  for (q = 0; q < r->n1; q++)
    for (m = ACC_READ; m <= ACC_WRITE; m++) {
      int64_t l, h;
      row_range(r, u, p * r->n1 + q, m, &l, &h);
      if (h > l) {
        if (l < *lo)
          *lo = l;
        if (h > *hi)
          *hi = h;
      }
    }
  if (*hi < 0)
    *lo = *hi = 0;
}

static void send_block(loop_run *r, int pos) {
  const orion_dist_job *j = r->j;
  int b = j->order[pos], e = exec_of(r, b), i;
  darray *it = j->it;
  const orion_blockset *bs = &it->bs;
  orion_buf buf;
  size_t at, cnt_at;
  int64_t sg, runs = 0, watches = 0, nkeep = 0;

  orion_buf_init(&buf);
  at = orion_wire_begin(&buf, ORION_WIRE_RUN_BLOCK);
  orion_pw_i64(&buf, b);
  orion_buf_u64(&buf, j->seed);
  orion_pw_i64(&buf, j->nblocks);
  orion_buf_u64(&buf, (uint64_t)(bs->first[b + 1] - bs->first[b]));
  for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
    int64_t lo = bs->segs[sg].lo, hi = bs->segs[sg].hi;
    if (it->a->sparse) { /* positions within the block's own copy */
      lo -= bs->segs[bs->first[b]].lo;
      hi -= bs->segs[bs->first[b]].lo;
    }
    orion_pw_i64(&buf, lo);
    orion_pw_i64(&buf, hi);
  }
  if (it->a->sparse && r->itc->bhave[e * r->itc->nb + b] !=
                           r->itc->bver[b]) {
    int64_t lo = bs->first[b] < bs->first[b + 1] ? bs->segs[bs->first[b]].lo
                                                 : 0;
    int64_t hi = bs->first[b] < bs->first[b + 1]
                     ? bs->segs[bs->first[b + 1] - 1].hi
                     : 0;
    size_t esz = orion_type_size(it->a->type);
    orion_buf_u64(&buf, 1);
    orion_pw_i64(&buf, hi - lo);
    orion_pw_bytes(&buf, it->a->keys + lo * it->a->ndims,
                   (size_t)(hi - lo) * (size_t)it->a->ndims * 8);
    orion_pw_bytes(&buf, (const char *)it->a->values + (size_t)lo * esz,
                   (size_t)(hi - lo) * esz);
    r->itc->bhave[e * r->itc->nb + b] = r->itc->bver[b];
  } else {
    orion_buf_u64(&buf, 0);
  }
  cnt_at = buf.len;
  orion_buf_u64(&buf, 0);
  r->seq[pos] = ++dispatch_counter;
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi, wlo, whi;
    if (u->d->a->sparse || u->sharded)
      continue; /* a shard comes from its owner */
    if (u->deferred) {
      int p = b / r->n1;
      u->kcount = 0;
      if (u->dsent[p])
        continue; /* the executor holds the part's current rows */
      part_rows(r, u, p, &lo, &hi);
      u->dsent[p] = 1;
      if (hi > lo) {
        runs += add_rows(&buf, u, e, lo, hi, r->seq[pos]);
        u->kfirst = lo * u->c->row_elems;
        u->kcount = (hi - lo) * u->c->row_elems;
        nkeep++;
      }
      continue;
    }
    /* What it reads, and what it may write: the executor compares the
     * written ranges with its copy afterwards, so that copy must be the
     * driver's current one. */
    row_range(r, u, b, ACC_READ, &lo, &hi);
    row_range(r, u, b, ACC_WRITE, &wlo, &whi);
    if (whi > wlo && hi <= lo) {
      lo = wlo;
      hi = whi;
    } else if (whi > wlo) {
      lo = wlo < lo ? wlo : lo;
      hi = whi > hi ? whi : hi;
    }
    runs += add_rows(&buf, u, e, lo, hi, r->seq[pos]);
  }
  put_count(&buf, cnt_at, runs);
  cnt_at = buf.len;
  orion_buf_u64(&buf, 0);
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    int64_t lo, hi;
    if (u->d->a->sparse || u->sharded || u->deferred)
      continue;
    if (u->iterated) { /* the block's own segments */
      for (sg = bs->first[b]; sg < bs->first[b + 1]; sg++) {
        orion_pw_i64(&buf, u->d->id);
        orion_pw_i64(&buf, bs->segs[sg].lo);
        orion_pw_i64(&buf, bs->segs[sg].hi - bs->segs[sg].lo);
        watches++;
      }
    }
    row_range(r, u, b, ACC_WRITE, &lo, &hi);
    if (hi > lo) {
      orion_pw_i64(&buf, u->d->id);
      orion_pw_i64(&buf, lo * u->c->row_elems);
      orion_pw_i64(&buf, (hi - lo) * u->c->row_elems);
      watches++;
    }
  }
  put_count(&buf, cnt_at, watches);
  /* Ranges the executor keeps and returns with its LOOP_DONE. */
  orion_buf_u64(&buf, (uint64_t)nkeep);
  for (i = 0; i < r->nuse; i++) {
    arr_use *u = &r->use[i];
    if (u->deferred && u->kcount > 0) {
      orion_pw_i64(&buf, u->d->id);
      orion_pw_i64(&buf, u->kfirst);
      orion_pw_i64(&buf, u->kcount);
    }
  }
  if (orion_wire_end(&buf, at) != 0)
    orion_cluster_fail(r->cl, "block %d of %s is larger than the largest "
                              "frame (%u bytes)",
                       b, j->where, ORION_WIRE_MAX_FRAME);
  if (buf.oom)
    orion_cluster_fail(r->cl, "out of memory sending block %d", b);
  orion_cluster_send(r->cl, e, &buf);
  orion_buf_free(&buf);
  r->state[pos] = 1;
  r->sent++;
}

static void dispatch_ready(loop_run *r) {
  int pos;
  if (r->failed)
    return;
  for (pos = 0; pos < r->j->nblocks; pos++)
    if (r->state[pos] == 0 && r->ndeps[pos] == 0)
      send_block(r, pos);
}

static void end_loop(loop_run *r) {
  int e;
  if (r->ending)
    return;
  r->ending = 1;
  for (e = 0; e < r->n; e++) {
    orion_buf b;
    size_t at;
    orion_buf_init(&b);
    at = orion_wire_begin(&b, ORION_WIRE_LOOP_END);
    orion_buf_u64(&b, (uint64_t)r->failed);
    orion_wire_end(&b, at);
    orion_cluster_send(r->cl, e, &b);
    orion_buf_free(&b);
  }
}

static arr_use *use_of(loop_run *r, int64_t id) {
  int i;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].d->id == id)
      return &r->use[i];
  return NULL;
}

/* Records that elements [first, first+count) of u changed, by the block
 * with dispatch number seq at executor e (e < 0: at the driver).  An
 * executor that held the chunk's previous version, and was sent nothing of
 * it since that block, holds the new one. */
static void mark_changed(arr_use *u, int e, uint64_t seq, int64_t first,
                         int64_t count) {
  dcache *c = u->c;
  int64_t r0 = first / c->row_elems, r1 = (first + count - 1) / c->row_elems;
  int64_t k;
  for (k = r0 / c->chunk; k <= r1 / c->chunk; k++) {
    uint64_t *have = e >= 0 ? &c->have[(int64_t)e * c->nchunks + k] : NULL;
    /* Rows sent to e for a later block overwrote its copy of the chunk
     * after this block wrote it: e holds the older values there. */
    int fresh = have != NULL && *have == c->ver[k] &&
                c->sent[(int64_t)e * c->nchunks + k] <= seq;
    c->ver[k] = ++version_counter;
    if (fresh)
      *have = c->ver[k];
  }
}

static void fail_frame(loop_run *r, int e, const char *what) {
  orion_cluster_fail(r->cl, "executor %d (%s) sent a malformed %s frame", e,
                     orion_cluster_addr(r->cl, e), what);
}

static void on_block_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t b, k, nruns;
  int pos, q;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  b = orion_pr_i64(&rd);
  if (b < 0 || b >= r->j->nblocks)
    fail_frame(r, e, "BLOCK_DONE");
  pos = r->pos_of[b];
  if (r->state[pos] != 1 || exec_of(r, (int)b) != e)
    fail_frame(r, e, "BLOCK_DONE");
  r->secs[e] += orion_pr_f64(&rd);
  if (orion_pr_i64(&rd) == 1) { /* the sparse block's new values */
    darray *it = r->j->it;
    const orion_blockset *bs = &it->bs;
    size_t len, esz = orion_type_size(it->a->type);
    const char *v = orion_pr_bytes(&rd, &len);
    int64_t lo = bs->segs[bs->first[b]].lo;
    int64_t hi = bs->segs[bs->first[b + 1] - 1].hi;
    if (v == NULL || !it->a->sparse || len != (size_t)(hi - lo) * esz)
      fail_frame(r, e, "BLOCK_DONE");
    memcpy((char *)it->a->values + (size_t)lo * esz, v, len);
    r->itc->bver[b] = ++version_counter;
    r->itc->bhave[e * r->itc->nb + b] = r->itc->bver[b];
  }
  nruns = orion_pr_count(&rd, 32);
  for (k = 0; k < nruns && !rd.bad; k++) {
    int64_t id = orion_pr_i64(&rd), first = orion_pr_i64(&rd);
    int64_t count = orion_pr_i64(&rd);
    size_t len;
    const char *data = orion_pr_bytes(&rd, &len);
    arr_use *u = use_of(r, id);
    size_t esz;
    if (data == NULL || u == NULL || u->d->a->sparse)
      fail_frame(r, e, "BLOCK_DONE");
    esz = orion_type_size(u->d->a->type);
    if (first < 0 || count <= 0 || first > u->d->a->nnz ||
        count > u->d->a->nnz - first || len != (size_t)count * esz)
      fail_frame(r, e, "BLOCK_DONE");
    memcpy((char *)u->d->a->values + (size_t)first * esz, data, len);
    mark_changed(u, e, r->seq[pos], first, count);
  }
  if (rd.bad || rd.left != 0)
    fail_frame(r, e, "BLOCK_DONE");
  r->state[pos] = 2;
  r->done++;
  /* Only the blocks waiting on this one can have become ready. */
  for (q = 0; q < 2; q++) {
    int nx = q == 0 ? r->next_p[pos] : r->next_q[pos];
    if (nx >= 0 && --r->ndeps[nx] == 0 && r->state[nx] == 0 && !r->failed)
      send_block(r, nx);
  }
  if (r->done == r->j->nblocks)
    end_loop(r);
}

static void on_flush(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t id, n, k, last;
  orion_pend_item *items;
  orion_error err;
  arr_use *u = NULL;
  int i;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  orion_pr_i64(&rd); /* run: only the current one can arrive here */
  id = orion_pr_i64(&rd);
  orion_pr_i64(&rd); /* isint: the driver's buffer knows its type */
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].id == id)
      u = use_of(r, r->j->bufs[i].target);
  if (u == NULL)
    fail_frame(r, e, "BUFFER_FLUSH");
  n = orion_flush_items_get(&rd, &items);
  if (rd.bad || rd.left != 0) {
    orion_free(items);
    fail_frame(r, e, "BUFFER_FLUSH");
  }
  if (n < 0)
    orion_cluster_fail(r->cl, "out of memory applying buffered writes");
  orion_error_clear(&err);
  if (orion_exec_buffer_apply(r->s->ex, id, items, n, &err) != 0) {
    if (!r->failed) {
      r->failed = 1;
      r->err_pos = -1;
      r->err = err;
    }
  }
  /* The target changed there: every executor's copy of those chunks is
   * stale.  Items come in ascending key order, so one mark per chunk. */
  for (k = 0, last = -1; k < n; k++) {
    int64_t chunk;
    if (items[k].key < 0 || items[k].key >= u->d->a->nnz)
      continue; /* refused by the apply above */
    chunk = items[k].key / u->c->row_elems / u->c->chunk;
    if (chunk != last)
      mark_changed(u, -1, 0, items[k].key, 1);
    last = chunk;
  }
  orion_free(items);
}

static void on_loop_done(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t n, k;
  uint64_t seq;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  n = orion_pr_count(&rd, 40);
  for (k = 0; k < n && !rd.bad; k++) {
    int64_t id = orion_pr_i64(&rd);
    orion_accval v;
    dacc *acc;
    v.has = (int)orion_pr_i64(&rd);
    v.isint = (int)orion_pr_i64(&rd);
    v.i = (lua_Integer)orion_pr_i64(&rd);
    v.d = (lua_Number)orion_pr_f64(&rd);
    acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, id);
    if (acc != NULL && v.has && !r->failed)
      orion_accval_combine(&acc->val, acc->op, &v);
  }
  r->peer_bytes += (uint64_t)orion_pr_i64(&rd);
  r->shard_items += (uint64_t)orion_pr_i64(&rd);
  /* The rows of deferred arrays it kept during the run. */
  n = orion_pr_count(&rd, 32);
  seq = ++dispatch_counter; /* after every block e was sent */
  for (k = 0; k < n && !rd.bad; k++) {
    int64_t id = orion_pr_i64(&rd), first = orion_pr_i64(&rd);
    int64_t count = orion_pr_i64(&rd);
    size_t len, esz;
    const char *data = orion_pr_bytes(&rd, &len);
    arr_use *u = use_of(r, id);
    if (data == NULL || u == NULL || !u->deferred)
      fail_frame(r, e, "LOOP_DONE");
    esz = orion_type_size(u->d->a->type);
    if (first < 0 || count <= 0 || first > u->d->a->nnz ||
        count > u->d->a->nnz - first || len != (size_t)count * esz)
      fail_frame(r, e, "LOOP_DONE");
    memcpy((char *)u->d->a->values + (size_t)first * esz, data, len);
    mark_changed(u, e, seq, first, count);
  }
  if (rd.bad || rd.left != 0)
    fail_frame(r, e, "LOOP_DONE");
  r->loop_done++;
}

/* An owner's changes to its shards during the run: they become the
 * driver's, and the owner holds them (nobody else does). */
static void on_shard_data(loop_run *r, int e, const orion_wire_frame *f) {
  orion_reader rd;
  int64_t n, k;
  orion_reader_init(&rd, (const char *)f->payload, f->len);
  n = orion_pr_count(&rd, 32);
  for (k = 0; k < n && !rd.bad; k++) {
    int64_t id = orion_pr_i64(&rd), first = orion_pr_i64(&rd);
    int64_t count = orion_pr_i64(&rd), c0, c1;
    size_t len, esz;
    const char *data = orion_pr_bytes(&rd, &len);
    arr_use *u = use_of(r, id);
    if (data == NULL || u == NULL || !u->sharded)
      fail_frame(r, e, "SHARD_DATA");
    esz = orion_type_size(u->d->a->type);
    if (first < 0 || count <= 0 || first > u->d->a->nnz ||
        count > u->d->a->nnz - first || len != (size_t)count * esz)
      fail_frame(r, e, "SHARD_DATA");
    c0 = first / u->c->row_elems / u->c->chunk;
    c1 = (first + count - 1) / u->c->row_elems / u->c->chunk;
    if (c0 < orion_shard_first(e, r->n, u->c->nchunks) ||
        c1 >= orion_shard_first(e + 1, r->n, u->c->nchunks))
      fail_frame(r, e, "SHARD_DATA");
    memcpy((char *)u->d->a->values + (size_t)first * esz, data, len);
    mark_changed(u, e, r->pull_seq, first, count);
  }
  if (rd.bad || rd.left != 0)
    fail_frame(r, e, "SHARD_DATA");
  r->pulled++;
}

static void on_frame(void *ud, int e, const orion_wire_frame *f) {
  loop_run *r = ud;
  switch (f->type) {
  case ORION_WIRE_SHARD_DATA:
    on_shard_data(r, e, f);
    break;
  case ORION_WIRE_BLOCK_DONE:
    on_block_done(r, e, f);
    break;
  case ORION_WIRE_BUFFER_FLUSH:
    on_flush(r, e, f);
    break;
  case ORION_WIRE_LOOP_DONE:
    on_loop_done(r, e, f);
    break;
  case ORION_WIRE_BODY_ERROR: {
    orion_wire_body_error be;
    orion_error err;
    orion_error_clear(&err);
    if (orion_wire_body_error_decode(f->payload, f->len, &be, &err) != 0)
      fail_frame(r, e, "BODY_ERROR");
    {
      /* Of several failing blocks, the first in the loop's order is
       * reported, as a serial run would. */
      char num[32];
      int64_t blk;
      int pos;
      snprintf(num, sizeof num, "%.*s", (int)(be.key_len < 31 ? be.key_len
                                                              : 31),
               be.key);
      blk = strtoll(num, NULL, 10);
      pos = blk >= 0 && blk < r->j->nblocks ? r->pos_of[blk] : -1;
      if (!r->failed || (pos >= 0 && (r->err_pos < 0 || pos < r->err_pos))) {
        r->failed = 1;
        r->err_pos = pos;
        orion_error_set(&r->err, ORION_EBODY, "%.*s", (int)be.msg_len,
                        be.msg);
      }
    }
    end_loop(r);
    break;
  }
  default:
    orion_cluster_fail(r->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(r->cl, e),
                       orion_wire_type_name(f->type));
  }
}

static int loop_finished(void *ud) {
  loop_run *r = ud;
  return r->loop_done == r->n;
}

static int all_pulled(void *ud) {
  loop_run *r = ud;
  return r->pulled == r->n;
}

/* Server-held arrays that no body writes directly are sharded across the
 * executors: each owns a contiguous range of the array's chunks, applies
 * the buffered writes to them and serves reads of them to the others. */
static void decide_shard(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  const orion_plan_array *pa;
  int i;
  if (p == NULL || u->plan_index < 0 || u->iterated || u->d->a->sparse ||
      u->c->nchunks == 0)
    return;
  pa = &p->arrays[u->plan_index];
  if ((pa->place != PLACE_SERVER_RO && pa->place != PLACE_SERVER_BUF) ||
      pa->writes > 0)
    return;
  u->sharded = 1;
  u->shard_flags = pa->reads > 0 ? ORION_SHARD_FETCH : 0;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].target == u->d->id)
      u->shard_flags |= ORION_SHARD_WRITTEN;
}

/* Collects the shards' changes once every executor is done (their
 * LOOP_DONE waits until their buffered writes are applied by the owners). */
static void pull_shards(loop_run *r) {
  int e, i, any = 0;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].sharded && (r->use[i].shard_flags & ORION_SHARD_WRITTEN))
      any = 1;
  if (!any)
    return;
  if (r->failed) {
    /* The owners applied part of the loop's writes: nobody's copy can be
     * trusted any more. */
    for (i = 0; i < r->nuse; i++) {
      arr_use *u = &r->use[i];
      int64_t k;
      if (u->sharded && (u->shard_flags & ORION_SHARD_WRITTEN))
        for (k = 0; k < u->c->nchunks; k++)
          u->c->ver[k] = ++version_counter;
    }
    return;
  }
  r->pull_seq = ++dispatch_counter;
  for (e = 0; e < r->n; e++) {
    orion_buf b;
    orion_buf_init(&b);
    orion_wire_encode(&b, ORION_WIRE_SHARD_PULL, NULL, 0);
    orion_cluster_send(r->cl, e, &b);
    orion_buf_free(&b);
  }
  orion_cluster_wait(r->cl, all_pulled, r);
}

/* ---- starting a loop ---------------------------------------------------- */

static orion_cluster *ensure_cluster(mod_state *s) {
  orion_error err;
  orion_cluster_opts o = s->copts;
  if (s->cl != NULL)
    return s->cl;
  o.nexec = s->nexec;
  orion_error_clear(&err);
  s->cl = orion_cluster_start(&o, &err);
  if (s->cl == NULL) {
    fflush(stdout);
    fprintf(stderr, "orion-driver: cannot start the cluster: %s\n", err.msg);
    exit(ORION_EXIT_CLUSTER);
  }
  return s->cl;
}

static void send_forget(mod_state *s) {
  int e, i;
  if (s->nforget == 0)
    return;
  for (e = 0; e < orion_cluster_size(s->cl); e++) {
    orion_buf b;
    size_t at;
    orion_buf_init(&b);
    at = orion_wire_begin(&b, ORION_WIRE_FORGET);
    orion_buf_u64(&b, (uint64_t)s->nforget);
    for (i = 0; i < s->nforget; i++)
      orion_pw_i64(&b, s->forget[i]);
    orion_wire_end(&b, at);
    orion_cluster_send(s->cl, e, &b);
    orion_buf_free(&b);
  }
  s->nforget = 0;
}

/* Whether u's write-back can wait for the end of the loop (see arr_use):
 * a dense, unsharded, non-iterated array whose every access is direct and
 * subscripts dimension 1 with the space key, in a schedule that cuts the
 * space key into plain ranges.  ORION_NO_DEFER=1 turns it off (to compare
 * in benchmarks). */
static void decide_deferred(loop_run *r, arr_use *u) {
  const orion_plan *p = r->j->plan;
  int i, any = 0;
  u->deferred = 0;
  if (p == NULL || u->plan_index < 0 || u->iterated || u->sharded ||
      u->d->a->sparse || p->space < 0 || getenv("ORION_NO_DEFER") != NULL)
    return;
  if (p->sched != ORION_SCHED_1D && p->sched != ORION_SCHED_2D &&
      p->sched != ORION_SCHED_2D_ORDERED)
    return;
  for (i = 0; i < r->j->nbufs; i++)
    if (r->j->bufs[i].target == u->d->id)
      return;
  for (i = 0; i < p->nacc; i++) {
    const orion_access *ac = &p->acc[i];
    if (ac->array != u->plan_index)
      continue;
    if (ac->buffered || ac->nsub < 1 || ac->sub[0].kind != SUB_KEY ||
        ac->sub[0].dim != p->space || ac->sub[0].c != 0)
      return;
    any = 1;
  }
  u->deferred = any;
}

static int add_use(loop_run *r, darray *d, int iterated) {
  int i;
  if (d == NULL || d->a == NULL)
    return ORION_EINVAL;
  for (i = 0; i < r->nuse; i++)
    if (r->use[i].d == d)
      return 0;
  r->use[r->nuse].d = d;
  r->use[r->nuse].iterated = iterated;
  r->use[r->nuse].plan_index = -1;
  r->use[r->nuse].c = cache_of(d, r->n);
  if (r->use[r->nuse].c == NULL)
    return ORION_ENOMEM;
  if (r->j->plan != NULL)
    for (i = 0; i < r->j->plan->narrays; i++)
      if (r->j->plan->arrays[i].info.id == d->id)
        r->use[r->nuse].plan_index = i;
  decide_shard(r, &r->use[r->nuse]);
  decide_deferred(r, &r->use[r->nuse]);
  if (r->use[r->nuse].deferred) {
    r->use[r->nuse].dsent = orion_calloc((size_t)r->j->it->bs.n0 + 1, 1);
    if (r->use[r->nuse].dsent == NULL)
      return ORION_ENOMEM;
  }
  r->nuse++;
  return 0;
}

static void load_body_frame(loop_run *r, orion_buf *b, int e) {
  const orion_dist_job *j = r->j;
  size_t at = orion_wire_begin(b, ORION_WIRE_LOAD_BODY);
  int i, d;
  orion_pw_i64(b, j->load_loop);
  orion_pw_bytes(b, j->blob, j->blen);
  orion_pw_i64(b, j->it->id);
  orion_buf_u64(b, (uint64_t)r->nuse);
  for (i = 0; i < r->nuse; i++) {
    orion_array *a = r->use[i].d->a;
    orion_pw_i64(b, r->use[i].d->id);
    orion_buf_u64(b, (uint64_t)a->type);
    orion_buf_u64(b, (uint64_t)a->sparse);
    orion_buf_u64(b, (uint64_t)a->ndims);
    for (d = 0; d < a->ndims; d++)
      orion_pw_i64(b, a->dims[d]);
  }
  orion_buf_u64(b, (uint64_t)j->naccs);
  for (i = 0; i < j->naccs; i++) {
    dacc *acc = orion__by_id(r->L, ACCS_KEY, ACC_MT, j->accs[i]);
    orion_pw_i64(b, j->accs[i]);
    orion_buf_u64(b, acc != NULL ? (uint64_t)acc->op : 0);
  }
  orion_buf_u64(b, (uint64_t)j->nbufs);
  for (i = 0; i < j->nbufs; i++) {
    const orion_dist_buf *bf = &j->bufs[i];
    orion_pw_i64(b, bf->id);
    orion_pw_bytes(b, bf->name, strlen(bf->name));
    orion_pw_i64(b, bf->target);
    orion_buf_u64(b, (uint64_t)bf->op);
    orion_pw_bytes(b, bf->blob, bf->blob != NULL ? bf->blen : 0);
    orion_pw_i64(b, bf->flush);
  }
  orion_pw_i64(b, r->run);
  /* The compiled body: its hash (0: interpret), the source unless the
   * executor has it, flags, slots. */
  if (j->csrc != NULL) {
    orion_buf_u64(b, r->chash);
    if (body_sent(e, r->n, r->chash))
      orion_pw_bytes(b, NULL, 0);
    else
      orion_pw_bytes(b, j->csrc, j->clen);
  } else {
    orion_buf_u64(b, 0);
    orion_pw_bytes(b, NULL, 0);
  }
  orion_pw_bytes(b, j->cflags, j->cflags != NULL ? strlen(j->cflags) : 0);
  orion_buf_u64(b, (uint64_t)j->tier_c);
  orion_buf_u64(b, (uint64_t)(j->csrc != NULL ? j->ncslots : 0));
  for (i = 0; j->csrc != NULL && i < j->ncslots; i++) {
    const orion_cslot *sl = &j->cslots[i];
    orion_buf_u64(b, (uint64_t)sl->kind);
    orion_pw_i64(b, sl->id);
    orion_buf_u64(b, (uint64_t)sl->isint);
    orion_pw_i64(b, sl->ival);
    orion_pw_f64(b, sl->fval);
  }
  {
    int nsh = 0;
    uint64_t seq = ++dispatch_counter;
    for (i = 0; i < r->nuse; i++)
      nsh += r->use[i].sharded;
    orion_buf_u64(b, (uint64_t)nsh);
    for (i = 0; i < r->nuse; i++) {
      arr_use *u = &r->use[i];
      int64_t k0, k1, lo, hi, runs;
      size_t cnt_at;
      if (!u->sharded)
        continue;
      orion_pw_i64(b, u->d->id);
      orion_buf_u64(b, (uint64_t)u->shard_flags);
      cnt_at = b->len;
      orion_buf_u64(b, 0);
      /* The rows of the receiver's own chunks that it lacks. */
      k0 = orion_shard_first(e, r->n, u->c->nchunks);
      k1 = orion_shard_first(e + 1, r->n, u->c->nchunks);
      lo = k0 * u->c->chunk;
      hi = k1 * u->c->chunk < u->c->rows ? k1 * u->c->chunk : u->c->rows;
      runs = add_rows(b, u, e, lo, hi, seq);
      put_count(b, cnt_at, runs);
    }
  }
  orion_wire_end(b, at);
}

/* Block versions of a sparse iterated array follow its blockset. */
static int setup_blocks(loop_run *r) {
  darray *it = r->j->it;
  dcache *c = r->itc;
  int nb = it->bs.n0 * it->bs.n1, k;
  if (c->bs_gen != it->bs_gen || c->nb != nb || c->bver == NULL) {
    orion_free(c->bver);
    orion_free(c->bhave);
    orion_free(c->krange);
    c->krange = NULL;
    c->bver = orion_calloc((size_t)nb + 1, sizeof *c->bver);
    c->bhave = orion_calloc((size_t)nb * (size_t)r->n + 1, sizeof *c->bhave);
    if (c->bver == NULL || c->bhave == NULL)
      return ORION_ENOMEM;
    for (k = 0; k < nb; k++)
      c->bver[k] = ++version_counter;
    c->nb = nb;
    c->bs_gen = it->bs_gen;
  }
  return block_ranges(r);
}

/* Positions that must finish before each block starts: the previous block
 * of its space part and (2-D) of its time part. */
static int setup_deps(loop_run *r) {
  int nb = r->j->nblocks, i, *last_p, *last_q;
  r->pos_of = orion_malloc(sizeof(int) * (size_t)nb + 1);
  r->ndeps = orion_calloc((size_t)nb + 1, sizeof(int));
  r->next_p = orion_malloc(sizeof(int) * (size_t)nb + 1);
  r->next_q = orion_malloc(sizeof(int) * (size_t)nb + 1);
  r->state = orion_calloc((size_t)nb + 1, sizeof(int));
  r->seq = orion_calloc((size_t)nb + 1, sizeof(uint64_t));
  last_p = orion_malloc(sizeof(int) * (size_t)nb + 1);
  last_q = orion_malloc(sizeof(int) * (size_t)nb + 1);
  if (r->pos_of == NULL || r->ndeps == NULL || r->next_p == NULL ||
      r->next_q == NULL || r->state == NULL || r->seq == NULL ||
      last_p == NULL ||
      last_q == NULL) {
    orion_free(last_p);
    orion_free(last_q);
    return ORION_ENOMEM;
  }
  for (i = 0; i < nb; i++) {
    last_p[i] = last_q[i] = -1;
    r->next_p[i] = r->next_q[i] = -1;
  }
  for (i = 0; i < nb; i++) {
    int b = r->j->order[i], p = b / r->n1, q = b % r->n1;
    r->pos_of[b] = i;
    if (last_p[p] >= 0) {
      r->next_p[last_p[p]] = i;
      r->ndeps[i]++;
    }
    last_p[p] = i;
    if (r->has_time) {
      if (last_q[q] >= 0) {
        r->next_q[last_q[q]] = i;
        r->ndeps[i]++;
      }
      last_q[q] = i;
    }
  }
  orion_free(last_p);
  orion_free(last_q);
  return 0;
}

static void run_free(loop_run *r) {
  int i;
  for (i = 0; i < r->nuse; i++)
    orion_free(r->use[i].dsent);
  orion_free(r->use);
  orion_free(r->pos_of);
  orion_free(r->ndeps);
  orion_free(r->next_p);
  orion_free(r->next_q);
  orion_free(r->state);
  orion_free(r->seq);
}

int orion__dist_run(lua_State *L, mod_state *s, const orion_dist_job *j,
                    orion_dist_stats *st, orion_error *err) {
  loop_run r;
  orion_cluster *cl = ensure_cluster(s);
  uint64_t bytes0;
  int i, e, rc = 0;

  memset(&r, 0, sizeof r);
  r.L = L;
  r.s = s;
  r.cl = cl;
  r.j = j;
  r.n = orion_cluster_size(cl);
  r.n1 = j->it->bs.n1;
  r.run = ++run_counter;
  r.chash = j->csrc != NULL ? body_hash(j) : 0;
  r.has_time = j->plan != NULL && j->plan->time >= 0 && j->it->bs.n1 > 1;
  r.secs = orion_calloc((size_t)r.n, sizeof *r.secs);
  r.use = orion_calloc((size_t)(j->narrays + j->nbufs + 1), sizeof *r.use);
  if (r.secs == NULL || r.use == NULL) {
    orion_free(r.secs);
    orion_free(r.use);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  bytes0 = orion_cluster_bytes(cl);
  send_forget(s);
  rc = add_use(&r, j->it, 1);
  for (i = 0; i < j->narrays && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->arrays[i]), 0);
  for (i = 0; i < j->nbufs && rc == 0; i++)
    rc = add_use(&r, orion__by_id(L, ARRAYS_KEY, ARRAY_MT, j->bufs[i].target),
                 0);
  if (rc == 0) {
    r.itc = r.use[0].c;
    rc = setup_blocks(&r);
  }
  if (rc == 0)
    rc = setup_deps(&r);
  if (rc != 0) {
    run_free(&r);
    orion_free(r.secs);
    return orion_error_set(err, rc, "parallel_for: cannot set up the loop: "
                                    "%s",
                           orion_strerror(rc));
  }
  orion_cluster_set_handler(cl, on_frame, &r, j->where);
  for (e = 0; e < r.n; e++) {
    orion_buf b;
    orion_buf_init(&b);
    load_body_frame(&r, &b, e);
    if (b.oom)
      orion_cluster_fail(cl, "out of memory sending the body");
    orion_cluster_send(cl, e, &b);
    orion_buf_free(&b);
  }
  dispatch_ready(&r);
  if (j->nblocks == 0)
    end_loop(&r);
  orion_cluster_wait(cl, loop_finished, &r);
  pull_shards(&r);
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  st->bytes = orion_cluster_bytes(cl) - bytes0;
  st->peer_bytes = r.peer_bytes;
  st->shard_items = r.shard_items;
  st->exec_seconds = r.secs;
  st->nexec = r.n;
  run_free(&r);
  if (r.failed) {
    *err = r.err;
    return r.err.code != 0 ? r.err.code : ORION_EBODY;
  }
  return 0;
}

/* ---- parallel loading --------------------------------------------------- */

typedef struct load_run {
  orion_cluster *cl;
  int n, got;
  orion_load_result *parts;
  char **errs; /* per executor: its error, or NULL */
} load_run;

/* An array from a LOADED frame (NULL with r bad on a malformed one). */
static orion_array *get_array(orion_reader *r) {
  orion_error err;
  orion_array *a;
  int64_t type = orion_pr_i64(r), nd = orion_pr_i64(r), dims[ORION_MAX_DIMS];
  int64_t nnz;
  size_t kl, vl;
  const char *keys, *vals;
  int d;
  if (type < 0 || type > ORION_I64 || nd < 1 || nd > ORION_MAX_DIMS) {
    r->bad = 1;
    return NULL;
  }
  for (d = 0; d < nd; d++)
    dims[d] = orion_pr_i64(r);
  nnz = orion_pr_i64(r);
  keys = orion_pr_bytes(r, &kl);
  vals = orion_pr_bytes(r, &vl);
  if (r->bad || nnz < 0 || vl != (size_t)nnz * orion_type_size((orion_type)type)) {
    r->bad = 1;
    return NULL;
  }
  orion_error_clear(&err);
  if (kl == 0 && nnz > 0) { /* dense */
    a = orion_array_new_dense((int)nd, dims, (orion_type)type, &err);
    if (a == NULL || a->nnz != nnz) {
      orion_array_release(a);
      r->bad = 1;
      return NULL;
    }
  } else {
    if (kl != (size_t)nnz * (size_t)nd * 8) {
      r->bad = 1;
      return NULL;
    }
    a = orion_array_new_sparse((int)nd, (orion_type)type, &err);
    if (a == NULL || orion_array_reserve(a, nnz > 0 ? nnz : 1) != 0) {
      orion_array_release(a);
      r->bad = 1;
      return NULL;
    }
    memcpy(a->keys, keys, kl);
    a->nnz = nnz;
    memcpy(a->dims, dims, sizeof(int64_t) * (size_t)nd);
  }
  memcpy(a->values, vals, vl);
  return a;
}

static void on_loaded(void *ud, int e, const orion_wire_frame *f) {
  load_run *lr = ud;
  orion_reader r;
  orion_load_result *res = &lr->parts[e];
  if (f->type != ORION_WIRE_LOADED)
    orion_cluster_fail(lr->cl, "executor %d (%s) sent an unexpected %s frame",
                       e, orion_cluster_addr(lr->cl, e),
                       orion_wire_type_name(f->type));
  orion_reader_init(&r, (const char *)f->payload, f->len);
  if (orion_pr_i64(&r) == 0) {
    size_t n;
    const char *msg = orion_pr_bytes(&r, &n);
    lr->errs[e] = orion_strndup(msg != NULL ? msg : "?", msg != NULL ? n : 1);
  } else {
    size_t n;
    const char *fs;
    res->array = get_array(&r);
    if (orion_pr_i64(&r) == 1)
      res->labels = get_array(&r);
    res->row_lo = orion_pr_i64(&r);
    res->lines = orion_pr_i64(&r);
    res->skipped = orion_pr_i64(&r);
    fs = orion_pr_bytes(&r, &n);
    if (r.bad || r.left != 0 || res->array == NULL)
      orion_cluster_fail(lr->cl, "executor %d (%s) sent a malformed LOADED "
                                 "frame",
                         e, orion_cluster_addr(lr->cl, e));
    snprintf(res->first_skip, sizeof res->first_skip, "%.*s", (int)n, fs);
  }
  lr->got++;
}

static int all_loaded(void *ud) {
  load_run *lr = ud;
  return lr->got == lr->n;
}

int orion__dist_load(mod_state *s, const char *path, const orion_load_opts *o,
                     orion_load_result *res, orion_error *err) {
  orion_cluster *cl = ensure_cluster(s);
  load_run lr;
  char doing[512];
  int e, d, rc = 0;
  memset(&lr, 0, sizeof lr);
  lr.cl = cl;
  lr.n = orion_cluster_size(cl);
  lr.parts = orion_calloc((size_t)lr.n, sizeof *lr.parts);
  lr.errs = orion_calloc((size_t)lr.n, sizeof *lr.errs);
  if (lr.parts == NULL || lr.errs == NULL) {
    orion_free(lr.parts);
    orion_free(lr.errs);
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  }
  snprintf(doing, sizeof doing, "while loading %s", path);
  orion_cluster_set_handler(cl, on_loaded, &lr, doing);
  for (e = 0; e < lr.n; e++) {
    orion_buf b;
    size_t at;
    orion_buf_init(&b);
    at = orion_wire_begin(&b, ORION_WIRE_LOAD_FILE);
    orion_pw_bytes(&b, path, strlen(path));
    orion_pw_i64(&b, e);
    orion_pw_i64(&b, lr.n);
    orion_pw_i64(&b, o->format);
    orion_pw_i64(&b, o->index_base);
    orion_pw_i64(&b, o->nkeys);
    orion_pw_i64(&b, o->have_dims);
    for (d = 0; d < ORION_MAX_DIMS; d++)
      orion_pw_i64(&b, o->dims[d]);
    orion_pw_i64(&b, o->value_type);
    orion_pw_i64(&b, o->skip_errors);
    orion_pw_i64(&b, o->sep);
    orion_pw_i64(&b, o->header);
    orion_pw_i64(&b, o->ncols_key);
    for (d = 0; d < ORION_MAX_DIMS; d++)
      orion_pw_i64(&b, o->key_cols[d]);
    orion_pw_i64(&b, o->value_col);
    orion_wire_end(&b, at);
    orion_cluster_send(cl, e, &b);
    orion_buf_free(&b);
  }
  orion_cluster_wait(cl, all_loaded, &lr);
  orion_cluster_set_handler(cl, NULL, NULL, NULL);
  /* The first range's error is the one a whole load reports first. */
  for (e = 0; e < lr.n && rc == 0; e++)
    if (lr.errs[e] != NULL)
      rc = orion_error_set(err, ORION_EPARSE, "%s", lr.errs[e]);
  if (rc == 0)
    rc = orion_load_merge(lr.parts, lr.n, o, res, err);
  for (e = 0; e < lr.n; e++) {
    orion_array_release(lr.parts[e].array);
    orion_array_release(lr.parts[e].labels);
    orion_free(lr.errs[e]);
  }
  orion_free(lr.parts);
  orion_free(lr.errs);
  return rc;
}
