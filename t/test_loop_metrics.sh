#!/bin/sh
# orion-driver --loop-metrics (issue 35): t/cluster/peer_bytes.lua (a
# training loop and a test loop, three epochs) on 2 local executors with
# --metrics: one line per parallel_for call, 6 in all, each site's calls
# numbered 1, 2, 3 and named by FILE:LINE; each line's loop_peer_bytes is
# the bytes the script itself saw from that call (its stdout); two
# executors' compute / wait / idle seconds, none negative, their sum
# within the loop's seconds, the training loop computing; the driver's
# CPU seconds counted (the total never falls, a call's within it).  Run
# in the driver: one executor's numbers.  Without --loop-metrics: no such
# line; without --metrics: a usage error (exit 2) that says so.
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

# check NEXEC METRICS OUT: the loop lines against the script's own output.
check() {
  awk -v n="$1" -v l1="$l1" -v l2="$l2" -v out="$3" '
    BEGIN { while ((getline line < out) > 0) if (line ~ /^epoch /) {
              split(line, f, " "); tp[f[2]] = f[4]; ep[f[2]] = f[6] } }
    function num(k,   re) { re = "\"" k "\":[-0-9.e+]*"
      if (!match($0, re)) { print "no " k ": " $0; bad = 1; return 0 }
      return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 }
    function str(k,   re) { re = "\"" k "\":\"[^\"]*\""
      if (!match($0, re)) { print "no " k ": " $0; bad = 1; return "" }
      return substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5) }
    /"call":/ {
      lines++
      loop = str("loop"); c = num("call"); line = loop; sub(/.*:/, "", line)
      if (loop !~ /peer_bytes\.lua:[0-9]+$/ || (line != l1 && line != l2)) { print "loop " loop; bad = 1 }
      if (c != ++seen[line]) { print "call " c " at line " line ", want " seen[line]; bad = 1 }
      want = line == l1 ? tp[c] : ep[c]
      if (num("loop_peer_bytes") != want) { print "line " line " call " c ": peer bytes " num("loop_peer_bytes") ", the script saw " want; bad = 1 }
      if (num("loop_executors") != n) { print "executors " num("loop_executors"); bad = 1 }
      s = num("loop_seconds"); sum = 0
      split("exec_compute_s exec_wait_s exec_idle_s", k, " ")
      for (i = 1; i <= 3; i++) {
        m = split(str(k[i]), v, " ")
        if (m != n) { print k[i] ": " m " numbers, want " n; bad = 1 }
        for (j = 1; j <= m; j++) { if (v[j] < 0) { print k[i] " negative"; bad = 1 }
          sum += v[j]; if (i == 1) comp[line] += v[j] } }
      if (sum / n > s + 0.005) { print "compute + wait + idle " sum / n " a host > the loop s " s; bad = 1 }
      t = num("driver_cpu_total_s"); d = num("driver_cpu_s")
      if (t < last || d < 0 || d > t || t <= 0) { print "driver CPU " d " of " t " after " last; bad = 1 }
      last = t
    }
    END { if (lines != 6) { print lines " loop lines, want 6"; bad = 1 }
          if (!(comp[l1] > 0)) { print "the training loop computed nothing"; bad = 1 }
          exit bad }' "$2"
}

m=$tmp/m2.jsonl
if ! timeout 120 "$drv" --quiet --executors 2 --loop-metrics --metrics "$m" \
     "$script" > "$tmp/out" 2> "$tmp/err"; then
  fail "2 executors: the run failed"; cat "$tmp/err"
else
  check 2 "$m" "$tmp/out" || fail "2 executors: the loop lines"
fi
m=$tmp/m1.jsonl
if ! timeout 120 "$drv" --quiet --executors 0 --loop-metrics --metrics "$m" "$script" \
     > "$tmp/out1" 2> "$tmp/err"; then
  fail "in the driver: the run failed"; cat "$tmp/err"
else
  check 1 "$m" "$tmp/out1" || fail "in the driver: the loop lines"
fi
m=$tmp/m0.jsonl
timeout 120 "$drv" --quiet --executors 2 --metrics "$m" "$script" > /dev/null 2> "$tmp/err" ||
  fail "without --loop-metrics: the run failed"
! grep -q '"call":' "$m" 2> /dev/null || fail "loop lines without --loop-metrics"
timeout 60 "$drv" --loop-metrics "$script" > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- '--loop-metrics needs --metrics' "$tmp/err" ||
  fail "--loop-metrics without --metrics: exit $rc, $(cat "$tmp/err")"
[ $fails -eq 0 ] && echo "ok: --loop-metrics"
[ $fails -eq 0 ]
