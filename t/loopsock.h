/* Tests' loopback sockets for t/relay and t/mitm: a listener on a free
 * port of 127.0.0.1 whose number goes to stdout ("PORT\n"), and a
 * connection to a port of 127.0.0.1.  Header-only: each tool includes it
 * once. */
#ifndef ORION_T_LOOPSOCK_H
#define ORION_T_LOOPSOCK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The listening socket, its port printed; -1 (with perror's line naming
 * who) when it cannot listen. */
static inline int tu_listen_loopback(const char *who) {
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(ls, 16) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
    perror(who);
    return -1;
  }
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  return ls;
}

/* A connection to 127.0.0.1:port, or -1. */
static inline int tu_connect_loopback(int port) {
  struct sockaddr_in a;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    close(s);
    return -1;
  }
  return s;
}

#endif
