#!/usr/bin/env bash
# bench/dnn.sh: the DNN app's training speed against the sgemm ceiling.
#
#   ./configure && make && bench/dnn.sh
#   EPOCHS=6 BATCH=100 EXECS=2 LAYERS=784,1024,1024,10 bench/dnn.sh
#
# Trains a 784-1024-1024-10 MLP (LAYERS) on the MNIST split
# ($ORION_DATA/mnist: 8000 training images) with apps/dnn/dnn.lua on EXECS
# local executors (default 2, one OpenBLAS thread each), batch BATCH
# (default 100, the app's default), EPOCHS epochs (default 6), and prints:
#   samples/s       median over epochs 2..EPOCHS (epoch 1 includes starting
#                   the executors and the first copy of the data)
#   accuracy        held-out accuracy after the last epoch
#   sgemm GFLOP/s   OpenBLAS sgemm measured in this run, through orion.nn,
#                   on 1 and on 2 threads: 1024x1024x1024 (the ceiling) and
#                   the shapes of one training step at this batch size
#   ceiling         samples/s the sgemm rate allows: rate / (6 FLOP x
#                   parameters per sample), from the measured 2-thread rate
#                   and from ../shared/anchors.md (260 GFLOP/s on 2 cores)
#   fraction        samples/s / ceiling (goal: at least 0.70)
# The sgemm runs before and after training; the larger of each pair is used
# (the machine may be shared).  Without the data it is skipped (exit 0),
# unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

data=${ORION_DATA:-../shared/data}
mnist=$data/mnist
epochs=${EPOCHS:-6}
batch=${BATCH:-100}
execs=${EXECS:-2}
layers=${LAYERS:-784,1024,1024,10}
anchor=${ANCHOR_GFLOPS:-260}

if [ ! -f "$mnist/t10k-images-idx3-ubyte.gz" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "bench/dnn.sh: FAIL: $mnist/t10k-images-idx3-ubyte.gz not found (CI=true needs the data)" >&2
    exit 1
  fi
  echo "bench/dnn.sh: skipped: $mnist/t10k-images-idx3-ubyte.gz not found (set ORION_DATA)"
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

# sgemm through orion.nn on the driver (no executors): GFLOP/s per shape.
cat > "$tmp/sgemm.lua" <<'EOF'
local orion = require "orion"
local nn = orion.nn
local batch, layers = tonumber(arg[1]), arg[2]
local sizes = {}
for f in layers:gmatch("%d+") do sizes[#sizes + 1] = tonumber(f) end
local function rate(m, n, k, ta, threads)
  nn.threads(threads)
  local A = ta and nn.matrix(k, m, 0.01) or nn.matrix(m, k, 0.01)
  local B, C = nn.matrix(k, n, 0.01), nn.matrix(m, n)
  nn.gemm(C, A, B, 1, 0, ta)
  local reps, t0 = 0, orion.clock()
  repeat
    nn.gemm(C, A, B, 1, 0, ta)
    reps = reps + 1
  until orion.clock() - t0 > 0.5
  return 2 * m * n * k * reps / (orion.clock() - t0) / 1e9
end
for threads = 1, 2 do
  -- One training step's products at this batch: forward, weight gradient,
  -- input gradient, for every layer, timed as one mix.
  local flop, secs = 0, 0
  for l = 1, #sizes - 1 do
    local i, o = sizes[l], sizes[l + 1]
    for _, s in ipairs { { batch, o, i, false }, { i, o, batch, true }, { batch, i, o, false } } do
      local g = rate(s[1], s[2], s[3], s[4], threads)
      flop = flop + 2 * s[1] * s[2] * s[3]
      secs = secs + 2 * s[1] * s[2] * s[3] / (g * 1e9)
    end
  end
  print(("sgemm %d %.1f %.1f"):format(threads, rate(1024, 1024, 1024, false, threads), flop / secs / 1e9))
end
EOF

sgemm() { ./orion-driver --quiet --executors 0 "$tmp/sgemm.lua" "$batch" "$layers"; }
sgemm > "$tmp/sgemm.before"
ORION_EXECUTORS=$execs ./orion-driver --quiet --metrics "$tmp/m.jsonl" apps/dnn/dnn.lua \
  --data "mnist:$mnist" --layers "$layers" --epochs "$epochs" --batch "$batch" > "$tmp/out.txt"
sgemm > "$tmp/sgemm.after"

python3 - "$tmp" "$layers" "$anchor" "$execs" "$batch" <<'EOF'
import json, statistics, sys
tmp, layers, anchor, execs, batch = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sizes = [int(x) for x in layers.split(',')]
params = sum(sizes[i] * sizes[i + 1] + sizes[i + 1] for i in range(len(sizes) - 1))
recs = [json.loads(l) for l in open(tmp + '/m.jsonl')]
sps = statistics.median(r['samples_per_s'] for r in recs if r['epoch'] >= 2)
acc = recs[-1]['accuracy']
g = {}
for name in ('before', 'after'):
    for line in open(tmp + '/sgemm.' + name):
        _, th, big, step = line.split()
        th = int(th)
        old = g.get(th, (0.0, 0.0))
        g[th] = (max(old[0], float(big)), max(old[1], float(step)))
flop = 6.0 * params
ceil_meas = g[2][0] * 1e9 / flop
ceil_step = g[2][1] * 1e9 / flop
ceil_anchor = anchor * 1e9 / flop
print(f"dnn {layers} ({params} parameters), MNIST 8000 train images, batch {batch}, {execs} executors x 1 OpenBLAS thread")
print(f"  samples/s (median of epochs 2..{recs[-1]['epoch']}): {sps:.0f}   held-out accuracy: {acc:.4f}")
print(f"  sgemm GFLOP/s 1024^3: {g[1][0]:.1f} on 1 thread, {g[2][0]:.1f} on 2;"
      f" training-step shapes: {g[1][1]:.1f} on 1, {g[2][1]:.1f} on 2")
print(f"  ceiling (6 FLOP/parameter/sample): measured {ceil_meas:.0f} samples/s,"
      f" anchors.md ({anchor:.0f} GFLOP/s) {ceil_anchor:.0f} samples/s")
print(f"  fraction of the ceiling: {sps / ceil_meas:.2f} of measured, {sps / ceil_anchor:.2f} of anchors.md"
      f" ({sps / ceil_step:.2f} of the step-shaped sgemm rate)")
EOF
