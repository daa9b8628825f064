/* Where orion-driver finds the files it ships: its Lua modules (lua/) and
 * the apps (apps/), and where its sibling programs are (orion-executor).
 *
 * A folder SUB ("lua" or "apps") is looked for in three places, in this
 * order, and every one that exists is used:
 *
 *   1. EXEDIR/SUB, beside the binary: a build in the source tree;
 *   2. EXEDIR/../share/orion-c/SUB, relative to the binary: an installed
 *      tree, wherever its prefix was moved (a relocated install);
 *   3. PKGDATADIR/SUB, the pkgdatadir configured at build time
 *      (orion_paths.h, rewritten whenever configure changes the prefix,
 *      so a new --prefix rebuilds the driver): an install whose binary
 *      was copied elsewhere.
 *
 * EXEDIR is the folder of /proc/self/exe (argv[0]'s when that cannot be
 * read).  No global state; any thread.
 */
#ifndef ORION_DRIVERS_DATADIR_H
#define ORION_DRIVERS_DATADIR_H

#include <stddef.h>

#define ORION_DATADIR_MAX 3

/* The folder of the running program, without a trailing '/', into
 * out[0..n). */
void orion_exe_dir(const char *argv0, char *out, size_t n);

/* Fills dirs[0..] with the existing folders SUB of the list above, in
 * order and without repeats; returns how many (0 when none exists). */
int orion_datadir_list(const char *argv0, const char *sub,
                       char dirs[ORION_DATADIR_MAX][4096]);

/* The script a user named on the command line.  A path that opens as
 * given (relative to the current folder, or absolute) is that file.
 * Otherwise a relative path is an installed app: looked up in each apps
 * folder of the list, as given ("mf/mf.lua") and without a leading
 * "apps/" ("apps/mf/mf.lua" is the source-tree spelling of the same
 * app).  Writes the path that opened into out[0..n) and returns 0, or
 * returns the errno of opening the path as given (out unchanged). */
int orion_datadir_find_script(const char *argv0, const char *script,
                              char *out, size_t n);

#endif
