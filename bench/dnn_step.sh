#!/usr/bin/env bash
# bench/dnn_step.sh: the DNN app's SGD step on one OpenBLAS thread against
# its GEMMs alone, and against the step as it ran before issue 36's fusions,
# measured in the same process, interleaved (before, now, gemm, before, ...).
#
#   ./configure && make && bench/dnn_step.sh
#   LAYERS=784,1024,1024,10 bench/dnn_step.sh
#   OPENBLAS_CORETYPE=Haswell bench/dnn_step.sh
#
# LAYERS (default 784,256,10), BATCH (default 100), ROUNDS (default 5) of
# STEP_SECONDS (default 1.5) CPU seconds split between the three variants
# (bench/dnn_step.lua says what each runs).  Times are CPU time of the one
# process (os.clock), so the machine's load moves them less than wall
# time, though it still shares the caches.  Prints the median microseconds
# per step of each variant and their [min-max], then:
#   gemm/step    the step's GEMMs over the whole step: the fraction of the
#                sgemm ceiling one executor's steps can reach, before the
#                round's own costs (the model's fetch and averaging)
#   before/now   the speedup of the fused step
# and the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${LAYERS:-784,256,10}
batch=${BATCH:-100}
rounds=${ROUNDS:-5}
secs=${STEP_SECONDS:-1.5}
case $batch in '' | *[!0-9]* | 0) echo "bench/dnn_step.sh: BATCH must be a positive integer" >&2; exit 2 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "bench/dnn_step.sh: ROUNDS must be a positive integer" >&2; exit 2 ;; esac
case $layers in *[!0-9,]* | '' | ,* | *, | *,,*) echo "bench/dnn_step.sh: LAYERS must be sizes as 784,256,10, not '$layers'" >&2; exit 2 ;; esac
if [ ! -x ./orion-driver ]; then
  echo "bench/dnn_step.sh: build first (./configure && make)" >&2
  exit 1
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
out=$(./orion-driver --quiet --executors 0 bench/dnn_step.lua "$layers" "$batch" "$secs" "$rounds")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$out" | python3 -c '
import sys
v = {}
for line in sys.stdin:
    name, med, lo, hi = line.split()
    v[name] = float(med)
    print(f"{name:>7} {float(med):9.1f} us/step [{float(lo):.1f}-{float(hi):.1f}]")
g, b, n = v["gemm"], v["before"], v["now"]
print(f"gemm/step: {g / b:.2f} before, {g / n:.2f} now")
print(f"before/now: {b / n:.3f}")
'
echo "layers $layers, batch $batch, $rounds rounds, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(OpenBLAS picks)}"
echo "load average: $load_before before, $load_after after"
