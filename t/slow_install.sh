#!/bin/sh
# The slow set's install test: what a new user does with a fresh clone.
#
# It clones the source tree's committed HEAD (uncommitted changes are not
# part of it) into a temporary folder, builds it with ./quickstart.sh as
# the README says (default prefix), then reconfigures with
# --prefix=TMP/inst, runs `make install`, and from another folder runs the
# installed `orion-driver --executors 2 apps/mf/mf.lua --epochs 1`, which
# must find the installed app, its Lua modules and orion-executor and
# train.  Then it moves the installed tree elsewhere and runs it again (a
# relocated install finds its data beside its binary), and checks that the
# docs were installed.
#
# Skips (77) without git or outside a git checkout, except under CI=true.
set -eu

src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
command -v git >/dev/null 2>&1 || skip "git is not installed"
head=$(git -C "$src" rev-parse HEAD 2>/dev/null) ||
  skip "$src is not a git checkout (a release tarball)"

tmp=$(mktemp -d /tmp/orion-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
# The build tree's programs must not stand in for the installed ones.
unset ORION_EXECUTOR ORION_LUA_PATH ORION_DRIVER ORION_EXECUTORS

echo "== clone $src at $head"
git clone -q "$src" "$tmp/src"
git -C "$tmp/src" checkout -q "$head"

cd "$tmp/src"
echo "== ./quickstart.sh demo --epochs 1 (default prefix)"
timeout 900 ./quickstart.sh demo --epochs 1 > "$tmp/quickstart.log" 2>&1 || {
  tail -n 30 "$tmp/quickstart.log"
  echo "FAIL: quickstart.sh failed"
  exit 1
}
grep -q "train-rmse" "$tmp/quickstart.log" || {
  cat "$tmp/quickstart.log"
  echo "FAIL: the quickstart demo printed no training table"
  exit 1
}

echo "== ./configure --prefix=$tmp/inst && make && make install"
./configure -q --prefix="$tmp/inst" > "$tmp/configure.log" 2>&1 || {
  cat "$tmp/configure.log"; exit 1; }
timeout 900 make -s -j2 > "$tmp/make.log" 2>&1 || { tail -n 30 "$tmp/make.log"; exit 1; }
make -s install > "$tmp/install.log" 2>&1 || { tail -n 30 "$tmp/install.log"; exit 1; }

# Runs the installed driver $1 from a folder that is not the source tree.
train_from_elsewhere() {
  mkdir -p "$tmp/elsewhere"
  (cd "$tmp/elsewhere" &&
    timeout 300 "$1" --executors 2 apps/mf/mf.lua --epochs 1) \
    > "$tmp/run.log" 2>&1 || {
    cat "$tmp/run.log"
    echo "FAIL: $1 --executors 2 apps/mf/mf.lua --epochs 1 (in $tmp/elsewhere) failed"
    exit 1
  }
  # The epoch row: "    1   SECONDS   TRAIN   TEST".
  grep -Eq '^ +1 +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$tmp/run.log" || {
    cat "$tmp/run.log"
    echo "FAIL: $1 printed no epoch row"
    exit 1
  }
  echo "ok: $1 trains"
}

echo "== the installed driver, from another folder"
train_from_elsewhere "$tmp/inst/bin/orion-driver"

for f in share/doc/orion-c/guide.md share/doc/orion-c/runtime.md \
  share/man/man1/orion-driver.1; do
  [ -f "$tmp/inst/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
echo "ok: docs installed"

echo "== the installed tree moved to another prefix"
mv "$tmp/inst" "$tmp/moved"
train_from_elsewhere "$tmp/moved/bin/orion-driver"
echo "PASS"
