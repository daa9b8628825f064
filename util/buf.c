#include "util/buf.h"

#include <string.h>

#include "util/alloc.h"
#include "util/error.h"

void orion_buf_init(orion_buf *b) { memset(b, 0, sizeof *b); }

void orion_buf_free(orion_buf *b) {
  orion_free(b->data);
  memset(b, 0, sizeof *b);
}

void orion_buf_append(orion_buf *b, const void *p, size_t n) {
  if (b->oom || n == 0) /* p may be NULL then: memcpy must not see it */
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *d;
    while (cap < b->len + n)
      cap *= 2;
    d = orion_realloc(b->data, cap);
    if (d == NULL) {
      b->oom = 1;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

void orion_buf_u8(orion_buf *b, uint8_t v) { orion_buf_append(b, &v, 1); }

void orion_buf_u64(orion_buf *b, uint64_t v) {
  unsigned char x[8];
  int i;
  for (i = 0; i < 8; i++)
    x[i] = (unsigned char)(v >> (8 * i));
  orion_buf_append(b, x, 8);
}

void orion_reader_init(orion_reader *r, const char *p, size_t n) {
  r->p = p;
  r->left = n;
  r->bad = 0;
}

int orion_reader_bytes(orion_reader *r, size_t n, const char **out) {
  if (r->bad || n > r->left) {
    r->bad = 1;
    return ORION_ETRUNC;
  }
  *out = r->p;
  r->p += n;
  r->left -= n;
  return 0;
}

int orion_reader_u8(orion_reader *r, uint8_t *v) {
  const char *p;
  if (orion_reader_bytes(r, 1, &p) != 0)
    return ORION_ETRUNC;
  *v = (uint8_t)p[0];
  return 0;
}

int orion_reader_u64(orion_reader *r, uint64_t *v) {
  const char *p;
  uint64_t x = 0;
  int i;
  if (orion_reader_bytes(r, 8, &p) != 0)
    return ORION_ETRUNC;
  for (i = 0; i < 8; i++)
    x |= (uint64_t)(unsigned char)p[i] << (8 * i);
  *v = x;
  return 0;
}
