/* The driver's gate for unregistered connections (see gate.h). */
#include "dsm/gate.h"

#include <stdio.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

void orion_gate_init(orion_gate *g) {
  memset(g, 0, sizeof *g);
  g->log_start = orion_now();
}

/* Whether two "host:port" texts name the same host. */
static int same_host(const char *a, const char *b) {
  const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
  size_t la = ca != NULL ? (size_t)(ca - a) : strlen(a);
  size_t lb = cb != NULL ? (size_t)(cb - b) : strlen(b);
  return la == lb && memcmp(a, b, la) == 0;
}

/* Closes the connection in slot i to make room. */
static void evict(orion_gate *g, int i, const char *why) {
  orion_conn *old = g->conn[i];
  g->conn[i] = NULL;
  orion_conn_close(old, "pushed out by a newer connection: %s", why);
}

void orion_gate_admit(orion_gate *g, orion_conn *conn) {
  int i, free_at = -1, oldest = -1, oldest_same = -1, same = 0;
  for (i = 0; i < ORION_GATE_MAX; i++) {
    if (g->conn[i] == NULL) {
      if (free_at < 0)
        free_at = i;
      continue;
    }
    if (same_host(g->conn[i]->peer, conn->peer)) {
      same++;
      if (oldest_same < 0 || g->since[i] < g->since[oldest_same])
        oldest_same = i;
    }
    if (oldest < 0 || g->since[i] < g->since[oldest])
      oldest = i;
  }
  if (same >= ORION_GATE_PER_HOST) {
    evict(g, oldest_same, "too many unregistered connections from that "
                          "address");
    free_at = oldest_same;
  } else if (free_at < 0) {
    evict(g, oldest, "too many unregistered connections");
    free_at = oldest;
  }
  g->conn[free_at] = conn;
  g->since[free_at] = orion_now();
}

void orion_gate_remove(orion_gate *g, orion_conn *conn) {
  int i;
  for (i = 0; i < ORION_GATE_MAX; i++)
    if (g->conn[i] == conn)
      g->conn[i] = NULL;
}

void orion_gate_close_all(orion_gate *g, const char *why) {
  int i;
  for (i = 0; i < ORION_GATE_MAX; i++)
    if (g->conn[i] != NULL) {
      orion_conn *stray = g->conn[i];
      g->conn[i] = NULL;
      orion_conn_close(stray, "%s", why);
    }
}

void orion_gate_flush(orion_gate *g) {
  if (g->hidden > 0)
    orion_log_warn("refused %ld more connection%s in the last %.0f s (the "
                   "last %s)",
                   g->hidden, g->hidden == 1 ? "" : "s",
                   orion_now() - g->log_start, g->last);
  g->hidden = 0;
}

void orion_gate_tick(orion_gate *g, double now) {
  int i;
  for (i = 0; i < ORION_GATE_MAX; i++)
    if (g->conn[i] != NULL && now - g->since[i] > ORION_GATE_DEADLINE_S) {
      orion_conn *stray = g->conn[i];
      g->conn[i] = NULL;
      orion_conn_close(stray, "no HELLO within %d s", ORION_GATE_DEADLINE_S);
    }
  if (now - g->log_start >= ORION_GATE_LOG_S) {
    orion_gate_flush(g);
    g->log_start = now;
    g->logged = 0;
  }
}

void orion_gate_refused(orion_gate *g, const char *peer, const char *reason) {
  if (g->logged < ORION_GATE_LOG_BURST) {
    g->logged++;
    orion_log_warn("refused a connection from %s: %s", peer, reason);
    return;
  }
  g->hidden++;
  snprintf(g->last, sizeof g->last, "from %s: %s", peer, reason);
}
