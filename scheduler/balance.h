#ifndef ORION_SCHEDULER_BALANCE_H
#define ORION_SCHEDULER_BALANCE_H

/* Balanced placement: which executor owns each space part of a loop, so
 * that executors of different speeds finish their parts together.
 *
 * The parts are cut into contiguous ranges, executor 0 taking the first
 * range, executor 1 the next and so on (a range may be empty), as the
 * static placement does (scheduler/schedule.h: in a 2-D rotation the next
 * block of a time part is on the space part before, mostly on the same
 * executor).  Part p weighs w[p] (its elements); executor e does speed[e]
 * of them a second.  The plan minimises the makespan, the largest of
 * (weight of e's range) / speed[e], and of the plans with that makespan
 * takes the one that fills the lower-numbered executors first. */

/* The makespan of owner[] (n0 parts, n executors). */
double orion_balance_makespan(const double *w, int n0, const double *speed,
                              int n, const int *owner);

/* Writes the plan into owner[0..n0) and returns its makespan; speeds of 0
 * or less count as a thousandth of the fastest. */
double orion_balance_plan(const double *w, int n0, const double *speed,
                          int n, int *owner);

#endif
