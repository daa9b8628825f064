#!/bin/sh
# partitions = "auto" (lua/pfor_auto.h; the choice on simulated costs:
# t/test_sim's sim_choose cases): t/cluster/auto_parts.lua on 3 local
# executors.  The "auto" training loop runs its first two passes with the
# default 8 parts, then with the setting chosen after the second, which
# --metrics records once ({"auto_partitions", "ran_partitions": 8, the two
# predictions, the chosen one no slower}); the test loop, which gives its
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
  [ "$n" -eq 1 ] || fail "$opt: $n choices recorded (want 1, the training loop's)"
  grep '"auto_partitions"' "$tmp/m3" | awk -v l="$line" '{
      if ($0 !~ ("\"loop\":\"[^\"]*auto_parts.lua:" l "\"")) { print "loop: " $0; bad = 1 }
      if ($0 !~ /"ran_partitions":8[,}]/) { print "ran_partitions: " $0; bad = 1 }
      if ($0 !~ /"auto_assign":"(static|dynamic)"/) { print "auto_assign: " $0; bad = 1 }
      a = $0; sub(/.*"predicted_auto_seconds":/, "", a); sub(/[,}].*/, "", a)
      r = $0; sub(/.*"predicted_ran_seconds":/, "", r); sub(/[,}].*/, "", r)
      if (!(a + 0 > 0 && a + 0 <= r + 0)) { print "predicted " a " against " r; bad = 1 }
    } END { exit bad }' > "$tmp/why" || { fail "$opt: the record:"; cat "$tmp/why"; }
  chosen=$(sed -n 's/.*"auto_partitions":\([0-9]*\).*/\1/p' "$tmp/m3")
  awk -v p="${chosen:-x}" '
    $1 == "epoch" { want = ($2 <= 2) ? 8 : p
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
