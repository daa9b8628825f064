/* Raw text to a bag of words (see dsm/textbow.h). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsm/textbow.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/hash.h"

/* ======================================================================
 * A word table: open addressing over words kept in one arena.
 * ====================================================================== */

typedef struct word {
  uint64_t hash;
  size_t off;      /* the word's bytes in the arena */
  int32_t len;
  int32_t id;      /* 0-based order of first sight; -1 for a stop word */
  int64_t df;      /* documents it occurs in */
  int64_t lastdoc; /* the last document counted in df */
  int64_t out;     /* its 1-based id in the output, 0: dropped */
} word;

typedef struct wtable {
  word *w;      /* the words, by id */
  int32_t n, cap;
  int32_t *slot; /* id + 1, 0 when empty */
  size_t nslot;  /* a power of two */
  char *arena;
  size_t used, size;
} wtable;

static void wt_free(wtable *t) {
  orion_free(t->w);
  orion_free(t->slot);
  orion_free(t->arena);
  memset(t, 0, sizeof *t);
}

static int32_t *wt_find(wtable *t, const char *s, int32_t len, uint64_t h) {
  size_t i = orion_hash_mix(h) & (t->nslot - 1);
  for (;;) {
    int32_t *p = &t->slot[i];
    const word *e;
    if (*p == 0)
      return p;
    e = &t->w[*p - 1];
    if (e->hash == h && e->len == len && memcmp(t->arena + e->off, s, len) == 0)
      return p;
    i = (i + 1) & (t->nslot - 1);
  }
}

static void wt_grow(wtable *t) {
  size_t i, n = t->nslot ? t->nslot * 2 : 1024;
  orion_free(t->slot);
  t->slot = orion_calloc(n, sizeof *t->slot);
  t->nslot = n;
  for (i = 0; i < (size_t)t->n; i++) {
    const word *e = &t->w[i];
    *wt_find(t, t->arena + e->off, e->len, e->hash) = (int32_t)i + 1;
  }
}

/* The word's entry, added (with id = its index) when absent and add. */
static word *wt_get(wtable *t, const char *s, int32_t len, int add) {
  uint64_t h = orion_hash_bytes(ORION_HASH_INIT, s, (size_t)len);
  int32_t *p;
  word *e;
  if (t->nslot == 0 || (size_t)(t->n + 1) * 2 > t->nslot)
    wt_grow(t);
  p = wt_find(t, s, len, h);
  if (*p != 0)
    return &t->w[*p - 1];
  if (!add)
    return NULL;
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 1024;
    t->w = orion_realloc(t->w, (size_t)t->cap * sizeof *t->w);
  }
  if (t->used + (size_t)len + 1 > t->size) {
    t->size = (t->size + (size_t)len + 1) * 2;
    t->arena = orion_realloc(t->arena, t->size);
  }
  memcpy(t->arena + t->used, s, (size_t)len);
  t->arena[t->used + (size_t)len] = '\0';
  e = &t->w[t->n];
  memset(e, 0, sizeof *e);
  e->hash = h;
  e->off = t->used;
  e->len = len;
  e->id = t->n;
  e->lastdoc = -1;
  t->used += (size_t)len + 1;
  *p = ++t->n;
  return e;
}

/* ======================================================================
 * Files.
 * ====================================================================== */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

/* Reads path whole into *out (NUL-terminated; the caller frees it). */
static int read_all(const char *path, char **out, size_t *len, char *err,
                    size_t errlen) {
  FILE *f = fopen(path, "rb");
  char *b = NULL;
  size_t n = 0, cap = 0, got;
  if (f == NULL)
    return fail(err, errlen, -errno, "cannot open %s: %s", path,
                strerror(errno));
  do {
    if (cap - n < 65536) {
      cap = cap ? cap * 2 : 65536 * 2;
      b = orion_realloc(b, cap + 1);
    }
    got = fread(b + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  if (ferror(f)) {
    int e = errno;
    fclose(f);
    orion_free(b);
    return fail(err, errlen, -e, "cannot read %s: %s", path, strerror(e));
  }
  fclose(f);
  b[n] = '\0';
  *out = b;
  *len = n;
  return 0;
}

typedef struct pathlist {
  char **p;
  size_t n, cap;
} pathlist;

static void pl_free(pathlist *l) {
  size_t i;
  for (i = 0; i < l->n; i++)
    orion_free(l->p[i]);
  orion_free(l->p);
}

/* Adds the regular files under dir (recursively) to l. */
static int walk(const char *dir, pathlist *l, int depth, char *err,
                size_t errlen) {
  DIR *d;
  struct dirent *de;
  int rc = 0;
  if (depth > 64)
    return fail(err, errlen, ORION_EOPTION, "%s: folders nested too deep",
                dir);
  d = opendir(dir);
  if (d == NULL)
    return fail(err, errlen, -errno, "cannot open the folder %s: %s", dir,
                strerror(errno));
  while (rc == 0 && (de = readdir(d)) != NULL) {
    struct stat sb;
    char *p;
    if (de->d_name[0] == '.')
      continue;
    p = orion_asprintf("%s/%s", dir, de->d_name);
    if (stat(p, &sb) != 0) {
      rc = fail(err, errlen, -errno, "cannot read %s: %s", p, strerror(errno));
      orion_free(p);
    } else if (S_ISDIR(sb.st_mode)) {
      rc = walk(p, l, depth + 1, err, errlen);
      orion_free(p);
    } else if (S_ISREG(sb.st_mode)) {
      if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->p = orion_realloc(l->p, l->cap * sizeof *l->p);
      }
      l->p[l->n++] = p;
    } else {
      orion_free(p);
    }
  }
  closedir(d);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ======================================================================
 * Tokens.
 * ====================================================================== */

static int is_letter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static int is_punct(unsigned char c) {
  return c != '\0' && strchr("!\"#%&'()*,-./:;?@[\\]_{}", c) != NULL;
}

/* The text after the first blank line (a line of only spaces, tabs and
 * CR), or all of it when there is none. */
static const char *after_header(const char *s, const char *end) {
  const char *line = s;
  while (line < end) {
    const char *p = line;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
      p++;
    if (p < end && *p == '\n')
      return p + 1;
    p = memchr(line, '\n', (size_t)(end - line));
    if (p == NULL)
      break;
    line = p + 1;
  }
  return s;
}

/* The documents' tokens as word ids, doc by doc. */
typedef struct corpus {
  int32_t *tok;
  size_t n, cap;
  int64_t *start; /* doc d's tokens: tok[start[d] .. start[d + 1]) */
  size_t ndoc, dcap;
  char **names;
} corpus;

static void corpus_free(corpus *c) {
  size_t i;
  for (i = 0; i < c->ndoc; i++)
    orion_free(c->names[i]);
  orion_free(c->names);
  orion_free(c->tok);
  orion_free(c->start);
}

typedef struct import {
  const orion_textbow_opts *o;
  wtable words;
  corpus c;
  int fixed; /* the vocabulary is vocab_in's */
  orion_textbow_stats *st;
} import;

/* Tokenises [s, end) as the next document, named name (taken over). */
static void add_doc(import *im, const char *s, const char *end, char *name) {
  corpus *c = &im->c;
  int64_t doc = (int64_t)c->ndoc;
  char small[256], *buf = small;
  if (c->ndoc + 2 > c->dcap) {
    c->dcap = c->dcap ? c->dcap * 2 : 1024;
    c->start = orion_realloc(c->start, c->dcap * sizeof *c->start);
    c->names = orion_realloc(c->names, c->dcap * sizeof *c->names);
  }
  if (c->ndoc == 0)
    c->start[0] = 0;
  c->names[c->ndoc] = name;
  if (im->o->skip_header)
    s = after_header(s, end);
  while (s < end) {
    const unsigned char *p = (const unsigned char *)s, *last, *q;
    int32_t len, i;
    word *w;
    if (!is_letter(*p)) {
      s++;
      continue;
    }
    last = p;
    q = p + 1;
    while (q < (const unsigned char *)end && (is_letter(*q) || is_punct(*q))) {
      if (is_letter(*q))
        last = q;
      q++;
    }
    s = (const char *)q;
    len = (int32_t)(last - p + 1);
    if (len < 3)
      continue;
    if (len > (int32_t)sizeof small) { /* a long run: a buffer of its own */
      if (buf != small)
        orion_free(buf);
      buf = orion_malloc((size_t)len);
    }
    for (i = 0; i < len; i++) {
      unsigned char ch = p[i];
      buf[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    w = wt_get(&im->words, buf, len, !im->fixed);
    if (w == NULL) {
      im->st->pruned++;
      continue;
    }
    if (w->id < 0) {
      im->st->stopped++;
      continue;
    }
    if (w->lastdoc != doc) {
      w->lastdoc = doc;
      w->df++;
    }
    if (c->n == c->cap) {
      c->cap = c->cap ? c->cap * 2 : 65536;
      c->tok = orion_realloc(c->tok, c->cap * sizeof *c->tok);
    }
    c->tok[c->n++] = w->id;
  }
  if (buf != small)
    orion_free(buf);
  c->ndoc++;
  c->start[c->ndoc] = (int64_t)c->n;
}

/* Reads a word list file: each line's words (stop) or each non-blank
 * line as one word (vocabulary).  Stop words get id -1. */
static int read_words(import *im, const char *path, int stop, char *err,
                      size_t errlen) {
  char *text, *s, *end;
  size_t len;
  int64_t line = 1;
  int rc = read_all(path, &text, &len, err, errlen);
  if (rc != 0)
    return rc;
  end = text + len;
  for (s = text; s < end; line++) {
    char *nl = memchr(s, '\n', (size_t)(end - s));
    char *e = nl ? nl : end, *p = s;
    while (p < e) {
      char *q;
      int32_t i, n;
      word *w;
      while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
      if (p == e || (stop && *p == '#'))
        break;
      q = p;
      while (q < e && *q != ' ' && *q != '\t' && *q != '\r')
        q++;
      n = (int32_t)(q - p);
      for (i = 0; i < n; i++)
        if (p[i] >= 'A' && p[i] <= 'Z')
          p[i] = (char)(p[i] + 32);
      if (!stop) {
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
          q++;
        if (q != e) {
          rc = fail(err, errlen, ORION_EPARSE,
                    "%s:%lld: a vocabulary line holds one word: \"%.*s\"",
                    path, (long long)line, (int)(e - s > 80 ? 80 : e - s), s);
          goto out;
        }
        if (wt_get(&im->words, p, n, 0) != NULL) {
          rc = fail(err, errlen, ORION_EPARSE,
                    "%s:%lld: the word \"%.*s\" is already in the vocabulary",
                    path, (long long)line, (int)(n > 80 ? 80 : n), p);
          goto out;
        }
        w = wt_get(&im->words, p, n, 1);
        w->out = w->id + 1;
        break;
      }
      w = wt_get(&im->words, p, n, 1);
      w->id = -1;
      p = q;
    }
    s = nl ? nl + 1 : end;
  }
out:
  orion_free(text);
  return rc;
}

/* ======================================================================
 * Output.
 * ====================================================================== */

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int cmp_word(const void *a, const void *b, void *arena) {
  const word *x = *(word *const *)a, *y = *(word *const *)b;
  return strcmp((const char *)arena + x->off, (const char *)arena + y->off);
}

static int close_out(FILE *f, const char *path, char *err, size_t errlen) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return fail(err, errlen, -EIO, "cannot write %s", path);
  return 0;
}

static FILE *open_out(const char *path, char *err, size_t errlen, int *rc) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    *rc = fail(err, errlen, -errno, "cannot write %s: %s", path,
               strerror(errno));
  return f;
}

/* Numbers the kept words (out = 1..W, in byte order unless the
 * vocabulary is fixed) and writes the vocabulary. */
static int number_words(import *im, char *err, size_t errlen) {
  wtable *t = &im->words;
  word **keep = orion_malloc(((size_t)t->n + 1) * sizeof *keep);
  int64_t i, nk = 0, max_df = (int64_t)(im->o->max_df * (double)im->c.ndoc);
  int rc = 0;
  for (i = 0; i < t->n; i++) {
    word *w = &t->w[i];
    if (im->fixed) {
      if (w->out > 0)
        keep[nk++] = w;
    } else if (w->id >= 0 && w->df >= im->o->min_df && w->df <= max_df) {
      keep[nk++] = w;
    }
  }
  if (!im->fixed)
    qsort_r(keep, (size_t)nk, sizeof *keep, cmp_word, t->arena);
  for (i = 0; i < nk; i++)
    keep[i]->out = i + 1;
  im->st->words = nk;
  if (im->o->vocab_out != NULL) {
    FILE *f = open_out(im->o->vocab_out, err, errlen, &rc);
    if (f != NULL) {
      for (i = 0; i < nk; i++)
        fprintf(f, "%s\n", t->arena + keep[i]->off);
      rc = close_out(f, im->o->vocab_out, err, errlen);
    }
  }
  orion_free(keep);
  return rc;
}

static int write_docword(import *im, char *err, size_t errlen) {
  corpus *c = &im->c;
  const char *path = im->o->docword;
  int32_t *ids = orion_malloc((c->n + 1) * sizeof *ids);
  int64_t *end = orion_malloc((c->ndoc + 1) * sizeof *end);
  int64_t d, nnz = 0;
  size_t n = 0, i, j;
  int rc = 0;
  FILE *f;
  /* Each document's output ids, sorted, dropped tokens left out:
   * document d's are ids[end[d - 1] .. end[d]). */
  for (d = 0; d < (int64_t)c->ndoc; d++) {
    size_t a = n;
    for (i = (size_t)c->start[d]; i < (size_t)c->start[d + 1]; i++) {
      int64_t out = im->words.w[c->tok[i]].out;
      if (out > 0)
        ids[n++] = (int32_t)out;
      else
        im->st->pruned++;
    }
    qsort(ids + a, n - a, sizeof *ids, cmp_i32);
    for (j = a; j < n; j++)
      if (j == a || ids[j] != ids[j - 1])
        nnz++;
    end[d] = (int64_t)n;
  }
  im->st->tokens = (int64_t)n;
  im->st->nnz = nnz;
  f = open_out(path, err, errlen, &rc);
  if (f != NULL) {
    fprintf(f, "%lld\n%lld\n%lld\n", (long long)c->ndoc,
            (long long)im->st->words, (long long)nnz);
    for (d = 0, j = 0; d < (int64_t)c->ndoc; d++) {
      while (j < (size_t)end[d]) {
        size_t k = j;
        while (k < (size_t)end[d] && ids[k] == ids[j])
          k++;
        fprintf(f, "%lld %d %zu\n", (long long)d + 1, ids[j], k - j);
        j = k;
      }
    }
    rc = close_out(f, path, err, errlen);
  }
  orion_free(end);
  orion_free(ids);
  return rc;
}

static int write_names(import *im, char *err, size_t errlen) {
  size_t i;
  int rc = 0;
  FILE *f = open_out(im->o->names_out, err, errlen, &rc);
  if (f == NULL)
    return rc;
  for (i = 0; i < im->c.ndoc; i++)
    fprintf(f, "%s\n", im->c.names[i]);
  return close_out(f, im->o->names_out, err, errlen);
}

/* ======================================================================
 * The import.
 * ====================================================================== */

static int read_source(import *im, const char *src, char *err, size_t errlen) {
  struct stat sb;
  char *text;
  size_t len;
  int rc;
  if (stat(src, &sb) != 0)
    return fail(err, errlen, -errno, "cannot open %s: %s", src,
                strerror(errno));
  if (S_ISDIR(sb.st_mode)) {
    pathlist l = {NULL, 0, 0};
    size_t i;
    rc = walk(src, &l, 0, err, errlen);
    if (rc == 0 && l.n == 0)
      rc = fail(err, errlen, ORION_EPARSE, "%s: the folder holds no files",
                src);
    if (rc == 0)
      qsort(l.p, l.n, sizeof *l.p, cmp_str);
    for (i = 0; rc == 0 && i < l.n; i++) {
      rc = read_all(l.p[i], &text, &len, err, errlen);
      if (rc == 0) {
        add_doc(im, text, text + len, l.p[i]);
        l.p[i] = NULL; /* the corpus owns the name now */
        orion_free(text);
      }
    }
    pl_free(&l);
    return rc;
  }
  rc = read_all(src, &text, &len, err, errlen);
  if (rc == 0) {
    const char *s = text, *end = text + len;
    int64_t line = 1;
    while (s < end) {
      const char *nl = memchr(s, '\n', (size_t)(end - s));
      const char *e = nl ? nl : end;
      add_doc(im, s, e, orion_asprintf("%s:%lld", src, (long long)line++));
      s = nl ? nl + 1 : end;
    }
    if (im->c.ndoc == 0)
      rc = fail(err, errlen, ORION_EPARSE, "%s: the file is empty", src);
    orion_free(text);
  }
  return rc;
}

int orion_textbow_import(const char *src, const orion_textbow_opts *o,
                         orion_textbow_stats *st, char *err, size_t errlen) {
  import im;
  int rc = 0;
  memset(&im, 0, sizeof im);
  memset(st, 0, sizeof *st);
  im.o = o;
  im.st = st;
  im.fixed = o->vocab_in != NULL;
  /* A fixed vocabulary was built with its stop words already out. */
  if (o->stoplist != NULL && !im.fixed)
    rc = read_words(&im, o->stoplist, 1, err, errlen);
  if (rc == 0 && im.fixed)
    rc = read_words(&im, o->vocab_in, 0, err, errlen);
  if (rc == 0)
    rc = read_source(&im, src, err, errlen);
  st->docs = (int64_t)im.c.ndoc;
  if (rc == 0)
    rc = number_words(&im, err, errlen);
  if (rc == 0)
    rc = write_docword(&im, err, errlen);
  if (rc == 0 && st->tokens == 0)
    rc = fail(err, errlen, ORION_EPARSE,
              "%s: no token is left (%lld were stop words, %lld outside the "
              "vocabulary or the document-frequency limits)",
              src, (long long)st->stopped, (long long)st->pruned);
  if (rc == 0 && o->names_out != NULL)
    rc = write_names(&im, err, errlen);
  corpus_free(&im.c);
  wt_free(&im.words);
  return rc;
}
