#!/bin/sh
# The loop end's reduction of buffered writes stays on the shard owners
# (issue 36): apps/lr/lr.lua's SGD (default --flush loop: the weight
# deltas go writer to owner, held per block and added by the owner in
# block order) on a small synthetic libsvm set (bench/lr_synth.sh).
#   - The weights file is the same bytes on 1, 2, 3 and 4 executors as on
#     1 with the old path (ORION_SHARD_PULL_DATA=1: the owners send the
#     changed rows to the driver after every loop), on 3 with each block's
#     writes sent at the loop's end instead of the block's
#     (ORION_NO_EARLY_FLUSH=1), and with --C (a loop over W itself, which
#     takes the kept rows back first) on 1 and 3.
#   - The driver's bytes per training loop (--loop-metrics,
#     loop_driver_bytes, passes 2 and 3) do not grow with the weight
#     dimension (20,000 -> 200,000 features: by at most a quarter); with
#     the old path they grow by half or more (the changed weights travel:
#     the metric sees them).
#   - An owner lost mid-reduction (ORION_TEST_DIE_AT=1:SHARD_PULL: it
#     exits with the other's deltas in and not applied), or lost while it
#     holds the rows it kept when the script reads them (1:ROWS_PULL):
#     exit 3, a message naming the executor, no hang.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
. "$src/bench/lr_synth.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
app=$src/apps/lr/lr.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset ORION_SHARD_PULL_DATA ORION_TEST_DIE_AT
line=$(grep -n 'orion.parallel_for(Xtr, sgd' "$app" | cut -d: -f1)

lr_synth "$tmp/small" 1500 1 20000 10
lr_synth "$tmp/big" 1500 1 200000 10
lr_synth "$tmp/test" 300 2 20000 10

# lr NAME EXECS TRAIN [ARGS...]: runs lr.lua (3 epochs, tier c, the test
# set scored after the last), its weights in $tmp/NAME.w, its metrics in
# $tmp/NAME.m; 0 when it exited 0.
lr() {
  _n=$1 _e=$2 _t=$3
  shift 3
  timeout 120 "$drv" --quiet --executors "$_e" --loop-metrics \
    --metrics "$tmp/$_n.m" "$app" --train "$_t" --test "$tmp/test" \
    --epochs 3 --tier c --eval-every 0 --weights "$tmp/$_n.w" "$@" \
    > "$tmp/$_n.out" 2> "$tmp/$_n.err" || { cat "$tmp/$_n.err"; return 1; }
}

# The same bits as the driver path.
ORION_SHARD_PULL_DATA=1 lr ref 1 "$tmp/small" || fail "the old path on 1 executor failed"
for n in 1 2 3 4; do
  if ! lr p$n "$n" "$tmp/small"; then
    fail "$n executors: the run failed"
  elif ! cmp -s "$tmp/ref.w" "$tmp/p$n.w"; then
    fail "$n executors: the weights differ from the driver path's"
  fi
done
[ "$(wc -l < "$tmp/ref.w")" -ge 20000 ] || fail "the weights file has $(wc -l < "$tmp/ref.w") lines"
# A block's writes leave for their owners at its end (the default) or at
# the loop's end (ORION_NO_EARLY_FLUSH=1): the owners hold them by block
# either way, so the bits are the same.
ORION_NO_EARLY_FLUSH=1 lr e3 3 "$tmp/small" || fail "ORION_NO_EARLY_FLUSH=1 on 3 executors failed"
cmp -s "$tmp/ref.w" "$tmp/e3.w" || fail "ORION_NO_EARLY_FLUSH=1 on 3 executors: the weights differ"
lr c1 1 "$tmp/small" --C 10 --lr 0.1 && lr c3 3 "$tmp/small" --C 10 --lr 0.1 &&
  { cmp -s "$tmp/c1.w" "$tmp/c3.w" || fail "--C: 1 and 3 executors' weights differ"; } ||
  fail "--C: a run failed"

# bytes NAME: the driver's bytes of the training loop's calls 2 and 3.
bytes() {
  awk -v l="apps/lr/lr.lua:$line" '
    index($0, "\"loop\":\"") && index($0, l "\"") && match($0, /"call":[0-9]+/) {
      c = substr($0, RSTART + 7, RLENGTH - 7) + 0
      if (c < 2) next
      match($0, /"loop_driver_bytes":[0-9]+/)
      s += substr($0, RSTART + 20, RLENGTH - 20); n++ }
    END { if (n != 2) { print "none"; exit } printf "%d\n", s / n }' "$tmp/$1.m"
}
lr bs 2 "$tmp/small" && lr bb 2 "$tmp/big" || fail "the byte runs failed"
ORION_SHARD_PULL_DATA=1 lr os 2 "$tmp/small" && ORION_SHARD_PULL_DATA=1 lr ob 2 "$tmp/big" ||
  fail "the old path's byte runs failed"
bs=$(bytes bs) bb=$(bytes bb) os=$(bytes os) ob=$(bytes ob)
echo "driver bytes per training loop, 20k -> 200k features: $bs -> $bb (old path: $os -> $ob)"
case "$bs$bb$os$ob" in
  *none*) fail "no training loop lines in the metrics" ;;
  *)
    [ "$bb" -le $((bs + bs / 4)) ] ||
      fail "the driver's bytes grew with the weights: $bs -> $bb"
    [ "$ob" -ge $((os + os / 2)) ] ||
      fail "the old path's bytes did not grow with the weights: $os -> $ob"
    ;;
esac

# An owner lost mid-reduction, and one lost while it holds the kept rows.
for at in 1:SHARD_PULL 1:ROWS_PULL; do
  ORION_TEST_DIE_AT=$at timeout 60 "$drv" --quiet --executors 2 "$app" \
    --train "$tmp/small" --test "$tmp/test" --epochs 2 --tier c --weights "$tmp/die.w" \
    > /dev/null 2> "$tmp/die.err"
  rc=$?
  [ "$rc" -eq 3 ] || fail "$at: exit $rc, want 3 (124: it hung)"
  grep -q "executor 1 (.*) exited" "$tmp/die.err" ||
    { fail "$at: the message does not name executor 1"; cat "$tmp/die.err"; }
done
grep -q "reading array .* back" "$tmp/die.err" ||
  fail "ROWS_PULL: the message does not say the driver was reading the array back"

[ "$fails" -eq 0 ] || exit 1
echo "PASS: test_lr_reduce"
