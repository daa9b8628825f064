#!/bin/sh
# Checks that the man pages and the programs' --help agree on the options:
# every option that `--help` lists is described in the man page's options
# section, and every option described there is in `--help`; and that the
# SYNOPSIS lines of each program (its .SY ... .YS blocks) name exactly
# the options its --help lists.
#
#   orion-driver --help       docs/orion-driver.1    section OPTIONS
#   orion-driver plot --help  docs/orion-driver.1    section PLOTTING METRICS
#   orion-executor --help     docs/orion-executor.1  section OPTIONS
#
# An option in --help is a word starting with '-' at the start of an
# indented line ("  -h, --help  show this help" gives -h and --help); in a
# man page, it is a word starting with '-' on the tag line after a .TP in
# the section.  "--name=VALUE" and "--name[=VALUE]" count as --name, and
# "--[no-]name" as --name and --no-name.
# Usage: t/check_man.sh  (uses $ORION_SRCDIR, $ORION_DRIVER, $ORION_EXECUTOR,
# as `make check` sets them).  Prints each difference; exits 1 on one.
src=${ORION_SRCDIR:-.}
driver=${ORION_DRIVER:-./orion-driver}
executor=${ORION_EXECUTOR:-./orion-executor}

# Splits "--[no-]x" into "--x" and "--no-x"; drops "=VALUE", "[=VALUE]"
# and commas.
normalise() {
  sed -e 's/\[=.*//' -e 's/[,=].*//' -e 's/^\(--*\)\[no-\]\(.*\)/\1\2\n\1no-\2/' | sort -u
}

# The options that `PROGRAM ARGS --help` lists, one a line.
help_options() {
  "$@" --help 2>&1 | awk '
    /^[ \t]+-/ {
      for (i = 1; i <= NF; i++) {
        if ($i !~ /^-/) break
        if ($i ~ /^--?[[A-Za-z]/) print $i
      }
    }' | normalise
}

# The options a man page describes in section $2 (the .SH title), one a
# line.
man_options() {
  awk -v want="$2" '
    /^\.SH / {
      t = substr($0, 5); gsub(/"/, "", t)
      in_sec = (t == want); next
    }
    !in_sec { next }
    /^\.TP/ { tag = 1; next }
    tag {
      tag = 0
      line = $0
      gsub(/\\f[BIRP]/, "", line)   # font changes
      gsub(/\\-/, "-", line)        # roff minus signs
      gsub(/\\&/, "", line)
      gsub(/"/, " ", line)
      n = split(line, w, /[ \t]+/)
      for (i = 1; i <= n; i++)
        if (w[i] ~ /^--?[[A-Za-z]/) print w[i]
    }' "$1" | normalise
}

# The options the SYNOPSIS of man page $1 names for program $2 (the .SY
# line's name, "orion-driver" or "orion-driver\\ plot"), over all of its
# .SY ... .YS blocks, one a line.
synopsis_options() {
  awk -v want="$2" '
    /^\.SH / {
      t = substr($0, 5); gsub(/"/, "", t)
      in_sec = (t == "SYNOPSIS"); next
    }
    !in_sec { next }
    /^\.SY/ { on = (substr($0, 5) == want); next }
    /^\.YS/ { on = 0; next }
    on {
      line = $0
      sub(/^\.[A-Z]+ /, "", line)  # the macro
      gsub(/\\f[BIRP]/, "", line)
      gsub(/\\-/, "-", line)
      gsub(/\\&/, "", line)
      gsub(/["|]/, " ", line)
      n = split(line, w, /[ \t]+/)
      for (i = 1; i <= n; i++)
        if (w[i] ~ /^--?[A-Za-z]/) print w[i]
    }' "$1" | normalise
}

status=0
# compare WHAT HELP-FILE MAN-FILE PAGE SECTION
compare() {
  if ! [ -s "$2" ]; then
    echo "check_man: $1 --help lists no options"
    status=1
  fi
  if ! [ -s "$3" ]; then
    echo "check_man: $4 section $5 describes no options"
    status=1
  fi
  for o in $(comm -23 "$2" "$3"); do
    echo "check_man: $1 --help lists $o, but $4 (section $5) does not describe it"
    status=1
  done
  for o in $(comm -13 "$2" "$3"); do
    echo "check_man: $4 (section $5) describes $o, but $1 --help does not list it"
    status=1
  done
}

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
for prog in "$driver" "$executor"; do
  [ -x "$prog" ] || { echo "check_man: no program $prog (run make)"; exit 2; }
done

help_options "$driver" >"$tmp/dh"
man_options "$src/docs/orion-driver.1" "OPTIONS" >"$tmp/dm"
compare "orion-driver" "$tmp/dh" "$tmp/dm" docs/orion-driver.1 OPTIONS

synopsis_options "$src/docs/orion-driver.1" "orion-driver" >"$tmp/ds"
compare "orion-driver" "$tmp/dh" "$tmp/ds" docs/orion-driver.1 SYNOPSIS

help_options "$driver" plot >"$tmp/ph"
man_options "$src/docs/orion-driver.1" "PLOTTING METRICS" >"$tmp/pm"
compare "orion-driver plot" "$tmp/ph" "$tmp/pm" docs/orion-driver.1 \
  "PLOTTING METRICS"
synopsis_options "$src/docs/orion-driver.1" "orion-driver\\ plot" >"$tmp/ps"
compare "orion-driver plot" "$tmp/ph" "$tmp/ps" docs/orion-driver.1 SYNOPSIS

help_options "$executor" >"$tmp/eh"
man_options "$src/docs/orion-executor.1" "OPTIONS" >"$tmp/em"
compare "orion-executor" "$tmp/eh" "$tmp/em" docs/orion-executor.1 OPTIONS
synopsis_options "$src/docs/orion-executor.1" "orion-executor" >"$tmp/es"
compare "orion-executor" "$tmp/eh" "$tmp/es" docs/orion-executor.1 SYNOPSIS

[ $status -eq 0 ] && echo "check_man: the options of orion-driver, orion-driver plot and orion-executor match their man pages (options and synopses)"
exit $status
