#!/usr/bin/env bash
# bench/dyn.sh: dynamic and balanced block placement against the static
# placement with one executor at half speed (issue 17; needs root):
#
#   ./configure && make && bench/dyn.sh
#   EXECS=4 SLOW=3 SLOW_BY=cgroup RATE=1gbit K=128 EPOCHS=5 bench/dyn.sh
#
# Runs apps/mf/mf.lua on MovieLens-1M (--k K, EPOCHS epochs, default 5)
# three times in one go on EXECS (default 4) executors in network
# namespaces (bench/netcluster.sh, links shaped to RATE, default
# unshaped), executor SLOW (default the last; "none": no executor slowed)
# at half speed (netcluster's --slow, SLOW_BY "cgroup": a CPU quota of
# half what it would get otherwise, a CPU of its own or, with more
# executors than cores, its share of them; or "sleep": it sleeps after
# each block as long as the block took; default: cgroup where the machine
# has a cgroup cpu controller, else sleep):
#   static    the default: space part p on executor p * N / n0
#   dynamic   ORION_ASSIGN=dynamic: a ready block goes where it would
#             finish first
#   balanced  ORION_ASSIGN=balanced: static within a pass, the ranges of
#             space parts sized by the executors' speeds on earlier passes
# From the --metrics records of epochs 2..EPOCHS it prints for each the
# mean seconds per epoch (training and test pass), the training pass's
# milliseconds, the training blocks each executor ran in the last epoch,
# and the test RMSE (the same bits in all runs: only the executor of a
# block changes); then dynamic / static and balanced / static seconds per
# epoch.
# Without the data it is skipped (exit 0), unless CI=true (exit 1); without
# root it is skipped (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m dyn.sh
epochs=${EPOCHS:-5}
execs=${EXECS:-4}
slow=${SLOW:-$((execs - 1))}
k=${K:-128}
bench_epochs dyn.sh EPOCHS "$epochs"
if [ "$(id -u)" != 0 ]; then
  echo "bench/dyn.sh: skipped: network namespaces need root"
  exit 0
fi
slow_by=${SLOW_BY:-}
if [ -z "$slow_by" ]; then
  slow_by=sleep
  if [ -d /sys/fs/cgroup/cpu ] ||
     grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    slow_by=cgroup
  fi
fi
# Half of what the executor would get otherwise: a CPU of its own, or
# its share of the cores when executors outnumber them.
slow_cpu=$(awk -v c="$(nproc)" -v e="$execs" \
  'BEGIN { x = c >= e ? 1 : c / e; printf "%.3f", x / 2 }')
net=(-n "$execs")
[ "$slow" = none ] || net+=(--slow "$slow" --slow-by "$slow_by" --slow-cpu "$slow_cpu")
[ -z "${RATE:-}" ] || net+=(--rate "$RATE")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(apps/mf/mf.lua --train "$train" --test "$test" --k "$k" --epochs "$epochs")

for how in static dynamic balanced; do
  env=(ORION_ASSIGN=$how)
  env "${env[@]}" bench/netcluster.sh "${net[@]}" --logs "$tmp/logs-$how" -- \
    --quiet --metrics "$tmp/$how.jsonl" "${args[@]}" > "$tmp/$how.out" \
    2> "$tmp/$how.err" || { cat "$tmp/$how.out" "$tmp/$how.err" >&2; exit 1; }
done

if [ "$slow" = none ]; then
  slowness="none slowed"
else
  slowness="executor $slow at half speed: $slow_by"
  [ "$slow_by" != cgroup ] || slowness="$slowness, $slow_cpu CPU"
fi
printf 'MF on MovieLens-1M, K=%s, %s executors (%s), link %s, %s epochs (means of epochs 2..%s), %s cores\n' \
  "$k" "$execs" "$slowness" \
  "${RATE:-unshaped}" "$epochs" "$epochs" \
  "$(nproc)"
printf '%-9s %8s %9s %-24s %10s\n' run "s/epoch" "train ms" \
  "blocks per executor" test-rmse
row() {
  local m=$1 name=$2
  awk -v n="$name" -v s="$(mean_key "$m" seconds)" \
      -v ts="$(mean_key "$m" train_seconds)" \
      -v b="$(last_key "$m" train_blocks | tr -d '"')" \
      -v r="$(last_key "$m" test_rmse)" 'BEGIN {
    printf "%-9s %8.4f %9.2f %-24s %10.6f\n", n, s, ts * 1e3, b, r }'
}
row "$tmp/static.jsonl" static
row "$tmp/dynamic.jsonl" dynamic
row "$tmp/balanced.jsonl" balanced
for how in dynamic balanced; do
  if [ "$(last_key "$tmp/static.jsonl" test_rmse)" != \
       "$(last_key "$tmp/$how.jsonl" test_rmse)" ]; then
    echo "bench/dyn.sh: FAIL: the test RMSEs of static and $how differ" >&2
    exit 1
  fi
done
awk -v a="$(mean_key "$tmp/dynamic.jsonl" seconds)" \
    -v c="$(mean_key "$tmp/balanced.jsonl" seconds)" \
    -v b="$(mean_key "$tmp/static.jsonl" seconds)" \
    'BEGIN { printf "dynamic / static s/epoch: %.2f\nbalanced / static s/epoch: %.2f\n", a / b, c / b }'
