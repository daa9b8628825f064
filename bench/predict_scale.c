/* bench/predict_scale: a described workload's pass predicted on clusters
 * of several sizes (issue 35; bench/predict_scale.sh measures the costs
 * and calls it).  No data is read: the costs per element, per rotating
 * row and per block come from a small local run, the sizes from the
 * command line.
 *
 *   bench/predict_scale --name mf --rows 480189,17770 --elements 100480507 \
 *     --sec-per-elem 4e-8 --row-bytes 512 --driver-block-bytes 90 \
 *     --cluster 16c:10gbit --hosts 16,64,256,1024 [--parts-per-host K]
 *     [--partitions P] [--driver-elem-bytes B] [--driver-block-sec S]
 *     [--driver-exec-bytes X]
 *     [--no-early] [--no-ahead] [--no-reorder] [--window W] [--json FILE]
 *
 * Partitions per dimension: P when given (both dimensions, fewer where a
 * dimension is shorter), else K x hosts (default K = 1), at least the
 * runtime's default 8 (scheduler/sim_scale.h).  Prints one table row per
 * host count on stdout; with --json FILE, also one JSON line per host
 * count in FILE (workload, hosts, log2_hosts, partitions,
 * time_partitions, predicted_pass_seconds, the breakdown, efficiency,
 * bottleneck), which `orion-driver plot --x log2_hosts` draws.
 * The loop dispatches early and ahead (scheduler/loop.h) as MF's
 * training loop does; --no-early and --no-ahead model a loop that does
 * not (--no-ahead: each block asks for its rows when it arrives, after
 * the driver heard the block before it of its time part was done).
 * A host starts any block it holds whose rows are there and that shares
 * no part with an earlier one it holds (executor/exec_order.c), as the
 * runtime's executors do under dispatch ahead; --no-reorder models
 * executors that run them in the order they came (ORION_NO_REORDER=1).
 * --window W: blocks of a time part sent ahead of a block (orion_loop's
 * window; default the runtime's).
 * Exit 2 with a message naming the option on bad input. */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sim_scale.h"

static int bad(const char *opt, const char *val, const char *want) {
  fprintf(stderr, "predict_scale: --%s '%s': %s\n", opt, val, want);
  return 2;
}

/* A positive finite number (or >= 0 with zero_ok). */
static int num(const char *opt, const char *s, int zero_ok, double *v) {
  char *end;
  *v = strtod(s, &end);
  if (end == s || *end != '\0' || !isfinite(*v) || *v < 0 ||
      (*v == 0 && !zero_ok))
    return bad(opt, s, zero_ok ? "want a number >= 0" : "want a number > 0");
  return 0;
}

static int count(const char *opt, const char *s, int64_t lo, int64_t hi,
                 int64_t *v) {
  char *end;
  long long x = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || x < lo || x > hi)
    return bad(opt, s, "want a whole number in range");
  *v = x;
  return 0;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"name", required_argument, NULL, 'n'},
      {"rows", required_argument, NULL, 'r'},
      {"elements", required_argument, NULL, 'e'},
      {"sec-per-elem", required_argument, NULL, 's'},
      {"row-bytes", required_argument, NULL, 'b'},
      {"driver-block-bytes", required_argument, NULL, 'd'},
      {"driver-block-sec", required_argument, NULL, 'c'},
      {"driver-elem-bytes", required_argument, NULL, 'D'},
      {"driver-exec-bytes", required_argument, NULL, 'X'},
      {"cluster", required_argument, NULL, 'C'},
      {"hosts", required_argument, NULL, 'H'},
      {"parts-per-host", required_argument, NULL, 'k'},
      {"partitions", required_argument, NULL, 'p'},
      {"no-early", no_argument, NULL, 'E'},
      {"no-ahead", no_argument, NULL, 'A'},
      {"no-reorder", no_argument, NULL, 'R'},
      {"window", required_argument, NULL, 'w'},
      {"json", required_argument, NULL, 'j'},
      {NULL, 0, NULL, 0}};
  orion_sim_workload w = {ORION_ORDER_ROTATION, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                          0, 1, 0};
  const char *name = "loop", *hosts = NULL, *cluster = NULL;
  int64_t per_host = 1, parts = 0, x;
  int ch, rc, rows = 0;
  FILE *json = NULL;
  const char *json_path = NULL;
  double v;
  char spec[160], *list, *tok, *save = NULL;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (ch) {
    case 'n':
      name = optarg;
      if (name[0] == '\0' ||
          strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789._-") != strlen(name))
        return bad("name", name, "want letters, digits, '.', '_' or '-'");
      break;
    case 'r': {
      char *comma = strchr(optarg, ',');
      if (comma == NULL)
        return bad("rows", optarg, "want SPACE,TIME rows, as 480189,17770");
      *comma = '\0';
      if (count("rows", optarg, 1, INT64_MAX, &w.rows0) != 0 ||
          count("rows", comma + 1, 1, INT64_MAX, &w.rows1) != 0)
        return 2;
      break;
    }
    case 'e':
      if (count("elements", optarg, 0, INT64_MAX, &w.elements) != 0)
        return 2;
      break;
    case 's':
      if (num("sec-per-elem", optarg, 0, &w.sec_per_elem) != 0)
        return 2;
      break;
    case 'b':
      if (num("row-bytes", optarg, 1, &w.row_bytes) != 0)
        return 2;
      break;
    case 'd':
      if (num("driver-block-bytes", optarg, 1, &w.drv_block_bytes) != 0)
        return 2;
      break;
    case 'D':
      if (num("driver-elem-bytes", optarg, 1, &w.drv_elem_bytes) != 0)
        return 2;
      break;
    case 'X':
      if (num("driver-exec-bytes", optarg, 1, &w.drv_exec_bytes) != 0)
        return 2;
      break;
    case 'c':
      if (num("driver-block-sec", optarg, 1, &w.drv_block_sec) != 0)
        return 2;
      break;
    case 'C':
      cluster = optarg;
      break;
    case 'H':
      hosts = optarg;
      break;
    case 'k':
      if (count("parts-per-host", optarg, 1, 4096, &per_host) != 0)
        return 2;
      break;
    case 'p':
      if (count("partitions", optarg, 1, 4096, &parts) != 0)
        return 2;
      break;
    case 'E':
      w.early = 0;
      break;
    case 'A':
      w.ahead = 0;
      break;
    case 'R':
      w.reorder = 0;
      break;
    case 'w':
      if (count("window", optarg, 1, 4096, &x) != 0)
        return 2;
      w.window = (int)x;
      break;
    case 'j':
      json_path = optarg;
      break;
    default:
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "predict_scale: '%s': unexpected argument\n",
            argv[optind]);
    return 2;
  }
  if (w.rows0 == 0 || w.elements == 0 || w.sec_per_elem == 0 ||
      cluster == NULL || hosts == NULL) {
    fprintf(stderr, "predict_scale: --rows, --elements, --sec-per-elem, "
                    "--cluster and --hosts are needed\n");
    return 2;
  }
  if (json_path != NULL && (json = fopen(json_path, "w")) == NULL)
    return bad("json", json_path, "cannot be written");
  printf("%-8s %6s %6s %12s %10s %10s %10s %8s %6s  %s\n", "workload",
         "hosts", "parts", "pass s", "compute", "rows", "driver", "slow",
         "eff", "bottleneck");
  list = strdup(hosts);
  rc = list == NULL;
  for (tok = strtok_r(list, ",", &save); rc == 0 && tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    orion_sim_result r;
    orion_error err;
    int n, p0, p1;
    double cpus, bps;
    if ((rc = count("hosts", tok, 1, 1 << 15, &x)) != 0)
      break;
    snprintf(spec, sizeof spec, "%lldx%s", (long long)x, cluster);
    orion_error_clear(&err);
    if (orion_sim_parse_spec(spec, &n, &cpus, &bps, &err) != 0) {
      rc = bad("cluster", cluster, "want QcRATE, as 16c:10gbit");
      break;
    }
    if (parts > 0) { /* as given, fewer where a dimension is shorter */
      p0 = (int)(parts < w.rows0 ? parts : w.rows0);
      p1 = (int)(parts < w.rows1 ? parts : w.rows1);
    } else {
      p0 = orion_sim_parts(n, (int)per_host, w.rows0);
      p1 = orion_sim_parts(n, (int)per_host, w.rows1);
    }
    if (orion_sim_scale(&w, n, cpus, bps, p0, p1, &r, &err) != 0) {
      fprintf(stderr, "predict_scale: %s on %s: %s\n", name, spec, err.msg);
      rc = 1;
      break;
    }
    v = r.seconds > 0 ? r.busy / (n * r.seconds) : 1.0;
    if (json != NULL)
      fprintf(json,
              "{\"workload\":\"%s\",\"hosts\":%d,\"log2_hosts\":%.6g,"
              "\"partitions\":%d,\"time_partitions\":%d,"
              "\"predicted_pass_seconds\":%.6g,\"compute_seconds\":%.6g,"
              "\"rows_seconds\":%.6g,\"driver_seconds\":%.6g,"
              "\"slow_host_seconds\":%.6g,\"efficiency\":%.4f,"
              "\"bottleneck\":\"%s\"}\n",
              name, n, log2(n), p0, p1, r.seconds, r.compute, r.rows,
              r.driver, r.slow, v, r.bottleneck);
    printf("%-8s %6d %6d %12.6g %10.4g %10.4g %10.4g %8.4g %6.4f  %s\n",
           name, n, p0, r.seconds, r.compute, r.rows, r.driver, r.slow, v,
           r.bottleneck);
    rows++;
  }
  free(list);
  if (rc == 0 && rows == 0)
    rc = bad("hosts", hosts, "want host counts, as 16,64");
  if (json != NULL && fclose(json) != 0 && rc == 0) {
    fprintf(stderr, "predict_scale: --json: cannot be written\n");
    rc = 1;
  }
  return rc;
}
