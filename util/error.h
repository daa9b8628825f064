/* Error codes and detailed error reports.
 *
 * Every fallible function in Orion-C returns 0 or a negative code from
 * ORION_ERRNO_MAP (system errors reuse -errno).  Functions that can say more
 * than a code (a file, a line, the offending text) also fill an orion_error.
 */
#ifndef ORION_UTIL_ERROR_H
#define ORION_UTIL_ERROR_H

#include <errno.h>
#include <stddef.h>

/* Project codes live in their own range, below -1000, so they never clash
 * with -errno values. */
#define ORION_ERRNO_MAP(X)                                                    \
  X(EPARSE, -1001, "malformed input")                                         \
  X(EKEYRANGE, -1002, "key out of range")                                     \
  X(ECHECKSUM, -1003, "checksum mismatch")                                    \
  X(EBADFILE, -1004, "not an Orion-C array file")                             \
  X(EVERSION, -1005, "unsupported version")                                   \
  X(ETRUNC, -1006, "truncated input")                                         \
  X(ETYPE, -1007, "wrong element type")                                       \
  X(EDIMS, -1008, "bad dimensions")                                           \
  X(ECAPTURE, -1009, "value cannot be shipped to an executor")                \
  X(EBODY, -1010, "error in a loop body")                                     \
  X(EOVERFLOW, -1011, "size overflow")                                        \
  X(EOPTION, -1012, "bad option")                                            \
  X(EUNSUPPORTED, -1013, "outside the compiled subset")                      \
  X(ECOMPILE, -1014, "compiling a loop body failed")

enum {
#define ORION__ERRNO_ENUM(name, val, msg) ORION_##name = (val),
  ORION_ERRNO_MAP(ORION__ERRNO_ENUM)
#undef ORION__ERRNO_ENUM
  ORION_ENOMEM = -ENOMEM,
  ORION_EINVAL = -EINVAL
};

/* Returns a static description of code (project or -errno). */
const char *orion_strerror(int code);

/* A detailed report: the code plus a human message naming file, line, key. */
typedef struct orion_error {
  int code;
  char msg[1024];
} orion_error;

/* Sets err (when not NULL) and returns code, so callers can write
 * `return orion_error_set(err, ORION_EPARSE, "...", ...);`. */
int orion_error_set(orion_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to code 0 and an empty message. */
void orion_error_clear(orion_error *err);

/* Asserts stay on in release builds. */
#define orion_assert(cond)                                                    \
  ((cond) ? (void)0 : orion__assert_fail(#cond, __FILE__, __LINE__))
void orion__assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn));

#endif
