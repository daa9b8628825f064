/* Integration: the LDA app (apps/lda/lda.lua) end to end through
 * orion-driver: the log-likelihood rises on a real corpus and on the
 * embedded one, the samplers agree, metrics and --save are written, and
 * bad input (options, corpus, vocabulary) gives clear errors. */
#include "t/testutil.h"

#include <fcntl.h>
#include <math.h>

/* Parses the per-iteration lines "iter seconds tokens/s ll" of lda.lua;
 * ll[i] is NAN where the line shows "-". */
static int parse_iters(const char *out, double *ll, int max) {
  int n = 0;
  const char *line = out;
  while (line != NULL && *line != '\0' && n < max) {
    int it;
    double secs, tps, v;
    char llt[64];
    if (sscanf(line, "%d %lf %lf %63s", &it, &secs, &tps, llt) == 4 &&
        it == n + 1) {
      ll[n++] = sscanf(llt, "%lf", &v) == 1 ? v : NAN;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  return n;
}

/* Runs lda.lua with the given arguments (NULL-terminated, at most 24). */
static tu_run run_lda(const char *const *args, int timeout) {
  char *argv[32];
  char *app = tu_src("apps/lda/lda.lua");
  tu_run r;
  int n = 0, i;
  argv[n++] = (char *)tu_driver();
  for (i = 0; args[i] != NULL && n < 28; i++) {
    if (strcmp(args[i], "APP") == 0) {
      /* These tests read the LL of every iteration (the app's default
       * is every 10th); a test's own --ll-every comes later and wins. */
      argv[n++] = app;
      argv[n++] = (char *)"--ll-every";
      argv[n++] = (char *)"1";
    } else {
      argv[n++] = (char *)args[i];
    }
  }
  argv[n] = NULL;
  r = tu_run_argv(argv, timeout);
  free(app);
  return r;
}

Test(lda, kos_log_likelihood_rises, .timeout = 120) {
  const char *data = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  char corpus[1024], vocab[1024];
  double ll[32];
  tu_run r;
  int n, i;
  snprintf(corpus, sizeof corpus, "%s/uci-bow-kos/docword.kos.txt.gz", data);
  snprintf(vocab, sizeof vocab, "%s/uci-bow-kos/vocab.kos.txt", data);
  {
    const char *args[] = {"APP",  "--corpus", corpus, "--vocab", vocab,
                          "--k",  "20",       "--iters", "8",
                          "--init", "random", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "lda.lua failed: %s", r.err);
  n = parse_iters(r.out, ll, 32);
  cr_assert_eq(n, 8, "expected 8 iteration lines:\n%s", r.out);
  for (i = 0; i < n; i++)
    cr_assert(isfinite(ll[i]) && ll[i] < 0, "iteration %d: LL %f", i + 1,
              ll[i]);
  /* The LL per token of a random start is about -11.6 here; a working
   * sampler is well above -9.5 after 8 sweeps, and rises all along. */
  cr_assert(ll[n - 1] > ll[0] + 0.5, "LL did not rise: %f -> %f", ll[0],
            ll[n - 1]);
  cr_assert(ll[n - 1] > -9.5, "LL %f after 8 iterations", ll[n - 1]);
  cr_assert(ll[3] > ll[0] && ll[7] > ll[3], "LL is not rising: %f %f %f",
            ll[0], ll[3], ll[7]);
  /* The vocabulary gives one line of top words per topic. */
  cr_assert(strstr(r.out, "topic  20: ") != NULL, "%s", r.out);
  tu_run_free(&r);
}

/* The LL per token after the initialisation, from the line
 * "# initialised in S s; log-likelihood per token X". */
static double init_ll(const char *out) {
  const char *p = strstr(out, "log-likelihood per token ");
  double v = NAN;
  if (p != NULL)
    sscanf(p, "log-likelihood per token %lf", &v);
  return v;
}

/* The value of "key": in a metrics record line (NAN when absent). */
static double record_value(const char *line, const char *key) {
  char pat[64];
  const char *p;
  snprintf(pat, sizeof pat, "\"%s\":", key);
  p = strstr(line, pat);
  return p != NULL ? strtod(p + strlen(pat), NULL) : NAN;
}

/* --init sequential (the default) draws each token's first topic from the
 * conditional given the tokens placed before it: the chain starts near a
 * mode instead of at a uniform assignment, and that sweep is counted in
 * the elapsed sampling time. */
Test(lda, sequential_init_starts_near_a_mode_and_is_timed, .timeout = 120) {
  const char *data = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  char *metrics = tu_temp_path(".jsonl");
  char corpus[1024], line[2048];
  double ll[16], seq0, rnd0, secs = NAN, elapsed = NAN;
  tu_run r;
  FILE *f;
  int n, i;
  snprintf(corpus, sizeof corpus, "%s/uci-bow-kos/docword.kos.txt.gz", data);
  {
    const char *args[] = {"--metrics", metrics, "APP", "--corpus", corpus,
                          "--k", "20", "--iters", "4", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  seq0 = init_ll(r.out);
  n = parse_iters(r.out, ll, 16);
  cr_assert_eq(n, 4, "%s", r.out);
  /* A uniform start is at about -11.6; the sequential one at about
   * -8.27, within 0.2 of where 100 sweeps end (-8.11 with K = 20). */
  cr_assert(seq0 > -8.6 && seq0 < -7.5, "LL %f after the sequential start",
            seq0);
  for (i = 0; i < n; i++)
    cr_assert(ll[i] > -8.6, "iteration %d: LL %f", i + 1, ll[i]);
  tu_run_free(&r);
  f = fopen(metrics, "r");
  cr_assert_not_null(f, "no metrics file");
  cr_assert_not_null(fgets(line, sizeof line, f));
  fclose(f);
  secs = record_value(line, "seconds");
  elapsed = record_value(line, "elapsed");
  cr_assert(secs > 0 && elapsed > secs,
            "iteration 1: elapsed %f does not include the initial sweep "
            "(seconds %f)", elapsed, secs);
  {
    const char *args[] = {"APP", "--corpus", corpus, "--k", "20",
                          "--iters", "1", "--init", "random", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  rnd0 = init_ll(r.out);
  cr_assert(rnd0 < -11.0, "LL %f after a random start", rnd0);
  tu_run_free(&r);
  unlink(metrics);
  free(metrics);
}

/* The sparse sampler's count tables (document counts, topic totals, the
 * packed and sorted word lists, with their overflow part when K is above
 * the lists' first 64 slots) stay those of the assignments: --check
 * recounts them at the end and fails on any difference. */
Test(lda, slow_counts_match_the_assignments, .timeout = 120) {
  const char *data = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  const char *inits[] = {"sequential", "random"};
  const char *ks[] = {"300", "20"};
  char corpus[1024];
  tu_run r;
  int i;
  snprintf(corpus, sizeof corpus, "%s/uci-bow-kos/docword.kos.txt.gz", data);
  for (i = 0; i < 4; i++) {
    const char *args[] = {"APP",     "--corpus", corpus,  "--k",
                          ks[i / 2], "--iters",  "3",     "--init",
                          inits[i % 2], "--check", NULL};
    r = run_lda(args, 50);
    cr_assert_eq(r.status, 0, "K=%s --init %s: %s", ks[i / 2], inits[i % 2],
                 r.err);
    cr_assert(strstr(r.out, "# check: the document, word and topic counts "
                            "match the assignments") != NULL,
              "%s", r.out);
    tu_run_free(&r);
  }
  {
    const char *args[] = {"APP", "--k", "10", "--iters", "2", "--sampler",
                          "dense", "--check", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# check: ") != NULL, "%s", r.out);
  tu_run_free(&r);
}

/* --flush managed (issue 17): the topic totals travel as updates of inv
 * during the sweep and nk is taken back from inv after it; the counts
 * still match the assignments exactly, and the metrics record the early
 * sends. */
Test(lda, managed_topic_totals_match_the_assignments, .timeout = 120) {
  char *metrics = tu_write_temp(".jsonl", "");
  char *text;
  tu_run r;
  {
    const char *args[] = {"--executors", "2", "--metrics", metrics, "APP",
                          "--k", "20", "--iters", "3", "--flush", "managed",
                          "--check", "--top", "0", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# check: the document, word and topic counts "
                          "match the assignments") != NULL,
            "%s", r.out);
  tu_run_free(&r);
  {
    int fd = open(metrics, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", metrics);
    text = tu_slurp_fd(fd);
    close(fd);
  }
  cr_assert(strstr(text, "\"managed_bytes\":") != NULL, "%s", text);
  cr_assert(strstr(text, "\"managed_staleness\":") != NULL, "%s", text);
  cr_assert(strstr(text, "\"managed_bytes\":0,") == NULL,
            "an iteration sent nothing early: %s", text);
  free(text);
  unlink(metrics);
  free(metrics);
}

/* --parallel data --flush clock (issue 36): on 4 executors each pushes
 * its word-topic count changes and pulls the counts once a clock of 2
 * blocks; the counts are summed, so they still match the assignments
 * exactly, and the log-likelihood rises.  --clock without --flush clock is
 * a usage error. */
Test(lda, data_parallel_clock_counts_match_the_assignments, .timeout = 120) {
  tu_run r;
  {
    const char *args[] = {"--executors", "4", "APP", "--k", "10", "--iters",
                          "3", "--parallel", "data", "--sampler", "dense",
                          "--flush", "clock", "--clock", "2", "--check",
                          "--top", "0", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# check: the document, word and topic counts "
                          "match the assignments") != NULL,
            "%s", r.out);
  {
    double ll0 = 0, ll = 0;
    const char *p = strstr(r.out, "log-likelihood per token ");
    cr_assert_not_null(p, "%s", r.out);
    ll0 = strtod(p + strlen("log-likelihood per token "), NULL);
    p = strstr(r.out, "\n    3 ");
    cr_assert_not_null(p, "%s", r.out);
    {
      double it, sec, tok;
      cr_assert_eq(sscanf(p, "%lf %lf %lf %lf", &it, &sec, &tok, &ll), 4,
                   "%s", r.out);
    }
    cr_expect_gt(ll, ll0, "%s", r.out);
  }
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--flush", "block", "--parallel", "data",
                          "--sampler", "dense", "--clock", "2", NULL};
    r = run_lda(args, 50);
  }
  cr_expect_eq(r.status, 2, "%s", r.err);
  cr_expect(strstr(r.err, "--clock goes with --parallel data --flush clock") !=
                NULL,
            "%s", r.err);
  tu_run_free(&r);
}

Test(lda, embedded_default_records_metrics_and_saves, .timeout = 120) {
  char *metrics = tu_temp_path(".jsonl");
  char *save = tu_temp_path(".txt");
  char line[2048], hdr[256];
  double ll[16];
  long total = 0, v;
  tu_run r;
  FILE *f;
  int n, lines = 0, a, b;
  {
    const char *args[] = {"--metrics", metrics, "APP", "--k",  "10",
                          "--iters",   "6",     "--save", save, NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "lda.lua failed: %s", r.err);
  n = parse_iters(r.out, ll, 16);
  cr_assert_eq(n, 6, "output:\n%s", r.out);
  /* The job's progress after each iteration and the summary
   * (orion.train). */
  cr_expect(strstr(r.err, "iteration 1/6  ") != NULL &&
                strstr(r.err, "iteration 6/6  ll_per_token ") != NULL &&
                strstr(r.err, "lda.lua: 6 iterations in ") != NULL,
            "%s", r.err);
  cr_assert(ll[5] > ll[0], "LL did not rise: %f -> %f", ll[0], ll[5]);
  /* The embedded corpus has a vocabulary: its top words are printed. */
  cr_assert(strstr(r.out, "topic  10: ") != NULL, "%s", r.out);
  f = fopen(metrics, "r");
  cr_assert_not_null(f, "no metrics file");
  while (fgets(line, sizeof line, f) != NULL) {
    lines++;
    cr_assert(strstr(line, "\"iter\":") && strstr(line, "\"seconds\":") &&
                  strstr(line, "\"tokens_per_s\":") &&
                  strstr(line, "\"ll_per_token\":"),
              "metrics line lacks a key: %s", line);
    /* The iteration's bytes through the driver and between executors. */
    cr_expect_gt(record_value(line, "driver_bytes"), 0, "%s", line);
    cr_expect_geq(record_value(line, "peer_bytes"), 0, "%s", line);
  }
  fclose(f);
  cr_assert_eq(lines, 6);
  /* --save: the W x K word-topic counts, which add up to the tokens. */
  f = fopen(save, "r");
  cr_assert_not_null(f, "no saved counts");
  cr_assert_not_null(fgets(hdr, sizeof hdr, f));
  cr_assert(sscanf(hdr, "# orion-c array i32 dense dims %d %d", &a, &b) == 2,
            "header: %s", hdr);
  cr_assert_eq(b, 10);
  while (fgets(line, sizeof line, f) != NULL) {
    char *p = strrchr(line, ' ');
    cr_assert_not_null(p, "%s", line);
    v = strtol(p + 1, NULL, 10);
    total += v;
  }
  fclose(f);
  {
    const char *tok = strstr(r.out, " words, ");
    long want;
    cr_assert_not_null(tok, "%s", r.out);
    cr_assert_eq(sscanf(tok, " words, %ld tokens", &want), 1);
    cr_assert_eq(total, want, "saved counts add up to %ld, not %ld", total,
                 want);
  }
  unlink(metrics);
  unlink(save);
  free(metrics);
  free(save);
  tu_run_free(&r);
}

/* The sparse sampler draws from the same conditional as the dense one and
 * the exact one (fresh topic totals): on a real corpus their LL after 20
 * sweeps agrees closely (different random streams; runs with different
 * seeds spread by about 0.04 here, and the embedded corpus has local modes
 * that differ more).  A wrong bucket weight moves it by far more. */
static double final_ll(const char *corpus, const char *sampler) {
  double ll[32];
  tu_run r;
  int n;
  const char *args[] = {"APP",     "--corpus", corpus,    "--k",
                        "10",      "--iters",  "20",      "--ll-every",
                        "20",      "--sampler", sampler,  NULL};
  r = run_lda(args, 50);
  cr_assert_eq(r.status, 0, "%s: %s", sampler, r.err);
  n = parse_iters(r.out, ll, 32);
  cr_assert_eq(n, 20, "%s", r.out);
  /* --ll-every 20: only the last line has the LL. */
  cr_assert(isnan(ll[0]) && isnan(ll[18]) && isfinite(ll[19]), "%s", r.out);
  tu_run_free(&r);
  return ll[19];
}

Test(lda, slow_sparse_dense_and_exact_samplers_agree, .timeout = 150) {
  const char *data = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  char corpus[1024];
  double s, d, e;
  snprintf(corpus, sizeof corpus, "%s/uci-bow-kos/docword.kos.txt.gz", data);
  s = final_ll(corpus, "sparse");
  d = final_ll(corpus, "dense");
  e = final_ll(corpus, "exact");
  cr_assert(s < -7.5 && s > -9.0, "sparse LL %f after 20 sweeps", s);
  cr_assert(fabs(s - d) < 0.05, "sparse %f vs dense %f", s, d);
  cr_assert(fabs(s - e) < 0.05, "sparse %f vs exact %f", s, e);
  cr_assert(fabs(d - e) < 0.05, "dense %f vs exact %f", d, e);
}

Test(lda, malformed_corpus_names_file_and_line, .timeout = 60) {
  char *bad = tu_write_temp(".txt", "3\n4\n3\n1 1 2\n2 x 1\n3 4 1\n");
  char *cut = tu_write_temp(".txt", "3\n4\n4\n1 1 2\n2 2 1\n3 4 1\n");
  tu_run r;
  {
    const char *args[] = {"APP", "--corpus", bad, NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, bad) != NULL, "%s", r.err);
  cr_assert(strstr(r.err, ":5: field 2 is not an integer") != NULL, "%s",
            r.err);
  cr_assert(strstr(r.err, "lda.lua:") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--corpus", cut, NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, cut) != NULL, "%s", r.err);
  cr_assert(strstr(r.err, ":6: the input ends after 3 of NNZ = 4") != NULL,
            "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--corpus", "/nonexistent/docword.txt",
                          NULL};
    r = run_lda(args, 50);
  }
  /* A missing corpus is named on the driver before anything starts
   * (issue 32): a usage error. */
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "lda.lua: --corpus /nonexistent/docword.txt: "
                          "cannot read it: No such file or directory") !=
                NULL,
            "%s", r.err);
  tu_run_free(&r);
  unlink(bad);
  unlink(cut);
  free(bad);
  free(cut);
}

Test(lda, vocabulary_of_the_wrong_length_is_an_error, .timeout = 60) {
  char *corpus = tu_write_temp(".txt", "2\n3\n3\n1 1 2\n2 2 1\n2 3 4\n");
  char *vocab = tu_write_temp(".txt", "apple\nbanana\n");
  tu_run r;
  {
    const char *args[] = {"APP", "--corpus", corpus, "--vocab", vocab,
                          "--k", "2", "--iters", "1", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, vocab) != NULL, "%s", r.err);
  cr_assert(strstr(r.err, "has 2 words but") != NULL, "%s", r.err);
  tu_run_free(&r);
  unlink(corpus);
  unlink(vocab);
  free(corpus);
  free(vocab);
}

/* Each output option (--save, --save-assignments) and each input
 * (--corpus, --vocab) naming a folder that does not exist is refused
 * before the corpus is loaded or sampled (nothing on stdout), exit 2,
 * naming the option and the path.  Before, the saves failed after the
 * last sweep, losing the run. */
Test(lda, output_and_input_paths_are_checked_before_any_work, .timeout = 60) {
  char *app = tu_src("apps/lda/lda.lua");
  char *corpus = tu_write_temp(".txt", "2\n3\n3\n1 1 2\n1 3 1\n2 2 4\n");
  char miss[64], path[128], want[512];
  static const char *const opt[] = {"--save", "--save-assignments",
                                    "--corpus", "--vocab"};
  int k;
  snprintf(miss, sizeof miss, "/tmp/orion-lda-missing-%d", (int)getpid());
  snprintf(path, sizeof path, "%s/out.txt", miss);
  for (k = 0; k < 4; k++) {
    char *argv[] = {(char *)tu_driver(), "--executors", "2", app, "--k", "2",
                    "--iters", "2", "--corpus", corpus, (char *)opt[k], path,
                    NULL};
    if (k < 2)
      snprintf(want, sizeof want,
               "lda.lua: %s %s: the folder %s does not exist\n", opt[k], path,
               miss);
    else
      snprintf(want, sizeof want,
               "lda.lua: %s %s: cannot read it: No such file or directory\n",
               opt[k], path);
    tu_expect_path_refused(argv, want, miss);
  }
  unlink(corpus);
  free(corpus);
  free(app);
}

Test(lda, bad_options_are_usage_errors, .timeout = 60) {
  tu_run r;
  {
    const char *args[] = {"APP", "--k", "0", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--k must be at least 1") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--sampler", "gibbs", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--sampler must be") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--init", "uniform", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--init must be sequential or random") != NULL,
            "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--flush", "block", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--flush must be loop or managed with --parallel "
                          "2d, not 'block'") != NULL,
            "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--alpha", "-1", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--alpha must be positive") != NULL, "%s", r.err);
  tu_run_free(&r);
  {
    const char *args[] = {"APP", "--help", NULL};
    r = run_lda(args, 50);
  }
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "--corpus FILE") != NULL, "%s", r.out);
  cr_assert(strstr(r.out, "--beta X") != NULL, "%s", r.out);
  tu_run_free(&r);
}
