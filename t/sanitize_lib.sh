# Sourced by t/slow_sanitize.sh (the fast suite under ASan and UBSan) and
# by its self-test, t/sanitize_check_test.sh, so that the test exercises the
# very settings and checks the slow set uses.
#
# The sanitizer build's flags: ASan and UBSan, and float-cast-overflow (a
# double out of an integer type's range converted to it, undefined in C),
# which gcc leaves out of -fsanitize=undefined.  libubsan is linked
# statically, its names kept out of the program's dynamic symbols: a
# shared libubsan's call that opens its log file binds to libasan's copy
# of that function, so UBSan would write to stderr whatever log_path says
# (gcc 12); an exported static copy would take libasan's calls instead.
ORION_SAN=address,undefined,float-cast-overflow
ORION_SAN_CFLAGS="-O1 -g -fsanitize=$ORION_SAN -fno-omit-frame-pointer"
ORION_SAN_CFLAGS="$ORION_SAN_CFLAGS -fno-sanitize-recover=all"
ORION_SAN_LDFLAGS="-fsanitize=$ORION_SAN -static-libubsan"
ORION_SAN_LDFLAGS="$ORION_SAN_LDFLAGS -Wl,--exclude-libs,libubsan.a"

# orion_san_env DIR SRCDIR: the sanitizer runtimes' settings, exported
# (SRCDIR holds t/lsan.supp, the leak suppressions).  Every instrumented
# process writes its reports to files of its own in DIR (log_path: asan or
# ubsan, then the pid).  A test that runs the driver or an executor
# captures that process's stderr and checks its exit status or its
# message, so a report written to stderr could be swallowed by a test
# that expects a failure anyway; a file cannot be.
#   halt_on_error: the first UBSan finding ends the process (non-zero
#     exit), as -fno-sanitize-recover also asks;
#   detect_leaks: LeakSanitizer at every instrumented process's exit;
#   detect_stack_use_after_return: a pointer to a returned function's
#     local is caught when used (the frames are kept on a heap of their
#     own);
#   allocator_may_return_null: an allocation too large to make returns
#     NULL, as malloc does, instead of aborting (the runtime checks every
#     allocation, and tests feed it sizes from corrupted input on purpose);
#     ASan then writes a warning, not an error, to the report file.
orion_san_env() {
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$1/ubsan"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_stack_use_after_return=1"
  ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$1/asan"
  LSAN_OPTIONS="suppressions=$2/t/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS ASAN_OPTIONS LSAN_OPTIONS
}

# orion_san_check DIR LOG...: prints every sanitizer report found in DIR's
# files or in the logs (a process started with an environment of its own
# writes to its stderr), and every criterion case that the test pattern
# disabled although it is not a slow_* one (the run must be the whole fast
# suite, every case).  Returns 1 when it printed any, else 0.
orion_san_check() {
  _dir=$1
  shift
  _pat='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer'
  # A report file with no error in it holds only the warnings that
  # allocator_may_return_null writes for the allocations it refused.
  _found=$(grep -l -a -E "$_pat" "$_dir"/* "$@" 2>/dev/null || true)
  _off=$(grep -h -a -E '^\[SKIP\] [^:]+::[^:]+: Test is disabled' "$@" \
    2>/dev/null | grep -v -E '^\[SKIP\] [^:]+::slow_' || true)
  _rc=0
  for _f in $_found; do
    echo "-- $_f"
    grep -a -E -A25 "$_pat" "$_f" | head -n 60
    _rc=1
  done
  [ -n "$_found" ] && echo "FAIL: sanitizer reports in:" $_found
  if [ -n "$_off" ]; then
    echo "$_off"
    echo "FAIL: fast-suite cases above did not run under the sanitizers"
    _rc=1
  fi
  return $_rc
}
