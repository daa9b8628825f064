#!/usr/bin/env bash
# bench/lda_script_ab.sh: apps/lda/lda.lua of another revision against this
# tree's, both on this build's binaries, alternating A, B, A, B, so that a
# change to the script alone (the samplers' loop bodies) is judged against
# its baseline on the same machine at the same time.
#
#   bench/lda_script_ab.sh REV            # ROUNDS=4 ITERS=30 K=100 CORPUS=kos
#
# REV's lda.lua is taken with `git show REV:apps/lda/lda.lua` into a
# temporary folder (REV's script must need no module beside it).  Each run
# is the default sparse sampler on KOS (CORPUS=20ng: 20 Newsgroups'
# docword) with EXECS executors (default 2), alpha = 50/K, beta = 0.01,
# and fixed priors; the figure is the mean sampling seconds per iteration
# from --metrics, iterations 2..ITERS, and the user CPU seconds of the
# whole run (driver and executors: less sensitive to a loaded machine than
# wall time).  Prints each run, the medians and this/REV (below 1: this
# tree is faster).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh
rev=${1:?usage: bench/lda_script_ab.sh REV}
data=${ORION_DATA:-../shared/data}
case ${CORPUS:-kos} in
  kos) corpus=$data/uci-bow-kos/docword.kos.txt.gz ;;
  20ng) corpus=$data/20newsgroups-bydate/docword.20news.txt.gz ;;
  *) echo "bench/lda_script_ab.sh: CORPUS must be kos or 20ng" >&2; exit 2 ;;
esac
bench_need lda_script_ab.sh "$corpus"
ROUNDS=${ROUNDS:-4}
ITERS=${ITERS:-30}
K=${K:-100}
EXECS=${EXECS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git show "$rev:apps/lda/lda.lua" >"$tmp/lda.lua" || exit 1
one() { # $1: script, $2: metrics file; prints s/iter and the user CPU seconds
  /usr/bin/time -f '%U' -o "$2.cpu" env ORION_EXECUTORS="$EXECS" ./orion-driver --quiet \
    --metrics "$2" "$1" --corpus "$corpus" --k "$K" --iters "$ITERS" --ll-every "$ITERS" \
    --top 0 >/dev/null 2>&1 || return 1
  grep -o '"seconds":[0-9.e+-]*' "$2" | sed 1d | cut -d: -f2 |
    awk -v cpu="$(tail -1 "$2.cpu")" '{ s += $1; n++ } END { printf "%.5f %s\n", s / n, cpu }'
}
: >"$tmp/a"
: >"$tmp/b"
: >"$tmp/ca"
: >"$tmp/cb"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="base here"; else order="here base"; fi
  for side in $order; do
    if [ "$side" = base ]; then
      x=$(one "$tmp/lda.lua" "$tmp/m$r.base") || { echo "$rev's lda.lua failed" >&2; exit 1; }
      echo "${x% *}" >>"$tmp/a"
      echo "${x#* }" >>"$tmp/ca"
    else
      x=$(one apps/lda/lda.lua "$tmp/m$r.here") || { echo "this lda.lua failed" >&2; exit 1; }
      echo "${x% *}" >>"$tmp/b"
      echo "${x#* }" >>"$tmp/cb"
    fi
    echo "round $r: $side ${x% *} s/iter, ${x#* } s user CPU"
  done
done
a=$(bench_median <"$tmp/a")
b=$(bench_median <"$tmp/b")
printf '%s K=%s: median s/iter %s %s, this tree %s: this / %s = %.3f\n' \
  "${CORPUS:-kos}" "$K" "$rev" "$a" "$b" "$rev" "$(echo "$b / $a" | bc -l)"
ca=$(bench_median <"$tmp/ca")
cb=$(bench_median <"$tmp/cb")
printf '%s K=%s: median user CPU s (driver and executors, whole run) %s %s, this tree %s: this / %s = %.3f\n' \
  "${CORPUS:-kos}" "$K" "$rev" "$ca" "$cb" "$rev" "$(echo "$cb / $ca" | bc -l)"
