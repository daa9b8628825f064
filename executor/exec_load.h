/* orion-executor's parallel loading (executor/exec_load.c). */
#ifndef ORION_DRIVERS_EXEC_LOAD_H
#define ORION_DRIVERS_EXEC_LOAD_H

#include <stddef.h>

#include "util/buf.h"

/* Handles a LOAD_FILE payload p[0..n) (dsm/msg.h): reads the file, parses
 * this executor's byte range and appends one LOADED frame to out (with the
 * error message when it failed).  Returns 0 or the failure's code. */
int orion_executor_load_range(const char *p, size_t n, orion_buf *out);

#endif
