/* The end of a block on an executor: its accumulator partials, kept
 * apart and tagged with the block (lua/exec_block.h). */
#include "lua/exec_block.h"

#include <string.h>

#include "lua/exec_int.h"
#include "util/alloc.h"

static int push(struct orion_exec *ex, int64_t block, acc_slot *s) {
  if (ex->nbacc == ex->capbacc) {
    int64_t cap = ex->capbacc > 0 ? 2 * ex->capbacc : 16;
    orion_block_acc *nv = orion_realloc(ex->bacc, sizeof *nv * (size_t)cap);
    if (nv == NULL)
      return ORION_ENOMEM;
    ex->bacc = nv;
    ex->capbacc = cap;
  }
  ex->bacc[ex->nbacc].block = block;
  ex->bacc[ex->nbacc].id = s->id;
  ex->bacc[ex->nbacc].val = s->val;
  ex->nbacc++;
  memset(&s->val, 0, sizeof s->val);
  return 0;
}

int orion_exec_end_block(struct orion_exec *ex, int64_t block,
                         orion_error *err) {
  int i;
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].val.has && push(ex, block, &ex->accs[i]) != 0)
      return orion_error_set(err, ORION_ENOMEM,
                             "executor %d: out of memory keeping block "
                             "%lld's accumulators",
                             ex->id, (long long)block);
  return 0;
}

int orion_exec_take_block_accs(struct orion_exec *ex, orion_block_acc **out,
                               int64_t *n) {
  int i;
  for (i = 0; i < ex->naccs; i++)
    if (ex->accs[i].val.has && push(ex, -1, &ex->accs[i]) != 0)
      return ORION_ENOMEM;
  *out = ex->nbacc > 0 ? ex->bacc : NULL;
  *n = ex->nbacc;
  if (ex->nbacc == 0)
    orion_free(ex->bacc);
  ex->bacc = NULL;
  ex->nbacc = ex->capbacc = 0;
  return 0;
}

void orion__exec_block_reset(struct orion_exec *ex) {
  orion_free(ex->bacc);
  ex->bacc = NULL;
  ex->nbacc = ex->capbacc = 0;
}
