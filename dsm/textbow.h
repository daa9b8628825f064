/* Raw text to a bag of words: the LDA app's `--import` (apps/lda).
 *
 * A source is a folder (every regular file under it, recursively, is one
 * document, in the byte order of the paths; names starting with '.' are
 * skipped) or a file (every line is one document).  A document is cut
 * into tokens as MALLET's default token pattern \p{L}[\p{L}\p{P}]+\p{L}
 * cuts it: a letter, then letters and punctuation, ending with a letter,
 * at least 3 characters.  Letters are the ASCII letters and every byte
 * from 0x80 (so UTF-8 and Latin-1 words stay whole); punctuation is the
 * ASCII characters of Unicode's P classes (!"#%&'()*,-./:;?@[\]_{}).
 * Tokens are lower-cased (ASCII), stop words dropped, and then either
 *
 *   - a vocabulary is built: the words in at least min_df and at most
 *     max_df documents, in byte order; or
 *   - a given vocabulary (vocab_in, one word per line) is used and the
 *     tokens of other words are dropped (held-out or new documents).
 *
 * The result is written as a UCI docword file (D, W, NNZ, then "doc word
 * count", 1-based, in document and word order) and a vocabulary file
 * (one word per line, word w on line w), and optionally the document
 * names (one per line: the file's path, or SOURCE:LINE).
 *
 * Errors (an unreadable file, a duplicate vocabulary word, nothing to
 * write) return a negative code with a message naming the file and, where
 * there is one, the line.  Not thread-safe across calls sharing opts. */
#ifndef ORION_DSM_TEXTBOW_H
#define ORION_DSM_TEXTBOW_H

#include <stddef.h>
#include <stdint.h>

typedef struct orion_textbow_opts {
  const char *stoplist;  /* stop words, whitespace separated ('#' starts a
                            comment), or NULL for none */
  const char *vocab_in;  /* a fixed vocabulary, or NULL to build one */
  int skip_header;       /* drop a document's text up to its first blank
                            line (e-mail and Usenet headers) */
  int64_t min_df;        /* keep words in at least this many documents */
  double max_df;         /* and in at most this fraction of them (1: all) */
  const char *docword;   /* out: the UCI docword file (required) */
  const char *vocab_out; /* out: the vocabulary (NULL: not written) */
  const char *names_out; /* out: the document names (NULL: not written) */
} orion_textbow_opts;

typedef struct orion_textbow_stats {
  int64_t docs;    /* documents (D) */
  int64_t words;   /* vocabulary size (W) */
  int64_t nnz;     /* (document, word) pairs */
  int64_t tokens;  /* tokens kept */
  int64_t stopped; /* tokens dropped as stop words */
  int64_t pruned;  /* tokens dropped by the df limits or not in vocab_in */
} orion_textbow_stats;

/* Imports src as described above.  On failure returns a negative
 * ORION_E... or -errno and writes a message to err (errlen bytes); the
 * output files may then be partly written.  The caller owns everything it
 * passed; nothing is kept after the call. */
int orion_textbow_import(const char *src, const orion_textbow_opts *o,
                         orion_textbow_stats *st, char *err, size_t errlen);

#endif
