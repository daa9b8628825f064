#!/bin/sh
# Bytes between executors per pass of a rotation (issue 35's lead: did
# each host receive H twice per epoch, or did peer_bytes count twice?).
# t/cluster/peer_bytes.lua, a fixed-size MF, on 2 and 4 local executors:
# from the second epoch on (the first one's H comes from the driver), the
# training pass and the test pass each move between executors at most
# executors x (bytes of H) x 1.02 (each executor receives each part of H
# once per pass; 2% for framing) and at least executors x (bytes of H) x
# (executors - 1) / executors (the parts an executor does not start with
# must reach it).  So an epoch's peer_bytes (both passes) is twice H a
# host: once for training, once for the test pass; no part is fetched once
# per space partition and no byte is counted twice.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for n in 2 4; do
  out=$tmp/out-$n
  if ! timeout 120 "$drv" --quiet --executors "$n" "$src/t/cluster/peer_bytes.lua" \
       > "$out" 2> "$tmp/err-$n"; then
    fail "peer_bytes.lua on $n executors failed:"
    cat "$tmp/err-$n"
    continue
  fi
  [ "$(grep -c '^epoch ' "$out")" -eq 3 ] || { fail "$n executors: not 3 epochs:"; cat "$out"; continue; }
  while read -r _ e _ tr _ te _ h _ sch; do
    echo "$n executors, epoch $e: train $tr test $te bytes between executors; H $h bytes; $sch"
    [ "$sch" = 2d ] || fail "$n executors, epoch $e: schedule $sch (want 2d)"
    [ "$e" -ge 2 ] || continue
    for v in "train $tr" "test $te"; do
      awk -v b="${v#* }" -v h="$h" -v n="$n" \
        'BEGIN { exit !(b <= n * h * 1.02 && b >= n * h * (n - 1) / n) }' ||
        fail "$n executors, epoch $e: the ${v% *} pass moved ${v#* } bytes between executors (want $n x $h x [$(( n - 1 ))/$n, 1.02])"
    done
  done < "$out"
done
[ "$fails" -eq 0 ] || exit 1
echo "PASS: a pass of a rotation moves H once per executor"
