#!/usr/bin/env bash
# bench/mf.sh: MF on MovieLens-1M against LIBMF (issue 5's benchmark).
#
#   ./configure && make && bench/mf.sh
#   LIBMF=/path/to/libmf bench/mf.sh          # LIBMF run beside it
#   EPOCHS=20 KS="32 128" EXECS=2 MODES="fast exact lua" RUNS=3 SOLVER=sgd bench/mf.sh
#
# For each K it runs apps/mf/mf.lua on 2 local executors (EXECS) over
# $ORION_DATA/movielens-1m/ratings.{train,test}.txt.gz for EPOCHS epochs
# (default 20), once per MODE (default "fast exact lua"):
#   fast   the app's default: compiled bodies with fast math (f32 math,
#          contracted multiply-adds, vectorised dot products)
#   exact  compiled bodies that reproduce the interpreter bit for bit
#   lua    the Lua interpreter tier (--tier lua), INTERP_EPOCHS epochs
#          (default 2), to measure the interpreted tier on the same loop
#
# LIBMF=DIR names a LIBMF build: DIR/mf-train and DIR/mf-predict.  It then
# runs in this script at the same K, with EXECS threads (-s), the same
# EPOCHS and --quiet, on the same files unzipped: its seconds per
# iteration are (time of -t EPOCHS - time of -t 1) / (EPOCHS - 1), so
# loading is left out as the mean of epochs 2..EPOCHS leaves it out of
# ours, and its test RMSE is mf-predict's on the -t EPOCHS model.  Orion-C
# and LIBMF run in RUNS rounds (default 3), ours then LIBMF's in each
# (A, B, A, B, ...), so a change of the machine's load falls on both.
# Without LIBMF the ratio is against ../shared/anchors.md's figures (LIBMF
# AVX, 2 threads, 94.5 M/s at K=32 and 53.9 M/s at K=128, test RMSE 0.863
# and 0.861), measured on another day's machine: those ratios are marked
# "anchor".
#
# From the --metrics records of epochs 2..EPOCHS (epoch 1 includes starting
# the executors and the first copy of the ratings) it prints, as the
# median over the RUNS runs (Mupd/s with the runs' [min-max]):
#   s/epoch     mean seconds of an epoch (training pass + test pass)
#   train ms    mean milliseconds of the training pass alone
#   Mupd/s      training ratings / train seconds (LIBMF counts the same way)
#   vs LIBMF    that rate / LIBMF's median rate
#   ovh ms      train ms minus the longest time an executor spent running
#               blocks: the scheduling and communication overhead per epoch
#   MB/epoch    bytes moved between the processes per epoch
#   test-rmse   after the last epoch, and its difference from LIBMF's
# and the load average before and after; with LIBMF also its CPU time
# (user + system) per iteration and the updates per CPU-second, from the
# same two runs (bench/mf_cpu.sh measures Orion-C's CPU per epoch).  With SIDE_ROWS=FILE each
# compiled mode adds a row to bench/side_by_side.sh's table.
# Without the data it is skipped (exit 0), unless CI=true (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
. bench/interleave.sh
bench_ml1m mf.sh
epochs=${EPOCHS:-20}
ks=${KS:-32 128}
execs=${EXECS:-2}
modes=${MODES:-fast exact lua}
solver=${SOLVER:-sgd}
iepochs=${INTERP_EPOCHS:-2}
runs=${RUNS:-3}
libmf=${LIBMF:-}

bench_epochs mf.sh EPOCHS "$epochs"
bench_epochs mf.sh INTERP_EPOCHS "$iepochs"
runs_count mf.sh "$runs"
for mode in $modes; do
  case $mode in
    fast | exact | lua) ;;
    *) echo "bench/mf.sh: unknown mode '$mode' in MODES (use fast, exact, lua)" >&2; exit 2 ;;
  esac
done
if [ -n "$libmf" ] && { [ ! -x "$libmf/mf-train" ] || [ ! -x "$libmf/mf-predict" ]; }; then
  echo "bench/mf.sh: LIBMF=$libmf does not hold the mf-train and mf-predict programs" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

anchor_rate() { case $1 in 32) echo 94.5 ;; 128) echo 53.9 ;; *) echo "" ;; esac; }
anchor_rmse() { case $1 in 32) echo 0.863 ;; 128) echo 0.861 ;; *) echo "" ;; esac; }

# Seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }

# orion_round R: every mode once at K=$k; metrics to m_K_MODE_R.jsonl.
orion_round() {
  local mode m args
  for mode in $modes; do
    m=$tmp/m_${k}_${mode}_$1.jsonl
    case $mode in
      fast) args=(--epochs "$epochs") ;;
      exact) args=(--epochs "$epochs" --exact) ;;
      lua) args=(--epochs "$iepochs" --tier lua) ;;
    esac
    ./orion-driver --quiet --executors "$execs" --metrics "$m" apps/mf/mf.lua \
      --train "$train" --test "$test" --k "$k" --solver "$solver" "${args[@]}" \
      > "$tmp/out" 2>&1 || { echo "bench/mf.sh: mf.lua failed (K=$k, $mode):" >&2; cat "$tmp/out" >&2; return 1; }
  done
}

# libmf_round R: LIBMF at K=$k; its rate (M/s) and test RMSE appended to
# libmf_K.rate and libmf_K.rmse.
libmf_round() {
  local t0 t1 t2 TIMEFORMAT='%U %S'
  t0=$(now)
  { time "$libmf/mf-train" --quiet -k "$k" -t 1 -s "$execs" "$tmp/tr.txt" "$tmp/lm1" > "$tmp/l1" 2>&1; } 2> "$tmp/c1" ||
    { echo "bench/mf.sh: $libmf/mf-train failed:" >&2; cat "$tmp/l1" >&2; return 1; }
  t1=$(now)
  { time "$libmf/mf-train" --quiet -k "$k" -t "$epochs" -s "$execs" "$tmp/tr.txt" "$tmp/lmE" > "$tmp/lE" 2>&1; } 2> "$tmp/cE" ||
    { echo "bench/mf.sh: $libmf/mf-train failed:" >&2; cat "$tmp/lE" >&2; return 1; }
  t2=$(now)
  # Its CPU (user + system, all threads) per iteration, the same way.
  awk -v a="$(cat "$tmp/c1")" -v b="$(cat "$tmp/cE")" -v e="$epochs" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    printf "%.6f\n", ((y[1] + y[2]) - (x[1] + x[2])) / (e - 1) }' >> "$tmp/libmf_$k.cpu"
  # A run of EPOCHS no longer than a run of 1 (a burst of load during the
  # short one) gives no rate: that round is left out, and said so.
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$ntr" -v e="$epochs" 'BEGIN {
    d = ((c - b) - (b - a)) / (e - 1)
    if (d > 0) printf "%.6f\n", n / d / 1e6
    else printf "bench/mf.sh: LIBMF round left out: -t %d took %.3f s, -t 1 %.3f s\n", e, c - b, b - a > "/dev/stderr" }' \
    >> "$tmp/libmf_$k.rate"
  "$libmf/mf-predict" "$tmp/te.txt" "$tmp/lmE" "$tmp/pred" > "$tmp/lp" 2>&1 ||
    { echo "bench/mf.sh: $libmf/mf-predict failed:" >&2; cat "$tmp/lp" >&2; return 1; }
  sed -n 's/^RMSE = //p' "$tmp/lp" >> "$tmp/libmf_$k.rmse"
}

fns=(orion_round)
if [ -n "$libmf" ]; then
  zcat "$train" > "$tmp/tr.txt"
  zcat "$test" > "$tmp/te.txt"
  ntr=$(wc -l < "$tmp/tr.txt")
  fns+=(libmf_round)
fi

# key_stats K MODE KEY: stat3 of the per-run means (or, for test_rmse, the
# last values) of KEY.
key_stats() {
  local r f=$tmp/s_$1_$2_$3
  : > "$f"
  for r in $(seq 1 "$runs"); do
    if [ "$3" = test_rmse ]; then last_key "$tmp/m_$1_$2_$r.jsonl" "$3"; echo
    else mean_key "$tmp/m_$1_$2_$r.jsonl" "$3"; echo; fi
  done > "$f"
  stat3 "$f"
}

printf 'MF on MovieLens-1M (900,461 train / 99,748 test ratings), solver %s, %s executors, %s cores\n' \
  "$solver" "$execs" "$(nproc)"
printf 'compiled: %s epochs, figures are the mean of epochs 2..%s; interpreted: %s epochs (2..%s)\n' \
  "$epochs" "$epochs" "$iepochs" "$iepochs"
if [ -n "$libmf" ]; then
  printf 'LIBMF: %s, %s threads, run in this script; %s rounds, Orion-C then LIBMF in each; medians [min-max]\n' \
    "$libmf" "$execs" "$runs"
else
  printf 'LIBMF: not run (set LIBMF=DIR); "vs LIBMF" is against ../shared/anchors.md (anchor: another day'"'"'s machine); %s runs, medians [min-max]\n' \
    "$runs"
fi
printf '%4s %-7s %8s %9s %22s %12s %7s %9s %9s %8s\n' K tier "s/epoch" "train ms" \
  "Mupd/s [min-max]" "vs LIBMF" "ovh ms" "MB/epoch" "test-rmse" "-LIBMF"
for k in $ks; do
  load0=$(loadavg)
  : > "$tmp/libmf_$k.rate"
  : > "$tmp/libmf_$k.rmse"
  : > "$tmp/libmf_$k.cpu"
  interleave "$runs" "${fns[@]}"
  load1=$(loadavg)
  if [ -n "$libmf" ]; then
    read -r lr lr_lo lr_hi lr_n <<< "$(stat3 "$tmp/libmf_$k.rate")"
    read -r lrm _ <<< "$(stat3 "$tmp/libmf_$k.rmse")"
    lrm=$(printf '%.4f' "$lrm")
    lpeer="LIBMF"
    printf '%4s %-7s %8s %9s %22s %12s %7s %9s %9s %8s\n' "$k" LIBMF - - \
      "$(spread "$lr" "$lr_lo" "$lr_hi")" 1.000 - - "$lrm" -
    read -r lc _ <<< "$(stat3 "$tmp/libmf_$k.cpu")"
    awk -v c="$lc" -v n="$ntr" 'BEGIN { if (c + 0 > 0) printf "     LIBMF CPU per iteration %.2f ms (user + system, all threads): %.1f M updates per CPU-second\n", c * 1e3, n / c / 1e6 }'
  else
    lr=$(anchor_rate "$k") lr_lo=$lr lr_hi=$lr lr_n=1
    lrm=$(anchor_rmse "$k")
    lpeer="LIBMF (anchor)"
  fi
  for mode in $modes; do
    read -r s _ <<< "$(key_stats "$k" "$mode" seconds)"
    read -r ts _ <<< "$(key_stats "$k" "$mode" train_seconds)"
    read -r cs _ <<< "$(key_stats "$k" "$mode" compute_seconds)"
    read -r mb _ <<< "$(key_stats "$k" "$mode" bytes_moved)"
    read -r rmse _ <<< "$(key_stats "$k" "$mode" test_rmse)"
    read -r u u_lo u_hi u_n <<< "$(key_stats "$k" "$mode" updates_per_s)"
    awk -v k="$k" -v t="$mode" -v s="$s" -v ts="$ts" -v cs="$cs" -v u="$u" \
        -v sp="$(spread "$(awk -v a="$u" 'BEGIN { print a / 1e6 }')" \
                   "$(awk -v a="$u_lo" 'BEGIN { print a / 1e6 }')" \
                   "$(awk -v a="$u_hi" 'BEGIN { print a / 1e6 }')")" \
        -v mb="$mb" -v r="$rmse" -v lr="$lr" -v lrm="$lrm" -v anc="$([ -n "$libmf" ] || echo 1)" 'BEGIN {
      ratio = lr != "" ? sprintf("%.3f", u / 1e6 / lr) : "-"
      if (anc != "" && ratio != "-") ratio = ratio " anchor"
      d = lrm != "" ? sprintf("%+.4f", r - lrm) : "-"
      printf "%4s %-7s %8.3f %9.2f %22s %12s %7.2f %9.2f %9.4f %8s\n",
        k, t, s, ts * 1e3, sp, ratio, (ts - cs) * 1e3, mb / 1e6, r, d }'
    # The interpreted tier is not a peer's match; a K without an anchor
    # has nothing to compare with.
    if [ "$mode" = lua ] || [ -z "$lr" ]; then continue; fi
    side_row "${SIDE_ROWS:-}" "MF ML-1M K=$k $mode" "$lpeer" "Mupd/s" higher \
      "$lr $lr_lo $lr_hi $lr_n" \
      "$(awk -v a="$u" -v b="$u_lo" -v c="$u_hi" -v n="$u_n" 'BEGIN { printf "%.6g %.6g %.6g %d", a / 1e6, b / 1e6, c / 1e6, n }')" \
      "RMSE ${lrm:--}" "RMSE $(printf '%.4f' "$rmse")" "$load0 / $load1"
  done
  printf '     load average %s before, %s after\n' "$load0" "$load1"
done
