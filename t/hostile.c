/* t/hostile: the hostile peers of t/auth.sh.
 *
 *   t/hostile hold PORT N SECONDS
 *       opens N connections to 127.0.0.1:PORT and holds them open for
 *       SECONDS without sending a byte (answering nothing); prints
 *       "connected K" once all connects returned, then "open K" (those the
 *       other end has not closed) at the end.
 *   t/hostile fake-driver FILE SECONDS
 *       a fake driver without the token: listens on a free port of
 *       127.0.0.1 (printed as "PORT"), and for SECONDS accepts connections
 *       and appends every byte they send to FILE, answering each with what
 *       a driver that does not hold the token can send: dsm/sec.h's ANSWER
 *       with random nonce and proof.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dsm/sec.h"
#include "dsm/wire.h"

static int hold(int port, int n, int seconds) {
  int *s = calloc((size_t)n, sizeof *s), i, ok = 0, open = 0;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (i = 0; i < n; i++) {
    s[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s[i], (struct sockaddr *)&a, sizeof a) == 0)
      ok++;
  }
  printf("connected %d\n", ok);
  fflush(stdout);
  sleep((unsigned)seconds);
  for (i = 0; i < n; i++) {
    struct pollfd p = {s[i], POLLIN, 0};
    char c;
    if (poll(&p, 1, 0) == 0 ||
        (recv(s[i], &c, 1, MSG_DONTWAIT) > 0)) /* still open */
      open++;
    close(s[i]);
  }
  printf("open %d\n", open);
  free(s);
  return 0;
}

static int fake_driver(const char *path, int seconds) {
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM, 0), conns[64], nc = 0, i;
  time_t until = time(NULL) + seconds;
  FILE *f = fopen(path, "wb");
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (f == NULL || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(ls, 16) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
    perror("t/hostile");
    return 1;
  }
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  srand((unsigned)getpid());
  while (time(NULL) < until) {
    struct pollfd pf[65];
    pf[0] = (struct pollfd){ls, POLLIN, 0};
    for (i = 0; i < nc; i++)
      pf[1 + i] = (struct pollfd){conns[i], POLLIN, 0};
    if (poll(pf, (nfds_t)(1 + nc), 100) <= 0)
      continue;
    if ((pf[0].revents & POLLIN) && nc < 64) {
      unsigned char answer[ORION_SEC_ANSWER_LEN];
      int c = accept(ls, NULL, NULL);
      size_t k;
      if (c < 0)
        continue;
      memset(answer, 0, sizeof answer);
      answer[0] = 'O', answer[1] = 'C', answer[2] = ORION_WIRE_VERSION;
      answer[3] = ORION_SEC_KIND_ANSWER;
      for (k = 8; k < sizeof answer; k++)
        answer[k] = (unsigned char)rand();
      send(c, answer, sizeof answer, MSG_NOSIGNAL);
      conns[nc++] = c;
    }
    for (i = 0; i < nc; i++)
      if (pf[1 + i].revents & (POLLIN | POLLHUP)) {
        char buf[4096];
        ssize_t got = recv(conns[i], buf, sizeof buf, MSG_DONTWAIT);
        if (got < 0 && errno == EAGAIN)
          continue;
        if (got > 0) {
          fwrite(buf, 1, (size_t)got, f);
          fflush(f);
        } else {
          close(conns[i]);
          conns[i] = conns[--nc];
          break; /* pf no longer matches: poll again */
        }
      }
  }
  fclose(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "hold") == 0)
    return hold(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  if (argc == 4 && strcmp(argv[1], "fake-driver") == 0)
    return fake_driver(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: t/hostile hold PORT N SECONDS | t/hostile "
                  "fake-driver FILE SECONDS\n");
  return 2;
}
