#!/usr/bin/env bash
# bench/lda_text.sh: the LDA app on 20 Newsgroups' raw text (issue 37).
#
#   ./configure && make && bench/lda_text.sh
#   K=20 ITERS=200 REPS=3 MALLET=/path/to/mallet/bin/mallet bench/lda_text.sh
#
# Extracts ../shared/data/20newsgroups-bydate/20news-bydate.tar.xz into a
# temporary folder (never into the tree), then
#
#  1. import speed: `lda.lua --import` of the 11,314 training files
#     (--skip-header, the default stoplist; the time it prints for the
#     import: reading, tokenising, the vocabulary, the docword file; not
#     the load onto the executors) against MALLET's `import-dir
#     --keep-sequence --remove-stopwords --skip-header` when MALLET is set,
#     interleaved A, B, A, B over REPS rounds; prints each time and the
#     ratio of the medians;
#  2. held-out perplexity on the 7,532 test files (--test, document
#     completion) after ITERS sweeps with K topics, with the fixed priors
#     (alpha = 50/K, beta = 0.01) and with --optimize-interval 10
#     (--optimize-burn-in 20), both from the same seed, and their ratio.
#
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh
data=${ORION_DATA:-../shared/data}
tarball=$data/20newsgroups-bydate/20news-bydate.tar.xz
bench_need lda_text.sh "$tarball"
K=${K:-20}
ITERS=${ITERS:-200}
REPS=${REPS:-3}
EXECS=${EXECS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp" || exit 1
train=$tmp/20news-bydate-train
test=$tmp/20news-bydate-test
lda() { ORION_EXECUTORS=$EXECS ./orion-driver --quiet apps/lda/lda.lua "$@"; }
now() { date +%s.%N; }

echo "== import: 20NG train (11314 files), $EXECS executors"
: >"$tmp/a"
: >"$tmp/b"
for r in $(seq "$REPS"); do
  lda --import "$train" --skip-header --k 20 --iters 0 --top 0 >"$tmp/imp.out" 2>&1 ||
    { cat "$tmp/imp.out"; exit 1; }
  sed -n 's/^# imported .* in \([0-9.]*\) s:.*/\1/p' "$tmp/imp.out" >>"$tmp/a"
  line="round $r: orion-c $(tail -1 "$tmp/a" | xargs printf '%.2f') s"
  if [ -n "${MALLET:-}" ]; then
    t0=$(now)
    "$MALLET" import-dir --input "$train"/* --output "$tmp/train.mallet" \
      --keep-sequence --remove-stopwords --skip-header >"$tmp/m.out" 2>&1 ||
      { cat "$tmp/m.out"; exit 1; }
    t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$tmp/b"
    line="$line, mallet $(tail -1 "$tmp/b" | xargs printf '%.2f') s"
  fi
  echo "$line"
done
grep '^# imported' "$tmp/imp.out"
a=$(bench_median <"$tmp/a")
if [ -s "$tmp/b" ]; then
  b=$(bench_median <"$tmp/b")
  printf 'median: orion-c %.2f s, mallet %.2f s: mallet / orion-c = %.1fx\n' "$a" "$b" "$(echo "$b / $a" | bc -l)"
else
  printf 'median: orion-c %.2f s (set MALLET for the side-by-side)\n' "$a"
fi

echo "== held-out perplexity: K=$K, $ITERS sweeps, test = 20NG test (7532 files)"
for oi in 0 10; do
  lda --import "$train" --skip-header --min-df 3 --max-df 0.2 --k "$K" --iters "$ITERS" \
    --ll-every "$ITERS" --top 0 --optimize-interval "$oi" --optimize-burn-in 20 \
    --test "$test" >"$tmp/p$oi.out" 2>&1 || { cat "$tmp/p$oi.out"; exit 1; }
  ll=$(awk '$1 == '"$ITERS"' { print $4 }' "$tmp/p$oi.out")
  ppl=$(sed -n 's/.*perplexity \([0-9.]*\)$/\1/p' "$tmp/p$oi.out")
  eval "ppl$oi=$ppl"
  if [ "$oi" = 0 ]; then what="fixed priors (alpha 50/K, beta 0.01)"; else what="--optimize-interval 10"; fi
  printf '%-38s train LL/token %s  held-out perplexity %s\n' "$what" "$ll" "$ppl"
done
grep '^# held-out' "$tmp/p10.out"
printf 'perplexity optimised / fixed = %.3f\n' "$(echo "$ppl10 / $ppl0" | bc -l)"
