#!/bin/sh
# orion-driver --predict (issue 35): t/cluster/peer_bytes.lua (a 2-D
# training loop and a test loop, three epochs) on 2 local executors with
# --predict 4x0.4c:400mbit --metrics: for each of the two call sites, a
# prediction after its first and its second pass (no more), naming its
# FILE:LINE; in the metrics, predicted_pass_seconds equals the sum of the
# breakdown (with the fixed costs), the efficiency is in (0, 1], host_scale >= 1,
# driver_block_seconds > 0, driver_exec_bytes > 0 (each executor gets the
# loop body), exchange_elems_per_byte > 0 (the executors' CPU in the
# network path, measured), the bottleneck is one of the
# five, hosts is the cluster's (the same on 8 hosts), and the costs measured
# (elements, sec_per_elem, part_bytes, driver_block_bytes, space_parts,
# time_parts, for bench/predict_scale.sh) are there.  A malformed cluster: a usage error (exit
# 2) naming it, before the script runs (a burst without its unit too).  Every
# pass of each loop is recorded once as measured_pass_seconds.  A list of clusters
# (8x0.4c:400mbit,1x1c:1gbit): a prediction for each.  (The simulator's own values are
# checked exactly by t/test_sim.)
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
script=$src/t/cluster/peer_bytes.lua
l1=$(grep -n 'local st = orion.parallel_for' "$script" | cut -d: -f1)
l2=$(grep -n 'local est = orion.parallel_for' "$script" | cut -d: -f1)

for spec in 4x0.4c:400mbit 8x0.4c:400mbit,1x1c:1gbit/256kb; do
  m=$tmp/m-$(echo "$spec" | tr / _).jsonl
  if ! timeout 120 "$drv" --quiet --executors 2 --predict "$spec" --metrics "$m" \
       "$script" > "$tmp/out" 2> "$tmp/err"; then
    fail "--predict $spec: the run failed:"
    cat "$tmp/err"
    continue
  fi
  for one in $(echo "$spec" | tr ',' ' '); do
    for l in "$l1" "$l2"; do
      for p in 1 2; do
        # (the script's name as Lua shortens it: a long path, in make
        # distcheck's build, begins with "...")
        grep -q "^predict: parallel_for at .*peer_bytes.lua:$l, from pass $p, on $one: .* s a pass (compute .*; bottleneck .*; efficiency " "$tmp/out" ||
          fail "--predict $spec: no prediction on $one for line $l from pass $p"
      done
    done
  done
  nc=$(echo "$spec" | tr ',' '\n' | wc -l)
  [ "$(grep -c '^predict: parallel_for at' "$tmp/out")" -eq $((4 * nc)) ] ||
    fail "--predict $spec: not $((4 * nc)) predictions (2 loops x 2 passes x $nc)"
  [ "$(grep -c '"predicted_pass_seconds"' "$m")" -eq $((4 * nc)) ] ||
    fail "--predict $spec: not $((4 * nc)) metrics lines"
  # One line a prediction: the sum, the efficiency, the bottleneck, hosts.
  awk -v spec="$spec" '
    /"predicted_pass_seconds"/ {
      split("compute_seconds rows_seconds exchange_seconds exchange_elems_per_byte driver_seconds slow_host_seconds fixed_seconds predicted_pass_seconds efficiency hosts elements sec_per_elem part_bytes driver_block_bytes driver_block_seconds driver_exec_bytes host_scale space_parts time_parts", k, " ")
      for (i in k) { re = "\"" k[i] "\":[-0-9.e+]*"; if (match($0, re)) v[k[i]] = substr($0, RSTART + length(k[i]) + 3, RLENGTH - length(k[i]) - 3) + 0; else { print "no " k[i] ": " $0; bad = 1 } }
      s = v["compute_seconds"] + v["rows_seconds"] + v["exchange_seconds"] + v["driver_seconds"] + v["slow_host_seconds"] + v["fixed_seconds"]
      if (s - v["predicted_pass_seconds"] > 1e-9 * s || v["predicted_pass_seconds"] - s > 1e-9 * s) { print "breakdown " s " != " v["predicted_pass_seconds"]; bad = 1 }
      if (!(v["efficiency"] > 0 && v["efficiency"] <= 1)) { print "efficiency " v["efficiency"]; bad = 1 }
      if (!match($0, /"predict":"[0-9]+x/) || v["hosts"] != substr($0, RSTART + 11, RLENGTH - 12) + 0) { print "hosts " v["hosts"]; bad = 1 }
      if ($0 !~ /"bottleneck":"(compute|rows in flight|exchange|driver|slow host|fixed)"/) { print "bottleneck: " $0; bad = 1 }
      if ($0 !~ /"loop":"[^"]*peer_bytes.lua:[0-9]+"/) { print "loop: " $0; bad = 1 }
      if (!(v["host_scale"] >= 1)) { print "host_scale " v["host_scale"]; bad = 1 }
      if (!(v["driver_block_seconds"] > 0)) { print "driver_block_seconds " v["driver_block_seconds"]; bad = 1 }
      if (!(v["driver_exec_bytes"] > 0)) { print "driver_exec_bytes " v["driver_exec_bytes"]; bad = 1 }
      # the executors measured CPU in the network path (the messages of
      # the driver, the rows they hand over): the exchange costs something
      if (!(v["exchange_elems_per_byte"] > 0)) { print "exchange_elems_per_byte " v["exchange_elems_per_byte"]; bad = 1 }
    }
    END { exit bad }' "$m" > "$tmp/why" || { fail "--predict $spec: metrics:"; cat "$tmp/why"; }
  # Every pass measured: 3 epochs of each of the two loops, passes 1..3.
  for l in "$l1" "$l2"; do
    for p in 1 2 3; do
      [ "$(grep -c "\"loop\":\"[^\"]*peer_bytes.lua:$l\",\"measured_pass_seconds\":[0-9.e+-]*,\"pass\":$p}" "$m")" -eq 1 ] ||
        fail "--predict $spec: not one measured_pass_seconds for line $l, pass $p"
    done
  done
done

# The driver's bytes once per executor (the loop body, the stale rows a
# first block carries) are the same per executor on 1 executor and on 2
# (what the model takes them as; their sum grows with the executors):
# the training loop's second pass, within 10%.
exec_bytes() {
  grep '"predicted_pass_seconds"' "$1" | grep "peer_bytes.lua:$l1\"" | grep '"pass":2' |
    sed -n '1s/.*"driver_exec_bytes":\([0-9.e+]*\).*/\1/p'
}
if timeout 120 "$drv" --quiet --executors 1 --predict 1x1c:1gbit --metrics "$tmp/m1" \
     "$script" > "$tmp/out" 2> "$tmp/err"; then
  awk -v a="$(exec_bytes "$tmp/m1")" -v b="$(exec_bytes "$tmp/m-4x0.4c:400mbit.jsonl")" \
    'BEGIN { exit !(a > 0 && b > 0 && a <= 1.1 * b && b <= 1.1 * a) }' ||
    fail "driver_exec_bytes on 1 executor $(exec_bytes "$tmp/m1"), on 2 $(exec_bytes "$tmp/m-4x0.4c:400mbit.jsonl")"
else
  fail "--executors 1: the run failed:"; cat "$tmp/err"
fi

for bad in 4x0.4c 0x1c:1gbit 4x1c:10gbps 1x1c:1gbit, 1x1c:1gbit,4x 4x1c:1gbit/256; do
  "$drv" --predict "$bad" "$script" > "$tmp/out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "--predict $bad: exit $rc (want 2)"
  grep -q "^orion-driver: --predict '\\{0,1\\}[^ ]*'\\{0,1\\}: " "$tmp/out" ||
    { fail "--predict $bad: no message naming it:"; cat "$tmp/out"; }
  if grep -q '^epoch' "$tmp/out"; then fail "--predict $bad: the script ran"; fi
done
[ "$fails" -eq 0 ] || exit 1
echo "PASS: orion-driver --predict"
