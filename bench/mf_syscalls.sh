#!/usr/bin/env bash
# bench/mf_syscalls.sh: system calls per MF epoch on MovieLens-1M, all
# processes together (the driver, the executors and their threads), by
# strace -f -c: a count that the machine's load changes far less than
# time (writes, reads, wakeups: futex, epoll_wait, poll changes).
#
#   ./configure && make && bench/mf_syscalls.sh
#   BASE=/tmp/base K=32 EXECS=2 RUNS=3 bench/mf_syscalls.sh
#
# Every run is made with EPOCHS_LO (default 6) and EPOCHS_HI (default 26)
# epochs; the difference over EPOCHS_HI - EPOCHS_LO is one epoch's calls
# (training and test pass), without loading and starting.  Runs are
# interleaved with BASE's (a built checkout of another revision) when it
# is given.  Prints, per build, the median over RUNS (default 3) of each
# call made at least once per epoch, and the total; with BASE the ratio
# this/base of the totals.  Without strace or the data it is skipped
# (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_ml1m mf_syscalls.sh
if ! command -v strace > /dev/null; then
  echo "bench/mf_syscalls.sh: skipped: strace is not installed"
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
lo=${EPOCHS_LO:-6}
hi=${EPOCHS_HI:-26}
k=${K:-32}
n=${EXECS:-2}
runs=${RUNS:-3}
base=${BASE:-}
bench_epochs mf_syscalls.sh EPOCHS_LO "$lo"
bench_epochs mf_syscalls.sh EPOCHS_HI "$hi"
[ "$hi" -gt "$lo" ] || { echo "bench/mf_syscalls.sh: EPOCHS_HI must exceed EPOCHS_LO" >&2; exit 2; }
case $runs in '' | *[!0-9]* | 0) echo "bench/mf_syscalls.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
builds=this
if [ -n "$base" ]; then
  if [ ! -x "$base/orion-driver" ] || [ ! -x "$base/orion-executor" ]; then
    echo "bench/mf_syscalls.sh: BASE=$base has no built orion-driver and orion-executor" >&2
    exit 2
  fi
  builds="base this"
fi
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# calls FILE: "name count" lines of a strace -c summary.
calls() { awk 'NF >= 5 && $NF != "total" && $NF != "syscall" { print $NF, $4 }' "$1" | sort; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for r in $(seq 1 "$runs"); do
  for b in $builds; do
    dir=$here
    [ "$b" = base ] && dir=$base
    for e in "$lo" "$hi"; do
      ORION_EXECUTOR=$dir/orion-executor strace -f -c -o "$tmp/s_${b}_${e}_$r" \
        "$dir/orion-driver" --quiet --executors "$n" "$dir/apps/mf/mf.lua" \
        --train "$train" --test "$test" --k "$k" --epochs "$e" > /dev/null
    done
    # Per epoch: the difference of the two runs' counts.
    join -a 2 -e 0 -o 0,1.2,2.2 <(calls "$tmp/s_${b}_${lo}_$r") <(calls "$tmp/s_${b}_${hi}_$r") |
      awk -v e=$((hi - lo)) '{ printf "%s %.1f\n", $1, ($3 - $2) / e }' > "$tmp/d_${b}_$r"
  done
done

printf 'MF on MovieLens-1M, K=%s, %s executors: system calls per epoch (epochs %s..%s), median of %s runs, load %s\n' \
  "$k" "$n" "$((lo + 1))" "$hi" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
for b in $builds; do
  names=$(cat "$tmp"/d_"${b}"_* | awk '$2 >= 1 { print $1 }' | sort -u)
  line="$b:"
  total=0
  for c in $names; do
    m=$(for r in $(seq 1 "$runs"); do awk -v c="$c" '$1 == c { v = $2 } END { print v + 0 }' "$tmp/d_${b}_$r"; done | median)
    awk -v m="$m" 'BEGIN { exit !(m >= 1) }' || continue # not once per epoch
    line="$line $c $(printf '%.0f' "$m")"
  done
  t=$(for r in $(seq 1 "$runs"); do awk '{ s += $2 } END { print s }' "$tmp/d_${b}_$r"; done | median)
  printf '%s total %.0f\n' "$line" "$t"
  echo "$t" > "$tmp/t_$b"
done
if [ -n "$base" ]; then
  awk -v b="$(cat "$tmp/t_base")" -v t="$(cat "$tmp/t_this")" \
    'BEGIN { printf "total this/base %.2f\n", t / b }'
fi
