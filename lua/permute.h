/* Permuted keys on the driver (lua/permute.c): orion.permutation,
 * A:permute_keys, A:permutation, the translation between the keys a
 * script sees (the original ones) and the keys an array stores (the
 * permuted ones), and the check that a loop reads every array at keys
 * permuted the way its iterated array's are.  docs/lua-api.md, "Permuted
 * keys", says what a script sees. */
#ifndef ORION_LUA_PERMUTE_H
#define ORION_LUA_PERMUTE_H

#include <lua.h>

#include "analysis/analyze.h"
#include "scheduler/module.h"

/* The registry's weak table "n:seed" -> Permutation (lua/orion.c makes
 * it with the others). */
#define PERMS_KEY "orion.perms"

/* Whether any dimension of d is permuted. */
int orion__permuted(const darray *d);
/* The size of dimension dim (0-based) as the script sees it. */
int64_t orion__perm_dim(const darray *d, int dim);
/* The stored 0-based keys of the original 0-based keys (in place),
 * raising a key-range error for a key past a permuted dimension's
 * original size. */
void orion__perm_keys_in(lua_State *L, const darray *d, int64_t *keys);
/* The original 0-based key of a stored one along dim. */
int64_t orion__perm_key_out(const darray *d, int dim, int64_t k);
/* d's elements at their original keys and dims: a new reference, a copy
 * when d is permuted, else d->a retained (copy: a copy always).  Raises
 * on out of memory. */
orion_array *orion__unpermuted(lua_State *L, darray *d, int copy);
/* to (a new array with from's keys: map, split) keeps from's
 * permutations. */
void orion__perm_inherit(darray *to, const darray *from);
/* Drops d's permutations (its __gc). */
void orion__perm_free(darray *d);
/* Before a loop over it: raises an error naming the arrays when an access
 * of the plan subscripts a dimension with a loop key permuted otherwise
 * than the array's (or not at all), with an offset from one, or with a
 * constant, on a permuted dimension; marks the arrays as held by a loop.
 * iname: the iterated array's name. */
void orion__perm_check(lua_State *L, darray *it, const char *iname,
                       const orion_plan *p);

/* Adds orion.permutation to the module table at the top of L, and
 * permute_keys and permutation to the DistArray methods. */
void orion__open_permute(lua_State *L);

#endif
