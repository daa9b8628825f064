#!/bin/sh
# The driver's share of a 2-D loop (issue 35: its CPU under 5% of one
# host's at 8 hosts), on local executors:
# 1. t/cluster/late.lua, a compiled 2-D SGD loop under dispatch ahead,
#    sends every block at the loop's start and the executors hold the
#    reports of blocks they run back to back (executor/exec_late.c): from
#    the second epoch on, the driver's socket reads and writes in a pass
#    of 64 blocks are at most 6 per executor (its start, LOOP_END, the
#    reports, LOOP_DONE, and room for a report sent on its time limit or
#    a heartbeat), not some per block as with ORION_NO_LATE=1 (more than
#    6 per executor on 4); the RMSEs and the final W and H are the same
#    bits on 1 to 4 executors, held or not, as in the driver itself.
# 2. apps/mf/mf.lua's --metrics: the bytes through the driver an epoch
#    (epoch 2 on) do not grow with the model: the same at K=8 and K=64
#    (10% and a KiB for heartbeats), while the bytes between executors
#    grow with H, and under 5% of them at K=64.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

run() { # NAME EXECUTORS [ENV=VALUE]: late.lua's stdout and stderr in $tmp/NAME.*
  name=$1 n=$2
  shift 2
  if ! env "$@" timeout 120 "$drv" --quiet --executors "$n" "$src/t/cluster/late.lua" \
       > "$tmp/$name.out" 2> "$tmp/$name.err"; then
    fail "late.lua on $n executors ($*) failed:"
    cat "$tmp/$name.err"
    return 1
  fi
}
# io_of NAME EPOCH: the driver's reads and writes in that epoch's loop
io_of() { awk -v e="$2" '$1 == "io" && $2 == e { print $4 }' "$tmp/$1.err"; }

run in 0 ORION_NO_LATE= || exit 1
grep -q '^final W' "$tmp/in.out" || { fail "no final line:"; cat "$tmp/in.out"; }

for n in 1 2 3 4; do
  run late-$n "$n" ORION_NO_LATE= || continue
  cmp -s "$tmp/in.out" "$tmp/late-$n.out" ||
    fail "$n executors: not the bits of the run inside the driver: $(diff "$tmp/in.out" "$tmp/late-$n.out")"
  grep -q 'c$' "$tmp/late-$n.out" || fail "$n executors: the loop is not compiled: $(cat "$tmp/late-$n.out")"
  for e in 2 3; do
    io=$(io_of late-$n $e)
    echo "$n executors, epoch $e: the driver's reads and writes: $io (64 blocks)"
    [ -n "$io" ] && [ "$io" -le $((6 * n)) ] ||
      fail "$n executors, epoch $e: $io reads and writes (want <= $((6 * n)))"
  done
done
if run nolate-4 4 ORION_NO_LATE=1; then
  cmp -s "$tmp/in.out" "$tmp/nolate-4.out" || fail "ORION_NO_LATE=1 changed the bits"
  for e in 2 3; do
    io=$(io_of nolate-4 $e)
    echo "4 executors, ORION_NO_LATE=1, epoch $e: the driver's reads and writes: $io"
    [ -n "$io" ] && [ "$io" -gt 24 ] || fail "ORION_NO_LATE=1, epoch $e: only $io reads and writes"
  done
fi

for k in 8 64; do
  if ! timeout 300 "$drv" --quiet --executors 2 --metrics "$tmp/mf-$k.jsonl" \
       "$src/apps/mf/mf.lua" --synthetic 3000,2000,60000 --k "$k" --epochs 3 \
       > "$tmp/mf-$k.out" 2>&1; then
    fail "mf.lua --k $k failed:"
    cat "$tmp/mf-$k.out"
  fi
done
# epoch driver_bytes peer_bytes, epochs 2 and 3
per_epoch() {
  awk '/"epoch":/ { e = $0; sub(/.*"epoch":/, "", e); sub(/[,}].*/, "", e)
         d = $0; sub(/.*"driver_bytes":/, "", d); sub(/[,}].*/, "", d)
         p = $0; sub(/.*"peer_bytes":/, "", p); sub(/[,}].*/, "", p)
         if (e >= 2) print e, d, p }' "$1"
}
per_epoch "$tmp/mf-8.jsonl" > "$tmp/k8"
per_epoch "$tmp/mf-64.jsonl" > "$tmp/k64"
[ "$(wc -l < "$tmp/k8")" -eq 2 ] && [ "$(wc -l < "$tmp/k64")" -eq 2 ] ||
  fail "mf.lua --metrics: not 2 epochs after the first: $(cat "$tmp/k8" "$tmp/k64")"
paste "$tmp/k8" "$tmp/k64" | while read -r e d8 p8 _ d64 p64; do
  echo "mf.lua, 2 executors, epoch $e: through the driver $d8 bytes at K=8, $d64 at K=64; between executors $p8 and $p64"
  awk -v a="$d8" -v b="$d64" 'BEGIN { exit !(b <= a * 1.1 + 1024 && a <= b * 1.1 + 1024) }' ||
    echo "FAIL: epoch $e: the driver's bytes grew with K: $d8 at K=8, $d64 at K=64"
  awk -v p8="$p8" -v p64="$p64" -v d="$d64" 'BEGIN { exit !(p64 > 4 * p8 && d < 0.05 * p64) }' ||
    echo "FAIL: epoch $e: between executors $p8 (K=8) and $p64 (K=64), through the driver $d64"
done > "$tmp/mf.txt"
cat "$tmp/mf.txt"
fails=$((fails + $(grep -c '^FAIL' "$tmp/mf.txt")))
[ "$fails" -eq 0 ] || exit 1
echo "PASS: a 2-D loop costs the driver a few reads and writes per executor, and its bytes do not grow with the model"
