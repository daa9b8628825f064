#!/usr/bin/env bash
# A cluster of N hosts on this machine, with real links (needs root):
#
#   bench/netcluster.sh -n N [--rate RATE] [--delay DELAY] [--logs DIR]
#                       [--grace SECONDS] [--slow K [--slow-by HOW] [--slow-cpu X]]
#                       [--cpu Q] [--driver-cpu QD] -- DRIVER-ARGS...
#
# Makes N network namespaces onc<ID>-0 .. onc<ID>-(N-1), each joined to a
# bridge onc<ID>br (10.79.<ID>.1/24) in the root namespace by a veth pair
# (onc<ID>v<K> on the bridge, onc<ID>x<K> in the namespace, at
# 10.79.<ID>.<K+2>) whose two ends are shaped with `tc tbf` to RATE
# (default: unshaped); ID (1..250) is the first whose bridge is free,
# counting from one the pid picks.
# Runs `orion-driver --launcher manual --executors N --listen
# 10.79.<ID>.1 DRIVER-ARGS...` in the root namespace and, once the driver
# prints its executors' command lines (at the script's first parallel_for
# or parallel load), starts executor K in namespace K with
# `ip netns exec`.  Exits with the driver's exit code.
#
# After the driver exits, the executors get GRACE seconds (default 15:
# more than an executor's own heartbeat timeout) to exit on their own;
# those still running are killed and named.  Everything the script made
# (namespaces, links, processes) is removed on exit, on an error and on
# SIGINT/SIGTERM (the driver gets SIGTERM first; exit code 130/143).
#
#   --rate RATE   tbf rate of every link, each way (tc syntax: 1gbit, 100mbit)
#   --driver-rate RATE
#                 tbf rate of what the driver sends (the bridge's own
#                 egress, which carries only the root namespace's frames),
#                 so that the driver is a host with one link like the
#                 executors, not one link per executor (default: unshaped)
#   --delay D     netem delay on every link, each way (tc syntax: 0.5ms);
#                 needs the kernel's sch_netem, refused with a message
#                 where it is missing (as on this project's CI machine)
#   --logs DIR    executor K's stdout and stderr go to DIR/exec-K.log
#                 (default: this script's stderr)
#   --grace S     seconds the executors may outlive the driver
#   --slow K      executor K runs at half speed: HOW "cgroup" (the default
#                 where this machine has the cgroup cpu controller) starts
#                 it in a cgroup whose CPU quota is X CPUs (--slow-cpu,
#                 default 0.5, per 5 ms period (longer below 0.2 CPU,
#                 keeping the quota at 1 ms); cgroup v2 cpu.max, v1
#                 cpu.cfs_quota_us);
#                 "sleep" sets ORION_TEST_SLOW=K:x2 (it sleeps after each
#                 block as long as the block took).  A quota slows it only
#                 when it is below the CPU the executor would otherwise
#                 get: with more executors than cores, half its fair share
#                 (cores / executors / 2, what bench/dyn.sh passes).
#   --cpu Q       virtual hosts: every executor runs in a cgroup of its
#                 own whose CPU quota is Q CPUs (as --slow's, the same
#                 period rule), so that N executors are N hosts of Q CPUs
#                 (on 2 cores, 8 hosts of 0.2 CPU); --rate defaults to
#                 Q x 1 gbit (a host core's share of a NIC: 0.2 CPU gets
#                 200mbit), keeping a real cluster's ratio of compute to
#                 network.  With --slow K, executor K gets --slow-cpu
#                 instead of Q.  Refused where there is no cgroup cpu
#                 controller.
#   --driver-cpu QD
#                 the driver in a cgroup of QD CPUs; --driver-rate
#                 defaults to QD x 1 gbit
#
# On stderr, besides the driver's own lines, one line per executor:
#   netcluster: executor K in namespace onc5-K (10.79.5.K+2, link onc5vK), pid P
# a line for anything it had to kill, and at the end, for each executor
# (and the driver) in a cgroup, the CPU seconds it used there:
#   netcluster: executor K used S CPU seconds
#
# The binaries: $ORION_DRIVER_BIN and $ORION_EXECUTOR, else the ones in
# the source tree this script is in.  Variables such as
# ORION_HEARTBEAT_TIMEOUT reach the executors.
set -euo pipefail

me=netcluster
usage() {
  echo "usage: $0 -n N [--rate RATE] [--driver-rate RATE] [--delay DELAY]" \
       "[--logs DIR] [--grace SECONDS] [--slow K [--slow-by cgroup|sleep] [--slow-cpu X]]" \
       "[--cpu Q] [--driver-cpu QD] -- DRIVER-ARGS..." >&2
  exit 2
}
die() {
  echo "$me: $*" >&2
  exit 2
}

n=""
rate=""
drate=""
delay=""
logs=""
grace=15
slow=""
slow_by=""
slow_cpu=0.5
cpu=""
dcpu=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) [ $# -ge 2 ] || usage; n=$2; shift 2 ;;
    --rate) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
    --driver-rate) [ $# -ge 2 ] || usage; drate=$2; shift 2 ;;
    --delay) [ $# -ge 2 ] || usage; delay=$2; shift 2 ;;
    --logs) [ $# -ge 2 ] || usage; logs=$2; shift 2 ;;
    --grace) [ $# -ge 2 ] || usage; grace=$2; shift 2 ;;
    --slow) [ $# -ge 2 ] || usage; slow=$2; shift 2 ;;
    --slow-by) [ $# -ge 2 ] || usage; slow_by=$2; shift 2 ;;
    --slow-cpu) [ $# -ge 2 ] || usage; slow_cpu=$2; shift 2 ;;
    --cpu) [ $# -ge 2 ] || usage; cpu=$2; shift 2 ;;
    --driver-cpu) [ $# -ge 2 ] || usage; dcpu=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$me: unknown option '$1'" >&2; usage ;;
  esac
done
case $n in
  ''|*[!0-9]*) echo "$me: -n needs a number of executors (1..64)" >&2; usage ;;
esac
[ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
  die "-n needs a number of executors (1..64), not $n"
case $grace in
  ''|*[!0-9]*) die "--grace needs a whole number of seconds, not '$grace'" ;;
esac
if [ -n "$slow" ]; then
  case $slow in
    *[!0-9]*) die "--slow needs an executor number (0..$((n - 1))), not '$slow'" ;;
  esac
  [ "$slow" -lt "$n" ] || die "--slow $slow: there are executors 0..$((n - 1))"
fi
# The quota per 5 ms period: with the default 100 ms period an executor
# runs at full speed until its quota is spent, then stands still for the
# rest of the period, longer than a pass of small blocks; a short period
# spreads the slowdown over every block, as a slower CPU would.  The
# kernel takes no quota under 1 ms, so below 0.2 CPU the period grows to
# keep the quota at 1 ms (0.125 CPU: 1 ms per 8 ms).
# cg_quota X: "QUOTA PERIOD" in microseconds for X CPUs; nothing where X
# is not a number of CPUs in (0, 64].
cg_quota() {
  awk -v x="$1" 'BEGIN { if (x ~ /^[0-9]*\.?[0-9]+$/ && x > 0 && x <= 64) { p = 5000; if (x * p < 1000) p = int(1000 / x + 0.5); if (p > 1000000) p = 1000000; q = int(x * p + 0.5); if (q < 1000) q = 1000; printf "%d %d", q, p } }'
}
for opt in "--slow-cpu $slow_cpu" ${cpu:+"--cpu $cpu"} ${dcpu:+"--driver-cpu $dcpu"}; do
  [ -n "$(cg_quota "${opt#* }")" ] ||
    die "${opt%% *} needs a number of CPUs above 0 (0.25, 1), not '${opt#* }'"
done
# gbit_of X: X x 1 gbit in tc's syntax (0.2 -> 200mbit).
gbit_of() { awk -v x="$1" 'BEGIN { printf "%dmbit", x * 1000 + 0.5 }'; }
[ -z "$cpu" ] || [ -n "$rate" ] || rate=$(gbit_of "$cpu")
[ -z "$dcpu" ] || [ -n "$drate" ] || drate=$(gbit_of "$dcpu")
case $slow_by in
  ''|cgroup|sleep) ;;
  *) die "--slow-by needs cgroup or sleep, not '$slow_by'" ;;
esac
[ $# -gt 0 ] || { echo "$me: no driver arguments after --" >&2; usage; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth pairs, tc)"
command -v ip >/dev/null || die "needs ip (iproute2)"
if [ -n "$rate$drate$delay" ]; then
  command -v tc >/dev/null ||
    die "--rate, --driver-rate and --delay need tc (iproute2)"
fi
if [ -n "$logs" ]; then
  mkdir -p "$logs" || die "cannot make the log folder $logs"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
driver=${ORION_DRIVER_BIN:-$root/orion-driver}
executor=${ORION_EXECUTOR:-$root/orion-executor}
for b in "$driver" "$executor"; do
  [ -x "$b" ] || die "no executable $b (build first)"
done

work=$(mktemp -d /tmp/netcluster-XXXXXX)
id=""        # set once this run owns the bridge onc<id>br
made=0       # namespaces 0..made-1 were created by this run
drv=""       # the driver's pid
tee_pid=""   # the process copying the driver's stderr
epids=()     # the executors' pids, by id
cgs=()      # the cgroups made for --slow, --cpu and --driver-cpu, removed on exit

cleanup() {
  local k p i
  set +e
  trap - INT TERM
  for p in "$drv" "${epids[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null
  done
  if [ -n "$id" ]; then
    for ((k = 0; k < made; k++)); do
      for p in $(ip netns pids "onc$id-$k" 2>/dev/null); do
        kill -9 "$p" 2>/dev/null
      done
      ip netns del "onc$id-$k" 2>/dev/null
      ip link del "onc${id}v$k" 2>/dev/null
    done
    ip link del "onc${id}br" 2>/dev/null
  fi
  for p in "${cgs[@]:-}"; do
    [ -n "$p" ] || continue
    for ((i = 0; i < 20; i++)); do # its processes were killed above
      rmdir "$p" 2>/dev/null && break
      sleep 0.05
    done
  done
  if [ -n "$tee_pid" ]; then
    # tee ends at the driver's end of file; it may still be copying, or
    # still waiting for a driver that never opened the pipe.
    for ((i = 0; i < 20; i++)); do
      kill -0 "$tee_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$tee_pid" 2>/dev/null
    wait "$tee_pid" 2>/dev/null
  fi
  rm -rf "$work"
  return 0
}
trap cleanup EXIT

# On SIGINT/SIGTERM: the driver first (its executors see the connection
# close and exit), then whatever is left, by the EXIT trap.
interrupted() {
  local code=$1 i
  trap - INT TERM
  if [ -n "$drv" ] && kill -TERM "$drv" 2>/dev/null; then
    for ((i = 0; i < 20; i++)); do
      kill -0 "$drv" 2>/dev/null || break
      sleep 0.1
    done
  fi
  # The executors see the driver's connection close and say so: up to 3 s
  # for them to exit on their own before the EXIT trap kills the rest.
  for ((i = 0; i < 30; i++)); do
    local p alive=0
    for p in "${epids[@]:-}"; do
      [ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive=1
    done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  echo "$me: interrupted; removing the cluster" >&2
  exit "$code"
}
trap 'interrupted 130' INT
trap 'interrupted 143' TERM

# The bridge: the first free ID from one chosen by the pid, so runs side
# by side stay apart; creating the bridge is what claims the ID.
start=$(( $$ % 250 ))
for ((t = 0; t < 250; t++)); do
  c=$(( (start + t) % 250 + 1 ))
  if ip link add "onc${c}br" type bridge 2>/dev/null; then
    id=$c
    break
  fi
done
[ -n "$id" ] || die "no free bridge name onc1br..onc250br (ip link add failed for all)"
pfx="onc$id"
br="${pfx}br"
net="10.79.$id"

# shape DEV [NETNS]: netem $delay and tbf $rate on DEV's egress.
shape() {
  local dev=$1 ns=${2:-} run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  if [ -n "$delay" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"
    if [ -n "$rate" ]; then
      "${run[@]}" tc qdisc add dev "$dev" parent 1: handle 2: \
        tbf rate "$rate" burst 256kb latency 100ms
    fi
  elif [ -n "$rate" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb \
      latency 100ms
  fi
}

if [ -n "$delay" ]; then
  # Probe netem on the (empty) bridge before building the rest.
  if ! msg=$(tc qdisc add dev "$br" root netem delay "$delay" 2>&1); then
    die "--delay needs the netem qdisc (sch_netem), which this kernel" \
        "does not have (tc: ${msg:-failed}); run without --delay"
  fi
  tc qdisc del dev "$br" root
fi
if [ -n "$rate" ] && ! msg=$(tc qdisc add dev "$br" root tbf rate "$rate" \
                                burst 256kb latency 100ms 2>&1); then
  die "--rate $rate: tc refused it: $msg"
fi
[ -z "$rate" ] || tc qdisc del dev "$br" root
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
# The bridge's own qdisc sees only what the root namespace (the driver)
# sends; frames between executors are forwarded port to port.
if [ -n "$drate" ] && ! msg=$(tc qdisc add dev "$br" root tbf rate "$drate" \
                                 burst 256kb latency 100ms 2>&1); then
  die "--driver-rate $drate: tc refused it: $msg"
fi
for ((k = 0; k < n; k++)); do
  ns="$pfx-$k"
  ip netns add "$ns" || die "cannot make namespace $ns (left by a killed run? 'ip netns del $ns')"
  made=$((k + 1))
  ip link add "${pfx}v$k" type veth peer name "${pfx}x$k"
  ip link set "${pfx}v$k" master "$br"
  ip link set "${pfx}v$k" up
  ip link set "${pfx}x$k" netns "$ns"
  ip netns exec "$ns" ip addr add "$net.$((k + 2))/24" dev "${pfx}x$k"
  ip netns exec "$ns" ip link set "${pfx}x$k" up
  ip netns exec "$ns" ip link set lo up
  shape "${pfx}v$k"
  shape "${pfx}x$k" "$ns"
done

# make_cg NAME X: a cgroup $pfx-NAME whose CPU quota is X CPUs (v2
# cpu.max, or v1's cpu controller); its path in $cg, empty where this
# machine has no cgroup cpu controller to use.  In $acct the cgroup that
# counts its CPU time: $cg itself (v2, or v1 with cpu and cpuacct
# mounted together), a cgroup $pfx-NAME of v1's separate cpuacct
# hierarchy, or empty; in $procs the cgroup.procs file(s) a process joins
# (space-separated).
make_cg() {
  local qp
  qp=$(cg_quota "$2")
  cg="" acct="" procs=""
  if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
     grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null &&
     mkdir "/sys/fs/cgroup/$pfx-$1" 2>/dev/null; then
    cg=/sys/fs/cgroup/$pfx-$1
    cgs+=("$cg")
    echo "$qp" > "$cg/cpu.max" || die "cannot set $cg/cpu.max"
  elif [ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] &&
       mkdir "/sys/fs/cgroup/cpu/$pfx-$1" 2>/dev/null; then
    cg=/sys/fs/cgroup/cpu/$pfx-$1
    cgs+=("$cg")
    echo "${qp#* }" > "$cg/cpu.cfs_period_us" &&
      echo "${qp% *}" > "$cg/cpu.cfs_quota_us" || die "cannot set $cg's quota"
  fi
  [ -n "$cg" ] || return 0
  procs=$cg/cgroup.procs
  if [ -r "$cg/cpu.stat" ] && grep -q '^usage_usec ' "$cg/cpu.stat" || [ -r "$cg/cpuacct.usage" ]; then
    acct=$cg
  elif [ -r /sys/fs/cgroup/cpuacct/cpuacct.usage ] &&
       mkdir "/sys/fs/cgroup/cpuacct/$pfx-$1" 2>/dev/null; then
    acct=/sys/fs/cgroup/cpuacct/$pfx-$1
    cgs+=("$acct")
    procs="$procs $acct/cgroup.procs"
  fi
}

# cg_cpu DIR: the CPU seconds the processes of cgroup DIR used (v2
# cpu.stat's usage_usec, v1 cpuacct.usage), "-" where it cannot be read.
cg_cpu() {
  if [ -r "$1/cpu.stat" ] && grep -q '^usage_usec ' "$1/cpu.stat"; then
    awk '$1 == "usage_usec" { printf "%.3f", $2 / 1e6 }' "$1/cpu.stat"
  elif [ -r "$1/cpuacct.usage" ]; then
    awk '{ printf "%.3f", $1 / 1e9 }' "$1/cpuacct.usage"
  else
    echo -
  fi
}

# --cpu: a cgroup of $cpu CPUs per executor; --slow: one of $slow_cpu CPUs
# for executor $slow, or the executors' sleep hook.
slow_env=()
ecg=()      # executor K's cgroup.procs file(s), where it has a cgroup
eacct=()    # the cgroup counting executor K's CPU time
if [ -n "$cpu" ]; then
  for ((k = 0; k < n; k++)); do
    [ "$k" = "$slow" ] && [ "$slow_by" != sleep ] && continue
    make_cg "e$k" "$cpu"
    [ -n "$cg" ] || die "--cpu: no cgroup cpu controller to use here"
    ecg[k]=$procs
    eacct[k]=$acct
  done
  echo "$me: every executor runs in a cgroup of its own ($cpu CPU), links at $rate" >&2
fi
if [ -n "$slow" ]; then
  cg=""
  [ "$slow_by" = sleep ] || make_cg slow "$slow_cpu"
  [ -n "$cg" ] || [ "$slow_by" != cgroup ] ||
    die "--slow-by cgroup: no cgroup cpu controller to use here"
  if [ -n "$cg" ]; then
    ecg[slow]=$procs
    eacct[slow]=$acct
    echo "$me: executor $slow runs in cgroup $cg ($slow_cpu CPU)" >&2
  else
    slow_env=("ORION_TEST_SLOW=$slow:x2")
    echo "$me: executor $slow sleeps as long as each block took" \
         "(ORION_TEST_SLOW=$slow:x2)" >&2
  fi
fi

# The driver's stderr goes through a pipe to tee: to this script's stderr
# and to a file, where its manual launcher's command lines are read.
mkfifo "$work/pipe"
tee "$work/err" < "$work/pipe" >&2 &
tee_pid=$!
# --driver-cpu: the driver in its cgroup from the start (the shell joins
# it and then becomes the driver).
dcmd=("$driver")
dcg=""
if [ -n "$dcpu" ]; then
  make_cg driver "$dcpu"
  dcg=$acct
  [ -n "$cg" ] || die "--driver-cpu: no cgroup cpu controller to use here"
  dcmd=(sh -c 'for f in $0; do echo $$ > "$f" || exit 1; done; exec "$@"' "$procs" "$driver")
  echo "$me: the driver runs in cgroup $cg ($dcpu CPU), its link at ${drate}" >&2
fi
"${dcmd[@]}" --launcher manual --executors "$n" --listen "$net.1" \
  "$@" 2> "$work/pipe" &
drv=$!

# The command lines come when the script reaches its first loop, all at
# once: executor K's runs in namespace K (the driver times out executors
# that do not register).
for ((k = 0; k < n; k++)); do
  line=""
  while kill -0 "$drv" 2>/dev/null; do
    line=$(grep -m1 -- "'--id' '$k'\( '--elastic'\)\?\$" "$work/err" 2>/dev/null || true)
    [ -z "$line" ] || break
    sleep 0.1
  done
  [ -n "$line" ] || break # the driver ended before starting executors
  token=$(printf '%s\n' "$line" | sed -n "s/.*ORION_TOKEN='\([^']*\)'.*/\1/p")
  # A driver that took an exported ORION_TOKEN prints none: the same one.
  [ -n "$token" ] || token=${ORION_TOKEN:-}
  addr=$(printf '%s\n' "$line" | sed -n "s/.*'--driver' '\([^']*\)'.*/\1/p")
  # An executor with a cgroup: in it from the start (the shell joins it
  # and then becomes the executor); executor $slow otherwise with the
  # sleep hook.
  cmd=(ip netns exec "$pfx-$k" "$executor" --driver "$addr" --id "$k")
  # orion-driver --elastic: executors that register again when the job
  # re-forms (docs/checkpoints.md).
  case $line in *"'--elastic'"*) cmd+=(--elastic) ;; esac
  if [ -n "${ecg[k]:-}" ]; then
    cmd=(sh -c 'for f in $0; do echo $$ > "$f" || exit 1; done; exec "$@"' "${ecg[k]}" "${cmd[@]}")
  elif [ "$k" = "$slow" ]; then
    cmd=(env "${slow_env[@]}" "${cmd[@]}")
  fi
  if [ -n "$logs" ]; then
    ORION_TOKEN=$token "${cmd[@]}" > "$logs/exec-$k.log" 2>&1 &
  else
    ORION_TOKEN=$token "${cmd[@]}" &
  fi
  epids[k]=$!
  disown "${epids[k]}" # no job notice from bash when one is killed
  echo "$me: executor $k in namespace $pfx-$k ($net.$((k + 2)), link" \
       "${pfx}v$k), pid ${epids[k]}" >&2
done

set +e
wait "$drv"
rc=$?
drv=""
# The executors leave by themselves (SHUTDOWN, a closed connection, or
# their heartbeat timeout when their link is down); a reaped one is no
# longer in its namespace.
deadline=$(( $(date +%s%N) + grace * 1000000000 ))
while [ "$(date +%s%N)" -lt "$deadline" ]; do
  left=0
  for ((k = 0; k < made; k++)); do
    [ -z "$(ip netns pids "$pfx-$k" 2>/dev/null)" ] || left=1
  done
  [ "$left" -eq 1 ] || break
  sleep 0.1
done
for ((k = 0; k < made; k++)); do
  for p in $(ip netns pids "$pfx-$k" 2>/dev/null); do
    echo "$me: executor $k (pid $p) still ran $grace s after the driver" \
         "ended; killing it" >&2
    kill -9 "$p" 2>/dev/null
  done
done
# What each host's quota gave it: the CPU seconds its cgroup used.
for ((k = 0; k < made; k++)); do
  [ -z "${eacct[k]:-}" ] ||
    echo "$me: executor $k used $(cg_cpu "${eacct[k]}") CPU seconds" >&2
done
[ -z "$dcg" ] || echo "$me: the driver used $(cg_cpu "$dcg") CPU seconds" >&2
exit "$rc"
