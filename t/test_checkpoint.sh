#!/bin/sh
# Checkpoints, --resume and automatic recovery (issue 19), in the fast set:
#
#  1. MF (embedded synthetic data, 16 epochs, a checkpoint every 2) with
#     kill -9 of a random executor of the job once the checkpoint of a
#     random step (2 or 4) is written, 3 trials: exit 0, the log names the
#     executor and the restart, the test RMSE of every epoch equals the
#     undisturbed run's (within 0.002 is the issue's bound; the restart is
#     exact), and no process of the job is left.
#  2. The driver killed with -9 after the checkpoint of step 4: --resume
#     prints epochs after the newest checkpoint only (none before it is
#     redone) and ends with the same RMSE.
#  3. A corrupt newest checkpoint (a flipped byte, a truncated file, a
#     missing file, all in a part an executor wrote; a missing manifest
#     beside an unfinished temporary folder): --resume names the file and
#     uses the checkpoint before it.
#  3b. LDA and the DNN app resumed from the checkpoint before the newest:
#     the same rows as the undisturbed run (LDA's --check holds).
#  4. Errors: a state value that is not plain data names the key;
#     --resume of a checkpoint written with other arguments is refused
#     (naming both), and with --force an array of other dims is named;
#     --resume without --checkpoint-dir is a usage error; a fresh start in
#     a folder that holds checkpoints is refused.
#  5. orion.load reads an array of a checkpoint.
#  6. The executors wrote their parts: the manifest names each part's
#     writer (executor-0, executor-1) and host, and orion.load of the array
#     they make up equals the array file the driver writes when the rows are
#     brought back first (ORION_CKPT_NO_PARTS=1).
#  7. An executor killed in the middle of writing its parts
#     (ORION_TEST_CKPT_DIE, after its first part): the job restarts from
#     the checkpoint before, and ends with the undisturbed RMSE; stdout
#     marks the restart's place, and the driver never says "ending the
#     job" for a job it restarts.
#  8. An executor whose parts the driver cannot see (written to a folder of
#     the same name elsewhere, as on a host without the shared directory:
#     ORION_TEST_CKPT_FOLDER): a warning naming it, the driver writes those
#     parts, and the checkpoint resumes.
#  9. Recovery with --hosts (a stand-in ssh): an executor whose host
#     failed twice starts on another host of the hosts file, and the job
#     ends as it should.
# 10. Ctrl-C (SIGINT to the job's process group) mid-run leaves only
#     complete checkpoints (and at worst an unfinished .tmp folder), and
#     --resume ends with the undisturbed RMSE.
# Every wait has a timeout.
set -u
src=${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/t/skip.sh" # reap, free_port
drv=${ORION_DRIVER:-$src/orion-driver}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2':
$(cat "$1")"; }

# The executors whose parent is $1 (/proc: no procps needed).
children() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$1" '$4 == p && $2 == "(orion-executor)" { print $1 }'
}
# The processes whose environment carries this job's mark (its name and
# this test's pid: copies of the test run at once do not see each other's),
# once none is left or 10 s have passed (t/skip.sh: executors that a Ctrl-C
# killed with the driver, or whose driver was killed, end after it).
job_procs() { procs_left "CKPT_MARK=$1.$$" 10; }
# wait_for_line FILE TEXT SECONDS PID: until FILE has a line with TEXT (or
# PID ends, or SECONDS pass).
wait_for_line() {
  n=0
  until grep -qF "$2" "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt $(($3 * 100)) ] && return 1
    kill -0 "$4" 2>/dev/null || return 1
    sleep 0.01
  done
}
# The test RMSE column of an MF run's epoch lines, one per line.
rmses() { awk '$1 ~ /^[0-9]+$/ && NF == 4 { print $1, $4 }' "$1"; }

MF="$src/apps/mf/mf.lua --synthetic 3000,2000,200000 --k 16 --epochs 16"
cd "$tmp" || exit 1
"$drv" --quiet --executors 2 $MF > base.out 2>&1 || fail "undisturbed run: $(cat base.out)"
rmses base.out > base.rmse
[ "$(wc -l < base.rmse)" = 16 ] || fail "undisturbed run: $(cat base.out)"

# ---- 1. an executor killed, 3 trials ------------------------------------
for trial in 1 2 3; do
  d=$tmp/k$trial
  step=$(( (trial % 2 + 1) * 2 ))
  # On a loaded machine the run may end before the kill: then it is run
  # again (at most 3 times).
  for try in 1 2 3; do
    rm -rf "$d"
    CKPT_MARK=k$trial.$$ "$drv" --executors 2 --checkpoint-dir "$d" $MF \
      --checkpoint-every 2 > k$trial.out 2> k$trial.err &
    pid=$!
    # The log line stays when the checkpoint itself has been pruned.
    wait_for_line k$trial.err "checkpoint of step $step written" 60 $pid
    victim=$(children $pid | awk -v r=$$ 'NR == 1 + (r + '$trial') % 2')
    [ -n "$victim" ] || victim=$(children $pid | head -1)
    [ -n "$victim" ] && kill -9 $victim 2>/dev/null && break
    reap $pid 120
  done
  [ -n "$victim" ] || fail "trial $trial: the run ended before an executor could be killed, 3 times"
  reap $pid 120
  rc=$?
  [ $rc = 0 ] || fail "trial $trial: exit $rc: $(cat k$trial.err)"
  has k$trial.err "was killed by signal 9"
  has k$trial.err "orion: recovery: executor "
  has k$trial.err "restart 1 of 3, from the checkpoint of step"
  has k$trial.err "orion: resumed from the checkpoint of step"
  # The epochs printed last for each number are the run's result.
  rmses k$trial.out | awk '{ r[$1] = $2 } END { for (e = 1; e <= 16; e++) print e, r[e] }' > k$trial.rmse
  paste -d' ' base.rmse k$trial.rmse | awk -v t=$trial '
    { d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 0.002) {
        print "trial " t ": epoch " $1 ": test RMSE " $4 ", undisturbed " $2; bad = 1 } }
    END { exit bad }' || fail "trial $trial: RMSEs differ"
  left=$(job_procs k$trial)
  [ -z "$left" ] || fail "trial $trial: processes left: $left"
done

# ---- 2. the driver killed, then --resume ---------------------------------
d=$tmp/drv
CKPT_MARK=drv.$$ "$drv" --executors 2 --checkpoint-dir "$d" $MF \
  --checkpoint-every 2 > drv1.out 2>&1 &
pid=$!
wait_for_line drv1.out "checkpoint of step 4 written" 60 $pid ||
  fail "no checkpoint of step 4: $(cat drv1.out)"
kill -9 $pid
wait $pid 2>/dev/null
left=$(job_procs drv)
[ -z "$left" ] || fail "executors outlived the killed driver: $left"
newest=$(ls "$d" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1)
"$drv" --quiet --executors 2 --checkpoint-dir "$d" --resume $MF \
  --checkpoint-every 2 > drv2.out 2>&1 || fail "--resume: $(cat drv2.out)"
first=$(rmses drv2.out | head -1 | cut -d' ' -f1)
[ "$first" = $((newest + 1)) ] ||
  fail "--resume after step $newest began at epoch '$first': $(cat drv2.out)"
[ "$(rmses drv2.out | tail -1)" = "$(tail -1 base.rmse)" ] ||
  fail "--resume ended with $(rmses drv2.out | tail -1), not $(tail -1 base.rmse)"

# ---- 3. corrupt checkpoints ------------------------------------------------
SMALL="$src/apps/mf/mf.lua --synthetic 600,400,20000 --k 4 --epochs 6"
"$drv" --quiet --executors 2 $SMALL > small.out 2>&1 || fail "small run: $(cat small.out)"
"$drv" --quiet --executors 2 --checkpoint-dir "$tmp/c" $SMALL \
  --checkpoint-every 2 > /dev/null 2>&1 || fail "corrupt: first run failed"
# A part of W (users x K, f32) that executor 1 wrote.
wpart=$(awk '$1 == "part" && $2 == 3 && $6 == "executor-1" { print $3; exit }' "$tmp/c/ckpt-0000000006/manifest")
[ -n "$wpart" ] || fail "no part of W by executor 1: $(cat "$tmp/c/ckpt-0000000006/manifest")"
for how in flip truncate missing manifest; do
  d=$tmp/c-$how
  cp -a "$tmp/c" "$d"
  f=$d/ckpt-0000000006/$wpart
  case $how in
    missing) rm "$f" ;;
    flip) printf '\377' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null ;;
    truncate) truncate -s 90 "$f" ;;
    manifest) rm "$d/ckpt-0000000006/manifest"; f=$d/ckpt-0000000006/manifest
              mkdir "$d/.ckpt-0000000008.tmp" && echo x > "$d/.ckpt-0000000008.tmp/a1.oarr" ;;
  esac
  "$drv" --executors 2 --checkpoint-dir "$d" --resume $SMALL \
    --checkpoint-every 2 > c-$how.out 2> c-$how.err || fail "$how: $(cat c-$how.err)"
  has c-$how.err "orion: warning: checkpoint $f: "
  has c-$how.err "using the checkpoint before it"
  has c-$how.err "resumed from the checkpoint of step 4"
  [ "$(rmses c-$how.out | head -1 | cut -d' ' -f1)" = 5 ] || fail "$how: $(cat c-$how.out)"
  [ "$(rmses c-$how.out | tail -1)" = "$(rmses small.out | tail -1)" ] ||
    fail "$how: ended with $(rmses c-$how.out | tail -1), not $(rmses small.out | tail -1)"
done
has c-flip.err "CRC-32 mismatch"
has c-truncate.err "truncated"
has c-missing.err "$wpart: missing"
has c-manifest.err "an unfinished checkpoint"

# ---- 3b. LDA and DNN resume where they left off ---------------------------
# The newest checkpoint is removed, as if the driver died before writing
# it: --resume runs the last steps again, with the undisturbed results.
for app in "lda/lda.lua --iters 4 --k 20 --check" "dnn/dnn.lua --epochs 4"; do
  name=${app%%/*}
  d=$tmp/$name
  "$drv" --quiet --executors 2 --checkpoint-dir "$d" $src/apps/$app \
    --checkpoint-every 2 > $name.out 2>&1 || fail "$name: $(cat $name.out)"
  rm -r "$d/ckpt-0000000004"
  "$drv" --quiet --executors 2 --checkpoint-dir "$d" --resume $src/apps/$app \
    --checkpoint-every 2 > $name-r.out 2>&1 || fail "$name --resume: $(cat $name-r.out)"
  # The table rows (step, seconds, a rate, then the results) of steps 3, 4.
  awk '$1 ~ /^[34]$/ { $2 = ""; $3 = ""; print }' $name.out > $name.rows
  awk '$1 ~ /^[0-9]+$/ { $2 = ""; $3 = ""; print }' $name-r.out > $name-r.rows
  [ -s $name.rows ] && cmp -s $name.rows $name-r.rows ||
    fail "$name: resumed rows differ: $(cat $name.rows) / $(cat $name-r.rows)"
done
has lda-r.out "# resumed after iteration 2"
has lda-r.out "# check: the document, word and topic counts match the assignments"

# ---- 4. errors ---------------------------------------------------------------
cat > state.lua <<'EOF'
local orion = require "orion"
local A = orion.zeros { 4, type = "f64" }
orion.checkpoint { step = 1, state = { ok = { 1, 2 }, opts = { f = print } } }
EOF
"$drv" --executors 0 --checkpoint-dir "$tmp/s" state.lua > state.out 2>&1
[ $? = 1 ] || fail "a function in state: $(cat state.out)"
has state.out "checkpoint: state.opts.f is a function; only nil, booleans, numbers, strings and tables of them can be saved"
[ ! -e "$tmp/s/ckpt-0000000001" ] || fail "a checkpoint was written despite the error"

d=$tmp/mm
"$drv" --quiet --executors 2 --checkpoint-dir "$d" $SMALL --checkpoint-every 2 > /dev/null 2>&1
"$drv" --executors 2 --checkpoint-dir "$d" --resume $SMALL --k 8 --checkpoint-every 2 > mm1.out 2>&1
[ $? = 1 ] || fail "other arguments: $(cat mm1.out)"
has mm1.out "was written by another script or with other arguments (mf.lua --synthetic 600,400,20000 --k 4 --epochs 6 --checkpoint-every 2), not by this run (mf.lua --synthetic 600,400,20000 --k 4 --epochs 6 --k 8 --checkpoint-every 2); give orion-driver --force"
"$drv" --executors 2 --checkpoint-dir "$d" --resume --force $SMALL --k 8 --checkpoint-every 2 > mm2.out 2>&1
[ $? = 1 ] || fail "other dims: $(cat mm2.out)"
has mm2.out "restore: array 'W' (id 3) does not match the checkpoint $d/ckpt-0000000006: the script declared 600 x 8 f32 dense with 4800 elements, the checkpoint holds 600 x 4 f32 dense with 2400"
"$drv" --executors 2 --checkpoint-dir "$d" $SMALL --checkpoint-every 2 > mm3.out 2>&1
[ $? = 1 ] || fail "fresh start over checkpoints: $(cat mm3.out)"
has mm3.out "already holds checkpoints (the newest of step 6); give orion-driver --resume"
"$drv" --resume $SMALL > mm4.out 2>&1
[ $? = 2 ] || fail "--resume alone: $(cat mm4.out)"
has mm4.out "orion-driver: --resume needs --checkpoint-dir DIR"

# ---- 5. orion.load reads a checkpoint's array ----------------------------
cat > load.lua <<EOF
local orion = require "orion"
local W = orion.load("$d/ckpt-0000000006/a3.oarr")
print(table.concat({ W:dims() }, "x"), W:type())
EOF
"$drv" --executors 0 load.lua > load.out 2>&1 || fail "orion.load: $(cat load.out)"
has load.out "600x4	f32"

# ---- 6. the executors wrote their parts ----------------------------------
m=$tmp/c/ckpt-0000000006/manifest
for a in 3 4; do
  for e in 0 1; do
    grep -qE "^part $a a$a\.r[0-9]+\.oarr [0-9]+ [0-9]+ executor-$e 127\.0\.0\.1 [0-9]+ [0-9a-f]{8}\$" "$m" ||
      fail "array $a has no part by executor $e: $(grep '^part' "$m")"
  done
done
! grep -q "^part .* driver " "$m" || fail "the driver wrote parts: $(grep '^part' "$m")"
[ ! -e "$tmp/c/ckpt-0000000006/a3.oarr" ] || fail "W was written whole"
ORION_CKPT_NO_PARTS=1 "$drv" --quiet --executors 2 --checkpoint-dir "$tmp/np" \
  $SMALL --checkpoint-every 2 > np.out 2>&1 || fail "ORION_CKPT_NO_PARTS: $(cat np.out)"
! grep -q "^part" "$tmp/np/ckpt-0000000006/manifest" || fail "ORION_CKPT_NO_PARTS wrote parts"
cat > same.lua <<EOF
local orion = require "orion"
for _, a in ipairs { "a3", "a4" } do
  local P = orion.load("$tmp/c/ckpt-0000000006/" .. a .. ".oarr"):to_table()
  local F = orion.load("$tmp/np/ckpt-0000000006/" .. a .. ".oarr"):to_table()
  local n, diff = 0, 0
  for i = 1, #F do
    for j = 1, #F[i] do
      n = n + 1
      if P[i][j] ~= F[i][j] then diff = diff + 1 end
    end
  end
  print(a, n, diff)
end
EOF
"$drv" --executors 0 same.lua > same.out 2>&1 || fail "orion.load of parts: $(cat same.out)"
has same.out "a3	2400	0"
has same.out "a4	1600	0"

# ---- 7. an executor killed while it writes its parts -----------------------
d=$tmp/die
CKPT_MARK=die.$$ ORION_TEST_CKPT_DIE=4:$tmp/died "$drv" --executors 2 \
  --checkpoint-dir "$d" $SMALL --checkpoint-every 2 > die.out 2> die.err &
pid=$!
reap $pid 120
rc=$?
[ $rc = 0 ] || fail "killed while writing: exit $rc: $(cat die.err)"
[ -e "$tmp/died" ] || fail "no executor died writing its parts: $(cat die.err)"
has die.err "was killed by signal 9 (Killed), writing the checkpoint of step 4"
has die.err "restart 1 of 3, from the checkpoint of step 2"
# The restart marks its place in stdout (the script's header lines come
# again after it), and the driver does not say it ends a job it restarts.
has die.out "== restart 1 of 3, from the checkpoint of step 2 =="
! grep -q "ending the job" die.err || fail "a restarted job says it ends: $(cat die.err)"
has die.err "orion: resumed from the checkpoint of step 2"
[ "$(rmses die.out | tail -1)" = "$(rmses small.out | tail -1)" ] ||
  fail "killed while writing: ended with $(rmses die.out | tail -1), not $(rmses small.out | tail -1)"
left=$(job_procs die)
[ -z "$left" ] || fail "killed while writing: processes left: $left"

# ---- 8. parts the driver cannot see ---------------------------------------
d=$tmp/ns
ORION_TEST_CKPT_FOLDER=1:$tmp/elsewhere "$drv" --executors 2 --checkpoint-dir "$d" \
  $SMALL --checkpoint-every 2 > ns.out 2> ns.err || fail "not shared: $(cat ns.err)"
has ns.err "orion: warning: checkpoint of step 6: executor 1 on 127.0.0.1 did not write its parts (the driver cannot see them in its folder: is the checkpoint directory not shared with that host?); the driver takes those rows back and writes them"
grep -q "^part 3 .* driver - " "$d/ckpt-0000000006/manifest" ||
  fail "not shared: no part by the driver: $(grep '^part' "$d/ckpt-0000000006/manifest")"
rm -r "$d/ckpt-0000000006"
"$drv" --executors 2 --checkpoint-dir "$d" --resume $SMALL \
  --checkpoint-every 2 > ns2.out 2> ns2.err || fail "not shared, --resume: $(cat ns2.err)"
has ns2.err "resumed from the checkpoint of step 4"
[ "$(rmses ns2.out | tail -1)" = "$(rmses small.out | tail -1)" ] ||
  fail "not shared: ended with $(rmses ns2.out | tail -1), not $(rmses small.out | tail -1)"

# ---- 9. recovery over ssh: a host that failed twice is replaced -----------
# A stand-in ssh first on PATH runs the command here, with the host it was
# asked for in FAKE_HOST and in ssh.log; the body (--allow-io) exits on
# node-b at step 2, so executor 0 fails there twice and the second restart
# starts it on node-c, the other host of the hosts file.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/ssh" <<'EOF2'
#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in -o) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=$1; shift
echo "$host" >> "$FAKE_SSH_LOG"
FAKE_HOST=$host exec /bin/sh -c "$*"
EOF2
chmod +x "$tmp/bin/ssh"
printf 'node-b 1\nnode-c 1\n' > "$tmp/hosts"
cat > twice.lua <<'EOF2'
local orion = require "orion"
local A = orion.zeros { 8, type = "i64" }
local first = 1
local resumed = orion.restore()
if resumed then first = resumed.step + 1 end
for step = first, 3 do
  orion.step(step)
  orion.parallel_for(A, function(i, v)
    if step == 2 and os.getenv("FAKE_HOST") == "node-b" then os.exit(9) end
    return v + step
  end, { tier = "lua" })
  print(("step %d: A[8] = %d"):format(step, A:get(8)))
  orion.checkpoint { step = step }
end
EOF2
CKPT_MARK=twice.$$ FAKE_SSH_LOG=$tmp/ssh.log PATH="$tmp/bin:$PATH" \
  "$drv" --allow-io --register-timeout 20 --hosts "$tmp/hosts" \
  --checkpoint-dir "$tmp/tw" twice.lua > twice.out 2> twice.err &
pid=$!
reap $pid 120
rc=$?
[ $rc = 0 ] || fail "host failed twice: exit $rc: $(cat twice.err)"
has twice.out "step 3: A[8] = 6"
has twice.err "orion: recovery: executor 0 on node-b failed; restart 1 of 3, from the checkpoint of step 1"
has twice.err "orion: recovery: executor 0 on node-b failed; restart 2 of 3, from the checkpoint of step 1"
has twice.err "orion: recovery: host node-b failed twice; executor 0 starts on node-c instead"
# Per run (two executors, started at once, in either order): b and c,
# b and c again, then c and c.
runs=$(awk '{ h[NR] = $1 } END { for (i = 1; i < NR; i += 2)
  printf "%s ", (h[i] < h[i + 1]) ? h[i] "+" h[i + 1] : h[i + 1] "+" h[i] }' "$tmp/ssh.log")
[ "$runs" = "node-b+node-c node-b+node-c node-c+node-c " ] ||
  fail "host failed twice: ssh went to $(tr '\n' ' ' < "$tmp/ssh.log")"
left=$(job_procs twice)
[ -z "$left" ] || fail "host failed twice: processes left: $left"

# ---- 10. Ctrl-C: SIGINT to the job's process group mid-run ----------------
# As a terminal's Ctrl-C does: the driver and its executors all get SIGINT
# (here right after a checkpoint is written, while the next epochs and
# checkpoints run). What is left is complete checkpoints (each with its
# manifest) and at worst an unfinished .ckpt-*.tmp folder, which --resume
# never reads; --resume ends with the undisturbed RMSE.
d=$tmp/int
# (A shell's background job starts with SIGINT ignored; perl, which every
# Debian has, puts back the default a terminal's foreground job has.)
CKPT_MARK=int.$$ setsid perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' "$drv" --executors 2 --checkpoint-dir "$d" $MF \
  --checkpoint-every 1 > int.out 2> int.err &
pid=$!
wait_for_line int.err "checkpoint of step 2 written" 60 $pid
kill -INT -$pid 2>/dev/null # (dash's kill takes no --)
reap $pid 60
grep -q "checkpoint of step 16 written" int.err &&
  fail "Ctrl-C: the run ended before the signal: $(cat int.err)"
for c in "$d"/ckpt-*; do
  [ -f "$c/manifest" ] || fail "Ctrl-C left $c without its manifest: $(ls "$c")"
done
left=$(job_procs int)
[ -z "$left" ] || fail "Ctrl-C: processes left: $left"
"$drv" --executors 2 --checkpoint-dir "$d" --resume $MF --checkpoint-every 1 \
  > int2.out 2> int2.err || fail "Ctrl-C, --resume: $(cat int2.err)"
has int2.err "orion: resumed from the checkpoint of step"
[ "$(rmses int2.out | tail -1)" = "$(tail -1 base.rmse)" ] ||
  fail "Ctrl-C: ended with $(rmses int2.out | tail -1), not $(tail -1 base.rmse)"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "all checkpoint tests passed"
