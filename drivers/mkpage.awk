# Turns a text file (drivers/status_page.html) into a C definition,
#   static const char NAME[] = "line\n" "line\n" ...;
# that drivers/driver.c includes, so the job page's HTML, CSS and JS are
# part of the binary.  POSIX awk; run as
#   awk -v name=status_page -f mkpage.awk drivers/status_page.html > OUT

# s as the body of a C string literal: backslash and quote escaped, tabs
# as \t, and a question mark after another escaped (no trigraphs).
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

NR == 1 {
  print "/* Generated from " FILENAME " by drivers/mkpage.awk. */"
  print "static const char " name "[] ="
}
{ print "  \"" cstr($0) "\\n\"" }
END {
  if (NR == 0)
    print "static const char " name "[] =\n  \"\""
  print ";"
}
