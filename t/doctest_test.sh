#!/bin/sh
# Tests t/doctest.sh on small pages in a scratch source root: matching
# with `[..]` and `...`, exit statuses through `echo $?`, continued
# commands, roff unescaping, the failure message (file, line, expected
# and got), the lint of unmarked examples and not-run ones, the slow set,
# the data skip (and its failure under CI=true) and --update keeping the
# wildcard lines that still match.
here=$(cd "$(dirname "$0")" && pwd)
dt=$here/doctest.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/orion-doctest-test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src" "$tmp/src/docs"
# doctest.sh needs a driver to link; any executable will do here.
printf '#!/bin/sh\necho fake driver\n' > "$tmp/src/orion-driver"
cp "$tmp/src/orion-driver" "$tmp/src/orion-executor"
chmod +x "$tmp/src/orion-driver" "$tmp/src/orion-executor"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
test_ci=
run() { # run EXPECTED-STATUS ARGS...: runs doctest.sh, output in $tmp/out
  want=$1; shift
  # CI is the test's own choice ($test_ci), not the caller's: under CI=true
  # a missing data folder fails instead of skipping.
  CI=$test_ci ORION_SRCDIR=$tmp/src ORION_DRIVER=$tmp/src/orion-driver \
    ORION_DATA=$tmp/nodata sh "$dt" "$@" > "$tmp/out" 2>&1
  got=$?
  [ "$got" = "$want" ] || { fail "doctest.sh $* exited $got, not $want"; cat "$tmp/out"; }
}
same() { # same WANT GOT WHAT: the file GOT must equal WANT
  cmp -s "$1" "$2" || { fail "$3 wrote:"; diff -u "$1" "$2"; }
}
has() { grep -qF -- "$1" "$tmp/out" || { fail "no '$1' in the output of doctest.sh"; cat "$tmp/out"; }; }

cat > "$tmp/src/docs/ok.md" <<'EOF'
<!-- doctest -->
```console
$ echo hello; echo port 4711; echo a b c
hello
port [..]
a [..] c
$ printf 'a\nb\nc\nd\n'
a
...
d
$ false
$ echo $?
1
$ echo x \
    y
x y
$ orion-driver
fake driver
```

  <!-- doctest -->
  ```console
  $ echo indented
  indented
  ```

<!-- not-run: needs real hosts -->
```console
$ ssh somewhere
```
EOF
run 0 docs/ok.md
has 'docs/ok.md: 2 doc tests, 7 commands run, 0 differ'
has 'docs/ok.md:28: not run: needs real hosts'

cat > "$tmp/src/docs/ok.1" <<'EOF'
.SH EXAMPLES
.\" doctest
.RS
.EX
$ printf '%s\en' \-\-k "a\e\eb" .x
\-\-k
a\eb
\&.x
$ seq 5
1
\&...
5
.EE
.RE
EOF
run 0 docs/ok.1
has 'docs/ok.1: 1 doc tests, 2 commands run, 0 differ'

cat > "$tmp/src/docs/bad.md" <<'EOF'
Text.

<!-- doctest -->
```console
$ echo one; echo two; echo pid 12
one
three
pid [..]
```
EOF
run 1 docs/bad.md
has 'docs/bad.md:5: the output differs from the example'
has '$ echo one; echo two; echo pid 12'
has '- three'
has '+ two'
has '= pid [..]'

cat > "$tmp/src/docs/lint.md" <<'EOF'
```
$ orion-driver x.lua
output
```
```sh
./orion-driver x.lua   # a command line alone is no example output
```
EOF
cat > "$tmp/src/docs/lint.1" <<'EOF'
.EX
$ orion\-driver x.lua
.EE
EOF
run 1 --lint docs/lint.md docs/lint.1
has 'docs/lint.md:1: an example with commands that is not a doc test'
has 'docs/lint.1:1: an example with commands that is not a doc test'
has 'docs/lint.md: 0 doc tests, 0 commands run, 0 differ, 0 updated, 0 skipped, 1 unmarked'

cat > "$tmp/src/docs/slow.md" <<'EOF'
<!-- doctest slow -->
```console
$ echo slow
not what it prints
```
<!-- doctest -->
```console
$ cat ../shared/data/x
data
```
EOF
run 0 docs/slow.md
has 'docs/slow.md:7: skipped: needs'
run 1 --slow docs/slow.md
has 'docs/slow.md:3: the output differs'
test_ci=true
run 1 docs/slow.md
has 'which is missing (CI=true)'
test_ci=

cat > "$tmp/src/docs/up.md" <<'EOF'
<!-- doctest -->
```console
$ echo kept; echo port 99; echo new; printf 'a\nb\nc\n'; echo last
kept
port [..]
old
...
c
gone
last
$ echo inserted
$ true
```
EOF
DOCTEST_UPDATE=1 run 0 docs/up.md
has 'docs/up.md:3: updated the output of'
cat > "$tmp/want" <<'EOF'
<!-- doctest -->
```console
$ echo kept; echo port 99; echo new; printf 'a\nb\nc\n'; echo last
kept
port [..]
...
c
last
$ echo inserted
inserted
$ true
```
EOF
same "$tmp/want" "$tmp/src/docs/up.md" "--update"
run 0 docs/up.md

cat > "$tmp/src/docs/up.1" <<'EOF'
.\" doctest
.EX
$ printf '%s\en' \-x .y
old
.EE
EOF
run 0 --update docs/up.1
printf '%s\n' '.\" doctest' .EX "\$ printf '%s\\en' \\-x .y" '\-x' '\&.y' .EE > "$tmp/want"
same "$tmp/want" "$tmp/src/docs/up.1" "--update on roff"

[ $fails = 0 ] && echo "doctest_test: all passed"
[ $fails = 0 ]
