#!/usr/bin/env bash
# bench/predict_scale.sh: strong scaling of MF and LDA predicted for
# clusters too large to run here (issue 35, the simulator "used"):
#
#   ./configure && make && make bench/predict_scale && bench/predict_scale.sh
#   HOSTS=16,64,256,1024 CLUSTER=16c:10gbit SVG=docs/scale-predict.svg \
#     bench/predict_scale.sh
#
# 1. Measures the costs on small local runs (2 executors, LDA also 4), with
#    orion-driver --predict (its metrics carry them): MF at K=128 on
#    MovieLens-1M (apps/mf/mf.lua, 3 epochs) and LDA at K=1000 on KOS
#    (apps/lda/lda.lua, 3 iterations).  Of each, the loop with the most
#    elements among those with rotating rows, from its second pass (the
#    steady state): seconds per element (one CPU's), bytes of a rotating
#    row (a time part's bytes x time parts / the rotating rows) and the
#    driver's bytes per block.
# 2. Scales them with bench/predict_scale to Netflix-sized MF (480,189
#    users x 17,770 items, 100,480,507 ratings, K=128) and a 1B-token LDA
#    corpus (PubMed's vocabulary of 141,043 words, 11,000,000 documents:
#    PubMed's UCI bag-of-words shape grown to 1e9 tokens), on HOSTS hosts
#    of CLUSTER, each with partitions per dimension:
#      mf-8    - the runtime's default (--partitions, never the executors),
#                which mf.lua gets
#      mf-N    - one space part a host (--partitions N on N hosts)
#      mf-2N   - two a host
#      mf-4N   - four a host
#      mf-2N-inorder, mf-4N-inorder - the same, with executors that run
#                their blocks in the order they came (ORION_NO_REORDER=1,
#                executor/exec_order.c), to compare
#      mf-N-noahead - one a host, the runtime without dispatch ahead
#                (ORION_NO_AHEAD=1; scheduler/loop.h), to compare
#      lda-N   - one a host (lda.lua --partitions N on N hosts; its
#                default is 8 on any cluster)
#      lda-2N  - two a host
#    (lda.lua's sampler has a buffer, so it does not dispatch ahead)
#    The driver's bytes are split into bytes a block and bytes an element
#    from two runs of different block counts (MF: --partitions 8 and 16;
#    LDA: --partitions 4 on 2 executors and 8 on 4: lda.lua cuts 8 parts
#    a dimension on any cluster by default), as the data grows but the
#    blocks do not.  Since the tokens' topics stay on the executors
#    (scheduler/dist_resid.c, orion__resid_keep), LDA's bytes an element
#    measure about 0 (4.07 before).  The bytes the driver sends each
#    executor once a pass (the loop's body, stale rows: driver_exec_bytes)
#    are measured apart and sent to every predicted host
#    (--driver-exec-bytes).
# 3. Prints one table per workload and partitioning, and with SVG set
#    draws the efficiency against log2(hosts) with `orion-driver plot`
#    (one line per table, named by it).
#
# The driver's CPU per block is not measured (0 in the model); shard
# traffic, buffered writes and broadcasts are not modelled (docs/scale.md).
# The seconds per element are this machine's under its load (printed);
# MF_SEC_PER_ELEM and LDA_SEC_PER_ELEM, when set, replace them (one CPU's
# seconds per rating and per token, e.g. from a run on an idle machine),
# so that runs on differently loaded days compare.
set -euo pipefail
cd "$(dirname "$0")/.."

data=${ORION_DATA:-../shared/data}
hosts=${HOSTS:-1,16,64,256,1024}
cluster=${CLUSTER:-16c:10gbit}
svg=${SVG:-}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$PWD/lua/?.lua}
[ -x bench/predict_scale ] || make -s bench/predict_scale
mf=$data/movielens-1m
kos=$data/uci-bow-kos
for f in "$mf/ratings.train.txt.gz" "$kos/docword.kos.txt.gz"; do
  if [ ! -f "$f" ]; then
    echo "bench/predict_scale.sh: $f not found (set ORION_DATA)" >&2
    exit 1
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The value of KEY in a JSON line.
jv() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# measure NAME ROWS1 METRICS: prints "SEC_PER_ELEM ROW_BYTES BLOCKS
# DRIVER_BYTES ELEMENTS" of the pass-2 prediction with rotating rows and
# the most elements (DRIVER_BYTES: the pass's).
measure() {
  local line
  line=$(grep '"pass":2' "$3" | grep -v '"part_bytes":0[,}]' |
    awk '{ e = $0; sub(/.*"elements":/, "", e); sub(/[,}].*/, "", e)
           if (e + 0 > best) { best = e + 0; l = $0 } }
         END { print l }')
  if [ -z "$line" ]; then
    echo "bench/predict_scale.sh: $1: no second pass with rotating rows" >&2
    exit 1
  fi
  local spe pb tp sp db el xb
  spe=$(echo "$line" | jv sec_per_elem)
  pb=$(echo "$line" | jv part_bytes)
  tp=$(echo "$line" | jv time_parts)
  sp=$(echo "$line" | jv space_parts)
  db=$(echo "$line" | jv driver_block_bytes)
  el=$(echo "$line" | jv elements)
  xb=$(echo "$line" | jv driver_exec_bytes)
  echo "# $1: $(echo "$line" | jv loop): $el elements, $spe s an element," \
    "$pb bytes a time part, $sp x $tp blocks, $db driver bytes a block, ${xb:-0} an executor" >&2
  awk -v s="$spe" -v p="$pb" -v t="$tp" -v q="$sp" -v r="$2" -v d="$db" -v e="$el" -v x="${xb:-0}" \
    'BEGIN { printf "%.6g %.6g %d %.6g %d %.6g\n", s, p * t / r, q * t, d * q * t, e, x }'
}

# split B1 D1 B2 D2 E: the driver's bytes per block and per element, from
# two passes over the same E elements in B1 and B2 blocks (D = a B + b E;
# each at least 0).
split() {
  awk -v b1="$1" -v d1="$2" -v b2="$3" -v d2="$4" -v e="$5" 'BEGIN {
    a = b2 != b1 ? (d2 - d1) / (b2 - b1) : d1 / b1
    if (a < 0) a = 0
    b = (d1 - a * b1) / e
    if (b < 0) b = 0
    printf "%.6g %.6g\n", a, b }'
}

rate=$(echo "$cluster" | cut -d: -f2)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# MF: the job's --partitions (8, then 16): 64 and 256 blocks.
for p in 8 16; do
  ORION_PARTITIONS=$p ./orion-driver --quiet --executors 2 --predict "1x1c:$rate" \
    --metrics "$tmp/mf$p.jsonl" apps/mf/mf.lua --train "$mf/ratings.train.txt.gz" \
    --test "$mf/ratings.test.txt.gz" --k 128 --epochs 3 > "$tmp/mf.out"
done
items=$(sed -n 's/^# mf: .* x \([0-9]*\) items.*/\1/p' "$tmp/mf.out")
read -r mf_spe mf_rb b1 d1 el mf_xb < <(measure "MF ML-1M K=128" "$items" "$tmp/mf8.jsonl")
read -r _ _ b2 d2 _ < <(measure "MF ML-1M K=128" "$items" "$tmp/mf16.jsonl")
read -r mf_db mf_de < <(split "$b1" "$d1" "$b2" "$d2" "$el")
# LDA: 4 parts a dimension on 2 executors, then 8 on 4 (16 and 64
# blocks: lda.lua's own default is 8 on any cluster).  The vocabulary is
# not needed (and not in every copy of the data).
vocab=()
[ -f "$kos/vocab.kos.txt" ] && vocab=(--vocab "$kos/vocab.kos.txt")
for e in 2 4; do
  ./orion-driver --quiet --executors $e --predict "1x1c:$rate" \
    --metrics "$tmp/lda$e.jsonl" apps/lda/lda.lua --corpus "$kos/docword.kos.txt.gz" \
    "${vocab[@]}" --k 1000 --iters 3 --partitions $((2 * e)) > "$tmp/lda.out" 2> "$tmp/lda.err"
done
words=$(sed -n 's/^# lda: [0-9]* documents, \([0-9]*\) words.*/\1/p' "$tmp/lda.out")
read -r lda_spe lda_rb b1 d1 el lda_xb < <(measure "LDA KOS K=1000" "$words" "$tmp/lda2.jsonl")
read -r _ _ b2 d2 _ < <(measure "LDA KOS K=1000" "$words" "$tmp/lda4.jsonl")
read -r lda_db lda_de < <(split "$b1" "$d1" "$b2" "$d2" "$el")
mf_spe=${MF_SEC_PER_ELEM:-$mf_spe}
lda_spe=${LDA_SEC_PER_ELEM:-$lda_spe}
echo "# MF: $mf_spe s a rating, $mf_rb bytes a rotating row (of $items items), driver $mf_db bytes a block + $mf_de a rating + $mf_xb an executor"
echo "# LDA: $lda_spe s a token, $lda_rb bytes a rotating row (of $words words), driver $lda_db bytes a block + $lda_de a token + $lda_xb an executor"

run() { # NAME PARTS-OPTION...: one table, and JSON lines for the plot
  local name=$1
  shift
  case $name in
    mf*) set -- --rows 480189,17770 --elements 100480507 --sec-per-elem "$mf_spe" \
           --row-bytes "$mf_rb" --driver-block-bytes "$mf_db" --driver-elem-bytes "$mf_de" \
           --driver-exec-bytes "$mf_xb" "$@" ;;
    *) set -- --rows 11000000,141043 --elements 1000000000 --sec-per-elem "$lda_spe" \
         --row-bytes "$lda_rb" --driver-block-bytes "$lda_db" --driver-elem-bytes "$lda_de" \
         --driver-exec-bytes "$lda_xb" "$@" ;;
  esac
  bench/predict_scale --name "$name" --cluster "$cluster" --hosts "$hosts" \
    --json "$tmp/$name.jsonl" "$@"
}
echo
echo "## MF on $cluster hosts, --partitions 8 (the runtime's default, what mf.lua gets)"
run mf-8 --partitions 8
echo
echo "## MF, --partitions = hosts (one space part a host)"
run mf-N --parts-per-host 1
echo
echo "## MF, --partitions = 2 x hosts"
run mf-2N --parts-per-host 2
echo
echo "## MF, --partitions = 4 x hosts"
run mf-4N --parts-per-host 4
echo
echo "## MF, --partitions = 2 x hosts, executors in the order blocks came (ORION_NO_REORDER=1)"
run mf-2N-inorder --parts-per-host 2 --no-reorder
echo
echo "## MF, --partitions = 4 x hosts, executors in the order blocks came (ORION_NO_REORDER=1)"
run mf-4N-inorder --parts-per-host 4 --no-reorder
echo
echo "## MF, --partitions = hosts, without dispatch ahead (ORION_NO_AHEAD=1: each block asks for its rows once the driver sent it)"
run mf-N-noahead --parts-per-host 1 --no-ahead
# lda.lua's sampler writes the topic totals through a buffer, so it does
# not dispatch ahead (scheduler/loop.h).
echo
echo "## LDA on $cluster hosts, parts = hosts (lda.lua --partitions N on N hosts)"
run lda-N --parts-per-host 1 --no-ahead
echo
echo "## LDA, parts = 2 x hosts"
run lda-2N --parts-per-host 2 --no-ahead
if [ -n "$svg" ]; then
  case $svg in /*) ;; *) svg=$PWD/$svg ;; esac
  drv=$PWD/orion-driver
  # From $tmp, so that each line is named by its file.
  (cd "$tmp" && "$drv" plot --x log2_hosts --y efficiency -o "$svg" \
    mf-8.jsonl mf-N.jsonl mf-2N.jsonl mf-4N.jsonl mf-2N-inorder.jsonl \
    mf-4N-inorder.jsonl mf-N-noahead.jsonl lda-N.jsonl lda-2N.jsonl)
  echo "# plot: $svg"
fi
