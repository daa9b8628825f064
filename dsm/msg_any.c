/* The payload codec (dsm/msg.h) by frame type: whether a type has a
 * payload codec, and any message decoded, encoded or freed by its type
 * through the per-type functions of msg.c and msg_*.c.  It sits above
 * every other file of the codec: they call nothing here.
 */
#include "dsm/msg.h"

#include "dsm/wire.h"
#include "util/error.h"

/* X(TYPE, member) for every message. */
#define MSG_MAP(X)                                                             \
  X(LOAD_BODY, load_body)                                                      \
  X(RUN_BLOCK, run_block)                                                      \
  X(BLOCK_DONE, block_done)                                                    \
  X(BUFFER_FLUSH, buffer_flush)                                                \
  X(FLUSH_ACK, flush_ack)                                                      \
  X(FETCH, fetch)                                                              \
  X(FETCH_REPLY, fetch_reply)                                                  \
  X(PEERS, peers)                                                              \
  X(SHARD_PULL, shard_pull)                                                    \
  X(SHARD_DATA, shard_data)                                                    \
  X(SEND_ROWS, send_rows)                                                      \
  X(MOVE_ROWS, move_rows)                                                      \
  X(ROWS, rows)                                                                \
  X(ROWS_DATA, rows_data)                                                      \
  X(ROWS_PULL, rows_pull)                                                      \
  X(SHARD_WRITE, shard_write)                                                  \
  X(WRITE_ACK, write_ack)                                                      \
  X(LOOP_END, loop_end)                                                        \
  X(LOOP_DONE, loop_done)                                                      \
  X(BODY_ERROR, body_error)                                                    \
  X(FORGET, forget)                                                            \
  X(LOAD_FILE, load_file)                                                      \
  X(LOADED, loaded)                                                            \
  X(SHUTDOWN, shutdown)                                                        \
  X(BCAST, bcast)                                                              \
  X(CKPT_WRITE, ckpt_write)                                                    \
  X(CKPT_DONE, ckpt_done)                                                      \
  X(BLOCK_KEYS, block_keys)

int orion_msg_known(int type) {
  switch (type) {
#define KNOWN(T, m) case ORION_WIRE_##T:
    MSG_MAP(KNOWN)
#undef KNOWN
    return 1;
  default:
    return 0;
  }
}

int orion_msg_decode(int type, const void *p, size_t n, orion_msg *out,
                     orion_error *err) {
  switch (type) {
#define DECODE(T, m)                                                           \
  case ORION_WIRE_##T:                                                         \
    return orion_msg_##m##_decode(p, n, &out->m, err);
    MSG_MAP(DECODE)
#undef DECODE
  default:
    return orion_error_set(err, ORION_EINVAL, "no payload codec for %s",
                           orion_wire_type_name(type));
  }
}

int orion_msg_encode(orion_buf *b, int type, const orion_msg *m) {
  switch (type) {
#define ENCODE(T, m_)                                                          \
  case ORION_WIRE_##T:                                                         \
    return orion_msg_##m_##_encode(b, &m->m_);
    MSG_MAP(ENCODE)
#undef ENCODE
  default:
    return ORION_EINVAL;
  }
}

void orion_msg_free(int type, orion_msg *m) {
  switch (type) {
  case ORION_WIRE_LOAD_BODY:
    orion_msg_load_body_free(&m->load_body);
    break;
  case ORION_WIRE_RUN_BLOCK:
    orion_msg_run_block_free(&m->run_block);
    break;
  case ORION_WIRE_BLOCK_DONE:
    orion_msg_block_done_free(&m->block_done);
    break;
  case ORION_WIRE_BUFFER_FLUSH:
    orion_msg_buffer_flush_free(&m->buffer_flush);
    break;
  case ORION_WIRE_FETCH:
    orion_msg_fetch_free(&m->fetch);
    break;
  case ORION_WIRE_FETCH_REPLY:
    orion_msg_fetch_reply_free(&m->fetch_reply);
    break;
  case ORION_WIRE_PEERS:
    orion_msg_peers_free(&m->peers);
    break;
  case ORION_WIRE_SHARD_DATA:
    orion_msg_shard_data_free(&m->shard_data);
    break;
  case ORION_WIRE_SEND_ROWS:
    orion_msg_send_rows_free(&m->send_rows);
    break;
  case ORION_WIRE_MOVE_ROWS:
    orion_msg_move_rows_free(&m->move_rows);
    break;
  case ORION_WIRE_ROWS:
    orion_msg_rows_free(&m->rows);
    break;
  case ORION_WIRE_ROWS_DATA:
    orion_msg_rows_data_free(&m->rows_data);
    break;
  case ORION_WIRE_ROWS_PULL:
    orion_msg_rows_pull_free(&m->rows_pull);
    break;
  case ORION_WIRE_SHARD_WRITE:
    orion_msg_shard_write_free(&m->shard_write);
    break;
  case ORION_WIRE_LOOP_DONE:
    orion_msg_loop_done_free(&m->loop_done);
    break;
  case ORION_WIRE_FORGET:
    orion_msg_forget_free(&m->forget);
    break;
  case ORION_WIRE_BCAST:
    orion_msg_bcast_free(&m->bcast);
    break;
  case ORION_WIRE_CKPT_WRITE:
    orion_msg_ckpt_write_free(&m->ckpt_write);
    break;
  case ORION_WIRE_CKPT_DONE:
    orion_msg_ckpt_done_free(&m->ckpt_done);
    break;
  case ORION_WIRE_BLOCK_KEYS:
    orion_msg_block_keys_free(&m->block_keys);
    break;
  default:
    break;
  }
}
