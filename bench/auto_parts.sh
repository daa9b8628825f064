#!/usr/bin/env bash
# bench/auto_parts.sh: --partitions auto against the default 8 on virtual
# hosts (issue 35, the simulator "used for the plan"; needs root):
#
#   ./configure && make && bench/auto_parts.sh
#   NS="7 4 3" RUNS=3 Q=0.1 EPOCHS=6 bench/auto_parts.sh
#   NS=7 RUNS=1 K=128 EPOCHS=24 bench/auto_parts.sh
#
# For each N of NS, RUNS rounds of A (--partitions 8, the default) then B
# (--partitions auto), interleaved (A, B, A, B, ...), apps/mf/mf.lua on
# the embedded generator's DATA (default 100000,20000,4000000) at K (32) on
# N virtual hosts (bench/netcluster.sh -n N --cpu Q --driver-cpu Q, links
# at Q x 1 gbit; --bandwidth-mbps tells the choice the links' rate).
# Per run the median of the training pass's seconds over epochs 4..EPOCHS
# (train_seconds: "auto" chooses after the second pass, and the third
# moves the rows to their new parts); per N and side the median over the
# runs, min..max, B / A, and the partitions "auto" chose (as recorded).
# Also the training seconds of epochs 2..EPOCHS together (the switch in
# them; the first pass, loading and sending the data, is the same on
# both sides and left out), per side the median over the runs, and B / A;
# and the pass after which "auto" switched (its record's "pass"; "-":
# it kept the default).
#
# 7 and 3 hosts are cases the default gets wrong: on 7, 8 space parts go
# 2, 1, 1, 1, 1, 1, 1, so one host does 2/8 of the work where 1/7 is due
# (75% more); on 3 they go 3, 3, 2 (12.5% more).  4 hosts divide 8
# evenly: there "auto" should keep 8, or be no slower.  "auto" runs the
# first two passes with 8 and then the switch (the third pass cuts and
# sends the ratings again), which the medians leave out: the "switch s"
# column is the seconds of the pass after the switch less the median of
# the passes after it (B's runs that switched; "-" where none did).
set -euo pipefail
cd "$(dirname "$0")/.."

q=${Q:-0.1}
ns=${NS:-7 4 3}
runs=${RUNS:-3}
epochs=${EPOCHS:-6}
data=${DATA:-100000,20000,4000000}
k=${K:-32}
. bench/lib.sh
bench_need auto_parts.sh bench/netcluster.sh
case $runs in '' | *[!0-9]* | 0) echo "bench/auto_parts.sh: RUNS must be 1 or more" >&2; exit 2 ;; esac
case $epochs in '' | *[!0-9]* | [0-3]) echo "bench/auto_parts.sh: EPOCHS must be 4 or more" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "bench/auto_parts.sh: skipped: network namespaces and cgroups need root"
  exit 0
fi
export ORION_LUA_PATH=${ORION_LUA_PATH:-$PWD/lua/?.lua}
mbit=$(awk -v x="$q" 'BEGIN { printf "%d", x * 1000 + 0.5 }')
tmp=$(mktemp -d)
# KEEP=DIR: the runs' metrics are left there; REUSE=DIR: no runs, the
# table of those kept in DIR (with the same NS).
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$tmp"/. "$KEEP"/; fi; rm -rf "$tmp"' EXIT
if [ -n "${REUSE:-}" ]; then cp -r "$REUSE"/. "$tmp"/; runs=0; fi
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# train_of FILE: train_seconds of the epoch records, epoch >= 4.
train_of() {
  awk '/"epoch":/ && /"train_seconds":/ {
      e = $0; sub(/.*"epoch":/, "", e); sub(/[,}].*/, "", e)
      v = $0; sub(/.*"train_seconds":/, "", v); sub(/[,}].*/, "", v)
      if (e + 0 >= 4) print v }' "$1"
}

echo "bench/auto_parts.sh: MF --synthetic $data, K=$k, $epochs epochs, Q=$q CPU a host, links ${mbit}mbit, $runs rounds (A: --partitions 8, B: --partitions auto), $(nproc) cores; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $ns; do
  for ((r = 1; r <= runs; r++)); do
    for side in A B; do
      parts=8
      [ "$side" = A ] || parts=auto
      m=$tmp/m-$n-$side-$r.jsonl
      bench/netcluster.sh -n "$n" --cpu "$q" --driver-cpu "$q" \
        --logs "$tmp/logs-$n-$side-$r" -- --quiet --metrics "$m" \
        --partitions "$parts" --bandwidth-mbps "$mbit" \
        apps/mf/mf.lua --synthetic "$data" --k "$k" --epochs "$epochs" \
        > "$tmp/out" 2> "$tmp/err" ||
        { echo "bench/auto_parts.sh: $side on $n hosts failed:" >&2
          cat "$tmp/out" "$tmp/err" >&2; exit 1; }
      # The switch: after pass P (the record that changed the setting),
      # pass P + 1's seconds less the median of the passes after it.
      sp=$({ grep '"auto_partitions"' "$m" || true; } | awk '{ a = $0; sub(/.*"auto_partitions":/, "", a); sub(/[,}].*/, "", a)
        r = $0; sub(/.*"ran_partitions":/, "", r); sub(/[,}].*/, "", r)
        p = $0; sub(/.*"pass":/, "", p); sub(/[,}].*/, "", p); if (a != r) print p }' | head -1)
      echo "${sp:--}" > "$tmp/sp-$n-$side-$r"
      train_of "$m" | median > "$tmp/t-$n-$side-$r"
      awk '/"epoch":/ && /"train_seconds":/ { e = $0; sub(/.*"epoch":/, "", e); sub(/[,}].*/, "", e)
          v = $0; sub(/.*"train_seconds":/, "", v); sub(/[,}].*/, "", v); if (e + 0 >= 2) t += v }
        END { printf "%.3f\n", t }' "$m" > "$tmp/tot-$n-$side-$r"
      if [ -n "$sp" ]; then
        awk -v p="$sp" '/"epoch":/ && /"train_seconds":/ {
            e = $0; sub(/.*"epoch":/, "", e); sub(/[,}].*/, "", e)
            v = $0; sub(/.*"train_seconds":/, "", v); sub(/[,}].*/, "", v)
            if (e + 0 == p + 1) first = v; else if (e + 0 > p + 1) print v > "/dev/stderr" }
          END { print first }' "$m" 2> "$tmp/after" > "$tmp/first"
        awk -v m="$(median < "$tmp/after")" '{ if (m == "nan") print "-"; else printf "%.3f\n", $1 - m }' "$tmp/first" > "$tmp/sw-$n-$side-$r"
      else
        echo - > "$tmp/sw-$n-$side-$r"
      fi
    done
  done
  [ "$runs" -eq 0 ] || cut -d' ' -f1 /proc/loadavg > "$tmp/load-$n"
done

printf '%5s %22s %22s %7s %9s %9s %7s %9s %9s  %-22s %5s\n' hosts "A: 8 parts s [min-max]" \
  "B: auto s [min-max]" "B / A" "A 2..E s" "B 2..E s" "B / A" "switched" "switch s" "auto chose (runs)" load
line=$(grep -n 'st = orion.parallel_for(train, body, loop_opts)' apps/mf/mf.lua | head -1 | cut -d: -f1)
for n in $ns; do
  for side in A B; do
    cat "$tmp"/t-"$n"-"$side"-* > "$tmp/all-$side"
  done
  chose=$(cat "$tmp"/m-"$n"-B-*.jsonl | { grep '"auto_partitions"' || true; } |
    { grep -F "\"loop\":\"apps/mf/mf.lua:$line\"" || true; } |
    sed 's/.*"auto_assign":"\([a-z]*\)".*"auto_partitions":\([0-9]*\).*/\2 \1/' |
    sort | uniq -c | awk '{ printf "%s%s %s x%d", (NR > 1 ? ", " : ""), $2, $3, $1 }')
  sw=$({ grep -hv '^-$' "$tmp"/sw-"$n"-B-* || true; } | median)
  [ "$sw" != nan ] || sw=-
  ta=$(cat "$tmp"/tot-"$n"-A-* | median)
  tb=$(cat "$tmp"/tot-"$n"-B-* | median)
  sps=$(cat "$tmp"/sp-"$n"-B-* | paste -sd, -)
  awk -v n="$n" -v c="${chose:--}" -v l="$(cat "$tmp/load-$n")" -v sw="$sw" \
      -v ta="$ta" -v tb="$tb" -v sps="$sps" \
      -v fa="$tmp/all-A" -v fb="$tmp/all-B" 'function load(f, v,   k, x) {
        k = 0; while ((getline x < f) > 0) v[++k] = x + 0; return k }
      function med(v, k,   i, j, t) { for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }
      BEGIN { ka = load(fa, a); kb = load(fb, b); ma = med(a, ka); mb = med(b, kb)
        printf "%5d %8.4f [%.4f-%.4f] %8.4f [%.4f-%.4f] %7.3f %9.2f %9.2f %7.3f %9s %9s  %-22s %5s\n", n,
          ma, a[1], a[ka], mb, b[1], b[kb], mb / ma, ta, tb, tb / ta, sps, sw, c, l }'
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
