#!/bin/sh
# A driver that passes the authentication but sends a key outside the
# iterated array (issue 18: everything received is checked where it is
# decoded).  t/mitm holds the job's token, so its records pass every tag:
# it stands for a compromised or broken driver.  Between the driver and
# both executors of t/scripts/tamper_job.lua it sets the first key of the
# first RUN_BLOCK that carries a sparse block's elements to 2^40.  The
# executor must refuse the frame before the block runs, naming the
# frame, the block, the element and the dimension, and exit 3; the driver
# must end the job with exit 3 naming that executor, never print a
# result.
set -u
. "${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/t/netjob.sh"
[ -x "$tools/t/mitm" ] || skip "t/mitm is not built (make check builds it)"
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}
awk 'BEGIN { srand(7); for (n = 0; n < 3000; n++)
  printf "%d %d %d\n", 1 + int(rand() * 60), 1 + int(rand() * 50), 1 + int(rand() * 5) }' \
  >"$tmp/r.txt"

"$drv" --launcher manual --executors 2 --listen 127.0.0.1 \
  --register-timeout 20 "$src/t/scripts/tamper_job.lua" "$tmp/r.txt" \
  >"$tmp/out" 2>"$tmp/err" &
dpid=$!
pids="$pids $dpid"
manual_cmd "$tmp/err" 1 || { cat "$tmp/err"; bad "the driver printed no commands"; exit 1; }
"$tools/t/mitm" "$port" "$token" "$tmp/status" >"$tmp/mport" &
pids="$pids $!"
wait_file "$tmp/mport" 5 || bad "t/mitm did not start"
for id in 0 1; do
  ORION_TOKEN=$token ORION_REGISTER_TIMEOUT=20 "$exe" \
    --driver "127.0.0.1:$(cat "$tmp/mport")" --id $id 2>"$tmp/x$id" &
  eval "x$id=\$!"
done
pids="$pids $x0 $x1"
i=0
while kill -0 "$dpid" 2>/dev/null; do
  i=$((i + 1))
  [ $i -gt 600 ] && { bad "the driver did not end in 60 s"; kill -9 "$dpid"; break; }
  sleep 0.1
done
wait "$dpid"
st=$?
wait "$x0"
s0=$?
wait "$x1"
s1=$?
echo "t/mitm: $(cat "$tmp/status" 2>/dev/null || echo "changed nothing")"
grep -q "^applied RUN_BLOCK block [0-9]*: element 1's key 1099511627776$" \
  "$tmp/status" 2>/dev/null || bad "t/mitm found no RUN_BLOCK with elements"
msg="parallel_for body failed on executor \([01]\): malformed RUN_BLOCK frame: block [0-9]*'s element 1 has a key outside dimension 1 (1\.\.60)\$"
echo "driver: exit $st: $(grep "malformed" "$tmp/err")"
echo "executors: exit $s0 and $s1"
grep -q "$msg" "$tmp/err" ||
  bad "the driver does not report the executor's refusal: $(cat "$tmp/err")"
[ $st -eq 1 ] || bad "the driver's exit $st, not 1 (the loop failed)"
[ $s0 -eq 0 ] && [ $s1 -eq 0 ] || bad "executors' exits $s0 and $s1, not 0 (the driver's SHUTDOWN)"
grep -q "checksum\|epoch 2" "$tmp/out" && bad "the driver printed a result after the refusal"
exit $fail
