#include "dsm/types.h"

#include <string.h>

#include "util/error.h"

static const char *const type_names[ORION_NTYPES] = {"f32", "f64", "i32",
                                                     "i64"};
static const size_t type_sizes[ORION_NTYPES] = {4, 8, 4, 8};

size_t orion_type_size(orion_type t) { return type_sizes[t]; }

const char *orion_type_name(orion_type t) { return type_names[t]; }

int orion_type_parse(const char *name, orion_type *out) {
  int i;
  for (i = 0; i < ORION_NTYPES; i++) {
    if (strcmp(name, type_names[i]) == 0) {
      *out = (orion_type)i;
      return 0;
    }
  }
  return ORION_ETYPE;
}

int orion_type_is_int(orion_type t) { return t == ORION_I32 || t == ORION_I64; }

double orion_value_get_f64(const void *base, orion_type t, int64_t i) {
  switch (t) {
  case ORION_F32:
    return ((const float *)base)[i];
  case ORION_F64:
    return ((const double *)base)[i];
  case ORION_I32:
    return ((const int32_t *)base)[i];
  case ORION_I64:
    return (double)((const int64_t *)base)[i];
  }
  return 0;
}

int64_t orion_value_get_i64(const void *base, orion_type t, int64_t i) {
  switch (t) {
  case ORION_F32:
    return (int64_t)((const float *)base)[i];
  case ORION_F64:
    return (int64_t)((const double *)base)[i];
  case ORION_I32:
    return ((const int32_t *)base)[i];
  case ORION_I64:
    return ((const int64_t *)base)[i];
  }
  return 0;
}

void orion_value_set_f64(void *base, orion_type t, int64_t i, double v) {
  switch (t) {
  case ORION_F32:
    ((float *)base)[i] = (float)v;
    break;
  case ORION_F64:
    ((double *)base)[i] = v;
    break;
  case ORION_I32:
    ((int32_t *)base)[i] = (int32_t)v;
    break;
  case ORION_I64:
    ((int64_t *)base)[i] = (int64_t)v;
    break;
  }
}

void orion_value_set_i64(void *base, orion_type t, int64_t i, int64_t v) {
  switch (t) {
  case ORION_F32:
    ((float *)base)[i] = (float)v;
    break;
  case ORION_F64:
    ((double *)base)[i] = (double)v;
    break;
  case ORION_I32:
    ((int32_t *)base)[i] = (int32_t)v;
    break;
  case ORION_I64:
    ((int64_t *)base)[i] = v;
    break;
  }
}
