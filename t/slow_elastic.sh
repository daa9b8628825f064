#!/bin/sh
# Elastic executors on the namespaced cluster (issue 35, section 3; the
# slow set; bench/netcluster.sh: 4 executors, each in a network namespace
# of its own on a bridge):
#
#  For MF (synthetic, 32 epochs) and LDA (KOS, 40 iterations, the
#  log-likelihood every iteration, --partitions 4, a grid fixed
#  whatever the executors, as the default 8 x 8 is), a checkpoint every step, 3 trials
#  each: one of the 4 executors (a different one each trial) is killed
#  with -9 at a different moment (0, 0.05 and 0.15 s after the
#  checkpoint of step 2, 5 and 8 is written: between loops and inside
#  one), the job goes on with 3; once it has resumed, an executor started
#  with --join in the dead one's namespace is taken at the next loop
#  boundary (in place: nothing redone) and the job goes on with 4.  Each run: exit 0, the log says
#  both re-formings, every epoch's train and test RMSE (MF) and every
#  iteration's log-likelihood (LDA) are the undisturbed run's, and the
#  saved model (MF's W and H, LDA's word-topic counts) is the same bytes.
#  Then MF with one executor's link cut (ip link set DEV down) past the
#  driver's heartbeat timeout: the same result on the other 3.
# netcluster.sh removes its namespaces and processes after each run.
#
# Needs root and working `ip netns`, and ../shared/data's KOS corpus
# (ORION_DATA) for LDA; skips (77) otherwise, except under CI=true, where
# that is a failure.  Both jobs are sized so that each step takes about
# 0.05-0.1 s on 2 idle cores: a job must still be running when the test
# kills an executor after step 8, and when the joiner arrives after the
# re-forming.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh" # skip, reap
export ORION_DRIVER_BIN=${ORION_DRIVER:-$src/orion-driver}
export ORION_EXECUTOR=${ORION_EXECUTOR:-$(dirname "$ORION_DRIVER_BIN")/orion-executor}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
net="$src/bench/netcluster.sh"

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
probe="oelprobe$$"
ip netns add "$probe" >/dev/null 2>&1 || skip "\`ip netns\` does not work here"
ip netns del "$probe"
kos=${ORION_DATA:-$src/../shared/data}/uci-bow-kos/docword.kos.txt.gz
[ -f "$kos" ] || skip "$kos not found (set ORION_DATA)"

tmp=$(mktemp -d /tmp/orion-elastic-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
has() {
  grep -qF -- "$2" "$1" || fail "$1 lacks '$2':
$(cat "$1")"
}
# wait_for_line FILE TEXT SECONDS PID
wait_for_line() {
  n=0
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt $(($3 * 100)) ] && return 1
    kill -0 "$4" 2>/dev/null || return 1
    sleep 0.01
  done
}
# The last row printed for each step (a re-formed job prints the redone
# steps again), without the seconds and rate columns.
rows() {
  awk '$1 ~ /^[0-9]+$/ && NF == 4 { $2 = ""; if (lda == 1) $3 = ""; r[$1] = $0 }
       END { for (e = 1; e <= n; e++) print e, r[e] }' lda="$2" n="$steps" "$1"
}
ORION_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export ORION_TOKEN

MF="$src/apps/mf/mf.lua --synthetic 20000,5000,3000000 --k 64 --epochs 32"
LDA="$src/apps/lda/lda.lua --corpus $kos --iters 40 --k 200 --ll-every 1 --partitions 4"
for app in mf lda; do
  if [ $app = mf ]; then args=$MF; save="--save base-mf"; files="W H"; lda=0; steps=32
  else args=$LDA; save="--save base-lda.counts"; files=counts; lda=1; steps=40; fi
  timeout -k 10 300 "$net" -n 4 -- $args $save > base-$app.out 2> base-$app.err ||
    fail "$app: the undisturbed run failed: $(tail -5 base-$app.err)"
  rows base-$app.out $lda > base-$app.rows
  [ "$(awk 'NF > 2' base-$app.rows | wc -l)" = $steps ] ||
    fail "$app: the undisturbed run printed no $steps steps: $(cat base-$app.out)"
  for trial in 1 2 3; do
    name=$app-$trial
    step=$((trial * 3 - 1))
    delay=$(echo "0 0.05 0.15" | cut -d' ' -f$trial)
    victim=$((trial % 4))
    if [ $app = mf ]; then save="--save $name"; else save="--save $name.counts"; fi
    rm -rf "ck-$name"
    timeout -k 10 300 "$net" -n 4 --logs "$tmp" -- --elastic \
      --checkpoint-dir "ck-$name" $args --checkpoint-every 1 $save \
      > $name.out 2> $name.err &
    pid=$!
    wait_for_line $name.err "checkpoint of step $step written" 120 $pid ||
      fail "$name: no checkpoint of step $step: $(tail -5 $name.err)"
    sleep "$delay"
    epid=$(sed -n "s/^netcluster: executor $victim in namespace .*, pid \([0-9]*\)\$/\1/p" $name.err)
    ns=$(sed -n "s/^netcluster: executor $victim in namespace \([^ ]*\) .*/\1/p" $name.err)
    addr=$(sed -n "s/.*'--driver' '\([^']*\)'.*/\1/p" $name.err | head -1)
    [ -n "$epid" ] && [ -n "$ns" ] && [ -n "$addr" ] ||
      fail "$name: no executor $victim in: $(cat $name.err)"
    kill -9 "$epid"
    # Resumed on 3: then one joins in the dead one's namespace.
    wait_for_line $name.err "going on with 3 executors" 60 $pid &&
      wait_for_line $name.err "orion: resumed from the checkpoint" 60 $pid ||
      fail "$name: no re-forming on 3 executors: $(tail -5 $name.err)"
    ip netns exec "$ns" "$ORION_EXECUTOR" --driver "$addr" --join \
      > join-$name.log 2>&1 &
    jpid=$!
    reap $pid 300
    rc=$?
    [ $rc = 0 ] || fail "$name: exit $rc: $(tail -20 $name.err)"
    reap $jpid 20 > /dev/null || fail "$name: the joined executor: $(cat join-$name.log)"
    has $name.err "lost; going on with 3 executors"
    has $name.err "1 executor joins; going on with 4 executors"
    # (LDA reads KOS: the 3 survivors kept their parts of it)
    [ $app = lda ] &&
      has $name.err "docword.kos.txt.gz: 3 of its 4 parts were kept by the executors that held them, 1 parsed again"
    rows $name.out $lda > $name.rows
    cmp -s base-$app.rows $name.rows ||
      fail "$name: steps differ from the undisturbed run's: $(diff base-$app.rows $name.rows)"
    for f in $files; do
      if [ $app = mf ]; then a=base-mf.$f; b=$name.$f; else a=base-lda.counts; b=$name.counts; fi
      cmp -s "$a" "$b" || fail "$name: $b differs from $a"
    done
  done
done

# ---- a link cut past the heartbeat timeout ------------------------------------
# Executor 2's link goes down after the checkpoint of step 3: the driver
# hears nothing for --heartbeat-timeout (2 s here) and goes on with 3; the
# result is the undisturbed run's.
steps=32 # MF
rm -rf ck-cut
timeout -k 10 300 "$net" -n 4 --grace 5 -- --elastic --heartbeat-timeout 2 \
  --checkpoint-dir ck-cut $MF --checkpoint-every 1 --save cut \
  > cut.out 2> cut.err &
pid=$!
wait_for_line cut.err "checkpoint of step 3 written" 120 $pid ||
  fail "cut: no checkpoint of step 3: $(tail -5 cut.err)"
link=$(sed -n 's/^netcluster: executor 2 in namespace .*, link \([^)]*\)), pid .*/\1/p' cut.err)
[ -n "$link" ] && ip link set "$link" down || fail "cut: no link of executor 2: $(cat cut.err)"
reap $pid 300
rc=$?
[ $rc = 0 ] || fail "cut: exit $rc: $(tail -20 cut.err)"
has cut.err "has not answered for"
has cut.err "lost; going on with 3 executors"
rows cut.out 0 > cut.rows
cmp -s base-mf.rows cut.rows ||
  fail "cut: steps differ from the undisturbed run's: $(diff base-mf.rows cut.rows)"
for f in W H; do cmp -s base-mf.$f cut.$f || fail "cut: cut.$f differs from base-mf.$f"; done

[ $status = 0 ] && echo "PASS: elastic executors on the namespaced cluster"
exit $status
