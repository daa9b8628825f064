#!/usr/bin/env bash
# bench/drv_cpu.sh: the driver's CPU on virtual hosts (issue 35's goal: under
# 5% of one host's at 8 hosts), with the blocks of a 2-D loop sent at its
# start and the executors' reports held back (executor/exec_late.c) against
# the old dispatch, a report per block (ORION_NO_LATE=1), in one run,
# alternating (old, new, new, old, ...).  Needs root (bench/netcluster.sh):
#
#   sudo bench/drv_cpu.sh                        # MF, Netflix-shaped x0.25
#   N=4 K=128 ROUNDS=3 sudo bench/drv_cpu.sh
#
# apps/mf/mf.lua --synthetic DATA (default 120000,17700,6250000: the
# Netflix shape at a quarter of the users and ratings, bench/scale.sh's
# NETFLIX_SCALE=0.25) at K (default 32) on N (default 8) virtual hosts of
# Q CPUs (default 0.2; the driver in a cgroup of Q too, links at Q x 1
# gbit), EPOCHS (default 6) epochs, ROUNDS (default 2) rounds of both.
# Per run (bench/scale_lib.sh's scale_summary, epochs 2..): the training
# loop's seconds an epoch, the driver's CPU seconds an epoch (getrusage,
# the whole script: both loops, the RMSE lines, the metrics) and its share
# of one host's, Q x the epoch; then per dispatch the medians, the new/old
# ratio of the driver's CPU (below 1.00: less) and whether the runs gave
# the same RMSEs (they must: the same bits).  The load average is printed
# before and after: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/scale_lib.sh
n=${N:-8} k=${K:-32} q=${Q:-0.2} epochs=${EPOCHS:-6} rounds=${ROUNDS:-2}
data=${DATA:-120000,17700,6250000}
[ -x ./orion-driver ] || { echo "bench/drv_cpu.sh: build first (./configure && make)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/drv_cpu.sh: needs root (bench/netcluster.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench/drv_cpu.sh: MF --synthetic $data, K=$k, $n hosts of $q CPU, $epochs epochs, $rounds rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %-5s %9s %12s %10s\n' run path "epoch s" "driver ms" "of a host"
i=0
for r in $(seq "$rounds"); do
  order="old new"
  [ $((r % 2)) = 1 ] || order="new old"
  for path in $order; do
    i=$((i + 1))
    nolate=1
    [ "$path" = old ] || nolate=
    m=$tmp/$path-$i.jsonl
    ORION_NO_LATE=$nolate timeout 1800 bench/netcluster.sh -n "$n" --cpu "$q" --driver-cpu "$q" \
      --logs "$tmp/logs-$i" -- --quiet --loop-metrics --metrics "$m" apps/mf/mf.lua \
      --synthetic "$data" --k "$k" --epochs "$epochs" > "$tmp/$path-$i.out" 2> "$tmp/$path-$i.err" ||
      { echo "bench/drv_cpu.sh: run $i ($path) failed:" >&2; tail -n 20 "$tmp/$path-$i.err" >&2; exit 1; }
    read -r _ secs _ _ dcpu _ < <(scale_summary "$m" "$epochs")
    awk -v i="$i" -v p="$path" -v s="$secs" -v d="$dcpu" -v q="$q" \
      'BEGIN { printf "%-4d %-5s %9.4f %12.3f %9.1f%%\n", i, p, s, d * 1000, 100 * d / (q * s) }' |
      tee -a "$tmp/rows"
    grep -E '^ +[0-9]+ ' "$tmp/$path-$i.out" | awk '{ print $1, $3, $4 }' > "$tmp/rmse-$path-$i"
  done
done
med() { awk -v p="$1" -v c="$2" '$2 == p { print $c }' "$tmp/rows" | tr -d '%' | scale_median; }
for path in old new; do
  printf 'median %-5s epoch %.4f s, driver %.3f ms an epoch, %.1f%% of a host\n' "$path" \
    "$(med "$path" 3)" "$(med "$path" 4)" "$(med "$path" 5)"
done
awk -v a="$(med old 4)" -v b="$(med new 4)" 'BEGIN { printf "driver CPU an epoch, new / old: %.2f\n", b / a }'
same=yes
for f in "$tmp"/rmse-*; do cmp -s "$f" "$(ls "$tmp"/rmse-* | head -n 1)" || same=no; done
echo "the same RMSEs on every run: $same"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$same" = yes ]
