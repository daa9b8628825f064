#!/bin/sh
# The slow set's run of orion-driver --verify (docs/analysis.md,
# "orion-driver --verify") over what the analysis accepts today; every
# check expects no conflict and the same results as without --verify:
#
#  1. the golden corpus (t/analysis/*.lua, each a runnable script that
#     checks its loops' plans and results against a serial run): under
#     --verify on 0 and 2 executors, exit 0 and the same output as without
#     (ORION_GOLDEN_NO_TIERS: --verify runs the interpreter, so the
#     compiled-against-interpreted comparison is left out of all three);
#  2. every t/scripts/*.lua without arguments (most stop early, asking
#     for their data, the same way), and t/scripts/verify.lua's right
#     plans on 0 and 2 executors: the same exit code, standard output and
#     first line of standard error (a compiled body's traceback reads
#     "[compiled]", the interpreter's does not);
#  3. the apps on small inputs, on 2 executors, the model files (or
#     printed results) compared bit for bit with a run without --verify in
#     the interpreter (--tier lua where the app has it; --exact elsewhere,
#     whose compiled bodies match the interpreter bit for bit): MF on
#     MovieLens-100k (3 epochs, K 8), LDA on KOS (3 sweeps, K 10), logistic
#     regression on 20 Newsgroups' comp.graphics against sci.space (2
#     epochs, --flush loop: flushes every N samples land as the executors'
#     timing has it, with or without --verify) and the DNN on its
#     synthetic data (2 epochs, 2 shards).
#
# Part 3 needs ../shared/data (ORION_DATA); without it that part skips
# with a message, except under CI=true, where that is a failure.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
data=${ORION_DATA:-$src/../shared/data}
export ORION_SRCDIR=$src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# run NAME ARGS...: the driver with ARGS (a 300 s limit), stdout in
# $tmp/NAME.out, stderr in $tmp/NAME.err; prints the exit code.
run() {
  _n=$1
  shift
  timeout 300 "$drv" "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
  echo $?
}

# FILE without the plan cache's "plan=cached" / "plan=analysed" words
# (t/scripts/plan_cache.lua prints them): --verify analyses every call
# afresh by design (lua/plancache.c keeps no plan under --verify).
plan_free() {
  sed -E 's/plan=(cached|analysed|serial)/plan=*/g' "$1"
}

# same A B WHAT: A's and B's exit codes (arguments 4, 5), stdouts and first
# lines of stderr agree.
same() {
  if [ "$4" != "$5" ]; then
    fail "$3: exit $4 without --verify, $5 with: $(head -3 "$tmp/$2.err")"
  elif ! cmp -s "$tmp/$1.out" "$tmp/$2.out" &&
    ! cmp -s <(plan_free "$tmp/$1.out") <(plan_free "$tmp/$2.out"); then
    fail "$3: --verify changed the output:"
    diff "$tmp/$1.out" "$tmp/$2.out" | head -10
  elif [ "$(head -1 "$tmp/$1.err")" != "$(head -1 "$tmp/$2.err")" ]; then
    fail "$3: --verify changed the error: $(head -2 "$tmp/$2.err")"
  fi
}

# 1. The golden corpus.
export ORION_GOLDEN_NO_TIERS=1
n=0
for f in "$src"/t/analysis/*.lua; do
  b=$(basename "$f" .lua)
  case $b in golden | pending_*) continue ;; esac
  r0=$(run "g_$b" -q "$f")
  [ "$r0" = 0 ] || fail "golden $b: exit $r0 without --verify: $(head -3 "$tmp/g_$b.err")"
  for e in 0 2; do
    rv=$(run "gv_$b" -q --verify --executors "$e" "$f")
    same "g_$b" "gv_$b" "golden $b (--verify, $e executors)" "$r0" "$rv"
  done
  n=$((n + $(grep -c '^golden ok' "$tmp/g_$b.out")))
done
unset ORION_GOLDEN_NO_TIERS
echo "golden corpus: $n bodies checked under --verify on 0 and 2 executors"
[ "$n" -ge 40 ] || fail "only $n golden bodies ran"

# 2. t/scripts: each without arguments, then verify.lua's right plans.
(
  cd "$src/t/scripts" || exit 1
  for f in *.lua; do
    b=${f%.lua}
    r0=$(run "s_$b" -q "$f")
    rv=$(run "sv_$b" -q --verify "$f")
    if [ "$b" = print_body ]; then # print and io.write interleave by stdio
      sort "$tmp/s_$b.out" >"$tmp/s_$b.sorted"
      sort "$tmp/sv_$b.out" >"$tmp/sv_$b.sorted"
      mv "$tmp/s_$b.sorted" "$tmp/s_$b.out"
      mv "$tmp/sv_$b.sorted" "$tmp/sv_$b.out"
    fi
    same "s_$b" "sv_$b" "t/scripts/$f" "$r0" "$rv"
  done
  for c in rotation oned ordered buffered; do
    r0=$(run "vs_$c" -q verify.lua "$c")
    for e in 0 2; do
      rv=$(run "vsv_$c" -q --verify --executors "$e" verify.lua "$c")
      same "vs_$c" "vsv_$c" "verify.lua $c ($e executors)" "$r0" "$rv"
    done
  done
  exit "$fails"
) || fails=$((fails + $?))
echo "t/scripts: run under --verify"

# 3. The apps.
ml=$data/movielens-100k/u.data
kos=$data/uci-bow-kos/docword.kos.txt.gz
ng=$data/20newsgroups-bydate
if [ ! -f "$ml" ] || [ ! -f "$kos" ] || [ ! -f "$ng/docword.20news.txt.gz" ]; then
  [ "$fails" = 0 ] || exit 1
  skip "the apps' data not found under $data (set ORION_DATA)"
fi
app=$src/apps
for v in plain verify; do
  opt=
  [ $v = verify ] && opt=--verify
  r=$(run "mf_$v" -q $opt --executors 2 "$app/mf/mf.lua" --train "$ml" \
    --format movielens --test-split 0.1 --k 8 --epochs 3 --tier lua \
    --save "$tmp/mf_$v")
  [ "$r" = 0 ] || fail "mf ($v): exit $r: $(head -3 "$tmp/mf_$v.err")"
  r=$(run "lda_$v" -q $opt --executors 2 "$app/lda/lda.lua" --corpus "$kos" \
    --k 10 --iters 3 --ll-every 3 --save "$tmp/lda_$v.counts")
  [ "$r" = 0 ] || fail "lda ($v): exit $r: $(head -3 "$tmp/lda_$v.err")"
  r=$(run "dnn_$v" -q $opt --executors 2 "$app/dnn/dnn.lua" --epochs 2 \
    --shards 2)
  [ "$r" = 0 ] || fail "dnn ($v): exit $r: $(head -3 "$tmp/dnn_$v.err")"
done
ORION_20NG=$ng sh "$app/lr/make_20ng.sh" "$tmp/ng" >/dev/null ||
  fail "make_20ng.sh failed"
for v in plain verify; do
  opt=
  [ $v = verify ] && opt=--verify
  r=$(run "lr_$v" -q $opt --executors 2 "$app/lr/lr.lua" \
    --train "$tmp/ng/train.libsvm" --test "$tmp/ng/test.libsvm" \
    --epochs 2 --tier lua --flush loop --weights "$tmp/lr_$v.w")
  [ "$r" = 0 ] || fail "lr ($v): exit $r: $(head -3 "$tmp/lr_$v.err")"
done
for f in mf_%s.W mf_%s.H lda_%s.counts lr_%s.w; do
  a=$(printf "$f" plain)
  b=$(printf "$f" verify)
  [ -s "$tmp/$a" ] || fail "no $a written"
  cmp -s "$tmp/$a" "$tmp/$b" || fail "--verify changed $a"
done
# The DNN prints each epoch's loss and accuracy (and its seconds and
# samples per second: left out).
for v in plain verify; do
  awk '/^ *[0-9]/ { print $1, $4, $5 }' "$tmp/dnn_$v.out" >"$tmp/dnn_$v.cut"
done
[ -s "$tmp/dnn_plain.cut" ] || fail "the DNN printed no epochs"
cmp -s "$tmp/dnn_plain.cut" "$tmp/dnn_verify.cut" ||
  fail "--verify changed the DNN's results: $(diff "$tmp/dnn_plain.cut" \
    "$tmp/dnn_verify.cut" | head -6)"
echo "apps: mf, lda, lr and dnn the same under --verify"
[ "$fails" = 0 ] || { echo "slow_verify: $fails failures"; exit 1; }
echo "slow_verify: ok"
