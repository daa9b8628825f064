#!/usr/bin/env bash
# bench/mf_cpu.sh: CPU time per MF epoch on MovieLens-1M, the driver's and
# each executor's, measured with perf stat (task-clock), which a loaded
# machine disturbs far less than wall time.
#
#   ./configure && make && bench/mf_cpu.sh
#   BASE=/tmp/base KS="32 128" EXECS="1 2" RUNS=3 bench/mf_cpu.sh
#   KS=128 EXECS=4 DRIVER_ARGS="--partitions 64" \
#     MF_ARGS="--parallel data --flush clock --clock 8" bench/mf_cpu.sh
#
# DRIVER_ARGS (orion-driver options) and MF_ARGS (mf.lua options) are
# added to every run, split at spaces: the second line above measures
# data-parallel MF with a clock of 8 blocks (issue 36).
#
# The driver's CPU per epoch is apps/mf/mf.lua's driver_cpu_seconds (mean
# of epochs 2..EPOCHS_HI; each build runs its own mf.lua: this tree's
# sets parallel_for options an older driver refuses).  Each executor is started through a wrapper
# ($ORION_EXECUTOR) that runs it under `perf stat -e task-clock` (all its
# threads); every configuration runs with EPOCHS_LO (default 4) and
# EPOCHS_HI (default 16) epochs, and the executors' CPU difference over
# EPOCHS_HI - EPOCHS_LO is their CPU of one epoch (training and test pass),
# without loading, starting and the first copies.  Runs are interleaved
# (run 1 of every configuration and build, then run 2, ...); with BASE (a
# built checkout of another revision) each run of this tree follows
# BASE's.
# Prints, per configuration, the medians over RUNS (default 3) of
#   drv ms    the driver's CPU milliseconds per epoch
#   exec ms   one executor's CPU milliseconds per epoch (mean of them)
#   total ms  all processes' CPU milliseconds per epoch
# and with BASE the ratios this/base (below 1: this tree uses less).
# Needs perf (linux-perf); without it, or without the data, it is skipped
# (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_cpu.sh
if ! perf stat -e task-clock -x, -o /dev/null true 2>/dev/null; then
  echo "bench/mf_cpu.sh: skipped: perf stat cannot count task-clock here"
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
lo=${EPOCHS_LO:-4}
hi=${EPOCHS_HI:-16}
ks=${KS:-32 128}
execs=${EXECS:-1 2}
runs=${RUNS:-3}
base=${BASE:-}
read -r -a drv_args <<< "${DRIVER_ARGS:-}"
read -r -a mf_args <<< "${MF_ARGS:-}"
bench_epochs mf_cpu.sh EPOCHS_LO "$lo"
bench_epochs mf_cpu.sh EPOCHS_HI "$hi"
[ "$hi" -gt "$lo" ] || { echo "bench/mf_cpu.sh: EPOCHS_HI must exceed EPOCHS_LO" >&2; exit 2; }
case $runs in '' | *[!0-9]* | 0) echo "bench/mf_cpu.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
builds=this
if [ -n "$base" ]; then
  if [ ! -x "$base/orion-driver" ] || [ ! -x "$base/orion-executor" ]; then
    echo "bench/mf_cpu.sh: BASE=$base has no built orion-driver and orion-executor" >&2
    exit 2
  fi
  builds="base this"
fi
here=$(pwd)

tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

# The wrapper: one perf stat file per executor process, in $MF_CPU_DIR.
cat > "$tmp/exec.sh" <<'EOF'
#!/bin/sh
exec perf stat -x, -e task-clock -o "$MF_CPU_DIR/exec.$$" -- "$MF_CPU_EXE" "$@"
EOF
chmod +x "$tmp/exec.sh"

# msec FILE...: the task-clock milliseconds in perf stat -x files, summed.
msec() { awk -F, '$3 == "task-clock" { s += $1 } END { printf "%.3f", s }' "$@"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# one B K N E R: a run; leaves the driver's and the executors' ms in files.
one() {
  local dir=$here d=$tmp/r_$1_$2_$3_$4_$5
  [ "$1" = base ] && dir=$base
  mkdir -p "$d"
  MF_CPU_DIR=$d MF_CPU_EXE=$dir/orion-executor ORION_EXECUTOR=$tmp/exec.sh \
    "$dir/orion-driver" --quiet --executors "$3" ${drv_args[@]+"${drv_args[@]}"} \
    --metrics "$d/m.jsonl" "$dir/apps/mf/mf.lua" --train "$train" --test "$test" \
    --k "$2" --epochs "$4" ${mf_args[@]+"${mf_args[@]}"} > /dev/null
  if [ "$(ls "$d" | grep -c '^exec\.')" != "$3" ]; then
    echo "bench/mf_cpu.sh: expected $3 executor counts in $d" >&2
    exit 1
  fi
  msec "$d"/exec.* > "$d/x"
  mean_key "$d/m.jsonl" driver_cpu_seconds > "$d/drv"
}

for r in $(seq 1 "$runs"); do
  for k in $ks; do
    for n in $execs; do
      for b in $builds; do
        one "$b" "$k" "$n" "$lo" "$r"
        one "$b" "$k" "$n" "$hi" "$r"
      done
    done
  done
done

# per B K N WHAT R N: WHAT's ms per epoch in run R (drv, or x over N).
per() {
  local a=$tmp/r_$1_$2_$3_${lo}_$5 z=$tmp/r_$1_$2_$3_${hi}_$5
  if [ "$4" = drv ]; then
    awk -v s="$(cat "$z/drv")" 'BEGIN { printf "%.3f\n", s * 1000 }'
    return
  fi
  awk -v a="$(cat "$a/$4")" -v z="$(cat "$z/$4")" -v e=$((hi - lo)) -v n="$6" \
    'BEGIN { printf "%.3f\n", (z - a) / e / n }'
}
col() {
  local r
  for r in $(seq 1 "$runs"); do per "$1" "$2" "$3" "$4" "$r" "$5"; done
}

printf 'MF on MovieLens-1M: CPU per epoch (epochs %s..%s), median of %s interleaved runs, %s cores, load %s\n' \
  "$((lo + 1))" "$hi" "$runs" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${DRIVER_ARGS:-}${MF_ARGS:-}" ] ||
  printf 'DRIVER_ARGS="%s" MF_ARGS="%s"\n' "${DRIVER_ARGS:-}" "${MF_ARGS:-}"
printf '%5s %5s %5s %9s %9s %9s\n' build K execs "drv ms" "exec ms" "total ms"
for k in $ks; do
  for n in $execs; do
    for b in $builds; do
      d=$(col "$b" "$k" "$n" drv 1 | median)
      x=$(col "$b" "$k" "$n" x "$n" | median)
      t=$(for r in $(seq 1 "$runs"); do
        awk -v d="$(per "$b" "$k" "$n" drv "$r" 1)" -v x="$(per "$b" "$k" "$n" x "$r" 1)" \
          'BEGIN { printf "%.3f\n", d + x }'
      done | median)
      printf '%5s %5s %5s %9.2f %9.2f %9.2f\n' "$b" "$k" "$n" "$d" "$x" "$t"
      echo "$d $x $t" > "$tmp/s_${b}_${k}_$n"
    done
    if [ -n "$base" ]; then
      read -r bd bx bt < "$tmp/s_base_${k}_$n"
      read -r td tx tt < "$tmp/s_this_${k}_$n"
      awk -v bd="$bd" -v bx="$bx" -v bt="$bt" -v td="$td" -v tx="$tx" -v tt="$tt" \
        -v k="$k" -v n="$n" \
        'BEGIN { printf "K=%s, %s executors: this/base driver %.2f, executor %.2f, total %.2f\n", k, n, td / bd, tx / bx, tt / bt }'
    fi
  done
done
