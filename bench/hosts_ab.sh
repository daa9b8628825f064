#!/usr/bin/env bash
# bench/hosts_ab.sh: a runtime switch on N virtual hosts
# (bench/netcluster.sh --cpu Q; needs root): A is the default, B the same
# run with SWITCH=1 in the environment of the driver and the executors
# (the path before a change, kept to compare), alternating A, B, B, A, ...
# in one run:
#
#   sudo SWITCH=ORION_NO_EARLY_FLUSH bench/hosts_ab.sh      # the DNN and LR
#   sudo SWITCH=ORION_NO_AHEAD APPS=lda ROUNDS=4 bench/hosts_ab.sh
#
# SWITCH (required): ORION_NO_EARLY_FLUSH (a block's flush = "loop" writes
# to sharded targets go to their owners when the block ends, A, or at the
# loop's end, B), ORION_NO_AHEAD (dispatch ahead along time parts, which
# a loop with only flush = "loop" buffers now gets, A, or not, B), or any
# other ORION_NO_* switch.  APPS (comma-separated, default dnn,lr): dnn is
# apps/dnn/dnn.lua on Fashion-MNIST ($FASHION_DIR) with --shards N,
# DNN_LIMIT (default 12000) training images; lr is apps/lr/lr.lua's SGD
# (tier c) on bench/lr_synth.sh's set of LR_ROWS (default 250,000) x
# 100,000 features; lda is apps/lda/lda.lua on 20 Newsgroups at K=LDA_K
# (default 1000).  EPOCHS (default 3; epoch 1 left out; LDA: iterations),
# ROUNDS (default 2) of each side, hosts of Q CPUs (default 0.2; the
# driver too) with links at Q x 1 gbit.  Per app and side: the median over
# the runs of the training loop's seconds an epoch and the hosts' mean
# compute / wait / idle / outside split (bench/scale_lib.sh's
# scale_summary), each run's seconds, then A/B (below 1.00: A is faster).
# The results must be the same bits on both sides (the DNN's saved
# parameters, LR's weights file, LDA's log-likelihood line), or it exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/hosts_ab.sh
. bench/lib.sh
. bench/scale_lib.sh
. bench/lr_synth.sh
switch=${SWITCH:-}
case $switch in ORION_NO_[A-Z_]*) ;; *) echo "$me: SWITCH must name an ORION_NO_* switch (ORION_NO_EARLY_FLUSH), not '$switch'" >&2; exit 2 ;; esac
apps=${APPS:-dnn,lr} n=${N:-8} lda_k=${LDA_K:-1000} q=${Q:-0.2} rounds=${ROUNDS:-2} epochs=${EPOCHS:-3}
dnn_limit=${DNN_LIMIT:-12000} lr_rows=${LR_ROWS:-250000}
fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
case $n in '' | *[!0-9]* | 0) echo "$me: N must be a count of hosts, not '$n'" >&2; exit 2 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "$me: ROUNDS must be 1 or more, not '$rounds'" >&2; exit 2 ;; esac
bench_epochs hosts_ab.sh EPOCHS "$epochs"
for a in $(echo "$apps" | tr ',' ' '); do
  case $a in dnn | lr | lda) ;; *) echo "$me: APPS: unknown app '$a' (dnn, lr, lda)" >&2; exit 2 ;; esac
done
docword=${ORION_DATA:-../shared/data}/20newsgroups-bydate/docword.20news.txt.gz
case ",$apps," in *,dnn,*) bench_need hosts_ab.sh "$fashion/train-images-idx3-ubyte.gz" ;; esac
case ",$apps," in *,lda,*) bench_need hosts_ab.sh "$docword" ;; esac
bench_need hosts_ab.sh bench/netcluster.sh
if [ "$(id -u)" != 0 ]; then
  echo "$me: skipped: network namespaces and cgroups need root"
  exit 0
fi
export ORION_LUA_PATH=${ORION_LUA_PATH:-$PWD/lua/?.lua}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$me: A default, B $switch=1; $n hosts of $q CPU, $rounds rounds, $epochs epochs, $(nproc) cores;" \
  "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# run APP SIDE R: one run; its summary line appended to $tmp/APP.SIDE, its
# result (parameters or weights) in $tmp/APP.SIDE.R.out.
run() {
  local a=$1 side=$2 r=$3 m=$tmp/$1.$2.$3.jsonl args off="" out=$tmp/$1.$2.$3.out
  [ "$side" = B ] && off=1
  case $a in
    dnn) args="apps/dnn/dnn.lua --data fashion-mnist:$fashion --epochs $epochs --shards $n --limit $dnn_limit --save $tmp/$a.$side.$r.out" ;;
    lr) args="apps/lr/lr.lua --train $tmp/lr.txt --test $tmp/lr-test.txt --epochs $epochs --tier c --eval-every 0 --weights $tmp/$a.$side.$r.out" ;;
    lda) args="apps/lda/lda.lua --corpus $docword --k $lda_k --iters $epochs --ll-every $epochs" ;;
  esac
  # shellcheck disable=SC2086 # args are the script's words
  env "$switch=$off" bench/netcluster.sh -n "$n" --cpu "$q" --driver-cpu "$q" \
    --logs "$tmp/logs" -- --quiet --loop-metrics --metrics "$m" $args > "$tmp/out" 2> "$tmp/err" ||
    { echo "$me: $a ($side) failed:" >&2; tail -n 20 "$tmp/out" "$tmp/err" >&2; exit 1; }
  scale_summary "$m" "$epochs" >> "$tmp/$a.$side"
  # LDA: its last line (the last iteration's log-likelihood) is the result
  [ "$a" != lda ] || tail -n 1 "$tmp/out" | awk '{ print $NF }' > "$out"
}
med() { awk -v f="$2" '{ print $f }' "$tmp/$1" | scale_median; }
# split APP SIDE: the hosts' mean compute/wait/idle/outside % over the runs.
split() {
  awk '{ for (j = 7; j <= NF; j++) { split($j, f, ":"); c += f[1]; w += f[2]; i += f[3]; h++ } }
    END { o = 1 - (c + w + i) / h; if (o < 0) o = 0
          printf "%d/%d/%d/%d", 100 * c / h + 0.5, 100 * w / h + 0.5, 100 * i / h + 0.5, 100 * o + 0.5 }' "$tmp/$1.$2"
}
for a in $(echo "$apps" | tr ',' ' '); do
  if [ "$a" = lr ]; then
    lr_synth "$tmp/lr.txt" "$lr_rows" 1 100000 10
    lr_synth "$tmp/lr-test.txt" $(((lr_rows + 9) / 10)) 2 100000 10
  fi
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
    for side in $order; do run "$a" "$side" "$r"; done
    cmp -s "$tmp/$a.A.$r.out" "$tmp/$a.B.$r.out" ||
      { echo "$me: $a, round $r: the results differ between A and B" >&2; exit 1; }
  done
  echo "$a, training loop $(cut -d' ' -f1 "$tmp/$a.A" | head -n 1): epoch s, hosts' compute/wait/idle/outside %"
  printf '  %-40s %8.4f  %s\n' "A: default" "$(med "$a.A" 2)" "$(split "$a" A)"
  printf '  %-40s %8.4f  %s\n' "B: $switch=1" "$(med "$a.B" 2)" "$(split "$a" B)"
  awk -v a="$(med "$a.A" 2)" -v b="$(med "$a.B" 2)" \
    'BEGIN { printf "  A/B %.2f (the same bits on both sides)\n", a / b }'
  echo "  runs (A): $(cut -d' ' -f2 "$tmp/$a.A" | tr '\n' ' ')  (B): $(cut -d' ' -f2 "$tmp/$a.B" | tr '\n' ' ')"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
