/* Lane loops: which innermost numeric loops of a body may spread their
 * iterations over the lanes of a warp when the body runs on a GPU.
 *
 * On the device a group of the block's grid (executor/gpugrid.h) runs on
 * one warp when the body has a lane loop (O_WARP in the generated
 * source).  The warp's 32 threads run the body's statements together,
 * computing the same values from the same memory; each store outside a
 * lane loop is made by lane 0 between two __syncwarp()s, so every lane
 * reads what a serial run would.  A lane loop is the one place the lanes
 * differ: lane l runs iterations l, l + 32, ... of it.
 *
 * Why a loop accepted here gives the result of the serial loop: its body
 * (no inner loop, call of a user function, exit or accumulator) reads and
 * writes array elements only as r[k], r a local holding a row (the last
 * dimension) of a dense array and k the loop variable, apart from reads
 * of arrays it never writes; it assigns no local declared outside it.
 * Rows of one array do not overlap and r[k] for distinct k are distinct
 * elements, so the elements iteration k touches are touched by no other
 * iteration: running the iterations in any order, or at once, reads and
 * writes the same values as running them in order.  The warp meets at a
 * __syncwarp() after the loop, before anything reads what it wrote.
 *
 * A dot product `s = s + a[k] * b[k]` in fast mode (which may reassociate
 * a sum, as the CPU body's vector accumulators do) is the other lane
 * loop: each lane sums its iterations, and a butterfly of shuffles adds
 * the 32 partial sums, giving every lane the same bits.
 */
#include <string.h>

#include "analysis/cgen_int.h"

/* The slot of the array a free name is bound to, or -1. */
static int free_array_slot(gen *g, const char *name) {
  int i;
  for (i = 0; i < g->nfn; i++)
    if (strcmp(g->fn[i].name, name) == 0)
      return g->fn[i].slot >= 0 &&
                     g->slots[g->fn[i].slot].kind == ORION_CSLOT_ARRAY
                 ? g->fn[i].slot
                 : -1;
  return -1;
}

/* The slot of the array below a chain of subscripts `A[i][j]`, or -1. */
static int root_slot(gen *g, const ast_node *e) {
  var *v;
  while (e->kind == AST_INDEX && !e->flag)
    e = e->a;
  if (e->kind != AST_NAME)
    return -1;
  v = lookup(g, e->str);
  if (v != NULL)
    return v->t.k == T_REF ? v->t.slot : -1;
  return free_array_slot(g, e->str);
}

typedef struct lanewalk {
  gen *g;
  const char *k;         /* the loop variable */
  const ast_node *body;  /* the loop's block */
  unsigned char *wrote;  /* per slot: stored into by the loop */
  int ok;
} lanewalk;

static int declares(const ast_node *n, void *ud) {
  int i;
  if (n->kind != AST_LOCAL)
    return 0;
  for (i = 0; i < n->list.n; i++)
    if (strcmp(n->list.v[i]->str, (const char *)ud) == 0)
      return 1;
  return 0;
}

static void lane_expr(lanewalk *w, const ast_node *e);

static void lane_exprs(lanewalk *w, const ast_list *l) {
  int i;
  for (i = 0; i < l->n && w->ok; i++)
    lane_expr(w, l->v[i]);
}

static void lane_expr(lanewalk *w, const ast_node *e) {
  int s;
  if (!w->ok)
    return;
  switch (e->kind) {
  case AST_INT:
  case AST_FLT:
  case AST_TRUE:
  case AST_FALSE:
  case AST_NIL:
  case AST_NAME:
    return;
  case AST_PAREN:
    lane_expr(w, e->a);
    return;
  case AST_UNOP:
    if (e->op != OP_NEG && e->op != OP_NOT)
      w->ok = 0;
    else
      lane_expr(w, e->a);
    return;
  case AST_BINOP:
    switch (e->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW:
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
    case OP_AND: case OP_OR:
      lane_expr(w, e->a);
      lane_expr(w, e->b);
      return;
    default: /* integer division and modulo may fail; bitwise may too */
      w->ok = 0;
      return;
    }
  case AST_INDEX:
    if (e->flag) {
      w->ok = 0;
      return;
    }
    if (row_at(w->g, e, w->k) != NULL)
      return;
    /* Any other element: only of an array the loop never writes. */
    s = root_slot(w->g, e);
    if (s < 0 || w->wrote[s]) {
      w->ok = 0;
      return;
    }
    for (; e->kind == AST_INDEX; e = e->a)
      lane_expr(w, e->b);
    return;
  case AST_CALL:
    /* math.f(...): no side effects. */
    if (e->a->kind != AST_INDEX || !e->a->flag || e->a->a->kind != AST_NAME ||
        strcmp(e->a->a->str, "math") != 0 || lookup(w->g, "math") != NULL ||
        e->a->b->kind != AST_STR || strcmp(e->a->b->str, "random") == 0) {
      w->ok = 0;
      return;
    }
    lane_exprs(w, &e->list);
    return;
  default:
    w->ok = 0;
    return;
  }
}

/* The stores of the loop's statements (first walk) or their checks. */
static void lane_stmts(lanewalk *w, const ast_list *l, int check);

static void lane_stmt(lanewalk *w, const ast_node *s, int check) {
  int i;
  switch (s->kind) {
  case AST_SEMI:
    return;
  case AST_DO:
    lane_stmts(w, &s->a->list, check);
    return;
  case AST_IF:
    for (i = 0; i < s->list.n; i++) {
      if (check)
        lane_expr(w, s->list.v[i]);
      lane_stmts(w, &s->list2.v[i]->list, check);
    }
    if (s->c != NULL)
      lane_stmts(w, &s->c->list, check);
    return;
  case AST_LOCAL:
    for (i = 0; i < s->list.n; i++) {
      const char *n = s->list.v[i]->str;
      /* A new local hiding another name: rows and the loop variable
       * would not be what row_at finds. */
      if (lookup(w->g, n) != NULL || strcmp(n, w->k) == 0 ||
          s->list.v[i]->attrib == ATTR_CLOSE)
        w->ok = 0;
    }
    if (check)
      lane_exprs(w, &s->list2);
    return;
  case AST_ASSIGN:
    for (i = 0; i < s->list.n && w->ok; i++) {
      const ast_node *t = s->list.v[i];
      var *r;
      if (t->kind == AST_NAME) {
        /* Only a local of the loop's own body. */
        if (!orion_ast_any(w->body, declares, (void *)t->str))
          w->ok = 0;
      } else if ((r = row_at(w->g, t, w->k)) != NULL) {
        w->wrote[r->t.slot] = 1;
      } else {
        w->ok = 0;
      }
    }
    if (check)
      lane_exprs(w, &s->list2);
    return;
  default:
    w->ok = 0;
    return;
  }
}

static void lane_stmts(lanewalk *w, const ast_list *l, int check) {
  int i;
  for (i = 0; i < l->n && w->ok; i++)
    lane_stmt(w, l->v[i], check);
}

int lane_loop_ok(gen *g, const ast_node *s) {
  lanewalk w;
  if (!g->in->gpu || g->nolane || g->hk == NULL)
    return 0;
  memset(&w, 0, sizeof w);
  w.g = g;
  w.k = s->list.v[0]->str;
  w.body = s->d;
  w.ok = 1;
  w.wrote = amalloc(g, (size_t)g->nslots + 1);
  memset(w.wrote, 0, (size_t)g->nslots + 1);
  lane_stmts(&w, &s->d->list, 0);
  if (w.ok)
    lane_stmts(&w, &s->d->list, 1);
  return w.ok;
}
