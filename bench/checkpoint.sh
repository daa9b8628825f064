#!/usr/bin/env bash
# bench/checkpoint.sh: the cost of a checkpoint against an epoch (issue
# 19): MF on MovieLens-1M, K=128, on 2 executors, a checkpoint after every
# epoch (orion-driver --checkpoint-dir, mf.lua --checkpoint-every 1), run
# twice in one go: the executors writing the rows they hold as parts of
# the checkpoint (the default), and the driver bringing those rows back
# and writing every file itself (ORION_CKPT_NO_PARTS=1), to compare.
#
#   ./configure && make && bench/checkpoint.sh
#   EXECS=4 K=64 EPOCHS=8 bench/checkpoint.sh
#
# Prints, for each way, the mean seconds of an epoch (training and test
# pass, epochs 2..EPOCHS of --metrics), the mean seconds of a checkpoint
# (the driver's "checkpoint of step N written ... in S s" lines: every
# array and part, fsynced, renamed, the manifest last), the megabytes a
# checkpoint writes, and the ratio checkpoint / epoch (the issue's goal:
# below 1).  The checkpoint folder is made under TMPDIR (default /tmp):
# put it on the disk to measure.  Without the data it is skipped (exit 0),
# unless CI=true (exit 1).
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

# run NAME [VAR=VALUE]: one run; prints "epoch ckpt later mb newmb parts".
run() {
  local name=$1
  shift
  env "$@" ./orion-driver --executors "$execs" --checkpoint-dir "$tmp/$name" \
    --metrics "$tmp/$name.jsonl" apps/mf/mf.lua --train "$train" --test "$test" \
    --k "$k" --epochs "$epochs" --checkpoint-every 1 > "$tmp/$name.out" 2> "$tmp/$name.err" ||
    { cat "$tmp/$name.out" "$tmp/$name.err" >&2; exit 1; }
  # "checkpoint of step N written to DIR: A arrays, X MB (Y MB new) in S s
  # [(with parts the executors wrote)]": the first writes every array,
  # later ones link the unchanged (the data).
  printf '%s ' "$(mean_key "$tmp/$name.jsonl" seconds)"
  awk '/checkpoint of step [0-9]+ written/ {
      line = $0; sub(/.*arrays, /, "", line); split(line, f, " ")
      n++; s += f[7]; mb += f[1]; nm += substr(f[3], 2)
      if (n > 1) { ls += f[7]; ln++ }
      if (index($0, "with parts the executors wrote")) parts++ }
    END { if (n) printf "%.4f %.4f %.1f %.1f %d/%d\n", s / n, ln ? ls / ln : s / n, mb / n, nm / n, parts, n
          else print "nan nan nan nan 0/0" }' "$tmp/$name.err"
}

read -r e1 c1 l1 mb1 nm1 p1 < <(run parts)
read -r e2 c2 l2 mb2 nm2 p2 < <(run driver ORION_CKPT_NO_PARTS=1)
printf 'MF on MovieLens-1M, K=%s, %s executors, %s epochs, a checkpoint after each, %s cores\n' \
  "$k" "$execs" "$epochs" "$(nproc)"
printf '%-30s %14s %14s\n' "" "executors" "driver only" \
  "epoch (s, mean of 2..$epochs)" "$e1" "$e2" \
  "checkpoint (s, mean of all)" "$c1" "$c2" \
  "checkpoint (s, mean of 2..)" "$l1" "$l2" \
  "checkpoint (MB; MB written)" "$mb1; $nm1" "$mb2; $nm2" \
  "with executors' parts" "$p1" "$p2"
awk -v c1="$c1" -v e1="$e1" -v c2="$c2" -v e2="$e2" 'BEGIN {
  printf "%-30s %14.3f %14.3f  (goal: below 1)\n", "checkpoint / epoch", c1 / e1, c2 / e2 }'
