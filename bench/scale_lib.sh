# bench/scale_lib.sh: bench/scale.sh's reading of a run and its tables;
# sourced, not run (t/scale_test.sh runs it on stand-in data, no root).

# scale_median: the median of the numbers on stdin, one a line ("nan"
# where there are none).
scale_median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# scale_spread MEDIAN: (max - min) / MEDIAN of the numbers on stdin, "%.2f".
scale_spread() {
  awk -v m="$1" 'NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 }
    END { printf "%.2f\n", (NR > 0 && m > 0 ? (hi - lo) / m : 0) }'
}

# first_lines IN OUT F: IN's (gzip or text) first F (a fraction) of its
# lines to OUT (weak scaling's data).
first_lines() {
  local total
  total=$(zcat -f "$1" | wc -l)
  zcat -f "$1" | head -n "$(awk -v t="$total" -v f="$3" 'BEGIN { printf "%d", t * f + 0.5 }')" > "$2"
}
# docword_part IN OUT F: a UCI docword corpus's first F (a fraction) of its
# documents, its header (documents, words, entries) rewritten.
docword_part() {
  zcat -f "$1" | awk -v f="$3" 'NR == 1 { d = int($1 * f + 0.5); next } NR == 2 { w = $1; next }
    NR == 3 { next } $1 <= d { line[++n] = $0 }
    END { print d; print w; print n; for (i = 1; i <= n; i++) print line[i] }' > "$2"
}

# scale_summary METRICS EPOCHS: one run's figures per epoch, from the
# orion-driver --loop-metrics lines of its METRICS file.  The training loop
# is the call site called at least EPOCHS times that took the most seconds
# in all; its C calls are PER = C / EPOCHS an epoch (a DNN epoch is one
# call per round), and epoch 1 (its first PER calls: loading, first
# touches) is left out.  Over epochs 2..EPOCHS it prints one line:
#   LOOP SECONDS PEER DRIVER DCPU CALLS SPLIT...
# LOOP the training loop's FILE:LINE; SECONDS its seconds an epoch; PEER
# and DRIVER the bytes an epoch between executors and through the driver
# (every loop's from epoch 2's first training call to the last call of a
# loop called in every epoch: epochs 2..EPOCHS, without epoch 1's first
# touches or what runs once after the last epoch); DCPU the driver's CPU
# seconds an epoch (its total's growth from the end of epoch 1 over the
# same span); CALLS the training loop's calls an epoch; then per executor
# C:W:I, the fractions of the training loop's seconds it spent computing
# blocks, waiting for rows and idle (the rest, 1 - C - W - I, is outside
# its span: the driver's dispatch before and collection after).  Exits 1
# with a message naming METRICS where it has no loop lines or fewer than
# two epochs of calls.
scale_summary() {
  awk -v E="$2" -v file="$1" '
    function num(k,   re) { re = "\"" k "\":[-0-9.e+]*"
      return match($0, re) ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
    function str(k,   re) { re = "\"" k "\":\"[^\"]*\""
      return match($0, re) ? substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5) : "" }
    /"call":/ && /"loop_seconds":/ {
      n++; L[n] = str("loop"); S[n] = num("loop_seconds"); P[n] = num("loop_peer_bytes")
      D[n] = num("loop_driver_bytes"); T[n] = num("driver_cpu_total_s")
      CO[n] = str("exec_compute_s"); WA[n] = str("exec_wait_s"); ID[n] = str("exec_idle_s")
      tot[L[n]] += S[n]; calls[L[n]]++
    }
    END {
      if (n == 0) { printf "bench/scale.sh: %s: no --loop-metrics lines\n", file > "/dev/stderr"; exit 1 }
      for (l in tot) if (calls[l] >= E && (main == "" || tot[l] > tot[main])) main = l
      if (main == "") { printf "bench/scale.sh: %s: no loop called in each of %d epochs\n", file, E > "/dev/stderr"; exit 1 }
      per = int(calls[main] / E)
      if (per < 1 || E < 2) { printf "bench/scale.sh: %s: %d calls of %s, fewer than 2 epochs of %d\n", file, calls[main], main, E > "/dev/stderr"; exit 1 }
      c = 0; b = 0; endE = 0
      for (i = 1; i <= n; i++) {
        if (calls[L[i]] >= E) endE = i
        if (L[i] != main) continue
        if (++c == per + 1) b = i
        if (c <= per || c > per * E) continue
        secs += S[i]; h = split(CO[i], a, " "); split(WA[i], w, " "); split(ID[i], d, " ")
        if (h > nh) nh = h
        for (j = 1; j <= h; j++) { cs[j] += a[j]; ws[j] += w[j]; is[j] += d[j] }
      }
      for (i = b; i <= endE; i++) { peer += P[i]; drv += D[i] }
      e = E - 1
      printf "%s %.6f %.0f %.0f %.6f %d", main, secs / e, peer / e, drv / e, (T[endE] - T[b - 1]) / e, per
      for (j = 1; j <= nh; j++)
        printf " %.3f:%.3f:%.3f", (secs > 0 ? cs[j] / secs : 0), (secs > 0 ? ws[j] / secs : 0), (secs > 0 ? is[j] / secs : 0)
      printf "\n"
    }' "$1"
}

# scale_predicted METRICS LOOP N PER: the predicted seconds of an epoch on
# N hosts (the training loop LOOP's prediction from its second pass, times
# its PER calls an epoch) and the predicted bottleneck, from an
# orion-driver --predict run's METRICS; "nan -" where it has none.
scale_predicted() {
  awk -v loop="$2" -v n="$3" -v per="$4" '
    /"predicted_pass_seconds":/ && index($0, "\"loop\":\"" loop "\"") && /"pass":2[,}]/ &&
    index($0, "\"predict\":\"" n "x") {
      v = $0; sub(/.*"predicted_pass_seconds":/, "", v); sub(/[,}].*/, "", v)
      b = $0; sub(/.*"bottleneck":"/, "", b); sub(/".*/, "", b); gsub(/ /, "_", b)
      p = v * per; bn = b }
    END { if (p == "") print "nan -"; else printf "%.6f %s\n", p, bn }' "$1"
}

# scale_table DIR TAG MODE Q NS: the table of one workload from DIR's
# files TAG-N-R.sum (scale_summary's line for run R on N hosts),
# TAG-N.load (the load average when N's runs ended) and TAG-N.pred
# (scale_predicted's line, where there is one).  MODE strong: efficiency
# T(1) / (N T(N)) (the same data); weak: T(1) / T(N) (data in proportion
# to N).  Per N: the median epoch seconds over the runs and their spread,
# the efficiency, the bytes an epoch per host between executors (MB), the
# driver's share of all bytes, the driver's CPU as a share of one host's
# (Q CPUs over the epoch), the hosts' mean compute / wait / idle / outside
# split (%), the predicted epoch seconds and predicted / measured, the load
# average and the predicted bottleneck; then, per N, each host's
# compute / wait / idle (%), the mean over the runs.  Also writes
# DIR/TAG.eff: "N efficiency wait idle outside driver-bytes-% driver-CPU-%"
# a line, for the goals.
scale_table() {
  local dir=$1 tag=$2 mode=$3 q=$4 ns=$5 n t1="" t f
  printf '%5s %9s %6s %6s %10s %7s %7s %15s %9s %6s %5s  %s\n' hosts "epoch s" spread eff \
    "MB/ep/host" "drv B%" "drv CPU" "cmp/wait/idle/o" "pred s" "p/m" load bottleneck
  : > "$dir/$tag.eff"
  for n in $ns; do
    ls "$dir/$tag-$n-"*.sum > /dev/null 2>&1 || continue
    t=$(cat "$dir/$tag-$n-"*.sum | awk '{ print $2 }' | scale_median)
    [ -n "$t1" ] || t1=$t
    cat "$dir/$tag-$n-"*.sum | awk -v n="$n" -v t="$t" -v t1="$t1" -v q="$q" \
        -v mode="$mode" -v first="$(echo "$ns" | awk '{ print $1 }')" \
        -v spread="$(cat "$dir/$tag-$n-"*.sum | awk '{ print $2 }' | scale_spread "$t")" \
        -v load="$(cat "$dir/$tag-$n.load" 2> /dev/null || echo -)" \
        -v pred="$(cat "$dir/$tag-$n.pred" 2> /dev/null || echo 'nan -')" \
        -v eff_out="$dir/$tag.eff" '
      { runs++; peer += $3; drv += $4; cpu += $5
        for (j = 7; j <= NF; j++) { split($j, f, ":"); c += f[1]; w += f[2]; i += f[3]; h++ } }
      END {
        peer /= runs; drv /= runs; cpu /= runs; c /= h; w /= h; i /= h; o = 1 - c - w - i
        if (o < 0) o = 0
        # the first N of the list is the baseline (normally 1 host)
        eff = (mode == "weak") ? t1 / t : t1 * first / (n * t)
        share = peer + drv > 0 ? 100 * drv / (peer + drv) : 0
        dcpu = t > 0 ? 100 * cpu / (q * t) : 0
        split(pred, p, " ")
        printf "%5d %9.4f %6s %6.2f %10.2f %6.2f%% %6.1f%% %15s %9s %6s %5s  %s\n", n, t, spread, eff,
          peer / 1e6 / n, share, dcpu, sprintf("%d/%d/%d/%d", 100 * c + 0.5, 100 * w + 0.5, 100 * i + 0.5, 100 * o + 0.5),
          p[1] == "nan" ? "-" : sprintf("%.4f", p[1]), p[1] == "nan" ? "-" : sprintf("%.2f", p[1] / t),
          load, p[2] == "" ? "-" : p[2]
        printf "%d %.4f %.4f %.4f %.4f %.4f %.4f\n", n, eff, w, i, o, share, dcpu >> eff_out
      }'
  done
  for n in $ns; do
    ls "$dir/$tag-$n-"*.sum > /dev/null 2>&1 || continue
    cat "$dir/$tag-$n-"*.sum | awk -v n="$n" '
      { for (j = 7; j <= NF; j++) { split($j, f, ":"); c[j] += f[1]; w[j] += f[2]; i[j] += f[3] }
        if (NF > nf) nf = NF; runs++ }
      END { printf "  %d host%s, each host'"'"'s compute/wait/idle %%:", n, (n > 1 ? "s" : "")
            for (j = 7; j <= nf; j++) printf " %d/%d/%d", 100 * c[j] / runs + 0.5, 100 * w[j] / runs + 0.5, 100 * i[j] / runs + 0.5
            printf "\n" }'
  done
}

# scale_goal LABEL EFFFILE N WANT: one goal's line: the efficiency at N
# hosts (from scale_table's .eff file) against WANT: "met", or "missed"
# with what bounds it (the largest of the hosts' mean wait for rows, idle
# time and time outside their span: the driver's dispatch and collection).
scale_goal() {
  awk -v label="$1" -v n="$3" -v want="$4" '
    $1 == n { got = 1
      bound = "waiting for rows " int(100 * $3 + 0.5) "%"; b = $3
      if ($4 > b) { bound = "idle (no block to run, or held by the quota) " int(100 * $4 + 0.5) "%"; b = $4 }
      if ($5 > b) { bound = "outside the hosts'"'"' span (driver dispatch, collection) " int(100 * $5 + 0.5) "%" }
      printf "%-44s %5.2f >= %.2f  %s\n", label, $2, want,
        ($2 >= want ? "met" : "missed, bound: " bound) }
    END { if (!got) printf "%-44s     - >= %.2f  not measured (no run on %d hosts)\n", label, want, n }' "$2"
}

# scale_driver_goal LABEL EFFFILE N: the driver's share of the bytes (< 1%)
# and its CPU against one host's (< 5%) at N hosts.
scale_driver_goal() {
  awk -v label="$1" -v n="$3" '
    $1 == n { got = 1
      printf "%-44s bytes %.2f%% < 1%% %s; CPU %.1f%% of a host < 5%% %s\n", label, $6,
        ($6 < 1 ? "met" : "missed"), $7, ($7 < 5 ? "met" : "missed") }
    END { if (!got) printf "%-44s not measured (no run on %d hosts)\n", label, n }' "$2"
}

# scale_cpu_of ERRFILE N: one run's CPU seconds from bench/netcluster.sh's
# stderr ("netcluster: executor K used S CPU seconds", "the driver used S
# CPU seconds"): "S0 S1 ... S(N-1) SD", "-" for one it did not report.
scale_cpu_of() {
  awk -v n="$2" '
    /^netcluster: executor [0-9]+ used / { e[$3] = $5 }
    /^netcluster: the driver used / { d = $5 }
    END { for (k = 0; k < n; k++) printf "%s ", (k in e ? e[k] : "-")
          print (d == "" ? "-" : d) }' "$1"
}

# scale_cpu DIR TAG NS Q: per N, what each host's quota gave it: the mean
# over the runs (DIR/TAG-N-R.cpu, scale_cpu_of's lines) of each host's CPU
# seconds over the whole run (loading included) and the driver's, and
# their sum against N x Q x the runs' mean wall seconds (DIR/TAG-N-R.wall),
# the share of their quotas the hosts got.
scale_cpu() {
  local dir=$1 tag=$2 ns=$3 q=$4 n
  for n in $ns; do
    ls "$dir/$tag-$n-"*.cpu > /dev/null 2>&1 || continue
    cat "$dir/$tag-$n-"*.cpu | awk -v n="$n" -v q="$q" \
        -v wall="$(cat "$dir/$tag-$n-"*.wall 2> /dev/null | awk '{ s += $1; k++ } END { if (k) printf "%.6f", s / k }')" '
      { runs++; for (j = 1; j <= NF; j++) if ($j != "-") { s[j] += $j; c[j]++ } }
      END {
        printf "  %d host%s, each host'"'"'s CPU s (whole run):", n, (n > 1 ? "s" : "")
        for (j = 1; j <= n; j++) { printf " %s", (c[j] ? sprintf("%.1f", s[j] / c[j]) : "-"); if (c[j]) { tot += s[j] / c[j]; got++ } }
        printf "; the driver: %s", (c[n + 1] ? sprintf("%.1f", s[n + 1] / c[n + 1]) : "-")
        if (wall > 0 && got == n) printf "; the hosts got %.0f%% of N x Q x %.1f s", 100 * tot / (n * q * wall), wall
        printf "\n" }'
  done
}
