#!/usr/bin/env bash
# bench/dnn.sh: the DNN app's training speed against the sgemm ceiling,
# measured in the same run.
#
#   ./configure && make && bench/dnn.sh        # Fashion-MNIST, the app's defaults
#   LAYERS=784,1024,1024,10 EPOCHS=6 bench/dnn.sh
#   DATA=mnist LAYERS=784,1024,1024,10 EPOCHS=6 bench/dnn.sh
#
# Trains apps/dnn/dnn.lua on DATA (default fashion-mnist: Debian's
# dataset-fashion-mnist in $FASHION_DIR, default
# /usr/share/datasets/fashion-mnist, 60k training and 10k test images;
# mnist: the 8000/2000 split of $ORION_DATA/mnist) with LAYERS (default
# 784,256,10, the app's), EPOCHS (default 10), BATCH (default 100) on EXECS
# local executors (default 2, one OpenBLAS thread each), and prints:
#   the app's epochs   seconds, samples/s, loss and test accuracy per epoch
#   samples/s          the median over epochs 2..EPOCHS (epoch 1 includes
#                      moving the training set to the executors)
#   FLOP per sample    of one SGD step, counted per layer of in x out
#                      weights: forward 2 in out, weight gradient 2 in out,
#                      input gradient 2 in out (not for the first layer)
#   sgemm GFLOP/s      OpenBLAS sgemm through orion.nn's nn.gemm, one
#                      thread in each of P = min(EXECS, cores) processes
#                      run at once (as the executors run): on the shapes
#                      of one training step at this batch (the same
#                      products, timed as one mix), and on 1024x1024x1024
#                      for reference; the sum over the P processes
#   ceiling            samples/s if every executor did nothing but those
#                      products at the measured rate: rate / FLOP per
#                      sample
#   ratio              samples/s / ceiling
# The sgemm runs before and after training; the larger of each pair is used
# (the machine may be shared).  The load average before and after is
# printed.  Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${DATA:-fashion-mnist}
epochs=${EPOCHS:-10}
batch=${BATCH:-100}
execs=${EXECS:-2}
layers=${LAYERS:-784,256,10}

case $kind in
  fashion-mnist)
    dir=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
    need=$dir/train-images-idx3-ubyte.gz
    hint="apt-get install dataset-fashion-mnist, or set FASHION_DIR" ;;
  mnist)
    dir=${ORION_DATA:-../shared/data}/mnist
    need=$dir/t10k-images-idx3-ubyte.gz
    hint="set ORION_DATA" ;;
  *) echo "bench/dnn.sh: DATA must be fashion-mnist or mnist, not '$kind'" >&2; exit 2 ;;
esac
if [ ! -f "$need" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "bench/dnn.sh: FAIL: $need not found (CI=true needs the data)" >&2
    exit 1
  fi
  echo "bench/dnn.sh: skipped: $need not found ($hint)"
  exit 0
fi
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/dnn.sh: build first (./configure && make)" >&2
  exit 1
fi
case $epochs in
  '' | *[!0-9]* | 0 | 1) echo "bench/dnn.sh: EPOCHS must be 2 or more" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# sgemm through orion.nn on the driver (no executors), one thread: GFLOP/s
# of 1024^3 and of one training step's products.
cat > "$tmp/sgemm.lua" <<'EOF'
local orion = require "orion"
local nn = orion.nn
local batch, layers = tonumber(arg[1]), arg[2]
local sizes = {}
for f in layers:gmatch("%d+") do sizes[#sizes + 1] = tonumber(f) end
nn.threads(1)
-- Seconds per C = op(A) op(B) with C m x n and inner dimension k.
local function secs(m, n, k, ta, tb)
  local A = ta and nn.matrix(k, m, 0.01) or nn.matrix(m, k, 0.01)
  local B = tb and nn.matrix(n, k, 0.01) or nn.matrix(k, n, 0.01)
  local C = nn.matrix(m, n)
  nn.gemm(C, A, B, 1, 0, ta, tb)
  local reps, t0 = 0, orion.clock()
  repeat
    nn.gemm(C, A, B, 1, 0, ta, tb)
    reps = reps + 1
  until orion.clock() - t0 > 0.3
  return (orion.clock() - t0) / reps
end
local big = 2 * 1024 ^ 3 / secs(1024, 1024, 1024) / 1e9
-- One step: per layer (in x out) the forward product H W, the weight
-- gradient H^T dZ (into the momentum), the input gradient dZ W^T (not for
-- the first layer), as the app runs them.
local flop, t = 0, 0
for l = 1, #sizes - 1 do
  local i, o = sizes[l], sizes[l + 1]
  local shapes = { { batch, o, i, false, false }, { i, o, batch, true, false } }
  if l > 1 then shapes[3] = { batch, i, o, false, true } end
  for _, s in ipairs(shapes) do
    flop = flop + 2 * s[1] * s[2] * s[3]
    t = t + secs(s[1], s[2], s[3], s[4], s[5])
  end
end
print(("sgemm %.1f %.1f %d"):format(big, flop / t / 1e9, flop // batch))
EOF

# P single-thread processes at once; one line "sgemm BIG STEP FLOP" each.
par=$(( execs < $(nproc) ? execs : $(nproc) ))
sgemm() {
  local i
  for i in $(seq 1 "$par"); do
    ./orion-driver --quiet --executors 0 "$tmp/sgemm.lua" "$batch" "$layers" > "$tmp/sg.$i" &
  done
  wait
  cat "$tmp"/sg.*
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
sgemm > "$tmp/sgemm.before"
# 60 s of silence allowed both ways: the first epoch moves the training set
# (188 MB for Fashion-MNIST) to the executors, slowly on a loaded machine.
ORION_HEARTBEAT_TIMEOUT=60 ./orion-driver --quiet --executors "$execs" \
  --heartbeat-timeout 60 --metrics "$tmp/m.jsonl" apps/dnn/dnn.lua \
  --data "$kind:$dir" --layers "$layers" --epochs "$epochs" --batch "$batch" > "$tmp/out.txt"
sgemm > "$tmp/sgemm.after"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

cat "$tmp/out.txt"
python3 - "$tmp" "$layers" "$execs" "$batch" "$par" "$load_before" "$load_after" <<'EOF'
import json, statistics, sys
tmp, layers, execs, batch, par = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
recs = [json.loads(l) for l in open(tmp + '/m.jsonl')]
sps = statistics.median(r['samples_per_s'] for r in recs if r['epoch'] >= 2)
big = step = 0.0
for name in ('before', 'after'):
    rows = [l.split() for l in open(tmp + '/sgemm.' + name)]
    big = max(big, sum(float(r[1]) for r in rows))
    step = max(step, sum(float(r[2]) for r in rows))
    flop = int(rows[0][3])
ceil_step = step * 1e9 / flop
ceil_big = big * 1e9 / flop
print(f"samples/s (median of epochs 2..{recs[-1]['epoch']}): {sps:.0f}   "
      f"test accuracy after epoch {recs[-1]['epoch']}: {recs[-1]['accuracy']:.4f}")
print(f"FLOP per sample: {flop} ({layers}, batch {batch}); {execs} executors x 1 OpenBLAS thread")
print(f"sgemm GFLOP/s, {par} single-thread processes at once: {step:.1f} on the training step's shapes, {big:.1f} on 1024^3")
print(f"ceiling: {ceil_step:.0f} samples/s (step shapes), {ceil_big:.0f} (1024^3)")
print(f"ratio achieved/ceiling: {sps / ceil_step:.2f} (step shapes), {sps / ceil_big:.2f} (1024^3)")
print(f"load average: {sys.argv[6]} before, {sys.argv[7]} after")
EOF
