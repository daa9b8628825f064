/* The Lua 5.4 lexer behind analysis/parse.c, and the arena that owns the
 * strings it decodes and the tree the parser builds.
 *
 * The lexer reads a byte range (NULs and any other bytes allowed) and hands
 * out one token at a time with its 1-based line and byte column.  Line
 * breaks are "\n", "\r", "\r\n" and "\n\r", each counting once, as in Lua.
 * A first line starting with '#' (a shebang) is skipped, as lua and luac do
 * for files, and so is a UTF-8 byte-order mark before it.
 *
 * Errors are reported as "CHUNK:LINE:COL: MESSAGE near 'TEXT'" (or "near
 * <eof>").  A token that cannot be read (malformed number, unfinished
 * string, invalid long string delimiter) is reported at its first byte; a
 * bad escape sequence at its backslash; an unfinished long string or
 * comment at the end of the input, naming the line where it started, like
 * luac does.
 */
#ifndef ORION_ANALYSIS_LEX_H
#define ORION_ANALYSIS_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* ---- the arena (internal to analysis/) ----------------------------------- */

/* A bump allocator: allocations are never freed one by one;
 * orion__arena_free releases them all.  Not thread-safe; one per parse. */
typedef struct orion__arena orion__arena;

orion__arena *orion__arena_new(void);
/* n bytes aligned for any type, or NULL when out of memory. */
void *orion__arena_alloc(orion__arena *a, size_t n);
/* A NUL-terminated copy of s[0..len), or NULL when out of memory. */
char *orion__arena_strdup(orion__arena *a, const char *s, size_t len);
void orion__arena_free(orion__arena *a);

/* Binding powers of a binary operator (an ast_op), as in Lua's parser: an
 * operator continues an expression parsed at limit L when left > L, and its
 * right operand is parsed at limit right.  Shared by the parser and the
 * printer, which must agree exactly. */
typedef struct orion__prio {
  unsigned char left, right;
} orion__prio;
orion__prio orion__binop_prio(int op);
/* The limit at which a unary operator's operand is parsed: only `^` binds
 * tighter than a unary operator. */
#define ORION__UNARY_PRIO 12

/* ---- tokens -------------------------------------------------------------- */

/* Single-byte tokens ('+', '(', and any byte that starts no other token,
 * NUL included) are their byte value 0..255; the others follow. */
typedef enum orion_tok_kind {
  TK_FIRST = 257,
  /* Reserved words, in alphabetical order. */
  TK_AND = TK_FIRST, TK_BREAK, TK_DO, TK_ELSE, TK_ELSEIF, TK_END, TK_FALSE,
  TK_FOR, TK_FUNCTION, TK_GOTO, TK_IF, TK_IN, TK_LOCAL, TK_NIL, TK_NOT,
  TK_OR, TK_REPEAT, TK_RETURN, TK_THEN, TK_TRUE, TK_UNTIL, TK_WHILE,
  /* Multi-byte symbols. */
  TK_IDIV,    /* // */
  TK_CONCAT,  /* .. */
  TK_DOTS,    /* ... */
  TK_EQ,      /* == */
  TK_GE,      /* >= */
  TK_LE,      /* <= */
  TK_NE,      /* ~= */
  TK_SHL,     /* << */
  TK_SHR,     /* >> */
  TK_DBCOLON, /* :: */
  /* Tokens with a value. */
  TK_EOF,
  TK_FLT,
  TK_INT,
  TK_NAME,
  TK_STRING,
  TK_LAST
} orion_tok_kind;

typedef struct orion_token {
  int kind;          /* a byte value or an orion_tok_kind */
  int line, col;     /* of the first byte, both 1-based */
  const char *raw;   /* the source text of the token (into the input) */
  size_t rawlen;
  int64_t ival;      /* TK_INT, wrapped modulo 2^64 like Lua's hex */
  double fval;       /* TK_FLT */
  const char *str;   /* TK_NAME, TK_STRING: decoded bytes in the arena, */
  size_t len;        /* NUL-terminated, len bytes (may hold NULs) */
} orion_token;

typedef struct orion_lexer {
  const char *src, *p, *end;
  const char *line_start; /* first byte of the current line */
  int line;
  const char *chunkname;
  orion__arena *arena;
  orion_buf scratch; /* string decoding and number conversion */
  orion_error *err;
} orion_lexer;

/* Prepares to read src[0..len).  Names and decoded strings are allocated
 * in arena; chunkname (borrowed, must outlive the lexer) prefixes error
 * messages. */
void orion_lex_init(orion_lexer *lx, const char *src, size_t len,
                    const char *chunkname, orion__arena *arena,
                    orion_error *err);

/* Reads the next token into *t.  Returns 0, or ORION_EPARSE (lexical
 * error) or ORION_ENOMEM with err set.  After TK_EOF it keeps returning
 * TK_EOF. */
int orion_lex_next(orion_lexer *lx, orion_token *t);

/* Releases the lexer's scratch memory (not the arena). */
void orion_lex_free(orion_lexer *lx);

/* How error messages name a token kind: "'end'", "'=='", "'('",
 * "<eof>", "<name>", "<string>", "<number>", "<integer>", "'<\1>'"... */
const char *orion_lex_kind_text(int kind, char *buf, size_t n);

/* The "near" part of a message about t: "<eof>" or the token's source
 * text quoted, control bytes shown as <\N>, long texts cut short. */
void orion_lex_near(const orion_token *t, char *buf, size_t n);

#endif
