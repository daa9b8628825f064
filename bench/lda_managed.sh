#!/usr/bin/env bash
# bench/lda_managed.sh: LDA (apps/lda/lda.lua) with the topic totals'
# updates flushed at the end of each sweep (--flush loop) against managed
# communication (--flush managed: sent during the sweep within a bandwidth
# budget, issue 17), on a namespaced cluster with shaped links (needs root,
# bench/netcluster.sh):
#
#   ./configure && make && bench/lda_managed.sh
#   CORPUS=kos ITERS=5 bench/lda_managed.sh            # a quick look
#   EXECS=4 RATE=100mbit K=100 ITERS=50 BANDWIDTH=20 bench/lda_managed.sh
#
# Runs both, one after the other, on EXECS (default 4) executors behind
# RATE links (default 100mbit), on CORPUS (20ng, the default, or kos) with
# K topics (default 100), ITERS sweeps (default 30), the default sparse
# sampler and sequential start, seed 1; BANDWIDTH, when set, is the
# executors' --bandwidth-mbps (default: the link rate they measure).
# PARALLEL=data runs the data-parallel version instead (--parallel data
# --sampler dense): then --flush is the word-topic counts' buffer's, the
# AD-LDA sync at the end of the sweep (loop) against managed.  From
# the --metrics records it prints the time-to-LL curve of both: per
# sweep, the elapsed sampling seconds (the initial sweep included; loading
# and the LL evaluations are not) and the LL per token, with the managed
# run's early bytes and their mean staleness in blocks.  Then it prints the
# final LL of the loop run, the first sweep at which each run reaches it
# and the elapsed seconds there, and the ratio managed / loop of those
# seconds (below 1: managed gets there sooner), or that managed does not
# reach it within ITERS sweeps.
# Without the data it is skipped (exit 0), unless CI=true (exit 1); without
# root it is skipped (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh

data=${ORION_DATA:-../shared/data}
corpus=${CORPUS:-20ng}
execs=${EXECS:-4}
rate=${RATE:-100mbit}
k=${K:-100}
iters=${ITERS:-30}
case $corpus in
  kos) file=$data/uci-bow-kos/docword.kos.txt.gz ;;
  20ng) file=$data/20newsgroups-bydate/docword.20news.txt.gz ;;
  *) echo "bench/lda_managed.sh: CORPUS must be kos or 20ng, not '$corpus'" >&2; exit 2 ;;
esac
case $iters in
  '' | *[!0-9]* | 0) echo "bench/lda_managed.sh: ITERS must be a positive integer" >&2; exit 2 ;;
esac
bench_need lda_managed.sh "$file"
if [ "$(id -u)" != 0 ]; then
  echo "bench/lda_managed.sh: skipped: network namespaces need root"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
budget=()
[ -z "${BANDWIDTH:-}" ] || budget=(--bandwidth-mbps "$BANDWIDTH")
mode=()
case ${PARALLEL:-2d} in
  2d) ;;
  data) mode=(--parallel data --sampler dense) ;;
  *) echo "bench/lda_managed.sh: PARALLEL must be 2d or data" >&2; exit 2 ;;
esac
for f in loop managed; do
  bench/netcluster.sh -n "$execs" --rate "$rate" --logs "$tmp/logs-$f" -- \
    --quiet "${budget[@]}" --metrics "$tmp/$f.jsonl" apps/lda/lda.lua \
    --corpus "$file" --k "$k" --iters "$iters" --top 0 --ll-every 1 --flush "$f" "${mode[@]}" \
    > "$tmp/$f.out" 2> "$tmp/$f.err" ||
    { echo "bench/lda_managed.sh: the $f run failed:" >&2
      cat "$tmp/$f.out" "$tmp/$f.err" >&2; exit 1; }
done

# KEY of each record, one a line, in iteration order.
col() {
  awk -v key="$2" '
    { v = $0; if (index(v, "\"" key "\":") == 0) { print "-"; next }
      sub(".*\"" key "\":", "", v); sub(/[,}].*/, "", v); print v }' "$1"
}
printf 'LDA (%s) on %s, K=%s, %s namespaced executors at %s, budget %s, %s sweeps, %s cores\n' \
  "${PARALLEL:-2d}" "$corpus" "$k" "$execs" "$rate" "${BANDWIDTH:+$BANDWIDTH mbit/s}${BANDWIDTH:-measured}" \
  "$iters" "$(nproc)"
printf '%5s | %9s %10s | %9s %10s %10s %9s\n' iter "loop s" "loop LL" \
  "managed s" "managed LL" "early KB" staleness
paste <(col "$tmp/loop.jsonl" iter) <(col "$tmp/loop.jsonl" elapsed) \
  <(col "$tmp/loop.jsonl" ll_per_token) <(col "$tmp/managed.jsonl" elapsed) \
  <(col "$tmp/managed.jsonl" ll_per_token) \
  <(col "$tmp/managed.jsonl" managed_bytes) \
  <(col "$tmp/managed.jsonl" managed_staleness) |
  awk -F'\t' '{ printf "%5d | %9.3f %10.4f | %9.3f %10.4f %10.1f %9.2f\n",
                $1, $2, $3, $4, $5, $6 / 1e3, $7 }'
paste <(col "$tmp/loop.jsonl" elapsed) <(col "$tmp/loop.jsonl" ll_per_token) \
  <(col "$tmp/managed.jsonl" elapsed) <(col "$tmp/managed.jsonl" ll_per_token) |
  awk -F'\t' '
    { le[NR] = $1; ll[NR] = $2; me[NR] = $3; ml[NR] = $4; n = NR }
    END {
      target = ll[n]
      for (i = 1; i <= n; i++) if (lr == 0 && ll[i] >= target) lr = i
      for (i = 1; i <= n; i++) if (mr == 0 && ml[i] != "-" && ml[i] >= target) mr = i
      printf "loop final LL %.4f: loop reaches it at sweep %d, %.3f s\n", target, lr, le[lr]
      if (mr == 0) {
        printf "managed does not reach it within %d sweeps (its final LL %.4f, %.3f s)\n", n, ml[n], me[n]
      } else {
        printf "managed reaches it at sweep %d, %.3f s\n", mr, me[mr]
        printf "managed / loop seconds to loop final LL: %.2f\n", me[mr] / le[lr]
      }
    }'
