#!/usr/bin/env bash
# bench/ab.sh: the MF benchmark (bench/mf.sh) on two builds in one run,
# alternating, so a change is judged against its baseline on the same
# machine at the same time.
#
#   git worktree add ../base <rev> && (cd ../base && ./configure && make)
#   bench/ab.sh ../base                 # ROUNDS=3 EPOCHS=10 KS="32 128"
#
# BASE is a built checkout of the revision to compare with; this tree is the
# other side.  Each round runs bench/mf.sh in BASE, then here (the order
# swaps every round).  For every row (K, tier) it prints the median over the
# rounds of s/epoch and train ms for both builds and here/base: below 1.00
# this tree is faster.  The environment (EPOCHS, KS, MODES, EXECS, ...)
# goes to bench/mf.sh unchanged; MODES defaults to "fast exact".
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)

base=${1:?usage: bench/ab.sh BASE_CHECKOUT}
base=$(cd "$base" && pwd)
rounds=${ROUNDS:-3}
export EPOCHS=${EPOCHS:-10} KS=${KS:-32 128} MODES=${MODES:-fast exact}
# The rounds are this script's: one run of each mode per bench/mf.sh, and
# no LIBMF beside it.
export RUNS=1 LIBMF=
export ORION_DATA=${ORION_DATA:-$here/../shared/data}
for t in "$base" "$here"; do
  if [ ! -x "$t/orion-driver" ] || [ ! -f "$t/bench/mf.sh" ]; then
    echo "bench/ab.sh: $t has no built orion-driver or no bench/mf.sh" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="base here"; else order="here base"; fi
  for side in $order; do
    dir=$base
    [ "$side" = here ] && dir=$here
    echo "== round $r: $side ($dir)"
    (cd "$dir" && bench/mf.sh) | tee "$tmp/$side.$r"
  done
done

echo
echo "medians over $rounds rounds (here = $here, base = $base)"
printf '%4s %-7s %9s %9s %7s %10s %10s %7s\n' K tier "base s/ep" "here s/ep" \
  ratio "base tr ms" "here tr ms" ratio
cat "$tmp"/base.* | awk '$1 ~ /^[0-9]+$/ { print $1, $2 }' | sort -u -k1,1n -k2,2 |
while read -r k tier; do
  med() { # med SIDE COLUMN
    cat "$tmp/$1".* | awk -v k="$k" -v t="$tier" -v c="$2" \
      '$1 == k && $2 == t { print $c }' | sort -g |
      awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
             else if (NR % 2) print v[(NR + 1) / 2];
             else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
  }
  bs=$(med base 3); hs=$(med here 3); bt=$(med base 4); ht=$(med here 4)
  awk -v k="$k" -v t="$tier" -v bs="$bs" -v hs="$hs" -v bt="$bt" -v ht="$ht" \
    'BEGIN { printf "%4s %-7s %9.3f %9.3f %7.3f %10.2f %10.2f %7.3f\n",
             k, t, bs, hs, hs / bs, bt, ht, ht / bt }'
done
