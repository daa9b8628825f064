# Turns analysis/cgen_prelude.h into analysis/cgen_prelude.inc: a C array of
# string literals, one per line, that analysis/cgen.c copies into every
# generated source.  Each `#include "PATH"` line of the template is replaced
# by the part of srcdir/PATH (util/cbody.h, util/luaops.h, util/luarand.h,
# and for nvcc util/gbody.h, analysis/cgen_prelude_gpu.h) between the lines
# `/* ORION_PRELUDE_BEGIN */` and `/* ORION_PRELUDE_END */`, so the
# generated source has one copy of the ABI and of Lua's arithmetic and
# needs no header of the project.  A header without that part, or whose
# part includes a project header ("..."), is an error: the executor hosts
# would not have it.  Comments and blank lines are left out: the driver
# ships every generated source to every executor, and the headers document
# themselves.
# POSIX awk; run as
#   awk -v srcdir=DIR -f mkprelude.awk DIR/analysis/cgen_prelude.h > OUT

function fail(msg) {
  print "mkprelude.awk: " msg > "/dev/stderr"
  failed = 1
  exit 1
}

# s as the body of a C string literal: backslash and quote escaped, tabs
# as \t, and the second of two question marks (no trigraph under -std=c11).
function cstr(s,    out, i, ch) {
  out = ""
  for (i = 1; i <= length(s); i++) {
    ch = substr(s, i, 1)
    if (ch == "\\" || ch == "\"" || (ch == "?" && substr(s, i - 1, 1) == "?"))
      out = out "\\" ch
    else if (ch == "\t")
      out = out "\\t"
    else
      out = out ch
  }
  return out
}

# s without its comments (a comment may span lines: incomment carries
# over), string and character literals kept as they are.
function strip(s,    out, i, ch, quote) {
  out = ""
  quote = ""
  for (i = 1; i <= length(s); i++) {
    ch = substr(s, i, 1)
    if (incomment) {
      if (ch == "*" && substr(s, i + 1, 1) == "/") {
        incomment = 0
        i++
      }
    } else if (quote != "") {
      out = out ch
      if (ch == "\\") {
        out = out substr(s, i + 1, 1)
        i++
      } else if (ch == quote) {
        quote = ""
      }
    } else if (ch == "/" && substr(s, i + 1, 1) == "*") {
      incomment = 1
      i++
    } else {
      if (ch == "\"" || ch == "'")
        quote = ch
      out = out ch
    }
  }
  sub(/[ \t]+$/, "", out)
  return out
}

function emit(s) {
  s = strip(s)
  if (s != "")
    print "    \"" cstr(s) "\","
}

function embed(path,    file, line, rc, part) {
  file = srcdir "/" path
  part = 0
  while ((rc = (getline line < file)) > 0) {
    if (line ~ /^\/\* ORION_PRELUDE_BEGIN \*\/$/) {
      part = 1
    } else if (line ~ /^\/\* ORION_PRELUDE_END \*\/$/) {
      part = 2
      break
    } else if (part == 1) {
      if (line ~ /^[ \t]*#[ \t]*include[ \t]*"/)
        fail(path " includes a project header: " line)
      emit(line)
    }
  }
  if (rc < 0)
    fail("cannot read " file)
  if (part != 2)
    fail(path " has no ORION_PRELUDE_BEGIN ... ORION_PRELUDE_END part")
  close(file)
}

BEGIN {
  if (srcdir == "")
    srcdir = "."
  print "/* Generated from analysis/cgen_prelude.h and the headers it"
  print " * includes (util/cbody.h, ...) by analysis/mkprelude.awk:"
  print " * do not edit. */"
  print "static const char *const prelude[] = {"
}

/^#include "[^"]*"[ \t]*$/ {
  path = $0
  sub(/^#include "/, "", path)
  sub(/"[ \t]*$/, "", path)
  embed(path)
  next
}

{
  emit($0)
}

END {
  if (failed)
    exit 1
  if (NR == 0)
    fail("empty template")
  print "    NULL};"
}
