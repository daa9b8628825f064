# Sourced by the shell tests: skip MESSAGE ends a test that
# cannot run here with exit 77 (automake's skip), except under CI=true,
# where what it lacks is a failure (exit 1).
skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL (CI=true): $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# free_port BASE: prints a TCP port nothing on this machine uses, starting
# from BASE (20000 to 39999) and stepping by 97: a port taken from the pid
# alone was sometimes in use ("cannot listen ... address already in use").
free_port() {
  _p=$((20000 + $1 % 20000))
  _i=0
  while [ $_i -lt 50 ] &&
    grep -qi ":$(printf '%04X' "$_p") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    _p=$((20000 + (_p + 97) % 20000))
    _i=$((_i + 1))
  done
  echo "$_p"
}

# reap PID SECONDS: waits for PID (killing it after SECONDS); its status.
reap() {
  _n=0
  while kill -0 "$1" 2>/dev/null && [ $_n -lt $(($2 * 20)) ]; do
    sleep 0.05
    _n=$((_n + 1))
  done
  kill -9 "$1" 2>/dev/null && echo "FAIL: pid $1 still running after $2 s"
  wait "$1"
}

# procs_left NAME=VALUE SECONDS: the pids of the processes (other than this
# shell) whose environment holds NAME=VALUE, once none is left or SECONDS
# have passed (polled every 0.05 s); nothing when none is left.  A job's
# processes end on their own schedule after the test's wait for its driver:
# executors that the same signal killed (Ctrl-C to the process group), or
# that the driver let go, still have to be scheduled to exit, which on a
# loaded machine can take a moment; one still there after SECONDS is left.
procs_left() {
  _n=0
  while :; do
    _l=$(grep -lz "^$1\$" /proc/[0-9]*/environ 2>/dev/null |
      sed 's|/proc/\([0-9]*\)/environ|\1|' | grep -v "^$$\$" | tr '\n' ' ')
    [ -z "$_l" ] || [ $_n -ge $(($2 * 20)) ] && break
    sleep 0.05
    _n=$((_n + 1))
  done
  echo $_l
}
