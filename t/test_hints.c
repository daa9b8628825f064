/* Tests of the messages a user acts on (issue 33), each through a real
 * script run by orion-driver: a helper that assigns a global is named,
 * A.set(A, i, v) gets the method-call hint A:set(i, v) gets, a read and a
 * write at an unknown distance are not offered orion.buffer(apply =
 * "add"), an ordered write-only array is named as the body names it and
 * told what ordered = true accepts; that acceptance (c - i and N + 1 - i
 * are bijections of the key) runs bit for bit as the serial loop on 0, 2
 * and 4 executors; and a chunk loaded inside a body reads the body's
 * standard library and cannot change it. */
#include "t/testutil.h"

#define HAS(text, s)                                                         \
  cr_expect(strstr((text), (s)) != NULL, "expected %s in:\n%s", (s), (text))
#define HASNT(text, s)                                                       \
  cr_expect(strstr((text), (s)) == NULL, "unexpected %s in:\n%s", (s), (text))

/* Runs the driver on a temporary script: the options before it (NULL or
 * up to 4), one script argument (or NULL). */
static tu_run drive(const char *text, const char *const *opts,
                    const char *arg) {
  char *path = tu_write_temp(".lua", text);
  char *argv[8];
  tu_run r;
  int i = 0, k;
  argv[i++] = (char *)tu_driver();
  for (k = 0; opts != NULL && opts[k] != NULL && k < 4; k++)
    argv[i++] = (char *)opts[k];
  argv[i++] = path;
  if (arg != NULL)
    argv[i++] = (char *)arg;
  argv[i] = NULL;
  r = tu_run_argv(argv, 60);
  unlink(path);
  free(path);
  return r;
}

/* The script must fail; its stderr is returned in r (free it). */
static tu_run refused(const char *text) {
  tu_run r = drive(text, NULL, NULL);
  cr_expect_eq(r.status, 1, "exit %d:\n%s\n%s", r.status, r.out, r.err);
  return r;
}

/* ---- (a) a global assigned in a helper ----------------------------------- */

/* The body only calls helper: it was told it assigns 'count' itself and to
 * "declare it local" where it has nothing to declare. */
Test(hints, helper_that_assigns_a_global_is_named) {
  tu_run r = refused("local orion = require 'orion'\n"
                     "local A = orion.zeros{8}\n"
                     "local function helper(i)\n"
                     "  count = i\n"
                     "  return i\n"
                     "end\n"
                     "orion.parallel_for(A, function(i)\n"
                     "  A[i] = helper(i)\n"
                     "end)\n");
  HAS(r.err, ":7: parallel_for body captures a helper function (upvalue "
             "'helper', defined at ");
  HAS(r.err, ":3) that assigns global 'count' at ");
  HAS(r.err, ":4; the helper runs on the executors with the body, where a "
             "global cannot be assigned: declare 'count' local in the "
             "helper, or return the value to the body");
  HASNT(r.err, "parallel_for body assigns global");
  tu_run_free(&r);
  /* A helper in a table is named by its field. */
  r = refused("local orion = require 'orion'\n"
              "local A = orion.zeros{8}\n"
              "local m = {}\n"
              "function m.step(i) last = i return i end\n"
              "orion.parallel_for(A, function(i) A[i] = m.step(i) end)\n");
  HAS(r.err, "(upvalue 'm' field 'step', defined at ");
  HAS(r.err, ":4) that assigns global 'last' at ");
  tu_run_free(&r);
  /* The body's own assignment keeps its message. */
  r = refused("local orion = require 'orion'\n"
              "local A = orion.zeros{8}\n"
              "orion.parallel_for(A, function(i) count = i end)\n");
  HAS(r.err, "parallel_for body assigns global 'count' at ");
  HAS(r.err, ":3; declare it local");
  tu_run_free(&r);
}

/* ---- (b) A.set(A, i, v) is A:set(i, v) ----------------------------------- */

Test(hints, method_called_with_a_dot_gets_the_method_hint) {
  tu_run r = refused("local orion = require 'orion'\n"
                     "local A = orion.zeros{8}\n"
                     "local B = orion.zeros{8}\n"
                     "orion.parallel_for(A, function(i)\n"
                     "  B.set(B, i, A.get(A, i) + 1)\n"
                     "end)\n");
  HAS(r.err, "B.set(B, i, A.get(A, i) + 1) at line 5: a method call on "
             "DistArray 'B'; DistArray methods run on the driver only, a "
             "parallel_for body cannot call them: write B[i] = A.get(A, i) "
             "+ 1 instead\n");
  HAS(r.err, "A.get(A, i) at line 5: a method call on DistArray 'A'; "
             "DistArray methods run on the driver only, a parallel_for body "
             "cannot call them: write A[i] instead\n");
  /* Not the generic vector and buffer offer it had. */
  HASNT(r.err, "vector");
  HASNT(r.err, "orion.buffer");
  tu_run_free(&r);
}

/* ---- (c) a recurrence at an unknown distance ---------------------------- */

static void expect_unknown_distance(const char *line5, const char *read,
                                    const char *write) {
  char script[512], want[256];
  tu_run r;
  snprintf(script, sizeof script,
           "local orion = require 'orion'\n"
           "local A = orion.zeros{8}\n"
           "local idx = orion.zeros{8}\n"
           "orion.parallel_for(A, function(i)\n"
           "%s\n"
           "end)\n",
           line5);
  r = refused(script);
  HAS(r.err, "the loop cannot run in parallel");
  snprintf(want, sizeof want,
           "hint: %s (line 5) and %s (line 5) may touch one element of A in "
           "different iterations, at a distance the analysis cannot know",
           read, write);
  HAS(r.err, want);
  HAS(r.err, "orion.buffer would compute something else");
  HAS(r.err, "run the loop with schedule = \"serial\"");
  HASNT(r.err, "write A through orion.buffer");
  HASNT(r.err, "orion.buffer(A, {apply = \"add\"})");
  HASNT(r.err, "with ordered = true");
  tu_run_free(&r);
}

Test(hints, unknown_distance_recurrence_is_not_offered_a_buffer) {
  expect_unknown_distance("  A[idx[i]] = A[i] + 1", "A[i]", "A[idx[i]]");
  expect_unknown_distance("  A[i] = A[math.floor(i / 2)] * 2",
                          "A[math.floor(i / 2)]", "A[i]");
}

Test(hints, accumulation_is_still_offered_apply_add) {
  tu_run r = refused("local orion = require 'orion'\n"
                     "local A = orion.zeros{8}\n"
                     "local idx = orion.zeros{8}\n"
                     "orion.parallel_for(A, function(i)\n"
                     "  A[idx[i]] = A[idx[i]] + i\n"
                     "end)\n");
  HAS(r.err, "hint: A is accumulated (A[idx[i]] = A[idx[i]] + ..., line 5) "
             "and read only by its own updates: write A through "
             "orion.buffer(A, {apply = \"add\"})");
  HASNT(r.err, "at a distance the analysis cannot know");
  tu_run_free(&r);
}

/* A 2-D recurrence that no rotation or skew runs but a wavefront does:
 * the hint offers ordered = true, which then runs it to the serial
 * loop's result.  A 1-D loop is never offered it (nothing would run). */
Test(hints, ordered_is_offered_where_it_makes_the_loop_run, .timeout = 60) {
  static const char script[] =
      "local orion = require 'orion'\n"
      "local A = orion.zeros{6, 6}\n"
      "for i = 1, 6 do A:set(i, 1, 1); A:set(1, i, 1) end\n"
      "local o = arg[1] == 'serial' and {schedule = 'serial'} or\n"
      "  {ordered = arg[1] == 'ordered'}\n"
      "orion.parallel_for(A, function(i, j)\n"
      "  if i > 1 and j > 1 then\n"
      "    A[i][j] = A[i - 1][j] + A[i][j - 1] + A[i - 1][j - 1]\n"
      "  end\n"
      "end, o)\n"
      "print(A:get(6, 6))\n";
  tu_run r = drive(script, NULL, NULL), s, o;
  cr_expect_eq(r.status, 1, "%s", r.err);
  HAS(r.err, "the loop cannot run in parallel");
  HAS(r.err, "a true loop-carried dependence (a recurrence such as a prefix "
             "sum), so no unordered schedule runs it in parallel");
  HAS(r.err, "hint: with ordered = true the loop runs (schedule 2d-ordered), "
             "which keeps every dependence in key order and gives the "
             "serial loop's result: pass {ordered = true}");
  tu_run_free(&r);
  s = drive(script, NULL, "serial");
  o = drive(script, NULL, "ordered");
  cr_expect_eq(s.status, 0, "%s", s.err);
  cr_expect_eq(o.status, 0, "%s", o.err);
  cr_expect_str_eq(s.out, "1683.0\n");
  cr_expect_str_eq(o.out, s.out);
  tu_run_free(&s);
  tu_run_free(&o);
}

/* ---- (d) an ordered write-only array ------------------------------------ */

/* The body writes X, which the caller passes as Y: the message names X
 * as the body does, and Y too. */
Test(hints, ordered_write_only_array_named_as_the_body_names_it) {
  tu_run r = refused("local orion = require 'orion'\n"
                     "local Y = orion.zeros{8}\n"
                     "local X = Y\n"
                     "local p = {8, 7, 6, 5, 4, 3, 2, 1}\n"
                     "orion.parallel_for(Y, function(i)\n"
                     "  X[p[i]] = i\n"
                     "end, {ordered = true})\n");
  HAS(r.err, "vector (NONNEG) on X (Y in the caller): X[p[i]] (write, line "
             "6) and X[p[i]] (write, line 6)");
  HAS(r.err, "hint: X (Y in the caller) is only written, and the analysis "
             "cannot tell that two iterations never write one element "
             "(X[p[i]], line 6); ordered = true asks that the last write in "
             "key order win, which no parallel schedule can promise: if the "
             "subscript is a bijection of the key, write it as one the "
             "analysis recognises (X[i + c] or X[c - i], c loop-invariant), "
             "which ordered = true accepts; if any iteration's write may "
             "win, drop ordered = true; or run the loop with schedule = "
             "\"serial\"");
  HASNT(r.err, "apply");
  tu_run_free(&r);
}

/* ---- 2: c - i and N + 1 - i are bijections of the key ------------------ */

/* Ordered loops that write only at N + 1 - i, c - i (through a local),
 * -(i - N - 1) and i + c, with values that round, printed in hex.  The
 * first three were refused (vector (NONNEG), two writes of one array). */
static const char bijection_script[] =
    "local orion = require 'orion'\n"
    "local N = 600\n"
    "local A, X, Z = orion.zeros{N}, orion.zeros{N}, orion.zeros{N}\n"
    "local c, W = N + 1, orion.zeros{N + 3}\n"
    "local o = arg[1] == 'serial' and {schedule = 'serial'} or "
    "{ordered = true}\n"
    "orion.parallel_for(A, function(i)\n"
    "  X[N + 1 - i] = math.sqrt(i) * 1.1 + i / 7\n"
    "  local k = c - i\n"
    "  Z[k] = Z[k] * 0.5 + 1 / i\n"
    "end, o)\n"
    "orion.parallel_for(X, function(i, v)\n"
    "  A[-(i - N - 1)] = v * 3 + 1 / 3\n"
    "  W[i + 3] = v / 3\n"
    "end, o)\n"
    "local s = {}\n"
    "for _, T in ipairs{X, Z, A, W} do\n"
    "  for i = 1, N do s[#s + 1] = string.format('%a', T:get(i)) end\n"
    "end\n"
    "print(#s, table.concat(s, ' '))\n";

Test(hints, ordered_writes_at_a_reversed_key_run_as_the_serial_loop,
     .timeout = 120) {
  static const char *const ex[3][3] = {{"--executors", "0", NULL},
                                       {"--executors", "2", NULL},
                                       {"--executors", "4", NULL}};
  static const char *const explain[] = {"--explain-only=2", NULL};
  tu_run ser = drive(bijection_script, NULL, "serial"), r;
  int k;
  cr_assert_eq(ser.status, 0, "serial: %s", ser.err);
  HAS(ser.out, "2400\t0x");
  for (k = 0; k < 3; k++) {
    r = drive(bijection_script, ex[k], NULL);
    cr_expect_eq(r.status, 0, "%s executors: %s", ex[k][1], r.err);
    cr_expect_str_eq(r.out, ser.out, "%s executors differ from the serial "
                     "loop", ex[k][1]);
    tu_run_free(&r);
  }
  r = drive(bijection_script, explain, NULL);
  cr_expect_eq(r.status, 0, "%s", r.err);
  HAS(r.out, "schedule: none\nordered: yes\n");
  HAS(r.out, "access: X[N + 1 - i] (write, line 7) subscripts (601-i)\n");
  HAS(r.out, "access: Z[k] (write, line 9) subscripts (601-i)\n");
  HAS(r.out, "access: A[-(i - N - 1)] (write, line 12) subscripts (601-i)\n");
  HAS(r.out, "access: W[i + 3] (write, line 13) subscripts (i+3)\n");
  HASNT(r.out, "vector (");
  tu_run_free(&r);
  tu_run_free(&ser);
}

/* c - i read where another iteration writes i stays a dependence, and two
 * different reversals of one key are not told apart. */
Test(hints, reversed_key_against_the_key_is_still_a_dependence) {
  tu_run r = refused("local orion = require 'orion'\n"
                     "local A = orion.zeros{8}\n"
                     "orion.parallel_for(A, function(i)\n"
                     "  A[i] = A[9 - i] + 1\n"
                     "end)\n");
  HAS(r.err, "vector (NONNEG) on A: A[9 - i] (read, line 4) and A[i] "
             "(write, line 4)");
  tu_run_free(&r);
  r = refused("local orion = require 'orion'\n"
              "local A, X = orion.zeros{8}, orion.zeros{9}\n"
              "orion.parallel_for(A, function(i)\n"
              "  X[9 - i] = 1\n"
              "  X[10 - i] = 2\n"
              "end, {ordered = true})\n");
  HAS(r.err, "vector (1) on X: X[9 - i] (write, line 4) and X[10 - i] "
             "(write, line 5)");
  tu_run_free(&r);
}

/* ---- (e) a chunk loaded inside a body ------------------------------------ */

/* On the driver's own executor and on two: the chunk reads the standard
 * library, and its assignment to a global is refused (it changed the
 * sandbox's globals for every later body of the state: the next loop
 * found no `math`). */
Test(hints, loaded_chunk_reads_the_library_and_assigns_no_global,
     .timeout = 60) {
  static const char *const ex[2][3] = {{"--executors", "0", NULL},
                                       {"--executors", "2", NULL}};
  int k;
  for (k = 0; k < 2; k++) {
    tu_run r = drive("local orion = require 'orion'\n"
                     "local A = orion.zeros{4}\n"
                     "orion.parallel_for(A, function(i)\n"
                     "  A[i] = load('return math.abs(-3) + ' .. i)()\n"
                     "end)\n"
                     "print(table.concat(A:to_table(), ' '))\n",
                     ex[k], NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "4.0 5.0 6.0 7.0\n");
    tu_run_free(&r);
    r = drive("local orion = require 'orion'\n"
              "local A = orion.zeros{4}\n"
              "orion.parallel_for(A, function(i)\n"
              "  local ok = pcall(load('math = nil'))\n"
              "  A[i] = ok and 1 or 2\n"
              "end)\n"
              "orion.parallel_for(A, function(i)\n"
              "  A[i] = A[i] * 10 + load('return 0')() + math.abs(-i)\n"
              "end)\n"
              "print(table.concat(A:to_table(), ' '))\n"
              "orion.parallel_for(A, function(i)\n"
              "  A[i] = load('y = 5 return y')()\n"
              "end)\n",
              ex[k], NULL);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect_str_eq(r.out, "21.0 22.0 23.0 24.0\n");
    HAS(r.err, ":11: parallel_for body failed on executor ");
    HAS(r.err, "[string \"y = 5 return y\"]:1: assignment to global 'y' in "
               "a chunk loaded inside a parallel_for body (a loaded chunk "
               "sees the body's standard library and cannot change it: "
               "declare it local)");
    tu_run_free(&r);
  }
}
