#!/bin/sh
# The on-disk cache of compiled loop bodies across runs (util/ccache.h),
# end to end through orion-driver and apps/lr/lr.lua (tier c) on a small
# synthetic libsvm set, with a compiler wrapper that logs each run:
#   - a cold cache: the counting, training and scoring bodies are
#     compiled once each; an integer --lr (2) does not compile the training body
#     again in epoch 2, where the decay makes it a fraction;
#   - a second run (1 executor, then 2) runs no compiler, --verbose says
#     "from the cache", and the weights and predictions are the same bytes;
#   - every cached object damaged (one byte changed): rebuilt, same bytes;
#   - ORION_CACHE_DIR=off: the compiler runs, nothing is written to the
#     cache or left in TMPDIR, same bytes;
#   - a cache folder that cannot be created: one warning for the run (the
#     driver's; its executors build without a cache of their own), the run
#     goes on, same bytes.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
. "$src/bench/lr_synth.sh"
drv=${ORION_DRIVER:-$src/orion-driver}
export ORION_LUA_PATH=${ORION_LUA_PATH:-$src/lua/?.lua}
app=$src/apps/lr/lr.lua
command -v cc > /dev/null || skip "no C compiler (cc) for tier c"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset ORION_CFLAGS ORION_CACHE_MAX

lr_synth "$tmp/train" 1200 1 3000 8
lr_synth "$tmp/test" 300 2 3000 8
# A compiler that logs its runs.
cat > "$tmp/cc" << EOF
#!/bin/sh
echo run >> "$tmp/cc.log"
exec cc "\$@"
EOF
chmod +x "$tmp/cc"
export ORION_CC="$tmp/cc"
export ORION_CACHE_DIR="$tmp/cache"
: > "$tmp/cc.log"
runs() { wc -l < "$tmp/cc.log" | tr -d ' '; }

# lr NAME EXECS: runs lr.lua (3 epochs at --lr 2, tier c), its weights in
# $tmp/NAME.w, predictions in $tmp/NAME.p, stderr in $tmp/NAME.err.
lr() {
  timeout 120 "$drv" --verbose --executors "$2" "$app" --train "$tmp/train" \
    --test "$tmp/test" --epochs 3 --lr 2 --tier c --eval-every 0 \
    --weights "$tmp/$1.w" --predict "$tmp/$1.p" \
    > "$tmp/$1.out" 2> "$tmp/$1.err" || { cat "$tmp/$1.err"; return 1; }
}
same() { # NAME: the same weights and predictions as the cold run
  cmp -s "$tmp/cold.w" "$tmp/$1.w" || fail "$1: the weights differ from the first run's"
  cmp -s "$tmp/cold.p" "$tmp/$1.p" || fail "$1: the predictions differ from the first run's"
}

nb=3 # lr.lua's bodies: counting each feature's blocks, training, scoring
lr cold 1 || fail "the cold run failed"
[ "$(runs)" = $nb ] || fail "a cold cache: $(runs) compiler runs, not $nb (counting, training and scoring bodies)"
[ "$(grep -c 'compiled body .*: built by' "$tmp/cold.err")" = $nb ] ||
  fail "a cold cache: the log does not say $nb bodies were built"
[ "$(ls "$tmp/cache"/*.so | wc -l)" = $nb ] || fail "not $nb objects in the cache"
[ -s "$tmp/cold.w" ] && [ -s "$tmp/cold.p" ] || fail "no weights or predictions"

for n in 1 2; do
  lr warm$n $n || fail "the warm run on $n executor(s) failed"
  [ "$(runs)" = $nb ] || fail "a warm cache on $n executor(s): the compiler ran ($(runs) runs in all)"
  grep -q 'compiled body .*: from the cache' "$tmp/warm$n.err" ||
    fail "warm on $n: the log does not say the body came from the cache"
  ! grep -q 'built by' "$tmp/warm$n.err" || fail "warm on $n: the log says a body was built"
  same warm$n
done

# Damaged entries (a byte in the middle of each object): rebuilt.
for so in "$tmp/cache"/*.so; do
  size=$(wc -c < "$so")
  printf 'X' | dd of="$so" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
done
lr damaged 1 || fail "the run over damaged entries failed"
[ "$(runs)" = $((2 * nb)) ] || fail "damaged entries: $(runs) compiler runs in all, not $((2 * nb))"
grep -q 'is damaged; building it again' "$tmp/damaged.err" || fail "damaged entries: not logged"
same damaged

# Off: built each time, nothing kept.
mkdir "$tmp/private"
before=$(ls "$tmp/cache" | wc -l)
ORION_CACHE_DIR=off TMPDIR="$tmp/private" lr off 1 || fail "the run with ORION_CACHE_DIR=off failed"
# (each process builds its own: the driver and the executor)
[ "$(runs)" -ge $((4 * nb)) ] || fail "off: $(runs) compiler runs in all, not $((4 * nb)) or more"
[ "$(ls "$tmp/cache" | wc -l)" = "$before" ] || fail "off: the cache changed"
[ -z "$(ls -A "$tmp/private")" ] || fail "off: files left in TMPDIR: $(ls -A "$tmp/private")"
[ ! -e off ] || fail "off: a folder named off was made"
same off

# A folder that cannot be made: one warning for the run, which goes on.
: > "$tmp/plain"
ORION_CACHE_DIR="$tmp/plain/cache" TMPDIR="$tmp/private" lr unusable 2 ||
  fail "the run with an unusable cache folder failed"
[ "$(grep -c 'warning: ' "$tmp/unusable.err")" = 1 ] ||
  fail "an unusable folder: not one warning: $(cat "$tmp/unusable.err")"
grep -q "warning: cannot create the compile cache directory '$tmp/plain/cache'" "$tmp/unusable.err" ||
  fail "the warning does not name the folder: $(cat "$tmp/unusable.err")"
[ -z "$(ls -A "$tmp/private")" ] || fail "unusable: files left in TMPDIR"
same unusable

[ "$fails" -eq 0 ] || exit 1
echo "PASS: body cache"
