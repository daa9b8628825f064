#!/bin/sh
# The slow set's sanitizer run: the whole tree built with AddressSanitizer
# and UndefinedBehaviorSanitizer (gcc -fsanitize=address,undefined, and
# float-cast-overflow, which gcc leaves out of undefined) in a build
# folder of its own, _asan/ in the build tree, and the whole fast suite
# run there, every case but the slow_* ones (make check-slow runs those
# uninstrumented).  Any report fails it: UBSan halts on its first finding
# with a stack trace, ASan on a memory error, and LeakSanitizer makes a
# process that leaks exit non-zero at its end (the driver, the executors
# it starts and every test program are instrumented).  Each process
# writes its reports to a file in _asan/src/reports/, so a report from a
# driver whose stderr a test captured is not lost; a criterion case that
# the test pattern disabled fails the run too (t/sanitize_lib.sh, checked
# by t/sanitize_check_test.sh in the fast set).
#
# Time.  On a quiet 2-core machine a fresh run (configure, build, suite)
# took 186 s of wall time and 333 s of CPU; beside other builds, up to 7
# minutes.  make check-slow's other tests and make distcheck come on top;
# .ci/run must finish in 40 minutes.  The slowest case,
# wire::every_single_byte_corruption_detected, has a longer timeout under
# ASan (t/test_wire.c says why).  ORION_SANITIZE_TESTS="t/test_x t/test_y"
# runs only those programs (to look into one finding); the default, or
# ORION_SANITIZE_TESTS=all, is the whole fast suite.
#
# The source tree is configured in place (quickstart.sh), and autoconf
# refuses a second, VPATH build from a configured tree, so the build runs
# in a copy of the checkout's files (tracked and untracked, not ignored),
# _asan/src, configured in place there too (a test looks for apps/ beside
# the driver, which a VPATH build has not).  A second run rebuilds only
# what changed.
#
# Skips (77) outside a git checkout or without the sanitizer libraries,
# except under CI=true.
set -eu

src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh"
. "$src/t/sanitize_lib.sh"
build=${ORION_SANITIZE_DIR:-$(pwd)/_asan}
command -v git >/dev/null 2>&1 || skip "git is not installed"
git -C "$src" rev-parse HEAD >/dev/null 2>&1 ||
  skip "$src is not a git checkout (a release tarball)"
echo 'int main(void){return 0;}' > "${TMPDIR:-/tmp}/orion-asan-probe.c"
# shellcheck disable=SC2086
${CC:-cc} $ORION_SAN_CFLAGS -o "${TMPDIR:-/tmp}/orion-asan-probe" \
  "${TMPDIR:-/tmp}/orion-asan-probe.c" $ORION_SAN_LDFLAGS 2>/dev/null ||
  skip "${CC:-cc} cannot build with -fsanitize=$ORION_SAN (libasan, libubsan)"
rm -f "${TMPDIR:-/tmp}/orion-asan-probe" "${TMPDIR:-/tmp}/orion-asan-probe.c"

# Run by make check-slow, whose TESTS and CRITERION_TEST_PATTERN travel in
# MAKEFLAGS to every make below: the inner build starts afresh.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

t0=$(date +%s)
mkdir -p "$build/src"
# The checkout's files with their times (make then rebuilds what changed
# since the last run).
(cd "$src" && git ls-files -z -co --exclude-standard) |
  (cd "$src" && tar --null -T - -cf -) |
  (cd "$build/src" && tar -xf -)
cd "$build/src"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
  autoreconf -fi >/dev/null 2>&1
fi
# The flags (t/sanitize_lib.sh says why each); a change of flags
# configures afresh (configure.flags records them).
flags="$ORION_SAN_CFLAGS; $ORION_SAN_LDFLAGS"
if [ ! -f Makefile ] ||
  [ "$(cat configure.flags 2>/dev/null)" != "$flags" ]; then
  echo "== configuring in $build/src"
  ./configure -q --without-cuda CFLAGS="$ORION_SAN_CFLAGS" \
    LDFLAGS="$ORION_SAN_LDFLAGS" >configure.log 2>&1 ||
    { tail -n 30 configure.log; exit 1; }
  echo "$flags" > configure.flags
  make -s clean >/dev/null 2>&1 || :
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "== building with $ORION_SAN_CFLAGS, linking with $ORION_SAN_LDFLAGS"
make -s -j"$jobs" >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
t1=$(date +%s)
echo "   built in $((t1 - t0)) s"

# The sanitizers' settings (t/sanitize_lib.sh says why each).
reports=$build/src/reports
rm -rf "$reports"
mkdir -p "$reports"
orion_san_env "$reports" "$src"
# The fast suite's data, beside the source tree (not the copy).
ORION_DATA=${ORION_DATA:-$src/../shared/data}
export ORION_DATA
tests=${ORION_SANITIZE_TESTS:-all}
rm -f t/*.log t/*.trs
status=0
# make check-slow, which runs this, asks criterion for the slow cases; the
# fast suite is every case but those.
CRITERION_TEST_PATTERN='!(*/slow_*)'
export CRITERION_TEST_PATTERN
if [ "$tests" = all ]; then
  echo "== make check under ASan+UBSan (the whole fast suite)"
  make -s -j"$jobs" check >check.log 2>&1 || status=$?
else
  echo "== make check under ASan+UBSan: $tests"
  make -s -j"$jobs" check TESTS="$tests" >check.log 2>&1 || status=$?
fi
t2=$(date +%s)
echo "   ran in $((t2 - t1)) s (build and run: $((t2 - t0)) s)"
orion_san_check "$reports" t/*.log || exit 1
if [ "$status" -ne 0 ]; then
  grep -a -E '^(FAIL|ERROR)' check.log t/test-suite.log 2>/dev/null | head -n 20
  echo "FAIL: make check failed under the sanitizers (logs in $build/src/t)"
  exit 1
fi
echo "sanitizers: no reports, every test passed"
