/* The executors' share of orion.checkpoint (lua/checkpoint_parts.c, issue
 * 19): the rows of resident arrays that executors hold are written by
 * those executors, as parts of the checkpoint (dsm/ckpt.h), instead of
 * being brought back to the driver first. */
#ifndef ORION_LUA_CHECKPOINT_PARTS_H
#define ORION_LUA_CHECKPOINT_PARTS_H

#include "dsm/ckpt.h"
#include "scheduler/dist.h"
#include "scheduler/module.h"

typedef struct orion_ckpt_remote orion_ckpt_remote;

/* Plans checkpoint ck's parts: each array of ck->arrays (ds[i] is the
 * script's array of ck->arrays[i]) whose rows executors hold is written in
 * parts, those rows by their holders and the rest by the driver; sets
 * ck->parts, the arrays' nparts and ck->hooks.  Returns the plan (free it
 * with orion__ckpt_remote_free after orion_ckpt_write), or NULL when no
 * array has rows on executors (nothing changes; ORION_CKPT_NO_PARTS=1
 * forces that, to compare: the driver then takes the rows back). */
orion_ckpt_remote *orion__ckpt_remote_plan(mod_state *s, orion_ckpt *ck,
                                           darray **ds);

/* The parts executors wrote (after orion_ckpt_write). */
int orion__ckpt_remote_parts(const orion_ckpt_remote *r);

void orion__ckpt_remote_free(orion_ckpt_remote *r, orion_ckpt *ck);

#endif
