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
#                first reaches WarpLDA's final LL (the median of its
#                runs here; without WARPLDA its LL after 100 iterations
#                in ../shared/anchors.md); "-" when it is not reached.
#                Loading (reading the corpus, placing it and the empty
#                count tables on the executors) and the LL evaluations
#                are not included
#   LL final     LL per token after the last iteration
# Peers: MALLET names a MALLET launcher (its `bin/mallet`, or any script
# taking its `import-file` and `train-topics` commands) and WARPLDA a
# folder holding WarpLDA's `warplda` and `format` programs.  Given, they
# run in this script on the same corpora and Ks, with 2 threads, the same
# alpha (50 in sum) and beta and ITERS iterations; the corpus is converted
# once to their text formats (one document per line, word w<id> repeated).
# Every configuration runs in RUNS rounds (default 3), ours, then
# WarpLDA's, then MALLET's in each (A, B, C, A, B, C, ...), so a change of
# the machine's load falls on all of them, and the figures are the
# medians of the rounds with their [min-max].  A second table then gives
# per tool its seconds per sweep (MALLET: from the times its "<10>" and
# "<ITERS>" log lines appear, so startup, import and the JIT's first sweeps
# are left out; WarpLDA: its own per-iteration times), the ratio of theirs
# to ours (above 1: we are faster), the final LL, and the seconds to reach
# WarpLDA's final LL (ours from the metrics, as above; MALLET's LL is
# printed every 10th sweep, so its time is an upper bound, and its figures
# need ITERS above 10 and a multiple of 10).
#
# A peer not given is replaced by ../shared/anchors.md's figures (100
# iterations, 2 threads, another day's machine), and those columns are
# marked "(anchor)": "vs MALLET" = MALLET's seconds for 100 iterations /
# ours for ITERS (above 1: faster); "reach vs Warp" = WarpLDA's
# 100-iteration seconds / our seconds to reach its final LL (above 1: we
# get there sooner); "LL - MALLET" = our final LL minus MALLET's after
# 100; the anchors have K = 100 and 1000 only.  With SIDE_ROWS=FILE each configuration adds rows to
# bench/side_by_side.sh's table.  The load average before and after each
# configuration is printed.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/interleave.sh
data=${ORION_DATA:-../shared/data}
iters=${ITERS:-100}
corpora=${CORPORA:-kos 20ng}
ks=${KS:-100 1000}
execs=${EXECS:-2}
runs=${RUNS:-3}
mallet=${MALLET:-}
warp=${WARPLDA:-}

case $iters in
  '' | *[!0-9]* | 0) echo "bench/lda.sh: ITERS must be a positive integer" >&2; exit 2 ;;
esac
runs_count lda.sh "$runs"
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/lda.sh: build first (./configure && make)" >&2
  exit 1
fi
if [ -n "$mallet" ] && [ ! -x "$mallet" ]; then
  echo "bench/lda.sh: MALLET=$mallet is not an executable MALLET launcher (bin/mallet)" >&2
  exit 2
fi
if [ -n "$warp" ] && { [ ! -x "$warp/warplda" ] || [ ! -x "$warp/format" ]; }; then
  echo "bench/lda.sh: WARPLDA=$warp does not hold the warplda and format programs" >&2
  exit 2
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

# warp_summary LOG TARGET -> "s_per_iter final_ll reach_s": WarpLDA's own
# per-iteration times, its last LL, and its seconds to TARGET ("-": never).
warp_summary() {
  awk -v target="$2" '/^Iteration/ {
      gsub(/,/, ""); t += $3; n++; ll = $NF
      if (r == "" && target != "nan" && ll + 0 >= target + 0) r = t }
    END { if (!n) { print "- - -"; exit }
          printf "%.6f %s %s\n", t / n, ll, (r == "") ? "-" : sprintf("%.3f", r) }' "$1"
}

# mallet_summary LOG TARGET -> "s_per_sweep final_ll reach_s": seconds per
# sweep between its <10> and <ITERS> lines, its last LL, and an upper
# bound of its seconds to TARGET (its LL is printed every 10th sweep).
mallet_summary() {
  awk -v it="$iters" -v target="$2" '
    / <[0-9]+> LL\/token: / { n = $2; gsub(/[<>]/, "", n); ll = $NF
      if (n == 10) t10 = $1
      if (n == it) tend = $1
      if (reach == "" && target != "nan" && ll + 0 >= target + 0) reach = $1 - t10
      last = ll }
    END { if (t10 == "" || tend == "" || it <= 10) { print "- - -"; exit }
          s = (tend - t10) / (it - 10)
          printf "%.6f %s %s\n", s, last, (reach == "") ? "-" : sprintf("%.3f", reach + 10 * s) }' "$1"
}

# UCI bag of words -> one line per document: "d<TAB>x<TAB>w3 w3 w17 ...".
to_text() {
  zcat -f "$1" | awk 'NR <= 3 { next }
    $1 != cur { if (cur != "") print line; cur = $1; line = "d" $1 "\tx\t" }
    { for (i = 0; i < $3; i++) line = line "w" $2 " " }
    END { if (cur != "") print line }'
}

# Seconds since the epoch, to the millisecond, of each line of stdin.
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }

# One run of each tool on corpus $c at $k, round R.
ours_round() {
  ./orion-driver --quiet --executors "$execs" --metrics "$tmp/m_${c}_${k}_$1.jsonl" \
    apps/lda/lda.lua --corpus "$f" --k "$k" --iters "$iters" > "$tmp/o_${c}_$k.txt"
}
warp_round() {
  (cd "$tmp" && OMP_NUM_THREADS=2 "$warp/warplda" --prefix "w_$c" --k "$k" \
    --niter "$iters" --alpha 50 --beta 0.01 --writeinfo=false \
    --dumpmodel=false --dumpz=false > "w_${c}_${k}_$1.log" 2>&1) ||
    { echo "bench/lda.sh: $warp/warplda failed:" >&2; tail -5 "$tmp/w_${c}_${k}_$1.log" >&2; return 1; }
}
mallet_round() {
  "$mallet" train-topics --input "$tmp/$c.mallet" --num-topics "$k" \
    --num-iterations "$iters" --num-threads 2 --alpha 50 --beta 0.01 \
    --optimize-interval 0 --random-seed "$1" --show-topics-interval 100000 \
    2>&1 | stamp > "$tmp/mallet_${c}_${k}_$1.log"
}

# col N FILE...: field N of each FILE's one line, one a line, "-" left out.
col() {
  local n=$1
  shift
  cat "$@" | awk -v n="$n" '$n != "-" && $n != "" { print $n }'
}
# st FILE: stat3, or "-" when FILE holds no number.
st() { local s; s=$(stat3 "$1"); [ "${s##* }" = 0 ] && echo - || echo "$s"; }
med() { echo "${1%% *}"; }
# ll4 X: X to 4 decimals, or "-".
ll4() { if [ "$1" = - ]; then echo -; else printf '%.4f' "$1"; fi; }
# stats TOOL FIELD: stat3 over the rounds at $c, $k of a summary's field.
stats() { col "$2" "$tmp/${1}_${c}_${k}"_* > "$tmp/x"; st "$tmp/x"; }

# Build the compiled loop bodies once (they are cached), so that no timed
# sweep below includes the C compiler; convert the corpora for the peers.
./orion-driver --quiet --executors "$execs" apps/lda/lda.lua --k 2 --iters 1 \
  --top 0 > /dev/null
for c in $corpora; do
  [ -n "$mallet$warp" ] || break
  f=$(corpus_file "$c")
  to_text "$f" > "$tmp/$c.txt"
  if [ -n "$mallet" ]; then
    "$mallet" import-file --input "$tmp/$c.txt" --output "$tmp/$c.mallet" \
      --keep-sequence --token-regex '[^ ]+' > "$tmp/mallet_import.log" 2>&1 ||
      { echo "bench/lda.sh: $mallet import-file failed:" >&2; tail -5 "$tmp/mallet_import.log" >&2; exit 1; }
  fi
  if [ -n "$warp" ]; then
    cut -f1,3 "$tmp/$c.txt" | sed 's/\t/ x /' > "$tmp/$c.yahoo"
    (cd "$tmp" && "$warp/format" -input "$c.yahoo" -prefix "w_$c" > /dev/null 2>&1)
  fi
done

fns=(ours_round)
[ -z "$warp" ] || fns+=(warp_round)
[ -z "$mallet" ] || fns+=(mallet_round)
printf 'LDA (collapsed Gibbs, sparse sampler), %s iterations, %s executors, %s cores\n' \
  "$iters" "$execs" "$(nproc)"
printf '%s rounds of %s, one run each a round; medians [min-max]\n' "$runs" "${fns[*]%_round}"
hdr=$(printf '%-5s %5s %24s %8s %8s %24s %9s' corpus K "s/iter [min-max]" \
  "Mtok/s" "s total" "s to Warp [min-max]" "LL final")
[ -n "$mallet" ] || hdr="$hdr | $(printf '%18s %18s' "vs MALLET" "LL - MALLET")"
[ -n "$warp" ] || hdr="$hdr | $(printf '%20s' "reach vs Warp")"
echo "$hdr"
: > "$tmp/peers.txt"
for c in $corpora; do
  f=$(corpus_file "$c")
  for k in $ks; do
    read -r w_s w_ll m_s m_ll <<< "$(anchor "$c" "$k")"
    load0=$(loadavg)
    interleave "$runs" "${fns[@]}"
    load1=$(loadavg)
    ntok=$(sed -n 's/.* words, \([0-9]*\) tokens.*/\1/p' "$tmp/o_${c}_$k.txt" | head -1)
    target=$w_ll
    for r in $(seq 1 "$runs"); do
      [ -z "$warp" ] || warp_summary "$tmp/w_${c}_${k}_$r.log" nan > "$tmp/wf_${c}_${k}_$r"
    done
    if [ -n "$warp" ]; then
      target=$(med "$(stats wf 2)")
    fi
    for r in $(seq 1 "$runs"); do
      summarise "$tmp/m_${c}_${k}_$r.jsonl" "$target" > "$tmp/os_${c}_${k}_$r"
      echo >> "$tmp/os_${c}_${k}_$r"
      [ -z "$warp" ] || warp_summary "$tmp/w_${c}_${k}_$r.log" "$target" > "$tmp/ws_${c}_${k}_$r"
      [ -z "$mallet" ] || mallet_summary "$tmp/mallet_${c}_${k}_$r.log" "$target" > "$tmp/ms_${c}_${k}_$r"
    done
    o_s=$(stats os 1) o_tot=$(stats os 2) o_reach=$(stats os 3) o_ll=$(stats os 4)
    row=$(awk -v c="$c" -v k="$k" -v sp="$(spread_of "$o_s")" -v ts="$(med "$o_tot")" \
        -v rs="$(spread_of "$o_reach")" -v ll="$(med "$o_ll")" -v n="$ntok" -v it="$iters" 'BEGIN {
      printf "%-5s %5s %24s %8.2f %8.2f %24s %9.4f", c, k, sp, n * it / ts / 1e6, ts, rs, ll }')
    if [ -z "$mallet" ] && [ "$m_s" = nan ]; then
      row="$row | $(printf '%18s %18s' "- (no anchor)" "-")"
    elif [ -z "$mallet" ]; then
      row="$row | $(awk -v mls="$m_s" -v it="$iters" -v ts="$(med "$o_tot")" -v ll="$(med "$o_ll")" \
        -v mll="$m_ll" 'BEGIN { printf "%9.2fx (anchor) %+9.3f (anchor)", mls * it / 100 / ts, ll - mll }')"
    fi
    if [ -z "$warp" ] && [ "$w_s" = nan ]; then
      row="$row | $(printf '%20s' "- (no anchor)")"
    elif [ -z "$warp" ]; then
      row="$row | $(awk -v ws="$w_s" -v rs="$(med "$o_reach")" 'BEGIN {
        if (rs == "-") printf "%20s", "- (anchor)"; else printf "%11.2fx (anchor)", ws / rs }')"
    fi
    echo "$row"
    echo "     load average $load0 before, $load1 after"
    lq="LL $(ll4 "$(med "$o_ll")")"
    o_sps=$o_s
    if [ -n "$warp" ]; then
      w_sps=$(stats ws 1) w_llf=$(stats ws 2) w_reach=$(stats ws 3)
      wq="LL $(ll4 "$(med "$w_llf")")"
      side_row "${SIDE_ROWS:-}" "LDA $c K=$k" WarpLDA "s to its LL" lower "$w_reach" "$o_reach" "$wq" "$lq" "$load0 / $load1"
      side_row "${SIDE_ROWS:-}" "LDA $c K=$k" WarpLDA "s/sweep" lower "$w_sps" "$o_sps" "$wq" "$lq" "$load0 / $load1"
      awk -v c="$c" -v k="$k" -v s="$(spread_of "$w_sps")" -v ws="$(med "$w_sps")" -v o="$(med "$o_s")" \
          -v ll="$(med "$w_llf")" -v r="$(spread_of "$w_reach")" 'BEGIN {
        printf "%-5s %5s %-8s %24s %9.2fx %10.4f %24s\n", c, k, "WarpLDA", s, ws / o, ll, r }' >> "$tmp/peers.txt"
    elif [ "$w_s" != nan ]; then
      side_row "${SIDE_ROWS:-}" "LDA $c K=$k" "WarpLDA (anchor)" "s to its LL" lower "$w_s $w_s $w_s 1" "$o_reach" "LL $w_ll" "$lq" "$load0 / $load1"
    fi
    if [ -n "$mallet" ]; then
      m_sps=$(stats ms 1) m_llf=$(stats ms 2) m_reach=$(stats ms 3)
      mq="LL $(ll4 "$(med "$m_llf")")"
      side_row "${SIDE_ROWS:-}" "LDA $c K=$k" MALLET "s/sweep" lower "$m_sps" "$o_sps" "$mq" "$lq" "$load0 / $load1"
      awk -v c="$c" -v k="$k" -v s="$(spread_of "$m_sps")" -v ms="$(med "$m_sps")" -v o="$(med "$o_s")" \
          -v ll="$(ll4 "$(med "$m_llf")")" -v r="$(med "$m_reach")" 'BEGIN {
        printf "%-5s %5s %-8s %24s %10s %10s %24s\n", c, k, "MALLET", s,
          (ms == "-") ? "-" : sprintf("%.2fx", ms / o), ll, (r == "-") ? "-" : r "+" }' >> "$tmp/peers.txt"
    elif [ "$m_s" != nan ]; then
      ma=$(awk -v s="$m_s" 'BEGIN { printf "%.6g", s / 100 }')
      side_row "${SIDE_ROWS:-}" "LDA $c K=$k" "MALLET (anchor)" "s/sweep" lower "$ma $ma $ma 1" "$o_sps" "LL $m_ll" "$lq" "$load0 / $load1"
    fi
    if [ -n "$mallet$warp" ]; then
      printf '%-5s %5s %-8s %24s %10s %10.4f %24s\n' "$c" "$k" ours "$(spread_of "$o_s")" "" \
        "$(med "$o_ll")" "$(spread_of "$o_reach")" >> "$tmp/peers.txt"
    fi
  done
done
[ -n "$mallet" ] || [ -n "$warp" ] || { echo "anchors: ../shared/anchors.md (WarpLDA and MALLET, 100 iterations, 2 threads, another day's machine)"; exit 0; }
[ -n "$mallet" ] && [ -n "$warp" ] || echo "anchors for the peer not given: ../shared/anchors.md (100 iterations, 2 threads, another day's machine)"

echo
printf 'side by side in this run (%s iterations, 2 threads each, medians [min-max] of %s rounds)\n' "$iters" "$runs"
printf '%-5s %5s %-8s %24s %10s %10s %24s\n' corpus K tool "s/iter [min-max]" "them/ours" \
  "LL final" "s to Warp LL [min-max]"
cat "$tmp/peers.txt"
