/* Which address the driver listens on when its executors run elsewhere
 * (drivers/launcher.h's orion_launcher_attach): the one facing them, never
 * every address unless --listen asks for it (--listen 0.0.0.0).
 *
 *   ssh     the local address this machine reaches the hosts file's hosts
 *           from (the kernel's route to each: a UDP socket connected to
 *           the host, which sends nothing); hosts reached from different
 *           addresses need --listen;
 *   manual  the address of the default route (its executors are on
 *           hosts nobody named), else 127.0.0.1;
 *   slurm, mpi   the host of $ORION_DRIVER, which the ranks connect to
 *           (drivers/launcher.c's orion_launcher_rank_setup).
 */
#include "drivers/launcher.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int orion_launcher_facing(const char *host, char *out, size_t n) {
  struct addrinfo hints, *res = NULL, *ai;
  int rc = -1;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host, "9", &hints, &res) != 0)
    return -1;
  for (ai = res; ai != NULL && rc != 0; ai = ai->ai_next) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
      continue;
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(s, (struct sockaddr *)&ss, &len) == 0 &&
        getnameinfo((struct sockaddr *)&ss, len, out, (socklen_t)n, NULL, 0,
                    NI_NUMERICHOST) == 0)
      rc = 0;
    close(s);
  }
  freeaddrinfo(res);
  return rc;
}

/* The address of the default route (an IPv4 one first), else 127.0.0.1.
 * The documentation addresses below are never sent anything. */
static void default_facing(char *out, size_t n) {
  if (orion_launcher_facing("192.0.2.1", out, n) != 0 &&
      orion_launcher_facing("2001:db8::1", out, n) != 0)
    snprintf(out, n, "127.0.0.1");
}

int orion_launcher_bind(orion_launcher *l, orion_cluster_opts *o,
                        orion_error *err) {
  char addr[ORION_HOST_MAX + 1], first[ORION_HOST_MAX + 1];
  size_t i;
  if (o->listen != NULL || l->kind == ORION_LAUNCH_LOCAL)
    return 0; /* asked for, or 127.0.0.1 (dsm/cluster.c) */
  if (l->kind == ORION_LAUNCH_SSH && l->hosts.n > 0) {
    for (i = 0; i < l->hosts.n; i++) {
      const char *h = l->hosts.slots[i].host;
      if (orion_launcher_facing(h, addr, sizeof addr) != 0)
        default_facing(addr, sizeof addr); /* ssh will say what is wrong */
      if (i == 0) {
        memcpy(first, addr, sizeof first);
      } else if (strcmp(addr, first) != 0) {
        return orion_error_set(
            err, ORION_EINVAL,
            "%s: this machine reaches %s from %s and %s from %s: give "
            "--listen ADDR (the address the executors can reach; 0.0.0.0 "
            "listens on every address)",
            l->hosts_file, l->hosts.slots[0].host, first, h, addr);
      }
    }
  } else {
    default_facing(first, sizeof first);
  }
  snprintf(l->listen, sizeof l->listen, "%s", first);
  o->listen = l->listen;
  return 0;
}
