#!/usr/bin/env bash
# bench/dp_ab.sh: the data-parallel workloads whose loop bodies write
# through an orion.buffer, on two builds in one run, alternating (base,
# here, here, base, ...), so that a change to the buffered path is judged
# against its baseline on the same machine at the same time.
#
#   git archive BASE_REV | tar -x -C /tmp/base && (cd /tmp/base && ./configure && make)
#   bench/dp_ab.sh /tmp/base            # ROUNDS=3 EPOCHS=3 EXECS=2
#
# Workloads (WORKLOADS, default "mf lda lr"):
#   mf  apps/mf/mf.lua --parallel data on MovieLens-1M, K=128, --flush
#       MF_FLUSH (default block; managed: Boesen's largest-first sends;
#       clock: a push and a pull every MF_CLOCK blocks, default 4), and
#       HERE_MF_FLUSH for this tree's runs only (default MF_FLUSH: the base
#       build may not know a new mode), 64 partitions (docs/headline.md's
#       data-parallel baseline), EPOCHS epochs on EXECS executors, tier c
#   lda apps/lda/lda.lua --parallel data --sampler dense on 20 Newsgroups,
#       K=100, --flush LDA_FLUSH (default managed), EPOCHS sweeps on EXECS
#       executors (the word-topic counts through the buffer)
#   lr  apps/lr/lr.lua SGD on the 20 Newsgroups split (comp.* against the
#       rest, apps/lr/make_20ng.sh), EPOCHS epochs at --lr 2, --flush loop
#       (the same bits on any executor count), on EXECS executors, tier c
# For each it prints the medians over the rounds of the mean seconds of a
# pass (epochs 2.., the "seconds" of the metrics; lr: "train_seconds"),
# the bytes moved per pass (peer_bytes + driver_bytes; lr.lua records none:
# 0), the final quality
# (test RMSE; log-likelihood per token; test accuracy) of each build, here/base (below 1.00: this
# tree is faster or moves less), and the load average before and after.
# Both builds run their own apps/, so they should be the same.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
. bench/lib.sh

base=${1:?usage: bench/dp_ab.sh BASE_BUILD}
base=$(cd "$base" && pwd)
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-3}
execs=${EXECS:-2}
mf_flush=${MF_FLUSH:-block}
here_mf_flush=${HERE_MF_FLUSH:-$mf_flush}
mf_clock=${MF_CLOCK:-}
lda_flush=${LDA_FLUSH:-managed}
workloads=${WORKLOADS:-mf lda lr}
data=${ORION_DATA:-$here/../shared/data}
data=$(cd "$data" 2> /dev/null && pwd || echo "$data")
bench_epochs dp_ab.sh EPOCHS "$epochs"
for t in "$base" "$here"; do
  if [ ! -x "$t/orion-driver" ] || [ ! -x "$t/orion-executor" ]; then
    echo "bench/dp_ab.sh: $t has no built orion-driver" >&2
    exit 1
  fi
done
mftrain=$data/movielens-1m/ratings.train.txt.gz
mftest=$data/movielens-1m/ratings.test.txt.gz
bench_need dp_ab.sh "$mftrain" "$mftest" \
  "$data/20newsgroups-bydate/docword.20news.txt.gz"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ " $workloads " == *" lr "* ]]; then
  ORION_20NG=$data/20newsgroups-bydate apps/lr/make_20ng.sh "$tmp/20ng" comp. rest
fi

# pass_stats METRICS KEY: "mean-KEY-of-epochs-2.. bytes-per-pass quality"
pass_stats() {
  awk -v key="$2" '
    function val(k,   v) { v = $0; if (index(v, "\"" k "\":") == 0) return ""
      sub(".*\"" k "\":", "", v); sub(/[,}].*/, "", v); return v }
    val("epoch") != "" || val("iter") != "" {
      e = val("epoch"); if (e == "") e = val("iter"); e += 0
      q = val("test_rmse"); if (q == "") q = val("test_accuracy")
      if (q == "") q = val("ll_per_token")
      if (q != "" && q != "null") last = q
      if (e >= 2) { s += val(key); b += val("peer_bytes") + val("driver_bytes"); n++ } }
    END { if (n == 0) print "nan nan nan"; else printf "%.6f %.0f %s\n", s / n, b / n, last }' "$1"
}

# one SIDE WORKLOAD ROUND: runs one job with SIDE's build, appends stats.
one() {
  local dir=$base m=$tmp/$1.$2.$3.jsonl flush=$mf_flush
  local -a clock=()
  [ "$1" = here ] && dir=$here && flush=$here_mf_flush
  [ "$flush" = clock ] && [ -n "$mf_clock" ] && clock=(--clock "$mf_clock")
  case $2 in
    mf)
      # A relaxed run may diverge: counted, and left out of the medians.
      if (cd "$dir" && ./orion-driver --quiet --executors "$execs" --partitions 64 \
        --metrics "$m" apps/mf/mf.lua --train "$mftrain" --test "$mftest" \
        --k 128 --epochs "$epochs" --parallel data --flush "$flush" "${clock[@]}" \
        --tier c) > /dev/null 2> "$tmp/err"; then
        pass_stats "$m" seconds >> "$tmp/$1.$2"
      else
        echo "round $3: $1 mf failed: $(tail -n 1 "$tmp/err")" >&2
        echo "$1" >> "$tmp/failed"
      fi ;;
    lda)
      (cd "$dir" && ./orion-driver --quiet --executors "$execs" --metrics "$m" \
        apps/lda/lda.lua --corpus "$data/20newsgroups-bydate/docword.20news.txt.gz" \
        --k 100 --sampler dense --ll-every 1 --iters "$epochs" --parallel data \
        --flush "$lda_flush") > /dev/null
      pass_stats "$m" seconds >> "$tmp/$1.$2" ;;
    lr)
      (cd "$dir" && ./orion-driver --quiet --executors "$execs" --metrics "$m" \
        apps/lr/lr.lua --train "$tmp/20ng/train.libsvm" --test "$tmp/20ng/test.libsvm" \
        --epochs "$epochs" --lr 2 --flush loop --tier c) > /dev/null
      pass_stats "$m" train_seconds >> "$tmp/$1.$2" ;;
  esac
}

med() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
  else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="base here"; else order="here base"; fi
  for w in $workloads; do
    for side in $order; do
      echo "round $r: $w, $side" >&2
      one "$side" "$w" "$r"
    done
  done
done

printf '\ndata-parallel buffered path, here (%s) vs base (%s): %s executors, %s epochs, MF --flush %s (here: %s%s), LDA --flush %s, medians of %s rounds, %s cores\n' \
  "$here" "$base" "$execs" "$epochs" "$mf_flush" "$here_mf_flush" \
  "${mf_clock:+ --clock $mf_clock}" "$lda_flush" "$rounds" "$(nproc)"
printf '%-3s %12s %12s %7s %14s %14s %7s %10s %10s\n' app "base s/pass" "here s/pass" \
  ratio "base B/pass" "here B/pass" ratio "base qual" "here qual"
for w in $workloads; do
  touch "$tmp/base.$w" "$tmp/here.$w"
  bs=$(cut -d' ' -f1 "$tmp/base.$w" | med); hs=$(cut -d' ' -f1 "$tmp/here.$w" | med)
  bb=$(cut -d' ' -f2 "$tmp/base.$w" | med); hb=$(cut -d' ' -f2 "$tmp/here.$w" | med)
  bq=$(cut -d' ' -f3 "$tmp/base.$w" | med); hq=$(cut -d' ' -f3 "$tmp/here.$w" | med)
  awk -v w="$w" -v bs="$bs" -v hs="$hs" -v bb="$bb" -v hb="$hb" -v bq="$bq" -v hq="$hq" \
    'BEGIN { printf "%-3s %12.4f %12.4f %7.3f %14.0f %14.0f %7.3f %10.4f %10.4f\n",
             w, bs, hs, hs / bs, bb, hb, (bb > 0 ? hb / bb : 0), bq, hq }'
done
if [ -s "$tmp/failed" ]; then
  printf 'failed (left out): base %s, here %s\n' "$(grep -c '^base$' "$tmp/failed")" \
    "$(grep -c '^here$' "$tmp/failed")"
fi
printf 'load average: %s before, %s after\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
