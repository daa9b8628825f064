#!/bin/sh
# mf.lua's losses and options beyond the squared loss (issue 37, MF), in
# the fast set (about 20 s): on small planted fixtures,
#  1. --loss logistic: the test logloss falls and the AUC ends above 0.9 on
#     a planted two-group binary matrix; --loss absolute: the MAE falls;
#     one-class (--loss oneclass, oneclass-log): AUC > 0.6, MPR < 0.35 and
#     recall@5 > 0.5 (LIBMF's AUC and MPR count training positives as
#     negatives, which caps them on this fixture);
#  2. the same bits (every column but the seconds) on 1 and 2 executors,
#     and in the interpreter and the compiled tier (--exact), for each new
#     loss and for --bias, --nmf with --l1-w/--l1-h, and --cv;
#  3. --nmf leaves no negative factor; --bias learns the planted biases
#     (test RMSE below 0.05 with K=1, where the factors alone stay above);
#  4. --cv 3 prints 3 folds and their mean;
#  5. --save-libmf: LIBMF's text format, read back by predict.lua
#     --libmf-model, gives the scores --model gives;
#  6. predict.lua --top: no rated item, best first, N per user;
#  7. bad options: clear errors, exit 2.
# Every run has a timeout.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
drv=${ORION_DRIVER:-$src/orion-driver}
app=$src/apps/mf/mf.lua
pred=$src/apps/mf/predict.lua
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The output without the seconds column of the epoch lines.
run() { timeout 120 "$drv" --quiet "$@" 2>"$dir/err" | awk '$1 ~ /^[0-9]+$/ { $2 = "" } { print }'; }

# Planted binary matrix: users and items in two groups, +1 within a group.
awk 'BEGIN { for (u = 1; u <= 40; u++) for (i = 1; i <= 30; i++)
  if ((u * 7 + i * 13) % 10 < 7) print u, i, ((u % 2) == (i % 2)) ? 1 : -1 }' > "$dir/bin.txt"
# Known biases: r = 3 + bu + bi, bu = (u % 5) / 2 - 1, bi = (i % 3) - 1.
awk 'BEGIN { for (u = 1; u <= 40; u++) for (i = 1; i <= 30; i++)
  if ((u * 7 + i * 13) % 10 < 8) print u, i, 3 + (u % 5) / 2 - 1 + (i % 3) - 1 }' > "$dir/bias.txt"

# 1. values
run --executors 2 "$app" --train "$dir/bin.txt" --test-split 0.2 --loss logistic --k 4 \
  --epochs 8 --lr 0.1 --decay 1 --init-scale 0.3 > "$dir/log.out"
awk '$1 == 1 { first = $3 } $1 == 8 { last = $3; auc = $5 }
  END { exit !(last < first && auc > 0.9) }' "$dir/log.out" ||
  bad "logistic: logloss did not fall or AUC <= 0.9: $(cat "$dir/log.out" "$dir/err")"
grep -q "train-logloss  test-logloss  test-accuracy   test-auc" "$dir/log.out" || bad "logistic header: $(cat "$dir/log.out")"
run --executors 2 "$app" --train "$dir/bias.txt" --test-split 0.2 --loss absolute --k 2 --epochs 6 \
  --lr 0.05 > "$dir/abs.out"
awk '$1 == 1 { first = $3 } $1 == 6 { last = $3 } END { exit !(last < first) }' "$dir/abs.out" ||
  bad "absolute: test MAE did not fall: $(cat "$dir/abs.out" "$dir/err")"
for l in oneclass oneclass-log; do
  run --executors 2 "$app" --train "$dir/bin.txt" --test-split 0.2 --loss $l --positive 1 --k 4 \
    --epochs 10 --lr 0.05 --decay 1 --init-scale 0.3 --recall-k 5 > "$dir/oc.out"
  grep -q "train-loss   test-auc   test-mpr  test-recall@5" "$dir/oc.out" || bad "$l header: $(cat "$dir/oc.out" "$dir/err")"
  awk '$1 == 10 { ok = ($3 > 0.6 && $4 < 0.35 && $5 > 0.5 && $5 <= 1) } END { exit !ok }' "$dir/oc.out" ||
    bad "$l: AUC <= 0.6, MPR >= 0.35 or recall@5 <= 0.5: $(cat "$dir/oc.out")"
done

# 2. the same bits on 1 and 2 executors, and in both tiers
for cfg in "--loss logistic" "--loss absolute --bias" "--loss oneclass --positive 1" \
    "--loss oneclass-log --positive 1" "--nmf --l1-w 0.01 --l1-h 0.02" "--bias --cv 3" \
    "--loss oneclass --positive 1 --permute 3"; do
  # shellcheck disable=SC2086
  a=$(run --executors 1 "$app" --train "$dir/bin.txt" $cfg --k 3 --epochs 3)
  # shellcheck disable=SC2086
  b=$(run --executors 2 "$app" --train "$dir/bin.txt" $cfg --k 3 --epochs 3)
  # shellcheck disable=SC2086
  c=$(run --executors 2 "$app" --train "$dir/bin.txt" $cfg --k 3 --epochs 3 --exact --tier lua)
  # shellcheck disable=SC2086
  d=$(run --executors 2 "$app" --train "$dir/bin.txt" $cfg --k 3 --epochs 3 --exact --tier c)
  [ -n "$a" ] && [ "$a" = "$b" ] || bad "$cfg: 1 and 2 executors differ:
$a
---
$b"
  [ -n "$c" ] && [ "$c" = "$d" ] || bad "$cfg: the interpreter and the compiled tier differ:
$c
---
$d"
done

# 3. --nmf: no negative factor; --bias: the planted biases
run "$app" --train "$dir/bias.txt" --k 3 --epochs 3 --nmf --save-libmf "$dir/nmf.libmf" > /dev/null
[ -s "$dir/nmf.libmf" ] || bad "--nmf --save-libmf wrote nothing: $(cat "$dir/err")"
awk 'NR > 5 { for (f = 3; f <= NF; f++) if ($f + 0 < 0) neg++ } END { exit neg > 0 }' "$dir/nmf.libmf" ||
  bad "--nmf left negative factors"
for b in "" --bias; do
  # shellcheck disable=SC2086
  run "$app" --train "$dir/bias.txt" --test-split 0.2 --k 1 --epochs 30 --lr 0.05 --decay 1 --reg 0 $b \
    > "$dir/b$b.out"
done
awk '$1 == 30 { exit !($3 < 0.05) }' "$dir/b--bias.out" || bad "--bias: test RMSE not below 0.05: $(cat "$dir/b--bias.out")"
awk '$1 == 30 { exit !($3 > 0.1) }' "$dir/b.out" || bad "without --bias: test RMSE $(cat "$dir/b.out")"

# 4. --cv 3
run "$app" --train "$dir/bias.txt" --cv 3 --k 2 --epochs 2 > "$dir/cv.out"
[ "$(grep -c '^fold [123]/3  test-rmse [0-9.]*$' "$dir/cv.out")" = 3 ] || bad "--cv 3 folds: $(cat "$dir/cv.out" "$dir/err")"
grep -q '^cv mean over 3 folds  test-rmse [0-9.]*$' "$dir/cv.out" || bad "--cv 3 mean: $(cat "$dir/cv.out")"
awk '/^fold/ { s += $4 } /^cv mean/ { m = $7 } END { d = s / 3 - m; exit !(d < 0.0001 && d > -0.0001) }' "$dir/cv.out" ||
  bad "--cv: the mean is not the folds' mean: $(cat "$dir/cv.out")"

# 5. LIBMF's model format round trip (--bias: k + 3 columns)
run "$app" --train "$dir/bias.txt" --k 2 --epochs 2 --bias --save "$dir/m" --save-libmf "$dir/m.libmf" > /dev/null
head -5 "$dir/m.libmf" | tr '\n' ' ' | grep -q '^f 0 m 41 n 31 k 5 b [0-9.]* $' || bad "LIBMF header: $(head -5 "$dir/m.libmf")"
grep -q '^p0 F 0 0 0 0 0 $' "$dir/m.libmf" || bad "LIBMF: row 0 of a 1-based file is not F"
awk 'BEGIN { for (u = 1; u <= 40; u += 3) for (i = 1; i <= 30; i += 7) print u, i }' > "$dir/pairs"
awk '{ print $1 - 1, $2 - 1 }' "$dir/pairs" > "$dir/pairs0"
timeout 60 "$drv" --quiet "$pred" --model "$dir/m" --pairs "$dir/pairs" > "$dir/p1" 2>&1
grep '^[0-9]' "$dir/p1" > "$dir/p1.scores"
timeout 60 "$drv" --quiet "$pred" --libmf-model "$dir/m.libmf" --pairs "$dir/pairs" > "$dir/p2" 2>&1
[ -s "$dir/p1" ] && cmp -s "$dir/p1" "$dir/p2" || bad "--libmf-model scores differ from --model's: $(diff "$dir/p1" "$dir/p2" | head)"
# A 0-based model (--index-base 0) numbers its LIBMF rows from 0.
awk '{ print $1 - 1, $2 - 1, $3 }' "$dir/bias.txt" > "$dir/bias0.txt"
run "$app" --train "$dir/bias0.txt" --index-base 0 --k 2 --epochs 2 --bias --save-libmf "$dir/m0.libmf" > /dev/null
timeout 60 "$drv" --quiet "$pred" --libmf-model "$dir/m0.libmf" --pairs "$dir/pairs0" > "$dir/p3" 2>&1
awk '/^[0-9]/ { print $1 + 1, $2 + 1, $3 }' "$dir/p3" | cmp -s - "$dir/p1.scores" || bad "0-based LIBMF rows: $(head -3 "$dir/p3")"

# 6. top-k: sorted, no rated item, N per user
timeout 60 "$drv" --quiet "$pred" --model "$dir/m" --top 4 --rated "$dir/bias.txt" > "$dir/top" 2>"$dir/err" || bad "--top: $(cat "$dir/err")"
[ "$(wc -l < "$dir/top")" = $((40 * 4)) ] || bad "--top 4: $(wc -l < "$dir/top") lines, not 160"
awk 'NR == FNR { r[$1 " " $2] = 1; next } (($1 " " $2) in r) { bad++ }
  $1 == u && $3 > s { bad++ } { u = $1; s = $3 } END { exit bad > 0 }' "$dir/bias.txt" "$dir/top" ||
  bad "--top lists a rated item or is not sorted: $(head "$dir/top")"

# 7. bad options
expect_usage() {
  want=$1; shift
  timeout 60 "$drv" --quiet "$@" > /dev/null 2> "$dir/err"
  st=$?
  [ $st = 2 ] && grep -qF -- "$want" "$dir/err" || bad "$* : exit $st, wanted '$want': $(cat "$dir/err")"
}
expect_usage "--loss must be squared, absolute, logistic, oneclass or oneclass-log, not 'hinge'" "$app" --loss hinge
expect_usage "--cv must be at least 2" "$app" --train "$dir/bin.txt" --cv 1
expect_usage "--cv applies to the squared, absolute and logistic losses" "$app" --train "$dir/bin.txt" --cv 3 --loss oneclass
expect_usage "--bias applies to the squared, absolute and logistic losses" "$app" --loss oneclass --bias
expect_usage "--l1-w, --l1-h and --reg-b must not be negative" "$app" --l1-w -1
expect_usage "--neg-ratio must be positive" "$app" --loss oneclass --neg-ratio 0
expect_usage "--positive applies to the logistic and one-class losses" "$app" --positive 4
expect_usage "--cv trains one model per fold and keeps none" "$app" --train "$dir/bin.txt" --cv 3 --save "$dir/x"
expect_usage "--solver adagrad runs the squared loss without --bias, --nmf, --l1-w, --l1-h or --cv only" "$app" --solver adagrad --nmf
expect_usage "--top needs --rated FILE" "$pred" --model "$dir/m" --top 3
expect_usage "--top and --pairs exclude each other" "$pred" --model "$dir/m" --top 3 --pairs "$dir/pairs"
printf 'f 0\nm 2\nn 1\nk 2\nb 3\np0 T 1 2\np1 T 1\n' > "$dir/badmodel"
timeout 60 "$drv" --quiet "$pred" --libmf-model "$dir/badmodel" --pairs "$dir/pairs0" > /dev/null 2> "$dir/err"
grep -qF "badmodel:7: expected 'p1 T|F' and 2 numbers: \"p1 T 1\"" "$dir/err" || bad "bad LIBMF model: $(cat "$dir/err")"
exit $fail
