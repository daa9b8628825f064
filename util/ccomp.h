/* Building generated C into a shared object with the system compiler, and
 * loading it: a cache keyed by a hash of the source, the compiler and the
 * flags, so each executor host compiles a body once.
 *
 * Compiler: $ORION_CC, else "cc".  Flags: $ORION_CFLAGS, else
 * "-O3 -march=native", always followed by "-fPIC -shared" and the caller's
 * mode flags.  The cache (util/ccache.h: its key, its seal, its size cap
 * ORION_CACHE_MAX, and ORION_CACHE_DIR=off): $ORION_CACHE_DIR, else
 * $XDG_CACHE_HOME/orion-c, else $HOME/.cache/orion-c, else
 * /tmp/orion-c-UID; created (mode 0700) when missing.  Objects are written
 * to a temporary name and renamed into place, so executors sharing a cache
 * directory (one host, or a shared home) never load a half-written file.
 * A folder that cannot be used is warned about once per process, and the
 * body is built in a private temporary folder instead.  With --verbose,
 * each build or cache hit is logged ("compiled body KEY: ...").
 */
#ifndef ORION_UTIL_CCOMP_H
#define ORION_UTIL_CCOMP_H

#include <stddef.h>

#include "util/error.h"

typedef struct orion_cobj orion_cobj;

/* Builds src (len bytes) unless the cache has it, and loads it.  mode_flags
 * (may be NULL) go after the user's flags.  timeout_s bounds the compiler
 * run (0: 120 s); it is killed past it.  Returns 0 with *out set, or
 * ORION_ECOMPILE with err saying what failed: the compiler not found, its
 * exit status and the first lines of its diagnostics, a timeout, or
 * dlopen's message.  *cached (may be NULL) is set to 1 when the object came
 * from the cache. */
int orion_cobj_build(const char *src, size_t len, const char *mode_flags,
                     double timeout_s, orion_cobj **out, int *cached,
                     orion_error *err);

/* The same for a source built for the device (util/gbody.h): compiler
 * $ORION_NVCC, else the nvcc configure found, else "nvcc" on PATH; flags
 * $ORION_NVCC_FLAGS, else "-O3 -arch=native", always followed by
 * "-x cu -DORION_GPU_BODY=1 -Xcompiler -fPIC -shared -cudart shared" and
 * mode_flags (analysis/cgen.h's orion_cgen_mode_flags_cuda).  Same cache
 * (the key tells the two kinds apart), timeout and messages, which name
 * the "CUDA compiler" and ORION_NVCC. */
int orion_cobj_build_cuda(const char *src, size_t len, const char *mode_flags,
                          double timeout_s, orion_cobj **out, int *cached,
                          orion_error *err);

/* Checks the cache folder now, creating it when missing: one that cannot
 * be used is warned about (once), and with for_children set
 * ORION_CACHE_DIR=off goes into this process's environment, so that the
 * executors it starts on this host build without the cache and without a
 * warning of their own. */
void orion_ccomp_check_cache(int for_children);

/* The address of symbol name in the object, or NULL. */
void *orion_cobj_sym(orion_cobj *o, const char *name);

/* The object's path in the cache (for messages and tests); without the
 * cache, the path it was built at (removed once loaded). */
const char *orion_cobj_path(const orion_cobj *o);

/* Unloads the object (dlclose); NULL is ignored. */
void orion_cobj_free(orion_cobj *o);

/* The compiler command and flags in effect, as one line (for --explain and
 * notes), e.g. "cc -O3 -march=native". */
void orion_ccomp_describe(char *out, size_t n);
/* The same for nvcc, e.g. "/usr/local/cuda/bin/nvcc -O3 -arch=native". */
void orion_ccomp_describe_cuda(char *out, size_t n);

#endif
