#!/usr/bin/env bash
# bench/verify.sh: what orion-driver --verify costs (docs/analysis.md,
# "orion-driver --verify"), measured against runs without it in the same
# script, interleaved (A, B, C, A, B, C, ... with the order rotating each
# round), so that the machine's load hits every side alike.
#
#   ./configure && make && bench/verify.sh
#   ROUNDS=5 EXECS=2 WORKLOADS="mf100k lda" bench/verify.sh
#
# Workloads (ORION_DATA, default ../shared/data):
#   mf100k  apps/mf/mf.lua on MovieLens-100k, K 16, 3 epochs, --exact
#   mf1m    apps/mf/mf.lua on MovieLens-1M (its train split), K 16, 1 epoch,
#           --exact
#   lda     apps/lda/lda.lua on KOS, K 20, 3 sweeps
# each on EXECS local executors (default 2).  Sides:
#   lua     without --verify, --tier lua: the interpreter, which --verify
#           runs (the cost of recording and checking alone); lda.lua has
#           no --tier option, so for lda this side is its default tier too
#   auto    without --verify, the app's default tier (compiled where the
#           body compiles: what a user runs without --verify)
#   verify  --verify
# Printed per workload: the median wall seconds of each side over ROUNDS
# rounds (default 3), verify/lua and verify/auto, and the peak resident
# memory of the driver (GNU time's %M, KiB), verify/lua.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
data=${ORION_DATA:-../shared/data}
rounds=${ROUNDS:-3}
execs=${EXECS:-2}
workloads=${WORKLOADS:-mf100k mf1m lda}
ml100k=$data/movielens-100k/u.data
ml1m=$data/movielens-1m/ratings.train.txt.gz
kos=$data/uci-bow-kos/docword.kos.txt.gz
bench_need verify "$ml100k" "$ml1m" "$kos"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# args WORKLOAD SIDE: the driver's arguments.
args() {
  local opt=() tier=()
  [ "$2" = verify ] && opt=(--verify)
  [ "$2" = lua ] && tier=(--tier lua)
  case $1 in
    mf100k) echo -q "${opt[@]}" --executors "$execs" apps/mf/mf.lua \
      --train "$ml100k" --format movielens --k 16 --epochs 3 --exact \
      "${tier[@]}" ;;
    mf1m) echo -q "${opt[@]}" --executors "$execs" apps/mf/mf.lua \
      --train "$ml1m" --k 16 --epochs 1 --exact "${tier[@]}" ;;
    lda) echo -q "${opt[@]}" --executors "$execs" apps/lda/lda.lua \
      --corpus "$kos" --k 20 --iters 3 --ll-every 3 ;;
  esac
}

sides="lua auto verify"
for w in $workloads; do
  for r in $(seq 1 "$rounds"); do
    # Rotate the order every round.
    set -- $sides
    case $((r % 3)) in
      1) order="$1 $2 $3" ;;
      2) order="$2 $3 $1" ;;
      0) order="$3 $1 $2" ;;
    esac
    for s in $order; do
      # shellcheck disable=SC2046
      /usr/bin/time -f "%e %M" -o "$tmp/t" ./orion-driver $(args "$w" "$s") \
        >"$tmp/out" 2>"$tmp/err" || {
        echo "bench/verify: $w ($s) failed:" >&2
        cat "$tmp/err" >&2
        exit 1
      }
      echo "$(cat "$tmp/t")" >>"$tmp/$w.$s"
    done
  done
done

med() { # med FILE COLUMN
  awk -v c="$2" '{ print $c }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
           else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "orion-driver --verify: median of $rounds interleaved rounds," \
  "$execs executors ($(nproc) cores)"
printf '%-8s %8s %8s %8s %10s %10s %9s %9s %8s\n' workload "lua s" \
  "auto s" "verify s" verify/lua verify/auto "lua KiB" "ver KiB" ratio
for w in $workloads; do
  awk -v w="$w" -v l="$(med "$tmp/$w.lua" 1)" -v a="$(med "$tmp/$w.auto" 1)" \
    -v v="$(med "$tmp/$w.verify" 1)" -v lm="$(med "$tmp/$w.lua" 2)" \
    -v vm="$(med "$tmp/$w.verify" 2)" 'BEGIN {
      printf "%-8s %8.2f %8.2f %8.2f %10.2f %10.2f %9d %9d %8.2f\n",
             w, l, a, v, v / l, v / a, lm, vm, vm / lm }'
done
