# The doc test engine, run by t/doctest.sh once per documentation file.
# It owns the example format (docs/design-notes.md, "Doc tests"):
#
#   Markdown: a line `<!-- doctest -->` (or `<!-- doctest slow -->`)
#   directly before a fenced block whose info string is `console`.
#   Roff (man pages): `.\" doctest` (or `.\" doctest slow`) before `.EX`,
#   with only requests (`.RS`, `.PP`, ...) between; the block ends at `.EE`.
#   In the block, `$ CMD` lines are shell commands (a line ending in `\`
#   continues on the next); the lines up to the next command are its
#   expected output (stdout and stderr together).  In expected output,
#   `[..]` matches any text within one line and a line `...` matches any
#   number of lines.  Roff text is unescaped first (`\-` `\e` `\&` `\(dq`
#   `\(aq`), so a roff `...` line is written `\&...`.
#
# Variables (-v): mode = check | update | lint; set = fast | slow;
# root = the directory commands run in; data = the dataset folder (for
# examples that name ../shared/data); ci = "true" when a missing data
# folder is a failure; tmo = seconds a command may run; name = the file
# name to print in messages.
#
# The lint (every mode): a fenced block or `.EX` block with a `$ ` line
# that is marked neither doctest nor `<!-- not-run: REASON -->` (roff:
# `.\" not-run: REASON`) is an error; not-run blocks are listed.
#
# Prints one line per problem, `FILE:LINE: ...`, and a summary; in update
# mode rewrites FILE with the outputs the commands printed, keeping the
# expected lines (wildcards included) that still match.  Exit status: 0
# when everything ran and matched, 1 otherwise.

function unroff(s) {
  gsub(/\\-/, "-", s); gsub(/\\\(dq/, "\"", s); gsub(/\\\(aq/, "'", s)
  gsub(/\\&/, "", s); gsub(/\\e/, "\\", s)
  return s
}

function enroff(s) {
  gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
  if (s ~ /^[.']/) s = "\\&" s
  return s
}

# One expected line against one output line; `[..]` is a wildcard.
function lmatch(p, s,    n, seg, k, at, pos, last) {
  if (index(p, "[..]") == 0) return p == s
  n = split(p, seg, /\[\.\.\]/)
  if (substr(s, 1, length(seg[1])) != seg[1]) return 0
  pos = length(seg[1]) + 1
  for (k = 2; k < n; k++) {
    if (seg[k] == "") continue
    at = index(substr(s, pos), seg[k])
    if (at == 0) return 0
    pos += at - 1 + length(seg[k])
  }
  last = seg[n]
  if (length(s) - pos + 1 < length(last)) return 0
  return substr(s, length(s) - length(last) + 1) == last
}

# Does expected E[i..ne] match output G[j..ng]?
function fmatch(i, j,    k) {
  if (i > ne) return j > ng
  if (E[i] == "...") {
    for (k = j; k <= ng + 1; k++) if (fmatch(i + 1, k)) return 1
    return 0
  }
  return j <= ng && lmatch(E[i], G[j]) && fmatch(i + 1, j + 1)
}

# Aligns E with G: keeps as many expected lines as match (wildcards
# included; `...` is always kept and absorbs what it can), then emits as
# few output lines as it can; the other expected lines are dropped.
# Fills OP[1..nop] with "=" i (keep expected line i), "." i k (`...` i
# absorbing up to output k-1), "-" i (drop), "+" j (output line j).
function align(    i, j, k, a, b, c, best, bk) {
  for (i = ne + 1; i >= 1; i--)
    for (j = ng + 1; j >= 1; j--) {
      if (i > ne) { D[i, j] = -0.001 * (ng + 1 - j); continue }
      if (E[i] == "...") {
        best = -1
        for (k = ng + 1; k >= j; k--)
          if (D[i + 1, k] > best) { best = D[i + 1, k]; bk = k }
        D[i, j] = best + 0.5; K[i, j] = bk; W[i, j] = "."
        continue
      }
      a = D[i + 1, j]; W[i, j] = "-"; D[i, j] = a
      if (j <= ng) {
        b = D[i, j + 1] - 0.001
        if (b > D[i, j]) { D[i, j] = b; W[i, j] = "+" }
        if (lmatch(E[i], G[j])) {
          c = D[i + 1, j + 1] + 1
          if (c >= D[i, j]) { D[i, j] = c; W[i, j] = "=" }
        }
      }
    }
  nop = 0; i = 1; j = 1
  while (i <= ne || j <= ng) {
    if (i > ne) { OP[++nop] = "+ " j; j++; continue }
    if (W[i, j] == ".") { OP[++nop] = ". " i; j = K[i, j]; i++ }
    else if (W[i, j] == "=") { OP[++nop] = "= " i; i++; j++ }
    else if (W[i, j] == "+") { OP[++nop] = "+ " j; j++ }
    else { OP[++nop] = "- " i; i++ }
  }
  for (k in D) delete D[k]
}

function srcline(text) { return roff ? enroff(text) : ind text }

# Runs command c of the current block, compares, records an update.
function run(c,    f, rc, line, n, k, w, x, ok) {
  f = root "/.doctest-cmd"
  printf "(exit %d)\n%s\n", prevrc, CMD[c] > f
  close(f)
  system("cd '" root "' && timeout " tmo " sh .doctest-cmd < /dev/null > .doctest-out 2>&1; echo $? > .doctest-rc")
  getline rc < (root "/.doctest-rc"); close(root "/.doctest-rc")
  prevrc = rc + 0
  ng = 0
  while ((getline line < (root "/.doctest-out")) > 0) G[++ng] = line
  close(root "/.doctest-out")
  ne = 0
  for (k = XS[c]; k <= XE[c]; k++) E[++ne] = T[k]
  ran++
  ok = fmatch(1, 1)
  if (ok) return
  align()
  if (mode == "update") {
    n = 0
    for (k = 1; k <= nop; k++) {
      split(OP[k], w, " ")
      if (w[1] == "+") NEW[c, ++n] = srcline(G[w[2]])
      else if (w[1] != "-") NEW[c, ++n] = RAW[XS[c] + w[2] - 1]
    }
    NN[c] = n; updated++
    printf "%s:%d: updated the output of: %s\n", name, CL[c], CMD[c]
    return
  }
  failed++
  printf "%s:%d: the output differs from the example's (lines %d-%d)\n", name, CL[c], XS[c], XE[c]
  printf "  $ %s\n", CMD[c]
  if (prevrc == 124) printf "  (timed out after %s s)\n", tmo
  printf "  (- expected, + got, = matched)\n"
  for (k = 1; k <= nop; k++) {
    split(OP[k], w, " ")
    if (w[1] == "+") printf "  + %s\n", G[w[2]]
    else if (w[1] == "-") printf "  - %s\n", E[w[2]]
    else printf "  = %s\n", E[w[2]]
  }
}

# The block of lines bs..be (exclusive of its fences) has ended.
function block(bs, be, marked, slow, notrun,    k, c, t, needdata, dollar) {
  dollar = 0
  for (k = bs; k <= be; k++) if (T[k] ~ /^\$ /) dollar = 1
  if (notrun != "") {
    if (dollar) printf "%s:%d: not run: %s\n", name, bs - 1, notrun
    return
  }
  if (!marked) {
    if (dollar) {
      linted++
      printf "%s:%d: an example with commands that is not a doc test; mark it %s or %s\n", name, bs - 1, roff ? ".\\\" doctest" : "<!-- doctest -->", roff ? ".\\\" not-run: REASON" : "<!-- not-run: REASON -->"
    }
    return
  }
  blocks++
  # Split into commands and their expected lines.
  nc = 0
  for (k = bs; k <= be; k++) {
    if (T[k] ~ /^\$ /) {
      t = substr(T[k], 3); CL[++nc] = k
      while (t ~ /\\$/ && k < be) { k++; t = t "\n" T[k] }
      CMD[nc] = t; XS[nc] = k + 1; XE[nc] = k
      if (t ~ /\.\.\/shared\/data/) needdata = 1
      continue
    }
    if (nc == 0) {
      failed++
      printf "%s:%d: expected output before the first `$ ` command\n", name, k
      return
    }
    XE[nc] = k
  }
  if (nc == 0) {
    failed++
    printf "%s:%d: a doc test with no `$ ` command\n", name, bs - 1
    return
  }
  if (mode == "lint") return
  if ((set == "slow") != slow) return
  if (needdata && !hasdata) {
    if (ci == "true") {
      failed++
      printf "%s:%d: needs %s, which is missing (CI=true)\n", name, bs - 1, data
    } else {
      skipped++
      printf "%s:%d: skipped: needs %s, which is missing\n", name, bs - 1, data
    }
    return
  }
  prevrc = 0
  for (c = 1; c <= nc; c++) run(c)
  for (c = 1; c <= nc; c++) if (c in NN) {
    nrep++
    RS_[nrep] = XS[c]; RE_[nrep] = XE[c]; RI[nrep] = XS[c] - 1
    for (k = 1; k <= NN[c]; k++) RT[nrep, k] = NEW[c, k]
    RN[nrep] = NN[c]
  }
  for (k in NEW) delete NEW[k]
  for (k in NN) delete NN[k]
}

BEGIN {
  roff = name ~ /\.[1-9]$/
  hasdata = system("test -d '" data "'") == 0
}

{ RAW[NR] = $0 }

END {
  n = NR; inb = 0; pend = 0; pslow = 0; pnot = ""
  for (l = 1; l <= n; l++) {
    s = RAW[l]
    if (roff) {
      if (!inb) {
        if (s ~ /^\.\\" doctest( slow)?[ \t]*$/) { pend = 1; pslow = s ~ /slow/; pnot = ""; continue }
        if (s ~ /^\.\\" not-run: /) { pnot = s; sub(/^\.\\" not-run: */, "", pnot); pend = 0; continue }
        if (s ~ /^\.EX/) { inb = 1; bs = l + 1; continue }
        if (s !~ /^[.']/) { pend = 0; pnot = "" }
        continue
      }
      if (s ~ /^\.EE/) {
        block(bs, l - 1, pend, pslow, pnot)
        inb = 0; pend = 0; pnot = ""
        continue
      }
      T[l] = unroff(s)
      continue
    }
    if (!inb) {
      if (s ~ /^[ \t]*<!-- doctest( slow)? -->[ \t]*$/) { pend = 1; pslow = s ~ /slow/; pnot = ""; continue }
      if (s ~ /^[ \t]*<!-- not-run: .*-->[ \t]*$/) {
        pnot = s; sub(/^[ \t]*<!-- not-run: */, "", pnot); sub(/ *-->[ \t]*$/, "", pnot); pend = 0
        continue
      }
      if (s ~ /^[ \t]*(```|~~~)/) {
        inb = 1; bs = l + 1
        ind = s; sub(/[`~].*$/, "", ind)
        fence = substr(s, length(ind) + 1, 3)
        info = substr(s, length(ind) + 1); sub(/^[`~]+[ \t]*/, "", info)
        if (pend && info != "console") {
          failed++
          printf "%s:%d: a doc test must be a ```console block, not '%s'\n", name, l, info
          pend = 0
        }
        continue
      }
      if (s !~ /^[ \t]*$/) { pend = 0; pnot = "" }
      continue
    }
    t = s
    if (substr(t, 1, length(ind)) == ind) t = substr(t, length(ind) + 1)
    if (t ~ /^(```|~~~)[ \t]*$/ && substr(t, 1, 3) == fence) {
      block(bs, l - 1, pend, pslow, pnot)
      inb = 0; pend = 0; pnot = ""
      continue
    }
    T[l] = t
  }
  if (inb) { failed++; printf "%s:%d: a block that is never closed\n", name, bs - 1 }

  if (mode == "update" && nrep > 0) {
    out = FILENAME ".doctest-new"
    r = 1
    for (l = 1; l <= n; l++) {
      if (r <= nrep && l == RI[r] + 1 && RS_[r] > RE_[r]) {
        # An empty expected region: insert after the command line.
        for (k = 1; k <= RN[r]; k++) print RT[r, k] > out
        r++
      }
      if (r <= nrep && l == RS_[r] && RS_[r] <= RE_[r]) {
        for (k = 1; k <= RN[r]; k++) print RT[r, k] > out
        l = RE_[r]; r++
        continue
      }
      print RAW[l] > out
    }
    close(out)
    system("cat '" out "' > '" FILENAME "' && rm -f '" out "'")
  }
  printf "%s: %d doc tests, %d commands run, %d differ, %d updated, %d skipped, %d unmarked\n", name, blocks, ran, failed, updated, skipped, linted
  exit ((failed + linted) > 0 ? 1 : 0)
}
