#include "util/clock.h"

#include <time.h>

double orion_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double orion_cpu_now(int thread) {
  struct timespec ts;
  if (clock_gettime(thread ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID,
                    &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
