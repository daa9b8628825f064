#!/bin/sh
# The slow set's test of automatic recovery (issue 19) on real data:
#
#  1. MF on MovieLens-1M, 40 epochs, a checkpoint every 5, on 2 and on 4
#     executors: 10 trials (5 on each) of kill -9 of a random executor of
#     the job at a random moment (10% to 80% of the undisturbed run's
#     time): every run exits 0, its log names the executor and the
#     restart, its final test RMSE is within 0.002 of the undisturbed
#     run's, and no process of the job is left.
#  2. LDA on KOS (25 iterations, a checkpoint every 5, --check) with an
#     executor killed mid-run: exit 0, the final log-likelihood within
#     0.01 of the undisturbed run's, and --check's line (the word-topic
#     counts match the assignments).
#
# Needs ../shared/data (ORION_DATA); skips (77) without it, except under
# CI=true, where that is a failure.  ORION_CKPT_TRIALS changes the number
# of MF trials per executor count (default 5).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
data=${ORION_DATA:-$src/../shared/data}
train=$data/movielens-1m/ratings.train.txt.gz
test=$data/movielens-1m/ratings.test.txt.gz
kos=$data/uci-bow-kos/docword.kos.txt.gz
for f in "$train" "$test" "$kos"; do
  [ -f "$f" ] || skip "$f not found (set ORION_DATA)"
done
trials=${ORION_CKPT_TRIALS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
job_procs() {
  grep -l "CKPT_MARK=$1\$" /proc/[0-9]*/environ 2>/dev/null |
    sed 's|/proc/\([0-9]*\)/environ|\1|' | grep -v "^$$\$" || true
}
# run_killed MARK SECONDS OUT ERR CMD...: runs CMD, kills a random executor
# of it after SECONDS, waits at most 900 s; its exit status.
run_killed() {
  local mark=$1 at=$2 out=$3 err=$4 pid n victim
  shift 4
  CKPT_MARK=$mark "$@" > "$out" 2> "$err" &
  pid=$!
  sleep "$at"
  victim=$(pgrep -P $pid | shuf -n 1)
  if [ -n "$victim" ]; then
    kill -9 "$victim"
    echo "killed executor pid $victim at ${at}s" >> "$err"
  else
    echo "no executor to kill at ${at}s" >> "$err"
  fi
  n=0
  while kill -0 $pid 2>/dev/null && [ $n -lt 9000 ]; do sleep 0.1; n=$((n + 1)); done
  kill -9 $pid 2>/dev/null && echo "still running after 900 s" >> "$err"
  wait $pid
}
last_rmse() { awk '$1 ~ /^[0-9]+$/ && NF == 4 { r = $4 } END { print r }' "$1"; }

MF="$src/apps/mf/mf.lua --train $train --test $test --epochs 40"
cd "$tmp" || exit 1
for ex in 2 4; do
  t0=$(date +%s.%N)
  "$drv" --quiet --executors $ex $MF > base$ex.out 2>&1 || fail "undisturbed, $ex executors: $(cat base$ex.out)"
  secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  base=$(last_rmse base$ex.out)
  echo "# $ex executors: undisturbed run ${secs}s, test RMSE $base"
  for t in $(seq 1 "$trials"); do
    at=$(awk -v s="$secs" -v r=$RANDOM 'BEGIN { printf "%.2f", s * (0.1 + 0.7 * r / 32768) }')
    run_killed mf$ex-$t "$at" mf$ex-$t.out mf$ex-$t.err \
      "$drv" --executors $ex --checkpoint-dir "$tmp/mf$ex-$t" $MF --checkpoint-every 5
    rc=$?
    r=$(last_rmse mf$ex-$t.out)
    echo "# trial $t on $ex executors: kill at ${at}s, exit $rc, test RMSE $r; $(grep -h 'orion: recovery' mf$ex-$t.err)"
    [ $rc = 0 ] || fail "trial $t, $ex executors: exit $rc: $(tail -5 mf$ex-$t.err)"
    has mf$ex-$t.err "orion: recovery: executor "
    awk -v a="$r" -v b="$base" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.002) }' ||
      fail "trial $t, $ex executors: test RMSE $r, undisturbed $base"
    [ -z "$(job_procs mf$ex-$t)" ] || fail "trial $t: processes left: $(job_procs mf$ex-$t)"
    rm -rf "$tmp/mf$ex-$t"
  done
done

LDA="$src/apps/lda/lda.lua --corpus $kos --k 50 --iters 25 --check"
last_ll() { awk '$1 ~ /^[0-9]+$/ && NF == 4 { r = $4 } END { print r }' "$1"; }
t0=$(date +%s.%N)
"$drv" --quiet --executors 2 $LDA > lda0.out 2>&1 || fail "LDA undisturbed: $(cat lda0.out)"
secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
at=$(awk -v s="$secs" 'BEGIN { printf "%.2f", s * 0.6 }')
run_killed lda "$at" lda1.out lda1.err "$drv" --executors 2 --checkpoint-dir "$tmp/lda" $LDA --checkpoint-every 5
rc=$?
echo "# LDA: undisturbed ${secs}s, ll/token $(last_ll lda0.out); killed at ${at}s: exit $rc, ll/token $(last_ll lda1.out)"
[ $rc = 0 ] || fail "LDA killed: exit $rc: $(tail -5 lda1.err)"
has lda1.err "orion: recovery: executor "
has lda1.out "# check: the document, word and topic counts match the assignments"
awk -v a="$(last_ll lda1.out)" -v b="$(last_ll lda0.out)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.01) }' ||
  fail "LDA: ll/token $(last_ll lda1.out), undisturbed $(last_ll lda0.out)"
[ -z "$(job_procs lda)" ] || fail "LDA: processes left: $(job_procs lda)"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "all slow checkpoint tests passed"
