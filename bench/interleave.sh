# bench/interleave.sh: runs measured side by side; sourced, not run.
# shellcheck shell=bash
#
# A benchmark that compares Orion-C with a peer runs them in rounds, A, B,
# A, B ... (interleave), so that a change in the machine's load between
# rounds falls on both; it reports the median of each side's runs and
# their spread (stat3), and may add a row to a side-by-side table
# (side_row, printed by side_table: bench/side_by_side.sh collects the
# rows of bench/mf.sh and bench/lda.sh through SIDE_ROWS).

# runs_count NAME VALUE: exits 2 unless VALUE is a count of 1 or more.
runs_count() {
  case $2 in
    '' | *[!0-9]* | 0) echo "bench/$1: RUNS must be 1 or more, not '$2'" >&2; exit 2 ;;
  esac
}

# interleave ROUNDS FN...: calls each FN with the round number, in rounds:
# FN1 1, FN2 1, ..., FN1 2, FN2 2, ...  Stops at the first failure.
interleave() {
  local rounds=$1 r fn
  shift
  for r in $(seq 1 "$rounds"); do
    for fn in "$@"; do
      "$fn" "$r" || return 1
    done
  done
}

# stat3 FILE: "median min max count" of the numbers in FILE, one a line
# ("nan nan nan 0" when there are none).  An even count's median is the
# mean of the middle two.
stat3() {
  sort -g "$1" 2>/dev/null | awk '$1 != "" { v[n++] = $1 }
    END { if (!n) { print "nan nan nan 0"; exit }
          m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
          printf "%.10g %.10g %.10g %d\n", m, v[0], v[n - 1], n }'
}

# spread MED MIN MAX: "MED [MIN-MAX]" with 3 significant digits, or "-".
spread() {
  awk -v m="$1" -v lo="$2" -v hi="$3" 'BEGIN {
    if (m == "" || m == "nan" || m == "-") { print "-"; exit }
    printf "%.3g [%.3g-%.3g]\n", m, lo, hi }'
}

# spread_of STATS: spread of stat3's "median min max count", or "-" for "-".
spread_of() {
  local m lo hi
  if [ "$1" = - ]; then echo -; return; fi
  read -r m lo hi _ <<< "$1"
  spread "$m" "$lo" "$hi"
}

# loadavg: the 1, 5 and 15 minute load averages.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# side_row FILE WORKLOAD PEER MEASURE BETTER PEER_STATS ORION_STATS
#          PEER_QUALITY ORION_QUALITY LOAD
# appends a row (tab-separated) to FILE when FILE is not empty.  BETTER is
# "higher" (a rate) or "lower" (seconds); the STATS are stat3's "median min
# max count" ("-" for a side not measured); LOAD is "BEFORE / AFTER", each
# loadavg's three figures (the table shows the 1-minute ones).
side_row() {
  [ -n "$1" ] || return 0
  local f=$1
  shift
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$f"
}

# side_table FILE: the rows of FILE as one table.  The ratio is Orion-C's
# median over the peer's (a rate) or the peer's over Orion-C's (seconds),
# so above 1 Orion-C is faster; a peer figure from ../shared/anchors.md
# (PEER ending in "(anchor)") is another day's machine, so its ratio is
# marked "anchor".
side_table() {
  awk -F '\t' '
    function cell(s,   a) { if (s == "-" || s == "") return "-"
      split(s, a, " "); if (a[4] + 0 <= 1) return sprintf("%.4g", a[1])
      return sprintf("%.4g [%.4g-%.4g]", a[1], a[2], a[3]) }
    function med(s,   a) { split(s, a, " "); return a[1] }
    BEGIN { printf "%-22s %-18s %-12s %-24s %-24s %-15s %-14s %-14s %s\n",
              "workload", "peer", "measure", "peer med [min-max]",
              "Orion-C med [min-max]", "ratio (>1 ours)", "peer quality",
              "Orion-C quality", "load 1-min before/after" }
    { p = med($5); o = med($6); r = "-"
      if ($5 != "-" && $6 != "-" && p + 0 > 0 && o + 0 > 0)
        r = sprintf("%.2f", $4 == "higher" ? o / p : p / o)
      if (r != "-" && $2 ~ /\(anchor\)$/) r = r " anchor"
      n = split($9, L, " / "); split(L[1], a, " "); split(L[n], b, " ")
      printf "%-22s %-18s %-12s %-24s %-24s %-15s %-14s %-14s %s\n",
        $1, $2, $3, cell($5), cell($6), r, $7, $8, a[1] "/" b[1] }' "$1"
}
