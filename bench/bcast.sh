#!/usr/bin/env bash
# bench/bcast.sh: a refreshed server array broadcast to the executors of a
# namespaced cluster (issue 17; needs root):
#
#   ./configure && make && bench/bcast.sh
#   SIZE_MB=32 EXECS=4 RATE=1gbit REPS=2 bench/bcast.sh
#
# Runs bench/bcast.lua (a new SIZE_MB-megabyte f32 array, default 256,
# read by one parallel_for on every executor; REPS times, default 2) on
# EXECS (default 4) executors in network namespaces with
# bench/netcluster.sh, every link and the driver's own (--driver-rate)
# shaped to RATE (default 1gbit), once per path (ORION_BCAST):
#   chain  the driver sends the array once, in pieces of ORION_BCAST_CHUNK
#          bytes, to executor 0, which passes each piece on to executor 1
#          as soon as it has it, and so on (the default)
#   star   the driver sends every executor the whole array
#   shard  the path before chains: each owner gets its quarter in
#          LOAD_BODY, then every executor fetches the other quarters
# and prints, per path, the best rep's loop seconds, that over one array's
# transfer time at the link rate (SIZE_MB * 8 / RATE), and the bytes the
# driver sent and those between executors; then chain / one transfer (the
# issue's goal: 1.3 or less) and star / chain.  Every path must give the
# same sums.  Without root it is skipped (exit 0, or 1 under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."

mb=${SIZE_MB:-256}
execs=${EXECS:-4}
rate=${RATE:-1gbit}
reps=${REPS:-2}
case $mb$execs$reps in
  *[!0-9]*) echo "bench/bcast.sh: SIZE_MB, EXECS and REPS are whole numbers" >&2
            exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "bench/bcast.sh: FAIL: network namespaces need root" >&2
    exit 1
  fi
  echo "bench/bcast.sh: skipped: network namespaces need root"
  exit 0
fi
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/bcast.sh: build first (./configure && make)" >&2
  exit 1
fi
# The link rate in bits per second, from tc's syntax (1gbit, 100mbit).
bps=$(awk -v r="$rate" 'BEGIN {
  n = r + 0; u = tolower(substr(r, length(n "") + 1))
  m = -1
  if (u == "gbit") m = 1e9; else if (u == "mbit") m = 1e6
  else if (u == "kbit") m = 1e3; else if (u == "bit" || u == "") m = 1
  print (m < 0 ? -1 : n * m) }')
[ "$bps" != -1 ] || { echo "bench/bcast.sh: RATE: use gbit, mbit or kbit" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for path in chain star shard; do
  ORION_BCAST=$path bench/netcluster.sh \
    -n "$execs" --rate "$rate" --driver-rate "$rate" \
    --logs "$tmp/logs-$path" -- --quiet \
    bench/bcast.lua "$mb" "$reps" > "$tmp/$path.out" 2> "$tmp/$path.err" ||
    { echo "bench/bcast.sh: ORION_BCAST=$path failed:" >&2
      cat "$tmp/$path.out" "$tmp/$path.err" >&2
      tail -n 5 "$tmp/logs-$path"/*.log >&2; exit 1; }
done

one=$(awk -v mb="$mb" -v bps="$bps" 'BEGIN { printf "%.4f", mb * 8e6 / bps }')
printf 'broadcast of a %s MB f32 server array to %s executors, every link (the driver'"'"'s too) at %s, %s cores\n' \
  "$mb" "$execs" "$rate" "$(nproc)"
printf 'one transfer at the link rate: %s s\n' "$one"
printf '%-6s %9s %11s %10s %9s\n' path seconds "/ transfer" "driver MB" "peer MB"
best() { # FILE FIELD: the field of the fastest rep
  awk -v f="$2" '/^rep / { for (i = 1; i < NF; i++) v[$i] = $(i + 1)
    if (best == "" || v["seconds"] + 0 < best + 0) { best = v["seconds"]; out = v[f] } }
    END { print out }' "$1"
}
for path in chain star shard; do
  awk -v p="$path" -v s="$(best "$tmp/$path.out" seconds)" -v one="$one" \
      -v d="$(best "$tmp/$path.out" driver)" \
      -v q="$(best "$tmp/$path.out" peer)" 'BEGIN {
    printf "%-6s %9.3f %11.2f %10.1f %9.1f\n", p, s, s / one, d / 1e6, q / 1e6 }'
done
sums() { awk '/^rep / { print $NF }' "$1"; }
if [ "$(sums "$tmp/chain.out")" != "$(sums "$tmp/star.out")" ] ||
   [ "$(sums "$tmp/chain.out")" != "$(sums "$tmp/shard.out")" ]; then
  echo "bench/bcast.sh: FAIL: the paths read different sums" >&2
  exit 1
fi
awk -v c="$(best "$tmp/chain.out" seconds)" -v s="$(best "$tmp/star.out" seconds)" \
    -v one="$one" 'BEGIN {
  printf "chain / one transfer: %.2f (goal: 1.3 or less); star / chain: %.2f\n",
    c / one, s / c }'
