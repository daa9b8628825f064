/* Output paths checked before any work starts: a model, a metrics file or
 * a checkpoint folder that cannot be written is reported when the job
 * starts, naming the option and the path, instead of after hours of
 * training when the result is lost (issue 32, point 9).  Nothing is
 * created or changed by the check. */
#ifndef ORION_UTIL_OUTPATH_H
#define ORION_UTIL_OUTPATH_H

#include "util/error.h"

typedef enum orion_out_kind {
  ORION_OUT_FILE,   /* a file written at PATH (an existing one is
                       replaced or appended to) */
  ORION_OUT_PREFIX, /* files PATH.SUFFIX beside each other (mf.lua's
                       --save): only the folder that holds them counts */
  ORION_OUT_FOLDER  /* a folder at PATH, created (one level) when absent */
} orion_out_kind;

/* Whether the output of kind at path can be written: its folder exists
 * and takes new files, and what stands at path (when something does) is
 * of the right kind and writable.  Returns 0, or a negative errno with
 * err saying what is wrong without naming path itself ("the folder
 * /no/such does not exist"), so that the caller can put the option and
 * the path first.  Safe on any thread; touches nothing. */
int orion_output_check(const char *path, orion_out_kind kind,
                       orion_error *err);

#endif
