#!/bin/sh
# Shows that t/check_layout.sh fails on each kind of violation: it builds a
# small tree that obeys the rules (sources and their objects, compiled
# with cc), checks it passes, then breaks one rule at a time and checks the
# checker names the file.
checker=${ORION_SRCDIR:-.}/t/check_layout.sh
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
cc=${CC:-cc}
t=$tmp/tree

# src PATH TEXT: writes PATH under the tree (printf's escapes apply).
src() { mkdir -p "$t/${1%/*}" && printf "$2" >"$t/$1"; }

fresh() {
  rm -rf "$t"
  src util/a.h 'int ua(void);\n'
  src util/a.c '#include "util/a.h"\nint ua(void) { return 1; }\n'
  src dsm/b.h 'int db(void);\n'
  src dsm/b.c '#include "util/a.h"\n#include "dsm/b.h"\nint db(void) { return ua(); }\n'
  src executor/exec.c '#include "dsm/b.h"\nint ee(void) { return db(); }\n'
  src analysis/c.c '#include "util/a.h"\nint ac(void) { return ua(); }\n'
}

# The objects of the tree's .c files, as a build would leave them (a file
# that includes a header the tree lacks has none: its includes are what
# that case checks).
build() {
  for f in $(cd "$t" && find . -name '*.c'); do
    "$cc" -I"$t" -c "$t/$f" -o "$t/${f%.c}.o" 2>/dev/null || :
  done
}

expect() { # expect STATUS PATTERN WHAT
  build
  out=$(sh "$checker" "$t" 2>&1); st=$?
  if [ "$st" -ne "$1" ] || ! echo "$out" | grep -q "$2"; then
    echo "FAIL: $3 (status $st):"; echo "$out" | sed 's/^/  /'; fail=1
  else
    echo "ok: $3"
  fi
}

# climbers N DIR: a file DIR/lo.c calling N functions of files that include
# its header lo.h (each such call climbs back up: hN.c sits above lo.c).
climbers() {
  decl="" calls="0"
  i=1
  while [ $i -le "$1" ]; do
    decl="${decl}int h$i(void);\\n"
    calls="$calls + h$i()"
    src "$2/h$i.c" "#include \"$2/lo.h\"\\nint h$i(void) { return $i; }\\n"
    i=$((i + 1))
  done
  src "$2/lo.h" "extern int lo_k;\\nint lo(void);\\n$decl"
  src "$2/lo.c" "#include \"$2/lo.h\"\\nint lo_k = 1;\\nint lo(void) { return $calls; }\\n"
}

fresh; expect 0 "rules hold" "a tree that obeys the rules passes"
fresh; src dsm/b.c '#include "lua/exec.h"\n'
expect 1 "dsm/b.c: includes lua/exec.h" "dsm/ including lua/ is refused"
fresh; printf '#include "dsm/b.h"\n' >>"$t/analysis/c.c"
expect 1 "analysis/c.c: includes dsm/b.h" "analysis/ including dsm/ is refused"
fresh; printf '#include "scheduler/module.h"\n' >>"$t/executor/exec.c"
expect 1 "executor/exec.c: includes scheduler/module.h" \
  "the executor including the driver's engine is refused"
fresh; src executor/exec_x.c '#include "lua/orion.h"\n'
expect 1 "executor/exec_x.c: includes lua/orion.h" \
  "the executor including the bindings is refused"
fresh; printf '#include "dsm/b.h"\n' >>"$t/util/a.h"
expect 1 "util/a.h: includes dsm/b.h" "util/ including dsm/ is refused"
fresh; src dsm/b.h '#include "dsm/d.h"\nint db(void);\n'
src dsm/d.h '#include "dsm/b.h"\n'
expect 1 "include cycle" "a cycle between two modules is refused"
fresh; awk 'BEGIN { for (i = 0; i < 1201; i++) print "int x" i ";" }' >"$t/dsm/b.c"
expect 1 "dsm/b.c: 1201 lines" "a file over 1,200 lines is refused"
fresh; src util/b.c 'int c;\n'
expect 1 "two sources named b.c" "two .c files with one name are refused"

# Calls, from the objects.
fresh; src util/a.c '#include "util/a.h"\nint db(void);\nint ua(void) { return db(); }\n'
expect 1 "util/a.c: calls db of dsm/b.c" \
  "util/ calling dsm/ (declared by hand, no include) is refused"
fresh; src util/a.c '#include "util/a.h"\nextern int ee_n;\nint ua(void) { return ee_n; }\n'
printf 'int ee_n = 2;\n' >>"$t/executor/exec.c"
expect 1 "util/a.c: calls ee_n of executor/exec.c" \
  "util/ using executor/'s data is refused"
fresh; src dsm/b.c '#include "util/a.h"\n#include "dsm/b.h"\nint ee(void);\nint db(void) { return ua() + ee(); }\n'
expect 1 "dsm/: in a circle of folders" \
  "dsm/ and executor/ calling each other: a circle of folders"
fresh; src dsm/b.c '#include "dsm/b.h"\nint dd(void);\nint db(void) { return dd(); }\n'
src dsm/d.c '#include "dsm/b.h"\nint dd(void) { return db(); }\n'
expect 1 "dsm/: circle of files calling each other: dsm/[bd].c dsm/[bd].c" \
  "two files of dsm/ calling each other are refused"
fresh; src analysis/c.c '#include "util/a.h"\nint ad(void);\nint ac(void) { return ad(); }\n'
src analysis/d.c 'int ac(void);\nint ad(void) { return ac(); }\n'
expect 0 "rules hold" "analysis/'s files may call each other in a circle"
fresh; climbers 5 dsm
expect 0 "dsm 5/0" "5 calls climbing back up inside dsm/ pass"
fresh; climbers 6 dsm
expect 1 "dsm/: 6 calls climb back up" "6 calls climbing back up inside dsm/ are refused"
fresh; climbers 6 analysis
expect 0 "rules hold" "analysis/ may climb back up"
fresh; rm -f "$t"/*/*.o
out=$(sh "$checker" "$t" 2>&1); st=$?
if [ "$st" -eq 2 ] && echo "$out" | grep -q "no objects under"; then
  echo "ok: a tree without objects is an error, not a pass"
else
  echo "FAIL: a tree without objects (status $st): $out"; fail=1
fi
exit $fail
