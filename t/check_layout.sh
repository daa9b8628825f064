#!/bin/sh
# Checks the source tree's layout rules (docs/design-notes.md, "Map"):
#   1. each folder includes only the folders below it:
#        util/       util/
#        gpu/        gpu/ util/
#        kernels/    kernels/ gpu/ util/
#        analysis/   analysis/ util/
#        dsm/        dsm/ util/
#        scheduler/  scheduler/ dsm/ util/
#        lua/        lua/ scheduler/ analysis/ dsm/ kernels/ gpu/ util/
#        drivers/    anything
#   2. the executor's Lua host (lua/exec*, lua/nn.*) includes no
#      driver-only header (lua/module.h, lua/orion.h, lua/pfor.h,
#      lua/dist.h, analysis/);
#   3. no include cycle between modules.  A module is the files of one
#      folder whose names share the part before the first '_' (dsm/msg.c,
#      msg.h, msg_field.h and msg_shard.c are one concept split for size,
#      and may include each other); every other pair of modules is
#      ordered;
#   4. no source file outside t/ over 1,200 lines;
#   5. no two .c files with the same name (ar keeps one member per name,
#      so the second would replace the first in liborion.a).
# Usage: t/check_layout.sh [ROOT]   (default: $ORION_SRCDIR or .)
# Prints every violation and exits 1 when there is one.
root=${1:-${ORION_SRCDIR:-.}}
cd "$root" || { echo "check_layout: cannot enter $root" >&2; exit 2; }

folders="util gpu kernels analysis dsm scheduler lua drivers"
files=$(for d in $folders; do
  [ -d "$d" ] && find "$d" -name '*.[ch]' -o -name '*.cu' | sort
done)
[ -n "$files" ] || { echo "check_layout: no sources under $root" >&2; exit 2; }

allowed() {
  case $1 in
    util) echo "util" ;;
    gpu) echo "gpu util" ;;
    kernels) echo "kernels gpu util" ;;
    gpu) echo "gpu util" ;;
    analysis) echo "analysis util" ;;
    dsm) echo "dsm util" ;;
    scheduler) echo "scheduler dsm util" ;;
    lua) echo "lua scheduler analysis dsm kernels gpu util" ;;
    drivers) echo "*" ;;
  esac
}

# The module of a path: its folder and its name up to the first '_' or '.'.
module() {
  base=${1##*/}
  base=${base%%.*}
  echo "${1%/*}/${base%%_*}"
}

bad=0
edges=$(mktemp) || exit 2
trap 'rm -f "$edges"' EXIT

for f in $files; do
  dir=${f%%/*}
  ok=$(allowed "$dir")
  mod=$(module "$f")
  # Project includes: quoted, with a folder (config.h has none).
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\/[^"]*\)".*/\1/p' "$f"); do
    idir=${inc%%/*}
    case " $ok " in
      *" * "*|*" $idir "*) ;;
      *) echo "$f: includes $inc, but $dir/ may include only: $ok"; bad=1 ;;
    esac
    case $f in
      lua/exec.[ch]|lua/exec_*.[ch]|lua/nn.[ch])
        case $inc in
          lua/module.h|lua/orion.h|lua/pfor.h|lua/dist.h|analysis/*)
            echo "$f: the executor's Lua host includes the driver-only $inc"
            bad=1 ;;
        esac ;;
    esac
    imod=$(module "$inc")
    [ "$imod" != "$mod" ] && echo "$mod $imod" >>"$edges"
  done
  # Self edges keep every module in tsort's input.
  echo "$mod $mod" >>"$edges"
done

if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
  echo "include cycle between modules:"
  sed -n 's/^tsort: //p' "$edges.err" | grep -v "input contains a loop" \
    | sed 's/^/  /'
  bad=1
fi
rm -f "$edges.err"

for f in $files; do
  n=$(wc -l <"$f")
  [ "$n" -gt 1200 ] && { echo "$f: $n lines (the limit is 1,200)"; bad=1; }
done

dups=$(for f in $files; do case $f in *.c) basename "$f" ;; esac; done |
  sort | uniq -d)
for d in $dups; do
  echo "two sources named $d:" $(echo "$files" | grep "/$d\$"); bad=1
done

[ $bad -eq 0 ] && echo "check_layout: $(echo "$files" | wc -l) files, rules hold"
exit $bad
