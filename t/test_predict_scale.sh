#!/bin/sh
# bench/predict_scale (issue 35): a described workload on clusters of
# several sizes, on cases worked out by hand (t/test_sim has the
# simulator's own): 1 host of 2 CPUs running 8 x 8 one-element blocks of
# 1 s back to back (64.0004 s: 100 us to the first block, 100 us for the
# last report, 200 us to end the loop); the partitions following the
# hosts (8 at least, one space part a host, two with --parts-per-host 2,
# never more than the rows); --json FILE with one line per host count
# that orion-driver plot draws; bad input: exit 2 naming the option.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
ps=$(dirname "$drv")/bench/predict_scale # built by make check
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$ps" --name one --rows 8,8 --elements 64 --sec-per-elem 2 \
  --cluster 2c:8kbit --hosts 1 > "$tmp/out" 2>&1 || fail "1 host: exit $?"
grep -q '^one  *1  *8  *64\.0004  *64 .* 1\.0000  compute$' "$tmp/out" ||
  { fail "1 host: not 64.0004 s on 8 parts, efficiency 1.0000:"; cat "$tmp/out"; }

# 40 x 30 rows: 8 parts on 4 hosts, 16 on 16, 30 (the time rows) on 32;
# with 2 a host, 32 on 16 hosts.
"$ps" --name p --rows 40,30 --elements 1200 --sec-per-elem 1e-3 \
  --row-bytes 100 --cluster 1c:1gbit --hosts 4,16,32 --json "$tmp/p.jsonl" \
  > "$tmp/out" 2>&1 || fail "partitions: exit $?"
for want in '"hosts":4,"log2_hosts":2,"partitions":8,"time_partitions":8,' \
  '"hosts":16,"log2_hosts":4,"partitions":16,"time_partitions":16,' \
  '"hosts":32,"log2_hosts":5,"partitions":32,"time_partitions":30,'; do
  grep -q "$want" "$tmp/p.jsonl" || { fail "no $want in:"; cat "$tmp/p.jsonl"; }
done
[ "$(wc -l < "$tmp/p.jsonl")" -eq 3 ] || fail "not 3 JSON lines"
[ "$(grep -c '^p ' "$tmp/out")" -eq 3 ] || fail "not 3 table rows"
"$ps" --name p --rows 40,30 --elements 1200 --sec-per-elem 1e-3 \
  --cluster 1c:1gbit --hosts 16 --parts-per-host 2 > "$tmp/out" 2>&1
grep -q '^p  *16  *32 ' "$tmp/out" || { fail "2 a host: not 32 parts:"; cat "$tmp/out"; }
"$drv" plot --x log2_hosts --y efficiency -o "$tmp/p.svg" "$tmp/p.jsonl" \
  > "$tmp/out" 2>&1 && grep -q '<svg' "$tmp/p.svg" ||
  { fail "orion-driver plot cannot draw the JSON lines:"; cat "$tmp/out"; }

bad() { # WANT-IN-MESSAGE ARGS...
  want=$1
  shift
  "$ps" "$@" > "$tmp/out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "$*: exit $rc (want 2)"
  grep -q -- "$want" "$tmp/out" || { fail "$*: no '$want' in:"; cat "$tmp/out"; }
}
ok="--elements 10 --sec-per-elem 1 --hosts 2"
bad "--rows '5'" --rows 5 $ok --cluster 1c:1gbit
bad "--cluster '1c'" --rows 5,5 $ok --cluster 1c
bad "--hosts '0'" --rows 5,5 --elements 10 --sec-per-elem 1 --hosts 0 --cluster 1c:1gbit
bad "--sec-per-elem '-1'" --rows 5,5 --elements 10 --sec-per-elem -1 --hosts 2 --cluster 1c:1gbit
bad "--partitions '5000'" --rows 5,5 $ok --cluster 1c:1gbit --partitions 5000
bad "are needed" --rows 5,5 --hosts 2
bad "--hosts ','" --rows 5,5 --elements 10 --sec-per-elem 1 --hosts , --cluster 1c:1gbit
bad "--name 'a\"b'" --name 'a"b' --rows 5,5 $ok --cluster 1c:1gbit
bad "--window '0'" --rows 5,5 $ok --cluster 1c:1gbit --window 0
bad "--json '$tmp/no/such'" --rows 5,5 $ok --cluster 1c:1gbit --json "$tmp/no/such"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: bench/predict_scale"
