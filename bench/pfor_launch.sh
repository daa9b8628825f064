#!/usr/bin/env bash
# bench/pfor_launch.sh: the driver's cost of one parallel_for launch
# (bench/pfor_launch.lua: an MF-shaped SGD loop launched LAUNCHES times,
# as a training script launches its loop every epoch).
#
#   bench/pfor_launch.sh                          # this tree only
#   BASE=/tmp/base bench/pfor_launch.sh           # against another build
#   RUNS=5 LAUNCHES=200 K=32 EXECS="1 2" bench/pfor_launch.sh
#
# For each executor count it runs the script RUNS times (default 5),
# interleaved with BASE's build when given (base, this, base, this, ...),
# and prints the medians (and min-max) of the driver's CPU milliseconds per
# launch (os.clock: the driver process, all its threads; little moved by
# other processes' load) and of the wall milliseconds per launch, the
# 1-minute load average, and with BASE the ratio this/base of each median
# (below 1: this tree is cheaper).  Both builds must compute the same
# model: the script's W[1][1] after the last launch is compared.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-5}
launches=${LAUNCHES:-200}
k=${K:-32}
execs=${EXECS:-1 2}
base=${BASE:-}
case $runs in '' | *[!0-9]* | 0) echo "bench/pfor_launch.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
if [ ! -x ./orion-driver ]; then
  echo "bench/pfor_launch.sh: build first (./configure && make)" >&2
  exit 1
fi
builds=this
if [ -n "$base" ]; then
  if [ ! -x "$base/orion-driver" ]; then
    echo "bench/pfor_launch.sh: BASE=$base has no built orion-driver" >&2
    exit 2
  fi
  builds="base this"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }

for r in $(seq 1 "$runs"); do
  for n in $execs; do
    for b in $builds; do
      drv=./orion-driver
      [ "$b" = base ] && drv=$base/orion-driver
      "$drv" --quiet --executors "$n" bench/pfor_launch.lua "$launches" "$k" \
        >> "$tmp/out_${b}_$n"
      cut -d' ' -f1 /proc/loadavg >> "$tmp/load_${b}_$n"
    done
  done
done

printf 'parallel_for launches: %s per run, K=%s, median of %s interleaved runs, %s cores\n' \
  "$launches" "$k" "$runs" "$(nproc)"
printf '%5s %5s %8s %15s %8s %15s %6s %s\n' build execs "cpu ms" "(min-max)" \
  "wall ms" "(min-max)" load tier
for n in $execs; do
  for b in $builds; do
    f=$tmp/out_${b}_$n
    c=$(field cpu_ms < "$f" | median)
    w=$(field wall_ms < "$f" | median)
    printf '%5s %5s %8.3f %7.3f-%-7.3f %8.3f %7.3f-%-7.3f %6.2f %s\n' "$b" "$n" \
      "$c" "$(field cpu_ms < "$f" | sort -g | head -1)" \
      "$(field cpu_ms < "$f" | sort -g | tail -1)" "$w" \
      "$(field wall_ms < "$f" | sort -g | head -1)" \
      "$(field wall_ms < "$f" | sort -g | tail -1)" \
      "$(median < "$tmp/load_${b}_$n")" "$(field tier < "$f" | sort -u | tr '\n' ' ')"
    echo "$c $w" > "$tmp/med_${b}_$n"
  done
  if [ -n "$base" ]; then
    if [ "$(field W11 < "$tmp/out_base_$n" | sort -u)" != \
         "$(field W11 < "$tmp/out_this_$n" | sort -u)" ]; then
      echo "bench/pfor_launch.sh: FAIL: $n executors: the builds' models differ" >&2
      exit 1
    fi
    read -r bc bw < "$tmp/med_base_$n"
    read -r tc tw < "$tmp/med_this_$n"
    awk -v bc="$bc" -v bw="$bw" -v tc="$tc" -v tw="$tw" -v n="$n" \
      'BEGIN { printf "%s executors: this/base driver CPU per launch %.3f, wall per launch %.3f (same model)\n", n, tc / bc, tw / bw }'
  fi
done
