/* Monotonic wall-clock time. */
#ifndef ORION_UTIL_CLOCK_H
#define ORION_UTIL_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double orion_now(void);

/* CPU seconds so far: the calling thread's (CLOCK_THREAD_CPUTIME_ID) with
 * thread, else the whole process's (CLOCK_PROCESS_CPUTIME_ID); 0 where the
 * clock is missing. */
double orion_cpu_now(int thread);

#endif
