#!/bin/sh
# The LDA app on raw text, as a MALLET user runs it (issue 37), in the
# fast set (a few seconds):
#
#  1. --import: MALLET's token pattern, lower-casing, the default English
#     stoplist, --skip-header, --min-df / --max-df, the vocabulary and
#     docword files (--save-vocab, --save-corpus) to the byte.
#  2. On a fixture of three planted themes (t/data/lda): --topic-keys
#     (topic, alpha, words: each topic's words from one theme),
#     --doc-topics (proportions summing to 1), --word-topic-counts (the
#     counts add up to the tokens), --optimize-interval (alpha moves from
#     50/K to a small sum, as documents of one or two themes ask), --test
#     (finite perplexity, lower after training than for a random model).
#  3. The same bits (every output file, the perplexity and the last
#     iteration's log-likelihood) on 1, 2 and 3 executors with the default
#     blocks.
#  4. --save-state, --load-state (continues, --check holds) and infer.lua
#     (proportions of new documents; on the training documents their main
#     topic agrees with the training's).
#  5. Bad input: errors name the file and line, the option or the path
#     (also orion.import_text's own: a fixed vocabulary's bad lines).
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
app=$src/apps/lda/lda.lua
fix=$src/t/data/lda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { "$drv" --quiet "$@" >"$tmp/out" 2>&1; }

# 1. The importer ----------------------------------------------------------
mkdir -p "$tmp/d/sub"
printf 'From: someone@example.org\nSubject: pets\n\nThe CAT sat; the cat'"'"'s mat. e-mail 42 ab\n' >"$tmp/d/a.txt"
printf 'A cat and a dog. Dog!\n' >"$tmp/d/b.txt"
printf 'dog bird bird\n' >"$tmp/d/sub/c.txt"
printf 'hidden words here\n' >"$tmp/d/.hidden"
ORION_EXECUTORS=1 run "$app" --import "$tmp/d" --skip-header --k 2 --iters 0 \
  --top 0 --save-vocab "$tmp/v.txt" --save-corpus "$tmp/c.txt" ||
  fail "import: $(cat "$tmp/out")"
printf 'bird\ncat\ncat'"'"'s\ndog\ne-mail\nmat\nsat\n' >"$tmp/v.want"
printf '3\n7\n9\n1 2 1\n1 3 1\n1 5 1\n1 6 1\n1 7 1\n2 2 1\n2 4 2\n3 1 2\n3 4 1\n' >"$tmp/c.want"
cmp -s "$tmp/v.txt" "$tmp/v.want" || fail "vocabulary: $(cat "$tmp/v.txt")"
cmp -s "$tmp/c.txt" "$tmp/c.want" || fail "docword: $(cat "$tmp/c.txt")"
grep -q '# lda: 3 documents, 7 words, 11 tokens' "$tmp/out" || fail "header: $(cat "$tmp/out")"
ORION_EXECUTORS=1 run "$app" --import "$tmp/d" --skip-header --k 2 --iters 0 \
  --top 0 --min-df 2 --save-vocab "$tmp/v2.txt" || fail "min-df: $(cat "$tmp/out")"
[ "$(cat "$tmp/v2.txt")" = "$(printf 'cat\ndog')" ] || fail "--min-df 2: $(cat "$tmp/v2.txt")"
ORION_EXECUTORS=1 run "$app" --import "$tmp/d" --skip-header --k 2 --iters 0 \
  --top 0 --max-df 0.5 --save-vocab "$tmp/v3.txt" || fail "max-df: $(cat "$tmp/out")"
[ "$(tr '\n' ' ' <"$tmp/v3.txt")" = "bird cat's e-mail mat sat " ] || fail "--max-df 0.5: $(cat "$tmp/v3.txt")"
# No stoplist and no header skipping: "the", "from" and "subject" count.
printf 'nothing\n' >"$tmp/stop.txt"
ORION_EXECUTORS=1 run "$app" --import "$tmp/d" --stoplist "$tmp/stop.txt" --k 2 \
  --iters 0 --top 0 --save-vocab "$tmp/v4.txt" || fail "stoplist: $(cat "$tmp/out")"
for w in the from subject and someone@example.org; do
  grep -qx "$w" "$tmp/v4.txt" || fail "--stoplist FILE: '$w' missing from $(tr '\n' ' ' <"$tmp/v4.txt")"
done

# 2. Outputs on the fixture ---------------------------------------------------
train() { # $1: executors, $2: output folder, then more options
  n=$1 o=$2
  shift 2
  mkdir -p "$o"
  ORION_EXECUTORS=$n "$drv" --quiet "$app" --import "$fix/train.txt" --k 3 \
    --iters 40 --ll-every 40 --top 0 --num-top-words 5 --optimize-interval 5 --optimize-burn-in 5 \
    --topic-keys "$o/keys.txt" --doc-topics "$o/dt.txt" \
    --word-topic-counts "$o/wtc.txt" --test "$fix/test.txt" \
    --save-state "$o/model" "$@" >"$o/out" 2>&1 || fail "training on $n: $(cat "$o/out")"
}
train 1 "$tmp/e1"
train 2 "$tmp/e2"
k=$tmp/e2/keys.txt
[ "$(wc -l <"$k")" -eq 3 ] || fail "topic keys: $(cat "$k")"
awk -F'\t' 'NF != 3 || $1 != NR - 1 || $2 !~ /^[0-9.e-]+$/ || split($3, w, " ") != 5 { exit 1 }' "$k" ||
  fail "topic keys format: $(cat "$k")"
# Each topic's top words come from one planted theme.
awk -F'\t' '
  BEGIN { split("orbit rocket launch planet moon shuttle satellite astronaut mission telescope galaxy comet asteroid nasa gravity", a, " ")
          split("bread cheese apple butter soup pasta garlic tomato pepper onion salad recipe oven flour sugar", b, " ")
          split("guitar piano violin melody rhythm concert singer chorus drummer album song band opera jazz tempo", c, " ")
          for (i in a) t[a[i]] = 1; for (i in b) t[b[i]] = 2; for (i in c) t[c[i]] = 3 }
  { n = split($3, w, " "); for (i = 1; i <= n; i++) if (t[w[i]] != t[w[1]] || !t[w[i]]) exit 1; seen[t[w[1]]] = 1 }
  END { if (length(seen) != 3) exit 1 }' "$k" || fail "topics do not separate the themes: $(cat "$k")"
# --optimize-interval: alpha leaves 50/K (sum 50) for a small sum.
awk -F'\t' '{ s += $2 } END { exit !(s > 0.05 && s < 5) }' "$k" ||
  fail "alpha after optimisation: $(cut -f1,2 "$k" | tr '\n' ' ')"
grep -q '# optimised: alpha sum' "$tmp/e2/out" || fail "no optimisation line: $(cat "$tmp/e2/out")"
dt=$tmp/e2/dt.txt
[ "$(wc -l <"$dt")" -eq 90 ] || fail "doc-topics has $(wc -l <"$dt") lines"
awk -F'\t' 'NF != 5 || $1 != NR - 1 || $2 != "'"$fix"'/train.txt:" NR { exit 1 }
  { s = $3 + $4 + $5; if (s < 1 - 1e-9 || s > 1 + 1e-9) exit 1 }' "$dt" ||
  fail "doc-topics format: $(head -2 "$dt")"
tokens=$(sed -n 's/^# lda: [0-9]* documents, [0-9]* words, \([0-9]*\) tokens.*/\1/p' "$tmp/e2/out")
awk -v n="$tokens" '{ for (i = 3; i <= NF; i++) { split($i, p, ":"); s += p[2] } }
  $1 != NR - 1 { exit 1 } END { exit !(s == n && n > 2000) }' "$tmp/e2/wtc.txt" ||
  fail "word-topic counts (tokens $tokens): $(head -2 "$tmp/e2/wtc.txt")"
ppl() { sed -n 's/^# held-out: .* perplexity \([0-9.]*\)$/\1/p' "$1"; }
p1=$(ppl "$tmp/e2/out")
mkdir -p "$tmp/r"
ORION_EXECUTORS=2 run "$app" --import "$fix/train.txt" --k 3 --iters 0 --init random \
  --top 0 --test "$fix/test.txt" || fail "random model: $(cat "$tmp/out")"
p0=$(ppl "$tmp/out")
awk -v a="$p1" -v b="$p0" 'BEGIN { exit !(a > 1 && b > 1 && a < 1e6 && a < 0.8 * b) }' ||
  fail "perplexity trained $p1, random $p0"

# 3. The same bits on 1, 2 and 3 executors, by default ----------------------
# (the default blocks do not depend on the executor count; before issue 36
# they were one document part per executor, and 3 executors gave another
# chain).  The log-likelihood after the last iteration too.
train 3 "$tmp/e3"
for n in 2 3; do
  for f in keys.txt dt.txt wtc.txt model.model model.vocab; do
    cmp -s "$tmp/e1/$f" "$tmp/e$n/$f" || fail "$f differs between 1 and $n executors"
  done
  [ "$(grep '^# held-out' "$tmp/e1/out")" = "$(grep '^# held-out' "$tmp/e$n/out")" ] ||
    fail "held-out line differs: $(grep '^# held-out' "$tmp/e1/out" "$tmp/e$n/out")"
  ll1=$(awk '$1 == 40 { print $NF }' "$tmp/e1/out")
  lln=$(awk '$1 == 40 { print $NF }' "$tmp/e$n/out")
  [ -n "$ll1" ] && [ "$ll1" = "$lln" ] ||
    fail "log-likelihood after 40 iterations: '$ll1' on 1 executor, '$lln' on $n"
done

# 4. State and inference -------------------------------------------------------
ORION_EXECUTORS=2 run "$app" --load-state "$tmp/e2/model" --iters 3 --check --top 0 ||
  fail "--load-state: $(cat "$tmp/out")"
grep -q 'alpha=asymmetric' "$tmp/out" && grep -q '# check: the document' "$tmp/out" ||
  fail "--load-state: $(cat "$tmp/out")"
inf=$src/apps/lda/infer.lua
ORION_EXECUTORS=2 run "$inf" --model "$tmp/e2/model" --input "$fix/test.txt" \
  --iters 30 --doc-topics "$tmp/inf.txt" || fail "infer.lua: $(cat "$tmp/out")"
awk -F'\t' 'NF != 5 { exit 1 } { s = $3 + $4 + $5; if (s < 1 - 1e-9 || s > 1 + 1e-9) exit 1 }
  END { exit NR != 30 }' "$tmp/inf.txt" || fail "infer.lua output: $(head -2 "$tmp/inf.txt")"
ORION_EXECUTORS=1 run "$inf" --model "$tmp/e2/model" --input "$fix/test.txt" \
  --iters 30 --doc-topics "$tmp/inf1.txt" || fail "infer.lua on 1: $(cat "$tmp/out")"
cmp -s "$tmp/inf.txt" "$tmp/inf1.txt" || fail "infer.lua differs between 1 and 2 executors"
ORION_EXECUTORS=2 run "$inf" --model "$tmp/e2/model" --input "$fix/train.txt" \
  --iters 30 --doc-topics "$tmp/inf2.txt" || fail "infer.lua: $(cat "$tmp/out")"
paste "$dt" "$tmp/inf2.txt" | awk -F'\t' '
  function top(a, b, c) { return a >= b && a >= c ? 1 : (b >= c ? 2 : 3) }
  { same += top($3, $4, $5) == top($8, $9, $10) } END { exit !(same >= 0.8 * NR) }' ||
  fail "infer.lua's main topics disagree with training's"

# 5. Bad input -----------------------------------------------------------------
ORION_EXECUTORS=1 run "$app" --import "$tmp/no/such" --iters 0
grep -q "cannot open $tmp/no/such" "$tmp/out" || fail "missing --import: $(cat "$tmp/out")"
ORION_EXECUTORS=1 run "$app" --import "$fix/train.txt" --stoplist "$tmp/no/stop" --iters 0
[ $? -eq 2 ] && grep -q -- "--stoplist" "$tmp/out" || fail "missing --stoplist: $(cat "$tmp/out")"
ORION_EXECUTORS=1 run "$app" --corpus "$tmp/c.txt" --import "$tmp/d"
grep -q -- "--import and --corpus" "$tmp/out" || fail "--import with --corpus: $(cat "$tmp/out")"
sed 's/^beta .*/beta zero/' "$tmp/e2/model.model" >"$tmp/bad.model"
for f in assignments word-topic vocab; do cp "$tmp/e2/model.$f" "$tmp/bad.$f"; done
ORION_EXECUTORS=1 run "$app" --load-state "$tmp/bad" --iters 1
grep -q "$tmp/bad.model:3: beta is not a number" "$tmp/out" || fail "bad model file: $(cat "$tmp/out")"
printf 'orbit\norbit\n' >"$tmp/bad.vocab"
sed 's/^words .*/words 2/' "$tmp/e2/model.model" >"$tmp/bad.model"
ORION_EXECUTORS=1 run "$app" --load-state "$tmp/bad" --iters 1
grep -q "is already in the vocabulary\|$tmp/bad.vocab:2" "$tmp/out" || fail "duplicate vocabulary word: $(cat "$tmp/out")"
printf '1\n1000\n1\n1 1000 1\n' >"$tmp/wide.txt"
ORION_EXECUTORS=1 run "$inf" --model "$tmp/e2/model" --input "$tmp/wide.txt"
grep -q "the new documents have" "$tmp/out" || fail "docword wider than the model: $(cat "$tmp/out")"

# orion.import_text's own errors: a fixed vocabulary's bad lines.
cat >"$tmp/imp.lua" <<'EOF2'
local orion = require "orion"
local ok, err = pcall(orion.import_text, arg[1], { docword = arg[2], vocab = arg[3] })
print(ok and "ok" or err)
EOF2
printf 'orbit\nmoon rocket\n' >"$tmp/v5.txt"
ORION_EXECUTORS=1 run "$tmp/imp.lua" "$fix/test.txt" "$tmp/dw5.txt" "$tmp/v5.txt"
grep -q "$tmp/v5.txt:2: a vocabulary line holds one word" "$tmp/out" || fail "two words on a vocabulary line: $(cat "$tmp/out")"
printf 'orbit\nmoon\nOrbit\n' >"$tmp/v5.txt"
ORION_EXECUTORS=1 run "$tmp/imp.lua" "$fix/test.txt" "$tmp/dw5.txt" "$tmp/v5.txt"
grep -q "$tmp/v5.txt:3: the word \"orbit\" is already in the vocabulary" "$tmp/out" || fail "duplicate vocabulary word: $(cat "$tmp/out")"
printf 'zzzz\n' >"$tmp/v5.txt"
ORION_EXECUTORS=1 run "$tmp/imp.lua" "$fix/test.txt" "$tmp/dw5.txt" "$tmp/v5.txt"
grep -q "$fix/test.txt: no token is left" "$tmp/out" || fail "no token left: $(cat "$tmp/out")"

[ "$fails" -eq 0 ] && echo "PASS: test_lda_text" || exit 1
