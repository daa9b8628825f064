/* The execution simulator: a discrete-event model of a loop's pass that
 * drives the loop state machine (scheduler/sim.h has the model). */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/loop.h"
#include "scheduler/schedule.h"
#include "scheduler/sim.h"
#include "scheduler/sim_order.h"
#include "util/alloc.h"

enum { EV_ARRIVE, EV_DATA, EV_CEND, EV_REPORT, EV_PROCESS, EV_EDONE };

typedef struct event {
  double t;
  uint64_t seq; /* ties: in the order they were made */
  int kind, block, exec;
} event;

typedef struct sim {
  const orion_sim_loop *lp;
  const orion_sim_cluster *c;
  orion_schedule s;
  orion_loop l;
  event *heap;
  int nheap, capheap;
  uint64_t seq;
  double now;
  double drv_out, drv_cpu;   /* the driver's link and CPU free from */
  double drv_tok;            /* bytes in the driver's bucket at drv_out */
  double *out_free, *in_free; /* per host: its link's two directions */
  double *out_tok, *in_tok;  /* per host: bytes in each direction's bucket
                                at out_free / in_free */
  int *loc;                  /* per time part: the executor holding it */
  int *next;                 /* per block: the one after it in its host's
                                queue, -1 */
  int *head, *tail;          /* per host: its queue's first and last
                                block (in the order they came), -1 */
  unsigned char *ready;      /* per block: its rows are there */
  unsigned char *busy;       /* per host */
  unsigned char *sent;       /* per host: a block was sent to it */
  double *drv_in;            /* per block: the driver's bytes it brought */
  double *cpu_free;          /* per host, idle: its CPU busy with the
                                exchange until then */
  double *debt;              /* per host, running a block: the exchange's
                                work that came since, which the block's
                                end waits for */
  double busy_sum;
  int oom;
} sim;

static double elems_of(const orion_sim_loop *lp, int b) {
  int64_t nb = (int64_t)lp->n0 * lp->n1, q, r;
  if (lp->elems != NULL)
    return (double)lp->elems[b];
  q = lp->elems_total / nb;
  r = lp->elems_total % nb;
  return (double)(q + (b < r ? 1 : 0));
}

/* The exchange's CPU for bytes sent or received by host e at the time
 * now: work for its CPU, after the block it runs or before its next. */
static void charge(sim *m, int e, double bytes) {
  double w = bytes * m->lp->exch_elems_per_byte * m->c->hosts[e].sec_per_elem;
  if (w <= 0)
    return;
  if (m->busy[e])
    m->debt[e] += w;
  else
    m->cpu_free[e] = (m->cpu_free[e] > m->now ? m->cpu_free[e] : m->now) + w;
}

/* Bytes in h's bucket at t, holding tok at `since` (refilled at its rate,
 * at most its burst). */
static double bucket(const orion_sim_host *h, double tok, double since,
                     double t) {
  if (h->burst <= 0)
    return 0;
  tok += h->bw > 0 ? (t - since) * h->bw : h->burst;
  return tok < h->burst ? tok : h->burst;
}

/* Seconds bytes take over a link of bandwidth bw whose bucket holds tok
 * (0 with an unlimited bandwidth or bytes it holds). */
static double drain(double bytes, double bw, double tok) {
  return bw <= 0 || bytes <= tok ? 0.0 : (bytes - tok) / bw;
}

/* h's bucket after bytes went in d seconds from a bucket holding tok. */
static double spent(const orion_sim_host *h, double tok, double bytes,
                    double d) {
  if (h->burst <= 0)
    return 0;
  tok += (h->bw > 0 ? d * h->bw : 0) - bytes;
  return tok < 0 ? 0 : tok > h->burst ? h->burst : tok;
}

static int ev_less(const event *a, const event *b) {
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(sim *m, double t, int kind, int block, int exec) {
  int i;
  if (m->nheap == m->capheap) {
    int cap = m->capheap ? 2 * m->capheap : 64;
    event *h = orion_realloc(m->heap, sizeof(event) * (size_t)cap);
    if (h == NULL) {
      m->oom = 1;
      return;
    }
    m->heap = h;
    m->capheap = cap;
  }
  i = m->nheap++;
  m->heap[i] = (event){t, m->seq++, kind, block, exec};
  while (i > 0 && ev_less(&m->heap[i], &m->heap[(i - 1) / 2])) {
    event x = m->heap[i];
    m->heap[i] = m->heap[(i - 1) / 2];
    m->heap[(i - 1) / 2] = x;
    i = (i - 1) / 2;
  }
}

static event pop(sim *m) {
  event top = m->heap[0];
  int i = 0;
  m->heap[0] = m->heap[--m->nheap];
  for (;;) {
    int a = 2 * i + 1, b = a + 1, k = i;
    if (a < m->nheap && ev_less(&m->heap[a], &m->heap[k]))
      k = a;
    if (b < m->nheap && ev_less(&m->heap[b], &m->heap[k]))
      k = b;
    if (k == i)
      break;
    event x = m->heap[i];
    m->heap[i] = m->heap[k];
    m->heap[k] = x;
    i = k;
  }
  return top;
}

/* ---- the transport the state machine drives ----------------------------- */

static void io_send(void *ud, int e, int block) {
  sim *m = ud;
  const orion_sim_host *d = &m->c->driver, *he = &m->c->hosts[e];
  double t = m->now > m->drv_out ? m->now : m->drv_out;
  double bytes = m->lp->drv_block_bytes +
                 m->lp->drv_elem_bytes * elems_of(m->lp, block) +
                 (m->sent[e] ? 0 : m->lp->drv_exec_bytes);
  m->sent[e] = 1;
  m->drv_in[block] = bytes;
  double tok = bucket(d, m->drv_tok, m->drv_out, t);
  double dt = drain(bytes, d->bw, tok), de = drain(bytes, he->bw, he->burst);
  if (de > dt)
    dt = de;
  m->drv_tok = spent(d, tok, bytes, dt);
  t += dt;
  m->drv_out = t;
  push(m, t + m->c->driver.latency + m->c->hosts[e].latency, EV_ARRIVE, block,
       e);
}

static void io_end(void *ud, int e, int abort) {
  sim *m = ud;
  (void)abort;
  push(m, m->now + 2 * (m->c->driver.latency + m->c->hosts[e].latency),
       EV_EDONE, -1, e);
}

static void io_pull(void *ud, int e) {
  (void)ud;
  (void)e; /* the simulated loops collect no shards */
}

static void io_fail(void *ud, int e, int block, const char *msg) {
  (void)ud;
  (void)e;
  (void)block;
  (void)msg; /* simulated executors neither fail nor go away */
}

/* ---- the hosts ------------------------------------------------------------ */

static int pushing(const sim *m);

/* Whether hosts start a later block first (only ahead, as the runtime). */
static int reordering(const sim *m) {
  return m->lp->reorder && pushing(m);
}

/* Host e runs the oldest block it holds (scheduler/sim_order.h: or one
 * after it), once idle and its rows are there. */
static void try_start(sim *m, int e) {
  int prev = -1, b = m->busy[e] ? -1
                           : orion__sim_pick(m->next, m->head[e], m->ready,
                                             m->s.n1, reordering(m), &prev);
  if (b < 0)
    return;
  if (prev < 0)
    m->head[e] = m->next[b];
  else
    m->next[prev] = m->next[b];
  if (m->tail[e] == b)
    m->tail[e] = prev;
  m->busy[e] = 1;
  double secs = elems_of(m->lp, b) * m->c->hosts[e].sec_per_elem;
  m->busy_sum += secs;
  /* the shard traffic's CPU, inside the block: its bytes, sent and
   * received, the part (n - 1) / n of them between hosts */
  secs += 2 * elems_of(m->lp, b) * m->lp->shard_bytes_per_elem *
          (m->c->n - 1) / m->c->n * m->lp->exch_elems_per_byte *
          m->c->hosts[e].sec_per_elem;
  /* after the exchange's work that is still under way */
  push(m, (m->cpu_free[e] > m->now ? m->cpu_free[e] : m->now) + secs, EV_CEND,
       b, e);
}

/* A time part's rows over h's outgoing and e's incoming link, from t at
 * the earliest (each direction carries one transfer at a time; the
 * buckets' bytes go at once, the rest at the slower rate): when the last
 * byte has left. */
static double part_moved(sim *m, int h, int e, double t) {
  const orion_sim_host *hh = &m->c->hosts[h], *he = &m->c->hosts[e];
  double bytes = m->lp->part_bytes, th, te, d, de;
  if (m->out_free[h] > t)
    t = m->out_free[h];
  if (m->in_free[e] > t)
    t = m->in_free[e];
  th = bucket(hh, m->out_tok[h], m->out_free[h], t);
  te = bucket(he, m->in_tok[e], m->in_free[e], t);
  d = drain(bytes, hh->bw, th);
  de = drain(bytes, he->bw, te);
  if (de > d)
    d = de;
  m->out_tok[h] = spent(hh, th, bytes, d);
  m->in_tok[e] = spent(he, te, bytes, d);
  m->out_free[h] = m->in_free[e] = t + d;
  return t + d;
}

/* Ahead (orion_sim_loop.ahead): whether rows are pushed, and the push of
 * a time part's rows from host `from`, free at time t, to the host of the
 * part's block at position pos (-1: none).  The block is ready once they
 * are there (at once on the same host). */
static int pushing(const sim *m) {
  return m->lp->ahead && m->lp->early && !m->lp->dynamic && m->s.has_time;
}

static void push_rows(sim *m, int pos, int from, double t) {
  int b, e;
  double lat;
  if (pos < 0)
    return;
  b = m->s.order[pos];
  e = orion_loop_home(&m->l, b);
  if (e == from || m->lp->part_bytes <= 0) {
    m->ready[b] = 1;
    if (e != from) /* (from starts its next block after this) */
      try_start(m, e);
    return;
  }
  lat = m->c->hosts[from].latency + m->c->hosts[e].latency;
  charge(m, from, m->lp->part_bytes);
  push(m, part_moved(m, from, e, t) + lat, EV_DATA, b, e);
}

/* Block b reached host e: its rows come from the time part's holder. */
static void arrive(sim *m, int b, int e) {
  int q = b % m->s.n1, h = m->loc[q];
  const orion_sim_host *he = &m->c->hosts[e];
  m->next[b] = -1;
  if (m->tail[e] >= 0)
    m->next[m->tail[e]] = b;
  else
    m->head[e] = b;
  m->tail[e] = b;
  charge(m, e, m->drv_in[b]);
  if (pushing(m)) { /* its rows come by themselves (push_rows) */
    try_start(m, e);
    return;
  }
  if (!m->s.has_time || h == e || m->lp->part_bytes <= 0) {
    m->ready[b] = 1;
    try_start(m, e);
    return;
  }
  double lat = he->latency + m->c->hosts[h].latency;
  m->loc[q] = e;
  charge(m, h, m->lp->part_bytes); /* (when asked: the holder's) */
  push(m, part_moved(m, h, e, m->now + lat) + lat, EV_DATA, b, e);
}

static void run_event(sim *m, const event *v) {
  const orion_sim_host *he = &m->c->hosts[v->exec];
  switch (v->kind) {
  case EV_ARRIVE:
    arrive(m, v->block, v->exec);
    break;
  case EV_DATA:
    m->ready[v->block] = 1;
    charge(m, v->exec, m->lp->part_bytes);
    try_start(m, v->exec);
    break;
  case EV_CEND:
    if (m->debt[v->exec] > 0) { /* the exchange's work that came meanwhile */
      push(m, m->now + m->debt[v->exec], EV_CEND, v->block, v->exec);
      m->debt[v->exec] = 0;
      break;
    }
    m->busy[v->exec] = 0;
    m->cpu_free[v->exec] = m->now;
    if (pushing(m)) /* the part's rows go on before the report */
      push_rows(m, m->l.next_q[m->s.pos_of[v->block]], v->exec, m->now);
    push(m, m->now + he->latency + m->c->driver.latency, EV_REPORT, v->block,
         v->exec);
    try_start(m, v->exec);
    break;
  case EV_REPORT: {
    double t = m->now > m->drv_cpu ? m->now : m->drv_cpu;
    m->drv_cpu = t + m->lp->drv_block_sec;
    push(m, m->drv_cpu, EV_PROCESS, v->block, v->exec);
    break;
  }
  case EV_PROCESS:
    orion_loop_note_seconds(&m->l, v->exec, v->block,
                            elems_of(m->lp, v->block) * he->sec_per_elem, 0);
    orion_loop_block_done(&m->l, v->exec, v->block);
    break;
  case EV_EDONE:
    orion_loop_exec_done(&m->l, v->exec);
    break;
  }
}

static void sim_free(sim *m) {
  orion_loop_free(&m->l);
  orion_schedule_free(&m->s);
  orion_free(m->heap);
  orion_free(m->out_free);
  orion_free(m->in_free);
  orion_free(m->out_tok);
  orion_free(m->in_tok);
  orion_free(m->loc);
  orion_free(m->next);
  orion_free(m->head);
  orion_free(m->tail);
  orion_free(m->ready);
  orion_free(m->busy);
  orion_free(m->sent);
  orion_free(m->drv_in);
  orion_free(m->cpu_free);
  orion_free(m->debt);
}

static int check(const orion_sim_loop *lp, const orion_sim_cluster *c,
                 orion_error *err) {
  int e;
  if (c->n < 1 || c->hosts == NULL)
    return orion_error_set(err, ORION_EINVAL, "simulator: %d hosts", c->n);
  if (lp->n0 < 1 || lp->n1 < 1 || lp->n0 > 1 << 15 || lp->n1 > 1 << 15)
    return orion_error_set(err, ORION_EINVAL,
                           "simulator: a grid of %d x %d blocks", lp->n0,
                           lp->n1);
  if (lp->elems == NULL && lp->elems_total < 0)
    return orion_error_set(err, ORION_EINVAL, "simulator: %lld elements",
                           (long long)lp->elems_total);
  if (!(lp->part_bytes >= 0 && lp->drv_block_bytes >= 0 &&
        lp->drv_elem_bytes >= 0 && lp->drv_exec_bytes >= 0 &&
        lp->drv_block_sec >= 0 && lp->exch_elems_per_byte >= 0 &&
        lp->shard_bytes_per_elem >= 0 && c->driver.bw >= 0 &&
        c->driver.latency >= 0 && c->driver.burst >= 0))
    return orion_error_set(err, ORION_EINVAL,
                           "simulator: a negative size, rate or time");
  for (e = 0; e < c->n; e++)
    if (!(c->hosts[e].sec_per_elem >= 0 && c->hosts[e].bw >= 0 &&
          c->hosts[e].latency >= 0 && c->hosts[e].burst >= 0))
      return orion_error_set(err, ORION_EINVAL,
                             "simulator: host %d has a negative rate or time",
                             e);
  return 0;
}

int orion_sim_pass(const orion_sim_loop *lp, const orion_sim_cluster *c,
                   double *seconds, orion_error *err) {
  sim m;
  int rc, nb, q, k, n = c->n;
  orion_loop_io io = {NULL, io_send, io_end, io_pull, io_fail, NULL};
  if ((rc = check(lp, c, err)) != 0)
    return rc;
  memset(&m, 0, sizeof m);
  m.lp = lp;
  m.c = c;
  rc = orion_schedule_make(&m.s, lp->kind, lp->n0, lp->n1, 0);
  if (rc != 0)
    return orion_error_set(err, rc, "simulator: cannot lay out %d x %d "
                                    "blocks: %s",
                           lp->n0, lp->n1, orion_strerror(rc));
  nb = m.s.nblocks;
  io.ud = &m;
  m.out_free = orion_calloc((size_t)n, sizeof(double));
  m.in_free = orion_calloc((size_t)n, sizeof(double));
  m.out_tok = orion_calloc((size_t)n, sizeof(double));
  m.in_tok = orion_calloc((size_t)n, sizeof(double));
  m.loc = orion_calloc((size_t)m.s.n1, sizeof(int));
  m.next = orion_calloc((size_t)nb, sizeof(int));
  m.head = orion_malloc(sizeof(int) * (size_t)n);
  m.tail = orion_malloc(sizeof(int) * (size_t)n);
  m.ready = orion_calloc((size_t)nb, 1);
  m.busy = orion_calloc((size_t)n, 1);
  m.sent = orion_calloc((size_t)n, 1);
  m.drv_in = orion_calloc((size_t)nb, sizeof(double));
  m.cpu_free = orion_calloc((size_t)n, sizeof(double));
  m.debt = orion_calloc((size_t)n, sizeof(double));
  rc = m.out_free && m.in_free && m.out_tok && m.in_tok && m.loc && m.next && m.head && m.tail &&
               m.ready && m.busy && m.sent && m.drv_in && m.cpu_free && m.debt
           ? orion_loop_init(&m.l, &m.s, n, 0, &io)
           : ORION_ENOMEM;
  for (k = 0; rc == 0 && k < n; k++) { /* the buckets full */
    m.head[k] = m.tail[k] = -1;
    m.out_tok[k] = m.in_tok[k] = c->hosts[k].burst;
  }
  m.drv_tok = c->driver.burst;
  if (rc == 0) {
    m.l.early = lp->early;
    m.l.dynamic = lp->dynamic;
    if (lp->depth > 0)
      m.l.depth = lp->depth;
    /* Each time part starts where the previous pass left it: with the
     * executor of its last block under static placement. */
    for (q = 0; q < m.s.n1; q++)
      m.loc[q] = 0;
    for (k = 0; k < nb; k++)
      m.loc[m.s.order[k] % m.s.n1] =
          orion_loop_home(&m.l, m.s.order[k]);
    m.l.ahead = lp->ahead;
    /* Reordering, the runtime sends every block at the loop's start where
     * they are few enough (scheduler/dist.c, orion__resid_late): the
     * window is then a time part. */
    m.l.window = lp->window > 0 ? lp->window
                 : !reordering(&m) ? 1
                 : orion_loop_all_at_start(m.s.nblocks, n)
                     ? m.s.n0
                     : orion_loop_reorder_window(m.s.n0, n);
    for (k = 0; pushing(&m) && k < nb; k++) /* SEND_ROWS */
      if (m.s.after_q[k] < 0)
        push_rows(&m, k, m.loc[m.s.order[k] % m.s.n1],
                  c->driver.latency + c->hosts[m.loc[m.s.order[k] % m.s.n1]]
                                          .latency);
    orion_loop_start(&m.l);
    while (m.nheap > 0 && !m.oom) {
      event v = pop(&m);
      m.now = v.t;
      run_event(&m, &v);
    }
    if (m.oom)
      rc = ORION_ENOMEM;
    else if (m.l.phase != ORION_LOOP_FINISHED)
      rc = orion_error_set(err, ORION_EINVAL,
                           "simulator: the loop stopped with %d of %d blocks "
                           "done",
                           m.l.done, nb);
  }
  if (rc == ORION_ENOMEM)
    orion_error_set(err, rc, "simulator: out of memory");
  *seconds = m.now;
  sim_free(&m);
  return rc;
}

int orion_sim_predict(const orion_sim_loop *lp, const orion_sim_cluster *c,
                      orion_sim_result *r, orion_error *err) {
  orion_sim_host *h;
  orion_sim_cluster cc = *c;
  orion_sim_loop free_drv = *lp, free_x;
  double t[5], fastest;
  int e, rc = check(lp, c, err);
  const char *names[5] = {"compute", "rows in flight", "exchange", "driver",
                          "slow host"};
  if (rc != 0)
    return rc;
  h = orion_calloc((size_t)c->n, sizeof *h);
  if (h == NULL)
    return orion_error_set(err, ORION_ENOMEM, "simulator: out of memory");
  fastest = c->hosts[0].sec_per_elem;
  for (e = 1; e < c->n; e++)
    if (c->hosts[e].sec_per_elem < fastest)
      fastest = c->hosts[e].sec_per_elem;
  cc.hosts = h;
  free_drv.drv_block_bytes = 0;
  free_drv.drv_elem_bytes = 0;
  free_drv.drv_exec_bytes = 0;
  free_drv.drv_block_sec = 0;
  cc.driver = (orion_sim_host){0, 0, 0, 0};
  free_x = free_drv;
  free_x.exch_elems_per_byte = 0;
  for (e = 0; e < c->n; e++) /* compute only, at the fastest rate */
    h[e] = (orion_sim_host){fastest, 0, 0, 0};
  rc = orion_sim_pass(&free_x, &cc, &t[0], err);
  for (e = 0; e < c->n; e++) /* the executors' links */
    h[e] = (orion_sim_host){fastest, c->hosts[e].bw, c->hosts[e].latency,
                            c->hosts[e].burst};
  if (rc == 0)
    rc = orion_sim_pass(&free_x, &cc, &t[1], err);
  if (rc == 0) /* the exchange's CPU */
    rc = orion_sim_pass(&free_drv, &cc, &t[2], err);
  cc.driver = c->driver; /* the driver */
  if (rc == 0)
    rc = orion_sim_pass(lp, &cc, &t[3], err);
  orion_free(h);
  if (rc == 0) /* the hosts as they are */
    rc = orion_sim_pass(lp, c, &t[4], err);
  if (rc != 0)
    return rc;
  memset(r, 0, sizeof *r);
  r->seconds = t[4];
  r->compute = t[0];
  r->rows = t[1] - t[0];
  r->exchange = t[2] - t[1];
  r->driver = t[3] - t[2];
  r->slow = t[4] - t[3];
  {
    double part[5] = {r->compute, r->rows, r->exchange, r->driver, r->slow},
           best = -1;
    for (e = 0; e < 5; e++)
      if (part[e] > best) {
        best = part[e];
        r->bottleneck = names[e];
      }
  }
  for (e = 0; e < lp->n0 * lp->n1; e++)
    r->busy += elems_of(lp, e) * fastest;
  return 0;
}

/* "256kb" (tc's bytes: b, kb, mb, gb) into *bytes: 0, or -1. */
static int parse_bytes(const char *s, double *bytes) {
  char *end;
  double v = strtod(s, &end), unit = 0;
  if (strcmp(end, "b") == 0)
    unit = 1;
  else if (strcmp(end, "kb") == 0)
    unit = 1024;
  else if (strcmp(end, "mb") == 0)
    unit = 1024.0 * 1024;
  else if (strcmp(end, "gb") == 0)
    unit = 1024.0 * 1024 * 1024;
  if (end == s || unit == 0 || !(v >= 0) || !isfinite(v))
    return -1;
  *bytes = v * unit;
  return 0;
}

int orion_sim_parse_spec(const char *spec, int *n, double *cpus,
                         double *bytes_per_s, orion_error *err) {
  return orion_sim_parse_cluster(spec, n, cpus, bytes_per_s, NULL, err);
}

int orion_sim_parse_cluster(const char *spec, int *n, double *cpus,
                            double *bytes_per_s, double *burst,
                            orion_error *err) {
  char *end, rtext[64];
  const char *slash;
  long hosts;
  double q, rate, unit = 0, bb = 0;
  hosts = strtol(spec, &end, 10);
  if (end == spec || *end != 'x' || hosts < 1 || hosts > 1000000)
    return orion_error_set(err, ORION_EINVAL,
                           "--predict %s: the spec starts with a number of "
                           "hosts (1..1000000) and 'x', as in 4x0.4c:400mbit",
                           spec);
  q = strtod(end + 1, &end);
  if (end[0] != 'c' || end[1] != ':' || !(q > 0 && q <= 4096))
    return orion_error_set(err, ORION_EINVAL,
                           "--predict %s: after 'x' comes the CPUs of a host "
                           "(above 0) and 'c:', as in 4x0.4c:400mbit",
                           spec);
  slash = strchr(end + 2, '/');
  if (slash != NULL && parse_bytes(slash + 1, &bb) != 0)
    return orion_error_set(err, ORION_EINVAL,
                           "--predict %s: after '/' comes the links' burst "
                           "in bytes (b, kb, mb or gb), as in 200mbit/256kb",
                           spec);
  snprintf(rtext, sizeof rtext, "%.*s",
           (int)(slash != NULL ? slash - (end + 2) : (ptrdiff_t)strlen(end + 2)),
           end + 2);
  rate = strtod(rtext, &end);
  if (strcmp(end, "gbit") == 0)
    unit = 1e9;
  else if (strcmp(end, "mbit") == 0)
    unit = 1e6;
  else if (strcmp(end, "kbit") == 0)
    unit = 1e3;
  if (unit == 0 || !(rate > 0) || !isfinite(rate))
    return orion_error_set(err, ORION_EINVAL,
                           "--predict %s: the link rate is a number and "
                           "gbit, mbit or kbit, as in 400mbit",
                           spec);
  *n = (int)hosts;
  *cpus = q;
  *bytes_per_s = rate * unit / 8;
  if (burst != NULL)
    *burst = bb;
  return 0;
}
