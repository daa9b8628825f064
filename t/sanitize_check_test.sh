#!/bin/sh
# Shows that the slow set's sanitizer run (t/slow_sanitize.sh) fails on
# what it exists to catch, with the flags, settings and check it uses
# (t/sanitize_lib.sh): a leak, a use after free and signed overflow in a
# process whose stderr is thrown away, as a test that captures the
# driver's output would; a report that reached a test's log; and a
# fast-suite case that the criterion pattern left out.  A refused huge
# allocation (only a warning) and a disabled slow_* case pass.  One small
# program, built with the same flags, does the wrong things on demand.
src=${ORION_SRCDIR:-.}
. "$src/t/skip.sh"
. "$src/t/sanitize_lib.sh"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0

cat >"$tmp/bad.c" <<'EOF'
#include <limits.h>
#include <stdlib.h>
#include <string.h>
/* Volatile, so that the compiler keeps each mistake for the runtime. */
void *volatile keep;
volatile int big = INT_MAX;
volatile size_t huge = (size_t)1 << 45;
volatile int eight = 8;
int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "leak") == 0) {
    keep = malloc(64);
    keep = NULL;
  } else if (strcmp(what, "freed") == 0) {
    volatile char *p = malloc(8);
    free((void *)p);
    return p[0];
  } else if (strcmp(what, "ub") == 0) {
    keep = malloc(64);
    *(volatile int *)keep = big + eight;
    free(keep);
  } else if (strcmp(what, "huge") == 0) {
    void *p = malloc(huge);
    return p != NULL;
  }
  return 0;
}
EOF
# shellcheck disable=SC2086
${CC:-cc} $ORION_SAN_CFLAGS -o "$tmp/bad" "$tmp/bad.c" $ORION_SAN_LDFLAGS \
  2>"$tmp/cc.log" ||
  skip "${CC:-cc} cannot build with -fsanitize=$ORION_SAN:" \
    "$(head -n 3 "$tmp/cc.log")"

# run WHAT: runs the program in a fresh reports folder, stderr discarded.
run() {
  rm -rf "$tmp/reports" "$tmp/logs"
  mkdir -p "$tmp/reports" "$tmp/logs"
  : >"$tmp/logs/t.log"
  (orion_san_env "$tmp/reports" "$src"; "$tmp/bad" "$1" 2>/dev/null)
}

# expect STATUS PATTERN WHAT: the check's status and a line of its output.
expect() {
  out=$(orion_san_check "$tmp/reports" "$tmp"/logs/*.log 2>&1); st=$?
  if [ "$st" -ne "$1" ] || ! printf '%s\n' "$out" | grep -q -e "$2"; then
    echo "FAIL: $3 (status $st):"; printf '%s\n' "$out" | sed 's/^/  /'
    fail=1
  else
    echo "ok: $3"
  fi
}

run none
expect 0 "" "a clean run passes"
run huge
warning="WARNING: AddressSanitizer failed to allocate"
if grep -q -a "$warning" "$tmp"/reports/*; then
  expect 0 "" "a refused huge allocation (a warning in reports/) passes"
else
  echo "FAIL: a refused huge allocation left no warning in reports/"
  fail=1
fi
run leak
expect 1 "ERROR: LeakSanitizer" \
  "a leak in a process whose stderr is discarded fails"
run freed
expect 1 "heap-use-after-free" \
  "a use after free whose stderr is discarded fails"
run ub
expect 1 "runtime error: signed integer overflow" \
  "signed overflow in a process whose stderr is discarded fails"
run none
printf '==1==ERROR: AddressSanitizer: heap-use-after-free on address\n' \
  >"$tmp/logs/t.log"
expect 1 "logs/t.log" "a report in a test's log fails"
run none
printf '[SKIP] cluster::slow_goldens: Test is disabled\n' >"$tmp/logs/t.log"
expect 0 "" "a disabled slow_* case passes"
printf '[SKIP] wire::every_byte: Test is disabled\n' >>"$tmp/logs/t.log"
expect 1 "wire::every_byte: Test is disabled" \
  "a disabled fast-suite case fails"
[ "$fail" -eq 0 ] && echo "sanitize_check_test: all passed"
exit $fail
