/* The project's one hash function: 64-bit FNV-1a, streamed (each call
 * continues from the value the last one returned), plus a finaliser that
 * spreads its bits for table indexing and printed keys.  Used for the
 * compiled-body cache key (util/ccomp.c), the body hash the driver ships
 * (scheduler/dist.c) and the bytecode scanner's name table (executor/bcscan.c). */
#ifndef ORION_UTIL_HASH_H
#define ORION_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's offset basis: the value to start a hash from. */
#define ORION_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t orion_hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  size_t i;
  for (i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

/* Hashes v's 8 bytes in little-endian order, so a key does not depend on
 * the host's byte order. */
static inline uint64_t orion_hash_u64(uint64_t h, uint64_t v) {
  unsigned char le[8];
  int i;
  for (i = 0; i < 8; i++)
    le[i] = (unsigned char)(v >> (8 * i));
  return orion_hash_bytes(h, le, sizeof le);
}

/* A bijective finaliser (MurmurHash3's fmix64): every input bit reaches
 * every output bit. */
static inline uint64_t orion_hash_mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

#endif
