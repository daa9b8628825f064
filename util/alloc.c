#include "util/alloc.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Each block carries its size in a 16-byte prefix (keeps 16-byte alignment)
 * so that orion_free can account for it. */
#define PREFIX 16

static _Atomic size_t used_bytes;

/* Blocks of HUGE_MIN bytes or more (a dataset, its copy in a frame) ask the
 * kernel for transparent huge pages over the 2 MiB pages they span: the
 * first touch of fresh memory then faults once per 2 MiB instead of once
 * per 4 KiB.  On a virtual machine that fault is the larger part of moving
 * a 190 MB array between processes (bench/dnn.sh).  Only a hint: without
 * THP ("never") or madvise it is a no-op. */
#define HUGE_MIN ((size_t)8 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void advise_huge(unsigned char *p, size_t n) {
#ifdef MADV_HUGEPAGE
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
  if (n >= HUGE_MIN && hi > lo)
    (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

void *orion_malloc(size_t n) {
  unsigned char *p;
  if (n > SIZE_MAX - PREFIX)
    return NULL;
  p = malloc(n + PREFIX);
  if (p == NULL)
    return NULL;
  advise_huge(p, n + PREFIX);
  memcpy(p, &n, sizeof n);
  atomic_fetch_add(&used_bytes, n);
  return p + PREFIX;
}

void *orion_calloc(size_t count, size_t size) {
  size_t n;
  void *p;
  if (orion_mul_overflow(count, size, &n))
    return NULL;
  p = orion_malloc(n);
  if (p != NULL)
    memset(p, 0, n);
  return p;
}

void *orion_realloc(void *p, size_t n) {
  unsigned char *base, *q;
  size_t old;
  if (p == NULL)
    return orion_malloc(n);
  if (n > SIZE_MAX - PREFIX)
    return NULL;
  base = (unsigned char *)p - PREFIX;
  memcpy(&old, base, sizeof old);
  q = realloc(base, n + PREFIX);
  if (q == NULL)
    return NULL;
  if (n > old)
    advise_huge(q, n + PREFIX);
  memcpy(q, &n, sizeof n);
  atomic_fetch_add(&used_bytes, n);
  atomic_fetch_sub(&used_bytes, old);
  return q + PREFIX;
}

void orion_free(void *p) {
  unsigned char *base;
  size_t n;
  if (p == NULL)
    return;
  base = (unsigned char *)p - PREFIX;
  memcpy(&n, base, sizeof n);
  atomic_fetch_sub(&used_bytes, n);
  free(base);
}

char *orion_strndup(const char *s, size_t n) {
  char *d = orion_malloc(n + 1);
  if (d != NULL) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

char *orion_strdup(const char *s) { return orion_strndup(s, strlen(s)); }

char *orion_asprintf(const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  s = orion_malloc((size_t)n + 1);
  if (s == NULL)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

size_t orion_alloc_used(void) { return atomic_load(&used_bytes); }

int orion_mul_overflow(size_t a, size_t b, size_t *out) {
  return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
