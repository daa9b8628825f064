#!/usr/bin/env bash
# bench/mf_scaling.sh: MF on MovieLens-1M with 1 and 2 local executors.
#
#   ./configure && make && bench/mf_scaling.sh
#   EPOCHS=10 KS="32 128" EXECS="1 2" bench/mf_scaling.sh
#
# For each K and executor count it runs apps/mf/mf.lua (20 epochs by
# default is the app's own default; here EPOCHS, default 10) on
# $ORION_DATA/movielens-1m/ratings.{train,test}.txt.gz and prints, from the
# --metrics records of epochs 2..EPOCHS (epoch 1 includes starting the
# executors and the first copy of the data to them):
#   s/epoch      mean seconds of an epoch (training pass + test pass)
#   train s      mean seconds of the training pass alone
#   Mupd/s       ratings / train seconds, in millions per second
#   MB/epoch     bytes moved between driver and executors per epoch
#   test-rmse    after the last epoch
# and, per K, the speedup of the largest executor count over 1 executor
# (ratio of train seconds, measured in this run).
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_scaling.sh
epochs=${EPOCHS:-10}
ks=${KS:-32 128}
execs=${EXECS:-1 2}

bench_epochs mf_scaling.sh EPOCHS "$epochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'MF on MovieLens-1M, %s epochs (figures: mean of epochs 2..%s), %s\n' \
  "$epochs" "$epochs" "$(nproc) cores"
printf '%5s %5s %9s %9s %9s %9s %10s\n' K execs "s/epoch" "train s" \
  "Mupd/s" "MB/epoch" "test-rmse"
for k in $ks; do
  base=""
  for n in $execs; do
    m=$tmp/m_${k}_$n.jsonl
    ./orion-driver --quiet --executors "$n" --metrics "$m" apps/mf/mf.lua \
      --train "$train" --test "$test" --k "$k" --epochs "$epochs" > /dev/null
    s=$(mean_key "$m" seconds)
    ts=$(mean_key "$m" train_seconds)
    ups=$(mean_key "$m" updates_per_s)
    mb=$(mean_key "$m" bytes_moved)
    rmse=$(last_key "$m" test_rmse)
    printf '%5s %5s %9.3f %9.3f %9.3f %9.2f %10.4f\n' "$k" "$n" "$s" "$ts" \
      "$(awk -v u="$ups" 'BEGIN { print u / 1e6 }')" \
      "$(awk -v b="$mb" 'BEGIN { print b / 1e6 }')" "$rmse"
    if [ -z "$base" ]; then base=$ts; fi
    last=$ts
    lastn=$n
  done
  awk -v b="$base" -v l="$last" -v n="$lastn" -v k="$k" \
    'BEGIN { printf "K=%s: %s executors vs 1: speedup %.2fx (train seconds)\n", k, n, b / l }'
done
