/* The schedules (scheduler/schedule.h) and the per-loop state machine
 * (scheduler/loop.h), driven through a fake transport: four executors run
 * a loop of every schedule with scripted replies, including a reply lost
 * and an executor gone.  No sockets, no Lua; one last test runs the
 * driver on two executors for a failure the state machine now ends. */
#include "t/testutil.h"

#include <errno.h>
#include <stdint.h>

#include "scheduler/balance.h"
#include "scheduler/loop.h"
#include "scheduler/schedule.h"

#define NEXEC 4
#define MAXB 256

/* ---- the fake transport ------------------------------------------------ */

enum { A_SEND, A_END, A_PULL, A_FAIL };

typedef struct action {
  int kind, exec, block, abort;
  char msg[256];
} action;

typedef struct fake {
  orion_loop l;
  orion_schedule s;
  int has_time;             /* the oracle's own reading of the schedule */
  action log[4 * MAXB];
  int nlog;
  int sent[MAXB], done[MAXB];
  int sent_to[MAXB];        /* the executor each block went to */
  int fifo[NEXEC][MAXB];    /* blocks an executor holds, oldest first */
  int head[NEXEC], tail[NEXEC];
  int part_clock[MAXB];     /* per space part: clock of its last block */
  int ran[MAXB];            /* ahead: the block ran (maybe unreported) */
  int nend, npull, nfail;
  uint64_t rng;
} fake;

/* Loops made by fake_new dispatch early (orion_loop.early) when set, and
 * assign blocks at run time (orion_loop.dynamic) when fake_dynamic is. */
static int fake_early;
static int fake_dynamic;
/* ... and dispatch ahead along time parts (orion_loop.ahead) when set. */
static int fake_ahead;
/* A balanced plan (orion_loop_set_owners) for the fake's loops: space
 * part p on fake_owner[p]; NULL: the schedule's ranges. */
static const int *fake_owner;

static int count_of(const fake *f, int kind) {
  int i, n = 0;
  for (i = 0; i < f->nlog; i++)
    n += f->log[i].kind == kind;
  return n;
}

static action *record(fake *f, int kind, int exec, int block) {
  action *a;
  cr_assert_lt(f->nlog, 4 * MAXB, "too many actions");
  a = &f->log[f->nlog++];
  memset(a, 0, sizeof *a);
  a->kind = kind;
  a->exec = exec;
  a->block = block;
  return a;
}

/* Every send is checked against the schedule's rules, independently of
 * how the state machine keeps them: the block goes to the executor of its
 * space part, once, after every block before it in the order that shares
 * its space part (or, with clocks, its time part) is done, and the blocks
 * of one space part go out clock after clock. */
static void fake_send(void *ud, int exec, int block) {
  fake *f = ud;
  const orion_schedule *s = &f->s;
  int pos, j, p = block / s->n1, q = block % s->n1;
  cr_assert(block >= 0 && block < s->nblocks, "block %d", block);
  cr_assert_eq(count_of(f, A_END), 0, "block %d sent after the loop ended",
               block);
  cr_assert_eq(f->sent[block], 0, "block %d sent twice", block);
  cr_assert(exec >= 0 && exec < NEXEC, "block %d sent to executor %d", block,
            exec);
  if (!fake_dynamic)
    cr_assert_eq(exec, fake_owner != NULL ? fake_owner[p] : p * NEXEC / s->n0,
                 "block %d (space part %d) sent to executor %d", block, p,
                 exec);
  else /* never more than two unreported blocks at one executor */
    cr_assert_lt(f->tail[exec] - f->head[exec], 2, "executor %d holds too "
                                                   "many",
                 exec);
  pos = s->pos_of[block];
  for (j = 0; j < pos; j++) {
    int b = s->order[j];
    /* Early dispatch: the blocks before it of its space part need only be
     * sent, to the same executor (they are ahead of it in its queue). */
    if (fake_ahead && f->has_time && b % s->n1 == q && b / s->n1 != p) {
      /* Ahead: the blocks before it of its time part are sent, and all
       * but the last of them ran. */
      int later = 0;
      cr_assert(f->sent[b], "block %d sent ahead of block %d of its time "
                            "part, not sent",
                block, b);
      for (int k = j + 1; k < pos; k++)
        later += s->order[k] % s->n1 == q;
      cr_assert(later == 0 || f->ran[b] || f->done[b],
                "block %d sent two ahead of block %d of its time part", block,
                b);
    } else if (fake_early && b / s->n1 == p &&
               !(f->has_time && b % s->n1 == q)) {
      cr_assert(f->sent[b], "block %d sent before block %d of its space "
                            "part",
                block, b);
      cr_assert(f->done[b] || f->sent_to[b] == exec,
                "block %d sent to executor %d ahead of block %d of its "
                "space part, not done on executor %d",
                block, exec, b, f->sent_to[b]);
    } else if (b / s->n1 == p || (f->has_time && b % s->n1 == q))
      cr_assert(f->done[b], "block %d (p %d, q %d, clock %d) sent before "
                            "block %d (p %d, q %d, clock %d) was done",
                block, p, q, s->clock[pos], b, b / s->n1, b % s->n1,
                s->clock[j]);
  }
  cr_assert_gt(s->clock[pos], f->part_clock[p],
               "space part %d: block %d at clock %d after clock %d", p,
               block, s->clock[pos], f->part_clock[p]);
  f->part_clock[p] = s->clock[pos];
  f->sent[block] = 1;
  f->sent_to[block] = exec;
  f->fifo[exec][f->tail[exec]++] = block;
  record(f, A_SEND, exec, block);
}

static void fake_end(void *ud, int exec, int abort) {
  fake *f = ud;
  action *a;
  int i;
  for (i = 0; i < f->nlog; i++)
    cr_assert(f->log[i].kind != A_END || f->log[i].exec != exec,
              "the loop ended twice at executor %d", exec);
  /* A loop that did not fail ends after its last block, not before. */
  for (i = 0; !abort && i < f->s.nblocks; i++)
    cr_assert(f->done[i], "the loop ended before block %d was done", i);
  a = record(f, A_END, exec, -1);
  a->abort = abort;
  f->nend++;
}

static void fake_pull(void *ud, int exec) {
  fake *f = ud;
  record(f, A_PULL, exec, -1);
  f->npull++;
}

static void fake_fail(void *ud, int exec, int block, const char *msg) {
  fake *f = ud;
  action *a = record(f, A_FAIL, exec, block);
  snprintf(a->msg, sizeof a->msg, "%s", msg);
  f->nfail++;
}

/* A loop of kind over an n0 x n1 grid on NEXEC executors. */
static fake *fake_new(orion_order_kind kind, int n0, int n1, int reverse,
                      int pull, uint64_t seed) {
  static const orion_loop_io io = {NULL, fake_send, fake_end, fake_pull,
                                   fake_fail, NULL};
  orion_loop_io fio = io;
  fake *f = calloc(1, sizeof *f);
  int i;
  cr_assert(f != NULL);
  cr_assert_leq(n0 * n1, MAXB);
  cr_assert_eq(orion_schedule_make(&f->s, kind, n0, n1, reverse), 0);
  f->has_time = kind != ORION_ORDER_ALL && n1 > 1;
  f->rng = seed * 2654435761u + 1;
  for (i = 0; i < MAXB; i++)
    f->part_clock[i] = -1;
  fio.ud = f;
  cr_assert_eq(orion_loop_init(&f->l, &f->s, NEXEC, pull, &fio), 0);
  f->l.early = fake_early;
  f->l.dynamic = fake_dynamic;
  f->l.ahead = fake_ahead;
  if (fake_owner != NULL)
    cr_assert_eq(orion_loop_set_owners(&f->l, fake_owner), 0);
  return f;
}

static void fake_free(fake *f) {
  orion_loop_free(&f->l);
  orion_schedule_free(&f->s);
  free(f);
}

static unsigned next_rand(fake *f) {
  f->rng ^= f->rng << 13;
  f->rng ^= f->rng >> 7;
  f->rng ^= f->rng << 17;
  return (unsigned)(f->rng >> 11);
}

/* Scripted replies: an executor picked at random finishes its oldest
 * block and reports it, until no executor holds a block.  The reply for
 * block `lost` (-1: none) never arrives.  Returns the reports made. */
static int reply_until_idle(fake *f, int lost) {
  int reports = 0;
  for (;;) {
    int busy[NEXEC], nbusy = 0, e, b;
    for (e = 0; e < NEXEC; e++)
      if (f->head[e] < f->tail[e])
        busy[nbusy++] = e;
    if (nbusy == 0)
      return reports;
    e = busy[next_rand(f) % (unsigned)nbusy];
    b = f->fifo[e][f->head[e]++];
    if (b == lost)
      continue;
    f->done[b] = 1;
    cr_assert_eq(orion_loop_block_done(&f->l, e, b), 0, "block %d at %d", b,
                 e);
    reports++;
  }
}

/* Every executor reports the end of the loop, in a random order. */
static void end_everywhere(fake *f) {
  int order[NEXEC], i;
  for (i = 0; i < NEXEC; i++)
    order[i] = i;
  for (i = NEXEC - 1; i > 0; i--) {
    int k = (int)(next_rand(f) % (unsigned)(i + 1)), t = order[i];
    order[i] = order[k];
    order[k] = t;
  }
  for (i = 0; i < NEXEC; i++) {
    cr_assert(!orion_loop_finished(&f->l), "finished before executor %d "
                                           "ended",
              order[i]);
    cr_assert_eq(orion_loop_exec_done(&f->l, order[i]), 0);
  }
}

/* Runs a loop of kind to its end with random reply orders and checks it
 * completes: every block sent and done once, the loop ended once at every
 * executor, only after the last block. */
static void run_clean(orion_order_kind kind, int n0, int n1, int reverse,
                      uint64_t seed) {
  fake *f = fake_new(kind, n0, n1, reverse, 0, seed);
  int b;
  orion_loop_start(&f->l);
  reply_until_idle(f, -1);
  for (b = 0; b < f->s.nblocks; b++) {
    cr_assert(f->sent[b] && f->done[b], "block %d: sent %d, done %d", b,
              f->sent[b], f->done[b]);
    cr_assert_eq(orion_loop_block_state(&f->l, b), ORION_BLOCK_DONE);
  }
  cr_assert_eq(f->nend, NEXEC);
  for (b = 0; b < f->nlog; b++)
    cr_assert(f->log[b].kind != A_END || f->log[b].abort == 0);
  /* The end came right after the last report: nothing followed it. */
  cr_assert_eq(f->log[f->nlog - NEXEC].kind, A_END);
  cr_assert_eq(count_of(f, A_SEND), f->s.nblocks);
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_null(orion_loop_failed(&f->l));
  cr_assert_eq(f->npull, 0);
  cr_assert_eq(f->nfail, 0);
  fake_free(f);
}

/* The cut and the kind of order a shape gets, through
 * orion_schedule_cut; n0 x n1 as the cut would come out on a large
 * array. */
static orion_order_kind cut(const orion_schedule_shape *sh, int *n0,
                            int *n1) {
  orion_block_spec spec;
  orion_order_kind kind;
  orion_schedule_cut(sh, &spec, &kind);
  *n0 = spec.nspace;
  *n1 = spec.time >= 0 ? spec.ntime : 1;
  return kind;
}

static orion_schedule_shape shape_of(int time, int wavefront, int skew) {
  orion_schedule_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.space = 0;
  sh.time = time;
  sh.skew_dim = skew ? 1 : -1;
  sh.skew = skew;
  sh.wavefront = wavefront;
  sh.nspace = 2 * NEXEC;
  sh.ntime = 2 * NEXEC;
  return sh;
}

/* ---- the schedules ------------------------------------------------------ */

Test(sched, shapes_cut_into_blocks_and_orders) {
  orion_schedule_shape sh = shape_of(-1, 0, 0);
  orion_block_spec spec;
  orion_order_kind kind;
  /* none and 1d: space parts only, every block in one clock. */
  orion_schedule_cut(&sh, &spec, &kind);
  cr_assert_eq(kind, ORION_ORDER_ALL);
  cr_assert_eq(spec.time, -1);
  cr_assert_eq(spec.nspace, 8);
  /* 2d: a rotation gets a time part for every space part. */
  sh = shape_of(1, 0, 0);
  sh.ntime = 3;
  orion_schedule_cut(&sh, &spec, &kind);
  cr_assert_eq(kind, ORION_ORDER_ROTATION);
  cr_assert_eq(spec.ntime, 8);
  /* 2d-ordered keeps the time parts asked for. */
  sh.wavefront = 1;
  orion_schedule_cut(&sh, &spec, &kind);
  cr_assert_eq(kind, ORION_ORDER_WAVEFRONT);
  cr_assert_eq(spec.ntime, 3);
  /* 2d-skewed carries its skew into the cut. */
  sh = shape_of(1, 1, -2);
  orion_schedule_cut(&sh, &spec, &kind);
  cr_assert_eq(spec.skew_dim, 1);
  cr_assert_eq(spec.skew, -2);
  /* serial: one block in key order, whatever else was asked. */
  sh.serial = 1;
  orion_schedule_cut(&sh, &spec, &kind);
  cr_assert_eq(kind, ORION_ORDER_ALL);
  cr_assert_eq(spec.nspace, 1);
  cr_assert_eq(spec.time, -1);
  cr_assert(spec.lex);
}

Test(sched, timetable_places_blocks_and_their_dependences) {
  orion_schedule s;
  int i;
  /* A 4 x 4 rotation: clock c runs (p, (p + c) mod 4). */
  cr_assert_eq(orion_schedule_make(&s, ORION_ORDER_ROTATION, 4, 4, 0), 0);
  cr_assert_eq(s.nclocks, 4);
  cr_assert(s.has_time);
  for (i = 0; i < 16; i++) {
    int b = s.order[i], p = b / 4, q = b % 4;
    cr_assert_eq(q, (p + s.clock[i]) % 4);
    cr_assert_eq(s.pos_of[b], i);
    cr_assert_eq(orion_schedule_exec(&s, b, 2), p / 2);
    /* It waits for its space part's block of the clock before, and for
     * the block of its time part one clock earlier. */
    if (s.clock[i] == 0) {
      cr_assert_eq(s.after_p[i], -1);
      cr_assert_eq(s.after_q[i], -1);
    } else {
      int bp = s.order[s.after_p[i]], bq = s.order[s.after_q[i]];
      cr_assert_eq(bp / 4, p);
      cr_assert_eq(s.clock[s.after_p[i]], s.clock[i] - 1);
      cr_assert_eq(bq % 4, q);
      cr_assert_eq(s.clock[s.after_q[i]], s.clock[i] - 1);
    }
  }
  orion_schedule_free(&s);
  /* One clock: blocks wait only within their space part. */
  cr_assert_eq(orion_schedule_make(&s, ORION_ORDER_ALL, 3, 2, 0), 0);
  cr_assert_eq(s.nclocks, 1);
  cr_assert(!s.has_time);
  for (i = 0; i < 6; i++) {
    cr_assert_eq(s.after_q[i], -1);
    cr_assert_eq(s.after_p[i], i % 2 == 0 ? -1 : i - 1);
  }
  orion_schedule_free(&s);
  cr_assert_eq(orion_schedule_make(&s, ORION_ORDER_ALL, 2, 0, 0),
               ORION_EINVAL);
}

/* ---- clean runs of every schedule --------------------------------------- */

Test(sched, none_and_1d_send_every_block_at_once) {
  orion_schedule_shape sh = shape_of(-1, 0, 0);
  int n0, n1, e;
  orion_order_kind kind = cut(&sh, &n0, &n1);
  fake *f = fake_new(kind, n0, n1, 0, 0, 1);
  orion_loop_start(&f->l);
  /* Nothing to wait for: all 8 blocks go out, two to each executor (it
   * gets the second one's data while it runs the first): parts 2e and
   * 2e + 1 to executor e. */
  cr_assert_eq(count_of(f, A_SEND), 8);
  for (e = 0; e < NEXEC; e++) {
    cr_assert_eq(f->tail[e], 2, "executor %d holds %d blocks", e,
                 f->tail[e]);
    cr_assert_eq(orion_loop_in_flight(&f->l, e), 2 * e);
  }
  fake_free(f);
  for (uint64_t seed = 1; seed <= 20; seed++)
    run_clean(kind, n0, n1, 0, seed);
}

Test(sched, rotation_2d_runs_clock_by_clock) {
  orion_schedule_shape sh = shape_of(1, 0, 0);
  int n0, n1, i;
  orion_order_kind kind = cut(&sh, &n0, &n1);
  fake *f = fake_new(kind, n0, n1, 0, 0, 7);
  cr_assert_eq(kind, ORION_ORDER_ROTATION);
  orion_loop_start(&f->l);
  /* Clock 0 is the diagonal: one block per space part, none shares a
   * time part, so all 8 go out at once. */
  cr_assert_eq(count_of(f, A_SEND), n0);
  for (i = 0; i < f->nlog; i++)
    cr_assert_eq(f->s.clock[f->s.pos_of[f->log[i].block]], 0);
  /* Block (0, 1) needs (0, 0) and (1, 1): one report is not enough. */
  f->done[0] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 0), 0);
  cr_assert(!f->sent[1]);
  f->done[1 * n1 + 1] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 1 * n1 + 1), 0);
  cr_assert(f->sent[1], "block (0, 1) is ready");
  fake_free(f);
  for (uint64_t seed = 1; seed <= 20; seed++)
    run_clean(kind, n0, n1, (int)(seed % 2), seed);
}

Test(sched, wavefront_2d_ordered_starts_with_one_block) {
  orion_schedule_shape sh = shape_of(1, 1, 0);
  int n0, n1;
  orion_order_kind kind = cut(&sh, &n0, &n1);
  fake *f = fake_new(kind, n0, n1, 0, 0, 3);
  cr_assert_eq(kind, ORION_ORDER_WAVEFRONT);
  orion_loop_start(&f->l);
  cr_assert_eq(count_of(f, A_SEND), 1);
  cr_assert_eq(f->log[0].block, 0);
  /* (0, 0) done: (0, 1) and (1, 0) are ready, on executors 0 and 1. */
  f->done[0] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 0), 0);
  cr_assert_eq(count_of(f, A_SEND), 3);
  cr_assert(f->sent[1] && f->sent[n1]);
  fake_free(f);
  for (uint64_t seed = 1; seed <= 20; seed++)
    run_clean(kind, n0, n1, (int)(seed % 2), seed);
}

Test(sched, skewed_2d_runs_as_its_order) {
  for (int wf = 0; wf <= 1; wf++) {
    orion_schedule_shape sh = shape_of(1, wf, 1);
    int n0, n1;
    orion_order_kind kind = cut(&sh, &n0, &n1);
    for (uint64_t seed = 1; seed <= 20; seed++)
      run_clean(kind, n0, n1, 0, seed);
  }
  /* Fewer time parts than space parts: the rotation runs as a
   * wavefront, and still keeps both dependences. */
  for (uint64_t seed = 1; seed <= 10; seed++)
    run_clean(ORION_ORDER_ROTATION, 8, 3, 0, seed);
}

Test(sched, serial_is_one_block_on_executor_0) {
  orion_schedule_shape sh = shape_of(-1, 0, 0);
  int n0, n1;
  orion_order_kind kind;
  fake *f;
  sh.serial = 1;
  kind = cut(&sh, &n0, &n1);
  f = fake_new(kind, n0, n1, 0, 0, 1);
  orion_loop_start(&f->l);
  cr_assert_eq(count_of(f, A_SEND), 1);
  cr_assert_eq(f->log[0].exec, 0);
  fake_free(f);
  run_clean(kind, n0, n1, 0, 5);
}

Test(sched, a_loop_without_blocks_ends_at_once) {
  fake *f = fake_new(ORION_ORDER_ALL, 0, 1, 0, 0, 1);
  orion_loop_start(&f->l);
  cr_assert_eq(f->nend, NEXEC);
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  fake_free(f);
}

Test(sched, shards_are_pulled_after_every_end_of_loop) {
  fake *f = fake_new(ORION_ORDER_ROTATION, 4, 4, 0, 1, 11);
  int e;
  orion_loop_start(&f->l);
  reply_until_idle(f, -1);
  cr_assert_eq(f->nend, NEXEC);
  for (e = 0; e < NEXEC; e++) {
    cr_assert_eq(f->npull, 0, "pulled before executor %d ended", e);
    cr_assert_eq(orion_loop_exec_done(&f->l, e), 0);
  }
  cr_assert_eq(f->npull, NEXEC);
  cr_assert(!orion_loop_finished(&f->l));
  for (e = 0; e < NEXEC; e++) {
    cr_assert(!orion_loop_finished(&f->l));
    cr_assert_eq(orion_loop_pulled(&f->l, e), 0);
  }
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_eq(orion_loop_pulled(&f->l, 0), ORION_EPARSE);
  fake_free(f);
}

/* ---- reports that contradict the schedule -------------------------------- */

Test(sched, unexpected_reports_are_refused_and_change_nothing) {
  fake *f = fake_new(ORION_ORDER_WAVEFRONT, 4, 4, 0, 0, 1);
  int before;
  orion_loop_start(&f->l);
  before = f->nlog;
  /* Not sent yet, another executor's, out of range. */
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 1), ORION_EPARSE);
  cr_assert_eq(orion_loop_block_done(&f->l, 1, 0), ORION_EPARSE);
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 16), ORION_EPARSE);
  cr_assert_eq(orion_loop_block_done(&f->l, 0, -1), ORION_EPARSE);
  cr_assert_eq(orion_loop_check_done(&f->l, 7, 0), ORION_EPARSE);
  /* An end of loop that was not asked for. */
  cr_assert_eq(orion_loop_exec_done(&f->l, 0), ORION_EPARSE);
  cr_assert_eq(orion_loop_pulled(&f->l, 0), ORION_EPARSE);
  cr_assert_eq(f->nlog, before);
  cr_assert_eq(orion_loop_block_state(&f->l, 0), ORION_BLOCK_SENT);
  /* The right report, then the same one again. */
  f->done[0] = 1;
  f->head[0]++;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 0), 0);
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 0), ORION_EPARSE);
  reply_until_idle(f, -1);
  cr_assert_eq(orion_loop_exec_done(&f->l, 2), 0);
  cr_assert_eq(orion_loop_exec_done(&f->l, 2), ORION_EPARSE);
  fake_free(f);
}

/* ---- failures ----------------------------------------------------------- */

static void body_error(fake *f, int exec, int block, const char *msg) {
  orion_loop_body_error(&f->l, exec, block, msg, strlen(msg));
}

Test(sched, body_errors_end_the_loop_and_the_first_block_wins) {
  fake *f = fake_new(ORION_ORDER_ALL, 8, 1, 0, 1, 1);
  const orion_error *err;
  int i, sends;
  orion_loop_start(&f->l);
  /* Blocks 6 and then 2 fail (their executors report no BLOCK_DONE);
   * block 2 comes first in the order, as a serial run would meet it. */
  body_error(f, 2, 6, "executor 2, element (7): late");
  cr_assert_eq(f->nend, NEXEC);
  for (i = 0; i < f->nlog; i++)
    cr_assert(f->log[i].kind != A_END || f->log[i].abort == 1);
  body_error(f, 2, 2, "executor 2, element (3): early");
  cr_assert_eq(f->nend, NEXEC, "the loop ends once");
  sends = count_of(f, A_SEND);
  /* Blocks in flight elsewhere still report; nothing new goes out. */
  f->done[0] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 0), 0);
  cr_assert_eq(count_of(f, A_SEND), sends);
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_eq(f->npull, 0, "no shard pull after a failure");
  err = orion_loop_failed(&f->l);
  cr_assert_not_null(err);
  cr_assert_eq(err->code, ORION_EBODY);
  cr_assert_str_eq(err->msg, "executor 2, element (3): early");
  fake_free(f);
}

Test(sched, a_body_error_stops_dispatch_in_2d) {
  fake *f = fake_new(ORION_ORDER_ROTATION, 4, 4, 0, 0, 2);
  int sends;
  orion_loop_start(&f->l);
  body_error(f, 1, 1 * 4 + 1, "boom");
  sends = count_of(f, A_SEND);
  reply_until_idle(f, 1 * 4 + 1);
  cr_assert_eq(count_of(f, A_SEND), sends, "blocks sent after a failure");
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_str_eq(orion_loop_failed(&f->l)->msg, "boom");
  fake_free(f);
}

/* A buffered write the driver failed to apply used to leave the loop
 * waiting for blocks it would never send: it now ends the loop. */
Test(sched, a_driver_side_failure_ends_the_loop) {
  fake *f = fake_new(ORION_ORDER_WAVEFRONT, 4, 4, 0, 0, 4);
  orion_error err;
  orion_loop_start(&f->l);
  orion_error_set(&err, ORION_EBODY, "buffer 'B', key (1): too big");
  orion_loop_fail(&f->l, &err);
  cr_assert_eq(f->nend, NEXEC);
  reply_until_idle(f, -1);
  cr_assert_eq(count_of(f, A_SEND), 1);
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_str_eq(orion_loop_failed(&f->l)->msg,
                   "buffer 'B', key (1): too big");
  /* A body error in a block still takes precedence over it. */
  fake_free(f);
  f = fake_new(ORION_ORDER_ALL, 4, 1, 0, 0, 4);
  orion_loop_start(&f->l);
  orion_loop_fail(&f->l, &err);
  body_error(f, 3, 3, "in block 3");
  cr_assert_str_eq(orion_loop_failed(&f->l)->msg, "in block 3");
  fake_free(f);
}

/* A reply lost: the runtime has no per-block timer; the executor's
 * silence is what ends the wait (the cluster's heartbeat timeout, which
 * ends the job naming the executor).  The state machine keeps the
 * dependants of the lost block back, never finishes on its own, and on
 * the timeout fails naming the executor and the block. */
Test(sched, a_lost_reply_holds_its_dependants_until_the_timeout) {
  fake *f = fake_new(ORION_ORDER_ROTATION, 8, 8, 0, 0, 9);
  int lost = 4 * 8 + 4; /* (4, 4): clock 0 on executor 2 */
  int b, before;
  const orion_error *err;
  orion_loop_start(&f->l);
  reply_until_idle(f, lost);
  cr_assert(!orion_loop_finished(&f->l));
  cr_assert_eq(f->nend, 0, "the loop ended without block %d", lost);
  cr_assert_eq(orion_loop_block_state(&f->l, lost), ORION_BLOCK_SENT);
  cr_assert_eq(orion_loop_in_flight(&f->l, 2), lost);
  /* Its space part's next block and its time part's next block wait. */
  cr_assert(!f->sent[4 * 8 + 5]);
  cr_assert(!f->sent[3 * 8 + 4]);
  for (b = 0; b < 64; b++)
    if (f->sent[b] && b != lost)
      cr_assert(f->done[b]);
  orion_loop_timeout(&f->l, 2, "executor 2 has not answered for 5 s");
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_eq(f->nfail, 1);
  cr_assert_eq(f->log[f->nlog - 1].kind, A_FAIL);
  cr_assert_eq(f->log[f->nlog - 1].exec, 2);
  cr_assert_eq(f->log[f->nlog - 1].block, lost);
  cr_assert_str_eq(f->log[f->nlog - 1].msg,
                   "executor 2 has not answered for 5 s while running "
                   "block 36");
  err = orion_loop_failed(&f->l);
  cr_assert_not_null(err);
  cr_assert_eq(err->code, -ETIMEDOUT);
  /* Broken: the late reply and anything else change nothing. */
  before = f->nlog;
  cr_assert_eq(orion_loop_block_done(&f->l, 2, lost), 0);
  orion_loop_lost(&f->l, 1, "executor 1 closed its connection");
  body_error(f, 1, 1, "x");
  cr_assert_eq(f->nlog, before);
  fake_free(f);
}

Test(sched, an_executor_gone_breaks_the_loop_naming_it_and_its_block) {
  fake *f = fake_new(ORION_ORDER_WAVEFRONT, 4, 4, 0, 0, 5);
  int before;
  orion_loop_start(&f->l);
  /* Executor 0 runs (0, 0); then executor 1 holds (1, 0), and is lost. */
  cr_assert_eq(orion_loop_in_flight(&f->l, 1), -1);
  f->done[0] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, f->fifo[0][f->head[0]++]), 0);
  cr_assert_eq(orion_loop_in_flight(&f->l, 1), 4);
  before = count_of(f, A_SEND);
  orion_loop_lost(&f->l, 1,
                  "executor 1 closed its connection: end of file");
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_eq(f->nfail, 1);
  cr_assert_eq(f->log[f->nlog - 1].exec, 1);
  cr_assert_eq(f->log[f->nlog - 1].block, 4);
  cr_assert_str_eq(f->log[f->nlog - 1].msg,
                   "executor 1 closed its connection: end of file while "
                   "running block 4");
  cr_assert_eq(orion_loop_failed(&f->l)->code, -ECONNRESET);
  cr_assert_eq(f->nend, 0, "no end of loop to a broken cluster");
  /* Executor 0 still reports: nothing more is sent. */
  while (f->head[0] < f->tail[0])
    orion_loop_block_done(&f->l, 0, f->fifo[0][f->head[0]++]);
  cr_assert_eq(count_of(f, A_SEND), before);
  fake_free(f);
}

Test(sched, an_executor_gone_at_the_end_of_the_loop) {
  fake *f = fake_new(ORION_ORDER_ALL, 4, 1, 0, 0, 6);
  orion_loop_start(&f->l);
  reply_until_idle(f, -1);
  cr_assert_eq(orion_loop_exec_done(&f->l, 0), 0);
  orion_loop_lost(&f->l, 3, "executor 3 exited with code 1");
  cr_assert_eq(f->nfail, 1);
  cr_assert_eq(f->log[f->nlog - 1].block, -1);
  cr_assert_str_eq(f->log[f->nlog - 1].msg,
                   "executor 3 exited with code 1 while the loop was "
                   "ending");
  cr_assert(orion_loop_finished(&f->l));
  fake_free(f);
}

Test(sched, a_finished_loop_ignores_a_later_loss) {
  fake *f = fake_new(ORION_ORDER_ALL, 4, 1, 0, 0, 6);
  orion_loop_start(&f->l);
  reply_until_idle(f, -1);
  end_everywhere(f);
  orion_loop_lost(&f->l, 0, "executor 0 closed its connection");
  orion_loop_timeout(&f->l, 1, "executor 1 has not answered for 9 s");
  cr_assert_eq(f->nfail, 0);
  cr_assert_null(orion_loop_failed(&f->l));
  fake_free(f);
}

/* The same on real executors: a buffered write the driver applies fails
 * in the middle of a 2-D loop.  The job ends with the body error naming
 * the buffer (it used to wait forever for blocks it would not send). */
Test(sched, a_failed_apply_on_the_driver_ends_a_2d_loop) {
  static const char script[] =
      "local orion = require 'orion'\n"
      "local A = orion.zeros{ 64, 16 }\n"
      "local T = orion.zeros{ 64 }\n"
      "local B = orion.buffer(T, { apply = function(old, d)\n"
      "  if d > 3 then error('too big') end\n"
      "  return old + d\n"
      "end })\n"
      "orion.parallel_for(A, function(i, j, v)\n"
      "  T[i] = T[i] + 1\n"
      "  B[(i % 8) + 1] = B[(i % 8) + 1] + 1\n"
      "end, { schedule = '2d', partitions = {4, 8} })\n"
      "print('not reached')\n";
  char *path = tu_write_temp(".lua", script);
  char *argv[] = {(char *)tu_driver(), "--executors", "2", path, NULL};
  tu_run r = tu_run_argv(argv, 60);
  cr_expect_eq(r.status, 1, "exit %d\n%s", r.status, r.err);
  cr_expect(strstr(r.err, "parallel_for body failed on ") != NULL &&
                strstr(r.err, "buffer 'B', key (1)") != NULL &&
                strstr(r.err, "too big") != NULL,
            "%s", r.err);
  cr_expect(strstr(r.out, "not reached") == NULL);
  tu_run_free(&r);
  unlink(path);
  free(path);
}

/* Early dispatch (2-D rotation): an executor gets the next block of a
 * space part as soon as the previous one is sent to it and the block's
 * time part is free, so it never waits for the driver between them; the
 * loop still runs every block once, in each executor's order. */
Test(sched, early_dispatch_queues_the_next_block_of_a_space_part) {
  orion_schedule_shape sh = shape_of(1, 0, 0);
  int n0, n1;
  orion_order_kind kind = cut(&sh, &n0, &n1);
  fake *f;
  fake_early = 1;
  f = fake_new(kind, n0, n1, 0, 0, 3);
  orion_loop_start(&f->l);
  cr_assert_eq(count_of(f, A_SEND), n0, "clock 0: the diagonal");
  /* (1, 1) done (executor 0 runs space parts 0 and 1) frees time part 1,
   * so (0, 1) follows (0, 0) into executor 0's queue although (0, 0) is
   * still running. */
  f->done[1 * n1 + 1] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 1 * n1 + 1), 0);
  cr_assert(f->sent[1], "block (0, 1) queued behind (0, 0)");
  cr_assert(!f->done[0]);
  /* Its own space part's next block waits for (0, 0) only by order: (0, 2)
   * needs time part 2, held by (2, 2) until that is done. */
  cr_assert(!f->sent[2]);
  fake_free(f);
  for (uint64_t seed = 1; seed <= 20; seed++)
    run_clean(kind, n0, n1, (int)(seed % 2), seed);
  fake_early = 0;
}

/* Ahead (static placement): executors run the blocks they hold in order,
 * each once the block before it of its time part ran (its rows came),
 * and the reports of blocks that ran reach the loop in a random order, so
 * the next block of a time part may report before the one before it.
 * Fails on a deadlock: blocks held, none can run and no report is on its
 * way.  Returns the blocks that went out before the block before them of
 * their time part was done. */
static int run_ahead(orion_order_kind kind, int n0, int n1, uint64_t seed) {
  fake *f = fake_new(kind, n0, n1, 0, 0, seed);
  int pend[MAXB], npend = 0, b, n;
  orion_loop_start(&f->l);
  for (;;) {
    int can[NEXEC], ncan = 0, e;
    for (e = 0; e < NEXEC; e++)
      if (f->head[e] < f->tail[e]) {
        int hb = f->fifo[e][f->head[e]], pq = f->s.after_q[f->s.pos_of[hb]];
        if (pq < 0 || f->ran[f->s.order[pq]])
          can[ncan++] = e;
      }
    if (ncan == 0 && npend == 0)
      break;
    if (ncan > 0 && (npend == 0 || next_rand(f) % 2 == 0)) {
      e = can[next_rand(f) % (unsigned)ncan];
      b = f->fifo[e][f->head[e]++];
      f->ran[b] = 1;
      pend[npend++] = b;
    } else {
      int k = (int)(next_rand(f) % (unsigned)npend);
      b = pend[k];
      pend[k] = pend[--npend];
      f->done[b] = 1;
      cr_assert_eq(orion_loop_block_done(&f->l, f->sent_to[b], b), 0,
                   "block %d", b);
    }
  }
  for (b = 0; b < f->s.nblocks; b++)
    cr_assert(f->sent[b] && f->done[b], "seed %llu: block %d: sent %d, done "
                                        "%d (a deadlock?)",
              (unsigned long long)seed, b, f->sent[b], f->done[b]);
  cr_assert_eq(f->nend, NEXEC);
  end_everywhere(f);
  cr_assert(orion_loop_finished(&f->l));
  cr_assert_null(orion_loop_failed(&f->l));
  n = f->l.nahead;
  fake_free(f);
  return n;
}

/* Dispatch ahead: a block goes out once the block before it of its time
 * part is sent and the one before that is done (fake_send checks the
 * window), every block runs once, with reports out of order and without a
 * deadlock, for the rotation and the wavefront; a loop of one clock has
 * nothing to send ahead, and dynamic placement ignores it. */
Test(sched, ahead_dispatch_keeps_a_window_of_one_block_per_time_part) {
  orion_schedule_shape rot = shape_of(1, 0, 0), wf = shape_of(1, 1, 0),
                       none = shape_of(-1, 0, 0);
  int n0, n1, total = 0;
  orion_order_kind kind;
  fake *f;
  fake_early = fake_ahead = 1;
  kind = cut(&rot, &n0, &n1);
  /* At the start: clock 0 and clock 1 (its time parts' blocks are sent
   * and have none before), no more. */
  f = fake_new(kind, n0, n1, 0, 0, 1);
  orion_loop_start(&f->l);
  cr_assert_eq(count_of(f, A_SEND), 2 * n0);
  cr_assert_eq(f->l.nahead, n0);
  /* (1, 1) ran and reported: (0, 1) is sent already; (7, 1), the block
   * after (0, 1) of time part 1, goes now, ahead of (0, 1). */
  f->ran[1 * n1 + 1] = f->done[1 * n1 + 1] = 1;
  cr_assert_eq(orion_loop_block_done(&f->l, 0, 1 * n1 + 1), 0);
  cr_assert(f->sent[(n0 - 1) * n1 + 1], "(7, 1) went ahead");
  cr_assert_eq(count_of(f, A_SEND), 2 * n0 + 1);
  fake_free(f);
  for (uint64_t seed = 1; seed <= 30; seed++)
    total += run_ahead(kind, n0, n1, seed);
  cr_assert_gt(total, 0);
  kind = cut(&wf, &n0, &n1);
  for (uint64_t seed = 1; seed <= 30; seed++)
    run_ahead(kind, n0, n1, seed);
  kind = cut(&none, &n0, &n1);
  cr_assert_eq(run_ahead(kind, n0, n1, 1), 0);
  kind = cut(&rot, &n0, &n1);
  fake_dynamic = 1;
  f = fake_new(kind, n0, n1, 0, 0, 1);
  orion_loop_start(&f->l);
  cr_assert_eq(f->l.nahead, 0, "dynamic placement sends nothing ahead");
  fake_free(f);
  for (uint64_t seed = 1; seed <= 10; seed++)
    run_clean(kind, n0, n1, 0, seed);
  fake_dynamic = 0;
  fake_early = fake_ahead = 0;
}

/* ---- dynamic assignment -------------------------------------------------- */

/* Every schedule, early or not, with blocks placed at run time: random
 * reply orders never see a dependence broken (fake_send checks each send
 * against the schedule), and every block runs once. */
Test(sched, dynamic_assignment_keeps_every_dependence) {
  orion_schedule_shape none = shape_of(-1, 0, 0), rot = shape_of(1, 0, 0),
                       wf = shape_of(1, 1, 0), skew = shape_of(1, 1, 1);
  const orion_schedule_shape *shapes[] = {&none, &rot, &wf, &skew};
  fake_dynamic = 1;
  for (fake_early = 0; fake_early <= 1; fake_early++)
    for (int k = 0; k < 4; k++) {
      int n0, n1;
      orion_order_kind kind = cut(shapes[k], &n0, &n1);
      for (uint64_t seed = 1; seed <= 20; seed++)
        run_clean(kind, n0, n1, (int)(seed % 2), seed);
    }
  for (uint64_t seed = 1; seed <= 10; seed++)
    run_clean(ORION_ORDER_ROTATION, 8, 3, 0, seed);
  for (uint64_t seed = 1; seed <= 10; seed++)
    run_clean(ORION_ORDER_ALL, 16, 1, 0, seed);
  fake_early = 0;
  fake_dynamic = 0;
}

/* A 1-D loop of 16 blocks: statically executor 0 runs parts 0-3.  With
 * dynamic assignment it holds at most two; while it never answers, the
 * others take every other block, those of its parts included. */
Test(sched, dynamic_idle_executors_take_what_a_busy_one_would_hold) {
  fake *f;
  int b, e, stuck[2], nstuck = 0, ran_home0_elsewhere = 0;
  fake_dynamic = 1;
  f = fake_new(ORION_ORDER_ALL, 16, 1, 0, 0, 3);
  orion_loop_start(&f->l);
  cr_assert_eq(count_of(f, A_SEND), 2 * NEXEC, "two blocks each at first");
  cr_assert_eq(f->tail[0], 2);
  stuck[0] = f->fifo[0][0];
  stuck[1] = f->fifo[0][1];
  /* Executors 1-3 report their blocks as they come; 0 says nothing. */
  for (;;) {
    int any = 0;
    for (e = 1; e < NEXEC; e++)
      while (f->head[e] < f->tail[e]) {
        b = f->fifo[e][f->head[e]++];
        f->done[b] = 1;
        cr_assert_eq(orion_loop_block_done(&f->l, e, b), 0);
        any = 1;
      }
    if (!any)
      break;
  }
  for (b = 0; b < 16; b++) {
    e = orion_loop_exec_of(&f->l, b);
    cr_assert(f->sent[b], "block %d still waits", b);
    if (e == 0) {
      cr_assert_lt(nstuck, 2);
      stuck[nstuck++] = b;
    }
    ran_home0_elsewhere += b / 4 == 0 && e != 0;
  }
  cr_assert_eq(nstuck, 2, "executor 0 holds only its first two blocks");
  cr_assert_geq(ran_home0_elsewhere, 2, "blocks of executor 0's parts ran "
                                        "elsewhere");
  cr_assert_eq(f->l.ran[0], 0);
  cr_assert_eq(f->l.ran[1] + f->l.ran[2] + f->l.ran[3], 14);
  cr_assert_eq(f->nend, 0, "the loop waits for executor 0");
  /* Executor 0 answers at last: the loop ends. */
  for (int i = 0; i < 2; i++) {
    f->done[stuck[i]] = 1;
    f->head[0]++;
    cr_assert_eq(orion_loop_block_done(&f->l, 0, stuck[i]), 0);
  }
  cr_assert_eq(f->nend, NEXEC);
  fake_free(f);
  fake_dynamic = 0;
}

/* A simulated cluster: executor e takes cost[e] units per block and runs
 * the blocks it holds in order; reports carry the time taken.  Returns the
 * time the last block ends. */
static double simulate(fake *f, const double *cost) {
  double now = 0, end[NEXEC];
  int e;
  for (e = 0; e < NEXEC; e++)
    end[e] = -1;
  orion_loop_start(&f->l);
  for (;;) {
    int next = -1, b;
    for (e = 0; e < NEXEC; e++) {
      if (end[e] < 0 && f->head[e] < f->tail[e])
        end[e] = now + cost[e];
      if (end[e] >= 0 && (next < 0 || end[e] < end[next]))
        next = e;
    }
    if (next < 0)
      return now;
    now = end[next];
    end[next] = -1;
    b = f->fifo[next][f->head[next]++];
    f->done[b] = 1;
    orion_loop_note_seconds(&f->l, next, b, cost[next], 0);
    cr_assert_eq(orion_loop_block_done(&f->l, next, b), 0);
  }
}

/* The rotation MF runs (8 x 8 blocks, 4 executors, early dispatch), with
 * executor 3 at half speed: statically it runs its 16 blocks at half speed
 * and every clock waits for it; dynamically it runs fewer, and the loop
 * ends sooner.  Times are simulated, not measured. */
Test(sched, dynamic_assignment_works_around_a_slow_executor) {
  const double cost[NEXEC] = {1, 1, 1, 2};
  double t_static, t_dynamic;
  fake *f;
  int e;
  fake_early = 1;
  f = fake_new(ORION_ORDER_ROTATION, 8, 8, 0, 0, 1);
  t_static = simulate(f, cost);
  cr_assert_eq(f->l.ran[3], 16);
  fake_free(f);
  fake_dynamic = 1;
  f = fake_new(ORION_ORDER_ROTATION, 8, 8, 0, 0, 1);
  t_dynamic = simulate(f, cost);
  cr_assert_eq(f->nend, NEXEC);
  for (e = 0; e < 3; e++)
    cr_assert_lt(f->l.ran[3], f->l.ran[e], "slow executor ran %d blocks, "
                                           "executor %d %d",
                 f->l.ran[3], e, f->l.ran[e]);
  cr_assert_lt(t_dynamic, t_static, "dynamic %g, static %g", t_dynamic,
               t_static);
  cr_log_info("simulated: static %g, dynamic %g, blocks %d %d %d %d",
              t_static, t_dynamic, f->l.ran[0], f->l.ran[1], f->l.ran[2],
              f->l.ran[3]);
  fake_free(f);
  fake_early = 0;
  fake_dynamic = 0;
}

/* ---- balanced placement (scheduler/balance.h) --------------------------- */

/* The smallest makespan over every split of n0 parts into n contiguous
 * ranges (empty ones too), by brute force. */
static double best_split(const double *w, int n0, const double *v, int n,
                         int e, int p) {
  double best = -1, acc = 0;
  int k;
  if (e == n - 1) {
    for (k = p; k < n0; k++)
      acc += w[k];
    return acc / v[e];
  }
  for (k = p; k <= n0; k++) { /* executor e takes [p, k) */
    double rest = best_split(w, n0, v, n, e + 1, k), m;
    m = acc / v[e] > rest ? acc / v[e] : rest;
    if (best < 0 || m < best)
      best = m;
    if (k < n0)
      acc += w[k];
  }
  return best;
}

/* Equal speeds give the static ranges; a slow executor gets fewer parts
 * (none when even one would be its slowest); the plan's makespan is the
 * least any contiguous split has (brute force on random cases); an
 * executor of speed 0 gets nothing. */
Test(sched, balanced_plans_give_slow_executors_fewer_parts) {
  double w[8] = {1, 1, 1, 1, 1, 1, 1, 1}, v[4] = {2, 2, 2, 2};
  int owner[8], p, e, k;
  uint64_t x = 88172645463325252u;
  cr_assert_float_eq(orion_balance_plan(w, 8, v, 4, owner), 1.0, 1e-9);
  for (p = 0; p < 8; p++)
    cr_assert_eq(owner[p], p * 4 / 8, "part %d on %d", p, owner[p]);
  v[3] = 0.5; /* a part takes it 2 s, 3 parts take the others 1.5 s */
  cr_assert_float_eq(orion_balance_plan(w, 8, v, 4, owner), 1.5, 1e-9);
  {
    static const int want[8] = {0, 0, 0, 1, 1, 1, 2, 2};
    for (p = 0; p < 8; p++)
      cr_assert_eq(owner[p], want[p], "part %d on %d", p, owner[p]);
  }
  v[3] = 1; /* 7 parts: a part of its own is worth it, 2 + 2 + 2 + 1 */
  cr_assert_float_eq(orion_balance_plan(w, 7, v, 4, owner), 1.0, 1e-9);
  cr_assert_eq(owner[6], 3);
  cr_assert_eq(owner[5], 2);
  cr_assert_float_eq(orion_balance_makespan(w, 7, v, 4, owner), 1.0, 1e-9);
  v[1] = 0; /* unmeasured: a thousandth of the fastest */
  orion_balance_plan(w, 8, v, 4, owner);
  for (p = 0; p < 8; p++)
    cr_assert_neq(owner[p], 1, "part %d on the stalled executor", p);
  for (k = 0; k < 300; k++) {
    int n0 = 1 + (int)(k % 9), n = 1 + (int)(k % 4);
    double ww[9], vv[4], got, want;
    int o[9];
    for (p = 0; p < n0; p++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ww[p] = (double)(x % 100);
    }
    for (e = 0; e < n; e++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      vv[e] = 1 + (double)(x % 50);
    }
    got = orion_balance_plan(ww, n0, vv, n, o);
    want = best_split(ww, n0, vv, n, 0, 0);
    cr_assert_float_eq(got, want, 1e-9 * (want + 1), "case %d: %g, best %g",
                       k, got, want);
    cr_assert_float_eq(orion_balance_makespan(ww, n0, vv, n, o), got, 1e-12);
    for (p = 0; p < n0; p++) /* contiguous ranges in executor order */
      cr_assert(o[p] >= 0 && o[p] < n && (p == 0 || o[p] >= o[p - 1]),
                "case %d: part %d on %d", k, p, o[p]);
  }
}

/* A loop placed by a plan sends every block of space part p to owner[p]
 * (fake_send checks it) and keeps every dependence, early or not; an
 * owner out of range is refused. */
Test(sched, a_balanced_plan_places_every_block_of_a_part_on_its_owner) {
  static const int owner[8] = {0, 0, 0, 1, 1, 1, 2, 2};
  static const int bad[8] = {0, 0, 0, 1, 1, 1, 2, 4};
  orion_schedule s;
  orion_loop l;
  orion_loop_io io = {NULL, fake_send, fake_end, fake_pull, fake_fail, NULL};
  fake_owner = owner;
  for (fake_early = 0; fake_early <= 1; fake_early++)
    for (uint64_t seed = 1; seed <= 10; seed++) {
      run_clean(ORION_ORDER_ROTATION, 8, 8, (int)(seed % 2), seed);
      run_clean(ORION_ORDER_ALL, 8, 1, 0, seed);
    }
  fake_early = 0;
  fake_owner = NULL;
  cr_assert_eq(orion_schedule_make(&s, ORION_ORDER_ROTATION, 8, 8, 0), 0);
  cr_assert_eq(orion_loop_init(&l, &s, NEXEC, 0, &io), 0);
  cr_assert_eq(orion_loop_set_owners(&l, bad), ORION_EINVAL);
  cr_assert_eq(orion_loop_home(&l, 7 * 8 + 3), 7 * NEXEC / 8,
               "no plan: the schedule's ranges");
  cr_assert_eq(orion_loop_set_owners(&l, owner), 0);
  cr_assert_eq(orion_loop_home(&l, 7 * 8 + 3), 2);
  cr_assert_eq(orion_loop_home(&l, 2 * 8), 0);
  orion_loop_free(&l);
  orion_schedule_free(&s);
}

/* Every block at the loop's start (scheduler/dist.c's late dispatch, the
 * simulator alike) for at most ORION_LOOP_START_BLOCKS blocks an
 * executor: MF's 8 x 8 on 1 to 8 executors and 64 x 64 on 64, not 256 x
 * 256 on 256 (a pass of 65,536 blocks keeps the windowed dispatch), nor
 * anything on no executor. */
Test(sched, every_block_goes_at_the_start_only_while_they_are_few) {
  cr_assert_eq(ORION_LOOP_START_BLOCKS, 64);
  cr_assert(orion_loop_all_at_start(64, 1));
  cr_assert(orion_loop_all_at_start(64, 8));
  cr_assert(orion_loop_all_at_start(64 * 64, 64));
  cr_assert(!orion_loop_all_at_start(64 * 64 + 1, 64));
  cr_assert(!orion_loop_all_at_start(256 * 256, 256));
  cr_assert(!orion_loop_all_at_start(65, 1));
  cr_assert(!orion_loop_all_at_start(1, 0));
}
