#include "scheduler/balance.h"

/* speed[e], with a floor of a thousandth of the fastest (so that an
 * unmeasured or stalled executor costs a finite time). */
static double speed_of(const double *speed, int n, int e) {
  double top = 0;
  int k;
  for (k = 0; k < n; k++)
    top = speed[k] > top ? speed[k] : top;
  if (top <= 0)
    top = 1;
  return speed[e] > top / 1000 ? speed[e] : top / 1000;
}

double orion_balance_makespan(const double *w, int n0, const double *speed,
                              int n, const int *owner) {
  double most = 0, acc = 0;
  int p, e = -1;
  for (p = 0; p <= n0; p++) {
    if (p == n0 || owner[p] != e) {
      if (e >= 0 && acc / speed_of(speed, n, e) > most)
        most = acc / speed_of(speed, n, e);
      if (p == n0)
        break;
      e = owner[p];
      acc = 0;
    }
    acc += w[p];
  }
  return most;
}

/* Fills owner[] greedily under makespan m: each executor in turn takes
 * parts while its time stays within m.  Whether every part was taken. */
static int fill(const double *w, int n0, const double *speed, int n,
                double m, int *owner) {
  int p = 0, e;
  for (e = 0; e < n && p < n0; e++) {
    double acc = 0, v = speed_of(speed, n, e);
    /* the last executor takes what is left: whether it fits is m's test */
    while (p < n0 && (e == n - 1 || (acc + w[p]) / v <= m)) {
      acc += w[p];
      owner[p++] = e;
    }
    if (e == n - 1 && acc / v > m)
      return 0;
  }
  return p == n0;
}

double orion_balance_plan(const double *w, int n0, const double *speed,
                          int n, int *owner) {
  double lo = 0, hi = 0, total = 0, slow;
  int p, it;
  if (n0 <= 0 || n <= 0)
    return 0;
  for (p = 0; p < n0; p++)
    total += w[p] > 0 ? w[p] : 0;
  slow = speed_of(speed, n, 0);
  for (p = 1; p < n; p++)
    slow = speed_of(speed, n, p) < slow ? speed_of(speed, n, p) : slow;
  hi = total / slow; /* everything on the slowest executor: always fits */
  for (it = 0; it < 100 && hi - lo > hi * 1e-12; it++) {
    double mid = (lo + hi) / 2;
    if (fill(w, n0, speed, n, mid, owner))
      hi = mid;
    else
      lo = mid;
  }
  if (!fill(w, n0, speed, n, hi, owner)) /* rounding: all on executor 0.. */
    for (p = 0; p < n0; p++)
      owner[p] = 0;
  return orion_balance_makespan(w, n0, speed, n, owner);
}
