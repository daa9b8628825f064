/* Monotonic wall-clock time. */
#ifndef ORION_UTIL_CLOCK_H
#define ORION_UTIL_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double orion_now(void);

#endif
