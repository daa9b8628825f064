/* The driver's held BUFFER_FLUSH frames: the writes of flush = "loop"
 * buffers whose target the driver owns, each tagged with the block that
 * made them.  scheduler/dist.c holds them while the loop runs and applies them
 * once every executor's LOOP_DONE is in, block by block in ascending block
 * number, so that a float "add" target gets the same sums in the same
 * order on any number of executors (the in-process run applies its kept
 * writes in that order too: executor/exec_block.c). */
#ifndef ORION_LUA_DIST_HELD_H
#define ORION_LUA_DIST_HELD_H

#include <stddef.h>
#include <stdint.h>

typedef struct orion_held_frame {
  int64_t block, seq;
  int exec;
  char *payload;
  size_t len;
} orion_held_frame;

typedef struct orion_held_frames {
  orion_held_frame *v;
  int64_t n, cap;
} orion_held_frames;

/* Keeps a copy of executor exec's frame payload p[0..len) for block.
 * 0, or ORION_ENOMEM. */
int orion__held_add(orion_held_frames *h, int64_t block, int exec,
                    const void *p, size_t len);

/* Calls fn on every held frame, by ascending block (the frames of one
 * block in arrival order), then forgets them. */
typedef void (*orion_held_fn)(void *ud, int exec, const char *p, size_t len);
void orion__held_run(orion_held_frames *h, orion_held_fn fn, void *ud);

void orion__held_free(orion_held_frames *h);

#endif
