#!/usr/bin/env bash
# bench/mf_scaling.sh: MF on MovieLens-1M with 1 and 2 local executors.
#
#   ./configure && make && bench/mf_scaling.sh
#   EPOCHS=10 KS="32 128" EXECS="1 2" RUNS=3 bench/mf_scaling.sh
#   BASE=/tmp/base bench/mf_scaling.sh     # against another tree's build
#
# For each K and executor count it runs apps/mf/mf.lua (EPOCHS, default
# 10) on $ORION_DATA/movielens-1m/ratings.{train,test}.txt.gz RUNS times
# (default 3), interleaved: run 1 of every configuration, then run 2, ...;
# with BASE (a built checkout of another revision) each run of this tree
# follows the same run of BASE's orion-driver and apps/mf/mf.lua.  From the
# --metrics records of epochs 2..EPOCHS (epoch 1 includes starting the
# executors and the first copy of the data to them) it prints, per
# configuration, medians over the runs:
#   s/epoch      seconds of an epoch (training pass + test pass)
#   train s      the training pass alone (min-max over the runs after it)
#   Mupd/s       ratings / train seconds, in millions per second
#   MB/epoch     bytes moved between driver and executors per epoch
#   test-rmse    after the last epoch
#   load         the 1-minute load average when the run ended (median)
# and, per K and build, the speedup of the largest executor count over the
# first (ratio of median train seconds), and with BASE each configuration's
# train seconds as a ratio this/base (below 1: this tree is faster).
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_scaling.sh
epochs=${EPOCHS:-10}
ks=${KS:-32 128}
execs=${EXECS:-1 2}
runs=${RUNS:-3}
base=${BASE:-}

bench_epochs mf_scaling.sh EPOCHS "$epochs"
case $runs in '' | *[!0-9]* | 0) echo "bench/mf_scaling.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
builds=this
if [ -n "$base" ]; then
  if [ ! -x "$base/orion-driver" ] || [ ! -f "$base/apps/mf/mf.lua" ]; then
    echo "bench/mf_scaling.sh: BASE=$base has no built orion-driver and apps/mf/mf.lua" >&2
    exit 2
  fi
  builds="base this"
fi
here=$(pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median: of the numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

for r in $(seq 1 "$runs"); do
  for k in $ks; do
    for n in $execs; do
      for b in $builds; do
        dir=$here
        [ "$b" = base ] && dir=$base
        m=$tmp/m_${b}_${k}_${n}_$r.jsonl
        "$dir/orion-driver" --quiet --executors "$n" --metrics "$m" \
          "$dir/apps/mf/mf.lua" --train "$train" --test "$test" --k "$k" \
          --epochs "$epochs" > /dev/null
        loadavg > "$tmp/l_${b}_${k}_${n}_$r"
      done
    done
  done
done

# col B K N KEY: the per-run values of KEY (mean over epochs 2..), one a line.
col() {
  local r
  for r in $(seq 1 "$runs"); do
    mean_key "$tmp/m_$1_$2_$3_$r.jsonl" "$4"; echo
  done
}

printf 'MF on MovieLens-1M, %s epochs (mean of epochs 2..%s), median of %s interleaved runs, %s cores\n' \
  "$epochs" "$epochs" "$runs" "$(nproc)"
printf '%5s %5s %5s %9s %9s %13s %9s %9s %10s %6s\n' build K execs "s/epoch" \
  "train s" "(min-max)" "Mupd/s" "MB/epoch" "test-rmse" load
for k in $ks; do
  for b in $builds; do
    first=""
    for n in $execs; do
      s=$(col "$b" "$k" "$n" seconds | median)
      ts=$(col "$b" "$k" "$n" train_seconds | median)
      lo=$(col "$b" "$k" "$n" train_seconds | sort -g | head -1)
      hi=$(col "$b" "$k" "$n" train_seconds | sort -g | tail -1)
      ups=$(col "$b" "$k" "$n" updates_per_s | median)
      mb=$(col "$b" "$k" "$n" bytes_moved | median)
      rmse=$(last_key "$tmp/m_${b}_${k}_${n}_$runs.jsonl" test_rmse)
      la=$(cat "$tmp"/l_"${b}_${k}_${n}"_* | median)
      printf '%5s %5s %5s %9.3f %9.3f %6.3f-%-6.3f %9.3f %9.2f %10.4f %6.2f\n' \
        "$b" "$k" "$n" "$s" "$ts" "$lo" "$hi" \
        "$(awk -v u="$ups" 'BEGIN { print u / 1e6 }')" \
        "$(awk -v x="$mb" 'BEGIN { print x / 1e6 }')" "$rmse" "$la"
      echo "$ts" > "$tmp/ts_${b}_${k}_$n"
      [ -z "$first" ] && first=$n
      last=$n
    done
    awk -v b="$(cat "$tmp/ts_${b}_${k}_$first")" -v l="$(cat "$tmp/ts_${b}_${k}_$last")" \
      -v f="$first" -v n="$last" -v k="$k" -v w="$b" \
      'BEGIN { printf "K=%s %s: %s executors vs %s: speedup %.2fx (median train seconds)\n", k, w, n, f, b / l }'
  done
  if [ -n "$base" ]; then
    for n in $execs; do
      awk -v b="$(cat "$tmp/ts_base_${k}_$n")" -v t="$(cat "$tmp/ts_this_${k}_$n")" \
        -v n="$n" -v k="$k" \
        'BEGIN { printf "K=%s, %s executors: train seconds this/base %.3f\n", k, n, t / b }'
    done
  fi
done
