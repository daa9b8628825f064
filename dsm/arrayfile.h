/* Saving and loading arrays to files, in two formats (see
 * docs/file-format.md for the exact layouts):
 *
 *   binary  "ORIONARR" magic, a little-endian header, the keys (sparse) and
 *           values, and a CRC-32 trailer over every preceding byte;
 *   text    a "# orion-c array TYPE dense|sparse dims D1 .. Dn" header line,
 *           then one "k1 .. kn v" line per stored element, 1-based keys.
 *
 * Both formats reload exactly: same type, kind, dims, element order, keys
 * and values (floats bit for bit in binary; in text every value but the
 * payload bits of a NaN).  Saves write PATH.tmp beside PATH and rename it
 * over PATH, so PATH always holds either its old content or the complete
 * new file, never a partial one.
 */
#ifndef ORION_DSM_ARRAYFILE_H
#define ORION_DSM_ARRAYFILE_H

#include "dsm/array.h"
#include "util/error.h"

/* The binary format: the magic its files begin with and the version this
 * build writes (and the only one it reads). */
#define ORION_ARRAYFILE_MAGIC "ORIONARR"
#define ORION_ARRAYFILE_VERSION 1

/* The first bytes of a text array file. */
#define ORION_ARRAYFILE_TEXT_TAG "# orion-c array"

/* Saves `a` to `path` in the binary format.  The caller keeps its reference
 * to `a`, which is only read.  Returns 0, or a negative code with err
 * filled: ORION_EINVAL/ORION_EDIMS/ORION_EKEYRANGE for an inconsistent
 * array, -errno when writing fails.  On failure PATH is untouched and no
 * PATH.tmp is left behind. */
int orion_array_save(const orion_array *a, const char *path,
                     orion_error *err);

/* Saves `a` to `path` in the text format (floats as %.17g for f64 and
 * %.9g for f32, integers exactly).  Ownership, atomicity and errors as for
 * orion_array_save. */
int orion_array_save_text(const orion_array *a, const char *path,
                          orion_error *err);

/* Loads an array saved by either function; the format is detected from the
 * first bytes.  On success *out receives a new array and the caller owns
 * its one reference (release it with orion_array_release).  On failure
 * *out is NULL, nothing is leaked, and the code is one of: -errno (cannot
 * open or read PATH), ORION_EBADFILE (not an array file, or an
 * inconsistent header), ORION_EVERSION, ORION_ETRUNC, ORION_ECHECKSUM,
 * or for text ORION_EPARSE/ORION_ETYPE/ORION_EDIMS/ORION_EKEYRANGE with
 * err naming PATH:LINE and the offending text. */
int orion_array_load(const char *path, orion_array **out, orion_error *err);

#endif
