#include "dsm/key.h"

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
