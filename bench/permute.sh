#!/usr/bin/env bash
# bench/permute.sh: MF on MovieLens-1M with and without random id
# remapping (apps/mf/mf.lua --permute, A:permute_keys; issue 21).
#
#   ./configure && make && bench/permute.sh
#   EPOCHS=10 K=32 EXECS=2 SEED=1 PARTS=8 bench/permute.sh
#
# First the block balance (bench/permute_balance.lua): per block of the
# PARTS x PARTS cut of the 2-D schedule (equal key widths, mf.lua's
# default), max/mean and min/mean elements, and the rotation's critical
# path (the sum over the clocks of each clock's largest block, over
# nnz/PARTS; 1.0 is perfect).  Then mf.lua on EXECS executors for EPOCHS
# epochs (default 10), as given and with --permute SEED, in one run:
# s/epoch and train ms are the means of epochs 2..EPOCHS (--metrics), and
# test-rmse is the last epoch's; the last line gives the ratios
# permuted/as given.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m permute.sh
epochs=${EPOCHS:-10}
k=${K:-32}
execs=${EXECS:-2}
seed=${SEED:-1}
parts=${PARTS:-8}
bench_epochs permute.sh EPOCHS "$epochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'MF on MovieLens-1M, K=%s, %s executors, %s cores, %s epochs (means of 2..%s)\n' \
  "$k" "$execs" "$(nproc)" "$epochs" "$epochs"
./orion-driver --quiet --executors 0 bench/permute_balance.lua "$train" "$test" \
  "$seed" "$parts"
printf '%-9s %8s %9s %9s\n' ids "s/epoch" "train ms" test-rmse
for v in given permuted; do
  m=$tmp/$v.jsonl
  extra=()
  [ "$v" = permuted ] && extra=(--permute "$seed")
  ./orion-driver --quiet --executors "$execs" --partitions "$parts" --metrics "$m" \
    apps/mf/mf.lua --train "$train" --test "$test" --k "$k" --epochs "$epochs" \
    "${extra[@]}" > "$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
  s=$(mean_key "$m" seconds)
  ts=$(mean_key "$m" train_seconds)
  r=$(last_key "$m" test_rmse)
  printf '%s %s %s\n' "$s" "$ts" "$r" > "$tmp/$v.sum"
  awk -v v="$v" -v s="$s" -v ts="$ts" -v r="$r" 'BEGIN {
    printf "%-9s %8.3f %9.2f %9.4f\n", v, s, ts * 1e3, r }'
done
read -r s0 t0 r0 < "$tmp/given.sum"
read -r s1 t1 r1 < "$tmp/permuted.sum"
awk -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v r0="$r0" -v r1="$r1" 'BEGIN {
  printf "permuted/as given: epoch %.3fx, training pass %.3fx, test RMSE %+.4f\n",
    s1 / s0, t1 / t0, r1 - r0 }'
