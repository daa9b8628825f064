#!/usr/bin/env bash
# bench/scale.sh: strong and weak scaling of the apps on virtual hosts,
# against what orion-driver --predict says, with LIBMF beside MF (issue 35;
# needs root for the namespaces and cgroups):
#
#   ./configure && make && sudo bench/scale.sh
#   QUICK=1 bench/scale.sh                      # a few minutes, small data
#   APPS=mf-netflix,lda MF_KS=128 NETFLIX_SCALE=0.25 WEAK=1 \
#     LIBMF=/work/peers/libmf bench/scale.sh
#
# For each workload, N virtual hosts (bench/netcluster.sh -n N --cpu Q
# --driver-cpu QD: each executor in a cgroup of Q CPUs, default 0.2, the
# driver in one of QD, default Q; links at Q x 1 gbit) for each N of NS
# (default "1 2 4 8"), RUNS times each (default 3), interleaved (N = 1, 2,
# 4, 8, then again), each run EPOCHS epochs (default 4; LDA: iterations)
# under orion-driver --loop-metrics.  Workloads (APPS, comma-separated,
# default all):
#   mf-ml1m     apps/mf/mf.lua on MovieLens-1M's training ratings, at each
#               K of MF_KS (default "32 128")
#   mf-netflix  apps/mf/mf.lua --synthetic on a Netflix-shaped set: 480,000
#               users x 17,700 items, 25M ratings, users and ratings times
#               NETFLIX_SCALE (default 1; the items stay), at each K of MF_KS
#   mf-synth    apps/mf/mf.lua --synthetic DATA (users,items,ratings;
#               default 100000,20000,4000000: docs/scale.md's first
#               figures), at each K of MF_KS (K= is read as MF_KS too);
#               not in the default list
#   lda         apps/lda/lda.lua on 20 Newsgroups (docword), at each K of
#               LDA_KS (default "100 1000")
#   lr          apps/lr/lr.lua (SGD, tier c, the default flush: the same
#               bits on any N) on a synthetic libsvm set (bench/lr_synth.sh)
#               of LR_ROWS rows (default 1,000,000) x LR_FEATURES features
#               (default 100,000) and a test set of a tenth of that (scored
#               after the last epoch), made once in a temporary folder
#   dnn         apps/dnn/dnn.lua on Fashion-MNIST ($FASHION_DIR, default
#               /usr/share/datasets/fashion-mnist) with --shards the
#               largest N (the same work on every N), DNN_LIMIT training
#               images (default 0: all 60,000)
# WEAK=1 also runs each workload with data in proportion to N (N/max(NS)
# of it: the first rows of a file, the first documents of a corpus, or
# the synthetic sets' users / rows times N/max(NS)), and prints its weak
# scaling efficiency T(1) / T(N).  QUICK=1: NS="1 2", RUNS=1, EPOCHS=2,
# MF_KS=32, LDA_KS=100, NETFLIX_SCALE=0.01, LR_ROWS=20000, DNN_LIMIT=6000
# (each can still be set).
#
# Per run (bench/scale_lib.sh's scale_summary): the training loop (the
# call site with the most seconds), its seconds an epoch over epochs
# 2..EPOCHS, the bytes an epoch between executors and through the driver,
# the driver's CPU seconds (getrusage) and each host's compute / wait /
# idle split (what each executor counted, --loop-metrics); and each
# host's and the driver's CPU seconds over the whole run, from their
# cgroups (bench/netcluster.sh's last lines), printed per N below the
# table with the share of N x Q x the run's wall seconds they add up to:
# on a loaded machine the quotas cap the CPU but do not guarantee it.  Per N
# (scale_table): the median over the runs and its spread (max - min over
# median), the efficiency, MB an epoch per host, the driver's share of the
# bytes, its CPU against one host's (Q CPUs over the epoch), the mean
# split (and the time outside the hosts' span), the load average when the
# N's runs ended; each host's split below.  The strong runs on 2 hosts (or
# the second N of NS) also pass --predict for every N of NS (hosts of
# PRED_CPU CPUs, default 1: a host whose block seconds are those measured
# under the quota, and the same links): the predicted epoch seconds,
# predicted / measured and the predicted bottleneck (docs/scale.md).
#
# LIBMF=DIR (a LIBMF build, made outside the repository: DIR/mf-train; an
# AVX build for the AVX figures) runs mf-train -s 1 in a cgroup of Q CPUs, RUNS times
# interleaved with ours, on MovieLens-1M's training ratings at each K of
# MF_KS (written to a temporary folder in its text format): its seconds an
# epoch are (T(-t 1+E) - T(-t 1)) / E, E = LIBMF_EPOCHS (default 10: the
# loading, about a second at 0.2 CPU, varies more than a few epochs take).
# Both sides' updates per CPU-second count the quota held: ratings /
# (N x Q x epoch seconds), ours on 1 host and on the largest N.
#
# HEARTBEAT=S passes --heartbeat-timeout S to the driver (default: its
# own, 5 s): a host of 0.2 CPU loading a large part on a loaded machine
# can stay silent longer than that.
#
# Each run (and each of mf-train's) is stopped after RUN_TIMEOUT seconds
# (default 1800; netcluster then removes what it made) and the script
# exits 1 naming it.
#
# KEEP=DIR keeps each run's metrics file and summary line in DIR
# (TAG-N-R.jsonl and .sum, TAG = APP-K-MODE).
#
# DRY_RUN=1 checks the arguments and the data and prints, per workload,
# mode and N, the script and arguments each run would pass to orion-driver
# (no root needed; the weak runs' data is made, then removed).
#
# At the end, each of the issue's goals that these runs measure, met or
# missed, and where missed the largest part of the hosts' time that was
# not computing (bench/scale_lib.sh's scale_goal).  On a machine where
# other work runs, the quotas are not what the executors get (8 x 0.2 CPU
# + the driver need 1.8 free cores): the load average printed with each
# row says how far to trust it.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/scale.sh
die() { echo "$me: $*" >&2; exit 2; }

quick=${QUICK:-0}
case $quick in 0 | 1) ;; *) die "QUICK must be 0 or 1, not '$quick'" ;; esac
if [ "$quick" = 1 ]; then d_ns="1 2" d_runs=1 d_epochs=2 d_mfks=32 d_ldaks=100 d_nf=0.01 d_lr=20000 d_dnn=6000
else d_ns="1 2 4 8" d_runs=3 d_epochs=4 d_mfks="32 128" d_ldaks="100 1000" d_nf=1 d_lr=1000000 d_dnn=0; fi
q=${Q:-0.2}
qd=${QD:-$q}
ns=${NS:-$d_ns}
runs=${RUNS:-$d_runs}
epochs=${EPOCHS:-$d_epochs}
apps=${APPS:-mf-ml1m,mf-netflix,lda,lr,dnn}
mf_ks=${MF_KS:-${K:-$d_mfks}}
synth=${DATA:-100000,20000,4000000}
lda_ks=${LDA_KS:-$d_ldaks}
nf_scale=${NETFLIX_SCALE:-$d_nf}
lr_rows=${LR_ROWS:-$d_lr}
lr_features=${LR_FEATURES:-100000}
dnn_limit=${DNN_LIMIT:-$d_dnn}
weak=${WEAK:-0}
pq=${PRED_CPU:-1}
libmf=${LIBMF:-}
libmf_epochs=${LIBMF_EPOCHS:-10}
keep=${KEEP:-}
run_timeout=${RUN_TIMEOUT:-1800}
heartbeat=${HEARTBEAT:-}
fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
data=${ORION_DATA:-../shared/data}

# The arguments, all checked before anything runs.
isnum() { awk -v x="$1" 'BEGIN { exit !(x ~ /^[0-9]*\.?[0-9]+$/ && x > 0) }'; }
iscount() { case $1 in '' | *[!0-9]* | 0) return 1 ;; esac; }
isnum "$q" || die "Q must be a number of CPUs above 0 (0.2), not '$q'"
isnum "$qd" || die "QD must be a number of CPUs above 0, not '$qd'"
isnum "$pq" || die "PRED_CPU must be a number of CPUs above 0, not '$pq'"
iscount "$runs" || die "RUNS must be 1 or more, not '$runs'"
case $epochs in '' | *[!0-9]* | 0 | 1) die "EPOCHS must be 2 or more (epoch 1 is left out), not '$epochs'" ;; esac
case $weak in 0 | 1) ;; *) die "WEAK must be 0 or 1, not '$weak'" ;; esac
[ -n "$ns" ] || die "NS must list host counts (1 2 4 8)"
nmax=0
for n in $ns; do
  iscount "$n" || die "NS: '$n' is not a host count (NS=\"1 2 4 8\")"
  [ "$n" -le 64 ] || die "NS: $n hosts: at most 64 here"
  [ "$n" -le "$nmax" ] && die "NS must rise (1 2 4 8), not '$ns'"
  nmax=$n
done
for k in $mf_ks; do iscount "$k" || die "MF_KS: '$k' is not a K (MF_KS=\"32 128\")"; done
for k in $lda_ks; do iscount "$k" || die "LDA_KS: '$k' is not a K (LDA_KS=\"100 1000\")"; done
isnum "$nf_scale" && awk -v x="$nf_scale" 'BEGIN { exit !(x <= 1) }' ||
  die "NETFLIX_SCALE must be above 0 and at most 1, not '$nf_scale'"
echo "$synth" | grep -Eq '^[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*$' ||
  die "DATA must be USERS,ITEMS,RATINGS (100000,20000,4000000), not '$synth'"
iscount "$lr_rows" || die "LR_ROWS must be a count of rows, not '$lr_rows'"
iscount "$lr_features" || die "LR_FEATURES must be a count of features, not '$lr_features'"
case $dnn_limit in '' | *[!0-9]*) die "DNN_LIMIT must be a count of images (0: all), not '$dnn_limit'" ;; esac
app_list=$(echo "$apps" | tr ',' ' ')
[ -n "$app_list" ] || die "APPS must name workloads (mf-ml1m,mf-netflix,lda,lr,dnn)"
for a in $app_list; do
  case $a in
    mf-ml1m | mf-netflix | mf-synth | lda | lr | dnn) ;;
    *) die "APPS: unknown workload '$a' (mf-ml1m, mf-netflix, mf-synth, lda, lr, dnn)" ;;
  esac
done
iscount "$run_timeout" || die "RUN_TIMEOUT must be a number of seconds, not '$run_timeout'"
[ -z "$heartbeat" ] || iscount "$heartbeat" || die "HEARTBEAT must be a number of seconds, not '$heartbeat'"
[ -z "$keep" ] || [ -d "$keep" ] || die "KEEP=$keep is not a folder"
iscount "$libmf_epochs" || die "LIBMF_EPOCHS must be 1 or more, not '$libmf_epochs'"
if [ -n "$libmf" ] && [ ! -x "$libmf/mf-train" ]; then
  die "LIBMF=$libmf does not hold an mf-train program (a LIBMF build)"
fi
has() { case ",$apps," in *",$1,"*) return 0 ;; esac; return 1; }
. bench/lib.sh
. bench/scale_lib.sh
. bench/lr_synth.sh
bench_need scale.sh bench/netcluster.sh
ml1m=$data/movielens-1m/ratings.train.txt.gz
docword=$data/20newsgroups-bydate/docword.20news.txt.gz
if has mf-ml1m || [ -n "$libmf" ]; then bench_need scale.sh "$ml1m"; fi
! has lda || bench_need scale.sh "$docword"
! has dnn || bench_need scale.sh "$fashion/train-images-idx3-ubyte.gz"
rate_mbit=$(awk -v x="$q" 'BEGIN { printf "%d", x * 1000 + 0.5 }')
specs=""
for n in $ns; do specs="$specs${specs:+,}${n}x${pq}c:${rate_mbit}mbit"; done
pred_n=$(echo "$ns" | awk '{ print ($2 != "") ? $2 : $1 }')

tmp=$(mktemp -d)
cg=""
cleanup() { [ -z "$cg" ] || rmdir "$cg" 2> /dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

# frac N: N / max(NS), for the weak runs.
frac() { awk -v n="$1" -v m="$nmax" 'BEGIN { printf "%.6f", n / m }'; }
# The workloads: "APP K" lines; wargs APP K N MODE: the driver's script
# and arguments (data for N hosts in MODE weak), after making the data.
workloads() {
  local a k
  for a in $app_list; do
    case $a in
      mf-*) for k in $mf_ks; do echo "$a $k"; done ;;
      lda) for k in $lda_ks; do echo "$a $k"; done ;;
      *) echo "$a -" ;;
    esac
  done
}
nf_users=$(awk -v s="$nf_scale" 'BEGIN { printf "%d", 480000 * s + 0.5 }')
nf_ratings=$(awk -v s="$nf_scale" 'BEGIN { printf "%d", 25000000 * s + 0.5 }')
label() {
  case $1 in
    mf-ml1m) echo "MF MovieLens-1M, K=$2" ;;
    mf-synth) echo "MF --synthetic $synth, K=$2" ;;
    mf-netflix) echo "MF Netflix-shaped x$nf_scale ($nf_users users x 17700 items, $nf_ratings ratings), K=$2" ;;
    lda) echo "LDA 20 Newsgroups, K=$2" ;;
    lr) echo "LR synthetic libsvm, $lr_rows rows x $lr_features features" ;;
    dnn) echo "DNN Fashion-MNIST (784,256,10), --shards $nmax, $([ "$dnn_limit" = 0 ] && echo "all 60000" || echo "$dnn_limit") training images" ;;
  esac
}
wargs() {
  local a=$1 k=$2 n=$3 mode=$4 f=1 out
  [ "$mode" != weak ] || f=$(frac "$n")
  case $a in
    mf-ml1m)
      out=$ml1m
      if [ "$mode" = weak ]; then
        out=$tmp/ml1m-$n.txt
        [ -f "$out" ] || first_lines "$ml1m" "$out" "$f"
      fi
      echo "apps/mf/mf.lua --train $out --k $k --epochs $epochs" ;;
    mf-synth)
      echo "apps/mf/mf.lua --synthetic $(echo "$synth" | awk -F, -v f="$f" \
        '{ printf "%d,%d,%d", $1 * f + 0.5, $2, $3 * f + 0.5 }') --k $k --epochs $epochs" ;;
    mf-netflix)
      echo "apps/mf/mf.lua --synthetic $(awk -v u="$nf_users" -v r="$nf_ratings" -v f="$f" \
        'BEGIN { printf "%d,17700,%d", u * f + 0.5, r * f + 0.5 }') --k $k --epochs $epochs" ;;
    lda)
      out=$docword
      if [ "$mode" = weak ]; then
        out=$tmp/docword-$n.txt
        [ -f "$out" ] || docword_part "$docword" "$out" "$f"
      fi
      echo "apps/lda/lda.lua --corpus $out --k $k --iters $epochs --ll-every $epochs" ;;
    lr)
      if [ ! -f "$tmp/lr.txt" ]; then
        lr_synth "$tmp/lr.txt" "$lr_rows" 1 "$lr_features" 10
        lr_synth "$tmp/lr-test.txt" $(((lr_rows + 9) / 10)) 2 "$lr_features" 10
      fi
      out=$tmp/lr.txt
      if [ "$mode" = weak ]; then
        out=$tmp/lr-$n.txt
        [ -f "$out" ] || first_lines "$tmp/lr.txt" "$out" "$f"
      fi
      echo "apps/lr/lr.lua --train $out --test $tmp/lr-test.txt --epochs $epochs --tier c --eval-every 0" ;;
    dnn)
      local lim=$dnn_limit
      [ "$lim" != 0 ] || lim=60000
      [ "$mode" != weak ] || lim=$(awk -v l="$lim" -v f="$f" 'BEGIN { printf "%d", l * f + 0.5 }')
      echo "apps/dnn/dnn.lua --data fashion-mnist:$fashion --epochs $epochs --shards $nmax --limit $lim" ;;
  esac
}

# run_one TAG APP K MODE N R: one run; its summary in TAG-N-R.sum.
run_one() {
  local tag=$1 a=$2 k=$3 mode=$4 n=$5 r=$6 m t0 pred=() hb=()
  m=$tmp/$tag-$n-$r.jsonl
  [ "$mode" != strong ] || [ "$n" != "$pred_n" ] || pred=(--predict "$specs")
  [ -z "$heartbeat" ] || hb=(--heartbeat-timeout "$heartbeat")
  t0=$(date +%s.%N)
  # shellcheck disable=SC2046 # wargs's words are the script's arguments
  timeout "$run_timeout" bench/netcluster.sh -n "$n" --cpu "$q" --driver-cpu "$qd" \
    --logs "$tmp/logs-$tag-$n-$r" -- --quiet --loop-metrics --metrics "$m" "${pred[@]}" "${hb[@]}" \
    $(wargs "$a" "$k" "$n" "$mode") > "$tmp/out" 2> "$tmp/err" ||
    { echo "$me: $(label "$a" "$k") ($mode) on $n hosts failed$([ $? != 124 ] || echo " (over RUN_TIMEOUT=$run_timeout s)"):" >&2
      tail -n 20 "$tmp/out" "$tmp/err" >&2; return 1; }
  scale_summary "$m" "$epochs" > "$tmp/$tag-$n-$r.sum" || return 1
  scale_cpu_of "$tmp/err" "$n" > "$tmp/$tag-$n-$r.cpu"
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }' > "$tmp/$tag-$n-$r.wall"
  cut -d' ' -f1 /proc/loadavg > "$tmp/$tag-$n.load"
  if [ ${#pred[@]} -gt 0 ]; then
    local loop per nn
    loop=$(cut -d' ' -f1 "$tmp/$tag-$n-$r.sum")
    per=$(cut -d' ' -f6 "$tmp/$tag-$n-$r.sum")
    for nn in $ns; do scale_predicted "$m" "$loop" "$nn" "$per" >> "$tmp/$tag-$nn.predruns"; done
  fi
  if [ -n "$keep" ]; then mv "$m" "$tmp/$tag-$n-$r.sum" "$keep/" && cp "$keep/$tag-$n-$r.sum" "$tmp/" &&
    cp "$tmp/$tag-$n-$r.cpu" "$keep/"; else rm -f "$m"; fi
}

# LIBMF: mf-train -s 1 in a cgroup of Q CPUs (v2 cpu.max or v1's cpu
# controller), seconds an epoch appended to libmf-K.
make_libmf_cg() {
  local qp
  qp=$(awk -v x="$q" 'BEGIN { p = 5000; if (x * p < 1000) p = int(1000 / x + 0.5); printf "%d %d", x * p + 0.5, p }')
  if grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null &&
     mkdir "/sys/fs/cgroup/orion-scale-$$" 2> /dev/null; then
    cg=/sys/fs/cgroup/orion-scale-$$
    echo "$qp" > "$cg/cpu.max"
  elif mkdir "/sys/fs/cgroup/cpu/orion-scale-$$" 2> /dev/null; then
    cg=/sys/fs/cgroup/cpu/orion-scale-$$
    echo "${qp#* }" > "$cg/cpu.cfs_period_us"
    echo "${qp% *}" > "$cg/cpu.cfs_quota_us"
  else
    die "LIBMF: no cgroup cpu controller to hold mf-train to Q=$q CPU"
  fi
}
libmf_run() { # K R
  local t0 t1 t2
  t0=$(date +%s.%N)
  timeout "$run_timeout" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
    "$libmf/mf-train" --quiet -k "$1" -t 1 -s 1 "$tmp/libmf-tr.txt" "$tmp/lm1" > /dev/null
  t1=$(date +%s.%N)
  timeout "$run_timeout" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
    "$libmf/mf-train" --quiet -k "$1" -t $((1 + libmf_epochs)) -s 1 "$tmp/libmf-tr.txt" "$tmp/lmE" > /dev/null
  t2=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v e="$libmf_epochs" 'BEGIN { printf "%.6f\n", ((c - b) - (b - a)) / e }' >> "$tmp/libmf-$1"
}

modes=strong
[ "$weak" != 1 ] || modes="strong weak"
workloads > "$tmp/workloads"
if [ "${DRY_RUN:-0}" = 1 ]; then
  while read -r a k; do
    for mode in $modes; do
      for n in $ns; do printf '%s | %s | %s hosts | %s\n' "$(label "$a" "$k")" "$mode" "$n" "$(wargs "$a" "$k" "$n" "$mode")"; done
    done
  done < "$tmp/workloads"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "$me: skipped: network namespaces and cgroups need root"
  exit 0
fi
export ORION_LUA_PATH=${ORION_LUA_PATH:-$PWD/lua/?.lua}
echo "$me: Q=$q CPU a host (driver $qd), links ${rate_mbit}mbit, NS=\"$ns\", $runs runs each," \
     "$epochs epochs (1 left out), $(nproc) cores; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$libmf" ]; then
  make_libmf_cg
  zcat -f "$ml1m" > "$tmp/libmf-tr.txt"
fi
while read -r a k; do
  for mode in $modes; do
    tag="$a-$k-$mode"
    echo
    echo "== $(label "$a" "$k"): $mode scaling"
    for ((r = 1; r <= runs; r++)); do
      for n in $ns; do run_one "$tag" "$a" "$k" "$mode" "$n" "$r" || exit 1; done
      if [ -n "$libmf" ] && [ "$a" = mf-ml1m ] && [ "$mode" = strong ]; then libmf_run "$k" "$r"; fi
    done
    for n in $ns; do
      [ ! -f "$tmp/$tag-$n.predruns" ] ||
        awk '$1 != "nan"' "$tmp/$tag-$n.predruns" | sort -g | awk '{ v[NR] = $0 } END { if (NR) print v[int((NR + 1) / 2)] }' > "$tmp/$tag-$n.pred"
    done
    scale_table "$tmp" "$tag" "$mode" "$q" "$ns"
    scale_cpu "$tmp" "$tag" "$ns" "$q"
    if [ -n "$libmf" ] && [ "$a" = mf-ml1m ] && [ "$mode" = strong ]; then
      nr=$(zcat -f "$ml1m" | wc -l)
      lt=$(scale_median < "$tmp/libmf-$k")
      for n in $(echo "$ns" | awk '{ print $1, $NF }' | tr ' ' '\n' | sort -un); do
        ot=$(cat "$tmp/$tag-$n-"*.sum | awk '{ print $2 }' | scale_median)
        awk -v nr="$nr" -v lt="$lt" -v ot="$ot" -v n="$n" -v q="$q" -v k="$k" \
            -v ls="$(scale_spread "$lt" < "$tmp/libmf-$k")" 'BEGIN {
          o = nr / (n * q * ot) / 1e6; l = nr / (q * lt) / 1e6
          printf "  LIBMF -s 1 in %s CPU: %.4f s an epoch (spread %s), %.1f M updates per CPU-s; Orion-C on %d host%s: %.1f; ratio %.2f (goal >= 1.3 at K=%s: %s)\n",
            q, lt, ls, l, n, (n > 1 ? "s" : ""), o, o / l, k, (o / l >= 1.3 ? "met" : "missed") }' |
          tee -a "$tmp/goals-libmf"
      done
    fi
  done
done < "$tmp/workloads"

echo
echo "== goals at $nmax hosts (this run's data and load; see the tables for the spread)"
while read -r a k; do
  for mode in $modes; do
    f=$tmp/$a-$k-$mode.eff
    want=""
    case "$a $k $mode" in
      "mf-netflix 128 strong") want=0.85 ;;
      "mf-netflix 32 strong") want=0.75 ;;
      "mf-netflix "*" weak") want=0.9 ;;
      "lda 1000 strong" | "lr - strong" | "dnn - strong") want=0.8 ;;
    esac
    [ -z "$want" ] || scale_goal "$a K=$k $mode" "$f" "$nmax" "$want"
    [ "$mode" != strong ] || scale_driver_goal "$a K=$k driver" "$f" "$nmax"
  done
done < "$tmp/workloads"
[ ! -f "$tmp/goals-libmf" ] || sed 's/^  //' "$tmp/goals-libmf"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
