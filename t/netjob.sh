# Sourced by t/auth.sh and t/tamper.sh: where the binaries are, and how to
# wait for what a job prints.  ORION_BUILDDIR: the orion-driver and
# orion-executor to test; ORION_TOOLDIR: the t/relay and t/hostile to test
# them with (default the same build: another build's binaries may be
# tested with this one's tools).
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${ORION_BUILDDIR:-$(pwd)}
tools=${ORION_TOOLDIR:-$build}
drv=$build/orion-driver
exe=$build/orion-executor
. "$src/t/skip.sh"

# wait_file FILE SECONDS: 0 once FILE is not empty, 1 after SECONDS.
wait_file() {
  _i=0
  until [ -s "$1" ]; do
    _i=$((_i + 1))
    [ $_i -gt $(($2 * 10)) ] && return 1
    sleep 0.1
  done
}

# manual_cmd FILE ID: waits (10 s at most) for `--launcher manual`'s
# command line for executor ID in the driver's stderr FILE, and sets
# token and port from it (token: $ORION_TOKEN when the driver took that
# one and shows none); 1 when it never came.
manual_cmd() {
  _i=0
  until grep -q "'--id' '$2'" "$1" 2>/dev/null; do
    _i=$((_i + 1))
    [ $_i -gt 100 ] && return 1
    sleep 0.1
  done
  _line=$(grep -m1 "'--id' '$2'" "$1")
  token=$(echo "$_line" | sed -n "s/.*ORION_TOKEN='\([^']*\)'.*/\1/p")
  [ -n "$token" ] || token=${ORION_TOKEN:-}
  port=$(echo "$_line" | sed "s/.*'--driver' '127.0.0.1:\([0-9]*\)'.*/\1/")
}
