# bench/lib.sh: what the benchmarks share; sourced, not run.

# bench_need NAME FILE...: exits 0 with a message when a FILE is missing,
# or 1 under CI=true, where the data must be there.  Also checks that this
# tree is built.
bench_need() {
  local name=$1 f
  shift
  for f in "$@"; do
    [ -f "$f" ] && continue
    if [ "${CI:-}" = "true" ]; then
      echo "bench/$name: FAIL: $f not found (CI=true needs the data)" >&2
      exit 1
    fi
    echo "bench/$name: skipped: $f not found (set ORION_DATA)"
    exit 0
  done
  if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
    echo "bench/$name: build first (./configure && make)" >&2
    exit 1
  fi
}

# bench_ml1m NAME: sets train and test to MovieLens-1M's files under
# ORION_DATA (default ../shared/data), as bench_need wants them.
bench_ml1m() {
  local data=${ORION_DATA:-../shared/data}
  train=$data/movielens-1m/ratings.train.txt.gz
  test=$data/movielens-1m/ratings.test.txt.gz
  bench_need "$1" "$train" "$test"
}

# bench_epochs NAME VAR VALUE: exits 2 unless VALUE is a count of 2 or more
# (epoch 1 is left out of every mean).
bench_epochs() {
  case $3 in
    '' | *[!0-9]* | 0 | 1) echo "bench/$1: $2 must be 2 or more" >&2; exit 2 ;;
  esac
}

# mean_key FILE KEY: the mean of a numeric key over the --metrics records
# (JSON lines) with epoch >= 2.
mean_key() {
  awk -v key="$2" '
    { e = $0; sub(/.*"epoch":/, "", e); sub(/[,}].*/, "", e)
      v = $0; if (index(v, "\"" key "\":") == 0) next
      sub(".*\"" key "\":", "", v); sub(/[,}].*/, "", v)
      if (e + 0 >= 2) { s += v; n++ } }
    END { if (n) printf "%.9f", s / n; else printf "nan" }' "$1"
}

# last_key FILE KEY: the key's value in the last record that has it.
last_key() {
  awk -v key="$2" '
    { v = $0; if (index(v, "\"" key "\":") == 0) next
      sub(".*\"" key "\":", "", v); sub(/[,}].*/, "", v); last = v }
    END { printf "%s", last }' "$1"
}

# bench_median: the median of the numbers on stdin, one per line.
bench_median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
