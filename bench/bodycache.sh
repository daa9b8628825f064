#!/usr/bin/env bash
# bench/bodycache.sh: the driver's bytes a pass of LR's training loop
# (apps/lr/lr.lua on 20 Newsgroups, comp.* against the rest,
# apps/lr/make_20ng.sh) on 2 and 4 local executors, this tree against a
# built checkout BASE (issue 35: executors keep the bodies they were sent,
# wire version 22; before it, every pass sent the whole body to every
# executor).
#
#   bench/bodycache.sh BASE        # ROUNDS=2 EPOCHS=6 EXECS="2 4"
#
# Each round runs BASE, then this tree (the order swaps every round), with
# --loop-metrics; a run's figure is the median over its passes 2 to EPOCHS
# of the training loop's loop_driver_bytes (pass 1 also moves the data).
# Printed per executor count: the medians over the rounds of both sides,
# here/base, and each side's bytes a pass per executor.  Time is not
# compared: bytes do not depend on the machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
. bench/interleave.sh
base=${1:?usage: bench/bodycache.sh BASE_CHECKOUT}
base=$(cd "$base" && pwd)
rounds=${ROUNDS:-2}
epochs=${EPOCHS:-6}
execs=${EXECS:-2 4}
runs_count bodycache.sh "$rounds"
data=${ORION_DATA:-$here/../shared/data}
for t in "$base" "$here"; do
  [ -x "$t/orion-driver" ] || { echo "bench/bodycache.sh: no built orion-driver in $t" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ORION_20NG=$data/20newsgroups-bydate apps/lr/make_20ng.sh "$tmp/20ng" comp. rest >/dev/null

# one SIDE N ROUND: the median training-pass driver bytes into $tmp/SIDE-N.
one() {
  local side=$1 n=$2 dir=$base m
  [ "$side" = here ] && dir=$here
  m=$tmp/m-$side-$n-$3.jsonl
  (cd "$dir" && ORION_LUA_PATH="$dir/lua/?.lua" ./orion-driver --quiet \
     --executors "$n" --loop-metrics --metrics "$m" "$here/apps/lr/lr.lua" \
     --train "$tmp/20ng/train.libsvm" --test "$tmp/20ng/test.libsvm" \
     --epochs "$epochs" --lr 2 --tier c --eval-every 0 > /dev/null)
  line=$(grep -n 'local st = orion.parallel_for(Xtr, sgd' "$here/apps/lr/lr.lua" | cut -d: -f1)
  grep "\"loop\":\"[^\"]*lr.lua:$line\"" "$m" |
    sed -n 's/.*"call":\([0-9]*\).*"loop_driver_bytes":\([0-9.e+]*\).*/\1 \2/p' |
    awk '$1 >= 2 { print $2 }' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print v[int((NR + 1) / 2)] }' \
      >> "$tmp/$side-$n"
}

for n in $execs; do
  round() {
    if [ $(($1 % 2)) -eq 1 ]; then one base "$n" "$1"; one here "$n" "$1"
    else one here "$n" "$1"; one base "$n" "$1"; fi
  }
  interleave "$rounds" round
done
printf '== LR 20NG (comp. vs rest), training loop, driver bytes a pass (median of passes 2-%s, %s rounds)\n' "$epochs" "$rounds"
printf '%6s %12s %12s %10s %14s %14s\n' executors base here here/base base/executor here/executor
for n in $execs; do
  b=$(sort -n "$tmp/base-$n" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  h=$(sort -n "$tmp/here-$n" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  awk -v n="$n" -v b="$b" -v h="$h" 'BEGIN {
    printf "%6d %12.0f %12.0f %10.3f %14.0f %14.0f\n", n, b, h, h / b, b / n, h / n }'
done
