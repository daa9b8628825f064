#!/usr/bin/env bash
# bench/mf_body.sh: apps/mf/mf.lua's compiled SGD body alone, CPU time per
# rating, in the two orders of a block's ratings (issue 36).
#
#   ./configure && make && bench/mf_body.sh
#   BASE=/tmp/base KS="32 128" RUNS=7 bench/mf_body.sh
#
# For each K (KS, default "32 128") it has orion-driver compile mf.lua's
# training body (fast mode, one epoch on one executor, into a scratch
# compile cache) with this tree and, with BASE (a built checkout of
# another revision), with BASE's driver and mf.lua too.  bench/mf_body.c
# (built here with cc) then runs each object over MovieLens-1M's training
# ratings cut into 8 x 8 blocks, in two orders: "key" (a block user by
# user) and "rounds" (a block's users dealt out in rounds, as
# parallel_for's interleave = true lays them out), 5 epochs a run, RUNS
# runs (default 7) of every object and order interleaved.  It prints the
# CPU nanoseconds per rating (best and median run), and the ratio of each
# row's median to the first row's.  No executor, scheduling or messages:
# the body's own cost, which a loaded machine disturbs less than wall time.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_body.sh
ks=${KS:-32 128}
runs=${RUNS:-7}
base=${BASE:-}
case $runs in '' | *[!0-9]* | 0) echo "bench/mf_body.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
builds=this
if [ -n "$base" ]; then
  if [ ! -x "$base/orion-driver" ] || [ ! -f "$base/apps/mf/mf.lua" ]; then
    echo "bench/mf_body.sh: BASE=$base has no built orion-driver and apps/mf/mf.lua" >&2
    exit 2
  fi
  builds="base this"
fi
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

${CC:-cc} -O2 -I"$here" -o "$tmp/mf_body" bench/mf_body.c -ldl
zcat "$train" > "$tmp/train.txt"

printf 'MF SGD body on MovieLens-1M (%s ratings), 8 x 8 blocks, %s interleaved runs of 5 epochs, load %s\n' \
  "$(wc -l < "$tmp/train.txt")" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
for k in $ks; do
  objs=()
  for b in $builds; do
    dir=$here
    [ "$b" = base ] && dir=$base
    cache=$tmp/cache_${b}_$k
    ORION_CACHE_DIR=$cache "$dir/orion-driver" --quiet --executors 1 "$dir/apps/mf/mf.lua" \
      --train "$train" --k "$k" --epochs 1 > "$tmp/out" 2>&1 ||
      { echo "bench/mf_body.sh: mf.lua failed ($b, K=$k):" >&2; cat "$tmp/out" >&2; exit 1; }
    # The training body: two arrays (W, H) and four numbers (K, lr, reg_w, reg_h).
    obj=$(grep -l '^#define O_NK 4$' "$cache"/*.c | xargs grep -l '^#define O_NA 2$' | head -1)
    [ -n "$obj" ] || { echo "bench/mf_body.sh: no compiled training body in $cache" >&2; exit 1; }
    cp "${obj%.c}.so" "$tmp/${b}_$k.so"
    objs+=("$tmp/${b}_$k.so")
  done
  echo "K=$k"
  "$tmp/mf_body" "$k" "$runs" "$tmp/train.txt" "${objs[@]}" > "$tmp/res"
  awk -v tmp="$tmp/" 'NR == 1 { printf "  %-12s %-7s %14s %16s\n", "object", "order", "best ns/rating", "median ns/rating"; next }
    { name = $1; sub(tmp, "", name); sub(/\.so$/, "", name)
      if (first == "") first = $4
      printf "  %-12s %-7s %14s %16s  x%.2f of the first\n", name, $2, $3, $4, $4 / first }' "$tmp/res"
done
