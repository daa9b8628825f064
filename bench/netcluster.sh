#!/usr/bin/env bash
# A cluster of N hosts on this machine, with real links (needs root):
#
#   bench/netcluster.sh -n N [--rate RATE] [--delay DELAY] -- DRIVER-ARGS...
#
# Makes N network namespaces, each joined to a bridge in the root namespace
# by a veth pair whose two ends are shaped with `tc tbf` to RATE (default:
# unshaped), starts one orion-executor in each, and runs
# `orion-driver --launcher manual --executors N --listen BRIDGE:PORT
# DRIVER-ARGS...` in the root namespace.  Exits with the driver's exit code.
# Everything it made (namespaces, links, processes) is removed on exit,
# on an error and on an interrupt.
#
# --delay needs the kernel's netem qdisc; where it is missing (this
# project's 2-core CI machine) the script refuses with a message saying so.
#
# The binaries: $ORION_DRIVER_BIN and $ORION_EXECUTOR, else the ones in
# the source tree this script is in.
set -euo pipefail

usage() {
  echo "usage: $0 -n N [--rate RATE] [--delay DELAY] -- DRIVER-ARGS..." >&2
  exit 2
}

n=""
rate=""
delay=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) [ $# -ge 2 ] || usage; n=$2; shift 2 ;;
    --rate) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
    --delay) [ $# -ge 2 ] || usage; delay=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$0: unknown option '$1'" >&2; usage ;;
  esac
done
case $n in
  ''|*[!0-9]*) echo "$0: -n needs a number of executors (1..64)" >&2; usage ;;
esac
if [ "$n" -lt 1 ] || [ "$n" -gt 64 ]; then
  echo "$0: -n needs a number of executors (1..64), not $n" >&2
  exit 2
fi
[ $# -gt 0 ] || { echo "$0: no driver arguments after --" >&2; usage; }
if [ "$(id -u)" -ne 0 ]; then
  echo "$0: needs root (network namespaces, veth pairs, tc)" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
driver=${ORION_DRIVER_BIN:-$root/orion-driver}
executor=${ORION_EXECUTOR:-$root/orion-executor}
for b in "$driver" "$executor"; do
  [ -x "$b" ] || { echo "$0: no executable $b (build first)" >&2; exit 2; }
done

# Names and addresses unique to this run: 10.79.S.0/24, S from the pid.
id=$(( $$ % 250 + 1 ))
pfx="onc$id"
br="${pfx}br"
net="10.79.$id"
port=$(( 20000 + $$ % 20000 ))
work=$(mktemp -d)
pids=()

cleanup() {
  local k
  for p in "${pids[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
  done
  for k in $(seq 0 $((n - 1))); do
    ip netns pids "$pfx-$k" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$pfx-$k" 2>/dev/null || true
    ip link del "${pfx}v$k" 2>/dev/null || true
  done
  ip link del "$br" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shape DEV [NETNS]: tbf at $rate (and netem $delay) on DEV's egress.
shape() {
  local dev=$1 ns=${2:-} run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  if [ -n "$delay" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"
    [ -n "$rate" ] && "${run[@]}" tc qdisc add dev "$dev" parent 1: handle 2: \
      tbf rate "$rate" burst 256kb latency 100ms
  elif [ -n "$rate" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb \
      latency 100ms
  fi
}

ip link add "$br" type bridge
if [ -n "$delay" ]; then
  # Probe netem on the bridge before building the rest.
  if ! tc qdisc add dev "$br" root netem delay "$delay" 2>/dev/null; then
    echo "$0: --delay needs the netem qdisc (sch_netem), which this kernel" \
         "does not have; run without --delay" >&2
    exit 2
  fi
  tc qdisc del dev "$br" root
fi
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
for k in $(seq 0 $((n - 1))); do
  ns="$pfx-$k"
  ip netns add "$ns"
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

# The driver prints one command line per executor (the manual launcher);
# each runs in its namespace.
"$driver" --launcher manual --executors "$n" --listen "$net.1:$port" \
  --register-timeout 30 "$@" 2> >(tee "$work/err" >&2) &
drv=$!
pids+=("$drv")
started=0
deadline=$(( $(date +%s) + 30 ))
while [ "$started" -lt "$n" ]; do
  if ! kill -0 "$drv" 2>/dev/null; then
    break
  fi
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "$0: the driver printed no command for executor $started within 30 s" >&2
    exit 3
  fi
  line=$(grep -m1 -- "'--id' '$started'" "$work/err" 2>/dev/null || true)
  if [ -z "$line" ]; then
    sleep 0.1
    continue
  fi
  token=$(printf '%s\n' "$line" | sed -n "s/.*ORION_TOKEN='\([^']*\)'.*/\1/p")
  addr=$(printf '%s\n' "$line" | sed -n "s/.*'--driver' '\([^']*\)'.*/\1/p")
  ORION_TOKEN=$token ip netns exec "$pfx-$started" \
    "$executor" --driver "$addr" --id "$started" &
  pids+=("$!")
  started=$((started + 1))
done
set +e
wait "$drv"
rc=$?
exit "$rc"
