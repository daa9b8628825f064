/* Running a loop body on the executor's GPU (util/gbody.h is the contract
 * with the compiled device body, gpu/gpu.h the device): executor/exec_gbody.c.
 *
 * An executor opened with `orion-executor --gpu N` is given its device
 * with orion_exec_set_gpu; a loop loaded with a device body (LOAD_BODY's
 * gpu field, executor/exec_run.c) sets it with orion_exec_set_gbody; while
 * both are there, orion_exec_run_gpu runs a whole block on the device.
 * Compute thread only, like the orion_exec it belongs to.
 */
#ifndef ORION_LUA_EXEC_GBODY_H
#define ORION_LUA_EXEC_GBODY_H

#include <stdint.h>

#include "gpu/gpu.h"
#include "executor/exec.h"
#include "dsm/blocks.h"
#include "executor/gpugrid.h"
#include "util/error.h"
#include "util/gbody.h"

/* Gives ex its device (not owned: the executor main closes it after
 * orion_exec_free); NULL takes it away (device copies are freed). */
void orion_exec_set_gpu(orion_exec *ex, orion_gpu *g);
orion_gpu *orion_exec_gpu(const orion_exec *ex);

/* The loop's device body: fn and writes from the object nvcc built,
 * the grid's kind, dims, skew and b in grid (keys and nelems ignored).
 * fn NULL: the loop has none (blocks run on the CPU).  Call after
 * orion_exec_set_compiled (the slots are the compiled body's). */
void orion_exec_set_gbody(orion_exec *ex, orion_gbody_fn fn,
                          orion_gbody_writes_fn writes,
                          const orion_gpugrid_in *grid);

/* The loaded device body's orion_gbody_rowkey (NULL: every bound array
 * moves whole).  Call after orion_exec_set_gbody. */
void orion_exec_set_growkey(orion_exec *ex, orion_gbody_rowkey_fn rowkey);

/* May the loaded device body's 2d rotations be claimed (util/gclaim.h)?
 * Only a fast body's: the claim order depends on timing, so two runs
 * give results that differ in the last bits (each one a serial run
 * allows), where an exact body's steps give the same bits every run. */
void orion_exec_set_gclaim(orion_exec *ex, int claims);

/* 1 when blocks of the loaded loop run on the device (not while a buffer
 * flushes every n elements: those run on the CPU). */
int orion_exec_gpu_ready(const orion_exec *ex);

/* Runs the block made of segs[0..nsegs) of iterated array iter_id on the
 * device: the arrays go up, the grid runs, written arrays come down, the
 * groups' accumulator partials are folded in group order, the buffers'
 * sums join their pending writes.  math.random is seeded from (seed,
 * loop, block) as on the CPU (util/gbody.h: per group).  Errors as
 * orion_exec_run ("executor E, element (k1, k2): msg"). */
int orion_exec_run_gpu(orion_exec *ex, int64_t iter_id,
                       const orion_segment *segs, int64_t nsegs,
                       uint64_t seed, int64_t block, orion_error *err);

/* The number of blocks run on the device since ex was made, and since
 * the last orion_exec_gpu_take_blocks (which starts that count again). */
int64_t orion_exec_gpu_blocks(const orion_exec *ex);
int64_t orion_exec_gpu_take_blocks(orion_exec *ex);

/* Frees ex's device state (executor/exec.c's orion_exec_free calls it). */
void orion__exec_gpu_free(orion_exec *ex);

#endif
