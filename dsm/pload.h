/* Loading a built-in text format in parallel: the driver sends every
 * executor the file and its byte range (LOAD_FILE, dsm/msg.h); each
 * parses the lines starting in its range and sends its part back (LOADED);
 * the parts are merged as orion_load_file would return the whole. */
#ifndef ORION_DSM_PLOAD_H
#define ORION_DSM_PLOAD_H

#include "dsm/cluster.h"
#include "dsm/loader.h"
#include "dsm/msg.h"
#include "util/error.h"

/* Loads path with o on the executors of cl into res (owned by the caller
 * as orion_load_file's).  A relative path is made absolute against the
 * driver's current folder before it is sent, so executors that run in
 * another folder (ssh starts them in the remote home) read the file the
 * driver means: on other hosts, at the same path (a shared filesystem, or
 * the same layout).  Errors as orion_load_file: the first range's error
 * wins; one that says an executor cannot open or read the file starts
 * with "executor N on HOST: ".  Cluster failures end the process
 * (exit 3). */
int orion_pload(orion_cluster *cl, const char *path,
                const orion_load_opts *o, orion_load_result *res,
                orion_error *err);

/* The array of a LOADED part m (the codec checked its sizes), checked as
 * input from a peer: NULL, with why[0..n) ending "executor E sent a
 * LOADED frame for FILE ...", when it cannot be made (dense dimensions
 * that do not hold its elements, memory) or a key lies outside its
 * dimensions or, when o gives them (o->have_dims; o may be NULL), outside
 * those: "whose element 3 has key 99 in dimension 2, outside 1..40". */
orion_array *orion_pload_part(const orion_msg_loaded_array *m,
                              const orion_load_opts *o, char *why, size_t n);

#endif
