/* The executors' share of orion.checkpoint (lua/checkpoint_parts.h).
 *
 * An array whose rows loops left on executors (dsm/holders.h) is written
 * in parts: each piece an executor holds by that executor (CKPT_WRITE,
 * answered by CKPT_DONE with the part's size and CRC-32), the pieces the
 * driver holds by the driver's writer threads, all at the same time, into
 * the checkpoint's temporary folder; the driver writes the manifest last.
 * The rows stay where they are: nothing comes back to the driver.
 *
 * An executor that cannot write its parts (the folder is not on a
 * directory its host shares with the driver's, a full disk) answers why;
 * the driver then warns, takes that array's rows back and writes those
 * parts itself, so the checkpoint is still complete.  A part the driver
 * cannot see after an executor said it wrote it (an executor on another
 * host writing to a folder of the same name on its own disk) is treated
 * the same way.  A lost executor ends the checkpoint like any loop (the
 * temporary folder is never used; automatic recovery starts again from
 * the previous checkpoint). */
#include "lua/checkpoint_parts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsm/cluster.h"
#include "dsm/holders.h"
#include "dsm/msg.h"
#include "dsm/replica.h"
#include "dsm/types.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/log.h"

struct orion_ckpt_remote {
  mod_state *s;
  orion_ckpt *ck;
  darray **ds;    /* the script's arrays, as ck->arrays */
  int nexec;
  int pending;    /* CKPT_DONEs still to come */
  char **failed;  /* per executor: why it could not write (NULL: wrote) */
  int written;    /* parts the executors wrote */
  char doing[96];
};

/* ---- the plan ------------------------------------------------------------ */

typedef struct plan_ctx {
  orion_ckpt *ck;
  orion_cluster *cl;
  const darray *d;
  int cap;
  int rc;
} plan_ctx;

/* A piece of an array's elements held by executor e (-1: the driver): a
 * part, merged into the one before when the same writer holds both. */
static int add_piece(void *ud, int64_t lo, int64_t hi, int e) {
  plan_ctx *x = ud;
  orion_ckpt *ck = x->ck;
  orion_ckpt_part *p;
  size_t k;
  if (hi <= lo)
    return 0;
  p = ck->nparts > 0 ? &ck->parts[ck->nparts - 1] : NULL;
  if (p != NULL && p->array == x->d->id && p->writer == e &&
      p->first + p->count == lo) {
    p->count = hi - p->first;
    return 0;
  }
  if (ck->nparts == x->cap) {
    int nc = x->cap > 0 ? 2 * x->cap : 16;
    orion_ckpt_part *np = orion_realloc(ck->parts, sizeof *np * (size_t)nc);
    if (np == NULL)
      return ORION_ENOMEM;
    ck->parts = np;
    x->cap = nc;
  }
  p = &ck->parts[ck->nparts++];
  memset(p, 0, sizeof *p);
  p->array = x->d->id;
  p->first = lo;
  p->count = hi - lo;
  p->writer = e;
  p->a = x->d->a;
  snprintf(p->host, sizeof p->host, "%s",
           e >= 0 ? orion_cluster_host(x->cl, e) : "-");
  for (k = 0; p->host[k] != '\0'; k++)
    if ((unsigned char)p->host[k] <= ' ')
      p->host[k] = '?';
  return 0;
}

static int start(void *ud, const char *tmp, orion_error *err);
static int collect(void *ud, const char *tmp, orion_error *err);

orion_ckpt_remote *orion__ckpt_remote_plan(mod_state *s, orion_ckpt *ck,
                                           darray **ds) {
  const char *off = getenv("ORION_CKPT_NO_PARTS");
  orion_ckpt_remote *r;
  plan_ctx x;
  int i;
  if (s->cl == NULL || (off != NULL && off[0] != '\0' && strcmp(off, "0")))
    return NULL;
  memset(&x, 0, sizeof x);
  x.ck = ck;
  x.cl = s->cl;
  for (i = 0; i < ck->narrays && x.rc == 0; i++) {
    const darray *d = ds[i];
    int before = ck->nparts;
    if (d->rep == NULL || d->rep->held.n == 0 || d->a->sparse)
      continue;
    x.d = d;
    x.rc = orion_holders_each(&d->rep->held, 0, d->a->nnz, add_piece, &x);
    ck->arrays[i].nparts = ck->nparts - before;
  }
  r = x.rc == 0 && ck->nparts > 0 ? orion_calloc(1, sizeof *r) : NULL;
  if (r != NULL) {
    r->nexec = orion_cluster_size(s->cl);
    r->failed = orion_calloc((size_t)r->nexec, sizeof *r->failed);
  }
  if (r == NULL || r->failed == NULL) {
    orion_free(r);
    orion_free(ck->parts);
    ck->parts = NULL;
    ck->nparts = 0;
    for (i = 0; i < ck->narrays; i++)
      ck->arrays[i].nparts = 0;
    return NULL; /* the driver takes the rows back instead */
  }
  r->s = s;
  r->ck = ck;
  r->ds = ds;
  snprintf(r->doing, sizeof r->doing,
           "writing the checkpoint of step %" PRId64, ck->step);
  ck->hooks.start = start;
  ck->hooks.collect = collect;
  ck->hooks.ud = r;
  return r;
}

int orion__ckpt_remote_parts(const orion_ckpt_remote *r) {
  return r != NULL ? r->written : 0;
}

void orion__ckpt_remote_free(orion_ckpt_remote *r, orion_ckpt *ck) {
  int e;
  orion_free(ck->parts);
  ck->parts = NULL;
  ck->nparts = 0;
  memset(&ck->hooks, 0, sizeof ck->hooks);
  if (r == NULL)
    return;
  for (e = 0; e < r->nexec; e++)
    orion_free(r->failed[e]);
  orion_free(r->failed);
  orion_free(r);
}

/* ---- the executors' writing -------------------------------------------- */

/* CKPT_WRITE to every executor that holds parts. */
static int start(void *ud, const char *tmp, orion_error *err) {
  orion_ckpt_remote *r = ud;
  orion_ckpt *ck = r->ck;
  orion_msg_range *rg = orion_malloc(sizeof *rg * (size_t)ck->nparts);
  int e, k;
  if (rg == NULL)
    return orion_error_set(err, ORION_ENOMEM, "out of memory");
  for (e = 0; e < r->nexec; e++) {
    orion_msg_ckpt_write m;
    orion_buf b;
    m.step = ck->step;
    m.folder = tmp;
    m.folder_len = strlen(tmp);
    m.ranges = rg;
    m.n = 0;
    for (k = 0; k < ck->nparts; k++)
      if (ck->parts[k].writer == e) {
        rg[m.n].array = ck->parts[k].array;
        rg[m.n].first = ck->parts[k].first;
        rg[m.n].count = ck->parts[k].count;
        m.n++;
      }
    if (m.n == 0)
      continue;
    orion_buf_init(&b);
    if (orion_msg_ckpt_write_encode(&b, &m) != 0 || b.oom)
      orion_cluster_fail(r->s->cl, "cannot encode CKPT_WRITE for %s", tmp);
    orion_cluster_send(r->s->cl, e, &b);
    orion_buf_free(&b);
    r->pending++;
  }
  orion_free(rg);
  return 0;
}

static void fail_exec(orion_ckpt_remote *r, int e, const char *why) {
  if (r->failed[e] == NULL)
    r->failed[e] = orion_strdup(why);
}

/* CKPT_DONE from executor e: its parts' sizes and CRC-32s, in the order
 * asked, or why it could not write them. */
static void on_done(void *ud, int e, const orion_wire_frame *f) {
  orion_ckpt_remote *r = ud;
  orion_ckpt *ck = r->ck;
  orion_msg_ckpt_done m;
  int64_t n = 0;
  int k;
  if (f->type != ORION_WIRE_CKPT_DONE ||
      orion_msg_ckpt_done_decode(f->payload, f->len, &m, NULL) != 0 ||
      m.step != ck->step)
    orion_cluster_fail(r->s->cl, "executor %d (%s) sent a malformed %s "
                                 "frame %s",
                       e, orion_cluster_addr(r->s->cl, e),
                       orion_wire_type_name(f->type), r->doing);
  if (m.error_len > 0) {
    char why[1100];
    snprintf(why, sizeof why, "%.*s", (int)m.error_len, m.error);
    fail_exec(r, e, why);
  }
  for (k = 0; k < ck->nparts && m.error_len == 0; k++) {
    orion_ckpt_part *p = &ck->parts[k];
    const orion_msg_ckpt_part *q;
    int64_t re;
    if (p->writer != e)
      continue;
    q = n < m.n ? &m.parts[n] : NULL;
    n++;
    if (q == NULL || q->array != p->array || q->first != p->first ||
        q->count != p->count)
      orion_cluster_fail(r->s->cl, "executor %d (%s) sent a CKPT_DONE "
                                   "frame that does not answer its "
                                   "CKPT_WRITE (part %" PRId64 ")",
                         e, orion_cluster_addr(r->s->cl, e), n);
    re = p->a->nnz / p->a->dims[0];
    orion_ckpt_part_name(p->file, sizeof p->file, p->array, p->first / re);
    p->size = q->size;
    p->crc = q->crc;
  }
  if (m.error_len == 0 && n != m.n)
    orion_cluster_fail(r->s->cl, "executor %d (%s) sent a CKPT_DONE frame "
                                 "with %" PRId64 " parts, not %" PRId64,
                       e, orion_cluster_addr(r->s->cl, e), m.n, n);
  orion_msg_ckpt_done_free(&m);
  r->pending--;
}

static int all_done(void *ud) { return ((orion_ckpt_remote *)ud)->pending == 0; }

/* Waits for every CKPT_DONE; an executor's parts that are not in the
 * driver's folder as it said are written by the driver, from the rows it
 * takes back. */
static int collect(void *ud, const char *tmp, orion_error *err) {
  orion_ckpt_remote *r = ud;
  orion_ckpt *ck = r->ck;
  int e, i, k, rc = 0;
  if (r->pending > 0) {
    orion_cluster_set_handler(r->s->cl, on_done, r, r->doing);
    orion_cluster_wait(r->s->cl, all_done, r);
    orion_cluster_set_handler(r->s->cl, NULL, NULL, NULL);
  }
  for (k = 0; k < ck->nparts; k++) {
    orion_ckpt_part *p = &ck->parts[k];
    char path[4352];
    struct stat st;
    if (p->writer < 0 || r->failed[p->writer] != NULL)
      continue;
    snprintf(path, sizeof path, "%s/%s", tmp, p->file);
    if (stat(path, &st) != 0 || (uint64_t)st.st_size != p->size)
      fail_exec(r, p->writer, "the driver cannot see them in its folder: "
                              "is the checkpoint directory not shared with "
                              "that host?");
  }
  for (e = 0; e < r->nexec; e++)
    if (r->failed[e] != NULL)
      orion_log_warn("checkpoint of step %" PRId64 ": executor %d on %s "
                     "did not write its parts (%s); the driver takes those "
                     "rows back and writes them",
                     ck->step, e, orion_cluster_host(r->s->cl, e),
                     r->failed[e]);
  /* The driver's own parts are written; the failed ones now. */
  for (i = 0; i < ck->narrays; i++) {
    int any = 0;
    for (k = 0; k < ck->nparts; k++)
      any |= ck->parts[k].array == ck->arrays[i].id &&
             ck->parts[k].writer >= 0 && r->failed[ck->parts[k].writer];
    if (any)
      orion__dist_reclaim(r->s, r->ds[i]);
  }
  for (k = 0; k < ck->nparts && rc == 0; k++) {
    orion_ckpt_part *p = &ck->parts[k];
    if (p->writer < 0)
      continue;
    if (r->failed[p->writer] == NULL) {
      r->written++;
      continue;
    }
    p->writer = -1;
    snprintf(p->host, sizeof p->host, "-");
    rc = orion_ckpt_write_part(tmp, p->a, p->array, p->first, p->count,
                               p->file, sizeof p->file, &p->size, &p->crc,
                               err);
  }
  return rc;
}
