/* The Lua 5.4 abstract syntax tree built by analysis/parse.c and read by the
 * dependence analysis (and, later, the C code generator).
 *
 * Every node carries the line and column (both 1-based) of its first token.
 * Nodes, lists and strings live in one arena owned by the orion_ast; freeing
 * the orion_ast frees them all.  The tree is immutable after parsing.
 */
#ifndef ORION_ANALYSIS_AST_H
#define ORION_ANALYSIS_AST_H

#include <stddef.h>
#include <stdint.h>

typedef enum ast_kind {
  /* Expressions. */
  AST_NIL,
  AST_TRUE,
  AST_FALSE,
  AST_VARARG,  /* ... */
  AST_INT,     /* ival */
  AST_FLT,     /* fval */
  AST_STR,     /* str/len: the decoded bytes */
  AST_FUNC,    /* function: params (AST_NAME), is_vararg, body a (BLOCK),
                  end_line = line of its `end` */
  AST_TABLE,   /* list: AST_FIELD nodes */
  AST_FIELD,   /* table field: a = key (NULL when positional), b = value;
                  flag = 1 for `name = v` (a is an AST_STR), 0 for `[k] = v` */
  AST_BINOP,   /* op, a, b */
  AST_UNOP,    /* op, a */
  AST_NAME,    /* str: the identifier; attrib for local declarations */
  AST_INDEX,   /* a[b]; flag = 1 when written a.name (b is an AST_STR) */
  AST_CALL,    /* a(list) */
  AST_METHCALL,/* a:str(list) */
  AST_PAREN,   /* (a): truncates to one value */

  /* Statements. */
  AST_BLOCK,     /* list: statements */
  AST_LOCAL,     /* local list (AST_NAME with attrib) = list2 */
  AST_ASSIGN,    /* list (targets) = list2 */
  AST_CALLSTAT,  /* a: an AST_CALL or AST_METHCALL */
  AST_DO,        /* do a end */
  AST_WHILE,     /* while a do b end */
  AST_REPEAT,    /* repeat a until b */
  AST_IF,        /* if list[0] then list2[0] elseif list[1] then list2[1]
                    ... else c end (c NULL when there is no else) */
  AST_NUMFOR,    /* for list[0] = a, b[, c] do d end */
  AST_GENFOR,    /* for list (names) in list2 do a end */
  AST_FUNCSTAT,  /* function a b: a is the name path (AST_NAME or AST_INDEX
                    chain with flag 1), b the AST_FUNC; flag = 1 for
                    `a:m()` (the AST_FUNC's params then start with `self`,
                    marked implicit by is_method) */
  AST_LOCALFUNC, /* local function a b: a AST_NAME, b AST_FUNC */
  AST_RETURN,    /* return list */
  AST_BREAK,
  AST_GOTO,      /* goto str */
  AST_LABEL,     /* ::str:: */
  AST_SEMI       /* an empty statement `;` */
} ast_kind;

typedef enum ast_op {
  /* Binary. */
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_IDIV, OP_MOD, OP_POW, OP_CONCAT,
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR,
  OP_BAND, OP_BOR, OP_BXOR, OP_SHL, OP_SHR,
  /* Unary. */
  OP_NEG, OP_NOT, OP_LEN, OP_BNOT
} ast_op;

typedef enum ast_attrib { ATTR_NONE = 0, ATTR_CONST, ATTR_CLOSE } ast_attrib;

typedef struct ast_node ast_node;

typedef struct ast_list {
  ast_node **v;
  int n;
} ast_list;

struct ast_node {
  ast_kind kind;
  int line, col;   /* first token */
  int end_line;    /* AST_FUNC: line of `end`; otherwise 0 */
  int op;          /* ast_op for BINOP/UNOP */
  int attrib;      /* ast_attrib for names declared by AST_LOCAL */
  int flag;        /* see the kinds above */
  int is_vararg;   /* AST_FUNC */
  int is_method;   /* AST_FUNC: declared with `:` (implicit self) */
  int64_t ival;    /* AST_INT (wrapped like Lua's hex integers) */
  double fval;     /* AST_FLT */
  const char *str; /* AST_STR, AST_NAME, AST_METHCALL, AST_GOTO, AST_LABEL:
                      NUL-terminated, length len (strings may hold NULs) */
  size_t len;
  ast_node *a, *b, *c, *d;
  ast_list list, list2;
  ast_list params; /* AST_FUNC: AST_NAME nodes (self first for methods) */
};

/* A parsed chunk: the main block plus the arena behind it. */
typedef struct orion_ast {
  ast_node *chunk; /* AST_BLOCK of the whole chunk */
  void *arena;     /* private */
} orion_ast;

/* Does pred(n2, ud) hold for n or a node below it (through a, b, c, d,
 * list and list2; n first, then depth first)?  n may be NULL. */
int orion_ast_any(const ast_node *n,
                  int (*pred)(const ast_node *n2, void *ud), void *ud);

const char *orion_ast_kind_name(ast_kind k);
/* An operator as Lua writes it: "+", "..", "and", "~" (bnot), ... */
const char *orion_ast_op_text(ast_op op);

#endif
