/* bench/page_held.c: whether a job page answers its token holder while
 * other sockets are held open on it (issue 32; bench/page_held.sh runs
 * it).  Against orion-driver's own page:
 *
 *   page_held PORT TOKEN [ADDRS PER]
 *
 * or, built with -DWITH_MHD and libmicrohttpd, against a libmicrohttpd
 * server started in this process with the limits the issue asked for (64
 * connections, 8 per address, a 2 s timeout):
 *
 *   page_held mhd [ADDRS PER]
 *
 * It opens PER sockets (default 8) from each of ADDRS loopback addresses
 * (default 1: 127.0.0.1, the holder's own; more: 127.0.0.2, ...), sends a
 * byte of a request head on each every second, and each second prints how
 * many are still open and the status the holder's request from 127.0.0.1
 * got (0: none within 3 s).  Six seconds in all. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef WITH_MHD
#include <microhttpd.h>
#endif

#define HELD_MAX 1024

static int port;
static const char *token = "";

/* A socket from loopback address src connected to the page, or -1. */
static int connect_from(const char *src) {
  struct sockaddr_in a;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0)
    return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  inet_pton(AF_INET, src, &a.sin_addr);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0)
    goto fail;
  a.sin_port = htons((unsigned short)port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
    goto fail;
  return s;
fail:
  close(s);
  return -1;
}

/* The holder's request: the status of its answer, 0 when none came. */
static int holder_get(void) {
  char req[256], buf[64] = {0};
  int s = connect_from("127.0.0.1"), st = 0;
  struct pollfd p;
  if (s < 0)
    return 0;
  snprintf(req, sizeof req,
           "GET /api/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Authorization: token %s\r\n\r\n",
           token);
  p.fd = s;
  p.events = POLLIN;
  if (send(s, req, strlen(req), MSG_NOSIGNAL) > 0 && poll(&p, 1, 3000) == 1 &&
      recv(s, buf, sizeof buf - 1, 0) > 0)
    sscanf(buf, "HTTP/1.1 %d", &st);
  close(s);
  return st;
}

#ifdef WITH_MHD
static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *data,
                              size_t *size, void **state) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(3, "[]\n", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  (void)cls, (void)url, (void)method, (void)version, (void)data;
  (void)size, (void)state;
  MHD_destroy_response(r);
  return ret;
}
#endif

int main(int argc, char **argv) {
  static int held[HELD_MAX];
  int addrs = 1, per = 8, n = 0, i, j, t, arg = 1;
#ifdef WITH_MHD
  struct MHD_Daemon *d = NULL;
#endif
  if (argc > 1 && strcmp(argv[1], "mhd") == 0) {
#ifdef WITH_MHD
    port = 18931;
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL,
                         (unsigned short)port, NULL, NULL, answer, NULL,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                         MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)8,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)2,
                         MHD_OPTION_END);
    if (d == NULL) {
      fprintf(stderr, "page_held: cannot start libmicrohttpd on %d\n", port);
      return 1;
    }
    printf("libmicrohttpd %s: 64 connections, 8 per address, timeout 2 s\n",
           MHD_get_version());
    arg = 2;
#else
    fprintf(stderr, "page_held: built without libmicrohttpd\n");
    return 2;
#endif
  } else if (argc > 2) {
    port = atoi(argv[1]);
    token = argv[2];
    arg = 3;
    printf("orion-driver's page on port %d\n", port);
  } else {
    fprintf(stderr, "usage: page_held PORT TOKEN [ADDRS PER] | page_held "
                    "mhd [ADDRS PER]\n");
    return 2;
  }
  if (argc > arg + 1) {
    addrs = atoi(argv[arg]);
    per = atoi(argv[arg + 1]);
  }
  for (i = 0; i < addrs; i++)
    for (j = 0; j < per && n < HELD_MAX; j++) {
      char src[32];
      snprintf(src, sizeof src, "127.0.0.%d", i + 1);
      if ((held[n] = connect_from(src)) >= 0)
        n++;
    }
  printf("%d sockets from %d address(es), a byte a second each\n", n, addrs);
  for (t = 1; t <= 6; t++) {
    int open = 0;
    for (i = 0; i < n; i++)
      open += send(held[i], "G", 1, MSG_NOSIGNAL) == 1;
    sleep(1);
    printf("%ds: %d held sockets still open; the holder's request: %d\n", t,
           open, holder_get());
    fflush(stdout);
  }
  for (i = 0; i < n; i++)
    close(held[i]);
#ifdef WITH_MHD
  if (d != NULL)
    MHD_stop_daemon(d);
#endif
  return 0;
}
