#!/usr/bin/env bash
# bench/checkpoint.sh: the cost of a checkpoint against an epoch (issue
# 19): MF on MovieLens-1M, K=128, on 2 executors, a checkpoint after every
# epoch (orion-driver --checkpoint-dir, mf.lua --checkpoint-every 1).
#
#   ./configure && make && bench/checkpoint.sh
#   EXECS=4 K=64 EPOCHS=8 bench/checkpoint.sh
#
# Prints the mean seconds of an epoch (training and test pass, epochs
# 2..EPOCHS of --metrics), the mean seconds of a checkpoint (the driver's
# "checkpoint of step N written ... in S s" lines: every array, fsynced,
# renamed, the manifest last), the megabytes a checkpoint writes, and the
# ratio checkpoint / epoch (the issue's goal: below 1).  The checkpoint
# folder is made under TMPDIR (default /tmp): put it on the disk to
# measure.  Without the data it is skipped (exit 0), unless CI=true
# (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m checkpoint.sh
epochs=${EPOCHS:-6}
execs=${EXECS:-2}
k=${K:-128}
bench_epochs checkpoint.sh EPOCHS "$epochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./orion-driver --executors "$execs" --checkpoint-dir "$tmp/ckpt" \
  --metrics "$tmp/m.jsonl" apps/mf/mf.lua --train "$train" --test "$test" \
  --k "$k" --epochs "$epochs" --checkpoint-every 1 > "$tmp/out" 2> "$tmp/err" ||
  { cat "$tmp/out" "$tmp/err" >&2; exit 1; }

epoch=$(mean_key "$tmp/m.jsonl" seconds)
# "checkpoint of step N written to DIR: A arrays, X MB (Y MB new) in S s":
# the first writes every array, later ones link the unchanged (the data).
read -r ckpt later mb newmb < <(awk '/checkpoint of step [0-9]+ written/ {
    line = $0; sub(/.*arrays, /, "", line); split(line, f, " ")
    n++; s += f[7]; mb += f[1]; nm += substr(f[3], 2)
    if (n > 1) { ls += f[7]; ln++ } }
  END { if (n) printf "%.4f %.4f %.1f %.1f\n", s / n, ln ? ls / ln : s / n, mb / n, nm / n
        else print "nan nan nan nan" }' "$tmp/err")
printf 'MF on MovieLens-1M, K=%s, %s executors, %s epochs, a checkpoint after each, %s cores\n' \
  "$k" "$execs" "$epochs" "$(nproc)"
printf '%-30s %10s\n' "epoch (s, mean of 2..$epochs)" "$epoch" \
  "checkpoint (s, mean of all)" "$ckpt" "checkpoint (s, mean of 2..)" "$later" \
  "checkpoint (MB; MB written)" "$mb; $newmb"
awk -v c="$ckpt" -v e="$epoch" 'BEGIN { printf "%-30s %10.3f  (goal: below 1)\n", "checkpoint / epoch", c / e }'
