#!/bin/sh
# Who may talk to whom (issue 18; docs/security.md):
#
#  1. A fake driver gets no secret and runs no code.  An executor holding
#     the job's token (with --allow-io, so that only authentication stands
#     in the way) connects to t/hostile's fake driver, which records every
#     byte and answers what it can without the token: the token is nowhere
#     in what it got.  Then the attacker starts a real driver with the
#     token it learned (or, having learned none, a guess) on a job whose
#     body writes a file, and relays the executor to it: the file never
#     appears, and the executor exits 3 saying authentication failed.
#  2. A wrong token: an executor with another token than the driver's is
#     refused; the executor says authentication failed, and the driver
#     logs the refused connection.
#  3. 200 connections held open by a hostile client on the executors' own
#     address do not keep 4 executors from registering: the job finishes
#     with the right result, and the driver logs the refusals in a few
#     lines (a count per interval), not one line each.
#  4. `--launcher manual` takes the token the user exported (issue 32;
#     it made its own and printed that): an executor with the same
#     ORION_TOKEN joins, the token is not printed, and a guessable one is
#     refused before the job starts, naming ORION_TOKEN.
set -u
. "${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/t/netjob.sh"
[ -x "$tools/t/hostile" ] || skip "t/hostile is not built (make check builds it)"
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail=0
secret=7f3a9c1e5d2b48a6b0c4e8f1a3d5c7e9
# A wrong but well-formed token (all zeros would be refused as guessable).
guess=5c0e8b2a9f4d71e6a3b8c0d5f2e9a417

bad() {
  echo "FAIL: $*"
  fail=1
}

# ---- 1. a fake driver ----------------------------------------------------
"$tools/t/hostile" fake-driver "$tmp/sniff" 3 >"$tmp/fport" &
pids="$pids $!"
wait_file "$tmp/fport" 10 || bad "the fake driver did not start"
ORION_TOKEN=$secret ORION_REGISTER_TIMEOUT=1 "$exe" --allow-io \
  --driver "127.0.0.1:$(cat "$tmp/fport")" --id 0 2>"$tmp/x1"
st=$?
[ $st -eq 3 ] || bad "executor against a fake driver: exit $st, not 3"
grep -q "authentication failed" "$tmp/x1" ||
  bad "the executor does not say authentication failed: $(cat "$tmp/x1")"
if grep -q "$secret" "$tmp/sniff"; then
  bad "the fake driver received the token"
  learned=$secret
else
  learned=$guess
fi
echo "fake driver: got $(wc -c <"$tmp/sniff") bytes, token not among them: $([ $learned = $guess ] && echo yes || echo NO)"
echo "executor: $(cat "$tmp/x1")"

# The attacker's real driver, with what it learned, and the relay.
cat >"$tmp/pwn.lua" <<EOF
local orion = require "orion"
orion.parallel_for(orion.zeros { 4 }, function(i)
  local f = io.open("$tmp/pwned", "w")
  f:write("ran on an executor")
  f:close()
end)
EOF
# A port nothing on this machine uses (another job listening there would
# answer the relay in the attacker's driver's place).
aport=$(free_port $$)
SLURM_PROCID=0 SLURM_NTASKS=2 ORION_DRIVER=127.0.0.1:$aport ORION_TOKEN=$learned \
  "$drv" --launcher slurm --allow-io --register-timeout 5 "$tmp/pwn.lua" \
  >"$tmp/d2" 2>&1 &
dpid=$!
pids="$pids $dpid"
# Until the attacker's driver listens (a loaded machine can take seconds):
# a relay to a closed port would end the handshake before it starts.
hexport=$(printf '%04X' "$aport")
i=0
while [ $i -lt 100 ] && ! grep -q ":$hexport 00000000:0000 0A" /proc/net/tcp; do
  sleep 0.1
  i=$((i + 1))
done
kill -0 "$dpid" 2>/dev/null ||
  bad "the attacker's driver is not running: $(cat "$tmp/d2")"
"$tools/t/relay" "$aport" none up 0 "$tmp/rs" >"$tmp/rport" &
pids="$pids $!"
wait_file "$tmp/rport" 10 || bad "the relay did not start"
ORION_TOKEN=$secret ORION_REGISTER_TIMEOUT=1 "$exe" --allow-io \
  --driver "127.0.0.1:$(cat "$tmp/rport")" --id 0 2>"$tmp/x2"
st=$?
wait "$dpid"
[ $st -eq 3 ] || bad "executor relayed to the attacker's driver: exit $st"
grep -q "authentication failed" "$tmp/x2" ||
  bad "the relayed executor does not say authentication failed: $(cat "$tmp/x2")"
[ -e "$tmp/pwned" ] && bad "the attacker's body ran on the executor"
echo "relayed to the attacker's driver: $(cat "$tmp/x2")"

# ---- 2. a wrong token ----------------------------------------------------
"$drv" --launcher manual --executors 1 --listen 127.0.0.1 --register-timeout 2 \
  "$src/docs/examples/first.lua" >/dev/null 2>"$tmp/d3" &
dpid=$!
pids="$pids $dpid"
manual_cmd "$tmp/d3" 0 || bad "the driver printed no command: $(cat "$tmp/d3")"
dport=$port
ORION_TOKEN=$guess ORION_REGISTER_TIMEOUT=1 "$exe" --driver "127.0.0.1:$dport" \
  --id 0 2>"$tmp/x3"
st=$?
wait "$dpid"
[ $st -eq 3 ] || bad "executor with a wrong token: exit $st"
grep -q "could not register with the driver at 127.0.0.1:$dport in [0-9]* tries" "$tmp/x3" &&
  grep -q "authentication failed: the peer that answered does not hold this end's token" "$tmp/x3" ||
  bad "wrong token, executor: $(cat "$tmp/x3")"
grep -q "refused a connection from 127.0.0.1:[0-9]*: connection closed by the peer during the authentication handshake" "$tmp/d3" ||
  bad "wrong token, driver: $(cat "$tmp/d3")"
echo "wrong token: $(cat "$tmp/x3")"

# ---- 3. 200 connections held open ----------------------------------------
"$drv" --launcher manual --executors 4 --listen 127.0.0.1 --register-timeout 30 \
  "$src/docs/examples/first.lua" >"$tmp/o4" 2>"$tmp/d4" &
dpid=$!
pids="$pids $dpid"
manual_cmd "$tmp/d4" 3 || bad "the driver printed no commands: $(cat "$tmp/d4")"
dport=$port
"$tools/t/hostile" hold "$dport" 200 3 >"$tmp/h4" &
hpid=$!
pids="$pids $hpid"
wait_file "$tmp/h4" 20 || bad "the hostile client did not connect"
for id in 0 1 2 3; do
  ORION_TOKEN=$token "$exe" --driver "127.0.0.1:$dport" --id $id 2>"$tmp/e$id" &
  pids="$pids $!"
done
wait "$dpid"
st=$?
wait "$hpid"
[ $st -eq 0 ] || bad "4 executors beside 200 held connections: exit $st: $(cat "$tmp/d4")"
grep -q "^sum	324.0	blocks	4	elements	12" "$tmp/o4" || bad "wrong output: $(cat "$tmp/o4")"
lines=$(grep -c "refused" "$tmp/d4")
[ "$lines" -le 8 ] || bad "$lines lines of refusals (want a count per interval)"
echo "200 held: $(cat "$tmp/h4" | tr '\n' ' '); driver exit $st, $lines refusal lines:"
grep "refused" "$tmp/d4"

# ---- 4. --launcher manual with ORION_TOKEN exported ----------------------
ORION_TOKEN=$secret "$drv" --launcher manual --executors 1 --listen 127.0.0.1 \
  --register-timeout 20 "$src/docs/examples/first.lua" >"$tmp/o5" 2>"$tmp/d5" &
dpid=$!
pids="$pids $dpid"
manual_cmd "$tmp/d5" 0 || bad "the driver printed no command: $(cat "$tmp/d5")"
grep -q "$secret" "$tmp/d5" && bad "the driver printed the exported token"
grep -q "ORION_TOKEN=" "$tmp/d5" &&
  bad "the command sets another ORION_TOKEN: $(cat "$tmp/d5")"
grep -q "run on each host, with this driver's ORION_TOKEN exported there:" \
  "$tmp/d5" || bad "the driver does not say to export ORION_TOKEN: $(cat "$tmp/d5")"
ORION_TOKEN=$secret ORION_REGISTER_TIMEOUT=5 "$exe" --driver "127.0.0.1:$port" \
  --id 0 2>"$tmp/x5"
wait "$dpid"
st=$?
[ $st -eq 0 ] || bad "manual launcher, exported token: exit $st: $(cat "$tmp/d5" "$tmp/x5")"
grep -q "^sum	324.0	blocks	4	elements	12" "$tmp/o5" ||
  bad "manual launcher, exported token: wrong output: $(cat "$tmp/o5")"
echo "manual launcher, exported token: exit $st, $(head -1 "$tmp/d5")"
for weak in letmein 0123456789abcdef0123456789abcdef; do
  ORION_TOKEN=$weak "$drv" --launcher manual --executors 1 --register-timeout 1 \
    "$src/docs/examples/first.lua" >/dev/null 2>"$tmp/d6"
  st=$?
  [ $st -eq 2 ] || bad "manual launcher, ORION_TOKEN=$weak: exit $st, not 2"
  grep -q "^orion-driver: ORION_TOKEN .*a job's secret needs at least 128" \
    "$tmp/d6" || bad "manual launcher, ORION_TOKEN=$weak: $(cat "$tmp/d6")"
  grep -q "$weak" "$tmp/d6" && bad "the refusal shows the token: $(cat "$tmp/d6")"
  echo "manual launcher, ORION_TOKEN=$weak: exit $st, $(cat "$tmp/d6")"
done
exit $fail
