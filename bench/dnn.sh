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
# 784,256,10, the app's), BATCH (default 100) on EXECS local executors
# (default 2, one OpenBLAS thread each), in ROUNDS rounds (default 3) of
# EPOCHS epochs each (default 4), and measures the sgemm rate before the
# first round and after every round: sgemm, train, sgemm, train, ...,
# sgemm, so that each training run's ceiling is measured right beside it,
# under the same load.  It prints:
#   per round          the sgemm rate before and after, samples/s (the
#                      median over epochs 2..EPOCHS: epoch 1 includes
#                      moving the training set to the executors), the
#                      ceiling (the mean of the two sgemm rates) and the
#                      ratio, and the last epoch's test accuracy
#   FLOP per sample    of one SGD step, counted per layer of in x out
#                      weights: forward 2 in out, weight gradient 2 in out,
#                      input gradient 2 in out (not for the first layer)
#   sgemm GFLOP/s      OpenBLAS sgemm through orion.nn's nn.gemm, one
#                      thread in each of P = min(EXECS, cores) processes
#                      run at once (as the executors run): on the shapes
#                      of one training step at this batch (the same
#                      products, each timed for SGEMM_SECONDS, default 1,
#                      in 5 slices whose median counts), and on
#                      1024x1024x1024 for reference; the sum over the P
#                      processes; the median of the bursts and their
#                      [min-max]
#   ceiling            samples/s if every executor did nothing but those
#                      products at the measured rate: rate / FLOP per
#                      sample
#   ratio              samples/s / ceiling: the median of the rounds'
#                      ratios and their [min-max]
#   ratio in CPU time  the same in CPU seconds, which the machine's load
#                      moves less than wall seconds: training samples per
#                      CPU second of the training bodies (the app's
#                      cpu_seconds record) over one thread's step-shape
#                      sgemm rate in CPU time / FLOP per sample; it leaves
#                      out the time between the bodies (a round's start
#                      and its averaging)
# A ratio above 1 means the ceiling was not measured right (training
# cannot outrun its own products): it is reported as a bug on stderr,
# not as a figure, and the script exits 3.  The load average before and
# after is printed.  Without the data it is skipped (exit 0), unless
# CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${DATA:-fashion-mnist}
epochs=${EPOCHS:-4}
rounds=${ROUNDS:-3}
sgemm_s=${SGEMM_SECONDS:-1}
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
case $rounds in
  '' | *[!0-9]* | 0) echo "bench/dnn.sh: ROUNDS must be 1 or more" >&2; exit 2 ;;
esac
if ! awk -v s="$sgemm_s" 'BEGIN { exit !(s + 0 >= 0.1 && s + 0 <= 60) }'; then
  echo "bench/dnn.sh: SGEMM_SECONDS must be a number of seconds from 0.1 to 60, not '$sgemm_s'" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# sgemm through orion.nn on the driver (no executors), one thread: GFLOP/s
# of 1024^3 and of one training step's products.
cat > "$tmp/sgemm.lua" <<'EOF'
local orion = require "orion"
local nn = orion.nn
local batch, layers, dur = tonumber(arg[1]), arg[2], tonumber(arg[3])
local sizes = {}
for f in layers:gmatch("%d+") do sizes[#sizes + 1] = tonumber(f) end
nn.threads(1)
-- Seconds per C = op(A) op(B) with C m x n and inner dimension k: the
-- median of 5 slices of dur / 5 seconds each.
local function secs(m, n, k, ta, tb)
  local A = ta and nn.matrix(k, m, 0.01) or nn.matrix(m, k, 0.01)
  local B = tb and nn.matrix(n, k, 0.01) or nn.matrix(k, n, 0.01)
  local C = nn.matrix(m, n)
  nn.gemm(C, A, B, 1, 0, ta, tb)
  local slices, cpu = {}, {}
  for i = 1, 5 do
    local reps, t0, c0 = 0, orion.clock(), os.clock()
    repeat
      nn.gemm(C, A, B, 1, 0, ta, tb)
      reps = reps + 1
    until orion.clock() - t0 > dur / 5
    slices[i] = (orion.clock() - t0) / reps
    cpu[i] = (os.clock() - c0) / reps
  end
  table.sort(slices)
  table.sort(cpu)
  return slices[3], cpu[3]
end
local big = 2 * 1024 ^ 3 / (secs(1024, 1024, 1024)) / 1e9
-- One step: per layer (in x out) the forward product H W, the weight
-- gradient H^T dZ (into the momentum), the input gradient dZ W^T (not for
-- the first layer), as the app runs them.
local flop, t, tc = 0, 0, 0
for l = 1, #sizes - 1 do
  local i, o = sizes[l], sizes[l + 1]
  local shapes = { { batch, o, i, false, false }, { i, o, batch, true, false } }
  if l > 1 then shapes[3] = { batch, i, o, false, true } end
  for _, s in ipairs(shapes) do
    flop = flop + 2 * s[1] * s[2] * s[3]
    local w, c = secs(s[1], s[2], s[3], s[4], s[5])
    t, tc = t + w, tc + c
  end
end
-- The last field: the step shapes' rate in CPU time (os.clock).
print(("sgemm %.1f %.1f %d %.1f"):format(big, flop / t / 1e9, flop // batch, flop / tc / 1e9))
EOF

# P single-thread processes at once; one line "sgemm BIG STEP FLOP" each,
# to FILE.
par=$(( execs < $(nproc) ? execs : $(nproc) ))
sgemm() {
  local i
  for i in $(seq 1 "$par"); do
    ./orion-driver --quiet --executors 0 "$tmp/sgemm.lua" "$batch" "$layers" "$sgemm_s" > "$tmp/sg.$i" &
  done
  wait
  cat "$tmp"/sg.* > "$1"
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
sgemm "$tmp/sgemm.0"
for r in $(seq 1 "$rounds"); do
  # 60 s of silence allowed both ways: the first epoch moves the training
  # set (188 MB for Fashion-MNIST) to the executors, slowly on a loaded
  # machine.
  ORION_HEARTBEAT_TIMEOUT=60 ./orion-driver --quiet --executors "$execs" \
    --heartbeat-timeout 60 --metrics "$tmp/m.$r.jsonl" apps/dnn/dnn.lua \
    --data "$kind:$dir" --layers "$layers" --epochs "$epochs" --batch "$batch" > "$tmp/out.$r.txt"
  sgemm "$tmp/sgemm.$r"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp" "$layers" "$execs" "$batch" "$par" "$load_before" "$load_after" "$rounds" <<'EOF'
import json, statistics, sys
tmp, layers, execs, batch, par = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rounds = int(sys.argv[8])
def burst(i):
    rows = [l.split() for l in open(f"{tmp}/sgemm.{i}")]
    return (sum(float(r[1]) for r in rows), sum(float(r[2]) for r in rows), int(rows[0][3]),
            statistics.mean(float(r[4]) for r in rows))
bursts = [burst(i) for i in range(rounds + 1)]
flop = bursts[0][2]
def mm(v):
    return f"{statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]"
ratios, ratios_big, rates, cpu_ratios = [], [], [], []
print(f"{'round':>5} {'sgemm before':>12} {'sgemm after':>11} {'samples/s':>10} {'ceiling':>9} {'ratio':>6} {'accuracy':>9}")
for r in range(1, rounds + 1):
    recs = [json.loads(l) for l in open(f"{tmp}/m.{r}.jsonl")]
    sps = statistics.median(x['samples_per_s'] for x in recs if x['epoch'] >= 2)
    step = (bursts[r - 1][1] + bursts[r][1]) / 2
    big = (bursts[r - 1][0] + bursts[r][0]) / 2
    ceil = step * 1e9 / flop
    ratios.append(sps / ceil)
    # In CPU time: samples per CPU second of the training bodies against
    # one thread's step-shape rate in CPU time (load moves both less).
    cpu = [x for x in recs if x['epoch'] >= 2 and x.get('cpu_seconds', 0) > 0]
    if cpu:
        per_cpu = statistics.median(x['samples_per_s'] * x['seconds'] / x['cpu_seconds'] for x in cpu)
        cpu_ratios.append(per_cpu / ((bursts[r - 1][3] + bursts[r][3]) / 2 * 1e9 / flop))
    ratios_big.append(sps / (big * 1e9 / flop))
    rates.append(sps)
    print(f"{r:>5} {bursts[r - 1][1]:>12.1f} {bursts[r][1]:>11.1f} {sps:>10.0f} {ceil:>9.0f} "
          f"{sps / ceil:>6.2f} {recs[-1]['accuracy']:>9.4f}")
steps = [b[1] for b in bursts]
bigs = [b[0] for b in bursts]
print(f"samples/s, median of the rounds' medians of epochs 2..N: {statistics.median(rates):.0f} [{min(rates):.0f}-{max(rates):.0f}]")
print(f"FLOP per sample: {flop} ({layers}, batch {batch}); {execs} executors x 1 OpenBLAS thread")
print(f"sgemm GFLOP/s, {par} single-thread processes at once, {len(bursts)} bursts: "
      f"{mm(steps)} on the training step's shapes, {mm(bigs)} on 1024^3")
print(f"ceiling: {statistics.median(steps) * 1e9 / flop:.0f} samples/s (step shapes), "
      f"{statistics.median(bigs) * 1e9 / flop:.0f} (1024^3)")
bad = [x for x in ratios + ratios_big if x > 1]
if bad:
    print(f"ratio achieved/ceiling: not a figure: {max(bad):.2f} is above 1 (see stderr)")
else:
    print(f"ratio achieved/ceiling: {statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] (step shapes), "
          f"{statistics.median(ratios_big):.2f} [{min(ratios_big):.2f}-{max(ratios_big):.2f}] (1024^3)")
if cpu_ratios:
    print(f"ratio in CPU time (samples per CPU second of the training bodies / one thread's "
          f"step-shape sgemm rate in CPU time): {statistics.median(cpu_ratios):.2f} "
          f"[{min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}]")
print(f"load average: {sys.argv[6]} before, {sys.argv[7]} after")
if bad:
    print(f"bench/dnn.sh: BUG: training ran at {max(bad):.2f} of the sgemm ceiling measured beside it; "
          "a ratio above 1 means the ceiling (or the FLOP count) is wrong, not that training beat it",
          file=sys.stderr)
    sys.exit(3)
EOF
