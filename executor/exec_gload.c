/* orion-executor loading a loop's device body (LOAD_BODY's gpu field, on
 * the compute thread): the compiled body's source built with nvcc
 * (orion_cobj_build_cuda) into an object kept by hash like the CPU bodies,
 * its entry points (util/gbody.h) handed to the executor core
 * (executor/exec_gbody.h) with the loop's device grid.  Without a device, or
 * when the build fails under tier "auto", blocks run on the CPU. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "analysis/cgen.h"
#include "executor/exec_state.h"
#include "executor/exec_gbody.h"
#include "util/ccomp.h"
#include "util/gbody.h"

/* The cached object for hash, building it when new; NULL with cerr set
 * when it does not build (or failed before). */
static orion_cobj *gobj_for(exec_state *x, const orion_msg_load_body *m,
                            const char *mode, orion_error *cerr) {
  orion_cobj *o = NULL;
  const int *abi;
  if (orion__bodies_find(&x->gbodies, m->chash, &o)) {
    if (o == NULL)
      orion_error_set(cerr, ORION_ECOMPILE, "it failed to build before");
    return o;
  }
  if (m->csrc_len == 0) {
    orion_error_set(cerr, ORION_EPARSE,
                    "the driver sent no source for a device body this "
                    "executor never built");
    return NULL;
  }
  if (orion_cobj_build_cuda(m->csrc, m->csrc_len, mode, 0, &o, NULL, cerr) ==
          0 &&
      ((abi = orion_cobj_sym(o, ORION_GBODY_ABI_SYM)) == NULL ||
       *abi != ORION_GBODY_ABI || orion_cobj_sym(o, ORION_GBODY_FN) == NULL ||
       orion_cobj_sym(o, ORION_GBODY_WRITES_FN) == NULL)) {
    orion_error_set(cerr, ORION_ECOMPILE,
                    "%s lacks the device entry points (ABI %d)",
                    orion_cobj_path(o), ORION_GBODY_ABI);
    orion_cobj_free(o);
    o = NULL;
  }
  orion__bodies_keep(&x->gbodies, m->chash, o);
  return o;
}

int orion__load_gbody(exec_state *x, const orion_msg_load_body *m,
                      const char *mode, orion_error *err) {
  orion_error cerr;
  orion_gpugrid_in grid;
  orion_cobj *o;
  orion_exec_set_gbody(x->ex, NULL, NULL, NULL);
  if (m->gpu == 0 || m->chash == 0)
    return 0;
  if (orion_exec_gpu(x->ex) == NULL) {
    /* The driver asks only executors that registered a device. */
    fprintf(stderr,
            "orion-executor %d: note: the loop asks for a GPU and this "
            "executor has none; it runs on the CPU here\n",
            x->id);
    return 0;
  }
  if (!orion_exec_compiled(x->ex)) /* the CPU body did not build */
    return m->gpu == 2 ? orion_error_set(err, ORION_ECOMPILE,
                                         "executor %d: tier \"gpu\": the "
                                         "compiled body did not build",
                                         x->id)
                       : 0;
  orion_error_clear(&cerr);
  /* The driver sends the C compiler's mode flags; nvcc takes its own for
   * the same mode (fast math or exact). */
  o = gobj_for(x, m,
               orion_cgen_mode_flags_cuda(
                   strcmp(mode, orion_cgen_mode_flags(1)) == 0),
               &cerr);
  if (o == NULL) {
    if (m->gpu == 2)
      return orion_error_set(err, ORION_ECOMPILE,
                             "executor %d: tier \"gpu\": building the device "
                             "body failed: %s",
                             x->id, cerr.msg);
    fprintf(stderr,
            "orion-executor %d: note: building the device body failed (%s); "
            "it runs on the CPU here\n",
            x->id, cerr.msg);
    return 0;
  }
  memset(&grid, 0, sizeof grid);
  grid.kind = (orion_gpugrid_kind)m->gkind;
  grid.space = (int)m->gspace;
  grid.time = (int)m->gtime;
  grid.skew_dim = (int)m->gskew_dim;
  grid.skew = m->gskew;
  grid.b = m->gb;
  orion_exec_set_gbody(
      x->ex, (orion_gbody_fn)orion_cobj_sym(o, ORION_GBODY_FN),
      (orion_gbody_writes_fn)orion_cobj_sym(o, ORION_GBODY_WRITES_FN), &grid);
  orion_exec_set_growkey(
      x->ex, (orion_gbody_rowkey_fn)orion_cobj_sym(o, ORION_GBODY_ROWKEY_FN));
  orion_exec_set_gclaim(x->ex, strcmp(mode, orion_cgen_mode_flags(1)) == 0);
  return 0;
}
