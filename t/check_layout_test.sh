#!/bin/sh
# Shows that t/check_layout.sh fails on each kind of violation: it builds a
# small tree that obeys the rules, checks it passes, then breaks one rule at
# a time and checks the checker names the file.
checker=${ORION_SRCDIR:-.}/t/check_layout.sh
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0

fresh() {
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree/util" "$tmp/tree/dsm" "$tmp/tree/lua" "$tmp/tree/analysis"
  printf '#include "util/a.h"\n' >"$tmp/tree/dsm/b.c"
  printf 'int a;\n' >"$tmp/tree/util/a.h"
  printf '#include "dsm/b.h"\n' >"$tmp/tree/lua/exec.c"
  printf 'int b;\n' >"$tmp/tree/dsm/b.h"
  printf '#include "util/a.h"\n' >"$tmp/tree/analysis/c.c"
}

expect() { # expect STATUS PATTERN WHAT
  out=$(sh "$checker" "$tmp/tree" 2>&1); st=$?
  if [ "$st" -ne "$1" ] || ! echo "$out" | grep -q "$2"; then
    echo "FAIL: $3 (status $st):"; echo "$out" | sed 's/^/  /'; fail=1
  else
    echo "ok: $3"
  fi
}

fresh; expect 0 "rules hold" "a tree that obeys the rules passes"
fresh; printf '#include "lua/exec.h"\n' >>"$tmp/tree/dsm/b.c"
expect 1 "dsm/b.c: includes lua/exec.h" "dsm/ including lua/ is refused"
fresh; printf '#include "dsm/b.h"\n' >>"$tmp/tree/analysis/c.c"
expect 1 "analysis/c.c: includes dsm/b.h" "analysis/ including dsm/ is refused"
fresh; printf '#include "lua/module.h"\n' >>"$tmp/tree/lua/exec.c"
expect 1 "driver-only lua/module.h" "the executor host including module.h is refused"
fresh; printf '#include "lua/orion.h"\n' >"$tmp/tree/lua/exec_x.c"
expect 1 "lua/exec_x.c: the executor's Lua host includes the driver-only lua/orion.h" \
  "an executor host file (lua/exec_*) including orion.h is refused"
fresh; printf '#include "dsm/b.h"\n' >"$tmp/tree/util/a.h"
expect 1 "util/a.h: includes dsm/b.h" "util/ including dsm/ is refused"
fresh; printf '#include "dsm/d.h"\n' >"$tmp/tree/dsm/b.h"
printf '#include "dsm/b.h"\n' >"$tmp/tree/dsm/d.h"
expect 1 "include cycle" "a cycle between two modules is refused"
fresh; awk 'BEGIN { for (i = 0; i < 1201; i++) print "int x" i ";" }' >"$tmp/tree/dsm/b.c"
expect 1 "dsm/b.c: 1201 lines" "a file over 1,200 lines is refused"
fresh; printf 'int c;\n' >"$tmp/tree/util/b.c"
expect 1 "two sources named b.c" "two .c files with one name are refused"
exit $fail
