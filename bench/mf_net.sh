#!/usr/bin/env bash
# bench/mf_net.sh: MF on MovieLens-1M on a namespaced cluster with real,
# shaped links against the same job on loopback (issue 16; needs root):
#
#   ./configure && make && bench/mf_net.sh
#   EXECS=4 RATE=1gbit K=128 EPOCHS=10 bench/mf_net.sh
#
# Runs apps/mf/mf.lua (--k K, EPOCHS epochs, default 10) twice in one go:
# on EXECS (default 4) local executors over loopback, and on EXECS
# executors in network namespaces joined by veth links shaped to RATE
# (default 1gbit) with bench/netcluster.sh.  From the --metrics records of
# epochs 2..EPOCHS it prints, for each:
#   s/epoch      mean seconds of an epoch (training pass + test pass)
#   train ms     mean milliseconds of the training pass
#   driver MB    bytes through the driver per epoch
#   peer MB      bytes between executors per epoch
#   driver %     driver bytes / all bytes moved
#   test-rmse    after the last epoch (the same bits in both runs)
# and the ratio of the namespaced run's s/epoch to loopback's (the issue's
# goal: 1.2 or less, with driver % under 2).  A third run on the same
# namespaces with links at 100gbit (shaped far above what the machine
# moves) separates what the namespaces, veth pairs and bridge cost in CPU
# (its ratio to loopback) from what the link's rate costs (the shaped
# run's ratio to it): on a machine with fewer cores than executors the
# first is paid in the executors' own CPU time.
# Without the data it is skipped (exit 0), unless CI=true (exit 1); without
# root it is skipped (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_net.sh
epochs=${EPOCHS:-10}
execs=${EXECS:-4}
rate=${RATE:-1gbit}
k=${K:-128}
bench_epochs mf_net.sh EPOCHS "$epochs"
if [ "$(id -u)" != 0 ]; then
  echo "bench/mf_net.sh: skipped: network namespaces need root"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(apps/mf/mf.lua --train "$train" --test "$test" --k "$k" --epochs "$epochs")

./orion-driver --quiet --executors "$execs" --metrics "$tmp/lo.jsonl" \
  "${args[@]}" > "$tmp/lo.out" 2>&1 || { cat "$tmp/lo.out" >&2; exit 1; }
bench/netcluster.sh -n "$execs" --rate "$rate" --logs "$tmp/logs" -- \
  --quiet --metrics "$tmp/net.jsonl" "${args[@]}" > "$tmp/net.out" \
  2> "$tmp/net.err" || { cat "$tmp/net.out" "$tmp/net.err" >&2; exit 1; }
bench/netcluster.sh -n "$execs" --rate 100gbit -- \
  --quiet --metrics "$tmp/fast.jsonl" "${args[@]}" > "$tmp/fast.out" \
  2> "$tmp/fast.err" || { cat "$tmp/fast.out" "$tmp/fast.err" >&2; exit 1; }

printf 'MF on MovieLens-1M, K=%s, %s executors, %s epochs (means of epochs 2..%s), %s cores\n' \
  "$k" "$execs" "$epochs" "$epochs" "$(nproc)"
printf '%-22s %8s %9s %10s %9s %9s %10s\n' run "s/epoch" "train ms" \
  "driver MB" "peer MB" "driver %" test-rmse
row() {
  local m=$1 name=$2
  awk -v n="$name" -v s="$(mean_key "$m" seconds)" \
      -v ts="$(mean_key "$m" train_seconds)" \
      -v d="$(mean_key "$m" driver_bytes)" -v p="$(mean_key "$m" peer_bytes)" \
      -v r="$(last_key "$m" test_rmse)" 'BEGIN {
    printf "%-22s %8.4f %9.2f %10.3f %9.2f %9.2f %10.6f\n",
      n, s, ts * 1e3, d / 1e6, p / 1e6, 100 * d / (d + p), r }'
}
row "$tmp/lo.jsonl" loopback
row "$tmp/fast.jsonl" "namespaced, 100gbit"
row "$tmp/net.jsonl" "namespaced, $rate"
awk -v a="$(mean_key "$tmp/net.jsonl" seconds)" \
    -v b="$(mean_key "$tmp/lo.jsonl" seconds)" \
    -v c="$(mean_key "$tmp/fast.jsonl" seconds)" -v r="$rate" 'BEGIN {
  printf "namespaced / loopback s/epoch: %.2f (the namespaces at 100gbit: %.2f; %s / 100gbit: %.2f)\n",
    a / b, c / b, r, a / c }'
