/* orion-driver --verify on the cluster: the BLOCK_KEYS an executor sends
 * before a block's BLOCK_DONE go to the loop's keys (scheduler/verify.h), which
 * the driver checks once the loop is done. */
#include "scheduler/dist_int.h"
#include "scheduler/dist_check.h"
#include "scheduler/dist_keys.h"

#include "dsm/msg.h"
#include "scheduler/verify.h"
#include "scheduler/loop.h"

void orion__dist_block_keys(loop_run *r, int e, const orion_wire_frame *f) {
  orion_msg_block_keys m;
  orion_error err;
  int rc;
  orion_error_clear(&err);
  orion__dist_check_decoded(
      r, e, "BLOCK_KEYS",
      orion_msg_block_keys_decode(f->payload, f->len, &m, &err), &err);
  if (r->j->verify == NULL) {
    orion_msg_block_keys_free(&m);
    orion__dist_bad_frame(r, e, "BLOCK_KEYS", "the loop runs without "
                                              "--verify");
  }
  if (orion_loop_check_done(&r->m, e, m.block) != 0) {
    int64_t b = m.block;
    orion_msg_block_keys_free(&m);
    orion__dist_bad_frame(r, e, "BLOCK_KEYS",
                          "block %lld is not one it was sent", (long long)b);
  }
  rc = orion__verify_add(r->j->verify, m.block, m.ranges, m.nranges, m.srcs,
                         m.nsrcs);
  orion_msg_block_keys_free(&m);
  if (rc == ORION_ENOMEM)
    orion_cluster_fail(r->cl, "out of memory keeping a BLOCK_KEYS frame");
  if (rc != 0)
    orion__dist_bad_frame(r, e, "BLOCK_KEYS", "more than 64 sources");
}
