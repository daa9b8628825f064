#!/bin/sh
# The side-by-side benchmarks' own logic, without peers or the real data
# (issue 36), in the fast set:
#  1. bench/interleave.sh: stat3's median, min, max and count (odd, even,
#     none); interleave's order A1 B1 A2 B2 A3 B3; side_table's ratio
#     (Orion-C over the peer for a rate, the peer over Orion-C for
#     seconds), "-" where a side is missing, "anchor" on an anchor's
#     ratio, the spread only where there are several runs.
#  2. bench/mf.sh on a tiny ratings file: without LIBMF its ratio is the
#     anchors' and says "anchor", in its table and in its side-by-side row;
#     with LIBMF naming a stand-in build (mf-train and mf-predict scripts
#     that log their calls), LIBMF runs RUNS times, each after one more of
#     Orion-C's runs, its RMSE is mf-predict's, and the row names LIBMF
#     without "anchor"; a LIBMF folder without the programs, and RUNS=0,
#     are refused naming the variable.
#  3. bench/lda.sh on a tiny corpus: with stand-ins for WarpLDA (its
#     per-iteration lines) and MALLET (its <10> and <20> LL lines, 0.1 s
#     apart), each runs once a round after ours, their seconds per sweep,
#     final LLs and WarpLDA's seconds to its own final LL are read from
#     their logs, and the rows name them; without them the rows are the
#     anchors', marked so, and a K the anchors lack has none.
#  4. bench/lr.sh on a tiny synthetic set with a stand-in liblinear: the
#     CPU seconds column, the load after the runs, SYNTH_DIR made once and
#     then reused.
# The scripts run from a scratch tree of links (bench, apps, the built
# programs), so a VPATH build (make distcheck) runs them too.
src=${ORION_SRCDIR:-.}
drv=${ORION_DRIVER:-$src/orion-driver}
exe=${ORION_EXECUTOR:-$src/orion-executor}
. "$src/t/skip.sh"
[ -x "$drv" ] && [ -x "$exe" ] || skip "no built orion-driver and orion-executor"
command -v bash > /dev/null || skip "no bash"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/  /'; fail=1; }
check() { # check WHAT GOT WANT
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got:  $2
want: $3"; fi
}

# 1. The library.
lib() { bash -c ". '$src/bench/interleave.sh'; $1"; }
printf '3\n1\n2\n' > "$tmp/odd"
printf '4\n1\n3\n2\n' > "$tmp/even"
: > "$tmp/none"
check "stat3 of 3 values" "$(lib "stat3 $tmp/odd")" "2 1 3 3"
check "stat3 of 4 values: the mean of the middle two" "$(lib "stat3 $tmp/even")" "2.5 1 4 4"
check "stat3 of none" "$(lib "stat3 $tmp/none")" "nan nan nan 0"
check "spread_of" "$(lib "spread_of '0.5 0.25 2 3'; spread_of -")" "0.5 [0.25-2]
-"
check "interleave takes turns, round by round" \
  "$(lib "a() { printf 'A%s ' \"\$1\"; }; b() { printf 'B%s ' \"\$1\"; }; interleave 3 a b")" \
  "A1 B1 A2 B2 A3 B3 "
check "interleave stops at a failure" \
  "$(lib "a() { printf 'A%s ' \"\$1\"; }; b() { [ \"\$1\" != 2 ]; }; interleave 3 a b; echo \$?")" \
  "A1 A2 1"
lib "runs_count x.sh 0" > "$tmp/o" 2>&1
check "RUNS=0 refused" "$? $(cat "$tmp/o")" "2 bench/x.sh: RUNS must be 1 or more, not '0'"
lib "side_row $tmp/rows 'MF K=32' LIBMF Mupd/s higher '50 40 60 3' '75 70 80 3' 'RMSE 0.8630' 'RMSE 0.8600' '1.00 2.00 3.00 / 1.50 2.00 3.00'
     side_row $tmp/rows 'LDA kos K=100' WarpLDA 's to its LL' lower '2 1.5 3 3' '0.5 0.4 0.6 3' 'LL -9.1' 'LL -8.6' '4 4 4 / 5 5 5'
     side_row $tmp/rows 'LDA kos K=100' 'MALLET (anchor)' s/sweep lower '0.022 0.022 0.022 1' '0.011 0.01 0.012 3' 'LL -8.507' 'LL -8.6' '4 4 4 / 5 5 5'
     side_row $tmp/rows 'LDA kos K=100' WarpLDA 's to its LL' lower '2 1.5 3 3' - 'LL -9.1' 'LL -8.6' '4 4 4 / 5 5 5'
     side_row '' ignored x y higher - - - - -
     side_table $tmp/rows" > "$tmp/table"
want='workload               peer               measure      peer med [min-max]       Orion-C med [min-max]    ratio (>1 ours) peer quality   Orion-C quality load 1-min before/after
MF K=32                LIBMF              Mupd/s       50 [40-60]               75 [70-80]               1.50            RMSE 0.8630    RMSE 0.8600    1.00/1.50
LDA kos K=100          WarpLDA            s to its LL  2 [1.5-3]                0.5 [0.4-0.6]            4.00            LL -9.1        LL -8.6        4/5
LDA kos K=100          MALLET (anchor)    s/sweep      0.022                    0.011 [0.01-0.012]       2.00 anchor     LL -8.507      LL -8.6        4/5
LDA kos K=100          WarpLDA            s to its LL  2 [1.5-3]                -                        -               LL -9.1        LL -8.6        4/5'
check "side_table: ratios, anchor, missing side, spread" "$(cat "$tmp/table")" "$want"

# 2. bench/mf.sh on a tiny data set, from a tree of links.
root=$tmp/root
mkdir -p "$root" "$tmp/data/movielens-1m" "$tmp/libmf" "$tmp/empty"
ln -s "$(cd "$src" && pwd)/bench" "$root/bench"
ln -s "$(cd "$src" && pwd)/apps" "$root/apps"
ln -s "$drv" "$root/orion-driver"
ln -s "$exe" "$root/orion-executor"
awk 'BEGIN { s = 7; for (i = 0; i < 600; i++) { s = (s * 16807) % 2147483647
       u = s % 40 + 1; s = (s * 16807) % 2147483647; v = s % 30 + 1
       printf "%d %d %d\n", u, v, (u + v) % 5 + 1 } }' > "$tmp/r.txt"
head -540 "$tmp/r.txt" | gzip > "$tmp/data/movielens-1m/ratings.train.txt.gz"
tail -60 "$tmp/r.txt" | gzip > "$tmp/data/movielens-1m/ratings.test.txt.gz"
# A stand-in LIBMF: mf-train sleeps 0.05 s per iteration and logs its call
# with the number of Orion-C runs done by then (their metrics files in
# mf.sh's temporary folder, under TMPDIR).
mkdir "$tmp/tmpdir"
cat > "$tmp/libmf/mf-train" <<'EOS'
#!/bin/sh
t=1; while [ $# -gt 2 ]; do [ "$1" = -t ] && t=$2; shift; done
o=$(ls "$TMPDIR"/*/m_32_fast_*.jsonl 2>/dev/null | wc -l)
echo "train -t $t $(wc -l < "$1") after $o" >> "$(dirname "$0")/calls"
sleep "$(awk -v t="$t" 'BEGIN { print 0.05 * t }')"
echo model > "$2"
EOS
cat > "$tmp/libmf/mf-predict" <<'EOS'
#!/bin/sh
echo "predict $(wc -l < "$1")" >> "$(dirname "$0")/calls"
echo "RMSE = 0.9512"
EOS
chmod +x "$tmp/libmf/mf-train" "$tmp/libmf/mf-predict"

mf() { env TMPDIR="$tmp/tmpdir" ORION_DATA="$tmp/data" EPOCHS=3 KS=32 MODES=fast RUNS=2 "$@" bash "$root/bench/mf.sh"; }

mf SIDE_ROWS="$tmp/anchor.rows" > "$tmp/o" 2>&1
st=$?
out=$(cat "$tmp/o")
if [ $st -eq 0 ] && echo "$out" | grep -q "LIBMF: not run (set LIBMF=DIR)" &&
   echo "$out" | grep -Eq '^  32 fast .* [0-9.]+ anchor ' &&
   [ "$(cut -f2 "$tmp/anchor.rows")" = "LIBMF (anchor)" ] &&
   [ "$(cut -f5 "$tmp/anchor.rows")" = "94.5 94.5 94.5 1" ] &&
   cut -f6 "$tmp/anchor.rows" | grep -Eq '^[0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+ 2$' &&
   bash -c ". '$src/bench/interleave.sh'; side_table '$tmp/anchor.rows'" | grep -q ' anchor '; then
  ok "mf.sh without LIBMF: the anchors' ratio, marked anchor"
else
  bad "mf.sh without LIBMF (status $st)" "$out
$(cat "$tmp/anchor.rows" 2>/dev/null)"
fi

mf SIDE_ROWS="$tmp/libmf.rows" LIBMF="$tmp/libmf" > "$tmp/o" 2>&1
st=$?
out=$(cat "$tmp/o")
calls=$(tr '\n' ';' < "$tmp/libmf/calls")
if [ $st -eq 0 ] && [ "$calls" = "train -t 1 540 after 1;train -t 3 540 after 1;predict 60;train -t 1 540 after 2;train -t 3 540 after 2;predict 60;" ] &&
   echo "$out" | grep -q "run in this script; 2 rounds" &&
   echo "$out" | grep -Eq '^  32 LIBMF .* 1\.000 .* 0\.9512 ' &&
   ! echo "$out" | grep -q anchor &&
   [ "$(cut -f2 "$tmp/libmf.rows")" = LIBMF ] &&
   [ "$(cut -f7 "$tmp/libmf.rows")" = "RMSE 0.9512" ]; then
  ok "mf.sh with LIBMF: its runs after each of ours, its RMSE, no anchor"
else
  bad "mf.sh with LIBMF (status $st, calls $calls)" "$out"
fi
mf LIBMF="$tmp/empty" > "$tmp/o" 2>&1
check "mf.sh with LIBMF naming no build" "$? $(cat "$tmp/o")" \
  "2 bench/mf.sh: LIBMF=$tmp/empty does not hold the mf-train and mf-predict programs"
mf RUNS=0 > "$tmp/o" 2>&1
check "mf.sh with RUNS=0" "$? $(cat "$tmp/o")" "2 bench/mf.sh: RUNS must be 1 or more, not '0'"

# 3. bench/lda.sh on a tiny corpus, with stand-in peers.
mkdir -p "$tmp/data/uci-bow-kos" "$tmp/warp" "$tmp/mallet"
awk 'BEGIN { s = 11
       for (d = 1; d <= 30; d++) for (j = 0; j < 10; j++) {
         s = (s * 16807) % 2147483647; w = (d % 4) * 10 + s % 10 + 1
         if (!seen[d, w]++) l[n++] = d " " w " " (s % 3 + 1) }
       print 30; print 40; print n; for (i = 0; i < n; i++) print l[i] }' |
  gzip > "$tmp/data/uci-bow-kos/docword.kos.txt.gz"
# WarpLDA: ITERS lines of 0.01 s each, the LL rising to -9.0.
cat > "$tmp/warp/warplda" <<'EOS'
#!/bin/sh
n=0; for a; do case $a in --niter) n=1 ;; *) [ "$n" = 1 ] && n=$a ;; esac; done
o=$(ls "$TMPDIR"/*/m_kos_*.jsonl 2>/dev/null | wc -l)
echo "warplda after $o" >> "$(dirname "$0")/calls"
awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++)
  printf "Iteration %d, 0.010000 s, 1.00 Mtokens/s, log_likelihood (per token) %.6f\n", i, -9 - (n - i) * 0.05 }'
EOS
printf '#!/bin/sh\necho format >> "$(dirname "$0")/calls"\n' > "$tmp/warp/format"
# MALLET: its <10> and <20> lines 0.1 s apart (read by lda.sh as they
# arrive: under load 0.09-0.11 s, so its s/sweep is checked as 0.0x).
cat > "$tmp/mallet/mallet" <<'EOS'
#!/bin/sh
if [ "$1" = import-file ]; then echo import >> "$(dirname "$0")/calls"; exit 0; fi
o=$(ls "$TMPDIR"/*/m_kos_*.jsonl 2>/dev/null | wc -l)
echo "mallet after $o" >> "$(dirname "$0")/calls"
echo "<10> LL/token: -9.5"; sleep 0.1; echo "<20> LL/token: -9.2"
EOS
chmod +x "$tmp/warp/warplda" "$tmp/warp/format" "$tmp/mallet/mallet"
lda() { env TMPDIR="$tmp/tmpdir" ORION_DATA="$tmp/data" ITERS=20 CORPORA=kos KS=4 RUNS=2 "$@" bash "$root/bench/lda.sh"; }

lda SIDE_ROWS="$tmp/lda.rows" WARPLDA="$tmp/warp" MALLET="$tmp/mallet/mallet" > "$tmp/o" 2>&1
st=$?
out=$(cat "$tmp/o")
calls=$(tr '\n' ';' < "$tmp/warp/calls")$(tr '\n' ';' < "$tmp/mallet/calls")
wrow=$(grep '^kos .* WarpLDA ' "$tmp/o")
mrow=$(grep '^kos .* MALLET ' "$tmp/o")
if [ $st -eq 0 ] && [ "$calls" = "format;warplda after 1;warplda after 2;import;mallet after 1;mallet after 2;" ] &&
   echo "$wrow" | grep -Eq ' 0\.01 \[0\.01-0\.01\] .* -9\.0000 +0\.2 \[0\.2-0\.2\]$' &&
   echo "$mrow" | grep -Eq ' 0\.0[0-9]* \[.* -9\.2000 ' &&
   [ "$(cut -f2,3,7 "$tmp/lda.rows" | tr '\t\n' ',;')" = "WarpLDA,s to its LL,LL -9.0000;WarpLDA,s/sweep,LL -9.0000;MALLET,s/sweep,LL -9.2000;" ] &&
   ! echo "$out" | grep -q anchor; then
  ok "lda.sh with WarpLDA and MALLET: their runs after each of ours, their logs read"
else
  bad "lda.sh with WarpLDA and MALLET (status $st, calls $calls)" "$out
$(cat "$tmp/lda.rows" 2>/dev/null)"
fi
lda SIDE_ROWS="$tmp/lda_anchor.rows" KS="4 100" RUNS=1 > "$tmp/o" 2>&1
st=$?
if [ $st -eq 0 ] && grep -q '^kos       4 .*- (no anchor)' "$tmp/o" &&
   grep -q '^kos     100 .*x (anchor)' "$tmp/o" &&
   [ "$(cut -f1,2,3,5 "$tmp/lda_anchor.rows" | tr '\t\n' ',;')" = "LDA kos K=100,WarpLDA (anchor),s to its LL,0.83 0.83 0.83 1;LDA kos K=100,MALLET (anchor),s/sweep,0.022 0.022 0.022 1;" ]; then
  ok "lda.sh without peers: the anchors' rows, marked anchor, none at a K without one"
else
  bad "lda.sh without peers (status $st)" "$(cat "$tmp/o")
$(cat "$tmp/lda_anchor.rows" 2>/dev/null)"
fi
lda WARPLDA="$tmp/empty" > "$tmp/o" 2>&1
check "lda.sh with WARPLDA naming no build" "$? $(cat "$tmp/o")" \
  "2 bench/lda.sh: WARPLDA=$tmp/empty does not hold the warplda and format programs"
# 4. bench/lr.sh on a tiny synthetic set, with a stand-in liblinear
#    (train writes a model, predict prints liblinear's accuracy line):
#    each side's CPU seconds and their ratio, the load average after the
#    runs, and SYNTH_DIR: the set made on the first run, reused (not made
#    again) on the second.
mkdir -p "$tmp/ll"
printf '#!/bin/sh\nfor m; do :; done\necho model > "$m"\n' > "$tmp/ll/train"
printf '#!/bin/sh\necho "Accuracy = 50%% (1/2)"\n' > "$tmp/ll/predict"
chmod +x "$tmp/ll/train" "$tmp/ll/predict"
for round in 1 2; do
  (cd "$root" && LIBLINEAR=$tmp/ll SYNTH_DIR=$tmp/synth RUNS=1 ROWS=2000 \
    FEATURES=300 WORKLOADS=synth ORION_SYNTH_ARGS="--epochs 2 --tier c" \
    bash bench/lr.sh) > "$tmp/lr$round.out" 2>&1 ||
    bad "bench/lr.sh round $round ran" "$(cat "$tmp/lr$round.out")"
done
check "bench/lr.sh: SYNTH_DIR made the set, then reused it" \
  "$(grep -c 'synthetic set of 2000 x 300 made in' "$tmp/lr1.out") $(grep -c 'synthetic set of 2000 x 300 reused from' "$tmp/lr2.out") $(ls "$tmp/synth")" \
  "1 1 synth-2000x300x10.test
synth-2000x300x10.train"
check "bench/lr.sh: a cpu s column for liblinear and both executor counts, then the executors' CPU per epoch" \
  "$(awk '/^side/ { print $(NF-5), $(NF-4), $(NF-3), $(NF-2), $(NF-1), $NF }
          /^(liblinear |Orion-C)/ { ok = $(NF-2) ~ /^[0-9]+\.[0-9]+$/ && $(NF-1) ~ /^[0-9]+\.[0-9][0-9]$/ &&
            $NF ~ (/^liblinear/ ? "^-$" : "^([0-9]+\\.[0-9]+|nan)$"); print $1, ok }' "$tmp/lr1.out")" \
  "cpu s vs liblin exec cpu/ep
liblinear 1
Orion-C, 1
Orion-C, 1"
check "bench/lr.sh: liblinear's accuracy read from predict, the load after" \
  "$(grep -c '^liblinear .* 0\.5000 ' "$tmp/lr1.out") $(grep -c '^load average after the runs: ' "$tmp/lr1.out")" "1 1"

exit $fail
