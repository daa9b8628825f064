#!/usr/bin/env bash
# bench/sandbox_lua.sh: the cost of a change to the Lua tier (issue 33:
# the sandbox's globals and libraries became read-only views, so a body's
# `math.sqrt` goes through one more __index) on MF with --tier lua over
# MovieLens-100k, against a built baseline checkout, interleaved.
#
#   bench/sandbox_lua.sh BASE          # ROUNDS=4 EPOCHS=3 K=32 EXECS=2
#
# Each round runs apps/mf/mf.lua --tier lua in BASE and here (the order
# swaps every round) on $ORION_DATA/movielens-100k/u.data (10% held out)
# and takes the mean train seconds of epochs 2..EPOCHS from --metrics.  It
# prints each run, then the median over the rounds for both builds and
# here/base, and the median of each round's here/base: above 1.00 this
# tree is slower.  Without the data it is
# skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

base=${1:?usage: bench/sandbox_lua.sh BASE_CHECKOUT}
base=$(cd "$base" && pwd)
here=$(pwd)
rounds=${ROUNDS:-4}
epochs=${EPOCHS:-3}
k=${K:-32}
execs=${EXECS:-2}
data=${ORION_DATA:-$here/../shared/data}
data=$(cd "$data" && pwd)
bench_need sandbox_lua.sh "$data/movielens-100k/u.data"
bench_epochs sandbox_lua.sh EPOCHS "$epochs"
if [ ! -x "$base/orion-driver" ]; then
  echo "bench/sandbox_lua.sh: $base has no built orion-driver" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # run SIDE DIR ROUND
  local m=$tmp/$1.$3.jsonl
  (cd "$2" && ./orion-driver --quiet --executors "$execs" --metrics "$m" \
    apps/mf/mf.lua --train "$data/movielens-100k/u.data" --format movielens \
    --test-split 0.1 --k "$k" --epochs "$epochs" --tier lua) > "$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; exit 1; }
  { mean_key "$m" train_seconds; echo; } > "$tmp/$1.val.$3"
  printf 'round %d %-4s train s/epoch %s  test-rmse %s\n' "$3" "$1" \
    "$(cat "$tmp/$1.val.$3")" "$(last_key "$m" test_rmse)"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    run base "$base" "$r"; run here "$here" "$r"
  else
    run here "$here" "$r"; run base "$base" "$r"
  fi
done
med() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
  print m }'; }
b=$(cat "$tmp"/base.val.* | med)
h=$(cat "$tmp"/here.val.* | med)
# The ratio of each round's pair (run back to back), then their median:
# less exposed to the load of the machine changing between rounds.
pr=$(for r in $(seq 1 "$rounds"); do
  awk -v b="$(cat "$tmp/base.val.$r")" -v h="$(cat "$tmp/here.val.$r")" \
    'BEGIN { print h / b }'
done | med)
awk -v b="$b" -v h="$h" -v n="$rounds" -v pr="$pr" 'BEGIN {
  printf "median train s/epoch over %d rounds: base %.3f here %.3f here/base %.3f\n",
    n, b, h, h / b
  printf "median of the rounds'"'"' here/base: %.3f\n", pr }'
