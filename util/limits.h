/* Limits shared by every layer (the analysis, the arrays, the wire). */
#ifndef ORION_UTIL_LIMITS_H
#define ORION_UTIL_LIMITS_H

/* The most dimensions an array (and so a loop's key) may have. */
#define ORION_MAX_DIMS 8

#endif
