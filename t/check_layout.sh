#!/bin/sh
# Checks the source tree's layout rules (docs/design-notes.md, "Map"):
#   1. each folder includes and calls only the folders below it:
#        util/       util/
#        gpu/        gpu/ util/
#        kernels/    kernels/ gpu/ util/
#        analysis/   analysis/ util/
#        dsm/        dsm/ util/
#        executor/   executor/ dsm/ analysis/ kernels/ gpu/ util/
#        scheduler/  scheduler/ executor/ dsm/ analysis/ kernels/ gpu/ util/
#        lua/        lua/ scheduler/ executor/ dsm/ analysis/ kernels/ gpu/
#                    util/
#        drivers/    anything
#      Calls are read from the objects' symbol tables (nm): a global
#      symbol defined in one folder's object and undefined in another's is
#      a call (or a use of its data) from the second folder to the first;
#   2. no circle between folders, by includes and calls together;
#   3. no include cycle between modules.  A module is the files of one
#      folder whose names share the part before the first '_' (dsm/msg.c,
#      msg.h, msg_field.h and msg_shard.c are one concept split for size,
#      and may include each other); every other pair of modules is
#      ordered;
#   4. no source file outside t/ over 1,200 lines;
#   5. no two .c files with the same name (ar keeps one member per name,
#      so the second would replace the first in liborion.a);
#   6. inside each folder but analysis/ (a recursive-descent parser and
#      generator call back up by nature), no circle of files by calls:
#      files that call each other in a circle are one concept split by
#      size;
#   7. inside each folder but analysis/, at most 5 calls that climb back
#      up: a call from a.c to b.c where b.c sits above a.c, that is b.c
#      reaches a.c by includes (b.c includes a.h, or a header that includes
#      it, ...; a header x.h leads to x.c) and a.c does not reach b.c.
# Tests and benchmarks (t/, bench/) are left out: they may use anything.
# Usage: t/check_layout.sh [ROOT [OBJDIR]]
#   ROOT: the sources (default: $ORION_SRCDIR or .); OBJDIR: where the
#   built objects are, as ROOT/x/y.c -> OBJDIR/x/y.o (default: ROOT when
#   ROOT is given, else the current folder, the build folder under make
#   check).  Sources without an object (not built in this configuration)
#   have no calls; a tree with no object at all is an error.
# Prints every violation and the counts, and exits 1 when there is one.
objdir=${2:-${1:-$PWD}}
root=${1:-${ORION_SRCDIR:-.}}
case $objdir in /*) ;; *) objdir=$PWD/$objdir ;; esac
cd "$root" || { echo "check_layout: cannot enter $root" >&2; exit 2; }

folders="util gpu kernels analysis dsm executor scheduler lua drivers"
files=$(for d in $folders; do
  [ -d "$d" ] && find "$d" -name '*.[ch]' -o -name '*.cu' | sort
done)
[ -n "$files" ] || { echo "check_layout: no sources under $root" >&2; exit 2; }

allowed() {
  case $1 in
    util) echo "util" ;;
    gpu) echo "gpu util" ;;
    kernels) echo "kernels gpu util" ;;
    analysis) echo "analysis util" ;;
    dsm) echo "dsm util" ;;
    executor) echo "executor dsm analysis kernels gpu util" ;;
    scheduler) echo "scheduler executor dsm analysis kernels gpu util" ;;
    lua) echo "lua scheduler executor dsm analysis kernels gpu util" ;;
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
graph=$(mktemp) || exit 2
trap 'rm -f "$edges" "$edges.err" "$graph"' EXIT

for f in $files; do
  dir=${f%%/*}
  ok=$(allowed "$dir")
  mod=$(module "$f")
  echo "F $f" >>"$graph"
  # Project includes: quoted, with a folder (config.h has none).
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\/[^"]*\)".*/\1/p' "$f"); do
    idir=${inc%%/*}
    case " $ok " in
      *" * "*|*" $idir "*) ;;
      *) echo "$f: includes $inc, but $dir/ may include only: $ok"; bad=1 ;;
    esac
    echo "I $f $inc" >>"$graph"
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

for f in $files; do
  n=$(wc -l <"$f")
  [ "$n" -gt 1200 ] && { echo "$f: $n lines (the limit is 1,200)"; bad=1; }
done

dups=$(for f in $files; do case $f in *.c) basename "$f" ;; esac; done |
  sort | uniq -d)
for d in $dups; do
  echo "two sources named $d:" $(echo "$files" | grep "/$d\$"); bad=1
done

# Calls: every global symbol an object defines (D) or needs (U).
nobj=0
for f in $files; do
  case $f in *.c|*.cu) ;; *) continue ;; esac
  o=$objdir/${f%.*}.o
  [ -f "$o" ] || continue
  nobj=$((nobj + 1))
  ${NM:-nm} -P "$o" | awk -v f="$f" '
    $2 == "U" { print "U", f, $1; next }
    $2 ~ /^[BCDGRSTVW]$/ { print "D", f, $1 }' >>"$graph" ||
    { echo "check_layout: ${NM:-nm} cannot read $o" >&2; exit 2; }
done
[ $nobj -gt 0 ] || {
  echo "check_layout: no objects under $objdir for the sources of $root" \
    "(build first)" >&2; exit 2; }
for d in $folders; do echo "A $d $(allowed "$d")"; done >>"$graph"

if ! awk -v folders="$folders" '
function dir(p) { return substr(p, 1, index(p, "/") - 1) }
# The .c (or .cu) file a header leads to, or "".
function owner(h,  b) {
  b = h; sub(/\.h$/, "", b)
  if ((b ".c") in isfile) return b ".c"
  if ((b ".cu") in isfile) return b ".cu"
  return ""
}
# reach[a, b] = 1 when a reaches b by includes inside its folder.
function walk(start, n,  i, m, o) {
  if ((start, n) in seen) return
  seen[start, n] = 1
  if (n ~ /\.(c|cu)$/) reach[start, n] = 1
  o = (n ~ /\.h$/) ? owner(n) : ""
  if (o != "") walk(start, o)
  for (i = 1; i <= ninc[n]; i++) { m = inc[n, i]; walk(start, m) }
}
# Tarjan: the circles of files of one folder.
function strong(v,  i, w) {
  index_[v] = low[v] = ++counter
  stack[++sp] = v; onstack[v] = 1
  for (i = 1; i <= nout[v]; i++) {
    w = out[v, i]
    if (!(w in index_)) {
      strong(w)
      if (low[w] < low[v]) low[v] = low[w]
    } else if (onstack[w] && index_[w] < low[v]) low[v] = index_[w]
  }
  if (low[v] == index_[v]) {
    comp = ""; size = 0
    do { w = stack[sp--]; onstack[w] = 0; comp = w " " comp; size++ }
    while (w != v)
    if (size > 1) {
      circles[dir(v)]++
      print dir(v) "/: circle of files calling each other: " comp
      bad = 1
    }
  }
}
$1 == "F" { isfile[$2] = 1; next }
$1 == "I" {
  if (dir($2) == dir($3) && $3 != $2) inc[$2, ++ninc[$2]] = $3
  if (dir($2) != dir($3)) fedge[dir($2) " " dir($3)] = 1
  next
}
$1 == "D" { if (!($3 in def)) def[$3] = $2; next }
$1 == "U" { nuse++; use_f[nuse] = $2; use_s[nuse] = $3; next }
$1 == "A" { for (i = 3; i <= NF; i++) may[$2, $i] = 1; next }
END {
  nf = split(folders, fl, " ")
  for (u = 1; u <= nuse; u++) {
    s = use_s[u]; a = use_f[u]
    if (!(s in def)) continue
    b = def[s]
    if (a == b) continue
    da = dir(a); db = dir(b)
    if (da != db) {
      cross++
      fedge[da " " db] = 1
      if (!((da, "*") in may) && !((da, db) in may)) {
        print a ": calls " s " of " b ", but " da "/ may call only the folders below it"
        climbs_across++; bad = 1
      }
      continue
    }
    if ((a, b) in callpair) continue
    callpair[a, b] = s
    inner++
    out[a, ++nout[a]] = b
    nodes[a] = 1; nodes[b] = 1
  }
  # Circles between folders.
  for (e in fedge) { split(e, p, " "); fout[p[1], ++nfout[p[1]]] = p[2] }
  for (i = 1; i <= nf; i++) {
    # Folders reachable from fl[i]; a circle when fl[i] is among them.
    delete fseen; top = 0; fst[++top] = fl[i]
    while (top > 0) {
      x = fst[top--]
      for (j = 1; j <= nfout[x]; j++) {
        y = fout[x, j]
        if (!(y in fseen)) { fseen[y] = 1; fst[++top] = y }
      }
    }
    if (fl[i] in fseen) {
      print fl[i] "/: in a circle of folders (includes and calls)"
      fcircles++; bad = 1
    }
  }
  # Circles and climbs inside each folder but analysis/.
  for (v in nodes)
    if (dir(v) != "analysis" && !(v in index_)) strong(v)
  for (k in callpair) {
    split(k, p, SUBSEP); a = p[1]; b = p[2]
    if (dir(a) == "analysis") continue
    walk(b, b); walk(a, a)
    if (((b, a) in reach) && !((a, b) in reach)) {
      climbs[dir(a)]++
      climbing[dir(a)] = climbing[dir(a)] "  " a " calls " callpair[k] " of " b ", which includes it\n"
    }
  }
  line = ""
  for (i = 1; i <= nf; i++) {
    d = fl[i]
    if (d == "analysis") continue
    if (climbs[d] > 5) {
      printf "%s/: %d calls climb back up (at most 5):\n%s", d, climbs[d], climbing[d]
      bad = 1
    }
    line = line sprintf(" %s %d/%d", d, climbs[d] + 0, circles[d] + 0)
  }
  printf "check_layout: calls: %d across folders (%d climbing), %d circles of folders; %d between files of one folder; climbs/circles by folder:%s\n", \
    cross, climbs_across, fcircles, inner, line
  exit bad
}' "$graph"; then
  bad=1
fi

[ $bad -eq 0 ] && echo "check_layout: $(echo "$files" | wc -l) files, rules hold"
exit $bad
