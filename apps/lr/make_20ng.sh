#!/bin/sh
# Makes a two-class libsvm data set from 20 Newsgroups (the derived UCI
# bag-of-words in ../shared/data/20newsgroups-bydate, or $ORION_20NG):
#
#   apps/lr/make_20ng.sh OUTDIR [POSITIVE [NEGATIVE]]
#
# writes OUTDIR/train.libsvm and OUTDIR/test.libsvm from the corpus's own
# train/test split.  POSITIVE and NEGATIVE are newsgroup name prefixes
# (default: comp.graphics and sci.space); NEGATIVE "rest" means every other
# group (one-vs-rest).  A document's features are its word ids (1-based,
# the corpus vocabulary) with the counts scaled to unit L2 norm; documents
# left with no words are dropped.  The rows are shuffled with a fixed
# Park-Miller generator, so the files are the same on every run.  Train
# labels are 1/0 and test labels +1/-1, so both of lr.lua's label
# conventions are used.
set -eu
out=${1:?usage: make_20ng.sh OUTDIR [POSITIVE [NEGATIVE]]}
pos=${2:-comp.graphics}
neg=${3:-sci.space}
src=${ORION_20NG:-$(dirname "$0")/../../../shared/data/20newsgroups-bydate}
[ -f "$src/docs.20news.txt" ] && [ -f "$src/docword.20news.txt.gz" ] || {
  echo "make_20ng.sh: no 20 Newsgroups corpus in $src" >&2
  exit 3
}
mkdir -p "$out"
for split in train test; do
  gzip -dc "$src/docword.20news.txt.gz" |
    awk -v part="$split" -v pos="$pos" -v neg="$neg" \
        -v docs="$src/docs.20news.txt" '
      function starts(s, p) { return substr(s, 1, length(p)) == p }
      function flush(   i, norm, line, lab) {
        if (cur == "" || !(cur in cls) || n == 0) { n = 0; return }
        norm = 0
        for (i = 1; i <= n; i++) norm += cnt[i] * cnt[i]
        norm = sqrt(norm)
        if (part == "train") lab = cls[cur] ? "1" : "0"
        else lab = cls[cur] ? "+1" : "-1"
        line = lab
        for (i = 1; i <= n; i++) line = line sprintf(" %d:%.6g", wid[i], cnt[i] / norm)
        seed = (seed * 16807) % 2147483647
        printf "%d\t%s\n", seed, line
        n = 0
      }
      BEGIN {
        seed = (part == "train") ? 12345 : 67890
        while ((getline l < docs) > 0) {
          split(l, f, " ")
          if (f[2] != part) continue
          if (starts(f[3], pos)) cls[f[1]] = 1
          else if (neg == "rest" || starts(f[3], neg)) cls[f[1]] = 0
        }
      }
      NR <= 3 { next }
      {
        if ($1 != cur) { flush(); cur = $1 }
        n++; wid[n] = $2; cnt[n] = $3
      }
      END { flush() }' |
    sort -t "$(printf '\t')" -k1,1n | cut -f2 > "$out/$split.libsvm"
done
