/* A lexer and recursive-descent parser for the whole Lua 5.4 grammar, and a
 * printer that turns the tree back into Lua source.
 *
 * The parser accepts exactly what luac 5.4 accepts syntactically (it does
 * not check semantic rules such as goto visibility or assignments to
 * <const> locals, which the Lua compiler reports itself).
 */
#ifndef ORION_ANALYSIS_PARSE_H
#define ORION_ANALYSIS_PARSE_H

#include <stddef.h>

#include "analysis/ast.h"
#include "util/buf.h"
#include "util/error.h"

/* Parses src[0..len) as a Lua chunk.  On success *out holds the tree (free
 * with orion_ast_free) and 0 is returned.  On a syntax error returns
 * ORION_EPARSE with err->msg "CHUNKNAME:LINE:COL: MESSAGE near 'TOKEN'"
 * (LINE and COL 1-based, of the offending token; "near <eof>" at the end),
 * and *out is NULL.  ORION_ENOMEM on out of memory. */
int orion_parse(const char *src, size_t len, const char *chunkname,
                orion_ast **out, orion_error *err);

void orion_ast_free(orion_ast *ast);

/* Appends Lua source for a chunk's block (or any statement or expression
 * node) to out.  Parsing the output gives a tree equal to the input by
 * orion_ast_dump (positions aside).  Parenthesises by precedence; string
 * literals are escaped so any bytes round-trip. */
void orion_ast_print(const ast_node *n, orion_buf *out);

/* Appends a structural S-expression of n without positions, e.g.
 * (binop + (name a) (int 1)); two trees are equal when their dumps are. */
void orion_ast_dump(const ast_node *n, orion_buf *out);

#endif
