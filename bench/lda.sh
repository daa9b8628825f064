#!/usr/bin/env bash
# bench/lda.sh: collapsed Gibbs LDA (apps/lda/lda.lua) on KOS and 20NG.
#
#   ./configure && make && bench/lda.sh
#   ITERS=30 CORPORA="kos" KS="100" EXECS=2 bench/lda.sh
#
# For each corpus and K it runs apps/lda/lda.lua with ITERS iterations
# (default 100), EXECS local executors (default 2) and the default sparse
# sampler, alpha = 50/K, beta = 0.01 (the anchors' settings), and prints
# from the --metrics records:
#   s/iter       mean sampling seconds per iteration (LL evaluation excluded)
#   Mtok/s       tokens x iterations / sampling seconds, in millions
#   s total      sampling seconds of all iterations (the initial sweep
#                not included)
#   s to Warp    sampling seconds, the initial sweep (--init sequential:
#                a full sampling pass) included, until the LL per token
#                first reaches WarpLDA's LL after 100 iterations
#                (../shared/anchors.md); "-" when it is not reached.
#                Loading (reading the corpus, placing it and the empty
#                count tables on the executors) and the LL evaluations
#                are not included
#   LL final     LL per token after the last iteration
# and the ratios against the anchors table, measured on the same kind of
# machine: "vs MALLET" = MALLET's seconds for 100 iterations / ours for
# ITERS (above 1: faster); "reach vs Warp" = WarpLDA's 100-iteration
# seconds / our seconds to reach its final LL (above 1: we get there
# sooner); "LL - MALLET" = our final LL minus MALLET's after 100.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
#
# Side by side: with MALLET set to a MALLET launcher (its `bin/mallet`)
# and/or WARPLDA to a folder holding WarpLDA's `warplda` and `format`
# builds, the same corpora and Ks also run through them in this script,
# with 2 threads, the same alpha (50 in sum) and beta and ITERS
# iterations, after ours, and a second table prints per sweep seconds of
# each (MALLET: from the times its "<10>" and "<ITERS>" log lines appear,
# so startup, import and the JIT's first sweeps are left out; WarpLDA:
# its own per-iteration times), the ratio of theirs to ours (above 1: we
# are faster), WarpLDA's final LL, and the seconds each needs to reach it
# (ours from the metrics, as above; MALLET's LL is printed every 10th
# sweep, so its time is an upper bound).  The corpus is converted once to
# their text formats (one document per line, word w<id> repeated).
set -euo pipefail
cd "$(dirname "$0")/.."

data=${ORION_DATA:-../shared/data}
iters=${ITERS:-100}
corpora=${CORPORA:-kos 20ng}
ks=${KS:-100 1000}
execs=${EXECS:-2}

case $iters in
  '' | *[!0-9]* | 0) echo "bench/lda.sh: ITERS must be a positive integer" >&2; exit 2 ;;
esac
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/lda.sh: build first (./configure && make)" >&2
  exit 1
fi

corpus_file() {
  case $1 in
    kos) echo "$data/uci-bow-kos/docword.kos.txt.gz" ;;
    20ng) echo "$data/20newsgroups-bydate/docword.20news.txt.gz" ;;
    *) echo "bench/lda.sh: unknown corpus '$1' (kos or 20ng)" >&2; exit 2 ;;
  esac
}

# The anchors (../shared/anchors.md): WarpLDA seconds and LL after 100
# iterations, MALLET seconds and LL after 100 iterations.
anchor() {
  case "$1 $2" in
    "kos 100") echo "0.83 -8.652 2.2 -8.507" ;;
    "kos 1000") echo "1.06 -9.877 3.4 -9.280" ;;
    "20ng 100") echo "3.56 -9.197 9.7 -9.032" ;;
    "20ng 1000") echo "4.21 -9.747 15.5 -9.126" ;;
    *) echo "nan nan nan nan" ;;
  esac
}

for c in $corpora; do
  f=$(corpus_file "$c")
  if [ ! -f "$f" ]; then
    if [ "${CI:-}" = "true" ]; then
      echo "bench/lda.sh: FAIL: $f not found (CI=true needs the data)" >&2
      exit 1
    fi
    echo "bench/lda.sh: skipped: $f not found (set ORION_DATA)"
    exit 0
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Field of a JSON record line: key -> value (numbers and null only).
summarise() { # file target_ll -> "mean_s total_s reach_s final_ll"
  awk -v target="$2" '
    function get(line, key,   v) {
      if (index(line, "\"" key "\":") == 0) return ""
      v = line; sub(".*\"" key "\":", "", v); sub(/[,}].*/, "", v); return v }
    { s = get($0, "seconds"); e = get($0, "elapsed"); ll = get($0, "ll_per_token")
      tot += s; n++
      if (ll != "" && ll != "null") { last = ll
        if (reach == "" && ll + 0 >= target + 0) reach = e } }
    END { if (reach == "") reach = "-"
          printf "%.6f %.6f %s %s", (n ? tot / n : 0), tot, reach, last }' "$1"
}

# Build the compiled loop bodies once (they are cached), so that no timed
# sweep below includes the C compiler.
./orion-driver --quiet --executors "$execs" apps/lda/lda.lua --k 2 --iters 1 \
  --top 0 > /dev/null

printf 'LDA (collapsed Gibbs, sparse sampler), %s iterations, %s executors, %s cores\n' \
  "$iters" "$execs" "$(nproc)"
printf '%-5s %5s %9s %8s %8s %10s %9s | %9s %13s %11s\n' corpus K "s/iter" \
  "Mtok/s" "s total" "s to Warp" "LL final" "vs MALLET" "reach vs Warp" \
  "LL - MALLET"
for c in $corpora; do
  f=$(corpus_file "$c")
  for k in $ks; do
    read -r w_s w_ll m_s m_ll <<< "$(anchor "$c" "$k")"
    m=$tmp/m_${c}_$k.jsonl
    out=$tmp/o_${c}_$k.txt
    ./orion-driver --quiet --executors "$execs" --metrics "$m" apps/lda/lda.lua \
      --corpus "$f" --k "$k" --iters "$iters" > "$out"
    ntok=$(sed -n 's/.* words, \([0-9]*\) tokens.*/\1/p' "$out" | head -1)
    read -r mean_s tot_s reach_s final_ll <<< "$(summarise "$m" "$w_ll")"
    awk -v c="$c" -v k="$k" -v ms="$mean_s" -v ts="$tot_s" -v rs="$reach_s" \
        -v ll="$final_ll" -v n="$ntok" -v it="$iters" -v ws="$w_s" \
        -v mls="$m_s" -v mll="$m_ll" 'BEGIN {
      mtok = n * it / ts / 1e6
      vsm = mls * it / 100 / ts
      rv = (rs == "-") ? "-" : sprintf("%.2fx", ws / rs)
      printf "%-5s %5s %9.3f %8.2f %8.2f %10s %9.4f | %8.2fx %13s %+11.3f\n",
        c, k, ms, mtok, ts, (rs == "-") ? "-" : sprintf("%.2f", rs), ll,
        vsm, rv, ll - mll }'
  done
done
echo "anchors: ../shared/anchors.md (WarpLDA and MALLET, 100 iterations, 2 threads)"

[ -n "${MALLET:-}" ] || [ -n "${WARPLDA:-}" ] || exit 0
if [ -n "${MALLET:-}" ] && [ ! -x "$MALLET" ]; then
  echo "bench/lda.sh: MALLET=$MALLET is not an executable MALLET launcher (bin/mallet)" >&2
  exit 2
fi
if [ -n "${WARPLDA:-}" ] && { [ ! -x "$WARPLDA/warplda" ] || [ ! -x "$WARPLDA/format" ]; }; then
  echo "bench/lda.sh: WARPLDA=$WARPLDA does not hold the warplda and format programs" >&2
  exit 2
fi

# UCI bag of words -> one line per document: "d<TAB>x<TAB>w3 w3 w17 ...".
to_text() {
  zcat -f "$1" | awk 'NR <= 3 { next }
    $1 != cur { if (cur != "") print line; cur = $1; line = "d" $1 "\tx\t" }
    { for (i = 0; i < $3; i++) line = line "w" $2 " " }
    END { if (cur != "") print line }'
}

# Seconds since the epoch, to the millisecond, of each line of stdin.
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }

echo
printf 'side by side in this run (%s iterations, 2 threads each)\n' "$iters"
printf '%-5s %5s %-8s %9s %10s %10s %13s\n' corpus K tool "s/iter" "them/ours" \
  "LL final" "s to Warp LL"
for c in $corpora; do
  f=$(corpus_file "$c")
  to_text "$f" > "$tmp/$c.txt"
  if [ -n "${MALLET:-}" ]; then
    "$MALLET" import-file --input "$tmp/$c.txt" --output "$tmp/$c.mallet" \
      --keep-sequence --token-regex '[^ ]+' > /dev/null 2>&1
  fi
  if [ -n "${WARPLDA:-}" ]; then
    cut -f1,3 "$tmp/$c.txt" | sed 's/\t/ x /' > "$tmp/$c.yahoo"
    (cd "$tmp" && "$WARPLDA/format" -input "$c.yahoo" -prefix "w_$c" > /dev/null 2>&1)
  fi
  for k in $ks; do
    m=$tmp/m_${c}_$k.jsonl
    ours=$(summarise "$m" 0 | awk '{ print $1 }')
    warp_ll=nan
    if [ -n "${WARPLDA:-}" ]; then
      (cd "$tmp" && OMP_NUM_THREADS=2 "$WARPLDA/warplda" --prefix "w_$c" --k "$k" \
        --niter "$iters" --alpha 50 --beta 0.01 --writeinfo=false \
        --dumpmodel=false --dumpz=false > "w_${c}_$k.log" 2>&1)
      read -r w_s warp_ll w_reach <<< "$(awk '/^Iteration/ {
          gsub(/,/, ""); t += $3; n++; ll = $NF; lls[n] = ll; ts[n] = t }
        END { for (i = 1; i <= n; i++) if (lls[i] >= ll) { r = ts[i]; break }
              printf "%.6f %s %.3f", t / n, ll, r }' "$tmp/w_${c}_$k.log")"
      o_reach=$(summarise "$m" "$warp_ll" | awk '{ print ($3 == "-") ? "-" : sprintf("%.2f", $3) }')
      awk -v c="$c" -v k="$k" -v s="$w_s" -v o="$ours" -v ll="$warp_ll" \
          -v r="$w_reach" -v orr="$o_reach" 'BEGIN {
        printf "%-5s %5s %-8s %9.4f %9.2fx %10.4f %13.2f\n", c, k, "WarpLDA", s, s / o, ll, r
        printf "%-5s %5s %-8s %9.4f %10s %10s %13s\n", c, k, "ours", o, "", "", orr }'
    fi
    if [ -n "${MALLET:-}" ]; then
      "$MALLET" train-topics --input "$tmp/$c.mallet" --num-topics "$k" \
        --num-iterations "$iters" --num-threads 2 --alpha 50 --beta 0.01 \
        --optimize-interval 0 --random-seed 1 --show-topics-interval 100000 \
        2>&1 | stamp > "$tmp/mallet_${c}_$k.log"
      awk -v c="$c" -v k="$k" -v it="$iters" -v o="$ours" -v target="$warp_ll" '
        / <[0-9]+> LL\/token: / { n = $2; gsub(/[<>]/, "", n); ll = $NF
          if (n == 10) t10 = $1
          if (n == it) tend = $1
          if (reach == "" && target != "nan" && ll + 0 >= target + 0) reach = $1 - t10
          last = ll }
        END {
          if (t10 == "" || tend == "" || it <= 10) {
            printf "%-5s %5s %-8s %9s (needs ITERS > 10 and its <10> and <%d> lines)\n", c, k, "MALLET", "-", it
            exit }
          s = (tend - t10) / (it - 10)
          printf "%-5s %5s %-8s %9.4f %9.2fx %10.4f %13s\n", c, k, "MALLET", s, s / o, last,
            (reach == "") ? "-" : sprintf("%.2f+", reach + 10 * s) }' "$tmp/mallet_${c}_$k.log"
    fi
  done
done
