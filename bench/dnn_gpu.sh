#!/usr/bin/env bash
# bench/dnn_gpu.sh: the DNN app on one GPU executor against cuBLAS sgemm's
# rate measured in the same run, and against one CPU executor.
#
#   ./configure && make && bench/dnn_gpu.sh      # two configurations (below)
#   CONFIGS="784,1024,1024,10:256" EPOCHS=4 bench/dnn_gpu.sh
#
# For each configuration LAYERS:BATCH of CONFIGS (default: the app's own
# 784,256,10 at batch 100, and a wide 784,2048,2048,10 at batch 512),
# trains apps/dnn/dnn.lua on Fashion-MNIST (Debian's dataset-fashion-mnist
# in $FASHION_DIR, default /usr/share/datasets/fashion-mnist) for EPOCHS
# (default 3) on one GPU executor (orion-driver --gpus 1) and prints:
#   samples/s           the median over epochs 2..EPOCHS, and the metrics'
#                       gpu key (training bodies whose orion.nn ran on the
#                       device; must be > 0)
#   FLOP per sample     of one SGD step: per layer of in x out weights,
#                       forward 2 in out, weight gradient 2 in out, input
#                       gradient 2 in out (not for the first layer)
#   app GEMM GFLOP/s    FLOP per sample x samples/s
#   sgemm GFLOP/s       bench/sgemm_rate: cuBLAS sgemm (fp32, no TF32) on
#                       the shapes of one training step at this batch,
#                       timed as one mix, and on 8192^3; run before and
#                       after training, the larger kept
#   fraction            app GEMM GFLOP/s / sgemm GFLOP/s on the step's
#                       shapes (the issue's goal: above 0.60)
#   CPU                 samples/s of the same configuration on one CPU
#                       executor with ORION_BLAS_THREADS = all cores
#                       (CPU_EPOCHS, default 2, on the first CPU_LIMIT
#                       training images, default 20000), and GPU/CPU.
# Skipped (exit 0) with a message without the data, without CUDA in the
# build, without --gpus in orion-driver or without a device; CI=true makes
# a missing dataset a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

configs=${CONFIGS:-784,256,10:100 784,2048,2048,10:512}
epochs=${EPOCHS:-3}
cpu_epochs=${CPU_EPOCHS:-2}
cpu_limit=${CPU_LIMIT:-20000}
dir=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}

skip() { echo "bench/dnn_gpu.sh: skipped: $*"; exit 0; }
if [ ! -f "$dir/train-images-idx3-ubyte.gz" ] && [ ! -f "$dir/train-images-idx3-ubyte" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "bench/dnn_gpu.sh: FAIL: no Fashion-MNIST in $dir (CI=true needs the data)" >&2
    exit 1
  fi
  skip "no Fashion-MNIST in $dir (apt-get install dataset-fashion-mnist, or set FASHION_DIR)"
fi
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/dnn_gpu.sh: build first (./configure && make)" >&2
  exit 1
fi
[ -x bench/sgemm_rate ] || skip "no GPU: this build has no CUDA (bench/sgemm_rate is built with it)"
# The help text is read whole first: under pipefail, grep -q closing the
# pipe early would fail the pipeline with orion-driver's SIGPIPE.
case $(./orion-driver --help 2>&1) in
  *--gpus*) ;;
  *) skip "no GPU: orion-driver has no --gpus option" ;;
esac
for e in "$epochs" "$cpu_epochs"; do
  case $e in
    '' | *[!0-9]* | 0 | 1) echo "bench/dnn_gpu.sh: EPOCHS and CPU_EPOCHS must be 2 or more" >&2; exit 2 ;;
  esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The median of key $2 over the records of $1 with epoch >= 2, and the
# last record's value of key $3.
stat() {
  python3 - "$@" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
print(statistics.median(r[sys.argv[2]] for r in recs if r['epoch'] >= 2), recs[-1].get(sys.argv[3], 'absent'),
      recs[-1]['accuracy'])
PY
}

# sgemm_rate's value of key $2 in file $1.
val() { sed -n "s/^$2 //p" "$1"; }

status=0
for cfg in $configs; do
  layers=${cfg%%:*} batch=${cfg##*:}
  echo "==== layers $layers, batch $batch"
  set +e
  bench/sgemm_rate "$layers" "$batch" > "$tmp/sg.before" 2>&1
  rc=$?
  set -e
  if [ $rc -eq 77 ]; then skip "$(cat "$tmp/sg.before")"; fi
  if [ $rc -ne 0 ]; then cat "$tmp/sg.before"; echo "bench/dnn_gpu.sh: sgemm_rate failed" >&2; exit 1; fi
  if ! ./orion-driver --quiet --gpus 1 --metrics "$tmp/gpu.jsonl" apps/dnn/dnn.lua \
      --data "fashion-mnist:$dir" --layers "$layers" --batch "$batch" --epochs "$epochs" \
      --shards 1 > "$tmp/gpu.out" 2>&1; then
    cat "$tmp/gpu.out"
    if grep -qi 'no GPU\|no CUDA\|no device\|CUDA driver' "$tmp/gpu.out"; then
      skip "no GPU: $(grep -i -m1 'GPU\|CUDA\|device' "$tmp/gpu.out")"
    fi
    echo "bench/dnn_gpu.sh: the GPU run failed (above)" >&2
    exit 1
  fi
  bench/sgemm_rate "$layers" "$batch" > "$tmp/sg.after" 2>&1 || true
  ORION_BLAS_THREADS=$(nproc) ./orion-driver --quiet --executors 1 --metrics "$tmp/cpu.jsonl" \
    apps/dnn/dnn.lua --data "fashion-mnist:$dir" --layers "$layers" --batch "$batch" \
    --epochs "$cpu_epochs" --limit "$cpu_limit" --shards 1 > "$tmp/cpu.out" 2>&1 ||
    { cat "$tmp/cpu.out"; echo "bench/dnn_gpu.sh: the CPU run failed (above)" >&2; exit 1; }
  cat "$tmp/sg.before"
  echo "GPU run:"; cat "$tmp/gpu.out"
  read -r gsps ggpu gacc < <(stat "$tmp/gpu.jsonl" samples_per_s gpu)
  read -r csps _ cacc < <(stat "$tmp/cpu.jsonl" samples_per_s gpu)
  python3 - "$tmp" "$gsps" "$ggpu" "$gacc" "$csps" "$cacc" "$layers" "$batch" <<'PY' || status=1
import sys
tmp, gsps, ggpu, gacc, csps, cacc, layers, batch = sys.argv[1:9]
gsps, csps = float(gsps), float(csps)
def read(name):
    d = {}
    for l in open(f"{tmp}/sg.{name}"):
        p = l.split()
        if len(p) == 2:
            try: d[p[0]] = float(p[1])
            except ValueError: pass
    return d
b, a = read('before'), read('after')
flop = b['flop_per_sample']
mix = max(b['mix_gflops'], a.get('mix_gflops', 0))
sq = max(b['square_gflops'], a.get('square_gflops', 0))
app = flop * gsps / 1e9
frac = app / mix
print(f"GPU: {gsps:.0f} samples/s (median of epochs 2..), test accuracy {float(gacc):.4f}, gpu = {ggpu}")
print(f"FLOP per sample: {flop:.0f} ({layers}, batch {batch})")
print(f"app GEMM GFLOP/s: {app:.1f}; cuBLAS sgemm GFLOP/s: {mix:.1f} on the step's shapes, {sq:.1f} on 8192^3")
print(f"fraction of sgemm's rate: {frac:.2f} (step shapes; goal above 0.60: {'met' if frac > 0.6 else 'not met'}), "
      f"{app / sq:.2f} of 8192^3")
print(f"CPU (1 executor, all cores): {csps:.0f} samples/s, test accuracy {float(cacc):.4f}; GPU/CPU {gsps / csps:.1f}x")
if ggpu in ('absent', '0', '0.0'):
    print("FAIL: the GPU run's records say gpu =", ggpu, "(orion.nn did not run on the device)")
    sys.exit(1)
PY
done
exit $status
