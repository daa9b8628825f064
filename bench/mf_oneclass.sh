#!/usr/bin/env bash
# bench/mf_oneclass.sh: implicit feedback on MovieLens-1M (issue 37's MF
# "must show"): the ratings >= 4 of ratings.train.txt.gz are the positives
# to train on, those of ratings.test.txt.gz the held-out positives.
#
#   bench/mf_oneclass.sh
#   LIBMF=/work/peers/libmf EPOCHS=20 K=32 bench/mf_oneclass.sh
#
# Runs apps/mf/mf.lua --loss oneclass (LOSS) on 2 executors (EXECS) and
# prints its test AUC, MPR and recall@10 after EPOCHS epochs, the AUC and MPR
# as LIBMF's mf-predict -e 12 / -e 10 compute them (per user, every item
# that is not a test positive of the user a negative).  The model is also
# saved with --save-libmf: where LIBMF is given (a folder holding a built
# mf-train and mf-predict; nothing of LIBMF is in this repository), LIBMF's
# mf-predict evaluates that model too (it must print the same AUC), and
# LIBMF's own one-class solvers are trained on the same positives
# (mf-train -f 10 and -f 12, K, EPOCHS iterations, 2 threads, otherwise
# LIBMF's defaults), and the ratio of Orion-C's AUC and MPR to each is
# printed, with "within 5%" when |1 - ratio| <= 0.05.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_oneclass.sh
epochs=${EPOCHS:-20}
k=${K:-32}
execs=${EXECS:-2}
loss=${LOSS:-oneclass}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

./orion-driver --quiet --executors "$execs" apps/mf/mf.lua --train "$train" --test "$test" \
  --positive 4 --loss "$loss" --k "$k" --epochs "$epochs" --lr 0.05 --decay 0.95 --neg-ratio 3 \
  --save-libmf "$tmp/orion.model" > "$tmp/orion.out"
read -r auc mpr recall < <(awk -v e="$epochs" '$1 == e { print $4, $5, $6 }' "$tmp/orion.out")
printf '%-34s %8s %8s %10s\n' "model" "AUC" "MPR" "recall@10"
printf '%-34s %8.4f %8.4f %10.4f\n' "Orion-C mf.lua --loss $loss" "$auc" "$mpr" "$recall"

if [ -z "${LIBMF:-}" ]; then
  echo "(set LIBMF to a folder with LIBMF's mf-train and mf-predict to compare)"
  exit 0
fi
for t in mf-train mf-predict; do
  [ -x "$LIBMF/$t" ] || { echo "bench/mf_oneclass.sh: $LIBMF/$t: not an executable" >&2; exit 1; }
done
zcat -f "$train" | awk '$3 >= 4 { print $1, $2, 1 }' > "$tmp/tr.txt"
zcat -f "$test" | awk '$3 >= 4 { print $1, $2, 1 }' > "$tmp/te.txt"
# LIBMF's evaluation of a model: "AUC MPR".
libmf_eval() {
  local a m
  a=$("$LIBMF/mf-predict" -e 12 "$tmp/te.txt" "$1" "$tmp/pred" | awk '/AUC/ { print $NF }')
  m=$("$LIBMF/mf-predict" -e 10 "$tmp/te.txt" "$1" "$tmp/pred" | awk '/MPR/ { print $NF }')
  echo "$a $m"
}
read -r la lm < <(libmf_eval "$tmp/orion.model")
printf '%-34s %8.4f %8.4f %10s\n' "  the same model, LIBMF's eval" "$la" "$lm" "-"
for f in 10 12; do
  "$LIBMF/mf-train" -f $f -k "$k" -t "$epochs" -s 2 "$tmp/tr.txt" "$tmp/libmf$f.model" > /dev/null
  read -r la lm < <(libmf_eval "$tmp/libmf$f.model")
  printf '%-34s %8.4f %8.4f %10s\n' "LIBMF mf-train -f $f" "$la" "$lm" "-"
  awk -v a="$auc" -v m="$mpr" -v la="$la" -v lm="$lm" -v f=$f 'BEGIN {
    ra = a / la; rm = m / lm
    printf "  Orion-C / LIBMF -f %d: AUC %.4f, MPR %.4f (%s)\n", f, ra, rm,
      (ra >= 0.95 && ra <= 1.05) ? "AUC within 5%" : "AUC NOT within 5%" }'
done
