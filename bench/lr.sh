#!/usr/bin/env bash
# bench/lr.sh: sparse logistic regression (apps/lr/lr.lua) on a libsvm file
# made from 20 Newsgroups, per executor count and tier.
#
#   ./configure && make && bench/lr.sh
#   EPOCHS=10 EXECS="1 2 4" TIERS="c lua" POS=comp. NEG=rest bench/lr.sh
#   OPTIMIZERS="sgd adarev" bench/lr.sh    # AdaRevision too (default: sgd)
#
# apps/lr/make_20ng.sh writes the train/test split into a temporary
# folder (POS against NEG; default comp.* against every other group,
# 11k training documents), then for each tier and executor count lr.lua
# runs EPOCHS epochs (default 10) and its --metrics records of epochs
# 2..EPOCHS (epoch 1 includes starting the executors and the first copy of
# the data) give:
#   s/epoch      mean seconds of an epoch (training pass + test pass)
#   train s      mean seconds of the training pass alone
#   samples/s    training samples / train seconds
#   accuracy     test accuracy after the last epoch (and the AUC)
# the serial reference's (apps/lr/lr_serial.lua) accuracy and time per
# epoch on the same split, and, per tier, each executor count's speedup
# over the first (ratios of train seconds measured in this run).  Each
# epoch's time is printed too.  Without the corpus it is skipped (exit 0),
# unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
data=${ORION_DATA:-../shared/data}
bench_need lr.sh "$data/20newsgroups-bydate/docword.20news.txt.gz"
epochs=${EPOCHS:-10}
execs=${EXECS:-1 2 4}
tiers=${TIERS:-c lua}
optimizers=${OPTIMIZERS:-sgd}
bench_epochs lr.sh EPOCHS "$epochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ORION_20NG=$data/20newsgroups-bydate apps/lr/make_20ng.sh "$tmp" \
  "${POS:-comp.}" "${NEG:-rest}"
ntrain=$(wc -l < "$tmp/train.libsvm")
ntest=$(wc -l < "$tmp/test.libsvm")

printf 'LR on 20 Newsgroups (%s against %s: %s train, %s test), %s epochs (figures: mean of epochs 2..%s), %s cores\n' \
  "${POS:-comp.}" "${NEG:-rest}" "$ntrain" "$ntest" "$epochs" "$epochs" "$(nproc)"
t0=$(date +%s.%N)
ref=$(./orion-driver --quiet apps/lr/lr_serial.lua --train "$tmp/train.libsvm" \
  --test "$tmp/test.libsvm" --epochs "$epochs" | tail -1)
t1=$(date +%s.%N)
printf 'serial reference (plain Lua, one sample at a time): %s, %.3f s/epoch including its reading of the files\n' \
  "$ref" "$(awk -v a="$t0" -v b="$t1" -v e="$epochs" 'BEGIN { print (b - a) / e }')"
for opt in $optimizers; do
printf 'optimizer %s\n' "$opt"
printf '%5s %5s %9s %9s %10s %9s %7s\n' tier execs "s/epoch" "train s" \
  "samples/s" accuracy auc
for tier in $tiers; do
  base=""
  for n in $execs; do
    m=$tmp/m_${opt}_${tier}_$n.jsonl
    ./orion-driver --quiet --executors "$n" --metrics "$m" apps/lr/lr.lua \
      --train "$tmp/train.libsvm" --test "$tmp/test.libsvm" \
      --epochs "$epochs" --tier "$tier" --optimizer "$opt" > /dev/null
    s=$(mean_key "$m" seconds)
    ts=$(mean_key "$m" train_seconds)
    sps=$(mean_key "$m" samples_per_s)
    printf '%5s %5s %9.4f %9.4f %10.0f %9.4f %7.4f\n' "$tier" "$n" "$s" "$ts" \
      "$sps" "$(last_key "$m" test_accuracy)" "$(last_key "$m" test_auc)"
    printf '      per epoch (s):'
    awk '{ v = $0; sub(/.*"seconds":/, "", v); sub(/[,}].*/, "", v)
           printf " %.4f", v } END { print "" }' "$m"
    if [ -z "$base" ]; then base=$ts; basen=$n; fi
    awk -v b="$base" -v l="$ts" -v n="$n" -v bn="$basen" -v t="$tier" \
      'BEGIN { if (n != bn) printf "      tier %s: %s executors vs %s: speedup %.2fx (train seconds)\n", t, n, bn, b / l }'
  done
done
done
