#!/usr/bin/env bash
# bench/lda_kept.sh: the LDA bound of issue 35 before and after the
# tokens' topics stayed on the executors (scheduler/dist_resid.c,
# orion__resid_keep): apps/lda/lda.lua on KOS (K = 100 by default) on 2
# and 4 local executors, a BASE build and this tree in interleaved
# rounds (base, here; here, base; ...), each run's --metrics read for
#   - the bytes through the driver per sampling sweep (driver_bytes of
#     the iterations without a log-likelihood evaluation: 2 .. ITERS-1),
#     and per token;
#   - the driver's share of the sweep's bytes, driver / (driver + peer);
#   - the seconds per sweep (the app's seconds: sampling only).
# Each figure is the median over those iterations of a run, then the
# median over the rounds (min-max after it); "here/base" is the median of
# the rounds' ratios.  The load average is printed before and after:
# the machine is shared, so only a ratio from the same rounds means
# anything.
#
#   git worktree add ../base <rev> && (cd ../base && ./configure && make)
#   bench/lda_kept.sh ../base          # ROUNDS=3 ITERS=8 K=100 EXECS="2 4"
#
# ORION_DATA (default ../shared/data) holds uci-bow-kos/docword.kos.txt.gz;
# CORPUS names another UCI docword file instead.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
. bench/interleave.sh

base=${1:?usage: bench/lda_kept.sh BASE_CHECKOUT}
base=$(cd "$base" && pwd)
rounds=${ROUNDS:-3}
iters=${ITERS:-8}
k=${K:-100}
execs=${EXECS:-2 4}
runs_count lda_kept.sh "$rounds"
data=${ORION_DATA:-$here/../shared/data}
corpus=${CORPUS:-$data/uci-bow-kos/docword.kos.txt.gz}
if [ ! -r "$corpus" ]; then
  echo "bench/lda_kept.sh: no corpus at $corpus (set ORION_DATA or CORPUS)" >&2
  exit 2
fi
if [ "$iters" -lt 3 ]; then
  echo "bench/lda_kept.sh: ITERS must be 3 or more" >&2
  exit 2
fi
for t in "$base" "$here"; do
  if [ ! -x "$t/orion-driver" ]; then
    echo "bench/lda_kept.sh: $t has no built orion-driver" >&2
    exit 2
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run SIDE N ROUND: one run; its per-run medians appended to
# $tmp/SIDE-N.{bytes,share,secs} and the token count to $tmp/tokens.
run() {
  local side=$1 n=$2 r=$3 dir=$base m
  [ "$side" = here ] && dir=$here
  m=$tmp/m-$side-$n-$r.jsonl
  (cd "$dir" && ORION_LUA_PATH="$dir/lua/?.lua" ./orion-driver --quiet --executors "$n" \
     --metrics "$m" apps/lda/lda.lua --corpus "$corpus" --k "$k" --iters "$iters" \
     --ll-every "$iters" --top 0) > "$tmp/out-$side-$n-$r" 2>&1 ||
    { echo "bench/lda_kept.sh: $side on $n executors failed:" >&2; cat "$tmp/out-$side-$n-$r" >&2; return 1; }
  sed -n 's/^# lda: .* \([0-9]*\) tokens.*/\1/p' "$tmp/out-$side-$n-$r" > "$tmp/tokens"
  awk -v last="$iters" '
    function num(key,   s) { s = $0; if (!sub(".*\"" key "\":", "", s)) return ""; sub(/[^0-9.eE+-].*/, "", s); return s }
    { i = num("iter") + 0
      if (i >= 2 && i < last) print num("driver_bytes"), num("peer_bytes"), num("seconds") }' "$m" > "$tmp/it"
  awk '{ print $1 }' "$tmp/it" > "$tmp/col"; echo "$(stat3 "$tmp/col" | cut -d' ' -f1)" >> "$tmp/$side-$n.bytes"
  awk '{ print $1 / ($1 + $2) }' "$tmp/it" > "$tmp/col"; echo "$(stat3 "$tmp/col" | cut -d' ' -f1)" >> "$tmp/$side-$n.share"
  awk '{ print $3 }' "$tmp/it" > "$tmp/col"; echo "$(stat3 "$tmp/col" | cut -d' ' -f1)" >> "$tmp/$side-$n.secs"
}

echo "# lda_kept: $(basename "$corpus"), K=$k, $iters iterations a run, $rounds rounds, executors: $execs"
echo "# base $base ($(git -C "$base" rev-parse --short HEAD 2>/dev/null || echo '?')), here $here ($(git rev-parse --short HEAD))"
echo "# load average before: $(loadavg)"
for r in $(seq 1 "$rounds"); do
  for n in $execs; do
    if [ $((r % 2)) -eq 1 ]; then order="base here"; else order="here base"; fi
    for side in $order; do run "$side" "$n" "$r"; done
  done
done
echo "# load average after: $(loadavg)"
tokens=$(cat "$tmp/tokens")
echo "# $tokens tokens"
printf '%4s  %-28s %-28s %9s\n' execs "base" "here" "here/base"
for n in $execs; do
  for what in bytes share secs; do
    paste "$tmp/here-$n.$what" "$tmp/base-$n.$what" | awk '$2 > 0 { print $1 / $2 }' > "$tmp/ratio"
    read -r bm blo bhi _ < <(stat3 "$tmp/base-$n.$what")
    read -r hm hlo hhi _ < <(stat3 "$tmp/here-$n.$what")
    read -r rm _ < <(stat3 "$tmp/ratio")
    case $what in
      bytes) label="driver B/sweep" ;;
      share) label="driver share" ;;
      secs) label="s/sweep" ;;
    esac
    printf '%4s  %-28s %-28s %9.3f  %s\n' "$n" "$(spread "$bm" "$blo" "$bhi")" \
      "$(spread "$hm" "$hlo" "$hhi")" "$rm" "$label"
    if [ "$what" = bytes ]; then
      awk -v b="$bm" -v h="$hm" -v t="$tokens" -v n="$n" \
        'BEGIN { printf "%4s  %-28.3f %-28.3f %9s  driver B/token/sweep\n", n, b / t, h / t, "" }'
    fi
  done
done
