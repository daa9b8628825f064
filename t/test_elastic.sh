#!/bin/sh
# Elastic executors (issue 35, section 3), in the fast set:
#
#  1. MF (synthetic, 8 epochs, a checkpoint every epoch) on 3 local
#     executors with --elastic: one is killed with -9 after the checkpoint
#     of step 3 (2 trials, a different executor each): exit 0, the log
#     names the executor and says the job goes on with 2 executors from
#     its newest checkpoint, the RMSE of every epoch and the saved
#     model's files (--save) are the undisturbed run's, bit for bit, and
#     no process of the job is left.
#  1c. Kept loads: MF reading its ratings from files (--train, --test) on
#     3 executors, one killed after the checkpoint of step 3: the
#     re-formed job takes 2 of each file's 3 parts from the executors
#     that kept them (the log says so) and parses only the lost one's,
#     with the undisturbed run's RMSEs and model; the same with the
#     training file touched before the kill (another digest): every part
#     parsed again, the same result.
#  1d. No checkpoint folder: the same MF on files (60 epochs), --elastic
#     without --checkpoint-dir, one executor killed after epoch 3: the
#     job starts again from the beginning on 2 (the log says so), taking
#     the kept parts, and ends with the undisturbed run's RMSEs and model.
#  1b. One executor stopped (SIGSTOP) and another killed at once: the
#     stopped one is expected back and never comes; after
#     --register-timeout the job goes on with the 2 that came, with the
#     same result, and the stopped process does not outlive the job.
#  2. --min-executors 3: the same kill ends the job with exit 3 and a
#     message naming the lost executor's host and the count left.
#  3. --launcher manual, 2 executors started by hand, a third started with
#     --join after epoch 2, in a job that writes no checkpoint: it is
#     taken at the next loop boundary (the log says the job goes on with
#     3 executors there, nothing redone; the epochs' records count 2
#     executors, then 3), exit 0, and every epoch's RMSEs and the model
#     are the undisturbed run's, stdout printing each epoch once; every
#     executor exits with the job.  The same with the local launcher:
#     the executors it started are still reaped at the end.  A job without --elastic refuses a
#     joiner (the driver says why; the joiner gives up with exit 3).
#  3b. The same over --hosts (a stand-in ssh): a loss re-forms the job,
#     a second one below --min-executors ends it with exit 3, and what the
#     executors write on stderr after the driver ran itself again still
#     reaches the driver's stderr.
#  4. Usage errors: --min-executors without --elastic, --min-executors
#     above the executors.
# Every wait has a timeout.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh" # reap, free_port
drv=${ORION_DRIVER:-$src/orion-driver}
exe=$(dirname "$drv")/orion-executor
tmp=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2':
$(cat "$1")"; }

# The executors whose parent is $1.
children() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$1" '$4 == p && $2 == "(orion-executor)" { print $1 }'
}
# The processes whose environment carries this job's mark.
job_procs() {
  grep -l "ELASTIC_MARK=$1\$" /proc/[0-9]*/environ 2>/dev/null |
    sed 's|/proc/\([0-9]*\)/environ|\1|' | grep -v "^$$\$" || true
}
# wait_for_line FILE TEXT SECONDS PID
wait_for_line() {
  n=0
  until grep -qF "$2" "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt $(($3 * 100)) ] && return 1
    kill -0 "$4" 2>/dev/null || return 1
    sleep 0.01
  done
}
# The last line printed for each epoch (a re-formed job prints the redone
# epochs again): epoch, train and test RMSE.
rmses() {
  awk '$1 ~ /^[0-9]+$/ && NF == 4 { r[$1] = $3 " " $4; if ($1 > m) m = $1 } END { for (e = 1; e <= m; e++) print e, r[e] }' "$1"
}
same_model() { # PREFIX_A PREFIX_B
  for f in W H; do
    cmp -s "$1.$f" "$2.$f" || fail "model file $2.$f differs from $1.$f"
  done
}
left() {
  n=0
  while [ -n "$(job_procs "$1")" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
  [ -z "$(job_procs "$1")" ] || fail "$1: processes left: $(job_procs "$1")"
}

MF="$src/apps/mf/mf.lua --synthetic 3000,2000,200000 --k 16 --epochs 8"
# For the cases that act on a running job without comparing its result:
# long enough that the job cannot end before the test acts, under load.
MF_LONG="$src/apps/mf/mf.lua --synthetic 3000,2000,200000 --k 16 --epochs 60"
cd "$tmp" || exit 1
"$drv" --quiet --executors 3 $MF --save base > base.out 2>&1 ||
  fail "undisturbed run: $(cat base.out)"
rmses base.out > base.rmse
[ "$(grep -c ' [0-9]' base.rmse)" = 8 ] || fail "undisturbed run: $(cat base.out)"

# kill_trial NAME NTH TEXT BASE ARGS...: runs the driver with ARGS and
# --save NAME (its checkpoint folder, if any, named ckNAME), kills its
# NTH executor with -9 once its stderr shows TEXT (after running
# $before_kill, if set), tried again at most 3 times when the run ended
# first; then checks exit 0, that every epoch's RMSEs and the saved model
# are BASE's, and that no process of the run is left.
kill_trial() {
  name=$1 nth=$2 text=$3 kbase=$4
  shift 4
  for try in 1 2 3; do
    rm -rf "ck$name"
    ELASTIC_MARK=$name "$drv" "$@" --save $name > $name.out 2> $name.err &
    pid=$!
    wait_for_line $name.err "$text" 60 $pid
    [ -n "${before_kill:-}" ] && $before_kill
    victim=$(children $pid | sed -n "${nth}p")
    [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null && break
    reap $pid 120
  done
  [ -n "$victim" ] || fail "$name: the run ended before an executor could be killed, 3 times"
  reap $pid 120
  rc=$?
  [ $rc = 0 ] || fail "$name: exit $rc: $(cat $name.err)"
  rmses $name.out > $name.rmse
  cmp -s $kbase.rmse $name.rmse ||
    fail "$name: RMSEs differ from the undisturbed run's: $(diff $kbase.rmse $name.rmse)"
  same_model $kbase $name
  left $name
}

# ---- 1. an executor killed -------------------------------------------------
for trial in 1 2; do
  kill_trial k$trial $trial "checkpoint of step 3 written" base --executors 3 \
    --elastic --checkpoint-dir ckk$trial $MF --checkpoint-every 1
  has k$trial.err "was killed by signal 9"
  has k$trial.err "lost; going on with 2 executors from the checkpoint of step"
  has k$trial.err "orion: resumed from the checkpoint of step"
  has k$trial.out "== elastic: 2 executors, from the checkpoint of step"
done

# ---- 1c. the survivors keep the parts of files they parsed ------------------
awk 'BEGIN { s = 7; for (n = 0; n < 60000; n++) {
  s = (s * 1103515245 + 12345) % 2147483648; u = s % 2000 + 1
  s = (s * 1103515245 + 12345) % 2147483648; i = s % 1500 + 1
  s = (s * 1103515245 + 12345) % 2147483648; r = s % 5 + 1
  print u, i, r > (n % 10 == 0 ? "f.test" : "f.train") } }'
MFF="$src/apps/mf/mf.lua --train f.train --test f.test --k 16 --epochs 8"
"$drv" --quiet --executors 3 $MFF --save fbase > fbase.out 2>&1 ||
  fail "undisturbed run on files: $(cat fbase.out)"
rmses fbase.out > fbase.rmse
touch_train() { touch -d '1 minute ago' f.train; }
for trial in kept touched; do
  before_kill=
  [ $trial = touched ] && before_kill=touch_train
  kill_trial $trial 2 "checkpoint of step 3 written" fbase --executors 3 \
    --elastic --checkpoint-dir ck$trial $MFF --checkpoint-every 1
  has $trial.err "lost; going on with 2 executors from the checkpoint of step"
  if [ $trial = kept ]; then
    has $trial.err "f.train: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
  else
    has $trial.err "f.train: 0 of its 3 parts were kept by the executors that held them, 3 parsed again"
  fi
  has $trial.err "f.test: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
done
before_kill=

# ---- 1d. without a checkpoint folder: from the beginning ----------------------
MFF60="$src/apps/mf/mf.lua --train f.train --test f.test --k 16 --epochs 60"
"$drv" --quiet --executors 3 $MFF60 --save f60 > f60.out 2>&1 ||
  fail "undisturbed 60-epoch run on files: $(cat f60.out)"
rmses f60.out > f60.rmse
kill_trial nock 1 "epoch 3/" f60 --executors 3 --elastic $MFF60
has nock.err "lost; going on with 2 executors from the beginning (no checkpoint folder)"
has nock.err "f.train: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
has nock.out "== elastic: 2 executors, from the beginning (no checkpoint folder) =="

# ---- 1b. one executor stopped, another killed at once ------------------------
# The stopped one still counts when the job re-forms, and never registers
# again: after --register-timeout the job goes on with the 2 that did,
# with the same result; the stopped process is killed and reaped at the
# end.
rm -rf cks
ELASTIC_MARK=s "$drv" --executors 4 --elastic --register-timeout 3 \
  --checkpoint-dir cks $MF --checkpoint-every 1 --save s > s.out 2> s.err &
pid=$!
wait_for_line s.err "checkpoint of step 3 written" 60 $pid
set -- $(children $pid)
[ $# = 4 ] && kill -STOP "$1" && kill -9 "$2" || fail "stop and kill: executors '$*'"
reap $pid 120
rc=$?
[ $rc = 0 ] || fail "stop and kill: exit $rc: $(cat s.err)"
has s.err "going on with 3 executors"
has s.err "orion: elastic: 2 of the 3 executors expected registered again within 3 s; going on with 2"
rmses s.out > s.rmse
cmp -s base.rmse s.rmse || fail "stop and kill: RMSEs differ: $(diff base.rmse s.rmse)"
same_model base s
left s

# ---- 2. below --min-executors ------------------------------------------------
rm -rf ckm
ELASTIC_MARK=m "$drv" --executors 3 --elastic --min-executors 3 \
  --checkpoint-dir ckm $MF --checkpoint-every 1 > m.out 2> m.err &
pid=$!
wait_for_line m.err "checkpoint of step 2 written" 60 $pid
victim=$(children $pid | head -1)
[ -n "$victim" ] && kill -9 "$victim"
reap $pid 60
rc=$?
[ $rc = 3 ] || fail "--min-executors 3: exit $rc, not 3: $(cat m.err)"
has m.err "on 127.0.0.1 was lost and 2 executors are left, below --min-executors 3"
has m.err "orion-driver: ending the job"
left m

# ---- 3. an executor joins (--launcher manual) ----------------------------------
ORION_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export ORION_TOKEN
port=$(free_port $$)
"$drv" --quiet --executors 2 $MF_LONG --save jbase > jbase.out 2>&1 ||
  fail "undisturbed 60-epoch run: $(cat jbase.out)"
rmses jbase.out > jbase.rmse
# (tried again, at most 3 times, when the job ended before the joiner
# registered: a loaded machine)
for try in 1 2 3; do
  rm -rf ckj j.jsonl
  ELASTIC_MARK=j "$drv" --launcher manual --executors 2 --listen 127.0.0.1:$port \
    --elastic --checkpoint-dir ckj --metrics j.jsonl $MF_LONG --save j \
    > j.out 2> j.err &
  pid=$!
  ELASTIC_MARK=j "$exe" --driver 127.0.0.1:$port --id 0 --elastic 2> j0.err &
  e0=$!
  ELASTIC_MARK=j "$exe" --driver 127.0.0.1:$port --id 1 --elastic 2> j1.err &
  e1=$!
  wait_for_line j.err "epoch 2/" 60 $pid || fail "join: no epoch 2: $(cat j.err)"
  ELASTIC_MARK=j "$exe" --driver 127.0.0.1:$port --join 2> j2.err &
  e2=$!
  reap $pid 120
  rc=$?
  grep -qF "executor joins" j.err && break
  for e in $e0 $e1 $e2; do reap $e 10 > /dev/null; done
done
[ $rc = 0 ] || fail "join: exit $rc: $(cat j.err)"
has j.err "1 executor joins; going on with 3 executors at $src/apps/mf/"
has j.err ", a loop boundary (nothing is redone)"
grep -qF "checkpoint of step" j.err && fail "join: a checkpoint was written: $(cat j.err)"
[ -z "$(grep -F "== elastic" j.out)" ] || fail "join: stdout marks a re-forming: $(cat j.out)"
ex=$(grep -o '"executors":[0-9]*' j.jsonl | cut -d: -f2 | uniq | tr '\n' ' ')
[ "$ex" = "2 3 " ] || fail "join: the epochs ran on '$ex' executors, not 2 then 3"
[ "$(grep -c '^ *[0-9]' j.out)" = 60 ] || fail "join: not 60 epoch lines: $(cat j.out)"
rmses j.out > j.rmse
cmp -s jbase.rmse j.rmse || fail "join: RMSEs differ: $(diff jbase.rmse j.rmse)"
same_model jbase j
for e in $e0 $e1 $e2; do
  reap $e 10 > /dev/null || fail "join: executor $e ended with $?: $(cat j0.err j1.err j2.err)"
done

# The same with executors the driver started (the local launcher): the
# joiner (given the job's token, read from an executor's environment) is
# taken in place; the started executors, let go and registered again,
# are still reaped at the end: exit 0, 2 executors then 3, none left.
for try in 1 2 3; do
  port=$(free_port $((port + 1)))
  rm -rf ckl l.jsonl
  ELASTIC_MARK=l "$drv" --executors 2 --listen 127.0.0.1:$port --elastic \
    --checkpoint-dir ckl --metrics l.jsonl \
    $src/apps/mf/mf.lua --synthetic 3000,2000,200000 --k 16 --epochs 200 \
    > l.out 2> l.err &
  pid=$!
  wait_for_line l.err "epoch 2/" 60 $pid || fail "local join: no epoch 2: $(cat l.err)"
  tok=$(tr '\0' '\n' < /proc/$(children $pid | head -1)/environ | sed -n 's/^ORION_TOKEN=//p')
  ORION_TOKEN=$tok ELASTIC_MARK=l "$exe" --driver 127.0.0.1:$port --join 2> l2.err &
  el=$!
  reap $pid 120
  rc=$?
  reap $el 20 > /dev/null || fail "local join: the joiner ended with $?: $(cat l2.err)"
  grep -qF "executor joins" l.err && break
done
[ $rc = 0 ] || fail "local join: exit $rc: $(cat l.err)"
has l.err "1 executor joins; going on with 3 executors at"
ex=$(grep -o '"executors":[0-9]*' l.jsonl | cut -d: -f2 | uniq | tr '\n' ' ')
[ "$ex" = "2 3 " ] || fail "local join: the epochs ran on '$ex' executors, not 2 then 3"
left l

# A job without --elastic refuses a joiner, which gives up after
# $ORION_REGISTER_TIMEOUT; the job ends as usual.
port=$(free_port $((port + 1)))
"$drv" --launcher manual --executors 1 --listen 127.0.0.1:$port \
  $MF_LONG > r.out 2> r.err &
pid=$!
"$exe" --driver 127.0.0.1:$port --id 0 2> r0.err &
e0=$!
wait_for_line r.out "epoch" 60 $pid
ORION_REGISTER_TIMEOUT=2 "$exe" --driver 127.0.0.1:$port --join 2> rj.err &
ej=$!
reap $ej 20 > /dev/null
[ $? = 3 ] || fail "a joiner of a job without --elastic: not exit 3: $(cat rj.err)"
has rj.err "could not register with the driver at 127.0.0.1:$port"
reap $pid 120 > /dev/null || fail "the job a joiner was refused by: $(cat r.err)"
reap $e0 10 > /dev/null
has r.err "this job takes no joining executors (it needs orion-driver --elastic)"
unset ORION_TOKEN

# ---- 3b. over ssh (--hosts, a stand-in ssh) -----------------------------------
# 4 executors on node-b and node-c; one on node-b killed after the
# checkpoint of step 3, the other after that of step 6 with
# --min-executors 3: the job re-forms once, then ends with exit 3, and the
# executors' own last words (SHUTDOWN's reason), written to ssh's stderr
# pipe after the driver ran itself again, still reach the driver's stderr.
mkdir -p bin
cat > bin/ssh <<'EOF2'
#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in -o) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=$1; shift
FAKE_HOST=$host exec /bin/sh -c "$*"
EOF2
chmod +x bin/ssh
printf 'node-b 2\nnode-c 2\n' > hosts
on_node_b() {
  for p in $(cat /proc/[0-9]*/stat 2>/dev/null | awk '$2 == "(orion-executor)" { print $1 }'); do
    grep -qz "ELASTIC_MARK=h" /proc/$p/environ 2>/dev/null &&
      grep -qz "FAKE_HOST=node-b" /proc/$p/environ 2>/dev/null && echo $p
  done | head -1
}
rm -rf ckh
ELASTIC_MARK=h PATH="$tmp/bin:$PATH" "$drv" --hosts hosts --elastic \
  --min-executors 3 --checkpoint-dir ckh $MF_LONG --checkpoint-every 1 \
  > h.out 2> h.err &
pid=$!
for step in 3 6; do
  wait_for_line h.err "checkpoint of step $step written" 60 $pid
  if [ $step = 6 ]; then
    # (after the re-forming, at a checkpoint the re-formed job wrote: on a
    # loaded machine the first kill may land after step 6)
    wait_for_line h.err "orion: resumed from the checkpoint" 60 $pid
    n=$(grep -c "checkpoint of step .* written" h.err)
    k=0
    while [ "$(grep -c "checkpoint of step .* written" h.err)" -le "$n" ] &&
      [ $k -lt 6000 ] && kill -0 $pid 2>/dev/null; do
      sleep 0.01
      k=$((k + 1))
    done
  fi
  victim=$(on_node_b)
  [ -n "$victim" ] && kill -9 "$victim" || fail "ssh: no executor on node-b after step $step"
done
reap $pid 120
rc=$?
[ $rc = 3 ] || fail "ssh: exit $rc, not 3: $(cat h.err)"
has h.err "on node-b lost; going on with 3 executors"
has h.err "was lost and 2 executors are left, below --min-executors 3"
has h.err ": stopping: the driver ended the job ("
left h

# ---- 4. usage errors ------------------------------------------------------------
"$drv" --executors 2 --min-executors 2 --checkpoint-dir cku $MF > u2.out 2>&1
[ $? = 2 ] || fail "--min-executors without --elastic: not a usage error"
has u2.out "--min-executors needs --elastic"
"$drv" --executors 2 --elastic --min-executors 3 --checkpoint-dir cku $MF > u3.out 2>&1
[ $? = 2 ] || fail "--min-executors 3 of 2: not a usage error"
has u3.out "--min-executors 3 is more than the 2 executors of the job"

[ $fails = 0 ] && echo "PASS: elastic executors" || exit 1
