#!/bin/sh
# The slow set's test of automatic recovery (issue 19) on real data:
#
#  1. MF on MovieLens-1M, 40 epochs, a checkpoint every 5, on 2 and on 4
#     executors: 10 trials (5 on each) of kill -9 of a random executor of
#     the job at a random moment (40% to 90% of the undisturbed run's
#     time): every run exits 0, its log names the executor and the
#     restart, its final test RMSE is within 0.002 of the undisturbed
#     run's, and no process of the job is left.
#  1b. The driver killed with -9 at random moments of a run that writes a
#     checkpoint every epoch (so that some kills land while one is being
#     written), 5 times in a row, each run resuming the last: the executors
#     exit with their driver, and a final --resume ends with the
#     undisturbed RMSE.
#  1c. An executor stopped with SIGSTOP (--heartbeat-timeout 2): the job
#     restarts and ends with the undisturbed RMSE.
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
# The executors whose parent is $1 (/proc: no procps needed).
children() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$1" '$4 == p && $2 == "(orion-executor)" { print $1 }'
}
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
  victim=$(children $pid | shuf -n 1)
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
    at=$(awk -v s="$secs" -v r=$RANDOM 'BEGIN { printf "%.2f", s * (0.4 + 0.5 * r / 32768) }')
    # A run that ended before the kill is tried again, killed earlier; so
    # is one whose executor died after the job's last block (its run
    # finished untouched, with no recovery to see: once seen in CI at 86%
    # of the undisturbed time).  An earlier kill lands inside the run, so
    # a kill that goes unnoticed still fails below.
    for try in 1 2 3; do
      rm -rf "$tmp/mf$ex-$t"
      run_killed mf$ex-$t "$at" mf$ex-$t.out mf$ex-$t.err \
        "$drv" --executors $ex --checkpoint-dir "$tmp/mf$ex-$t" $MF --checkpoint-every 5
      rc=$?
      if ! grep -q "^no executor to kill" mf$ex-$t.err &&
         { [ $rc != 0 ] || grep -q "orion: recovery: executor " mf$ex-$t.err; }; then
        break
      fi
      at=$(awk -v a="$at" 'BEGIN { printf "%.2f", a / 2 }')
    done
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

# ---- the driver killed at random moments, a checkpoint every epoch ----------
# Many of these kills land while a checkpoint is being written: --resume
# must find the newest complete one and end with the undisturbed RMSE.
# (--resume=auto: a kill before the first checkpoint leaves none, and
# plain --resume then refuses to start afresh.)
base=$(last_rmse base2.out)
d=$tmp/dk
for t in 1 2 3 4 5; do
  CKPT_MARK=dk$t "$drv" --quiet --executors 2 --checkpoint-dir "$d" \
    $( [ $t -gt 1 ] && echo --resume=auto ) $MF --checkpoint-every 1 > dk$t.out 2>&1 &
  pid=$!
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 1 + r / 32768 }')"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  n=0
  while [ -n "$(job_procs dk$t)" ] && [ $n -lt 300 ]; do sleep 0.05; n=$((n + 1)); done
  [ -z "$(job_procs dk$t)" ] || fail "driver kill $t: executors left: $(job_procs dk$t)"
done
ls -a "$d" > dk.ls
"$drv" --quiet --executors 2 --checkpoint-dir "$d" --resume=auto $MF --checkpoint-every 1 > dk.out 2>&1 ||
  fail "--resume after 5 driver kills: $(tail -5 dk.out)"
# Epoch 40's line, from whichever run printed it last (a run that
# resumes from the checkpoint of step 40 prints none).
cat dk1.out dk2.out dk3.out dk4.out dk5.out dk.out > dk.all
r40=$(awk '$1 == 40 && NF == 4 { r = $4 } END { print r }' dk.all)
echo "# --resume after 5 driver kills (folder: $(tr '\n' ' ' < dk.ls)): epoch 40's test RMSE $r40"
[ "$r40" = "$base" ] || fail "--resume after driver kills: RMSE '$r40', undisturbed $base"

# ---- an executor that stops answering (SIGSTOP): the heartbeat timeout -------
CKPT_MARK=stop "$drv" --executors 2 --heartbeat-timeout 2 --checkpoint-dir "$tmp/stop" \
  $MF --checkpoint-every 5 > stop.out 2> stop.err &
pid=$!
# Stop an executor once the first checkpoint is there (a fixed sleep was
# past the end of the whole run on an idle machine: 40 epochs take 1.4 s).
n=0
while ! ls -d "$tmp/stop"/ckpt-* >/dev/null 2>&1 && kill -0 $pid 2>/dev/null &&
      [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
victim=$(children $pid | shuf -n 1)
[ -n "$victim" ] || fail "SIGSTOP: no executor of the job to stop (it ended first)"
kill -STOP "$victim"
n=0
while kill -0 $pid 2>/dev/null && [ $n -lt 3000 ]; do sleep 0.1; n=$((n + 1)); done
kill -9 $pid 2>/dev/null && fail "SIGSTOP: still running after 300 s"
wait $pid
rc=$?
echo "# SIGSTOP of executor pid $victim: exit $rc, test RMSE $(last_rmse stop.out)"
[ $rc = 0 ] || fail "SIGSTOP: exit $rc: $(tail -5 stop.err)"
has stop.err "has not answered for 2 s"
has stop.err "orion: recovery: executor "
[ "$(last_rmse stop.out)" = "$base" ] || fail "SIGSTOP: RMSE $(last_rmse stop.out), undisturbed $base"
kill -9 "$victim" 2>/dev/null
[ -z "$(job_procs stop)" ] || fail "SIGSTOP: processes left: $(job_procs stop)"

LDA="$src/apps/lda/lda.lua --corpus $kos --k 50 --iters 25 --check"
last_ll() { awk '$1 ~ /^[0-9]+$/ && NF == 4 { r = $4 } END { print r }' "$1"; }
t0=$(date +%s.%N)
"$drv" --quiet --executors 2 $LDA > lda0.out 2>&1 || fail "LDA undisturbed: $(cat lda0.out)"
secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
at=$(awk -v s="$secs" 'BEGIN { printf "%.2f", s * 0.6 }')
# A run that ended before the kill (the undisturbed one was slowed by
# load) is tried again, killed earlier.
for try in 1 2 3; do
  rm -rf "$tmp/lda"
  run_killed lda "$at" lda1.out lda1.err "$drv" --executors 2 --checkpoint-dir "$tmp/lda" $LDA --checkpoint-every 5
  rc=$?
  grep -q "^no executor to kill" lda1.err || break
  at=$(awk -v a="$at" 'BEGIN { printf "%.2f", a / 2 }')
done
echo "# LDA: undisturbed ${secs}s, ll/token $(last_ll lda0.out); killed at ${at}s: exit $rc, ll/token $(last_ll lda1.out)"
[ $rc = 0 ] || fail "LDA killed: exit $rc: $(tail -5 lda1.err)"
has lda1.err "orion: recovery: executor "
has lda1.out "# check: the document, word and topic counts match the assignments"
awk -v a="$(last_ll lda1.out)" -v b="$(last_ll lda0.out)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.01) }' ||
  fail "LDA: ll/token $(last_ll lda1.out), undisturbed $(last_ll lda0.out)"
[ -z "$(job_procs lda)" ] || fail "LDA: processes left: $(job_procs lda)"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "all slow checkpoint tests passed"
