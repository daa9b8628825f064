# bench/lib.sh: what the MF benchmarks share; sourced, not run.

# bench_ml1m NAME: sets train and test to MovieLens-1M's files under
# ORION_DATA (default ../shared/data).  Without them it exits 0 with a
# message, or 1 under CI=true, where the data must be there.  Also checks
# that this tree is built.
bench_ml1m() {
  local data=${ORION_DATA:-../shared/data}
  train=$data/movielens-1m/ratings.train.txt.gz
  test=$data/movielens-1m/ratings.test.txt.gz
  if [ ! -f "$train" ] || [ ! -f "$test" ]; then
    if [ "${CI:-}" = "true" ]; then
      echo "bench/$1: FAIL: $train not found (CI=true needs the data)" >&2
      exit 1
    fi
    echo "bench/$1: skipped: $train not found (set ORION_DATA)"
    exit 0
  fi
  if [ ! -x ./orion-driver ] || [ ! -x ./orion-executor ]; then
    echo "bench/$1: build first (./configure && make)" >&2
    exit 1
  fi
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
