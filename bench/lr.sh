#!/usr/bin/env bash
# bench/lr.sh: logistic regression (apps/lr/lr.lua) side by side with
# liblinear, interleaved (liblinear, Orion-C on 1 executor, on 2, then
# again), RUNS rounds (default 3), medians and spread.
#
#   ./configure && make && bench/lr.sh
#   WORKLOADS=20ng bench/lr.sh                   # only 20 Newsgroups
#   ROWS=200000 FEATURES=100000 WORKLOADS=synth bench/lr.sh
#   LIBLINEAR=/work/peers/liblinear bench/lr.sh  # another liblinear build
#   SYNTH_DIR=/tmp/lrsynth WORKLOADS=synth bench/lr.sh  # keep the made set
#
# LIBLINEAR names a folder holding liblinear's `train` and `predict`
# binaries (a build made outside this repository); without it Debian's
# liblinear-tools (`liblinear-train`, `liblinear-predict`) are used, and
# without either (or with LIBLINEAR=none: 1 against 2 executors only) the
# peer's columns are left out.  liblinear runs its
# default solver (-s 1, L2-loss SVM dual) with -c 10, as the issue's
# figures did (LIBLINEAR_ARGS overrides).
#
# Workloads (WORKLOADS, default "20ng synth"):
#   20ng   20 Newsgroups, comp.* against the rest (apps/lr/make_20ng.sh,
#          11,290 training and 7,513 test documents; the test labels are
#          rewritten to the training files' 1/0 so that liblinear sees two
#          classes).  Orion-C runs ORION_20NG_ARGS (default: 2 SGD epochs at --lr 2,
#          --flush block, tier c, the test set scored after the last epoch
#          only; --flush block is lr.lua's relaxed mode, asked for here:
#          one exchange of the updates per block, the same bits from run to
#          run on one executor, but the weights vary with the executor
#          count and, on two, from run to run.  --flush 8 reached the same
#          accuracy with an exchange every 8 samples, at 1.5x the CPU).
#   synth  a synthetic libsvm set of ROWS rows (default 2,000,000) over
#          FEATURES features (default 1,000,000), NNZ (default 10) to
#          3 * NNZ features a row, values 1/sqrt(nnz), the label the sign
#          of a fixed hidden weight vector's score with 5% of them flipped;
#          a test set of ROWS/10 rows from the same model.  Orion-C runs
#          ORION_SYNTH_ARGS (default: 5 SGD epochs, --flush 1024 (relaxed, as
#          above), tier c, the test set scored after every epoch).
#
# For each side it prints the median wall seconds of the whole command
# (liblinear: train + predict; Orion-C: orion-driver from start to exit,
# loading, training and scoring), their spread (min..max), the test
# accuracy, and the ratios Orion-C / liblinear (below 1: Orion-C is
# faster), and the median CPU seconds of each side (user + system, the
# executors included) with their ratio: on a machine that other work
# shares, a side's wall grows with the load and with how often it waits
# for a process that is not running, its CPU seconds much less.  For
# Orion-C it also prints the executors' CPU seconds per epoch (sampled
# from /proc as each epoch ends, epochs 3..; with --eval-every 0 a
# training pass alone) and what they imply: 2 executors' CPU over 1's (the
# work the exchange adds) and the speedup 2 executors would reach with a
# free core each, 2 x CPU(1) / CPU(2), the figure to judge on a shared
# machine whose second core is not free.  For
# Orion-C it also prints the median seconds of a training
# pass (epochs 2..; newton: its training seconds over its passes over the
# rows), the speedup of 2 executors over 1 (ratio of those),
# and the time to liblinear's accuracy: the "wall_seconds" of the first epoch
# whose test accuracy reaches liblinear's (from the script's start,
# loading included; "not reached" otherwise).  Without the 20 Newsgroups
# corpus that workload is skipped, unless CI=true (exit 1).
#
# Compiled loop bodies: Orion-C's runs share a compile cache private to
# the script (ORION_CACHE_DIR=$tmp/cache, util/ccache.h), filled by one
# uncounted run before each workload's rounds, so the rows above are warm
# runs.  For the workloads in COLD (default "20ng"; "" for none) each round
# also runs 1 executor on an empty cache folder of its own ("cold cache":
# the compiler runs for each body, as on a first run), interleaved with the
# rest.
#
# BASE=DIR names another built Orion-C tree (say, the main branch built
# outside this one): each round then also runs its orion-driver and its
# apps/lr/lr.lua on 1 executor (warm, the same cache folder: the two
# trees' keys differ), interleaved, in a row "Orion-C base, 1", the
# before-and-after of a change measured side by side.
#
# SIDE_ROWS=FILE (bench/side_by_side.sh) appends one tab-separated row per
# workload and executor count: workload, peer, measure ("wall s"),
# "lower", the peer's and Orion-C's "median min max count", both
# accuracies, and the load averages before and after.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
. bench/lr_synth.sh
data=${ORION_DATA:-../shared/data}
runs=${RUNS:-3}
workloads=${WORKLOADS:-20ng synth}
rows=${ROWS:-2000000}
features=${FEATURES:-1000000}
nnz=${NNZ:-10}
ll_args=${LIBLINEAR_ARGS:--c 10}
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/lr.sh: build first (./configure && make)" >&2
  exit 1
fi
if [ "${LIBLINEAR:-}" = none ]; then
  ll_train="" ll_predict=""
  echo "bench/lr.sh: LIBLINEAR=none: Orion-C only"
elif [ -n "${LIBLINEAR:-}" ]; then
  ll_train=$LIBLINEAR/train ll_predict=$LIBLINEAR/predict
elif command -v liblinear-train > /dev/null; then
  ll_train=liblinear-train ll_predict=liblinear-predict
else
  ll_train="" ll_predict=""
  echo "bench/lr.sh: no liblinear (set LIBLINEAR or install liblinear-tools): Orion-C only"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cold_workloads=${COLD-20ng}
base=${BASE:-}
if [ -n "$base" ] && [ ! -x "$base/orion-driver" ]; then
  echo "bench/lr.sh: BASE=$base holds no built orion-driver" >&2
  exit 2
fi
export ORION_CACHE_DIR=$tmp/cache

now() { date +%s.%N; }
# median, min, max and count of the numbers on stdin, one a line
stats() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) { print "nan nan nan 0"; exit }
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.6f %.6f %.6f %d\n", m, v[1], v[NR], NR }'; }

# make_synth OUT N SEED: N rows of the synthetic model (bench/lr_synth.sh).
make_synth() { lr_synth "$1" "$2" "$3" "$features" "$nnz"; }

# cpu_of FILE: the CPU seconds (user + system, the command's children
# included: orion-driver waits for its executors) that bash's `time`
# wrote to FILE with TIMEFORMAT below.
TIMEFORMAT='%U %S'
cpu_of() { awk '{ s += $1 + $2 } END { printf "%.4f", s }' "$1"; }

# run_liblinear NAME TRAIN TEST: appends "seconds accuracy cpu_seconds"
# to $tmp/NAME.ll
run_liblinear() {
  local t0 t1 acc
  : > "$tmp/cpu"
  t0=$(now)
  { time "$ll_train" -q $ll_args "$2" "$tmp/model" > /dev/null; } 2>> "$tmp/cpu"
  { time "$ll_predict" "$3" "$tmp/model" "$tmp/pred" > "$tmp/llout"; } 2>> "$tmp/cpu"
  t1=$(now)
  acc=$(sed -n 's/^Accuracy = \([0-9.]*\)%.*/\1/p' "$tmp/llout")
  awk -v a="$t0" -v b="$t1" -v acc="$acc" -v c="$(cpu_of "$tmp/cpu")" \
    'BEGIN { printf "%.4f %.6f nan %.4f\n", b - a, acc / 100, c }' >> "$tmp/$1.ll"
}

# exec_cpu PID: the CPU seconds (user + system) so far of PID's children
# (orion-driver's executors), from /proc.
hz=$(getconf CLK_TCK)
exec_cpu() {
  local c
  for c in $(pgrep -P "$1"); do cat "/proc/$c/stat" 2> /dev/null; done |
    awk -v hz="$hz" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.3f\n", s / hz }'
}

# sample_cpu BG METRICS: while background job BG (a subshell running
# orion-driver) runs, prints "records cpu_seconds" each time METRICS gains
# a record: the executors' CPU seconds as each epoch (or Newton's one
# record) ends, sampled every 0.1 s.
sample_cpu() {
  local bg=$1 m=$2 drv="" k last=0
  while kill -0 "$bg" 2> /dev/null; do
    [ -n "$drv" ] || drv=$(pgrep -P "$bg" | head -1 || true)
    k=$(grep -c '"epoch"' "$m" 2> /dev/null || true)
    if [ -n "$drv" ] && [ "${k:-0}" -gt "$last" ]; then
      echo "$k $(exec_cpu "$drv")"
      last=$k
    fi
    sleep 0.1
  done
}

# run_orion NAME EXECS TRAIN TEST ARGS...: appends "seconds accuracy
# pass_seconds cpu_seconds exec_cpu_per_epoch" to $tmp/NAME.oN and keeps
# the metrics of the run.  EXECS "1c": 1 executor on an empty compile
# cache (a cold run); "1b": BASE's driver and app on 1 executor.
run_orion() {
  local name=$1 n=$2 train=$3 test=$4 t0 t1 m bg cache=$ORION_CACHE_DIR
  local drv=./orion-driver app=apps/lr/lr.lua
  shift 4
  if [ "$n" = 1b ]; then drv=$base/orion-driver app=$base/apps/lr/lr.lua; fi
  m=$tmp/$name.o$n.$(date +%s%N).jsonl
  if [ "$n" = 1c ]; then
    cache=$tmp/cold.$(date +%s%N)
    mkdir "$cache"
  fi
  t0=$(now)
  { time ORION_CACHE_DIR=$cache "$drv" --quiet --executors "${n%[bc]}" --metrics "$m" "$app" \
    --train "$train" --test "$test" "$@" > "$tmp/out" 2> "$tmp/err"; } 2> "$tmp/cpu" &
  bg=$!
  sample_cpu "$bg" "$m" > "$tmp/samples"
  wait "$bg" || { cat "$tmp/err" >&2; exit 1; }
  t1=$(now)
  # a pass: the mean training pass of epochs 2.. (sgd, adarev), or the
  # training seconds over the passes over the rows (newton's one record);
  # the executors' CPU per epoch: the median over the spans between
  # consecutive samples from the end of epoch 2 on, each span's CPU over
  # the epochs it covers (nan with fewer than 3 epochs)
  awk -v a="$t0" -v b="$t1" -v acc="$(last_key "$m" test_accuracy)" \
    -v p="$(mean_key "$m" train_seconds)" -v t="$(last_key "$m" train_seconds)" \
    -v np="$(last_key "$m" passes)" -v c="$(cpu_of "$tmp/cpu")" \
    -v ec="$(awk 'NR > 1 && k >= 2 { print ($2 - v) / ($1 - k) } { k = $1; v = $2 }' "$tmp/samples" | stats | cut -d' ' -f1)" \
    'BEGIN { if (p == "nan" && np + 0 > 0) p = t / np
             printf "%.4f %.6f %.6f %.4f %s\n", b - a, acc, p, c, ec }' >> "$tmp/$name.o$n"
  echo "$m" >> "$tmp/$name.o$n.metrics"
}

# The first "wall_seconds" of a run in metrics file $1 whose accuracy >= $2.
time_to() {
  awk -v t="$2" '
    { a = $0; if (index(a, "\"test_accuracy\":") == 0) next
      sub(/.*"test_accuracy":/, "", a); sub(/[,}].*/, "", a)
      e = $0; sub(/.*"wall_seconds":/, "", e); sub(/[,}].*/, "", e)
      if (a + 0 >= t - 1e-9) { printf "%.4f\n", e; found = 1; exit } }
    END { if (!found) print "inf" }' "$1"
}

compare() {
  local name=$1 train=$2 test=$3 args=$4 r n ll="" llacc="-" llcpu=nan load0 sides="1 2"
  case " $cold_workloads " in *" $name "*) sides="1 1c 2" ;; esac
  [ -n "$base" ] && sides="1b $sides"
  # The compile cache filled (not counted).
  # shellcheck disable=SC2086
  ./orion-driver --quiet --executors 1 apps/lr/lr.lua --train "$train" --test "$test" \
    $args > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  # shellcheck disable=SC2086
  [ -z "$base" ] || "$base/orion-driver" --quiet --executors 1 "$base/apps/lr/lr.lua" --train "$train" \
    --test "$test" $args > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  printf '\n== %s: %s training rows, %s test rows; Orion-C: lr.lua %s; %s rounds, %s cores, load average %s\n' \
    "$name" "$(wc -l < "$train")" "$(wc -l < "$test")" "$args" "$runs" \
    "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
  [ -n "$ll_train" ] && printf 'liblinear: %s %s\n' "$ll_train" "$ll_args"
  for r in $(seq "$runs"); do
    [ -n "$ll_train" ] && run_liblinear "$name" "$train" "$test"
    for n in $sides; do
      # shellcheck disable=SC2086
      run_orion "$name" "$n" "$train" "$test" $args
    done
  done
  printf '%-22s %9s %17s %9s %10s %9s %8s %9s %11s\n' side "wall s" "(min..max)" accuracy \
    "pass s" "vs liblin" "cpu s" "vs liblin" "exec cpu/ep"
  if [ -n "$ll_train" ]; then
    ll=$(cut -d' ' -f1 "$tmp/$name.ll" | stats)
    llacc=$(cut -d' ' -f2 "$tmp/$name.ll" | stats | cut -d' ' -f1)
    llcpu=$(cut -d' ' -f4 "$tmp/$name.ll" | stats | cut -d' ' -f1)
    set -- $ll
    printf '%-22s %9.3f %8.3f..%-7.3f %9.4f %10s %9s %8.3f %9s %11s\n' liblinear "$1" "$2" "$3" \
      "$llacc" - 1.00 "$llcpu" 1.00 -
  fi
  for n in $sides; do
    local w acc p ratio cpu cratio ec label="Orion-C, $n executor(s)"
    [ "$n" = 1c ] && label="Orion-C, 1, cold cache"
    [ "$n" = 1b ] && label="Orion-C base, 1"
    w=$(cut -d' ' -f1 "$tmp/$name.o$n" | stats)
    ec=$({ cut -d' ' -f5 "$tmp/$name.o$n" | grep -v nan || true; } | stats | cut -d' ' -f1)
    eval "ecpu${n%[bc]}${n#[0-9]}=$ec"
    acc=$(cut -d' ' -f2 "$tmp/$name.o$n" | stats | cut -d' ' -f1)
    p=$(cut -d' ' -f3 "$tmp/$name.o$n" | stats | cut -d' ' -f1)
    cpu=$(cut -d' ' -f4 "$tmp/$name.o$n" | stats | cut -d' ' -f1)
    eval "pass${n%[bc]}${n#[0-9]}=$p"
    set -- $w
    ratio=- cratio=-
    [ -n "$ll" ] && ratio=$(awk -v a="$1" -v b="${ll%% *}" 'BEGIN { printf "%.2f", a / b }')
    [ -n "$ll" ] && cratio=$(awk -v a="$cpu" -v b="$llcpu" 'BEGIN { printf "%.2f", a / b }')
    printf '%-22s %9.3f %8.3f..%-7.3f %9.4f %10.4f %9s %8.3f %9s %11s\n' "$label" \
      "$1" "$2" "$3" "$acc" "$p" "$ratio" "$cpu" "$cratio" "$ec"
    if [ -n "${SIDE_ROWS:-}" ] && [ "$n" = "${n%[bc]}" ]; then
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "LR $name ${n}x" \
        "${ll_train:+liblinear}" "wall s" lower "${ll:--}" "$w" "acc $llacc" \
        "acc $acc" "$load0 / $(cut -d' ' -f1-3 /proc/loadavg)" >> "$SIDE_ROWS"
    fi
  done
  printf 'load average after the runs: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
  awk -v a="$pass1" -v b="$pass2" 'BEGIN { if (b > 0) printf "2 executors vs 1: %.2fx (median training pass)\n", a / b }'
  # Executor CPU per epoch: on 2 cores that others share, a pass's wall
  # on 2 executors is bounded by the CPU they are given; the CPU per epoch
  # says what the pass costs (1 executor's over 2's: the work added by
  # the second executor, 1.00 when none), and pass s x cores available
  # against it how much of the wall was waiting for a core.
  awk -v a="$ecpu1" -v b="$ecpu2" -v p1="$pass1" -v p2="$pass2" 'BEGIN {
    if (a + 0 > 0 && b + 0 > 0)
      printf "executor CPU per epoch: 1 executor %.3f s, 2 executors %.3f s (%.2fx the work); CPU-bound speedup on 2 free cores: %.2fx; CPU busy during a pass: %.2f of a core (1 executor), %.2f (2)\n",
        a, b, b / a, 2 * a / b, a / p1, b / p2 }'
  if [ -n "$ll" ]; then
    for n in $sides; do
      local tt
      tt=$(while read -r m; do time_to "$m" "$llacc"; done < "$tmp/$name.o$n.metrics" | stats)
      set -- $tt
      awk -v t="$1" -v l="${ll%% *}" -v n="${n%[bc]} executor(s)${n#[0-9]}" -v acc="$llacc" 'BEGIN {
        sub(/\)c$/, "), cold cache", n); sub(/\)b$/, "), base", n)
        if (t == "inf" || t == "nan") printf "time to liblinear accuracy %.4f, %s: not reached\n", acc, n
        else printf "time to liblinear accuracy %.4f, %s: %.3f s, %.2fx liblinear wall\n", acc, n, t, t / l }'
    done
  fi
}

for w in $workloads; do
  case $w in
    20ng)
      if [ ! -f "$data/20newsgroups-bydate/docword.20news.txt.gz" ]; then
        if [ "${CI:-}" = "true" ]; then
          echo "bench/lr.sh: FAIL: no 20 Newsgroups corpus under $data (CI=true needs it)" >&2
          exit 1
        fi
        echo "bench/lr.sh: 20ng skipped: no corpus under $data (set ORION_DATA)"
        continue
      fi
      ORION_20NG=$data/20newsgroups-bydate apps/lr/make_20ng.sh "$tmp/20ng" comp. rest
      sed -i 's/^+1 /1 /; s/^-1 /0 /' "$tmp/20ng/test.libsvm"
      compare 20ng "$tmp/20ng/train.libsvm" "$tmp/20ng/test.libsvm" \
        "${ORION_20NG_ARGS:---epochs 2 --lr 2 --flush block --tier c --eval-every 0}"
      ;;
    synth)
      # SYNTH_DIR keeps the set between runs (it takes minutes to make at
      # the default size): made there once per ROWS, FEATURES and NNZ.
      sdir=${SYNTH_DIR:-$tmp}
      sname=$sdir/synth-${rows}x${features}x${nnz}
      if [ -n "${SYNTH_DIR:-}" ] && [ -s "$sname.train" ] && [ -s "$sname.test" ]; then
        printf '\n(synthetic set of %s x %s reused from %s)\n' "$rows" "$features" "$sdir"
      else
        mkdir -p "$sdir"
        t0=$(now)
        make_synth "$sname.train.part" "$rows" 1
        make_synth "$sname.test.part" $((rows / 10)) 2
        mv "$sname.train.part" "$sname.train"
        mv "$sname.test.part" "$sname.test"
        printf '\n(synthetic set of %s x %s made in %.1f s)\n' "$rows" "$features" \
          "$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')"
      fi
      compare synth "$sname.train" "$sname.test" \
        "${ORION_SYNTH_ARGS:---epochs 5 --flush 1024 --tier c}"
      ;;
    *) echo "bench/lr.sh: unknown workload '$w' (20ng, synth)" >&2; exit 2 ;;
  esac
done
