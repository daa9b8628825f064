#!/usr/bin/env bash
# bench/gpu.sh: MF on one GPU executor (issue 20's benchmark).
#
#   ./configure && make && bench/gpu.sh        (a CUDA build, on a machine with a GPU)
#   EPOCHS=20 K=128 SYN=1000000,200000,100000000 SYN_EPOCHS=3 \
#     LIBMF=/path/to/libmf LIBMF_THREADS=16 bench/gpu.sh
#
# Rows, all at K (default 128), each a fresh `orion-driver` run:
#   ml1m gpu     apps/mf/mf.lua --gpu on `orion-driver --gpus 1
#                --partitions GPU_PARTS` (default 1: the one executor's
#                device grid cuts the whole matrix itself), MovieLens-1M
#                ($ORION_DATA/movielens-1m), EPOCHS epochs (default 20)
#   ml1m claimed the GPU run with ORION_GPU_CLAIM=1: the 2d rotation's
#                cells claimed by warps in one kernel (util/gclaim.h)
#                instead of its steps, one launch each; the ratio is
#                printed
#   ml1m cpu     the same app on the CPU tier, CPU_EXECS local executors
#                (default 2), for the GPU/CPU ratio on this machine
#   ml1m LIBMF   $LIBMF/mf-train (LIBMF names a folder holding LIBMF's mf-train)
#                with LIBMF_THREADS threads (default: nproc), run here in the
#                same script: seconds per epoch = (time of 21 iterations - time
#                of 1) / 20, so loading is left out; RMSE after 20 iterations
#                with LIBMF's defaults (lr 0.1, L2 0.1).  Without $LIBMF the
#                anchors' figure (AVX build, 2 threads: 53.9 M/s at K=128,
#                RMSE 0.861, ../shared/anchors.md) is used and marked so
#   ml1m capped  the GPU run with the executor's device memory capped at CAP
#                (default 8M, below the 23 MB of ratings and factors), so its
#                partitions must stream through device memory; its slowdown
#                against the uncapped run is printed
#   syn gpu      the embedded generator at SYN (users,items,ratings; default
#                1000000,200000,100000000), SYN_EPOCHS epochs (default 3),
#                --partitions SYN_PARTS (default 8: a block's elements must
#                fit one frame, 256 MiB); SYN=none skips it
#
# Columns: Mupd/s (training ratings / training-pass seconds, the mean of
# epochs 2..N), vs LIBMF (that rate / LIBMF's), of HBM (that rate / the
# device's memory-bandwidth bound: peak GB/s / bytes per update, where an
# update reads and writes one row of W and one of H, 4 x 4K bytes for f32,
# plus the 20-byte rating), test RMSE after the last epoch.
# Without a GPU it says so and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m gpu.sh
epochs=${EPOCHS:-20}
k=${K:-128}
cpu_execs=${CPU_EXECS:-2}
cap=${CAP:-8M}
gpu_parts=${GPU_PARTS:-1}
syn_parts=${SYN_PARTS:-8}
syn=${SYN:-1000000,200000,100000000}
syn_epochs=${SYN_EPOCHS:-3}
bench_epochs gpu.sh EPOCHS "$epochs"
bench_epochs gpu.sh SYN_EPOCHS "$syn_epochs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Is there a device?  The driver's own check, with its reason.
echo 'print("ok")' > "$tmp/probe.lua"
if ! ./orion-driver --gpus 1 "$tmp/probe.lua" > "$tmp/probe" 2>&1; then
  echo "bench/gpu.sh: skipped: $(grep -m1 -i 'gpu' "$tmp/probe" || cat "$tmp/probe")"
  exit 0
fi

bytes_per_update=$((16 * k + 20))

# run NAME METRICS DRIVER-ARGS... -- APP-ARGS...: one mf.lua run.
run() {
  local name=$1 m=$2
  shift 2
  local dargs=()
  while [ "$1" != "--" ]; do dargs+=("$1"); shift; done
  shift
  if ! ./orion-driver --metrics "$m" "${dargs[@]}" apps/mf/mf.lua --k "$k" "$@" \
      > "$tmp/$name.out" 2>&1; then
    echo "  $name: FAILED:"; sed 's/^/    /' "$tmp/$name.out" | tail -12
    return 1
  fi
  return 0
}

# The device's peak bandwidth (GB/s): $HBM_GBPS (t/gpu_backend prints it,
# "peak 4814 GB/s" on an H200); without it the column shows "-".
hbm=${HBM_GBPS:-}

printf 'MF, K=%s, f32 factors; %s cores; bytes per update %s\n' "$k" "$(nproc)" "$bytes_per_update"
printf '%-13s %9s %9s %9s %8s %9s %s\n' run "Mupd/s" "train ms" "vs LIBMF" "of HBM" "test-rmse" note

# LIBMF first, so its figure is there for the ratios.
lib_rate="" lib_rmse="" lib_note=""
if [ -n "${LIBMF:-}" ] && [ -x "$LIBMF/mf-train" ]; then
  zcat "$train" > "$tmp/tr.txt"; zcat "$test" > "$tmp/te.txt"
  th=${LIBMF_THREADS:-$(nproc)}
  t0=$(date +%s.%N)
  "$LIBMF/mf-train" -k "$k" -t 1 -s "$th" "$tmp/tr.txt" "$tmp/m1" > "$tmp/l1" 2>&1
  t1=$(date +%s.%N)
  "$LIBMF/mf-train" -k "$k" -t 21 -s "$th" -p "$tmp/te.txt" "$tmp/tr.txt" "$tmp/m21" > "$tmp/l21" 2>&1
  t2=$(date +%s.%N)
  ntr=$(wc -l < "$tmp/tr.txt")
  lib_rate=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$ntr" 'BEGIN { printf "%.3f", n / (((c - b) - (b - a)) / 20) / 1e6 }')
  lib_rmse=$(awk '$1 ~ /^[0-9]+$/ { r = $3 } END { print r }' "$tmp/l21")
  lib_note="LIBMF $th threads, this run"
  printf '%-13s %9.2f %9.2f %9s %8s %9s %s\n' "ml1m LIBMF" "$lib_rate" \
    "$(awk -v r="$lib_rate" -v n="$ntr" 'BEGIN { printf "%.2f", n / (r * 1e6) * 1e3 }')" \
    "1.000" "-" "$lib_rmse" "$lib_note"
else
  case $k in 32) lib_rate=94.5 lib_rmse=0.863 ;; 128) lib_rate=53.9 lib_rmse=0.861 ;; esac
  lib_note="LIBMF from ../shared/anchors.md (AVX, 2 threads): set LIBMF=DIR for a same-run figure"
  echo "# $lib_note"
fi

# row NAME METRICS NOTE: prints one row from a run's --metrics records.
row() {
  local ups ts rmse
  ups=$(mean_key "$2" updates_per_s)
  ts=$(mean_key "$2" train_seconds)
  rmse=$(last_key "$2" test_rmse)
  awk -v n="$1" -v u="$ups" -v ts="$ts" -v r="$rmse" -v lr="$lib_rate" \
      -v h="$hbm" -v b="$bytes_per_update" -v note="$3" 'BEGIN {
    ratio = lr != "" ? sprintf("%.3f", u / 1e6 / lr) : "-"
    of = h != "" ? sprintf("%.4f", u * b / (h * 1e9)) : "-"
    printf "%-13s %9.2f %9.2f %9s %8s %9.4f %s\n", n, u / 1e6, ts * 1e3, ratio, of, r, note }'
  printf '%s' "$ups" > "$tmp/$1.ups"
}

if run gpu "$tmp/gpu.jsonl" --gpus 1 --partitions "$gpu_parts" -- --train "$train" --test "$test" \
    --epochs "$epochs" --gpu; then
  dev=$(grep -o 'GPU 0 ([^)]*)' "$tmp/gpu.out" | head -1)
  row "ml1m gpu" "$tmp/gpu.jsonl" "${dev:-one GPU executor}"
fi
# The same with the rotation's cells claimed by warps in one kernel
# (util/gclaim.h) instead of its steps, a launch each: ORION_GPU_CLAIM=1.
if ORION_GPU_CLAIM=1 run claimed "$tmp/claimed.jsonl" --gpus 1 --partitions "$gpu_parts" -- \
    --train "$train" --test "$test" --epochs "$epochs" --gpu; then
  row "ml1m claimed" "$tmp/claimed.jsonl" "ORION_GPU_CLAIM=1: one claiming kernel"
  if [ -s "$tmp/ml1m gpu.ups" ]; then
    awk -v a="$(cat "$tmp/ml1m claimed.ups")" -v b="$(cat "$tmp/ml1m gpu.ups")" \
      'BEGIN { printf "# claimed cells: %.2fx the steps'"'"' updates/s\n", a / b }'
  fi
fi
if run cpu "$tmp/cpu.jsonl" --executors "$cpu_execs" -- --train "$train" \
    --test "$test" --epochs "$epochs"; then
  row "ml1m cpu" "$tmp/cpu.jsonl" "$cpu_execs CPU executors"
fi
if run capped "$tmp/capped.jsonl" --gpus 1 --partitions "$gpu_parts" --gpu-memory "$cap" -- \
    --train "$train" --test "$test" --epochs "$epochs" --gpu; then
  row "ml1m capped" "$tmp/capped.jsonl" "--gpu-memory $cap"
  if [ -s "$tmp/ml1m gpu.ups" ]; then
    awk -v a="$(cat "$tmp/ml1m gpu.ups")" -v b="$(cat "$tmp/ml1m capped.ups")" \
      'BEGIN { printf "# capped at '"$cap"': %.2fx the uncapped epoch time\n", a / b }'
  fi
fi
if [ "$syn" != none ]; then
  t0=$(date +%s)
  if run syn "$tmp/syn.jsonl" --gpus 1 --partitions "$syn_parts" -- --synthetic "$syn" \
      --epochs "$syn_epochs" --gpu; then
    row "syn gpu" "$tmp/syn.jsonl" "--synthetic $syn, $(($(date +%s) - t0)) s in all"
  fi
fi
exit 0
