/* A parallel_for body analysed from the driver's Lua state (lua/analyse.c):
 * its plan (analysis/analyze.h) and, for the compiled tier, its generated
 * C body (analysis/cgen.h) or why the loop stays interpreted. */
#ifndef ORION_LUA_ANALYSE_H
#define ORION_LUA_ANALYSE_H

#include <lua.h>

#include "analysis/analyze.h"
#include "analysis/cgen.h"
#include "scheduler/module.h"

typedef struct analysis {
  orion_plan plan;
  int ok;
  char *src; /* file contents, when the body came from a file */
  char where[256]; /* "file:line" of the parallel_for call */
  /* What the code generator needs again after the analysis. */
  orion_body_src body;
  char chunk[256];
  orion_arrayinfo iter;
  /* The tier: the generated body (cg_ok), or why the loop is
   * interpreted (note). */
  orion_cgen_out cg;
  int cg_done, cg_ok;
  int cg_gpu; /* cg has the device form (orion_cgen_in.gpu) */
  char note[768];
  /* The plan cache (lua/plancache.h): every question the analysis and the
   * generator asked the resolver, each with the part of its answer they
   * depend on; and whether the analysis may be kept for the next call. */
  orion_buf sig;
  int cacheable;
  /* cg built and loaded on the driver (lua/pfor.c), kept with the plan
   * so that a kept plan's calls do not build and load it again. */
  struct orion_cobj *cobj;
} analysis;

/* Analyses the body at stack index 2 for the iterated array `it` (at 1)
 * into out: opts.ordered, the space parts, a forced schedule name (or
 * NULL), a forced space key (0: none) and the array's name (NULL: the
 * caller's name for it).  Raises a Lua error when the body's source
 * cannot be found or parsed (out then holds nothing to free). */
void orion__analyse(lua_State *L, darray *it, int ordered, int nparts,
                    const char *force, int space, const char *name,
                    analysis *out);
void orion__analysis_free(analysis *a);

/* The name the function calling the running C function gives the value at
 * idx (one of its locals or upvalues), in buf; def when it has none. */
const char *orion__caller_name(lua_State *L, int idx, const char *def,
                               char *buf, size_t size);

/* A zeroed analysis in a userdata pushed onto L whose __gc frees it, so
 * that an error raised while the loop starts still frees it. */
analysis *orion__analysis_box(lua_State *L);

/* Generates the analysed body's C code for the compiled tier (fast: fast
 * math), or says in a->note why the loop stays interpreted.  The body is
 * at stack index 2. */
void orion__gen_body(lua_State *L, analysis *a, int fast, int gpu);

/* Prints a->note once per call site (stderr): the loop is interpreted. */
void orion__note_interpreted(lua_State *L, const analysis *a);

/* The plan cache: whether the bindings of the body at stack index 2 still
 * answer every question in a->sig as they did when a was made; if so, the
 * captured numbers the compiled body reads (its CONST slots) are set to
 * their values now and 1 is returned. */
int orion__analysis_same(lua_State *L, analysis *a);

/* Pushes the plan's text (orion.explain). */
void orion__push_plan_text(lua_State *L, const analysis *a);

#endif
