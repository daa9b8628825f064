/* Names of AST kinds and operators, and the arena that owns a parsed tree.
 *
 * The arena is a chain of blocks carved by bumping a pointer.  The parser
 * allocates every node, list and string of one chunk from it, so a syntax
 * error (which unwinds the parser with longjmp) and orion_ast_free both
 * release everything with one call and nothing can leak in between.
 */
#include "analysis/ast.h"

#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "analysis/lex.h"
#include "util/alloc.h"

/* ---- names --------------------------------------------------------------- */

int orion_ast_any(const ast_node *n,
                  int (*pred)(const ast_node *n2, void *ud), void *ud) {
  int i;
  if (n == NULL)
    return 0;
  if (pred(n, ud))
    return 1;
  if (orion_ast_any(n->a, pred, ud) || orion_ast_any(n->b, pred, ud) ||
      orion_ast_any(n->c, pred, ud) || orion_ast_any(n->d, pred, ud))
    return 1;
  for (i = 0; i < n->list.n; i++)
    if (orion_ast_any(n->list.v[i], pred, ud))
      return 1;
  for (i = 0; i < n->list2.n; i++)
    if (orion_ast_any(n->list2.v[i], pred, ud))
      return 1;
  return 0;
}

const char *orion_ast_kind_name(ast_kind k) {
  switch (k) {
  case AST_NIL: return "nil";
  case AST_TRUE: return "true";
  case AST_FALSE: return "false";
  case AST_VARARG: return "vararg";
  case AST_INT: return "int";
  case AST_FLT: return "flt";
  case AST_STR: return "str";
  case AST_FUNC: return "func";
  case AST_TABLE: return "table";
  case AST_FIELD: return "field";
  case AST_BINOP: return "binop";
  case AST_UNOP: return "unop";
  case AST_NAME: return "name";
  case AST_INDEX: return "index";
  case AST_CALL: return "call";
  case AST_METHCALL: return "methcall";
  case AST_PAREN: return "paren";
  case AST_BLOCK: return "block";
  case AST_LOCAL: return "local";
  case AST_ASSIGN: return "assign";
  case AST_CALLSTAT: return "callstat";
  case AST_DO: return "do";
  case AST_WHILE: return "while";
  case AST_REPEAT: return "repeat";
  case AST_IF: return "if";
  case AST_NUMFOR: return "numfor";
  case AST_GENFOR: return "genfor";
  case AST_FUNCSTAT: return "funcstat";
  case AST_LOCALFUNC: return "localfunc";
  case AST_RETURN: return "return";
  case AST_BREAK: return "break";
  case AST_GOTO: return "goto";
  case AST_LABEL: return "label";
  case AST_SEMI: return "semi";
  }
  return "?";
}

const char *orion_ast_op_text(ast_op op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  case OP_IDIV: return "//";
  case OP_MOD: return "%";
  case OP_POW: return "^";
  case OP_CONCAT: return "..";
  case OP_EQ: return "==";
  case OP_NE: return "~=";
  case OP_LT: return "<";
  case OP_LE: return "<=";
  case OP_GT: return ">";
  case OP_GE: return ">=";
  case OP_AND: return "and";
  case OP_OR: return "or";
  case OP_BAND: return "&";
  case OP_BOR: return "|";
  case OP_BXOR: return "~";
  case OP_SHL: return "<<";
  case OP_SHR: return ">>";
  case OP_NEG: return "-";
  case OP_NOT: return "not";
  case OP_LEN: return "#";
  case OP_BNOT: return "~";
  }
  return "?";
}

/* Indexed by ast_op; the unary ones are never looked up. */
static const orion__prio binop_prio[] = {
  [OP_ADD] = {10, 10}, [OP_SUB] = {10, 10},
  [OP_MUL] = {11, 11}, [OP_DIV] = {11, 11}, [OP_IDIV] = {11, 11},
  [OP_MOD] = {11, 11},
  [OP_POW] = {14, 13},   /* right associative */
  [OP_CONCAT] = {9, 8},  /* right associative */
  [OP_EQ] = {3, 3}, [OP_NE] = {3, 3}, [OP_LT] = {3, 3}, [OP_LE] = {3, 3},
  [OP_GT] = {3, 3}, [OP_GE] = {3, 3},
  [OP_AND] = {2, 2}, [OP_OR] = {1, 1},
  [OP_BAND] = {6, 6}, [OP_BOR] = {4, 4}, [OP_BXOR] = {5, 5},
  [OP_SHL] = {7, 7}, [OP_SHR] = {7, 7},
};

orion__prio orion__binop_prio(int op) {
  orion__prio none = {0, 0};
  if (op < 0 || op > OP_SHR)
    return none;
  return binop_prio[op];
}

/* ---- the arena ----------------------------------------------------------- */

/* Blocks start small (most chunks a test or a loop body parses are tiny)
 * and double up to a ceiling, so a big file needs few mallocs. */
#define ARENA_FIRST 4096
#define ARENA_MAX (1u << 20)
#define ARENA_ALIGN alignof(max_align_t)

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  max_align_t data[]; /* cap bytes */
} arena_block;

struct orion__arena {
  arena_block *head; /* the block being carved; older ones follow */
  size_t next_cap;
};

orion__arena *orion__arena_new(void) {
  orion__arena *a = orion_malloc(sizeof *a);
  if (a == NULL)
    return NULL;
  a->head = NULL;
  a->next_cap = ARENA_FIRST;
  return a;
}

void *orion__arena_alloc(orion__arena *a, size_t n) {
  arena_block *b = a->head;
  size_t cap;
  void *p;
  if (n > SIZE_MAX / 2)
    return NULL;
  n = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
  if (n == 0)
    n = ARENA_ALIGN;
  if (b != NULL && b->cap - b->used >= n) {
    p = (char *)b->data + b->used;
    b->used += n;
    return p;
  }
  cap = a->next_cap;
  if (n > cap / 4) {
    /* A big request gets a block of its own, linked behind the head so
     * the head's free space is not abandoned. */
    arena_block *big = orion_malloc(sizeof *big + n);
    if (big == NULL)
      return NULL;
    big->used = big->cap = n;
    if (b != NULL) {
      big->next = b->next;
      b->next = big;
    } else {
      big->next = NULL;
      a->head = big;
    }
    return big->data;
  }
  b = orion_malloc(sizeof *b + cap);
  if (b == NULL)
    return NULL;
  b->next = a->head;
  b->cap = cap;
  b->used = n;
  a->head = b;
  if (a->next_cap < ARENA_MAX)
    a->next_cap *= 2;
  return b->data;
}

char *orion__arena_strdup(orion__arena *a, const char *s, size_t len) {
  char *p;
  if (len == SIZE_MAX)
    return NULL;
  p = orion__arena_alloc(a, len + 1);
  if (p == NULL)
    return NULL;
  if (len > 0)
    memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

void orion__arena_free(orion__arena *a) {
  arena_block *b, *next;
  if (a == NULL)
    return;
  for (b = a->head; b != NULL; b = next) {
    next = b->next;
    orion_free(b);
  }
  orion_free(a);
}
