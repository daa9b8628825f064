/* The execution simulator (issue 35): a discrete-event model of a loop's
 * pass on a cluster of N simulated hosts, driving the loop state machine
 * itself (scheduler/loop.h) in place of the driver's glue, so that the
 * blocks go out, wait for their dependences and are placed (static or
 * dynamic) exactly as in a real run.
 *
 * The model, per block sent to executor e:
 *   1. its RUN_BLOCK leaves the driver when the driver's link is free and
 *      takes (drv_block_bytes + drv_elem_bytes x its elements, and
 *      drv_exec_bytes more for the first block sent to e in the pass) /
 *      driver.bw on it, then the latencies of the
 *      driver's and e's links (driver.latency + hosts[e].latency);
 *   2. once there, e fetches the rows of the block's time part (its
 *      rotating partitions, part_bytes) from the executor that ran the time
 *      part's previous block, unless e holds them: the request takes the two
 *      links' latencies, the rows part_bytes / min(bw of both) on the
 *      holder's outgoing and e's incoming link (each busy with one
 *      transfer at a time, both directions independent), then the
 *      latencies again; a link with a burst is a token bucket of that
 *      many bytes refilled at its rate (full at the start of the pass):
 *      the bytes the buckets of both ends hold go at once, the rest at
 *      the rate ((bytes - held) / bw at the end that takes longest);
 *      the driver's link likewise, its messages taking from the driver's
 *      bucket (and e's taken as full);
 *   3. e runs its blocks one at a time in the order they came (or, with
 *      reorder, orion_sim_loop below, as executor/exec_order.c picks),
 *      each once its rows are there, for elements x hosts[e].sec_per_elem
 *      seconds;
 *   3a. the exchange's CPU (exch_elems_per_byte): the bytes of steps 1
 *      and 2 (and of the push, with ahead) cost the hosts at both ends
 *      host time, on the CPU that runs the blocks;
 *   4. its report takes the two latencies back, and the driver spends
 *      drv_block_sec on it before telling the state machine;
 *   5. after the last block, each executor's end of loop is a round trip.
 * At the start of a pass each time part is where the previous pass left
 * it (with the executor of its last block), as in the steady state of an
 * epoch loop.  A bandwidth of 0 is unlimited.
 *
 * The breakdown replays the pass with parts of the cluster made free, in
 * this order: every host at the fastest host's rate with free links, a
 * free driver and a free exchange ("compute"), then the executors' links
 * as given ("rows in flight", the difference), then the exchange's CPU
 * ("exchange"), then the driver as given ("driver"), then the hosts' own
 * rates ("slow host"); the five add up to the predicted time (the CPU
 * the driver's bytes cost the executors is in "driver": made free, they
 * go too).
 *
 * Not modelled: shard traffic, buffered writes and broadcasts (only the
 * rotating rows and the driver's per-block messages move), the pull of
 * shards after a loop, balanced plans (orion_loop_set_owners), a cost per
 * message of the exchange apart from its bytes, and contention inside a
 * switch.
 * Deterministic: simultaneous events run in the order they were made. */
#ifndef ORION_SCHEDULER_SIM_H
#define ORION_SCHEDULER_SIM_H

#include <stdint.h>

#include "dsm/blocks.h"
#include "util/error.h"

/* One-way latency of a host's link to the switch (a LAN's, with the
 * kernel's stack), for clusters given by their rates only. */
#define ORION_SIM_HOST_LATENCY 50e-6

typedef struct orion_sim_host {
  double sec_per_elem; /* compute seconds per element of the body */
  double bw;           /* link bytes per second, each way; 0: unlimited */
  double latency;      /* one-way seconds from the host to the switch */
  double burst;        /* bytes each way of the link may send at once (a
                          token bucket, as tc tbf's burst) before the rate
                          holds it; 0: none, as on a real NIC */
} orion_sim_host;

typedef struct orion_sim_loop {
  orion_order_kind kind; /* the schedule's clocks */
  int n0, n1;            /* space parts by time parts */
  const int64_t *elems;  /* per block id (n0 * n1), or NULL: elems_total
                            spread evenly (the first blocks get the rest) */
  int64_t elems_total;
  double part_bytes;      /* bytes of one time part's rotating rows */
  double drv_block_bytes; /* bytes of one RUN_BLOCK from the driver */
  double drv_block_sec;   /* driver CPU seconds per block report */
  int early;              /* orion_loop.early */
  int dynamic;            /* orion_loop.dynamic */
  int depth;              /* orion_loop.depth with dynamic; 0: default */
  double drv_elem_bytes;  /* more bytes of a RUN_BLOCK (and its report) per
                             element of the block: what grows with the
                             data, not with the blocks */
  /* orion_loop.ahead (with early, static placement): step 2 becomes a
   * push.  The executor that ends a block of a time part sends the part's
   * rows at once (part_bytes on its outgoing and the receiver's incoming
   * link, then the two latencies) to the host of the part's next block,
   * which runs it once both the rows and its RUN_BLOCK are there; at the
   * start of the pass each part's rows go from where the previous pass
   * left them to its first block's host (SEND_ROWS: the driver's and the
   * holder's latencies first).  The state machine sends blocks ahead as
   * the runtime does (scheduler/loop.h). */
  int ahead;
  /* Bytes the driver sends each executor once a pass, with the first
   * block it sends it (step 1): the loop's body and the rows of the
   * driver's arrays the executor's blocks read that the last pass made
   * stale (LR's weights, read at subscripts the plan cannot bound, go
   * whole to every executor after each pass's buffered writes), so that
   * the driver's bytes a pass grow with the executors. */
  double drv_exec_bytes;
  /* Step 3 with reorder (and ahead, as in the runtime): e starts the
   * oldest block it holds whose rows are there and that shares neither
   * space nor time part with a block it holds from before
   * (executor/exec_order.c); window: orion_loop's (0: the runtime's:
   * when reordering, a whole time part where orion_loop_all_at_start,
   * else orion_loop_reorder_window; 1 without). */
  int reorder;
  int window;
  /* The exchange's CPU (issue 35): the host time a byte costs the host
   * that sends it and the one that receives it, as elements of the body
   * (so it runs at the host's speed, hosts[e].sec_per_elem a unit, and a
   * host of Q CPUs does it Q times as fast): the rotating rows at both
   * ends, the driver's messages at the executor's end (its RUN_BLOCKs and
   * their bytes once per executor).  The executor's body and its
   * exchange share the host's CPU: the work the bytes bring a host is
   * done before its next block starts (the rows' receiver: once they are
   * there; the sender: once they left) or, arriving while a block runs,
   * makes that block end that much later.  0: free. */
  double exch_elems_per_byte;
  /* Bytes between executors beyond the rotating rows (a server array's
   * shard traffic, buffered writes to its owners) per element of a block,
   * were every row the block touches on another host: on n hosts the part
   * (n - 1) / n of them moves.  Only their CPU is modelled (at
   * exch_elems_per_byte, sent and received: twice, on the block's host,
   * inside the block), not their time on the links.  0: none. */
  double shard_bytes_per_elem;
} orion_sim_loop;

typedef struct orion_sim_cluster {
  int n;                        /* executors, 1 or more */
  const orion_sim_host *hosts;  /* n of them */
  orion_sim_host driver;        /* sec_per_elem unused */
} orion_sim_cluster;

typedef struct orion_sim_result {
  double seconds;      /* the predicted pass */
  double compute;      /* the breakdown (above); adds up to seconds */
  double rows;
  double exchange;     /* the hosts' CPU on the bytes (exch_elems_per_byte) */
  double driver;
  double slow;
  double busy;         /* the pass's compute seconds at the fastest host's
                          rate, all hosts together: busy / (n x seconds) is
                          the pass's efficiency */
  const char *bottleneck; /* "compute", "rows in flight", "exchange",
                             "driver" or "slow host": the largest part */
} orion_sim_result;

/* Predicts one pass of lp on c, with the breakdown.  0, or ORION_EINVAL
 * (err says which value is wrong) / ORION_ENOMEM. */
int orion_sim_predict(const orion_sim_loop *lp, const orion_sim_cluster *c,
                      orion_sim_result *r, orion_error *err);

/* One pass of lp on c without the breakdown: its seconds in *seconds. */
int orion_sim_pass(const orion_sim_loop *lp, const orion_sim_cluster *c,
                   double *seconds, orion_error *err);

/* Parses a cluster SPEC "NxQc:RATE[/BURST]" (N hosts of Q CPUs, links of
 * RATE: "400mbit", "10gbit", "1.5gbit", "800kbit", bits per second; a
 * link's BURST in bytes as tc writes it: "256kb", "1mb", "1500b", the
 * shaped links of bench/netcluster.sh) into *n, *cpus and *bytes_per_s
 * (and *burst where not NULL: 0 without one).  0, or ORION_EINVAL with err
 * naming the part. */
int orion_sim_parse_cluster(const char *spec, int *n, double *cpus,
                            double *bytes_per_s, double *burst,
                            orion_error *err);

/* orion_sim_parse_cluster without the burst. */
int orion_sim_parse_spec(const char *spec, int *n, double *cpus,
                         double *bytes_per_s, orion_error *err);

#endif
