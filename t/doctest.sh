#!/bin/sh
# The doc tests: runs every example of README.md, docs/*.md and the man
# pages (docs/*.1) and compares what it prints with what the page shows,
# so documentation that drifts from the program fails `make check`.  The
# format is in docs/design-notes.md ("Doc tests"); t/doctest.awk parses a
# page, runs its commands and compares.
#
# Usage: t/doctest.sh [--update] [--slow] [--lint] [FILE...]
#   FILE      pages to test, relative to the source root (default: all)
#   --slow    run the examples marked `doctest slow` instead of the others
#             (make check-slow runs t/doctest_slow.sh, which does this)
#   --update  rewrite each differing example's expected output with what
#             its commands printed now, keeping the expected lines
#             (`[..]` and `...` wildcards included) that still match;
#             also DOCTEST_UPDATE=1, as in
#             `DOCTEST_UPDATE=1 make check TESTS=t/doctest.sh`
#   --lint    only check that every example with `$ ` commands is a doc
#             test or marked `not-run: REASON`
#
# Every page runs in a fresh scratch folder that mirrors the source root
# (each entry of it linked), with the built orion-driver and
# orion-executor in it and first on PATH, and ../shared/data linked to
# $ORION_DATA.  Commands run with `sh`, stdout and stderr together, with
# ORION_EXECUTORS=2 and LC_ALL=C, each for at most DOCTEST_TIMEOUT seconds
# (default 120, 600 for --slow).  Examples that name ../shared/data are
# skipped with a message when it is missing, except under CI=true.
# Exit status: 0 all matched (or were updated), 1 otherwise.
AWK_PROG=${AWK:-awk}
here=$(cd "$(dirname "$0")" && pwd)
src=${ORION_SRCDIR:-$(dirname "$here")}
mode=check
set=fast
files=
[ "${DOCTEST_UPDATE:-}" = 1 ] && mode=update
for a in "$@"; do
  case $a in
    --update) mode=update ;;
    --slow) set=slow ;;
    --lint) mode=lint ;;
    -*) echo "doctest: unknown option '$a'" >&2; exit 2 ;;
    *) files="$files $a" ;;
  esac
done

if [ -n "${ORION_DRIVER:-}" ] && [ -x "$ORION_DRIVER" ]; then
  build=$(cd "$(dirname "$ORION_DRIVER")" && pwd)
elif [ -x ./orion-driver ]; then
  build=$(pwd)
else
  build=$src
fi
if [ "$mode" != lint ] && [ ! -x "$build/orion-driver" ]; then
  echo "doctest: no built orion-driver in $build (run make first)" >&2
  exit 2
fi
data=${ORION_DATA:-$src/../shared/data}
case $data in /*) ;; *) data=$(pwd)/$data ;; esac

cd "$src" || exit 2
[ -n "$files" ] || files=$(ls README.md docs/*.md docs/*.[1-9] 2>/dev/null)
if [ "$set" = slow ]; then tmo=${DOCTEST_TIMEOUT:-600}; else tmo=${DOCTEST_TIMEOUT:-120}; fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/orion-doctest.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
trap 'exit 1' HUP INT TERM

PATH=$build:$PATH
ORION_EXECUTORS=2
ORION_EXECUTOR=$build/orion-executor
: "${ORION_LUA_PATH:=$src/lua/?.lua}"
: "${ORION_CACHE_DIR:=$build/t/cc-cache}"
LC_ALL=C
export PATH ORION_EXECUTORS ORION_EXECUTOR ORION_LUA_PATH ORION_CACHE_DIR LC_ALL
# The examples' figures were taken with OpenBLAS's Haswell kernels (AVX2),
# which every x86-64 processor since 2013 runs.  Left to itself OpenBLAS
# picks the widest kernels the processor has (Cooperlake or SkylakeX on
# AVX-512 machines), whose sums round differently, and a network's later
# epochs then differ in the last printed digit.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  OPENBLAS_CORETYPE=Haswell
  export OPENBLAS_CORETYPE
fi
unset ORION_DRIVER ORION_TOKEN ORION_SRCDIR

status=0
for f in $files; do
  if [ ! -f "$f" ]; then
    echo "doctest: no such page: $f" >&2
    status=1
    continue
  fi
  root=$scratch/root
  rm -rf "$root" "$scratch/shared"
  mkdir "$root" "$scratch/shared" || exit 2
  for e in "$src"/*; do ln -s "$e" "$root/" 2>/dev/null; done
  for b in orion-driver orion-executor; do
    rm -f "$root/$b"
    ln -s "$build/$b" "$root/$b"
  done
  # Programs built under bench/ (bench/predict_scale): in a build
  # outside the source tree (make distcheck) they are in the build's
  # bench/, beside the source's scripts.
  if [ "$build" != "$src" ] && [ -x "$build/bench/predict_scale" ]; then
    rm -f "$root/bench"
    mkdir "$root/bench" || exit 2
    for e in "$src"/bench/*; do ln -s "$e" "$root/bench/" 2>/dev/null; done
    rm -f "$root/bench/predict_scale"
    ln -s "$build/bench/predict_scale" "$root/bench/predict_scale"
  fi
  ln -s "$data" "$scratch/shared/data"
  $AWK_PROG -f "$here/doctest.awk" -v mode="$mode" -v set="$set" \
    -v root="$root" -v data="$data" -v ci="${CI:-}" -v tmo="$tmo" \
    -v name="$f" "$f" || status=1
done
exit $status
