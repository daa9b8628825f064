/* Element types of distributed arrays. */
#ifndef ORION_DSM_TYPES_H
#define ORION_DSM_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef enum orion_type {
  ORION_F32 = 0,
  ORION_F64 = 1,
  ORION_I32 = 2,
  ORION_I64 = 3
} orion_type;

#define ORION_NTYPES 4

/* Bytes per element. */
size_t orion_type_size(orion_type t);
/* "f32", "f64", "i32", "i64". */
const char *orion_type_name(orion_type t);
/* Parses a type name; returns 0 or ORION_ETYPE. */
int orion_type_parse(const char *name, orion_type *out);
/* True for i32 and i64. */
int orion_type_is_int(orion_type t);

/* Element i of a value buffer, converted. */
double orion_value_get_f64(const void *base, orion_type t, int64_t i);
int64_t orion_value_get_i64(const void *base, orion_type t, int64_t i);
/* Stores into element i; integers are stored exactly in i64, truncated
 * by the caller's range check in i32. */
void orion_value_set_f64(void *base, orion_type t, int64_t i, double v);
void orion_value_set_i64(void *base, orion_type t, int64_t i, int64_t v);

#endif
