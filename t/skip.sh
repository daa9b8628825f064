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
