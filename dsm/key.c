#include "dsm/key.h"

#include <string.h>

#include "util/error.h"

int orion_key_strides(int ndims, const int64_t *dims, int64_t *strides,
                      int64_t *total) {
  int64_t s = 1;
  int d;
  if (ndims < 1 || ndims > ORION_MAX_DIMS)
    return ORION_EDIMS;
  for (d = ndims - 1; d >= 0; d--) {
    if (dims[d] <= 0)
      return ORION_EDIMS;
    if (strides != NULL)
      strides[d] = s;
    if (__builtin_mul_overflow(s, dims[d], &s))
      return ORION_EOVERFLOW;
  }
  if (total != NULL)
    *total = s;
  return 0;
}

int orion_key_linearize(int ndims, const int64_t *dims, const int64_t *keys,
                        int64_t *out) {
  int64_t lin = 0;
  int d;
  for (d = 0; d < ndims; d++) {
    if (keys[d] < 0 || keys[d] >= dims[d])
      return ORION_EKEYRANGE;
    lin = lin * dims[d] + keys[d];
  }
  *out = lin;
  return 0;
}

void orion_key_delinearize(int ndims, const int64_t *dims, int64_t lin,
                           int64_t *keys) {
  int d;
  for (d = ndims - 1; d >= 0; d--) {
    keys[d] = lin % dims[d];
    lin /= dims[d];
  }
}

int orion_key_check_all(int ndims, const int64_t *dims, const void *keys,
                        int64_t n, int64_t *elem, int *dim) {
  const unsigned char *p = keys;
  int64_t e;
  int d;
  for (e = 0; e < n; e++)
    for (d = 0; d < ndims; d++, p += sizeof(int64_t)) {
      int64_t k;
      memcpy(&k, p, sizeof k);
      if (k < 0 || k >= dims[d]) {
        if (elem != NULL)
          *elem = e;
        if (dim != NULL)
          *dim = d;
        return ORION_EKEYRANGE;
      }
    }
  return 0;
}
