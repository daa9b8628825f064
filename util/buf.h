/* A growable byte buffer (used by the capture codec and, later, the wire
 * codec).  Owns its data; free with orion_buf_free. */
#ifndef ORION_UTIL_BUF_H
#define ORION_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct orion_buf {
  char *data;
  size_t len;
  size_t cap;
  int oom; /* set when a grow failed; later appends are dropped */
} orion_buf;

void orion_buf_init(orion_buf *b);
void orion_buf_free(orion_buf *b);
void orion_buf_append(orion_buf *b, const void *p, size_t n);
void orion_buf_u8(orion_buf *b, uint8_t v);
void orion_buf_u64(orion_buf *b, uint64_t v);

/* A bounds-checked reader over a byte range; every read fails (returns
 * ORION_ETRUNC) once the range is exhausted, and stays failed. */
typedef struct orion_reader {
  const char *p;
  size_t left;
  int bad;
} orion_reader;

void orion_reader_init(orion_reader *r, const char *p, size_t n);
int orion_reader_u8(orion_reader *r, uint8_t *v);
int orion_reader_u64(orion_reader *r, uint64_t *v);
/* Points *out at the next n bytes without copying. */
int orion_reader_bytes(orion_reader *r, size_t n, const char **out);

#endif
