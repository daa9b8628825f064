/* The ring of the last lines logged (see log_ring.h). */
#include "util/log_ring.h"

#include <pthread.h>
#include <string.h>

#include "util/clock.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char lines[ORION_LOG_KEEP][ORION_LOG_LINE_MAX];
static double times[ORION_LOG_KEEP];
static uint64_t next_seq = 1; /* the number of the next line */

void orion_log_keep(const char *line, size_t n) {
  static const char cut[] = " [...]";
  char *slot;
  pthread_mutex_lock(&lock);
  slot = lines[next_seq % ORION_LOG_KEEP];
  if (n < ORION_LOG_LINE_MAX) {
    memcpy(slot, line, n);
    slot[n] = '\0';
  } else {
    size_t keep = ORION_LOG_LINE_MAX - sizeof cut;
    memcpy(slot, line, keep);
    memcpy(slot + keep, cut, sizeof cut);
  }
  times[next_seq % ORION_LOG_KEEP] = orion_now();
  next_seq++;
  pthread_mutex_unlock(&lock);
}

void orion_log_recent(uint64_t since, orion_log_each_fn fn, void *ud) {
  uint64_t seq, first;
  pthread_mutex_lock(&lock);
  first = next_seq > ORION_LOG_KEEP ? next_seq - ORION_LOG_KEEP : 1;
  for (seq = since + 1 > first ? since + 1 : first; seq < next_seq; seq++)
    fn(ud, seq, times[seq % ORION_LOG_KEEP], lines[seq % ORION_LOG_KEEP]);
  pthread_mutex_unlock(&lock);
}
