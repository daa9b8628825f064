#!/usr/bin/env bash
# bench/load.sh: how fast orion.text_file loads MovieLens-1M training ratings
# (gzip, "user item rating" lines), against two baselines measured in the
# same run:
#   gzip -dc FILE > /dev/null               decompression alone
#   gzip -dc FILE | lua5.4 (string.match)   a plain Lua line-by-line parser
# Each is run RUNS times (default 5); the median wall time of each and the
# ratios are printed.
#
#   ./configure && make && bench/load.sh
#
# The data is read from $ORION_DATA/movielens-1m/ratings.train.txt.gz
# (ORION_DATA defaults to ../shared/data).  When it is missing the benchmark
# is skipped (exit 0), unless CI=true, where that is a failure (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-5}
data=${ORION_DATA:-../shared/data}
file=$data/movielens-1m/ratings.train.txt.gz

case $runs in
  '' | *[!0-9]* | 0) echo "bench/load.sh: RUNS must be a positive integer" >&2; exit 2 ;;
esac
if [ ! -f "$file" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "bench/load.sh: FAIL: $file not found (CI=true needs the data)" >&2
    exit 1
  fi
  echo "bench/load.sh: skipped: $file not found (set ORION_DATA to the data folder)"
  exit 0
fi
if [ ! -x ./orion-driver ]; then
  echo "bench/load.sh: ./orion-driver not found; build first (./configure && make)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The Orion-C side: RUNS loads in one driver process, each timed with
# orion.clock(); prints one "seconds nnz" line per load.
cat > "$tmp/orion_load.lua" <<'EOF'
local orion = require "orion"
local path, runs = arg[1], tonumber(arg[2])
for _ = 1, runs do
  collectgarbage()
  local t0 = orion.clock()
  local R = orion.text_file(path)          -- format "coo", value_type "f64"
  local t = orion.clock() - t0
  print(("%.6f %d"):format(t, R:nnz()))
  R = nil
end
EOF

# The plain Lua baseline: parse every line with string.match and tonumber,
# keeping the three columns in Lua tables.
cat > "$tmp/lua_load.lua" <<'EOF'
local us, is, rs, n = {}, {}, {}, 0
for line in io.lines() do
  local u, i, r = line:match("^%s*(%d+)%s+(%d+)%s+(%S+)")
  if u then
    n = n + 1
    us[n], is[n], rs[n] = tonumber(u), tonumber(i), tonumber(r)
  end
end
io.stderr:write(n, "\n")
EOF

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

./orion-driver --quiet --executors 0 "$tmp/orion_load.lua" "$file" "$runs" > "$tmp/orion.out"
nnz=$(awk 'NR == 1 { print $2 }' "$tmp/orion.out")
orion_med=$(awk '{ print $1 }' "$tmp/orion.out" | median)

: > "$tmp/gzip.times"
for _ in $(seq "$runs"); do
  t0=$(now); gzip -dc "$file" > /dev/null; t1=$(now)
  elapsed "$t0" "$t1" >> "$tmp/gzip.times"
done
gzip_med=$(median < "$tmp/gzip.times")

lua_bin=$(command -v lua5.4 || true)
if [ -n "$lua_bin" ]; then
  : > "$tmp/lua.times"
  for _ in $(seq "$runs"); do
    t0=$(now); gzip -dc "$file" | "$lua_bin" "$tmp/lua_load.lua" 2> "$tmp/lua.n"; t1=$(now)
    elapsed "$t0" "$t1" >> "$tmp/lua.times"
  done
  lua_med=$(median < "$tmp/lua.times")
  lua_n=$(cat "$tmp/lua.n")
fi

bytes=$(wc -c < "$file")
echo "load: $file"
echo "      $bytes bytes gzip, $nnz ratings; median of $runs runs, wall seconds"
printf '  %-44s %9.3f\n' "orion.text_file (coo, f64), in orion-driver" "$orion_med"
printf '  %-44s %9.3f\n' "gzip -dc > /dev/null" "$gzip_med"
if [ -n "$lua_bin" ]; then
  printf '  %-44s %9.3f   (%s lines parsed)\n' "gzip -dc | lua5.4 string.match" "$lua_med" "$lua_n"
else
  echo "  (lua5.4 not found: the Lua baseline is skipped)"
fi
awk -v o="$orion_med" -v g="$gzip_med" \
  'BEGIN { printf "  %-44s %9.2f\n", "ratio orion / gzip", o / g }'
if [ -n "$lua_bin" ]; then
  awk -v o="$orion_med" -v l="$lua_med" \
    'BEGIN { printf "  %-44s %9.2f   (lua5.4 / orion = %.1fx)\n", "ratio orion / lua5.4", o / l, l / o }'
fi
