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
#  1d. No checkpoint folder: the same MF on files, --elastic without
#     --checkpoint-dir, one executor killed after epoch 3: the
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
#     executor exits with the job.  The same with the local launcher and
#     an exported ORION_TOKEN (the joiner's): the executors it started
#     are still reaped at the end.  A job without --elastic refuses a
#     joiner (the driver says why; the joiner gives up with exit 3).
#  3b. The same over --hosts (a stand-in ssh): a loss re-forms the job,
#     a second one below --min-executors ends it with exit 3, and what the
#     executors write on stderr after the driver ran itself again still
#     reaches the driver's stderr.
#  4. Usage errors: --min-executors without --elastic, --min-executors
#     above the executors, a guessable ORION_TOKEN for local executors.
# The test acts on a job at a fixed point of it, not at a time: the job
# runs through pause.lua (below), which stops the script before a given
# epoch until the test has acted, so a loaded machine neither ends the
# job first nor moves the point where it acts.
# Every wait has a timeout.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh" # reap, procs_left
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
# wait_file FILE SECONDS PID: until FILE exists (or PID ends, or SECONDS
# pass).
wait_file() {
  n=0
  until [ -e "$1" ]; do
    n=$((n + 1))
    [ $n -gt $(($2 * 100)) ] && return 1
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.01
  done
}
# connected PORT N: until N connections to 127.0.0.1:PORT are established
# (the kernel's table: whether or not the listener has taken them yet), at
# most 60 s.
connected() {
  _hex=$(printf '%04X' "$1")
  n=0
  until [ "$(awk -v p=":$_hex" '$3 ~ p"$" && $4 == "01"' /proc/net/tcp | wc -l)" -ge "$2" ]; do
    n=$((n + 1))
    [ $n -gt 6000 ] && return 1
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
# left NAME: fails when processes of job NAME are still there after 10 s.
left() {
  _left=$(procs_left "ELASTIC_MARK=$1.$$" 10)
  [ -z "$_left" ] || fail "$1: processes left: $_left"
}

cd "$tmp" || exit 1
# pause.lua SCRIPT ARGS...: runs SCRIPT with ARGS.  With PAUSE_STEPS="N..."
# and PAUSE_DIR=DIR in its environment, orion.step(N) (an app's epoch N
# begins) first creates DIR/paused-N and waits (at most 120 s) for
# DIR/go-N; once that exists (a re-formed job doing step N again) it goes
# straight on.  The driver needs --allow-io for it; the results are the
# same bits as without.
cat > pause.lua <<'EOF2'
local orion = require "orion"
local steps, dir = os.getenv("PAUSE_STEPS"), os.getenv("PAUSE_DIR")
local function exists(f)
  local h = io.open(f)
  if h then h:close() end
  return h ~= nil
end
local step = orion.step
orion.step = function(n, ...)
  if steps and dir and (" " .. steps .. " "):find(" " .. n .. " ", 1, true)
      and not exists(dir .. "/go-" .. n) then
    io.open(dir .. "/paused-" .. n, "w"):close()
    local t0 = os.time()
    while not exists(dir .. "/go-" .. n) and os.time() - t0 < 120 do
      os.execute("sleep 0.01")
    end
  end
  return step(n, ...)
end
local script, a = arg[1], {}
for i = 2, #arg do a[i - 1] = arg[i] end
a[0] = script
arg = a
dofile(script)
EOF2
MF="--allow-io pause.lua $src/apps/mf/mf.lua --synthetic 3000,2000,200000 --k 16 --epochs 8"
"$drv" --quiet --executors 3 $MF --save base > base.out 2>&1 ||
  fail "undisturbed run: $(cat base.out)"
rmses base.out > base.rmse
[ "$(grep -c ' [0-9]' base.rmse)" = 8 ] || fail "undisturbed run: $(cat base.out)"

# paused NAME STEP PID: waits for job NAME (PAUSE_DIR=pNAME) to pause
# before STEP; fails when it ended first or 120 s passed.
paused() {
  wait_file p$1/paused-$2 120 $3 || fail "$1: no pause before step $2: $(cat $1.err)"
}
# kill_trial NAME NTH STEP BASE ARGS...: runs the driver with ARGS and
# --save NAME (its checkpoint folder, if any, named ckNAME), paused before
# step STEP; kills its NTH executor with -9 there (after running
# $before_kill, if set) and lets it go on; then checks exit 0, that every
# epoch's RMSEs and the saved model are BASE's, and that no process of the
# run is left.
kill_trial() {
  name=$1 nth=$2 at=$3 kbase=$4
  shift 4
  rm -rf "ck$name" "p$name"
  mkdir "p$name"
  ELASTIC_MARK=$name.$$ PAUSE_STEPS=$at PAUSE_DIR=p$name "$drv" "$@" \
    --save $name > $name.out 2> $name.err &
  pid=$!
  paused $name $at $pid
  [ -n "${before_kill:-}" ] && $before_kill
  victim=$(children $pid | sed -n "${nth}p")
  [ -n "$victim" ] && kill -9 "$victim" || fail "$name: no executor $nth to kill"
  touch p$name/go-$at
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
  kill_trial k$trial $trial 4 base --executors 3 \
    --elastic --checkpoint-dir ckk$trial $MF --checkpoint-every 1
  has k$trial.err "was killed by signal 9"
  has k$trial.err "lost; going on with 2 executors from the checkpoint of step 3"
  has k$trial.err "orion: resumed from the checkpoint of step 3"
  has k$trial.out "== elastic: 2 executors, from the checkpoint of step 3"
done

# ---- 1c. the survivors keep the parts of files they parsed ------------------
awk 'BEGIN { s = 7; for (n = 0; n < 60000; n++) {
  s = (s * 1103515245 + 12345) % 2147483648; u = s % 2000 + 1
  s = (s * 1103515245 + 12345) % 2147483648; i = s % 1500 + 1
  s = (s * 1103515245 + 12345) % 2147483648; r = s % 5 + 1
  print u, i, r > (n % 10 == 0 ? "f.test" : "f.train") } }'
MFF="--allow-io pause.lua $src/apps/mf/mf.lua --train f.train --test f.test --k 16 --epochs 8"
"$drv" --quiet --executors 3 $MFF --save fbase > fbase.out 2>&1 ||
  fail "undisturbed run on files: $(cat fbase.out)"
rmses fbase.out > fbase.rmse
touch_train() { touch -d '1 minute ago' f.train; }
for trial in kept touched; do
  before_kill=
  [ $trial = touched ] && before_kill=touch_train
  kill_trial $trial 2 4 fbase --executors 3 \
    --elastic --checkpoint-dir ck$trial $MFF --checkpoint-every 1
  has $trial.err "lost; going on with 2 executors from the checkpoint of step 3"
  if [ $trial = kept ]; then
    has $trial.err "f.train: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
  else
    has $trial.err "f.train: 0 of its 3 parts were kept by the executors that held them, 3 parsed again"
  fi
  has $trial.err "f.test: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
done
before_kill=

# ---- 1d. without a checkpoint folder: from the beginning ----------------------
kill_trial nock 1 4 fbase --executors 3 --elastic $MFF
has nock.err "lost; going on with 2 executors from the beginning (no checkpoint folder)"
has nock.err "f.train: 2 of its 3 parts were kept by the executors that held them, 1 parsed again"
has nock.out "== elastic: 2 executors, from the beginning (no checkpoint folder) =="

# ---- 1b. one executor stopped, another killed at once ------------------------
# The stopped one still counts when the job re-forms, and never registers
# again: after --register-timeout the job goes on with the 2 that did,
# with the same result; the stopped process is killed and reaped at the
# end.
rm -rf cks ps
mkdir ps
ELASTIC_MARK=s.$$ PAUSE_STEPS=4 PAUSE_DIR=ps "$drv" --executors 4 --elastic \
  --register-timeout 3 --checkpoint-dir cks $MF --checkpoint-every 1 \
  --save s > s.out 2> s.err &
pid=$!
paused s 4 $pid
set -- $(children $pid)
[ $# = 4 ] && kill -STOP "$1" && kill -9 "$2" || fail "stop and kill: executors '$*'"
touch ps/go-4
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
rm -rf ckm pm
mkdir pm
ELASTIC_MARK=m.$$ PAUSE_STEPS=3 PAUSE_DIR=pm "$drv" --executors 3 --elastic \
  --min-executors 3 --checkpoint-dir ckm $MF --checkpoint-every 1 \
  > m.out 2> m.err &
pid=$!
paused m 3 $pid
victim=$(children $pid | head -1)
[ -n "$victim" ] && kill -9 "$victim" || fail "--min-executors 3: no executor to kill"
touch pm/go-3
reap $pid 60
rc=$?
[ $rc = 3 ] || fail "--min-executors 3: exit $rc, not 3: $(cat m.err)"
has m.err "on 127.0.0.1 was lost and 2 executors are left, below --min-executors 3"
has m.err "orion-driver: ending the job"
left m

# ---- 3. an executor joins (--launcher manual) ----------------------------------
ORION_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export ORION_TOKEN
# The drivers listen on a port the system picks (--listen HOST), which the
# test reads from the commands the manual launcher prints, or from a
# local executor's command line: no port taken by another test meanwhile.
printed_addr() { sed -n "s/.*'--driver' '\([^']*\)'.*/\1/p" "$1" | head -1; }
# The job pauses before epoch 3 until the joiner is connected (the driver,
# paused, has not read it yet: the kernel holds the connection), so it
# cannot end before the joiner asks, nor take it at another epoch.
rm -rf ckj j.jsonl pj
mkdir pj
ELASTIC_MARK=j.$$ PAUSE_STEPS=3 PAUSE_DIR=pj "$drv" --launcher manual \
  --executors 2 --listen 127.0.0.1 --elastic --checkpoint-dir ckj \
  --metrics j.jsonl $MF --save j > j.out 2> j.err &
pid=$!
wait_for_line j.err "'--driver' '" 60 $pid || fail "join: no command printed: $(cat j.err)"
addr=$(printed_addr j.err)
port=${addr##*:}
ELASTIC_MARK=j.$$ "$exe" --driver 127.0.0.1:$port --id 0 --elastic 2> j0.err &
e0=$!
ELASTIC_MARK=j.$$ "$exe" --driver 127.0.0.1:$port --id 1 --elastic 2> j1.err &
e1=$!
paused j 3 $pid
ELASTIC_MARK=j.$$ "$exe" --driver 127.0.0.1:$port --join 2> j2.err &
e2=$!
connected "$port" 3 || fail "join: the joiner did not connect: $(cat j2.err)"
touch pj/go-3
reap $pid 120
rc=$?
[ $rc = 0 ] || fail "join: exit $rc: $(cat j.err)"
has j.err "1 executor joins; going on with 3 executors at "
# a long source path is shortened with "..." at its front; its tail stays
has j.err "apps/mf/mf.lua:"
has j.err ", a loop boundary (nothing is redone)"
grep -qF "checkpoint of step" j.err && fail "join: a checkpoint was written: $(cat j.err)"
[ -z "$(grep -F "== elastic" j.out)" ] || fail "join: stdout marks a re-forming: $(cat j.out)"
ex=$(grep -o '"executors":[0-9]*' j.jsonl | cut -d: -f2 | uniq | tr '\n' ' ')
[ "$ex" = "2 3 " ] || fail "join: the epochs ran on '$ex' executors, not 2 then 3"
[ "$(grep -c '^ *[0-9]' j.out)" = 8 ] || fail "join: not 8 epoch lines: $(cat j.out)"
rmses j.out > j.rmse
cmp -s base.rmse j.rmse || fail "join: RMSEs differ: $(diff base.rmse j.rmse)"
same_model base j
for e in $e0 $e1 $e2; do
  reap $e 10 > /dev/null || fail "join: executor $e ended with $?: $(cat j0.err j1.err j2.err)"
done

# The same with executors the driver started (the local launcher), the
# token being the exported ORION_TOKEN, which the local launcher gives its
# executors and the user gives the joiner: the joiner is taken in place;
# the started executors, let go and registered again, are still reaped at
# the end: exit 0, 2 executors then 3, the undisturbed result, none left.
rm -rf ckl l.jsonl pl
mkdir pl
ELASTIC_MARK=l.$$ PAUSE_STEPS=3 PAUSE_DIR=pl "$drv" --executors 2 \
  --elastic --checkpoint-dir ckl --metrics l.jsonl \
  $MF --save l > l.out 2> l.err &
pid=$!
paused l 3 $pid
addr=$(tr '\0' '\n' < /proc/$(children $pid | head -1)/cmdline | sed -n '/^--driver$/{n;p;}')
port=${addr##*:}
ELASTIC_MARK=l.$$ "$exe" --driver 127.0.0.1:$port --join 2> l2.err &
el=$!
connected "$port" 3 || fail "local join: the joiner did not connect: $(cat l2.err)"
touch pl/go-3
reap $pid 120
rc=$?
reap $el 20 > /dev/null || fail "local join: the joiner ended with $?: $(cat l2.err)"
[ $rc = 0 ] || fail "local join: exit $rc: $(cat l.err)"
has l.err "1 executor joins; going on with 3 executors at"
ex=$(grep -o '"executors":[0-9]*' l.jsonl | cut -d: -f2 | uniq | tr '\n' ' ')
[ "$ex" = "2 3 " ] || fail "local join: the epochs ran on '$ex' executors, not 2 then 3"
rmses l.out > l.rmse
cmp -s base.rmse l.rmse || fail "local join: RMSEs differ: $(diff base.rmse l.rmse)"
left l

# A job without --elastic refuses a joiner, which gives up after
# $ORION_REGISTER_TIMEOUT; the job ends as usual.
rm -rf pr
mkdir pr
PAUSE_STEPS=2 PAUSE_DIR=pr "$drv" --launcher manual --executors 1 \
  --listen 127.0.0.1 $MF > r.out 2> r.err &
pid=$!
wait_for_line r.err "'--driver' '" 60 $pid || fail "refused join: no command printed: $(cat r.err)"
addr=$(printed_addr r.err)
port=${addr##*:}
"$exe" --driver 127.0.0.1:$port --id 0 2> r0.err &
e0=$!
paused r 2 $pid
ORION_REGISTER_TIMEOUT=2 "$exe" --driver 127.0.0.1:$port --join 2> rj.err &
ej=$!
connected "$port" 2 || fail "refused join: the joiner did not connect: $(cat rj.err)"
touch pr/go-2
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
    grep -qz "^ELASTIC_MARK=h\.$$\$" /proc/$p/environ 2>/dev/null &&
      grep -qz "FAKE_HOST=node-b" /proc/$p/environ 2>/dev/null && echo $p
  done | head -1
}
rm -rf ckh ph
mkdir ph
# (paused before steps 4 and 7: the second kill comes after the re-formed
# job resumed from the checkpoint of step 3 and wrote those of 4 to 6)
ELASTIC_MARK=h.$$ PAUSE_STEPS="4 7" PAUSE_DIR=ph PATH="$tmp/bin:$PATH" \
  "$drv" --hosts hosts --elastic --min-executors 3 --checkpoint-dir ckh \
  $MF --checkpoint-every 1 > h.out 2> h.err &
pid=$!
for step in 4 7; do
  paused h $step $pid
  victim=$(on_node_b)
  [ -n "$victim" ] && kill -9 "$victim" || fail "ssh: no executor on node-b before step $step"
  touch ph/go-$step
done
reap $pid 120
rc=$?
[ $rc = 3 ] || fail "ssh: exit $rc, not 3: $(cat h.err)"
has h.err "on node-b lost; going on with 3 executors from the checkpoint of step 3"
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
# The local launcher takes an exported ORION_TOKEN, checked as elsewhere.
ORION_TOKEN=0123456789abcdef0123456789abcdef "$drv" --executors 1 $MF > u4.out 2>&1
[ $? = 2 ] || fail "a guessable ORION_TOKEN, local launcher: not a usage error"
has u4.out "orion-driver: ORION_TOKEN is mostly runs, sequences and repeats"

[ $fails = 0 ] && echo "PASS: elastic executors" || exit 1
