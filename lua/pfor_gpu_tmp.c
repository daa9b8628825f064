/* TEMPORARY STAND-IN (helper gpu-exec, issue 20) for gpu-cgen's
 * orion_cgen_out.gpu_why: why a compiled body is outside the GPU subset,
 * guessed from its slots and source.  At merge replace the body of
 * orion__gpu_why with `return a->cg.gpu_why;` (or drop this file and
 * define it so in lua/pfor_gpu.c). */
#include <string.h>

#include "lua/pfor_gpu.h"

const char *orion__gpu_why(const analysis *a) {
  int i;
  if (!a->cg_ok)
    return a->note;
  for (i = 0; i < a->cg.nslots; i++)
    if (a->cg.slots[i].kind == ORION_CSLOT_BUFFER)
      return "the body writes through an orion.buffer";
  if (a->cg.src.data != NULL && strstr(a->cg.src.data, "o_rnext(") != NULL)
    return "the body calls math.random";
  return "";
}
