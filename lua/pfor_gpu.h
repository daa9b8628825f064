/* Tier "gpu" on the driver (lua/pfor_gpu.c): whether a parallel_for's
 * blocks run on the executors' devices, the device grid they are told to
 * use, the one-line notes when a loop asked for the GPU runs on the CPU,
 * and the tier line of --explain. */
#ifndef ORION_LUA_PFOR_GPU_H
#define ORION_LUA_PFOR_GPU_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "lua/analyse.h"
#include "scheduler/dist.h"
#include "scheduler/module.h"

/* opts.tier as a device request: 2 "gpu", 1 "auto", 0 otherwise. */
int orion__gpu_want(const char *tier);

/* Why the analysed body is outside the GPU subset, "" when inside (a body
 * outside the compiled subset is outside this one too). */
const char *orion__gpu_why(const analysis *a);

/* Whether to generate the body's device form (orion_cgen_in.gpu): tier
 * "gpu", or "auto" where a device may run it. */
int orion__gpu_form(const mod_state *s, const char *tier);

/* 1 when the cluster is up and some executor registered a device. */
int orion__gpu_cluster_has(const mod_state *s);

/* The device grid of the plan with grid size b (0: the default) as
 * --explain shows it: "2d, b x b rotation, b ~ sqrt(block elements)",
 * "1d, 64 groups", "serial". */
void orion__gpu_grid_text(const orion_plan *p, int64_t b, char *out,
                          size_t n);

/* The tier line under --explain when the device has a say (tier "gpu", or
 * "auto" on a cluster with a GPU): writes it to out and returns 1; returns
 * 0 to keep the CPU tier's line ctext unchanged. */
int orion__gpu_tier_text(const mod_state *s, const analysis *a, int want,
                         int64_t b, const char *ctext, char *out, size_t n);

/* Fills j's device fields from the plan (j->gpu stays 0 when the loop
 * cannot run on a device). */
void orion__gpu_job(const mod_state *s, const analysis *a, int want,
                    int64_t b, orion_dist_job *j);

/* Prints "note: the parallel_for at WHERE runs on the CPU: WHY" once per
 * call site (stderr, as the interpreter's note). */
void orion__gpu_note(lua_State *L, const char *where, const char *why);

#endif
