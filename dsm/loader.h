/* Fast loaders for the text formats training data comes in.
 *
 *   coo        "k1 .. kn v" per line, whitespace separated
 *   csv        SEP-separated columns; keys and the value from given columns
 *   movielens  "user::item::rating[::timestamp]" (ML-1M/10M ratings.dat) or
 *              "user<TAB>item<TAB>rating[<TAB>timestamp]" (ML-100k u.data)
 *   libsvm     "label idx:val idx:val ..."; element (row, idx) = val
 *   uci-bow    UCI docword: D, W, NNZ header lines, then "doc word count"
 *
 * Every loader makes a sparse array whose keys are 0-based (the file's key
 * minus index_base).  Blank lines are skipped in every format, and lines
 * whose first non-blank character is '#' in all but uci-bow; CRLF line ends
 * are accepted.  A malformed line is an error
 *
 *   FILE:LINE: problem: "the line's text (cut to 80 characters)"
 *
 * with ORION_EPARSE (bad syntax, wrong field count, a number out of range)
 * or ORION_EKEYRANGE (a key below the index base or above a given dim),
 * unless skip_errors is set: then such lines are counted and skipped.
 * Nothing is truncated silently: a number that does not fit is an error.
 */
#ifndef ORION_DSM_LOADER_H
#define ORION_DSM_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/array.h"
#include "dsm/key.h"
#include "dsm/types.h"
#include "util/error.h"

typedef enum orion_format {
  ORION_FMT_COO = 0,
  ORION_FMT_CSV,
  ORION_FMT_MOVIELENS,
  ORION_FMT_LIBSVM,
  ORION_FMT_UCIBOW
} orion_format;

/* Parses a format name ("coo", "csv", "movielens", "libsvm", "uci-bow")
 * into *out.  Returns 0, or ORION_EOPTION for an unknown name (then *out is
 * untouched).  Nothing is allocated. */
int orion_format_parse(const char *name, orion_format *out);

/* The name of a format, as orion_format_parse reads it (static string). */
const char *orion_format_name(orion_format f);

typedef struct orion_load_opts {
  orion_format format;
  int index_base; /* 0 or 1: the file's smallest key; default 1 */
  int nkeys;      /* coo: key columns; 0 = first data line's fields - 1 */
  int have_dims;  /* when set, dims[0..ndims-1] are the result's dims and a
                     key above one is an error (uci-bow: overrides the
                     header's D and W) */
  int64_t dims[ORION_MAX_DIMS];
  orion_type value_type;        /* default ORION_F64; i32/i64 want integers */
  int skip_errors;              /* count and skip malformed lines */
  char sep;                     /* csv: the separator, default ',' */
  int header;                   /* coo, csv, movielens: skip the buffer's
                                   first line */
  int ncols_key;                /* csv: number of key columns, default 2 */
  int key_cols[ORION_MAX_DIMS]; /* csv: 1-based key columns, default 1 2 */
  int value_col;                /* csv: 1-based value column, default 3 */
  int expand; /* uci-bow: one element per token occurrence, see
                 orion_load_expand; whole loads only (orion_load_buffer,
                 orion_load_file): ranges and merges ignore it */
  int progress; /* whole loads and orion_pload: draw a progress line of
                   the bytes parsed (util/progress.h); never sent */
} orion_load_opts;

/* Fills *o with the defaults: coo, index base 1, nkeys inferred, no dims,
 * f64 values, errors fatal, csv "," without header, keys in columns 1 and 2,
 * value in column 3. */
void orion_load_opts_init(orion_load_opts *o);

typedef struct orion_load_result {
  orion_array *array;   /* sparse; the caller owns one reference and drops it
                           with orion_array_release */
  orion_array *labels;  /* libsvm: dense 1-D f64 label per row (the caller
                           owns it like `array`); NULL for other formats and
                           for a libsvm input without rows */
  int64_t row_lo;       /* libsvm: the global row of labels[0] and of the
                           first element's row key (a byte range's rows
                           before it); 0 for whole loads and other formats */
  int64_t lines;        /* lines read, blank, comment and header included */
  int64_t skipped;      /* malformed lines skipped (skip_errors) */
  char first_skip[512]; /* the first skipped line's message, "" if none */
} orion_load_result;

/* Parses len bytes of text in format o->format (buf need not be
 * NUL-terminated and is only read).  `name` names the input in messages and
 * first_line is the line number of buf's first line.  Result dims: the
 * given dims with o->have_dims, (D, W) from the header for uci-bow, else
 * max key + 1 per dimension (libsvm: at least the number of rows).  A libsvm
 * row is a data line (0-based); with skip_errors a skipped line makes no
 * row.  An input without data gives an empty array (coo with nkeys 0: two
 * dims, all 0).  Returns 0 with res filled, or a negative code with err
 * filled and res->array and res->labels NULL (nothing left allocated):
 * ORION_EPARSE / ORION_EKEYRANGE for bad input, ORION_EOPTION for bad
 * options, ORION_ENOMEM. */
int orion_load_buffer(const char *buf, size_t len, const char *name,
                      int64_t first_line, const orion_load_opts *o,
                      orion_load_result *res, orion_error *err);

/* Parallel loading.  Each executor parses one byte range [lo, hi) of the
 * same whole input with orion_load_buffer_range, and the driver puts the
 * results together, in range order, with orion_load_merge.  Cutting at
 * plain byte offsets (len * i / n) is fine: a range holds the lines that
 * START in it (at offset 0 or just after a '\n'), each read whole even past
 * hi, so ranges [0, a), [a, b), [b, len) give every line exactly once for
 * any a <= b, and the merge equals orion_load_buffer on the whole input:
 * the same elements in the same order, dims, labels, lines and skipped.
 *
 * What a range learns from the input before it, so that it parses as the
 * whole load would: its first line's number (message lines are global),
 * the csv header (the input's first line, skipped by the range holding
 * it), the uci-bow header (read from the top by every range for D and W;
 * only the range holding it counts those lines), coo's key count with
 * nkeys 0 (from the input's first usable line), and the libsvm rows before
 * it (counted from the data lines; with skip_errors parsed, as only parsing
 * tells which lines make rows, so later ranges do more work). */

/* Parses the lines of buf[0, len) (the WHOLE input, e.g. as
 * orion_read_file gives it; only read) that start at a byte offset in
 * [lo, hi); lo and hi above len mean len.  Line numbers count from 1 at
 * buf's start.  On success, as orion_load_buffer for those lines:
 *   - array: this range's elements; dims the given dims (o->have_dims),
 *     D and W from the uci-bow header, else max key + 1 over this range's
 *     elements (libsvm: at least row_lo + its rows), so the driver takes
 *     the largest over the ranges;
 *   - labels (libsvm): this range's rows only; they are the global rows
 *     [row_lo, row_lo + labels->dims[0]), row_lo set in res;
 *   - lines, skipped, first_skip: this range's lines.
 * A line error is reported, with the message a whole load would give, by
 * the range holding the line; other ranges succeed, except that a bad or
 * incomplete uci-bow header fails every range, and the NNZ line-count
 * check of uci-bow is made by the range that reaches len.  Returns 0, or
 * a negative code as orion_load_buffer (ORION_EOPTION also for lo > hi),
 * with the same ownership: res's arrays are the caller's, nothing is left
 * allocated on failure.  Any thread; no shared state. */
int orion_load_buffer_range(const char *buf, size_t len, const char *name,
                            uint64_t lo, uint64_t hi, const orion_load_opts *o,
                            orion_load_result *res, orion_error *err);

/* Concatenates the results parts[0..n-1] of consecutive byte ranges, in
 * order, into *out: the elements in part order, dims the largest of the
 * parts' (the given dims with o->have_dims; o may be NULL), the labels of
 * each part at its global rows [row_lo, row_lo + rows) counted from
 * parts[0].row_lo (out->row_lo), lines and skipped summed, first_skip the
 * first part's that is not empty.  The parts are only read: they and their
 * arrays stay the caller's, to release as before.  out->array and
 * out->labels are new arrays the caller owns (orion_array_release).
 * Returns 0, or with err filled and out's arrays NULL: ORION_EINVAL for no
 * parts, a part without an array, or rows that do not follow on,
 * ORION_EDIMS / ORION_ETYPE for parts of different dims counts or types,
 * ORION_ENOMEM.  Any thread. */
int orion_load_merge(const orion_load_result *parts, int n,
                     const orion_load_opts *o, orion_load_result *out,
                     orion_error *err);

/* Token expansion of a bag-of-words load (uci-bow with expand set): each
 * (doc, word, count) element becomes `count` elements (doc, word, j) for
 * j = 0 .. count-1, in the input's order, all with value 0 of type vt.
 * The result is 3-D with dims (D, W, largest count) (third dim 1 when
 * there are no tokens).  With opts.expand the whole loads parse the counts
 * as i64 (so a count that is not an integer is a FILE:LINE error whatever
 * value_type says) and expand to value_type; a parallel load parses its
 * ranges with value_type i64 and calls this on the merged result.
 *
 * res->array (2-D, integer-valued counts) is replaced by the expanded
 * array (the old one released); res keeps its other fields.  Returns 0, or
 * with err filled and res->array untouched: ORION_EPARSE for a count that
 * is negative or not an integer ("NAME: document 3, word 7: count -2 is
 * not a non-negative integer"), ORION_EDIMS for an array that is not 2-D,
 * ORION_ENOMEM.  Any thread. */
int orion_load_expand(orion_load_result *res, orion_type vt, const char *name,
                      orion_error *err);

/* Reads the plain or gzip-compressed file at path whole and parses it with
 * orion_load_buffer (name = path, first line 1).  Ownership and errors as
 * there, plus those of orion_read_file. */
int orion_load_file(const char *path, const orion_load_opts *o,
                    orion_load_result *res, orion_error *err);

/* Reads the whole of a plain or gzip-compressed file (detected by content).
 * On success *data is an orion_malloc'd buffer of *len bytes plus a
 * terminating NUL, which the caller frees with orion_free.  Returns 0, or a
 * negative code with err filled and *data NULL: -errno for a file that
 * cannot be opened or read ("cannot open PATH: reason"), ORION_EPARSE for
 * corrupt gzip data, ORION_ETRUNC for a truncated gzip stream,
 * ORION_ENOMEM. */
int orion_read_file(const char *path, char **data, size_t *len,
                    orion_error *err);

/* As orion_read_file, but a plain regular file is mapped read-only
 * (mmap) instead of read into memory: no copy, and only the pages a
 * parser touches are read from the page cache (an executor parsing its
 * byte range of a parallel load reads that range, not the whole file).
 * *mapped says which it was; give data, len and mapped back to
 * orion_unmap_file.  A gzip file, or one that cannot be mapped, is read as
 * orion_read_file reads it, with its errors.  The data must not be
 * written; a mapped file that another process truncates while it is
 * parsed ends the process with SIGBUS, so this is for data files, not for
 * files that change. */
int orion_map_file(const char *path, char **data, size_t *len, int *mapped,
                   orion_error *err);

/* Releases what orion_map_file gave (nothing for data NULL). */
void orion_unmap_file(char *data, size_t len, int mapped);

#endif
