#!/usr/bin/env bash
# bench/elastic.sh: the time a lost executor costs an --elastic job,
# against one epoch (issue 35, section 3).  MF on MovieLens-1M (K=32 by
# default) on EXECS local executors (default 4), a checkpoint every epoch,
# run ROUNDS times (default 3) each way, interleaved A, B, A, B:
#
#   A  orion-driver --elastic, undisturbed;
#   B  the same, with one executor killed (-9) half an epoch after the
#      checkpoint of step KILL_AT (default 3) is written: the job re-forms
#      on EXECS-1 executors from that checkpoint and redoes the part of
#      the epoch that was lost; the survivors' kept parts of the ratings
#      files answer the re-formed job's loads (docs/checkpoints.md);
#   C  B with ORION_NO_KEPT=1: nothing kept, every part parsed again (the
#      baseline for the kept parts, in the same run).
#
#   ./configure && make && bench/elastic.sh
#   EXECS=3 EPOCHS=8 KILL_AT=4 ROUNDS=5 bench/elastic.sh
#
# Prints the median wall-clock seconds of A, B and C, one epoch (A's mean
# epoch seconds over epochs 2..EPOCHS from --metrics, checkpoint not
# included, and A's wall time per epoch, everything included), the time
# lost per failure (median B - median A, and C's), the ratios lost /
# epoch, the seconds from the kill to the re-formed job's "resumed" line
# (B's and C's medians, and their ratio), and whether every B and C run
# ended with A's test RMSE.  B runs the remaining
# epochs on one executor fewer, so its time includes that slowdown too.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m elastic.sh
epochs=${EPOCHS:-6}
execs=${EXECS:-4}
k=${K:-32}
kill_at=${KILL_AT:-3}
rounds=${ROUNDS:-3}
bench_epochs elastic.sh EPOCHS "$epochs"
[ "$kill_at" -ge 1 ] && [ "$kill_at" -lt "$epochs" ] ||
  { echo "bench/elastic.sh: KILL_AT must be 1..EPOCHS-1" >&2; exit 2; }
[ "$execs" -ge 2 ] || { echo "bench/elastic.sh: EXECS must be 2 or more" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# The executors whose parent is $1.
children() {
  # (a process may end while cat reads: not an error here)
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } |
    awk -v p="$1" '$4 == p && $2 == "(orion-executor)" { print $1 }'
}
# until_line FILE TEXT PID: waits (at most 600 s) for TEXT in FILE.
until_line() {
  local n=0
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -lt 60000 ] && kill -0 "$3" 2>/dev/null || return 1
    sleep 0.01
  done
}

half_epoch=0.5
# run NAME KILL: one run; prints "wall reform_seconds last_test_rmse".
run() {
  local name=$1 t0 t1 pid victim tk="" tr="" nokept=0
  [ "$2" = kill-nokept ] && nokept=1
  rm -rf "$tmp/ck-$name"
  t0=$(now)
  ORION_NO_KEPT=$nokept ./orion-driver --executors "$execs" --elastic --checkpoint-dir "$tmp/ck-$name" \
    --metrics "$tmp/$name.jsonl" apps/mf/mf.lua --train "$train" --test "$test" \
    --k "$k" --epochs "$epochs" --checkpoint-every 1 > "$tmp/$name.out" 2> "$tmp/$name.err" &
  pid=$!
  if [ "$2" != none ]; then
    until_line "$tmp/$name.err" "checkpoint of step $kill_at written" $pid ||
      { cat "$tmp/$name.err" >&2; exit 1; }
    sleep "$half_epoch"
    victim=$(children $pid | tail -1)
    [ -n "$victim" ] || { echo "bench/elastic.sh: run $name ended before the kill" >&2; exit 1; }
    tk=$(now)
    kill -9 "$victim"
    until_line "$tmp/$name.err" "orion: resumed from the checkpoint" $pid ||
      { cat "$tmp/$name.err" >&2; exit 1; }
    tr=$(now)
  fi
  wait $pid || { cat "$tmp/$name.out" "$tmp/$name.err" >&2; exit 1; }
  t1=$(now)
  echo "$(sub "$t1" "$t0") $([ -n "$tk" ] && sub "$tr" "$tk" || echo 0)" \
    "$(last_key "$tmp/$name.jsonl" test_rmse)"
}

: > "$tmp/a"
: > "$tmp/b"
: > "$tmp/c"
for ((r = 1; r <= rounds; r++)); do
  run a$r none >> "$tmp/a"
  if [ $r = 1 ]; then # half of A's mean epoch: the kill lands inside one
    half_epoch=$(awk -v s="$(mean_key "$tmp/a1.jsonl" seconds)" 'BEGIN { printf "%.3f", s / 2 }')
  fi
  run b$r kill >> "$tmp/b"
  run c$r kill-nokept >> "$tmp/c"
done
a=$(awk '{ print $1 }' "$tmp/a" | bench_median)
b=$(awk '{ print $1 }' "$tmp/b" | bench_median)
c=$(awk '{ print $1 }' "$tmp/c" | bench_median)
reform=$(awk '{ print $2 }' "$tmp/b" | bench_median)
reform_c=$(awk '{ print $2 }' "$tmp/c" | bench_median)
epoch=$(for ((r = 1; r <= rounds; r++)); do mean_key "$tmp/a$r.jsonl" seconds; echo; done | bench_median)
same=yes
[ "$(awk '{ print $3 }' "$tmp/a" "$tmp/b" "$tmp/c" | sort -u | wc -l)" = 1 ] || same=no
awk -v a="$a" -v b="$b" -v c="$c" -v e="$epoch" -v n="$epochs" -v r="$reform" -v rc="$reform_c" \
    -v x="$execs" -v k="$k" -v rounds="$rounds" -v at="$kill_at" -v same="$same" 'BEGIN {
  lost = b - a; lostc = c - a; we = a / n
  printf "elastic: MF MovieLens-1M K=%d, %d epochs, %d executors, a checkpoint every epoch, %d rounds (A,B,C interleaved)\n", k, n, x, rounds
  printf "undisturbed (A)            %8.3f s  (median wall)\n", a
  printf "one executor killed (B)    %8.3f s  (half an epoch after the checkpoint of step %d)\n", b, at
  printf "the same, nothing kept (C) %8.3f s  (ORION_NO_KEPT=1)\n", c
  printf "one epoch                  %8.3f s  (A: mean epoch 2..%d); %.3f s wall per epoch\n", e, n, we
  printf "lost per failure           %8.3f s  = %.2f epochs (%.2f of a wall epoch)\n", lost, lost / e, lost / we
  printf "lost, nothing kept (C)     %8.3f s  = %.2f epochs (%.2f of a wall epoch)\n", lostc, lostc / e, lostc / we
  printf "kill to resumed            %8.3f s  (B: re-forming, the driver and data again)\n", r
  printf "kill to resumed, C         %8.3f s  (B/C %.2f)\n", rc, (rc > 0 ? r / rc : 0)
  printf "same test RMSE in A, B, C  %s\n", same
}'
