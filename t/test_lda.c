/* Integration: the LDA app (apps/lda/lda.lua) end to end through
 * orion-driver: the log-likelihood rises on a real corpus and on the
 * embedded one, the samplers agree, metrics and --save are written, and
 * bad input (options, corpus, vocabulary) gives clear errors. */
#include "t/testutil.h"

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
  int n = 0;
  argv[n++] = (char *)tu_driver();
  while (args[n - 1] != NULL && n < 28) {
    if (strcmp(args[n - 1], "APP") == 0)
      argv[n] = app;
    else
      argv[n] = (char *)args[n - 1];
    n++;
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
                          "--k",  "20",       "--iters", "8",    NULL};
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

/* The sparse sampler draws from the same conditional as the dense one:
 * on a real corpus their LL curves agree closely (different random
 * streams; the small embedded corpus has local modes that differ more). */
Test(lda, sparse_and_dense_samplers_agree, .timeout = 120) {
  const char *data = tu_data_dir("uci-bow-kos/docword.kos.txt.gz");
  char corpus[1024];
  double lls[16], lld[16];
  tu_run r;
  int n;
  snprintf(corpus, sizeof corpus, "%s/uci-bow-kos/docword.kos.txt.gz", data);
  {
    const char *args[] = {"APP", "--corpus", corpus, "--k", "20", "--iters",
                          "6", NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  n = parse_iters(r.out, lls, 16);
  cr_assert_eq(n, 6, "%s", r.out);
  tu_run_free(&r);
  {
    const char *args[] = {"APP",     "--corpus", corpus,      "--k",
                          "20",      "--iters",  "6",         "--sampler",
                          "dense",   NULL};
    r = run_lda(args, 110);
  }
  cr_assert_eq(r.status, 0, "%s", r.err);
  n = parse_iters(r.out, lld, 16);
  cr_assert_eq(n, 6, "%s", r.out);
  cr_assert(fabs(lls[5] - lld[5]) < 0.03, "sparse %f vs dense %f", lls[5],
            lld[5]);
  tu_run_free(&r);
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
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, "cannot open /nonexistent/docword.txt") != NULL,
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
