/* The executor's two threads and what passes between them (see
 * exec_state.h): the frames the compute thread posts to the loop thread's
 * outbox, the jobs the loop thread takes from a connection for the
 * compute thread, a new connection, and the exit when the job is gone.
 * Every other executor file calls these; they call no other executor file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "executor/exec_state.h"
#include "dsm/msg.h"
#include "dsm/net.h"
#include "dsm/wire.h"
#include "util/alloc.h"
#include "util/buf.h"

void orion__exec_die(const exec_state *x, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "orion-executor %d: ", x->id);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  _exit(ORION_EXEC_EXIT_CLUSTER);
}

void orion__exec_nap(exec_state *x) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 100 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&x->fcv, &x->mu, &ts);
}

void orion__exec_post(exec_state *x, orion_buf *b) {
  if (b->oom)
    orion__exec_die(x, "out of memory building a reply");
  pthread_mutex_lock(&x->mu);
  if (x->out.len == 0) {
    orion_buf t = x->out;
    x->out = *b;
    *b = t;
  } else {
    orion_buf_append(&x->out, b->data, b->len);
  }
  pthread_mutex_unlock(&x->mu);
  b->len = 0;
  orion__exec_wake(x);
}

void orion__exec_wake(exec_state *x) {
  char one = 1;
  if (atomic_exchange(&x->wake_pending, 1) != 0)
    return; /* the loop thread has yet to take the last one */
  while (write(x->wake_fd[1], &one, 1) < 0 && errno == EINTR)
    ;
}

void orion__exec_wake_taken(exec_state *x) {
  char buf[64];
  /* The pipe first, then the flag, both before the queues are read: a wake
   * posted after the flag is cleared writes a byte that stays for the next
   * turn, and one posted before it found the flag set and queued its
   * frames before this turn reads them.  (Clearing first would let this
   * drain take the byte of a wake posted meanwhile and leave the flag set
   * with no byte: every later wake lost.)  One read takes every byte
   * there (one per wake that found the flag clear, so rarely more than
   * one); a byte that lands after it only brings one more turn. */
  if (read(x->wake_fd[0], buf, sizeof buf) < 0 && errno != EAGAIN &&
      errno != EWOULDBLOCK && errno != EINTR)
    orion__exec_die(x, "cannot read the wake pipe: %s", strerror(errno));
  atomic_store(&x->wake_pending, 0);
}

void orion__exec_wake_init(exec_state *x, uv_poll_cb cb) {
  int i, rc;
  if (pipe(x->wake_fd) != 0)
    orion__exec_die(x, "cannot create the wake pipe: %s", strerror(errno));
  for (i = 0; i < 2; i++)
    if (fcntl(x->wake_fd[i], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(x->wake_fd[i], F_SETFD, FD_CLOEXEC) != 0)
      orion__exec_die(x, "cannot set up the wake pipe: %s", strerror(errno));
  atomic_init(&x->wake_pending, 0);
  atomic_init(&x->flush_ahead, 0);
  rc = uv_poll_init(&x->loop, &x->wake, x->wake_fd[0]);
  if (rc == 0) {
    x->wake.data = x;
    rc = uv_poll_start(&x->wake, UV_READABLE, cb);
  }
  if (rc != 0)
    orion__exec_die(x, "cannot watch the wake pipe: %s", uv_strerror(rc));
}

void orion__exec_post_error(exec_state *x, int64_t block, const char *msg) {
  orion_buf b;
  orion_msg_body_error e;
  orion_buf_init(&b);
  e.executor = x->id;
  e.block = block;
  e.msg = msg;
  e.msg_len = strlen(msg);
  if (e.msg_len > 60000)
    e.msg_len = 60000;
  if (orion_msg_body_error_encode(&b, &e) != 0)
    b.oom = 1;
  orion__exec_post(x, &b);
  orion_buf_free(&b);
}


orion_conn *
orion__exec_connection(exec_state *x,
                       void (*frame)(orion_conn *, const orion_wire_frame *),
                       void (*closed)(orion_conn *, const char *),
                       void (*connected)(orion_conn *), void *data) {
  orion_conn_cbs cbs;
  orion_conn *c;
  memset(&cbs, 0, sizeof cbs);
  cbs.frame = frame;
  cbs.closed = closed;
  cbs.connected = connected;
  c = orion_conn_new(&x->loop, ORION_WIRE_CONNECT, x->token, x->encrypt, &cbs,
                     data);
  if (c == NULL)
    orion__exec_die(x, "out of memory");
  return c;
}

job *orion__exec_job_take(exec_state *x, orion_conn *c,
                          const orion_wire_frame *f, int from) {
  job *j = orion_calloc(1, sizeof *j);
  if (j == NULL)
    orion__exec_die(x, "out of memory");
  j->type = f->type;
  j->from = from;
  j->payload = orion_wire_decoder_take(&c->dec, &j->len); /* f is gone */
  return j;
}

void orion__exec_job_free(job *j) {
  orion_free(j->gets);
  orion_free(j->payload);
  orion_free(j);
}
