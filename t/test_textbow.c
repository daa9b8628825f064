/* dsm/textbow.c: raw text to a bag of words (the LDA app's --import).
 * MALLET's token pattern at its edges, lower-casing, headers, stop
 * words, document-frequency limits, a fixed vocabulary, and the errors. */
#include "t/testutil.h"

#include <errno.h>
#include <sys/stat.h>

#include "dsm/textbow.h"

/* Imports src (a file written from text) with o's options; returns the
 * vocabulary file's text and leaves the docword's in *docword (both to
 * free), or NULL with the error in err. */
static char *import(const char *text, orion_textbow_opts *o, char **docword,
                    orion_textbow_stats *st, char *err, size_t errlen) {
  char *src = tu_write_temp(".txt", text);
  char *dw = tu_temp_path(".dw"), *vo = tu_temp_path(".vocab");
  char *out = NULL;
  int rc;
  o->docword = dw;
  o->vocab_out = vo;
  if (o->max_df == 0)
    o->max_df = 1.0;
  rc = orion_textbow_import(src, o, st, err, errlen);
  if (rc == 0) {
    FILE *f = fopen(vo, "r");
    cr_assert(f != NULL);
    out = tu_slurp_fd(fileno(f));
    fclose(f);
    f = fopen(dw, "r");
    cr_assert(f != NULL);
    *docword = tu_slurp_fd(fileno(f));
    fclose(f);
  }
  unlink(src);
  unlink(dw);
  unlink(vo);
  free(src);
  free(dw);
  free(vo);
  return out;
}

Test(textbow, mallet_token_pattern) {
  orion_textbow_opts o = {0};
  orion_textbow_stats st;
  char err[512], *dw = NULL;
  /* Punctuation inside a token stays, at its ends it goes; digits and
   * symbols ($ + < = >) split; fewer than 3 characters is no token;
   * bytes from 0x80 are letters; upper case is lowered. */
  char *v = import("E-Mail (U.S.A.) x1y ab abc's: a$b+c <tag>=val "
                   "\xc3\xa9t\xc3\xa9 WORD--word\r\n",
                   &o, &dw, &st, err, sizeof err);
  cr_assert(v != NULL, "%s", err);
  cr_assert_str_eq(v, "abc's\ne-mail\ntag\nu.s.a\nval\nword--word\n"
                      "\xc3\xa9t\xc3\xa9\n");
  cr_assert_eq(st.docs, 1);
  cr_assert_eq(st.tokens, 7);
  cr_assert_str_eq(dw, "1\n7\n7\n1 1 1\n1 2 1\n1 3 1\n1 4 1\n1 5 1\n"
                       "1 6 1\n1 7 1\n");
  free(v);
  free(dw);
}

Test(textbow, lines_stopwords_and_df_limits) {
  orion_textbow_opts o = {0};
  orion_textbow_stats st;
  char err[512], *dw = NULL, *v;
  char *stop = tu_write_temp(".stop", "# a comment: these words are not stop words\n"
                                      "The and  OF\n");
  const char *text = "the cat and the dog\n"
                     "cat of cats\n"
                     "\n"
                     "dog dog bird\n";
  o.stoplist = stop;
  v = import(text, &o, &dw, &st, err, sizeof err);
  cr_assert(v != NULL, "%s", err);
  cr_assert_str_eq(v, "bird\ncat\ncats\ndog\n");
  /* Four lines, four documents (the empty one has no entries). */
  cr_assert_str_eq(dw, "4\n4\n6\n1 2 1\n1 4 1\n2 2 1\n2 3 1\n4 1 1\n4 4 2\n");
  cr_assert_eq(st.stopped, 3); /* the, and, the ("of" is too short to be a token) */
  free(v);
  free(dw);
  /* min_df 2: the words of two documents or more. */
  o.min_df = 2;
  v = import(text, &o, &dw, &st, err, sizeof err);
  cr_assert(v != NULL, "%s", err);
  cr_assert_str_eq(v, "cat\ndog\n");
  cr_assert_eq(st.pruned, 2);
  free(v);
  free(dw);
  /* max_df 0.25 of 4 documents: the words of one document. */
  o.min_df = 1;
  o.max_df = 0.25;
  v = import(text, &o, &dw, &st, err, sizeof err);
  cr_assert(v != NULL, "%s", err);
  cr_assert_str_eq(v, "bird\ncats\n");
  free(v);
  free(dw);
  unlink(stop);
  free(stop);
}

Test(textbow, skip_header) {
  orion_textbow_opts o = {0};
  orion_textbow_stats st;
  char err[512], *dw = NULL, *v;
  char *dir = tu_temp_path(".d"), path[600];
  FILE *f;
  cr_assert(mkdir(dir, 0700) == 0);
  snprintf(path, sizeof path, "%s/b", dir);
  f = fopen(path, "w");
  fputs("From: header\nSubject: words\n \t\r\nbody text\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/a", dir);
  f = fopen(path, "w");
  fputs("no blank line here\n", f); /* kept whole */
  fclose(f);
  snprintf(path, sizeof path, "%s/.hidden", dir);
  f = fopen(path, "w");
  fputs("hidden\n", f);
  fclose(f);
  o.skip_header = 1;
  o.max_df = 1.0;
  o.docword = path; /* overwritten below */
  {
    char *dwp = tu_temp_path(".dw"), *vp = tu_temp_path(".v");
    o.docword = dwp;
    o.vocab_out = vp;
    cr_assert_eq(orion_textbow_import(dir, &o, &st, err, sizeof err), 0, "%s",
                 err);
    f = fopen(vp, "r");
    v = tu_slurp_fd(fileno(f));
    fclose(f);
    f = fopen(dwp, "r");
    dw = tu_slurp_fd(fileno(f));
    fclose(f);
    cr_assert_str_eq(v, "blank\nbody\nhere\nline\ntext\n");
    /* a (no header) before b (in byte order); .hidden skipped. */
    cr_assert_str_eq(dw, "2\n5\n5\n1 1 1\n1 3 1\n1 4 1\n2 2 1\n2 5 1\n");
    unlink(dwp);
    unlink(vp);
    free(dwp);
    free(vp);
  }
  free(v);
  free(dw);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  cr_assert(system(path) == 0);
  free(dir);
}

Test(textbow, fixed_vocabulary) {
  orion_textbow_opts o = {0};
  orion_textbow_stats st;
  char err[512], *dw = NULL, *v;
  char *vocab = tu_write_temp(".v", "moon\norbit\n\nrocket\n");
  o.vocab_in = vocab;
  o.stoplist = "/no/such/stoplist"; /* not read with a fixed vocabulary */
  v = import("Rocket to the MOON, moon again; unknown words\n", &o, &dw,
             &st, err, sizeof err);
  cr_assert(v != NULL, "%s", err);
  cr_assert_str_eq(v, "moon\norbit\nrocket\n");
  cr_assert_str_eq(dw, "1\n3\n2\n1 1 2\n1 3 1\n");
  cr_assert_eq(st.pruned, 4); /* the, again, unknown, words */
  free(v);
  free(dw);
  unlink(vocab);
  free(vocab);
}

Test(textbow, errors_name_file_and_line) {
  orion_textbow_opts o = {0};
  orion_textbow_stats st;
  char err[512], *dw = NULL, want[700];
  char *vocab = tu_write_temp(".v", "moon\norbit rocket\n");
  o.vocab_in = vocab;
  cr_assert_null(import("moon\n", &o, &dw, &st, err, sizeof err));
  snprintf(want, sizeof want,
           "%s:2: a vocabulary line holds one word: \"orbit rocket\"", vocab);
  cr_assert_str_eq(err, want);
  unlink(vocab);
  free(vocab);
  vocab = tu_write_temp(".v", "moon\norbit\nMoon\n");
  o.vocab_in = vocab;
  cr_assert_null(import("moon\n", &o, &dw, &st, err, sizeof err));
  snprintf(want, sizeof want,
           "%s:3: the word \"moon\" is already in the vocabulary", vocab);
  cr_assert_str_eq(err, want);
  unlink(vocab);
  free(vocab);
  o.vocab_in = NULL;
  o.stoplist = "/no/such/stoplist";
  cr_assert_null(import("moon\n", &o, &dw, &st, err, sizeof err));
  cr_assert_str_eq(err, "cannot open /no/such/stoplist: No such file or "
                        "directory");
  o.stoplist = NULL;
  cr_assert_null(import("12 34 ab\n", &o, &dw, &st, err, sizeof err));
  cr_assert(strstr(err, ": no token is left (0 were stop words") != NULL, "%s",
            err);
  cr_assert_eq(orion_textbow_import("/no/such/dir", &o, &st, err, sizeof err),
               -ENOENT);
  cr_assert_str_eq(err, "cannot open /no/such/dir: No such file or directory");
}
