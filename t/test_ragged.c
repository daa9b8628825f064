/* Ragged arrays (dsm/ragged.c, lua/orion_ragged.c, executor/exec_ragged.c): making
 * one, files, and bodies over rows through orion-driver on 0, 1 and 2
 * executors (t/scripts/ragged.lua, t/scripts/ragged_errors.lua). */
#include "t/testutil.h"

#include "dsm/arrayfile.h"
#include "dsm/ragged.h"

static orion_array *pairs(const int64_t *keys, const double *vals, int n) {
  orion_error err;
  orion_array *a = orion_array_new_sparse(2, ORION_F64, &err);
  int i;
  cr_assert_not_null(a);
  for (i = 0; i < n; i++)
    cr_assert_eq(orion_array_push(a, keys + 2 * i, vals + i), 0);
  return a;
}

/* Rows out of order are sorted, each keeping its pairs' order (stable);
 * a dense or 3-D array is refused with the reason. */
Test(ragged, make_sorts_rows_stably_and_refuses_other_shapes) {
  static const int64_t keys[] = {2, 5, 0, 3, 2, 1, 0, 0, 2, 5};
  static const double vals[] = {1, 2, 3, 4, 5};
  static const int64_t want_keys[] = {0, 3, 0, 0, 2, 5, 2, 1, 2, 5};
  static const double want_vals[] = {2, 4, 1, 3, 5};
  orion_array *a = pairs(keys, vals, 5), *d;
  orion_error err;
  int64_t dims[1] = {4};
  int i;
  orion_error_clear(&err);
  cr_assert_eq(orion_ragged_make(a, "t", &err), 0, "%s", err.msg);
  cr_assert_eq(a->ragged, 1);
  for (i = 0; i < 5; i++) {
    cr_expect_eq(a->keys[2 * i], want_keys[2 * i], "row of pair %d", i);
    cr_expect_eq(a->keys[2 * i + 1], want_keys[2 * i + 1], "key of pair %d",
                 i);
    cr_expect_eq(((double *)a->values)[i], want_vals[i], "value %d", i);
  }
  cr_expect_eq(orion_ragged_row_end(a, 0, 5), 2);
  cr_expect_eq(orion_ragged_row_end(a, 2, 5), 5);
  cr_expect_eq(orion_ragged_row_end(a, 2, 4), 4);
  cr_expect_eq(orion_ragged_count_rows(a, 0, 5), 2);
  d = orion_array_new_dense(1, dims, ORION_F64, &err);
  cr_assert_neq(orion_ragged_make(d, "X.bin", &err), 0);
  cr_expect_str_eq(err.msg, "X.bin: a ragged array is made from a sparse "
                            "array with 2 dims (row, key), not a dense one "
                            "with 1");
  orion_array_release(d);
  orion_array_release(a);
}

/* The ragged flag survives both file formats; a flag on a non-sparse
 * header is refused. */
Test(ragged, files_keep_the_flag) {
  static const int64_t keys[] = {0, 1, 1, 0};
  static const double vals[] = {0.5, -2};
  orion_array *a = pairs(keys, vals, 2), *b;
  orion_error err;
  char *bin = tu_temp_path(".bin"), *txt = tu_temp_path(".txt");
  char *bad = tu_write_temp(".txt", "# orion-c array f64 ragged dims 3\n");
  FILE *f;
  char head[80] = "";
  orion_error_clear(&err);
  cr_assert_eq(orion_ragged_make(a, "t", &err), 0);
  cr_assert_eq(orion_array_save(a, bin, &err), 0, "%s", err.msg);
  cr_assert_eq(orion_array_save_text(a, txt, &err), 0, "%s", err.msg);
  cr_assert_eq(orion_array_load(bin, &b, &err), 0, "%s", err.msg);
  cr_expect_eq(b->ragged, 1);
  cr_expect_eq(b->nnz, 2);
  orion_array_release(b);
  cr_assert_eq(orion_array_load(txt, &b, &err), 0, "%s", err.msg);
  cr_expect_eq(b->ragged, 1);
  cr_expect_eq(((double *)b->values)[1], -2);
  orion_array_release(b);
  f = fopen(txt, "r");
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(head, sizeof head, f));
  fclose(f);
  cr_expect_str_eq(head, "# orion-c array f64 ragged dims 2 2\n");
  cr_expect_neq(orion_array_load(bad, &b, &err), 0);
  cr_expect(strstr(err.msg, "a ragged array has 2 dims") != NULL, "%s",
            err.msg);
  unlink(bin);
  unlink(txt);
  unlink(bad);
  free(bin);
  free(txt);
  free(bad);
  orion_array_release(a);
}

static const char ragged_out[] =
    "DistArray(f64, ragged, 4x3, nnz=5)\t5\n"
    "dot\t20.5 0 2.5 40\n"
    "len\t2 0 2 1\n"
    "rows visited\t3\n"
    "column sums\t0.5 7.5 18\n"
    "DistArray(f64, ragged, 4x4, nnz=5)\tlabels\t1 -1 0 1\n"
    "key.value times label\t8.5 -2 0 1.75\n"
    "r.bin\tDistArray(f64, ragged, 4x3, nnz=5)\t12\n"
    "r.txt\tDistArray(f64, ragged, 4x3, nnz=5)\t12\n"
    "DistArray(f64, sparse, 4x4, nnz=5)\tDistArray(f64, ragged, 4x4, "
    "nnz=5)\n"
    "DistArray(f64, ragged, 3x4, nnz=4)\tcount times word\t6 0 13\n";

/* Rows from tables, libsvm and uci-bow (loaded in parallel on 2
 * executors), reads at a row's keys, buffered writes, save and load: the
 * same results in the driver and on 1 and 2 executors, interpreted and
 * compiled. */
Test(ragged, bodies_over_rows_on_0_1_2_executors_both_tiers,
     .timeout = 240) {
  static const char *const execs[] = {"0", "1", "2"};
  static const char *const tiers[] = {"lua", "c"};
  int i, t;
  for (t = 0; t < 2; t++)
    for (i = 0; i < 3; i++) {
      char dir[] = "/tmp/orion-ragged-XXXXXX", cmd[1200];
      const char *args[] = {"--executors", execs[i], "@ragged.lua", dir,
                            tiers[t], NULL};
      tu_run r;
      cr_assert_not_null(mkdtemp(dir));
      r = tu_drive("t/scripts", args, 100);
      cr_assert_eq(r.status, 0, "%s executors, tier %s: %s", execs[i],
                   tiers[t], r.err);
      cr_expect_str_eq(r.out, ragged_out, "%s executors, tier %s", execs[i],
                       tiers[t]);
      /* tier "c" would have failed had a loop not compiled. */
      tu_run_free(&r);
      snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
      cr_expect_eq(system(cmd), 0);
    }
}

static const char errors_out[] =
    "parallel_for body failed on executor %s, element (1): "
    "%s/ragged_errors.lua:16: row:value(9): row 1 has 2 pairs\n"
    "key past the end\trow:key(3): row 1 has 2 pairs\n"
    "value(0)\trow:value(0): row 1 has 2 pairs\n"
    "store into a row\ta ragged array's row is read-only (write through "
    "another array or an orion.buffer)\n"
    "return a value\ta body over a ragged array returns nothing (its rows "
    "are read-only), not a number\n"
    "unbuffered write at a row's key\tnote: W[k] (line 33) is subscripted "
    "by a ragged row's key, which the analysis cannot know: two rows may "
    "name the same key, so writes through it need an orion.buffer\n"
    "dense\ta ragged array is made from a sparse array with 2 dims (row, "
    "key), not a dense one with 1\n"
    "key 0\torion.ragged: row 1, pair 1: the key must be a positive "
    "integer\n"
    "not a pair\torion.ragged: row 1, pair 1: expected a table {key, "
    "value}, not number\n"
    "i32 overflow\torion.ragged: row 1, pair 1: the value is out of range "
    "for i32\n";

/* Errors name the row, the pair and the rule, in the driver and on an
 * executor. */
Test(ragged, errors_name_the_row_and_the_rule, .timeout = 120) {
  static const char *const execs[] = {"0", "2"};
  static const char *const first[] = {"0", "0"};
  int i;
  for (i = 0; i < 2; i++) {
    const char *args[] = {"--executors", execs[i], "@ragged_errors.lua",
                          NULL};
    char want[2048], path[1024];
    tu_run r = tu_drive("t/scripts", args, 100);
    const char *at = strstr(r.out, "element (1): "), *end;
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* The script's path as the driver was given it (relative in a build
     * in the source tree, through ../.. in make distcheck's). */
    cr_assert_not_null(at, "%s", r.out);
    at += strlen("element (1): ");
    end = strstr(at, "/ragged_errors.lua:16:");
    cr_assert_not_null(end, "%s", r.out);
    snprintf(path, sizeof path, "%.*s", (int)(end - at), at);
    cr_expect(strlen(path) >= 9 &&
                  strcmp(path + strlen(path) - 9, "t/scripts") == 0,
              "%s", path);
    snprintf(want, sizeof want, errors_out, first[i], path);
    cr_expect_str_eq(r.out, want, "%s executors", execs[i]);
    tu_run_free(&r);
  }
}

/* --explain says why a write at a row's key is unknown, and that a buffer
 * makes the loop parallel. */
Test(ragged, explain_names_row_keys, .timeout = 60) {
  char *script = tu_write_temp(
      ".lua",
      "local orion = require 'orion'\n"
      "local R = orion.ragged { { { 1, 0.5 }, { 3, 2 } }, { { 2, 1 } } }\n"
      "local W = orion.zeros { 3 }\n"
      "local B = orion.buffer(W, { apply = 'add' })\n"
      "print(orion.explain(R, function(i, row)\n"
      "  for j = 1, #row do\n"
      "    local k = row:key(j)\n"
      "    B[k] = B[k] + row:value(j) * W[k]\n"
      "  end\n"
      "end))\n"
      "print(orion.explain(R, function(i, row)\n"
      "  W[row:key(1)] = W[row:key(1)] + i\n"
      "end))\n");
  const char *args[] = {"--executors", "0", script, NULL};
  tu_run r = tu_drive(".", args, 50);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "schedule: none\n") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "schedule: rejected\n") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "access: B[k] (write, line 8) buffered subscripts "
                          "(? (a row's key))") != NULL,
            "%s", r.out);
  cr_expect(strstr(r.out, "access: W[row:key(1)] (write, line 12) "
                          "subscripts (? (a row's key))") != NULL,
            "%s", r.out);
  cr_expect(strstr(r.out, "reason: note: W[row:key(1)] (line 12) is "
                          "subscripted by a ragged row's key, which the "
                          "analysis cannot know") != NULL,
            "%s", r.out);
  cr_expect(strstr(r.out, "tier: c (compiled") != NULL, "%s", r.out);
  tu_run_free(&r);
  unlink(script);
  free(script);
}

/* A file larger than an executor's share of LOADED frames is cut into
 * more parts than executors, handed out in turn (dsm/pload.c; 32 MiB each,
 * ORION_TEST_LOAD_PART_BYTES here): the rows, keys, values and labels, and
 * the line a bad line's error names, are those of a load in the driver. */
Test(ragged, a_file_loads_in_more_parts_than_executors, .timeout = 120) {
  static const char script_text[] =
      "local orion = require 'orion'\n"
      "local X, Y = orion.text_file(arg[1], { format = 'libsvm', rows = "
      "true })\n"
      "local s, n = 0, 0\n"
      "for _, e in ipairs(X:to_table()) do\n"
      "  n = n + 1; s = s + n * (e[1] * 1000 + e[2]) * e[3]\n"
      "end\n"
      "local ys = 0\n"
      "for i, v in ipairs(Y:to_table()) do ys = ys + i * v end\n"
      "print(tostring(X), ('%.17g'):format(s), ys)\n";
  char text[40000], *script = tu_write_temp(".lua", script_text), *good,
                    *bad, *want_out = NULL, *want_err = NULL;
  size_t len = 0;
  int i, k, f;
  for (i = 0; i < 400; i++) { /* rows of 0 to 4 pairs, ascending keys */
    len += (size_t)snprintf(text + len, sizeof text - len, "%s",
                            i % 3 ? "+1" : "-1");
    for (k = 0; k < i % 5; k++)
      len += (size_t)snprintf(text + len, sizeof text - len, " %d:%d.%d",
                              1 + k * 7 + i % 7, i % 13, k);
    len += (size_t)snprintf(text + len, sizeof text - len, "\n");
  }
  good = tu_write_temp(".txt", text);
  len = 0; /* 400 rows again, line 371 malformed */
  for (i = 1; i <= 400; i++)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            i == 371 ? "+1 3:x\n" : "-1 %d:1\n", i);
  bad = tu_write_temp(".txt", text);
  for (f = 0; f < 2; f++) {
    const char *file = f == 0 ? good : bad;
    for (i = 0; i < 3; i++) {
      static const char *const execs[] = {"0", "2", "3"};
      char *argv[] = {(char *)tu_driver(), "-v", "--executors",
                      (char *)execs[i], script, (char *)file, NULL};
      tu_run r;
      if (i > 0)
        setenv("ORION_TEST_LOAD_PART_BYTES", "300", 1);
      r = tu_run_argv(argv, 60);
      unsetenv("ORION_TEST_LOAD_PART_BYTES");
      if (i == 0) {
        cr_assert_eq(r.status, f == 0 ? 0 : 1, "%s", r.err);
        want_out = strdup(r.out);
        want_err = strdup(strstr(r.err, "orion-driver:") != NULL
                              ? strstr(r.err, "orion-driver:")
                              : "");
        if (f == 1)
          cr_expect(strstr(r.err, ":371: ") != NULL, "%s", r.err);
      } else {
        cr_expect_eq(r.status, f == 0 ? 0 : 1, "%s executors: %s", execs[i],
                     r.err);
        cr_expect_str_eq(r.out, want_out, "%s executors", execs[i]);
        cr_expect(strstr(r.err, "parts of at most 300 bytes on ") != NULL,
                  "%s executors: %s", execs[i], r.err);
        if (f == 1)
          cr_expect(strstr(r.err, want_err) != NULL, "%s executors: %s\nwant %s",
                    execs[i], r.err, want_err);
      }
      tu_run_free(&r);
    }
    free(want_out);
    free(want_err);
  }
  unlink(good);
  unlink(bad);
  unlink(script);
  free(good);
  free(bad);
  free(script);
}
