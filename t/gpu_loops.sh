#!/bin/sh
# The GPU suite's loop test (make check-gpu; needs a device, skips with
# "no GPU" without one): tier "gpu" against the CPU tier on one GPU
# executor (orion-driver --gpus 1), printing every comparison:
#
#  1. t/cluster/gpu_tier.lua gpu, with the 2d rotation's steps and again
#     with ORION_GPU_CLAIM=1 (fast bodies' rotations claimed): each body
#     with tier "c" and tier "gpu";
#     the "gpu" run must report tier "gpu"; integer arrays and accumulators
#     bit-identical, floats within a relative 1e-9 where the device keeps
#     the CPU's order of dependent elements (1d, none, 2d-ordered), 1e-3
#     for the 2d rotation (another serial order of the block).
#  2. The golden loops (t/analysis/*.lua but golden.lua and pending_*),
#     whose loops run with tier "auto", so on the device where the body is
#     in the GPU subset: each must pass with at least as many "golden ok: "
#     lines as it has G.check lines (ordered loops bit-identical to the
#     serial run), as t/test_cluster.c's goldens_on checks on the CPU.
#  3. The MF app, 3 epochs (MovieLens-1M from ../shared/data when there,
#     else the embedded synthetic set), --tier c on one CPU executor
#     against --gpu: the GPU's final train and test RMSE at most 0.02 above
#     the CPU's (the 2-D rotation on the device is another SGD order, which
#     a serial run allows, so the trajectories differ; the first device
#     run here trained faster than the CPU's order), the seconds per epoch
#     of both printed; again under --gpu-memory 8M (streamed).
#  5. The LDA app on the embedded corpus, both samplers: with --gpu-grid 1
#     the CPU's log-likelihoods and topics digit for digit; on the default
#     grid 10 sweeps with --check (the counts kept, the buffered topic
#     totals among them, must be those of the assignments) and the final
#     log-likelihood per token within the CPU's band (section 5 says which).
# Prints the device (nvidia-smi -L), each comparison, and a summary.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${ORION_BUILDDIR:-$(pwd)}
drv="$build/orion-driver"
PATH="$build:$PATH"
export PATH

if ! command -v nvidia-smi >/dev/null 2>&1 ||
   ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU (nvidia-smi lists no device)"
  exit 77
fi
echo "device: $(nvidia-smi -L | head -n 1)"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# Every run has a timeout (timeout(1)): a hung device wait fails the run.
run() {
  timeout -k 10 600 "$@"
}

# 1. tier "gpu" against tier "c": with the rotation's steps, then with
# fast bodies' rotations claimed (ORION_GPU_CLAIM=1, util/gclaim.h).
for claim in 0 1; do
  echo "== gpu_tier.lua on 1 GPU executor, ORION_GPU_CLAIM=$claim"
  if ORION_GPU_CLAIM=$claim run "$drv" --gpus 1 "$src/t/cluster/gpu_tier.lua" gpu \
      >"$tmp/tier" 2>&1; then
    cat "$tmp/tier"
    n=$(grep -c '^gpu tier agrees: .* (ran gpu)$' "$tmp/tier")
    [ "$n" -eq 10 ] ||
      fail "gpu_tier.lua (ORION_GPU_CLAIM=$claim): $n of 10 bodies agree on the device"
  else
    cat "$tmp/tier"
    fail "gpu_tier.lua (ORION_GPU_CLAIM=$claim) exited with status $?"
  fi
done

# 2. The golden loops, GOLDEN_JOBS (default 8) drivers at a time, each
# with its own GPU executor: building each body with nvcc takes seconds,
# and the files are independent.
echo "== golden loops on 1 GPU executor each, ${GOLDEN_JOBS:-8} at a time"
for f in "$src"/t/analysis/*.lua; do
  b=$(basename "$f")
  case $b in golden.lua | pending_*) continue ;; esac
  echo "$f"
done > "$tmp/goldens"
one_golden() {
  b=$(basename "$1")
  t0=$(date +%s.%N)
  if timeout -k 10 600 "$drv" --gpus 1 "$1" >"$tmp/g.$b" 2>&1; then st=0; else st=$?; fi
  t1=$(date +%s.%N)
  echo "$st $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" > "$tmp/st.$b"
}
running=0
while read -r f; do
  one_golden "$f" &
  running=$((running + 1))
  if [ "$running" -ge "${GOLDEN_JOBS:-8}" ]; then wait; running=0; fi
done < "$tmp/goldens"
wait
while read -r f; do
  b=$(basename "$f")
  want=$(grep -c '^G\.check' "$f")
  read -r st secs < "$tmp/st.$b"
  got=$(grep -c 'golden ok: ' "$tmp/g.$b")
  ongpu=$(grep -c 'runs on the CPU' "$tmp/g.$b")
  printf '%-40s exit %d, %d of %d checks, %d CPU notes, %.2f s\n' "$b" "$st" \
    "$got" "$want" "$ongpu" "$secs"
  if [ "$st" -ne 0 ] || [ "$got" -lt "$want" ]; then
    sed 's/^/    /' "$tmp/g.$b" | tail -n 30
    fail "$b on the device"
  fi
done < "$tmp/goldens"

# 3. The MF app.
data=$src/../shared/data/movielens-1m
if [ -f "$data/ratings.train.txt.gz" ] && [ -f "$data/ratings.test.txt.gz" ]; then
  mfdata="--train $data/ratings.train.txt.gz --test $data/ratings.test.txt.gz"
  echo "== MF on MovieLens-1M, 3 epochs"
else
  mfdata=""
  echo "== MF on the embedded synthetic ratings, 3 epochs (no MovieLens-1M in ../shared/data)"
fi
# shellcheck disable=SC2086
run "$drv" --executors 1 "$src/apps/mf/mf.lua" $mfdata --epochs 3 --tier c \
  >"$tmp/mf_c" 2>&1 || fail "mf.lua --tier c exited with status $?"
# shellcheck disable=SC2086
run "$drv" --gpus 1 --metrics "$tmp/mf_gpu.jsonl" "$src/apps/mf/mf.lua" $mfdata \
  --epochs 3 --gpu >"$tmp/mf_g" 2>&1 || fail "mf.lua --gpu exited with status $?"
echo "-- CPU (--tier c, 1 executor):"
cat "$tmp/mf_c"
echo "-- GPU (--gpu, 1 GPU executor):"
cat "$tmp/mf_g"
grep -q '"tier":"gpu"' "$tmp/mf_gpu.jsonl" 2>/dev/null ||
  fail "mf.lua --gpu: the metrics do not say tier gpu"
last() { awk '$1 ~ /^[0-9]+$/ { tr = $3; te = $4 } END { print tr, te }' "$1"; }
# The last epoch's RMSEs of GPU run $2 against the CPU's ($1 names it).
compare_mf() {
  # shellcheck disable=SC2046 # two words each
  set -- "$1" $(last "$tmp/mf_c") $(last "$2")
  if [ $# -eq 5 ]; then
    echo "$1 final RMSE: train $2 (c) vs $4 (gpu), test $3 (c) vs $5 (gpu); the GPU's at most 0.02 above"
    awk -v a="$2" -v b="$4" -v c="$3" -v d="$5" 'BEGIN {
      dc = (c == "-" || d == "-") ? 0 : d - c
      exit !(b - a <= 0.02 && dc <= 0.02) }' ||
      fail "$1: the GPU's RMSE is more than 0.02 above the CPU's"
  else
    fail "$1: no epoch lines to compare"
  fi
}
compare_mf MF "$tmp/mf_g"

# 4. The same with device memory capped below the ratings' size: the
# block's elements stream through in chunks (executor/exec_gbody.c), and the
# result is one a serial run allows, as uncapped.
# shellcheck disable=SC2086
run "$drv" --gpus 1 --gpu-memory 8M "$src/apps/mf/mf.lua" $mfdata \
  --epochs 3 --gpu >"$tmp/mf_cap" 2>&1 || fail "mf.lua --gpu under an 8M cap exited with status $?"
echo "-- GPU with --gpu-memory 8M:"
cat "$tmp/mf_cap"
compare_mf "MF under the cap" "$tmp/mf_cap"

# 5. LDA on the embedded corpus, the sparse and the dense sampler: each
# block is a device grid of documents x words, the topic totals' changes
# added on the device through their buffer, math.random a stream per
# group.  Three checks each:
#  - exact: with --gpu-grid 1 a block is one group drawing from the block's
#    own stream, in the CPU's element order, so 4 sweeps on 2 x 2 blocks
#    must print the CPU's log-likelihood after every sweep and its topics,
#    digit for digit (the topic totals are integers);
#  - --check on the default grid: the counts the sweeps kept (documents',
#    words' and the buffered totals) must be those of the final
#    assignments, which a lost or doubled update would break;
#  - the default grid's log-likelihood after 10 sweeps must lie within
#    0.03 of the band of the CPU's at the automatic partitioning and at 64
#    x 64 blocks: the draws differ, and a 10-sweep chain on 40k tokens
#    moves by about 0.06 between those two partitionings on the CPU alone
#    (finer blocks, higher; the device grid is finer still).
ll_rows() { awk '$1 ~ /^[0-9]+$/ && $4 != "-" { print $1, $4 } /^topic/' "$1"; }
for sampler in sparse dense; do
  lda="$src/apps/lda/lda.lua --sampler $sampler"
  run "$drv" --executors 1 $lda --iters 4 --ll-every 1 --partitions 2 \
    >"$tmp/lda_c1" 2>&1 || fail "lda.lua --sampler $sampler --partitions 2 exited with status $?"
  run "$drv" --gpus 1 $lda --iters 4 --ll-every 1 --partitions 2 --gpu --gpu-grid 1 \
    >"$tmp/lda_g1" 2>&1 || fail "lda.lua --sampler $sampler --gpu --gpu-grid 1 exited with status $?"
  ll_rows "$tmp/lda_c1" >"$tmp/lda_c1.rows"
  ll_rows "$tmp/lda_g1" >"$tmp/lda_g1.rows"
  echo "-- LDA, --sampler $sampler, --gpu-grid 1 against the CPU, 4 sweeps:"
  paste -d ' ' "$tmp/lda_c1.rows" "$tmp/lda_g1.rows" | grep -v '^topic' | head -n 4
  if [ ! -s "$tmp/lda_c1.rows" ] || ! cmp -s "$tmp/lda_c1.rows" "$tmp/lda_g1.rows"; then
    diff "$tmp/lda_c1.rows" "$tmp/lda_g1.rows" | head -n 10
    fail "lda.lua --sampler $sampler --gpu --gpu-grid 1: not the CPU's log-likelihoods and topics"
  fi
  grep -q 'runs on the CPU' "$tmp/lda_g1" &&
    fail "lda.lua --sampler $sampler --gpu --gpu-grid 1: a sweep ran on the CPU"

  run "$drv" --executors 1 $lda --iters 10 >"$tmp/lda_c" 2>&1 ||
    fail "lda.lua --sampler $sampler exited with status $?"
  run "$drv" --executors 1 $lda --iters 10 --partitions 64 >"$tmp/lda_c64" 2>&1 ||
    fail "lda.lua --sampler $sampler --partitions 64 exited with status $?"
  run "$drv" --gpus 1 $lda --iters 10 --check --gpu >"$tmp/lda_g" 2>&1 ||
    fail "lda.lua --sampler $sampler --gpu exited with status $?"
  echo "-- LDA, --sampler $sampler, GPU:"
  cat "$tmp/lda_g"
  if grep -q 'runs on the CPU' "$tmp/lda_g"; then
    fail "lda.lua --sampler $sampler --gpu: a sweep ran on the CPU"
  fi
  grep -q '^# check: the document, word and topic counts match' "$tmp/lda_g" ||
    fail "lda.lua --sampler $sampler --gpu: --check did not pass"
  llc=$(awk '$1 == 10 { print $4 }' "$tmp/lda_c")
  llc64=$(awk '$1 == 10 { print $4 }' "$tmp/lda_c64")
  llg=$(awk '$1 == 10 { print $4 }' "$tmp/lda_g")
  echo "LDA $sampler: log-likelihood per token after 10 sweeps $llg (gpu); CPU $llc (automatic blocks), $llc64 (64 x 64); band +-0.03"
  awk -v a="$llc" -v b="$llc64" -v g="$llg" 'BEGIN {
    lo = a < b ? a : b; hi = a < b ? b : a
    exit !(a != "" && b != "" && g != "" && g >= lo - 0.03 && g <= hi + 0.03) }' ||
    fail "lda.lua --sampler $sampler: the GPU's log-likelihood is outside the CPU's band"
done

if [ "$fails" -gt 0 ]; then
  echo "gpu_loops: $fails failure(s)"
  exit 1
fi
echo "gpu_loops: all comparisons passed"
