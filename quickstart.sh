#!/usr/bin/env bash
# Orion-C quick start: installs the Debian packages the build needs (and, for
# test and slow, the data the tests read; as root;
# otherwise prints the apt-get line to run), bootstraps, builds, then
#   ./quickstart.sh demo [MF-OPTIONS...]  runs the MF app on the embedded data
#   ./quickstart.sh test                  runs the fast test suite (make check)
#   ./quickstart.sh slow                  runs the slow set (make check-slow:
#                                         large clusters, namespaces, fuzzing,
#                                         the job page in headless Chromium,
#                                         the fast suite under ASan+UBSan)
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-demo}
[ $# -gt 0 ] && shift
case $mode in
  demo|test|slow) ;;
  *) echo "usage: $0 demo|test|slow [args...]" >&2; exit 2 ;;
esac

packages="build-essential autoconf automake pkg-config liblua5.4-dev libuv1-dev libopenblas-dev zlib1g-dev libcriterion-dev libsodium-dev libssl-dev"
# What the tests read besides the build: the DNN app's Fashion-MNIST
# (t/test_dnn, fast and slow set).
[ "$mode" != demo ] && packages="$packages dataset-fashion-mnist"
# The slow set also opens the job page (--status) in headless Chromium and
# builds a cluster in network namespaces with ip and tc (iproute2).
slow_packages="chromium fonts-dejavu-core iproute2"
[ "$mode" = slow ] && packages="$packages $slow_packages"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "== installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "Missing Debian packages. Run as root, then run this script again:"
    echo "  apt-get install -y$missing"
    exit 1
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
  echo "== bootstrapping (autoreconf)"
  autoreconf -fi >/dev/null
fi
conf_flags=""
[ "${CI:-}" = "true" ] && conf_flags="--enable-werror"
if [ ! -f Makefile ] || [ configure -nt config.status ]; then
  echo "== configuring $conf_flags"
  # shellcheck disable=SC2086
  ./configure -q $conf_flags
fi
echo "== building"
make -s -j"$jobs" >/dev/null

if [ "$mode" = demo ]; then
  echo "== MF on the embedded synthetic ratings, 2 local executors (orion-driver --executors 2 apps/mf/mf.lua $*)"
  exec ./orion-driver --executors 2 apps/mf/mf.lua "$@"
fi

target=check
[ "$mode" = slow ] && target=check-slow
echo "== running the $([ "$mode" = slow ] && echo "slow set" || echo "test suite") (make $target)"
rm -f t/*.log
status=0
make -s -j"$jobs" "$target" >/dev/null 2>&1 || status=$?
passed=0; failed=0; skipped=0
for log in t/*.log; do
  [ -f "$log" ] || continue
  [ "$log" = t/test-suite.log ] && continue
  name=${log%.log}
  line=$(grep -a "Synthesis:" "$log" | tail -n 1 || true)
  if [ -z "$line" ]; then
    # A script test (the layout check, the fuzzer): its exit status.
    res=$(sed -n 's/^:test-result: //p' "$name.trs" 2>/dev/null | head -n 1 || true)
    case $res in
      PASS) p=1; f=0 ;;
      SKIP) p=0; f=0; skipped=$((skipped + 1)) ;;
      *) p=0; f=1 ;;
    esac
    printf '  %-22s %s\n' "${name#t/}" "${res:-no result (crashed?)}"
    [ "$f" -ne 0 ] && tail -n 20 "$log" | sed 's/^/      /'
    passed=$((passed + p)); failed=$((failed + f)); continue
  fi
  p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
  f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
  c=$(echo "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
  # Tests of the other set are filtered out and reported as disabled.
  s=$(grep -a "\[SKIP\]" "$log" | grep -vc "Test is disabled" || true)
  printf '  %-22s %3d passed, %d failed, %d crashed, %d skipped\n' "${name#t/}" "$p" "$f" "$c" "$s"
  grep -a -E "\[SKIP\]|\[FAIL\]" "$log" | grep -v "Test is disabled" | sed 's/^/      /' | head -n 20 || true
  passed=$((passed + p)); failed=$((failed + f + c)); skipped=$((skipped + s))
done
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && { echo "make $target failed:"; cat t/test-suite.log 2>/dev/null | tail -n 40; failed=1; }
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
