/* A scanner over Lua 5.4 binary chunks (the output of lua_dump with
 * strip = 0) that lists the GLOBAL names a loop body reads and writes, and
 * (orion_bcscan_upvalue_writes) the captured locals it assigns.
 *
 * The driver uses it at launch: the values of the read globals are captured
 * and shipped to the executors, and any global assignment is rejected with
 * the script line it comes from.
 *
 * What counts as a global access:
 *   - GETTABUP A B C whose upvalue B is the global environment and whose key
 *     K[C] is a string constant: a read of K[C].  Field chains stop at the
 *     base name: `math.sqrt(x)` (GETTABUP "math"; GETFIELD "sqrt") is a read
 *     of `math` only, and `obj:m()` a read of `obj`.
 *   - SETTABUP A B C whose upvalue A is the environment and whose key K[B]
 *     is a string constant: a write of K[B].
 *   - When a function has more than 256 constants, Lua cannot name a global
 *     whose constant index is above 255 in GETTABUP/SETTABUP; it emits
 *     GETUPVAL R <env>; LOADK(X) R2 "name"; ... GETTABLE/SETTABLE with R as
 *     the table and R2 as the key instead.  That sequence is recognised too
 *     (read for GETTABLE, write for SETTABLE).
 *
 * "The global environment" is an upvalue named "_ENV" in the scanned (main)
 * function; in a nested function, an upvalue named "_ENV" that refers to the
 * enclosing function's environment upvalue (instack = 0).  An "_ENV" upvalue
 * captured from an enclosing function's register is a `local _ENV`, so
 * accesses through it are not global.  Whole-environment uses whose keys are
 * not constants (`_ENV[k]`, `rawset(_ENV, ...)`) cannot be named and are not
 * reported.
 *
 * The chunk must carry its debug information (it must not be stripped): the
 * upvalue names and the line table are needed; a stripped chunk is rejected
 * with ORION_EBADFILE.
 */
#ifndef ORION_LUA_BCSCAN_H
#define ORION_LUA_BCSCAN_H

#include <stddef.h>

#include "util/error.h"

typedef struct orion_bc_global {
  char *name; /* the global's name (bytes of the constant, NUL-terminated) */
  int line;   /* first (smallest) source line where this access occurs */
  int write;  /* 1 for an assignment, 0 for a read */
} orion_bc_global;

typedef struct orion_bc_scan {
  orion_bc_global *items;
  int n;
  int cap;
} orion_bc_scan;

/* Scans a dumped chunk: the main function and every nested function,
 * recursively.  Each distinct (name, write) pair is recorded once, with the
 * smallest source line where it occurs; items are in order of discovery (the
 * main function's code first, then nested functions depth-first).
 *
 * *out is overwritten (previous contents are not freed); on error it is left
 * empty.  Returns 0, or with err filled (err may be NULL):
 *   ORION_EBADFILE  not a Lua binary chunk, or a malformed/corrupted one
 *                   (bad signature or LUAC_DATA, bad constant tag, operand
 *                   out of range, stripped debug info, trailing bytes);
 *   ORION_EVERSION  a chunk from another Lua version or build (version byte
 *                   not 0x54, format not 0, sizes of Instruction/lua_Integer/
 *                   lua_Number not 4/8/8, LUAC_INT/LUAC_NUM mismatch);
 *   ORION_ETRUNC    the chunk ends early;
 *   ORION_ENOMEM.
 * Never reads chunk past len. */
int orion_bcscan(const char *chunk, size_t len, orion_bc_scan *out,
                 orion_error *err);

/* Scans a dumped chunk (a loop body) for assignments to the main
 * function's upvalues, in its own code or in a function nested in it: the
 * locals of the script that the body captured, of which an executor holds
 * only a copy.  Assignments to a nested function's upvalues that are the
 * body's own locals are not listed.  Each assigned upvalue is one item
 * (write = 1) with its name and the smallest line that assigns it; *out
 * and the errors are as for orion_bcscan. */
int orion_bcscan_upvalue_writes(const char *chunk, size_t len,
                                orion_bc_scan *out, orion_error *err);

/* One function of a dumped chunk (orion_bcscan_functions). */
typedef struct orion_bc_func {
  int parent;  /* the enclosing function's index in the list; -1: main */
  int child;   /* its place (from 0) among the parent's nested functions,
                  which Lua numbers in the order their `function` keywords
                  appear in the source */
  int line, last; /* linedefined and lastlinedefined */
  size_t start;   /* its bytes in the chunk: everything after its source */
  size_t len;     /* name, which a nested function does not repeat, so
                     equal bytes mean the same compiled function */
} orion_bc_func;

/* Lists every function of a dumped chunk (strip = 0): the main function
 * first, then depth first in the order Lua keeps them.  On success *out
 * (*n entries) is the caller's to orion_free; on error *out is NULL and the
 * errors are as for orion_bcscan. */
int orion_bcscan_functions(const char *chunk, size_t len,
                           orion_bc_func **out, int *n, orion_error *err);

/* Frees the items and their names and leaves s empty; s itself belongs to
 * the caller.  NULL is accepted. */
void orion_bc_scan_free(orion_bc_scan *s);

#endif
