#!/bin/sh
# apps/lr/lr.lua's SGD at its default settings converges (issue 36: on a
# synthetic libsvm set the default --flush loop summed every block's steps
# from the pass's weights and diverged, predicting one class):
#   - on a small synthetic set (bench/lr_synth.sh, 3,000 rows over 5,000
#     features), 5 epochs at the defaults on 1 and 3 executors: the last
#     epoch's training loss is well below the first's and below ln 2 (the
#     loss at w = 0), every epoch's loss below the one before, the test
#     accuracy well above chance (0.5 on this balanced set), no warning,
#     and the same weights file on both executor counts;
#   - a step too large for the rows (--lr 4 with --reg 0.51: each touch
#     multiplies a weight by 1 - 4 x 0.51 < -1) makes the loss rise two
#     epochs in a row: a warning on stderr naming the epoch and --lr.
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

lr_synth "$tmp/train" 3000 1 5000 10
lr_synth "$tmp/test" 1000 2 5000 10

# lr NAME EXECS [ARGS...]: lr.lua, 5 epochs, its output in $tmp/NAME.out
# and .err, its weights in $tmp/NAME.w; 0 when it exited 0.
lr() {
  _n=$1 _e=$2
  shift 2
  timeout 120 "$drv" --quiet --executors "$_e" "$app" --train "$tmp/train" \
    --test "$tmp/test" --epochs 5 --weights "$tmp/$_n.w" "$@" \
    > "$tmp/$_n.out" 2> "$tmp/$_n.err" || { cat "$tmp/$_n.err"; return 1; }
}
# losses NAME: the epoch lines' training losses, one a line.
losses() { awk '/^ +[0-9]+ +[0-9.]+ +[0-9.]+ /{ print $3 }' "$tmp/$1.out"; }

for n in 1 3; do
  if ! lr d$n "$n"; then
    fail "defaults, $n executors: the run failed"
    continue
  fi
  l=$(losses d$n | tr '\n' ' ')
  acc=$(awk '/^test accuracy/{ print $3 }' "$tmp/d$n.out")
  echo "defaults, $n executors: train loss by epoch $l; test accuracy $acc"
  [ "$(losses d$n | wc -l)" -eq 5 ] || fail "defaults, $n executors: not 5 epoch lines"
  losses d$n | awk 'NR == 1 { first = $1 } NR > 1 && $1 >= prev { bad = 1 } { prev = $1 }
    END { exit !(NR == 5 && !bad && prev < 0.8 * first && prev < 0.6931) }' ||
    fail "defaults, $n executors: the training loss did not fall epoch by epoch to below 0.8 of the first and ln 2: $l"
  awk -v a="$acc" 'BEGIN { exit !(a + 0 >= 0.65) }' ||
    fail "defaults, $n executors: test accuracy '$acc', want >= 0.65 (chance is 0.5)"
  ! grep -q warning "$tmp/d$n.err" || fail "defaults, $n executors: a warning: $(cat "$tmp/d$n.err")"
done
[ -s "$tmp/d1.w" ] && cmp -s "$tmp/d1.w" "$tmp/d3.w" ||
  fail "defaults: the weights on 1 and 3 executors differ"

if lr big 3 --lr 4 --reg 0.51 --decay 1 --eval-every 0; then
  echo "--lr 4 --reg 0.51: train loss by epoch $(losses big | tr '\n' ' ')"
  grep -q "^lr.lua: warning: epoch [0-9]*: the training loss rose two epochs in a row .*lower --lr (4 now) or --reg (0.51 now" \
    "$tmp/big.err" || fail "--lr 4 --reg 0.51: no warning naming --lr: $(cat "$tmp/big.err")"
  [ "$(grep -c warning "$tmp/big.err")" -eq 1 ] || fail "--lr 4 --reg 0.51: not one warning"
else
  fail "--lr 4 --reg 0.51: the run failed"
fi

[ "$fails" -eq 0 ] || exit 1
echo "PASS: test_lr_defaults"
