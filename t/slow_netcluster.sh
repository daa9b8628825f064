#!/bin/sh
# The slow set's test of the cluster on one machine with real links
# (bench/netcluster.sh: network namespaces on a bridge, issue 16):
#
#  1. On 1, 2 and 4 namespaced executors, in one driver per count
#     (t/cluster/suite.lua): the golden corpus (t/analysis/*.lua but
#     golden.lua and pending_*; each file passes with at least as many
#     "golden ok: " lines as it has G.check lines, as t/test_cluster.c's
#     goldens_on checks: ordered loops bit-identical to the serial run) and
#     the cluster scripts t/test_cluster.c runs with plain expectations
#     (acc_order, buffer_totals in its 4 variants, flush_points, server_ro,
#     sharded add and fn, stats, tiers, managed), with the same values and
#     messages; then body_error.lua in a driver of its own (exit 1, the
#     message).  Then t/cluster/bcast.lua (a read-only server array
#     broadcast along the chain of executors, in 1000-byte pieces) on 4
#     executors at 1 gbit, the driver's link too: the bits of the
#     in-process run.
#  1b. flush = "managed" on 1, 2 and 4 namespaced executors behind 100 mbit
#     links with a budget of 0.1 mbit/s (t/cluster/managed.lua, longer
#     blocks): the totals of flush = "loop" exactly, and updates sent early
#     (managed_bytes > 0) while others waited.
#  2. Failures, on 2 or 3 executors running t/cluster/long_loop.lua: an
#     executor killed with SIGKILL, one stopped with SIGSTOP (the driver's
#     heartbeat timeout; the script kills it after --grace), and a link
#     cut with `ip link set DEV down`: exit 3 with one message naming the
#     executor (for the cut, within 10 s of it), the healthy executors
#     saying why they stop, the cut one exiting by itself after its own
#     heartbeat timeout; and a link cut while the executors are idle
#     between loops: the cut executor exits by itself within 20 s (its
#     connection's TCP_USER_TIMEOUT), and the next loop ends the job.
#  3. The script interrupted with SIGINT and SIGTERM: exit 130 and 143;
#     virtual hosts (--cpu 0.25 --driver-cpu 0.5): each executor and the
#     driver in a cgroup of its own with that quota, throttled, links at
#     Q x 1 gbit, the cgroups removed after.
# After every run: no namespace, link or executor of that run is left.
#
# Needs root and working `ip netns`; skips (77) otherwise, except under
# CI=true, where that is a failure.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
export ORION_DRIVER_BIN=${ORION_DRIVER:-$src/orion-driver}
export ORION_EXECUTOR=${ORION_EXECUTOR:-$(dirname "$ORION_DRIVER_BIN")/orion-executor}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
export ORION_SRCDIR=$src
net="$src/bench/netcluster.sh"

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
probe="oncprobe$$"
if ! ip netns add "$probe" >/dev/null 2>&1; then
  skip "\`ip netns\` does not work here"
fi
ip netns del "$probe"

tmp=$(mktemp -d /tmp/orion-netcluster-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
# has FILE TEXT [WHAT]: FILE holds TEXT.
has() {
  grep -qF -- "$2" "$1" || {
    fail "${3:-$1}: no \"$2\" in:"
    sed 's/^/    /' "$1" >&2
  }
}
now() { date +%s.%N; }
# elapsed T0: seconds since T0, 2 decimals.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# The run's ID, from "netcluster: executor 0 in namespace onc5-0 (...".
run_id() {
  sed -n 's/^netcluster: executor 0 in namespace onc\([0-9]*\)-0 .*/\1/p' "$1" |
    head -n 1
}
# The pid of executor K, from the same lines.
exec_pid() {
  sed -n "s/^netcluster: executor $2 in namespace .*, pid \\([0-9]*\\)\$/\\1/p" \
    "$1" | head -n 1
}

# left_over ERR WHAT: nothing of the run whose stderr is ERR is left
# (namespaces, links, executors).
left_over() {
  local err=$1 what=$2 id pid k
  id=$(run_id "$err")
  if [ -z "$id" ]; then
    fail "$what: no executor line in its stderr"
    return
  fi
  if ip netns list | grep -q "^onc$id-"; then
    fail "$what: namespaces left: $(ip netns list | grep "^onc$id-" | tr '\n' ' ')"
  fi
  if ip -o link show | grep -Eq ": onc${id}(br|v[0-9]+|x[0-9]+)[@:]"; then
    fail "$what: links left: $(ip -o link show | grep -Eo "onc${id}(br|v[0-9]+|x[0-9]+)" | tr '\n' ' ')"
  fi
  for ((k = 0; k < 64; k++)); do
    pid=$(exec_pid "$err" "$k")
    [ -n "$pid" ] || break
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = orion-executor ]; then
      fail "$what: executor $k (pid $pid) is still running"
    fi
  done
}

# ---------------------------------------------------------------------------
# 1. The goldens and the cluster scripts on 1, 2 and 4 executors.
# ---------------------------------------------------------------------------

goldens=()
for f in "$src"/t/analysis/*.lua; do
  case ${f##*/} in golden.lua | pending_*) continue ;; esac
  goldens+=("$f")
done
c="$src/t/cluster"
scripts=("$c/acc_order.lua 12" "$c/buffer_totals.lua block"
  "$c/buffer_totals.lua loop" "$c/buffer_totals.lua 3"
  "$c/buffer_totals.lua fn" "$c/flush_points.lua" "$c/server_ro.lua"
  "$c/sharded.lua add" "$c/sharded.lua fn" "$c/stats.lua" "$c/tiers.lua"
  "$c/managed.lua")

# part OUT SPEC: the lines script SPEC printed in suite output OUT.
part() {
  awk -v b="== begin $2" -v e="== end $2: " \
    'index($0, e) == 1 { exit } on { print } $0 == b { on = 1 }' "$1"
}
# stat PART LOOP KEY: KEY's number on the line "loop LOOP: ..." of PART.
stat() {
  grep "^loop $2: " "$1" | head -n 1 |
    sed -n "s/.*$3[ ]\\([0-9][0-9]*\\).*/\\1/p"
}

# Scripts whose results must not depend on where they run: the exact bits
# of det.lua's loops, the guide's sgd example's and the MF app's RMSEs (in
# --metrics, full precision), against one run inside the driver.  They run
# first, so that their arrays get the same ids in every run.
same=("$c/det.lua" "$src/docs/examples/sgd.lua" "$src/apps/mf/mf.lua --epochs 3")
"$ORION_DRIVER_BIN" --quiet --executors 0 --metrics "$tmp/ref.jsonl" \
  "$src/t/cluster/suite.lua" "${same[@]}" > "$tmp/ref.out" 2>&1 ||
  { fail "the in-process run of ${same[*]}"; cat "$tmp/ref.out" >&2; }
rmses() { grep -o '"[a-z_]*rmse":[^,}]*' "$1" | head -n "$2"; }
nref=$(rmses "$tmp/ref.jsonl" 1000 | wc -l)
[ "$nref" -ge 8 ] || fail "only $nref RMSEs recorded in the in-process run"

declare -A checks_on
for n in 1 2 4; do
  out="$tmp/suite-$n.out" err="$tmp/suite-$n.err"
  t0=$(now)
  timeout -k 10 300 "$net" -n "$n" --logs "$tmp/logs-suite-$n" -- -v \
    --metrics "$tmp/metrics-$n.jsonl" "$src/t/cluster/suite.lua" \
    "${same[@]}" "${goldens[@]}" "${scripts[@]}" > "$out" 2> "$err"
  rc=$?
  echo "suite on $n namespaced executors: exit $rc in $(elapsed "$t0") s"
  [ "$rc" -eq 0 ] || { fail "suite on $n executors: exit $rc"; tail -n 30 "$err" >&2; }
  left_over "$err" "suite on $n executors"
  has "$err" "executor $((n - 1)) registered from 10.79." "suite on $n: stderr"
  # Every script ran to its end.
  for s in "${goldens[@]}" "${scripts[@]}"; do
    grep -qxF "== end $s: ok" "$out" ||
      fail "$s on $n executors: $(grep -F "== end $s: " "$out" || echo "did not end")"
  done
  # The goldens: each passes at least its G.check count.
  total=0
  for f in "${goldens[@]}"; do
    want=$(grep -c '^G\.check' "$f")
    got=$(part "$out" "$f" | grep -c "golden ok: ")
    total=$((total + got))
    [ "$got" -ge "$want" ] ||
      fail "${f##*/} on $n executors: $got checks passed of $want"
  done
  tiers=$(grep -c "golden tiers ok: " "$out")
  echo "  goldens: $total checks in ${#goldens[@]} files, $tiers bodies" \
       "bit-identical in both tiers"
  [ "$total" -ge 40 ] || fail "only $total golden checks on $n executors"
  [ "$tiers" -ge 55 ] || fail "only $tiers golden bodies compared between tiers"
  checks_on[$n]=$total

  p="$tmp/part"
  # (its last line, "det: N executors, ...", says where it ran)
  part "$tmp/ref.out" "$c/det.lua" | grep -v '^det: ' > "$tmp/det-ref"
  part "$out" "$c/det.lua" | grep -v '^det: ' > "$p"
  cmp -s "$tmp/det-ref" "$p" ||
    fail "det.lua on $n namespaced executors differs from in-process: $(diff "$tmp/det-ref" "$p" | head -n 4)"
  if [ "$(rmses "$tmp/metrics-$n.jsonl" "$nref")" = "$(rmses "$tmp/ref.jsonl" "$nref")" ]; then
    echo "  det.lua, the sgd example and MF (3 epochs): bit-identical to in-process"
  else
    fail "RMSEs on $n namespaced executors differ from in-process: $(diff <(rmses "$tmp/ref.jsonl" "$nref") <(rmses "$tmp/metrics-$n.jsonl" "$nref") | head -n 4)"
  fi
  part "$out" "$c/acc_order.lua 12" > "$p"
  has "$p" "distinct sums over 12 runs: 1 (0)" "acc_order on $n"
  for v in block loop 3 fn; do
    part "$out" "$c/buffer_totals.lua $v" > "$p"
    has "$p" "totals ok: 1445 tokens, 7 topics, variant $v, $n executors" \
      "buffer_totals $v on $n"
  done
  part "$out" "$c/managed.lua" > "$p"
  has "$p" "managed ok: 7200 tokens, 7 topics, 60 words: totals of flush = \"managed\" equal flush = \"loop\"'s, $n executors" \
    "managed on $n"
  has "$p" "early sends: yes" "managed on $n"
  part "$out" "$c/flush_points.lua" > "$p"
  blocks=$(sed -n 's/^flush block ok: \([0-9]*\) applications per topic, \1 blocks.*/\1/p' "$p")
  [ -n "$blocks" ] || fail "flush_points on $n: no \"flush block ok: B applications per topic, B blocks\""
  # flush = "loop" applies each block's writes apart, in block order
  has "$p" "flush loop ok: $blocks applications per topic, $blocks blocks" \
    "flush_points on $n"
  has "$p" "flush 40 ok: 40 applications per topic" "flush_points on $n"
  has "$p" ", $n executors" "flush_points on $n"
  part "$out" "$c/server_ro.lua" > "$p"
  has "$p" "array scale: server (read-only)" "server_ro on $n"
  has "$p" "array Y: local" "server_ro on $n"
  has "$p" "server_ro ok: 5000 elements, schedule none, $n executors" \
    "server_ro on $n"
  for v in add fn; do
    part "$out" "$c/sharded.lua $v" > "$p"
    has "$p" "sharded ok" "sharded $v on $n"
    w=$(stat "$p" 1 shard_writes)
    p1=$(stat "$p" 1 peer_bytes)
    m2=$(stat "$p" 2 bytes_moved)
    p2=$(stat "$p" 2 peer_bytes)
    p6=$(stat "$p" 6 peer_bytes)
    if [ -z "$w" ] || [ -z "$p1" ] || [ -z "$m2" ] || [ -z "$p2" ] || [ -z "$p6" ]; then
      fail "sharded $v on $n: loop lines missing:"; cat "$p" >&2
      continue
    fi
    [ "$w" -gt 0 ] || fail "sharded $v on $n: the owners applied no writes"
    # With one executor there are no peers; else the reads come from the
    # owners, not the driver, and loop 6 fetches nothing again.
    [ "$n" -eq 1 ] || [ "$p1" -gt 0 ] || fail "sharded $v on $n: no peer bytes in loop 1"
    [ "$p2" -ge $(((n - 1) * 48000 * 9 / 10)) ] ||
      fail "sharded $v on $n: loop 2 peer_bytes $p2: reads not from the owners"
    [ "$m2" -lt $((n * 48000 / 2)) ] ||
      fail "sharded $v on $n: loop 2 bytes_moved $m2: the driver sent the totals"
    [ "$p6" -lt $((n * 1000)) ] ||
      fail "sharded $v on $n: loop 6 peer_bytes $p6: unchanged rows fetched again"
  done
  part "$out" "$c/stats.lua" > "$p"
  for l in 1 2; do
    [ "$(stat "$p" $l executors)" = "$n" ] || fail "stats on $n: loop $l executors: $(grep "^loop $l" "$p")"
  done
  [ "$(stat "$p" 1 executor_seconds)" = "$n" ] || fail "stats on $n: executor_seconds: $(grep "^loop 1" "$p")"
  b1=$(stat "$p" 1 bytes_moved) b2=$(stat "$p" 2 bytes_moved)
  if [ -z "$b1" ] || [ -z "$b2" ] || [ "$b1" -le 0 ] || [ "$b2" -ge $((b1 / 10)) ]; then
    fail "stats on $n: bytes_moved ${b1:-?} then ${b2:-?} (the blocks did not stay)"
  fi
  part "$out" "$c/tiers.lua" > "$p"
  for t in control floats ints random sgd; do
    has "$p" "tiers agree: $t" "tiers on $n"
  done
  has "$p" "tier c refused: tier \"c\": " "tiers on $n"
  has "$p" "a call to 'print' is outside the compiled subset" "tiers on $n"
  has "$p" "fast within tolerance: sgd (max relative difference " "tiers on $n"

  # body_error: its own driver (the error ends it).
  out="$tmp/body-$n.out" err="$tmp/body-$n.err"
  timeout -k 10 120 "$net" -n "$n" -- -v "$c/body_error.lua" > "$out" 2> "$err"
  rc=$?
  [ "$rc" -eq 1 ] || fail "body_error on $n executors: exit $rc (want 1)"
  left_over "$err" "body_error on $n executors"
  pfor=$(grep -n -- '-- @pfor' "$c/body_error.lua" | cut -d: -f1)
  eline=$(grep -n -- '-- @error' "$c/body_error.lua" | cut -d: -f1)
  line=$(grep -m1 "parallel_for body failed on executor " "$err")
  [ -n "$line" ] || fail "body_error on $n: no body failure message"
  printf '%s\n' "$line" > "$p"
  has "$p" "body_error.lua:$pfor:" "body_error on $n"
  has "$p" "body_error.lua:$eline:" "body_error on $n"
  has "$p" "boom at 33, 4" "body_error on $n"
  grep -Eq "executor [0-9]+, element \\(33, 4\\)" "$p" ||
    fail "body_error on $n: no \"executor K, element (33, 4)\" in: $line"
  has "$err" "stack traceback:" "body_error on $n"
  has "$err" "executor $((n - 1)) registered from 10.79." "body_error on $n"
  if grep -q "not reached" "$out"; then fail "body_error on $n: the script went on"; fi
done
# A check inside a loop may run more than once, but the same number of
# times whatever the executor count.
[ "${checks_on[1]}" = "${checks_on[2]}" ] && [ "${checks_on[1]}" = "${checks_on[4]}" ] ||
  fail "golden checks: ${checks_on[1]} on 1 executor, ${checks_on[2]} on 2, ${checks_on[4]} on 4"

# A broadcast along the chain over shaped links.
"$ORION_DRIVER_BIN" --quiet --executors 0 "$c/bcast.lua" > "$tmp/bcast-ref" \
  2>&1 || fail "bcast.lua in process"
out="$tmp/bcast.out" err="$tmp/bcast.err"
ORION_BCAST_CHUNK=1000 timeout -k 10 300 "$net" -n 4 --rate 1gbit \
  --driver-rate 1gbit --logs "$tmp/logs-bcast" -- --quiet "$c/bcast.lua" \
  > "$out" 2> "$err"
rc=$?
echo "bcast.lua on 4 namespaced executors: exit $rc"
[ "$rc" -eq 0 ] || { fail "bcast.lua on 4 executors: exit $rc"; tail -n 30 "$err" >&2; }
grep -v '^bytes loop' "$tmp/bcast-ref" > "$tmp/bcast-want"
cmp -s "$tmp/bcast-want" "$out" ||
  fail "bcast.lua on 4 namespaced executors differs from the in-process run"
left_over "$err" "bcast.lua on 4 executors"

# ---------------------------------------------------------------------------
# 1b. flush = "managed" behind slow links, with a budget smaller than the
#     updates: some go early, the others wait, the totals are exact.
# ---------------------------------------------------------------------------

for n in 1 2 4; do
  out="$tmp/managed-$n.out" err="$tmp/managed-$n.err"
  t0=$(now)
  timeout -k 10 180 "$net" -n "$n" --rate 100mbit -- -v --bandwidth-mbps 0.1 \
    "$c/managed.lua" 20000 > "$out" 2> "$err"
  rc=$?
  echo "managed.lua on $n namespaced executors at 100 mbit, budget 0.1 mbit/s:" \
       "exit $rc in $(elapsed "$t0") s; $(grep '^early bytes' "$out")"
  [ "$rc" -eq 0 ] || { fail "managed.lua on $n: exit $rc"; tail -n 20 "$err" >&2; }
  left_over "$err" "managed.lua on $n executors"
  has "$out" "managed ok: 7200 tokens, 7 topics, 60 words: totals of flush = \"managed\" equal flush = \"loop\"'s, $n executors" \
    "managed.lua on $n at 100 mbit"
  has "$out" "early sends: yes" "managed.lua on $n at 100 mbit"
done

# ---------------------------------------------------------------------------
# 2. Failures during t/cluster/long_loop.lua.
# ---------------------------------------------------------------------------

# start_long NAME N [NETCLUSTER-OPTS...] -- [DRIVER-OPTS...]: starts the
# long loop on N namespaced executors in the background (pid in $job) and
# waits until it runs; out/err/logs in $tmp/NAME.*.
start_long() {
  local name=$1 n=$2 i
  shift 2
  local nopts=()
  while [ "$1" != -- ]; do nopts+=("$1"); shift; done
  shift
  # No timeout(1) here (wait_job bounds the wait): it would send a signal
  # to its whole process group, the executors included.  env resets SIGINT,
  # which a background job starts with ignored.
  env --default-signal=INT "$net" -n "$n" \
    --logs "$tmp/$name.logs" "${nopts[@]}" -- -v "$@" \
    "$c/long_loop.lua" 400 40000000 > "$tmp/$name.out" 2> "$tmp/$name.err" &
  job=$!
  for ((i = 0; i < 600; i++)); do
    grep -q "^loop started" "$tmp/$name.out" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q "^loop started" "$tmp/$name.out"; then
    fail "$name: the long loop never started"
    cat "$tmp/$name.err" >&2
    return 1
  fi
  sleep 0.5 # its blocks run
  return 0
}

# wait_job SECONDS: waits for $job; its exit code in $rc (124: still
# running after SECONDS, then stopped).
wait_job() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$job" 2>/dev/null; then
    kill -TERM "$job"
    wait "$job"
    rc=124
    return
  fi
  wait "$job"
  rc=$?
}

# lost NAME K ERR: the driver's one failure message names executor K of
# this run and the loop; the other executors say why they stop.
lost() {
  local name=$1 k=$2 err=$3 id line j n
  id=$(run_id "$err")
  [ "$(grep -c "cluster failure: " "$err")" -eq 1 ] ||
    fail "$name: not one cluster failure message"
  line=$(grep -m1 "orion-driver: cluster failure: " "$err")
  printf '%s\n' "$line" > "$tmp/line"
  has "$tmp/line" "executor $k (10.79.$id.$((k + 2)):" "$name"
  has "$tmp/line" "in the parallel_for at $c/long_loop.lua:$(grep -n -- '-- @pfor' "$c/long_loop.lua" | cut -d: -f1)" "$name"
  echo "  $name: $line"
  n=$(ls "$tmp/$name.logs" | wc -l)
  for ((j = 0; j < n; j++)); do
    [ "$j" -ne "$k" ] || continue
    has "$tmp/$name.logs/exec-$j.log" \
      "orion-executor $j: stopping: the driver ended the job (executor $k (10.79.$id.$((k + 2)):" \
      "$name: executor $j's log"
  done
  if grep -q "^checksum" "$tmp/$name.out"; then fail "$name: the loop finished"; fi
}

# lose_one NAME SIGNAL NETCLUSTER-OPTS... -- DRIVER-OPTS...: SIGNAL to
# executor 1 of 2 during the long loop; the job ends with exit 3 naming it
# and nothing is left.  pid: the executor's.
lose_one() {
  local name=$1 sig=$2
  shift 2
  start_long "$name" 2 "$@" || return 1
  pid=$(exec_pid "$tmp/$name.err" 1)
  kill -"$sig" "$pid"
  t0=$(now)
  wait_job 30
  echo "SIG$sig to executor 1: exit $rc after $(elapsed "$t0") s"
  [ "$rc" -eq 3 ] || fail "$name: exit $rc (want 3)"
  lost "$name" 1 "$tmp/$name.err"
  left_over "$tmp/$name.err" "$name"
}

# An executor killed: its connection closes at once.
lose_one kill9 KILL --
# An executor stopped: the driver's heartbeat timeout (3 s) finds it; the
# script kills it after --grace 2.
if lose_one stop STOP --grace 2 -- --heartbeat-timeout 3; then
  has "$tmp/stop.err" " while running block " stop
  has "$tmp/stop.err" "netcluster: executor 1 (pid $pid) still ran 2 s after the driver ended; killing it" stop
fi

# A link cut: executor 1's veth (bridge side) goes down.  The driver hears
# nothing more from it and ends the job within its heartbeat timeout (5 s);
# executor 1 hears nothing more from the driver and exits after its own
# (ORION_HEARTBEAT_TIMEOUT, here 6 s).
export ORION_HEARTBEAT_TIMEOUT=6
if start_long cut 3 --; then
  id=$(run_id "$tmp/cut.err")
  t0=$(now)
  ip link set "onc${id}v1" down
  for ((i = 0; i < 300; i++)); do
    grep -q "cluster failure: " "$tmp/cut.err" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  took=$(elapsed "$t0")
  echo "link of executor 1 cut: the driver's failure message after $took s"
  awk -v t="$took" 'BEGIN { exit !(t < 10) }' ||
    fail "cut: the job ended $took s after the link cut (want < 10 s)"
  wait_job 30
  [ "$rc" -eq 3 ] || fail "cut: exit $rc (want 3)"
  lost cut 1 "$tmp/cut.err"
  has "$tmp/cut.err" "has not answered for 5 s" cut
  has "$tmp/cut.logs/exec-1.log" \
    "orion-executor 1: the driver at 10.79.$id.1:" "cut: executor 1's log"
  has "$tmp/cut.logs/exec-1.log" "has been silent for 6 s; exiting" \
    "cut: executor 1's log"
  if grep -q "still ran" "$tmp/cut.err"; then
    fail "cut: executor 1 had to be killed"
  fi
  left_over "$tmp/cut.err" cut
fi
unset ORION_HEARTBEAT_TIMEOUT

# A link cut while the executors are idle: the driver runs the script
# between two loops (t/cluster/busy_driver.lua) and sends nothing.  Executor
# 1's heartbeats go unacknowledged, so keepalive does not probe; its
# connection's TCP_USER_TIMEOUT (10 s, dsm/net.c) ends it, and it exits by
# itself well before the driver's next loop, which then ends the job.
env --default-signal=INT "$net" -n 2 --logs "$tmp/idle.logs" -- -v \
  "$c/busy_driver.lua" 30 > "$tmp/idle.out" 2> "$tmp/idle.err" &
job=$!
for ((i = 0; i < 600; i++)); do
  grep -q "^before" "$tmp/idle.out" && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if grep -q "^before" "$tmp/idle.out"; then
  id=$(run_id "$tmp/idle.err")
  pid=$(exec_pid "$tmp/idle.err" 1)
  ip link set "onc${id}v1" down
  t0=$(now)
  for ((i = 0; i < 250; i++)); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = orion-executor ] || break
    sleep 0.1
  done
  took=$(elapsed "$t0")
  echo "idle link of executor 1 cut: it exited after $took s"
  awk -v t="$took" 'BEGIN { exit !(t < 20) }' ||
    fail "idle cut: executor 1 still ran $took s after the cut (want < 20 s)"
  has "$tmp/idle.logs/exec-1.log" "orion-executor 1: lost the driver at 10.79.$id.1:" \
    "idle cut: executor 1's log"
  wait_job 60
  [ "$rc" -eq 3 ] || fail "idle cut: exit $rc (want 3)"
  has "$tmp/idle.err" "executor 1 (10.79.$id.3:" "idle cut"
  left_over "$tmp/idle.err" "idle cut"
else
  fail "idle cut: busy_driver.lua never ran its first loop"
  cat "$tmp/idle.err" >&2
fi

# ---------------------------------------------------------------------------
# 3. The script interrupted.
# ---------------------------------------------------------------------------

for sig in INT TERM; do
  if start_long "sig$sig" 2 --rate 1gbit --; then
    # --rate: a tbf qdisc on both ends of every link.
    id=$(run_id "$tmp/sig$sig.err")
    tc qdisc show dev "onc${id}v1" > "$tmp/qdisc"
    ip netns exec "onc$id-1" tc qdisc show dev "onc${id}x1" >> "$tmp/qdisc"
    [ "$(grep -c "qdisc tbf .* rate 1Gbit" "$tmp/qdisc")" -eq 2 ] ||
      { fail "--rate 1gbit: not a tbf qdisc on both ends:"; cat "$tmp/qdisc" >&2; }
    kill -"$sig" "$job"
    wait_job 30
    want=$([ "$sig" = INT ] && echo 130 || echo 143)
    echo "SIG$sig to bench/netcluster.sh: exit $rc"
    [ "$rc" -eq "$want" ] || fail "SIG$sig: exit $rc (want $want)"
    has "$tmp/sig$sig.err" "netcluster: interrupted; removing the cluster" "SIG$sig"
    for j in 0 1; do
      has "$tmp/sig$sig.logs/exec-$j.log" "orion-executor $j: lost the driver at 10.79." \
        "SIG$sig: executor $j's log"
    done
    left_over "$tmp/sig$sig.err" "SIG$sig"
  fi
done

# Virtual hosts (--cpu, --driver-cpu, issue 35): every executor in a
# cgroup of its own with a quota of 0.25 CPU, the driver in one of 0.5;
# links default to 250mbit, the driver's to 500mbit; the busy executors
# are throttled; the cgroups go with the run.
if start_long vhost 2 --cpu 0.25 --driver-cpu 0.5 --; then
  id=$(run_id "$tmp/vhost.err")
  has "$tmp/vhost.err" "netcluster: every executor runs in a cgroup of its own (0.25 CPU), links at 250mbit" vhost
  has "$tmp/vhost.err" "(0.5 CPU), its link at 500mbit" vhost
  sleep 1
  for j in 0 1; do
    pid=$(exec_pid "$tmp/vhost.err" "$j")
    grep -Eq ":/onc$id-e$j\$" "/proc/$pid/cgroup" ||
      { fail "vhost: executor $j is not in cgroup onc$id-e$j:"; cat "/proc/$pid/cgroup" >&2; }
    d=/sys/fs/cgroup/cpu/onc$id-e$j
    if [ -f /sys/fs/cgroup/onc$id-e$j/cpu.max ]; then
      d=/sys/fs/cgroup/onc$id-e$j
      q=$(awk '{ printf "%.3f", $1 / $2 }' "$d/cpu.max")
      thr=$(awk '$1 == "nr_throttled" { print $2 }' "$d/cpu.stat")
    else
      q=$(awk -v a="$(cat "$d/cpu.cfs_quota_us")" -v b="$(cat "$d/cpu.cfs_period_us")" \
            'BEGIN { printf "%.3f", a / b }')
      thr=$(awk '$1 == "nr_throttled" { print $2 }' "$d/cpu.stat")
    fi
    echo "  vhost: executor $j in $d: quota $q CPU, throttled $thr times"
    [ "$q" = 0.250 ] || fail "vhost: executor $j's quota is $q CPU (want 0.250)"
    [ "${thr:-0}" -gt 0 ] || fail "vhost: executor $j was never throttled"
  done
  dp=$(pgrep -P "$job" -x orion-driver | head -n 1)
  [ -n "$dp" ] && grep -Eq ":/onc$id-driver\$" "/proc/$dp/cgroup" ||
    fail "vhost: the driver (pid ${dp:-none}) is not in cgroup onc$id-driver"
  tc qdisc show dev "onc${id}v1" > "$tmp/qdisc"
  tc qdisc show dev "onc${id}br" >> "$tmp/qdisc"
  grep -q "qdisc tbf .* rate 250Mbit" "$tmp/qdisc" &&
    grep -q "qdisc tbf .* rate 500Mbit" "$tmp/qdisc" ||
    { fail "vhost: links not at 250mbit and the driver's at 500mbit:"; cat "$tmp/qdisc" >&2; }
  kill -TERM "$job"
  wait_job 30
  [ "$rc" -eq 143 ] || fail "vhost: exit $rc after SIGTERM (want 143)"
  left_over "$tmp/vhost.err" vhost
  for g in e0 e1 driver; do
    [ ! -d "/sys/fs/cgroup/cpu/onc$id-$g" ] && [ ! -d "/sys/fs/cgroup/onc$id-$g" ] ||
      fail "vhost: cgroup onc$id-$g left"
  done
fi

# --delay: netem where the kernel has it, else refused with a message
# (this project's CI kernel has none).
"$net" -n 1 --delay 1ms -- "$c/stats.lua" > "$tmp/delay.out" 2> "$tmp/delay.err"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "--delay 1ms: this kernel has netem"
  has "$tmp/delay.out" "loop 1: executors 1," "--delay"
  left_over "$tmp/delay.err" "--delay"
else
  echo "--delay 1ms: exit $rc: $(cat "$tmp/delay.err")"
  [ "$rc" -eq 2 ] || fail "--delay without netem: exit $rc (want 2)"
  has "$tmp/delay.err" "netcluster: --delay needs the netem qdisc (sch_netem), which this kernel does not have" "--delay"
fi

[ "$status" -eq 0 ] && echo "PASS: the namespaced cluster"
exit "$status"
