#!/usr/bin/env bash
# bench/predict_check.sh: orion-driver --predict against the measured
# virtual hosts (issue 35, "validated"; needs root):
#
#   ./configure && make && bench/predict_check.sh
#   APPS="mf lda lr" NS="1 2 4 8" RUNS=2 Q=0.2 bench/predict_check.sh
#
# For each app of APPS (mf, lda, lr), RUNS rounds, N of NS interleaved
# (apps in turn, then N = 1, 2, 4, 8, then the next round), the app runs
# on N virtual hosts (bench/netcluster.sh -n N --cpu Q --driver-cpu Q:
# each executor and the driver in a cgroup of Q CPUs, links at Q x 1
# gbit shaped by tc tbf with its 256 kb burst) under --metrics and
# --predict for every N of NS, twice: hosts of 1c (as measured: the
# executors' block seconds are a Q-CPU host's), links at the rate with
# the tbf bucket (RATE/256kb: what the virtual links are) and without it
# (RATE: the model of a real NIC, for comparison).
#
# Measured: per run, the median of the app's main loop's pass seconds
# (measured_pass_seconds, passes 3 and later: the steady state), the main
# loop being the call site with the most seconds a pass; the median over
# the runs.  Predicted: that loop's prediction from its second pass in the
# runs on PRED_FROM hosts (default 2: the first count that measures the
# rotating rows' bytes), median over the runs.  The table prints per app
# and N the measured and predicted seconds a pass, predicted / measured
# with and without the burst, the hosts' seconds an element in the runs on
# N hosts over those in the runs the prediction took them from (block
# seconds x the hosts' factor of --predict: above 1, the machine gave the
# N hosts less than the runs on PRED_FROM had, though the quota is the
# same), predicted / measured times that ratio (what the error would be
# with the N hosts' speed as measured: the model's own part of it), the
# predicted bottleneck and the load average at the end of the N's last
# run; "ok" where predicted / measured is within 15%.
#
# The apps (the data from ORION_DATA, default ../shared/data; without it
# lda and lr are skipped with a message, unless CI=true):
#   mf   apps/mf/mf.lua --synthetic MF_DATA (100000,20000,4000000) --k 32,
#        EPOCHS epochs (default 4), the training loop;
#   lda  apps/lda/lda.lua on KOS at K=1000, EPOCHS sweeps, --partitions 8
#        (lda.lua's own default follows the executors, so that the runs on
#        2 hosts would measure another grid);
#   lr   apps/lr/lr.lua, SGD on 20 Newsgroups comp.* against the rest
#        (apps/lr/make_20ng.sh), --lr 2 --tier c, EPOCHS epochs, the test
#        set scored after the last.
set -euo pipefail
cd "$(dirname "$0")/.."

q=${Q:-0.2}
ns=${NS:-1 2 4 8}
runs=${RUNS:-2}
epochs=${EPOCHS:-4}
apps=${APPS:-mf lda lr}
from=${PRED_FROM:-2}
mfdata=${MF_DATA:-100000,20000,4000000}
data=${ORION_DATA:-../shared/data}
. bench/lib.sh
bench_need predict_check.sh bench/netcluster.sh
case $runs in '' | *[!0-9]* | 0) echo "bench/predict_check.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
case $epochs in '' | *[!0-9]* | [0-2]) echo "bench/predict_check.sh: EPOCHS must be 3 or more (passes 3.. are measured)" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "bench/predict_check.sh: skipped: network namespaces and cgroups need root"
  exit 0
fi
export ORION_LUA_PATH=${ORION_LUA_PATH:-$PWD/lua/?.lua}
rate=$(awk -v x="$q" 'BEGIN { printf "%d", x * 1000 + 0.5 }')mbit
specs=""
for n in $ns; do specs="$specs${specs:+,}${n}x1c:$rate/256kb,${n}x1c:$rate"; done

tmp=$(mktemp -d)
# KEEP=DIR: the runs' metrics and outputs are left there; REUSE=DIR: no
# runs, the table of those kept in DIR.
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$tmp"/. "$KEEP"/; fi; rm -rf "$tmp"' EXIT
if [ -n "${REUSE:-}" ]; then cp -r "$REUSE"/. "$tmp"/; runs=0; fi

have_app=""
for a in $apps; do
  case $a in
    mf) have_app="$have_app mf" ;;
    lda | lr)
      f=$data/uci-bow-kos/docword.kos.txt.gz
      [ "$a" = lr ] && f=$data/20newsgroups-bydate/docword.20news.txt.gz
      if [ ! -f "$f" ]; then
        [ "${CI:-}" != true ] || { echo "bench/predict_check.sh: FAIL: $f not found (CI=true needs the data)" >&2; exit 1; }
        echo "bench/predict_check.sh: $a skipped: $f not found"
        continue
      fi
      have_app="$have_app $a" ;;
    *) echo "bench/predict_check.sh: unknown app '$a' (mf, lda, lr)" >&2; exit 2 ;;
  esac
done
case " $have_app " in
  *" lr "*) ORION_20NG=$data/20newsgroups-bydate apps/lr/make_20ng.sh "$tmp/20ng" comp. rest >/dev/null ;;
esac

# args_of APP: the app's script and arguments.
args_of() {
  case $1 in
    mf) echo "apps/mf/mf.lua --synthetic $mfdata --k 32 --epochs $epochs" ;;
    lda) echo "apps/lda/lda.lua --corpus $data/uci-bow-kos/docword.kos.txt.gz --k 1000 --iters $epochs --partitions 8" ;;
    lr) echo "apps/lr/lr.lua --train $tmp/20ng/train.libsvm --test $tmp/20ng/test.libsvm --epochs $epochs --lr 2 --tier c --eval-every 0" ;;
  esac
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# val KEY: KEY's value in each line of stdin.
val() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }

echo "bench/predict_check.sh: apps$have_app, Q=$q CPU a host (and the driver), links $rate (tbf burst 256kb), $runs runs, $epochs passes, $(nproc) cores; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= runs; r++)); do
  for a in $have_app; do
    for n in $ns; do
      m=$tmp/m-$a-$n-$r.jsonl
      # shellcheck disable=SC2046
      bench/netcluster.sh -n "$n" --cpu "$q" --driver-cpu "$q" \
        --logs "$tmp/logs-$a-$n-$r" -- --quiet --metrics "$m" --predict "$specs" \
        $(args_of "$a") > "$tmp/out-$a-$n-$r" 2> "$tmp/err-$a-$n-$r" ||
        { echo "bench/predict_check.sh: $a on $n hosts failed:" >&2
          cat "$tmp/out-$a-$n-$r" "$tmp/err-$a-$n-$r" >&2; exit 1; }
      cut -d' ' -f1 /proc/loadavg > "$tmp/load-$a-$n"
    done
  done
done

printf '%-4s %5s %10s %10s %10s %9s %9s %9s %14s %5s  %s\n' app hosts "measured s" \
  "predicted" "pred/meas" "no burst" "host s/el" "x hosts" "bottleneck" load within
for a in $have_app; do
  # The main loop: the call site with the most seconds a pass (steady).
  loop=$(cat "$tmp"/m-"$a"-*.jsonl | grep '"measured_pass_seconds"' |
    awk '{ l = $0; sub(/.*"loop":"/, "", l); sub(/".*/, "", l)
           p = $0; sub(/.*"pass":/, "", p); sub(/[,}].*/, "", p)
           s = $0; sub(/.*"measured_pass_seconds":/, "", s); sub(/[,}].*/, "", s)
           if (p + 0 >= 3) { t[l] += s; c[l]++ } }
         END { for (l in t) if (t[l] / c[l] > best) { best = t[l] / c[l]; bl = l }; print bl }')
  for n in $ns; do
    meas=$(for f in "$tmp"/m-"$a"-"$n"-*.jsonl; do
      grep '"measured_pass_seconds"' "$f" | grep -F "\"loop\":\"$loop\"" |
        awk '{ p = $0; sub(/.*"pass":/, "", p); sub(/[,}].*/, "", p); if (p + 0 >= 3) print }' |
        val measured_pass_seconds | median; done | median)
    pred_of() {
      cat "$tmp"/m-"$a"-"$from"-*.jsonl | grep '"predicted_pass_seconds"' |
        grep -F "\"loop\":\"$loop\"" | grep '"pass":2' |
        grep -F "\"predict\":\"$1\"" | val predicted_pass_seconds | median
    }
    pb=$(pred_of "${n}x1c:$rate/256kb")
    pn=$(pred_of "${n}x1c:$rate")
    # The hosts' seconds an element as their own run measured them (block
    # seconds x the hosts' factor, pass 2), over those of the runs on
    # PRED_FROM hosts: above 1, the hosts of this N were slower than those
    # the prediction took (the machine's load, a quota not delivered).
    eff_of() {
      cat "$tmp"/m-"$a"-"$1"-*.jsonl | grep '"predicted_pass_seconds"' |
        grep -F "\"loop\":\"$loop\"" | grep '"pass":2' |
        grep -F "\"predict\":\"${1}x1c:$rate/256kb\"" |
        awk '{ s = $0; sub(/.*"sec_per_elem":/, "", s); sub(/[,}].*/, "", s)
               f = $0; sub(/.*"host_scale":/, "", f); sub(/[,}].*/, "", f)
               print s * f }' | median
    }
    hr=$(awk -v a="$(eff_of "$n")" -v b="$(eff_of "$from")" 'BEGIN { if (a == "nan" || b == "nan" || b <= 0) print "-"; else printf "%.2f", a / b }')
    bn=$(cat "$tmp"/m-"$a"-"$from"-*.jsonl | grep '"predicted_pass_seconds"' |
      grep -F "\"loop\":\"$loop\"" | grep '"pass":2' |
      grep -F "\"predict\":\"${n}x1c:$rate/256kb\"" |
      sed 's/.*"bottleneck":"\([^"]*\)".*/\1/' | sort | uniq -c | sort -rn |
      sed -n '1s/^ *[0-9]* //p')
    awk -v a="$a" -v n="$n" -v m="$meas" -v pb="$pb" -v pn="$pn" -v bn="${bn:--}" \
        -v hr="$hr" -v l="$(cat "$tmp/load-$a-$n")" 'BEGIN {
      r = (m > 0 && pb != "nan") ? pb / m : 0
      printf "%-4s %5d %10.4f %10.4f %10.2f %9.2f %9s %9s %14s %5s  %s\n", a, n, m, pb, r,
        (m > 0 && pn != "nan") ? pn / m : 0, hr,
        (hr == "-" ? "-" : sprintf("%.2f", r * hr)), bn, l,
        (r >= 0.85 && r <= 1.15) ? "ok" : "NO" }'
  done
  echo "  ($a: loop $loop)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
