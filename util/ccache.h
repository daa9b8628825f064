/* The on-disk cache of compiled loop bodies (util/ccomp.c builds into it):
 * what a cache entry's key adds beyond the source and the flags, how an
 * entry is sealed and checked, and how the folder is kept under its size
 * cap.
 *
 * An entry is KEY.so (the object, followed by a 24-byte seal: "ORIONCK1",
 * the object's length and a hash of its bytes, all little-endian) and its
 * source KEY.c (KEY.cu for the device).  The key covers the source, the
 * compiler command and flags, the compiler's identity (the file the
 * command resolves to through PATH and symlinks, with its size and
 * modification time: a compiler upgraded in place is a new key), the
 * body ABI (util/cbody.h, util/gbody.h) and the target (the machine name
 * and, for "-march=native" builds, the CPU's model and feature flags from
 * /proc/cpuinfo).
 *
 * Environment:
 *   ORION_CACHE_DIR  the folder (default $XDG_CACHE_HOME/orion-c, else
 *                    ~/.cache/orion-c); "off" disables the cache: every
 *                    process builds its bodies in a private temporary
 *                    folder, removed once the object is loaded.
 *   ORION_CACHE_MAX  the cap on the entries' bytes, as a number with an
 *                    optional K, M or G (powers of 1024); default 512M,
 *                    0 for no cap.  After an entry is added, the entries
 *                    used longest ago (a hit refreshes an entry's time)
 *                    are removed until the rest fit.
 * A folder that cannot be created or written is reported once per process
 * as a warning; bodies are then built as with "off". */
#ifndef ORION_UTIL_CCACHE_H
#define ORION_UTIL_CCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Whether ORION_CACHE_DIR is "off". */
int orion_ccache_off(void);

/* The identity of the compiler command word cmd: "PATH SIZE MTIME" of the
 * file it resolves to, or cmd itself when it resolves to none (the build
 * then fails with "not found").  Written to out (n bytes, truncated). */
void orion_ccache_compiler_id(const char *cmd, char *out, size_t n);

/* The target: the machine name (uname -m), and, when native is set, the
 * CPU's identifying /proc/cpuinfo lines, hashed.  Computed once per
 * process. */
const char *orion_ccache_target(int native);

/* Appends the seal to the object at path.  0, or an errno. */
int orion_ccache_seal(const char *path);

/* Whether the file at path ends with a seal that matches its bytes. */
int orion_ccache_sealed(const char *path);

/* Marks the entry at path as just used (its modification time). */
void orion_ccache_touch(const char *path);

/* The cap from ORION_CACHE_MAX in *cap (0: none).  0, or -1 when the
 * value is not a size (*cap then holds the default). */
int orion_ccache_cap(uint64_t *cap);

/* Removes the least recently used entries of dir until its entries' bytes
 * fit cap (0: does nothing), never the entry named keep (a key). */
void orion_ccache_evict(const char *dir, uint64_t cap, const char *keep);

/* Prints "warning: WHY; bodies are compiled without a cache (...)" the
 * first time this process calls it, and nothing afterwards. */
void orion_ccache_warn_once(const char *why);

#endif
