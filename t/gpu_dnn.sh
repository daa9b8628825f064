#!/bin/sh
# The GPU suite: apps/dnn/dnn.lua on one GPU executor (orion-driver
# --gpus 1) against the same run on one CPU executor: the GPU run's
# --metrics records say its training bodies ran orion.nn on the device
# (gpu > 0) and the CPU run's say they did not; with one shard both runs
# take the same SGD steps, so the last epoch's accuracy agrees within 0.01
# and the training loss within 1% (fp32 GEMMs add in another order).
# Skips (77) when orion-driver has no --gpus or no device is there.
srcdir=${ORION_SRCDIR:-.}
. "$srcdir/t/skip.sh"
driver=${ORION_DRIVER:-./orion-driver}
app=$srcdir/apps/dnn/dnn.lua
"$driver" --help 2>&1 | grep -q -- '--gpus' ||
  skip "no GPU: orion-driver has no --gpus option"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
set -- --epochs 5 --shards 1
if [ -f /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ] ||
   [ -f /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte ]; then
  set -- "$@" --data fashion-mnist --limit 10000
fi
if ! timeout 300 "$driver" --gpus 1 --metrics "$tmp/gpu.jsonl" "$app" "$@" \
    >"$tmp/gpu.out" 2>&1; then
  cat "$tmp/gpu.out"
  if grep -qi 'no GPU\|no CUDA\|no device\|CUDA driver' "$tmp/gpu.out"; then
    skip "no GPU: $(grep -i -m1 'GPU\|CUDA\|device' "$tmp/gpu.out")"
  fi
  echo "FAIL: the GPU run of dnn.lua $* failed (above)"
  exit 1
fi
if ! timeout 600 "$driver" --executors 1 --metrics "$tmp/cpu.jsonl" "$app" \
    "$@" >"$tmp/cpu.out" 2>&1; then
  cat "$tmp/cpu.out"
  echo "FAIL: the CPU run of dnn.lua $* failed (above)"
  exit 1
fi
echo "GPU run:"; cat "$tmp/gpu.out"
echo "CPU run:"; cat "$tmp/cpu.out"
# The value of numeric key $2 in the last record of file $1.
key() {
  tail -n 1 "$1" | sed -n "s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p"
}
ga=$(key "$tmp/gpu.jsonl" accuracy) ca=$(key "$tmp/cpu.jsonl" accuracy)
gl=$(key "$tmp/gpu.jsonl" loss) cl=$(key "$tmp/cpu.jsonl" loss)
gg=$(key "$tmp/gpu.jsonl" gpu) cg=$(key "$tmp/cpu.jsonl" gpu)
echo "last epoch: GPU accuracy $ga loss $gl gpu $gg; CPU accuracy $ca loss $cl gpu $cg"
awk -v ga="$ga" -v ca="$ca" -v gl="$gl" -v cl="$cl" -v gg="$gg" -v cg="$cg" '
  BEGIN {
    bad = 0
    if (gg == "" || gg + 0 < 1) { print "FAIL: the GPU run records gpu = " gg \
      " (its bodies did not run orion.nn on the device: does the executor " \
      "call orion_exec_nn_gpu?)"; bad = 1 }
    if (cg != "" && cg + 0 != 0) { print "FAIL: the CPU run records gpu = " cg; bad = 1 }
    d = ga - ca; if (d < 0) d = -d
    if (ga == "" || d > 0.01) { print "FAIL: accuracy GPU " ga " vs CPU " ca \
      " (tolerance 0.01)"; bad = 1 }
    r = gl - cl; if (r < 0) r = -r
    if (gl == "" || r > 0.01 * cl) { print "FAIL: loss GPU " gl " vs CPU " cl \
      " (tolerance 1%)"; bad = 1 }
    exit bad
  }' || exit 1
echo "PASS: dnn.lua on the GPU matches the CPU"
