#!/usr/bin/env bash
# bench/side_by_side.sh: every comparison of Orion-C with a peer, in one go,
# in one table (issue 36).
#
#   ./configure && make && bench/side_by_side.sh
#   LIBMF=DIR WARPLDA=DIR MALLET=FILE LIBLINEAR=DIR bench/side_by_side.sh
#   RUNS=3 MF_EPOCHS=20 MF_KS="32 128" LDA_ITERS=100 LDA_CORPORA="kos 20ng" \
#     LDA_KS="100 1000" LR_EXECS="1 2" bench/side_by_side.sh
#
# The peers are builds made outside this repository, named by:
#   LIBMF      a folder holding LIBMF's mf-train and mf-predict
#   WARPLDA    a folder holding WarpLDA's warplda and format
#   MALLET     MALLET's launcher, bin/mallet
#   LIBLINEAR  a folder holding liblinear's train and predict; without it,
#              Debian's liblinear-train and liblinear-predict (package
#              liblinear-tools, installed here with apt-get when missing
#              and this runs as root)
# It runs, each in RUNS rounds (default 3) with Orion-C and the peers
# taking turns (A, B, A, B, ...), medians and [min-max]:
#   MF     bench/mf.sh, MODES=fast, at MF_KS (default "32 128"), MF_EPOCHS
#          epochs (default 20), 2 executors against LIBMF's 2 threads:
#          training updates per second and the test RMSE
#   LDA    bench/lda.sh at LDA_CORPORA (default "kos 20ng") and LDA_KS
#          (default "100 1000"), LDA_ITERS sweeps (default 100): seconds to
#          WarpLDA's final LL and per sweep against WarpLDA, per sweep
#          against MALLET, and the final LL of each
#   LR     with bench/lr.sh when it takes SIDE_ROWS (it adds its own rows);
#          else here: apps/lr/make_20ng.sh's split of 20 Newsgroups (comp.*
#          against the rest), liblinear's train (default solver, -c
#          LR_C, default 10) then predict, against apps/lr/lr.lua at its
#          defaults on each of LR_EXECS executors (default "1 2"), both
#          end to end (wall seconds of the processes, reading the files
#          included), and the test accuracy of each
# A peer not given is replaced, in MF and LDA, by ../shared/anchors.md's
# figures, which come from another day's machine: their rows say
# "(anchor)" and their ratios "anchor".  Each script's own output is
# printed as it runs, then one table: workload, peer, measure, the peer's
# and Orion-C's medians [min-max], the ratio (above 1: Orion-C faster), the
# quality of both, and the 1-minute load average before/after the rows'
# runs, under a line giving the date, the commit and the load.
# Without the data a workload is skipped (exit 0), unless CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
. bench/interleave.sh
data=${ORION_DATA:-../shared/data}
runs=${RUNS:-3}
runs_count side_by_side.sh "$runs"
lr_execs=${LR_EXECS:-1 2}
lr_c=${LR_C:-10}
if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
  echo "bench/side_by_side.sh: build first (./configure && make)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows.tsv
: > "$rows"
load_start=$(loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"

echo "== bench/mf.sh (LIBMF=${LIBMF:-none}) =="
SIDE_ROWS=$rows RUNS=$runs MODES=fast EPOCHS=${MF_EPOCHS:-20} KS=${MF_KS:-32 128} \
  LIBMF=${LIBMF:-} bench/mf.sh
echo
echo "== bench/lda.sh (WARPLDA=${WARPLDA:-none} MALLET=${MALLET:-none}) =="
SIDE_ROWS=$rows RUNS=$runs ITERS=${LDA_ITERS:-100} CORPORA=${LDA_CORPORA:-kos 20ng} \
  KS=${LDA_KS:-100 1000} WARPLDA=${WARPLDA:-} MALLET=${MALLET:-} bench/lda.sh
echo

# LR against liblinear.
if grep -q SIDE_ROWS bench/lr.sh; then
  echo "== bench/lr.sh (LIBLINEAR=${LIBLINEAR:-Debian}) =="
  SIDE_ROWS=$rows RUNS=$runs LIBLINEAR=${LIBLINEAR:-} bench/lr.sh
else
  echo "== LR: liblinear against apps/lr/lr.lua (bench/lr.sh takes no SIDE_ROWS) =="
  if [ -n "${LIBLINEAR:-}" ]; then
    ll_train=$LIBLINEAR/train ll_predict=$LIBLINEAR/predict ll_name="liblinear ($LIBLINEAR)"
  else
    ll_train=liblinear-train ll_predict=liblinear-predict ll_name="liblinear (Debian)"
    if ! command -v liblinear-train > /dev/null && [ "$(id -u)" = 0 ]; then
      echo "installing Debian's liblinear-tools"
      apt-get install -y -q liblinear-tools > "$tmp/apt.log" 2>&1 ||
        { echo "bench/side_by_side.sh: apt-get install liblinear-tools failed:" >&2; tail -5 "$tmp/apt.log" >&2; }
    fi
  fi
  corpus=$data/20newsgroups-bydate
  if ! command -v "$ll_train" > /dev/null || ! command -v "$ll_predict" > /dev/null; then
    echo "bench/side_by_side.sh: LR left out: no liblinear ($ll_train, $ll_predict; set LIBLINEAR=DIR or install liblinear-tools)" >&2
  elif [ ! -f "$corpus/docword.20news.txt.gz" ]; then
    bench_need side_by_side.sh "$corpus/docword.20news.txt.gz"
  else
    ORION_20NG=$corpus apps/lr/make_20ng.sh "$tmp/lr" comp. rest
    # The test labels are +1/-1 and the training labels 1/0: liblinear
    # compares labels as given, so its copy of the test set says 0, not -1.
    sed 's/^-1 /0 /' "$tmp/lr/test.libsvm" > "$tmp/lr/test01.libsvm"
    : > "$tmp/ll.s"; : > "$tmp/ll.acc"
    lr_liblinear() {
      local t0 t1
      t0=$(date +%s.%N)
      if ! "$ll_train" -q -c "$lr_c" "$tmp/lr/train.libsvm" "$tmp/lr/model" > "$tmp/llt" 2>&1 ||
         ! "$ll_predict" "$tmp/lr/test01.libsvm" "$tmp/lr/model" "$tmp/lr/pred" > "$tmp/llp" 2>&1; then
        echo "bench/side_by_side.sh: liblinear failed:" >&2; cat "$tmp/llt" "$tmp/llp" >&2 2>/dev/null
        return 1
      fi
      t1=$(date +%s.%N)
      awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' >> "$tmp/ll.s"
      sed -n 's/^Accuracy = \([0-9.]*\)%.*/\1/p' "$tmp/llp" >> "$tmp/ll.acc"
    }
    lr_orion() {
      local n t0 t1
      for n in $lr_execs; do
        t0=$(date +%s.%N)
        ./orion-driver --quiet --executors "$n" --metrics "$tmp/lr_$n.jsonl" apps/lr/lr.lua \
          --train "$tmp/lr/train.libsvm" --test "$tmp/lr/test.libsvm" > "$tmp/lro" 2>&1 ||
          { echo "bench/side_by_side.sh: lr.lua failed:" >&2; cat "$tmp/lro" >&2; return 1; }
        t1=$(date +%s.%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' >> "$tmp/lr_$n.s"
        awk -v a="$(last_key "$tmp/lr_$n.jsonl" test_accuracy)" 'BEGIN { printf "%.4f\n", a * 100 }' >> "$tmp/lr_$n.acc"
      done
    }
    l0=$(loadavg)
    interleave "$runs" lr_liblinear lr_orion
    l1=$(loadavg)
    read -r lla _ <<< "$(stat3 "$tmp/ll.acc")"
    printf 'liblinear -c %s: %s s end to end, accuracy %s%%\n' "$lr_c" \
      "$(spread_of "$(stat3 "$tmp/ll.s")")" "$lla"
    for n in $lr_execs; do
      read -r ora _ <<< "$(stat3 "$tmp/lr_$n.acc")"
      printf 'lr.lua on %s executor(s): %s s end to end, accuracy %s%%\n' "$n" \
        "$(spread_of "$(stat3 "$tmp/lr_$n.s")")" "$ora"
      side_row "$rows" "LR 20NG comp/rest ${n}ex" "$ll_name" "wall s" lower \
        "$(stat3 "$tmp/ll.s")" "$(stat3 "$tmp/lr_$n.s")" "acc $lla%" "acc $ora%" "$l0 / $l1"
    done
  fi
fi

echo
printf 'Side by side, %s, commit %s, %s cores; load average %s at the start, %s at the end\n' \
  "$(date -u '+%Y-%m-%d %H:%M UTC')" "$commit" "$(nproc)" "$load_start" "$(loadavg)"
printf 'medians [min-max] of %s interleaved rounds; ratio above 1: Orion-C faster\n' "$runs"
side_table "$rows"
