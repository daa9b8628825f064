#!/usr/bin/env bash
# bench/mf.sh: MF on MovieLens-1M against LIBMF (issue 5's benchmark).
#
#   ./configure && make && bench/mf.sh
#   EPOCHS=20 KS="32 128" EXECS=2 MODES="fast exact" SOLVER=sgd bench/mf.sh
#
# For each K it runs apps/mf/mf.lua on 2 local executors (EXECS) over
# $ORION_DATA/movielens-1m/ratings.{train,test}.txt.gz for EPOCHS epochs
# (default 20), once per MODE of the compiled tier:
#   fast   the app's default: compiled bodies with fast math (f32 math,
#          contracted multiply-adds, vectorised dot products)
#   exact  compiled bodies that reproduce the interpreter bit for bit
# and once more with the Lua interpreter tier (--tier lua, INTERP_EPOCHS
# epochs, default 2) to measure the interpreted tier on the same loop.
#
# From the --metrics records of epochs 2..EPOCHS (epoch 1 includes starting
# the executors and the first copy of the ratings) it prints:
#   s/epoch     mean seconds of an epoch (training pass + test pass)
#   train ms    mean milliseconds of the training pass alone
#   Mupd/s      training ratings / train seconds (LIBMF counts the same way)
#   vs LIBMF    that rate / LIBMF's (AVX build, 2 threads, from
#               ../shared/anchors.md: 94.5 M/s at K=32, 53.9 M/s at K=128)
#   ovh ms      train ms minus the longest time an executor spent running
#               blocks: the scheduling and communication overhead per epoch
#   MB/epoch    bytes moved between the processes per epoch
#   test-rmse   after the last epoch, and its difference from LIBMF's
#               (0.863 at K=32, 0.861 at K=128)
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf.sh
epochs=${EPOCHS:-20}
ks=${KS:-32 128}
execs=${EXECS:-2}
modes=${MODES:-fast exact}
solver=${SOLVER:-sgd}
iepochs=${INTERP_EPOCHS:-2}

bench_epochs mf.sh EPOCHS "$epochs"
bench_epochs mf.sh INTERP_EPOCHS "$iepochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

libmf_rate() { case $1 in 32) echo 94.5 ;; 128) echo 53.9 ;; *) echo "" ;; esac; }
libmf_rmse() { case $1 in 32) echo 0.863 ;; 128) echo 0.861 ;; *) echo "" ;; esac; }

printf 'MF on MovieLens-1M (900,461 train / 99,748 test ratings), solver %s, %s executors, %s cores\n' \
  "$solver" "$execs" "$(nproc)"
printf 'compiled: %s epochs, figures are the mean of epochs 2..%s; interpreted: %s epochs (2..%s)\n' \
  "$epochs" "$epochs" "$iepochs" "$iepochs"
printf '%4s %-7s %8s %9s %8s %9s %7s %9s %9s %8s\n' K tier "s/epoch" "train ms" \
  "Mupd/s" "vs LIBMF" "ovh ms" "MB/epoch" "test-rmse" "-LIBMF"
for k in $ks; do
  for mode in $modes lua; do
    m=$tmp/m_${k}_$mode.jsonl
    case $mode in
      fast) args=(--epochs "$epochs") ;;
      exact) args=(--epochs "$epochs" --exact) ;;
      lua) args=(--epochs "$iepochs" --tier lua) ;;
      *) echo "bench/mf.sh: unknown mode '$mode' (use fast, exact)" >&2; exit 2 ;;
    esac
    ./orion-driver --quiet --executors "$execs" --metrics "$m" apps/mf/mf.lua \
      --train "$train" --test "$test" --k "$k" --solver "$solver" "${args[@]}" \
      > "$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    s=$(mean_key "$m" seconds)
    ts=$(mean_key "$m" train_seconds)
    cs=$(mean_key "$m" compute_seconds)
    ups=$(mean_key "$m" updates_per_s)
    mb=$(mean_key "$m" bytes_moved)
    rmse=$(last_key "$m" test_rmse)
    lr=$(libmf_rate "$k")
    lrm=$(libmf_rmse "$k")
    awk -v k="$k" -v t="$mode" -v s="$s" -v ts="$ts" -v cs="$cs" -v u="$ups" \
        -v mb="$mb" -v r="$rmse" -v lr="$lr" -v lrm="$lrm" 'BEGIN {
      ratio = lr != "" ? sprintf("%.3f", u / 1e6 / lr) : "-"
      d = lrm != "" ? sprintf("%+.4f", r - lrm) : "-"
      printf "%4s %-7s %8.3f %9.2f %8.2f %9s %7.2f %9.2f %9.4f %8s\n",
        k, t, s, ts * 1e3, u / 1e6, ratio, (ts - cs) * 1e3, mb / 1e6, r, d }'
  done
done
