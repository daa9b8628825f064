#!/bin/sh
# bench/scale.sh's own logic without root, runs or the real data (issue
# 35), in the fast set:
#  1. scale_summary on a stand-in --loop-metrics file (3 epochs; a setup
#     loop called once with the most seconds, the training loop and a test
#     loop once an epoch, 2 hosts, --predict lines among them): the
#     training loop chosen, epoch 1 left out, its seconds, the bytes and
#     the driver's CPU an epoch, each host's compute/wait/idle fractions,
#     as worked by hand; a file without loop lines, and too few epochs,
#     refused naming the file; scale_predicted picks the training loop's
#     second-pass prediction for N hosts (times its calls an epoch).
#  2. scale_table on stand-in summaries (2 runs on 1 and on 2 hosts, none
#     on 4): medians, spread, strong and weak efficiency, MB per host, the
#     driver's byte share and CPU against one host's, the split, predicted
#     / measured, each host's split; the goals: met, missed with the bound
#     (the largest part that is not computing), not measured; the driver's;
#     each host's CPU seconds from bench/netcluster.sh's lines.
#  3. first_lines and docword_part (weak scaling's data): the fraction's
#     lines, and a corpus's first documents with its header rewritten.
#  4. bench/scale.sh's arguments: DRY_RUN=1 lists the runs (strong: the
#     same data on every N; weak: in proportion to N); a bad APPS, NS, K,
#     RUNS, EPOCHS, WEAK, QUICK, NETFLIX_SCALE, Q, RUN_TIMEOUT, HEARTBEAT or LIBMF
#     without mf-train
#     refused (exit 2) naming the variable.
src=${ORION_SRCDIR:-.}
. "$src/t/skip.sh"
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
asrc=$(cd "$src" && pwd)
lib() { (cd "$tmp" && bash -c ". '$asrc/bench/scale_lib.sh'; $1" 2>&1); }

# 1. One run's summary.
line() { # line LOOP CALL SECONDS PEER DRIVER CPU-TOTAL COMPUTE WAIT IDLE
  printf '{"call":%s,"driver_cpu_s":0.1,"driver_cpu_total_s":%s,"exec_compute_s":"%s","exec_idle_s":"%s","exec_wait_s":"%s","loop":"t/x.lua:%s","loop_driver_bytes":%s,"loop_executors":2,"loop_peer_bytes":%s,"loop_seconds":%s}\n' \
    "$2" "$6" "$7" "$9" "$8" "$1" "$5" "$4" "$3"
}
{
  line 5 1 9 0 100 1.0 "4 4" "0 0" "0 0"
  line 10 1 2.0 1000 10 1.5 "1.0 1.0" "0.5 0.5" "0.2 0.2"
  echo '{"epoch":1,"peer_bytes":1100,"seconds":2.6}'
  line 20 1 0.5 100 5 1.6 "0.1 0.1" "0 0" "0 0"
  line 10 2 1.0 800 8 1.7 "0.6 0.4" "0.2 0.3" "0.1 0.2"
  echo '{"bottleneck":"rows in flight","loop":"t/x.lua:10","pass":2,"predict":"2x1c:200mbit","predicted_pass_seconds":0.9}'
  echo '{"bottleneck":"compute","loop":"t/x.lua:10","pass":1,"predict":"2x1c:200mbit","predicted_pass_seconds":3}'
  echo '{"bottleneck":"compute","loop":"t/x.lua:20","pass":2,"predict":"2x1c:200mbit","predicted_pass_seconds":7}'
  echo '{"bottleneck":"compute","loop":"t/x.lua:10","pass":2,"predict":"4x1c:200mbit","predicted_pass_seconds":0.5}'
  line 20 2 0.5 100 2 1.8 "0.1 0.1" "0 0" "0 0"
  line 10 3 1.2 900 11 2.0 "0.6 0.6" "0.3 0.3" "0.2 0.1"
  line 20 3 0.4 100 5 2.2 "0.1 0.1" "0 0" "0 0"
  line 30 1 0.3 7777 7777 2.9 "0.1 0.1" "0 0" "0 0"
} > "$tmp/m.jsonl"
# Epochs 2 and 3 of line 10: (1.0 + 1.2) / 2 s; bytes from its second
# call to line 20's last (line 30, once at the end, left out):
# (800 + 100 + 900 + 100) / 2 and (8 + 2 + 11 + 5) / 2; CPU from the end
# of epoch 1 (1.6) to 2.2, over 2 epochs; host 1 computes 1.2 of 2.2 s,
# waits 0.5, idles 0.3.
check "scale_summary: the training loop, epochs 2.., per epoch" \
  "$(lib "scale_summary m.jsonl 3")" \
  "t/x.lua:10 1.100000 950 13 0.300000 1 0.545:0.227:0.136 0.455:0.273:0.136"
check "scale_summary: fewer than 2 epochs of calls refused" \
  "$(lib "scale_summary m.jsonl 4; echo rc=\$?")" \
  "bench/scale.sh: m.jsonl: no loop called in each of 4 epochs
rc=1"
echo '{"epoch":1,"seconds":2}' > "$tmp/e.jsonl"
check "scale_summary: no loop lines refused" "$(lib "scale_summary e.jsonl 3; echo rc=\$?")" \
  "bench/scale.sh: e.jsonl: no --loop-metrics lines
rc=1"
check "scale_predicted: the second pass, times the calls an epoch" \
  "$(lib "scale_predicted m.jsonl t/x.lua:10 2 2; scale_predicted m.jsonl t/x.lua:10 4 1; scale_predicted m.jsonl t/x.lua:10 8 1")" \
  "1.800000 rows_in_flight
0.500000 compute
nan -"

# 2. The table and the goals.
echo "L 2.0 0 100 0.02 1 0.900:0.000:0.050" > "$tmp/w-1-1.sum"
echo "L 2.2 0 100 0.02 1 0.800:0.000:0.100" > "$tmp/w-1-2.sum"
echo "L 1.2 1000000 10000 0.03 1 0.600:0.200:0.100 0.500:0.300:0.100" > "$tmp/w-2-1.sum"
echo "L 1.4 3000000 30000 0.01 1 0.600:0.200:0.000 0.700:0.100:0.100" > "$tmp/w-2-2.sum"
echo 3.5 > "$tmp/w-1.load"
echo 3.9 > "$tmp/w-2.load"
echo "1.000000 rows_in_flight" > "$tmp/w-2.pred"
# 2 hosts: median 1.3 s, spread 0.2 / 1.3, efficiency 2.1 / (2 x 1.3),
# 2 MB / 2 hosts, 20 kB of 2.02 MB through the driver, its 0.02 CPU-s of
# 0.2 x 1.3, compute 0.6, wait 0.2, idle 0.075, the rest outside.
check "scale_table: strong" "$(lib 'scale_table . w strong 0.2 "1 2 4"')" \
"hosts   epoch s spread    eff MB/ep/host  drv B% drv CPU cmp/wait/idle/o    pred s    p/m  load  bottleneck
    1    2.1000   0.10   1.00       0.00 100.00%    4.8%        85/0/8/7         -      -   3.5  -
    2    1.3000   0.15   0.81       1.00   0.99%    7.7%      60/20/8/12    1.0000   0.77   3.9  rows_in_flight
  1 host, each host's compute/wait/idle %: 85/0/8
  2 hosts, each host's compute/wait/idle %: 60/20/5 60/20/10"
check "scale_table: the goals' figures" "$(cat "$tmp/w.eff")" \
"1 1.0000 0.0000 0.0750 0.0750 100.0000 4.7619
2 0.8077 0.2000 0.0750 0.1250 0.9901 7.6923"
check "scale_goal: missed with its bound, met, not measured; the driver's" \
  "$(lib 'scale_goal "mf K=128 strong" w.eff 2 0.85; scale_goal "mf K=128 strong" w.eff 2 0.8; scale_goal x w.eff 8 0.8; scale_driver_goal "mf driver" w.eff 2')" \
"mf K=128 strong                               0.81 >= 0.85  missed, bound: waiting for rows 20%
mf K=128 strong                               0.81 >= 0.80  met
x                                                - >= 0.80  not measured (no run on 8 hosts)
mf driver                                    bytes 0.99% < 1% met; CPU 7.7% of a host < 5% missed"
check "scale_table: weak efficiency T(1) / T(N)" \
  "$(lib 'scale_table . w weak 0.2 "1 2"' | sed -n 3p)" \
  "    2    1.3000   0.15   1.62       1.00   0.99%    7.7%      60/20/8/12    1.0000   0.77   3.9  rows_in_flight"

# What the hosts' quotas gave them: netcluster's last lines per run, the
# mean of each host's CPU seconds over the runs against N x Q x wall.
printf 'netcluster: executor 1 used 2.500 CPU seconds\nnetcluster: executor 0 used 1.000 CPU seconds\nnetcluster: the driver used 0.250 CPU seconds\n' > "$tmp/e1"
printf 'netcluster: executor 0 used 3.000 CPU seconds\n' > "$tmp/e2"
check "scale_cpu_of: each executor's and the driver's, - where missing" \
  "$(lib 'scale_cpu_of e1 2; scale_cpu_of e2 2')" "1.000 2.500 0.250
3.000 - -"
lib 'scale_cpu_of e1 2 > w-2-1.cpu; scale_cpu_of e2 2 > w-2-2.cpu' > /dev/null
echo 10 > "$tmp/w-2-1.wall"
echo 20 > "$tmp/w-2-2.wall"
# host 0: (1 + 3) / 2; host 1: 2.5 (one run); 4.5 of 2 x 0.2 x 15 s;
# with none reported, no share.
echo "- -" > "$tmp/w-1-1.cpu"
echo 5 > "$tmp/w-1-1.wall"
check "scale_cpu: per host, the driver, the share of the quotas" \
  "$(lib 'scale_cpu . w "1 2" 0.2')" \
  "  1 host, each host's CPU s (whole run): -; the driver: -
  2 hosts, each host's CPU s (whole run): 2.0 2.5; the driver: 0.2; the hosts got 75% of N x Q x 15.0 s"

# 3. Weak scaling's data.
printf '1 1 5\n2 1 4\n3 2 3\n4 3 1\n' | gzip > "$tmp/r.gz"
check "first_lines: half of a gzip file" "$(lib 'first_lines r.gz half 0.5; cat half')" "1 1 5
2 1 4"
printf '4\n6\n7\n1 1 2\n1 3 1\n2 2 1\n2 6 4\n3 1 1\n4 5 2\n4 6 1\n' > "$tmp/dw.txt"
check "docword_part: the first half of the documents, the header rewritten" \
  "$(lib 'docword_part dw.txt part 0.5; cat part')" "2
6
4
1 1 2
1 3 1
2 2 1
2 6 4"

# 4. The arguments, from a scratch tree of links (no build, no runs).
root=$tmp/root
mkdir -p "$root" "$tmp/fm" "$tmp/lm"
: > "$tmp/fm/train-images-idx3-ubyte.gz"
ln -s "$asrc/bench" "$root/bench"
printf '#!/bin/sh\n' > "$root/orion-driver"
cp "$root/orion-driver" "$root/orion-executor"
chmod +x "$root/orion-driver" "$root/orion-executor"
run() { (cd "$root" && env FASHION_DIR="$tmp/fm" ORION_DATA="$tmp/none" CI= DRY_RUN=1 "$@" bash bench/scale.sh 2>&1); }
check "DRY_RUN: strong and weak runs, data in proportion to N" \
  "$(run WEAK=1 NS="1 2 4" APPS=mf-netflix,dnn MF_KS=32 NETFLIX_SCALE=0.5 EPOCHS=3 | sed 's/.*| \(.* hosts\) | /\1 /')" \
"1 hosts apps/mf/mf.lua --synthetic 240000,17700,12500000 --k 32 --epochs 3
2 hosts apps/mf/mf.lua --synthetic 240000,17700,12500000 --k 32 --epochs 3
4 hosts apps/mf/mf.lua --synthetic 240000,17700,12500000 --k 32 --epochs 3
1 hosts apps/mf/mf.lua --synthetic 60000,17700,3125000 --k 32 --epochs 3
2 hosts apps/mf/mf.lua --synthetic 120000,17700,6250000 --k 32 --epochs 3
4 hosts apps/mf/mf.lua --synthetic 240000,17700,12500000 --k 32 --epochs 3
1 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 60000
2 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 60000
4 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 60000
1 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 15000
2 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 30000
4 hosts apps/dnn/dnn.lua --data fashion-mnist:$tmp/fm --epochs 3 --shards 4 --limit 60000"
check "DRY_RUN: the workloads' labels, K lists, QUICK's defaults" \
  "$(run QUICK=1 APPS=mf-netflix MF_KS="32 128" | cut -d'|' -f1-3 | sed 's/ *$//')" \
"MF Netflix-shaped x0.01 (4800 users x 17700 items, 250000 ratings), K=32 | strong | 1 hosts
MF Netflix-shaped x0.01 (4800 users x 17700 items, 250000 ratings), K=32 | strong | 2 hosts
MF Netflix-shaped x0.01 (4800 users x 17700 items, 250000 ratings), K=128 | strong | 1 hosts
MF Netflix-shaped x0.01 (4800 users x 17700 items, 250000 ratings), K=128 | strong | 2 hosts"
refused() { # refused WHAT WANT VAR=VALUE...
  what=$1 want=$2
  shift 2
  got=$(run APPS=mf-netflix "$@")
  rc=$?
  case "$rc $got" in
    "2 bench/scale.sh: $want"*) ok "refused: $what" ;;
    *) bad "refused: $what" "got: $rc $got
want: 2 bench/scale.sh: $want" ;;
  esac
}
refused "an unknown app" "APPS: unknown workload 'svm'" APPS=mf-netflix,svm
refused "NS falling" "NS must rise" NS="4 2"
refused "NS not a count" "NS: 'x' is not a host count" NS="1 x"
refused "a K" "MF_KS: '3a' is not a K" MF_KS="32 3a"
refused "RUNS=0" "RUNS must be 1 or more, not '0'" RUNS=0
refused "EPOCHS=1" "EPOCHS must be 2 or more" EPOCHS=1
refused "WEAK=2" "WEAK must be 0 or 1, not '2'" WEAK=2
refused "QUICK=yes" "QUICK must be 0 or 1, not 'yes'" QUICK=yes
refused "NETFLIX_SCALE=2" "NETFLIX_SCALE must be above 0 and at most 1, not '2'" NETFLIX_SCALE=2
refused "Q=0" "Q must be a number of CPUs above 0 (0.2), not '0'" Q=0
refused "RUN_TIMEOUT=soon" "RUN_TIMEOUT must be a number of seconds, not 'soon'" RUN_TIMEOUT=soon
refused "HEARTBEAT=5s" "HEARTBEAT must be a number of seconds, not '5s'" HEARTBEAT=5s
refused "LIBMF without mf-train" "LIBMF=$tmp/lm does not hold an mf-train program" LIBMF="$tmp/lm"
exit $fail
