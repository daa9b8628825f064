/* Readers for the DNN app's datasets (no Lua here):
 *
 *   - IDX files (MNIST's `*-idx3-ubyte`, `*-idx1-ubyte`, plain or
 *     gzip-compressed) into dense arrays;
 *   - the labels file of a labelled bag-of-words corpus (20 Newsgroups'
 *     `docs.20news.txt`: "docID split group [file]" lines);
 *   - the feature rows of a bag-of-words count matrix (as orion.text_file's
 *     "uci-bow" format loads it) in compressed-row form, for a sparse
 *     first layer.
 *
 * The parsers work on byte buffers (testable without files); the *_read
 * functions read the file (orion_read_file: plain or gzip) and parse it.
 * Every error message names the file.  Any thread.
 */
#ifndef ORION_DSM_IDX_H
#define ORION_DSM_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/array.h"
#include "util/error.h"

/* ---- IDX ------------------------------------------------------------------ */

typedef struct orion_idx_opts {
  orion_type type; /* element type of the result */
  double scale;    /* each value becomes value * scale + shift */
  double shift;
  int flatten;     /* 1: dims (d1, d2 * ... * dn) instead of the file's */
} orion_idx_opts;

/* The defaults: f32, scale 1, shift 0, the file's dims. */
void orion_idx_opts_init(orion_idx_opts *o);

/* Parses an IDX image held in buf[0..len) (`name` names it in messages).
 * The header is two zero bytes, a type code (0x08 u8, 0x09 i8, 0x0B i16,
 * 0x0C i32, 0x0D f32, 0x0E f64), the number of dims (1..8), then each dim
 * as a big-endian u32; the elements follow, big-endian, row-major.  On
 * success *out is a new dense array (the caller owns one reference).
 * Errors (with err filled, *out NULL):
 *   ORION_EPARSE  "NAME: not an IDX file (magic bytes 1f 8b 08 00)",
 *                 "NAME: not an IDX file (unknown element type code 0x07)",
 *                 "NAME: IDX header gives 0 dimensions (1 to 8 allowed)",
 *                 "NAME: IDX dimension 2 is 0",
 *                 "NAME: 5 bytes after the data (the header promises
 *                  7840016 bytes in all)",
 *                 a value that does not fit an integer `type`;
 *   ORION_ETRUNC  "NAME: truncated at byte 10 (the IDX header needs 16
 *                  bytes)", "NAME: truncated at byte 4000 (10000x28x28 u8
 *                  elements need 7840016 bytes)";
 *   ORION_EOVERFLOW, ORION_ENOMEM. */
int orion_idx_parse(const char *name, const unsigned char *buf, size_t len,
                    const orion_idx_opts *o, orion_array **out,
                    orion_error *err);

/* Reads path (plain or gzip-compressed) and parses it as above.  Also
 * fails as orion_read_file does (cannot open, corrupt or truncated gzip). */
int orion_idx_read(const char *path, const orion_idx_opts *o,
                   orion_array **out, orion_error *err);

/* ---- labelled documents --------------------------------------------------- */

/* One line per document, "docID split group [more fields]", docIDs 1, 2, 3,
 * ... in order; split is "train" or "test".  Blank lines and lines starting
 * with '#' are skipped. */
typedef struct orion_docs {
  int64_t n;       /* documents */
  int32_t *label;  /* n: the group, 1-based, numbered in sorted name order */
  uint8_t *test;   /* n: 0 for "train", 1 for "test" */
  char **groups;   /* ngroups names, sorted */
  int ngroups;
} orion_docs;

/* Parses buf[0..len) into d (free it with orion_docs_free).  Errors name
 * FILE:LINE and the text: "NAME:3: expected 3 fields (docID split group),
 * found 2: \"3 train\"", "NAME:4: expected document 4, found 7: ...",
 * "NAME:2: split must be \"train\" or \"test\", not \"dev\": ..."
 * (ORION_EPARSE), or "NAME: no documents" for an input without any. */
int orion_docs_parse(const char *name, const char *buf, size_t len,
                     orion_docs *d, orion_error *err);
int orion_docs_read(const char *path, orion_docs *d, orion_error *err);
void orion_docs_free(orion_docs *d);

/* ---- bag-of-words feature rows -------------------------------------------- */

typedef enum orion_bow_weight {
  ORION_BOW_COUNT = 0, /* the count itself */
  ORION_BOW_LOG1P = 1  /* log(1 + count) */
} orion_bow_weight;

/* Builds the feature rows of documents rows[0..nrows) (0-based rows of the
 * 2-D count matrix `counts`, sparse or dense, as loaded from a docword
 * file) in compressed-row form: three new dense 1-D arrays, *rowptr (i64,
 * nrows + 1 offsets, starting at 0), *cols (i32, 1-based word ids) and *vals
 * (f32), where row r holds its words in increasing order (duplicate
 * (doc, word) entries summed, zero counts dropped), weighted by `weight` and,
 * with l2, scaled to unit Euclidean norm (empty rows stay empty).  A row out
 * of range or a negative count is ORION_EINVAL / ORION_EPARSE with err set.
 * An empty result still has one element in cols and vals (a 0), since
 * arrays cannot have size 0; rowptr says how many are used. */
int orion_bow_csr(const orion_array *counts, const int64_t *rows,
                  int64_t nrows, orion_bow_weight weight, int l2,
                  orion_array **rowptr, orion_array **cols,
                  orion_array **vals, orion_error *err);

#endif
