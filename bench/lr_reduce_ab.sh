#!/usr/bin/env bash
# bench/lr_reduce_ab.sh: the loop end's reduction on the shard owners
# (issue 36) against the old path, where the owners sent the changed
# weights to the driver after every pass (ORION_SHARD_PULL_DATA=1), in one
# run, alternating (old, new, new, old, ...), on apps/lr/lr.lua's SGD
# (default --flush loop: the same bits either way, checked).
#
#   bench/lr_reduce_ab.sh                          # 200,000 x 1,000,000
#   ROWS=2000000 SYNTH_DIR=/tmp/lrsynth bench/lr_reduce_ab.sh
#   TRAIN=a.libsvm TEST=b.libsvm bench/lr_reduce_ab.sh
#
# Data: TRAIN and TEST, or bench/lr_synth.sh's set of ROWS (default
# 200,000) x FEATURES (default 1,000,000), NNZ (default 10), made in
# SYNTH_DIR (kept; default a temporary folder).  ROUNDS (default 2) rounds
# of both paths on EXECS (default 2) executors, EPOCHS (default 4) epochs,
# tier c, the test set scored after the last.  For each path it prints the
# medians over the runs of the mean training pass (epochs 2..), of the
# driver's bytes per pass (--loop-metrics' loop_driver_bytes of the
# training loop, calls 2..), of the whole run's CPU seconds (user + system,
# the executors included) and the load average before and after, then
# new/old ratios (below 1.00: the new path is faster or moves less).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lr_synth.sh
rows=${ROWS:-200000} features=${FEATURES:-1000000} nnz=${NNZ:-10}
rounds=${ROUNDS:-2} execs=${EXECS:-2} epochs=${EPOCHS:-4}
if [ ! -x ./orion-driver ]; then
  echo "bench/lr_reduce_ab.sh: build first (./configure && make)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${TRAIN:-}" ]; then
  train=$TRAIN test=${TEST:?TEST names the test set with TRAIN}
else
  sdir=${SYNTH_DIR:-$tmp}
  mkdir -p "$sdir"
  train=$sdir/synth-${rows}x${features}x${nnz}.train
  test=$sdir/synth-${rows}x${features}x${nnz}.test
  if [ ! -s "$train" ] || [ ! -s "$test" ]; then
    lr_synth "$train.part" "$rows" 1 "$features" "$nnz" && mv "$train.part" "$train"
    lr_synth "$test.part" $((rows / 10)) 2 "$features" "$nnz" && mv "$test.part" "$test"
  fi
fi
line=$(grep -n 'orion.parallel_for(Xtr, sgd' apps/lr/lr.lua | cut -d: -f1)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
printf '%s: %s executors, %s epochs, %s rounds, %s cores, load average %s\n' \
  "$train" "$execs" "$epochs" "$rounds" "$(nproc)" "$load0"

TIMEFORMAT='%U %S'
# run SIDE R: one run of side old or new; appends "pass_s driver_bytes cpu_s"
# to $tmp/SIDE and keeps its weights in $tmp/SIDE.R.w
run() {
  local side=$1 r=$2 m=$tmp/$1.$2.jsonl pull=""
  [ "$side" = old ] && pull=1
  { time ORION_SHARD_PULL_DATA=$pull ./orion-driver --quiet --executors "$execs" \
      --metrics "$m" --loop-metrics apps/lr/lr.lua --train "$train" --test "$test" \
      --epochs "$epochs" --tier c --eval-every 0 --weights "$tmp/$side.$r.w" \
      > /dev/null 2> "$tmp/err"; } 2> "$tmp/cpu" || { cat "$tmp/err" >&2; exit 1; }
  awk -v l="apps/lr/lr.lua:$line" -v cpu="$(awk '{ s += $1 + $2 } END { print s }' "$tmp/cpu")" '
    /"epoch":/ && match($0, /"epoch":[0-9]+/) && substr($0, RSTART + 8, RLENGTH - 8) + 0 >= 2 {
      match($0, /"train_seconds":[0-9.e+-]+/); p += substr($0, RSTART + 16, RLENGTH - 16); np++ }
    index($0, "\"loop\":\"" l "\"") && match($0, /"call":[0-9]+/) && substr($0, RSTART + 7, RLENGTH - 7) + 0 >= 2 {
      match($0, /"loop_driver_bytes":[0-9]+/); b += substr($0, RSTART + 20, RLENGTH - 20); nb++ }
    END { printf "%.4f %d %.3f\n", np ? p / np : -1, nb ? b / nb : -1, cpu }' "$m" >> "$tmp/$side"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for side in $order; do run "$side" "$r"; done
done
for r in $(seq "$rounds"); do
  cmp -s "$tmp/old.$r.w" "$tmp/new.$r.w" ||
    { echo "bench/lr_reduce_ab.sh: round $r: the weights differ between the paths" >&2; exit 1; }
done
med() { cut -d' ' -f"$2" "$tmp/$1" | sort -g | awk '{ v[NR] = $1 } END {
  printf "%s", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-5s %10s %16s %8s\n' path "pass s" "driver B/pass" "cpu s"
for side in old new; do
  printf '%-5s %10.4f %16.0f %8.2f\n' "$side" "$(med "$side" 1)" "$(med "$side" 2)" "$(med "$side" 3)"
done
awk -v p0="$(med old 1)" -v p1="$(med new 1)" -v b0="$(med old 2)" -v b1="$(med new 2)" \
  -v c0="$(med old 3)" -v c1="$(med new 3)" 'BEGIN {
  printf "new/old: pass %.2f, driver bytes per pass %.4f, CPU %.2f (the same weights, bit for bit)\n",
    p1 / p0, b1 / b0, c1 / c0 }'
printf 'load average before %s, after %s\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
