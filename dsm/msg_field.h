/* Internal to the payload codec (dsm/msg*.c; include nowhere else): the
 * writer and reader of a message's 64-bit fields, and the records several
 * messages share (runs, ranges).  Layout rules in dsm/msg.h. */
#ifndef ORION_DSM_MSG_FIELD_H
#define ORION_DSM_MSG_FIELD_H

#include <stddef.h>
#include <stdint.h>

#include "dsm/msg.h"
#include "util/buf.h"
#include "util/error.h"

/* The writer: a message goes straight into its frame; a field out of range
 * marks the writer bad, and orion__mw_end takes the frame back. */
typedef struct orion__mw {
  orion_buf *b;
  size_t start;
  int bad;
  int sealed; /* ended by orion_wire_end_sealed (set after begin) */
} orion__mw;

/* Appends the header of a frame of `type` to b. */
void orion__mw_begin(orion__mw *e, orion_buf *b, int type);
/* Closes the frame: 0, ORION_ENOMEM, -EMSGSIZE or ORION_EINVAL (e bad:
 * the frame is removed). */
int orion__mw_end(orion__mw *e);
/* Marks e bad unless cond holds. */
void orion__mw_need(orion__mw *e, int cond);
void orion__mw_u64(orion__mw *e, uint64_t v);
void orion__mw_i64(orion__mw *e, int64_t v);
void orion__mw_f64(orion__mw *e, double d);
/* Writes 1 for any nonzero v. */
void orion__mw_flag(orion__mw *e, int v);
/* A u64 length then the bytes (p may be NULL when n is 0). */
void orion__mw_bytes(orion__mw *e, const void *p, size_t n);
/* A list's count; returns 0 (e bad, nothing written) for a negative count
 * or a NULL list with a nonzero count, so that the caller skips the
 * items. */
int orion__mw_count(orion__mw *e, const void *list, int64_t n);
void orion__mw_runs(orion__mw *e, const orion_msg_run *runs, int64_t n);
void orion__mw_ranges(orion__mw *e, const orion_msg_range *r, int64_t n);
void orion__mw_moves(orion__mw *e, const orion_msg_move *v, int64_t n);

/* The reader: the first failure sticks (rc, and err filled with the
 * message's name and the field); later reads return zeros and NULLs, so a
 * decoder reads on and checks rc before it allocates or returns. */
typedef struct orion__mr {
  orion_reader r;  /* util/buf.h's bounds-checked reader */
  const char *msg; /* the message's name, for errors */
  orion_error *err;
  int rc;
} orion__mr;

void orion__mr_init(orion__mr *d, const void *p, size_t n, const char *msg,
                    orion_error *err);
/* Fails d with code (unless it failed before). */
void orion__mr_fail(orion__mr *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t orion__mr_u64(orion__mr *d, const char *field);
int64_t orion__mr_i64(orion__mr *d, const char *field);
double orion__mr_f64(orion__mr *d, const char *field);
/* A u64 that must be 0 or 1 (ORION_EPARSE). */
int orion__mr_flag(orion__mr *d, const char *field);
/* An i64 that must lie in [lo, hi] (else fails with code). */
int64_t orion__mr_in(orion__mr *d, const char *field, int64_t lo, int64_t hi,
                     int code);
/* A u64 length and a view of that many bytes (NULL when empty); ETRUNC
 * when fewer are left. */
const char *orion__mr_bytes(orion__mr *d, const char *field, size_t *n);
/* A count of items taking at least `unit` (> 0) bytes each: ETRUNC when
 * they cannot fit in the bytes left. */
int64_t orion__mr_count(orion__mr *d, const char *field, size_t unit);
/* orion__mr_count, then that many zeroed records of `size` bytes
 * (orion_calloc; NULL for none or on failure, *n then 0). */
void *orion__mr_list(orion__mr *d, const char *field, size_t unit, size_t size,
                     int64_t *n);
/* Refuses trailing bytes; returns d's code. */
int orion__mr_end(orion__mr *d);
orion_msg_run *orion__mr_runs(orion__mr *d, int64_t *n);
orion_msg_range *orion__mr_ranges(orion__mr *d, const char *field, int64_t *n);
orion_msg_move *orion__mr_moves(orion__mr *d, const char *field, int64_t *n);

/* Frees a list a decoder allocated (held as a const view). */
void orion__msg_drop(const void *p);

#endif
