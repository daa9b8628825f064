#!/bin/sh
# partitions = "auto" (lua/pfor_auto.h; the choice on simulated costs:
# t/test_sim's sim_choose cases): t/cluster/auto_parts.lua on 3 local
# executors.  The "auto" training loop runs its first two passes with the
# default 8 parts; after the second (and the fourth, unless it switched)
# the choice weighs the predicted gain against the switch's cost over as
# many passes as ran; --metrics records the first weighing and a switch
# ({"auto_partitions", "ran_partitions": 8, the predictions, the chosen
# one no slower, "switch_seconds" and "pass"; a switch
# only where it pays by the 5% margin}), and each pass runs with the
# setting of the last record before it; the test loop, which gives its
# partitions, keeps them (4) even under --partitions auto.  Before the
# choice the results are the default's, the same bits as on 2 executors.
# partitions = "bogus": an error naming it and the call site.
# --partitions auto is taken, --partitions autox refused (exit 2).
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
script=$src/t/cluster/auto_parts.lua
line=$(grep -n 'local st = orion.parallel_for' "$script" | cut -d: -f1)

for opt in "" "--partitions auto"; do
  rm -f "$tmp/m3"
  # shellcheck disable=SC2086
  if ! timeout 120 "$drv" --quiet --executors 3 $opt --metrics "$tmp/m3" \
       "$script" > "$tmp/o3" 2> "$tmp/e3"; then
    fail "3 executors $opt: the run failed:"; cat "$tmp/e3"; continue
  fi
  n=$(grep -c '"auto_partitions"' "$tmp/m3")
  [ "$n" -ge 1 ] && [ "$n" -le 2 ] ||
    fail "$opt: $n choices recorded (want 1 or 2: the training loop's at pass 2, and a switch at 4)"
  grep '"auto_partitions"' "$tmp/m3" | awk -v l="$line" '
    function num(k,   v) { v = $0; if (!sub(".*\"" k "\":", "", v)) { print "no " k ": " $0; bad = 1 }
      sub(/[,}].*/, "", v); return v + 0 }
    {
      if ($0 !~ ("\"loop\":\"[^\"]*auto_parts.lua:" l "\"")) { print "loop: " $0; bad = 1 }
      if ($0 !~ /"ran_partitions":8[,}]/) { print "ran_partitions: " $0; bad = 1 }
      if ($0 !~ /"auto_assign":"(static|dynamic)"/) { print "auto_assign: " $0; bad = 1 }
      a = num("predicted_auto_seconds"); r = num("predicted_ran_seconds"); b = num("predicted_best_seconds")
      sw = num("switch_seconds"); p = num("pass"); k = p; ap = num("auto_partitions")
      if (!(a > 0 && a <= r && b <= a)) { print "predicted " a " (best " b ") against " r; bad = 1 }
      if (!(sw >= 0) || (p != 2 && p != 4)) { print "switch " sw " at pass " p; bad = 1 }
      # A switch only where it pays over as many passes as ran (k) by the
      # 5% margin; a
      # record that keeps the default is the first evaluation.
      if (ap != 8 && !(a * k + sw < 0.95 * r * k)) { print "switched at a loss: " $0; bad = 1 }
      if (ap == 8 && (a != r || p != 2)) { print "kept: " $0; bad = 1 }
    } END { exit bad }' > "$tmp/why" || { fail "$opt: the record:"; cat "$tmp/why"; }
  # Each pass runs with the setting of the last record before it.
  grep '"auto_partitions"' "$tmp/m3" |
    sed 's/.*"auto_partitions":\([0-9]*\).*"pass":\([0-9]*\).*/\2 \1/' > "$tmp/chosen"
  awk -v cf="$tmp/chosen" '
    BEGIN { while ((getline x < cf) > 0) { split(x, f, " "); at[f[1] + 0] = f[2] + 0 } }
    $1 == "epoch" { want = 8
      bp = 0; for (p in at) if (p + 0 < $2 + 0 && p + 0 > bp) { bp = p + 0; want = at[p] }
      if ($4 != want) { print "epoch " $2 ": train_parts " $4 " (want " want ")"; bad = 1 }
      if ($6 != 4) { print "epoch " $2 ": test_parts " $6 " (want 4)"; bad = 1 }
      n++ }
    END { if (n != 5) { print n " epochs"; bad = 1 }; exit bad }' "$tmp/o3" > "$tmp/why" ||
    { fail "$opt: the partitions a pass:"; cat "$tmp/why"; }
done

# Before the choice: the default's bits, on any executor count.
if timeout 120 "$drv" --quiet --executors 2 "$script" > "$tmp/o2" 2> "$tmp/e2"; then
  head -2 "$tmp/o2" > "$tmp/a"; head -2 "$tmp/o3" > "$tmp/b"
  cmp -s "$tmp/a" "$tmp/b" || { fail "epochs 1-2 differ between 2 and 3 executors:"; cat "$tmp/a" "$tmp/b"; }
else
  fail "2 executors: the run failed:"; cat "$tmp/e2"
fi

"$drv" --quiet --executors 2 "$script" bogus > "$tmp/o" 2>&1 && fail "partitions = \"bogus\" ran"
grep -q "auto_parts.lua:$line: parallel_for: partitions must be a list of integers or \"auto\", not \"bogus\"" "$tmp/o" ||
  { fail "partitions = \"bogus\": no message naming it:"; cat "$tmp/o"; }

"$drv" --partitions autox "$script" > "$tmp/o" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--partitions autox: exit $rc (want 2)"
grep -q "^orion-driver: --partitions needs a number 1..4096 or auto, not 'autox'" "$tmp/o" ||
  { fail "--partitions autox: no message naming it:"; cat "$tmp/o"; }
[ "$fails" -eq 0 ] || exit 1
echo "PASS: partitions = \"auto\""
