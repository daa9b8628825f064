#!/bin/sh
# The checkpoint folder under hostile or unlucky conditions (issue 32), in
# the fast set (about 15 s, most of it the restart window of part 5):
#
#  1. Symbolic links named like checkpoints, each pointing at a folder of
#     files (.ckpt-0000000007.tmp, ckpt-0000000001 in a fresh run's
#     folder; ckpt-0000000002 and .ckpt-0000000005.old beside a real
#     ckpt-0000000001 with --resume): the runs, which prune, replace and
#     read checkpoints, leave every file there, the links stay, and a
#     warning names each link.
#  2. Two drivers on one folder: while the first is alive, a second with
#     --resume is refused at once, naming the first one's pid and host,
#     and the first one's unfinished checkpoint folder is left alone; a
#     lock left by a driver killed with -9 is taken over with a warning;
#     under slurm only rank 0, the driver, takes the lock.
#  3. A full disk (a small tmpfs where root may mount one, else a file size
#     limit): a checkpoint that cannot be written is skipped with a
#     warning, the last good one stays, the job goes on and ends with the
#     right values; three failures in a row end the job (exit 1) saying
#     how to resume, and --resume then continues from the last good one.
#  4. --resume with no usable checkpoint: exit 1 naming each checkpoint and
#     why; --resume=auto and --resume --fresh-if-none start afresh.
#  5. --max-restarts N/PERIOD counts restarts within the last PERIOD: with
#     1/6s, a loss 7 s after the first restart restarts again, a loss right
#     after that one does not (exit 3, saying so); and the usage errors.
# Every wait has a timeout.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh" # reap, free_port
drv=${ORION_DRIVER:-$src/orion-driver}
tmp=$(mktemp -d)
mnt=
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2':
$(cat "$1")"; }
lacks() { ! grep -qF -- "$2" "$1" || fail "$1 has '$2':
$(cat "$1")"; }
# wait_for_line FILE TEXT SECONDS: until FILE has a line with TEXT.
wait_for_line() {
  n=0
  until grep -qF "$2" "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt $(($3 * 20)) ] && return 1
    sleep 0.05
  done
}
cd "$tmp" || exit 1

# A loop that adds its step to every element, checkpointed at each step.
cat > steps.lua <<'EOF'
local orion = require "orion"
local A = orion.zeros { 8, type = "f64" }
local first = 1
local r = orion.restore()
if r then first = r.step + 1 end
for step = first, tonumber(arg[1]) do
  orion.parallel_for(A, function(i, v) return v + step end, { tier = "lua" })
  local saved = orion.checkpoint { step = step, state = { s = step }, keep = 1 }
  print(step, A:get(8), saved and "saved" or "not saved")
  if os.getenv("STOP") == tostring(step) then break end
end
EOF

# ---- 1. symbolic links named like checkpoints -----------------------------
victim() { # a folder of files that must survive
  mkdir -p "$1" && echo one > "$1/a1.oarr" && echo two > "$1/manifest"
}
intact() {
  [ "$(cat "$1/a1.oarr" 2>/dev/null)" = one ] &&
    [ "$(cat "$1/manifest" 2>/dev/null)" = two ] ||
    fail "$2: the files of $1 were touched: $(ls -la "$1")"
}
victim v1
victim v2
# Each link alone in a fresh run's folder, then both.
mkdir l1 l2
ln -s "$tmp/v1" l1/.ckpt-0000000007.tmp
ln -s "$tmp/v2" l2/ckpt-0000000001
for l in l1 l2; do
  "$drv" --executors 0 --checkpoint-dir $l steps.lua 3 > $l.out 2> $l.err ||
    fail "a link in $l, fresh run: $(cat $l.err)"
  has $l.out "3	6.0	saved"
done
intact v1 "fresh run"
intact v2 "fresh run"
[ -L l1/.ckpt-0000000007.tmp ] && [ -L l2/ckpt-0000000001 ] ||
  fail "fresh run: a link was removed: $(ls -la l1 l2)"
has l1.err "orion: warning: checkpoint l1/.ckpt-0000000007.tmp: not a plain directory (a symbolic link or a file); it is left alone"
has l2.err "orion: warning: checkpoint l2/ckpt-0000000001: not a plain directory (a symbolic link or a file); it is left alone"
# Step 1's folder would replace the link: that checkpoint is skipped.
has l2.err "orion: warning: checkpoint of step 1 not written: l2/ckpt-0000000001 is not a plain directory (a symbolic link or a file): it is left alone"
# --resume: a link as the newest checkpoint is not read; the real one
# before it is, and the step of the link is written again (which moved
# the link aside and emptied it before).
mkdir r
STOP=1 "$drv" --executors 0 --checkpoint-dir r steps.lua 3 > /dev/null 2>&1 ||
  fail "links: the run before --resume failed"
victim v3
victim v4
ln -s "$tmp/v3" r/ckpt-0000000002
ln -s "$tmp/v4" r/.ckpt-0000000005.old
"$drv" --executors 0 --checkpoint-dir r --resume steps.lua 3 > r.out 2> r.err ||
  fail "links, --resume: $(cat r.err)"
intact v3 "--resume"
intact v4 "--resume"
has r.err "orion: warning: checkpoint r/.ckpt-0000000005.old: not a plain directory (a symbolic link or a file); it is left alone"
has r.err "orion: warning: checkpoint r/ckpt-0000000002: not a plain directory (a symbolic link or a file); it is left alone"
has r.err "orion: resumed from the checkpoint of step 1"
has r.err "checkpoint of step 2 not written: r/ckpt-0000000002 is not a plain directory"
has r.out "3	6.0	saved"
[ -L r/ckpt-0000000002 ] || fail "--resume: the link was moved: $(ls -la r)"

# ---- 2. one driver per checkpoint folder ----------------------------------
# The script waits (at most 20 s) for the file "go" when WAIT is set.
cat > wait.lua <<'EOF'
local orion = require "orion"
local A = orion.zeros { 8, type = "f64" }
local r = orion.restore()
orion.checkpoint { step = r and r.step + 1 or 1 }
print("checkpointed")
io.stdout:flush()
local t0 = os.time()
while os.getenv("WAIT") and not io.open("go") and os.time() - t0 < 20 do
  os.execute("sleep 0.05")
end
EOF
WAIT=1 "$drv" --executors 0 --checkpoint-dir k wait.lua > k1.out 2>&1 &
pid=$!
wait_for_line k1.out checkpointed 30 || fail "the first driver did not start: $(cat k1.out)"
# The first driver's checkpoint in progress, as a second driver finds it.
mkdir k/.ckpt-0000000002.tmp && echo part > k/.ckpt-0000000002.tmp/a1.r0.oarr
"$drv" --executors 0 --checkpoint-dir k --resume wait.lua > k2.out 2>&1 &
pid2=$!
reap $pid2 5
rc=$?
[ $rc = 1 ] || fail "a second driver on a folder in use: exit $rc: $(cat k2.out)"
has k2.out "orion-driver: --checkpoint-dir k is in use by another orion-driver (pid $pid on host $(uname -n), since "
has k2.out "its lock file is k/.orion-lock); two drivers on one checkpoint folder would resume from and remove each other's checkpoints"
lacks k2.out "resumed"
[ -f k/.ckpt-0000000002.tmp/a1.r0.oarr ] ||
  fail "the second driver removed the first one's unfinished checkpoint"
touch go
reap $pid 30 || fail "the first driver: $(cat k1.out)"
rm -r go k/.ckpt-0000000002.tmp
# Released at exit: the next driver takes the lock without a word.
"$drv" --executors 0 --checkpoint-dir k --resume wait.lua > k3.out 2>&1 ||
  fail "after the first driver ended: $(cat k3.out)"
lacks k3.out "lock"
# Killed with -9, a driver leaves its lock file written: taken over.
WAIT=1 "$drv" --executors 0 --checkpoint-dir k --resume wait.lua > k4.out 2>&1 &
pid=$!
wait_for_line k4.out checkpointed 30 || fail "the driver to kill did not start: $(cat k4.out)"
kill -9 $pid
wait $pid 2>/dev/null
"$drv" --executors 0 --checkpoint-dir k --resume wait.lua > k5.out 2>&1 ||
  fail "after a killed driver: $(cat k5.out)"
has k5.out "orion: warning: checkpoint folder k: its lock was left by an orion-driver that is no longer running (pid $pid on host $(uname -n), since "
has k5.out "this job takes it over"
has k5.out "orion: resumed from the checkpoint of step 3"

# Under slurm (or mpi) every rank runs the driver's command line: only
# rank 0, the driver, takes the lock; the other ranks become executors
# first, so they neither refuse the job nor leave a lock file written.
# A port nothing on this machine uses (t/skip.sh).
port=$(free_port $$)
# A token of 128 random bits (a guessable one is refused).
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
for r in 1 0; do
  SLURM_PROCID=$r SLURM_NTASKS=2 ORION_DRIVER=127.0.0.1:$port \
    ORION_TOKEN=$token "$drv" --launcher slurm \
    --register-timeout 20 --checkpoint-dir sl steps.lua 2 > sl$r.out 2>&1 &
  eval rank$r=$!
  [ $r = 1 ] && sleep 0.5
done
reap $rank0 30 || fail "slurm ranks, rank 0: $(cat sl0.out)"
reap $rank1 30 || fail "slurm ranks, rank 1: $(cat sl1.out)"
has sl0.out "2	3.0	saved"
lacks sl0.out "lock"
lacks sl1.out "lock"

# ---- 3. a full disk ---------------------------------------------------------
# B (1 MiB) lives from step 2 until step arg[1]; the folder has room for
# A's checkpoints (64 KiB each) but not for B's.
cat > fill.lua <<'EOF'
local orion = require "orion"
local A = orion.zeros { 8192, type = "f64" }
local first, B = 1, nil
local r = orion.restore()
if r then first = r.step + 1 end
for step = first, 6 do
  if step == 2 then B = orion.zeros { 131072, type = "f64" } end
  if step == tonumber(arg[1]) then B = nil end
  orion.parallel_for(A, function(i, v) return v + step end, { tier = "lua" })
  local saved = orion.checkpoint { step = step, keep = 1 }
  print(step, A:get(1), saved and "saved" or "not saved")
end
EOF
mkdir disk
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=512k tmpfs disk 2>/dev/null; then
  mnt=$tmp/disk
  full="No space left on device"
  run_full() { "$drv" "$@"; }
else
  # Without a mount: a file size limit, which fails writes with EFBIG
  # (SIGXFSZ ignored), through the same code.
  full="File too large"
  run_full() { (trap '' XFSZ; exec prlimit --fsize=524288 "$drv" "$@"); }
fi
run_full --executors 2 --checkpoint-dir disk/c fill.lua 4 > f1.out 2> f1.err ||
  fail "full disk, steps 2 and 3: $(cat f1.err)"
for s in 2 3; do
  has f1.err "orion: warning: checkpoint of step $s not written: cannot write disk/c/.ckpt-000000000$s.tmp/"
  has f1.out "$s	$((s * (s + 1) / 2)).0	not saved"
done
has f1.err "$full; the checkpoint of step 1 stays the newest, and the job goes on (3 checkpoints in a row that fail end it)"
has f1.out "6	21.0	saved"
[ "$(ls -A disk/c)" = ".orion-lock
ckpt-0000000006" ] || fail "full disk: the folder holds $(ls -A disk/c)"
rm -r disk/c
run_full --executors 2 --checkpoint-dir disk/c fill.lua 0 > f2.out 2> f2.err
rc=$?
[ $rc = 1 ] || fail "full disk, 3 in a row: exit $rc: $(cat f2.err)"
has f2.err "orion-driver: fill.lua:10: checkpoint: step 4: cannot write disk/c/.ckpt-0000000004.tmp/"
has f2.err "$full; 3 checkpoints in a row were not written, so the job ends here.  The checkpoint of step 1 in disk/c is intact: make room (or mend the folder) and run the same command with --resume to continue from it"
lacks f2.out "5	"
[ "$(ls -A disk/c)" = ".orion-lock
ckpt-0000000001" ] || fail "full disk, 3 in a row: the folder holds $(ls -A disk/c)"
# With room again (no limit, or a larger mount), --resume goes on.
[ -n "$mnt" ] && mount -o remount,size=8m "$mnt"
"$drv" --executors 2 --checkpoint-dir disk/c --resume fill.lua 0 > f3.out 2> f3.err ||
  fail "full disk, --resume: $(cat f3.err)"
has f3.err "orion: resumed from the checkpoint of step 1"
has f3.out "6	21.0	saved"

# ---- 4. --resume with nothing usable ----------------------------------------
mkdir -p n/ckpt-0000000004 n/ckpt-0000000002
echo damaged > n/ckpt-0000000002/manifest
"$drv" --executors 0 --checkpoint-dir n --resume steps.lua 2 > n1.out 2>&1
rc=$?
[ $rc = 1 ] || fail "--resume, none usable: exit $rc: $(cat n1.out)"
has n1.out "orion-driver: restore: --resume: no usable checkpoint in n:
  n/ckpt-0000000004/manifest: No such file or directory (an unfinished checkpoint)
  n/ckpt-0000000002/manifest: damaged (its CRC-32 does not match)
give --resume=auto (or --fresh-if-none) to start from the beginning when there is none"
lacks n1.out "saved"
"$drv" --executors 0 --checkpoint-dir none --resume steps.lua 2 > n2.out 2>&1
rc=$?
[ $rc = 1 ] || fail "--resume, empty folder: exit $rc: $(cat n2.out)"
has n2.out "orion-driver: restore: --resume: no usable checkpoint in none (it holds none); give --resume=auto"
"$drv" --executors 0 --checkpoint-dir n --resume=auto steps.lua 2 > n3.out 2>&1 ||
  fail "--resume=auto: $(cat n3.out)"
has n3.out "orion: warning: checkpoint n/ckpt-0000000004/manifest: No such file or directory (an unfinished checkpoint); using the checkpoint before it"
has n3.out "orion: warning: checkpoint n/ckpt-0000000002/manifest: damaged (its CRC-32 does not match); no older checkpoint is left"
has n3.out "orion: no usable checkpoint in n: starting from the beginning (--resume=auto)"
has n3.out "2	3.0	saved"
rm -r n
"$drv" --executors 0 --checkpoint-dir n --resume --fresh-if-none steps.lua 2 > n4.out 2>&1 ||
  fail "--fresh-if-none: $(cat n4.out)"
has n4.out "2	3.0	saved"
"$drv" --executors 0 --checkpoint-dir n --fresh-if-none steps.lua 2 > n5.out 2>&1
[ $? = 2 ] || fail "--fresh-if-none alone: $(cat n5.out)"
has n5.out "orion-driver: --fresh-if-none needs --resume"
"$drv" --executors 0 --checkpoint-dir n --resume=yes steps.lua 2 > n6.out 2>&1
[ $? = 2 ] || fail "--resume=yes: $(cat n6.out)"
has n6.out "orion-driver: --resume takes no value or =auto, not 'yes'"

# ---- 5. --max-restarts N/PERIOD ----------------------------------------------
# Every run loses its executor; the second run (the first restart) waits
# 7 s first, so that the first restart is out of a 6 s window by then:
# each restart's mark in stdout counts 1 of 1 (the restarts within the
# window).
cat > crash.lua <<'EOF'
local orion = require "orion"
local A = orion.zeros { 4, type = "i64" }
orion.restore()
local run = tonumber(os.getenv("ORION_RESTART") or "0")
print("run " .. run)
io.stdout:flush()
if run == 1 then os.execute("sleep 7") end
orion.parallel_for(A, function(i, v) os.exit(9) end, { tier = "lua" })
EOF
"$drv" --allow-io --executors 1 --checkpoint-dir w --max-restarts 1/6s crash.lua > w.out 2> w.err &
pid=$!
reap $pid 60
rc=$?
[ $rc = 3 ] || fail "--max-restarts 1/6s: exit $rc: $(cat w.err)"
[ "$(cat w.out)" = "run 0
== restart 1 of 1, from the beginning ==
run 1
== restart 1 of 1, from the beginning ==
run 2" ] || fail "--max-restarts 1/6s: the runs were $(cat w.out)"
[ "$(grep -c 'restart 1 of 1, from the beginning' w.err)" = 2 ] ||
  fail "--max-restarts 1/6s: not two restarts: $(cat w.err)"
has w.err "orion-driver: no restart left (1 within 6s: --max-restarts 1/6s); the checkpoints in w stay for --resume"
for bad in "3/0" "3/5x" "x" "1001" "2/"; do
  "$drv" --executors 0 --checkpoint-dir w --max-restarts "$bad" steps.lua 1 > bad.out 2>&1
  [ $? = 2 ] || fail "--max-restarts $bad: $(cat bad.out)"
  has bad.out "orion-driver: --max-restarts "
done

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "all checkpoint folder tests passed"
