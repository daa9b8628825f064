/* The allocation seam.  Every heap allocation of Orion-C goes through these
 * functions so that a process can report (and bound) the memory it holds. */
#ifndef ORION_UTIL_ALLOC_H
#define ORION_UTIL_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Same contracts as the libc functions; memory from them is released with
 * orion_free only.  Thread-safe. */
void *orion_malloc(size_t n);
void *orion_calloc(size_t count, size_t size);
void *orion_realloc(void *p, size_t n);
void orion_free(void *p);
char *orion_strdup(const char *s);
char *orion_strndup(const char *s, size_t n);
/* A newly allocated formatted string (orion_free it), or NULL. */
char *orion_asprintf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Bytes currently allocated through the seam. */
size_t orion_alloc_used(void);

/* Multiplies a*b into *out; returns -1 on overflow, 0 otherwise. */
int orion_mul_overflow(size_t a, size_t b, size_t *out);

#endif
